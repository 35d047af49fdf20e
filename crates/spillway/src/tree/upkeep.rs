//! Upkeep: settling the nodes that filled, a step at a time after the spill that filled them.
//!
//! A spill appends a list to each child of the node it empties; a child that fills spills or
//! splits in turn (WB-tree §3.2). Done inside the spill, that work grows with the tree under
//! evenly spread keys: every node of a level receives the same share of each spill, so they
//! all fill in the same one — at a billion records, one spill spilled 64 internal nodes and
//! split hundreds of leaves while the writer waited 94 s for it. So a spill settles only the
//! nodes that reach twice their capacity (`Spiller::left_to_upkeep`), and publishes; the
//! writer's buffer is then free to fill again. Upkeep steps follow, each settling the
//! fullest nodes — a full internal node spilled into its children, a full leaf split — up to
//! a budget of bytes, published before the next. A writer whose buffer fills meanwhile takes
//! the frozen buffer's room and asks the steps to stop (see `Inner::may_overfill`); what they
//! left, the next spill's upkeep takes on. Nodes filled in lockstep are thereby settled over
//! many spills, and their next fills no longer coincide.
//!
//! What a step may drop is bounded as in a sweep (see [`Spiller::horizon`]): a node settled
//! here may have ancestors that still hold messages for its keys, so the horizon goes down
//! with the oldest message on the path.

use super::spill::Spiller;
use super::{Node, Tree};
use crate::error::Result;
use crate::list::ranges::RangeSet;
use crate::stats::Counters;

impl Spiller<'_> {
    /// Settle the fullest due nodes of `tree` (see [`due`](Self::due)) until their bytes
    /// reach `budget`, or until `stop` says so (at least one is settled if any is due and
    /// `stop` does not hold at the start); whether any was. Lists numbered from
    /// `self.fresh_from` were written by this upkeep: a node of those alone is not due again
    /// in it.
    pub fn upkeep(
        &mut self,
        tree: &mut Tree,
        budget: u64,
        stop: &dyn Fn() -> bool,
    ) -> Result<bool> {
        let mut fullness = Vec::new();
        tree.root.visit(&mut |n| {
            if self.due(n) {
                fullness.push((self.fullness(n), n.bytes()));
            }
        });
        if fullness.is_empty() || stop() {
            return Ok(false);
        }
        // The fullest first: those are the nearest to being settled by a spill, where writers
        // would wait for them.
        fullness.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut taken = 0;
        let floor = fullness
            .iter()
            .find(|&&(_, bytes)| {
                taken += bytes;
                taken >= budget
            })
            .unwrap_or(fullness.last().expect("not empty"))
            .0;
        let mut step = Step {
            floor,
            left: budget,
            settled: false,
            stop,
        };
        self.upkeep_below(&mut tree.root, &RangeSet::default(), &mut step)?;
        self.grow_root(tree)?;
        Ok(step.settled)
    }

    /// The bytes one upkeep step may settle: a node's worth, or a 32nd of the tree if more
    /// (as a sweep step: its new lists and the old ones are on disk together until it is
    /// published).
    pub fn upkeep_budget(&self, tree: &Tree) -> u64 {
        self.sweep_budget(tree)
    }

    /// Whether `node` filled and an upkeep step would settle it: an internal node at its
    /// capacity, or a leaf at it that a split can make smaller (not one huge record alone)
    /// and that no sweep is to collect, or a piece of a leaf still owed its rewrite (see
    /// [`settle_leaf`](Self::settle_leaf)). A node whose lists this upkeep wrote is left to
    /// the next: a leaf a spill of this upkeep filled with a list from an empty start.
    fn due(&self, node: &Node) -> bool {
        if node.lists.iter().all(|l| l.file.id() >= self.fresh_from) {
            return false;
        }
        if node.owes_rewrite(self.opts.fast_split_ratio) {
            return true;
        }
        if node.bytes() < self.opts.node_size as u64 {
            return false;
        }
        if !node.is_leaf() {
            return true;
        }
        let unsplittable = matches!(&node.lists[..], [one] if one.end - one.start <= 1);
        !unsplittable && !self.left_to_sweep(node)
    }

    fn fullness(&self, node: &Node) -> f64 {
        node.bytes() as f64 / self.opts.node_size as f64
    }

    /// `above`: the range deletes of the lists on the path to `node`, it excluded.
    fn upkeep_below(&mut self, node: &mut Node, above: &RangeSet, step: &mut Step) -> Result<()> {
        self.each_child(node, above, |sp, mut child, above_children| {
            let settle = step.left > 0
                && sp.due(&child)
                && sp.fullness(&child) >= step.floor
                && !(step.stop)();
            if settle {
                Counters::bump(&sp.counters.upkeep_settles);
                step.left = step.left.saturating_sub(child.bytes());
                step.settled = true;
                return sp.settle_due(child, above_children, step.stop);
            }
            if !child.is_leaf() && step.left > 0 {
                sp.upkeep_below(&mut child, above_children, step)?;
            }
            sp.within_fan_out(child)
        })
    }

    /// A due node settled: a leaf split (see [`settle_leaf`](Self::settle_leaf)), an
    /// internal node spilled into its children (which are left to later steps where they
    /// filled) and split if it has too many of them. Either stops part-way once `stop`
    /// holds, a piece of its work done: a step lasts no longer than that piece past the
    /// moment a writer needs the spill thread.
    fn settle_due(
        &mut self,
        mut node: Node,
        above: &RangeSet,
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<Node>> {
        if node.is_leaf() {
            return self.under(above, |sp| sp.settle_leaf(node, stop));
        }
        self.spill_children(&mut node, stop)?;
        self.within_fan_out(node)
    }

    /// A due leaf split. One that is to be slow-split is first fast-split into pieces whose
    /// rewrites keep at most half a node each (see `Spiller::pieces`), each marked as owed
    /// its rewrite (`Node::owes_rewrite`), and the pieces are rewritten one at a time until
    /// `stop` holds; those left are due in the next steps. The leaves are those a slow-split
    /// makes (at most half full), but a step lasts the rewrite of a piece, not of the up to
    /// two nodes' worth a leaf left to upkeep holds.
    fn settle_leaf(&mut self, leaf: Node, stop: &dyn Fn() -> bool) -> Result<Vec<Node>> {
        if self.fast_splits_left(&leaf)? {
            return self.split_leaf(leaf);
        }
        let owed = leaf.owes_rewrite(self.opts.fast_split_ratio);
        let pieces = self.pieces(leaf)?;
        let counted = owed || pieces.len() > 1;
        let mut out = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.into_iter().enumerate() {
            if i > 0 && stop() {
                out.push(piece);
                continue;
            }
            if counted {
                Counters::bump(&self.counters.pieces_rewritten);
            }
            out.extend(self.slow_split(piece)?);
        }
        Ok(out)
    }
}

