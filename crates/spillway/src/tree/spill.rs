//! Spills (WB-tree §3.2.1): records move one level down by *appending* a new list to each
//! child — no reading or merging of the child's older data, which is what makes the WB tree
//! cheaper to write than an LSM tree's compactions.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::rewrite::{collapse_lists, Rewrite};
use super::{Node, Tree};
use crate::buffer::SortedBuffer;
use crate::error::Result;
use crate::list::ranges::RangeSet;
use crate::list::{Handles, ListFile, ListRef, ListWriter};
use crate::options::Options;
use crate::order::Span;
use crate::record::Op;
use crate::stats::Counters;
use crate::upsert::operator::Operator;

/// Everything a spill or split needs to create files, and a record of what it created. Its
/// methods are grouped by operation, one file each: `spill.rs` (a buffer or a full internal
/// node down one level, and settling what overfilled), `split.rs` (fast- and slow-splits of
/// a full leaf), `compact.rs` (a node's newest lists merged into one); `rewrite.rs` reads a
/// node's lists as one collapsed stream for all three.
pub struct Spiller<'a> {
    pub dir: &'a Path,
    pub opts: &'a Options,
    pub counters: &'a Arc<Counters>,
    /// Where the new lists' descriptors go once written.
    pub handles: &'a Arc<Handles>,
    /// Shared with the writer, which numbers logs from the same sequence.
    pub next_file: &'a AtomicU64,
    /// Ids of every list file written, so that a failed operation can remove them and a
    /// successful one can collect those already superseded.
    pub created: Vec<u64>,
    /// No message above the nodes this spill rewrites was written before this time (ms), so a
    /// value that expired by then is gone for every write still to reach it: where the spill
    /// meets it, it is deleted (see `Stack::collapse`). A spill rewrites a node only once all
    /// of the node's ancestors have spilled into it and are empty (or the root, which holds
    /// no lists), so what lies above is the root buffer written since the freeze — every
    /// message of which is stamped no earlier than the freeze (see `WriterState::stamp`).
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

    /// Spill the sorted root buffer into the tree, then settle every node it overfilled and
    /// grow the tree by a level while the root has more children than the fan-out allows.
    pub fn spill_buffer(&mut self, tree: &mut Tree, records: &SortedBuffer<'_>) -> Result<()> {
        Counters::bump(&self.counters.root_spills);
        let mut parts = Partitioner::new(&tree.root).carrying(records.ranges(), self.ordered());
        for (route, rec) in records.iter() {
            parts.add(self, route, rec.key, rec.op)?;
        }
        parts.finish(self, &mut tree.root)?;
        self.settle(&mut tree.root)?;
        self.grow_root(tree);
        Ok(())
    }

    /// Grow the tree by a level while the root has more children than the fan-out allows.
    pub fn grow_root(&mut self, tree: &mut Tree) {
        while tree.root.children.len() > self.opts.fan_out {
            let root = std::mem::replace(&mut tree.root, Node::leaf(Span::all()));
            tree.root = Node::internal(Span::all(), self.split_internal(root));
        }
    }

    /// After `node`'s children received lists: spill every full internal child, split every
    /// full leaf, collect every child made mostly of garbage or expired data (`Node::mostly_dead`), merge
    /// lists where a child holds too many (see `compact`), and split every child left with
    /// more children than the fan-out.
    pub fn settle(&mut self, node: &mut Node) -> Result<()> {
        let capacity = self.opts.node_size as u64;
        let mut settled = Vec::with_capacity(node.children.len() + 1);
        for mut child in std::mem::take(&mut node.children) {
            if child.is_leaf() {
                if self.left_to_sweep(&child) {
                    settled.push(child);
                } else if child.bytes() >= capacity {
                    settled.extend(self.split_leaf(child)?);
                } else if child.mostly_dead(self.horizon) {
                    Counters::bump(&self.counters.collections);
                    settled.extend(self.slow_split(child)?);
                } else {
                    self.bound_lists(&mut child)?;
                    settled.push(child);
                }
                continue;
            }
            if child.bytes() >= capacity {
                self.spill_node(&mut child)?;
            } else if child.mostly_dead(self.horizon) {
                Counters::bump(&self.counters.collections);
                self.spill_node(&mut child)?;
            } else {
                self.bound_lists(&mut child)?;
            }
            if child.children.len() > self.opts.fan_out {
                settled.extend(self.split_internal(child));
            } else {
                settled.push(child);
            }
        }
        node.children = settled;
        Ok(())
    }

    /// Whether to leave a leaf that has mostly expired to the sweep that follows every spill
    /// (see `tree::sweep`), full or not: rewritten there, a step at a time, its new lists and
    /// its old ones are on disk together for one step, not for the whole spill. When keys
    /// expire at a steady rate, many leaves cross the threshold in the same spill. A leaf
    /// that grew to twice a node is split here all the same.
    fn left_to_sweep(&self, leaf: &Node) -> bool {
        leaf.bytes() < 2 * self.opts.node_size as u64
            && leaf.expired_fraction(self.horizon) >= leaf.dead_threshold()
    }

    /// Merge a full internal node's lists (collapsing), append the result to its children as
    /// one new list each, and settle them. The node is empty afterwards.
    pub(super) fn spill_node(&mut self, node: &mut Node) -> Result<()> {
        Counters::bump(&self.counters.node_spills);
        let lists = std::mem::take(&mut node.lists);
        let ranges = carried_ranges(&lists, self.ordered());
        let mut parts = Partitioner::new(node).carrying(ranges, self.ordered());
        let operator = self.opts.operator();
        let counters = self.counters.clone();
        let how = self.rewrite(false, operator.as_ref(), &counters);
        collapse_lists(&lists, &how, |route, key, op| {
            parts.add(self, route, key, op)
        })?;
        parts.finish(self, node)?;
        self.settle(node)
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

/// Cuts a sorted stream of records into one new list per child of a node. Positions arrive in
/// order, so each child's list is written in turn and only one file is open at a time.
pub struct Partitioner {
    /// Range deletes handed down with the records: each child's new list carries those that
    /// meet its span, and a child that gets no record gets a list of them alone.
    ranges: RangeSet,
    ordered: bool,
    bounds: Vec<Span>,
    /// What each child's new list is written for.
    shapes: Vec<Shape>,
    child: usize,
    writer: Option<ListWriter>,
    done: Vec<(usize, Arc<ListFile>)>,
}

impl Partitioner {
    pub fn new(node: &Node) -> Partitioner {
        Partitioner {
            ranges: RangeSet::default(),
            ordered: false,
            bounds: node.children.iter().map(|c| c.span.clone()).collect(),
            shapes: node.children.iter().map(Shape::of).collect(),
            child: 0,
            writer: None,
            done: Vec::new(),
        }
    }

    /// The partitioner handing `ranges` down too, of a keyspace in `ordered` key order.
    pub fn carrying(mut self, ranges: RangeSet, ordered: bool) -> Partitioner {
        self.ranges = ranges;
        self.ordered = ordered;
        self
    }

    pub fn add(&mut self, sp: &mut Spiller<'_>, route: u64, key: &[u8], op: Op<'_>) -> Result<()> {
        if self.bounds[self.child].is_above((route, key)) {
            self.close(self.child)?;
            while self.bounds[self.child].is_above((route, key)) {
                self.child += 1;
            }
        }
        if self.writer.is_none() {
            self.writer = Some(sp.new_list(self.shapes[self.child])?);
        }
        self.writer
            .as_mut()
            .expect("just opened")
            .add(route, key, op)
    }

    fn close(&mut self, child: usize) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            if !self.ranges.is_empty() {
                w.add_ranges(&self.ranges.meeting(&self.bounds[child], self.ordered));
            }
            self.done.push((child, w.finish()?));
        }
        Ok(())
    }

    /// Give each child its new list, newest first.
    pub fn finish(mut self, sp: &mut Spiller<'_>, node: &mut Node) -> Result<()> {
        self.close(self.child)?;
        if !self.ranges.is_empty() {
            for child in 0..self.bounds.len() {
                let ranges = self.ranges.meeting(&self.bounds[child], self.ordered);
                if ranges.is_empty() || self.done.iter().any(|d| d.0 == child) {
                    continue;
                }
                let mut w = sp.new_list(self.shapes[child])?;
                w.add_ranges(&ranges);
                self.done.push((child, w.finish()?));
            }
        }
        for (i, file) in self.done {
            let child = &mut node.children[i];
            let view = ListRef::new(file, child.span.clone());
            child.lists.insert(0, view);
        }
        Ok(())
    }
}
