//! What a session reports: [`Event`]. Events serialize to the observer's JSON lines (`{"type": ..., ...}`).

use serde::{Serialize, Serializer};

use super::consts::{FlagStatus, PlayerStatus, PlayerType, RejectCode, Team};
use super::msg::{Abbv, FiringInfo, FlagInfo, GameSettings, PlayerUpdate, QueryGameInfo, TeamInfo};
use super::session::SessionEnd;

/// A flag as reported in events.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlagEvent {
    /// Flag index.
    pub index: u16,
    /// Type (`"PZ"` for a hidden loose flag; the real type in grab/drop/transfer).
    pub abbv: Abbv,
    /// Status.
    pub status: FlagStatus,
    /// Holder (255 none).
    pub owner: u8,
    /// Position.
    pub pos: [f32; 3],
}

impl FlagEvent {
    /// From a flag record, with the type to report.
    pub fn new(index: u16, f: &FlagInfo, abbv: Abbv) -> Self {
        FlagEvent { index, abbv, status: f.status, owner: f.owner, pos: f.position }
    }
}

/// A player listed by a query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueryPlayer {
    /// Id.
    pub id: u8,
    /// Callsign.
    pub callsign: String,
    /// Motto.
    pub motto: String,
    /// Team.
    pub team: Team,
    /// Tank or bot.
    pub player_type: PlayerType,
    /// Wins.
    pub wins: u16,
    /// Losses.
    pub losses: u16,
    /// Team kills.
    #[serde(rename = "tks")]
    pub team_kills: u16,
}

