//! The model and its queries on the captured worlds and on hand-built databases, against hand-computed
//! geometry.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use glam::Vec3;

use super::*;

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/");

fn capture_model(name: &str) -> WorldModel {
    let blob = std::fs::read(format!("{CAPTURES}{name}")).unwrap();
    WorldModel::build(&parse_blob(&blob).unwrap()).unwrap()
}

fn close(a: Vec3, b: Vec3, eps: f32) -> bool {
    (a - b).abs().max_element() < eps
}

fn kind_of(m: &WorldModel, id: ObstacleId) -> ObstacleKind {
    m.obstacle(id).unwrap().kind
}

#[test]
fn ctf_capture_model() {
    let m = capture_model("01-ctf-world.bin");
    assert_eq!(m.expanded_counts, m.counts);
    assert_eq!(m.world_size, 800.0);
    assert_eq!(m.walls.len(), 4);
    assert_eq!(m.solids.len(), 24 + 28 + 4);
    assert!(m.faces.is_empty() && m.teleporters.is_empty() && m.warnings.is_empty());
    let teams: Vec<u16> = m.bases.iter().map(|b| b.team).collect();
    assert_eq!(teams, vec![1, 2, 3, 4]);
    // Standing on the red base (-370, 0), 30 × 30, flat at z 0.
    assert_eq!(m.base_at(Vec3::new(-360.0, 10.0, 0.0)).map(|b| b.team), Some(1));
    assert!(m.base_at(Vec3::new(-360.0, 10.0, 1.0)).is_none());
    assert!(m.base_at(Vec3::new(-330.0, 10.0, 0.0)).is_none());
    // The outer walls: a segment leaving the world stops on the wall plane at x = 400.
    let h = m.segment(Vec3::new(390.0, 0.0, 1.0), Vec3::new(410.0, 0.0, 1.0), Mask::Shots).unwrap();
    assert_eq!(kind_of(&m, h.obstacle), ObstacleKind::Wall);
    assert!(close(h.point, Vec3::new(400.0, 0.0, 1.0), 1e-3) && close(h.normal, Vec3::new(-1.0, 0.0, 0.0), 1e-5));
    assert!(!h.above_wall);
    let h = m.segment(Vec3::new(390.0, 0.0, 10.0), Vec3::new(410.0, 0.0, 10.0), Mask::Shots).unwrap();
    assert!(h.above_wall, "6.15 high");
    // A tank poking through the wall collides with it.
    let t = TankBox::new(Vec3::new(398.0, 0.0, 0.0), 0.0);
    assert_eq!(m.tank_collides(&t).map(|id| kind_of(&m, id)), Some(ObstacleKind::Wall));
    // Every box of the generated world stops a shot fired at its centre from 50 units west (if nothing else
    // is in the way, the box is what is hit, on its face).
    for s in &m.solids {
        let o = m.obstacle(s.obstacle).unwrap();
        if o.kind != ObstacleKind::Box {
            continue;
        }
        let c = o.pos + Vec3::new(0.0, 0.0, o.size.z * 0.5);
        let h = m.segment(c - Vec3::new(60.0, 0.0, 0.0), c, Mask::Shots).unwrap();
        assert!(h.point.x <= c.x - o.size.x.min(o.size.y) + 1e-3, "{:?} {:?}", h, o);
        assert!(m.tank_collides(&TankBox::new(o.pos, 0.3)).is_some());
        assert_eq!(m.ground(o.pos + Vec3::new(0.0, 0.0, o.size.z + 1.0)).height, o.pos.z + o.size.z);
    }
}

