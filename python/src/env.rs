//! `EnvCore`: the native half of `bzhead.env` (see `docs/env.md`). Learning tanks are ordinary bots of the crate's
//! [`BotHost`] whose tick builds the observation and applies the action with the game logic of [`bzhead::env`];
//! the built-in bots play beside them on the same event loop. Any number of servers (one per environment of a
//! vector) share the one host.
//!
//! `step` takes every learner's action, runs the loop until every learner has reached its next decision (a fixed
//! period of game time later), and hands back the observations as one `float32` buffer, the rewarded events and
//! the game's own events. It never waits for ever: a learner that is not in the game, or a step that gets no
//! decision within [`STEP_WAIT`] of wall time, is reported as lost.
//!
//! Recording (`record=DIR`, see `docs/env.md`): [`PyEnvCore::record`] adds an observer session per server to the
//! host's reactor with the reactor's own recorders (`SessionOptions { record, rec }`, as `observe --record --rec`
//! does). The host does not own it, so it hands its events back as [`HostEvent::Session`], which `turn` reads for
//! the recorder's join, warnings and end. Each episode gets a fresh observer rather than rotating the files of one:
//! bzhead's own format replays by running every input from the connect on through the engine, so a file has to
//! start at a connect (a `.rec` could restart at a state block, a `.bzrec` cannot).

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use bzhead::bot::{brains, Bot, BotConfig, BotHost, BotId, BotState, Control, HostConfig, HostEvent, View};
use bzhead::bzflag::consts::{PlayerType, Team, DEFAULT_PORT};
use bzhead::bzflag::event::Event;
use bzhead::bzflag::session::{SessionConfig, SessionEnd};
use bzhead::env::{observe, rewards, Action, DecisionClock, ObsSpec, Outcome, RewardWeights};
use bzhead::observer::{json_line, Filter};
use bzhead::reactor::{SessionId, SessionOptions};

use crate::json::loads;
use crate::Unlocked;

/// Longest wall time one `step` (or `wait_ready`) waits for the next decision of every learner.
const STEP_WAIT: Duration = Duration::from_secs(10);
/// Game events kept between two steps (older ones are dropped and counted).
const MAX_EVENTS: usize = 10_000;
/// Host ticks per second at least (the pilots step the tanks' physics at every tick).
const MIN_TICK_HZ: f64 = 30.0;
/// Recording warnings kept between two steps (more are dropped).
const MAX_RECORD_WARNINGS: usize = 64;
/// Longest wall time the end of a recording waits for its observer to leave (its files are then complete).
const RECORD_CLOSE_WAIT: Duration = Duration::from_secs(3);
/// A recorder's observer leaves when the server sends it nothing for this long (bzfs sends an observer the game
/// time at least every 10 s), as the host's own observer link does.
const RECORD_IDLE: Duration = Duration::from_secs(30);

/// The game time scale of the host's clock: the reactor's natively scaled clock (its ticks, timers, timestamps
/// and waits run `k` times real time; see docs/time-warp.md). A private bzfs runs under `faketime` at the same
/// `k` (`bzhead.env._server`); an existing server must be run so by its owner.
fn set_time_scale(host: &mut BotHost, k: f64) -> Result<(), String> {
    host.reactor().set_time_scale(k).map_err(|e| format!("warp={k}: {e}"))
}

/// What one learning tank shares with the loop.
struct Slot {
    action: Action,
    /// The action was set since the last tick (fire, jump and drop act on the first tick after it).
    fresh: bool,
    obs: Vec<f32>,
    clock: DecisionClock,
    /// Game time of the last decision (host seconds).
    decided_at: f32,
    outcomes: Vec<Outcome>,
    /// Decisions missed since the last step.
    missed: u64,
    alive: bool,
}

/// A learning tank as a bot of the host.
struct Learner {
    slot: Rc<RefCell<Slot>>,
    spec: ObsSpec,
}

