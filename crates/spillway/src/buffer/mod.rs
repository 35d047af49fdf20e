//! The root buffer (WB-tree §3.1): the tree's only in-memory node.
//!
//! Records are appended to an arena in their log encoding; a hash table keyed by the key's hash
//! points at the newest record of each key, so the buffer collapses as it fills and a GET is
//! one probe. A merge operand is folded into the key's newest record as it arrives (see
//! [`Buffer::put`]), so a hot counter stays one live record per buffer. At a spill the table's entries are radix-sorted by route — the order every list
//! is in. Scans read the buffer through sorted runs built when a scan first needs them (see
//! `runs`), so a store nobody scans pays nothing for them.

mod radix;
mod runs;

use std::collections::BTreeMap;
use std::ops::{Bound, Range};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use hashbrown::HashTable;

pub use runs::BufferCursor;

use crate::list::ranges::RangeSet;
use crate::list::sketch::{Sketch, SketchBuilder};
use crate::order::{KeyOrder, Span};
use crate::record::{self, Op, RecordRef, NEVER};
use crate::upsert::fold::{self, Arrival, Stack};
use crate::upsert::operator::Operator;
use crate::util::cores::Cores;
use crate::util::prefetch::prefetch;

pub struct Buffer {
    order: KeyOrder,
    arena: Vec<u8>,
    /// `(route, arena offset)` of the newest record of each key, found by the key's hash (the
    /// route itself in a hashed store). Keeping the route spares a spill's sort a read of
    /// every key.
    table: HashTable<(u64, u64)>,
    /// `(offset, offset of the record it superseded)` for every record that overwrote an
    /// older one of its key, in offset order. Readers of an earlier point in time follow it
    /// back (see [`get_at`](Self::get_at)); keys written once cost nothing here.
    superseded: Vec<(u64, u64)>,
    /// `(offset, offset below)` for every merge operand whose fold goes on into an older record
    /// of the buffer — the operator could not fold it in as it arrived — in offset order. Any
    /// other operand's fold goes on below the buffer.
    stacked: Vec<(u64, u64)>,
    operator: Option<Operator>,
    /// Keys whose stack of unfolded operands grew past [`MAX_STACKED`] since the writer last
    /// asked (see [`take_deep`](Self::take_deep)).
    deep: Vec<Vec<u8>>,
    /// Whether the table has been sized for a full buffer (see `size_for`).
    sized: bool,
    /// Sorted runs of the records, for scans, and their memory: kept apart so that the write
    /// path's check of how full the buffer is takes no lock.
    runs: Mutex<runs::Runs>,
    runs_memory: AtomicUsize,
    /// Readers see the records before this point only, while the writer applies a group whose
    /// fsync is still in flight (see [`hold`](Self::hold)).
    held: Option<u64>,
    /// `(sequence number, offset)` where each write group's records start, in order: a
    /// reader at a point in time cuts the buffer at the first group after it (see
    /// [`end_at`](Self::end_at)).
    marks: Vec<(u64, u64)>,
    /// Whether merge operands are stamped with the time they are written: once the keyspace
    /// has held an expiring record (see `fold`). Passed on from buffer to buffer.
    stamps: bool,
    /// The arena offsets of the range deletes written, in order. A range delete hides the
    /// records of the keys it covers written before it (at lower offsets) — in this buffer
    /// and everywhere below.
    ranges: Vec<u64>,
    /// For each key a range delete covers, the newest one's offset: disjoint segments,
    /// `start → (end, offset)`, so that a read asks one lookup however many there are.
    segments: BTreeMap<Vec<u8>, (Option<Vec<u8>>, u64)>,
    /// All of them as one set, shared with the scans that read the buffer (copied only when
    /// a range delete comes while one holds it).
    union: Arc<RangeSet>,
}

/// Operands of one key a buffer stacks (the operator could not fold them as they arrived:
/// it has no partial merge) before the writer folds them into a value.
pub const MAX_STACKED: usize = 16;

/// Reserve `want` with `try_reserve` (`true`: granted), or half as much, and so on, until
/// the system grants it: capacity is a hint, never a reason to fail.
fn reserve_what_is_granted(want: usize, mut try_reserve: impl FnMut(usize) -> bool) {
    let mut want = want;
    while want > 0 && !try_reserve(want) {
        want /= 2;
    }
}

/// Bytes of table memory charged per key, so that the buffer's size tracks its real footprint.
const ENTRY_COST: usize = 17;

