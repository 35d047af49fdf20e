//! `spillway.Transaction`: optimistic, serializable read-modify-write over any keyspaces.

use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::db::{PyDb, Release};
use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use crate::keyspace::{resolve, PyKeyspace};
use crate::{bytes_of, expiry, py_bytes, py_values};

/// Where a transaction is: running (the engine's), or over, and how.
enum State {
    Open(Box<spillway::Transaction>),
    Committed,
    RolledBack,
    /// The store was closed while it ran: rolled back.
    Closed,
}

/// The engine's transaction, let go of (rolled back) when the store closes.
struct Slot(Mutex<State>);

impl Release for Slot {
    fn release(&self) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let State::Open(_) = *state {
            *state = State::Closed;
        }
    }
}

impl Slot {
    /// Run `f` on the running transaction, or raise `ClosedError` if it is over.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut spillway::Transaction) -> spillway::Result<T>,
    ) -> PyResult<T> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *state {
            State::Open(tx) => f(tx).map_err(to_py),
            over => Err(over_error(over)),
        }
    }

    /// End the transaction: `commit` with the engine's transaction if it is running.
    fn end(
        &self,
        then: State,
        commit: impl FnOnce(spillway::Transaction) -> spillway::Result<()>,
    ) -> PyResult<()> {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *state, then) {
            // Committed or not (a conflict), it is over.
            State::Open(tx) => commit(*tx).map_err(to_py),
            over => {
                let e = over_error(&over);
                *state = over;
                Err(e)
            }
        }
    }
}

fn over_error(state: &State) -> PyErr {
    ClosedError::new_err(match state {
        State::Open(_) => unreachable!("the transaction is running"),
        State::Committed => "the transaction was committed",
        State::RolledBack => "the transaction was rolled back",
        State::Closed => "the store was closed: the transaction was rolled back",
    })
}

/// An optimistic, serializable transaction (from `Db.transaction()`): it reads a snapshot of
/// every keyspace taken when it began, with its own writes on top, and keeps its writes to
/// itself until `commit()`, which applies them atomically — or raises `ConflictError`,
/// applying nothing, if a key it read or a range it scanned was written by another commit
/// (another transaction's, or a plain write) since its snapshot. Run a conflicted
/// transaction again from the start, in a new transaction. Nothing is locked while it runs;
/// writing a key without reading it (a blind write) never conflicts.
///
/// Each method works in the default keyspace, or in the `Keyspace` given as `keyspace=`, as
/// `WriteBatch`'s do. `with db.transaction() as tx:` commits when the block ends without an
/// exception and rolls back if it ends with one. After `commit()` or `rollback()` every call
/// raises `ClosedError`. A transaction is for one thread at a time (calls from several are
/// taken in turn).
#[pyclass(name = "Transaction", module = "spillway")]
pub struct PyTransaction {
    db: Py<PyDb>,
    slot: Arc<Slot>,
    /// The `with` block's commit's sync.
    sync: Option<bool>,
}

impl PyTransaction {
    pub(crate) fn new(
        db: &Bound<'_, PyDb>,
        tx: spillway::Transaction,
        sync: Option<bool>,
    ) -> PyTransaction {
        let slot = Arc::new(Slot(Mutex::new(State::Open(Box::new(tx)))));
        db.borrow().hold(Arc::downgrade(&slot) as _);
        PyTransaction {
            db: db.clone().unbind(),
            slot,
            sync,
        }
    }

    fn keyspace(
        &self,
        py: Python<'_>,
        ks: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<spillway::Keyspace> {
        resolve(py, &self.db, ks)
    }

    /// `expire(key, at)`, or `persist(key)` if `at` is `None`, at the commit.
    fn change_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        at: Option<SystemTime>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let (ks, key) = (self.keyspace(py, keyspace)?, bytes_of(key)?);
        py.allow_threads(|| {
            self.slot.with(|tx| match at {
                Some(at) => tx.expire(&ks, &key, at),
                None => tx.persist(&ks, &key),
            })
        })
    }

