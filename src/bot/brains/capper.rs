//! The capper (capture the flag): fetches an enemy team's flag and brings it home, hunts whoever carries our own
//! flag, and fights on the way.
//!
//! Each tick, in order: carrying an enemy flag, drive home along a planned path to our base (the capture itself
//! is the pilot's: standing on our base with it) and only shoot what is already in our sights, dodging shots;
//! carrying any other flag, drop it (a flag in hand keeps us from grabbing a team flag); our flag taken, hunt
//! its carrier; else drive to the nearest enemy team flag that no team mate holds, fighting enemies that come
//! close. When a team mate of this process is nearer to that flag (the bots share which flag each goes for), it
//! hunts instead: the carrier of our flag first. In a game without team flags it plays as a [`Hunter`].

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
    /// Goals found out of reach lately, with when (reported once, then left alone for a while).
    out_of_reach: Vec<(glam::Vec3, f32)>,
}

/// Seconds an unreachable goal is left alone before it is tried again.
const RETRY_UNREACHABLE: f32 = 20.0;

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
            out_of_reach: Vec::new(),
        }
    }
}

impl Bot for Capper {
    fn on_stuck(&mut self, view: &View<'_>) {
        self.driver.stuck(view.time);
    }

    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        self.out_of_reach.retain(|(_, t)| view.time - *t < RETRY_UNREACHABLE);
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
            let home = view.bases(my_team).next().map(|b| b.pos + glam::Vec3::new(0.0, 0.0, b.size.z));
            if !evade(view, control) {
                match home {
                    Some(h) => {
                        self.driver.drive_to3(view, h, control);
                        self.note_unreachable(view, h, "base", control);
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
            let goal = carrier.pose.pos;
            if !self.hunter.fight(view, control, Some(id)) {
                self.driver.drive_to3(view, goal, control);
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
            .filter(|f| !self.out_of_reach.iter().any(|(g, _)| g.distance(f.pos) < 5.0))
            // A team mate nearer to that flag goes for it (the bots share which flag each goes for).
            .filter(|f| view.flag_claimed_by_mate(f.index, f.pos.distance(me)).is_none())
            .min_by(|a, b| a.pos.distance_squared(me).total_cmp(&b.pos.distance_squared(me)));
        // No flag left to us: hunt (the carrier of our flag first).
        match target {
            Some(f) => {
                view.claim_flag(f.index, f.pos.distance(me));
                if !evade(view, control) {
                    self.driver.drive_to3(view, f.pos, control);
                    self.note_unreachable(view, f.pos, "flag", control);
                }
                self.gunner.snap_shot(view, control);
            }
            None => self.hunter.tick(view, control),
        }
    }
}

impl Capper {
    /// When the driver found no route to `goal`: says so once (a bot event) and leaves it alone for a while.
    fn note_unreachable(&mut self, view: &View<'_>, goal: glam::Vec3, what: &str, control: &mut Control) {
        if self.driver.unreachable().is_some_and(|g| g.distance(goal) < 1.0)
            && !self.out_of_reach.iter().any(|(g, _)| g.distance(goal) < 5.0)
        {
            control.unreachable(goal, what);
            self.out_of_reach.push((goal, view.time));
        }
    }
}
