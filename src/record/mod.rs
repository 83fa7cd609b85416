//! Session recordings (`--record FILE`) and their offline replay through the same engine.
//!
//! A recording holds every input the engine received (TCP bytes, UDP datagrams, timeouts, the answers of the world
//! cache, commands such as leave and chat) and every payload it sent, each with its time offset in microseconds
//! from the start of the session. [`replay`] feeds the inputs through a fresh [`Session`] in virtual time and
//! returns the same events, at the same offsets, as the live run.
//!
//! File format (all integers big-endian):
//! ```text
//! "BZHREC01"
//! records: u8 kind, u64 t_us, u32 len, len bytes
//! ```
//! Kinds: 0 meta (JSON: server address and session configuration), 1 connected, 2 connect failed (text),
//! 3 TCP in, 4 TCP out, 5 TCP closed, 6 UDP in, 7 UDP out, 8 UDP unavailable (text), 9 cache answer
//! (empty = miss, else the blob), 10 timeout, 11 leave, 12 chat (u8 destination + text).
//!
//! A recording has a size cap ([`DEFAULT_MAX_RECORD_BYTES`], `--record-max-mib`): the record that would go past
//! it is not written, and recording stops there (the file ends at a whole record, so it replays up to that
//! point) while the session goes on; [`Recorder::take_stopped`] gives the message once. [`RecordReader`] reads a
//! recording one record at a time and [`replay_stream`] replays it that way, so a replay holds one record and
//! the session's state in memory, not the file.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::bzflag::consts::{PlayerType, Team};
use crate::bzflag::event::Event;
use crate::bzflag::session::{ConnectError, Session, SessionConfig};

pub mod rec;
pub mod rec_writer;
pub mod summary;

pub use rec::{is_rec, rec_join, replay_rec, RecFeed, RecHeader, RecPacket, RecReader};
pub use rec_writer::RecWriter;

/// The first 8 bytes of a recording.
pub const MAGIC: &[u8; 8] = b"BZHREC01";
/// The largest record accepted when reading (a world blob fits many times over).
pub const MAX_RECORD_LEN: usize = 64 * 1024 * 1024;
/// Default cap on a recording's size: 256 MiB (an hour of a busy 20-player server takes a few tens of MiB).
pub const DEFAULT_MAX_RECORD_BYTES: u64 = 256 * 1024 * 1024;
/// Bytes of a record's header (kind, time, length).
const RECORD_HEAD: u64 = 13;

/// Record kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum Kind {
    Meta = 0,
    Connected = 1,
    ConnectFailed = 2,
    TcpIn = 3,
    TcpOut = 4,
    TcpClosed = 5,
    UdpIn = 6,
    UdpOut = 7,
    UdpUnavailable = 8,
    Cache = 9,
    Timeout = 10,
    Leave = 11,
    Chat = 12,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            0 => Meta,
            1 => Connected,
            2 => ConnectFailed,
            3 => TcpIn,
            4 => TcpOut,
            5 => TcpClosed,
            6 => UdpIn,
            7 => UdpOut,
            8 => UdpUnavailable,
            9 => Cache,
            10 => Timeout,
            11 => Leave,
            12 => Chat,
            _ => return None,
        })
    }
}

/// What a recording says about the session it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// Server address as given.
    pub server: String,
    /// bzhead version that recorded it.
    pub bzhead: String,
    /// Callsign.
    pub callsign: String,
    /// Motto.
    pub motto: String,
    /// Team (wire value).
    pub team: i16,
    /// Player type (wire value).
    pub player_type: u16,
    /// Version string sent.
    pub version: String,
    /// UDP link enabled.
    pub udp: bool,
    /// Full join.
    pub full_join: bool,
    /// Hello timeout (ms).
    pub hello_timeout_ms: u64,
    /// Join timeout (ms).
    pub join_timeout_ms: u64,
    /// UDP timeout (ms).
    pub udp_timeout_ms: u64,
    /// Query only.
    #[serde(default)]
    pub query_only: bool,
    /// World only.
    #[serde(default)]
    pub world_only: bool,
    /// Lean (relayed updates and shots skipped).
    #[serde(default)]
    pub lean: bool,
    /// Idle limit once joined (ms).
    #[serde(default)]
    pub idle_timeout_ms: Option<u64>,
}

