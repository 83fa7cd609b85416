//! What a session knows about the game: players, teams, flags, shots, settings and variables.
//!
//! [`Game`] is updated by the session from server messages and is read-only for users. Every collection is
//! bounded by the protocol (player ids are one byte, flag indices are capped, shots are pruned as they expire).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::consts::{FlagStatus, PlayerStatus, PlayerType, Team};
use super::msg::{Abbv, FiringInfo, FlagInfo, GameSettings, PlayerUpdate, QueryGameInfo, ShotUpdate, TeamInfo};
use super::vars::VarStore;

/// The most flag indices a session keeps (the protocol allows u16; real servers use tens).
pub const MAX_FLAGS: usize = 4096;
/// The most live shots a session keeps.
pub const MAX_SHOTS: usize = 4096;

/// One player of the roster.
#[derive(Debug, Clone)]
pub struct Player {
    /// Id.
    pub id: u8,
    /// Callsign.
    pub callsign: String,
    /// Motto.
    pub motto: String,
    /// Team.
    pub team: Team,
    /// Tank or robot.
    pub player_type: PlayerType,
    /// Wins.
    pub wins: u16,
    /// Losses.
    pub losses: u16,
    /// Team kills.
    pub team_kills: u16,
    /// `MsgPlayerInfo` bits: 1 registered, 2 verified, 4 admin.
    pub info_bits: u8,
    /// Handicap (`MsgHandicap`).
    pub handicap: i16,
    /// Address from `MsgAdminInfo`, if we were sent it.
    pub address: Option<std::net::IpAddr>,
    /// Alive (spawned and not killed since).
    pub alive: bool,
    /// Paused.
    pub paused: bool,
    /// On autopilot.
    pub autopilot: bool,
    /// Index of the flag held, if any.
    pub flag: Option<u16>,
    /// Spawn position and azimuth of the last `MsgAlive`.
    pub spawn: Option<([f32; 3], f32)>,
    /// The last accepted player update and the local time it was received.
    pub last_update: Option<(PlayerUpdate, Instant)>,
}

impl Player {
    fn new(id: u8) -> Self {
        Player {
            id,
            callsign: String::new(),
            motto: String::new(),
            team: Team::NoTeam,
            player_type: PlayerType::Tank,
            wins: 0,
            losses: 0,
            team_kills: 0,
            info_bits: 0,
            handicap: 0,
            address: None,
            alive: false,
            paused: false,
            autopilot: false,
            flag: None,
            spawn: None,
            last_update: None,
        }
    }

    /// Score as the official client shows it (wins − losses).
    pub fn score(&self) -> i32 {
        self.wins as i32 - self.losses as i32
    }

    /// Status bits of the last update (empty when none).
    pub fn status(&self) -> PlayerStatus {
        self.last_update.map(|(u, _)| u.status).unwrap_or_default()
    }
}

/// A flag's state.
#[derive(Debug, Clone, Copy)]
pub struct FlagState {
    /// Index.
    pub index: u16,
    /// The last record received.
    pub info: FlagInfo,
    /// The real type, when a grab, drop or transfer revealed it (loose flags are sent as `PZ`).
    pub revealed: Option<Abbv>,
    /// Local time the record was received (for evaluating a flight).
    pub received: Instant,
}

impl FlagState {
    /// The best known type: the revealed one while the flag is carried or flying, else what the server sent.
    pub fn abbv(&self) -> Abbv {
        match (self.revealed, self.info.status) {
            (Some(a), FlagStatus::OnTank | FlagStatus::InAir) => a,
            _ => self.info.abbv,
        }
    }

    /// The flight of this flag, if it is flying (in the air, coming or going).
    pub fn flight(&self) -> Option<super::flight::FlagFlight> {
        let kind = super::flight::FlightKind::from_status(self.info.status.to_u16())?;
        Some(super::flight::FlagFlight {
            kind,
            position: self.info.position.into(),
            launch: self.info.launch.into(),
            landing: self.info.landing.into(),
            flight_time: self.info.flight_time,
            flight_end: self.info.flight_end,
            initial_velocity: self.info.initial_velocity,
        })
    }

    /// Position at local time `now`, following a flight (see [`super::flight`]); `gravity` is `_gravity`.
    pub fn position_at(&self, now: Instant, gravity: f32) -> [f32; 3] {
        match self.flight() {
            Some(f) => {
                let dt = now.saturating_duration_since(self.received).as_secs_f32();
                f.at(dt, gravity).position.into()
            }
            None => self.info.position,
        }
    }
}

/// A live shot.
#[derive(Debug, Clone, Copy)]
pub struct Shot {
    /// As fired.
    pub info: FiringInfo,
    /// Local time it was received.
    pub received: Instant,
    /// Latest guided-missile update, with its receive time.
    pub gm_update: Option<(ShotUpdate, Instant, u8)>,
}

impl Shot {
    /// True once the shot's lifetime is over at `now`.
    pub fn expired(&self, now: Instant) -> bool {
        let life = self.info.lifetime.max(0.0) - self.info.dt.max(0.0);
        now.saturating_duration_since(self.received) > Duration::from_secs_f32(life.clamp(0.0, 3600.0))
    }
}

