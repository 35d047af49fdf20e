//! Cardinality from the hash order (WB-tree §6): a K-minimum-values sketch of each list.
//!
//! A list keeps, beside its filter, the distinct keys of smallest *rank* (the key's hash,
//! re-mixed so that ranks are uniform in an ordered store's narrow route ranges as in a hashed
//! one's), all those below a bound `theta`: [`K`] of them, or one in [`RATE`] of a larger
//! list's keys. The sampled keys are then a uniform sample of the list at rate
//! `theta / 2^64`, which is what makes sketches compose:
//!
//! - a *view* of the list (a fast-split's share of its pages) samples at the same rate: keep
//!   the samples on its pages. A big list stays sampled at one in [`RATE`] however finely
//!   fast-splits divide it;
//! - whether a newer list holds a sampled key is known exactly when the key ranks below that
//!   list's theta too: a node's estimate keeps, of each list, the samples below the thetas of
//!   all newer lists (an unbiased sample still, at the smaller rate);
//! - a *union* of lists samples at the smallest of their rates: keep every list's samples
//!   below the smallest theta, and count the distinct ones.
//!
//! A node's samples then say what share of its records are repeats of newer records (1 − α
//! in the paper) or tombstones, and a store's how many distinct keys are alive (their newest
//! record is not a tombstone) with how many bytes. A node mostly made of repeats or tombstones
//! is worth collecting now, whatever its size and whether filters are on: that is what bounds
//! a store's space and filter memory against overwrites (see `Node::mostly_dead`).
//!
//! ```text
//! sketch = count u32 | theta u64 | count × (hash u64 | page u32 | bytes u32)
//!          samples in rank order; bytes: the key's records in the list, top bit set when the
//!          newest of them is a tombstone
//! ```

use std::collections::{BinaryHeap, HashSet};
use std::ops::{Range, RangeInclusive};

use crate::list::filter::mix;

/// Keys sampled from every list, at least (all of a list with fewer).
pub const K: usize = 64;
/// A list of more than `K × RATE` keys samples one key in `RATE`: 16 bytes of memory per 256
/// keys (0.06 B/key), and a few thousand samples in a full leaf however it was fast-split.
pub const RATE: usize = 256;
const TOMBSTONE: u32 = 1 << 31;
const SAMPLE_LEN: usize = 16;

/// One sampled key of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The key's hash (`KeyOrder::hash`): the same in every list that holds the key.
    pub hash: u64,
    /// The page holding the key's records.
    pub page: u32,
    bytes: u32,
}

impl Sample {
    fn rank(&self) -> u64 {
        mix(self.hash)
    }
    /// Bytes of the key's records in this list.
    pub fn bytes(&self) -> u32 {
        self.bytes & !TOMBSTONE
    }
    /// Whether the key's newest record in this list is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        self.bytes & TOMBSTONE != 0
    }
}

/// A list's sample: its keys whose rank is below `theta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sketch {
    theta: u64,
    samples: Box<[Sample]>,
}

impl Sketch {
    /// The bound on the sampled keys' ranks.
    pub fn theta(&self) -> u64 {
        self.theta
    }