impl Meta {
    /// From a session configuration.
    pub fn new(server: &str, c: &SessionConfig) -> Meta {
        Meta {
            server: server.to_string(),
            bzhead: env!("CARGO_PKG_VERSION").to_string(),
            callsign: c.callsign.clone(),
            motto: c.motto.clone(),
            team: c.team.to_i16(),
            player_type: c.player_type.to_u16(),
            version: c.version.clone(),
            udp: c.udp,
            full_join: c.full_join,
            hello_timeout_ms: c.hello_timeout.as_millis() as u64,
            join_timeout_ms: c.join_timeout.as_millis() as u64,
            udp_timeout_ms: c.udp_timeout.as_millis() as u64,
            query_only: c.query_only,
            world_only: c.world_only,
            lean: c.lean,
            idle_timeout_ms: c.idle_timeout.map(|d| d.as_millis() as u64),
        }
    }

    /// The session configuration it describes.
    pub fn config(&self) -> SessionConfig {
        SessionConfig {
            callsign: self.callsign.clone(),
            motto: self.motto.clone(),
            token: String::new(),
            team: Team::from_i16(self.team),
            player_type: PlayerType::from_u16(self.player_type),
            version: self.version.clone(),
            udp: self.udp,
            full_join: self.full_join,
            hello_timeout: Duration::from_millis(self.hello_timeout_ms),
            join_timeout: Duration::from_millis(self.join_timeout_ms),
            udp_timeout: Duration::from_millis(self.udp_timeout_ms),
            query_only: self.query_only,
            world_only: self.world_only,
            lean: self.lean,
            idle_timeout: self.idle_timeout_ms.map(Duration::from_millis),
        }
    }
}

/// Writes a recording as the session runs. Write errors are kept and reported once by [`Recorder::finish`];
/// they never disturb the session.
#[derive(Debug)]
pub struct Recorder {
    /// The bzhead recording (`--record`), if asked for.
    out: Option<BufWriter<File>>,
    /// The BZFlag `.rec` recording (`--rec`), if asked for.
    rec: Option<RecWriter>,
    start: Instant,
    error: Option<io::Error>,
    written: u64,
    max_bytes: u64,
    /// Set when the cap stopped the recording; taken once by [`Recorder::take_stopped`].
    stopped: Option<String>,
    is_stopped: bool,
}

/// What to tell the user when `what` reached its size cap of `max_bytes` (in MiB when it is whole MiB).
fn cap_reached(what: &str, max_bytes: u64) -> String {
    let size = if max_bytes >= 1 << 20 && max_bytes % (1 << 20) == 0 {
        format!("{} MiB", max_bytes >> 20)
    } else {
        format!("{max_bytes} bytes")
    };
    format!("{what} reached its size cap of {size} and stopped; the session goes on (--record-max-mib sets the cap)")
}

