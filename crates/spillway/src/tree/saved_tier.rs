//! What a node's selector saves for opens: its *saved tiers*, kept apart from the tiers lookups
//! read (see `selector`).
//!
//! Lookups want few tiers, so a node's tiers in memory merge the way a leveled LSM does: a
//! newer tier into the one before it once it holds a quarter of its entries. The oldest tier
//! holds most of a node's entries, and leveling rewrites it every time the newer ones reach a
//! quarter of it — about seven rewrites of each entry over a leaf's life. Saving every tier so
//! made wrote 0.65 of the store's write amplification at 300 M records (BENCHMARKS.md), for a
//! copy that only an open reads.
//!
//! So the copy on disk goes its own way. A tier made from new lists is saved as it is made; a
//! merge in memory saves nothing, the saved tiers still holding those lists' entries; and the
//! saved tiers merge among themselves by size class, [`FANIN`] at a time (a tiered LSM): a
//! tier of `n` entries is in class `floor(log4 n)`, and four of a class become one tier of the
//! next, read back from their records. An entry is then written about once per class it
//! climbs, and a node keeps up to [`MAX_TIERS`] of them besides pinned ones. An open groups a
//! node's saved tiers as the tiers in memory would merge, each group one tier read at its
//! first use and merged by the preload (see `unread_tier`): lookups after it read as few
//! tiers as before the close.
//!
//! Saved tiers are cut like the selector they belong to (its shift, base and width). A
//! selector cut anew — a node rebuilt for its own span after a split — saves its tiers anew.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::selector::{unpinned, Merges, Place, Tier, MAX_HELD_TIERS};
use super::selector_file::Saved;
use crate::error::{Error, Result};
use crate::util::sync::lock;

/// Saved tiers of one size class merge this many at a time.
const FANIN: usize = 4;
/// More saved tiers than this (besides pinned ones) merge whatever their classes, the two
/// smallest first: an open reads each one (as many as a refresh may hold back in memory).
const MAX_TIERS: usize = MAX_HELD_TIERS;

/// A saved tier of a node's selector, or one to save: the record `SELECTORS` names for it.
pub(super) struct SavedTier {
    /// The list file of each slot.
    pub(super) files: Box<[u64]>,
    pub(super) n: u64,
    /// The record's body (see `Tier::body`) until it is written.
    body: Mutex<Option<Vec<u8>>>,
    saved: Mutex<Option<Saved>>,
}

impl std::fmt::Debug for SavedTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SavedTier({} entries, {} lists)",
            self.n,
            self.files.len()
        )
    }
}

impl SavedTier {
    /// `t`, to be saved.
    pub(super) fn pending(t: &Tier) -> Result<Arc<SavedTier>> {
        Ok(Arc::new(SavedTier {
            files: t.files.clone(),
            n: t.len(),
            body: Mutex::new(Some(t.body()?)),
            saved: Mutex::new(None),
        }))
    }

    /// A tier of `n` entries of `files` saved at `saved` (an open's).
    pub(super) fn written(files: Box<[u64]>, n: u64, saved: Saved) -> Arc<SavedTier> {
        Arc::new(SavedTier {
            files,
            n,
            body: Mutex::new(None),
            saved: Mutex::new(Some(saved)),
        })
    }

    /// Where the tier is saved, if it is.
    pub(super) fn saved(&self) -> Option<Saved> {
        lock(&self.saved).clone()
    }

    /// `f` of the body to write, if the tier is to be saved (the body stays until
    /// [`mark_saved`](Self::mark_saved)).
    pub(super) fn with_unsaved_body<T>(&self, f: impl FnOnce(&[u8]) -> T) -> Option<T> {
        lock(&self.body).as_deref().map(f)
    }

    pub(super) fn unsaved(&self) -> bool {
        lock(&self.body).is_some()
    }

    /// The tier is saved at `saved` now: the place it had before, if any.
    pub(super) fn mark_saved(&self, saved: Saved) -> Option<Saved> {
        let mut body = lock(&self.body);
        *body = None;
        lock(&self.saved).replace(saved)
    }

    /// The record turned out damaged: save `body` (the entries built from the lists) anew.
    pub(super) fn save_again(&self, body: Vec<u8>) {
        *lock(&self.body) = Some(body);
    }

    /// The entries, as a tier in memory of a selector `width` wide: from the body not written
    /// yet, or read back from the record.
    pub(super) fn entries(&self, width: u64) -> Result<Tier> {
        if let Some(tier) = self.with_unsaved_body(|body| self.decode(body, width)) {
            return tier;
        }
        let saved = self.saved().expect("a saved tier has a body or a record");
        let mut buf = Vec::new();
        let file = saved.file.open()?;
        let body = saved.file.read(&file, &saved, &mut buf)?;
        self.decode(body, width)
    }

