//! The capper (capture the flag): fetches an enemy team's flag and brings it home, hunts whoever carries our own
//! flag, and fights on the way.
//!
//! Each tick, in order: carrying an enemy flag, drive home along a planned path to our base (the capture itself
//! is the pilot's: standing on our base with it) and only shoot what is already in our sights, dodging shots;
//! carrying any other flag, drop it (a flag in hand keeps us from grabbing a team flag); our flag taken, hunt
//! its carrier; else drive to the nearest enemy team flag that no team mate holds, fighting enemies that come
//! close. In a game without team flags it plays as a [`Hunter`].

use super::common::{evade, Driver, Gunner, Life};
use super::hunter::Hunter;
use crate::bot::{Bot, Control, GameType, View};
use crate::bzflag::consts::FlagStatus;
use crate::bzflag::session::team_of_flag;

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Capper {
    hunter: Hunter,
    driver: Driver,
    gunner: Gunner,
    dropped_at: f32,
    life: Life,
}

/// Enemies nearer than this are fought instead of driven past (unless we carry their flag).
const FIGHT_RANGE: f32 = 70.0;

impl Capper {
    /// A capper whose random choices follow `seed`.
    pub fn new(seed: u64) -> Capper {
        Capper {
            hunter: Hunter::new(seed),
            driver: Driver::default(),
            gunner: Gunner::default(),
            dropped_at: -1.0e9,
            life: Life::default(),
        }
    }
}

impl Bot for Capper {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if self.life.dead(view, control, || {
            self.driver.reset();
            self.gunner.reset();
        }) {
            return;
        }
        let my_team = view.me.team;
        let has_team_flags = view.flags().any(|f| f.team.is_some());
        if view.game_type() != GameType::Ctf || !has_team_flags {
            self.hunter.tick(view, control);
            return;
        }
        if self.driver.unstick(view, control) {
            return;
        }
        // Never pick up a flag right after dropping one (it lands at our feet).
        control.grab = view.time - self.dropped_at > 3.0;
        let carrying = view.me.tank.flag;
        let carried_team = team_of_flag(carrying);

        // An enemy flag in hand: home.
        if carried_team.is_some_and(|t| t != my_team) {
            let home = view.bases(my_team).next().map(|b| b.pos.truncate());
            if !evade(view, control) {
                match home {
                    Some(h) => {
                        self.driver.drive_to(view, h, control);
                    }
                    None => control.stop(),
                }
            }
            self.gunner.snap_shot(view, control);
            return;
        }
        // Any other flag in hand keeps us from grabbing a team flag.
        if !carrying.is_none() {
            control.drop_flag = true;
            self.dropped_at = view.time;
        }

        // Our own flag carried by an enemy: hunt the carrier.
        let own = view.team_flag(my_team);
        if let Some(carrier) = own.and_then(|f| f.owner).and_then(|o| view.tank(o)).filter(|t| view.is_hostile(t.team))
        {
            let id = carrier.id;
            let goal = carrier.pose.pos.truncate();
            if !self.hunter.fight(view, control, Some(id)) {
                self.driver.drive_to(view, goal, control);
            }
            return;
        }

        // Enemies close by: fight them first.
        let near = view.enemies().first().is_some_and(|t| t.pose.pos.distance(view.me.pos()) < FIGHT_RANGE);
        if near && self.hunter.fight(view, control, None) {
            return;
        }

        // The nearest enemy team flag no team mate holds.
        let me = view.me.pos();
        let target = view
            .flags()
            .filter(|f| f.team.is_some_and(|t| t != my_team) && f.status != FlagStatus::NoExist)
            .filter(|f| f.owner.is_none_or(|o| view.tank(o).is_some_and(|t| view.is_hostile(t.team))))
            .min_by(|a, b| a.pos.distance_squared(me).total_cmp(&b.pos.distance_squared(me)));
        match target {
            Some(f) => {
                if !evade(view, control) {
                    self.driver.drive_to(view, f.pos.truncate(), control);
                }
                self.gunner.snap_shot(view, control);
            }
            None => self.hunter.tick(view, control),
        }
    }
}
