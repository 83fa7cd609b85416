//! `bzhead monitor`: rounds of scans on the one reactor, their history in SQLite, the HTTP API and metrics.
//!
//! Each round is a [`Scan`] of every source (single servers, list files, masters whose entries are queried with
//! their game's protocol) put on the reactor with [`Reactor::add_scan`]; its results go to the sans-IO
//! [`Monitor`], whose batch goes to the database's writer thread when the round ends. The next round starts one
//! interval after the previous one started (never while one runs), with a little jitter. Masters are asked once per
//! round, so at most once per interval.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::{error, info, warn};

use bzhead::bzflag::consts::{PlayerType, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::http::{sse_event, sse_head, Limits, Response};
use bzhead::monitor::api::{self, Routed};
use bzhead::monitor::config::{self, Config};
use bzhead::monitor::masters::{Fetcher, Format};
use bzhead::monitor::metrics::Own;
use bzhead::monitor::store::{self, Retention, Writer, Written};
use bzhead::monitor::{Monitor, MonitorConfig};
use bzhead::query::filter::{MasterPolicy, DEFAULT_MAX_PORTS_PER_HOST};
use bzhead::query::front::{self, default_port, MasterSpec};
use bzhead::query::loader::{plugin_dirs, PluginSet};
use bzhead::query::targets::{list_entries, resolve};
use bzhead::query::{ScanConfig, Target, BZFLAG};
use bzhead::reactor::{HttpConnId, HttpEvent, HttpListenerId, Reactor, ScanId, SessionId, SessionOptions};

use super::query::PluginDirs;

/// `bzhead monitor`.
#[derive(clap::Args, Debug)]
pub struct MonitorArgs {
    /// The SQLite database (created when missing; history resumes from it).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Serve the API, the metrics and the page on ADDR (e.g. 127.0.0.1:8080).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// On a loopback --http address, also accept requests whose Host is NAME (say, the name a reverse proxy
    /// forwards; "*" for any); others than localhost, 127.x and [::1] get 421 (repeatable).
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_host: Vec<String>,
    /// Seconds between the starts of two rounds [default: 60].
    #[arg(long, value_name = "SECONDS", value_parser = bzhead::args::float(0.05, 86_400.0))]
    interval: Option<f64>,
    /// A server, PROTOCOL=ADDR[:PORT] (repeatable).
    #[arg(long = "server", value_name = "PROTOCOL=ADDR")]
    servers: Vec<String>,
    /// A list file, PROTOCOL=FILE, one ADDR[:PORT] per line (repeatable).
    #[arg(long = "list", value_name = "PROTOCOL=FILE")]
    lists: Vec<String>,
    /// A TOML configuration (see docs/monitor.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Failed rounds in a row before a server is down [default: 2].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 1000))]
    down_after: Option<u32>,
    /// Datagrams per second at most [default: 1000].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 1_000_000))]
    rate: Option<u32>,
    /// Wait this long for the answer to a first request (then twice as long per retry) [default: 1000].
    #[arg(long, value_name = "MS", value_parser = bzhead::args::int(1u64, 600_000))]
    timeout_ms: Option<u64>,
    /// Re-send an unanswered request this many times [default: 2].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(0u32, 16))]
    retries: Option<u32>,
    /// Take master entries with special-use addresses (loopback, private networks...) too.
    #[arg(long)]
    allow_private: bool,
    /// Most ports taken per host from a master's list [default: 4].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 65_535))]
    max_ports_per_host: Option<u32>,
    /// Stop after this many rounds (for tests and benchmarks).
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u64, u64::MAX))]
    rounds: Option<u64>,
    /// Print one JSON line per round on stdout (its number, duration and counts).
    #[arg(long)]
    print_rounds: bool,
    #[command(flatten)]
    dirs: PluginDirs,
}

/// Exit codes.
mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const FAILED: u8 = 6;
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn random_u64() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    h.finish()
}

/// A BZFlag server with `verify_join`.
struct JoinCheck {
    addr: SocketAddr,
    every: Duration,
    next: Instant,
    running: Option<(SessionId, Instant, bool, bool)>,
    /// Last outcome: joinable, seconds the join took.
    last: Option<(bool, Option<f64>)>,
}

