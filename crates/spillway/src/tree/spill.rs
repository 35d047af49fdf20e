//! Spills (WB-tree §3.2.1): records move one level down by *appending* a new list to each
//! child — no reading or merging of the child's older data, which is what makes the WB tree
//! cheaper to write than an LSM tree's compactions.
//!
//! Below the node that spills, children are independent: each child's share of the records
//! (a range of the sorted buffer, or of its parent's lists narrowed to its span) is written
//! as its list, and the child then spills or splits in turn, touching nothing of its
//! siblings. So a spill hands its children to the cores it may use (`Options::spill_threads`,
//! TurtleKV's parallel checkpoint merges), and writes the same lists on any number of them.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::rewrite::{collapse_lists, Rewrite};
use super::split::narrow_all;
use super::{Node, Tree};
use crate::buffer::SortedBuffer;
use crate::error::Result;
use crate::io::PendingSync;
use crate::list::ranges::RangeSet;
use crate::list::{Handles, ListFile, ListRef, ListWriter};
use crate::options::Options;
use crate::order::Span;
use crate::record::Op;
use crate::stats::{Counters, Written};
use crate::upsert::operator::Operator;
use crate::util::cores::Cores;

/// The most finished lists a spill leaves unsynced before syncing them — fewer where the
/// process may open few files: each holds a descriptor until its fsync, and the spill's
/// threads together keep no more than the cache of open list files does (`Spiller::defer`).
const MAX_UNSYNCED: usize = 256;
/// fsyncs of a spill's lists in flight at once: enough for the file system's journal to
/// commit them together (they wait on the device, not the CPU).
const SYNC_THREADS: usize = 8;

/// Everything a spill or split needs to create files, and a record of what it created. Its
/// methods are grouped by operation, one file each: `spill.rs` (a buffer or a full internal
/// node down one level, and settling what overfilled), `upkeep.rs` (the nodes a spill filled,
/// settled after it), `split.rs` (fast- and slow-splits of a full leaf), `compact.rs` (a
/// node's newest lists merged into one), `sweep.rs` (dead data no spill reaches);
/// `rewrite.rs` reads a node's lists as one collapsed stream for them all.
pub struct Spiller<'a> {
    pub dir: &'a Path,
    pub opts: &'a Options,
    pub counters: &'a Arc<Counters>,
    /// Where the new lists' descriptors go once written.
    pub handles: &'a Arc<Handles>,
    /// Shared with the writer, which numbers logs from the same sequence.
    pub next_file: &'a AtomicU64,
    /// The cores the spill may use: children's shares of it are independent (see
    /// `by_child`).
    pub cores: &'a Cores,
    /// Ids of every list file written, so that a failed operation can remove them and a
    /// successful one can collect those already superseded.
    pub created: Vec<u64>,
    /// The lists written and not yet fsynced: synced together before the operation
    /// publishes (see `io::sync_together`), or as soon as [`MAX_UNSYNCED`] wait.
    pub unsynced: Vec<PendingSync>,
    /// No message above the nodes this spill rewrites was written before this time (ms), so a
    /// value that expired by then is gone for every write still to reach it: where the spill
    /// meets it, it is deleted (see `Stack::collapse`). A spill rewrites a node only once all
    /// of the node's ancestors have spilled into it and are empty (or the root, which holds
    /// no lists), so what lies above is the root buffer written since the freeze — every
    /// message of which is stamped no earlier than the freeze (see `WriterState::stamp`).
    /// Upkeep and sweeps rewrite nodes whose ancestors may hold lists: they lower it to the
    /// oldest message on the path as they go down.
    pub horizon: u64,
    /// Range deletes above the node being rewritten (a sweep sets them as it goes down):
    /// what they cover is dropped (see `Rewrite::above`).
    pub above: RangeSet,
    /// List files numbered from here were written by this spill. A sweep does not collect
    /// a node of such lists alone: they were written with what it knows now, and rewriting
    /// them again would free nothing.
    pub fresh_from: u64,
}

