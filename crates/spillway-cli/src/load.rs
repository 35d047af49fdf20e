//! `spillway load`: write generated records in batches and report what it cost the engine.
//!
//! A counter load (`--op add`) writes each record as a merge instead of a put: record `i`
//! adds 1 to the counter (`spillway.u64add`) of the key of record `i % distinct`, so that
//! increments pile up on `distinct` keys, round-robin, and every counter's value follows
//! from the record count alone (see `loadgen::Counters`).
//!
//! `--keyspace NAME` loads into keyspace NAME, created if missing, as `put --keyspace` does
//! (see [`store::write_in`]); `LOADGEN` records it, for `read`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use spillway::operators::U64Add;
use spillway::{Db, Keyspace, MergeOperator, WriteBatch, WriteOptions};

use crate::error::{self, CliError};
use crate::loadgen::{self, Counters, LoadGen, LoadState};
use crate::operators;
use crate::progress;
use crate::report::{self, Table};
use crate::store::{self, Space};
use crate::tuning::Tuning;
// The benchmark's latency histogram: one definition of how batch latencies are kept.
use spillway_bench::measure::Latency;
use spillway_records::{Keys, Workload};

pub struct Plan {
    pub records: u64,
    pub record_size: usize,
    pub seed: u64,
    /// Records per `WriteBatch` (at least 1).
    pub batch: u64,
    pub sync: WriteOptions,
    /// Writer threads; thread `t` writes records `t, t + threads, ...`.
    pub threads: u64,
    /// Random keys, or record `i`'s key is `i` big-endian (`--sequential`).
    pub keys: Keys,
    /// `Some(distinct)`: a counter load (`--op add`) over `distinct` keys (at least 1).
    pub counters: Option<u64>,
    /// `--keyspace`: the keyspace to load into (`None` or `""`: the default one).
    pub keyspace: Option<String>,
}

impl Plan {
    fn threads(&self) -> u64 {
        self.threads.max(1)
    }

    /// Records thread `t` writes.
    fn share(&self, t: u64) -> u64 {
        self.records.saturating_sub(t).div_ceil(self.threads())
    }

    /// Batches the whole load writes.
    fn batches(&self) -> u64 {
        (0..self.threads())
            .map(|t| self.share(t).div_ceil(self.batch.max(1)))
            .sum()
    }

    /// Given the batches each thread had acknowledged, the longest prefix `0..n` of records
    /// that were all acknowledged. Thread `t`'s first unacknowledged record is
    /// `t + threads * acked_records(t)`; the prefix ends at the smallest of those. With one
    /// thread it is every acknowledged record; with more, the records above it that some
    /// threads had acknowledged are not claimed.
    fn acknowledged_prefix(&self, acked_batches: &[u64]) -> u64 {
        let threads = self.threads();
        (0..threads)
            .map(|t| {
                let acked = acked_batches[t as usize]
                    .saturating_mul(self.batch)
                    .min(self.share(t));
                t.saturating_add(threads.saturating_mul(acked))
            })
            .min()
            .unwrap_or(0)
            .min(self.records)
    }
}

/// What each record of a counter load adds.
const INCREMENT: [u8; 8] = 1u64.to_le_bytes();

/// Shared by the writer threads: batches each has had acknowledged, and whether one failed.
struct Progress {
    acked: Vec<AtomicU64>,
    stop: AtomicBool,
}

