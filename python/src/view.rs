//! `View`, `Control` and `World`: the Rust bot API's borrowed tick arguments, lent to Python for one tick.
//!
//! A Rust [`View`] borrows the host's state for the length of one [`bzhead::bot::Bot::tick`]. Python objects
//! cannot carry a borrow, so each Python bot owns one `View` and one `Control` object for its whole life, and the
//! host lends them the tick's values: [`Lent::lend`] stores a pointer and returns a guard that clears it when the
//! tick ends (also on unwinding). Every accessor checks the pointer and raises `RuntimeError` outside a tick.
//!
//! Accessors copy what they need out of the borrowed view into owned Rust values first and build Python objects
//! only afterwards, so no Python code (a garbage collection, a `__del__`) runs while a borrow is held.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicPtr, Ordering};

use glam::{Vec2, Vec3};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use bzhead::bot::aim::FiringSolution;
use bzhead::bot::{Control, TankView, View};
use bzhead::bzflag::consts::{FlagStatus, PlayerType, Team};
use bzhead::bzflag::msg::Abbv;

/// A pointer to a value lent for the length of a tick (null outside one).
pub(crate) struct Lent<T> {
    ptr: AtomicPtr<T>,
}

/// Clears a [`Lent`] when the tick that lent it ends.
pub(crate) struct LendGuard<'a, T> {
    slot: &'a AtomicPtr<T>,
    _borrow: PhantomData<&'a mut T>,
}

impl<T> Drop for LendGuard<'_, T> {
    fn drop(&mut self) {
        self.slot.store(std::ptr::null_mut(), Ordering::Release);
    }
}

impl<T> Lent<T> {
    fn new() -> Self {
        Lent { ptr: AtomicPtr::new(std::ptr::null_mut()) }
    }

    /// Lends `value` until the guard is dropped.
    fn lend<'a>(&'a self, value: *mut T) -> LendGuard<'a, T> {
        self.ptr.store(value, Ordering::Release);
        LendGuard { slot: &self.ptr, _borrow: PhantomData }
    }

    fn get(&self, what: &str) -> PyResult<*mut T> {
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            Err(PyRuntimeError::new_err(format!("this {what} is only valid during Bot.tick")))
        } else {
            Ok(p)
        }
    }
}

/// Three floats as a tuple.
pub(crate) fn t3(v: Vec3) -> (f32, f32, f32) {
    (v.x, v.y, v.z)
}

/// A flag abbreviation, `None` for no flag.
fn flag_text(a: Abbv) -> Option<String> {
    (!a.is_none()).then(|| a.as_string())
}

fn status_name(s: FlagStatus) -> &'static str {
    match s {
        FlagStatus::NoExist => "none",
        FlagStatus::OnGround => "on_ground",
        FlagStatus::OnTank => "on_tank",
        FlagStatus::InAir => "in_air",
        FlagStatus::Coming => "coming",
        FlagStatus::Going => "going",
        FlagStatus::Other(_) => "unknown",
    }
}

/// A point from a Python sequence of 2 or 3 numbers (`z` is `default_z` when missing).
pub(crate) fn point(v: &Bound<'_, PyAny>, default_z: f32) -> PyResult<Vec3> {
    let xs: Vec<f32> = v.extract().map_err(|_| PyValueError::new_err("a point is a tuple (x, y) or (x, y, z)"))?;
    let p = match xs.as_slice() {
        [x, y] => Vec3::new(*x, *y, default_z),
        [x, y, z] => Vec3::new(*x, *y, *z),
        _ => return Err(PyValueError::new_err(format!("a point has 2 or 3 coordinates, not {}", xs.len()))),
    };
    if p.is_finite() {
        Ok(p)
    } else {
        Err(PyValueError::new_err("a point's coordinates must be finite"))
    }
}

