//! The records `load` writes and `read` checks: 8-byte keys (random, or sequential record
//! numbers) and values filling each record to its size.
//!
//! Every key and value is a pure function of `(seed, i)`, so `read` needs only what `LOADGEN`
//! records. They are byte for byte the records of `spillway bench`'s workload (the WB-tree
//! paper's), so that stores loaded by earlier versions read back; a test holds the two
//! together. The copy keeps the user commands free of the benchmark crate.

/// Bytes of every generated key: one `u64`.
pub const KEY_LEN: usize = 8;

/// How record `i`'s key is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Keys {
    /// A mix of `seed ^ i`, little-endian: uniform random keys, in no order.
    #[default]
    Random,
    /// `i` itself, big-endian: byte order is record order. The seed still makes the values.
    Sequential,
}

impl Keys {
    /// The name `LOADGEN` records.
    pub fn name(self) -> &'static str {
        match self {
            Keys::Random => "random",
            Keys::Sequential => "sequential",
        }
    }
}

/// The splitmix64 finalizer: a bijection on `u64`, so `seed ^ i` for distinct `i` gives
/// distinct keys with no collision check.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The splitmix64 generator: fills values, and chooses the keys `read` asks for.
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

    /// Uniform in `0..n` (`n > 0`), by multiply-and-shift: a bias of at most `n / 2^64`.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Salt so that a value's byte stream is not the key's own mixer sequence.
const VALUE_SALT: u64 = 0x5641_4c55_4553_414c;

/// Records of `record_size` bytes each (key + value), generated from `seed`.
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

    /// The key of record `i`: distinct for distinct `i` either way.
    pub fn key(&self, i: u64) -> [u8; KEY_LEN] {
        match self.keys {
            Keys::Random => self.key_word(i).to_le_bytes(),
            Keys::Sequential => i.to_be_bytes(),
        }
    }

    /// Replace `out` with the value of record `i` (reusing its allocation). Values do not
    /// depend on the key order.
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
    #[cfg(test)]
    pub fn value(&self, i: u64) -> Vec<u8> {
        let mut v = Vec::new();
        self.fill_value(i, &mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spillway_bench::workload as bench;

    /// Stores loaded while `load` used the benchmark crate's generator must read back.
    #[test]
    fn records_are_the_benchmark_workload_s() {
        for (seed, size) in [(0, 9), (0, 16), (7, 24), (u64::MAX, 100), (42, 4097)] {
            for (keys, bench_keys) in [
                (Keys::Random, bench::Keys::Random),
                (Keys::Sequential, bench::Keys::Sequential),
            ] {
                let ours = Workload::new(seed, size).unwrap().with_keys(keys);
                let theirs = bench::Workload::new(seed, size)
                    .unwrap()
                    .with_keys(bench_keys);
                assert_eq!(keys.name(), bench_keys.name());
                for i in [0, 1, 2, 255, 256, 99_999, 1 << 40, u64::MAX] {
                    assert_eq!(ours.key(i), theirs.key(i), "{seed} {size} {i}");
                    assert_eq!(ours.value(i), theirs.value(i), "{seed} {size} {i}");
                }
            }
        }
        let (mut ours, mut theirs) = (SplitMix64::new(1), bench::SplitMix64::new(1));
        for n in [1, 2, 10, 1000, u64::MAX] {
            assert_eq!(ours.below(n), theirs.below(n));
        }
        for size in [0, 8, 9, spillway::MAX_VALUE_LEN + KEY_LEN + 1] {
            assert_eq!(
                Workload::new(0, size).err(),
                bench::Workload::new(0, size).err()
            );
        }
        assert_eq!(KEY_LEN, bench::KEY_LEN);
    }

    #[test]
    fn keys_are_distinct_and_values_fill_the_record() {
        let w = Workload::new(3, 20).unwrap();
        let keys: std::collections::HashSet<_> = (0..100_000).map(|i| w.key(i)).collect();
        assert_eq!(keys.len(), 100_000);
        let seq = w.with_keys(Keys::Sequential);
        assert!(seq.key(255) < seq.key(256));
        assert_eq!(seq.value(9), w.value(9));
        let mut reused = vec![0xAA; 1000];
        w.fill_value(5, &mut reused);
        assert_eq!(reused.len(), 12);
        assert_eq!(reused, w.value(5));
    }
}
