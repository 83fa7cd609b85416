//! Hand-computed threats, and dodges checked with the real hit test.

use std::f32::consts::FRAC_PI_2;
use std::time::Instant;

use glam::Vec3;

use super::*;
use crate::bot::aim::tests::{close, phys_with, world_with};
use crate::bot::aim::HIT_FACTOR;
use crate::bzflag::consts::GameOptions;
use crate::bzflag::msg::FiringInfo;
use crate::bzflag::play::hit::{check_hits, HitCandidate};

const ME: u8 = 1;

fn info(pos: Vec3, vel: Vec3, f: Abbv, team: Team) -> FiringInfo {
    FiringInfo {
        time_sent: 0.0,
        shooter: 2,
        shot_id: 0x0100,
        pos: pos.to_array(),
        vel: vel.to_array(),
        dt: 0.0,
        team,
        flag: f,
        lifetime: 3.5,
    }
}

/// A blue shell fired just now from `pos` along `vel`.
fn shell(pos: Vec3, vel: Vec3, p: &Physics, w: &WorldModel, now: Instant) -> LiveShot {
    LiveShot::new(&info(pos, vel, flag::NONE, Team::Blue), now, p, Some(w))
}

fn tank_at(pos: Vec3, azimuth: f32) -> Tank {
    let mut t = Tank::new(5);
    t.spawn(pos.to_array(), azimuth);
    t
}

/// Drives `tank` with `c` at 30 Hz for `secs`, running the real hit test against `shot` (fired at `now` = the
/// start) every tick. The first hit's time, and the closest the shell came to the tank's centre.
fn drive_under_fire(
    mut tank: Tank,
    c: Controls,
    shot: &LiveShot,
    p: &Physics,
    w: &WorldModel,
    secs: f32,
) -> (Option<f32>, f32) {
    let dt = 1.0 / 30.0;
    let mut c = c;
    let mut closest = f32::INFINITY;
    let lift = Vec3::new(0.0, 0.0, 0.5 * p.tank_height);
    for i in 0..(secs / dt).round() as usize {
        let (t0, t1) = (i as f32 * dt, (i + 1) as f32 * dt);
        tank.step(dt, c, p, w);
        c.jump = false;
        let v = tank.victim(ME, Team::Red);
        for s in &shot.segments {
            let (lo, hi) = (s.t0.max(t0), s.t1.min(t1));
            if hi >= lo {
                let o = s.start + s.velocity * (lo - s.t0) - (v.pos + lift + v.vel * (lo - t0));
                closest = closest.min(crate::bot::aim::closest(o, s.velocity - v.vel, hi - lo).1);
            }
        }
        let cand = HitCandidate { shot, shooter_paused: false, t_prev: t0, t_now: t1 };
        if let Some(h) = check_hits(&v, [cand], dt, p) {
            return (Some(t0 + h.time), closest);
        }
    }
    (None, closest)
}

