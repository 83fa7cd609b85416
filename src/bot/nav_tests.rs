//! Hand-built worlds and the two captured ones: blocked rules, paths, distance fields, and our real tank
//! driven along the paths.

use std::f32::consts::{FRAC_PI_2, PI};
use std::time::Instant;

use glam::{Vec2, Vec3};

use super::*;
use crate::bzflag::play::{Controls, Tank};
use crate::bzflag::world::{
    parse_blob, BoxBuilding, GroupDefinition, Link, Mesh, MeshFace, PhysicsDriver, Teleporter, Wall, WorldDb,
    WorldModel,
};

const CAPTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/bzflag/");

fn capture(name: &str) -> WorldModel {
    let blob = std::fs::read(format!("{CAPTURES}{name}")).expect("capture");
    WorldModel::build(&parse_blob(&blob).expect("parse")).expect("model")
}

fn phys() -> Physics {
    Physics::default()
}

fn boxb(x: f32, y: f32, w: f32, b: f32, h: f32) -> BoxBuilding {
    BoxBuilding { pos: Vec3::new(x, y, 0.0), angle: 0.0, size: Vec3::new(w, b, h), state: 0 }
}

fn tele(name: &str, x: f32, y: f32, angle: f32) -> Teleporter {
    Teleporter {
        name: name.into(),
        pos: Vec3::new(x, y, 0.0),
        angle,
        size: Vec3::new(0.56, 4.48, 10.08),
        border: 1.12,
        horizontal: false,
        state: 0,
    }
}

/// A world group with outer walls at ±`h`.
fn walled(h: f32) -> GroupDefinition {
    let wall =
        |x: f32, y: f32, angle: f32| Wall { pos: Vec3::new(x, y, 0.0), angle, breadth: h, height: 6.15, state: 0 };
    GroupDefinition {
        walls: vec![wall(h, 0.0, PI), wall(-h, 0.0, 0.0), wall(0.0, h, -FRAC_PI_2), wall(0.0, -h, FRAC_PI_2)],
        ..GroupDefinition::default()
    }
}

fn model(group: GroupDefinition, drivers: Vec<PhysicsDriver>, water: f32) -> WorldModel {
    model_linked(group, drivers, water, Vec::new())
}

fn model_linked(group: GroupDefinition, drivers: Vec<PhysicsDriver>, water: f32, links: Vec<Link>) -> WorldModel {
    let db = WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: drivers,
        transforms: Vec::new(),
        world_group: group,
        group_defs: Vec::new(),
        links,
        water_level: water,
        water_material: (water >= 0.0).then_some(-1),
        weapons: Vec::new(),
        zones: Vec::new(),
    };
    WorldModel::build(&db).expect("hand-built world")
}

fn world_with(boxes: Vec<BoxBuilding>) -> WorldModel {
    model(GroupDefinition { boxes, ..walled(100.0) }, Vec::new(), -1.0)
}

/// Every leg after the (possible) snap of the start is a clear line.
fn assert_legs_clear(grid: &NavGrid, path: &Path) {
    let w = &path.waypoints;
    let first = usize::from(!grid.is_free(w[0]));
    for k in first..w.len() - 1 {
        assert!(grid.clear_line(w[k], w[k + 1]), "leg {k}: {:?} → {:?} of {:?}", w[k], w[k + 1], w);
    }
}

/// The tank box never collides (at its real size, heading along the leg) along the legs, sampled.
fn assert_legs_collision_free(world: &WorldModel, path: &Path) {
    let w = &path.waypoints;
    for leg in w.windows(2) {
        let d = leg[1] - leg[0];
        let angle = d.y.atan2(d.x);
        let steps = (d.length() / 0.25).ceil().max(1.0) as usize;
        for k in 0..=steps {
            let p = leg[0] + d * (k as f32 / steps as f32);
            let tank = TankBox::new(p.extend(0.0), angle);
            assert!(world.tank_collides(&tank).is_none(), "collision at {p:?} on {w:?}");
        }
    }
}