pub fn run(dir: &Path, tuning: &Tuning, plan: &Plan) -> Result<(), CliError> {
    let workload = Workload::new(plan.seed, plan.record_size)
        .map_err(CliError::Usage)?
        .with_keys(plan.keys);
    check_batch_size(plan)?;
    let operator = plan
        .counters
        .map(|_| -> Arc<dyn MergeOperator> { Arc::new(U64Add) });
    let (db, space) = store::write_in(dir, tuning, plan.keyspace.as_deref(), true, operator)?;
    let key_order = space.order;
    let counters = plan.counters.map(|distinct| Counters {
        distinct,
        // Only an earlier load's LOADGEN says that generated keys may hold values already.
        from_zero: matches!(
            std::fs::symlink_metadata(dir.join(loadgen::FILE_NAME)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound
        ),
    });
    if counters.is_some_and(|c| !c.from_zero) {
        eprintln!(
            "note: an earlier load wrote into {}: these increments add to the values its keys \
             hold, so `spillway read` cannot check the counters (load them at a new --path \
             for that)",
            dir.display()
        );
    }
    // Until this load ends, LOADGEN says one is under way: were it killed, `read` says so
    // instead of trusting an earlier load's records, or finding none.
    let mut gen = LoadGen {
        records: 0,
        record_size: plan.record_size,
        seed: plan.seed,
        planned: plan.records,
        state: LoadState::Running,
        keys: plan.keys,
        counters,
        keyspace: space.name.clone(),
    };
    gen.write(dir)?;

    let bar = progress::bar(plan.records, "records");
    let progress = Progress {
        acked: (0..plan.threads()).map(|_| AtomicU64::new(0)).collect(),
        stop: AtomicBool::new(false),
    };
    let start = Instant::now();
    let loaded = write_all(&db, &space.ks, &workload, plan, &bar, &progress);
    let elapsed = start.elapsed().as_secs_f64();
    let latency = match loaded {
        Ok(latency) => {
            bar.finish_and_clear();
            latency
        }
        Err(cause) => {
            bar.abandon();
            drop(space);
            return Err(stopped(dir, db, plan, &progress, gen, cause));
        }
    };

    // Spill what is still in memory, and wait for the spill a full buffer may have started:
    // the tree and the write figures below then hold every record loaded, as the store will
    // after `close` (which would finish that spill unseen).
    let flush_start = Instant::now();
    let flushed = db.flush();
    let flush_secs = flush_start.elapsed().as_secs_f64();
    let stats = db.stats();
    let keys = crate::stats::keys(&space.ks);
    let Space {
        ks,
        name: keyspace,
        operator,
        ..
    } = space;
    drop(ks);
    let closed = db.close();
    // Every batch was acknowledged (a failed flush or close loses none of them: the log
    // holds them), and with `--sync none` close has synced the log.
    gen.records = plan.records;
    gen.state = LoadState::Complete;
    gen.write(dir)?;
    flushed?;
    closed?;
    let keys = keys?;

    let user_bytes = plan.records * plan.record_size as u64;
    let mut t = Table::new();
    t.section(&format!("Loaded {}", dir.display()));
    if let Some(keyspace) = &keyspace {
        t.row("keyspace", keyspace.as_str());
    }
    match plan.counters {
        None => t
            .row("records", report::count(plan.records))
            .row("record size", format!("{} B", plan.record_size)),
        Some(distinct) => t.row("increments", report::count(plan.records)).row(
            "distinct keys",
            format!(
                "{} (record i adds 1 to the counter of key i mod {})",
                report::count(distinct.min(plan.records)),
                report::count(distinct)
            ),
        ),
    };
    t.row(
        "keys",
        match plan.keys {
            Keys::Random => "random",
            Keys::Sequential => "sequential (the record number, big-endian)",
        },
    )
    .row("key order", key_order.to_string());
    if let Some(name) = &operator {
        t.row("merge operator", operators::describe(name));
    }
    t.row("elapsed", format!("{elapsed:.3} s"))
        .row("writer threads", plan.threads.to_string());
    match plan.counters {
        None => t.row("inserts/s", report::per_sec(plan.records, elapsed)),
        Some(_) => t.row("increments/s", report::per_sec(plan.records, elapsed)),
    };
    t.row(
        "user data MiB/s",
        format!(
            "{:.2}",
            user_bytes as f64 / (1 << 20) as f64 / elapsed.max(1e-9)
        ),
    )
    .row(
        "then flushed",
        format!("{flush_secs:.3} s (the root buffer spilled: the tree holds every record)"),
    );
    let ms = |nanos: u64| format!("{:.3} ms", nanos as f64 / 1e6);
    t.section(&format!("Write latency (batches of {})", plan.batch))
        .row("p50", ms(latency.quantile(0.5)))
        .row("p99", ms(latency.quantile(0.99)))
        .row("p99.9", ms(latency.quantile(0.999)))
        .row("max", ms(latency.max()));
    report::writes(&mut t, &stats);
    if plan.counters.is_some() {
        report::merges(&mut t, &stats);
    }
    report::shape(&mut t, &stats);
    report::disk(&mut t, &stats, keys);
    report::memory(&mut t, &stats);
    t.print();
    Ok(())
}

/// A write failed (or a writer panicked): close the store, record in `LOADGEN` the records
/// known to be acknowledged, and say how far the load got.
fn stopped(
    dir: &Path,
    db: Db,
    plan: &Plan,
    progress: &Progress,
    mut gen: LoadGen,
    cause: CliError,
) -> CliError {
    // The load's own error is the one to report; a close that fails too (the store may have
    // stopped taking writes) loses nothing acknowledged — the log holds it.
    let _ = db.close();
    let acked: Vec<u64> = progress.acked.iter().map(|a| a.load(Relaxed)).collect();
    gen.records = plan.acknowledged_prefix(&acked);
    gen.state = LoadState::Stopped;
    let sidecar_error = gen.write(dir).err().map(|e| e.to_string());
    CliError::LoadStopped(Box::new(error::LoadStopped {
        acknowledged: acked.iter().sum(),
        batches: plan.batches(),
        verifiable: gen.records,
        sidecar_error,
        cause,
    }))
}

/// Write every record from `plan.threads` threads; returns the latency of each batch. The
/// first failure stops every thread before its next batch and is what is returned.
fn write_all(
    db: &Db,
    ks: &Keyspace,
    workload: &Workload,
    plan: &Plan,
    bar: &indicatif::ProgressBar,
    progress: &Progress,
) -> Result<Latency, CliError> {
    let threads = plan.threads();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || write_share(db, ks, workload, plan, bar, progress, t)))
            .collect();
        let mut latency = Latency::default();
        let mut first_error = None;
        for h in handles {
            match h.join() {
                Ok(Ok(l)) => latency.merge(&l),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_panic) => {
                    first_error.get_or_insert(CliError::Panicked);
                }
            }
        }
        first_error.map_or(Ok(latency), Err)
    })
}