/// Everything a round starts from.
struct Sources {
    targets: Vec<Target>,
    joins: Vec<JoinCheck>,
    /// Lists fetched over HTTP(S) each round.
    http_masters: Vec<(Format, String)>,
}

fn split_source(s: &str, what: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((p, a)) if !p.is_empty() && !a.is_empty() => Ok((p.to_owned(), a.to_owned())),
        _ => Err(format!("--{what} {s:?}: expected PROTOCOL={}", if what == "list" { "FILE" } else { "ADDR[:PORT]" })),
    }
}

fn sources(set: &PluginSet, cfg: &Config, now: Instant) -> Result<Sources, String> {
    let mut targets = Vec::new();
    let mut joins = Vec::new();
    for s in &cfg.server {
        let mut t =
            front::server_target(set, &s.protocol, &s.address).map_err(|e| format!("server {}: {e}", s.address))?;
        let addr = t.addr;
        t.params = s.params.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        targets.push(t);
        if s.verify_join {
            if s.protocol != BZFLAG {
                return Err(format!("server {}: verify_join is for bzflag servers", s.address));
            }
            let every = Duration::from_secs_f64(s.verify_every.unwrap_or(3600.0).clamp(1.0, 86_400.0 * 365.0));
            joins.push(JoinCheck { addr, every, next: now, running: None, last: None });
        }
    }
    for l in &cfg.list {
        let port = default_port(set, &l.protocol).map_err(|e| e.to_string())?;
        let text = std::fs::read_to_string(&l.file).map_err(|e| format!("cannot read {}: {e}", l.file))?;
        for (line, entry) in list_entries(&text) {
            match resolve(entry, port) {
                Ok(addr) => targets.push(Target::new(&l.protocol, addr)),
                Err(e) => warn!(file = %l.file, line, error = %e, "list entry skipped"),
            }
        }
    }
    let mut http_masters = Vec::new();
    for m in &cfg.master {
        if let Some(format) = Format::from_name(&m.protocol) {
            let Some(url) = &m.url else {
                return Err(format!("master {}: url is required", m.protocol));
            };
            http_masters.push((format, url.clone()));
            continue;
        }
        let Some(servers) = &m.servers else {
            return Err(format!("master {}: servers (the protocol of its entries) is required", m.protocol));
        };
        let Some(address) = &m.address else {
            return Err(format!("master {}: address is required", m.protocol));
        };
        let spec = MasterSpec {
            protocol: m.protocol.clone(),
            address: address.clone(),
            servers: servers.clone(),
            game: m.game.clone(),
            game_protocol: m.game_protocol.map(|p| p.to_string()),
            filters: m.filters.clone(),
        };
        targets.push(front::master_target(set, &spec).map_err(|e| e.to_string())?);
    }
    Ok(Sources { targets, joins, http_masters })
}

/// The command.
pub fn run(a: MonitorArgs) -> u8 {
    match run_inner(a) {
        Ok(()) => exit::OK,
        Err((code, msg)) => {
            eprintln!("bzhead: {msg}");
            code
        }
    }
}

fn run_inner(a: MonitorArgs) -> Result<(), (u8, String)> {
    let settings = Settings::new(&a)?;
    Running::start(&a, settings)?.run()
}

/// What the options and the configuration file ask for, checked.
struct Settings {
    db: PathBuf,
    http: Option<String>,
    interval: Duration,
    set: PluginSet,
    started: Instant,
    sources: Sources,
    retention: Retention,
    mcfg: MonitorConfig,
    rate: u32,
    policy: MasterPolicy,
    scan_cfg: ScanConfig,
}

