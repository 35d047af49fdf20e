//! Running one phase of a benchmark on one engine, from many threads, with latencies.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::{Engine, RecordBatch};
use crate::measure::{self, DeviceIo, Latency};
use crate::workload::{SplitMix64, Workload, KEY_LEN};
use crate::zipf::{KeyChoice, Zipf};

/// What a phase does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Insert every record, in batches.
    Load,
    /// Wait until the engine stops writing: the background work (flushes, compactions) a load
    /// leaves behind. Its time and device bytes are part of what the load cost.
    Settle,
    /// Close the store and open it again, timed: what a restart costs. Reads after it see a
    /// freshly opened engine, as LevelDB's and RocksDB's `db_bench --use_existing_db` do.
    Reopen,
    /// GETs of loaded keys (each value is checked).
    Read,
    /// GETs of keys that were never loaded.
    ReadMissing,
    /// YCSB A: 50% reads, 50% updates.
    YcsbA,
    /// YCSB B: 95% reads, 5% updates.
    YcsbB,
    /// YCSB C: reads only.
    YcsbC,
    /// YCSB F: 50% reads, 50% read-modify-writes.
    YcsbF,
}

impl Phase {
    pub const ALL: [Phase; 9] = [
        Phase::Load,
        Phase::Settle,
        Phase::Reopen,
        Phase::Read,
        Phase::ReadMissing,
        Phase::YcsbA,
        Phase::YcsbB,
        Phase::YcsbC,
        Phase::YcsbF,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Settle => "settle",
            Phase::Reopen => "reopen",
            Phase::Read => "read",
            Phase::ReadMissing => "read-missing",
            Phase::YcsbA => "ycsb-a",
            Phase::YcsbB => "ycsb-b",
            Phase::YcsbC => "ycsb-c",
            Phase::YcsbF => "ycsb-f",
        }
    }

    pub fn parse(name: &str) -> Result<Phase, String> {
        Phase::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| format!("unknown workload `{name}` (load, settle, reopen, read, read-missing, ycsb-a, ycsb-b, ycsb-c, ycsb-f)"))
    }

    /// Share of operations that write, and whether a write first reads (YCSB F).
    fn mix(self) -> (f64, bool) {
        match self {
            Phase::YcsbA => (0.5, false),
            Phase::YcsbB => (0.05, false),
            Phase::YcsbF => (0.5, true),
            _ => (0.0, false),
        }
    }
}

/// The knobs that are the same for every engine in a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunConfig {
    pub records: u64,
    pub record_size: usize,
    pub seed: u64,
    /// Records per write batch in the load.
    pub batch: usize,
    /// fsync the log on every write (per batch in the load, per update in YCSB).
    pub sync: bool,
    pub threads: usize,
    /// Operations in each read/YCSB phase.
    pub ops: u64,
    pub zipfian: bool,
    /// Evict the store from the page cache before each read phase.
    pub cold: bool,
    /// Threads doing GETs of already loaded keys for as long as the load runs: what readers
    /// see while the engine is busiest.
    #[serde(default)]
    pub readers: usize,
}

/// Everything measured in one phase on one engine.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PhaseResult {
    pub engine: String,
    pub phase: Phase,
    pub cold: bool,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_sec: f64,
    /// Operations are records in the load (inserts/s) and GETs or updates elsewhere; latency is
    /// per operation, except in the load, where it is per batch of `batch` records.
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_p999_us: f64,
    pub latency_max_us: f64,
    pub found: u64,
    pub wrong: u64,
    pub user_bytes_written: u64,
    pub device_bytes_written: u64,
    pub device_bytes_read: u64,
    /// Device bytes written over user bytes written (`/proc/self/io`).
    pub device_write_amp: Option<f64>,
    pub disk_bytes: u64,
    pub rss_bytes: u64,
    /// From Spillway's own counters, for Spillway only.
    pub engine_write_amp: Option<f64>,
    pub pages_per_get: Option<f64>,
    pub memory_bytes_per_key: Option<f64>,
    /// CPU time of the whole process (every thread, the engine's own included).
    #[serde(default)]
    pub cpu_seconds: f64,
    /// `write` calls made (batches in the load).
    #[serde(default)]
    pub writes: u64,
    /// Log fsyncs per synced write: below 1 when group commit shares fsyncs (Spillway only).
    #[serde(default)]
    pub log_syncs_per_write: Option<f64>,
    /// Times a writer waited for a spill, and the longest wait (Spillway only).
    #[serde(default)]
    pub stalls: Option<u64>,
    #[serde(default)]
    pub max_stall_us: Option<f64>,
    /// The longest log fdatasync since open (Spillway only): the disk's share of `max`.
    #[serde(default)]
    pub max_log_sync_us: Option<f64>,
    /// GETs run by `RunConfig::readers` threads during the load.
    #[serde(default)]
    pub reads_during_load: Option<ConcurrentReads>,
}

