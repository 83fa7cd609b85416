//! Tests against the captured worlds, their reference parses (`tools/bzproto.py` → JSON), hand-built databases
//! and deterministic fuzzing.

use super::*;
use crate::wire::{DecodeErrorKind, Writer};
use glam::Vec3;
use serde_json::{json, Value};

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/");

fn capture(name: &str) -> Vec<u8> {
    let path = format!("{CAPTURES}{name}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

fn reference(name: &str) -> Value {
    serde_json::from_slice(&capture(name)).unwrap()
}

// ------------------------------------------------------------------------------------------------------------
// The reference parse shape (bzproto.py's dicts), built from a WorldDb, so that whole worlds can be compared.

fn v(v: Vec3) -> Value {
    json!([v.x, v.y, v.z])
}

fn ref_transform(t: &MeshTransform) -> Value {
    let ops: Vec<Value> = t
        .ops
        .iter()
        .map(|op| match *op {
            TransformOp::Shift(x) => json!(["shift", v(x)]),
            TransformOp::Scale(x) => json!(["scale", v(x)]),
            TransformOp::Shear(x) => json!(["shear", v(x)]),
            TransformOp::Spin { axis, angle } => json!(["spin", v(axis), angle]),
            TransformOp::Index(i) => json!(["index", i]),
        })
        .collect();
    json!([t.name, ops])
}

fn ref_group(g: &GroupDefinition) -> Value {
    let mut obs = Vec::new();
    for o in &g.walls {
        obs.push(json!({"kind": "wall", "pos": v(o.pos), "angle": o.angle, "breadth": o.breadth,
                        "height": o.height, "state": o.state}));
    }
    for o in &g.boxes {
        obs.push(json!({"kind": "box", "pos": v(o.pos), "angle": o.angle, "size": v(o.size), "state": o.state}));
    }
    for o in &g.pyramids {
        obs.push(json!({"kind": "pyramid", "pos": v(o.pos), "angle": o.angle, "size": v(o.size), "state": o.state}));
    }
    for o in &g.bases {
        obs.push(json!({"kind": "base", "team": o.team, "pos": v(o.pos), "angle": o.angle, "size": v(o.size),
                        "state": o.state}));
    }
    for o in &g.teleporters {
        obs.push(json!({"kind": "teleporter", "name": o.name, "pos": v(o.pos), "angle": o.angle,
                        "size": v(o.size), "border": o.border, "horizontal": u8::from(o.horizontal),
                        "state": o.state}));
    }
    for o in &g.meshes {
        let extra = o.draw_info.as_ref().map_or(0, |b| b.len().div_ceil(8) + 1);
        let faces: Vec<Value> = o
            .faces
            .iter()
            .map(|f| {
                let mut x = json!({"state": f.state, "verts": f.vertices, "material": f.material,
                                   "phydrv": f.phydrv});
                if let Some(n) = &f.normals {
                    x["normals"] = json!(n);
                }
                if let Some(t) = &f.texcoords {
                    x["texcoords"] = json!(t);
                }
                x
            })
            .collect();
        let mut x = json!({"kind": "mesh",
            "checks": o.checks.iter().map(|c| json!([c.kind, v(c.point)])).collect::<Vec<_>>(),
            "vertices": o.vertices.iter().map(|&p| v(p)).collect::<Vec<_>>(),
            "normals": o.normals.iter().map(|&p| v(p)).collect::<Vec<_>>(),
            "texcoord_count_on_wire": o.texcoords.len() + extra,
            "faces": faces, "state": o.state});
        if let Some(f) = o.fake_vertex {
            x["drawinfo_extra_vertex"] = v(f);
        }
        obs.push(x);
    }
    for o in &g.arcs {
        obs.push(json!({"kind": "arc", "xform": ref_transform(&o.transform), "pos": v(o.pos), "size": v(o.size),
            "angle": o.angle, "sweep": o.sweep_degrees, "ratio": o.ratio, "divisions": o.divisions,
            "phydrv": o.phydrv, "texsize": o.texsize, "materials": o.materials, "state": o.state}));
    }
    for o in &g.cones {
        obs.push(json!({"kind": "cone", "xform": ref_transform(&o.transform), "pos": v(o.pos), "size": v(o.size),
            "angle": o.angle, "sweep": o.sweep_degrees, "divisions": o.divisions, "phydrv": o.phydrv,
            "texsize": o.texsize, "materials": o.materials, "state": o.state}));
    }
    for o in &g.spheres {
        obs.push(json!({"kind": "sphere", "xform": ref_transform(&o.transform), "pos": v(o.pos),
            "size": v(o.size), "angle": o.angle, "divisions": o.divisions, "phydrv": o.phydrv,
            "texsize": o.texsize, "materials": o.materials, "state": o.state}));
    }
    for o in &g.tetras {
        obs.push(json!({"kind": "tetra", "state": o.state, "xform": ref_transform(&o.transform),
            "vertices": o.vertices.iter().map(|&p| v(p)).collect::<Vec<_>>(),
            "normals": o.normals.iter().flatten().map(|n| n.iter().map(|&p| v(p)).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            "texcoords": o.texcoords.iter().flatten().collect::<Vec<_>>(),
            "materials": o.materials}));
    }
    let instances: Vec<Value> = g
        .instances
        .iter()
        .map(|i| {
            let mut x = json!({"groupdef": i.group_def, "name": i.name, "xform": ref_transform(&i.transform),
                               "bits": i.bits});
            if !i.material_map.is_empty() {
                x["matmap"] = json!(i.material_map);
            }
            if let Some(t) = i.team {
                x["team"] = json!(t);
            }
            if let Some(t) = i.tint {
                x["tint"] = json!(t);
            }
            if let Some(p) = i.phydrv {
                x["phydrv"] = json!(p);
            }
            if let Some(m) = i.material {
                x["material"] = json!(m);
            }
            x
        })
        .collect();
    json!({"name": g.name, "obstacles": obs, "instances": instances})
}

fn ref_world(w: &WorldDb) -> Value {
    let dyn_colors: Vec<Value> = w
        .dynamic_colors
        .iter()
        .map(|d| {
            let chans: Vec<Value> = d
                .channels
                .iter()
                .map(|c| {
                    let mut x = json!({"min": c.min, "max": c.max, "sin": c.sinusoids, "clampUp": c.clamp_ups,
                                       "clampDown": c.clamp_downs});
                    if let Some(s) = &c.sequence {
                        x["seq"] = json!([s.period, s.offset, s.values]);
                    }
                    x
                })
                .collect();
            json!([d.name, chans])
        })
        .collect();
    let texmats: Vec<Value> = w
        .texture_matrices
        .iter()
        .map(|t| {
            let bits = u8::from(t.fixed.is_some()) | (u8::from(t.dynamic.is_some()) << 1);
            let mut vals: Vec<f32> = t.fixed.map(|a| a.to_vec()).unwrap_or_default();
            vals.extend(t.dynamic.map(|a| a.to_vec()).unwrap_or_default());
            json!([t.name, bits, vals])
        })
        .collect();
    let materials: Vec<Value> = w
        .materials
        .iter()
        .map(|m| {
            json!({"name": m.name, "mode": m.mode, "dyncol": m.dynamic_color, "ambient": m.ambient,
                   "diffuse": m.diffuse, "specular": m.specular, "emission": m.emission,
                   "shininess": m.shininess, "alphaThreshold": m.alpha_threshold,
                   "textures": m.textures.iter().map(|t| json!([t.name, t.matrix, t.combine_mode, t.bits]))
                       .collect::<Vec<_>>(),
                   "shaders": m.shaders})
        })
        .collect();
    let phydrvs: Vec<Value> = w
        .physics_drivers
        .iter()
        .map(|p| {
            json!({"name": p.name, "linear": v(p.linear), "angularVel": p.angular_velocity,
                   "angularPos": p.angular_pos, "radialVel": p.radial_velocity, "radialPos": p.radial_pos,
                   "slideTime": p.slide_time, "deathMsg": p.death_message})
        })
        .collect();
    let mut x = json!({
        "dyncolors": dyn_colors,
        "texmats": texmats,
        "materials": materials,
        "phydrvs": phydrvs,
        "transforms": w.transforms.iter().map(ref_transform).collect::<Vec<_>>(),
        "world": ref_group(&w.world_group),
        "groupdefs": w.group_defs.iter().map(ref_group).collect::<Vec<_>>(),
        "links": w.links.iter().map(|l| json!([l.from, l.to])).collect::<Vec<_>>(),
        "waterLevel": w.water_level,
        "weapons": w.weapons.iter().map(|x| json!({"flag": x.flag, "pos": v(x.pos), "dir": x.direction,
            "initDelay": x.initial_delay, "delays": x.delays})).collect::<Vec<_>>(),
        "zones": w.zones.iter().map(|z| json!({"pos": v(z.pos), "size": v(z.size), "rot": z.rotation,
            "flags": z.flags, "teams": z.teams, "safety": z.safety})).collect::<Vec<_>>(),
        "trailing_bytes": 0,
    });
    if let Some(m) = w.water_material {
        x["waterMaterial"] = json!(m);
    }
    x
}

/// Structural equality, numbers within the rounding of the reference JSON (5 decimals).
fn assert_close(ours: &Value, theirs: &Value, path: &str) {
    match (ours, theirs) {
        (Value::Number(a), Value::Number(b)) => {
            let (a, b) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{path}: {a} != {b}");
        }
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: lengths differ");
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                assert_close(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(a), Value::Object(b)) => {
            let mut ka: Vec<_> = a.keys().collect();
            let mut kb: Vec<_> = b.keys().collect();
            ka.sort();
            kb.sort();
            assert_eq!(ka, kb, "{path}: keys differ");
            for (k, y) in b {
                assert_close(&a[k], y, &format!("{path}.{k}"));
            }
        }
        _ => assert_eq!(ours, theirs, "{path}"),
    }
}

/// Per-kind counts the way the captures' README counts them: world group plus named group definitions.
fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).abs().max_element() < 1e-4
}

fn reference_counts(parsed: &Value) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for kind in ObstacleKind::ALL {
        let mut n = 0;
        let groups = std::iter::once(&parsed["world"]).chain(parsed["groupdefs"].as_array().unwrap());
        for g in groups {
            n += g["obstacles"].as_array().unwrap().iter().filter(|o| o["kind"] == kind.name()).count();
        }
        out.push((kind.name().to_string(), n));
    }
    out
}

