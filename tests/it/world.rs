//! The world model against a real bzfs: our own worlds (`testdata/worlds/*.bzw`, every obstacle kind and
//! option) are served by `/usr/games/bzfs -world FILE -cacheout FILE`, downloaded with bzhead's world-only
//! session, and checked three ways: the download is the `-cacheout` blob byte for byte; the teleporter order
//! and link table equal the ones bzfs prints at `-d -d -d -d`; the geometry matches what the world files say
//! (hand-computed heights, hits, normals, teleports).

use std::collections::HashMap;
use std::f32::consts::FRAC_PI_2;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bzhead::bzflag::session::md5_hex;
use bzhead::bzflag::world::{
    parse_blob, report, Geometry, Mask, ObstacleCounts, ObstacleId, ObstacleKind, TankBox, WorldModel,
};
use bzhead::cache::WorldCache;
use bzhead::fetch;
use glam::Vec3;

use std::process::Command;

use crate::support::{free_port, require_program, run_bzhead, run_with_deadline, Bzfs, TempDir, BZFS, WAIT};

fn world_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/worlds").join(name)
}

/// A bzfs serving a world file, with the blob `bzfs -cacheout` wrote for it and that run's log.
struct Served {
    bzfs: Bzfs,
    cacheout: Vec<u8>,
    /// The `-cacheout` run's output at `-d -d -d -d` (teleporter list, link table, MD5).
    log: String,
    _dir: TempDir,
}

fn serve(path: PathBuf) -> Served {
    require_program(BZFS);
    let dir = TempDir::new("world");
    let out = dir.join("world.bin");
    // `-cacheout` writes the blob and exits; -j because worlds with water need jumping for flags on buildings.
    let port = free_port().to_string();
    let mut cmd = Command::new(BZFS);
    cmd.args(["-i", "127.0.0.1", "-p", &port, "-j", "-world"]).arg(&path).arg("-cacheout").arg(&out);
    cmd.args(["-d", "-d", "-d", "-d"]);
    let run = run_with_deadline(&mut cmd, WAIT * 3);
    assert!(!run.timed_out, "{}", run.describe());
    let log = format!("{}{}", run.stdout, run.stderr);
    let cacheout = std::fs::read(&out).unwrap_or_else(|e| panic!("bzfs wrote no {}: {e}\n{log}", out.display()));
    let bzfs = Bzfs::builder().jumping().world(&path).start();
    Served { bzfs, cacheout, log, _dir: dir }
}

/// Downloads with a world-only session, checks it against `-cacheout`, builds the model.
fn download(s: &Served) -> WorldModel {
    let f = fetch::world(s.bzfs.addr(), None, WAIT).unwrap_or_else(|e| panic!("fetch: {e}\n{}", s.bzfs.log()));
    assert!(!f.cached);
    assert_eq!(f.blob, s.cacheout, "the download is the -cacheout blob");
    assert_eq!(f.hash, md5_hex(&s.cacheout));
    assert!(s.log.contains(&format!("MD5 = {}", f.hash)), "bzfs logs the same MD5");
    let db = parse_blob(&f.blob).unwrap();
    WorldModel::build(&db).unwrap()
}

/// The server's teleporter list and link table (`TELE(i): name`, `SRC   2f:  DSTS 3b 4f`) from its log, as
/// names and face numbers.
fn server_links(log: &str) -> (Vec<String>, HashMap<u32, Vec<u32>>) {
    let face = |s: &str| -> u32 {
        let (n, fb) = s.split_at(s.len() - 1);
        n.trim().parse::<u32>().unwrap() * 2 + u32::from(fb == "b")
    };
    let mut names = Vec::new();
    let mut table = HashMap::new();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("TELE(") {
            let (_, name) = rest.split_once("): ").unwrap();
            names.push(name.to_string());
        } else if let Some(rest) = line.strip_prefix("SRC ") {
            let (src, dsts) = rest.split_once(":  DSTS").unwrap();
            table.insert(face(src.trim()), dsts.split_whitespace().map(face).collect());
        }
    }
    (names, table)
}

fn check_links_against_server(m: &WorldModel, log: &str) {
    let (names, table) = server_links(log);
    let ours: Vec<&str> = m.teleporters.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(ours, names, "teleporter order and names as bzfs has them");
    assert_eq!(table.len(), m.links.faces.len());
    for (face, dsts) in &table {
        assert_eq!(m.links.targets(*face), dsts.as_slice(), "face {}", m.face_name(*face));
    }
}

fn near(a: f32, b: f32) -> bool {
    (a - b).abs() < 1.0e-3
}

