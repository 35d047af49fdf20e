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
    /// The cursor holding the next record, found once per key.
    best: Option<usize>,
    key: Vec<u8>,
    /// Keys stepped over in a row because a range delete covers them (see `find_best`).
    covered_in_a_row: u32,
}

impl<C: Cursor> Collapse<C> {
    pub fn new(cursors: Vec<C>, dir: Direction) -> Result<Collapse<C>> {
        let mut m = Collapse {
            cursors,
            dir,
            best: None,
            key: Vec::new(),
            covered_in_a_row: 0,
        };
        m.find_best()?;
        Ok(m)
    }

    /// Sources are few (the lists of a node or a path), so a linear scan beats a heap.
    /// Ties go to the lowest index, the newest source. A key whose newest record a range
    /// delete of a newer source covers is gone: it is stepped over.
    fn find_best(&mut self) -> Result<()> {
        loop {
            let mut best: Option<(usize, Entry<'_>)> = None;
            for (i, c) in self.cursors.iter().enumerate() {
                if let Some(e) = c.peek() {
                    let better = best.is_none_or(|(_, b)| {
                        let ord = cmp_pos(e.pos(), b.pos());
                        match self.dir {
                            Direction::Forward => ord.is_lt(),
                            Direction::Backward => ord.is_gt(),
                        }
                    });
                    if better {
                        best = Some((i, e));
                    }
                }
            }
            let Some((i, e)) = best else {
                self.best = None;
                return Ok(());
            };
            let Some(j) = self.cursors[..i]
                .iter()
                .position(|c| c.covers(e.route, e.key))
            else {
                self.best = Some(i);
                self.covered_in_a_row = 0;
                return Ok(());
            };
            // Past a few keys under one range delete, the sources older than it seek past
            // the range instead: a range that deleted millions of keys not yet spilled away
            // costs a seek per source, not a step per key.
            self.covered_in_a_row += 1;
            if self.covered_in_a_row >= SEEK_AFTER {
                if let Some(range) = self.cursors[j].covering(e.route, e.key) {
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
                    continue;
                }
            }
            let route = e.route;
            self.key.clear();
            self.key.extend_from_slice(e.key);
            for c in &mut self.cursors {
                while c
                    .peek()
                    .is_some_and(|e| e.route == route && e.key == self.key.as_slice())
                {
                    c.advance()?;
                }
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

    fn take(&mut self, mut stack: Option<&mut Stack>) -> Result<()> {
        let mut key = std::mem::take(&mut self.key);
        let Some(e) = self.peek() else { return Ok(()) };
        let route = e.route;
        key.clear();
        key.extend_from_slice(e.key);
        for c in &mut self.cursors {
            while let Some(e) = c
                .peek()
                .filter(|e| e.route == route && e.key == key.as_slice())
            {
                if let Some(s) = stack.as_deref_mut().filter(|s| !s.is_complete()) {
                    s.push(e.op);
                }
                c.advance()?;
            }
            // Below this source's range deletes, nothing of the key is left.
            if c.covers(route, &key) {
                if let Some(s) = stack.as_deref_mut().filter(|s| !s.is_complete()) {
                    s.push(Op::Delete);
                }
            }
        }
        self.key = key;
        self.find_best()
    }
}
