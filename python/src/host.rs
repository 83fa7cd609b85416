//! `BotHost`: Python bots on the crate's [`BotHost`], driven by a loop that checks Python's signals.
//!
//! Each Python bot is wrapped in a [`PyBot`], a Rust [`Bot`] whose tick lends the tick's view and control to the
//! bot's Python `View` and `Control` objects and calls its `tick(view, control)`. An exception in `tick` (or in
//! `on_event`) is recorded with its traceback; the run loop then reports it as an `error` event for that bot and
//! makes the bot leave, while the other bots play on, and prints the exception with its traceback to `sys.stderr`
//! (or, with `run(raise_errors=True)`, raises it from `run`). `KeyboardInterrupt` and `SystemExit` raised in a tick
//! are not a bot's fault: the loop makes every bot leave cleanly and raises them from `run`.
//!
//! The host is a `#[pyclass(unsendable)]`: PyO3 keeps it on the thread that made it (and never drops it on
//! another). The loop runs with the GIL released ([`Unlocked`]); each Python bot's tick takes it back with
//! `Python::with_gil`.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PySystemExit, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use bzhead::bot::{brains, Bot, BotConfig, BotHost, BotId, BotState, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::consts::{PlayerType, Team, DEFAULT_PORT};
use bzhead::observer::{format_t, json_line, Filter};

use crate::json::loads;
use crate::view::{PyControl, PyView};
use crate::Unlocked;

/// Host events kept for `events()` (older ones are dropped beyond this; `dropped_events` counts them).
const MAX_EVENTS: usize = 100_000;
/// How long `close()` and a Ctrl-C wait for the bots to leave.
const LEAVE_WAIT: Duration = Duration::from_secs(3);

/// A Python exception of one bot, waiting for the run loop.
struct Failure {
    /// The bot's index in the host's entries.
    index: usize,
    err: PyErr,
}

/// What the bots' ticks report to the run loop.
#[derive(Default)]
struct Reports {
    failures: Vec<Failure>,
    /// A `KeyboardInterrupt` or `SystemExit` raised inside a tick.
    interrupt: Option<PyErr>,
}

/// A Python bot as a Rust [`Bot`].
struct PyBot {
    /// Its index in the host's entries.
    index: usize,
    tick: Py<PyAny>,
    view: Py<PyView>,
    control: Py<PyControl>,
    failed: bool,
    reports: Rc<RefCell<Reports>>,
}

/// The text of a Python exception: its traceback and `Type: message`.
fn describe(py: Python<'_>, e: &PyErr) -> (String, String) {
    let error = e.to_string();
    let tb = e.traceback(py).and_then(|t| t.format().ok()).unwrap_or_default();
    (error.clone(), format!("{tb}{error}"))
}

impl PyBot {
    fn fail(&mut self, py: Python<'_>, e: PyErr) {
        if e.is_instance_of::<PyKeyboardInterrupt>(py) || e.is_instance_of::<PySystemExit>(py) {
            self.reports.borrow_mut().interrupt.get_or_insert(e);
            return;
        }
        self.failed = true;
        self.reports.borrow_mut().failures.push(Failure { index: self.index, err: e });
    }
}

impl Bot for PyBot {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        if self.failed {
            return;
        }
        Python::with_gil(|py| {
            let result = {
                let (v, c) = (self.view.get(), self.control.get());
                let _view = v.lend(view);
                let _control = c.lend(control);
                self.tick.call1(py, (self.view.clone_ref(py), self.control.clone_ref(py)))
            };
            if let Err(e) = result {
                self.fail(py, e);
            }
        });
    }
}

/// One bot of the host, as the run loop knows it.
struct Entry {
    id: BotId,
    /// The Python bot (None for a built-in one).
    obj: Option<Py<PyAny>>,
    server: String,
    failed: bool,
}

/// The host's state (only touched on the thread that made it).
struct Inner {
    host: BotHost,
    entries: Vec<Entry>,
    by_id: HashMap<BotId, usize>,
    events: VecDeque<Py<PyAny>>,
    dropped: u64,
    filter: Option<Filter>,
    reports: Rc<RefCell<Reports>>,
    start: Instant,
}

