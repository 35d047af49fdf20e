//! An Elias–Fano coded sorted sequence of integers: the storage under a list's fingerprint set
//! and a node's selector.
//!
//! `n` values below `universe` take about `2 + log2(universe / n)` bits each: every value
//! keeps its low `L = log2(universe / n)` bits as they are, packed, and its high part in
//! unary (value `i` sets bit `high + i`, so the zeros before it count its high part). The
//! values whose high part is `h` follow zero number `h - 1`; a sample of every
//! [`SAMPLE`]-th zero's position finds it with a short scan, so a lookup touches the sample,
//! a word or two of the unary part and the low bits.
//!
//! ```text
//! sequence = universe u64 | n u64 | high words u64* | low words u64*
//! ```

/// Zeros between two samples of the unary part's select index.
const SAMPLE: u64 = 128;

/// A sorted (non-decreasing) sequence of `u64`s below a universe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EliasFano {
    universe: u64,
    n: u64,
    low_bits: u32,
    highs: Box<[u64]>,
    lows: Box<[u64]>,
    /// Position in `highs` of zero number `j · SAMPLE`.
    zeros: Samples,
}

/// The select sample's positions: 4 bytes each while the unary part is shorter than 2^32
/// bits (every sequence a node of up to ~1.4 billion entries makes), 8 beyond.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Samples {
    Narrow(Box<[u32]>),
    Wide(Box<[u64]>),
}

impl Samples {
    fn empty() -> Samples {
        Samples::Narrow(Box::new([]))
    }

    #[inline]
    fn get(&self, i: usize) -> Option<u64> {
        match self {
            Samples::Narrow(z) => z.get(i).map(|&p| u64::from(p)),
            Samples::Wide(z) => z.get(i).copied(),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Samples::Narrow(z) => z.is_empty(),
            Samples::Wide(z) => z.is_empty(),
        }
    }

    fn memory(&self) -> usize {
        match self {
            Samples::Narrow(z) => z.len() * 4,
            Samples::Wide(z) => z.len() * 8,
        }
    }

    #[inline]
    fn prefetch(&self, i: usize) {
        match self {
            Samples::Narrow(z) => crate::util::prefetch::prefetch(z, i),
            Samples::Wide(z) => crate::util::prefetch::prefetch(z, i),
        }
    }
}

/// Low bits per value for `n` values below `universe`: what leaves about one value per
/// bucket of the unary part. An empty sequence keeps every bit low, so that its unary part is
/// a word whatever the universe (a tier with no entries in a node cut into 2^40 prefixes
/// would otherwise hold 2^40 zeros).
fn low_bits(universe: u64, n: u64) -> u32 {
    if n == 0 {
        64 - universe.leading_zeros()
    } else if universe > n {
        63 - (universe / n).leading_zeros()
    } else {
        0
    }
}

/// Words of the unary part and of the low bits for `n` values below `universe`.
fn sizes(universe: u64, n: u64, low_bits: u32) -> (u64, usize, usize) {
    let high_len = (universe >> low_bits) + n + 1;
    let high_words = high_len.div_ceil(64) as usize;
    let low_words = (n * u64::from(low_bits)).div_ceil(64) as usize + 1;
    (high_len, high_words, low_words)
}

impl EliasFano {
    /// The sequence of `values` (non-decreasing, each below `universe`), `n` of them.
    pub fn build(universe: u64, n: usize, values: impl IntoIterator<Item = u64>) -> EliasFano {
        assert!(universe < 1 << 62, "universe {universe} too large");
        let n = n as u64;
        let low_bits = low_bits(universe, n);
        let (_, high_words, low_words) = sizes(universe, n, low_bits);
        let mut highs = vec![0u64; high_words];
        let mut lows = vec![0u64; low_words];
        let mut i = 0u64;
        let mut prev = 0;
        for v in values {
            assert!(
                i < n && v < universe && v >= prev,
                "values out of order or range"
            );
            prev = v;
            let pos = (v >> low_bits) + i;
            highs[(pos / 64) as usize] |= 1 << (pos % 64);
            put_bits(&mut lows, i * u64::from(low_bits), low_bits, v);
            i += 1;
        }
        assert_eq!(i, n, "fewer values than announced");
        EliasFano::from_parts(universe, n, low_bits, highs.into(), lows.into())
    }

