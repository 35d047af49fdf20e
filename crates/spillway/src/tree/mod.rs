//! The WB tree below the root buffer: nodes holding lists, each node a span of positions
//! (see `order`: by hash in a hashed store, by key in an ordered one).
//!
//! A [`Tree`] is a plain value. A spill or split clones it (nodes hold only metadata and
//! `Arc`s to list files, so this is cheap), changes the clone, writes it to the manifest, and
//! only then publishes it; readers keep using the version they started with. A failure half
//! way leaves the published tree untouched.

mod cache;
mod compact;
pub mod hunch;
mod node;
mod preload;
mod rewrite;
mod saved_tier;
mod selector;
mod selector_file;
pub mod selector_index;
mod spill;
mod split;
mod sweep;
mod tier_file;
mod unread_tier;
mod upkeep;

pub use node::Node;
pub use preload::Preload;
pub use selector::{Rebuilds, SelectorParams, MERGE_ALLOWANCE};
pub use selector_file::SelectorFile;

use saved_tier::SavedTier;
use selector::{Merges, Place, Selector, DISK_RESIDUE, TIGHT_DISK_RESIDUE};
pub use spill::Spiller;
pub use tier_file::TierFile;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use crate::error::Result;
use crate::list::sketch::View;
use crate::list::ListFile;
use crate::order::{KeyOrder, Span};
use crate::stats::{Counters, Stats};
use crate::upsert::fold::Stack;
use crate::util::cores::Cores;

/// Where node selectors may live: up to `allowance` bytes of memory (`None`: no limit), and
/// the rest in `file`.
pub struct SelectorRoom<'a> {
    pub file: &'a Arc<TierFile>,
    pub allowance: Option<u64>,
    /// Whether a selector on disk may keep the entries of new lists in memory up to twice
    /// its residue, its tier on disk rewritten by a later upkeep step (see `Place::Disk`),
    /// and tier merges past an allowance are put off (see `selector::Merges`): so in a
    /// spill, where writers may wait; in upkeep, once one does. Asked node by node.
    pub hold_back: &'a (dyn Fn() -> bool + Sync),
    /// Entries of tiers a pass of refreshes held back may merge (see `selector::Merges`).
    pub merge_allowance: u64,
}

#[cfg(test)]
impl<'a> SelectorRoom<'a> {
    /// Room for a test's refreshes: selectors in memory, no allowance, nothing held back, no
    /// merge of held-back tiers (as an open).
    pub fn for_test(file: &'a Arc<TierFile>) -> SelectorRoom<'a> {
        SelectorRoom {
            file,
            allowance: None,
            hold_back: &never,
            merge_allowance: 0,
        }
    }
}

/// For [`SelectorRoom::hold_back`]: never (an open, a test), or always (a spill).
pub fn never() -> bool {
    false
}

pub fn always() -> bool {
    true
}

#[derive(Clone, Debug)]
pub struct Tree {
    /// The root's children live here; the root's own records are the in-memory buffer, so
    /// this node never holds lists.
    pub root: Node,
}

/// Levels a read's path may have: far more than any tree grows to (each level multiplies the
/// records by the fan-out).
const DEEPEST: usize = 12;

/// The nodes from the root to the leaf of a position, root first.
#[derive(Clone, Copy)]
pub struct Path<'t> {
    nodes: [Option<&'t Node>; DEEPEST],
}

impl<'t> Path<'t> {
    /// The path of `pos` in `tree`: known from the nodes' spans alone.
    fn of(tree: &'t Tree, pos: (u64, &[u8])) -> Path<'t> {
        let mut nodes = [None; DEEPEST];
        let mut at = Some(&tree.root);
        for slot in &mut nodes {
            let Some(n) = at else { break };
            *slot = Some(n);
            at = n.child_for(pos);
        }
        Path { nodes }
    }

    fn nodes(&self) -> impl Iterator<Item = &'t Node> + '_ {
        self.nodes.iter().map_while(|n| *n)
    }

    /// Start loading each list's filter and each selector's first stage.
    fn prefetch_first(&self, route: u64, hash: u64) {
        for n in self.nodes() {
            for list in &n.lists {
                list.file.prefetch_filter(hash);
            }
            if let Some(s) = n.selector.as_deref() {
                s.prefetch(route, 0);
            }
        }
    }
}

impl Tree {
    /// A new tree: the root buffer above one empty leaf covering every position.
    pub fn new() -> Tree {
        Tree {
            root: Node::internal(Span::all(), vec![Node::leaf(Span::all())]),
        }
    }

