//! What `bzhead world` prints: a text summary, the JSON document and a top-down SVG map of a [`WorldModel`].
//!
//! JSON (`"v":1`): `hash`, `world_size`, `counts` (obstacles as sent, before group expansion) and
//! `expanded_counts` (after) keyed `wall`, `box`, `pyramid`, `base`, `teleporter`, `mesh`, `arc`, `cone`,
//! `sphere`, `tetra`; `water_level` (null without water); `links` (one entry per teleporter face: its number
//! and name, where it leads, and whether a link named it); `obstacles` (every expanded obstacle: kind, group
//! path, position of the bottom centre, rotation in radians, size as half-width/half-breadth/height, bounds,
//! passability, plus team, flip, teleporter name and index, face count where they apply); `zones` and
//! `weapons` as sent. Positions are world units, angles radians.

use std::fmt::Write as _;

use glam::Vec3;
use serde::Serialize;
use serde_json::{json, Value};

use super::geometry::Aabb;
use super::model::{Geometry, WorldModel};
use super::types::{ObstacleCounts, ObstacleKind};

/// Counts keyed by kind, in wire order.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CountsJson {
    wall: usize,
    #[serde(rename = "box")]
    boxes: usize,
    pyramid: usize,
    base: usize,
    teleporter: usize,
    mesh: usize,
    arc: usize,
    cone: usize,
    sphere: usize,
    tetra: usize,
}

impl From<&ObstacleCounts> for CountsJson {
    fn from(c: &ObstacleCounts) -> Self {
        CountsJson {
            wall: c.walls,
            boxes: c.boxes,
            pyramid: c.pyramids,
            base: c.bases,
            teleporter: c.teleporters,
            mesh: c.meshes,
            arc: c.arcs,
            cone: c.cones,
            sphere: c.spheres,
            tetra: c.tetras,
        }
    }
}

/// The JSON document, with its keys in the documented order when serialised (see [`to_json_string`]).
#[derive(Debug, Clone, Serialize)]
pub struct JsonDoc {
    v: u32,
    hash: String,
    world_size: f64,
    counts: CountsJson,
    expanded_counts: CountsJson,
    water_level: Option<f64>,
    links: Vec<Value>,
    obstacles: Vec<Value>,
    zones: Vec<Value>,
    weapons: Vec<Value>,
}

/// The JSON document of `bzhead world --json` as one line, keys in order (`"v"` first).
pub fn to_json_string(m: &WorldModel, hash: &str) -> String {
    serde_json::to_string(&document(m, hash)).unwrap_or_default()
}

/// The JSON document of `bzhead world --json` as a value (see the module documentation).
pub fn to_json(m: &WorldModel, hash: &str) -> Value {
    serde_json::to_value(document(m, hash)).unwrap_or(Value::Null)
}

fn v3(v: Vec3) -> Value {
    json!([r(v.x), r(v.y), r(v.z)])
}

/// Rounds to 5 decimals for a stable, readable JSON (f32 carries about 7 significant digits).
fn r(x: f32) -> f64 {
    let x = f64::from(x);
    if !x.is_finite() {
        return 0.0;
    }
    (x * 1e5).round() / 1e5
}

fn bounds_json(b: &Aabb) -> Value {
    if b.is_empty() {
        Value::Null
    } else {
        json!([v3(b.min), v3(b.max)])
    }
}

/// Team name for a team number.
pub fn team_name(team: u16) -> &'static str {
    match team {
        0 => "rogue",
        1 => "red",
        2 => "green",
        3 => "blue",
        4 => "purple",
        5 => "observer",
        6 => "rabbit",
        7 => "hunter",
        _ => "unknown",
    }
}

