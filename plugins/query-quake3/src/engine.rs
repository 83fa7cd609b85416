//! Quake III family query state machines.
//!
//! `quake3` (ioquake3, OpenArena; port 27960) and `warsow` (Warsow 2.1; port 44400):
//! * by default `getinfo <challenge>` and `getstatus <challenge>` together: getinfo gives `clients` (bots included)
//!   and `g_humanplayers`, getstatus the whole serverinfo and the player lines. The challenge is printable, made
//!   of the host's random bytes for the query (512 bits for `quake3`, 336 for `warsow`: as long as each server
//!   echoes), and must be echoed: a reply with another challenge, or with none, is ignored (parameter
//!   `challenge=optional` accepts replies without one, from servers older than Quake III 1.32). Warsow's short
//!   `info` reply echoes nothing and is matched by source address only.
//! * parameter `query`: `both` (default), `info`, `status`, or (Warsow) `short` for the browser's
//!   `info <protocol> full empty` (parameter `protocol`, default 22).
//! * ioq3 answers a source IP about once a second after a burst of ten (`SVC_RateLimitAddress`), so retries are
//!   spaced at least a second apart.
//! * names keep their colour codes; `name_plain` (server raw field and player extra) has them stripped by the
//!   engine's own rule (ioq3: `^` + letter or digit; Warsow: `^` + digit, `^^` for a caret).
//!
//! `dpmaster` (dpmaster 2.2 and compatible masters; port 27950): `getservers <game> <protocol> <filters>` or
//! `getserversExt` (for IPv6 entries), every response datagram until `\EOT\0\0\0` (entries deduplicated, pages in any
//! order, a short grace period after EOT for reordered pages), each entry reported as a master entry. Parameters:
//! `game` (default `Quake3Arena`), `game_protocol` (default 68), `filters` (space- or comma-separated, default
//! `empty full`; also `ipv4`, `ipv6`, `gametype=X`...), `ext` (`auto`/`0`/`1`), `eot_grace_ms` (default 50).

use crate::msg::{self, Pair, Reply};
use bzhead_wire::text::parse_int;
use query_abi::{
    keys, CreateError, Datagram, Level, Player, QueryConfig, QueryEngine, RetryTimer, Sink, Status, Value,
};
use std::borrow::Cow;
use std::collections::HashSet;
use std::net::SocketAddr;

/// ioq3 refills its per-IP bucket at one request per second: never retry faster.
const MIN_RETRY_GAP_MS: u64 = 1000;
/// Waiting for the next page of a master list.
const PAGE_WAIT_MS: u64 = 1000;
/// Most master entries kept.
const MAX_ENTRIES: usize = 1 << 20;

/// Random characters in a `quake3` challenge: 86 of 64 symbols carry the host's 512 random bits. With `bzh` in front
/// and a retry's `r<attempt>` behind, it stays under the 128 characters ioq3 accepts (a longer one is not answered).
pub const QUAKE3_CHALLENGE_CHARS: usize = 86;
/// Random characters in a `warsow` challenge (336 bits): Warsow echoes it as an info value, whose size its info
/// strings bound (64 bytes with the terminator), so with `bzh` and `r<attempt>` it stays under 63.
pub const WARSOW_CHALLENGE_CHARS: usize = 56;

/// `bzh` and `len` characters of `[0-9A-Za-z_-]` (six bits each) from `random` (at most 8 bits used per 6): printable,
/// without the separators a challenge must not carry (`\`, `/`, `;`, `"`, `%`, space).
pub fn challenge_from(random: &[u8], len: usize) -> String {
    const ALPHABET: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-";
    let mut out = String::with_capacity(3 + len);
    out.push_str("bzh");
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut bytes = random.iter().cycle();
    for _ in 0..len {
        if bits < 6 {
            acc = (acc << 8) | u32::from(bytes.next().copied().unwrap_or(0));
            bits += 8;
        }
        bits -= 6;
        out.push(char::from(ALPHABET[((acc >> bits) & 63) as usize]));
    }
    out
}

