//! Hand-computed cases for the play modules on a small hand-built world.

use std::f32::consts::{FRAC_PI_2, PI};
use std::time::{Duration, Instant};

use glam::Vec3;

use super::hit::{check_hits, hit_messages, run_over, EndShotCredit, HitCandidate, Victim};
use super::physics::{flag, Physics};
use super::reckon::{Reckoning, RemoteTank};
use super::shots::{FireError, Gun, LiveShot, Muzzle, ShotKind};
use super::tank::{Controls, Death, Location, Tank};
use super::updates::{OwnState, UpdateSender};
use crate::bzflag::consts::{GameOptions, PlayerStatus, Team};
use crate::bzflag::msg::{Abbv, ClientMsg, FiringInfo, GameSettings, PlayerUpdate};
use crate::bzflag::vars::VarStore;
use crate::bzflag::world::{
    obstacle_state, BoxBuilding, GroupDefinition, Link, Mesh, MeshFace, PhysicsDriver, SegmentReason, Teleporter, Wall,
    WorldDb, WorldModel,
};

fn close(a: f32, b: f32, eps: f32) -> bool {
    (a - b).abs() <= eps
}

fn close3(a: Vec3, b: Vec3, eps: f32) -> bool {
    (a - b).abs().max_element() <= eps
}

fn settings(options: GameOptions, max_shots: u16) -> GameSettings {
    GameSettings {
        world_size: 200.0,
        game_type: 0,
        game_options: options.bits(),
        max_players: 216,
        max_shots,
        num_flags: 0,
        linear_acceleration: 0.0,
        angular_acceleration: 0.0,
        shake_timeout: 0,
        shake_wins: 0,
        sync_time: 0,
    }
}

fn phys() -> Physics {
    Physics::new(&VarStore::defaults(), Some(&settings(GameOptions::JUMPING, 3)))
}

fn boxb(x: f32, y: f32, w: f32, b: f32, h: f32, state: u8) -> BoxBuilding {
    BoxBuilding { pos: Vec3::new(x, y, 0.0), angle: 0.0, size: Vec3::new(w, b, h), state }
}

fn tele(name: &str, x: f32, y: f32) -> Teleporter {
    Teleporter {
        name: name.into(),
        pos: Vec3::new(x, y, 0.0),
        angle: 0.0,
        size: Vec3::new(0.56, 4.48, 10.08),
        border: 1.12,
        horizontal: false,
        state: 0,
    }
}

fn driver(name: &str) -> PhysicsDriver {
    PhysicsDriver {
        name: name.into(),
        linear: Vec3::ZERO,
        angular_velocity: 0.0,
        angular_pos: [0.0; 2],
        radial_velocity: 0.0,
        radial_pos: [0.0; 2],
        slide_time: 0.0,
        death_message: String::new(),
    }
}

/// A 10 × 10 one-face mesh roof at height `z` from (x, y), with physics driver `d`.
fn square(x: f32, y: f32, z: f32, d: i32) -> Mesh {
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
            phydrv: d,
        }],
        state: 0,
        fake_vertex: None,
        draw_info: None,
    }
}

/// A 200 × 200 world: outer walls at ±100 (6.15 high); a 10 × 10 × 10 box centred at (30, 0); a 0.2-high slab
/// at (−30, 0); a 3-high platform at (0, 40); a ricochet box at (0, 80); teleporters "a" at (−50, −40) and "b" at
/// (50, −40) with a:b → b:f; two 10 × 10 mesh roofs at height 2: a conveyor (5, 0, 0) at (−80..−70, 70..80) and
/// a death driver at (−60..−50, 70..80).
fn world() -> WorldModel {
    let h = 100.0;
    let wall =
        |x: f32, y: f32, angle: f32| Wall { pos: Vec3::new(x, y, 0.0), angle, breadth: h, height: 6.15, state: 0 };
    let group = GroupDefinition {
        walls: vec![wall(h, 0.0, PI), wall(-h, 0.0, 0.0), wall(0.0, h, -FRAC_PI_2), wall(0.0, -h, FRAC_PI_2)],
        boxes: vec![
            boxb(30.0, 0.0, 5.0, 5.0, 10.0, 0),
            boxb(-30.0, 0.0, 5.0, 5.0, 0.2, 0),
            boxb(0.0, 40.0, 10.0, 10.0, 3.0, 0),
            boxb(0.0, 80.0, 5.0, 5.0, 10.0, obstacle_state::RICOCHET),
        ],
        teleporters: vec![tele("a", -50.0, -40.0), tele("b", 50.0, -40.0)],
        meshes: vec![square(-80.0, 70.0, 2.0, 0), square(-60.0, 70.0, 2.0, 1)],
        ..GroupDefinition::default()
    };
    let mut belt = driver("belt");
    belt.linear = Vec3::new(5.0, 0.0, 0.0);
    let mut lava = driver("lava");
    lava.death_message = "burnt".into();
    let db = WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: vec![belt, lava],
        transforms: Vec::new(),
        world_group: group,
        group_defs: Vec::new(),
        links: vec![Link { from: "a:b".into(), to: "b:f".into() }],
        water_level: -1.0,
        water_material: None,
        weapons: Vec::new(),
        zones: Vec::new(),
    };
    WorldModel::build(&db).expect("hand-built world")
}

/// Only the outer walls, at ±400.
fn open_world() -> WorldModel {
    let h = 400.0;
    let wall =
        |x: f32, y: f32, angle: f32| Wall { pos: Vec3::new(x, y, 0.0), angle, breadth: h, height: 6.15, state: 0 };
    let db = WorldDb {
        dynamic_colors: Vec::new(),
        texture_matrices: Vec::new(),
        materials: Vec::new(),
        physics_drivers: Vec::new(),
        transforms: Vec::new(),
        world_group: GroupDefinition {
            walls: vec![wall(h, 0.0, PI), wall(-h, 0.0, 0.0), wall(0.0, h, -FRAC_PI_2), wall(0.0, -h, FRAC_PI_2)],
            ..GroupDefinition::default()
        },
        group_defs: Vec::new(),
        links: Vec::new(),
        water_level: -1.0,
        water_material: None,
        weapons: Vec::new(),
        zones: Vec::new(),
    };
    WorldModel::build(&db).expect("open world")
}

