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
        self.grow_root(tree);
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
    /// and that no sweep is to collect. A node whose lists this upkeep wrote is left to the
    /// next: a leaf a spill of this upkeep filled with a list from an empty start.
    fn due(&self, node: &Node) -> bool {
        if node.bytes() < self.opts.node_size as u64
            || node.lists.iter().all(|l| l.file.id() >= self.fresh_from)
        {
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
                return sp.settle_due(child, above_children);
            }
            if !child.is_leaf() && step.left > 0 {
                sp.upkeep_below(&mut child, above_children, step)?;
            }
            Ok(sp.within_fan_out(child))
        })
    }

    /// A due node settled: a leaf split, an internal node spilled into its children (which
    /// are left to later steps where they filled) and split if it has too many of them.
    fn settle_due(&mut self, mut node: Node, above: &RangeSet) -> Result<Vec<Node>> {
        if node.is_leaf() {
            return self.under(above, |sp| sp.split_leaf(node));
        }
        self.spill_node(&mut node)?;
        Ok(self.within_fan_out(node))
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
