//! Merging sorted sources with collapsing (WB-tree §3.1): the newest record of each key wins,
//! and a key's merge operands are gathered across sources into one stack (see `fold`).
//! Spills and splits merge a node's lists this way, forward (`tree::rewrite`); scans merge
//! everything on a root-to-leaf path, either way.

pub mod cursor;

use crate::error::Result;
use crate::order::{cmp_pos, Pivot, Span};

/// Keys stepped over one by one under a range delete before the older sources seek past it.
const SEEK_AFTER: u32 = 32;
use crate::record::Op;
use crate::upsert::fold::Stack;
use cursor::{Cursor, Direction, Entry};

/// The union of `cursors` (newest source first), one key at a time.
pub struct Collapse<C> {
    cursors: Vec<C>,
    dir: Direction,
    /// The cursors that have a record left, as a binary heap of (the route of its record,
    /// its index): on top, the one whose record comes first in `dir`, ties to the lowest
    /// index (the newest source). A slow-split at a billion records merges a leaf's hundreds
    /// of lists: a scan of every cursor per record took 70% of the spill thread there, a heap
    /// takes `log2` of them, and the routes kept here spare most comparisons a look at the
    /// cursors' records (a cache miss each).
    heap: Vec<(u64, usize)>,
    /// The cursors that have range deletes, in index order: the only ones that may cover a
    /// key.
    ranged: Vec<usize>,
    /// The cursor holding the next record, found once per key.
    best: Option<usize>,
    key: Vec<u8>,
    /// Keys stepped over in a row because a range delete covers them (see `find_best`).
    covered_in_a_row: u32,
}

impl<C: Cursor> Collapse<C> {
    pub fn new(cursors: Vec<C>, dir: Direction) -> Result<Collapse<C>> {
        let ranged = (0..cursors.len())
            .filter(|&i| cursors[i].may_cover())
            .collect();
        let mut m = Collapse {
            cursors,
            dir,
            heap: Vec::new(),
            ranged,
            best: None,
            key: Vec::new(),
            covered_in_a_row: 0,
        };
        m.rebuild_heap();
        m.find_best()?;
        Ok(m)
    }

    /// The cursor on top of the heap and the record it is at.
    fn top(&self) -> Option<(usize, Entry<'_>)> {
        let &(_, i) = self.heap.first()?;
        Some((
            i,
            self.cursors[i]
                .peek()
                .expect("the heap holds cursors with records"),
        ))
    }

    /// The newest record is on top, and a key whose newest record a range delete of a newer
    /// source covers is gone: it is stepped over.
    fn find_best(&mut self) -> Result<()> {
        let mut key = std::mem::take(&mut self.key);
        let found = self.find_best_with(&mut key);
        self.key = key;
        found
    }

    /// [`find_best`](Self::find_best), with `key` to hold a key stepped over.
    fn find_best_with(&mut self, key: &mut Vec<u8>) -> Result<()> {
        loop {
            let Some((i, e)) = self.top() else {
                self.best = None;
                return Ok(());
            };
            let covering = self
                .ranged
                .iter()
                .copied()
                .take_while(|&j| j < i)
                .find(|&j| self.cursors[j].covers(e.route, e.key));
            let route = e.route;
            key.clear();
            key.extend_from_slice(e.key);
            let Some(j) = covering else {
                self.best = Some(i);
                self.covered_in_a_row = 0;
                return Ok(());
            };
            // Past a few keys under one range delete, the sources older than it seek past
            // the range instead: a range that deleted millions of keys not yet spilled away
            // costs a seek per source, not a step per key.
            self.covered_in_a_row += 1;
            if self.covered_in_a_row >= SEEK_AFTER {
                if let Some(range) = self.cursors[j].covering(route, key) {
                    let keep = match self.dir {
                        Direction::Forward => match range.hi {
                            Some(end) => Span::new(end, None),
                            None => {
                                Span::new(Pivot::new(u64::MAX, &[0xff; 1]), Some(Pivot::default()))
                            }
                        },
                        Direction::Backward => Span::new(Pivot::default(), Some(range.lo)),
                    };
                    for c in &mut self.cursors[j + 1..] {
                        c.narrow(&keep)?;
                    }
                    self.covered_in_a_row = 0;
                    self.rebuild_heap();
                    continue;
                }
            }
            while let Some((i, _)) = self
                .top()
                .filter(|(_, e)| e.route == route && e.key == key.as_slice())
            {
                self.cursors[i].advance()?;
                self.sift_top();
            }
        }
    }

