//! The root buffer (WB-tree §3.1): the tree's only in-memory node.
//!
//! Records are appended to an arena in their log encoding; a hash table keyed by the key's hash
//! points at the newest record of each key, so the buffer collapses as it fills and a GET is
//! one probe. At a spill the table's entries are radix-sorted by route — the order every list
//! is in. Scans read the buffer through sorted runs built when a scan first needs them (see
//! `runs`), so a store nobody scans pays nothing for them.

mod runs;

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

use hashbrown::HashTable;

pub use runs::BufferCursor;

use crate::order::KeyOrder;
use crate::radix;
use crate::record::{self, RecordRef};

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
    /// Whether the table has been sized for a full buffer (see `size_for`).
    sized: bool,
    /// Sorted runs of the records, for scans, and their memory: kept apart so that the write
    /// path's check of how full the buffer is takes no lock.
    runs: Mutex<runs::Runs>,
    runs_memory: AtomicUsize,
}

/// Bytes of table memory charged per key, so that the buffer's size tracks its real footprint.
const ENTRY_COST: usize = 17;

impl Buffer {
    /// A buffer sized up front for `keys` keys (0: unknown yet, see `size_for`) and `bytes` of
    /// records: growing a table of millions of entries rehashes all of them at random (45 ms
    /// at a million), and growing the arena copies it, each time on the writer's path.
    /// Untouched capacity costs address space, not memory.
    pub fn with_capacity(order: KeyOrder, keys: usize, bytes: usize) -> Buffer {
        Buffer {
            order,
            arena: Vec::with_capacity(bytes),
            table: HashTable::with_capacity(keys),
            superseded: Vec::new(),
            sized: keys > 0,
            runs: Mutex::default(),
            runs_memory: AtomicUsize::new(0),
        }
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
        let (order, arena) = (self.order, &self.arena);
        self.table.reserve(more, |e| rehash(order, arena, *e));
    }

    fn at(&self, offset: u64) -> RecordRef<'_> {
        record::decode(&self.arena, &mut (offset as usize)).expect("arena holds whole records")
    }

    /// Insert or overwrite; `value: None` is a delete (tombstone).
    pub fn put(&mut self, key: &[u8], value: Option<&[u8]>) {
        let route = self.order.route(key);
        let hash = self.order.hash(route, key);
        let offset = self.arena.len() as u64;
        record::encode(&mut self.arena, key, value);
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

    /// `Some(None)` if the newest record for `key` here is a delete; `route` and `hash` are
    /// the key's (see `KeyOrder`).
    pub fn get(&self, route: u64, hash: u64, key: &[u8]) -> Option<Option<&[u8]>> {
        let (_, offset) = self
            .table
            .find(hash, |&(r, o)| r == route && self.at(o).key == key)?;
        Some(self.at(*offset).value)
    }

    /// Where the records written so far end: a point in time that [`get_at`](Self::get_at)
    /// can read at while later writes go on. Writes are applied a whole group at a time under
    /// the buffer's lock, so a point taken under that lock never splits a group.
    pub fn end(&self) -> u64 {
        self.arena.len() as u64
    }

    /// [`get`](Self::get) as of point `end`: records written after it are not seen.
    pub fn get_at(&self, route: u64, hash: u64, key: &[u8], end: u64) -> Option<Option<&[u8]>> {
        let (_, newest) = self
            .table
            .find(hash, |&(r, o)| r == route && self.at(o).key == key)?;
        let mut offset = *newest;
        while offset >= end {
            let i = self
                .superseded
                .binary_search_by_key(&offset, |e| e.0)
                .ok()?;
            offset = self.superseded[i].1;
        }
        Some(self.at(offset).value)
    }

    /// Distinct keys held.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Approximate memory held: the arena (superseded records included), the table, and the
    /// runs built for scans.
    pub fn memory(&self) -> usize {
        self.arena.len()
            + self.table.len() * ENTRY_COST
            + self.superseded.len() * 16
            + self.runs_memory.load(Relaxed)
    }

    /// The newest record of every key, in position order.
    pub fn sorted(&self) -> SortedBuffer<'_> {
        let mut entries: Vec<(u64, u64)> = self.table.iter().copied().collect();
        self.sort_positions(&mut entries);
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
    /// Sort `(route, offset)` pairs into position order: radix by route, then keys sharing a
    /// route by key (rare when routes are hashes; common in ordered stores with long shared
    /// prefixes, hence more radix passes on the key's next bytes rather than comparisons).
    fn sort_positions(&self, entries: &mut Vec<(u64, u64)>) {
        radix::sort_by_route(entries, &mut Vec::new());
        let first_chunk = match self.order {
            KeyOrder::Hashed => 0,
            KeyOrder::Ordered => 1, // the route is the key's first 8 bytes
        };
        radix::sort_ties(entries, first_chunk, &|o| self.at(o).key);
    }
}

