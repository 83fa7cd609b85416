//! The typed records of the world database, as sent (before any group expansion).
//!
//! Positions, sizes and vertices are [`glam::Vec3`]; angles of obstacles are radians unless a field says degrees.
//! Index fields (`material`, `phydrv`, `texture matrix`, `dynamic colour`) are the raw `i32` from the wire, `-1`
//! meaning "none"; they are not validated here because the official client tolerates out-of-range values (it
//! falls back to a default material / no driver). Use the lookup helpers on [`WorldDb`] to resolve them.
//!
//! State bytes are kept as plain `u8` with the bit values as named constants (one module per meaning, e.g.
//! [`obstacle_state`], [`mesh_state`]) plus small accessor methods, so that nothing the server sent is lost.

use glam::Vec3;
use serde::Serialize;

/// Bits of the `state` byte of walls, boxes, pyramids, bases and teleporters (`global.h`).
pub mod obstacle_state {
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 0;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 1;
    /// Pyramids only: upside down (apex at the bottom; a negative BZW height).
    pub const FLIP_Z: u8 = 1 << 2;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 3;
}

/// Bits of the state byte of a [`Mesh`].
pub mod mesh_state {
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 0;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 1;
    /// Smooth bounce.
    pub const SMOOTH_BOUNCE: u8 = 1 << 2;
    /// Rendering: no clusters.
    pub const NO_CLUSTERS: u8 = 1 << 3;
    /// A draw-info block is hidden in the texture coordinates and a fake vertex was appended.
    pub const DRAW_INFO: u8 = 1 << 4;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 5;
}

/// Bits of the state byte of a [`MeshFace`].
pub mod face_state {
    /// The face lists normal indices.
    pub const HAS_NORMALS: u8 = 1 << 0;
    /// The face lists texture coordinate indices.
    pub const HAS_TEXCOORDS: u8 = 1 << 1;
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 2;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 3;
    /// Smooth bounce.
    pub const SMOOTH_BOUNCE: u8 = 1 << 4;
    /// Rendering: no clusters.
    pub const NO_CLUSTERS: u8 = 1 << 5;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 6;
}

/// Bits of the state byte of an [`Arc`] or a [`Cone`].
pub mod arc_state {
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 0;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 1;
    /// Smooth bounce.
    pub const SMOOTH_BOUNCE: u8 = 1 << 2;
    /// Rendering: generate normals.
    pub const USE_NORMALS: u8 = 1 << 3;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 4;
}

/// Bits of the state byte of a [`Sphere`].
pub mod sphere_state {
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 0;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 1;
    /// Smooth bounce.
    pub const SMOOTH_BOUNCE: u8 = 1 << 2;
    /// Rendering: generate normals.
    pub const USE_NORMALS: u8 = 1 << 3;
    /// Only the upper half.
    pub const HEMISPHERE: u8 = 1 << 4;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 5;
}

/// Bits of the state byte of a [`Tetra`].
pub mod tetra_state {
    /// Tanks drive through it.
    pub const DRIVE_THROUGH: u8 = 1 << 0;
    /// Shots pass through it.
    pub const SHOOT_THROUGH: u8 = 1 << 1;
    /// Shots ricochet off it.
    pub const RICOCHET: u8 = 1 << 2;
}

/// Bits of the `bits` byte of a [`GroupInstance`].
pub mod instance_bits {
    /// A team override follows.
    pub const MODIFY_TEAM: u8 = 1 << 0;
    /// A tint follows.
    pub const MODIFY_COLOR: u8 = 1 << 1;
    /// A physics driver override follows.
    pub const MODIFY_PHYDRV: u8 = 1 << 2;
    /// A material override follows.
    pub const MODIFY_MATERIAL: u8 = 1 << 3;
    /// Everything in the instance becomes drive-through.
    pub const DRIVE_THROUGH: u8 = 1 << 4;
    /// Everything in the instance becomes shoot-through.
    pub const SHOOT_THROUGH: u8 = 1 << 5;
    /// Everything in the instance ricochets.
    pub const RICOCHET: u8 = 1 << 6;
    /// The four "an override follows" bits.
    pub const MODIFY_MASK: u8 = MODIFY_TEAM | MODIFY_COLOR | MODIFY_PHYDRV | MODIFY_MATERIAL;
}

