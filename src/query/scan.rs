//! The query scheduler: many server queries over one UDP socket per address family, as a sans-IO engine.
//!
//! A [`Scan`] owns a queue of [`Target`]s and runs them through plugin instances (and the built-in `bzflag`
//! protocol, which the reactor runs as a TCP session). It never touches a socket or the clock: the driver (the
//! [`crate::reactor::Reactor`], or a test) feeds it datagrams and `now`, and drains its outputs:
//!
//! * inputs: [`Scan::add_target`], [`Scan::handle_datagram`], [`Scan::handle_timeout`], [`Scan::handle_send_error`],
//!   [`Scan::handle_tcp_result`];
//! * outputs, each drained until `None`: [`Scan::poll_transmit`] (datagrams to send), [`Scan::poll_tcp_query`]
//!   (built-in TCP queries to start), [`Scan::poll_event`] (finished queries), [`Scan::poll_timeout`] (when to call
//!   [`Scan::handle_timeout`] next).
//!
//! Scheduling:
//! * **Concurrency**: at most [`ScanConfig::concurrency`] queries run at once; the rest wait in FIFO order.
//! * **Send rate**: a token bucket of [`ScanConfig::rate`] datagrams per second (burst [`ScanConfig::burst`]). A
//!   query starts only when a token is available; once the bucket has run out, new queries wait until a batch of
//!   tokens is there (about two milliseconds' worth at high rates, up to a hundred tokens at lower ones) and then
//!   start together, so that a fast scan sends in groups instead of a datagram whenever a reply frees a token.
//!   Datagrams of running queries (retries, handshakes, page requests) are never held back (that would distort
//!   their timing and ping) but are charged to the bucket, so the average rate holds.
//! * **Per-server pace**: one query at a time per server address (replies are matched by source address), and a
//!   new query to the same address starts no sooner than [`ScanConfig::pace`] after the previous one ended (ioq3
//!   answers one address about once a second after a burst; DDNet limits info replies per second).
//! * **Timeouts and retries**: each plugin waits [`ScanConfig::timeout`] for an answer, re-sends up to
//!   [`ScanConfig::retries`] times with doubling waits (the plugin's own backoff), and the host ends any query that
//!   has not finished by a hard deadline derived from both (a plugin that never finishes cannot hold a slot).
//! * **Ping**: measured by the host, from the last datagram sent for the query to the first datagram the plugin
//!   accepted.
//! * **Demultiplexing**: a datagram goes to the query running for its source address, whose plugin checks its
//!   token or challenge; datagrams from other addresses, or that the plugin ignores, are counted
//!   ([`ScanStats::unsolicited`], [`ScanStats::ignored`]) and dropped.
//! * **Isolation**: a plugin that panics, reports invalid data, floods, or busy-loops on timeouts fails its own
//!   query with [`ErrorKind::Plugin`]; its instance is destroyed and every other query goes on.
//! * **Masters**: a target with [`Target::expand`] is a master query; each server it lists becomes a new target
//!   (deduplicated) with the expansion's protocol, if [`ScanConfig::master_policy`] takes it (no special-use
//!   address, a few ports per host: [`super::filter`]; the drops are counted in [`ScanStats`] and in the master's
//!   answer), and its query may send at most [`entry_budget`]. Targets added with [`Scan::add_target`] are trusted.
//! * **Tokens**: with [`ScanConfig::seed`] 0 (the default) each query's seed and random bytes come from the
//!   operating system's random source, drawn in batches; see `docs/scanning.md`.

use std::cmp::Reverse;
use std::collections::{hash_map, BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use slab::Slab;
use tracing::{debug, error, info, trace, warn};

use super::addr::{normalize, AddrHash, AddrKey};
use super::filter::{EntryFilter, FilterCounts, MasterPolicy};
use super::loader::{PluginLibrary, PluginSet, ProtocolKind};
use super::plugin::{CallError, CallOutput, Handled, InstanceOptions, PluginHost, PluginInstance, Report};
use super::result::{Answer, ErrorKind, FieldValue, QueryError, QueryResult};
use super::BZFLAG;

/// The limits of one answer, defined with it ([`super::result`]); here too for the paths they always had.
pub use super::result::{MAX_FIELDS, MAX_PLAYERS};
/// Most servers kept from one master query.
pub const MAX_MASTER_ENTRIES: usize = 1 << 20;
/// Most datagrams one query may send over its life.
pub const MAX_SENDS_PER_QUERY: usize = 1024;
/// Most `on_timeout` calls one query may need.
pub const MAX_TIMEOUT_CALLS: u32 = 1000;
/// Most targets waiting to start.
pub const MAX_PENDING: usize = 1 << 22;
/// Most datagrams a query of a master entry may send per attempt (its first request, then each retry): two requests
/// (Quake III's getinfo and getstatus, Teeworlds 0.7's token handshake and info request) and room for a page or a
/// follow-up request. See [`entry_budget`].
pub const ENTRY_DATAGRAMS_PER_ATTEMPT: usize = 4;
/// Most bytes a query of a master entry may send per attempt (Teeworlds 0.7's token request alone is 520 bytes).
pub const ENTRY_BYTES_PER_ATTEMPT: usize = 1200;

/// What a scan may send because of one master entry, with `retries` re-sends allowed: one query (entries are
/// deduplicated per protocol and address, and filtered by [`ScanConfig::master_policy`]), of at most
/// `(datagrams, bytes)`. A query that would send more ends as a plugin failure. Returns
/// `(ENTRY_DATAGRAMS_PER_ATTEMPT × attempts, ENTRY_BYTES_PER_ATTEMPT × attempts)` with `attempts = 1 + min(retries,
/// 16)`: with the defaults (2 retries) 12 datagrams and 3600 bytes.
pub fn entry_budget(retries: u32) -> (usize, usize) {
    let attempts = retries.min(16) as usize + 1;
    (ENTRY_DATAGRAMS_PER_ATTEMPT * attempts, ENTRY_BYTES_PER_ATTEMPT * attempts)
}

/// Most room (text bytes, fields, players) given to a new answer before it reports anything.
const MAX_ANSWER_HINT: (usize, usize, usize) = (16 * 1024, 256, 64);

/// Most answers kept for reuse ([`Scan::recycle`]).
const MAX_SPARE_ANSWERS: usize = 256;

/// How a [`Scan`] schedules its queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanConfig {
    /// Most queries running at once (at least 1).
    pub concurrency: usize,
    /// Datagrams per second, all queries together (at least 1).
    pub rate: u32,
    /// Datagrams that may go out back to back before the rate applies (at least 1).
    pub burst: u32,
    /// Least time between the end of a query to an address and the start of the next one to it.
    pub pace: Duration,
    /// How long a plugin waits for the answer to its first request (then doubling per retry).
    pub timeout: Duration,
    /// How many times an unanswered request may be re-sent.
    pub retries: u32,
    /// 0 (the default): every query's tokens and challenges come from the operating system's random source, fresh
    /// per query (a seed and [`query_abi::RANDOM_LEN`] bytes), so that no reply can be forged by guessing them,
    /// not even by a server that saw its own. Any other value derives them from this seed instead
    /// (deterministic, for tests).
    pub seed: u64,
    /// What is taken from a master's list ([`crate::query::filter`]): by default no special-use address and at
    /// most [`crate::query::filter::DEFAULT_MAX_PORTS_PER_HOST`] ports per host.
    pub master_policy: MasterPolicy,
    /// Highest plugin log level passed on (`query_abi::LOG_*`).
    pub max_log_level: i32,
    /// Parameters given to every plugin query (before each target's own).
    pub params: Vec<(String, String)>,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            concurrency: 1000,
            rate: 1000,
            burst: 50,
            pace: Duration::from_secs(1),
            timeout: Duration::from_millis(1000),
            retries: 2,
            seed: 0,
            master_policy: MasterPolicy::default(),
            max_log_level: query_abi::LOG_INFO,
            params: Vec::new(),
        }
    }
}

