//! redb 4, a copy-on-write B-tree in pure Rust (one file, no log: a commit writes the tree's
//! changed pages and a new root), through its own API: one table of byte keys and values.

use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use crate::counter::{self, CounterBatch};
use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bench");

/// redb's `Database` is thread-safe: readers run concurrently, each in its own read
/// transaction, while write transactions take turns.
struct Redb {
    db: Database,
}

pub fn open(dir: &Path) -> Result<Box<dyn Engine>, String> {
    let db = Database::create(dir.join("bench.redb")).map_err(|e| e.to_string())?;
    // Create the table up front: a read transaction cannot open a table no write made yet.
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    txn.open_table(TABLE).map_err(|e| e.to_string())?;
    txn.commit().map_err(|e| e.to_string())?;
    Ok(Box::new(Redb { db }))
}

impl Redb {
    /// One write transaction: `fill` writes into its table, then the commit.
    /// `Durability::Immediate` (redb's default) returns once the commit is on disk;
    /// `Durability::None` only makes it visible to readers — redb's non-fsync mode, made
    /// durable by the next immediate commit or the close.
    fn transact(
        &self,
        sync: bool,
        fill: impl FnOnce(&mut redb::Table<'_, &'static [u8], &'static [u8]>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut txn = self.db.begin_write().map_err(|e| e.to_string())?;
        let durability = if sync {
            Durability::Immediate
        } else {
            Durability::None
        };
        txn.set_durability(durability).map_err(|e| e.to_string())?;
        {
            let mut table = txn.open_table(TABLE).map_err(|e| e.to_string())?;
            fill(&mut table)?;
        }
        txn.commit().map_err(|e| e.to_string())
    }
}

impl Engine for Redb {
    /// One write transaction per batch.
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        self.transact(sync, |table| {
            for (k, v) in batch.iter() {
                table.insert(k, v).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    /// redb has no merge operator: a user counting with it reads each counter inside the
    /// write transaction, adds and inserts the new value; write transactions take turns, so
    /// no other increment reads between. Repeated keys are summed first, so each counter is
    /// read and inserted once.
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String> {
        self.transact(sync, |table| {
            for (k, delta) in batch.summed() {
                let now = match table.get(k).map_err(|e| e.to_string())? {
                    Some(v) => counter::decode(v.value())?,
                    None => 0,
                };
                let value = counter::encode(now.wrapping_add(delta));
                table.insert(k, &value[..]).map_err(|e| e.to_string())?;
            }
            Ok(())
        })
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = txn.open_table(TABLE).map_err(|e| e.to_string())?;
        let value = table.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = txn.open_table(TABLE).map_err(|e| e.to_string())?;
        let mut it = table.range(start..).map_err(|e| e.to_string())?;
        let mut tally = ScanTally::new(start, limit);
        while tally.wants_more() {
            let Some(item) = it.next() else {
                return Ok(tally.finish(true));
            };
            let (k, v) = item.map_err(|e| e.to_string())?;
            tally.add(k.value(), v.value());
        }
        Ok(tally.finish(false))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // An immediate commit makes every non-durable one before it durable (redb's rule), as
        // Spillway's close syncs its log; then the close records the allocator state.
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        txn.commit().map_err(|e| e.to_string())?;
        self.db.close().map_err(|e| e.to_string())
    }
}
