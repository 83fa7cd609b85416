//! The only code in bzhead that does I/O: one `mio::Poll` owns every socket and timer.
//!
//! A [`Reactor`] runs any number of BZFlag sessions at once (a slab of them). Each turn it waits for readiness or
//! the earliest engine deadline, reads the clock once, drains every ready socket until `WouldBlock` into one
//! reused 64 KiB buffer, fires the due timers, and then drains each touched engine's outputs: bytes to send (a
//! bounded write queue with `WRITABLE` interest only while bytes are queued), world-cache requests, events, and
//! its next deadline.
//!
//! Sockets and timers are kept in slabs keyed by `mio::Token`, with a [`Source`] telling what each token is, so
//! that other engines can register their own UDP sockets and timers on the same poll: [`crate::query::Scan`]s
//! ([`Reactor::add_scan`]) get one unconnected UDP socket per address family and their deadline in the poll timeout,
//! and their built-in `bzflag` queries run as query-only sessions here (see the `scan_io` submodule).
//!
//! Every input an engine gets can be written to a recording ([`crate::record`]).
//!
//! The clock read once a turn is game time ([`Clock`]): real time by default, K times as fast with
//! [`ReactorOptions::time_scale`] (for a `bzfs` run under `faketime -f '+0 xK'`, see `docs/time-warp.md`). Every
//! `now` handed out and every deadline is game time; the poll's wait is converted back to real time (wait / K, to
//! the microsecond).
//!
//! Work whose size a peer controls does not run in a turn: world-cache reads and writes, and the jobs of
//! [`Reactor::submit`] (the bot host models worlds there), run on one worker thread whose results come back
//! through the poll (its `mio::Waker`). At most [`MAX_WORLDS_IN_FLIGHT`] sessions fetch a world at once.
//! [`Reactor::longest_turn`] tells the longest time a turn spent working.
//!
//! `unsafe` is denied here except in `scan_io::batch` (the `recvmmsg`/`sendmmsg` calls), see `docs/unsafe.md`.
#![deny(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;
use tracing::{debug, warn};

use crate::bzflag::event::Event;
use crate::bzflag::session::{Channel, ConnectError, Session, SessionConfig, WorldRequest};
use crate::cache::WorldCache;
use crate::record::{Kind, Meta, Recorder};

#[forbid(unsafe_code)]
mod clock;
#[forbid(unsafe_code)]
mod http;
#[forbid(unsafe_code)]
mod lines;
mod scan_io;
#[forbid(unsafe_code)]
mod udp_service;
#[forbid(unsafe_code)]
mod worker;
pub use clock::{Clock, TIME_SCALE_RANGE};
pub use http::{HttpConnId, HttpEvent, HttpListenerId, HTTP_ACCEPT_BUDGET, HTTP_READ_BUDGET};
pub use lines::{Line, LineConnId, LineEvent, LineLimits, LineListenerId, LINE_ACCEPT_BUDGET};
pub use scan_io::{ScanId, MAX_QUERY_UDP_QUEUE, QUERY_RECV_BUFFER, QUERY_SEND_BUFFER};
pub use udp_service::{Outbox, UdpService, UdpServiceId, UdpTransmit, MAX_UDP_SERVICE_QUEUE, UDP_SERVICE_BUDGET};
pub use worker::{JobId, JobPanicked, JobResult, Lane};

/// Time allowed for a TCP connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Most bytes queued for one TCP connection before the session is dropped (the server is not reading).
pub const MAX_WRITE_QUEUE: usize = 1 << 20;
/// Reads (of up to 64 KiB) of one socket per turn before the others get their turn, so that a server that floods
/// cannot starve the rest: under a full loopback flood a real join on the same reactor still completes in about a
/// second and a half in a debug build.
pub const READ_BUDGET: usize = 8;
/// How long a clean leave waits for the server to close after `MsgExit`.
pub const LINGER: Duration = Duration::from_secs(1);
/// Most datagrams queued for one UDP socket while the kernel buffer is full; older ones are dropped.
pub const MAX_UDP_QUEUE: usize = 64;
/// Most sessions fetching a world (from the cache or the server) at once; the others wait their turn before
/// their cache lookup is answered. With worlds of up to [`crate::bzflag::session::MAX_WORLD_BYTES`] (32 MiB)
/// this bounds the memory of world downloads to 128 MiB however many sessions run.
pub const MAX_WORLDS_IN_FLIGHT: usize = 4;
/// Most bytes of worlds queued for the cache writer; a world stored beyond it is not cached (one copy of each
/// world waits for the disk, so many sessions bringing new worlds cannot pile them up in memory).
pub const MAX_PENDING_STORE_BYTES: usize = 64 * 1024 * 1024;

const WAKER_TOKEN: Token = Token(usize::MAX - 1);

/// Identifies a session on a reactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub usize);

/// What a cache store job gives back: the bytes it held.
struct StoreDone(usize);

/// What a token stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A session's TCP connection.
    BzTcp(SessionId),
    /// A session's UDP socket.
    BzUdp(SessionId),
    /// A scan's query socket (`true`: the IPv6 one).
    QueryUdp(ScanId, bool),
    /// An HTTP listener (see [`Reactor::add_http_listener`]).
    HttpListen(usize),
    /// An HTTP connection.
    HttpConn(usize),
    /// A line listener (see [`Reactor::add_line_listener`]).
    LineListen(usize),
    /// A line connection.
    LineConn(usize),
    /// A UDP service's socket: the service and the socket's index (see [`Reactor::add_udp_service`]).
    UdpService(usize, usize),
}

