//! Splits (WB-tree §3.2.2, §3.3): a full leaf becomes two or more.
//!
//! A *fast-split* divides every list of the leaf at one separator position by page offset, using
//! only the in-memory index: no data is read or written, the new leaves share the old files.
//! It defers the real work — collapsing superseded records and reclaiming their space — to a
//! *slow-split*, which merges the leaf's lists, drops what is superseded or deleted, and writes
//! fresh lists. A leaf fast-splits `fast_split_ratio` times, then slow-splits.

use super::rewrite::collapse_lists;
use super::spill::{Shape, Spiller};
use super::Node;
use crate::error::Result;
use crate::list::ListRef;
use crate::order::{Pivot, Span};
use crate::record;
use crate::stats::{Counters, Written};

impl Spiller<'_> {
    /// Split a full leaf into leaves that are each below capacity (or cannot be split further:
    /// a single record larger than a node).
    pub fn split_leaf(&mut self, leaf: Node) -> Result<Vec<Node>> {
        if self.fast_splits_left(&leaf)? {
            if let Some(sep) = separator(&leaf)? {
                Counters::bump(&self.counters.fast_splits);
                let (left, right) = fast_split(leaf, sep)?;
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

    /// Whether a full `leaf` is to fast-split rather than slow-split: it has fast-splits left
    /// before a rewrite is due, and is not mostly superseded or expired records — garbage
    /// worth collecting now; fast-splitting such a leaf would only spread its garbage over
    /// more leaves, and the tree would grow with the bytes written instead of the live data.
    pub(super) fn fast_splits_left(&self, leaf: &Node) -> Result<bool> {
        Ok(leaf.fast_splits < self.opts.fast_split_ratio && !leaf.mostly_dead(self.horizon)?)
    }

    /// `leaf` fast-split into pieces each of whose rewrite keeps at most half a node — the
    /// leaves a slow-split of it makes — each piece marked as owed the rewrite its leaf was
    /// due (see `Node::owes_rewrite`): upkeep rewrites a leaf a piece at a time. A leaf of
    /// mostly dead records so makes fewer, larger pieces, not leaves a fraction full.
    pub(super) fn pieces(&mut self, leaf: Node) -> Result<Vec<Node>> {
        let keeps = leaf.live_share(self.horizon)?.max(1.0 / 64.0);
        let limit = (self.opts.node_size / 2) as f64 / keeps;
        self.cut(leaf, limit as u64)
    }

    /// `leaf` halved (see [`pieces`](Self::pieces)) until each piece holds at most `limit`
    /// bytes or cannot be split (one key's records).
    fn cut(&mut self, leaf: Node, limit: u64) -> Result<Vec<Node>> {
        let sep = match leaf.bytes() > limit {
            true => separator(&leaf)?,
            false => None,
        };
        let Some(sep) = sep else {
            return Ok(vec![leaf]);
        };
        // Not counted as a fast-split: the pieces are rewritten as the slow-split they stand
        // for (`Stats::pieces_rewritten`), whatever `fast_split_ratio` is.
        let (mut left, mut right) = fast_split(leaf, sep)?;
        left.fast_splits = self.opts.fast_split_ratio + 1;
        right.fast_splits = self.opts.fast_split_ratio + 1;
        let mut out = self.cut(left, limit)?;
        out.extend(self.cut(right, limit)?);
        Ok(out)
    }

    /// Merge the leaf's lists, dropping superseded records and tombstones and folding merge
    /// operands into values (nothing older lies below a leaf), and write the survivors as
    /// leaves at most half full.
    pub(super) fn slow_split(&mut self, leaf: Node) -> Result<Vec<Node>> {
        Counters::bump(&self.counters.slow_splits);
        // Collect the survivors first: their total size decides how many leaves to make.
        let mut arena = Vec::new();
        let mut records: Vec<(u64, usize)> = Vec::new();
        let operator = self.opts.operator();
        let counters = self.counters.clone();
        let how = self.rewrite(true, operator.as_ref(), &counters);
        collapse_lists(&leaf.lists, &how, |route, key, op| {
            records.push((route, arena.len()));
            record::encode(&mut arena, key, op);
            Ok(())
        })?;
        let half = (self.opts.node_size / 2).max(1);
        let parts = arena.len().div_ceil(half).max(1);
        let target = arena.len().div_ceil(parts);
        let key_at = |i: usize| {
            let (route, off) = records[i];
            (
                route,
                record::decode(&arena, &mut { off })
                    .expect("encoded above")
                    .key,
            )
        };
        let mut leaves = Vec::with_capacity(parts);
        let mut i = 0;
        let mut lo = leaf.span.lo.clone();
        while i < records.len() || leaves.is_empty() {
            let start_offset = records.get(i).map_or(0, |r| r.1);
            // Take records up to the byte target. Positions are unique, so any two records
            // have a pivot between them: the one with the fewest key bytes.
            // A key's stack (operands a failed fold left) stays in one leaf.
            let mut j = i;
            while j < records.len()
                && (j == i || records[j].1 - start_offset < target || key_at(j) == key_at(j - 1))
            {
                j += 1;
            }
            let hi = if j < records.len() {
                Some(Pivot::between(key_at(j - 1), key_at(j)))
            } else {
                leaf.span.hi.clone()
            };
            let span = Span::new(lo, hi);
            let mut node = Node::leaf(span.clone());
            if j > i {
                let mut w = self.new_list(Shape::of(&node))?;
                for &(route, off) in &records[i..j] {
                    let rec = record::decode(&arena, &mut { off }).expect("encoded above");
                    w.add(route, rec.key, rec.op)?;
                }
                node.lists.push(ListRef::new(
                    self.finish_list(w, Written::LeafRewrite)?,
                    span.clone(),
                ));
            }
            lo = span.hi.clone().unwrap_or_default();
            leaves.push(node);
            i = j;
        }
        Ok(leaves)
    }

    /// `node` as it is, or split if it has more children than the fan-out allows.
    pub fn within_fan_out(&mut self, node: Node) -> Result<Vec<Node>> {
        if node.children.len() > self.opts.fan_out {
            self.split_internal(node)
        } else {
            Ok(vec![node])
        }
    }

    /// Divide an internal node with more children than the fan-out among `ceil(n / fan_out)`
    /// (at least two) new internal nodes covering its range. Its own lists — records spilled
    /// to it and not yet pushed down — go along, each narrowed to the routes of the new node
    /// it lands in (a view, as in a fast-split: no data moves). A node has more children
    /// than the fan-out only after its children split, or after a reopen with a smaller
    /// `fan_out`; in the latter case it may still hold lists.
    pub fn split_internal(&mut self, node: Node) -> Result<Vec<Node>> {
        Counters::bump(&self.counters.node_splits);
        let (span, lists, mut children) = (node.span, node.lists, node.children);
        let selector = node.selector;
        let pieces = children.len().div_ceil(self.opts.fan_out).max(2);
        let per = children.len().div_ceil(pieces);
        let mut out = Vec::with_capacity(pieces);
        while !children.is_empty() {
            let rest = children.split_off(per.min(children.len()));
            let group = std::mem::replace(&mut children, rest);
            let part_span = Span::new(
                group[0].span.lo.clone(),
                group[group.len() - 1].span.hi.clone(),
            );
            let mut part = Node::internal(part_span.clone(), group);
            part.lists = narrow_all(&lists, &part_span)?;
            part.selector = selector.clone();
            out.push(part);
        }
        debug_assert_eq!(out[0].span.lo, span.lo);
        debug_assert_eq!(out[out.len() - 1].span.hi, span.hi);
        Ok(out)
    }
}

/// Each of `lists` narrowed to `span` (see `ListRef::narrow`), those that meet it.
pub fn narrow_all(lists: &[ListRef], span: &Span) -> Result<Vec<ListRef>> {
    let mut out = Vec::with_capacity(lists.len());
    for l in lists {
        out.extend(l.narrow(span)?);
    }
    Ok(out)
}

/// The median position of the leaf's largest list, from its page index.
fn separator(leaf: &Node) -> Result<Option<Pivot>> {
    let mut lists: Vec<&ListRef> = leaf.lists.iter().collect();
    lists.sort_by_key(|l| std::cmp::Reverse(l.bytes()));
    for l in lists {
        if let Some(p) = l.median()? {
            return Ok(Some(p).filter(|p| leaf.span.splits_at(p)));
        }
    }
    Ok(None)
}

fn fast_split(leaf: Node, sep: Pivot) -> Result<(Node, Node)> {
    let fast_splits = leaf.fast_splits + 1;
    // The halves start with the leaf's selector, cut for its span (see `Selector::refresh`).
    let mut left = Node {
        fast_splits,
        selector: leaf.selector.clone(),
        ..Node::leaf(Span::new(leaf.span.lo.clone(), Some(sep.clone())))
    };
    let mut right = Node {
        fast_splits,
        selector: leaf.selector.clone(),
        ..Node::leaf(Span::new(sep.clone(), leaf.span.hi.clone()))
    };
    for list in &leaf.lists {
        let (l, r) = list.split(&sep)?;
        left.lists.extend(l);
        right.lists.extend(r);
    }
    Ok((left, right))
}
