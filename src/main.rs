//! The `bzhead` command line. See `bzhead --help`.

use std::io::{self, BufRead, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use bzhead::bzflag::consts::{player, PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::cache::WorldCache;
use bzhead::netwatch::{
    link_line, netstats_lines, reconnected_line, reconnecting_line, NetstatsClock, NetstatsDue, Reconnect,
};
use bzhead::observer::{json_line, text_line, Filter};
use bzhead::reactor::{Reactor, SessionId, SessionOptions};
use bzhead::text::for_terminal;

mod cli;

/// Exit codes (documented in the README and `--help`).
mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const CONNECT: u8 = 3;
    pub const PROTOCOL: u8 = 6;
}

const EXIT_CODES: &str = "Exit codes: 0 clean leave, 2 usage, 3 cannot connect, 4 rejected, \
5 kicked or superkilled, 6 protocol error (including a server that closes or stops answering).";

#[derive(Parser)]
#[command(name = "bzhead", version, about = "A headless BZFlag 2.4 client: observer, bots, query and replay", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Join a server as an observer and print what happens (bzadmin-style text or JSON lines).
    ///
    /// Lines typed on standard input are sent as chat to everybody; "/quit" leaves. Other lines starting with
    /// "/" are server commands.
    #[command(after_help = EXIT_CODES)]
    Observe(ObserveArgs),
    /// Ask servers about their game without joining: `query bzflag SERVER`, or `query PROTOCOL ADDR[:PORT]...` for
    /// a plugin protocol (teeworlds, teeworlds7, quake3, warsow, dpmaster, savage2, srb2; see `bzhead plugins`).
    #[command(after_help = EXIT_CODES)]
    Query {
        #[command(subcommand)]
        proto: QueryProto,
    },
    /// Feed a recording (made with `observe --record`) through the engine offline and print its events.
    Replay(ReplayArgs),
    /// List the query plugins found (versions, protocols, default ports) and the files that failed to load.
    Plugins(cli::query::PluginsArgs),
    /// Query every server of a master's list or a list file, many at once, and print a table or JSON lines.
    Scan(cli::query::ScanArgs),
    /// Watch servers continuously: rounds of scans, history in SQLite, an HTTP API, a change feed and metrics.
    Monitor(cli::monitor::MonitorArgs),
    /// Download a server's world (or read a blob) and print its model: summary, JSON, SVG map.
    #[command(after_help = EXIT_CODES)]
    World(bzhead::world_cmd::WorldArgs),
    /// Play: bots (hunter, capper, defender, sitter) join a server and play, with the observer's events and a line for
    /// everything that happens to a bot.
    #[command(after_help = EXIT_CODES, args_override_self = true)]
    Bot(cli::bot::BotArgs),
}

