//! Messages a server sends ([`ServerMsg`]).

use super::types::*;
use super::Message;
use crate::bzflag::consts::{code as c, PlayerType, RejectCode, Team, MESSAGE_LEN, REJECT_REASON_LEN};
use crate::wire::{DecodeError, DecodeErrorKind, Reader, ReaderExt, Writer};

/// An entry of `MsgAdminInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminEntry {
    /// Player id.
    pub id: u8,
    /// IP version (4).
    pub ip_version: u8,
    /// Address bytes (4 for IPv4).
    pub addr: Vec<u8>,
}

/// A score entry of `MsgScore`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreEntry {
    /// Player id.
    pub id: u8,
    /// Wins.
    pub wins: u16,
    /// Losses.
    pub losses: u16,
    /// Team kills.
    pub team_kills: u16,
}

/// A message sent by a `bzfs` server, parsed. Unknown codes are kept as [`ServerMsg::Unknown`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServerMsg {
    /// `MsgAccept`: the join was accepted.
    Accept {
        /// Our player id.
        id: u8,
    },
    /// `MsgReject`: the join was refused.
    Reject {
        /// Reject code (§6).
        code: RejectCode,
        /// The server's reason text.
        reason: String,
    },
    /// `MsgSuperKill`: the server drops us.
    SuperKill,
    /// `MsgSetVar`: server variables.
    SetVar {
        /// (name, value) pairs.
        vars: Vec<(String, String)>,
    },
    /// `MsgTeamUpdate`.
    TeamUpdate {
        /// Teams listed.
        teams: Vec<TeamInfo>,
    },
    /// `MsgFlagUpdate`.
    FlagUpdate {
        /// (flag index, flag) pairs.
        flags: Vec<(u16, FlagInfo)>,
    },
    /// `MsgAddPlayer`.
    AddPlayer {
        /// Player id.
        id: u8,
        /// Type.
        player_type: PlayerType,
        /// Team.
        team: Team,
        /// Wins.
        wins: u16,
        /// Losses.
        losses: u16,
        /// Team kills.
        team_kills: u16,
        /// Callsign.
        callsign: String,
        /// Motto.
        motto: String,
    },
    /// `MsgRemovePlayer`.
    RemovePlayer {
        /// Player id.
        id: u8,
    },
    /// `MsgPlayerInfo`: (id, bits: 1 registered, 2 verified, 4 admin).
    PlayerInfo {
        /// Entries.
        players: Vec<(u8, u8)>,
    },
    /// `MsgAdminInfo`.
    AdminInfo {
        /// Entries.
        players: Vec<AdminEntry>,
    },
    /// `MsgScore` (absolute values).
    Score {
        /// Entries.
        scores: Vec<ScoreEntry>,
    },
    /// `MsgHandicap`.
    Handicap {
        /// (id, handicap) pairs.
        players: Vec<(u8, i16)>,
    },
    /// `MsgScoreOver`: game over.
    ScoreOver {
        /// Winning player (or 255).
        player: u8,
        /// Winning team (NoTeam when a player won).
        team: Team,
    },
    /// `MsgTimeUpdate`: seconds left (0 = expired, −1 = paused).
    TimeUpdate {
        /// Seconds left.
        seconds: i32,
    },
    /// `MsgGameTime`: microseconds since the Unix epoch on the server's clock.
    GameTime {
        /// Microseconds.
        usec: u64,
    },
    /// `MsgGameSettings`.
    GameSettings(GameSettings),
    /// `MsgWantWHash` reply.
    WantWHash {
        /// `'t'` (temporary) or `'p'` (permanent); other bytes kept.
        kind: u8,
        /// 32 lower-case hex digits (as sent).
        hash: String,
    },
    /// `MsgCacheURL`.
    CacheUrl {
        /// URL.
        url: String,
    },
    /// `MsgGetWorld` chunk.
    GetWorld {
        /// Bytes left (see the fact sheet's quirk).
        bytes_left: u32,
        /// Chunk data.
        data: Vec<u8>,
    },
    /// `MsgNegotiateFlags` reply: flags the server may use that we did not list.
    NegotiateFlags {
        /// Missing flags.
        missing: Vec<Abbv>,
    },
    /// `MsgFlagType`: a custom flag.
    FlagType {
        /// Abbreviation.
        abbv: Abbv,
        /// 0 good, 1 bad.
        quality: u8,
        /// 0 normal, 1 special.
        shot_type: u8,
        /// Name.
        name: String,
        /// Help text.
        help: String,
    },
    /// `MsgAlive`: a player spawned.
    Alive {
        /// Player.
        id: u8,
        /// Position.
        pos: [f32; 3],
        /// Azimuth (rad).
        azimuth: f32,
    },
    /// `MsgKilled`.
    Killed {
        /// Victim.
        victim: u8,
        /// Killer.
        killer: u8,
        /// Reason (§6).
        reason: i16,
        /// Shot id (−1 none).
        shot_id: i16,
        /// Flag that killed.
        flag: Abbv,
        /// Physics driver (reason 0x7064 only).
        phydrv: Option<i32>,
    },
    /// `MsgGrabFlag`.
    GrabFlag {
        /// Player.
        player: u8,
        /// Flag index.
        index: u16,
        /// Flag (type revealed).
        flag: FlagInfo,
    },
    /// `MsgDropFlag`.
    DropFlag {
        /// Player.
        player: u8,
        /// Flag index.
        index: u16,
        /// Flag with flight data.
        flag: FlagInfo,
    },
    /// `MsgCaptureFlag`.
    CaptureFlag {
        /// Capturing player.
        player: u8,
        /// Flag index.
        index: u16,
        /// Team whose base it was brought to.
        team: Team,
    },
    /// `MsgTransferFlag` (Thief).
    TransferFlag {
        /// From.
        from: u8,
        /// To.
        to: u8,
        /// Flag index.
        index: u16,
        /// Flag.
        flag: FlagInfo,
    },
    /// `MsgNearFlag` (Identify).
    NearFlag {
        /// Position.
        pos: [f32; 3],
        /// Flag name.
        name: String,
    },
    /// `MsgTeleport`.
    Teleport {
        /// Player.
        player: u8,
        /// From face.
        from: u16,
        /// To face.
        to: u16,
    },
    /// `MsgMessage`: chat.
    Message {
        /// Sender (253 server).
        from: u8,
        /// Destination.
        to: u8,
        /// 0 chat, 1 action.
        kind: u8,
        /// Text (may contain ANSI colour escapes).
        text: String,
    },
    /// `MsgPause`.
    Pause {
        /// Player.
        player: u8,
        /// Paused or not.
        paused: bool,
    },
    /// `MsgAutoPilot`.
    AutoPilot {
        /// Player.
        player: u8,
        /// On or off.
        on: bool,
    },
    /// `MsgNewRabbit`.
    NewRabbit {
        /// The new rabbit.
        id: u8,
    },
    /// `MsgLagPing`.
    LagPing {
        /// Sequence number.
        seq: u16,
    },
    /// `MsgUDPLinkRequest` (the server's UDP probe, empty).
    UdpLinkRequest,
    /// `MsgUDPLinkEstablished`.
    UdpLinkEstablished,
    /// `MsgPlayerUpdate` / `MsgPlayerUpdateSmall`.
    PlayerUpdate(PlayerUpdate),
    /// `MsgShotBegin`.
    ShotBegin(FiringInfo),
    /// `MsgShotEnd`.
    ShotEnd {
        /// Shooter.
        shooter: u8,
        /// Shot id.
        shot_id: i16,
        /// 0 ended/exploded, 1 hit a tank.
        reason: u16,
    },
    /// `MsgGMUpdate`.
    GmUpdate {
        /// The shot.
        shot: ShotUpdate,
        /// Target id (255 none).
        target: u8,
    },
    /// `MsgQueryGame` reply.
    QueryGame(QueryGameInfo),
    /// `MsgQueryPlayers` reply.
    QueryPlayers {
        /// Teams (8).
        num_teams: u16,
        /// Players.
        num_players: u16,
    },
    /// `MsgFetchResources`.
    FetchResources {
        /// (type, url) pairs.
        items: Vec<(u16, String)>,
    },
    /// `MsgCustomSound`.
    CustomSound {
        /// Sound type.
        kind: u16,
        /// Sound name.
        name: String,
    },
    /// `MsgReplayReset`.
    ReplayReset {
        /// Last player.
        last_player: u8,
    },
    /// A code that 2.4 defines but does not use (`MsgLagState`, `MsgPortal*`), kept raw.
    Reserved {
        /// Code.
        code: u16,
        /// Payload.
        body: Vec<u8>,
    },
    /// A code this crate does not know.
    Unknown {
        /// Code.
        code: u16,
        /// Payload.
        body: Vec<u8>,
    },
}

