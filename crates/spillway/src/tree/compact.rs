//! Keeping a node's list count bounded: what a scan pays for.
//!
//! A point read probes a node's lists through their filters and reads one page; a scan has no
//! filter to skip a list and reads a page of every list on its path. A WB-tree node collects
//! one list per spill of its parent — tens of them — so short scans would cost tens of page
//! reads per level. With [`Options::max_lists_per_node`](crate::Options) set, a node holding
//! more lists than that merges its newest lists of similar size into one (size-tiered, as
//! LSM tiering does): recent small lists merge often, older big ones seldom, so each record
//! is rewritten a few times at most while the node's list count stays near the bound. That
//! is write amplification traded for cheaper scans; BENCHMARKS.md measures both sides.

use super::rewrite::collapse_lists;
use super::spill::{carried_ranges, Shape, Spiller};
use super::Node;
use crate::error::Result;
use crate::list::ranges::RangeSet;
use crate::list::{ListRef, ListWriter};
use crate::stats::{Counters, Written};

impl Spiller<'_> {
    /// If `node` holds more lists than the bound, merge its newest run of similar lists.
    pub fn bound_lists(&mut self, node: &mut Node) -> Result<()> {
        let Some(bound) = self.opts.lists_bound() else {
            return Ok(());
        };
        if node.lists.len() <= bound {
            return Ok(());
        }
        let n = newest_run(&node.lists);
        Counters::bump(&self.counters.list_merges);
        // Tombstones may go, and operands fold into nothing, only where nothing older can
        // hold their keys: a leaf's oldest list is the bottom of the tree.
        let bottom = node.is_leaf() && n == node.lists.len();
        let mut writer: Option<ListWriter> = None;
        let shape = Shape::of(node);
        let operator = self.opts.operator();
        let counters = self.counters.clone();
        let how = self.rewrite(bottom, operator.as_ref(), &counters);
        collapse_lists(&node.lists[..n], &how, |route, key, op| {
            if writer.is_none() {
                writer = Some(self.new_list(shape)?);
            }
            writer.as_mut().expect("just opened").add(route, key, op)
        })?;
        // Range deletes go on with the merged list, but at the bottom (nothing older left).
        let ranges = if bottom {
            RangeSet::default()
        } else {
            carried_ranges(&node.lists[..n], self.ordered())
        };
        if writer.is_none() && !ranges.is_empty() {
            writer = Some(self.new_list(shape)?);
        }
        let merged = match writer {
            Some(mut w) => {
                w.add_ranges(&ranges);
                Some(ListRef::new(
                    self.finish_list(w, Written::ListMerge)?,
                    node.span.clone(),
                ))
            }
            None => None,
        };
        node.lists.splice(..n, merged);
        Ok(())
    }
}

/// How many of the newest lists to merge: at least two, and each older list while it is no
/// bigger than those before it together, so that lists of one size merge with each other and
/// not into a much bigger older one.
fn newest_run(lists: &[ListRef]) -> usize {
    let mut sum = 0;
    let mut n = 0;
    for l in lists {
        let bytes = l.bytes();
        if n >= 2 && bytes > sum {
            break;
        }
        sum += bytes;
        n += 1;
    }
    n
}
