//! Encoder of the world database, the inverse of [`WorldDb::parse`] (laid out as bzfs' `pack` functions do).
//!
//! Bits that announce optional data (face normals/texcoords, instance overrides, texture matrix parts) are
//! derived from the data present, so the output parses back. One exception, as on the real wire: a mesh with
//! [`mesh_state::DRAW_INFO`] set, no `draw_info` block and two or more texture coordinates makes the reader take
//! the first float of the last coordinate pair as a draw-info length (set a block, or clear the bit). Counts above `u32`/`i32`/`u16`/`u8` range
//! are not representable on the wire; such lists are written truncated to the largest count the field holds.

use glam::Vec3;

use super::envelope::Envelope;
use super::types::*;
use crate::wire::Writer;

fn v3(w: &mut Writer, v: Vec3) {
    w.vec3(v.to_array());
}

fn floats(w: &mut Writer, v: &[f32]) {
    for &x in v {
        w.f32(x);
    }
}

fn ints(w: &mut Writer, v: &[i32]) {
    for &x in v {
        w.i32(x);
    }
}

fn string(w: &mut Writer, s: &str) {
    let b = s.as_bytes();
    let b = b.get(..b.len().min(u32::MAX as usize)).unwrap_or(b);
    w.sstr(b);
}

/// Two bytes, one per Latin-1 character (others become `?`), NUL-padded.
fn abbv(w: &mut Writer, s: &str) {
    let mut b = s.chars().map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?')).chain(std::iter::repeat(0));
    w.u8(b.next().unwrap_or(0)).u8(b.next().unwrap_or(0));
}

/// Writes a `u32` count and returns how many elements fit it.
fn count_u32(w: &mut Writer, n: usize) -> usize {
    let n = n.min(u32::MAX as usize);
    w.u32(n as u32);
    n
}

fn count_i32(w: &mut Writer, n: usize) -> usize {
    let n = n.min(i32::MAX as usize);
    w.i32(n as i32);
    n
}

impl WorldDb {
    /// Encodes the database (the payload that the envelope compresses).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        let n = count_u32(&mut w, self.dynamic_colors.len());
        for c in self.dynamic_colors.iter().take(n) {
            dynamic_color(&mut w, c);
        }
        let n = count_u32(&mut w, self.texture_matrices.len());
        for t in self.texture_matrices.iter().take(n) {
            string(&mut w, &t.name);
            w.u8(u8::from(t.fixed.is_some()) | (u8::from(t.dynamic.is_some()) << 1));
            if let Some(v) = &t.fixed {
                floats(&mut w, v);
            }
            if let Some(v) = &t.dynamic {
                floats(&mut w, v);
            }
        }
        let n = count_u32(&mut w, self.materials.len());
        for m in self.materials.iter().take(n) {
            material(&mut w, m);
        }
        let n = count_u32(&mut w, self.physics_drivers.len());
        for p in self.physics_drivers.iter().take(n) {
            string(&mut w, &p.name);
            v3(&mut w, p.linear);
            w.f32(p.angular_velocity);
            floats(&mut w, &p.angular_pos);
            w.f32(p.radial_velocity);
            floats(&mut w, &p.radial_pos);
            w.f32(p.slide_time);
            string(&mut w, &p.death_message);
        }
        let n = count_u32(&mut w, self.transforms.len());
        for t in self.transforms.iter().take(n) {
            transform(&mut w, t);
        }
        group_definition(&mut w, &self.world_group);
        let n = count_u32(&mut w, self.group_defs.len());
        for g in self.group_defs.iter().take(n) {
            group_definition(&mut w, g);
        }
        let n = count_u32(&mut w, self.links.len());
        for l in self.links.iter().take(n) {
            string(&mut w, &l.from);
            string(&mut w, &l.to);
        }
        w.f32(self.water_level);
        if self.water_level >= 0.0 {
            w.i32(self.water_material.unwrap_or(-1));
        }
        let n = count_u32(&mut w, self.weapons.len());
        for x in self.weapons.iter().take(n) {
            abbv(&mut w, &x.flag);
            v3(&mut w, x.pos);
            w.f32(x.direction).f32(x.initial_delay);
            let n = x.delays.len().min(u16::MAX as usize);
            w.u16(n as u16);
            floats(&mut w, x.delays.get(..n).unwrap_or(&[]));
        }
        let n = count_u32(&mut w, self.zones.len());
        for z in self.zones.iter().take(n) {
            v3(&mut w, z.pos);
            v3(&mut w, z.size);
            w.f32(z.rotation);
            let nf = z.flags.len().min(u16::MAX as usize);
            let nt = z.teams.len().min(u16::MAX as usize);
            let ns = z.safety.len().min(u16::MAX as usize);
            w.u16(nf as u16).u16(nt as u16).u16(ns as u16);
            for fl in z.flags.iter().take(nf) {
                abbv(&mut w, fl);
            }
            for &t in z.teams.iter().take(nt) {
                w.u16(t);
            }
            for &t in z.safety.iter().take(ns) {
                w.u16(t);
            }
        }
        w.into_vec()
    }

    /// Encodes and wraps the database in a compressed envelope, ready to be served as `MsgGetWorld` chunks.
    pub fn to_blob(&self) -> Vec<u8> {
        Envelope::wrap(&self.to_bytes())
    }
}

