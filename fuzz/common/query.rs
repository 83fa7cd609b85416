//! Shared by the query fuzz targets: how an input becomes datagrams and timing, how a captured reply is made to carry
//! the live token or challenge, and the limits the host puts on what a plugin reports.
//!
//! An input is a header byte (each target reads it: protocol, parameters, retries), then one or more steps, each an
//! op byte and a datagram, the steps separated by [`SEP`]:
//!
//! ```text
//! H O datagram [SEP O datagram]...
//! ```
//!
//! `fuzz/run` writes the seeds in this form from the captures (`seed` in that script), so a seed replays a real
//! exchange. The op byte ([`Op`]) says how much virtual time passes before the datagram, where it comes from, whether
//! it is patched to carry the token or challenge of the requests sent so far ([`Sent::patch`]: tokens are random per
//! query, captures carry the ones of their day), whether it is delivered twice, and whether a spurious timeout comes
//! first.
#![allow(dead_code)] // each target uses part of this

use query_abi::collect::{Collector, Event, OwnedValue};
use query_abi::{Datagram, QueryEngine, SERVER_KEYS};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::OnceLock;

/// True when `BZHEAD_FUZZ_DEBUG` is set: the targets print what each input did (to check what a seed reaches, with
/// `cargo fuzz run TARGET FILE`).
pub fn debug() -> bool {
    static DEBUG: OnceLock<bool> = OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("BZHEAD_FUZZ_DEBUG").is_some())
}

/// Separates the steps of an input (chosen not to occur in any capture).
pub const SEP: &[u8; 4] = b"#\0FZ";

/// Most steps read from one input.
pub const MAX_STEPS: usize = 256;

/// The host's limits (`src/query/plugin.rs`, `src/query/scan.rs`): a plugin that breaks one fails its query as
/// misbehaving, so an engine must stay within them whatever a server sends. (Text over the host's 64 KiB is cut by
/// `query_abi`'s export layer, so engines may report longer text; `query_host` checks the cut.)
///
/// Longest datagram.
pub const MAX_DATAGRAM: usize = 65_507;
/// Most extra fields of one player.
pub const MAX_EXTRA: usize = 64;
/// Most datagrams sent from one call.
pub const MAX_SENDS_PER_CALL: usize = 64;
/// Most datagrams sent over a query's life.
pub const MAX_SENDS_PER_QUERY: usize = 1024;
/// Most players, rules, raw fields of one answer.
pub const MAX_PLAYERS: usize = 4096;
/// Most rules (and raw fields) of one answer.
pub const MAX_FIELDS: usize = 4096;
/// Most `on_timeout` calls one query may need.
pub const MAX_TIMEOUT_CALLS: u32 = 1000;

/// How one datagram is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Op(pub u8);

impl Op {
    /// Virtual time that passes before the datagram (bits 0-2).
    pub fn advance_ms(self) -> u64 {
        [0, 1, 20, 100, 400, 1000, 2500, 10_000][usize::from(self.0 & 7)]
    }
    /// Where it comes from (bits 3-4): 0 the address last sent to, 1 the first target, 2 a stranger, 3 the first
    /// target's address with another port.
    pub fn source(self) -> u8 {
        (self.0 >> 3) & 3
    }
    /// Patch in the live token or challenge (bit 5).
    pub fn patch(self) -> bool {
        self.0 & 0x20 != 0
    }
    /// Deliver it twice (bit 6).
    pub fn twice(self) -> bool {
        self.0 & 0x40 != 0
    }
    /// A timeout call before its deadline first (bit 7).
    pub fn spurious(self) -> bool {
        self.0 & 0x80 != 0
    }
}

/// One step of an input.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// How.
    pub op: Op,
    /// The datagram.
    pub data: &'a [u8],
}

