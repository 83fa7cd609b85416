//! The official client's flag rules for our own tank (§8.3, `playing.cxx`, `clientCommands.cxx`,
//! `LocalPlayer::setFlag`): when to ask to grab, when a capture is ours to report, when a drop is allowed, and
//! shaking off a sticky (bad) flag.
//!
//! * Grab: alive, not paused, on the ground or a building, carrying nothing; every flag that is `OnGround`,
//!   whose height is within 0.1 of ours and whose planar distance is below our radius + `_flagRadius`; at most
//!   one round of requests per 0.2 s.
//! * Capture: carrying a team flag while standing on a base, and either the flag is ours and the base is not,
//!   or the flag is another team's and the base is ours: `MsgCaptureFlag(team of the base)` (the client repeats
//!   it every frame until the server takes the flag; [`FlagRules::capture`] says when).
//! * Drop: not while paused, not a sticky flag, not while zoned, not Oscillation Overthruster inside a building.
//! * Shaking (game option `SHAKABLE`): a sticky flag drops itself after `shakeTimeout` tenths of a second, or
//!   after `shakeWins` kills.

use std::collections::HashMap;

use super::physics::{flag, Physics};
use super::tank::{Location, Tank};
use crate::bzflag::consts::{FlagStatus, GameOptions, Team};
use crate::bzflag::game::FlagState;
use crate::bzflag::msg::{Abbv, ClientMsg, GameSettings};
use crate::bzflag::session::team_of_flag;
use crate::bzflag::world::WorldModel;

/// Seconds between two rounds of grab requests.
pub const GRAB_INTERVAL: f32 = 0.2;

/// The endurance value of a sticky (bad) flag.
pub const STICKY: u16 = 2;

/// Our flag bookkeeping: the last grab request and the shaking countdowns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlagRules {
    last_grab: Option<f32>,
    shake_time: f32,
    shake_wins: i32,
}

impl FlagRules {
    /// Nothing requested yet.
    pub fn new() -> FlagRules {
        FlagRules::default()
    }

    /// The `MsgGrabFlag` requests to send at time `clock` (our clock, s) for the flags the session knows.
    pub fn grabs(
        &mut self,
        clock: f32,
        tank: &Tank,
        flags: &HashMap<u16, FlagState>,
        phys: &Physics,
    ) -> Vec<ClientMsg> {
        let mut out = Vec::new();
        if !tank.is_alive()
            || tank.is_paused()
            || !tank.flag.is_none()
            || !matches!(tank.location, Location::OnGround | Location::OnBuilding)
            || self.last_grab.is_some_and(|t| clock - t <= GRAB_INTERVAL && clock >= t)
        {
            return out;
        }
        let r = tank.radius(phys) + phys.flag_radius;
        let mut indices: Vec<u16> = flags
            .values()
            .filter(|f| f.info.status == FlagStatus::OnGround && !f.info.abbv.is_none())
            .filter(|f| {
                let p = f.info.position;
                let (dx, dy) = (tank.pos.x - p[0], tank.pos.y - p[1]);
                (tank.pos.z - p[2]).abs() < 0.1 && dx * dx + dy * dy < r * r
            })
            .map(|f| f.index)
            .collect();
        indices.sort_unstable();
        for index in indices {
            out.push(ClientMsg::GrabFlag { index });
            self.last_grab = Some(clock);
        }
        out
    }

    /// `MsgCaptureFlag` when we carry a team flag on a base where that is a capture (see the module docs).
    pub fn capture(&self, tank: &Tank, my_team: Team, world: &WorldModel) -> Option<ClientMsg> {
        if !tank.is_alive() || tank.is_paused() {
            return None;
        }
        let flag_team = team_of_flag(tank.flag)?;
        let base = Team::from_u16(world.base_at(tank.pos)?.team);
        ((flag_team == my_team && base != my_team) || (flag_team != my_team && base == my_team))
            .then_some(ClientMsg::CaptureFlag { team: base })
    }

    /// Whether the client lets us drop the flag we carry (`cmdDrop`); `endurance` is the flag's (2 = sticky).
    pub fn can_drop(tank: &Tank, endurance: u16) -> bool {
        let oo_inside = tank.flag == flag::OSCILLATION && tank.location == Location::InBuilding;
        !(tank.flag.is_none() || tank.is_paused() || endurance == STICKY || tank.is_zoned() || oo_inside)
    }

    /// Call when we get a flag (`LocalPlayer::setFlag`): a sticky one starts the shaking countdowns when the
    /// game allows shaking.
    pub fn on_flag(&mut self, abbv: Abbv, endurance: u16, settings: Option<&GameSettings>) {
        self.shake_time = 0.0;
        self.shake_wins = 0;
        let Some(s) = settings else { return };
        if abbv.is_none() || endurance != STICKY || s.game_options & GameOptions::SHAKABLE.bits() == 0 {
            return;
        }
        self.shake_time = f32::from(s.shake_timeout) / 10.0;
        self.shake_wins = i32::from(s.shake_wins);
    }

    /// Counts down the shake timeout while carrying the sticky flag; returns the `MsgDropFlag` when it runs out.
    pub fn tick(&mut self, dt: f32, tank: &Tank) -> Option<ClientMsg> {
        let dt = if dt.is_finite() { dt } else { 0.0 };
        if tank.is_paused() || dt <= 0.0 || self.shake_time <= 0.0 || tank.flag.is_none() {
            return None;
        }
        self.shake_time -= dt;
        (self.shake_time <= 0.0).then(|| {
            self.shake_time = 0.0;
            ClientMsg::DropFlag { pos: tank.pos.to_array() }
        })
    }

    /// Counts our kills towards shaking the sticky flag; returns the `MsgDropFlag` when enough were made.
    pub fn on_wins(&mut self, wins: i32, tank: &Tank) -> Option<ClientMsg> {
        if wins <= 0 || self.shake_wins <= 0 || tank.flag.is_none() {
            return None;
        }
        self.shake_wins -= wins;
        (self.shake_wins <= 0).then(|| {
            self.shake_wins = 0;
            ClientMsg::DropFlag { pos: tank.pos.to_array() }
        })
    }
}