/// Drives our real tank along `path` at 30 Hz with [`PathFollower`]; returns the time taken and the number of
/// control changes. Fails when the tank dies, teleports, makes no progress for 10 s, or takes longer than
/// `limit` seconds.
fn drive(world: &WorldModel, phys: &Physics, path: &Path, limit: f32) -> (f32, usize) {
    let w = &path.waypoints;
    let mut tank = Tank::new(7);
    let heading = w.get(1).map_or(0.0, |n| (*n - w[0]).to_angle());
    tank.spawn([w[0].x, w[0].y, 0.0], heading);
    let mut follower = PathFollower::new(path.clone());
    let dt = 1.0 / 30.0;
    let (mut t, mut changes, mut prev) = (0.0f32, 0usize, (0.0f32, 0.0f32));
    let (mut best, mut best_t) = (f32::INFINITY, 0.0f32);
    loop {
        let s = follower.steer(tank.pos, tank.azimuth, phys);
        if s.arrived {
            let end = *w.last().unwrap();
            assert!(tank.pos.truncate().distance(end) < PathFollower::ARRIVE + 0.5, "arrived away from the goal");
            return (t, changes);
        }
        assert!((s.turn * 8.0).fract() == 0.0 && (s.speed * 4.0).fract() == 0.0, "not quantised: {s:?}");
        if (s.speed, s.turn) != prev {
            changes += 1;
            prev = (s.speed, s.turn);
        }
        let r = tank.step(dt, Controls { speed: s.speed, turn: s.turn, jump: false }, phys, world);
        assert!(r.teleported.is_none(), "teleported at {:?}", tank.pos);
        assert!(r.death.is_none(), "died at {:?}", tank.pos);
        t += dt;
        // Progress: the distance left along the path.
        let target = follower.target().unwrap();
        let k = w.iter().position(|p| *p == target).unwrap();
        let left = tank.pos.truncate().distance(target) + w[k..].windows(2).map(|l| l[0].distance(l[1])).sum::<f32>();
        if left < best - 0.5 {
            (best, best_t) = (left, t);
        }
        assert!(t - best_t < 10.0, "no progress for 10 s at {:?} (left {left}, path {w:?})", tank.pos);
        assert!(t < limit, "not there after {limit} s: at {:?}, left {left}", tank.pos);
    }
}

/// Deterministic pseudo-random numbers in [0, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }

    fn point(&mut self, half: f32) -> Vec2 {
        Vec2::new((self.next() * 2.0 - 1.0) * half, (self.next() * 2.0 - 1.0) * half)
    }
}

#[test]
fn gap_in_a_wall_of_boxes_is_found() {
    // A wall along x = 0 from y = −100 to 100 (boxes 4 × 10 × 5), with one 16-wide gap at 20 < y < 36.
    let mut boxes = Vec::new();
    let mut y = -95.0;
    while y < 100.0 {
        if !(15.0..=40.0).contains(&y) {
            boxes.push(boxb(0.0, y, 2.0, 5.0, 5.0));
        }
        y += 10.0;
    }
    boxes.push(boxb(0.0, 15.0, 2.0, 5.0, 5.0)); // covers 10..20
    boxes.push(boxb(0.0, 41.0, 2.0, 5.0, 5.0)); // covers 36..46
    let world = world_with(boxes);
    let phys = phys();
    let grid = NavGrid::build(&world, &phys);
    assert!(!grid.is_free(Vec2::new(0.0, 0.0)) && !grid.is_free(Vec2::new(0.0, 60.0)));
    assert!(grid.is_free(Vec2::new(0.0, 28.0)));
    let (from, to) = (Vec2::new(-50.0, -50.0), Vec2::new(50.0, -50.0));
    assert!(!grid.clear_line(from, to));
    let path = grid.find_path(from, to).expect("through the gap");
    assert_eq!(path.waypoints.first(), Some(&from));
    assert_eq!(path.waypoints.last(), Some(&to));
    assert_legs_clear(&grid, &path);
    assert_legs_collision_free(&world, &path);
    // Where it crosses x = 0: in the gap, with room for the tank on both sides.
    let crossing = path
        .waypoints
        .windows(2)
        .find_map(|l| {
            let (a, b) = (l[0], l[1]);
            (a.x <= 0.0 && b.x >= 0.0).then(|| a.y + (b.y - a.y) * (-a.x / (b.x - a.x)))
        })
        .expect("crosses the wall");
    assert!((23.0..33.0).contains(&crossing), "crosses at y = {crossing}");
    // Shortest: via the two edges of the gap, about 2 × hypot(50, 78 + ...) ≈ 2 × 84.
    let via =
        from.distance(Vec2::new(0.0, 20.0 + grid.footprint())) + Vec2::new(0.0, 20.0 + grid.footprint()).distance(to);
    assert!(path.length >= via - 1.0 && path.length < via * 1.05, "length {} vs {via}", path.length);
    assert!(path.waypoints.len() <= 6, "{:?}", path.waypoints);
}

#[test]
fn goal_inside_a_closed_ring_is_unreachable() {
    // A square ring of boxes around (50, 50): walls 2 thick, enclosing a 36 × 36 yard.
    let boxes = vec![
        boxb(50.0, 70.0, 20.0, 1.0, 4.0),
        boxb(50.0, 30.0, 20.0, 1.0, 4.0),
        boxb(30.0, 50.0, 1.0, 20.0, 4.0),
        boxb(70.0, 50.0, 1.0, 20.0, 4.0),
    ];
    let world = world_with(boxes);
    let grid = NavGrid::build(&world, &phys());
    let (from, inside) = (Vec2::new(-50.0, -50.0), Vec2::new(50.0, 50.0));
    assert!(grid.is_free(inside) && grid.is_free(from));
    assert_eq!(grid.find_path(from, inside), None);
    assert_eq!(grid.find_path(inside, from), None);
    assert!(grid.find_path(inside, Vec2::new(45.0, 55.0)).is_some());
    let field = grid.distance_field(inside);
    assert_eq!(field.distance(from), None);
    assert_eq!(field.next_waypoint(&grid, from), None);
    assert!(field.distance(Vec2::new(45.0, 45.0)).is_some());
}

