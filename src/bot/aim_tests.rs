//! Hand-computed firing solutions, each checked against the real shot path and the victim-side hit test.

use std::f32::consts::{FRAC_PI_2, PI};
use std::time::{Duration, Instant};

use glam::Vec3;

use super::*;
use crate::bzflag::consts::{GameOptions, PlayerStatus, Team};
use crate::bzflag::msg::{FiringInfo, GameSettings, PlayerUpdate};
use crate::bzflag::play::hit::{shot_hits, HitCandidate, Victim};
use crate::bzflag::play::physics::flag;
use crate::bzflag::vars::VarStore;
use crate::bzflag::world::{obstacle_state, parse_blob, BoxBuilding, GroupDefinition, Wall, WorldDb};

pub(crate) fn close(a: f32, b: f32, eps: f32) -> bool {
    (a - b).abs() <= eps
}

pub(crate) fn settings(options: GameOptions, world_size: f32) -> GameSettings {
    GameSettings {
        world_size,
        game_type: 0,
        game_options: options.bits(),
        max_players: 216,
        max_shots: 3,
        num_flags: 0,
        linear_acceleration: 0.0,
        angular_acceleration: 0.0,
        shake_timeout: 0,
        shake_wins: 0,
        sync_time: 0,
    }
}

/// Default physics with game `options` in a world `size` wide.
pub(crate) fn phys_with(options: GameOptions, size: f32) -> Physics {
    Physics::new(&VarStore::defaults(), Some(&settings(options, size)))
}

pub(crate) fn boxb(x: f32, y: f32, half: f32, h: f32, state: u8) -> BoxBuilding {
    BoxBuilding { pos: Vec3::new(x, y, 0.0), angle: 0.0, size: Vec3::new(half, half, h), state }
}

/// Outer walls at ±`half` (6.15 high) around `boxes`.
pub(crate) fn world_with(half: f32, boxes: Vec<BoxBuilding>) -> WorldModel {
    let wall =
        |x: f32, y: f32, angle: f32| Wall { pos: Vec3::new(x, y, 0.0), angle, breadth: half, height: 6.15, state: 0 };
    let db = WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: Vec::new(),
        transforms: Vec::new(),
        world_group: GroupDefinition {
            walls: vec![
                wall(half, 0.0, PI),
                wall(-half, 0.0, 0.0),
                wall(0.0, half, -FRAC_PI_2),
                wall(0.0, -half, FRAC_PI_2),
            ],
            boxes,
            ..GroupDefinition::default()
        },
        group_defs: Vec::new(),
        links: Vec::new(),
        water_level: -1.0,
        water_material: None,
        weapons: Vec::new(),
        zones: Vec::new(),
    };
    WorldModel::build(&db).expect("hand-built world")
}

pub(crate) fn capture_model(name: &str) -> WorldModel {
    let path = format!("{}/testdata/bzflag/{name}", env!("CARGO_MANIFEST_DIR"));
    let blob = std::fs::read(path).expect("capture");
    WorldModel::build(&parse_blob(&blob).expect("blob")).expect("model")
}

pub(crate) fn update(pos: [f32; 3], vel: [f32; 3], azimuth: f32, ang_vel: f32) -> PlayerUpdate {
    PlayerUpdate {
        small: false,
        timestamp: 0.0,
        id: 7,
        order: 1,
        status: PlayerStatus::ALIVE,
        pos,
        vel,
        azimuth,
        ang_vel,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    }
}

/// A remote tank's track from an update received just now.
pub(crate) fn track(pos: [f32; 3], vel: [f32; 3], azimuth: f32, ang_vel: f32, p: &Physics) -> TargetTrack {
    TargetTrack::new(Reckoning::new(&update(pos, vel, azimuth, ang_vel), &[]), 0.0, p)
}

pub(crate) fn gun(pos: Vec3, vel: Vec3, now: Instant) -> Shooter {
    let muzzle =
        Muzzle { pos, vel, azimuth: 0.0, flag: flag::NONE, flag_active: false, team: Team::Red, handicap: 0.0 };
    Shooter::new(muzzle, 1, now)
}