impl Bot for Learner {
    fn tick(&mut self, view: &View<'_>, control: &mut Control) {
        let mut s = self.slot.borrow_mut();
        let fresh = std::mem::take(&mut s.fresh);
        s.action.apply(control, fresh);
        s.alive = view.me.alive();
        if let Some(missed) = s.clock.due(view.time) {
            let mut obs = std::mem::take(&mut s.obs);
            obs.clear();
            observe(view, &self.spec, &mut obs);
            s.obs = obs;
            s.missed += missed;
            s.decided_at = view.time;
        }
    }

    fn on_event(&mut self, view: &View<'_>, event: &Event) {
        let mut s = self.slot.borrow_mut();
        rewards(event, view.me.id, view.me.team, |id| view.player(id).map(|p| p.team), &mut s.outcomes);
    }
}

/// One episode's recording of one server: an observer session on the host's reactor (not one of the host's).
struct Recording {
    server: SocketAddr,
    session: SessionId,
    /// The files, for messages.
    name: String,
    /// The files, removed if the observer never joined (they hold nothing of the game).
    files: Vec<PathBuf>,
    joined: bool,
    /// Asked to leave (the episode ended, or a new one started).
    leaving: bool,
    /// The session ended (its files are complete once the reactor says it is done).
    ended: bool,
    /// The last warning given for it (the reactor keeps the cap's message as the record error too).
    warned: Option<String>,
}

struct LearnerEntry {
    id: BotId,
    name: String,
    slot: Rc<RefCell<Slot>>,
    /// Decisions seen by the last step.
    seen: u64,
}

/// The native environment core. See `bzhead/env/_core.py` for how Python drives it.
#[pyclass(name = "EnvCore", module = "bzhead._native", unsendable)]
pub struct PyEnvCore {
    host: BotHost,
    spec: ObsSpec,
    weights: RewardWeights,
    decision_hz: f64,
    learners: Vec<LearnerEntry>,
    bots: Vec<BotId>,
    filter: Filter,
    events: Vec<(String, String)>,
    dropped: u64,
    start: Instant,
    recordings: Vec<Recording>,
    record_warnings: Vec<String>,
    /// Thread CPU time spent in the event loop with the GIL released (`loop_cpu_seconds`).
    loop_cpu: Duration,
}

/// The calling thread's CPU time (zero where there is no such clock): what the event loop itself costs, apart from
/// the Python around it, for `bench/env.py`. One `clock_gettime` (a vDSO call on Linux) each.
fn thread_cpu() -> Duration {
    #[cfg(unix)]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec.max(0) as u64, t.tv_nsec.clamp(0, 999_999_999) as u32)
    }
    #[cfg(not(unix))]
    {
        Duration::ZERO
    }
}

fn team_of(s: &str) -> PyResult<Team> {
    match Team::parse(s) {
        Some(t @ (Team::Automatic | Team::Rogue | Team::Red | Team::Green | Team::Blue | Team::Purple)) => Ok(t),
        _ => Err(PyValueError::new_err(format!("unknown team {s:?}; teams: auto, rogue, red, green, blue, purple"))),
    }
}

fn os_error(e: std::io::Error) -> PyErr {
    PyOSError::new_err(format!("the event loop failed: {e}"))
}

impl PyEnvCore {
    fn turn(&mut self, py: Python<'_>, wait: Duration) -> PyResult<()> {
        let (result, cpu) = Unlocked(&mut self.host).run(py, move |host| {
            let t0 = thread_cpu();
            let r = host.turn(Some(wait));
            (r, thread_cpu().saturating_sub(t0))
        });
        self.loop_cpu += cpu;
        match result {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {}
            Err(e) => return Err(os_error(e)),
        }
        while let Some(ev) = self.host.poll_event() {
            match ev {
                HostEvent::Game { server, at, event } => {
                    if !self.filter.allows(&event) {
                        continue;
                    }
                    if self.events.len() >= MAX_EVENTS {
                        self.dropped += 1;
                        continue;
                    }
                    let addr = self.host.server_addr(server).map(|a| a.to_string()).unwrap_or_default();
                    self.events.push((addr, json_line(at.saturating_duration_since(self.start), &event)));
                }
                HostEvent::Session { session, event, .. } => self.on_recorder_event(session, &event),
                HostEvent::Bot { .. } => {}
            }
        }
        self.reap_recordings();
        Ok(())
    }