#[test]
fn low_slab_is_driven_over_and_a_box_is_not() {
    let phys = phys();
    let (from, to) = (Vec2::new(-40.0, 0.0), Vec2::new(40.0, 0.0));

    // A 0.2-high 40 × 40 slab in the middle: no detour.
    let world = world_with(vec![boxb(0.0, 0.0, 20.0, 20.0, 0.2)]);
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.kind(Vec2::ZERO), CellKind::Raised);
    assert_eq!(grid.kind(Vec2::new(-20.0, 0.0)), CellKind::Raised);
    assert_eq!(grid.kind(Vec2::new(-40.0, 0.0)), CellKind::Free);
    let path = grid.find_path(from, to).expect("over the slab");
    assert_eq!(path.waypoints, vec![from, to]);
    assert!((path.length - 80.0).abs() < 1.0e-3);
    let (t, _) = drive(&world, &phys, &path, 10.0);
    assert!(t < 80.0 / 25.0 + 1.0, "took {t} s");

    // A 1-high box instead: blocked, and the path goes around it.
    let world = world_with(vec![boxb(0.0, 0.0, 20.0, 20.0, 1.0)]);
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.kind(Vec2::ZERO), CellKind::Solid);
    assert_eq!(grid.kind(Vec2::new(-20.0 - 2.0, 0.0)), CellKind::Solid);
    let path = grid.find_path(from, to).expect("around the box");
    // It crosses x = 0 at |y| ≥ 20 + 3.5 (the box, and the tank's half-length with the margin), so it is at
    // least 2 × hypot(40, 23.5) = 92.8 long; the polyline (−40, 0), (−24, 24), (24, 24), (40, 0) is 105.7.
    assert!((92.7..107.0).contains(&path.length), "length {}", path.length);
    assert_legs_clear(&grid, &path);
    assert_legs_collision_free(&world, &path);
    drive(&world, &phys, &path, 30.0);
}

#[test]
fn teleporter_field_is_never_on_a_path() {
    // Teleporters across the way: one facing ±x at (0, 0), one facing ±y at (0, 40); links make them live.
    let group = GroupDefinition {
        teleporters: vec![tele("a", 0.0, 0.0, 0.0), tele("b", 0.0, 40.0, FRAC_PI_2)],
        ..walled(100.0)
    };
    let links = vec![Link { from: "a:*".into(), to: "b:f".into() }, Link { from: "b:*".into(), to: "a:f".into() }];
    let world = model_linked(group, Vec::new(), -1.0, links);
    let phys = phys();
    let grid = NavGrid::build(&world, &phys);
    // The field of "a": |x| < 0.56, |y| < 3.36; blocked with a half-length (3) and a margin around it.
    assert!(!grid.is_free(Vec2::ZERO));
    assert_eq!(grid.kind(Vec2::new(3.0, 0.0)), CellKind::Teleporter);
    assert_eq!(grid.kind(Vec2::new(-3.0, 1.0)), CellKind::Teleporter);
    assert_eq!(grid.kind(Vec2::new(0.0, 40.0 + 3.0)), CellKind::Teleporter);
    assert!(grid.is_free(Vec2::new(8.0, 0.0)));
    let phys_ref = &phys;
    for (from, to) in [
        (Vec2::new(-30.0, 0.0), Vec2::new(30.0, 0.0)),
        (Vec2::new(0.0, 20.0), Vec2::new(0.0, 70.0)),
        (Vec2::new(-30.0, -5.0), Vec2::new(30.0, 45.0)),
    ] {
        let path = grid.find_path(from, to).expect("around");
        assert_legs_clear(&grid, &path);
        for leg in path.waypoints.windows(2) {
            let d = leg[1] - leg[0];
            let steps = (d.length() / 0.25).ceil() as usize;
            for k in 0..=steps {
                let p = leg[0] + d * (k as f32 / steps as f32);
                for t in &world.teleporters {
                    let (s, c) = t.angle.sin_cos();
                    let q = p - t.pos.truncate();
                    let (lx, ly) = (c * q.x + s * q.y, -s * q.x + c * q.y);
                    let outside = (lx.abs() - t.size.x).max(ly.abs() - (t.size.y - t.border));
                    assert!(outside > 3.0, "{p:?} is {outside} from teleporter {} on {:?}", t.name, path.waypoints);
                }
            }
        }
        drive(&world, phys_ref, &path, 30.0);
    }
}

#[test]
fn floating_box_leaves_room_below_and_roofs_snap_to_the_ground() {
    let mut group = walled(100.0);
    let mut high = boxb(0.0, 0.0, 10.0, 10.0, 3.0);
    high.pos.z = 2.5; // bottom above the tank's 2.05
    let mut low = boxb(40.0, 0.0, 10.0, 10.0, 3.0);
    low.pos.z = 1.5; // bottom below it
    group.boxes = vec![high, low, boxb(-40.0, 40.0, 10.0, 10.0, 8.0)];
    let world = model(group, Vec::new(), -1.0);
    let grid = NavGrid::build(&world, &phys());
    assert_eq!(grid.kind(Vec2::ZERO), CellKind::Free);
    assert_eq!(grid.kind(Vec2::new(40.0, 0.0)), CellKind::Solid);
    // A tank on the roof at (−40, 40) is sent to the nearest free cell: beyond the box's edge (10) and the
    // footprint.
    let roof = Vec2::new(-40.0, 47.0);
    assert!(!grid.is_free(roof));
    let snapped = grid.nearest_free(roof).unwrap();
    assert!(grid.is_free(snapped));
    let edge = 10.0 + grid.footprint();
    assert!((snapped.y - 40.0 - edge).abs() < 2.0 * grid.cell_size(), "{snapped:?}");
    let path = grid.find_path(roof, Vec2::new(-40.0, -40.0)).unwrap();
    assert_eq!(path.waypoints[0], roof);
    assert_eq!(path.waypoints[1], snapped);
    assert_legs_clear(&grid, &path);
}

