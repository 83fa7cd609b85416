//! `bzhead plugins`, `bzhead query PROTOCOL ADDR...` (plugin protocols; `query bzflag` stays in main.rs) and
//! `bzhead scan`.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use bzhead::query::filter::{MasterPolicy, DEFAULT_MAX_PORTS_PER_HOST};
use bzhead::query::front::{self, FrontError, MasterSpec, Tick};
use bzhead::query::loader::{plugin_dirs, PluginOrigin, PluginSet, ProtocolKind};
use bzhead::query::result::QueryResult;
use bzhead::query::targets::{list_entries, resolve};
use bzhead::query::{ScanConfig, ScanStats, Target, BZFLAG, BZFLAG_PORT};
use bzhead::reactor::Reactor;
use bzhead::text::for_terminal;

/// Exit codes of the query commands.
mod exit {
    pub const OK: u8 = 0;
    pub const USAGE: u8 = 2;
    pub const NO_ANSWER: u8 = 3;
    pub const FAILED: u8 = 6;
}

/// Exit codes, for `--help`.
pub const QUERY_EXIT_CODES: &str = "Exit codes: 0 every server answered, 2 usage (unknown protocol, bad address), \
3 some server did not answer (timeout, refused), 6 some answer was malformed or a plugin failed.";

/// Where plugins are looked for.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PluginDirs {
    /// Look for query plugins in DIR first (repeatable); then $BZHEAD_PLUGIN_PATH, $XDG_DATA_HOME/bzhead/plugins
    /// (~/.local/share/bzhead/plugins), /usr/local/lib/bzhead/plugins, /usr/lib/bzhead/plugins, beside the
    /// executable, and last the built-in plugins (a file overrides a built-in protocol).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dir: Vec<PathBuf>,
}

/// `bzhead plugins`.
#[derive(clap::Args, Debug)]
pub struct PluginsArgs {
    #[command(flatten)]
    dirs: PluginDirs,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Options shared by `query` and `scan`.
#[derive(clap::Args, Debug, Clone)]
pub struct QueryOptions {
    /// Wait this long for the answer to a first request (then twice as long per retry), 1 to 600000.
    #[arg(long, value_name = "MS", default_value_t = 1000, value_parser = bzhead::args::int(1u64, 600_000))]
    timeout_ms: u64,
    /// Re-send an unanswered request this many times, 0 to 16.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = bzhead::args::int(0u32, 16))]
    retries: u32,
    /// A protocol parameter KEY=VALUE for the plugin (repeatable; e.g. mode=vanilla, query=info).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    #[command(flatten)]
    dirs: PluginDirs,
}

/// `bzhead query PROTOCOL ADDR...` for every protocol but `bzflag` (parsed after clap's external subcommand).
#[derive(Parser, Debug)]
#[command(name = "bzhead query", after_help = QUERY_EXIT_CODES)]
struct QueryArgs {
    /// Protocol: teeworlds, teeworlds7, quake3, warsow, dpmaster, savage2, srb2 (see `bzhead plugins`), or bzflag.
    protocol: String,
    /// Servers, ADDR[:PORT] (the protocol's default port when none is given).
    #[arg(required = true)]
    servers: Vec<String>,
    /// One JSON line per server instead of text.
    #[arg(long)]
    json: bool,
    /// For dpmaster: the game name of the list (e.g. Quake3Arena, Warsow).
    #[arg(long, value_name = "NAME")]
    game: Option<String>,
    /// For dpmaster: the game's protocol number (e.g. 68, 71, 22).
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(0u32, u32::MAX))]
    game_protocol: Option<u32>,
    #[command(flatten)]
    opts: QueryOptions,
}

