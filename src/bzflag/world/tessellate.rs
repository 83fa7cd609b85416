//! Arcs, cones, spheres and tetras turned into polygon meshes the way the 2.4 client does it
//! (`ArcObstacle::makeMesh` with its pie and ring variants, `ConeObstacle::makeMesh`, `SphereObstacle::makeMesh`,
//! `TetraBuilding::makeMesh`): the same vertices, the same faces and windings (outward normals), the same
//! validity rules (an invalid shape makes no mesh at all). Texture coordinates and normals are rendering data and
//! are not produced.
//!
//! `divisions` is capped ([`MAX_RING_DIVISIONS`], [`MAX_SPHERE_DIVISIONS`]) because it comes from the network:
//! a sphere makes 8·d² triangles.

use std::f32::consts::PI;

use glam::Vec3;

use super::types::{arc_state, sphere_state, Arc, Cone, MeshCheck, Sphere, Tetra};

const INSIDE: u8 = 0;
const OUTSIDE: u8 = 1;

/// Largest `divisions` used for arcs and cones (larger values are clamped).
pub const MAX_RING_DIVISIONS: i32 = 1024;
/// Largest `divisions` used for spheres (larger values are clamped).
pub const MAX_SPHERE_DIVISIONS: i32 = 128;

const MIN_SIZE: f32 = 1.0e-6;

/// A polygon mesh in world (or group) coordinates, before the obstacle's own transform.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// Vertices.
    pub vertices: Vec<Vec3>,
    /// Faces as vertex index lists (counter-clockwise seen from outside).
    pub faces: Vec<Vec<u32>>,
    /// The inside/outside check points the client uses to tell whether a point is in the solid.
    pub checks: Vec<MeshCheck>,
    /// Physics driver of every face (`-1`: none).
    pub phydrv: i32,
    /// Drive through, shoot through, ricochet.
    pub passable: (bool, bool, bool),
    /// `divisions` had to be clamped.
    pub clamped: bool,
}

fn clamp_divisions(d: i32, max: i32) -> (i32, bool) {
    if d > max {
        (max, true)
    } else {
        (d, false)
    }
}

/// The client's start angle and sweep: sweep clamped to ±360°, converted to radians, a negative sweep turned
/// round. `None` when there are too few divisions for the sweep.
fn sweep(rotation: f32, sweep_degrees: f32, divisions: i32) -> Option<(f32, f32, bool)> {
    let mut r = rotation;
    let mut a = sweep_degrees.clamp(-360.0, 360.0) * (PI / 180.0);
    if a < 0.0 {
        r += a;
        a = -a;
    }
    // `divisions <= (int)((a + minSize) / M_PI)`
    if divisions <= ((a + MIN_SIZE) / PI) as i32 {
        return None;
    }
    let is_circle = (PI - (a + PI) % (2.0 * PI)).abs() < MIN_SIZE;
    Some((r, a, is_circle))
}

/// Texture-size checks of the client (a zero texture size invalidates the shape).
fn texsize_ok(t: &[f32]) -> bool {
    t.iter().all(|v| v.abs() >= MIN_SIZE)
}

