//! Codes, limits and enumerations of the BZFlag 2.4 protocol (`BZFS0221`), fact sheet §5–§6.

use serde::Serialize;

/// The protocol version string the server sends in its hello.
pub const SERVER_VERSION: &[u8; 8] = b"BZFS0221";
/// The 10 bytes a client sends first.
pub const CLIENT_HEADER: &[u8; 10] = b"BZFLAG\r\n\r\n";
/// Header + payload never exceed this.
pub const MAX_PACKET_LEN: usize = 1024;
/// Largest payload of one message (`MAX_PACKET_LEN` minus the 4-byte header).
pub const MAX_PAYLOAD_LEN: usize = MAX_PACKET_LEN - 4;
/// The server reads at most this much of one UDP datagram and handles only its first message.
pub const MAX_UDP_PACKET_LEN: usize = 68;
/// Default server port (TCP and UDP).
pub const DEFAULT_PORT: u16 = 5154;
/// Size of a callsign field, NUL included.
pub const CALLSIGN_LEN: usize = 32;
/// Size of a motto field, NUL included.
pub const MOTTO_LEN: usize = 128;
/// Size of a token field, NUL included.
pub const TOKEN_LEN: usize = 22;
/// Size of the version field of `MsgEnter`, NUL included.
pub const VERSION_LEN: usize = 60;
/// Size of a chat text, NUL included.
pub const MESSAGE_LEN: usize = 128;
/// Size of the reason text of `MsgReject`.
pub const REJECT_REASON_LEN: usize = 128;
/// Size of a packed flag record.
pub const FLAG_PLEN: usize = 55;
/// Size of a packed `MsgShotBegin` (FiringInfo).
pub const FIRING_INFO_PLEN: usize = 43;
/// Size of a packed shot update (start of `MsgGMUpdate`).
pub const SHOT_UPDATE_PLEN: usize = 33;
/// Size of `MsgGameSettings`.
pub const GAME_SETTINGS_PLEN: usize = 30;
/// Size of a world chunk in `MsgGetWorld` replies.
pub const WORLD_CHUNK_LEN: usize = 1016;

/// Message codes (two ASCII letters, big-endian).
#[allow(missing_docs)]
pub mod code {
    pub const NULL: u16 = 0x0000;
    pub const ACCEPT: u16 = 0x6163;
    pub const ADMIN_INFO: u16 = 0x6169;
    pub const ALIVE: u16 = 0x616c;
    pub const ADD_PLAYER: u16 = 0x6170;
    pub const AUTO_PILOT: u16 = 0x6175;
    pub const CAPTURE_FLAG: u16 = 0x6366;
    pub const CUSTOM_SOUND: u16 = 0x6373;
    pub const CACHE_URL: u16 = 0x6375;
    pub const DROP_FLAG: u16 = 0x6466;
    pub const ENTER: u16 = 0x656e;
    pub const EXIT: u16 = 0x6578;
    pub const FLAG_TYPE: u16 = 0x6674;
    pub const FLAG_UPDATE: u16 = 0x6675;
    pub const FETCH_RESOURCES: u16 = 0x6672;
    pub const GRAB_FLAG: u16 = 0x6766;
    pub const GM_UPDATE: u16 = 0x676d;
    pub const GET_WORLD: u16 = 0x6777;
    pub const GAME_SETTINGS: u16 = 0x6773;
    pub const GAME_TIME: u16 = 0x6774;
    pub const HANDICAP: u16 = 0x6863;
    pub const KILLED: u16 = 0x6b6c;
    pub const LAG_STATE: u16 = 0x6c73;
    pub const MESSAGE: u16 = 0x6d67;
    pub const NEAR_FLAG: u16 = 0x4e66;
    pub const NEW_RABBIT: u16 = 0x6e52;
    pub const NEGOTIATE_FLAGS: u16 = 0x6e66;
    pub const PAUSE: u16 = 0x7061;
    pub const PLAYER_INFO: u16 = 0x7062;
    pub const PLAYER_UPDATE: u16 = 0x7075;
    pub const PLAYER_UPDATE_SMALL: u16 = 0x7073;
    pub const QUERY_GAME: u16 = 0x7167;
    pub const QUERY_PLAYERS: u16 = 0x7170;
    pub const REJECT: u16 = 0x726a;
    pub const REMOVE_PLAYER: u16 = 0x7270;
    pub const REPLAY_RESET: u16 = 0x7272;
    pub const SHOT_BEGIN: u16 = 0x7362;
    pub const SCORE: u16 = 0x7363;
    pub const SCORE_OVER: u16 = 0x736f;
    pub const SHOT_END: u16 = 0x7365;
    pub const SUPER_KILL: u16 = 0x736b;
    pub const SET_VAR: u16 = 0x7376;
    pub const TIME_UPDATE: u16 = 0x746f;
    pub const TELEPORT: u16 = 0x7470;
    pub const TRANSFER_FLAG: u16 = 0x7466;
    pub const TEAM_UPDATE: u16 = 0x7475;
    pub const WANT_WHASH: u16 = 0x7768;
    pub const WANT_SETTINGS: u16 = 0x7773;
    pub const PORTAL_ADD: u16 = 0x5061;
    pub const PORTAL_REMOVE: u16 = 0x5072;
    pub const PORTAL_UPDATE: u16 = 0x5075;
    pub const UDP_LINK_REQUEST: u16 = 0x6f66;
    pub const UDP_LINK_ESTABLISHED: u16 = 0x6f67;
    pub const LAG_PING: u16 = 0x7069;
    pub const PING_CODE_REQUEST: u16 = 0x0404;
    pub const PING_CODE_REPLY: u16 = 0x0303;
}

