//! BZFlag's own recording format (`.rec`): what `bzfs -recdir` writes with `/record` and `bzfs -replay` plays.
//!
//! Layout (every integer big-endian; see `docs/recordings.md`): a 426-byte header (magic `rrBZ`, version, total
//! header size, file time, recorder's player index, flags size, world size, callsign, motto, protocol version,
//! application version, world hash, the whole `MsgGameSettings` frame), the flag types, the world database, then
//! packet records: a 32-byte head (u16 mode, u16 code, u32 len, u32 next file position, u32 previous file
//! position, i64 timestamp in microseconds, 8 bytes of padding) and `len` bytes of message body.
//!
//! [`RecReader`] reads a file one packet at a time, with every size bounded before anything is allocated: the
//! world at most [`MAX_WORLD_BYTES`], the flag list [`MAX_FLAGS_BYTES`], a packet [`MAX_PACKET_DATA`] (the limit
//! `bzfs` itself applies). Packets are read in file order and each one's links must point at its neighbours, so a
//! loop in the links is an error at the packet that makes it, not a replay that never ends. A file cut in the
//! middle of a packet ends at the last whole packet ([`RecReader::truncated`] says so).
//!
//! [`replay_rec`] feeds the packets through a fresh [`Session`], as `bzfs -replay` feeds a viewer: a join built
//! from the header (the settings frame, the world, its hash), then the packets a viewer is sent: the state
//! packets of the first state block, then the real packets (hidden packets never, later state blocks not to a
//! viewer that already has the state).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::bzflag::consts::{code, player, Team, GAME_SETTINGS_PLEN, SERVER_VERSION};
use crate::bzflag::event::Event;
use crate::bzflag::msg::{write_frame, Message, ServerMsg};
use crate::bzflag::session::{md5_hex, Session, SessionConfig, MAX_WORLD_BYTES};

use super::{read_up_to, RecordError};

/// The first four bytes of a `.rec` file: "rrBZ".
pub const REC_MAGIC: u32 = 0x7272_425A;
/// The file format version bzfs writes.
pub const REC_VERSION: u32 = 1;
/// Bytes of the fixed header (before the flag types and the world).
pub const HEADER_LEN: usize = 426;
/// Bytes of a packet record's head.
pub const PACKET_HEAD: usize = 32;
/// The largest packet body `bzfs` loads (`MaxPacketLen` − 4); a larger one is an error.
pub const MAX_PACKET_DATA: usize = 1020;
/// The largest flag-type list accepted (bzfs 2.4 has 47 flag types, 2 bytes each).
pub const MAX_FLAGS_BYTES: usize = 1024;
/// Bytes of the whole `MsgGameSettings` frame kept in the header.
pub const SETTINGS_FRAME_LEN: usize = 4 + GAME_SETTINGS_PLEN;
/// The player index bzfs writes when the server itself records (`ServerPlayer`).
pub const SERVER_RECORDER: u32 = player::SERVER as u32;

/// What a packet record is for during playback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Played to every viewer that has the state (`RealPacket`).
    Real,
    /// Part of a state block: played to a viewer that is still receiving the state (`StatePacket`).
    State,
    /// The zero-length marker that starts a state block (`UpdatePacket`).
    Update,
    /// Never played: admin information, commands, chat that was not broadcast (`HiddenPacket`).
    Hidden,
    /// Any other value (bzfs plays it to nobody).
    Other(u16),
}

impl Mode {
    /// From the wire value.
    pub fn from_u16(v: u16) -> Mode {
        match v {
            0 => Mode::Real,
            1 => Mode::State,
            2 => Mode::Update,
            3 => Mode::Hidden,
            o => Mode::Other(o),
        }
    }
    /// The wire value.
    pub fn to_u16(self) -> u16 {
        match self {
            Mode::Real => 0,
            Mode::State => 1,
            Mode::Update => 2,
            Mode::Hidden => 3,
            Mode::Other(o) => o,
        }
    }
}

