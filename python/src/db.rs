//! `spillway.Db`: a store, used like a dict of bytes, and as a context manager that closes it.

use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::SystemTime;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::batch::PyWriteBatch;
use crate::errors::{to_py, ClosedError};
use crate::iter::PyIter;
use crate::keyspace::PyKeyspace;
use crate::snapshot::PySnapshot;
use crate::transaction::PyTransaction;
use crate::{bytes_of, expiry, options, py_bytes, py_values, with_bytes};

/// Open the store in folder `path`, creating it if missing (unless
/// `create_if_missing=False`). Every option of the engine is a keyword of the same name, as
/// `spillway.OPTIONS` lists them: a bool, an int, a str in the engine's text form (sizes as
/// `"64M"`, `key_order` as `"ordered"`/`"hashed"`, `merge_operator` as `"add"`, `"append"`,
/// `"max"`, `"min"` or a recorded name), or `None` to clear an optional one; `ordered=True`
/// or `False` is `key_order="ordered"` or `"hashed"`. An unknown keyword, or a value of
/// another type, is a `TypeError`; a value that does not parse or is out of range an
/// `InvalidOptionError`. A store opens as it was made: in the key order it records, and with
/// the built-in merge operator it records, unless the options ask otherwise (then
/// `KeyOrderMismatchError`, `MergeOperatorMismatchError`).
///
/// `clock=` is not an option of the table: a `spillway.ManualClock` the store reads the time
/// from (for expiry: tests that move time instead of sleeping), or `None`/absent for the wall
/// clock. The store does not record it; ttls count from its time (the engine's `Db::clock`).
#[pyfunction]
#[pyo3(signature = (path, **options))]
pub fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyDb> {
    let clock = options::clock(options)?;
    let opts = options::from_kwargs(options)?.clock(clock);
    let db = py
        .allow_threads(|| spillway::Db::open(&path, opts))
        .map_err(to_py)?;
    Ok(PyDb {
        db: RwLock::new(Some(Arc::new(db))),
        holders: Mutex::default(),
    })
}

/// One record written with `sync` either way. The engine's `put`, `delete` and `merge` take
/// the store's `sync_by_default` and no `WriteOptions`; a batch of one record takes them.
pub(crate) fn write_one(
    db: &spillway::Db,
    sync: bool,
    fill: impl FnOnce(&mut spillway::WriteBatch),
) -> spillway::Result<()> {
    let mut batch = spillway::WriteBatch::new();
    fill(&mut batch);
    db.write(batch, spillway::WriteOptions { sync })
}

/// Something handed out by a store that holds an engine handle keeping the store's files and
/// lock (a keyspace's handle, a transaction): the store lets go of it when it closes, so that
/// the folder can be opened again while the Python object lives on.
pub(crate) trait Release: Send + Sync {
    fn release(&self);
}

/// A Spillway store. Keys and values are `bytes` (`str` is taken as UTF-8).
#[pyclass(name = "Db", module = "spillway")]
pub struct PyDb {
    /// `None` once closed.
    db: RwLock<Option<Arc<spillway::Db>>>,
    /// What `close` lets go of (see [`Release`]).
    holders: Mutex<Vec<Weak<dyn Release>>>,
}

