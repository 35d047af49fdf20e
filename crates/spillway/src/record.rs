//! A record — one key with what was written to it: a value, a tombstone, a merge operand, or
//! a change of the key's expiry — and the single byte encoding used for it in the log, the
//! root buffer and list pages:
//!
//! ```text
//! varint key_len | varint tag | key | bytes
//! tag = 0 for a tombstone, 2·len + 1 for a value of len bytes, 2·len + 2 for a merge operand
//! ```
//!
//! Records that carry a time (issue 30: expiry) are *extended*: their first word is not a key
//! length but [`EXTENDED`] plus their kind — no key is that long — and two more fields follow:
//!
//! ```text
//! varint EXTENDED + kind | varint key_len | varint a | varint b | key | bytes
//! kind 1  a value that expires:   a = len, b = expiry time          bytes = the value
//! kind 2  a stamped merge operand: a = len, b = time written         bytes = the operand
//! kind 3  a change of expiry:     a = new expiry + 1 (0: none),     no bytes
//!                                  b = time written (0 in a batch: the commit stamps it)
//! kind 4  a range delete:         a = end's length + 1 (0: no end),  bytes = the end
//!                                  b = 0; the key is where the range starts
//! ```
//!
//! A range delete lives in logs and root buffers only: lists keep theirs beside their pages
//! (see `list::ranges`).
//!
//! Times are milliseconds since the Unix epoch. Records without a time keep the short
//! encoding, so a store that never uses expiry writes exactly the bytes it did before. Logs
//! and lists of the versions before extended records never hold them (no key is that long),
//! so they decode with the same code.
//!
//! Logs and lists of format 3 and before, written before merge operands existed, encode
//! `tag = len + 1` for a value ([`Encoding::Legacy`]); they are still read.
//!
//! The record's route (see `order`) is *not* stored: it is recomputed from the key (xxh3 of an
//! 8-byte key costs a few nanoseconds), which saves 8 bytes per record on disk — half again
//! the size of a 16-byte record.

/// "No expiry": the time a persistent value expires at.
pub const NEVER: u64 = u64::MAX;

/// The first word of an extended record is this plus its kind (see the module's doc): above
/// every key length ([`MAX_KEY_LEN`](crate::options::MAX_KEY_LEN) is 64 KiB), below the
/// pseudo-records of batches (see `batch`).
pub const EXTENDED: u64 = 1 << 20;
const KIND_PUT_UNTIL: u64 = 1;
const KIND_MERGE_AT: u64 = 2;
const KIND_EXPIRE: u64 = 3;
const KIND_DELETE_RANGE: u64 = 4;