fn update(status: PlayerStatus, pos: [f32; 3], vel: [f32; 3], azimuth: f32, ang_vel: f32) -> PlayerUpdate {
    PlayerUpdate {
        small: false,
        timestamp: 0.0,
        id: 7,
        order: 1,
        status,
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

// ------------------------------------------------------------------------------------------------------------
// Dead reckoning.

#[test]
fn reckoning_follows_the_closed_form_circle() {
    // Speed 20 heading +y (azimuth π/2) from (10, 0), turning left at 0.5 rad/s: R = 40, centre (−30, 0).
    let a = FRAC_PI_2;
    let u = update(PlayerStatus::ALIVE, [10.0, 0.0, 0.0], [0.0, 20.0, 0.0], a, 0.5);
    let r = Reckoning::new(&u, &[]);
    assert!(r.is_turning());
    for &t in &[0.0f32, 0.3, 1.0, 2.5, 6.0] {
        let p = r.at(t, -9.8, 0.0);
        let phi = 0.5 * t;
        let want = Vec3::new(-30.0 + 40.0 * phi.cos(), 40.0 * phi.sin(), 0.0);
        assert!(close3(p.pos, want, 1e-3), "t={t} {:?} vs {want:?}", p.pos);
        assert!(close(p.azimuth, a + phi, 1e-5));
        let vwant = Vec3::new(-20.0 * phi.sin(), 20.0 * phi.cos(), 0.0);
        assert!(close3(p.vel, vwant, 1e-3), "{:?}", p.vel);
        // The speed stays 20 and the distance to the centre 40.
        assert!(close(p.pos.truncate().distance(glam::Vec2::new(-30.0, 0.0)), 40.0, 1e-3));
    }
    // Turning right (negative ω) puts the centre on the other side.
    let u = update(PlayerStatus::ALIVE, [0.0, 0.0, 0.0], [10.0, 0.0, 0.0], 0.0, -0.25);
    let p = Reckoning::new(&u, &[]).at(PI / 0.25, -9.8, 0.0); // half a circle of radius 40
    assert!(close3(p.pos, Vec3::new(0.0, -80.0, 0.0), 1e-2), "{:?}", p.pos);
}

#[test]
fn reckoning_straight_paused_and_ballistic() {
    let u = update(PlayerStatus::ALIVE, [1.0, 2.0, 0.0], [3.0, 4.0, 0.0], 0.9273, 0.0005);
    let r = Reckoning::new(&u, &[]);
    assert!(!r.is_turning(), "|ω| ≤ 0.001 is a straight line");
    assert!(close3(r.at(2.0, -9.8, 0.0).pos, Vec3::new(7.0, 10.0, 0.0), 1e-5));
    let paused = update(PlayerStatus::ALIVE | PlayerStatus::PAUSED, [1.0, 2.0, 3.0], [3.0, 4.0, 0.0], 0.0, 1.0);
    let p = Reckoning::new(&paused, &[]).at(5.0, -9.8, 0.0);
    assert_eq!((p.pos, p.vel, p.azimuth), (Vec3::new(1.0, 2.0, 3.0), Vec3::ZERO, 0.0));
    // A jump: vz 19 from z 0 flies 2·19/9.8 = 3.878 s and peaks at 19²/(2·9.8) = 18.418.
    let jump = update(PlayerStatus::ALIVE | PlayerStatus::FALLING, [0.0, 0.0, 0.0], [5.0, 0.0, 19.0], 0.0, 0.2);
    let r = Reckoning::new(&jump, &[]);
    let top = r.at(19.0 / 9.8, -9.8, 0.0);
    assert!(close(top.pos.z, 18.418, 1e-3) && close(top.vel.z, 0.0, 1e-4) && top.falling);
    assert!(close(top.pos.x, 5.0 * 19.0 / 9.8, 1e-4));
    assert!(close(top.azimuth, 0.2 * 19.0 / 9.8, 1e-5), "alive tanks turn while falling");
    let landed = r.at(5.0, -9.8, 0.0);
    assert!(!landed.falling && landed.pos.z == 0.0 && landed.vel.z == 0.0);
    // Dead tanks falling do not turn.
    let dead = update(PlayerStatus::EXPLODING | PlayerStatus::FALLING, [0.0; 3], [0.0; 3], 1.0, 3.0);
    assert_eq!(Reckoning::new(&dead, &[]).at(1.0, -9.8, 0.0).azimuth, 1.0);
}

#[test]
fn reckoning_on_physics_drivers() {
    // A linear driver: the sent velocity includes the belt's (5, 0); the tank itself drives 10 along +y.
    let mut belt = driver("belt");
    belt.linear = Vec3::new(5.0, 0.0, 0.0);
    let mut u = update(PlayerStatus::ALIVE | PlayerStatus::ON_DRIVER, [0.0; 3], [5.0, 10.0, 0.0], FRAC_PI_2, 0.0);
    u.phydrv = 0;
    let p = Reckoning::new(&u, std::slice::from_ref(&belt)).at(2.0, -9.8, 0.0);
    assert!(close3(p.pos, Vec3::new(10.0, 20.0, 0.0), 1e-4) && close3(p.vel, Vec3::new(5.0, 10.0, 0.0), 1e-4));
    // A spinner (1 rad/s about the origin) carrying a tank standing still at (10, 0): it circles the centre.
    let mut spin = driver("spin");
    spin.angular_velocity = 1.0;
    let mut u = update(PlayerStatus::ALIVE | PlayerStatus::ON_DRIVER, [10.0, 0.0, 0.0], [0.0, 10.0, 0.0], 0.0, 1.0);
    u.phydrv = 0;
    let r = Reckoning::new(&u, std::slice::from_ref(&spin));
    assert!(!r.is_turning(), "no motion relative to the driver");
    let p = r.at(FRAC_PI_2, -9.8, 0.0);
    assert!(close3(p.pos, Vec3::new(0.0, 10.0, 0.0), 1e-4), "{:?}", p.pos);
    assert!(close(p.azimuth, FRAC_PI_2, 1e-5));
    assert!(close3(p.vel, Vec3::new(-10.0, 0.0, 0.0), 1e-4), "the tangent where the tank is: {:?}", p.vel);
    // A driver index that does not exist is ignored.
    let mut u = update(PlayerStatus::ALIVE | PlayerStatus::ON_DRIVER, [0.0; 3], [1.0, 0.0, 0.0], 0.0, 0.0);
    u.phydrv = 99;
    assert!(close3(Reckoning::new(&u, &[]).at(1.0, -9.8, 0.0).pos, Vec3::X, 1e-6));
}

#[test]
fn remote_tanks_drop_old_updates_and_stop_responding() {
    let t0 = Instant::now();
    let mut u = update(PlayerStatus::ALIVE, [0.0; 3], [1.0, 0.0, 0.0], 0.0, 0.0);
    u.order = 5;
    let mut rt = RemoteTank::new(&u, t0, &[]);
    let mut old = u;
    old.order = 5;
    old.pos = [50.0, 0.0, 0.0];
    assert!(!rt.accept(&old, t0, &[]), "equal order is dropped");
    old.order = 6;
    assert!(rt.accept(&old, t0 + Duration::from_secs(1), &[]));
    let at = rt.at(t0 + Duration::from_secs(3), -9.8, 0.0, 5.0);
    assert!(close(at.pose.pos.x, 52.0, 1e-4) && !at.not_responding);
    assert!(rt.at(t0 + Duration::from_secs(7), -9.8, 0.0, 5.0).not_responding);
    // Garbage from the wire never poisons the prediction.
    let mut bad = update(PlayerStatus::ALIVE, [f32::NAN, 1.0e30, 0.0], [f32::INFINITY, 0.0, 0.0], f32::NAN, 1.0e20);
    bad.order = 7;
    assert!(rt.accept(&bad, t0, &[]));
    let p = rt.at(t0 + Duration::from_secs(2), -9.8, 0.0, 5.0).pose;
    assert!(p.pos.is_finite() && p.vel.is_finite() && p.azimuth.is_finite());
}

// ------------------------------------------------------------------------------------------------------------
// Update send rule.

fn own(pos: Vec3, vel: Vec3, azimuth: f32) -> OwnState {
    OwnState { status: PlayerStatus::ALIVE, pos, vel, azimuth, ang_vel: 0.0, phydrv: -1, sounds: 0, burrow: false }
}

#[test]
fn update_rule_triggers() {
    let p = phys();
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    let mut s = UpdateSender::new();
    let dead = OwnState { status: PlayerStatus::empty(), ..own(Vec3::ZERO, Vec3::ZERO, 0.0) };
    assert!(!s.should_send(t0, &dead, &p), "dead and nothing changed");
    // Spawning changes the Alive bit.
    let mut st = own(Vec3::ZERO, Vec3::new(10.0, 0.0, 0.0), 0.0);
    let first = s.poll(t0, 3, 0.0, &st, &p, &[]).expect("status change");
    let ClientMsg::PlayerUpdate(u) = first else { panic!("not an update") };
    assert!(u.small && u.order == 1 && u.id == 3, "{u:?}");
    // Moving exactly as predicted: nothing until the 1 s heartbeat.
    for n in [33u64, 100, 500, 999] {
        st.pos = Vec3::new(10.0 * n as f32 / 1000.0, 0.0, 0.0);
        assert!(s.poll(ms(n), 3, 0.0, &st, &p, &[]).is_none(), "{n} ms");
    }
    st.pos = Vec3::new(10.0, 0.0, 0.0);
    let Some(ClientMsg::PlayerUpdate(u)) = s.poll(ms(1000), 3, 1.0, &st, &p, &[]) else { panic!("heartbeat") };
    assert_eq!(u.order, 2);
    // A position error over 0.09 sends, but not within the 1/30 s throttle.
    st.pos.x += 0.2;
    assert!(!s.should_send(ms(1020), &st, &p), "throttled");
    assert!(s.should_send(ms(1040), &st, &p), "0.2 off after 40 ms");
    st.pos.x -= 0.2;
    st.pos.x += 0.4; // 10 u/s × 0.04 s: on the prediction
    assert!(!s.should_send(ms(1040), &st, &p));
    // An angle error over 0.05 rad sends; the wrap at ±π is not an error.
    st.azimuth = 0.06;
    assert!(s.should_send(ms(1040), &st, &p));
    st.azimuth = 0.0;
    // Pausing always sends, even inside the throttle.
    st.status |= PlayerStatus::PAUSED;
    assert!(s.should_send(ms(1001), &st, &p));
    st.status -= PlayerStatus::PAUSED;
    // A pending sound or a driver change sends.
    st.sounds = 1;
    assert!(s.should_send(ms(1001), &st, &p));
    st.sounds = 0;
    st.phydrv = 0;
    assert!(s.should_send(ms(1001), &st, &p));
    st.phydrv = -1;
    // The update before a shot always goes and takes the next order.
    let ClientMsg::PlayerUpdate(u) = s.before_shot(ms(1001), 3, 1.0, &st, &p, &[]) else { panic!() };
    assert_eq!(u.order, 3);
    // Out of the small form's range, or with _noSmallPackets, the full form is used.
    st.vel = Vec3::new(400.0, 0.0, 0.0);
    let ClientMsg::PlayerUpdate(u) = s.before_shot(ms(1002), 3, 1.0, &st, &p, &[]) else { panic!() };
    assert!(!u.small);
    let mut vars = VarStore::defaults();
    vars.set("_noSmallPackets", "1");
    let p2 = Physics::new(&vars, None);
    st.vel = Vec3::ZERO;
    let ClientMsg::PlayerUpdate(u) = s.before_shot(ms(1003), 3, 1.0, &st, &p2, &[]) else { panic!() };
    assert!(!u.small);
}

#[test]
fn update_rule_uses_the_arc_others_predict() {
    let p = phys();
    let t0 = Instant::now();
    let mut s = UpdateSender::new();
    let mut st = own(Vec3::ZERO, Vec3::new(20.0, 0.0, 0.0), 0.0);
    st.ang_vel = 0.5;
    s.poll(t0, 1, 0.0, &st, &p, &[]).expect("first");
    // Half a second later the tank is on the arc R = 40: no update needed.
    let phi = 0.25f32;
    st.pos = Vec3::new(40.0 * phi.sin(), 40.0 - 40.0 * phi.cos(), 0.0);
    st.azimuth = phi;
    st.vel = Vec3::new(20.0 * phi.cos(), 20.0 * phi.sin(), 0.0);
    assert!(!s.should_send(t0 + Duration::from_millis(500), &st, &p));
    // Had it gone straight it would be far off the arc.
    st.pos = Vec3::new(10.0, 0.0, 0.0);
    assert!(s.should_send(t0 + Duration::from_millis(500), &st, &p));
}

// ------------------------------------------------------------------------------------------------------------
// Shots.

fn muzzle(pos: Vec3, vel: Vec3, azimuth: f32, f: Abbv) -> Muzzle {
    Muzzle { pos, vel, azimuth, flag: f, flag_active: false, team: Team::Red, handicap: 0.0 }
}

/// The server's checks of `shotFired` (§11): true when the shot would be relayed.
fn server_accepts(info: &FiringInfo, held: Abbv, last_pos: Vec3, falling: bool, p: &Physics) -> bool {
    if info.flag != flag::NONE && info.flag != held {
        return false;
    }
    if (info.lifetime - p.reload_time).abs() > 1e-6 || usize::from(info.shot_id & 0xff) >= usize::from(p.max_shots) {
        return false;
    }
    let (mut shot_speed, mut tank_speed) = (p.shot_speed, p.tank_speed);
    if info.flag == flag::SHOCK_WAVE {
        shot_speed = 0.0;
        tank_speed = 0.0;
    } else if info.flag == flag::VELOCITY || last_pos.z != info.pos[2] - p.muzzle_height {
        tank_speed *= p.velocity_ad;
    }
    if Vec3::from(info.vel).length() > (shot_speed + tank_speed) * 1.01 {
        return false;
    }
    let mut d = last_pos + Vec3::new(0.0, 0.0, p.muzzle_height) - Vec3::from(info.pos);
    if falling {
        d.z = 0.0;
    }
    let front = p.muzzle_front;
    d.length_squared() <= (p.tank_speed * p.velocity_ad + 2.0 * front).powi(2)
}

#[test]
fn firing_info_passes_the_server_checks() {
    let p = phys();
    let mut gun = Gun::new();
    let pos = Vec3::new(10.0, 20.0, 0.0);
    let m = muzzle(pos, Vec3::new(0.0, 25.0, 0.0), FRAC_PI_2, flag::NONE);
    let info = gun.fire(100.0, 9, &m, &p).expect("fires");
    // Muzzle: 4.32 + 0.1 ahead, 1.57 up; velocity = tank velocity + 100 forward; lifetime = _reloadTime.
    assert!(close3(Vec3::from(info.pos), Vec3::new(10.0, 24.42, 1.57), 1e-4), "{:?}", info.pos);
    assert!(close3(Vec3::from(info.vel), Vec3::new(0.0, 125.0, 0.0), 1e-4));
    assert_eq!((info.lifetime, info.dt, info.shooter, info.team, info.flag), (3.5, 0.0, 9, Team::Red, flag::NONE));
    assert_eq!(info.shot_id, 0x0100, "slot 0, salt 1");
    assert!(server_accepts(&info, flag::NONE, pos, false, &p));
    // Moving backwards at full reverse speed while jumping still passes.
    let m = muzzle(Vec3::new(0.0, 0.0, 5.0), Vec3::new(-12.5, 0.0, 10.0), 0.0, flag::VELOCITY);
    let info = gun.fire(100.0, 9, &m, &p).expect("slot 1");
    assert_eq!(info.vel[2], 0.0, "vertical velocity dropped");
    assert_eq!(info.flag, flag::VELOCITY);
    assert!(server_accepts(&info, flag::VELOCITY, Vec3::new(0.0, 0.0, 5.0), true, &p));
    // Shock wave: at the tank, not moving.
    let m = muzzle(pos, Vec3::new(20.0, 0.0, 0.0), 0.0, flag::SHOCK_WAVE);
    let info = gun.fire(100.0, 9, &m, &p).expect("slot 2");
    assert_eq!((Vec3::from(info.pos), Vec3::from(info.vel)), (pos, Vec3::ZERO));
    assert!(server_accepts(&info, flag::SHOCK_WAVE, pos, false, &p));
    // A Phantom Zone carrier that is not zoned fires plain shots.
    let mut gun = Gun::new();
    let info = gun.fire(0.0, 9, &muzzle(pos, Vec3::ZERO, 0.0, flag::PHANTOM_ZONE), &p).expect("fires");
    assert_eq!(info.flag, flag::NONE);
}

#[test]
fn the_time_sent_carries_our_id_in_its_first_byte() {
    // bzfs takes the first byte of a MsgShotBegin body received over TCP for the shooter id (see time_sent_tag).
    let p = phys();
    let m = muzzle(Vec3::ZERO, Vec3::ZERO, 0.0, flag::NONE);
    for id in [0u8, 1, 64, 65, 66, 127, 128, 199, 255] {
        let info = Gun::new().fire(40.0, id, &m, &p).expect("fires");
        assert!(info.time_sent.is_finite(), "{id}");
        let body = crate::bzflag::msg::Message::encode(&ClientMsg::ShotBegin(info));
        assert_eq!(body[4], id, "the first byte of the body is the shooter id {id}");
        assert_eq!(body[8], id, "and so is the shot's own player byte");
    }
}

#[test]
fn slots_salt_and_reload() {
    let p = phys(); // 3 shots, reload 3.5
    let mut gun = Gun::new();
    gun.safety_margin = 0.0;
    let m = muzzle(Vec3::ZERO, Vec3::ZERO, 0.0, flag::NONE);
    let ids: Vec<u16> = (0..3)
        .map(|i| {
            let t = i as f32 * 0.1;
            let next = gun.next_shot_id(t, 3);
            let id = gun.fire(t, 1, &m, &p).expect("free slot").shot_id;
            assert_eq!(next, Some(id), "next_shot_id says what fire then uses");
            id
        })
        .collect();
    assert_eq!(ids, vec![0x0100, 0x0201, 0x0302]);
    assert_eq!(gun.next_shot_id(1.0, 3), None, "every slot reloading");
    match gun.fire(1.0, 1, &m, &p) {
        Err(FireError::Reloading(left)) => assert!(close(left, 2.5, 1e-5), "{left}"),
        other => panic!("{other:?}"),
    }
    // Slot 0 frees at 3.5 s; the salt goes on counting.
    assert!(gun.fire(3.49, 1, &m, &p).is_err());
    assert_eq!(gun.fire(3.5, 1, &m, &p).expect("reloaded").shot_id, 0x0400);
    // The salt wraps 127 → 1.
    let mut g = Gun::new();
    let p1 = Physics::new(&VarStore::defaults(), Some(&settings(GameOptions::empty(), 1)));
    let mut last = 0;
    for i in 0..128 {
        last = g.fire(i as f32 * 4.0, 1, &m, &p1).expect("one slot").shot_id >> 8;
    }
    assert_eq!(last, 1);
    // Rapid fire reloads in 3.5 / 2; machine gun in 3.5 / 10, but never before the server thinks the shot gone.
    assert!(close(ShotKind::RapidFire.reload_time(&p), 1.75, 1e-6));
    assert!(close(ShotKind::MachineGun.reload_time(&p), 0.35, 1e-6));
    assert!(close(ShotKind::Laser.reload_time(&p), 7.0, 1e-6));
    let mut g = Gun::new();
    let mg = muzzle(Vec3::ZERO, Vec3::ZERO, 0.0, flag::MACHINE_GUN);
    g.fire(0.0, 1, &mg, &p1).expect("fires");
    assert!(g.fire(0.36, 1, &mg, &p1).is_err(), "0.35 + the 0.05 margin");
    assert!(g.fire(0.41, 1, &mg, &p1).is_ok());
    // Pausing delays reloading.
    let mut g = Gun::new();
    g.safety_margin = 0.0;
    g.fire(0.0, 1, &m, &p1).expect("fires");
    g.pause_for(1.0);
    assert!(g.fire(4.0, 1, &m, &p1).is_err() && g.fire(4.5, 1, &m, &p1).is_ok());
}

fn info(pos: Vec3, vel: Vec3, f: Abbv, shot_id: u16) -> FiringInfo {
    FiringInfo {
        time_sent: 0.0,
        shooter: 2,
        shot_id,
        pos: pos.to_array(),
        vel: vel.to_array(),
        dt: 0.0,
        team: Team::Blue,
        flag: f,
        lifetime: 3.5,
    }
}

#[test]
fn shot_paths_ricochet_and_teleport() {
    let w = world();
    let p = phys();
    let now = Instant::now();
    // A plain shot along +x at z 3 from (0, 0) stops on the box face x = 25 after 0.25 s.
    let s = LiveShot::new(
        &info(Vec3::new(0.0, 0.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::NONE, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert_eq!(s.segments.len(), 1);
    assert!(close(s.path_end(), 0.25, 1e-4) && close3(s.segments[0].end(), Vec3::new(25.0, 0.0, 3.0), 1e-3));
    assert!(
        s.position_at(0.3).is_none() && close3(s.position_at(0.1).unwrap_or_default(), Vec3::new(10.0, 0.0, 3.0), 1e-4)
    );
    // With R it bounces back, crosses the world to the west wall (x = −100 at 1.5 s), bounces again.
    let r = LiveShot::new(
        &info(Vec3::new(0.0, 0.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::RICOCHET, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert_eq!(r.segments[1].reason, SegmentReason::Ricochet);
    assert!(close3(r.segments[1].velocity, Vec3::new(-100.0, 0.0, 0.0), 1e-3));
    assert!(close(r.segments[1].t1, 1.5, 1e-3), "{:?}", r.segments);
    assert!(close(r.path_end(), 3.5, 1e-3), "ricochet shots use their whole life");
    // The ricochet box at (0, 80) reflects even a plain shot.
    let b = LiveShot::new(
        &info(Vec3::new(0.0, 60.0, 5.0), Vec3::new(0.0, 100.0, 0.0), flag::NONE, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert!(b.segments.len() >= 2 && close3(b.segments[1].velocity, Vec3::new(0.0, -100.0, 0.0), 1e-3));
    // Through teleporter "a" (entered from its back, −x side) out of "b"'s front face at x = 50.56.
    let t = LiveShot::new(
        &info(Vec3::new(-70.0, -40.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::NONE, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert_eq!(t.segments[1].reason, SegmentReason::Teleport);
    assert!(close3(t.segments[1].start, Vec3::new(50.56, -40.0, 3.0), 1e-2), "{:?}", t.segments);
    assert!(close3(t.segments[1].velocity, Vec3::new(100.0, 0.0, 0.0), 1e-3));
    // Super bullets pass the box and stop only at... nothing: they fly their whole life.
    let sb = LiveShot::new(
        &info(Vec3::new(0.0, 0.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::SUPER_BULLET, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert!(close(sb.path_end(), 3.5, 1e-3));
    // Flag modifiers.
    let f = LiveShot::new(
        &info(Vec3::new(0.0, -20.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::RAPID_FIRE, 0x100),
        now,
        &p,
        None,
    );
    assert!(close(f.velocity.x, 150.0, 1e-3) && close(f.lifetime, 1.75, 1e-5));
    let mg = LiveShot::new(&info(Vec3::ZERO, Vec3::new(100.0, 0.0, 0.0), flag::MACHINE_GUN, 0x100), now, &p, None);
    assert!(close(mg.velocity.x, 150.0, 1e-3) && close(mg.lifetime, 0.35, 1e-5));
    let l = LiveShot::new(&info(Vec3::ZERO, Vec3::new(100.0, 0.0, 0.0), flag::LASER, 0x100), now, &p, None);
    assert!(close(l.velocity.x, 100_000.0, 1.0) && close(l.lifetime, 0.35, 1e-5) && l.kind.is_beam());
    let th = LiveShot::new(&info(Vec3::ZERO, Vec3::new(100.0, 0.0, 0.0), flag::THIEF, 0x100), now, &p, None);
    assert!(close(th.velocity.x, 800.0, 1e-3) && close(th.lifetime, 0.175, 1e-5));
    let sw = LiveShot::new(&info(Vec3::ZERO, Vec3::ZERO, flag::SHOCK_WAVE, 0x100), now, &p, None);
    assert!(close(sw.lifetime, 0.7, 1e-5));
    assert!(close(sw.shock_radius(0.0, &p).unwrap_or(0.0), 6.0, 1e-5));
    assert!(close(sw.shock_radius(0.35, &p).unwrap_or(0.0), 33.0, 1e-4));
    assert!(sw.expired_at(0.7) && !sw.expired_at(0.69));
}

#[test]
fn guided_missiles_turn_towards_their_target() {
    let p = phys();
    let w = world();
    let now = Instant::now();
    let mut s = LiveShot::new(
        &info(Vec3::new(0.0, -20.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::GUIDED_MISSILE, 0x100),
        now,
        &p,
        Some(&w),
    );
    assert!(close(s.lifetime, 3.5 * 0.95, 1e-5));
    let m = s.missile.as_mut().expect("a missile");
    // Target straight to the left: the azimuth turns at most 0.628 rad/s.
    m.step(0.5, Some(Vec3::new(0.0, 80.0, 3.0)), &p, Some(&w));
    assert!(close(m.azimuth, 0.5 * 0.628319, 1e-4), "{}", m.azimuth);
    // It turns first, then flies the step along the new heading.
    let a = 0.5 * 0.628319f32;
    assert!(close3(m.pos, Vec3::new(50.0 * a.cos(), -20.0 + 50.0 * a.sin(), 3.0), 1e-3), "{:?}", m.pos);
    // Without a target it flies straight on; into the ground it ends.
    let before = m.azimuth;
    m.step(0.1, None, &p, Some(&w));
    assert_eq!(m.azimuth, before);
    m.elevation = -0.5;
    for _ in 0..20 {
        m.step(0.1, None, &p, Some(&w));
    }
    assert!(m.expired && m.pos.z.abs() < 1e-3);
}

// ------------------------------------------------------------------------------------------------------------
// Hits.

fn victim(pos: Vec3, vel: Vec3) -> Victim {
    Victim { id: 1, team: Team::Red, flag: flag::NONE, zoned: false, pos, vel, azimuth: 0.0, crossing: None }
}

#[test]
fn hits_on_crossing_rays_and_not_on_near_misses() {
    let p = phys();
    let now = Instant::now();
    // A shell from (−50, 0, 1.025) along +x at 100 u/s; the tank stands at the origin (centre z 1.025).
    let s = LiveShot::new(
        &info(Vec3::new(-50.0, 0.0, 1.025), Vec3::new(100.0, 0.0, 0.0), flag::NONE, 0x0302),
        now,
        &p,
        None,
    );
    let v = victim(Vec3::ZERO, Vec3::ZERO);
    let r = 0.99 * 4.32;
    // During the tick from 0.45 s to 0.5 s the shell comes within 0.99 r at x = −r: 0.5 − r/100 − 0.45 s in.
    let c = HitCandidate { shot: &s, shooter_paused: false, t_prev: 0.45, t_now: 0.5 };
    let h = check_hits(&v, [c], 0.05, &p).expect("hit");
    assert!(close(h.time, 0.05 - r / 100.0, 1e-5), "{}", h.time);
    assert!(close3(h.position, Vec3::new(-r, 0.0, 1.025), 1e-3));
    assert_eq!((h.shooter, h.shot_id, h.kind), (2, 0x0302, ShotKind::Normal));
    // The tick before it the shell is still out of reach.
    let c = HitCandidate { shot: &s, shooter_paused: false, t_prev: 0.40, t_now: 0.45 };
    assert!(check_hits(&v, [c], 0.05, &p).is_none());
    // Offset sideways by 4.3 (inside r = 4.32, outside 0.99 r = 4.277) it misses; by 4.2 it hits.
    let c = HitCandidate { shot: &s, shooter_paused: false, t_prev: 0.45, t_now: 0.55 };
    assert!(check_hits(&victim(Vec3::new(0.0, 4.3, 0.0), Vec3::ZERO), [c], 0.1, &p).is_none());
    assert!(check_hits(&victim(Vec3::new(0.0, 4.2, 0.0), Vec3::ZERO), [c], 0.1, &p).is_some());
    // A tank driving across the shell's path is hit in the tick where they meet (relative motion).
    let mover = victim(Vec3::new(0.0, -10.0, 0.0), Vec3::new(0.0, 20.0, 0.0));
    let c = HitCandidate { shot: &s, shooter_paused: false, t_prev: 0.0, t_now: 0.5 };
    assert!(check_hits(&mover, [c], 0.5, &p).is_some());
    // Narrow tanks are thin: the same sideways offset of 1 misses, head-on still hits.
    let mut narrow = victim(Vec3::new(0.0, 1.0, 0.0), Vec3::ZERO);
    narrow.flag = flag::NARROW;
    assert!(check_hits(&narrow, [c], 0.5, &p).is_none());
    narrow.pos = Vec3::ZERO;
    assert!(check_hits(&narrow, [c], 0.5, &p).is_some());
    // Filters: a paused shooter, a team mate without team kills, a zoned victim, PZ shots on unzoned tanks.
    assert!(check_hits(&v, [HitCandidate { shooter_paused: true, ..c }], 0.5, &p).is_none());
    let mut mate = v;
    mate.team = Team::Blue;
    let no_tk = Physics::new(&VarStore::defaults(), Some(&settings(GameOptions::NO_TEAM_KILLS, 3)));
    assert!(check_hits(&mate, [c], 0.5, &no_tk).is_none());
    assert!(check_hits(&mate, [c], 0.5, &p).is_some(), "team kills allowed");
    let mut zoned = v;
    zoned.zoned = true;
    assert!(check_hits(&zoned, [c], 0.5, &p).is_none());
    // Near side of a teleporter: a hit behind the crossing plane does not count.
    let mut crossing = v;
    crossing.crossing = Some((Vec3::X, 0.0));
    assert!(check_hits(&crossing, [c], 0.5, &p).is_none(), "the shell meets the tank at x < 0");
    crossing.crossing = Some((Vec3::NEG_X, 0.0));
    assert!(check_hits(&crossing, [c], 0.5, &p).is_some());
}

#[test]
fn beams_shock_waves_and_the_messages_a_hit_sends() {
    let p = phys();
    let now = Instant::now();
    let laser =
        LiveShot::new(&info(Vec3::new(-50.0, 0.0, 1.0), Vec3::new(100.0, 0.0, 0.0), flag::LASER, 0x101), now, &p, None);
    let c = HitCandidate { shot: &laser, shooter_paused: false, t_prev: 0.1, t_now: 0.13 };
    let h = check_hits(&victim(Vec3::ZERO, Vec3::ZERO), [c], 0.03, &p).expect("the whole beam is live");
    assert!(!h.stops_shot());
    let cloaked = Victim { flag: flag::CLOAKING, ..victim(Vec3::ZERO, Vec3::ZERO) };
    assert!(check_hits(&cloaked, [c], 0.03, &p).is_none());
    let sw = LiveShot::new(&info(Vec3::new(20.0, 0.0, 0.0), Vec3::ZERO, flag::SHOCK_WAVE, 0x101), now, &p, None);
    let at = |t: f32| HitCandidate { shot: &sw, shooter_paused: false, t_prev: t - 0.03, t_now: t };
    assert!(check_hits(&victim(Vec3::ZERO, Vec3::ZERO), [at(0.1)], 0.03, &p).is_none(), "radius 9.9 at 0.1 s");
    assert!(check_hits(&victim(Vec3::ZERO, Vec3::ZERO), [at(0.3)], 0.03, &p).is_some(), "radius 29.6");
    // Messages: a plain shell ends, then we drop our flag and report the kill.
    let shell =
        LiveShot::new(&info(Vec3::new(-50.0, 0.0, 1.0), Vec3::new(100.0, 0.0, 0.0), flag::NONE, 0x0302), now, &p, None);
    let c = HitCandidate { shot: &shell, shooter_paused: false, t_prev: 0.0, t_now: 0.5 };
    let h = check_hits(&victim(Vec3::ZERO, Vec3::ZERO), [c], 0.5, &p).expect("hit");
    let msgs = hit_messages(&h, 1, flag::VELOCITY, Vec3::ZERO);
    assert!(matches!(msgs[0], ClientMsg::ShotEnd { shooter: 2, shot_id: 0x0302, reason: 1 }));
    assert!(matches!(msgs[1], ClientMsg::DropFlag { .. }));
    assert!(matches!(msgs[2], ClientMsg::Killed { killer: 2, reason: 1, shot_id: 0x0302, .. }));
    // With a Shield: the shot ends and the shield drops, but no kill.
    let msgs = hit_messages(&h, 1, flag::SHIELD, Vec3::ZERO);
    assert_eq!(msgs.len(), 2);
    // End-shot accounting stays balanced: +1 −1 for a kill; shield refund on the drop.
    let mut credit = EndShotCredit::new();
    for m in hit_messages(&h, 1, flag::NONE, Vec3::ZERO) {
        credit.record(&m, flag::NONE);
    }
    assert_eq!(credit.credit(), 0);
    let shield = hit_messages(&h, 1, flag::SHIELD, Vec3::ZERO);
    assert!(credit.allows(&shield, flag::SHIELD, 5.0));
    let mut held = flag::SHIELD;
    for m in &shield {
        credit.record(m, held);
        if matches!(m, ClientMsg::DropFlag { .. }) {
            held = flag::NONE;
        }
    }
    assert_eq!(credit.credit(), 0);
    let six: Vec<ClientMsg> = (0..6).map(|_| ClientMsg::ShotEnd { shooter: 2, shot_id: 1, reason: 1 }).collect();
    assert!(!credit.allows(&six, flag::NONE, 5.0), "six unmatched end shots get a kick");
    // Steamroller radius: 4.32 + 2 × 4.32.
    assert!(run_over(Vec3::ZERO, 4.32, Vec3::new(12.0, 0.0, 0.0), 4.32, &p));
    assert!(!run_over(Vec3::ZERO, 4.32, Vec3::new(12.0, 0.0, 3.0), 4.32, &p), "height counts double");
    let roller = super::hit::Roller {
        id: 5,
        team: Team::Green,
        flag: flag::STEAMROLLER,
        pos: Vec3::new(10.0, 0.0, 0.0),
        radius: 4.32,
        alive: true,
        paused: false,
        zoned: false,
    };
    let me = victim(Vec3::ZERO, Vec3::ZERO);
    assert_eq!(super::hit::run_over_by(&me, Vec3::ZERO, 4.32, [roller], &p), Some(5));
    let plain = super::hit::Roller { flag: flag::NONE, ..roller };
    assert_eq!(super::hit::run_over_by(&me, Vec3::ZERO, 4.32, [plain], &p), None);
    assert_eq!(super::hit::run_over_by(&me, Vec3::new(0.0, 0.0, -1.0), 4.32, [plain], &p), Some(5), "burrowed");
    assert_eq!(
        super::hit::run_over_by(&me, Vec3::ZERO, 4.32, [super::hit::Roller { paused: true, ..roller }], &p),
        None
    );
}

// ------------------------------------------------------------------------------------------------------------
// Our tank.

fn drive(t: &mut Tank, secs: f32, c: Controls, p: &Physics, w: &WorldModel) -> Vec<super::tank::StepReport> {
    let n = (secs * 30.0).round() as usize;
    (0..n).map(|_| t.step(1.0 / 30.0, c, p, w)).collect()
}

#[test]
fn a_tank_drives_turns_and_is_stopped_by_a_box() {
    let p = phys();
    let w = world();
    let mut t = Tank::new(1);
    t.spawn([0.0, -20.0, 0.0], 0.0);
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close3(t.pos, Vec3::new(25.0, -20.0, 0.0), 1e-3), "{:?}", t.pos);
    assert!(close3(t.vel, Vec3::new(25.0, 0.0, 0.0), 1e-3) && t.location == Location::OnGround);
    // Reverse is half speed; the flag V makes forward 1.5 times faster.
    drive(&mut t, 1.0, Controls { speed: -1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.pos.x, 12.5, 1e-3));
    t.flag = flag::VELOCITY;
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.pos.x, 50.0, 1e-3));
    // Turning at full rate for 2 s: π/2 left, on an arc of radius 25 / (π/4).
    let mut t = Tank::new(1);
    t.spawn([0.0, -70.0, 0.0], 0.0);
    drive(&mut t, 2.0, Controls { speed: 1.0, turn: 1.0, jump: false }, &p, &w);
    let r = 25.0 / std::f32::consts::FRAC_PI_4;
    assert!(close(t.azimuth, FRAC_PI_2, 1e-3), "{}", t.azimuth);
    assert!(close3(t.pos, Vec3::new(r, -70.0 + r, 0.0), 0.05), "{:?}", t.pos);
    // Straight into the box's west face (x = 25): the tank stops with its nose (3 ahead) at the face.
    let mut t = Tank::new(1);
    t.spawn([0.0, 0.0, 0.0], 0.0);
    drive(&mut t, 2.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(t.pos.x <= 22.0 + 1e-3 && t.pos.x > 21.9, "{:?}", t.pos);
    assert!(w.tank_collides(&crate::bzflag::world::TankBox::new(t.pos, t.azimuth)).is_none());
    // At 45° against the face it slides along it (north) instead of stopping.
    let mut t = Tank::new(1);
    t.spawn([15.0, -10.0, 0.0], 0.0);
    t.azimuth = std::f32::consts::FRAC_PI_4;
    drive(&mut t, 1.5, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(t.pos.y > 5.0, "slid along the wall and past its corner: {:?}", t.pos);
    assert!(w.tank_collides(&crate::bzflag::world::TankBox::new(t.pos, t.azimuth)).is_none());
}

#[test]
fn a_tank_climbs_low_slabs_but_not_walls_and_jumps_onto_a_platform() {
    let p = phys();
    let w = world();
    // The 0.2-high slab at (−30, 0) is driven onto.
    let mut t = Tank::new(1);
    t.spawn([-50.0, 0.0, 0.0], 0.0);
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.pos.z, 0.2, 1e-3) && t.location == Location::OnBuilding, "{:?} {:?}", t.pos, t.location);
    assert!(!t.status.contains(PlayerStatus::FALLING));
    // Off the far edge it drops back to the ground.
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(t.pos.z == 0.0 && t.location == Location::OnGround && t.pos.x > -20.0, "{:?}", t.pos);
    // The 3-high platform at (0, 40) is not climbed...
    let mut t = Tank::new(1);
    t.spawn([0.0, 20.0, 0.0], FRAC_PI_2);
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.pos.y, 27.0, 0.05) && t.pos.z == 0.0, "{:?}", t.pos);
    // ...but jumped onto: airborne (Falling), lands on the roof at z = 3.
    let mut reports = drive(&mut t, 0.1, Controls { speed: 1.0, turn: 0.0, jump: true }, &p, &w);
    assert!(reports.iter().any(|r| r.jumped) && t.status.contains(PlayerStatus::FALLING));
    assert!(t.sounds & 1 != 0, "the jump sound goes in the next update");
    reports.extend(drive(&mut t, 4.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w));
    assert!(reports.iter().any(|r| r.landed));
    // Pushing against the platform while rising, it moves over the roof once above it and lands there.
    assert!(close(t.pos.z, 3.0, 1e-3) && t.location == Location::OnBuilding, "{:?} {:?}", t.pos, t.location);
    assert!(!t.status.contains(PlayerStatus::FALLING));
    // Standing still on the roof it stays there (no flicker between on-building and in-air).
    let reports = drive(&mut t, 1.0, Controls::default(), &p, &w);
    assert!(reports.iter().all(|r| !r.landed) && t.location == Location::OnBuilding && close(t.pos.z, 3.0, 1e-3));
}

#[test]
fn a_jump_lasts_the_ballistic_time() {
    let p = phys();
    let w = world();
    let mut t = Tank::new(1);
    t.spawn([-60.0, 60.0, 0.0], 0.0);
    let mut n = 0;
    t.step(1.0 / 30.0, Controls { jump: true, ..Controls::default() }, &p, &w);
    let mut top: f32 = 0.0;
    while t.status.contains(PlayerStatus::FALLING) && n < 1000 {
        t.step(1.0 / 30.0, Controls::default(), &p, &w);
        top = top.max(t.pos.z);
        n += 1;
    }
    let air = (n + 1) as f32 / 30.0;
    assert!(close(air, 2.0 * 19.0 / 9.8, 0.07), "{air}");
    assert!(close(top, 19.0 * 19.0 / 19.6, 0.35), "{top}");
    // Without the jumping option (and no JP flag) nothing happens.
    let nojump = Physics::new(&VarStore::defaults(), Some(&settings(GameOptions::empty(), 1)));
    t.step(1.0 / 30.0, Controls { jump: true, ..Controls::default() }, &nojump, &w);
    assert!(!t.status.contains(PlayerStatus::FALLING));
    t.flag = flag::JUMPING;
    t.step(1.0 / 30.0, Controls { jump: true, ..Controls::default() }, &nojump, &w);
    assert!(t.status.contains(PlayerStatus::FALLING));
}

#[test]
fn a_tank_teleports_and_stays_inside_the_world() {
    let p = phys();
    let w = world();
    // Driving east through teleporter "a" (from its −x side, face 1 = "a:b") comes out of "b:f" (face 2).
    let mut t = Tank::new(7);
    t.spawn([-60.0, -40.0, 0.0], 0.0);
    let reports = drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    let tp = reports.iter().find_map(|r| r.teleported).expect("teleported");
    assert_eq!(tp, (1, 2));
    assert!(t.pos.x > 50.0 && close(t.pos.y, -40.0, 1e-2), "{:?}", t.pos);
    assert!(t.status.contains(PlayerStatus::TELEPORTING));
    drive(&mut t, 1.1, Controls::default(), &p, &w);
    assert!(!t.status.contains(PlayerStatus::TELEPORTING), "cleared after _teleportTime");
    // Against the outer wall: stopped inside, never near the server's kick line.
    let mut t = Tank::new(1);
    t.spawn([90.0, 60.0, 0.0], 0.0);
    drive(&mut t, 2.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(t.pos.x < 97.0 + 1e-3 && t.pos.x > 96.0, "{:?}", t.pos);
    // Hostile inputs do not poison the state.
    t.step(f32::NAN, Controls { speed: f32::NAN, turn: f32::INFINITY, jump: true }, &p, &w);
    t.step(1.0e9, Controls { speed: 1.0e9, turn: -1.0e9, jump: false }, &p, &w);
    assert!(t.pos.is_finite() && t.vel.is_finite() && t.azimuth.is_finite());
}

#[test]
fn water_and_explosions() {
    let p = phys();
    let mut w = world();
    w.water_level = Some(0.5);
    let mut t = Tank::new(1);
    t.spawn([-60.0, 60.0, 0.0], 0.0);
    t.flag = flag::VELOCITY;
    let r = t.step(1.0 / 30.0, Controls::default(), &p, &w);
    assert_eq!(r.death, Some(Death::Water));
    let msgs = t.death_messages(4, Death::Water);
    assert!(matches!(msgs[0], ClientMsg::DropFlag { .. }));
    assert!(matches!(msgs[1], ClientMsg::Killed { killer: 4, reason: 6, shot_id: -1, .. }));
    t.explode();
    assert!(t.status.contains(PlayerStatus::EXPLODING) && !t.is_alive() && t.flag == flag::NONE);
    let w = world();
    let reports = drive(&mut t, 5.1, Controls::default(), &p, &w);
    assert!(reports.iter().any(|r| r.explosion_over));
    assert_eq!((t.location, t.status), (Location::Dead, PlayerStatus::empty()));
    // Dead tanks do not move.
    let before = t.pos;
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert_eq!(t.pos, before);
}

#[test]
fn physics_follows_the_variables() {
    let mut vars = VarStore::defaults();
    let p = Physics::new(&vars, None);
    assert_eq!((p.reload_time, p.tank_radius, p.muzzle_front), (3.5, 4.32, 4.42));
    vars.set("_shotSpeed", "50");
    vars.set("_tankSpeed", "nan");
    let p = Physics::new(&vars, Some(&settings(GameOptions::RICOCHET, 5)));
    assert_eq!((p.reload_time, p.tank_speed, p.max_shots, p.world_size), (7.0, 25.0, 5, 200.0));
    assert!(p.all_ricochet() && p.team_kills() && !p.jumping_allowed());
}

fn capture_model(name: &str) -> WorldModel {
    let path = format!("{}/testdata/bzflag/{name}", env!("CARGO_MANIFEST_DIR"));
    let blob = std::fs::read(path).expect("vendored capture");
    WorldModel::build(&crate::bzflag::world::parse_blob(&blob).expect("world parses")).expect("model")
}

/// Random driving on the captured worlds (boxes, pyramids, bases, teleporters, meshes, arcs, cones, spheres):
/// the tank never overlaps a solid, never leaves the world, never reports a speed the server would kick, and
/// keeps moving.
#[test]
fn random_driving_on_captured_worlds_stays_legal() {
    let worlds = [
        ("01-ctf-world.bin", 800.0f32, capture_model("01-ctf-world.bin")),
        ("02-custom-world.bin", 400.0, capture_model("02-custom-world.bin")),
    ];
    for seed in 1..=4u64 {
        for (name, size, w) in &worlds {
            let (name, size) = (*name, *size);
            let mut s = settings(GameOptions::JUMPING, 3);
            s.world_size = size;
            let p = Physics::new(&VarStore::defaults(), Some(&s));
            let mut rng = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(seed);
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng >> 40) as f32 / (1u64 << 24) as f32
            };
            let mut t = Tank::new(3);
            t.spawn([5.0, 5.0, 0.0], 0.0);
            let mut c = Controls::default();
            let mut travelled = 0.0;
            let mut teleports = 0;
            for i in 0..(30 * 240) {
                if i % 30 == 0 {
                    c = Controls { speed: next() * 1.5 - 0.5, turn: next() * 2.0 - 1.0, jump: next() < 0.1 };
                }
                let before = t.pos;
                let r = t.step(1.0 / 30.0, c, &p, w);
                c.jump = false;
                teleports += usize::from(r.teleported.is_some());
                if r.teleported.is_none() {
                    travelled += (t.pos - before).length();
                }
                assert!(t.pos.is_finite() && t.vel.is_finite(), "{name} step {i}");
                assert!(t.pos.x.abs() < size / 2.0 && t.pos.y.abs() < size / 2.0, "{name} step {i}: {:?}", t.pos);
                let planar = t.vel.truncate().length();
                if t.phydrv.is_none() {
                    assert!(planar <= p.tank_speed * 1.05_f32.sqrt() + 1e-3, "{name} step {i}: speed {planar}");
                }
                if t.location != Location::InBuilding {
                    let b = crate::bzflag::world::TankBox::new(t.pos, t.azimuth);
                    if let Some(id) = w.tank_collides(&b) {
                        let o = w.obstacle(id).map(|o| (o.kind, o.pos, o.size, o.angle));
                        panic!(
                            "{name} step {i}: inside {o:?} at {:?} {} {:?} from {before:?} {c:?}",
                            t.pos, t.azimuth, t.location
                        );
                    }
                }
                assert!(t.is_alive());
            }
            assert!(travelled > 1000.0, "{name}: only {travelled} travelled");
            eprintln!("{name} seed {seed}: travelled {travelled:.0}, {teleports} teleports");
        }
    }
}

#[test]
fn a_tank_uses_the_captured_worlds_linked_teleporters() {
    // In the custom capture world "alpha" (at (0, 60)) front links to "beta:b" (at (0, −60), turned 90°): a tank
    // driving west into alpha's front comes out of beta's back heading south (the shot test in world::shots
    // sees the same transform).
    let w = capture_model("02-custom-world.bin");
    let mut s = settings(GameOptions::JUMPING, 3);
    s.world_size = 400.0;
    let p = Physics::new(&VarStore::defaults(), Some(&s));
    let mut t = Tank::new(5);
    t.spawn([10.0, 60.0, 0.0], PI);
    let reports = drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    let (from, to) = reports.iter().find_map(|r| r.teleported).expect("teleported");
    assert_eq!((w.face_name(u32::from(from)), w.face_name(u32::from(to))), ("alpha:f".into(), "beta:b".into()));
    assert!(close(t.pos.x, 0.0, 0.05) && t.pos.y < -60.0, "{:?}", t.pos);
    assert!(close(t.azimuth, -FRAC_PI_2, 1e-3), "{}", t.azimuth);
    assert!(t.vel.y < -20.0, "{:?}", t.vel);
}

#[test]
fn physics_drivers_carry_and_kill_and_a_long_pause_drops_the_flag() {
    let p = phys();
    let w = world();
    // Dropped onto the conveyor roof: it lands, stands on it and is carried east at 5 u/s.
    let mut t = Tank::new(1);
    t.spawn([-78.0, 75.0, 2.5], FRAC_PI_2);
    drive(&mut t, 0.5, Controls::default(), &p, &w);
    assert_eq!((t.location, t.phydrv), (Location::OnBuilding, Some(0)), "{:?}", t.pos);
    assert!(t.status.contains(PlayerStatus::ON_DRIVER));
    let x0 = t.pos.x;
    drive(&mut t, 1.0, Controls::default(), &p, &w);
    assert!(close(t.pos.x - x0, 5.0, 0.05) && close(t.vel.x, 5.0, 1e-3), "{:?} {:?}", t.pos, t.vel);
    assert!(close(t.pos.z, 2.0, 1e-3));
    // The update others get carries the driver, and they reckon the belt's motion.
    let st = t.own_state();
    assert_eq!(st.phydrv, 0);
    // Onto the lava roof: death by physics driver 1.
    let mut t = Tank::new(1);
    t.spawn([-55.0, 75.0, 2.5], 0.0);
    t.flag = flag::VELOCITY;
    let death = drive(&mut t, 0.5, Controls::default(), &p, &w).iter().find_map(|r| r.death);
    assert_eq!(death, Some(Death::PhysicsDriver(1)));
    let msgs = t.death_messages(4, Death::PhysicsDriver(1));
    assert!(matches!(msgs[0], ClientMsg::DropFlag { .. }));
    assert!(matches!(msgs[1], ClientMsg::Killed { killer: 4, reason: 0x7064, phydrv: Some(1), .. }));
    // Paused with a flag for longer than _pauseDropTime (15 s): drop it, once.
    let mut t = Tank::new(1);
    t.spawn([0.0, -80.0, 0.0], 0.0);
    t.flag = flag::VELOCITY;
    t.set_paused(true);
    let reports = drive(&mut t, 16.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert_eq!(reports.iter().filter(|r| r.pause_drop).count(), 1);
    assert_eq!(t.pos, Vec3::new(0.0, -80.0, 0.0), "paused tanks do not move");
}

#[test]
fn missiles_from_the_session_and_their_updates() {
    let p = phys();
    let w = world();
    let now = Instant::now();
    let shot = crate::bzflag::game::Shot {
        info: info(Vec3::new(0.0, -20.0, 3.0), Vec3::new(100.0, 0.0, 0.0), flag::GUIDED_MISSILE, 0x105),
        received: now,
        gm_update: None,
    };
    let mut s = LiveShot::from_game(&shot, &p, Some(&w));
    s.update_missile(0.5, Some(Vec3::new(50.0, 20.0, 3.0)), &p, Some(&w));
    let m = s.missile.as_ref().expect("missile");
    assert!(close(m.time, 0.5, 1e-6) && m.azimuth > 0.0);
    let Some(ClientMsg::GmUpdate { shot: u, target }) = s.gm_update(9, &p) else { panic!("an update") };
    assert_eq!((u.shooter, u.shot_id, target), (2, 0x105, 9));
    assert!(close(Vec3::from(u.vel).length(), 100.0, 1e-3) && close3(Vec3::from(u.pos), m.pos, 1e-6));
    // A missile is harmless for its first 0.5 s, then hits.
    let mut s = LiveShot::new(
        &info(Vec3::new(-30.0, -60.0, 1.0), Vec3::new(100.0, 0.0, 0.0), flag::GUIDED_MISSILE, 0x105),
        now,
        &p,
        Some(&w),
    );
    let v = victim(Vec3::new(40.0, -60.0, 0.0), Vec3::ZERO);
    s.update_missile(0.2, None, &p, Some(&w));
    // It flies through a tank 25 units ahead at 0.25 s without harm (not armed before _gmActivationTime).
    let mut near = s.clone();
    near.update_missile(0.3, None, &p, Some(&w));
    let early = HitCandidate { shot: &near, shooter_paused: false, t_prev: 0.2, t_now: 0.3 };
    assert!(check_hits(&victim(Vec3::new(-5.0, -60.0, 0.0), Vec3::ZERO), [early], 0.1, &p).is_none());
    let mut hit = None;
    let mut age = 0.2;
    while hit.is_none() && age < 1.0 {
        let prev = age;
        age += 1.0 / 30.0;
        s.update_missile(age, None, &p, Some(&w));
        hit = check_hits(
            &v,
            [HitCandidate { shot: &s, shooter_paused: false, t_prev: prev, t_now: age }],
            age - prev,
            &p,
        );
    }
    let h = hit.expect("the missile hits once armed");
    assert!(h.stops_shot() && close(age, 0.7 - 0.99 * 4.32 / 100.0, 0.04), "{age}");
}

#[test]
fn flags_and_accelerations_change_driving() {
    let w = world();
    let p = phys();
    let full = Controls { speed: 1.0, turn: 1.0, jump: false };
    // Quick Turn: 1.5 × π/4 rad/s.
    let mut t = Tank::new(1);
    t.spawn([-60.0, 60.0, 0.0], 0.0);
    t.flag = flag::QUICK_TURN;
    drive(&mut t, 1.0, Controls { turn: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.azimuth, 1.5 * std::f32::consts::FRAC_PI_4, 1e-3), "{}", t.azimuth);
    // Left-turn-only refuses right turns; forward-only refuses reverse.
    t.flag = flag::LEFT_TURN_ONLY;
    let before = t.azimuth;
    drive(&mut t, 0.5, Controls { turn: -1.0, ..Controls::default() }, &p, &w);
    assert_eq!(t.azimuth, before);
    t.flag = flag::FORWARD_ONLY;
    let before = t.pos;
    drive(&mut t, 0.5, Controls { speed: -0.5, ..Controls::default() }, &p, &w);
    assert_eq!(t.pos, before);
    // Burrow: the tank sinks to _burrowDepth and drives at 0.8 speed, turns at 0.55.
    let mut t = Tank::new(1);
    t.spawn([-60.0, -70.0, 0.0], 0.0);
    t.flag = flag::BURROW;
    drive(&mut t, 2.0, Controls::default(), &p, &w);
    assert!(close(t.pos.z, p.burrow_depth, 1e-4), "{:?}", t.pos);
    let x0 = t.pos.x;
    drive(&mut t, 1.0, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.pos.x - x0, 25.0 * 0.8, 1e-2), "{}", t.pos.x - x0);
    // Dropping Burrow: it creeps back up to the ground.
    t.flag = flag::NONE;
    drive(&mut t, 3.0, Controls::default(), &p, &w);
    assert!(close(t.pos.z, 0.0, 1e-4), "{:?}", t.pos);
    // Server accelerations (MsgGameSettings): 20 × linearAcc per second.
    let mut s = settings(GameOptions::JUMPING, 1);
    s.linear_acceleration = 0.5;
    s.angular_acceleration = 1.0;
    let slow = Physics::new(&VarStore::defaults(), Some(&s));
    let mut t = Tank::new(1);
    t.spawn([-60.0, -70.0, 0.0], 0.0);
    drive(&mut t, 1.0, full, &slow, &w);
    // Speed ramps at 10 u/s² to 10 after 1 s; the turn rate at 1 rad/s² (capped at π/4).
    assert!(close(t.vel.truncate().length(), 10.0, 0.05), "{:?}", t.vel);
    assert!(close(t.ang_vel, std::f32::consts::FRAC_PI_4, 1e-3), "{}", t.ang_vel);
    // Momentum uses _momentumLinAcc (1 → 20 u/s²).
    let mut t = Tank::new(1);
    t.spawn([-60.0, -70.0, 0.0], 0.0);
    t.flag = flag::MOMENTUM;
    drive(&mut t, 0.5, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.vel.x, 10.0, 0.05), "{:?}", t.vel);
    // Thief: 1.67 × speed and a smaller hit radius.
    let mut t = Tank::new(1);
    t.spawn([-60.0, -70.0, 0.0], 0.0);
    t.flag = flag::THIEF;
    drive(&mut t, 0.5, Controls { speed: 1.0, ..Controls::default() }, &p, &w);
    assert!(close(t.vel.x, 25.0 * 1.67, 1e-2) && close(t.radius(&p), 4.32 * 0.5, 1e-5));
}

struct Fuzz(u64);

impl Fuzz {
    const WEIRD: [f32; 11] =
        [0.0, -0.0, 1.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.0e30, -1.0e30, 1.0e-30, 3.0e38];
    fn u(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f(&mut self) -> f32 {
        Self::WEIRD[(self.u() % Self::WEIRD.len() as u64) as usize]
    }
    fn v(&mut self) -> [f32; 3] {
        [self.f(), self.f(), self.f()]
    }
}

/// Hostile numbers everywhere: nothing panics and nothing non-finite comes out.
#[test]
fn hostile_values_never_panic_or_poison() {
    let w = world();
    let now = Instant::now();
    let mut z = Fuzz(12345);
    let mut vars = VarStore::defaults();
    for (name, value) in [("_tankSpeed", "1e30"), ("_tankWidth", "0"), ("_reloadTime", "-1"), ("_shotSpeed", "nan")] {
        vars.set(name, value);
    }
    let p = Physics::new(&vars, Some(&settings(GameOptions::all(), 65535)));
    assert!(p.tank_speed.is_finite() && p.tank_width > 0.0 && p.reload_time > 0.0 && p.shot_speed > 0.0);
    let flags = [flag::NONE, flag::GUIDED_MISSILE, flag::LASER, flag::SHOCK_WAVE, flag::RICOCHET, flag::THIEF];
    for _ in 0..400 {
        let status = PlayerStatus::from_bits_retain(z.u() as u16);
        let mut u = update(status, z.v(), z.v(), z.f(), z.f());
        u.phydrv = z.u() as i32;
        let r = Reckoning::new(&u, &w.physics_drivers);
        let _ = r.at(z.f(), z.f(), z.f());
        let fl = flags[(z.u() % flags.len() as u64) as usize];
        let mut fi = info(Vec3::from(z.v()), Vec3::from(z.v()), fl, z.u() as u16);
        fi.lifetime = z.f();
        fi.dt = z.f();
        let mut shot = LiveShot::new(&fi, now, &p, Some(&w));
        shot.update_missile(z.f(), Some(Vec3::from(z.v())), &p, Some(&w));
        let _ = shot.position_at(z.f());
        let vic =
            Victim { pos: Vec3::from(z.v()), vel: Vec3::from(z.v()), azimuth: z.f(), ..victim(Vec3::ZERO, Vec3::ZERO) };
        let c = HitCandidate { shot: &shot, shooter_paused: false, t_prev: z.f(), t_now: z.f() };
        let _ = check_hits(&vic, [c], z.f(), &p);
        let mut t = Tank::new(z.u());
        t.spawn(z.v(), z.f());
        t.flag = fl;
        for _ in 0..3 {
            let c = Controls { speed: z.f(), turn: z.f(), jump: z.u() % 2 == 0 };
            t.step(z.f(), c, &p, &w);
        }
        assert!(t.pos.is_finite() && t.vel.is_finite() && t.azimuth.is_finite() && t.ang_vel.is_finite());
        let mut g = Gun::new();
        if let Ok(i) = g.fire(z.f(), 1, &t.muzzle(Team::Red), &p) {
            assert!(Vec3::from(i.pos).is_finite() && Vec3::from(i.vel).is_finite() && i.time_sent.is_finite());
        }
        let mut s = UpdateSender::new();
        let st = OwnState { azimuth: z.f(), ..t.own_state() };
        if let Some(ClientMsg::PlayerUpdate(u)) = s.poll(now, 1, z.f(), &st, &p, &w.physics_drivers) {
            assert!(Vec3::from(u.pos).is_finite() && u.azimuth.is_finite() && u.timestamp.is_finite());
        }
    }
}

fn flag_state(
    index: u16,
    abbv: &str,
    status: crate::bzflag::consts::FlagStatus,
    pos: [f32; 3],
) -> crate::bzflag::game::FlagState {
    crate::bzflag::game::FlagState {
        index,
        info: crate::bzflag::msg::FlagInfo {
            abbv: Abbv::new(abbv),
            status,
            endurance: 0,
            owner: 255,
            position: pos,
            launch: pos,
            landing: pos,
            flight_time: 0.0,
            flight_end: 0.0,
            initial_velocity: 0.0,
        },
        revealed: None,
        received: Instant::now(),
    }
}

#[test]
fn flag_rules_grab_capture_drop_and_shake() {
    use super::flags::FlagRules;
    use crate::bzflag::consts::FlagStatus;
    let p = phys();
    let mut t = Tank::new(1);
    t.spawn([0.0, 0.0, 0.0], 0.0);
    let flags: std::collections::HashMap<u16, _> = [
        (0, flag_state(0, "PZ", FlagStatus::OnGround, [6.0, 0.0, 0.0])), // within 4.32 + 2.5
        (1, flag_state(1, "PZ", FlagStatus::OnGround, [7.0, 0.0, 0.0])), // too far
        (2, flag_state(2, "PZ", FlagStatus::OnGround, [0.0, 3.0, 0.2])), // too high
        (3, flag_state(3, "PZ", FlagStatus::InAir, [0.0, -3.0, 0.0])),   // flying
        (4, flag_state(4, "PZ", FlagStatus::OnGround, [-3.0, -3.0, 0.05])), // fine
    ]
    .into_iter()
    .collect();
    let mut rules = FlagRules::new();
    let grabs = rules.grabs(10.0, &t, &flags, &p);
    assert_eq!(grabs, vec![ClientMsg::GrabFlag { index: 0 }, ClientMsg::GrabFlag { index: 4 }]);
    assert!(rules.grabs(10.1, &t, &flags, &p).is_empty(), "at most every 0.2 s");
    assert_eq!(rules.grabs(10.25, &t, &flags, &p).len(), 2);
    t.flag = flag::VELOCITY;
    assert!(rules.grabs(11.0, &t, &flags, &p).is_empty(), "carrying one already");
    // Dropping: not sticky flags, not while paused.
    assert!(FlagRules::can_drop(&t, 1));
    assert!(!FlagRules::can_drop(&t, 2));
    // Captures on the CTF capture world, standing on the bases.
    let w = capture_model("01-ctf-world.bin");
    let red = w.bases_of(1).next().expect("red base").pos;
    let green = w.bases_of(2).next().expect("green base").pos;
    let mut t = Tank::new(1);
    t.spawn(red.to_array(), 0.0);
    t.flag = Abbv::new("G*");
    assert_eq!(rules.capture(&t, Team::Red, &w), Some(ClientMsg::CaptureFlag { team: Team::Red }));
    t.flag = Abbv::new("R*");
    assert_eq!(rules.capture(&t, Team::Red, &w), None, "our own flag at home");
    t.spawn(green.to_array(), 0.0);
    t.flag = Abbv::new("R*");
    assert_eq!(rules.capture(&t, Team::Red, &w), Some(ClientMsg::CaptureFlag { team: Team::Green }));
    t.flag = Abbv::new("B*");
    assert_eq!(rules.capture(&t, Team::Red, &w), None, "someone else's flag on someone else's base");
    // Shaking a sticky flag: 3 s timeout, or 2 wins.
    let mut s = settings(GameOptions::SHAKABLE, 1);
    s.shake_timeout = 30;
    s.shake_wins = 2;
    let mut rules = FlagRules::new();
    t.flag = Abbv::new("B");
    rules.on_flag(t.flag, 2, Some(&s));
    assert!((0..89).all(|_| rules.tick(1.0 / 30.0, &t).is_none()));
    assert!(matches!(rules.tick(0.1, &t), Some(ClientMsg::DropFlag { .. })));
    rules.on_flag(t.flag, 2, Some(&s));
    assert!(rules.on_wins(1, &t).is_none());
    assert!(matches!(rules.on_wins(1, &t), Some(ClientMsg::DropFlag { .. })));
    rules.on_flag(t.flag, 2, Some(&settings(GameOptions::empty(), 1)));
    assert!(rules.tick(100.0, &t).is_none(), "not shakable");
}

/// Lines and arcs in the open: what others predict from our updates stays within the tolerances plus one
/// tick's drift, at a modest update rate.
#[test]
fn others_predict_us_within_the_tolerances() {
    let mut gs = settings(GameOptions::JUMPING, 3);
    gs.world_size = 800.0;
    let p = Physics::new(&VarStore::defaults(), Some(&gs));
    let w = open_world();
    let t0 = Instant::now();
    let mut t = Tank::new(1);
    t.spawn([-60.0, 60.0, 0.0], 0.0);
    let mut s = UpdateSender::new();
    let (mut worst_pos, mut worst_angle, mut sent) = (0.0f32, 0.0f32, 0);
    let ticks = 30 * 20;
    for i in 0..ticks {
        let time = i as f32 / 30.0;
        // Straight for 2 s, then arcs whose turn rate changes every 2 s (within a 25-unit circle around the start).
        let turn = if time < 2.0 { 0.0 } else { [1.0, 0.5, -0.7, 0.3, -1.0][(time / 2.0) as usize % 5] };
        t.step(1.0 / 30.0, Controls { speed: 0.6, turn, jump: false }, &p, &w);
        let now = t0 + Duration::from_secs_f32(time);
        if let Some(pred) = s.predicted(now, &p) {
            worst_pos = worst_pos.max((pred.pos - t.pos).abs().max_element());
            worst_angle = worst_angle.max(crate::bzflag::msg::wrap_angle(pred.azimuth - t.azimuth).abs());
        }
        if s.poll(now, 1, time, &t.own_state(), &p, &[]).is_some() {
            sent += 1;
        }
    }
    eprintln!("worst position error {worst_pos:.3}, angle {worst_angle:.3}, {sent} updates in 20 s");
    // The error is checked after each tick, so it can exceed the tolerance by one tick's divergence.
    assert!(worst_pos < 0.09 + 0.03, "{worst_pos}");
    assert!(worst_angle < 0.05 + 0.06, "{worst_angle}");
    assert!(sent <= 30, "{sent} updates: the 1 s heartbeat and the turn changes only");
}

#[test]
fn the_shot_tracker_follows_the_session() {
    let p = phys();
    let w = world();
    let now = Instant::now();
    let mut game = std::collections::HashMap::new();
    let mk = |id: u16, f: Abbv, at: Instant| crate::bzflag::game::Shot {
        info: info(Vec3::new(0.0, -20.0, 3.0), Vec3::new(100.0, 0.0, 0.0), f, id),
        received: at,
        gm_update: None,
    };
    game.insert((2, 0x100), mk(0x100, flag::NONE, now));
    game.insert((2, 0x201), mk(0x201, flag::GUIDED_MISSILE, now));
    let mut tr = super::shots::ShotTracker::new();
    tr.sync(&game, &p, Some(&w));
    assert_eq!(tr.len(), 2);
    let first = tr.get(2, 0x100).map(|s| s.segments.clone());
    // A missile update is applied once.
    let upd = crate::bzflag::msg::ShotUpdate {
        shooter: 2,
        shot_id: 0x201,
        pos: [10.0, -20.0, 3.0],
        vel: [0.0, 100.0, 0.0],
        dt: 0.1,
        team: Team::Blue,
    };
    if let Some(s) = game.get_mut(&(2, 0x201)) {
        s.gm_update = Some((upd, now, 7));
    }
    tr.sync(&game, &p, Some(&w));
    let m = tr.get(2, 0x201).and_then(|s| s.missile.clone()).expect("missile");
    assert_eq!((m.target, m.pos), (7, Vec3::new(10.0, -20.0, 3.0)));
    assert!(close(m.azimuth, FRAC_PI_2, 1e-5));
    // Unchanged shots keep their path; a slot reused (new receive time) is rebuilt; gone shots are dropped.
    assert_eq!(tr.get(2, 0x100).map(|s| s.segments.clone()), first);
    game.remove(&(2, 0x201));
    game.insert((2, 0x100), mk(0x100, flag::RAPID_FIRE, now + Duration::from_secs(4)));
    tr.sync(&game, &p, Some(&w));
    assert_eq!(tr.len(), 1);
    assert_eq!(tr.get(2, 0x100).map(|s| s.kind), Some(ShotKind::RapidFire));
}