/// The protocol's name for a message code (`"MsgEnter"`), if it is a 2.4 code.
pub fn code_name(c: u16) -> Option<&'static str> {
    use code::*;
    Some(match c {
        NULL => "MsgNull",
        ACCEPT => "MsgAccept",
        ADMIN_INFO => "MsgAdminInfo",
        ALIVE => "MsgAlive",
        ADD_PLAYER => "MsgAddPlayer",
        AUTO_PILOT => "MsgAutoPilot",
        CAPTURE_FLAG => "MsgCaptureFlag",
        CUSTOM_SOUND => "MsgCustomSound",
        CACHE_URL => "MsgCacheURL",
        DROP_FLAG => "MsgDropFlag",
        ENTER => "MsgEnter",
        EXIT => "MsgExit",
        FLAG_TYPE => "MsgFlagType",
        FLAG_UPDATE => "MsgFlagUpdate",
        FETCH_RESOURCES => "MsgFetchResources",
        GRAB_FLAG => "MsgGrabFlag",
        GM_UPDATE => "MsgGMUpdate",
        GET_WORLD => "MsgGetWorld",
        GAME_SETTINGS => "MsgGameSettings",
        GAME_TIME => "MsgGameTime",
        HANDICAP => "MsgHandicap",
        KILLED => "MsgKilled",
        LAG_STATE => "MsgLagState",
        MESSAGE => "MsgMessage",
        NEAR_FLAG => "MsgNearFlag",
        NEW_RABBIT => "MsgNewRabbit",
        NEGOTIATE_FLAGS => "MsgNegotiateFlags",
        PAUSE => "MsgPause",
        PLAYER_INFO => "MsgPlayerInfo",
        PLAYER_UPDATE => "MsgPlayerUpdate",
        PLAYER_UPDATE_SMALL => "MsgPlayerUpdateSmall",
        QUERY_GAME => "MsgQueryGame",
        QUERY_PLAYERS => "MsgQueryPlayers",
        REJECT => "MsgReject",
        REMOVE_PLAYER => "MsgRemovePlayer",
        REPLAY_RESET => "MsgReplayReset",
        SHOT_BEGIN => "MsgShotBegin",
        SCORE => "MsgScore",
        SCORE_OVER => "MsgScoreOver",
        SHOT_END => "MsgShotEnd",
        SUPER_KILL => "MsgSuperKill",
        SET_VAR => "MsgSetVar",
        TIME_UPDATE => "MsgTimeUpdate",
        TELEPORT => "MsgTeleport",
        TRANSFER_FLAG => "MsgTransferFlag",
        TEAM_UPDATE => "MsgTeamUpdate",
        WANT_WHASH => "MsgWantWHash",
        WANT_SETTINGS => "MsgWantSettings",
        PORTAL_ADD => "MsgPortalAdd",
        PORTAL_REMOVE => "MsgPortalRemove",
        PORTAL_UPDATE => "MsgPortalUpdate",
        UDP_LINK_REQUEST => "MsgUDPLinkRequest",
        UDP_LINK_ESTABLISHED => "MsgUDPLinkEstablished",
        LAG_PING => "MsgLagPing",
        PING_CODE_REQUEST => "MsgPingCodeRequest",
        PING_CODE_REPLY => "MsgPingCodeReply",
        _ => return None,
    })
}

