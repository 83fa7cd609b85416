//! The safe side: what plugin authors implement ([`QueryEngine`]) and what they talk to ([`Sink`]).

use crate::{Status, DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS, LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_TRACE, LOG_WARN};
use std::fmt;
use std::net::SocketAddr;

/// A reported value, borrowed. Becomes an [`crate::AbiValue`] at the boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Unknown / not applicable (JSON `null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// Text.
    Str(&'a str),
}

impl From<bool> for Value<'_> {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<i64> for Value<'_> {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}
impl From<i32> for Value<'_> {
    fn from(i: i32) -> Self {
        Value::Int(i64::from(i))
    }
}
impl From<u32> for Value<'_> {
    fn from(i: u32) -> Self {
        Value::Int(i64::from(i))
    }
}
impl From<u8> for Value<'_> {
    fn from(i: u8) -> Self {
        Value::Int(i64::from(i))
    }
}
impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Str(s)
    }
}
impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(o: Option<T>) -> Self {
        o.map_or(Value::Null, Into::into)
    }
}

/// One player of a server's list, borrowed. Fields a protocol lacks are `None`/[`Value::Null`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Player<'a> {
    /// Name as the server sent it (colour codes kept), lossily decoded to UTF-8.
    pub name: &'a str,
    /// Score, frags or time.
    pub score: Option<i64>,
    /// Team number or name.
    pub team: Value<'a>,
    /// Ping in ms as the server reports it.
    pub ping: Option<i64>,
    /// Protocol-specific fields (`clan`, `country`, `name_plain`...).
    pub extra: &'a [(&'a str, Value<'a>)],
}

impl<'a> Player<'a> {
    /// A player with only a name.
    pub const fn named(name: &'a str) -> Player<'a> {
        Player { name, score: None, team: Value::Null, ping: None, extra: &[] }
    }
}

/// Log levels for [`Sink::log`]; the numbers are the ABI's `LOG_*` constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed.
    Error,
    /// Something is wrong but the query goes on.
    Warn,
    /// Noteworthy.
    Info,
    /// Detail, including hostile or odd input.
    Debug,
    /// Per-packet detail.
    Trace,
}

impl Level {
    /// The ABI number (`LOG_ERROR`..`LOG_TRACE`).
    pub const fn as_i32(self) -> i32 {
        match self {
            Level::Error => LOG_ERROR,
            Level::Warn => LOG_WARN,
            Level::Info => LOG_INFO,
            Level::Debug => LOG_DEBUG,
            Level::Trace => LOG_TRACE,
        }
    }
}

/// The options of one query, copied out of [`crate::QueryOptions`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryConfig {
    /// Wait for the answer to a first request, in ms (never 0).
    pub timeout_ms: u32,
    /// How many times an unanswered request may be re-sent.
    pub retries: u32,
    /// Seed for tokens and challenges.
    pub seed: u64,
    /// Random bytes for long tokens and challenges ([`crate::QueryOptions::random`]); `None` when the host gave
    /// none (then [`QueryConfig::random_bytes`] derives them from the seed).
    pub random: Option<[u8; crate::RANDOM_LEN]>,
    /// Highest log level the host wants.
    pub max_log_level: i32,
    /// Protocol-specific parameters, in the order given.
    pub params: Vec<(String, String)>,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            timeout_ms: DEFAULT_TIMEOUT_MS,
            retries: DEFAULT_RETRIES,
            seed: 0,
            random: None,
            max_log_level: LOG_INFO,
            params: Vec::new(),
        }
    }
}

impl QueryConfig {
    /// The value of parameter `key` (the last one if given twice).
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A copy without the parameters (engines keep timing and seed, and read parameters once in `new`).
    pub fn without_params(&self) -> QueryConfig {
        QueryConfig {
            timeout_ms: self.timeout_ms,
            retries: self.retries,
            seed: self.seed,
            random: self.random,
            max_log_level: self.max_log_level,
            params: Vec::new(),
        }
    }

    /// Adds a parameter (builder style, for tests and hosts).
    pub fn with_param(mut self, key: &str, value: &str) -> Self {
        self.params.push((key.to_owned(), value.to_owned()));
        self
    }

    /// How long to wait after the request of attempt `attempt` (0 = the first send): `timeout_ms`, doubled per
    /// retry, capped at four times.
    pub fn wait_ms(&self, attempt: u32) -> u64 {
        wait_ms(self.timeout_ms, attempt)
    }

