//! The Teeworlds / DDNet query state machines.
//!
//! `teeworlds` (0.6 family, port 8303):
//! * sends the DDNet extended request (`xe` header, 24-bit token). DDNet answers `iext` plus `iex+` datagrams
//!   (paged players, no total count: the list is complete when the records reach `num_clients`; duplicates by packet
//!   number are ignored; `iex+` may arrive first). Vanilla 0.6 servers treat the `xe` header as an ordinary connless
//!   header and answer `inf3` with the low token byte, which is accepted too.
//! * A rate-limited DDNet reply is an `iext` with counters but no records: reported with
//!   `player_list_complete = false` ("players unknown"), never as zero players.
//! * Retries alternate the extended request with a plain vanilla `gie3`; a lost `iex+` triggers a resend (DDNet
//!   caches its replies, so the pages are the same) and, when retries run out, a partial list marked incomplete.
//! * A vanilla reply whose name carries DDNet's ` [clients/max]` suffix (more than 16 slots) is followed by the
//!   64-player legacy request (`fstd` → `dtsf` pages of up to 24 records, each with its offset).
//! * Parameter `mode`: `auto` (default), `extended`, `vanilla` or `legacy64` to use only one request form.
//!
//! `teeworlds7` (0.7, port 8303): the token handshake as Teeworlds 0.7.5 answers it (520-byte token request, then
//! the connless `gie3` with a varint browser token that is never -1), one `inf3` datagram with varint fields.

use crate::msg::{self, Client, Kind06, ServerInfo};
use query_abi::{
    keys, CreateError, Datagram, Level, Player, QueryConfig, QueryEngine, RetryTimer, Sink, Status, Value,
};
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// How long to wait for the next page once part of a multi-datagram answer arrived (they are sent back to back).
const PAGE_WAIT_MS: u64 = 400;

/// Random values of one query, derived from the host's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tokens {
    /// 0.6 family: 24-bit token (its low byte is the vanilla token).
    pub six: u32,
    /// 0.7: our connection token (never `ff ff ff ff`).
    pub client7: [u8; 4],
    /// 0.7: browser token, 0..2^24 (never -1).
    pub browser7: i32,
}

impl Tokens {
    /// Tokens from the query's seed.
    pub fn from_config(config: &QueryConfig) -> Tokens {
        let a = config.derive(1);
        let mut client7 = ((a >> 32) as u32).to_be_bytes();
        if client7 == msg::TOKEN7_NONE {
            client7[0] = 0;
        }
        Tokens { six: (a as u32) & 0x00ff_ffff, client7, browser7: (config.derive(2) as i32) & 0x00ff_ffff }
    }
}

/// The plugin's engine: one query of `teeworlds` or `teeworlds7`.
#[derive(Debug)]
pub enum TeeworldsEngine {
    /// `teeworlds`.
    Six(Box<Six>),
    /// `teeworlds7`.
    Seven(Seven),
    /// `teeworlds-master`, `teeworlds7-master`.
    Master(Box<crate::master::MasterQuery>),
}

impl TeeworldsEngine {
    /// Like [`QueryEngine::new`] with explicit tokens (tests replay captures made with known tokens).
    pub fn with_tokens(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        tokens: Tokens,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        match protocol {
            "teeworlds" => Ok(TeeworldsEngine::Six(Box::new(Six::new(target, config, tokens.six, now_ms, sink)?))),
            "teeworlds7" => Ok(TeeworldsEngine::Seven(Seven::new(target, config, tokens, now_ms, sink))),
            "teeworlds-master" | "teeworlds7-master" => {
                Ok(TeeworldsEngine::Master(Box::new(crate::master::MasterQuery::new(
                    target,
                    protocol == "teeworlds7-master",
                    tokens.client7,
                    config,
                    now_ms,
                    sink,
                ))))
            }
            _ => Err(CreateError::UnknownProtocol),
        }
    }
}

