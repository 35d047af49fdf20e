//! A node's list selector: which of the node's lists may hold a key, in one lookup per tier
//! instead of one filter probe per list (SplinterDB's maplets; LSM-trie's clustered filters
//! in spirit). Hashed stores only: their lists are sorted by route, so a node's fingerprints
//! merge in one pass.
//!
//! An entry is a key's route prefix `route >> shift`, relative to the node's span, and the
//! slot of its list among the tier's `slots`: `(prefix - base) * slots + slot` (mixed radix,
//! so that a tier of 20 lists pays `log2 20` bits for the slot, not 5). Elias–Fano codes the
//! sorted entries (see `ef`); a lookup reads the entries of one prefix and maps their slots
//! to list files. The shift is chosen for the node full: a node of `n` records gets
//! `n · 2^r` prefixes, so an absent key matches some entry with probability about `2^-r`
//! however many lists the node holds — where one Bloom filter per list adds up their false
//! positives (1% each, ~64 lists a leaf). An entry costs about `2 + r + log2(slots)` bits.
//!
//! A spill appends a list to a node, and rewriting the whole selector then would cost as much
//! as the node holds: the selector is kept in *tiers* instead (LSM-style). A new list becomes
//! a tier of its own, read from the list's fingerprints (see `fingerprints`); a tier merges
//! into the one before it once it holds a quarter of its entries, so every entry is rewritten
//! a few times over the node's life, and a lookup reads a few tiers. A list holding a quarter
//! of the node (what a slow-split leaves) keeps a tier of its own, with no slot. Tiers
//! are immutable and shared (`Arc`) between tree versions; a node whose lists change gets a
//! new selector reusing every tier whose lists are all still there.
//!
//! What is saved of a selector, so that an open reads it back instead of building it again
//! (see `selector_file`, `selector_index`), goes its own way: a tier made from new lists is
//! saved as it is made, and saved tiers merge among themselves by size class, not as the
//! tiers here do (see `saved_tier`); an open groups a node's saved tiers back into as few
//! as these (see `unread_tier`).
//!
//! Under a memory budget with no room for every selector, the biggest leaves' selectors leave
//! memory (see `Tree::refresh_selectors`): each such node keeps its entries in one tier on disk
//! (`tier_file`, one 4 KiB block read per lookup) and the entries of lists added since in
//! memory tiers, until they hold a quarter as many and join the one on disk. That rewrite
//! grows with the leaf, and leaves filled alike cross the quarter in the same spill: a spill
//! lets the memory tiers grow to half, and upkeep after it does the rewrites, node by node
//! (see `SelectorRoom::hold_back`, `tree::upkeep`). Merges of tiers in memory fall due in
//! lockstep the same way; a spill merges up to an allowance of entries and leaves the rest
//! to later refreshes (see [`Merges`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::saved_tier::{self, SavedTier};
use super::tier_file::{DiskEntries, TierFile};
use super::unread_tier::Unread;
use super::{never, Node};
use crate::error::Result;
use crate::list::{ListFile, ListRef};
use crate::options::{selector_precision, Options};
use crate::order::KeyOrder;
use crate::util::ef::EliasFano;

/// A tier merges into the one before it once it holds `1 / MERGE_RATIO` of its entries.
const MERGE_RATIO: u64 = 4;
/// A selector on disk keeps the entries of lists added since its tier was written in memory
/// while they hold less than `1 / residue` as many (see `Place::Disk`): this one as a rule,
/// and the tight one where the budget has no room even for that. A tighter residue rewrites
/// the leaf's blocks more often: each new entry costs about `residue` entries' worth of block
/// writes.
pub(super) const DISK_RESIDUE: u64 = 4;
pub(super) const TIGHT_DISK_RESIDUE: u64 = 16;
/// More tiers than this (besides pinned ones) merge whatever their sizes.
const MAX_TIERS: usize = 3;
/// Entries a pass of refreshes held back (see [`Merges`]) may merge: about 20–30 ms of
/// sorting and coding on one core.
pub const MERGE_ALLOWANCE: u64 = 1 << 20;
/// More tiers than this (besides pinned ones) merge even past a refresh's allowance (see
/// [`Merges`]): a lookup reads each tier.
pub(super) const MAX_HELD_TIERS: usize = 8;
/// A list holding at least `1 / PIN_SHARE` of a node's entries has a tier of its own, which
/// does not merge (see `pinned`).
pub(super) const PIN_SHARE: u64 = 4;
/// Prefixes a node's span may be cut into, at most: plenty for any node, and small enough
/// that entries with slots fit the sequence's universe.
const MAX_WIDTH: u128 = 1 << 40;
/// Candidates a lookup keeps; past them, every list of the node is read.
const MAX_CANDIDATES: usize = 8;
/// Entries a tier's read takes between two looks at whether to give up (see [`Rebuilds`]):
/// a few milliseconds.
const STOP_EVERY: usize = 1 << 16;
/// `covered` for a list no tier holds.
const NONE: u64 = u64::MAX;

/// What selectors are built for.
#[derive(Clone, Copy, Debug)]
pub struct SelectorParams {
    /// Bits per key beyond the unary part (`options::selector_precision`): ~`2^-r` false matches
    /// per node.
    pub r: u32,
    /// The node size the shift is chosen for.
    pub node_size: usize,
}

impl SelectorParams {
    /// What `opts` build selectors for: hashed stores, whose lists written with filters on
    /// (format 6) carry the fingerprints selectors are built from; `None` for ordered ones.
    /// Lists written with filters on keep their selector when a store is reopened with
    /// filters off.
    pub fn of(opts: &Options) -> Option<SelectorParams> {
        let r = match opts.filter_bits_per_key {
            0 => selector_precision(Options::default().filter_bits_per_key),
            bits => selector_precision(bits),
        };
        (opts.order() == KeyOrder::Hashed).then_some(SelectorParams {
            r,
            node_size: opts.node_size,
        })
    }
}

/// Where a node's selector is to live.
#[derive(Clone, Copy)]
pub enum Place<'a> {
    Memory,
    /// In one tier in this file, but for the entries of lists added since, while they hold
    /// less than `slack / residue` as many (see [`Selector::settle_on_disk`]): `slack` is 1,
    /// or 2 where the rewrite of the tier on disk is left to upkeep (see
    /// `SelectorRoom::hold_back`).
    Disk {
        file: &'a Arc<TierFile>,
        residue: u64,
        slack: u64,
    },
}