/// GETs that ran alongside a load.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConcurrentReads {
    pub ops: u64,
    pub ops_per_sec: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_p999_us: f64,
    pub latency_max_us: f64,
    pub found: u64,
    pub wrong: u64,
}

/// Run `phase` on an open engine whose store is in `dir`. `progress` is called with the
/// number of operations just completed.
pub fn run(
    engine: &dyn Engine,
    name: &str,
    dir: &Path,
    cfg: &RunConfig,
    phase: Phase,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PhaseResult, String> {
    let workload = Workload::new(cfg.seed, cfg.record_size)?;
    // The caller closed, evicted and reopened the store before a cold phase (see `run`).
    let cold = is_cold(cfg, phase);
    let threads = cfg.threads.max(1);
    let choice = if cfg.zipfian && cfg.records >= 2 {
        KeyChoice::Zipfian(Zipf::new(cfg.records))
    } else {
        KeyChoice::Uniform(cfg.records.max(1))
    };
    let before = (engine.stats(), DeviceIo::now(), measure::cpu_seconds());
    let user_bytes = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let loaded: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    let loading = AtomicBool::new(true);
    let readers = if phase == Phase::Load { cfg.readers } else { 0 };
    let start = Instant::now();
    type Tallies = Vec<Result<Tally, String>>;
    let (per_thread, reads): (Tallies, Tallies) = if phase == Phase::Settle {
        (vec![settle().map(|()| Tally::default())], vec![])
    } else if phase == Phase::Reopen {
        (vec![Ok(Tally::default())], vec![]) // the caller reopens; see `run::run`
    } else {
        let worker = Worker {
            engine,
            workload: &workload,
            cfg,
            threads,
            user_bytes: &user_bytes,
            writes: &writes,
            loaded: &loaded,
            progress,
        };
        std::thread::scope(|s| {
            let (worker, choice, loading) = (&worker, &choice, &loading);
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || match phase {
                        Phase::Load => worker.load(t),
                        _ => worker.ops(t, phase, choice),
                    })
                })
                .collect();
            let reader_handles: Vec<_> = (0..readers)
                .map(|r| s.spawn(move || worker.read_while_loading(r, loading)))
                .collect();
            let join = |h: std::thread::ScopedJoinHandle<'_, Result<Tally, String>>| {
                h.join().expect("benchmark thread panicked")
            };
            let done: Vec<_> = handles.into_iter().map(join).collect();
            loading.store(false, Relaxed);
            (done, reader_handles.into_iter().map(join).collect())
        })
    };
    let seconds = start.elapsed().as_secs_f64();
    let device = DeviceIo::now().since(before.1);
    let cpu_seconds = measure::cpu_seconds() - before.2;
    let total = |tallies: Vec<Result<Tally, String>>| -> Result<Tally, String> {
        let mut sum = Tally::default();
        for t in tallies {
            sum.add(&t?);
        }
        Ok(sum)
    };
    let Tally {
        latency,
        ops,
        found,
        wrong,
    } = total(per_thread)?;
    let us = |n: u64| n as f64 / 1000.0;
    let reads_during_load = if readers > 0 {
        let r = total(reads)?;
        Some(ConcurrentReads {
            ops: r.ops,
            ops_per_sec: r.ops as f64 / seconds.max(1e-9),
            latency_p50_us: us(r.latency.quantile(0.5)),
            latency_p99_us: us(r.latency.quantile(0.99)),
            latency_p999_us: us(r.latency.quantile(0.999)),
            latency_max_us: us(r.latency.max()),
            found: r.found,
            wrong: r.wrong,
        })
    } else {
        None
    };
    let user = user_bytes.load(Relaxed);
    let after = engine.stats();
    let engine_delta = before.0.zip(after.as_ref()).map(|(b, a)| {
        let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
        let gets = d(b.gets, a.gets);
        (
            (d(b.user_bytes_written, a.user_bytes_written) > 0.0).then(|| {
                d(b.disk_bytes_written, a.disk_bytes_written)
                    / d(b.user_bytes_written, a.user_bytes_written)
            }),
            (gets > 0.0).then(|| d(b.pages_read, a.pages_read) / gets),
            a.memory_bytes_per_key(),
            d(b.synced_write_groups, a.synced_write_groups),
            (d(b.stalls, a.stalls) as u64, a.max_stall_micros as f64),
            a.max_log_sync_micros as f64,
        )
    });
    let writes = writes.load(Relaxed);
    Ok(PhaseResult {
        engine: name.to_string(),
        phase,
        cold,
        ops,
        seconds,
        ops_per_sec: ops as f64 / seconds.max(1e-9),
        latency_p50_us: us(latency.quantile(0.5)),
        latency_p99_us: us(latency.quantile(0.99)),
        latency_p999_us: us(latency.quantile(0.999)),
        latency_max_us: us(latency.max()),
        found,
        wrong,
        user_bytes_written: user,
        device_bytes_written: device.write_bytes,
        device_bytes_read: device.read_bytes,
        device_write_amp: (user > 0).then(|| device.write_bytes as f64 / user as f64),
        disk_bytes: measure::dir_bytes(dir),
        rss_bytes: measure::rss_bytes(),
        engine_write_amp: engine_delta.and_then(|d| d.0),
        pages_per_get: engine_delta.and_then(|d| d.1),
        memory_bytes_per_key: engine_delta.map(|d| d.2),
        cpu_seconds,
        writes,
        log_syncs_per_write: engine_delta
            .filter(|_| cfg.sync && writes > 0)
            .map(|d| d.3 / writes as f64),
        stalls: engine_delta.map(|d| d.4 .0),
        max_stall_us: engine_delta.map(|d| d.4 .1),
        max_log_sync_us: engine_delta.map(|d| d.5),
        reads_during_load,
    })
}

