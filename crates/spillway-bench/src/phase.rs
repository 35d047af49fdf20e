//! Running one phase of a benchmark on one engine, from many threads, with latencies.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::counters::{CounterModel, HotGet};
use crate::engine::{Engine, RecordBatch};
use crate::measure::{self, DeviceIo, Latency};
use crate::scan::ScanResult;
use crate::workload::{Keys, SplitMix64, Workload, KEY_LEN};
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
    // New phases go last: a phase's discriminant seeds its operations' random choices, so
    // moving one would change the keys an existing phase reads.
    /// YCSB E: 95% short scans (a uniform 1..=100 records from a chosen loaded key), 5%
    /// inserts of new keys. Needs an engine that keeps keys in order.
    YcsbE,
    /// One forward scan of the whole store from its smallest key, checked against the count
    /// written; its operations are records (ops/s is records/s).
    ScanAll,
    /// `ops` increments of 1 over `records` counters (keys of their own), in batches of
    /// `batch`; then a GET of every counter, checked for its exact value (see `counters`).
    Counters,
    /// GETs of the most incremented counter alternating with GETs of a loaded record.
    HotGet,
    /// YCSB F on counters: 50% GETs, 50% increments — merges where the engine has them, a
    /// read, add and write where it does not; then every counter is checked.
    YcsbFMerge,
}

/// The longest scan YCSB E asks for (YCSB's default `maxscanlength`); lengths are uniform in
/// `1..=MAX_SCAN_LEN`.
pub const MAX_SCAN_LEN: u64 = 100;

/// The share of YCSB E's operations that insert a new record (the rest scan).
const YCSB_E_INSERTS: f64 = 0.05;

impl Phase {
    /// Every phase, in the order `--workloads` documents them (the counter workloads last).
    pub const ALL: [Phase; 14] = [
        Phase::Load,
        Phase::Settle,
        Phase::Reopen,
        Phase::Read,
        Phase::ReadMissing,
        Phase::YcsbA,
        Phase::YcsbB,
        Phase::YcsbC,
        Phase::YcsbE,
        Phase::YcsbF,
        Phase::ScanAll,
        Phase::Counters,
        Phase::HotGet,
        Phase::YcsbFMerge,
    ];

    /// The phases that read by key only, which every engine can run (all but the scans).
    pub const POINT: [Phase; 9] = [
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

    /// The counter workloads, in the order that makes each meaningful: a load for `hot-get`'s
    /// plain record, the increments, the hot counter's GETs before YCSB F adds to the others.
    pub const COUNTERS: [Phase; 4] = [
        Phase::Load,
        Phase::Counters,
        Phase::HotGet,
        Phase::YcsbFMerge,
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
            Phase::YcsbE => "ycsb-e",
            Phase::ScanAll => "scan-all",
            Phase::Counters => "counters",
            Phase::HotGet => "hot-get",
            Phase::YcsbFMerge => "ycsb-f-merge",
        }
    }