/// Another player's tank at the tick's time (a copy: it stays valid after the tick).
#[pyclass(name = "Tank", module = "bzhead", frozen, get_all)]
#[derive(Clone)]
pub struct PyTank {
    /// Player id.
    pub id: u8,
    /// Callsign ("" when the roster does not know it yet).
    pub callsign: String,
    /// Team name: "rogue", "red", "green", "blue", "purple", "rabbit", "hunter".
    pub team: &'static str,
    /// Position (x, y, z) of the tank's bottom centre, dead-reckoned to the tick's time.
    pub pos: (f32, f32, f32),
    /// Velocity (x, y, z), units per second.
    pub vel: (f32, f32, f32),
    /// Heading, radians (0 = +x, counter-clockwise).
    pub azimuth: f32,
    /// Alive (spawned and not killed since).
    pub alive: bool,
    /// Paused.
    pub paused: bool,
    /// The flag it carries ("GM", "R*", ...), or None.
    pub flag: Option<String>,
    /// One of this host's bots.
    pub ours: bool,
    /// A robot player (else a human-driven tank).
    pub robot: bool,
    /// No update for longer than `_notRespondingTime` while alive.
    pub not_responding: bool,
}

#[pymethods]
impl PyTank {
    fn __repr__(&self) -> String {
        format!(
            "Tank(id={}, callsign={:?}, team={:?}, pos=({:.1}, {:.1}, {:.1}), alive={})",
            self.id,
            self.callsign,
            self.team,
            self.pos.0,
            self.pos.1,
            self.pos.2,
            if self.alive { "True" } else { "False" }
        )
    }
}

impl PyTank {
    fn of(t: &TankView, view: &View<'_>) -> PyTank {
        PyTank {
            id: t.id,
            callsign: view.player(t.id).map(|p| p.callsign.clone()).unwrap_or_default(),
            team: t.team.name(),
            pos: t3(t.pose.pos),
            vel: t3(t.pose.vel),
            azimuth: t.pose.azimuth,
            alive: t.alive,
            paused: t.paused,
            flag: t.flag.and_then(flag_text),
            ours: t.ours,
            robot: t.player_type == PlayerType::Computer,
            not_responding: t.not_responding,
        }
    }
}

/// Our own tank at the tick (a copy).
#[pyclass(name = "Me", module = "bzhead", frozen, get_all)]
pub struct PyMe {
    /// Our player id.
    pub id: u8,
    /// Our callsign.
    pub callsign: String,
    /// Our team's name.
    pub team: &'static str,
    /// Position (x, y, z).
    pub pos: (f32, f32, f32),
    /// Velocity (x, y, z).
    pub vel: (f32, f32, f32),
    /// Heading, radians.
    pub azimuth: f32,
    /// Alive.
    pub alive: bool,
    /// Seconds until a shot can be fired (0: now).
    pub reload: f32,
    /// The flag we carry, or None.
    pub flag: Option<String>,
}

#[pymethods]
impl PyMe {
    fn __repr__(&self) -> String {
        format!(
            "Me(id={}, callsign={:?}, team={:?}, pos=({:.1}, {:.1}, {:.1}), azimuth={:.2}, alive={}, reload={:.2})",
            self.id,
            self.callsign,
            self.team,
            self.pos.0,
            self.pos.1,
            self.pos.2,
            self.azimuth,
            if self.alive { "True" } else { "False" },
            self.reload
        )
    }
}

/// A flag (a copy).
#[pyclass(name = "Flag", module = "bzhead", frozen, get_all)]
pub struct PyFlag {
    /// Flag index.
    pub index: u16,
    /// Its type as far as known ("PZ" for a loose flag of unknown type, "R*" for the red team flag, ...).
    pub kind: String,
    /// "on_ground", "on_tank", "in_air", "coming", "going".
    pub status: &'static str,
    /// The id of the player carrying it, or None.
    pub owner: Option<u8>,
    /// Where it is at the tick (x, y, z).
    pub pos: (f32, f32, f32),
    /// The team of a team flag, or None.
    pub team: Option<&'static str>,
}

#[pymethods]
impl PyFlag {
    fn __repr__(&self) -> String {
        format!(
            "Flag(index={}, kind={:?}, status={:?}, owner={:?}, pos=({:.1}, {:.1}, {:.1}))",
            self.index, self.kind, self.status, self.owner, self.pos.0, self.pos.1, self.pos.2
        )
    }
}