/// `ArcObstacle::makeMesh`.
pub fn arc(a: &Arc) -> Option<Shape> {
    let sz = a.size.abs();
    if sz.min_element() < MIN_SIZE || !texsize_ok(&a.texsize) || !(0.0..=1.0).contains(&a.ratio) {
        return None;
    }
    let (divisions, clamped) = clamp_divisions(a.divisions, MAX_RING_DIVISIONS);
    let (r, ang, is_circle) = sweep(a.angle, a.sweep_degrees, divisions)?;
    let (mut inrad, mut outrad) = (sz.x * (1.0 - a.ratio), sz.x);
    if inrad > outrad {
        std::mem::swap(&mut inrad, &mut outrad);
    }
    if outrad < MIN_SIZE || outrad - inrad < MIN_SIZE {
        return None;
    }
    let squish = sz.y / sz.x;
    let h = sz.z;
    let d = divisions as u32;
    let astep = ang / divisions as f32;
    let p = a.pos;
    let mut s = Shape {
        phydrv: a.phydrv,
        passable: (
            a.state & arc_state::DRIVE_THROUGH != 0,
            a.state & arc_state::SHOOT_THROUGH != 0,
            a.state & arc_state::RICOCHET != 0,
        ),
        clamped,
        ..Shape::default()
    };
    let steps = if is_circle { d } else { d + 1 };
    if inrad < MIN_SIZE {
        // Pie: one inside check point, two vertices per step, then the bottom and top centres.
        let mid = if is_circle {
            Vec3::new(p.x, p.y, 0.0)
        } else {
            let (sn, cs) = (r + 0.5 * ang).sin_cos();
            Vec3::new(p.x + cs * outrad * 0.5, p.y + sn * outrad * 0.5 * squish, 0.0)
        };
        s.checks.push(MeshCheck { kind: INSIDE, point: Vec3::new(mid.x, mid.y, p.z + 0.5 * a.size.z.abs()) });
        for i in 0..steps {
            let (sn, cs) = (r + astep * i as f32).sin_cos();
            let v = Vec3::new(p.x + cs * outrad, p.y + sn * outrad * squish, p.z);
            s.vertices.push(v);
            s.vertices.push(v + Vec3::new(0.0, 0.0, h));
        }
        let vlen = steps * 2;
        let (vbot, vtop) = (vlen, vlen + 1);
        s.vertices.push(p);
        s.vertices.push(p + Vec3::new(0.0, 0.0, h));
        for i in 0..d {
            let pv = |x: u32| (x + i * 2) % vlen;
            s.faces.push(vec![pv(0), pv(2), pv(3), pv(1)]); // outside
            s.faces.push(vec![vtop, pv(1), pv(3)]); // top
            s.faces.push(vec![vbot, pv(2), pv(0)]); // bottom
        }
        if !is_circle {
            s.faces.push(vec![vbot, 0, 1, vtop]);
            let e = d * 2;
            s.faces.push(vec![e, vbot, vtop, e + 1]);
        }
    } else {
        // Ring: six outside check points (below, above, east, west, north, south), then inner bottom, inner
        // top, outer bottom, outer top per step.
        let (below, above) = (Vec3::new(p.x, p.y, p.z - h), Vec3::new(p.x, p.y, p.z + 2.0 * h));
        let (first, second) = if p.z > 0.0 { (below, above) } else { (above, below) };
        let mz = p.z + 0.5 * h;
        for point in [
            first,
            second,
            Vec3::new(p.x + outrad * 2.0, p.y, mz),
            Vec3::new(p.x - outrad * 2.0, p.y, mz),
            Vec3::new(p.x, p.y + outrad * squish * 2.0, mz),
            Vec3::new(p.x, p.y - outrad * squish * 2.0, mz),
        ] {
            s.checks.push(MeshCheck { kind: OUTSIDE, point });
        }
        for i in 0..steps {
            let (sn, cs) = (r + astep * i as f32).sin_cos();
            for rad in [inrad, outrad] {
                let v = Vec3::new(p.x + cs * rad, p.y + squish * (sn * rad), p.z);
                s.vertices.push(v);
                s.vertices.push(v + Vec3::new(0.0, 0.0, h));
            }
        }
        let vlen = steps * 4;
        for i in 0..d {
            let rv = |x: u32| (x + i * 4) % vlen;
            s.faces.push(vec![rv(4), rv(0), rv(1), rv(5)]); // inside
            s.faces.push(vec![rv(2), rv(6), rv(7), rv(3)]); // outside
            s.faces.push(vec![rv(3), rv(7), rv(5), rv(1)]); // top
            s.faces.push(vec![rv(0), rv(4), rv(6), rv(2)]); // bottom
        }
        if !is_circle {
            s.faces.push(vec![0, 2, 3, 1]);
            let e = d * 4;
            s.faces.push(vec![e + 2, e, e + 1, e + 3]);
        }
    }
    Some(s)
}