/// The plugin's engine.
#[derive(Debug)]
// The engine already lives in a box of the export layer's: boxing the server query as well cost an allocation per
// query; the rare master query stays boxed.
#[allow(clippy::large_enum_variant)]
pub enum Quake3Engine {
    /// `quake3` or `warsow`.
    Server(ServerQuery),
    /// `dpmaster`.
    Master(Box<MasterQuery>),
}

impl QueryEngine for Quake3Engine {
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        let len = if protocol == "warsow" { WARSOW_CHALLENGE_CHARS } else { QUAKE3_CHALLENGE_CHARS };
        let chal = challenge_from(&config.random_bytes(), len);
        Self::build(protocol, target, config, chal, None, now_ms, sink)
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        match self {
            Quake3Engine::Server(e) => e.on_datagram(now_ms, from, data, sink),
            Quake3Engine::Master(e) => e.on_datagram(now_ms, from, data, sink),
        }
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        match self {
            Quake3Engine::Server(e) => e.on_timeout(now_ms, sink),
            Quake3Engine::Master(e) => e.on_timeout(now_ms, sink),
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        match self {
            Quake3Engine::Server(e) => e.timer.deadline(),
            Quake3Engine::Master(e) => e.timer.deadline(),
        }
    }
}

impl Quake3Engine {
    /// Like [`QueryEngine::new`] with explicit challenges for getinfo and getstatus (tests replay captures made
    /// with known ones). Retries use fresh challenges derived from these.
    #[allow(clippy::too_many_arguments)]
    pub fn with_challenges(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        info_challenge: &str,
        status_challenge: &str,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        let status = (status_challenge != info_challenge).then(|| status_challenge.to_owned());
        Self::build(protocol, target, config, info_challenge.to_owned(), status, now_ms, sink)
    }

    /// [`Quake3Engine::with_challenges`] with owned challenges (`None`: getstatus uses getinfo's).
    #[allow(clippy::too_many_arguments)]
    fn build(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        info_challenge: String,
        status_challenge: Option<String>,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        let flavor = match protocol {
            "quake3" => Flavor::Quake3,
            "warsow" => Flavor::Warsow,
            "dpmaster" => return Ok(Quake3Engine::Master(Box::new(MasterQuery::new(target, config, now_ms, sink)?))),
            _ => return Err(CreateError::UnknownProtocol),
        };
        let q = ServerQuery::new(flavor, target, config, info_challenge, status_challenge, now_ms, sink)?;
        Ok(Quake3Engine::Server(q))
    }
}

/// Which game's conventions apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// ioquake3 / OpenArena / Quake III.
    Quake3,
    /// Warsow 2.1.
    Warsow,
}

/// Which requests to send (parameter `query`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ask {
    /// getinfo and getstatus.
    Both,
    /// getinfo only (no players).
    Info,
    /// getstatus only.
    Status,
    /// Warsow's short `info`.
    Short,
}

/// A `quake3` or `warsow` query.
#[derive(Debug)]
pub struct ServerQuery {
    flavor: Flavor,
    ask: Ask,
    target: SocketAddr,
    /// Warsow's short query: the protocol number asked for (empty otherwise).
    protocol: String,
    timer: RetryTimer,
    /// The first attempt's challenge for getinfo, and for getstatus when it differs (`None`: the same).
    info_challenge: String,
    status_challenge: Option<String>,
    /// Which of the two went out with the first attempt (replies to any attempt count).
    first_sent: [bool; 2],
    /// The challenges of the retries (`<first>r<attempt>`), as sent.
    retry_challenges: Vec<String>,
    /// A reply must echo one of our challenges (parameter `challenge=required`, the default); with
    /// `challenge=optional` one that echoes none is accepted too (servers older than Quake III 1.32).
    require_challenge: bool,
    /// The infoResponse's info string, kept raw and decoded once at the end.
    info: Option<Vec<u8>>,
    /// The statusResponse body, kept raw.
    status: Option<Vec<u8>>,
    /// Warsow's short info body, kept raw (checked when it arrived).
    short: Option<Vec<u8>>,
    done: bool,
}

