//! A tier an open has not read yet: some of a node's saved tiers (see `saved_tier`), read at
//! its first use and merged into one later, so that an open reads no selector, no GET waits
//! for a merge, and lookups after the preload read as few tiers as before the close.
//!
//! Saved tiers merge their own way, by size class, so a node saves more tiers than its
//! lookups read (up to eight besides pinned ones, against three). An open groups them as the
//! tiers in memory would merge (`selector::merge_groups`), and each group is one tier here. A
//! lookup that comes first reads the group's records and probes each saved tier in turn (a
//! few more probes in memory); the preload reads the groups in file order and merges each
//! into one sequence, restating each record's entries in the group's slots as a merge in
//! memory does. Merging at the first lookup made cold GETs after an open spend most of their
//! time sorting (at a billion records, 60% of a cold GET's CPU, and 0.25 s for the first
//! GET into a big node). A record that is missing, damaged or not the one named is built
//! from its lists' fingerprints instead, and saved again.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, OnceLock, TryLockError};

use super::saved_tier::SavedTier;
use super::selector::{restate, Tier};
use super::selector_file::Saved;
use crate::error::{Error, Result};
use crate::list::ListFile;
use crate::stats::Counters;
use crate::util::ef::EliasFano;
use crate::util::sync::lock;

/// A saved tier and the lists of its slots.
pub(super) type Part = (Arc<SavedTier>, Box<[Arc<ListFile>]>);

/// Saved tiers of one node, read at their first use and merged later (see the module doc).
pub(super) struct Unread {
    n: u64,
    /// The entries as one sequence in the tier's slots: once read, for a tier of one saved
    /// tier; once merged, for one of several.
    seq: OnceLock<EliasFano>,
    /// The entries of a tier of several saved tiers, read and not merged yet: one sequence a
    /// saved tier, each in its own slots. Emptied once `seq` is set (lookups look at `seq`
    /// first, and again under this lock), so the memory is held once.
    parts_read: Mutex<Option<Arc<[PartEntries]>>>,
    /// The saved tiers, oldest first, and the lists of each (by slot): each one's lists take
    /// the next slots of the tier.
    parts: Box<[Part]>,
    /// The cut of the selector the tier belongs to.
    shift: u32,
    base: u64,
    width: u64,
    counters: Arc<Counters>,
}

/// A saved tier's entries, in its own slots, and where its slots start among the tier's.
pub(super) struct PartEntries {
    seq: EliasFano,
    slots: u64,
    first_slot: u64,
}

/// The entries in memory, as [`Unread::read`] finds them.
pub(super) enum Read<'a> {
    /// One sequence in the tier's slots.
    Merged(&'a EliasFano),
    /// One sequence a saved tier, oldest first.
    Parts(Arc<[PartEntries]>),
}

impl Read<'_> {
    /// Each sorted run of entries, in the slots it is numbered in, and where those start
    /// among the tier's `slots`.
    pub(super) fn runs(&self, slots: u64) -> Vec<(&EliasFano, u64, u64)> {
        match self {
            Read::Merged(seq) => vec![(seq, slots, 0)],
            Read::Parts(parts) => (parts.iter())
                .map(|p| (&p.seq, p.slots, p.first_slot))
                .collect(),
        }
    }
}

impl Unread {
    /// The saved tiers `parts` (each with its lists) of a selector cut by `shift`, `base` and
    /// `width`, as one tier.
    pub(super) fn new(
        parts: Vec<Part>,
        (shift, base, width): (u32, u64, u64),
        counters: Arc<Counters>,
    ) -> Unread {
        assert!(!parts.is_empty(), "a tier holds one saved tier at least");
        Unread {
            n: parts.iter().map(|(t, _)| t.n).sum(),
            seq: OnceLock::new(),
            parts_read: Mutex::new(None),
            parts: parts.into(),
            shift,
            base,
            width,
            counters,
        }
    }

