//! `bzhead observe SERVER`: one observer (or `--count N` of them on one event loop) that prints what happens on a
//! server, bzadmin-style text or JSON lines; with `--web`, `cli/web.rs` serves the live view next to it.
//!
//! What both forms share is here: the arguments, the observer's session configuration and options, and
//! [`Controls`] (lines typed on stdin, signals and `--for`). The dependency runs one way: `cli/web.rs` uses these;
//! this module knows nothing of it (`main.rs` sends `observe --web` there).

use std::io::{self, BufRead, BufWriter, StdoutLock, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::{player, PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::{Session, SessionConfig};
use bzhead::netwatch::{
    link_line, netstats_lines, reconnected_line, reconnecting_line, NetstatsClock, NetstatsDue, Reconnect,
};
use bzhead::observer::{json_envelope, json_line, text_line, Filter, Stamp};
use bzhead::reactor::{Clock, Reactor, SessionId, SessionOptions};
use bzhead::text::for_terminal;

use super::{exit, secs};

/// Arguments of `bzhead observe`.
#[derive(clap::Args)]
pub struct ObserveArgs {
    /// Server, HOST[:PORT] (port 5154 by default). Several only with --web: one observer each, on one event loop.
    #[arg(required = true, num_args = 1.., value_name = "SERVER")]
    pub servers: Vec<String>,
    /// Also serve the live web view (map, scoreboard, kill feed, chat; `/api/state?server=N`) on ADDR:PORT, or on
    /// 127.0.0.1:PORT for a bare PORT. The URL is printed on stderr; the events still go to stdout.
    #[arg(long, value_name = "ADDR")]
    pub web: Option<String>,
    /// With --web on a loopback address: also accept requests whose Host is NAME (say, the name a reverse proxy
    /// forwards; "*" for any); others than localhost, 127.x and [::1] get 421 (repeatable).
    #[arg(long = "allow-host", value_name = "NAME", requires = "web")]
    pub allow_host: Vec<String>,
    /// Callsign to join with.
    #[arg(long, default_value = "bzhead")]
    pub callsign: String,
    /// Motto.
    #[arg(long, default_value = "bzhead observer")]
    pub motto: String,
    /// Print JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
    /// Run this many observers in this one process, on one event loop: callsigns CALLSIGN1..CALLSIGNn (cut to
    /// BZFlag's 31 characters), joins staggered by --stagger-ms. Only the first observer's events are printed,
    /// plus an "observer_joined" line per observer and "all_joined" once every one is in (text: "--- observer K
    /// (NAME) joined as player ID", "--- all N observers joined"); chat typed on stdin goes out through the first.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub count: u32,
    /// Milliseconds between two observers' connects (with --count).
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = bzhead::args::int(0u64, 60_000))]
    pub stagger_ms: u64,
    /// Leave cleanly after this many seconds.
    #[arg(long = "for", value_name = "SECONDS", value_parser = bzhead::args::seconds(0.0))]
    pub for_secs: Option<f64>,
    /// Also print these event types (comma-separated, or "all"; e.g. update,shot_begin).
    #[arg(long, value_name = "TYPES")]
    pub show: Vec<String>,
    /// Do not print these event types (comma-separated).
    #[arg(long, value_name = "TYPES")]
    pub hide: Vec<String>,
    /// Record every payload both ways, with times, to FILE (replay it with `bzhead replay FILE`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Also write what the observer sees as a BZFlag `.rec` recording to FILE, which `bzfs -replay` plays and
    /// `bzhead replay` reads (the observer then stays on TCP: see docs/recordings.md).
    #[arg(long, value_name = "FILE")]
    pub rec: Option<PathBuf>,
    /// Also print a report of the match (one JSON document, docs/schemas/summary.schema.json) at each game over
    /// and at the end.
    #[arg(long)]
    pub summary: bool,
    /// Most MiB the recording may take; past it recording stops with a message and the session goes on.
    #[arg(long, value_name = "MIB", default_value_t = bzhead::record::DEFAULT_MAX_RECORD_BYTES >> 20)]
    pub record_max_mib: u64,
    /// Do not bring up the UDP link (everything over TCP).
    #[arg(long)]
    pub no_udp: bool,
    /// Watch a server that runs K times as fast as real time (under `faketime -f '+0 xK'`; 1/64 to 64, as for
    /// `bot`): event times, --for, --netstats, the timeouts, dead reckoning and the recordings are in game time.
    /// Not with --web.
    #[arg(long, value_name = "K", default_value_t = 1.0, value_parser = super::time_scale_arg(), conflicts_with = "web")]
    pub time_scale: f64,
    /// Join like bzadmin: no flag negotiation, settings or world download.
    #[arg(long)]
    pub no_world: bool,
    /// Do not read or write the world cache.
    #[arg(long)]
    pub no_cache: bool,
    /// World cache directory (default: $BZHEAD_CACHE_DIR, else $XDG_CACHE_HOME/bzhead/worlds).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Most MiB of worlds the cache keeps; the least recently used are removed beyond it.
    #[arg(long, value_name = "MIB", default_value_t = bzhead::cache::DEFAULT_MAX_BYTES >> 20)]
    pub cache_max_mib: u64,
    /// Seconds allowed from connect to the server's hello.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = bzhead::args::float(0.001, 86_400.0))]
    pub hello_timeout: f64,
    /// Seconds allowed from the hello to being accepted (world download included).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = bzhead::args::float(0.001, 86_400.0))]
    pub join_timeout: f64,
    /// Once in the game, leave with exit code 6 when the server sends nothing for this many seconds (it sends an
    /// observer the game time at least every 10 s); 0 never.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = bzhead::args::float(0.0, 86_400.0))]
    pub idle_timeout: f64,
    /// Every this many seconds print each player's network figures: updates per second, arrival jitter,
    /// dead-reckoning error (p50, p95, max), lag (from the server's /lagstats, asked for a little before), out of
    /// order and missing updates, time since the last update, and why the player is flagged, if it is ("netstats"
    /// JSON lines, or "--- net" text lines); 0 never.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = bzhead::args::float(0.0, 86_400.0))]
    pub netstats: f64,
    /// When the server goes away (closes, restarts, stops answering for --idle-timeout, or shuts down), come back
    /// with back-off (0.5 s doubling to 30 s), keeping the output and filters; prints "reconnecting" and
    /// "reconnected" lines. A kick with a reason, a reject or /quit still ends the command. --record covers the
    /// first connection only.
    #[arg(long)]
    pub reconnect: bool,
}