impl ServerQuery {
    fn new(
        flavor: Flavor,
        target: SocketAddr,
        config: &QueryConfig,
        info_challenge: String,
        status_challenge: Option<String>,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<ServerQuery, CreateError> {
        let ask = match config.param("query").unwrap_or("both") {
            "both" => Ask::Both,
            "info" => Ask::Info,
            "status" => Ask::Status,
            "short" if flavor == Flavor::Warsow => Ask::Short,
            other => {
                return Err(CreateError::BadConfig(format!(
                    "query {other:?}: expected both, info or status (or short for warsow)"
                )))
            }
        };
        let protocol = if ask == Ask::Short {
            let p = config.param("protocol").unwrap_or("22");
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(CreateError::BadConfig(format!("protocol {p:?}: expected a number")));
            }
            p.to_owned()
        } else {
            String::new()
        };
        let require_challenge = match config.param("challenge").unwrap_or("required") {
            "required" => true,
            "optional" => false,
            other => return Err(CreateError::BadConfig(format!("challenge {other:?}: expected required or optional"))),
        };
        let challenges = [Some(info_challenge.as_str()), status_challenge.as_deref()];
        if let Some(bad) = challenges.into_iter().flatten().find(|c| !msg::valid_challenge(c)) {
            return Err(CreateError::BadConfig(format!("challenge {bad:?} is not printable text without separators")));
        }
        let mut q = ServerQuery {
            flavor,
            ask,
            target,
            protocol,
            timer: RetryTimer::new(config),
            info_challenge,
            status_challenge,
            first_sent: [false; 2],
            retry_challenges: Vec::new(),
            require_challenge,
            info: None,
            status: None,
            short: None,
            done: false,
        };
        q.send_missing(now_ms, sink);
        Ok(q)
    }

    /// The first attempt's challenge for getinfo (0) or getstatus (1).
    fn first_challenge(&self, which: usize) -> &str {
        match (which, &self.status_challenge) {
            (1, Some(c)) => c,
            _ => &self.info_challenge,
        }
    }

    /// Sends getinfo (0) or getstatus (1) with this attempt's challenge, and remembers the challenge.
    fn send_request(&mut self, which: usize, sink: &mut dyn Sink) {
        let request = |c: &str| if which == 0 { msg::getinfo(c) } else { msg::getstatus(c) };
        if self.timer.attempt() == 0 {
            self.first_sent[which] = true;
            // Built on the stack (a challenge is at most 128 bytes, so it always fits).
            let command = if which == 0 { "getinfo" } else { "getstatus" };
            let mut buf = [0u8; 160];
            let challenge = self.first_challenge(which);
            match msg::oob_with_into(&mut buf, command, challenge) {
                Some(r) => sink.send(self.target, r),
                None => sink.send(self.target, &request(challenge)),
            };
        } else {
            let c = format!("{}r{}", self.first_challenge(which), self.timer.attempt());
            sink.send(self.target, &request(&c));
            self.retry_challenges.push(c);
        }
    }

    fn wants_info(&self) -> bool {
        matches!(self.ask, Ask::Both | Ask::Info) && self.info.is_none()
    }

    fn wants_status(&self) -> bool {
        matches!(self.ask, Ask::Both | Ask::Status) && self.status.is_none()
    }

    fn send_missing(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.ask == Ask::Short {
            sink.send(self.target, &msg::warsow_info(&self.protocol));
        }
        if self.wants_info() {
            self.send_request(0, sink);
        }
        if self.wants_status() {
            self.send_request(1, sink);
        }
        let mut wait = self.timer.wait_ms();
        if self.timer.retries_left() {
            wait = wait.max(MIN_RETRY_GAP_MS);
        }
        self.timer.arm_in(now_ms, wait);
    }