/// Splits an input into its header byte and steps.
pub fn parse(input: &[u8]) -> Option<(u8, Vec<Step<'_>>)> {
    let (&header, mut rest) = input.split_first()?;
    let mut steps = Vec::new();
    while steps.len() < MAX_STEPS {
        let (seg, next) = match rest.windows(SEP.len()).position(|w| w == SEP) {
            Some(i) => (&rest[..i], Some(&rest[i + SEP.len()..])),
            None => (rest, None),
        };
        if let Some((&op, data)) = seg.split_first() {
            steps.push(Step { op: Op(op), data });
        }
        match next {
            Some(n) => rest = n,
            None => break,
        }
    }
    Some((header, steps))
}

/// A stranger's address (datagrams from it belong to no query).
pub fn stranger(v6: bool) -> SocketAddr {
    if v6 {
        "[2001:db8::77]:27960".parse().unwrap()
    } else {
        "192.0.2.77:27960".parse().unwrap()
    }
}

/// Where a query's clock starts: at 1 s, or (`late`) just before `u64::MAX`, where deadlines must saturate.
pub fn start_ms(late: bool) -> u64 {
    if late {
        u64::MAX - 3000
    } else {
        1000
    }
}

/// The address a step's datagram comes from.
pub fn source(op: Op, last_sent_to: SocketAddr, target: SocketAddr) -> SocketAddr {
    match op.source() {
        0 => last_sent_to,
        1 => target,
        2 => stranger(target.is_ipv6()),
        _ => SocketAddr::new(target.ip(), target.port().wrapping_add(1)),
    }
}

// ------------------------------------------------------------------------------------------------ token patching

/// What the requests sent to one address carried that a reply must echo: learnt from the requests' shapes, so one
/// type serves every protocol and the host target too.
#[derive(Clone, Debug, Default)]
pub struct Sent {
    /// Teeworlds 0.6 extended: the 24-bit token.
    tw6: Option<u32>,
    /// Teeworlds 0.6 vanilla / legacy: the one-byte token.
    tw6_low: Option<u8>,
    /// Teeworlds 0.7: our connection token.
    tw7_client: Option<[u8; 4]>,
    /// Teeworlds 0.7: the browser token as the request encoded it (a varint).
    tw7_browser: Option<Vec<u8>>,
    /// Quake III: the last getinfo and getstatus challenges.
    q3_info: Option<Vec<u8>>,
    q3_status: Option<Vec<u8>>,
    /// Savage 2: the echo value (request bytes 8-11).
    savage2_echo: Option<[u8; 4]>,
    /// SRB2: `time` of `PT_ASKINFO`.
    srb2_time: Option<[u8; 4]>,
}

const OOB: &[u8] = b"\xff\xff\xff\xff";
const GIE3: &[u8] = b"\xff\xff\xff\xffgie3";
const FSTD: &[u8] = b"\xff\xff\xff\xfffstd";

/// The `time` the SRB2 seeds carry (the plugin's tests use it too); [`Sent::patch`] replaces it.
pub const SRB2_SEED_TIME: [u8; 4] = 0x1122_3344u32.to_le_bytes();

fn arr4(b: Option<&[u8]>) -> Option<[u8; 4]> {
    b.and_then(|b| b.try_into().ok())
}

