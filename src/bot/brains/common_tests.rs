//! The last check before a shot leaves ([`shot_after_step_endangers`]) on a hand-built scene.

use std::time::Instant;

use glam::Vec3;

use super::*;
use crate::bot::aim::tests::{settings, world_with};
use crate::bot::view::{Me, NavSlot};
use crate::bzflag::consts::{GameOptions, PlayerType, Team};
use crate::bzflag::game::Game;
use crate::bzflag::play::{Physics, Pose, ShotTracker, Tank};
use crate::bzflag::vars::VarStore;

fn mate_at(pos: Vec3) -> TankView {
    TankView {
        id: 2,
        team: Team::Red,
        player_type: PlayerType::Computer,
        alive: true,
        paused: false,
        flag: None,
        pose: Pose { pos, vel: Vec3::ZERO, azimuth: 0.0, falling: false },
        reckoning: None,
        age: 0.0,
        not_responding: false,
        ours: false,
    }
}

/// Our tank at the centre facing east, turning left at full rate for `dt` seconds before it fires; a team mate
/// standing still where that turn points the gun, 200 units out (far off the line of the heading before the turn).
fn check(options: GameOptions, turn: f32) -> (bool, bool) {
    let s = settings(options, 800.0);
    let phys = Physics::new(&VarStore::defaults(), Some(&s));
    let world = world_with(400.0, Vec::new());
    let game = Game { settings: Some(s), ..Game::default() };
    let mut tank = Tank::new(1);
    tank.spawn([0.0, 0.0, 0.0], 0.0);
    let dt = 0.5;
    let az = phys.tank_ang_vel * dt;
    let tanks = vec![mate_at(Vec3::new(200.0 * az.cos(), 200.0 * az.sin(), 0.0))];
    let (shots, nav) = (ShotTracker::new(), NavSlot::default());
    let view = View {
        now: Instant::now(),
        time: 10.0,
        dt,
        me: Me {
            id: 1,
            team: Team::Red,
            callsign: "me",
            tank: &tank,
            reload: 0.0,
            flag_index: None,
            next_shot_id: None,
        },
        world: &world,
        phys: &phys,
        game: &game,
        tanks: &tanks,
        own_tanks: &[],
        shots: &shots,
        nav: &nav,
    };
    let control = Control { turn, fire: true, ..Control::default() };
    (endangers_team_mate(&view), shot_after_step_endangers(&view, &control))
}

#[test]
fn a_shot_is_checked_from_the_heading_the_step_gives_it() {
    let team = GameOptions::empty();
    // Aimed from the heading before the turn, the shot passes the mate far off; from the heading after the step
    // it goes straight at it.
    assert_eq!(check(team, 1.0), (false, true));
    // No turn: neither check sees the mate (it stands 0.8 rad off the line).
    assert_eq!(check(team, 0.0), (false, false));
    // With team kills off, nothing endangers a team mate.
    assert_eq!(check(team | GameOptions::NO_TEAM_KILLS, 1.0), (false, false));
}
