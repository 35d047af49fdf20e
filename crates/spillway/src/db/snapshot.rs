//! [`Snapshot`]: the store as it was at one moment, for as many reads as the caller likes.

use super::iter::{self, Iter};
use super::{Db, ReadPoint};
use crate::error::Result;
use crate::order::Span;

/// A read-only view of the store at the moment [`Db::snapshot`] took it: writes committed
/// afterwards are not seen, however many there are and whatever spills and splits they set
/// off, so reads through one snapshot agree with each other (and never show part of a
/// batch). It pins what it sees — the root buffer it started in and the files of its tree
/// stay in memory and on disk until it is dropped — so hold one for a read, not for hours.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spillway::Db::open(dir.path(), Default::default())?;
/// db.put("balance", "10")?;
/// let before = db.snapshot();
/// db.put("balance", "25")?;
/// assert_eq!(before.get("balance")?.as_deref(), Some(&b"10"[..]));
/// assert_eq!(db.get("balance")?.as_deref(), Some(&b"25"[..]));
/// # Ok(()) }
/// ```
pub struct Snapshot<'db> {
    db: &'db Db,
    at: ReadPoint,
}

impl<'db> Snapshot<'db> {
    pub(super) fn new(db: &'db Db) -> Snapshot<'db> {
        Snapshot {
            db,
            at: db.inner.read_point(),
        }
    }

    /// The value `key` had when the snapshot was taken, or `None` if it was absent.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.db.inner.get_at(&self.at, key.as_ref())
    }

    /// [`get`](Self::get) for many keys.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(k)).collect()
    }

    /// [`Db::iter`] at the snapshot's point in time.
    pub fn iter(&self) -> Iter {
        self.scan(Span::all())
    }

    /// [`Db::range`] at the snapshot's point in time.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let opts = spillway::Options::default().key_order(spillway::KeyOrder::Ordered);
    /// let db = spillway::Db::open(dir.path(), opts)?;
    /// db.put("a", "1")?;
    /// let snap = db.snapshot();
    /// db.put("b", "2")?;
    /// assert_eq!(snap.range("a"..)?.count(), 1);
    /// assert_eq!(db.range("a"..)?.count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> Result<Iter> {
        let order = self.db.key_order();
        iter::require_ordered(order)?;
        Ok(self.scan(iter::key_span(order, &range)))
    }

    /// [`Db::prefix`] at the snapshot's point in time.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<Iter> {
        let order = self.db.key_order();
        iter::require_ordered(order)?;
        Ok(self.scan(iter::prefix_span(order, prefix.as_ref())))
    }

    /// An iterator over the positions of `span`, at the snapshot's point in time.
    fn scan(&self, span: Span) -> Iter {
        let inner = &self.db.inner;
        Iter::new(
            self.at.clone(),
            &inner.counters,
            inner.opts.order(),
            inner.operator.clone(),
            span,
        )
    }
}
