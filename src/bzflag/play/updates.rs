//! When to send our own `MsgPlayerUpdate` (§9.3, `Player::isDeadReckoningWrong`), in which form, with which
//! `order`.
//!
//! Evaluate [`UpdateSender::poll`] every tick with our true state; it returns the update to send, if any:
//!
//! 1. the Alive, Paused or Falling bit differs from the last update sent (also while dead);
//! 2. (never while dead otherwise) a sound is pending, or the physics driver under the tank changed;
//! 3. a second or more since the last update;
//! 4. the dead-reckoned z of the last update is below the ground limit (0, or `_burrowDepth` with Burrow);
//! 5. never sooner than 1/`_updateThrottleRate` s after the last one, unless 1–4;
//! 6. our position differs from what others predict by more than `_positionTolerance` on any axis, or the
//!    azimuth by more than `_angleTolerance`.
//!
//! [`UpdateSender::before_shot`] builds the update that always goes right before a `MsgShotBegin`. Every
//! update takes the next `order`; the small `ps` form is used unless `_noSmallPackets` is set or a value is
//! out of its range. Observers must not send updates at all (the caller's business).

use std::time::Instant;

use glam::Vec3;

use super::physics::Physics;
use super::reckon::{DriverMotion, Pose, Reckoning};
use crate::bzflag::consts::PlayerStatus;
use crate::bzflag::msg::{wrap_angle, ClientMsg, PlayerUpdate};
use crate::bzflag::world::PhysicsDriver;
use crate::wire::{Reader, Writer};

/// The official client's `MaxUpdateTime`: at least one update a second.
pub const MAX_UPDATE_TIME: f32 = 1.0;

/// The update as a receiver decodes it (the small form's quantisation applied).
pub fn as_received(u: &PlayerUpdate) -> PlayerUpdate {
    let mut w = Writer::new();
    u.write(&mut w);
    let mut r = Reader::new(w.as_slice());
    PlayerUpdate::read(&mut r, u.small).unwrap_or(*u)
}

/// Our tank's true state, as the send rule needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnState {
    /// Status bits (Alive, Paused, Falling, Teleporting, FlagActive, OnDriver, ...).
    pub status: PlayerStatus,
    /// Position.
    pub pos: Vec3,
    /// Velocity.
    pub vel: Vec3,
    /// Azimuth.
    pub azimuth: f32,
    /// Angular velocity.
    pub ang_vel: f32,
    /// Physics driver under the tank (−1 none).
    pub phydrv: i32,
    /// Sound bits pending (jump 1, wings 2, bounce 4); 0 for none.
    pub sounds: u8,
    /// We carry Burrow (the ground limit is then `_burrowDepth`).
    pub burrow: bool,
}

/// The send rule's memory: the last update sent, when, and the `order` counter.
#[derive(Debug, Clone, Default)]
pub struct UpdateSender {
    order: i32,
    last: Option<(Reckoning, Instant)>,
}

impl UpdateSender {
    /// Nothing sent yet.
    pub fn new() -> UpdateSender {
        UpdateSender::default()
    }

    /// The `order` of the last update built.
    pub fn order(&self) -> i32 {
        self.order
    }

    /// Where others predict us at `now`, from the last update sent (`None` before the first).
    pub fn predicted(&self, now: Instant, phys: &Physics) -> Option<Pose> {
        let (r, at) = self.last.as_ref()?;
        Some(r.raw(now.saturating_duration_since(*at).as_secs_f32(), phys.gravity))
    }