    pub fn parse(name: &str) -> Result<Phase, String> {
        Phase::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
                format!("unknown workload `{name}` ({})", names.join(", "))
            })
    }

    /// Whether the phase scans, which only engines that keep keys in order can do.
    pub fn scans(self) -> bool {
        matches!(self, Phase::YcsbE | Phase::ScanAll)
    }

    /// Whether the phase reads the store (GETs, scans, a counter's check): all but the
    /// writing and waiting phases. An engine that refuses reads does not run these (see
    /// [`Engine::refuses_reads`]).
    pub fn reads(self) -> bool {
        !matches!(self, Phase::Load | Phase::Settle | Phase::Reopen)
    }

    /// Whether the phase works on counters (and so needs the driver's [`CounterModel`]).
    pub fn counts(self) -> bool {
        matches!(self, Phase::Counters | Phase::HotGet | Phase::YcsbFMerge)
    }

    /// Whether the phase reads the loaded records, so that `load` must come first. The
    /// counters are keys of their own: `counters` and `ycsb-f-merge` need no load; `hot-get`
    /// needs one for its plain record.
    pub fn needs_load(self) -> bool {
        !matches!(
            self,
            Phase::Load | Phase::Settle | Phase::Reopen | Phase::Counters | Phase::YcsbFMerge
        )
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
    /// How keys are made: random (the default) or sequential (big-endian indices, ascending).
    #[serde(default)]
    pub keys: Keys,
    /// Spillway's `Options::memory_budget` in every Spillway configuration (peers keep their
    /// defaults); `None`: no budget.
    #[serde(default)]
    pub spillway_memory_budget: Option<usize>,
    /// Engine options by name and value ([`spillway::Options::set`]) in every Spillway
    /// configuration, after its own (peers keep their defaults): e.g. `fan_out` = `1024`.
    #[serde(default)]
    pub spillway_options: Vec<(String, String)>,
    /// Threads spinning on the CPU for the whole run, beside the engine (see `hog`): a busy
    /// machine. Only [`run_isolated`](crate::run_isolated) starts them.
    #[serde(default)]
    pub cpu_hogs: usize,
    /// Open the stores an earlier run loaded and kept in the work folder (as `db_bench
    /// --use_existing_db` does) instead of starting from empty ones; the run must not load,
    /// and its records (count, size, seed, keys) must be those of the run that loaded them.
    #[serde(default)]
    pub existing: bool,
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
    /// Operations are records in the load (inserts/s), increments in `counters`, and GETs or
    /// updates elsewhere; latency is per operation, except in the load and `counters`, where
    /// it is per batch of `batch` records or increments.
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
    /// Blocks of selectors that left memory read per GET (under a memory budget).
    #[serde(default)]
    pub selector_blocks_per_get: Option<f64>,
    /// Seconds the engine took, before a cold phase (after its reopen), to bring in what it
    /// keeps in memory for reads (`Engine::warm_up`; not part of the phase's time). `None`
    /// for engines with nothing to bring in, and for warm phases.
    #[serde(default)]
    pub warm_up_seconds: Option<f64>,
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
    /// Of those, the waits behind upkeep (the spill past its buffer), and the longest.
    #[serde(default)]
    pub upkeep_stalls: Option<u64>,
    #[serde(default)]
    pub max_upkeep_stall_us: Option<f64>,
    /// Write groups slowed down while a spill ran instead (see Spillway's `db::pacing`), and
    /// the seconds they waited in all.
    #[serde(default)]
    pub paced_writes: Option<u64>,
    #[serde(default)]
    pub pace_seconds: Option<f64>,
    /// The longest log fdatasync since open (Spillway only): the disk's share of `max`.
    #[serde(default)]
    pub max_log_sync_us: Option<f64>,
    /// GETs run by `RunConfig::readers` threads during the load.
    #[serde(default)]
    pub reads_during_load: Option<Gets>,
    /// Records written at keys not there before (YCSB E's inserts), beyond the load's.
    #[serde(default)]
    pub inserted: u64,
    /// Scans run, the records they returned and those records' key + value bytes (scan
    /// phases only). In YCSB E `found` counts the scans that began at their key and returned
    /// `1..=length` records in order (short only at the end of the keys), `wrong` the others;
    /// in `scan-all` `found` is the records returned and `wrong` those out of key order.
    #[serde(default)]
    pub scans: Option<u64>,
    #[serde(default)]
    pub scanned_records: Option<u64>,
    #[serde(default)]
    pub scanned_bytes: Option<u64>,
    /// Why the phase could not be completed on this engine: its scan returned an error (a
    /// store without key order refuses scans), a full scan did not return every record
    /// written, or the engine refuses every read (the raw-log baselines), so that a phase that
    /// reads was not run at all. The figures are then those of the operations done; the run
    /// goes on.
    #[serde(default)]
    pub error: Option<String>,
    /// The GET of every counter after `counters` and `ycsb-f-merge`, timed apart from the
    /// phase's operations (which are the increments); every value was exact.
    #[serde(default)]
    pub counter_gets: Option<Gets>,
    /// Of those, the GETs of the `counters::TOP_COUNTERS` most incremented counters; after
    /// `counters` their first reads, which fold every operand not folded yet.
    #[serde(default)]
    pub top_counter_gets: Option<Gets>,
    /// `hot-get`'s two kinds of GET, each on its own.
    #[serde(default)]
    pub hot_get: Option<HotGet>,
    /// Spillway's merge counters over the phase, its counter check included (Spillway only).
    #[serde(default)]
    pub merge_stats: Option<MergeStats>,
    /// Bytes Spillway's own counters say it wrote over the phase, by cause (Spillway only):
    /// the settle after a load shows the work the load left behind.
    #[serde(default)]
    pub engine_writes: Option<EngineWrites>,
}