fn read_text(r: &mut Reader<'_>) -> String {
    crate::wire::reader_cstr(r.take_rest())
}

impl Message for ServerMsg {
    fn parse(code: u16, body: &[u8]) -> Result<ServerMsg, DecodeError> {
        let mut r = Reader::new(body);
        let name = crate::bzflag::consts::code_name(code).unwrap_or("unknown message");
        super::check_payload_len(body).map_err(|e| e.context(name))?;
        let m = parse_inner(code, &mut r).map_err(|e| e.context(name))?;
        // Every layout is exact; bytes left over mean we misread the message (the session reports it as a
        // protocol warning and skips the message).
        r.expect_end().map_err(|e| e.context(name))?;
        Ok(m)
    }

    fn code(&self) -> u16 {
        use ServerMsg::*;
        match self {
            Accept { .. } => c::ACCEPT,
            Reject { .. } => c::REJECT,
            SuperKill => c::SUPER_KILL,
            SetVar { .. } => c::SET_VAR,
            TeamUpdate { .. } => c::TEAM_UPDATE,
            FlagUpdate { .. } => c::FLAG_UPDATE,
            AddPlayer { .. } => c::ADD_PLAYER,
            RemovePlayer { .. } => c::REMOVE_PLAYER,
            PlayerInfo { .. } => c::PLAYER_INFO,
            AdminInfo { .. } => c::ADMIN_INFO,
            Score { .. } => c::SCORE,
            Handicap { .. } => c::HANDICAP,
            ScoreOver { .. } => c::SCORE_OVER,
            TimeUpdate { .. } => c::TIME_UPDATE,
            GameTime { .. } => c::GAME_TIME,
            GameSettings(_) => c::GAME_SETTINGS,
            WantWHash { .. } => c::WANT_WHASH,
            CacheUrl { .. } => c::CACHE_URL,
            GetWorld { .. } => c::GET_WORLD,
            NegotiateFlags { .. } => c::NEGOTIATE_FLAGS,
            FlagType { .. } => c::FLAG_TYPE,
            Alive { .. } => c::ALIVE,
            Killed { .. } => c::KILLED,
            GrabFlag { .. } => c::GRAB_FLAG,
            DropFlag { .. } => c::DROP_FLAG,
            CaptureFlag { .. } => c::CAPTURE_FLAG,
            TransferFlag { .. } => c::TRANSFER_FLAG,
            NearFlag { .. } => c::NEAR_FLAG,
            Teleport { .. } => c::TELEPORT,
            Message { .. } => c::MESSAGE,
            Pause { .. } => c::PAUSE,
            AutoPilot { .. } => c::AUTO_PILOT,
            NewRabbit { .. } => c::NEW_RABBIT,
            LagPing { .. } => c::LAG_PING,
            UdpLinkRequest => c::UDP_LINK_REQUEST,
            UdpLinkEstablished => c::UDP_LINK_ESTABLISHED,
            PlayerUpdate(u) => {
                if u.small {
                    c::PLAYER_UPDATE_SMALL
                } else {
                    c::PLAYER_UPDATE
                }
            }
            ShotBegin(_) => c::SHOT_BEGIN,
            ShotEnd { .. } => c::SHOT_END,
            GmUpdate { .. } => c::GM_UPDATE,
            QueryGame(_) => c::QUERY_GAME,
            QueryPlayers { .. } => c::QUERY_PLAYERS,
            FetchResources { .. } => c::FETCH_RESOURCES,
            CustomSound { .. } => c::CUSTOM_SOUND,
            ReplayReset { .. } => c::REPLAY_RESET,
            Reserved { code, .. } | Unknown { code, .. } => *code,
        }
    }