/// Thread `t` writes records `t, t + threads, ...` into `ks` in batches, counting each
/// acknowledged.
fn write_share(
    db: &Db,
    ks: &Keyspace,
    workload: &Workload,
    plan: &Plan,
    bar: &indicatif::ProgressBar,
    progress: &Progress,
    t: u64,
) -> Result<Latency, CliError> {
    /// Stops the other writers if this one panics.
    struct StopOnPanic<'a>(&'a AtomicBool);
    impl Drop for StopOnPanic<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() {
                self.0.store(true, Relaxed);
            }
        }
    }
    let _guard = StopOnPanic(&progress.stop);
    let threads = plan.threads();
    let mut latency = Latency::default();
    let mut value = Vec::with_capacity(workload.value_len());
    let mut i = t;
    while i < plan.records && !progress.stop.load(Relaxed) {
        let mut batch = WriteBatch::new();
        let mut n = 0;
        while n < plan.batch && i < plan.records {
            match plan.counters {
                None => {
                    workload.fill_value(i, &mut value);
                    batch.put_in(ks, workload.key(i), &value);
                }
                Some(distinct) => batch.merge_in(ks, workload.key(i % distinct), INCREMENT),
            }
            i += threads;
            n += 1;
        }
        let start = Instant::now();
        if let Err(e) = db.write(batch, plan.sync) {
            progress.stop.store(true, Relaxed);
            return Err(e.into());
        }
        latency.record(start.elapsed().as_nanos() as u64);
        progress.acked[t as usize].fetch_add(1, Relaxed);
        bar.inc(n);
    }
    Ok(latency)
}

/// The engine would reject an oversized batch too, but only after the CLI had built it in
/// memory; say so before allocating.
fn check_batch_size(plan: &Plan) -> Result<(), CliError> {
    // Record encoding: two varints (at most 10 bytes each) plus key and value.
    let per_record = plan.record_size as u64 + 20;
    let records = plan.batch.min(plan.records.max(1));
    if records.saturating_mul(per_record) > spillway::MAX_BATCH_BYTES as u64 {
        return Err(CliError::Usage(format!(
            "--batch {} of {}-byte records could exceed the engine's batch limit of {} bytes; \
             use a smaller --batch",
            plan.batch,
            plan.record_size,
            spillway::MAX_BATCH_BYTES
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(records: u64, batch: u64, threads: u64) -> Plan {
        Plan {
            records,
            record_size: 16,
            seed: 0,
            batch,
            sync: WriteOptions::SYNC,
            threads,
            keys: Keys::Random,
            counters: None,
            keyspace: None,
        }
    }

    #[test]
    fn batches_and_the_acknowledged_prefix() {
        let p = plan(10, 3, 1);
        assert_eq!(p.batches(), 4);
        assert_eq!(p.acknowledged_prefix(&[0]), 0);
        assert_eq!(p.acknowledged_prefix(&[2]), 6);
        assert_eq!(p.acknowledged_prefix(&[4]), 10);

        // Three threads: 0 writes 0,3,6,9; 1 writes 1,4,7; 2 writes 2,5,8 (batches of 2).
        let p = plan(10, 2, 3);
        assert_eq!(p.batches(), 2 + 2 + 2);
        assert_eq!(p.acknowledged_prefix(&[2, 2, 2]), 10);
        // 0 has 0,3,6,9; 1 has 1,4; 2 has 2,5,8: 7 is the first record missing.
        assert_eq!(p.acknowledged_prefix(&[2, 1, 2]), 7);
        assert_eq!(p.acknowledged_prefix(&[1, 2, 2]), 6);
        assert_eq!(p.acknowledged_prefix(&[2, 2, 0]), 2);
        // More threads than records.
        let p = plan(2, 5, 4);
        assert_eq!(p.batches(), 2);
        assert_eq!(p.acknowledged_prefix(&[1, 0, 0, 0]), 1);
        assert_eq!(p.acknowledged_prefix(&[1, 1, 0, 0]), 2);
    }
}