    /// Where this thread's reads have lately found their keys in lists (see `hunch`), start
    /// loading what a read of `(route, key)` will wait for first — each list's filter, each
    /// selector's first stage, and the page of the leaf's likeliest list — and return the
    /// path. A read calls it before it probes the root buffer (a cache miss or three in its
    /// table and arena), so that those misses and these overlap instead of following one
    /// another. Reads that mostly end in a buffer, or find nothing, start nothing here (and
    /// walk no path): [`get`](Self::get) starts them once the buffers have missed.
    pub fn start_read(&self, route: u64, key: &[u8], hash: u64) -> Option<Path<'_>> {
        if !hunch::expect_found() {
            return None;
        }
        let path = Path::of(self, (route, key));
        path.prefetch_first(route, hash);
        if let Some(leaf) = path.nodes().last() {
            leaf.prefetch_likely_page(route, key);
        }
        Some(path)
    }

    /// Search the root-to-leaf path of `(route, key)`, newest list first in each node, adding
    /// the key's records to `stack` until one completes it; `hash` is the key's filter hash.
    /// `started`: the path, if [`start_read`](Self::start_read) started its loads.
    pub fn get(
        &self,
        started: Option<Path<'_>>,
        route: u64,
        key: &[u8],
        hash: u64,
        counters: &Counters,
        stack: &mut Stack,
    ) -> Result<()> {
        let path = started.unwrap_or_else(|| {
            let path = Path::of(self, (route, key));
            path.prefetch_first(route, hash);
            path
        });
        debug_assert!(path
            .nodes()
            .next()
            .is_some_and(|n| std::ptr::eq(n, &self.root)));
        // The rest of the selectors' misses, stage by stage across the path: the ~100 misses
        // of a deep path overlap instead of following one another.
        for stage in 1..3 {
            for s in path.nodes().filter_map(|n| n.selector.as_deref()) {
                s.prefetch(route, stage);
            }
        }
        let mut node = &self.root;
        loop {
            let selector = node.selector.as_deref();
            let candidates = selector.map(|s| s.candidates(route)).transpose()?;
            for (i, list) in node.lists.iter().enumerate() {
                let skip = match (selector, &candidates) {
                    (Some(s), Some(c)) => {
                        let id = list.file.id();
                        s.covers(i, id) && !c.may_hold(id)
                    }
                    _ => false,
                };
                if !skip && list.get(route, key, hash, counters, stack)? {
                    return Ok(());
                }
                // Below a range delete covering the key, nothing of it is left.
                if list.covers(route, key) {
                    stack.push(crate::record::Op::Delete);
                    return Ok(());
                }
            }
            match node.child_for((route, key)) {
                Some(child) => node = child,
                None => return Ok(()),
            }
        }
    }