/// `bzhead scan`.
#[derive(clap::Args, Debug)]
#[command(after_help = QUERY_EXIT_CODES)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["master", "list"])))]
pub struct ScanArgs {
    /// A master server, ADDR[:PORT], whose list is scanned.
    #[arg(long, value_name = "ADDR")]
    master: Option<String>,
    /// A file with one ADDR[:PORT] per line (`#` comments).
    #[arg(long, value_name = "FILE")]
    list: Option<PathBuf>,
    /// Protocol of the servers.
    #[arg(long, value_name = "P")]
    protocol: String,
    /// Protocol of the master: a master plugin protocol (dpmaster, teeworlds-master), or bzflag-list or ddnet-http
    /// (--master is then the list's URL, fetched over HTTP(S)).
    #[arg(long, value_name = "P", default_value = "dpmaster")]
    master_protocol: String,
    /// For the master: the game name of the list (e.g. Quake3Arena, Warsow).
    #[arg(long, value_name = "NAME")]
    game: Option<String>,
    /// For the master: the game's protocol number (e.g. 68, 71, 22).
    #[arg(long, value_name = "N", value_parser = bzhead::args::int(0u32, u32::MAX))]
    game_protocol: Option<u32>,
    /// For the master: list filters (e.g. "empty full", "ipv6").
    #[arg(long, value_name = "F")]
    filters: Option<String>,
    /// Datagrams per second, all servers together (1 to 1000000).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = bzhead::args::int(1u32, 1_000_000))]
    rate: u32,
    /// Queries running at once (1 to 1000000).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = bzhead::args::int(1usize, 1_000_000))]
    concurrency: usize,
    /// Also scan the special-use addresses a master lists (loopback, private, link-local, multicast,
    /// documentation...; dropped and counted by default). For the operator of a LAN's own master.
    #[arg(long)]
    allow_private: bool,
    /// Take at most N ports per host (IPv4 address or IPv6 /64) from a master's list; the rest are dropped and
    /// counted (1 to 65535). A list file is taken as it is.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_PORTS_PER_HOST,
          value_parser = bzhead::args::int(1u32, 65_535))]
    max_ports_per_host: u32,
    /// One JSON line per server instead of a table.
    #[arg(long)]
    json: bool,
    /// Also list the servers that did not answer (the table shows answers only).
    #[arg(long)]
    all: bool,
    /// No progress line, even on a terminal.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    opts: QueryOptions,
}

fn load(dirs: &PluginDirs) -> PluginSet {
    let set = PluginSet::load_standard(&plugin_dirs(&dirs.plugin_dir));
    for e in set.errors() {
        tracing::debug!(error = %e, "plugin not loaded");
    }
    set
}

fn parse_params(raw: &[String]) -> Result<Vec<(String, String)>, String> {
    raw.iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(format!("--param {p:?}: expected KEY=VALUE")),
        })
        .collect()
}

/// Prints a front-door error (with the plugin directories searched, for an unknown protocol); returns the usage
/// exit code.
fn usage_error(e: &FrontError, dirs: &PluginDirs) -> u8 {
    let mut msg = e.to_string();
    if let FrontError::UnknownProtocol(_) = e {
        let searched: Vec<String> =
            plugin_dirs(&dirs.plugin_dir).iter().map(|d| d.path.display().to_string()).collect();
        msg += &format!("\n  plugin directories searched: {}, then the built-in plugins", searched.join(", "));
    }
    eprintln!("bzhead: {msg}");
    exit::USAGE
}

fn config(opts: &QueryOptions, params: Vec<(String, String)>) -> ScanConfig {
    ScanConfig::front(Duration::from_millis(opts.timeout_ms), opts.retries, params)
}

// ------------------------------------------------------------------------------------------------ plugins

/// JSON of where a plugin came from: `{"builtin":CRATE}` or `{"file":PATH,"dir":DIR|null,"source":WHY|null}`.
fn origin_json(o: &PluginOrigin) -> serde_json::Value {
    match o {
        PluginOrigin::BuiltIn { crate_name } => serde_json::json!({"builtin": crate_name}),
        PluginOrigin::File { path, dir } => serde_json::json!({
            "file": path.display().to_string(),
            "dir": dir.as_ref().map(|d| d.path.display().to_string()),
            "source": dir.as_ref().map(|d| d.source.label()),
        }),
    }
}

