//! [`WriteBatch`]: several puts, deletes and merges applied atomically — all or none survive a
//! crash — in one keyspace or several.
//!
//! A batch is its log payload: records in the one encoding used everywhere (see `record`).
//! Records of a named keyspace follow a *keyspace mark*, a pseudo-record whose key length is
//! [`MARK`] (no key is that long) and whose tag is the keyspace's id; records after a mark of
//! id 0, and records before any mark, are the default keyspace's. A batch always ends in the
//! default keyspace (a section of a named one is closed by a mark of 0), so that batches can
//! be concatenated into one group's payload and each still starts in the default keyspace.
//! Logs of version 4 and before hold no marks.
//!
//! A write group's payload (batches concatenated) may start with a *time mark*, a
//! pseudo-record whose key length is [`TIME`] and whose tag is the time the group was
//! committed (ms since the epoch): the time its merge operands and changes of expiry were
//! written (see `fold`), which a replay must use as the commit did. Groups with neither carry
//! none. Logs of version 5 and before hold no time marks.

use crate::error::{Error, Result};
use crate::options::{MAX_BATCH_BYTES, MAX_KEY_LEN, MAX_VALUE_LEN};
use std::time::SystemTime;

use crate::clock::millis;
use crate::record::{self, Encoding, Op, RecordRef, NEVER};

/// An ordered group of writes, applied atomically by [`Db::write`](crate::Db::write).
/// Later writes to the same key within a batch win.
///
/// ```
/// let mut batch = spillway::WriteBatch::new();
/// batch.put(b"apple", b"red");
/// batch.put(b"lime", b"green");
/// batch.delete(b"apple");
/// batch.merge(b"count", 1u64.to_le_bytes()); // needs a store with a merge operator
/// assert_eq!(batch.len(), 4);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// Records in the one encoding used everywhere (see `record`); this is the log payload.
    rep: Vec<u8>,
    count: u32,
    merges: u32,
    user_bytes: u64,
    max_key: usize,
    max_value: usize,
    /// The named keyspace of the section the payload ends with, and where its closing mark
    /// (back to the default keyspace) starts: the next record of that keyspace replaces the
    /// closing mark instead of opening a new section.
    open_section: Option<(u32, usize)>,
    /// The ids of the named keyspaces the batch writes to.
    keyspaces: Vec<u32>,
    /// The open store its keyspaces are of (0: none named yet; `u64::MAX`: several).
    store: u64,
    /// How many of its records take the time they are written (merge operands and changes of
    /// expiry; see `fold`).
    timed: u32,
}

/// The key length that marks a keyspace mark, not a record (see the module's doc).
pub(crate) const MARK: u64 = u32::MAX as u64;
/// The key length that marks a time mark (see the module's doc).
pub(crate) const TIME: u64 = MARK - 1;

