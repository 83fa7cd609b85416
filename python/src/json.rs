//! JSON text from the crate's writers to Python objects, through Python's own `json.loads` (C-accelerated), so a
//! dict has exactly the shape of the line the CLI prints.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

static LOADS: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

/// `json.loads(text)`.
pub(crate) fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let f =
        LOADS.get_or_try_init(py, || -> PyResult<Py<PyAny>> { Ok(py.import("json")?.getattr("loads")?.unbind()) })?;
    f.bind(py).call1((text,))
}