/// Whether `phase` reads from a store evicted from the page cache.
pub fn is_cold(cfg: &RunConfig, phase: Phase) -> bool {
    cfg.cold && !matches!(phase, Phase::Load | Phase::Settle | Phase::Reopen)
}

/// Quiet for this long means settled: LevelDB and RocksDB compact in bursts separated by well
/// under a second, and Spillway has no background work at all yet.
const QUIET: std::time::Duration = std::time::Duration::from_secs(3);
/// Give up waiting after this long (and say so): an engine that never settles is a finding.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(1800);

/// Wait until this process has sent no bytes to the device for [`QUIET`].
fn settle() -> Result<(), String> {
    let start = Instant::now();
    let mut last = DeviceIo::now().write_bytes;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < QUIET {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = DeviceIo::now().write_bytes;
        if now != last {
            last = now;
            quiet_since = Instant::now();
        }
        if start.elapsed() > SETTLE_LIMIT {
            return Err(format!(
                "the engine was still writing after {SETTLE_LIMIT:?}"
            ));
        }
    }
    Ok(())
}

/// What every thread of a phase shares.
struct Worker<'a> {
    engine: &'a dyn Engine,
    workload: &'a Workload,
    cfg: &'a RunConfig,
    threads: usize,
    user_bytes: &'a AtomicU64,
    writes: &'a AtomicU64,
    /// Records each load thread has had acknowledged so far.
    loaded: &'a [AtomicU64],
    progress: &'a (dyn Fn(u64) + Sync),
}

/// A thread's tally: latencies, operations, reads that found the right value, wrong values.
#[derive(Default)]
struct Tally {
    latency: Latency,
    ops: u64,
    found: u64,
    wrong: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.latency.merge(&other.latency);
        self.ops += other.ops;
        self.found += other.found;
        self.wrong += other.wrong;
    }
}