#[test]
fn custom_capture_model() {
    let m = capture_model("02-custom-world.bin");
    // The BZW `size 200` is the half-size: walls at ±200, MsgGameSettings says worldSize 400.
    assert_eq!(m.world_size, 400.0);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    // Two instances of "hut" (a box and a pyramid) are added to the 62 boxes and 2 pyramids of the world group.
    let e = m.expanded_counts;
    assert_eq!((e.walls, e.boxes, e.pyramids, e.bases, e.teleporters), (4, 64, 4, 2, 2));
    assert_eq!((e.meshes, e.arcs, e.cones, e.spheres, e.tetras), (1, 2, 1, 1, 1));
    // Faces: tri mesh 4, meshbox (a 4-division pie) 12, arc ring 8·4+2, cone 24, sphere 8·36, tetra 4.
    assert_eq!(m.faces.len(), 4 + 12 + 34 + 24 + 288 + 4);
    let paths: Vec<&str> = m.obstacles.iter().filter(|o| !o.path.is_empty()).map(|o| &*o.path).collect();
    assert_eq!(paths, vec!["/hut/0:", "/hut/0:", "/hut/1:", "/hut/1:"]);

    // The plain box at (50, 0), 10 × 5 half sizes, 8 high, rotated 30°: a segment along y = 0 at z = 4 enters
    // it at x = 50 − 5/sin 30° = 40 through its +y' side, whose normal is (−sin 30°, cos 30°, 0).
    let h = m.segment(Vec3::new(0.0, 0.0, 4.0), Vec3::new(100.0, 0.0, 4.0), Mask::Shots).unwrap();
    assert_eq!(kind_of(&m, h.obstacle), ObstacleKind::Box);
    assert!(close(h.point, Vec3::new(40.0, 0.0, 4.0), 1e-3), "{h:?}");
    assert!(close(h.normal, Vec3::new(-0.5, 3f32.sqrt() / 2.0, 0.0), 1e-5));
    assert!((h.t - 0.4).abs() < 1e-5);
    // A tank inside it collides, one on its roof stands at 8.
    let plain = h.obstacle;
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(50.0, 0.0, 0.0), 1.0)), Some(plain));
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(50.0, 0.0, 8.0), 1.0)), None);
    assert_eq!(m.ground(Vec3::new(50.0, 0.0, 8.5)).height, 8.0);
    assert_eq!(m.ground(Vec3::new(50.0, 0.0, 8.5)).obstacle, Some(plain));

    // The drive-through box at (−60, −60): tanks pass, shots do not.
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(-60.0, -60.0, 0.0), 0.0)), None);
    let h = m.segment(Vec3::new(-60.0, -80.0, 5.0), Vec3::new(-60.0, -40.0, 5.0), Mask::Shots).unwrap();
    assert!(close(h.point, Vec3::new(-60.0, -66.0, 5.0), 1e-3));
    assert!(m.segment(Vec3::new(-60.0, -80.0, 5.0), Vec3::new(-60.0, -40.0, 5.0), Mask::Tanks).is_none());

    // Pyramid at (−50, 20), 8 × 8 × 12: straight down at 4 from the centre the slope is at 12·(1 − 4/8) = 6,
    // normal ∝ (12, 0, 8).
    let g = m.ground(Vec3::new(-46.0, 20.0, 20.0));
    assert!((g.height - 6.0).abs() < 1e-4 && close(g.normal, Vec3::new(12.0, 0.0, 8.0).normalize(), 1e-5));
    // The flipped pyramid at (−50, 50), rotated 45°: its flat base is on top at z 10.
    let g = m.ground(Vec3::new(-47.879, 52.121, 20.0));
    assert!((g.height - 10.0).abs() < 1e-4 && g.normal == Vec3::Z);
    assert!(m.obstacle(g.obstacle.unwrap()).unwrap().flipped);

    // The meshbox (an arc with 4 divisions): its top at 4 carries the conveyor.
    let g = m.ground(Vec3::new(20.0, -40.0, 10.0));
    assert!((g.height - 4.0).abs() < 1e-5 && g.phydrv == Some(0), "{g:?}");
    assert_eq!(kind_of(&m, g.obstacle.unwrap()), ObstacleKind::Arc);
    // A tank wholly inside it touches no face; the mesh's inside check point says it is in the solid.
    let inside = TankBox::new(Vec3::new(20.0, -40.0, 0.0), 10f32.to_radians());
    assert_eq!(m.tank_collides(&inside).map(|id| kind_of(&m, id)), Some(ObstacleKind::Arc));
    assert!(m.mesh_contains(g.obstacle.unwrap(), Vec3::new(21.0, -41.0, 3.0)));
    assert!(!m.mesh_contains(g.obstacle.unwrap(), Vec3::new(21.0, -41.0, 5.0)));
    // The ring arc at (60, −60) (outer radius 10, inner 5, 270° from 0°) is judged by its outside points.
    let ring = m.ground(Vec3::new(60.0, -52.0, 10.0)).obstacle.unwrap();
    assert_eq!(kind_of(&m, ring), ObstacleKind::Arc);
    assert!(m.mesh_contains(ring, Vec3::new(60.0, -52.0, 2.0)));
    assert!(!m.mesh_contains(ring, Vec3::new(60.0, -60.0, 2.0)), "the hole");
    assert!(!m.mesh_contains(ring, Vec3::new(67.0, -67.0, 2.0)), "the missing quarter");
    // Its sides are the 10°-rotated square of half-size 4: along its local x axis the side is 4 from the centre.
    let ax = Vec3::new(10f32.to_radians().cos(), 10f32.to_radians().sin(), 0.0);
    let c = Vec3::new(20.0, -40.0, 2.0);
    let h = m.segment(c + ax * 10.0, c, Mask::Shots).unwrap();
    assert!(close(h.point, c + ax * 4.0, 1e-3) && close(h.normal, ax, 1e-4), "{h:?}");

    // Cone at (−20, 80), radius 6, 10 high, 12 divisions: along the 15° direction the facet's foot is
    // 6·cos 15° from the axis, so 3 out the surface is at 10·(1 − 3 / (6 cos 15°)).
    let dir = Vec3::new(15f32.to_radians().cos(), 15f32.to_radians().sin(), 0.0);
    let g = m.ground(Vec3::new(-20.0, 80.0, 20.0) + dir * 3.0);
    assert!((g.height - 10.0 * (1.0 - 3.0 / (6.0 * 15f32.to_radians().cos()))).abs() < 1e-3, "{g:?}");

    // Sphere at (30, 70, 5), radius 4, 6 divisions: the pole at 9, and an equator vertex at (26, 70, 5).
    assert!((m.ground(Vec3::new(30.0, 70.0, 20.0)).height - 9.0).abs() < 1e-3);
    let h = m.segment(Vec3::new(20.0, 70.0, 5.0), Vec3::new(40.0, 70.0, 5.0), Mask::Shots).unwrap();
    assert!(close(h.point, Vec3::new(26.0, 70.0, 5.0), 1e-3), "{h:?}");
    assert_eq!(kind_of(&m, h.obstacle), ObstacleKind::Sphere);

    // Tetra: apex (−25, −25, 8) over the edge y = −30; 3 from that edge (apex 5 away) the face is at 4.8.
    let g = m.ground(Vec3::new(-25.0, -27.0, 10.0));
    assert!((g.height - 4.8).abs() < 1e-4 && kind_of(&m, g.obstacle.unwrap()) == ObstacleKind::Tetra);

    // The raw mesh "tri": apex at (75, 35, 6).
    assert!((m.ground(Vec3::new(75.0, 35.0, 10.0)).height - 6.0).abs() < 1e-3);

    // The huts: box 3 high, pyramid 2 more. The second one is turned 45° and moved to (40, −10).
    assert!((m.ground(Vec3::new(-10.0, 40.0, 10.0)).height - 5.0).abs() < 1e-4);
    assert!((m.ground(Vec3::new(40.0, -10.0, 10.0)).height - 5.0).abs() < 1e-4);
    // 2.5 east of its centre is (1.77, −1.77) locally: the pyramid face there is 2·(1 − 1.77/3) above 3.
    let g = m.ground(Vec3::new(42.5, -10.0, 10.0));
    assert!((g.height - (3.0 + 2.0 * (1.0 - 2.5 * FRAC_PI_4.cos() / 3.0))).abs() < 1e-4, "{g:?}");
    assert_eq!(m.obstacle(g.obstacle.unwrap()).unwrap().path.as_ref(), "/hut/1:");
    // The rotated box of the second hut reaches 3·√2 along x.
    assert!(m
        .tank_collides(&TankBox {
            pos: Vec3::new(40.0 + 4.0, -10.0, 0.0),
            angle: 0.0,
            half_length: 0.1,
            half_width: 0.1,
            height: 1.0
        })
        .is_some());
    assert!(m
        .tank_collides(&TankBox {
            pos: Vec3::new(40.0 + 4.4, -10.0, 0.0),
            angle: 0.0,
            half_length: 0.1,
            half_width: 0.1,
            height: 1.0
        })
        .is_none());

    // Bases and zones.
    assert_eq!(m.base_at(Vec3::new(85.0, 75.0, 0.5)).map(|b| b.team), Some(1));
    assert_eq!(m.base_at(Vec3::new(-85.0, -75.0, 0.45)).map(|b| b.team), Some(2));
    assert_eq!(m.zones.len(), 2);
    assert_eq!(m.weapons[0].flag, "GM");
}