fn our_counts(w: &WorldDb) -> Vec<(String, usize)> {
    let c = w.counts();
    ObstacleKind::ALL.iter().map(|&k| (k.name().to_string(), c.get(k))).collect()
}

// ------------------------------------------------------------------------------------------------------------
// Captured worlds.

fn check_capture(prefix: &str, blob_len: usize, inner_len: usize) -> WorldDb {
    let blob = capture(&format!("{prefix}.bin"));
    let inner = capture(&format!("{prefix}-inner.bin"));
    let refj = reference(&format!("{prefix}.json"));
    assert_eq!(blob.len(), blob_len);
    assert_eq!(inner.len(), inner_len);

    let env = Envelope::parse(&blob).unwrap();
    assert_eq!(env.map_version, 1);
    assert_eq!(env.uncompressed_size as usize, inner_len);
    assert_eq!(env.compressed.len() as u64, refj["envelope"]["compressed"].as_u64().unwrap());
    assert_eq!(env.compressed.len() + ENVELOPE_OVERHEAD, blob_len);
    assert_eq!(inflate_blob(&blob).unwrap(), inner, "the blob inflates to the captured database");

    let world = parse_blob(&blob).unwrap();
    assert_eq!(world, WorldDb::parse(&inner).unwrap());
    assert_close(&ref_world(&world), &refj["parsed"], "world");
    assert_eq!(our_counts(&world), reference_counts(&refj["parsed"]));

    // Lossless: the encoder gives the captured bytes back, and a re-wrapped blob parses to the same world.
    assert_eq!(world.to_bytes(), inner, "to_bytes reproduces the captured database");
    assert_eq!(parse_blob(&world.to_blob()).unwrap(), world);
    world
}

#[test]
fn ctf_world_matches_reference_parse() {
    let w = check_capture("01-ctf-world", 368, 2188);
    let c = w.counts();
    assert_eq!(
        c,
        ObstacleCounts { walls: 4, boxes: 24, pyramids: 28, bases: 4, ..ObstacleCounts::default() },
        "README: 4 walls, 24 boxes, 28 pyramids, 4 bases"
    );
    assert_eq!(c.total(), 60);
    assert_eq!(c.to_string(), "4 wall, 24 box, 28 pyramid, 4 base");
    assert_eq!(w.zones.len(), 8);
    assert!(w.group_defs.is_empty() && w.world_group.instances.is_empty() && w.world_group.name.is_empty());
    assert!(!w.has_water() && w.water_material.is_none());

    // Outer walls at ±worldSize/2 = ±400, breadth 400, height 6.15 (fact sheet §7.4).
    let north = &w.world_group.walls[0];
    assert_eq!(north.pos, Vec3::new(0.0, 400.0, 0.0));
    assert!((north.angle - 3.0 * std::f32::consts::FRAC_PI_2).abs() < 1e-5);
    assert_eq!(north.breadth, 400.0);
    assert!((north.height - 6.15).abs() < 1e-5);

    let red = &w.world_group.bases[0];
    assert_eq!((red.team, red.pos, red.size), (1, Vec3::new(-370.0, 0.0, 0.0), Vec3::new(30.0, 30.0, 0.0)));
    assert!(close(w.world_group.pyramids[0].size, Vec3::new(8.2, 8.2, 10.25)));

    // Zero-size safety zones for dropped team flags.
    let z = &w.zones[1];
    assert_eq!(z.size, Vec3::ZERO);
    assert_eq!(z.safety, vec![1, 1, 2, 2, 3, 3, 4, 4]);
    assert!(z.flags.is_empty() && z.teams.is_empty());
}