    /// The reply's challenge is one of ours (or absent, with `challenge=optional`).
    fn challenge_ok(&self, infostring: &[u8]) -> bool {
        match msg::raw_get(infostring, b"challenge") {
            None => !self.require_challenge,
            Some(c) => {
                (0..2).any(|w| self.first_sent[w] && self.first_challenge(w).as_bytes() == c)
                    || self.retry_challenges.iter().any(|m| m.as_bytes() == c)
            }
        }
    }

    fn on_datagram(&mut self, _now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target {
            return Datagram::Ignored;
        }
        // The reply that completes the query is decoded where it lies; one that leaves it waiting is kept.
        let (mut got_info, mut got_status) = (None, None);
        match msg::classify(data) {
            Some(Reply::Info(body)) if self.wants_info() => {
                let info_line = msg::split_status(body).0;
                if !self.challenge_ok(info_line) {
                    sink.log(Level::Debug, "infoResponse with a challenge we did not send");
                    return Datagram::Ignored;
                }
                got_info = Some(info_line);
            }
            Some(Reply::Status(body)) if self.wants_status() => {
                if !self.challenge_ok(msg::split_status(body).0) {
                    sink.log(Level::Debug, "statusResponse with a challenge we did not send");
                    return Datagram::Ignored;
                }
                got_status = Some(body);
            }
            Some(Reply::ShortInfo(body)) if self.ask == Ask::Short && self.short.is_none() => {
                match msg::parse_short_info(body) {
                    Ok(_) => self.short = Some(body.to_vec()),
                    Err(e) => {
                        self.finish_error(sink, Status::MALFORMED, &format!("short info reply: {e}"));
                        return Datagram::Accepted;
                    }
                }
            }
            _ => return Datagram::Ignored,
        }
        let complete = match self.ask {
            Ask::Short => self.short.is_some(),
            _ => (!self.wants_info() || got_info.is_some()) && (!self.wants_status() || got_status.is_some()),
        };
        if complete {
            let (info, status) = (self.info.take(), self.status.take());
            self.emit(sink, got_info.or(info.as_deref()), got_status.or(status.as_deref()));
        } else {
            if let Some(i) = got_info {
                self.info = Some(i.to_vec());
            }
            if let Some(s) = got_status {
                self.status = Some(s.to_vec());
            }
        }
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        if !self.timer.next_attempt() {
            if self.info.is_some() || self.status.is_some() {
                let (info, status) = (self.info.take(), self.status.take());
                return self.emit(sink, info.as_deref(), status.as_deref());
            }
            let n = self.timer.attempts();
            return self.finish_error(sink, Status::TIMEOUT, &format!("no reply after {n} attempt(s)"));
        }
        self.send_missing(now_ms, sink);
    }

    fn finish_error(&mut self, sink: &mut dyn Sink, status: Status, why: &str) {
        self.done = true;
        self.timer.stop();
        sink.done(status, why);
    }

