//! Range deletes on [`Db`] and [`Keyspace`] (issue 30): every key in a range gone in one
//! write, whatever the range holds, and `clear`.
//!
//! A range delete is one record in the log and the root buffer (see `record`), which hides
//! every older record in its range from every read at once: the buffer keeps its range
//! deletes in a map of disjoint segments (the newest covering each key: one lookup per read,
//! however many there are), and lists carry theirs as one set of disjoint key ranges beside
//! their pages, in memory (see `list::ranges`). Spills hand a node's ranges down to the lists
//! they write below and drop what the ranges cover where they meet it; at the bottom of the
//! tree, where nothing older is left to hide, the ranges go too.

use std::ops::RangeBounds;

use super::{Db, Keyspace};
use crate::error::Result;
use crate::record::Op;

impl Db {
    /// Delete every key in `range`, with [`Options::sync_by_default`](crate::Options::sync_by_default)
    /// durability: one record, written in the same time whatever the range holds, which
    /// every read — of this store's iterators and snapshots too, from the moment it returns —
    /// takes as a delete of each key it covers. [`Error::NotOrdered`](crate::Error::NotOrdered)
    /// in a hashed store but for `..` (see [`clear`](Self::clear)).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spillway::{Db, KeyOrder, Options};
    /// let db = Db::open(dir.path(), Options::default().key_order(KeyOrder::Ordered))?;
    /// for day in ["2026-11-01", "2026-11-02", "2026-11-03"] {
    ///     db.put(format!("log:{day}"), "...")?;
    /// }
    /// db.delete_range("log:2026-11-01".."log:2026-11-03")?;
    /// let left: Vec<_> = db.iter().map(|r| r.unwrap().0).collect();
    /// assert_eq!(left, [b"log:2026-11-03".to_vec()]);
    /// db.put("log:2026-11-01", "again")?; // later writes are not covered
    /// assert!(db.get("log:2026-11-01")?.is_some());
    /// # Ok(()) }
    /// ```
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        self.inner.write_one(|b| b.delete_range(range))
    }

    /// Delete every key of the default keyspace in O(1) (a range delete of `..`, in a store of
    /// either order), with [`Options::sync_by_default`](crate::Options::sync_by_default)
    /// durability.
    pub fn clear(&self) -> Result<()> {
        self.delete_range::<&[u8], _>(..)
    }
}

impl Keyspace {
    /// [`Db::delete_range`] in this keyspace.
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Result<()> {
        let (start, end) = crate::batch::key_range(&range);
        let op = Op::DeleteRange {
            end: end.as_deref(),
        };
        let id = self.id();
        self.inner.write_one(|b| {
            b.note_range(id, &start, end.as_deref());
            b.add_in(id, &start, op)
        })
    }

    /// [`Db::clear`] for this keyspace: every key gone, in O(1).
    pub fn clear(&self) -> Result<()> {
        self.delete_range::<&[u8], _>(..)
    }
}
