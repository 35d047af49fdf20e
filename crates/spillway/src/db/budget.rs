//! The memory budget (`Options::memory_budget`, `Db::set_memory_budget`): how big the root
//! buffer may grow, decided again at every freeze.
//!
//! The store's memory is its root buffers — two with background spills, the one writers fill
//! and the one being spilled, together at most twice the limit (a buffer that fills while
//! the spill only does upkeep takes the frozen one's room: `Inner::must_freeze`) — plus the filters, page indexes and sketches of its lists, which
//! grow with the data. Under a budget the buffer takes what the lists leave: a store that
//! grows gets smaller buffers, so more, smaller spills and more write amplification; a bigger
//! budget buys fewer, larger spills. That is TurtleKV's checkpoint distance, a knob between
//! write amplification and memory, and like it the budget can be turned while the store runs.
//!
//! The lists' metadata and the smallest buffers come first. When node selectors would not fit
//! in what those leave, the biggest leaves' selectors leave memory for a scratch file read a
//! block per lookup (`tree::tier_file`, LSM-trie's clustered filters on disk), with a cache of
//! those blocks taking an eighth of the room.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use crate::options::Options;
use crate::tree::{SelectorRoom, TierFile};

/// The block cache's size while no budget holds (only selectors on disk from a budget that
/// was lifted use it, until the next spill brings them back to memory).
const UNBUDGETED_CACHE: usize = 8 << 20;

/// The smallest root buffer a budget leaves: an eighth of a node, at least 1 MiB. A spill
/// appends a list to each of up to `fan_out` children, so smaller buffers would write lists of
/// a few KiB, each a file to create and fsync (at 1 MiB, 20 M small records took minutes
/// instead of seconds to load). A budget the lists alone fill runs at this size, over budget.
fn min_buffer(opts: &Options) -> usize {
    (opts.node_size / 8).max(1 << 20)
}

pub struct Budget {
    /// Bytes for buffers and list metadata together; 0: no budget (`root_buffer_size` rules).
    budget: AtomicUsize,
    /// Bytes of records the root buffer holds before it is full.
    limit: AtomicUsize,
    /// Where selectors that do not fit go.
    tiers: Arc<TierFile>,
}

impl Budget {
    pub fn new(opts: &Options, tiers: Arc<TierFile>) -> Budget {
        Budget {
            budget: AtomicUsize::new(opts.memory_budget.unwrap_or(0)),
            limit: AtomicUsize::new(opts.root_buffer_size),
            tiers,
        }
    }

    pub fn tiers(&self) -> &Arc<TierFile> {
        &self.tiers
    }

    /// Where `tree`'s selectors may live: the memory the lists' metadata and the smallest
    /// buffers leave of the budget, less the block cache's share; the rest on disk, whose
    /// tiers' rewrites are put off while `hold_back` says so (see `SelectorRoom`).
    pub fn selector_room<'a>(
        &'a self,
        opts: &Options,
        list_metadata: u64,
        hold_back: &'a (dyn Fn() -> bool + Sync),
    ) -> SelectorRoom<'a> {
        let allowance = self.get().map(|budget| {
            let room = selector_share(opts, list_metadata, budget);
            room - cache_share(room)
        });
        SelectorRoom {
            file: &self.tiers,
            allowance,
            hold_back,
            merge_allowance: crate::tree::MERGE_ALLOWANCE,
        }
    }

    /// Bytes of records the root buffer holds before it is full.
    pub fn buffer_limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    pub fn get(&self) -> Option<usize> {
        Some(self.budget.load(Relaxed)).filter(|&b| b > 0)
    }

    pub fn set(&self, budget: Option<usize>) {
        self.budget.store(budget.unwrap_or(0), Relaxed);
    }

    /// Size the next root buffer for trees holding `held` (at open, at a freeze, after the
    /// budget changed).
    pub fn plan(&self, opts: &Options, held: Metadata) {
        let limit = match self.get() {
            None => {
                self.tiers.set_cache_capacity(UNBUDGETED_CACHE);
                opts.root_buffer_size
            }
            Some(budget) => {
                let lists = held.lists;
                let cache = cache_share(selector_share(opts, lists, budget));
                self.tiers.set_cache_capacity(cache as usize);
                let selectors = held.selectors;
                let held = (lists + selectors) as usize + self.tiers.cache_bytes();
                let left = budget.saturating_sub(held);
                (left / buffers(opts)).clamp(min_buffer(opts), crate::options::MAX_ROOT_BUFFER)
            }
        };
        self.limit.store(limit, Relaxed);
    }
}

/// Memory the trees hold besides the buffers: their lists' metadata (filters, page indexes,
/// sketches) and their selectors.
#[derive(Clone, Copy, Default)]
pub struct Metadata {
    pub lists: u64,
    pub selectors: u64,
}

fn buffers(opts: &Options) -> usize {
    if opts.background_spills {
        2
    } else {
        1
    }
}

/// What `budget` leaves for selectors and their block cache, after the lists' own metadata.
fn selector_share(opts: &Options, list_metadata: u64, budget: usize) -> u64 {
    let first = list_metadata + (buffers(opts) * min_buffer(opts)) as u64;
    (budget as u64).saturating_sub(first)
}

fn cache_share(room: u64) -> u64 {
    room / 8
}
