//! A node's list selector: which of the node's lists may hold a key, in one lookup per tier
//! instead of one filter probe per list (SplinterDB's maplets; LSM-trie's clustered filters
//! in spirit). Hashed stores only: their lists are sorted by route, so a node's fingerprints
//! merge in one pass.
//!
//! An entry is a key's route prefix `route >> shift`, relative to the node's span, with the
//! slot of its list in the low bits: `(prefix - base) << slot_bits | slot`. Elias–Fano codes
//! the sorted entries (see `ef`); a lookup reads the entries of one prefix and maps their
//! slots to list files. The shift is chosen for the node full: a node of `n` records gets
//! `n · 2^r` prefixes, so an absent key matches some entry with probability about `2^-r`
//! however many lists the node holds — where one Bloom filter per list adds up their false
//! positives (1% each, ~64 lists a leaf). An entry costs about `2 + r + slot_bits` bits.
//!
//! A spill appends a list to a node, and rewriting the whole selector then would cost as much
//! as the node holds: the selector is kept in *tiers* instead (LSM-style), the oldest and
//! largest first. A new list becomes a tier of its own, read from the list's fingerprints (see
//! `fingerprints`); a tier merges into the one before it once it holds a quarter of its
//! entries, so every entry is rewritten a few times over the node's life, and a lookup reads
//! a few tiers. Tiers are immutable and shared (`Arc`) between tree versions; a node whose
//! lists change gets a new selector reusing every tier whose lists are all still there.

use std::collections::HashSet;
use std::sync::Arc;

use super::Node;
use crate::ef::EliasFano;
use crate::error::Result;
use crate::list::ListRef;

/// A tier merges into the one before it once it holds `1 / MERGE_RATIO` of its entries.
const MERGE_RATIO: u64 = 4;
/// More tiers than this merge whatever their sizes.
const MAX_TIERS: usize = 4;
/// Prefixes a node's span may be cut into, at most: plenty for any node, and small enough
/// that entries with slots fit the sequence's universe.
const MAX_WIDTH: u128 = 1 << 40;
/// Candidates a lookup keeps; past them, every list of the node is read.
const MAX_CANDIDATES: usize = 8;
/// `covered` for a list no tier holds.
const NONE: u64 = u64::MAX;

/// What selectors are built for.
#[derive(Clone, Copy, Debug)]
pub struct SelectorParams {
    /// Bits per key beyond the unary part (`filter_bits_per_key - 2`): ~`2^-r` false matches
    /// per node.
    pub r: u32,
    /// The node size the shift is chosen for.
    pub node_size: usize,
}

pub struct Selector {
    /// Routes are cut to `route >> shift`; the node's span starts at prefix `base` and holds
    /// `width` of them.
    shift: u32,
    base: u64,
    width: u64,
    /// The span's first and last route, to tell whether the selector fits a node.
    lo: u64,
    hi: u64,
    /// Oldest (largest) first.
    tiers: Vec<Arc<Tier>>,
    /// For each of the node's lists at the time (by position): its file id if a tier holds
    /// its entries, else `NONE`. A read checks the id before it trusts the selector.
    covered: Box<[u64]>,
}

struct Tier {
    seq: EliasFano,
    slot_bits: u32,
    /// The list file of each slot.
    files: Box<[u64]>,
}

/// The list files a lookup found entries for.
pub struct Candidates {
    ids: [u64; MAX_CANDIDATES],
    len: usize,
    /// More than [`MAX_CANDIDATES`]: every list may hold the key.
    all: bool,
}

impl Candidates {
    fn none() -> Candidates {
        Candidates {
            ids: [0; MAX_CANDIDATES],
            len: 0,
            all: false,
        }
    }

    fn push(&mut self, id: u64) {
        if self.all || self.ids[..self.len].contains(&id) {
            return;
        }
        if self.len == MAX_CANDIDATES {
            self.all = true;
        } else {
            self.ids[self.len] = id;
            self.len += 1;
        }
    }

    /// Whether list file `id` may hold the key looked up. (A key matching more lists than
    /// are kept is one written to many lists of the node, so the newest lists, read first,
    /// hold it.)
    #[inline]
    pub fn may_hold(&self, id: u64) -> bool {
        self.all || self.ids[..self.len].contains(&id)
    }
}

fn slot_bits(files: usize) -> u32 {
    usize::BITS - files.saturating_sub(1).leading_zeros()
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tiers: Vec<u64> = self.tiers.iter().map(|t| t.seq.len()).collect();
        write!(f, "Selector(shift {}, tiers {tiers:?})", self.shift)
    }
}

