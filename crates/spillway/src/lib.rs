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
//! Data flow, one module per step: [`WriteBatch`] → `wal` (group commit in `write_queue`) →
//! `buffer` (the root) → `tree::spill` (into `list` files, merged by `merge`) → `tree::split`;
//! `manifest` records each new tree atomically. Merge operands are folded by `fold`, with the
//! store's `operator`, wherever records of a key meet.

mod batch;
mod buffer;
mod cache;
mod check;
mod cursor;
mod db;
mod ef;
mod error;
mod filter;
mod fingerprints;
mod fold;
mod io;
mod list;
mod manifest;
mod merge;
mod operator;
mod options;
mod order;
mod prefetch;
mod radix;
mod record;
mod sketch;
mod stats;
mod tree;
mod wal;
mod write_queue;

pub use batch::WriteBatch;
pub use check::{check, CheckReport};
pub use db::{Db, Iter, Snapshot};
pub use error::{Error, Result};
#[cfg(feature = "fault-injection")]
pub use io::{faults, power_loss};
pub use list::MAX_MAPPED_FILES;
pub use operator::MergeOperator;
pub use options::{
    OptionInfo, Options, WriteOptions, MAX_BATCH_BYTES, MAX_KEY_LEN, MAX_VALUE_LEN,
    MIN_MEMORY_BUDGET, OPTIONS,
};
pub use order::KeyOrder;
pub use stats::Stats;

/// The built-in merge operators, for [`Options::merge_operator`].
pub mod operators {
    pub use crate::operator::{by_name, by_short_name, Append, Max, Min, U64Add, SHORT_NAMES};
}
