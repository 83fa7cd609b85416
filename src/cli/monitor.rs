//! `bzhead monitor`: rounds of scans on the one reactor, their history in SQLite, the HTTP API and metrics.
//!
//! Each round is a [`Scan`] of every source (single servers, list files, masters whose entries are queried with
//! their game's protocol) put on the reactor with [`Reactor::add_scan`]; its results go to the sans-IO
//! [`Monitor`], whose batch joins the write queue ([`WriteQueue`], bounded in bytes) when the round ends. The queue
//! is written by jobs on the reactor's worker ([`DB_LANE`]); HTTP master lists are fetched by jobs on another lane
//! ([`FETCH_LANE`]): the monitor runs no thread of its own. The next round starts one interval after the previous
//! one started (never while one runs), with a little jitter. Masters are asked once per round, so at most once per
//! interval; the round's pace follows its size once their lists are in.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tracing::{error, info, warn};

use bzhead::bzflag::consts::{PlayerType, Team};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::http::{sse_event, sse_head, Limits, Response};
use bzhead::master::dpmaster::{self, Dpmaster};
use bzhead::master::{self, Masters, Served};
use bzhead::monitor::api::{self, Routed};
use bzhead::monitor::config::{self, Config};
use bzhead::monitor::masters::{self, Fetched, Format};
use bzhead::monitor::metrics::Own;
use bzhead::monitor::store::{self, Batch, Database, Retention, WriteDone, WriteQueue, Written};
use bzhead::monitor::{Monitor, MonitorConfig};
use bzhead::query::filter::{MasterPolicy, DEFAULT_MAX_PORTS_PER_HOST};
use bzhead::query::front::{self, default_port, MasterSpec};
use bzhead::query::loader::{plugin_dirs, PluginSet};
use bzhead::query::targets::{list_entries, resolve};
use bzhead::query::{ScanConfig, Target, BZFLAG};
use bzhead::reactor::{
    HttpConnId, HttpEvent, HttpListenerId, JobId, JobResult, Lane, Outbox, Reactor, ScanId, SessionId, SessionOptions,
    UdpServiceId,
};

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
    /// Take master entries with special-use addresses (loopback, private networks...) too, and list servers with
    /// such addresses that register with --dpmaster (dpmaster's --allow-loopback).
    #[arg(long)]
    allow_private: bool,
    /// Most ports taken per host from a master's list [default: 4].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 65_535))]
    max_ports_per_host: Option<u32>,
    /// Forget a server not seen (not listed, not queried) for this long, everywhere: the database, memory, the API
    /// and the metrics [default: 604800, 7 days].
    #[arg(long, value_name = "SECONDS", value_parser = bzhead::args::float(FORGET_AFTER.0, FORGET_AFTER.1))]
    forget_after: Option<f64>,
    /// Behind a reverse proxy on this machine (nginx: `proxy_set_header X-Real-IP $remote_addr`), the masters take
    /// a registering server's address from this request header, on requests from loopback only (DDNet mastersrv's
    /// --connecting-ip-header).
    #[arg(long, value_name = "NAME")]
    master_ip_header: Option<String>,
    /// Stop after this many rounds (for tests and benchmarks).
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u64, u64::MAX))]
    rounds: Option<u64>,
    /// Print one JSON line per round on stdout (its number, duration and counts).
    #[arg(long)]
    print_rounds: bool,
    /// Serve a dpmaster-compatible master on UDP ADDR, e.g. 0.0.0.0:27950 (repeatable: IPv4 and IPv6 addresses);
    /// see docs/master.md.
    #[arg(long = "dpmaster", value_name = "ADDR")]
    dpmaster: Vec<String>,
    /// Most servers the master holds, pending ones included (dpmaster -n) [default: 4096].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 10_000_000))]
    dpmaster_max_servers: Option<u32>,
    /// Most servers per IP address (dpmaster -N) [default: 32].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(1u32, 10_000_000))]
    dpmaster_max_per_address: Option<u32>,
    /// List requests per IP address before they are dropped, one more every 3 s (dpmaster -f --fp-throttle N);
    /// 0 turns the flood throttles off [default: 5].
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(0u32, 1_000_000))]
    dpmaster_flood_throttle: Option<u32>,
    /// Serve only these games (accept) or all but these (reject) (dpmaster --game-policy).
    #[arg(long, value_names = ["accept|reject", "NAME"], num_args = 2..)]
    dpmaster_game_policy: Vec<String>,
    /// Change a game's properties: protocols, options, heartbeat or flatline with =, += or -= (dpmaster -g).
    #[arg(long, value_names = ["GAME", "KEY=VALUE"], num_args = 2..)]
    dpmaster_game_property: Vec<String>,
    /// Seconds a valid infoResponse lists a server [default: 900].
    #[arg(long, value_name = "SECONDS", value_parser = bzhead::args::float(DPMASTER_LEASE.0, DPMASTER_LEASE.1))]
    dpmaster_lease: Option<f64>,
    #[command(flatten)]
    dirs: PluginDirs,
}

