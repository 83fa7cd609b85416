//! `bzhead.query(...)`, `bzhead.scan(...)` and `bzhead.plugins()`: the crate's scan on a reactor of its own, with
//! results as dicts in the shared result shape (the crate's `QueryResult::write_json`, the bytes of
//! `bzhead query --json` and `bzhead scan --json` lines).

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use bzhead::query::front::{self, MasterSpec};
use bzhead::query::loader::{PluginSet, ProtocolKind};
use bzhead::query::{FrontError, ScanConfig, Target, BZFLAG, BZFLAG_PORT};
use bzhead::reactor::Reactor;

use crate::json::loads;
use crate::Unlocked;

/// The plugins, found as the CLI finds them: the files of `plugin_dirs`, `$BZHEAD_PLUGIN_PATH`, the user's and the
/// system's plugin directories and beside the executable, then the protocols built into the library (every
/// bundled game, so a pip-installed package queries them all with no file).
fn plugin_set(plugin_dirs: &[PathBuf]) -> PluginSet {
    PluginSet::load_standard(&bzhead::query::loader::plugin_dirs(plugin_dirs))
}

/// A front-door error (unknown protocol, bad address, ...) as a `ValueError`.
fn value_error(e: FrontError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn timeout_of(timeout: f64) -> PyResult<Duration> {
    if timeout.is_finite() && timeout > 0.0 && timeout <= 600.0 {
        Ok(Duration::from_secs_f64(timeout))
    } else {
        Err(PyValueError::new_err("timeout must be between 0 and 600 seconds"))
    }
}

/// Runs a scan on a fresh reactor with the library's driver until every query finished; returns the results in
/// input order (one per distinct protocol and address). The GIL is released while the loop waits; Python's
/// signals are checked between turns (Ctrl-C raises KeyboardInterrupt).
fn run_scan(py: Python<'_>, set: PluginSet, cfg: ScanConfig, targets: &[Target]) -> PyResult<Vec<Py<PyAny>>> {
    let mut reactor = Reactor::new().map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
    let mut results: Vec<(usize, Vec<u8>)> = Vec::new();
    let on = |t: front::Tick<'_>| {
        if let front::Tick::Result(r) = t {
            let mut line = Vec::new();
            r.write_json(&mut line);
            results.push((r.index, line));
        }
    };
    front::run(&mut reactor, set, cfg, targets, on, |r| {
        Unlocked(r)
            .run(py, |r| r.turn(Some(Duration::from_millis(50))))
            .map_err(|e| PyOSError::new_err(format!("event loop failed: {e}")))?;
        py.check_signals()
    })?;
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, l)| Ok(loads(py, &String::from_utf8_lossy(&l))?.unbind())).collect()
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
    let target = front::server_target(&set, protocol, address).map_err(value_error)?;
    let cfg = ScanConfig::front(timeout_of(timeout)?, retries, params.unwrap_or_default()).unpaced();
    let mut results = run_scan(py, set, cfg, &[target])?;
    results.pop().ok_or_else(|| PyOSError::new_err("the scan ended without a result"))
}

/// Queries many servers at once (a list, or a master's list); returns every result dict, in input order, one per
/// distinct (protocol, address): a duplicate is queried once.
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
    let port = front::server_port(&set, protocol).map_err(value_error)?;
    let mut targets = Vec::new();
    if let Some(m) = master {
        let spec = MasterSpec {
            protocol: master_protocol.to_owned(),
            address: m.to_owned(),
            servers: protocol.to_owned(),
            game,
            game_protocol,
            filters,
        };
        targets.push(front::master_target(&set, &spec).map_err(value_error)?);
    }
    for a in addresses.unwrap_or_default() {
        let addr = bzhead::query::targets::resolve(&a, port).map_err(|e| PyValueError::new_err(e.to_string()))?;
        targets.push(Target::new(protocol, addr));
    }
    let cfg = ScanConfig {
        concurrency: concurrency.max(1),
        ..ScanConfig::front(timeout_of(timeout)?, retries, params.unwrap_or_default()).at_rate(rate)
    };
    run_scan(py, set, cfg, &targets)
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