#[derive(clap::Args)]
struct ObserveArgs {
    /// Server, HOST[:PORT] (port 5154 by default). Several only with --web: one observer each, on one event loop.
    #[arg(required = true, num_args = 1.., value_name = "SERVER")]
    servers: Vec<String>,
    /// Also serve the live web view (map, scoreboard, kill feed, chat; `/api/state?server=N`) on ADDR:PORT, or on
    /// 127.0.0.1:PORT for a bare PORT. The URL is printed on stderr; the events still go to stdout.
    #[arg(long, value_name = "ADDR")]
    web: Option<String>,
    /// Callsign to join with.
    #[arg(long, default_value = "bzhead")]
    callsign: String,
    /// Motto.
    #[arg(long, default_value = "bzhead observer")]
    motto: String,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Run this many observers in this one process, on one event loop: callsigns CALLSIGN1..CALLSIGNn (cut to
    /// BZFlag's 31 characters), joins staggered by --stagger-ms. Only the first observer's events are printed,
    /// plus an "observer_joined" line per observer and "all_joined" once every one is in (text: "--- observer K
    /// (NAME) joined as player ID", "--- all N observers joined"); chat typed on stdin goes out through the first.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    count: u32,
    /// Milliseconds between two observers' connects (with --count).
    #[arg(long, value_name = "MS", default_value_t = 50, value_parser = bzhead::args::int(0u64, 60_000))]
    stagger_ms: u64,
    /// Leave cleanly after this many seconds.
    #[arg(long = "for", value_name = "SECONDS", value_parser = bzhead::args::seconds(0.0))]
    for_secs: Option<f64>,
    /// Also print these event types (comma-separated, or "all"; e.g. update,shot_begin).
    #[arg(long, value_name = "TYPES")]
    show: Vec<String>,
    /// Do not print these event types (comma-separated).
    #[arg(long, value_name = "TYPES")]
    hide: Vec<String>,
    /// Record every payload both ways, with times, to FILE (replay it with `bzhead replay FILE`).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Do not bring up the UDP link (everything over TCP).
    #[arg(long)]
    no_udp: bool,
    /// Join like bzadmin: no flag negotiation, settings or world download.
    #[arg(long)]
    no_world: bool,
    /// Do not read or write the world cache.
    #[arg(long)]
    no_cache: bool,
    /// World cache directory (default: $BZHEAD_CACHE_DIR, else $XDG_CACHE_HOME/bzhead/worlds).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Seconds allowed from connect to the server's hello.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = bzhead::args::float(0.001, 86_400.0))]
    hello_timeout: f64,
    /// Seconds allowed from the hello to being accepted (world download included).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0, value_parser = bzhead::args::float(0.001, 86_400.0))]
    join_timeout: f64,
    /// Once in the game, leave with exit code 6 when the server sends nothing for this many seconds (it sends an
    /// observer the game time at least every 10 s); 0 never.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0, value_parser = bzhead::args::float(0.0, 86_400.0))]
    idle_timeout: f64,
    /// Every this many seconds print each player's network figures: updates per second, arrival jitter,
    /// dead-reckoning error (p50, p95, max), lag (from the server's /lagstats, asked for a little before), out of
    /// order and missing updates, time since the last update, and why the player is flagged, if it is ("netstats"
    /// JSON lines, or "--- net" text lines); 0 never.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = bzhead::args::float(0.0, 86_400.0))]
    netstats: f64,
    /// When the server goes away (closes, restarts, stops answering for --idle-timeout, or shuts down), come back
    /// with back-off (0.5 s doubling to 30 s), keeping the output and filters; prints "reconnecting" and
    /// "reconnected" lines. A kick with a reason, a reject or /quit still ends the command. --record covers the
    /// first connection only.
    #[arg(long)]
    reconnect: bool,
}

#[derive(Subcommand)]
enum QueryProto {
    /// A BZFlag 2.4 server: game style, options, limits, teams and players (what bzfquery prints).
    Bzflag {
        /// Server, HOST[:PORT] (port 5154 by default).
        server: String,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Give up after this many milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = bzhead::args::int(1u64, 600_000))]
        timeout_ms: u64,
    },
    /// Any other protocol: `query PROTOCOL ADDR[:PORT]... [--json] [--timeout-ms N] [--retries N]`.
    #[command(external_subcommand)]
    Plugin(Vec<String>),
}

#[derive(clap::Args)]
struct ReplayArgs {
    /// The recording.
    file: PathBuf,
    /// Print JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Also print these event types.
    #[arg(long, value_name = "TYPES")]
    show: Vec<String>,
    /// Do not print these event types.
    #[arg(long, value_name = "TYPES")]
    hide: Vec<String>,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_env("BZHEAD_LOG").unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(io::stderr)
        .init();
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::Observe(a) => observe(a),
        Cmd::Query { proto: QueryProto::Bzflag { server, json, timeout_ms } } => {
            query_bzflag(&server, json, timeout_ms)
        }
        Cmd::Replay(a) => replay(a),
        Cmd::Query { proto: QueryProto::Plugin(args) } => cli::query::query(args),
        Cmd::Plugins(a) => cli::query::plugins(a),
        Cmd::Scan(a) => cli::query::scan(a),
        Cmd::Monitor(a) => cli::monitor::run(a),
        Cmd::World(a) => bzhead::world_cmd::run(a),
        Cmd::Bot(a) => cli::bot::run(a),
    };
    ExitCode::from(code)
}