impl Sent {
    /// Learns from one request.
    pub fn note(&mut self, r: &[u8]) {
        // Teeworlds 0.6: `x e T1 T2 0 0 gie3 T0` or `ff`x6 + `gie3`/`fstd` + token byte.
        if r.len() == 15 && r.get(6..14).is_some_and(|m| m == GIE3 || m == FSTD) {
            if r.starts_with(b"xe") {
                self.tw6 = Some(u32::from(r[2]) << 16 | u32::from(r[3]) << 8 | u32::from(r[14]));
            }
            self.tw6_low = Some(r[14]);
            return;
        }
        // Teeworlds 0.7 token request: `04 00 00 ff ff ff ff 05 <our token> 0...`.
        if r.len() >= 12 && r[0] == 0x04 && r.get(3..7) == Some(OOB) && r[7] == 5 {
            self.tw7_client = arr4(r.get(8..12));
            return;
        }
        // Teeworlds 0.7 info request: `21 <server token> <our token> gie3 <varint>`.
        if r.len() > 17 && r[0] == 0x21 && r.get(9..17) == Some(GIE3) {
            self.tw7_client = arr4(r.get(5..9));
            self.tw7_browser = Some(r[17..].to_vec());
            return;
        }
        // Quake III: `getinfo <challenge>`, `getstatus <challenge>`.
        if let Some(c) = r.strip_prefix(b"\xff\xff\xff\xffgetinfo ") {
            self.q3_info = Some(c.to_vec());
            return;
        }
        if let Some(c) = r.strip_prefix(b"\xff\xff\xff\xffgetstatus ") {
            self.q3_status = Some(c.to_vec());
            return;
        }
        // Savage 2: 12 bytes, command 01, echo in 8..12.
        if r.len() == 12 && r[7] == 1 && r.starts_with(&0xF197_DE9Au32.to_le_bytes()) {
            self.savage2_echo = arr4(r.get(8..12));
            return;
        }
        // SRB2 PT_ASKINFO: 8-byte header with type 12, version, time.
        if r.len() == 13 && r[6] == 12 {
            self.srb2_time = arr4(r.get(9..13));
        }
    }

    /// `data` with the token or challenge a reply of its shape must echo replaced by the live one (unchanged when
    /// the shape is unknown or nothing was learnt for it).
    pub fn patch(&self, data: &[u8]) -> Vec<u8> {
        let mut d = data.to_vec();
        // Teeworlds 0.6: header, magic, then the token as a decimal string.
        let tw6_header = d.get(..6).is_some_and(|h| h == [0xff; 6] || h.starts_with(b"xe"));
        if tw6_header && d.len() >= 14 {
            let magic = &d[10..14];
            let token = match magic {
                b"iext" | b"iex+" => self.tw6.map(i64::from),
                b"inf3" | b"dtsf" => self.tw6_low.map(i64::from),
                _ => None,
            };
            if let Some(t) = token {
                let body = &d[14..];
                let end = body.iter().position(|&b| b == 0).unwrap_or(body.len());
                let mut out = d[..14].to_vec();
                out.extend_from_slice(t.to_string().as_bytes());
                out.extend_from_slice(&body[end..]);
                return out;
            }
            return d;
        }
        // Teeworlds 0.7 token reply: `04 00 00 <our token> 05 <server token>`.
        if d.len() >= 8 && d[0] & 0xfc == 0x04 && d[7] == 5 {
            if let Some(c) = self.tw7_client {
                d[3..7].copy_from_slice(&c);
            }
            return d;
        }
        // Teeworlds 0.7 connless reply: `21 <our token> <server token> ff ff ff ff inf3 <varint browser token>`.
        if d.len() >= 17 && (d[0] >> 2) & 8 != 0 && d.get(9..13) == Some(OOB) {
            if let Some(c) = self.tw7_client {
                d[1..5].copy_from_slice(&c);
            }
            if let (Some(b), true) = (&self.tw7_browser, d.get(13..17) == Some(b"inf3")) {
                // The varint: continuation in bit 7, at most 5 bytes.
                let rest = &d[17..];
                let n = rest.iter().take(5).position(|&b| b & 0x80 == 0).map_or(rest.len().min(5), |i| i + 1);
                let mut out = d[..17].to_vec();
                out.extend_from_slice(b);
                out.extend_from_slice(&rest[n..]);
                return out;
            }
            return d;
        }
        // Quake III: the value of `\challenge\`.
        if d.starts_with(b"\xff\xff\xff\xffinfoResponse") || d.starts_with(b"\xff\xff\xff\xffstatusResponse") {
            let status = d.starts_with(b"\xff\xff\xff\xffstatus");
            let live = if status { self.q3_status.as_ref().or(self.q3_info.as_ref()) } else { self.q3_info.as_ref() };
            let key = b"\\challenge\\";
            if let (Some(live), Some(at)) = (live, d.windows(key.len()).position(|w| w == key)) {
                let start = at + key.len();
                let end = d[start..].iter().position(|&b| b == b'\\' || b == b'\n').map_or(d.len(), |i| start + i);
                let mut out = d[..start].to_vec();
                out.extend_from_slice(live);
                out.extend_from_slice(&d[end..]);
                return out;
            }
            return d;
        }
        // Savage 2 info reply: command 02 at byte 7, the echo in 8..12.
        if d.len() >= 12 && d[7] == 2 {
            if let Some(e) = self.savage2_echo {
                d[8..12].copy_from_slice(&e);
            }
            return d;
        }
        // SRB2: the seeds' `time`, then the checksum.
        if d.len() >= 8 && (12..=14).contains(&d[6]) {
            if let (Some(t), Some(at)) = (self.srb2_time, d.windows(4).skip(8).position(|w| w == SRB2_SEED_TIME)) {
                d[8 + at..12 + at].copy_from_slice(&t);
            }
            let c = srb2_checksum(&d);
            d[..4].copy_from_slice(&c.to_le_bytes());
        }
        d
    }
}

