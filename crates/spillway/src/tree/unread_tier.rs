//! A tier an open has not read yet: some of a node's saved tiers (see `saved_tier`), read and
//! merged into one at its first use, so that an open reads no selector and lookups after it
//! read as few tiers as before the close.
//!
//! Saved tiers merge their own way, by size class, so a node saves more tiers than its
//! lookups read (up to eight besides pinned ones, against three). An open groups them as the
//! tiers in memory would merge (`selector::merge_groups`), and each group is one tier here:
//! read record by record at its first use (or all at once by a preload), each record's entries
//! restated in the group's slots, as a merge in memory does. A record that is missing, damaged
//! or not the one named is built from its lists' fingerprints instead, and saved again.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};

use super::saved_tier::SavedTier;
use super::selector::{Place, Tier};
use super::selector_file::Saved;
use crate::error::{Error, Result};
use crate::list::ListFile;
use crate::stats::Counters;
use crate::util::ef::EliasFano;

/// A saved tier and the lists of its slots.
pub(super) type Part = (Arc<SavedTier>, Box<[Arc<ListFile>]>);

/// Saved tiers of one node, read and merged at their first use (see the module doc).
pub(super) struct Unread {
    n: u64,
    seq: OnceLock<EliasFano>,
    /// The saved tiers, oldest first, and the lists of each (by slot): each one's lists take
    /// the next slots of the tier.
    parts: Box<[Part]>,
    /// The cut of the selector the tier belongs to.
    shift: u32,
    base: u64,
    width: u64,
    counters: Arc<Counters>,
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

    /// Bytes of memory held once read (about the records' size until then).
    pub(super) fn memory(&self) -> usize {
        self.seq.get().map_or_else(
            || {
                (self.parts.iter())
                    .map(|(t, _)| t.saved().map_or(0, |s| s.len as usize))
                    .sum()
            },
            EliasFano::memory,
        )
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

    /// The entries: read at the first call (two threads may both read; one keeps its copy).
    pub(super) fn seq(&self) -> Result<&EliasFano> {
        if self.seq.get().is_none() {
            self.load()?;
        }
        Ok(self.seq.get().expect("loaded"))
    }

    /// Bring the entries into memory if they are not, saying why a record could not be read
    /// (its tier is then built from its lists and saved again). An error is the fingerprints'.
    pub(super) fn load(&self) -> Result<Option<Error>> {
        self.load_with(&|_| None)
    }

    /// [`load`](Self::load), with the checked bodies of the records `body` has (see
    /// `preload`, which reads many records at once); the others are read here.
    pub(super) fn load_with<'b>(
        &self,
        body: &dyn Fn(&SavedTier) -> Option<Result<&'b [u8]>>,
    ) -> Result<Option<Error>> {
        if self.is_loaded() {
            return Ok(None);
        }
        let mut why = None;
        let mut tiers = Vec::with_capacity(self.parts.len());
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
            tiers.push(tier);
        }
        let seq = if tiers.len() == 1 {
            tiers.pop().expect("one").into_seq()
        } else {
            let tiers: Vec<Arc<Tier>> = tiers.into_iter().map(Arc::new).collect();
            let never = crate::tree::never;
            let merged = Tier::merge(
                &tiers,
                self.width,
                (0, self.width - 1),
                Place::Memory,
                &never,
            )?;
            merged
                .expect("a merge that never stops is not given up")
                .into_seq()
        };
        Counters::bump(&self.counters.selector_tiers_loaded);
        let _ = self.seq.set(seq);
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

    /// Whether the entries are in memory.
    pub(super) fn is_loaded(&self) -> bool {
        self.seq.get().is_some()
    }

    /// The entries, if they are in memory.
    pub(super) fn loaded(&self) -> Option<&EliasFano> {
        self.seq.get()
    }
}
