//! Sweeping expired data that no spill reaches: at every spill, each tree that holds expiring
//! records is walked for nodes that are mostly dead, and those are collected as a spill would
//! collect them (a leaf slow-split, an internal node spilled). A spill only visits the nodes
//! on the paths it writes; a leaf nothing new is written to — yesterday's sessions, keys
//! written in time order — would otherwise keep its expired data for ever.
//!
//! A sweep goes by steps, each collecting up to a budget of bytes and published (manifest,
//! then the replaced lists deleted) before the next: a spill that finds many leaves dead at
//! once — keys that expire at a steady rate age every leaf alike — would otherwise hold the
//! old and new lists of all of them until it ended. For the same reason a spill leaves the
//! leaves it finds mostly expired to the sweep (`Spiller::settle`).
//!
//! What a node's collection may drop is bounded by the messages above it (see
//! [`Spiller::horizon`]): the root buffer's, written since the freeze, and those of the lists
//! on its path, which the sweep takes into account as it goes down (`Node::oldest_message`).
//!
//! Range deletes kill too: a leaf whose records a range delete above it covers (in the lists
//! on its path, or in its own newer lists) is dead by those records' bytes, counted by pages
//! from the lists' in-memory indexes — so the space a range delete frees comes back at the
//! next spill, even in leaves nothing is written to again (the keys of a range deleted are
//! not, typically).
//!
//! A leaf is dead not only by what its lists hold but by what it keeps on disk: a fast-split
//! gives both halves views of the same files, and a file stays whole until its last view
//! goes. When the older half of a split has expired and been collected, the newer half may
//! keep a view of one page of a big expired file (with keys written in order, one such page
//! per file spilled). The sweep charges each leaf its share of the bytes of its files that no
//! view covers, so that such a leaf is rewritten and the files go.

use std::collections::HashMap;

use super::spill::Spiller;
use super::{Node, Tree};
use crate::error::Result;
use crate::list::ranges::RangeSet;
use crate::order::Pivot;
use crate::stats::Counters;

impl Spiller<'_> {
    /// Collect nodes of `tree` that are mostly dead (see the module's doc) until their bytes
    /// reach `budget` (at least one is collected if any is dead); whether any was. A collected
    /// leaf may come back as several: nodes left with more children than the fan-out split,
    /// and the root grows a level, as after a spill.
    ///
    /// The caller publishes each step before the next: a step's new lists and the old ones
    /// they replace are on disk together until its manifest is durable, so the budget bounds
    /// that transient space. The next step counts the views again: collecting one half of a
    /// fast-split leaves the other half the only view of their shared files, which that step
    /// collects too if those files are now mostly dead weight.
    pub fn sweep(&mut self, tree: &mut Tree, budget: u64) -> Result<bool> {
        let views = Views::of(&tree.root);
        let mut budget = Budget {
            left: budget,
            spent: false,
        };
        self.sweep_below(&mut tree.root, &views, &RangeSet::default(), &mut budget)?;
        self.grow_root(tree)?;
        Ok(budget.spent)
    }

    /// The bytes one sweep step may collect: a node's worth, or a 32nd of the tree if more, so
    /// that a big tree takes few manifests to sweep and a small one little transient space.
    pub fn sweep_budget(&self, tree: &Tree) -> u64 {
        (self.opts.node_size as u64).max(tree.bytes() / 32)
    }

    /// `above`: the range deletes of the lists on the path to `node`, it excluded.
    fn sweep_below(
        &mut self,
        node: &mut Node,
        views: &Views,
        above: &RangeSet,
        budget: &mut Budget,
    ) -> Result<()> {
        self.each_child(node, above, |sp, mut child, above_children| {
            let fresh = |c: &Node| c.lists.iter().all(|l| l.file.id() >= sp.fresh_from);
            if budget.left == 0 || child.is_leaf() && fresh(&child) {
                return Ok(vec![child]);
            }
            let dead = if child.is_leaf() {
                let covered = covered_bytes(&child, above_children, sp.ordered())?;
                views.dead_share(&child, sp.horizon, covered)
            } else {
                child.expired_fraction(sp.horizon)
            };
            if dead < child.dead_threshold() || !budget.allows(child.bytes()) {
                if !child.is_leaf() {
                    sp.sweep_below(&mut child, views, above_children, budget)?;
                }
                return sp.within_fan_out(child);
            }
            Counters::bump(&sp.counters.collections);
            budget.spend(child.bytes());
            if child.is_leaf() {
                return sp.under(above_children, |sp| sp.slow_split(child));
            }
            sp.spill_node(&mut child)?;
            sp.within_fan_out(child)
        })
    }
}