/// GETs timed apart from a phase's own operations: those run alongside a load, the check of
/// every counter, each kind of `hot-get`'s GETs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Gets {
    pub ops: u64,
    pub ops_per_sec: f64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_p999_us: f64,
    pub latency_max_us: f64,
    pub found: u64,
    pub wrong: u64,
}

impl Gets {
    /// `tally`'s GETs, which took `seconds`.
    pub(crate) fn from_tally(tally: &Tally, seconds: f64) -> Gets {
        let us = |n: u64| n as f64 / 1000.0;
        Gets {
            ops: tally.ops,
            ops_per_sec: tally.ops as f64 / seconds.max(1e-9),
            latency_p50_us: us(tally.latency.quantile(0.5)),
            latency_p99_us: us(tally.latency.quantile(0.99)),
            latency_p999_us: us(tally.latency.quantile(0.999)),
            latency_max_us: us(tally.latency.max()),
            found: tally.found,
            wrong: tally.wrong,
        }
    }
}

/// What Spillway's merge counters ([`spillway::Stats`]) moved by in a phase.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct MergeStats {
    pub gets: u64,
    #[serde(default)]
    pub pages_read: u64,
    pub merges: u64,
    pub operands_folded: u64,
    pub merge_write_backs: u64,
    pub merge_failures: u64,
}

/// What Spillway wrote in a phase, by cause ([`spillway::Stats`]'s `*_bytes_written`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct EngineWrites {
    pub user: u64,
    pub disk: u64,
    pub log: u64,
    pub log_zeros: u64,
    pub root_spills: u64,
    pub node_spills: u64,
    pub leaf_rewrites: u64,
    pub list_merges: u64,
    pub selectors: u64,
    pub metadata: u64,
}

impl EngineWrites {
    /// What `stats` counts since its store was opened.
    fn of(s: &spillway::Stats) -> EngineWrites {
        EngineWrites {
            user: s.user_bytes_written,
            disk: s.disk_bytes_written,
            log: s.wal_bytes_written,
            log_zeros: s.log_prefill_bytes_written,
            root_spills: s.root_spill_bytes_written,
            node_spills: s.node_spill_bytes_written,
            leaf_rewrites: s.leaf_rewrite_bytes_written,
            list_merges: s.list_merge_bytes_written,
            selectors: s.selector_bytes_written,
            metadata: s.metadata_bytes_written,
        }
    }

    /// Each field of `self` and `o` through `f`.
    fn zip(&self, o: &EngineWrites, f: impl Fn(u64, u64) -> u64) -> EngineWrites {
        EngineWrites {
            user: f(self.user, o.user),
            disk: f(self.disk, o.disk),
            log: f(self.log, o.log),
            log_zeros: f(self.log_zeros, o.log_zeros),
            root_spills: f(self.root_spills, o.root_spills),
            node_spills: f(self.node_spills, o.node_spills),
            leaf_rewrites: f(self.leaf_rewrites, o.leaf_rewrites),
            list_merges: f(self.list_merges, o.list_merges),
            selectors: f(self.selectors, o.selectors),
            metadata: f(self.metadata, o.metadata),
        }
    }

