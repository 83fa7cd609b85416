//! The hunter: finds enemies, leads and shoots them, dodges their shots.
//!
//! Each tick: dodge a shot that would hit within a second (still firing if lined up); otherwise take the best
//! target with a clear shot ([`Gunner::choose`]: nearest few enemies, least time to turn and fly), turn to its
//! firing solution and fire when the real shot at our heading meets its predicted line or arc, while weaving
//! (changing speed every second or two, so that our own motion is hard to predict) at a distance band; with no
//! clear shot, try a bank shot off walls now and then, and drive along a planned path towards the nearest enemy
//! (or roam the map when there is none), firing snap shots on the way.

use glam::Vec2;

use super::common::{evade, road_clear, Driver, Gunner, Rng};
use crate::bot::{Bot, Control, View};

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Hunter {
    driver: Driver,
    gunner: Gunner,
    rng: Rng,
    weave: f32,
    weave_until: f32,
    roam: Option<Vec2>,
    backing_until: f32,
    was_alive: bool,
}

impl Hunter {
    /// A hunter whose random choices follow `seed`.
    pub fn new(seed: u64) -> Hunter {
        Hunter {
            driver: Driver::default(),
            gunner: Gunner::default(),
            rng: Rng::new(seed),
            weave: 1.0,
            weave_until: 0.0,
            roam: None,
            backing_until: 0.0,
            was_alive: false,
        }
    }

    /// One tick of fighting: returns false when there was nobody to fight (the caller then moves on its own).
    pub fn fight(&mut self, view: &View<'_>, control: &mut Control, prefer: Option<u8>) -> bool {
        let dodging = evade(view, control);
        // A Shock Wave has no solution to aim at: close in (seek) and set it off when someone is inside.
        if self.gunner.shock_wave(view, control) {
            return dodging;
        }
        let chosen = self.gunner.choose(view, prefer).or_else(|| self.gunner.bank(view));
        let Some((target, sol)) = chosen else {
            if dodging {
                self.gunner.snap_shot(view, control);
            }
            return dodging;
        };
        if dodging {
            if sol.on_target(view.me.azimuth()) && view.me.reload == 0.0 {
                control.fire = true;
            }
            return true;
        }
        self.gunner.lay(view, target, &sol, control);
        // Weave: a new speed every 1–2.5 s, faster when far, slower (or backing off) when close.
        if view.time >= self.weave_until {
            self.weave_until = view.time + self.rng.range(1.0, 2.5);
            let d = target.pose.pos.distance(view.me.pos());
            self.weave = if d > 150.0 {
                self.rng.range(0.75, 1.0)
            } else if d > 50.0 {
                [1.0, 0.5, 0.25][(self.rng.unit() * 3.0) as usize % 3]
            } else {
                [-0.5, 0.5, 1.0][(self.rng.unit() * 3.0) as usize % 3]
            };
        }
        // The way ahead blocked (a wall, a building): back off for a while. Held, because the test itself flips
        // as the tank moves a few tenths back and forth, which would change the controls every tick.
        if self.weave > 0.0 && view.time >= self.backing_until && !road_clear(view, 12.0) {
            self.backing_until = view.time + 0.8;
        }
        control.speed = if view.time < self.backing_until { -0.4 } else { self.weave };
        self.driver.watch_progress(view, control);
        true
    }

    /// Drives towards the nearest enemy (or a random place), firing snap shots on the way.
    pub fn seek(&mut self, view: &View<'_>, control: &mut Control) {
        let goal = match view.enemies().first() {
            Some(t) => t.pose.pos.truncate(),
            None => {
                let half = 0.45 * view.phys.world_size.clamp(20.0, 4000.0);
                let here = view.me.pos().truncate();
                if self.roam.is_none_or(|g| g.distance(here) < 15.0) {
                    let p = Vec2::new(self.rng.range(-half, half), self.rng.range(-half, half));
                    self.roam = view.nav().nearest_free(p);
                }
                match self.roam {
                    Some(g) => g,
                    None => {
                        control.drive(0.5, 0.5);
                        return;
                    }
                }
            }
        };
        self.driver.drive_to(view, goal, control);
        self.gunner.snap_shot(view, control);
    }
}

impl Bot for Hunter {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if !view.me.alive() {
            if self.was_alive {
                self.driver.reset();
                self.gunner.reset();
                self.was_alive = false;
            }
            control.stop();
            return;
        }
        self.was_alive = true;
        if self.driver.unstick(view, control) {
            return;
        }
        if !self.fight(view, control, None) {
            self.seek(view, control);
        }
    }
}
