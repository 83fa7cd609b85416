//! `bzhead._native`: the Python extension of the `bzhead` package (see `python/bzhead/__init__.pyi`).
//!
//! A thin layer: conversions at the edge, the game in the `bzhead` crate.
//!
//! * [`host`]: `BotHost`, Python bots on the crate's bot host;
//! * [`env`]: `EnvCore`, the native half of the learning environments of `bzhead.env`;
//! * [`view`]: `View`, `Control`, `World` and the plain objects a view hands out (tanks, flags, shots, ...);
//! * [`observe`]: `observe()`, an observer session as an iterator of event dicts;
//! * [`query`]: `query()`, `scan()` and `protocols()`;
//! * the aiming, danger and planning helpers below, which the `bzhead.aim`, `bzhead.danger` and `bzhead.nav`
//!   modules wrap.

use glam::Vec2;
use pyo3::prelude::*;

mod env;
mod host;
mod json;
mod observe;
mod query;
mod view;

use view::{PyFiringSolution, PyThreat, PyView};

/// `aim.solution(view, target)`.
#[pyfunction]
fn aim_solution(view: &Bound<'_, PyView>, target: &Bound<'_, PyAny>) -> PyResult<Option<PyFiringSolution>> {
    view.get().solution(target)
}

/// `aim.bank_shot(view, target)`.
#[pyfunction]
fn aim_bank_shot(view: &Bound<'_, PyView>, target: &Bound<'_, PyAny>) -> PyResult<Option<PyFiringSolution>> {
    view.get().bank_shot(target)
}

/// `danger.threats(view, horizon)`.
#[pyfunction]
fn danger_threats(view: &Bound<'_, PyView>, horizon: f32) -> PyResult<Vec<PyThreat>> {
    view.get().threats(horizon)
}

/// `danger.dodge(view, horizon)`.
#[pyfunction]
fn danger_dodge(view: &Bound<'_, PyView>, horizon: f32) -> PyResult<Option<(f32, f32, bool)>> {
    view.get().dodge(horizon)
}

/// `nav.path_to(view, goal)`.
#[pyfunction]
fn nav_path_to(view: &Bound<'_, PyView>, goal: &Bound<'_, PyAny>) -> PyResult<Option<Vec<(f32, f32)>>> {
    let g = view::point(goal, 0.0)?;
    view.get().path_to(Vec2::new(g.x, g.y))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<host::PyBotHost>()?;
    m.add_class::<env::PyEnvCore>()?;
    m.add_class::<view::PyView>()?;
    m.add_class::<view::PyControl>()?;
    m.add_class::<view::PyWorld>()?;
    m.add_class::<view::PyTank>()?;
    m.add_class::<view::PyMe>()?;
    m.add_class::<view::PyFlag>()?;
    m.add_class::<view::PyShot>()?;
    m.add_class::<view::PyFiringSolution>()?;
    m.add_class::<view::PyThreat>()?;
    m.add_class::<observe::PyObserver>()?;
    m.add_function(wrap_pyfunction!(observe::observe, m)?)?;
    m.add_function(wrap_pyfunction!(query::query, m)?)?;
    m.add_function(wrap_pyfunction!(query::scan, m)?)?;
    m.add_function(wrap_pyfunction!(query::protocols, m)?)?;
    m.add_function(wrap_pyfunction!(aim_solution, m)?)?;
    m.add_function(wrap_pyfunction!(aim_bank_shot, m)?)?;
    m.add_function(wrap_pyfunction!(danger_threats, m)?)?;
    m.add_function(wrap_pyfunction!(danger_dodge, m)?)?;
    m.add_function(wrap_pyfunction!(nav_path_to, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// Lets a `&mut` of the thread's own event loop into [`Python::allow_threads`], which asks for `Send` only to keep
/// Python objects from being touched without the GIL.
pub(crate) struct Unlocked<'a, T>(pub &'a mut T);

// SAFETY: `allow_threads` runs the closure on the calling thread, so the value never changes threads. What it
// reaches of Python while the GIL is released goes through `Python::with_gil` (the bots' ticks), never around it.
// The one `unsafe` site of this kind left: the event loop holds `Rc`s and plugin instances, so it is not `Send`,
// and PyO3 has no safe way to release the GIL around a `!Send` value on its own thread (`Ungil` is `Send` on
// stable Rust).
unsafe impl<T> Send for Unlocked<'_, T> {}

impl<T> Unlocked<'_, T> {
    /// Runs `f` on the value with the GIL released, so that other Python threads run while the loop waits.
    pub(crate) fn run<R: Send>(self, py: Python<'_>, f: impl FnOnce(&mut T) -> R + Send) -> R {
        py.allow_threads(move || {
            let this = self;
            f(this.0)
        })
    }
}