impl Settings {
    /// The options over the configuration file (`--config`); `Err` is a usage error.
    fn new(a: &MonitorArgs) -> Result<Settings, (u8, String)> {
        let usage = |m: String| (exit::USAGE, m);
        let mut cfg = match &a.config {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).map_err(|e| usage(format!("cannot read {}: {e}", p.display())))?;
                config::parse(&text).map_err(|e| usage(format!("{}: {e}", p.display())))?
            }
            None => Config::default(),
        };
        for s in &a.servers {
            let (protocol, address) = split_source(s, "server").map_err(usage)?;
            cfg.server.push(config::ServerSource { protocol, address, ..Default::default() });
        }
        for s in &a.lists {
            let (protocol, file) = split_source(s, "list").map_err(usage)?;
            cfg.list.push(config::ListSource { protocol, file });
        }
        let db =
            a.db.clone()
                .or_else(|| cfg.db.as_ref().map(PathBuf::from))
                .ok_or_else(|| usage("--db PATH is required".into()))?;
        let http = a.http.clone().or_else(|| cfg.http.clone());
        let interval = a.interval.or(cfg.interval).unwrap_or(60.0);
        if !(interval.is_finite() && interval > 0.0) {
            return Err(usage(format!("--interval {interval}: expected a positive number of seconds")));
        }
        let interval = Duration::from_secs_f64(interval.clamp(0.05, 86_400.0));
        let set = PluginSet::load_standard(&plugin_dirs(&a.dirs.plugin_dir));
        let started = Instant::now();
        let sources = sources(&set, &cfg, started).map_err(usage)?;
        if sources.targets.is_empty() && sources.http_masters.is_empty() {
            return Err(usage("nothing to monitor: give --server, --list or --config".into()));
        }
        let retention = Retention {
            samples_days: cfg.samples_days.unwrap_or(Retention::default().samples_days),
            hourly_days: cfg.hourly_days.unwrap_or(Retention::default().hourly_days),
            events_days: cfg.events_days.unwrap_or(Retention::default().events_days),
        };
        let mcfg = MonitorConfig {
            down_after: a.down_after.or(cfg.down_after).unwrap_or(2).max(1),
            ..MonitorConfig::default()
        };
        let rate = a.rate.or(cfg.rate).unwrap_or(1000).max(1);
        let policy = MasterPolicy {
            allow_special_use: a.allow_private || cfg.allow_private.unwrap_or(false),
            max_ports_per_host: a
                .max_ports_per_host
                .or(cfg.max_ports_per_host)
                .unwrap_or(DEFAULT_MAX_PORTS_PER_HOST)
                .max(1),
        };
        let scan_cfg = ScanConfig {
            master_policy: policy,
            ..ScanConfig::front(
                Duration::from_millis(a.timeout_ms.or(cfg.timeout_ms).unwrap_or(1000)),
                a.retries.or(cfg.retries).unwrap_or(2),
                Vec::new(),
            )
        };
        Ok(Settings { db, http, interval, set, started, sources, retention, mcfg, rate, policy, scan_cfg })
    }
}

/// The monitor at work: its state, the reactor, the database writer and the list fetcher.
struct Running<'a> {
    a: &'a MonitorArgs,
    interval: Duration,
    rate: u32,
    policy: MasterPolicy,
    scan_cfg: ScanConfig,
    targets: Vec<Target>,
    joins: Vec<JoinCheck>,
    http_masters: Vec<(Format, String)>,
    monitor: Monitor,
    reactor: Reactor,
    writer: Writer,
    fetcher: Option<Fetcher>,
    /// Lists of this round not fetched yet.
    fetches_left: usize,
    signals: Receiver<i32>,
    listener: Option<HttpListenerId>,
    /// Change-feed streams: the connection and the last event id sent to it.
    streams: Vec<(HttpConnId, u64)>,
    own: Own,
    /// The plugins, while no round runs (a round's scan holds them).
    plugins: Option<PluginSet>,
    /// The running round's scan and when it began.
    round: Option<(ScanId, Instant)>,
    next_round: Instant,
}

