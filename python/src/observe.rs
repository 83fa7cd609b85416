//! `bzhead.observe(...)`: an iterator over one observer session's events, as dicts in the shape of
//! `bzhead observe --json` lines (made by the crate's `observer::json_line`).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use bzhead::bzflag::consts::{player, PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::session::SessionConfig;
use bzhead::cache::WorldCache;
use bzhead::observer::{json_line, Filter};
use bzhead::reactor::{Reactor, SessionId, SessionOptions};

use crate::json::loads;
use crate::Unlocked;

/// How long a leave (after `seconds`, Ctrl-C or `close()`) may take before the session is dropped.
const LEAVE_WAIT: Duration = Duration::from_secs(3);

struct Inner {
    reactor: Reactor,
    id: SessionId,
    start: Instant,
    deadline: Option<Instant>,
    leave_by: Option<Instant>,
    filter: Filter,
    ready: VecDeque<String>,
    finished: bool,
}

/// An observer session; iterate over it for its events. See the stubs. `unsendable`: the reactor may hold plugin
/// instances that must stay on one thread, so PyO3 keeps the observer on the thread that made it.
#[pyclass(name = "Observer", module = "bzhead", unsendable)]
pub struct PyObserver {
    inner: Inner,
}

impl Inner {
    fn leave(&mut self) {
        if self.leave_by.is_none() {
            self.reactor.leave(self.id);
            self.leave_by = Some(Instant::now() + LEAVE_WAIT);
        }
    }

    /// Turns the reactor until a line is ready or the session is over.
    fn next_line(&mut self, py: Python<'_>) -> PyResult<Option<String>> {
        loop {
            if let Some(l) = self.ready.pop_front() {
                return Ok(Some(l));
            }
            if self.finished {
                return Ok(None);
            }
            let now = Instant::now();
            if self.deadline.is_some_and(|d| now >= d) {
                self.leave();
            }
            if self.leave_by.is_some_and(|d| now >= d) || self.reactor.is_done(self.id) {
                self.finished = true;
                continue;
            }
            let mut wait = Duration::from_millis(100);
            for d in [self.deadline, self.leave_by].into_iter().flatten() {
                wait = wait.min(d.saturating_duration_since(now));
            }
            Unlocked(&mut self.reactor)
                .run(py, |r| r.turn(Some(wait)))
                .map_err(|e| PyOSError::new_err(format!("the event loop failed: {e}")))?;
            while let Some((_, at, ev)) = self.reactor.poll_event() {
                if self.filter.allows(&ev) {
                    self.ready.push_back(json_line(at.saturating_duration_since(self.start), &ev));
                }
            }
            if let Err(e) = py.check_signals() {
                // Ctrl-C: leave cleanly (a second one ends the wait), then raise.
                self.leave();
                while !self.reactor.is_done(self.id) && self.leave_by.is_some_and(|d| Instant::now() < d) {
                    let turned = Unlocked(&mut self.reactor).run(py, |r| r.turn(Some(Duration::from_millis(100))));
                    if turned.is_err() || py.check_signals().is_err() {
                        break;
                    }
                }
                self.finished = true;
                self.ready.clear();
                return Err(e);
            }
        }
    }
}

/// Joins `server` as an observer and returns the iterator of its events.
#[pyfunction]
#[pyo3(signature = (server, seconds = None, *, callsign = "bzhead", motto = "bzhead observer", show = Vec::new(), hide = Vec::new(), udp = true, world = true, cache = true, cache_dir = None, idle_timeout = 30.0))]
#[allow(clippy::too_many_arguments)]
pub fn observe(
    server: &str,
    seconds: Option<f64>,
    callsign: &str,
    motto: &str,
    show: Vec<String>,
    hide: Vec<String>,
    udp: bool,
    world: bool,
    cache: bool,
    cache_dir: Option<PathBuf>,
    idle_timeout: Option<f64>,
) -> PyResult<PyObserver> {
    let filter = Filter::new(&show, &hide).map_err(PyValueError::new_err)?;
    let addr = bzhead::reactor::resolve(server, DEFAULT_PORT).map_err(PyValueError::new_err)?;
    if callsign.is_empty() || callsign.len() > 31 {
        return Err(PyValueError::new_err("a callsign has 1 to 31 bytes"));
    }
    let secs = |name: &str, s: f64| -> PyResult<Duration> {
        if s.is_finite() && (0.0..1.0e9).contains(&s) {
            Ok(Duration::from_secs_f64(s))
        } else {
            Err(PyValueError::new_err(format!("{name} must be a finite number of seconds >= 0")))
        }
    };
    let run_for = seconds.map(|s| secs("seconds", s)).transpose()?;
    let idle = idle_timeout.filter(|s| *s > 0.0).map(|s| secs("idle_timeout", s)).transpose()?;
    let config = SessionConfig {
        callsign: callsign.to_owned(),
        motto: motto.to_owned(),
        team: Team::Observer,
        player_type: PlayerType::Tank,
        udp,
        full_join: world,
        idle_timeout: idle,
        ..SessionConfig::default()
    };
    let cache = if cache {
        cache_dir.map(WorldCache::new).or_else(|| WorldCache::default_dir().map(WorldCache::new))
    } else {
        None
    };
    let mut reactor = Reactor::new().map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
    let id = reactor
        .add_session(addr, config, SessionOptions { record: None, cache, ..SessionOptions::default() })
        .map_err(|e| PyOSError::new_err(format!("cannot connect to {addr}: {e}")))?;
    let start = reactor.started(id).unwrap_or_else(Instant::now);
    Ok(PyObserver {
        inner: Inner {
            reactor,
            id,
            start,
            deadline: run_for.map(|d| start + d),
            leave_by: None,
            filter,
            ready: VecDeque::new(),
            finished: false,
        },
    })
}

#[pymethods]
impl PyObserver {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.inner.next_line(py)? {
            Some(line) => Ok(Some(loads(py, &line)?.unbind())),
            None => Ok(None),
        }
    }

    /// Says `text` to everybody (or to one player id).
    #[pyo3(signature = (text, to = None))]
    fn say(&mut self, text: &str, to: Option<u8>) -> PyResult<()> {
        let inner = &mut self.inner;
        inner.reactor.send_chat(inner.id, to.unwrap_or(player::ALL_PLAYERS), text);
        Ok(())
    }

    /// Leaves the game cleanly; iteration then ends after the last events.
    fn close(&mut self) -> PyResult<()> {
        self.inner.leave();
        Ok(())
    }

    /// How the session ended (None while it runs): an exit code as `bzhead observe` returns it.
    #[getter]
    fn exit_code(&self) -> PyResult<Option<i32>> {
        let inner = &self.inner;
        Ok(inner.reactor.session(inner.id).and_then(|s| s.end()).map(|e| i32::from(bzhead::observer::exit::of(e))))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.leave();
        while self.inner.next_line(py)?.is_some() {}
        Ok(false)
    }
}