    fn strip<'s>(&self, s: &'s str) -> Cow<'s, str> {
        match self.flavor {
            Flavor::Quake3 => msg::strip_q3(s),
            Flavor::Warsow => msg::strip_warsow(s),
        }
    }

    /// Reports what arrived (the getinfo info string, the getstatus body, or Warsow's short info) and finishes.
    fn emit(&mut self, sink: &mut dyn Sink, info_raw: Option<&[u8]>, status_raw: Option<&[u8]>) {
        self.done = true;
        self.timer.stop();
        if let Some(short) = self.short.take() {
            let pairs = msg::parse_short_info(&short).unwrap_or_default();
            return self.emit_short(sink, &pairs);
        }
        let have_info = info_raw.is_some();
        let have_status = status_raw.is_some();
        let info = msg::parse_infostring(info_raw.unwrap_or_default());
        let (status, players, bad_lines) = msg::parse_status(status_raw.unwrap_or_default());
        let (ki, ks) = (Known::scan(&info), Known::scan(&status));
        let int = |v: Option<&str>| v.and_then(|v| parse_int(v.as_bytes()));

        let name = ki.hostname.or(ks.hostname).or(ks.sv_hostname).or(ki.sv_hostname).unwrap_or("");
        sink.server(keys::NAME, Value::Str(name));
        if let Some(m) = ki.mapname.or(ks.mapname) {
            sink.server(keys::MAP, Value::Str(m));
        }
        // getinfo says `gametype`; ioq3's getstatus `g_gametype`; Warsow renames it to `gametype` in both.
        if let Some(g) = ki.gametype.or(ks.gametype).or(ki.g_gametype).or(ks.g_gametype) {
            sink.server(keys::GAME_TYPE, Value::Str(g));
        }
        let line_count = i64::try_from(players.len()).unwrap_or(i64::MAX);
        let clients_key = int(ki.clients.or(ks.clients));
        let clients = clients_key.or(if have_status { Some(line_count) } else { None });
        if let Some(c) = clients {
            sink.server(keys::PLAYERS, Value::Int(c));
        }
        // getinfo's sv_maxclients already leaves out private slots; getstatus has the raw cvars.
        let max = int(ki.sv_maxclients).or_else(|| {
            let m = int(ks.sv_maxclients)?;
            Some(m.saturating_sub(int(ks.sv_private_clients).unwrap_or(0)))
        });
        if let Some(m) = max {
            sink.server(keys::MAX_PLAYERS, Value::Int(m));
        }
        let bots = match self.flavor {
            // Warsow adds `\bots\N` only when there are bots.
            Flavor::Warsow => int(ki.bots.or(ks.bots)).or(clients.map(|_| 0)),
            Flavor::Quake3 => match (clients_key, int(ki.g_humanplayers.or(ks.g_humanplayers))) {
                (Some(c), Some(h)) => Some(c.saturating_sub(h).max(0)),
                _ => None,
            },
        };
        if let Some(b) = bots {
            sink.server(keys::BOTS, Value::Int(b));
        }
        if let Some(p) = ki.g_needpass.or(ks.g_needpass) {
            sink.server(keys::PASSWORD, Value::Bool(p.trim() != "0" && !p.trim().is_empty()));
        }
        if let Some(v) = ki.version.or(ks.version) {
            sink.server(keys::VERSION, Value::Str(v));
        }
        sink.server(keys::PLAYER_LIST_COMPLETE, Value::Bool(have_status));

        // Rules: every serverinfo cvar, getstatus first, then what only getinfo had.
        for (k, v) in status.iter().chain(info.iter().filter(|(k, _)| msg::get(&status, k).is_none())) {
            if k != "challenge" {
                sink.rule(k, v);
            }
        }
        let plain = self.strip(name);
        sink.raw("name_plain", Value::Str(&plain));
        if let Some(p) = ki.protocol.or(ks.protocol).or(ki.com_protocol).or(ks.com_protocol) {
            sink.raw("protocol", Value::Str(p));
        }
        if let Some(g) = ki.gamename.or(ks.gamename) {
            sink.raw("gamename", Value::Str(g));
        }
        sink.raw("info_reply", Value::Bool(have_info));
        sink.raw("status_reply", Value::Bool(have_status));
        if bad_lines > 0 {
            sink.raw("unreadable_player_lines", Value::Int(i64::try_from(bad_lines).unwrap_or(i64::MAX)));
        }
        for p in &players {
            let plain = self.strip(&p.name);
            let extra = [("name_plain", Value::Str(&plain))];
            sink.player(&Player {
                name: &p.name,
                score: Some(p.score),
                team: p.team.map_or(Value::Null, Value::Int),
                ping: Some(p.ping),
                extra: &extra,
            });
        }
        sink.finish();
    }

    /// Warsow's short info: `n` name, `m` map, `u` humans/max-minus-bots, `g` game type, `b` bots, `p` password...
    fn emit_short(&mut self, sink: &mut dyn Sink, p: &[Pair<'_>]) {
        let name = msg::get(p, "n").unwrap_or("");
        sink.server(keys::NAME, Value::Str(name));
        if let Some(m) = msg::get(p, "m") {
            sink.server(keys::MAP, Value::Str(m));
        }
        if let Some(g) = msg::get(p, "g") {
            sink.server(keys::GAME_TYPE, Value::Str(g));
        }
        let bots = msg::get(p, "b").and_then(|b| parse_int(b.as_bytes())).unwrap_or(0);
        if let Some((h, m)) = msg::get(p, "u").and_then(|u| u.split_once('/')) {
            if let (Some(h), Some(m)) = (parse_int(h.as_bytes()), parse_int(m.as_bytes())) {
                sink.server(keys::PLAYERS, Value::Int(h.saturating_add(bots)));
                sink.server(keys::MAX_PLAYERS, Value::Int(m.saturating_add(bots)));
            }
        }
        sink.server(keys::BOTS, Value::Int(bots));
        sink.server(keys::PASSWORD, Value::Bool(msg::get(p, "p") == Some("1")));
        sink.server(keys::PLAYER_LIST_COMPLETE, Value::Bool(false));
        let plain = self.strip(name);
        sink.raw("name_plain", Value::Str(&plain));
        for (k, v) in p {
            sink.raw(&format!("short_{k}"), Value::Str(v));
        }
        sink.finish();
    }
}