impl ScanConfig {
    /// The burst the command line gives a scan at `rate` datagrams a second: a tenth of a second's worth, at most
    /// 1,000, so that a dry bucket can wait for a batch of up to a hundred tokens (see [`ScanConfig::rate`]'s bucket):
    /// one datagram to each of a hundred servers back to back, about 6 KB for Quake III requests.
    pub fn burst_for_rate(rate: u32) -> u32 {
        (rate / 10).clamp(1, 1000)
    }

    /// The host's deadline for a query that started at `start`: the plugin's own waits (doubling per retry, each
    /// at least a second because some servers answer at most once a second), twice, plus two seconds.
    pub fn hard_timeout(&self) -> Duration {
        let t = self.timeout.max(Duration::from_millis(1));
        let mut sum = Duration::ZERO;
        for attempt in 0..=self.retries.min(16) {
            sum = sum.saturating_add(t.saturating_mul(1u32 << attempt.min(2)).max(Duration::from_secs(1)));
        }
        sum.saturating_mul(2).saturating_add(Duration::from_secs(2))
    }
}

/// One server (or master) to query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Protocol name.
    pub protocol: String,
    /// Address.
    pub addr: SocketAddr,
    /// Protocol parameters for this target (after the scan's).
    pub params: Vec<(String, String)>,
    /// For a master: query every server it lists with this protocol and these parameters.
    pub expand: Option<(String, Vec<(String, String)>)>,
}

impl Target {
    /// A server query.
    pub fn new(protocol: &str, addr: SocketAddr) -> Target {
        Target { protocol: protocol.to_owned(), addr, params: Vec::new(), expand: None }
    }
}

/// Counters of a scan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Targets accepted.
    pub targets: u64,
    /// Queries started.
    pub started: u64,
    /// Queries finished.
    pub finished: u64,
    /// Answered.
    pub answered: u64,
    /// Timed out.
    pub timed_out: u64,
    /// Malformed answers.
    pub malformed: u64,
    /// Refused.
    pub refused: u64,
    /// Plugin failures (panics, invalid reports, floods).
    pub plugin_errors: u64,
    /// Other failures (unknown protocol, bad parameters...).
    pub other_errors: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Datagrams from addresses no query was waiting for (dropped).
    pub unsolicited: u64,
    /// Datagrams from a queried address that its plugin did not accept (wrong token or challenge, late
    /// duplicates; dropped).
    pub ignored: u64,
    /// Targets left out as duplicates.
    pub duplicates: u64,
    /// Master entries left out for a special-use address ([`ScanConfig::master_policy`]).
    pub dropped_special_use: u64,
    /// Master entries left out over the per-host port limit ([`ScanConfig::master_policy`]).
    pub dropped_ports_per_host: u64,
    /// Queries of master entries ended for sending more than [`entry_budget`] allows.
    pub over_budget: u64,
    /// Queries that could not start because the operating system gave no random bytes.
    pub no_random: u64,
}

/// A datagram to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub to: SocketAddr,
    /// Payload.
    pub data: Vec<u8>,
}

/// Identifies one built-in TCP query, for [`Scan::handle_tcp_result`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpQueryId {
    key: usize,
    tag: u64,
}

/// A built-in (TCP) query the driver must run: a BZFlag query session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpQuery {
    /// Pass back to [`Scan::handle_tcp_result`].
    pub id: TcpQueryId,
    /// Protocol (`bzflag`).
    pub protocol: String,
    /// Server.
    pub addr: SocketAddr,
    /// Time allowed for each step.
    pub timeout: Duration,
}

/// What a scan reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ScanEvent {
    /// A query finished.
    Result(QueryResult),
}

/// Why [`Scan::add_target`] refused a target.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AddError {
    /// The same protocol and address are already queued or done.
    Duplicate,
    /// Too many targets waiting.
    Full,
}

impl fmt::Display for AddError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddError::Duplicate => f.write_str("duplicate target"),
            AddError::Full => write!(f, "more than {MAX_PENDING} targets waiting"),
        }
    }
}

impl std::error::Error for AddError {}

enum Runner {
    Plugin(PluginInstance),
    Tcp,
}

struct Query {
    index: usize,
    target: Target,
    tag: u64,
    runner: Runner,
    hard_deadline: Instant,
    plugin_deadline: Option<Instant>,
    armed: Option<Instant>,
    last_timeout_call: Option<Instant>,
    timeout_calls: u32,
    last_send: Option<Instant>,
    ping: Option<Duration>,
    sends: usize,
    /// Bytes sent so far.
    bytes: usize,
    /// For a master entry's query: the most datagrams and bytes it may send ([`entry_budget`]).
    budget: Option<(usize, usize)>,
    /// Built in place as the plugin reports: lent to the host's call output during each call into the plugin
    /// ([`lend_answer`]); made at the first data, so a query waiting for its reply holds none.
    answer: Option<Box<Answer>>,
    list_complete: bool,
    /// What a master query listed so far (`None` for server queries).
    master: Option<Box<MasterList>>,
    kind: ProtocolKind,
}

/// The servers a master query listed, in order, without duplicates.
#[derive(Default)]
struct MasterList {
    entries: Vec<SocketAddr>,
    seen: HashSet<AddrKey, AddrHash>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
    rate: f64,
    burst: f64,
    /// The bucket ran out while queries were waiting: none starts again before a batch of tokens is there.
    dry: bool,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.dry && self.tokens >= self.batch() {
            self.dry = false;
        }
    }

    /// Tokens a dry bucket waits for: about two milliseconds' worth at high rates, and at lower rates up to a
    /// hundred tokens (at most a tenth of a second's worth; never more than the burst), so that a slow scan wakes up
    /// and sends about as rarely per query as a fast one. Each wake-up of a scan that waited costs the same whatever
    /// it then does (on a busy machine mostly caches gone cold meanwhile, some 150 µs), so its share of an answer is
    /// that over the batch: once per token or two made each answer cost 3.3 times more at `--rate 1000` than at
    /// 20,000; fifty tokens 1.3 to 1.4 times (bench/scan_rates.py).
    fn batch(&self) -> f64 {
        (self.rate / 500.0).max((self.rate / 10.0).min(100.0)).clamp(1.0, self.burst)
    }

    /// True when a new query may start now.
    fn can_start(&self) -> bool {
        self.tokens >= 1.0 && !self.dry
    }

    /// When a new query may start (now if one may): once the bucket ran out, when a batch of tokens is there, so
    /// that a fast scan starts its queries (and wakes the reactor) some 500 times a second in groups rather than
    /// one by one whenever a reply comes in. The average rate is the same.
    fn ready_at(&self, now: Instant) -> Instant {
        if self.can_start() {
            return now;
        }
        let wait = (self.batch() - self.tokens) / self.rate;
        later(now, Duration::from_secs_f64(wait.clamp(0.0, 3600.0)))
    }
}