/// `ConeObstacle::makeMesh`.
pub fn cone(c: &Cone) -> Option<Shape> {
    let sz = c.size.abs();
    if sz.min_element() < MIN_SIZE || !texsize_ok(&c.texsize) {
        return None;
    }
    let (divisions, clamped) = clamp_divisions(c.divisions, MAX_RING_DIVISIONS);
    let (r, ang, is_circle) = sweep(c.angle, c.sweep_degrees, divisions)?;
    let d = divisions as u32;
    let astep = ang / divisions as f32;
    let p = c.pos;
    let mut s = Shape {
        phydrv: c.phydrv,
        passable: (
            c.state & arc_state::DRIVE_THROUGH != 0,
            c.state & arc_state::SHOOT_THROUGH != 0,
            c.state & arc_state::RICOCHET != 0,
        ),
        clamped,
        ..Shape::default()
    };
    let check = if is_circle {
        Vec3::new(p.x, p.y, p.z + 0.5 * sz.z)
    } else {
        let (sn, cs) = (r + 0.5 * ang).sin_cos();
        Vec3::new(p.x + cs * sz.x * 0.25, p.y + sn * sz.y * 0.25, p.z + 0.5 * sz.z)
    };
    s.checks.push(MeshCheck { kind: INSIDE, point: check });
    let vlen = if is_circle { d } else { d + 1 };
    for i in 0..vlen {
        let (sn, cs) = (r + astep * i as f32).sin_cos();
        s.vertices.push(Vec3::new(p.x + cs * sz.x, p.y + sn * sz.y, p.z));
    }
    let (vbot, vtop) = (vlen, vlen + 1);
    s.vertices.push(p);
    s.vertices.push(p + Vec3::new(0.0, 0.0, sz.z));
    for i in 0..d {
        let v = |x: u32| (x + i) % vlen;
        s.faces.push(vec![vtop, v(0), v(1)]); // edge
        s.faces.push(vec![vbot, v(1), v(0)]); // bottom
    }
    if !is_circle {
        s.faces.push(vec![vbot, 0, vtop]);
        s.faces.push(vec![vlen - 1, vbot, vtop]);
    }
    Some(s)
}

