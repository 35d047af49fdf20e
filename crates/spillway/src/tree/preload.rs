//! Saved selector tiers, then list files' metadata, read back ahead of their first use. An
//! open reads no selector (see
//! `selector_index`): each tier is read when a lookup first needs it, so the first GETs into
//! each leaf after an open wait for a read of the leaf's tiers — at a billion records 1.6 GB of
//! them, a few hundred KiB at a time, which made cold GETs read 16 KiB each instead of one
//! 4 KiB page. A preload reads the tiers the open did not in the order they lie in their
//! files, a run of neighbours in one read, so that they come at the device's sequential speed
//! and GETs soon read one page each (`Options::preload_selectors` runs one after every open;
//! `Db::load_selectors` runs one in the caller's thread).
//!
//! Nor does an open read list files (see `list::file`): a GET that is the first to reach one
//! reads its metadata — page index, filter, sketch, a few KiB — before its page. The preload
//! reads those too, after the selectors, file by file in the order they were written.
//!
//! It holds the tiers and files weakly: one a spill has since replaced is not read, and none
//! outlives its tree for the preload's sake.

use std::sync::{Arc, Weak};

use super::saved_tier::SavedTier;
use super::selector::Tier;
use super::selector_file::Saved;
use super::Tree;
use crate::error::Result;
use crate::list::ListFile;

/// The most bytes one read takes: enough to reach the device's sequential speed, small enough
/// that a preload told to stop does so soon.
const RUN: u64 = 8 << 20;
/// A gap this small between two tiers of a file is read through rather than read around.
const GAP: u64 = 64 << 10;

/// The saved tiers of some trees not read yet, in the order they lie in their files; then
/// their list files not read yet, by id.
pub struct Preload {
    tiers: Vec<Weak<Tier>>,
    lists: Vec<Weak<ListFile>>,
}

