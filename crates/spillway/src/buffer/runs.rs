//! Reading a root buffer in position order, for scans.
//!
//! The buffer's table is a hash table, in no order. A scan asks for sorted *runs*: each covers
//! a stretch of the arena and lists every record in it (superseded ones too, which readers of
//! an earlier point in time need) in position order, newest first within a key. Runs are built
//! only when a scan needs them, from the records appended since the last run, and the last two
//! merge while the older is at most twice the newer, so a buffer has O(log n) runs and each
//! record is sorted O(log n) times — LSM's idea, in memory. A store nobody scans pays nothing.

use std::sync::{Arc, RwLock};

use super::Buffer;
use crate::collapse::cursor::{Cursor, Direction, Entry};
use crate::list::ranges::RangeSet;
use crate::order::{cmp_pos, KeyOrder, Span};
use crate::record::{self, Op};

/// A sorted run: `(route, arena offset)` of records in position order, newest first within a
/// key, and a fence per [`FENCE`] records: a copy of that record's position in one cache line.
/// A seek binary-searches the fences and then at most `FENCE` records of the arena: each step
/// of a search over the arena itself is a cache miss (a buffer's records lie wherever they
/// were appended), and a seek pays one search per run.
struct Run {
    entries: Box<[(u64, u64)]>,
    fences: Vec<Fence>,
}

/// One fence per this many records: a seek reads about log2(FENCE) records of the arena a
/// run, and the fences cost 64 ÷ FENCE bytes a record.
const FENCE: usize = 16;

/// A record's route and key, in one cache line; a key too long for it is read in the arena.
#[repr(align(64))]
struct Fence {
    route: u64,
    /// The key's length: `FENCE_KEY` or less, or the key is not here.
    len: u32,
    key: [u8; FENCE_KEY],
}

const FENCE_KEY: usize = 64 - 12;

