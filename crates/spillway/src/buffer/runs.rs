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

/// `(route, arena offset)` of records, in position order, newest first within a key.
type Run = Arc<[(u64, u64)]>;

#[derive(Default)]
pub(super) struct Runs {
    runs: Vec<Run>,
    /// The arena offset the runs cover up to.
    upto: u64,
}

impl Buffer {
    /// Runs covering every record the arena holds now.
    fn runs(&self) -> Vec<Run> {
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
            self.sort_positions(&mut tail);
            self.runs_memory
                .fetch_add(tail.len() * 16, std::sync::atomic::Ordering::Relaxed);
            runs.runs.push(tail.into());
            runs.upto = end;
            while let [.., older, newer] = &runs.runs[..] {
                if older.len() > 2 * newer.len() {
                    break;
                }
                let merged = self.merge_runs(older, newer);
                runs.runs.pop();
                *runs.runs.last_mut().expect("two runs") = merged;
            }
        }
        runs.runs.clone()
    }

    fn pos_of(&self, e: (u64, u64)) -> (u64, &[u8]) {
        (e.0, self.at(e.1).key)
    }

    /// Merge two runs, `newer` covering later offsets: within a key, newest first.
    fn merge_runs(&self, older: &Run, newer: &Run) -> Run {
        let mut out = Vec::with_capacity(older.len() + newer.len());
        let (mut i, mut j) = (0, 0);
        while i < older.len() && j < newer.len() {
            // Equal positions: the newer run's record is the newer one.
            if cmp_pos(self.pos_of(newer[j]), self.pos_of(older[i])).is_le() {
                out.push(newer[j]);
                j += 1;
            } else {
                out.push(older[i]);
                i += 1;
            }
        }
        out.extend_from_slice(&older[i..]);
        out.extend_from_slice(&newer[j..]);
        out.into()
    }
}

/// How many records a cursor copies out of the buffer on its first visit, and at most on
/// later ones: short scans need few (the buffer holds a small share of the store), long ones
/// save visits by taking more.
const FIRST_BATCH: usize = 8;
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
        };
        {
            let buf = crate::util::sync::read(&c.buffer);
            c.order = buf.order;
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
        c.refill(None);
        c
    }

    /// Copy the next batch: records past `after` (the last one returned), or from the near
    /// bound.
    fn refill(&mut self, after: Option<(u64, Vec<u8>)>) {
        self.batch.clear();
        self.items.clear();
        self.at = 0;
        if !self.more {
            return;
        }
        let guard = crate::util::sync::read(&self.buffer);
        let buf = &*guard;
        let runs = buf.runs();
        let fwd = self.dir == Direction::Forward;
        let after = after.as_ref().map(|(r, k)| (*r, k.as_slice()));
        // Each run's next index in the cursor's direction (`usize::MAX`: none before 0).
        let mut heads: Vec<usize> = runs
            .iter()
            .map(|run| {
                let n = match (fwd, after) {
                    (true, Some(a)) => run.partition_point(|&e| buf.pos_of(e) <= a),
                    (true, None) => run.partition_point(|&e| !self.bounds.lo.le(buf.pos_of(e))),
                    (false, Some(a)) => run.partition_point(|&e| buf.pos_of(e) < a),
                    (false, None) => run.partition_point(|&e| !self.bounds.is_above(buf.pos_of(e))),
                };
                if fwd {
                    n
                } else {
                    n.wrapping_sub(1)
                }
            })
            .collect();
        let head = |runs: &[Run], heads: &[usize], r: usize| runs[r].get(heads[r]).copied();
        let batch = self.next_batch;
        self.next_batch = (batch * 2).min(MAX_BATCH);
        while self.items.len() < batch {
            let mut best: Option<(u64, u64)> = None;
            for r in 0..runs.len() {
                if let Some(e) = head(&runs, &heads, r) {
                    let better = best.is_none_or(|b| {
                        let ord = cmp_pos(buf.pos_of(e), buf.pos_of(b));
                        if fwd {
                            ord.is_lt()
                        } else {
                            ord.is_gt()
                        }
                    });
                    if better {
                        best = Some(e);
                    }
                }
            }
            let Some(best) = best else {
                self.more = false;
                break;
            };
            let pos = buf.pos_of(best);
            let past = if fwd {
                self.bounds.is_above(pos)
            } else {
                !self.bounds.lo.le(pos)
            };
            if past {
                self.more = false;
                break;
            }
            // Every record of this key, in every run: the newest before `end` is the one.
            let mut newest: Option<u64> = None;
            for r in 0..runs.len() {
                while let Some(e) = head(&runs, &heads, r) {
                    if cmp_pos(buf.pos_of(e), pos).is_ne() {
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
                }
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
                    self.items.push((best.0, self.batch.len()));
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

    fn covering(&self, _route: u64, key: &[u8]) -> Option<Span> {
        self.ranges.span_of(key, self.order)
    }

    fn narrow(&mut self, keep: &Span) -> crate::error::Result<()> {
        let bounds = self.bounds.intersect(keep);
        if bounds != self.bounds {
            self.bounds = bounds;
            self.more = !self.bounds.is_empty();
            self.refill(None);
        }
        Ok(())
    }

    fn advance(&mut self) -> crate::error::Result<()> {
        self.at += 1;
        if self.at >= self.items.len() && self.more {
            let last = self.items.last().map(|&(route, start)| {
                let r = record::decode(&self.batch, &mut { start }).expect("encoded by refill");
                (route, r.key.to_vec())
            });
            self.refill(last);
        }
        Ok(())
    }
}
