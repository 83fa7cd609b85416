//! The BZFlag session engine: one player's (or observer's) connection to a `bzfs` server, as a sans-IO state
//! machine.
//!
//! # Calls
//!
//! * inputs: [`Session::handle_connected`], [`Session::handle_tcp`], [`Session::handle_tcp_closed`],
//!   [`Session::handle_udp`], [`Session::handle_udp_unavailable`], [`Session::handle_world_cache`],
//!   [`Session::handle_timeout`];
//! * commands: [`Session::send_chat`], [`Session::leave`];
//! * outputs, each drained until `None` after every input: [`Session::poll_transmit`],
//!   [`Session::poll_world_request`], [`Session::poll_event`], and [`Session::poll_timeout`] for the next deadline.
//!
//! The join follows the official 2.4 client: hello, UDP link request, `MsgNegotiateFlags`, `MsgWantSettings`,
//! `MsgWantWHash`, the world (from the cache or `MsgGetWorld` chunks, MD5-checked), `MsgEnter`, then the accept
//! burst. The UDP link comes up in the background; if it does not, everything stays on TCP.
//!
//! After a fatal error (a broken frame, a reject, a kick, a timeout) the session is closed and inert: further
//! inputs do nothing, and [`Session::end`] keeps the reason.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use md5::{Digest, Md5};
use tracing::{debug, trace};

use super::consts::{
    code, player, PlayerStatus, PlayerType, RejectCode, Team, CLIENT_HEADER, KNOWN_FLAGS, MAX_UDP_PACKET_LEN,
    SERVER_VERSION,
};
use super::event::{Event, FlagEvent, QueryPlayer};
use super::game::Game;
use super::msg::{datagram_frames, describe_code, Abbv, ClientMsg, FrameBuffer, Message, ServerMsg};
use super::netstats::NetStats;

mod end;
pub use end::{ConnectError, HelloError, ProtocolError, SessionEnd, WorldError};

/// How often expired shots are dropped from [`Game::shots`].
const PRUNE_EVERY: Duration = Duration::from_millis(250);
/// How many of the server's lines before a `MsgSuperKill` make its reason (a kick sends two at most).
const KICK_TEXT_LINES: usize = 4;
/// Lines older than this when the `MsgSuperKill` comes were not about it (bzfs sends them in one go).
const KICK_TEXT_AGE: Duration = Duration::from_secs(2);

/// The largest world blob we accept (the biggest real worlds are a few hundred KiB compressed).
pub const MAX_WORLD_BYTES: usize = 32 * 1024 * 1024;

/// How a session joins.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Callsign (2–31 printable characters).
    pub callsign: String,
    /// Motto.
    pub motto: String,
    /// Global-login token ("" for none).
    pub token: String,
    /// Team wanted ([`Team::Observer`] to observe, [`Team::Automatic`] to let the server choose).
    pub team: Team,
    /// Player type.
    pub player_type: PlayerType,
    /// Version string sent in `MsgEnter`.
    pub version: String,
    /// Bring up the UDP link.
    pub udp: bool,
    /// Negotiate flags, ask for the settings and fetch (or load) the world before entering, like the official
    /// client. When false the session enters straight away, like `bzadmin`.
    pub full_join: bool,
    /// Time allowed from connect to the server's hello.
    pub hello_timeout: Duration,
    /// Time allowed from the hello to `MsgAccept` (world download included).
    pub join_timeout: Duration,
    /// Time after which a UDP link that has not come up is given up (TCP is used instead).
    pub udp_timeout: Duration,
    /// Do not join: ask `MsgQueryGame` and `MsgQueryPlayers` (like `bzfquery`), report
    /// [`Event::QueryResult`] and close.
    pub query_only: bool,
    /// Do not join: fetch (or load) and verify the world, report it, then close (for `bzhead world`).
    pub world_only: bool,
    /// Once joined, end the session ([`SessionEnd::Timeout`]) when the server sends nothing for this long
    /// (`None`: never; see [`Session::set_idle_timeout`]).
    pub idle_timeout: Option<Duration>,
    /// Once joined, skip other players' updates and shots without parsing them (no [`Event::Update`],
    /// [`Event::ShotBegin`] or [`Event::ShotEnd`], nothing kept in [`Game::players`]' `last_update` or
    /// [`Game::shots`]): for a robot whose owner follows the game through another session (the bots' shared
    /// observer link), or an observer whose events nobody prints (`observe --count` but the first), so that a
    /// hundred of them do not each decode every relay.
    pub lean: bool,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            callsign: "bzhead".into(),
            motto: "bzhead".into(),
            token: String::new(),
            team: Team::Observer,
            player_type: PlayerType::Tank,
            version: format!("2.4.26-bzhead-{}", env!("CARGO_PKG_VERSION")),
            udp: true,
            full_join: true,
            hello_timeout: Duration::from_secs(10),
            join_timeout: Duration::from_secs(60),
            udp_timeout: Duration::from_secs(3),
            query_only: false,
            world_only: false,
            idle_timeout: None,
            lean: false,
        }
    }
}

/// Where bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The TCP connection.
    Tcp,
    /// The UDP socket, to the server's game port. The driver creates the socket on first use, bound to the TCP
    /// connection's local address where possible.
    Udp,
}

/// Bytes to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Channel.
    pub channel: Channel,
    /// Bytes (one whole message per UDP datagram).
    pub bytes: Vec<u8>,
}

/// A request to the driver about the on-disk world cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorldRequest {
    /// Look up a world by hash and answer with [`Session::handle_world_cache`].
    Lookup {
        /// 32 lower-case hex digits.
        hash: String,
    },
    /// Store a verified world.
    Store {
        /// 32 lower-case hex digits.
        hash: String,
        /// The blob.
        blob: Vec<u8>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Connecting,
    AwaitHello,
    Negotiating,
    AwaitSettings,
    AwaitHash,
    AwaitCache,
    Downloading,
    AwaitAccept,
    Querying,
    Joined,
    Closed,
}

