//! `spillway.Keyspace`: a named collection in a store, with the same key methods as `Db`.

use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::db::{write_one, PyDb, Release};
use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use crate::{bytes_of, expiry, py_bytes, py_values, with_bytes};

/// The engine's handle, let go of when the store closes (it keeps the store's files and lock
/// otherwise).
#[derive(Default)]
pub(crate) struct Slot(RwLock<Option<spillway::Keyspace>>);

impl Release for Slot {
    fn release(&self) {
        self.0.write().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// One keyspace of a store (from `Db.keyspace(name)`): a collection of its own, used like the
/// `Db` — `get`, `put`, `delete`, `merge`, `multi_get`, scans, `ks[key]`, expiry (`put(...,
/// ttl=)`, `expire`, `persist`, `ttl`, ...) — with its own key order and merge operator.
/// Batches (`WriteBatch.put(..., keyspace=ks)`), snapshots and transactions take it as their
/// `keyspace=` argument. Once its keyspace is dropped, every call raises
/// `KeyspaceDroppedError` (a keyspace created again under the name is another: ask
/// `Db.keyspace` again); once the store is closed, `ClosedError`.
#[pyclass(name = "Keyspace", module = "spillway")]
pub struct PyKeyspace {
    db: Py<PyDb>,
    slot: Arc<Slot>,
    name: String,
}

impl PyKeyspace {
    pub(crate) fn new(py: Python<'_>, db: Py<PyDb>, ks: spillway::Keyspace) -> PyKeyspace {
        let name = ks.name().to_owned();
        let slot = Arc::new(Slot(RwLock::new(Some(ks))));
        db.borrow(py).hold(Arc::downgrade(&slot) as _);
        PyKeyspace { db, slot, name }
    }

    fn handle(&self) -> PyResult<spillway::Keyspace> {
        self.slot
            .0
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| ClosedError::new_err("the store is closed"))
    }

    /// The engine's handle, if this keyspace is one of `db`'s (a batch, snapshot or
    /// transaction of one store given a keyspace of another is a `ValueError`).
    pub(crate) fn handle_in(&self, db: &Py<PyDb>) -> PyResult<spillway::Keyspace> {
        if self.db.as_ptr() != db.as_ptr() {
            return Err(PyValueError::new_err(format!(
                "keyspace {:?} is a keyspace of another store",
                self.name
            )));
        }
        self.handle()
    }

    /// `put_expiring` of `key` and `value` at `at`, with `sync` as `put` takes it.
    fn write_expiring(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        at: SystemTime,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (ks, key, value) = (self.handle()?, bytes_of(key)?, bytes_of(value)?);
        match sync {
            None => py.allow_threads(|| ks.put_expiring(&key, &value, at)),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| {
                    write_one(&db, sync, |b| b.put_expiring_in(&ks, &key, &value, at))
                })
            }
        }
        .map_err(to_py)
    }

    /// `expire(key, at)`, or `persist(key)` if `at` is `None`, with `sync` as `put` takes it.
    fn change_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        at: Option<SystemTime>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (ks, key) = (self.handle()?, bytes_of(key)?);
        match sync {
            None => py.allow_threads(|| match at {
                Some(at) => ks.expire(&key, at),
                None => ks.persist(&key),
            }),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| {
                    write_one(&db, sync, |b| match at {
                        Some(at) => b.expire_in(&ks, &key, at),
                        None => b.persist_in(&ks, &key),
                    })
                })
            }
        }
        .map_err(to_py)
    }

    /// `key`'s expiry, or `KeyError` if it is absent.
    fn get_expiry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<spillway::Expiry> {
        let (ks, bytes) = (self.handle()?, bytes_of(key)?);
        py.allow_threads(|| ks.expiry(&bytes))
            .map_err(to_py)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    /// The store this keyspace is one of.
    pub(crate) fn db(&self) -> &Py<PyDb> {
        &self.db
    }
}

/// The engine's handle of `ks`, a keyspace of `db`, or of the default keyspace if `None`:
/// what every `keyspace=` argument takes.
pub(crate) fn resolve(
    py: Python<'_>,
    db: &Py<PyDb>,
    ks: Option<&Bound<'_, PyKeyspace>>,
) -> PyResult<spillway::Keyspace> {
    match ks {
        Some(ks) => ks.borrow().handle_in(db),
        None => Ok(db.borrow(py).handle()?.default_keyspace()),
    }
}