/// What a refresh may spend merging tiers: whatever it takes, or — while `hold_back` holds
/// (in a spill; in upkeep once a writer waits) — entries up to an allowance shared by the
/// nodes of one pass. Nodes filled alike reach their merges in the same spill, as they fill
/// in it (see `tree::upkeep`): at a 40 MiB budget a spill's refresh took up to 230 ms. Merges
/// past the allowance are left to later passes (a node's selector is refreshed while one is
/// due, see [`Selector::merges_due`]), as is one under way when `hold_back` comes to hold (at
/// 300 M records, upkeep steps merged tiers for up to 0.9 s, a writer waiting by their end); a node
/// whose tiers pass [`MAX_HELD_TIERS`], or whose entries in memory pass twice the slack of a
/// selector on disk, merges regardless.
pub struct Merges<'a> {
    left: AtomicU64,
    hold_back: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> Merges<'a> {
    pub fn new(allowance: u64, hold_back: &'a (dyn Fn() -> bool + Sync)) -> Merges<'a> {
        Merges {
            left: AtomicU64::new(allowance),
            hold_back,
        }
    }

    /// Merges as they fall due, none put off.
    #[cfg(test)]
    pub fn any() -> Merges<'static> {
        Merges::new(0, &never)
    }

    /// Whether a merge of `entries` may go ahead (taking them from the allowance if held
    /// back), and what makes it give up: one not held back gives up once `hold_back` holds
    /// (a writer came to wait for the spill thread: the merge is put off as if it had been
    /// held back from the start); one from the allowance is short, and goes to its end.
    pub(super) fn take(&self, entries: u64) -> Option<&(dyn Fn() -> bool + Sync)> {
        if !(self.hold_back)() {
            return Some(self.hold_back);
        }
        let allowed = (self.left)
            .fetch_update(Relaxed, Relaxed, |l| l.checked_sub(entries))
            .is_ok();
        allowed.then_some(&never)
    }
}

/// The rebuilds a pass of refreshes may make of selectors that splits passed on to narrower
/// nodes (see [`Selector::refresh`]): entries to read from fingerprints, shared by the nodes of
/// the pass, and at least one node while any are left (or a node bigger than the allowance
/// would keep its inherited selector for ever) — but none once `stop` holds: a writer waits
/// for the spill thread. A rebuild under way then gives up, and its node keeps the selector it
/// inherited, which answers for it too. At 300 M records one such rebuild (6.7 M entries) took
/// 1.8 s of an upkeep step: a writer whose buffer filled meanwhile would have waited it out.
pub struct Rebuilds<'a> {
    left: AtomicU64,
    stop: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> Rebuilds<'a> {
    pub fn new(allowance: u64, stop: &'a (dyn Fn() -> bool + Sync)) -> Rebuilds<'a> {
        Rebuilds {
            left: AtomicU64::new(allowance),
            stop,
        }
    }

    /// No rebuild: inherited selectors stay (an open, whose nodes are not split).
    pub fn none() -> Rebuilds<'static> {
        Rebuilds::new(0, &never)
    }

    /// Whether a rebuild reading about `entries` may start (taking them from the allowance).
    fn take(&self, entries: u64) -> bool {
        !(self.stop)()
            && self
                .left
                .fetch_update(Relaxed, Relaxed, |l| {
                    (l > 0).then(|| l.saturating_sub(entries.max(1)))
                })
                .is_ok()
    }

    /// The allowance left.
    #[cfg(test)]
    fn left(&self) -> u64 {
        self.left.load(Relaxed)
    }
}

pub struct Selector {
    /// Routes are cut to `route >> shift`; the node's span starts at prefix `base` and holds
    /// `width` of them.
    pub(super) shift: u32,
    pub(super) base: u64,
    pub(super) width: u64,
    /// The span's first and last route, to tell whether the selector fits a node.
    pub(super) lo: u64,
    pub(super) hi: u64,
    /// Mostly oldest (and largest) first; lookups do not depend on the order.
    pub(super) tiers: Vec<Arc<Tier>>,
    /// For each of the node's lists at the time (by position): its file id if a tier holds
    /// its entries, else `NONE`. A read checks the id before it trusts the selector.
    pub(super) covered: Box<[u64]>,
    /// What is saved of it for opens, cut alike: tiers holding the entries of the lists the
    /// tiers above hold, merged their own way (see `saved_tier`).
    pub(super) persisted: Vec<Arc<SavedTier>>,
}

pub(super) struct Tier {
    entries: Entries,
    /// The list file of each slot (`files.len()` slots, one at least).
    pub(super) files: Box<[u64]>,
    /// Prefixes of the span the tier was cut for: its entries are below `width · slots`.
    pub(super) width: u64,
}

/// A tier's sorted entries: in memory, in blocks on disk, or saved and read into memory at
/// their first use.
enum Entries {
    Memory(EliasFano),
    Disk(DiskEntries),
    Saved(Box<Unread>),
}

impl Entries {
    fn len(&self) -> u64 {
        match self {
            Entries::Memory(seq) => seq.len(),
            Entries::Disk(d) => d.len(),
            Entries::Saved(u) => u.len(),
        }
    }

    fn on_disk(&self) -> bool {
        matches!(self, Entries::Disk(_))
    }

    /// Bytes of memory held (by a saved tier not read yet: once read).
    fn memory(&self) -> usize {
        match self {
            Entries::Memory(seq) => seq.memory(),
            Entries::Disk(d) => d.memory(),
            Entries::Saved(u) => u.memory(),
        }
    }

    fn for_each_in(&self, lo: u64, hi: u64, f: impl FnMut(u64)) -> Result<()> {
        match self {
            Entries::Memory(seq) => {
                seq.for_each_in(lo, hi, f);
                Ok(())
            }
            Entries::Disk(d) => d.for_each_in(lo, hi, f),
            Entries::Saved(u) => u.for_each_in(lo, hi, f),
        }
    }

    /// The entries in memory as one sequence, if they are (a saved tier is read and merged
    /// now).
    fn in_memory(&self) -> Result<Option<&EliasFano>> {
        match self {
            Entries::Memory(seq) => Ok(Some(seq)),
            Entries::Disk(_) => Ok(None),
            Entries::Saved(u) => u.seq().map(Some),
        }
    }
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

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tiers: Vec<u64> = self.tiers.iter().map(|t| t.entries.len()).collect();
        write!(f, "Selector(shift {}, tiers {tiers:?})", self.shift)
    }
}

