//! The hunter: finds enemies, leads and shoots them, dodges their shots.
//!
//! Each tick: dodge a shot that would hit within a second (on the ground when that gets us out of the way: a jump is
//! a long predictable arc; still firing if lined up); otherwise take the best target with a clear shot
//! ([`Gunner::choose`]: nearest few enemies, least time to turn and fly), turn to its firing solution and fire when
//! the real shot at our heading meets its predicted line or arc, while weaving (changing speed every second or two,
//! so that our own motion is hard to predict) at a distance band; with no clear shot, try a bank shot off walls now
//! and then, fetch a loose flag within [`FLAG_DETOUR`] units when carrying none (it may be a good one: a guided
//! missile, rapid fire, a laser ...; a bad one is dropped when the server allows), else drive along a planned path
//! towards the nearest enemy (or roam the map when there is none), firing snap shots on the way. A Shock Wave is set
//! off when an enemy is inside its reach.

use glam::Vec2;

use super::common::{evade, road_clear, Driver, Gunner, Life, Rng};
use crate::bot::{Bot, Control, View};
use crate::bzflag::consts::FlagStatus;
use crate::bzflag::msg::Abbv;
use crate::bzflag::play::physics::flag;

/// A loose flag this close is worth a detour when there is no clear shot.
pub const FLAG_DETOUR: f32 = 60.0;

/// The bad flags (`FlagBad` in the official flag list): they hinder their carrier. The pilot drops one only when
/// the server lets it (bad flags are sticky unless shaking is on).
pub fn is_bad(f: Abbv) -> bool {
    const BAD: [&str; 14] = ["B", "BY", "CB", "FO", "JM", "LT", "M", "NJ", "O", "RC", "RO", "RT", "TR", "WA"];
    !f.is_none() && BAD.contains(&f.as_string().as_str())
}

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
    dropped_at: f32,
    life: Life,
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
            dropped_at: -1.0e9,
            life: Life::default(),
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
        // A guided missile is harmless for its first `_gmActivationTime`: a target too close has no solution, so
        // face it and back off until the range opens.
        if chosen.is_none() && view.me.tank.flag == flag::GUIDED_MISSILE && !dodging {
            let min_range = 1.3 * view.phys.shot_speed * view.phys.gm_activation_time;
            if let Some(t) = view.enemies().first().filter(|t| t.pose.pos.distance(view.me.pos()) < min_range) {
                let d = t.pose.pos - view.me.pos();
                let err = crate::bzflag::msg::wrap_angle(d.y.atan2(d.x) - view.me.azimuth());
                control.drive(-0.5, super::common::turn_towards(view, err));
                self.driver.watch_progress(view, control);
                return true;
            }
        }
        let Some((target, sol)) = chosen else {
            if dodging {
                self.gunner.snap_shot(view, control);
            }
            return dodging;
        };
        if dodging {
            self.gunner.trigger(view, target, &sol, control);
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
        // Not when the way back is blocked too (backing into a wall or a corner jams us there).
        if self.weave > 0.0 && view.time >= self.backing_until && !road_clear(view, 12.0) && road_clear(view, -8.0) {
            self.backing_until = view.time + 0.8;
        }
        control.speed = if view.time < self.backing_until { -0.4 } else { self.weave };
        self.driver.watch_progress(view, control);
        true
    }

    /// Drives towards a loose flag nearby while we carry none (it may be a good one), else towards the nearest
    /// enemy (or a random place), firing snap shots on the way. A bad flag we are allowed to drop is dropped.
    pub fn seek(&mut self, view: &View<'_>, control: &mut Control) {
        let me = view.me.pos();
        let carrying = view.me.tank.flag;
        if is_bad(carrying) {
            control.drop_flag = true;
            self.dropped_at = view.time;
        }
        control.grab = view.time - self.dropped_at > 3.0;
        let loose = view
            .flags()
            .filter(|f| f.status == FlagStatus::OnGround && f.team.is_none() && f.pos.z.abs() < 0.1)
            .filter(|f| f.pos.distance(me) < FLAG_DETOUR)
            .min_by(|a, b| a.pos.distance_squared(me).total_cmp(&b.pos.distance_squared(me)));
        if let Some(f) = loose.filter(|_| carrying.is_none() && control.grab) {
            self.driver.drive_to(view, f.pos.truncate(), control);
            self.gunner.snap_shot(view, control);
            return;
        }
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
        if self.life.dead(view, control, || {
            self.driver.reset();
            self.gunner.reset();
        }) {
            return;
        }
        if self.driver.unstick(view, control) {
            return;
        }
        // In capture the flag, the enemy who carries our team's flag comes first: chase it wherever it goes.
        let carrier = view
            .team_flag(view.me.team)
            .and_then(|f| f.owner)
            .and_then(|o| view.tank(o))
            .filter(|t| view.is_hostile(t.team) && t.alive);
        if let Some(c) = carrier {
            let (id, goal) = (c.id, c.pose.pos);
            if !self.fight(view, control, Some(id)) {
                self.driver.drive_to3(view, goal, control);
                self.gunner.snap_shot(view, control);
            }
            return;
        }
        if !self.fight(view, control, None) {
            self.seek(view, control);
        }
    }

    fn on_stuck(&mut self, view: &View<'_>) {
        self.driver.stuck(view.time);
        self.backing_until = 0.0;
    }
}