impl ObserveArgs {
    /// The session configuration of an observer joining as `callsign` (with the world unless `--no-world`).
    pub fn session_config(&self, callsign: String, full_join: bool) -> SessionConfig {
        SessionConfig {
            callsign,
            motto: self.motto.clone(),
            team: Team::Observer,
            player_type: PlayerType::Tank,
            // A `.rec` recorder stays on TCP: bzfs sends relayed updates over UDP only to a client that opened it.
            udp: !self.no_udp && self.rec.is_none(),
            full_join,
            hello_timeout: secs(self.hello_timeout),
            join_timeout: secs(self.join_timeout),
            idle_timeout: (self.idle_timeout.is_finite() && self.idle_timeout > 0.0).then(|| secs(self.idle_timeout)),
            ..SessionConfig::default()
        }
    }

    /// Observer `k` (1-based) of `--count`: only the first one's events and netstats are printed, so the others
    /// skip the relayed updates and shots unparsed (`lean`) and keep no network figures (as bzadmin keeps none);
    /// the first keeps them only for `--netstats`. Call [`ObserveArgs::keep_net_stats`] once it is added.
    fn observer_config(&self, k: u32, count: u32) -> SessionConfig {
        SessionConfig {
            lean: k > 1,
            ..self.session_config(numbered_callsign(&self.callsign, k, count), !self.no_world)
        }
    }

    /// See [`ObserveArgs::observer_config`].
    fn keep_net_stats(&self, reactor: &mut Reactor, id: SessionId, k: u32) {
        let on = k == 1 && secs(self.netstats) > Duration::ZERO;
        reactor.with_session(id, |s, _| s.set_net_stats(on));
    }

