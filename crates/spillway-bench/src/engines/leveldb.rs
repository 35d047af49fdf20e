//! LevelDB 1.22 through the `leveldb-sys` FFI, built from its bundled sources by CMake in
//! RelWithDebInfo/Release mode (both define NDEBUG).

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::ptr;
use std::sync::Mutex;

use leveldb_sys::*;

use crate::counter::CounterBatch;
use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

struct LevelDb {
    db: *mut leveldb_t,
    options: *mut leveldb_options_t,
    filter: *mut leveldb_filterpolicy_t,
    read: *mut leveldb_readoptions_t,
    sync: *mut leveldb_writeoptions_t,
    no_sync: *mut leveldb_writeoptions_t,
    /// Held by each batch of increments from its first read to its write: LevelDB has no
    /// transactions, so two read-add-writes of one counter must not interleave.
    counting: Mutex<()>,
}

// SAFETY: LevelDB's DB handle is safe for concurrent use from many threads, and the option
// objects are only read after creation.
unsafe impl Send for LevelDb {}
unsafe impl Sync for LevelDb {}

/// Turn LevelDB's malloc'ed error string into an `Err`, freeing it.
unsafe fn check(err: *mut c_char) -> Result<(), String> {
    if err.is_null() {
        return Ok(());
    }
    let msg = CStr::from_ptr(err).to_string_lossy().into_owned();
    leveldb_free(err as *mut c_void);
    Err(msg)
}

pub fn open(dir: &Path) -> Result<Box<dyn Engine>, String> {
    let name = CString::new(dir.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: plain use of the LevelDB C API; every pointer is checked or owned below.
    unsafe {
        let options = leveldb_options_create();
        leveldb_options_set_create_if_missing(options, 1);
        leveldb_options_set_compression(options, Compression::No);
        let filter = leveldb_filterpolicy_create_bloom(10);
        leveldb_options_set_filter_policy(options, filter);
        let mut err = ptr::null_mut();
        let db = leveldb_open(options, name.as_ptr(), &mut err);
        let engine = LevelDb {
            db,
            options,
            filter,
            read: leveldb_readoptions_create(),
            sync: leveldb_writeoptions_create(),
            no_sync: leveldb_writeoptions_create(),
            counting: Mutex::new(()),
        };
        leveldb_writeoptions_set_sync(engine.sync, 1);
        check(err)?;
        Ok(Box::new(engine))
    }
}

impl LevelDb {
    /// Write `records` as one atomic batch.
    fn put_all<'a>(
        &self,
        records: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        sync: bool,
    ) -> Result<(), String> {
        // SAFETY: the batch is created, filled and destroyed here; keys and values outlive it.
        unsafe {
            let b = leveldb_writebatch_create();
            for (k, v) in records {
                leveldb_writebatch_put(b, k.as_ptr().cast(), k.len(), v.as_ptr().cast(), v.len());
            }
            let mut err = ptr::null_mut();
            let opts = if sync { self.sync } else { self.no_sync };
            leveldb_write(self.db, opts, b, &mut err);
            leveldb_writebatch_destroy(b);
            check(err)
        }
    }
}

impl Engine for LevelDb {
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        self.put_all(batch.iter(), sync)
    }

    /// LevelDB has no merge operator: a user counting with it reads each counter, adds and
    /// writes the new values in one batch, holding a lock across all of it so that no other
    /// increment reads a counter between this read and this write. Repeated keys are summed
    /// first, so each counter is read once (a read would not see the batch's own writes).
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String> {
        let _counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        let values = batch.new_values(|k| self.get(k))?;
        self.put_all(values.iter().map(|(k, v)| (*k, &v[..])), sync)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        // SAFETY: LevelDB returns a malloc'ed copy of the value (or null), which we copy and free.
        unsafe {
            let mut len = 0;
            let mut err = ptr::null_mut();
            let v = leveldb_get(
                self.db,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            check(err)?;
            if v.is_null() {
                return Ok(None);
            }
            let out = std::slice::from_raw_parts(v as *const u8, len).to_vec();
            leveldb_free(v as *mut c_void);
            Ok(Some(out))
        }
    }

    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
        // SAFETY: the iterator is created here and destroyed on every path below (by `Iter`'s
        // drop); the key and value it lends are copied out (counted) before it moves on.
        unsafe {
            let it = Iter(leveldb_create_iterator(self.db, self.read));
            leveldb_iter_seek(it.0, start.as_ptr().cast(), start.len());
            let mut tally = ScanTally::new(start, limit);
            while tally.wants_more() {
                if leveldb_iter_valid(it.0) == 0 {
                    it.error()?; // invalid is the end of the keys, or an error
                    return Ok(tally.finish(true));
                }
                let (mut klen, mut vlen) = (0usize, 0usize);
                // The C API writes the lengths through pointers it declares `const`.
                let k = leveldb_iter_key(it.0, &raw mut klen);
                let v = leveldb_iter_value(it.0, &raw mut vlen);
                tally.add(
                    std::slice::from_raw_parts(k.cast(), klen),
                    std::slice::from_raw_parts(v.cast(), vlen),
                );
                leveldb_iter_next(it.0);
            }
            it.error()?;
            Ok(tally.finish(false))
        }
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        Ok(()) // Drop closes; LevelDB's close has no error to report.
    }
}

/// A LevelDB iterator, destroyed when dropped (so an early return cannot leak it).
struct Iter(*mut leveldb_iterator_t);

impl Iter {
    /// The error that ended the iteration, if one did.
    unsafe fn error(&self) -> Result<(), String> {
        let mut err: *mut c_char = ptr::null_mut();
        leveldb_iter_get_error(self.0, (&mut err as *mut *mut c_char).cast());
        check(err)
    }
}

impl Drop for Iter {
    fn drop(&mut self) {
        // SAFETY: created by `leveldb_create_iterator` and destroyed only here, before the DB
        // it reads (an `Iter` never outlives the `scan` call that borrows the engine).
        unsafe { leveldb_iter_destroy(self.0) }
    }
}

impl Drop for LevelDb {
    fn drop(&mut self) {
        // SAFETY: each object was created in `open` and is destroyed exactly once, the DB first.
        unsafe {
            if !self.db.is_null() {
                leveldb_close(self.db);
            }
            leveldb_readoptions_destroy(self.read);
            leveldb_writeoptions_destroy(self.sync);
            leveldb_writeoptions_destroy(self.no_sync);
            leveldb_options_destroy(self.options);
            leveldb_filterpolicy_destroy(self.filter);
        }
    }
}
