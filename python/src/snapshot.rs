//! `spillway.Snapshot`: reads that all see the store as it was at one moment.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::db::PyDb;
use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use crate::keyspace::PyKeyspace;
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

/// The store as it was when `Db.snapshot()` took it, in every keyspace at once: later writes
/// are not seen. Reads are of the default keyspace, or of the `Keyspace` given as
/// `keyspace=`. It keeps what it sees on disk and in memory until released (`release()`, or
/// the end of its `with` block), so hold one for a read, not for hours.
#[pyclass(name = "Snapshot", module = "spillway")]
pub struct PySnapshot {
    /// `None` once released.
    pinned: Mutex<Option<Pinned>>,
    /// The store, to check that a `keyspace=` is one of its keyspaces.
    store: Py<PyDb>,
}

impl PySnapshot {
    pub fn of(store: Py<PyDb>, db: Arc<spillway::Db>) -> PySnapshot {
        PySnapshot {
            pinned: Mutex::new(Some(Pinned::new(db, |db| db.snapshot()))),
            store,
        }
    }

    /// The engine's handle of `keyspace`, `None` for the default keyspace.
    fn keyspace(
        &self,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<spillway::Keyspace>> {
        keyspace
            .map(|ks| ks.borrow().handle_in(&self.store))
            .transpose()
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
    /// The value `key` had in `keyspace` (`None`: the default keyspace), or `default` if it
    /// was absent.
    #[pyo3(signature = (key, default=None, *, keyspace=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<PyObject>> {
        let (ks, key) = (self.keyspace(keyspace)?, bytes_of(key)?);
        let value = py
            .allow_threads(|| {
                self.with(|s| match &ks {
                    Some(ks) => s.get_in(ks, &key),
                    None => s.get(&key),
                })
            })?
            .map_err(to_py)?;
        Ok(match value {
            Some(v) => Some(py_bytes(py, v)),
            None => default,
        })
    }

    /// The values `keys` had in `keyspace` (`None`: the default keyspace), `None` where
    /// absent.
    #[pyo3(signature = (keys, *, keyspace=None))]
    fn multi_get(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Py<PyList>> {
        let ks = self.keyspace(keyspace)?;
        let keys = keys.iter().map(bytes_of).collect::<PyResult<Vec<_>>>()?;
        let values = py
            .allow_threads(|| {
                self.with(|s| match &ks {
                    Some(ks) => s.multi_get_in(ks, &keys),
                    None => s.multi_get(&keys),
                })
            })?
            .map_err(to_py)?;
        py_values(py, values)
    }

    /// Every key and value of `keyspace` (`None`: the default keyspace) at the snapshot's
    /// moment.
    #[pyo3(signature = (*, keyspace=None))]
    fn iter(&self, keyspace: Option<&Bound<'_, PyKeyspace>>) -> PyResult<PyIter> {
        let ks = self.keyspace(keyspace)?;
        let it = self.with(|s| match &ks {
            Some(ks) => s.iter_in(ks),
            None => Ok(s.iter()),
        })?;
        Ok(PyIter::new(it.map_err(to_py)?, false))
    }

    /// `Db.range` (or `Keyspace.range` of `keyspace`) at the snapshot's moment (ordered
    /// keyspaces).
    #[pyo3(signature = (start=None, end=None, reverse=false, *, keyspace=None))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<PyIter> {
        let ks = self.keyspace(keyspace)?;
        let bounds = crate::iter::key_range(start, end)?;
        let it = self
            .with(|s| match &ks {
                Some(ks) => s.range_in::<Vec<u8>, _>(ks, bounds),
                None => s.range::<Vec<u8>, _>(bounds),
            })?
            .map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// `Db.prefix` (or `Keyspace.prefix` of `keyspace`) at the snapshot's moment (ordered
    /// keyspaces).
    #[pyo3(signature = (prefix, reverse=false, *, keyspace=None))]
    fn prefix(
        &self,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<PyIter> {
        let (ks, prefix) = (self.keyspace(keyspace)?, bytes_of(prefix)?);
        let it = self
            .with(|s| match &ks {
                Some(ks) => s.prefix_in(ks, &prefix),
                None => s.prefix(&prefix),
            })?
            .map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// Let go of what the snapshot keeps; later reads raise `ClosedError`.
    fn release(&self) {
        self.pinned.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.get(py, key, None, None)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key, None, None)?.is_some())
    }

    fn __iter__(&self) -> PyResult<PyIter> {
        Ok(self.iter(None)?.keys_only())
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
