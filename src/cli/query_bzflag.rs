//! `bzhead query bzflag SERVER`: a BZFlag server's game style, options, limits, teams and players, asked with a
//! query-only session (what `bzfquery` prints), or with `--json` one result in the shape every protocol shares.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use bzhead::bzflag::consts::DEFAULT_PORT;
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::SessionConfig;
use bzhead::reactor::SessionOptions;
use bzhead::text::for_terminal;

use super::exit;

/// Arguments of `bzhead query bzflag`.
#[derive(clap::Args)]
pub struct BzflagArgs {
    /// Server, HOST[:PORT] (port 5154 by default).
    server: String,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Give up after this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5000, value_parser = bzhead::args::int(1u64, 600_000))]
    timeout_ms: u64,
}

/// Runs the command; returns the exit code.
pub fn run(a: BzflagArgs) -> u8 {
    let BzflagArgs { server, json, timeout_ms } = a;
    let addr = match super::resolve_or_exit(&server, DEFAULT_PORT) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let config = SessionConfig {
        query_only: true,
        hello_timeout: Duration::from_millis(timeout_ms),
        join_timeout: Duration::from_millis(timeout_ms),
        ..SessionConfig::default()
    };
    let mut reactor = match super::new_reactor() {
        Ok(r) => r,
        Err(code) => return code,
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
            Event::Closed { reason } => code = exit::of(&reason),
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
    let mut out = io::stdout().lock();
    if json {
        // The same writer as every protocol's results (`scan --json`).
        let mut line = Vec::new();
        bzhead::query::bzflag::result(addr, &game, &teams, &players, elapsed).write_json(&mut line);
        line.push(b'\n');
        let _ = out.write_all(&line);
    } else {
        let _ = write!(out, "{}", bzhead::bzflag::server_info::to_text(&game, &teams, &players));
    }
    exit::OK
}