impl Buffer {
    /// A buffer sized up front for `keys` keys (0: unknown yet, see `size_for`) and `bytes` of
    /// records: growing a table of millions of entries rehashes all of them at random (45 ms
    /// at a million), and growing the arena copies it, each time on the writer's path.
    /// Untouched capacity costs address space, not memory; where the system refuses that
    /// much address space (a root buffer of 64 GiB on a smaller machine), less is reserved
    /// and the buffer grows as it fills.
    pub fn with_capacity(
        order: KeyOrder,
        operator: Option<Operator>,
        keys: usize,
        bytes: usize,
    ) -> Buffer {
        let mut buffer = Buffer {
            order,
            arena: Vec::new(),
            table: HashTable::new(),
            superseded: Vec::new(),
            stacked: Vec::new(),
            operator,
            deep: Vec::new(),
            sized: keys > 0,
            runs: Mutex::default(),
            runs_memory: AtomicUsize::new(0),
            held: None,
            marks: Vec::new(),
            stamps: false,
            ranges: Vec::new(),
            segments: BTreeMap::new(),
            union: Arc::default(),
        };
        reserve_what_is_granted(bytes, |n| buffer.arena.try_reserve_exact(n).is_ok());
        buffer.reserve_keys(keys);
        buffer
    }

    /// Room for `more` keys in the table, or as much of it as the system grants.
    fn reserve_keys(&mut self, more: usize) {
        let (order, arena, table) = (self.order, &self.arena, &mut self.table);
        reserve_what_is_granted(more, |n| {
            table.try_reserve(n, |e| rehash(order, arena, *e)).is_ok()
        });
    }

    /// Once the first records show their typical size, size the table for `bytes` of such
    /// records, so that it never has to grow while big.
    pub fn size_for(&mut self, bytes: usize) {
        const SAMPLE: usize = 1024;
        if self.sized || self.table.len() < SAMPLE {
            return;
        }
        self.sized = true;
        let per_key = self.arena.len() / self.table.len() + ENTRY_COST;
        let more = (bytes / per_key).saturating_sub(self.table.len());
        self.reserve_keys(more);
    }