/// Runs the victim-side hit test at 30 Hz for a tank (player 7, blue) moving along `target` against `shot`
/// (fired at age 0 = now): the time of the first hit.
pub(crate) fn hit_by_test(shot: &LiveShot, target: &TargetTrack, p: &Physics) -> Option<f32> {
    let dt = 1.0 / 30.0;
    let ticks = (shot.lifetime / dt).ceil() as usize + 1;
    for i in 0..ticks {
        let (t0, t1) = (i as f32 * dt, (i + 1) as f32 * dt);
        let pos = target.position(t0);
        let vel = (target.position(t1) - pos) / dt;
        let v =
            Victim { id: 7, team: Team::Blue, flag: flag::NONE, zoned: false, pos, vel, azimuth: 0.0, crossing: None };
        let c = HitCandidate { shot, shooter_paused: false, t_prev: t0, t_now: t1 };
        if let Some((t, _)) = shot_hits(&v, &c, dt, p) {
            return Some(t0 + t);
        }
    }
    None
}

fn info(pos: Vec3, vel: Vec3) -> FiringInfo {
    FiringInfo {
        time_sent: 0.0,
        shooter: 2,
        shot_id: 0x0100,
        pos: pos.to_array(),
        vel: vel.to_array(),
        dt: 0.0,
        team: Team::Blue,
        flag: flag::NONE,
        lifetime: 3.5,
    }
}

