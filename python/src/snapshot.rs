//! `spillway.Snapshot`: reads that all see the store as it was at one moment.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use crate::{bytes_of, py_bytes, py_values};

type Snap<'db> = spillway::Snapshot<'db>;

self_cell::self_cell!(
    /// A snapshot and the store it borrows, kept alive together.
    struct Pinned {
        owner: Arc<spillway::Db>,
        #[covariant]
        dependent: Snap,
    }
);

/// The store as it was when `Db.snapshot()` took it: later writes are not seen. It keeps what
/// it sees on disk and in memory until released (`release()`, or the end of its `with`
/// block), so hold one for a read, not for hours.
#[pyclass(name = "Snapshot", module = "spillway")]
pub struct PySnapshot {
    /// `None` once released.
    pinned: Mutex<Option<Pinned>>,
}

impl PySnapshot {
    pub fn of(db: Arc<spillway::Db>) -> PySnapshot {
        PySnapshot {
            pinned: Mutex::new(Some(Pinned::new(db, |db| db.snapshot()))),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Snap<'_>) -> T) -> PyResult<T> {
        let guard = self.pinned.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(p) => Ok(f(p.borrow_dependent())),
            None => Err(ClosedError::new_err("the snapshot was released")),
        }
    }
}

#[pymethods]
impl PySnapshot {
    /// The value `key` had, or `default` if it was absent.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<Option<PyObject>> {
        let key = bytes_of(key)?;
        let value = py
            .allow_threads(|| self.with(|s| s.get(&key)))?
            .map_err(to_py)?;
        Ok(match value {
            Some(v) => Some(py_bytes(py, v)),
            None => default,
        })
    }

    fn multi_get(&self, py: Python<'_>, keys: Vec<Bound<'_, PyAny>>) -> PyResult<Py<PyList>> {
        let keys = keys.iter().map(bytes_of).collect::<PyResult<Vec<_>>>()?;
        let values = py
            .allow_threads(|| self.with(|s| s.multi_get(&keys)))?
            .map_err(to_py)?;
        py_values(py, values)
    }

    /// Every key and value at the snapshot's moment.
    fn iter(&self) -> PyResult<PyIter> {
        self.with(|s| PyIter::new(s.iter(), false))
    }

    /// `Db.range` at the snapshot's moment (ordered stores).
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        let (lo, hi) = crate::iter::key_range(start, end)?;
        let it = self
            .with(|s| s.range::<Vec<u8>, _>((lo, hi)))?
            .map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// `Db.prefix` at the snapshot's moment (ordered stores).
    #[pyo3(signature = (prefix, reverse=false))]
    fn prefix(&self, prefix: &Bound<'_, PyAny>, reverse: bool) -> PyResult<PyIter> {
        let prefix = bytes_of(prefix)?;
        let it = self.with(|s| s.prefix(&prefix))?.map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// Let go of what the snapshot keeps; later reads raise `ClosedError`.
    fn release(&self) {
        self.pinned.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.get(py, key, None)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key, None)?.is_some())
    }

    fn __iter__(&self) -> PyResult<PyIter> {
        Ok(self.iter()?.keys_only())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _kind: Option<PyObject>,
        _value: Option<PyObject>,
        _traceback: Option<PyObject>,
    ) -> bool {
        self.release();
        false
    }
}