/// `bzhead plugins`: what is loaded (and where from), with versions and protocols, and what failed to load.
pub fn plugins(a: PluginsArgs) -> u8 {
    let dirs = plugin_dirs(&a.dirs.plugin_dir);
    let set = PluginSet::load_standard(&dirs);
    let out = io::stdout();
    let mut out = out.lock();
    // The plugin serving `name`, when it is not `p`.
    let overridden_by = |p: &bzhead::query::PluginLibrary, name: &str| {
        set.plugin_for(name).filter(|w| !std::ptr::eq(w.as_ref(), p)).map(|w| w.origin().clone())
    };
    if a.json {
        let plugins: Vec<serde_json::Value> = set
            .plugins()
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name(),
                    "version": p.version(),
                    "path": (!p.is_builtin()).then(|| p.path().display().to_string()),
                    "origin": origin_json(p.origin()),
                    "catches_panics": p.catches_panics(),
                    "protocols": p.protocols().iter().map(|d| serde_json::json!({
                        "name": d.name,
                        "kind": if d.kind == ProtocolKind::Master { "master" } else { "server" },
                        "default_port": d.default_port,
                        "description": d.description,
                        "overridden_by": overridden_by(p, &d.name).map(|o| origin_json(&o)),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let v = serde_json::json!({
            "abi_version": query_abi::ABI_VERSION,
            "dirs": dirs.iter().map(|d| serde_json::json!({
                "path": d.path.display().to_string(),
                "source": d.source.label(),
            })).collect::<Vec<_>>(),
            "builtin": [{"name": BZFLAG, "kind": "server", "default_port": BZFLAG_PORT,
                         "description": "BZFlag 2.4 (TCP, built in)"}],
            "plugins": plugins,
            "errors": set.errors().iter().map(ToString::to_string).collect::<Vec<_>>(),
        });
        let _ = writeln!(out, "{v}");
        return exit::OK;
    }
    let _ = writeln!(out, "plugin ABI version {}", query_abi::ABI_VERSION);
    let _ = writeln!(out, "searched, in order:");
    for d in &dirs {
        let _ = writeln!(out, "  {} ({})", d.path.display(), d.source.label());
    }
    let _ = writeln!(out, "  then the plugins built into bzhead");
    let _ = writeln!(out, "\nbuilt in\n  {BZFLAG:<12} server  port {BZFLAG_PORT:<5}  BZFlag 2.4 (TCP)");
    for p in set.plugins() {
        // A plugin's own texts are printed through the terminal filter like a server's.
        let (name, version) = (for_terminal(p.name()), for_terminal(p.version()));
        let _ = writeln!(out, "\n{name} {version} ({})", for_terminal(&p.origin().to_string()));
        if !p.catches_panics() {
            let _ = writeln!(out, "  warning: built with panic=abort; a panic in it ends bzhead");
        }
        for d in p.protocols() {
            let kind = if d.kind == ProtocolKind::Master { "master" } else { "server" };
            let note = match overridden_by(p, &d.name) {
                Some(PluginOrigin::File { path, .. }) => format!(" (overridden by {})", path.display()),
                Some(PluginOrigin::BuiltIn { crate_name }) => format!(" (overridden by built-in {crate_name})"),
                None => String::new(),
            };
            let (name, desc, note) = (for_terminal(&d.name), for_terminal(&d.description), for_terminal(&note));
            let _ = writeln!(out, "  {name:<12} {kind:<6}  port {:<5}  {desc}{note}", d.default_port);
        }
    }
    if !set.errors().is_empty() {
        let _ = writeln!(out, "\nnot loaded");
        for e in set.errors() {
            let _ = writeln!(out, "  {}", for_terminal(&e.to_string()));
        }
    }
    exit::OK
}

// ------------------------------------------------------------------------------------------------ query

/// `bzhead query PROTOCOL ADDR...` for a plugin protocol; `args` are the words after `query`.
pub fn query(args: Vec<String>) -> u8 {
    let mut argv = vec!["bzhead query".to_owned()];
    argv.extend(args);
    let a = match QueryArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { exit::USAGE } else { exit::OK };
        }
    };
    let mut params = match parse_params(&a.opts.params) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    if let Some(g) = &a.game {
        params.push(("game".into(), g.clone()));
    }
    if let Some(g) = a.game_protocol {
        params.push(("game_protocol".into(), g.to_string()));
    }
    let set = load(&a.opts.dirs);
    let mut targets = Vec::new();
    for s in &a.servers {
        match front::server_target(&set, &a.protocol, s) {
            Ok(t) => targets.push(t),
            Err(e) => return usage_error(&e, &a.opts.dirs),
        }
    }
    let cfg = config(&a.opts, params).unpaced();
    let mut results = Vec::new();
    let run = run_scan(set, cfg, &targets, |t| {
        if let Tick::Result(r) = t {
            results.push(r.clone());
        }
    });
    match run {
        Ok(_) => {}
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::FAILED;
        }
    }
    results.sort_by_key(|r| r.index);
    let out = io::stdout();
    let mut out = out.lock();
    let mut line = Vec::new();
    for r in &results {
        if a.json {
            line.clear();
            r.write_json(&mut line);
            line.push(b'\n');
            let _ = out.write_all(&line);
        } else {
            let _ = out.write_all(text_block(r).as_bytes());
        }
    }
    let _ = out.flush();
    exit_code(&results)
}

