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

#[cfg(test)]
mod tests {
    use super::*;

    fn alive_tank() -> Tank {
        let mut t = Tank::new(1);
        t.spawn([10.0, 20.0, 0.0], 0.0);
        t
    }

    #[test]
    fn a_tank_asked_to_drive_that_does_not_move_is_stuck_and_backed_out() {
        let tank = alive_tank();
        let mut control = Control::default();
        control.drive(1.0, 0.0);
        let mut w = Watchdog::default();
        let mut found = None;
        for i in 0..200 {
            let clock = i as f32 * 0.05;
            if let Some(s) = w.check(clock, &tank, &control, 0) {
                found = Some((clock, s));
                break;
            }
        }
        let (clock, seconds) = found.expect("found stuck");
        assert!(seconds >= STUCK_AFTER && clock < STUCK_AFTER + 0.2, "{clock} {seconds}");
        let mut c = control.clone();
        assert!(w.steer(clock + 0.1, &mut c));
        assert!(c.speed != 1.0 && c.turn != 0.0, "backs out: {c:?}");
        assert!(!w.steer(clock + BACK_OUT + 0.1, &mut c));
    }

    #[test]
    fn a_tank_that_moves_fires_or_is_not_asked_to_drive_is_not_stuck() {
        let mut tank = alive_tank();
        let mut control = Control::default();
        control.drive(1.0, 0.0);
        let mut w = Watchdog::default();
        for i in 0..400 {
            tank.pos.x += 0.2;
            assert_eq!(w.check(i as f32 * 0.05, &tank, &control, 0), None);
        }
        // Standing, but firing now and then.
        let mut w = Watchdog::default();
        for i in 0..400 {
            assert_eq!(w.check(i as f32 * 0.05, &tank, &control, i / 40), None);
        }
        // Standing, asked to stand.
        control.stop();
        let mut w = Watchdog::default();
        for i in 0..400 {
            assert_eq!(w.check(i as f32 * 0.05, &tank, &control, 0), None);
        }
    }
}