#[test]
fn custom_capture_teleporters() {
    let m = capture_model("02-custom-world.bin");
    let names: Vec<&str> = m.teleporters.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["alpha", "beta"]);
    // alpha:f → beta:b; beta:* → alpha:f; alpha:b is unlinked and leads to alpha:f.
    assert_eq!(m.links.targets(0), &[3]);
    assert_eq!(m.links.targets(1), &[0]);
    assert!(!m.links.faces[1].explicit);
    assert_eq!(m.links.targets(2), &[0]);
    assert_eq!(m.links.targets(3), &[0]);
    // The frame is widened: 0.56 × (4.48 + 2.24) × (10.08 + 1.12).
    let alpha = &m.teleporters[0];
    assert!(close(alpha.size, Vec3::new(0.56, 6.72, 11.2), 1e-5));

    // A shot along −x at z 3 enters alpha's front face at x = 0.56.
    let (a, b) = (Vec3::new(10.0, 60.0, 3.0), Vec3::new(-10.0, 60.0, 3.0));
    let h = m.segment(a, b, Mask::Shots).unwrap();
    let entry = h.teleport.unwrap();
    assert_eq!((entry.teleporter, entry.face), (0, 0));
    assert!(close(h.point, Vec3::new(0.56, 60.0, 3.0), 1e-4) && (h.t - 0.472).abs() < 1e-5);
    assert!(!m.line_of_sight(a, b));
    // It comes out of beta's back (beta is turned 90°: its back side faces −y), moving −y.
    let to = m.shot_target(entry.face, 0x0100).unwrap();
    assert_eq!(m.face_name(to), "beta:b");
    let (p, d, turn) = m.teleport(entry.face, to, h.point, b - a).unwrap();
    assert!(close(p, Vec3::new(0.0, -60.56, 3.0), 1e-4), "{p:?}");
    assert!(close(d, Vec3::new(0.0, -20.0, 0.0), 1e-4) && (turn - FRAC_PI_2).abs() < 1e-6);
    // Entering beta from its back (−y side, moving +y) leads to alpha:f: out in front of alpha, moving +x.
    let h = m.segment(Vec3::new(1.0, -70.0, 2.0), Vec3::new(1.0, -50.0, 2.0), Mask::Shots).unwrap();
    let e = h.teleport.unwrap();
    assert_eq!(m.face_name(e.face), "beta:b");
    let (p, d, _) = m.teleport(e.face, m.shot_target(e.face, 7).unwrap(), h.point, Vec3::Y).unwrap();
    assert!(close(p, Vec3::new(0.56, 60.0 - 1.0, 2.0), 1e-4), "{p:?}");
    assert!(close(d, Vec3::X, 1e-5));

    // The posts (0.56 half-size at |y| = 6.72 − 0.56) and the crossbar (z 10.08 to 11.2) stop shots.
    let h = m.segment(Vec3::new(10.0, 66.16, 3.0), Vec3::new(-10.0, 66.16, 3.0), Mask::Shots).unwrap();
    assert!(h.teleport.is_none() && close(h.point, Vec3::new(0.56, 66.16, 3.0), 1e-4) && h.normal == Vec3::X);
    assert_eq!(h.obstacle, alpha.obstacle);
    let h = m.segment(Vec3::new(10.0, 60.0, 10.5), Vec3::new(-10.0, 60.0, 10.5), Mask::Shots).unwrap();
    assert!(h.teleport.is_none() && h.obstacle == alpha.obstacle);
    // Just above the crossbar the shot flies on.
    assert!(m.segment(Vec3::new(10.0, 60.0, 11.3), Vec3::new(-10.0, 60.0, 11.3), Mask::Shots).is_none());
    // A tank in the field does not collide; one on a post does.
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(0.0, 60.0, 0.0), FRAC_PI_2)), None);
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(0.0, 66.16, 0.0), 0.0)), Some(alpha.obstacle));
}