    /// Bring every node's selector up to date with its lists (after a change to the tree,
    /// before it is published; and at open, where nodes start with the selectors saved for
    /// them, if any, see `selector_index`), on `cores`: nodes' selectors are
    /// independent. Selectors that splits passed on to narrower nodes are rebuilt as
    /// `rebuilds` allows (see `Selector::refresh`). `None`: the store has no selectors. What
    /// `room` has no memory for goes to its file (see
    /// [`place_selectors`](Self::place_selectors)). Returns the entries read from
    /// fingerprints.
    pub fn refresh_selectors(
        &mut self,
        params: Option<SelectorParams>,
        cores: &Cores,
        rebuilds: &Rebuilds<'_>,
        room: &SelectorRoom<'_>,
    ) -> Result<u64> {
        let Some(params) = params else {
            return Ok(0);
        };
        let mut nodes = Vec::new();
        self.root.visit(&mut |n| nodes.push(n));
        let on_disk = Self::place_selectors(&nodes, params, room.allowance);
        // Nodes' selectors cost very different work (a leaf just slow-split, a root's many
        // tiers), so they go to whichever core is free.
        let merges = Merges::new(room.merge_allowance, room.hold_back);
        let fresh = cores.map((0..nodes.len()).collect(), |i| {
            let place = match on_disk[i] {
                Some(residue) => Place::Disk {
                    file: room.file,
                    residue,
                    slack: if (room.hold_back)() { 2 } else { 1 },
                },
                None => Place::Memory,
            };
            let mut built = 0;
            let selector =
                Selector::refresh(nodes[i], params, rebuilds, place, &merges, &mut built);
            selector.map(|s| (s, built))
        });
        let mut built = 0;
        let mut selectors = Vec::with_capacity(fresh.len());
        for f in fresh {
            let (selector, b) = f?;
            built += b;
            selectors.push(selector);
        }
        let mut selectors = selectors.into_iter();
        self.root
            .visit_mut(&mut |n| n.selector = selectors.next().expect("one per node"));
        Ok(built)
    }

    /// The node selectors, by identity: what tells whether a refresh changed any.
    pub fn selector_identities(&self) -> Vec<usize> {
        let mut ids = Vec::new();
        self.root.visit(&mut |n| {
            ids.push(n.selector.as_ref().map_or(0, |s| Arc::as_ptr(s) as usize));
        });
        ids
    }

    /// Save every tier the node selectors keep for opens (see `saved_tier`) not saved yet to
    /// one new selector file, numbered from `next_file` (see `selector_file`); nothing if every
    /// one is. On failure no tier is marked saved and the file is removed. Returns whether
    /// there was anything to save.
    pub fn save_selectors(
        &self,
        dir: &std::path::Path,
        next_file: &std::sync::atomic::AtomicU64,
        counters: &Arc<Counters>,
    ) -> Result<bool> {
        let mut unsaved: HashMap<*const SavedTier, &Arc<SavedTier>> = HashMap::new();
        self.root.visit(&mut |n| {
            for t in n.selector.iter().flat_map(|s| &s.persisted) {
                if t.unsaved() {
                    unsaved.entry(Arc::as_ptr(t)).or_insert(t);
                }
            }
        });
        if unsaved.is_empty() {
            return Ok(false);
        }
        let id = next_file.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut w = selector_file::Writer::create(dir, id, counters.clone())?;
        let mut saved = Vec::with_capacity(unsaved.len());
        for t in unsaved.into_values() {
            if let Some(at) = t.with_unsaved_body(|body| w.append(body)) {
                saved.push((t, at?));
            }
        }
        w.finish()?;
        // A tier saved anew (its record was damaged) leaves its old file, which goes once no
        // tier of the tree is in it.
        let mut replaced = Vec::new();
        for (t, s) in saved {
            replaced.extend(t.mark_saved(s));
        }
        let live = self.selector_files();
        for old in replaced {
            if !live.contains_key(&old.file.id()) {
                old.file.remove_when_unused();
            }
        }
        Ok(true)
    }

    /// The selector files holding a tier of this tree, by id.
    pub fn selector_files(&self) -> HashMap<u64, Arc<SelectorFile>> {
        let mut files = HashMap::new();
        self.root.visit(&mut |n| {
            for t in n.selector.iter().flat_map(|s| &s.persisted) {
                if let Some(s) = t.saved() {
                    files.entry(s.file.id()).or_insert(s.file);
                }
            }
        });
        files
    }