impl QueryEngine for TeeworldsEngine {
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError> {
        Self::with_tokens(protocol, target, config, Tokens::from_config(config), now_ms, sink)
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        match self {
            TeeworldsEngine::Six(e) => e.on_datagram(now_ms, from, data, sink),
            TeeworldsEngine::Seven(e) => e.on_datagram(now_ms, from, data, sink),
            TeeworldsEngine::Master(e) => e.on_datagram(now_ms, from, data, sink),
        }
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        match self {
            TeeworldsEngine::Six(e) => e.on_timeout(now_ms, sink),
            TeeworldsEngine::Seven(e) => e.on_timeout(now_ms, sink),
            TeeworldsEngine::Master(e) => e.on_timeout(now_ms, sink),
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        match self {
            TeeworldsEngine::Six(e) => e.timer.deadline(),
            TeeworldsEngine::Seven(e) => e.timer.deadline(),
            TeeworldsEngine::Master(e) => e.deadline(),
        }
    }
}

/// Request forms of the `teeworlds` protocol (parameter `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Extended first, vanilla as fallback, 64-player legacy when a vanilla reply says there are more clients.
    Auto,
    /// Only the DDNet extended request.
    Extended,
    /// Only the vanilla request.
    Vanilla,
    /// Only the 64-player legacy request.
    Legacy64,
}

/// The `teeworlds` (0.6 family) query.
#[derive(Debug)]
pub struct Six {
    target: SocketAddr,
    mode: Mode,
    token: u32,
    timer: RetryTimer,
    /// `iext` server part.
    ext_main: Option<ServerInfo>,
    /// Client records by packet number (0 = `iext`).
    ext_pages: BTreeMap<u32, Vec<Client>>,
    /// The rate-limited short form was received.
    ext_short: bool,
    vanilla: Option<msg::Info06>,
    legacy_sent: bool,
    legacy_main: Option<ServerInfo>,
    /// Client records by offset.
    legacy_pages: BTreeMap<i64, Vec<Client>>,
    done: bool,
}