/// What an upkeep step settles: due nodes at least `floor` full, up to `left` bytes, until
/// `stop` holds.
struct Step<'s> {
    floor: f64,
    left: u64,
    settled: bool,
    stop: &'s dyn Fn() -> bool,
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Arc;

    use super::*;
    use crate::buffer::Buffer;
    use crate::list::Handles;
    use crate::options::Options;
    use crate::order::KeyOrder;
    use crate::record::Op;
    use crate::upsert::fold::Stack;
    use crate::util::cores::Cores;

    type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

    /// A tree spilled and upkept by hand, with the model of what it holds.
    struct Fixture {
        dir: tempfile::TempDir,
        opts: Options,
        counters: Arc<Counters>,
        handles: Arc<Handles>,
        next_file: AtomicU64,
        cores: Cores,
        tree: Tree,
        model: Model,
    }

    impl Fixture {
        fn new(order: KeyOrder, threads: usize) -> Fixture {
            let counters = Arc::new(Counters::default());
            Fixture {
                dir: tempfile::tempdir().unwrap(),
                opts: Options::default()
                    .key_order(order)
                    .node_size(16 << 10)
                    .fan_out(4)
                    .fast_split_ratio(1)
                    .page_size(256),
                handles: Arc::new(Handles::new(1000, None, counters.clone())),
                counters,
                next_file: AtomicU64::new(1),
                cores: Cores::new(threads),
                tree: Tree::new(),
                model: Model::new(),
            }
        }

        /// A spiller as a spill or an upkeep run makes one: lists written from now on are
        /// its own.
        fn spiller(&self) -> Spiller<'_> {
            Spiller {
                dir: self.dir.path(),
                opts: &self.opts,
                counters: &self.counters,
                handles: &self.handles,
                next_file: &self.next_file,
                cores: &self.cores,
                created: Vec::new(),
                unsynced: Vec::new(),
                horizon: 0,
                above: RangeSet::default(),
                fresh_from: self.next_file.load(Relaxed),
            }
        }

        /// A buffer of 200 writes (a tenth of them deletes; with `ranges`, in an ordered
        /// store, one in a hundred a range delete of up to 300 keys) spilled into the tree.
        fn spill(&mut self, rng: &mut u64, ranges: bool) {
            let order = self.opts.order();
            let mut buffer = Buffer::with_capacity(order, None, 0, 0);
            for _ in 0..200 {
                *rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = *rng >> 33;
                let key = format!("key{:06}", r % 20_000).into_bytes();
                if ranges && order == KeyOrder::Ordered && r % 100 == 1 {
                    let end = format!("key{:06}", r % 20_000 + r % 300).into_bytes();
                    buffer.put(&key, Op::DeleteRange { end: Some(&end) }, 0);
                    for (_, v) in self.model.range_mut(key..end) {
                        *v = None;
                    }
                } else if r.is_multiple_of(10) {
                    buffer.put(&key, Op::Delete, 0);
                    self.model.insert(key, None);
                } else {
                    let value = vec![b'a' + (r % 26) as u8; 20 + (r % 40) as usize];
                    buffer.put(&key, Op::Put(&value), 0);
                    self.model.insert(key, Some(value));
                }
            }
            let mut tree = self.tree.clone();
            let mut sp = self.spiller();
            sp.spill_buffer(&mut tree, &buffer.sorted()).unwrap();
            sp.sync_lists().unwrap();
            self.tree = tree;
        }

        /// One upkeep run whose `stop` holds from its `calls`-th question on; whether it
        /// settled anything.
        fn upkeep(&mut self, calls: usize) -> bool {
            let asked = Cell::new(0);
            let stop = || {
                asked.set(asked.get() + 1);
                asked.get() >= calls
            };
            let mut tree = self.tree.clone();
            let mut sp = self.spiller();
            let budget = sp.upkeep_budget(&tree);
            let settled = sp.upkeep(&mut tree, budget, &stop).unwrap();
            sp.sync_lists().unwrap();
            self.tree = tree;
            settled
        }

        /// Every key of the model reads back as the model has it, and the tree is whole.
        fn assert_reads(&self, what: &str) {
            self.tree.check(self.opts.fan_out).unwrap();
            let order = self.opts.order();
            for (key, want) in &self.model {
                let (route, hash) = (order.route(key), order.hash(order.route(key), key));
                let mut stack = Stack::default();
                self.tree
                    .get(None, route, key, hash, &self.counters, &mut stack)
                    .unwrap();
                let got = stack.resolve(key, None).unwrap().map(|(v, _)| v);
                assert_eq!(&got, want, "{what}: {:?}", String::from_utf8_lossy(key));
            }
        }

        fn nodes(&self, mut pick: impl FnMut(&Node) -> bool) -> usize {
            let mut n = 0;
            self.tree
                .root
                .visit(&mut |node| n += usize::from(pick(node)));
            n
        }
    }

    /// Upkeep stopped after every few questions leaves internal nodes spilled part-way (their
    /// lists narrowed to the children not yet spilled) and leaves in pieces owed their
    /// rewrite; the tree reads the same at every step, and upkeep run to its end afterwards
    /// settles all of it.
    fn stopped_upkeep_reads_back(order: KeyOrder, threads: usize) {
        let mut f = Fixture::new(order, threads);
        let ratio = f.opts.fast_split_ratio;
        // Only a spill left part-way makes a node's lists cover less than the node: splits
        // cut lists and nodes alike.
        let narrowed = |n: &Node| !n.is_leaf() && n.lists.iter().any(|l| l.span != n.span);
        let owed = |n: &Node| n.owes_rewrite(ratio);
        let (mut seen_narrowed, mut seen_owed) = (0, 0);
        let mut rng = 7u64;
        for round in 0..400 {
            // Range deletes now and then: a node whose lists carry them is spilled whole.
            f.spill(&mut rng, round % 20 == 0);
            let partial = f.counters.partial_node_spills.load(Relaxed);
            f.upkeep(1 + round % 4);
            if f.counters.partial_node_spills.load(Relaxed) > partial {
                seen_narrowed += 1;
                assert!(
                    f.nodes(narrowed) > 0,
                    "a node spilled part-way keeps all its lists"
                );
            }
            seen_owed += f.nodes(owed);
            if round % 50 == 49 {
                f.assert_reads("stopped");
            }
        }
        f.assert_reads("stopped");
        assert!(seen_narrowed > 0, "no node spill was left part-way");
        assert!(
            seen_owed > 0,
            "no piece of a leaf was left owed its rewrite"
        );
        assert!(f.counters.pieces_rewritten.load(Relaxed) > 0);
        while f.upkeep(usize::MAX) {}
        f.assert_reads("settled");
        assert_eq!(f.nodes(owed), 0, "a piece still owes its rewrite");
        let capacity = f.opts.node_size as u64;
        assert_eq!(
            f.nodes(|n| n.bytes() >= capacity),
            0,
            "a node is still full"
        );
    }

    #[test]
    fn stopped_upkeep_reads_back_hashed() {
        stopped_upkeep_reads_back(KeyOrder::Hashed, 1);
    }

    #[test]
    fn stopped_upkeep_reads_back_ordered_on_two_threads() {
        stopped_upkeep_reads_back(KeyOrder::Ordered, 2);
    }
}
