//! The one interface the transfer workload (issue 29) drives every transactional engine
//! through, so that each runs exactly the same transaction body: the adapters only begin,
//! commit and classify, the reads and writes are the workload's.

use std::path::Path;

/// Why a transaction's read, write or commit did not go through.
#[derive(Debug)]
pub enum TxError {
    /// The engine refused it because another transaction (or a plain write) got there first:
    /// nothing of it is applied, and a new transaction may try again.
    Conflict,
    /// Anything else ends the run.
    Failed(String),
}

impl From<String> for TxError {
    fn from(e: String) -> TxError {
        TxError::Failed(e)
    }
}

/// The reads and writes of one open transaction. Reads see the transaction's snapshot and its
/// own writes, and are what an optimistic engine checks for conflicts at commit.
pub trait TxOps {
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, TxError>;
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), TxError>;
}

/// How one transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// Refused for a conflict, at a read, a write or the commit; nothing applied.
    Conflict,
    /// The body chose not to commit (a transfer the balance could not cover).
    RolledBack,
}

/// A body: `Ok(true)` to commit what it wrote, `Ok(false)` to roll back.
pub type Body<'a> = dyn FnMut(&mut dyn TxOps) -> Result<bool, TxError> + 'a;

/// A transactional engine under test, shared by every thread of a run.
pub trait TxEngine: Send + Sync {
    /// Run `body` in a new transaction and commit it if it asks to; the commit is durable
    /// (fsynced) before this returns when the engine was opened durable.
    fn transact(&self, body: &mut Body<'_>) -> Result<Outcome, String>;
    /// A read outside any transaction, for the check once every transaction is done.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// Release the store, making everything committed durable.
    fn close(self: Box<Self>) -> Result<(), String>;
}

/// What a body's result means for its transaction: `None` to go on and commit, or the outcome
/// already decided (the adapter then drops its transaction, which rolls it back).
pub(crate) fn decide(body: Result<bool, TxError>) -> Result<Option<Outcome>, String> {
    match body {
        Ok(true) => Ok(None),
        Ok(false) => Ok(Some(Outcome::RolledBack)),
        Err(TxError::Conflict) => Ok(Some(Outcome::Conflict)),
        Err(TxError::Failed(e)) => Err(e),
    }
}

/// A commit's result as an outcome.
pub(crate) fn committed(commit: Result<(), TxError>) -> Result<Outcome, String> {
    match commit {
        Ok(()) => Ok(Outcome::Committed),
        Err(TxError::Conflict) => Ok(Outcome::Conflict),
        Err(TxError::Failed(e)) => Err(e),
    }
}

/// The transactional engines this crate knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxEngineKind {
    /// Spillway's optimistic serializable transactions on one keyspace.
    Spillway,
    /// RocksDB's `OptimisticTransactionDB`.
    RocksDb,
    /// fjall's optimistic transactional database (SSI).
    Fjall,
    /// redb's write transactions: one at a time, so never a conflict.
    Redb,
    /// LMDB through heed: write transactions one at a time, so never a conflict.
    Lmdb,
}

/// Every kind, in the order error messages and defaults list them.
pub const ALL_TX: [TxEngineKind; 5] = [
    TxEngineKind::Spillway,
    TxEngineKind::RocksDb,
    TxEngineKind::Fjall,
    TxEngineKind::Redb,
    TxEngineKind::Lmdb,
];

impl TxEngineKind {
    pub fn name(self) -> &'static str {
        match self {
            TxEngineKind::Spillway => "spillway",
            TxEngineKind::RocksDb => "rocksdb",
            TxEngineKind::Fjall => "fjall",
            TxEngineKind::Redb => "redb",
            TxEngineKind::Lmdb => "lmdb",
        }
    }

    pub fn parse(name: &str) -> Result<TxEngineKind, String> {
        ALL_TX
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL_TX.iter().map(|k| k.name()).collect();
                format!(
                    "`{name}` has no transactions here: the transfer workload runs on {}",
                    names.join(", ")
                )
            })
    }

    /// Whether this binary was built with the engine (the peers need the `peers` feature).
    pub fn available(self) -> bool {
        self == TxEngineKind::Spillway || cfg!(feature = "peers")
    }

    /// Every kind this build can run, Spillway first (the base of the ratios).
    pub fn all_available() -> Vec<TxEngineKind> {
        ALL_TX.into_iter().filter(|k| k.available()).collect()
    }

    /// Open (creating) a store of this engine in `dir`; with `durable`, every commit is
    /// fsynced before it returns.
    pub fn open(self, dir: &Path, durable: bool) -> Result<Box<dyn TxEngine>, String> {
        match self {
            TxEngineKind::Spillway => crate::tx_engines::spillway::open(dir, durable),
            #[cfg(feature = "peers")]
            TxEngineKind::RocksDb => crate::tx_engines::rocksdb::open(dir, durable),
            #[cfg(feature = "peers")]
            TxEngineKind::Fjall => crate::tx_engines::fjall::open(dir, durable),
            #[cfg(feature = "peers")]
            TxEngineKind::Redb => crate::tx_engines::redb::open(dir, durable),
            #[cfg(feature = "peers")]
            TxEngineKind::Lmdb => crate::tx_engines::lmdb::open(dir, durable),
            #[cfg(not(feature = "peers"))]
            other => Err(format!(
                "{} is not in this build: rebuild with `--features peers` (see BENCHMARKS.md)",
                other.name()
            )),
        }
    }

    /// How each engine runs, for the report: defaults otherwise, as in the plain workloads.
    pub fn options_note(self) -> &'static str {
        match self {
            TxEngineKind::Spillway => "default Options; one keyspace (default KeyspaceOptions: hashed keys); db.transaction(), tx.get and tx.put, commit_with(WriteOptions::SYNC) (WriteOptions::default() unsynced); Error::Conflict at commit is an abort",
            TxEngineKind::RocksDb => "OptimisticTransactionDB, defaults + create_if_missing, compression none, 10-bit Bloom filter; transaction_opt with WriteOptions::set_sync(true) (false unsynced) and default OptimisticTransactionOptions (no snapshot: get_for_update records each read's sequence); a Busy or TryAgain commit is an abort",
            TxEngineKind::Fjall => "fjall 3.1 OptimisticTxDatabase (SSI; defaults, no compression), one OptimisticTxKeyspace; write_tx().durability(PersistMode::SyncAll) (Buffer unsynced); commit's Conflict is an abort",
            TxEngineKind::Redb => "redb 4.6 defaults, one table; begin_write (write transactions take turns: no aborts), Durability::Immediate (None unsynced, made durable at close)",
            TxEngineKind::Lmdb => "LMDB 0.9 (heed 0.23, lmdb-master-sys 0.2.6 built from its C), 4 GiB map, one named database; write_txn (one at a time: no aborts), default flags: commit fdatasyncs (MDB_NOSYNC unsynced, synced at close)",
        }
    }
}