impl Recorder {
    /// Creates `path` and writes the header and the meta record.
    pub fn create(path: &Path, meta: &Meta, start: Instant) -> io::Result<Recorder> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(MAGIC)?;
        let mut r = Recorder {
            out: Some(out),
            rec: None,
            start,
            error: None,
            written: MAGIC.len() as u64,
            max_bytes: DEFAULT_MAX_RECORD_BYTES,
            stopped: None,
            is_stopped: false,
        };
        let json = serde_json::to_vec(meta).map_err(io::Error::other)?;
        r.record(Kind::Meta, start, &json);
        if let Some(e) = r.error.take() {
            return Err(e);
        }
        Ok(r)
    }

    /// The recorders a session asked for: a bzhead recording at `record`, a BZFlag `.rec` at `rec`, either or
    /// both (`None` when neither), each capped at `max_bytes`. Errors name the file that could not be created.
    pub fn open(
        record: Option<&Path>,
        rec: Option<&Path>,
        meta: &Meta,
        start: Instant,
        max_bytes: u64,
    ) -> io::Result<Option<Recorder>> {
        let named = |p: &Path, e: io::Error| {
            io::Error::new(e.kind(), format!("cannot write the recording {}: {e}", p.display()))
        };
        let mut r = match record {
            Some(p) => Recorder::create(p, meta, start).map_err(|e| named(p, e))?,
            None if rec.is_some() => Recorder {
                out: None,
                rec: None,
                start,
                error: None,
                written: 0,
                max_bytes,
                stopped: None,
                is_stopped: false,
            },
            None => return Ok(None),
        };
        if let Some(p) = rec {
            r.rec = Some(RecWriter::create(p, meta, start).map_err(|e| named(p, e))?.with_max_bytes(max_bytes));
        }
        Ok(Some(r.with_max_bytes(max_bytes)))
    }

    /// This recorder with another cap on the file's size (in bytes).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Recorder {
        self.max_bytes = max_bytes;
        self.rec = self.rec.map(|r| r.with_max_bytes(max_bytes));
        self
    }

    /// Bytes written so far (header included).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Once, after the size cap stopped the recording: what to tell the user.
    pub fn take_stopped(&mut self) -> Option<String> {
        self.stopped.take()
    }

    /// Appends one record (nothing once the cap was reached or a write failed).
    pub fn record(&mut self, kind: Kind, now: Instant, data: &[u8]) {
        if let Some(rec) = &mut self.rec {
            let was = rec.is_stopped();
            rec.record(kind, now, data);
            if rec.is_stopped() && !was {
                self.stopped = Some(cap_reached("the .rec recording", self.max_bytes));
            }
        }
        let Some(out) = &mut self.out else { return };
        if self.error.is_some() || self.is_stopped {
            return;
        }
        let size = RECORD_HEAD + data.len() as u64;
        if self.written.saturating_add(size) > self.max_bytes {
            self.is_stopped = true;
            self.stopped = Some(cap_reached("the recording", self.max_bytes));
            let _ = out.flush();
            return;
        }
        self.written += size;
        let t = now.saturating_duration_since(self.start).as_micros() as u64;
        let mut head = [0u8; 13];
        head[0] = kind as u8;
        head[1..9].copy_from_slice(&t.to_be_bytes());
        head[9..13].copy_from_slice(&(data.len() as u32).to_be_bytes());
        if let Err(e) = out.write_all(&head).and_then(|_| out.write_all(data)) {
            self.error = Some(e);
        }
    }

    /// Flushes; returns the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        let rec = match &mut self.rec {
            Some(r) => r.finish(Instant::now()),
            None => Ok(()),
        };
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(out) = &mut self.out {
            out.flush()?;
        }
        rec
    }
}

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Kind.
    pub kind: Kind,
    /// Offset from the session start.
    pub t: Duration,
    /// Payload.
    pub data: Vec<u8>,
}

/// Errors reading a recording.
#[derive(Debug)]
pub enum RecordError {
    /// I/O.
    Io(io::Error),
    /// Not a bzhead recording, or damaged.
    Format(String),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::Io(e) => write!(f, "cannot read the recording: {e}"),
            RecordError::Format(e) => write!(f, "not a valid recording: {e}"),
        }
    }
}

impl std::error::Error for RecordError {}

impl From<io::Error> for RecordError {
    fn from(e: io::Error) -> Self {
        RecordError::Io(e)
    }
}

