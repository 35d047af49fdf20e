//! [`Transaction`]: optimistic, serializable read-modify-write over any keyspaces.
//!
//! A transaction reads a snapshot taken when it began, with its own writes on top, and keeps
//! its writes to itself until [`commit`](Transaction::commit). The commit is checked by the
//! group-commit leader, in commit order: if anything the transaction read — a key, or a
//! range it scanned — was written by a commit after its snapshot, it is refused with
//! [`Error::Conflict`] and nothing of it is applied; otherwise its writes go to the log as
//! one batch, atomically (see `conflicts` for what is recorded, and what it costs).

use std::collections::{BTreeMap, HashMap};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use std::time::SystemTime;

use super::conflicts::{key_hash, Reads, Scan};
use super::iter::{key_span, prefix_span};
use super::tx_iter::{Message, Pending, TxIter};
use super::{Db, Inner, Keyspace, ReadPoint};
use crate::batch::WriteBatch;
use crate::clock::{millis, Expiry};
use crate::error::{Error, Result};
use crate::list::ranges::RangeSet;
use crate::options::{WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::order::{KeyOrder, Span};
use crate::record::{Op, NEVER};
use crate::upsert::fold::Found;
use crate::upsert::operator::Operator;
use crate::util::sync::lock;

/// An optimistic transaction (serializable snapshot isolation, as fjall's and Badger's): reads
/// at a snapshot taken by [`Db::transaction`] plus the transaction's own writes, writes kept
/// until [`commit`](Self::commit), which applies them atomically — or fails with
/// [`Error::Conflict`], applying nothing, if a key the transaction read or a range it scanned
/// was written by another commit (another transaction's, or a plain write) since its
/// snapshot. Retry a conflicted transaction from the start. Dropping one rolls it back.
///
/// Many run at once: nothing is locked while a transaction runs. Blind writes (a key written
/// but not read) never conflict. A commit's check costs a probe per key read and a search per
/// range scanned, whatever the store's size; two keys can share a probe's slot, which can
/// only refuse a commit that need not have been (about one in 2^18 per key read and key
/// written meanwhile). Owns what it needs (`'static`, `Send`): it may be kept between calls.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spillway::{Db, Error};
/// let db = Db::open(dir.path(), Default::default())?;
/// let accounts = db.keyspace("accounts", Default::default())?;
/// accounts.put("alice", 100u64.to_le_bytes())?;
/// accounts.put("bob", 0u64.to_le_bytes())?;
/// let balance = |v: Option<Vec<u8>>| u64::from_le_bytes(v.unwrap().try_into().unwrap());
/// loop {
///     let mut tx = db.transaction();
///     let alice = balance(tx.get(&accounts, "alice")?);
///     let bob = balance(tx.get(&accounts, "bob")?);
///     tx.put(&accounts, "alice", (alice - 30).to_le_bytes())?;
///     tx.put(&accounts, "bob", (bob + 30).to_le_bytes())?;
///     match tx.commit() {
///         Err(Error::Conflict) => continue, // someone moved money meanwhile: again
///         done => break done?,
///     }
/// }
/// assert_eq!(balance(accounts.get("bob")?), 30);
/// # Ok(()) }
/// ```
pub struct Transaction {
    inner: Arc<Inner>,
    at: ReadPoint,
    /// The writes, by keyspace, in each keyspace's position order.
    writes: HashMap<u32, BTreeMap<(u64, Vec<u8>), Pending>>,
    /// Range deletes, by keyspace: what they cover is gone from the transaction's view —
    /// the snapshot's records and its own earlier writes, which they replaced — and they go
    /// first in its batch, before the writes made after them.
    ranges: HashMap<u32, RangeSet>,
    reads: Reads,
    /// The number the transaction is registered under as running (see `begin`).
    registered: u64,
}

impl Db {
    /// Begin a [`Transaction`]: its snapshot is taken now.
    pub fn transaction(&self) -> Transaction {
        Transaction::begin(self.inner.clone())
    }
}

impl Transaction {
    fn begin(inner: Arc<Inner>) -> Transaction {
        inner.start_tracking();
        let registered = inner.register_transaction();
        let at = inner.read_point();
        debug_assert!(at.seq >= registered);
        Transaction {
            reads: Reads {
                snapshot: at.seq,
                ..Reads::default()
            },
            inner,
            at,
            writes: HashMap::new(),
            ranges: HashMap::new(),
            registered,
        }
    }

    /// The value of `key` in keyspace `ks`: the transaction's own write if it made one, else
    /// the snapshot's (a read the commit checks).
    pub fn get(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        Ok(self.get_with_expiry(ks, key)?.map(|(value, _)| value))
    }

    /// [`get`](Self::get) with the key's expiry (see [`Db::get_with_expiry`]).
    pub fn get_with_expiry(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<(Vec<u8>, Expiry)>> {
        let found = self.entry(ks, key.as_ref())?;
        Ok(found.map(|(value, until)| (value, Expiry::of(until))))
    }

    /// When `key` of `ks` expires, as the transaction sees it (see [`Db::expiry`]); `None`
    /// if it is absent. A read the commit checks.
    pub fn expiry(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<Option<Expiry>> {
        let found = self.entry(ks, key.as_ref())?;
        Ok(found.map(|(_, until)| Expiry::of(until)))
    }

    /// What `key` of `ks` holds as the transaction sees it: the snapshot's, with the
    /// transaction's own writes on top.
    fn entry(&mut self, ks: &Keyspace, key: &[u8]) -> Result<Found> {
        check_key(key)?;
        let order = self.order(ks)?;
        let pending = self
            .writes
            .get(&ks.id())
            .and_then(|w| w.get(&(order.route(key), key.to_vec())))
            .cloned();
        let now = self.inner.opts.now();
        match pending {
            Some(p @ Pending::Messages(_)) => {
                let base = self.read_snapshot(ks, key)?;
                let operator = self.operator(ks).ok();
                p.over(key, base, operator.as_ref(), now)
            }
            Some(p) => p.over(key, None, None, now),
            // Under the transaction's own range delete the snapshot's record is gone: no read.
            None if self.covered(ks, key) => Ok(None),
            None => self.read_snapshot(ks, key),
        }
    }

    /// [`get`](Self::get) for many keys of keyspace `ks`.
    pub fn multi_get<K: AsRef<[u8]>>(
        &mut self,
        ks: &Keyspace,
        keys: &[K],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        keys.iter().map(|k| self.get(ks, k)).collect()
    }

    /// Set `key` in keyspace `ks` to `value` when the transaction commits.
    pub fn put(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        let value = check_value(value.as_ref())?;
        self.write(ks, key.as_ref(), Pending::Put(value.to_vec(), NEVER))
    }

    /// [`put`](Self::put) of a value that expires at `at` (see [`Db::put_expiring`]).
    pub fn put_expiring(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        at: SystemTime,
    ) -> Result<()> {
        let value = check_value(value.as_ref())?;
        let pending = Pending::Put(value.to_vec(), millis(at));
        self.write(ks, key.as_ref(), pending)
    }

    /// Make `key` of `ks` expire at `at` when the transaction commits, if it is there then
    /// (see [`Db::expire`]): blind, like a put — the key is not read, so it cannot conflict.
    pub fn expire(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>, at: SystemTime) -> Result<()> {
        self.message(ks, key.as_ref(), Message::Expire(millis(at)), None)
    }

    /// Take away the expiry of `key` of `ks` when the transaction commits, if it is there
    /// then (see [`Db::persist`]): blind, like [`expire`](Self::expire).
    pub fn persist(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.message(ks, key.as_ref(), Message::Expire(NEVER), None)
    }

    /// Delete `key` from keyspace `ks` when the transaction commits.
    pub fn delete(&mut self, ks: &Keyspace, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(ks, key.as_ref(), Pending::Delete)
    }

    /// Write merge operand `operand` to `key` in keyspace `ks` (see [`Db::merge`]): blind,
    /// like a put — the key is not read, so it cannot conflict — and folded by reads of the
    /// transaction that follow. [`Error::NoMergeOperator`] or [`Error::InvalidOperand`] at
    /// once.
    pub fn merge(
        &mut self,
        ks: &Keyspace,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        let operator = self.operator(ks)?;
        operator.check(check_value(operand)?)?;
        let message = Message::Operand(operand.to_vec());
        self.message(ks, key, message, Some(&operator))
    }

    /// Write `message` to `key` of `ks`: on the transaction's own put or delete, what they
    /// make together is known now; otherwise it goes on the messages for the snapshot's value.
    fn message(
        &mut self,
        ks: &Keyspace,
        key: &[u8],
        message: Message,
        operator: Option<&Operator>,
    ) -> Result<()> {
        let order = self.order(ks)?;
        let slot = (order.route(key), key.to_vec());
        let covered = self.covered(ks, key).then_some(&Pending::Delete);
        let next = match self
            .writes
            .get(&ks.id())
            .and_then(|w| w.get(&slot))
            .or(covered)
        {
            Some(Pending::Messages(messages)) => {
                let mut messages = messages.clone();
                messages.push(message);
                Pending::Messages(messages)
            }
            Some(own) => {
                let now = self.inner.opts.now();
                let base = own.over(key, None, None, now)?;
                match Pending::Messages(vec![message]).over(key, base, operator, now)? {
                    Some((value, until)) => Pending::Put(value, until),
                    None => Pending::Delete,
                }
            }
            None => Pending::Messages(vec![message]),
        };
        self.write(ks, key, next)
    }

    /// Delete every key of ordered keyspace `ks` in `range` when the transaction commits (see
    /// [`Db::delete_range`]): blind — nothing is read, so it cannot conflict — and, in the
    /// transaction's view, every record in the range is gone at once, the snapshot's and the
    /// transaction's own writes made before it; writes made after it are seen as usual.
    /// [`Error::NotOrdered`] in a hashed keyspace but for `..` (see [`clear`](Self::clear)).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spillway::{KeyOrder, KeyspaceOptions};
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let log = db.keyspace("log", KeyspaceOptions::default().key_order(KeyOrder::Ordered))?;
    /// for n in 1..=5 {
    ///     log.put(format!("entry:{n}"), "...")?;
    /// }
    /// // Raft-style truncation: drop what follows entry 2, then append a new entry 3.
    /// let mut tx = db.transaction();
    /// tx.delete_range(&log, "entry:3"..)?;
    /// tx.put(&log, "entry:3", "new")?;
    /// tx.commit()?;
    /// let keys: Vec<_> = log.iter()?.map(|r| r.unwrap().0).collect();
    /// assert_eq!(keys, [b"entry:1".to_vec(), b"entry:2".to_vec(), b"entry:3".to_vec()]);
    /// # Ok(()) }
    /// ```
    pub fn delete_range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        ks: &Keyspace,
        range: R,
    ) -> Result<()> {
        let order = self.order(ks)?;
        let (start, end) = crate::batch::key_range(&range);
        if order == KeyOrder::Hashed && (!start.is_empty() || end.is_some()) {
            return Err(Error::NotOrdered);
        }
        let mut range = RangeSet::default();
        range.insert(&start, end.as_deref());
        if let Some(w) = self.writes.get_mut(&ks.id()) {
            w.retain(|(_, key), _| !range.covers(key));
        }
        self.ranges.entry(ks.id()).or_default().extend(&range);
        Ok(())
    }

    /// Delete every key of keyspace `ks`, of either order, when the transaction commits (a
    /// range delete of `..`, see [`delete_range`](Self::delete_range)).
    pub fn clear(&mut self, ks: &Keyspace) -> Result<()> {
        self.delete_range::<&[u8], _>(ks, ..)
    }

    /// Whether the transaction's own range deletes cover `key` of `ks`.
    fn covered(&self, ks: &Keyspace, key: &[u8]) -> bool {
        self.ranges.get(&ks.id()).is_some_and(|r| r.covers(key))
    }

    /// Every key of keyspace `ks` with its value — the snapshot's with the transaction's own
    /// writes on top — in the keyspace's order. The whole keyspace counts as read: any write
    /// to it by another commit since the snapshot makes the commit fail.
    pub fn iter(&mut self, ks: &Keyspace) -> Result<TxIter> {
        let it = self.scan(ks, Span::all())?;
        self.reads.scans.push(Scan::Whole(ks.id()));
        Ok(it)
    }

    /// The keys of ordered keyspace `ks` in `range`, with their values — the snapshot's with
    /// the transaction's own writes on top — in key order, either way. The range counts as
    /// read: a key written into it by another commit since the snapshot (a phantom) makes the
    /// commit fail. [`Error::NotOrdered`] in a hashed keyspace.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use spillway::{KeyOrder, KeyspaceOptions};
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let jobs = db.keyspace("jobs", KeyspaceOptions::default().key_order(KeyOrder::Ordered))?;
    /// jobs.put("job:1", "a")?;
    /// jobs.put("job:3", "c")?;
    /// let mut tx = db.transaction();
    /// tx.put(&jobs, "job:2", "b")?;
    /// tx.delete(&jobs, "job:3")?;
    /// let keys: Vec<_> = tx.range(&jobs, "job:".."job;")?.map(|r| r.unwrap().0).collect();
    /// assert_eq!(keys, [b"job:1".to_vec(), b"job:2".to_vec()]);
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: RangeBounds<K>>(
        &mut self,
        ks: &Keyspace,
        range: R,
    ) -> Result<TxIter> {
        let order = self.order(ks)?;
        let span = key_span(order, &range)?;
        let owned = |b: Bound<&K>| b.map(|k| k.as_ref().to_vec());
        self.reads.scans.push(Scan::Range {
            ks: ks.id(),
            lo: owned(range.start_bound()),
            hi: owned(range.end_bound()),
        });
        self.scan(ks, span)
    }

    /// The keys of ordered keyspace `ks` starting with `prefix` (see [`range`](Self::range)).
    pub fn prefix(&mut self, ks: &Keyspace, prefix: impl AsRef<[u8]>) -> Result<TxIter> {
        let prefix = prefix.as_ref();
        let order = self.order(ks)?;
        let span = prefix_span(order, prefix)?;
        self.reads.scans.push(Scan::Range {
            ks: ks.id(),
            lo: Bound::Included(prefix.to_vec()),
            hi: span
                .hi
                .as_ref()
                .map_or(Bound::Unbounded, |hi| Bound::Excluded(hi.key.to_vec())),
        });
        self.scan(ks, span)
    }

    /// Apply the writes atomically, with [`Options::sync_by_default`](crate::Options::sync_by_default)
    /// durability (see [`commit_with`](Self::commit_with)).
    pub fn commit(self) -> Result<()> {
        let opts = self.inner.default_write_options();
        self.commit_with(opts)
    }

    /// Apply the writes atomically — one batch in the log: after a crash, all or none of them
    /// are there — durable before this returns if `opts.sync`. [`Error::Conflict`], with
    /// nothing applied, if something the transaction read was written by another commit since
    /// its snapshot. A transaction that wrote nothing commits at once: its reads were of one
    /// snapshot, which is consistent by itself.
    pub fn commit_with(mut self, opts: WriteOptions) -> Result<()> {
        let writes = std::mem::take(&mut self.writes);
        let ranges = std::mem::take(&mut self.ranges);
        if writes.is_empty() && ranges.is_empty() {
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        let mut ids: Vec<_> = writes.keys().chain(ranges.keys()).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            // Range deletes first: the writes left in their ranges were made after them.
            for (start, end) in ranges.get(&id).into_iter().flat_map(RangeSet::iter) {
                batch.note_range(id, start, end);
                batch.add_in(id, start, Op::DeleteRange { end });
            }
            for ((_, key), pending) in writes.get(&id).into_iter().flatten() {
                match pending {
                    Pending::Put(v, until) => batch.add_in(id, key, Op::put_until(v, *until)),
                    Pending::Delete => batch.add_in(id, key, Op::Delete),
                    Pending::Messages(messages) => {
                        for m in messages {
                            let op = match m {
                                Message::Operand(operand) => Op::Merge(operand),
                                Message::Expire(until) => Op::Expire {
                                    until: *until,
                                    at: 0,
                                },
                            };
                            batch.add_in(id, key, op);
                        }
                    }
                }
            }
        }
        let reads = Arc::new(std::mem::take(&mut self.reads));
        self.inner
            .submit(std::borrow::Cow::Owned(batch), opts, Some(&reads))
    }

    /// `Ok(())` if a commit now would pass its check — nothing the transaction read was
    /// written since its snapshot — else [`Error::Conflict`]. Nothing is applied, and a
    /// commit may still conflict later. For a check before work that has no undo (Redis's
    /// `WATCH`, checked at `EXEC`).
    pub fn check(&self) -> Result<()> {
        let w = self.inner.writer.lock();
        if w.conflicts.allows(&self.reads) {
            Ok(())
        } else {
            Err(Error::Conflict)
        }
    }

    /// Read `key` of `ks` at the snapshot, and note the read for the commit's check.
    fn read_snapshot(&mut self, ks: &Keyspace, key: &[u8]) -> Result<Found> {
        self.reads.keys.push(key_hash(ks.id(), key));
        self.reads.of_keyspace(ks.id());
        match self.at.version.part(ks.id()) {
            Some(part) => self.inner.entry_at(&self.at, part, key),
            None => {
                self.order(ks)?; // dropped, or created since the snapshot (then empty in it)
                Ok(None)
            }
        }
    }

    fn write(&mut self, ks: &Keyspace, key: &[u8], pending: Pending) -> Result<()> {
        check_key(key)?;
        let order = self.order(ks)?;
        let writes = self.writes.entry(ks.id()).or_default();
        writes.insert((order.route(key), key.to_vec()), pending);
        Ok(())
    }

    fn scan(&mut self, ks: &Keyspace, span: Span) -> Result<TxIter> {
        ks.of(&self.inner)?;
        self.reads.of_keyspace(ks.id());
        let part = match self.at.version.part(ks.id()) {
            Some(part) => part.clone(),
            None => {
                // Created since the snapshot: empty in it.
                let current = self.inner.version();
                let def = ks.part(&current)?.def.clone();
                self.inner.empty_part(def)
            }
        };
        let order = part.def.order;
        let operator = part.def.operator.clone();
        let pending = self.writes.get(&ks.id()).map_or_else(Vec::new, |w| {
            let lo = (span.lo.route, span.lo.key.to_vec());
            let upper = span.hi.as_ref().map(|hi| (hi.route, hi.key.to_vec()));
            let hi = upper.map_or(Bound::Unbounded, Bound::Excluded);
            w.range((Bound::Included(lo), hi))
                .map(|((route, key), p)| (*route, key.clone(), p.clone()))
                .collect()
        });
        let base = super::Iter::new(self.at.clone(), part, &self.inner.counters, span);
        let hidden = self.ranges.get(&ks.id()).cloned().unwrap_or_default();
        Ok(TxIter::new(base, order, operator, pending, hidden))
    }

    /// The key order of `ks`, which must exist now.
    fn order(&self, ks: &Keyspace) -> Result<KeyOrder> {
        ks.of(&self.inner)?;
        match self.at.version.part(ks.id()) {
            Some(p) => Ok(p.def.order),
            None => ks.key_order(),
        }
    }

    fn operator(&self, ks: &Keyspace) -> Result<crate::upsert::operator::Operator> {
        let current = self.inner.version();
        let part = ks.part(&current)?;
        part.def.operator.clone().ok_or(Error::NoMergeOperator)
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        self.inner.unregister_transaction(self.registered);
    }
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("snapshot", &self.reads.snapshot)
            .field("keys_read", &self.reads.keys.len())
            .field("scans", &self.reads.scans.len())
            .finish()
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_LEN,
        });
    }
    Ok(())
}