fn close(a: Vec3, b: Vec3) -> bool {
    (a - b).abs().max_element() < 1.0e-3
}

fn kind(m: &WorldModel, id: ObstacleId) -> ObstacleKind {
    m.obstacle(id).unwrap().kind
}

/// Ground height at (x, y), probing from 30 up.
fn ground(m: &WorldModel, x: f32, y: f32) -> f32 {
    m.ground(Vec3::new(x, y, 30.0)).height
}

#[test]
fn objects_world_from_a_real_bzfs() {
    let s = serve(world_file("objects.bzw"));
    let m = download(&s);
    let sent = ObstacleCounts {
        walls: 4,
        boxes: 6,
        pyramids: 4,
        bases: 4,
        teleporters: 5,
        meshes: 5, // m1..m4 and the box with a transform
        arcs: 7,   // a1..a6 and the meshbox
        cones: 6,  // c1..c4 and two meshpyrs
        spheres: 5,
        tetras: 3,
    };
    assert_eq!(m.counts, sent);
    assert_eq!(m.expanded_counts, sent);
    assert_eq!((m.world_size, m.water_level), (300.0, Some(0.5)));
    assert!(m.under_water(Vec3::new(0.0, 0.0, 0.4)) && !m.under_water(Vec3::new(0.0, 0.0, 0.6)));
    assert_eq!(
        m.physics_drivers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["conveyor", "spinner", "slider", "lava"]
    );
    assert_eq!(m.physics_drivers[3].death_message, "Burned in the lava");
    check_links_against_server(&m, &s.log);
    assert_eq!(m.links.broken, vec![4], "nothing* matches nothing");

    // ---- boxes (y = 100)
    assert!(near(ground(&m, -120.0, 100.0), 10.0));
    let h = m.segment(Vec3::new(-140.0, 100.0, 5.0), Vec3::new(-100.0, 100.0, 5.0), Mask::Shots).unwrap();
    assert!(close(h.point, Vec3::new(-125.0, 100.0, 5.0)) && h.normal == Vec3::new(-1.0, 0.0, 0.0) && !h.ricochet);
    let b1 = h.obstacle;
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(-120.0, 100.0, 0.0), 0.0)), Some(b1));
    // b2 drive-through (rotated 45°): tanks pass and stand on the ground, shots stop at the corner (−100 ∓ 5√2).
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(-100.0, 100.0, 0.0), 0.0)), None);
    assert_eq!(m.ground(Vec3::new(-100.0, 100.0, 30.0)).obstacle, None);
    let h = m.segment(Vec3::new(-110.0, 100.0, 5.0), Vec3::new(-90.0, 100.0, 5.0), Mask::Shots).unwrap();
    assert!(close(h.point, Vec3::new(-100.0 - 5.0 * 2f32.sqrt(), 100.0, 5.0)));
    // b3 shoot-through: tanks collide, shots pass; b4 passable: both pass.
    assert!(m.tank_collides(&TankBox::new(Vec3::new(-80.0, 100.0, 0.0), 0.0)).is_some());
    assert!(m.line_of_sight(Vec3::new(-88.0, 100.0, 5.0), Vec3::new(-72.0, 100.0, 5.0)));
    assert!(m.tank_collides(&TankBox::new(Vec3::new(-60.0, 100.0, 0.0), 0.0)).is_none());
    assert!(m.line_of_sight(Vec3::new(-68.0, 100.0, 5.0), Vec3::new(-52.0, 100.0, 5.0)));
    // b5 ricochet.
    let h = m.segment(Vec3::new(-40.0, 90.0, 5.0), Vec3::new(-40.0, 100.0, 5.0), Mask::Shots).unwrap();
    assert!(h.ricochet && close(h.point, Vec3::new(-40.0, 95.0, 5.0)) && h.normal == Vec3::new(0.0, -1.0, 0.0));
    // b6 floats from 5 to 15: a tank fits under it.
    assert!(near(ground(&m, -20.0, 100.0), 15.0));
    assert_eq!(m.ground(Vec3::new(-20.0, 100.0, 4.0)).height, 0.0);
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(-20.0, 100.0, 0.0), 0.0)), None);
    assert!(m.tank_collides(&TankBox::new(Vec3::new(-20.0, 100.0, 4.0), 0.0)).is_some());
    // b7, a box with a transform, arrived as a 6-faced mesh 3 higher.
    let g = m.ground(Vec3::new(0.0, 100.0, 30.0));
    assert!(near(g.height, 13.0));
    assert_eq!(kind(&m, g.obstacle.unwrap()), ObstacleKind::Mesh);
    assert_eq!(m.obstacle_faces(g.obstacle.unwrap()).len(), 6);

    // ---- pyramids (y = 70)
    assert!(near(ground(&m, -117.0, 70.0), 6.0));
    for x in [-100.0, -80.0] {
        // Negative height and flipz both flip: the flat base is on top at 12.
        let g = m.ground(Vec3::new(x + 3.0, 70.0, 30.0));
        assert!(near(g.height, 12.0) && g.normal == Vec3::Z);
        assert!(m.obstacle(g.obstacle.unwrap()).unwrap().flipped);
        // Under the overhang (4.5 out, 2.25 up the inverted slope) a tank is clear of it only near the ground.
        assert!(m
            .tank_collides(&TankBox {
                pos: Vec3::new(x + 5.5, 70.0, 0.0),
                angle: 0.0,
                half_length: 0.2,
                half_width: 0.2,
                height: 1.0
            })
            .is_none());
    }
    let g = m.ground(Vec3::new(-60.0, 70.0, 30.0));
    assert!(near(g.height, 8.0));
    let h = m.segment(Vec3::new(-60.0, 60.0, 1.0), Vec3::new(-60.0, 70.0, 1.0), Mask::Shots).unwrap();
    assert!(h.ricochet);

    // ---- bases
    let team_at = |x: f32, y: f32| m.base_at(Vec3::new(x, y, 1.0)).map(|b| b.team);
    assert_eq!(team_at(-130.0, -130.0), Some(1));
    assert_eq!(team_at(130.0, -130.0), Some(2));
    assert_eq!(team_at(137.0, 130.0), Some(3)); // rotated 45°: (4.95, −4.95) locally
    assert_eq!(m.base_at(Vec3::new(139.0, 139.0, 1.0)), None); // (12.7, 0) locally: in the bounds, off the diamond
    assert_eq!(team_at(-130.0, 130.0), Some(4));
    assert_eq!(m.base_at(Vec3::new(-130.0, -130.0, 0.0)), None, "on the ground beside the roof");

    // ---- teleporters: tp_a (index 2 in the client order) front face is face 4 and leads to tp_b:b.
    let a = m.teleporter_by_name("tp_a").unwrap();
    let (p0, p1) = (Vec3::new(-110.0, 40.0, 3.0), Vec3::new(-130.0, 40.0, 3.0));
    let h = m.segment(p0, p1, Mask::Shots).unwrap();
    let e = h.teleport.unwrap();
    assert_eq!((e.teleporter, e.face), (a, 2 * a));
    assert!(close(h.point, Vec3::new(-119.44, 40.0, 3.0)));
    let to = m.shot_target(e.face, 1).unwrap();
    assert_eq!(m.face_name(to), "tp_b:b");
    let (p, d, turn) = m.teleport(e.face, to, h.point, p1 - p0).unwrap();
    assert!(close(p, Vec3::new(-100.0, 39.44, 3.0)), "{p:?}");
    assert!(close(d, Vec3::new(0.0, -20.0, 0.0)) && near(turn, FRAC_PI_2));
    // tp_b:* → tp_?:f has three destinations: shots choose by seed, like the client.
    let b_front = 2 * m.teleporter_by_name("tp_b").unwrap();
    let choices: Vec<String> = (0..3).map(|seed| m.face_name(m.shot_target(b_front, seed).unwrap())).collect();
    let expected: Vec<String> = (0u32..3)
        .map(|seed| {
            ["tp_a:f", "tp_b:f", "tp_h:f"][((seed.wrapping_mul(1103515245).wrapping_add(12345)) >> 8) as usize % 3]
                .to_string()
        })
        .collect();
    assert_eq!(choices, expected);
    // The 2-wide border of /t2 (1 × (5 + 4) × (12 + 2)): its posts stand at |y| = 5 + 3 and stop shots.
    let h = m.segment(Vec3::new(-70.0, 48.0, 3.0), Vec3::new(-90.0, 48.0, 3.0), Mask::Shots).unwrap();
    assert!(h.teleport.is_none() && m.obstacle(h.obstacle).unwrap().name.as_deref() == Some("/t2"));
    assert!(near(h.point.x, -79.0));
    // The horizontal tp_h: its field is |x| < 6, |y| < 5, 0 ≤ z ≤ 3, under a 1-thick lid.
    let tp_h = m.teleporter_by_name("tp_h").unwrap();
    let h = m.segment(Vec3::new(-30.0, 40.0, 1.0), Vec3::new(-50.0, 40.0, 1.0), Mask::Shots).unwrap();
    assert_eq!(h.teleport.map(|e| e.teleporter), Some(tp_h));
    let g = m.ground(Vec3::new(-40.0, 40.0, 30.0));
    assert!(near(g.height, 4.0) && g.obstacle == Some(m.teleporters[tp_h as usize].obstacle));

    // ---- meshes (y = 10)
    let g = m.ground(Vec3::new(-120.0, 10.0, 30.0));
    assert!(near(g.height, 6.0) && g.phydrv == Some(0), "m1's top carries the conveyor: {g:?}");
    let m1 = g.obstacle.unwrap();
    assert_eq!(m.obstacle_faces(m1).len(), 6);
    assert_eq!(m.tank_collides(&TankBox::new(Vec3::new(-120.0, 10.0, 0.0), 0.0)), Some(m1), "inside, by its checks");
    assert!(m.mesh_contains(m1, Vec3::new(-120.0, 10.0, 3.0)) && !m.mesh_contains(m1, Vec3::new(-120.0, 10.0, 7.0)));
    // m2: the drive-through triangle is no ground; the ricochet one is.
    assert_eq!(m.ground(Vec3::new(-96.0, 6.0, 30.0)).obstacle, None);
    let g = m.ground(Vec3::new(-104.0, 14.0, 30.0));
    assert!(near(g.height, 4.0));
    let h = m.segment(Vec3::new(-104.0, 14.0, 10.0), Vec3::new(-104.0, 14.0, 0.0), Mask::Shots).unwrap();
    assert!(h.ricochet && h.face.is_some());
    // m3: the ramp turned 90° rises along +y from y 5 to 15; at y 12 it is 3.5 high, normal (0, −1, 2)/√5.
    let g = m.ground(Vec3::new(-80.0, 12.0, 30.0));
    assert!(near(g.height, 3.5) && close(g.normal, Vec3::new(0.0, -1.0, 2.0).normalize()), "{g:?}");
    // m4: shoot-through, slider driver.
    let g = m.ground(Vec3::new(-60.0, 10.0, 30.0));
    assert!(near(g.height, 2.0) && g.phydrv == Some(2));
    assert!(m.line_of_sight(Vec3::new(-60.0, 10.0, 10.0), Vec3::new(-60.0, 10.0, 1.0)));
    // meshbox: 4 high; meshpyr: apex 6 and half-way up its side 3; flipped meshpyr: flat top at 6.
    assert!(near(ground(&m, -40.0, 10.0), 4.0));
    assert!(near(ground(&m, -20.0, 10.0), 6.0) && near(ground(&m, -18.0, 10.0), 3.0));
    assert!(near(ground(&m, 0.0, 10.0), 6.0) && near(ground(&m, 2.0, 10.0), 6.0));

    // ---- arcs (y = −20)
    assert!(near(ground(&m, -120.0, -20.0), 5.0));
    let polar = |cx: f32, deg: f32, r: f32, squish: f32| {
        let (s, c) = deg.to_radians().sin_cos();
        (cx + c * r, -20.0 + s * r * squish)
    };
    let (x, y) = polar(-95.0, 75.0, 4.0, 1.0);
    assert!(near(ground(&m, x, y), 5.0), "a2 covers 30°..120°");
    let (x, y) = polar(-95.0, 0.0, 4.0, 1.0);
    assert_eq!(ground(&m, x, y), 0.0);
    let (x, y) = polar(-70.0, 90.0, 6.0, 0.75);
    assert!(near(ground(&m, x, y), 5.0), "a3's elliptic ring");
    assert_eq!(ground(&m, -70.0, -20.0), 0.0, "a3's hole");
    let (x, y) = polar(-70.0, 315.0, 6.0, 0.75);
    assert_eq!(ground(&m, x, y), 0.0, "a3 sweeps 0°..270°");
    let (x, y) = polar(-45.0, -45.0, 7.0, 1.0);
    let h = m.segment(Vec3::new(x, y, 10.0), Vec3::new(x, y, 0.0), Mask::Shots).unwrap();
    assert!(near(h.point.z, 5.0) && h.ricochet, "a4: a negative sweep covers −90°..0°");
    let (x, y) = polar(-20.0, 0.0, 6.4, 1.0);
    assert_eq!(ground(&m, x, y), 0.0, "a5 is drive-through");
    let h = m.segment(Vec3::new(x, y, 10.0), Vec3::new(x, y, 0.0), Mask::Shots).unwrap();
    assert!(near(h.point.z, 7.0), "a5 is lifted by the named transform");
    assert_eq!(m.faces[h.face.unwrap() as usize].phydrv, Some(1));
    let a6 = m.obstacles.iter().filter(|o| o.kind == ObstacleKind::Arc && o.geometry == Geometry::None).count();
    assert_eq!(a6, 1, "a6 (ratio 0) makes no mesh in the client either");

    // ---- cones (y = −50)
    assert!(near(ground(&m, -120.0, -50.0), 10.0));
    let (s135, c135) = 135f32.to_radians().sin_cos();
    assert!(near(ground(&m, -95.0 + 0.3 * 6.0 * c135, -50.0 + 0.3 * 4.0 * s135), 7.0), "c2 along its 135° edge");
    assert!(near(ground(&m, -70.0, -50.0), 10.0), "a cone's negative height is its absolute value");
    let g = m.ground(Vec3::new(-45.0, -55.0, 30.0));
    assert!((g.height - (3.0 + 10.0 * 30f32.to_radians().cos())).abs() < 0.05, "c4 tilted: {g:?}");
    assert_eq!(g.phydrv, Some(0));

    // ---- spheres (y = −80)
    assert!(near(ground(&m, -120.0, -80.0), 11.0));
    assert!(near(ground(&m, -95.0, -80.0), 3.0));
    assert!(near(ground(&m, -70.0, -80.0), 9.0));
    assert!(near(ground(&m, -68.0, -80.0), 7.0), "the octahedron's face");
    assert!(near(ground(&m, -45.0, -80.0), 10.0), "hemisphere stretched ×2 in z");
    let g = m.ground(Vec3::new(-20.0, -80.0, 30.0));
    assert!(near(g.height, 12.0) && g.phydrv == Some(3));

    // ---- tetras (y = −110)
    for x in [-120.0, -100.0, -80.0] {
        assert!(near(ground(&m, x, -110.0), 8.0), "tetra at {x}");
    }

    // ---- weapons and zones
    assert_eq!(m.weapons.iter().map(|w| w.flag.as_str()).collect::<Vec<_>>(), ["GM", "SW"]);
    assert_eq!(m.weapons[0].delays, vec![10.0, 3.0]);
    assert!(near(m.weapons[0].direction, std::f32::consts::PI));
    assert_eq!(m.zones.len(), 3);
    assert_eq!((m.zones[0].teams.clone(), m.zones[0].safety.clone()), (vec![1, 2], vec![3]));
    assert_eq!(m.zones[1].flags, vec!["GM", "SW"]);

    // The JSON and the SVG of the downloaded world.
    let j = report::to_json(&m, &md5_hex(&s.cacheout));
    assert_eq!(j["counts"]["arc"], 7);
    assert_eq!(j["water_level"], 0.5);
    let svg = report::to_svg(&m);
    assert!(svg.contains(">tp_a<") && svg.contains("#9467bd"));
}