impl State {
    fn describe(self) -> &'static str {
        match self {
            State::Connecting => "connect",
            State::AwaitHello => "the hello",
            State::Negotiating => "flag negotiation",
            State::AwaitSettings => "the settings request",
            State::AwaitHash => "the world hash request",
            State::AwaitCache => "the world cache lookup",
            State::Downloading => "the world download",
            State::AwaitAccept => "the join (MsgEnter)",
            State::Querying => "the query",
            State::Joined => "the game",
            State::Closed => "shutdown",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Udp {
    Off,
    Requested {
        tries: u8,
    },
    /// The server hears us (TCP `MsgUDPLinkEstablished`) but we have not seen its probe yet.
    Inbound,
    Up,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timer {
    Hello,
    Join,
    UdpRetry,
    Idle,
}

const TIMERS: usize = 4;

/// How a session that ends because the server went quiet describes the step ([`SessionEnd::Timeout`]).
pub const IDLE_TIMEOUT_DURING: &str = "the game (the server stopped sending: no message within the idle limit)";

/// The BZFlag session engine. See the module documentation.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    state: State,
    end: Option<SessionEnd>,
    frames: FrameBuffer,
    game: Game,
    udp: Udp,
    timers: [Option<Instant>; TIMERS],
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    world_requests: VecDeque<WorldRequest>,
    world_hash: Option<String>,
    world: Vec<u8>,
    /// MD5 of the download so far, updated chunk by chunk (hashing a 32 MiB world at the end would stall the
    /// turn that brings its last chunk).
    world_md5: Md5,
    world_total: Option<usize>,
    world_blob: Option<Vec<u8>>,
    /// The server messages to us (or to all) since the last other message over TCP, with when they came: what
    /// a `MsgSuperKill` right after them was about. At most [`KICK_TEXT_LINES`].
    kick_text: VecDeque<(Instant, String)>,
    leaving: bool,
    warnings: u64,
    query: Option<QueryAnswer>,
    /// See [`Session::set_idle_timeout`].
    idle_timeout: Option<Duration>,
    /// When the last whole message arrived (TCP or UDP).
    last_heard: Option<Instant>,
    /// Per-player network figures, fed by every player update (while [`Session::set_net_stats`] keeps them).
    netstats: NetStats,
    net_stats_on: bool,
    /// Until when server lines that read like a `/lagstats` reply answer our [`Session::request_lag_stats`].
    lagstats_until: Option<Instant>,
    /// The server refused us `/lagstats` (no permission): not asked again.
    lagstats_denied: bool,
    /// When the `/lagstats` awaiting its first reply line was sent (for [`NetStats::command_rtt_ms`]).
    lagstats_asked: Option<Instant>,
}

/// The room for events a drained [`Session::poll_event`] queue keeps (a hundred observers in one process each
/// held the room of their join's burst, about 14 KB).
pub const EVENTS_KEPT: usize = 16;

/// How long after [`Session::request_lag_stats`] the reply's lines are taken (and not reported as chat).
pub const LAGSTATS_REPLY_WINDOW: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
struct QueryAnswer {
    game: Option<super::msg::QueryGameInfo>,
    expected: Option<usize>,
    teams: Option<Vec<super::msg::TeamInfo>>,
    players: Vec<QueryPlayer>,
}

impl Session {
    /// A session that is about to connect.
    pub fn new(config: SessionConfig) -> Session {
        let idle_timeout = config.idle_timeout;
        Session {
            config,
            state: State::Connecting,
            end: None,
            frames: FrameBuffer::new(),
            game: Game::default(),
            udp: Udp::Off,
            timers: [None; TIMERS],
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            world_requests: VecDeque::new(),
            world_hash: None,
            world: Vec::new(),
            world_md5: Md5::new(),
            world_total: None,
            world_blob: None,
            kick_text: VecDeque::new(),
            leaving: false,
            warnings: 0,
            query: None,
            idle_timeout,
            last_heard: None,
            netstats: NetStats::new(),
            net_stats_on: true,
            lagstats_until: None,
            lagstats_denied: false,
            lagstats_asked: None,
        }
    }

    // ---------------------------------------------------------------- getters

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }
    /// What we know about the game.
    pub fn game(&self) -> &Game {
        &self.game
    }
    /// Our player id, once the hello arrived.
    pub fn my_id(&self) -> Option<u8> {
        self.game.my_id
    }
    /// True once `MsgAccept` arrived and until the session closes.
    pub fn is_joined(&self) -> bool {
        self.state == State::Joined
    }
    /// True once the session has ended; see [`Session::end`].
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
    /// Why the session ended, once it has.
    pub fn end(&self) -> Option<&SessionEnd> {
        self.end.as_ref()
    }
    /// True when client→server UDP is up.
    pub fn udp_up(&self) -> bool {
        self.udp == Udp::Up
    }
    /// The verified world blob (downloaded or from the cache), once we have it.
    pub fn world_blob(&self) -> Option<&[u8]> {
        self.world_blob.as_deref()
    }
    /// Takes the verified world blob out of the session (a driver that has no more use for it frees up to
    /// 32 MiB per session; [`Session::world_blob`] is `None` afterwards).
    pub fn take_world_blob(&mut self) -> Option<Vec<u8>> {
        self.world_blob.take()
    }
    /// The world hash (32 hex digits) the server announced.
    pub fn world_hash(&self) -> Option<&str> {
        self.world_hash.as_deref()
    }
    /// Whether per-player network figures are kept ([`Session::net_stats`]; on by default). They cost a few KiB
    /// per player that sends updates and a little time per update; a session whose figures nobody reads (the
    /// observers of `observe --count` but the first, or without `--netstats`) turns them off, and they stay empty
    /// (but for `/lagstats` replies to [`Session::request_lag_stats`]).
    pub fn set_net_stats(&mut self, on: bool) {
        self.net_stats_on = on;
        if !on {
            for id in self.netstats.ids() {
                self.netstats.on_leave(id);
            }
        }
    }
    /// Per-player network diagnostics (update rate, jitter, dead-reckoning error, lag): see
    /// [`super::netstats`]. Read it with [`NetStats::snapshot`] or [`NetStats::player`] at the current time.
    pub fn net_stats(&self) -> &NetStats {
        &self.netstats
    }
    /// Protocol warnings so far (malformed messages skipped, unknown codes, ...).
    pub fn warnings(&self) -> u64 {
        self.warnings
    }
    /// True while the driver should keep the TCP connection (false once closed; the driver then flushes what
    /// is queued and closes).
    pub fn wants_connection(&self) -> bool {
        self.state != State::Closed
    }

    // ---------------------------------------------------------------- outputs

    /// Next bytes to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }
    /// Next event.
    ///
    /// Once drained, the queue keeps room for at most [`EVENTS_KEPT`] events: the burst of a join (an event per
    /// player, flag and team) is not held for the rest of the session.
    pub fn poll_event(&mut self) -> Option<Event> {
        let e = self.events.pop_front();
        if e.is_none() && self.events.capacity() > EVENTS_KEPT {
            self.events.shrink_to(EVENTS_KEPT);
        }
        e
    }
    /// Next request to the world cache.
    pub fn poll_world_request(&mut self) -> Option<WorldRequest> {
        self.world_requests.pop_front()
    }
    /// The earliest deadline at which [`Session::handle_timeout`] must be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.iter().flatten().min().copied()
    }