fn dynamic_color(w: &mut Writer, c: &DynamicColor) {
    string(w, &c.name);
    for ch in &c.channels {
        w.f32(ch.min).f32(ch.max);
        for list in [&ch.sinusoids, &ch.clamp_ups, &ch.clamp_downs] {
            let n = count_u32(w, list.len());
            for v in list.iter().take(n) {
                floats(w, v);
            }
        }
        match &ch.sequence {
            Some(s) if !s.values.is_empty() => {
                let n = count_u32(w, s.values.len());
                w.f32(s.period).f32(s.offset);
                w.bytes(s.values.get(..n).unwrap_or(&[]));
            }
            _ => {
                w.u32(0);
            }
        }
    }
}

fn material(w: &mut Writer, m: &Material) {
    string(w, &m.name);
    w.u8(m.mode).i32(m.dynamic_color);
    floats(w, &m.ambient);
    floats(w, &m.diffuse);
    floats(w, &m.specular);
    floats(w, &m.emission);
    w.f32(m.shininess).f32(m.alpha_threshold);
    let n = m.textures.len().min(u8::MAX as usize);
    w.u8(n as u8);
    for t in m.textures.iter().take(n) {
        string(w, &t.name);
        w.i32(t.matrix).i32(t.combine_mode).u8(t.bits);
    }
    let n = m.shaders.len().min(u8::MAX as usize);
    w.u8(n as u8);
    for s in m.shaders.iter().take(n) {
        string(w, s);
    }
}

fn transform(w: &mut Writer, t: &MeshTransform) {
    string(w, &t.name);
    let n = count_u32(w, t.ops.len());
    for op in t.ops.iter().take(n) {
        match *op {
            TransformOp::Shift(v) => {
                w.u8(0);
                v3(w, v);
            }
            TransformOp::Scale(v) => {
                w.u8(1);
                v3(w, v);
            }
            TransformOp::Shear(v) => {
                w.u8(2);
                v3(w, v);
            }
            TransformOp::Spin { axis, angle } => {
                w.u8(3);
                v3(w, axis);
                w.f32(angle);
            }
            TransformOp::Index(i) => {
                w.u8(4).i32(i);
            }
        }
    }
}

fn group_definition(w: &mut Writer, g: &GroupDefinition) {
    string(w, &g.name);
    let n = count_u32(w, g.walls.len());
    for o in g.walls.iter().take(n) {
        v3(w, o.pos);
        w.f32(o.angle).f32(o.breadth).f32(o.height).u8(o.state);
    }
    let n = count_u32(w, g.boxes.len());
    for o in g.boxes.iter().take(n) {
        v3(w, o.pos);
        w.f32(o.angle);
        v3(w, o.size);
        w.u8(o.state);
    }
    let n = count_u32(w, g.pyramids.len());
    for o in g.pyramids.iter().take(n) {
        v3(w, o.pos);
        w.f32(o.angle);
        v3(w, o.size);
        w.u8(o.state);
    }
    let n = count_u32(w, g.bases.len());
    for o in g.bases.iter().take(n) {
        w.u16(o.team);
        v3(w, o.pos);
        w.f32(o.angle);
        v3(w, o.size);
        w.u8(o.state);
    }
    let n = count_u32(w, g.teleporters.len());
    for o in g.teleporters.iter().take(n) {
        string(w, &o.name);
        v3(w, o.pos);
        w.f32(o.angle);
        v3(w, o.size);
        w.f32(o.border).u8(u8::from(o.horizontal)).u8(o.state);
    }
    let n = count_u32(w, g.meshes.len());
    for o in g.meshes.iter().take(n) {
        mesh(w, o);
    }
    let n = count_u32(w, g.arcs.len());
    for o in g.arcs.iter().take(n) {
        transform(w, &o.transform);
        v3(w, o.pos);
        v3(w, o.size);
        w.f32(o.angle).f32(o.sweep_degrees).f32(o.ratio).i32(o.divisions).i32(o.phydrv);
        floats(w, &o.texsize);
        ints(w, &o.materials);
        w.u8(o.state);
    }
    let n = count_u32(w, g.cones.len());
    for o in g.cones.iter().take(n) {
        transform(w, &o.transform);
        v3(w, o.pos);
        v3(w, o.size);
        w.f32(o.angle).f32(o.sweep_degrees).i32(o.divisions).i32(o.phydrv);
        floats(w, &o.texsize);
        ints(w, &o.materials);
        w.u8(o.state);
    }
    let n = count_u32(w, g.spheres.len());
    for o in g.spheres.iter().take(n) {
        transform(w, &o.transform);
        v3(w, o.pos);
        v3(w, o.size);
        w.f32(o.angle).i32(o.divisions).i32(o.phydrv);
        floats(w, &o.texsize);
        ints(w, &o.materials);
        w.u8(o.state);
    }
    let n = count_u32(w, g.tetras.len());
    for o in g.tetras.iter().take(n) {
        tetra(w, o);
    }
    let n = count_u32(w, g.instances.len());
    for o in g.instances.iter().take(n) {
        group_instance(w, o);
    }
}

