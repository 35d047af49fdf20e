//! The memory budget (`Options::memory_budget`, `Db::set_memory_budget`): how big the root
//! buffer may grow, decided again at every freeze.
//!
//! The store's memory is its root buffers — two with background spills, the one writers fill
//! and the one being spilled — plus the filters, page indexes and sketches of its lists, which
//! grow with the data. Under a budget the buffer takes what the lists leave: a store that
//! grows gets smaller buffers, so more, smaller spills and more write amplification; a bigger
//! budget buys fewer, larger spills. That is TurtleKV's checkpoint distance, a knob between
//! write amplification and memory, and like it the budget can be turned while the store runs.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::options::Options;
use crate::tree::Tree;

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
}

impl Budget {
    pub fn new(opts: &Options) -> Budget {
        Budget {
            budget: AtomicUsize::new(opts.memory_budget.unwrap_or(0)),
            limit: AtomicUsize::new(opts.root_buffer_size),
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

    /// Size the next root buffer for `tree` (at open, at a freeze, after the budget changed).
    pub fn plan(&self, opts: &Options, tree: &Tree) {
        let limit = match self.get() {
            None => opts.root_buffer_size,
            Some(budget) => {
                let buffers = if opts.background_spills { 2 } else { 1 };
                let left = budget.saturating_sub(tree.metadata_memory() as usize);
                (left / buffers).clamp(min_buffer(opts), crate::options::MAX_ROOT_BUFFER)
            }
        };
        self.limit.store(limit, Relaxed);
    }
}