/// Bots on one reactor. See the stubs (`bzhead/__init__.pyi`) for the Python documentation.
#[pyclass(name = "BotHost", module = "bzhead", unsendable)]
pub struct PyBotHost {
    inner: Inner,
}

fn team_of(s: &str) -> PyResult<Team> {
    match Team::parse(s) {
        Some(t @ (Team::Automatic | Team::Rogue | Team::Red | Team::Green | Team::Blue | Team::Purple)) => Ok(t),
        _ => Err(PyValueError::new_err(format!("unknown team {s:?}; teams: auto, rogue, red, green, blue, purple"))),
    }
}

fn seconds(name: &str, s: f64) -> PyResult<Duration> {
    if (0.0..1.0e9).contains(&s) {
        Ok(Duration::from_secs_f64(s))
    } else {
        Err(PyValueError::new_err(format!("{name} must be a finite number of seconds >= 0")))
    }
}

impl Inner {
    fn push_event(&mut self, ev: Py<PyAny>) {
        if self.events.len() >= MAX_EVENTS {
            self.events.pop_front();
            self.dropped += 1;
        }
        self.events.push_back(ev);
    }

    /// A bot event as the dict of a `bzhead bot --json` line: `v`, `t`, `type`, `bot`, then the event's own fields
    /// (`body`, a JSON object), then `bot_id` and `server`. Built as a dict, not by editing JSON text.
    fn bot_event_dict<'py>(&self, py: Python<'py>, at: Instant, k: usize, body: &str) -> PyResult<Bound<'py, PyAny>> {
        let e = &self.entries[k];
        let callsign = self.host.status(e.id).map(|s| s.callsign).unwrap_or_default();
        // The number the line's `t` is (milliseconds, as `format_t` writes it).
        let t = format_t(at.saturating_duration_since(self.start)).parse::<f64>().unwrap_or(0.0);
        let d = PyDict::new(py);
        d.set_item("v", 1)?;
        d.set_item("t", t)?;
        d.set_item("type", "bot")?;
        d.set_item("bot", callsign)?;
        if let Ok(fields) = loads(py, body)?.downcast::<PyDict>() {
            d.update(fields.as_mapping())?;
        }
        d.set_item("bot_id", e.id.0)?;
        d.set_item("server", &e.server)?;
        Ok(d.into_any())
    }

    /// Hands a bot event to its bot's `on_event` (an exception there stops the bot like one in `tick`).
    fn tell_bot(&mut self, py: Python<'_>, k: usize, ev: &Bound<'_, PyAny>) {
        if self.entries[k].failed {
            return;
        }
        let Some(obj) = self.entries[k].obj.as_ref().map(|o| o.bind(py).clone()) else { return };
        if let Ok(f) = obj.getattr(pyo3::intern!(py, "on_event")) {
            if let Err(e) = f.call1((ev,)) {
                if e.is_instance_of::<PyKeyboardInterrupt>(py) || e.is_instance_of::<PySystemExit>(py) {
                    self.reports.borrow_mut().interrupt.get_or_insert(e);
                } else {
                    self.reports.borrow_mut().failures.push(Failure { index: k, err: e });
                }
            }
        }
    }

    /// After a turn: the host's events as dicts (to the queue and each bot's `on_event`), then the bots whose
    /// Python code failed: each leaves, its exception is an `error` event and is printed with its traceback to
    /// `sys.stderr`, or (`raise_errors`) the first one is returned instead, for `run` to raise.
    fn after_turn(&mut self, py: Python<'_>, raise_errors: bool) -> PyResult<Option<PyErr>> {
        while let Some(ev) = self.host.poll_event() {
            match ev {
                HostEvent::Game { server, at, event } => {
                    if !self.filter.as_ref().is_some_and(|f| f.allows(&event)) {
                        continue;
                    }
                    let line = json_line(at.saturating_duration_since(self.start), &event);
                    let d = loads(py, &line)?;
                    if let (Ok(dict), Some(addr)) = (d.downcast::<PyDict>(), self.host.server_addr(server)) {
                        dict.set_item("server", addr.to_string())?;
                    }
                    self.push_event(d.unbind());
                }
                HostEvent::Bot { bot, at, event } => {
                    let Some(&k) = self.by_id.get(&bot) else { continue };
                    let body = serde_json::to_string(&event).unwrap_or_else(|_| "{}".into());
                    let d = self.bot_event_dict(py, at, k, &body)?;
                    self.tell_bot(py, k, &d);
                    self.push_event(d.unbind());
                }
                HostEvent::Session { .. } => {}
            }
        }
        let failures = std::mem::take(&mut self.reports.borrow_mut().failures);
        let mut raised = None;
        for f in failures {
            let k = f.index;
            let Some(e) = self.entries.get_mut(k) else { continue };
            if e.failed {
                continue; // reported already
            }
            e.failed = true;
            let id = e.id;
            let (error, traceback) = describe(py, &f.err);
            let body = serde_json::json!({"bot_event": "error", "error": error, "traceback": traceback});
            let d = self.bot_event_dict(py, Instant::now(), k, &body.to_string())?;
            self.push_event(d.unbind());
            self.host.leave_bot(id);
            if raise_errors && raised.is_none() {
                raised = Some(f.err);
            } else {
                // As Python reports an exception it cannot raise (a thread's, an asyncio task's).
                let callsign = self.host.status(id).map(|s| s.callsign).unwrap_or_default();
                let note = format!("bzhead: bot {callsign:?} (id {}) raised an exception and leaves the game:\n", id.0);
                py.import("sys")?.getattr("stderr")?.call_method1("write", (note,))?;
                f.err.display(py);
            }
        }
        Ok(raised)
    }

    /// One turn of the host with the GIL released while it waits; the bots' ticks take it back (once per turn).
    fn turn(&mut self, py: Python<'_>, wait: Duration) -> std::io::Result<()> {
        // Only the host is touched here; a Python bot's tick takes the GIL back for its call (`Python::with_gil`).
        Unlocked(&mut self.host).run(py, move |host| host.turn(Some(wait)))
    }

    /// Every bot has left or stopped (true with no bots: `run()` then has nothing to wait for).
    fn all_done(&self) -> bool {
        self.entries.iter().all(|e| {
            matches!(self.host.status(e.id).map(|s| s.state), Some(BotState::Left | BotState::Stopped(_)) | None)
        }) && self.host.is_done()
    }

    /// Every bot leaves; waits up to `LEAVE_WAIT` for them. A second Ctrl-C ends the wait.
    fn leave_all(&mut self, py: Python<'_>) -> PyResult<()> {
        self.host.leave_all();
        let end = Instant::now() + LEAVE_WAIT;
        while !self.host.is_done() {
            let now = Instant::now();
            if now >= end {
                break;
            }
            let wait = (end - now).min(Duration::from_millis(100));
            self.turn(py, wait).map_err(os_error)?;
            self.after_turn(py, false)?;
            py.check_signals()?;
        }
        Ok(())
    }
}

