//! What `observe` adds about the network: the periodic per-player `netstats` lines ([`NetstatsClock`],
//! [`netstats_lines`]) and coming back after the server goes away ([`Reconnect`], [`reconnecting_line`],
//! [`reconnected_line`]).
//!
//! Like the rest of the observer's output these are plain functions of the engine's state and a `now` the caller
//! passes in: no clock, no I/O.
//!
//! JSON shapes (one line each, like the event lines):
//!
//! * `{"v":1,"t":T,"type":"netstats","id","callsign","team","updates_per_s","jitter_ms",
//!   "dr_error":{"p50","p95","max","samples"},"lag_ms","server_jitter_ms","server_loss_pct","updates",
//!   "out_of_order","missing","since_last_ms","flagged"}`, one per player (observers left out) every
//!   `--netstats` seconds; see [`crate::bzflag::netstats`] for what each figure means;
//! * `{"v":1,"t":T,"type":"link","lag_ms","command_rtt_ms","udp"}` about our own link, before them
//!   ([`link_line`]);
//! * `{"v":1,"t":T,"type":"reconnecting","attempt":N,"in_ms":MS,"reason":"..."}` when the session ended and
//!   attempt `N` will connect in `MS` milliseconds;
//! * `{"v":1,"t":T,"type":"reconnected","attempt":N,"down_ms":MS}` when a new session is in the game again
//!   (`down_ms`: since the old one ended).

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bzflag::consts::Team;
use crate::bzflag::netstats::PlayerNet;
use crate::bzflag::session::{Session, SessionEnd};
use crate::observer::{json_envelope, strip_control, Stamp};

/// When to print the netstats lines and when to ask the server for `/lagstats` (a little before, so that the
/// lines carry a fresh server-measured lag).
#[derive(Debug, Clone)]
pub struct NetstatsClock {
    every: Duration,
    next: Instant,
    asked: bool,
}

/// What [`NetstatsClock::poll`] says to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetstatsDue {
    /// Nothing.
    Nothing,
    /// Ask the server for `/lagstats` ([`Session::request_lag_stats`]).
    AskLag,
    /// Print the lines ([`netstats_lines`]).
    Print,
}

impl NetstatsClock {
    /// Every `every` from `start` (`None` when `every` is zero: off).
    pub fn new(every: Duration, start: Instant) -> Option<NetstatsClock> {
        (!every.is_zero()).then(|| NetstatsClock { every, next: start + every, asked: false })
    }

    /// How long before printing `/lagstats` is asked for: half the period, at most 2 s.
    pub fn lead(&self) -> Duration {
        (self.every / 2).min(Duration::from_secs(2))
    }

    /// The next time [`NetstatsClock::poll`] has something to do.
    pub fn deadline(&self) -> Instant {
        if self.asked {
            self.next
        } else {
            self.next.checked_sub(self.lead()).unwrap_or(self.next)
        }
    }

    /// What is due at `now` (call again until [`NetstatsDue::Nothing`]). A late call prints once and goes on
    /// from `now`, without a burst of catch-up lines.
    pub fn poll(&mut self, now: Instant) -> NetstatsDue {
        if now >= self.next {
            self.asked = false;
            self.next += self.every;
            if self.next <= now {
                self.next = now + self.every;
            }
            return NetstatsDue::Print;
        }
        if !self.asked && now >= self.deadline() {
            self.asked = true;
            return NetstatsDue::AskLag;
        }
        NetstatsDue::Nothing
    }
}

/// The netstats lines of every player of `session` (observers left out), by id, at `now`; `t` is the time printed.
pub fn netstats_lines(session: &Session, now: Instant, t: impl Into<Stamp>, json: bool) -> Vec<String> {
    let t: Stamp = t.into();
    let game = session.game();
    let net = session.net_stats();
    let mut ids: Vec<u8> =
        game.players.values().filter(|p| p.team != Team::Observer && Some(p.id) != game.my_id).map(|p| p.id).collect();
    ids.sort_unstable();
    ids.into_iter()
        .filter_map(|id| {
            let p = game.player(id)?;
            let n = net.player(id, now)?;
            Some(if json {
                netstats_json_line(t, &p.callsign, p.team, &n)
            } else {
                netstats_text_line(&p.callsign, &n)
            })
        })
        .collect()
}

