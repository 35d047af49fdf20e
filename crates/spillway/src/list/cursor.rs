//! Reads a list view's records in position order, either way, within bounds: pages come from
//! disk in verified chunks that grow while the cursor keeps moving (readahead), so a short
//! scan reads one page per list and a long one reads big sequential chunks.

use super::ListRef;
use crate::collapse::cursor::{Cursor, Direction, Entry};
use crate::error::{Error, Result};
use crate::order::Span;
use crate::record::{self, Op};

/// How much to read per pread: `first` for the first chunk, doubling up to `max`.
#[derive(Clone, Copy, Debug)]
pub struct Readahead {
    pub first: u64,
    pub max: u64,
}

impl Readahead {
    /// Merges read whole lists from the start: read big from the first chunk.
    pub const MERGE: Readahead = Readahead {
        first: 512 << 10,
        max: 512 << 10,
    };
    /// Scans may stop after a few records: one page first, then more while they go on.
    pub const SCAN: Readahead = Readahead {
        first: 0,
        max: 256 << 10,
    };
}

/// A decoded record of the current page: its route, what it is, and where its key and value
/// or operand lie in the chunk.
#[derive(Clone, Copy)]
struct Slot {
    route: u64,
    kind: Kind,
    key: u32,
    key_len: u32,
    value: u32,
    value_len: u32,
    /// The times of an extended record (see `record`): when it expires, when it was written.
    until: u64,
    at: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Put,
    Delete,
    Merge,
    PutUntil,
    MergeAt,
    Expire,
}

pub struct ListCursor {
    list: ListRef,
    /// The part of the view to read: records outside are skipped.
    bounds: Span,
    dir: Direction,
    readahead: Readahead,
    next_read: u64,
    /// Pages `chunk_first..chunk_end` as read from disk, starting at file offset `chunk_base`.
    chunk: Vec<u8>,
    chunk_first: u32,
    chunk_end: u32,
    chunk_base: u64,
    /// The page whose records are in `slots`, and the current one among them. Going forward,
    /// records are decoded one at a time (a short scan stops early in a page): `slots` holds
    /// the current one, and `pos..page_end` what follows it. Going back, the page's records
    /// are decoded at once and put in the order they are walked: keys last to first, each
    /// key's stack newest first (a stack never straddles pages).
    page: u32,
    slots: Vec<Slot>,
    at: usize,
    pos: usize,
    page_end: usize,
    done: bool,
}

impl ListCursor {
    /// A cursor at the first record of `list` inside `bounds` in direction `dir`.
    pub fn new(
        list: ListRef,
        bounds: &Span,
        dir: Direction,
        readahead: Readahead,
    ) -> Result<ListCursor> {
        let bounds = list.span.intersect(bounds);
        let mut c = ListCursor {
            bounds,
            dir,
            readahead,
            next_read: readahead.first,
            chunk: Vec::new(),
            chunk_first: 0,
            chunk_end: 0,
            chunk_base: 0,
            page: 0,
            slots: Vec::new(),
            at: 0,
            pos: 0,
            page_end: 0,
            done: true,
            list,
        };
        if c.bounds.is_empty() || c.list.start >= c.list.end {
            return Ok(c);
        }
        let (start, end) = (c.list.start, c.list.end);
        let index = c.list.file.index()?;
        let first = match dir {
            Direction::Forward => {
                // An index of routes only may have records of a page's first route on the
                // page before too: start one page early there.
                let lo = c.bounds.lo.as_pos();
                let n = index.count_below(start, end, lo, !index.is_exact());
                Some(start + n.saturating_sub(1))
            }
            Direction::Backward => match &c.bounds.hi {
                None => Some(end - 1),
                Some(hi) => {
                    let n = index.count_below(start, end, hi.as_pos(), true);
                    (n > 0).then(|| start + n - 1)
                }
            },
        };
        if let Some(page) = first {
            c.done = false;
            c.enter(page)?;
            c.settle()?;
        }
        Ok(c)
    }

    /// Load page `page` (reading a chunk if it is not in memory) and stand at its first
    /// record in the cursor's direction.
    fn enter(&mut self, page: u32) -> Result<()> {
        if page < self.chunk_first || page >= self.chunk_end || self.chunk.is_empty() {
            self.read_chunk(page)?;
        }
        let file = &self.list.file;
        let index = file.index()?;
        self.pos = (index.offset(page) - self.chunk_base) as usize;
        let end = (index.offset(page + 1) - self.chunk_base) as usize;
        self.page_end = self.pos + file.records_end(&self.chunk[self.pos..end]);
        self.page = page;
        self.slots.clear();
        self.at = 0;
        match self.dir {
            Direction::Forward => self.decode_next(),
            Direction::Backward => {
                while self.pos < self.page_end {
                    self.decode_next()?;
                }
                self.slots.reverse();
                let mut i = 0;
                while i < self.slots.len() {
                    let mut j = i + 1;
                    while j < self.slots.len() && self.same_key(i, j) {
                        j += 1;
                    }
                    self.slots[i..j].reverse();
                    i = j;
                }
                Ok(())
            }
        }
    }