/// Bits of the mode byte of a [`Material`].
pub mod material_mode {
    /// No back-face culling.
    pub const NO_CULLING: u8 = 1 << 0;
    /// No depth sorting.
    pub const NO_SORTING: u8 = 1 << 1;
    /// Not drawn on the radar.
    pub const NO_RADAR: u8 = 1 << 2;
    /// Casts no shadow.
    pub const NO_SHADOW: u8 = 1 << 3;
    /// Occluder.
    pub const OCCLUDER: u8 = 1 << 4;
    /// Group alpha.
    pub const GROUP_ALPHA: u8 = 1 << 5;
    /// No lighting.
    pub const NO_LIGHTING: u8 = 1 << 6;
}

/// The whole decompressed world database, section by section, as sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorldDb {
    /// Section 1: dynamic colours (rendering only).
    pub dynamic_colors: Vec<DynamicColor>,
    /// Section 2: texture matrices (rendering only).
    pub texture_matrices: Vec<TextureMatrix>,
    /// Section 3: materials (rendering only, but referenced by index everywhere).
    pub materials: Vec<Material>,
    /// Section 4: physics drivers (conveyors, spinners, death surfaces).
    pub physics_drivers: Vec<PhysicsDriver>,
    /// Section 5: named transforms, referenced by [`TransformOp::Index`].
    pub transforms: Vec<MeshTransform>,
    /// Section 6a: the world group (name ""), holding every top-level obstacle and group instance.
    pub world_group: GroupDefinition,
    /// Section 6b: the named group definitions that [`GroupInstance`]s place.
    pub group_defs: Vec<GroupDefinition>,
    /// Section 7: teleporter links by name (`"alpha:f"` → `"beta:b"`, `*` wildcards allowed).
    pub links: Vec<Link>,
    /// Section 8: the water level; negative means no water.
    pub water_level: f32,
    /// Section 8: the water's material index, present exactly when `water_level >= 0`.
    pub water_material: Option<i32>,
    /// Section 9: world weapons (the server fires them as player 253).
    pub weapons: Vec<Weapon>,
    /// Section 10: entry zones (spawn and flag areas, safety zones for team flags).
    pub zones: Vec<Zone>,
}

impl WorldDb {
    /// Per-kind obstacle counts as sent, summed over the world group and every named group definition (copies
    /// made by instances are not counted; the reference parses in the captures count the same way).
    pub fn counts(&self) -> ObstacleCounts {
        let mut c = self.world_group.counts();
        for g in &self.group_defs {
            c = c.add(&g.counts());
        }
        c
    }

    /// The named group definition `name`.
    pub fn group_def(&self, name: &str) -> Option<&GroupDefinition> {
        self.group_defs.iter().find(|g| g.name == name)
    }

    /// The physics driver at wire index `index` (`-1` or out of range: `None`).
    pub fn physics_driver(&self, index: i32) -> Option<&PhysicsDriver> {
        usize::try_from(index).ok().and_then(|i| self.physics_drivers.get(i))
    }

    /// The material at wire index `index` (`-1` or out of range: `None`).
    pub fn material(&self, index: i32) -> Option<&Material> {
        usize::try_from(index).ok().and_then(|i| self.materials.get(i))
    }

    /// The named transform at wire index `index` (out of range: `None`).
    pub fn transform(&self, index: i32) -> Option<&MeshTransform> {
        usize::try_from(index).ok().and_then(|i| self.transforms.get(i))
    }

    /// True when the world has water (tanks below `water_level` die).
    pub fn has_water(&self) -> bool {
        self.water_level >= 0.0
    }
}

