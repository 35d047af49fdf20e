//! [`Iter`]: a scan of the store in position order, either way, at one point in time.
//!
//! The store is a tree of nodes each owning a span of positions, with the newest records
//! highest. A scan therefore reads one leaf's span at a time (a *segment*), merging
//! everything on the root-to-leaf path — the root buffers, then each node's lists, newest
//! first — bounded to that span; at the span's end it descends again for the next one
//! (SplinterDB's range iterator). Each list is read from the page its segment starts in, a
//! page at a time at first and in growing chunks while the scan goes on, so a short scan reads
//! about one page per list and a long one streams. Tombstones hide what they delete and are
//! never returned; a key's merge operands are folded with what they fold into (the segment
//! holds every record of its keys, down to the leaf).

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use super::{Part, ReadPoint};
use crate::buffer::BufferCursor;
use crate::collapse::cursor::{Cursor, Direction, Entry};
use crate::collapse::Collapse;
use crate::error::{Error, Result};
use crate::list::{ListCursor, Readahead};
use crate::order::{cmp_pos, KeyOrder, Pivot, Span};
use crate::record::Op;
use crate::stats::Counters;
use crate::tree::Node;
use crate::upsert::fold::{live, Stack};
use crate::upsert::operator::Operator;

/// An iterator over `(key, value)` pairs in key order (hash order in a hashed store), from
/// [`Db::iter`](crate::Db::iter), [`Db::range`](crate::Db::range),
/// [`Db::prefix`](crate::Db::prefix) or a [`Snapshot`](crate::Snapshot).
///
/// It reads the store as it was when it was created: later writes, spills, splits and
/// garbage collection change nothing it returns, and the files it reads stay on disk until it
/// is dropped (so do not keep one for hours). It is double-ended: take from the front with
/// `next`, from the back with `next_back` (or `.rev()`), and the two meet without repeating.
/// An error reading the store (a damaged page) is returned once, and the iterator ends. A
/// key whose merge operands fail to fold ([`Error::MergeFailed`]) fails alone: its error
/// takes its place, and the iterator goes on past it.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let opts = spillway::Options::default().key_order(spillway::KeyOrder::Ordered);
/// let db = spillway::Db::open(dir.path(), opts)?;
/// for k in ["apple", "banana", "cherry", "date"] {
///     db.put(k, k.len().to_string())?;
/// }
/// fn keys(it: impl Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<String> {
///     it.map(|r| String::from_utf8(r.unwrap().0).unwrap()).collect()
/// }
/// assert_eq!(keys(db.range("b".."d")?), ["banana", "cherry"]);
/// assert_eq!(keys(db.iter().rev()), ["date", "cherry", "banana", "apple"]);
/// let mut it = db.iter();
/// it.seek("c");
/// assert_eq!(it.next().transpose()?.map(|(k, _)| k), Some(b"cherry".to_vec()));
/// # Ok(()) }
/// ```
pub struct Iter {
    /// The keyspace read, as of the version the read point took.
    part: Part,
    /// The last write group seen in its buffers (see `ReadPoint`).
    seq: u64,
    counters: Arc<Counters>,
    order: KeyOrder,
    operator: Option<Operator>,
    /// A key's records, when they are merge operands to fold.
    stack: Stack,
    /// The positions the iterator was made for.
    bounds: Span,
    /// The positions between the seeks, if any: what the two ends may still return.
    range: Span,
    front: Side,
    back: Side,
}

/// One end of the iterator.
#[derive(Default)]
struct Side {
    /// The merge of the current segment, if one is open.
    merge: Option<Collapse<Source>>,
    /// Where the next segment starts (front: inclusive) or ends (back: exclusive); `None`
    /// at the back means the end of everything.
    next: Option<Pivot>,
    /// The last position returned from this end.
    last: Option<(u64, Vec<u8>)>,
    /// No more segments after the current one.
    last_segment: bool,
    done: bool,
}

impl Side {
    /// A side starting at `next`, with nothing returned yet.
    fn from(next: Option<Pivot>, range: &Span) -> Side {
        Side {
            next,
            done: range.is_empty(),
            ..Side::default()
        }
    }

