//! `bzhead.query(...)`, `bzhead.scan(...)` and `bzhead.plugins()`: the crate's scan on a reactor of its own, with
//! results as dicts in the shared result shape (the crate's `QueryResult::write_json`, the bytes of
//! `bzhead query --json` and `bzhead scan --json` lines).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use bzhead::query::loader::{PluginSet, ProtocolKind};
use bzhead::query::targets::resolve;
use bzhead::query::{Scan, ScanConfig, ScanEvent, Target, BZFLAG, BZFLAG_PORT};
use bzhead::reactor::Reactor;

use crate::json::loads;
use crate::Unlocked;

/// The plugins, found as the CLI finds them: the files of `plugin_dirs`, `$BZHEAD_PLUGIN_PATH`, the user's and the
/// system's plugin directories and beside the executable, then the protocols built into the library (every
/// bundled game, so a pip-installed package queries them all with no file).
fn plugin_set(plugin_dirs: &[PathBuf]) -> PluginSet {
    PluginSet::load_standard(&bzhead::query::loader::plugin_dirs(plugin_dirs))
}

fn random_seed() -> u64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.write_u32(std::process::id());
    h.finish()
}

fn default_port(set: &PluginSet, protocol: &str) -> PyResult<u16> {
    if protocol == BZFLAG {
        return Ok(BZFLAG_PORT);
    }
    match set.protocol(protocol) {
        Some(d) => Ok(d.default_port),
        None => {
            let mut known = vec![BZFLAG.to_owned()];
            known.extend(set.protocol_names().into_iter().map(|s| s.to_string()));
            let mut msg = format!("unknown protocol {protocol:?}; known: {}", known.join(", "));
            for e in set.errors() {
                msg += &format!("\n  not loaded: {e}");
            }
            Err(PyValueError::new_err(msg))
        }
    }
}

fn params_of(params: Option<Vec<(String, String)>>) -> Vec<(String, String)> {
    params.unwrap_or_default()
}

fn timeout_of(timeout: f64) -> PyResult<Duration> {
    if timeout.is_finite() && timeout > 0.0 && timeout <= 600.0 {
        Ok(Duration::from_secs_f64(timeout))
    } else {
        Err(PyValueError::new_err("timeout must be between 0 and 600 seconds"))
    }
}

/// Runs a scan on a fresh reactor until every query finished; returns the results' JSON lines in input order.
/// Checks Python's signals between turns (Ctrl-C raises KeyboardInterrupt).
fn run_scan(py: Python<'_>, set: PluginSet, cfg: ScanConfig, targets: Vec<Target>) -> PyResult<Vec<Py<PyAny>>> {
    let mut reactor = Reactor::new().map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
    let now = Instant::now();
    let mut scan = Scan::new(set, cfg, now);
    scan.reserve(targets.len());
    for t in targets {
        let _ = scan.add_target(now, t); // duplicates are counted and skipped
    }
    let id = reactor.add_scan(scan);
    let mut results: Vec<(usize, String)> = Vec::new();
    let mut line = Vec::new();
    loop {
        while let Some((sid, _, ev)) = reactor.poll_scan_event() {
            let ScanEvent::Result(r) = ev;
            line.clear();
            r.write_json(&mut line);
            results.push((r.index, String::from_utf8_lossy(&line).into_owned()));
            reactor.recycle_scan_result(sid, r);
        }
        if reactor.is_scan_done(id) {
            break;
        }
        Unlocked(&mut reactor)
            .run(py, |r| r.turn(Some(Duration::from_millis(50))))
            .map_err(|e| PyOSError::new_err(format!("event loop failed: {e}")))?;
        py.check_signals()?;
    }
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, l)| Ok(loads(py, &l)?.unbind())).collect()
}

/// Queries one server; returns its result dict.
#[pyfunction]
#[pyo3(signature = (protocol, address, timeout = 1.0, *, retries = 2, params = None, plugin_dirs = Vec::new()))]
#[allow(clippy::too_many_arguments)]
pub fn query(
    py: Python<'_>,
    protocol: &str,
    address: &str,
    timeout: f64,
    retries: u32,
    params: Option<Vec<(String, String)>>,
    plugin_dirs: Vec<PathBuf>,
) -> PyResult<Py<PyAny>> {
    let set = plugin_set(&plugin_dirs);
    let port = default_port(&set, protocol)?;
    let addr = resolve(address, port).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let cfg = ScanConfig {
        timeout: timeout_of(timeout)?,
        retries: retries.min(16),
        seed: random_seed(),
        params: params_of(params),
        pace: Duration::ZERO,
        ..ScanConfig::default()
    };
    let mut results = run_scan(py, set, cfg, vec![Target { params: Vec::new(), ..Target::new(protocol, addr) }])?;
    results.pop().ok_or_else(|| PyOSError::new_err("the scan ended without a result"))
}