/// The ten obstacle kinds, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ObstacleKind {
    /// [`Wall`].
    Wall = 0,
    /// [`BoxBuilding`].
    Box = 1,
    /// [`Pyramid`].
    Pyramid = 2,
    /// [`Base`].
    Base = 3,
    /// [`Teleporter`].
    Teleporter = 4,
    /// [`Mesh`].
    Mesh = 5,
    /// [`Arc`].
    Arc = 6,
    /// [`Cone`].
    Cone = 7,
    /// [`Sphere`].
    Sphere = 8,
    /// [`Tetra`].
    Tetra = 9,
}

impl ObstacleKind {
    /// All kinds in wire order.
    pub const ALL: [ObstacleKind; 10] = [
        ObstacleKind::Wall,
        ObstacleKind::Box,
        ObstacleKind::Pyramid,
        ObstacleKind::Base,
        ObstacleKind::Teleporter,
        ObstacleKind::Mesh,
        ObstacleKind::Arc,
        ObstacleKind::Cone,
        ObstacleKind::Sphere,
        ObstacleKind::Tetra,
    ];

    /// Lower-case name as in BZW files ("wall", "box", ...).
    pub fn name(self) -> &'static str {
        match self {
            ObstacleKind::Wall => "wall",
            ObstacleKind::Box => "box",
            ObstacleKind::Pyramid => "pyramid",
            ObstacleKind::Base => "base",
            ObstacleKind::Teleporter => "teleporter",
            ObstacleKind::Mesh => "mesh",
            ObstacleKind::Arc => "arc",
            ObstacleKind::Cone => "cone",
            ObstacleKind::Sphere => "sphere",
            ObstacleKind::Tetra => "tetra",
        }
    }
}

/// Number of obstacles of each kind (see [`WorldDb::counts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ObstacleCounts {
    /// Walls.
    pub walls: usize,
    /// Boxes.
    pub boxes: usize,
    /// Pyramids.
    pub pyramids: usize,
    /// Bases.
    pub bases: usize,
    /// Teleporters.
    pub teleporters: usize,
    /// Meshes.
    pub meshes: usize,
    /// Arcs (including `meshbox`es, which arrive as arcs).
    pub arcs: usize,
    /// Cones.
    pub cones: usize,
    /// Spheres.
    pub spheres: usize,
    /// Tetras.
    pub tetras: usize,
}

impl ObstacleCounts {
    /// The count of `kind`.
    pub fn get(&self, kind: ObstacleKind) -> usize {
        match kind {
            ObstacleKind::Wall => self.walls,
            ObstacleKind::Box => self.boxes,
            ObstacleKind::Pyramid => self.pyramids,
            ObstacleKind::Base => self.bases,
            ObstacleKind::Teleporter => self.teleporters,
            ObstacleKind::Mesh => self.meshes,
            ObstacleKind::Arc => self.arcs,
            ObstacleKind::Cone => self.cones,
            ObstacleKind::Sphere => self.spheres,
            ObstacleKind::Tetra => self.tetras,
        }
    }

    /// All obstacles together.
    pub fn total(&self) -> usize {
        ObstacleKind::ALL.iter().map(|&k| self.get(k)).sum()
    }

    fn add(&self, o: &ObstacleCounts) -> ObstacleCounts {
        ObstacleCounts {
            walls: self.walls + o.walls,
            boxes: self.boxes + o.boxes,
            pyramids: self.pyramids + o.pyramids,
            bases: self.bases + o.bases,
            teleporters: self.teleporters + o.teleporters,
            meshes: self.meshes + o.meshes,
            arcs: self.arcs + o.arcs,
            cones: self.cones + o.cones,
            spheres: self.spheres + o.spheres,
            tetras: self.tetras + o.tetras,
        }
    }
}

impl std::fmt::Display for ObstacleCounts {
    /// "4 wall, 24 box, 28 pyramid, 4 base" (kinds with a zero count are left out; "no obstacles" if all are).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut first = true;
        for k in ObstacleKind::ALL {
            let n = self.get(k);
            if n > 0 {
                write!(f, "{}{n} {}", if first { "" } else { ", " }, k.name())?;
                first = false;
            }
        }
        if first {
            f.write_str("no obstacles")?;
        }
        Ok(())
    }
}