    fn at(&self, offset: u64) -> RecordRef<'_> {
        record::decode(&self.arena, &mut (offset as usize)).expect("arena holds whole records")
    }

    /// Write `op` to `key`, written at time `at` (ms; what stamps merge operands and changes of
    /// expiry). A merge operand is folded into the key's newest record here when the operator
    /// can: into a value or a delete (a full merge: the result is a value), or into an operand
    /// (a partial merge); a change of expiry into a value. Otherwise it is stacked on that
    /// record.
    pub fn put(&mut self, key: &[u8], op: Op<'_>, at: u64) {
        let route = self.order.route(key);
        let hash = self.order.hash(route, key);
        self.stamps |= op.concerns_expiry();
        match op {
            Op::Merge(operand) | Op::MergeAt(operand, _) => {
                let stamp = if self.stamps { at.max(1) } else { 0 };
                return self.put_operand(route, hash, key, operand, stamp);
            }
            Op::Expire { until, .. } => return self.put_expire(route, hash, key, until, at),
            Op::DeleteRange { end } => return self.put_range(key, end),
            Op::Put(_) | Op::PutUntil(..) | Op::Delete => {}
        }
        let offset = self.arena.len() as u64;
        record::encode(&mut self.arena, key, op);
        let (order, arena) = (self.order, &self.arena);
        let same_key = |&(r, o): &(u64, u64)| {
            r == route && record::decode(arena, &mut (o as usize)).is_some_and(|rec| rec.key == key)
        };
        match self.table.find_mut(hash, same_key) {
            Some(slot) => {
                self.superseded.push((offset, slot.1));
                slot.1 = offset;
            }
            None => {
                self.table
                    .insert_unique(hash, (route, offset), |e| rehash(order, arena, *e));
            }
        }
    }

    /// A range delete of `[start, end)`: a record of the arena (a point in its order), outside
    /// the table (it is no key's record).
    fn put_range(&mut self, start: &[u8], end: Option<&[u8]>) {
        let offset = self.arena.len() as u64;
        record::encode(&mut self.arena, start, Op::DeleteRange { end });
        if end.is_some_and(|e| e <= start) {
            return; // an empty range: logged, but it covers nothing
        }
        self.ranges.push(offset);
        Arc::make_mut(&mut self.union).insert(start, end);
        // The newest covers all it spans: cut the segments it overlaps around it.
        let overlapping: Vec<Vec<u8>> = self
            .segments
            .range(..=start.to_vec())
            .next_back()
            .filter(|(_, (e, _))| e.as_deref().is_none_or(|e| start < e))
            .map(|(s, _)| s.clone())
            .into_iter()
            .chain(
                self.segments
                    .range(start.to_vec()..)
                    .skip_while(|(s, _)| s.as_slice() == start)
                    .take_while(|(s, _)| end.is_none_or(|end| s.as_slice() < end))
                    .map(|(s, _)| s.clone()),
            )
            .collect();
        for s in overlapping {
            let (e, o) = self.segments.remove(&s).expect("just found");
            if s.as_slice() < start {
                self.segments.insert(s, (Some(start.to_vec()), o));
            }
            if let Some(end) = end {
                if e.as_deref().is_none_or(|e| end < e) {
                    self.segments.insert(end.to_vec(), (e, o));
                }
            }
        }
        self.segments
            .insert(start.to_vec(), (end.map(<[u8]>::to_vec), offset));
    }

    /// The offset of the newest range delete covering `key` that a reader at point `end` sees
    /// (below `end`), if any.
    pub fn range_cut(&self, key: &[u8], end: u64) -> Option<u64> {
        // Most keys lie outside every range: the union answers with two comparisons, where
        // the segments (one or two per range delete) take a tree descent.
        if !self.union.covers(key) {
            return None;
        }
        let (_, &(ref seg_end, newest)) = self
            .segments
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()?;
        if seg_end.as_deref().is_some_and(|e| key >= e) {
            return None;
        }
        if newest < end {
            return Some(newest);
        }
        // A reader of an earlier point: the newest one it sees, if any.
        self.ranges.iter().rev().copied().find(|&o| {
            o < end && {
                let r = self.at(o);
                let Op::DeleteRange { end: e } = r.op else {
                    unreachable!("ranges holds range deletes")
                };
                r.key <= key && e.is_none_or(|e| key < e)
            }
        })
    }

    /// The range deletes a reader at point `end` sees, as one set.
    pub fn ranges_as_of(&self, end: u64) -> Arc<RangeSet> {
        if self.ranges.last().is_none_or(|&o| o < end) {
            return self.union.clone();
        }
        let mut set = RangeSet::default();
        for &o in self.ranges.iter().take_while(|&&o| o < end) {
            let r = self.at(o);
            if let Op::DeleteRange { end } = r.op {
                set.insert(r.key, end);
            }
        }
        Arc::new(set)
    }

    /// Whether this buffer stamps merge operands (see `stamps`).
    pub fn stamps_operands(&self) -> bool {
        self.stamps
    }

    /// Stamp merge operands from now on: the keyspace holds expiring records.
    pub fn stamp_operands(&mut self) {
        self.stamps = true;
    }

    fn put_operand(&mut self, route: u64, hash: u64, key: &[u8], operand: &[u8], at: u64) {
        let stacked = if at == 0 {
            Op::Merge(operand)
        } else {
            Op::MergeAt(operand, at)
        };
        let Some(newest) = self.newest(route, hash, key) else {
            return self.put_raw(route, hash, key, stacked, None, None);
        };
        // Under a range delete written since, the operand finds nothing.
        let cut = self.cut_since(key, newest);
        let below = if cut { Op::Delete } else { self.at(newest).op };
        let folded = self
            .operator
            .as_ref()
            .and_then(|operator| fold::on_arrival(operator, key, below, operand, at));
        match folded {
            Some(Arrival::Put(v, NEVER)) => {
                self.put_raw(route, hash, key, Op::Put(&v), Some(newest), None)
            }
            Some(Arrival::Put(v, until)) => self.put_raw(
                route,
                hash,
                key,
                Op::PutUntil(&v, until),
                Some(newest),
                None,
            ),
            // The fold goes on where the newest record's did.
            Some(Arrival::Merge(m)) => {
                let below = self.stacked_below(newest);
                self.put_raw(route, hash, key, Op::Merge(&m), Some(newest), below)
            }
            None if cut => self.put_raw(route, hash, key, stacked, Some(newest), None),
            None => self.stack_on(route, hash, key, stacked, newest),
        }
    }

    /// Whether a range delete written after the record at `offset` covers `key`.
    fn cut_since(&self, key: &[u8], offset: u64) -> bool {
        self.has_ranges() && self.range_cut(key, u64::MAX).is_some_and(|c| c > offset)
    }

    /// A change of the key's expiry to `until`, written at `at`: folded into the key's value
    /// if the buffer holds it (or dropped, if the key is gone), else stacked.
    fn put_expire(&mut self, route: u64, hash: u64, key: &[u8], until: u64, at: u64) {
        let expire = Op::Expire { until, at };
        let Some(newest) = self.newest(route, hash, key) else {
            return self.put_raw(route, hash, key, expire, None, None);
        };
        if self.cut_since(key, newest) {
            return; // the key is gone: a range delete since covers it
        }
        let value = match fold::expire_on_arrival(self.at(newest).op, until, at) {
            None => return self.stack_on(route, hash, key, expire, newest),
            Some(None) => return, // the key is gone: the change finds nothing
            Some(Some(op)) => op.bytes().to_vec(),
        };
        let op = if until == NEVER {
            Op::Put(&value)
        } else {
            Op::PutUntil(&value, until)
        };
        self.put_raw(route, hash, key, op, Some(newest), None)
    }

    /// Stack message `op` on the key's newest record, at `newest`.
    fn stack_on(&mut self, route: u64, hash: u64, key: &[u8], op: Op<'_>, newest: u64) {
        let offset = self.end();
        self.put_raw(route, hash, key, op, Some(newest), Some(newest));
        if self.stack_at(offset).nth(MAX_STACKED).is_some() {
            self.deep.push(key.to_vec());
        }
    }

    /// Keys whose operands have stacked up in this buffer past [`MAX_STACKED`]: the writer
    /// folds them with what lies below (RocksDB's `max_successive_merges`), so that neither
    /// a read nor a spill meets a long stack of one key.
    pub fn take_deep(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.deep)
    }

    /// Append a record of `key` whose newest record so far is at `newest`, its fold going on
    /// at `below`.
    fn put_raw(
        &mut self,
        route: u64,
        hash: u64,
        key: &[u8],
        op: Op<'_>,
        newest: Option<u64>,
        below: Option<u64>,
    ) {
        let offset = self.arena.len() as u64;
        record::encode(&mut self.arena, key, op);
        if let Some(b) = below {
            self.stacked.push((offset, b));
        }
        let (order, arena) = (self.order, &self.arena);
        match newest {
            Some(n) => {
                self.superseded.push((offset, n));
                let slot = self
                    .table
                    .find_mut(hash, |&(_, o)| o == n)
                    .expect("the key's newest record is in the table");
                slot.1 = offset;
            }
            None => {
                self.table
                    .insert_unique(hash, (route, offset), |e| rehash(order, arena, *e));
            }
        }
    }

    /// The offset of the newest record of `key`.
    fn newest(&self, route: u64, hash: u64, key: &[u8]) -> Option<u64> {
        self.table
            .find(hash, |&(r, o)| r == route && self.at(o).key == key)
            .map(|&(_, o)| o)
    }

    /// Where the fold of the operand at `offset` goes on in the buffer, if it does.
    fn stacked_below(&self, offset: u64) -> Option<u64> {
        let i = self.stacked.binary_search_by_key(&offset, |e| e.0).ok()?;
        Some(self.stacked[i].1)
    }

    /// The records of a key's stack starting at `offset`: that record and, while they are
    /// operands stacked on older ones, those — newest first.
    pub fn stack_at(&self, offset: u64) -> impl Iterator<Item = RecordRef<'_>> + '_ {
        self.stack_from(offset).map(|(_, rec)| rec)
    }

    /// [`stack_at`](Self::stack_at), each record with its offset.
    pub fn stack_from(&self, offset: u64) -> impl Iterator<Item = (u64, RecordRef<'_>)> + '_ {
        let mut next = Some(offset);
        std::iter::from_fn(move || {
            let offset = next?;
            let rec = self.at(offset);
            next = if rec.op.is_base() {
                None
            } else {
                self.stacked_below(offset)
            };
            Some((offset, rec))
        })
    }

    /// Whether the buffer holds range deletes.
    pub fn has_ranges(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// Whether `key` was written at or after point `point` (see [`end`](Self::end)): a
    /// record of its own, or a range delete covering it.
    pub fn written_since(&self, route: u64, hash: u64, key: &[u8], point: u64) -> bool {
        self.newest(route, hash, key).is_some_and(|o| o >= point)
            || (self.has_ranges() && self.range_cut(key, u64::MAX).is_some_and(|c| c >= point))
    }

    /// Where the records readers may see end: a point in time that [`get_at`](Self::get_at)
    /// can read at while later writes go on. Writes are applied a whole group at a time under
    /// the buffer's lock, so a point taken under that lock never splits a group.
    pub fn end(&self) -> u64 {
        self.held.unwrap_or(self.arena.len() as u64)
    }

    /// Note that the records put from now on belong to the write group numbered `seq`
    /// (numbers increase from group to group).
    pub fn mark(&mut self, seq: u64) {
        debug_assert!(self.marks.last().is_none_or(|m| m.0 < seq));
        self.marks.push((seq, self.arena.len() as u64));
    }

    /// Where the records of the groups numbered up to `seq` end ([`end`](Self::end) for
    /// `u64::MAX`): a point in time shared by every buffer of the store.
    pub fn end_at(&self, seq: u64) -> u64 {
        let end = self.end();
        if seq == u64::MAX {
            return end;
        }
        let after = self.marks.partition_point(|m| m.0 <= seq);
        self.marks.get(after).map_or(end, |m| m.1.min(end))
    }

    /// Hide the records put from now on from readers until [`release`](Self::release): the
    /// writer applies a group while its fsync is in flight, and a reader must not see a write
    /// that a power loss could still take back.
    pub fn hold(&mut self) {
        debug_assert!(self.held.is_none());
        self.held = Some(self.arena.len() as u64);
    }

    /// Show every record put so far (the group held back is durable).
    pub fn release(&mut self) {
        self.held = None;
    }

    /// Add the records of `key` as of point `end` (records written after it are not seen;
    /// `u64::MAX`: all readers may see) to `stack`; `true` if that completed it. `route` and
    /// `hash` are the key's (see `KeyOrder`).
    pub fn get_at(&self, route: u64, hash: u64, key: &[u8], end: u64, stack: &mut Stack) -> bool {
        let end = end.min(self.end());
        // Records older than the newest range delete covering the key are gone, and so is
        // all below the buffer.
        let cut = if self.ranges.is_empty() {
            None
        } else {
            self.range_cut(key, end)
        };
        let cut_here = |stack: &mut Stack| cut.is_some() && stack.push(Op::Delete);
        let Some(mut offset) = self.newest(route, hash, key) else {
            return cut_here(stack);
        };
        while offset >= end {
            let Ok(i) = self.superseded.binary_search_by_key(&offset, |e| e.0) else {
                return cut_here(stack);
            };
            offset = self.superseded[i].1;
        }
        for (at, rec) in self.stack_from(offset) {
            if cut.is_some_and(|c| at < c) {
                break;
            }
            if stack.push(rec.op) {
                return true;
            }
        }
        cut_here(stack)
    }

    /// A sketch of the keys held, as a list of them would have (one page), for estimates of
    /// the store's distinct keys that count what is not spilled yet.
    pub fn sketch(&self) -> Sketch {
        let mut b = SketchBuilder::default();
        for &(route, offset) in self.table.iter() {
            let rec = self.at(offset);
            let bytes = rec.key.len() + rec.op.bytes().len();
            let hash = self.order.hash(route, rec.key);
            b.add(hash, 0, bytes, matches!(rec.op, Op::Delete), false);
        }
        b.finish()
    }

    /// Distinct keys held.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether the buffer holds nothing to spill: no key, no range delete.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty() && self.ranges.is_empty()
    }

    /// Approximate memory held: the arena (superseded records included), the table, and the
    /// runs built for scans.
    pub fn memory(&self) -> usize {
        self.arena.len()
            + self.table.len() * ENTRY_COST
            + (self.superseded.len() + self.stacked.len() + self.marks.len()) * 16
            + self.ranges.len() * 8
            + self.segments.len() * 64
            + self.union.memory()
            + self.runs_memory.load(Relaxed)
    }

    /// The newest record of every key, in position order.
    #[cfg(test)]
    pub fn sorted(&self) -> SortedBuffer<'_> {
        self.sorted_on(&Cores::new(1))
    }

    /// [`sorted`](Self::sorted), sorting on `cores`.
    pub fn sorted_on(&self, cores: &Cores) -> SortedBuffer<'_> {
        let len = self.table.len();
        let part = |i: usize, n: usize| {
            // The entries a core skips to reach its part cost a scan of control bytes.
            let chunk = len.div_ceil(n);
            self.table.iter().skip(i * chunk).take(chunk).copied()
        };
        let entries = self.sort_positions(len, part, cores);
        SortedBuffer {
            buffer: self,
            entries,
        }
    }
}