/// A team (`TeamColor`). Unknown wire values are kept as [`Team::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Team {
    /// −2: let the server choose.
    Automatic,
    /// −1: no team.
    NoTeam,
    /// 0.
    Rogue,
    /// 1.
    Red,
    /// 2.
    Green,
    /// 3.
    Blue,
    /// 4.
    Purple,
    /// 5.
    Observer,
    /// 6.
    Rabbit,
    /// 7.
    Hunter,
    /// Any other value.
    Other(i16),
}

impl Team {
    /// From the signed wire value.
    pub fn from_i16(v: i16) -> Team {
        match v {
            -2 => Team::Automatic,
            -1 => Team::NoTeam,
            0 => Team::Rogue,
            1 => Team::Red,
            2 => Team::Green,
            3 => Team::Blue,
            4 => Team::Purple,
            5 => Team::Observer,
            6 => Team::Rabbit,
            7 => Team::Hunter,
            o => Team::Other(o),
        }
    }
    /// From the unsigned wire value (0xFFFF = NoTeam).
    pub fn from_u16(v: u16) -> Team {
        Team::from_i16(v as i16)
    }
    /// The signed wire value.
    pub fn to_i16(self) -> i16 {
        match self {
            Team::Automatic => -2,
            Team::NoTeam => -1,
            Team::Rogue => 0,
            Team::Red => 1,
            Team::Green => 2,
            Team::Blue => 3,
            Team::Purple => 4,
            Team::Observer => 5,
            Team::Rabbit => 6,
            Team::Hunter => 7,
            Team::Other(o) => o,
        }
    }
    /// The unsigned wire value.
    pub fn to_u16(self) -> u16 {
        self.to_i16() as u16
    }
    /// The team's name as a lower-case word (`"red"`, `"observer"`).
    pub fn name(self) -> &'static str {
        match self {
            Team::Automatic => "automatic",
            Team::NoTeam => "none",
            Team::Rogue => "rogue",
            Team::Red => "red",
            Team::Green => "green",
            Team::Blue => "blue",
            Team::Purple => "purple",
            Team::Observer => "observer",
            Team::Rabbit => "rabbit",
            Team::Hunter => "hunter",
            Team::Other(_) => "unknown",
        }
    }
    /// Parses a team name (as printed by [`Team::name`]) or number.
    pub fn parse(s: &str) -> Option<Team> {
        let s = s.trim().to_ascii_lowercase();
        Some(match s.as_str() {
            "auto" | "automatic" => Team::Automatic,
            "rogue" => Team::Rogue,
            "red" => Team::Red,
            "green" => Team::Green,
            "blue" => Team::Blue,
            "purple" => Team::Purple,
            "observer" | "obs" => Team::Observer,
            "rabbit" => Team::Rabbit,
            "hunter" => Team::Hunter,
            other => Team::from_i16(other.parse().ok()?),
        })
    }
    /// Index 0..=7 for the real teams.
    pub fn index(self) -> Option<usize> {
        match self.to_i16() {
            v @ 0..=7 => Some(v as usize),
            _ => None,
        }
    }
}

impl Serialize for Team {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Team::Other(v) => s.serialize_i16(*v),
            t => s.serialize_str(t.name()),
        }
    }
}

impl std::fmt::Display for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Team::Other(v) => write!(f, "team {v}"),
            t => f.write_str(t.name()),
        }
    }
}