/// What one record says of its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// The key's value, whatever came before; it never expires.
    Put(&'a [u8]),
    /// The key is gone, whatever came before.
    Delete,
    /// A merge operand, folded into whatever came before by the store's merge operator.
    Merge(&'a [u8]),
    /// The key's value, whatever came before, until time `.1` (ms since the epoch): at and
    /// after it the key is gone.
    PutUntil(&'a [u8], u64),
    /// A merge operand written at time `.1`: it folds into what the key held then — nothing,
    /// if the key had expired by then. Operands are stamped only in a keyspace that has held
    /// expiring records (an unstamped operand is older than every expiry below it).
    MergeAt(&'a [u8], u64),
    /// The key's expiry set to `until` ([`NEVER`]: none) at time `at`, if the key was there
    /// then; nothing if it was not.
    Expire { until: u64, at: u64 },
    /// Every key from the record's key up to `end` (exclusive; `None`: every key after) is
    /// gone, whatever came before.
    DeleteRange { end: Option<&'a [u8]> },
}

impl<'a> Op<'a> {
    /// The put of `value` until `until` ([`NEVER`]: a plain put).
    pub fn put_until(value: &'a [u8], until: u64) -> Op<'a> {
        if until == NEVER {
            Op::Put(value)
        } else {
            Op::PutUntil(value, until)
        }
    }

    /// A put or a delete: what ends a read's walk down the tree.
    pub fn is_base(&self) -> bool {
        matches!(self, Op::Put(_) | Op::Delete | Op::PutUntil(..))
    }

    /// The value or operand bytes (none for a delete or a change of expiry).
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Op::Put(b) | Op::Merge(b) | Op::PutUntil(b, _) | Op::MergeAt(b, _) => b,
            Op::DeleteRange { end } => end.unwrap_or_default(),
            Op::Delete | Op::Expire { .. } => &[],
        }
    }

    /// Whether the record carries a time of expiry (a value that expires, or a change of
    /// expiry): what makes a keyspace stamp its merge operands.
    pub fn concerns_expiry(&self) -> bool {
        matches!(self, Op::PutUntil(..) | Op::Expire { .. })
    }

    fn tag(&self) -> u64 {
        match *self {
            Op::Delete => 0,
            Op::Put(v) => 2 * v.len() as u64 + 1,
            Op::Merge(v) => 2 * v.len() as u64 + 2,
            Op::PutUntil(..) | Op::MergeAt(..) | Op::Expire { .. } | Op::DeleteRange { .. } => {
                unreachable!("extended records have no tag")
            }
        }
    }

    /// An extended record's `(kind, a, b)` (see the module's doc); `None` for the others.
    fn extended(&self) -> Option<(u64, u64, u64)> {
        match *self {
            Op::PutUntil(v, until) => Some((KIND_PUT_UNTIL, v.len() as u64, until)),
            Op::MergeAt(v, at) => Some((KIND_MERGE_AT, v.len() as u64, at)),
            Op::Expire { until, at } => Some((KIND_EXPIRE, until.wrapping_add(1), at)),
            Op::DeleteRange { end } => {
                Some((KIND_DELETE_RANGE, end.map_or(0, |e| e.len() as u64 + 1), 0))
            }
            _ => None,
        }
    }
}

/// A decoded record borrowing from the buffer it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub key: &'a [u8],
    pub op: Op<'a>,
}

/// How the records of a file are encoded (see the module's doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Lists and logs of format 3 and before: values and tombstones only.
    Legacy,
    /// What this build writes.
    Current,
}

pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Read a varint at `*pos`; `None` if truncated or longer than 10 bytes.
#[inline]
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    // Lengths and tags of small records take one byte: the common case, without the loop.
    if let Some(&b) = buf.get(*pos).filter(|&&b| b < 0x80) {
        *pos += 1;
        return Some(u64::from(b));
    }
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

pub fn encoded_len(key: &[u8], op: Op<'_>) -> usize {
    let fields = match op.extended() {
        Some((kind, a, b)) => {
            varint_len(EXTENDED + kind)
                + varint_len(a)
                + varint_len(b)
                + varint_len(key.len() as u64)
        }
        None => varint_len(key.len() as u64) + varint_len(op.tag()),
    };
    fields + key.len() + op.bytes().len()
}

pub fn encode(out: &mut Vec<u8>, key: &[u8], op: Op<'_>) {
    let bytes = op.bytes();
    // One capacity check instead of one per byte pushed.
    out.reserve(40 + key.len() + bytes.len());
    match op.extended() {
        Some((kind, a, b)) => {
            put_varint(out, EXTENDED + kind);
            put_varint(out, key.len() as u64);
            put_varint(out, a);
            put_varint(out, b);
        }
        None => {
            put_varint(out, key.len() as u64);
            put_varint(out, op.tag());
        }
    }
    out.extend_from_slice(key);
    out.extend_from_slice(bytes);
}

/// Decode the record at `*pos` (in this build's encoding) and advance past it; `None` if the
/// bytes are not a whole record.
pub fn decode<'a>(buf: &'a [u8], pos: &mut usize) -> Option<RecordRef<'a>> {
    decode_as(Encoding::Current, buf, pos)
}

/// [`decode`] for records in encoding `enc`.
#[inline]
pub fn decode_as<'a>(enc: Encoding, buf: &'a [u8], pos: &mut usize) -> Option<RecordRef<'a>> {
    let mut p = *pos;
    let first = get_varint(buf, &mut p)?;
    if first > EXTENDED && enc == Encoding::Current {
        return decode_extended(first - EXTENDED, buf, pos, p);
    }
    let klen = usize::try_from(first).ok()?;
    let tag = get_varint(buf, &mut p)?;
    let (len, kind) = tag_parts(enc, tag);
    let len = usize::try_from(len).ok()?;
    let key_end = p.checked_add(klen)?;
    let end = key_end.checked_add(len)?;
    if end > buf.len() {
        return None;
    }
    let key = &buf[p..key_end];
    let bytes = &buf[key_end..end];
    let op = match kind {
        0 => Op::Delete,
        1 => Op::Put(bytes),
        _ => Op::Merge(bytes),
    };
    *pos = end;
    Some(RecordRef { key, op })
}