    pub(super) fn len(&self) -> u64 {
        self.n
    }

    pub(super) fn width(&self) -> u64 {
        self.width
    }

    /// The list file of each slot.
    pub(super) fn files(&self) -> Box<[u64]> {
        let lists = self.parts.iter().flat_map(|(_, lists)| lists.iter());
        lists.map(|l| l.id()).collect()
    }

    fn slots(&self) -> u64 {
        self.parts.iter().map(|(_, lists)| lists.len() as u64).sum()
    }

    /// Bytes of memory held once read (about the records' size until then).
    pub(super) fn memory(&self) -> usize {
        if let Some(seq) = self.seq.get() {
            return seq.memory();
        }
        if let Some(parts) = self.parts_now() {
            return parts.iter().map(|p| p.seq.memory()).sum();
        }
        (self.parts.iter())
            .map(|(t, _)| t.saved().map_or(0, |s| s.len as usize))
            .sum()
    }

    /// The saved tiers this one is made of, oldest first.
    #[cfg(test)]
    pub(super) fn saved_tiers(&self) -> impl Iterator<Item = &Arc<SavedTier>> {
        self.parts.iter().map(|(t, _)| t)
    }

    /// Where the first saved tier's record is, if it is saved: where a preload reads it.
    pub(super) fn first_record(&self) -> Option<Saved> {
        self.parts[0].0.saved()
    }

    /// Call `f` with each entry of the tier's prefix `lo / slots` (`lo..=hi` are that
    /// prefix's entries), numbered in the tier's slots: what a lookup reads. The records are
    /// read at the first call; their entries are not merged for it.
    pub(super) fn for_each_in(&self, lo: u64, hi: u64, mut f: impl FnMut(u64)) -> Result<()> {
        // Every lookup once merged: no lock, no call through `read`.
        if let Some(seq) = self.seq.get() {
            seq.for_each_in(lo, hi, f);
            return Ok(());
        }
        let slots = self.slots();
        debug_assert!(
            lo.is_multiple_of(slots) && hi == lo + slots - 1,
            "one prefix's entries"
        );
        let prefix = lo / slots;
        match self.read()? {
            Read::Merged(seq) => seq.for_each_in(lo, hi, f),
            Read::Parts(parts) => {
                for p in parts.iter() {
                    let start = prefix * p.slots;
                    let end = start + p.slots - 1;
                    p.seq
                        .for_each_in(start, end, |v| f(lo + p.first_slot + (v - start)));
                }
            }
        }
        Ok(())
    }