fn os_error(e: std::io::Error) -> PyErr {
    PyOSError::new_err(format!("the event loop failed: {e}"))
}

#[pymethods]
impl PyBotHost {
    /// A host with its own event loop. See the stubs for the arguments.
    #[new]
    #[pyo3(signature = (*, tick_hz = 30.0, join_stagger = 0.2, game_events = true, show = Vec::new(), hide = Vec::new(), reconnect = true, yield_slots = None, shared_eye = true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        tick_hz: f64,
        join_stagger: f64,
        game_events: bool,
        show: Vec<String>,
        hide: Vec<String>,
        reconnect: bool,
        yield_slots: Option<u16>,
        shared_eye: bool,
    ) -> PyResult<Self> {
        if !(tick_hz.is_finite() && (1.0..=240.0).contains(&tick_hz)) {
            return Err(PyValueError::new_err("tick_hz must be between 1 and 240"));
        }
        let filter = if game_events { Some(Filter::new(&show, &hide).map_err(PyValueError::new_err)?) } else { None };
        let config = HostConfig {
            tick: Duration::from_secs_f64(1.0 / tick_hz),
            join_stagger: seconds("join_stagger", join_stagger)?,
            reconnect,
            yield_slots,
            shared_eye,
            ..HostConfig::default()
        };
        let host = BotHost::new(config).map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
        Ok(PyBotHost {
            inner: Inner {
                host,
                entries: Vec::new(),
                by_id: HashMap::new(),
                events: VecDeque::new(),
                dropped: 0,
                filter,
                reports: Rc::new(RefCell::new(Reports::default())),
                start: Instant::now(),
            },
        })
    }

    /// Adds a bot for `server` ("HOST:PORT"): a Python bot (an object with `tick(view, control)`), or the name of
    /// one of the crate's bots ("hunter", "capper", "defender", "sitter"). It connects in its turn. Returns its id.
    #[pyo3(signature = (server, bot, *, callsign = None, team = "auto", kind = "robot", motto = None, udp = false, seed = None))]
    #[allow(clippy::too_many_arguments)]
    fn add_bot(
        &mut self,
        py: Python<'_>,
        server: &str,
        bot: Bound<'_, PyAny>,
        callsign: Option<String>,
        team: &str,
        kind: &str,
        motto: Option<String>,
        udp: bool,
        seed: Option<u64>,
    ) -> PyResult<usize> {
        // A str names one of the crate's own bots; anything else is a Python bot.
        let brain = match bot.downcast::<pyo3::types::PyString>() {
            Ok(name) => {
                let name = name.to_cow()?.to_ascii_lowercase();
                if !brains::KINDS.contains(&name.as_str()) {
                    return Err(PyValueError::new_err(format!(
                        "unknown bot kind {name:?}; the built-in bots: {}",
                        brains::KINDS.join(", ")
                    )));
                }
                Some(name)
            }
            Err(_) => None,
        };
        let tick = match &brain {
            Some(_) => None,
            None => {
                let tick = bot.getattr(pyo3::intern!(py, "tick")).map_err(|_| {
                    PyTypeError::new_err("a bot needs a tick(view, control) method (subclass bzhead.Bot)")
                })?;
                if !tick.is_callable() {
                    return Err(PyTypeError::new_err("the bot's tick is not callable"));
                }
                Some(tick)
            }
        };
        let team = team_of(team)?;
        let player_type = match kind {
            "robot" | "bot" => PlayerType::Computer,
            "tank" => PlayerType::Tank,
            _ => return Err(PyValueError::new_err(format!("unknown kind {kind:?}; kinds: robot, tank"))),
        };
        let addr = bzhead::reactor::resolve(server, DEFAULT_PORT).map_err(PyValueError::new_err)?;
        let inner = &mut self.inner;
        let k = inner.entries.len();
        let callsign = callsign.unwrap_or_else(|| match &brain {
            Some(name) => format!("{name}{}", k + 1),
            None => format!("pybot{}", k + 1),
        });
        if callsign.is_empty() || callsign.len() > 31 {
            return Err(PyValueError::new_err("a callsign has 1 to 31 bytes"));
        }
        let config = BotConfig {
            callsign,
            motto: motto.unwrap_or_else(|| "bzhead Python bot".into()),
            team,
            player_type,
            udp,
            seed: seed.unwrap_or(k as u64 * 7919 + 17),
        };
        let seed = config.seed;
        let boxed: Box<dyn Bot> = match (tick, &brain) {
            (Some(tick), _) => Box::new(PyBot {
                index: k,
                tick: tick.unbind(),
                view: Py::new(py, PyView::new())?,
                control: Py::new(py, PyControl::new())?,
                failed: false,
                reports: Rc::clone(&inner.reports),
            }),
            (None, Some(name)) => brains::by_name(name, seed)
                .ok_or_else(|| PyValueError::new_err(format!("unknown bot kind {name:?}")))?,
            (None, None) => return Err(PyTypeError::new_err("a bot is a bzhead.Bot or the name of a built-in bot")),
        };
        let id = inner.host.add_bot(addr, config, boxed);
        let obj = if brain.is_some() { None } else { Some(bot.unbind()) };
        inner.entries.push(Entry { id, obj, server: addr.to_string(), failed: false });
        inner.by_id.insert(id, k);
        Ok(id.0)
    }

    /// Runs the event loop: for `seconds`, or (None) until every bot has left or stopped. Ctrl-C makes every bot
    /// leave cleanly, then raises KeyboardInterrupt. An exception of a bot's code is printed (with its traceback),
    /// or with `raise_errors` raised from here (its bot leaves; the others stay, for the next `run` or `close`).
    #[pyo3(signature = (seconds = None, *, raise_errors = false))]
    fn run(&mut self, py: Python<'_>, seconds: Option<f64>, raise_errors: bool) -> PyResult<()> {
        let deadline = match seconds {
            Some(s) => Some(Instant::now() + self::seconds("seconds", s)?),
            None => None,
        };
        let inner = &mut self.inner;
        loop {
            let now = Instant::now();
            let mut wait = Duration::from_millis(100);
            if let Some(d) = deadline {
                if now >= d {
                    return Ok(());
                }
                wait = wait.min(d - now);
            }
            // The GIL is released while the loop waits (the bots' ticks take it back).
            match inner.turn(py, wait) {
                Ok(()) => {}
                // A world that cannot be modelled: that server's bots have stopped (their events say why).
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {}
                Err(e) => return Err(os_error(e)),
            }
            if let Some(e) = inner.after_turn(py, raise_errors)? {
                return Err(e);
            }
            let interrupt = inner.reports.borrow_mut().interrupt.take();
            let interrupt = match interrupt {
                Some(e) => Some(e),
                None => py.check_signals().err(),
            };
            if let Some(e) = interrupt {
                // Leave cleanly; a second Ctrl-C during the leave ends it at once.
                let _ = inner.leave_all(py);
                return Err(e);
            }
            if deadline.is_none() && inner.all_done() {
                return Ok(());
            }
        }
    }

    /// Every bot leaves the game cleanly (waits up to 3 s); nothing reconnects. The host cannot run bots again.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.inner.leave_all(py)
    }

    /// Makes one bot leave for good.
    fn leave_bot(&mut self, bot_id: usize) -> PyResult<()> {
        self.inner.host.leave_bot(BotId(bot_id));
        Ok(())
    }

    /// The events since the last call (oldest first), as dicts in the shape of `bzhead bot --json` lines.
    fn events(&mut self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        let _ = py;
        Ok(self.inner.events.drain(..).collect())
    }

    /// Events dropped because `events()` was not called for a long time (more than 100,000 waiting).
    #[getter]
    fn dropped_events(&self) -> PyResult<u64> {
        Ok(self.inner.dropped)
    }

    /// A bot's state and counts, as a dict (None for an unknown id).
    fn status(&self, py: Python<'_>, bot_id: usize) -> PyResult<Option<Py<PyAny>>> {
        let Some(s) = self.inner.host.status(BotId(bot_id)) else { return Ok(None) };
        let d = PyDict::new(py);
        d.set_item("callsign", &s.callsign)?;
        d.set_item("server", s.server.to_string())?;
        d.set_item("id", s.id)?;
        d.set_item("team", s.team.name())?;
        let (state, reason) = match &s.state {
            BotState::Waiting => ("waiting", None),
            BotState::Joining => ("joining", None),
            BotState::Joined => ("joined", None),
            BotState::Yielded => ("yielded", None),
            BotState::Leaving => ("leaving", None),
            BotState::Left => ("left", None),
            BotState::Stopped(r) => ("stopped", Some(r.clone())),
        };
        d.set_item("state", state)?;
        d.set_item("reason", reason)?;
        let failed = self.inner.by_id.get(&BotId(bot_id)).is_some_and(|&k| self.inner.entries[k].failed);
        d.set_item("failed", failed)?;
        let st = s.stats;
        for (k, v) in [
            ("spawns", st.spawns),
            ("shots", st.shots),
            ("kills", st.kills),
            ("deaths", st.deaths),
            ("hits_taken", st.hits_taken),
            ("grabs", st.grabs),
            ("captures", st.captures),
            ("updates", st.updates),
        ] {
            d.set_item(k, v)?;
        }
        Ok(Some(d.into_any().unbind()))
    }

    /// The ids of every bot added.
    fn bot_ids(&self) -> PyResult<Vec<usize>> {
        Ok(self.inner.entries.iter().map(|e| e.id.0).collect())
    }

    /// How long each tick took, microseconds (the last 100,000 ticks): every bot's tick and pilot.
    fn tick_times_us(&self) -> PyResult<Vec<u32>> {
        Ok(self.inner.host.tick_times_us())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.inner.leave_all(py)?;
        Ok(false)
    }
}