    /// Which nodes' selectors go to disk so that the rest fit in `allowance` bytes (`None`:
    /// no limit), and how much of each may stay in memory (its residue; see `Place::Disk`):
    /// leaves only, as every read of a key crosses its internal nodes, biggest first — but
    /// those already on disk first of all, so that a node does not go back and forth as
    /// sizes shift between spills. Where every leaf on disk still leaves too much, they keep
    /// a tighter residue. Judged by estimates, before any selector is built, so that an open
    /// under a small budget never holds them all in memory.
    fn place_selectors(
        nodes: &[&Node],
        params: SelectorParams,
        allowance: Option<u64>,
    ) -> Vec<Option<u64>> {
        let mut on_disk = vec![None; nodes.len()];
        let Some(allowance) = allowance else {
            return on_disk;
        };
        let sizes: Vec<u64> = nodes
            .iter()
            .map(|n| Selector::estimate(n, params))
            .collect();
        let total: u64 = sizes.iter().sum();
        let mut leaves: Vec<usize> = (0..nodes.len()).filter(|&i| nodes[i].is_leaf()).collect();
        let there = |i: usize| nodes[i].selector.as_ref().is_some_and(|s| s.on_disk());
        leaves.sort_by_key(|&i| std::cmp::Reverse((there(i), sizes[i])));
        for residue in [DISK_RESIDUE, TIGHT_DISK_RESIDUE] {
            on_disk.fill(None);
            let mut left = total;
            for &i in &leaves {
                if left <= allowance {
                    break;
                }
                on_disk[i] = Some(residue);
                // Lists added since its tier went to disk stay in memory, up to `1 / residue`
                // as many entries (see `Selector::settle_on_disk`): count the worst.
                left -= sizes[i] - sizes[i] / residue;
            }
            if left <= allowance {
                break;
            }
        }
        on_disk
    }

    /// Entries and bytes of memory of the node selectors (tiers shared between nodes count
    /// once), and how many tiers.
    pub fn selector_memory(&self) -> (u64, u64, u64) {
        let mut tiers = HashMap::new();
        self.root.visit(&mut |n| {
            if let Some(s) = &n.selector {
                tiers.extend(s.tiers());
            }
        });
        let (entries, bytes) = tiers
            .values()
            .fold((0, 0), |(e, b), &(te, tb)| (e + te, b + tb as u64));
        (entries, bytes, tiers.len() as u64)
    }

    /// Saved selector tiers not read yet (see `preload`), once each.
    fn selector_tiers_unread(&self) -> u64 {
        let mut unread = HashSet::new();
        self.visit_saved_tiers(|t, u| {
            if !u.is_read() {
                unread.insert(Arc::as_ptr(t));
            }
        });
        unread.len() as u64
    }

    /// Call `f` on each tier of saved selector tiers an open left to read or merge (see
    /// `unread_tier`), as often as nodes share it.
    fn visit_saved_tiers(&self, mut f: impl FnMut(&Arc<selector::Tier>, &unread_tier::Unread)) {
        self.root.visit(&mut |n| {
            for t in n.selector.iter().flat_map(|s| &s.tiers) {
                if let Some(u) = t.unread_part().filter(|u| !u.is_merged()) {
                    f(t, u);
                }
            }
        });
    }

    /// Every list file some node refers to, once each (views share files), by id.
    pub fn files(&self) -> HashMap<u64, &Arc<ListFile>> {
        let mut files = HashMap::new();
        self.root.visit(&mut |n| {
            for l in &n.lists {
                files.insert(l.file.id(), &l.file);
            }
        });
        files
    }

    /// Bytes of every list file the tree refers to: what it takes on disk.
    pub fn bytes(&self) -> u64 {
        self.files().values().map(|f| f.size()).sum()
    }

    /// Whether any list holds values that expire or changes of expiry (see `list::expiry`).
    pub fn holds_expiry(&self) -> bool {
        self.files().values().any(|f| f.expiry().holds_expiry)
    }

    /// Whether records may have died in place — expired, or under a range delete — so that a
    /// spill sweeps the tree for nodes to collect (see `sweep`).
    pub fn may_hold_dead(&self) -> bool {
        self.files()
            .values()
            .any(|f| f.expiry().holds_expiry || !f.ranges().is_empty())
    }