#[pymethods]
impl PyKeyspace {
    /// The keyspace's name (`""` for the default keyspace).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Whether the keyspace keeps its keys in byte order (`range` and `prefix` work).
    #[getter]
    fn ordered(&self) -> PyResult<bool> {
        let order = self.handle()?.key_order().map_err(to_py)?;
        Ok(order == spillway::KeyOrder::Ordered)
    }

    /// The value of `key`, or `default` if it is absent.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<Option<PyObject>> {
        let ks = self.handle()?;
        match with_bytes(key, |key| py.allow_threads(|| ks.get(key)))?.map_err(to_py)? {
            Some(v) => Ok(Some(py_bytes(py, v))),
            None => Ok(default),
        }
    }

    /// Set `key` to `value`, with `Db.put`'s guarantees: in the log when it returns, fsynced
    /// if `sync` (`None`: the store's `sync_by_default`). `ttl` as for `Db.put`: seconds or a
    /// `timedelta` (more than 0) after which the value expires, by the store's clock; `None`:
    /// it does not (and an expiry the key had is cleared).
    #[pyo3(signature = (key, value, ttl=None, *, sync=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        if let Some(ttl) = ttl {
            let at = self.db.borrow(py).expires_after(ttl)?;
            return self.write_expiring(py, key, value, at, sync);
        }
        let (ks, key, value) = (self.handle()?, bytes_of(key)?, bytes_of(value)?);
        match sync {
            None => py.allow_threads(|| ks.put(&key, &value)),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| write_one(&db, sync, |b| b.put_in(&ks, &key, &value)))
            }
        }
        .map_err(to_py)
    }

    /// `Db.put_expiring` in this keyspace: `value` expires at `at` (an aware `datetime` or a
    /// Unix timestamp; a time past writes a key that is gone at once), with `put`'s
    /// guarantees.
    #[pyo3(signature = (key, value, at, *, sync=None))]
    fn put_expiring(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        at: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let at = expiry::time_arg("at", at)?;
        self.write_expiring(py, key, value, at, sync)
    }

    /// `Db.expire` in this keyspace: `key` expires `ttl` from now (seconds or a `timedelta`,
    /// more than 0) if it is there; nothing if it is absent. A message: no read, `put`'s
    /// guarantees.
    #[pyo3(signature = (key, ttl, *, sync=None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let at = self.db.borrow(py).expires_after(ttl)?;
        self.change_expiry(py, key, Some(at), sync)
    }

    /// `Db.expire_at` in this keyspace: `key` expires at `when` if it is there.
    #[pyo3(signature = (key, when, *, sync=None))]
    fn expire_at(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        when: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let at = expiry::time_arg("when", when)?;
        self.change_expiry(py, key, Some(at), sync)
    }

    /// `Db.persist` in this keyspace: `key` no longer expires, if it is there.
    #[pyo3(signature = (key, *, sync=None))]
    fn persist(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: Option<bool>) -> PyResult<()> {
        self.change_expiry(py, key, None, sync)
    }

    /// The seconds `key` has left, or `None` if it does not expire; `KeyError` if it is
    /// absent (see `Db.ttl`).
    fn ttl(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let found = self.get_expiry(py, key)?;
        Ok(expiry::remaining(&*self.db.borrow(py).clock()?, found))
    }

    /// When `key` expires (an aware UTC `datetime`), or `None` if it does not; `KeyError` if
    /// it is absent (see `Db.expiry`).
    fn expiry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyObject>> {
        let found = self.get_expiry(py, key)?;
        expiry::expiry_to_py(py, found)
    }

    /// `(value, expiry)` of `key` in one read, or `default` if it is absent (see
    /// `Db.get_with_expiry`).
    #[pyo3(signature = (key, default=None))]
    fn get_with_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<Option<PyObject>> {
        let (ks, key) = (self.handle()?, bytes_of(key)?);
        let found = py
            .allow_threads(|| ks.get_with_expiry(&key))
            .map_err(to_py)?;
        expiry::value_and_expiry(py, found, default)
    }

    /// Delete every key of this keyspace in `[start, end)` (`None`: an open end), in one
    /// write whatever the range holds (see `Db.delete_range`). Ordered keyspaces only
    /// (`NotOrderedError`), but for `(None, None)`; `put`'s guarantees.
    #[pyo3(signature = (start, end, *, sync=None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (ks, range) = (self.handle()?, crate::iter::key_range(start, end)?);
        match sync {
            None => py.allow_threads(|| ks.delete_range::<Vec<u8>, _>(range)),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| {
                    write_one(&db, sync, |b| b.delete_range_in::<Vec<u8>, _>(&ks, range))
                })
            }
        }
        .map_err(to_py)
    }

    /// Delete every key of this keyspace in one write, whatever it holds, in a keyspace of
    /// either order (see `Db.clear`); `put`'s guarantees. `del ks[:]` is `clear()`.
    #[pyo3(signature = (*, sync=None))]
    fn clear(&self, py: Python<'_>, sync: Option<bool>) -> PyResult<()> {
        self.delete_range(py, None, None, sync)
    }

    /// Delete `key` (nothing happens if it is absent), with `put`'s guarantees.
    #[pyo3(signature = (key, *, sync=None))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: Option<bool>) -> PyResult<()> {
        let (ks, key) = (self.handle()?, bytes_of(key)?);
        match sync {
            None => py.allow_threads(|| ks.delete(&key)),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| write_one(&db, sync, |b| b.delete_in(&ks, &key)))
            }
        }
        .map_err(to_py)
    }

    /// Merge `operand` into `key`'s value without reading it (the keyspace's merge
    /// operator: `NoMergeOperatorError` if it has none), with `put`'s guarantees.
    #[pyo3(signature = (key, operand, *, sync=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (ks, key, operand) = (self.handle()?, bytes_of(key)?, bytes_of(operand)?);
        match sync {
            None => py.allow_threads(|| ks.merge(&key, &operand)),
            Some(sync) => {
                let db = self.db.borrow(py).handle()?;
                py.allow_threads(|| write_one(&db, sync, |b| b.merge_in(&ks, &key, &operand)))
            }
        }
        .map_err(to_py)
    }

    /// The values of `keys`, `None` where absent, at one point in time.
    fn multi_get(&self, py: Python<'_>, keys: Vec<Bound<'_, PyAny>>) -> PyResult<Py<PyList>> {
        let ks = self.handle()?;
        let keys = keys.iter().map(bytes_of).collect::<PyResult<Vec<_>>>()?;
        let values = py.allow_threads(|| ks.multi_get(&keys)).map_err(to_py)?;
        py_values(py, values)
    }

    /// Every key and value of the keyspace: in key order if it is ordered, hash order if
    /// hashed (see `Db.iter`).
    fn iter(&self) -> PyResult<PyIter> {
        Ok(PyIter::new(self.handle()?.iter().map_err(to_py)?, false))
    }

    /// The keys in `[start, end)` and their values, in key order (`None`: unbounded);
    /// `reverse=True` goes from the end. Ordered keyspaces only (`NotOrderedError`).
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn range(
        &self,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<PyIter> {
        let (lo, hi) = crate::iter::key_range(start, end)?;
        let it = self
            .handle()?
            .range::<Vec<u8>, _>((lo, hi))
            .map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// The keys starting with `prefix` and their values, in key order. Ordered keyspaces
    /// only.
    #[pyo3(signature = (prefix, reverse=false))]
    fn prefix(&self, prefix: &Bound<'_, PyAny>, reverse: bool) -> PyResult<PyIter> {
        let it = self.handle()?.prefix(bytes_of(prefix)?).map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// The number of distinct keys the keyspace holds, estimated as `Db.estimate_keys()`
    /// estimates the store's.
    fn estimate_keys(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let ks = self.handle()?;
        py.allow_threads(|| ks.estimate_keys()).map_err(to_py)
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.get(py, key, None)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `ks[key] = value`: `put(key, value)`.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, None)
    }

    /// `del ks[key]`: `delete(key)`; an absent key raises nothing. `del ks[start:end]` is
    /// `delete_range(start, end)`.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        match crate::iter::slice_bounds(key)? {
            Some((start, end)) => self.delete_range(py, start.as_ref(), end.as_ref(), None),
            None => self.delete(py, key, None),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key, None)?.is_some())
    }

    /// Iterating a `Keyspace` gives its keys, as a dict's does.
    fn __iter__(&self) -> PyResult<PyIter> {
        Ok(self.iter()?.keys_only())
    }

    /// The keys from the last.
    fn __reversed__(&self) -> PyResult<PyIter> {
        Ok(PyIter::new(self.handle()?.iter().map_err(to_py)?, true).keys_only())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = pyo3::types::PyString::new(py, &self.name).repr()?;
        Ok(format!("<spillway.Keyspace {name}>"))
    }

    fn __reduce__(&self) -> PyResult<PyObject> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "a spillway.Keyspace cannot be pickled: open its store in the other process instead",
        ))
    }
}
