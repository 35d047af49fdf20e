//! Spillway as a session store: default options, each record written with its expiry — the
//! engine hides it from every read after its time and drops it wherever records meet.

use std::path::Path;
use std::time::{Duration, SystemTime};

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

use crate::engine::RecordBatch;
use crate::session_engine::SessionEngine;

struct Spillway(Db);

/// Default options, in `order` where given (a new store is hashed by default).
pub fn open(dir: &Path, order: Option<KeyOrder>) -> Result<Box<dyn SessionEngine>, String> {
    let mut opts = Options::default();
    if let Some(order) = order {
        opts = opts.key_order(order);
    }
    let db = Db::open(dir, opts).map_err(|e| e.to_string())?;
    Ok(Box::new(Spillway(db)))
}

impl SessionEngine for Spillway {
    /// One record unsynced: `Db::put_ttl` (default options write unsynced). Otherwise one
    /// batch of `put_expiring` at now + `ttl`, which is what `put_ttl` writes.
    fn put(&self, batch: &RecordBatch, ttl: Duration, sync: bool) -> Result<(), String> {
        if batch.len() == 1 && !sync {
            let (k, v) = batch.iter().next().expect("one record");
            return self.0.put_ttl(k, v, ttl).map_err(|e| e.to_string());
        }
        let at = SystemTime::now() + ttl;
        let mut b = WriteBatch::new();
        for (k, v) in batch.iter() {
            b.put_expiring(k, v, at);
        }
        self.0
            .write(b, WriteOptions { sync })
            .map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.0.get(key).map_err(|e| e.to_string())
    }

    fn stats(&self) -> Option<spillway::Stats> {
        Some(self.0.stats())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.0.close().map_err(|e| e.to_string())
    }
}