/// The scheduler. See the module documentation.
pub struct Scan {
    config: ScanConfig,
    plugins: PluginSet,
    host: PluginHost,
    epoch: Instant,
    /// Targets waiting: index, target, and whether it came from a master's list.
    pending: VecDeque<(usize, Target, bool)>,
    /// Applies `config.master_policy` to every master entry of this scan (one per-host count for all masters).
    master_filter: EntryFilter,
    /// Random bytes drawn from the operating system in batches, handed out per query.
    random: RandomPool,
    /// Every (protocol, address) queued so far, the protocol as an index into `protocol_names`.
    known: HashSet<(usize, AddrKey), AddrHash>,
    protocol_names: Vec<String>,
    next_index: usize,
    next_tag: u64,
    running: Slab<Query>,
    by_addr: HashMap<AddrKey, usize, AddrHash>,
    last_end: HashMap<AddrKey, Instant, AddrHash>,
    timers: BinaryHeap<Reverse<(Instant, u64, usize, u64)>>,
    timer_seq: u64,
    admit_at: Option<Instant>,
    bucket: Bucket,
    /// Datagrams waiting to be sent: destinations and byte ranges of `transmit_bytes` (cleared when all are sent).
    transmits: VecDeque<(SocketAddr, usize, usize)>,
    transmit_bytes: Vec<u8>,
    tcp: VecDeque<TcpQuery>,
    events: VecDeque<ScanEvent>,
    stats: ScanStats,
    /// Room to give a new answer at its first report: about the size of recent answers, so that building one
    /// does not grow its buffers report by report.
    answer_hint: (usize, usize, usize),
    /// Boxes of answers that were handed out in results, for [`Scan::recycle`] (the boxes themselves are what is
    /// kept: a query's answer is built in one).
    #[allow(clippy::vec_box)]
    empty_boxes: Vec<Box<Answer>>,
    /// `config.hard_timeout()`, worked out once.
    hard_timeout: Duration,
}

impl fmt::Debug for Scan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scan")
            .field("pending", &self.pending.len())
            .field("running", &self.running.len())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Lends a query's answer (made at its first data) to the host's call output for one call into its plugin; the
/// caller takes it back with [`take_answer`] right after the call.
fn lend_answer(host: &PluginHost, answer: &mut Option<Box<Answer>>, hint: (usize, usize, usize)) {
    let mut out = host.output();
    out.answer = answer.take();
    out.answer_hint = hint;
    out.lent = true;
}

/// Takes back the answer lent with [`lend_answer`].
fn take_answer(host: &PluginHost) -> Option<Box<Answer>> {
    let mut out = host.output();
    out.lent = false;
    out.answer.take()
}