// ------------------------------------------------------------------------------------------------------------
// Hand-built databases.

fn empty_db() -> WorldDb {
    WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: Vec::new(),
        transforms: Vec::new(),
        world_group: GroupDefinition::default(),
        group_defs: Vec::new(),
        links: Vec::new(),
        water_level: -1.0,
        water_material: None,
        weapons: Vec::new(),
        zones: Vec::new(),
    }
}

fn xf(ops: Vec<TransformOp>) -> MeshTransform {
    MeshTransform { name: String::new(), ops }
}

fn instance(def: &str, name: &str, ops: Vec<TransformOp>) -> GroupInstance {
    GroupInstance {
        group_def: def.into(),
        name: name.into(),
        material_map: Vec::new(),
        transform: xf(ops),
        bits: 0,
        team: None,
        tint: None,
        phydrv: None,
        material: None,
    }
}

fn tele(name: &str, pos: Vec3, angle: f32, height: f32) -> Teleporter {
    Teleporter {
        name: name.into(),
        pos,
        angle,
        size: Vec3::new(0.56, 4.48, height),
        border: 1.12,
        horizontal: false,
        state: 0,
    }
}

fn phydrv(name: &str) -> PhysicsDriver {
    PhysicsDriver {
        name: name.into(),
        linear: Vec3::X,
        angular_velocity: 0.0,
        angular_pos: [0.0; 2],
        radial_velocity: 0.0,
        radial_pos: [0.0; 2],
        slide_time: 0.0,
        death_message: String::new(),
    }
}

/// A unit-ish square mesh (one upward face) at height `z`, with driver `d`.
fn square_mesh(z: f32, d: i32) -> Mesh {
    Mesh {
        checks: Vec::new(),
        vertices: vec![
            Vec3::new(-1.0, -1.0, z),
            Vec3::new(1.0, -1.0, z),
            Vec3::new(1.0, 1.0, z),
            Vec3::new(-1.0, 1.0, z),
        ],
        normals: Vec::new(),
        texcoords: Vec::new(),
        faces: vec![MeshFace {
            state: 0,
            vertices: vec![0, 1, 2, 3],
            normals: None,
            texcoords: None,
            material: -1,
            phydrv: d,
        }],
        state: 0,
        fake_vertex: None,
        draw_info: None,
    }
}