/// A `.rec` file's header, flag types and world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecHeader {
    /// Format version (1; bzfs never checks it).
    pub version: u32,
    /// The header's "offset" field (bzfs writes the whole header's size, 426 + flags + world).
    pub offset: u32,
    /// Length of the recording in microseconds (0 in a file that was never closed).
    pub file_time_us: i64,
    /// The recorder's player index ([`SERVER_RECORDER`] when the server recorded).
    pub player: u32,
    /// Recorder's callsign.
    pub callsign: String,
    /// Recorder's motto.
    pub motto: String,
    /// Protocol version ("BZFS0221").
    pub server_version: String,
    /// Application version of the recorder.
    pub app_version: String,
    /// The world hash: 't' (generated world) or 'p' (world file) and the MD5 hex of the world.
    pub hash: String,
    /// The whole `MsgGameSettings` frame (u16 length, u16 code, body).
    pub settings: Vec<u8>,
    /// Flag types in play, 2-byte abbreviations.
    pub flags: Vec<u8>,
    /// The world database, as served by `MsgGetWorld`.
    pub world: Vec<u8>,
    /// The header was written by bzfs 2.4.12–2.4.14 (application version field 14 bytes short).
    pub shifted: bool,
}

impl RecHeader {
    /// The header's bytes (fixed part, flags, world), as bzfs 2.4.26 writes them.
    pub fn encode(&self) -> Vec<u8> {
        let total = HEADER_LEN + self.flags.len() + self.world.len();
        let mut w = crate::wire::Writer::with_capacity(total);
        w.u32(REC_MAGIC).u32(self.version).u32(total as u32);
        w.u32((self.file_time_us >> 32) as u32).u32(self.file_time_us as u32);
        w.u32(self.player).u32(self.flags.len() as u32).u32(self.world.len() as u32);
        fixed(&mut w, self.callsign.as_bytes(), 32, false);
        fixed(&mut w, self.motto.as_bytes(), 128, false);
        fixed(&mut w, self.server_version.as_bytes(), 8, true);
        fixed(&mut w, self.app_version.as_bytes(), 128, false);
        fixed(&mut w, self.hash.as_bytes(), 64, false);
        fixed(&mut w, &self.settings, SETTINGS_FRAME_LEN, true);
        w.bytes(&self.flags).bytes(&self.world);
        w.into_vec()
    }
}

/// `bytes` cut or zero-padded to `n` bytes; unless `whole`, the last one is always a NUL (bzfs copies text
/// fields with `strncpy(n - 1)`, the protocol version and the settings frame with `memcpy`).
fn fixed(w: &mut crate::wire::Writer, bytes: &[u8], n: usize, whole: bool) {
    let keep = if whole { n } else { n - 1 };
    let b = bytes.get(..keep).unwrap_or(bytes);
    w.bytes(b);
    for _ in b.len()..n {
        w.u8(0);
    }
}

/// One packet record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecPacket {
    /// Mode.
    pub mode: Mode,
    /// Message code (0 for a state block marker).
    pub code: u16,
    /// When it was recorded: microseconds since the Unix epoch.
    pub timestamp_us: i64,
    /// Where the record starts in the file.
    pub pos: u64,
    /// Message body.
    pub data: Vec<u8>,
}

/// Appends one packet record (head and body) to `out`; `pos` is where it starts in the file and `prev` where the
/// previous one started (0 for the first).
pub fn encode_packet(out: &mut Vec<u8>, pos: u64, prev: u64, mode: Mode, code: u16, timestamp_us: i64, data: &[u8]) {
    let next = pos + (PACKET_HEAD + data.len()) as u64;
    out.extend_from_slice(&mode.to_u16().to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(&(next as u32).to_be_bytes());
    out.extend_from_slice(&(prev as u32).to_be_bytes());
    out.extend_from_slice(&((timestamp_us >> 32) as u32).to_be_bytes());
    out.extend_from_slice(&(timestamp_us as u32).to_be_bytes());
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(data);
}

/// True when `head` (at least 4 bytes) starts a `.rec` file.
pub fn is_rec(head: &[u8]) -> bool {
    head.get(..4) == Some(REC_MAGIC.to_be_bytes().as_slice())
}

/// Reads a `.rec` file one packet at a time. See the module documentation for the bounds.
#[derive(Debug)]
pub struct RecReader<R> {
    input: R,
    pos: u64,
    prev: Option<u64>,
    done: bool,
    truncated: bool,
}

impl RecReader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<(RecHeader, RecReader<BufReader<File>>), RecordError> {
        RecReader::new(BufReader::with_capacity(256 * 1024, File::open(path)?))
    }
}