/// The line about our own link, printed with the netstats lines: its lag as the server measured it (`/lagstats`,
/// the `MsgLagPing` round trip) and the round trip we measured of that request, over TCP (ms, `null` when not
/// known), and whether the UDP link is up. JSON `{"v":1,"t":T,"type":"link","lag_ms","command_rtt_ms","udp"}`.
pub fn link_line(session: &Session, now: Instant, t: impl Into<Stamp>, json: bool) -> String {
    let net = session.net_stats();
    let lag_ms = net.own_lag_ms(now).map(f64::from);
    let command_rtt_ms = net.command_rtt_ms(now);
    let udp = session.udp_up();
    if json {
        #[derive(Serialize)]
        struct Line {
            #[serde(rename = "type")]
            kind: &'static str,
            lag_ms: Option<f64>,
            command_rtt_ms: Option<f64>,
            udp: bool,
        }
        with_t(t, &Line { kind: "link", lag_ms, command_rtt_ms, udp })
    } else {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} ms"));
        format!(
            "--- our link: lag {} (server), /lagstats round trip {} (ours), UDP {}",
            ms(lag_ms),
            ms(command_rtt_ms),
            if udp { "up" } else { "down" }
        )
    }
}

/// One `netstats` JSON line.
pub fn netstats_json_line(t: impl Into<Stamp>, callsign: &str, team: Team, net: &PlayerNet) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        id: u8,
        callsign: &'a str,
        team: Team,
        #[serde(flatten)]
        net: &'a PlayerNet,
    }
    let line = Line { kind: "netstats", id: net.id, callsign, team, net };
    with_t(t, &line)
}

/// `{"v":1,"t":T,` and then the fields of `body` (an object), in their order ([`json_envelope`]).
fn with_t(t: impl Into<Stamp>, body: &impl Serialize) -> String {
    json_envelope(t, body)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0} ms"))
}