    // ---------------------------------------------------------------- inputs

    /// The TCP connection is up: send the connect header.
    pub fn handle_connected(&mut self, now: Instant) {
        if self.state != State::Connecting {
            return;
        }
        self.state = State::AwaitHello;
        self.send_raw(CLIENT_HEADER.to_vec());
        self.set_timer(Timer::Hello, now + self.config.hello_timeout);
        self.set_timer(Timer::Join, now + self.config.hello_timeout + self.config.join_timeout);
    }

    /// The TCP connection could not be made.
    pub fn handle_connect_failed(&mut self, _now: Instant, why: ConnectError) {
        self.close(SessionEnd::ConnectFailed(why));
    }

    /// Bytes received on the TCP connection.
    pub fn handle_tcp(&mut self, now: Instant, data: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        self.frames.push(data);
        if self.state == State::AwaitHello {
            let Some(hello) = self.frames.take_raw(9) else {
                self.check_hello_prefix();
                return;
            };
            self.on_hello(now, &hello);
        }
        while self.state != State::Closed {
            match self.frames.next_frame() {
                Ok(Some((code, body))) => self.on_frame(now, code, &body, false),
                Ok(None) => break,
                Err(e) => {
                    self.close(SessionEnd::Protocol(e.into()));
                    break;
                }
            }
        }
    }

    /// The server closed the TCP connection (or it broke).
    pub fn handle_tcp_closed(&mut self, _now: Instant) {
        if self.state == State::Closed {
            return;
        }
        if self.leaving {
            self.close(SessionEnd::Left);
        } else if self.frames.buffered() > 0 && self.state == State::AwaitHello {
            let got = self.frames.take_raw(self.frames.buffered()).unwrap_or_default();
            self.close(SessionEnd::Protocol(HelloError::closed(&got).into()));
        } else {
            self.close(SessionEnd::ServerClosed { during: self.state.describe() });
        }
    }

    /// A datagram from the server's UDP port.
    pub fn handle_udp(&mut self, now: Instant, datagram: &[u8]) {
        if matches!(self.state, State::Closed | State::Connecting | State::AwaitHello) {
            return;
        }
        let (frames, err) = datagram_frames(datagram);
        for f in frames {
            self.on_frame(now, f.code, f.body, true);
            if self.state == State::Closed {
                return;
            }
        }
        if let Some(e) = err {
            self.warn(format!("malformed UDP datagram: {e}"));
        }
    }

    /// The driver could not open a UDP socket: stay on TCP.
    pub fn handle_udp_unavailable(&mut self, _now: Instant, why: &str) {
        if matches!(self.udp, Udp::Requested { .. } | Udp::Inbound) {
            self.udp = Udp::Failed;
            self.timers[Timer::UdpRetry as usize] = None;
            self.events.push_back(Event::UdpLink { up: false, detail: format!("no UDP socket ({why}); using TCP") });
        }
    }

    /// The answer to a [`WorldRequest::Lookup`]: the cached blob, or `None`. The blob's MD5 is checked against
    /// the announced hash (a mismatch is a miss).
    pub fn handle_world_cache(&mut self, now: Instant, blob: Option<Vec<u8>>) {
        let hash = self.world_hash.clone().unwrap_or_default();
        let blob = blob.filter(|b| md5_hex(b) == hash);
        self.handle_world_cache_verified(now, blob);
    }

    /// [`Session::handle_world_cache`] from a driver that has already checked that the blob's MD5 is the hash of
    /// the [`WorldRequest::Lookup`] (as [`crate::cache::WorldCache::load`] does, off the event loop): the engine
    /// does not hash it again.
    pub fn handle_world_cache_verified(&mut self, now: Instant, blob: Option<Vec<u8>>) {
        if self.state != State::AwaitCache {
            return;
        }
        let hash = self.world_hash.clone().unwrap_or_default();
        match blob {
            Some(b) => {
                self.events.push_back(Event::World { hash: hash.clone(), bytes: b.len(), cached: true });
                self.world_blob = Some(b);
                self.send_enter(now);
            }
            _ => {
                self.state = State::Downloading;
                self.world.clear();
                self.send_tcp(&ClientMsg::GetWorld { offset: 0 });
            }
        }
    }

