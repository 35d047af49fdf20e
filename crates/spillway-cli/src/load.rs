//! `spillway load`: write generated records in batches and report what it cost the engine.

use std::path::Path;
use std::time::Instant;

use spillway::{Db, Options, WriteBatch, WriteOptions};

use crate::error::CliError;
use crate::loadgen::LoadGen;
use crate::progress;
use crate::report::{self, Table};
use spillway_bench::measure::Latency;
use spillway_bench::workload::Workload;

pub struct Plan {
    pub records: u64,
    pub record_size: usize,
    pub seed: u64,
    /// Records per `WriteBatch` (at least 1).
    pub batch: u64,
    pub sync: WriteOptions,
    /// Writer threads; thread `t` writes records `t, t + threads, ...`.
    pub threads: u64,
}

pub fn run(dir: &Path, opts: Options, plan: &Plan) -> Result<(), CliError> {
    let workload = Workload::new(plan.seed, plan.record_size).map_err(CliError::Usage)?;
    check_batch_size(plan)?;
    let db = Db::open(dir, opts)?;
    LoadGen::remove(dir)?;

    let bar = progress::bar(plan.records, "records");
    let start = Instant::now();
    let loaded = write_all(&db, &workload, plan, &bar);
    let elapsed = start.elapsed().as_secs_f64();
    if loaded.is_err() {
        bar.abandon();
    } else {
        bar.finish_and_clear();
    }
    let latency = loaded?;
    let stats = db.stats();
    db.close()?;
    // Only now is every record durable (close syncs the log under `--sync none`).
    LoadGen {
        records: plan.records,
        record_size: plan.record_size,
        seed: plan.seed,
    }
    .write(dir)?;

    let user_bytes = plan.records * plan.record_size as u64;
    let mut t = Table::new();
    t.section(&format!("Loaded {}", dir.display()))
        .row("records", report::count(plan.records))
        .row("record size", format!("{} B", plan.record_size))
        .row("elapsed", format!("{elapsed:.3} s"))
        .row("writer threads", plan.threads.to_string())
        .row("inserts/s", report::per_sec(plan.records, elapsed))
        .row(
            "user data MiB/s",
            format!(
                "{:.2}",
                user_bytes as f64 / (1 << 20) as f64 / elapsed.max(1e-9)
            ),
        );
    let ms = |nanos: u64| format!("{:.3} ms", nanos as f64 / 1e6);
    t.section(&format!("Write latency (batches of {})", plan.batch))
        .row("p50", ms(latency.quantile(0.5)))
        .row("p99", ms(latency.quantile(0.99)))
        .row("p99.9", ms(latency.quantile(0.999)))
        .row("max", ms(latency.max()));
    report::writes(&mut t, &stats);
    report::shape(&mut t, &stats);
    report::memory(&mut t, &stats);
    t.print();
    Ok(())
}

/// Write every record from `plan.threads` threads; returns the latency of each batch.
fn write_all(
    db: &Db,
    workload: &Workload,
    plan: &Plan,
    bar: &indicatif::ProgressBar,
) -> Result<Latency, CliError> {
    let threads = plan.threads.max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || write_share(db, workload, plan, bar, t, threads)))
            .collect();
        let mut latency = Latency::default();
        for h in handles {
            latency.merge(&h.join().expect("load thread panicked")?);
        }
        Ok(latency)
    })
}

/// Thread `t` of `threads` writes records `t, t + threads, ...` in batches.
fn write_share(
    db: &Db,
    workload: &Workload,
    plan: &Plan,
    bar: &indicatif::ProgressBar,
    t: u64,
    threads: u64,
) -> Result<Latency, CliError> {
    let mut latency = Latency::default();
    let mut value = Vec::with_capacity(workload.value_len());
    let mut i = t;
    while i < plan.records {
        let mut batch = WriteBatch::new();
        let mut n = 0;
        while n < plan.batch && i < plan.records {
            workload.fill_value(i, &mut value);
            batch.put(workload.key(i), &value);
            i += threads;
            n += 1;
        }
        let start = Instant::now();
        db.write(batch, plan.sync)?;
        latency.record(start.elapsed().as_nanos() as u64);
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