fn mesh(w: &mut Writer, m: &Mesh) {
    let n = count_i32(w, m.checks.len());
    for c in m.checks.iter().take(n) {
        w.u8(c.kind);
        v3(w, c.point);
    }
    let draw_info = m.state & mesh_state::DRAW_INFO != 0;
    let fake = if draw_info { m.fake_vertex } else { None };
    let n = count_i32(w, m.vertices.len() + usize::from(fake.is_some()));
    for &v in m.vertices.iter().chain(fake.iter()).take(n) {
        v3(w, v);
    }
    let n = count_i32(w, m.normals.len());
    for &v in m.normals.iter().take(n) {
        v3(w, v);
    }
    // With a draw-info block: real texcoords, the block padded to 8 bytes, then (i32 rewind length, i32 0) as one
    // more fake pair; the count covers all of it.
    let block = if draw_info { m.draw_info.as_deref() } else { None };
    let padded = block.map(|b| b.len().div_ceil(8) * 8);
    let extra = padded.map_or(0, |p| p / 8 + 1);
    let n = count_i32(w, m.texcoords.len() + extra);
    for t in m.texcoords.iter().take(n.saturating_sub(extra)) {
        floats(w, t);
    }
    if let (Some(b), Some(p)) = (block, padded) {
        w.bytes(b);
        for _ in b.len()..p {
            w.u8(0);
        }
        w.i32(i32::try_from(p + 8).unwrap_or(i32::MAX)).i32(0);
    }
    let n = count_i32(w, m.faces.len());
    for face in m.faces.iter().take(n) {
        let state = (face.state & !(face_state::HAS_NORMALS | face_state::HAS_TEXCOORDS))
            | if face.normals.is_some() { face_state::HAS_NORMALS } else { 0 }
            | if face.texcoords.is_some() { face_state::HAS_TEXCOORDS } else { 0 };
        w.u8(state);
        let k = count_i32(w, face.vertices.len());
        for list in [Some(&face.vertices), face.normals.as_ref(), face.texcoords.as_ref()].into_iter().flatten() {
            // Every index list has exactly k entries (missing ones written as 0).
            for i in 0..k {
                w.i32(list.get(i).map_or(0, |&x| x.min(i32::MAX as u32) as i32));
            }
        }
        w.i32(face.material).i32(face.phydrv);
    }
    w.u8(m.state);
}

fn tetra(w: &mut Writer, t: &Tetra) {
    w.u8(t.state);
    transform(w, &t.transform);
    for &v in &t.vertices {
        v3(w, v);
    }
    let mask = t.normals.iter().enumerate().fold(0u8, |m, (i, n)| m | (u8::from(n.is_some()) << i));
    w.u8(mask);
    for n in t.normals.iter().flatten() {
        for &v in n {
            v3(w, v);
        }
    }
    let mask = t.texcoords.iter().enumerate().fold(0u8, |m, (i, n)| m | (u8::from(n.is_some()) << i));
    w.u8(mask);
    for tc in t.texcoords.iter().flatten() {
        for uv in tc {
            floats(w, uv);
        }
    }
    ints(w, &t.materials);
}

fn group_instance(w: &mut Writer, g: &GroupInstance) {
    string(w, &g.group_def);
    if g.material_map.is_empty() {
        string(w, &g.name);
    } else {
        // The material map rides in the name string after a NUL (bzfs' "hack to stuff in material map data").
        let mut raw = Writer::new();
        raw.bytes(g.name.as_bytes()).u8(0);
        let n = count_i32(&mut raw, g.material_map.len());
        for &(from, to) in g.material_map.iter().take(n) {
            raw.i32(from).i32(to);
        }
        w.sstr(raw.as_slice());
    }
    transform(w, &g.transform);
    let bits = (g.bits & !instance_bits::MODIFY_MASK)
        | if g.team.is_some() { instance_bits::MODIFY_TEAM } else { 0 }
        | if g.tint.is_some() { instance_bits::MODIFY_COLOR } else { 0 }
        | if g.phydrv.is_some() { instance_bits::MODIFY_PHYDRV } else { 0 }
        | if g.material.is_some() { instance_bits::MODIFY_MATERIAL } else { 0 };
    w.u8(bits);
    if let Some(t) = g.team {
        w.u16(t);
    }
    if let Some(t) = &g.tint {
        floats(w, t);
    }
    if let Some(p) = g.phydrv {
        w.i32(p);
    }
    if let Some(m) = g.material {
        w.i32(m);
    }
}