    fn emit_body(&self, w: &mut Writer) {
        use ServerMsg::*;
        match self {
            Accept { id } => {
                w.u8(*id);
            }
            Reject { code, reason } => {
                w.u16(code.to_u16()).fixed_str(reason, REJECT_REASON_LEN);
            }
            SuperKill | UdpLinkRequest | UdpLinkEstablished => {}
            SetVar { vars } => write_vars(w, vars),
            TeamUpdate { teams } => write_teams(w, teams),
            FlagUpdate { flags } => write_flag_updates(w, flags),
            AddPlayer { id, player_type, team, wins, losses, team_kills, callsign, motto } => {
                w.u8(*id).u16(player_type.to_u16()).u16(team.to_u16()).u16(*wins).u16(*losses).u16(*team_kills);
                w.fixed_str(callsign, crate::bzflag::consts::CALLSIGN_LEN)
                    .fixed_str(motto, crate::bzflag::consts::MOTTO_LEN);
            }
            RemovePlayer { id } => {
                w.u8(*id);
            }
            PlayerInfo { players } => write_player_info(w, players),
            AdminInfo { players } => write_admin_info(w, players),
            Score { scores } => write_scores(w, scores),
            Handicap { players } => write_handicaps(w, players),
            ScoreOver { player, team } => {
                w.u8(*player).u16(team.to_u16());
            }
            TimeUpdate { seconds } => {
                w.i32(*seconds);
            }
            GameTime { usec } => {
                w.u32((usec >> 32) as u32).u32(*usec as u32);
            }
            GameSettings(s) => s.write(w),
            WantWHash { kind, hash } => {
                w.u8(*kind).bytes(hash.as_bytes()).u8(0);
            }
            CacheUrl { url } => {
                w.bytes(url.as_bytes()).u8(0);
            }
            GetWorld { bytes_left, data } => {
                w.u32(*bytes_left).bytes(data);
            }
            NegotiateFlags { missing } => {
                for a in missing {
                    a.write(w);
                }
            }
            FlagType { abbv, quality, shot_type, name, help } => {
                abbv.write(w);
                w.u8(*quality).u8(*shot_type).sstr(name.as_bytes()).sstr(help.as_bytes());
            }
            Alive { id, pos, azimuth } => {
                w.u8(*id).vec3(*pos).f32(*azimuth);
            }
            Killed { victim, killer, reason, shot_id, flag, phydrv } => {
                w.u8(*victim).u8(*killer).i16(*reason).i16(*shot_id);
                flag.write(w);
                if let Some(p) = phydrv {
                    w.i32(*p);
                }
            }
            GrabFlag { player, index, flag } | DropFlag { player, index, flag } => {
                w.u8(*player).u16(*index);
                flag.write(w);
            }
            CaptureFlag { player, index, team } => {
                w.u8(*player).u16(*index).u16(team.to_u16());
            }
            TransferFlag { from, to, index, flag } => {
                w.u8(*from).u8(*to).u16(*index);
                flag.write(w);
            }
            NearFlag { pos, name } => {
                w.vec3(*pos).sstr(name.as_bytes());
            }
            Teleport { player, from, to } => {
                w.u8(*player).u16(*from).u16(*to);
            }
            Message { from, to, kind, text } => {
                let t = &text.as_bytes()[..text.len().min(MESSAGE_LEN - 1)];
                w.u8(*from).u8(*to).u8(*kind).bytes(t).u8(0);
            }
            Pause { player, paused } => {
                w.u8(*player).u8(*paused as u8);
            }
            AutoPilot { player, on } => {
                w.u8(*player).u8(*on as u8);
            }
            NewRabbit { id } => {
                w.u8(*id);
            }
            LagPing { seq } => {
                w.u16(*seq);
            }
            PlayerUpdate(u) => u.write(w),
            ShotBegin(f) => f.write(w),
            ShotEnd { shooter, shot_id, reason } => {
                w.u8(*shooter).i16(*shot_id).u16(*reason);
            }
            GmUpdate { shot, target } => {
                shot.write(w);
                w.u8(*target);
            }
            QueryGame(q) => q.write(w),
            QueryPlayers { num_teams, num_players } => {
                w.u16(*num_teams).u16(*num_players);
            }
            FetchResources { items } => write_resources(w, items),
            CustomSound { kind, name } => {
                w.u16(*kind).u16(name.len() as u16).bytes(name.as_bytes());
            }
            ReplayReset { last_player } => {
                w.u8(*last_player);
            }
            Reserved { body, .. } | Unknown { body, .. } => {
                w.bytes(body);
            }
        }
    }
}