pub struct SortedBuffer<'a> {
    buffer: &'a Buffer,
    entries: Vec<(u64, u64)>,
}

impl<'a> SortedBuffer<'a> {
    /// Records in route order. Route order is random order in the arena, so each record would
    /// be a cache miss; prefetching a few entries ahead overlaps those misses.
    pub fn iter(&self) -> impl Iterator<Item = (u64, RecordRef<'a>)> + '_ {
        const AHEAD: usize = 8;
        let arena = &self.buffer.arena;
        self.entries.iter().enumerate().map(move |(i, &(r, o))| {
            if let Some(&(_, ahead)) = self.entries.get(i + AHEAD) {
                prefetch(arena, ahead as usize);
            }
            (r, self.buffer.at(o))
        })
    }
}

#[inline(always)]
fn prefetch(data: &[u8], offset: usize) {
    #[cfg(target_arch = "x86_64")]
    if offset < data.len() {
        // SAFETY: prefetching is only a hint, the address is inside `data`, and SSE is part of
        // the x86_64 baseline.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                data.as_ptr().add(offset).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, offset);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: &[u8]) -> u64 {
        KeyOrder::Hashed.route(key)
    }

    #[test]
    fn newest_wins_and_sorted_is_collapsed() {
        let mut b = Buffer::with_capacity(KeyOrder::Hashed, 0, 0);
        for i in 0u32..1000 {
            b.put(&i.to_le_bytes(), Some(b"old"));
        }
        for i in (0u32..1000).step_by(2) {
            b.put(&i.to_le_bytes(), Some(b"new"));
        }
        b.put(&7u32.to_le_bytes(), None);
        assert_eq!(
            b.get(
                h(&4u32.to_le_bytes()),
                h(&4u32.to_le_bytes()),
                &4u32.to_le_bytes()
            ),
            Some(Some(&b"new"[..]))
        );
        assert_eq!(
            b.get(
                h(&5u32.to_le_bytes()),
                h(&5u32.to_le_bytes()),
                &5u32.to_le_bytes()
            ),
            Some(Some(&b"old"[..]))
        );
        assert_eq!(
            b.get(
                h(&7u32.to_le_bytes()),
                h(&7u32.to_le_bytes()),
                &7u32.to_le_bytes()
            ),
            Some(None)
        );
        assert_eq!(b.get(h(b"absent"), h(b"absent"), b"absent"), None);
        assert_eq!(b.superseded.len(), 501);
        let sorted = b.sorted();
        let routes: Vec<u64> = sorted.iter().map(|(r, _)| r).collect();
        assert_eq!(routes.len(), 1000);
        assert!(routes.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn get_at_sees_the_buffer_as_it_was() {
        let mut b = Buffer::with_capacity(KeyOrder::Hashed, 0, 0);
        let at =
            |b: &Buffer, k: &[u8], end| b.get_at(h(k), h(k), k, end).map(|v| v.map(<[u8]>::to_vec));
        let empty = b.end();
        b.put(b"a", Some(b"1"));
        b.put(b"b", Some(b"1"));
        let first = b.end();
        b.put(b"a", Some(b"2"));
        b.put(b"b", None);
        b.put(b"c", Some(b"2"));
        let second = b.end();
        b.put(b"a", Some(b"3"));
        for (end, a, bb, c) in [
            (empty, None, None, None),
            (
                first,
                Some(Some(b"1".to_vec())),
                Some(Some(b"1".to_vec())),
                None,
            ),
            (
                second,
                Some(Some(b"2".to_vec())),
                Some(None),
                Some(Some(b"2".to_vec())),
            ),
            (
                b.end(),
                Some(Some(b"3".to_vec())),
                Some(None),
                Some(Some(b"2".to_vec())),
            ),
        ] {
            assert_eq!(at(&b, b"a", end), a, "a at {end}");
            assert_eq!(at(&b, b"b", end), bb, "b at {end}");
            assert_eq!(at(&b, b"c", end), c, "c at {end}");
        }
    }
}