    /// An event of a recorder's observer: its join, a warning (the size cap), its end.
    fn on_recorder_event(&mut self, session: SessionId, event: &Event) {
        let Some(k) = self.recordings.iter().position(|r| r.session == session) else { return };
        let mut warning = None;
        match event {
            Event::Accept { .. } => self.recordings[k].joined = true,
            // The recorders keep what they need of the world; the session's copy (up to 32 MiB) goes.
            Event::World { .. } => drop(self.host.reactor().with_session(session, |s, _| s.take_world_blob())),
            Event::Warning { message } => {
                self.recordings[k].warned = Some(message.clone());
                let message = message.replace("--record-max-mib", "record_max_mib");
                warning = Some(format!("recording {}: {message}", self.recordings[k].name));
            }
            Event::Closed { reason } => {
                let r = &mut self.recordings[k];
                r.ended = true;
                let end = self.host.reactor().session(session).and_then(|s| s.end().cloned());
                if !r.leaving && !matches!(end, Some(SessionEnd::Left)) {
                    warning = Some(format!("recording {} ended before the episode did: {reason}", r.name));
                }
            }
            _ => {}
        }
        if let Some(w) = warning {
            self.record_warning(w);
        }
    }

    fn record_warning(&mut self, w: String) {
        if self.record_warnings.len() < MAX_RECORD_WARNINGS {
            self.record_warnings.push(w);
        }
    }

    /// Removes the recorders whose sessions are over (their files complete), with a warning for a write error.
    fn reap_recordings(&mut self) {
        let mut k = 0;
        while k < self.recordings.len() {
            let sid = self.recordings[k].session;
            let gone = self.host.reactor().session(sid).is_none();
            if !((self.recordings[k].ended || gone) && self.host.reactor().is_done(sid)) {
                k += 1;
                continue;
            }
            let r = self.recordings.remove(k);
            let error = self.host.reactor().record_error(sid).map(str::to_string);
            if !r.joined {
                // Nothing of the game in them (an episode that ended before its recorder got in, or a recorder
                // that could not join, which `on_recorder_event` reported).
                for f in &r.files {
                    let _ = std::fs::remove_file(f);
                }
            } else if let Some(e) = error.filter(|e| r.warned.as_ref() != Some(e)) {
                self.record_warning(format!("recording {} is incomplete: {e}", r.name));
            }
            self.host.reactor().remove_session(sid);
        }
    }

    /// Makes the recorders of `server` (every server: `None`) leave, and turns the loop until they are gone (at
    /// most [`RECORD_CLOSE_WAIT`]): their files are then complete.
    fn end_recordings(&mut self, py: Python<'_>, server: Option<SocketAddr>) -> PyResult<()> {
        let mine = |r: &Recording| server.is_none_or(|a| r.server == a);
        for k in 0..self.recordings.len() {
            if mine(&self.recordings[k]) && !self.recordings[k].leaving {
                self.recordings[k].leaving = true;
                let sid = self.recordings[k].session;
                self.host.reactor().leave(sid);
            }
        }
        let end = Instant::now() + RECORD_CLOSE_WAIT;
        while self.recordings.iter().any(mine) && Instant::now() < end {
            self.turn(py, Duration::from_millis(10))?;
        }
        Ok(())
    }

    /// Stopped or left: it will not join again by itself.
    fn gone(&self, id: BotId) -> bool {
        self.host.status(id).is_some_and(|s| matches!(s.state, BotState::Stopped(_) | BotState::Left))
    }

    fn joined(&self, id: BotId) -> bool {
        self.host.status(id).is_some_and(|s| matches!(s.state, BotState::Joined))
    }

