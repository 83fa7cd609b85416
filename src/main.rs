//! The `bzhead` command line. See `bzhead --help`. Each command lives in its module of `cli/`; this file parses the
//! arguments, sets up logging and dispatches.
#![forbid(unsafe_code)]

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;

mod cli;

use cli::EXIT_CODES;

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
    Observe(cli::observe::ObserveArgs),
    /// Ask servers about their game without joining: `query bzflag SERVER`, or `query PROTOCOL ADDR[:PORT]...` for
    /// a plugin protocol (teeworlds, teeworlds7, quake3, warsow, dpmaster, savage2, srb2; see `bzhead plugins`).
    #[command(after_help = EXIT_CODES)]
    Query {
        #[command(subcommand)]
        proto: QueryProto,
    },
    /// Feed a recording (made with `observe --record`) through the engine offline and print its events.
    Replay(cli::replay::ReplayArgs),
    /// List the query plugins found (versions, protocols, default ports) and the files that failed to load.
    Plugins(cli::query::PluginsArgs),
    /// Query every server of a master's list or a list file, many at once, and print a table or JSON lines.
    Scan(cli::query::ScanArgs),
    /// Watch servers continuously: rounds of scans, history in SQLite, an HTTP API, a change feed and metrics.
    Monitor(cli::monitor::MonitorArgs),
    /// Download a server's world (or read a blob) and print its model: summary, JSON, SVG map.
    #[command(after_help = EXIT_CODES)]
    World(cli::world::WorldArgs),
    /// Play: bots (hunter, capper, defender, sitter) join a server and play, with the observer's events and a line for
    /// everything that happens to a bot.
    #[command(after_help = EXIT_CODES, args_override_self = true)]
    Bot(cli::bot::BotArgs),
    /// Serve the BZRC text protocol of the BZRFlag course labs, so that course agents drive real tanks.
    #[command(after_help = EXIT_CODES)]
    Bzrc(cli::bzrc::BzrcArgs),
}

#[derive(Subcommand)]
enum QueryProto {
    /// A BZFlag 2.4 server: game style, options, limits, teams and players (what bzfquery prints).
    Bzflag(cli::query_bzflag::BzflagArgs),
    /// Any other protocol: `query PROTOCOL ADDR[:PORT]... [--json] [--timeout-ms N] [--retries N]`.
    #[command(external_subcommand)]
    Plugin(Vec<String>),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_env("BZHEAD_LOG").unwrap_or_else(|_| EnvFilter::new("warn")))
        .with_writer(io::stderr)
        .init();
    let code = match Cli::parse().cmd {
        Cmd::Observe(a) if a.web.is_some() => cli::web::run(a),
        Cmd::Observe(a) => cli::observe::run(a),
        Cmd::Query { proto: QueryProto::Bzflag(a) } => cli::query_bzflag::run(a),
        Cmd::Query { proto: QueryProto::Plugin(args) } => cli::query::query(args),
        Cmd::Replay(a) => cli::replay::run(a),
        Cmd::Plugins(a) => cli::query::plugins(a),
        Cmd::Scan(a) => cli::query::scan(a),
        Cmd::Monitor(a) => cli::monitor::run(a),
        Cmd::World(a) => cli::world::run(a),
        Cmd::Bot(a) => cli::bot::run(a),
        Cmd::Bzrc(a) => cli::bzrc::run(a),
    };
    ExitCode::from(code)
}
