//! redb 4's write transactions. redb runs them one at a time (`begin_write` waits for the
//! one before to end), so a transfer never conflicts: its cost is that the threads queue.

use std::path::Path;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

use crate::tx_engine::{decide, Body, Outcome, TxEngine, TxError, TxOps};

const ACCOUNTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("accounts");

struct Redb {
    db: Database,
    durability: Durability,
}

pub fn open(dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
    let db = Database::create(dir.join("accounts.redb")).map_err(|e| e.to_string())?;
    // Created up front: a read transaction cannot open a table no write made yet.
    let txn = db.begin_write().map_err(|e| e.to_string())?;
    txn.open_table(ACCOUNTS).map_err(|e| e.to_string())?;
    txn.commit().map_err(|e| e.to_string())?;
    Ok(Box::new(Redb {
        db,
        durability: if durable {
            Durability::Immediate
        } else {
            Durability::None
        },
    }))
}

struct Ops<'a, 'txn>(&'a mut redb::Table<'txn, &'static [u8], &'static [u8]>);

impl TxOps for Ops<'_, '_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError> {
        let value = self.0.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError> {
        self.0.insert(key, value).map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl TxEngine for Redb {
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String> {
        let mut txn = self.db.begin_write().map_err(|e| e.to_string())?;
        txn.set_durability(self.durability)
            .map_err(|e| e.to_string())?;
        let decided = {
            let mut table = txn.open_table(ACCOUNTS).map_err(|e| e.to_string())?;
            decide(body(&mut Ops(&mut table)))?
        };
        if let Some(done) = decided {
            txn.abort().map_err(|e| e.to_string())?;
            return Ok(done);
        }
        txn.commit().map_err(|e| e.to_string())?;
        Ok(Outcome::Committed)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let txn = self.db.begin_read().map_err(|e| e.to_string())?;
        let table = txn.open_table(ACCOUNTS).map_err(|e| e.to_string())?;
        let value = table.get(key).map_err(|e| e.to_string())?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // An immediate commit makes every non-durable one before it durable (redb's rule).
        let txn = self.db.begin_write().map_err(|e| e.to_string())?;
        txn.commit().map_err(|e| e.to_string())?;
        self.db.close().map_err(|e| e.to_string())
    }
}