/// The key of the record at `pos` and where the record ends, what it holds left undecoded:
/// all a point read's scan of a segment needs of the records of other keys. Inlined into
/// that scan, it spares each record a call and the copy of a decoded record through memory
/// (~7% of a warm GET).
#[inline(always)]
pub fn key_and_end(enc: Encoding, buf: &[u8], pos: usize) -> Option<(&[u8], usize)> {
    let mut p = pos;
    let first = get_varint(buf, &mut p)?;
    if first > EXTENDED && enc == Encoding::Current {
        let mut end = pos;
        return decode_extended(first - EXTENDED, buf, &mut end, p).map(|r| (r.key, end));
    }
    let klen = usize::try_from(first).ok()?;
    let len = usize::try_from(tag_parts(enc, get_varint(buf, &mut p)?).0).ok()?;
    let key_end = p.checked_add(klen)?;
    let end = key_end.checked_add(len)?;
    (end <= buf.len()).then(|| (&buf[p..key_end], end))
}

/// A short record's tag: the length of its bytes, and their kind (0: a tombstone, 1: a
/// value, 2: a merge operand).
#[inline(always)]
fn tag_parts(enc: Encoding, tag: u64) -> (u64, u8) {
    match (enc, tag) {
        (_, 0) => (0, 0),
        (Encoding::Legacy, t) => (t - 1, 1),
        (Encoding::Current, t) => ((t - 1) / 2, 2 - (t % 2) as u8),
    }
}