#[test]
fn custom_world_matches_reference_parse() {
    let w = check_capture("02-custom-world", 2127, 3933);
    let c = w.counts();
    // World group: 4 walls, 62 boxes, 2 pyramids, 2 bases, 2 teleporters, 1 mesh, 2 arcs (one is the meshbox),
    // 1 cone, 1 sphere, 1 tetra; group "hut": 1 box, 1 pyramid.
    assert_eq!(
        c,
        ObstacleCounts {
            walls: 4,
            boxes: 63,
            pyramids: 3,
            bases: 2,
            teleporters: 2,
            meshes: 1,
            arcs: 2,
            cones: 1,
            spheres: 1,
            tetras: 1
        }
    );
    assert_eq!(w.world_group.counts().boxes, 62);

    // Sections 1-5.
    assert_eq!(w.dynamic_colors.len(), 1);
    assert_eq!(w.dynamic_colors[0].name, "pulse");
    assert_eq!(w.dynamic_colors[0].channels[0].sinusoids, vec![[2.0, 0.0, 1.0]]);
    assert_eq!(w.texture_matrices[0].name, "slide");
    assert!(w.texture_matrices[0].fixed.is_none());
    assert_eq!(w.texture_matrices[0].dynamic.unwrap()[1], 0.1);
    assert_eq!(w.materials.len(), 5);
    assert_eq!(w.materials[0].name, "redstuff");
    assert_eq!(w.material(0).unwrap().textures[0].name, "boxwall");
    assert!(w.material(-1).is_none() && w.material(5).is_none());
    assert_eq!(w.physics_drivers.len(), 2);
    assert_eq!(w.physics_driver(0).unwrap().linear, Vec3::new(5.0, 0.0, 0.0));
    assert_eq!(w.physics_driver(1).unwrap().name, "spinner");
    assert!((w.physics_drivers[1].angular_velocity - std::f32::consts::PI).abs() < 1e-5);
    assert!(w.physics_driver(-1).is_none());
    assert!(w.transforms.is_empty());

    // Obstacles.
    let g = &w.world_group;
    let thru = g.boxes.iter().filter(|b| b.is_drive_through()).collect::<Vec<_>>();
    assert_eq!(thru.len(), 1);
    assert_eq!((thru[0].pos, thru[0].size), (Vec3::new(-60.0, -60.0, 0.0), Vec3::new(6.0, 6.0, 20.0)));
    assert!(!thru[0].is_shoot_through());
    let flipped = g.pyramids.iter().filter(|p| p.is_flipped()).collect::<Vec<_>>();
    assert_eq!(flipped.len(), 1);
    assert_eq!(flipped[0].pos, Vec3::new(-50.0, 50.0, 0.0));
    let alpha = &g.teleporters[0];
    assert_eq!((alpha.name.as_str(), alpha.pos, alpha.angle), ("alpha", Vec3::new(0.0, 60.0, 0.0), 0.0));
    assert!(close(alpha.size, Vec3::new(0.56, 4.48, 10.08)) && (alpha.border - 1.12).abs() < 1e-5 && !alpha.horizontal);
    assert_eq!(g.teleporters[1].name, "beta");
    assert_eq!(
        w.links,
        vec![
            Link { from: "alpha:f".into(), to: "beta:b".into() },
            Link { from: "beta:*".into(), to: "alpha:f".into() }
        ]
    );

    // The meshbox arrives as an arc: 4 divisions, angle π/4, size × √2, the position and rotation in its
    // transform, carrying the conveyor driver.
    let meshbox = &g.arcs[0];
    assert_eq!((meshbox.divisions, meshbox.phydrv, meshbox.sweep_degrees), (4, 0, 360.0));
    assert!((meshbox.angle - std::f32::consts::FRAC_PI_4).abs() < 1e-5);
    assert!((meshbox.size.x - 4.0 * std::f32::consts::SQRT_2).abs() < 1e-4);
    assert_eq!(meshbox.pos, Vec3::ZERO);
    match meshbox.transform.ops.as_slice() {
        [TransformOp::Spin { axis, angle }, TransformOp::Shift(s)] => {
            assert_eq!(*axis, Vec3::Z);
            assert!((angle - 10f32.to_radians()).abs() < 1e-5);
            assert_eq!(*s, Vec3::new(20.0, -40.0, 0.0));
        }
        other => panic!("meshbox transform {other:?}"),
    }
    assert_eq!((g.arcs[1].ratio, g.arcs[1].sweep_degrees, g.arcs[1].materials), (0.5, 270.0, [1, 1, 2, 2, 3, 3]));
    assert_eq!(g.cones[0].divisions, 12);
    assert_eq!((g.spheres[0].pos, g.spheres[0].size), (Vec3::new(30.0, 70.0, 5.0), Vec3::splat(4.0)));
    assert!(!g.spheres[0].is_hemisphere());
    assert_eq!(g.tetras[0].vertices[3], Vec3::new(-25.0, -25.0, 8.0));
    assert_eq!(g.tetras[0].normals, [None; 4]);

    let mesh = &g.meshes[0];
    assert_eq!(mesh.vertices.len(), 4);
    assert!(mesh.fake_vertex.is_none() && mesh.draw_info.is_none() && mesh.texcoords.is_empty());
    assert_eq!(mesh.faces.len(), 4);
    assert_eq!(mesh.faces[3].vertices, vec![0, 2, 1]);
    assert_eq!((mesh.faces[3].phydrv, mesh.faces[0].phydrv), (1, -1));

    // Group definition and its two instances.
    let hut = w.group_def("hut").unwrap();
    assert_eq!(hut.boxes[0].size, Vec3::splat(3.0));
    assert_eq!(hut.pyramids[0].pos, Vec3::new(0.0, 0.0, 3.0));
    assert!(w.group_def("nope").is_none());
    let (a, b) = (&g.instances[0], &g.instances[1]);
    assert_eq!((a.group_def.as_str(), a.bits, a.tint), ("hut", 0, None));
    assert_eq!(a.transform.ops, vec![TransformOp::Shift(Vec3::new(-10.0, 40.0, 0.0))]);
    assert_eq!(
        (b.bits, b.tint, b.team, b.material),
        (instance_bits::MODIFY_COLOR, Some([0.5, 0.5, 1.0, 1.0]), None, None)
    );
    assert!(
        matches!(b.transform.ops[0], TransformOp::Spin { angle, .. } if (angle - std::f32::consts::FRAC_PI_4).abs() < 1e-5)
    );
    assert!(a.material_map.is_empty() && b.material_map.is_empty());

    // Sections 8-10.
    assert!(!w.has_water());
    assert_eq!(w.weapons.len(), 1);
    let gm = &w.weapons[0];
    assert_eq!((gm.flag.as_str(), gm.pos, gm.initial_delay), ("GM", Vec3::new(0.0, -90.0, 2.0), 5.0));
    assert_eq!(gm.delays, vec![10.0, 3.0]);
    assert_eq!(w.zones[0].teams, vec![1, 2]);
    assert_eq!(w.zones[0].safety, vec![1]);
    assert_eq!(w.zones[1].flags, vec!["GM".to_string(), "SW".to_string()]);
    assert_eq!(w.zones[1].size, Vec3::new(5.0, 5.0, 1.0));
}

// ------------------------------------------------------------------------------------------------------------
// Truncation and mutation: Err or Ok, never a panic.