fn death_square(z: f32) -> Mesh {
    let (x, y) = (-20.0, -20.0);
    Mesh {
        checks: Vec::new(),
        vertices: vec![
            Vec3::new(x, y, z),
            Vec3::new(x + 10.0, y, z),
            Vec3::new(x + 10.0, y + 10.0, z),
            Vec3::new(x, y + 10.0, z),
        ],
        normals: Vec::new(),
        texcoords: Vec::new(),
        faces: vec![MeshFace {
            state: 0,
            vertices: vec![0, 1, 2, 3],
            normals: None,
            texcoords: None,
            material: -1,
            phydrv: 0,
        }],
        state: 0,
        fake_vertex: None,
        draw_info: None,
    }
}

#[test]
fn water_and_death_drivers_block() {
    let phys = phys();
    // Water at 1: nothing at ground level survives; a 0.2 slab does not help.
    let group = GroupDefinition { boxes: vec![boxb(0.0, 0.0, 20.0, 20.0, 0.2)], ..walled(100.0) };
    let world = model(group, Vec::new(), 1.0);
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.kind(Vec2::new(50.0, 50.0)), CellKind::Water);
    assert_eq!(grid.kind(Vec2::ZERO), CellKind::Water);
    assert_eq!(grid.find_path(Vec2::new(-50.0, 0.0), Vec2::new(50.0, 0.0)), None);
    assert_eq!(grid.nearest_free(Vec2::ZERO), None);
    // Water at 0.1: the slab's top (0.2) is dry.
    let group = GroupDefinition { boxes: vec![boxb(0.0, 0.0, 20.0, 20.0, 0.2)], ..walled(100.0) };
    let world = model(group, Vec::new(), 0.1);
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.kind(Vec2::ZERO), CellKind::Raised);
    assert_eq!(grid.kind(Vec2::new(50.0, 50.0)), CellKind::Water);

    // A lava floor (a mesh face at ground level with a death driver) from (−20, −20) to (−10, −10).
    let lava = PhysicsDriver {
        name: "lava".into(),
        linear: Vec3::ZERO,
        angular_velocity: 0.0,
        angular_pos: [0.0; 2],
        radial_velocity: 0.0,
        radial_pos: [0.0; 2],
        slide_time: 0.0,
        death_message: "burnt".into(),
    };
    let group = GroupDefinition { meshes: vec![death_square(0.0)], ..walled(100.0) };
    let world = model(group, vec![lava], -1.0);
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.kind(Vec2::new(-15.0, -15.0)), CellKind::Death);
    assert_eq!(grid.kind(Vec2::new(-15.0, -8.0)), CellKind::Death); // within a half-length (3) of the edge
    assert_eq!(grid.kind(Vec2::new(-15.0, -4.0)), CellKind::Free);
    let path = grid.find_path(Vec2::new(-30.0, -15.0), Vec2::new(0.0, -15.0)).unwrap();
    assert!(path.waypoints.len() > 2);
    assert_legs_clear(&grid, &path);
}

#[test]
fn ctf_red_base_to_green_base_is_driven() {
    let world = capture("01-ctf-world.bin");
    let phys = phys();
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.side_cells(), 400);
    assert!((grid.cell_size() - 2.0).abs() < 1.0e-6);
    let (red, green) = (Vec2::new(-370.0, 0.0), Vec2::new(370.0, 0.0));
    assert!(grid.is_free(red) && grid.is_free(green), "bases are flat (height 0)");
    let path = grid.find_path(red, green).expect("red to green");
    let straight = red.distance(green);
    assert!(path.length >= straight - 1.0e-3 && path.length <= 1.5 * straight, "length {}", path.length);
    assert_eq!(path.waypoints.first(), Some(&red));
    assert_eq!(path.waypoints.last(), Some(&green));
    assert_legs_clear(&grid, &path);
    assert_legs_collision_free(&world, &path);
    let (t, changes) = drive(&world, &phys, &path, 2.0 * path.length / phys.tank_speed + 20.0);
    eprintln!(
        "CTF red → green: {} waypoints, {:.1} units, driven in {t:.1} s with {changes} control changes",
        path.waypoints.len(),
        path.length
    );
    // And every base to every other one.
    let bases: Vec<Vec2> = world.bases.iter().map(|b| b.pos.truncate()).collect();
    for &a in &bases {
        for &b in &bases {
            let p = grid.find_path(a, b).expect("base to base");
            assert!(p.length >= a.distance(b) - 1.0e-3 && p.length <= 1.5 * a.distance(b) + 1.0e-3);
            assert_legs_clear(&grid, &p);
        }
    }
}