/// A live shot (a copy).
#[pyclass(name = "Shot", module = "bzhead", frozen, get_all)]
pub struct PyShot {
    /// The shooter's player id (253 for world weapons).
    pub shooter: u8,
    /// Shot id.
    pub shot_id: u16,
    /// The shot's team.
    pub team: &'static str,
    /// The flag it was fired with, or None.
    pub flag: Option<String>,
    /// Where it is at the tick (x, y, z), or None when its path has ended.
    pub pos: Option<(f32, f32, f32)>,
    /// Its velocity at launch (x, y, z).
    pub vel: (f32, f32, f32),
    /// Its age at the tick, seconds.
    pub age: f32,
}

#[pymethods]
impl PyShot {
    fn __repr__(&self) -> String {
        format!("Shot(shooter={}, shot_id={}, team={:?}, pos={:?})", self.shooter, self.shot_id, self.team, self.pos)
    }
}

/// A firing solution (a copy of [`FiringSolution`]).
#[pyclass(name = "FiringSolution", module = "bzhead", frozen, get_all)]
pub struct PyFiringSolution {
    /// Azimuth to fire at, radians.
    pub azimuth: f32,
    /// Seconds from firing until the shot meets the target.
    pub flight_time: f32,
    /// Where the shot meets the target (x, y, z).
    pub impact: (f32, f32, f32),
    /// How close the real path comes to the target's centre.
    pub miss: f32,
    /// The target's hit radius: the shot hits when miss < hit_radius.
    pub hit_radius: f32,
    /// Ricochets before the meeting.
    pub bounces: u32,
    /// Nothing stops or deflects the shot before the meeting point.
    pub clear: bool,
    /// Largest azimuth error (radians) that still hits.
    pub tolerance: f32,
    /// The real path hits (miss < hit_radius).
    pub hits: bool,
}

#[pymethods]
impl PyFiringSolution {
    fn __repr__(&self) -> String {
        format!(
            "FiringSolution(azimuth={:.3}, flight_time={:.2}, miss={:.2}, hits={})",
            self.azimuth,
            self.flight_time,
            self.miss,
            if self.hits { "True" } else { "False" }
        )
    }
}

impl From<FiringSolution> for PyFiringSolution {
    fn from(s: FiringSolution) -> Self {
        PyFiringSolution {
            azimuth: s.azimuth,
            flight_time: s.flight_time,
            impact: t3(s.impact),
            miss: s.miss,
            hit_radius: s.hit_radius,
            bounces: s.bounces,
            clear: s.clear,
            tolerance: s.tolerance,
            hits: s.hits(),
        }
    }
}

/// A shot that will pass close to us (a copy of [`bzhead::bot::danger::Threat`]).
#[pyclass(name = "Threat", module = "bzhead", frozen, get_all)]
pub struct PyThreat {
    /// The shooter's player id.
    pub shooter: u8,
    /// The shot's id.
    pub shot_id: u16,
    /// Seconds from now of its closest approach.
    pub time: f32,
    /// Seconds from now when it would first touch our hit sphere, or None.
    pub contact: Option<f32>,
    /// Distance from our centre then.
    pub miss: f32,
    /// Our hit radius: miss < hit_radius is a hit.
    pub hit_radius: f32,
}

#[pymethods]
impl PyThreat {
    fn __repr__(&self) -> String {
        format!(
            "Threat(shooter={}, shot_id={}, time={:.2}, miss={:.2})",
            self.shooter, self.shot_id, self.time, self.miss
        )
    }
}

/// The game as one bot sees it during one tick. See `bzhead.View` in the stubs.
#[pyclass(name = "View", module = "bzhead", frozen)]
pub struct PyView {
    lent: Lent<View<'static>>,
}

impl PyView {
    pub(crate) fn new() -> PyView {
        PyView { lent: Lent::new() }
    }