/// What a sweep step may still collect: nodes up to `left` bytes, or one node of any size if
/// it collected none yet.
struct Budget {
    left: u64,
    spent: bool,
}

impl Budget {
    fn allows(&self, bytes: u64) -> bool {
        !self.spent || bytes <= self.left
    }

    fn spend(&mut self, bytes: u64) {
        self.left = self.left.saturating_sub(bytes);
        self.spent = true;
    }
}

/// How much of each list file the tree's views cover, and by how many views.
struct Views(HashMap<u64, (u64, u32)>);

impl Views {
    fn of(root: &Node) -> Views {
        let mut files: HashMap<u64, (u64, u32)> = HashMap::new();
        root.visit(&mut |n| {
            for l in &n.lists {
                let e = files.entry(l.file.id()).or_default();
                e.0 += l.bytes();
                e.1 += 1;
            }
        });
        Views(files)
    }

    /// The share of what `leaf` keeps on disk that is dead: values expired by `horizon`,
    /// `covered` bytes a range delete above hides, and its share of the bytes of its files
    /// that no view covers.
    fn dead_share(&self, leaf: &Node, horizon: u64, covered: f64) -> f64 {
        let pinned: f64 = leaf
            .lists
            .iter()
            .map(|l| {
                let (viewed, viewers) = self.0.get(&l.file.id()).copied().unwrap_or((0, 1));
                l.file.size().saturating_sub(viewed) as f64 / f64::from(viewers.max(1))
            })
            .sum();
        let bytes = leaf.bytes() as f64 + pinned;
        if bytes == 0.0 {
            return 0.0;
        }
        ((leaf.expired_bytes(horizon) + covered).min(leaf.bytes() as f64) + pinned) / bytes
    }
}

/// Bytes of `leaf`'s lists that range deletes hide: those of `above` (on its path) over all of
/// them, and each list's over the older ones; counted by whole pages.
fn covered_bytes(leaf: &Node, above: &RangeSet, ordered: bool) -> Result<f64> {
    let mut hiding = above.clone();
    let mut covered = 0.0;
    for list in &leaf.lists {
        if !hiding.is_empty() {
            let file = &list.file;
            let index = file.index()?;
            let key = |p: u32| {
                if p >= list.end {
                    return None; // the view's end: its span's bound
                }
                Some(pivot_key(&index.pivot(p)))
            };
            for p in list.start..list.end {
                let lo = key(p).unwrap_or_default();
                let hi = key(p + 1).or_else(|| list.span.hi.as_ref().map(pivot_key));
                if hiding.covers_all(&lo, hi.as_deref(), ordered) {
                    covered += index.span_bytes(p, p + 1) as f64;
                }
            }
        }
        hiding.extend(&list.file.ranges().meeting(&list.span, ordered));
    }
    Ok(covered)
}

/// The smallest key at or above pivot `p` of an ordered keyspace: its key bytes, or, for a
/// pivot of a route alone, the route's bytes less trailing zeros (a shorter key of the same
/// route sorts first).
fn pivot_key(p: &Pivot) -> Vec<u8> {
    if !p.key.is_empty() {
        return p.key.to_vec();
    }
    let mut k = p.route.to_be_bytes().to_vec();
    while k.last() == Some(&0) {
        k.pop();
    }
    k
}