/// A change of expiry as a batch holds it: the time it is written is the commit's.
fn expire(until: u64) -> Op<'static> {
    Op::Expire { until, at: 0 }
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.add(key.as_ref(), Op::Put(value.as_ref()));
    }

    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.add(key.as_ref(), Op::Delete);
    }

    /// A merge operand for `key`, folded into its value by the store's merge operator (see
    /// [`Db::merge`](crate::Db::merge)). Writing the batch to a store without one is
    /// [`Error::NoMergeOperator`].
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.add(key.as_ref(), Op::Merge(operand.as_ref()));
    }

    /// [`put`](Self::put) of a value that expires at `at`: from then on every read finds the
    /// key absent (see [`Db::put_expiring`](crate::Db::put_expiring)). Times count to the
    /// millisecond.
    pub fn put_expiring(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, at: SystemTime) {
        self.add(key.as_ref(), Op::PutUntil(value.as_ref(), millis(at)));
    }

    /// Make `key` expire at `at`, if it is there when the batch is written (see
    /// [`Db::expire`](crate::Db::expire)): a message, no read of the key.
    pub fn expire(&mut self, key: impl AsRef<[u8]>, at: SystemTime) {
        self.add(key.as_ref(), expire(millis(at)));
    }

    /// Take away `key`'s expiry, if it is there when the batch is written (see
    /// [`Db::persist`](crate::Db::persist)): a message, no read of the key.
    pub fn persist(&mut self, key: impl AsRef<[u8]>) {
        self.add(key.as_ref(), expire(NEVER));
    }

    /// [`put_expiring`](Self::put_expiring) into keyspace `ks`.
    pub fn put_expiring_in(
        &mut self,
        ks: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        at: SystemTime,
    ) {
        self.note_store(ks);
        self.add_in(
            ks.id(),
            key.as_ref(),
            Op::PutUntil(value.as_ref(), millis(at)),
        );
    }

    /// [`expire`](Self::expire) in keyspace `ks`.
    pub fn expire_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>, at: SystemTime) {
        self.note_store(ks);
        self.add_in(ks.id(), key.as_ref(), expire(millis(at)));
    }

    /// [`persist`](Self::persist) in keyspace `ks`.
    pub fn persist_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>) {
        self.note_store(ks);
        self.add_in(ks.id(), key.as_ref(), expire(NEVER));
    }

    /// [`put`](Self::put) into keyspace `ks` (of the store the batch is written to).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let users = db.keyspace("users", Default::default())?;
    /// let by_mail = db.keyspace("users_by_mail", Default::default())?;
    /// let mut batch = spillway::WriteBatch::new();
    /// batch.put_in(&users, "u1", "ada@example.com");
    /// batch.put_in(&by_mail, "ada@example.com", "u1");
    /// db.write(batch, spillway::WriteOptions::SYNC)?; // both or neither, even after a crash
    /// assert_eq!(by_mail.get("ada@example.com")?.as_deref(), Some(&b"u1"[..]));
    /// # Ok(()) }
    /// ```
    pub fn put_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.note_store(ks);
        self.add_in(ks.id(), key.as_ref(), Op::Put(value.as_ref()));
    }

    /// Remember which store `ks` is of: a batch is written to that store only.
    fn note_store(&mut self, ks: &crate::Keyspace) {
        self.store = match self.store {
            0 => ks.store_id(),
            s if s == ks.store_id() => s,
            _ => u64::MAX,
        };
    }

    /// Whether the keyspaces the batch names are of store `id` (or it names none).
    pub(crate) fn is_of_store(&self, id: u64) -> bool {
        self.store == 0 || self.store == id
    }

    /// [`delete`](Self::delete) in keyspace `ks`.
    pub fn delete_in(&mut self, ks: &crate::Keyspace, key: impl AsRef<[u8]>) {
        self.note_store(ks);
        self.add_in(ks.id(), key.as_ref(), Op::Delete);
    }

    /// [`merge`](Self::merge) in keyspace `ks`, folded by that keyspace's merge operator.
    pub fn merge_in(
        &mut self,
        ks: &crate::Keyspace,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) {
        self.note_store(ks);
        self.add_in(ks.id(), key.as_ref(), Op::Merge(operand.as_ref()));
    }

    /// Add a record to keyspace `ks` (0: the default).
    pub(crate) fn add_in(&mut self, ks: u32, key: &[u8], op: Op<'_>) {
        if ks == 0 {
            return self.add(key, op);
        }
        match self.open_section {
            // The payload ends with this keyspace's section: take its closing mark off.
            Some((open, at)) if open == ks => self.rep.truncate(at),
            _ => put_mark(&mut self.rep, ks),
        }
        record::encode(&mut self.rep, key, op);
        self.count_record(key, op);
        let at = self.rep.len();
        put_mark(&mut self.rep, 0);
        self.open_section = Some((ks, at));
        if !self.keyspaces.contains(&ks) {
            self.keyspaces.push(ks);
        }
    }

    /// The ids of the named keyspaces this batch writes to.
    pub(crate) fn keyspaces(&self) -> &[u32] {
        &self.keyspaces
    }

    fn add(&mut self, key: &[u8], op: Op<'_>) {
        self.open_section = None;
        record::encode(&mut self.rep, key, op);
        self.count_record(key, op);
    }

    fn count_record(&mut self, key: &[u8], op: Op<'_>) {
        self.count += 1;
        self.merges += u32::from(matches!(op, Op::Merge(_)));
        self.timed += u32::from(matches!(op, Op::Merge(_) | Op::Expire { .. }));
        let vlen = op.bytes().len();
        self.user_bytes += (key.len() + vlen) as u64;
        self.max_key = self.max_key.max(key.len());
        self.max_value = self.max_value.max(vlen);
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn clear(&mut self) {
        *self = WriteBatch {
            rep: std::mem::take(&mut self.rep),
            ..Default::default()
        };
        self.rep.clear();
    }

    /// How many of the writes are merges.
    pub(crate) fn merges(&self) -> usize {
        self.merges as usize
    }

    /// Whether the batch holds records that take the time they are written.
    pub(crate) fn is_timed(&self) -> bool {
        self.timed > 0
    }

    /// Key + value bytes, the denominator of write amplification.
    pub(crate) fn user_bytes(&self) -> u64 {
        self.user_bytes
    }

    pub(crate) fn payload(&self) -> &[u8] {
        &self.rep
    }

    /// Check the size limits, naming the first one broken.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_key > MAX_KEY_LEN {
            return Err(Error::KeyTooLarge {
                len: self.max_key,
                max: MAX_KEY_LEN,
            });
        }
        if self.max_value > MAX_VALUE_LEN {
            return Err(Error::ValueTooLarge {
                len: self.max_value,
                max: MAX_VALUE_LEN,
            });
        }
        if self.rep.len() > MAX_BATCH_BYTES {
            return Err(Error::BatchTooLarge {
                len: self.rep.len(),
                max: MAX_BATCH_BYTES,
            });
        }
        Ok(())
    }

    /// The records, each with the id of its keyspace (0: the default).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, RecordRef<'_>)> {
        records(Encoding::Current, &self.rep).map(|r| r.expect("a batch we built decodes"))
    }
}