/// Player types (`MsgEnter`, `MsgAddPlayer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlayerType {
    /// 0: a human-driven tank.
    Tank,
    /// 1: a robot.
    Computer,
    /// Any other value.
    Other(u16),
}

impl PlayerType {
    /// From the wire value.
    pub fn from_u16(v: u16) -> Self {
        match v {
            0 => PlayerType::Tank,
            1 => PlayerType::Computer,
            o => PlayerType::Other(o),
        }
    }
    /// The wire value.
    pub fn to_u16(self) -> u16 {
        match self {
            PlayerType::Tank => 0,
            PlayerType::Computer => 1,
            PlayerType::Other(o) => o,
        }
    }
    /// `"tank"`, `"bot"` or `"unknown"`.
    pub fn name(self) -> &'static str {
        match self {
            PlayerType::Tank => "tank",
            PlayerType::Computer => "bot",
            PlayerType::Other(_) => "unknown",
        }
    }
}

impl Serialize for PlayerType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Special player ids.
#[allow(missing_docs)]
pub mod player {
    pub const NO_PLAYER: u8 = 255;
    pub const ALL_PLAYERS: u8 = 254;
    pub const SERVER: u8 = 253;
    pub const ADMIN_PLAYERS: u8 = 252;
    pub const FIRST_TEAM: u8 = 251;
    pub const LAST_REAL_PLAYER: u8 = 243;
    /// Value of `MsgTransferFlag.to` that just destroys the flag.
    pub const TRANSFER_DESTROY: u8 = 253;
    /// The id byte of a hello when the server has no free slot.
    pub const SERVER_FULL: u8 = 0xFF;
}

bitflags::bitflags! {
    /// Player status bits (`PlayerState`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct PlayerStatus: u16 {
        /// Alive.
        const ALIVE = 0x0001;
        /// Paused.
        const PAUSED = 0x0002;
        /// Exploding.
        const EXPLODING = 0x0004;
        /// Passing a teleporter.
        const TELEPORTING = 0x0008;
        /// Flag effect active.
        const FLAG_ACTIVE = 0x0010;
        /// Crossing a wall (Oscillation Overthruster).
        const CROSSING_WALL = 0x0020;
        /// Falling.
        const FALLING = 0x0040;
        /// On a physics driver (an i32 driver index follows).
        const ON_DRIVER = 0x0080;
        /// User inputs follow.
        const USER_INPUTS = 0x0100;
        /// Jump-jets scale follows.
        const JUMP_JETS = 0x0200;
        /// A sound byte follows.
        const PLAY_SOUND = 0x0400;
    }
}

bitflags::bitflags! {
    /// Game option bits (`MsgGameSettings`, `MsgQueryGame`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct GameOptions: u16 {
        /// Super flags.
        const SUPER_FLAGS = 0x0002;
        /// Jumping allowed.
        const JUMPING = 0x0008;
        /// Inertia (always set by 2.4 bzfs).
        const INERTIA = 0x0010;
        /// All shots ricochet.
        const RICOCHET = 0x0020;
        /// Bad flags can be shaken off.
        const SHAKABLE = 0x0040;
        /// Antidote flags.
        const ANTIDOTE = 0x0080;
        /// Handicap.
        const HANDICAP = 0x0100;
        /// No team kills.
        const NO_TEAM_KILLS = 0x0400;
    }
}

/// Game types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameType {
    /// 0: team free-for-all.
    TeamFfa,
    /// 1: capture the flag.
    ClassicCtf,
    /// 2: teamless free-for-all.
    OpenFfa,
    /// 3: rabbit chase.
    RabbitChase,
    /// Anything else.
    Other(u16),
}