#[test]
fn custom_world_random_pairs_are_driven() {
    let world = capture("02-custom-world.bin");
    let phys = phys();
    let grid = NavGrid::build(&world, &phys);
    assert_eq!(grid.side_cells(), 400);
    // The teleporters' fields are kept out of, the bases (0.5 high) are solid.
    assert_eq!(grid.kind(Vec2::new(3.0, 60.0)), CellKind::Teleporter);
    assert_eq!(grid.kind(Vec2::new(80.0, 80.0)), CellKind::Solid);
    let mut rng = Lcg(42);
    let (mut driven, mut tries) = (0, 0);
    while driven < 6 && tries < 200 {
        tries += 1;
        let (a, b) = (rng.point(180.0), rng.point(180.0));
        if !grid.is_free(a) || !grid.is_free(b) || a.distance(b) < 80.0 {
            continue;
        }
        let Some(path) = grid.find_path(a, b) else { continue };
        assert!(path.length >= a.distance(b) - 1.0e-3);
        assert_legs_clear(&grid, &path);
        assert_legs_collision_free(&world, &path);
        let (t, changes) = drive(&world, &phys, &path, 2.0 * path.length / phys.tank_speed + 20.0);
        eprintln!("custom {a:?} → {b:?}: {:.1} units in {t:.1} s, {changes} control changes", path.length);
        driven += 1;
    }
    assert_eq!(driven, 6, "not enough reachable pairs");
}

#[test]
fn distance_field_agrees_with_find_path() {
    // Both are octile-shortest cell paths pulled taut the same way; they differ where several octile-shortest
    // routes go round an obstacle on different sides (octile ties hide Euclidean differences of up to 8 %).
    let goals = [
        ("01-ctf-world.bin", Vec2::new(370.0, 0.0)),
        ("01-ctf-world.bin", Vec2::new(-100.0, 200.0)),
        ("02-custom-world.bin", Vec2::new(-100.0, 20.0)),
    ];
    for (name, goal) in goals {
        let world = capture(name);
        let grid = NavGrid::build(&world, &phys());
        let cell = grid.cell_size();
        let field = grid.distance_field(goal);
        assert_eq!(field.distance(goal), Some(0.0));
        let half = 0.5 * grid.side_cells() as f32 * cell - 10.0;
        let mut rng = Lcg(7);
        let mut errors = Vec::new();
        while errors.len() < 200 {
            let p = rng.point(half);
            if !grid.is_free(p) {
                continue;
            }
            let path = grid.find_path(p, goal);
            let d = field.distance(p);
            assert_eq!(path.is_some(), d.is_some(), "at {p:?}");
            let (Some(path), Some(d)) = (path, d) else { continue };
            let rough = field.rough_distance(p).unwrap();
            assert!(
                rough >= d - cell && rough <= 1.09 * d + 2.0 * cell,
                "{name} at {p:?}: rough {rough}, distance {d}"
            );
            let err = (d - path.length).abs();
            assert!(err <= 2.0 * cell + 0.083 * path.length, "{name} at {p:?}: field {d}, path {}", path.length);
            errors.push(err / cell);
        }
        errors.sort_by(f32::total_cmp);
        let (median, p90, worst) = (errors[100], errors[180], errors[199]);
        eprintln!("{name} to {goal:?}: |field - path| in cells: median {median:.2}, 90 % {p90:.2}, worst {worst:.2}");
        assert!(median <= 1.0 && p90 <= 6.0, "median {median}, 90 % {p90} cells");
    }
}

#[test]
fn jump_search_finds_octile_shortest_cell_paths() {
    // The cell path of the jump point search costs what Dijkstra's distance field says, for many pairs.
    for name in ["01-ctf-world.bin", "02-custom-world.bin"] {
        let world = capture(name);
        let grid = NavGrid::build(&world, &phys());
        let half = 0.5 * grid.side_cells() as f32 * grid.cell_size() - 10.0;
        let mut rng = Lcg(11);
        for _ in 0..5 {
            let goal = loop {
                let p = rng.point(half);
                if grid.is_free(p) {
                    break p;
                }
            };
            let field = grid.distance_field(goal);
            let g = grid.frame.index(goal).unwrap();
            let mut tried = 0;
            while tried < 20 {
                let p = rng.point(half);
                let Some(s) = grid.frame.index(p).filter(|&s| grid.free_at(s)) else { continue };
                tried += 1;
                let Some(cells) = grid.jump_search(s, g) else {
                    assert!(!field.reached(s), "{name}: no path from {p:?} to {goal:?}");
                    continue;
                };
                let mut cost = 0;
                for w in cells.windows(2) {
                    let (a, b) = (grid.frame.xy(w[0]), grid.frame.xy(w[1]));
                    let (dx, dy) = (a.0.abs_diff(b.0), a.1.abs_diff(b.1));
                    assert!(dx <= 1 && dy <= 1 && dx + dy > 0, "not connected");
                    assert!(grid.free_at(w[1]));
                    if dx + dy == 2 {
                        let n = grid.side_cells();
                        assert!(grid.free_at(b.1 * n + a.0) && grid.free_at(a.1 * n + b.0), "cuts a corner");
                    }
                    cost += if dx + dy == 2 { DIAGONAL } else { STRAIGHT };
                }
                assert_eq!(cost, field.cost[s], "{name}: {p:?} → {goal:?}");
            }
        }
    }
}