fn parse_inner(code: u16, r: &mut Reader<'_>) -> Result<ServerMsg, DecodeError> {
    use ServerMsg as M;
    Ok(match code {
        c::ACCEPT => M::Accept { id: r.u8()? },
        c::REJECT => {
            let code = RejectCode::from_u16(r.u16()?);
            // The server pads to 128 bytes; accept a shorter reason text too.
            let reason = crate::wire::reader_cstr(r.take_rest());
            M::Reject { code, reason }
        }
        c::SUPER_KILL => M::SuperKill,
        c::SET_VAR => M::SetVar { vars: read_vars(r)? },
        c::TEAM_UPDATE => M::TeamUpdate { teams: read_teams(r)? },
        c::FLAG_UPDATE => M::FlagUpdate { flags: read_flag_updates(r)? },
        c::ADD_PLAYER => M::AddPlayer {
            id: r.u8()?,
            player_type: PlayerType::from_u16(r.u16()?),
            team: Team::from_u16(r.u16()?),
            wins: r.u16()?,
            losses: r.u16()?,
            team_kills: r.u16()?,
            callsign: r.fixed_str(crate::bzflag::consts::CALLSIGN_LEN)?,
            motto: r.fixed_str(crate::bzflag::consts::MOTTO_LEN)?,
        },
        c::REMOVE_PLAYER => M::RemovePlayer { id: r.u8()? },
        c::PLAYER_INFO => M::PlayerInfo { players: read_player_info(r)? },
        c::ADMIN_INFO => M::AdminInfo { players: read_admin_info(r)? },
        c::SCORE => M::Score { scores: read_scores(r)? },
        c::HANDICAP => M::Handicap { players: read_handicaps(r)? },
        c::SCORE_OVER => M::ScoreOver { player: r.u8()?, team: Team::from_u16(r.u16()?) },
        c::TIME_UPDATE => M::TimeUpdate { seconds: r.i32()? },
        c::GAME_TIME => {
            let hi = r.u32()? as u64;
            let lo = r.u32()? as u64;
            M::GameTime { usec: (hi << 32) | lo }
        }
        c::GAME_SETTINGS => M::GameSettings(super::GameSettings::read(r)?),
        c::WANT_WHASH => {
            let kind = r.u8()?;
            let hash = crate::wire::reader_cstr(r.take_rest());
            M::WantWHash { kind, hash }
        }
        c::CACHE_URL => M::CacheUrl { url: read_text(r) },
        c::GET_WORLD => M::GetWorld { bytes_left: r.u32()?, data: r.take_rest().to_vec() },
        c::NEGOTIATE_FLAGS => {
            let mut missing = Vec::with_capacity(r.remaining() / 2);
            while r.remaining() >= 2 {
                missing.push(Abbv::read(r)?);
            }
            M::NegotiateFlags { missing }
        }
        c::FLAG_TYPE => {
            M::FlagType { abbv: Abbv::read(r)?, quality: r.u8()?, shot_type: r.u8()?, name: r.sstr()?, help: r.sstr()? }
        }
        c::ALIVE => M::Alive { id: r.u8()?, pos: r.vec3()?, azimuth: r.f32_finite()? },
        c::KILLED => {
            let victim = r.u8()?;
            let killer = r.u8()?;
            let reason = r.i16()?;
            let shot_id = r.i16()?;
            let flag = Abbv::read(r)?;
            let phydrv =
                if reason == crate::bzflag::consts::kill_reason::PHYSICS_DRIVER_DEATH { Some(r.i32()?) } else { None };
            M::Killed { victim, killer, reason, shot_id, flag, phydrv }
        }
        c::GRAB_FLAG => M::GrabFlag { player: r.u8()?, index: r.u16()?, flag: FlagInfo::read(r)? },
        c::DROP_FLAG => M::DropFlag { player: r.u8()?, index: r.u16()?, flag: FlagInfo::read(r)? },
        c::CAPTURE_FLAG => M::CaptureFlag { player: r.u8()?, index: r.u16()?, team: Team::from_u16(r.u16()?) },
        c::TRANSFER_FLAG => M::TransferFlag { from: r.u8()?, to: r.u8()?, index: r.u16()?, flag: FlagInfo::read(r)? },
        c::NEAR_FLAG => M::NearFlag { pos: r.vec3()?, name: r.sstr()? },
        c::TELEPORT => M::Teleport { player: r.u8()?, from: r.u16()?, to: r.u16()? },
        c::MESSAGE => {
            let from = r.u8()?;
            let to = r.u8()?;
            let kind = r.u8()?;
            M::Message { from, to, kind, text: read_text(r) }
        }
        c::PAUSE => M::Pause { player: r.u8()?, paused: r.u8()? != 0 },
        c::AUTO_PILOT => M::AutoPilot { player: r.u8()?, on: r.u8()? != 0 },
        c::NEW_RABBIT => M::NewRabbit { id: r.u8()? },
        c::LAG_PING => M::LagPing { seq: r.u16()? },
        c::UDP_LINK_REQUEST => {
            r.take_rest();
            M::UdpLinkRequest
        }
        c::UDP_LINK_ESTABLISHED => M::UdpLinkEstablished,
        c::PLAYER_UPDATE => M::PlayerUpdate(super::PlayerUpdate::read(r, false)?),
        c::PLAYER_UPDATE_SMALL => M::PlayerUpdate(super::PlayerUpdate::read(r, true)?),
        c::SHOT_BEGIN => M::ShotBegin(FiringInfo::read(r)?),
        c::SHOT_END => M::ShotEnd { shooter: r.u8()?, shot_id: r.i16()?, reason: r.u16()? },
        c::GM_UPDATE => M::GmUpdate { shot: ShotUpdate::read(r)?, target: r.u8()? },
        c::QUERY_GAME => M::QueryGame(QueryGameInfo::read(r)?),
        c::QUERY_PLAYERS => M::QueryPlayers { num_teams: r.u16()?, num_players: r.u16()? },
        c::FETCH_RESOURCES => M::FetchResources { items: read_resources(r)? },
        c::CUSTOM_SOUND => {
            let kind = r.u16()?;
            let l = r.u16()? as usize;
            M::CustomSound { kind, name: String::from_utf8_lossy(r.take(l)?).into_owned() }
        }
        c::REPLAY_RESET => M::ReplayReset { last_player: r.u8()? },
        c::LAG_STATE | c::PORTAL_ADD | c::PORTAL_REMOVE | c::PORTAL_UPDATE => {
            M::Reserved { code, body: r.take_rest().to_vec() }
        }
        _ => M::Unknown { code, body: r.take_rest().to_vec() },
    })
}