fn units(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// One readable netstats line.
pub fn netstats_text_line(callsign: &str, n: &PlayerNet) -> String {
    let mut s = format!(
        "--- net {} ({}): {:.1} updates/s, jitter {}, dead-reckoning error p50 {} p95 {} max {}, lag {}, {} out of \
         order, {} missing, last update {}",
        strip_control(callsign),
        n.id,
        n.updates_per_s,
        ms(n.jitter_ms),
        units(n.dr_error.p50),
        units(n.dr_error.p95),
        units(n.dr_error.max),
        ms(n.lag_ms),
        n.out_of_order,
        n.missing,
        n.since_last_ms.map_or("never".into(), |m| format!("{m} ms ago")),
    );
    if let Some(why) = &n.flagged {
        s.push_str(&format!(" [FLAGGED: {why}]"));
    }
    s
}

/// Whether an observer whose session ended this way comes back with `--reconnect`: yes when the server went away
/// (it closed the connection, stopped answering, could not be reached, or dropped everybody with a `MsgSuperKill`
/// and no reason, which is what bzfs does when it shuts down); no when we left, were rejected, the server is
/// full, the stream was not BZFlag, or a kick came with a reason.
pub fn reconnects(end: &SessionEnd) -> bool {
    #[allow(unreachable_patterns)]
    match end {
        SessionEnd::ConnectFailed(_) | SessionEnd::ServerClosed { .. } | SessionEnd::Timeout { .. } => true,
        SessionEnd::Kicked { reason } => reason.trim().is_empty(),
        SessionEnd::Left | SessionEnd::Rejected { .. } | SessionEnd::ServerFull | SessionEnd::Protocol(_) => false,
        // An end kind added later (a shutdown told apart from a kick) that the documented exit codes count as the
        // server's failure comes back too.
        other => crate::observer::exit::of(other) == crate::observer::exit::PROTOCOL,
    }
}

/// A kick's reason is the server's text sent with it (bzfs writes "You were kicked off the server" and the
/// reason right before the `MsgSuperKill`, in one go); server text older than this when the kill came was not
/// about it.
pub const KICK_TEXT_AGE: Duration = Duration::from_millis(500);

/// Reconnection back-off: 0.5 s, 1 s, 2 s, 4 s, ... up to [`Reconnect::MAX_DELAY`]; back to the start once a
/// session is in the game again.
#[derive(Debug, Clone, Default)]
pub struct Reconnect {
    attempt: u32,
    down_since: Option<Instant>,
    last_server_text: Option<Instant>,
}

impl Reconnect {
    /// The first delay.
    pub const FIRST_DELAY: Duration = Duration::from_millis(500);
    /// The longest delay.
    pub const MAX_DELAY: Duration = Duration::from_secs(30);

    /// Nothing failed yet.
    pub fn new() -> Reconnect {
        Reconnect::default()
    }

    /// The session ended (or a new connect failed) at `now`: the number of the next attempt and how long to wait.
    pub fn failed(&mut self, now: Instant) -> (u32, Duration) {
        self.down_since.get_or_insert(now);
        let delay = Self::FIRST_DELAY.saturating_mul(1u32 << self.attempt.min(16)).min(Self::MAX_DELAY);
        self.attempt += 1;
        (self.attempt, delay)
    }

    /// A session is in the game again at `now`: the attempt that made it and how long we were away (`None` when
    /// nothing had failed).
    pub fn joined(&mut self, now: Instant) -> Option<(u32, Duration)> {
        let since = self.down_since.take()?;
        let attempt = std::mem::take(&mut self.attempt);
        Some((attempt, now.saturating_duration_since(since)))
    }

    /// The session got a line of text from the server at `at` (see [`Reconnect::comes_back`]).
    pub fn heard_server_text(&mut self, at: Instant) {
        self.last_server_text = Some(at);
    }

    /// Whether a session that ended this way at `at` comes back: [`reconnects`], and also a `MsgSuperKill` whose
    /// "reason" is server text from more than [`KICK_TEXT_AGE`] before it (a session reports the last server line
    /// as a kick's reason, however old; bzfs sends a shutdown's kill without a word).
    pub fn comes_back(&self, end: &SessionEnd, at: Instant) -> bool {
        match end {
            SessionEnd::Kicked { .. } => {
                reconnects(end) || self.last_server_text.is_none_or(|t| at.saturating_duration_since(t) > KICK_TEXT_AGE)
            }
            _ => reconnects(end),
        }
    }

    /// Attempts since the last time in the game.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

/// The line saying that attempt `attempt` will connect in `delay` because of `reason`.
pub fn reconnecting_line(t: impl Into<Stamp>, json: bool, attempt: u32, delay: Duration, reason: &str) -> String {
    let in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    if json {
        #[derive(Serialize)]
        struct Line<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            attempt: u32,
            in_ms: u64,
            reason: &'a str,
        }
        with_t(t, &Line { kind: "reconnecting", attempt, in_ms, reason })
    } else {
        format!("--- reconnecting in {:.1} s (attempt {attempt}): {}", delay.as_secs_f64(), strip_control(reason))
    }
}

/// The line saying that a reconnection made it (attempt `attempt`, away for `down`).
pub fn reconnected_line(t: impl Into<Stamp>, json: bool, attempt: u32, down: Duration) -> String {
    let down_ms = u64::try_from(down.as_millis()).unwrap_or(u64::MAX);
    if json {
        #[derive(Serialize)]
        struct Line {
            #[serde(rename = "type")]
            kind: &'static str,
            attempt: u32,
            down_ms: u64,
        }
        with_t(t, &Line { kind: "reconnected", attempt, down_ms })
    } else {
        format!("--- reconnected (attempt {attempt}) after {:.1} s away", down.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bzflag::consts::RejectCode;
    use crate::bzflag::session::{ConnectError, HelloError};
    use serde_json::Value;

    #[test]
    fn the_clock_asks_for_lag_before_printing_and_never_bursts() {
        let t0 = Instant::now();
        assert!(NetstatsClock::new(Duration::ZERO, t0).is_none());
        let mut c = NetstatsClock::new(Duration::from_secs(10), t0).unwrap();
        assert_eq!(c.deadline(), t0 + Duration::from_secs(8));
        assert_eq!(c.poll(t0 + Duration::from_secs(7)), NetstatsDue::Nothing);
        assert_eq!(c.poll(t0 + Duration::from_secs(8)), NetstatsDue::AskLag);
        assert_eq!(c.poll(t0 + Duration::from_secs(9)), NetstatsDue::Nothing);
        assert_eq!(c.deadline(), t0 + Duration::from_secs(10));
        assert_eq!(c.poll(t0 + Duration::from_secs(10)), NetstatsDue::Print);
        assert_eq!(c.poll(t0 + Duration::from_secs(10)), NetstatsDue::Nothing);
        // A minute late: one print, then every 10 s from then.
        assert_eq!(c.poll(t0 + Duration::from_secs(75)), NetstatsDue::Print);
        assert_eq!(c.poll(t0 + Duration::from_secs(75)), NetstatsDue::Nothing);
        assert_eq!(c.deadline(), t0 + Duration::from_secs(83));
        // A short period asks half-way.
        let c = NetstatsClock::new(Duration::from_secs(1), t0).unwrap();
        assert_eq!(c.deadline(), t0 + Duration::from_millis(500));
    }

    #[test]
    fn back_off_doubles_to_a_cap_and_resets_on_join() {
        let t0 = Instant::now();
        let mut r = Reconnect::new();
        assert_eq!(r.joined(t0), None);
        let delays: Vec<(u32, u64)> = (0..9).map(|_| r.failed(t0)).map(|(a, d)| (a, d.as_millis() as u64)).collect();
        assert_eq!(
            delays,
            [(1, 500), (2, 1000), (3, 2000), (4, 4000), (5, 8000), (6, 16000), (7, 30000), (8, 30000), (9, 30000)]
        );
        assert_eq!(r.joined(t0 + Duration::from_secs(70)), Some((9, Duration::from_secs(70))));
        assert_eq!(r.failed(t0).1, Reconnect::FIRST_DELAY);
        for _ in 0..100 {
            r.failed(t0);
        }
        assert_eq!(r.failed(t0).1, Reconnect::MAX_DELAY);
    }

    #[test]
    fn which_ends_reconnect() {
        assert!(reconnects(&SessionEnd::ServerClosed { during: "the game" }));
        assert!(reconnects(&SessionEnd::Timeout { during: "the game" }));
        assert!(reconnects(&SessionEnd::ConnectFailed(ConnectError::Recorded { detail: "refused".into() })));
        assert!(reconnects(&SessionEnd::Kicked { reason: String::new() }));
        assert!(!reconnects(&SessionEnd::Kicked { reason: "You were kicked off the server".into() }));
        assert!(!reconnects(&SessionEnd::Left));
        assert!(!reconnects(&SessionEnd::Rejected { code: RejectCode::BadTeam, reason: "taken".into() }));
        assert!(!reconnects(&SessionEnd::ServerFull));
        assert!(!reconnects(&SessionEnd::Protocol(HelloError::not_bzflag(b"not BZFlag").into())));
        // A kill whose "reason" is old server text is a shutdown; one right after the server's words is a kick.
        let t0 = Instant::now();
        let mut r = Reconnect::new();
        let kicked = SessionEnd::Kicked { reason: "You are in observer mode.".into() };
        assert!(r.comes_back(&kicked, t0));
        r.heard_server_text(t0);
        assert!(!r.comes_back(&kicked, t0 + Duration::from_millis(20)));
        assert!(r.comes_back(&kicked, t0 + Duration::from_secs(60)));
        assert!(r.comes_back(&SessionEnd::Kicked { reason: String::new() }, t0));
        assert!(!r.comes_back(&SessionEnd::Left, t0 + Duration::from_secs(60)));
    }

    #[test]
    fn lines_have_the_documented_shapes() {
        let t = Duration::from_millis(12_345);
        let l = reconnecting_line(t, true, 2, Duration::from_millis(1000), "the server closed the connection");
        let v: Value = serde_json::from_str(&l).unwrap();
        assert!(l.starts_with(r#"{"v":1,"t":12.345,"#), "{l}");
        assert_eq!(
            (v["type"].as_str(), v["attempt"].as_u64(), v["in_ms"].as_u64()),
            (Some("reconnecting"), Some(2), Some(1000))
        );
        let l = reconnected_line(t, true, 3, Duration::from_millis(4200));
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["attempt"].as_u64(), v["down_ms"].as_u64()),
            (Some("reconnected"), Some(3), Some(4200))
        );
        assert_eq!(
            reconnecting_line(t, false, 1, Duration::from_millis(500), "x\u{1b}[31m"),
            "--- reconnecting in 0.5 s (attempt 1): x"
        );

        let mut n = crate::bzflag::netstats::NetStats::new();
        n.on_join(4);
        let p = n.player(4, Instant::now()).unwrap();
        let l = netstats_json_line(t, "a\"b", Team::Red, &p);
        assert!(l.starts_with(r#"{"v":1,"t":12.345,"#), "{l}");
        let v: Value = serde_json::from_str(&l).unwrap();
        assert_eq!(
            (v["type"].as_str(), v["id"].as_u64(), v["callsign"].as_str(), v["team"].as_str()),
            (Some("netstats"), Some(4), Some("a\"b"), Some("red"))
        );
        assert!(v["dr_error"]["p95"].is_null() && v["flagged"].is_null() && v["updates_per_s"].is_number());
        let text = netstats_text_line("alice", &p);
        assert!(text.starts_with("--- net alice (4): 0.0 updates/s, jitter -,"), "{text}");
    }
}