/// The well-known keys of one info string, found in a single pass (the first occurrence wins, as
/// `Info_ValueForKey` finds it).
#[derive(Default)]
struct Known<'a> {
    hostname: Option<&'a str>,
    sv_hostname: Option<&'a str>,
    mapname: Option<&'a str>,
    gametype: Option<&'a str>,
    g_gametype: Option<&'a str>,
    clients: Option<&'a str>,
    sv_maxclients: Option<&'a str>,
    sv_private_clients: Option<&'a str>,
    g_humanplayers: Option<&'a str>,
    bots: Option<&'a str>,
    g_needpass: Option<&'a str>,
    version: Option<&'a str>,
    protocol: Option<&'a str>,
    com_protocol: Option<&'a str>,
    gamename: Option<&'a str>,
}

impl<'a> Known<'a> {
    fn scan(pairs: &'a [Pair<'_>]) -> Known<'a> {
        let mut k = Known::default();
        for (key, v) in pairs {
            let slot = match key.as_ref() {
                "hostname" => &mut k.hostname,
                "sv_hostname" => &mut k.sv_hostname,
                "mapname" => &mut k.mapname,
                "gametype" => &mut k.gametype,
                "g_gametype" => &mut k.g_gametype,
                "clients" => &mut k.clients,
                "sv_maxclients" => &mut k.sv_maxclients,
                "sv_privateClients" => &mut k.sv_private_clients,
                "g_humanplayers" => &mut k.g_humanplayers,
                "bots" => &mut k.bots,
                "g_needpass" => &mut k.g_needpass,
                "version" => &mut k.version,
                "protocol" => &mut k.protocol,
                "com_protocol" => &mut k.com_protocol,
                "gamename" => &mut k.gamename,
                _ => continue,
            };
            if slot.is_none() {
                *slot = Some(v.as_ref());
            }
        }
        k
    }
}

/// A `dpmaster` list query.
#[derive(Debug)]
pub struct MasterQuery {
    target: SocketAddr,
    request: Vec<u8>,
    timer: RetryTimer,
    eot_grace_ms: u64,
    seen: HashSet<SocketAddr>,
    pages: u32,
    duplicates: u64,
    invalid: u64,
    eot: bool,
    done: bool,
}

fn word_ok(w: &str) -> bool {
    !w.is_empty() && w.len() <= 64 && w.bytes().all(|b| b.is_ascii_graphic() && b != b'\\' && b != b'"')
}

