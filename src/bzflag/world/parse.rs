//! Decoder of the decompressed world database (protocol fact sheet §7.2–7.3; BZFlag's `WorldBuilder::unpack` and
//! the `unpack` functions of `src/obstacle` and `src/game`).
//!
//! One [`Reader`] runs over the whole database, so every error offset is an offset into it. Each record parser
//! gives its errors a static context ("world: mesh face"); the callers add where the record sits ("world group,
//! mesh #3, face 2"), which [`WorldError::Database`] carries as its `location`.
//!
//! Where the official client would read out of bounds or allocate from a negative count, this decoder refuses
//! the input instead: negative counts, a negative or misaligned draw-info length, face indices outside the mesh's
//! arrays, a malformed material map, transform types above 4.
//!
//! Memory: every count is checked against the bytes left before anything is allocated for it, no list reserves
//! more than 64 KiB up front whatever its count says, and every heap block the decoded [`WorldDb`] will own (each
//! list, string and byte block) is charged to a [`Budget`] before it is filled: a list when its count is read
//! (its full length, so a count that would not fit is refused before any of its records is decoded), a string
//! once read. Records that are a few bytes on the wire but a hundred in memory (texture matrices, empty meshes)
//! therefore cannot make the decoded world grow beyond the budget ([`MAX_DECODED_SIZE`]).

use glam::Vec3;

use super::types::*;
use super::WorldError;
use crate::wire::{DecodeError, DecodeErrorKind, DecodeResult, Reader, ReaderExt};

/// A decode error plus where it happened, innermost place first.
pub(crate) struct Fail {
    error: DecodeError,
    path: Vec<String>,
}

impl From<DecodeError> for Fail {
    fn from(error: DecodeError) -> Self {
        Fail { error, path: Vec::new() }
    }
}

impl From<Fail> for WorldError {
    fn from(f: Fail) -> Self {
        let location = f.path.iter().rev().map(String::as_str).collect::<Vec<_>>().join(", ");
        match f.error.kind {
            DecodeErrorKind::TooLong { field: INSTANCES_FIELD, max, got } => {
                WorldError::TooMany { what: "group instances", count: got, limit: max, at: f.error.at, location }
            }
            DecodeErrorKind::TooLong { field: BUDGET_FIELD, max, got } => {
                WorldError::OverBudget { needed: got, limit: max, at: f.error.at, location }
            }
            _ => WorldError::Database { error: f.error, location },
        }
    }
}

/// The field of the error that [`MAX_GROUP_INSTANCES`] refuses (made a [`WorldError::TooMany`]).
const INSTANCES_FIELD: &str = "group instances (all groups)";

/// The field of the error that a [`Budget`] refuses with (made a [`WorldError::OverBudget`]).
const BUDGET_FIELD: &str = "decoded size of the world database";

type PResult<T> = Result<T, Fail>;

/// Adds a place (outer to the ones already there) to an error.
trait Within<T> {
    fn within(self, place: impl FnOnce() -> String) -> PResult<T>;
}

impl<T> Within<T> for PResult<T> {
    fn within(self, place: impl FnOnce() -> String) -> PResult<T> {
        self.map_err(|mut f| {
            f.path.push(place());
            f
        })
    }
}

impl<T> Within<T> for DecodeResult<T> {
    fn within(self, place: impl FnOnce() -> String) -> PResult<T> {
        self.map_err(|e| Fail { error: e, path: vec![place()] })
    }
}

/// Default budget for the memory a decoded [`WorldDb`] may own: 128 MiB, twice the cap on the inflated database
/// ([`MAX_WORLD_SIZE`](super::MAX_WORLD_SIZE)).
///
/// Real worlds decode to about 1.5 to 2.5 times their inflated size, as this budget counts it (the captured CTF
/// and custom worlds: 1.6 and 2.2 times; the 10,907-obstacle test world of `world::big_world_figures`, 443 KB
/// inflated: 697 KB, 1.6 times), so this accepts any real world up to tens of MB inflated, 200 times the big
/// test world, while keeping the worst a hostile database can cost under the 256 MiB a `bzhead` process facing
/// one may use: 64 MiB inflated plus 128 MiB decoded. Without it 64 MiB of texture matrices (5 bytes on the
/// wire, 96 in memory) decode to 1.3 GB, and 64 MiB of one-vertex meshes spread over small groups to 400 MB.
/// A budget proportional to the inflated size (say 8 times it) would not bound the worst case any better, as
/// the worst case is the largest inflated size, where it would allow 512 MiB; it would only refuse small worlds
/// sooner, and those cost little anyway.
pub const MAX_DECODED_SIZE: usize = 128 * 1024 * 1024;

