//! The defender (capture the flag): stays near its team's flag, fights enemies that come close to it, and hunts
//! whoever takes it.
//!
//! Each tick: our flag lying away from our base (dropped by an enemy), fetch it and drop it on our base; our flag
//! carried by an enemy, hunt the carrier; an enemy within [`GUARD_RADIUS`] of our flag (or
//! of our base when the flag is away), fight it; otherwise patrol a circle around the flag, firing snap shots at
//! anything that crosses our sights. In a game without team flags it plays as a [`Hunter`].

use glam::Vec2;

use super::common::{Driver, Gunner, Life, Rng};
use super::hunter::Hunter;
use crate::bot::{Bot, Control, GameType, View};
use crate::bzflag::consts::FlagStatus;
use crate::bzflag::session::team_of_flag;

/// Enemies this close to what we guard are fought.
pub const GUARD_RADIUS: f32 = 120.0;

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Defender {
    hunter: Hunter,
    driver: Driver,
    gunner: Gunner,
    rng: Rng,
    patrol: Option<Vec2>,
    life: Life,
}

impl Defender {
    /// A defender whose random choices follow `seed`.
    pub fn new(seed: u64) -> Defender {
        Defender {
            hunter: Hunter::new(seed),
            driver: Driver::default(),
            gunner: Gunner::default(),
            rng: Rng::new(seed ^ 0xdef),
            patrol: None,
            life: Life::default(),
        }
    }
}

impl Bot for Defender {
    fn on_stuck(&mut self, view: &View<'_>) {
        self.driver.stuck(view.time);
    }

    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if self.life.dead(view, control, || {
            self.driver.reset();
            self.patrol = None;
        }) {
            return;
        }
        let my_team = view.me.team;
        if view.game_type() != GameType::Ctf {
            self.hunter.tick(view, control);
            return;
        }
        if self.driver.unstick(view, control) {
            return;
        }
        let own = view.team_flag(my_team);
        if self.return_own_flag(view, control) {
            return;
        }
        // Any other flag in hand is dropped.
        if !view.me.tank.flag.is_none() {
            control.drop_flag = true;
        }
        if let Some(carrier) = own.and_then(|f| f.owner).and_then(|o| view.tank(o)).filter(|t| view.is_hostile(t.team))
        {
            let (id, goal) = (carrier.id, carrier.pose.pos);
            if !self.hunter.fight(view, control, Some(id)) {
                self.driver.drive_to3(view, goal, control);
            }
            return;
        }
        let home = match own {
            Some(f) => f.pos.truncate(),
            None => match view.bases(my_team).next() {
                Some(b) => b.pos.truncate(),
                None => {
                    self.hunter.tick(view, control);
                    return;
                }
            },
        };
        let intruder = view.enemies().into_iter().find(|t| t.pose.pos.truncate().distance(home) < GUARD_RADIUS);
        if let Some(t) = intruder {
            let id = t.id;
            if self.hunter.fight(view, control, Some(id)) {
                return;
            }
        }
        // Patrol: points on a circle of 25–45 units around what we guard.
        let here = view.me.pos().truncate();
        if self.patrol.is_none_or(|p| p.distance(here) < 8.0 || p.distance(home) > 60.0) {
            let a = self.rng.range(-std::f32::consts::PI, std::f32::consts::PI);
            let r = self.rng.range(25.0, 45.0);
            self.patrol = view.nav().nearest_free(home + Vec2::new(a.cos(), a.sin()) * r);
        }
        match self.patrol {
            Some(p) => {
                self.driver.drive_to(view, p, control);
            }
            None => control.stop(),
        }
        self.gunner.snap_shot(view, control);
    }
}

impl Defender {
    /// Our flag lying away from our base (an enemy dropped it, or was killed carrying it): fetch it and bring it
    /// home, dropping it on our base (a team flag on its own base is home). Returns true while doing so. Never
    /// near another team's base with it: that would capture it, and our whole team would die.
    fn return_own_flag(&mut self, view: &View<'_>, control: &mut Control) -> bool {
        let my_team = view.me.team;
        let me = view.me.pos();
        let on_own_base = |p: glam::Vec3| view.world.base_at(p).is_some_and(|b| b.team == my_team.to_u16());
        let near_enemy_base = view.world.bases.iter().any(|b| {
            b.team != my_team.to_u16() && b.pos.truncate().distance(me.truncate()) < b.size.x.max(b.size.y) + 25.0
        });
        control.grab_own_flag = false;
        if team_of_flag(view.me.tank.flag) == Some(my_team) {
            let home = view.bases(my_team).next().map(|b| b.pos + glam::Vec3::new(0.0, 0.0, b.size.z));
            match home {
                Some(h) if !on_own_base(me) && !near_enemy_base => {
                    self.driver.drive_to3(view, h, control);
                }
                _ => {
                    control.drop_flag = true;
                    control.stop();
                }
            }
            return true;
        }
        // A flag lies on a base at the base's top (`base_at` allows 0.1 either way: no offset here, or a flag at
        // home on a base at ground level would count as away and be picked up and dropped again and again).
        let lying = view
            .team_flag(my_team)
            .filter(|f| f.status == FlagStatus::OnGround && f.owner.is_none() && !on_own_base(f.pos));
        match lying {
            Some(f) if !near_enemy_base && view.me.tank.flag.is_none() => {
                control.grab_own_flag = true;
                self.driver.drive_to3(view, f.pos, control);
                self.gunner.snap_shot(view, control);
                true
            }
            _ => false,
        }
    }
}