    /// Whether the official client would send an update now (rules 1–6 of the module docs).
    pub fn should_send(&self, now: Instant, s: &OwnState, phys: &Physics) -> bool {
        let check = PlayerStatus::ALIVE | PlayerStatus::PAUSED | PlayerStatus::FALLING;
        let last_status = self.last.as_ref().map_or(PlayerStatus::empty(), |(r, _)| r.status);
        if (s.status & check) != (last_status & check) {
            return true;
        }
        if !s.status.contains(PlayerStatus::ALIVE) {
            return false;
        }
        let Some((r, at)) = self.last.as_ref() else { return true };
        if s.sounds != 0 || s.phydrv != r.phydrv {
            return true;
        }
        let dt = now.saturating_duration_since(*at).as_secs_f32();
        if dt >= MAX_UPDATE_TIME {
            return true;
        }
        let p = r.raw(dt, phys.gravity);
        let ground = if s.burrow { phys.burrow_depth } else { 0.0 };
        if p.pos.z < ground {
            return true;
        }
        let rate = phys.update_throttle_rate as i32;
        // (A millisecond of slack so that a bot ticking at exactly the throttle rate is not held back every
        // other tick by clock rounding.)
        if rate > 0 && dt + 0.001 < 1.0 / rate as f32 {
            return false;
        }
        let tol = phys.position_tolerance;
        let d = (s.pos - p.pos).abs();
        if d.x > tol || d.y > tol || d.z > tol || !d.is_finite() {
            return true;
        }
        // The client compares raw angles; we compare the wrapped difference (no spurious update at ±π).
        wrap_angle(s.azimuth - p.azimuth).abs() > phys.angle_tolerance
    }

    /// Builds the next update from `s` (taking the next `order`) and remembers it as sent at `now`.
    /// `timestamp` is our clock in seconds; `drivers` are the world's physics drivers.
    pub fn build(
        &mut self,
        now: Instant,
        id: u8,
        timestamp: f32,
        s: &OwnState,
        phys: &Physics,
        drivers: &[PhysicsDriver],
    ) -> PlayerUpdate {
        self.order = self.order.wrapping_add(1);
        let mut status = s.status;
        status.set(PlayerStatus::ON_DRIVER, s.phydrv >= 0);
        status.set(PlayerStatus::PLAY_SOUND, s.sounds != 0);
        status.remove(PlayerStatus::JUMP_JETS | PlayerStatus::USER_INPUTS);
        let azimuth = wrap_angle(s.azimuth);
        let mut u = PlayerUpdate {
            small: false,
            timestamp: super::reckon::sane(timestamp),
            id,
            order: self.order,
            status,
            pos: s.pos.to_array(),
            vel: s.vel.to_array(),
            azimuth,
            ang_vel: s.ang_vel,
            jump_jets: 0.0,
            phydrv: s.phydrv,
            user_inputs: (0.0, 0.0),
            sounds: s.sounds,
        };
        u.small = !phys.no_small_packets && u.fits_small();
        // Others reckon from what they receive: the small form's fixed-point values.
        let seen = if u.small { as_received(&u) } else { u };
        let r = Reckoning::from_parts(
            status,
            Vec3::from(seen.pos),
            Vec3::from(seen.vel),
            seen.azimuth,
            seen.ang_vel,
            s.phydrv,
            DriverMotion::lookup(drivers, s.phydrv),
        );
        self.last = Some((r, now));
        u
    }

    /// The update to send now, if the rule says so.
    pub fn poll(
        &mut self,
        now: Instant,
        id: u8,
        timestamp: f32,
        s: &OwnState,
        phys: &Physics,
        drivers: &[PhysicsDriver],
    ) -> Option<ClientMsg> {
        if !self.should_send(now, s, phys) {
            return None;
        }
        Some(ClientMsg::PlayerUpdate(self.build(now, id, timestamp, s, phys, drivers)))
    }

    /// The update that goes right before each `MsgShotBegin` (always sent).
    pub fn before_shot(
        &mut self,
        now: Instant,
        id: u8,
        timestamp: f32,
        s: &OwnState,
        phys: &Physics,
        drivers: &[PhysicsDriver],
    ) -> ClientMsg {
        ClientMsg::PlayerUpdate(self.build(now, id, timestamp, s, phys, drivers))
    }
}
