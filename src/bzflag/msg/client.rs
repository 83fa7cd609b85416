//! Messages a client sends ([`ClientMsg`]).

use super::types::*;
use super::Message;
use crate::bzflag::consts::{
    code as c, PlayerType, Team, CALLSIGN_LEN, MESSAGE_LEN, MOTTO_LEN, TOKEN_LEN, VERSION_LEN,
};
use crate::wire::{DecodeError, Reader, ReaderExt, Writer};

/// A message a client sends to a `bzfs` server. Unknown codes are kept as [`ClientMsg::Unknown`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClientMsg {
    /// `MsgEnter` (247 bytes as the official client sends it).
    Enter {
        /// Player type.
        player_type: PlayerType,
        /// Team wanted.
        team: Team,
        /// Callsign.
        callsign: String,
        /// Motto.
        motto: String,
        /// Global-login token ("" for none).
        token: String,
        /// Client version string.
        version: String,
    },
    /// `MsgExit`.
    Exit,
    /// `MsgNegotiateFlags`: every flag the client knows.
    NegotiateFlags {
        /// Flags.
        flags: Vec<Abbv>,
    },
    /// `MsgWantSettings`.
    WantSettings,
    /// `MsgWantWHash`.
    WantWHash,
    /// `MsgGetWorld`: bytes already received.
    GetWorld {
        /// Offset.
        offset: u32,
    },
    /// `MsgQueryGame`.
    QueryGame,
    /// `MsgQueryPlayers`.
    QueryPlayers,
    /// `MsgAlive`: spawn request.
    Alive,
    /// `MsgKilled`: we were killed.
    Killed {
        /// Killer.
        killer: u8,
        /// Reason.
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
        /// Flag index.
        index: u16,
    },
    /// `MsgDropFlag`.
    DropFlag {
        /// Where.
        pos: [f32; 3],
    },
    /// `MsgCaptureFlag`: the team whose base the flag was brought to.
    CaptureFlag {
        /// Team.
        team: Team,
    },
    /// `MsgTransferFlag`.
    TransferFlag {
        /// From (must be the sender).
        from: u8,
        /// To.
        to: u8,
    },
    /// `MsgTeleport`.
    Teleport {
        /// From face.
        from: u16,
        /// To face.
        to: u16,
    },
    /// `MsgMessage`: chat.
    Message {
        /// Destination.
        to: u8,
        /// Text (at most 127 bytes are sent).
        text: String,
    },
    /// `MsgPause`.
    Pause {
        /// Paused.
        paused: bool,
    },
    /// `MsgAutoPilot`.
    AutoPilot {
        /// On.
        on: bool,
    },
    /// `MsgNewRabbit`: the rabbit gives up.
    NewRabbit,
    /// `MsgLagPing` echo.
    LagPing {
        /// Sequence number.
        seq: u16,
    },
    /// `MsgUDPLinkRequest` with our id.
    UdpLinkRequest {
        /// Our player id.
        id: u8,
    },
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
        /// Reason.
        reason: u16,
    },
    /// `MsgGMUpdate`.
    GmUpdate {
        /// Shot.
        shot: ShotUpdate,
        /// Target.
        target: u8,
    },
    /// Unknown code.
    Unknown {
        /// Code.
        code: u16,
        /// Payload.
        body: Vec<u8>,
    },
}

impl Message for ClientMsg {
    fn parse(code: u16, body: &[u8]) -> Result<ClientMsg, DecodeError> {
        let mut r = Reader::new(body);
        let name = crate::bzflag::consts::code_name(code).unwrap_or("unknown message");
        super::check_payload_len(body).map_err(|e| e.context(name))?;
        let m = parse_inner(code, &mut r).map_err(|e| e.context(name))?;
        r.expect_end().map_err(|e| e.context(name))?;
        Ok(m)
    }

    fn code(&self) -> u16 {
        use ClientMsg::*;
        match self {
            Enter { .. } => c::ENTER,
            Exit => c::EXIT,
            NegotiateFlags { .. } => c::NEGOTIATE_FLAGS,
            WantSettings => c::WANT_SETTINGS,
            WantWHash => c::WANT_WHASH,
            GetWorld { .. } => c::GET_WORLD,
            QueryGame => c::QUERY_GAME,
            QueryPlayers => c::QUERY_PLAYERS,
            Alive => c::ALIVE,
            Killed { .. } => c::KILLED,
            GrabFlag { .. } => c::GRAB_FLAG,
            DropFlag { .. } => c::DROP_FLAG,
            CaptureFlag { .. } => c::CAPTURE_FLAG,
            TransferFlag { .. } => c::TRANSFER_FLAG,
            Teleport { .. } => c::TELEPORT,
            Message { .. } => c::MESSAGE,
            Pause { .. } => c::PAUSE,
            AutoPilot { .. } => c::AUTO_PILOT,
            NewRabbit => c::NEW_RABBIT,
            LagPing { .. } => c::LAG_PING,
            UdpLinkRequest { .. } => c::UDP_LINK_REQUEST,
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
            Unknown { code, .. } => *code,
        }
    }

