//! `spillway.WriteBatch`: puts, deletes and merges applied at once by `Db.write`, or by the
//! end of a `with db.batch() as b:` block.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::db::PyDb;
use crate::keyspace::PyKeyspace;
use crate::with_bytes;

/// A batch's writes, and the store whose keyspaces they write into if any does.
#[derive(Default)]
struct Writes {
    batch: spillway::WriteBatch,
    /// Set by the first write given a `keyspace=` (a bound batch's is its store's).
    store: Option<Py<PyDb>>,
}

/// Writes applied atomically: all of them or none survive a crash. Each write goes to the
/// default keyspace, or to the keyspace given as `keyspace=` (a `Keyspace` of the store the
/// batch is written into): one batch may write into many keyspaces, atomically.
#[pyclass(name = "WriteBatch", module = "spillway")]
pub struct PyWriteBatch {
    writes: Mutex<Writes>,
    /// The store a `db.batch()` writes into when its `with` block ends, and with which sync.
    target: Option<(Py<PyDb>, bool)>,
}

impl PyWriteBatch {
    pub fn bound_to(db: Py<PyDb>, sync: bool) -> PyWriteBatch {
        PyWriteBatch {
            writes: Mutex::default(),
            target: Some((db, sync)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Writes> {
        self.writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The batch's writes, leaving it empty.
    pub fn take(&self) -> spillway::WriteBatch {
        std::mem::take(&mut *self.lock()).batch
    }

    /// The batch's writes, to be written into `db`, leaving it empty; a `ValueError`, and
    /// the batch kept as it is, if they write into keyspaces of another store.
    pub fn take_for(&self, db: &Py<PyDb>) -> PyResult<spillway::WriteBatch> {
        let mut writes = self.lock();
        if let Some(store) = &writes.store {
            if store.as_ptr() != db.as_ptr() {
                return Err(PyValueError::new_err(
                    "the batch writes into keyspaces of another store",
                ));
            }
        }
        Ok(std::mem::take(&mut *writes).batch)
    }

    /// Add a write, into `keyspace` or the default keyspace: `default` or `in_ks` on the
    /// engine's batch.
    fn add(
        &self,
        py: Python<'_>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
        default: impl FnOnce(&mut spillway::WriteBatch),
        in_ks: impl FnOnce(&mut spillway::WriteBatch, &spillway::Keyspace),
    ) -> PyResult<()> {
        let mut writes = self.lock();
        let Some(ks) = keyspace else {
            default(&mut writes.batch);
            return Ok(());
        };
        let ks = ks.borrow();
        let handle = match (&self.target, &writes.store) {
            (Some((db, _)), _) | (None, Some(db)) => ks.handle_in(db)?,
            (None, None) => {
                let handle = ks.handle_in(ks.db())?;
                writes.store = Some(ks.db().clone_ref(py));
                handle
            }
        };
        in_ks(&mut writes.batch, &handle);
        Ok(())
    }
}

#[pymethods]
impl PyWriteBatch {
    #[new]
    fn new() -> PyWriteBatch {
        PyWriteBatch {
            writes: Mutex::default(),
            target: None,
        }
    }

    /// Set `key` to `value` in `keyspace` (`None`: the default keyspace).
    #[pyo3(signature = (key, value, *, keyspace=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        with_bytes(key, |k| {
            with_bytes(value, |v| {
                self.add(py, keyspace, |b| b.put(k, v), |b, ks| b.put_in(ks, k, v))
            })
        })??
    }

    /// Delete `key` from `keyspace` (`None`: the default keyspace).
    #[pyo3(signature = (key, *, keyspace=None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        with_bytes(key, |k| {
            self.add(py, keyspace, |b| b.delete(k), |b, ks| b.delete_in(ks, k))
        })?
    }

    /// Merge `operand` into `key` in `keyspace` (`None`: the default keyspace), folded by
    /// that keyspace's merge operator.
    #[pyo3(signature = (key, operand, *, keyspace=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        with_bytes(key, |k| {
            with_bytes(operand, |o| {
                self.add(
                    py,
                    keyspace,
                    |b| b.merge(k, o),
                    |b, ks| b.merge_in(ks, k, o),
                )
            })
        })??
    }

    /// Forget every write added so far.
    fn clear(&self) {
        self.take();
    }

    fn __len__(&self) -> usize {
        self.lock().batch.len()
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, None)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Write the batch into its store if the block ended without an exception.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<PyObject>,
        _value: Option<PyObject>,
        _traceback: Option<PyObject>,
    ) -> PyResult<bool> {
        match (&self.target, kind) {
            (Some((db, sync)), None) => PyDb::write(db.bind(py), self, *sync)?,
            _ => {
                self.take(); // an exception: nothing is written
            }
        }
        Ok(false)
    }
}
