//! fjall 3, an LSM-tree in pure Rust (a journal, memtables, leveled compaction), through its
//! own API: one keyspace (fjall 3's name for what fjall 2 called a partition) in one database.

use std::path::Path;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

/// Both handles are reference-counted and thread-safe: fjall's API takes `&self` everywhere.
struct Fjall {
    db: Database,
    keys: Keyspace,
}

pub fn open(dir: &Path) -> Result<Box<dyn Engine>, String> {
    let db = Database::builder(dir).open().map_err(|e| e.to_string())?;
    let keys = db
        .keyspace("bench", KeyspaceCreateOptions::default)
        .map_err(|e| e.to_string())?;
    Ok(Box::new(Fjall { db, keys }))
}

impl Engine for Fjall {
    /// One atomic write batch. fjall's default for a batch is `PersistMode::Buffer` (the
    /// journal written to the OS, not synced), which is what the others do unsynced; a synced
    /// batch returns once its journal is fdatasynced, as RocksDB's and LevelDB's do.
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        let mut b = self.db.batch();
        if sync {
            b = b.durability(Some(PersistMode::SyncData));
        }
        for (k, v) in batch.iter() {
            b.insert(&self.keys, k, v);
        }
        b.commit().map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.keys
            .get(key)
            .map(|v| v.map(|v| v.to_vec()))
            .map_err(|e| e.to_string())
    }

    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
        let mut tally = ScanTally::new(start, limit);
        let mut it = self.keys.range(start..);
        while tally.wants_more() {
            let Some(guard) = it.next() else {
                return Ok(tally.finish(true));
            };
            let (k, v) = guard.into_inner().map_err(|e| e.to_string())?;
            tally.add(&k, &v);
        }
        Ok(tally.finish(false))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // Make unsynced journal writes durable, as Spillway's close does; dropping the last
        // handle then stops fjall's background threads.
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| e.to_string())
    }
}