// ---- the messages that carry a counted list: each list's reader and writer

fn read_vars(r: &mut Reader<'_>) -> Result<Vec<(String, String)>, DecodeError> {
    let n = r.u16()?;
    let n = r.count("variable count", n as u64, 2)?;
    let mut vars = Vec::with_capacity(n);
    for _ in 0..n {
        let nl = r.u8()? as usize;
        let name = String::from_utf8_lossy(r.take(nl)?).into_owned();
        let vl = r.u8()? as usize;
        let value = String::from_utf8_lossy(r.take(vl)?).into_owned();
        vars.push((name, value));
    }
    Ok(vars)
}

/// The variables that fit in one message (`MAX_PAYLOAD_LEN`; bzfs sends the rest in another `MsgSetVar`), with
/// their count: a longer body would be cut by the frame and no longer parse.
fn write_vars(w: &mut Writer, vars: &[(String, String)]) {
    let mut size = 2;
    let fit = vars
        .iter()
        .take_while(|(n, v)| {
            size += 2 + n.len().min(255) + v.len().min(255);
            size <= crate::bzflag::consts::MAX_PAYLOAD_LEN
        })
        .count();
    w.u16(fit as u16);
    for (n, v) in &vars[..fit] {
        let n = &n.as_bytes()[..n.len().min(255)];
        let v = &v.as_bytes()[..v.len().min(255)];
        w.u8(n.len() as u8).bytes(n).u8(v.len() as u8).bytes(v);
    }
}