/// A dynamic colour (rendering only): four animated channels R, G, B, A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DynamicColor {
    /// Name (may be empty).
    pub name: String,
    /// Red, green, blue, alpha.
    pub channels: [ColorChannel; 4],
}

/// One channel of a [`DynamicColor`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ColorChannel {
    /// Lowest value.
    pub min: f32,
    /// Highest value.
    pub max: f32,
    /// Sinusoids (period, offset, weight).
    pub sinusoids: Vec<[f32; 3]>,
    /// Clamp-ups (period, offset, width).
    pub clamp_ups: Vec<[f32; 3]>,
    /// Clamp-downs (period, offset, width).
    pub clamp_downs: Vec<[f32; 3]>,
    /// A stepped sequence, if any.
    pub sequence: Option<ColorSequence>,
}

/// The stepped sequence of a [`ColorChannel`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColorSequence {
    /// Period in seconds.
    pub period: f32,
    /// Offset in seconds.
    pub offset: f32,
    /// Steps (0 min, 1 mid, 2 max).
    pub values: Vec<u8>,
}

/// A texture matrix (rendering only).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextureMatrix {
    /// Name.
    pub name: String,
    /// Static part (state bit 1): rotation, uShift, vShift, uScale, vScale, uCenter, vCenter.
    pub fixed: Option<[f32; 7]>,
    /// Dynamic part (state bit 2): spin, uShiftFreq, vShiftFreq, uScaleFreq, vScaleFreq, uScale, vScale, uCenter,
    /// vCenter.
    pub dynamic: Option<[f32; 9]>,
}

/// A material (rendering only, but radar/shadow bits may interest a viewer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Material {
    /// Name (often empty for materials the server made up).
    pub name: String,
    /// Mode bits, see [`material_mode`].
    pub mode: u8,
    /// Index of a [`DynamicColor`], `-1` for none.
    pub dynamic_color: i32,
    /// Ambient RGBA.
    pub ambient: [f32; 4],
    /// Diffuse RGBA.
    pub diffuse: [f32; 4],
    /// Specular RGBA.
    pub specular: [f32; 4],
    /// Emission RGBA.
    pub emission: [f32; 4],
    /// Shininess.
    pub shininess: f32,
    /// Alpha threshold.
    pub alpha_threshold: f32,
    /// Texture layers (at most 255).
    pub textures: Vec<MaterialTexture>,
    /// Shader names (at most 255).
    pub shaders: Vec<String>,
}

/// One texture layer of a [`Material`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MaterialTexture {
    /// Texture name or URL.
    pub name: String,
    /// Index of a [`TextureMatrix`], `-1` for none.
    pub matrix: i32,
    /// OpenGL combine mode.
    pub combine_mode: i32,
    /// 1 use alpha, 2 use colour, 4 sphere map.
    pub bits: u8,
}

/// A physics driver: what happens to a tank standing on a surface that references it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhysicsDriver {
    /// Name.
    pub name: String,
    /// Linear velocity added to a tank on it.
    pub linear: Vec3,
    /// Angular velocity in radians per second (the BZW file gives turns per second).
    pub angular_velocity: f32,
    /// Centre of the rotation (x, y).
    pub angular_pos: [f32; 2],
    /// Radial velocity.
    pub radial_velocity: f32,
    /// Centre of the radial motion (x, y).
    pub radial_pos: [f32; 2],
    /// Slide time (slippery surface), seconds.
    pub slide_time: f32,
    /// Non-empty: touching the surface kills, with this message (reason 0x7064).
    pub death_message: String,
}

/// A named list of transformation steps, applied in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MeshTransform {
    /// Name (empty for the anonymous transforms inside obstacles and instances).
    pub name: String,
    /// The steps.
    pub ops: Vec<TransformOp>,
}

impl MeshTransform {
    /// True when the transform has no steps.
    pub fn is_identity(&self) -> bool {
        self.ops.is_empty()
    }
}

