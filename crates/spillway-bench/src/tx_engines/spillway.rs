//! Spillway's optimistic serializable transactions (issue 29) on one keyspace: a commit fails
//! with `Error::Conflict`, nothing applied, if a key it read was written since its snapshot.

use std::path::Path;

use spillway::{Db, Error, Keyspace, KeyspaceOptions, Options, Transaction, WriteOptions};

use crate::tx_engine::{committed, decide, Body, Outcome, TxEngine, TxError, TxOps};

struct Spillway {
    db: Db,
    accounts: Keyspace,
    commit: WriteOptions,
}

pub fn open(dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
    let db = Db::open(dir, Options::default()).map_err(|e| e.to_string())?;
    let accounts = db
        .keyspace("accounts", KeyspaceOptions::default())
        .map_err(|e| e.to_string())?;
    Ok(Box::new(Spillway {
        db,
        accounts,
        commit: WriteOptions { sync: durable },
    }))
}

fn classify(e: Error) -> TxError {
    match e {
        Error::Conflict => TxError::Conflict,
        other => TxError::Failed(other.to_string()),
    }
}

struct Ops<'a> {
    tx: &'a mut Transaction,
    accounts: &'a Keyspace,
}

impl TxOps for Ops<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError> {
        self.tx.get(self.accounts, key).map_err(classify)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError> {
        self.tx.put(self.accounts, key, value).map_err(classify)
    }
}

impl TxEngine for Spillway {
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String> {
        let mut tx = self.db.transaction();
        let mut ops = Ops {
            tx: &mut tx,
            accounts: &self.accounts,
        };
        if let Some(done) = decide(body(&mut ops))? {
            return Ok(done); // dropping a transaction rolls it back
        }
        committed(tx.commit_with(self.commit).map_err(classify))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.accounts.get(key).map_err(|e| e.to_string())
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        // The handle goes first: it may hold a reference to the store that `close` awaits.
        let Spillway { db, accounts, .. } = *self;
        drop(accounts);
        db.close().map_err(|e| e.to_string())
    }
}