/// What a heap block of `bytes` costs: glibc malloc's chunk on 64-bit targets (the payload plus an 8-byte
/// header, rounded up to 16 bytes, at least 32); nothing for an empty `Vec` or `String`, which allocate nothing.
pub(crate) fn heap_cost(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes.saturating_add(8 + 15) & !15).max(32)
    }
}

/// The memory the decoded database may still take: each heap block it will own is charged here (its elements'
/// `size_of` times their count, plus the allocator's overhead, see [`heap_cost`]) before it is filled, and the
/// decode fails with a [`WorldError::OverBudget`] when a charge would go over the limit.
pub(crate) struct Budget {
    limit: usize,
    used: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Budget {
        Budget { limit, used: 0 }
    }

    /// Bytes charged so far.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Charges `bytes`; `at` is the database offset the error names (where the count or string was read).
    fn charge(&mut self, bytes: usize, at: usize) -> DecodeResult<()> {
        let used = self.used.saturating_add(bytes);
        if used > self.limit {
            return Err(DecodeError::new(
                DecodeErrorKind::TooLong { field: BUDGET_FIELD, max: self.limit, got: used },
                at,
            ));
        }
        self.used = used;
        Ok(())
    }

    /// Charges a list of `n` `T`s.
    fn list<T>(&mut self, n: usize, at: usize) -> DecodeResult<()> {
        self.charge(heap_cost(n.saturating_mul(std::mem::size_of::<T>())), at)
    }

    /// Charges a string (what it allocated).
    fn string(&mut self, s: &str, at: usize) -> DecodeResult<()> {
        self.charge(heap_cost(s.len()), at)
    }
}

/// Largest number of elements reserved up front for any list; the rest grows as elements are actually decoded,
/// so memory stays proportional to what was really parsed whatever the counts claim.
const PREALLOC_BYTES: usize = 64 * 1024;

fn prealloc<T>(n: usize) -> Vec<T> {
    Vec::with_capacity(n.min(PREALLOC_BYTES / std::mem::size_of::<T>().max(1)))
}

/// Charges a list of `n` `T`s read at `at` and returns its (partly) reserved `Vec`.
fn list<T>(b: &mut Budget, n: usize, at: usize) -> DecodeResult<Vec<T>> {
    b.list::<T>(n, at)?;
    Ok(prealloc(n))
}

/// Reads a `u32` count and checks it against what is left, `min` bytes per element.
fn count_u32(r: &mut Reader<'_>, field: &'static str, min: usize) -> DecodeResult<usize> {
    let n = r.u32()?;
    r.count(field, u64::from(n), min)
}

/// Reads an `i32` count (negative refused, as the client would `new[]` a negative size) and checks it.
fn count_i32(r: &mut Reader<'_>, field: &'static str, min: usize) -> DecodeResult<usize> {
    let at = r.position();
    let n = r.i32()?;
    let n = u64::try_from(n).map_err(|_| DecodeError::new(DecodeErrorKind::BadValue { field, value: n.into() }, at))?;
    r.count(field, n, min)
}

/// [`count_u32`], then the list of that many `T`s charged to `b` and returned, empty.
fn list_u32<T>(r: &mut Reader<'_>, b: &mut Budget, field: &'static str, min: usize) -> DecodeResult<(usize, Vec<T>)> {
    let at = r.position();
    let n = count_u32(r, field, min)?;
    Ok((n, list(b, n, at)?))
}

/// [`count_i32`], then the list of that many `T`s charged to `b` and returned, empty.
fn list_i32<T>(r: &mut Reader<'_>, b: &mut Budget, field: &'static str, min: usize) -> DecodeResult<(usize, Vec<T>)> {
    let at = r.position();
    let n = count_i32(r, field, min)?;
    Ok((n, list(b, n, at)?))
}

/// A "std string" name, charged to `b`. Like the client's `nboUnpackStdString`, the name ends at the first NUL.
fn sname(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<String> {
    let at = r.position();
    let s = lossy_until_nul(r.sstr_bytes()?);
    b.string(&s, at)?;
    Ok(s)
}

fn lossy_until_nul(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or(b)).into_owned()
}

fn v3(r: &mut Reader<'_>) -> DecodeResult<Vec3> {
    Ok(Vec3::from_array(r.vec3()?))
}

fn f(r: &mut Reader<'_>) -> DecodeResult<f32> {
    r.f32_finite()
}

fn floats<const N: usize>(r: &mut Reader<'_>) -> DecodeResult<[f32; N]> {
    let mut a = [0.0; N];
    for x in &mut a {
        *x = r.f32_finite()?;
    }
    Ok(a)
}

