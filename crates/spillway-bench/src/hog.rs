//! Busy threads beside the benchmark (`RunConfig::cpu_hogs`, `spillway bench --cpu-hog N`):
//! how an engine fares on a machine where something else wants the CPU too. A writer that
//! sleeps in fdatasync must be scheduled again before it can go on; an engine whose writer
//! has other work to do meanwhile shrugs that off (issue 16).
//!
//! The hogs run in the process that starts the engines' children
//! ([`run_isolated`](crate::run_isolated)), at normal priority: their CPU time is not the
//! engine's, and `/proc/self` figures stay the engine's own.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

/// `n` threads spinning until dropped.
pub struct CpuHog {
    stop: Arc<AtomicBool>,
    /// Each returns the rounds of arithmetic it spun.
    threads: Vec<JoinHandle<u64>>,
}

/// Multiplications per round, between looks at the stop flag.
const ROUND: u32 = 10_000;

impl CpuHog {
    pub fn start(n: usize) -> CpuHog {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = i as u64 + 1;
                    let mut rounds = 0;
                    loop {
                        for _ in 0..ROUND {
                            // Arithmetic the compiler cannot drop.
                            x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005));
                        }
                        rounds += 1;
                        if stop.load(Relaxed) {
                            return rounds;
                        }
                    }
                })
            })
            .collect();
        CpuHog { stop, threads }
    }

    /// Stop every thread and wait for it; the rounds each spun.
    pub fn stop(mut self) -> Vec<u64> {
        self.halt()
    }

    fn halt(&mut self) -> Vec<u64> {
        self.stop.store(true, Relaxed);
        self.threads
            .drain(..)
            .map(|t| t.join().expect("a hog thread only multiplies"))
            .collect()
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hog_spins_until_stopped() {
        let rounds = CpuHog::start(3).stop();
        assert_eq!(rounds.len(), 3);
        assert!(rounds.iter().all(|&r| r >= 1), "{rounds:?}");
        assert!(CpuHog::start(0).stop().is_empty());
    }
}
