//! The questions a bot asks the world, answered through the BVH: the first thing a segment meets, line of
//! sight, whether a tank-sized box collides, the ground under a point, the base a point is on, and where a
//! teleporter sends a point and direction.

use glam::Vec3;

use super::geometry::{face_overlaps_obb, face_ray, Obb};
use super::model::{BaseModel, ObstacleId, PrimKind, TeleporterModel, WorldModel};

/// Which surfaces a query ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mask {
    /// Shots: shoot-through surfaces are ignored.
    Shots,
    /// Tanks: drive-through surfaces are ignored.
    Tanks,
    /// Nothing is ignored.
    All,
}

impl Mask {
    #[inline]
    fn skips(self, pass: u8) -> bool {
        match self {
            Mask::Shots => pass & 2 != 0,
            Mask::Tanks => pass & 1 != 0,
            Mask::All => false,
        }
    }
}

/// The teleporter face a segment enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldEntry {
    /// Index into [`WorldModel::teleporters`].
    pub teleporter: u32,
    /// Face number (`2·teleporter` front, `+1` back), as used by links and `MsgTeleport`.
    pub face: u32,
}

/// The first thing a segment meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Parameter along the segment (0 at the start, 1 at the end).
    pub t: f32,
    /// The point.
    pub point: Vec3,
    /// Surface normal there, facing the segment's start (for a field: the normal of the face entered).
    pub normal: Vec3,
    /// The obstacle hit (for a field: the teleporter).
    pub obstacle: ObstacleId,
    /// Mesh face index ([`WorldModel::faces`]) when a face was hit.
    pub face: Option<u32>,
    /// Set when the segment enters a teleporter field here (then nothing solid is in the way before it).
    pub teleport: Option<FieldEntry>,
    /// The segment starts inside this solid.
    pub inside: bool,
    /// Shots ricochet off this surface (its own ricochet bit; the `+r` server option and the R flag are the
    /// caller's business).
    pub ricochet: bool,
    /// An outer wall was hit above its top (shots that ricochet pass there; see §9.5).
    pub above_wall: bool,
}

/// What is under a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ground {
    /// Height of the supporting surface (0: the ground).
    pub height: f32,
    /// The obstacle supplying it (`None`: the ground).
    pub obstacle: Option<ObstacleId>,
    /// The surface normal (+z on flat roofs and the ground).
    pub normal: Vec3,
    /// Physics driver of that surface.
    pub phydrv: Option<u32>,
}

/// A tank as a box: bottom centre, heading, half-length, half-width and height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TankBox {
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Heading, radians.
    pub angle: f32,
    /// Half-length (default 3 = `_tankLength / 2`).
    pub half_length: f32,
    /// Half-width (default 1.4 = `_tankWidth / 2`).
    pub half_width: f32,
    /// Height (default 2.05 = `_tankHeight`).
    pub height: f32,
}

impl TankBox {
    /// A default-sized tank (6 × 2.8 × 2.05) at `pos` heading `angle`.
    pub fn new(pos: Vec3, angle: f32) -> TankBox {
        TankBox { pos, angle, half_length: 3.0, half_width: 1.4, height: 2.05 }
    }

    fn obb(&self) -> Obb {
        Obb::upright(self.pos, self.angle, self.half_length, self.half_width, self.height)
    }
}

impl WorldModel {
    /// The first surface (or teleporter field) the segment from `a` to `b` meets; surfaces `mask` ignores
    /// are skipped. Mesh faces are one-sided (met only from the front, like shots in the client); outer walls
    /// are infinite planes met from inside the world whatever the height, with [`Hit::above_wall`] set above
    /// their top.
    pub fn segment(&self, a: Vec3, b: Vec3, mask: Mask) -> Option<Hit> {
        self.segment_impl(a, b, mask, true)
    }

    /// The first teleporter field the segment from `a` to `b` enters, ignoring everything solid (the path
    /// of a shot that passes through obstacles).
    pub fn segment_fields(&self, a: Vec3, b: Vec3) -> Option<Hit> {
        self.segment_impl(a, b, Mask::All, false)
    }