impl<'a> Running<'a> {
    /// Loads the database and starts the reactor, the writer, the fetcher and the HTTP listener.
    fn start(a: &'a MonitorArgs, s: Settings) -> Result<Running<'a>, (u8, String)> {
        let Settings { db, http, interval, set, started, sources, retention, mcfg, rate, policy, scan_cfg } = s;
        let Sources { targets, joins, http_masters } = sources;
        // Resume what the database holds (before the loop starts: this read is the start-up, not a turn).
        let loaded = store::open(&db)
            .and_then(|c| store::load(&c, mcfg.max_sightings, mcfg.history_points))
            .map_err(|e| (exit::FAILED, format!("cannot open the database {}: {e}", db.display())))?;
        info!(servers = loaded.servers.len(), next_event = loaded.next_event_id, "monitor database loaded");
        let monitor = Monitor::restore(mcfg, loaded);

        let mut reactor = Reactor::new().map_err(|e| (exit::FAILED, format!("cannot start the event loop: {e}")))?;
        let waker = reactor.waker();
        let notify_waker = waker.clone();
        let writer = Writer::start(
            db.clone(),
            retention,
            unix_now,
            Arc::new(move || {
                let _ = notify_waker.wake();
            }),
        )
        .map_err(|e| (exit::FAILED, format!("cannot start the database writer: {e}")))?;
        let fetcher = if http_masters.is_empty() {
            None
        } else {
            let w = reactor.waker();
            Some(
                Fetcher::start(Arc::new(move || {
                    let _ = w.wake();
                }))
                .map_err(|e| (exit::FAILED, format!("cannot start the list fetcher: {e}")))?,
            )
        };
        let signals = super::leave_on_signals(waker);
        let listener = match &http {
            Some(addr) => {
                let sa: SocketAddr = resolve(addr, 8080).map_err(|e| (exit::USAGE, format!("--http {addr}: {e}")))?;
                let (id, local) = reactor
                    .add_http_listener(sa, Limits::from_env())
                    .map_err(|e| (exit::FAILED, format!("cannot listen on {sa}: {e}")))?;
                reactor.http_allow_hosts(id, &a.allow_host);
                eprintln!("bzhead: monitor API on http://{local}/");
                Some(id)
            }
            None => None,
        };
        Ok(Running {
            a,
            interval,
            rate,
            policy,
            scan_cfg,
            targets,
            joins,
            http_masters,
            monitor,
            reactor,
            writer,
            fetcher,
            fetches_left: 0,
            signals,
            listener,
            streams: Vec::new(),
            own: Own::default(),
            plugins: Some(set),
            round: None,
            next_round: started,
        })
    }

    /// Runs rounds until a signal or --rounds; then writes what is left.
    fn run(mut self) -> Result<(), (u8, String)> {
        loop {
            if signals_pending(&self.signals) {
                break;
            }
            let now = Instant::now();
            self.start_round(now);
            self.start_joins(now);
            let wait = self.next_round.saturating_duration_since(now).min(Duration::from_secs(1));
            if let Err(e) = self.reactor.turn(Some(wait)) {
                error!(error = %e, "event loop failed");
                return Err((exit::FAILED, format!("event loop failed: {e}")));
            }
            self.take_results();
            self.take_join_events();
            self.take_lists();
            self.end_round();
            self.take_written();
            let join_view: Vec<(String, bool, Option<f64>)> =
                self.joins.iter().filter_map(|j| j.last.map(|(ok, s)| (j.addr.to_string(), ok, s))).collect();
            if self.listener.is_some() {
                serve_http(&mut self.reactor, &self.monitor, &self.own, &join_view, &mut self.streams);
            }
            if self.a.rounds.is_some_and(|n| self.own.rounds >= n) && self.round.is_none() {
                break;
            }
        }
        // Write what is left, then stop.
        self.writer.close();
        while let Some(w) = self.writer.try_recv() {
            if let Written::Committed { round, .. } = w {
                self.monitor.committed(round);
            }
        }
        Ok(())
    }

    /// Starts a round when one is due: a scan of every target, and the lists to fetch.
    fn start_round(&mut self, now: Instant) {
        if self.round.is_some() || now < self.next_round || self.a.rounds.is_some_and(|n| self.own.rounds >= n) {
            return;
        }
        let Some(p) = self.plugins.take() else { return };
        // Spread the round's requests (about two datagrams a query) over about half the interval, so that a big fleet
        // is not asked in one burst; never slower than 50 a second nor faster than --rate. Bursts of 100 ms' worth
        // (ScanConfig::burst_for_rate).
        let rate = self.rate;
        let round_rate = (((self.targets.len() as f64) * 4.0 / self.interval.as_secs_f64()).ceil() as u32)
            .clamp(50, rate.max(50))
            .min(rate);
        let cfg = self.scan_cfg.clone().at_rate(round_rate);
        self.monitor.begin_round(unix_now());
        self.round = Some((front::start(&mut self.reactor, p, cfg, &self.targets), now));
        if let Some(f) = &self.fetcher {
            for (format, url) in &self.http_masters {
                f.request(self.monitor.round(), *format, url);
            }
            self.fetches_left = self.http_masters.len();
        }
        // The next round one interval after this one began, plus up to 5% of jitter.
        let jitter = self.interval.mul_f64((random_u64() % 1000) as f64 / 20_000.0);
        self.next_round = (self.next_round + self.interval).max(now) + jitter;
    }

    /// Starts the join checks that are due.
    fn start_joins(&mut self, now: Instant) {
        for j in &mut self.joins {
            if j.running.is_none() && now >= j.next {
                let config = SessionConfig {
                    callsign: "bzhead-monitor".into(),
                    motto: "checking that the server can be joined".into(),
                    team: Team::Observer,
                    player_type: PlayerType::Tank,
                    udp: true,
                    full_join: true,
                    ..SessionConfig::default()
                };
                self.own.joins_tried += 1;
                match self.reactor.add_session(j.addr, config, SessionOptions::default()) {
                    Ok(id) => j.running = Some((id, now, false, false)),
                    Err(e) => {
                        warn!(server = %j.addr, error = %e, "verify_join: cannot connect");
                        j.last = Some((false, None));
                    }
                }
                j.next = now + j.every;
            }
        }
    }

    /// The round's results, to the monitor.
    fn take_results(&mut self) {
        front::drain(&mut self.reactor, |r| self.monitor.observe(r));
    }

    /// The join checks' sessions: joined (with UDP) or not; ended sessions are taken off the reactor.
    fn take_join_events(&mut self) {
        let reactor = &mut self.reactor;
        while let Some((sid, at, ev)) = reactor.poll_event() {
            let Some(j) = self.joins.iter_mut().find(|j| j.running.is_some_and(|r| r.0 == sid)) else { continue };
            let Some((_, began, accepted, udp)) = j.running.as_mut() else { continue };
            match ev {
                Event::Accept { .. } => *accepted = true,
                Event::UdpLink { up, .. } => *udp = up,
                _ => {}
            }
            let done = matches!(ev, Event::Closed { .. });
            if *accepted && *udp {
                let secs = at.saturating_duration_since(*began).as_secs_f64();
                j.last = Some((true, Some(secs)));
                self.own.joins_ok += 1;
                info!(server = %j.addr, seconds = secs, "verify_join: joined");
                reactor.leave(sid);
                j.running = None;
            } else if done {
                j.last = Some((false, None));
                j.running = None;
                warn!(server = %j.addr, "verify_join: the join did not complete");
            }
        }
        for id in reactor.session_ids() {
            if reactor.is_done(id) && !self.joins.iter().any(|j| j.running.is_some_and(|r| r.0 == id)) {
                reactor.remove_session(id);
            }
        }
    }

    /// Lists fetched for this round: their entries join its scan.
    fn take_lists(&mut self) {
        while let Some((r, outcome)) = self.fetcher.as_ref().and_then(Fetcher::try_recv) {
            if r != self.monitor.round() || self.round.is_none() {
                continue; // a late answer for an earlier round
            }
            self.fetches_left = self.fetches_left.saturating_sub(1);
            match outcome {
                Ok(entries) => {
                    // The same entry policy as a UDP master's list.
                    let (taken, dropped) =
                        front::listed_targets(entries.iter().map(|e| (e.protocol, e.addr)), self.policy);
                    info!(taken = taken.len(), dropped, "master list fetched");
                    if let Some((id, _)) = self.round {
                        self.reactor.with_scan(id, |scan, now| {
                            for t in taken {
                                let _ = scan.add_target(now, t);
                            }
                        });
                    }
                }
                Err(e) => {
                    self.own.failed += 1;
                    warn!(error = %e, "master list not fetched");
                }
            }
        }
    }

    /// The end of a round (its scan done, its lists in): its batch to the writer, its counts, the plugins back.
    fn end_round(&mut self) {
        let Some((id, began)) = self.round else { return };
        if self.fetches_left != 0 || !self.reactor.is_scan_done(id) {
            return;
        }
        self.take_results();
        let batch = self.monitor.end_round();
        let events = batch.events.len();
        self.writer.send(batch);
        let secs = began.elapsed().as_secs_f64();
        if let Some(scan) = self.reactor.remove_scan(id) {
            let st = scan.stats();
            let own = &mut self.own;
            own.queries_sent += st.started;
            own.answered += st.answered;
            own.timed_out += st.timed_out;
            own.malformed += st.malformed;
            own.failed += st.refused + st.plugin_errors + st.other_errors;
            own.datagrams_sent += st.sent;
            if self.a.print_rounds {
                let line = serde_json::json!({
                    "round": self.monitor.round(), "seconds": secs, "queries": st.started,
                    "answered": st.answered, "timed_out": st.timed_out, "events": events,
                });
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "{line}");
                let _ = o.flush();
            }
            self.plugins = Some(scan.into_plugins());
        }
        self.own.rounds += 1;
        self.own.last_round_seconds = secs;
        self.own.round_seconds_sum += secs;
        self.round = None;
    }

