//! `spillway.WriteBatch`: puts, deletes and merges applied at once by `Db.write`, or by the
//! end of a `with db.batch() as b:` block.

use std::sync::Mutex;

use pyo3::prelude::*;

use crate::db::PyDb;
use crate::with_bytes;

/// Writes applied atomically: all of them or none survive a crash.
#[pyclass(name = "WriteBatch", module = "spillway")]
pub struct PyWriteBatch {
    batch: Mutex<spillway::WriteBatch>,
    /// The store a `db.batch()` writes into when its `with` block ends, and with which sync.
    target: Option<(Py<PyDb>, bool)>,
}

impl PyWriteBatch {
    pub fn bound_to(db: Py<PyDb>, sync: bool) -> PyWriteBatch {
        PyWriteBatch {
            batch: Mutex::new(spillway::WriteBatch::new()),
            target: Some((db, sync)),
        }
    }

    /// The batch's writes, leaving it empty.
    pub fn take(&self) -> spillway::WriteBatch {
        std::mem::take(&mut *self.batch.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn with<T>(&self, f: impl FnOnce(&mut spillway::WriteBatch) -> T) -> T {
        f(&mut self.batch.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

#[pymethods]
impl PyWriteBatch {
    #[new]
    fn new() -> PyWriteBatch {
        PyWriteBatch {
            batch: Mutex::new(spillway::WriteBatch::new()),
            target: None,
        }
    }

    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        with_bytes(key, |k| with_bytes(value, |v| self.with(|b| b.put(k, v))))?
    }

    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        with_bytes(key, |k| self.with(|b| b.delete(k)))
    }

    fn merge(&self, key: &Bound<'_, PyAny>, operand: &Bound<'_, PyAny>) -> PyResult<()> {
        with_bytes(key, |k| {
            with_bytes(operand, |o| self.with(|b| b.merge(k, o)))
        })?
    }

    /// Forget every write added so far.
    fn clear(&self) {
        self.take();
    }

    fn __len__(&self) -> usize {
        self.with(|b| b.len())
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(key, value)
    }

    fn __delitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(key)
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
            (Some((db, sync)), None) => db.borrow(py).write(py, self, *sync)?,
            _ => {
                self.take(); // an exception: nothing is written
            }
        }
        Ok(false)
    }
}