    /// This side as it goes on after the other end sought: from just past the last position
    /// it returned, in segments bounded by the new `range`. An open segment was bounded by
    /// the old range (and a side that had met the other end may have more to return now), so
    /// it is dropped and reopened.
    fn resumed(&self, dir: Direction, range: &Span) -> Side {
        // Where the side stopped, or the range's end if the seek narrowed the range past it.
        let next = match (&self.last, dir) {
            (Some((route, key)), Direction::Forward) => {
                Some(successor(*route, key).max(range.lo.clone()))
            }
            (Some((route, key)), Direction::Backward) => {
                let at = Pivot::new(*route, key);
                Some(range.hi.clone().map_or(at.clone(), |hi| hi.min(at)))
            }
            (None, Direction::Forward) => Some(range.lo.clone()),
            (None, Direction::Backward) => range.hi.clone(),
        };
        Side {
            last: self.last.clone(),
            ..Side::from(next, range)
        }
    }
}

/// Anything a scan merges.
enum Source {
    Buffer(BufferCursor),
    List(ListCursor),
}

impl Cursor for Source {
    fn peek(&self) -> Option<Entry<'_>> {
        match self {
            Source::Buffer(c) => c.peek(),
            Source::List(c) => c.peek(),
        }
    }
    fn advance(&mut self) -> Result<()> {
        match self {
            Source::Buffer(c) => c.advance(),
            Source::List(c) => c.advance(),
        }
    }
    fn covers(&self, route: u64, key: &[u8]) -> bool {
        match self {
            Source::Buffer(c) => c.covers(route, key),
            Source::List(c) => c.covers(route, key),
        }
    }
    fn covering(&self, route: u64, key: &[u8]) -> Option<Span> {
        match self {
            Source::Buffer(c) => c.covering(route, key),
            Source::List(c) => c.covering(route, key),
        }
    }
    fn may_cover(&self) -> bool {
        match self {
            Source::Buffer(c) => c.may_cover(),
            Source::List(c) => c.may_cover(),
        }
    }
    fn narrow(&mut self, keep: &Span) -> Result<()> {
        match self {
            Source::Buffer(c) => c.narrow(keep),
            Source::List(c) => c.narrow(keep),
        }
    }
}

impl Iter {
    pub(super) fn new(at: ReadPoint, part: Part, counters: &Arc<Counters>, range: Span) -> Iter {
        let order = part.def.order;
        let operator = part.def.operator.clone();
        Counters::bump(&counters.scans);
        let empty = range.is_empty();
        let front = Side {
            next: Some(range.lo.clone()),
            done: empty,
            ..Side::default()
        };
        let back = Side {
            next: range.hi.clone(),
            done: empty,
            ..Side::default()
        };
        Iter {
            part,
            seq: at.seq,
            counters: counters.clone(),
            order,
            operator,
            stack: Stack::default(),
            bounds: range.clone(),
            range,
            front,
            back,
        }
    }

    /// Position the front at the first key at or after `key` (within the iterator's range),
    /// wherever it was, as RocksDB's and LevelDB's `Seek` do: the next
    /// [`next`](Iterator::next) returns it, and keys before it are no longer returned from
    /// either end.
    pub fn seek(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.seek_pivot(Pivot::new(self.order.route(key), key));
    }

    /// Position the front at the first key whose [route](KeyOrder::route) is at least
    /// `route`, as [`seek`](Self::seek) does for a key: a scan stopped after a key resumes
    /// from the route after that key's without holding the key (keys sharing a route — rare
    /// in a hashed store — come back again unless the scan ended past them all).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?; // hashed
    /// for i in 0..100u32 {
    ///     db.put(i.to_be_bytes(), "v")?;
    /// }
    /// // Fifty keys, then the rest from the route after the fiftieth's.
    /// let first: Vec<Vec<u8>> = db.iter().take(50).map(|r| r.map(|(k, _)| k)).collect::<spillway::Result<_>>()?;
    /// let route = db.key_order().route(first.last().unwrap());
    /// let mut rest = db.iter();
    /// rest.seek_route(route + 1);
    /// assert_eq!(first.len() + rest.count(), 100);
    /// # Ok(()) }
    /// ```
    pub fn seek_route(&mut self, route: u64) {
        self.seek_pivot(Pivot::new(route, &[]));
    }