impl PyDb {
    pub(crate) fn handle(&self) -> PyResult<Arc<spillway::Db>> {
        self.db
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| ClosedError::new_err("the store is closed"))
    }

    /// The store's clock (see `open(clock=)`): ttls count from its time, and `ttl()` to it.
    pub(crate) fn clock(&self) -> PyResult<Arc<dyn spillway::Clock>> {
        Ok(self.handle()?.clock())
    }

    /// When a write given `ttl` now expires, by the store's clock.
    pub(crate) fn expires_after(&self, ttl: &Bound<'_, PyAny>) -> PyResult<SystemTime> {
        expiry::after(&*self.clock()?, expiry::ttl_arg(ttl)?)
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
        let (db, key, value) = (self.handle()?, bytes_of(key)?, bytes_of(value)?);
        py.allow_threads(|| match sync {
            None => db.put_expiring(&key, &value, at),
            Some(sync) => write_one(&db, sync, |b| b.put_expiring(&key, &value, at)),
        })
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
        let (db, key) = (self.handle()?, bytes_of(key)?);
        py.allow_threads(|| match (at, sync) {
            (Some(at), None) => db.expire(&key, at),
            (None, None) => db.persist(&key),
            (Some(at), Some(sync)) => write_one(&db, sync, |b| b.expire(&key, at)),
            (None, Some(sync)) => write_one(&db, sync, |b| b.persist(&key)),
        })
        .map_err(to_py)
    }

    /// `key`'s expiry, or `KeyError` if it is absent.
    fn get_expiry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<spillway::Expiry> {
        let (db, bytes) = (self.handle()?, bytes_of(key)?);
        py.allow_threads(|| db.expiry(&bytes))
            .map_err(to_py)?
            .ok_or_else(|| PyKeyError::new_err(key.clone().unbind()))
    }

    /// Have `close` let go of `holder`'s engine handle (forgetting those already gone).
    /// Under the store's lock, which `close` takes to empty it: nothing slips in after.
    pub(crate) fn hold(&self, holder: Weak<dyn Release>) {
        let db = self.db.read().unwrap_or_else(|p| p.into_inner());
        if db.is_none() {
            holder.upgrade().inspect(|h| h.release());
            return;
        }
        let mut holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
        holders.retain(|h| h.strong_count() > 0);
        holders.push(holder);
    }
}