fn exit_code(results: &[QueryResult]) -> u8 {
    use bzhead::query::ErrorKind;
    let mut code = exit::OK;
    for r in results {
        if let Err(e) = &r.outcome {
            code = match e.kind {
                ErrorKind::Timeout | ErrorKind::Refused => code.max(exit::NO_ANSWER),
                _ => exit::FAILED,
            };
        }
    }
    code
}

/// Runs a scan of `targets` on a fresh reactor until everything finished (the library's driver,
/// [`front::run`]), handing each result and the end of each turn to `on`; returns the final counters.
fn run_scan(
    set: PluginSet,
    cfg: ScanConfig,
    targets: &[Target],
    on: impl FnMut(Tick<'_>),
) -> Result<ScanStats, String> {
    let mut reactor = Reactor::new().map_err(|e| format!("cannot start the event loop: {e}"))?;
    front::run(&mut reactor, set, cfg, targets, on, |r| {
        r.turn(Some(Duration::from_millis(100))).map_err(|e| format!("event loop failed: {e}"))
    })
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_owned(), ToString::to_string)
}

/// The text form of one result.
fn text_block(r: &QueryResult) -> String {
    let mut s = String::new();
    let ping = r.ping_ms.map(|p| format!(", ping {p} ms")).unwrap_or_default();
    let t = |v: &str| for_terminal(v).into_owned();
    let topt = |v: Option<&str>| v.map_or_else(|| "-".to_owned(), t);
    match &r.outcome {
        Err(e) => s += &format!("{} ({}): {}\n", r.address, r.protocol, t(&e.to_string())),
        Ok(a) => {
            s += &format!("{} ({}): ok{ping}\n", r.address, r.protocol);
            if let Some(servers) = a.servers() {
                s += &format!("  servers: {}\n", servers.len());
                for srv in servers {
                    s += &format!("    {srv}\n");
                }
            } else {
                s += &format!(
                    "  name: {}\n  map: {}\n  game type: {}\n",
                    topt(a.name()),
                    topt(a.map()),
                    topt(a.game_type())
                );
                s += &format!("  players: {}/{}", opt(&a.players()), opt(&a.max_players()));
                if let Some(b) = a.bots() {
                    s += &format!(" ({b} bots)");
                }
                s += "\n";
                s += &format!(
                    "  password: {}\n  version: {}\n",
                    a.password().map_or("-", |p| if p { "yes" } else { "no" }),
                    topt(a.version())
                );
                match a.player_list() {
                    None => s += "  player list: unknown\n",
                    Some(list) if list.len() == 0 => {}
                    Some(list) => {
                        s += &format!("  {:<24} {:>8} {:>6} {:>6}\n", "player", "score", "team", "ping");
                        for p in list {
                            s += &format!(
                                "  {:<24} {:>8} {:>6} {:>6}\n",
                                t(p.name),
                                t(&p.score.to_string()),
                                t(&p.team.to_string()),
                                t(&p.ping.to_string())
                            );
                        }
                    }
                }
                if !a.rules().is_empty() {
                    s += "  rules:";
                    for (k, v) in a.rules().iter() {
                        s += &format!(" {}={}", t(k), t(&v.to_string()));
                    }
                    s += "\n";
                }
            }
        }
    }
    s
}