    fn between(before: &spillway::Stats, after: &spillway::Stats) -> EngineWrites {
        Self::of(after).zip(&Self::of(before), u64::saturating_sub)
    }

    /// The two phases' writes together.
    pub fn plus(&self, o: &EngineWrites) -> EngineWrites {
        self.zip(o, |a, b| a + b)
    }

    /// "total (log a; zeros b; …)", each over `user` bytes: a write amplification by cause.
    pub fn amplification(&self, user: u64) -> String {
        let r = |b: u64| b as f64 / user.max(1) as f64;
        format!(
            "{:.2} (log {:.2}; zeros {:.2}; root spills {:.2}; node spills {:.2}; leaf rewrites \
             {:.2}; list merges {:.2}; selector tiers {:.2}; manifest + index {:.2})",
            r(self.disk),
            r(self.log),
            r(self.log_zeros),
            r(self.root_spills),
            r(self.node_spills),
            r(self.leaf_rewrites),
            r(self.list_merges),
            r(self.selectors),
            r(self.metadata)
        )
    }
}

impl MergeStats {
    fn between(before: &spillway::Stats, after: &spillway::Stats) -> MergeStats {
        let d = |x: u64, y: u64| y.saturating_sub(x);
        MergeStats {
            gets: d(before.gets, after.gets),
            pages_read: d(before.pages_read, after.pages_read),
            merges: d(before.merges, after.merges),
            operands_folded: d(before.operands_folded, after.operands_folded),
            merge_write_backs: d(before.merge_write_backs, after.merge_write_backs),
            merge_failures: d(before.merge_failures, after.merge_failures),
        }
    }

    /// Whether anything merged or was folded: nothing to report otherwise.
    pub fn any(&self) -> bool {
        self.merges + self.operands_folded + self.merge_write_backs + self.merge_failures > 0
    }
}