/// Per-session options of the driver (not of the engine).
#[derive(Debug, Default)]
pub struct SessionOptions {
    /// Write a recording of the session here.
    pub record: Option<PathBuf>,
    /// Write a BZFlag `.rec` recording of the session here ([`crate::record::RecWriter`]).
    pub rec: Option<PathBuf>,
    /// Use this world cache (None: no cache).
    pub cache: Option<WorldCache>,
    /// Cap on the recording's size in bytes (None: [`crate::record::DEFAULT_MAX_RECORD_BYTES`]); past it the
    /// recording stops with a [`Event::Warning`] and the session goes on.
    pub record_max_bytes: Option<u64>,
}

struct Conn {
    session: Session,
    server: SocketAddr,
    tcp: TcpStream,
    tcp_token: Token,
    connected: bool,
    connect_deadline: Option<Instant>,
    udp: Option<(UdpSocket, Token)>,
    udp_queue: VecDeque<Vec<u8>>,
    wq: Vec<u8>,
    wq_sent: usize,
    writable_interest: bool,
    recorder: Option<Recorder>,
    cache: Option<WorldCache>,
    armed: Option<Instant>,
    done: bool,
    udp_dropped: u64,
    started: Instant,
    record_error: Option<String>,
    /// After a clean leave: until when we keep reading (and discarding) so that the server processes our
    /// `MsgExit` before the socket closes. Closing with unread data would send a reset instead.
    linger: Option<Instant>,
    /// When the TCP connection was established.
    connected_at: Option<Instant>,
    /// The scan query this session answers (built-in TCP queries), whose events go to the scan.
    owner: Option<scan_io::Owner>,
}

/// The event loop. See the module documentation.
pub struct Reactor {
    poll: Poll,
    events: Events,
    sources: Slab<Source>,
    conns: Slab<Conn>,
    timers: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    seq: u64,
    buf: Vec<u8>,
    out: VecDeque<(SessionId, Instant, Event)>,
    waker: Arc<Waker>,
    /// Sources that still had data when their read budget ran out; they are read again next turn without waiting
    /// (mio is edge-triggered, so no new event would come for data already there).
    backlog: Vec<Token>,
    scans: Slab<scan_io::ScanConn>,
    scan_out: VecDeque<(ScanId, Instant, crate::query::ScanEvent)>,
    /// Cache reads and writes and the jobs of [`Reactor::submit`], off the loop.
    worker: worker::Worker,
    /// Cache lookups in flight: the session (key and start, so that a reused slot is not answered).
    lookups: std::collections::HashMap<JobId, (usize, Instant)>,
    /// Finished jobs of [`Reactor::submit`], for [`Reactor::poll_job`].
    jobs_done: VecDeque<(JobId, JobResult)>,
    /// The longest time one turn spent working (not waiting), see [`Reactor::longest_turn`].
    longest_turn: Duration,
    /// Sessions fetching a world (key and start), at most [`MAX_WORLDS_IN_FLIGHT`].
    worlds_in_flight: Vec<(usize, Instant)>,
    /// Sessions whose cache lookup waits for a place in `worlds_in_flight`.
    worlds_waiting: VecDeque<(usize, Instant, String)>,
    /// True while [`Reactor::admit_worlds`] runs (it pumps sessions, which may call it again).
    admitting: bool,
    /// Bytes of worlds queued for the cache writer.
    pending_store_bytes: usize,
    /// The time the last turn spent working.
    last_turn: Duration,
    http: http::HttpSide,
    /// Game time (see [`Clock`]).
    clock: Clock,
    lines: lines::LineSide,
    udp_services: udp_service::UdpServices,
}

/// Options of a [`Reactor`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReactorOptions {
    /// How many times as fast as real time the reactor's clock runs (default 1; 1/64 to 64, see
    /// [`TIME_SCALE_RANGE`]): for sessions on a `bzfs` that runs under `faketime -f '+0 xK'`. See [`Clock`].
    pub time_scale: f64,
}

impl Default for ReactorOptions {
    fn default() -> Self {
        ReactorOptions { time_scale: 1.0 }
    }
}

impl Reactor {
    /// A new reactor on real time.
    pub fn new() -> io::Result<Reactor> {
        Reactor::with_options(ReactorOptions::default())
    }