    /// Lends `view` to Python until the guard drops.
    pub(crate) fn lend<'a>(&'a self, view: &'a View<'_>) -> LendGuard<'a, View<'static>> {
        // Only the lifetime changes: the guard, which borrows `view`, clears the pointer before `view` ends.
        self.lent.lend((view as *const View<'_>).cast::<View<'static>>().cast_mut())
    }

    /// Runs `f` on the lent view. `f` must not call into Python (see the module documentation).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&View<'_>) -> R) -> PyResult<R> {
        let p = self.lent.get("View")?;
        // SAFETY: the pointer is non-null only while the tick that lent it runs (the guard clears it), so the
        // view it points to is alive; the host only reads it during the tick, and we only read it here.
        Ok(f(unsafe { &*p }))
    }

    fn tank_view<R>(&self, target: &Bound<'_, PyAny>, f: impl FnOnce(&View<'_>, &TankView) -> R) -> PyResult<R> {
        let id: u8 = match target.downcast::<PyTank>() {
            Ok(t) => t.get().id,
            Err(_) => target.extract().map_err(|_| PyValueError::new_err("a target is a Tank or a player id"))?,
        };
        self.with(|v| v.tank(id).map(|t| f(v, t)))?
            .ok_or_else(|| PyValueError::new_err(format!("no tank with player id {id} in this view")))
    }
}

#[pymethods]
impl PyView {
    /// Seconds since the host started.
    #[getter]
    fn time(&self) -> PyResult<f32> {
        self.with(|v| v.time)
    }

    /// Seconds since this bot's previous tick.
    #[getter]
    fn dt(&self) -> PyResult<f32> {
        self.with(|v| v.dt)
    }

    /// Our own tank.
    #[getter]
    fn me(&self) -> PyResult<PyMe> {
        self.with(|v| {
            let m = &v.me;
            PyMe {
                id: m.id,
                callsign: m.callsign.to_owned(),
                team: m.team.name(),
                pos: t3(m.tank.pos),
                vel: t3(m.tank.vel),
                azimuth: m.tank.azimuth,
                alive: m.alive(),
                reload: m.reload,
                flag: flag_text(m.tank.flag),
            }
        })
    }

    /// Every other player with a tank (observers excluded), by id.
    #[getter]
    fn players(&self) -> PyResult<Vec<PyTank>> {
        self.with(|v| v.tanks().iter().map(|t| PyTank::of(t, v)).collect())
    }

    /// Live enemy tanks that are not paused, nearest first.
    fn enemies(&self) -> PyResult<Vec<PyTank>> {
        self.with(|v| v.enemies().into_iter().map(|t| PyTank::of(t, v)).collect())
    }

    /// Every flag of the server.
    #[getter]
    fn flags(&self) -> PyResult<Vec<PyFlag>> {
        self.with(|v| {
            v.flags()
                .map(|f| PyFlag {
                    index: f.index,
                    kind: f.abbv.as_string(),
                    status: status_name(f.status),
                    owner: f.owner,
                    pos: t3(f.pos),
                    team: f.team.map(Team::name),
                })
                .collect()
        })
    }

    /// Every live shot, ours included.
    #[getter]
    fn shots(&self) -> PyResult<Vec<PyShot>> {
        self.with(|v| {
            v.shots()
                .map(|s| {
                    let age = s.age(v.now);
                    PyShot {
                        shooter: s.shooter,
                        shot_id: s.shot_id,
                        team: s.team.name(),
                        flag: flag_text(s.flag),
                        pos: s.position_at(age).map(t3),
                        vel: t3(s.velocity),
                        age,
                    }
                })
                .collect()
        })
    }

    /// The game type: "ctf", "team_ffa", "open_ffa" or "rabbit".
    #[getter]
    fn game_type(&self) -> PyResult<&'static str> {
        use bzhead::bot::GameType;
        self.with(|v| match v.game_type() {
            GameType::Ctf => "ctf",
            GameType::TeamFfa => "team_ffa",
            GameType::OpenFfa => "open_ffa",
            GameType::Rabbit => "rabbit",
        })
    }

    /// A server variable's text (`view.var("_tankSpeed")`), or None when the server has not set it.
    fn var(&self, name: &str) -> PyResult<Option<String>> {
        self.with(|v| v.var(name).map(str::to_owned))
    }

    /// One player's tank, or None.
    fn tank(&self, id: u8) -> PyResult<Option<PyTank>> {
        self.with(|v| v.tank(id).map(|t| PyTank::of(t, v)))
    }

    /// Whether a player of `team` (a team name) is our enemy.
    fn is_hostile(&self, team: &str) -> PyResult<bool> {
        let t = Team::parse(team).ok_or_else(|| PyValueError::new_err(format!("unknown team {team:?}")))?;
        self.with(|v| v.is_hostile(t))
    }

    /// The world: line of sight, ground height, size.
    #[getter]
    fn world(slf: Py<Self>) -> PyWorld {
        PyWorld { view: slf }
    }

    /// Tank speed and turn rate and shot speed of this server: `(tank_speed, tank_ang_vel, shot_speed)`.
    #[getter]
    fn physics(&self) -> PyResult<(f32, f32, f32)> {
        self.with(|v| (v.phys.tank_speed, v.phys.tank_ang_vel, v.phys.shot_speed))
    }

    fn __repr__(&self) -> String {
        match self.with(|v| (v.time, v.me.id, v.tanks().len())) {
            Ok((t, id, n)) => format!("View(time={t:.2}, me={id}, players={n})"),
            Err(_) => "View(<outside a tick>)".into(),
        }
    }
}