/// One step of a [`MeshTransform`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum TransformOp {
    /// Type 0: translate by the vector.
    Shift(Vec3),
    /// Type 1: scale by the factors.
    Scale(Vec3),
    /// Type 2: shear.
    Shear(Vec3),
    /// Type 3: rotate about `axis` by `angle` radians.
    Spin {
        /// Rotation axis.
        axis: Vec3,
        /// Angle in radians.
        angle: f32,
    },
    /// Type 4: apply the named transform at this index of [`WorldDb::transforms`].
    Index(i32),
}

/// A group definition: obstacles by kind plus instances of other groups. The world group has the name "".
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GroupDefinition {
    /// Name ("" for the world group).
    pub name: String,
    /// Kind 0.
    pub walls: Vec<Wall>,
    /// Kind 1.
    pub boxes: Vec<BoxBuilding>,
    /// Kind 2.
    pub pyramids: Vec<Pyramid>,
    /// Kind 3.
    pub bases: Vec<Base>,
    /// Kind 4.
    pub teleporters: Vec<Teleporter>,
    /// Kind 5.
    pub meshes: Vec<Mesh>,
    /// Kind 6.
    pub arcs: Vec<Arc>,
    /// Kind 7.
    pub cones: Vec<Cone>,
    /// Kind 8.
    pub spheres: Vec<Sphere>,
    /// Kind 9.
    pub tetras: Vec<Tetra>,
    /// Placements of named group definitions.
    pub instances: Vec<GroupInstance>,
}

impl GroupDefinition {
    /// Per-kind counts of this group's own obstacles (instances not expanded).
    pub fn counts(&self) -> ObstacleCounts {
        ObstacleCounts {
            walls: self.walls.len(),
            boxes: self.boxes.len(),
            pyramids: self.pyramids.len(),
            bases: self.bases.len(),
            teleporters: self.teleporters.len(),
            meshes: self.meshes.len(),
            arcs: self.arcs.len(),
            cones: self.cones.len(),
            spheres: self.spheres.len(),
            tetras: self.tetras.len(),
        }
    }
}

/// A wall: a vertical rectangle. `pos` is the centre of its bottom edge; it extends `breadth` either side along
/// the local y axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Wall {
    /// Centre of the bottom edge.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Half-length.
    pub breadth: f32,
    /// Height.
    pub height: f32,
    /// See [`obstacle_state`] (only ricochet is used).
    pub state: u8,
}

/// A box (`BoxBuilding` in BZFlag; not called `Box` to keep `std`'s `Box` usable).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BoxBuilding {
    /// Centre of the bottom face.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Half-width, half-breadth, full height.
    pub size: Vec3,
    /// See [`obstacle_state`].
    pub state: u8,
}

/// A pyramid (apex up, or down with [`obstacle_state::FLIP_Z`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pyramid {
    /// Centre of the bottom face.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Half-width, half-breadth, full height.
    pub size: Vec3,
    /// See [`obstacle_state`].
    pub state: u8,
}

impl Pyramid {
    /// True when the apex points down.
    pub fn is_flipped(&self) -> bool {
        self.state & obstacle_state::FLIP_Z != 0
    }
}

/// A team base (a box in non-CTF games).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Base {
    /// Team colour (1 red, 2 green, 3 blue, 4 purple).
    pub team: u16,
    /// Centre of the bottom face.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Half-width, half-breadth, full height.
    pub size: Vec3,
    /// See [`obstacle_state`].
    pub state: u8,
}

/// A teleporter. Its two faces are addressed as `name:f` and `name:b` in [`Link`]s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Teleporter {
    /// Name from the world file (may be empty).
    pub name: String,
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// The world-file size.
    pub size: Vec3,
    /// Border (frame) width.
    pub border: f32,
    /// Horizontal teleporter.
    pub horizontal: bool,
    /// See [`obstacle_state`].
    pub state: u8,
}