impl Selector {
    /// The selector `node` should have now: `None` if none of its lists has fingerprints
    /// (filters off, an ordered store, lists older than format 6). Reuses what
    /// `node.selector` has; reads the fingerprints of lists it does not hold yet.
    ///
    /// A node a split made from a bigger one starts with that node's selector (see
    /// `tree::split`): it answers for the new node too, cut for the wider span, so at most one
    /// bit coarser per split. It is rebuilt for the node's own span from the lists'
    /// fingerprints as `rebuilds` allows, so that a spill that splits many leaves at once
    /// does not stall writers while it rereads all of them.
    ///
    /// The selector is kept in memory or mostly on disk, as `place` says. Adds to `built` the
    /// entries read from fingerprints.
    pub fn refresh(
        node: &Node,
        params: SelectorParams,
        rebuilds: &Rebuilds<'_>,
        place: Place<'_>,
        merges: &Merges<'_>,
        built: &mut u64,
    ) -> Result<Option<Arc<Selector>>> {
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
        let inherited = Self::reusable(node, (lo, hi), coarsest);
        let rebuild = inherited.is_some_and(|p| {
            (p.lo != lo || p.hi != hi) && rebuilds.take(Self::entries(&selectable))
        });
        let prev = inherited.filter(|_| !rebuild);
        if let Some(prev) = prev.filter(|p| {
            p.covers_all(node)
                && p.placed(place)
                && p.settled(place)
                && !p.merges_due()
                && !saved_tier::merges_due(&p.persisted)
        }) {
            return Ok(Some(prev.clone()));
        }
        // The span the selector is cut for: the node's own, or the one it inherited.
        let (shift, span_lo, span_hi) = match prev {
            Some(p) => (p.shift, p.lo, p.hi),
            None => {
                let shift = Self::choose_shift(&selectable, lo, hi, params).max(coarsest);
                (shift, lo, hi)
            }
        };
        let base = span_lo >> shift;
        let width = (span_hi >> shift) - base + 1;
        // Entries outside the node's own span are never looked up here.
        let keep = ((lo >> shift) - base, (hi >> shift) - base);
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
        // A big list (a slow-split's output, say) gets a tier of its own; the rest share one.
        let node_bytes: u64 = selectable.iter().map(|l| l.bytes()).sum();
        let (big, rest): (Vec<&ListRef>, Vec<&ListRef>) = missing
            .into_iter()
            .partition(|l| l.bytes() * PIN_SHARE >= node_bytes);
        // Only a rebuild may give up: a node's new lists, and a selector it has none of, are
        // read whatever waits.
        let stop = if rebuild { rebuilds.stop } else { &never };
        let mut made = Vec::new();
        let groups = big.into_iter().map(|l| vec![l]);
        for lists in groups.chain((!rest.is_empty()).then_some(rest)) {
            match Tier::read(&lists, shift, base, width, keep, stop)? {
                Some(tier) => made.push(Arc::new(tier)),
                None => {
                    return Self::refresh(node, params, &Rebuilds::none(), place, merges, built)
                }
            }
        }
        *built += made.iter().map(|t| t.entries.len()).sum::<u64>();
        tiers.extend(made.iter().cloned());
        match place {
            Place::Memory => {
                for t in &mut tiers {
                    if t.entries.on_disk() {
                        let read = Tier::merge(std::slice::from_ref(t), width, keep, place, &never);
                        *t = Arc::new(read?.expect("a merge that never stops is not given up"));
                    }
                }
                Self::merge_tiers(&mut tiers, width, keep, merges)?;
            }
            Place::Disk { residue, slack, .. } => {
                Self::settle_on_disk(&mut tiers, width, keep, (residue, slack), place, merges)?
            }
        }
        let prev_saved = prev.map(|p| &p.persisted[..]);
        let persisted =
            saved_tier::carry(prev_saved, &made, &tiers, &present, (width, keep), merges)?;
        // Nothing new and no merge allowed: the selector as it was.
        let same = |p: &&Arc<Selector>| {
            same_arcs(&p.tiers, &tiers) && same_arcs(&p.persisted, &persisted) && p.covers_all(node)
        };
        if let Some(prev) = prev.filter(same) {
            return Ok(Some(prev.clone()));
        }
        let held: HashSet<u64> = tiers.iter().flat_map(|t| t.files.iter().copied()).collect();
        let covered = node
            .lists
            .iter()
            .map(|l| {
                Some(l.file.id())
                    .filter(|id| held.contains(id))
                    .unwrap_or(NONE)
            })
            .collect();
        Ok(Some(Arc::new(Selector {
            shift,
            base,
            width,
            lo: span_lo,
            hi: span_hi,
            tiers,
            covered,
            persisted,
        })))
    }

    /// The selector `node` has, if this one can go on from it: cut for the node's span, or
    /// for a wider one it inherited from a split (see [`refresh`](Self::refresh)), and no
    /// finer than the lists' fingerprints.
    fn reusable(node: &Node, (lo, hi): (u64, u64), coarsest: u32) -> Option<&Arc<Selector>> {
        let prev = node.selector.as_ref()?;
        (prev.lo <= lo && hi <= prev.hi && prev.shift >= coarsest).then_some(prev)
    }

    /// About the entries a rebuild of a selector for `lists` reads: the records of the part
    /// of each file in the node.
    fn entries(lists: &[&ListRef]) -> u64 {
        lists
            .iter()
            .map(|l| l.file.records() * l.bytes() / l.file.size().max(1))
            .sum()
    }

    /// Whether this selector lives where `place` says: a selector on disk has a tier there.
    fn placed(&self, place: Place<'_>) -> bool {
        let on_disk = self.on_disk();
        matches!(place, Place::Disk { .. }) == on_disk
    }

    /// Whether this selector on disk keeps no more in memory than `place` allows: its tier on
    /// disk is not due for a rewrite (see [`settle_on_disk`](Self::settle_on_disk)).
    fn settled(&self, place: Place<'_>) -> bool {
        let Place::Disk { residue, slack, .. } = place else {
            return true;
        };
        let (disk, memory): (Vec<&Arc<Tier>>, Vec<&Arc<Tier>>) =
            self.tiers.iter().partition(|t| t.entries.on_disk());
        let on_disk: u64 = disk.iter().map(|t| t.entries.len()).sum();
        let in_memory: u64 = memory.iter().map(|t| t.entries.len()).sum();
        disk.len() == 1 && Self::within(in_memory, on_disk, residue, slack)
    }