#[test]
fn groups_world_from_a_real_bzfs() {
    let s = serve(world_file("groups.bzw"));
    let m = download(&s);
    let one = ObstacleCounts {
        walls: 4,
        boxes: 2,
        pyramids: 1,
        bases: 1,
        teleporters: 2,
        meshes: 1,
        arcs: 1,
        cones: 1,
        spheres: 1,
        tetras: 1,
    };
    assert_eq!(m.counts, one);
    // Six huts, each with a post.
    let six = ObstacleCounts {
        walls: 4,
        boxes: 12,
        pyramids: 6,
        bases: 6,
        teleporters: 12,
        meshes: 6,
        arcs: 6,
        cones: 6,
        spheres: 6,
        tetras: 6,
    };
    assert_eq!(m.expanded_counts, six);
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    check_links_against_server(&m, &s.log);

    // Paths of the huts' boxes, in expansion order.
    let huts: Vec<(&str, Vec3)> = m
        .obstacles
        .iter()
        .filter(|o| o.kind == ObstacleKind::Box && (o.size.x - 3.0).abs() < 1e-3)
        .map(|o| (&*o.path, o.pos))
        .collect();
    let paths: Vec<&str> = huts.iter().map(|h| h.0).collect();
    assert_eq!(paths, ["/village/0:/hut/0:", "/village/0:east:", "north:/hut/0:", "north:east:", "/hut/0:", "/hut/1:"]);
    let at: Vec<Vec3> = huts.iter().map(|h| h.1).collect();
    for (got, want) in at.iter().zip([
        Vec3::new(-80.0, 50.0, 0.0),
        Vec3::new(-60.0, 50.0, 0.0),
        Vec3::new(-80.0, -50.0, 0.0),
        Vec3::new(-60.0, -50.0, 0.0),
        Vec3::new(50.0, 0.0, 0.0),
        Vec3::new(100.0, 50.0, 1.0),
    ]) {
        assert!(close(*got, want), "{got:?} != {want:?}");
    }

    // Heights: the pyramid's apex on the box is at 5; the north village is scaled ×2 in z but drive-through,
    // so it is no ground (Mask::All still sees its apex at 10); the sheared hut's z axis is 1.118 long.
    assert!(near(ground(&m, -80.0, 50.0), 5.0));
    assert_eq!(ground(&m, -80.0, -50.0), 0.0);
    let h = m.segment(Vec3::new(-80.0, -50.0, 30.0), Vec3::new(-80.0, -50.0, 0.0), Mask::All).unwrap();
    assert!(near(h.point.z, 10.0));
    assert!(m.line_of_sight(Vec3::new(-90.0, -50.0, 2.0), Vec3::new(-70.0, -50.0, 2.0)), "north is shoot-through");
    let h = m.segment(Vec3::new(-90.0, -50.0, 2.0), Vec3::new(-70.0, -50.0, 2.0), Mask::All).unwrap();
    assert!(h.ricochet, "and ricochets");
    let shear_z = (1.0f32 + 0.25).sqrt();
    assert!(near(ground(&m, 51.5, 0.0), 3.0 + 2.0 * shear_z), "{}", ground(&m, 51.5, 0.0));
    assert!(near(ground(&m, 100.0, 50.0), 6.0), "the mirrored hut stands on `xform up`");

    // Bases: the hut's red, east's green, north's blue (the outer team wins).
    let teams: Vec<u16> = m.bases.iter().map(|b| b.team).collect();
    assert_eq!(teams, [1, 2, 3, 3, 1, 1]);
    assert_eq!(m.base_at(Vec3::new(-80.0, 58.0, 0.5)).map(|b| b.team), Some(1));
    assert_eq!(m.base_at(Vec3::new(-68.0, 50.0, 0.5)).map(|b| b.team), Some(2));

    // Drivers: the hut's mesh and arc carry the conveyor, north's the spinner.
    let g = m.ground(Vec3::new(-72.0, 50.0, 30.0)); // the roof mesh of /village/0:/hut/0: (6..10, −2..2 at z 1)
    assert!(near(g.height, 1.0) && g.phydrv == Some(0), "{g:?}");
    let arc_faces: Vec<Option<u32>> = m
        .obstacles
        .iter()
        .enumerate()
        .filter(|(_, o)| o.kind == ObstacleKind::Arc)
        .map(|(i, _)| m.obstacle_faces(ObstacleId(i as u32))[0].phydrv)
        .collect();
    assert_eq!(arc_faces, [Some(0), Some(0), Some(1), Some(1), Some(0), Some(0)]);

    // A shot into /village/0:/hut/0:/post/0:/t0's front comes out of north:east:/post/0:gate's back.
    let t0 = m.teleporter_by_name("/village/0:/hut/0:/post/0:/t0").unwrap();
    let tp = &m.teleporters[t0 as usize];
    assert!(close(tp.pos, Vec3::new(-75.0, 35.0, 0.0)));
    let h = m.segment(tp.pos + Vec3::new(5.0, 0.0, 1.0), tp.pos + Vec3::new(-5.0, 0.0, 1.0), Mask::Shots).unwrap();
    let e = h.teleport.unwrap();
    assert_eq!(e.face, 2 * t0);
    let to = m.shot_target(e.face, 0).unwrap();
    assert_eq!(m.face_name(to), "north:east:/post/0:gate:b");
    let gate = &m.teleporters[(to / 2) as usize];
    let (p, d, _) = m.teleport(e.face, to, h.point, Vec3::new(-1.0, 0.0, 0.0)).unwrap();
    // north:east: is turned 90°, so its gate's back side faces −y; z is scaled by the fields' height ratio.
    assert!(close(gate.pos, Vec3::new(-45.0, -40.0, 0.0)), "{:?}", gate.pos);
    assert!(close(p, Vec3::new(-45.0, -40.5, 2.0)) && close(d, Vec3::new(0.0, -1.0, 0.0)), "{p:?} {d:?}");
}

