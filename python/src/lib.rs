//! The `spillway` Python package's native module: a [`Db`](db::PyDb) over `spillway::Db`,
//! its keyspaces and transactions, write batches, iterators, and the exceptions. Keys and values are `bytes` (a `str` is
//! taken as its UTF-8 encoding); every call that may touch the disk releases the GIL, so
//! threads run at once.

use pyo3::prelude::*;

mod batch;
mod db;
mod errors;
mod expiry;
mod iter;
mod keyspace;
mod options;
mod snapshot;
mod stats;
mod transaction;

/// Read `obj` as key or value bytes: `bytes`, `bytearray`, or `str` as UTF-8.
pub(crate) fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    with_bytes(obj, <[u8]>::to_vec)
}

/// Call `f` with `obj`'s bytes ([`bytes_of`]), copying nothing for a `bytes` object: a batch
/// of small records spends most of its time here otherwise.
pub(crate) fn with_bytes<T>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> T) -> PyResult<T> {
    if let Ok(b) = obj.downcast::<pyo3::types::PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(s) = obj.downcast::<pyo3::types::PyString>() {
        return Ok(f(s.to_cow()?.as_bytes()));
    }
    if let Ok(b) = obj.downcast::<pyo3::types::PyByteArray>() {
        return Ok(f(&b.to_vec()));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "keys and values are bytes or str, not {}",
        obj.get_type().name()?
    )))
}

/// A value as a Python `bytes`.
pub(crate) fn py_bytes(py: Python<'_>, v: Vec<u8>) -> PyObject {
    pyo3::types::PyBytes::new(py, &v).into_any().unbind()
}

/// `multi_get`'s answer: a list of `bytes`, `None` where absent.
pub(crate) fn py_values(
    py: Python<'_>,
    values: Vec<Option<Vec<u8>>>,
) -> PyResult<Py<pyo3::types::PyList>> {
    let values = values.into_iter().map(|v| v.map(|v| py_bytes(py, v)));
    Ok(pyo3::types::PyList::new(py, values)?.unbind())
}

/// Check the store at `path`, reading every checksum and structure and writing nothing (no
/// writer may have it open): a dict of what it found. `sound` is whether `problems` (damage,
/// each naming its file and place) is empty; `lists`, `pages`, `records` and `log_records`
/// count what was read; `unreachable` names files no manifest needs (harmless: the next open
/// removes them) and `notes` facts that are not problems (a torn log tail, ...).
#[pyfunction]
fn check(py: Python<'_>, path: std::path::PathBuf) -> PyResult<PyObject> {
    let report = py
        .allow_threads(|| spillway::check(&path, false))
        .map_err(errors::to_py)?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("sound", report.is_sound())?;
    d.set_item("lists", report.lists)?;
    d.set_item("pages", report.pages)?;
    d.set_item("records", report.records)?;
    d.set_item("log_records", report.log_records)?;
    d.set_item("problems", report.problems)?;
    let unreachable: Vec<String> = report
        .unreachable
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    d.set_item("unreachable", unreachable)?;
    d.set_item("notes", report.notes)?;
    Ok(d.into_any().unbind())
}

#[pymodule]
fn _spillway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::PyDb>()?;
    m.add_class::<batch::PyWriteBatch>()?;
    m.add_class::<iter::PyIter>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_class::<keyspace::PyKeyspace>()?;
    m.add_class::<transaction::PyTransaction>()?;
    m.add_class::<expiry::PyManualClock>()?;
    m.add_function(wrap_pyfunction!(db::open, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("MAX_KEY_LEN", spillway::MAX_KEY_LEN)?;
    m.add("MAX_VALUE_LEN", spillway::MAX_VALUE_LEN)?;
    m.add("OPTIONS", options::table(m.py())?)?;
    errors::register(m)
}