// ------------------------------------------------------------------------------------------------ scan

const TABLE_HEADER: &str = "ADDRESS                                  PING_MS  PLAYERS  MAP              NAME";

fn table_row(r: &QueryResult) -> String {
    let ping = r.ping_ms.map_or_else(|| "-".to_owned(), |p| format!("{p:.1}"));
    match &r.outcome {
        Ok(a) => format!(
            "{:<40} {:>7}  {:>7}  {:<16} {}",
            r.address.to_string(),
            ping,
            format!("{}/{}", opt(&a.players()), opt(&a.max_players())),
            truncate(&for_terminal(a.map().unwrap_or("-")), 16),
            for_terminal(a.name().unwrap_or("-"))
        ),
        Err(e) => {
            format!(
                "{:<40} {:>7}  {:>7}  {:<16} ({})",
                r.address.to_string(),
                "-",
                "-",
                "-",
                for_terminal(&e.to_string())
            )
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        s.chars().take(n.saturating_sub(1)).chain(std::iter::once('~')).collect()
    }
}

/// `bzhead scan`.
pub fn scan(a: ScanArgs) -> u8 {
    let params = match parse_params(&a.opts.params) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bzhead: {e}");
            return exit::USAGE;
        }
    };
    let set = load(&a.opts.dirs);
    let port = match front::server_port(&set, &a.protocol) {
        Ok(p) => p,
        Err(FrontError::IsMaster(p)) => {
            eprintln!("bzhead: {p} is a master protocol; use it with --master (and --master-protocol)");
            return exit::USAGE;
        }
        Err(e) => return usage_error(&e, &a.opts.dirs),
    };
    let (targets, master_proto) = match scan_targets(&a, &set, port) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // The master gets the plugin parameters of the servers only through its own flags.
    let cfg = ScanConfig {
        concurrency: a.concurrency.max(1),
        master_policy: MasterPolicy { allow_special_use: a.allow_private, max_ports_per_host: a.max_ports_per_host },
        ..config(&a.opts, params).at_rate(a.rate)
    };
    let started = Instant::now();
    let mut printer = ScanPrinter::new(&a, master_proto);
    let run = run_scan(set, cfg, &targets, |t| match t {
        Tick::Result(r) => printer.result(r),
        Tick::Turn(st, left) => printer.turn(st, left),
    });
    printer.finish(run, started)
}