    /// Runs the loop until every learner has a decision it has not handed out yet, or `limit` passes. Returns
    /// the learners that did not get there (not in the game, or out of time).
    fn run_to_decision(&mut self, py: Python<'_>, limit: Duration, need_joined: bool) -> PyResult<Vec<usize>> {
        let end = Instant::now() + limit;
        loop {
            let pending: Vec<usize> = (0..self.learners.len())
                .filter(|&k| self.learners[k].slot.borrow().clock.decisions() <= self.learners[k].seen)
                .collect();
            if pending.is_empty() {
                return Ok(pending);
            }
            // A learner that was in the game and is not any more will not decide: give up now.
            if need_joined && pending.iter().any(|&k| !self.joined(self.learners[k].id)) {
                return Ok(pending.into_iter().filter(|&k| !self.joined(self.learners[k].id)).collect());
            }
            // While joining, a learner the server refused (or that gave up) will not decide either.
            if !need_joined && pending.iter().any(|&k| self.gone(self.learners[k].id)) {
                return Ok(pending.into_iter().filter(|&k| self.gone(self.learners[k].id)).collect());
            }
            let now = Instant::now();
            if now >= end {
                return Ok(pending);
            }
            self.turn(py, (end - now).min(Duration::from_millis(20)))?;
            py.check_signals()?;
        }
    }

    /// The result of a step or reset: `(obs bytes, rewards, outcomes, missed, alive, lost, events,
    /// record_warnings)`.
    fn harvest<'py>(&mut self, py: Python<'py>, lost: &[usize]) -> PyResult<Bound<'py, PyDict>> {
        let len = self.spec.len();
        let mut buf: Vec<u8> = Vec::with_capacity(self.learners.len() * len * 4);
        let rewards = PyList::empty(py);
        let outcomes = PyList::empty(py);
        let missed = PyList::empty(py);
        let alive = PyList::empty(py);
        let times = PyList::empty(py);
        for e in &mut self.learners {
            let mut s = e.slot.borrow_mut();
            let mut obs = s.obs.clone();
            obs.resize(len, 0.0);
            for x in obs {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            let list = PyList::empty(py);
            let mut total = 0.0f32;
            for o in s.outcomes.drain(..) {
                let w = o.kind.weight(&self.weights);
                total += w;
                list.append((o.kind.name(), o.other, w))?;
            }
            rewards.append(total)?;
            outcomes.append(list)?;
            missed.append(std::mem::take(&mut s.missed))?;
            alive.append(s.alive)?;
            times.append(s.decided_at)?;
            e.seen = s.clock.decisions();
        }
        let events = PyList::empty(py);
        for (addr, line) in self.events.drain(..) {
            let d = loads(py, &line)?;
            if let Ok(dict) = d.downcast::<PyDict>() {
                dict.set_item("server", addr)?;
            }
            events.append(d)?;
        }
        let d = PyDict::new(py);
        d.set_item("obs", PyBytes::new(py, &buf))?;
        d.set_item("rewards", rewards)?;
        d.set_item("outcomes", outcomes)?;
        d.set_item("missed", missed)?;
        d.set_item("alive", alive)?;
        d.set_item("game_time", times)?;
        d.set_item("lost", lost.iter().map(|&k| self.learners[k].name.clone()).collect::<Vec<_>>())?;
        d.set_item("events", events)?;
        d.set_item("dropped_events", std::mem::take(&mut self.dropped))?;
        d.set_item("record_warnings", std::mem::take(&mut self.record_warnings))?;
        Ok(d)
    }
}