#[pymethods]
impl PyDb {
    /// The value of `key`, or `default` if it is absent.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<Option<PyObject>> {
        let db = self.handle()?;
        // The key is read in place: a `bytes` is immutable, and the caller holds it.
        match with_bytes(key, |key| py.allow_threads(|| db.get(key)))?.map_err(to_py)? {
            Some(v) => Ok(Some(py_bytes(py, v))),
            None => Ok(default),
        }
    }

    /// Set `key` to `value`. When it returns the write is in the store's log, and so survives
    /// a crash of the process; whether it also survives a power loss depends on `sync`:
    /// `True` fsyncs the log before returning (durable), `False` does not (the write is in the
    /// OS page cache, and a power loss may lose it until a later `db.sync()` returns), and
    /// `None` (the default) does what the store was opened with: `sync_by_default`, itself
    /// `False` unless set. `db[key] = value` is `put(key, value)`.
    ///
    /// `ttl` (seconds, an `int` or `float`, or a `datetime.timedelta`; more than 0) makes the
    /// value expire that long from now by the store's clock, to the millisecond: from then on
    /// every read finds `key` absent. `None` (the default): the value does not expire — a put
    /// without `ttl` also clears an expiry the key had.
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
            let at = self.expires_after(ttl)?;
            return self.write_expiring(py, key, value, at, sync);
        }
        let (db, key, value) = (self.handle()?, bytes_of(key)?, bytes_of(value)?);
        py.allow_threads(|| match sync {
            None => db.put(&key, &value),
            Some(sync) => write_one(&db, sync, |b| b.put(&key, &value)),
        })
        .map_err(to_py)
    }

    /// Set `key` to `value`, which expires at `at`: an aware `datetime` (any time zone) or a
    /// Unix timestamp in seconds (`int` or `float`, as `time.time()` gives); a naive
    /// `datetime` is a `ValueError`. To the millisecond; a time already past writes a key
    /// that is gone at once (and hides the value it had). With `put`'s guarantees: in the log
    /// when it returns, fsynced if `sync` (`None`: the store's `sync_by_default`).
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

    /// Make `key` expire `ttl` from now by the store's clock (seconds or a `timedelta`, more
    /// than 0), if it is there when this is written; if it is absent (or expired) nothing
    /// happens. It does not read the key — it is a message, like `merge`, folded where the
    /// key's records meet — so it returns nothing either way, and costs what a `put` does.
    /// With `put`'s guarantees: in the log when it returns, fsynced if `sync` (`None`: the
    /// store's `sync_by_default`).
    #[pyo3(signature = (key, ttl, *, sync=None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let at = self.expires_after(ttl)?;
        self.change_expiry(py, key, Some(at), sync)
    }

    /// `expire` at a time: make `key` expire at `when` (an aware `datetime` or a Unix
    /// timestamp, as `put_expiring` takes; a time past ends the key now), if it is there.
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

    /// Take away `key`'s expiry, so that it stays until deleted, if it is there when this is
    /// written; nothing if it is absent (or expired). A message, as `expire` is: no read, and
    /// `put`'s guarantees.
    #[pyo3(signature = (key, *, sync=None))]
    fn persist(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: Option<bool>) -> PyResult<()> {
        self.change_expiry(py, key, None, sync)
    }

    /// The seconds `key` has left (a `float`, to the millisecond, by the store's clock), or
    /// `None` if it does not expire. `KeyError` if it is absent (or expired): so `None` never
    /// means "no such key".
    fn ttl(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let found = self.get_expiry(py, key)?;
        Ok(expiry::remaining(&*self.clock()?, found))
    }

    /// When `key` expires — an aware UTC `datetime`, to the millisecond — or `None` if it
    /// does not. `KeyError` if it is absent (or expired).
    fn expiry(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyObject>> {
        let found = self.get_expiry(py, key)?;
        expiry::expiry_to_py(py, found)
    }

    /// `(value, expiry)` of `key` in one read — `expiry` as `expiry()` gives it, `None` if it
    /// does not expire — or `default` if the key is absent (or expired).
    #[pyo3(signature = (key, default=None))]
    fn get_with_expiry(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<PyObject>,
    ) -> PyResult<Option<PyObject>> {
        let (db, key) = (self.handle()?, bytes_of(key)?);
        let found = py
            .allow_threads(|| db.get_with_expiry(&key))
            .map_err(to_py)?;
        expiry::value_and_expiry(py, found, default)
    }

    /// Delete `key` (nothing happens if it is absent), with `put`'s guarantees: in the log
    /// when it returns, fsynced if `sync` (`None`: the store's `sync_by_default`).
    /// `del db[key]` is `delete(key)`.
    #[pyo3(signature = (key, *, sync=None))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, sync: Option<bool>) -> PyResult<()> {
        let (db, key) = (self.handle()?, bytes_of(key)?);
        py.allow_threads(|| match sync {
            None => db.delete(&key),
            Some(sync) => write_one(&db, sync, |b| b.delete(&key)),
        })
        .map_err(to_py)
    }

    /// Merge `operand` into `key`'s value without reading it (the store's merge operator),
    /// with `put`'s guarantees: in the log when it returns, fsynced if `sync` (`None`: the
    /// store's `sync_by_default`).
    #[pyo3(signature = (key, operand, *, sync=None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (db, key, operand) = (self.handle()?, bytes_of(key)?, bytes_of(operand)?);
        py.allow_threads(|| match sync {
            None => db.merge(&key, &operand),
            Some(sync) => write_one(&db, sync, |b| b.merge(&key, &operand)),
        })
        .map_err(to_py)
    }

    /// Delete every key in `[start, end)` — `None` for an open end, so `delete_range(None,
    /// None)` is `clear()` — in one write whatever the range holds: one record, which every
    /// read from then on (of iterators and snapshots taken before too) takes as a delete of
    /// each key it covers; later writes in the range are not covered. Ordered stores only
    /// (`NotOrderedError`), but for `(None, None)`. A `start` at or past `end` deletes
    /// nothing. With `put`'s guarantees: in the log when it returns, fsynced if `sync`
    /// (`None`: the store's `sync_by_default`). `del db[start:end]` is `delete_range(start,
    /// end)`.
    #[pyo3(signature = (start, end, *, sync=None))]
    fn delete_range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        sync: Option<bool>,
    ) -> PyResult<()> {
        let (db, range) = (self.handle()?, crate::iter::key_range(start, end)?);
        py.allow_threads(|| match sync {
            None => db.delete_range::<Vec<u8>, _>(range),
            Some(sync) => write_one(&db, sync, |b| b.delete_range::<Vec<u8>, _>(range)),
        })
        .map_err(to_py)
    }

    /// Delete every key of the default keyspace, in one write whatever it holds (a range
    /// delete of every key, in a store of either order), with `put`'s guarantees. `del db[:]`
    /// is `clear()`. What it covers leaves the disk as spills meet it, not at once.
    #[pyo3(signature = (*, sync=None))]
    fn clear(&self, py: Python<'_>, sync: Option<bool>) -> PyResult<()> {
        self.delete_range(py, None, None, sync)
    }

    /// The values of `keys`, `None` where absent, in one call.
    fn multi_get(&self, py: Python<'_>, keys: Vec<Bound<'_, PyAny>>) -> PyResult<Py<PyList>> {
        let db = self.handle()?;
        let keys = keys.iter().map(bytes_of).collect::<PyResult<Vec<_>>>()?;
        let values = py.allow_threads(|| db.multi_get(&keys)).map_err(to_py)?;
        py_values(py, values)
    }

    /// Apply `batch` atomically: after a crash, all of it or none of it is there. `sync=True`
    /// (the default) fsyncs the log before returning, so the batch survives a power loss;
    /// `sync=False` returns once it is in the log, safe from a crash of the process, and
    /// durable after a later `db.sync()`.
    /// A batch holding writes into keyspaces of another store is a `ValueError`, and nothing
    /// of it is written.
    #[pyo3(signature = (batch, sync=true))]
    pub(crate) fn write(slf: &Bound<'_, Self>, batch: &PyWriteBatch, sync: bool) -> PyResult<()> {
        let py = slf.py();
        let db = slf.borrow().handle()?;
        let batch = batch.take_for(&slf.clone().unbind())?;
        let opts = if sync {
            spillway::WriteOptions::SYNC
        } else {
            spillway::WriteOptions::NO_SYNC
        };
        py.allow_threads(|| db.write(batch, opts)).map_err(to_py)
    }

    /// A batch that writes itself into this store when its `with` block ends without an
    /// exception, as `write(batch, sync=sync)` does: `with db.batch() as b: b.put(k, v)`.
    #[pyo3(signature = (sync=true))]
    fn batch(slf: Py<Self>, sync: bool) -> PyWriteBatch {
        PyWriteBatch::bound_to(slf, sync)
    }

    /// A view of the store as it is now, for reads that must agree with each other while
    /// writes go on: `with db.snapshot() as s: s[k]`.
    fn snapshot(slf: &Bound<'_, Self>) -> PyResult<PySnapshot> {
        let db = slf.borrow().handle()?;
        Ok(PySnapshot::of(slf.clone().unbind(), db))
    }

    /// Keyspace `name`, created (durably, before this returns) if the store has none of that
    /// name: `ordered=True` keeps its keys in byte order (range and prefix scans), `False`
    /// hashes them; `merge_operator` is named as for `open()` (`"add"`, `"append"`, `"max"`,
    /// `"min"` or a recorded name). An existing keyspace opens as it was made: `ordered=None`
    /// (the default) takes its key order (hashed for a new one), `merge_operator=None` the
    /// operator it records; asking for others raises `KeyOrderMismatchError` or
    /// `MergeOperatorMismatchError`. A name is 1 to 255 bytes of UTF-8
    /// (`InvalidKeyspaceError`); `""` is the default keyspace (the options are then not
    /// checked).
    #[pyo3(signature = (name, *, ordered=None, merge_operator=None))]
    fn keyspace(
        slf: &Bound<'_, Self>,
        name: &str,
        ordered: Option<bool>,
        merge_operator: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyKeyspace> {
        let py = slf.py();
        let db = slf.borrow().handle()?;
        let mut opts = spillway::KeyspaceOptions::default();
        opts.merge_operator = options::merge_operator(merge_operator)?;
        let order = |ordered| match ordered {
            true => spillway::KeyOrder::Ordered,
            false => spillway::KeyOrder::Hashed,
        };
        let ks = py.allow_threads(|| {
            // Not asked for an order: the one an existing keyspace was made with, else hashed.
            let stored = match (ordered, db.keyspace_handle(name)) {
                (None, Some(existing)) => Some(existing.key_order()?),
                _ => None,
            };
            let order = stored.unwrap_or_else(|| order(ordered.unwrap_or(false)));
            db.keyspace(name, opts.key_order(order))
        });
        Ok(PyKeyspace::new(
            py,
            slf.clone().unbind(),
            ks.map_err(to_py)?,
        ))
    }

    /// The default keyspace: the one the `Db`'s own methods read and write, as a `Keyspace`.
    fn default_keyspace(slf: &Bound<'_, Self>) -> PyResult<PyKeyspace> {
        let ks = slf.borrow().handle()?.default_keyspace();
        Ok(PyKeyspace::new(slf.py(), slf.clone().unbind(), ks))
    }

    /// The names of the store's named keyspaces, sorted (the default keyspace is not listed).
    fn keyspaces(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.keyspaces())
    }

    /// Remove keyspace `name` and everything in it, durably and at once (no deletes written
    /// key by key). `False` if there was none. Its `Keyspace` objects then raise
    /// `KeyspaceDroppedError`. The default keyspace (`""`) cannot be dropped
    /// (`InvalidKeyspaceError`).
    fn drop_keyspace(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let db = self.handle()?;
        py.allow_threads(|| db.drop_keyspace(name)).map_err(to_py)
    }

    /// Exchange the contents of keyspaces `a` and `b` (`""` is the default keyspace),
    /// durably and atomically; `Keyspace` objects keep their names and so see the other
    /// contents. Both must exist, with the same key order and merge operator
    /// (`InvalidKeyspaceError` otherwise). It flushes first: it costs what `flush()` does.
    fn swap_keyspaces(&self, py: Python<'_>, a: &str, b: &str) -> PyResult<()> {
        let db = self.handle()?;
        py.allow_threads(|| db.swap_keyspaces(a, b)).map_err(to_py)
    }

    /// An optimistic, serializable transaction over any keyspaces, its snapshot taken now:
    /// `with db.transaction() as tx:` commits when the block ends without an exception
    /// (raising `ConflictError`, with nothing applied, if something it read was written
    /// since its snapshot) and rolls back if it ends with one. `sync` is the block's commit's
    /// (`None`: the store's `sync_by_default`). See `Transaction`.
    #[pyo3(signature = (*, sync=None))]
    fn transaction(slf: &Bound<'_, Self>, sync: Option<bool>) -> PyResult<PyTransaction> {
        let tx = slf.borrow().handle()?.transaction();
        Ok(PyTransaction::new(slf, tx, sync))
    }

    /// Make every write that returned before this call durable, whatever its `sync`: one
    /// fsync of the log for all of them. After it returns they survive a power loss.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.allow_threads(|| db.sync()).map_err(to_py)
    }

    /// Spill the records held in memory into the tree on disk. Durability needs no flush
    /// (writes are in the log when they return): `sync` is what makes them durable.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.allow_threads(|| db.flush()).map_err(to_py)
    }

    /// Read every node selector an open left on disk into memory now (see the engine's
    /// `Db::load_selectors`; the open's background preload, `preload_selectors`, does the
    /// same unasked): afterwards a GET reads one page from the device.
    fn load_selectors(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.allow_threads(|| db.load_selectors()).map_err(to_py)
    }

    /// Every key and value: in key order in an ordered store, hash order in a hashed one. A
    /// key whose merge operands fail to fold raises `MergeFailedError` in its place, and the
    /// iterator goes on past it at the next `next()` (see `Iter`).
    fn iter(&self) -> PyResult<PyIter> {
        Ok(PyIter::new(self.handle()?.iter(), false))
    }

    /// The keys in `[start, end)` and their values, in key order (`None`: unbounded);
    /// `reverse=True` goes from the end. Ordered stores only (`NotOrderedError`).
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

    /// The keys starting with `prefix` and their values, in key order. Ordered stores only.
    #[pyo3(signature = (prefix, reverse=false))]
    fn prefix(&self, prefix: &Bound<'_, PyAny>, reverse: bool) -> PyResult<PyIter> {
        let it = self.handle()?.prefix(bytes_of(prefix)?).map_err(to_py)?;
        Ok(PyIter::new(it, reverse))
    }

    /// Counters since open, the tree's shape and memory, as a dict (the engine's
    /// `spillway::Stats`). `live_keys` and `live_bytes` are estimates of the keys on disk
    /// only: records still in the in-memory root buffer (`buffer_bytes`) are not counted
    /// until a spill or `flush()` writes them; `estimate_keys()` counts both.
    fn stats(&self, py: Python<'_>) -> PyResult<PyObject> {
        let db = self.handle()?;
        let s = py.allow_threads(|| db.stats());
        crate::stats::to_dict(py, &s)
    }

    /// The number of distinct keys the store holds (deleted ones not counted), estimated:
    /// exact while its lists are small, within a few percent from samples of one key in
    /// 256 of larger lists (an ordered store's may be a key or two off). Unlike
    /// `stats()["live_keys"]` it counts the keys in the in-memory root buffer too, and so
    /// costs a pass over them. `None` while lists written before format 5, which hold no
    /// samples, remain in the store.
    fn estimate_keys(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let db = self.handle()?;
        Ok(py.allow_threads(|| db.estimate_keys()))
    }

    /// Whether the store keeps keys in byte order.
    #[getter]
    fn ordered(&self) -> PyResult<bool> {
        Ok(self.handle()?.key_order() == spillway::KeyOrder::Ordered)
    }

    /// Flush and close the store; later calls raise `ClosedError`, as do those of its
    /// `Keyspace`s and open `Transaction`s (rolled back). Closing twice is fine. A snapshot
    /// not yet released keeps the store open until it is.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let (db, holders) = {
            let mut db = self.db.write().unwrap_or_else(|p| p.into_inner());
            let mut holders = self.holders.lock().unwrap_or_else(|p| p.into_inner());
            (db.take(), std::mem::take(&mut *holders))
        };
        // Keyspace handles and transactions let go of the store (a transaction rolls back).
        holders
            .iter()
            .filter_map(Weak::upgrade)
            .for_each(|h| h.release());
        let Some(db) = db else { return Ok(()) };
        match Arc::try_unwrap(db) {
            Ok(db) => py.allow_threads(|| db.close()).map_err(to_py),
            // A snapshot or another thread still holds it: it closes when they let go.
            Err(_) => Ok(()),
        }
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        match self.get(py, key, None)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// `db[key] = value`: `put(key, value)`, fsynced only if the store was opened with
    /// `sync_by_default=True`.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, None)
    }

    /// `del db[key]`: `delete(key)`, fsynced only if the store was opened with
    /// `sync_by_default=True`. It deletes without reading first, so an absent key raises
    /// nothing. `del db[start:end]` (either may be left out) is `delete_range(start, end)`.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        match crate::iter::slice_bounds(key)? {
            Some((start, end)) => self.delete_range(py, start.as_ref(), end.as_ref(), None),
            None => self.delete(py, key, None),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.get(py, key, None)?.is_some())
    }

    /// Iterating a `Db` gives its keys, as a dict's does.
    fn __iter__(&self) -> PyResult<PyIter> {
        Ok(PyIter::new(self.handle()?.iter(), false).keys_only())
    }

    /// The keys from the last: key order in an ordered store, reversed hash order in a
    /// hashed one.
    fn __reversed__(&self) -> PyResult<PyIter> {
        Ok(PyIter::new(self.handle()?.iter(), true).keys_only())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: Option<PyObject>,
        _value: Option<PyObject>,
        _traceback: Option<PyObject>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// A store is a handle on files and a lock: it cannot be pickled or copied to another
    /// process. Open the path there instead.
    fn __reduce__(&self) -> PyResult<PyObject> {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "a spillway.Db cannot be pickled: open its path in the other process instead",
        ))
    }
}