    fn emit_body(&self, w: &mut Writer) {
        use ClientMsg::*;
        match self {
            Enter { player_type, team, callsign, motto, token, version } => {
                w.u16(player_type.to_u16()).i16(team.to_i16());
                w.fixed_str(callsign, CALLSIGN_LEN).fixed_str(motto, MOTTO_LEN).fixed_str(token, TOKEN_LEN);
                w.fixed_str(version, VERSION_LEN);
                // The official client's buffer has room for one more PlayerId byte and sends it (247 bytes).
                w.u8(0);
            }
            Exit | WantSettings | WantWHash | QueryGame | QueryPlayers | Alive | NewRabbit | UdpLinkEstablished => {}
            NegotiateFlags { flags } => {
                for f in flags {
                    f.write(w);
                }
            }
            GetWorld { offset } => {
                w.u32(*offset);
            }
            Killed { killer, reason, shot_id, flag, phydrv } => {
                w.u8(*killer).i16(*reason).i16(*shot_id);
                flag.write(w);
                if let Some(p) = phydrv {
                    w.i32(*p);
                }
            }
            GrabFlag { index } => {
                w.u16(*index);
            }
            DropFlag { pos } => {
                w.vec3(*pos);
            }
            CaptureFlag { team } => {
                w.u16(team.to_u16());
            }
            TransferFlag { from, to } => {
                w.u8(*from).u8(*to);
            }
            Teleport { from, to } => {
                w.u16(*from).u16(*to);
            }
            Message { to, text } => {
                // Like bzadmin: the destination then a full 128-byte text field (127 characters + NUL).
                w.u8(*to).fixed_str(text, MESSAGE_LEN);
            }
            Pause { paused } => {
                w.u8(*paused as u8);
            }
            AutoPilot { on } => {
                w.u8(*on as u8);
            }
            LagPing { seq } => {
                w.u16(*seq);
            }
            UdpLinkRequest { id } => {
                w.u8(*id);
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
            Unknown { body, .. } => {
                w.bytes(body);
            }
        }
    }
}

fn parse_inner(code: u16, r: &mut Reader<'_>) -> Result<ClientMsg, DecodeError> {
    use ClientMsg as M;
    Ok(match code {
        c::ENTER => {
            let m = M::Enter {
                player_type: PlayerType::from_u16(r.u16()?),
                team: Team::from_i16(r.i16()?),
                callsign: r.fixed_str(CALLSIGN_LEN)?,
                motto: r.fixed_str(MOTTO_LEN)?,
                token: r.fixed_str(TOKEN_LEN)?,
                version: r.fixed_str(VERSION_LEN)?,
            };
            // The server reads 246 bytes; the official client sends one padding byte more.
            if r.remaining() == 1 {
                r.u8()?;
            }
            m
        }
        c::EXIT => M::Exit,
        c::NEGOTIATE_FLAGS => {
            let mut flags = Vec::with_capacity(r.remaining() / 2);
            while r.remaining() >= 2 {
                flags.push(Abbv::read(r)?);
            }
            M::NegotiateFlags { flags }
        }
        c::WANT_SETTINGS => M::WantSettings,
        c::WANT_WHASH => M::WantWHash,
        c::GET_WORLD => M::GetWorld { offset: r.u32()? },
        c::QUERY_GAME => M::QueryGame,
        c::QUERY_PLAYERS => M::QueryPlayers,
        c::ALIVE => M::Alive,
        c::KILLED => {
            let killer = r.u8()?;
            let reason = r.i16()?;
            let shot_id = r.i16()?;
            let flag = Abbv::read(r)?;
            let phydrv =
                if reason == crate::bzflag::consts::kill_reason::PHYSICS_DRIVER_DEATH { Some(r.i32()?) } else { None };
            M::Killed { killer, reason, shot_id, flag, phydrv }
        }
        c::GRAB_FLAG => M::GrabFlag { index: r.u16()? },
        c::DROP_FLAG => M::DropFlag { pos: r.vec3()? },
        c::CAPTURE_FLAG => M::CaptureFlag { team: Team::from_u16(r.u16()?) },
        c::TRANSFER_FLAG => M::TransferFlag { from: r.u8()?, to: r.u8()? },
        c::TELEPORT => M::Teleport { from: r.u16()?, to: r.u16()? },
        c::MESSAGE => {
            let to = r.u8()?;
            M::Message { to, text: crate::wire::reader_cstr(r.take_rest()) }
        }
        c::PAUSE => M::Pause { paused: r.u8()? != 0 },
        c::AUTO_PILOT => M::AutoPilot { on: r.u8()? != 0 },
        c::NEW_RABBIT => M::NewRabbit,
        c::LAG_PING => M::LagPing { seq: r.u16()? },
        c::UDP_LINK_REQUEST => M::UdpLinkRequest { id: r.u8()? },
        c::UDP_LINK_ESTABLISHED => M::UdpLinkEstablished,
        c::PLAYER_UPDATE => M::PlayerUpdate(super::PlayerUpdate::read(r, false)?),
        c::PLAYER_UPDATE_SMALL => M::PlayerUpdate(super::PlayerUpdate::read(r, true)?),
        c::SHOT_BEGIN => M::ShotBegin(FiringInfo::read(r)?),
        c::SHOT_END => M::ShotEnd { shooter: r.u8()?, shot_id: r.i16()?, reason: r.u16()? },
        c::GM_UPDATE => M::GmUpdate { shot: ShotUpdate::read(r)?, target: r.u8()? },
        _ => M::Unknown { code, body: r.take_rest().to_vec() },
    })
}