    /// A deadline passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..TIMERS {
            if self.timers[i].is_some_and(|t| t <= now) {
                self.timers[i] = None;
                match i {
                    x if x == Timer::Hello as usize => {
                        if self.state == State::AwaitHello {
                            self.close(SessionEnd::Timeout { during: "the hello (no BZFS0221 answer)" });
                        }
                    }
                    x if x == Timer::Join as usize => {
                        if !matches!(self.state, State::Joined | State::Closed) {
                            let during = self.state.describe();
                            self.close(SessionEnd::Timeout { during });
                        }
                    }
                    x if x == Timer::Idle as usize => self.on_idle_timer(now),
                    _ => self.on_udp_retry(now),
                }
            }
        }
    }

    // ---------------------------------------------------------------- commands

    /// Sends a chat line to `to` (a player id, [`player::ALL_PLAYERS`], or 251 − team for team chat). Text
    /// longer than 127 bytes is cut. Lines starting with `/` are server commands.
    pub fn send_chat(&mut self, to: u8, text: &str) {
        if self.state != State::Joined {
            return;
        }
        let mut t = text.to_string();
        if t.len() > 127 {
            let mut cut = 127;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
        }
        self.send_tcp(&ClientMsg::Message { to, text: t });
    }

    /// Sends any client message on the channel the protocol wants for it (UDP for updates and shots when the
    /// link is up, TCP otherwise).
    pub fn send(&mut self, msg: &ClientMsg) {
        if self.state == State::Closed {
            return;
        }
        let udp_ok = self.udp == Udp::Up
            && matches!(
                msg.code(),
                code::PLAYER_UPDATE | code::PLAYER_UPDATE_SMALL | code::SHOT_BEGIN | code::SHOT_END | code::GM_UPDATE
            );
        let bytes = msg.encode();
        if udp_ok && bytes.len() <= MAX_UDP_PACKET_LEN {
            self.transmits.push_back(Transmit { channel: Channel::Udp, bytes });
        } else {
            self.transmits.push_back(Transmit { channel: Channel::Tcp, bytes });
        }
    }

    /// Asks the server for `/lagstats` (every human player's lag and jitter as bzfs measures them, observers
    /// included). The reply's lines, for [`LAGSTATS_REPLY_WINDOW`], feed [`Session::net_stats`] instead of being
    /// reported as chat. Does nothing unless joined, or once the server has refused it (bzfs answers "You do not
    /// have permission to run the lagstats command" when the `lagStats` permission is taken from players; that
    /// answer is taken too, once).
    pub fn request_lag_stats(&mut self, now: Instant) {
        if self.state != State::Joined || self.lagstats_denied {
            return;
        }
        // Addressed to the server (bzfs runs a command whoever it is sent to): a `/lagstats` the user typed goes to
        // everybody, and a recording tells the two apart (see `record::replay`).
        self.send_tcp(&ClientMsg::Message { to: player::SERVER, text: "/lagstats".into() });
        self.lagstats_until = Some(now + LAGSTATS_REPLY_WINDOW);
        self.lagstats_asked = Some(now);
    }

    /// Once joined, end the session ([`SessionEnd::Timeout`], exit code 6) when no whole message arrives from the
    /// server for `limit` (`None`, the default: never). `bzfs` sends every joined human player, observers
    /// included, `MsgGameTime` at least every 10 s (and `MsgLagPing` every 10 s), so a few times that tells a
    /// server that stopped answering from a quiet game. Robot players may get nothing at all in a quiet game:
    /// leave it off for them. A server that drips a byte now and then without completing a message is caught
    /// too.
    pub fn set_idle_timeout(&mut self, now: Instant, limit: Option<Duration>) {
        self.idle_timeout = limit;
        match limit {
            Some(l) if self.state == State::Joined => {
                let from = self.last_heard.unwrap_or(now);
                self.set_timer(Timer::Idle, from + l);
            }
            _ => self.timers[Timer::Idle as usize] = None,
        }
    }

    /// Leaves: sends `MsgExit`. The session then closes with [`SessionEnd::Left`] (when the server closes, or
    /// at once if the connection is not joined yet).
    pub fn leave(&mut self, _now: Instant) {
        if self.state == State::Closed || self.leaving {
            return;
        }
        self.leaving = true;
        if self.state == State::Joined || self.state == State::AwaitAccept {
            self.send_tcp(&ClientMsg::Exit);
        }
        self.close(SessionEnd::Left);
    }

    // ---------------------------------------------------------------- internals

    fn set_timer(&mut self, t: Timer, at: Instant) {
        self.timers[t as usize] = Some(at);
    }

    fn send_raw(&mut self, bytes: Vec<u8>) {
        self.transmits.push_back(Transmit { channel: Channel::Tcp, bytes });
    }

    fn send_tcp(&mut self, msg: &ClientMsg) {
        trace!(code = %describe_code(msg.code()), "send tcp");
        self.send_raw(msg.encode());
    }

    fn send_udp(&mut self, msg: &ClientMsg) {
        self.transmits.push_back(Transmit { channel: Channel::Udp, bytes: msg.encode() });
    }

    fn warn(&mut self, message: String) {
        debug!(%message, "protocol warning");
        self.warnings += 1;
        self.events.push_back(Event::Warning { message });
    }

    /// Keeps the run of server messages to us that came over TCP with no other message after them: bzfs sends a
    /// kicked player its reasons and then, at once, `MsgSuperKill` (a shutdown sends the kill alone).
    fn note_kick_text(&mut self, now: Instant, msg: &ServerMsg) {
        match msg {
            ServerMsg::Message { from: player::SERVER, to, text, .. }
                if *to == player::ALL_PLAYERS || Some(*to) == self.game.my_id =>
            {
                if self.kick_text.len() >= KICK_TEXT_LINES {
                    self.kick_text.pop_front();
                }
                self.kick_text.push_back((now, text.clone()));
            }
            // The server's lines to others (its admin channel) come between a kicked player's lines and the kill.
            ServerMsg::Message { from: player::SERVER, .. } | ServerMsg::SuperKill => {}
            _ => self.kick_text.clear(),
        }
    }

    /// What a `MsgSuperKill` arriving now was about: the server's lines sent right before it, or `None` when it
    /// came alone (a shutdown).
    fn kick_reason(&mut self, now: Instant) -> Option<String> {
        let lines: Vec<String> = self
            .kick_text
            .drain(..)
            .filter(|(at, _)| now.saturating_duration_since(*at) <= KICK_TEXT_AGE)
            .map(|(_, text)| text.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect();
        (!lines.is_empty()).then(|| lines.join("; "))
    }

    fn close(&mut self, end: SessionEnd) {
        if self.state == State::Closed {
            return;
        }
        debug!(%end, "session closed");
        self.state = State::Closed;
        self.timers = [None; TIMERS];
        match &end {
            SessionEnd::Rejected { code, reason } => {
                self.events.push_back(Event::Reject { code: *code, reason: reason.clone() })
            }
            SessionEnd::Kicked { reason } => self.events.push_back(Event::Kicked { reason: reason.clone() }),
            _ => {}
        }
        self.events.push_back(Event::Closed { reason: end.clone() });
        self.end = Some(end);
    }

    /// Fails early when the first bytes cannot be the start of a hello (a web server, an old server).
    fn check_hello_prefix(&mut self) {
        let n = self.frames.buffered().min(8);
        if n == 0 {
            return;
        }
        // Peek without consuming: take and put back is not possible, so compare via a copy.
        let mut probe = FrameBuffer::new();
        std::mem::swap(&mut probe, &mut self.frames);
        let head = probe.take_raw(probe.buffered()).unwrap_or_default();
        self.frames.push(&head);
        if head.get(..n) != SERVER_VERSION.get(..n) && head.get(..n) != b"REFUSED:".get(..n) {
            self.close(SessionEnd::Protocol(HelloError::bad_start(&head).into()));
        }
    }

    fn on_hello(&mut self, now: Instant, hello: &[u8]) {
        let version = hello.get(..8).unwrap_or_default();
        if version == b"REFUSED:" {
            let rest = self.frames.take_raw(self.frames.buffered()).unwrap_or_default();
            let mut reason = String::from_utf8_lossy(hello.get(8..).unwrap_or_default()).into_owned();
            reason.push_str(&String::from_utf8_lossy(&rest));
            self.close(SessionEnd::Rejected { code: RejectCode::IpBanned, reason: reason.trim().to_string() });
            return;
        }
        if version != SERVER_VERSION {
            let e =
                if version.starts_with(b"BZFS") { HelloError::version(version) } else { HelloError::not_bzflag(hello) };
            self.close(SessionEnd::Protocol(e.into()));
            return;
        }
        let id = hello.get(8).copied().unwrap_or(player::SERVER_FULL);
        if id == player::SERVER_FULL {
            self.close(SessionEnd::ServerFull);
            return;
        }
        self.timers[Timer::Hello as usize] = None;
        self.game.my_id = Some(id);
        self.events.push_back(Event::Hello { id });
        if self.config.query_only {
            self.state = State::Querying;
            self.send_tcp(&ClientMsg::QueryGame);
            self.send_tcp(&ClientMsg::QueryPlayers);
            return;
        }
        if self.config.udp {
            self.udp = Udp::Requested { tries: 1 };
            self.send_udp(&ClientMsg::UdpLinkRequest { id });
            self.set_timer(Timer::UdpRetry, now + self.udp_retry_interval());
        }
        if self.config.full_join {
            self.state = State::Negotiating;
            let flags = KNOWN_FLAGS.iter().map(|f| Abbv::new(f)).collect();
            self.send_tcp(&ClientMsg::NegotiateFlags { flags });
        } else {
            self.send_enter(now);
        }
    }

    /// The idle timer is not moved on every message (a flood would re-arm it thousands of times a second): it
    /// fires at the old deadline and is put off to `last_heard + limit` when something arrived meanwhile.
    fn on_idle_timer(&mut self, now: Instant) {
        let (Some(limit), State::Joined) = (self.idle_timeout, self.state) else { return };
        let due = self.last_heard.unwrap_or(now) + limit;
        if due <= now {
            self.close(SessionEnd::Timeout { during: IDLE_TIMEOUT_DURING });
        } else {
            self.set_timer(Timer::Idle, due);
        }
    }

    fn udp_retry_interval(&self) -> Duration {
        self.config.udp_timeout / 3
    }

    fn on_udp_retry(&mut self, now: Instant) {
        match self.udp {
            Udp::Requested { tries } if tries < 3 => {
                if let Some(id) = self.game.my_id {
                    self.udp = Udp::Requested { tries: tries + 1 };
                    self.send_udp(&ClientMsg::UdpLinkRequest { id });
                    self.set_timer(Timer::UdpRetry, now + self.udp_retry_interval());
                }
            }
            Udp::Requested { .. } | Udp::Inbound => {
                self.udp = Udp::Failed;
                self.events
                    .push_back(Event::UdpLink { up: false, detail: "the UDP link did not come up; using TCP".into() });
            }
            _ => {}
        }
    }

    fn send_enter(&mut self, _now: Instant) {
        if self.config.world_only {
            self.leaving = true;
            self.close(SessionEnd::Left);
            return;
        }
        self.state = State::AwaitAccept;
        let c = &self.config;
        let m = ClientMsg::Enter {
            player_type: c.player_type,
            team: c.team,
            callsign: c.callsign.clone(),
            motto: c.motto.clone(),
            token: c.token.clone(),
            version: c.version.clone(),
        };
        self.send_tcp(&m);
    }

    fn on_frame(&mut self, now: Instant, code: u16, body: &[u8], via_udp: bool) {
        self.last_heard = Some(now);
        if self.config.lean
            && self.state == State::Joined
            && matches!(
                code,
                code::PLAYER_UPDATE | code::PLAYER_UPDATE_SMALL | code::SHOT_BEGIN | code::SHOT_END | code::GM_UPDATE
            )
        {
            return;
        }
        let msg = match ServerMsg::parse(code, body) {
            Ok(m) => m,
            Err(e) => {
                self.warn(format!("skipped a malformed {}: {e}", describe_code(code)));
                return;
            }
        };
        trace!(code = %describe_code(code), via_udp, "recv");
        if !via_udp {
            self.note_kick_text(now, &msg);
        }
        self.on_message(now, msg, via_udp);
    }

    /// A server line to us while a `/lagstats` reply is awaited: its lines feed [`Session::net_stats`], a refusal
    /// stops the asking; true when the line was taken (it is then not reported as chat).
    fn take_lagstats_reply(&mut self, now: Instant, to: u8, text: &str) -> bool {
        if self.lagstats_until.is_none_or(|t| now > t) || Some(to) != self.game.my_id {
            return false;
        }
        let game = &self.game;
        let id_of = |name: &str| game.players.values().find(|p| p.callsign == name).map(|p| p.id);
        if self.netstats.on_server_text(now, text, game.my_id, id_of) {
            if let Some(asked) = self.lagstats_asked.take() {
                self.netstats.on_command_answer(asked, now);
            }
            return true;
        }
        if text.starts_with("You do not have permission to run the lagstats command") {
            self.lagstats_denied = true;
            self.lagstats_until = None;
            return true;
        }
        false
    }

    fn on_query_message(&mut self, msg: ServerMsg) {
        use ServerMsg as M;
        let q = self.query.get_or_insert_with(Default::default);
        match msg {
            M::QueryGame(info) => q.game = Some(info),
            M::QueryPlayers { num_players, .. } => q.expected = Some(num_players as usize),
            M::TeamUpdate { teams } => q.teams = Some(teams),
            M::AddPlayer { id, player_type, team, wins, losses, team_kills, callsign, motto }
                if q.players.len() < 256 =>
            {
                q.players.push(QueryPlayer { id, callsign, motto, team, player_type, wins, losses, team_kills });
            }
            M::Reject { code, reason } => {
                self.close(SessionEnd::Rejected { code, reason });
                return;
            }
            M::SuperKill => {
                self.close(SessionEnd::Kicked { reason: String::new() });
                return;
            }
            _ => {}
        }
        let done = q.game.is_some() && q.teams.is_some() && q.expected.is_some_and(|n| q.players.len() >= n);
        if done {
            let q = self.query.take().unwrap_or_default();
            self.events.push_back(Event::QueryResult {
                game: q.game.unwrap_or_default(),
                teams: q.teams.unwrap_or_default(),
                players: q.players,
            });
            self.leaving = true;
            self.close(SessionEnd::Left);
        }
    }

    fn on_message(&mut self, now: Instant, msg: ServerMsg, via_udp: bool) {
        use ServerMsg as M;
        if self.state == State::Querying {
            self.on_query_message(msg);
            return;
        }
        if let M::Message { from: player::SERVER, to, text, .. } = &msg {
            if self.take_lagstats_reply(now, *to, text) {
                return;
            }
        }
        match msg {
            // ---- handshake
            M::UdpLinkEstablished if !via_udp => {
                if let Udp::Requested { .. } = self.udp {
                    self.udp = Udp::Inbound;
                }
            }
            M::UdpLinkRequest if via_udp => self.on_udp_probe(),
            M::NegotiateFlags { missing } => self.on_negotiated(&missing),
            M::GameSettings(s) => {
                self.game.settings = Some(s);
                self.events.push_back(Event::Settings(s));
                if self.state == State::AwaitSettings {
                    self.state = State::AwaitHash;
                    self.send_tcp(&ClientMsg::WantWHash);
                }
            }
            M::CacheUrl { url } => self.events.push_back(Event::CacheUrl { url }),
            M::WantWHash { kind, hash } => self.on_world_hash(now, kind, hash),
            M::GetWorld { bytes_left, data } => self.on_world_chunk(now, bytes_left, data),
            M::Accept { id } => self.on_accept(now, id),
            M::Reject { code, reason } => self.close(SessionEnd::Rejected { code, reason }),
            M::SuperKill => {
                let end = match self.kick_reason(now) {
                    Some(reason) => SessionEnd::Kicked { reason },
                    None => SessionEnd::Shutdown,
                };
                self.close(end);
            }
            // ---- roster
            m @ (M::SetVar { .. }
            | M::TeamUpdate { .. }
            | M::AddPlayer { .. }
            | M::RemovePlayer { .. }
            | M::PlayerInfo { .. }
            | M::AdminInfo { .. }
            | M::Score { .. }
            | M::Handicap { .. }
            | M::NewRabbit { .. }
            | M::ScoreOver { .. }
            | M::TimeUpdate { .. }
            | M::GameTime { .. }) => self.on_roster_message(now, m),
            // ---- flags
            m @ (M::FlagUpdate { .. }
            | M::GrabFlag { .. }
            | M::DropFlag { .. }
            | M::TransferFlag { .. }
            | M::CaptureFlag { .. }
            | M::NearFlag { .. }
            | M::FlagType { .. }) => self.on_flag_message(now, m),
            // ---- play
            m @ (M::Alive { .. }
            | M::Killed { .. }
            | M::Teleport { .. }
            | M::Pause { .. }
            | M::AutoPilot { .. }
            | M::ShotBegin(..)
            | M::ShotEnd { .. }
            | M::GmUpdate { .. }
            | M::Message { .. }
            | M::LagPing { .. }
            | M::QueryGame(..)
            | M::QueryPlayers { .. }
            | M::FetchResources { .. }
            | M::CustomSound { .. }
            | M::ReplayReset { .. }) => self.on_play_message(now, m),
            M::PlayerUpdate(u) => self.on_player_update(now, u),
            M::UdpLinkEstablished | M::UdpLinkRequest => {}
            M::Reserved { code, .. } | M::Unknown { code, .. } => {
                self.warn(format!("ignored {} from the server", describe_code(code)));
            }
        }
        // Expired shots get no message: drop them now and then (not after every message: with hundreds of live
        // shots and thousands of messages a second that scan was most of a busy client's time).
        if self.game.shots.len() > 64
            && self.game.last_prune.is_none_or(|t| now.saturating_duration_since(t) >= PRUNE_EVERY)
        {
            self.game.prune_shots(now);
            self.game.last_prune = Some(now);
        }
    }

    /// The roster: variables, teams, players, scores and the clock.
    fn on_roster_message(&mut self, now: Instant, msg: ServerMsg) {
        use ServerMsg as M;
        match msg {
            M::SetVar { vars } => {
                let count = vars.len();
                for (n, v) in &vars {
                    self.game.vars.set(n, v);
                }
                self.netstats.set_vars(&self.game.vars);
                self.events.push_back(Event::SetVar { count, vars });
            }
            M::TeamUpdate { teams } => {
                for t in teams {
                    self.game.set_team(t);
                    self.events.push_back(Event::Team(t));
                }
            }
            M::AddPlayer { id, player_type, team, wins, losses, team_kills, callsign, motto } => {
                let p = self.game.player_mut(id);
                p.player_type = player_type;
                p.team = team;
                p.wins = wins;
                p.losses = losses;
                p.team_kills = team_kills;
                p.callsign = callsign.clone();
                p.motto = motto.clone();
                // Observers send no updates: no figures kept for them (a hundred observers each knowing a hundred
                // others would keep ten thousand empty tracks).
                if self.net_stats_on && team != Team::Observer {
                    self.netstats.on_join(id);
                } else {
                    self.netstats.on_leave(id);
                }
                self.events.push_back(Event::Join { id, callsign, team, player_type, motto, wins, losses, team_kills });
            }
            M::RemovePlayer { id } => {
                let callsign = self.game.players.remove(&id).map(|p| p.callsign).unwrap_or_default();
                self.netstats.on_leave(id);
                self.game.shots.retain(|(s, _), _| *s != id);
                self.events.push_back(Event::Leave { id, callsign });
            }
            M::PlayerInfo { players } => {
                for (id, bits) in players {
                    if let Some(p) = self.game.players.get_mut(&id) {
                        p.info_bits = bits;
                    }
                }
            }
            M::AdminInfo { players } => self.on_admin_info(players),
            M::Score { scores } => self.on_scores(scores),
            M::Handicap { players } => {
                for (id, h) in players {
                    self.game.player_mut(id).handicap = h;
                }
            }
            M::NewRabbit { id } => self.on_new_rabbit(id),
            M::ScoreOver { player, team } => {
                self.game.game_over = true;
                self.events.push_back(Event::GameOver { player, team });
            }
            M::TimeUpdate { seconds } => {
                self.game.time_left = Some((seconds, now));
                self.events.push_back(Event::TimeLeft { seconds });
            }
            M::GameTime { usec } => self.game.server_time = Some((usec, now)),
            // The other sections' messages are not passed here.
            _ => {}
        }
    }

    /// Flags: where they are and who holds them.
    fn on_flag_message(&mut self, now: Instant, msg: ServerMsg) {
        use ServerMsg as M;
        match msg {
            M::FlagUpdate { flags } => {
                for (index, info) in flags {
                    self.set_flag(now, index, info, None);
                    self.events.push_back(Event::Flag(FlagEvent::new(index, &info, info.abbv)));
                }
            }
            M::GrabFlag { player, index, flag } => {
                self.netstats.on_flag(player, Some(&flag.abbv.as_string()));
                self.set_flag(now, index, flag, Some(flag.abbv));
                let callsign = self.game.name_of(player);
                self.events.push_back(Event::Grab { player, callsign, flag: FlagEvent::new(index, &flag, flag.abbv) });
            }
            M::DropFlag { player, index, flag } => {
                self.netstats.on_flag(player, None);
                self.set_flag(now, index, flag, Some(flag.abbv));
                let callsign = self.game.name_of(player);
                self.events.push_back(Event::Drop { player, callsign, flag: FlagEvent::new(index, &flag, flag.abbv) });
            }
            M::TransferFlag { from, to, index, flag } => {
                self.netstats.on_flag(from, None);
                self.netstats.on_flag(to, Some(&flag.abbv.as_string()));
                self.set_flag(now, index, flag, Some(flag.abbv));
                self.events.push_back(Event::Transfer { from, to, flag: FlagEvent::new(index, &flag, flag.abbv) });
            }
            M::CaptureFlag { player, index, team } => self.on_capture(player, index, team),
            M::NearFlag { pos, name } => self.events.push_back(Event::NearFlag { pos, name }),
            M::FlagType { abbv, name, .. } if self.game.custom_flags.len() < 256 => {
                self.game.custom_flags.push((abbv, name));
            }
            // A custom flag type beyond the 256 kept; the other sections' messages are not passed here.
            _ => {}
        }
    }

    /// Play: spawns, kills, moves, shots and chat (player updates: `on_player_update`).
    fn on_play_message(&mut self, now: Instant, msg: ServerMsg) {
        use ServerMsg as M;
        match msg {
            M::Alive { id, pos, azimuth } => self.on_alive(id, pos, azimuth),
            M::Killed { victim, killer, reason, shot_id, flag, phydrv } => {
                if let Some(p) = self.game.players.get_mut(&victim) {
                    p.alive = false;
                }
                // A stopped shot ends with the kill (all but laser, thief and shock wave).
                if shot_id >= 0 && !matches!(flag.as_string().as_str(), "L" | "TH" | "SW") {
                    self.game.shots.remove(&(killer, shot_id as u16));
                }
                let (victim_callsign, killer_callsign) = (self.game.name_of(victim), self.game.name_of(killer));
                let reason_code = reason;
                let reason = super::consts::kill_reason::name(reason);
                let kill = Event::Kill {
                    victim,
                    victim_callsign,
                    killer,
                    killer_callsign,
                    reason,
                    reason_code,
                    shot_id,
                    flag,
                    phydrv,
                };
                self.events.push_back(kill);
            }
            M::Teleport { player, from, to } => {
                self.netstats.on_teleport(player);
                let callsign = self.game.name_of(player);
                self.events.push_back(Event::Teleport { player, callsign, from, to });
            }
            M::Pause { player, paused } => {
                self.game.player_mut(player).paused = paused;
                let callsign = self.game.name_of(player);
                self.events.push_back(Event::Pause { player, callsign, paused });
            }
            M::AutoPilot { player, on } => {
                self.game.player_mut(player).autopilot = on;
                let callsign = self.game.name_of(player);
                self.events.push_back(Event::AutoPilot { player, callsign, on });
            }
            M::ShotBegin(f) => {
                self.game.add_shot(f, now);
                self.events.push_back(Event::ShotBegin(f));
            }
            M::ShotEnd { shooter, shot_id, reason } => {
                self.game.shots.remove(&(shooter, shot_id as u16));
                self.events.push_back(Event::ShotEnd { shooter, shot_id, reason });
            }
            M::GmUpdate { shot, target } => {
                if let Some(s) = self.game.shots.get_mut(&(shot.shooter, shot.shot_id)) {
                    s.gm_update = Some((shot, now, target));
                }
            }
            M::Message { from, to, kind, text } => {
                let from_callsign = self.game.name_of(from);
                let to_name = self.game.name_of(to);
                self.events.push_back(Event::Chat { from, from_callsign, to, to_name, action: kind == 1, text });
            }
            // Echo over TCP (the client's UDP list does not include it).
            M::LagPing { seq } if self.state == State::Joined => self.send_tcp(&ClientMsg::LagPing { seq }),
            // Asked for while joined (`Session::send(&ClientMsg::QueryGame)`): team sizes and limits.
            M::QueryGame(info) => self.game.limits = Some((info, now)),
            M::QueryPlayers { .. } => {}
            M::FetchResources { items } => self.events.push_back(Event::Resources { count: items.len() }),
            M::CustomSound { .. } => {}
            M::ReplayReset { last_player } => {
                self.game.players.retain(|id, _| *id >= last_player);
                self.game.flags.clear();
            }
            // A lag ping before the join; the other sections' messages are not passed here.
            _ => {}
        }
    }

    // ---- handshake

    /// The server's UDP probe (`MsgUDPLinkRequest` over UDP): answer it; the link is up both ways.
    fn on_udp_probe(&mut self) {
        if matches!(self.udp, Udp::Requested { .. } | Udp::Inbound | Udp::Failed) {
            self.send_udp(&ClientMsg::UdpLinkEstablished);
            if self.udp != Udp::Up {
                self.udp = Udp::Up;
                self.timers[Timer::UdpRetry as usize] = None;
                self.events.push_back(Event::UdpLink { up: true, detail: "UDP link established".into() });
            }
        }
    }

    fn on_negotiated(&mut self, missing: &[Abbv]) {
        if !missing.is_empty() {
            let list: Vec<String> = missing.iter().map(|a| a.as_string()).collect();
            self.warn(format!("the server may use flags we do not know: {}", list.join(", ")));
        }
        if self.state == State::Negotiating {
            self.state = State::AwaitSettings;
            self.send_tcp(&ClientMsg::WantSettings);
        }
    }

    fn on_accept(&mut self, now: Instant, id: u8) {
        if self.state == State::AwaitAccept {
            self.state = State::Joined;
            self.timers[Timer::Join as usize] = None;
            if let Some(l) = self.idle_timeout {
                self.set_timer(Timer::Idle, now + l);
            }
            self.game.my_id = Some(id);
            self.events.push_back(Event::Accept { id });
        } else {
            self.warn("unexpected MsgAccept".into());
        }
    }

    // ---- roster

    fn on_admin_info(&mut self, players: Vec<super::msg::AdminEntry>) {
        for e in players {
            if let Some(p) = self.game.players.get_mut(&e.id) {
                p.address = match (e.ip_version, e.addr.as_slice()) {
                    (4, [a, b, c, d]) => Some(std::net::Ipv4Addr::new(*a, *b, *c, *d).into()),
                    _ => None,
                };
            }
        }
    }

    fn on_scores(&mut self, scores: Vec<super::msg::ScoreEntry>) {
        for s in scores {
            let p = self.game.player_mut(s.id);
            p.wins = s.wins;
            p.losses = s.losses;
            p.team_kills = s.team_kills;
            self.events.push_back(Event::Score { id: s.id, wins: s.wins, losses: s.losses, team_kills: s.team_kills });
        }
    }

    fn on_new_rabbit(&mut self, id: u8) {
        let old = self.game.rabbit.replace(id);
        for p in self.game.players.values_mut() {
            if p.team == Team::Rabbit || Some(p.id) == old {
                p.team = Team::Hunter;
            }
        }
        if let Some(p) = self.game.players.get_mut(&id) {
            p.team = Team::Rabbit;
        }
        self.events.push_back(Event::NewRabbit { id });
    }

    // ---- flags

    fn on_capture(&mut self, player: u8, index: u16, team: Team) {
        let abbv = self.game.flags.get(&index).map(|f| f.abbv()).unwrap_or_default();
        if let Some(p) = self.game.players.get_mut(&player) {
            p.flag = None;
        }
        // Every player of the captured team is dead on the server (no MsgKilled is sent).
        let captured = team_of_flag(abbv);
        if let Some(ct) = captured {
            for p in self.game.players.values_mut() {
                if p.team == ct {
                    p.alive = false;
                }
            }
        }
        let callsign = self.game.name_of(player);
        self.events.push_back(Event::Capture { player, callsign, index, abbv, team });
    }

    // ---- play

    fn on_alive(&mut self, id: u8, pos: [f32; 3], azimuth: f32) {
        let p = self.game.player_mut(id);
        p.alive = true;
        p.paused = false;
        p.spawn = Some((pos, azimuth));
        p.last_update = None;
        self.netstats.on_spawn(id);
        let callsign = self.game.name_of(id);
        self.events.push_back(Event::Spawn { id, callsign, pos, azimuth });
    }

    /// A player's update: kept (and reported) when it is newer than the last one kept.
    fn on_player_update(&mut self, now: Instant, u: super::msg::PlayerUpdate) {
        if self.net_stats_on && self.game.players.contains_key(&u.id) {
            self.netstats.on_update(now, &u);
        }
        let accepted = match self.game.players.get_mut(&u.id) {
            Some(p) => {
                let newer = p.last_update.is_none_or(|(last, _)| u.order > last.order);
                if newer {
                    p.last_update = Some((u, now));
                    if u.status.contains(PlayerStatus::ALIVE) {
                        p.alive = true;
                    }
                    p.paused = u.status.contains(PlayerStatus::PAUSED);
                }
                newer
            }
            None => false,
        };
        if accepted {
            self.events.push_back(Event::Update(u));
        }
    }

    fn set_flag(&mut self, now: Instant, index: u16, info: super::msg::FlagInfo, revealed: Option<Abbv>) {
        if !self.game.set_flag(index, info, revealed, now) {
            self.warn(format!("flag index {index} is beyond the {} we keep", super::game::MAX_FLAGS));
        }
    }

    fn on_world_hash(&mut self, now: Instant, kind: u8, hash: String) {
        if self.state != State::AwaitHash {
            return;
        }
        let hash = hash.to_ascii_lowercase();
        if hash.len() != 32 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            self.warn(format!("the server sent a malformed world hash {hash:?}; downloading the world"));
            self.world_hash = None;
            self.state = State::Downloading;
            self.send_tcp(&ClientMsg::GetWorld { offset: 0 });
            return;
        }
        let _ = kind;
        self.world_hash = Some(hash.clone());
        self.state = State::AwaitCache;
        self.world_requests.push_back(WorldRequest::Lookup { hash });
        let _ = now;
    }

    fn on_world_chunk(&mut self, now: Instant, bytes_left: u32, data: Vec<u8>) {
        if self.state != State::Downloading {
            self.warn("unexpected MsgGetWorld chunk".into());
            return;
        }
        let offset = self.world.len();
        if offset == 0 {
            self.world_md5 = Md5::new();
        }
        // bytesLeft = total − offset (this chunk included) for every chunk but the last, where it is 0.
        if bytes_left != 0 {
            let total = offset.saturating_add(bytes_left as usize);
            if total > MAX_WORLD_BYTES {
                self.close(SessionEnd::Protocol(WorldError::Announced { total }.into()));
                return;
            }
            if data.is_empty() {
                self.close(SessionEnd::Protocol(WorldError::EmptyChunk { offset, bytes_left }.into()));
                return;
            }
            if self.world_total.is_none() || offset == 0 {
                // One allocation of the announced size (pages are only touched as chunks arrive) instead of a
                // doubling buffer that would end at twice the world's size.
                self.world.reserve_exact(total.saturating_sub(offset));
            }
            self.world_total = Some(total);
        }
        if offset + data.len() > MAX_WORLD_BYTES {
            self.close(SessionEnd::Protocol(WorldError::TooLarge.into()));
            return;
        }
        self.world.extend_from_slice(&data);
        self.world_md5.update(&data);
        if bytes_left != 0 {
            self.send_tcp(&ClientMsg::GetWorld { offset: self.world.len() as u32 });
            return;
        }
        let blob = std::mem::take(&mut self.world);
        let got = hex_digest(&std::mem::take(&mut self.world_md5).finalize());
        if let Some(h) = &self.world_hash {
            if &got != h {
                let e = WorldError::Corrupt { bytes: blob.len(), md5: got, announced: h.clone() };
                self.close(SessionEnd::Protocol(e.into()));
                return;
            }
            self.world_requests.push_back(WorldRequest::Store { hash: h.clone(), blob: blob.clone() });
        }
        self.events.push_back(Event::World { hash: got, bytes: blob.len(), cached: false });
        self.world_blob = Some(blob);
        self.send_enter(now);
    }
}

/// The team whose flag this is (`R*` → red), if it is a team flag.
pub fn team_of_flag(a: Abbv) -> Option<Team> {
    match &a.0 {
        b"R*" => Some(Team::Red),
        b"G*" => Some(Team::Green),
        b"B*" => Some(Team::Blue),
        b"P*" => Some(Team::Purple),
        _ => None,
    }
}

/// MD5 of `bytes` as 32 lower-case hex digits (the form of a world hash).
pub fn md5_hex(bytes: &[u8]) -> String {
    hex_digest(&Md5::digest(bytes))
}

fn hex_digest(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(32);
    for byte in digest.iter() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests;