    /// The session options of an observer: the world cache, and the recording when `record` (the first
    /// observer's first connection).
    pub fn session_options(&self, record: bool) -> SessionOptions {
        SessionOptions {
            record: if record { self.record.clone() } else { None },
            rec: if record { self.rec.clone() } else { None },
            cache: super::world_cache(self.no_cache, self.cache_dir.clone(), Some(self.cache_max_mib)),
            record_max_bytes: Some(self.record_max_mib.saturating_mul(1 << 20)),
        }
    }

    /// The event line of `ev` at `t`, as `--json` asks.
    pub fn event_line(&self, t: impl Into<Stamp>, ev: &Event) -> String {
        if self.json {
            json_line(t, ev)
        } else {
            text_line(ev)
        }
    }
}

/// What the user asks of a running observer: lines typed on standard input (read on a helper thread that wakes the
/// reactor; a closed stdin is not a reason to leave), Ctrl-C, SIGTERM or SIGHUP (leave cleanly with MsgExit
/// instead of dropping the connection; a second one quits at once), and `--for` (in the reactor's game time).
pub struct Controls {
    lines: Receiver<String>,
    signals: Receiver<i32>,
    /// When `--for` makes the observers leave (game time, on `clock`).
    pub deadline: Option<Instant>,
    clock: Clock,
}

/// A line typed on standard input.
#[derive(Debug, PartialEq, Eq)]
pub enum Typed {
    /// `/quit`: leave.
    Quit,
    /// Chat to send to everybody (a leading `//` sends a line starting with `/`; other `/` lines are server
    /// commands).
    Chat(String),
}

impl Typed {
    /// What a typed line asks; `None` for a blank line.
    pub fn parse(line: &str) -> Option<Typed> {
        let line = line.trim_end_matches(['\r', '\n']);
        if line.trim() == "/quit" {
            Some(Typed::Quit)
        } else if line.trim().is_empty() {
            None
        } else {
            Some(Typed::Chat(line.strip_prefix("//").map(|r| format!("/{r}")).unwrap_or_else(|| line.to_string())))
        }
    }
}

impl Controls {
    /// Starts reading stdin and the signals for the observers on `reactor`, started at `start` (the reactor's game
    /// time).
    pub fn new(reactor: &Reactor, start: Instant, for_secs: Option<f64>) -> Controls {
        let signals = super::leave_on_signals(reactor.waker());
        let (tx, lines) = mpsc::channel::<String>();
        let waker = reactor.waker();
        std::thread::spawn(move || {
            for line in io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
                let _ = waker.wake();
            }
        });
        let deadline = for_secs.filter(|s| s.is_finite() && *s >= 0.0).map(|s| start + Duration::from_secs_f64(s));
        Controls { lines, signals, deadline, clock: reactor.clock() }
    }

    /// What was asked since the last call, in order: the lines typed, then a [`Typed::Quit`] when --for has
    /// elapsed or a signal came (unless the observers already left, `left`, or a /quit came with the lines).
    pub fn asked(&self, left: bool) -> Vec<Typed> {
        let mut asked: Vec<Typed> = self.lines.try_iter().filter_map(|l| Typed::parse(&l)).collect();
        let quit = left || asked.contains(&Typed::Quit);
        if !quit && (self.deadline.is_some_and(|d| self.clock.now() >= d) || self.signals.try_recv().is_ok()) {
            asked.push(Typed::Quit);
        }
        asked
    }
}

/// The netstats block of `session` at `now` (`t` since the start): the link line, then a line per player.
pub fn netstats_block(
    session: &Session,
    now: Instant,
    t: impl Into<Stamp>,
    json: bool,
) -> impl Iterator<Item = String> {
    let t: Stamp = t.into();
    std::iter::once(link_line(session, now, t, json)).chain(netstats_lines(session, now, t, json))
}