/// `SphereObstacle::makeMesh` (full sphere or hemisphere with a bottom disc).
pub fn sphere(sp: &Sphere) -> Option<Shape> {
    let sz = sp.size.abs();
    let hemi = sp.state & sphere_state::HEMISPHERE != 0;
    // Texture sizes as the client adjusts them (a zero size invalidates the sphere).
    let mut tex = sp.texsize;
    if tex[0] < 0.0 {
        let circ = PI * ((3.0 * (sz.x + sz.y)) - ((sz.x + 3.0 * sz.y) * (sz.y + 3.0 * sz.x)).sqrt());
        tex[0] = -(circ / tex[0]).floor();
    }
    if tex[1] < 0.0 {
        tex[1] = -((2.0 * sz.z) / tex[1]);
    }
    if sp.divisions < 1 || tex[0] < MIN_SIZE || tex[1] < MIN_SIZE || sz.min_element() < MIN_SIZE {
        return None;
    }
    let (divisions, clamped) = clamp_divisions(sp.divisions, MAX_SPHERE_DIVISIONS);
    let d = divisions as u32;
    let p = sp.pos;
    let mut s = Shape {
        phydrv: sp.phydrv,
        passable: (
            sp.state & sphere_state::DRIVE_THROUGH != 0,
            sp.state & sphere_state::SHOOT_THROUGH != 0,
            sp.state & sphere_state::RICOCHET != 0,
        ),
        clamped,
        ..Shape::default()
    };
    // Layout: top pole, rings 0..d (ring i has 4(i+1) vertices; ring d-1 is the equator), then (full sphere)
    // the bottom pole and the mirrored rings 0..d-1.
    let check = if hemi { p + Vec3::new(0.0, 0.0, 0.5 * sp.size.z.abs()) } else { p };
    s.checks.push(MeshCheck { kind: INSIDE, point: check });
    let top_pole = 0u32;
    s.vertices.push(p + Vec3::new(0.0, 0.0, sz.z));
    let mut ring_start = Vec::with_capacity(d as usize);
    for i in 0..d {
        ring_start.push(s.vertices.len() as u32);
        let n = 4 * (i + 1);
        let v_angle = (PI / 2.0) * (d - i - 1) as f32 / d as f32;
        for j in 0..n {
            let h_angle = (2.0 * PI) * j as f32 / n as f32 + sp.angle;
            let unit = Vec3::new(h_angle.cos() * v_angle.cos(), h_angle.sin() * v_angle.cos(), v_angle.sin());
            s.vertices.push(p + sz * unit);
        }
    }
    let mut bottom_start = Vec::new();
    let bottom_pole = s.vertices.len() as u32;
    if !hemi {
        s.vertices.push(p - Vec3::new(0.0, 0.0, sz.z));
        for i in 0..d.saturating_sub(1) {
            bottom_start.push(s.vertices.len() as u32);
            for j in 0..4 * (i + 1) {
                let t = s.vertices[(ring_start[i as usize] + j) as usize];
                s.vertices.push(Vec3::new(t.x, t.y, 2.0 * p.z - t.z));
            }
        }
    }
    let ring = |i: u32, j: u32| ring_start[i as usize] + j % (4 * (i + 1));
    let bring = |i: u32, j: u32| {
        if i + 1 == d {
            ring(i, j) // the equator is shared
        } else {
            bottom_start[i as usize] + j % (4 * (i + 1))
        }
    };
    for q in 0..4 {
        for i in 0..d {
            for j in 0..=i {
                let a = if i == 0 { top_pole } else { ring(i - 1, q * i + j) };
                let b = ring(i, q * (i + 1) + j);
                let c = ring(i, q * (i + 1) + j + 1);
                s.faces.push(vec![a, b, c]);
                if i + 1 != d {
                    s.faces.push(vec![b, ring(i + 1, q * (i + 2) + j + 1), c]);
                }
                if !hemi {
                    let a = if i == 0 { bottom_pole } else { bring(i - 1, q * i + j) };
                    let b = bring(i, q * (i + 1) + j);
                    let c = bring(i, q * (i + 1) + j + 1);
                    s.faces.push(vec![a, c, b]);
                    if i + 1 != d {
                        s.faces.push(vec![b, c, bring(i + 1, q * (i + 2) + j + 1)]);
                    }
                }
            }
        }
    }
    if hemi {
        // The bottom disc: the equator in reverse order.
        let n = 4 * d;
        s.faces.push((0..n).map(|i| ring(d - 1, n - i - 1)).collect());
    }
    Some(s)
}