    /// A sequence of these parts, with its select sample built.
    fn from_parts(
        universe: u64,
        n: u64,
        low_bits: u32,
        highs: Box<[u64]>,
        lows: Box<[u64]>,
    ) -> EliasFano {
        let mut ef = EliasFano {
            universe,
            n,
            low_bits,
            highs,
            lows,
            zeros: Samples::empty(),
        };
        ef.zeros = ef.sample_zeros();
        ef
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// Bytes of memory held.
    pub fn memory(&self) -> usize {
        (self.highs.len() + self.lows.len()) * 8 + self.zeros.memory()
    }

    fn sample_zeros(&self) -> Samples {
        self.sample_zeros_narrow_below(u64::from(u32::MAX))
    }

    /// The select sample, in 4 bytes a position when every position of the unary part is at
    /// most `narrow` (decided from its length, so the sample is collected once).
    fn sample_zeros_narrow_below(&self, narrow: u64) -> Samples {
        let capacity = (self.universe >> self.low_bits) as usize / 128 + 1;
        if (self.highs.len() as u64 * 64).saturating_sub(1) <= narrow {
            let mut zeros = Vec::with_capacity(capacity);
            self.each_sampled_zero(|p| zeros.push(p as u32));
            Samples::Narrow(zeros.into())
        } else {
            let mut zeros = Vec::with_capacity(capacity);
            self.each_sampled_zero(|p| zeros.push(p));
            Samples::Wide(zeros.into())
        }
    }

    /// Call `f` with the position of every [`SAMPLE`]-th zero of the unary part.
    fn each_sampled_zero(&self, mut f: impl FnMut(u64)) {
        let mut seen = 0u64;
        for (w, &word) in self.highs.iter().enumerate() {
            let mut free = !word;
            let count = u64::from(free.count_ones());
            // Only words holding a sampled zero need a closer look.
            if (seen + count).div_ceil(SAMPLE) > seen.div_ceil(SAMPLE) {
                while free != 0 {
                    if seen.is_multiple_of(SAMPLE) {
                        f(w as u64 * 64 + u64::from(free.trailing_zeros()));
                    }
                    seen += 1;
                    free &= free - 1;
                }
            } else {
                seen += count;
            }
        }
    }

    /// Position of zero number `k` in `highs`.
    fn select_zero(&self, k: u64) -> Option<u64> {
        let (sample, mut left) = match self.zeros.get((k / SAMPLE) as usize) {
            Some(sample) => (sample, k % SAMPLE),
            // No sample (see `decode_unsampled`): count from the start.
            None if self.zeros.is_empty() => (0, k),
            None => return None,
        };
        let mut w = (sample / 64) as usize;
        // Zeros of the first word before the sampled one are not ours.
        let mut free = !self.highs[w] & (u64::MAX << (sample % 64));
        loop {
            let count = u64::from(free.count_ones());
            if left < count {
                return Some(w as u64 * 64 + u64::from(select_in_word(free, left as u32)));
            }
            left -= count;
            w += 1;
            free = !*self.highs.get(w)?;
        }
    }

    /// Start loading what a lookup of `lo` reads at `stage` (0, 1, 2: the select sample, the
    /// unary words, the low bits; see `prefetch`), each stage once the one before has loaded.
    /// A read of several sequences runs each stage over all of them, so that their cache misses
    /// overlap instead of following one another.
    #[inline]
    pub fn prefetch(&self, lo: u64, stage: u32) {
        let high = lo >> self.low_bits;
        let k = high.saturating_sub(1);
        match stage {
            0 => self.zeros.prefetch((k / SAMPLE) as usize),
            1 => {
                if let Some(z) = self.zeros.get((k / SAMPLE) as usize) {
                    crate::util::prefetch::prefetch(&self.highs, (z / 64) as usize);
                }
            }
            _ => {
                if let Some(pos) = self.start_of(high) {
                    let i = pos - high;
                    let word = (i * u64::from(self.low_bits) / 64) as usize;
                    crate::util::prefetch::prefetch(&self.lows, word);
                    crate::util::prefetch::prefetch(&self.highs, (pos / 64) as usize);
                }
            }
        }
    }

    /// Position in `highs` of the first value whose high part is `high` (or where it would be).
    #[inline]
    fn start_of(&self, high: u64) -> Option<u64> {
        match high {
            0 => Some(0),
            h => self.select_zero(h - 1).map(|p| p + 1),
        }
    }

    /// Call `f` with every value in `lo..=hi`, in order.
    pub fn for_each_in(&self, lo: u64, hi: u64, mut f: impl FnMut(u64)) {
        if lo > hi || lo >= self.universe {
            return;
        }
        let mut high = lo >> self.low_bits;
        // The values with this high part are the ones after zero number high - 1.
        let Some(mut pos) = self.start_of(high) else {
            return;
        };
        let mut i = pos - high;
        loop {
            let Some(&word) = self.highs.get((pos / 64) as usize) else {
                return;
            };
            if word & (1 << (pos % 64)) == 0 {
                high += 1;
                if high > hi >> self.low_bits {
                    return;
                }
            } else {
                let l = get_bits(&self.lows, i * u64::from(self.low_bits), self.low_bits);
                let v = (high << self.low_bits) | l;
                if v > hi {
                    return;
                }
                if v >= lo {
                    f(v);
                }
                i += 1;
            }
            pos += 1;
        }
    }

    /// Every value, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let mut pos = 0u64;
        let mut high = 0u64;
        (0..self.n).map(move |i| {
            // Skip to the next set bit, counting the zeros passed.
            loop {
                let word = self.highs[(pos / 64) as usize] >> (pos % 64);
                if word == 0 {
                    let skip = 64 - pos % 64;
                    high += skip;
                    pos += skip;
                    continue;
                }
                let z = u64::from(word.trailing_zeros());
                high += z;
                pos += z + 1;
                break;
            }
            let l = get_bits(&self.lows, i * u64::from(self.low_bits), self.low_bits);
            (high << self.low_bits) | l
        })
    }