impl Six {
    fn new(
        target: SocketAddr,
        config: &QueryConfig,
        token: u32,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Six, CreateError> {
        let mode = match config.param("mode").unwrap_or("auto") {
            "auto" => Mode::Auto,
            "extended" => Mode::Extended,
            "vanilla" => Mode::Vanilla,
            "legacy64" => Mode::Legacy64,
            other => {
                return Err(CreateError::BadConfig(format!(
                    "mode {other:?}: expected auto, extended, vanilla or legacy64"
                )))
            }
        };
        let mut e = Six {
            target,
            mode,
            token: token & 0x00ff_ffff,
            timer: RetryTimer::new(config),
            ext_main: None,
            ext_pages: BTreeMap::new(),
            ext_short: false,
            vanilla: None,
            legacy_sent: false,
            legacy_main: None,
            legacy_pages: BTreeMap::new(),
            done: false,
        };
        e.send_request(now_ms, sink);
        Ok(e)
    }

    fn low_token(&self) -> u8 {
        self.token as u8
    }

    /// Sends the request for the current attempt.
    fn send_request(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        let req = match self.mode {
            Mode::Auto if self.timer.attempt() % 2 == 1 => msg::plain_request(msg::GETINFO, self.low_token()),
            Mode::Auto | Mode::Extended => msg::xe_request(self.token),
            Mode::Vanilla => msg::plain_request(msg::GETINFO, self.low_token()),
            Mode::Legacy64 => msg::plain_request(msg::GETINFO_64_LEGACY, self.low_token()),
        };
        if self.mode == Mode::Legacy64 {
            self.legacy_sent = true;
        }
        sink.send(self.target, &req);
        self.timer.arm(now_ms);
    }

    fn accepts(&self, kind: Kind06) -> bool {
        match (self.mode, kind) {
            (Mode::Auto, Kind06::Legacy64) => self.legacy_sent,
            (Mode::Auto, _) => true,
            (Mode::Extended, k) => matches!(k, Kind06::Extended | Kind06::ExtendedMore),
            (Mode::Vanilla, k) => k == Kind06::Vanilla,
            (Mode::Legacy64, k) => k == Kind06::Legacy64,
        }
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.done || from != self.target {
            return Datagram::Ignored;
        }
        let Some((kind, body)) = msg::classify06(data) else { return Datagram::Ignored };
        if !self.accepts(kind) {
            return Datagram::Ignored;
        }
        let want = match kind {
            Kind06::Extended | Kind06::ExtendedMore => i64::from(self.token),
            Kind06::Vanilla | Kind06::Legacy64 => i64::from(self.low_token()),
        };
        if msg::token06(body) != Some(want) {
            sink.log_fmt(Level::Debug, format_args!("{kind:?} reply with a wrong or unreadable token"));
            return Datagram::Ignored;
        }
        let parsed = match kind {
            Kind06::ExtendedMore => msg::parse_extended_more(body).map(|m| self.on_more(m)),
            _ => msg::parse_info06(kind, body).map(|i| self.on_info(kind, i, now_ms, sink)),
        };
        if let Err(e) = parsed {
            self.fail(sink, Status::MALFORMED, &format!("{kind:?} reply: {e}"));
            return Datagram::Accepted;
        }
        self.check_complete(now_ms, sink);
        Datagram::Accepted
    }

    fn on_more(&mut self, m: msg::ExtendedMore) {
        self.ext_pages.entry(m.packet_no).or_insert(m.clients);
    }

    fn on_info(&mut self, kind: Kind06, info: msg::Info06, now_ms: u64, sink: &mut dyn Sink) {
        match kind {
            Kind06::Extended => {
                if self.ext_main.is_none() {
                    self.ext_short = info.clients.is_empty() && info.server.num_clients > 0;
                    self.ext_main = Some(info.server);
                }
                self.ext_pages.entry(0).or_insert(info.clients);
            }
            Kind06::Legacy64 => {
                if self.legacy_main.is_none() {
                    self.legacy_main = Some(info.server);
                }
                let offset = info.offset.unwrap_or(0);
                self.legacy_pages.entry(offset).or_insert(info.clients);
            }
            Kind06::Vanilla => {
                if self.vanilla.is_some() || self.ext_main.is_some() {
                    return;
                }
                let more = msg::name_suffix(&info.server.name)
                    .is_some_and(|(n, max)| max > 16 && n > i64::try_from(info.clients.len()).unwrap_or(i64::MAX));
                self.vanilla = Some(info);
                if more && self.mode == Mode::Auto && !self.legacy_sent {
                    self.legacy_sent = true;
                    sink.send(self.target, &msg::plain_request(msg::GETINFO_64_LEGACY, self.low_token()));
                    self.timer.arm_in(now_ms, self.timer.first_wait_ms());
                }
            }
            Kind06::ExtendedMore => {}
        }
    }

    fn ext_count(&self) -> usize {
        self.ext_pages.values().map(Vec::len).sum()
    }

    fn legacy_count(&self) -> usize {
        self.legacy_pages.values().map(Vec::len).sum()
    }

    /// Finishes when some answer is complete; otherwise waits a little for the remaining pages.
    fn check_complete(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done {
            return;
        }
        if let Some(main) = &self.ext_main {
            if self.ext_short || count_reaches(self.ext_count(), main.num_clients) {
                return self.finish_extended(sink, !self.ext_short);
            }
            self.timer.arm_in(now_ms, PAGE_WAIT_MS.min(self.timer.wait_ms()));
            return;
        }
        if let Some(main) = &self.legacy_main {
            if count_reaches(self.legacy_count(), main.num_clients) {
                return self.finish_legacy(sink, true);
            }
            self.timer.arm_in(now_ms, PAGE_WAIT_MS.min(self.timer.wait_ms()));
            return;
        }
        if self.vanilla.is_some() && !(self.legacy_sent && self.mode == Mode::Auto) {
            self.finish_vanilla(sink);
        }
        // Otherwise: iex+ pages before their iext, or a vanilla reply while the legacy request is out.
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.done || self.timer.is_waiting(now_ms) {
            return;
        }
        // Give up on the legacy pages: use what we have.
        if self.legacy_sent && self.mode == Mode::Auto && self.vanilla.is_some() {
            let legacy_better = self.legacy_main.is_some()
                && self.legacy_count() > self.vanilla.as_ref().map_or(0, |v| v.clients.len());
            return if legacy_better { self.finish_legacy(sink, false) } else { self.finish_vanilla(sink) };
        }
        if !self.timer.next_attempt() {
            if self.ext_main.is_some() {
                return self.finish_extended(sink, false);
            }
            if self.legacy_main.is_some() {
                return self.finish_legacy(sink, false);
            }
            let n = self.timer.attempts();
            return self.fail(sink, Status::TIMEOUT, &format!("no reply after {n} request(s)"));
        }
        if self.ext_main.is_some() {
            // A page was lost: ask again (DDNet answers from its cache, the pages are the same).
            sink.send(self.target, &msg::xe_request(self.token));
            self.timer.arm(now_ms);
        } else {
            self.send_request(now_ms, sink);
        }
    }

    fn fail(&mut self, sink: &mut dyn Sink, status: Status, why: &str) {
        self.done = true;
        self.timer.stop();
        sink.done(status, why);
    }

    fn finish_extended(&mut self, sink: &mut dyn Sink, complete: bool) {
        let Some(main) = self.ext_main.take() else { return };
        // At most MAX_CLIENTS in all (each page may hold that many: a hostile server could pass the host's limit).
        let clients: Vec<Client> =
            std::mem::take(&mut self.ext_pages).into_values().flatten().take(msg::MAX_CLIENTS).collect();
        let complete = complete && count_reaches(clients.len(), main.num_clients);
        let raw: &[(&str, Value<'_>)] = &[
            ("format", Value::Str("extended")),
            ("map_crc", main.map_crc.into()),
            ("map_size", main.map_size.into()),
            ("rate_limited", Value::Bool(self.ext_short)),
        ];
        self.done = true;
        self.timer.stop();
        emit(sink, &main, &clients, Some(complete), raw, None);
    }

    fn finish_vanilla(&mut self, sink: &mut dyn Sink) {
        let Some(v) = self.vanilla.take() else { return };
        let suffix = msg::name_suffix(&v.server.name).filter(|&(_, max)| max > 16);
        let known = suffix.map_or(v.server.num_clients, |(n, _)| n);
        let complete = count_reaches(v.clients.len(), known);
        self.done = true;
        self.timer.stop();
        emit(sink, &v.server, &v.clients, Some(complete), &[("format", Value::Str("vanilla"))], suffix);
    }

    fn finish_legacy(&mut self, sink: &mut dyn Sink, complete: bool) {
        let Some(main) = self.legacy_main.take() else { return };
        let clients: Vec<Client> =
            std::mem::take(&mut self.legacy_pages).into_values().flatten().take(msg::MAX_CLIENTS).collect();
        let complete = complete && count_reaches(clients.len(), main.num_clients);
        self.done = true;
        self.timer.stop();
        emit(sink, &main, &clients, Some(complete), &[("format", Value::Str("legacy64"))], None);
    }
}

fn count_reaches(have: usize, want: i64) -> bool {
    i64::try_from(have).unwrap_or(i64::MAX) >= want
}

/// Reports one answer. `suffix`: the `[clients/max]` of a DDNet vanilla name, which beats the clamped counters.
fn emit(
    sink: &mut dyn Sink,
    s: &ServerInfo,
    clients: &[Client],
    complete: Option<bool>,
    raw: &[(&str, Value<'_>)],
    suffix: Option<(i64, i64)>,
) {
    let seven = s.skill_level.is_some();
    sink.server(keys::NAME, Value::Str(&s.name));
    sink.server(keys::MAP, Value::Str(&s.map));
    sink.server(keys::GAME_TYPE, Value::Str(&s.game_type));
    let (players, max) = suffix.unwrap_or((s.num_clients, s.max_clients));
    sink.server(keys::PLAYERS, Value::Int(players));
    sink.server(keys::MAX_PLAYERS, Value::Int(max));
    if seven {
        let bots = clients.iter().filter(|c| c.flags & 2 != 0).count();
        sink.server(keys::BOTS, Value::Int(i64::try_from(bots).unwrap_or(i64::MAX)));
    }
    sink.server(keys::PASSWORD, Value::Bool(s.flags & 1 != 0));
    sink.server(keys::VERSION, Value::Str(&s.version));
    if let Some(c) = complete {
        sink.server(keys::PLAYER_LIST_COMPLETE, Value::Bool(c));
    }
    for (k, v) in raw {
        sink.raw(k, *v);
    }
    sink.raw("token", Value::Int(s.token));
    sink.raw("flags", Value::Int(s.flags));
    sink.raw("time_score", Value::Bool(s.flags & 2 != 0));
    sink.raw("num_players", Value::Int(s.num_players));
    sink.raw("max_players", Value::Int(s.max_players));
    sink.raw("num_clients", Value::Int(s.num_clients));
    sink.raw("max_clients", Value::Int(s.max_clients));
    if let Some(h) = &s.hostname {
        sink.raw("hostname", Value::Str(h));
    }
    if let Some(k) = s.skill_level {
        sink.raw("skill_level", Value::Int(k));
    }
    for c in clients {
        // 0.6: flags is "is player" (1/0). 0.7: 1 = spectator, 2 = bot.
        let (is_player, bot) =
            if seven { (c.flags & 1 == 0, Value::Bool(c.flags & 2 != 0)) } else { (c.flags != 0, Value::Null) };
        let extra = [
            ("clan", Value::Str(&c.clan)),
            ("country", Value::Int(c.country)),
            ("is_player", Value::Bool(is_player)),
            ("bot", bot),
        ];
        let n = if seven { 4 } else { 3 };
        sink.player(&Player {
            name: &c.name,
            score: Some(c.score),
            team: Value::Null,
            ping: None,
            extra: extra.get(..n).unwrap_or(&extra),
        });
    }
    sink.finish();
}

/// Stages of the 0.7 handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Token request sent.
    Token,
    /// Info request sent with the server's token.
    Info,
    /// Finished.
    Done,
}

/// The `teeworlds7` query.
#[derive(Debug)]
pub struct Seven {
    target: SocketAddr,
    tokens: Tokens,
    server_token: [u8; 4],
    timer: RetryTimer,
    stage: Stage,
}

impl Seven {
    fn new(target: SocketAddr, config: &QueryConfig, tokens: Tokens, now_ms: u64, sink: &mut dyn Sink) -> Seven {
        let mut tokens = tokens;
        if tokens.browser7 < 0 {
            tokens.browser7 &= 0x00ff_ffff; // never -1 (0.7.5 would skip resetting its packer)
        }
        let mut e = Seven {
            target,
            tokens,
            server_token: msg::TOKEN7_NONE,
            timer: RetryTimer::new(config),
            stage: Stage::Token,
        };
        e.send(now_ms, sink);
        e
    }

    fn send(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        let req = match self.stage {
            Stage::Token => msg::token_request7(self.tokens.client7),
            Stage::Info => msg::info_request7(self.server_token, self.tokens.client7, self.tokens.browser7),
            Stage::Done => return,
        };
        sink.send(self.target, &req);
        self.timer.arm(now_ms);
    }

    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram {
        if self.stage == Stage::Done || from != self.target {
            return Datagram::Ignored;
        }
        if let Some(server_token) = msg::token_reply7(data, self.tokens.client7) {
            self.server_token = server_token;
            if self.stage == Stage::Token {
                self.stage = Stage::Info;
                self.send(now_ms, sink);
            }
            return Datagram::Accepted;
        }
        let Some(payload) = msg::connless7(data, self.tokens.client7) else { return Datagram::Ignored };
        if msg::token07(payload) != Some(self.tokens.browser7) {
            sink.log_fmt(Level::Debug, format_args!("0.7 datagram that is not our inf3"));
            return Datagram::Ignored;
        }
        self.stage = Stage::Done;
        self.timer.stop();
        match msg::parse_info07(payload) {
            Ok(info) => {
                // Newer DDNet cuts an over-long 0.7 list and says so with a ` [clients/max]` name suffix.
                let have = i64::try_from(info.clients.len()).unwrap_or(i64::MAX);
                let suffix = msg::name_suffix(&info.server.name).filter(|&(n, _)| n > have);
                let raw = [("format", Value::Str("0.7"))];
                emit(sink, &info.server, &info.clients, Some(suffix.is_none()), &raw, suffix)
            }
            Err(e) => sink.done(Status::MALFORMED, &format!("0.7 inf3 reply: {e}")),
        }
        Datagram::Accepted
    }

    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink) {
        if self.stage == Stage::Done || self.timer.is_waiting(now_ms) {
            return;
        }
        if !self.timer.next_attempt() {
            let what = if self.stage == Stage::Token { "token handshake" } else { "info request" };
            self.stage = Stage::Done;
            self.timer.stop();
            let n = self.timer.attempts();
            return sink.done(Status::TIMEOUT, &format!("no reply to the 0.7 {what} after {n} attempt(s)"));
        }
        // The server token stays valid 16-32 s, so a lost info reply only needs the info request again.
        self.send(now_ms, sink);
    }
}