    /// The query's random bytes: the host's ([`QueryConfig::random`]) when it gave them, else
    /// [`crate::RANDOM_LEN`] bytes derived from the seed ([`QueryConfig::derive`] from 1000 on).
    pub fn random_bytes(&self) -> [u8; crate::RANDOM_LEN] {
        if let Some(r) = self.random {
            return r;
        }
        let mut out = [0u8; crate::RANDOM_LEN];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let w = self.derive(1000 + i as u64).to_le_bytes();
            chunk.copy_from_slice(&w[..chunk.len()]);
        }
        out
    }

    /// The `n`-th 64-bit pseudo-random number derived from the seed (splitmix64). Deterministic: tests with a
    /// fixed seed see the same tokens every run.
    pub fn derive(&self, n: u64) -> u64 {
        let mut z = self.seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `timeout_ms`, doubled after the first retry, four times after later ones (never 0).
fn wait_ms(timeout_ms: u32, attempt: u32) -> u64 {
    u64::from(timeout_ms.max(1)) << attempt.min(2)
}

/// The retry timer of one query: which attempt is out, when it times out, and whether a retry is left. An engine
/// keeps one instead of its own attempt counter and deadline, and answers [`QueryEngine::next_deadline`] with
/// [`RetryTimer::deadline`].
///
/// Attempt 0 is the first request; there are `1 + retries` attempts in all, and attempt `n` waits
/// [`QueryConfig::wait_ms`]`(n)`: `timeout_ms`, twice that after the first retry, four times after later ones.
/// Engines decide what to send, when to give up early and any other wait (for the next page of a reply, say).
///
/// ```
/// use query_abi::{QueryConfig, RetryTimer};
///
/// let config = QueryConfig { timeout_ms: 100, retries: 1, ..QueryConfig::default() };
/// let mut timer = RetryTimer::new(&config);
/// timer.arm(0); // the first request went out at 0
/// assert_eq!(timer.deadline(), Some(100));
/// assert!(timer.is_waiting(99)); // on_timeout(99) is early: nothing to do
/// assert!(timer.next_attempt()); // on_timeout(100): a retry is left, send again
/// timer.arm(100);
/// assert_eq!(timer.deadline(), Some(300));
/// assert!(!timer.next_attempt()); // on_timeout(300): give up
/// assert_eq!(timer.attempts(), 2); // "no reply after 2 request(s)"
/// timer.stop();
/// assert_eq!(timer.deadline(), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryTimer {
    timeout_ms: u32,
    retries: u32,
    attempt: u32,
    deadline: Option<u64>,
}

impl RetryTimer {
    /// A timer with `config`'s timeout and retries, at attempt 0 and not armed.
    pub fn new(config: &QueryConfig) -> RetryTimer {
        RetryTimer { timeout_ms: config.timeout_ms, retries: config.retries, attempt: 0, deadline: None }
    }

    /// The attempt out now: 0 for the first request, `n` for the `n`-th retry.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How many attempts were made (`attempt() + 1`), for the "no reply after N request(s)" texts.
    pub fn attempts(&self) -> u32 {
        self.attempt.saturating_add(1)
    }

    /// Whether a retry is left.
    pub fn retries_left(&self) -> bool {
        self.attempt < self.retries
    }

    /// Moves on to the next attempt if a retry is left (then the caller sends again and [`RetryTimer::arm`]s);
    /// `false` when none is left (then the caller gives up or reports what it has).
    pub fn next_attempt(&mut self) -> bool {
        if !self.retries_left() {
            return false;
        }
        self.attempt += 1;
        true
    }

    /// How long the current attempt waits for an answer ([`QueryConfig::wait_ms`] of [`RetryTimer::attempt`]).
    pub fn wait_ms(&self) -> u64 {
        wait_ms(self.timeout_ms, self.attempt)
    }

    /// How long the first attempt waits ([`QueryConfig::wait_ms`]`(0)`): the base of waits that do not grow with
    /// retries.
    pub fn first_wait_ms(&self) -> u64 {
        wait_ms(self.timeout_ms, 0)
    }

    /// Sets the deadline to the current attempt's wait from `now_ms`.
    pub fn arm(&mut self, now_ms: u64) {
        self.arm_in(now_ms, self.wait_ms());
    }

    /// Sets the deadline to `wait_ms` from `now_ms` (a wait of the engine's own: the next page, a grace period).
    pub fn arm_in(&mut self, now_ms: u64, wait_ms: u64) {
        self.deadline = Some(now_ms.saturating_add(wait_ms));
    }

    /// Clears the deadline (the query is over).
    pub fn stop(&mut self) {
        self.deadline = None;
    }

    /// The deadline, if armed.
    pub fn deadline(&self) -> Option<u64> {
        self.deadline
    }

    /// True while the deadline is set and `now_ms` has not reached it: an early (spurious)
    /// [`QueryEngine::on_timeout`] that must do nothing.
    pub fn is_waiting(&self, now_ms: u64) -> bool {
        self.deadline.is_some_and(|d| now_ms < d)
    }
}