/// Something that happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The server's hello: our player id.
    Hello {
        /// Id.
        id: u8,
    },
    /// The UDP link came up, or was given up.
    UdpLink {
        /// Up or not.
        up: bool,
        /// In words.
        detail: String,
    },
    /// `MsgGameSettings`.
    Settings(GameSettings),
    /// The server offers the world over HTTP too.
    CacheUrl {
        /// URL.
        url: String,
    },
    /// We have the world (downloaded or from the cache), MD5-checked.
    World {
        /// MD5, hex.
        hash: String,
        /// Blob size.
        bytes: usize,
        /// From the on-disk cache.
        cached: bool,
    },
    /// The join was accepted.
    Accept {
        /// Our id.
        id: u8,
    },
    /// The join was refused.
    Reject {
        /// Code (a number in JSON).
        code: RejectCode,
        /// The server's reason.
        reason: String,
    },
    /// Server variables were set.
    SetVar {
        /// How many in this message.
        count: usize,
        /// The (name, value) pairs (not in JSON).
        #[serde(skip)]
        vars: Vec<(String, String)>,
    },
    /// A team's counts.
    Team(TeamInfo),
    /// A player joined (or is in the roster when we joined).
    Join {
        /// Id.
        id: u8,
        /// Callsign.
        callsign: String,
        /// Team.
        team: Team,
        /// Tank or bot.
        player_type: PlayerType,
        /// Motto.
        motto: String,
        /// Wins.
        wins: u16,
        /// Losses.
        losses: u16,
        /// Team kills.
        team_kills: u16,
    },
    /// A player left.
    Leave {
        /// Id.
        id: u8,
        /// Callsign.
        callsign: String,
    },
    /// A player's score (absolute).
    Score {
        /// Id.
        id: u8,
        /// Wins.
        wins: u16,
        /// Losses.
        losses: u16,
        /// Team kills.
        #[serde(rename = "tks")]
        team_kills: u16,
    },
    /// A new rabbit.
    NewRabbit {
        /// Id.
        id: u8,
    },
    /// Game over.
    GameOver {
        /// Winning player (255 none).
        player: u8,
        /// Winning team.
        team: Team,
    },
    /// Time left in a timed game.
    TimeLeft {
        /// Seconds (0 over, −1 paused).
        seconds: i32,
    },
    /// A flag's state.
    Flag(FlagEvent),
    /// A player grabbed a flag.
    Grab {
        /// Player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// The flag.
        #[serde(flatten)]
        flag: FlagEvent,
    },
    /// A player dropped a flag.
    Drop {
        /// Player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// The flag.
        #[serde(flatten)]
        flag: FlagEvent,
    },
    /// A flag was stolen (Thief).
    Transfer {
        /// From.
        from: u8,
        /// To.
        to: u8,
        /// The flag.
        #[serde(flatten)]
        flag: FlagEvent,
    },
    /// A team flag was captured.
    Capture {
        /// Capturing player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// Flag index.
        index: u16,
        /// The flag's type.
        abbv: Abbv,
        /// The team whose base it was brought to.
        team: Team,
    },
    /// `MsgNearFlag` (Identify).
    NearFlag {
        /// Position.
        pos: [f32; 3],
        /// Name.
        name: String,
    },
    /// A player spawned.
    Spawn {
        /// Id.
        id: u8,
        /// Callsign.
        callsign: String,
        /// Position.
        pos: [f32; 3],
        /// Azimuth (rad).
        azimuth: f32,
    },
    /// A player was killed.
    Kill {
        /// Victim.
        victim: u8,
        /// Victim's callsign.
        victim_callsign: String,
        /// Killer.
        killer: u8,
        /// Killer's callsign.
        killer_callsign: String,
        /// Reason, as a word.
        reason: &'static str,
        /// Reason code.
        reason_code: i16,
        /// Shot id (−1 none).
        shot_id: i16,
        /// Flag that killed.
        flag: Abbv,
        /// Physics driver (death drivers).
        #[serde(skip_serializing_if = "Option::is_none")]
        phydrv: Option<i32>,
    },
    /// A player went through a teleporter.
    Teleport {
        /// Player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// From face.
        from: u16,
        /// To face.
        to: u16,
    },
    /// Pause on or off.
    Pause {
        /// Player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// Paused.
        paused: bool,
    },
    /// Autopilot on or off.
    AutoPilot {
        /// Player.
        player: u8,
        /// Their callsign.
        callsign: String,
        /// On.
        on: bool,
    },
    /// A player update (accepted: newer than the last one).
    Update(#[serde(serialize_with = "ser_update")] PlayerUpdate),
    /// A shot was fired.
    ShotBegin(#[serde(serialize_with = "ser_shot")] FiringInfo),
    /// A shot ended (hit or exploded).
    ShotEnd {
        /// Shooter.
        shooter: u8,
        /// Shot id.
        shot_id: i16,
        /// 0 ended, 1 hit a tank.
        reason: u16,
    },
    /// A chat line (server lines come from 253).
    Chat {
        /// Sender id.
        from: u8,
        /// Sender's callsign (`"SERVER"` for the server).
        from_callsign: String,
        /// Destination id.
        to: u8,
        /// Destination's name (`"all"`, a callsign, `"red team"`).
        to_name: String,
        /// `/me` action.
        action: bool,
        /// Text.
        text: String,
    },
    /// The server asked clients to fetch resources.
    Resources {
        /// How many.
        count: usize,
    },
    /// Something malformed or unexpected was skipped.
    Warning {
        /// In words.
        message: String,
    },
    /// The server dropped us.
    Kicked {
        /// The last server message before it, if any.
        reason: String,
    },
    /// The answer to a query (`SessionConfig::query_only`).
    QueryResult {
        /// `MsgQueryGame` reply.
        game: QueryGameInfo,
        /// Teams 0..4.
        teams: Vec<TeamInfo>,
        /// Players.
        players: Vec<QueryPlayer>,
    },
    /// The session ended, and why. Serialized as its words (`"reason"`); the observer's JSON line adds the exit code
    /// the command line gives it ([`crate::observer::exit::of`]).
    Closed {
        /// Why.
        #[serde(serialize_with = "ser_display")]
        reason: SessionEnd,
    },
}

impl Event {
    /// The JSON `type` of this event (`"chat"`, `"kill"`, ...), used by `--show`/`--hide`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Hello { .. } => "hello",
            Event::UdpLink { .. } => "udp_link",
            Event::Settings(_) => "settings",
            Event::CacheUrl { .. } => "cache_url",
            Event::World { .. } => "world",
            Event::Accept { .. } => "accept",
            Event::Reject { .. } => "reject",
            Event::SetVar { .. } => "set_var",
            Event::Team(_) => "team",
            Event::Join { .. } => "join",
            Event::Leave { .. } => "leave",
            Event::Score { .. } => "score",
            Event::NewRabbit { .. } => "new_rabbit",
            Event::GameOver { .. } => "game_over",
            Event::TimeLeft { .. } => "time_left",
            Event::Flag(_) => "flag",
            Event::Grab { .. } => "grab",
            Event::Drop { .. } => "drop",
            Event::Transfer { .. } => "transfer",
            Event::Capture { .. } => "capture",
            Event::NearFlag { .. } => "near_flag",
            Event::Spawn { .. } => "spawn",
            Event::Kill { .. } => "kill",
            Event::Teleport { .. } => "teleport",
            Event::Pause { .. } => "pause",
            Event::AutoPilot { .. } => "auto_pilot",
            Event::Update(_) => "update",
            Event::ShotBegin(_) => "shot_begin",
            Event::ShotEnd { .. } => "shot_end",
            Event::Chat { .. } => "chat",
            Event::Resources { .. } => "resources",
            Event::Warning { .. } => "warning",
            Event::Kicked { .. } => "kicked",
            Event::QueryResult { .. } => "query_result",
            Event::Closed { .. } => "closed",
        }
    }

    /// Every event kind, for `--show`/`--hide` validation and help.
    pub const KINDS: &'static [&'static str] = &[
        "hello",
        "udp_link",
        "settings",
        "cache_url",
        "world",
        "accept",
        "reject",
        "set_var",
        "team",
        "join",
        "leave",
        "score",
        "new_rabbit",
        "game_over",
        "time_left",
        "flag",
        "grab",
        "drop",
        "transfer",
        "capture",
        "near_flag",
        "spawn",
        "kill",
        "teleport",
        "pause",
        "auto_pilot",
        "update",
        "shot_begin",
        "shot_end",
        "chat",
        "resources",
        "warning",
        "kicked",
        "query_result",
        "closed",
    ];
}

