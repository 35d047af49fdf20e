//! [`WriteBatch`]: several puts, deletes and merges applied atomically — all or none survive a
//! crash.

use crate::error::{Error, Result};
use crate::options::{MAX_BATCH_BYTES, MAX_KEY_LEN, MAX_VALUE_LEN};
use crate::record::{self, Encoding, Op, RecordRef};

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
        self.merges += 1;
        self.add(key.as_ref(), Op::Merge(operand.as_ref()));
    }

    fn add(&mut self, key: &[u8], op: Op<'_>) {
        record::encode(&mut self.rep, key, op);
        self.count += 1;
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

    pub(crate) fn iter(&self) -> impl Iterator<Item = RecordRef<'_>> {
        records(Encoding::Current, &self.rep).map(|r| r.expect("a batch we built decodes"))
    }
}

/// Decode a log payload of records in encoding `enc` back into records; an `Err` item marks a
/// malformed payload.
pub(crate) fn records(
    enc: Encoding,
    payload: &[u8],
) -> impl Iterator<Item = Result<RecordRef<'_>, ()>> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= payload.len() {
            return None;
        }
        match record::decode_as(enc, payload, &mut pos) {
            Some(r) => Some(Ok(r)),
            None => {
                pos = payload.len();
                Some(Err(()))
            }
        }
    })
}
