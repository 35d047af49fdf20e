//! The `spillway` Python package's native module: a [`Db`](db::PyDb) over `spillway::Db`,
//! write batches, iterators, and the exceptions. Keys and values are `bytes` (a `str` is
//! taken as its UTF-8 encoding); every call that may touch the disk releases the GIL, so
//! threads run at once.

use pyo3::prelude::*;

mod batch;
mod db;
mod errors;
mod iter;
mod options;
mod snapshot;
mod stats;

/// Read `obj` as key or value bytes: `bytes`, `bytearray`, `memoryview`-free `str` as UTF-8.
pub(crate) fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.downcast::<pyo3::types::PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    if let Ok(b) = obj.downcast::<pyo3::types::PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.downcast::<pyo3::types::PyByteArray>() {
        return Ok(b.to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "keys and values are bytes or str, not {}",
        obj.get_type().name()?
    )))
}

/// Check the store at `path` (every checksum, every structure; it must not be open for
/// writing): a dict of what it found.
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
    d.set_item("notes", report.notes)?;
    Ok(d.into_any().unbind())
}

#[pymodule]
fn _spillway(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::PyDb>()?;
    m.add_class::<batch::PyWriteBatch>()?;
    m.add_class::<iter::PyIter>()?;
    m.add_class::<snapshot::PySnapshot>()?;
    m.add_function(wrap_pyfunction!(db::open, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("MAX_KEY_LEN", spillway::MAX_KEY_LEN)?;
    m.add("MAX_VALUE_LEN", spillway::MAX_VALUE_LEN)?;
    errors::register(m)
}