#[test]
fn every_truncation_is_an_error() {
    for prefix in ["01-ctf-world", "02-custom-world"] {
        let inner = capture(&format!("{prefix}-inner.bin"));
        for len in 0..inner.len() {
            let e = WorldDb::parse(&inner[..len]).unwrap_err();
            assert!(matches!(e, WorldError::Database { .. }), "{prefix} inner[..{len}]: {e}");
            assert!(!e.to_string().is_empty());
        }
        let blob = capture(&format!("{prefix}.bin"));
        for len in 0..blob.len() {
            let e = parse_blob(&blob[..len]).unwrap_err();
            assert!(matches!(e, WorldError::Envelope(ref d) if d.is_truncation()), "{prefix} blob[..{len}]: {e}");
        }
        // One byte too many, in the database and after the envelope.
        let mut longer = inner.clone();
        longer.push(0);
        let e = WorldDb::parse(&longer).unwrap_err();
        assert!(
            matches!(&e, WorldError::Database { error, location }
                if error.kind == DecodeErrorKind::TrailingBytes { count: 1 } && location == "end of database"),
            "{e}"
        );
        let mut longer = blob.clone();
        longer.push(0);
        assert!(matches!(parse_blob(&longer), Err(WorldError::Envelope(_))));
    }
}

/// xorshift64*: deterministic, good enough to pick offsets and bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One random edit: flip bits, overwrite a 32-bit word with an interesting value, insert or delete bytes.
fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    const WORDS: [u32; 9] = [0, 1, 2, 0xff, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x0010_0000];
    let at = rng.below(data.len());
    match rng.below(5) {
        0 => {
            if let Some(b) = data.get_mut(at) {
                *b ^= 1 << rng.below(8);
            }
        }
        1 => {
            if let Some(b) = data.get_mut(at) {
                *b = rng.next() as u8;
            }
        }
        2 => {
            let word = WORDS[rng.below(WORDS.len())].to_be_bytes();
            for (i, &b) in word.iter().enumerate() {
                if let Some(x) = data.get_mut(at + i) {
                    *x = b;
                }
            }
        }
        3 => {
            let n = 1 + rng.below(8);
            for _ in 0..n {
                data.insert(at.min(data.len()), rng.next() as u8);
            }
        }
        _ => {
            let n = (1 + rng.below(8)).min(data.len().saturating_sub(at));
            data.drain(at..at + n);
        }
    }
}

