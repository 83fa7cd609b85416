//! The reactor's clock: game time, which runs [`Clock::scale`] times as fast as real time.
//!
//! A private `bzfs` can run faster than real time under `faketime -f '+0 xK'` (see `docs/time-warp.md`); the
//! sessions that play on it must then see time pass K times as fast too. Rather than preloading libfaketime into
//! bzhead (which warps the whole process, and turns short `epoll_wait` timeouts into busy polls), the reactor
//! scales its own clock: every `now` it hands out (to engines, timers, events, recordings) is
//! `start + K × real time elapsed`, and every wait it asks of the system is converted back to real time as
//! `wait / K`. At K = 1 game time *is* `Instant::now()`, to the nanosecond.

use std::io;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

/// The time scales a [`Clock`] accepts: 1/64 to 64.
pub const TIME_SCALE_RANGE: RangeInclusive<f64> = (1.0 / 64.0)..=64.0;

/// Game time from real time (see the module documentation). `Copy`, so that code off the reactor (a bot host's
/// sleep, a command's deadline) converts with the reactor's own scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clock {
    /// A real instant ...
    real0: Instant,
    /// ... and the game time it stands for.
    game0: Instant,
    scale: f64,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::real()
    }
}

impl Clock {
    /// A clock at real time (K = 1).
    pub fn real() -> Clock {
        let now = Instant::now();
        Clock { real0: now, game0: now, scale: 1.0 }
    }

    /// A clock whose time runs `scale` times as fast as real time from now on (game time starts at the real
    /// time of the call). Fails (`InvalidInput`) unless `scale` is finite and in [`TIME_SCALE_RANGE`].
    pub fn scaled(scale: f64) -> io::Result<Clock> {
        let mut c = Clock::real();
        c.set_scale(scale)?;
        Ok(c)
    }

    /// How many times as fast as real time game time runs.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Changes the scale from now on; game time goes on from where it is (it never jumps or runs backwards).
    /// Fails (`InvalidInput`, the clock unchanged) unless `scale` is finite and in [`TIME_SCALE_RANGE`].
    pub fn set_scale(&mut self, scale: f64) -> io::Result<()> {
        check_scale(scale)?;
        let real = Instant::now();
        self.game0 = self.at(real);
        self.real0 = real;
        self.scale = scale;
        Ok(())
    }

    /// The game time now: one read of the system's monotonic clock.
    pub fn now(&self) -> Instant {
        self.at(Instant::now())
    }

    /// The game time at the real instant `real` (no earlier than the clock's last change of scale).
    pub fn at(&self, real: Instant) -> Instant {
        let elapsed = real.saturating_duration_since(self.real0);
        self.game0 + self.to_game(elapsed)
    }

    /// A span of game time in real time: `game / K`, to the nanosecond.
    pub fn to_real(&self, game: Duration) -> Duration {
        if self.scale == 1.0 {
            game
        } else {
            game.div_f64(self.scale)
        }
    }

    /// A span of real time in game time: `real × K`.
    pub fn to_game(&self, real: Duration) -> Duration {
        if self.scale == 1.0 {
            real
        } else {
            // At most 64 × the span: saturate rather than overflow for absurd spans (centuries).
            Duration::try_from_secs_f64(real.as_secs_f64() * self.scale).unwrap_or(Duration::MAX)
        }
    }
}

/// `Ok` when `scale` is a time scale a [`Clock`] accepts.
pub fn check_scale(scale: f64) -> io::Result<()> {
    if scale.is_finite() && TIME_SCALE_RANGE.contains(&scale) {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the time scale must be between 1/64 and 64, not {scale}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_time_is_the_system_clock_and_scales_are_checked() {
        let c = Clock::real();
        let t = Instant::now();
        assert_eq!(c.at(t), t);
        assert_eq!(c.to_real(Duration::from_millis(7)), Duration::from_millis(7));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 65.0, 1.0 / 128.0] {
            assert!(Clock::scaled(bad).is_err(), "{bad}");
        }
        assert!(Clock::scaled(64.0).is_ok() && Clock::scaled(1.0 / 64.0).is_ok());
    }

    /// Within a microsecond (spans go through `f64` seconds).
    fn close(a: Duration, b: Duration) -> bool {
        a.abs_diff(b) <= Duration::from_micros(1)
    }

    #[test]
    fn game_time_runs_k_times_as_fast_and_never_jumps_when_the_scale_changes() {
        let mut c = Clock::scaled(8.0).unwrap();
        let r0 = c.real0;
        assert!(close(c.at(r0 + Duration::from_millis(10)) - c.at(r0), Duration::from_millis(80)));
        // Waits convert back with sub-millisecond precision.
        assert!(close(c.to_real(Duration::from_millis(33)), Duration::from_micros(4125)));
        assert!(close(c.to_game(Duration::from_micros(4125)), Duration::from_millis(33)));
        let before = c.now();
        let mut bad = c;
        assert!(bad.set_scale(f64::NAN).is_err());
        assert_eq!(bad, c, "a refused scale leaves the clock as it was");
        c.set_scale(0.5).unwrap();
        let after = c.now();
        assert!(after >= before && after - before < Duration::from_millis(50), "{:?}", after - before);
        let r1 = c.real0;
        assert!(close(c.at(r1 + Duration::from_millis(10)) - c.at(r1), Duration::from_millis(5)));
        // A real instant from before the change does not run the clock backwards.
        assert_eq!(c.at(r0), c.at(r1));
    }
}