/// The table hash of entry `(route, offset)`, when the table grows.
fn rehash(order: KeyOrder, arena: &[u8], (route, offset): (u64, u64)) -> u64 {
    match order {
        KeyOrder::Hashed => route,
        KeyOrder::Ordered => {
            let key = record::decode(arena, &mut (offset as usize))
                .expect("arena holds whole records")
                .key;
            order.hash(route, key)
        }
    }
}

impl Buffer {
    /// The `len` `(route, offset)` pairs of `part` (see `radix::sort_by_route_on`) in
    /// position order: radix by route, then keys sharing a route by key (rare when routes are
    /// hashes; common in ordered stores with long shared prefixes, hence more radix passes on
    /// the key's next bytes rather than comparisons), and a key's records newest first.
    fn sort_positions<I: Iterator<Item = (u64, u64)>>(
        &self,
        len: usize,
        part: impl Fn(usize, usize) -> I + Sync,
        cores: &Cores,
    ) -> Vec<(u64, u64)> {
        let first_chunk = match self.order {
            KeyOrder::Hashed => 0,
            KeyOrder::Ordered => 1, // the route is the key's first 8 bytes
        };
        let key_of = |o| self.at(o).key;
        radix::sort_by_route_on(len, part, cores, |run| {
            radix::sort_ties(run, first_chunk, &key_of)
        })
    }
}