    /// Whether `in_memory` entries may stay beside `on_disk` ones at this residue and slack.
    fn within(in_memory: u64, on_disk: u64, residue: u64, slack: u64) -> bool {
        in_memory * residue < on_disk * slack.max(1)
    }

    /// Whether some of this selector's entries are on disk.
    pub fn on_disk(&self) -> bool {
        self.tiers.iter().any(|t| t.entries.on_disk())
    }

    /// About the memory a selector of `node` holds when all of it is in memory: an entry per
    /// record of its lists, at `2 + r + log2(lists)` bits.
    pub fn estimate(node: &Node, params: SelectorParams) -> u64 {
        let (mut entries, mut lists) = (0u64, 0usize);
        for l in &node.lists {
            if l.file.fingerprint_shift().is_some() {
                entries += l.file.records() * l.bytes() / l.file.size().max(1);
                lists += 1;
            }
        }
        let bits = f64::from(2 + params.r) + (lists.max(1) as f64).log2();
        (entries as f64 * bits / 8.0) as u64
    }

    /// Whether this selector was made for `node`'s lists as they are.
    fn covers_all(&self, node: &Node) -> bool {
        self.covered.len() == node.lists.len()
            && node.lists.iter().zip(self.covered.iter()).all(|(l, &c)| {
                c == l.file.id() || (c == NONE && l.file.fingerprint_shift().is_none())
            })
    }

    /// Merge tiers until at most [`MAX_TIERS`] are left besides the pinned ones, and none
    /// holds a quarter of the entries of the one before it. A pinned tier — one list holding
    /// at least `1 / PIN_SHARE` of the node's entries — never merges: its entries need no
    /// slot. (A tier's entries cost about `log2(universe / entries)` bits, slots included, so
    /// splitting tiers gains only where list sizes are skewed: one big list among many small
    /// ones, as a slow-split leaves.)
    fn merge_tiers(
        tiers: &mut Vec<Arc<Tier>>,
        width: u64,
        keep: (u64, u64),
        merges: &Merges<'_>,
    ) -> Result<()> {
        while let Some((older, newer, held)) = Self::next_merge(tiers) {
            let entries = tiers[older].entries.len() + tiers[newer].entries.len();
            let give_up = match held <= MAX_HELD_TIERS {
                true => merges.take(entries),
                false => Some(&never as _),
            };
            let pair = [tiers[older].clone(), tiers[newer].clone()];
            let merged = match give_up {
                Some(give_up) => Tier::merge(&pair, width, keep, Place::Memory, give_up)?,
                None => None,
            };
            let Some(merged) = merged else {
                return Ok(()); // put off: the merge stays due
            };
            tiers[older] = Arc::new(merged);
            tiers.remove(newer);
        }
        Ok(())
    }

    /// The merge [`merge_tiers`](Self::merge_tiers) would make next among `tiers`, if any:
    /// the positions of the older and the newer tier, and how many tiers are not pinned.
    fn next_merge(tiers: &[Arc<Tier>]) -> Option<(usize, usize, usize)> {
        let sizes: Vec<(u64, usize)> = (tiers.iter())
            .map(|t| (t.entries.len(), t.files.len()))
            .collect();
        next_merge_of(&sizes)
    }

    /// Whether a merge of this selector's tiers in memory is due, one an allowance put off
    /// (see [`Merges`]).
    pub(super) fn merges_due(&self) -> bool {
        let memory: Vec<Arc<Tier>> = (self.tiers.iter())
            .filter(|t| !t.entries.on_disk())
            .cloned()
            .collect();
        Self::next_merge(&memory).is_some()
    }

    /// Keep a selector that is to live on disk (`place`) in one tier there, and the entries of
    /// lists added since in memory tiers while they hold less than `slack / residue` as many:
    /// a lookup then reads one block, and a spill into the node rewrites its tier on disk only
    /// every few spills.
    fn settle_on_disk(
        tiers: &mut Vec<Arc<Tier>>,
        width: u64,
        keep: (u64, u64),
        (residue, slack): (u64, u64),
        place: Place<'_>,
        merges: &Merges<'_>,
    ) -> Result<()> {
        let (mut all, mut memory): (Vec<_>, Vec<_>) =
            tiers.drain(..).partition(|t| t.entries.on_disk());
        let on_disk: u64 = all.iter().map(|t| t.entries.len()).sum();
        let in_memory: u64 = memory.iter().map(|t| t.entries.len()).sum();
        // The rewrite on disk: none within the slack; one that may be put off up to twice it;
        // past that (or with no tier on disk yet) one that goes to its end.
        let give_up = match all.len() == 1 {
            true if Self::within(in_memory, on_disk, residue, slack) => None,
            true if Self::within(in_memory, on_disk, residue, 2 * slack) => {
                merges.take(on_disk + in_memory)
            }
            _ => Some(&never as _),
        };
        let before = all.len();
        all.append(&mut memory);
        if let Some(give_up) = give_up {
            if let Some(merged) = Tier::merge(&all, width, keep, place, give_up)? {
                *tiers = vec![Arc::new(merged)];
                return Ok(());
            }
        }
        let mut memory = all.split_off(before);
        Self::merge_tiers(&mut memory, width, keep, merges)?;
        all.append(&mut memory);
        *tiers = all;
        Ok(())
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

    /// Whether every key of `node`'s lists this selector covers is a candidate of its list —
    /// what reads rely on — checked against the lists' fingerprints; the first that is not,
    /// if any. (`check` runs this on saved selectors.)
    pub fn verify(&self, node: &Node) -> Result<Option<String>> {
        let lo = node.span.lo.route;
        let hi = node.span.hi.as_ref().map_or(u64::MAX, |p| p.route);
        if lo < self.lo || hi > self.hi {
            return Ok(Some(format!(
                "cut for routes {:#x}..={:#x}, which do not hold the node's",
                self.lo, self.hi
            )));
        }
        let keep = (lo >> self.shift)..=(hi >> self.shift);
        for (i, list) in node.lists.iter().enumerate() {
            let id = list.file.id();
            if !self.covers(i, id) {
                continue;
            }
            let fp = list.file.fingerprints()?;
            let Some(coarser) = self.shift.checked_sub(fp.shift()) else {
                return Ok(Some(format!("finer than the fingerprints of list {id}")));
            };
            for p in fp.prefixes() {
                let prefix = p >> coarser;
                if keep.contains(&prefix) && !self.candidates(prefix << self.shift)?.may_hold(id) {
                    return Ok(Some(format!(
                        "list {id} holds a key of prefix {prefix:#x} that the selector does \
                         not name it for"
                    )));
                }
            }
        }
        Ok(None)
    }

    /// Start loading what a lookup of `route` reads at `stage` (see `EliasFano::prefetch`).
    #[inline]
    pub fn prefetch(&self, route: u64, stage: u32) {
        let rel = (route >> self.shift).wrapping_sub(self.base);
        if rel < self.width {
            for t in &self.tiers {
                let seq = match &t.entries {
                    Entries::Memory(seq) => seq,
                    Entries::Saved(u) => match u.merged() {
                        Some(seq) => seq,
                        None => continue,
                    },
                    Entries::Disk(_) => continue,
                };
                seq.prefetch(rel * t.slots(), stage);
            }
        }
    }

    /// The list files that may hold a key of this `route` (a read from disk for each tier
    /// there, unless its block is cached).
    pub fn candidates(&self, route: u64) -> Result<Candidates> {
        let mut c = Candidates::none();
        let rel = (route >> self.shift).wrapping_sub(self.base);
        if rel >= self.width {
            // Not a position of this node: none of its lists holds it.
            debug_assert!(false, "route {route:#x} outside the node");
            return Ok(c);
        }
        for t in &self.tiers {
            let lo = rel * t.slots();
            t.entries.for_each_in(lo, lo + t.slots() - 1, |v| {
                c.push(t.files[(v - lo) as usize])
            })?;
        }
        Ok(c)
    }

    /// Whether list `i` of the node, of file `id`, has its entries here: if so, only
    /// [`candidates`](Self::candidates) can hold a key.
    #[inline]
    pub fn covers(&self, i: usize, id: u64) -> bool {
        self.covered.get(i) == Some(&id)
    }

    /// Each tier's entries and bytes of memory, under the address that tells tiers shared
    /// between nodes apart.
    pub fn tiers(&self) -> impl Iterator<Item = (usize, (u64, usize))> + '_ {
        self.tiers.iter().map(|t| {
            let bytes = t.entries.memory() + t.files.len() * 8;
            (Arc::as_ptr(t) as usize, (t.entries.len(), bytes))
        })
    }
}

