//! Counters as every engine stores them, and a batch of increments to them: what
//! [`Engine::increment`](crate::engine::Engine::increment) applies.
//!
//! A counter's value is a `u64`, 8 bytes little-endian, and an increment adds to it wrapping
//! around at 2^64; an absent counter is 0. This is the format of Spillway's
//! `operators::U64Add` and of RocksDB's `UInt64AddOperator`, so that the engines that merge
//! and those that read, add and write store exactly the same bytes.

use std::collections::HashMap;

/// Bytes of a counter's value and of an increment's operand.
pub const COUNTER_LEN: usize = 8;

/// A counter's stored bytes.
pub fn encode(value: u64) -> [u8; COUNTER_LEN] {
    value.to_le_bytes()
}

/// A stored counter's value; bytes of another length are an error, not a zero: they mean an
/// engine stored something other than what it was given.
pub fn decode(bytes: &[u8]) -> Result<u64, String> {
    let b: [u8; COUNTER_LEN] = bytes.try_into().map_err(|_| {
        format!(
            "a counter is {} bytes, not an {COUNTER_LEN}-byte u64",
            bytes.len()
        )
    })?;
    Ok(u64::from_le_bytes(b))
}

/// The value of a counter stored as `base` (`None`: absent, so 0) after adding `deltas`, each
/// as stored: the fold a merge operator does. `None` if any of them is not 8 bytes.
pub fn fold<'a>(base: Option<&[u8]>, deltas: impl IntoIterator<Item = &'a [u8]>) -> Option<u64> {
    let mut sum = match base {
        Some(b) => decode(b).ok()?,
        None => 0,
    };
    for d in deltas {
        sum = sum.wrapping_add(decode(d).ok()?);
    }
    Some(sum)
}

/// A counter's key and its new value, encoded.
pub type NewValue<'a> = (&'a [u8], [u8; COUNTER_LEN]);

/// Increments to apply atomically, in the order they were made. A key may appear more than
/// once: a merge engine writes one operand per increment, as its users would.
#[derive(Debug, Default)]
pub struct CounterBatch {
    keys: Vec<u8>,
    deltas: Vec<u64>,
    key_len: usize,
}

impl CounterBatch {
    pub fn new(key_len: usize) -> CounterBatch {
        CounterBatch {
            keys: Vec::new(),
            deltas: Vec::new(),
            key_len,
        }
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.deltas.clear();
    }

    pub fn push(&mut self, key: &[u8], delta: u64) {
        debug_assert_eq!(key.len(), self.key_len);
        self.keys.extend_from_slice(key);
        self.deltas.push(delta);
    }

    pub fn len(&self) -> usize {
        self.deltas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.deltas.is_empty()
    }

    /// Key + operand bytes, one 8-byte operand per increment: what a user asked to write,
    /// however the engine does it (the denominator of write amplification).
    pub fn user_bytes(&self) -> u64 {
        (self.keys.len() + self.deltas.len() * COUNTER_LEN) as u64
    }

    /// Each increment: key and delta.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.keys
            .chunks_exact(self.key_len.max(1))
            .zip(self.deltas.iter().copied())
    }

    /// Each distinct key once, with the wrapping sum of its deltas, in order of first
    /// appearance. An engine without merges must read a counter before writing it: it reads
    /// each distinct key once and writes the sum, since a second read of a key within one
    /// batch would not see the batch's first write.
    pub fn summed(&self) -> Vec<(&[u8], u64)> {
        let mut index: HashMap<&[u8], usize> = HashMap::with_capacity(self.len());
        let mut out: Vec<(&[u8], u64)> = Vec::with_capacity(self.len());
        for (key, delta) in self.iter() {
            match index.get(key) {
                Some(&i) => out[i].1 = out[i].1.wrapping_add(delta),
                None => {
                    index.insert(key, out.len());
                    out.push((key, delta));
                }
            }
        }
        out
    }

    /// The new value of each distinct counter, for an engine without merges: `read` gives a
    /// counter's current value (absent: 0), to which the batch's summed increments are added.
    pub fn new_values<F>(&self, mut read: F) -> Result<Vec<NewValue<'_>>, String>
    where
        F: FnMut(&[u8]) -> Result<Option<Vec<u8>>, String>,
    {
        self.summed()
            .into_iter()
            .map(|(k, delta)| {
                let now = match read(k)? {
                    Some(v) => decode(&v)?,
                    None => 0,
                };
                Ok((k, encode(now.wrapping_add(delta))))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summed_accumulates_repeated_keys_in_first_appearance_order() {
        let mut b = CounterBatch::new(2);
        b.push(b"bb", 1);
        b.push(b"aa", 5);
        b.push(b"bb", 2);
        b.push(b"cc", u64::MAX);
        b.push(b"cc", 2);
        assert_eq!(b.len(), 5);
        assert_eq!(b.user_bytes(), 5 * (2 + 8));
        assert_eq!(
            b.summed(),
            vec![(&b"bb"[..], 3), (&b"aa"[..], 5), (&b"cc"[..], 1)],
            "wrapping, like U64Add"
        );
        b.clear();
        assert!(b.is_empty() && b.summed().is_empty());
    }

    #[test]
    fn fold_adds_wrapping_from_absent_as_zero_and_refuses_other_lengths() {
        let (one, two) = (encode(1), encode(2));
        assert_eq!(fold(None, [&one[..], &two[..]]), Some(3));
        assert_eq!(fold(Some(&encode(u64::MAX)), [&two[..]]), Some(1));
        assert_eq!(fold(Some(&encode(7)), []), Some(7));
        assert_eq!(fold(Some(b"short"), [&one[..]]), None);
        assert_eq!(fold(None, [&b"123456789"[..]]), None);
        assert_eq!(decode(&encode(42)), Ok(42));
        assert!(decode(b"").is_err());
    }
}
