//! Calls and time per command, as Redis keeps them for `INFO commandstats`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use super::table;

/// One command's counters.
#[derive(Default)]
struct Calls {
    calls: AtomicU64,
    micros: AtomicU64,
    /// Refused before it ran: arity, authentication.
    rejected: AtomicU64,
    /// Ran and answered an error.
    failed: AtomicU64,
}

/// Every command's counters, by its number in the table (`table::find`).
pub struct CommandStats(Box<[Calls]>);

impl CommandStats {
    pub fn new() -> CommandStats {
        CommandStats((0..table::count()).map(|_| Calls::default()).collect())
    }

    /// Command `id` ran for `took`, and answered an error or not.
    pub fn ran(&self, id: usize, took: Duration, failed: bool) {
        let c = &self.0[id];
        c.calls.fetch_add(1, Relaxed);
        c.micros.fetch_add(took.as_micros() as u64, Relaxed);
        if failed {
            c.failed.fetch_add(1, Relaxed);
        }
    }

    /// Command `id` was refused before it ran.
    pub fn rejected(&self, id: usize) {
        self.0[id].rejected.fetch_add(1, Relaxed);
    }

    /// Commands run (refused ones not counted): Redis's `total_commands_processed`.
    pub fn total_calls(&self) -> u64 {
        self.0.iter().map(|c| c.calls.load(Relaxed)).sum()
    }

    /// Start every count again (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for c in self.0.iter() {
            for n in [&c.calls, &c.micros, &c.rejected, &c.failed] {
                n.store(0, Relaxed);
            }
        }
    }

    /// `INFO commandstats`'s lines (without the title): one per command used since the start
    /// or the last reset, in Redis's form.
    pub fn lines(&self) -> Vec<(String, String)> {
        let mut lines = Vec::new();
        for (id, c) in self.0.iter().enumerate() {
            let [calls, micros, rejected, failed] =
                [&c.calls, &c.micros, &c.rejected, &c.failed].map(|n| n.load(Relaxed));
            if calls == 0 && rejected == 0 && failed == 0 {
                continue;
            }
            let per_call = if calls == 0 {
                0.0
            } else {
                micros as f64 / calls as f64
            };
            let value = format!(
                "calls={calls},usec={micros},usec_per_call={per_call:.2},rejected_calls={rejected},failed_calls={failed}"
            );
            lines.push((format!("cmdstat_{}", table::nth(id).name), value));
        }
        lines
    }
}