    /// The samples on pages `start..end` whose rank is below `theta`.
    pub fn samples_below(
        &self,
        theta: u64,
        start: u32,
        end: u32,
    ) -> impl Iterator<Item = &Sample> + '_ {
        // In rank order: those below `theta` come first.
        self.samples
            .iter()
            .take_while(move |s| s.rank() < theta)
            .filter(move |s| (start..end).contains(&s.page))
    }

    /// Every sample, in rank order.
    pub fn samples(&self) -> impl Iterator<Item = &Sample> + '_ {
        self.samples.iter()
    }

    /// Samples held.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Bytes of memory held.
    pub fn memory(&self) -> usize {
        self.samples.len() * std::mem::size_of::<Sample>()
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.samples.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.theta.to_le_bytes());
        for s in self.samples.iter() {
            out.extend_from_slice(&s.hash.to_le_bytes());
            out.extend_from_slice(&s.page.to_le_bytes());
            out.extend_from_slice(&s.bytes.to_le_bytes());
        }
    }

    /// Decode what [`encode`](Self::encode) wrote for a list of `pages` pages and `records`
    /// records; `None` if it is not a well-formed sketch (more samples than records, samples
    /// out of rank order, above theta or off the list). Distinct keys whose hashes collide
    /// are samples of equal rank, side by side.
    /// How many bytes of `data` the encoded sketch at its start takes.
    pub fn encoded_len(data: &[u8]) -> Option<usize> {
        let count = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let len = count.checked_mul(SAMPLE_LEN)?.checked_add(12)?;
        (len <= data.len()).then_some(len)
    }

    pub fn decode(data: &[u8], pages: u32, records: u64) -> Option<Sketch> {
        let count = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let theta = u64::from_le_bytes(data.get(4..12)?.try_into().ok()?);
        let body = data.get(12..)?;
        if count as u64 > records || body.len() != count * SAMPLE_LEN {
            return None;
        }
        let samples: Box<[Sample]> = body
            .chunks_exact(SAMPLE_LEN)
            .map(|c| Sample {
                hash: u64::from_le_bytes(c[..8].try_into().unwrap()),
                page: u32::from_le_bytes(c[8..12].try_into().unwrap()),
                bytes: u32::from_le_bytes(c[12..].try_into().unwrap()),
            })
            .collect();
        let sound = samples.windows(2).all(|w| w[0].rank() <= w[1].rank())
            && samples.iter().all(|s| s.rank() < theta && s.page < pages);
        sound.then_some(Sketch { theta, samples })
    }
}

/// How many keys each sample of a sample bounded by `theta` stands for.
pub fn scale(theta: u64) -> f64 {
    if theta == u64::MAX {
        1.0
    } else {
        18_446_744_073_709_551_616.0 / theta as f64
    }
}

/// Builds a list's sketch from its records as a list writer adds them, in position order: a
/// key's records (a stack of operands and its base) arrive together, newest first.
pub struct SketchBuilder {
    /// The sampled keys (rank, hash, page, bytes), largest rank on top; all rank below theta.
    heap: BinaryHeap<(u64, u64, u32, u32)>,
    theta: u64,
    keys: usize,
    /// The key being added: more of its records may follow.
    open: Option<Sample>,
}

impl Default for SketchBuilder {
    fn default() -> Self {
        SketchBuilder {
            heap: BinaryHeap::new(),
            theta: u64::MAX,
            keys: 0,
            open: None,
        }
    }
}

impl SketchBuilder {
    /// Add a record of `bytes` bytes on page `page`; `same_key`: of the key added last.
    pub fn add(&mut self, hash: u64, page: u32, bytes: usize, tombstone: bool, same_key: bool) {
        let bytes = bytes.min((TOMBSTONE - 1) as usize) as u32;
        if let (true, Some(s)) = (same_key, &mut self.open) {
            let total = s.bytes().saturating_add(bytes).min(TOMBSTONE - 1);
            s.bytes = total | (s.bytes & TOMBSTONE);
            return;
        }
        self.close();
        self.open = Some(Sample {
            hash,
            page,
            bytes: bytes | if tombstone { TOMBSTONE } else { 0 },
        });
    }

    fn close(&mut self) {
        let Some(s) = self.open.take() else { return };
        self.keys += 1;
        let rank = s.rank();
        if rank >= self.theta {
            return;
        }
        self.heap.push((rank, s.hash, s.page, s.bytes));
        // Lowering theta to the largest rank dropped keeps "every key below theta" true of
        // the keys seen so far, and of those to come (they are kept only below it). Distinct
        // keys may share a hash, and so a rank: all samples of the dropped rank go together.
        while self.heap.len() > K.max(self.keys / RATE) {
            self.theta = self.heap.pop().expect("not empty").0;
            while self.heap.peek().is_some_and(|top| top.0 == self.theta) {
                self.heap.pop();
            }
        }
    }

