//! fjall 3's optimistic transactional database (serializable snapshot isolation: a commit
//! fails with `Conflict` if a key it read was written since its snapshot), one keyspace.

use std::path::Path;

use fjall::{
    KeyspaceCreateOptions, OptimisticTxDatabase, OptimisticTxKeyspace, OptimisticWriteTx,
    PersistMode, Readable,
};

use crate::tx_engine::{decide, Body, Outcome, TxEngine, TxError, TxOps};

struct Fjall {
    db: OptimisticTxDatabase,
    accounts: OptimisticTxKeyspace,
    persist: PersistMode,
}

pub fn open(dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
    let db = OptimisticTxDatabase::builder(dir)
        .open()
        .map_err(|e| e.to_string())?;
    let accounts = db
        .keyspace("accounts", KeyspaceCreateOptions::default)
        .map_err(|e| e.to_string())?;
    Ok(Box::new(Fjall {
        db,
        accounts,
        // SyncAll (fsync) as issue 29 asks; Buffer is fjall's own default for a transaction.
        persist: if durable {
            PersistMode::SyncAll
        } else {
            PersistMode::Buffer
        },
    }))
}

struct Ops<'a> {
    tx: &'a mut OptimisticWriteTx,
    accounts: &'a OptimisticTxKeyspace,
}

impl TxOps for Ops<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError> {
        let value = self.tx.get(self.accounts, key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError> {
        self.tx.insert(self.accounts, key, value);
        Ok(())
    }
}

impl TxEngine for Fjall {
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String> {
        let mut tx = self
            .db
            .write_tx()
            .map_err(|e| e.to_string())?
            .durability(Some(self.persist));
        let mut ops = Ops {
            tx: &mut tx,
            accounts: &self.accounts,
        };
        if let Some(done) = decide(body(&mut ops))? {
            return Ok(done); // dropping a transaction rolls it back
        }
        match tx.commit().map_err(|e| e.to_string())? {
            Ok(()) => Ok(Outcome::Committed),
            Err(fjall::Conflict) => Ok(Outcome::Conflict),
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let value = self.accounts.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.to_vec()))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(|e| e.to_string())
    }
}