impl MasterQuery {
    fn new(target: SocketAddr, config: &QueryConfig, now_ms: u64, sink: &mut dyn Sink) -> Result<Self, CreateError> {
        let game = config.param("game").unwrap_or("Quake3Arena");
        let proto = config.param("game_protocol").unwrap_or("68");
        let filters: Vec<String> = config
            .param("filters")
            .unwrap_or("empty full")
            .split([' ', ','])
            .filter(|f| !f.is_empty())
            .map(str::to_owned)
            .collect();
        if !game.is_empty() && !word_ok(game) {
            return Err(CreateError::BadConfig(format!("game {game:?}: one word of printable ASCII expected")));
        }
        if proto.is_empty() || !proto.bytes().all(|b| b.is_ascii_digit()) {
            return Err(CreateError::BadConfig(format!("game_protocol {proto:?}: a number expected")));
        }
        if let Some(f) = filters.iter().find(|f| !word_ok(f)) {
            return Err(CreateError::BadConfig(format!("filter {f:?}: one word of printable ASCII expected")));
        }
        let ext = match config.param("ext").unwrap_or("auto") {
            "1" | "true" | "yes" => true,
            "0" | "false" | "no" => false,
            "auto" => target.is_ipv6() || filters.iter().any(|f| f == "ipv6"),
            other => return Err(CreateError::BadConfig(format!("ext {other:?}: expected auto, 0 or 1"))),
        };
        if game.is_empty() && ext {
            return Err(CreateError::BadConfig("getserversExt needs a game name".into()));
        }
        let eot_grace_ms = match config.param("eot_grace_ms") {
            None => 50,
            Some(v) => {
                v.parse().map_err(|_| CreateError::BadConfig(format!("eot_grace_ms {v:?}: a number expected")))?
            }
        };
        let mut q = MasterQuery {
            target,
            request: msg::getservers(ext, game, proto, &filters),
            timer: RetryTimer::new(config),
            eot_grace_ms,
            seen: HashSet::new(),
            pages: 0,
            duplicates: 0,
            invalid: 0,
            eot: false,
            done: false,
        };
        sink.send(target, &q.request);
        q.timer.arm(now_ms);
        Ok(q)
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target {
            return Datagram::Ignored;
        }
        let Some(Reply::Servers { body, .. }) = msg::classify(data) else { return Datagram::Ignored };
        let page = msg::parse_servers(body);
        self.pages = self.pages.saturating_add(1);
        self.invalid = self.invalid.saturating_add(page.invalid as u64);
        if let Some(at) = page.garbage_at {
            sink.log_fmt(Level::Debug, format_args!("master page {}: unreadable entry at byte {at}", self.pages));
        }
        for a in page.entries {
            if self.seen.len() >= MAX_ENTRIES {
                break;
            }
            if self.seen.insert(a) {
                sink.master_entry(a);
            } else {
                self.duplicates = self.duplicates.saturating_add(1);
            }
        }
        if page.eot {
            self.eot = true;
        }
        if self.eot {
            if self.eot_grace_ms == 0 {
                self.finish(sink);
            } else {
                self.timer.arm_in(now_ms, self.eot_grace_ms);
            }
        } else {
            self.timer.arm_in(now_ms, PAGE_WAIT_MS.max(self.timer.first_wait_ms()));
        }
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        if self.eot {
            return self.finish(sink);
        }
        if self.timer.next_attempt() {
            // Nothing, or pages but no end: ask again (entries already reported are deduplicated).
            sink.send(self.target, &self.request);
            self.timer.arm(now_ms);
            return;
        }
        if self.pages > 0 {
            return self.finish(sink);
        }
        self.done = true;
        self.timer.stop();
        let n = self.timer.attempts();
        sink.done(Status::TIMEOUT, &format!("no reply from the master after {n} attempt(s)"));
    }

    fn finish(&mut self, sink: &mut dyn Sink) {
        self.done = true;
        self.timer.stop();
        let request = String::from_utf8_lossy(self.request.get(4..).unwrap_or(&[])).into_owned();
        sink.raw("request", Value::Str(&request));
        sink.raw("entries", Value::Int(i64::try_from(self.seen.len()).unwrap_or(i64::MAX)));
        sink.raw("pages", Value::Int(i64::from(self.pages)));
        sink.raw("duplicates", Value::Int(i64::try_from(self.duplicates).unwrap_or(i64::MAX)));
        sink.raw("invalid_entries", Value::Int(i64::try_from(self.invalid).unwrap_or(i64::MAX)));
        sink.raw("eot", Value::Bool(self.eot));
        sink.finish();
    }
}