/// The JSON document (see the module documentation).
pub fn document(m: &WorldModel, hash: &str) -> JsonDoc {
    let links: Vec<Value> = m
        .links
        .faces
        .iter()
        .enumerate()
        .map(|(i, f)| {
            json!({
                "face": i,
                "name": m.face_name(i as u32),
                "to": f.targets.iter().map(|&t| m.face_name(t)).collect::<Vec<_>>(),
                "to_faces": f.targets,
                "explicit": f.explicit,
            })
        })
        .collect();
    let obstacles: Vec<Value> = m
        .obstacles
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut x = json!({
                "id": i,
                "kind": o.kind.name(),
                "path": &*o.path,
                "pos": v3(o.pos),
                "angle": r(o.angle),
                "size": v3(o.size),
                "bounds": bounds_json(&o.bounds),
                "drive_through": o.passable.drive_through,
                "shoot_through": o.passable.shoot_through,
                "ricochet": o.passable.ricochet,
            });
            if let Some(t) = o.team {
                x["team"] = json!(t);
            }
            if o.kind == ObstacleKind::Pyramid {
                x["flipped"] = json!(o.flipped);
            }
            if let Some(n) = &o.name {
                x["name"] = json!(n);
            }
            match &o.geometry {
                Geometry::Teleporter(t) => {
                    x["teleporter"] = json!(t);
                    if let Some(tp) = m.teleporters.get(*t as usize) {
                        x["border"] = json!(r(tp.border));
                        x["horizontal"] = json!(tp.horizontal);
                    }
                }
                Geometry::Faces(range) => x["faces"] = json!(range.end - range.start),
                Geometry::None => x["faces"] = json!(0),
                _ => {}
            }
            x
        })
        .collect();
    let zones: Vec<Value> = m
        .zones
        .iter()
        .map(|z| {
            json!({"pos": v3(z.pos), "size": v3(z.size), "rotation": r(z.rotation), "flags": z.flags,
                   "teams": z.teams, "safety": z.safety})
        })
        .collect();
    let weapons: Vec<Value> = m
        .weapons
        .iter()
        .map(|w| {
            json!({"flag": w.flag, "pos": v3(w.pos), "direction": r(w.direction),
                   "initial_delay": r(w.initial_delay), "delays": w.delays.iter().map(|&d| r(d)).collect::<Vec<_>>()})
        })
        .collect();
    JsonDoc {
        v: 1,
        hash: hash.to_string(),
        world_size: r(m.world_size),
        counts: (&m.counts).into(),
        expanded_counts: (&m.expanded_counts).into(),
        water_level: m.water_level.map(r),
        links,
        obstacles,
        zones,
        weapons,
    }
}

/// The text summary: counts per kind, world size, bases per team, water, teleporter links, zones, weapons.
pub fn summary(m: &WorldModel, hash: &str, blob_len: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "world {hash} ({blob_len} bytes)");
    let _ = writeln!(s, "size: {} x {}", m.world_size, m.world_size);
    match m.water_level {
        Some(w) => {
            let _ = writeln!(s, "water level: {w}");
        }
        None => {
            let _ = writeln!(s, "water: none");
        }
    }
    let _ = writeln!(s, "obstacles as sent: {}", counts_text(&m.counts));
    let _ = writeln!(
        s,
        "after expansion:   {} ({} mesh faces, {} convex solids)",
        counts_text(&m.expanded_counts),
        m.faces.len(),
        m.solids.len()
    );
    if m.bases.is_empty() {
        let _ = writeln!(s, "bases: none");
    } else {
        let _ = writeln!(s, "bases:");
        for team in 0..=8u16 {
            let bases: Vec<_> = m.bases_of(team).collect();
            if bases.is_empty() {
                continue;
            }
            let at: Vec<String> = bases.iter().map(|b| format!("({}, {}, {})", b.pos.x, b.pos.y, b.pos.z)).collect();
            let _ = writeln!(s, "  {:<7} {} at {}", team_name(team), bases.len(), at.join(", "));
        }
    }
    let _ = writeln!(s, "teleporters: {}", m.teleporters.len());
    for (i, f) in m.links.faces.iter().enumerate() {
        let to: Vec<String> = f.targets.iter().map(|&t| m.face_name(t)).collect();
        let note = if f.explicit { "" } else { "  (no link: the opposite face)" };
        let _ = writeln!(s, "  {:>3} {} -> {}{note}", i, m.face_name(i as u32), to.join(" | "));
    }
    if !m.links.broken.is_empty() {
        let _ = writeln!(s, "  {} link(s) match no teleporter", m.links.broken.len());
    }
    let _ = writeln!(s, "zones: {}", m.zones.len());
    for z in &m.zones {
        let mut what = Vec::new();
        if !z.teams.is_empty() {
            what.push(format!("spawn {}", z.teams.iter().map(|&t| team_name(t)).collect::<Vec<_>>().join(",")));
        }
        if !z.safety.is_empty() {
            what.push(format!("safety {}", z.safety.iter().map(|&t| team_name(t)).collect::<Vec<_>>().join(",")));
        }
        if !z.flags.is_empty() {
            what.push(format!("flags {}", z.flags.join(",")));
        }
        let _ = writeln!(
            s,
            "  at ({}, {}, {}) size ({}, {}, {}): {}",
            z.pos.x,
            z.pos.y,
            z.pos.z,
            z.size.x,
            z.size.y,
            z.size.z,
            if what.is_empty() { "nothing sent".to_string() } else { what.join("; ") }
        );
    }
    let _ = writeln!(s, "weapons: {}", m.weapons.len());
    for w in &m.weapons {
        let _ = writeln!(
            s,
            "  {} at ({}, {}, {}) heading {:.1} deg, first after {} s, then every {:?} s",
            w.flag,
            w.pos.x,
            w.pos.y,
            w.pos.z,
            w.direction.to_degrees(),
            w.initial_delay,
            w.delays
        );
    }
    for w in &m.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}

