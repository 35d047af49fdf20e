//! RocksDB as a session store, as its users build one: the expiry kept in front of the value,
//! a compaction filter that removes a record whose expiry has passed, and GETs that treat an
//! expired value as absent — the filter only runs when a compaction happens to rewrite the
//! record, so an expired record can be read long after its time.

use std::path::Path;
use std::time::{Duration, SystemTime};

use rocksdb::{compaction_filter::Decision, WriteBatch, WriteOptions, DB};

use crate::engine::RecordBatch;
use crate::session_engine::{expired, millis, unwrap_live, with_expiry, SessionEngine};

struct RocksDb {
    db: DB,
    sync: WriteOptions,
    no_sync: WriteOptions,
}

pub fn open(dir: &Path) -> Result<Box<dyn SessionEngine>, String> {
    let mut opts = crate::engines::rocksdb::base_options();
    // Called on each record a compaction (or flush) rewrites, on RocksDB's own threads.
    opts.set_compaction_filter("expired", |_level: u32, _key: &[u8], value: &[u8]| {
        if expired(value, millis(SystemTime::now())) {
            Decision::Remove
        } else {
            Decision::Keep
        }
    });
    let db = DB::open(&opts, dir).map_err(|e| e.to_string())?;
    let mut sync = WriteOptions::default();
    sync.set_sync(true);
    Ok(Box::new(RocksDb {
        db,
        sync,
        no_sync: WriteOptions::default(),
    }))
}

impl SessionEngine for RocksDb {
    fn put(&self, batch: &RecordBatch, ttl: Duration, sync: bool) -> Result<(), String> {
        let at = millis(SystemTime::now() + ttl);
        let opts = if sync { &self.sync } else { &self.no_sync };
        let mut stored = Vec::new();
        if batch.len() == 1 {
            let (k, v) = batch.iter().next().expect("one record");
            with_expiry(at, v, &mut stored);
            return self.db.put_opt(k, &stored, opts).map_err(|e| e.to_string());
        }
        let mut b = WriteBatch::default();
        for (k, v) in batch.iter() {
            with_expiry(at, v, &mut stored);
            b.put(k, &stored);
        }
        self.db.write_opt(b, opts).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self.db.get_pinned(key).map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(stored) => unwrap_live(&stored, millis(SystemTime::now())),
        }
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.db.flush_wal(true).map_err(|e| e.to_string())
    }
}