impl Worker<'_> {
    /// Thread `t` of `self.threads` loads records `t, t + self.threads, ...` in batches. Operations are
    /// records (so load ops/s is inserts/s); latency is per batch, the unit a writer waits for.
    fn load(&self, t: usize) -> Result<Tally, String> {
        let mut latency = Latency::default();
        let mut batch = RecordBatch::new(KEY_LEN, self.workload.value_len());
        let mut value = Vec::new();
        let mut inserted = 0;
        let mut i = t as u64;
        while i < self.cfg.records {
            batch.clear();
            while batch.len() < self.cfg.batch && i < self.cfg.records {
                self.workload.fill_value(i, &mut value);
                batch.push(&self.workload.key(i), &value);
                i += self.threads as u64;
            }
            let start = Instant::now();
            self.engine.write(&batch, self.cfg.sync)?;
            latency.record(start.elapsed().as_nanos() as u64);
            self.user_bytes.fetch_add(batch.user_bytes(), Relaxed);
            self.writes.fetch_add(1, Relaxed);
            self.loaded[t].fetch_add(batch.len() as u64, Relaxed);
            (self.progress)(batch.len() as u64);
            inserted += batch.len() as u64;
        }
        Ok(Tally {
            latency,
            ops: inserted,
            ..Tally::default()
        })
    }

    /// Reader `r` GETs keys the load has already had acknowledged, until it ends; every
    /// value is checked.
    fn read_while_loading(&self, r: usize, loading: &AtomicBool) -> Result<Tally, String> {
        let mut tally = Tally::default();
        let mut rng = SplitMix64::new(self.cfg.seed ^ 0x04ea_de45 ^ ((r as u64 + 1) << 40));
        let mut expected = Vec::new();
        while loading.load(Relaxed) {
            // Writer `t` loads records t, t + threads, ...: its first `n` are acknowledged.
            let t = rng.next_u64() as usize % self.threads;
            let n = self.loaded[t].load(Relaxed);
            if n == 0 {
                std::thread::yield_now();
                continue;
            }
            let i = t as u64 + (rng.next_u64() % n) * self.threads as u64;
            self.workload.fill_value(i, &mut expected);
            let start = Instant::now();
            let got = self.engine.get(&self.workload.key(i))?;
            tally.latency.record(start.elapsed().as_nanos() as u64);
            tally.ops += 1;
            match got {
                Some(v) if v == expected => tally.found += 1,
                _ => tally.wrong += 1, // absent is wrong too: the write was acknowledged
            }
        }
        Ok(tally)
    }

    /// Thread `t`'s share of a read or YCSB phase. Reads check the value they get; updates write
    /// the record's own value again, so every read stays checkable.
    fn ops(&self, t: usize, phase: Phase, choice: &KeyChoice) -> Result<Tally, String> {
        let mut latency = Latency::default();
        let mut rng =
            SplitMix64::new(self.cfg.seed ^ 0x0b5e_55ed ^ ((t as u64 + 1) << 40) ^ phase as u64);
        let ops = self.cfg.ops / self.threads as u64
            + u64::from((t as u64) < self.cfg.ops % self.threads as u64);
        let (write_share, read_first) = phase.mix();
        let mut batch = RecordBatch::new(KEY_LEN, self.workload.value_len());
        let (mut expected, mut found, mut wrong) = (Vec::new(), 0, 0);
        for n in 0..ops {
            let start = Instant::now();
            if phase == Phase::ReadMissing {
                // Indices at or past `records` were never loaded: the key mixer is a bijection.
                let i = self.cfg.records + rng.next_u64() % (u64::MAX / 2);
                if self.engine.get(&self.workload.key(i))?.is_some() {
                    wrong += 1;
                }
            } else {
                let i = choice.next(&mut rng);
                let key = self.workload.key(i);
                self.workload.fill_value(i, &mut expected);
                let write = write_share > 0.0 && rng.unit() < write_share;
                if !write || read_first {
                    match self.engine.get(&key)? {
                        Some(v) if v == expected => found += 1,
                        Some(_) => wrong += 1,
                        None => {}
                    }
                }
                if write {
                    batch.clear();
                    batch.push(&key, &expected);
                    self.engine.write(&batch, self.cfg.sync)?;
                    self.user_bytes.fetch_add(batch.user_bytes(), Relaxed);
                    self.writes.fetch_add(1, Relaxed);
                }
            }
            latency.record(start.elapsed().as_nanos() as u64);
            if n % 1024 == 1023 {
                (self.progress)(1024);
            }
        }
        (self.progress)(ops % 1024);
        Ok(Tally {
            latency,
            ops,
            found,
            wrong,
        })
    }
}