impl Selector {
    /// The selector `node` should have now: `None` if none of its lists has fingerprints
    /// (filters off, an ordered store, lists older than format 6). Reuses what
    /// `node.selector` has; reads the fingerprints of lists it does not hold yet.
    pub fn refresh(node: &Node, params: SelectorParams) -> Result<Option<Arc<Selector>>> {
        let selectable: Vec<&ListRef> = node
            .lists
            .iter()
            .filter(|l| l.file.fingerprint_shift().is_some())
            .collect();
        if selectable.is_empty() {
            return Ok(None);
        }
        let lo = node.span.lo.route;
        let hi = node.span.hi.as_ref().map_or(u64::MAX, |p| p.route);
        // Entries cannot be finer than the coarsest list's fingerprints.
        let coarsest = selectable
            .iter()
            .filter_map(|l| l.file.fingerprint_shift())
            .max()
            .expect("one at least");
        let prev = node
            .selector
            .as_ref()
            .filter(|s| s.lo == lo && s.hi == hi && s.shift >= coarsest);
        if let Some(prev) = prev {
            let same = prev.covered.len() == node.lists.len()
                && node.lists.iter().zip(prev.covered.iter()).all(|(l, &c)| {
                    c == l.file.id() || (c == NONE && l.file.fingerprint_shift().is_none())
                });
            if same {
                return Ok(Some(prev.clone()));
            }
        }
        let shift = match prev {
            Some(p) => p.shift,
            None => Self::choose_shift(&selectable, lo, hi, params).max(coarsest),
        };
        let base = lo >> shift;
        let width = (hi >> shift) - base + 1;
        let present: HashSet<u64> = selectable.iter().map(|l| l.file.id()).collect();
        let mut tiers: Vec<Arc<Tier>> = prev
            .map(|p| {
                p.tiers
                    .iter()
                    .filter(|t| t.files.iter().all(|f| present.contains(f)))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let held: HashSet<u64> = tiers.iter().flat_map(|t| t.files.iter().copied()).collect();
        let mut missing: Vec<&ListRef> = Vec::new();
        let mut seen = HashSet::new();
        // Oldest first, as the tiers go.
        for l in selectable.iter().rev() {
            if !held.contains(&l.file.id()) && seen.insert(l.file.id()) {
                missing.push(l);
            }
        }
        if !missing.is_empty() {
            tiers.push(Arc::new(Tier::read(&missing, shift, base, width)?));
        }
        while tiers.len() >= 2 {
            let (older, newer) = (&tiers[tiers.len() - 2], &tiers[tiers.len() - 1]);
            if newer.seq.len() * MERGE_RATIO < older.seq.len() && tiers.len() <= MAX_TIERS {
                break;
            }
            let merged = Tier::merge(older, newer, width);
            tiers.truncate(tiers.len() - 2);
            tiers.push(Arc::new(merged));
        }
        let held: HashSet<u64> = tiers.iter().flat_map(|t| t.files.iter().copied()).collect();
        let covered = node
            .lists
            .iter()
            .map(|l| {
                let id = l.file.id();
                if held.contains(&id) {
                    id
                } else {
                    NONE
                }
            })
            .collect();
        Ok(Some(Arc::new(Selector {
            shift,
            base,
            width,
            lo,
            hi,
            tiers,
            covered,
        })))
    }

    /// The shift that cuts the span `lo..=hi` into about `2^r` prefixes per record the node
    /// holds when full, judging records by the bytes of its lists.
    fn choose_shift(lists: &[&ListRef], lo: u64, hi: u64, params: SelectorParams) -> u32 {
        let (mut records, mut bytes) = (0u64, 0u64);
        for l in lists {
            records += l.file.records();
            bytes += l.file.size();
        }
        let full = params.node_size as u128 * u128::from(records) / u128::from(bytes.max(1));
        let slots = (full.max(1) << params.r).min(MAX_WIDTH);
        let span = u128::from(hi - lo) + 1;
        let mut shift = 0;
        while span >> shift > slots {
            shift += 1;
        }
        shift
    }

    /// Start loading what a lookup of `route` reads at `stage` (see `EliasFano::prefetch`).
    #[inline]
    pub fn prefetch(&self, route: u64, stage: u32) {
        let rel = (route >> self.shift).wrapping_sub(self.base);
        if rel < self.width {
            for t in &self.tiers {
                t.seq.prefetch(rel << t.slot_bits, stage);
            }
        }
    }

    /// The list files that may hold a key of this `route`.
    pub fn candidates(&self, route: u64) -> Candidates {
        let mut c = Candidates::none();
        let rel = (route >> self.shift).wrapping_sub(self.base);
        if rel >= self.width {
            // Not a position of this node: none of its lists holds it.
            debug_assert!(false, "route {route:#x} outside the node");
            return c;
        }
        for t in &self.tiers {
            let mask = (1u64 << t.slot_bits) - 1;
            let lo = rel << t.slot_bits;
            t.seq
                .for_each_in(lo, lo | mask, |v| c.push(t.files[(v & mask) as usize]));
        }
        c
    }

    /// Whether list `i` of the node, of file `id`, has its entries here: if so, only
    /// [`candidates`](Self::candidates) can hold a key.
    #[inline]
    pub fn covers(&self, i: usize, id: u64) -> bool {
        self.covered.get(i) == Some(&id)
    }

    /// Memory of the tiers, each under the address that tells shared ones apart.
    pub fn tier_memory(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.tiers.iter().map(|t| {
            let bytes = t.seq.memory() + t.files.len() * 8;
            (Arc::as_ptr(t) as usize, bytes)
        })
    }
}

impl Tier {
    /// A tier of `lists` (oldest first, distinct files), from their fingerprints on disk.
    fn read(lists: &[&ListRef], shift: u32, base: u64, width: u64) -> Result<Tier> {
        let slot_bits = slot_bits(lists.len());
        let mut values = Vec::new();
        for (slot, l) in lists.iter().enumerate() {
            let fp = l.file.fingerprints()?;
            let coarser = shift - fp.shift();
            values.reserve(fp.len() as usize);
            for p in fp.prefixes() {
                // A view's file may reach beyond the node: those keys never come here.
                let rel = (p >> coarser).wrapping_sub(base);
                if rel < width {
                    values.push((rel << slot_bits) | slot as u64);
                }
            }
        }
        // Runs sorted per list: the stable sort merges them.
        values.sort();
        values.dedup();
        let files = lists.iter().map(|l| l.file.id()).collect();
        Ok(Tier::from_values(values, slot_bits, files, width))
    }

    fn from_values(values: Vec<u64>, slot_bits: u32, files: Box<[u64]>, width: u64) -> Tier {
        let universe = width << slot_bits;
        Tier {
            seq: EliasFano::build(universe, values.len(), values),
            slot_bits,
            files,
        }
    }

    /// One tier of `older`'s lists and then `newer`'s.
    fn merge(older: &Tier, newer: &Tier, width: u64) -> Tier {
        let files: Box<[u64]> = older
            .files
            .iter()
            .chain(newer.files.iter())
            .copied()
            .collect();
        let bits = slot_bits(files.len());
        let offset = older.files.len() as u64;
        let restate = |t: &Tier, add: u64| {
            let (old, mask) = (t.slot_bits, (1u64 << t.slot_bits) - 1);
            move |v: u64| ((v >> old) << bits) | ((v & mask) + add)
        };
        let mut a = older.seq.iter().map(restate(older, 0)).peekable();
        let mut b = newer.seq.iter().map(restate(newer, offset)).peekable();
        let mut values = Vec::with_capacity((older.seq.len() + newer.seq.len()) as usize);
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(&x), Some(&y)) if x <= y => a.next(),
                (Some(_), Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, _) => b.next(),
            };
            match next {
                Some(v) => values.push(v),
                None => break,
            }
        }
        Tier::from_values(values, bits, files, width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(entries: &[(u64, u64)], files: &[u64], width: u64) -> Tier {
        let bits = slot_bits(files.len());
        let mut values: Vec<u64> = entries.iter().map(|&(p, s)| (p << bits) | s).collect();
        values.sort();
        Tier::from_values(values, bits, files.into(), width)
    }

    fn lookup(t: &Tier, rel: u64) -> Vec<u64> {
        let mask = (1u64 << t.slot_bits) - 1;
        let mut out = Vec::new();
        t.seq
            .for_each_in(rel << t.slot_bits, (rel << t.slot_bits) | mask, |v| {
                out.push(t.files[(v & mask) as usize])
            });
        out
    }

    #[test]
    fn merged_tiers_answer_as_both_did() {
        let a = tier(&[(1, 0), (5, 1), (5, 2), (9, 0)], &[10, 11, 12], 100);
        let b = tier(&[(5, 0), (7, 1), (99, 1)], &[20, 21], 100);
        let m = Tier::merge(&a, &b, 100);
        assert_eq!(m.files.as_ref(), &[10, 11, 12, 20, 21]);
        for rel in 0..100 {
            let mut expect = lookup(&a, rel);
            expect.extend(lookup(&b, rel));
            assert_eq!(lookup(&m, rel), expect, "prefix {rel}");
        }
    }

    #[test]
    fn candidates_give_up_past_the_limit() {
        let mut c = Candidates::none();
        for id in 0..MAX_CANDIDATES as u64 {
            c.push(id);
            c.push(id);
        }
        assert!(!c.all && c.may_hold(3) && !c.may_hold(100));
        c.push(100);
        assert!(c.all && c.may_hold(12345));
    }

    #[test]
    fn slot_bits_hold_every_slot() {
        assert_eq!(slot_bits(1), 0);
        assert_eq!(slot_bits(2), 1);
        assert_eq!(slot_bits(3), 2);
        assert_eq!(slot_bits(64), 6);
        assert_eq!(slot_bits(65), 7);
    }
}
