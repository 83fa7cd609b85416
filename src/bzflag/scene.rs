//! [`Scene`]: one follower of a game's scene, for every reader of a game (the bots, the web view, replays, learning
//! environments): every other tank dead-reckoned with [`RemoteTank`], every live shot followed with its path
//! ([`ShotTracker`]: ricochets and teleporters included), and guided missiles flown towards their targets with the
//! library's own [`GuidedMissile`](super::play::GuidedMissile) steering.
//!
//! # Contract
//!
//! Sans-IO, like the rest of the engine: the scene reads a session's [`Game`] (the roster, shots and flags the
//! session built from the server's messages) and the [`WorldModel`] when there is one, and is told `now` by its
//! caller on every call; it never reads the clock. Call [`Scene::follow`] whenever you want the picture brought to
//! a time, then read [`Scene::tanks`] (at that time) or ask [`Scene::tank_at`] for
//! another time. A new world (or a new session) calls for [`Scene::reset`].
//!
//! ```text
//! scene.follow(game, Some(&world), now)           (physics, shots synced, missiles flown, tanks reckoned to now)
//! scene.tanks()  scene.tank(id)  scene.tank_at(id, later)  scene.shots()  scene.shots_at(now)
//! ```

use std::collections::HashMap;
use std::time::Instant;

use glam::Vec3;

use super::consts::{PlayerStatus, PlayerType, Team};
use super::game::{Game, Player};
use super::msg::Abbv;
use super::play::physics::flag;
use super::play::{LiveShot, Physics, Pose, Reckoning, RemotePose, RemoteTank, ShotKind, ShotTracker};
use super::world::WorldModel;

/// Guided missiles are flown in steps of at most this (s): finer than a bot's tick and than the official client's
/// frame at 30 Hz, so a missile turns the same however often the scene is followed.
pub const MISSILE_STEP: f32 = 0.02;

/// A tank of the scene at one time (its spawn point, at rest, until its first update).
#[derive(Debug, Clone, PartialEq)]
pub struct SceneTank {
    /// Player id.
    pub id: u8,
    /// Team.
    pub team: Team,
    /// Human-driven tank or robot.
    pub player_type: PlayerType,
    /// Alive: spawned and not killed since, and (once it sent an update) its last update says so.
    pub alive: bool,
    /// Paused.
    pub paused: bool,
    /// The flag it carries, when known.
    pub flag: Option<Abbv>,
    /// Where it is at the time asked.
    pub pose: Pose,
    /// Its last update, to predict it further.
    pub reckoning: Option<Reckoning>,
    /// Seconds since that update was received.
    pub age: f32,
    /// No update for longer than `_notRespondingTime` while alive.
    pub not_responding: bool,
    /// One of the reader's own (the bot host marks its bots); always false from the scene.
    pub ours: bool,
}

impl SceneTank {
    /// Where the tank will be `t` seconds after the time it is at, continuing on the line, arc or fall of its last
    /// update (where it is, when it sent none).
    pub fn predict(&self, t: f32, phys: &Physics) -> Pose {
        match &self.reckoning {
            Some(r) if t.is_finite() => r.at((self.age + t.max(0.0)).min(3600.0), phys.gravity, 0.0),
            _ => self.pose,
        }
    }

    /// The centre of the tank (its position plus half its height): what shots must come close to.
    pub fn centre(&self, phys: &Physics) -> Vec3 {
        self.pose.pos + Vec3::new(0.0, 0.0, 0.5 * phys.tank_height)
    }

    /// Its angular velocity (rad/s) as its last update gives it: 0 when dead, not responding or never updated.
    pub fn angular_velocity(&self) -> f32 {
        match &self.reckoning {
            Some(r) if r.status.contains(PlayerStatus::ALIVE) && !self.not_responding => r.ang_vel,
            _ => 0.0,
        }
    }

    /// Its velocity: 0 when its last update says it is dead, or it never sent one.
    pub fn velocity(&self) -> Vec3 {
        match &self.reckoning {
            Some(r) if r.status.contains(PlayerStatus::ALIVE) => self.pose.vel,
            _ => Vec3::ZERO,
        }
    }
}

/// A live shot at one time: where it is and how it moves.
#[derive(Debug, Clone, Copy)]
pub struct ShotAt<'a> {
    /// The shot with its whole path.
    pub shot: &'a LiveShot,
    /// Its age (s).
    pub age: f32,
    /// Where it is.
    pub pos: Vec3,
    /// Its velocity on the segment it is on.
    pub vel: Vec3,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct Scene {
    phys: Option<Physics>,
    tracker: ShotTracker,
    remotes: HashMap<u8, RemoteTank>,
    tanks: Vec<SceneTank>,
    /// The time [`Scene::tanks`] are at.
    at: Option<Instant>,
}

impl Scene {
    /// An empty scene.
    pub fn new() -> Scene {
        Scene::default()
    }

    /// Forget every tank and shot (a new world, or a new session).
    pub fn reset(&mut self) {
        *self = Scene::default();
    }

