//! The host's watchdog: a living tank whose brain asks it to drive or turn and that neither moves, turns nor
//! fires for a while
//! is stuck (wedged against something, or a plan that leads nowhere). The watchdog reports it, backs the tank out
//! for a moment whatever the brain says, and the host asks the brain to plan again ([`super::Bot::on_stuck`]).

use glam::Vec3;

use super::Control;
use crate::bzflag::msg::wrap_angle;
use crate::bzflag::play::Tank;

/// Seconds without moving [`MOVED`] units, while asked to drive, before a tank counts as stuck.
pub const STUCK_AFTER: f32 = 4.0;
/// Units a tank must move to count as moving.
pub const MOVED: f32 = 2.0;
/// Radians a tank must turn to count as moving (a tank asked to turn in place that cannot is stuck too).
pub const TURNED: f32 = 0.5;
/// Seconds the watchdog backs a stuck tank out.
pub const BACK_OUT: f32 = 1.0;

/// One bot's watchdog. See the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Watchdog {
    anchor: Option<(Vec3, f32, f32)>,
    shots: u32,
    back_until: f32,
    turn: f32,
    stuck: u32,
}

impl Watchdog {
    /// Looks at the tank after the brain's tick; `Some(seconds)` when it has just been found stuck.
    pub(crate) fn check(&mut self, clock: f32, tank: &Tank, control: &Control, shots: u32) -> Option<f32> {
        let asked = control.speed.abs() >= 0.2 || control.turn.abs() >= 0.2;
        let fired = shots != self.shots;
        self.shots = shots;
        if !tank.is_alive() || tank.is_paused() || !asked || fired || clock < self.back_until {
            self.anchor = None;
            return None;
        }
        let (at, azimuth, since) = *self.anchor.get_or_insert((tank.pos, tank.azimuth, clock));
        if tank.pos.distance(at) > MOVED || wrap_angle(tank.azimuth - azimuth).abs() > TURNED {
            self.anchor = Some((tank.pos, tank.azimuth, clock));
            return None;
        }
        let stuck_for = clock - since;
        if stuck_for < STUCK_AFTER {
            return None;
        }
        self.anchor = None;
        self.stuck = self.stuck.wrapping_add(1);
        self.turn = if self.stuck % 2 == 0 { 1.0 } else { -1.0 };
        self.back_until = clock + BACK_OUT;
        Some(stuck_for)
    }

    /// While backing out: overrides the brain's speed and turn. Returns true then.
    pub(crate) fn steer(&self, clock: f32, control: &mut Control) -> bool {
        if clock < self.back_until {
            // Back out and turn; every other time drive ahead instead (a tank backed into a corner).
            let speed = if self.stuck % 3 == 2 { 0.8 } else { -0.5 };
            control.drive(speed, self.turn);
            control.jump = false;
            return true;
        }
        false
    }
}