impl Preload {
    /// The tiers of `trees` still to be read.
    pub fn of<'a>(trees: impl IntoIterator<Item = &'a Tree>) -> Preload {
        let mut tiers: Vec<Arc<Tier>> = Vec::new();
        let mut lists = std::collections::BTreeMap::new();
        for tree in trees {
            tree.visit_saved_tiers(|t, _| tiers.push(t.clone()));
            let unread = tree.files().into_iter().filter(|(_, f)| !f.is_read());
            lists.extend(unread.map(|(id, f)| (id, Arc::downgrade(f))));
        }
        tiers.sort_by_key(|t| Self::place(t));
        // A tier shared by nodes (a fast-split's halves) is read once.
        tiers.dedup_by(|a, b| Arc::ptr_eq(a, b));
        Preload {
            tiers: tiers.iter().map(Arc::downgrade).collect(),
            lists: lists.into_values().collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tiers.is_empty() && self.lists.is_empty()
    }

    /// Read every tier not read yet (by a lookup meanwhile), a run at a time, asking `stop`
    /// before each run and each tier. A record that cannot be read or fails its checksum is built from its
    /// lists instead, as at a lookup; an error reading those lists ends the preload (the
    /// lookup that needs the tier meets it again, and reports it). A tier an open made of
    /// several saved ones (see `unread_tier`) is read by its first record's place; the run
    /// holds the others if they are near, and they are read apart if not.
    ///
    /// Then the list files not read yet, asking `stop` before each. A file that cannot be
    /// read is passed over: the GET that reaches it meets the error again, and reports it.
    pub fn run(&self, stop: &dyn Fn() -> bool) -> Result<()> {
        self.run_tiers(stop)?;
        for file in self.lists.iter().filter_map(Weak::upgrade) {
            if stop() {
                break;
            }
            let _ = file.read_metadata();
        }
        Ok(())
    }

    fn run_tiers(&self, stop: &dyn Fn() -> bool) -> Result<()> {
        let mut buf = Vec::new();
        let mut rest = &self.tiers[..];
        while !rest.is_empty() && !stop() {
            let (run, after) = Self::next_run(rest);
            rest = after;
            // A run of one tier a lookup has read (it is only merged), or of one with no record.
            let to_read = run.first().filter(|t| !Self::read_by_lookup(t));
            let Some(first) = to_read.and_then(|t| Self::record(t)) else {
                for t in &run {
                    t.unread_part().expect("unread").load()?;
                }
                continue;
            };
            let (file, start) = (first.file.clone(), first.offset);
            let end = (run.iter())
                .filter_map(|t| Self::record(t))
                .map(|s| s.offset + s.len as u64)
                .max()
                .expect("a run has a tier");
            buf.resize((end - start) as usize, 0);
            let read = file
                .open()
                .and_then(|f| crate::io::read_into(&f, file.path(), start, &mut buf));
            let buf = &buf[..];
            let in_run = |t: &SavedTier| {
                let s = t.saved()?;
                let inside =
                    s.file.id() == file.id() && s.offset >= start && s.offset + s.len as u64 <= end;
                inside.then(|| {
                    let at = (s.offset - start) as usize;
                    file.check(&s, &buf[at..at + s.len as usize])
                })
            };
            for t in &run {
                // A tier an open grouped from several saved ones is merged as it is read
                // (tenths of a second for a big leaf): a close waits for one, not a run's.
                if stop() {
                    return Ok(());
                }
                let u = t.unread_part().expect("unread");
                match &read {
                    Ok(()) => u.load_with(&in_run)?,
                    // A file cut short, say: each tier on its own, as a lookup would.
                    Err(_) => u.load()?,
                };
            }
        }
        Ok(())
    }

    /// The tiers of the next read: those of `tiers` still to be read that lie in one file,
    /// within [`RUN`] bytes and no more than [`GAP`] apart; and the tiers after them. (A tier
    /// whose first record is not saved, or that a lookup has read, is a run of its own.)
    fn next_run(tiers: &[Weak<Tier>]) -> (Vec<Arc<Tier>>, &[Weak<Tier>]) {
        let mut run: Vec<Arc<Tier>> = Vec::new();
        let mut first = None;
        let mut end = 0;
        for (i, weak) in tiers.iter().enumerate() {
            let Some(t) = weak.upgrade() else { continue };
            if t.unread_part().is_none_or(|u| u.is_merged()) {
                continue;
            }
            let Some(s) = Self::record(&t).filter(|_| !Self::read_by_lookup(&t)) else {
                if run.is_empty() {
                    return (vec![t], &tiers[i + 1..]);
                }
                return (run, &tiers[i..]);
            };
            let (file, offset) = (s.file.id(), s.offset);
            match first {
                None => first = Some((file, offset)),
                Some((f, start)) => {
                    let next_end = offset + s.len as u64;
                    if f != file || offset > end + GAP || next_end - start > RUN {
                        return (run, &tiers[i..]);
                    }
                }
            }
            end = end.max(offset + s.len as u64);
            run.push(t);
        }
        (run, &[])
    }

    /// Where a tier not read yet is read from: its first record.
    fn record(t: &Tier) -> Option<Saved> {
        t.unread_part()
            .expect("only saved tiers are preloaded")
            .first_record()
    }

    /// Whether a lookup has read the tier's records: it is only merged. (Asked once a tier
    /// as a run is made: a lookup may read it at any moment.)
    fn read_by_lookup(t: &Tier) -> bool {
        t.unread_part()
            .expect("only saved tiers are preloaded")
            .is_read()
    }

    /// Where a tier not read yet lies: its first record's file and offset (those with none,
    /// last).
    fn place(t: &Tier) -> (u64, u64) {
        Self::record(t).map_or((u64::MAX, 0), |s| (s.file.id(), s.offset))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    use super::*;
    use crate::list::{hashed_test_list, Handles, ListRef};
    use crate::order::{Pivot, Span};
    use crate::stats::Counters;
    use crate::tree::selector::SelectorParams;
    use crate::tree::{selector_index, Node, SelectorRoom, TierFile};

    /// A preload told to stop between two tiers of one run stops there: a close waits for
    /// one tier's read and merge, not a run's.
    #[test]
    fn a_preload_stops_between_the_tiers_of_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let params = SelectorParams {
            r: 8,
            node_size: 1 << 22,
        };
        let room_file = TierFile::new(dir.path(), counters.clone());
        let room = SelectorRoom::for_test(&room_file);
        // Four leaves of a list each: four tiers saved side by side, one run for a preload.
        let mut tree = Tree::new();
        let cut = |i: u64| Pivot {
            route: i << 62,
            key: Box::default(),
        };
        for i in 0..4u64 {
            let span = Span::new(cut(i), (i < 3).then(|| cut(i + 1)));
            let mut leaf = Node::leaf(span.clone());
            let (file, _) =
                hashed_test_list(dir.path(), i, 3000, 512, (1 << 22, 3), &counters, &handles);
            leaf.lists.push(
                ListRef::new(file, Span::all())
                    .narrow(&span)
                    .unwrap()
                    .unwrap(),
            );
            tree.root.children.push(leaf);
        }
        let cores = crate::util::cores::Cores::new(1);
        tree.refresh_selectors(Some(params), &cores, &crate::tree::Rebuilds::none(), &room)
            .unwrap();
        tree.save_selectors(dir.path(), &AtomicU64::new(1000), &counters)
            .unwrap();
        selector_index::write(dir.path(), &[(0, &tree, Some(params))], &counters).unwrap();
        let loaded = Arc::new(Counters::default());
        let mut copy = tree.clone();
        copy.root.visit_mut(&mut |n| n.selector = None);
        selector_index::load(dir.path(), &mut [(0, &mut copy, Some(params))], &loaded);
        assert_eq!(copy.selector_tiers_unread(), 4);
        let preload = Preload::of([&copy]);
        assert_eq!(Preload::next_run(&preload.tiers).0.len(), 4, "one run");

        // Asked before the run, then before each tier: the second tier is told to stop.
        let asked = AtomicU64::new(0);
        preload.run(&|| asked.fetch_add(1, Relaxed) >= 2).unwrap();
        assert_eq!(loaded.selector_tiers_loaded.load(Relaxed), 1);
        assert_eq!(copy.selector_tiers_unread(), 3);
        // Run again to the end, it reads the rest.
        preload.run(&crate::tree::never).unwrap();
        assert_eq!(loaded.selector_tiers_loaded.load(Relaxed), 4);
        assert_eq!(copy.selector_tiers_unread(), 0);
    }
}