#[test]
fn nested_groups_transform_name_and_override() {
    let mut db = empty_db();
    db.physics_drivers = vec![phydrv("a"), phydrv("b")];
    let inner = GroupDefinition {
        name: "inner".into(),
        teleporters: vec![tele("", Vec3::ZERO, 0.0, 10.08)],
        bases: vec![Base {
            team: 1,
            pos: Vec3::new(10.0, 0.0, 0.0),
            angle: 0.0,
            size: Vec3::new(5.0, 5.0, 1.0),
            state: 1,
        }],
        meshes: vec![square_mesh(2.0, 0), square_mesh(4.0, -1)],
        ..GroupDefinition::default()
    };
    let outer = GroupDefinition {
        name: "outer".into(),
        instances: vec![
            instance("inner", "", vec![TransformOp::Shift(Vec3::new(100.0, 0.0, 0.0))]),
            GroupInstance {
                phydrv: Some(1),
                bits: instance_bits::MODIFY_PHYDRV,
                ..instance("inner", "bob", vec![TransformOp::Spin { axis: Vec3::Z, angle: FRAC_PI_2 }])
            },
            instance("nowhere", "", vec![]),
        ],
        ..GroupDefinition::default()
    };
    let looping = GroupDefinition {
        name: "loop".into(),
        boxes: vec![BoxBuilding { pos: Vec3::ZERO, angle: 0.0, size: Vec3::ONE, state: 0 }],
        instances: vec![instance("loop", "", vec![TransformOp::Shift(Vec3::X)])],
        ..GroupDefinition::default()
    };
    db.group_defs = vec![inner, outer, looping];
    db.world_group.instances = vec![
        GroupInstance {
            team: Some(3),
            bits: instance_bits::MODIFY_TEAM | instance_bits::DRIVE_THROUGH,
            ..instance("outer", "", vec![TransformOp::Shift(Vec3::new(0.0, 50.0, 0.0))])
        },
        instance("loop", "", vec![]),
    ];
    db.world_group.teleporters = vec![tele("", Vec3::new(-50.0, 0.0, 0.0), 0.0, 10.08)];
    db.links = vec![
        Link { from: "/outer/*:/t0:f".into(), to: "*bob*:b".into() },
        Link { from: "/t0:*".into(), to: "/outer/0:/inner/0:/t0:B".into() },
    ];
    let m = WorldModel::build(&db).unwrap();

    let names: Vec<&str> = m.teleporters.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["/t0", "/outer/0:/inner/0:/t0", "/outer/0:bob:/t0"]);
    assert!(close(m.teleporters[1].pos, Vec3::new(100.0, 50.0, 0.0), 1e-4));
    assert!(close(m.teleporters[2].pos, Vec3::new(0.0, 50.0, 0.0), 1e-4));
    assert!((m.teleporters[2].angle - FRAC_PI_2).abs() < 1e-5);
    // Links by glob: both instance teleporters' fronts lead to bob's back; the world one to the first back.
    assert_eq!(m.links.targets(2), &[5]);
    assert_eq!(m.links.targets(4), &[5]);
    assert_eq!(m.links.targets(0), &[3]);
    assert_eq!(m.links.targets(1), &[3]);
    assert_eq!(m.links.targets(5), &[4]); // unlinked: opposite face

    // Bases: the outer team override wins; drive-through from the top instance.
    assert_eq!(m.bases.len(), 2);
    assert!(m.bases.iter().all(|b| b.team == 3));
    assert!(close(m.bases[0].pos, Vec3::new(110.0, 50.0, 0.0), 1e-4));
    assert!(close(m.bases[1].pos, Vec3::new(0.0, 60.0, 0.0), 1e-4));
    assert!(m.obstacle(m.bases[0].obstacle).unwrap().passable.drive_through);

    // Physics drivers: "bob" replaces the driver of faces that had one.
    let g = m.ground(Vec3::new(100.0, 50.0, 3.0));
    assert_eq!((g.height, g.obstacle), (0.0, None), "drive-through faces are not ground");
    let faces: Vec<(f32, Option<u32>)> =
        m.faces.iter().map(|f| ((m.face_vertices(f)[0].z * 1e3).round() / 1e3, f.phydrv)).collect();
    assert_eq!(faces, vec![(2.0, Some(0)), (4.0, None), (2.0, Some(1)), (4.0, None)]);

    // The self-instantiating group yields one box; the missing group is reported.
    assert_eq!(m.expanded_counts.boxes, 1);
    assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
    assert!(m.warnings.iter().any(|w| w.contains("nowhere")));
    assert!(m.warnings.iter().any(|w| w.contains("itself")));
    assert_eq!(m.counts.teleporters, 2);
    assert_eq!(m.expanded_counts.teleporters, 3);
}