#[test]
fn next_waypoint_leads_to_the_goal() {
    let world = capture("01-ctf-world.bin");
    let grid = NavGrid::build(&world, &phys());
    let goal = Vec2::new(370.0, 0.0);
    let field = grid.distance_field(goal);
    let mut rng = Lcg(3);
    let mut tried = 0;
    while tried < 50 {
        let start = rng.point(380.0);
        if !grid.is_free(start) {
            continue;
        }
        tried += 1;
        let mut p = start;
        let mut walked = 0.0;
        for hop in 0.. {
            assert!(hop < 50, "no end from {start:?}");
            let next = field.next_waypoint(&grid, p).expect("reached");
            assert!(grid.clear_line(p, next), "{p:?} → {next:?}");
            assert!(field.rough_distance(next).unwrap() < field.rough_distance(p).unwrap() + 1.0e-3);
            walked += p.distance(next);
            p = next;
            if p == goal {
                break;
            }
        }
        let d = field.distance(start).unwrap();
        assert!(walked <= d + 2.0 * grid.cell_size() + 0.005 * d, "walked {walked} vs {d}");
    }
    // From a roof: down to the nearest cell that reaches the goal.
    let roof = world.obstacles.iter().find(|o| o.kind == ObstacleKind::Box).unwrap().pos.truncate();
    assert!(!grid.is_free(roof));
    let first = field.next_waypoint(&grid, roof).unwrap();
    assert!(grid.is_free(first));
    assert!((field.distance(roof).unwrap() - roof.distance(first) - field.distance(first).unwrap()).abs() < 1.0e-3);
}