impl GameType {
    /// From the wire value.
    pub fn from_u16(v: u16) -> Self {
        match v {
            0 => GameType::TeamFfa,
            1 => GameType::ClassicCtf,
            2 => GameType::OpenFfa,
            3 => GameType::RabbitChase,
            o => GameType::Other(o),
        }
    }
    /// The wire value.
    pub fn to_u16(self) -> u16 {
        match self {
            GameType::TeamFfa => 0,
            GameType::ClassicCtf => 1,
            GameType::OpenFfa => 2,
            GameType::RabbitChase => 3,
            GameType::Other(o) => o,
        }
    }
    /// A short human name, as `bzfquery` prints it.
    pub fn name(self) -> &'static str {
        match self {
            GameType::TeamFfa => "Team FFA",
            GameType::ClassicCtf => "CTF",
            GameType::OpenFfa => "Open FFA",
            GameType::RabbitChase => "Rabbit Chase",
            GameType::Other(_) => "unknown",
        }
    }
}

/// Flag status values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlagStatus {
    /// 0.
    NoExist,
    /// 1.
    OnGround,
    /// 2.
    OnTank,
    /// 3.
    InAir,
    /// 4: spawning, drops from the sky.
    Coming,
    /// 5: vanishing.
    Going,
    /// Anything else.
    Other(u16),
}

impl FlagStatus {
    /// From the wire value.
    pub fn from_u16(v: u16) -> Self {
        match v {
            0 => FlagStatus::NoExist,
            1 => FlagStatus::OnGround,
            2 => FlagStatus::OnTank,
            3 => FlagStatus::InAir,
            4 => FlagStatus::Coming,
            5 => FlagStatus::Going,
            o => FlagStatus::Other(o),
        }
    }
    /// The wire value.
    pub fn to_u16(self) -> u16 {
        match self {
            FlagStatus::NoExist => 0,
            FlagStatus::OnGround => 1,
            FlagStatus::OnTank => 2,
            FlagStatus::InAir => 3,
            FlagStatus::Coming => 4,
            FlagStatus::Going => 5,
            FlagStatus::Other(o) => o,
        }
    }
    /// Lower-case name (`"on_ground"`).
    pub fn name(self) -> &'static str {
        match self {
            FlagStatus::NoExist => "none",
            FlagStatus::OnGround => "on_ground",
            FlagStatus::OnTank => "on_tank",
            FlagStatus::InAir => "in_air",
            FlagStatus::Coming => "coming",
            FlagStatus::Going => "going",
            FlagStatus::Other(_) => "unknown",
        }
    }
}

impl Serialize for FlagStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// The 46 flag abbreviations the official 2.4 client offers in `MsgNegotiateFlags`.
pub const KNOWN_FLAGS: [&str; 46] = [
    "R*", "G*", "B*", "P*", "V", "QT", "OO", "F", "MG", "GM", "L", "R", "SB", "IB", "ST", "T", "N", "SH", "SR", "SW",
    "PZ", "G", "JP", "ID", "CL", "US", "MQ", "SE", "TH", "BU", "WG", "A", "RC", "CB", "O", "LT", "RT", "FO", "RO", "M",
    "B", "JM", "WA", "NJ", "TR", "BY",
];

/// The long name of a flag abbreviation, if it is one of the 46 standard flags.
pub fn flag_name(abbv: &str) -> Option<&'static str> {
    Some(match abbv {
        "R*" => "Red Team",
        "G*" => "Green Team",
        "B*" => "Blue Team",
        "P*" => "Purple Team",
        "V" => "High Speed",
        "QT" => "Quick Turn",
        "OO" => "Oscillation Overthruster",
        "F" => "Rapid Fire",
        "MG" => "Machine Gun",
        "GM" => "Guided Missile",
        "L" => "Laser",
        "R" => "Ricochet",
        "SB" => "Super Bullet",
        "IB" => "Invisible Bullet",
        "ST" => "Stealth",
        "T" => "Tiny",
        "N" => "Narrow",
        "SH" => "Shield",
        "SR" => "Steamroller",
        "SW" => "Shock Wave",
        "PZ" => "Phantom Zone",
        "G" => "Genocide",
        "JP" => "Jumping",
        "ID" => "Identify",
        "CL" => "Cloaking",
        "US" => "Useless",
        "MQ" => "Masquerade",
        "SE" => "Seer",
        "TH" => "Thief",
        "BU" => "Burrow",
        "WG" => "Wings",
        "A" => "Agility",
        "RC" => "Reverse Controls",
        "CB" => "Colorblindness",
        "O" => "Obesity",
        "LT" => "Left Turn Only",
        "RT" => "Right Turn Only",
        "FO" => "Forward Only",
        "RO" => "Reverse Only",
        "M" => "Momentum",
        "B" => "Blindness",
        "JM" => "Jamming",
        "WA" => "Wide Angle",
        "NJ" => "No Jumping",
        "TR" => "Trigger Happy",
        "BY" => "Bouncy",
        _ => return None,
    })
}