/// The scan's targets: a master's (asked over HTTP(S) before the scan, or over UDP by the scan itself, whose
/// protocol is then returned too) and a list file's. `Err` is the exit code.
fn scan_targets(a: &ScanArgs, set: &PluginSet, port: u16) -> Result<(Vec<Target>, Option<String>), u8> {
    let mut targets = Vec::new();
    let mut master_proto = None;
    // Lists published over HTTP(S) (BZFlag's list server, DDNet's servers.json) are fetched before the scan starts.
    let http_master = bzhead::monitor::masters::Format::from_name(&a.master_protocol);
    if let (Some(format), Some(url)) = (http_master, &a.master) {
        match bzhead::monitor::masters::fetch(format, url) {
            Ok(entries) => {
                // The list's entries go through the same policy as a UDP master's.
                let policy =
                    MasterPolicy { allow_special_use: a.allow_private, max_ports_per_host: a.max_ports_per_host };
                let listed = entries.iter().filter(|e| e.protocol == a.protocol).map(|e| (e.protocol, e.addr));
                let (taken, dropped) = front::listed_targets(listed, policy);
                eprintln!(
                    "bzhead: master {url} listed {} servers; {} taken, {dropped} dropped by the entry policy",
                    entries.len(),
                    taken.len(),
                );
                targets = taken;
            }
            Err(e) => {
                eprintln!("bzhead: master {e}");
                return Err(exit::NO_ANSWER);
            }
        }
    } else if let Some(m) = &a.master {
        let spec = MasterSpec {
            protocol: a.master_protocol.clone(),
            address: m.clone(),
            servers: a.protocol.clone(),
            game: a.game.clone(),
            game_protocol: a.game_protocol.map(|p| p.to_string()),
            filters: a.filters.clone(),
        };
        match front::master_target(set, &spec) {
            Ok(t) => targets.push(t),
            Err(e) => return Err(usage_error(&e, &a.opts.dirs)),
        }
        master_proto = Some(a.master_protocol.clone());
    }
    if let Some(path) = &a.list {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("bzhead: cannot read {}: {e}", path.display());
                return Err(exit::USAGE);
            }
        };
        for (line, entry) in list_entries(&text) {
            match resolve(entry, port) {
                Ok(addr) => targets.push(Target::new(&a.protocol, addr)),
                Err(e) => eprintln!("bzhead: {}:{line}: {e} (skipped)", path.display()),
            }
        }
    }
    Ok((targets, master_proto))
}

/// Lines are gathered and written every [`FLUSH_EVERY`] (or per [`OUT_CHUNK`], and at the end): they reach a pipe
/// within a few milliseconds without a write (and a wake-up of the reader) per line or per turn.
const OUT_CHUNK: usize = 64 * 1024;
const FLUSH_EVERY: Duration = Duration::from_millis(10);

/// What a scan prints: the results (table rows or JSON lines), the progress line, the master's report and the
/// summary; and the counts of the servers' results (the master's is reported on its own) and the exit code.
struct ScanPrinter<'a> {
    a: &'a ScanArgs,
    /// The protocol of a master asked over UDP: its result is the first of that protocol.
    master_proto: Option<String>,
    stdout: io::StdoutLock<'static>,
    out: Vec<u8>,
    last_flush: Instant,
    progress: bool,
    last_progress: Instant,
    master_failed: Option<String>,
    servers: u64,
    answered: u64,
    timed_out: u64,
    malformed: u64,
    code: u8,
}