/// Where an engine sends datagrams and reports results. The export layer implements it over the host's callbacks
/// (and drops everything after [`Sink::done`]); tests use [`crate::collect::Collector`].
pub trait Sink {
    /// Ask the host to send one datagram. [`Status::OK`] when accepted.
    fn send(&mut self, to: SocketAddr, data: &[u8]) -> Status;
    /// A well-known server field (see [`crate::keys`]).
    fn server(&mut self, key: &str, value: Value<'_>);
    /// A server rule (cvar/setting) as text.
    fn rule(&mut self, key: &str, value: &str);
    /// A protocol-specific raw field.
    fn raw(&mut self, key: &str, value: Value<'_>);
    /// One player.
    fn player(&mut self, player: &Player<'_>);
    /// One server address from a master list.
    fn master_entry(&mut self, addr: SocketAddr);
    /// The query is finished: [`Status::OK`] or an error code with its reason. Only the first call counts.
    fn done(&mut self, status: Status, error: &str);
    /// A log line.
    fn log(&mut self, level: Level, msg: &str);
    /// Whether a line at `level` would be kept (check before formatting an expensive message).
    fn log_enabled(&self, level: Level) -> bool {
        let _ = level;
        true
    }

    /// `done(Status::OK, "")`.
    fn finish(&mut self) {
        self.done(Status::OK, "");
    }

    /// Logs `args` at `level` if enabled (formats only then).
    fn log_fmt(&mut self, level: Level, args: fmt::Arguments<'_>) {
        if self.log_enabled(level) {
            match args.as_str() {
                Some(s) => self.log(level, s),
                None => self.log(level, &args.to_string()),
            }
        }
    }

    /// For [`crate::misbehave`] only: the raw host table and tag, when this sink is the export layer's.
    #[doc(hidden)]
    fn raw_host(&self) -> Option<(crate::HostApi, u64)> {
        None
    }
}

/// What an engine made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datagram {
    /// It was for this query (progress, a result, or a reply so broken that the query failed).
    Accepted,
    /// Not for this query: wrong magic, token or challenge, or a late duplicate. Nothing changed.
    Ignored,
}

/// Why [`QueryEngine::new`] refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateError {
    /// The engine does not speak this protocol.
    UnknownProtocol,
    /// A parameter is missing or invalid; the text says which and why.
    BadConfig(String),
}

impl CreateError {
    /// The ABI status for this error.
    pub fn status(&self) -> Status {
        match self {
            CreateError::UnknownProtocol => Status::UNKNOWN_PROTOCOL,
            CreateError::BadConfig(_) => Status::UNSUPPORTED,
        }
    }
}

impl fmt::Display for CreateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CreateError::UnknownProtocol => f.write_str("unknown protocol"),
            CreateError::BadConfig(s) => write!(f, "bad query parameters: {s}"),
        }
    }
}

impl std::error::Error for CreateError {}

/// One query as a sans-IO state machine: datagrams and `now_ms` in; datagrams to send, results and the next
/// deadline out. No sockets, no clock, no threads, no unseeded randomness, and no panics on any input.
///
/// Call discipline (the export layer and tests follow it): `new` once (it usually sends the first request), then
/// any sequence of `on_datagram` and `on_timeout`, asking `next_deadline` after each. The engine ends the query
/// with [`Sink::done`] (or [`Sink::finish`]); after that nothing it reports reaches the host and the export layer
/// stops calling it.
pub trait QueryEngine: Sized {
    /// Starts a query of `protocol` to `target` at `now_ms`.
    fn new(
        protocol: &str,
        target: SocketAddr,
        config: &QueryConfig,
        now_ms: u64,
        sink: &mut dyn Sink,
    ) -> Result<Self, CreateError>;

    /// A datagram from `from` arrived at `now_ms`.
    fn on_datagram(&mut self, now_ms: u64, from: SocketAddr, data: &[u8], sink: &mut dyn Sink) -> Datagram;

    /// `now_ms` reached (or passed) [`QueryEngine::next_deadline`]. Spurious calls must be harmless.
    fn on_timeout(&mut self, now_ms: u64, sink: &mut dyn Sink);

    /// When the engine next wants [`QueryEngine::on_timeout`], if ever.
    fn next_deadline(&self) -> Option<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_timer_waits_as_the_config_says_and_counts_attempts() {
        let config = QueryConfig { timeout_ms: 150, retries: 3, ..QueryConfig::default() };
        let mut t = RetryTimer::new(&config);
        assert_eq!((t.attempt(), t.attempts(), t.deadline()), (0, 1, None));
        assert!(!t.is_waiting(0), "not armed: nothing to wait for");
        let mut now = 10;
        for attempt in 0..=3 {
            assert_eq!(t.attempt(), attempt);
            assert_eq!(t.wait_ms(), config.wait_ms(attempt));
            assert_eq!(t.first_wait_ms(), config.wait_ms(0));
            t.arm(now);
            let d = now + config.wait_ms(attempt);
            assert_eq!(t.deadline(), Some(d));
            assert!(t.is_waiting(d - 1) && !t.is_waiting(d));
            assert_eq!(t.retries_left(), attempt < 3);
            now = d;
            assert_eq!(t.next_attempt(), attempt < 3);
        }
        assert_eq!((t.attempt(), t.attempts()), (3, 4), "1 + retries attempts, no more");
        t.arm_in(now, 7);
        assert_eq!(t.deadline(), Some(now + 7));
        t.stop();
        assert_eq!(t.deadline(), None);
        let t = RetryTimer::new(&QueryConfig { timeout_ms: 0, retries: 0, ..QueryConfig::default() });
        assert_eq!(t.wait_ms(), 1, "never a zero wait");
        assert!(!t.clone().next_attempt());
        let mut far = RetryTimer::new(&config);
        far.arm_in(u64::MAX - 1, 1000);
        assert_eq!(far.deadline(), Some(u64::MAX));
    }
}