fn counts_text(c: &ObstacleCounts) -> String {
    let parts: Vec<String> =
        ObstacleKind::ALL.iter().filter(|&&k| c.get(k) > 0).map(|&k| format!("{} {}", c.get(k), k.name())).collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

/// Fill colour of a team.
pub fn team_color(team: u16) -> &'static str {
    match team {
        1 => "#d62728",
        2 => "#2ca02c",
        3 => "#1f77b4",
        4 => "#9467bd",
        0 => "#7f7f7f",
        _ => "#ff7f0e",
    }
}

fn pt(p: Vec3) -> String {
    format!("{:.2},{:.2}", p.x, -p.y)
}

fn polygon(s: &mut String, pts: &[Vec3], style: &str) {
    let p: Vec<String> = pts.iter().map(|&v| pt(v)).collect();
    let _ = writeln!(s, "<polygon points=\"{}\" {style}/>", p.join(" "));
}

fn rect_corners(pos: Vec3, angle: f32, hx: f32, hy: f32) -> [Vec3; 4] {
    let (s, c) = angle.sin_cos();
    let ax = Vec3::new(c, s, 0.0);
    let ay = Vec3::new(-s, c, 0.0);
    [pos - ax * hx - ay * hy, pos + ax * hx - ay * hy, pos + ax * hx + ay * hy, pos - ax * hx + ay * hy]
}