    /// The next key's newest record: from the newest source that has the key. If it is a
    /// merge operand, [`take_stack`](Self::take_stack) gathers what it folds into. `None`
    /// when every source is done.
    pub fn peek(&self) -> Option<Entry<'_>> {
        self.cursors[self.best?].peek()
    }

    /// Move past the key [`peek`](Self::peek) gave: every source's records of it.
    pub fn advance(&mut self) -> Result<()> {
        self.take(None)
    }

    /// Add the records of the key [`peek`](Self::peek) gives to `stack`, newest first, until
    /// one completes it, and move past the key.
    pub fn take_stack(&mut self, stack: &mut Stack) -> Result<()> {
        self.take(Some(stack))
    }

    /// Every source's records of the next key, newest source first: the sources holding the
    /// key come off the heap in that order, and each source's range deletes (below its own
    /// records of the key) count where the source does.
    fn take(&mut self, mut stack: Option<&mut Stack>) -> Result<()> {
        let mut key = std::mem::take(&mut self.key);
        let Some((_, e)) = self.top() else {
            return Ok(());
        };
        let route = e.route;
        key.clear();
        key.extend_from_slice(e.key);
        let mut ranged = 0;
        let cover = |c: &C, stack: &mut Option<&mut Stack>| {
            // Below this source's range deletes, nothing of the key is left.
            if let Some(s) = stack.as_deref_mut().filter(|s| !s.is_complete()) {
                if c.covers(route, &key) {
                    s.push(Op::Delete);
                }
            }
        };
        while let Some((i, _)) = self.top().filter(|(_, e)| e.route == route && e.key == key) {
            while let Some(&j) = self.ranged.get(ranged).filter(|&&j| j < i) {
                cover(&self.cursors[j], &mut stack);
                ranged += 1;
            }
            let c = &mut self.cursors[i];
            while let Some(e) = c
                .peek()
                .filter(|e| e.route == route && e.key == key.as_slice())
            {
                if let Some(s) = stack.as_deref_mut().filter(|s| !s.is_complete()) {
                    s.push(e.op);
                }
                c.advance()?;
            }
            self.sift_top();
        }
        for &j in &self.ranged[ranged..] {
            cover(&self.cursors[j], &mut stack);
        }
        self.key = key;
        self.find_best()
    }

    /// Whether the record of heap entry `a` comes before `b`'s: first in the direction, ties
    /// to the newer source.
    fn before(&self, (ra, a): (u64, usize), (rb, b): (u64, usize)) -> bool {
        let ord = ra.cmp(&rb).then_with(|| {
            let (Some(x), Some(y)) = (self.cursors[a].peek(), self.cursors[b].peek()) else {
                unreachable!("the heap holds cursors with records")
            };
            cmp_pos(x.pos(), y.pos())
        });
        let ord = match self.dir {
            Direction::Forward => ord,
            Direction::Backward => ord.reverse(),
        };
        ord.then(a.cmp(&b)).is_lt()
    }

    /// Put every cursor with a record on the heap (at the start, and after cursors narrowed).
    fn rebuild_heap(&mut self) {
        self.heap = (0..self.cursors.len())
            .filter_map(|i| Some((self.cursors[i].peek()?.route, i)))
            .collect();
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// The top cursor moved on: put it where it now belongs, or off the heap if it is done.
    fn sift_top(&mut self) {
        match self.cursors[self.heap[0].1].peek() {
            Some(e) => self.heap[0].0 = e.route,
            None => {
                self.heap.swap_remove(0);
            }
        }
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
    }

    fn sift_down(&mut self, mut at: usize) {
        loop {
            let mut first = at;
            for child in [2 * at + 1, 2 * at + 2] {
                if child < self.heap.len() && self.before(self.heap[child], self.heap[first]) {
                    first = child;
                }
            }
            if first == at {
                return;
            }
            self.heap.swap(at, first);
            at = first;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A source in memory: one record per key at most, and at most one range delete.
    struct VecCursor {
        records: Vec<(u64, Vec<u8>, Op<'static>)>,
        at: usize,
        range: Option<(u64, u64)>,
    }

    impl Cursor for VecCursor {
        fn peek(&self) -> Option<Entry<'_>> {
            self.records.get(self.at).map(|(route, key, op)| Entry {
                route: *route,
                key,
                op: *op,
            })
        }
        fn advance(&mut self) -> Result<()> {
            self.at += 1;
            Ok(())
        }
        fn covers(&self, _route: u64, key: &[u8]) -> bool {
            let r = u64::from_be_bytes(key.try_into().expect("8-byte keys"));
            self.range.is_some_and(|(lo, hi)| (lo..hi).contains(&r))
        }
        fn may_cover(&self) -> bool {
            self.range.is_some()
        }
        fn covering(&self, route: u64, key: &[u8]) -> Option<Span> {
            let (lo, hi) = self.range.filter(|_| self.covers(route, key))?;
            Some(Span::new(
                Pivot::new(lo / 4, &self::key(lo)),
                Some(Pivot::new(hi / 4, &self::key(hi))),
            ))
        }
        fn narrow(&mut self, keep: &Span) -> Result<()> {
            while self
                .peek()
                .is_some_and(|e| !keep.contains((e.route, e.key)))
            {
                self.at += 1;
            }
            Ok(())
        }
    }

    const OPERANDS: [&[u8]; 4] = [b"a", b"b", b"c", b"d"];

    /// A source's keys (routes) with an op kind each, and its range delete of routes.
    type Source = (Vec<(u64, u8)>, Option<(u64, u64)>);

    /// Sources, newest first: for each, its keys (routes) with an op each, and a range delete.
    fn sources() -> impl Strategy<Value = Vec<Source>> {
        let source = (
            proptest::collection::btree_map(0..300u64, 0..6u8, 0..120),
            proptest::option::weighted(0.3, (0..300u64, 1..80u64)),
        )
            .prop_map(|(keys, range)| {
                (
                    keys.into_iter().collect(),
                    range.map(|(lo, len)| (lo, lo + len)),
                )
            });
        proptest::collection::vec(source, 1..60)
    }

    fn op(kind: u8) -> Op<'static> {
        match kind {
            0 => Op::Delete,
            1 | 2 => Op::Put(OPERANDS[usize::from(kind)]),
            k => Op::Merge(OPERANDS[usize::from(k - 2)]),
        }
    }

    fn key(route: u64) -> Vec<u8> {
        route.to_be_bytes().to_vec()
    }

    proptest! {
        /// Any number of sources merge as the rule says, key by key: gone if a source newer
        /// than the newest holding the key covers it; else its records newest source first,
        /// each source's range delete counting below its own records, up to a base.
        #[test]
        fn sources_collapse_key_by_key_newest_first(sources in sources(), backward: bool) {
            let cursors: Vec<VecCursor> = sources
                .iter()
                .map(|(keys, range)| {
                    // Four keys a route: ties on the route are ordered by the key.
                    let mut records: Vec<_> =
                        keys.iter().map(|&(r, k)| (r / 4, key(r), op(k))).collect();
                    if backward {
                        records.reverse();
                    }
                    VecCursor { records, at: 0, range: *range }
                })
                .collect();
            let mut got = Vec::new();
            let dir = if backward { Direction::Backward } else { Direction::Forward };
            let mut m = Collapse::new(cursors, dir).unwrap();
            while let Some(e) = m.peek() {
                let r = u64::from_be_bytes(e.key.try_into().unwrap());
                let mut stack = Stack::default();
                m.take_stack(&mut stack).unwrap();
                got.push((r, format!("{stack:?}")));
            }
            let covers = |s: &Source, r: u64| {
                s.1.is_some_and(|(lo, hi)| (lo..hi).contains(&r))
            };
            let routes: std::collections::BTreeSet<u64> =
                sources.iter().flat_map(|s| s.0.iter().map(|&(r, _)| r)).collect();
            let mut want = Vec::new();
            for r in routes {
                let newest = sources.iter().position(|s| s.0.iter().any(|&(x, _)| x == r)).unwrap();
                if sources[..newest].iter().any(|s| covers(s, r)) {
                    continue;
                }
                let mut stack = Stack::default();
                for s in &sources {
                    if let Some(&(_, k)) = s.0.iter().find(|&&(x, _)| x == r) {
                        if !stack.is_complete() {
                            stack.push(op(k));
                        }
                    }
                    if covers(s, r) && !stack.is_complete() {
                        stack.push(Op::Delete);
                    }
                }
                want.push((r, format!("{stack:?}")));
            }
            if backward {
                want.reverse();
            }
            prop_assert_eq!(got, want);
        }
    }
}