    fn seek_pivot(&mut self, p: Pivot) {
        self.range.lo = p.max(self.bounds.lo.clone());
        self.front = Side::from(Some(self.range.lo.clone()), &self.range);
        self.back = self.back.resumed(Direction::Backward, &self.range);
    }

    /// Position the back at the last key at or before `key` (within the iterator's range),
    /// wherever it was, as RocksDB's `SeekForPrev` does: the next
    /// [`next_back`](DoubleEndedIterator::next_back) returns it, and keys after it are no
    /// longer returned from either end.
    pub fn seek_back(&mut self, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        let p = successor(self.order.route(key), key);
        self.range.hi = match &self.bounds.hi {
            Some(h) if *h < p => Some(h.clone()),
            _ => Some(p),
        };
        self.back = Side::from(self.range.hi.clone(), &self.range);
        self.front = self.front.resumed(Direction::Forward, &self.range);
    }

    /// The leaf holding the positions a segment of `dir` starts from, and the lists on its
    /// path, newest first.
    fn path(&self, dir: Direction, from: Option<&Pivot>) -> (&Node, Vec<&crate::list::ListRef>) {
        let mut node = &self.part.tree.root;
        let mut lists = Vec::new();
        loop {
            lists.extend(&node.lists);
            let child = match (dir, from) {
                (Direction::Forward, Some(p)) => node.child_for(p.as_pos()),
                (Direction::Forward, None) => node.children.first(),
                (Direction::Backward, Some(p)) => node.child_below(p.as_pos()),
                (Direction::Backward, None) => node.children.last(),
            };
            match child {
                Some(c) => node = c,
                None => return (node, lists),
            }
        }
    }

    /// Open the next segment of side `dir`; `false` if there is none.
    fn open_segment(&mut self, dir: Direction) -> Result<bool> {
        let side = match dir {
            Direction::Forward => &self.front,
            Direction::Backward => &self.back,
        };
        if side.last_segment {
            return Ok(false);
        }
        let next = side.next.clone();
        let (leaf, lists) = self.path(dir, next.as_ref());
        let (segment, last_segment, following) = match dir {
            Direction::Forward => {
                let span = Span::new(next.clone().unwrap_or_default(), leaf.span.hi.clone());
                let end = leaf
                    .span
                    .hi
                    .as_ref()
                    .is_none_or(|h| self.range.is_above(h.as_pos()));
                (span, end, leaf.span.hi.clone())
            }
            Direction::Backward => {
                let span = Span::new(leaf.span.lo.clone(), next.clone());
                let end = leaf.span.lo <= self.range.lo;
                (span, end, Some(leaf.span.lo.clone()))
            }
        };
        let bounds = segment.intersect(&self.range);
        let mut sources = Vec::with_capacity(lists.len() + 2);
        for buffer in self.part.buffers() {
            let end = super::read(buffer).end_at(self.seq);
            sources.push(Source::Buffer(BufferCursor::new(
                buffer.clone(),
                end,
                &bounds,
                dir,
            )));
        }
        self.counters
            .scan_lists
            .fetch_add(lists.len() as u64, std::sync::atomic::Ordering::Relaxed);
        for list in lists {
            sources.push(Source::List(ListCursor::new(
                list.clone(),
                &bounds,
                dir,
                Readahead::SCAN,
            )?));
        }
        let side = match dir {
            Direction::Forward => &mut self.front,
            Direction::Backward => &mut self.back,
        };
        side.merge = Some(Collapse::new(sources, dir)?);
        side.last_segment = last_segment;
        side.next = following;
        Ok(true)
    }