#[test]
fn the_capture_world_is_served_again_byte_for_byte() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/bzflag");
    let s = serve(shared.join("custom-world.bzw"));
    let captured = std::fs::read(shared.join("02-custom-world.bin")).unwrap();
    assert_eq!(s.cacheout, captured);
    let m = download(&s);
    check_links_against_server(&m, &s.log);
    assert_eq!(m.expanded_counts.boxes, 64);
}

#[test]
fn the_cache_serves_the_second_fetch() {
    let s = serve(world_file("groups.bzw"));
    let dir = TempDir::new("world-cache");
    let first = fetch::world(s.bzfs.addr(), Some(WorldCache::new(dir.path())), WAIT).unwrap();
    assert!(!first.cached);
    let second = fetch::world(s.bzfs.addr(), Some(WorldCache::new(dir.path())), WAIT).unwrap();
    assert!(second.cached);
    assert_eq!(second.blob, s.cacheout);
}

#[test]
fn fetching_from_nowhere_is_a_connect_error() {
    // Port 1 (tcpmux) has no listener; a "free" port could be taken by a parallel test's bzfs.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
    let e = fetch::world(addr, None, Duration::from_secs(5)).unwrap_err();
    assert_eq!(e.code, bzhead::observer::exit::CONNECT, "{e}");
}

