//! The list-selection index of WB-tree §3.4.1: one Bloom filter per list file.
//!
//! A *blocked* Bloom filter: every key sets and tests bits in one 64-byte cache line, so a probe
//! costs one cache miss instead of k. At 10 bits per key it answers "maybe" for about 1% of
//! absent keys (slightly above a classic Bloom filter's 0.8%, for a third of the misses).
//!
//! Keys in a list share a narrow range of route hashes (that is how the tree routes them), so
//! the route is re-mixed before it picks a cache line; otherwise one list's keys would pile
//! into a handful of lines.

const LINE_BITS: u64 = 512;

/// A read-only Bloom filter over route hashes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    k: u32,
    bits: Box<[u8]>,
}

#[inline]
pub(crate) fn mix(mut h: u64) -> u64 {
    // murmur3's 64-bit finalizer: a bijection with full avalanche.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

impl Filter {
    /// Build a filter for `routes` at `bits_per_key`; `None` when filters are off (0 bits).
    pub fn build(routes: &[u64], bits_per_key: u32) -> Option<Filter> {
        if bits_per_key == 0 {
            return None;
        }
        let lines = (routes.len() as u64 * u64::from(bits_per_key))
            .div_ceil(LINE_BITS)
            .max(1);
        // k = bits_per_key * ln 2 minimises false positives.
        let k = ((f64::from(bits_per_key) * 0.69).round() as u32).clamp(1, 16);
        let mut f = Filter {
            k,
            bits: vec![0u8; (lines * LINE_BITS / 8) as usize].into_boxed_slice(),
        };
        for &r in routes {
            f.probe(r, |bits, bit| bits[bit / 8] |= 1 << (bit % 8));
        }
        Some(f)
    }

    #[inline]
    fn probe(&mut self, route: u64, mut visit: impl FnMut(&mut [u8], usize)) {
        let (line, a, b) = self.line_and_steps(route);
        for i in 0..self.k {
            let bit = line + (a.wrapping_add(i.wrapping_mul(b)) as u64 % LINE_BITS) as usize;
            visit(&mut self.bits, bit);
        }
    }

    #[inline]
    fn line_and_steps(&self, route: u64) -> (usize, u32, u32) {
        let h = mix(route);
        let lines = (self.bits.len() * 8) as u64 / LINE_BITS;
        let line = ((u128::from(h) * u128::from(lines)) >> 64) as usize * LINE_BITS as usize;
        let h2 = mix(h ^ 0x9e37_79b9_7f4a_7c15);
        (line, h2 as u32, ((h2 >> 32) as u32) | 1)
    }

    /// Start loading the cache line a probe of `route` reads (see `prefetch`).
    #[inline]
    pub fn prefetch(&self, route: u64) {
        let (line, _, _) = self.line_and_steps(route);
        crate::util::prefetch::prefetch(&self.bits, line / 8);
    }

    /// `false` means the key is certainly absent; `true` means it may be present.
    #[inline]
    pub fn may_contain(&self, route: u64) -> bool {
        let (line, a, b) = self.line_and_steps(route);
        (0..self.k).all(|i| {
            let bit = line + (a.wrapping_add(i.wrapping_mul(b)) as u64 % LINE_BITS) as usize;
            self.bits[bit / 8] & (1 << (bit % 8)) != 0
        })
    }

    /// Bytes of memory this filter holds.
    pub fn memory(&self) -> usize {
        self.bits.len()
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.k as u8);
        out.extend_from_slice(&self.bits);
    }

    /// Decode what [`encode`](Self::encode) wrote; `None` if it is not a well-formed filter.
    pub fn decode(data: &[u8]) -> Option<Filter> {
        let (&k, bits) = data.split_first()?;
        let valid = (1..=16).contains(&k) && !bits.is_empty() && bits.len() % 64 == 0;
        valid.then(|| Filter {
            k: u32::from(k),
            bits: bits.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::KeyOrder;

    fn route(key: &[u8]) -> u64 {
        KeyOrder::Hashed.route(key)
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        // Keys confined to a narrow route range, as in a real list.
        let present: Vec<u64> = (0u64..20_000).map(|i| (1 << 60) + i * 1_000_003).collect();
        let f = Filter::build(&present, 10).unwrap();
        assert!(present.iter().all(|&r| f.may_contain(r)));
        let absent = (0u64..100_000).map(|i| route(&i.to_le_bytes()));
        let fp = absent.filter(|&r| f.may_contain(r)).count();
        assert!(fp < 2_500, "false positive rate {}%", fp as f64 / 1000.0);
        let bytes_per_key = f.memory() as f64 / present.len() as f64;
        assert!((1.2..1.4).contains(&bytes_per_key), "{bytes_per_key}");
    }

    #[test]
    fn encode_round_trip_and_rejects_garbage() {
        let f = Filter::build(&[1, 2, 3], 10).unwrap();
        let mut buf = Vec::new();
        f.encode(&mut buf);
        assert_eq!(Filter::decode(&buf), Some(f));
        assert_eq!(Filter::decode(&[]), None);
        assert_eq!(Filter::decode(&[0; 65]), None);
        assert_eq!(Filter::decode(&[7; 10]), None);
        assert!(Filter::build(&[1], 0).is_none());
    }
}