    /// Whether upkeep may find work in the tree (see `upkeep`): a node at its capacity, a
    /// piece of a leaf owed its rewrite, a selector on disk whose tier a spill may have left
    /// to rewrite, or one whose tier merges a spill held back (see `selector::Merges`: left
    /// undone, they keep their selector files on disk and fall to the next open). Spared the
    /// others, a store of a thousand keyspaces does not rebuild
    /// a thousand trees after every spill.
    pub fn may_need_upkeep(&self, node_size: usize, fast_split_ratio: u32) -> bool {
        let mut found = false;
        self.root.visit(&mut |n| {
            found |= n.bytes() >= node_size as u64
                || n.owes_rewrite(fast_split_ratio)
                || n.selector
                    .as_ref()
                    .is_some_and(|s| s.on_disk() || s.merges_due());
        });
        found
    }

    /// Ids of every list file some node refers to.
    pub fn live_files(&self) -> BTreeSet<u64> {
        self.files().into_keys().collect()
    }

    /// Memory held by the filters, page indexes and sketches of the tree's list files.
    pub fn list_metadata_memory(&self) -> u64 {
        self.files()
            .values()
            .map(|f| f.metadata_memory() as u64)
            .sum()
    }

    /// Every list view's part of its sketch, ancestors before descendants and newest first
    /// within a node: the order in which a key's records go from newest to oldest. `None` if
    /// a list has no sketch (written before format 5). With `read`, every list file not read
    /// yet is read (see `list::file`); without, those are left out.
    pub fn sketch_views(&self, order: KeyOrder, read: bool) -> Result<Option<Vec<View<'_>>>> {
        let mut views = Vec::new();
        let mut unsketched = false;
        let mut failed = None;
        let hashed = order == KeyOrder::Hashed;
        self.root.visit(&mut |n| {
            let hashes = match (&n.span.hi, hashed) {
                (_, false) => 0..=u64::MAX,
                (Some(hi), true) => n.span.lo.route..=hi.route,
                (None, true) => n.span.lo.route..=u64::MAX,
            };
            for l in n.lists.iter().filter(|l| read || l.file.is_read()) {
                match l.file.sketch() {
                    Ok(Some(sketch)) => views.push(View {
                        sketch,
                        pages: l.start..l.end,
                        hashes: hashes.clone(),
                    }),
                    Ok(None) => unsketched = true,
                    Err(e) => {
                        failed.get_or_insert(e);
                    }
                }
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok((!unsketched).then_some(views)),
        }
    }

    /// Fill in the shape and memory figures of `stats`.
    pub fn describe(&self, order: KeyOrder, stats: &mut Stats) {
        // Figures add up over the trees of a store's keyspaces; the height is the tallest.
        stats.height = stats.height.max(self.root.height() - 1);
        self.root.visit(&mut |n| {
            if n.is_leaf() {
                stats.leaves += 1;
            } else {
                stats.internal_nodes += 1;
            }
            stats.lists += n.lists.len() as u64;
            stats.fullest_node_bytes = stats.fullest_node_bytes.max(n.bytes());
        });
        stats.internal_nodes -= 1; // the root is the buffer, counted apart
        let files = self.files();
        stats.files += files.len() as u64;
        for f in files.values() {
            stats.disk_records += f.records();
            stats.disk_bytes += f.size();
            stats.filter_bytes += f.filter_memory() as u64;
            stats.index_bytes += f.index_memory() as u64;
            stats.sketch_bytes += f.sketch_memory() as u64;
            if !f.is_read() {
                stats.unread_list_files += 1;
                stats.unread_list_bytes += f.metadata_memory() as u64;
            }
        }
        // Of the lists read: reading the others here would take seconds of a cold store's disk.
        let views = self
            .sketch_views(order, false)
            .ok()
            .flatten()
            .unwrap_or_default();
        if let Some(e) = crate::list::sketch::union(views.into_iter()) {
            stats.live_keys += e.live.round() as u64;
            stats.live_bytes += e.live_bytes.round() as u64;
        }
        let (entries, bytes, tiers) = self.selector_memory();
        stats.selector_entries += entries;
        stats.selector_bytes += bytes;
        stats.selector_tiers += tiers;
        stats.selector_tiers_unread += self.selector_tiers_unread();
    }

    /// Check the structural invariants; `Err` names the first broken one.
    pub fn check(&self, fan_out: usize) -> Result<(), String> {
        let root = &self.root;
        if root.is_leaf() || root.span != Span::all() {
            return Err("the root must have children and cover every position".into());
        }
        root.check(fan_out, true)
    }
}

impl Default for Tree {
    fn default() -> Self {
        Tree::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rejects_a_childless_or_partial_root() {
        use crate::order::Pivot;
        let span = |lo: u64, hi: Option<u64>| {
            Span::new(Pivot::new(lo, b""), hi.map(|h| Pivot::new(h, b"")))
        };
        assert!(Tree::new().check(4).is_ok());
        let childless = Tree {
            root: Node::internal(Span::all(), vec![]),
        };
        assert!(childless.check(4).is_err());
        let partial = Tree {
            root: Node::internal(span(0, Some(10)), vec![Node::leaf(span(0, Some(10)))]),
        };
        assert!(partial.check(4).is_err());
        let gap = Tree {
            root: Node::internal(
                Span::all(),
                vec![Node::leaf(span(0, Some(10))), Node::leaf(span(12, None))],
            ),
        };
        assert!(gap.check(4).is_err());
        let whole = Tree {
            root: Node::internal(
                Span::all(),
                vec![Node::leaf(span(0, Some(10))), Node::leaf(span(10, None))],
            ),
        };
        assert!(whole.check(4).is_ok());
    }

    /// Under a budget, the biggest leaves' selectors go to disk, keeping a quarter of their
    /// size in memory at most; where even that is too much, all of them keep a sixteenth.
    #[test]
    fn selectors_leave_memory_biggest_leaf_first_then_keep_less() {
        use crate::list::{hashed_test_list, Handles, ListRef};

        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(64, counters.clone()));
        let leaf = |id: u64, records: u64| {
            let shape = (1 << 20, 2);
            let (file, _) =
                hashed_test_list(dir.path(), id, records, 4096, shape, &counters, &handles);
            let mut node = Node::leaf(Span::all());
            node.lists.push(ListRef::new(file, Span::all()));
            node
        };
        let leaves = [leaf(1, 1000), leaf(2, 8000), leaf(3, 4000)];
        let nodes: Vec<&Node> = leaves.iter().collect();
        let params = SelectorParams {
            r: 7,
            node_size: 1 << 20,
        };
        let sizes: Vec<u64> = nodes
            .iter()
            .map(|n| Selector::estimate(n, params))
            .collect();
        let total: u64 = sizes.iter().sum();
        let place = |allowance| Tree::place_selectors(&nodes, params, Some(allowance));
        assert_eq!(place(total), vec![None, None, None]);
        assert_eq!(Tree::place_selectors(&nodes, params, None), vec![None; 3]);
        // Room for all but most of the biggest.
        let room = total - sizes[1] / 2;
        assert_eq!(place(room), vec![None, Some(DISK_RESIDUE), None]);
        // Less room than a quarter of each: a sixteenth of the two biggest and the smallest
        // whole fit; with room for a sixteenth of each only, all three go.
        let quarters: u64 = sizes.iter().map(|s| s / DISK_RESIDUE).sum();
        let sixteenths: u64 = sizes.iter().map(|s| s / TIGHT_DISK_RESIDUE).sum();
        let tight = Some(TIGHT_DISK_RESIDUE);
        assert_eq!(place(quarters - 1), vec![None, tight, tight]);
        assert_eq!(place(sixteenths), vec![tight; 3]);
    }
}