/// The built binary. Needs `Cmd::World(WorldArgs)` wired in `src/main.rs`.
#[test]
fn world_command_prints_json_and_draws() {
    let s = serve(world_file("objects.bzw"));
    let dir = TempDir::new("world-cmd");
    let svg = dir.join("map.svg");
    let out =
        run_bzhead(["world", &s.bzfs.host_port(), "--json", "--no-cache", "--svg", svg.to_str().unwrap()], WAIT * 2);
    assert!(out.success(), "{}", out.describe());
    let j: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for key in ["v", "hash", "world_size", "counts", "expanded_counts", "links", "obstacles", "zones", "weapons"] {
        assert!(j.get(key).is_some(), "missing {key}");
    }
    assert_eq!(j["v"], 1);
    assert_eq!(j["hash"], md5_hex(&s.cacheout));
    assert_eq!(j["counts"]["teleporter"], 5);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let blob = dir.join("world.bin");
    std::fs::write(&blob, &s.cacheout).unwrap();
    let out = run_bzhead(["world", "--file", blob.to_str().unwrap()], WAIT);
    assert!(out.success(), "{}", out.describe());
    assert!(out.stdout.contains("tp_a:f -> tp_b:b"), "{}", out.stdout);
    let out = run_bzhead(["world", "127.0.0.1:1"], WAIT);
    assert_eq!(out.code, Some(3), "{}", out.describe());
    let out = run_bzhead(["world"], WAIT);
    assert_eq!(out.code, Some(2), "{}", out.describe());
}