macro_rules! passability {
    ($t:ty, $m:ident) => {
        impl $t {
            /// Tanks drive through it.
            pub fn is_drive_through(&self) -> bool {
                self.state & $m::DRIVE_THROUGH != 0
            }
            /// Shots pass through it.
            pub fn is_shoot_through(&self) -> bool {
                self.state & $m::SHOOT_THROUGH != 0
            }
            /// Shots ricochet off it.
            pub fn is_ricochet(&self) -> bool {
                self.state & $m::RICOCHET != 0
            }
        }
    };
}
passability!(BoxBuilding, obstacle_state);
passability!(Pyramid, obstacle_state);
passability!(Base, obstacle_state);
passability!(Teleporter, obstacle_state);
passability!(Mesh, mesh_state);
passability!(MeshFace, face_state);
passability!(Arc, arc_state);
passability!(Cone, arc_state);
passability!(Sphere, sphere_state);
passability!(Tetra, tetra_state);

impl Wall {
    /// Shots ricochet off it.
    pub fn is_ricochet(&self) -> bool {
        self.state & obstacle_state::RICOCHET != 0
    }
}

/// A mesh: polygon faces over a shared vertex list (vertices are already in world/group coordinates).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mesh {
    /// Inside/outside check points.
    pub checks: Vec<MeshCheck>,
    /// Real vertices (the fake vertex of the draw-info trick removed).
    pub vertices: Vec<Vec3>,
    /// Normals.
    pub normals: Vec<Vec3>,
    /// Real texture coordinates (the smuggled draw-info block removed).
    pub texcoords: Vec<[f32; 2]>,
    /// Faces.
    pub faces: Vec<MeshFace>,
    /// See [`mesh_state`].
    pub state: u8,
    /// The fake vertex appended by the server when [`mesh_state::DRAW_INFO`] is set (`(0,0,0)`, or far away for
    /// decorative meshes, to invalidate them on old clients).
    pub fake_vertex: Option<Vec3>,
    /// The raw draw-info block (rendering LODs, padded to 8 bytes) smuggled in the texture coordinates, if any.
    pub draw_info: Option<Vec<u8>>,
}

/// A check point of a [`Mesh`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeshCheck {
    /// 0 inside, 1 outside (2/3 parity variants).
    pub kind: u8,
    /// The point.
    pub point: Vec3,
}

/// A planar polygon of a [`Mesh`]. Indices are checked against the mesh's arrays when parsing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeshFace {
    /// See [`face_state`]; the has-normals / has-texcoords bits agree with the two options below.
    pub state: u8,
    /// Vertex indices into [`Mesh::vertices`].
    pub vertices: Vec<u32>,
    /// Normal indices into [`Mesh::normals`], one per vertex.
    pub normals: Option<Vec<u32>>,
    /// Texture coordinate indices into [`Mesh::texcoords`], one per vertex.
    pub texcoords: Option<Vec<u32>>,
    /// Material index.
    pub material: i32,
    /// Physics driver index, `-1` for none.
    pub phydrv: i32,
}

/// An arc (ring sector). A BZW `meshbox` arrives as an arc with 4 divisions, angle π/4 and size × √2.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arc {
    /// Transform applied after the shape is built.
    pub transform: MeshTransform,
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Radii x, y and height.
    pub size: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Sweep in **degrees**.
    pub sweep_degrees: f32,
    /// Ring thickness as a fraction of the radius (1 = solid).
    pub ratio: f32,
    /// Segments.
    pub divisions: i32,
    /// Physics driver index, `-1` for none.
    pub phydrv: i32,
    /// Texture sizes.
    pub texsize: [f32; 4],
    /// Materials: top, bottom, inside, outside, start face, end face.
    pub materials: [i32; 6],
    /// See [`arc_state`].
    pub state: u8,
}

/// A cone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cone {
    /// Transform applied after the shape is built.
    pub transform: MeshTransform,
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Radii x, y and height.
    pub size: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Sweep in **degrees**.
    pub sweep_degrees: f32,
    /// Segments.
    pub divisions: i32,
    /// Physics driver index, `-1` for none.
    pub phydrv: i32,
    /// Texture sizes.
    pub texsize: [f32; 2],
    /// Materials: edge, bottom, start face, end face.
    pub materials: [i32; 4],
    /// See [`arc_state`].
    pub state: u8,
}