fn format_err(s: String) -> RecordError {
    RecordError::Format(s)
}

impl<R: Read> RecReader<R> {
    /// Reads the header, the flag types and the world from `input`.
    pub fn new(mut input: R) -> Result<(RecHeader, RecReader<R>), RecordError> {
        let mut h = [0u8; HEADER_LEN];
        let got = read_up_to(&mut input, &mut h)?;
        if got < 4 || !is_rec(&h) {
            return Err(format_err("it does not start with the BZFlag recording magic \"rrBZ\"".into()));
        }
        if got < HEADER_LEN {
            return Err(format_err(format!("the header is cut short ({got} of {HEADER_LEN} bytes)")));
        }
        let be32 = |at: usize| u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let text = |from: usize, len: usize| crate::wire::reader_cstr(&h[from..from + len]);
        // bzfs 2.4.12–2.4.14 packed the application version 14 bytes short (and padded the end): the loader
        // tells that header by a NUL at 313 followed by the hash's kind letter.
        let shifted = h[313] == 0 && matches!(h[314], b't' | b'p');
        let app_len = if shifted { 114 } else { 128 };
        let hash_at = 200 + app_len;
        let flags_size = be32(24) as usize;
        let world_size = be32(28) as usize;
        if flags_size > MAX_FLAGS_BYTES {
            return Err(format_err(format!(
                "the header claims {flags_size} bytes of flag types (at most {MAX_FLAGS_BYTES})"
            )));
        }
        if world_size > MAX_WORLD_BYTES {
            return Err(format_err(format!(
                "the header claims a world of {world_size} bytes (at most {MAX_WORLD_BYTES} are accepted)"
            )));
        }
        let mut header = RecHeader {
            version: be32(4),
            offset: be32(8),
            file_time_us: ((be32(12) as u64) << 32 | be32(16) as u64) as i64,
            player: be32(20),
            callsign: text(32, 32),
            motto: text(64, 128),
            server_version: text(192, 8),
            app_version: text(200, app_len),
            hash: text(hash_at, 64),
            settings: h[hash_at + 64..hash_at + 64 + SETTINGS_FRAME_LEN].to_vec(),
            flags: Vec::new(),
            world: Vec::new(),
            shifted,
        };
        // Read what is there, growing as bytes come: a header that lies about a size on a short file costs no
        // more memory than the file.
        (&mut input).take(flags_size as u64).read_to_end(&mut header.flags)?;
        if header.flags.len() < flags_size {
            return Err(format_err(format!(
                "the flag types are cut short ({} of {flags_size} bytes)",
                header.flags.len()
            )));
        }
        (&mut input).take(world_size as u64).read_to_end(&mut header.world)?;
        if header.world.len() < world_size {
            return Err(format_err(format!("the world is cut short ({} of {world_size} bytes)", header.world.len())));
        }
        let pos = (HEADER_LEN + flags_size + world_size) as u64;
        Ok((header, RecReader { input, pos, prev: None, done: false, truncated: false }))
    }

    /// True once the file ended in the middle of a packet (the packets before it were all read).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The next packet; `Ok(None)` at the end of the file (or at a cut).
    pub fn next_packet(&mut self) -> Result<Option<RecPacket>, RecordError> {
        if self.done {
            return Ok(None);
        }
        let mut head = [0u8; PACKET_HEAD];
        let got = read_up_to(&mut self.input, &mut head)?;
        if got < PACKET_HEAD {
            self.done = true;
            self.truncated = got > 0;
            return Ok(None);
        }
        let be32 = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let mode = Mode::from_u16(u16::from_be_bytes([head[0], head[1]]));
        let code = u16::from_be_bytes([head[2], head[3]]);
        let len = be32(4) as usize;
        let (next, prev) = (be32(8), be32(12));
        let timestamp_us = ((be32(16) as u64) << 32 | be32(20) as u64) as i64;
        let at = self.pos;
        if len > MAX_PACKET_DATA {
            self.done = true;
            return Err(format_err(format!(
                "the packet at byte {at} claims {len} bytes (bzfs loads at most {MAX_PACKET_DATA})"
            )));
        }
        let want_next = at + (PACKET_HEAD + len) as u64;
        // Positions are u32 in the file: compare modulo 2^32 (a file past 4 GiB wraps them in bzfs too).
        if next != want_next as u32 {
            self.done = true;
            return Err(format_err(format!(
                "the packet at byte {at} links to byte {next} as the next one, not {want_next} (a loop or a broken file)"
            )));
        }
        if let Some(p) = self.prev {
            if prev != p as u32 {
                self.done = true;
                return Err(format_err(format!(
                    "the packet at byte {at} links to byte {prev} as the previous one, not {p} (a loop or a broken file)"
                )));
            }
        }
        let mut data = vec![0u8; len];
        let got = read_up_to(&mut self.input, &mut data)?;
        if got < len {
            self.done = true;
            self.truncated = true;
            return Ok(None);
        }
        self.prev = Some(at);
        self.pos = want_next;
        Ok(Some(RecPacket { mode, code, timestamp_us, pos: at, data }))
    }
}

