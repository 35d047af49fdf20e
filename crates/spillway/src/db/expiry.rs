//! Expiry on [`Db`] and [`Keyspace`] (issue 30): values that are gone after a time, and
//! changes of a key's time that do not read the key.
//!
//! A value's expiry is a property of its record (see `record`); a change of expiry is a
//! message, folded where the key's records meet (see `fold`), like a merge operand. Every read
//! compares expiry with the store's [`Clock`](crate::Clock) (see
//! [`Options::clock`](crate::Options::clock)): from its time on, the key is absent to `get`,
//! `multi_get`, iterators, snapshots and transactions alike. Spills delete expired records
//! where they meet them, and rewrite leaves that are mostly expired (see `tree::spill`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::{Db, Inner, Keyspace, ReadPoint};
use crate::clock::{millis, Expiry};
use crate::error::Result;
use crate::record::{Op, NEVER};

impl Db {
    /// Insert or overwrite `key` with a value that expires `ttl` from now (by the store's
    /// clock), with [`Options::sync_by_default`](crate::Options::sync_by_default) durability.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::sync::Arc;
    /// use std::time::{Duration, SystemTime};
    /// use spillway::{Db, Expiry, ManualClock, Options};
    ///
    /// let clock = Arc::new(ManualClock::new(SystemTime::now()));
    /// let db = Db::open(dir.path(), Options::default().clock(clock.clone()))?;
    /// db.put_ttl("session:1", "ada", Duration::from_secs(30))?;
    /// assert!(matches!(db.expiry("session:1")?, Some(Expiry::At(_))));
    /// clock.advance(Duration::from_secs(30));
    /// assert_eq!(db.get("session:1")?, None); // gone at its time, spilled or not
    /// # Ok(()) }
    /// ```
    pub fn put_ttl(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<()> {
        let at = self.inner.opts.clock.now() + ttl;
        self.put_expiring(key, value, at)
    }

    /// Insert or overwrite `key` with a value that expires at `at` (to the millisecond; a
    /// time already past writes a key that is gone — and still hides older values), with
    /// [`Options::sync_by_default`](crate::Options::sync_by_default) durability.
    pub fn put_expiring(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        at: SystemTime,
    ) -> Result<()> {
        put_expiring(&self.inner, 0, key.as_ref(), value.as_ref(), at)
    }

    /// Make `key` expire at `at` (a time past: it is gone now), if it is there when this is
    /// written; nothing if it is not. A message, like a merge operand: the key is not read,
    /// the change is folded where the key's records meet. With
    /// [`Options::sync_by_default`](crate::Options::sync_by_default) durability.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::time::{Duration, SystemTime};
    /// use spillway::Expiry;
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.put("k", "v")?;
    /// let later = SystemTime::now() + Duration::from_secs(3600);
    /// db.expire("k", later)?;
    /// db.expire("absent", later)?; // does nothing: no key to expire
    /// assert!(matches!(db.expiry("k")?, Some(Expiry::At(_))));
    /// assert_eq!(db.expiry("absent")?, None);
    /// db.persist("k")?;
    /// assert_eq!(db.expiry("k")?, Some(Expiry::Never));
    /// # Ok(()) }
    /// ```
    pub fn expire(&self, key: impl AsRef<[u8]>, at: SystemTime) -> Result<()> {
        change_expiry(&self.inner, 0, key.as_ref(), millis(at))
    }

    /// Take away `key`'s expiry, if it is there when this is written (see
    /// [`expire`](Self::expire): a message, no read).
    pub fn persist(&self, key: impl AsRef<[u8]>) -> Result<()> {
        change_expiry(&self.inner, 0, key.as_ref(), NEVER)
    }

    /// When `key` expires: `None` if it is absent (or expired), [`Expiry::Never`] if it
    /// stays until deleted.
    pub fn expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<Expiry>> {
        Ok(self.get_with_expiry(key)?.map(|(_, expiry)| expiry))
    }

    /// The newest value of `key` and when it expires, in one read (see [`get`](Self::get)).
    pub fn get_with_expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<(Vec<u8>, Expiry)>> {
        let now = ReadPoint::now(self.inner.version());
        let part = now.version.default_part();
        let found = self.inner.entry_at(&now, part, key.as_ref())?;
        Ok(found.map(|(value, until)| (value, Expiry::of(until))))
    }
}

impl Keyspace {
    /// [`Db::put_ttl`] in this keyspace.
    pub fn put_ttl(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: Duration,
    ) -> Result<()> {
        let at = self.inner.opts.clock.now() + ttl;
        self.put_expiring(key, value, at)
    }

    /// [`Db::put_expiring`] in this keyspace.
    pub fn put_expiring(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        at: SystemTime,
    ) -> Result<()> {
        put_expiring(&self.inner, self.id(), key.as_ref(), value.as_ref(), at)
    }

    /// [`Db::expire`] in this keyspace.
    pub fn expire(&self, key: impl AsRef<[u8]>, at: SystemTime) -> Result<()> {
        change_expiry(&self.inner, self.id(), key.as_ref(), millis(at))
    }

    /// [`Db::persist`] in this keyspace.
    pub fn persist(&self, key: impl AsRef<[u8]>) -> Result<()> {
        change_expiry(&self.inner, self.id(), key.as_ref(), NEVER)
    }

    /// [`Db::expiry`] in this keyspace.
    pub fn expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<Expiry>> {
        Ok(self.get_with_expiry(key)?.map(|(_, expiry)| expiry))
    }

    /// [`Db::get_with_expiry`] in this keyspace.
    pub fn get_with_expiry(&self, key: impl AsRef<[u8]>) -> Result<Option<(Vec<u8>, Expiry)>> {
        let now = ReadPoint::now(self.inner.version());
        let part = self.part(&now.version)?;
        let found = self.inner.entry_at(&now, part, key.as_ref())?;
        Ok(found.map(|(value, until)| (value, Expiry::of(until))))
    }
}

fn put_expiring(
    inner: &Arc<Inner>,
    ks: u32,
    key: &[u8],
    value: &[u8],
    at: SystemTime,
) -> Result<()> {
    let op = Op::PutUntil(value, millis(at));
    inner.write_one(|b| b.add_in(ks, key, op))
}

/// A change of `key`'s expiry to `until` ([`NEVER`]: none), stamped at the commit.
fn change_expiry(inner: &Arc<Inner>, ks: u32, key: &[u8], until: u64) -> Result<()> {
    let op = Op::Expire { until, at: 0 };
    inner.write_one(|b| b.add_in(ks, key, op))
}