/// 2-D convex hull (x, y) of some points, counter-clockwise (Andrew's monotone chain).
fn hull(points: &[Vec3]) -> Vec<Vec3> {
    let mut p: Vec<Vec3> = points.iter().map(|v| Vec3::new(v.x, v.y, 0.0)).collect();
    p.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
    p.dedup();
    if p.len() < 3 {
        return p;
    }
    let cross = |o: Vec3, a: Vec3, b: Vec3| (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
    let mut h: Vec<Vec3> = Vec::with_capacity(2 * p.len());
    for &q in p.iter().chain(p.iter().rev().skip(1)) {
        while h.len() >= 2 && cross(h[h.len() - 2], h[h.len() - 1], q) <= 0.0 {
            h.pop();
        }
        h.push(q);
    }
    h.pop();
    h
}

/// Grey for an obstacle top height: low is light, high is dark.
fn grey(top: f32, max_top: f32) -> String {
    let f = if max_top > 0.0 { (top / max_top).clamp(0.0, 1.0) } else { 0.5 };
    let v = (200.0 - 130.0 * f) as u8;
    format!("#{v:02x}{v:02x}{v:02x}")
}

/// The stroke of an outlined obstacle: darker than [`grey`] (it is a line on the ground colour), darker still for
/// taller ones.
fn outline_grey(top: f32, max_top: f32) -> String {
    let f = if max_top > 0.0 { (top / max_top).clamp(0.0, 1.0) } else { 0.5 };
    let v = (140.0 - 100.0 * f) as u8;
    format!("#{v:02x}{v:02x}{v:02x}")
}

/// One `<path>` of the edges of these faces (polygons in 3-D) that belong to one face only: the outline of a
/// surface seen from above. Edges are matched by their end points to the hundredth of a unit, either way round.
fn outline_path(s: &mut String, faces: &[&[Vec3]], style: &str) {
    type Key = (i64, i64, i64);
    let key = |v: Vec3| ((v.x * 100.0).round() as i64, (v.y * 100.0).round() as i64, (v.z * 100.0).round() as i64);
    let mut edges: Vec<((Key, Key), Vec3, Vec3)> = Vec::new();
    for vs in faces {
        for k in 0..vs.len() {
            let (a, b) = (vs[k], vs[(k + 1) % vs.len()]);
            let (ka, kb) = (key(a), key(b));
            if ka != kb {
                edges.push(((ka.min(kb), ka.max(kb)), a, b));
            }
        }
    }
    edges.sort_by_key(|e| e.0);
    let mut d = String::new();
    let mut i = 0;
    while i < edges.len() {
        let mut j = i + 1;
        while j < edges.len() && edges[j].0 == edges[i].0 {
            j += 1;
        }
        if j == i + 1 {
            let _ = write!(d, "M{}L{}", pt(edges[i].1), pt(edges[i].2));
        }
        i = j;
    }
    if !d.is_empty() {
        let _ = writeln!(s, "<path d=\"{d}\" {style}/>");
    }
}

/// A top-down SVG map: boxes and pyramids shaded by height, meshes (arcs, cones, spheres, tetrahedra) as outlines,
/// bases in team colours, teleporters (field and posts, with names), zones dashed, world weapons as red triangles,
/// water tinted. North (+y) is up.
pub fn to_svg(m: &WorldModel) -> String {
    let half = (m.world_size * 0.5).max(1.0);
    let margin = half * 0.05 + 2.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"{:.2} {:.2} {:.2} {:.2}\" width=\"800\" height=\"800\">",
        -half - margin,
        -half - margin,
        2.0 * (half + margin),
        2.0 * (half + margin)
    );
    let line = half / 400.0;
    let _ = writeln!(
        s,
        "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#ece6d6\" stroke=\"#444\" stroke-width=\"{:.2}\"/>",
        -half,
        -half,
        2.0 * half,
        2.0 * half,
        2.0 * line
    );
    if m.water_level.is_some() {
        let _ = writeln!(
            s,
            "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"#4a90d9\" fill-opacity=\"0.25\"/>",
            -half,
            -half,
            2.0 * half,
            2.0 * half
        );
    }
    for z in &m.zones {
        let c = rect_corners(z.pos, z.rotation, z.size.x, z.size.y);
        let color = z.teams.first().or(z.safety.first()).map_or("#555", |&t| team_color(t));
        polygon(
            &mut s,
            &c,
            &format!(
                "fill=\"none\" stroke=\"{color}\" stroke-width=\"{:.2}\" stroke-dasharray=\"{:.2}\"",
                line,
                4.0 * line
            ),
        );
    }
    obstacles_svg(&mut s, m, line);
    for w in &m.weapons {
        let (sn, cs) = w.direction.sin_cos();
        let f = Vec3::new(cs, sn, 0.0);
        let l = Vec3::new(-sn, cs, 0.0);
        let k = 6.0 * line;
        polygon(&mut s, &[w.pos + f * k, w.pos - f * k + l * k * 0.6, w.pos - f * k - l * k * 0.6], "fill=\"#e00\"");
    }
    s.push_str("</svg>\n");
    s
}

