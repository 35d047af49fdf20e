//! The server-wide counts of `INFO stats` that are not per command or per error: keyspace
//! hits and misses, bytes read and written on the network, and the instantaneous rates Redis
//! derives from them and from the commands processed.
//!
//! Each count is a relaxed atomic added to once per pipeline or per socket read or write,
//! not per command or per key: a pipeline gathers its lookups and adds them at its end.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use crate::locks::lock;

/// Samples averaged for an instantaneous rate, as Redis (`STATS_METRIC_SAMPLES`): 16 taken
/// every 100 ms, the rate over the last 1.6 seconds.
const SAMPLES: usize = 16;

#[derive(Default)]
pub struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    net_in: AtomicU64,
    net_out: AtomicU64,
    rates: Mutex<Rates>,
}

/// The last samples of each rate.
#[derive(Default)]
struct Rates {
    last: Option<(Instant, [u64; 3])>,
    /// Per second, newest last: commands, input bytes, output bytes.
    samples: Vec<[f64; 3]>,
}

/// What an instantaneous rate is of.
#[derive(Clone, Copy)]
pub enum Rate {
    Commands = 0,
    InputBytes = 1,
    OutputBytes = 2,
}

impl Counters {
    /// Keys a pipeline's reads found and did not find.
    pub fn looked_up(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.hits.fetch_add(hits, Relaxed);
        }
        if misses > 0 {
            self.misses.fetch_add(misses, Relaxed);
        }
    }

    pub fn read_bytes(&self, n: usize) {
        self.net_in.fetch_add(n as u64, Relaxed);
    }

    pub fn wrote_bytes(&self, n: usize) {
        self.net_out.fetch_add(n as u64, Relaxed);
    }

    /// `keyspace_hits`, `keyspace_misses`, `total_net_input_bytes`, `total_net_output_bytes`.
    pub fn totals(&self) -> [u64; 4] {
        [&self.hits, &self.misses, &self.net_in, &self.net_out].map(|n| n.load(Relaxed))
    }

    /// Take a sample of the rates, `commands` being the commands processed so far: the
    /// server does every 100 ms.
    pub fn sample(&self, commands: u64) {
        let now = Instant::now();
        let totals = [
            commands,
            self.net_in.load(Relaxed),
            self.net_out.load(Relaxed),
        ];
        let mut rates = lock(&self.rates);
        if let Some((then, before)) = rates.last {
            let seconds = now.duration_since(then).as_secs_f64();
            if seconds > 0.0 {
                let rate = |i: usize| totals[i].saturating_sub(before[i]) as f64 / seconds;
                if rates.samples.len() == SAMPLES {
                    rates.samples.remove(0);
                }
                rates.samples.push([rate(0), rate(1), rate(2)]);
            }
        }
        rates.last = Some((now, totals));
    }

    /// The mean of the samples of `rate`, per second (0 before any).
    pub fn per_second(&self, rate: Rate) -> f64 {
        let rates = lock(&self.rates);
        let n = rates.samples.len();
        if n == 0 {
            return 0.0;
        }
        rates.samples.iter().map(|s| s[rate as usize]).sum::<f64>() / n as f64
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset(&self) {
        for n in [&self.hits, &self.misses, &self.net_in, &self.net_out] {
            n.store(0, Relaxed);
        }
        *lock(&self.rates) = Rates::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_the_mean_of_the_last_samples() {
        let c = Counters::default();
        assert_eq!(c.per_second(Rate::Commands), 0.0);
        c.sample(0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        c.read_bytes(1000);
        c.sample(50);
        let (ops, input) = (c.per_second(Rate::Commands), c.per_second(Rate::InputBytes));
        assert!(ops > 0.0 && ops <= 2500.0, "{ops}");
        assert!(input > 0.0 && input <= 50_000.0, "{input}");
        for _ in 0..40 {
            c.sample(50);
        }
        assert_eq!(
            c.per_second(Rate::Commands),
            0.0,
            "16 samples: the old one is gone"
        );
        c.looked_up(2, 1);
        assert_eq!(c.totals(), [2, 1, 1000, 0]);
        c.reset();
        assert_eq!(c.totals(), [0; 4]);
    }
}