pub struct SortedBuffer<'a> {
    buffer: &'a Buffer,
    entries: Vec<(u64, u64)>,
}

impl<'a> SortedBuffer<'a> {
    /// The buffer's range deletes, which a spill hands down with its records.
    pub fn ranges(&self) -> RangeSet {
        (*self.buffer.union).clone()
    }

    /// Records in route order, each key's stack newest first.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = (u64, RecordRef<'a>)> + '_ {
        self.iter_share(0..self.entries.len())
    }

    /// Where the records of each of `spans` lie (spans in position order, covering every
    /// position, as a node's children do): ranges of entries for [`iter_share`](Self::iter_share).
    pub fn shares(&self, spans: &[&Span]) -> Vec<Range<usize>> {
        let mut start = 0;
        spans
            .iter()
            .map(|span| {
                let end = start
                    + self.entries[start..]
                        .partition_point(|&(r, o)| !span.is_above((r, self.buffer.at(o).key)));
                let share = start..end;
                start = end;
                share
            })
            .collect()
    }

    /// The records of one share (see [`shares`](Self::shares)), in route order, each key's
    /// stack newest first. Route order is random order in the arena, so each record would be
    /// a cache miss; prefetching a few entries ahead overlaps those misses.
    pub fn iter_share(
        &self,
        share: Range<usize>,
    ) -> impl Iterator<Item = (u64, RecordRef<'a>)> + '_ {
        const AHEAD: usize = 8;
        let buffer = self.buffer;
        let end = share.end;
        self.entries[share.clone()]
            .iter()
            .zip(share)
            .flat_map(move |(&(r, o), i)| {
                if let Some(&(_, ahead)) = self.entries[..end].get(i + AHEAD) {
                    prefetch(&buffer.arena, ahead as usize);
                }
                // What a range delete written after them hides goes no further.
                let cut = if buffer.has_ranges() {
                    buffer.range_cut(buffer.at(o).key, u64::MAX)
                } else {
                    None
                };
                buffer
                    .stack_from(o)
                    .take_while(move |&(at, _)| cut.is_none_or(|c| at > c))
                    .map(move |(_, rec)| (r, rec))
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::order::Pivot;
    use crate::upsert::operator::{Append, MergeOperator, U64Add};

    fn h(key: &[u8]) -> u64 {
        KeyOrder::Hashed.route(key)
    }

    fn buffer(op: Option<Arc<dyn MergeOperator>>) -> Buffer {
        Buffer::with_capacity(KeyOrder::Hashed, op.map(Operator), 0, 0)
    }

    /// What a read of `key` at `end` finds here: `None` if the buffer has no record of it,
    /// else the fold of its stack as if nothing lay below.
    fn look(b: &Buffer, key: &[u8], end: u64) -> Option<Option<Vec<u8>>> {
        let mut s = Stack::default();
        b.get_at(h(key), h(key), key, end, &mut s);
        (!s.is_empty()).then(|| s.resolve(key, b.operator.as_ref()).unwrap().map(|f| f.0))
    }

    /// Seeks into an ordered buffer's sorted runs, both ways, land on the right record for keys
    /// of every length around what a run's fence holds of a key (52 bytes), all sharing one
    /// route (their first 8 bytes), with keys written again in later runs.
    #[test]
    fn seeks_land_on_keys_of_every_length_around_a_fences_width() {
        use std::collections::BTreeMap;
        use std::sync::RwLock;

        use crate::collapse::cursor::{Cursor, Direction};
        use crate::order::{Pivot, Span};

        let mut keys = Vec::new();
        for len in 8..=70usize {
            for last in [b'a', b'm', b'z'] {
                let mut k = vec![b'p'; len];
                k[len - 1] = last;
                keys.push(k);
            }
        }
        let route = |k: &[u8]| KeyOrder::Ordered.route(k);
        let shared = Arc::new(RwLock::new(Buffer::with_capacity(
            KeyOrder::Ordered,
            None,
            0,
            0,
        )));
        let mut model = BTreeMap::new();
        // Three stretches, a scan after each: three runs (150, 30 and 9 records).
        for (stretch, picks) in [(0u8, 0..150), (1, 20..50), (2, 100..109)] {
            for i in picks {
                let k = &keys[i * 7 % keys.len()];
                shared.write().unwrap().put(k, Op::Put(&[stretch]), 0);
                model.insert(k.clone(), vec![stretch]);
            }
            let end = shared.read().unwrap().end();
            BufferCursor::new(shared.clone(), end, &Span::default(), Direction::Forward);
        }
        let end = shared.read().unwrap().end();
        for k in &keys {
            let at = Pivot::new(route(k), k);
            let c = BufferCursor::new(
                shared.clone(),
                end,
                &Span::new(at.clone(), None),
                Direction::Forward,
            );
            let want = model.range(k.clone()..).next();
            let got = c.peek().map(|e| (e.key.to_vec(), e.op));
            assert_eq!(
                got.as_ref().map(|g| &g.0),
                want.map(|w| w.0),
                "forward from {}",
                k.len()
            );
            if let (Some((_, Op::Put(v))), Some((_, w))) = (got, want) {
                assert_eq!(v, w.as_slice());
            }
            let below = Span::new(Pivot::default(), Some(at));
            let c = BufferCursor::new(shared.clone(), end, &below, Direction::Backward);
            let want = model.range(..k.clone()).next_back().map(|w| w.0.clone());
            assert_eq!(
                c.peek().map(|e| e.key.to_vec()),
                want,
                "backward from {}",
                k.len()
            );
        }
    }

    #[test]
    fn newest_wins_and_sorted_is_collapsed() {
        let mut b = buffer(None);
        for i in 0u32..1000 {
            b.put(&i.to_le_bytes(), Op::Put(b"old"), 0);
        }
        for i in (0u32..1000).step_by(2) {
            b.put(&i.to_le_bytes(), Op::Put(b"new"), 0);
        }
        b.put(&7u32.to_le_bytes(), Op::Delete, 0);
        let at = |k: u32| look(&b, &k.to_le_bytes(), u64::MAX);
        assert_eq!(at(4), Some(Some(b"new".to_vec())));
        assert_eq!(at(5), Some(Some(b"old".to_vec())));
        assert_eq!(at(7), Some(None));
        assert_eq!(look(&b, b"absent", u64::MAX), None);
        assert_eq!(b.superseded.len(), 501);
        let sorted = b.sorted();
        let routes: Vec<u64> = sorted.iter().map(|(r, _)| r).collect();
        assert_eq!(routes.len(), 1000);
        assert!(routes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn shares_cut_the_sorted_records_at_the_spans_bounds() {
        let mut b = buffer(None);
        for i in 0u32..1000 {
            b.put(&i.to_le_bytes(), Op::Put(b"v"), 0);
        }
        let sorted = b.sorted();
        let routes: Vec<u64> = sorted.iter().map(|(r, _)| r).collect();
        // Bounds at a record's route, between records, and past every record: spans that are
        // empty at either end and in the middle.
        let cuts = [routes[0], routes[0], routes[10] + 1, routes[500], u64::MAX];
        let mut spans = Vec::new();
        let mut lo = Pivot::new(0, &[]);
        for &c in &cuts {
            let hi = Pivot::new(c, &[]);
            spans.push(Span::new(lo, Some(hi.clone())));
            lo = hi;
        }
        spans.push(Span::new(lo, None));
        let refs: Vec<&Span> = spans.iter().collect();
        let shares = sorted.shares(&refs);
        assert_eq!(shares.len(), spans.len());
        assert_eq!(shares.iter().map(|s| s.len()).sum::<usize>(), 1000);
        let lens: Vec<usize> = shares.iter().map(|s| s.len()).collect();
        assert_eq!(lens, [0, 0, 11, 489, 500, 0]);
        for (share, span) in shares.into_iter().zip(&spans) {
            for (route, rec) in sorted.iter_share(share) {
                assert!(span.contains((route, rec.key)));
            }
        }
    }

    #[test]
    fn get_at_sees_the_buffer_as_it_was() {
        let mut b = buffer(None);
        let empty = b.end();
        b.put(b"a", Op::Put(b"1"), 0);
        b.put(b"b", Op::Put(b"1"), 0);
        let first = b.end();
        b.put(b"a", Op::Put(b"2"), 0);
        b.put(b"b", Op::Delete, 0);
        b.put(b"c", Op::Put(b"2"), 0);
        let second = b.end();
        b.put(b"a", Op::Put(b"3"), 0);
        let v = |s: &str| Some(Some(s.as_bytes().to_vec()));
        for (end, a, bb, c) in [
            (empty, None, None, None),
            (first, v("1"), v("1"), None),
            (second, v("2"), Some(None), v("2")),
            (b.end(), v("3"), Some(None), v("2")),
        ] {
            assert_eq!(look(&b, b"a", end), a, "a at {end}");
            assert_eq!(look(&b, b"b", end), bb, "b at {end}");
            assert_eq!(look(&b, b"c", end), c, "c at {end}");
        }
    }

    #[test]
    fn operands_fold_as_they_arrive() {
        let mut b = buffer(Some(Arc::new(U64Add)));
        let n = |v: u64| v.to_le_bytes();
        let before = b.end();
        for _ in 0..100 {
            b.put(b"hot", Op::Merge(&n(1)), 0);
        }
        let middle = b.end();
        b.put(b"base", Op::Put(&n(10)), 0);
        b.put(b"base", Op::Merge(&n(5)), 0);
        b.put(b"hot", Op::Merge(&n(1)), 0);
        // One operand of "hot" (the fold of 101), one value of "base" (15).
        let sorted = b.sorted();
        let mut got: Vec<(Vec<u8>, Op<'_>)> =
            sorted.iter().map(|(_, r)| (r.key.to_vec(), r.op)).collect();
        got.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(
            got,
            [
                (b"base".to_vec(), Op::Put(&n(15))),
                (b"hot".to_vec(), Op::Merge(&n(101)))
            ]
        );
        // Earlier points see earlier folds.
        assert_eq!(look(&b, b"hot", middle), Some(Some(n(100).to_vec())));
        assert_eq!(look(&b, b"hot", before), None);
    }

    #[test]
    fn operands_that_cannot_fold_stack() {
        let n = |v: u64| v.to_le_bytes();
        let mut b = buffer(Some(Arc::new(U64Add)));
        // A value that is not a counter: the operand stacks on it, and later ones fold into
        // the stacked operand, keeping the link to the value.
        b.put(b"k", Op::Put(b"text"), 0);
        b.put(b"k", Op::Merge(&n(1)), 0);
        b.put(b"k", Op::Merge(&n(2)), 0);
        let sorted = b.sorted();
        let stack: Vec<Op<'_>> = sorted.iter().map(|(_, r)| r.op).collect();
        assert_eq!(stack, [Op::Merge(&n(3)), Op::Put(b"text")]);
        let mut s = Stack::default();
        assert!(b.get_at(h(b"k"), h(b"k"), b"k", u64::MAX, &mut s));
        assert!(s.resolve(b"k", b.operator.as_ref()).is_err());

        // An operator without partial merges: every operand stacks.
        struct Concat;
        impl MergeOperator for Concat {
            fn name(&self) -> &str {
                "concat"
            }
            fn full_merge(
                &self,
                k: &[u8],
                b: Option<&[u8]>,
                o: &[&[u8]],
            ) -> std::result::Result<Vec<u8>, String> {
                Append::new().full_merge(k, b, o)
            }
        }
        let mut b = buffer(Some(Arc::new(Concat)));
        for piece in [&b"a"[..], b"b", b"c"] {
            b.put(b"k", Op::Merge(piece), 0);
        }
        let sorted = b.sorted();
        assert_eq!(sorted.iter().count(), 3);
        assert_eq!(look(&b, b"k", u64::MAX), Some(Some(b"abc".to_vec())));
        b.put(b"k", Op::Put(b"x"), 0);
        b.put(b"k", Op::Merge(b"y"), 0);
        assert_eq!(look(&b, b"k", u64::MAX), Some(Some(b"xy".to_vec())));
    }

    #[test]
    fn records_put_while_held_are_seen_only_once_released() {
        let mut b = buffer(Some(Arc::new(U64Add)));
        b.put(b"old", Op::Put(b"1"), 0);
        b.put(b"count", Op::Put(&1u64.to_le_bytes()), 0);
        let before = b.end();
        b.hold();
        b.put(b"new", Op::Put(b"2"), 0);
        b.put(b"old", Op::Put(b"3"), 0);
        b.put(b"count", Op::Merge(&5u64.to_le_bytes()), 0);
        assert_eq!(b.end(), before, "a point taken now splits no held group");
        assert_eq!(look(&b, b"new", u64::MAX), None);
        assert_eq!(look(&b, b"old", u64::MAX), Some(Some(b"1".to_vec())));
        assert_eq!(
            look(&b, b"count", u64::MAX),
            Some(Some(1u64.to_le_bytes().to_vec()))
        );
        b.release();
        assert!(b.end() > before);
        assert_eq!(look(&b, b"new", u64::MAX), Some(Some(b"2".to_vec())));
        assert_eq!(look(&b, b"old", u64::MAX), Some(Some(b"3".to_vec())));
        assert_eq!(
            look(&b, b"count", u64::MAX),
            Some(Some(6u64.to_le_bytes().to_vec()))
        );
        // A read point from before the hold still reads as of then.
        assert_eq!(look(&b, b"old", before), Some(Some(b"1".to_vec())));
    }
}