#[test]
fn distance_field_guides_a_tank_to_the_goal() {
    // A bot that asks the field for its next waypoint twice a second, from the red base to the green base.
    let world = capture("01-ctf-world.bin");
    let phys = phys();
    let grid = NavGrid::build(&world, &phys);
    let goal = Vec2::new(370.0, 0.0);
    let field = grid.distance_field(goal);
    let mut tank = Tank::new(3);
    tank.spawn([-370.0, 0.0, 0.0], 0.0);
    let mut follower = PathFollower::new(Path::default());
    let (mut t, mut asked) = (0.0f32, -1.0f32);
    let limit = 2.0 * field.distance(Vec2::new(-370.0, 0.0)).unwrap() / phys.tank_speed + 20.0;
    loop {
        let p = tank.pos.truncate();
        if p.distance(goal) < PathFollower::ARRIVE + 1.0 {
            break;
        }
        if t - asked >= 0.5 {
            let next = field.next_waypoint(&grid, p).expect("reached");
            if follower.path().waypoints.last() != Some(&next) {
                follower = PathFollower::new(Path::new(vec![p, next]));
            }
            asked = t;
        }
        let s = follower.steer(tank.pos, tank.azimuth, &phys);
        let r = tank.step(1.0 / 30.0, Controls { speed: s.speed, turn: s.turn, jump: false }, &phys, &world);
        assert!(r.teleported.is_none() && r.death.is_none());
        t += 1.0 / 30.0;
        assert!(t < limit, "not there after {t} s: at {:?}", tank.pos);
    }
    eprintln!("CTF red → green by the distance field: {t:.1} s");
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let phys = phys();
    let bad = [Vec2::NAN, Vec2::new(f32::INFINITY, 0.0), Vec2::new(0.0, f32::NEG_INFINITY), Vec2::new(f32::NAN, 1.0)];
    let world = world_with(vec![boxb(0.0, 0.0, 5.0, 5.0, 5.0)]);
    let grid = NavGrid::build(&world, &phys);
    let ok = Vec2::new(-50.0, -50.0);
    for &b in &bad {
        assert!(!grid.is_free(b));
        assert_eq!(grid.kind(b), CellKind::Outside);
        assert_eq!(grid.nearest_free(b), None);
        assert!(!grid.clear_line(b, ok) && !grid.clear_line(ok, b));
        assert_eq!(grid.find_path(b, ok), None);
        assert_eq!(grid.find_path(ok, b), None);
        let field = grid.distance_field(b);
        assert_eq!(field.distance(ok), None);
        assert_eq!(field.next_waypoint(&grid, ok), None);
        let field = grid.distance_field(ok);
        assert_eq!(field.distance(b), None);
        assert_eq!(field.next_waypoint(&grid, b), None);
        let mut f = PathFollower::new(grid.find_path(ok, Vec2::new(50.0, 50.0)).unwrap());
        assert!(!f.steer(b.extend(0.0), 0.0, &phys).arrived);
        let s = f.steer(ok.extend(0.0), f32::NAN, &phys);
        assert_eq!((s.speed, s.turn), (0.0, 0.0));
    }
    // Debug output is a summary, not a dump of the cells.
    assert!(format!("{grid:?}").len() < 200 && format!("{:?}", grid.distance_field(ok)).len() < 200);
    // Points outside the world snap inside.
    let far = Vec2::new(1.0e9, -1.0e9);
    let snapped = grid.nearest_free(far).unwrap();
    assert!(grid.is_free(snapped) && snapped.x > 80.0 && snapped.y < -80.0);
    let path = grid.find_path(far, ok).unwrap();
    assert_eq!(path.waypoints[0], far);
    assert!(grid.distance_field(far).goal().is_some());
    // Same cell, same point.
    let p = grid.find_path(ok, ok).unwrap();
    assert_eq!(p.length, 0.0);
    assert!(PathFollower::new(p).steer(ok.extend(0.0), 0.0, &phys).arrived);
    assert!(PathFollower::new(Path::default()).steer(Vec3::ZERO, 0.0, &phys).arrived);

    // Empty worlds (no walls: the side comes from the physics), odd cells, odd tanks.
    let empty = model(GroupDefinition::default(), Vec::new(), -1.0);
    for cell in [0.0, -1.0, f32::NAN, f32::INFINITY, 1.0e-9, 1.0e9, 3.0] {
        let g = NavGrid::with_cell(&empty, &phys, cell);
        assert!(g.side_cells() >= 1 && g.side_cells() <= MAX_SIDE_CELLS);
        let _ = g.find_path(Vec2::new(-100.0, 0.0), Vec2::new(100.0, 0.0));
        let _ = g.distance_field(Vec2::ZERO).distance(Vec2::new(10.0, 10.0));
    }
    let g = NavGrid::build(&empty, &phys);
    assert!(g.find_path(Vec2::new(-300.0, 0.0), Vec2::new(300.0, 0.0)).is_some());
    let mut odd = phys.clone();
    odd.world_size = f32::NAN;
    odd.tank_length = f32::INFINITY;
    odd.tank_width = -1.0;
    odd.max_bump_height = f32::NAN;
    let g = NavGrid::build(&empty, &odd);
    assert!(g.find_path(Vec2::new(-100.0, 0.0), Vec2::new(100.0, 0.0)).is_some());
    // A huge tank in a huge empty world (the tank is capped at 1e5 long, the world at 1e6).
    odd.tank_length = 1.0e6;
    odd.world_size = 1.0e30;
    let g = NavGrid::build(&empty, &odd);
    assert!(g.find_path(Vec2::new(-100.0, 0.0), Vec2::new(100.0, 0.0)).is_some());
    // The same tank in a walled world it does not fit in.
    let g = NavGrid::build(&world, &odd);
    assert_eq!(g.find_path(Vec2::new(-50.0, 0.0), Vec2::new(50.0, 0.0)), None);
    assert_eq!(g.nearest_free(Vec2::ZERO), None);
    // A tiny world.
    let tiny = model(walled(2.0), Vec::new(), -1.0);
    let g = NavGrid::build(&tiny, &phys);
    assert_eq!(g.find_path(Vec2::ZERO, Vec2::new(1.0, 1.0)), None);
    assert_eq!(g.distance_field(Vec2::ZERO).distance(Vec2::ZERO), None);
}

#[test]
fn follower_quantises_and_turns_in_place() {
    let phys = phys();
    let path = Path::new(vec![Vec2::ZERO, Vec2::new(100.0, 0.0), Vec2::new(100.0, 100.0)]);
    let mut f = PathFollower::new(path);
    // Lined up: full ahead, no turn.
    let s = f.steer(Vec3::ZERO, 0.0, &phys);
    assert_eq!((s.speed, s.turn, s.arrived), (1.0, 0.0, false));
    // Facing away (90° right of the target): turn left in place.
    let s = f.steer(Vec3::ZERO, -FRAC_PI_2, &phys);
    assert_eq!((s.speed, s.turn), (0.0, 1.0));
    // Target 90° to the right: turn right in place.
    let s = f.steer(Vec3::ZERO, FRAC_PI_2, &phys);
    assert_eq!((s.speed, s.turn), (0.0, -1.0));
    // A small error: a fraction of the turn rate, a multiple of 1/8, and slower.
    let s = f.steer(Vec3::ZERO, 0.1, &phys);
    assert!(s.turn < 0.0 && s.turn > -1.0 && (s.turn * 8.0).fract() == 0.0, "{s:?}");
    assert!(s.speed > 0.0 && (s.speed * 4.0).fract() == 0.0, "{s:?}");
    // Within reach of the corner: on to the next waypoint, which is 90° to the left.
    let s = f.steer(Vec3::new(98.0, 0.0, 0.0), 0.0, &phys);
    assert_eq!(f.target(), Some(Vec2::new(100.0, 100.0)));
    assert_eq!((s.speed, s.turn), (0.0, 1.0));
    // Close to the end: slow, then arrived.
    let s = f.steer(Vec3::new(100.0, 95.0, 0.0), FRAC_PI_2, &phys);
    assert!(s.speed > 0.0 && s.speed <= 0.5, "{s:?}");
    let s = f.steer(Vec3::new(100.0, 99.0, 0.0), FRAC_PI_2, &phys);
    assert!(s.arrived && s.speed == 0.0 && s.turn == 0.0);
    assert_eq!(f.target(), None);
    assert!(f.steer(Vec3::ZERO, 0.0, &phys).arrived, "stays arrived");

    // Hysteresis: small wobbles of the heading do not change the controls.
    let mut f = PathFollower::new(Path::new(vec![Vec2::ZERO, Vec2::new(200.0, 0.0)]));
    let first = f.steer(Vec3::ZERO, 0.02, &phys);
    for k in 0..20 {
        let wobble = 0.02 + 0.004 * ((k % 3) as f32 - 1.0);
        assert_eq!(f.steer(Vec3::new(k as f32, 0.0, 0.0), wobble, &phys), first);
    }
}