#[test]
fn mutated_databases_never_panic() {
    for (seed, prefix) in [(0x1234_5678_9abc_def1u64, "01-ctf-world"), (0x0fed_cba9_8765_4321, "02-custom-world")] {
        let inner = capture(&format!("{prefix}-inner.bin"));
        let mut rng = Rng(seed);
        let (mut ok, mut err) = (0, 0);
        for n in 0..3000 {
            let mut data = inner.clone();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut rng, &mut data);
            }
            match WorldDb::parse(&data) {
                Ok(w) => {
                    ok += 1;
                    // Whatever parses must encode back to something that parses to the same world.
                    let again = WorldDb::parse(&w.to_bytes());
                    assert!(again.as_ref() == Ok(&w), "{prefix} iteration {n}: re-encoded world differs");
                }
                Err(e) => {
                    err += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        assert!(ok > 0 && err > 0, "{prefix}: {ok} ok, {err} err");
    }
}

#[test]
fn hostile_counts_in_every_position_are_refused_cheaply() {
    // Every 4-byte window overwritten with huge counts: the count checks must refuse them before allocating.
    for prefix in ["01-ctf-world", "02-custom-world"] {
        let inner = capture(&format!("{prefix}-inner.bin"));
        for word in [0x7fff_ffffu32, 0xffff_ffff, 0x0100_0000] {
            for at in 0..inner.len().saturating_sub(3) {
                let mut data = inner.clone();
                data[at..at + 4].copy_from_slice(&word.to_be_bytes());
                let _ = WorldDb::parse(&data);
            }
        }
    }
}

#[test]
fn mutated_blobs_never_panic() {
    for (seed, prefix) in [(0x9e37_79b9_7f4a_7c15u64, "01-ctf-world"), (0xd1b5_4a32_d192_ed03, "02-custom-world")] {
        let blob = capture(&format!("{prefix}.bin"));
        let mut rng = Rng(seed);
        for _ in 0..2000 {
            let mut data = blob.clone();
            for _ in 0..1 + rng.below(2) {
                mutate(&mut rng, &mut data);
            }
            if let Err(e) = parse_blob(&data) {
                assert!(!e.to_string().is_empty());
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------------------
// Envelope and inflation limits.

fn envelope_with(uncompressed: u32, compressed: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u16(10).u16(WORLD_CODE_HEADER).u16(1).u32(uncompressed).u32(compressed.len() as u32).bytes(compressed);
    w.u16(0).u16(WORLD_CODE_END);
    w.into_vec()
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let blob = Envelope::wrap(data);
    Envelope::parse(&blob).unwrap().compressed.to_vec()
}

#[test]
fn envelope_fields_are_checked() {
    let good = capture("01-ctf-world.bin");
    let field_error = |at: usize, bytes: &[u8]| {
        let mut b = good.clone();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        match parse_blob(&b) {
            Err(WorldError::Envelope(e)) => e,
            other => panic!("patch at {at}: {other:?}"),
        }
    };
    let e = field_error(0, &[0, 11]);
    assert_eq!((e.kind, e.at), (DecodeErrorKind::BadValue { field: "header length", value: 11 }, 0));
    assert!(matches!(field_error(2, b"hf").kind, DecodeErrorKind::BadValue { field: "header code", .. }));
    let e = field_error(4, &[0, 2]);
    assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "map version", value: 2 });
    assert_eq!(
        e.to_string(),
        "bad value 2 in field 'map version' of world envelope at offset 4",
        "Display names the field and the offset"
    );
    let n = good.len();
    assert!(matches!(field_error(n - 4, &[0, 1]).kind, DecodeErrorKind::BadValue { field: "end record length", .. }));
    assert!(matches!(field_error(n - 2, b"ee").kind, DecodeErrorKind::BadValue { field: "end code", .. }));
    // Compressed size one too large: the end record is no longer where it should be.
    let mut b = good.clone();
    b[13] += 1;
    assert!(matches!(parse_blob(&b), Err(WorldError::Envelope(_))));
}

#[test]
fn inflation_is_capped_and_sizes_must_match() {
    let inner = capture("01-ctf-world-inner.bin");
    let z = zlib(&inner);

    // Declared size above the cap: refused before inflating anything.
    let blob = envelope_with(u32::MAX, &z);
    let e = parse_blob(&blob).unwrap_err();
    assert!(matches!(&e, WorldError::Envelope(d) if matches!(d.kind, DecodeErrorKind::TooLong { .. })), "{e}");
    assert_eq!(
        Envelope::parse(&envelope_with(2188, &z)).unwrap().inflate(1000),
        Err(WorldError::Envelope(
            crate::wire::DecodeError::new(
                DecodeErrorKind::TooLong { field: "uncompressed size", max: 1000, got: 2188 },
                6
            )
            .context("world envelope")
        ))
    );

    // Declared smaller or larger than the real size.
    assert_eq!(parse_blob(&envelope_with(2187, &z)), Err(WorldError::Overflow { declared: 2187 }));
    assert_eq!(parse_blob(&envelope_with(2189, &z)), Err(WorldError::SizeMismatch { declared: 2189, actual: 2188 }));

    // A bomb: 64 MiB of zeros compress to ~64 KiB; declared 1000 → stopped right after 1000 bytes.
    let bomb = zlib(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 100_000);
    let env_bytes = envelope_with(1000, &bomb);
    let env = Envelope::parse(&env_bytes).unwrap();
    assert_eq!(env.inflate(MAX_WORLD_SIZE), Err(WorldError::Overflow { declared: 1000 }));

    // Truncated stream, corrupt stream, bytes after the stream.
    let e = parse_blob(&envelope_with(2188, &z[..z.len() - 5])).unwrap_err();
    assert!(matches!(&e, WorldError::Inflate(m) if m.contains("ends early")), "{e}");
    let mut bad = z.clone();
    bad[0] = 0x00;
    assert!(matches!(parse_blob(&envelope_with(2188, &bad)), Err(WorldError::Inflate(_))));
    let mut extra = z.clone();
    extra.extend_from_slice(b"xyz");
    let e = parse_blob(&envelope_with(2188, &extra)).unwrap_err();
    assert_eq!(e, WorldError::Inflate("3 byte(s) after the end of the zlib stream".into()));
    assert_eq!(e.to_string(), "cannot decompress the world: 3 byte(s) after the end of the zlib stream");

    // And the good one.
    assert_eq!(inflate_blob(&envelope_with(2188, &z)).unwrap(), inner);
}

// ------------------------------------------------------------------------------------------------------------
// A hand-built database exercising every record kind, the draw-info trick and a material-map group instance. It
// is written with the plain Writer, following bzfs' pack functions, independently of `to_bytes`.

fn xform(w: &mut Writer, name: &str, shift: Option<[f32; 3]>) {
    w.sstr(name.as_bytes());
    match shift {
        Some(s) => {
            w.u32(1).u8(0).vec3(s);
        }
        None => {
            w.u32(0);
        }
    }
}

/// Offsets of interesting fields in the hand-built database.
struct Handmade {
    bytes: Vec<u8>,
    mesh_face0_index: usize,
    rewind_len: usize,
    transform_type: usize,
    matmap_count: usize,
}

fn handmade() -> Handmade {
    let mut w = Writer::new();
    // 1. one dynamic colour: red has a sequence, alpha a clamp-up.
    w.u32(1).sstr(b"blink");
    for ch in 0..4 {
        w.f32(0.0).f32(1.0).u32(0); // min, max, no sinusoids
        w.u32(u32::from(ch == 3));
        if ch == 3 {
            w.f32(1.0).f32(0.5).f32(0.25);
        }
        w.u32(0); // clamp-downs
        if ch == 0 {
            w.u32(3).f32(2.0).f32(0.0).bytes(&[0, 1, 2]);
        } else {
            w.u32(0);
        }
    }
    // 2. one texture matrix with both parts.
    w.u32(1).sstr(b"tm").u8(3);
    for i in 0..16 {
        w.f32(i as f32);
    }
    // 3. two materials, the first with a texture and a shader.
    w.u32(2);
    for (name, tex) in [(&b"mat0"[..], true), (&b""[..], false)] {
        w.sstr(name).u8(material_mode::NO_RADAR).i32(if tex { 0 } else { -1 });
        for _ in 0..16 {
            w.f32(0.5);
        }
        w.f32(10.0).f32(0.1);
        if tex {
            w.u8(1).sstr(b"boxwall").i32(0).i32(2).u8(3);
            w.u8(1).sstr(b"shader");
        } else {
            w.u8(0).u8(0);
        }
    }
    // 4. a deadly physics driver.
    w.u32(1).sstr(b"lava").vec3([1.0, 2.0, 3.0]).f32(0.5).f32(1.0).f32(2.0).f32(0.25).f32(3.0).f32(4.0).f32(0.0);
    w.sstr(b"burnt");
    // 5. a named transform with every step type.
    w.u32(1).sstr(b"named").u32(5);
    w.u8(0).vec3([1.0, 2.0, 3.0]);
    w.u8(1).vec3([2.0, 2.0, 2.0]);
    w.u8(2).vec3([0.0, 0.1, 0.0]);
    w.u8(3).vec3([0.0, 0.0, 1.0]).f32(1.5);
    let transform_type = w.len();
    w.u8(4).i32(0);

    // 6a. world group: one of each kind except arc/cone/sphere/tetra, then one instance.
    w.sstr(b"");
    w.u32(1).vec3([0.0, 100.0, 0.0]).f32(0.0).f32(100.0).f32(6.15).u8(obstacle_state::RICOCHET); // wall
    w.u32(1).vec3([1.0, 2.0, 0.0]).f32(0.5).vec3([3.0, 4.0, 5.0]).u8(obstacle_state::SHOOT_THROUGH); // box
    w.u32(1).vec3([1.0, 2.0, 0.0]).f32(0.5).vec3([3.0, 4.0, 5.0]).u8(obstacle_state::FLIP_Z); // pyramid
    w.u32(1).u16(3).vec3([5.0, 5.0, 0.0]).f32(0.0).vec3([10.0, 10.0, 1.0]).u8(0); // base
    w.u32(1).sstr(b"door").vec3([0.0, 0.0, 0.0]).f32(1.0).vec3([0.56, 4.48, 10.08]).f32(1.12).u8(1).u8(0);
    // The mesh, packed like MeshObstacle::pack with a draw-info block: 3 real vertices + a fake one; 2 real
    // texcoords, then the 13-byte block padded to 16, then (rewind = 16 + 8, 0) → 2 + 2 + 1 = 5 on the wire.
    w.u32(1);
    w.i32(1).u8(0).vec3([0.5, 0.5, 0.5]);
    w.i32(4).vec3([0.0, 0.0, 0.0]).vec3([1.0, 0.0, 0.0]).vec3([0.0, 1.0, 0.0]).vec3([9.0, 9.0, 9.0]);
    w.i32(1).vec3([0.0, 0.0, 1.0]);
    w.i32(5).f32(0.0).f32(0.0).f32(1.0).f32(1.0);
    w.bytes(b"drawinfo-blob").bytes(&[0, 0, 0]);
    let rewind_len = w.len();
    w.i32(24).i32(0);
    w.i32(2);
    let mesh_face0_index = w.len() + 1 + 4;
    w.u8(face_state::HAS_NORMALS | face_state::HAS_TEXCOORDS | face_state::RICOCHET);
    w.i32(3).i32(0).i32(1).i32(2).i32(0).i32(0).i32(0).i32(0).i32(1).i32(1).i32(0).i32(-1);
    w.u8(face_state::DRIVE_THROUGH).i32(3).i32(2).i32(1).i32(0).i32(1).i32(0);
    w.u8(mesh_state::DRAW_INFO | mesh_state::SMOOTH_BOUNCE);
    w.u32(0).u32(0).u32(0).u32(0); // arcs, cones, spheres, tetras
                                   // The instance: name "inst" + NUL + material map [(0 → 1), (1 → 0)], all four overrides, drive-through.
    w.u32(1).sstr(b"g");
    let matmap_count = w.len() + 4 + 5;
    let mut raw = Writer::new();
    raw.bytes(b"inst").u8(0).i32(2).i32(0).i32(1).i32(1).i32(0);
    w.sstr(raw.as_slice());
    xform(&mut w, "", Some([10.0, 0.0, 0.0]));
    w.u8(instance_bits::MODIFY_MASK | instance_bits::DRIVE_THROUGH);
    w.u16(2).vec3([1.0, 0.5, 0.5]).f32(0.75).i32(0).i32(1);

    // 6b. one named group "g" with an arc, a cone, a sphere and a tetra.
    w.u32(1).sstr(b"g");
    for _ in 0..6 {
        w.u32(0);
    }
    w.u32(1);
    xform(&mut w, "", None);
    w.vec3([0.0, 0.0, 0.0]).vec3([5.0, 5.0, 2.0]).f32(0.0).f32(180.0).f32(0.25).i32(16).i32(0);
    w.f32(-8.0).f32(-8.0).f32(-8.0).f32(-8.0).i32(0).i32(0).i32(1).i32(1).i32(-1).i32(-1).u8(arc_state::RICOCHET);
    w.u32(1);
    xform(&mut w, "", Some([0.0, 0.0, 1.0]));
    w.vec3([1.0, 1.0, 0.0]).vec3([2.0, 2.0, 4.0]).f32(0.0).f32(360.0).i32(8).i32(-1);
    w.f32(-8.0).f32(-8.0).i32(0).i32(0).i32(0).i32(0).u8(0);
    w.u32(1);
    xform(&mut w, "", None);
    w.vec3([0.0, 0.0, 5.0]).vec3([3.0, 3.0, 3.0]).f32(0.0).i32(6).i32(-1).f32(-4.0).f32(-4.0).i32(1).i32(1);
    w.u8(sphere_state::HEMISPHERE);
    w.u32(1).u8(tetra_state::SHOOT_THROUGH);
    xform(&mut w, "", None);
    w.vec3([0.0, 0.0, 0.0]).vec3([1.0, 0.0, 0.0]).vec3([0.0, 1.0, 0.0]).vec3([0.0, 0.0, 1.0]);
    w.u8(0b0101);
    for i in 0..6 {
        w.vec3([i as f32, 0.0, 1.0]);
    }
    w.u8(0b0010);
    for i in 0..3 {
        w.f32(i as f32).f32(1.0);
    }
    w.i32(0).i32(1).i32(0).i32(1);
    w.u32(0); // no instances in "g"

    // 7-10.
    w.u32(1).sstr(b"door:f").sstr(b"door:b");
    w.f32(1.5).i32(1);
    w.u32(1).bytes(b"L\0").vec3([0.0, 0.0, 1.0]).f32(0.0).f32(2.0).u16(0);
    w.u32(1).vec3([1.0, 1.0, 0.0]).vec3([2.0, 2.0, 1.0]).f32(0.5).u16(2).u16(1).u16(0).bytes(b"GMV\0").u16(4);

    Handmade { bytes: w.into_vec(), mesh_face0_index, rewind_len, transform_type, matmap_count }
}

#[test]
fn handmade_database_parses_every_record_kind() {
    let h = handmade();
    let w = WorldDb::parse(&h.bytes).unwrap();

    let seq = w.dynamic_colors[0].channels[0].sequence.as_ref().unwrap();
    assert_eq!((seq.period, seq.values.as_slice()), (2.0, &[0u8, 1, 2][..]));
    assert_eq!(w.dynamic_colors[0].channels[3].clamp_ups, vec![[1.0, 0.5, 0.25]]);
    assert_eq!(w.texture_matrices[0].fixed.unwrap()[6], 6.0);
    assert_eq!(w.texture_matrices[0].dynamic.unwrap()[0], 7.0);
    assert_eq!(w.materials[0].shaders, vec!["shader".to_string()]);
    assert_eq!(w.materials[0].textures[0].bits, 3);
    assert_eq!(w.physics_drivers[0].death_message, "burnt");
    assert_eq!(w.physics_drivers[0].radial_pos, [3.0, 4.0]);
    assert_eq!(
        w.transforms[0].ops,
        vec![
            TransformOp::Shift(Vec3::new(1.0, 2.0, 3.0)),
            TransformOp::Scale(Vec3::splat(2.0)),
            TransformOp::Shear(Vec3::new(0.0, 0.1, 0.0)),
            TransformOp::Spin { axis: Vec3::Z, angle: 1.5 },
            TransformOp::Index(0),
        ]
    );
    assert!(w.transform(0).is_some() && w.transform(1).is_none());

    let g = &w.world_group;
    assert!(g.walls[0].is_ricochet());
    assert!(g.boxes[0].is_shoot_through() && !g.boxes[0].is_drive_through());
    assert!(g.pyramids[0].is_flipped());
    assert_eq!(g.bases[0].team, 3);
    assert!(g.teleporters[0].horizontal);

    // Draw-info trick: fake vertex dropped, texcoords shrunk to the real two, block recovered.
    let m = &g.meshes[0];
    assert_eq!(m.vertices, vec![Vec3::ZERO, Vec3::X, Vec3::Y]);
    assert_eq!(m.fake_vertex, Some(Vec3::splat(9.0)));
    assert_eq!(m.texcoords, vec![[0.0, 0.0], [1.0, 1.0]]);
    assert_eq!(m.draw_info.as_deref(), Some(&b"drawinfo-blob\0\0\0"[..]));
    assert_eq!(m.checks, vec![MeshCheck { kind: 0, point: Vec3::splat(0.5) }]);
    assert_eq!(m.faces[0].normals, Some(vec![0, 0, 0]));
    assert_eq!(m.faces[0].texcoords, Some(vec![0, 1, 1]));
    assert!(m.faces[0].is_ricochet() && m.faces[1].is_drive_through());
    assert_eq!((m.faces[1].normals.as_ref(), m.faces[1].material, m.faces[1].phydrv), (None, 1, 0));
    assert!(!m.is_drive_through() && m.state & mesh_state::SMOOTH_BOUNCE != 0);

    // Group instance with the hidden material map and every override.
    let i = &g.instances[0];
    assert_eq!((i.group_def.as_str(), i.name.as_str()), ("g", "inst"));
    assert_eq!(i.material_map, vec![(0, 1), (1, 0)]);
    assert_eq!(i.transform.ops, vec![TransformOp::Shift(Vec3::new(10.0, 0.0, 0.0))]);
    assert_eq!((i.team, i.tint, i.phydrv, i.material), (Some(2), Some([1.0, 0.5, 0.5, 0.75]), Some(0), Some(1)));
    assert!(i.is_drive_through() && !i.is_shoot_through() && !i.is_ricochet());

    let d = w.group_def("g").unwrap();
    assert_eq!((d.arcs[0].sweep_degrees, d.arcs[0].ratio, d.arcs[0].divisions), (180.0, 0.25, 16));
    assert!(d.arcs[0].is_ricochet());
    assert_eq!(d.cones[0].transform.ops, vec![TransformOp::Shift(Vec3::Z)]);
    assert!(d.spheres[0].is_hemisphere());
    let t = &d.tetras[0];
    assert!(t.is_shoot_through());
    assert_eq!(t.normals[0].unwrap()[2], Vec3::new(2.0, 0.0, 1.0));
    assert_eq!((t.normals[1], t.normals[2].unwrap()[0]), (None, Vec3::new(3.0, 0.0, 1.0)));
    assert_eq!((t.texcoords[0], t.texcoords[1]), (None, Some([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])));
    assert_eq!(
        w.counts(),
        ObstacleCounts {
            walls: 1,
            boxes: 1,
            pyramids: 1,
            bases: 1,
            teleporters: 1,
            meshes: 1,
            arcs: 1,
            cones: 1,
            spheres: 1,
            tetras: 1
        }
    );

    assert_eq!(w.links, vec![Link { from: "door:f".into(), to: "door:b".into() }]);
    assert!(w.has_water());
    assert_eq!((w.water_level, w.water_material), (1.5, Some(1)));
    assert_eq!((w.weapons[0].flag.as_str(), w.weapons[0].delays.len()), ("L", 0));
    assert_eq!((w.zones[0].flags.clone(), w.zones[0].teams.clone()), (vec!["GM".into(), "V".into()], vec![4]));

    // The encoder reproduces the hand-packed bytes exactly (draw-info trick and material map included).
    assert_eq!(w.to_bytes(), h.bytes);
    assert_eq!(parse_blob(&w.to_blob()).unwrap(), w);
    // Every truncation of it fails too.
    for len in 0..h.bytes.len() {
        assert!(WorldDb::parse(&h.bytes[..len]).is_err(), "handmade[..{len}]");
    }
}

fn db_error(bytes: &[u8]) -> (crate::wire::DecodeError, String) {
    match WorldDb::parse(bytes) {
        Err(WorldError::Database { error, location }) => (error, location),
        other => panic!("expected a database error, got {other:?}"),
    }
}

#[test]
fn errors_name_the_record_and_refuse_what_the_client_would_misread() {
    let h = handmade();
    let patch = |at: usize, word: &[u8]| {
        let mut b = h.bytes.clone();
        b[at..at + word.len()].copy_from_slice(word);
        b
    };

    // Face vertex index past the real vertices (3 is the fake one).
    let (e, loc) = db_error(&patch(h.mesh_face0_index, &3i32.to_be_bytes()));
    assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "mesh face vertex index", value: 3 });
    assert_eq!(loc, "world group, mesh #0, face 0");
    let msg = WorldError::Database { error: e, location: loc }.to_string();
    assert!(msg.starts_with("malformed world database (world group, mesh #0, face 0): bad value 3"), "{msg}");
    assert!(msg.contains("world: mesh face"), "{msg}");

    // Negative face vertex index.
    let (e, _) = db_error(&patch(h.mesh_face0_index, &(-1i32).to_be_bytes()));
    assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "mesh face vertex index", value: -1 });

    // Draw-info rewind length: negative and misaligned are refused; longer than the array means "no draw info".
    for bad in [-8i32, 0, 12] {
        let (e, loc) = db_error(&patch(h.rewind_len, &bad.to_be_bytes()));
        assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "mesh draw-info length", value: bad.into() });
        assert_eq!((e.at, loc.as_str()), (h.rewind_len, "world group, mesh #0"));
    }
    let w = WorldDb::parse(&patch(h.rewind_len, &48i32.to_be_bytes())).unwrap();
    assert_eq!((w.world_group.meshes[0].texcoords.len(), w.world_group.meshes[0].draw_info.as_ref()), (5, None));
    // The whole array as draw info: no real texcoords left, so face 0's texcoord index 1 is out of range.
    let (e, _) = db_error(&patch(h.rewind_len, &40i32.to_be_bytes()));
    assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "mesh face texcoord index", value: 0 });

    // Unknown transform type.
    let (e, loc) = db_error(&patch(h.transform_type, &[5]));
    assert_eq!(
        (e.kind, e.at, loc.as_str()),
        (DecodeErrorKind::BadValue { field: "transform type", value: 5 }, h.transform_type, "transform #0")
    );

    // Material map count that does not fit the name string; negative count.
    let (e, loc) = db_error(&patch(h.matmap_count, &3i32.to_be_bytes()));
    assert!(matches!(e.kind, DecodeErrorKind::TooLong { field: "material map count", got: 3, max: 2 }), "{e}");
    assert_eq!((e.at, loc.as_str()), (h.matmap_count + 4, "world group, group instance #0"));
    assert_eq!(e.context, Some("world: group instance material map"));
    let (e, _) = db_error(&patch(h.matmap_count, &(-1i32).to_be_bytes()));
    assert_eq!(e.kind, DecodeErrorKind::BadValue { field: "material map count", value: -1 });
    // A shorter map leaves bytes in the name string.
    let (e, _) = db_error(&patch(h.matmap_count, &1i32.to_be_bytes()));
    assert_eq!(e.kind, DecodeErrorKind::TrailingBytes { count: 8 });

    // Hostile section count.
    let mut b = h.bytes.clone();
    b[..4].copy_from_slice(&u32::MAX.to_be_bytes());
    let (e, loc) = db_error(&b);
    assert!(matches!(e.kind, DecodeErrorKind::TooLong { field: "dynamic colour count", .. }));
    assert_eq!(loc, "dynamic colours");

    // A group definition's name appears in the location.
    let named = capture("02-custom-world-inner.bin");
    let hut_at = named.windows(7).rposition(|w| w == b"\0\0\0\x03hut").unwrap() + 7;
    let mut b = named.clone();
    b[hut_at..hut_at + 4].copy_from_slice(&1000u32.to_be_bytes()); // walls in "hut"
    let (e, loc) = db_error(&b);
    assert_eq!(loc, "group definition #0, \"hut\", wall count");
    assert!(matches!(e.kind, DecodeErrorKind::TooLong { field: "obstacle count", got: 1000, .. }));
}

