//! Writes BZFlag's `.rec` format from what an observer receives (`observe --rec FILE`).
//!
//! The writer sees every payload the session gets (the same hook as `--record`). Before the join it keeps the
//! world (downloaded chunks or the cache's blob), its hash and the `MsgGameSettings` frame; after `MsgAccept` it
//! lets the join burst (the state the server sends a newcomer alone) settle into its own view of the game, then
//! writes the header and a complete state block, and from there every broadcast and relayed message as a real
//! packet with its time, and a fresh state block every [`STATE_EVERY`] of play, as `bzfs` does. What the server
//! sent the observer alone is left out: lag pings, its accept, the handshake, messages addressed to it (the MOTD,
//! private lines), `MsgGameTime` (each client's own clock; the state blocks carry one); chat to a team or to the
//! admins is kept as a hidden packet, as bzfs keeps it.
//!
//! Every write is whole records in one `write` call on an unbuffered file, so a recorder killed at any moment
//! leaves a file that loads up to its last whole packet. The header's file time is patched in place at every state
//! block and at the end.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bzflag::consts::{code, player, MAX_PAYLOAD_LEN};
use crate::bzflag::msg::{datagram_frames, FlagInfo, FrameBuffer, Message, ServerMsg, TeamInfo};
use crate::bzflag::session::{team_of_flag, MAX_WORLD_BYTES};

use super::rec::{encode_packet, Mode, RecHeader, HEADER_LEN, REC_VERSION, SETTINGS_FRAME_LEN};
use super::{Kind, Meta};

/// How often a state block is written (bzfs's default `/record rate`).
pub const STATE_EVERY: Duration = Duration::from_secs(10);
/// How long after `MsgAccept` the join burst may take before the first state block is written (a relayed player
/// packet, which is never part of the burst, ends it earlier).
pub const JOIN_SETTLE: Duration = Duration::from_millis(500);
/// Most server variables kept for the state blocks (a 2.4 server has about 120).
pub const MAX_VARS: usize = 2048;
/// Most flags kept for the state blocks.
pub const MAX_FLAGS: usize = 1024;

#[derive(Debug, Clone)]
struct PlayerState {
    add: ServerMsg,
    info: Option<u8>,
    alive: bool,
}

/// The game as the state blocks tell it.
#[derive(Debug, Default)]
struct Tracker {
    vars: BTreeMap<String, String>,
    teams: BTreeMap<u16, TeamInfo>,
    flags: BTreeMap<u16, FlagInfo>,
    players: BTreeMap<u8, PlayerState>,
    rabbit: Option<u8>,
    game_time: Option<(u64, Instant)>,
}

impl Tracker {
    fn apply(&mut self, now: Instant, msg: &ServerMsg) {
        use ServerMsg as M;
        match msg {
            M::SetVar { vars } => {
                for (n, v) in vars {
                    if self.vars.len() < MAX_VARS || self.vars.contains_key(n) {
                        self.vars.insert(n.clone(), v.clone());
                    }
                }
            }
            M::TeamUpdate { teams } => {
                for t in teams {
                    self.teams.insert(t.team.to_u16(), *t);
                }
            }
            M::FlagUpdate { flags } => {
                for (i, f) in flags {
                    self.set_flag(*i, *f);
                }
            }
            M::GrabFlag { index, flag, .. } | M::DropFlag { index, flag, .. } | M::TransferFlag { index, flag, .. } => {
                self.set_flag(*index, *flag)
            }
            M::CaptureFlag { index, .. } => {
                if let Some(t) = self.flags.get(index).and_then(|f| team_of_flag(f.abbv)) {
                    for p in self.players.values_mut() {
                        if matches!(p.add, M::AddPlayer { team, .. } if team == t) {
                            p.alive = false;
                        }
                    }
                }
            }
            M::AddPlayer { id, .. } => {
                self.players.insert(*id, PlayerState { add: msg.clone(), info: None, alive: false });
            }
            M::RemovePlayer { id } => {
                self.players.remove(id);
            }
            M::PlayerInfo { players } => {
                for (id, bits) in players {
                    if let Some(p) = self.players.get_mut(id) {
                        p.info = Some(*bits);
                    }
                }
            }
            M::Score { scores } => {
                for s in scores {
                    if let Some(M::AddPlayer { wins, losses, team_kills, .. }) =
                        self.players.get_mut(&s.id).map(|p| &mut p.add)
                    {
                        (*wins, *losses, *team_kills) = (s.wins, s.losses, s.team_kills);
                    }
                }
            }
            M::Alive { id, .. } => {
                if let Some(p) = self.players.get_mut(id) {
                    p.alive = true;
                }
            }
            M::Killed { victim, .. } => {
                if let Some(p) = self.players.get_mut(victim) {
                    p.alive = false;
                }
            }
            M::NewRabbit { id } => self.rabbit = Some(*id),
            M::GameTime { usec } => self.game_time = Some((*usec, now)),
            _ => {}
        }
    }

