//! The world as collision geometry: every group instance expanded, every solid in world coordinates, the
//! teleporters in the client's order with their links resolved, and a BVH over it all ([`WorldModel`]).
//!
//! Expansion follows `GroupDefinition::makeGroups` of the 2.4 client: the world group's obstacles first (kind by
//! kind, in wire order), then each group instance in order, recursively, with the instance's transform
//! prepended at each level and its modifiers (team, physics driver, drive-through, shoot-through, ricochet)
//! combined with the enclosing ones (outer team and driver win; the passability bits add up). Old-style
//! obstacles (boxes, pyramids, bases, teleporters) are moved with `modifyOldStyle`; meshes and the meshes made
//! from arcs, cones, spheres and tetras have their vertices transformed (faces reversed by a mirroring
//! transform). Unnamed teleporters are named `/t<n>` (n = position in their group), prefixed by the instance
//! path (`name:` or `/<groupdef>/<k>:` per level). Obstacles the client drops (degenerate faces, shapes with
//! bad sizes, coordinates beyond 1e30) are dropped too.
//!
//! Hostile worlds are bounded: group nesting ([`ModelLimits::max_depth`], plus the client's own recursion
//! guard), expanded obstacles and faces ([`ModelLimits`]) and tessellation `divisions`. What the group instances
//! would expand to is counted before anything is expanded ([`ModelError::WouldExpand`]), so a tiny world of
//! nested groups claiming a billion obstacles is refused at once, without building a million of them first. The
//! same count covers the bytes of names the expansion makes ([`ModelLimits::max_name_bytes`]: each expanded
//! instance's path is one shared `Arc<str>`, but a long name nested deep is repeated in every path below it) and
//! the teleporter links' matching work; the links' destinations are counted before their table is built
//! ([`ModelError::Links`]).

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use glam::Vec3;
use serde::Serialize;

use super::bvh::Bvh;
use super::geometry::{edge_planes, face_plane, Aabb, Convex, Plane};
use super::links::{client_teleporter_order, match_work, LinkLimitError, LinkTable, MAX_LINK_MATCH_WORK};
use super::tessellate::{self, Shape};
use super::types::*;
use super::xform::Xform;

/// Obstacles whose coordinates exceed this are invalid (`Obstacle::maxExtent`).
pub const MAX_EXTENT: f32 = 1.0e30;

/// Faces with more corners are dropped (the client's face check is cubic in the corner count, so no world it
/// can load has them; the largest the tessellation makes is a hemisphere's bottom disc, 4 × 128).
pub const MAX_FACE_CORNERS: usize = 1024;

/// Index of an obstacle in [`WorldModel::obstacles`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ObstacleId(pub u32);

/// What tanks and shots do with a surface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Passability {
    /// Tanks drive through it.
    pub drive_through: bool,
    /// Shots pass through it.
    pub shoot_through: bool,
    /// Shots ricochet off it.
    pub ricochet: bool,
}

impl Passability {
    fn bits(self) -> u8 {
        u8::from(self.drive_through) | (u8::from(self.shoot_through) << 1) | (u8::from(self.ricochet) << 2)
    }

    fn or(self, o: Passability) -> Passability {
        Passability {
            drive_through: self.drive_through || o.drive_through,
            shoot_through: self.shoot_through || o.shoot_through,
            ricochet: self.ricochet || o.ricochet,
        }
    }

    fn from_state(state: u8, drive: u8, shoot: u8, rico: u8) -> Passability {
        Passability {
            drive_through: state & drive != 0,
            shoot_through: state & shoot != 0,
            ricochet: state & rico != 0,
        }
    }
}

/// Caps on what a world may expand to. A face costs about 200–300 bytes in the model (corners, edge planes,
/// index), so the defaults (a million faces, four million corners, a million obstacles) bound a hostile world's
/// model to roughly 300 MB whatever its group instances multiply; the largest real worlds stay far below (a
/// 10,000-obstacle world with 71,000 faces takes about 29 MB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLimits {
    /// Obstacles after expansion.
    pub max_obstacles: usize,
    /// Mesh faces after expansion and tessellation.
    pub max_faces: usize,
    /// Face corners after expansion (the sum of all faces' vertex counts).
    pub max_face_vertices: usize,
    /// Nesting depth of group instances.
    pub max_depth: usize,
    /// Bytes of names the expansion makes: each expanded group instance's path (stored once, shared by its
    /// obstacles) and each teleporter's full name (its path and own name, kept three times: the model, its
    /// obstacle and the link resolution). A long instance name nested deep is repeated in every path below it.
    pub max_name_bytes: usize,
}

/// Default [`ModelLimits::max_name_bytes`]: 32 MiB. Real worlds' names take a few KiB.
pub const MAX_NAME_BYTES: usize = 32 * 1024 * 1024;

/// Bytes an `Arc<str>` path takes besides its text (the two reference counts).
const ARC_OVERHEAD: u64 = 16;

impl Default for ModelLimits {
    fn default() -> Self {
        ModelLimits {
            max_obstacles: 1 << 20,
            max_faces: 1 << 20,
            max_face_vertices: 1 << 22,
            max_depth: 32,
            max_name_bytes: MAX_NAME_BYTES,
        }
    }
}

/// Why a model could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelError {
    /// The expanded world exceeds a [`ModelLimits`] cap.
    TooLarge {
        /// "obstacles" or "faces".
        what: &'static str,
        /// The cap.
        limit: usize,
    },
    /// Counted before anything is expanded: the group instances would multiply the world beyond a
    /// [`ModelLimits`] cap.
    WouldExpand {
        /// "obstacles", "faces", "face corners" or "bytes of names".
        what: &'static str,
        /// How many the expansion would make (saturated at `u64::MAX`).
        count: u64,
        /// The cap.
        limit: usize,
    },
    /// The teleporter links would take too much matching work or too many destinations (counted before the
    /// work is done; see [`super::links::MAX_LINK_MATCH_WORK`] and [`super::links::MAX_LINK_TARGETS`]).
    Links(LinkLimitError),
}