fn ints<const N: usize>(r: &mut Reader<'_>) -> DecodeResult<[i32; N]> {
    let mut a = [0; N];
    for x in &mut a {
        *x = r.i32()?;
    }
    Ok(a)
}

/// A flag abbreviation: exactly 2 bytes, NUL padding removed, each byte one Latin-1 character (lossless for any
/// bytes; real abbreviations are ASCII).
fn abbv(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<String> {
    let at = r.position();
    let s: String = r.take(2)?.iter().take_while(|&&c| c != 0).map(|&c| char::from(c)).collect();
    b.string(&s, at)?;
    Ok(s)
}

// Smallest wire sizes of each record, for the count checks.
const MIN_DYNCOLOR: usize = 4 + 4 * (4 + 4 + 4 + 4 + 4 + 4);
const MIN_TEXMAT: usize = 4 + 1;
const MIN_MATERIAL: usize = 4 + 1 + 4 + 16 * 4 + 4 + 4 + 1 + 1;
const MIN_PHYDRV: usize = 4 + 12 + 7 * 4 + 4;
const MIN_TRANSFORM: usize = 4 + 4;
const MIN_GROUPDEF: usize = 4 + 11 * 4;
const MIN_INSTANCE: usize = 4 + 4 + MIN_TRANSFORM + 1;
const MIN_LINK: usize = 8;
const MIN_WEAPON: usize = 2 + 12 + 4 + 4 + 2;
const MIN_ZONE: usize = 12 + 12 + 4 + 6;
/// Most group instance records a database may hold, over all its groups. Each one is 17 bytes on the wire but
/// about 200 in memory (names, transform, overrides), and any group worth placing holds an obstacle, so a
/// database of more instances than this would expand far beyond [`ModelLimits`](super::ModelLimits) anyway: 64
/// MiB of them would cost over a gigabyte to decode before the model could refuse them. Real worlds place a
/// few hundred groups (the 11,400-obstacle test world places 200); the cap keeps the decoded instances under
/// about 30 MB.
pub const MAX_GROUP_INSTANCES: usize = 1 << 17;

const MIN_OBSTACLE: [usize; 10] = [
    25,                              // wall
    29,                              // box
    29,                              // pyramid
    31,                              // base
    38,                              // teleporter (with an empty name)
    5 * 4 + 1,                       // mesh
    MIN_TRANSFORM + 85,              // arc
    MIN_TRANSFORM + 65,              // cone
    MIN_TRANSFORM + 53,              // sphere
    1 + MIN_TRANSFORM + 48 + 2 + 16, // tetra
];

impl WorldDb {
    /// Decodes a decompressed world database (the zlib payload of the `MsgGetWorld` blob). Every section must be
    /// well formed and the database must end exactly at the end of `db`. The decoded database may take at most
    /// [`MAX_DECODED_SIZE`] bytes of memory.
    pub fn parse(db: &[u8]) -> Result<WorldDb, WorldError> {
        WorldDb::parse_with_budget(db, MAX_DECODED_SIZE)
    }

    /// [`WorldDb::parse`] with another budget for the memory the decoded database may take (its lists, strings
    /// and byte blocks, counted as `size_of` of their elements plus the allocator's overhead per block); a
    /// database that would take more is refused with [`WorldError::OverBudget`] as soon as that is known.
    pub fn parse_with_budget(db: &[u8], budget: usize) -> Result<WorldDb, WorldError> {
        let mut r = Reader::new(db);
        let mut b = Budget::new(budget);
        Ok(database(&mut r, &mut b)?)
    }
}

/// Decodes a database with `b`, for tests that look at what was charged.
#[cfg(test)]
pub(crate) fn parse_charged(db: &[u8], b: &mut Budget) -> Result<WorldDb, WorldError> {
    Ok(database(&mut Reader::new(db), b)?)
}

fn database(r: &mut Reader<'_>, b: &mut Budget) -> PResult<WorldDb> {
    b.charge(std::mem::size_of::<WorldDb>(), 0).within(|| "world database".into())?;
    let (n, mut dynamic_colors) =
        list_u32(r, b, "dynamic colour count", MIN_DYNCOLOR).within(|| "dynamic colours".into())?;
    for i in 0..n {
        dynamic_colors.push(dynamic_color(r, b).within(|| format!("dynamic colour #{i}"))?);
    }

    let (n, mut texture_matrices) =
        list_u32(r, b, "texture matrix count", MIN_TEXMAT).within(|| "texture matrices".into())?;
    for i in 0..n {
        texture_matrices.push(texture_matrix(r, b).within(|| format!("texture matrix #{i}"))?);
    }

    let (n, mut materials) = list_u32(r, b, "material count", MIN_MATERIAL).within(|| "materials".into())?;
    for i in 0..n {
        materials.push(material(r, b).within(|| format!("material #{i}"))?);
    }

    let (n, mut physics_drivers) =
        list_u32(r, b, "physics driver count", MIN_PHYDRV).within(|| "physics drivers".into())?;
    for i in 0..n {
        physics_drivers.push(physics_driver(r, b).within(|| format!("physics driver #{i}"))?);
    }

    let (n, mut transforms) = list_u32(r, b, "transform count", MIN_TRANSFORM).within(|| "transforms".into())?;
    for i in 0..n {
        transforms.push(transform(r, b).within(|| format!("transform #{i}"))?);
    }

    let mut instances = 0;
    let world_group = group_definition(r, b, &mut instances).within(|| "world group".into())?;
    let (n, mut group_defs) =
        list_u32(r, b, "group definition count", MIN_GROUPDEF).within(|| "group definitions".into())?;
    for i in 0..n {
        group_defs.push(group_definition(r, b, &mut instances).within(|| format!("group definition #{i}"))?);
    }

    let (n, mut links) = list_u32(r, b, "link count", MIN_LINK).within(|| "teleporter links".into())?;
    for i in 0..n {
        links.push(link(r, b).within(|| format!("teleporter link #{i}"))?);
    }

    let water_level = f(r).map_err(|e| e.context("world: water level")).within(|| "water".into())?;
    let water_material = if water_level >= 0.0 {
        Some(r.i32().map_err(|e| e.context("world: water material")).within(|| "water".into())?)
    } else {
        None
    };

    let (n, mut weapons) = list_u32(r, b, "weapon count", MIN_WEAPON).within(|| "weapons".into())?;
    for i in 0..n {
        weapons.push(weapon(r, b).within(|| format!("weapon #{i}"))?);
    }

    let (n, mut zones) = list_u32(r, b, "zone count", MIN_ZONE).within(|| "zones".into())?;
    for i in 0..n {
        zones.push(zone(r, b).within(|| format!("zone #{i}"))?);
    }

    r.expect_end().map_err(|e| e.context("world database")).within(|| "end of database".into())?;

    Ok(WorldDb {
        dynamic_colors,
        texture_matrices,
        materials,
        physics_drivers,
        transforms,
        world_group,
        group_defs,
        links,
        water_level,
        water_material,
        weapons,
        zones,
    })
}

fn dynamic_color(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<DynamicColor> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<DynamicColor> {
        let name = sname(r, b)?;
        let mut channels: [ColorChannel; 4] = Default::default();
        for ch in &mut channels {
            ch.min = f(r)?;
            ch.max = f(r)?;
            for slot in [&mut ch.sinusoids, &mut ch.clamp_ups, &mut ch.clamp_downs] {
                let (n, mut list) = list_u32(r, b, "dynamic colour list", 12)?;
                for _ in 0..n {
                    list.push(floats::<3>(r)?);
                }
                *slot = list;
            }
            let n = r.u32()?;
            if n > 0 {
                let period = f(r)?;
                let offset = f(r)?;
                let at = r.position();
                let n = r.count("dynamic colour sequence", u64::from(n), 1)?;
                let bytes = r.take(n)?;
                b.list::<u8>(n, at)?;
                ch.sequence = Some(ColorSequence { period, offset, values: bytes.to_vec() });
            }
        }
        Ok(DynamicColor { name, channels })
    };
    inner(r, b).map_err(|e| e.context("world: dynamic colour"))
}

fn texture_matrix(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<TextureMatrix> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<TextureMatrix> {
        let name = sname(r, b)?;
        let bits = r.u8()?;
        let fixed = if bits & 1 != 0 { Some(floats::<7>(r)?) } else { None };
        let dynamic = if bits & 2 != 0 { Some(floats::<9>(r)?) } else { None };
        Ok(TextureMatrix { name, fixed, dynamic })
    };
    inner(r, b).map_err(|e| e.context("world: texture matrix"))
}

fn material(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Material> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<Material> {
        let name = sname(r, b)?;
        let mode = r.u8()?;
        let dynamic_color = r.i32()?;
        let ambient = floats::<4>(r)?;
        let diffuse = floats::<4>(r)?;
        let specular = floats::<4>(r)?;
        let emission = floats::<4>(r)?;
        let shininess = f(r)?;
        let alpha_threshold = f(r)?;
        let at = r.position();
        let n = r.u8()?;
        let n = r.count("material texture count", n.into(), 4 + 4 + 4 + 1)?;
        let mut textures = list(b, n, at)?;
        for _ in 0..n {
            textures.push(MaterialTexture {
                name: sname(r, b)?,
                matrix: r.i32()?,
                combine_mode: r.i32()?,
                bits: r.u8()?,
            });
        }
        let at = r.position();
        let n = r.u8()?;
        let n = r.count("material shader count", n.into(), 4)?;
        let mut shaders = list(b, n, at)?;
        for _ in 0..n {
            shaders.push(sname(r, b)?);
        }
        Ok(Material {
            name,
            mode,
            dynamic_color,
            ambient,
            diffuse,
            specular,
            emission,
            shininess,
            alpha_threshold,
            textures,
            shaders,
        })
    };
    inner(r, b).map_err(|e| e.context("world: material"))
}

fn physics_driver(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<PhysicsDriver> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<PhysicsDriver> {
        Ok(PhysicsDriver {
            name: sname(r, b)?,
            linear: v3(r)?,
            angular_velocity: f(r)?,
            angular_pos: floats::<2>(r)?,
            radial_velocity: f(r)?,
            radial_pos: floats::<2>(r)?,
            slide_time: f(r)?,
            death_message: sname(r, b)?,
        })
    };
    inner(r, b).map_err(|e| e.context("world: physics driver"))
}

/// A `MeshTransform` record (the named ones of section 5 and the anonymous ones inside obstacles/instances).
fn transform(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<MeshTransform> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<MeshTransform> {
        let name = sname(r, b)?;
        let (n, mut ops) = list_u32(r, b, "transform step count", 5)?;
        for _ in 0..n {
            let at = r.position();
            let op = match r.u8()? {
                0 => TransformOp::Shift(v3(r)?),
                1 => TransformOp::Scale(v3(r)?),
                2 => TransformOp::Shear(v3(r)?),
                3 => TransformOp::Spin { axis: v3(r)?, angle: f(r)? },
                4 => TransformOp::Index(r.i32()?),
                t => {
                    return Err(DecodeError::new(
                        DecodeErrorKind::BadValue { field: "transform type", value: t.into() },
                        at,
                    ))
                }
            };
            ops.push(op);
        }
        Ok(MeshTransform { name, ops })
    };
    inner(r, b).map_err(|e| e.context("world: transform"))
}

/// A group definition; `instances` counts the group instance records decoded so far (see
/// [`MAX_GROUP_INSTANCES`]).
fn group_definition(r: &mut Reader<'_>, b: &mut Budget, instances: &mut usize) -> PResult<GroupDefinition> {
    let mut g = GroupDefinition {
        name: sname(r, b).map_err(|e| e.context("world: group definition"))?,
        ..GroupDefinition::default()
    };
    let gname = g.name.clone();
    let place = move || if gname.is_empty() { String::new() } else { format!("\"{gname}\"") };
    group_body(r, b, &mut g, instances).map_err(|mut f| {
        let p = place();
        if !p.is_empty() {
            f.path.push(p);
        }
        f
    })?;
    Ok(g)
}

fn group_body(r: &mut Reader<'_>, b: &mut Budget, g: &mut GroupDefinition, instances: &mut usize) -> PResult<()> {
    for kind in ObstacleKind::ALL {
        let field = "obstacle count";
        let min = MIN_OBSTACLE.get(kind as usize).copied().unwrap_or(1);
        let count_at = r.position();
        let n = count_u32(r, field, min)
            .map_err(|e| e.context("world: group definition"))
            .within(|| format!("{} count", kind.name()))?;
        let at = |i: usize| move || format!("{} #{i}", kind.name());
        macro_rules! list {
            ($v:expr, $parse:expr, $ctx:literal) => {{
                $v = list(b, n, count_at)
                    .map_err(|e| e.context("world: group definition"))
                    .within(|| format!("{} count", kind.name()))?;
                for i in 0..n {
                    $v.push($parse(r, &mut *b).map_err(|e: DecodeError| e.context($ctx)).within(at(i))?);
                }
            }};
        }
        match kind {
            ObstacleKind::Wall => list!(g.walls, wall, "world: wall"),
            ObstacleKind::Box => list!(g.boxes, box_building, "world: box"),
            ObstacleKind::Pyramid => list!(g.pyramids, pyramid, "world: pyramid"),
            ObstacleKind::Base => list!(g.bases, base, "world: base"),
            ObstacleKind::Teleporter => list!(g.teleporters, teleporter, "world: teleporter"),
            ObstacleKind::Mesh => {
                g.meshes = list(b, n, count_at)
                    .map_err(|e| e.context("world: group definition"))
                    .within(|| format!("{} count", kind.name()))?;
                for i in 0..n {
                    g.meshes.push(mesh(r, b).within(at(i))?);
                }
            }
            ObstacleKind::Arc => list!(g.arcs, arc, "world: arc"),
            ObstacleKind::Cone => list!(g.cones, cone, "world: cone"),
            ObstacleKind::Sphere => list!(g.spheres, sphere, "world: sphere"),
            ObstacleKind::Tetra => list!(g.tetras, tetra, "world: tetra"),
        }
    }
    let at = r.position();
    let n = count_u32(r, "group instance count", MIN_INSTANCE)
        .map_err(|e| e.context("world: group definition"))
        .within(|| "group instance count".into())?;
    // Refused before anything is allocated for them (the count was checked against the bytes left already).
    let total = instances.saturating_add(n);
    if total > MAX_GROUP_INSTANCES {
        return Err(DecodeError::new(
            DecodeErrorKind::TooLong { field: INSTANCES_FIELD, max: MAX_GROUP_INSTANCES, got: total },
            at,
        )
        .context("world: group definition"))
        .within(|| "group instance count".into());
    }
    *instances = total;
    g.instances =
        list(b, n, at).map_err(|e| e.context("world: group definition")).within(|| "group instance count".into())?;
    for i in 0..n {
        g.instances.push(group_instance(r, b).within(|| format!("group instance #{i}"))?);
    }
    Ok(())
}

fn wall(r: &mut Reader<'_>, _: &mut Budget) -> DecodeResult<Wall> {
    Ok(Wall { pos: v3(r)?, angle: f(r)?, breadth: f(r)?, height: f(r)?, state: r.u8()? })
}

fn box_building(r: &mut Reader<'_>, _: &mut Budget) -> DecodeResult<BoxBuilding> {
    Ok(BoxBuilding { pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn pyramid(r: &mut Reader<'_>, _: &mut Budget) -> DecodeResult<Pyramid> {
    Ok(Pyramid { pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn base(r: &mut Reader<'_>, _: &mut Budget) -> DecodeResult<Base> {
    Ok(Base { team: r.u16()?, pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn teleporter(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Teleporter> {
    Ok(Teleporter {
        name: sname(r, b)?,
        pos: v3(r)?,
        angle: f(r)?,
        size: v3(r)?,
        border: f(r)?,
        horizontal: r.u8()? != 0,
        state: r.u8()?,
    })
}

fn mesh(r: &mut Reader<'_>, b: &mut Budget) -> PResult<Mesh> {
    const CTX: &str = "world: mesh";
    let c = |e: DecodeError| e.context(CTX);

    let (n, mut checks) = list_i32(r, b, "mesh check count", 13).map_err(c)?;
    for _ in 0..n {
        checks.push(MeshCheck { kind: r.u8().map_err(c)?, point: v3(r).map_err(c)? });
    }
    let (n, mut vertices) = list_i32(r, b, "mesh vertex count", 12).map_err(c)?;
    for _ in 0..n {
        vertices.push(v3(r).map_err(c)?);
    }
    let (n, mut normals) = list_i32(r, b, "mesh normal count", 12).map_err(c)?;
    for _ in 0..n {
        normals.push(v3(r).map_err(c)?);
    }
    // The texture coordinates (and a possibly hidden draw-info block) are resolved after the state byte; they
    // are charged then.
    let tc_count = count_i32(r, "mesh texcoord count", 8).map_err(c)?;
    let tc_at = r.position();
    let tc_bytes = r.take(tc_count * 8).map_err(c)?;

    let (nfaces, mut faces) = list_i32(r, b, "mesh face count", 13).map_err(c)?;
    // Offsets of the faces, for the index checks below; freed with this frame, so not charged (8 bytes a face,
    // under the 13 each takes on the wire).
    let mut face_at: Vec<usize> = prealloc(nfaces);
    for j in 0..nfaces {
        face_at.push(r.position());
        faces.push(mesh_face(r, b).map_err(|e| e.context("world: mesh face")).within(|| format!("face {j}"))?);
    }
    let state = r.u8().map_err(c)?;

    let mut fake_vertex = None;
    let mut draw_info = None;
    let mut real_tc = tc_count;
    if state & mesh_state::DRAW_INFO != 0 {
        fake_vertex = vertices.pop();
        if tc_count >= 2 {
            // The i32 at the start of the last (u, v) pair is the length to rewind from the end of the array.
            let len_at = (tc_count - 1) * 8;
            let mut lr = Reader::new(tc_bytes.get(len_at..).unwrap_or(&[]));
            let rewind = lr.i32().map_err(|e| e.add_offset(tc_at + len_at)).map_err(c)?;
            let bad = |value: i32| {
                DecodeError::new(
                    DecodeErrorKind::BadValue { field: "mesh draw-info length", value: value.into() },
                    tc_at + len_at,
                )
                .context(CTX)
            };
            let total = tc_count * 8;
            match usize::try_from(rewind) {
                // Longer than the array: the client ignores it and takes every pair as a real texcoord.
                Ok(len) if len > total => {}
                Ok(len) if len >= 8 && len % 8 == 0 => {
                    real_tc = tc_count - len / 8;
                    let block = tc_bytes.get(total - len..total - 8).ok_or_else(|| bad(rewind))?;
                    b.list::<u8>(block.len(), tc_at + total - len).map_err(c)?;
                    draw_info = Some(block.to_vec());
                }
                _ => return Err(bad(rewind).into()),
            }
        }
    }
    let mut texcoords = list(b, real_tc, tc_at).map_err(c)?;
    let mut tr = Reader::new(tc_bytes);
    for _ in 0..real_tc {
        texcoords.push(floats::<2>(&mut tr).map_err(|e| e.add_offset(tc_at)).map_err(c)?);
    }

    // Indices must point into the (real) arrays: later geometry code indexes with them.
    for (j, (face, &at)) in faces.iter().zip(&face_at).enumerate() {
        let check = |list: Option<&Vec<u32>>, len: usize, field: &'static str| -> PResult<()> {
            if let Some(bad) = list.into_iter().flatten().find(|&&i| i as usize >= len) {
                return Err(Fail::from(
                    DecodeError::new(DecodeErrorKind::BadValue { field, value: i64::from(*bad) }, at)
                        .context("world: mesh face"),
                ))
                .within(|| format!("face {j}"));
            }
            Ok(())
        };
        check(Some(&face.vertices), vertices.len(), "mesh face vertex index")?;
        check(face.normals.as_ref(), normals.len(), "mesh face normal index")?;
        check(face.texcoords.as_ref(), texcoords.len(), "mesh face texcoord index")?;
    }

    Ok(Mesh { checks, vertices, normals, texcoords, faces, state, fake_vertex, draw_info })
}

fn mesh_face(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<MeshFace> {
    let state = r.u8()?;
    let has_normals = state & face_state::HAS_NORMALS != 0;
    let has_tex = state & face_state::HAS_TEXCOORDS != 0;
    let per_vertex = 4 * (1 + usize::from(has_normals) + usize::from(has_tex));
    let count_at = r.position();
    let n = count_i32(r, "mesh face vertex count", per_vertex)?;
    let index_list = |r: &mut Reader<'_>, b: &mut Budget, field: &'static str| -> DecodeResult<Vec<u32>> {
        let mut v = list(b, n, count_at)?;
        for _ in 0..n {
            let at = r.position();
            let i = r.i32()?;
            v.push(
                u32::try_from(i)
                    .map_err(|_| DecodeError::new(DecodeErrorKind::BadValue { field, value: i.into() }, at))?,
            );
        }
        Ok(v)
    };
    let vertices = index_list(r, b, "mesh face vertex index")?;
    let normals = if has_normals { Some(index_list(r, b, "mesh face normal index")?) } else { None };
    let texcoords = if has_tex { Some(index_list(r, b, "mesh face texcoord index")?) } else { None };
    Ok(MeshFace { state, vertices, normals, texcoords, material: r.i32()?, phydrv: r.i32()? })
}

fn arc(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Arc> {
    Ok(Arc {
        transform: transform(r, b)?,
        pos: v3(r)?,
        size: v3(r)?,
        angle: f(r)?,
        sweep_degrees: f(r)?,
        ratio: f(r)?,
        divisions: r.i32()?,
        phydrv: r.i32()?,
        texsize: floats::<4>(r)?,
        materials: ints::<6>(r)?,
        state: r.u8()?,
    })
}

fn cone(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Cone> {
    Ok(Cone {
        transform: transform(r, b)?,
        pos: v3(r)?,
        size: v3(r)?,
        angle: f(r)?,
        sweep_degrees: f(r)?,
        divisions: r.i32()?,
        phydrv: r.i32()?,
        texsize: floats::<2>(r)?,
        materials: ints::<4>(r)?,
        state: r.u8()?,
    })
}

fn sphere(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Sphere> {
    Ok(Sphere {
        transform: transform(r, b)?,
        pos: v3(r)?,
        size: v3(r)?,
        angle: f(r)?,
        divisions: r.i32()?,
        phydrv: r.i32()?,
        texsize: floats::<2>(r)?,
        materials: ints::<2>(r)?,
        state: r.u8()?,
    })
}

fn tetra(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Tetra> {
    let state = r.u8()?;
    let transform = transform(r, b)?;
    let vertices = [v3(r)?, v3(r)?, v3(r)?, v3(r)?];
    let mask = r.u8()?;
    let mut normals = [None; 4];
    for (i, n) in normals.iter_mut().enumerate() {
        if mask & (1 << i) != 0 {
            *n = Some([v3(r)?, v3(r)?, v3(r)?]);
        }
    }
    let mask = r.u8()?;
    let mut texcoords = [None; 4];
    for (i, t) in texcoords.iter_mut().enumerate() {
        if mask & (1 << i) != 0 {
            *t = Some([floats::<2>(r)?, floats::<2>(r)?, floats::<2>(r)?]);
        }
    }
    Ok(Tetra { state, transform, vertices, normals, texcoords, materials: ints::<4>(r)? })
}

fn group_instance(r: &mut Reader<'_>, b: &mut Budget) -> PResult<GroupInstance> {
    const CTX: &str = "world: group instance";
    let c = |e: DecodeError| e.context(CTX);
    let group_def = sname(r, b).map_err(c)?;
    // The name is read raw: after a NUL it may carry the material map (i32 n, n × (i32 from, i32 to)).
    let raw_at = r.position() + 4;
    let raw = r.sstr_bytes().map_err(c)?;
    let (inst_name, material_map) = match raw.iter().position(|&c| c == 0) {
        None => (String::from_utf8_lossy(raw).into_owned(), Vec::new()),
        Some(nul) => {
            let tail = raw.get(nul + 1..).unwrap_or(&[]);
            let map = material_map(tail, b)
                .map_err(|e| e.add_offset(raw_at + nul + 1).context("world: group instance material map"))?;
            (lossy_until_nul(raw), map)
        }
    };
    b.string(&inst_name, raw_at - 4).map_err(c)?;
    let transform = transform(r, b)?;
    let bits = r.u8().map_err(c)?;
    let team = if bits & instance_bits::MODIFY_TEAM != 0 { Some(r.u16().map_err(c)?) } else { None };
    let tint = if bits & instance_bits::MODIFY_COLOR != 0 { Some(floats::<4>(r).map_err(c)?) } else { None };
    let phydrv = if bits & instance_bits::MODIFY_PHYDRV != 0 { Some(r.i32().map_err(c)?) } else { None };
    let material = if bits & instance_bits::MODIFY_MATERIAL != 0 { Some(r.i32().map_err(c)?) } else { None };
    Ok(GroupInstance { group_def, name: inst_name, material_map, transform, bits, team, tint, phydrv, material })
}

fn material_map(tail: &[u8], b: &mut Budget) -> DecodeResult<Vec<(i32, i32)>> {
    let mut t = Reader::new(tail);
    let (n, mut map) = list_i32(&mut t, b, "material map count", 8)?;
    for _ in 0..n {
        map.push((t.i32()?, t.i32()?));
    }
    t.expect_end()?;
    Ok(map)
}

fn link(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Link> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<Link> {
        Ok(Link { from: sname(r, b)?, to: sname(r, b)? })
    };
    inner(r, b).map_err(|e| e.context("world: teleporter link"))
}

fn weapon(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Weapon> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<Weapon> {
        let flag = abbv(r, b)?;
        let pos = v3(r)?;
        let direction = f(r)?;
        let initial_delay = f(r)?;
        let at = r.position();
        let n = r.u16()?;
        let n = r.count("weapon delay count", n.into(), 4)?;
        let mut delays = list(b, n, at)?;
        for _ in 0..n {
            delays.push(f(r)?);
        }
        Ok(Weapon { flag, pos, direction, initial_delay, delays })
    };
    inner(r, b).map_err(|e| e.context("world: weapon"))
}

fn zone(r: &mut Reader<'_>, b: &mut Budget) -> DecodeResult<Zone> {
    let inner = |r: &mut Reader<'_>, b: &mut Budget| -> DecodeResult<Zone> {
        let pos = v3(r)?;
        let size = v3(r)?;
        let rotation = f(r)?;
        let at = r.position();
        let (nf, nt, ns) = (r.u16()?, r.u16()?, r.u16()?);
        let total = u64::from(nf) + u64::from(nt) + u64::from(ns);
        r.count("zone list length", total, 2)?;
        let mut flags = list(b, nf.into(), at)?;
        for _ in 0..nf {
            flags.push(abbv(r, b)?);
        }
        let mut teams = list(b, nt.into(), at + 2)?;
        for _ in 0..nt {
            teams.push(r.u16()?);
        }
        let mut safety = list(b, ns.into(), at + 4)?;
        for _ in 0..ns {
            safety.push(r.u16()?);
        }
        Ok(Zone { pos, size, rotation, flags, teams, safety })
    };
    inner(r, b).map_err(|e| e.context("world: zone"))
}