    /// A new reactor with `options`; fails (`InvalidInput`) on a time scale out of [`TIME_SCALE_RANGE`].
    pub fn with_options(options: ReactorOptions) -> io::Result<Reactor> {
        let clock = Clock::scaled(options.time_scale)?;
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER_TOKEN)?);
        Ok(Reactor {
            worker: worker::Worker::new(waker.clone()),
            poll,
            events: Events::with_capacity(1024),
            sources: Slab::new(),
            conns: Slab::new(),
            timers: BinaryHeap::new(),
            seq: 0,
            buf: vec![0; 64 * 1024],
            out: VecDeque::new(),
            waker,
            backlog: Vec::new(),
            scans: Slab::new(),
            scan_out: VecDeque::new(),
            lookups: std::collections::HashMap::new(),
            jobs_done: VecDeque::new(),
            longest_turn: Duration::ZERO,
            last_turn: Duration::ZERO,
            worlds_in_flight: Vec::new(),
            worlds_waiting: VecDeque::new(),
            admitting: false,
            pending_store_bytes: 0,
            http: http::HttpSide::default(),
            lines: lines::LineSide::default(),
            udp_services: udp_service::UdpServices::default(),
            clock,
        })
    }

    /// The game time now ([`Clock::now`]): what the reactor's engines, timers and events are on. At a time scale
    /// of 1 it is `Instant::now()`.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// The reactor's clock (a copy, to convert between game time and real time).
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// How many times as fast as real time the reactor's clock runs.
    pub fn time_scale(&self) -> f64 {
        self.clock.scale()
    }

    /// Changes the time scale from now on ([`Clock::set_scale`]): game time goes on from where it is; deadlines
    /// already set keep their game time. Fails (`InvalidInput`, nothing changed) out of [`TIME_SCALE_RANGE`].
    pub fn set_time_scale(&mut self, scale: f64) -> io::Result<()> {
        self.clock.set_scale(scale)
    }

    /// A waker that interrupts [`Reactor::turn`] from another thread (e.g. a stdin reader).
    pub fn waker(&self) -> Arc<Waker> {
        self.waker.clone()
    }

    /// Runs `job` on the reactor's worker thread (work whose size a peer controls, such as modelling a world,
    /// must not run in a turn of the loop). Jobs run one at a time, in order; when one finishes the poll is
    /// woken and its result waits for [`Reactor::poll_job`].
    pub fn submit(&mut self, job: impl FnOnce() -> JobResult + Send + 'static) -> JobId {
        self.worker.submit(job)
    }

    /// Runs `job` on the worker's `lane` (a thread of its own: a job that may block, such as a database write or
    /// an HTTP fetch, never holds up the main lane's). Its result comes back through [`Reactor::poll_job`] like
    /// those of [`Reactor::submit`].
    pub fn submit_on(&mut self, lane: Lane, job: impl FnOnce() -> JobResult + Send + 'static) -> JobId {
        self.worker.submit_on(lane, job)
    }

    /// A finished job of [`Reactor::submit`] (a job that panicked gives [`JobPanicked`]).
    pub fn poll_job(&mut self) -> Option<(JobId, JobResult)> {
        self.jobs_done.pop_front()
    }

    /// Jobs on the worker (submitted ones and cache reads and writes) not finished yet.
    pub fn jobs_pending(&self) -> usize {
        self.worker.pending()
    }

    /// The longest time a turn has spent working since the reactor started (or since
    /// [`Reactor::reset_longest_turn`]): from the end of the wait for readiness to the end of the turn.
    pub fn longest_turn(&self) -> Duration {
        self.longest_turn
    }

    /// The time the last turn spent working.
    pub fn last_turn(&self) -> Duration {
        self.last_turn
    }

    /// Starts [`Reactor::longest_turn`] afresh.
    pub fn reset_longest_turn(&mut self) {
        self.longest_turn = Duration::ZERO;
    }

    /// Starts a BZFlag session to `server`: a non-blocking connect, then the join.
    pub fn add_session(
        &mut self,
        server: SocketAddr,
        config: SessionConfig,
        options: SessionOptions,
    ) -> io::Result<SessionId> {
        let now = self.clock.now();
        // The connect and the handshake wait on the server's CPU and the network, which run in real time: on a
        // clock faster than real time their timeouts are their length in real time (K times as much game time).
        let slack = self.clock.scale().max(1.0);
        let mut config = config;
        config.hello_timeout = config.hello_timeout.mul_f64(slack);
        config.join_timeout = config.join_timeout.mul_f64(slack);
        config.udp_timeout = config.udp_timeout.mul_f64(slack);
        let recorder = Recorder::open(
            options.record.as_deref(),
            options.rec.as_deref(),
            &Meta::new(&server.to_string(), &config),
            now,
            options.record_max_bytes.unwrap_or(crate::record::DEFAULT_MAX_RECORD_BYTES),
        )?;
        let mut tcp = TcpStream::connect(server)?;
        let _ = tcp.set_nodelay(true);
        let entry = self.conns.vacant_entry();
        let id = SessionId(entry.key());
        let token = Token(self.sources.insert(Source::BzTcp(id)));
        if let Err(e) = self.poll.registry().register(&mut tcp, token, Interest::READABLE | Interest::WRITABLE) {
            self.sources.remove(token.0);
            return Err(e);
        }
        entry.insert(Conn {
            session: Session::new(config),
            server,
            tcp,
            tcp_token: token,
            connected: false,
            connect_deadline: Some(now + CONNECT_TIMEOUT.mul_f64(slack)),
            udp: None,
            udp_queue: VecDeque::new(),
            wq: Vec::new(),
            wq_sent: 0,
            writable_interest: true,
            recorder,
            cache: options.cache,
            armed: None,
            done: false,
            udp_dropped: 0,
            started: now,
            record_error: None,
            linger: None,
            connected_at: None,
            owner: None,
        });
        self.rearm(id.0);
        Ok(id)
    }

    /// The session, if it exists.
    pub fn session(&self, id: SessionId) -> Option<&Session> {
        self.conns.get(id.0).map(|c| &c.session)
    }

    /// A session's per-player network diagnostics ([`Session::net_stats`]), read in place (no copy of the
    /// engine): `reactor.net_stats(id).map(|n| n.snapshot(reactor.now()))`.
    pub fn net_stats(&self, id: SessionId) -> Option<&crate::bzflag::netstats::NetStats> {
        self.conns.get(id.0).map(|c| c.session.net_stats())
    }

    /// Asks a session's server for `/lagstats` ([`Session::request_lag_stats`]); the reply feeds
    /// [`Reactor::net_stats`].
    pub fn request_lag_stats(&mut self, id: SessionId) {
        let now = self.clock.now();
        if let Some(c) = self.conns.get_mut(id.0) {
            if let Some(r) = &mut c.recorder {
                // Replayed as the same request (a chat record to the server saying exactly "/lagstats").
                let mut d = vec![crate::bzflag::consts::player::SERVER];
                d.extend_from_slice(b"/lagstats");
                r.record(Kind::Chat, now, &d);
            }
            c.session.request_lag_stats(now);
        }
        self.pump(id.0, now);
    }

    /// When the session was added (its recording's time zero).
    pub fn started(&self, id: SessionId) -> Option<Instant> {
        self.conns.get(id.0).map(|c| c.started)
    }

    /// The recording's write error, if writing it failed.
    pub fn record_error(&self, id: SessionId) -> Option<&str> {
        self.conns.get(id.0).and_then(|c| c.record_error.as_deref())
    }

    /// UDP datagrams dropped because the socket's queue was full.
    pub fn udp_dropped(&self, id: SessionId) -> u64 {
        self.conns.get(id.0).map_or(0, |c| c.udp_dropped)
    }

    /// Ids of every session still on the reactor.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.conns.iter().map(|(k, _)| SessionId(k)).collect()
    }

    /// True when the session is over and its sockets are closed.
    pub fn is_done(&self, id: SessionId) -> bool {
        self.conns.get(id.0).is_none_or(|c| c.done)
    }

    /// True when every session and every scan is done, and the worker has nothing left to do.
    pub fn all_done(&self) -> bool {
        self.conns.iter().all(|(_, c)| c.done) && self.all_scans_done() && self.worker.pending() == 0
    }

    /// Removes a finished (or any) session, closing its sockets.
    pub fn remove_session(&mut self, id: SessionId) -> Option<Session> {
        if !self.conns.contains(id.0) {
            return None;
        }
        self.worlds_in_flight.retain(|&(k, _)| k != id.0);
        let mut c = self.conns.remove(id.0);
        self.close_sockets(&mut c);
        Some(c.session)
    }

    /// Sends chat through a session (recorded for replay).
    pub fn send_chat(&mut self, id: SessionId, to: u8, text: &str) {
        let now = self.clock.now();
        if let Some(c) = self.conns.get_mut(id.0) {
            if let Some(r) = &mut c.recorder {
                let mut d = vec![to];
                d.extend_from_slice(text.as_bytes());
                r.record(Kind::Chat, now, &d);
            }
            c.session.send_chat(to, text);
        }
        self.pump(id.0, now);
    }

    /// Leaves the game (`MsgExit`) and closes the session (recorded for replay).
    pub fn leave(&mut self, id: SessionId) {
        let now = self.clock.now();
        if let Some(c) = self.conns.get_mut(id.0) {
            if let Some(r) = &mut c.recorder {
                r.record(Kind::Leave, now, &[]);
            }
            c.session.leave(now);
        }
        self.pump(id.0, now);
    }

    /// Runs `f` on a session (commands that need no recording, e.g. a bot's controls), then sends what it
    /// produced.
    pub fn with_session<R>(&mut self, id: SessionId, f: impl FnOnce(&mut Session, Instant) -> R) -> Option<R> {
        let now = self.clock.now();
        let r = self.conns.get_mut(id.0).map(|c| f(&mut c.session, now));
        self.pump(id.0, now);
        r
    }

    /// The next event of any session, with the session and the time it happened.
    pub fn poll_event(&mut self) -> Option<(SessionId, Instant, Event)> {
        self.out.pop_front()
    }

    /// One turn of the loop: waits for readiness, the earliest deadline or `max_wait`, whichever comes first, then
    /// handles everything that is ready. Returns early when woken by the [`Reactor::waker`].
    ///
    /// Deadlines and `max_wait` are in game time ([`Reactor::now`]); the wait is converted to real time.
    pub fn turn(&mut self, max_wait: Option<Duration>) -> io::Result<()> {
        let now = self.clock.now();
        let next = [
            self.timers.peek().map(|Reverse((t, _, _))| *t),
            self.scans_deadline(),
            self.http_deadline(),
            self.udp_services_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
        .map(|t| t.saturating_duration_since(now));
        let timeout = match (next, max_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let timeout = if self.backlog.is_empty() { timeout } else { Some(Duration::ZERO) };
        self.wait(timeout.map(|t| self.clock.to_real(t)))?;
        // The one read of the clock for the rest of the turn.
        let real = Instant::now();
        let now = self.clock.at(real);
        self.take_jobs(now);
        let mut ready: Vec<(Token, bool, bool)> =
            self.events.iter().map(|e| (e.token(), e.is_readable() || e.is_read_closed(), e.is_writable())).collect();
        // Sockets whose peer closed: read them to the end (a short read must not stop before the close).
        let closed: Vec<Token> = self.events.iter().filter(|e| e.is_read_closed()).map(|e| e.token()).collect();
        // A backlogged source gets its one turn whether or not a new edge came for it too: reading it once per
        // entry would grow the backlog by one entry a turn under a flood (each call runs out of budget and queues
        // the token again), and with it the reads, events and memory of every turn.
        for t in self.backlog.drain(..) {
            match ready.iter_mut().find(|(r, _, _)| *r == t) {
                Some(r) => r.1 = true,
                None => ready.push((t, true, false)),
            }
        }
        let mut touched = Vec::new();
        for (token, readable, writable) in ready {
            if token == WAKER_TOKEN {
                continue;
            }
            // Sporadic events for removed sources are ignored.
            let Some(&source) = self.sources.get(token.0) else { continue };
            match source {
                Source::BzTcp(id) => {
                    self.on_tcp_ready(id.0, now, readable, writable, closed.contains(&token));
                    touched.push(id.0);
                }
                Source::BzUdp(id) => {
                    self.on_udp_ready(id.0, now, readable, writable);
                    touched.push(id.0);
                }
                Source::QueryUdp(id, v6) => self.on_query_udp_ready(id, v6, now, readable, writable),
                Source::HttpListen(id) => self.on_http_listener_ready(id, now),
                Source::HttpConn(key) => self.on_http_conn_ready(key, now, readable, writable),
                Source::LineListen(id) => self.on_line_listener_ready(id),
                Source::LineConn(key) => self.on_line_conn_ready(key, readable),
                Source::UdpService(id, i) => self.on_udp_service_ready(id, i, now, readable, writable),
            }
        }
        while let Some(Reverse((t, _, key))) = self.timers.peek().copied() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(c) = self.conns.get_mut(key) else { continue };
            if c.armed != Some(t) || c.done {
                continue; // stale
            }
            c.armed = None;
            if c.linger.is_some() {
                touched.push(key);
                continue;
            }
            if c.connect_deadline.is_some_and(|d| d <= now) && !c.connected {
                c.connect_deadline = None;
                let why = ConnectError::TimedOut { server: c.server, after: CONNECT_TIMEOUT };
                c.session.handle_connect_failed(now, why);
                if let Some(r) = &mut c.recorder {
                    r.record(Kind::ConnectFailed, now, b"timed out");
                }
            } else {
                if let Some(r) = &mut c.recorder {
                    r.record(Kind::Timeout, now, &[]);
                }
                c.session.handle_timeout(now);
            }
            touched.push(key);
        }
        touched.sort_unstable();
        touched.dedup();
        for key in touched {
            self.pump(key, now);
        }
        if !self.worlds_waiting.is_empty() {
            self.admit_worlds(now);
        }
        self.fire_scan_timers(now);
        self.reap_scan_sessions();
        self.fire_http_timers(now);
        self.fire_udp_service_timers(now);
        self.last_turn = real.elapsed();
        self.longest_turn = self.longest_turn.max(self.last_turn);
        Ok(())
    }

    /// Waits for readiness for up to `timeout` of real time. mio rounds a timeout up to whole milliseconds (a
    /// 4.125 ms wait, a 33 ms tick at K = 8, would take 5 ms); on a scaled clock the whole milliseconds are
    /// waited in the poll and the rest, when nothing came, in a sleep and a poll that does not wait, so that ticks
    /// keep their time to the microsecond and no wait becomes a busy poll. At K = 1 the poll waits as it always
    /// did.
    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let Some(t) = timeout.filter(|t| self.clock.scale() != 1.0 && t.subsec_nanos() % 1_000_000 != 0) else {
            return self.poll_once(timeout);
        };
        let started = Instant::now();
        let whole = Duration::from_millis(u64::try_from(t.as_millis()).unwrap_or(u64::MAX));
        if !whole.is_zero() {
            self.poll_once(Some(whole))?;
            if !self.events.is_empty() {
                return Ok(());
            }
        }
        let left = t.saturating_sub(started.elapsed());
        if !left.is_zero() {
            std::thread::sleep(left);
        }
        self.poll_once(Some(Duration::ZERO))
    }

    fn poll_once(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        loop {
            match self.poll.poll(&mut self.events, timeout) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Answers the cache lookups of waiting sessions while fewer than [`MAX_WORLDS_IN_FLIGHT`] fetch a world:
    /// from the cache on the worker, or a miss at once (the session then downloads).
    fn admit_worlds(&mut self, now: Instant) {
        if self.admitting {
            return;
        }
        self.admitting = true;
        let conns = &self.conns;
        self.worlds_in_flight.retain(|&(k, t)| conns.get(k).is_some_and(|c| c.started == t && !c.done));
        while self.worlds_in_flight.len() < MAX_WORLDS_IN_FLIGHT {
            let Some((key, started, hash)) = self.worlds_waiting.pop_front() else { break };
            let Some(c) = self.conns.get_mut(key).filter(|c| c.started == started && !c.done) else { continue };
            self.worlds_in_flight.push((key, started));
            match c.cache.clone() {
                Some(cache) => {
                    let id = self.worker.submit(move || Box::new(cache.load(&hash)));
                    self.lookups.insert(id, (key, started));
                }
                None => {
                    if let Some(r) = &mut c.recorder {
                        r.record(Kind::Cache, now, &[]);
                    }
                    c.session.handle_world_cache_verified(now, None);
                    self.pump(key, now);
                }
            }
        }
        self.admitting = false;
    }

    /// Takes the worker's finished jobs: cache lookups go to their sessions, the rest wait for
    /// [`Reactor::poll_job`].
    fn take_jobs(&mut self, now: Instant) {
        while let Some((id, result)) = self.worker.poll_done() {
            let Some((key, started)) = self.lookups.remove(&id) else {
                self.jobs_done.push_back((id, result));
                continue;
            };
            if let Some(stored) = result.downcast_ref::<StoreDone>() {
                self.pending_store_bytes = self.pending_store_bytes.saturating_sub(stored.0);
                continue;
            }
            let Some(c) = self.conns.get_mut(key).filter(|c| c.started == started && !c.done) else { continue };
            let blob = result.downcast::<Option<Vec<u8>>>().ok().and_then(|b| *b);
            if let Some(r) = &mut c.recorder {
                r.record(Kind::Cache, now, blob.as_deref().unwrap_or_default());
            }
            // WorldCache::load returned it only if its MD5 is the hash asked for.
            c.session.handle_world_cache_verified(now, blob);
            self.pump(key, now);
        }
    }

    /// Runs turns until every session is done or `deadline` (game time, [`Reactor::now`]) passes; events stay
    /// queued for [`Reactor::poll_event`]. Returns true when all sessions are done.
    pub fn run_until_done(&mut self, deadline: Instant) -> io::Result<bool> {
        while !self.all_done() {
            let now = self.clock.now();
            if now >= deadline {
                return Ok(false);
            }
            self.turn(Some(deadline - now))?;
        }
        Ok(true)
    }

    // ------------------------------------------------------------------ internals

    fn on_tcp_ready(&mut self, key: usize, now: Instant, readable: bool, writable: bool, peer_closed: bool) {
        let Some(c) = self.conns.get_mut(key) else { return };
        if c.done {
            return;
        }
        if c.linger.is_some() {
            if writable {
                flush_tcp(c);
            }
            // Read and discard until the server closes its side.
            loop {
                match c.tcp.read(&mut self.buf) {
                    Ok(0) => {
                        c.linger = Some(now);
                        break;
                    }
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        c.linger = Some(now);
                        break;
                    }
                }
            }
            return;
        }
        if !c.connected {
            // mio's connect procedure: an event, then take_error, then peer_addr.
            match c.tcp.take_error() {
                Ok(Some(e)) | Err(e) => {
                    fail_connect(c, now, &e);
                    return;
                }
                Ok(None) => {}
            }
            match c.tcp.peer_addr() {
                Ok(_) => {
                    c.connected = true;
                    c.connected_at = Some(now);
                    c.connect_deadline = None;
                    if let Some(r) = &mut c.recorder {
                        r.record(Kind::Connected, now, &[]);
                    }
                    c.session.handle_connected(now);
                }
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(e) => {
                    fail_connect(c, now, &e);
                    return;
                }
            }
        }
        if readable {
            let mut budget = READ_BUDGET;
            loop {
                if budget == 0 {
                    self.backlog.push(c.tcp_token);
                    break;
                }
                budget -= 1;
                match c.tcp.read(&mut self.buf) {
                    Ok(0) => {
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::TcpClosed, now, &[]);
                        }
                        c.session.handle_tcp_closed(now);
                        break;
                    }
                    Ok(n) => {
                        let data = &self.buf[..n];
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::TcpIn, now, data);
                        }
                        c.session.handle_tcp(now, data);
                        // A short read took everything there was; what arrives later raises a new edge, so the
                        // read that would only say WouldBlock is saved (a recv per ready socket per turn).
                        if c.session.is_closed() || (n < self.buf.len() && !peer_closed) {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        debug!(error = %e, "tcp read error");
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::TcpClosed, now, &[]);
                        }
                        c.session.handle_tcp_closed(now);
                        break;
                    }
                }
            }
        }
        if writable {
            flush_tcp(c);
        }
    }

    fn on_udp_ready(&mut self, key: usize, now: Instant, readable: bool, writable: bool) {
        let Some(c) = self.conns.get_mut(key) else { return };
        if c.done {
            return;
        }
        let Some((sock, token)) = &c.udp else { return };
        if readable {
            let mut budget = READ_BUDGET;
            loop {
                if budget == 0 {
                    self.backlog.push(*token);
                    break;
                }
                budget -= 1;
                match sock.recv(&mut self.buf) {
                    Ok(n) => {
                        let data = &self.buf[..n];
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::UdpIn, now, data);
                        }
                        c.session.handle_udp(now, data);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // ICMP errors (port unreachable) surface here on a connected UDP socket; they are not fatal.
                    Err(e) => {
                        debug!(error = %e, "udp recv error");
                        break;
                    }
                }
            }
        }
        if writable {
            flush_udp(c);
        }
    }

    /// Drains a session's outputs until it has nothing more to say, then re-arms its timer.
    fn pump(&mut self, key: usize, now: Instant) {
        loop {
            let Some(c) = self.conns.get_mut(key) else { return };
            let mut progressed = false;
            while let Some(t) = c.session.poll_transmit() {
                progressed = true;
                match t.channel {
                    Channel::Tcp => {
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::TcpOut, now, &t.bytes);
                        }
                        if c.wq.len() - c.wq_sent + t.bytes.len() > MAX_WRITE_QUEUE {
                            warn!(server = %c.server, "write queue full; dropping the connection");
                            c.session.handle_tcp_closed(now);
                            break;
                        }
                        c.wq.extend_from_slice(&t.bytes);
                    }
                    Channel::Udp => {
                        if c.udp.is_none() {
                            if let Err(e) = open_udp(&mut self.poll, &mut self.sources, c, SessionId(key)) {
                                if let Some(r) = &mut c.recorder {
                                    r.record(Kind::UdpUnavailable, now, e.to_string().as_bytes());
                                }
                                c.session.handle_udp_unavailable(now, &e.to_string());
                                continue;
                            }
                        }
                        if let Some(r) = &mut c.recorder {
                            r.record(Kind::UdpOut, now, &t.bytes);
                        }
                        if c.udp_queue.len() >= MAX_UDP_QUEUE {
                            c.udp_queue.pop_front();
                            c.udp_dropped += 1;
                        }
                        c.udp_queue.push_back(t.bytes);
                        flush_udp(c);
                    }
                }
            }
            while let Some(req) = c.session.poll_world_request() {
                progressed = true;
                match req {
                    // Answered when the session's turn comes (see admit_worlds).
                    WorldRequest::Lookup { hash } => self.worlds_waiting.push_back((key, c.started, hash)),
                    // The cache is written on the worker: a world file is up to 64 MiB.
                    WorldRequest::Store { hash, blob } => {
                        let Some(cache) = c.cache.clone() else { continue };
                        if self.pending_store_bytes + blob.len() > MAX_PENDING_STORE_BYTES {
                            debug!(server = %c.server, "the cache writer is behind; this world is not cached");
                            continue;
                        }
                        self.pending_store_bytes += blob.len();
                        let len = blob.len();
                        let id = self.worker.submit(move || {
                            if let Err(e) = cache.store(&hash, &blob) {
                                warn!(error = %e, "cannot store the world in the cache");
                            }
                            Box::new(StoreDone(len))
                        });
                        self.lookups.insert(id, (usize::MAX, c.started));
                    }
                }
            }
            let owned = c.owner.is_some();
            let mut owned_events = Vec::new();
            while let Some(e) = c.session.poll_event() {
                progressed = true;
                if matches!(e, Event::World { .. } | Event::Closed { .. }) {
                    // Its world is fetched (or never will be): the next session waiting gets its turn.
                    self.worlds_in_flight.retain(|&(k, _)| k != key);
                }
                if owned {
                    owned_events.push(e);
                } else {
                    self.out.push_back((SessionId(key), now, e));
                }
            }
            for e in owned_events {
                self.scan_session_event(key, now, e);
            }
            if !progressed {
                break;
            }
        }
        if !self.worlds_waiting.is_empty() && self.worlds_in_flight.len() < MAX_WORLDS_IN_FLIGHT {
            self.admit_worlds(now);
        }
        let Some(c) = self.conns.get_mut(key) else { return };
        if let Some(message) = c.recorder.as_mut().and_then(Recorder::take_stopped) {
            warn!(server = %c.server, "{message}");
            c.record_error = Some(message.clone());
            self.out.push_back((SessionId(key), now, Event::Warning { message }));
        }
        if c.connected {
            flush_tcp(c);
        }
        if c.session.is_closed() && !c.done {
            flush_tcp(c);
            if let Some((mut sock, token)) = c.udp.take() {
                let _ = self.poll.registry().deregister(&mut sock);
                self.sources.try_remove(token.0);
            }
            let clean = matches!(c.session.end(), Some(crate::bzflag::session::SessionEnd::Left));
            match c.linger {
                // A clean leave: send FIN after MsgExit and wait (bounded) for the server to close.
                None if clean && c.connected => {
                    let _ = c.tcp.shutdown(std::net::Shutdown::Write);
                    c.linger = Some(now + LINGER);
                    let _ = self.poll.registry().reregister(&mut c.tcp, c.tcp_token, Interest::READABLE);
                    c.writable_interest = false;
                }
                Some(until) if until > now => {}
                _ => {
                    c.done = true;
                    c.armed = None;
                    if let Some(r) = &mut c.recorder {
                        if let Err(e) = r.finish() {
                            warn!(error = %e, "the recording is incomplete");
                            c.record_error = Some(e.to_string());
                        }
                    }
                    let _ = self.poll.registry().deregister(&mut c.tcp);
                    self.sources.try_remove(c.tcp_token.0);
                    let _ = c.tcp.shutdown(std::net::Shutdown::Both);
                    return;
                }
            }
            if let Some(until) = c.linger {
                if c.armed != Some(until) {
                    c.armed = Some(until);
                    self.seq += 1;
                    self.timers.push(Reverse((until, self.seq, key)));
                }
            }
            return;
        }
        let want_write = c.wq_sent < c.wq.len() || !c.connected;
        if want_write != c.writable_interest && !c.done {
            let interest = if want_write { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
            if self.poll.registry().reregister(&mut c.tcp, c.tcp_token, interest).is_ok() {
                c.writable_interest = want_write;
            }
        }
        self.rearm(key);
    }

    fn rearm(&mut self, key: usize) {
        let Some(c) = self.conns.get_mut(key) else { return };
        if c.done {
            c.armed = None;
            return;
        }
        let next = match (c.session.poll_timeout(), c.connect_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if next != c.armed {
            c.armed = next;
            if let Some(t) = next {
                self.seq += 1;
                self.timers.push(Reverse((t, self.seq, key)));
            }
        }
    }

    fn close_sockets(&mut self, c: &mut Conn) {
        if let Some((mut sock, token)) = c.udp.take() {
            let _ = self.poll.registry().deregister(&mut sock);
            self.sources.try_remove(token.0);
        }
        if !c.done {
            let _ = self.poll.registry().deregister(&mut c.tcp);
            self.sources.try_remove(c.tcp_token.0);
        }
        if let Some(r) = &mut c.recorder {
            let _ = r.finish();
        }
    }
}