/// Reads every record of a recording. A file cut short at the end (a recorder killed mid-write) keeps the
/// records before the cut.
pub fn read_records(path: &Path) -> Result<(Meta, Vec<Record>), RecordError> {
    let mut f = File::open(path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    parse_records(&bytes)
}

/// Reads a recording one record at a time (the meta record first, by [`RecordReader::open`]). A file cut short
/// at the end ends the records there, as [`read_records`] does.
#[derive(Debug)]
pub struct RecordReader<R> {
    input: R,
    at: u64,
    done: bool,
}

impl RecordReader<io::BufReader<File>> {
    /// Opens `path` and reads its header and meta record.
    pub fn open(path: &Path) -> Result<(Meta, RecordReader<io::BufReader<File>>), RecordError> {
        RecordReader::new(io::BufReader::new(File::open(path)?))
    }
}

impl<R: Read> RecordReader<R> {
    /// Reads the header and the meta record from `input`.
    pub fn new(mut input: R) -> Result<(Meta, RecordReader<R>), RecordError> {
        let mut magic = [0u8; 8];
        if input.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Err(RecordError::Format("it does not start with BZHREC01".into()));
        }
        let mut r = RecordReader { input, at: 8, done: false };
        match r.next_raw()? {
            Some((Kind::Meta, _, data)) => {
                let meta = serde_json::from_slice::<Meta>(&data)
                    .map_err(|e| RecordError::Format(format!("bad meta record: {e}")))?;
                Ok((meta, r))
            }
            _ => Err(RecordError::Format("no meta record".into())),
        }
    }

    fn next_raw(&mut self) -> Result<Option<(Kind, u64, Vec<u8>)>, RecordError> {
        if self.done {
            return Ok(None);
        }
        let at = self.at;
        let mut head = [0u8; RECORD_HEAD as usize];
        if !read_full(&mut self.input, &mut head)? {
            self.done = true;
            return Ok(None);
        }
        let [kind, t @ .., l0, l1, l2, l3] = head;
        let t = u64::from_be_bytes(t);
        let len = u32::from_be_bytes([l0, l1, l2, l3]) as usize;
        if len > MAX_RECORD_LEN {
            self.done = true;
            return Err(RecordError::Format(format!("record at byte {at} claims {len} bytes")));
        }
        let Some(kind) = Kind::from_u8(kind) else {
            self.done = true;
            return Err(RecordError::Format(format!("unknown record kind {kind} at byte {at}")));
        };
        // Read what is there (a cut file may hold less than the length says), growing as the bytes come.
        let mut data = Vec::new();
        (&mut self.input).take(len as u64).read_to_end(&mut data)?;
        if data.len() < len {
            self.done = true;
            return Ok(None);
        }
        self.at += RECORD_HEAD + len as u64;
        Ok(Some((kind, t, data)))
    }
}

impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<Record, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            return match self.next_raw() {
                Ok(Some((Kind::Meta, _, _))) => continue,
                Ok(Some((kind, t, data))) => Some(Ok(Record { kind, t: Duration::from_micros(t), data })),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            };
        }
    }
}

/// Fills `buf`; false when the input ended before the first byte or in the middle (a cut file).
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<bool> {
    Ok(read_up_to(input, buf)? == buf.len())
}