/// Runs the command without `--web`; returns the exit code.
pub fn run(a: ObserveArgs) -> u8 {
    let filter = match super::event_filter(&a.show, &a.hide) {
        Ok(f) => f,
        Err(code) => return code,
    };
    if a.rec.is_some() && a.no_world {
        eprintln!("bzhead: --rec needs the world and the game settings in its header: drop --no-world");
        return exit::USAGE;
    }
    if a.servers.len() > 1 {
        eprintln!("bzhead: several servers need --web (one observer each, on one event loop)");
        return exit::USAGE;
    }
    match Observers::start(&a, &filter) {
        Ok(o) => o.run(),
        Err(code) => code,
    }
}

/// The callsign of observer `k` (1-based) of `count`: the name itself when there is one observer, else the name
/// with `k` appended, the name cut (on a character boundary) so that the whole stays within BZFlag's 31 characters.
fn numbered_callsign(base: &str, k: u32, count: u32) -> String {
    let max = bzhead::bzflag::consts::CALLSIGN_LEN - 1;
    if count <= 1 {
        return base.to_string();
    }
    let suffix = k.to_string();
    let mut cut = max.saturating_sub(suffix.len()).min(base.len());
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &base[..cut])
}

/// With `--count`: the line saying that observer `k` joined (JSON `observer_joined`, or text).
fn joined_line(json: bool, t: Duration, k: u32, callsign: &str, player_id: u8) -> String {
    if json {
        #[derive(serde::Serialize)]
        struct Line<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            observer: u32,
            callsign: &'a str,
            id: u8,
        }
        json_envelope(t, &Line { kind: "observer_joined", observer: k, callsign, id: player_id })
    } else {
        format!("--- observer {k} ({callsign}) joined as player {player_id}")
    }
}

/// With `--count`: the line saying that every observer has joined (JSON `all_joined`, or text).
fn all_joined_line(json: bool, t: Duration, count: u32) -> String {
    if json {
        #[derive(serde::Serialize)]
        struct Line {
            #[serde(rename = "type")]
            kind: &'static str,
            count: u32,
        }
        json_envelope(t, &Line { kind: "all_joined", count })
    } else {
        format!("--- all {count} observers joined")
    }
}

/// The observers of one `observe` run (without `--web`) on their reactor, and what is printed of them.
struct Observers<'a> {
    a: &'a ObserveArgs,
    filter: &'a Filter,
    addr: SocketAddr,
    count: u32,
    reactor: Reactor,
    /// The first observer's session: its events are printed, chat goes out through it.
    id: SessionId,
    start: Instant,
    net_clock: Option<NetstatsClock>,
    controls: Controls,
    out: BufWriter<StdoutLock<'static>>,
    /// Something was written this turn (flushed at its end).
    printed: bool,
    /// /quit, --for or a signal: every observer is leaving.
    left: bool,
    /// With --reconnect: each observer's back-off, and when its next connect is due.
    backoff: Vec<Reconnect>,
    pending: Vec<Option<Instant>>,
    left_while_away: bool,
    /// With --count: the other observers, connected one after another. `observers[k - 1]` is observer k's session
    /// once it has connected; `next_connect` is when the next one does.
    observers: Vec<SessionId>,
    stagger: Duration,
    next_connect: Instant,
    joined: Vec<bool>,
    joined_count: u32,
    /// How many observers to connect (fewer when a connect fails).
    target: usize,
    /// The first observer's exit code, and the others' (the first that failed).
    exit_code: u8,
    other_code: u8,
    /// With --summary: the first observer's match report so far.
    summary: Option<bzhead::record::summary::Summarizer>,
}