    /// Brings the scene to `now`: the physics read from the game's variables and settings (a hundred cached
    /// look-ups: read every time, so a variable, new settings or another source session can never leave them
    /// stale), the shots synced with the game's (guided missiles flown
    /// on towards their targets in steps of at most [`MISSILE_STEP`]), and every tank but the observers
    /// dead-reckoned to `now`, sorted by id.
    pub fn follow(&mut self, game: &Game, world: Option<&WorldModel>, now: Instant) {
        let phys = self.phys.insert(Physics::new(&game.vars, game.settings.as_ref()));
        self.tracker.sync(&game.shots, phys, world);
        let drivers = world.map_or(&[][..], |w| w.physics_drivers.as_slice());
        self.remotes.retain(|id, _| game.players.get(id).is_some_and(|p| p.last_update.is_some()));
        for p in game.players.values() {
            if let Some((u, at)) = &p.last_update {
                let e = self.remotes.entry(p.id).or_insert_with(|| RemoteTank::new(u, *at, drivers));
                if e.received != *at || e.order != u.order {
                    *e = RemoteTank::new(u, *at, drivers);
                }
            }
        }
        self.tanks.clear();
        for p in game.players.values().filter(|p| p.team != Team::Observer) {
            self.tanks.push(tank_of(game, phys, p, self.remotes.get(&p.id), now));
        }
        self.tanks.sort_unstable_by_key(|t| t.id);
        self.at = Some(now);

        let (tanks, phys) = (&self.tanks, &*phys);
        for shot in self.tracker.iter_mut() {
            let Some(target) = shot.missile.as_ref().filter(|m| !m.expired).map(|m| m.target) else { continue };
            let aim = tanks
                .binary_search_by_key(&target, |t| t.id)
                .ok()
                .map(|i| &tanks[i])
                .filter(|t| t.alive)
                .map(|t| t.pose.pos + Vec3::new(0.0, 0.0, phys.muzzle_height));
            let age = shot.age(now);
            let mut t = shot.missile.as_ref().map_or(age, |m| m.time);
            while t < age {
                t = (t + MISSILE_STEP).min(age);
                shot.update_missile(t, aim, phys, world);
            }
        }
    }

    /// The server's physics as read by the last [`Scene::follow`] (`None` before the first).
    pub fn physics(&self) -> Option<&Physics> {
        self.phys.as_ref()
    }

    /// Every tank but the observers at the time of the last [`Scene::follow`], sorted by id.
    pub fn tanks(&self) -> &[SceneTank] {
        &self.tanks
    }

    /// When [`Scene::tanks`] are (the last [`Scene::follow`]).
    pub fn time(&self) -> Option<Instant> {
        self.at
    }

    /// Tank `id` of the last [`Scene::follow`].
    pub fn tank(&self, id: u8) -> Option<&SceneTank> {
        self.tanks.binary_search_by_key(&id, |t| t.id).ok().map(|i| &self.tanks[i])
    }

    /// Tank `id` of the last [`Scene::follow`], dead-reckoned on to `now` (at its spawn point, at rest, while it
    /// sent no update).
    pub fn tank_at(&self, id: u8, now: Instant) -> Option<SceneTank> {
        let phys = self.phys.as_ref()?;
        let mut t = self.tank(id)?.clone();
        if let Some(r) = self.remotes.get(&id).filter(|_| t.reckoning.is_some()) {
            let rp = reckon(r, t.flag, phys, now);
            (t.pose, t.age, t.not_responding) = (rp.pose, rp.age, rp.not_responding);
        }
        Some(t)
    }

    /// Every live shot with its whole path.
    pub fn shots(&self) -> &ShotTracker {
        &self.tracker
    }

    /// Every live shot where it is at `now` (shots over by then are left out).
    pub fn shots_at(&self, now: Instant) -> impl Iterator<Item = ShotAt<'_>> + '_ {
        self.tracker.iter().filter_map(move |shot| {
            let age = shot.age(now);
            let pos = shot.position_at(age)?;
            let vel = match (shot.kind, shot.missile.as_ref()) {
                (ShotKind::GuidedMissile, Some(m)) => m.direction() * shot.velocity.length(),
                _ => shot.segments.iter().find(|g| age >= g.t0 && age < g.t1).map_or(shot.velocity, |g| g.velocity),
            };
            Some(ShotAt { shot, age, pos, vel })
        })
    }
}

/// Where a tank carrying `flag` is at `now` (on the ground a Burrow flag lowers).
fn reckon(r: &RemoteTank, flag: Option<Abbv>, phys: &Physics, now: Instant) -> RemotePose {
    let ground = if flag == Some(flag::BURROW) { phys.burrow_depth } else { 0.0 };
    r.at(now, phys.gravity, ground, phys.not_responding_time)
}

/// Player `p` at `now`: dead-reckoned from its last update (on the ground a Burrow flag lowers), else at its spawn.
fn tank_of(game: &Game, phys: &Physics, p: &Player, remote: Option<&RemoteTank>, now: Instant) -> SceneTank {
    let flag_abbv = p.flag.and_then(|i| game.flags.get(&i)).map(|f| f.abbv());
    let remote = remote.filter(|r| Some(r.received) == p.last_update.as_ref().map(|u| u.1));
    let (pose, reckoning, age, not_responding) = match remote {
        Some(r) => {
            let rp = reckon(r, flag_abbv, phys, now);
            (rp.pose, Some(r.reckoning), rp.age, rp.not_responding)
        }
        None => {
            let (pos, az) = p.spawn.unwrap_or(([0.0; 3], 0.0));
            (Pose { pos: pos.into(), vel: Vec3::ZERO, azimuth: az, falling: false }, None, 0.0, false)
        }
    };
    let status_alive = reckoning.as_ref().is_none_or(|r| r.status.contains(PlayerStatus::ALIVE));
    SceneTank {
        id: p.id,
        team: p.team,
        player_type: p.player_type,
        alive: p.alive && status_alive,
        paused: p.paused,
        flag: flag_abbv,
        pose,
        reckoning,
        age,
        not_responding,
        ours: false,
    }
}

#[cfg(test)]
mod tests;