fn read_teams(r: &mut Reader<'_>) -> Result<Vec<TeamInfo>, DecodeError> {
    let n = r.u8()?;
    let n = r.count("team count", n as u64, 8)?;
    let mut teams = Vec::with_capacity(n);
    for _ in 0..n {
        teams.push(TeamInfo { team: Team::from_u16(r.u16()?), size: r.u16()?, wins: r.u16()?, losses: r.u16()? });
    }
    Ok(teams)
}

fn write_teams(w: &mut Writer, teams: &[TeamInfo]) {
    w.u8(teams.len() as u8);
    for t in teams {
        w.u16(t.team.to_u16()).u16(t.size).u16(t.wins).u16(t.losses);
    }
}

fn read_flag_updates(r: &mut Reader<'_>) -> Result<Vec<(u16, FlagInfo)>, DecodeError> {
    let n = r.u16()?;
    let n = r.count("flag count", n as u64, 57)?;
    let mut flags = Vec::with_capacity(n);
    for _ in 0..n {
        let i = r.u16()?;
        flags.push((i, FlagInfo::read(r)?));
    }
    Ok(flags)
}

fn write_flag_updates(w: &mut Writer, flags: &[(u16, FlagInfo)]) {
    w.u16(flags.len() as u16);
    for (i, f) in flags {
        w.u16(*i);
        f.write(w);
    }
}