impl<'a> Spiller<'a> {
    /// How this spill rewrites lists (see `rewrite`): `bottom` if nothing older lies below.
    pub fn rewrite<'b>(
        &self,
        bottom: bool,
        operator: Option<&'b Operator>,
        counters: &'b Counters,
    ) -> Rewrite<'b>
    where
        'a: 'b,
    {
        Rewrite {
            bottom,
            horizon: self.horizon,
            operator,
            filter: self.opts.compaction_filter.as_deref(),
            counters,
            above: self.above.clone(),
        }
    }

    /// Whether the keyspace is ordered (its range deletes are of key ranges).
    pub fn ordered(&self) -> bool {
        self.opts.order() == crate::order::KeyOrder::Ordered
    }

    /// A writer of a new list for a node of this `shape` (see [`Shape::headroom`]).
    pub fn new_list(&mut self, shape: Shape) -> Result<ListWriter> {
        let id = self.next_file.fetch_add(1, Relaxed);
        self.created.push(id);
        let headroom = shape.headroom(self.opts.fast_split_ratio);
        let writer = ListWriter::create(
            self.dir,
            id,
            self.opts.order(),
            self.opts.page_size,
            self.opts.filter_bits_per_key,
            self.counters.clone(),
            self.handles.clone(),
        )?;
        Ok(writer.for_node(self.opts.node_size, headroom))
    }

    /// Finish list `w`, written for `why`, its fsync left to [`sync_lists`](Self::sync_lists).
    pub fn finish_list(&mut self, w: ListWriter, why: Written) -> Result<Arc<ListFile>> {
        let (file, pending) = w.finish_unsynced()?;
        self.counters.add_list_write(why, file.size());
        self.defer(vec![pending])?;
        Ok(file)
    }

    /// Keep `pending` for [`sync_lists`](Self::sync_lists), syncing at once if too many
    /// wait (each holds a descriptor: under a low limit on open files, 256 of them made the
    /// spill fail with "too many open files").
    fn defer(&mut self, pending: Vec<PendingSync>) -> Result<()> {
        self.unsynced.extend(pending);
        if self.unsynced.len() >= self.sync_room() {
            self.sync_lists()?;
        }
        Ok(())
    }

    /// How many finished lists may wait for their fsync: [`MAX_UNSYNCED`], or under a low
    /// limit on open files the cache's share of each of the spill's threads (together no
    /// more descriptors than the cache of open list files holds).
    fn sync_room(&self) -> usize {
        let room = (self.handles.capacity() / self.cores.threads()).max(1);
        MAX_UNSYNCED.min(room)
    }

    /// fsync every list written and not yet synced, together (see `io::sync_together`): the
    /// operation's lists must be durable before a manifest names them.
    pub fn sync_lists(&mut self) -> Result<()> {
        let pending = std::mem::take(&mut self.unsynced);
        crate::io::sync_together(&pending, SYNC_THREADS)
    }

    /// Spill the sorted root buffer into the tree — each child's share appended to it as a
    /// new list, then the child settled — and grow the tree by a level while the root has
    /// more children than the fan-out allows.
    pub fn spill_buffer(&mut self, tree: &mut Tree, records: &SortedBuffer<'_>) -> Result<()> {
        Counters::bump(&self.counters.root_spills);
        let ranges = records.ranges();
        let spans: Vec<&Span> = tree.root.children.iter().map(|c| &c.span).collect();
        let shares = records.shares(&spans);
        let children = std::mem::take(&mut tree.root.children);
        let settled = self.by_child(
            children.into_iter().zip(shares).collect(),
            |sp, (mut child, share)| {
                let mut list = NewList::for_node(&child, Written::RootSpill);
                for (route, rec) in records.iter_share(share) {
                    list.add(sp, route, rec.key, rec.op)?;
                }
                list.finish(sp, &mut child, &ranges)?;
                sp.settle(child)
            },
        )?;
        tree.root.children = settled.into_iter().flatten().collect();
        self.grow_root(tree)
    }

    /// Grow the tree by a level while the root has more children than the fan-out allows.
    pub fn grow_root(&mut self, tree: &mut Tree) -> Result<()> {
        while tree.root.children.len() > self.opts.fan_out {
            let root = std::mem::replace(&mut tree.root, Node::leaf(Span::all()));
            tree.root = Node::internal(Span::all(), self.split_internal(root)?);
        }
        Ok(())
    }

    /// A child that just received a list, as it is to stay: a full internal node spilled, a
    /// full leaf split, a node made mostly of garbage or expired data collected
    /// (`Node::mostly_dead`), lists merged where it holds too many (see `compact`), and an
    /// internal node left with more children than the fan-out split.
    ///
    /// A node that filled but holds less than twice its capacity is left to the upkeep steps
    /// that follow the spill (see `tree::upkeep`): under evenly spread keys every node of a
    /// level fills in the same spill, and settling them all there kept writers waiting for
    /// minutes at a billion records.
    pub fn settle(&mut self, mut child: Node) -> Result<Vec<Node>> {
        let capacity = self.opts.node_size as u64;
        if child.is_leaf() {
            return if self.left_to_sweep(&child) || self.left_to_upkeep(&child) {
                Ok(vec![child])
            } else if child.bytes() >= capacity {
                self.split_leaf(child)
            } else if child.mostly_dead(self.horizon)? {
                Counters::bump(&self.counters.collections);
                self.slow_split(child)
            } else {
                self.bound_lists(&mut child)?;
                Ok(vec![child])
            };
        }
        if self.left_to_upkeep(&child) {
            // Spilled by an upkeep step.
        } else if child.bytes() >= capacity {
            self.spill_node(&mut child)?;
        } else if child.mostly_dead(self.horizon)? {
            Counters::bump(&self.counters.collections);
            self.spill_node(&mut child)?;
        } else {
            self.bound_lists(&mut child)?;
        }
        self.within_fan_out(child)
    }

    /// Whether a node that filled is left to upkeep: it holds less than twice its capacity.
    /// Past that, the spill settles it itself — back-pressure when upkeep falls behind.
    pub(super) fn left_to_upkeep(&self, node: &Node) -> bool {
        let capacity = self.opts.node_size as u64;
        (capacity..2 * capacity).contains(&node.bytes())
    }

    /// Whether to leave a leaf that has mostly expired to the sweep that follows every spill
    /// (see `tree::sweep`), full or not: rewritten there, a step at a time, its new lists and
    /// its old ones are on disk together for one step, not for the whole spill. When keys
    /// expire at a steady rate, many leaves cross the threshold in the same spill. A leaf
    /// that grew to twice a node is split here all the same.
    pub(super) fn left_to_sweep(&self, leaf: &Node) -> bool {
        leaf.bytes() < 2 * self.opts.node_size as u64
            && leaf.expired_fraction(self.horizon) >= leaf.dead_threshold()
    }

    /// Merge a full internal node's lists (collapsing), append the result to its children as
    /// one new list each, and settle them. The node is empty afterwards. Each child merges its
    /// own part of the lists (views narrowed to its span: no data moves), so children go on
    /// the cores the spill may use, and their own spills nest.
    pub(super) fn spill_node(&mut self, node: &mut Node) -> Result<()> {
        let whole = self.spill_children(node, &crate::tree::never)?;
        debug_assert!(whole);
        Ok(())
    }

    /// [`spill_node`](Self::spill_node) a group of children at a time (one per core the
    /// spill may use), asking `stop` after each group whether to leave the rest for later;
    /// whether the node was spilled whole. Left part-way, the node keeps its lists narrowed
    /// to the children not yet spilled — views, as a fast-split's are — and the children
    /// spilled hold their records: each record is in one place on its path, and the node
    /// counts only the bytes it still has to spill. An upkeep step so lasts a group's
    /// spill, not a whole node's (64 MiB merged and written), past the moment a writer needs
    /// the spill thread back.
    ///
    /// A node whose lists carry range deletes is spilled whole: a list's range deletes apply
    /// to everything below its view (see `carried_ranges`, `Rewrite::above`), and ranges are
    /// kept whole, not cut to a view — left narrowed, such a list would delete the newer
    /// records the spilled children hold in the part of a range outside its view.
    pub(super) fn spill_children(
        &mut self,
        node: &mut Node,
        stop: &dyn Fn() -> bool,
    ) -> Result<bool> {
        Counters::bump(&self.counters.node_spills);
        let lists = std::mem::take(&mut node.lists);
        let ranges = carried_ranges(&lists, self.ordered());
        let operator = self.opts.operator();
        let mut children = std::mem::take(&mut node.children).into_iter().peekable();
        let group = self.cores.threads().max(1);
        let may_stop = ranges.is_empty();
        loop {
            let part: Vec<Node> = children.by_ref().take(group).collect();
            let settled = self.by_child(part, |sp, mut child| {
                let views = narrow_all(&lists, &child.span)?;
                let counters = sp.counters.clone();
                let how = sp.rewrite(false, operator.as_ref(), &counters);
                let mut list = NewList::for_node(&child, Written::NodeSpill);
                collapse_lists(&views, &how, |route, key, op| list.add(sp, route, key, op))?;
                list.finish(sp, &mut child, &ranges)?;
                sp.settle(child)
            })?;
            node.children.extend(settled.into_iter().flatten());
            let Some(next) = children.peek() else {
                return Ok(true);
            };
            if may_stop && stop() {
                Counters::bump(&self.counters.partial_node_spills);
                let rest = Span::new(next.span.lo.clone(), node.span.hi.clone());
                node.lists = narrow_all(&lists, &rest)?;
                node.children.extend(children);
                return Ok(false);
            }
        }
    }

    /// Each child of `node` replaced by what `visit` makes of it, a level down the path as a
    /// sweep or upkeep goes: the horizon lowered to the oldest message of `node`'s lists (see
    /// [`horizon`](Self::horizon)), and `visit` given the range deletes above the children
    /// (`above`, the path's, and `node`'s own). On failure the children not yet visited
    /// stay: the tree being built is dropped, but whole.
    pub(super) fn each_child(
        &mut self,
        node: &mut Node,
        above: &RangeSet,
        mut visit: impl FnMut(&mut Self, Node, &RangeSet) -> Result<Vec<Node>>,
    ) -> Result<()> {
        let outer = self.horizon;
        self.horizon = outer.min(node.oldest_message());
        let mut above_children = above.clone();
        above_children.extend(&carried_ranges(&node.lists, self.ordered()));
        let mut kept = Vec::with_capacity(node.children.len());
        let mut children = std::mem::take(&mut node.children).into_iter();
        let result = children.by_ref().try_for_each(|child| {
            kept.extend(visit(self, child, &above_children)?);
            Ok(())
        });
        kept.extend(children);
        node.children = kept;
        self.horizon = outer;
        result
    }

    /// `work` with [`above`](Self::above) set to `ranges`: a leaf rewritten below them drops
    /// what they cover.
    pub(super) fn under<R>(&mut self, ranges: &RangeSet, work: impl FnOnce(&mut Self) -> R) -> R {
        self.above = ranges.clone();
        let done = work(self);
        self.above = RangeSet::default();
        done
    }

    /// A spiller for one child's share of this one's work: the same store, horizon and range
    /// deletes above, and a record of its own of the files it creates.
    fn fork(&self) -> Spiller<'a> {
        Spiller {
            dir: self.dir,
            opts: self.opts,
            counters: self.counters,
            handles: self.handles,
            next_file: self.next_file,
            cores: self.cores,
            created: Vec::new(),
            unsynced: Vec::new(),
            horizon: self.horizon,
            above: self.above.clone(),
            fresh_from: self.fresh_from,
        }
    }

    /// `work` on each of `items` (a child's share of a spill each) on the cores this spill
    /// may use, each with a spiller of its own: children are independent. The results come in
    /// the items' order; the files every item created join this spiller's, failed or not, so
    /// that a failure removes them all.
    fn by_child<T: Send, R: Send>(
        &mut self,
        items: Vec<T>,
        work: impl Fn(&mut Spiller<'a>, T) -> Result<R> + Sync,
    ) -> Result<Vec<R>> {
        // The lists the items finished wait here for their fsync, each holding a descriptor
        // — a spill into a root of 256 children finishes 256 — and are synced by the item
        // that takes them past the room.
        let (waiting, room) = (std::sync::Mutex::new(Vec::new()), self.sync_room());
        let done = self.cores.map(items, |item| {
            let mut sp = self.fork();
            let result = work(&mut sp, item);
            let due = {
                let mut waiting = crate::util::sync::lock(&waiting);
                waiting.append(&mut sp.unsynced);
                if waiting.len() >= room {
                    std::mem::take(&mut *waiting)
                } else {
                    Vec::new()
                }
            };
            let synced = crate::io::sync_together(&due, SYNC_THREADS);
            (sp.created, result.and_then(|r| synced.map(|()| r)))
        });
        let waiting = waiting.into_inner().unwrap_or_else(|e| e.into_inner());
        let deferred = self.defer(waiting);
        let mut out = Vec::with_capacity(done.len());
        let mut failed = deferred.err();
        for (created, result) in done {
            self.created.extend(created);
            match result {
                Ok(r) => out.push(r),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(out), Err)
    }
}

/// The range deletes `lists` carry, each list's those that meet its view, as one set.
pub fn carried_ranges(lists: &[ListRef], ordered: bool) -> RangeSet {
    let mut ranges = RangeSet::default();
    for l in lists.iter().filter(|l| !l.file.ranges().is_empty()) {
        ranges.extend(&l.file.ranges().meeting(&l.span, ordered));
    }
    ranges
}

/// What a new list needs to know of the node it is written for.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub leaf: bool,
    pub fast_splits: u32,
}

