//! A record — one key with what was written to it: a value, a tombstone, or a merge operand —
//! and the single byte encoding used for it in the log, the root buffer and list pages:
//!
//! ```text
//! varint key_len | varint tag | key | bytes
//! tag = 0 for a tombstone, 2·len + 1 for a value of len bytes, 2·len + 2 for a merge operand
//! ```
//!
//! Logs and lists of format 3 and before, written before merge operands existed, encode
//! `tag = len + 1` for a value ([`Encoding::Legacy`]); they are still read.
//!
//! The record's route (see `order`) is *not* stored: it is recomputed from the key (xxh3 of an
//! 8-byte key costs a few nanoseconds), which saves 8 bytes per record on disk — half again
//! the size of a 16-byte record.

/// What one record says of its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// The key's value, whatever came before.
    Put(&'a [u8]),
    /// The key is gone, whatever came before.
    Delete,
    /// A merge operand, folded into whatever came before by the store's merge operator.
    Merge(&'a [u8]),
}

impl<'a> Op<'a> {
    /// A put or a delete: what ends a read's walk down the tree.
    pub fn is_base(&self) -> bool {
        !matches!(self, Op::Merge(_))
    }

    /// The value or operand bytes (none for a delete).
    pub fn bytes(&self) -> &'a [u8] {
        match *self {
            Op::Put(b) | Op::Merge(b) => b,
            Op::Delete => &[],
        }
    }

    fn tag(&self) -> u64 {
        match *self {
            Op::Delete => 0,
            Op::Put(v) => 2 * v.len() as u64 + 1,
            Op::Merge(v) => 2 * v.len() as u64 + 2,
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
    varint_len(key.len() as u64) + varint_len(op.tag()) + key.len() + op.bytes().len()
}

pub fn encode(out: &mut Vec<u8>, key: &[u8], op: Op<'_>) {
    let bytes = op.bytes();
    // One capacity check instead of one per byte pushed.
    out.reserve(20 + key.len() + bytes.len());
    put_varint(out, key.len() as u64);
    put_varint(out, op.tag());
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
    let klen = usize::try_from(get_varint(buf, &mut p)?).ok()?;
    let tag = get_varint(buf, &mut p)?;
    let (len, kind) = match (enc, tag) {
        (_, 0) => (0, 0),
        (Encoding::Legacy, t) => (t - 1, 1),
        (Encoding::Current, t) => ((t - 1) / 2, 2 - t % 2),
    };
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