impl Run {
    fn new(buf: &Buffer, entries: Vec<(u64, u64)>) -> Run {
        let fences = entries
            .iter()
            .step_by(FENCE)
            .map(|&(route, offset)| {
                let key = buf.at(offset).key;
                let mut fence = Fence {
                    route,
                    len: u32::MAX,
                    key: [0; FENCE_KEY],
                };
                if key.len() <= FENCE_KEY {
                    fence.len = key.len() as u32;
                    fence.key[..key.len()].copy_from_slice(key);
                }
                fence
            })
            .collect();
        Run {
            entries: entries.into(),
            fences,
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn get(&self, i: usize) -> Option<(u64, u64)> {
        self.entries.get(i).copied()
    }

    fn memory(&self) -> usize {
        self.entries.len() * 16 + self.fences.len() * size_of::<Fence>()
    }

    /// The index of the first record whose position fails `pred`, which holds for a prefix of
    /// the run: the fences narrow it to a stretch of `FENCE`, read in the arena.
    fn partition_point(&self, buf: &Buffer, pred: impl Fn((u64, &[u8])) -> bool) -> usize {
        let passed = first_false(self.fences.len(), |f| {
            let fence = &self.fences[f];
            match fence.key.get(..fence.len as usize) {
                Some(key) => pred((fence.route, key)),
                None => pred(buf.pos_of(self.entries[f * FENCE])),
            }
        });
        if passed == 0 {
            return 0;
        }
        // Fence `passed - 1` holds and fence `passed` (if any) fails.
        let lo = (passed - 1) * FENCE + 1;
        let hi = (passed * FENCE).min(self.entries.len());
        lo + first_false(hi - lo, |i| pred(buf.pos_of(self.entries[lo + i])))
    }
}

/// The first of `0..n` for which `pred` fails (it holds for a prefix), or `n`.
fn first_false(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[derive(Default)]
pub(super) struct Runs {
    runs: Vec<Arc<Run>>,
    /// The arena offset the runs cover up to.
    upto: u64,
}

impl Buffer {
    /// Runs covering every record the arena holds now.
    fn runs(&self) -> Vec<Arc<Run>> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut runs = crate::util::sync::lock(&self.runs);
        let end = self.arena.len() as u64;
        if runs.upto < end {
            let mut tail = Vec::new();
            let mut pos = runs.upto as usize;
            while pos < self.arena.len() {
                let offset = pos as u64;
                let r = record::decode(&self.arena, &mut pos).expect("arena holds whole records");
                // A range delete is no key's record (see `range_cut`).
                if !matches!(r.op, Op::DeleteRange { .. }) {
                    tail.push((self.order.route(r.key), offset));
                }
            }
            let cores = crate::util::cores::Cores::new(1);
            let tail = self.sort_positions(tail.len(), super::radix::slice_parts(&tail), &cores);
            let tail = Run::new(self, tail);
            self.runs_memory.fetch_add(tail.memory(), Relaxed);
            runs.runs.push(Arc::new(tail));
            runs.upto = end;
            while let [.., older, newer] = &runs.runs[..] {
                if older.len() > 2 * newer.len() {
                    break;
                }
                let merged = self.merge_runs(older, newer);
                self.runs_memory
                    .fetch_sub(older.memory() + newer.memory(), Relaxed);
                self.runs_memory.fetch_add(merged.memory(), Relaxed);
                runs.runs.pop();
                *runs.runs.last_mut().expect("two runs") = Arc::new(merged);
            }
        }
        runs.runs.clone()
    }

    fn pos_of(&self, e: (u64, u64)) -> (u64, &[u8]) {
        (e.0, self.at(e.1).key)
    }

    /// Merge two runs, `newer` covering later offsets: within a key, newest first.
    fn merge_runs(&self, older: &Run, newer: &Run) -> Run {
        let (older, newer) = (&older.entries, &newer.entries);
        let mut out = Vec::with_capacity(older.len() + newer.len());
        let (mut i, mut j) = (0, 0);
        // Each side's head, decoded once while it waits (a decode is a miss in the arena).
        let head = |run: &[(u64, u64)], k: usize| run.get(k).map(|&e| self.pos_of(e));
        let (mut a, mut b) = (head(older, 0), head(newer, 0));
        while let (Some(pa), Some(pb)) = (a, b) {
            // Equal positions: the newer run's record is the newer one.
            if cmp_pos(pb, pa).is_le() {
                out.push(newer[j]);
                j += 1;
                b = head(newer, j);
            } else {
                out.push(older[i]);
                i += 1;
                a = head(older, i);
            }
        }
        out.extend_from_slice(&older[i..]);
        out.extend_from_slice(&newer[j..]);
        Run::new(self, out)
    }
}

/// How many records a cursor copies out of the buffer on its first visit, and at most on
/// later ones: short scans need few (the buffer holds a small share of the store), long ones
/// save visits by taking more.
const FIRST_BATCH: usize = 1;
const MAX_BATCH: usize = 512;

/// Reads the records of a shared buffer inside `bounds`, as of arena point `end`, one way.
/// It copies a batch at a time under the buffer's read lock, so writers wait at most for one
/// batch, and it never holds the lock between calls.
pub struct BufferCursor {
    buffer: Arc<RwLock<Buffer>>,
    end: u64,
    bounds: Span,
    dir: Direction,
    /// Copies of the records of the current batch, and `(route, start)` of each.
    batch: Vec<u8>,
    items: Vec<(u64, usize)>,
    at: usize,
    /// Whether records beyond the batch remain, and how many to copy next time.
    more: bool,
    next_batch: usize,
    /// The range deletes the cursor's point in time sees: what it covers of older sources.
    ranges: Arc<RangeSet>,
    order: KeyOrder,
    /// The runs as the cursor found them (they cover every record before `end`; runs built
    /// later only merge these with newer records) and each one's next index in the cursor's
    /// direction (`usize::MAX`: none before 0). A batch resumes where the last one stopped.
    runs: Vec<Arc<Run>>,
    heads: Vec<usize>,
}

impl BufferCursor {
    pub fn new(
        buffer: Arc<RwLock<Buffer>>,
        end: u64,
        bounds: &Span,
        dir: Direction,
    ) -> BufferCursor {
        let mut c = BufferCursor {
            buffer,
            end,
            bounds: bounds.clone(),
            dir,
            batch: Vec::new(),
            items: Vec::new(),
            at: 0,
            more: !bounds.is_empty(),
            next_batch: FIRST_BATCH,
            ranges: Arc::default(),
            order: KeyOrder::Hashed,
            runs: Vec::new(),
            heads: Vec::new(),
        };
        {
            let buf = crate::util::sync::read(&c.buffer);
            c.order = buf.order;
            c.runs = buf.runs();
            let heads = c.heads_at_bound(&buf);
            c.heads = heads;
            if buf.has_ranges() {
                // Only those that meet the bounds can cover a key the cursor is asked about: a
                // scan beside a range delete then pays nothing per key for it.
                let ranges = buf.ranges_as_of(end.min(buf.end()));
                let meeting = ranges.meeting(&c.bounds, c.order == KeyOrder::Ordered);
                if !meeting.is_empty() {
                    c.ranges = Arc::new(meeting);
                }
            }
        }
        c.refill();
        c
    }

    /// Each run's first index at or past the near bound, in the cursor's direction.
    fn heads_at_bound(&self, buf: &Buffer) -> Vec<usize> {
        let fwd = self.dir == Direction::Forward;
        self.runs
            .iter()
            .map(|run| {
                if fwd {
                    run.partition_point(buf, |p| !self.bounds.lo.le(p))
                } else {
                    run.partition_point(buf, |p| !self.bounds.is_above(p))
                        .wrapping_sub(1)
                }
            })
            .collect()
    }

    /// Copy the next batch, from where the heads are.
    fn refill(&mut self) {
        self.batch.clear();
        self.items.clear();
        self.at = 0;
        if !self.more {
            return;
        }
        let guard = crate::util::sync::read(&self.buffer);
        let buf = &*guard;
        let (runs, heads) = (&self.runs, &mut self.heads);
        let fwd = self.dir == Direction::Forward;
        // Each run's head and its position, decoded once per step of that run.
        let at = |r: usize, i: usize| runs[r].get(i).map(|e| (e, buf.pos_of(e)));
        let mut tops: Vec<_> = (0..runs.len()).map(|r| at(r, heads[r])).collect();
        // Whether position `a` comes before `b` in the cursor's direction.
        let ahead = |a: (u64, &[u8]), b: (u64, &[u8])| {
            let ord = cmp_pos(a, b);
            if fwd {
                ord.is_lt()
            } else {
                ord.is_gt()
            }
        };
        // The run whose head comes first, and the first head of the others: while the best
        // run's next record is still ahead of that, it stays the best, with no look at the
        // other runs (a stretch of keys written together lies in one run).
        let mut best: Option<usize> = None;
        let mut second: Option<(u64, &[u8])> = None;
        let batch = self.next_batch;
        self.next_batch = (batch * 2).min(MAX_BATCH);
        // Room for the batch, by the size of the records copied so far (a key's stack may
        // hold more): a new allocation, not a grown one, as the old holds nothing to keep.
        let bytes = batch * self.batch.capacity().max(64) / self.items.capacity().max(1);
        if self.batch.capacity() < bytes {
            self.batch = Vec::with_capacity(bytes);
        }
        if self.items.capacity() < batch {
            self.items = Vec::with_capacity(batch);
        }
        while self.items.len() < batch {
            let stays = best
                .is_some_and(|b| tops[b].is_some_and(|(_, p)| second.is_none_or(|s| ahead(p, s))));
            if !stays {
                (best, second) = (None, None);
                for (r, top) in tops.iter().enumerate() {
                    let Some((_, p)) = *top else { continue };
                    match best.and_then(|b| tops[b]) {
                        Some((_, first)) if !ahead(p, first) => {
                            if second.is_none_or(|s| ahead(p, s)) {
                                second = Some(p);
                            }
                        }
                        first => {
                            second = first.map(|(_, f)| f);
                            best = Some(r);
                        }
                    }
                }
            }
            let Some((_, pos)) = best.and_then(|b| tops[b]) else {
                self.more = false;
                break;
            };
            let past = if fwd {
                self.bounds.is_above(pos)
            } else {
                !self.bounds.lo.le(pos)
            };
            if past {
                self.more = false;
                break;
            }
            let route = pos.0;
            // Every record of this key, in every run that has it: the best run, and the
            // others only if one's head is at it too (then they are all looked at again).
            let shared = second.is_some_and(|s| cmp_pos(s, pos).is_eq());
            let mut newest: Option<u64> = None;
            for (r, top) in tops.iter_mut().enumerate() {
                if !shared && Some(r) != best {
                    continue;
                }
                while let Some((e, p)) = *top {
                    if cmp_pos(p, pos).is_ne() {
                        break;
                    }
                    if e.1 < self.end && newest.is_none_or(|n| e.1 > n) {
                        newest = Some(e.1);
                    }
                    heads[r] = if fwd {
                        heads[r] + 1
                    } else {
                        heads[r].wrapping_sub(1)
                    };
                    *top = at(r, heads[r]);
                }
            }
            if shared {
                best = None;
            }
            // Its stack, newest first in either direction, as every cursor gives a key's
            // records.
            if let Some(offset) = newest {
                // Records older than a range delete covering them are gone.
                let cut = if buf.has_ranges() {
                    buf.range_cut(buf.at(offset).key, self.end)
                } else {
                    None
                };
                for (at, rec) in buf.stack_from(offset) {
                    if cut.is_some_and(|c| at < c) {
                        break;
                    }
                    self.items.push((route, self.batch.len()));
                    record::encode(&mut self.batch, rec.key, rec.op);
                }
            }
        }
    }

    fn current(&self) -> Option<Entry<'_>> {
        let &(route, start) = self.items.get(self.at)?;
        let r = record::decode(&self.batch, &mut { start }).expect("encoded by refill");
        Some(Entry {
            route,
            key: r.key,
            op: r.op,
        })
    }
}

impl Cursor for BufferCursor {
    fn peek(&self) -> Option<Entry<'_>> {
        self.current()
    }

    fn covers(&self, _route: u64, key: &[u8]) -> bool {
        !self.ranges.is_empty() && self.ranges.covers(key)
    }

    fn may_cover(&self) -> bool {
        !self.ranges.is_empty()
    }

    fn covering(&self, _route: u64, key: &[u8]) -> Option<Span> {
        self.ranges.span_of(key, self.order)
    }

    fn narrow(&mut self, keep: &Span) -> crate::error::Result<()> {
        let bounds = self.bounds.intersect(keep);
        if bounds != self.bounds {
            self.bounds = bounds;
            self.more = !self.bounds.is_empty();
            let buffer = self.buffer.clone();
            self.heads = self.heads_at_bound(&crate::util::sync::read(&buffer));
            self.refill();
        }
        Ok(())
    }

    fn advance(&mut self) -> crate::error::Result<()> {
        self.at += 1;
        if self.at >= self.items.len() && self.more {
            self.refill();
        }
        Ok(())
    }
}