    /// The database writer's reports.
    fn take_written(&mut self) {
        while let Some(w) = self.writer.try_recv() {
            let own = &mut self.own;
            match w {
                Written::Committed { round, micros, .. } => {
                    own.db_commits += 1;
                    own.db_failing = false;
                    own.db_last_commit_seconds = micros as f64 / 1e6;
                    self.monitor.committed(round);
                }
                Written::Failed { .. } => {
                    own.db_errors += 1;
                    own.db_failing = true;
                }
                Written::Dropped { round } => {
                    own.db_dropped_rounds += 1;
                    self.monitor.committed(round);
                }
                Written::Pruned { .. } => {}
            }
        }
    }
}

/// Answers the HTTP requests of this turn and pushes new events to the change-feed streams.
fn serve_http(
    reactor: &mut Reactor,
    monitor: &Monitor,
    own: &Own,
    joins: &[(String, bool, Option<f64>)],
    streams: &mut Vec<(HttpConnId, u64)>,
) {
    while let Some(ev) = reactor.poll_http_event() {
        match ev {
            HttpEvent::Request { conn, request, .. } => {
                let param = |k: &str| request.query_param(k);
                match api::route(monitor, own, joins, &request.path, &param, request.header("last-event-id")) {
                    Routed::Response(r) => {
                        let mut resp = Response::new(r.status, r.content_type, r.body);
                        if r.content_type.starts_with("text/html") {
                            resp = resp.with_header("Content-Security-Policy", api::PAGE_CSP);
                        }
                        reactor.http_respond(conn, &resp);
                    }
                    Routed::Events { after } => {
                        if reactor.http_stream(conn, &sse_head(2000)) {
                            streams.push((conn, after));
                        }
                    }
                }
            }
            HttpEvent::Closed { conn, .. } => streams.retain(|(c, _)| *c != conn),
        }
    }
    let last = monitor.last_event_id();
    streams.retain_mut(|(conn, sent)| {
        if *sent >= last {
            return true;
        }
        for e in monitor.events_after(*sent) {
            if !reactor.http_push(*conn, &sse_event(Some(&e.kind), Some(e.id), &e.json)) {
                return false; // dropped: its reader stopped reading
            }
            *sent = e.id;
        }
        true
    });
}

fn signals_pending(rx: &Receiver<i32>) -> bool {
    rx.try_recv().is_ok()
}