/// The reason code of a `MsgReject` (BZFlag's `RejectCode`, `Protocol.h`). Codes this crate does not know stay
/// representable as [`RejectCode::Other`], so a message round-trips byte for byte.
///
/// What a client should do about a reject is decided once, here: see [`RejectCode::remedy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectCode {
    /// 0, `RejectBadRequest`: a malformed join, or a plugin's `bz_eAllowPlayer` said no.
    BadRequest,
    /// 1, `RejectBadTeam`: no such team, or the team is not allowed.
    BadTeam,
    /// 2, `RejectBadType`: not a tank or a robot (or a robot asked to observe).
    BadType,
    /// 3, `RejectBadMotto` (`RejectBadEmail` before 2.4).
    BadMotto,
    /// 4, `RejectTeamFull`.
    TeamFull,
    /// 5, `RejectServerFull`.
    ServerFull,
    /// 6, `RejectBadCallsign`: an invalid callsign, or a registered one without its token.
    BadCallsign,
    /// 7, `RejectRepeatCallsign`: the callsign is in use.
    RepeatCallsign,
    /// 8, `RejectRejoinWaitTime`: rejoining too soon after leaving.
    RejoinWaitTime,
    /// 9, `RejectIPBanned` (also what a `REFUSED:` hello is reported as).
    IpBanned,
    /// 10, `RejectHostBanned`.
    HostBanned,
    /// 11, `RejectIDBanned`.
    IdBanned,
    /// A code this crate does not know.
    Other(u16),
}

/// What a client can do about a [`RejectCode`] ([`RejectCode::remedy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectRemedy {
    /// Join again at once under another callsign (the callsign is taken or refused).
    Rename,
    /// Join again later, unchanged (a full team or server, a rejoin wait).
    Wait,
    /// Joining again will be refused again (a ban, a bad request, team or type).
    GiveUp,
}

impl RejectCode {
    /// The code for a wire value.
    pub fn from_u16(code: u16) -> RejectCode {
        use RejectCode::*;
        match code {
            0 => BadRequest,
            1 => BadTeam,
            2 => BadType,
            3 => BadMotto,
            4 => TeamFull,
            5 => ServerFull,
            6 => BadCallsign,
            7 => RepeatCallsign,
            8 => RejoinWaitTime,
            9 => IpBanned,
            10 => HostBanned,
            11 => IdBanned,
            other => Other(other),
        }
    }

    /// The wire value.
    pub fn to_u16(self) -> u16 {
        use RejectCode::*;
        match self {
            BadRequest => 0,
            BadTeam => 1,
            BadType => 2,
            BadMotto => 3,
            TeamFull => 4,
            ServerFull => 5,
            BadCallsign => 6,
            RepeatCallsign => 7,
            RejoinWaitTime => 8,
            IpBanned => 9,
            HostBanned => 10,
            IdBanned => 11,
            Other(code) => code,
        }
    }