#[test]
fn grid_memory_is_small() {
    let world = capture("01-ctf-world.bin");
    let grid = NavGrid::build(&world, &phys());
    let cells = grid.side_cells() * grid.side_cells();
    // A byte of kind, two of component, two bits of free cells (by rows and by columns).
    assert!(grid.heap_bytes() as f32 <= 3.3 * cells as f32, "{} bytes", grid.heap_bytes());
    let field = grid.distance_field(Vec2::ZERO);
    assert!(field.heap_bytes() as f32 <= 5.2 * cells as f32, "{} bytes", field.heap_bytes());
}

#[test]
#[ignore = "timings; run with --release -- --ignored --nocapture"]
fn timings() {
    let phys = phys();
    let us = |t: Instant, runs: usize| t.elapsed().as_secs_f64() / runs as f64 * 1e6;
    for name in ["01-ctf-world.bin", "02-custom-world.bin"] {
        let world = capture(name);
        let t = Instant::now();
        let mut grid = NavGrid::build(&world, &phys);
        for _ in 0..4 {
            grid = NavGrid::build(&world, &phys);
        }
        let build = us(t, 5) / 1e3;
        eprintln!(
            "{name}: {} × {} cells of {:.4}; build {build:.1} ms; grid {} bytes",
            grid.side_cells(),
            grid.side_cells(),
            grid.cell_size(),
            grid.heap_bytes()
        );
        let half = 0.5 * grid.side_cells() as f32 * grid.cell_size();
        let e = half - 30.0;
        let pairs = [
            (Vec2::new(-e, 0.0), Vec2::new(e, 0.0)),
            (Vec2::new(-e, -e), Vec2::new(e, e)),
            (Vec2::new(-e, e), Vec2::new(e, -e)),
            (Vec2::new(0.0, -e), Vec2::new(0.0, e)),
        ];
        for (a, b) in pairs {
            let t = Instant::now();
            let mut path = None;
            for _ in 0..50 {
                path = grid.find_path(a, b);
            }
            let p = path.unwrap_or_default();
            eprintln!("  path {a} → {b}: {:.0} µs, {} waypoints, {:.1} units", us(t, 50), p.waypoints.len(), p.length);
        }
        let (a, b) = (Vec2::new(-e, -e), Vec2::new(-e + 20.0, -e + 10.0));
        let t = Instant::now();
        for _ in 0..1000 {
            let _ = grid.find_path(a, b);
        }
        eprintln!("  short path in the open: {:.1} µs", us(t, 1000));
        // Random pairs of free points.
        let mut rng = Lcg(5);
        let mut times = Vec::new();
        while times.len() < 200 {
            let (a, b) = (rng.point(half - 10.0), rng.point(half - 10.0));
            if grid.is_free(a) && grid.is_free(b) {
                let t = Instant::now();
                let _ = grid.find_path(a, b);
                times.push(us(t, 1));
            }
        }
        times.sort_by(f64::total_cmp);
        eprintln!(
            "  200 random paths: median {:.0} µs, 90 % {:.0} µs, worst {:.0} µs",
            times[100], times[180], times[199]
        );
        let goal = Vec2::new(-half + 30.0, -half + 30.0);
        let t = Instant::now();
        let mut field = grid.distance_field(goal);
        for _ in 0..9 {
            field = grid.distance_field(goal);
        }
        let ms = us(t, 10) / 1e3;
        let mut rng = Lcg(1);
        let points: Vec<Vec2> = (0..1000).map(|_| rng.point(half)).collect();
        let t = Instant::now();
        let reached = points.iter().filter(|&&p| field.next_waypoint(&grid, p).is_some()).count();
        let next = us(t, points.len());
        let t = Instant::now();
        let _ = points.iter().filter_map(|&p| field.distance(p)).count();
        let dist = us(t, points.len());
        let t = Instant::now();
        let _ = points.iter().filter_map(|&p| field.rough_distance(p)).count();
        let rough = us(t, points.len());
        eprintln!(
            "  distance field {ms:.2} ms, {} bytes; next_waypoint {next:.1} µs ({reached} of 1000 reached), \
             distance {dist:.1} µs, rough_distance {rough:.2} µs",
            field.heap_bytes()
        );
    }
}