impl Inner {
    pub(super) fn tracking(&self) -> bool {
        self.tracking.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Have commits recorded for transactions' checks, from the next group on (under the
    /// writer, which holds it through a whole group).
    fn start_tracking(&self) {
        if !self.tracking() {
            let mut w = self.writer.lock();
            w.conflicts.enable();
            self.tracking
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }

    /// Register a transaction about to take its snapshot, under a number at or below the
    /// snapshot's: the record keeps every write after the oldest number registered (see
    /// `oldest_snapshot`).
    fn register_transaction(&self) -> u64 {
        let mut running = lock(&self.transactions);
        let at = self.visible.load(std::sync::atomic::Ordering::Acquire);
        *running.entry(at).or_default() += 1;
        at
    }

    fn unregister_transaction(&self, at: u64) {
        let mut running = lock(&self.transactions);
        if let Some(n) = running.get_mut(&at) {
            *n -= 1;
            if *n == 0 {
                running.remove(&at);
            }
        }
    }

    /// The oldest snapshot a running transaction may have: writes up to it can be forgotten.
    /// Never past what readers see, so that a transaction registering next (at the visible
    /// number, under the same lock) finds every write after its snapshot still recorded.
    pub(super) fn oldest_snapshot(&self) -> u64 {
        let running = lock(&self.transactions);
        let visible = self.visible.load(std::sync::atomic::Ordering::Acquire);
        running
            .keys()
            .next()
            .map_or(visible, |&oldest| oldest.min(visible))
    }
}

/// `value`, if it is not longer than a value may be.
fn check_value(value: &[u8]) -> Result<&[u8]> {
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_LEN,
        });
    }
    Ok(value)
}
