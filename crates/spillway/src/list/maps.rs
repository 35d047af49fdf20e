//! How many list files a process maps into memory at once (`Options::mmap_reads`).
//!
//! Each map is one of the process's memory areas, and Linux allows a process
//! `vm.max_map_count` of them (65,530 by default; some distributions raise it to 1,048,576).
//! The stores of a process share a quarter of that, read once at the first open, and leave the
//! rest to the application (its heap, thread stacks, libraries and maps of its own). A store
//! holds one list file per MiB or so of data, and a GET into a file without a map takes a
//! `pread` instead: at 300 M × 16 B (5,400–5,600 list files) warm GETs ran 1.10× (median of
//! five rounds) to 1.29–1.33× (another run) faster with every file mapped than with 4,096
//! (BENCHMARKS.md).
//!
//! A file is mapped at its first point read if the budget has room, and keeps its map until the
//! file is dropped; a file refused for want of room asks again at a later read once another
//! file has given its map back.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

/// What `vm.max_map_count` is taken to be where it cannot be read: Linux's default.
const DEFAULT_MAX_MAP_COUNT: usize = 65_530;

/// The share of the process's memory areas its stores' maps may take: one in this many.
const SHARE: usize = 4;

/// A number of maps shared by the stores that hold it, counted as they are taken and given
/// back.
#[derive(Debug)]
pub struct MapBudget {
    limit: usize,
    mapped: AtomicUsize,
}

/// The budget of every store of this process.
static PROCESS: LazyLock<Arc<MapBudget>> =
    LazyLock::new(|| Arc::new(MapBudget::new(process_limit())));

/// The most list files the stores of this process map into memory at once: a quarter of
/// `vm.max_map_count` as read at the first open (16,382 at Linux's default), and none where the
/// address space is small (32-bit targets). Files beyond it are read with `pread`.
pub fn max_mapped_files() -> usize {
    PROCESS.limit()
}

fn process_limit() -> usize {
    if usize::BITS < 64 {
        return 0;
    }
    let areas = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(DEFAULT_MAX_MAP_COUNT);
    areas / SHARE
}

impl MapBudget {
    /// A budget of `limit` maps, none taken.
    pub fn new(limit: usize) -> MapBudget {
        MapBudget {
            limit,
            mapped: AtomicUsize::new(0),
        }
    }

    /// The budget every store of this process shares.
    pub fn process() -> Arc<MapBudget> {
        PROCESS.clone()
    }

    /// Whether a map might be taken now: a hint, read without a write, for a read of an
    /// unmapped file to decide whether to try [`reserve`](Self::reserve).
    pub fn has_room(&self) -> bool {
        self.mapped.load(Relaxed) < self.limit
    }

    /// Take one map, if there is room; [`release`](Self::release) gives it back.
    pub fn reserve(&self) -> bool {
        self.mapped
            .fetch_update(Relaxed, Relaxed, |n| (n < self.limit).then_some(n + 1))
            .is_ok()
    }

    /// Give back a map [`reserve`](Self::reserve) took.
    pub fn release(&self) {
        let was = self.mapped.fetch_sub(1, Relaxed);
        debug_assert!(was > 0, "a map given back that was never taken");
    }

    /// Maps taken now.
    #[cfg(test)]
    pub fn mapped(&self) -> usize {
        self.mapped.load(Relaxed)
    }

    /// The most maps that may be taken at once.
    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_gives_what_it_has_and_takes_back() {
        let b = MapBudget::new(2);
        assert!(b.has_room());
        assert!(b.reserve() && b.reserve());
        assert!(!b.has_room());
        assert!(!b.reserve(), "a third map from a budget of two");
        assert_eq!(b.mapped(), 2);
        b.release();
        assert!(b.has_room() && b.reserve());
        assert_eq!(b.mapped(), 2);
        assert!(!MapBudget::new(0).reserve());
    }

    #[test]
    fn the_process_budget_is_a_quarter_of_its_memory_areas() {
        let areas = match std::fs::read_to_string("/proc/sys/vm/max_map_count") {
            Ok(s) => s.trim().parse::<usize>().unwrap(),
            Err(_) => DEFAULT_MAX_MAP_COUNT,
        };
        let expected = if usize::BITS >= 64 { areas / SHARE } else { 0 };
        assert_eq!(max_mapped_files(), expected);
        assert_eq!(MapBudget::process().limit(), expected);
    }
}