/// The rest of an extended record of `kind`, its fields starting at `p`.
#[cold]
fn decode_extended<'a>(
    kind: u64,
    buf: &'a [u8],
    pos: &mut usize,
    mut p: usize,
) -> Option<RecordRef<'a>> {
    let klen = usize::try_from(get_varint(buf, &mut p)?).ok()?;
    let a = get_varint(buf, &mut p)?;
    let b = get_varint(buf, &mut p)?;
    let len = match kind {
        KIND_PUT_UNTIL | KIND_MERGE_AT => usize::try_from(a).ok()?,
        KIND_EXPIRE => 0,
        KIND_DELETE_RANGE => usize::try_from(a.saturating_sub(1)).ok()?,
        _ => return None,
    };
    let key_end = p.checked_add(klen)?;
    let end = key_end.checked_add(len)?;
    if end > buf.len() {
        return None;
    }
    let key = &buf[p..key_end];
    let bytes = &buf[key_end..end];
    let op = match kind {
        KIND_PUT_UNTIL => Op::PutUntil(bytes, b),
        KIND_MERGE_AT => Op::MergeAt(bytes, b),
        KIND_DELETE_RANGE => Op::DeleteRange {
            end: (a > 0).then_some(bytes),
        },
        _ => Op::Expire {
            until: a.wrapping_sub(1),
            at: b,
        },
    };
    *pos = end;
    Some(RecordRef { key, op })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut buf = Vec::new();
        encode(&mut buf, b"key", Op::Put(b"value"));
        encode(&mut buf, b"gone", Op::Delete);
        encode(&mut buf, b"", Op::Put(b""));
        encode(&mut buf, b"n", Op::Merge(b"+1"));
        encode(&mut buf, b"m", Op::Merge(b""));
        let mut pos = 0;
        let a = decode(&buf, &mut pos).unwrap();
        assert_eq!((a.key, a.op), (&b"key"[..], Op::Put(b"value")));
        assert_eq!(encoded_len(a.key, a.op), pos);
        let b = decode(&buf, &mut pos).unwrap();
        assert_eq!((b.key, b.op), (&b"gone"[..], Op::Delete));
        let c = decode(&buf, &mut pos).unwrap();
        assert_eq!((c.key, c.op), (&b""[..], Op::Put(b"")));
        let d = decode(&buf, &mut pos).unwrap();
        assert_eq!((d.key, d.op), (&b"n"[..], Op::Merge(b"+1")));
        let e = decode(&buf, &mut pos).unwrap();
        assert_eq!((e.key, e.op), (&b"m"[..], Op::Merge(b"")));
        assert_eq!(pos, buf.len());
        // Every strict prefix of a record fails to decode rather than reading past the end.
        let mut one = Vec::new();
        encode(&mut one, b"abc", Op::Merge(&[7u8; 300]));
        for cut in 0..one.len() {
            assert!(decode(&one[..cut], &mut 0).is_none(), "prefix {cut}");
        }
    }

    /// What a point read's scan takes of each record — its key and end — is what a full
    /// decode finds, for every kind of record in both encodings, and a cut record is refused
    /// by both.
    #[test]
    fn keys_and_ends_agree_with_decoding() {
        let ops = [
            Op::Put(b"value"),
            Op::Put(&[3u8; 300]),
            Op::Delete,
            Op::Merge(b"+1"),
            Op::PutUntil(b"v", 1_790_000_000_000),
            Op::MergeAt(b"+2", 5),
            Op::Expire {
                until: NEVER,
                at: 7,
            },
            Op::DeleteRange { end: Some(b"zz") },
            Op::DeleteRange { end: None },
        ];
        let mut buf = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            encode(&mut buf, format!("key{i}").as_bytes(), *op);
        }
        let mut pos = 0;
        while pos < buf.len() {
            let (key, end) = key_and_end(Encoding::Current, &buf, pos).unwrap();
            let r = decode(&buf, &mut pos).unwrap();
            assert_eq!((key, end), (r.key, pos));
        }
        // Legacy records: `tag = len + 1` for a value.
        let legacy = [3u8, 6, b'a', b'b', b'c', 1, 2, 3, 4, 5, 1, 0, b'x'];
        let mut pos = 0;
        while pos < legacy.len() {
            let (key, end) = key_and_end(Encoding::Legacy, &legacy, pos).unwrap();
            let r = decode_as(Encoding::Legacy, &legacy, &mut pos).unwrap();
            assert_eq!((key, end), (r.key, pos));
        }
        assert_eq!(pos, legacy.len());
        let mut one = Vec::new();
        encode(&mut one, b"abc", Op::Merge(&[7u8; 300]));
        for cut in 0..one.len() {
            assert!(
                key_and_end(Encoding::Current, &one[..cut], 0).is_none(),
                "prefix {cut}"
            );
        }
    }

    #[test]
    fn extended_records_round_trip() {
        let ops = [
            Op::PutUntil(b"value", 1_790_000_000_000),
            Op::PutUntil(b"", 0),
            Op::MergeAt(&[9u8; 200], 5),
            Op::Expire {
                until: NEVER,
                at: 7,
            },
            Op::Expire { until: 0, at: 0 },
            Op::Expire {
                until: 1_790_000_000_123,
                at: u64::MAX,
            },
            Op::DeleteRange { end: Some(b"zz") },
            Op::DeleteRange { end: Some(b"") },
            Op::DeleteRange { end: None },
        ];
        let mut buf = Vec::new();
        for op in ops {
            encode(&mut buf, b"k", op);
        }
        let mut pos = 0;
        for op in ops {
            let before = pos;
            let r = decode(&buf, &mut pos).unwrap();
            assert_eq!((r.key, r.op), (&b"k"[..], op));
            assert_eq!(encoded_len(r.key, r.op), pos - before);
        }
        assert_eq!(pos, buf.len());
        let mut one = Vec::new();
        encode(&mut one, b"abc", Op::MergeAt(&[7u8; 300], 1 << 40));
        for cut in 0..one.len() {
            assert!(decode(&one[..cut], &mut 0).is_none(), "prefix {cut}");
        }
        // An unknown kind is malformed, not misread.
        let mut bad = Vec::new();
        put_varint(&mut bad, EXTENDED + 9);
        bad.extend_from_slice(&[1, 0, 0, b'k']);
        assert!(decode(&bad, &mut 0).is_none());
    }

    #[test]
    fn legacy_records_are_values_and_tombstones() {
        // Format-3 bytes: tag = len + 1.
        let legacy = [3u8, 4, b'k', b'e', b'y', b'a', b'b', b'c', 1, 0, b'x'];
        let mut pos = 0;
        let a = decode_as(Encoding::Legacy, &legacy, &mut pos).unwrap();
        assert_eq!((a.key, a.op), (&b"key"[..], Op::Put(b"abc")));
        let b = decode_as(Encoding::Legacy, &legacy, &mut pos).unwrap();
        assert_eq!((b.key, b.op), (&b"x"[..], Op::Delete));
        assert_eq!(pos, legacy.len());
    }

    #[test]
    fn varint_rejects_overlong() {
        assert_eq!(get_varint(&[0xff; 11], &mut 0), None);
        let mut v = Vec::new();
        put_varint(&mut v, u64::MAX);
        assert_eq!(v.len(), varint_len(u64::MAX));
        assert_eq!(get_varint(&v, &mut 0), Some(u64::MAX));
    }
}