fn put_mark(out: &mut Vec<u8>, ks: u32) {
    record::put_varint(out, MARK);
    record::put_varint(out, u64::from(ks));
}

/// Start a group's payload with a time mark for time `at`.
pub(crate) fn put_time_mark(out: &mut Vec<u8>, at: u64) {
    record::put_varint(out, TIME);
    record::put_varint(out, at);
}

/// The time a group's payload is marked with (0: none), and the records after the mark.
pub(crate) fn split_time(payload: &[u8]) -> (u64, &[u8]) {
    let mut p = 0;
    if record::get_varint(payload, &mut p) == Some(TIME) {
        if let Some(at) = record::get_varint(payload, &mut p) {
            return (at, &payload[p..]);
        }
    }
    (0, payload)
}

/// Decode a log payload of records in encoding `enc` back into records, each with its
/// keyspace's id (after its time mark, if it starts with one: see [`split_time`]); an `Err`
/// item marks a malformed payload.
pub(crate) fn records(
    enc: Encoding,
    payload: &[u8],
) -> impl Iterator<Item = Result<(u32, RecordRef<'_>), ()>> {
    let payload = split_time(payload).1;
    let mut pos = 0;
    let mut ks = 0u32;
    std::iter::from_fn(move || loop {
        if pos >= payload.len() {
            return None;
        }
        let mut p = pos;
        if record::get_varint(payload, &mut p) == Some(MARK) {
            match record::get_varint(payload, &mut p).and_then(|id| u32::try_from(id).ok()) {
                Some(id) => {
                    ks = id;
                    pos = p;
                    continue;
                }
                None => {
                    pos = payload.len();
                    return Some(Err(()));
                }
            }
        }
        return match record::decode_as(enc, payload, &mut pos) {
            Some(r) => Some(Ok((ks, r))),
            None => {
                pos = payload.len();
                Some(Err(()))
            }
        };
    })
}