fn fail_connect(c: &mut Conn, now: Instant, e: &io::Error) {
    let why = ConnectError::from_io(c.server, e);
    if let Some(r) = &mut c.recorder {
        r.record(Kind::ConnectFailed, now, why.to_string().as_bytes());
    }
    c.connect_deadline = None;
    c.session.handle_connect_failed(now, why);
}

fn flush_tcp(c: &mut Conn) {
    while c.wq_sent < c.wq.len() {
        match c.tcp.write(&c.wq[c.wq_sent..]) {
            Ok(0) => break,
            Ok(n) => c.wq_sent += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                debug!(error = %e, "tcp write error");
                c.wq.clear();
                c.wq_sent = 0;
                return;
            }
        }
    }
    if c.wq_sent == c.wq.len() {
        c.wq.clear();
        c.wq_sent = 0;
    }
}

fn flush_udp(c: &mut Conn) {
    let Some((sock, _)) = &c.udp else { return };
    while let Some(d) = c.udp_queue.front() {
        match sock.send(d) {
            Ok(_) => {
                c.udp_queue.pop_front();
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                debug!(error = %e, "udp send error");
                c.udp_queue.pop_front();
            }
        }
    }
}

/// Resolves `HOST`, `HOST:PORT`, `[V6]:PORT` or a bare IPv6 address (port `default_port` when none is given),
/// preferring an IPv4 address. The error says what could not be resolved.
pub fn resolve(server: &str, default_port: u16) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let has_port = if let Some(rest) = server.strip_prefix('[') {
        rest.contains("]:")
    } else {
        server.matches(':').count() == 1 && server.rsplit(':').next().is_some_and(|p| p.parse::<u16>().is_ok())
    };
    let with_port = if server.parse::<SocketAddr>().is_ok() || has_port {
        server.to_string()
    } else if server.contains(':') && !server.starts_with('[') {
        format!("[{server}]:{default_port}")
    } else {
        format!("{server}:{default_port}")
    };
    let addrs: Vec<SocketAddr> =
        with_port.to_socket_addrs().map_err(|e| format!("cannot resolve {server}: {e}"))?.collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("cannot resolve {server}: no address"))
}