    /// The next record from side `dir`.
    fn step(&mut self, dir: Direction) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let (side, other) = match dir {
                Direction::Forward => (&mut self.front, &self.back),
                Direction::Backward => (&mut self.back, &self.front),
            };
            if side.done {
                return Ok(None);
            }
            let Some(merge) = &mut side.merge else {
                if !self.open_segment(dir)? {
                    self.side(dir).done = true;
                }
                continue;
            };
            let Some(e) = merge.peek() else {
                side.merge = None;
                if side.last_segment {
                    side.done = true;
                }
                continue;
            };
            // The two ends meet: everything between them has been returned.
            let crossed = other.last.as_ref().is_some_and(|(r, k)| {
                let ord = cmp_pos(e.pos(), (*r, k));
                match dir {
                    Direction::Forward => ord.is_ge(),
                    Direction::Backward => ord.is_le(),
                }
            });
            if crossed {
                side.done = true;
                return Ok(None);
            }
            let last = side.last.get_or_insert_with(Default::default);
            last.0 = e.route;
            last.1.clear();
            last.1.extend_from_slice(e.key);
            let item = match e.op {
                Op::Put(v) => {
                    let item = (e.key.to_vec(), v.to_vec());
                    merge.advance()?;
                    Some(item)
                }
                Op::PutUntil(v, until) => {
                    let item =
                        (until > self.part.def.opts.now()).then(|| (e.key.to_vec(), v.to_vec()));
                    merge.advance()?;
                    item
                }
                Op::Delete | Op::DeleteRange { .. } => {
                    merge.advance()?;
                    None
                }
                Op::Merge(_) | Op::MergeAt(..) | Op::Expire { .. } => {
                    let key = last.1.clone();
                    self.stack.clear();
                    merge.take_stack(&mut self.stack)?;
                    let operands = self.stack.operands() as u64;
                    self.counters
                        .operands_folded
                        .fetch_add(operands, std::sync::atomic::Ordering::Relaxed);
                    let found = self.stack.resolve(&key, self.operator.as_ref())?;
                    live(found, || self.part.def.opts.now()).map(|(v, _)| (key, v))
                }
            };
            if item.is_some() {
                return Ok(item);
            }
        }
    }

    fn side(&mut self, dir: Direction) -> &mut Side {
        match dir {
            Direction::Forward => &mut self.front,
            Direction::Backward => &mut self.back,
        }
    }

    fn next_of(&mut self, dir: Direction) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        match self.step(dir) {
            Ok(item) => item.map(Ok),
            // The key's records were read past before its fold failed: go on from there.
            Err(e @ Error::MergeFailed { .. }) => Some(Err(e)),
            Err(e) => {
                self.front.done = true;
                self.back.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Iter {
    /// The time now by the store's clock (ms).
    pub(super) fn now(&self) -> u64 {
        self.part.def.opts.now()
    }
}

impl Iterator for Iter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_of(Direction::Forward)
    }
}

impl DoubleEndedIterator for Iter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.next_of(Direction::Backward)
    }
}

impl std::iter::FusedIterator for Iter {}

/// The first position after every position of `key`.
fn successor(route: u64, key: &[u8]) -> Pivot {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    Pivot::new(route, &k)
}

/// The span of positions of the keys in `range`; [`Error::NotOrdered`] unless `order` keeps
/// keys in order.
pub(super) fn key_span<K: AsRef<[u8]>>(
    order: KeyOrder,
    range: &impl RangeBounds<K>,
) -> Result<Span> {
    require_ordered(order)?;
    let at = |k: &K| Pivot::new(order.route(k.as_ref()), k.as_ref());
    let after = |k: &K| successor(order.route(k.as_ref()), k.as_ref());
    let lo = match range.start_bound() {
        Bound::Included(k) => at(k),
        Bound::Excluded(k) => after(k),
        Bound::Unbounded => Pivot::default(),
    };
    let hi = match range.end_bound() {
        Bound::Included(k) => Some(after(k)),
        Bound::Excluded(k) => Some(at(k)),
        Bound::Unbounded => None,
    };
    Ok(Span::new(lo, hi))
}

/// The keys starting with `prefix`: from `prefix` up to, not including, the first key above
/// them all (the prefix with its last byte below 0xFF raised by one, what follows dropped);
/// [`Error::NotOrdered`] unless `order` keeps keys in order.
pub(super) fn prefix_span(order: KeyOrder, prefix: &[u8]) -> Result<Span> {
    require_ordered(order)?;
    let lo = Pivot::new(order.route(prefix), prefix);
    let hi = prefix.iter().rposition(|&b| b != 0xff).map(|i| {
        let mut end = prefix[..=i].to_vec();
        end[i] += 1;
        Pivot::new(order.route(&end), &end)
    });
    Ok(Span::new(lo, hi))
}

/// `range` and `prefix` need keys in order.
fn require_ordered(order: KeyOrder) -> Result<()> {
    match order {
        KeyOrder::Ordered => Ok(()),
        KeyOrder::Hashed => Err(Error::NotOrdered),
    }
}