impl<'a> Observers<'a> {
    /// Resolves the server and connects the first observer; `Err` is the exit code.
    fn start(a: &'a ObserveArgs, filter: &'a Filter) -> Result<Observers<'a>, u8> {
        let addr = super::resolve_or_exit(&a.servers[0], DEFAULT_PORT)?;
        let count = a.count.max(1);
        let mut reactor = super::new_reactor_at(a.time_scale)?;
        // The first observer records (if asked); the others only watch.
        let id = reactor.add_session(addr, a.observer_config(1, count), a.session_options(true)).map_err(|e| {
            eprintln!("bzhead: cannot connect to {addr}: {e}");
            exit::CONNECT
        })?;
        a.keep_net_stats(&mut reactor, id, 1);
        let start = reactor.started(id).unwrap_or_else(|| reactor.now());
        let stagger = Duration::from_millis(a.stagger_ms);
        Ok(Observers {
            a,
            filter,
            addr,
            count,
            id,
            start,
            net_clock: NetstatsClock::new(secs(a.netstats), start),
            controls: Controls::new(&reactor, start, a.for_secs),
            reactor,
            out: BufWriter::new(io::stdout().lock()),
            printed: false,
            left: false,
            backoff: vec![Reconnect::new(); count as usize],
            pending: vec![None; count as usize],
            left_while_away: false,
            observers: vec![id],
            stagger,
            next_connect: start + stagger,
            joined: vec![false; count as usize],
            joined_count: 0,
            target: count as usize,
            exit_code: exit::PROTOCOL,
            other_code: exit::OK,
            summary: a.summary.then(bzhead::record::summary::Summarizer::new),
        })
    }

    /// Runs until every observer is done; returns the exit code.
    fn run(mut self) -> u8 {
        loop {
            if let Err(e) = self.reactor.turn(Some(self.wait())) {
                eprintln!("bzhead: event loop failed: {e}");
                return exit::PROTOCOL;
            }
            self.take_controls();
            self.printed = false;
            self.reconnect_due();
            self.connect_more();
            while let Some((sid, at, ev)) = self.reactor.poll_event() {
                self.on_event(sid, at, ev);
            }
            self.netstats();
            // One write per turn: lines reach a pipe (or a terminal) as they happen.
            if self.printed {
                let _ = self.out.flush();
            }
            if self.observers.iter().all(|&o| self.reactor.is_done(o))
                && (self.left || self.observers.len() >= self.target)
                && self.pending.iter().all(Option::is_none)
            {
                break;
            }
        }
        self.finish()
    }

    /// How long the next turn may wait (game time): until --for, the next connect, a reconnect or the netstats
    /// clock.
    fn wait(&self) -> Duration {
        let now = self.reactor.now();
        let mut wait =
            self.controls.deadline.map(|d| d.saturating_duration_since(now)).unwrap_or(Duration::from_secs(3600));
        if !self.left && self.observers.len() < self.target {
            wait = wait.min(self.next_connect.saturating_duration_since(now));
        }
        for due in self.pending.iter().flatten().copied().chain(self.net_clock.as_ref().map(NetstatsClock::deadline)) {
            wait = wait.min(due.saturating_duration_since(now));
        }
        wait
    }

    fn leave_all(&mut self) {
        for &o in &self.observers {
            self.reactor.leave(o);
        }
        self.left = true;
    }

    /// Typed lines (chat goes out through the first observer), signals and --for.
    fn take_controls(&mut self) {
        for t in self.controls.asked(self.left) {
            match t {
                Typed::Quit => self.leave_all(),
                Typed::Chat(text) => self.reactor.send_chat(self.id, player::ALL_PLAYERS, &text),
            }
        }
        if self.left {
            // Leaving (/quit, --for, a signal) while the first observer waits to come back is a clean end.
            self.left_while_away |= self.pending.first().is_some_and(Option::is_some);
            self.pending.iter_mut().for_each(|p| *p = None);
        }
    }

    /// With --reconnect: connects again the observers whose back-off is over.
    fn reconnect_due(&mut self) {
        for k in 1..=self.observers.len() {
            let now = self.reactor.now();
            if self.pending[k - 1].is_none_or(|due| now < due) {
                continue;
            }
            self.pending[k - 1] = None;
            self.reactor.remove_session(self.observers[k - 1]);
            let config = self.a.observer_config(k as u32, self.count);
            match self.reactor.add_session(self.addr, config, self.a.session_options(false)) {
                Ok(o) => {
                    self.a.keep_net_stats(&mut self.reactor, o, k as u32);
                    self.observers[k - 1] = o;
                    if k == 1 {
                        self.id = o;
                    }
                }
                Err(e) => {
                    let (attempt, delay) = self.backoff[k - 1].failed(now);
                    self.pending[k - 1] = Some(now + delay);
                    if k == 1 {
                        let why = format!("cannot connect to {}: {e}", self.addr);
                        let t = now.saturating_duration_since(self.start);
                        self.line(&reconnecting_line(t, self.a.json, attempt, delay, &why));
                    }
                }
            }
        }
    }

    /// With --count: connects the next observers, --stagger-ms apart.
    fn connect_more(&mut self) {
        while !self.left && self.observers.len() < self.target && self.reactor.now() >= self.next_connect {
            let k = self.observers.len() as u32 + 1;
            let config = self.a.observer_config(k, self.count);
            match self.reactor.add_session(self.addr, config, self.a.session_options(false)) {
                Ok(o) => {
                    self.a.keep_net_stats(&mut self.reactor, o, k);
                    self.observers.push(o);
                }
                Err(e) => {
                    eprintln!("bzhead: observer {k} cannot connect to {}: {e}", self.addr);
                    self.other_code = exit::CONNECT;
                    // Nothing more to connect: the others keep watching.
                    self.target = self.observers.len();
                    break;
                }
            }
            self.next_connect += self.stagger;
        }
    }

    /// Writes a line (flushed at the end of the turn).
    fn line(&mut self, line: &str) {
        let _ = writeln!(self.out, "{line}");
        self.printed = true;
    }

    /// Prints an event of the first observer (if the filter lets it through) and takes its exit code.
    fn print(&mut self, at: Instant, ev: &Event) {
        if let Event::Closed { reason } = ev {
            self.exit_code = exit::of(reason);
        }
        if self.filter.allows(ev) {
            let line = self.a.event_line(at.saturating_duration_since(self.start), ev);
            let _ = writeln!(self.out, "{line}");
        }
        if let Some(m) = self.summary.as_mut().and_then(|s| s.event(at.saturating_duration_since(self.start), ev)) {
            let _ = writeln!(self.out, "{}", bzhead::record::summary::json(&m));
        }
        self.printed = true;
    }

    /// Observer `k` (1-based) of the session `sid`, 0 when it is none of ours.
    fn observer_of(&self, sid: SessionId) -> usize {
        self.observers.iter().position(|&o| o == sid).map_or(0, |i| i + 1)
    }

    fn on_event(&mut self, sid: SessionId, at: Instant, ev: Event) {
        if let Event::World { .. } = ev {
            // An observer has no use for the world once it is verified: up to 32 MiB per session freed.
            self.reactor.with_session(sid, |s, _| drop(s.take_world_blob()));
        }
        if self.a.reconnect && !self.left && self.on_reconnect_event(sid, at, &ev) {
            return;
        }
        if self.count > 1 && self.on_numbered_event(sid, at, &ev) {
            return;
        }
        self.print(at, &ev);
    }

    /// With --reconnect: an end that comes back schedules a connect, a join after one says so. True when the
    /// event is dealt with (nothing more to print).
    fn on_reconnect_event(&mut self, sid: SessionId, at: Instant, ev: &Event) -> bool {
        let k = self.observer_of(sid);
        if k == 0 {
            return false;
        }
        let t = at.saturating_duration_since(self.start);
        match ev {
            Event::Closed { .. } => {
                let end = self.reactor.session(sid).and_then(|s| s.end().cloned());
                if let Some(end) = end.filter(|e| self.backoff[k - 1].comes_back(e, at)) {
                    let (attempt, delay) = self.backoff[k - 1].failed(at);
                    self.pending[k - 1] = Some(at + delay);
                    if k == 1 {
                        // The first end of a streak is printed; the failed attempts after it only as
                        // "reconnecting" lines.
                        if attempt == 1 {
                            self.print(at, ev);
                        }
                        self.line(&reconnecting_line(t, self.a.json, attempt, delay, &end.to_string()));
                    }
                    return true;
                }
            }
            Event::Accept { .. } => {
                if let Some((attempt, down)) = self.backoff[k - 1].joined(at) {
                    if k == 1 {
                        self.print(at, ev);
                        self.line(&reconnected_line(t, self.a.json, attempt, down));
                        return true;
                    }
                }
            }
            Event::Chat { from: player::SERVER, .. } => self.backoff[k - 1].heard_server_text(at),
            _ => {}
        }
        false
    }

    /// With --count: the joined lines, and the other observers' ends. True when the event is dealt with (it is
    /// another observer's: only the first one's events are printed).
    fn on_numbered_event(&mut self, sid: SessionId, at: Instant, ev: &Event) -> bool {
        let (count, json) = (self.count, self.a.json);
        let k = self.observer_of(sid) as u32;
        if let (Event::Accept { id: player_id }, true) = (ev, k > 0) {
            if !self.joined[k as usize - 1] {
                self.joined[k as usize - 1] = true;
                self.joined_count += 1;
                let t = at.saturating_duration_since(self.start);
                let callsign = numbered_callsign(&self.a.callsign, k, count);
                self.line(&joined_line(json, t, k, &callsign, *player_id));
                if self.joined_count == count {
                    self.line(&all_joined_line(json, t, count));
                }
            }
        }
        if k <= 1 {
            return false;
        }
        // Only the first observer's events are printed; the others report how they ended.
        if let Event::Closed { reason } = ev {
            let code = exit::of(reason);
            if code != exit::OK {
                eprintln!(
                    "bzhead: observer {k} ({}): {}",
                    numbered_callsign(&self.a.callsign, k, count),
                    for_terminal(&reason.to_string())
                );
                if self.other_code == exit::OK {
                    self.other_code = code;
                }
            }
        }
        true
    }

    /// The first observer's netstats: /lagstats asked for a little before each block of lines.
    fn netstats(&mut self) {
        while let Some(clock) = self.net_clock.as_mut() {
            let now = self.reactor.now();
            match clock.poll(now) {
                NetstatsDue::Nothing => break,
                NetstatsDue::AskLag => self.reactor.request_lag_stats(self.id),
                NetstatsDue::Print => {
                    if let Some(s) = self.reactor.session(self.id).filter(|s| s.is_joined()) {
                        let t = now.saturating_duration_since(self.start);
                        for line in netstats_block(s, now, t, self.a.json) {
                            let _ = writeln!(self.out, "{line}");
                            self.printed = true;
                        }
                    }
                }
            }
        }
    }

    /// After the loop: why the first observer ended, a recording cut short, and the exit code.
    fn finish(mut self) -> u8 {
        if let Some(m) = self.summary.as_mut().and_then(|s| s.finish()) {
            let _ = writeln!(self.out, "{}", bzhead::record::summary::json(&m));
            let _ = self.out.flush();
        }
        if self.left_while_away {
            return self.other_code;
        }
        if let Some(end) = self.reactor.session(self.id).and_then(|s| s.end()) {
            if exit::of(end) != exit::OK {
                eprintln!("bzhead: {}", for_terminal(&end.to_string()));
            }
        }
        if let Some(path) = &self.a.record {
            if let Some(err) = self.reactor.record_error(self.id) {
                eprintln!("bzhead: the recording {} is incomplete: {err}", path.display());
            }
        }
        if self.exit_code == exit::OK {
            self.other_code
        } else {
            self.exit_code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines() {
        assert_eq!(Typed::parse("/quit\r\n"), Some(Typed::Quit));
        assert_eq!(Typed::parse("  /quit "), Some(Typed::Quit));
        assert_eq!(Typed::parse("   "), None);
        assert_eq!(Typed::parse("hello"), Some(Typed::Chat("hello".into())));
        assert_eq!(Typed::parse("//me waves"), Some(Typed::Chat("/me waves".into())));
        assert_eq!(Typed::parse("/lagstats"), Some(Typed::Chat("/lagstats".into())));
    }

    #[test]
    fn numbered_callsigns() {
        assert_eq!(numbered_callsign("obs", 1, 1), "obs");
        assert_eq!(numbered_callsign("obs", 12, 20), "obs12");
        let long = "x".repeat(40);
        assert_eq!(numbered_callsign(&long, 7, 9).len(), bzhead::bzflag::consts::CALLSIGN_LEN - 1);
    }
}
