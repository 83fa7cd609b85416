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

use glam::Vec3;

use super::types::*;
use super::WorldError;
use crate::wire::{DecodeError, DecodeErrorKind, DecodeResult, Reader};

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
            _ => WorldError::Database { error: f.error, location },
        }
    }
}

/// The field of the error that [`MAX_GROUP_INSTANCES`] refuses (made a [`WorldError::TooMany`]).
const INSTANCES_FIELD: &str = "group instances (all groups)";

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

/// Largest number of elements reserved up front for any list; the rest grows as elements are actually decoded,
/// so memory stays proportional to what was really parsed whatever the counts claim.
const PREALLOC_BYTES: usize = 64 * 1024;

fn prealloc<T>(n: usize) -> Vec<T> {
    Vec::with_capacity(n.min(PREALLOC_BYTES / std::mem::size_of::<T>().max(1)))
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

/// A "std string" name. Like the client's `nboUnpackStdString`, the name ends at the first NUL.
fn sname(r: &mut Reader<'_>) -> DecodeResult<String> {
    let b = r.sstr_bytes()?;
    Ok(lossy_until_nul(b))
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
fn abbv(r: &mut Reader<'_>) -> DecodeResult<String> {
    let b = r.take(2)?;
    Ok(b.iter().take_while(|&&c| c != 0).map(|&c| char::from(c)).collect())
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
    /// well formed and the database must end exactly at the end of `db`.
    pub fn parse(db: &[u8]) -> Result<WorldDb, WorldError> {
        let mut r = Reader::new(db);
        Ok(database(&mut r)?)
    }
}

fn database(r: &mut Reader<'_>) -> PResult<WorldDb> {
    let n = count_u32(r, "dynamic colour count", MIN_DYNCOLOR).within(|| "dynamic colours".into())?;
    let mut dynamic_colors = prealloc(n);
    for i in 0..n {
        dynamic_colors.push(dynamic_color(r).within(|| format!("dynamic colour #{i}"))?);
    }

    let n = count_u32(r, "texture matrix count", MIN_TEXMAT).within(|| "texture matrices".into())?;
    let mut texture_matrices = prealloc(n);
    for i in 0..n {
        texture_matrices.push(texture_matrix(r).within(|| format!("texture matrix #{i}"))?);
    }

    let n = count_u32(r, "material count", MIN_MATERIAL).within(|| "materials".into())?;
    let mut materials = prealloc(n);
    for i in 0..n {
        materials.push(material(r).within(|| format!("material #{i}"))?);
    }

    let n = count_u32(r, "physics driver count", MIN_PHYDRV).within(|| "physics drivers".into())?;
    let mut physics_drivers = prealloc(n);
    for i in 0..n {
        physics_drivers.push(physics_driver(r).within(|| format!("physics driver #{i}"))?);
    }

    let n = count_u32(r, "transform count", MIN_TRANSFORM).within(|| "transforms".into())?;
    let mut transforms = prealloc(n);
    for i in 0..n {
        transforms.push(transform(r).within(|| format!("transform #{i}"))?);
    }

    let mut instances = 0;
    let world_group = group_definition(r, &mut instances).within(|| "world group".into())?;
    let n = count_u32(r, "group definition count", MIN_GROUPDEF).within(|| "group definitions".into())?;
    let mut group_defs = prealloc(n);
    for i in 0..n {
        group_defs.push(group_definition(r, &mut instances).within(|| format!("group definition #{i}"))?);
    }

    let n = count_u32(r, "link count", MIN_LINK).within(|| "teleporter links".into())?;
    let mut links = prealloc(n);
    for i in 0..n {
        links.push(link(r).within(|| format!("teleporter link #{i}"))?);
    }

    let water_level = f(r).map_err(|e| e.context("world: water level")).within(|| "water".into())?;
    let water_material = if water_level >= 0.0 {
        Some(r.i32().map_err(|e| e.context("world: water material")).within(|| "water".into())?)
    } else {
        None
    };

    let n = count_u32(r, "weapon count", MIN_WEAPON).within(|| "weapons".into())?;
    let mut weapons = prealloc(n);
    for i in 0..n {
        weapons.push(weapon(r).within(|| format!("weapon #{i}"))?);
    }

    let n = count_u32(r, "zone count", MIN_ZONE).within(|| "zones".into())?;
    let mut zones = prealloc(n);
    for i in 0..n {
        zones.push(zone(r).within(|| format!("zone #{i}"))?);
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

fn dynamic_color(r: &mut Reader<'_>) -> DecodeResult<DynamicColor> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<DynamicColor> {
        let name = sname(r)?;
        let mut channels: [ColorChannel; 4] = Default::default();
        for ch in &mut channels {
            ch.min = f(r)?;
            ch.max = f(r)?;
            for list in [&mut ch.sinusoids, &mut ch.clamp_ups, &mut ch.clamp_downs] {
                let n = count_u32(r, "dynamic colour list", 12)?;
                *list = prealloc(n);
                for _ in 0..n {
                    list.push(floats::<3>(r)?);
                }
            }
            let n = r.u32()?;
            if n > 0 {
                let period = f(r)?;
                let offset = f(r)?;
                let n = r.count("dynamic colour sequence", u64::from(n), 1)?;
                let values = r.take(n)?.to_vec();
                ch.sequence = Some(ColorSequence { period, offset, values });
            }
        }
        Ok(DynamicColor { name, channels })
    };
    inner(r).map_err(|e| e.context("world: dynamic colour"))
}

fn texture_matrix(r: &mut Reader<'_>) -> DecodeResult<TextureMatrix> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<TextureMatrix> {
        let name = sname(r)?;
        let bits = r.u8()?;
        let fixed = if bits & 1 != 0 { Some(floats::<7>(r)?) } else { None };
        let dynamic = if bits & 2 != 0 { Some(floats::<9>(r)?) } else { None };
        Ok(TextureMatrix { name, fixed, dynamic })
    };
    inner(r).map_err(|e| e.context("world: texture matrix"))
}

fn material(r: &mut Reader<'_>) -> DecodeResult<Material> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<Material> {
        let name = sname(r)?;
        let mode = r.u8()?;
        let dynamic_color = r.i32()?;
        let ambient = floats::<4>(r)?;
        let diffuse = floats::<4>(r)?;
        let specular = floats::<4>(r)?;
        let emission = floats::<4>(r)?;
        let shininess = f(r)?;
        let alpha_threshold = f(r)?;
        let n = r.u8()?;
        let n = r.count("material texture count", n.into(), 4 + 4 + 4 + 1)?;
        let mut textures = Vec::with_capacity(n);
        for _ in 0..n {
            textures.push(MaterialTexture { name: sname(r)?, matrix: r.i32()?, combine_mode: r.i32()?, bits: r.u8()? });
        }
        let n = r.u8()?;
        let n = r.count("material shader count", n.into(), 4)?;
        let mut shaders = Vec::with_capacity(n);
        for _ in 0..n {
            shaders.push(sname(r)?);
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
    inner(r).map_err(|e| e.context("world: material"))
}

fn physics_driver(r: &mut Reader<'_>) -> DecodeResult<PhysicsDriver> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<PhysicsDriver> {
        Ok(PhysicsDriver {
            name: sname(r)?,
            linear: v3(r)?,
            angular_velocity: f(r)?,
            angular_pos: floats::<2>(r)?,
            radial_velocity: f(r)?,
            radial_pos: floats::<2>(r)?,
            slide_time: f(r)?,
            death_message: sname(r)?,
        })
    };
    inner(r).map_err(|e| e.context("world: physics driver"))
}

/// A `MeshTransform` record (the named ones of section 5 and the anonymous ones inside obstacles/instances).
fn transform(r: &mut Reader<'_>) -> DecodeResult<MeshTransform> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<MeshTransform> {
        let name = sname(r)?;
        let n = count_u32(r, "transform step count", 5)?;
        let mut ops = prealloc(n);
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
    inner(r).map_err(|e| e.context("world: transform"))
}

/// A group definition; `instances` counts the group instance records decoded so far (see
/// [`MAX_GROUP_INSTANCES`]).
fn group_definition(r: &mut Reader<'_>, instances: &mut usize) -> PResult<GroupDefinition> {
    let mut g = GroupDefinition {
        name: sname(r).map_err(|e| e.context("world: group definition"))?,
        ..GroupDefinition::default()
    };
    let gname = g.name.clone();
    let place = move || if gname.is_empty() { String::new() } else { format!("\"{gname}\"") };
    group_body(r, &mut g, instances).map_err(|mut f| {
        let p = place();
        if !p.is_empty() {
            f.path.push(p);
        }
        f
    })?;
    Ok(g)
}

fn group_body(r: &mut Reader<'_>, g: &mut GroupDefinition, instances: &mut usize) -> PResult<()> {
    for kind in ObstacleKind::ALL {
        let field = "obstacle count";
        let min = MIN_OBSTACLE.get(kind as usize).copied().unwrap_or(1);
        let n = count_u32(r, field, min)
            .map_err(|e| e.context("world: group definition"))
            .within(|| format!("{} count", kind.name()))?;
        let at = |i: usize| move || format!("{} #{i}", kind.name());
        macro_rules! list {
            ($v:expr, $parse:expr, $ctx:literal) => {{
                $v = prealloc(n);
                for i in 0..n {
                    $v.push($parse(r).map_err(|e: DecodeError| e.context($ctx)).within(at(i))?);
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
                g.meshes = prealloc(n);
                for i in 0..n {
                    g.meshes.push(mesh(r).within(at(i))?);
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
    g.instances = prealloc(n);
    for i in 0..n {
        g.instances.push(group_instance(r).within(|| format!("group instance #{i}"))?);
    }
    Ok(())
}

fn wall(r: &mut Reader<'_>) -> DecodeResult<Wall> {
    Ok(Wall { pos: v3(r)?, angle: f(r)?, breadth: f(r)?, height: f(r)?, state: r.u8()? })
}

fn box_building(r: &mut Reader<'_>) -> DecodeResult<BoxBuilding> {
    Ok(BoxBuilding { pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn pyramid(r: &mut Reader<'_>) -> DecodeResult<Pyramid> {
    Ok(Pyramid { pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn base(r: &mut Reader<'_>) -> DecodeResult<Base> {
    Ok(Base { team: r.u16()?, pos: v3(r)?, angle: f(r)?, size: v3(r)?, state: r.u8()? })
}

fn teleporter(r: &mut Reader<'_>) -> DecodeResult<Teleporter> {
    Ok(Teleporter {
        name: sname(r)?,
        pos: v3(r)?,
        angle: f(r)?,
        size: v3(r)?,
        border: f(r)?,
        horizontal: r.u8()? != 0,
        state: r.u8()?,
    })
}

fn mesh(r: &mut Reader<'_>) -> PResult<Mesh> {
    const CTX: &str = "world: mesh";
    let c = |e: DecodeError| e.context(CTX);

    let n = count_i32(r, "mesh check count", 13).map_err(c)?;
    let mut checks = prealloc(n);
    for _ in 0..n {
        checks.push(MeshCheck { kind: r.u8().map_err(c)?, point: v3(r).map_err(c)? });
    }
    let n = count_i32(r, "mesh vertex count", 12).map_err(c)?;
    let mut vertices = prealloc(n);
    for _ in 0..n {
        vertices.push(v3(r).map_err(c)?);
    }
    let n = count_i32(r, "mesh normal count", 12).map_err(c)?;
    let mut normals = prealloc(n);
    for _ in 0..n {
        normals.push(v3(r).map_err(c)?);
    }
    // The texture coordinates (and a possibly hidden draw-info block) are resolved after the state byte.
    let tc_count = count_i32(r, "mesh texcoord count", 8).map_err(c)?;
    let tc_at = r.position();
    let tc_bytes = r.take(tc_count * 8).map_err(c)?;

    let nfaces = count_i32(r, "mesh face count", 13).map_err(c)?;
    let mut faces = prealloc(nfaces);
    let mut face_at: Vec<usize> = prealloc(nfaces);
    for j in 0..nfaces {
        face_at.push(r.position());
        faces.push(mesh_face(r).map_err(|e| e.context("world: mesh face")).within(|| format!("face {j}"))?);
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
                    draw_info = Some(block.to_vec());
                }
                _ => return Err(bad(rewind).into()),
            }
        }
    }
    let mut texcoords = prealloc(real_tc);
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

fn mesh_face(r: &mut Reader<'_>) -> DecodeResult<MeshFace> {
    let state = r.u8()?;
    let has_normals = state & face_state::HAS_NORMALS != 0;
    let has_tex = state & face_state::HAS_TEXCOORDS != 0;
    let per_vertex = 4 * (1 + usize::from(has_normals) + usize::from(has_tex));
    let n = count_i32(r, "mesh face vertex count", per_vertex)?;
    let index_list = |r: &mut Reader<'_>, field: &'static str| -> DecodeResult<Vec<u32>> {
        let mut v = Vec::with_capacity(n);
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
    let vertices = index_list(r, "mesh face vertex index")?;
    let normals = if has_normals { Some(index_list(r, "mesh face normal index")?) } else { None };
    let texcoords = if has_tex { Some(index_list(r, "mesh face texcoord index")?) } else { None };
    Ok(MeshFace { state, vertices, normals, texcoords, material: r.i32()?, phydrv: r.i32()? })
}

fn arc(r: &mut Reader<'_>) -> DecodeResult<Arc> {
    Ok(Arc {
        transform: transform(r)?,
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

fn cone(r: &mut Reader<'_>) -> DecodeResult<Cone> {
    Ok(Cone {
        transform: transform(r)?,
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

fn sphere(r: &mut Reader<'_>) -> DecodeResult<Sphere> {
    Ok(Sphere {
        transform: transform(r)?,
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

fn tetra(r: &mut Reader<'_>) -> DecodeResult<Tetra> {
    let state = r.u8()?;
    let transform = transform(r)?;
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

fn group_instance(r: &mut Reader<'_>) -> PResult<GroupInstance> {
    const CTX: &str = "world: group instance";
    let c = |e: DecodeError| e.context(CTX);
    let group_def = sname(r).map_err(c)?;
    // The name is read raw: after a NUL it may carry the material map (i32 n, n × (i32 from, i32 to)).
    let raw_at = r.position() + 4;
    let raw = r.sstr_bytes().map_err(c)?;
    let (inst_name, material_map) = match raw.iter().position(|&b| b == 0) {
        None => (String::from_utf8_lossy(raw).into_owned(), Vec::new()),
        Some(nul) => {
            let tail = raw.get(nul + 1..).unwrap_or(&[]);
            let map = material_map(tail)
                .map_err(|e| e.add_offset(raw_at + nul + 1).context("world: group instance material map"))?;
            (lossy_until_nul(raw), map)
        }
    };
    let transform = transform(r)?;
    let bits = r.u8().map_err(c)?;
    let team = if bits & instance_bits::MODIFY_TEAM != 0 { Some(r.u16().map_err(c)?) } else { None };
    let tint = if bits & instance_bits::MODIFY_COLOR != 0 { Some(floats::<4>(r).map_err(c)?) } else { None };
    let phydrv = if bits & instance_bits::MODIFY_PHYDRV != 0 { Some(r.i32().map_err(c)?) } else { None };
    let material = if bits & instance_bits::MODIFY_MATERIAL != 0 { Some(r.i32().map_err(c)?) } else { None };
    Ok(GroupInstance { group_def, name: inst_name, material_map, transform, bits, team, tint, phydrv, material })
}

fn material_map(tail: &[u8]) -> DecodeResult<Vec<(i32, i32)>> {
    let mut t = Reader::new(tail);
    let n = count_i32(&mut t, "material map count", 8)?;
    let mut map = Vec::with_capacity(n);
    for _ in 0..n {
        map.push((t.i32()?, t.i32()?));
    }
    t.expect_end()?;
    Ok(map)
}

fn link(r: &mut Reader<'_>) -> DecodeResult<Link> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<Link> { Ok(Link { from: sname(r)?, to: sname(r)? }) };
    inner(r).map_err(|e| e.context("world: teleporter link"))
}

fn weapon(r: &mut Reader<'_>) -> DecodeResult<Weapon> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<Weapon> {
        let flag = abbv(r)?;
        let pos = v3(r)?;
        let direction = f(r)?;
        let initial_delay = f(r)?;
        let n = r.u16()?;
        let n = r.count("weapon delay count", n.into(), 4)?;
        let mut delays = Vec::with_capacity(n);
        for _ in 0..n {
            delays.push(f(r)?);
        }
        Ok(Weapon { flag, pos, direction, initial_delay, delays })
    };
    inner(r).map_err(|e| e.context("world: weapon"))
}

fn zone(r: &mut Reader<'_>) -> DecodeResult<Zone> {
    let inner = |r: &mut Reader<'_>| -> DecodeResult<Zone> {
        let pos = v3(r)?;
        let size = v3(r)?;
        let rotation = f(r)?;
        let (nf, nt, ns) = (r.u16()?, r.u16()?, r.u16()?);
        let total = u64::from(nf) + u64::from(nt) + u64::from(ns);
        r.count("zone list length", total, 2)?;
        let mut flags = Vec::with_capacity(nf.into());
        for _ in 0..nf {
            flags.push(abbv(r)?);
        }
        let mut teams = Vec::with_capacity(nt.into());
        for _ in 0..nt {
            teams.push(r.u16()?);
        }
        let mut safety = Vec::with_capacity(ns.into());
        for _ in 0..ns {
            safety.push(r.u16()?);
        }
        Ok(Zone { pos, size, rotation, flags, teams, safety })
    };
    inner(r).map_err(|e| e.context("world: zone"))
}