/// Resolves HOST[:PORT]; IPv4 first.
fn resolve(server: &str, default_port: u16) -> Result<SocketAddr, String> {
    bzhead::reactor::resolve(server, default_port)
}

/// Seconds from the command line as a duration (negative, NaN or huge values are clamped).
fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.clamp(0.0, 86_400.0) } else { 86_400.0 })
}

fn world_cache(no_cache: bool, dir: Option<PathBuf>) -> Option<WorldCache> {
    if no_cache {
        return None;
    }
    dir.map(WorldCache::new).or_else(|| WorldCache::default_dir().map(WorldCache::new))
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
        let t = bzhead::observer::format_t(t);
        let cs = serde_json::Value::from(callsign);
        format!(r#"{{"v":1,"t":{t},"type":"observer_joined","observer":{k},"callsign":{cs},"id":{player_id}}}"#)
    } else {
        format!("--- observer {k} ({callsign}) joined as player {player_id}")
    }
}

/// With `--count`: the line saying that every observer has joined (JSON `all_joined`, or text).
fn all_joined_line(json: bool, t: Duration, count: u32) -> String {
    if json {
        format!(r#"{{"v":1,"t":{},"type":"all_joined","count":{count}}}"#, bzhead::observer::format_t(t))
    } else {
        format!("--- all {count} observers joined")
    }
}

fn observe(a: ObserveArgs) -> u8 {
    let filter = match Filter::new(&a.show, &a.hide) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    if let Some(web) = &a.web {
        return cli::web::observe_web(&a, web, &filter, a.reconnect);
    }
    if a.servers.len() > 1 {
        eprintln!("bzhead: several servers need --web (one observer each, on one event loop)");
        return exit::USAGE;
    }
    let addr = match resolve(&a.servers[0], DEFAULT_PORT) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::CONNECT;
        }
    };
    let count = a.count.max(1);
    let config_for = |k: u32| SessionConfig {
        callsign: numbered_callsign(&a.callsign, k, count),
        motto: a.motto.clone(),
        team: Team::Observer,
        player_type: PlayerType::Tank,
        udp: !a.no_udp,
        full_join: !a.no_world,
        hello_timeout: secs(a.hello_timeout),
        join_timeout: secs(a.join_timeout),
        idle_timeout: (a.idle_timeout.is_finite() && a.idle_timeout > 0.0).then(|| secs(a.idle_timeout)),
        ..SessionConfig::default()
    };
    let mut reactor = match Reactor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bzhead: cannot start the event loop: {e}");
            return exit::PROTOCOL;
        }
    };
    // The first observer records (if asked); the others only watch.
    let options = SessionOptions { record: a.record.clone(), cache: world_cache(a.no_cache, a.cache_dir.clone()) };
    let id = match reactor.add_session(addr, config_for(1), options) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("bzhead: cannot connect to {addr}: {e}");
            return exit::CONNECT;
        }
    };
    let mut id = id;
    let start = reactor.started(id).unwrap_or_else(Instant::now);
    let mut net_clock = NetstatsClock::new(secs(a.netstats), start);
    // With --reconnect: each observer's back-off, and when its next connect is due.
    let mut backoff = vec![Reconnect::new(); count as usize];
    let mut pending: Vec<Option<Instant>> = vec![None; count as usize];
    let mut left_while_away = false;
    let deadline = a.for_secs.filter(|s| s.is_finite() && *s >= 0.0).map(|s| start + Duration::from_secs_f64(s));
    // With --count: the other observers, connected one after another. `observers[k - 1]` is observer k's session
    // once it has connected; `next_connect` is when the next one does.
    let stagger = Duration::from_millis(a.stagger_ms);
    let mut observers: Vec<SessionId> = vec![id];
    let mut next_connect = start + stagger;
    let mut joined = vec![false; count as usize];
    let mut joined_count = 0u32;
    // How many observers to connect (fewer when a connect fails).
    let mut target = count as usize;
    let mut other_code = exit::OK;

    // Ctrl-C, SIGTERM and SIGHUP leave cleanly (MsgExit) instead of dropping the connection; a second one quits
    // at once.
    let sig_rx = cli::leave_on_signals(reactor.waker());

    // Standard input is read on a helper thread that wakes the reactor; a closed stdin is not a reason to leave.
    let (tx, rx) = mpsc::channel::<String>();
    let waker = reactor.waker();
    std::thread::spawn(move || {
        let stdin = io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
            let _ = waker.wake();
        }
    });

    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let mut exit_code = exit::PROTOCOL;
    let mut left = false;
    let mut print = |out: &mut io::BufWriter<io::StdoutLock<'_>>, at: Instant, ev: &Event| {
        if let Event::Closed { exit_code: c, .. } = ev {
            exit_code = u8::try_from(*c).unwrap_or(exit::PROTOCOL);
        }
        if filter.allows(ev) {
            let t = at.saturating_duration_since(start);
            let line = if a.json { json_line(t, ev) } else { text_line(ev) };
            let _ = writeln!(out, "{line}");
        }
    };
    loop {
        let now = Instant::now();
        let mut wait = deadline.map(|d| d.saturating_duration_since(now)).unwrap_or(Duration::from_secs(3600));
        if !left && observers.len() < target {
            wait = wait.min(next_connect.saturating_duration_since(now));
        }
        for due in pending.iter().flatten().copied().chain(net_clock.as_ref().map(NetstatsClock::deadline)) {
            wait = wait.min(due.saturating_duration_since(now));
        }
        if let Err(e) = reactor.turn(Some(wait)) {
            eprintln!("bzhead: event loop failed: {e}");
            return exit::PROTOCOL;
        }
        while let Ok(line) = rx.try_recv() {
            let line = line.trim_end_matches(['\r', '\n']);
            if line.trim() == "/quit" {
                for &o in &observers {
                    reactor.leave(o);
                }
                left = true;
            } else if !line.trim().is_empty() {
                let text = line.strip_prefix("//").map(|r| format!("/{r}")).unwrap_or_else(|| line.to_string());
                reactor.send_chat(id, player::ALL_PLAYERS, &text);
            }
        }
        if !left && (deadline.is_some_and(|d| Instant::now() >= d) || sig_rx.try_recv().is_ok()) {
            for &o in &observers {
                reactor.leave(o);
            }
            left = true;
        }
        if left {
            // Leaving (/quit, --for, a signal) while the first observer waits to come back is a clean end.
            left_while_away |= pending.first().is_some_and(Option::is_some);
            pending.iter_mut().for_each(|p| *p = None);
        }
        let mut printed = false;
        for k in 1..=observers.len() {
            let now = Instant::now();
            if pending[k - 1].is_none_or(|due| now < due) {
                continue;
            }
            pending[k - 1] = None;
            reactor.remove_session(observers[k - 1]);
            // (`..default()`: other options may be added to SessionOptions.)
            #[allow(clippy::needless_update)]
            let options = SessionOptions {
                record: None,
                cache: world_cache(a.no_cache, a.cache_dir.clone()),
                ..SessionOptions::default()
            };
            match reactor.add_session(addr, config_for(k as u32), options) {
                Ok(o) => {
                    observers[k - 1] = o;
                    if k == 1 {
                        id = o;
                    }
                }
                Err(e) => {
                    let (attempt, delay) = backoff[k - 1].failed(now);
                    pending[k - 1] = Some(now + delay);
                    if k == 1 {
                        let why = format!("cannot connect to {addr}: {e}");
                        let t = now.saturating_duration_since(start);
                        let _ = writeln!(out, "{}", reconnecting_line(t, a.json, attempt, delay, &why));
                        printed = true;
                    }
                }
            }
        }
        while !left && observers.len() < target && Instant::now() >= next_connect {
            let k = observers.len() as u32 + 1;
            let options = SessionOptions { record: None, cache: world_cache(a.no_cache, a.cache_dir.clone()) };
            match reactor.add_session(addr, config_for(k), options) {
                Ok(o) => observers.push(o),
                Err(e) => {
                    eprintln!("bzhead: observer {k} cannot connect to {addr}: {e}");
                    other_code = exit::CONNECT;
                    // Nothing more to connect: the others keep watching.
                    target = observers.len();
                    break;
                }
            }
            next_connect += stagger;
        }
        while let Some((sid, at, ev)) = reactor.poll_event() {
            if a.reconnect && !left {
                let k = observers.iter().position(|&o| o == sid).map_or(0, |i| i + 1);
                match &ev {
                    Event::Closed { .. } if k > 0 => {
                        let end = reactor.session(sid).and_then(|s| s.end().cloned());
                        if let Some(end) = end.filter(|e| backoff[k - 1].comes_back(e, at)) {
                            let (attempt, delay) = backoff[k - 1].failed(at);
                            pending[k - 1] = Some(at + delay);
                            if k == 1 {
                                // The first end of a streak is printed; the failed attempts after it only as
                                // "reconnecting" lines.
                                if attempt == 1 {
                                    print(&mut out, at, &ev);
                                }
                                let t = at.saturating_duration_since(start);
                                let _ =
                                    writeln!(out, "{}", reconnecting_line(t, a.json, attempt, delay, &end.to_string()));
                                printed = true;
                            }
                            continue;
                        }
                    }
                    Event::Accept { .. } if k > 0 => {
                        if let Some((attempt, down)) = backoff[k - 1].joined(at) {
                            if k == 1 {
                                print(&mut out, at, &ev);
                                let t = at.saturating_duration_since(start);
                                let _ = writeln!(out, "{}", reconnected_line(t, a.json, attempt, down));
                                printed = true;
                                continue;
                            }
                        }
                    }
                    Event::Chat { from: player::SERVER, .. } if k > 0 => backoff[k - 1].heard_server_text(at),
                    _ => {}
                }
            }
            if count > 1 {
                let k = observers.iter().position(|&o| o == sid).map_or(0, |i| i as u32 + 1);
                if let (Event::Accept { id: player_id }, true) = (&ev, k > 0) {
                    if !joined[k as usize - 1] {
                        joined[k as usize - 1] = true;
                        joined_count += 1;
                        let t = at.saturating_duration_since(start);
                        let callsign = numbered_callsign(&a.callsign, k, count);
                        let _ = writeln!(out, "{}", joined_line(a.json, t, k, &callsign, *player_id));
                        if joined_count == count {
                            let _ = writeln!(out, "{}", all_joined_line(a.json, t, count));
                        }
                        printed = true;
                    }
                }
                if k > 1 {
                    // Only the first observer's events are printed; the others report how they ended.
                    if let Event::Closed { exit_code: c, .. } = ev {
                        if c != 0 {
                            let why = reactor.session(sid).and_then(|s| s.end().map(|e| e.to_string()));
                            eprintln!(
                                "bzhead: observer {k} ({}): {}",
                                numbered_callsign(&a.callsign, k, count),
                                for_terminal(&why.unwrap_or_else(|| format!("closed with exit code {c}")))
                            );
                            if other_code == exit::OK {
                                other_code = u8::try_from(c).unwrap_or(exit::PROTOCOL);
                            }
                        }
                    }
                    continue;
                }
            }
            print(&mut out, at, &ev);
            printed = true;
        }
        while let Some(clock) = net_clock.as_mut() {
            let now = Instant::now();
            match clock.poll(now) {
                NetstatsDue::Nothing => break,
                NetstatsDue::AskLag => reactor.request_lag_stats(id),
                NetstatsDue::Print => {
                    if let Some(s) = reactor.session(id).filter(|s| s.is_joined()) {
                        let t = now.saturating_duration_since(start);
                        let _ = writeln!(out, "{}", link_line(s, now, t, a.json));
                        for line in netstats_lines(s, now, t, a.json) {
                            let _ = writeln!(out, "{line}");
                            printed = true;
                        }
                    }
                }
            }
        }
        // One write per turn: lines reach a pipe (or a terminal) as they happen.
        if printed {
            let _ = out.flush();
        }
        if observers.iter().all(|&o| reactor.is_done(o))
            && (left || observers.len() >= target)
            && pending.iter().all(Option::is_none)
        {
            break;
        }
    }
    if left_while_away {
        return other_code;
    }
    if let Some(end) = reactor.session(id).and_then(|s| s.end()) {
        if end.exit_code() != 0 {
            eprintln!("bzhead: {}", for_terminal(&end.to_string()));
        }
    }
    if let Some(path) = &a.record {
        if let Some(err) = reactor.record_error(id) {
            eprintln!("bzhead: the recording {} is incomplete: {err}", path.display());
        }
    }
    if exit_code == exit::OK {
        other_code
    } else {
        exit_code
    }
}

