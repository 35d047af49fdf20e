//! Whether this thread's reads have lately found their keys in the tree's lists.
//!
//! A point read waits for its leaf's selector (three cache misses in turn) to learn which list
//! holds the key, then for that list's page. A read that expects to find its key in a list
//! loads the page of the leaf's likeliest list meanwhile — from before it probes the root
//! buffer (see `Tree::start_read`): in memory, reads of keys that are there ran ~10% faster.
//! For a key that is not there the selector names no list, and that load is wasted work:
//! absent reads ran ~30% slower with it. So each thread keeps a short tally of its recent
//! reads' outcomes — found in a list, or in a root buffer or nowhere — and a read speculates
//! only while most of them found their key in a list: a store read for keys it holds gets
//! the one, a store probed for keys it lacks (a cache's misses, an insert-if-absent) or read
//! for what was just written keeps the other.

use std::cell::Cell;

/// The tally's ceiling: about the last this many reads count.
const CEILING: u8 = 16;

thread_local! {
    /// Up one for a read that found its key in a list, down one for one that did not.
    static TALLY: Cell<u8> = const { Cell::new(CEILING / 2) };
}

/// Whether the next read should expect to find its key in a list.
#[inline]
pub fn expect_found() -> bool {
    TALLY.get() >= CEILING / 2
}

/// A read found its key in a list, or did not.
#[inline]
pub fn record(found: bool) {
    TALLY.with(|t| {
        let v = t.get();
        t.set(if found {
            (v + 1).min(CEILING)
        } else {
            v.saturating_sub(1)
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tally_follows_the_recent_majority() {
        std::thread::spawn(|| {
            assert!(expect_found(), "a thread starts out expecting to find");
            for _ in 0..100 {
                record(false);
            }
            assert!(!expect_found());
            // A run of hits half the ceiling long turns it back, however many misses came before.
            for _ in 0..CEILING / 2 {
                record(true);
            }
            assert!(expect_found());
            for _ in 0..1000 {
                record(true);
            }
            for _ in 0..=CEILING / 2 {
                record(false);
            }
            assert!(!expect_found());
        })
        .join()
        .unwrap();
    }
}
