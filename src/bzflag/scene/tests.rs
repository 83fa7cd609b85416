//! The scene in virtual time: tanks reckoned, missiles flown, physics read again after a variable.

use std::time::{Duration, Instant};

use glam::Vec3;

use super::*;
use crate::bzflag::game::Shot;
use crate::bzflag::msg::{FiringInfo, PlayerUpdate};

fn player(id: u8, team: Team) -> Player {
    Player {
        id,
        callsign: format!("p{id}"),
        motto: String::new(),
        team,
        player_type: PlayerType::Tank,
        wins: 0,
        losses: 0,
        team_kills: 0,
        info_bits: 0,
        handicap: 0,
        address: None,
        alive: true,
        paused: false,
        autopilot: false,
        flag: None,
        spawn: Some(([1.0, 2.0, 0.0], 0.5)),
        last_update: None,
    }
}

fn update(id: u8, pos: [f32; 3], vel: [f32; 3]) -> PlayerUpdate {
    PlayerUpdate {
        small: false,
        timestamp: 0.0,
        id,
        order: 1,
        status: PlayerStatus::ALIVE,
        pos,
        vel,
        azimuth: 0.0,
        ang_vel: 0.0,
        jump_jets: 0.0,
        phydrv: -1,
        user_inputs: (0.0, 0.0),
        sounds: 0,
    }
}

fn secs(t0: Instant, s: f32) -> Instant {
    t0 + Duration::from_secs_f32(s)
}

#[test]
fn tanks_are_reckoned_to_the_time_asked_and_observers_left_out() {
    let t0 = Instant::now();
    let mut game = Game::default();
    let mut moving = player(3, Team::Red);
    moving.last_update = Some((update(3, [0.0, 0.0, 0.0], [10.0, 0.0, 0.0]), t0));
    game.players.insert(3, moving);
    game.players.insert(1, player(1, Team::Green));
    game.players.insert(9, player(9, Team::Observer));
    let mut scene = Scene::new();
    scene.follow(&game, None, secs(t0, 1.0));
    let ids: Vec<u8> = scene.tanks().iter().map(|t| t.id).collect();
    assert_eq!(ids, vec![1, 3]);
    let t = scene.tank(3).unwrap();
    assert!((t.pose.pos - Vec3::new(10.0, 0.0, 0.0)).length() < 1e-3, "{:?}", t.pose);
    assert!((t.age - 1.0).abs() < 1e-3 && t.alive && !t.not_responding);
    assert_eq!(t.velocity(), Vec3::new(10.0, 0.0, 0.0));
    // Never updated: at its spawn point, at rest.
    let still = scene.tank(1).unwrap();
    assert_eq!((still.pose.pos, still.pose.azimuth, still.reckoning), (Vec3::new(1.0, 2.0, 0.0), 0.5, None));
    // Another time than the follow's.
    let later = scene.tank_at(3, secs(t0, 2.5)).unwrap();
    assert!((later.pose.pos.x - 25.0).abs() < 1e-3 && (later.age - 2.5).abs() < 1e-3);
    assert_eq!(scene.tank_at(1, secs(t0, 2.5)).unwrap().pose, still.pose);
    assert!(scene.tank_at(9, t0).is_none());
    // Silent past `_notRespondingTime`: flagged, and no longer turning.
    scene.follow(&game, None, secs(t0, 30.0));
    assert!(scene.tank(3).unwrap().not_responding);
    assert_eq!(scene.tank(3).unwrap().angular_velocity(), 0.0);
    // Gone from the game: gone from the scene.
    game.players.remove(&3);
    scene.follow(&game, None, secs(t0, 31.0));
    assert!(scene.tank(3).is_none());
}

fn missile_game(t0: Instant) -> Game {
    let mut game = Game::default();
    // The target sits 100 units to the left of the missile's line.
    let mut target = player(5, Team::Red);
    target.last_update = Some((update(5, [100.0, 100.0, 0.0], [0.0, 0.0, 0.0]), t0));
    game.players.insert(5, target);
    let info = FiringInfo {
        time_sent: 0.0,
        shooter: 2,
        shot_id: 1,
        pos: [0.0, 0.0, 1.57],
        vel: [100.0, 0.0, 0.0],
        dt: 0.0,
        team: Team::Blue,
        flag: crate::bzflag::play::physics::flag::GUIDED_MISSILE,
        lifetime: 3.5,
    };
    let shot = Shot { info, received: t0, gm_update: None };
    game.shots.insert((2, 1), shot);
    game
}

/// Points the missile at target 5 (as a `MsgGMUpdate` would).
fn lock(scene: &mut Scene) {
    for s in scene.tracker.iter_mut() {
        if let Some(m) = s.missile.as_mut() {
            m.target = 5;
        }
    }
}

#[test]
fn a_missile_turns_to_its_target_the_same_however_often_followed() {
    let t0 = Instant::now();
    let game = missile_game(t0);
    let (mut often, mut once) = (Scene::new(), Scene::new());
    often.follow(&game, None, t0);
    once.follow(&game, None, t0);
    lock(&mut often);
    lock(&mut once);
    for i in 1..=10 {
        often.follow(&game, None, secs(t0, 0.1 * i as f32));
    }
    once.follow(&game, None, secs(t0, 1.0));
    let pos = |s: &Scene| s.shots_at(secs(t0, 1.0)).next().map(|x| x.pos).unwrap();
    let (a, b) = (pos(&often), pos(&once));
    assert!((a - b).length() < 0.05, "{a} vs {b}");
    // It turned left, towards the target.
    assert!(a.y > 1.0, "{a}");
    let flown = often.shots_at(secs(t0, 1.0)).next().unwrap();
    assert!(flown.vel.y > 0.0 && (flown.age - 1.0).abs() < 1e-3);
}

#[test]
fn the_physics_follow_the_variables_and_a_reset_forgets_everything() {
    let t0 = Instant::now();
    let mut game = Game::default();
    let mut scene = Scene::new();
    assert!(scene.physics().is_none());
    scene.follow(&game, None, t0);
    let before = scene.physics().unwrap().gravity;
    game.vars.set("_gravity", "-20");
    scene.follow(&game, None, t0);
    assert_eq!((before, scene.physics().unwrap().gravity), (-9.8, -20.0));
    game.players.insert(1, player(1, Team::Red));
    scene.follow(&game, None, t0);
    assert_eq!(scene.time(), Some(t0));
    scene.reset();
    assert!(scene.physics().is_none() && scene.tanks().is_empty() && scene.time().is_none());
}