/// splitmix64: one seed per query from the scan's seed.
fn derive_seed(seed: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Scan {
    /// A scan with these plugins, starting its clock at `now`.
    pub fn new(plugins: PluginSet, mut config: ScanConfig, now: Instant) -> Scan {
        config.concurrency = config.concurrency.max(1);
        config.rate = config.rate.max(1);
        config.burst = config.burst.max(1);
        let bucket = Bucket {
            tokens: f64::from(config.burst),
            last: now,
            rate: f64::from(config.rate),
            burst: f64::from(config.burst),
            dry: false,
        };
        let hard_timeout = config.hard_timeout();
        let master_filter = EntryFilter::new(config.master_policy);
        Scan {
            config,
            plugins,
            host: PluginHost::new(),
            epoch: now,
            pending: VecDeque::new(),
            master_filter,
            random: RandomPool::default(),
            known: HashSet::default(),
            protocol_names: Vec::new(),
            next_index: 0,
            next_tag: 1,
            running: Slab::new(),
            by_addr: HashMap::default(),
            last_end: HashMap::default(),
            timers: BinaryHeap::new(),
            timer_seq: 0,
            admit_at: None,
            bucket,
            transmits: VecDeque::new(),
            transmit_bytes: Vec::new(),
            tcp: VecDeque::new(),
            events: VecDeque::new(),
            stats: ScanStats::default(),
            answer_hint: (0, 0, 0),
            empty_boxes: Vec::new(),
            hard_timeout,
        }
    }

    /// The plugins this scan uses.
    pub fn plugins(&self) -> &PluginSet {
        &self.plugins
    }

    /// Gives back the plugins, to start another scan with them (a monitor's next round).
    pub fn into_plugins(self) -> PluginSet {
        self.plugins
    }

    /// The configuration.
    pub fn config(&self) -> &ScanConfig {
        &self.config
    }

    /// The counters.
    pub fn stats(&self) -> ScanStats {
        self.stats
    }

    /// Changes the send rate and burst of a running scan (a driver that paces a round by its size once masters
    /// expanded it); tokens already in the bucket stay, up to the new burst.
    pub fn set_rate(&mut self, now: Instant, rate: u32, burst: u32) {
        self.bucket.refill(now);
        self.config.rate = rate.max(1);
        self.config.burst = burst.max(1);
        self.bucket.rate = f64::from(self.config.rate);
        self.bucket.burst = f64::from(self.config.burst);
        self.bucket.tokens = self.bucket.tokens.min(self.bucket.burst);
    }

    /// Targets waiting to start.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Queries running.
    pub fn running(&self) -> usize {
        self.running.len()
    }

    /// True when nothing is waiting, running or left to drain but events.
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && self.running.is_empty() && self.transmits.is_empty() && self.tcp.is_empty()
    }

    /// True when `protocol` is built in (run by the driver over TCP) or served by a loaded plugin.
    pub fn knows(&self, protocol: &str) -> bool {
        protocol == BZFLAG || self.plugins.plugin_for(protocol).is_some()
    }

    /// Makes room for `additional` more targets, so that adding a long list does not grow the scheduler's tables step
    /// by step.
    pub fn reserve(&mut self, additional: usize) {
        let additional = additional.min(MAX_PENDING);
        self.pending.reserve(additional);
        self.known.reserve(additional);
        self.last_end.reserve(additional);
        let running = additional.min(self.config.concurrency);
        self.by_addr.reserve(running);
        self.running.reserve(running);
    }

    /// Queues a target; returns its index (its position among all targets, for ordering results). Targets added
    /// here are the caller's and are trusted as they are; only master entries go through the master policy.
    pub fn add_target(&mut self, now: Instant, target: Target) -> Result<usize, AddError> {
        self.add(now, target, false)
    }

    fn add(&mut self, now: Instant, mut target: Target, from_master: bool) -> Result<usize, AddError> {
        target.addr = normalize(target.addr);
        if self.pending.len() >= MAX_PENDING {
            return Err(AddError::Full);
        }
        let proto = match self.protocol_names.iter().position(|p| *p == target.protocol) {
            Some(i) => i,
            None => {
                self.protocol_names.push(target.protocol.clone());
                self.protocol_names.len() - 1
            }
        };
        if !self.known.insert((proto, AddrKey::new(target.addr))) {
            self.stats.duplicates += 1;
            return Err(AddError::Duplicate);
        }
        let index = self.next_index;
        self.next_index += 1;
        self.stats.targets += 1;
        self.pending.push_back((index, target, from_master));
        self.admit(now);
        Ok(index)
    }

    /// A datagram arrived from `from`.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, data: &[u8]) {
        self.handle_datagram_received(now, now, from, data);
    }

    /// A datagram from `from` that arrived at `received` (the kernel's receive time, at or before `now`) is handed
    /// over at `now`: as [`Scan::handle_datagram`], with the ping measured to `received`, so that a reply the driver
    /// let wait unread ([`Scan::quiet_until`]) is not made slower by the wait.
    pub fn handle_datagram_received(&mut self, now: Instant, received: Instant, from: SocketAddr, data: &[u8]) {
        self.stats.received += 1;
        let from = normalize(from);
        let Some(&key) = self.by_addr.get(&AddrKey::new(from)) else {
            self.stats.unsolicited += 1;
            trace!(%from, len = data.len(), "unsolicited datagram dropped");
            return;
        };
        let now_ms = self.ms(now);
        let Some(q) = self.running.get_mut(key) else { return };
        let Runner::Plugin(inst) = &mut q.runner else {
            self.stats.unsolicited += 1;
            return;
        };
        lend_answer(&self.host, &mut q.answer, self.answer_hint);
        let r = inst.on_datagram(now_ms, from, data);
        q.answer = take_answer(&self.host);
        match r {
            Ok(Handled::Accepted) => {
                if q.ping.is_none() {
                    q.ping = q.last_send.map(|t| received.min(now).saturating_duration_since(t));
                }
                self.after_call(now, key, Ok(()));
            }
            Ok(Handled::Ignored) => {
                self.stats.ignored += 1;
                debug!(%from, len = data.len(), "datagram ignored by the plugin (token, challenge or late)");
                self.after_call(now, key, Ok(()));
            }
            Err(e) => self.after_call(now, key, Err(e)),
        }
        self.admit(now);
    }

    /// A send to `to` failed (not `WouldBlock`): the query to that address fails as refused when the error says the
    /// destination cannot be reached.
    pub fn handle_send_error(&mut self, now: Instant, to: SocketAddr, err: &io::Error) {
        let to = normalize(to);
        let fatal = matches!(
            err.kind(),
            io::ErrorKind::ConnectionRefused
                | io::ErrorKind::NetworkUnreachable
                | io::ErrorKind::HostUnreachable
                | io::ErrorKind::AddrNotAvailable
                | io::ErrorKind::PermissionDenied
                | io::ErrorKind::InvalidInput
        );
        debug!(%to, error = %err, fatal, "send failed");
        if !fatal {
            return;
        }
        if let Some(&key) = self.by_addr.get(&AddrKey::new(to)) {
            self.finish(now, key, Err(QueryError::new(ErrorKind::Refused, format!("cannot send to {to}: {err}"))));
            self.admit(now);
        }
    }

    /// The outcome of a built-in TCP query started from [`Scan::poll_tcp_query`] (`ping` measured by the driver).
    /// Outcomes of queries that already ended (the host deadline passed) are ignored.
    pub fn handle_tcp_result(
        &mut self,
        now: Instant,
        id: TcpQueryId,
        outcome: Result<Answer, QueryError>,
        ping: Option<Duration>,
    ) {
        let Some(q) = self.running.get_mut(id.key) else { return };
        if q.tag != id.tag {
            return;
        }
        q.ping = ping;
        self.finish(now, id.key, outcome);
        self.admit(now);
    }

    /// Fires every due deadline (spurious calls are harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&Reverse((t, _, key, tag))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(q) = self.running.get_mut(key) else { continue };
            if q.tag != tag || q.armed != Some(t) {
                continue; // stale
            }
            q.armed = None;
            if now >= q.hard_deadline {
                let detail = match q.runner {
                    Runner::Tcp => "no answer in time".to_owned(),
                    Runner::Plugin(ref inst) => {
                        format!("no result from the {} plugin by the host's deadline", inst.plugin().name())
                    }
                };
                self.finish(now, key, Err(QueryError::new(ErrorKind::Timeout, detail)));
                continue;
            }
            if q.plugin_deadline.is_some_and(|d| d <= now) {
                q.timeout_calls += 1;
                q.last_timeout_call = Some(now);
                if q.timeout_calls > MAX_TIMEOUT_CALLS {
                    let name = plugin_name(q).to_owned();
                    self.finish(
                        now,
                        key,
                        Err(QueryError::new(
                            ErrorKind::Plugin,
                            format!("the {name} plugin asked for more than {MAX_TIMEOUT_CALLS} timeouts (busy loop)"),
                        )),
                    );
                    continue;
                }
                let now_ms = self.ms(now);
                let r = match self.running.get_mut(key) {
                    Some(Query { runner: Runner::Plugin(inst), answer, .. }) => {
                        lend_answer(&self.host, answer, self.answer_hint);
                        let r = inst.on_timeout(now_ms);
                        *answer = take_answer(&self.host);
                        r
                    }
                    _ => Ok(()),
                };
                self.after_call(now, key, r);
            } else {
                self.rearm(key);
            }
        }
        self.admit(now);
    }

    /// The next datagram to send (a copy; [`Scan::pending_transmits`] lends them instead).
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        let (to, data) = self.pending_transmits().next().map(|(to, d)| (to, d.to_vec()))?;
        self.consume_transmits(1);
        Some(Transmit { to, data })
    }

    /// The datagrams waiting to be sent, oldest first, borrowed. Drop the ones sent with
    /// [`Scan::consume_transmits`].
    pub fn pending_transmits(&self) -> impl ExactSizeIterator<Item = (SocketAddr, &[u8])> + '_ {
        self.transmits.iter().map(|&(to, start, len)| (to, self.transmit_bytes.get(start..start + len).unwrap_or(&[])))
    }

    /// Forgets the first `n` waiting datagrams (they were sent, or handed on).
    pub fn consume_transmits(&mut self, n: usize) {
        let n = n.min(self.transmits.len());
        self.transmits.drain(..n);
        if self.transmits.is_empty() {
            self.transmit_bytes.clear();
        }
    }

    /// The next built-in TCP query to start.
    pub fn poll_tcp_query(&mut self) -> Option<TcpQuery> {
        self.tcp.pop_front()
    }

    /// The next finished query.
    pub fn poll_event(&mut self) -> Option<ScanEvent> {
        self.events.pop_front()
    }

    /// Gives back a result that was read: its answer's buffers are reused for a later answer, so that a long scan
    /// does not allocate them for every server (optional; an answer much larger than usual is dropped instead).
    pub fn recycle(&mut self, result: QueryResult) {
        let Ok(mut answer) = result.outcome else { return };
        let (text, fields, players) = answer.capacities();
        if text > 4 * MAX_ANSWER_HINT.0 || fields > 4 * MAX_ANSWER_HINT.1 || players > 4 * MAX_ANSWER_HINT.2 {
            return;
        }
        let mut out = self.host.output();
        if out.spare.len() >= MAX_SPARE_ANSWERS {
            return;
        }
        answer.clear();
        let boxed = match self.empty_boxes.pop() {
            Some(mut b) => {
                *b = answer;
                b
            }
            None => Box::new(answer),
        };
        out.spare.push(boxed);
    }

    /// Until when replies may wait unread without changing what the scan does: while the rate limit holds back
    /// waiting queries (the bucket ran dry), nothing a reply does can start one before the bucket has a batch of
    /// tokens again, so a driver may read the replies that come meanwhile all at once then (giving their receive
    /// times with [`Scan::handle_datagram_received`], and reading them before it calls [`Scan::handle_timeout`]),
    /// instead of waking for each. `None` when a reply may let a query start (read at once).
    pub fn quiet_until(&self) -> Option<Instant> {
        if self.bucket.dry && !self.pending.is_empty() && self.transmits.is_empty() && self.tcp.is_empty() {
            self.admit_at
        } else {
            None
        }
    }

    /// When [`Scan::handle_timeout`] should be called next.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        // Drop stale heap tops so the answer is a real deadline.
        while let Some(&Reverse((t, _, key, tag))) = self.timers.peek() {
            match self.running.get(key) {
                Some(q) if q.tag == tag && q.armed == Some(t) => break,
                _ => {
                    self.timers.pop();
                }
            }
        }
        let timer = self.timers.peek().map(|Reverse((t, ..))| *t);
        match (timer, self.admit_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // ------------------------------------------------------------------------------------------- internals

    fn ms(&self, now: Instant) -> u64 {
        u64::try_from(now.saturating_duration_since(self.epoch).as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts what may start now; notes when to look again.
    fn admit(&mut self, now: Instant) {
        self.admit_at = None;
        self.bucket.refill(now);
        let mut blocked_until: Option<Instant> = None;
        let mut rotations = self.pending.len();
        while self.running.len() < self.config.concurrency && rotations > 0 {
            if !self.bucket.can_start() {
                self.bucket.dry = true;
                let at = self.bucket.ready_at(now);
                blocked_until = Some(blocked_until.map_or(at, |b| b.min(at)));
                break;
            }
            let Some((index, target, from_master)) = self.pending.pop_front() else { break };
            rotations -= 1;
            let addr = AddrKey::new(target.addr);
            if self.by_addr.contains_key(&addr) {
                // Busy: it is looked at again when that query ends (which calls `admit`).
                self.pending.push_back((index, target, from_master));
                continue;
            }
            if let Some(end) = self.last_end.get(&addr) {
                let at = later(*end, self.config.pace);
                if at > now {
                    blocked_until = Some(blocked_until.map_or(at, |b| b.min(at)));
                    self.pending.push_back((index, target, from_master));
                    continue;
                }
            }
            self.start(now, index, target, from_master);
        }
        self.admit_at = blocked_until;
    }

    fn start(&mut self, now: Instant, index: usize, target: Target, from_master: bool) {
        self.stats.started += 1;
        let tag = self.next_tag;
        self.next_tag += 1;
        let addr = target.addr;
        let kind = if target.protocol == BZFLAG {
            ProtocolKind::Server
        } else {
            self.plugins.protocol(&target.protocol).map_or(ProtocolKind::Server, |d| d.kind)
        };
        let entry = self.running.vacant_entry();
        let key = entry.key();
        entry.insert(Query {
            index,
            target,
            tag,
            runner: Runner::Tcp,
            hard_deadline: later(now, self.hard_timeout),
            plugin_deadline: None,
            armed: None,
            last_timeout_call: None,
            timeout_calls: 0,
            last_send: None,
            ping: None,
            sends: 0,
            bytes: 0,
            budget: from_master.then(|| entry_budget(self.config.retries)),
            answer: None,
            list_complete: true,
            master: (kind == ProtocolKind::Master).then(Box::default),
            kind,
        });
        self.by_addr.insert(AddrKey::new(addr), key);
        if self.running[key].target.protocol == BZFLAG {
            self.bucket.tokens -= 1.0;
            self.stats.sent += 1;
            self.running[key].last_send = Some(now);
            let protocol = BZFLAG.to_owned();
            self.tcp.push_back(TcpQuery { id: TcpQueryId { key, tag }, protocol, addr, timeout: self.config.timeout });
            self.rearm(key);
            return;
        }
        let Some(lib) = self.plugins.plugin_for(&self.running[key].target.protocol).cloned() else {
            let protocol = &self.running[key].target.protocol;
            let known = self.plugins.protocol_names().join(", ");
            let detail = if known.is_empty() {
                format!("no plugin speaks {protocol:?} (no plugin loaded)")
            } else {
                format!("no plugin speaks {protocol:?} (loaded: {BZFLAG}, {known})")
            };
            self.finish(now, key, Err(QueryError::new(ErrorKind::Unsupported, detail)));
            return;
        };
        // The new query's answer is lent for `create` (a plugin may finish from there).
        lend_answer(&self.host, &mut self.running[key].answer, self.answer_hint);
        let q = &self.running[key];
        let joined: Vec<(String, String)>;
        let params: &[(String, String)] = if q.target.params.is_empty() {
            &self.config.params
        } else {
            joined = self.config.params.iter().chain(&q.target.params).cloned().collect();
            &joined
        };
        let (seed, random) = if self.config.seed != 0 {
            (derive_seed(self.config.seed, tag), None)
        } else {
            match self.random.take() {
                Some((seed, bytes)) => (seed, Some(bytes)),
                None => {
                    // No weak fallback: a query whose tokens could be guessed is not sent at all.
                    let _ = take_answer(&self.host);
                    self.stats.no_random += 1;
                    let e = QueryError::new(ErrorKind::Error, "no random bytes from the operating system for tokens");
                    self.finish(now, key, Err(e));
                    return;
                }
            }
        };
        let options = InstanceOptions {
            timeout_ms: u32::try_from(self.config.timeout.as_millis()).unwrap_or(u32::MAX).max(1),
            retries: self.config.retries,
            max_log_level: self.config.max_log_level,
            seed,
            random,
            params,
        };
        let now_ms = self.ms(now);
        let protocol = &q.target.protocol;
        let created = PluginInstance::create(&self.host, &lib, protocol, addr, tag, now_ms, &options);
        let answer = take_answer(&self.host);
        match created {
            Ok(inst) => {
                let q = &mut self.running[key];
                q.runner = Runner::Plugin(inst);
                q.answer = answer;
                self.after_call(now, key, Ok(()));
            }
            Err(e) => {
                let err = create_error(&lib, protocol, e);
                log_reports(&lib, addr, &self.host.output());
                self.finish(now, key, Err(err));
            }
        }
    }

    /// Applies what one call into a query's plugin produced, then re-arms its timer or finishes it.
    ///
    /// A query stays in `running` until [`Scan::finish`] removes it; the `self.running[key]` indexing here, in
    /// [`Scan::finish_answered`], [`Scan::await_plugin`] and in `start` always follows a successful lookup of `key`
    /// with no `finish` in between.
    fn after_call(&mut self, now: Instant, key: usize, call: Result<(), CallError>) {
        let Some(q) = self.running.get(key) else { return };
        let lib = match &q.runner {
            Runner::Plugin(inst) => Some(inst.plugin().clone()),
            Runner::Tcp => None,
        };
        let plugin = lib.as_deref().map_or(BZFLAG, PluginLibrary::name);
        let addr = q.target.addr;
        let (failure, done) = self.apply_reports(now, key, plugin, call);
        if let Some(f) = failure {
            warn!(plugin, server = %addr, error = %f, "plugin failure");
            self.finish(now, key, Err(f));
            return;
        }
        match done {
            Some(Ok(())) => self.finish_answered(now, key),
            Some(Err(e)) => self.finish(now, key, Err(e)),
            None => self.await_plugin(now, key, plugin),
        }
    }

    /// Goes through the reports of one call into query `key`'s plugin, in order: queues its datagrams (charged to
    /// the rate bucket), collects a master's entries, logs its lines. Returns the failure that ends the query (a
    /// failed call, a report the host refuses) and the plugin's own end (`Done`), if any.
    fn apply_reports(
        &mut self,
        now: Instant,
        key: usize,
        plugin: &str,
        call: Result<(), CallError>,
    ) -> (Option<QueryError>, Option<Result<(), QueryError>>) {
        let Some(q) = self.running.get_mut(key) else { return (None, None) };
        let addr = q.target.addr;
        let mut failure: Option<QueryError> = None;
        let mut done: Option<Result<(), QueryError>> = None;
        if let Err(e) = call {
            failure = Some(QueryError::new(ErrorKind::Plugin, format!("{e} ({plugin} plugin); query dropped")));
        }
        let out = self.host.output();
        for &r in &out.reports {
            if failure.is_some() {
                if let Report::Log { level, msg } = r {
                    log_line(plugin, addr, level, out.text(msg));
                }
                continue;
            }
            match r {
                Report::Send { to, data } => {
                    let bytes = out.bytes(data);
                    match check_send(q, plugin, to, bytes.len(), done.is_some()) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err((e, over_budget)) => {
                            self.stats.over_budget += u64::from(over_budget);
                            failure = Some(e);
                            continue;
                        }
                    }
                    q.last_send = Some(now);
                    self.bucket.tokens -= 1.0;
                    self.stats.sent += 1;
                    self.transmits.push_back((addr, self.transmit_bytes.len(), bytes.len()));
                    self.transmit_bytes.extend_from_slice(bytes);
                }
                Report::ListComplete(complete) => q.list_complete = complete,
                Report::MasterEntry(a) => {
                    let Some(m) = q.master.as_deref_mut() else {
                        failure = Some(QueryError::new(
                            ErrorKind::Plugin,
                            format!("the {plugin} plugin reported master entries for a server query"),
                        ));
                        continue;
                    };
                    if m.entries.len() >= MAX_MASTER_ENTRIES {
                        failure = Some(too_many(plugin, "master entries", MAX_MASTER_ENTRIES));
                        continue;
                    }
                    let a = normalize(a);
                    if m.seen.insert(AddrKey::new(a)) {
                        m.entries.push(a);
                    }
                }
                Report::Done { status, error } => {
                    if done.is_none() {
                        done = Some(if status.is_ok() {
                            Ok(())
                        } else {
                            let kind = ErrorKind::from_status(status);
                            let detail = if error.is_empty() {
                                status.name().to_lowercase()
                            } else {
                                out.text(error).to_owned()
                            };
                            Err(QueryError::new(kind, detail))
                        });
                    }
                }
                Report::Log { level, msg } => log_line(plugin, addr, level, out.text(msg)),
                Report::Rejected(why) => {
                    failure = Some(QueryError::new(
                        ErrorKind::Plugin,
                        format!("the {plugin} plugin reported invalid data ({why}); query dropped"),
                    ));
                }
                Report::TooMany { what, max } => failure = Some(too_many(plugin, what, max)),
            }
        }
        (failure, done)
    }

    /// Query `key`'s plugin reported its answer: the result goes out, and the next answers get about its size as
    /// room.
    fn finish_answered(&mut self, now: Instant, key: usize) {
        let q = &mut self.running[key];
        // The answer leaves its box, which is kept for a recycled answer ([`Scan::recycle`]).
        let mut answer = match q.answer.take() {
            Some(mut b) => {
                let a = std::mem::take(&mut *b);
                if self.empty_boxes.len() < MAX_SPARE_ANSWERS {
                    self.empty_boxes.push(b);
                }
                a
            }
            None => Answer::default(),
        };
        if let Some(m) = q.master.take() {
            answer.set_servers(Some(m.entries));
        } else {
            answer.set_player_list_known(q.list_complete || answer.player_count() > 0);
        }
        if !q.list_complete && q.kind == ProtocolKind::Server {
            answer.set_raw("player_list_complete", FieldValue::Bool(false));
        }
        // The next answers get about this much room at once (a decaying maximum, capped).
        let (text, fields, players) = answer.sizes();
        let (ht, hf, hp) = self.answer_hint;
        self.answer_hint = (
            text.max(ht - ht / 8).min(MAX_ANSWER_HINT.0),
            fields.max(hf - hf / 8).min(MAX_ANSWER_HINT.1),
            players.max(hp - hp / 8).min(MAX_ANSWER_HINT.2),
        );
        self.finish(now, key, Ok(answer));
    }

    /// Query `key` is still running: asks its plugin for the next deadline (no answer is lent: reports from there
    /// are refused) and re-arms its timer.
    fn await_plugin(&mut self, now: Instant, key: usize, plugin: &str) {
        let d = match &mut self.running[key].runner {
            Runner::Plugin(inst) => inst.next_deadline_ms(),
            Runner::Tcp => None,
        };
        let reported = {
            let out = self.host.output();
            out.data_reports > 0 || out.reports.iter().any(|r| !matches!(r, Report::Log { .. }))
        };
        if reported {
            self.finish(
                now,
                key,
                Err(QueryError::new(
                    ErrorKind::Plugin,
                    format!("the {plugin} plugin reported from next_deadline_ms; query dropped"),
                )),
            );
            return;
        }
        let q = &mut self.running[key];
        q.plugin_deadline = d.map(|ms| self.epoch.checked_add(Duration::from_millis(ms)).unwrap_or(q.hard_deadline));
        self.rearm(key);
    }

    fn rearm(&mut self, key: usize) {
        let Some(q) = self.running.get_mut(key) else { return };
        let mut next = q.hard_deadline;
        if let Some(d) = q.plugin_deadline {
            // A deadline that is already due right after an `on_timeout` is held back a millisecond, so a plugin
            // that always answers "now" costs at most one call per millisecond until the host deadline.
            let d = match q.last_timeout_call {
                Some(last) if d <= last => later(last, Duration::from_millis(1)),
                _ => d,
            };
            next = next.min(d);
        }
        if q.armed != Some(next) {
            q.armed = Some(next);
            self.timer_seq += 1;
            self.timers.push(Reverse((next, self.timer_seq, key, q.tag)));
        }
    }

    fn finish(&mut self, now: Instant, key: usize, outcome: Result<Answer, QueryError>) {
        if !self.running.contains(key) {
            return;
        }
        let q = self.running.remove(key);
        let addr = AddrKey::new(q.target.addr);
        if let hash_map::Entry::Occupied(e) = self.by_addr.entry(addr) {
            if *e.get() == key {
                e.remove();
            }
        }
        self.last_end.insert(addr, now);
        self.stats.finished += 1;
        match &outcome {
            Ok(_) => self.stats.answered += 1,
            Err(e) => match e.kind {
                ErrorKind::Timeout => self.stats.timed_out += 1,
                ErrorKind::Malformed => self.stats.malformed += 1,
                ErrorKind::Refused => self.stats.refused += 1,
                ErrorKind::Plugin => self.stats.plugin_errors += 1,
                ErrorKind::Unsupported | ErrorKind::Error => self.stats.other_errors += 1,
            },
        }
        if let Err(e) = &outcome {
            debug!(protocol = %q.target.protocol, server = %q.target.addr, error = %e, "query failed");
        }
        let mut outcome = outcome;
        let expand = match (&mut outcome, &q.target.expand) {
            (Ok(a), Some((proto, params))) => {
                let servers = a.servers().map(<[SocketAddr]>::to_vec);
                servers.map(|s| {
                    let (taken, counts) = self.filter_entries(&s, proto);
                    // The master's answer keeps every entry it listed (`servers`) and says what the scan took.
                    let int = |n: u64| FieldValue::Int(i64::try_from(n).unwrap_or(i64::MAX));
                    a.set_raw("entries_taken", int(counts.accepted));
                    a.set_raw("dropped_special_use", int(counts.special_use));
                    a.set_raw("dropped_ports_per_host", int(counts.ports_per_host));
                    (taken, proto.clone(), params.clone())
                })
            }
            _ => None,
        };
        let mut q = q;
        let result = QueryResult {
            index: q.index,
            protocol: std::mem::take(&mut q.target.protocol),
            address: q.target.addr,
            ping_ms: q.ping.map(|d| (d.as_secs_f64() * 10_000.0).round() / 10.0),
            outcome,
        };
        // The instance is destroyed here (dropping `q`), outside any call into the plugin.
        drop(q);
        self.events.push_back(ScanEvent::Result(result));
        if let Some((servers, protocol, params)) = expand {
            for addr in servers {
                let t = Target { protocol: protocol.clone(), addr, params: params.clone(), expand: None };
                if let Err(AddError::Full) = self.add(now, t, true) {
                    warn!("too many targets; the rest of the master list is dropped");
                    break;
                }
            }
        }
    }
}

impl Scan {
    /// The entries of a master's list that the scan takes for `protocol`: new ones (not yet queued for it) that
    /// pass the master policy; counts what was dropped (also in [`ScanStats`]).
    fn filter_entries(&mut self, entries: &[SocketAddr], protocol: &str) -> (Vec<SocketAddr>, FilterCounts) {
        let proto = self.protocol_names.iter().position(|p| p == protocol);
        let before = self.master_filter.counts();
        let mut taken = Vec::with_capacity(entries.len().min(1 << 16));
        for &a in entries {
            let a = normalize(a);
            if proto.is_some_and(|p| self.known.contains(&(p, AddrKey::new(a)))) {
                continue; // a duplicate: counted by `add`, not charged to its host twice
            }
            if self.master_filter.check(a).is_ok() {
                taken.push(a);
            }
        }
        let after = self.master_filter.counts();
        let counts = FilterCounts {
            accepted: after.accepted - before.accepted,
            special_use: after.special_use - before.special_use,
            ports_per_host: after.ports_per_host - before.ports_per_host,
        };
        self.stats.dropped_special_use += counts.special_use;
        self.stats.dropped_ports_per_host += counts.ports_per_host;
        (taken, counts)
    }
}

/// Random bytes from the operating system, drawn [`RandomPool::BATCH`] queries' worth at a time (one `getrandom`
/// call per batch instead of one per query).
#[derive(Default)]
struct RandomPool {
    buf: Vec<u8>,
    used: usize,
}

impl RandomPool {
    /// Queries served per draw.
    const BATCH: usize = 64;
    /// Bytes per query: a seed and the plugin's random bytes.
    const PER_QUERY: usize = 8 + query_abi::RANDOM_LEN;

    /// A seed and random bytes for one query, never handed out twice; `None` when the operating system has none.
    fn take(&mut self) -> Option<(u64, [u8; query_abi::RANDOM_LEN])> {
        if self.used + Self::PER_QUERY > self.buf.len() {
            self.buf.resize(Self::BATCH * Self::PER_QUERY, 0);
            if let Err(e) = getrandom::fill(&mut self.buf) {
                warn!(error = %e, "no random bytes from the operating system");
                self.buf.clear();
                self.used = 0;
                return None;
            }
            self.used = 0;
        }
        let chunk = self.buf.get(self.used..self.used + Self::PER_QUERY)?;
        let (seed, rest) = chunk.split_at(8);
        let seed = u64::from_le_bytes(seed.try_into().ok()?);
        let random: [u8; query_abi::RANDOM_LEN] = rest.try_into().ok()?;
        // Spent bytes are wiped, so that nothing later can read a token back out of the pool.
        if let Some(c) = self.buf.get_mut(self.used..self.used + Self::PER_QUERY) {
            c.fill(0);
        }
        self.used += Self::PER_QUERY;
        // Seed 0 means "derive from the config" elsewhere; a random 0 is as good as any other value.
        Some((seed, random))
    }
}

/// `t + d`, or a day after `t` when that overflows (a configuration with absurd durations).
fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d).or_else(|| t.checked_add(Duration::from_secs(86_400))).unwrap_or(t)
}

