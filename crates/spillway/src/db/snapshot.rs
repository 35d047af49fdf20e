//! [`Snapshot`]: the store as it was at one moment, for as many reads as the caller likes.

use super::iter::{self, Iter};
use super::{Db, Keyspace, ReadPoint};
use crate::clock::Expiry;
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

    /// The value `key` had when the snapshot was taken, or `None` if it was absent — or has
    /// expired since: a snapshot keeps what was written, not what time has taken away.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let part = self.at.version.default_part();
        self.db.inner.get_at(&self.at, part, key.as_ref())
    }

    /// [`get`](Self::get) with the key's expiry (see [`Db::get_with_expiry`]).
    pub fn get_with_expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<(Vec<u8>, Expiry)>> {
        let part = self.at.version.default_part();
        let found = self.db.inner.entry_at(&self.at, part, key.as_ref())?;
        Ok(found.map(|(value, until)| (value, Expiry::of(until))))
    }

    /// [`get_with_expiry`](Self::get_with_expiry) in keyspace `ks`.
    pub fn get_with_expiry_in(
        &self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<(Vec<u8>, Expiry)>> {
        let part = self.part(ks)?;
        let found = self.db.inner.entry_at(&self.at, part, key.as_ref())?;
        Ok(found.map(|(value, until)| (value, Expiry::of(until))))
    }

    /// [`get`](Self::get) in keyspace `ks`: every keyspace is seen at the same point in time.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let (a, b) = (db.keyspace("a", Default::default())?, db.keyspace("b", Default::default())?);
    /// let snap = db.snapshot();
    /// let mut batch = spillway::WriteBatch::new();
    /// batch.put_in(&a, "k", "1");
    /// batch.put_in(&b, "k", "1");
    /// db.write(batch, Default::default())?;
    /// assert_eq!((snap.get_in(&a, "k")?, snap.get_in(&b, "k")?), (None, None));
    /// # Ok(()) }
    /// ```
    pub fn get_in(&self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let part = self.part(ks)?;
        self.db.inner.get_at(&self.at, part, key.as_ref())
    }

    /// [`multi_get`](Self::multi_get) in keyspace `ks`.
    pub fn multi_get_in<K: AsRef<[u8]>>(
        &self,
        ks: &Keyspace,
        keys: &[K],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get_in(ks, k)).collect()
    }

    /// [`iter`](Self::iter) over keyspace `ks`.
    pub fn iter_in(&self, ks: &Keyspace) -> Result<Iter> {
        self.db
            .inner
            .scan(&self.at, ks.of(&self.db.inner)?, Span::all())
    }

    /// [`range`](Self::range) in keyspace `ks` ([`Error::NotOrdered`](crate::Error::NotOrdered)
    /// if it is hashed).
    pub fn range_in<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        ks: &Keyspace,
        range: R,
    ) -> Result<Iter> {
        let order = self.part(ks)?.def.order;
        let span = iter::key_span(order, &range)?;
        self.db.inner.scan(&self.at, ks, span)
    }

    /// [`prefix`](Self::prefix) in keyspace `ks`.
    pub fn prefix_in(&self, ks: &Keyspace, prefix: impl AsRef<[u8]>) -> Result<Iter> {
        let order = self.part(ks)?.def.order;
        let span = iter::prefix_span(order, prefix.as_ref())?;
        self.db.inner.scan(&self.at, ks, span)
    }

    fn part(&self, ks: &Keyspace) -> Result<&super::Part> {
        ks.of(&self.db.inner)?.part(&self.at.version)
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
        Ok(self.scan(iter::key_span(order, &range)?))
    }

    /// [`Db::prefix`] at the snapshot's point in time.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<Iter> {
        let order = self.db.key_order();
        Ok(self.scan(iter::prefix_span(order, prefix.as_ref())?))
    }

    /// An iterator over the positions of `span`, at the snapshot's point in time.
    fn scan(&self, span: Span) -> Iter {
        let part = self.at.version.default_part().clone();
        Iter::new(self.at.clone(), part, &self.db.inner.counters, span)
    }
}