    /// The entries in memory, read now if they are not (and not merged for it).
    pub(super) fn read(&self) -> Result<Read<'_>> {
        Ok(self.read_with(&|_| None)?.0)
    }

    /// [`read`](Self::read), with the checked bodies of the records `body` has (see
    /// `preload`, which reads many records at once); the others are read here. And why a
    /// record could not be read, if one could not (its tier is then built from its lists and
    /// saved again); an error is the fingerprints'.
    fn read_with<'b>(
        &self,
        body: &dyn Fn(&SavedTier) -> Option<Result<&'b [u8]>>,
    ) -> Result<(Read<'_>, Option<Error>)> {
        if let Some(seq) = self.seq.get() {
            return Ok((Read::Merged(seq), None));
        }
        // Held while reading: a lookup that comes meanwhile would read the same records.
        let mut parts_read = lock(&self.parts_read);
        // Merged since the look above: the parts were let go.
        if let Some(seq) = self.seq.get() {
            return Ok((Read::Merged(seq), None));
        }
        if let Some(parts) = &*parts_read {
            return Ok((Read::Parts(parts.clone()), None));
        }
        let mut why = None;
        let mut parts = Vec::with_capacity(self.parts.len());
        let mut first_slot = 0;
        for (saved, lists) in self.parts.iter() {
            let read = match body(saved) {
                Some(b) => b.and_then(|b| saved.decode(b, self.width)),
                None => saved.entries(self.width),
            };
            let tier = match read {
                Ok(tier) => tier,
                Err(e) => {
                    why.get_or_insert(e);
                    self.build(saved, lists)?
                }
            };
            let slots = lists.len() as u64;
            parts.push(PartEntries {
                seq: tier.into_seq(),
                slots,
                first_slot,
            });
            first_slot += slots;
        }
        Counters::bump(&self.counters.selector_tiers_loaded);
        if parts.len() == 1 {
            let _ = self.seq.set(parts.pop().expect("one").seq);
            return Ok((Read::Merged(self.seq.get().expect("set")), why));
        }
        let parts: Arc<[PartEntries]> = parts.into();
        *parts_read = Some(parts.clone());
        Ok((Read::Parts(parts), why))
    }

    /// The entries as one sequence: read and merged now, if they are not.
    pub(super) fn seq(&self) -> Result<&EliasFano> {
        self.load()?;
        Ok(self.seq.get().expect("loaded"))
    }

    /// Bring the entries into memory, merged, if they are not, saying why a record could
    /// not be read (its tier is then built from its lists and saved again). An error is the
    /// fingerprints'.
    pub(super) fn load(&self) -> Result<Option<Error>> {
        self.load_with(&|_| None)
    }

    /// [`load`](Self::load), with the checked bodies of the records `body` has (see
    /// [`read_with`](Self::read_with)).
    pub(super) fn load_with<'b>(
        &self,
        body: &dyn Fn(&SavedTier) -> Option<Result<&'b [u8]>>,
    ) -> Result<Option<Error>> {
        let (read, why) = self.read_with(body)?;
        let Read::Parts(parts) = read else {
            return Ok(why);
        };
        // Lookups meanwhile probe the parts; two merges racing keep one.
        let slots = self.slots();
        let mut values = Vec::with_capacity(self.n as usize);
        for p in parts.iter() {
            values.extend(
                p.seq
                    .iter()
                    .map(|v| restate(v, p.slots, slots, p.first_slot)),
            );
        }
        // Runs sorted per saved tier: the stable sort merges them.
        values.sort();
        let universe = self.width * slots;
        let _ = self
            .seq
            .set(EliasFano::build(universe, values.len(), values));
        *lock(&self.parts_read) = None;
        Ok(why)
    }

    /// A saved tier's entries built from its lists' fingerprints, the tier told to save them.
    fn build(&self, saved: &SavedTier, lists: &[Arc<ListFile>]) -> Result<Tier> {
        let files: Vec<&ListFile> = lists.iter().map(|l| &**l).collect();
        let never = crate::tree::never;
        let values = Tier::values(&files, self.shift, self.base, (0, self.width - 1), &never)?
            .expect("a read that never stops is not given up");
        (self.counters.selector_entries_built).fetch_add(values.len() as u64, Relaxed);
        let universe = self.width * lists.len() as u64;
        let seq = EliasFano::build(universe, values.len(), values);
        saved.save_again(Tier::encode(&saved.files, &seq));
        Ok(Tier::in_memory(seq, saved.files.clone(), self.width))
    }

    /// Whether the entries are in memory (merged or not).
    pub(super) fn is_read(&self) -> bool {
        self.seq.get().is_some() || self.parts_now().is_some()
    }

    /// The parts read and not merged, if there are; none while a lookup reads them (stats
    /// and the preload's planning do not wait for a read from disk).
    fn parts_now(&self) -> Option<Arc<[PartEntries]>> {
        match self.parts_read.try_lock() {
            Ok(parts) => parts.clone(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().clone(),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Whether the entries are in memory as one sequence.
    pub(super) fn is_merged(&self) -> bool {
        self.seq.get().is_some()
    }

    /// The entries as one sequence, if they are in memory so.
    pub(super) fn merged(&self) -> Option<&EliasFano> {
        self.seq.get()
    }
}