    fn set_flag(&mut self, index: u16, f: FlagInfo) {
        if self.flags.len() < MAX_FLAGS || self.flags.contains_key(&index) {
            self.flags.insert(index, f);
        }
    }

    /// The state block's messages, in bzfs's order: variables, teams, flags, players, their info, the living
    /// players' `MsgAlive`, the rabbit; then `MsgGameTime` (a real packet).
    fn state_block(&self, now: Instant) -> Vec<(Mode, ServerMsg)> {
        let mut out = Vec::new();
        let mut chunk: Vec<(String, String)> = Vec::new();
        let mut size = 2;
        for (n, v) in &self.vars {
            let pair = 2 + n.len().min(255) + v.len().min(255);
            if size + pair > MAX_PAYLOAD_LEN && !chunk.is_empty() {
                out.push((Mode::State, ServerMsg::SetVar { vars: std::mem::take(&mut chunk) }));
                size = 2;
            }
            size += pair;
            chunk.push((n.clone(), v.clone()));
        }
        if !chunk.is_empty() {
            out.push((Mode::State, ServerMsg::SetVar { vars: chunk }));
        }
        if !self.teams.is_empty() {
            out.push((Mode::State, ServerMsg::TeamUpdate { teams: self.teams.values().copied().collect() }));
        }
        let flags: Vec<(u16, FlagInfo)> = self.flags.iter().map(|(i, f)| (*i, *f)).collect();
        // 2 + 57 per flag within a packet, as bzfs splits them.
        for c in flags.chunks((MAX_PAYLOAD_LEN - 2) / 57) {
            out.push((Mode::State, ServerMsg::FlagUpdate { flags: c.to_vec() }));
        }
        for p in self.players.values() {
            out.push((Mode::State, p.add.clone()));
        }
        let info: Vec<(u8, u8)> = self.players.iter().filter_map(|(id, p)| p.info.map(|b| (*id, b))).collect();
        if !info.is_empty() {
            out.push((Mode::State, ServerMsg::PlayerInfo { players: info }));
        }
        for (id, _) in self.players.iter().filter(|(_, p)| p.alive) {
            out.push((Mode::State, ServerMsg::Alive { id: *id, pos: [0.0; 3], azimuth: 0.0 }));
        }
        if let Some(id) = self.rabbit {
            out.push((Mode::State, ServerMsg::NewRabbit { id }));
        }
        if let Some((usec, at)) = self.game_time {
            let usec = usec.saturating_add(now.saturating_duration_since(at).as_micros() as u64);
            out.push((Mode::Real, ServerMsg::GameTime { usec }));
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Joining,
    Settling(Instant),
    Live,
}

/// Writes a `.rec` file as a session runs. See the module documentation.
#[derive(Debug)]
pub struct RecWriter {
    file: File,
    start: Instant,
    wall_start_us: i64,
    meta: Meta,
    frames: FrameBuffer,
    phase: Phase,
    my_id: Option<u8>,
    tracker: Tracker,
    world: Vec<u8>,
    world_ok: bool,
    hash: String,
    settings: Vec<u8>,
    pos: u64,
    prev: u64,
    first_us: Option<i64>,
    last_us: i64,
    last_state: Option<Instant>,
    /// A state block is in the buffer: the file time is patched once it is written.
    state_pending: bool,
    max_bytes: u64,
    stopped: bool,
    /// The hello was taken off the TCP stream.
    hello_seen: bool,
    /// The TCP stream broke (the session ends too): nothing more is written.
    broken: bool,
    error: Option<io::Error>,
    buf: Vec<u8>,
}

impl RecWriter {
    /// Creates `path` (nothing is written until the join is complete).
    pub fn create(path: &Path, meta: &Meta, start: Instant) -> io::Result<RecWriter> {
        let file = File::create(path)?;
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros() as i64;
        Ok(RecWriter {
            file,
            start,
            wall_start_us: wall,
            meta: meta.clone(),
            frames: FrameBuffer::new(),
            phase: Phase::Joining,
            my_id: None,
            tracker: Tracker::default(),
            world: Vec::new(),
            world_ok: false,
            hash: String::new(),
            settings: Vec::new(),
            pos: 0,
            prev: 0,
            first_us: None,
            last_us: 0,
            last_state: None,
            state_pending: false,
            max_bytes: super::DEFAULT_MAX_RECORD_BYTES,
            stopped: false,
            hello_seen: false,
            broken: false,
            error: None,
            buf: Vec::with_capacity(64 * 1024),
        })
    }

    /// This writer with another cap on the file's size.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> RecWriter {
        self.max_bytes = max_bytes;
        self
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.pos
    }

    /// True once the size cap stopped the recording.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// One input of the session (the kinds of [`super::Recorder::record`]); only what the server sent matters.
    pub fn record(&mut self, kind: Kind, now: Instant, data: &[u8]) {
        if self.stopped || self.broken || self.error.is_some() {
            return;
        }
        match kind {
            Kind::TcpIn => {
                self.frames.push(data);
                // The stream starts with the 9-byte hello ("BZFS0221" and our id), not a frame.
                if !self.hello_seen {
                    if self.frames.take_raw(9).is_none() {
                        return;
                    }
                    self.hello_seen = true;
                }
                loop {
                    match self.frames.next_frame() {
                        Ok(Some((code, body))) => self.on_frame(now, code, &body),
                        Ok(None) => break,
                        Err(_) => {
                            // The session closes on a broken stream too; keep what was written.
                            self.broken = true;
                            break;
                        }
                    }
                }
            }
            Kind::UdpIn => {
                let (frames, _) = datagram_frames(data);
                for f in frames {
                    self.on_frame(now, f.code, f.body);
                }
            }
            Kind::Cache if !data.is_empty() && self.phase == Phase::Joining => {
                self.world = data.get(..MAX_WORLD_BYTES).unwrap_or(data).to_vec();
                self.world_ok = true;
            }
            _ => {}
        }
        self.flush_block(now);
    }

    fn wall_us(&self, now: Instant) -> i64 {
        self.wall_start_us.saturating_add(now.saturating_duration_since(self.start).as_micros() as i64)
    }

    fn on_frame(&mut self, now: Instant, code: u16, body: &[u8]) {
        // Before the join: the pieces of the header.
        match code {
            code::GET_WORLD if self.phase == Phase::Joining => {
                if let (Some(chunk), false) = (body.get(4..), self.world_ok) {
                    if self.world.len() + chunk.len() <= MAX_WORLD_BYTES {
                        self.world.extend_from_slice(chunk);
                    }
                    if body.get(..4) == Some(&[0, 0, 0, 0]) {
                        self.world_ok = true;
                    }
                }
                return;
            }
            code::WANT_WHASH => {
                self.hash = crate::wire::reader_cstr(body);
                return;
            }
            code::GAME_SETTINGS => {
                let mut f = Vec::with_capacity(SETTINGS_FRAME_LEN);
                crate::bzflag::msg::write_frame(&mut f, code, body);
                self.settings = f;
                return;
            }
            code::ACCEPT => {
                if self.phase == Phase::Joining {
                    self.my_id = body.first().copied();
                    self.phase = Phase::Settling(now);
                }
                return;
            }
            code::LAG_PING
            | code::NEGOTIATE_FLAGS
            | code::UDP_LINK_REQUEST
            | code::UDP_LINK_ESTABLISHED
            | code::QUERY_GAME
            | code::QUERY_PLAYERS
            | code::CACHE_URL
            | code::REJECT
            | code::SUPER_KILL
            | code::FLAG_TYPE
            | code::NEAR_FLAG
            | code::ADMIN_INFO
            | code::GET_WORLD => return,
            _ => {}
        }
        let relayed = matches!(
            code,
            code::PLAYER_UPDATE | code::PLAYER_UPDATE_SMALL | code::SHOT_BEGIN | code::SHOT_END | code::GM_UPDATE
        );
        // Only what the state blocks need is parsed; relayed updates are copied as they are.
        let parsed = if relayed { None } else { ServerMsg::parse(code, body).ok() };
        if let Phase::Settling(since) = self.phase {
            if relayed || now.saturating_duration_since(since) >= JOIN_SETTLE {
                self.begin(now);
            }
        }
        if let Some(m) = &parsed {
            self.tracker.apply(now, m);
        }
        if self.phase != Phase::Live {
            return;
        }
        if self.last_state.is_none_or(|t| now.saturating_duration_since(t) >= STATE_EVERY) {
            self.state_block(now);
        }
        let mode = match &parsed {
            Some(ServerMsg::GameTime { .. }) => return,
            Some(ServerMsg::Message { to, .. }) if Some(*to) == self.my_id => return,
            Some(ServerMsg::Message { to, .. }) if *to != player::ALL_PLAYERS => Mode::Hidden,
            _ => Mode::Real,
        };
        self.packet_raw(now, mode, code, body);
    }

    /// The join is over: the header and the first state block.
    fn begin(&mut self, now: Instant) {
        self.phase = Phase::Live;
        let mut flags = Vec::new();
        let mut seen: Vec<[u8; 2]> = Vec::new();
        for f in self.tracker.flags.values() {
            let a = f.abbv.0;
            // Team flags are not listed, as bzfs lists only the types its flag options put in play.
            if a != [0, 0] && &a != b"PZ" && team_of_flag(f.abbv).is_none() && !seen.contains(&a) {
                seen.push(a);
                flags.extend_from_slice(&a);
            }
        }
        let header = RecHeader {
            version: REC_VERSION,
            offset: 0,
            file_time_us: 0,
            player: u32::from(self.my_id.unwrap_or(player::SERVER)),
            callsign: self.meta.callsign.clone(),
            motto: self.meta.motto.clone(),
            server_version: "BZFS0221".into(),
            app_version: format!("bzhead-{}", env!("CARGO_PKG_VERSION")),
            hash: self.hash.clone(),
            settings: self.settings.clone(),
            flags,
            world: std::mem::take(&mut self.world),
            shifted: false,
        };
        let bytes = header.encode();
        debug_assert!(bytes.len() >= HEADER_LEN);
        self.buf.extend_from_slice(&bytes);
        self.state_block(now);
    }

    fn state_block(&mut self, now: Instant) {
        self.last_state = Some(now);
        self.state_pending = true;
        self.packet_raw(now, Mode::Update, 0, &[]);
        for (mode, m) in self.tracker.state_block(now) {
            let bytes = m.encode();
            self.packet_raw(now, mode, m.code(), bytes.get(4..).unwrap_or_default());
        }
    }

    fn packet_raw(&mut self, now: Instant, mode: Mode, code: u16, body: &[u8]) {
        let ts = self.wall_us(now);
        self.first_us.get_or_insert(ts);
        self.last_us = ts;
        let pos = self.pos + self.buf.len() as u64;
        encode_packet(&mut self.buf, pos, self.prev, mode, code, ts, body);
        self.prev = pos;
    }

    /// Writes what the last input produced as one `write` (whole records only), within the size cap.
    fn flush_block(&mut self, _now: Instant) {
        if self.buf.is_empty() {
            return;
        }
        let header_pending = self.pos == 0;
        if self.pos + self.buf.len() as u64 > self.max_bytes && !header_pending {
            self.stopped = true;
            self.buf.clear();
            self.patch_time();
            return;
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            self.error = Some(e);
        }
        self.pos += self.buf.len() as u64;
        self.buf.clear();
        if std::mem::take(&mut self.state_pending) {
            self.patch_time();
        }
    }

    /// Puts the recording's length into the header (bzfs patches it when a recording is saved).
    fn patch_time(&mut self) {
        if self.pos < HEADER_LEN as u64 {
            return;
        }
        let t = self.last_us.saturating_sub(self.first_us.unwrap_or(self.last_us));
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&((t >> 32) as u32).to_be_bytes());
        b[4..].copy_from_slice(&(t as u32).to_be_bytes());
        if let Err(e) = self.file.write_all_at(&b, 12) {
            self.error.get_or_insert(e);
        }
    }

    /// Writes what is pending (a join that ended before anything else came still gets its header and state),
    /// patches the file time; returns the first write error.
    pub fn finish(&mut self, now: Instant) -> io::Result<()> {
        if matches!(self.phase, Phase::Settling(_)) {
            self.begin(now);
            self.flush_block(now);
        }
        self.patch_time();
        match self.error.take() {
            Some(e) => Err(e),
            None => self.file.flush(),
        }
    }
}