/// Reads into `buf` until it is full or the input ends; how many bytes came.
pub(crate) fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// [`read_records`] on bytes in memory.
pub fn parse_records(bytes: &[u8]) -> Result<(Meta, Vec<Record>), RecordError> {
    if bytes.get(..8) != Some(MAGIC.as_slice()) {
        return Err(RecordError::Format("it does not start with BZHREC01".into()));
    }
    let mut r = crate::wire::Reader::new(bytes.get(8..).unwrap_or_default());
    let mut out = Vec::new();
    let mut meta = None;
    while !r.is_empty() {
        let at = r.position() + 8;
        let (Ok(kind), Ok(t), Ok(len)) = (r.u8(), r.u64(), r.u32()) else { break };
        let len = len as usize;
        if len > MAX_RECORD_LEN {
            return Err(RecordError::Format(format!("record at byte {at} claims {len} bytes")));
        }
        let Ok(data) = r.take(len) else { break };
        let Some(kind) = Kind::from_u8(kind) else {
            return Err(RecordError::Format(format!("unknown record kind {kind} at byte {at}")));
        };
        if kind == Kind::Meta {
            meta = Some(
                serde_json::from_slice::<Meta>(data)
                    .map_err(|e| RecordError::Format(format!("bad meta record: {e}")))?,
            );
            continue;
        }
        out.push(Record { kind, t: Duration::from_micros(t), data: data.to_vec() });
    }
    let meta = meta.ok_or_else(|| RecordError::Format("no meta record".into()))?;
    Ok((meta, out))
}

/// Replays a recording through a fresh [`Session`] in virtual time; returns every event with its offset.
pub fn replay(meta: &Meta, records: &[Record]) -> Vec<(Duration, Event)> {
    replay_session(meta, records).0
}

/// [`replay`], also returning the session as it ended (its world, variables and roster).
pub fn replay_session(meta: &Meta, records: &[Record]) -> (Vec<(Duration, Event)>, Session) {
    let mut out = Vec::new();
    let (s, _) = replay_into(meta, records.iter().cloned().map(Ok), |t, e| out.push((t, e)));
    (out, s)
}

/// Replays records as they are read (from a [`RecordReader`]), handing each event to `on_event` as it comes, so
/// the recording is never held in memory. Stops at the first read error and returns it (the events before it
/// were handed over).
pub fn replay_stream(
    meta: &Meta,
    records: impl Iterator<Item = Result<Record, RecordError>>,
    on_event: impl FnMut(Duration, Event),
) -> Result<(), RecordError> {
    match replay_into(meta, records, on_event) {
        (_, Some(e)) => Err(e),
        (_, None) => Ok(()),
    }
}

fn replay_into(
    meta: &Meta,
    records: impl Iterator<Item = Result<Record, RecordError>>,
    mut on_event: impl FnMut(Duration, Event),
) -> (Session, Option<RecordError>) {
    let base = Instant::now();
    let mut s = Session::new(meta.config());
    for rec in records {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => return (s, Some(e)),
        };
        feed_record(&mut s, base + rec.t, &rec);
        rec::drain(&mut s, rec.t, &mut on_event);
    }
    (s, None)
}

/// Feeds one record of a bzhead recording to `s` at `now` (the session's own output and events are left for
/// the caller to poll).
pub fn feed_record(s: &mut Session, now: Instant, rec: &Record) {
    match rec.kind {
        Kind::Connected => s.handle_connected(now),
        Kind::ConnectFailed => {
            let detail = String::from_utf8_lossy(&rec.data).into_owned();
            s.handle_connect_failed(now, ConnectError::Recorded { detail })
        }
        Kind::TcpIn => s.handle_tcp(now, &rec.data),
        Kind::TcpClosed => s.handle_tcp_closed(now),
        Kind::UdpIn => s.handle_udp(now, &rec.data),
        Kind::UdpUnavailable => s.handle_udp_unavailable(now, &String::from_utf8_lossy(&rec.data)),
        Kind::Cache => s.handle_world_cache(now, if rec.data.is_empty() { None } else { Some(rec.data.clone()) }),
        Kind::Timeout => s.handle_timeout(now),
        Kind::Leave => s.leave(now),
        Kind::Chat => {
            if let Some((&to, text)) = rec.data.split_first() {
                if to == crate::bzflag::consts::player::SERVER && text == b"/lagstats" {
                    s.request_lag_stats(now);
                } else {
                    s.send_chat(to, &String::from_utf8_lossy(text));
                }
            }
        }
        Kind::TcpOut | Kind::UdpOut | Kind::Meta => {}
    }
}
