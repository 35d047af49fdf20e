//! A hashed list's fingerprints: the high bits of its keys' routes (format 6), the source a
//! node's [selector](crate::tree::Selector) is built from.
//!
//! A list's routes are sorted, so their prefixes `route >> shift` are too: Elias–Fano codes
//! them in about `2 + log2(range / n)` bits each (see `ef`). The shift is chosen when the list
//! is written, fine enough for the node the list goes to even once that node is full of
//! records — and then some, for the narrower leaves it may be fast-split into while they fill
//! again — so that a selector built from it later loses nothing. The fingerprints replace the list's Bloom filter on disk; in
//! memory they are only ever read to build or rebuild selectors, then dropped.
//!
//! ```text
//! section = tag 0xF6 | shift u8 | base u64 (first prefix) | sequence (see `ef`) | crc32c u32
//! ```
//!
//! The section sits where a Bloom filter would (whose first byte, its probe count, is at most
//! 16), and carries its own checksum because selectors reread it alone.

use crate::util::ef::EliasFano;

/// The first byte of a fingerprint section.
pub const TAG: u8 = 0xF6;
/// The bytes [`Fingerprints::peek_shift`] reads: tag, shift, base and a checksum at least.
pub const PEEK_LEN: usize = 14;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fingerprints {
    shift: u32,
    /// The first prefix; the sequence holds `prefix - base`.
    base: u64,
    seq: EliasFano,
}

impl Fingerprints {
    /// The fingerprints of a list's `routes` (sorted), `bytes` long, written for a node of
    /// `node_size` bytes and selectors of `r` bits per key, with `headroom` bits more for the
    /// splits that may narrow the list's node while it fills again (see
    /// `Spiller::new_list`); `None` without routes.
    pub fn build(
        routes: &[u64],
        bytes: u64,
        node_size: usize,
        r: u32,
        headroom: u32,
    ) -> Option<Fingerprints> {
        let (&first, &last) = (routes.first()?, routes.last()?);
        debug_assert!(routes.windows(2).all(|w| w[0] <= w[1]));
        // A node of this list's density holds `node_size / bytes` times its records.
        let fill = (node_size as u64 / bytes.max(1)).max(1);
        let capacity = u128::from(routes.len() as u64) * u128::from(fill);
        let slots = capacity << (r + headroom).min(64);
        let range = u128::from(last - first) + 1;
        let mut shift = 0;
        while range >> shift > slots.max(1) || ((range >> shift) + 1) >= 1 << 61 {
            shift += 1;
        }
        Some(Fingerprints::at_shift(routes, shift))
    }

    /// The fingerprints of `routes` (sorted, at least one) cut at `shift`.
    pub fn at_shift(routes: &[u64], shift: u32) -> Fingerprints {
        let base = routes[0] >> shift;
        let mut prefixes: Vec<u64> = routes.iter().map(|r| (r >> shift) - base).collect();
        prefixes.dedup();
        let universe = prefixes.last().expect("at least one route") + 1;
        Fingerprints {
            shift,
            base,
            seq: EliasFano::build(universe, prefixes.len(), prefixes),
        }
    }

    /// Routes are cut to `route >> shift`.
    pub fn shift(&self) -> u32 {
        self.shift
    }

    pub fn len(&self) -> u64 {
        self.seq.len()
    }

    /// Every prefix (`route >> shift`), in order, each once.
    pub fn prefixes(&self) -> impl Iterator<Item = u64> + '_ {
        self.seq.iter().map(|p| p + self.base)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(TAG);
        out.push(self.shift as u8);
        out.extend_from_slice(&self.base.to_le_bytes());
        self.seq.encode(out);
        let crc = crc_fast::crc32_iscsi(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }

    /// The shift of a section, from its first [`PEEK_LEN`] bytes alone (a list's open checks
    /// no more: selectors and `check` decode it in full, checksum included).
    pub fn peek_shift(data: &[u8]) -> Option<u32> {
        match data {
            [TAG, shift, ..] if data.len() >= PEEK_LEN && *shift < 64 => Some(u32::from(*shift)),
            _ => None,
        }
    }

    /// Decode a whole section; `None` if it is damaged or malformed (its checksum, its sizes,
    /// or prefixes out of order).
    pub fn decode(data: &[u8]) -> Option<Fingerprints> {
        let (body, crc) = data.split_at_checked(data.len().checked_sub(4)?)?;
        if crc_fast::crc32_iscsi(body).to_le_bytes() != crc || body.len() < 10 || body[0] != TAG {
            return None;
        }
        let shift = u32::from(body[1]);
        let base = u64::from_le_bytes(body[2..10].try_into().ok()?);
        let seq = EliasFano::decode(&body[10..])?;
        let top = u64::MAX >> shift.min(63);
        let mut prev = 0;
        let sorted = seq.iter().all(|p| {
            let ok = p >= prev && p < seq.universe();
            prev = p;
            ok
        });
        let last = base.checked_add(seq.universe().checked_sub(1)?)?;
        let fits = shift < 64 && seq.len() > 0 && last <= top;
        (sorted && fits).then_some(Fingerprints { shift, base, seq })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(n: u64, lo: u64, width: u64) -> Vec<u64> {
        let mut v: Vec<u64> = (0..n)
            .map(|i| lo + xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()) % width)
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn prefixes_are_the_routes_cut_at_the_shift() {
        for (n, lo, width) in [(1, 5, 1), (300, 77, 1 << 20), (20_000, 1 << 60, 1 << 50)] {
            let rs = routes(n, lo, width);
            let f = Fingerprints::build(&rs, n * 70, 64 << 20, 8, 1).unwrap();
            let mut expect: Vec<u64> = rs.iter().map(|r| r >> f.shift()).collect();
            expect.dedup();
            assert_eq!(f.prefixes().collect::<Vec<_>>(), expect);
            // Fine enough for a node of 64 MiB at this density, at 8 bits per key.
            let node_keys = (64u64 << 20) / 70;
            let room = (width >> f.shift()) as f64 / node_keys as f64;
            assert!(
                room >= 256.0 || f.shift() == 0,
                "n {n}: {room} slots per key"
            );
        }
        assert!(Fingerprints::build(&[], 0, 1 << 20, 8, 2).is_none());
    }

    #[test]
    fn sections_round_trip_and_damage_is_seen() {
        let f =
            Fingerprints::build(&routes(3_000, 1 << 40, 1 << 44), 100_000, 1 << 20, 8, 2).unwrap();
        let mut buf = Vec::new();
        f.encode(&mut buf);
        assert_eq!(Fingerprints::decode(&buf), Some(f.clone()));
        assert_eq!(Fingerprints::decode(&buf[..buf.len() - 1]), None);
        assert_eq!(Fingerprints::decode(&[]), None);
        for bit in (0..buf.len() * 8).step_by(41) {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(Fingerprints::decode(&bad), None, "bit {bit}");
        }
    }
}