#[test]
fn group_instances_are_capped_before_they_are_decoded() {
    let inst = GroupInstance {
        group_def: "g".into(),
        name: String::new(),
        material_map: Vec::new(),
        transform: MeshTransform::default(),
        bits: 0,
        team: None,
        tint: None,
        phydrv: None,
        material: None,
    };
    let g = GroupDefinition { name: "g".into(), ..GroupDefinition::default() };
    let mut w = WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: Vec::new(),
        transforms: Vec::new(),
        world_group: GroupDefinition::default(),
        group_defs: vec![g],
        links: Vec::new(),
        water_level: -1.0,
        water_material: None,
        weapons: Vec::new(),
        zones: Vec::new(),
    };
    // At the cap, split between the world group and a named group: decoded.
    let half = MAX_GROUP_INSTANCES / 2;
    w.world_group.instances = vec![inst.clone(); half];
    w.group_defs[0].instances = vec![inst.clone(); MAX_GROUP_INSTANCES - half];
    let parsed = WorldDb::parse(&w.to_bytes()).unwrap();
    assert_eq!(parsed.group_defs[0].instances.len(), MAX_GROUP_INSTANCES - half);
    drop(parsed);
    // One more in the named group: refused at its count, naming the total and the cap.
    w.group_defs[0].instances.push(inst);
    let bytes = w.to_bytes();
    let at = 20 + (4 + 11 * 4) + half * 18 + 4 + (4 + 1) + 10 * 4; // an instance of "g" is 18 bytes
    assert_eq!(&bytes[at..at + 4], &((MAX_GROUP_INSTANCES - half + 1) as u32).to_be_bytes());
    let e = WorldDb::parse(&bytes).unwrap_err();
    assert_eq!(
        e,
        WorldError::TooMany {
            what: "group instances",
            count: MAX_GROUP_INSTANCES + 1,
            limit: MAX_GROUP_INSTANCES,
            at,
            location: "group definition #0, \"g\", group instance count".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "the world database holds 131073 group instances, over the limit of 131072 (group definition #0, \"g\", \
             group instance count, offset {at})"
        )
    );
}

