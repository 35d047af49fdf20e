//! # Spillway
//!
//! An embedded, write-optimized key-value store built on the WriteBuffer (WB) tree
//! (Amur et al., "Design of a Write-Optimized Data Store"). Where an LSM tree compacts — reads
//! and rewrites overlapping data at every level — a WB tree *spills*: it appends one new sorted
//! list to each child and moves on. Full leaves *fast-split* by marking offsets in their lists
//! instead of rewriting them. Reads stay at one page read: a per-node selector (hashed stores;
//! a Bloom filter per list in ordered ones) names the lists that may hold a key, and an
//! in-memory index of the first route of every page finds the page.
//!
//! A store is *hashed* or *ordered* ([`KeyOrder`], chosen at creation). A hashed store routes
//! keys by a 64-bit hash: point reads and writes, and whole-store iteration in hash order. An
//! ordered store keeps keys in byte order with the same machinery, and adds range and prefix
//! scans ([`Db::range`], [`Db::prefix`]), forward and backward.
//!
//! Either kind takes *upserts* with a [`MergeOperator`]: [`Db::merge`] writes "add 5" or
//! "append this" without reading the key, and the operand is folded into the value lazily, as
//! it travels down the tree (B^ε-trees' messages; RocksDB's merge operator).
//!
//! ```
//! # fn main() -> spillway::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! let db = spillway::Db::open(dir.path(), spillway::Options::default())?;
//! db.put("user:42", "Ada")?;
//! assert_eq!(db.get("user:42")?.as_deref(), Some(&b"Ada"[..]));
//! # Ok(()) }
//! ```
//!
//! Data flow, one module per step: [`WriteBatch`] (`batch`, records in `record`) → `wal`
//! (group commit in `write_queue`) → `buffer` (the root) → `tree::spill` (into `list` files:
//! pages, page index, `list::filter`/`list::fingerprints`, `list::sketch`; sources merged by
//! `collapse`) → `tree::split`; `manifest` records each new tree atomically, and `db` ties
//! the steps together behind [`Db`]. Beside the flow: `upsert` (merge operators, and `fold`,
//! where a key's operands meet them), `order` (where a key lives), `options` (the bottom
//! layer every step reads), `io` (files), `util` (Elias–Fano, prefetch), `check` and `stats`.

mod batch;
mod buffer;
mod check;
mod clock;
mod collapse;
mod compaction_filter;
mod db;
mod error;
mod files;
mod io;
mod list;
mod manifest;
mod options;
mod order;
mod record;
mod stats;
mod tree;
mod upsert;
mod util;
mod wal;
mod write_queue;

pub use batch::WriteBatch;
pub use check::{check, CheckReport};
pub use clock::{Clock, Expiry, ManualClock, SystemClock};
pub use compaction_filter::{CompactionFilter, Decision};
pub use db::{Db, Iter, Keyspace, KeyspaceOptions, Snapshot, Transaction, TxIter};
pub use error::{Error, Result};
#[cfg(feature = "fault-injection")]
pub use io::{faults, power_loss};
pub use list::max_mapped_files;
pub use options::{
    OptionInfo, Options, WriteOptions, MAX_BATCH_BYTES, MAX_KEY_LEN, MAX_SPILL_THREADS,
    MAX_VALUE_LEN, MIN_MEMORY_BUDGET, OPTIONS,
};
pub use order::KeyOrder;
pub use stats::Stats;
pub use upsert::operator::MergeOperator;

/// The built-in merge operators, for [`Options::merge_operator`].
pub mod operators {
    pub use crate::upsert::operator::{
        by_name, by_short_name, Append, Max, Min, U64Add, SHORT_NAMES,
    };
}