/// Exit codes.
mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const FAILED: u8 = 6;
}

/// The range of `--dpmaster-lease` (and `dpmaster.lease`), seconds.
const DPMASTER_LEASE: (f64, f64) = config::DPMASTER_LEASE_RANGE;
/// The range of `--forget-after` (and `forget_after`), seconds.
const FORGET_AFTER: (f64, f64) = config::FORGET_AFTER_RANGE;
/// The worker lane the database is written on (a stalled disk holds up nothing else; waited for at exit).
const DB_LANE: Lane = Lane::new("monitor-db", true);
/// The worker lane HTTP lists are fetched on (a fetch is bounded by its own time limit; not waited for at exit).
const FETCH_LANE: Lane = Lane::new("monitor-fetch", false);
/// The protocol the dpmaster master's servers are queried with.
const QUAKE3: &str = "quake3";
/// Longest wait at exit for the rounds still queued to be written.
const FLUSH_AT_EXIT: Duration = Duration::from_secs(30);

/// A round's send rate: its requests (about two datagrams a query, four per target for retries) spread over about
/// half the interval, so that a big fleet is not asked in one burst; never slower than 50 a second nor faster than
/// `--rate`.
fn round_rate(targets: u64, interval: Duration, rate: u32) -> u32 {
    let wanted = ((targets as f64) * 4.0 / interval.as_secs_f64().max(0.001)).ceil();
    (wanted.min(f64::from(u32::MAX)) as u32).clamp(50, rate.max(50)).min(rate)
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
    /// UDP masters: their address, the name they are mirrored under (`protocol@address`) and the protocol of
    /// their entries.
    udp_masters: Vec<(SocketAddr, String, String)>,
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
    let mut udp_masters = Vec::new();
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
        let t = front::master_target(set, &spec).map_err(|e| e.to_string())?;
        udp_masters.push((t.addr, format!("{}@{}", m.protocol, address), servers.clone()));
        targets.push(t);
    }
    Ok(Sources { targets, joins, http_masters, udp_masters })
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

/// Where the history goes: the database file, its retention, the bound of the rounds waiting for it.
#[derive(Clone)]
struct DbPlace {
    path: PathBuf,
    retention: Retention,
    max_queued_bytes: usize,
}

/// What the options and the configuration file ask for, checked.
struct Settings {
    db: DbPlace,
    http: Option<String>,
    interval: Duration,
    set: PluginSet,
    started: Instant,
    sources: Sources,
    mcfg: MonitorConfig,
    rate: u32,
    policy: MasterPolicy,
    scan_cfg: ScanConfig,
    /// The dpmaster-compatible master to serve: its addresses and policies.
    dpmaster: Option<(Vec<SocketAddr>, dpmaster::Config)>,
}

/// `words` cut before every word that `starts` says begins a group.
fn groups(words: &[String], starts: impl Fn(&str) -> bool) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for w in words {
        match out.last_mut() {
            Some(g) if !starts(w) => g.push(w.clone()),
            _ => out.push(vec![w.clone()]),
        }
    }
    out
}

