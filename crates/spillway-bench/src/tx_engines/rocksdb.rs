//! RocksDB's `OptimisticTransactionDB` through the `rocksdb` crate (the same bundled build
//! as the plain workloads'): reads through `get_for_update`, whose keys the commit checks.

use std::path::Path;

use rocksdb::{
    ErrorKind, OptimisticTransactionDB, OptimisticTransactionOptions, Transaction, WriteOptions,
};

use crate::tx_engine::{committed, decide, Body, Outcome, TxEngine, TxError, TxOps};

struct RocksDb {
    db: OptimisticTransactionDB,
    write: WriteOptions,
    tx: OptimisticTransactionOptions,
}

pub fn open(dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
    let opts = crate::engines::rocksdb::base_options();
    let db = OptimisticTransactionDB::open(&opts, dir).map_err(|e| e.to_string())?;
    let mut write = WriteOptions::default();
    write.set_sync(durable);
    Ok(Box::new(RocksDb {
        db,
        write,
        // No snapshot: a key is checked from its `get_for_update` on, which is all a
        // transfer needs (it writes only what it read) and what RocksDB's docs recommend.
        tx: OptimisticTransactionOptions::default(),
    }))
}

/// An optimistic transaction validates at commit: `Busy` is a key written since this
/// transaction read it, `TryAgain` a memtable history too short to tell — both a conflict.
fn classify(e: rocksdb::Error) -> TxError {
    match e.kind() {
        ErrorKind::Busy | ErrorKind::TryAgain => TxError::Conflict,
        _ => TxError::Failed(e.to_string()),
    }
}

struct Ops<'a>(&'a Transaction<'a, OptimisticTransactionDB>);

impl TxOps for Ops<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError> {
        // `exclusive` means nothing to an optimistic transaction, which takes no locks.
        self.0.get_for_update(key, true).map_err(classify)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError> {
        self.0.put(key, value).map_err(classify)
    }
}

impl TxEngine for RocksDb {
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String> {
        let tx = self.db.transaction_opt(&self.write, &self.tx);
        if let Some(done) = decide(body(&mut Ops(&tx)))? {
            return Ok(done); // dropping an uncommitted transaction rolls it back
        }
        committed(tx.commit().map_err(classify))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.db.get(key).map_err(|e| e.to_string())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // Unsynced commits reach the log file at once; this makes them durable, as Spillway's
        // close does. Dropping closes.
        self.db.flush_wal(true).map_err(|e| e.to_string())
    }
}
