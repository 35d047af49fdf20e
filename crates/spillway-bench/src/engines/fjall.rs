//! fjall 3, an LSM-tree in pure Rust (a journal, memtables, leveled compaction), through its
//! own API: one keyspace (fjall 3's name for what fjall 2 called a partition) in one database.

use std::path::Path;
use std::sync::Mutex;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::counter::CounterBatch;
use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

/// Both handles are reference-counted and thread-safe: fjall's API takes `&self` everywhere.
struct Fjall {
    db: Database,
    keys: Keyspace,
    /// Held by each batch of increments from its first read to its commit: a plain keyspace's
    /// batch reads nothing, so two read-add-writes of one counter must not interleave.
    counting: Mutex<()>,
}

pub fn open(dir: &Path) -> Result<Box<dyn Engine>, String> {
    let db = Database::builder(dir).open().map_err(|e| e.to_string())?;
    let keys = db
        .keyspace("bench", KeyspaceCreateOptions::default)
        .map_err(|e| e.to_string())?;
    Ok(Box::new(Fjall {
        db,
        keys,
        counting: Mutex::new(()),
    }))
}

impl Fjall {
    /// Write `records` as one atomic batch. fjall's default for a batch is
    /// `PersistMode::Buffer` (the journal written to the OS, not synced), which is what the
    /// others do unsynced; a synced batch returns once its journal is fdatasynced, as
    /// RocksDB's and LevelDB's do.
    fn put_all<'a>(
        &self,
        records: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        sync: bool,
    ) -> Result<(), String> {
        let mut b = self.db.batch();
        if sync {
            b = b.durability(Some(PersistMode::SyncData));
        }
        for (k, v) in records {
            b.insert(&self.keys, k, v);
        }
        b.commit().map_err(|e| e.to_string())
    }
}

impl Engine for Fjall {
    /// One atomic write batch.
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        self.put_all(batch.iter(), sync)
    }

    /// fjall has no merge operator: a user counting with it reads each counter, adds and
    /// writes the new values in one batch, holding a lock across all of it so that no other
    /// increment reads a counter between this read and this commit (fjall's transactional
    /// keyspaces would do the same with conflict checks). Repeated keys are summed first, so
    /// each counter is read once (a read would not see the batch's own writes).
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String> {
        let _counting = self.counting.lock().unwrap_or_else(|e| e.into_inner());
        let values = batch.new_values(|k| self.get(k))?;
        self.put_all(values.iter().map(|(k, v)| (*k, &v[..])), sync)
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