/// Figures for a big world (10,000+ obstacles, served by bzfs): parse and build time, model memory, query
/// throughput. Run with `cargo test --release --test it world::big_world_figures -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check: run it by hand (see the doc comment)"]
fn big_world_figures() {
    let dir = TempDir::new("big-world");
    let path = dir.join("big.bzw");
    std::fs::write(&path, big_world_bzw()).unwrap();
    let t = Instant::now();
    let s = serve(path);
    eprintln!("bzfs loaded the world and wrote the blob in {:?}", t.elapsed());
    let t = Instant::now();
    let f = fetch::world(s.bzfs.addr(), None, WAIT * 6).unwrap();
    eprintln!("download: {} bytes in {:?}", f.blob.len(), t.elapsed());
    assert_eq!(f.blob, s.cacheout);

    let rss0 = rss_kib();
    let n = 20;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(parse_blob(&f.blob).unwrap());
    }
    let parse = t.elapsed() / n;
    let db = parse_blob(&f.blob).unwrap();
    let t = Instant::now();
    for _ in 0..n / 4 {
        std::hint::black_box(WorldModel::build(&db).unwrap());
    }
    let build = t.elapsed() / (n / 4);
    let m = WorldModel::build(&db).unwrap();
    let rss1 = rss_kib();
    eprintln!("sent: {}", m.counts);
    eprintln!(
        "expanded: {} ({} faces, {} solids, {} BVH primitives)",
        m.expanded_counts,
        m.faces.len(),
        m.solids.len(),
        m.primitive_count()
    );
    eprintln!("parse (inflate + decode): {parse:?}; model build (expand, tessellate, BVH): {build:?}");
    eprintln!(
        "model heap ≈ {} KiB; process RSS grew {} KiB while parsing/building",
        m.heap_bytes() / 1024,
        rss1.saturating_sub(rss0)
    );

    // Query throughput: random segments of 0..100 units (shot-length pieces), tank boxes, ground probes.
    let mut seed = 0x9e37_79b9u32;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let half = m.world_size * 0.5;
    let q = 200_000;
    let pts: Vec<(Vec3, Vec3)> = (0..q)
        .map(|_| {
            let a = Vec3::new((rnd() * 2.0 - 1.0) * half, (rnd() * 2.0 - 1.0) * half, rnd() * 10.0);
            let dir = Vec3::new(rnd() * 2.0 - 1.0, rnd() * 2.0 - 1.0, (rnd() - 0.5) * 0.2).normalize_or_zero();
            (a, a + dir * rnd() * 100.0)
        })
        .collect();
    let t = Instant::now();
    let mut hits = 0;
    for (a, b) in &pts {
        hits += usize::from(m.segment(*a, *b, Mask::Shots).is_some());
    }
    let el = t.elapsed();
    eprintln!("segment tests: {:.0}/s ({} of {q} hit something)", q as f64 / el.as_secs_f64(), hits);
    let t = Instant::now();
    let mut coll = 0;
    for (k, (a, _)) in pts.iter().enumerate() {
        coll += usize::from(m.tank_collides(&TankBox::new(Vec3::new(a.x, a.y, 0.0), k as f32)).is_some());
    }
    eprintln!("tank box tests: {:.0}/s ({coll} collide)", q as f64 / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut up = 0.0;
    for (a, _) in &pts {
        up += m.ground(Vec3::new(a.x, a.y, 30.0)).height;
    }
    eprintln!("ground probes: {:.0}/s (mean height {:.2})", q as f64 / t.elapsed().as_secs_f64(), up / q as f32);
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_string()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// A 1600 × 1600 world with 6,000 boxes, 3,000 pyramids, 600 meshboxes, 300 each of arcs, cones, spheres and
/// tetras, 100 teleporters with links, and a group placed 200 times (3 obstacles each): 11,400 obstacles as
/// sent, about 12,000 after expansion.
fn big_world_bzw() -> String {
    use std::fmt::Write;
    let mut s = String::from("world\n  name big\n  size 800\nend\n");
    let mut seed = 12345u32;
    let mut rnd = move || {
        seed = seed.wrapping_mul(1103515245).wrapping_add(12345);
        (seed >> 8) as f32 / (1u32 << 24) as f32
    };
    let pos = |rnd: &mut dyn FnMut() -> f32| (rnd() * 1560.0 - 780.0, rnd() * 1560.0 - 780.0);
    for _ in 0..6000 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(
            s,
            "box\n position {x:.2} {y:.2} 0\n size {:.2} {:.2} {:.2}\n rotation {:.1}\nend",
            1.0 + rnd() * 4.0,
            1.0 + rnd() * 4.0,
            2.0 + rnd() * 10.0,
            rnd() * 180.0
        );
    }
    for _ in 0..3000 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(
            s,
            "pyramid\n position {x:.2} {y:.2} 0\n size {:.2} {:.2} {:.2}\n rotation {:.1}\nend",
            2.0 + rnd() * 4.0,
            2.0 + rnd() * 4.0,
            3.0 + rnd() * 8.0,
            rnd() * 180.0
        );
    }
    for _ in 0..600 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(
            s,
            "meshbox\n position {x:.2} {y:.2} 0\n size 3 3 {:.2}\n rotation {:.1}\nend",
            2.0 + rnd() * 6.0,
            rnd() * 90.0
        );
    }
    for _ in 0..300 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(s, "arc\n position {x:.2} {y:.2} 0\n size 6 6 4\n angle 270\n ratio 0.4\n divisions 12\nend");
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(s, "cone\n position {x:.2} {y:.2} 0\n size 4 4 8\n divisions 16\nend");
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(s, "sphere\n position {x:.2} {y:.2} 3\n radius 3\n divisions 4\nend");
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(
            s,
            "tetra\n vertex {:.2} {:.2} 0\n vertex {:.2} {:.2} 0\n vertex {:.2} {:.2} 0\n vertex {:.2} {:.2} 5\nend",
            x - 3.0,
            y - 3.0,
            x + 3.0,
            y - 3.0,
            x,
            y + 3.0,
            x,
            y
        );
    }
    for i in 0..100 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(
            s,
            "teleporter tele{i}\n position {x:.2} {y:.2} 0\n size 0.56 4.48 10.08\n rotation {:.1}\n border 1.12\nend",
            rnd() * 180.0
        );
    }
    for i in 0..100 {
        let _ = writeln!(s, "link\n from tele{i}:f\n to tele{}:b\nend", (i + 1) % 100);
    }
    s.push_str("define shed\n box\n  position 0 0 0\n  size 2 2 3\n end\n pyramid\n  position 0 0 3\n  size 2 2 2\n end\n base\n  position 0 5 0\n  size 1 1 0.2\n  color 1\n end\nenddef\n");
    for _ in 0..200 {
        let (x, y) = pos(&mut rnd);
        let _ = writeln!(s, "group shed\n spin {:.1} 0 0 1\n shift {x:.2} {y:.2} 0\nend", rnd() * 360.0);
    }
    s
}
