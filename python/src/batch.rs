//! `spillway.WriteBatch`: puts, deletes, merges and changes of expiry applied at once by `Db.write`, or by the
//! end of a `with db.batch() as b:` block.

use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::db::PyDb;
use crate::keyspace::PyKeyspace;
use crate::{expiry, with_bytes};

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

    /// When a write given `ttl` now expires: by the clock of the store the batch is known to
    /// write into (its own, or `keyspace`'s), else by the wall clock.
    fn expires_after(
        &self,
        py: Python<'_>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<SystemTime> {
        let ttl = expiry::ttl_arg(ttl)?;
        let store = match (&self.target, keyspace) {
            (Some((db, _)), _) => Some(db.clone_ref(py)),
            (None, Some(ks)) => Some(ks.borrow().db().clone_ref(py)),
            (None, None) => self.lock().store.as_ref().map(|db| db.clone_ref(py)),
        };
        match store {
            Some(db) => expiry::after(&*db.borrow(py).clock()?, ttl),
            None => expiry::after(&spillway::SystemClock, ttl),
        }
    }

    fn add_expiring(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        at: SystemTime,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        with_bytes(key, |k| {
            with_bytes(value, |v| {
                self.add(
                    py,
                    keyspace,
                    |b| b.put_expiring(k, v, at),
                    |b, ks| b.put_expiring_in(ks, k, v, at),
                )
            })
        })??
    }

    /// An `expire` at `at`, or a `persist` if `at` is `None`.
    fn add_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        at: Option<SystemTime>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        with_bytes(key, |k| match at {
            Some(at) => self.add(
                py,
                keyspace,
                |b| b.expire(k, at),
                |b, ks| b.expire_in(ks, k, at),
            ),
            None => self.add(py, keyspace, |b| b.persist(k), |b, ks| b.persist_in(ks, k)),
        })?
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

    /// Set `key` to `value` in `keyspace` (`None`: the default keyspace). `ttl` (seconds or a
    /// `timedelta`, more than 0) makes the value expire that long after this call — not after
    /// the batch is written — by the clock of the batch's store if it is known here (a
    /// `db.batch()`'s store, or that of a `keyspace=` given to this batch), else by the wall
    /// clock; `put_expiring` takes a time instead. `None`: the value does not expire.
    #[pyo3(signature = (key, value, ttl=None, *, keyspace=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        if let Some(ttl) = ttl {
            let at = self.expires_after(py, keyspace, ttl)?;
            return self.add_expiring(py, key, value, at, keyspace);
        }
        with_bytes(key, |k| {
            with_bytes(value, |v| {
                self.add(py, keyspace, |b| b.put(k, v), |b, ks| b.put_in(ks, k, v))
            })
        })??
    }

    /// Set `key` to `value` in `keyspace`, expiring at `at` (an aware `datetime` or a Unix
    /// timestamp; see `Db.put_expiring`).
    #[pyo3(signature = (key, value, at, *, keyspace=None))]
    fn put_expiring(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        at: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let at = expiry::time_arg("at", at)?;
        self.add_expiring(py, key, value, at, keyspace)
    }

    /// Make `key` of `keyspace` expire `ttl` after this call (seconds or a `timedelta`, more
    /// than 0; the clock as for `put`'s `ttl`), if it is there when the batch is written;
    /// nothing if it is absent then (see `Db.expire`).
    #[pyo3(signature = (key, ttl, *, keyspace=None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let at = self.expires_after(py, keyspace, ttl)?;
        self.add_expiry(py, key, Some(at), keyspace)
    }

    /// Make `key` of `keyspace` expire at `when` (an aware `datetime` or a Unix timestamp),
    /// if it is there when the batch is written (see `Db.expire_at`).
    #[pyo3(signature = (key, when, *, keyspace=None))]
    fn expire_at(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        when: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let at = expiry::time_arg("when", when)?;
        self.add_expiry(py, key, Some(at), keyspace)
    }

    /// Take away the expiry of `key` of `keyspace`, if it is there when the batch is written
    /// (see `Db.persist`).
    #[pyo3(signature = (key, *, keyspace=None))]
    fn persist(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        self.add_expiry(py, key, None, keyspace)
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

    /// Delete every key of `keyspace` (`None`: the default keyspace) in `[start, end)` —
    /// `None` for an open end; `(None, None)` is every key — as one record, whatever the
    /// range holds (see `Db.delete_range`). In batch order: a write to the range before it in
    /// the batch is deleted, one after it is not. Writing the batch raises `NotOrderedError`,
    /// writing nothing, if the keyspace is hashed and the range is not every key.
    #[pyo3(signature = (start, end, *, keyspace=None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let range = crate::iter::key_range(start, end)?;
        let (lo, hi) = range.clone();
        self.add(
            py,
            keyspace,
            |b| b.delete_range::<Vec<u8>, _>(range),
            |b, ks| b.delete_range_in::<Vec<u8>, _>(ks, (lo, hi)),
        )
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
        self.put(py, key, value, None, None)
    }

    /// `del batch[key]`: `delete(key)`; `del batch[start:end]`: `delete_range(start, end)`.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        match crate::iter::slice_bounds(key)? {
            Some((start, end)) => self.delete_range(py, start.as_ref(), end.as_ref(), None),
            None => self.delete(py, key, None),
        }
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