/// Append `entries` to `values`, asking `stop` every [`STOP_EVERY`] of them; whether it let
/// them all through.
fn gather(
    values: &mut Vec<u64>,
    entries: impl Iterator<Item = u64>,
    stop: &dyn Fn() -> bool,
) -> bool {
    for (i, v) in entries.enumerate() {
        if i % STOP_EVERY == 0 && stop() {
            return false;
        }
        values.push(v);
    }
    true
}

/// [`Selector::next_merge`] of tiers of these entries and slots.
pub(super) fn next_merge_of(sizes: &[(u64, usize)]) -> Option<(usize, usize, usize)> {
    let free = unpinned(sizes);
    let [.., older, newer] = free[..] else {
        return None;
    };
    let small = sizes[newer].0 * MERGE_RATIO < sizes[older].0;
    (!small || free.len() > MAX_TIERS).then_some((older, newer, free.len()))
}

/// The positions of the tiers of these entries and slots that may merge: all but the pinned
/// ones, each one list holding at least `1 / PIN_SHARE` of the node's entries (as a slow-split
/// leaves), which never merge — in memory or saved.
pub(super) fn unpinned(sizes: &[(u64, usize)]) -> Vec<usize> {
    let total: u64 = sizes.iter().map(|s| s.0).sum();
    let pinned = |(n, slots): (u64, usize)| slots == 1 && n * PIN_SHARE >= total;
    (0..sizes.len()).filter(|&i| !pinned(sizes[i])).collect()
}

/// How tiers of these entries and slots (oldest first) merge in memory, merges held back or
/// not: groups of their positions, each to be one tier. An open gives a node its saved tiers
/// so grouped (see `unread_tier`), so that lookups read as few tiers as before the close.
pub(super) fn merge_groups(sizes: &[(u64, usize)]) -> Vec<Vec<usize>> {
    let mut sizes = sizes.to_vec();
    let mut groups: Vec<Vec<usize>> = (0..sizes.len()).map(|i| vec![i]).collect();
    while let Some((older, newer, _)) = next_merge_of(&sizes) {
        let (n, slots) = sizes.remove(newer);
        sizes[older] = (sizes[older].0 + n, sizes[older].1 + slots);
        let moved = groups.remove(newer);
        groups[older].extend(moved);
    }
    groups
}

/// Entry `v` of a tier of `old` slots, numbered in a tier of `new` slots where the old tier's
/// start at slot `first`.
#[inline]
pub(super) fn restate(v: u64, old: u64, new: u64, first: u64) -> u64 {
    match old {
        // A tier of one list (most are: each spill's) has its prefixes as entries.
        1 => v * new + first,
        _ => v / old * new + v % old + first,
    }
}

/// Whether `a` and `b` hold the same things, in the same order.
fn same_arcs<T>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b))
}