impl From<LinkLimitError> for ModelError {
    fn from(e: LinkLimitError) -> ModelError {
        ModelError::Links(e)
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::TooLarge { what, limit } => {
                write!(f, "the world expands to more than {limit} {what} (group instances multiply it)")
            }
            ModelError::WouldExpand { what, count: u64::MAX, limit } => {
                write!(
                    f,
                    "group instances would expand the world to more than {} {what}, over the limit of {limit}",
                    u64::MAX
                )
            }
            ModelError::WouldExpand { what, count, limit } => {
                write!(f, "group instances would expand the world to {count} {what}, over the limit of {limit}")
            }
            ModelError::Links(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ModelError {}

/// Where an obstacle's collision geometry lives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Geometry {
    /// An outer wall: [`WorldModel::walls`] index.
    Wall(u32),
    /// A box, base or pyramid: [`WorldModel::solids`] index.
    Solid(u32),
    /// A teleporter: [`WorldModel::teleporters`] index (its frame pieces are solids, its field is not).
    Teleporter(u32),
    /// A mesh (also from an arc, cone, sphere or tetra): these [`WorldModel::faces`].
    Faces(Range<u32>),
    /// A shape that made no mesh (the client drops it: bad sizes, too few divisions).
    None,
}

/// One obstacle after expansion.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelObstacle {
    /// The kind as sent (a `meshbox` is an arc).
    pub kind: ObstacleKind,
    /// Group instance path, e.g. `"/hut/0:"`; empty in the world group. One string per expanded instance,
    /// shared by its obstacles.
    #[serde(serialize_with = "serialize_arc_str")]
    pub path: Arc<str>,
    /// Centre of the bottom (meshes: of their bounds, as the client computes it).
    pub pos: Vec3,
    /// Rotation about +z, radians (0 for meshes).
    pub angle: f32,
    /// Half-width, half-breadth, height (meshes: of their bounds; teleporters: the enlarged frame).
    pub size: Vec3,
    /// Passability of the obstacle (mesh faces carry their own, see [`Face::passable`]).
    pub passable: Passability,
    /// Bases: the team.
    pub team: Option<u16>,
    /// Pyramids: upside down.
    pub flipped: bool,
    /// Teleporters: the name used for links.
    pub name: Option<String>,
    /// Bounds.
    pub bounds: Aabb,
    /// Collision geometry.
    pub geometry: Geometry,
    /// Meshes: the inside/outside check points that tell whether a point is in the solid (see
    /// [`WorldModel::mesh_contains`]).
    pub checks: Vec<MeshCheck>,
}

/// An outer wall: a half-space for tanks (the client ignores its breadth and height), an infinite plane for
/// shots (shots that ricochet pass above its top; see [`WorldModel::segment`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WallModel {
    /// The obstacle.
    pub obstacle: ObstacleId,
    /// The plane; its normal points into the world.
    pub plane: Plane,
    /// Centre of the bottom edge.
    pub pos: Vec3,
    /// Half-length.
    pub breadth: f32,
    /// Height.
    pub height: f32,
    /// Shots ricochet off it.
    pub ricochet: bool,
}

/// A convex solid: a box, base, pyramid, or one piece of a teleporter frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Solid {
    /// The obstacle it belongs to.
    pub obstacle: ObstacleId,
    /// The shape.
    pub shape: Convex,
    /// Passability.
    pub passable: Passability,
}

/// A planar convex mesh face.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Face {
    /// The mesh it belongs to.
    pub obstacle: ObstacleId,
    /// Plane; the normal is the outside (faces are one-sided for shots).
    pub plane: Plane,
    start: u32,
    len: u32,
    /// Passability (face, mesh and group instance bits combined).
    pub passable: Passability,
    /// Physics driver ([`WorldModel::physics_drivers`] index).
    pub phydrv: Option<u32>,
    /// Bounds.
    pub bounds: Aabb,
}

/// A teleporter with its geometry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TeleporterModel {
    /// The obstacle.
    pub obstacle: ObstacleId,
    /// The name links use (`/t<n>` when unnamed, prefixed by the group instance path).
    pub name: String,
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// The frame's half-width, half-breadth and height: for a vertical teleporter the client widens the sent
    /// size to (W, B + 2·border, H + border).
    pub size: Vec3,
    /// Frame width.
    pub border: f32,
    /// Horizontal teleporter.
    pub horizontal: bool,
    /// The passable field: |x| < W, |y| < size.y − border, 0 ≤ z ≤ size.z − border (local).
    #[serde(skip)]
    pub field: Convex,
    /// The two posts and the crossbar ([`WorldModel::solids`] indices).
    pub frame: [u32; 3],
    /// Passability of the frame.
    pub passable: Passability,
}

impl TeleporterModel {
    /// The face a segment entering the field at `p` goes through: 0 front (+x side), 1 back.
    pub fn face_at(&self, p: Vec3) -> u32 {
        let (s, c) = self.angle.sin_cos();
        let x = c * (p.x - self.pos.x) + s * (p.y - self.pos.y);
        if x > 0.0 {
            0
        } else {
            1
        }
    }
}