    pub fn finish(mut self) -> Sketch {
        self.close();
        Sketch {
            theta: self.theta,
            samples: self
                .heap
                .into_sorted_vec()
                .into_iter()
                .map(|(_, hash, page, bytes)| Sample { hash, page, bytes })
                .collect(),
        }
    }
}

/// What samples say about the records they stand for, scaled to the whole.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Records (a key's records in one list count once), and those that are the newest of
    /// their key (the distinct keys).
    pub records: f64,
    pub distinct: f64,
    /// Distinct keys whose newest record is not a tombstone, and the bytes of those records.
    pub live: f64,
    pub live_bytes: f64,
    /// Samples the figures rest on: below a few dozen they are rough.
    pub samples: usize,
}

impl Estimate {
    /// Records that are neither repeats nor tombstones, as a share of all (1 when empty).
    pub fn live_fraction(&self) -> f64 {
        if self.records == 0.0 {
            1.0
        } else {
            self.live / self.records
        }
    }

    /// Records that are not repeats, as a share of all (the paper's α; 1 when empty).
    pub fn distinct_fraction(&self) -> f64 {
        if self.records == 0.0 {
            1.0
        } else {
            self.distinct / self.records
        }
    }

    /// Count one sampled record standing for `scale` records; `newest`: no newer record of
    /// its key is known.
    pub fn add(&mut self, s: &Sample, scale: f64, newest: bool) {
        self.samples += 1;
        self.records += scale;
        if newest {
            self.distinct += scale;
            if !s.is_tombstone() {
                self.live += scale;
                self.live_bytes += f64::from(s.bytes()) * scale;
            }
        }
    }
}

/// The part of a list a node reads: its samples on pages `pages` whose hash is in `hashes`.
#[derive(Clone)]
pub struct View<'a> {
    pub sketch: &'a Sketch,
    pub pages: Range<u32>,
    /// In a hashed store a key's hash is its route, so a node's span bounds its keys' hashes:
    /// a page a fast-split left on one side of a list holds some keys of the other, and
    /// their samples must not count in both nodes. Every hash elsewhere.
    pub hashes: RangeInclusive<u64>,
}