/// The obstacles of [`to_svg`], lowest tops first so that taller ones are drawn over them: solids as their
/// footprint, meshes as their upward faces (or their outline when none faces up), teleporters by
/// [`teleporter_svg`]; shaded by height, bases in team colours, drive-through ones translucent.
fn obstacles_svg(s: &mut String, m: &WorldModel, line: f32) {
    let max_top = m.obstacles.iter().filter(|o| !o.bounds.is_empty()).map(|o| o.bounds.max.z).fold(0.0f32, f32::max);
    let mut order: Vec<usize> = (0..m.obstacles.len()).collect();
    order.sort_by(|&a, &b| m.obstacles[a].bounds.max.z.total_cmp(&m.obstacles[b].bounds.max.z));
    for i in order {
        let o = &m.obstacles[i];
        let fill = match o.team {
            Some(t) => team_color(t).to_string(),
            None => grey(o.bounds.max.z, max_top),
        };
        let mut style = format!("fill=\"{fill}\" stroke=\"#333\" stroke-width=\"{:.2}\"", line * 0.5);
        if o.passable.drive_through {
            style.push_str(" fill-opacity=\"0.4\"");
        }
        match &o.geometry {
            Geometry::Wall(_) => {}
            Geometry::Solid(_) => polygon(s, &rect_corners(o.pos, o.angle, o.size.x, o.size.y), &style),
            Geometry::Faces(_) => {
                // Meshes, arcs, cones, spheres and tetrahedra as outlines (they would hide what is under them):
                // the edges of their upward faces that no other upward face shares, so a sphere is its equator,
                // a cone its base, an arc its ring with the hole, a stepped mesh its steps; their hull when no
                // face looks up.
                let faces = m.obstacle_faces(super::model::ObstacleId(i as u32));
                let stroke = match o.team {
                    Some(t) => team_color(t).to_string(),
                    None => outline_grey(o.bounds.max.z, max_top),
                };
                let mut outline = format!(
                    "class=\"outline\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"{:.2}\" stroke-linejoin=\"round\"",
                    line * 1.5
                );
                if o.passable.drive_through {
                    outline.push_str(" stroke-opacity=\"0.5\"");
                }
                let up: Vec<&[Vec3]> =
                    faces.iter().filter(|f| f.plane.normal.z > 0.05).map(|f| m.face_vertices(f)).collect();
                if up.is_empty() {
                    let pts: Vec<Vec3> = faces.iter().flat_map(|f| m.face_vertices(f).iter().copied()).collect();
                    let h = hull(&pts);
                    if h.len() >= 3 {
                        polygon(s, &h, &outline);
                    }
                } else {
                    outline_path(s, &up, &outline);
                }
            }
            Geometry::Teleporter(t) => {
                if let Some(tp) = m.teleporters.get(*t as usize) {
                    teleporter_svg(s, m, tp, line);
                }
            }
            Geometry::None => {}
        }
    }
}

/// A teleporter of [`to_svg`]: its field, its two posts, and its name in front of it.
fn teleporter_svg(s: &mut String, m: &WorldModel, tp: &super::model::TeleporterModel, line: f32) {
    let field = rect_corners(tp.pos, tp.angle, tp.size.x.max(line), tp.size.y - tp.border);
    polygon(s, &field, "fill=\"#00c8c8\" fill-opacity=\"0.7\" stroke=\"none\"");
    for &k in &tp.frame[..2] {
        if let Some(sol) = m.solids.get(k as usize) {
            let h = hull(sol.shape.vertices());
            polygon(s, &h, "fill=\"#222\"");
        }
    }
    let (sn, cs) = tp.angle.sin_cos();
    let front = tp.pos + Vec3::new(cs, sn, 0.0) * (tp.size.x + 3.0 * line);
    let _ = writeln!(
        s,
        "<text x=\"{:.2}\" y=\"{:.2}\" font-size=\"{:.2}\" fill=\"#006060\">{}</text>",
        front.x,
        -front.y,
        8.0 * line,
        xml_escape(&tp.name)
    );
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