// ------------------------------------------------------------------------------------------------------------
// The decoded-size budget.

/// A database that is all zeros but for its counts: `matrices` empty texture matrices (5 bytes each), a world
/// group of `meshes` empty meshes (21 bytes each) and `groups` named groups of `per_group` empty meshes each.
fn zero_bomb(matrices: usize, meshes: usize, groups: usize, per_group: usize) -> Vec<u8> {
    let group = |v: &mut Vec<u8>, name: &str, meshes: usize| {
        v.extend((name.len() as u32).to_be_bytes());
        v.extend(name.as_bytes());
        v.extend([0; 5 * 4]); // walls .. teleporters
        v.extend((meshes as u32).to_be_bytes());
        v.resize(v.len() + 21 * meshes, 0);
        v.extend([0; 5 * 4]); // arcs .. tetras, instances
    };
    let mut v = 0u32.to_be_bytes().to_vec();
    v.extend((matrices as u32).to_be_bytes());
    v.resize(v.len() + 5 * matrices, 0);
    v.extend([0; 3 * 4]); // materials, physics drivers, transforms
    group(&mut v, "", meshes);
    v.extend((groups as u32).to_be_bytes());
    for i in 0..groups {
        group(&mut v, &format!("g{i}"), per_group);
    }
    v.extend(0u32.to_be_bytes()); // links
    v.extend((-1f32).to_be_bytes()); // no water
    v.extend([0; 2 * 4]); // weapons, zones
    v
}