/// Run `phase` on an open engine whose store is in `dir`. `inserted` is how many records
/// earlier phases inserted beyond the load's (at indices `records..records + inserted`), so
/// that new inserts take fresh keys and a full scan knows what to expect. `progress` is called
/// with the number of operations just completed. `counters` is what every counter must hold,
/// kept across the engine's phases (see [`CounterModel::for_run`]).
///
/// An engine error ends the run with `Err`, and so does a counter with a wrong value; an
/// error from a scan is recorded in the result's `error` (the phase failed on this engine, the
/// run goes on), and so is an engine's refusal of every read
/// ([`Engine::refuses_reads`]): a phase that reads is then not run.
#[allow(clippy::too_many_arguments)]
pub fn run(
    engine: &dyn Engine,
    name: &str,
    dir: &Path,
    cfg: &RunConfig,
    phase: Phase,
    inserted: u64,
    counters: &CounterModel,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<PhaseResult, String> {
    if phase.counts() && cfg.records == 0 {
        return Err(format!(
            "{} needs at least one counter (--records)",
            phase.name()
        ));
    }
    if phase.counts() && counters.len() != cfg.records {
        return Err(format!(
            "{}: the counter model holds {} counters, not one per record ({})",
            phase.name(),
            counters.len(),
            cfg.records
        ));
    }
    let workload = Workload::new(cfg.seed, cfg.record_size)?.with_keys(cfg.keys);
    // The caller closed, evicted and reopened the store before a cold phase (see `run`).
    let cold = is_cold(cfg, phase);
    let threads = cfg.threads.max(1);
    let choice = if cfg.zipfian && cfg.records >= 2 {
        KeyChoice::Zipfian(Zipf::new(cfg.records))
    } else {
        KeyChoice::Uniform(cfg.records.max(1))
    };
    let user_bytes = AtomicU64::new(0);
    let writes = AtomicU64::new(0);
    let loaded: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
    let loading = AtomicBool::new(true);
    let readers = if phase == Phase::Load { cfg.readers } else { 0 };
    let next_insert = AtomicU64::new(cfg.records + inserted);
    // Asked before anything runs: a refusal leaves the phase with no operations (the counters,
    // `hot-get` and the readers beside a load would otherwise each fail in their own way).
    let refused = engine
        .refuses_reads()
        .filter(|_| phase.reads() || readers > 0);
    let worker = Worker {
        engine,
        workload: &workload,
        cfg,
        threads,
        user_bytes: &user_bytes,
        writes: &writes,
        loaded: &loaded,
        next_insert: &next_insert,
        progress,
    };
    if phase == Phase::YcsbFMerge && refused.is_none() {
        worker.populate(counters)?; // untimed, like a load
    }
    let before = (engine.stats(), DeviceIo::now(), measure::cpu_seconds());
    let mut hot_get = None;
    let start = Instant::now();
    type Tallies = Vec<Result<Tally, String>>;
    let (per_thread, reads): (Tallies, Tallies) = if let Some(why) = &refused {
        let tally = Tally {
            error: Some(why.clone()),
            ..Tally::default()
        };
        (vec![Ok(tally)], vec![])
    } else if phase == Phase::Settle {
        (vec![settle().map(|()| Tally::default())], vec![])
    } else if phase == Phase::Reopen {
        (vec![Ok(Tally::default())], vec![]) // the caller reopens; see `run::run`
    } else if phase == Phase::ScanAll {
        // One scan is one thread's work, whatever `threads` says. Counters are records too.
        (
            vec![Ok(
                worker.scan_all(cfg.records + inserted + counters.present())
            )],
            vec![],
        )
    } else if phase == Phase::HotGet {
        // Latency, not throughput: one thread, whatever `threads` says.
        let (tally, hot) = worker.hot_get(counters)?;
        hot_get = Some(hot);
        (vec![Ok(tally)], vec![])
    } else {
        std::thread::scope(|s| {
            let (worker, choice, loading) = (&worker, &choice, &loading);
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || match phase {
                        Phase::Load => worker.load(t),
                        Phase::Counters => worker.increments(t, choice, counters),
                        Phase::YcsbFMerge => worker.counter_ops(t, choice, counters),
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
        inserted,
        scans,
        scanned_records,
        scanned_bytes,
        error,
    } = total(per_thread)?;
    let us = |n: u64| n as f64 / 1000.0;
    let reads_during_load = if readers > 0 && refused.is_none() {
        Some(Gets::from_tally(&total(reads)?, seconds))
    } else {
        None
    };
    if phase.counts() && wrong > 0 {
        return Err(format!(
            "{name} {}: {wrong} of {found_or_wrong} reads got a value that the acknowledged \
             writes do not explain — results not trusted",
            phase.name(),
            found_or_wrong = found + wrong,
        ));
    }
    let user = user_bytes.load(Relaxed);
    let after = engine.stats();
    let engine_delta = before.0.as_ref().zip(after.as_ref()).map(|(b, a)| {
        let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
        let gets = d(b.gets, a.gets);
        (
            (d(b.user_bytes_written, a.user_bytes_written) > 0.0).then(|| {
                d(b.disk_bytes_written, a.disk_bytes_written)
                    / d(b.user_bytes_written, a.user_bytes_written)
            }),
            (gets > 0.0).then(|| {
                (
                    d(b.pages_read, a.pages_read) / gets,
                    d(b.selector_blocks_read, a.selector_blocks_read) / gets,
                )
            }),
            a.memory_bytes_per_key(),
            d(b.synced_write_groups, a.synced_write_groups),
            (
                d(b.stalls, a.stalls) as u64,
                a.max_stall_micros as f64,
                d(b.upkeep_stalls, a.upkeep_stalls) as u64,
                a.max_upkeep_stall_micros as f64,
                d(b.paced_writes, a.paced_writes) as u64,
                d(b.pace_micros, a.pace_micros) / 1e6,
            ),
            a.max_log_sync_micros as f64,
        )
    });
    let writes = writes.load(Relaxed);
    // After the phase's own figures, so that they do not include it.
    let (counter_gets, top_counter_gets) =
        if matches!(phase, Phase::Counters | Phase::YcsbFMerge) && refused.is_none() {
            let (all, top) = worker
                .check(counters)
                .map_err(|e| format!("{name} {}: {e}", phase.name()))?;
            (Some(all), Some(top))
        } else {
            (None, None)
        };
    let last = engine.stats();
    let merge_stats = before
        .0
        .as_ref()
        .zip(last.as_ref())
        .map(|(b, a)| MergeStats::between(b, a));
    let engine_writes = before
        .0
        .as_ref()
        .zip(last.as_ref())
        .map(|(b, a)| EngineWrites::between(b, a));
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
        pages_per_get: engine_delta.and_then(|d| d.1).map(|(pages, _)| pages),
        selector_blocks_per_get: engine_delta.and_then(|d| d.1).map(|(_, blocks)| blocks),
        warm_up_seconds: None, // the caller's (see `run::run`)
        memory_bytes_per_key: engine_delta.map(|d| d.2),
        cpu_seconds,
        writes,
        log_syncs_per_write: engine_delta
            .filter(|_| cfg.sync && writes > 0)
            .map(|d| d.3 / writes as f64),
        stalls: engine_delta.map(|d| d.4 .0),
        max_stall_us: engine_delta.map(|d| d.4 .1),
        upkeep_stalls: engine_delta.map(|d| d.4 .2),
        max_upkeep_stall_us: engine_delta.map(|d| d.4 .3),
        paced_writes: engine_delta.map(|d| d.4 .4),
        pace_seconds: engine_delta.map(|d| d.4 .5),
        max_log_sync_us: engine_delta.map(|d| d.5),
        reads_during_load,
        inserted,
        scans: phase.scans().then_some(scans),
        scanned_records: phase.scans().then_some(scanned_records),
        scanned_bytes: phase.scans().then_some(scanned_bytes),
        error,
        counter_gets,
        top_counter_gets,
        hot_get,
        merge_stats,
        engine_writes,
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

/// What every thread of a phase shares (the counter workloads' share is in `counters`).
pub(crate) struct Worker<'a> {
    pub(crate) engine: &'a dyn Engine,
    pub(crate) workload: &'a Workload,
    pub(crate) cfg: &'a RunConfig,
    pub(crate) threads: usize,
    pub(crate) user_bytes: &'a AtomicU64,
    pub(crate) writes: &'a AtomicU64,
    /// Records each load thread has had acknowledged so far.
    loaded: &'a [AtomicU64],
    /// The index of the next record YCSB E inserts (past every record written so far).
    next_insert: &'a AtomicU64,
    pub(crate) progress: &'a (dyn Fn(u64) + Sync),
}

/// A thread's tally: latencies, operations, reads that found the right value, wrong values;
/// records inserted; scans and what they returned; the scan error that stopped the thread.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) latency: Latency,
    pub(crate) ops: u64,
    pub(crate) found: u64,
    pub(crate) wrong: u64,
    inserted: u64,
    scans: u64,
    scanned_records: u64,
    scanned_bytes: u64,
    pub(crate) error: Option<String>,
}

impl Tally {
    pub(crate) fn add(&mut self, other: &Tally) {
        self.latency.merge(&other.latency);
        self.ops += other.ops;
        self.found += other.found;
        self.wrong += other.wrong;
        self.inserted += other.inserted;
        self.scans += other.scans;
        self.scanned_records += other.scanned_records;
        self.scanned_bytes += other.scanned_bytes;
        if self.error.is_none() {
            self.error.clone_from(&other.error);
        }
    }

    /// Count a scan of at most `len` records that started at a present key.
    fn scanned(&mut self, r: &ScanResult, len: u64) {
        self.scans += 1;
        self.scanned_records += r.records;
        self.scanned_bytes += r.bytes;
        let right = r.began_at_start
            && r.out_of_order == 0
            && (1..=len).contains(&r.records)
            && (r.records == len || r.reached_end);
        if right {
            self.found += 1;
        } else {
            self.wrong += 1;
        }
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
    /// the record's own value again, so every read stays checkable. YCSB E's scans are checked
    /// by [`Tally::scanned`]; a scan error stops the thread and is recorded, not returned.
    fn ops(&self, t: usize, phase: Phase, choice: &KeyChoice) -> Result<Tally, String> {
        let mut tally = Tally::default();
        let mut rng =
            SplitMix64::new(self.cfg.seed ^ 0x0b5e_55ed ^ ((t as u64 + 1) << 40) ^ phase as u64);
        let ops = self.cfg.ops / self.threads as u64
            + u64::from((t as u64) < self.cfg.ops % self.threads as u64);
        let (write_share, read_first) = phase.mix();
        let mut batch = RecordBatch::new(KEY_LEN, self.workload.value_len());
        let mut expected = Vec::new();
        let mut done = 0;
        while done < ops {
            let start = Instant::now();
            if phase == Phase::ReadMissing {
                // Indices at or past `records` were never loaded: the key mixer is a bijection.
                // (YCSB E inserts a few of them, one after another from `records`: a draw from
                // 2^63 indices does not meet one.)
                let i = self.cfg.records + rng.next_u64() % (u64::MAX / 2);
                if self.engine.get(&self.workload.key(i))?.is_some() {
                    tally.wrong += 1;
                }
            } else if phase == Phase::YcsbE {
                if rng.unit() < YCSB_E_INSERTS {
                    // A record never written: the next index past all of them.
                    let i = self.next_insert.fetch_add(1, Relaxed);
                    self.workload.fill_value(i, &mut expected);
                    batch.clear();
                    batch.push(&self.workload.key(i), &expected);
                    self.engine.write(&batch, self.cfg.sync)?;
                    self.user_bytes.fetch_add(batch.user_bytes(), Relaxed);
                    self.writes.fetch_add(1, Relaxed);
                    tally.inserted += 1;
                } else {
                    let key = self.workload.key(choice.next(&mut rng));
                    let len = 1 + rng.below(MAX_SCAN_LEN);
                    match self.engine.scan(&key, len as usize) {
                        Ok(r) => tally.scanned(&r, len),
                        Err(e) => {
                            tally.error = Some(e);
                            break;
                        }
                    }
                }
            } else {
                let i = choice.next(&mut rng);
                let key = self.workload.key(i);
                self.workload.fill_value(i, &mut expected);
                let write = write_share > 0.0 && rng.unit() < write_share;
                if !write || read_first {
                    match self.engine.get(&key)? {
                        Some(v) if v == expected => tally.found += 1,
                        Some(_) => tally.wrong += 1,
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
            tally.latency.record(start.elapsed().as_nanos() as u64);
            done += 1;
            if done % 1024 == 0 {
                (self.progress)(1024);
            }
        }
        (self.progress)(done % 1024);
        tally.ops = done;
        Ok(tally)
    }

    /// One scan of every record, from the smallest key, in this thread. Its operations are the
    /// records returned; no latency is recorded (there is one operation, the phase's time).
    /// `expected` is the number of records written.
    fn scan_all(&self, expected: u64) -> Tally {
        let mut tally = Tally::default();
        match self.engine.scan(&[], usize::MAX) {
            Ok(r) => {
                tally.ops = r.records;
                tally.found = r.records;
                tally.wrong = r.out_of_order;
                tally.scans = 1;
                tally.scanned_records = r.records;
                tally.scanned_bytes = r.bytes;
                if r.records != expected {
                    tally.error = Some(format!(
                        "the full scan returned {} records, but {expected} were written",
                        r.records
                    ));
                }
                (self.progress)(r.records);
            }
            Err(e) => tally.error = Some(e),
        }
        tally
    }
}