fn ser_display<S: Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn ser_update<S: Serializer>(u: &PlayerUpdate, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct U {
        id: u8,
        order: i32,
        status: u16,
        alive: bool,
        pos: [f32; 3],
        vel: [f32; 3],
        azimuth: f32,
        ang_vel: f32,
        small: bool,
    }
    U {
        id: u.id,
        order: u.order,
        status: u.status.bits(),
        alive: u.status.contains(PlayerStatus::ALIVE),
        pos: u.pos,
        vel: u.vel,
        azimuth: u.azimuth,
        ang_vel: u.ang_vel,
        small: u.small,
    }
    .serialize(s)
}

fn ser_shot<S: Serializer>(f: &FiringInfo, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct F {
        shooter: u8,
        shot_id: u16,
        pos: [f32; 3],
        vel: [f32; 3],
        team: Team,
        flag: Abbv,
        lifetime: f32,
    }
    F {
        shooter: f.shooter,
        shot_id: f.shot_id,
        pos: f.pos,
        vel: f.vel,
        team: f.team,
        flag: f.flag,
        lifetime: f.lifetime,
    }
    .serialize(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_match_json_types() {
        let e = Event::Score { id: 1, wins: 2, losses: 3, team_kills: 0 };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], e.kind());
        assert_eq!(v["tks"], 0);
        let e = Event::Team(TeamInfo { team: Team::Red, size: 1, wins: 0, losses: 0 });
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["type"], "team");
        assert_eq!(v["team"], "red");
        for k in Event::KINDS {
            assert!(Event::KINDS.iter().filter(|x| *x == k).count() == 1);
        }
    }
}