    fn same_key(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.slots[a], &self.slots[b]);
        a.route == b.route && self.slice(a.key, a.key_len) == self.slice(b.key, b.key_len)
    }

    fn slice(&self, at: u32, len: u32) -> &[u8] {
        &self.chunk[at as usize..(at + len) as usize]
    }

    /// Decode the record at `pos` (if the page has one left) into `slots`.
    fn decode_next(&mut self) -> Result<()> {
        if self.pos >= self.page_end {
            return Ok(());
        }
        let file = &self.list.file;
        let base = self.chunk.as_ptr() as usize;
        let chunk = &self.chunk[..self.page_end];
        let r = record::decode_as(file.encoding(), chunk, &mut self.pos).ok_or_else(|| {
            Error::corruption(
                file.path(),
                format!("malformed record in page {}", self.page),
            )
        })?;
        let (kind, until, at) = match r.op {
            Op::Put(_) => (Kind::Put, 0, 0),
            Op::Delete => (Kind::Delete, 0, 0),
            Op::Merge(_) => (Kind::Merge, 0, 0),
            Op::PutUntil(_, until) => (Kind::PutUntil, until, 0),
            Op::MergeAt(_, at) => (Kind::MergeAt, 0, at),
            Op::Expire { until, at } => (Kind::Expire, until, at),
            Op::DeleteRange { .. } => {
                return Err(Error::corruption(
                    file.path(),
                    format!("a range delete among the records of page {}", self.page),
                ))
            }
        };
        let bytes = r.op.bytes();
        self.slots.push(Slot {
            route: file.order().route(r.key),
            kind,
            key: (r.key.as_ptr() as usize - base) as u32,
            key_len: r.key.len() as u32,
            // An empty value may not point into the chunk at all.
            value: if bytes.is_empty() {
                0
            } else {
                (bytes.as_ptr() as usize - base) as u32
            },
            value_len: bytes.len() as u32,
            until,
            at,
        });
        Ok(())
    }

    /// Read a chunk holding `page`: pages after it going forward, before it going back.
    fn read_chunk(&mut self, page: u32) -> Result<()> {
        let file = &self.list.file;
        let index = file.index()?;
        let (mut a, mut b) = (page, page + 1);
        match self.dir {
            Direction::Forward => {
                while b < self.list.end && index.span_bytes(a, b + 1) <= self.next_read {
                    b += 1;
                }
            }
            Direction::Backward => {
                while a > self.list.start && index.span_bytes(a - 1, b) <= self.next_read {
                    a -= 1;
                }
            }
        }
        self.next_read = (self.next_read * 2)
            .max(index.span_bytes(a, b))
            .min(self.readahead.max);
        // The chunk's buffer is reused: a long scan allocates once. A failed read leaves it
        // empty, which the next load reads again.
        if let Err(e) = file.read_pages_into(a, b, &mut self.chunk) {
            self.chunk.clear();
            return Err(e);
        }
        self.chunk_first = a;
        self.chunk_end = b;
        self.chunk_base = index.offset(a);
        Ok(())
    }

    /// Step over records outside the bounds on the near side, and stop at the far side.
    fn settle(&mut self) -> Result<()> {
        loop {
            if self.done {
                return Ok(());
            }
            let Some(e) = self.current() else {
                self.next_page()?;
                continue;
            };
            let pos = e.pos();
            let (before, past) = match self.dir {
                Direction::Forward => (!self.bounds.lo.le(pos), self.bounds.is_above(pos)),
                Direction::Backward => (self.bounds.is_above(pos), !self.bounds.lo.le(pos)),
            };
            if past {
                self.done = true;
            } else if before {
                self.step()?;
            } else {
                return Ok(());
            }
        }
    }

    fn current(&self) -> Option<Entry<'_>> {
        let s = self.slots.get(self.at)?;
        let op = match s.kind {
            Kind::Put => Op::Put(self.slice(s.value, s.value_len)),
            Kind::Delete => Op::Delete,
            Kind::Merge => Op::Merge(self.slice(s.value, s.value_len)),
            Kind::PutUntil => Op::PutUntil(self.slice(s.value, s.value_len), s.until),
            Kind::MergeAt => Op::MergeAt(self.slice(s.value, s.value_len), s.at),
            Kind::Expire => Op::Expire {
                until: s.until,
                at: s.at,
            },
        };
        Some(Entry {
            route: s.route,
            key: self.slice(s.key, s.key_len),
            op,
        })
    }

    /// One record on, within the page or into the next.
    fn step(&mut self) -> Result<()> {
        match self.dir {
            Direction::Forward => {
                self.slots.clear();
                self.decode_next()?;
            }
            Direction::Backward => self.at += 1,
        }
        if self.at >= self.slots.len() {
            self.next_page()?;
        }
        Ok(())
    }

    fn next_page(&mut self) -> Result<()> {
        let next = match self.dir {
            Direction::Forward => Some(self.page + 1).filter(|&p| p < self.list.end),
            Direction::Backward => self.page.checked_sub(1).filter(|&p| p >= self.list.start),
        };
        match next {
            Some(p) => self.enter(p),
            None => {
                self.done = true;
                Ok(())
            }
        }
    }
}

impl Cursor for ListCursor {
    fn peek(&self) -> Option<Entry<'_>> {
        if self.done {
            return None;
        }
        self.current()
    }

    fn advance(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.step()?;
        self.settle()
    }

    fn covers(&self, route: u64, key: &[u8]) -> bool {
        self.list.covers(route, key)
    }

    fn may_cover(&self) -> bool {
        !self.list.file.ranges().is_empty()
    }

    fn covering(&self, route: u64, key: &[u8]) -> Option<Span> {
        self.list.covering(route, key)
    }

    fn narrow(&mut self, keep: &Span) -> Result<()> {
        let bounds = self.bounds.intersect(keep);
        if bounds != self.bounds {
            *self = ListCursor::new(self.list.clone(), &bounds, self.dir, self.readahead)?;
        }
        Ok(())
    }
}