    /// Bytes [`encode`](Self::encode) writes for `n` values below `universe`.
    pub fn encoded_len(universe: u64, n: u64) -> usize {
        let (_, high_words, low_words) = sizes(universe, n, low_bits(universe, n));
        16 + (high_words + low_words) * 8
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.universe.to_le_bytes());
        out.extend_from_slice(&self.n.to_le_bytes());
        for w in self.highs.iter().chain(self.lows.iter()) {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    /// Decode what [`encode`](Self::encode) wrote, from the start of `data` to its end;
    /// `None` if it is not a well-formed sequence (its sizes disagree, or its unary part does
    /// not hold `n` values). Damaged low bits go unseen here: a checksum guards them.
    pub fn decode(data: &[u8]) -> Option<EliasFano> {
        let mut ef = Self::decode_unsampled(data)?;
        ef.zeros = ef.sample_zeros();
        Some(ef)
    }

    /// [`decode`](Self::decode) without the select sample: for short sequences (a 4 KiB block
    /// of a selector tier on disk, decoded at every cache miss), where a lookup counting zeros
    /// from the start — a few dozen popcounts — costs less than building the sample.
    pub fn decode_unsampled(data: &[u8]) -> Option<EliasFano> {
        let u64_at = |i: usize| Some(u64::from_le_bytes(data.get(i..i + 8)?.try_into().ok()?));
        let (universe, n) = (u64_at(0)?, u64_at(8)?);
        // What this crate encodes never repeats a value: no more values than the universe.
        let too_many = n > universe || n > (data.len() as u64) * 8;
        if universe >= 1 << 62 || too_many {
            return None;
        }
        let low_bits = low_bits(universe, n);
        let (high_len, high_words, low_words) = sizes(universe, n, low_bits);
        let body = data.get(16..)?;
        if body.len() != (high_words + low_words) * 8 {
            return None;
        }
        // Straight into the two parts: a selector tier read back at open is tens of MiB.
        let words = |bytes: &[u8]| -> Box<[u64]> {
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        };
        let (highs, lows) = body.split_at(high_words * 8);
        let (highs, lows) = (words(highs), words(lows));
        let set: u64 = highs.iter().map(|w| u64::from(w.count_ones())).sum();
        let stray = high_len % 64 != 0 && highs[high_words - 1] >> (high_len % 64) != 0;
        if set != n || stray {
            return None;
        }
        Some(EliasFano {
            universe,
            n,
            low_bits,
            highs,
            lows,
            zeros: Samples::empty(),
        })
    }
}

/// Position of set bit number `k` (from 0) of `word`, which has more than `k` set bits.
fn select_in_word(word: u64, mut k: u32) -> u32 {
    let mut pos = 0;
    let mut width = 32;
    while width > 0 {
        let low = (word >> pos) & (u64::MAX >> (64 - width));
        let count = low.count_ones();
        if k >= count {
            k -= count;
            pos += width;
        }
        width /= 2;
    }
    pos
}

fn low_mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

fn put_bits(words: &mut [u64], at: u64, bits: u32, value: u64) {
    if bits == 0 {
        return;
    }
    let v = value & low_mask(bits);
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    words[w] |= v << b;
    if b + bits > 64 {
        words[w + 1] |= v >> (64 - b);
    }
}

fn get_bits(words: &[u64], at: u64, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let (w, b) = ((at / 64) as usize, (at % 64) as u32);
    let mut v = words[w] >> b;
    if b + bits > 64 {
        v |= words[w + 1] << (64 - b);
    }
    v & low_mask(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(n: u64, universe: u64, seed: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n)
            .map(|i| xxhash_rust::xxh3::xxh3_64(&(i ^ seed << 32).to_le_bytes()) % universe)
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn ranges_and_iteration_match_the_values() {
        for (n, universe) in [(0, 10), (1, 1), (5, 5), (300, 1 << 20), (20_000, 1 << 30)] {
            let values = sorted(n, universe, 7);
            let ef = EliasFano::build(universe, values.len(), values.iter().copied());
            assert_eq!(ef.iter().collect::<Vec<_>>(), values, "n {n}");
            for q in sorted(500, universe, 9) {
                let width = universe / 1000 + 1;
                let mut got = Vec::new();
                ef.for_each_in(q, q + width, |v| got.push(v));
                let expect: Vec<u64> = values
                    .iter()
                    .copied()
                    .filter(|&v| v >= q && v <= q + width)
                    .collect();
                assert_eq!(got, expect, "n {n}, query {q}");
            }
            let bits = ef.memory() as f64 * 8.0 / n.max(1) as f64;
            if n >= 300 {
                let ideal = 2.0 + (universe as f64 / n as f64).log2();
                assert!(bits < ideal + 1.5, "n {n}: {bits} bits per value");
            }
        }
    }

    #[test]
    fn empty_sequences_are_small_whatever_the_universe() {
        for universe in [0, 1, 1 << 20, 1 << 40, (1 << 62) - 1] {
            let ef = EliasFano::build(universe, 0, []);
            assert!(
                ef.memory() <= 32,
                "universe {universe}: {} bytes",
                ef.memory()
            );
            assert_eq!(ef.iter().count(), 0);
            let mut hits = 0;
            ef.for_each_in(0, universe, |_| hits += 1);
            ef.for_each_in(universe / 2, universe / 2 + 10, |_| hits += 1);
            assert_eq!(hits, 0);
            let mut buf = Vec::new();
            ef.encode(&mut buf);
            assert_eq!(buf.len(), EliasFano::encoded_len(universe, 0));
            assert_eq!(EliasFano::decode(&buf), Some(ef));
        }
    }

    #[test]
    fn wide_select_samples_answer_as_narrow_ones() {
        // Positions past 2^32 bits take 8-byte samples; forced here on a small sequence.
        let values = sorted(50_000, 1 << 30, 11);
        let narrow = EliasFano::build(1 << 30, values.len(), values.iter().copied());
        let mut wide = narrow.clone();
        wide.zeros = wide.sample_zeros_narrow_below(1000);
        assert!(matches!(wide.zeros, Samples::Wide(_)));
        assert!(matches!(narrow.zeros, Samples::Narrow(_)));
        for q in sorted(300, 1 << 30, 4) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            narrow.for_each_in(q, q + 100_000, |v| a.push(v));
            wide.for_each_in(q, q + 100_000, |v| b.push(v));
            assert_eq!(a, b, "from {q}");
        }
    }

    #[test]
    fn repeats_are_kept() {
        let values = [3, 3, 3, 9, 9, 200];
        let ef = EliasFano::build(256, values.len(), values);
        assert_eq!(ef.iter().collect::<Vec<_>>(), values);
        let mut got = Vec::new();
        ef.for_each_in(3, 9, |v| got.push(v));
        assert_eq!(got, [3, 3, 3, 9, 9]);
    }

    #[test]
    fn select_in_word_finds_every_set_bit() {
        for word in [1u64, u64::MAX, 0x8000_0000_0000_0001, 0xF0F0_1234_0000_8001] {
            let set: Vec<u32> = (0..64).filter(|b| word & (1 << b) != 0).collect();
            for (k, &b) in set.iter().enumerate() {
                assert_eq!(select_in_word(word, k as u32), b, "{word:#x} bit {k}");
            }
        }
    }

    #[test]
    fn encoding_round_trips_and_rejects_garbage() {
        let values = sorted(3_000, 1 << 24, 3);
        let ef = EliasFano::build(1 << 24, values.len(), values.iter().copied());
        let mut buf = Vec::new();
        ef.encode(&mut buf);
        assert_eq!(
            buf.len(),
            EliasFano::encoded_len(1 << 24, values.len() as u64)
        );
        assert_eq!(EliasFano::decode(&buf), Some(ef.clone()));
        // Without a select sample, lookups answer the same.
        let bare = EliasFano::decode_unsampled(&buf).unwrap();
        assert!(bare.zeros.is_empty());
        for q in sorted(300, 1 << 24, 9) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            ef.for_each_in(q, q + 20_000, |v| a.push(v));
            bare.for_each_in(q, q + 20_000, |v| b.push(v));
            assert_eq!(a, b, "from {q}");
        }
        assert_eq!(EliasFano::decode(&buf[..buf.len() - 1]), None);
        assert_eq!(EliasFano::decode(&[]), None);
        for bit in (0..buf.len() * 8).step_by(61) {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            // Whatever decodes must answer lookups without panicking.
            if let Some(g) = EliasFano::decode(&bad) {
                let _ = g.iter().count();
                for q in sorted(100, 1 << 24, 5) {
                    g.for_each_in(q, q + 1000, |_| {});
                }
            }
        }
    }
}