    /// `key`'s expiry as the transaction sees it, or `KeyError` if it is absent.
    fn get_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<spillway::Expiry> {
        let (ks, bytes) = (self.keyspace(py, keyspace)?, bytes_of(key)?);
        py.allow_threads(|| self.slot.with(|tx| tx.expiry(&ks, &bytes)))?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }
}

#[pymethods]
impl PyTransaction {
    /// The value of `key` in `keyspace` (`None`: the default keyspace) — the transaction's own
    /// write if it made one, else its snapshot's — or `default` if absent. The key counts as
    /// read: a write to it by another commit since the snapshot makes the commit conflict.
    #[pyo3(signature = (key, default=None, *, keyspace=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<PyObject>> {
        let (ks, key) = (self.keyspace(py, keyspace)?, bytes_of(key)?);
        match py.allow_threads(|| self.slot.with(|tx| tx.get(&ks, &key)))? {
            Some(v) => Ok(Some(py_bytes(py, v))),
            None => Ok(default),
        }
    }

    /// `get` for many keys of `keyspace`: their values, `None` where absent.
    #[pyo3(signature = (keys, *, keyspace=None))]
    fn multi_get(
        &self,
        py: Python<'_>,
        keys: Vec<Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Py<PyList>> {
        let ks = self.keyspace(py, keyspace)?;
        let keys = keys.iter().map(bytes_of).collect::<PyResult<Vec<_>>>()?;
        let values = py.allow_threads(|| self.slot.with(|tx| tx.multi_get(&ks, &keys)))?;
        py_values(py, values)
    }

    /// Set `key` in `keyspace` to `value` when the transaction commits. `ttl` (seconds or a
    /// `timedelta`, more than 0) makes the value expire that long after this call — not
    /// after the commit — by the store's clock; `None`: it does not expire.
    #[pyo3(signature = (key, value, ttl=None, *, keyspace=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let ks = self.keyspace(py, keyspace)?;
        let at = ttl
            .map(|ttl| self.db.borrow(py).expires_after(ttl))
            .transpose()?;
        let (key, value) = (bytes_of(key)?, bytes_of(value)?);
        py.allow_threads(|| {
            self.slot.with(|tx| match at {
                Some(at) => tx.put_expiring(&ks, &key, &value, at),
                None => tx.put(&ks, &key, &value),
            })
        })
    }

    /// Set `key` in `keyspace` to `value`, expiring at `at` (an aware `datetime` or a Unix
    /// timestamp; see `Db.put_expiring`), when the transaction commits.
    #[pyo3(signature = (key, value, at, *, keyspace=None))]
    fn put_expiring(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        at: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let ks = self.keyspace(py, keyspace)?;
        let at = expiry::time_arg("at", at)?;
        let (key, value) = (bytes_of(key)?, bytes_of(value)?);
        py.allow_threads(|| self.slot.with(|tx| tx.put_expiring(&ks, &key, &value, at)))
    }

    /// Make `key` of `keyspace` expire `ttl` after this call (seconds or a `timedelta`, more
    /// than 0), if it is there when the transaction commits; nothing if it is absent then.
    /// Blind, like a put: the key is not read, so it cannot conflict; the transaction's own
    /// later reads see the change.
    #[pyo3(signature = (key, ttl, *, keyspace=None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let at = self.db.borrow(py).expires_after(ttl)?;
        self.change_expiry(py, key, Some(at), keyspace)
    }

    /// `expire` at a time: `key` of `keyspace` expires at `when` (an aware `datetime` or a
    /// Unix timestamp), if it is there when the transaction commits.
    #[pyo3(signature = (key, when, *, keyspace=None))]
    fn expire_at(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        when: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let at = expiry::time_arg("when", when)?;
        self.change_expiry(py, key, Some(at), keyspace)
    }

    /// Take away the expiry of `key` of `keyspace` when the transaction commits, if it is
    /// there then. Blind, as `expire` is.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn persist(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        self.change_expiry(py, key, None, keyspace)
    }

    /// The seconds `key` of `keyspace` has left as the transaction sees it (its own writes on
    /// its snapshot; by the store's clock now), or `None` if it does not expire; `KeyError`
    /// if it is absent. A read the commit checks, as `get` is.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn ttl(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<f64>> {
        let found = self.get_expiry(py, key, keyspace)?;
        Ok(expiry::remaining(&*self.db.borrow(py).clock()?, found))
    }

    /// When `key` of `keyspace` expires as the transaction sees it (an aware UTC
    /// `datetime`), or `None` if it does not; `KeyError` if it is absent. A read the commit
    /// checks.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<PyObject>> {
        let found = self.get_expiry(py, key, keyspace)?;
        expiry::expiry_to_py(py, found)
    }

    /// `(value, expiry)` of `key` of `keyspace` as the transaction sees it, or `default` if
    /// it is absent (see `Db.get_with_expiry`). A read the commit checks.
    #[pyo3(signature = (key, default=None, *, keyspace=None))]
    fn get_with_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<Option<PyObject>> {
        let (ks, key) = (self.keyspace(py, keyspace)?, bytes_of(key)?);
        let found = py.allow_threads(|| self.slot.with(|tx| tx.get_with_expiry(&ks, &key)))?;
        expiry::value_and_expiry(py, found, default)
    }

    /// Delete `key` from `keyspace` when the transaction commits.
    #[pyo3(signature = (key, *, keyspace=None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let (ks, key) = (self.keyspace(py, keyspace)?, bytes_of(key)?);
        py.allow_threads(|| self.slot.with(|tx| tx.delete(&ks, &key)))
    }

    /// Delete every key of `keyspace` from `start` (inclusive) to `end` (exclusive) when the
    /// transaction commits; `None` for an open end, `(None, None)` every key (`clear`).
    /// Blind — nothing is read, so it cannot conflict — and at once in the transaction's own
    /// view: its earlier writes in the range go with the rest, its later ones stand. Ordered
    /// keyspaces only (`NotOrderedError`), but for `(None, None)`.
    #[pyo3(signature = (start, end, *, keyspace=None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let ks = self.keyspace(py, keyspace)?;
        let range = crate::iter::key_range(start, end)?;
        py.allow_threads(|| {
            self.slot
                .with(|tx| tx.delete_range::<Vec<u8>, _>(&ks, range))
        })
    }

    /// Delete every key of `keyspace`, of either order, when the transaction commits (see
    /// `delete_range`).
    #[pyo3(signature = (*, keyspace=None))]
    fn clear(&self, py: Python<'_>, keyspace: Option<&Bound<'_, PyKeyspace>>) -> PyResult<()> {
        self.delete_range(py, None, None, keyspace)
    }

    /// Merge `operand` into `key` of `keyspace` when the transaction commits (the keyspace's
    /// merge operator: `NoMergeOperatorError` at once if it has none). Blind, like a put —
    /// the key is not read, so it cannot conflict — and folded into the transaction's own
    /// later reads.
    #[pyo3(signature = (key, operand, *, keyspace=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<()> {
        let ks = self.keyspace(py, keyspace)?;
        let (key, operand) = (bytes_of(key)?, bytes_of(operand)?);
        py.allow_threads(|| self.slot.with(|tx| tx.merge(&ks, &key, &operand)))
    }

    /// Every key and value of `keyspace` — the snapshot's with the transaction's own writes
    /// on top — in the keyspace's order. The whole keyspace counts as read: any write to it
    /// by another commit since the snapshot makes the commit conflict.
    #[pyo3(signature = (*, keyspace=None))]
    fn iter(&self, py: Python<'_>, keyspace: Option<&Bound<'_, PyKeyspace>>) -> PyResult<PyIter> {
        let ks = self.keyspace(py, keyspace)?;
        let it = py.allow_threads(|| self.slot.with(|tx| tx.iter(&ks)))?;
        Ok(PyIter::new(it, false))
    }

    /// The keys of `keyspace` in `[start, end)` (`None`: unbounded) with their values — the
    /// snapshot's with the transaction's own writes on top — in key order; `reverse=True`
    /// goes from the end. The range counts as read: a key written into it by another commit
    /// since the snapshot (a phantom) makes the commit conflict. Ordered keyspaces only
    /// (`NotOrderedError`).
    #[pyo3(signature = (start=None, end=None, reverse=false, *, keyspace=None))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<PyIter> {
        let ks = self.keyspace(py, keyspace)?;
        let bounds = crate::iter::key_range(start, end)?;
        let it = py.allow_threads(|| self.slot.with(|tx| tx.range::<Vec<u8>, _>(&ks, bounds)))?;
        Ok(PyIter::new(it, reverse))
    }

    /// The keys of `keyspace` starting with `prefix` (see `range`). Ordered keyspaces only.
    #[pyo3(signature = (prefix, reverse=false, *, keyspace=None))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
        keyspace: Option<&Bound<'_, PyKeyspace>>,
    ) -> PyResult<PyIter> {
        let (ks, prefix) = (self.keyspace(py, keyspace)?, bytes_of(prefix)?);
        let it = py.allow_threads(|| self.slot.with(|tx| tx.prefix(&ks, &prefix)))?;
        Ok(PyIter::new(it, reverse))
    }

    /// Raise `ConflictError` if a commit now would conflict (something the transaction read
    /// was written since its snapshot); else nothing. Nothing is applied, and the commit may
    /// still conflict later: a check before work that cannot be undone.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| self.slot.with(|tx| tx.check()))
    }

    /// Apply the transaction's writes atomically — one batch in the log: after a crash, all
    /// or none of them are there — fsynced before this returns if `sync` (`None`: the
    /// store's `sync_by_default`). `ConflictError`, with nothing applied, if something it
    /// read was written by another commit since its snapshot. Either way the transaction is
    /// over. A transaction that wrote nothing commits at once.
    #[pyo3(signature = (*, sync=None))]
    fn commit(&self, py: Python<'_>, sync: Option<bool>) -> PyResult<()> {
        py.allow_threads(|| {
            self.slot.end(State::Committed, |tx| match sync {
                None => tx.commit(),
                Some(sync) => tx.commit_with(spillway::WriteOptions { sync }),
            })
        })
    }

    /// Drop the transaction's writes: nothing of it is applied. Rolling back a transaction
    /// that is over already does nothing.
    fn rollback(&self) {
        let _ = self.slot.end(State::RolledBack, |tx| {
            drop(tx);
            Ok(())
        });
    }

    /// Whether the transaction is still running (neither committed nor rolled back).
    #[getter]
    fn active(&self) -> bool {
        matches!(
            *self.slot.0.lock().unwrap_or_else(|p| p.into_inner()),
            State::Open(_)
        )
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.get(py, key, None, None)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `tx[key] = value`: `put(key, value)` in the default keyspace.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, None)
    }

    /// `del tx[key]`: `delete(key)` in the default keyspace.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key, None)
    }

    /// `key in tx`: whether `get(key)` finds it (a read the commit checks).
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key, None, None)?.is_some())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Commit if the block ended without an exception (raising `ConflictError` if the commit
    /// conflicts), else roll back. A transaction committed or rolled back inside the block is
    /// left as it is.
    fn __exit__(
        &self,
        py: Python<'_>,
        kind: Option<PyObject>,
        _value: Option<PyObject>,
        _traceback: Option<PyObject>,
    ) -> PyResult<bool> {
        if kind.is_some() || !self.active() {
            self.rollback();
        } else {
            self.commit(py, self.sync)?;
        }
        Ok(false)
    }

    fn __reduce__(&self) -> PyResult<PyObject> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "a spillway.Transaction cannot be pickled",
        ))
    }
}