#[test]
fn mirroring_transforms_keep_faces_outward_and_flip_pyramids() {
    let mut db = empty_db();
    db.group_defs = vec![GroupDefinition {
        name: "g".into(),
        meshes: vec![square_mesh(2.0, -1)],
        pyramids: vec![Pyramid {
            pos: Vec3::new(20.0, 0.0, 0.0),
            angle: 0.0,
            size: Vec3::new(2.0, 2.0, 4.0),
            state: 0,
        }],
        tetras: vec![Tetra {
            state: 0,
            transform: MeshTransform::default(),
            vertices: [
                Vec3::new(10.0, 0.0, 0.0),
                Vec3::new(12.0, 0.0, 0.0),
                Vec3::new(10.0, 2.0, 0.0),
                Vec3::new(10.0, 0.0, 2.0),
            ],
            normals: [None; 4],
            texcoords: [None; 4],
            materials: [-1; 4],
        }],
        ..GroupDefinition::default()
    }];
    // Mirror in x (the square's face stays up, the tetra stays closed and outward).
    db.world_group.instances = vec![instance("g", "", vec![TransformOp::Scale(Vec3::new(-1.0, 1.0, 1.0))])];
    let m = WorldModel::build(&db).unwrap();
    assert_eq!(m.ground(Vec3::new(0.5, 0.5, 3.0)).height, 2.0);
    let tet: Vec<_> = m.faces.iter().skip(1).collect();
    assert_eq!(tet.len(), 4);
    let center = Vec3::new(-10.5, 0.5, 0.5);
    for f in tet {
        assert!(f.plane.distance(center) < 0.0, "tetra face {f:?} faces inwards");
    }
    // Upside down (z scale −1, then up by 4): the pyramid's position moves down by its height, it is flipped,
    // so it occupies z 0 to 4 with its base on top.
    db.world_group.instances = vec![instance(
        "g",
        "",
        vec![TransformOp::Scale(Vec3::new(1.0, 1.0, -1.0)), TransformOp::Shift(Vec3::new(0.0, 0.0, 4.0))],
    )];
    let m = WorldModel::build(&db).unwrap();
    let p = m.obstacles.iter().find(|o| o.kind == ObstacleKind::Pyramid).unwrap();
    assert!(p.flipped);
    assert!(close(p.pos, Vec3::new(20.0, 0.0, 0.0), 1e-5), "{:?}", p.pos);
    // Its flat base is up at 4 now, the mirrored square still faces up at 2.
    let g = m.ground(Vec3::new(21.5, 1.5, 6.0));
    assert!((g.height - 4.0).abs() < 1e-5 && g.normal == Vec3::Z);
}

#[test]
fn client_teleporter_order_and_face_numbers() {
    // Three teleporters of different heights in file order: the client's (and bzfs') sort puts the tallest
    // first; names (and /t<n>) follow the file order.
    let mut db = empty_db();
    db.world_group.teleporters = vec![
        tele("", Vec3::new(0.0, 0.0, 0.0), 0.0, 5.0),
        tele("", Vec3::new(20.0, 0.0, 0.0), 0.0, 20.0),
        tele("", Vec3::new(40.0, 0.0, 0.0), 0.0, 10.0),
    ];
    let m = WorldModel::build(&db).unwrap();
    let names: Vec<&str> = m.teleporters.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["/t1", "/t2", "/t0"]);
    let h = m.segment(Vec3::new(30.0, 0.0, 1.0), Vec3::new(10.0, 0.0, 1.0), Mask::Shots).unwrap();
    assert_eq!(h.teleport.map(|e| e.face), Some(0)); // /t1:f is face 0
    assert_eq!(m.face_name(0), "/t1:f");
}