/// Queries many servers at once (a list, or a master's list); returns every result dict, in input order.
#[pyfunction]
#[pyo3(signature = (addresses = None, *, protocol, master = None, master_protocol = "dpmaster", game = None, game_protocol = None, filters = None, rate = 1000, concurrency = 1000, timeout = 1.0, retries = 2, params = None, plugin_dirs = Vec::new()))]
#[allow(clippy::too_many_arguments)]
pub fn scan(
    py: Python<'_>,
    addresses: Option<Vec<String>>,
    protocol: &str,
    master: Option<&str>,
    master_protocol: &str,
    game: Option<String>,
    game_protocol: Option<String>,
    filters: Option<String>,
    rate: u32,
    concurrency: usize,
    timeout: f64,
    retries: u32,
    params: Option<Vec<(String, String)>>,
    plugin_dirs: Vec<PathBuf>,
) -> PyResult<Vec<Py<PyAny>>> {
    if addresses.is_none() && master.is_none() {
        return Err(PyValueError::new_err("scan needs addresses or master="));
    }
    let set = plugin_set(&plugin_dirs);
    let port = default_port(&set, protocol)?;
    if set.protocol(protocol).is_some_and(|d| d.kind == ProtocolKind::Master) {
        return Err(PyValueError::new_err(format!("{protocol} is a master protocol; use it as master_protocol")));
    }
    let mut targets = Vec::new();
    if let Some(m) = master {
        let mport = default_port(&set, master_protocol)?;
        if set.protocol(master_protocol).is_none_or(|d| d.kind != ProtocolKind::Master) {
            return Err(PyValueError::new_err(format!("{master_protocol} is not a master protocol")));
        }
        let addr = resolve(m, mport).map_err(|e| PyValueError::new_err(format!("master {e}")))?;
        let mut mparams = Vec::new();
        for (k, v) in [("game", game), ("game_protocol", game_protocol), ("filters", filters)] {
            if let Some(v) = v {
                mparams.push((k.to_owned(), v));
            }
        }
        targets.push(Target {
            protocol: master_protocol.to_owned(),
            addr,
            params: mparams,
            expand: Some((protocol.to_owned(), Vec::new())),
        });
    }
    for a in addresses.unwrap_or_default() {
        let addr = resolve(&a, port).map_err(|e| PyValueError::new_err(e.to_string()))?;
        targets.push(Target::new(protocol, addr));
    }
    let rate = rate.max(1);
    let cfg = ScanConfig {
        rate,
        burst: (rate / 20).clamp(1, 1000),
        concurrency: concurrency.max(1),
        timeout: timeout_of(timeout)?,
        retries: retries.min(16),
        seed: random_seed(),
        params: params_of(params),
        ..ScanConfig::default()
    };
    run_scan(py, set, cfg, targets)
}

/// The protocols available: bzflag (built in) and every plugin's, with where each came from.
#[pyfunction]
#[pyo3(signature = (plugin_dirs = Vec::new()))]
pub fn protocols(py: Python<'_>, plugin_dirs: Vec<PathBuf>) -> PyResult<Vec<Py<PyAny>>> {
    let set = plugin_set(&plugin_dirs);
    let mut out = Vec::new();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("name", BZFLAG)?;
    d.set_item("kind", "server")?;
    d.set_item("default_port", BZFLAG_PORT)?;
    d.set_item("plugin", py.None())?;
    d.set_item("origin", "built in (bzhead)")?;
    out.push(d.into_any().unbind());
    for p in set.plugins() {
        for proto in p.protocols() {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("name", &proto.name)?;
            d.set_item("kind", if proto.kind == ProtocolKind::Master { "master" } else { "server" })?;
            d.set_item("default_port", proto.default_port)?;
            d.set_item("plugin", p.name())?;
            d.set_item("origin", p.origin().to_string())?;
            out.push(d.into_any().unbind());
        }
    }
    Ok(out)
}
