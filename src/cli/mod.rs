//! The command line: one module per command, each parsing its own arguments and returning the exit code.
//! `main.rs` only parses, sets up logging and dispatches to these.
//!
//! * [`observe`]: `observe` (and, with `--web`, [`web`]); [`replay`]: `replay`.
//! * [`query_bzflag`]: `query bzflag`; [`query`]: `query PROTOCOL`, `plugins` and `scan`.
//! * [`world`]: `world`; [`monitor`]: `monitor`; [`bot`]: `bot`; [`bzrc`]: `bzrc`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use bzhead::cache::WorldCache;

pub mod bot;
pub mod bzrc;
pub mod monitor;
pub mod observe;
pub mod query;
pub mod query_bzflag;
pub mod replay;
pub mod web;
pub mod world;

/// Exit codes of the game commands (documented in the README and `--help`; `query PROTOCOL` and `scan` have
/// their own, [`query::QUERY_EXIT_CODES`]), with `exit::of`, the code of a session's end (`SessionEnd`). They are
/// the library's [`bzhead::observer::exit`], which the `closed` JSON line and the Python package give too.
pub use bzhead::observer::exit;

/// The exit codes, for `--help`.
pub const EXIT_CODES: &str = "Exit codes: 0 clean leave, 2 usage, 3 cannot connect, 4 rejected, \
5 kicked or superkilled, 6 protocol error (including a server that closes or stops answering).";

/// Resolves HOST[:PORT] (IPv4 first), saying why not on stderr: `Err` is the exit code.
pub fn resolve_or_exit(server: &str, default_port: u16) -> Result<SocketAddr, u8> {
    bzhead::reactor::resolve(server, default_port).map_err(|e| {
        eprintln!("bzhead: {e}");
        exit::CONNECT
    })
}

/// The `--show` and `--hide` filter of the printed events, or the reason on stderr: `Err` is the exit code.
pub fn event_filter(show: &[String], hide: &[String]) -> Result<bzhead::observer::Filter, u8> {
    bzhead::observer::Filter::new(show, hide).map_err(|e| {
        eprintln!("bzhead: {e}");
        exit::USAGE
    })
}

/// A new event loop, or the reason on stderr: `Err` is the exit code.
pub fn new_reactor() -> Result<bzhead::reactor::Reactor, u8> {
    new_reactor_at(1.0)
}

/// A new event loop whose clock runs `time_scale` times as fast as real time (`--time-scale K` of `bot` and
/// `observe`), or the reason on stderr: `Err` is the exit code (usage for a scale out of range).
pub fn new_reactor_at(time_scale: f64) -> Result<bzhead::reactor::Reactor, u8> {
    let options = bzhead::reactor::ReactorOptions { time_scale };
    bzhead::reactor::Reactor::with_options(options).map_err(|e| {
        eprintln!("bzhead: cannot start the event loop: {e}");
        if e.kind() == std::io::ErrorKind::InvalidInput {
            exit::USAGE
        } else {
            exit::PROTOCOL
        }
    })
}

/// The value parser of `--time-scale K` (`bot`, `observe`): the reactor's clock's range,
/// [`bzhead::reactor::TIME_SCALE_RANGE`] (1/64 to 64).
pub fn time_scale_arg() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    let range = bzhead::reactor::TIME_SCALE_RANGE;
    bzhead::args::float(*range.start(), *range.end())
}

/// Seconds from the command line as a duration (negative, NaN or huge values are clamped).
pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.clamp(0.0, 86_400.0) } else { 86_400.0 })
}

/// The world cache of `--no-cache`, `--cache-dir` and the cache size in MiB (`None`: the cache's default).
pub fn world_cache(no_cache: bool, dir: Option<PathBuf>, max_mib: Option<u64>) -> Option<WorldCache> {
    if no_cache {
        return None;
    }
    let cache = dir.map(WorldCache::new).or_else(|| WorldCache::default_dir().map(WorldCache::new))?;
    Some(match max_mib {
        Some(mib) => cache.with_max_bytes(mib.saturating_mul(1 << 20)),
        None => cache,
    })
}

/// Ctrl-C, SIGTERM and SIGHUP: each sends its number on the returned channel and wakes the reactor through `waker`,
/// so the command can leave cleanly (MsgExit) instead of dropping its connections; a second signal exits at once
/// with 128 + its number. Without signal handling (it cannot be set up), the channel stays silent.
pub fn leave_on_signals(waker: std::sync::Arc<mio::Waker>) -> std::sync::mpsc::Receiver<i32> {
    let (tx, rx) = std::sync::mpsc::channel::<i32>();
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]) {
        std::thread::spawn(move || {
            let mut seen = 0;
            for sig in signals.forever() {
                seen += 1;
                if seen > 1 {
                    std::process::exit(128 + sig);
                }
                let _ = tx.send(sig);
                let _ = waker.wake();
            }
        });
    }
    rx
}