#[test]
fn hostile_values_are_bounded() {
    let mut db = empty_db();
    // A sphere with a billion divisions, an arc with none, a degenerate face, a huge scale.
    db.world_group.spheres = vec![Sphere {
        transform: MeshTransform::default(),
        pos: Vec3::ZERO,
        size: Vec3::ONE,
        angle: 0.0,
        divisions: 1_000_000_000,
        phydrv: 77,
        texsize: [-4.0, -4.0],
        materials: [-1; 2],
        state: 0,
    }];
    db.world_group.arcs = vec![Arc {
        transform: xf(vec![TransformOp::Index(5)]),
        pos: Vec3::ZERO,
        size: Vec3::ONE,
        angle: 0.0,
        sweep_degrees: 360.0,
        ratio: 0.5,
        divisions: -3,
        phydrv: -1,
        texsize: [1.0; 4],
        materials: [-1; 6],
        state: 0,
    }];
    let mut bad = square_mesh(0.0, -1);
    bad.faces[0].vertices = vec![0, 0, 0];
    let mut huge = square_mesh(0.0, -1);
    huge.faces[0].vertices = (0..2000).map(|i| i % 4).collect();
    db.world_group.meshes = vec![bad, huge];
    db.group_defs = vec![GroupDefinition {
        name: "g".into(),
        boxes: vec![BoxBuilding { pos: Vec3::ONE, angle: 0.0, size: Vec3::ONE, state: 0 }],
        ..GroupDefinition::default()
    }];
    db.world_group.instances = vec![instance("g", "", vec![TransformOp::Scale(Vec3::splat(1.0e30))])];
    let m = WorldModel::build(&db).unwrap();
    assert_eq!(m.faces.len(), 8 * 128 * 128, "divisions clamped");
    assert!(m.faces.iter().all(|f| f.phydrv.is_none()), "driver 77 does not exist");
    assert_eq!(m.expanded_counts.boxes, 0, "scaled beyond 1e30");
    assert!(m.warnings.len() >= 3);
    assert!(m.warnings.iter().any(|w| w.contains("2000 corners")), "{:?}", m.warnings);
    assert_eq!(m.obstacles.iter().filter(|o| o.geometry == Geometry::None).count(), 1);

    // Exponential instancing hits the limit with a typed error.
    let mut db = empty_db();
    let mut defs = vec![GroupDefinition {
        name: "g0".into(),
        boxes: vec![BoxBuilding { pos: Vec3::ZERO, angle: 0.0, size: Vec3::ONE, state: 0 }],
        ..GroupDefinition::default()
    }];
    for k in 1..30 {
        defs.push(GroupDefinition {
            name: format!("g{k}"),
            instances: vec![instance(&format!("g{}", k - 1), "", vec![]); 2],
            ..GroupDefinition::default()
        });
    }
    db.group_defs = defs;
    db.world_group.instances = vec![instance("g29", "", vec![])];
    let limits = ModelLimits { max_obstacles: 10_000, ..ModelLimits::default() };
    // Counted before anything is expanded: 2^29 boxes (the count ignores the depth limit, 29 levels are within).
    let e = WorldModel::build_with(&db, limits).unwrap_err();
    assert_eq!(e, ModelError::WouldExpand { what: "obstacles", count: 1 << 29, limit: 10_000 });
    assert_eq!(e.to_string(), "group instances would expand the world to 536870912 obstacles, over the limit of 10000");
    // Within the count: built.
    db.world_group.instances = vec![instance("g13", "", vec![])];
    assert_eq!(WorldModel::build_with(&db, limits).unwrap().expanded_counts.boxes, 1 << 13);
}