/// Checks one datagram a query's plugin wants to send (`len` bytes to `to`), and counts it: `Ok(true)` to send it,
/// `Ok(false)` to drop it (the plugin already reported its end), or the failure that ends the query (more than
/// [`MAX_SENDS_PER_QUERY`], another address than its target, over a master entry's [`entry_budget`]: then `true`).
fn check_send(q: &mut Query, plugin: &str, to: SocketAddr, len: usize, done: bool) -> Result<bool, (QueryError, bool)> {
    q.sends += 1;
    if q.sends > MAX_SENDS_PER_QUERY {
        let e = format!("the {plugin} plugin sent more than {MAX_SENDS_PER_QUERY} datagrams for one query");
        return Err((QueryError::new(ErrorKind::Plugin, e), false));
    }
    if done {
        return Ok(false);
    }
    let to = normalize(to);
    if to != q.target.addr {
        // Replies are matched by address: a plugin may only talk to its own target.
        let e = format!("the {plugin} plugin tried to send to {to}, not to its target");
        return Err((QueryError::new(ErrorKind::Plugin, e), false));
    }
    q.bytes = q.bytes.saturating_add(len);
    if let Some((max_sends, max_bytes)) = q.budget {
        if q.sends > max_sends || q.bytes > max_bytes {
            let e = format!(
                "the {plugin} plugin would send more than a master entry may cause ({max_sends} datagrams, {max_bytes} \
                 bytes)"
            );
            return Err((QueryError::new(ErrorKind::Plugin, e), true));
        }
    }
    Ok(true)
}

