//! The synthetic records `spillway load` writes, `spillway read` checks and `spillway bench`
//! loads every engine with: uniform random 8-byte keys (or, for ordered stores, sequential
//! ones) and values filling the record to its size, as the WB-tree paper's evaluation uses.
//! A crate of its own, so that the CLI's commands and the benchmark share one generator
//! without the CLI's own commands linking the benchmark's machinery.
//!
//! Everything is a pure function of `(seed, i)`, so a reader needs only the seed, the record
//! size, the key order and the count to know every key and value — nothing is kept from the
//! load itself.

use serde::{Deserialize, Serialize};

/// Bytes of every generated key: one `u64`.
pub const KEY_LEN: usize = 8;

/// How record `i`'s key is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Keys {
    /// A mix of `seed ^ i`, little-endian: uniform random keys, in no order (the default, and
    /// what every result before ordered stores used).
    #[default]
    Random,
    /// `i` itself, big-endian: byte order is index order, so a load inserts keys in ascending
    /// order (per writer thread) — the append-only case an ordered store can make cheap. The
    /// seed does not change these keys; it still makes the values.
    Sequential,
}

impl Keys {
    pub fn name(self) -> &'static str {
        match self {
            Keys::Random => "random",
            Keys::Sequential => "sequential",
        }
    }
}

/// The splitmix64 finalizer. Each step (xor-shift, multiply by an odd constant) is invertible,
/// so this is a bijection on `u64`: distinct inputs give distinct outputs, which is what makes
/// `seed ^ i` for distinct `i` yield distinct keys, with no collision check.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The splitmix64 generator: a tiny, seedable PRNG, good enough for choosing keys and filling
/// values (no dependency on `rand` for this).
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(Self::GAMMA);
        mix64(self.state)
    }

    /// Uniform in `[0, 1)`, from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`), by multiply-and-shift: no modulo, and a bias of at most
    /// `n / 2^64`, which no workload here can notice.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Salt so that a value's byte stream is not the key's own mixer sequence.
const VALUE_SALT: u64 = 0x5641_4c55_4553_414c;

/// `records` of `record_size` bytes each (key + value), generated from `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workload {
    seed: u64,
    record_size: usize,
    keys: Keys,
}

impl Workload {
    /// A record is an 8-byte key plus a value of at least one byte, and the value must fit
    /// the engine's limit.
    pub fn new(seed: u64, record_size: usize) -> Result<Workload, String> {
        if record_size <= KEY_LEN {
            return Err(format!(
                "--record-size {record_size} is too small: a record is an {KEY_LEN}-byte key \
                 plus a value of at least 1 byte, so it must be at least {}",
                KEY_LEN + 1
            ));
        }
        if record_size - KEY_LEN > spillway::MAX_VALUE_LEN {
            return Err(format!(
                "--record-size {record_size} is too large: values are limited to {} bytes",
                spillway::MAX_VALUE_LEN
            ));
        }
        Ok(Workload {
            seed,
            record_size,
            keys: Keys::Random,
        })
    }

    /// The same records with keys made as `keys` says (random unless set).
    pub fn with_keys(self, keys: Keys) -> Workload {
        Workload { keys, ..self }
    }

    pub fn value_len(&self) -> usize {
        self.record_size - KEY_LEN
    }

    fn key_word(&self, i: u64) -> u64 {
        mix64(self.seed ^ i)
    }

    /// The key of record `i`: distinct for distinct `i` in both orders.
    pub fn key(&self, i: u64) -> [u8; KEY_LEN] {
        match self.keys {
            Keys::Random => self.key_word(i).to_le_bytes(),
            Keys::Sequential => i.to_be_bytes(),
        }
    }

