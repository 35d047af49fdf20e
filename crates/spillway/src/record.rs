//! A record — one key with a value or a tombstone — and the single byte encoding used for it in
//! the log, the root buffer and list pages:
//!
//! ```text
//! varint key_len | varint value_tag | key | value
//! value_tag = 0 for a tombstone, len + 1 for a value of len bytes
//! ```
//!
//! The record's route (see `order`) is *not* stored: it is recomputed from the key (xxh3 of an
//! 8-byte key costs a few nanoseconds), which saves 8 bytes per record on disk — half again
//! the size of a 16-byte record.

/// A decoded record borrowing from the buffer it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    pub key: &'a [u8],
    /// `None` is a tombstone.
    pub value: Option<&'a [u8]>,
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
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
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

pub fn encoded_len(key: &[u8], value: Option<&[u8]>) -> usize {
    let tag = value.map_or(0, |v| v.len() as u64 + 1);
    varint_len(key.len() as u64) + varint_len(tag) + key.len() + value.map_or(0, |v| v.len())
}

pub fn encode(out: &mut Vec<u8>, key: &[u8], value: Option<&[u8]>) {
    // One capacity check instead of one per byte pushed.
    out.reserve(20 + key.len() + value.map_or(0, <[u8]>::len));
    put_varint(out, key.len() as u64);
    put_varint(out, value.map_or(0, |v| v.len() as u64 + 1));
    out.extend_from_slice(key);
    if let Some(v) = value {
        out.extend_from_slice(v);
    }
}

/// Decode the record at `*pos` and advance past it; `None` if the bytes are not a whole record.
pub fn decode<'a>(buf: &'a [u8], pos: &mut usize) -> Option<RecordRef<'a>> {
    let mut p = *pos;
    let klen = usize::try_from(get_varint(buf, &mut p)?).ok()?;
    let tag = get_varint(buf, &mut p)?;
    let vlen = usize::try_from(tag.saturating_sub(1)).ok()?;
    let key_end = p.checked_add(klen)?;
    let end = key_end.checked_add(vlen)?;
    if end > buf.len() {
        return None;
    }
    let key = &buf[p..key_end];
    let value = (tag != 0).then(|| &buf[key_end..end]);
    *pos = end;
    Some(RecordRef { key, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut buf = Vec::new();
        encode(&mut buf, b"key", Some(b"value"));
        encode(&mut buf, b"gone", None);
        encode(&mut buf, b"", Some(b""));
        let mut pos = 0;
        let a = decode(&buf, &mut pos).unwrap();
        assert_eq!((a.key, a.value), (&b"key"[..], Some(&b"value"[..])));
        assert_eq!(encoded_len(a.key, a.value), pos);
        let b = decode(&buf, &mut pos).unwrap();
        assert_eq!((b.key, b.value), (&b"gone"[..], None));
        let c = decode(&buf, &mut pos).unwrap();
        assert_eq!((c.key, c.value), (&b""[..], Some(&b""[..])));
        assert_eq!(pos, buf.len());
        // Every strict prefix of a record fails to decode rather than reading past the end.
        let mut one = Vec::new();
        encode(&mut one, b"abc", Some(&[7u8; 300]));
        for cut in 0..one.len() {
            assert!(decode(&one[..cut], &mut 0).is_none(), "prefix {cut}");
        }
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