/// SRB2's packet checksum (the plugin's `msg::checksum`, restated so that the host target needs no plugin crate).
pub fn srb2_checksum(packet: &[u8]) -> u32 {
    packet.iter().skip(4).zip(1u32..).fold(0x0123_4567u32, |c, (&b, i)| c.wrapping_add(u32::from(b).wrapping_mul(i)))
}

// ------------------------------------------------------------------------------------------------ engine driver

/// The value kinds each well-known server key takes (the host's `server_key` table).
fn key_kind_ok(key: &str, v: &OwnedValue) -> bool {
    use query_abi::keys;
    match v {
        OwnedValue::Null => true,
        OwnedValue::Str(_) => [keys::NAME, keys::MAP, keys::GAME_TYPE, keys::VERSION].contains(&key),
        OwnedValue::Int(_) => [keys::PLAYERS, keys::MAX_PLAYERS, keys::BOTS].contains(&key),
        OwnedValue::Bool(_) => key == keys::PASSWORD || key == keys::PLAYER_LIST_COMPLETE,
    }
}

/// Checks what an engine reports, call by call, against the host's limits.
pub struct Checker {
    target: SocketAddr,
    master: bool,
    /// Most players the engine may report (the host's limit, or the protocol's own when lower).
    max_players: usize,
    done: bool,
    sends: usize,
    players: usize,
    rules: HashSet<String>,
    raw: HashSet<String>,
    masters: usize,
    /// Bytes of reported text (keys, values, names) so far.
    pub text: usize,
    /// Bytes of datagrams fed so far.
    pub input: usize,
}

impl Checker {
    /// For a query to `target` (`master`: a list query, which may report master entries) that may report up to
    /// `max_players` players.
    pub fn new(target: SocketAddr, master: bool, max_players: usize) -> Checker {
        Checker {
            target,
            master,
            max_players: max_players.min(MAX_PLAYERS),
            done: false,
            sends: 0,
            players: 0,
            rules: HashSet::new(),
            raw: HashSet::new(),
            masters: 0,
            text: 0,
            input: 0,
        }
    }