    fn segment_impl(&self, a: Vec3, b: Vec3, mask: Mask, solids: bool) -> Option<Hit> {
        let d = b - a;
        let d_len = d.length();
        if !d_len.is_finite() || d_len == 0.0 {
            return None;
        }
        let mut best: Option<Hit> = None;
        let mut tmax = 1.0f32;
        // Outer walls: linear, like the client.
        for w in self.walls.iter().filter(|_| solids) {
            let dist = w.plane.distance(a);
            let denom = w.plane.normal.dot(d);
            if dist >= 0.0 && denom < 0.0 {
                let t = -dist / denom;
                if t <= tmax {
                    let point = a + d * t;
                    tmax = t;
                    best = Some(Hit {
                        t,
                        point,
                        normal: w.plane.normal,
                        obstacle: w.obstacle,
                        face: None,
                        teleport: None,
                        inside: false,
                        ricochet: w.ricochet,
                        above_wall: point.z > w.pos.z + w.height,
                    });
                }
            }
        }
        self.bvh.ray(a, d, tmax, |pi, tbest| {
            let prim = self.prims.get(pi as usize)?;
            if mask.skips(prim.pass) || (!solids && prim.kind != PrimKind::Field) {
                return None;
            }
            match prim.kind {
                PrimKind::Solid => {
                    let s = self.solids.get(prim.index as usize)?;
                    let h = s.shape.ray(a, d, tbest)?;
                    best = Some(Hit {
                        t: h.t,
                        point: a + d * h.t,
                        normal: h.normal,
                        obstacle: s.obstacle,
                        face: None,
                        teleport: None,
                        inside: h.inside,
                        ricochet: s.passable.ricochet,
                        above_wall: false,
                    });
                    Some(h.t)
                }
                PrimKind::Face => {
                    let f = self.faces.get(prim.index as usize)?;
                    let t = face_ray(&f.plane, self.face_edges(f), a, d, d_len, tbest)?;
                    best = Some(Hit {
                        t,
                        point: a + d * t,
                        normal: f.plane.normal,
                        obstacle: f.obstacle,
                        face: Some(prim.index),
                        teleport: None,
                        inside: false,
                        ricochet: f.passable.ricochet,
                        above_wall: false,
                    });
                    Some(t)
                }
                PrimKind::Body => None,
                PrimKind::Field => {
                    let tp = self.teleporters.get(prim.index as usize)?;
                    let h = tp.field.ray(a, d, tbest)?;
                    if h.inside {
                        return None;
                    }
                    let point = a + d * h.t;
                    let face = tp.face_at(point);
                    best = Some(Hit {
                        t: h.t,
                        point,
                        normal: h.normal,
                        obstacle: tp.obstacle,
                        face: None,
                        teleport: Some(FieldEntry { teleporter: prim.index, face: prim.index * 2 + face }),
                        inside: false,
                        ricochet: false,
                        above_wall: false,
                    });
                    Some(h.t)
                }
            }
        });
        best
    }

    /// True when a shot from `a` would reach `b`: nothing that stops shots is in the way and no teleporter
    /// field takes it elsewhere.
    pub fn line_of_sight(&self, a: Vec3, b: Vec3) -> bool {
        self.segment(a, b, Mask::Shots).is_none()
    }

    /// Whether a tank box collides with something it cannot drive through; the first obstacle found. Outer
    /// walls count when a corner is behind them (the client's test); touching a surface does not count.
    pub fn tank_collides(&self, tank: &TankBox) -> Option<ObstacleId> {
        let mut found = None;
        self.tank_visit(tank, |id| {
            found = Some(id);
            true
        });
        found
    }

    /// Every obstacle the tank box collides with (each once, in no particular order), into `out` (cleared
    /// first).
    pub fn tank_collisions(&self, tank: &TankBox, out: &mut Vec<ObstacleId>) {
        out.clear();
        self.tank_visit(tank, |id| {
            if !out.contains(&id) {
                out.push(id);
            }
            false
        });
    }

    fn tank_visit(&self, tank: &TankBox, mut hit: impl FnMut(ObstacleId) -> bool) {
        let obb = tank.obb();
        let corners = obb.corners();
        for w in &self.walls {
            if corners.iter().any(|c| w.plane.distance(*c) < 0.0) && hit(w.obstacle) {
                return;
            }
        }
        let bounds = obb.aabb();
        self.bvh.overlap(&bounds, |pi| {
            let Some(prim) = self.prims.get(pi as usize) else { return false };
            if prim.pass & 1 != 0 {
                return false;
            }
            match prim.kind {
                PrimKind::Solid => match self.solids.get(prim.index as usize) {
                    Some(s) if s.shape.overlaps_obb(&obb) => hit(s.obstacle),
                    _ => false,
                },
                PrimKind::Face => match self.faces.get(prim.index as usize) {
                    Some(f)
                        if f.bounds.overlaps(&bounds) && face_overlaps_obb(self.face_vertices(f), &f.plane, &obb) =>
                    {
                        hit(f.obstacle)
                    }
                    _ => false,
                },
                PrimKind::Body => {
                    let mid = tank.pos + Vec3::new(0.0, 0.0, 0.5 * tank.height);
                    let id = ObstacleId(prim.index);
                    self.mesh_contains(id, mid) && hit(id)
                }
                PrimKind::Field => false,
            }
        });
    }

    /// `MeshObstacle::containsPoint`: whether `p` is inside a mesh, judged with the mesh's check points (an
    /// inside point that `p` sees without crossing a face makes it inside; an outside point from which a face
    /// hides `p`, for every outside point, makes it inside). Meshes without check points contain nothing.
    pub fn mesh_contains(&self, id: ObstacleId, p: Vec3) -> bool {
        let Some(o) = self.obstacle(id) else { return false };
        let faces = self.obstacle_faces(id);
        let blocked = |from: Vec3, to: Vec3| {
            let d = to - from;
            let len = d.length();
            faces.iter().any(|f| face_ray(&f.plane, self.face_edges(f), from, d, len, 1.0).is_some_and(|t| t > 0.0))
        };
        let mut outsides = false;
        for c in &o.checks {
            match c.kind {
                0 if !blocked(p, c.point) => return true,
                1 => {
                    outsides = true;
                    if !blocked(c.point, p) {
                        return false;
                    }
                }
                _ => {}
            }
        }
        outsides
    }

