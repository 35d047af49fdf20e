//! Merging sorted sources with collapsing (WB-tree §3.1): the newest record of each key wins.
//! Spills and splits merge a node's lists this way, forward; scans merge everything on a
//! root-to-leaf path, either way.

use crate::cursor::{Cursor, Direction, Entry};
use crate::error::Result;
use crate::list::{ListCursor, ListRef, Readahead};
use crate::order::cmp_pos;

/// The union of `cursors` (newest source first), one record per key.
pub struct Merge<C> {
    cursors: Vec<C>,
    dir: Direction,
    /// The cursor holding the next record, found once per record.
    best: Option<usize>,
    key: Vec<u8>,
}

impl<C: Cursor> Merge<C> {
    pub fn new(cursors: Vec<C>, dir: Direction) -> Merge<C> {
        let mut m = Merge {
            cursors,
            dir,
            best: None,
            key: Vec::new(),
        };
        m.find_best();
        m
    }

    /// Sources are few (the lists of a node or a path), so a linear scan beats a heap.
    /// Ties go to the lowest index, the newest source.
    fn find_best(&mut self) {
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
        self.best = best.map(|(i, _)| i);
    }

    /// The next record: the first in the merge's direction, from the newest source that has
    /// its key. `None` when every source is done.
    pub fn peek(&self) -> Option<Entry<'_>> {
        self.cursors[self.best?].peek()
    }

    /// Move past the record [`peek`](Self::peek) gave: every source's record of that key.
    pub fn advance(&mut self) -> Result<()> {
        let mut key = std::mem::take(&mut self.key);
        let Some(e) = self.peek() else { return Ok(()) };
        let route = e.route;
        key.clear();
        key.extend_from_slice(e.key);
        for c in &mut self.cursors {
            while c
                .peek()
                .is_some_and(|e| e.route == route && e.key == key.as_slice())
            {
                c.advance()?;
            }
        }
        self.key = key;
        self.find_best();
        Ok(())
    }
}

/// Stream the union of `lists` (newest first) forward, one record per key: the one from the
/// newest list. With `drop_tombstones`, deletions are consumed instead of emitted; only safe
/// where no older list below can still hold the key.
pub fn merge(
    lists: &[ListRef],
    drop_tombstones: bool,
    mut emit: impl FnMut(u64, &[u8], Option<&[u8]>) -> Result<()>,
) -> Result<()> {
    let cursors = lists
        .iter()
        .map(|l| ListCursor::new(l.clone(), &l.span, Direction::Forward, Readahead::MERGE))
        .collect::<Result<Vec<_>>>()?;
    let mut m = Merge::new(cursors, Direction::Forward);
    while let Some(e) = m.peek() {
        if !(drop_tombstones && e.value.is_none()) {
            emit(e.route, e.key, e.value)?;
        }
        m.advance()?;
    }
    Ok(())
}