impl PyView {
    /// [`View::lead`] on a target (a `Tank` or a player id).
    pub(crate) fn solution(&self, target: &Bound<'_, PyAny>) -> PyResult<Option<PyFiringSolution>> {
        self.tank_view(target, |v, t| v.lead(t).map(PyFiringSolution::from))
    }

    /// [`View::bank_shot`] on a target.
    pub(crate) fn bank_shot(&self, target: &Bound<'_, PyAny>) -> PyResult<Option<PyFiringSolution>> {
        self.tank_view(target, |v, t| v.bank_shot(t).map(PyFiringSolution::from))
    }

    /// [`View::threats`].
    pub(crate) fn threats(&self, horizon: f32) -> PyResult<Vec<PyThreat>> {
        if !(horizon.is_finite() && horizon >= 0.0) {
            return Err(PyValueError::new_err("horizon must be a finite number of seconds >= 0"));
        }
        self.with(|v| {
            v.threats(horizon)
                .iter()
                .map(|t| PyThreat {
                    shooter: t.shooter,
                    shot_id: t.shot_id,
                    time: t.time,
                    contact: t.contact,
                    miss: t.miss,
                    hit_radius: t.hit_radius,
                })
                .collect()
        })
    }

    /// [`View::dodge`] from the threats of the next `horizon` seconds: `(speed, turn, jump)` or None.
    pub(crate) fn dodge(&self, horizon: f32) -> PyResult<Option<(f32, f32, bool)>> {
        if !(horizon.is_finite() && horizon >= 0.0) {
            return Err(PyValueError::new_err("horizon must be a finite number of seconds >= 0"));
        }
        self.with(|v| {
            let threats = v.threats(horizon);
            if threats.is_empty() {
                return None;
            }
            v.dodge(&threats).map(|c| (c.speed, c.turn, c.jump))
        })
    }

    /// [`View::path_to`]: the waypoints from our tank to `goal`, or None.
    pub(crate) fn path_to(&self, goal: Vec2) -> PyResult<Option<Vec<(f32, f32)>>> {
        self.with(|v| v.path_to(goal).map(|p| p.waypoints.iter().map(|w| (w.x, w.y)).collect()))
    }
}

/// The world of the view it came from (valid during the same tick).
#[pyclass(name = "World", module = "bzhead", frozen)]
pub struct PyWorld {
    view: Py<PyView>,
}

#[pymethods]
impl PyWorld {
    /// True when a shot from `a` would reach `b` (points (x, y, z); nothing that stops shots in between).
    fn line_of_sight(&self, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
        let (a, b) = (point(a, 0.0)?, point(b, 0.0)?);
        self.view.get().with(|v| v.world.line_of_sight(a, b))
    }

    /// The height of the surface a tank at `p` would stand on: (x, y) for the highest one, (x, y, z) for the
    /// highest at or below z.
    fn ground_height(&self, p: &Bound<'_, PyAny>) -> PyResult<f32> {
        let p = point(p, 1.0e5)?;
        self.view.get().with(|v| v.world.ground(p).height)
    }

    /// The side of the square world (the world spans -size/2 .. size/2 on x and y).
    #[getter]
    fn size(&self) -> PyResult<f32> {
        self.view.get().with(|v| v.world.world_size)
    }