impl Tier {
    /// A tier of `lists` (oldest first, distinct files), from their fingerprints on disk,
    /// keeping the prefixes in `keep` (relative to `base`, inclusive).
    fn read(
        lists: &[&ListRef],
        shift: u32,
        base: u64,
        width: u64,
        keep: (u64, u64),
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Tier>> {
        let files: Vec<&ListFile> = lists.iter().map(|l| &*l.file).collect();
        let Some(values) = Self::values(&files, shift, base, keep, stop)? else {
            return Ok(None);
        };
        let ids = files.iter().map(|f| f.id()).collect();
        Ok(Some(Tier::from_values(values, ids, width)))
    }

    /// The entries of a tier of `lists` (by slot), from their fingerprints, in order; `None`
    /// if `stop` said so first (asked every [`STOP_EVERY`] entries).
    pub(super) fn values(
        lists: &[&ListFile],
        shift: u32,
        base: u64,
        keep: (u64, u64),
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Vec<u64>>> {
        let slots = lists.len() as u64;
        let mut values = Vec::new();
        for (slot, l) in lists.iter().enumerate() {
            let fp = l.fingerprints()?;
            let coarser = shift - fp.shift();
            values.reserve(fp.len() as usize);
            let relative = fp.prefixes().map(|p| (p >> coarser).wrapping_sub(base));
            // A view's file may reach beyond the node: those keys never come here.
            let kept = relative.filter(|rel| (keep.0..=keep.1).contains(rel));
            if !gather(&mut values, kept.map(|rel| rel * slots + slot as u64), stop) {
                return Ok(None);
            }
        }
        if stop() {
            return Ok(None);
        }
        // Runs sorted per list: the stable sort merges them.
        values.sort();
        values.dedup();
        Ok(Some(values))
    }

    fn from_values(values: Vec<u64>, files: Box<[u64]>, width: u64) -> Tier {
        Tier::build(values, files, width, Place::Memory)
    }

    fn slots(&self) -> u64 {
        self.files.len() as u64
    }

    /// A tier of `values` (increasing), kept where `place` says. A tier that cannot be
    /// written to disk (a full disk, a read-only folder) stays in memory, over budget.
    fn build(values: Vec<u64>, files: Box<[u64]>, width: u64, place: Place<'_>) -> Tier {
        let slots = files.len() as u64;
        assert!(slots > 0, "a tier holds one list at least");
        let on_disk = match place {
            Place::Disk { file, .. } => file.write(&values, slots).ok(),
            Place::Memory => None,
        };
        let entries = match on_disk {
            Some(d) => Entries::Disk(d),
            None => {
                let universe = width * slots;
                Entries::Memory(EliasFano::build(universe, values.len(), values))
            }
        };
        Tier {
            entries,
            files,
            width,
        }
    }

    /// A tier of the entries `seq` of `files`, in memory.
    pub(super) fn in_memory(seq: EliasFano, files: Box<[u64]>, width: u64) -> Tier {
        Tier {
            entries: Entries::Memory(seq),
            files,
            width,
        }
    }

    /// Saved tiers, read at its first use and merged into one later (see [`Unread`]).
    pub(super) fn unread(u: Unread) -> Tier {
        Tier {
            files: u.files(),
            width: u.width(),
            entries: Entries::Saved(Box::new(u)),
        }
    }

    /// The entries of a tier in memory (as [`merge`](Self::merge) makes).
    pub(super) fn into_seq(self) -> EliasFano {
        match self.entries {
            Entries::Memory(seq) => seq,
            _ => unreachable!("a tier in memory"),
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.entries.len()
    }

    /// Entries (in memory once read) and the saved tier's record, if it is one not read yet.
    pub(super) fn unread_part(&self) -> Option<&Unread> {
        match &self.entries {
            Entries::Saved(u) => Some(u),
            _ => None,
        }
    }

    /// What a selector file holds of the tier (see `selector_file`):
    /// `slots u32 | list file id u64 × slots | Elias–Fano of the entries`.
    pub(super) fn body(&self) -> Result<Vec<u8>> {
        let owned;
        let seq = match self.entries.in_memory()? {
            Some(seq) => seq,
            None => {
                let Entries::Disk(d) = &self.entries else {
                    unreachable!("entries not in memory are on disk")
                };
                let values = d.values()?;
                let universe = self.width * self.slots();
                owned = EliasFano::build(universe, values.len(), values);
                &owned
            }
        };
        Ok(Self::encode(&self.files, seq))
    }

    /// The [`body`](Self::body) of a tier of `files` holding `seq`.
    pub(super) fn encode(files: &[u64], seq: &EliasFano) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + files.len() * 8 + seq.memory());
        out.extend_from_slice(&(files.len() as u32).to_le_bytes());
        for f in files {
            out.extend_from_slice(&f.to_le_bytes());
        }
        seq.encode(&mut out);
        out
    }

    /// What [`body`](Self::body) wrote: the list file of each slot, and the entries; `None`
    /// if it is malformed.
    pub(super) fn decode_body(body: &[u8]) -> Option<(Box<[u64]>, EliasFano)> {
        let slots = u32::from_le_bytes(body.get(..4)?.try_into().ok()?) as usize;
        let ids = body.get(4..4 + slots.checked_mul(8)?)?;
        let seq = EliasFano::decode(body.get(4 + ids.len()..)?)?;
        if slots == 0 || seq.universe() % slots as u64 != 0 {
            return None;
        }
        let files = ids
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        Some((files, seq))
    }

    /// One tier of the lists of `tiers` in turn, keeping the prefixes in `keep`, where `place`
    /// says; `None` if `stop` said so first (asked every [`STOP_EVERY`] entries).
    pub(super) fn merge(
        tiers: &[Arc<Tier>],
        width: u64,
        keep: (u64, u64),
        place: Place<'_>,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Tier>> {
        let files: Box<[u64]> = tiers.iter().flat_map(|t| t.files.iter().copied()).collect();
        let slots = files.len() as u64;
        let total: u64 = tiers.iter().map(|t| t.entries.len()).sum();
        let mut values = Vec::with_capacity(total as usize);
        let mut offset = 0;
        // Entries of prefixes in `keep`, numbered as in the merged tier.
        let keep_entries = keep.0 * slots..=keep.1 * slots + (slots - 1);
        let kept = |v: &u64| keep_entries.contains(v);
        for t in tiers {
            let old = t.slots();
            let merged = |v: u64| restate(v, old, slots, offset);
            let gathered = match &t.entries {
                Entries::Memory(seq) => {
                    gather(&mut values, seq.iter().map(merged).filter(kept), stop)
                }
                Entries::Disk(d) => {
                    let read = d.values()?.into_iter();
                    gather(&mut values, read.map(merged).filter(kept), stop)
                }
                // Saved tiers not merged yet are merged here with the rest, not first.
                Entries::Saved(u) => {
                    let read = u.read()?;
                    read.runs(old).into_iter().all(|(seq, own, first)| {
                        let entries = seq.iter().map(|v| merged(restate(v, own, old, first)));
                        gather(&mut values, entries.filter(kept), stop)
                    })
                }
            };
            if !gathered {
                return Ok(None);
            }
            offset += t.files.len() as u64;
        }
        if stop() {
            return Ok(None);
        }
        // Runs sorted per tier: the stable sort merges them.
        values.sort();
        Ok(Some(Tier::build(values, files, width, place)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Selector::refresh` of `node` in memory, with no rebuild of an inherited selector.
    fn in_memory(
        node: &Node,
        params: SelectorParams,
        merges: &Merges<'_>,
    ) -> Result<Option<Arc<Selector>>> {
        Selector::refresh(
            node,
            params,
            &Rebuilds::none(),
            Place::Memory,
            merges,
            &mut 0,
        )
    }

    fn tier(entries: &[(u64, u64)], files: &[u64], width: u64) -> Tier {
        let slots = files.len() as u64;
        let mut values: Vec<u64> = entries.iter().map(|&(p, s)| p * slots + s).collect();
        values.sort();
        Tier::from_values(values, files.into(), width)
    }

    fn lookup(t: &Tier, rel: u64) -> Vec<u64> {
        let lo = rel * t.slots();
        let mut out = Vec::new();
        t.entries
            .for_each_in(lo, lo + t.slots() - 1, |v| {
                out.push(t.files[(v - lo) as usize])
            })
            .unwrap();
        out
    }

    #[test]
    fn merged_tiers_answer_as_both_did() {
        let a = tier(&[(1, 0), (5, 1), (5, 2), (9, 0)], &[10, 11, 12], 100);
        let b = tier(&[(5, 0), (7, 1), (99, 1)], &[20, 21], 100);
        let (a, b) = (Arc::new(a), Arc::new(b));
        let m = Tier::merge(&[a.clone(), b.clone()], 100, (0, 99), Place::Memory, &never);
        let m = m.unwrap().unwrap();
        assert_eq!(m.files.as_ref(), &[10, 11, 12, 20, 21]);
        for rel in 0..100 {
            let mut expect = lookup(&a, rel);
            expect.extend(lookup(&b, rel));
            assert_eq!(lookup(&m, rel), expect, "prefix {rel}");
        }
    }

    /// A saved record reads back as the tier it was; malformed ones (behind a good checksum)
    /// are refused, never decoded into something else.
    #[test]
    fn tier_records_round_trip_and_malformed_ones_are_refused() {
        let t = tier(&[(1, 0), (5, 1), (5, 2), (9, 0)], &[10, 11, 12], 100);
        let body = t.body().unwrap();
        let (files, seq) = Tier::decode_body(&body).unwrap();
        assert_eq!(&*files, &[10, 11, 12]);
        assert_eq!(seq.universe(), 300);
        assert_eq!(seq.iter().collect::<Vec<_>>(), vec![3, 16, 17, 27]);
        let mut bad = Vec::new();
        for cut in 0..body.len() {
            bad.push(body[..cut].to_vec());
        }
        let mut no_slots = body.clone();
        no_slots[..4].copy_from_slice(&0u32.to_le_bytes());
        let mut more_slots = body.clone();
        more_slots[..4].copy_from_slice(&4u32.to_le_bytes());
        bad.extend([no_slots, more_slots, [body.clone(), vec![0]].concat()]);
        for b in bad {
            assert!(Tier::decode_body(&b).is_none(), "{} bytes", b.len());
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

    /// A leaf of three lists splits in two; each half starts with the leaf's selector, and
    /// later gets its own: every key's list is a candidate all along, and few absent keys
    /// match.
    #[test]
    fn split_nodes_inherit_then_rebuild_their_selectors() {
        use crate::list::{hashed_test_list, Handles};
        use crate::order::{KeyOrder, Pivot, Span};
        use crate::stats::Counters;

        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let order = KeyOrder::Hashed;
        let mut leaf = Node::leaf(Span::all());
        let mut keys = Vec::new();
        for id in 0..3u64 {
            let shape = (1 << 20, 3);
            let (file, batch) =
                hashed_test_list(dir.path(), id, 4000, 512, shape, &counters, &handles);
            leaf.lists.insert(0, ListRef::new(file, Span::all()));
            keys.extend(batch.into_iter().map(|(r, k)| (r, k, id)));
        }
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let check = |node: &Node| {
            let s = node.selector.as_ref().expect("a selector");
            for (r, k, id) in &keys {
                if node.span.contains((*r, k)) {
                    assert!(s.candidates(*r).unwrap().may_hold(*id), "{k:?}");
                }
            }
            let absent = (0..20_000u64)
                .map(|i| order.route(&i.to_le_bytes()))
                .filter(|&r| node.span.contains((r, b"")))
                .filter(|&r| s.candidates(r).unwrap().len > 0)
                .count();
            assert!(absent < 400, "{absent} absent keys matched");
        };
        leaf.selector = in_memory(&leaf, params, &Merges::any()).unwrap();
        check(&leaf);
        let sep = Pivot::new(1 << 63, b"");
        let halves = [
            Span::new(Pivot::new(0, b""), Some(sep.clone())),
            Span::new(sep.clone(), None),
        ];
        for (side, span) in halves.into_iter().enumerate() {
            let mut half = Node::leaf(span);
            for l in &leaf.lists {
                let (a, b) = l.split(&sep).unwrap();
                half.lists.extend(if side == 0 { a } else { b });
            }
            half.selector = leaf.selector.clone();
            // No rebuild: the leaf's selector, cut for the whole span, answers for the half.
            half.selector = in_memory(&half, params, &Merges::any()).unwrap();
            let inherited = half.selector.clone().unwrap();
            assert!(Arc::ptr_eq(&inherited, leaf.selector.as_ref().unwrap()));
            check(&half);
            // A writer waiting: no rebuild starts, and one under way gives up wherever it is
            // (each look at `stop` in turn, up to a rebuild that looked at it throughout); the
            // half keeps the selector it inherited until then.
            let mut gave_up_midway = 0;
            for give_up_at in 1.. {
                let looks = std::sync::atomic::AtomicUsize::new(0);
                let stop = || looks.fetch_add(1, Relaxed) + 1 >= give_up_at;
                let rebuilds = Rebuilds::new(u64::MAX, &stop);
                let s = Selector::refresh(
                    &half,
                    params,
                    &rebuilds,
                    Place::Memory,
                    &Merges::any(),
                    &mut 0,
                )
                .unwrap()
                .unwrap();
                if !Arc::ptr_eq(&s, &inherited) {
                    // With nothing to stop it, the half gets a selector of its own span, one
                    // bit finer.
                    assert!(s.lo == half.span.lo.route && s.shift < inherited.shift);
                    assert!(rebuilds.left() < u64::MAX);
                    half.selector = Some(s);
                    break;
                }
                gave_up_midway += usize::from(rebuilds.left() < u64::MAX);
            }
            assert!(gave_up_midway >= 3, "gave up midway {gave_up_midway} times");
            check(&half);
        }
    }

    /// Held back with no allowance, a refresh puts off the merges its new tiers make due —
    /// up to [`MAX_HELD_TIERS`], past which it merges regardless — and says they are due; a
    /// refresh not held back then does them. Every key's list is a candidate throughout.
    #[test]
    fn merges_held_back_are_put_off_and_done_later() {
        use crate::list::{hashed_test_list, Handles};
        use crate::order::Span;
        use crate::stats::Counters;

        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let held_back = Merges::new(0, &crate::tree::always);
        let mut held = Node::leaf(Span::all());
        let mut free = Node::leaf(Span::all());
        let mut keys = Vec::new();
        let mut most_held = 0;
        for id in 0..24u64 {
            let (file, batch) =
                hashed_test_list(dir.path(), id, 500, 512, (1 << 20, 3), &counters, &handles);
            keys.extend(batch.into_iter().map(|(r, _)| (r, id)));
            for (node, merges) in [(&mut held, &held_back), (&mut free, &Merges::any())] {
                node.lists
                    .insert(0, ListRef::new(file.clone(), Span::all()));
                node.selector = in_memory(node, params, merges).unwrap();
                let s = node.selector.as_ref().unwrap();
                for &(r, id) in &keys {
                    assert!(s.candidates(r).unwrap().may_hold(id));
                }
            }
            let (h, f) = (
                held.selector.as_ref().unwrap(),
                free.selector.as_ref().unwrap(),
            );
            assert!(!f.merges_due());
            assert!(h.tiers.len() >= f.tiers.len());
            assert!(h.tiers.len() <= MAX_HELD_TIERS + 1, "{h:?}");
            most_held = most_held.max(h.tiers.len() - f.tiers.len());
        }
        assert!(
            most_held >= 4,
            "merges were not put off: {most_held} tiers more at most"
        );
        let s = held.selector.clone().unwrap();
        assert!(s.merges_due());
        // Upkeep's to make: a tree holding the node is due upkeep until they are made, however
        // small and few its nodes.
        let due = |node: &Node| {
            let mut tree = crate::tree::Tree::new();
            tree.root.children.push(node.clone());
            tree.may_need_upkeep(usize::MAX, 64)
        };
        assert!(due(&held));
        // Refreshed with nothing new and held back, it stays as it is.
        let again = in_memory(&held, params, &held_back);
        assert!(Arc::ptr_eq(&s, &again.unwrap().unwrap()));
        // Not held back, the merges go ahead, and each gives up once `hold_back` comes to
        // hold (a writer waits), wherever it is: the merges left stay due, and every key's
        // list is a candidate still. A refresh let through to its end makes them all.
        let mut gave_up_midway = 0;
        let done = (1..).find_map(|give_up_at| {
            let looks = std::sync::atomic::AtomicUsize::new(0);
            let waits = || looks.fetch_add(1, Relaxed) + 1 >= give_up_at;
            let merges = Merges::new(0, &waits);
            let r = in_memory(&held, params, &merges);
            let r = r.unwrap().unwrap();
            for &(route, id) in &keys {
                assert!(r.candidates(route).unwrap().may_hold(id));
            }
            if !r.merges_due() {
                return Some(r);
            }
            if give_up_at == 2 {
                // The first merge let through gave up at its first look: nothing merged.
                assert!(Arc::ptr_eq(&r, &s), "{r:?}");
            }
            gave_up_midway += usize::from(give_up_at > 1);
            None
        });
        let done = done.unwrap();
        assert!(gave_up_midway >= 3, "gave up midway {gave_up_midway} times");
        assert!(
            !done.merges_due() && done.tiers.len() < s.tiers.len(),
            "{done:?}"
        );
        held.selector = Some(done.clone());
        assert!(!due(&held));
        for &(r, id) in &keys {
            assert!(done.candidates(r).unwrap().may_hold(id));
        }
    }

    /// A selector on disk whose new lists pass its slack, up to twice it, rewrites its tier on
    /// disk unless a writer comes to wait: then the rewrite gives up, and the new entries stay
    /// in memory beside the tier on disk until a later refresh. Past twice the slack, the
    /// rewrite goes to its end whatever waits.
    #[test]
    fn a_rewrite_on_disk_gives_up_for_a_waiting_writer() {
        use crate::list::{hashed_test_list, Handles};
        use crate::order::Span;
        use crate::stats::Counters;

        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let file = crate::tree::TierFile::new(dir.path(), counters.clone());
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 20,
        };
        let place = Place::Disk {
            file: &file,
            residue: DISK_RESIDUE,
            slack: 1,
        };
        let mut node = Node::leaf(Span::all());
        let mut keys = Vec::new();
        let mut add = |node: &mut Node, id: u64, records: u64| {
            let shape = (1 << 20, 3);
            let (list, batch) =
                hashed_test_list(dir.path(), id, records, 512, shape, &counters, &handles);
            node.lists.insert(0, ListRef::new(list, Span::all()));
            keys.extend(batch.into_iter().map(|(r, _)| (r, id)));
        };
        let refresh = |node: &Node, merges: &Merges<'_>| {
            Selector::refresh(node, params, &Rebuilds::none(), place, merges, &mut 0)
                .unwrap()
                .unwrap()
        };
        let tiers = |s: &Selector| {
            let disk = s.tiers.iter().filter(|t| t.entries.on_disk()).count();
            (disk, s.tiers.len() - disk)
        };
        for id in 0..4 {
            add(&mut node, id, 2000);
        }
        node.selector = Some(refresh(&node, &Merges::any()));
        assert_eq!(tiers(node.selector.as_ref().unwrap()), (1, 0));
        // 2,500 entries in memory beside 8,000 on disk: past the slack (a quarter), within
        // twice it.
        add(&mut node, 4, 2500);
        let looks = std::sync::atomic::AtomicUsize::new(0);
        let comes_to_wait = || looks.fetch_add(1, Relaxed) >= 1;
        let put_off = refresh(&node, &Merges::new(0, &comes_to_wait));
        assert!(looks.load(Relaxed) >= 2, "the rewrite never looked");
        assert_eq!(tiers(&put_off), (1, 1));
        assert!(!put_off.settled(place));
        let done = refresh(&node, &Merges::any());
        assert_eq!(tiers(&done), (1, 0));
        // Past twice the slack, with a writer waiting from the start: rewritten all the same.
        add(&mut node, 5, 6000);
        let always = Merges::new(0, &crate::tree::always);
        let forced = refresh(&node, &always);
        assert_eq!(tiers(&forced), (1, 0));
        for s in [&put_off, &done, &forced] {
            for &(route, id) in keys.iter().filter(|k| s.covered.contains(&k.1)) {
                assert!(s.candidates(route).unwrap().may_hold(id));
            }
        }
    }
}