impl<'a> View<'a> {
    /// All of `sketch` (pages and hashes).
    pub fn whole(sketch: &'a Sketch) -> View<'a> {
        View {
            sketch,
            pages: 0..u32::MAX,
            hashes: 0..=u64::MAX,
        }
    }
}

/// Estimate the distinct keys of `views`, newest first, as one union: every view's samples
/// below the smallest theta (a key's first sample is its newest record). `None` if there are
/// no views.
pub fn union<'a>(views: impl Iterator<Item = View<'a>> + Clone) -> Option<Estimate> {
    let theta = views.clone().map(|v| v.sketch.theta).min()?;
    let mut seen = HashSet::new();
    let mut est = Estimate::default();
    for v in views {
        // Samples are in rank order: those below the union's theta come first.
        for s in v.sketch.samples.iter().take_while(|s| s.rank() < theta) {
            if v.pages.contains(&s.page) && v.hashes.contains(&s.hash) {
                let first = seen.insert(s.hash);
                est.add(s, scale(theta), first);
            }
        }
    }
    Some(est)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sketch_of(hashes: impl Iterator<Item = u64>, page: u32) -> Sketch {
        let mut b = SketchBuilder::default();
        for h in hashes {
            b.add(h, page, 10, false, false);
        }
        b.finish()
    }

    fn hash(i: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())
    }

    #[test]
    fn small_lists_are_counted_exactly() {
        let s = sketch_of((0..40).map(hash), 0);
        let e = union([View::whole(&s)].into_iter()).unwrap();
        assert_eq!((e.records, e.distinct, e.live), (40.0, 40.0, 40.0));
        assert_eq!(e.live_bytes, 400.0);
    }

    #[test]
    fn unions_of_overlapping_lists_estimate_their_distinct_keys() {
        // Five lists of 20,000 keys, each overlapping the one before by half: 60,000 keys.
        let lists: Vec<Sketch> = (0..5u64)
            .map(|i| sketch_of((i * 10_000..i * 10_000 + 20_000).map(hash), 0))
            .collect();
        let e = union(lists.iter().map(View::whole)).unwrap();
        assert!((e.records / 100_000.0 - 1.0).abs() < 0.2, "{e:?}");
        assert!((e.distinct / 60_000.0 - 1.0).abs() < 0.2, "{e:?}");
        assert!((e.distinct_fraction() - 0.6).abs() < 0.1, "{e:?}");
    }

    #[test]
    fn the_newest_record_decides_liveness_and_views_keep_their_pages() {
        let mut old = SketchBuilder::default();
        let mut new = SketchBuilder::default();
        for i in 0..1000u64 {
            old.add(hash(i), (i / 100) as u32, 30, false, false);
            // Every key deleted, in a newer list: nothing is alive.
            new.add(hash(i), 0, 3, true, false);
        }
        let (old, new) = (old.finish(), new.finish());
        let e = union([View::whole(&new), View::whole(&old)].into_iter()).unwrap();
        assert_eq!(e.live, 0.0);
        assert!(e.distinct_fraction() < 0.6, "{e:?}");
        let older_first = union([View::whole(&old), View::whole(&new)].into_iter()).unwrap();
        assert!(older_first.live > 0.0);
        // A view of half the pages holds about half the samples.
        let half = View {
            pages: 0..5,
            ..View::whole(&old)
        };
        let half = union([half].into_iter()).unwrap();
        assert!((half.records / 500.0 - 1.0).abs() < 0.4, "{half:?}");
    }

    #[test]
    fn keys_sharing_a_hash_are_samples_of_equal_rank() {
        // Two distinct keys per hash (a route collision), in lists small enough to keep
        // every key and big enough to sample.
        for n in [10u64, 5_000] {
            let mut b = SketchBuilder::default();
            for i in 0..n {
                b.add(hash(i), 0, 10, false, false);
                b.add(hash(i), 0, 12, i % 2 == 0, false);
            }
            let s = b.finish();
            assert!(s.samples().all(|x| x.rank() < s.theta()), "n {n}");
            let mut buf = Vec::new();
            s.encode(&mut buf);
            assert_eq!(Sketch::decode(&buf, 1, 2 * n), Some(s.clone()), "n {n}");
            let e = union([View::whole(&s)].into_iter()).unwrap();
            assert!(
                (e.records / (2 * n) as f64 - 1.0).abs() < 0.3,
                "n {n}: {e:?}"
            );
        }
    }

    #[test]
    fn stacks_are_one_sample_and_encoding_round_trips() {
        let mut b = SketchBuilder::default();
        for i in 0..500u64 {
            b.add(hash(i), 3, 20, true, false);
            b.add(hash(i), 3, 20, false, true);
        }
        let s = b.finish();
        assert_eq!(s.samples.len(), K);
        assert!(s
            .samples
            .iter()
            .all(|x| x.bytes() == 40 && x.is_tombstone()));
        let mut buf = Vec::new();
        s.encode(&mut buf);
        assert_eq!(Sketch::decode(&buf, 4, 1000), Some(s.clone()));
        assert_eq!(
            Sketch::decode(&buf, 3, 1000),
            None,
            "a sample past the last page"
        );
        assert_eq!(Sketch::decode(&buf[..buf.len() - 1], 4, 1000), None);
        let mut swapped = buf.clone();
        swapped[12..44].rotate_left(16);
        assert_eq!(Sketch::decode(&swapped, 4, 1000), None, "out of rank order");
    }
}