#[test]
fn a_shot_aimed_at_us_is_a_threat() {
    let p = phys_with(GameOptions::empty(), 400.0);
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let tank = tank_at(Vec3::ZERO, FRAC_PI_2);
    let me = Me::new(&tank, ME, Team::Red, &p);
    // From a muzzle 60 units east at height 1.57, flying west at 100 u/s: over our centre (height 1.025) after
    // 60 / 100 = 0.6 s, 0.545 above it; it enters our hit sphere (0.99 × 4.32 = 4.2768) when
    // √(4.2768² − 0.545²) = 4.2419 short of it, at 0.5576 s.
    let shot = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let list = threats(&me, [&shot], now, &p, &DangerOptions::default());
    assert_eq!(list.len(), 1);
    let t = list[0];
    assert!(close(t.time, 0.6, 1e-3) && close(t.miss, 0.545, 1e-3), "{t:?}");
    assert!(close(t.contact.unwrap_or(0.0), 0.5576, 1e-3) && t.hits(), "{t:?}");
    assert!(close(t.hit_radius, HIT_FACTOR * 4.32, 1e-5));
    assert_eq!((t.shooter, t.shot_id, t.kind), (2, 0x0100, ShotKind::Normal));
    assert!((t.velocity - Vec3::new(-100.0, 0.0, 0.0)).length() < 1e-3);
    assert!((t.position - Vec3::new(0.0, 0.0, 1.57)).length() < 0.1);
    // Later in the shot's life the same holds relative to now: 0.2 s on, it is 0.4 s away.
    let later = now + std::time::Duration::from_millis(200);
    let list = threats(&me, [&shot], later, &p, &DangerOptions::default());
    assert!(close(list[0].time, 0.4, 1e-3));
    // Beyond the horizon it is not (yet) a threat.
    let short = DangerOptions { horizon: 0.5, ..DangerOptions::default() };
    assert!(threats(&me, [&shot], now, &p, &short).is_empty());
    // A tank driving into the shell's path is threatened too: 20 units south, driving north at 25 u/s, it is on
    // the shell's line after 0.8 s, when a shell fired from 80 units east gets there.
    let mut mover = tank_at(Vec3::new(0.0, -20.0, 0.0), FRAC_PI_2);
    mover.vel = Vec3::new(0.0, 25.0, 0.0);
    let me2 = Me::new(&mover, ME, Team::Red, &p);
    let s2 = shell(Vec3::new(80.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let list = threats(&me2, [&s2], now, &p, &DangerOptions::default());
    assert!(list.first().is_some_and(|t| t.hits() && close(t.time, 0.8, 0.02)), "{list:?}");
}

#[test]
fn a_shot_passing_20_units_away_is_no_threat() {
    let p = phys_with(GameOptions::empty(), 400.0);
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let me = Me::new(&tank_at(Vec3::ZERO, FRAC_PI_2), ME, Team::Red, &p);
    let far = shell(Vec3::new(60.0, 20.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    assert!(threats(&me, [&far], now, &p, &DangerOptions::default()).is_empty());
    // 6 units away it is a near miss: a threat (within hit radius + margin) that does not hit.
    let near = shell(Vec3::new(60.0, 6.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let list = threats(&me, [&near, &far], now, &p, &DangerOptions::default());
    assert_eq!(list.len(), 1);
    assert!(!list[0].hits() && close(list[0].miss, 6.0f32.hypot(0.545), 1e-3), "{:?}", list[0]);
    // A shell moving away from us (our own, just fired) is none either.
    let own = LiveShot::new(
        &FiringInfo {
            shooter: ME,
            team: Team::Red,
            ..info(Vec3::new(0.0, 4.42, 1.57), Vec3::new(0.0, 100.0, 0.0), flag::NONE, Team::Red)
        },
        now,
        &p,
        Some(&w),
    );
    assert!(threats(&me, [&own], now, &p, &DangerOptions::default()).is_empty());
    // A shell stopped by a box before it reaches us is none.
    let walled = world_with(200.0, vec![crate::bot::aim::tests::boxb(30.0, 0.0, 5.0, 10.0, 0)]);
    let blocked = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &walled, now);
    assert!(threats(&me, [&blocked], now, &p, &DangerOptions::default()).is_empty());
}

#[test]
fn team_mates_and_paused_shooters_are_harmless() {
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let no_tk = phys_with(GameOptions::NO_TEAM_KILLS, 400.0);
    let tk = phys_with(GameOptions::empty(), 400.0);
    let tank = tank_at(Vec3::ZERO, FRAC_PI_2);
    let me = Me::new(&tank, ME, Team::Red, &no_tk);
    let mate = LiveShot::new(
        &info(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::NONE, Team::Red),
        now,
        &no_tk,
        Some(&w),
    );
    assert!(threats(&me, [&mate], now, &no_tk, &DangerOptions::default()).is_empty());
    assert_eq!(threats(&me, [&mate], now, &tk, &DangerOptions::default()).len(), 1, "team kills on");
    // Rogues are hit by everyone; a team mate's Thief shot still counts.
    let rogue = Me { team: Team::Rogue, ..me };
    let rogue_mate = LiveShot::new(
        &info(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::NONE, Team::Rogue),
        now,
        &no_tk,
        Some(&w),
    );
    assert_eq!(threats(&rogue, [&rogue_mate], now, &no_tk, &DangerOptions::default()).len(), 1);
    let thief = LiveShot::new(
        &info(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::THIEF, Team::Red),
        now,
        &no_tk,
        Some(&w),
    );
    assert_eq!(threats(&me, [&thief], now, &no_tk, &DangerOptions::default()).len(), 1);
    // Paused shooters' shots do not count.
    let enemy = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &tk, &w, now);
    let paused = DangerOptions { paused: [2u8].into_iter().collect(), ..DangerOptions::default() };
    assert!(threats(&me, [&enemy], now, &tk, &paused).is_empty());
    // Zoned, only SW, SB and PZ shots can hurt; unzoned, PZ shots cannot; Cloaking stops lasers.
    let zoned = Me { zoned: true, ..me };
    assert!(threats(&zoned, [&enemy], now, &tk, &DangerOptions::default()).is_empty());
    let pz = LiveShot::new(
        &info(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::PHANTOM_ZONE, Team::Blue),
        now,
        &tk,
        Some(&w),
    );
    assert!(threats(&me, [&pz], now, &tk, &DangerOptions::default()).is_empty());
    assert_eq!(threats(&zoned, [&pz], now, &tk, &DangerOptions::default()).len(), 1);
    let laser = LiveShot::new(
        &info(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::LASER, Team::Blue),
        now,
        &tk,
        Some(&w),
    );
    let cloaked = Me { flag: flag::CLOAKING, ..me };
    assert!(threats(&cloaked, [&laser], now, &tk, &DangerOptions::default()).is_empty());
    let mut set = PlayerSet::new();
    set.insert(255);
    set.insert(0);
    assert!(set.contains(255) && set.contains(0) && !set.contains(1));
    set.remove(255);
    assert!(!set.contains(255));
}

#[test]
fn shock_waves_beams_and_missiles() {
    let p = phys_with(GameOptions::empty(), 400.0);
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let me = Me::new(&tank_at(Vec3::ZERO, FRAC_PI_2), ME, Team::Red, &p);
    let o = DangerOptions::default();
    // A shock wave 20 units away grows from 6 to 60 over 0.7 s: it reaches us at (20 − 6) / 54 × 0.7 = 0.1815 s.
    let sw =
        LiveShot::new(&info(Vec3::new(20.0, 0.0, 0.0), Vec3::ZERO, flag::SHOCK_WAVE, Team::Blue), now, &p, Some(&w));
    let list = threats(&me, [&sw], now, &p, &o);
    assert!(list.first().is_some_and(|t| t.hits() && close(t.contact.unwrap_or(0.0), 0.1815, 0.05)), "{list:?}");
    // 100 units away it never gets there.
    let far =
        LiveShot::new(&info(Vec3::new(100.0, 0.0, 0.0), Vec3::ZERO, flag::SHOCK_WAVE, Team::Blue), now, &p, Some(&w));
    assert!(threats(&me, [&far], now, &p, &o).is_empty());
    // A laser through us: the whole beam is live at once.
    let laser = LiveShot::new(
        &info(Vec3::new(-50.0, 0.0, 1.57), Vec3::new(100.0, 0.0, 0.0), flag::LASER, Team::Blue),
        now,
        &p,
        Some(&w),
    );
    let list = threats(&me, [&laser], now, &p, &o);
    assert!(list.first().is_some_and(|t| t.hits() && t.contact == Some(0.0)), "{list:?}");
    // A guided missile 80 units east heading at us arrives in 0.8 s; one heading north 15 units off does not...
    let mut gm = LiveShot::new(
        &info(Vec3::new(80.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), flag::GUIDED_MISSILE, Team::Blue),
        now,
        &p,
        Some(&w),
    );
    let list = threats(&me, [&gm], now, &p, &o);
    assert!(list.first().is_some_and(|t| t.hits() && close(t.time, 0.8, 0.05)), "{list:?}");
    let mut off = LiveShot::new(
        &info(Vec3::new(15.0, -80.0, 1.57), Vec3::new(0.0, 100.0, 0.0), flag::GUIDED_MISSILE, Team::Blue),
        now,
        &p,
        Some(&w),
    );
    assert!(threats(&me, [&off], now, &p, &o).is_empty());
    // ...unless it is locked on us: it turns at 0.628 rad/s (a circle of radius 159), enough to swing 21.6 units
    // sideways over the 80 units to us.
    if let Some(m) = off.missile.as_mut() {
        m.target = ME;
    }
    let list = threats(&me, [&off], now, &p, &o);
    assert_eq!(list.len(), 1, "a homing missile");
    // A missile is harmless during its first 0.5 s: one 20 units away passes us before it is armed.
    if let Some(m) = gm.missile.as_mut() {
        m.pos = Vec3::new(20.0, 0.0, 1.57);
    }
    assert!(threats(&me, [&gm], now, &p, &o).is_empty());
}

#[test]
fn dodging_a_shot_from_the_side() {
    let p = phys_with(GameOptions::empty(), 400.0);
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    // Facing north; a shell comes from 60 units east (0.6 s).
    let tank = tank_at(Vec3::ZERO, FRAC_PI_2);
    let me = Me::new(&tank, ME, Team::Red, &p);
    let shot = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let o = DangerOptions::default();
    let list = threats(&me, [&shot], now, &p, &o);
    assert!(list.first().is_some_and(|t| t.hits()));
    // Standing still gets hit.
    let (hit, _) = drive_under_fire(tank.clone(), Controls::default(), &shot, &p, &w, 1.5);
    assert!(hit.is_some());
    let c = dodge(&tank, &me, &list, now, &p, &w, &o).expect("something to dodge");
    assert!(c.speed != 0.0, "{c:?}");
    let (hit, closest) = drive_under_fire(tank.clone(), c, &shot, &p, &w, 1.5);
    assert!(hit.is_none(), "{c:?} hit at {hit:?}");
    assert!(closest > HIT_FACTOR * 4.32, "{closest}");
    // Nothing threatens: no advice.
    assert!(dodge(&tank, &me, &[], now, &p, &w, &o).is_none());
}

#[test]
fn dodging_a_shot_head_on() {
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    // Facing the shell, 100 units away: driving straight does not help, turning while driving does.
    for options in [GameOptions::empty(), GameOptions::JUMPING] {
        let p = phys_with(options, 400.0);
        let tank = tank_at(Vec3::ZERO, 0.0);
        let me = Me::new(&tank, ME, Team::Red, &p);
        let shot = shell(Vec3::new(100.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
        let o = DangerOptions::default();
        let list = threats(&me, [&shot], now, &p, &o);
        assert!(list.first().is_some_and(|t| t.hits()));
        for still in [Controls::default(), Controls { speed: 1.0, turn: 0.0, jump: false }] {
            assert!(drive_under_fire(tank.clone(), still, &shot, &p, &w, 2.0).0.is_some(), "{still:?}");
        }
        let c = dodge(&tank, &me, &list, now, &p, &w, &o).expect("something to dodge");
        let (hit, closest) = drive_under_fire(tank.clone(), c, &shot, &p, &w, 2.0);
        assert!(hit.is_none() && closest > HIT_FACTOR * 4.32, "{options:?}: {c:?} hit at {hit:?}, {closest}");
        if options == GameOptions::JUMPING {
            assert!(c.jump, "jumping over it keeps us farthest: {c:?}");
        } else {
            assert!(c.turn != 0.0 && !c.jump, "{c:?}");
        }
    }
}

#[test]
fn ground_first_jumps_only_as_a_last_resort() {
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let p = phys_with(GameOptions::JUMPING, 400.0);
    let tank = tank_at(Vec3::ZERO, 0.0);
    let me = Me::new(&tank, ME, Team::Red, &p);
    let o = DangerOptions { ground_first: true, ..DangerOptions::default() };
    // Head on from 100 units: turning while driving gets out of the way, so no jump.
    let far = shell(Vec3::new(100.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let list = threats(&me, [&far], now, &p, &o);
    let c = dodge(&tank, &me, &list, now, &p, &w, &o).expect("something to dodge");
    let (hit, _) = drive_under_fire(tank.clone(), c, &far, &p, &w, 2.0);
    assert!(hit.is_none() && !c.jump, "{c:?} hit at {hit:?}");
    // Head on from 40 units: nothing on the ground escapes in time, the jump does.
    let near = shell(Vec3::new(40.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let list = threats(&me, [&near], now, &p, &o);
    let c = dodge(&tank, &me, &list, now, &p, &w, &o).expect("something to dodge");
    let (hit, _) = drive_under_fire(tank.clone(), c, &near, &p, &w, 2.0);
    assert!(hit.is_none() && c.jump, "{c:?} hit at {hit:?}");
}

#[test]
fn dodging_does_not_drive_into_trouble() {
    // A wall of shells: one from the east at us, and one 12 units north (where full ahead would take us).
    let p = phys_with(GameOptions::empty(), 400.0);
    let w = world_with(200.0, Vec::new());
    let now = Instant::now();
    let tank = tank_at(Vec3::ZERO, FRAC_PI_2);
    let me = Me::new(&tank, ME, Team::Red, &p);
    let a = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let b = shell(Vec3::new(64.0, 12.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
    let o = DangerOptions { margin: 12.0, ..DangerOptions::default() };
    let list = threats(&me, [&a, &b], now, &p, &o);
    assert_eq!(list.len(), 2);
    let c = dodge(&tank, &me, &list, now, &p, &w, &o).expect("something to dodge");
    for s in [&a, &b] {
        assert!(drive_under_fire(tank.clone(), c, s, &p, &w, 1.5).0.is_none(), "{c:?}");
    }
}

#[test]
fn garbage_never_panics() {
    let now = Instant::now();
    let w = world_with(200.0, vec![crate::bot::aim::tests::boxb(30.0, 0.0, 5.0, 10.0, 0)]);
    let mut zero = phys_with(GameOptions::JUMPING, 400.0);
    zero.shot_speed = 0.0;
    zero.tank_speed = 0.0;
    let mut nan = phys_with(GameOptions::JUMPING, 400.0);
    nan.gm_turn_angle = f32::NAN;
    nan.tank_radius = f32::NAN;
    let bad = [f32::NAN, f32::INFINITY, -f32::INFINITY, 1.0e30, 0.0];
    for p in [phys_with(GameOptions::JUMPING, 400.0), zero, nan] {
        for &x in &bad {
            let v = Vec3::new(x, -x, x);
            let shots: Vec<LiveShot> = [flag::NONE, flag::LASER, flag::SHOCK_WAVE, flag::GUIDED_MISSILE, flag::THIEF]
                .into_iter()
                .map(|f| {
                    let mut i = info(v, v, f, Team::Blue);
                    i.lifetime = x;
                    i.dt = x;
                    LiveShot::new(&i, now, &p, Some(&w))
                })
                .collect();
            let mut tank = tank_at(Vec3::ZERO, 0.0);
            tank.vel = v;
            tank.ang_vel = x;
            let me = Me::new(&tank, ME, Team::Red, &p);
            let opts = [
                DangerOptions::default(),
                DangerOptions { horizon: x, margin: x, step: x, ..DangerOptions::default() },
            ];
            for o in &opts {
                let list = threats(&me, shots.iter(), now, &p, o);
                let _ = dodge(&tank, &me, &list, now, &p, &w, o);
                assert!(threats(&me, std::iter::empty(), now, &p, o).is_empty());
                // Real threats against a broken tank.
                let real = shell(Vec3::new(60.0, 0.0, 1.57), Vec3::new(-100.0, 0.0, 0.0), &p, &w, now);
                let list = threats(&Me::new(&tank_at(Vec3::ZERO, 0.0), ME, Team::Red, &p), [&real], now, &p, o);
                let _ = dodge(&tank, &me, &list, now, &p, &w, o);
            }
        }
    }
}

/// `cargo test --release --lib bot:: -- --ignored --nocapture`
#[test]
#[ignore]
fn timing_threats_and_dodge() {
    let w = crate::bot::aim::tests::capture_model("01-ctf-world.bin");
    let p = phys_with(GameOptions::JUMPING, 800.0);
    let now = Instant::now();
    // A free spot from which the three shooters below have a clear line.
    let aimed = [(40.0f32, 0.3f32), (70.0, 2.0), (90.0, -1.5)];
    let aimed_at = |pos: Vec3| {
        aimed.map(|(d, a)| {
            let from = pos + Vec3::new(d * a.cos(), d * a.sin(), 1.57);
            (from, (pos + Vec3::new(0.0, 0.0, 1.57) - from).normalize() * 100.0)
        })
    };
    let spot = (0..400)
        .map(|i| Vec3::new((i % 20) as f32 * 30.0 - 300.0, (i / 20) as f32 * 30.0 - 300.0, 0.0))
        .find(|&pos| {
            w.tank_collides(&crate::bzflag::world::TankBox::new(pos, 0.3)).is_none()
                && aimed_at(pos).iter().all(|&(from, _)| w.line_of_sight(from, pos + Vec3::new(0.0, 0.0, 1.57)))
        })
        .expect("a free spot");
    let tank = tank_at(spot, 0.3);
    let me = Me::new(&tank, ME, Team::Red, &p);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32
    };
    // 47 shells anywhere (not towards us), 3 aimed at us from 40 to 90 units.
    let mut shots = Vec::new();
    while shots.len() < 47 {
        let at = Vec3::new(rnd() * 700.0 - 350.0, rnd() * 700.0 - 350.0, 1.57);
        let a = rnd() * std::f32::consts::TAU;
        let s = shell(at, Vec3::new(100.0 * a.cos(), 100.0 * a.sin(), 0.0), &p, &w, now);
        if threats(&me, [&s], now, &p, &DangerOptions::default()).is_empty() {
            shots.push(s);
        }
    }
    for (from, vel) in aimed_at(spot) {
        shots.push(shell(from, vel, &p, &w, now));
    }
    let o = DangerOptions::default();
    let list = threats(&me, shots.iter(), now, &p, &o);
    eprintln!("{} threats: {:?}", list.len(), list.iter().map(|t| (t.time, t.miss)).collect::<Vec<_>>());
    let n = 20_000;
    let start = Instant::now();
    let mut count = 0;
    for _ in 0..n {
        count += threats(&me, shots.iter(), now, &p, &o).len();
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    eprintln!("threats: {per:.2} µs per call (50 shots, {} threats)", count / n);
    let n = 1000;
    let start = Instant::now();
    let mut moves = 0;
    for _ in 0..n {
        moves += usize::from(dodge(&tank, &me, &list, now, &p, &w, &o).is_some());
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    eprintln!("dodge: {per:.1} µs per call ({} threats, {moves} answers)", list.len());
    let mut t = tank.clone();
    let start = Instant::now();
    for _ in 0..n {
        t.step(1.0 / 15.0, Controls { speed: 1.0, turn: 0.3, jump: false }, &p, &w);
    }
    eprintln!("Tank::step (1/15 s): {:.2} µs", start.elapsed().as_secs_f64() * 1e6 / n as f64);
}