    /// The entries of `body` (checked), if it is this tier's, as a tier in memory of a
    /// selector `width` wide.
    pub(super) fn decode(&self, body: &[u8], width: u64) -> Result<Tier> {
        Tier::decode_body(body)
            .filter(|(files, seq)| {
                *files == self.files
                    && seq.len() == self.n
                    && seq.universe() == width * self.n_slots()
            })
            .map(|(files, seq)| Tier::in_memory(seq, files, width))
            .ok_or_else(|| {
                let saved = self.saved();
                let place = saved.as_ref().map_or(0, |s| s.offset);
                let path = saved.map(|s| s.file.path().to_owned()).unwrap_or_default();
                Error::corruption(
                    path,
                    format!("the selector tier at {place} is not the one named"),
                )
            })
    }

    fn n_slots(&self) -> u64 {
        self.files.len() as u64
    }
}

/// The saved tiers of a node's new selector, whose tiers are `tiers`, cut `width` wide, of
/// which `made` were read from new lists' fingerprints in this refresh: `prev`'s (the saved
/// tiers of the selector it goes on from, cut alike; `None` for a selector cut anew) whose
/// lists are all still `present`, the tiers made, then merges by class within `merges`
/// (keeping the prefixes in `keep`). Where the saved tiers would not cover a list the tiers do
/// (a saved tier had a list that left), or a saved record cannot be read back for a merge, the
/// tiers are saved anew as they are.
pub(super) fn carry(
    prev: Option<&[Arc<SavedTier>]>,
    made: &[Arc<Tier>],
    tiers: &[Arc<Tier>],
    present: &HashSet<u64>,
    (width, keep): (u64, (u64, u64)),
    merges: &Merges<'_>,
) -> Result<Vec<Arc<SavedTier>>> {
    let anew = || tiers.iter().map(|t| SavedTier::pending(t)).collect();
    let Some(prev) = prev else {
        return anew();
    };
    let mut saved: Vec<Arc<SavedTier>> = prev
        .iter()
        .filter(|s| s.files.iter().all(|f| present.contains(f)))
        .cloned()
        .collect();
    for t in made {
        saved.push(SavedTier::pending(t)?);
    }
    let covered: HashSet<u64> = saved.iter().flat_map(|s| s.files.iter().copied()).collect();
    if tiers
        .iter()
        .flat_map(|t| t.files.iter())
        .any(|f| !covered.contains(f))
    {
        return anew();
    }
    match merge(&mut saved, width, keep, merges) {
        Ok(()) => Ok(saved),
        // A record gone or damaged: the tiers in memory hold the same entries.
        Err(Error::Corruption { .. } | Error::Io { .. }) => anew(),
        Err(e) => Err(e),
    }
}

/// Whether a merge of saved tiers is due (one an allowance put off, see [`Merges`]).
pub(super) fn merges_due(saved: &[Arc<SavedTier>]) -> bool {
    next_merge(saved).is_some()
}