    /// A few words for the code ("callsign in use"; "unknown reason" for [`RejectCode::Other`]).
    pub fn name(self) -> &'static str {
        use RejectCode::*;
        match self {
            BadRequest => "bad request",
            BadTeam => "bad team",
            BadType => "bad player type",
            BadMotto => "bad motto",
            TeamFull => "team full",
            ServerFull => "server full",
            BadCallsign => "bad callsign",
            RepeatCallsign => "callsign in use",
            RejoinWaitTime => "rejoin wait time",
            IpBanned => "IP banned",
            HostBanned => "host banned",
            IdBanned => "ID banned",
            Other(_) => "unknown reason",
        }
    }

    /// What to do about it: rename on a callsign problem (in use, or refused, which is how bzfs answers a
    /// registered callsign without its token); wait and join again when there is no room (team or server full)
    /// or the server wants a rejoin wait; give up otherwise (bans, bad requests, team or type, unknown codes).
    /// The bots and their observer link both follow this.
    pub fn remedy(self) -> RejectRemedy {
        use RejectCode::*;
        match self {
            BadCallsign | RepeatCallsign => RejectRemedy::Rename,
            TeamFull | ServerFull | RejoinWaitTime => RejectRemedy::Wait,
            BadRequest | BadTeam | BadType | BadMotto | IpBanned | HostBanned | IdBanned | Other(_) => {
                RejectRemedy::GiveUp
            }
        }
    }

    /// True when joining again can succeed (after a rename or a wait; see [`RejectCode::remedy`]).
    pub fn is_retryable(self) -> bool {
        self.remedy() != RejectRemedy::GiveUp
    }

    /// True when the server has no room for us (team or server full).
    pub fn is_full(self) -> bool {
        matches!(self, RejectCode::TeamFull | RejectCode::ServerFull)
    }
}

impl From<u16> for RejectCode {
    fn from(code: u16) -> Self {
        RejectCode::from_u16(code)
    }
}

impl From<RejectCode> for u16 {
    fn from(code: RejectCode) -> Self {
        code.to_u16()
    }
}

impl std::fmt::Display for RejectCode {
    /// The name and the number: "callsign in use, code 7".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}, code {}", self.name(), self.to_u16())
    }
}

/// JSON keeps the number.
impl serde::Serialize for RejectCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(self.to_u16())
    }
}

/// The name of a reject code ([`RejectCode::name`] of the wire value).
pub fn reject_name(code: u16) -> &'static str {
    RejectCode::from_u16(code).name()
}

/// Kill reasons (`MsgKilled`).
pub mod kill_reason {
    /// Killed by a `MsgKilled` with no better reason.
    pub const GOT_KILLED_MSG: i16 = 0;
    /// Shot.
    pub const GOT_SHOT: i16 = 1;
    /// Run over by a steamroller.
    pub const GOT_RUN_OVER: i16 = 2;
    /// Team flag captured.
    pub const GOT_CAPTURED: i16 = 3;
    /// Genocide.
    pub const GENOCIDE_EFFECT: i16 = 4;
    /// Self destruct.
    pub const SELF_DESTRUCT: i16 = 5;
    /// Drowned.
    pub const WATER_DEATH: i16 = 6;
    /// A death physics driver ("pd"); an i32 driver index follows.
    pub const PHYSICS_DRIVER_DEATH: i16 = 0x7064;

    /// A lower-case word for the reason.
    pub fn name(r: i16) -> &'static str {
        match r {
            GOT_KILLED_MSG => "killed",
            GOT_SHOT => "shot",
            GOT_RUN_OVER => "run_over",
            GOT_CAPTURED => "captured",
            GENOCIDE_EFFECT => "genocide",
            SELF_DESTRUCT => "self_destruct",
            WATER_DEATH => "water",
            PHYSICS_DRIVER_DEATH => "physics_driver",
            _ => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_their_ascii_letters() {
        assert_eq!(code::ENTER.to_be_bytes(), *b"en");
        assert_eq!(code::PLAYER_UPDATE_SMALL.to_be_bytes(), *b"ps");
        assert_eq!(code::NEAR_FLAG.to_be_bytes(), *b"Nf");
        assert_eq!(code_name(code::UDP_LINK_ESTABLISHED), Some("MsgUDPLinkEstablished"));
        assert_eq!(code_name(0x7a7a), None);
    }

    #[test]
    fn teams_round_trip() {
        for v in -3i16..10 {
            assert_eq!(Team::from_i16(v).to_i16(), v);
        }
        assert_eq!(Team::from_u16(0xFFFE), Team::Automatic);
        assert_eq!(Team::parse("Observer"), Some(Team::Observer));
        assert_eq!(Team::parse("3"), Some(Team::Blue));
    }

    #[test]
    fn every_known_flag_has_a_name() {
        for f in KNOWN_FLAGS {
            assert!(flag_name(f).is_some(), "{f}");
        }
    }
}