#[test]
fn expansion_is_counted_before_it_is_made() {
    let boxes = |n: usize| vec![BoxBuilding { pos: Vec3::ZERO, angle: 0.0, size: Vec3::ONE, state: 0 }; n];
    // Nested ten deep, ten instances each, a box at the bottom: 10^10 boxes, saturating nowhere near u64.
    let mut db = empty_db();
    for d in 0..9 {
        db.group_defs.push(GroupDefinition {
            name: format!("g{d}"),
            instances: vec![instance(&format!("g{}", d + 1), "", vec![]); 10],
            ..GroupDefinition::default()
        });
    }
    db.group_defs.push(GroupDefinition { name: "g9".into(), boxes: boxes(1), ..GroupDefinition::default() });
    db.world_group.instances = vec![instance("g0", "", vec![]); 10];
    let t = std::time::Instant::now();
    let e = WorldModel::build(&db).unwrap_err();
    assert_eq!(e, ModelError::WouldExpand { what: "obstacles", count: 10_000_000_000, limit: 1 << 20 });
    assert!(t.elapsed() < std::time::Duration::from_secs(5), "refused without expanding");

    // 64 levels of 1,000 instances each overflow u64: saturated, and said so.
    let mut db = empty_db();
    for d in 0..64 {
        db.group_defs.push(GroupDefinition {
            name: format!("g{d}"),
            boxes: boxes(1),
            instances: vec![instance(&format!("g{}", d + 1), "", vec![]); 1000],
            ..GroupDefinition::default()
        });
    }
    db.world_group.instances = vec![instance("g0", "", vec![])];
    let e = WorldModel::build(&db).unwrap_err();
    assert_eq!(e, ModelError::WouldExpand { what: "obstacles", count: u64::MAX, limit: 1 << 20 });
    assert!(e.to_string().contains("to more than 18446744073709551615 obstacles"), "{e}");

    // Faces and corners are counted too: a 6-face mesh placed 200,000 times.
    let mut db = empty_db();
    let mut g = GroupDefinition { name: "m".into(), ..GroupDefinition::default() };
    g.meshes = vec![square_mesh(0.0, -1); 6];
    db.group_defs.push(g);
    db.world_group.instances = vec![instance("m", "", vec![]); 200_000];
    let limits = ModelLimits { max_obstacles: usize::MAX, ..ModelLimits::default() };
    assert_eq!(
        WorldModel::build_with(&db, limits).unwrap_err(),
        ModelError::WouldExpand { what: "faces", count: 1_200_000, limit: 1 << 20 }
    );

    // Missing definitions and groups placing themselves (skipped by the expansion) count nothing; the count
    // matches what is built. A definition reached twice is counted once and used twice.
    let mut db = empty_db();
    db.group_defs.push(GroupDefinition {
        name: "a".into(),
        boxes: boxes(2),
        instances: vec![instance("a", "", vec![]), instance("nowhere", "", vec![]), instance("b", "", vec![])],
        ..GroupDefinition::default()
    });
    db.group_defs.push(GroupDefinition {
        name: "b".into(),
        boxes: boxes(3),
        instances: vec![instance("b", "", vec![])],
        ..GroupDefinition::default()
    });
    db.world_group.instances = vec![instance("a", "", vec![]), instance("b", "", vec![]), instance("a", "", vec![])];
    let limits = ModelLimits { max_obstacles: 13, ..ModelLimits::default() };
    assert_eq!(WorldModel::build_with(&db, limits).unwrap().expanded_counts.boxes, 13);
    let limits = ModelLimits { max_obstacles: 12, ..ModelLimits::default() };
    assert_eq!(
        WorldModel::build_with(&db, limits).unwrap_err(),
        ModelError::WouldExpand { what: "obstacles", count: 13, limit: 12 }
    );
}

#[test]
fn mutated_captures_build_and_answer_without_panicking() {
    let blob = std::fs::read(format!("{CAPTURES}02-custom-world-inner.bin")).unwrap();
    let mut seed = 0x2545_f491u32;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let mut built = 0;
    for _ in 0..1500 {
        let mut b = blob.clone();
        for _ in 0..1 + rnd() % 4 {
            let at = rnd() as usize % b.len();
            b[at] = rnd() as u8;
        }
        let Ok(db) = WorldDb::parse(&b) else { continue };
        let Ok(m) = WorldModel::build(&db) else { continue };
        built += 1;
        for k in 0..20 {
            let a = Vec3::new((rnd() % 400) as f32 - 200.0, (rnd() % 400) as f32 - 200.0, (rnd() % 20) as f32);
            let c = Vec3::new((rnd() % 400) as f32 - 200.0, (rnd() % 400) as f32 - 200.0, (rnd() % 20) as f32);
            let _ = m.segment(a, c, Mask::Shots);
            let _ = m.tank_collides(&TankBox::new(a, k as f32));
            let _ = m.ground(c);
            let _ = m.base_at(a);
            let opts = ShotOptions { ricochet: k % 2 == 0, through: k % 5 == 0, shot_id: k, muzzle_front: 4.42 };
            let _ = m.shot_path(a, (c - a) * 3.0, 3.5, &opts);
        }
        let _ = report::to_json(&m, "x");
        let _ = report::to_svg(&m);
    }
    assert!(built > 100, "only {built} mutations parsed");
}

#[test]
fn reports_render() {
    let m = capture_model("02-custom-world.bin");
    let j = report::to_json(&m, "707a875438a38b7be00d1df1e3b63dbd");
    assert_eq!(j["v"], 1);
    assert_eq!(j["world_size"], 400.0);
    assert_eq!(j["counts"]["box"], 63);
    assert_eq!(j["expanded_counts"]["box"], 64);
    assert_eq!(j["links"][0]["to"][0], "beta:b");
    assert_eq!(j["obstacles"].as_array().unwrap().len(), m.obstacles.len());
    assert_eq!(j["zones"][0]["teams"], serde_json::json!([1, 2]));
    assert_eq!(j["weapons"][0]["flag"], "GM");
    let text = report::to_json_string(&m, "h");
    assert!(text.starts_with(r#"{"v":1,"hash":"h","world_size":400.0,"counts":{"wall":4,"box":63,"#), "{text}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), report::to_json(&m, "h"));
    let s = report::summary(&m, "x", 2127);
    assert!(s.contains("alpha:f -> beta:b"), "{s}");
    assert!(s.contains("red     1 at (80, 80, 0)"), "{s}");
    let svg = report::to_svg(&m);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("#d62728") && svg.contains(">alpha<"));
    let _ = PI;
}