/// Merge `saved` by class until no class holds [`FANIN`] tiers and at most [`MAX_TIERS`]
/// are left besides pinned ones, or `merges` says to stop.
fn merge(
    saved: &mut Vec<Arc<SavedTier>>,
    width: u64,
    keep: (u64, u64),
    merges: &Merges<'_>,
) -> Result<()> {
    while let Some((group, free)) = next_merge(saved) {
        let entries = group.iter().map(|&i| saved[i].n).sum();
        let give_up = match free <= MAX_TIERS {
            true => merges.take(entries),
            false => Some(&crate::tree::never as _),
        };
        let Some(give_up) = give_up else {
            return Ok(()); // put off: the merge stays due
        };
        let inputs = (group.iter())
            .map(|&i| saved[i].entries(width).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let Some(merged) = Tier::merge(&inputs, width, keep, Place::Memory, give_up)? else {
            return Ok(());
        };
        saved[group[0]] = SavedTier::pending(&merged)?;
        for &i in group[1..].iter().rev() {
            saved.remove(i);
        }
    }
    Ok(())
}

/// The merge [`merge`] would make next: the positions of the tiers to merge (increasing), and
/// how many tiers are not pinned (see `selector::unpinned`).
fn next_merge(saved: &[Arc<SavedTier>]) -> Option<(Vec<usize>, usize)> {
    let sizes: Vec<(u64, usize)> = saved.iter().map(|t| (t.n, t.files.len())).collect();
    let free = unpinned(&sizes);
    if free.len() < 2 {
        return None;
    }
    let class = |i: &usize| saved[*i].n.max(1).ilog(FANIN as u64);
    let mut by_class = free.clone();
    by_class.sort_by_key(|i| (class(i), *i));
    // The smallest full class: its tiers are the cheapest to merge.
    let full = (by_class.chunk_by(|a, b| class(a) == class(b)))
        .find(|c| c.len() >= FANIN)
        .map(|c| c[..FANIN].to_vec());
    let mut group = full.or_else(|| {
        (free.len() > MAX_TIERS).then(|| {
            let mut smallest = free.clone();
            smallest.sort_by_key(|&i| (saved[i].n, i));
            smallest.truncate(2);
            smallest
        })
    })?;
    group.sort_unstable();
    Some((group, free.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::{hashed_test_list, Handles, ListRef};
    use crate::order::Span;
    use crate::stats::Counters;
    use crate::tree::selector::{merge_groups, SelectorParams};
    use crate::tree::{selector_index, Node, SelectorRoom, TierFile, Tree};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// A leaf that takes a list a spill for a while: its saved tiers cover exactly its lists,
    /// merge by class (never more than `MAX_TIERS` left), and write fewer entries than the
    /// tiers in memory make; an open gives it selectors that answer for every key, with no
    /// merge due, from tiers read at first use and merged only when loaded.
    #[test]
    fn saved_tiers_follow_the_lists_and_write_less_than_memory_merges() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(256, counters.clone()));
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 22,
        };
        let room_file = TierFile::new(dir.path(), counters.clone());
        let room = SelectorRoom::for_test(&room_file);
        let mut tree = Tree::new();
        tree.root.children = vec![Node::leaf(Span::all())];
        let mut keys = Vec::new();
        let next_file = AtomicU64::new(1000);
        // Tiers in memory so far, kept so that their addresses stay theirs.
        let (mut made_in_memory, mut memory_seen) = (0u64, Vec::<Arc<Tier>>::new());
        let mut saved_entries = 0;
        // Five lists at once (as a split's half starts: one tier of several lists), then one
        // at a time.
        for id in 0..45u64 {
            let records = if id < 5 { 2000 } else { 300 + (id * 37) % 400 };
            let (file, batch) = hashed_test_list(
                dir.path(),
                id,
                records,
                512,
                (1 << 22, 3),
                &counters,
                &handles,
            );
            keys.extend(batch.into_iter().map(|(r, _)| (r, id)));
            let leaf = &mut tree.root.children[0];
            leaf.lists.insert(0, ListRef::new(file, Span::all()));
            if id < 4 {
                continue;
            }
            tree.refresh_selectors(
                Some(params),
                &crate::util::cores::Cores::new(1),
                &crate::tree::Rebuilds::none(),
                &room,
            )
            .unwrap();
            let s = tree.root.children[0].selector.as_ref().unwrap();
            saved_entries += (s.persisted.iter())
                .filter(|t| t.unsaved())
                .map(|t| t.n)
                .sum::<u64>();
            tree.save_selectors(dir.path(), &next_file, &counters)
                .unwrap();
            let leaf = &tree.root.children[0];
            let s = leaf.selector.as_ref().unwrap();
            for t in &s.tiers {
                if !memory_seen.iter().any(|m| Arc::ptr_eq(m, t)) {
                    made_in_memory += t.len();
                    memory_seen.push(t.clone());
                }
            }
            let saved = &s.persisted;
            assert!(saved.iter().all(|t| !t.unsaved() && t.saved().is_some()));
            let mut held: Vec<u64> = saved.iter().flat_map(|t| t.files.iter().copied()).collect();
            held.sort_unstable();
            let mut lists: Vec<u64> = leaf.lists.iter().map(|l| l.file.id()).collect();
            lists.sort_unstable();
            assert_eq!(held, lists, "each list in one saved tier");
            assert!(next_merge(saved).is_none(), "{saved:?}");
            let free = saved.iter().filter(|t| t.files.len() > 1).count();
            assert!(free <= MAX_TIERS, "{saved:?}");
        }
        let last = tree.root.children[0].selector.clone().unwrap();
        assert!(last.persisted.len() > last.tiers.len(), "{last:?}");
        assert!(
            saved_entries * 2 < made_in_memory,
            "saved {saved_entries} entries, memory made {made_in_memory}"
        );

        // An open: the index, then each node's saved tiers grouped as memory merges them.
        let trees = [(0, &tree, Some(params))];
        selector_index::write(dir.path(), &trees, &counters).unwrap();
        let mut copy = tree.clone();
        copy.root.visit_mut(&mut |n| n.selector = None);
        let loaded_counters = Arc::new(Counters::default());
        let loaded = selector_index::load(
            dir.path(),
            &mut [(0, &mut copy, Some(params))],
            &loaded_counters,
        );
        assert_eq!(loaded.nodes, 1, "{loaded:?}");
        let leaf = &copy.root.children[0];
        let s = leaf.selector.as_ref().unwrap();
        assert!(!s.merges_due(), "{s:?}");
        assert!(s.tiers.len() < last.persisted.len(), "{s:?}");
        assert_eq!(loaded_counters.selector_tiers_loaded.load(Relaxed), 0);
        for &(r, id) in &keys {
            assert!(s.candidates(r).unwrap().may_hold(id));
        }
        assert_eq!(s.verify(leaf).unwrap(), None);
        let groups = s.tiers.len() as u64;
        assert_eq!(loaded_counters.selector_tiers_loaded.load(Relaxed), groups);
        assert_eq!(loaded_counters.selector_entries_built.load(Relaxed), 0);

        // The lookups read every group and merged none: a group of several saved tiers is
        // probed tier by tier until a load merges it, answering alike before and after, and a
        // merge with other tiers takes its entries either way.
        let several: Vec<&Arc<Tier>> = (s.tiers.iter())
            .filter(|t| t.unread_part().unwrap().saved_tiers().count() > 1)
            .collect();
        assert!(!several.is_empty(), "{s:?}");
        let ids: Vec<u64> = leaf.lists.iter().map(|l| l.file.id()).collect();
        let mut routes: Vec<u64> = keys.iter().map(|&(r, _)| r).collect();
        routes.extend((0..20_000u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        let answers = || -> Vec<Vec<u64>> {
            (routes.iter())
                .map(|&r| {
                    let c = s.candidates(r).unwrap();
                    ids.iter().copied().filter(|&id| c.may_hold(id)).collect()
                })
                .collect()
        };
        let width = s.width;
        let merged_with_others = |t: &Arc<Tier>| {
            let never = crate::tree::never;
            let m = Tier::merge(
                std::slice::from_ref(t),
                width,
                (0, width - 1),
                Place::Memory,
                &never,
            );
            m.unwrap().unwrap().into_seq().iter().collect::<Vec<u64>>()
        };
        let probed = answers();
        let unmerged: Vec<Vec<u64>> = several.iter().map(|t| merged_with_others(t)).collect();
        for t in &several {
            let u = t.unread_part().unwrap();
            assert!(u.is_read() && !u.is_merged());
            assert_eq!(u.load().unwrap().map(|e| e.to_string()), None);
            assert!(u.is_merged());
            assert_eq!(u.memory(), u.merged().unwrap().memory(), "held once");
        }
        assert_eq!(answers(), probed);
        for (t, before) in several.iter().zip(unmerged) {
            let merged = t.unread_part().unwrap().merged().unwrap();
            assert_eq!(merged.iter().collect::<Vec<u64>>(), before);
            assert_eq!(merged_with_others(t), before);
        }
        assert_eq!(loaded_counters.selector_tiers_loaded.load(Relaxed), groups);

        // Lookups racing the first reads and the merges (a preload's `load` beside GETs) find
        // every key's list throughout, and each group is read once.
        {
            let all_keys = &keys;
            let mut raced = tree.clone();
            raced.root.visit_mut(&mut |n| n.selector = None);
            let raced_counters = Arc::new(Counters::default());
            selector_index::load(
                dir.path(),
                &mut [(0, &mut raced, Some(params))],
                &raced_counters,
            );
            let s = raced.root.children[0].selector.as_ref().unwrap();
            std::thread::scope(|scope| {
                for skip in 0..2 {
                    scope.spawn(move || {
                        for &(r, id) in all_keys.iter().skip(skip).step_by(2) {
                            assert!(s.candidates(r).unwrap().may_hold(id));
                        }
                    });
                }
                for t in &s.tiers {
                    t.unread_part().unwrap().load().unwrap();
                }
            });
            assert!(s.tiers.iter().all(|t| t.unread_part().unwrap().is_merged()));
            let loaded = raced_counters.selector_tiers_loaded.load(Relaxed);
            assert_eq!(loaded, groups);
            for &(r, id) in all_keys {
                assert!(s.candidates(r).unwrap().may_hold(id));
            }
        }

        // Groups a lookup read before the preload came to them are merged by it, not read
        // again; the others it reads and merges.
        {
            let mut preloaded = tree.clone();
            preloaded.root.visit_mut(&mut |n| n.selector = None);
            let counters = Arc::new(Counters::default());
            let trees = &mut [(0, &mut preloaded, Some(params))];
            selector_index::load(dir.path(), trees, &counters);
            let s = preloaded.root.children[0].selector.as_ref().unwrap();
            let several = (s.tiers.iter())
                .find(|t| t.unread_part().unwrap().saved_tiers().count() > 1)
                .unwrap();
            several.unread_part().unwrap().read().unwrap();
            assert_eq!(counters.selector_tiers_loaded.load(Relaxed), 1);
            crate::tree::Preload::of([&preloaded])
                .run(&crate::tree::never)
                .unwrap();
            assert!(s.tiers.iter().all(|t| t.unread_part().unwrap().is_merged()));
            assert_eq!(counters.selector_tiers_loaded.load(Relaxed), groups);
            for &(r, id) in &keys {
                assert!(s.candidates(r).unwrap().may_hold(id));
            }
        }

        // A damaged record in a group of several: its saved tier is built from its lists and
        // saved again, the rest of the group read.
        let victim = (s.tiers.iter())
            .filter_map(|t| t.unread_part())
            .find_map(|u| u.saved_tiers().nth(1).cloned())
            .expect("a group of several saved tiers");
        let at = victim.saved().unwrap();
        let mut bytes = std::fs::read(at.file.path()).unwrap();
        bytes[(at.offset + u64::from(at.len) / 2) as usize] ^= 0x5a;
        std::fs::write(at.file.path(), bytes).unwrap();
        let reopen = |counters: &Arc<Counters>| {
            let mut copy = tree.clone();
            copy.root.visit_mut(&mut |n| n.selector = None);
            selector_index::load(dir.path(), &mut [(0, &mut copy, Some(params))], counters);
            copy
        };
        let damaged_counters = Arc::new(Counters::default());
        let damaged = reopen(&damaged_counters);
        let leaf = &damaged.root.children[0];
        let s = leaf.selector.as_ref().unwrap();
        for &(r, id) in &keys {
            assert!(s.candidates(r).unwrap().may_hold(id));
        }
        let built = damaged_counters.selector_entries_built.load(Relaxed);
        assert_eq!(built, victim.n);
        let again: Vec<&Arc<SavedTier>> = s.persisted.iter().filter(|t| t.unsaved()).collect();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].files, victim.files);
        assert!(damaged
            .save_selectors(dir.path(), &next_file, &counters)
            .unwrap());
        selector_index::write(dir.path(), &[(0, &damaged, Some(params))], &counters).unwrap();
        let mended_counters = Arc::new(Counters::default());
        let mended = reopen(&mended_counters);
        let leaf = &mended.root.children[0];
        let s = leaf.selector.as_ref().unwrap();
        assert_eq!(s.verify(leaf).unwrap(), None);
        assert_eq!(mended_counters.selector_entries_built.load(Relaxed), 0);
    }

    /// Tiers grouped as they would merge in memory: no merge is due among the groups, and
    /// every tier is in one group, groups in order.
    #[test]
    fn merge_groups_leave_no_merge_due() {
        let cases: [&[(u64, usize)]; 4] = [
            &[(1000, 1)],
            &[(4000, 3), (900, 2), (300, 1), (200, 1), (50, 1)],
            &[(100, 1), (100, 1), (100, 1), (100, 1), (100, 1), (100, 1)],
            &[
                (5000, 1),
                (1000, 4),
                (1000, 4),
                (900, 1),
                (10, 1),
                (10, 1),
                (10, 1),
            ],
        ];
        for sizes in cases {
            let groups = merge_groups(sizes);
            let flat: Vec<usize> = groups.iter().flatten().copied().collect();
            let mut sorted = flat.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..sizes.len()).collect::<Vec<_>>(), "{groups:?}");
            let merged: Vec<(u64, usize)> = (groups.iter())
                .map(|g| {
                    g.iter()
                        .fold((0, 0), |(n, s), &i| (n + sizes[i].0, s + sizes[i].1))
                })
                .collect();
            assert!(
                crate::tree::selector::next_merge_of(&merged).is_none(),
                "{sizes:?} -> {groups:?}"
            );
            for g in &groups {
                assert!(g.windows(2).all(|w| w[0] < w[1]), "{groups:?}");
            }
        }
    }
}