fn plugin_name(q: &Query) -> &str {
    match &q.runner {
        Runner::Plugin(inst) => inst.plugin().name(),
        Runner::Tcp => BZFLAG,
    }
}

fn too_many(plugin: &str, what: &str, max: usize) -> QueryError {
    QueryError::new(ErrorKind::Plugin, format!("the {plugin} plugin reported more than {max} {what}; query dropped"))
}

fn create_error(lib: &PluginLibrary, protocol: &str, e: CallError) -> QueryError {
    let name = lib.name();
    match e {
        CallError::UnknownProtocol => {
            QueryError::new(ErrorKind::Unsupported, format!("the {name} plugin does not speak {protocol:?}"))
        }
        CallError::Unsupported => QueryError::new(
            ErrorKind::Unsupported,
            format!("the {name} plugin refused the parameters for {protocol:?} (see its log line)"),
        ),
        e => QueryError::new(ErrorKind::Plugin, format!("{e} ({name} plugin); query dropped")),
    }
}

fn log_reports(lib: &PluginLibrary, addr: SocketAddr, out: &CallOutput) {
    for r in &out.reports {
        if let Report::Log { level, msg } = *r {
            log_line(lib.name(), addr, level, out.text(msg));
        }
    }
}

fn log_line(plugin: &str, server: SocketAddr, level: i32, msg: &str) {
    match level {
        query_abi::LOG_ERROR => error!(plugin, %server, "{msg}"),
        query_abi::LOG_WARN => warn!(plugin, %server, "{msg}"),
        query_abi::LOG_INFO => info!(plugin, %server, "{msg}"),
        query_abi::LOG_DEBUG => debug!(plugin, %server, "{msg}"),
        _ => trace!(plugin, %server, "{msg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hard_timeout_covers_the_plugin_waits() {
        let c = ScanConfig { timeout: Duration::from_millis(1000), retries: 2, ..ScanConfig::default() };
        assert_eq!(c.hard_timeout(), Duration::from_secs(16));
        let c = ScanConfig { timeout: Duration::from_millis(100), retries: 0, ..ScanConfig::default() };
        assert_eq!(c.hard_timeout(), Duration::from_secs(4));
    }

    #[test]
    fn unknown_protocols_fail_at_once_and_duplicates_are_dropped() {
        let now = Instant::now();
        let mut s = Scan::new(PluginSet::default(), ScanConfig::default(), now);
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(s.add_target(now, Target::new("nope", a)), Ok(0));
        assert_eq!(s.add_target(now, Target::new("nope", a)), Err(AddError::Duplicate));
        let Some(ScanEvent::Result(r)) = s.poll_event() else { panic!("no result") };
        let e = r.outcome.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.detail.contains("no plugin"), "{e}");
        assert!(s.is_done());
        assert_eq!(s.poll_timeout(), None);
    }

    #[test]
    fn bzflag_runs_as_a_tcp_query_and_late_results_are_ignored() {
        let now = Instant::now();
        let mut s = Scan::new(PluginSet::default(), ScanConfig::default(), now);
        let a: SocketAddr = "127.0.0.1:5154".parse().unwrap();
        s.add_target(now, Target::new(BZFLAG, a)).unwrap();
        let q = s.poll_tcp_query().unwrap();
        assert_eq!(q.addr, a);
        assert!(!s.is_done());
        let t = s.poll_timeout().unwrap();
        s.handle_timeout(t);
        let Some(ScanEvent::Result(r)) = s.poll_event() else { panic!("no result") };
        assert_eq!(r.outcome.unwrap_err().kind, ErrorKind::Timeout);
        s.handle_tcp_result(t, q.id, Ok(Answer::default()), None);
        assert!(s.poll_event().is_none());
        assert!(s.is_done());
    }

    #[test]
    fn the_rate_limit_holds_back_new_queries() {
        let now = Instant::now();
        let cfg = ScanConfig { rate: 10, burst: 2, ..ScanConfig::default() };
        let mut s = Scan::new(PluginSet::default(), cfg, now);
        for port in 1..=5 {
            s.add_target(now, Target::new(BZFLAG, SocketAddr::from(([127, 0, 0, 1], port)))).unwrap();
        }
        let mut started = 0;
        while s.poll_tcp_query().is_some() {
            started += 1;
        }
        assert_eq!(started, 2);
        let next = s.poll_timeout().unwrap();
        assert!(next > now && next <= now + Duration::from_millis(100));
        s.handle_timeout(next);
        assert!(s.poll_tcp_query().is_some());
        assert!(s.poll_tcp_query().is_none());
    }

    #[test]
    fn once_the_bucket_runs_dry_new_queries_start_in_batches() {
        let now = Instant::now();
        // 5000 datagrams per second: a batch is 10 tokens, two milliseconds' worth.
        let cfg = ScanConfig { rate: 5000, burst: 10, ..ScanConfig::default() };
        let mut s = Scan::new(PluginSet::default(), cfg, now);
        for port in 1..=40 {
            s.add_target(now, Target::new(BZFLAG, SocketAddr::from(([127, 0, 0, 1], port)))).unwrap();
        }
        let started = |s: &mut Scan| std::iter::from_fn(|| s.poll_tcp_query()).count();
        assert_eq!(started(&mut s), 10, "the burst");
        // Half a millisecond later (2.5 tokens) nothing starts: the bucket waits for a batch.
        s.handle_timeout(now + Duration::from_micros(500));
        assert_eq!(started(&mut s), 0);
        let next = s.poll_timeout().unwrap();
        assert_eq!(next, now + Duration::from_millis(2));
        s.handle_timeout(next);
        assert_eq!(started(&mut s), 10, "a batch at once");
        // The average rate holds: ten more every two milliseconds.
        s.handle_timeout(now + Duration::from_millis(4));
        s.handle_timeout(now + Duration::from_millis(6));
        assert_eq!(started(&mut s), 20);
        assert_eq!(s.stats().started, 40);
    }
}