    /// The water level, or None when the world has no water.
    #[getter]
    fn water_level(&self) -> PyResult<Option<f32>> {
        self.view.get().with(|v| v.world.water_level)
    }

    /// The centres (x, y, z) of a team's bases (a team name).
    fn bases(&self, team: &str) -> PyResult<Vec<(f32, f32, f32)>> {
        let t = Team::parse(team).ok_or_else(|| PyValueError::new_err(format!("unknown team {team:?}")))?;
        self.view.get().with(|v| v.bases(t).map(|b| t3(b.pos)).collect())
    }

    fn __repr__(&self) -> String {
        match self.view.get().with(|v| v.world.world_size) {
            Ok(s) => format!("World(size={s})"),
            Err(_) => "World(<outside a tick>)".into(),
        }
    }
}

/// What a bot asks its tank to do during one tick.
#[pyclass(name = "Control", module = "bzhead", frozen)]
pub struct PyControl {
    lent: Lent<Control>,
}

impl PyControl {
    pub(crate) fn new() -> PyControl {
        PyControl { lent: Lent::new() }
    }

    pub(crate) fn lend<'a>(&'a self, control: &'a mut Control) -> LendGuard<'a, Control> {
        self.lent.lend(control as *mut Control)
    }

    fn with<R>(&self, f: impl FnOnce(&mut Control) -> R) -> PyResult<R> {
        let p = self.lent.get("Control")?;
        // SAFETY: non-null only during the tick that lent it, where the host has handed us the only reference
        // (`&mut Control`); `f` is plain Rust, so no other access to it can start before it returns.
        Ok(f(unsafe { &mut *p }))
    }
}

#[pymethods]
impl PyControl {
    /// Sets speed (-0.5 full reverse .. 1 full ahead, a fraction of _tankSpeed) and turn (-1 full right .. 1 full
    /// left); they stay set until changed.
    fn drive(&self, speed: f32, turn: f32) -> PyResult<()> {
        self.with(|c| c.drive(speed, turn))
    }

    /// Stops the tank (speed and turn 0).
    fn stop(&self) -> PyResult<()> {
        self.with(Control::stop)
    }

    /// Fires this tick (when a shot is loaded).
    fn fire(&self) -> PyResult<()> {
        self.with(|c| c.fire = true)
    }

    /// Jumps this tick (when the server allows jumping).
    fn jump(&self) -> PyResult<()> {
        self.with(|c| c.jump = true)
    }

    /// Drops the flag we carry this tick.
    fn drop_flag(&self) -> PyResult<()> {
        self.with(|c| c.drop_flag = true)
    }

    /// Says `text` to everybody (`to`: a player id to say it to one player only).
    #[pyo3(signature = (text, to = None))]
    fn say(&self, text: String, to: Option<u8>) -> PyResult<()> {
        self.with(|c| match to {
            Some(id) => c.say_to(id, text),
            None => c.say(text),
        })
    }

    /// The speed set (fraction of _tankSpeed).
    #[getter]
    fn speed(&self) -> PyResult<f32> {
        self.with(|c| c.speed)
    }

    /// The turn rate set (fraction of _tankAngVel).
    #[getter]
    fn turn(&self) -> PyResult<f32> {
        self.with(|c| c.turn)
    }

    /// Grab flags the tank drives over (default True).
    #[getter]
    fn get_grab(&self) -> PyResult<bool> {
        self.with(|c| c.grab)
    }

    #[setter]
    fn set_grab(&self, on: bool) -> PyResult<()> {
        self.with(|c| c.grab = on)
    }

    /// The player a guided missile fired now locks on (a player id or None).
    #[getter]
    fn get_target(&self) -> PyResult<Option<u8>> {
        self.with(|c| c.target)
    }

    #[setter]
    fn set_target(&self, id: Option<u8>) -> PyResult<()> {
        self.with(|c| c.target = id)
    }

    fn __repr__(&self) -> String {
        match self.with(|c| (c.speed, c.turn)) {
            Ok((s, t)) => format!("Control(speed={s}, turn={t})"),
            Err(_) => "Control(<outside a tick>)".into(),
        }
    }
}