fn read_player_info(r: &mut Reader<'_>) -> Result<Vec<(u8, u8)>, DecodeError> {
    let n = r.u8()?;
    let n = r.count("player count", n as u64, 2)?;
    let mut players = Vec::with_capacity(n);
    for _ in 0..n {
        players.push((r.u8()?, r.u8()?));
    }
    Ok(players)
}

fn write_player_info(w: &mut Writer, players: &[(u8, u8)]) {
    w.u8(players.len() as u8);
    for (id, bits) in players {
        w.u8(*id).u8(*bits);
    }
}

fn read_admin_info(r: &mut Reader<'_>) -> Result<Vec<AdminEntry>, DecodeError> {
    let n = r.u8()?;
    let n = r.count("player count", n as u64, 3)?;
    let mut players = Vec::with_capacity(n);
    for _ in 0..n {
        let len = r.u8()? as usize;
        if len < 1 {
            return Err(r.error(DecodeErrorKind::BadValue { field: "entry length", value: len as i64 }));
        }
        let id = r.u8()?;
        let ip_version = r.u8()?;
        let addr = r.take(len - 1)?.to_vec();
        players.push(AdminEntry { id, ip_version, addr });
    }
    Ok(players)
}

fn write_admin_info(w: &mut Writer, players: &[AdminEntry]) {
    w.u8(players.len() as u8);
    for p in players {
        w.u8((p.addr.len() + 1).min(255) as u8).u8(p.id).u8(p.ip_version).bytes(&p.addr);
    }
}

fn read_scores(r: &mut Reader<'_>) -> Result<Vec<ScoreEntry>, DecodeError> {
    let n = r.u8()?;
    let n = r.count("score count", n as u64, 7)?;
    let mut scores = Vec::with_capacity(n);
    for _ in 0..n {
        scores.push(ScoreEntry { id: r.u8()?, wins: r.u16()?, losses: r.u16()?, team_kills: r.u16()? });
    }
    Ok(scores)
}

fn write_scores(w: &mut Writer, scores: &[ScoreEntry]) {
    w.u8(scores.len() as u8);
    for s in scores {
        w.u8(s.id).u16(s.wins).u16(s.losses).u16(s.team_kills);
    }
}

fn read_handicaps(r: &mut Reader<'_>) -> Result<Vec<(u8, i16)>, DecodeError> {
    let n = r.u8()?;
    let n = r.count("handicap count", n as u64, 3)?;
    let mut players = Vec::with_capacity(n);
    for _ in 0..n {
        players.push((r.u8()?, r.i16()?));
    }
    Ok(players)
}

fn write_handicaps(w: &mut Writer, players: &[(u8, i16)]) {
    w.u8(players.len() as u8);
    for (id, h) in players {
        w.u8(*id).i16(*h);
    }
}

fn read_resources(r: &mut Reader<'_>) -> Result<Vec<(u16, String)>, DecodeError> {
    let n = r.u16()?;
    let n = r.count("resource count", n as u64, 4)?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        let t = r.u16()?;
        let l = r.u16()? as usize;
        items.push((t, String::from_utf8_lossy(r.take(l)?).into_owned()));
    }
    Ok(items)
}

fn write_resources(w: &mut Writer, items: &[(u16, String)]) {
    w.u16(items.len() as u16);
    for (t, url) in items {
        w.u16(*t).u16(url.len() as u16).bytes(url.as_bytes());
    }
}