/// `bzfs` compares the UDP source port with 1024 without converting it from network order, so on a
/// little-endian server every port whose low byte is 0–3 is ignored.
pub fn udp_port_usable(port: u16) -> bool {
    port & 0xff >= 4 || port == 0
}

/// Opens the session's UDP socket: bound to the TCP connection's local address (like the official client) when
/// that port is usable, else to a fresh usable port on the same address; connected to the server's game port.
fn open_udp(poll: &mut Poll, sources: &mut Slab<Source>, c: &mut Conn, id: SessionId) -> io::Result<()> {
    let local = c.tcp.local_addr()?;
    let mut candidates = Vec::new();
    if udp_port_usable(local.port()) {
        candidates.push(local);
    }
    let mut sock = None;
    for attempt in 0..32 {
        let addr = candidates.get(attempt).copied().unwrap_or(SocketAddr::new(local.ip(), 0));
        let s = match std::net::UdpSocket::bind(addr) {
            Ok(s) => s,
            Err(e) if attempt + 1 < 32 => {
                debug!(error = %e, "udp bind");
                continue;
            }
            Err(e) => return Err(e),
        };
        if !udp_port_usable(s.local_addr()?.port()) {
            continue;
        }
        sock = Some(s);
        break;
    }
    let s = sock.ok_or_else(|| io::Error::other("no usable UDP port"))?;
    s.connect(c.server)?;
    s.set_nonblocking(true)?;
    let mut s = UdpSocket::from_std(s);
    let token = Token(sources.insert(Source::BzUdp(id)));
    if let Err(e) = poll.registry().register(&mut s, token, Interest::READABLE | Interest::WRITABLE) {
        sources.remove(token.0);
        return Err(e);
    }
    c.udp = Some((s, token));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_resolve_with_default_ports() {
        assert_eq!(resolve("127.0.0.1", 5154).unwrap(), "127.0.0.1:5154".parse().unwrap());
        assert_eq!(resolve("127.0.0.1:77", 5154).unwrap(), "127.0.0.1:77".parse().unwrap());
        assert_eq!(resolve("::1", 5154).unwrap(), "[::1]:5154".parse().unwrap());
        assert_eq!(resolve("[::1]:9", 5154).unwrap(), "[::1]:9".parse().unwrap());
        assert!(resolve("no such host.invalid", 5154).is_err());
    }

    /// A server that floods faster than the session reads: each turn reads the socket once (its budget), the
    /// backlog holds it once, and the events of a turn stay within what one budget of bytes can carry, however
    /// long the flood lasts. (The backlog used to gain an entry on every turn that also brought a new edge, so
    /// each turn read more than the last and the event queues grew with the flood.)
    #[test]
    fn a_flooded_socket_is_read_once_a_turn_however_long_the_flood() {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicBool, Ordering};

        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let flooder = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut header = [0u8; 10];
            s.read_exact(&mut header).unwrap();
            s.write_all(b"BZFS0221\x00").unwrap();
            let mut enter = [0u8; 4 + 247];
            s.read_exact(&mut enter).unwrap();
            s.write_all(&[0, 1, 0x61, 0x63, 0]).unwrap(); // MsgAccept(0)
                                                          // Unknown codes (a warning each) and chat lines: 7 and 12 bytes.
            let mut pair = vec![0, 3, b'z', b'z', 1, 2, 3];
            pair.extend_from_slice(&[0, 8, 0x6d, 0x67, 253, 0, 0]);
            pair.extend_from_slice(b"flood");
            let burst: Vec<u8> = pair.iter().copied().cycle().take(pair.len() * 4096).collect();
            while !stop2.load(Ordering::Relaxed) {
                if s.write_all(&burst).is_err() {
                    break;
                }
            }
        });

        let mut r = Reactor::new().unwrap();
        let config = SessionConfig { callsign: "flooded".into(), full_join: false, udp: false, ..Default::default() };
        let id = r.add_session(addr, config, SessionOptions::default()).unwrap();
        // The most frames one budget of reads can hold (the smallest frame of the flood is 7 bytes).
        let per_turn = READ_BUDGET * 64 * 1024 / 7 + 16;
        let (mut turns, mut total, mut most, mut most_backlog, mut most_timers) = (0, 0, 0, 0, 0);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) && !r.is_done(id) {
            r.turn(Some(Duration::from_millis(50))).unwrap();
            most_backlog = most_backlog.max(r.backlog.len());
            most_timers = most_timers.max(r.timers.len());
            let mut n = 0;
            while r.poll_event().is_some() {
                n += 1;
            }
            turns += 1;
            total += n;
            most = most.max(n);
        }
        stop.store(true, Ordering::Relaxed);
        r.remove_session(id);
        flooder.join().unwrap();
        assert!(total > 100_000, "the flood did not get going: {total} events in {turns} turns");
        assert!(most_backlog <= 1, "the backlog held the one socket {most_backlog} times");
        assert!(most <= per_turn, "{most} events in one turn (at most {per_turn} fit one budget); {turns} turns");
        // The timer heap gets an entry only when the session's deadline changes, not per message.
        assert!(most_timers <= 4, "{most_timers} timer entries");
    }

    /// A wait of game time lasts game / K of real time, and never ends before its game time has passed.
    #[test]
    fn a_scaled_reactor_waits_game_time_over_the_scale() {
        assert_eq!(
            Reactor::with_options(ReactorOptions { time_scale: 0.0 }).err().map(|e| e.kind()),
            Some(io::ErrorKind::InvalidInput)
        );
        let mut r = Reactor::with_options(ReactorOptions { time_scale: 8.0 }).unwrap();
        assert!(r.set_time_scale(f64::NAN).is_err() && r.time_scale() == 8.0);
        let tick = Duration::from_micros(33_333);
        let (game0, wall0) = (r.now(), Instant::now());
        let mut turns = 0;
        for i in 1..=10 {
            let due = game0 + tick * i;
            while r.now() < due {
                r.turn(Some(due.saturating_duration_since(r.now()))).unwrap();
                turns += 1;
            }
        }
        // No busy poll: a turn per tick, or two when a wait ends a hair early.
        assert!(turns <= 20, "{turns} turns for 10 waits");
        let (game, wall) = (r.now() - game0, wall0.elapsed());
        assert!(game >= tick * 10, "{game:?}");
        // 41.7 ms of real time; at K = 1 it would be 333 ms.
        assert!(wall >= tick * 10 / 8 && wall < tick * 10 / 2, "{wall:?} of real time for {game:?} of game time");
    }

    #[test]
    fn udp_ports_bzfs_ignores_are_avoided() {
        assert!(!udp_port_usable(1024));
        assert!(!udp_port_usable(51200));
        assert!(!udp_port_usable(51203));
        assert!(udp_port_usable(51204));
        assert!(udp_port_usable(33708));
    }
}