fn query_bzflag(server: &str, json: bool, timeout_ms: u64) -> u8 {
    let addr = match resolve(server, DEFAULT_PORT) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::CONNECT;
        }
    };
    let config = SessionConfig {
        query_only: true,
        hello_timeout: Duration::from_millis(timeout_ms),
        join_timeout: Duration::from_millis(timeout_ms),
        ..SessionConfig::default()
    };
    let mut reactor = match Reactor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bzhead: cannot start the event loop: {e}");
            return exit::PROTOCOL;
        }
    };
    let id = match reactor.add_session(addr, config, SessionOptions::default()) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("bzhead: cannot connect to {addr}: {e}");
            return exit::CONNECT;
        }
    };
    let started = Instant::now();
    let deadline = started + Duration::from_millis(timeout_ms.saturating_mul(2).max(100));
    if let Err(e) = reactor.run_until_done(deadline) {
        eprintln!("bzhead: event loop failed: {e}");
        return exit::PROTOCOL;
    }
    let mut result = None;
    let mut code = exit::PROTOCOL;
    while let Some((_, at, ev)) = reactor.poll_event() {
        match ev {
            Event::QueryResult { game, teams, players } => result = Some((game, teams, players, at - started)),
            Event::Closed { exit_code, .. } => code = u8::try_from(exit_code).unwrap_or(exit::PROTOCOL),
            _ => {}
        }
    }
    let Some((game, teams, players, elapsed)) = result else {
        let why = reactor
            .session(id)
            .and_then(|s| s.end().map(|e| e.to_string()))
            .unwrap_or_else(|| "no answer in time".to_string());
        eprintln!("bzhead: query of {addr} failed: {}", for_terminal(&why));
        return if code == exit::OK { exit::PROTOCOL } else { code };
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if json {
        let v = bzhead::bzflag::query::to_json(addr, &game, &teams, &players, elapsed);
        let _ = writeln!(out, "{v}");
    } else {
        let _ = write!(out, "{}", bzhead::bzflag::query::to_text(&game, &teams, &players));
    }
    exit::OK
}

fn replay(a: ReplayArgs) -> u8 {
    let filter = match Filter::new(&a.show, &a.hide) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    let (meta, records) = match bzhead::record::read_records(&a.file) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("bzhead: {}: {e}", a.file.display());
            return exit::USAGE;
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for (t, ev) in bzhead::record::replay(&meta, &records) {
        if filter.allows(&ev) {
            let line = if a.json { json_line(t, &ev) } else { text_line(&ev) };
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = out.flush();
    exit::OK
}
