//! Work shared among the cores a pass may use: independent items (a node's children in a
//! spill) done on this thread and on helpers started while items remain and a core is spare.
//!
//! Items are handed out one at a time, so a long item (a child that spills in turn) does not
//! hold up the rest, and passes nest: a helper that finds no more items gives its core back,
//! and a nested pass still going (the grandchildren of the long item) takes it for its next
//! item. That is what a work-stealing pool does, in the few lines a spill needs.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};
use std::sync::Mutex;
use std::thread::Scope;

use super::sync::lock;

/// The cores a pass may use: the calling thread's, and `threads - 1` helpers at most at once.
pub struct Cores {
    threads: usize,
    spare: AtomicUsize,
}

/// Threads for work that scales with the machine (opens, spills by default): one per core,
/// at most 8 (past that, a store's nodes rarely keep more busy).
pub fn per_machine() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
}

impl Cores {
    /// `threads` cores (at least one: the calling thread).
    pub fn new(threads: usize) -> Cores {
        Cores {
            threads: threads.max(1),
            spare: AtomicUsize::new(threads.max(1) - 1),
        }
    }

    /// The cores a pass may use, the calling thread's included.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// `work` applied to each of `items`, the results in the items' order. One core does them
    /// in order; more take them as they come, so `work` must not depend on the order.
    pub fn map<T: Send, R: Send>(&self, items: Vec<T>, work: impl Fn(T) -> R + Sync) -> Vec<R> {
        if items.len() < 2 || self.spare.load(Relaxed) == 0 {
            return items.into_iter().map(work).collect();
        }
        let pass = Pass {
            out: items.iter().map(|_| Mutex::new(None)).collect(),
            items: items.into_iter().map(|t| Mutex::new(Some(t))).collect(),
            next: AtomicUsize::new(0),
            work: &work,
            cores: self,
        };
        std::thread::scope(|scope| pass.run(scope));
        pass.out
            .into_iter()
            .map(|r| {
                r.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every item is done once the scope ends")
            })
            .collect()
    }

    /// A spare core, if there is one; given back by dropping the guard.
    fn take(&self) -> Option<Taken<'_>> {
        self.spare
            .fetch_update(AcqRel, Acquire, |n| n.checked_sub(1))
            .ok()
            .map(|_| Taken(self))
    }
}

/// A core taken for a helper, given back when the helper ends (or panics).
struct Taken<'a>(&'a Cores);

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        self.0.spare.fetch_add(1, AcqRel);
    }
}

/// One call of [`Cores::map`]: its items, each taken once, and their results.
struct Pass<'a, T, R, W> {
    items: Vec<Mutex<Option<T>>>,
    out: Vec<Mutex<Option<R>>>,
    next: AtomicUsize,
    work: &'a W,
    cores: &'a Cores,
}

impl<T: Send, R: Send, W: Fn(T) -> R + Sync> Pass<'_, T, R, W> {
    /// Do items until none is left, starting a helper before each item if another remains
    /// after it and a core is spare.
    fn run<'scope, 'env>(&'env self, scope: &'scope Scope<'scope, 'env>) {
        loop {
            let i = self.next.fetch_add(1, Relaxed);
            let Some(item) = self.items.get(i) else {
                return;
            };
            if i + 1 < self.items.len() {
                if let Some(core) = self.cores.take() {
                    scope.spawn(move || {
                        let _core = core;
                        self.run(scope);
                    });
                }
            }
            let item = lock(item).take().expect("each item is handed out once");
            *lock(&self.out[i]) = Some((self.work)(item));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn results_come_in_the_items_order_on_any_number_of_cores() {
        for threads in [1, 2, 3, 8] {
            let cores = Cores::new(threads);
            let items: Vec<u64> = (0..100).collect();
            let out = cores.map(items, |i| i * i);
            assert_eq!(out, (0..100u64).map(|i| i * i).collect::<Vec<_>>());
            assert_eq!(
                cores.spare.load(Relaxed),
                threads - 1,
                "every core given back"
            );
        }
    }

    #[test]
    fn nested_passes_share_the_cores_and_never_exceed_them() {
        let cores = Cores::new(3);
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let threads = Mutex::new(HashSet::new());
        let leaf = |x: u64| {
            let now = running.fetch_add(1, Relaxed) + 1;
            most.fetch_max(now, Relaxed);
            lock(&threads).insert(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Relaxed);
            x + 1
        };
        let out = cores.map((0..6u64).collect(), |i| {
            cores
                .map((0..8u64).map(|j| i * 8 + j).collect(), leaf)
                .into_iter()
                .sum::<u64>()
        });
        let want: Vec<u64> = (0..6u64)
            .map(|i| (0..8u64).map(|j| i * 8 + j + 1).sum())
            .collect();
        assert_eq!(out, want);
        assert!(most.load(Relaxed) <= 3, "{} at once", most.load(Relaxed));
        assert!(lock(&threads).len() > 1, "helpers took part");
        assert_eq!(cores.spare.load(Relaxed), 2);
    }

    #[test]
    fn a_panic_in_an_item_reaches_the_caller_and_gives_the_cores_back() {
        let cores = Cores::new(2);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            cores.map((0..10u64).collect(), |i| {
                assert_ne!(i, 7, "item 7 fails");
                i
            })
        }));
        assert!(r.is_err());
        assert_eq!(cores.spare.load(Relaxed), 1);
    }
}
