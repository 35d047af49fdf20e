//! RocksDB through the `rocksdb` crate, built from its bundled sources with NDEBUG.

use std::path::Path;

use rocksdb::{
    BlockBasedOptions, DBCompressionType, MergeOperands, Options, WriteBatch, WriteOptions, DB,
};

use crate::counter::{self, CounterBatch};
use crate::engine::{Engine, RecordBatch};
use crate::scan::{ScanResult, ScanTally};

struct RocksDb {
    db: DB,
    sync: WriteOptions,
    no_sync: WriteOptions,
}

pub fn open(dir: &Path) -> Result<Box<dyn Engine>, String> {
    let mut opts = base_options();
    // Associative: RocksDB may also fold operands with one another (partial merges) before
    // it meets the base value, as Spillway's U64Add does.
    opts.set_merge_operator_associative("uint64add", uint64add);
    let db = DB::open(&opts, dir).map_err(|e| e.to_string())?;
    let mut sync = WriteOptions::default();
    sync.set_sync(true);
    Ok(Box::new(RocksDb {
        db,
        sync,
        no_sync: WriteOptions::default(),
    }))
}

/// What every RocksDB run here starts from: its defaults, created if missing, no compression,
/// 10-bit Bloom filters (as the other engines' runs).
pub(crate) fn base_options() -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.set_compression_type(DBCompressionType::None);
    let mut table = BlockBasedOptions::default();
    table.set_bloom_filter(10.0, false);
    opts.set_block_based_table_factory(&table);
    opts
}

/// RocksDB's `UInt64AddOperator` (utilities/merge_operators, not exposed by the `rocksdb`
/// crate), as a Rust callback: little-endian u64s added wrapping, an absent base counting 0.
/// A value or operand of another length fails the merge (`None`), which RocksDB reports as a
/// corruption error on the read — as Spillway's U64Add fails the read.
fn uint64add(_key: &[u8], base: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    counter::fold(base, operands).map(|sum| counter::encode(sum).to_vec())
}

impl Engine for RocksDb {
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        let mut b = WriteBatch::default();
        for (k, v) in batch.iter() {
            b.put(k, v);
        }
        let opts = if sync { &self.sync } else { &self.no_sync };
        self.db.write_opt(b, opts).map_err(|e| e.to_string())
    }

    /// One merge operand per increment, in one batch: blind writes, no read.
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String> {
        let mut b = WriteBatch::default();
        for (k, delta) in batch.iter() {
            b.merge(k, counter::encode(delta));
        }
        let opts = if sync { &self.sync } else { &self.no_sync };
        self.db.write_opt(b, opts).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db.get(key).map_err(|e| e.to_string())
    }

    /// The raw iterator: keys and values are borrowed from RocksDB, not copied per record, as
    /// LevelDB's C iterator gives them.
    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
        let mut tally = ScanTally::new(start, limit);
        let mut it = self.db.raw_iterator();
        it.seek(start);
        while tally.wants_more() {
            let Some((k, v)) = it.item() else {
                // Not valid: the end of the keys, or an error that `status` reports.
                it.status().map_err(|e| e.to_string())?;
                return Ok(tally.finish(true));
            };
            tally.add(k, v);
            it.next();
        }
        it.status().map_err(|e| e.to_string())?;
        Ok(tally.finish(false))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // Make unsynced log writes durable, as Spillway's close does; then drop closes.
        self.db.flush_wal(true).map_err(|e| e.to_string())
    }
}