/// The dpmaster master's addresses and policies, from the options over `[dpmaster]`; `None` when it has no address.
fn dpmaster_settings(a: &MonitorArgs, cfg: &Config) -> Result<Option<(Vec<SocketAddr>, dpmaster::Config)>, String> {
    let d = cfg.dpmaster.clone().unwrap_or_default();
    let mut addrs = Vec::new();
    for s in d.listen.iter().chain(&a.dpmaster) {
        addrs.push(resolve(s, dpmaster::DEFAULT_PORT).map_err(|e| format!("--dpmaster {s}: {e}"))?);
    }
    if addrs.is_empty() {
        return Ok(None);
    }
    let mut games = dpmaster::builtin_games();
    let changes = d.game_properties.iter().map(|(g, c)| (g.as_str(), c.as_slice()));
    // Clap gives the words of every occurrence in one list: a word without `=` starts the next game.
    let given = groups(&a.dpmaster_game_property, |w| !w.contains('='));
    let given = given.iter().filter_map(|v| v.split_first()).map(|(g, c)| (g.as_str(), c));
    for (game, changes) in changes.chain(given) {
        for change in changes {
            dpmaster::apply_property(&mut games, game, change).map_err(|e| format!("dpmaster game property: {e}"))?;
        }
    }
    // One policy, accept or reject, for every list (as dpmaster requires).
    let mut lists: Vec<(String, Vec<String>)> = Vec::new();
    if let Some(p) = &d.game_policy {
        lists.push((p.clone(), d.games.clone()));
    }
    for v in groups(&a.dpmaster_game_policy, |w| w == "accept" || w == "reject") {
        if let Some((p, names)) = v.split_first() {
            lists.push((p.clone(), names.to_vec()));
        }
    }
    let mut policy = dpmaster::GamePolicy::All;
    for (p, names) in lists {
        policy = match (p.as_str(), policy) {
            ("accept", dpmaster::GamePolicy::All) => dpmaster::GamePolicy::Accept(names),
            ("accept", dpmaster::GamePolicy::Accept(n)) => dpmaster::GamePolicy::Accept([n, names].concat()),
            ("reject", dpmaster::GamePolicy::All) => dpmaster::GamePolicy::Reject(names),
            ("reject", dpmaster::GamePolicy::Reject(n)) => dpmaster::GamePolicy::Reject([n, names].concat()),
            ("accept" | "reject", _) => return Err("--dpmaster-game-policy: accept and reject cannot be mixed".into()),
            (other, _) => return Err(format!("--dpmaster-game-policy {other:?}: expected accept or reject")),
        };
    }
    let count = |given: Option<u32>, file: Option<u32>, default: usize| given.or(file).map_or(default, |n| n as usize);
    let cfg = dpmaster::Config {
        max_servers: count(a.dpmaster_max_servers, d.max_servers, dpmaster::DEFAULT_MAX_SERVERS),
        max_per_address: count(a.dpmaster_max_per_address, d.max_per_address, dpmaster::DEFAULT_MAX_PER_ADDRESS),
        flood_throttle: a.dpmaster_flood_throttle.or(d.flood_throttle).unwrap_or(dpmaster::DEFAULT_FLOOD_THROTTLE),
        allow_private: a.allow_private || cfg.allow_private.unwrap_or(false),
        lease: a.dpmaster_lease.or(d.lease).map_or(dpmaster::LEASE, Duration::from_secs_f64),
        policy,
        games,
    };
    Ok(Some((addrs, cfg)))
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
        let dpmaster = dpmaster_settings(a, &cfg).map_err(usage)?;
        if sources.targets.is_empty()
            && sources.http_masters.is_empty()
            && dpmaster.is_none()
            && a.http.is_none()
            && cfg.http.is_none()
        {
            return Err(usage(
                "nothing to monitor: give --server, --list, --config, --dpmaster or --http (to serve as a master)"
                    .into(),
            ));
        }
        let retention = Retention {
            samples_days: cfg.samples_days.unwrap_or(Retention::default().samples_days),
            hourly_days: cfg.hourly_days.unwrap_or(Retention::default().hourly_days),
            events_days: cfg.events_days.unwrap_or(Retention::default().events_days),
        };
        let forget_after = a.forget_after.or(cfg.forget_after);
        let mcfg = MonitorConfig {
            down_after: a.down_after.or(cfg.down_after).unwrap_or(2).max(1),
            forget_after: forget_after.map_or(MonitorConfig::default().forget_after, |f| f.ceil() as i64),
            ..MonitorConfig::default()
        };
        let max_queued_bytes =
            cfg.write_queue_bytes.map_or(store::DEFAULT_MAX_QUEUED_BYTES, |b| usize::try_from(b).unwrap_or(usize::MAX));
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
        let db = DbPlace { path: db, retention, max_queued_bytes };
        Ok(Settings { db, http, interval, set, started, sources, mcfg, rate, policy, scan_cfg, dpmaster })
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
    /// The masters served on the HTTP listener, and their I/O.
    side: MasterSide,
    monitor: Monitor,
    reactor: Reactor,
    /// The database, while no write job holds it.
    db: Option<Box<Database>>,
    /// Its file and retention (to start afresh after a write job that panicked).
    db_place: DbPlace,
    /// Rounds waiting to be written.
    queue: WriteQueue,
    /// The write job running.
    write_job: Option<JobId>,
    /// After a failed write: no new job before this (unless a new round comes).
    write_retry_at: Option<Instant>,
    /// List fetches running: the job, its round and its master (an index into `http_masters`).
    fetch_jobs: Vec<(JobId, u64, usize)>,
    /// Lists of this round not fetched yet.
    fetches_left: usize,
    signals: Receiver<i32>,
    listener: Option<HttpListenerId>,
    /// The dpmaster-compatible master served.
    dpmaster: Option<UdpServiceId>,
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
    /// Loads the database and starts the reactor and the HTTP listener.
    fn start(a: &'a MonitorArgs, s: Settings) -> Result<Running<'a>, (u8, String)> {
        let Settings { db, http, interval, set, started, sources, mcfg, rate, policy, scan_cfg, dpmaster } = s;
        let Sources { targets, joins, http_masters, udp_masters } = sources;
        // Resume what the database holds (before the loop starts: this read is the start-up, not a turn).
        let loaded = store::open(&db.path)
            .and_then(|c| store::load(&c, mcfg.max_sightings, mcfg.history_points).map_err(store::OpenError::from))
            .map_err(|e| (exit::FAILED, format!("cannot open the database {}: {e}", db.path.display())))?;
        info!(servers = loaded.servers.len(), next_event = loaded.next_event_id, "monitor database loaded");
        let monitor = Monitor::restore(mcfg, loaded);

        let mut reactor = Reactor::new().map_err(|e| (exit::FAILED, format!("cannot start the event loop: {e}")))?;
        let waker = reactor.waker();
        let signals = super::leave_on_signals(waker);
        let listener = match &http {
            Some(addr) => {
                let sa: SocketAddr = resolve(addr, 8080).map_err(|e| (exit::USAGE, format!("--http {addr}: {e}")))?;
                // The masters' registration routes take a small body; every other route refuses one.
                let limits =
                    Limits { max_body: master::MAX_BODY, body_routes: master::BODY_ROUTES, ..Limits::from_env() };
                let (id, local) = reactor
                    .add_http_listener(sa, limits)
                    .map_err(|e| (exit::FAILED, format!("cannot listen on {sa}: {e}")))?;
                reactor.http_allow_hosts(id, &a.allow_host);
                eprintln!("bzhead: monitor API on http://{local}/");
                Some(id)
            }
            None => None,
        };
        let dpmaster = match dpmaster {
            Some((addrs, cfg)) => {
                let (id, local) = reactor
                    .add_udp_service(&addrs, Box::new(Dpmaster::new(cfg)))
                    .map_err(|e| (exit::FAILED, format!("cannot serve the dpmaster master: {e}")))?;
                for l in local {
                    eprintln!("bzhead: dpmaster master on udp://{l}");
                }
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
            side: MasterSide::new(a.allow_private, udp_masters, a.master_ip_header.clone()),
            monitor,
            reactor,
            db: Some(Box::new(Database::new(db.path.clone(), db.retention, unix_now))),
            queue: WriteQueue::new(db.max_queued_bytes),
            db_place: db,
            write_job: None,
            write_retry_at: None,
            fetch_jobs: Vec::new(),
            fetches_left: 0,
            signals,
            listener,
            dpmaster,
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
            self.take_jobs();
            self.end_round();
            self.start_write(Instant::now());
            let join_view: Vec<(String, bool, Option<f64>)> =
                self.joins.iter().filter_map(|j| j.last.map(|(ok, s)| (j.addr.to_string(), ok, s))).collect();
            if let Some(id) = self.dpmaster {
                self.side.dpmaster = self.reactor.udp_service::<Dpmaster>(id).map(|m| m.counters());
            }
            if self.listener.is_some() {
                let m = (&self.monitor, &self.own, join_view.as_slice());
                serve_http(&mut self.reactor, m, &mut self.side, self.dpmaster, &mut self.streams);
            }
            if self.a.rounds.is_some_and(|n| self.own.rounds >= n) && self.round.is_none() {
                break;
            }
        }
        self.flush();
        Ok(())
    }

    /// Writes what is left (one last try), waiting at most [`FLUSH_AT_EXIT`].
    fn flush(&mut self) {
        let deadline = Instant::now() + FLUSH_AT_EXIT;
        let mut tried = false;
        while Instant::now() < deadline {
            if self.write_job.is_none() {
                if tried || self.queue.is_empty() {
                    return;
                }
                self.write_retry_at = None;
                self.start_write(Instant::now());
                tried = true;
            }
            if self.reactor.turn(Some(Duration::from_millis(100))).is_err() {
                return;
            }
            self.take_jobs();
        }
        warn!(rounds = self.queue.len(), "the database did not take the last rounds in time");
    }

    /// Hands the queued rounds to a write job on the worker when none runs (after a failure, once [`store::RETRY`]
    /// passed or a new round came).
    fn start_write(&mut self, now: Instant) {
        if self.write_job.is_some() || self.queue.is_empty() || self.write_retry_at.is_some_and(|t| now < t) {
            return;
        }
        let Some(db) = self.db.take() else { return };
        let batches = self.queue.take();
        self.own.db_queued_bytes = 0;
        self.write_job = Some(self.reactor.submit_on(DB_LANE, move || Box::new(db.write(batches)) as JobResult));
    }

    /// Queues a round's batch for the database.
    fn queue_batch(&mut self, batch: Batch) {
        let dropped = self.queue.push(batch);
        self.dropped(dropped);
        // A new round is worth a try at once.
        self.write_retry_at = None;
        self.own.db_queued_bytes = self.queue.bytes() as u64;
    }

    fn dropped(&mut self, rounds: Vec<u64>) {
        for round in rounds {
            self.own.db_dropped_rounds += 1;
            self.monitor.committed(round);
        }
    }

    /// The worker's finished jobs: database writes and list fetches.
    fn take_jobs(&mut self) {
        while let Some((id, result)) = self.reactor.poll_job() {
            if self.write_job == Some(id) {
                self.write_job = None;
                match result.downcast::<WriteDone>() {
                    Ok(done) => self.written(*done),
                    // A write job that panicked lost its database and its rounds: the next job opens it again.
                    Err(_) => {
                        error!("monitor database: a write job failed; its rounds are lost");
                        let DbPlace { path, retention, .. } = self.db_place.clone();
                        self.db = Some(Box::new(Database::new(path, retention, unix_now)));
                    }
                }
            } else if let Some(i) = self.fetch_jobs.iter().position(|(j, ..)| *j == id) {
                let (_, round, which) = self.fetch_jobs.swap_remove(i);
                let outcome = result.downcast::<Fetched>().map_or_else(|_| Err("the fetch failed".to_owned()), |b| *b);
                self.take_list(round, &outcome);
                if let Some((_, url)) = self.http_masters.get(which) {
                    self.side.mirror_http(url, outcome);
                }
            } else {
                self.side.job_done(&mut self.reactor, id, result);
            }
        }
    }

    /// A write job's outcome: its reports, its database back, what it could not write back in the queue.
    fn written(&mut self, done: WriteDone) {
        let WriteDone { db, unwritten, reports } = done;
        self.db = Some(db);
        let failed = !unwritten.is_empty();
        let dropped = self.queue.put_back(unwritten);
        self.dropped(dropped);
        self.own.db_queued_bytes = self.queue.bytes() as u64;
        if failed {
            self.write_retry_at = Some(Instant::now() + store::RETRY);
        }
        for w in reports {
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
                Written::Unhealthy { .. } => {
                    own.db_unhealthy += 1;
                    own.db_damaged = true;
                }
                Written::Healthy => own.db_damaged = false,
                Written::Pruned { .. } => {}
            }
        }
    }

    /// Starts a round when one is due: a scan of every target, and the lists to fetch.
    fn start_round(&mut self, now: Instant) {
        if self.round.is_some() || now < self.next_round || self.a.rounds.is_some_and(|n| self.own.rounds >= n) {
            return;
        }
        let Some(p) = self.plugins.take() else { return };
        // The servers registered with the masters served here (dpmaster, the BZFlag list server, DDNet's) are
        // queried too (so they get history, and the API says where they come from).
        let mut targets = std::borrow::Cow::Borrowed(&self.targets[..]);
        let mut registered: Vec<(&'static str, SocketAddr)> = Vec::new();
        if let Some(m) = self.dpmaster.and_then(|id| self.reactor.udp_service::<Dpmaster>(id)) {
            registered.extend(m.listed(now).into_iter().map(|l| (QUAKE3, l.addr)));
        }
        let masters = &self.side.masters;
        registered.extend(masters.bzfls.entries().map(|e| (BZFLAG, e.addr)));
        let ddnet = masters.ddnet.servers().filter_map(|s| s.addresses.first());
        registered.extend(ddnet.map(|a| (a.proto.query_protocol(), a.addr)));
        if !registered.is_empty() {
            let known: std::collections::HashSet<SocketAddr> = self.targets.iter().map(|t| t.addr).collect();
            let more = registered.into_iter().filter(|(_, a)| !known.contains(a)).map(|(p, a)| Target::new(p, a));
            targets.to_mut().extend(more);
        }
        // The round's pace (round_rate) from its targets; retuned once masters expanded it (Running::repace).
        let cfg = self.scan_cfg.clone().at_rate(round_rate(targets.len() as u64, self.interval, self.rate));
        self.monitor.begin_round(unix_now());
        self.round = Some((front::start(&mut self.reactor, p, cfg, &targets), now));
        let round = self.monitor.round();
        for (which, (format, url)) in self.http_masters.iter().enumerate() {
            let (format, url) = (*format, url.clone());
            let id = self.reactor.submit_on(FETCH_LANE, move || Box::new(masters::fetch(format, &url)) as JobResult);
            self.fetch_jobs.push((id, round, which));
        }
        self.fetches_left = self.http_masters.len();
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
        let mut expanded = false;
        let monitor = &mut self.monitor;
        let side = &mut self.side;
        front::drain(&mut self.reactor, |r| {
            expanded |= r.outcome.as_ref().is_ok_and(|a| a.servers().is_some());
            side.mirror_udp(r);
            monitor.observe(r);
        });
        if expanded {
            self.repace();
        }
    }

    /// Paces the running round from the targets it holds now (a master's list expanded it).
    fn repace(&mut self) {
        let Some((id, _)) = self.round else { return };
        let (interval, rate) = (self.interval, self.rate);
        self.reactor.with_scan(id, |scan, now| {
            let r = round_rate(scan.stats().targets, interval, rate);
            scan.set_rate(now, r, ScanConfig::burst_for_rate(r));
        });
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
                self.side.masters.verified.insert(j.addr, unix_now());
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

    /// A list fetched for `round`: its entries join the round's scan.
    fn take_list(&mut self, round: u64, outcome: &Fetched) {
        if round != self.monitor.round() || self.round.is_none() {
            return; // a late answer for an earlier round
        }
        self.fetches_left = self.fetches_left.saturating_sub(1);
        match outcome {
            Ok(entries) => {
                // The same entry policy as a UDP master's list.
                let (taken, dropped) = front::listed_targets(entries.iter().map(|e| (e.protocol, e.addr)), self.policy);
                info!(taken = taken.len(), dropped, "master list fetched");
                if let Some((id, _)) = self.round {
                    self.reactor.with_scan(id, |scan, now| {
                        for t in taken {
                            let _ = scan.add_target(now, t);
                        }
                    });
                    self.repace();
                }
            }
            Err(e) => {
                self.own.failed += 1;
                warn!(error = %e, "master list not fetched");
            }
        }
    }

    /// The Quake III servers mirrored from upstream masters go into the dpmaster master's lists, with what the
    /// round's queries say of them (game, protocol number, game type, clients, slots; those that never answered are
    /// left out: their game is not known).
    fn mirror_to_dpmaster(&mut self) {
        let Some(id) = self.dpmaster else { return };
        let mut list = Vec::new();
        for ((protocol, addr), _) in self.side.masters.registry.entries() {
            if protocol != QUAKE3 {
                continue;
            }
            let Some(s) = self.monitor.server(protocol, &addr.to_string()) else { continue };
            let Ok(a) = s.last.outcome.as_ref() else { continue };
            let field =
                |k: &str| a.raw().get(k).or_else(|| a.rules().get(k)).and_then(|v| v.as_str().map(str::to_owned));
            let Some(number) = field("protocol").and_then(|p| p.trim().parse::<i32>().ok()) else { continue };
            list.push(dpmaster::Listed {
                addr: *addr,
                game: field("gamename").unwrap_or_else(|| "Quake3Arena".to_owned()),
                protocol: number,
                gametype: field("g_gametype").or_else(|| field("gametype")).unwrap_or_else(|| "0".to_owned()),
                clients: a.players().and_then(|p| u32::try_from(p).ok()).unwrap_or(0),
                max_clients: a.max_players().and_then(|p| u32::try_from(p).ok()).unwrap_or(0),
            });
        }
        if let Some(m) = self.reactor.udp_service::<Dpmaster>(id) {
            m.set_mirrored(list);
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
        self.mirror_to_dpmaster();
        let events = batch.events.len();
        self.queue_batch(batch);
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
}

/// What the monitor's own routes answer from: its state, its counters, the join checks.
type MonitorView<'a> = (&'a Monitor, &'a Own, &'a [(String, bool, Option<f64>)]);

/// Answers the HTTP requests of this turn and pushes new events to the change-feed streams.
fn serve_http(
    reactor: &mut Reactor,
    (monitor, own, joins): MonitorView,
    side: &mut MasterSide,
    dpmaster: Option<UdpServiceId>,
    streams: &mut Vec<(HttpConnId, u64)>,
) {
    while let Some(ev) = reactor.poll_http_event() {
        match ev {
            HttpEvent::Request { conn, request, .. } => {
                if Masters::serves(&request.path) {
                    if request.path == "/api/masters" {
                        let listed = dpmaster
                            .and_then(|id| reactor.udp_service::<Dpmaster>(id))
                            .map(|m| m.listed(Instant::now()));
                        side.masters.dpmaster_listed = listed.unwrap_or_default();
                    }
                    side.request(reactor, conn, &request, monitor);
                    continue;
                }
                let param = |k: &str| request.query_param(k);
                // Where servers come from: only the server routes ask (the index costs a pass over the masters).
                let index = request.path.starts_with("/api/servers").then(|| {
                    let listed =
                        dpmaster.and_then(|id| reactor.udp_service::<Dpmaster>(id)).map(|m| m.listed(Instant::now()));
                    let addrs: Vec<SocketAddr> = listed.unwrap_or_default().into_iter().map(|l| l.addr).collect();
                    side.masters.sources(&addrs)
                });
                let sources = |p: &str, a: &str| index.as_ref().map_or_else(Default::default, |i| i.source(p, a));
                let path = &request.path;
                match api::route(monitor, &sources, own, joins, path, &param, request.header("last-event-id")) {
                    Routed::Response(mut r) => {
                        if request.path == "/metrics" {
                            // Leases run out on the clock, not only on requests to the masters.
                            side.masters.tick(unix_now());
                            r.body.extend_from_slice(
                                bzhead::master::metrics::render_masters(&side.masters, side.dpmaster).as_bytes(),
                            );
                        }
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
            if !reactor.http_push(*conn, &sse_event(Some(e.kind), Some(e.id), &monitor.event_json(e))) {
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

/// The worker lane of the BZFlag connect-back checks (each at most [`master::bzfls::CONNECT_BACK_TIMEOUT`]; at most
/// [`master::bzfls::MAX_CHECKS`] at once; not waited for at exit).
const CHECK_LANE: Lane = Lane::new("master-check", false);

/// The masters served on the HTTP listener and their I/O: the connect-back checks on the worker, the DDNet
/// challenges sent from a UDP socket of their own (non-blocking: a datagram that cannot go now is counted, and the
/// server's next register, 15 s later, brings another), and the mirror of the upstream masters.
struct MasterSide {
    masters: Masters,
    /// Connect-back checks running: the job and the connection waiting for the answer.
    checks: Vec<(JobId, HttpConnId, master::bzfls::Check)>,
    /// The challenges' sockets (IPv4, IPv6) on the reactor, opened on first use.
    challenges: [Option<UdpServiceId>; 2],
    /// UDP masters: address, name, protocol of the entries.
    udp_masters: Vec<(SocketAddr, String, String)>,
    /// `--master-ip-header`.
    ip_header: Option<String>,
    /// The dpmaster master's counters (taken from its UDP service each turn), when it is served.
    dpmaster: Option<master::Counters>,
}

impl MasterSide {
    fn new(
        allow_private: bool,
        udp_masters: Vec<(SocketAddr, String, String)>,
        ip_header: Option<String>,
    ) -> MasterSide {
        let masters = Masters::new(allow_private, unix_now());
        MasterSide { masters, checks: Vec::new(), challenges: [None, None], udp_masters, ip_header, dpmaster: None }
    }

    /// A master request: answered now, after a check, or with a challenge sent.
    fn request(&mut self, reactor: &mut Reactor, conn: HttpConnId, req: &bzhead::http::Request, monitor: &Monitor) {
        let Some(peer) = reactor.http_peer(conn) else { return };
        let mut ip = match peer.ip() {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer.ip(), std::net::IpAddr::V4),
            v4 => v4,
        };
        // A proxy on this machine says whom it forwards (only a loopback peer is believed).
        if let (true, Some(h)) = (ip.is_loopback(), &self.ip_header) {
            if let Some(forwarded) = req.header(h).and_then(|v| v.trim().parse::<std::net::IpAddr>().ok()) {
                ip = forwarded;
            }
        }
        let served = self.masters.handle(req, ip, unix_now(), monitor);
        self.serve(reactor, conn, served);
    }

    fn serve(&mut self, reactor: &mut Reactor, conn: HttpConnId, served: Served) {
        match served {
            Served::Response(status, ct, body) => reactor.http_respond(conn, &Response::new(status, ct, body)),
            Served::Challenge(status, body, to, packet) => {
                if !self.send(reactor, to, &packet) {
                    self.masters.challenges_unsent += 1;
                }
                reactor.http_respond(conn, &Response::new(status, "application/json", body));
            }
            Served::Check(check) => {
                let (nameport, source) = (check.listing.nameport.clone(), check.source);
                let job = reactor.submit_on(CHECK_LANE, move || {
                    Box::new(master::bzfls::connect_back(&nameport, source)) as JobResult
                });
                self.checks.push((job, conn, check));
            }
        }
    }

    /// Sends a challenge datagram from the reactor's socket of its family; false when it cannot go.
    fn send(&mut self, reactor: &mut Reactor, to: SocketAddr, packet: &[u8]) -> bool {
        let (slot, bind) = if to.is_ipv4() {
            (0, SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0)))
        } else {
            (1, SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)))
        };
        if self.challenges[slot].is_none() {
            self.challenges[slot] =
                reactor.add_udp_service(&[bind], Box::new(Outbox::default())).ok().map(|(id, _)| id);
        }
        let Some(id) = self.challenges[slot] else { return false };
        let queued = reactor.udp_service::<Outbox>(id).is_some_and(|o| o.push(to, packet));
        reactor.flush_udp_service(id);
        queued
    }

    /// A finished worker job: a connect-back check's outcome answers its request.
    fn job_done(&mut self, reactor: &mut Reactor, id: JobId, result: JobResult) {
        let Some(i) = self.checks.iter().position(|(j, ..)| *j == id) else { return };
        let (_, conn, check) = self.checks.swap_remove(i);
        let outcome =
            result.downcast::<Result<SocketAddr, String>>().map_or_else(|_| Err("the check failed".to_owned()), |b| *b);
        let served = self.masters.checked(check, outcome, unix_now());
        self.serve(reactor, conn, served);
    }

    /// An HTTP master's list (or its failure), mirrored with what it says of each entry.
    fn mirror_http(&mut self, url: &str, outcome: Fetched) {
        match outcome {
            Ok(entries) => {
                let list = entries.into_iter().map(|e| (e.protocol, e.addr, e.listed));
                self.masters.registry.listed(url, list, unix_now());
            }
            Err(e) => self.masters.registry.failed(url, &e, unix_now()),
        }
    }

    /// A UDP master's answer (or its failure), mirrored: its entries are of the protocol the round queries them
    /// with (the master target's `servers`).
    fn mirror_udp(&mut self, r: &bzhead::query::QueryResult) {
        let Some((_, name, protocol)) = self.udp_masters.iter().find(|(a, ..)| *a == r.address) else { return };
        match &r.outcome {
            Ok(a) => {
                if let Some(list) = a.servers() {
                    self.masters.registry.listed(name, list.iter().map(|s| (protocol.as_str(), *s, None)), unix_now());
                }
            }
            Err(e) => self.masters.registry.failed(name, &e.to_string(), unix_now()),
        }
    }
}