impl<R: Read> Iterator for RecReader<R> {
    type Item = Result<RecPacket, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_packet().transpose()
    }
}

/// Where a viewer is in bzfs's playback state machine (`PlayerReplayState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Viewer {
    None,
    Receiving,
    Stateful,
}

impl Viewer {
    /// The state after packet mode `m`, and whether the packet is sent to the viewer (as in
    /// `Replay::sendPackets`).
    fn step(self, m: Mode) -> (Viewer, bool) {
        let next = match (m, self) {
            (Mode::Hidden, s) => return (s, false),
            (Mode::Update, Viewer::None) => Viewer::Receiving,
            (Mode::Update, Viewer::Receiving) => Viewer::Stateful,
            (Mode::Update, s) | (Mode::State, s) => s,
            (_, Viewer::Receiving) => Viewer::Stateful,
            (_, s) => s,
        };
        let sent = matches!((m, next), (Mode::State, Viewer::Receiving) | (Mode::Real, Viewer::Stateful));
        (next, sent)
    }
}

/// Replays a `.rec` file's packets through a fresh [`Session`] (see the module documentation), handing each
/// event to `on_event` with its time from the first packet. Stops at the first read error and returns it, with
/// the session as it was (the events before the error were handed over).
pub fn replay_rec(
    header: &RecHeader,
    packets: impl Iterator<Item = Result<RecPacket, RecordError>>,
    mut on_event: impl FnMut(Duration, Event),
) -> (Session, Option<RecordError>) {
    let base = Instant::now();
    let mut s = match rec_join(header, base) {
        Ok(s) => s,
        Err(b) => {
            let (s, e) = *b;
            return (s, Some(e));
        }
    };
    drain(&mut s, Duration::ZERO, &mut on_event);
    let mut feed = RecFeed::new(None);
    for p in packets {
        let p = match p {
            Ok(p) => p,
            Err(e) => return (s, Some(e)),
        };
        if let Some(t) = feed.feed(&mut s, base, &p) {
            drain(&mut s, t, &mut on_event);
            if s.is_closed() {
                break;
            }
        }
    }
    (s, None)
}

/// Hands a session's events to `on_event` at `t` (what it would send is dropped: a replay answers nobody).
pub fn drain(s: &mut Session, t: Duration, on_event: &mut dyn FnMut(Duration, Event)) {
    while s.poll_transmit().is_some() {}
    while s.poll_world_request().is_some() {}
    while let Some(e) = s.poll_event() {
        on_event(t, e);
    }
}