#[test]
fn zero_bomb_is_a_valid_database() {
    let w = WorldDb::parse(&zero_bomb(3, 2, 2, 1)).unwrap();
    assert_eq!(w.texture_matrices.len(), 3);
    assert_eq!(w.world_group.meshes.len(), 2);
    assert_eq!(w.group_defs.iter().map(|g| g.meshes.len()).collect::<Vec<_>>(), [1, 1]);
}

/// What the decoder charges for a list of `n` `T`s (see `parse::heap_cost`).
fn list_cost<T>(n: usize) -> usize {
    super::parse::heap_cost(n * std::mem::size_of::<T>())
}

#[test]
fn millions_of_tiny_records_are_refused_at_their_count_before_any_is_decoded() {
    // 64 MiB of empty texture matrices: 13.4 million records of 5 bytes, about 96 each in memory (1.3 GB).
    let n = (MAX_WORLD_SIZE - 100) / 5;
    let db = zero_bomb(n, 0, 0, 0);
    assert!(db.len() <= MAX_WORLD_SIZE);
    let t = std::time::Instant::now();
    let e = WorldDb::parse(&db).unwrap_err();
    eprintln!("texture-matrix bomb refused in {:?}", t.elapsed());
    let needed = std::mem::size_of::<WorldDb>() + list_cost::<TextureMatrix>(n);
    assert!(needed > 1_000_000_000, "{needed}");
    // Refused at the count (offset 4), so nothing was decoded or allocated for the records.
    assert_eq!(
        e,
        WorldError::OverBudget { needed, limit: MAX_DECODED_SIZE, at: 4, location: "texture matrices".into() }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "decoding the world database would take at least {needed} bytes of memory, over the 134217728-byte \
             (128 MiB) limit for a decoded world (texture matrices, offset 4)"
        )
    );
    // The same blob through parse_blob (envelope, inflation) ends the same way.
    assert_eq!(parse_blob(&Envelope::wrap(&db)), Err(e));

    // 64 MiB of empty meshes in the world group: 3.2 million records of 21 bytes, about 170 each in memory.
    let n = (MAX_WORLD_SIZE - 200) / 21;
    let e = WorldDb::parse(&zero_bomb(0, n, 0, 0)).unwrap_err();
    let needed = std::mem::size_of::<WorldDb>() + list_cost::<Mesh>(n);
    assert_eq!(
        e,
        WorldError::OverBudget { needed, limit: MAX_DECODED_SIZE, at: 44, location: "world group, mesh count".into() }
    );
}

#[test]
fn lists_spread_over_groups_are_refused_once_their_sum_passes_the_budget() {
    // 40 groups of 1000 empty meshes: each list is well under a 1 MiB budget, their sum is not.
    let db = zero_bomb(0, 0, 40, 1000);
    let mut all = super::parse::Budget::new(usize::MAX);
    super::parse::parse_charged(&db, &mut all).unwrap();
    let per_group = heap_cost_of_name(2) + list_cost::<Mesh>(1000);
    let fixed = std::mem::size_of::<WorldDb>() + list_cost::<GroupDefinition>(40);
    assert_eq!(
        all.used(),
        fixed + 10 * heap_cost_of_name(2) + 30 * heap_cost_of_name(3) + 40 * list_cost::<Mesh>(1000)
    );

    let budget = 1 << 20;
    let k = (budget - fixed) / per_group; // groups that fit
    let e = WorldDb::parse_with_budget(&db, budget).unwrap_err();
    let WorldError::OverBudget { needed, limit, at, location } = &e else { panic!("{e}") };
    assert_eq!((*limit, location.as_str()), (budget, format!("group definition #{k}, \"g{k}\", mesh count").as_str()));
    assert!(*needed > budget && *needed <= budget + per_group, "{e}");
    assert_eq!(&db[*at..*at + 4], &1000u32.to_be_bytes());

    // Exactly what a parse charges is enough; a byte less is not.
    assert!(WorldDb::parse_with_budget(&db, all.used()).is_ok());
    assert!(matches!(WorldDb::parse_with_budget(&db, all.used() - 1), Err(WorldError::OverBudget { .. })));
}

/// What a `String` of `len` bytes is charged.
fn heap_cost_of_name(len: usize) -> usize {
    super::parse::heap_cost(len)
}

#[test]
fn strings_and_inner_lists_are_charged_too() {
    // Texture matrices with 100-byte names: the list fits a budget that the names then exhaust.
    let mut w = WorldDb::parse(&zero_bomb(0, 0, 0, 0)).unwrap();
    w.texture_matrices =
        (0..100).map(|i| TextureMatrix { name: format!("{i:0>100}"), fixed: None, dynamic: None }).collect();
    let db = w.to_bytes();
    let base = std::mem::size_of::<WorldDb>() + list_cost::<TextureMatrix>(100);
    let name = heap_cost_of_name(100);
    let budget = base + 10 * name + name / 2;
    let e = WorldDb::parse_with_budget(&db, budget).unwrap_err();
    assert_eq!(
        e,
        WorldError::OverBudget {
            needed: base + 11 * name,
            limit: budget,
            at: 8 + 10 * 105,
            location: "texture matrix #10".into()
        }
    );

    // A mesh's vertices and a face's indices.
    let db = capture("02-custom-world-inner.bin");
    let mut all = super::parse::Budget::new(usize::MAX);
    let w = super::parse::parse_charged(&db, &mut all).unwrap();
    let m = &w.world_group.meshes[0];
    assert!(!m.vertices.is_empty() && !m.faces.is_empty());
    let e = WorldDb::parse_with_budget(&db, all.used() - 1).unwrap_err();
    assert!(matches!(e, WorldError::OverBudget { .. }), "{e}");
}

#[test]
fn real_worlds_decode_to_a_few_times_their_size() {
    for prefix in ["01-ctf-world", "02-custom-world"] {
        let db = capture(&format!("{prefix}-inner.bin"));
        let mut b = super::parse::Budget::new(usize::MAX);
        super::parse::parse_charged(&db, &mut b).unwrap();
        let ratio = b.used() as f64 / db.len() as f64;
        eprintln!("{prefix}: {} bytes decode to {} ({ratio:.2}x)", db.len(), b.used());
        assert!(ratio < 8.0, "{prefix}: {ratio}");
    }
}