#[test]
fn stationary_target_straight_ahead() {
    let p = phys_with(GameOptions::empty(), 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    let target = TargetTrack::fixed(Vec3::new(100.0, 0.0, 0.0), &p);
    let s = lead(&me, &target, &p, &w).expect("in range");
    // Bearing 0. The muzzle is 4.32 + 0.1 = 4.42 ahead, so the shell covers 100 − 4.42 = 95.58 units at 100 u/s:
    // 0.9558 s. It flies at the muzzle height 1.57, the target's centre is at 2.05 / 2 = 1.025: the closest
    // approach is 0.545 straight above the centre.
    assert!(close(s.azimuth, 0.0, 1e-5), "{}", s.azimuth);
    assert!(close(s.flight_time, 0.9558, 1e-3), "{}", s.flight_time);
    assert!(close(s.miss, 0.545, 1e-3), "{}", s.miss);
    assert!(close(s.vertical_gap, -0.545, 1e-4) && s.reachable);
    assert!(s.clear && s.hits() && s.bounces == 0 && s.teleports == 0);
    assert!((s.impact - Vec3::new(100.0, 0.0, 1.57)).length() < 1e-2, "{:?}", s.impact);
    assert!(close(s.hit_radius, 0.99 * 4.32, 1e-5));
    // Tolerance: the shell's line passes through our centre, so at azimuth δ it misses the centre by
    // √((100 sin δ)² + 0.545²); that reaches 4.2768 at sin δ = √(4.2768² − 0.545²) / 100 = 0.042419.
    let want = (4.2768f32.powi(2) - 0.545f32.powi(2)).sqrt() / 100.0;
    assert!(close(s.tolerance, want.asin(), 2e-4), "{} vs {}", s.tolerance, want.asin());
    assert!(s.on_target(0.9 * s.tolerance) && !s.on_target(1.1 * s.tolerance));
    // The real hit test agrees on both sides of the tolerance.
    for (az, hit) in [(0.95, true), (-0.95, true), (1.05, false), (-1.05, false)] {
        let shot = fire_at(&me, az * s.tolerance, &p, Some(&w));
        assert_eq!(hit_by_test(&shot, &target, &p).is_some(), hit, "δ = {az} × tolerance");
    }
    // Straight ahead the hit test finds the hit when the shell enters the sphere: 0.9558 − 4.2419/100 s.
    let shot = fire_at(&me, s.azimuth, &p, Some(&w));
    let t = hit_by_test(&shot, &target, &p).expect("hit");
    assert!(close(t, 0.9558 - 0.042419, 1e-3), "{t}");
}

#[test]
fn a_crossing_target_is_led() {
    let p = phys_with(GameOptions::empty(), 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    // 200 units ahead, crossing at 25 u/s. Meeting: |(200, 25 t)| = 4.42 + 100 t, i.e.
    // 9375 t² + 884 t + (4.42² − 200²) = 0, t = (−884 + √(884² + 4·9375·(40000 − 19.5364))) / 18750 ≈ 2.0184 s;
    // the azimuth is atan(25 t / 200) ≈ 0.2473 rad, a little less than the muzzle-free asin(25/100) = 0.2527.
    let target = track([200.0, 0.0, 0.0], [0.0, 25.0, 0.0], FRAC_PI_2, 0.0, &p);
    let s = lead(&me, &target, &p, &w).expect("in range");
    let t = (-884.0f64 + (884.0f64.powi(2) + 4.0 * 9375.0 * (40000.0 - 4.42f64.powi(2))).sqrt()) / 18750.0;
    let az = (25.0 * t / 200.0).atan();
    assert!(close(s.flight_time, t as f32, 2e-3), "{} vs {t}", s.flight_time);
    assert!(close(s.azimuth, az as f32, 1e-4), "{} vs {az}", s.azimuth);
    assert!(s.azimuth < 0.25f32.asin());
    assert!(s.clear && s.hits() && s.miss < 0.6, "{s:?}");
    // The real path hits the tank moving as predicted, at about the meeting time.
    let shot = fire_at(&me, s.azimuth, &p, Some(&w));
    let hit = hit_by_test(&shot, &target, &p).expect("the real hit test hits");
    assert!(close(hit, t as f32, 0.06), "{hit}");
    // The tolerance holds for the moving target too (the miss is linear in the azimuth error near the
    // solution), on both sides.
    assert!(s.tolerance > 0.01 && s.tolerance < 0.03, "{}", s.tolerance);
    for (k, hit) in [(0.95, true), (-0.95, true), (1.05, false), (-1.05, false)] {
        let shot = fire_at(&me, s.azimuth + k * s.tolerance, &p, Some(&w));
        assert_eq!(hit_by_test(&shot, &target, &p).is_some(), hit, "δ = {k} × tolerance");
    }
    // Aiming at where the target is now misses.
    let shot = fire_at(&me, 0.0, &p, Some(&w));
    assert!(hit_by_test(&shot, &target, &p).is_none());
}

#[test]
fn a_turning_target_and_a_moving_shooter() {
    let p = phys_with(GameOptions::empty(), 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    // Heading +y at 25 u/s from (200, 0), turning left at π/4 rad/s: a circle of radius 31.83 about
    // (168.17, 0), a quarter of it in 2 s. A straight-line prediction would put it 18 units off by then.
    let target = track([200.0, 0.0, 0.0], [0.0, 25.0, 0.0], FRAC_PI_2, std::f32::consts::FRAC_PI_4, &p);
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    let s = lead(&me, &target, &p, &w).expect("in range");
    assert!(s.clear && s.hits(), "{s:?}");
    // At the meeting time the shell's line of flight reaches the point on the circle.
    let c = target.centre(s.flight_time);
    assert!(close((c.truncate() - glam::Vec2::new(168.17, 0.0)).length(), 31.83, 0.01));
    assert!((s.impact.truncate() - c.truncate()).length() < 0.05, "{:?} vs {c:?}", s.impact);
    let shot = fire_at(&me, s.azimuth, &p, Some(&w));
    assert!(hit_by_test(&shot, &target, &p).is_some(), "the arc is led");
    // The same update read as a straight line leads elsewhere, and that shot misses the turning tank.
    let straight = track([200.0, 0.0, 0.0], [0.0, 25.0, 0.0], FRAC_PI_2, 0.0, &p);
    let wrong = lead(&me, &straight, &p, &w).expect("in range");
    let shot = fire_at(&me, wrong.azimuth, &p, Some(&w));
    assert!(hit_by_test(&shot, &target, &p).is_none(), "{} vs {}", wrong.azimuth, s.azimuth);
    // Our own velocity is added to the shell: driving +y at 25 u/s, a still target at (150, 0) needs an aim to
    // the right. The shell is at (4.42 + 100 t)·(cos a, sin a) + (0, 25 t): it meets (150, 0) when
    // (4.42 + 100 t)² = 150² + (25 t)², the crossing case mirrored: 9375 t² + 884 t + 4.42² − 22500 = 0, and
    // a = atan2(−25 t, 150) ≈ −0.2453 (not −asin(1/4) = −0.2527: the muzzle turns with the gun).
    let moving = gun(Vec3::ZERO, Vec3::new(0.0, 25.0, 0.0), now);
    let still = TargetTrack::fixed(Vec3::new(150.0, 0.0, 0.0), &p);
    let s = lead(&moving, &still, &p, &w).expect("in range");
    let t = (-884.0f64 + (884.0f64.powi(2) + 4.0 * 9375.0 * (22500.0 - 4.42f64.powi(2))).sqrt()) / 18750.0;
    let want = (-25.0 * t).atan2(150.0) as f32;
    assert!(close(s.azimuth, want, 1e-4), "{} vs {want}", s.azimuth);
    assert!(close(s.flight_time, t as f32, 2e-3), "{} vs {t}", s.flight_time);
    let shot = fire_at(&moving, s.azimuth, &p, Some(&w));
    assert!(hit_by_test(&shot, &still, &p).is_some());
}

#[test]
fn a_blocked_shot_and_a_bank_shot_around_it() {
    // A 20 × 20 × 10 box at the origin between us at (−50, 0) and the target at (50, 0).
    let boxed = |p: &Physics| {
        let _ = p;
        world_with(100.0, vec![boxb(0.0, 0.0, 10.0, 10.0, 0)])
    };
    let now = Instant::now();
    let me = gun(Vec3::new(-50.0, 0.0, 0.0), Vec3::ZERO, now);
    let plain = phys_with(GameOptions::empty(), 200.0);
    let w = boxed(&plain);
    let target = TargetTrack::fixed(Vec3::new(50.0, 0.0, 0.0), &plain);
    let s = lead(&me, &target, &plain, &w).expect("in range");
    // The shell stops on the box face x = −10 after (40 − 4.42) / 100 s.
    assert!(!s.clear && !s.hits(), "{s:?}");
    assert!(close(s.azimuth, 0.0, 1e-5));
    assert!(!s.miss.is_finite() || s.miss > 30.0, "{}", s.miss);
    // Nothing reflects shots here: no bank shot.
    assert!(bank_shot(&me, &target, &plain, &w).is_none());
    // With every shot ricocheting (+r) the direct shot bounces straight back: still blocked.
    let r = phys_with(GameOptions::RICOCHET, 200.0);
    let s = lead(&me, &target, &r, &w).expect("in range");
    assert!(!s.clear && !s.hits(), "{s:?}");
    // A bank shot off an outer wall (or the box's sides) gets there.
    let b = bank_shot(&me, &target, &r, &w).expect("a bank shot");
    assert!(b.hits() && b.bounces >= 1 && b.clear, "{b:?}");
    let shot = fire_at(&me, b.azimuth, &r, Some(&w));
    let hit = hit_by_test(&shot, &target, &r).expect("the simulated bank shot hits");
    assert!(close(hit, b.flight_time, 0.1), "{hit} vs {}", b.flight_time);
    assert!(shot.segments.iter().take_while(|s| s.t0 < hit).count() >= 2, "it ricocheted first");
    // A box with the ricochet bit reflects even plain shots; then a bank shot exists without +r.
    let w2 =
        world_with(100.0, vec![boxb(0.0, 0.0, 10.0, 10.0, 0), boxb(0.0, 60.0, 5.0, 10.0, obstacle_state::RICOCHET)]);
    let b = bank_shot(&me, &target, &plain, &w2).expect("off the ricochet box");
    let shot = fire_at(&me, b.azimuth, &plain, Some(&w2));
    assert!(hit_by_test(&shot, &target, &plain).is_some(), "{b:?}");
}

#[test]
fn out_of_range_is_none() {
    let p = phys_with(GameOptions::empty(), 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    // Lifetime 3.5 s: a shell reaches 4.42 + 350 = 354.42 units.
    assert!(lead(&me, &TargetTrack::fixed(Vec3::new(360.0, 0.0, 0.0), &p), &p, &w).is_none());
    let s = lead(&me, &TargetTrack::fixed(Vec3::new(340.0, 0.0, 0.0), &p), &p, &w).expect("in range");
    assert!(close(s.flight_time, (340.0 - 4.42) / 100.0, 1e-3));
    // Running away at 25 u/s from 200: 200 + 25 t = 4.42 + 100 t at t = 2.61 s; from 300 it would take 3.94 s.
    let away = track([200.0, 0.0, 0.0], [25.0, 0.0, 0.0], 0.0, 0.0, &p);
    let s = lead(&me, &away, &p, &w).expect("catches it");
    assert!(close(s.flight_time, 195.58 / 75.0, 2e-3), "{}", s.flight_time);
    assert!(lead(&me, &track([300.0, 0.0, 0.0], [25.0, 0.0, 0.0], 0.0, 0.0, &p), &p, &w).is_none());
    // Machine-gun shells live 3.5 / 10 s at 150 u/s: 100 units is beyond them.
    let mut mg = me;
    mg.muzzle.flag = flag::MACHINE_GUN;
    assert!(lead(&mg, &TargetTrack::fixed(Vec3::new(100.0, 0.0, 0.0), &p), &p, &w).is_none());
    let s = lead(&mg, &TargetTrack::fixed(Vec3::new(50.0, 0.0, 0.0), &p), &p, &w).expect("in MG range");
    assert!(close(s.flight_time, (50.0 - 4.42) / 150.0, 1e-3), "{}", s.flight_time);
    // A shock wave does not travel.
    let mut sw = me;
    sw.muzzle.flag = flag::SHOCK_WAVE;
    assert!(lead(&sw, &TargetTrack::fixed(Vec3::new(30.0, 0.0, 0.0), &p), &p, &w).is_none());
}

#[test]
fn jumping_targets_and_tracks() {
    let p = phys_with(GameOptions::JUMPING, 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    // A tank that just jumped (vz 19) 100 units away is 19 t − 4.9 t² high at t ≈ 0.956: 13.7 up, out of reach.
    let mut u = update([100.0, 0.0, 0.0], [0.0, 0.0, 19.0], 0.0, 0.0);
    u.status = PlayerStatus::ALIVE | PlayerStatus::FALLING;
    let jumping = TargetTrack::new(Reckoning::new(&u, &[]), 0.0, &p);
    let s = lead(&me, &jumping, &p, &w).expect("in range");
    assert!(!s.reachable && !s.hits() && s.vertical_gap > 10.0, "{s:?}");
    // Tracks: the remote constructor takes the age from the receive time; fixed tracks stay put.
    let r = RemoteTank::new(&update([0.0, 0.0, 0.0], [10.0, 0.0, 0.0], 0.0, 0.0), now, &[]);
    let t = TargetTrack::remote(&r, now + Duration::from_secs(2), &p);
    assert!((t.position(0.5) - Vec3::new(25.0, 0.0, 0.0)).length() < 1e-4);
    assert!((t.delayed(0.5).position(0.0) - Vec3::new(25.0, 0.0, 0.0)).length() < 1e-4);
    assert!((t.centre(0.0).z - 1.025).abs() < 1e-6);
    let obese = t.with_flag(flag::OBESITY, &p);
    assert!(close(obese.hit_radius(), 0.99 * 4.32 * 2.5, 1e-4));
    let sampled = t.sample(1.0, 0.05);
    assert_eq!(sampled.centres().len(), 21);
    assert!((sampled.centre_at(0.525) - Vec3::new(25.25, 0.0, 1.025)).length() < 1e-3);
    assert!(close(sampled.duration(), 1.0, 1e-5));
    assert!(close(azimuth_tolerance(100.0, 4.2768), 0.042768f32.asin(), 1e-6));
    assert!(close(azimuth_tolerance(3.0, 4.0), FRAC_PI_2, 0.0));
    assert_eq!(azimuth_tolerance(f32::NAN, 4.0), 0.0);
}

#[test]
fn would_hit_and_closest_approach() {
    let p = phys_with(GameOptions::empty(), 800.0);
    let w = world_with(400.0, Vec::new());
    let now = Instant::now();
    let me = gun(Vec3::ZERO, Vec3::ZERO, now);
    let target = TargetTrack::fixed(Vec3::new(100.0, 0.0, 0.0), &p);
    let tr = target.sample(3.5, SAMPLE_STEP);
    let a = would_hit(&me, 0.0, &tr, &p, &w).expect("hits");
    // Closest at x = 100 (0.9558 s), contact when 4.2419 short of it horizontally.
    assert!(close(a.time, 0.9558, 1e-3) && close(a.miss, 0.545, 1e-3));
    assert!(close(a.contact.unwrap_or(0.0), 0.9558 - 0.042419, 1e-3));
    assert!(would_hit(&me, 0.1, &tr, &p, &w).is_none());
    let e = evaluate(&me, 0.1, &tr, &p, &w).expect("an approach");
    assert!(close(e.miss, (100.0 * 0.1f32.sin()).hypot(0.545), 0.05), "{}", e.miss);
    // A shot already in flight: 0.5 s old, from (−50, 0, 1.025) along +x: at the target's centre at 1.5 s of age,
    // i.e. 1.0 s from now.
    let shot = LiveShot::new(&info(Vec3::new(-50.0, 0.0, 1.025), Vec3::new(100.0, 0.0, 0.0)), now, &p, None);
    let a = closest_approach(&shot.segments, 0.5, &tr).expect("overlaps");
    assert!(close(a.time, 1.0, 1e-3) && a.miss < 1e-3, "{a:?}");
    assert!(closest_approach(&[], 0.0, &tr).is_none());
    // Guided missiles are flown on (straight) from their state.
    let mut gm = me;
    gm.muzzle.flag = flag::GUIDED_MISSILE;
    let s = lead(&gm, &target, &p, &w).expect("a missile solution");
    assert!(s.hits() && close(s.azimuth, 0.0, 1e-4), "{s:?}");
}

#[test]
fn garbage_never_panics() {
    let now = Instant::now();
    let w = world_with(100.0, vec![boxb(0.0, 0.0, 10.0, 10.0, 0)]);
    let mut zero = phys_with(GameOptions::RICOCHET, 200.0);
    zero.shot_speed = 0.0;
    let mut dead = phys_with(GameOptions::RICOCHET, 200.0);
    dead.reload_time = 0.0;
    let mut nan = phys_with(GameOptions::RICOCHET, 200.0);
    nan.shot_speed = f32::NAN;
    nan.tank_radius = f32::INFINITY;
    let physics = [phys_with(GameOptions::RICOCHET, 200.0), zero, dead, nan];
    let bad = [f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0e30, -1.0e30, 0.0];
    for p in &physics {
        for &x in &bad {
            let v = Vec3::new(x, -x, x);
            let shooters = [gun(v, v, now), gun(Vec3::ZERO, v, now), gun(v, Vec3::ZERO, now)];
            let targets = [
                TargetTrack::fixed(v, p),
                track([x, 0.0, x], [x, x, x], x, x, p),
                track([10.0, 0.0, 0.0], [0.0, 0.0, 0.0], 0.0, x, p).delayed(x),
                TargetTrack::fixed(Vec3::new(30.0, 0.0, 0.0), p),
            ];
            for s in &shooters {
                for t in &targets {
                    if let Some(sol) = lead(s, t, p, &w) {
                        assert!(sol.azimuth.is_finite() && sol.flight_time.is_finite(), "{sol:?}");
                    }
                    let tr = t.sample(x, x);
                    let _ = would_hit(s, x, &tr, p, &w);
                    let _ = closest_approach(&fire_at(s, x, p, Some(&w)).segments, x, &tr);
                    let _ = tr.centre_at(x);
                }
            }
        }
        let s = gun(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::ZERO, now);
        let _ = bank_shot(&s, &TargetTrack::fixed(Vec3::new(1.0e30, f32::NAN, 0.0), p), p, &w);
    }
}

/// `cargo test --release --lib bot:: -- --ignored --nocapture`
#[test]
#[ignore]
fn timing_lead_and_bank_shot() {
    let w = capture_model("01-ctf-world.bin");
    let mut s = settings(GameOptions::RICOCHET, 800.0);
    s.max_shots = 3;
    let p = Physics::new(&VarStore::defaults(), Some(&s));
    let now = Instant::now();
    let mut seed = 0x1234_5678_9abc_def1u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    let n = 2000;
    // Tanks where tanks can be (not inside buildings), within 250 units of each other.
    let world = &w;
    let mut free = move || loop {
        let pos = Vec3::new(rnd() * 760.0 - 380.0, rnd() * 760.0 - 380.0, 0.0);
        if world.tank_collides(&crate::bzflag::world::TankBox::new(pos, 0.0)).is_none() {
            return (pos, rnd());
        }
    };
    let mut cases: Vec<(Shooter, TargetTrack)> = Vec::new();
    while cases.len() < n {
        let (me, _) = free();
        let (at, r) = free();
        if me.distance(at) > 250.0 {
            continue;
        }
        let a = r * std::f32::consts::TAU;
        let t = track(at.to_array(), [25.0 * a.cos(), 25.0 * a.sin(), 0.0], a, r - 0.5, &p);
        cases.push((gun(me, Vec3::ZERO, now), t));
    }
    let start = Instant::now();
    let mut found = 0;
    for (me, t) in &cases {
        found += usize::from(lead(me, t, &p, &w).is_some_and(|s| s.hits()));
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    eprintln!("lead: {per:.1} µs per call ({found}/{n} hit)");
    // Bank shots where the direct shot is blocked.
    let blocked: Vec<(Shooter, TargetTrack)> =
        cases.iter().filter(|(me, t)| lead(me, t, &p, &w).is_some_and(|s| !s.clear)).copied().collect();
    let m = blocked.len().min(200);
    let start = Instant::now();
    let mut banks = 0;
    for (me, t) in blocked.iter().take(m) {
        banks += usize::from(bank_shot(me, t, &p, &w).is_some());
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / m as f64;
    eprintln!("bank_shot (+r, 01-ctf-world, direct shot blocked): {per:.0} µs per call ({banks}/{m} found)");
    // What one of its path simulations costs: the path through the world, and its comparison with the track.
    let start = Instant::now();
    let mut segs = 0;
    for i in 0..m * 10 {
        segs += fire_at(&cases[i % m].0, i as f32 * 0.031, &p, Some(&w)).segments.len();
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / (m * 10) as f64;
    eprintln!("  one +r path: {per:.1} µs ({:.1} segments)", segs as f64 / (m * 10) as f64);
    let shots: Vec<(LiveShot, SampledTrack)> = (0..m)
        .map(|i| (fire_at(&cases[i].0, i as f32 * 0.031, &p, Some(&w)), cases[i].1.sample(3.5, SAMPLE_STEP)))
        .collect();
    let start = Instant::now();
    for _ in 0..10 {
        for (s, tr) in &shots {
            std::hint::black_box(closest_approach(&s.segments, 0.0, tr));
        }
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / (m * 10) as f64;
    eprintln!("  one comparison with the track: {per:.1} µs");
}
