//! LMDB through heed (lmdb-master-sys compiles LMDB's C from source). LMDB runs one write
//! transaction at a time (`write_txn` waits on the environment's writer mutex), so a transfer
//! never conflicts; a commit writes the B-tree's new pages and fdatasyncs.

use std::path::Path;

use heed::types::Bytes;
use heed::{CommitOrAbort, Database, Env, EnvFlags, EnvOpenOptions, RwTxn};

use crate::tx_engine::{decide, Body, Outcome, TxEngine, TxError, TxOps};

/// Address space reserved for the map, not memory or disk: 1 M accounts take a few tens of
/// MiB, and copy-on-write pages freed by a commit are reused once no reader holds them.
const MAP_SIZE: usize = 4 << 30;

struct Lmdb {
    env: Env,
    accounts: Database<'static, Bytes, Bytes>,
}

pub fn open(dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
    let mut options = EnvOpenOptions::new();
    options.map_size(MAP_SIZE).max_dbs(1);
    if !durable {
        // SAFETY: NO_SYNC only leaves the commits' fsync to `close` (`force_sync`).
        unsafe { options.flags(EnvFlags::NO_SYNC) };
    }
    // SAFETY: heed's one requirement — the environment is not opened twice in this process
    // at once — holds: each run opens its own folder once, and closes it before reopening.
    let env = unsafe { options.open(dir) }.map_err(|e| e.to_string())?;
    let wtxn = env.write_txn().map_err(|e| e.to_string())?;
    let accounts = env
        .create_databases_and_commit(wtxn, |opener, wtxn| {
            opener
                .create_database::<Bytes, Bytes>(wtxn, Some("accounts"))
                .map(CommitOrAbort::<_, ()>::Commit)
        })
        .map_err(|e: heed::Error| e.to_string())?
        .unwrap_commit();
    Ok(Box::new(Lmdb { env, accounts }))
}

struct Ops<'a, 'e> {
    txn: &'a mut RwTxn<'e>,
    accounts: Database<'static, Bytes, Bytes>,
}

impl TxOps for Ops<'_, '_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError> {
        let value = self
            .accounts
            .get(self.txn, key)
            .map_err(|e| e.to_string())?;
        Ok(value.map(<[u8]>::to_vec))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError> {
        self.accounts
            .put(self.txn, key, value)
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl TxEngine for Lmdb {
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String> {
        let mut txn = self.env.write_txn().map_err(|e| e.to_string())?;
        let mut ops = Ops {
            txn: &mut txn,
            accounts: self.accounts,
        };
        if let Some(done) = decide(body(&mut ops))? {
            txn.abort();
            return Ok(done);
        }
        txn.commit().map_err(|e| e.to_string())?;
        Ok(Outcome::Committed)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let txn = self.env.read_txn().map_err(|e| e.to_string())?;
        let value = self.accounts.get(&txn, key).map_err(|e| e.to_string())?;
        Ok(value.map(<[u8]>::to_vec))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.env.force_sync().map_err(|e| e.to_string())?;
        // Wait until the environment is really closed, so that a reopen in this process (the
        // check after a run) does not meet it still open.
        let Lmdb { env, accounts: _ } = *self;
        env.prepare_for_closing().wait();
        Ok(())
    }
}