/// A team base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BaseModel {
    /// The obstacle.
    pub obstacle: ObstacleId,
    /// Team (1 red, 2 green, 3 blue, 4 purple).
    pub team: u16,
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Rotation, radians.
    pub angle: f32,
    /// Half-width, half-breadth, height.
    pub size: Vec3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrimKind {
    Solid,
    Face,
    Field,
    /// A whole mesh with check points (index into `obstacles`), for the tank-inside-a-mesh test.
    Body,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Prim {
    pub(crate) kind: PrimKind,
    pub(crate) pass: u8,
    pub(crate) index: u32,
}

/// The queryable world. Build it with [`WorldModel::build`]; query it with the methods in `spatial`.
#[derive(Debug, Clone)]
pub struct WorldModel {
    /// Every obstacle after expansion, in expansion order.
    pub obstacles: Vec<ModelObstacle>,
    /// The outer walls.
    pub walls: Vec<WallModel>,
    /// Convex solids.
    pub solids: Vec<Solid>,
    /// Mesh faces.
    pub faces: Vec<Face>,
    face_vertices: Vec<Vec3>,
    edge_planes: Vec<Plane>,
    /// Teleporters in the client's order (face `2i` is teleporter `i`'s front); `MsgTeleport` uses these
    /// numbers.
    pub teleporters: Vec<TeleporterModel>,
    /// Resolved links, by face number.
    pub links: LinkTable,
    /// Team bases.
    pub bases: Vec<BaseModel>,
    /// Tanks below this level die; `None` when the world has no water.
    pub water_level: Option<f32>,
    /// Entry zones, as sent.
    pub zones: Vec<Zone>,
    /// World weapons, as sent.
    pub weapons: Vec<Weapon>,
    /// Physics drivers, as sent.
    pub physics_drivers: Vec<PhysicsDriver>,
    /// Side of the square world: twice the outer walls' half-length (else from the obstacles' extent).
    pub world_size: f32,
    /// Obstacle counts as sent (before expansion).
    pub counts: ObstacleCounts,
    /// Obstacle counts after expansion.
    pub expanded_counts: ObstacleCounts,
    /// What was dropped or clamped on the way (missing group definitions, recursion, clamped divisions, ...).
    pub warnings: Vec<String>,
    pub(crate) prims: Vec<Prim>,
    pub(crate) bvh: Bvh,
}

impl WorldModel {
    /// Expands and indexes a parsed world with the default [`ModelLimits`].
    pub fn build(db: &WorldDb) -> Result<WorldModel, ModelError> {
        WorldModel::build_with(db, ModelLimits::default())
    }

    /// [`WorldModel::build`] with other limits.
    pub fn build_with(db: &WorldDb, limits: ModelLimits) -> Result<WorldModel, ModelError> {
        let mut x = Expander::new(db, limits);
        x.check_expansion()?;
        let root: Arc<str> = Arc::from("");
        x.group(&db.world_group, None, Xform::IDENTITY, Mods::default(), &root, 0)?;
        x.finish()
    }

    /// The vertices of a face, counter-clockwise seen from its front.
    pub fn face_vertices(&self, face: &Face) -> &[Vec3] {
        self.face_vertices.get(face.start as usize..(face.start + face.len) as usize).unwrap_or(&[])
    }

    pub(crate) fn face_edges(&self, face: &Face) -> &[Plane] {
        self.edge_planes.get(face.start as usize..(face.start + face.len) as usize).unwrap_or(&[])
    }

    /// The obstacle.
    pub fn obstacle(&self, id: ObstacleId) -> Option<&ModelObstacle> {
        self.obstacles.get(id.0 as usize)
    }

    /// The faces of a mesh obstacle (empty for other kinds).
    pub fn obstacle_faces(&self, id: ObstacleId) -> &[Face] {
        match self.obstacle(id).map(|o| &o.geometry) {
            Some(Geometry::Faces(r)) => self.faces.get(r.start as usize..r.end as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The teleporter called `name`, if any (the first of that name).
    pub fn teleporter_by_name(&self, name: &str) -> Option<u32> {
        self.teleporters.iter().position(|t| t.name == name).map(|i| i as u32)
    }

    /// Name of a face number (`"alpha:f"`).
    pub fn face_name(&self, face: u32) -> String {
        match self.teleporters.get((face / 2) as usize) {
            Some(t) => format!("{}:{}", t.name, if face % 2 == 0 { "f" } else { "b" }),
            None => format!("#{face}"),
        }
    }

    /// Number of primitives in the spatial index.
    pub fn primitive_count(&self) -> usize {
        self.prims.len()
    }

    /// Approximate heap memory held by the model (vector capacities and strings), in bytes.
    pub fn heap_bytes(&self) -> usize {
        fn v<T>(x: &Vec<T>) -> usize {
            x.capacity() * std::mem::size_of::<T>()
        }
        // Paths are shared: each counted once, by the first obstacle that holds it.
        let mut last_path: *const u8 = std::ptr::null();
        let mut strings = 0usize;
        for o in &self.obstacles {
            if o.path.as_ptr() != last_path {
                last_path = o.path.as_ptr();
                strings += o.path.len();
            }
            strings += o.name.as_ref().map_or(0, String::capacity);
        }
        let checks: usize = self.obstacles.iter().map(|o| v(&o.checks)).sum();
        let links: usize = self.links.faces.iter().map(|f| v(&f.targets)).sum::<usize>() + v(&self.links.faces);
        v(&self.obstacles)
            + strings
            + checks
            + v(&self.walls)
            + v(&self.solids)
            + v(&self.faces)
            + v(&self.face_vertices)
            + v(&self.edge_planes)
            + v(&self.teleporters)
            + links
            + v(&self.bases)
            + v(&self.prims)
            + self.bvh.heap_bytes()
    }
}

// ---------------------------------------------------------------------------------------------------------
// Expansion.

#[derive(Debug, Clone, Copy, Default)]
struct Mods {
    team: Option<u16>,
    phydrv: Option<i32>,
    pass: Passability,
}

impl Mods {
    fn inner(&self, inst: &GroupInstance) -> Mods {
        Mods {
            team: self.team.or(inst.team),
            phydrv: self.phydrv.or(inst.phydrv),
            pass: self.pass.or(Passability {
                drive_through: inst.is_drive_through(),
                shoot_through: inst.is_shoot_through(),
                ricochet: inst.is_ricochet(),
            }),
        }
    }

    /// A face's driver after the override (only faces that had a driver get the new one).
    fn phydrv(&self, own: i32) -> i32 {
        match self.phydrv {
            Some(p) if own >= 0 => p,
            _ => own,
        }
    }
}

struct PendingTele {
    obstacle: u32,
    name: String,
    pos: Vec3,
    angle: f32,
    size: Vec3,
    border: f32,
    horizontal: bool,
    passable: Passability,
    top: f32,
}

struct Expander<'a> {
    db: &'a WorldDb,
    limits: ModelLimits,
    defs: HashMap<&'a str, usize>,
    active: Vec<bool>,
    m: WorldModel,
    teles: Vec<PendingTele>,
    warned_depth: bool,
}

const MAX_WARNINGS: usize = 100;

/// What a group makes once expanded, counted without expanding it (see [`Expander::check_expansion`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    obstacles: u64,
    faces: u64,
    corners: u64,
    /// Teleporters (counted apart for their names).
    teles: u64,
    /// Expanded group instances.
    instances: u64,
    /// Bytes of the instances' paths (with [`ARC_OVERHEAD`] each), relative to the group's own path.
    path_bytes: u64,
    /// Bytes of the teleporters' names, relative to the group's own path.
    tele_name_bytes: u64,
}

impl Tally {
    fn plus(self, o: Tally) -> Tally {
        Tally {
            obstacles: self.obstacles.saturating_add(o.obstacles),
            faces: self.faces.saturating_add(o.faces),
            corners: self.corners.saturating_add(o.corners),
            teles: self.teles.saturating_add(o.teles),
            instances: self.instances.saturating_add(o.instances),
            path_bytes: self.path_bytes.saturating_add(o.path_bytes),
            tele_name_bytes: self.tele_name_bytes.saturating_add(o.tele_name_bytes),
        }
    }

    /// This tally (of a group definition) placed by an instance whose path level takes `level` bytes (with its
    /// `:`): the instance itself is one more path, and every path and teleporter name below it gets the level
    /// in front.
    fn placed(self, level: u64) -> Tally {
        Tally {
            instances: self.instances.saturating_add(1),
            path_bytes: self
                .path_bytes
                .saturating_add(level.saturating_add(ARC_OVERHEAD))
                .saturating_add(level.saturating_mul(self.instances)),
            tele_name_bytes: self.tele_name_bytes.saturating_add(level.saturating_mul(self.teles)),
            ..self
        }
    }

    /// Bytes of names the expansion makes, as [`ModelLimits::max_name_bytes`] counts them.
    fn name_bytes(&self) -> u64 {
        self.path_bytes.saturating_add(self.tele_name_bytes.saturating_mul(3))
    }

    /// The obstacles, faces and corners of `g`'s own obstacles (its instances not counted); `copy` for a named
    /// group placed by an instance (walls are not copied). An upper bound: obstacles the expansion drops (bad
    /// sizes, degenerate faces) are counted.
    fn own(g: &GroupDefinition, copy: bool) -> Tally {
        let n = |len: usize| len as u64;
        let mut t = Tally {
            obstacles: n(g.boxes.len())
                .saturating_add(n(g.pyramids.len()))
                .saturating_add(n(g.bases.len()))
                .saturating_add(n(g.teleporters.len()))
                .saturating_add(n(g.meshes.len()))
                .saturating_add(n(g.arcs.len()))
                .saturating_add(n(g.cones.len()))
                .saturating_add(n(g.spheres.len()))
                .saturating_add(n(g.tetras.len())),
            teles: n(g.teleporters.len()),
            ..Tally::default()
        };
        for (i, tp) in g.teleporters.iter().enumerate() {
            let own = if tp.name.is_empty() { 2 + digits(i as u64) } else { n(tp.name.len()) };
            t.tele_name_bytes = t.tele_name_bytes.saturating_add(own);
        }
        if !copy {
            t.obstacles = t.obstacles.saturating_add(n(g.walls.len()));
        }
        let mut faces = |list: &mut dyn Iterator<Item = usize>| {
            for corners in list {
                t.faces = t.faces.saturating_add(1);
                t.corners = t.corners.saturating_add(n(corners));
            }
        };
        for m in &g.meshes {
            faces(&mut m.faces.iter().map(|f| f.vertices.len()));
        }
        // The shapes' faces are what the tessellation makes (divisions clamped as in the expansion).
        let shapes = g
            .arcs
            .iter()
            .map(tessellate::arc)
            .chain(g.cones.iter().map(tessellate::cone))
            .chain(g.spheres.iter().map(tessellate::sphere))
            .chain(g.tetras.iter().map(|x| Some(tessellate::tetra(x))));
        for shape in shapes.flatten() {
            faces(&mut shape.faces.iter().map(Vec::len));
        }
        t
    }
}

/// Decimal digits of `n`.
fn digits(n: u64) -> u64 {
    u64::from(n.checked_ilog10().unwrap_or(0) + 1)
}

/// Bytes of the path level an instance adds (with its `:`): its name, or `/<groupdef>/<k>` where `k` counts the
/// instances of that definition in its group (`siblings` is an upper bound of it).
fn level_bytes(inst: &GroupInstance, siblings: usize) -> u64 {
    if inst.name.is_empty() {
        (inst.group_def.len() as u64).saturating_add(3 + digits(siblings as u64))
    } else {
        (inst.name.len() as u64).saturating_add(1)
    }
}

fn finite_within(b: &Aabb) -> bool {
    b.min.is_finite() && b.max.is_finite() && b.min.min_element() >= -MAX_EXTENT && b.max.max_element() <= MAX_EXTENT
}

/// `Obstacle::setExtents` and `isValid` for old-style obstacles.
fn old_style_bounds(pos: Vec3, angle: f32, size_x: f32, size_y: f32, height: f32) -> Aabb {
    let (s, c) = angle.sin_cos();
    let xspan = c.abs() * size_x + s.abs() * size_y;
    let yspan = c.abs() * size_y + s.abs() * size_x;
    Aabb {
        min: Vec3::new(pos.x - xspan, pos.y - yspan, pos.z.min(pos.z + height)),
        max: Vec3::new(pos.x + xspan, pos.y + yspan, pos.z.max(pos.z + height)),
    }
}

/// The teleporter frame size the client uses (vertical teleporters are widened by the border).
fn tele_frame_size(size: Vec3, border: f32, horizontal: bool) -> Vec3 {
    if horizontal {
        size
    } else {
        Vec3::new(size.x, size.y + 2.0 * border, size.z + border)
    }
}

/// `Teleporter::isValid`: both link faces non-degenerate and the extents in range.
fn tele_valid(pos: Vec3, angle: f32, size: Vec3, border: f32, horizontal: bool) -> bool {
    let f = tele_frame_size(size, border, horizontal);
    let cross = if horizontal { 4.0 * (f.x - border) * (f.y - border) } else { 2.0 * (f.y - border) * (f.z - border) };
    let sx = (border * 0.5).max(f.x);
    cross.is_finite()
        && cross * cross >= 1.0e-20
        && finite_within(&old_style_bounds(pos, angle, sx, f.y, f.z))
        && border.is_finite()
}

impl<'a> Expander<'a> {
    fn new(db: &'a WorldDb, limits: ModelLimits) -> Expander<'a> {
        let mut defs = HashMap::new();
        for (i, g) in db.group_defs.iter().enumerate() {
            defs.entry(g.name.as_str()).or_insert(i);
        }
        Expander {
            db,
            limits,
            defs,
            active: vec![false; db.group_defs.len()],
            m: WorldModel {
                obstacles: Vec::new(),
                walls: Vec::new(),
                solids: Vec::new(),
                faces: Vec::new(),
                face_vertices: Vec::new(),
                edge_planes: Vec::new(),
                teleporters: Vec::new(),
                links: LinkTable::default(),
                bases: Vec::new(),
                water_level: db.has_water().then_some(db.water_level),
                zones: db.zones.clone(),
                weapons: db.weapons.clone(),
                physics_drivers: db.physics_drivers.clone(),
                world_size: 0.0,
                counts: db.counts(),
                expanded_counts: ObstacleCounts::default(),
                warnings: Vec::new(),
                prims: Vec::new(),
                bvh: Bvh::default(),
            },
            teles: Vec::new(),
            warned_depth: false,
        }
    }

    fn warn(&mut self, w: String) {
        if self.m.warnings.len() < MAX_WARNINGS {
            self.m.warnings.push(w);
        } else if self.m.warnings.len() == MAX_WARNINGS {
            self.m.warnings.push("(more warnings left out)".into());
        }
    }

    /// Refuses a world whose group instances would expand beyond the limits, before anything is expanded: the
    /// obstacles, faces and corners of every group definition are counted once, then multiplied up the
    /// instance graph (saturating), so a 120-byte blob of nested groups claiming a billion boxes is refused in
    /// microseconds instead of after a million obstacles were built.
    ///
    /// The count follows the expansion's rules (missing definitions and an instance of a group that is being
    /// expanded place nothing) except the depth limit, which it ignores: it can only count more than the
    /// expansion makes. It counts each definition once, whatever path reaches it, so in a world whose groups
    /// instantiate each other in a cycle it may count less; the caps checked while expanding still hold there.
    fn check_expansion(&self) -> Result<(), ModelError> {
        let db = self.db;
        let n = db.group_defs.len();
        let mut done: Vec<Option<Tally>> = vec![None; n];
        let mut active = vec![false; n];
        let level_of = |d: usize, k: usize| {
            let g = db.group_defs.get(d)?;
            Some(level_bytes(g.instances.get(k)?, g.instances.len()))
        };
        // Depth-first over the definitions with an explicit stack (a chain of definitions can be as long as the
        // database allows): (definition, next instance to look at, tally so far).
        let mut stack: Vec<(usize, usize, Tally)> = Vec::new();
        let mut world = Tally::own(&db.world_group, false);
        let siblings = db.world_group.instances.len();
        for inst in &db.world_group.instances {
            let Some(&root) = self.defs.get(inst.group_def.as_str()) else { continue };
            if done.get(root).copied().flatten().is_none() {
                let Some(g) = db.group_defs.get(root) else { continue };
                stack.push((root, 0, Tally::own(g, true)));
                if let Some(a) = active.get_mut(root) {
                    *a = true;
                }
                while let Some(&mut (d, ref mut next, _)) = stack.last_mut() {
                    let inst = db.group_defs.get(d).and_then(|g| g.instances.get(*next));
                    *next += 1;
                    let Some(inst) = inst else {
                        // Every instance of `d` counted: it is done; its parent gets its tally, placed by the
                        // parent's instance being looked at.
                        let Some((d, _, tally)) = stack.pop() else { break };
                        if let Some(a) = active.get_mut(d) {
                            *a = false;
                        }
                        if let Some(slot) = done.get_mut(d) {
                            *slot = Some(tally);
                        }
                        if let Some(parent) = stack.last_mut() {
                            let level = level_of(parent.0, parent.1.saturating_sub(1)).unwrap_or(0);
                            parent.2 = parent.2.plus(tally.placed(level));
                        }
                        continue;
                    };
                    let Some(&child) = self.defs.get(inst.group_def.as_str()) else { continue };
                    if active.get(child).copied().unwrap_or(true) {
                        continue; // the expansion skips a group inside itself
                    }
                    match done.get(child).copied().flatten() {
                        Some(tally) => {
                            let siblings = db.group_defs.get(d).map_or(0, |g| g.instances.len());
                            if let Some(top) = stack.last_mut() {
                                top.2 = top.2.plus(tally.placed(level_bytes(inst, siblings)));
                            }
                        }
                        None => {
                            let Some(g) = db.group_defs.get(child) else { continue };
                            if let Some(a) = active.get_mut(child) {
                                *a = true;
                            }
                            stack.push((child, 0, Tally::own(g, true)));
                        }
                    }
                }
            }
            let tally = done.get(root).copied().flatten().unwrap_or_default();
            world = world.plus(tally.placed(level_bytes(inst, siblings)));
        }
        let l = &self.limits;
        for (what, count, limit) in [
            ("obstacles", world.obstacles, l.max_obstacles),
            ("faces", world.faces, l.max_faces),
            ("face corners", world.corners, l.max_face_vertices),
            ("bytes of names", world.name_bytes(), l.max_name_bytes),
        ] {
            if count > limit as u64 {
                return Err(ModelError::WouldExpand { what, count, limit });
            }
        }
        // The links' matching work over (at most) these teleporters, before any is built.
        let face_bytes = world.tele_name_bytes.saturating_add(world.teles.saturating_mul(2)).saturating_mul(2);
        let work = match_work(&db.links, face_bytes);
        if work > MAX_LINK_MATCH_WORK {
            return Err(LinkLimitError {
                what: "steps of link name matching",
                count: work,
                limit: MAX_LINK_MATCH_WORK,
            }
            .into());
        }
        Ok(())
    }

    fn xform(&mut self, t: &MeshTransform) -> Xform {
        let (x, ok) = Xform::from_transform(t, &self.db.transforms);
        if !ok {
            self.warn("a transform references a missing or cyclic named transform; that step was ignored".into());
        }
        x
    }

    fn push_obstacle(&mut self, o: ModelObstacle) -> Result<u32, ModelError> {
        if self.m.obstacles.len() >= self.limits.max_obstacles {
            return Err(ModelError::TooLarge { what: "obstacles", limit: self.limits.max_obstacles });
        }
        let c = &mut self.m.expanded_counts;
        match o.kind {
            ObstacleKind::Wall => c.walls += 1,
            ObstacleKind::Box => c.boxes += 1,
            ObstacleKind::Pyramid => c.pyramids += 1,
            ObstacleKind::Base => c.bases += 1,
            ObstacleKind::Teleporter => c.teleporters += 1,
            ObstacleKind::Mesh => c.meshes += 1,
            ObstacleKind::Arc => c.arcs += 1,
            ObstacleKind::Cone => c.cones += 1,
            ObstacleKind::Sphere => c.spheres += 1,
            ObstacleKind::Tetra => c.tetras += 1,
        }
        self.m.obstacles.push(o);
        Ok((self.m.obstacles.len() - 1) as u32)
    }

    fn push_solid(&mut self, obstacle: u32, shape: Convex, passable: Passability) -> u32 {
        self.m.solids.push(Solid { obstacle: ObstacleId(obstacle), shape, passable });
        (self.m.solids.len() - 1) as u32
    }

    /// `makeGroups` for one group definition (`def` is None for the world group).
    fn group(
        &mut self,
        g: &'a GroupDefinition,
        def: Option<usize>,
        xf: Xform,
        mods: Mods,
        depth_name: &Arc<str>,
        depth: usize,
    ) -> Result<(), ModelError> {
        if let Some(i) = def {
            if self.active.get(i).copied().unwrap_or(true) {
                self.warn(format!(
                    "group definition \"{}\" instantiates itself; the inner instance was skipped",
                    g.name
                ));
                return Ok(());
            }
            if let Some(a) = self.active.get_mut(i) {
                *a = true;
            }
        }
        let copy = def.is_some();
        self.obstacles_of(g, copy, xf, mods, depth_name)?;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for inst in &g.instances {
            let count = seen.entry(inst.group_def.as_str()).or_insert(0);
            let k = *count;
            *count += 1;
            let Some(&child) = self.defs.get(inst.group_def.as_str()) else {
                self.warn(format!("group definition \"{}\" is missing", inst.group_def));
                continue;
            };
            if depth + 1 > self.limits.max_depth {
                if !self.warned_depth {
                    self.warned_depth = true;
                    self.warn(format!(
                        "group instances nest deeper than {}; deeper ones were skipped",
                        self.limits.max_depth
                    ));
                }
                continue;
            }
            let Some(child_def) = self.db.group_defs.get(child) else { continue };
            let level = if inst.name.is_empty() { format!("/{}/{k}", inst.group_def) } else { inst.name.clone() };
            let name: Arc<str> = Arc::from(format!("{depth_name}{level}:"));
            let ixf = self.xform(&inst.transform);
            self.group(child_def, Some(child), ixf.then(xf), mods.inner(inst), &name, depth + 1)?;
        }
        if let Some(a) = def.and_then(|i| self.active.get_mut(i)) {
            *a = false;
        }
        Ok(())
    }

    /// Adds the obstacles of group `g` (`GroupDefinition::makeGroups` for one group), transformed by `xf` and
    /// modified by `mods`, their names prefixed by `path`; `copy` when `g` is instantiated (a copy, as the client
    /// copies a group definition's obstacles) rather than the world group itself. Kind by kind, in the client's
    /// order, which numbers the obstacles.
    fn obstacles_of(
        &mut self,
        g: &'a GroupDefinition,
        copy: bool,
        xf: Xform,
        mods: Mods,
        path: &Arc<str>,
    ) -> Result<(), ModelError> {
        self.add_walls(g, copy, path)?;
        self.add_old_style(g, copy, xf, mods, path)?;
        self.add_teleporters(g, xf, mods, path)?;
        self.add_meshes(g, copy, xf, mods, path)?;
        self.add_shapes(g, copy, xf, mods, path)
    }

    /// The group's walls (`WallObstacle`): the world's outer walls, each a vertical plane facing along its
    /// angle. Only the world group has them; the client cannot copy a wall, so one in a group definition is
    /// skipped with a warning.
    fn add_walls(&mut self, g: &'a GroupDefinition, copy: bool, path: &Arc<str>) -> Result<(), ModelError> {
        for w in &g.walls {
            if copy {
                self.warn("a wall inside a group definition was skipped".into());
                continue;
            }
            let (s, c) = w.angle.sin_cos();
            let along = Vec3::new(-s, c, 0.0);
            let bounds =
                Aabb::of([w.pos - along * w.breadth, w.pos + along * w.breadth + Vec3::new(0.0, 0.0, w.height)]);
            if !finite_within(&bounds) {
                continue;
            }
            let id = self.push_obstacle(ModelObstacle {
                kind: ObstacleKind::Wall,
                path: Arc::clone(path),
                pos: w.pos,
                angle: w.angle,
                size: Vec3::new(0.0, w.breadth, w.height),
                passable: Passability { ricochet: w.is_ricochet(), ..Passability::default() },
                team: None,
                flipped: false,
                name: None,
                bounds,
                geometry: Geometry::Wall(self.m.walls.len() as u32),
                checks: Vec::new(),
            })?;
            self.m.walls.push(WallModel {
                obstacle: ObstacleId(id),
                plane: Plane::new(Vec3::new(c, s, 0.0), w.pos),
                pos: w.pos,
                breadth: w.breadth,
                height: w.height,
                ricochet: w.is_ricochet(),
            });
        }
        Ok(())
    }

    /// The group's boxes, pyramids and bases (`BoxBuilding`, `PyramidBuilding`, `BaseBuilding`): the old-style
    /// obstacles, which a group transform moves and turns but never tilts (`MeshTransform`'s
    /// `modifyOldStyle`). Each becomes a convex solid; a pyramid may be upside down (`FLIP_Z`, or a mirroring
    /// transform); a base keeps its team (or the instance's) and, copied, only its ricochet bit.
    fn add_old_style(
        &mut self,
        g: &'a GroupDefinition,
        copy: bool,
        xf: Xform,
        mods: Mods,
        path: &Arc<str>,
    ) -> Result<(), ModelError> {
        use super::types::obstacle_state as os;
        let olds = g
            .boxes
            .iter()
            .map(|b| (ObstacleKind::Box, b.pos, b.angle, b.size, b.state, 0u16))
            .chain(g.pyramids.iter().map(|p| (ObstacleKind::Pyramid, p.pos, p.angle, p.size, p.state, 0)))
            .chain(g.bases.iter().map(|b| (ObstacleKind::Base, b.pos, b.angle, b.size, b.state, b.team)));
        for (kind, pos, angle, size, state, team) in olds {
            if !finite_within(&old_style_bounds(pos, angle, size.x, size.y, size.z)) {
                continue; // dropped when unpacked
            }
            let o = xf.modify_old_style(pos, size, angle);
            let bounds = old_style_bounds(o.pos, o.angle, o.size.x, o.size.y, o.size.z);
            if !finite_within(&bounds) {
                continue;
            }
            let mut passable = Passability::from_state(state, os::DRIVE_THROUGH, os::SHOOT_THROUGH, os::RICOCHET);
            if copy && kind == ObstacleKind::Base {
                // The client's base copy keeps only the ricochet bit.
                passable = Passability { ricochet: passable.ricochet, ..Passability::default() };
            }
            passable = passable.or(mods.pass);
            let flipped = kind == ObstacleKind::Pyramid && ((state & os::FLIP_Z != 0) != o.flipped);
            let team = (kind == ObstacleKind::Base).then(|| mods.team.unwrap_or(team));
            let shape = if kind == ObstacleKind::Pyramid {
                Convex::pyramid(o.pos, o.angle, o.size, flipped)
            } else {
                Convex::oriented_box(o.pos, o.angle, o.size)
            };
            let solid = self.m.solids.len() as u32;
            let id = self.push_obstacle(ModelObstacle {
                kind,
                path: Arc::clone(path),
                pos: o.pos,
                angle: o.angle,
                size: o.size,
                passable,
                team,
                flipped,
                name: None,
                bounds: shape.aabb(),
                geometry: Geometry::Solid(solid),
                checks: Vec::new(),
            })?;
            self.push_solid(id, shape, passable);
            if let Some(team) = team {
                self.m.bases.push(BaseModel {
                    obstacle: ObstacleId(id),
                    team,
                    pos: o.pos,
                    angle: o.angle,
                    size: o.size,
                });
            }
        }
        Ok(())
    }

    /// The group's teleporters (`Teleporter`): an unnamed one is named by its position among the group's valid
    /// teleporters (`/t0`, `/t1`, ...), after `path`. Their frames and faces are made once every group is expanded
    /// and the teleporters are sorted.
    fn add_teleporters(
        &mut self,
        g: &'a GroupDefinition,
        xf: Xform,
        mods: Mods,
        path: &Arc<str>,
    ) -> Result<(), ModelError> {
        use super::types::obstacle_state as os;
        let valid = g.teleporters.iter().filter(|t| tele_valid(t.pos, t.angle, t.size, t.border, t.horizontal));
        for (i, t) in valid.enumerate() {
            let name = format!("{path}{}", if t.name.is_empty() { format!("/t{i}") } else { t.name.clone() });
            let o = xf.modify_old_style(t.pos, t.size, t.angle);
            if !tele_valid(o.pos, o.angle, o.size, t.border, t.horizontal) {
                continue;
            }
            let passable =
                Passability::from_state(t.state, os::DRIVE_THROUGH, os::SHOOT_THROUGH, os::RICOCHET).or(mods.pass);
            let frame = tele_frame_size(o.size, t.border, t.horizontal);
            let sx = (t.border * 0.5).max(frame.x);
            let id = self.push_obstacle(ModelObstacle {
                kind: ObstacleKind::Teleporter,
                path: Arc::clone(path),
                pos: o.pos,
                angle: o.angle,
                size: frame,
                passable,
                team: None,
                flipped: false,
                name: Some(name.clone()),
                bounds: old_style_bounds(o.pos, o.angle, sx, frame.y, frame.z),
                geometry: Geometry::None, // set once the teleporters are sorted
                checks: Vec::new(),
            })?;
            self.teles.push(PendingTele {
                obstacle: id,
                name,
                pos: o.pos,
                angle: o.angle,
                size: frame,
                border: t.border,
                horizontal: t.horizontal,
                passable,
                top: o.pos.z + frame.z,
            });
        }
        Ok(())
    }

    /// The group's meshes (`MeshObstacle`): vertices transformed, each face with its own passability and
    /// physics driver (or the instance's). A copied mesh that is only drawn (draw info, no solid faces) is
    /// copied empty, as the client does.
    fn add_meshes(
        &mut self,
        g: &'a GroupDefinition,
        copy: bool,
        xf: Xform,
        mods: Mods,
        path: &Arc<str>,
    ) -> Result<(), ModelError> {
        for mesh in &g.meshes {
            let verts_ok = |v: &[Vec3]| v.iter().all(|p| p.is_finite() && p.abs().max_element() <= MAX_EXTENT);
            if !verts_ok(&mesh.vertices) {
                continue;
            }
            let mesh_pass = Passability::from_state(
                mesh.state,
                mesh_state::DRIVE_THROUGH,
                mesh_state::SHOOT_THROUGH,
                mesh_state::RICOCHET,
            );
            // Copies of purely visual draw-info meshes are made empty by the client.
            let visual = copy
                && mesh.fake_vertex.is_some()
                && (mesh.faces.is_empty() || (mesh_pass.drive_through && mesh_pass.shoot_through));
            let verts: Vec<Vec3> = mesh.vertices.iter().map(|&v| xf.point(v)).collect();
            if !verts_ok(&verts) {
                continue;
            }
            let inverted = copy && xf.is_inverted();
            let faces: Vec<(Vec<u32>, Passability, i32)> = if visual {
                Vec::new()
            } else {
                mesh.faces
                    .iter()
                    .map(|f| {
                        let fp = Passability::from_state(
                            f.state,
                            face_state::DRIVE_THROUGH,
                            face_state::SHOOT_THROUGH,
                            face_state::RICOCHET,
                        );
                        (f.vertices.clone(), fp.or(mesh_pass).or(mods.pass), mods.phydrv(f.phydrv))
                    })
                    .collect()
            };
            let checks = if visual {
                Vec::new()
            } else {
                mesh.checks.iter().map(|c| MeshCheck { kind: c.kind, point: xf.point(c.point) }).collect()
            };
            self.add_mesh(ObstacleKind::Mesh, path, mesh_pass.or(mods.pass), &verts, faces, inverted, checks)?;
        }
        Ok(())
    }

    /// The group's arcs, cones, spheres and tetras (`ArcObstacle`, `ConeObstacle`, `SphereObstacle`,
    /// `TetraBuilding`), which the client turns into meshes: tessellated here, then added as meshes. One whose
    /// parameters make no shape is kept as an empty obstacle (no geometry).
    fn add_shapes(
        &mut self,
        g: &'a GroupDefinition,
        copy: bool,
        xf: Xform,
        mods: Mods,
        path: &Arc<str>,
    ) -> Result<(), ModelError> {
        let shapes = g
            .arcs
            .iter()
            .map(|a| (ObstacleKind::Arc, &a.transform, tessellate::arc(a)))
            .chain(g.cones.iter().map(|c| (ObstacleKind::Cone, &c.transform, tessellate::cone(c))))
            .chain(g.spheres.iter().map(|s| (ObstacleKind::Sphere, &s.transform, tessellate::sphere(s))))
            .chain(g.tetras.iter().map(|t| (ObstacleKind::Tetra, &t.transform, Some(tessellate::tetra(t)))));
        for (kind, own, shape) in shapes {
            let own = self.xform(own);
            let total = if copy { own.then(xf) } else { own };
            let Some(Shape { vertices, faces, checks, phydrv, passable, clamped }) = shape else {
                self.push_obstacle(ModelObstacle {
                    kind,
                    path: Arc::clone(path),
                    pos: Vec3::ZERO,
                    angle: 0.0,
                    size: Vec3::ZERO,
                    passable: Passability::default(),
                    team: None,
                    flipped: false,
                    name: None,
                    bounds: Aabb::EMPTY,
                    geometry: Geometry::None,
                    checks: Vec::new(),
                })?;
                continue;
            };
            if clamped {
                self.warn(format!("a {} has more divisions than the model uses; clamped", kind.name()));
            }
            let pass = Passability { drive_through: passable.0, shoot_through: passable.1, ricochet: passable.2 }
                .or(mods.pass);
            let verts: Vec<Vec3> = vertices.iter().map(|&v| total.point(v)).collect();
            if !verts.iter().all(|p| p.is_finite() && p.abs().max_element() <= MAX_EXTENT) {
                continue;
            }
            let driver = mods.phydrv(phydrv);
            let faces = faces.into_iter().map(|f| (f, pass, driver)).collect();
            let checks = checks.iter().map(|c| MeshCheck { kind: c.kind, point: total.point(c.point) }).collect();
            self.add_mesh(kind, path, pass, &verts, faces, total.is_inverted(), checks)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn add_mesh(
        &mut self,
        kind: ObstacleKind,
        path: &Arc<str>,
        pass: Passability,
        verts: &[Vec3],
        faces: Vec<(Vec<u32>, Passability, i32)>,
        inverted: bool,
        checks: Vec<MeshCheck>,
    ) -> Result<(), ModelError> {
        let id = self.m.obstacles.len() as u32;
        let first = self.m.faces.len() as u32;
        let mut bounds = Aabb::EMPTY;
        let mut poly = Vec::new();
        for (idx, fpass, phydrv) in faces {
            if idx.len() > MAX_FACE_CORNERS {
                self.warn(format!("a {} face with {} corners was dropped", kind.name(), idx.len()));
                continue;
            }
            poly.clear();
            poly.extend(idx.iter().filter_map(|&i| verts.get(i as usize).copied()));
            if poly.len() != idx.len() {
                continue;
            }
            if inverted {
                poly.reverse();
            }
            let Some(plane) = face_plane(&poly) else { continue };
            if self.m.faces.len() >= self.limits.max_faces {
                return Err(ModelError::TooLarge { what: "faces", limit: self.limits.max_faces });
            }
            if self.m.face_vertices.len() + poly.len() > self.limits.max_face_vertices {
                return Err(ModelError::TooLarge { what: "face corners", limit: self.limits.max_face_vertices });
            }
            let fb = Aabb::of(poly.iter().copied());
            bounds = bounds.union(&fb);
            let start = self.m.face_vertices.len() as u32;
            self.m.face_vertices.extend_from_slice(&poly);
            edge_planes(&poly, &plane, &mut self.m.edge_planes);
            let phydrv = u32::try_from(phydrv).ok().filter(|&p| (p as usize) < self.m.physics_drivers.len());
            self.m.faces.push(Face {
                obstacle: ObstacleId(id),
                plane,
                start,
                len: poly.len() as u32,
                passable: fpass,
                phydrv,
                bounds: fb,
            });
        }
        let last = self.m.faces.len() as u32;
        let (pos, size) = if bounds.is_empty() {
            (Vec3::ZERO, Vec3::ZERO)
        } else {
            (
                Vec3::new((bounds.min.x + bounds.max.x) * 0.5, (bounds.min.y + bounds.max.y) * 0.5, bounds.min.z),
                Vec3::new(
                    (bounds.max.x - bounds.min.x) * 0.5,
                    (bounds.max.y - bounds.min.y) * 0.5,
                    bounds.max.z - bounds.min.z,
                ),
            )
        };
        self.push_obstacle(ModelObstacle {
            kind,
            path: Arc::clone(path),
            pos,
            angle: 0.0,
            size,
            passable: pass,
            team: None,
            flipped: false,
            name: None,
            bounds,
            geometry: Geometry::Faces(first..last),
            checks,
        })?;
        Ok(())
    }

    fn finish(mut self) -> Result<WorldModel, ModelError> {
        // Teleporters in the client's order, with their frames.
        let tops: Vec<f32> = self.teles.iter().map(|t| t.top).collect();
        let order = client_teleporter_order(&tops);
        let teles = std::mem::take(&mut self.teles);
        let mut slots: Vec<Option<PendingTele>> = teles.into_iter().map(Some).collect();
        for (k, &i) in order.iter().enumerate() {
            let Some(t) = slots.get_mut(i).and_then(Option::take) else { continue };
            let (s, c) = t.angle.sin_cos();
            let ay = Vec3::new(-s, c, 0.0);
            let (w, b, h, r) = (t.size.x, t.size.y, t.size.z, t.border);
            let field = Convex::oriented_box(t.pos, t.angle, Vec3::new(w, b - r, h - r));
            let post = Vec3::new(w.abs().max(r.abs() * 0.5), r * 0.5, h - r);
            let p1 = Convex::oriented_box(t.pos + ay * (b - r * 0.5), t.angle, post);
            let p2 = Convex::oriented_box(t.pos - ay * (b - r * 0.5), t.angle, post);
            let bar = Convex::oriented_box(t.pos + Vec3::new(0.0, 0.0, h - r), t.angle, Vec3::new(w, b, r));
            let frame = [
                self.push_solid(t.obstacle, p1, t.passable),
                self.push_solid(t.obstacle, p2, t.passable),
                self.push_solid(t.obstacle, bar, t.passable),
            ];
            if let Some(o) = self.m.obstacles.get_mut(t.obstacle as usize) {
                o.geometry = Geometry::Teleporter(k as u32);
            }
            self.m.teleporters.push(TeleporterModel {
                obstacle: ObstacleId(t.obstacle),
                name: t.name,
                pos: t.pos,
                angle: t.angle,
                size: t.size,
                border: r,
                horizontal: t.horizontal,
                field,
                frame,
                passable: t.passable,
            });
        }
        let names: Vec<String> = self.m.teleporters.iter().map(|t| t.name.clone()).collect();
        self.m.links = LinkTable::resolve(&self.db.links, &names)?;

        // World size.
        let m = &mut self.m;
        m.world_size = if m.walls.is_empty() {
            let ext = m
                .obstacles
                .iter()
                .filter(|o| !o.bounds.is_empty())
                .map(|o| o.bounds.min.abs().max(o.bounds.max.abs()).truncate().max_element())
                .fold(0.0f32, f32::max);
            if ext > 0.0 {
                2.0 * ext
            } else {
                800.0
            }
        } else {
            2.0 * m.walls.iter().map(|w| w.breadth.abs()).fold(0.0f32, f32::max)
        };

        // The spatial index.
        let mut bounds = Vec::with_capacity(m.solids.len() + m.faces.len() + m.teleporters.len());
        for (i, s) in m.solids.iter().enumerate() {
            let b = s.shape.aabb();
            if finite_within(&b) {
                m.prims.push(Prim { kind: PrimKind::Solid, pass: s.passable.bits(), index: i as u32 });
                bounds.push(b);
            }
        }
        for (i, f) in m.faces.iter().enumerate() {
            m.prims.push(Prim { kind: PrimKind::Face, pass: f.passable.bits(), index: i as u32 });
            bounds.push(f.bounds);
        }
        for (i, o) in m.obstacles.iter().enumerate() {
            if !o.checks.is_empty() && matches!(o.geometry, Geometry::Faces(ref r) if r.start < r.end) {
                m.prims.push(Prim { kind: PrimKind::Body, pass: o.passable.bits(), index: i as u32 });
                bounds.push(o.bounds);
            }
        }
        for (i, t) in m.teleporters.iter().enumerate() {
            let b = t.field.aabb();
            if finite_within(&b) {
                m.prims.push(Prim { kind: PrimKind::Field, pass: 0, index: i as u32 });
                bounds.push(b);
            }
        }
        m.bvh = Bvh::build(&bounds);
        Ok(self.m)
    }
}

fn serialize_arc_str<S: serde::Serializer>(s: &Arc<str>, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s)
}