/// `TetraBuilding::makeMesh` (vertices 1 and 2 swapped first if the tetra is inside out).
pub fn tetra(t: &Tetra) -> Shape {
    let mut v = t.vertices;
    let (e0, e1, e2) = (v[1] - v[0], v[2] - v[0], v[3] - v[0]);
    if e0.cross(e1).dot(e2) < 0.0 {
        v.swap(1, 2);
    }
    Shape {
        vertices: v.to_vec(),
        faces: vec![vec![0, 2, 1], vec![0, 1, 3], vec![1, 2, 3], vec![2, 0, 3]],
        checks: vec![MeshCheck { kind: INSIDE, point: v.iter().copied().sum::<Vec3>() * 0.25 }],
        phydrv: -1,
        passable: (
            t.state & super::types::tetra_state::DRIVE_THROUGH != 0,
            t.state & super::types::tetra_state::SHOOT_THROUGH != 0,
            t.state & super::types::tetra_state::RICOCHET != 0,
        ),
        clamped: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bzflag::world::types::MeshTransform;

    fn arc_rec(size: Vec3, sweep: f32, ratio: f32, divisions: i32) -> Arc {
        Arc {
            transform: MeshTransform::default(),
            pos: Vec3::ZERO,
            size,
            angle: 0.0,
            sweep_degrees: sweep,
            ratio,
            divisions,
            phydrv: -1,
            texsize: [-8.0, -8.0, 8.0, 8.0],
            materials: [-1; 6],
            state: 0,
        }
    }

    /// Every face's Newell normal points away from `inside`.
    fn outward(s: &Shape, inside: Vec3) {
        for f in &s.faces {
            let mut n = Vec3::ZERO;
            let mut c = Vec3::ZERO;
            for (k, &i) in f.iter().enumerate() {
                let a = s.vertices[i as usize];
                let b = s.vertices[f[(k + 1) % f.len()] as usize];
                n += Vec3::new((a.y - b.y) * (a.z + b.z), (a.z - b.z) * (a.x + b.x), (a.x - b.x) * (a.y + b.y));
                c += a;
            }
            c /= f.len() as f32;
            assert!(n.dot(c - inside) > 0.0, "face {f:?} faces inwards");
        }
    }

    #[test]
    fn face_counts_follow_the_client() {
        let s = arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 360.0, 1.0, 8)).unwrap();
        assert_eq!((s.vertices.len(), s.faces.len()), (8 * 2 + 2, 8 * 3)); // pie, circle
        outward(&s, Vec3::new(0.0, 0.0, 2.5));
        let s = arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 270.0, 0.5, 8)).unwrap();
        assert_eq!((s.vertices.len(), s.faces.len()), (9 * 4, 8 * 4 + 2)); // ring with ends
        let s = arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 90.0, 1.0, 4)).unwrap();
        assert_eq!(s.faces.len(), 4 * 3 + 2);
        outward(&s, Vec3::new(3.0, 3.0, 2.5));
        // Too few divisions for the sweep, bad ratio, zero size: no mesh.
        assert!(arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 360.0, 1.0, 2)).is_none());
        assert!(arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 360.0, 1.5, 8)).is_none());
        assert!(arc(&arc_rec(Vec3::new(10.0, 0.0, 5.0), 360.0, 1.0, 8)).is_none());
        let s = arc(&arc_rec(Vec3::new(10.0, 10.0, 5.0), 360.0, 1.0, i32::MAX)).unwrap();
        assert!(s.clamped && s.faces.len() == MAX_RING_DIVISIONS as usize * 3);
    }

    #[test]
    fn spheres_are_closed_and_outward() {
        let mut sp = Sphere {
            transform: MeshTransform::default(),
            pos: Vec3::new(1.0, 2.0, 10.0),
            size: Vec3::splat(4.0),
            angle: 0.3,
            divisions: 4,
            phydrv: -1,
            texsize: [-4.0, -4.0],
            materials: [-1; 2],
            state: 0,
        };
        let s = sphere(&sp).unwrap();
        assert_eq!(s.faces.len(), 8 * 16);
        outward(&s, sp.pos);
        // Each edge is shared by exactly two faces.
        let mut edges = std::collections::HashMap::new();
        for f in &s.faces {
            for k in 0..f.len() {
                let (a, b) = (f[k], f[(k + 1) % f.len()]);
                *edges.entry((a.min(b), a.max(b))).or_insert(0) += 1;
            }
        }
        assert!(edges.values().all(|&n| n == 2));
        sp.state = sphere_state::HEMISPHERE;
        let s = sphere(&sp).unwrap();
        assert_eq!(s.faces.len(), 4 * 16 + 1);
        outward(&s, sp.pos + Vec3::new(0.0, 0.0, 1.0));
        sp.divisions = 0;
        assert!(sphere(&sp).is_none());
    }

    #[test]
    fn cones_and_tetras_are_outward() {
        let c = Cone {
            transform: MeshTransform::default(),
            pos: Vec3::ZERO,
            size: Vec3::new(6.0, 6.0, 10.0),
            angle: 0.0,
            sweep_degrees: 360.0,
            divisions: 12,
            phydrv: 1,
            texsize: [-8.0, -8.0],
            materials: [-1; 4],
            state: 0,
        };
        let s = cone(&c).unwrap();
        assert_eq!(s.faces.len(), 24);
        outward(&s, Vec3::new(0.0, 0.0, 2.0));
        let t = Tetra {
            state: 0,
            transform: MeshTransform::default(),
            vertices: [Vec3::ZERO, Vec3::Y, Vec3::X, Vec3::Z], // inside out: 1 and 2 get swapped
            normals: [None; 4],
            texcoords: [None; 4],
            materials: [-1; 4],
        };
        outward(&tetra(&t), Vec3::splat(0.2));
    }
}