/// A sphere (or hemisphere).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sphere {
    /// Transform applied after the shape is built.
    pub transform: MeshTransform,
    /// Centre.
    pub pos: Vec3,
    /// Radii.
    pub size: Vec3,
    /// Rotation about +z, radians.
    pub angle: f32,
    /// Segments.
    pub divisions: i32,
    /// Physics driver index, `-1` for none.
    pub phydrv: i32,
    /// Texture sizes.
    pub texsize: [f32; 2],
    /// Materials: edge, bottom.
    pub materials: [i32; 2],
    /// See [`sphere_state`].
    pub state: u8,
}

impl Sphere {
    /// Only the upper half.
    pub fn is_hemisphere(&self) -> bool {
        self.state & sphere_state::HEMISPHERE != 0
    }
}

/// A tetrahedron.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tetra {
    /// See [`tetra_state`].
    pub state: u8,
    /// Transform applied to the vertices.
    pub transform: MeshTransform,
    /// The four corners.
    pub vertices: [Vec3; 4],
    /// Per face (bit i of the normal mask): three normals.
    pub normals: [Option<[Vec3; 3]>; 4],
    /// Per face (bit i of the texcoord mask): three (u, v) pairs.
    pub texcoords: [Option<[[f32; 2]; 3]>; 4],
    /// Materials, one per face.
    pub materials: [i32; 4],
}

/// A placement of a named [`GroupDefinition`], with its overrides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupInstance {
    /// Name of the group definition placed.
    pub group_def: String,
    /// Instance name (usually empty).
    pub name: String,
    /// Material remapping (from, to) smuggled after a NUL inside the name string; empty when none was sent.
    pub material_map: Vec<(i32, i32)>,
    /// Transform prepended to everything in the group.
    pub transform: MeshTransform,
    /// See [`instance_bits`]; the four "modify" bits agree with the options below.
    pub bits: u8,
    /// Team override (bases in the group).
    pub team: Option<u16>,
    /// Tint RGBA.
    pub tint: Option<[f32; 4]>,
    /// Physics driver override.
    pub phydrv: Option<i32>,
    /// Material override.
    pub material: Option<i32>,
}

impl GroupInstance {
    /// Everything placed becomes drive-through.
    pub fn is_drive_through(&self) -> bool {
        self.bits & instance_bits::DRIVE_THROUGH != 0
    }
    /// Everything placed becomes shoot-through.
    pub fn is_shoot_through(&self) -> bool {
        self.bits & instance_bits::SHOOT_THROUGH != 0
    }
    /// Everything placed ricochets.
    pub fn is_ricochet(&self) -> bool {
        self.bits & instance_bits::RICOCHET != 0
    }
}

/// A teleporter link by face name (`"name:f"`, `"name:b"`, `*` wildcards as in the world file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Link {
    /// Entry face.
    pub from: String,
    /// Exit face.
    pub to: String,
}

/// A world weapon.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Weapon {
    /// Flag abbreviation of the shot type ("GM", "SW", ...; NUL padding removed, bytes read as Latin-1).
    pub flag: String,
    /// Muzzle position.
    pub pos: Vec3,
    /// Direction, radians.
    pub direction: f32,
    /// Delay before the first shot, seconds.
    pub initial_delay: f32,
    /// Delays between shots, cycled.
    pub delays: Vec<f32>,
}

/// An entry zone (spawn / flag placement area, or a safety zone for team flags).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Zone {
    /// Centre of the bottom.
    pub pos: Vec3,
    /// Half-width, half-breadth, height.
    pub size: Vec3,
    /// Rotation about +z, radians.
    pub rotation: f32,
    /// Flag abbreviations placed here (as [`Weapon::flag`]).
    pub flags: Vec<String>,
    /// Teams that spawn here.
    pub teams: Vec<u16>,
    /// Teams whose dropped flag returns here.
    pub safety: Vec<u16>,
}