    /// The surface a tank at `p` would stand on: the highest roof, slope or mesh face at or below `p` (not
    /// drive-through), else the ground at 0.
    pub fn ground(&self, p: Vec3) -> Ground {
        let mut g = Ground { height: 0.0, obstacle: None, normal: Vec3::Z, phydrv: None };
        if p.z <= 0.0 || !p.is_finite() {
            return g;
        }
        let a = p + Vec3::new(0.0, 0.0, 1.0e-3);
        let d = Vec3::new(0.0, 0.0, -a.z);
        let d_len = a.z;
        self.bvh.ray(a, d, 1.0, |pi, tbest| {
            let prim = self.prims.get(pi as usize)?;
            if prim.pass & 1 != 0 {
                return None;
            }
            match prim.kind {
                PrimKind::Solid => {
                    let s = self.solids.get(prim.index as usize)?;
                    let h = s.shape.ray(a, d, tbest)?;
                    if h.inside || h.normal.z <= 0.0 {
                        return None;
                    }
                    g = Ground { height: a.z + d.z * h.t, obstacle: Some(s.obstacle), normal: h.normal, phydrv: None };
                    Some(h.t)
                }
                PrimKind::Face => {
                    let f = self.faces.get(prim.index as usize)?;
                    let t = face_ray(&f.plane, self.face_edges(f), a, d, d_len, tbest)?;
                    g = Ground {
                        height: a.z + d.z * t,
                        obstacle: Some(f.obstacle),
                        normal: f.plane.normal,
                        phydrv: f.phydrv,
                    };
                    Some(t)
                }
                PrimKind::Field | PrimKind::Body => None,
            }
        });
        g
    }

    /// The team base a point is on (`World::whoseBase`): inside its rectangle and within 0.1 of its top.
    pub fn base_at(&self, p: Vec3) -> Option<&BaseModel> {
        self.bases.iter().find(|b| {
            let (s, c) = b.angle.sin_cos();
            let (dx, dy) = (p.x - b.pos.x, p.y - b.pos.y);
            let (rx, ry) = (c * dx + s * dy, -s * dx + c * dy);
            rx.abs() < b.size.x && ry.abs() < b.size.y && (p.z - (b.pos.z + b.size.z)).abs() < 0.1
        })
    }

    /// The bases of one team.
    pub fn bases_of(&self, team: u16) -> impl Iterator<Item = &BaseModel> {
        self.bases.iter().filter(move |b| b.team == team)
    }

    /// The destination face of a shot entering `face`, with the client's deterministic choice (`seed` = shot
    /// id + segment number; see [`super::LinkTable::shot_target`]).
    pub fn shot_target(&self, face: u32, seed: u32) -> Option<u32> {
        self.links.shot_target(face, seed)
    }

    /// `Teleporter::getPointWRT`: where a point and direction entering face `from` come out of face `to`, and
    /// by how much a heading turns. The point keeps its offset across the face (scaled by the ratio of the two
    /// fields' sizes) and is put on the exit face's plane.
    pub fn teleport(&self, from: u32, to: u32, p: Vec3, d: Vec3) -> Option<(Vec3, Vec3, f32)> {
        let t1 = self.teleporters.get((from / 2) as usize)?;
        let t2 = self.teleporters.get((to / 2) as usize)?;
        Some(teleport_between(t1, from % 2, t2, to % 2, p, d))
    }

    /// True when a point is under water.
    pub fn under_water(&self, p: Vec3) -> bool {
        self.water_level.is_some_and(|w| p.z < w)
    }
}

fn rot_z(v: Vec3, a: f32) -> Vec3 {
    let (s, c) = a.sin_cos();
    Vec3::new(c * v.x - s * v.y, s * v.x + c * v.y, v.z)
}

fn teleport_between(
    t1: &TeleporterModel,
    face1: u32,
    t2: &TeleporterModel,
    face2: u32,
    p: Vec3,
    d: Vec3,
) -> (Vec3, Vec3, f32) {
    let dims1 = (t1.size.y - t1.border, t1.size.z - t1.border);
    let dims2 = (t2.size.y - t2.border, t2.size.z - t2.border);
    let ratio = |a: f32, b: f32| {
        let r = b / a;
        if r.is_finite() {
            r
        } else {
            1.0
        }
    };
    let pi = std::f32::consts::PI;
    let r1 = t1.angle + if face1 == 0 { 0.0 } else { pi };
    let r2 = t2.angle + if face2 == 1 { 0.0 } else { pi };
    let mut q = rot_z(p - t1.pos, -r1);
    q.x = -t2.size.x;
    q.y *= ratio(dims1.0, dims2.0);
    q.z *= ratio(dims1.1, dims2.1);
    let out = rot_z(q, r2) + t2.pos;
    let a = r2 - r1;
    (out, rot_z(d, a), a)
}