    /// True once the engine reported `done`.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Checks and drains the events of one call; `sent` learns every datagram sent. `ignored`: the engine said the
    /// datagram was not for it, so it must not have done anything but log.
    pub fn call(&mut self, c: &mut Collector, sent: &mut Sent, ignored: bool) {
        let mut sends = 0;
        for e in c.events.drain(..) {
            if debug() {
                eprintln!("{:.300}", format!("{e:?}"));
            }
            if ignored {
                assert!(matches!(e, Event::Log(..)), "an ignored datagram changed the query: {e:?}");
            }
            if self.done {
                continue; // the export layer drops everything after `done`
            }
            match e {
                Event::Send(to, d) => {
                    assert_eq!(to, self.target, "sent to another address than the target");
                    assert!(d.len() <= MAX_DATAGRAM, "datagram of {} bytes", d.len());
                    sends += 1;
                    self.sends += 1;
                    sent.note(&d);
                }
                Event::Server(k, v) => {
                    assert!(SERVER_KEYS.contains(&k.as_str()), "unknown server key {k:?}");
                    assert!(key_kind_ok(&k, &v), "server key {k:?} with {v:?}");
                    self.text += k.len() + text_len(&v);
                }
                Event::Rule(k, v) => {
                    self.text += k.len() + v.len();
                    self.rules.insert(k);
                    assert!(self.rules.len() <= MAX_FIELDS, "more than {MAX_FIELDS} rules");
                }
                Event::Raw(k, v) => {
                    self.text += k.len() + text_len(&v);
                    self.raw.insert(k);
                    assert!(self.raw.len() <= MAX_FIELDS, "more than {MAX_FIELDS} raw fields");
                }
                Event::Player(p) => {
                    assert!(p.extra.len() <= MAX_EXTRA, "player with {} extra fields", p.extra.len());
                    self.text += p.name.len() + text_len(&p.team);
                    for (k, v) in &p.extra {
                        self.text += k.len() + text_len(v);
                    }
                    self.players += 1;
                    assert!(self.players <= self.max_players, "more than {} players", self.max_players);
                }
                Event::MasterEntry(_) => {
                    assert!(self.master, "master entry from a server query");
                    self.masters += 1;
                }
                Event::Done(..) => self.done = true,
                Event::Log(..) => {}
            }
        }
        assert!(sends <= MAX_SENDS_PER_CALL, "{sends} datagrams from one call");
        assert!(self.sends <= MAX_SENDS_PER_QUERY, "{} datagrams for one query", self.sends);
        // Bounded output: what a query reports comes from what it was sent. Text may grow (lossy UTF-8 makes three
        // bytes of one, names are reported with and without colour codes), plus a fixed set of fields.
        assert!(
            self.text <= 8 * self.input + 64 * 1024,
            "{} bytes of text reported from {} bytes of datagrams",
            self.text,
            self.input
        );
    }
}

fn text_len(v: &OwnedValue) -> usize {
    match v {
        OwnedValue::Str(s) => s.len(),
        _ => 8,
    }
}

/// Drives `e` (just created; its first sends are in `c`) through `steps` in virtual time from `now`, then fires its
/// deadlines until it ends, checking everything it reports (`chk`). `parse` sees every datagram (for the parsers'
/// own checks). The query must end within the host's timeout-call budget.
pub fn drive<E: QueryEngine>(
    mut e: E,
    mut c: Collector,
    mut chk: Checker,
    mut now: u64,
    steps: &[Step<'_>],
    mut parse: impl FnMut(&[u8]),
) {
    let target = chk.target;
    let mut sent = Sent::default();
    chk.call(&mut c, &mut sent, false);
    for s in steps {
        now = now.saturating_add(s.op.advance_ms());
        if s.op.spurious() || e.next_deadline().is_some_and(|d| d <= now) {
            e.on_timeout(now, &mut c);
            chk.call(&mut c, &mut sent, false);
        }
        let data = if s.op.patch() { sent.patch(s.data) } else { s.data.to_vec() };
        parse(&data);
        let from = source(s.op, target, target);
        for _ in 0..if s.op.twice() { 2 } else { 1 } {
            chk.input += data.len();
            let r = e.on_datagram(now, from, &data, &mut c);
            if debug() {
                eprintln!("{now} ms: {} bytes from {from}: {r:?}", data.len());
            }
            chk.call(&mut c, &mut sent, r == Datagram::Ignored);
            if from != target {
                assert_eq!(r, Datagram::Ignored, "accepted a datagram from {from}, not from the target");
            }
        }
    }
    // Run out: fire each deadline as a host would.
    let mut calls = 0;
    while !chk.done() {
        let Some(d) = e.next_deadline() else { panic!("not done but no deadline: the query would hang") };
        calls += 1;
        assert!(calls <= MAX_TIMEOUT_CALLS, "query not done after {MAX_TIMEOUT_CALLS} timeouts");
        now = now.max(d);
        e.on_timeout(now, &mut c);
        chk.call(&mut c, &mut sent, false);
    }
}
