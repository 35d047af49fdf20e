//! Sweeping expired data that no spill reaches: at every spill, each tree that holds expiring
//! records is walked for nodes that are mostly dead, and those are collected as a spill would
//! collect them (a leaf slow-split, an internal node spilled). A spill only visits the nodes
//! on the paths it writes; a leaf nothing new is written to — yesterday's sessions, keys
//! written in time order — would otherwise keep its expired data for ever.
//!
//! What a node's collection may drop is bounded by the messages above it (see
//! [`Spiller::horizon`]): the root buffer's, written since the freeze, and those of the lists
//! on its path, which the sweep takes into account as it goes down (`Node::oldest_message`).
//!
//! A leaf is dead not only by what its lists hold but by what it keeps on disk: a fast-split
//! gives both halves views of the same files, and a file stays whole until its last view
//! goes. When the older half of a split has expired and been collected, the newer half may
//! keep a view of one page of a big expired file (with keys written in order, one such page
//! per file spilled). The sweep charges each leaf its share of the bytes of its files that no
//! view covers, so that such a leaf is rewritten and the files go.

use std::collections::HashMap;

use super::spill::Spiller;
use super::Node;
use crate::error::Result;
use crate::stats::Counters;

/// A node is collected once this share of it is dead.
const DEAD_SHARE: f64 = 0.5;

impl Spiller<'_> {
    /// Collect every node under `root` that is mostly expired (see the module's doc).
    pub fn sweep_expired(&mut self, root: &mut Node) -> Result<()> {
        let views = Views::of(root);
        self.sweep_below(root, &views)
    }

    fn sweep_below(&mut self, node: &mut Node, views: &Views) -> Result<()> {
        let outer = self.horizon;
        self.horizon = outer.min(node.oldest_message());
        let mut swept = Vec::with_capacity(node.children.len());
        let mut children = std::mem::take(&mut node.children).into_iter();
        let result = (|| {
            for mut child in children.by_ref() {
                let dead = if child.is_leaf() {
                    views.dead_share(&child, self.horizon)
                } else {
                    child.expired_fraction(self.horizon)
                };
                if dead < DEAD_SHARE {
                    if !child.is_leaf() {
                        self.sweep_below(&mut child, views)?;
                    }
                    swept.push(child);
                    continue;
                }
                Counters::bump(&self.counters.collections);
                if child.is_leaf() {
                    swept.extend(self.slow_split(child)?);
                    continue;
                }
                self.spill_node(&mut child)?;
                if child.children.len() > self.opts.fan_out {
                    swept.extend(self.split_internal(child));
                } else {
                    swept.push(child);
                }
            }
            Ok(())
        })();
        // A failed spill drops the whole tree it was building; keep it whole anyway.
        swept.extend(children);
        node.children = swept;
        self.horizon = outer;
        result
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

    /// The share of what `leaf` keeps on disk that is dead: values expired by `horizon`, and
    /// its share of the bytes of its files that no view covers.
    fn dead_share(&self, leaf: &Node, horizon: u64) -> f64 {
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
        (leaf.expired_bytes(horizon) + pinned) / bytes
    }
}