impl<'a> ScanPrinter<'a> {
    fn new(a: &'a ScanArgs, master_proto: Option<String>) -> ScanPrinter<'a> {
        let mut out: Vec<u8> = Vec::with_capacity(OUT_CHUNK);
        if !a.json {
            let _ = writeln!(out, "{TABLE_HEADER}");
        }
        ScanPrinter {
            a,
            master_proto,
            stdout: io::stdout().lock(),
            out,
            last_flush: Instant::now(),
            progress: !a.quiet && io::stderr().is_terminal(),
            last_progress: Instant::now(),
            master_failed: None,
            servers: 0,
            answered: 0,
            timed_out: 0,
            malformed: 0,
            code: exit::OK,
        }
    }

    fn is_master(&self, r: &QueryResult) -> bool {
        self.master_proto.as_deref() == Some(r.protocol.as_str()) && r.index == 0
    }

    /// A finished query: counted, printed (the master's is reported on stderr).
    fn result(&mut self, r: &QueryResult) {
        let a = self.a;
        if self.is_master(r) {
            match &r.outcome {
                Ok(ans) => {
                    let raw = |k: &str| ans.raw().get(k).map_or_else(|| "0".to_owned(), |v| v.to_string());
                    eprintln!(
                        "bzhead: master {} listed {} servers: {} taken, {} special-use dropped, {} dropped over {} \
                         ports per host{}",
                        r.address,
                        ans.servers().map_or(0, <[_]>::len),
                        raw("entries_taken"),
                        raw("dropped_special_use"),
                        raw("dropped_ports_per_host"),
                        a.max_ports_per_host,
                        if a.allow_private { " (special-use allowed)" } else { "" },
                    )
                }
                Err(e) => self.master_failed = Some(format!("master {}: {}", r.address, for_terminal(&e.to_string()))),
            }
        } else {
            self.servers += 1;
            match &r.outcome {
                Ok(_) => self.answered += 1,
                Err(e) if e.kind == bzhead::query::ErrorKind::Timeout => self.timed_out += 1,
                Err(e) if e.kind == bzhead::query::ErrorKind::Malformed => self.malformed += 1,
                Err(_) => {}
            }
            self.code = self.code.max(exit_code(std::slice::from_ref(r)));
        }
        if a.json {
            r.write_json(&mut self.out);
            self.out.push(b'\n');
        } else if !self.is_master(r) && (r.is_ok() || a.all) {
            let _ = writeln!(self.out, "{}", table_row(r));
        }
        if self.out.len() >= OUT_CHUNK {
            let _ = self.stdout.write_all(&self.out);
            self.out.clear();
        }
    }

    /// The end of a turn: the lines gathered, and the progress line on a terminal.
    fn turn(&mut self, st: &ScanStats, left: usize) {
        if !self.out.is_empty() && self.last_flush.elapsed() >= FLUSH_EVERY {
            self.last_flush = Instant::now();
            let _ = self.stdout.write_all(&self.out);
            self.out.clear();
            let _ = self.stdout.flush();
        }
        if self.progress && self.last_progress.elapsed() >= Duration::from_millis(100) {
            self.last_progress = Instant::now();
            eprint!(
                "\r\x1b[K[{} done, {left} to go] answered {}, timed out {}, malformed {}",
                st.finished, st.answered, st.timed_out, st.malformed
            );
        }
    }

    /// After the scan: the last lines, the summary; returns the exit code.
    fn finish(mut self, run: Result<ScanStats, String>, started: Instant) -> u8 {
        if self.progress {
            eprint!("\r\x1b[K");
        }
        let _ = self.stdout.write_all(&self.out);
        let _ = self.stdout.flush();
        let stats = match run {
            Ok(x) => x,
            Err(e) => {
                eprintln!("bzhead: {e}");
                return exit::FAILED;
            }
        };
        let (servers, answered, timed_out, malformed) = (self.servers, self.answered, self.timed_out, self.malformed);
        eprintln!(
            "bzhead: scanned {servers} servers: {answered} answered, {timed_out} timed out, {malformed} malformed, {} \
             other errors in {:.1} s ({} datagrams sent, {} received, {} unsolicited or ignored; master entries \
             dropped: {} special-use, {} over the per-host limit)",
            servers - answered - timed_out - malformed,
            started.elapsed().as_secs_f64(),
            stats.sent,
            stats.received,
            stats.unsolicited + stats.ignored,
            stats.dropped_special_use,
            stats.dropped_ports_per_host,
        );
        if let Some(m) = self.master_failed {
            eprintln!("bzhead: {m}");
            return exit::NO_ANSWER;
        }
        self.code
    }
}