#[pymethods]
impl PyEnvCore {
    /// A core with its own event loop. `weights` maps reward kinds to numbers (missing ones keep their default).
    #[new]
    #[pyo3(signature = (*, decision_hz = 10.0, warp = 1.0, nearest = 4, flags = 4, shots = 4, rays = 16, ray_range = 200.0, weights = None, join_stagger = 0.2))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        decision_hz: f64,
        warp: f64,
        nearest: usize,
        flags: usize,
        shots: usize,
        rays: usize,
        ray_range: f32,
        weights: Option<HashMap<String, f32>>,
        join_stagger: f64,
    ) -> PyResult<Self> {
        if !(decision_hz.is_finite() && (0.1..=60.0).contains(&decision_hz)) {
            return Err(PyValueError::new_err("decision_hz must be between 0.1 and 60 decisions per game second"));
        }
        if !(warp.is_finite() && warp > 0.0) {
            return Err(PyValueError::new_err("warp must be a finite number > 0"));
        }
        if !(join_stagger.is_finite() && (0.0..=10.0).contains(&join_stagger)) {
            return Err(PyValueError::new_err("join_stagger must be between 0 and 10 seconds"));
        }
        let spec = ObsSpec { nearest, flags, shots, rays, ray_range };
        spec.validate().map_err(PyValueError::new_err)?;
        let mut w = RewardWeights::default();
        for (k, v) in weights.unwrap_or_default() {
            if !v.is_finite() {
                return Err(PyValueError::new_err(format!("reward weight {k:?} must be finite")));
            }
            let slot = match k.as_str() {
                "kill" => &mut w.kill,
                "death" => &mut w.death,
                "team_kill" => &mut w.team_kill,
                "capture" => &mut w.capture,
                "captured_against" => &mut w.captured_against,
                "flag_grab" => &mut w.flag_grab,
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "unknown reward {k:?}; rewards: kill, death, team_kill, capture, captured_against, flag_grab"
                    )))
                }
            };
            *slot = v;
        }
        // Ticks at a whole multiple of the decision rate, at least 30 a second.
        let per = (MIN_TICK_HZ / decision_hz).ceil().max(1.0);
        let config = HostConfig {
            tick: Duration::from_secs_f64(1.0 / (decision_hz * per)),
            join_stagger: Duration::from_secs_f64(join_stagger),
            reconnect: false,
            ..HostConfig::default()
        };
        let mut host =
            BotHost::new(config).map_err(|e| PyOSError::new_err(format!("cannot start the event loop: {e}")))?;
        set_time_scale(&mut host, warp).map_err(PyValueError::new_err)?;
        Ok(PyEnvCore {
            host,
            spec,
            weights: w,
            decision_hz,
            learners: Vec::new(),
            bots: Vec::new(),
            filter: Filter::new(&[], &[]).map_err(PyValueError::new_err)?,
            events: Vec::new(),
            dropped: 0,
            start: Instant::now(),
            recordings: Vec::new(),
            record_warnings: Vec::new(),
            loop_cpu: Duration::ZERO,
        })
    }

    /// CPU seconds this thread spent in the event loop with the GIL released, since the core was made (the
    /// native part of `step`, `reset` and `close`; for `bench/env.py`).
    #[getter]
    fn loop_cpu_seconds(&self) -> f64 {
        self.loop_cpu.as_secs_f64()
    }

    /// The observation's length.
    #[getter]
    fn obs_len(&self) -> usize {
        self.spec.len()
    }

    /// Adds a learning tank named `callsign` for `server`; returns its index.
    #[pyo3(signature = (server, callsign, team, *, seed = 0))]
    fn add_learner(&mut self, server: &str, callsign: &str, team: &str, seed: u64) -> PyResult<usize> {
        let addr = bzhead::reactor::resolve(server, DEFAULT_PORT).map_err(PyValueError::new_err)?;
        if callsign.is_empty() || callsign.len() > 31 {
            return Err(PyValueError::new_err("a callsign has 1 to 31 bytes"));
        }
        let slot = Rc::new(RefCell::new(Slot {
            action: Action::default(),
            fresh: false,
            obs: Vec::new(),
            clock: DecisionClock::new(self.decision_hz as f32),
            decided_at: 0.0,
            outcomes: Vec::new(),
            missed: 0,
            alive: false,
        }));
        let config = BotConfig {
            callsign: callsign.into(),
            motto: "bzhead.env learner".into(),
            team: team_of(team)?,
            player_type: PlayerType::Computer,
            udp: false,
            seed,
        };
        let id = self.host.add_bot(addr, config, Box::new(Learner { slot: Rc::clone(&slot), spec: self.spec }));
        self.learners.push(LearnerEntry { id, name: callsign.into(), slot, seen: 0 });
        Ok(self.learners.len() - 1)
    }

    /// Adds one of the crate's bots ("hunter", "capper", "defender", "sitter").
    #[pyo3(signature = (server, kind, callsign, team, *, seed = 0))]
    fn add_bot(&mut self, server: &str, kind: &str, callsign: &str, team: &str, seed: u64) -> PyResult<()> {
        let addr = bzhead::reactor::resolve(server, DEFAULT_PORT).map_err(PyValueError::new_err)?;
        let brain = brains::by_name(kind, seed).ok_or_else(|| {
            PyValueError::new_err(format!("unknown bot kind {kind:?}; the built-in bots: {}", brains::KINDS.join(", ")))
        })?;
        let config = BotConfig {
            callsign: callsign.into(),
            motto: "bzhead.env opponent".into(),
            team: team_of(team)?,
            player_type: PlayerType::Computer,
            udp: false,
            seed,
        };
        self.bots.push(self.host.add_bot(addr, config, brain));
        Ok(())
    }

    /// Records the game on `server` from now on: an observer joining as `callsign` writes bzhead's recording to
    /// `bzrec` and BZFlag's `.rec` to `rec` (either may be `None`), each at most `max_bytes` (past it that
    /// recording stops with a warning in the next result's `record_warnings`; the game goes on). The server's
    /// recording so far ends first (its files complete). A file that cannot be created is a warning too: a
    /// recording never stops the training. `reset` waits for the observer to join.
    #[pyo3(signature = (server, callsign, bzrec = None, rec = None, max_bytes = bzhead::record::DEFAULT_MAX_RECORD_BYTES))]
    fn record(
        &mut self,
        py: Python<'_>,
        server: &str,
        callsign: &str,
        bzrec: Option<PathBuf>,
        rec: Option<PathBuf>,
        max_bytes: u64,
    ) -> PyResult<()> {
        let addr = bzhead::reactor::resolve(server, DEFAULT_PORT).map_err(PyValueError::new_err)?;
        if callsign.is_empty() || callsign.len() > 31 {
            return Err(PyValueError::new_err("a callsign has 1 to 31 bytes"));
        }
        self.end_recordings(py, Some(addr))?;
        if bzrec.is_none() && rec.is_none() {
            return Ok(());
        }
        let files: Vec<PathBuf> = [&bzrec, &rec].into_iter().flatten().cloned().collect();
        let name = files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ");
        let config = SessionConfig {
            callsign: callsign.into(),
            motto: "bzhead.env recorder".into(),
            team: Team::Observer,
            player_type: PlayerType::Tank,
            // The `.rec` recorder stays on TCP (docs/recordings.md: bzfs relays over UDP only to who opened it).
            udp: false,
            idle_timeout: Some(RECORD_IDLE),
            ..SessionConfig::default()
        };
        let options = SessionOptions { record: bzrec, rec, cache: None, record_max_bytes: Some(max_bytes) };
        match self.host.reactor().add_session(addr, config, options) {
            Ok(session) => self.recordings.push(Recording {
                server: addr,
                session,
                name,
                files,
                joined: false,
                leaving: false,
                ended: false,
                warned: None,
            }),
            Err(e) => self.record_warning(format!("cannot record {server} to {name}: {e}")),
        }
        Ok(())
    }

    /// Ends the recordings of `server` (of every server: `None`): their observers leave, and the call returns
    /// once their files are complete (at most 3 s).
    #[pyo3(signature = (server = None))]
    fn stop_recording(&mut self, py: Python<'_>, server: Option<&str>) -> PyResult<()> {
        let addr =
            server.map(|s| bzhead::reactor::resolve(s, DEFAULT_PORT).map_err(PyValueError::new_err)).transpose()?;
        self.end_recordings(py, addr)
    }

    /// Waits (up to `timeout` s) until every recorder has joined (see `record`) and every learner is in the game
    /// and has a first decision, then starts an episode: rewards, missed decisions and events so far are
    /// dropped. Returns what `step` returns.
    #[pyo3(signature = (timeout = 30.0))]
    fn reset<'py>(&mut self, py: Python<'py>, timeout: f64) -> PyResult<Bound<'py, PyDict>> {
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(PyValueError::new_err("timeout must be a number of seconds > 0"));
        }
        // The recording covers the whole episode: its observer is in before the episode starts.
        let end = Instant::now() + Duration::from_secs_f64(timeout);
        while self.recordings.iter().any(|r| !r.joined && !r.ended && !r.leaving) && Instant::now() < end {
            self.turn(py, Duration::from_millis(20))?;
            py.check_signals()?;
        }
        let late: Vec<String> = (self.recordings.iter().filter(|r| !r.joined && !r.ended && !r.leaving))
            .map(|r| format!("recording {}: the observer did not get into the game within {timeout} s", r.name))
            .collect();
        for w in late {
            self.record_warning(w);
        }
        for e in &mut self.learners {
            let mut s = e.slot.borrow_mut();
            s.action = Action::default();
            s.fresh = true;
            e.seen = s.clock.decisions();
        }
        let lost = self.run_to_decision(py, Duration::from_secs_f64(timeout), false)?;
        for e in &self.learners {
            let mut s = e.slot.borrow_mut();
            s.outcomes.clear();
            s.missed = 0;
        }
        self.events.clear();
        self.harvest(py, &lost)
    }

    /// One decision: `actions` is a buffer of `5 × learners` numbers, `float32` (continuous) or `int64`
    /// (`discrete`), in the learners' order. Every action is checked before any is applied.
    #[pyo3(signature = (actions, discrete = false))]
    fn step<'py>(&mut self, py: Python<'py>, actions: &[u8], discrete: bool) -> PyResult<Bound<'py, PyDict>> {
        let n = self.learners.len();
        let size = if discrete { 8 } else { 4 };
        if actions.len() != n * 5 * size {
            return Err(PyValueError::new_err(format!(
                "expected {n} actions of 5 entries ({} bytes), got {} bytes",
                n * 5 * size,
                actions.len()
            )));
        }
        let mut decoded = Vec::with_capacity(n);
        for (k, chunk) in actions.chunks_exact(5 * size).enumerate() {
            let a = if discrete {
                let v: Vec<i64> =
                    chunk.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))).collect();
                Action::from_discrete(&v)
            } else {
                let v: Vec<f32> =
                    chunk.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap_or([0; 4]))).collect();
                Action::from_box(&v)
            };
            decoded.push(a.map_err(|e| PyValueError::new_err(format!("agent {}: {e}", self.learners[k].name)))?);
        }
        for (e, a) in self.learners.iter().zip(decoded) {
            let mut s = e.slot.borrow_mut();
            s.action = a;
            s.fresh = true;
        }
        let lost = self.run_to_decision(py, STEP_WAIT, true)?;
        self.harvest(py, &lost)
    }

    /// Every learner's and bot's state: `{callsign: (state, kills, deaths, captures)}`.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for id in self.learners.iter().map(|e| e.id).chain(self.bots.iter().copied()) {
            if let Some(s) = self.host.status(id) {
                let state = match s.state {
                    BotState::Waiting => "waiting".to_string(),
                    BotState::Joining => "joining".into(),
                    BotState::Joined => "joined".into(),
                    BotState::Yielded => "yielded".into(),
                    BotState::Leaving => "leaving".into(),
                    BotState::Left => "left".into(),
                    BotState::Stopped(r) => format!("stopped: {r}"),
                };
                d.set_item(s.callsign, (state, s.stats.kills, s.stats.deaths, s.stats.captures))?;
            }
        }
        Ok(d)
    }

    /// Every recording ends (complete files), every bot leaves cleanly (waits up to 3 s each).
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        self.end_recordings(py, None)?;
        self.host.leave_all();
        let end = Instant::now() + Duration::from_secs(3);
        while !self.host.is_done() && Instant::now() < end {
            self.turn(py, Duration::from_millis(50))?;
        }
        Ok(())
    }
}