impl Shape {
    pub fn of(node: &Node) -> Shape {
        Shape {
            leaf: node.is_leaf(),
            fast_splits: node.fast_splits,
        }
    }

    /// Bits of precision a list's fingerprints keep beyond what its node calls for now (see
    /// `fingerprints`): they must stay fine enough for every node the list's views end up in.
    /// Each fast-split halves a leaf's span, and the half fills up again before the next; a
    /// leaf fast-splits `fast_split_ratio` times before a slow-split rewrites its lists. An
    /// internal node's lists all leave at its next spill, after one split at most.
    fn headroom(self, fast_split_ratio: u32) -> u32 {
        if self.leaf {
            fast_split_ratio.saturating_sub(self.fast_splits) + 1
        } else {
            2
        }
    }
}

/// A child's new list in a spill: opened at its first record, given the range deletes handed
/// down that meet the child's span (a child that gets no record gets a list of them alone),
/// and put first among the child's lists.
struct NewList {
    shape: Shape,
    why: Written,
    writer: Option<ListWriter>,
}

impl NewList {
    fn for_node(node: &Node, why: Written) -> NewList {
        NewList {
            shape: Shape::of(node),
            why,
            writer: None,
        }
    }

    fn add(&mut self, sp: &mut Spiller<'_>, route: u64, key: &[u8], op: Op<'_>) -> Result<()> {
        if self.writer.is_none() {
            self.writer = Some(sp.new_list(self.shape)?);
        }
        self.writer
            .as_mut()
            .expect("just opened")
            .add(route, key, op)
    }

    fn finish(mut self, sp: &mut Spiller<'_>, child: &mut Node, ranges: &RangeSet) -> Result<()> {
        let ranges = ranges.meeting(&child.span, sp.ordered());
        if self.writer.is_none() && !ranges.is_empty() {
            self.writer = Some(sp.new_list(self.shape)?);
        }
        if let Some(mut w) = self.writer {
            w.add_ranges(&ranges);
            child.lists.insert(
                0,
                ListRef::new(sp.finish_list(w, self.why)?, child.span.clone()),
            );
        }
        Ok(())
    }
}