    /// Replace `out` with the value of record `i` (reusing its allocation). Values do not
    /// depend on the key order: the same records, keyed two ways.
    pub fn fill_value(&self, i: u64, out: &mut Vec<u8>) {
        out.clear();
        out.resize(self.value_len(), 0);
        let mut rng = SplitMix64::new(self.key_word(i) ^ VALUE_SALT);
        for chunk in out.chunks_mut(8) {
            let word = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// The value of record `i`, freshly allocated.
    pub fn value(&self, i: u64) -> Vec<u8> {
        let mut v = Vec::new();
        self.fill_value(i, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_are_distinct_and_reproducible() {
        for seed in [0, 1, 42, u64::MAX] {
            let w = Workload::new(seed, 16).unwrap();
            let keys: HashSet<[u8; KEY_LEN]> = (0..200_000).map(|i| w.key(i)).collect();
            assert_eq!(keys.len(), 200_000, "seed {seed}");
            assert_eq!(w.key(12345), Workload::new(seed, 100).unwrap().key(12345));
        }
    }

    #[test]
    fn sequential_keys_sort_in_index_order_and_random_keys_are_unchanged() {
        let w = Workload::new(5, 16).unwrap();
        let seq = w.with_keys(Keys::Sequential);
        for i in [0u64, 1, 255, 256, 65_535, 65_536, 1 << 40] {
            assert!(seq.key(i) < seq.key(i + 1), "{i}");
            assert_eq!(seq.key(i), i.to_be_bytes());
            assert_eq!(
                seq.value(i),
                w.value(i),
                "values do not depend on the key order"
            );
        }
        // Random keys are exactly what they were before key orders existed.
        assert_eq!(w.key(3), mix64(5 ^ 3).to_le_bytes());
        assert_eq!(w.with_keys(Keys::Random), w);
    }

    #[test]
    fn seeds_give_different_keys() {
        let a = Workload::new(1, 16).unwrap();
        let b = Workload::new(2, 16).unwrap();
        let same = (0..10_000).filter(|&i| a.key(i) == b.key(i)).count();
        assert_eq!(same, 0);
    }

    #[test]
    fn value_has_the_record_length() {
        for size in [9, 15, 16, 17, 100, 4096, 4097] {
            let w = Workload::new(7, size).unwrap();
            assert_eq!(w.value_len(), size - KEY_LEN);
            for i in [0, 1, 999] {
                assert_eq!(w.key(i).len() + w.value(i).len(), size);
            }
        }
    }

    #[test]
    fn value_is_reproducible_and_depends_on_seed_and_index() {
        let w = Workload::new(9, 64).unwrap();
        let mut reused = vec![0xAA; 1000];
        w.fill_value(5, &mut reused);
        assert_eq!(reused, w.value(5));
        assert_eq!(w.value(5), Workload::new(9, 64).unwrap().value(5));
        assert_ne!(w.value(5), w.value(6));
        assert_ne!(w.value(5), Workload::new(10, 64).unwrap().value(5));
        // A shorter record's value is a prefix of a longer one's: the stream depends only
        // on (seed, i).
        assert_eq!(Workload::new(9, 20).unwrap().value(5), w.value(5)[..12]);
    }

    #[test]
    fn record_size_limits() {
        assert!(Workload::new(0, 0).is_err());
        assert!(Workload::new(0, 8).is_err());
        assert!(Workload::new(0, 9).is_ok());
        let max = KEY_LEN + spillway::MAX_VALUE_LEN;
        assert!(Workload::new(0, max).is_ok());
        assert!(Workload::new(0, max + 1).is_err());
    }

    #[test]
    fn mix64_is_invertible_on_samples() {
        // Undo each step; recovering the input proves no two inputs share an output.
        fn unmix(mut z: u64) -> u64 {
            fn unxorshift(z: u64, s: u32) -> u64 {
                let mut x = z;
                for _ in 0..64 / s {
                    x = z ^ (x >> s);
                }
                x
            }
            fn inverse(a: u64) -> u64 {
                // Newton's iteration for the inverse of an odd number mod 2^64.
                let mut x = a;
                for _ in 0..6 {
                    x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
                }
                x
            }
            z = unxorshift(z, 31);
            z = unxorshift(z.wrapping_mul(inverse(0x94d0_49bb_1331_11eb)), 27);
            unxorshift(z.wrapping_mul(inverse(0xbf58_476d_1ce4_e5b9)), 30)
        }
        let mut rng = SplitMix64::new(3);
        for _ in 0..10_000 {
            let x = rng.next_u64();
            assert_eq!(unmix(mix64(x)), x);
        }
        assert_eq!(unmix(mix64(0)), 0);
        assert_eq!(unmix(mix64(u64::MAX)), u64::MAX);
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut rng = SplitMix64::new(11);
        let mut seen = [false; 10];
        for _ in 0..10_000 {
            let x = rng.below(10);
            assert!(x < 10);
            seen[x as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(rng.below(1), 0);
    }
}