/// Everything a session knows about the game.
#[derive(Debug, Default)]
pub struct Game {
    /// Our player id (from the hello).
    pub my_id: Option<u8>,
    /// Game settings (`MsgGameSettings`), if asked for.
    pub settings: Option<GameSettings>,
    /// Server variables.
    pub vars: VarStore,
    /// Players by id.
    pub players: HashMap<u8, Player>,
    /// Teams 0..=7 as last reported.
    pub teams: [Option<TeamInfo>; 8],
    /// Flags by index.
    pub flags: HashMap<u16, FlagState>,
    /// Live shots by (shooter, shot id).
    pub shots: HashMap<(u8, u16), Shot>,
    /// Seconds left in a timed game and when that was received (−1 paused, 0 over).
    pub time_left: Option<(i32, Instant)>,
    /// Server clock: microseconds since the epoch at the local instant received.
    pub server_time: Option<(u64, Instant)>,
    /// The current rabbit in rabbit-chase games.
    pub rabbit: Option<u8>,
    /// Custom flags announced with `MsgFlagType`: (abbreviation, name).
    pub custom_flags: Vec<(Abbv, String)>,
    /// True once `MsgScoreOver` was received.
    pub game_over: bool,
    /// The last `MsgQueryGame` answer received while joined (team sizes and limits) and when it came.
    pub limits: Option<(QueryGameInfo, Instant)>,
    /// When expired shots were last dropped.
    pub(crate) last_prune: Option<Instant>,
}

impl Game {
    /// The player with this id.
    pub fn player(&self, id: u8) -> Option<&Player> {
        self.players.get(&id)
    }

    /// A callsign for `id`, or a description of the special ids.
    pub fn name_of(&self, id: u8) -> String {
        use super::consts::player;
        match id {
            player::SERVER => "SERVER".into(),
            player::ALL_PLAYERS => "all".into(),
            player::ADMIN_PLAYERS => "admins".into(),
            player::NO_PLAYER => "nobody".into(),
            id if (244..=251).contains(&id) => format!("{} team", Team::from_i16(251 - id as i16).name()),
            id => self.players.get(&id).map(|p| p.callsign.clone()).unwrap_or_else(|| format!("#{id}")),
        }
    }

    pub(crate) fn player_mut(&mut self, id: u8) -> &mut Player {
        self.players.entry(id).or_insert_with(|| Player::new(id))
    }

    pub(crate) fn set_team(&mut self, t: TeamInfo) {
        if let Some(i) = t.team.index() {
            self.teams[i] = Some(t);
        }
    }

    /// Stores a flag record; returns false (and stores nothing) when the index is over [`MAX_FLAGS`].
    pub(crate) fn set_flag(&mut self, index: u16, info: FlagInfo, revealed: Option<Abbv>, now: Instant) -> bool {
        if index as usize >= MAX_FLAGS {
            return false;
        }
        let prev_revealed = self.flags.get(&index).and_then(|f| f.revealed);
        // A flag that lands again is disguised as PZ; keep what we learned while it is carried or flying only.
        let revealed = match info.status {
            FlagStatus::OnTank | FlagStatus::InAir => revealed.or(prev_revealed),
            _ => revealed,
        };
        self.flags.insert(index, FlagState { index, info, revealed, received: now });
        // Keep the holders consistent.
        for p in self.players.values_mut() {
            if p.flag == Some(index) {
                p.flag = None;
            }
        }
        if info.status == FlagStatus::OnTank {
            if let Some(p) = self.players.get_mut(&info.owner) {
                p.flag = Some(index);
            }
        }
        true
    }

    pub(crate) fn add_shot(&mut self, info: FiringInfo, now: Instant) {
        if self.shots.len() >= MAX_SHOTS {
            self.shots.retain(|_, s| !s.expired(now));
            if self.shots.len() >= MAX_SHOTS {
                return;
            }
        }
        self.shots.insert((info.shooter, info.shot_id), Shot { info, received: now, gm_update: None });
    }

    /// Drops expired shots.
    pub fn prune_shots(&mut self, now: Instant) {
        self.shots.retain(|_, s| !s.expired(now));
    }

    /// Seconds left at `now` in a timed game (counting down locally between `MsgTimeUpdate`s).
    pub fn seconds_left(&self, now: Instant) -> Option<f32> {
        let (s, at) = self.time_left?;
        if s <= 0 {
            return Some(s as f32);
        }
        Some((s as f32 - now.saturating_duration_since(at).as_secs_f32()).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_flag_flies_its_arc_and_lands() {
        let now = Instant::now();
        let info = FlagInfo {
            abbv: Abbv::new("SW"),
            status: FlagStatus::InAir,
            endurance: 1,
            owner: 1,
            position: [10.0, 0.0, 0.0],
            launch: [0.0, 0.0, 0.0],
            landing: [10.0, 0.0, 0.0],
            flight_time: 0.0,
            flight_end: 2.0,
            initial_velocity: 9.8,
        };
        let mut g = Game::default();
        assert!(g.set_flag(4, info, Some(Abbv::new("SW")), now));
        let f = g.flags[&4];
        let p = f.position_at(now + Duration::from_secs(1), -9.8);
        assert!((p[0] - 5.0).abs() < 1e-4 && (p[2] - 4.9).abs() < 1e-4, "{p:?}");
        let p = f.position_at(now + Duration::from_secs(5), -9.8);
        assert!((p[0] - 10.0).abs() < 1e-4 && p[2].abs() < 1e-4, "{p:?}");
        assert_eq!(f.abbv().as_string(), "SW", "the revealed type while flying");
        // Landed: disguised again.
        let landed = FlagInfo { status: FlagStatus::OnGround, abbv: Abbv::new("PZ"), ..info };
        g.set_flag(4, landed, None, now);
        assert_eq!(g.flags[&4].abbv().as_string(), "PZ");
        assert!(!g.set_flag(60000, info, None, now), "indices beyond the cap are refused");
    }
}