/// A fresh observer [`Session`] joined as `bzfs -replay` joins a viewer, from the header: hello, flag
/// negotiation, settings, hash, the world "from the cache", the accept, all at `base` (its events not yet
/// polled). `Err` when the header's settings are not a `MsgGameSettings` frame (with the session as it was).
pub fn rec_join(header: &RecHeader, base: Instant) -> Result<Session, Box<(Session, RecordError)>> {
    let mut s = Session::new(SessionConfig {
        callsign: "replay".into(),
        team: Team::Observer,
        udp: false,
        full_join: true,
        ..SessionConfig::default()
    });
    let id = if header.player < u32::from(player::SERVER_FULL) { header.player as u8 } else { player::SERVER };
    s.handle_connected(base);
    let mut hello = SERVER_VERSION.to_vec();
    hello.push(id);
    s.handle_tcp(base, &hello);
    s.handle_tcp(base, &ServerMsg::NegotiateFlags { missing: Vec::new() }.encode());
    let settings_ok = header.settings.get(..4)
        == Some(&[0, GAME_SETTINGS_PLEN as u8, (code::GAME_SETTINGS >> 8) as u8, code::GAME_SETTINGS as u8][..]);
    if !settings_ok {
        return Err(Box::new((s, format_err("the header's game settings are not a MsgGameSettings frame".into()))));
    }
    s.handle_tcp(base, &header.settings);
    let kind = header.hash.bytes().next().filter(|b| matches!(b, b't' | b'p')).unwrap_or(b't');
    // bzfs recomputes the hash of the file's world on load; so do we (the header's may be stale or damaged).
    let hash = md5_hex(&header.world);
    s.handle_tcp(base, &ServerMsg::WantWHash { kind, hash }.encode());
    s.handle_world_cache_verified(base, Some(header.world.clone()));
    s.handle_tcp(base, &ServerMsg::Accept { id }.encode());
    Ok(s)
}

/// Feeds a `.rec` file's packets to a session joined by [`rec_join`], as bzfs plays them to one viewer: where
/// the viewer is in bzfs's playback state machine, the packets' times, one frame buffer.
#[derive(Debug)]
pub struct RecFeed {
    viewer: Viewer,
    t0: Option<i64>,
    last: Duration,
    frame: Vec<u8>,
}

impl RecFeed {
    /// A viewer that has no state yet; times count from `t0` (the file's first packet, in microseconds since the
    /// epoch), or from the first packet fed when `None`.
    pub fn new(t0: Option<i64>) -> RecFeed {
        RecFeed { viewer: Viewer::None, t0, last: Duration::ZERO, frame: Vec::with_capacity(4 + MAX_PACKET_DATA) }
    }

    /// The time of packet `p` from the first packet, never going back (a clock step in the recorder keeps the
    /// last time). Call it once per packet, in order ([`RecFeed::feed`] does).
    pub fn time(&mut self, p: &RecPacket) -> Duration {
        let start = *self.t0.get_or_insert(p.timestamp_us);
        let t = Duration::from_micros(p.timestamp_us.saturating_sub(start).max(0) as u64).max(self.last);
        self.last = t;
        t
    }

    /// Plays packet `p` to `s` at `base` + its time if bzfs would send it to this viewer; its time when it did.
    pub fn feed(&mut self, s: &mut Session, base: Instant, p: &RecPacket) -> Option<Duration> {
        let t = self.time(p);
        self.play(s, base + t, p).then_some(t)
    }

    /// Plays packet `p` (whose [`RecFeed::time`] was taken) to `s` at `now` if bzfs would send it to this viewer;
    /// whether it did.
    pub fn play(&mut self, s: &mut Session, now: Instant, p: &RecPacket) -> bool {
        let (next, sent) = self.viewer.step(p.mode);
        self.viewer = next;
        if sent {
            self.frame.clear();
            write_frame(&mut self.frame, p.code, &p.data);
            s.handle_tcp(now, &self.frame);
        }
        sent
    }
}

impl RecReader<BufReader<File>> {
    /// Opens `path` at the packet that starts at byte `pos` (one [`RecPacket::pos`] of an earlier read: a state
    /// block to play from). The header is not read again.
    pub fn open_at(path: &Path, pos: u64) -> Result<RecReader<BufReader<File>>, RecordError> {
        use std::io::{Seek, SeekFrom};
        let mut f = File::open(path)?;
        f.seek(SeekFrom::Start(pos))?;
        Ok(RecReader { input: BufReader::with_capacity(64 * 1024, f), pos, prev: None, done: false, truncated: false })
    }
}

/// Reads a whole `.rec` file from memory: the header and every whole packet (a cut ends the list), or the first
/// error.
pub fn parse_rec(bytes: &[u8]) -> Result<(RecHeader, Vec<RecPacket>), RecordError> {
    let (header, reader) = RecReader::new(bytes)?;
    let packets = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((header, packets))
}

#[cfg(test)]
mod tests;
