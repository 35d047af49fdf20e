//! Splits (WB-tree §3.2.2, §3.3): a full leaf becomes two or more.
//!
//! A *fast-split* divides every list of the leaf at one separator route by page offset, using
//! only the in-memory index: no data is read or written, the new leaves share the old files.
//! It defers the real work — collapsing superseded records and reclaiming their space — to a
//! *slow-split*, which merges the leaf's lists, drops what is superseded or deleted, and writes
//! fresh lists. A leaf fast-splits `fast_split_ratio` times, then slow-splits.

use super::spill::Spiller;
use super::Node;
use crate::error::Result;
use crate::list::ListRef;
use crate::merge::merge;
use crate::record;
use crate::stats::Counters;

impl Spiller<'_> {
    /// Split a full leaf into leaves that are each below capacity (or cannot be split further:
    /// a single record larger than a node).
    pub fn split_leaf(&mut self, leaf: Node) -> Result<Vec<Node>> {
        // A leaf that is mostly superseded records has garbage worth collecting now; fast-
        // splitting it would only spread that garbage over more leaves, and the tree would
        // grow with the bytes written instead of the live data (WB-tree §6 bounds repeats the
        // same way, with a cardinality estimate).
        let worth_collecting = live_fraction(&leaf) < 0.5;
        if leaf.fast_splits < self.opts.fast_split_ratio && !worth_collecting {
            if let Some(sep) = separator(&leaf) {
                Counters::bump(&self.counters.fast_splits);
                let (left, right) = fast_split(leaf, sep);
                let mut out = Vec::new();
                for half in [left, right] {
                    if half.bytes() >= self.opts.node_size as u64 {
                        out.extend(self.split_leaf(half)?);
                    } else {
                        out.push(half);
                    }
                }
                return Ok(out);
            }
        }
        self.slow_split(leaf)
    }

    /// Merge the leaf's lists, dropping superseded records and tombstones (nothing older lies
    /// below a leaf), and write the survivors as leaves at most half full.
    fn slow_split(&mut self, leaf: Node) -> Result<Vec<Node>> {
        Counters::bump(&self.counters.slow_splits);
        // Collect the survivors first: their total size decides how many leaves to make.
        let mut arena = Vec::new();
        let mut records: Vec<(u64, usize)> = Vec::new();
        merge(&leaf.lists, true, |route, key, value| {
            records.push((route, arena.len()));
            record::encode(&mut arena, key, value);
            Ok(())
        })?;
        let half = (self.opts.node_size / 2).max(1);
        let parts = arena.len().div_ceil(half).max(1);
        let target = arena.len().div_ceil(parts);
        let mut leaves = Vec::with_capacity(parts);
        let mut i = 0;
        let mut lo = leaf.lo;
        while i < records.len() || leaves.is_empty() {
            let start_offset = records.get(i).map_or(0, |r| r.1);
            // Take records up to the byte target, then up to the end of their route so that
            // equal routes never straddle two leaves.
            let mut j = i;
            while j < records.len() && (j == i || records[j].1 - start_offset < target) {
                j += 1;
            }
            while j < records.len() && records[j].0 == records[j - 1].0 {
                j += 1;
            }
            let hi = if j < records.len() {
                records[j].0 - 1
            } else {
                leaf.hi
            };
            let mut node = Node::leaf(lo, hi);
            if j > i {
                let mut w = self.new_list()?;
                for &(route, off) in &records[i..j] {
                    let rec = record::decode(&arena, &mut { off }).expect("encoded above");
                    w.add(route, rec.key, rec.value)?;
                }
                node.lists.push(ListRef::new(w.finish()?, lo, hi));
            }
            leaves.push(node);
            i = j;
            lo = hi.wrapping_add(1);
        }
        Ok(leaves)
    }

    /// Divide an internal node with more children than the fan-out among `ceil(n / fan_out)`
    /// (at least two) new internal nodes covering its range. Its own lists — records spilled
    /// to it and not yet pushed down — go along, each narrowed to the routes of the new node
    /// it lands in (a view, as in a fast-split: no data moves). A node has more children
    /// than the fan-out only after its children split, or after a reopen with a smaller
    /// `fan_out`; in the latter case it may still hold lists.
    pub fn split_internal(&mut self, node: Node) -> Vec<Node> {
        Counters::bump(&self.counters.node_splits);
        let (lo, hi, lists, mut children) = (node.lo, node.hi, node.lists, node.children);
        let pieces = children.len().div_ceil(self.opts.fan_out).max(2);
        let per = children.len().div_ceil(pieces);
        let mut out = Vec::with_capacity(pieces);
        while !children.is_empty() {
            let rest = children.split_off(per.min(children.len()));
            let group = std::mem::replace(&mut children, rest);
            let (glo, ghi) = (group[0].lo, group[group.len() - 1].hi);
            let mut part = Node::internal(glo, ghi, group);
            part.lists = lists.iter().filter_map(|l| l.narrow(glo, ghi)).collect();
            out.push(part);
        }
        debug_assert_eq!((out[0].lo, out[out.len() - 1].hi), (lo, hi));
        out
    }
}

/// Estimated share of the leaf's bytes that are the newest record of their key, from memory
/// alone: each page's first route is a sample of its list, and a sample that some newer
/// list's filter may contain is counted as superseded. Filters answer "maybe" for about 1% of
/// absent keys, so the estimate leans slightly low. Without filters there is nothing to go
/// on, and the leaf is taken to be live.
fn live_fraction(leaf: &Node) -> f64 {
    let (mut total, mut live) = (0u64, 0u64);
    for (i, list) in leaf.lists.iter().enumerate() {
        let newer = &leaf.lists[..i];
        for page in list.start..list.end {
            let route = list.file.first_route(page);
            if route < list.lo || route > list.hi {
                continue;
            }
            let bytes = list.file.span_bytes(page, page + 1);
            total += bytes;
            let superseded = newer.iter().any(|n| {
                n.lo <= route && route <= n.hi && n.file.has_filter() && n.file.may_contain(route)
            });
            if !superseded {
                live += bytes;
            }
        }
    }
    if total == 0 {
        1.0
    } else {
        live as f64 / total as f64
    }
}

/// The median route of the leaf's largest list, from its in-memory page index.
fn separator(leaf: &Node) -> Option<u64> {
    let mut lists: Vec<&ListRef> = leaf.lists.iter().collect();
    lists.sort_by_key(|l| std::cmp::Reverse(l.bytes()));
    lists.iter().find_map(|l| l.median_route())
}

fn fast_split(leaf: Node, sep: u64) -> (Node, Node) {
    let fast_splits = leaf.fast_splits + 1;
    let mut left = Node {
        fast_splits,
        ..Node::leaf(leaf.lo, sep - 1)
    };
    let mut right = Node {
        fast_splits,
        ..Node::leaf(sep, leaf.hi)
    };
    for list in &leaf.lists {
        let (l, r) = list.split(sep);
        left.lists.extend(l);
        right.lists.extend(r);
    }
    (left, right)
}
