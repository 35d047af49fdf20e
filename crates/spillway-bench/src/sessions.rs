//! The session-store workload (issue 30): keys written continuously, each with a TTL of T, and
//! read zipfian among the keys written within the last T, in real time (RocksDB's and fjall's
//! expiry is the wall clock's), for 10 × T by default. Every second the store's space is
//! sampled — the bytes its folder takes on disk (`du`: blocks allocated), or for Redis its
//! `used_memory` — beside the live data: the key + value bytes written within the last T.
//!
//! The writer is paced: `keys_per_ttl / T` keys per second, every key a new one (a session id:
//! the records' random 8-byte keys, record `i` written `i`-th; or with `Keys::Sequential`,
//! big-endian `i`, time-ordered ids, so that old keys' leaves are never written again), each
//! tick's keys due (ticks of
//! 10 ms) written in writes of at most `batch` records; a writer that falls behind writes
//! without pausing until it has caught up, and the report gives its worst backlog. So every
//! store holds the same live data at the same time, and its space over time is comparable.
//!
//! GET threads run flat out beside it: a key is chosen by its age rank among the
//! `keys_per_ttl` newest (YCSB's scrambled zipfian over the ranks, θ 0.99, or uniform), and its
//! value checked. One GET in 100 asks instead for a key that expired at least 250 ms ago: a
//! store that returns it is counted as `stale` (its figures are then not trusted).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engine::RecordBatch;
use crate::measure::{self, Latency};
use crate::session_engine::{ExpiryWork, SessionEngine, SessionEngineKind};
use crate::workload::{mix64, Keys, SplitMix64, Workload, KEY_LEN};
use crate::zipf::Zipf;

/// The writer's tick: it writes the keys due, then sleeps this long at most.
const TICK: Duration = Duration::from_millis(10);
/// A key is asked for as expired only once it expired this long ago (the stores' clocks are
/// the wall clock, ours a monotonic one; a write's expiry is set before it returns).
const EXPIRED_MARGIN: f64 = 0.25;
/// One GET in this many asks for an expired key.
const EXPIRED_CHECK_EVERY: u64 = 100;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionConfig {
    /// Keys written per TTL: once the run is past its first T, the live set.
    pub keys_per_ttl: u64,
    /// Bytes of each record: an 8-byte key and a value of the rest.
    pub record_size: usize,
    /// The TTL every key is written with, T.
    pub ttl_secs: f64,
    /// How long the run writes and reads (10 × T by default).
    pub seconds: f64,
    /// Records per write at most (1: every key a write of its own).
    pub batch: usize,
    /// Every write durable (fsynced) before it returns.
    pub sync: bool,
    /// GET threads.
    pub readers: usize,
    /// GETs choose among the newest keys by scrambled zipfian rank, else uniformly.
    pub zipfian: bool,
    /// Seconds between samples of the store's space.
    pub sample_secs: f64,
    pub seed: u64,
    /// Random session ids, or sequential (time-ordered) ones.
    #[serde(default)]
    pub keys: Keys,
}

impl SessionConfig {
    /// Keys written per second.
    pub fn rate(&self) -> f64 {
        self.keys_per_ttl as f64 / self.ttl_secs
    }

    pub fn ttl(&self) -> Duration {
        Duration::from_secs_f64(self.ttl_secs)
    }

    /// Keys the run writes if the store keeps up.
    pub fn target_inserts(&self) -> u64 {
        (self.seconds * self.rate()) as u64
    }

    pub fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(format!("{name} {v}: give a positive time"))
            }
        };
        positive("--ttl-secs", self.ttl_secs)?;
        positive("--seconds", self.seconds)?;
        positive("the sample interval", self.sample_secs)?;
        if self.keys_per_ttl < 2 {
            return Err("the sessions workload needs at least 2 keys per TTL".into());
        }
        if self.batch == 0 {
            return Err("--batch must be at least 1".into());
        }
        Workload::new(self.seed, self.record_size).map(|_| ())
    }
}

/// The store's space at one moment, beside the live data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the run began.
    pub t: f64,
    /// Disk: bytes allocated to the store's files (`du`). Memory: Redis's `used_memory`.
    pub space_bytes: u64,
    /// Disk: the files' lengths (`du --apparent-size`). Memory: Redis's `used_memory_rss`.
    pub other_bytes: u64,
    /// Key + value bytes of the keys written within the last T (before expiring).
    pub live_bytes: u64,
    /// Key + value bytes written so far.
    pub written_bytes: u64,
    /// How far behind its schedule the writer was, in seconds.
    #[serde(default)]
    pub lag_secs: f64,
    /// Spillway's counters so far: what rewrote the tree between two samples.
    #[serde(default)]
    pub counters: Option<EngineCounters>,
}

/// Spillway's counters (`Db::stats`) that say what rewrote its files, cumulative.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct EngineCounters {
    pub root_spills: u64,
    pub node_spills: u64,
    pub fast_splits: u64,
    pub slow_splits: u64,
    /// Nodes rewritten early because their sketches said most of their records were dead.
    pub collections: u64,
    pub list_merges: u64,
    pub stalls: u64,
    pub max_stall_micros: u64,
    pub disk_bytes_written: u64,
}

impl From<&spillway::Stats> for EngineCounters {
    fn from(s: &spillway::Stats) -> EngineCounters {
        EngineCounters {
            root_spills: s.root_spills,
            node_spills: s.node_spills,
            fast_splits: s.fast_splits,
            slow_splits: s.slow_splits,
            collections: s.collections,
            list_merges: s.list_merges,
            stalls: s.stalls,
            max_stall_micros: s.max_stall_micros,
            disk_bytes_written: s.disk_bytes_written,
        }
    }
}

/// One store's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SessionResult {
    pub engine: String,
    pub options: String,
    /// `"disk"`, or `"memory"` for Redis: what `space_bytes` measures.
    pub space: String,
    pub seconds: f64,
    pub inserts: u64,
    pub target_inserts: u64,
    pub inserts_per_sec: f64,
    /// The writer's worst backlog: how far behind its schedule it fell, in seconds.
    pub max_lag_secs: f64,
    /// GETs, the expired-key checks among them.
    pub gets: u64,
    pub gets_per_sec: f64,
    /// GETs of live keys that found their value.
    pub found: u64,
    /// GETs of live keys that found nothing: keys that expired before they were read, when
    /// the writer fell behind (0 otherwise).
    pub missed: u64,
    pub get_p50_us: f64,
    pub get_p99_us: f64,
    pub get_max_us: f64,
    /// GETs that asked for a key expired at least 250 ms before.
    pub expired_checks: u64,
    /// Of those, the ones that returned a value: an expired record read back.
    pub stale: u64,
    /// Values that were not the key's.
    pub wrong: u64,
    /// Key + value bytes written.
    pub written_bytes: u64,
    pub samples: Vec<Sample>,
    pub peak_space_bytes: u64,
    pub final_space_bytes: u64,
    /// Live data at the end of the run.
    pub final_live_bytes: u64,
    /// Space over live data, highest over the samples from T on (before T the live data is
    /// still growing, and a store's fixed overhead dwarfs it); `None` for a run shorter than T.
    pub peak_ratio: Option<f64>,
    /// Space over live data, averaged over the samples from T on.
    pub mean_ratio: Option<f64>,
    /// Space over live data at the end of the run.
    pub final_ratio: Option<f64>,
    /// CPU time of the benchmark's process (the store's threads included; for Redis, the
    /// client's alone — see `server_cpu_seconds`).
    pub cpu_seconds: f64,
    /// Redis's own CPU time (`INFO cpu`), where the store is a server.
    pub server_cpu_seconds: Option<f64>,
    pub rss_bytes: u64,
    /// fjall's scan-and-delete passes.
    pub expiry_work: Option<ExpiryWork>,
    /// Spillway's counters at the end of the run.
    #[serde(default)]
    pub counters: Option<EngineCounters>,
}

/// When how many keys were written: `(seconds since the start, keys written by then)`, one
/// entry per write at most every millisecond (a later write replaces the last entry within
/// the same millisecond, so an entry is always true: by its time, that many were written).
#[derive(Default)]
struct Timeline(Mutex<Vec<(f64, u64)>>);

impl Timeline {
    fn record(&self, t: f64, written: u64) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match v.last_mut() {
            Some(last) if t - last.0 < 0.001 => *last = (t, written),
            _ => v.push((t, written)),
        }
    }

    /// Keys written by time `t` (0 before the first write).
    fn written_by(&self, t: f64) -> u64 {
        let v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let i = v.partition_point(|&(at, _)| at <= t);
        if i == 0 {
            0
        } else {
            v[i - 1].1
        }
    }
}

/// What the threads share.
struct Shared<'a> {
    engine: &'a dyn SessionEngine,
    cfg: &'a SessionConfig,
    records: Workload,
    start: Instant,
    /// Keys written so far (record `i` is the `i`-th).
    written: AtomicU64,
    timeline: Timeline,
    stop: AtomicBool,
}

impl Shared<'_> {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Keys live at `t`: written, and not by `t - T` (a key's expiry is set before its write
    /// returns, so one written by then has expired).
    fn live_keys(&self, t: f64) -> u64 {
        self.timeline
            .written_by(t)
            .saturating_sub(self.timeline.written_by(t - self.cfg.ttl_secs))
    }
}

/// What the writer did.
#[derive(Default)]
struct WriterTally {
    inserts: u64,
    max_lag_secs: f64,
}

fn write_loop(s: &Shared<'_>) -> Result<WriterTally, String> {
    let cfg = s.cfg;
    let (rate, ttl, total) = (cfg.rate(), cfg.ttl(), cfg.target_inserts());
    let mut batch = RecordBatch::new(KEY_LEN, s.records.value_len());
    let mut value = Vec::new();
    let mut tally = WriterTally::default();
    let mut next = 0u64;
    while !s.stop.load(Ordering::Relaxed) {
        let now = s.now();
        if now >= cfg.seconds {
            break;
        }
        let due = ((now * rate) as u64).min(total);
        if next >= due {
            // Until the next key is due, a tick at most.
            let wait = ((next + 1) as f64 / rate - now).clamp(0.0, TICK.as_secs_f64());
            std::thread::sleep(Duration::from_secs_f64(wait));
            continue;
        }
        tally.max_lag_secs = tally.max_lag_secs.max((due - next) as f64 / rate);
        let n = (due - next).min(cfg.batch as u64);
        batch.clear();
        for i in next..next + n {
            s.records.fill_value(i, &mut value);
            batch.push(&s.records.key(i), &value);
        }
        s.engine.put(&batch, ttl, cfg.sync)?;
        next += n;
        s.written.store(next, Ordering::Release);
        s.timeline.record(s.now(), next);
    }
    tally.inserts = next;
    Ok(tally)
}

/// What one GET thread did.
#[derive(Default)]
struct ReaderTally {
    gets: u64,
    found: u64,
    missed: u64,
    expired_checks: u64,
    stale: u64,
    wrong: u64,
    latency: Latency,
}

fn read_loop(s: &Shared<'_>, zipf: Option<&Zipf>, seed: u64) -> Result<ReaderTally, String> {
    let window = s.cfg.keys_per_ttl;
    let mut rng = SplitMix64::new(seed);
    let mut tally = ReaderTally::default();
    let mut expected = Vec::new();
    while !s.stop.load(Ordering::Relaxed) && s.now() < s.cfg.seconds {
        let written = s.written.load(Ordering::Acquire);
        if written == 0 {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        if tally.gets % EXPIRED_CHECK_EVERY == EXPIRED_CHECK_EVERY - 1 {
            let gone = s
                .timeline
                .written_by(s.now() - s.cfg.ttl_secs - EXPIRED_MARGIN);
            if gone > 0 {
                let i = gone - 1 - rng.below(gone.min(window));
                let began = Instant::now();
                let got = s.engine.get(&s.records.key(i))?;
                tally.latency.record(began.elapsed().as_nanos() as u64);
                tally.gets += 1;
                tally.expired_checks += 1;
                tally.stale += u64::from(got.is_some());
                continue;
            }
        }
        let mut rank = match zipf {
            Some(z) => z.next(&mut rng),
            None => rng.below(window),
        };
        if rank >= written {
            rank %= written;
        }
        let i = written - 1 - rank;
        let began = Instant::now();
        let got = s.engine.get(&s.records.key(i))?;
        tally.latency.record(began.elapsed().as_nanos() as u64);
        tally.gets += 1;
        match got {
            Some(v) => {
                tally.found += 1;
                s.records.fill_value(i, &mut expected);
                tally.wrong += u64::from(v != expected);
            }
            None => tally.missed += 1,
        }
    }
    Ok(tally)
}

/// Bytes allocated to the files under `dir` (what `du` counts) and their lengths (what
/// `du --apparent-size` counts). Files deleted while it walks are skipped.
pub fn du(dir: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    let mut total = (0, 0);
    for e in entries.filter_map(Result::ok) {
        let (blocks, len) = match e.metadata() {
            Ok(m) if m.is_dir() => du(&e.path()),
            Ok(m) => (m.blocks() * 512, m.len()),
            Err(_) => (0, 0),
        };
        total.0 += blocks;
        total.1 += len;
    }
    total
}

fn sample(s: &Shared<'_>, dir: &Path) -> Result<Sample, String> {
    let t = s.now();
    let (space_bytes, other_bytes) = match s.engine.memory() {
        Some(m) => {
            let m = m?;
            (m.used_memory, m.used_memory_rss)
        }
        None => du(dir),
    };
    let size = s.cfg.record_size as u64;
    let written = s.written.load(Ordering::Acquire);
    let due = ((t.min(s.cfg.seconds) * s.cfg.rate()) as u64).min(s.cfg.target_inserts());
    Ok(Sample {
        t,
        space_bytes,
        other_bytes,
        live_bytes: s.live_keys(t) * size,
        written_bytes: written * size,
        lag_secs: due.saturating_sub(written) as f64 / s.cfg.rate(),
        counters: s.engine.stats().as_ref().map(EngineCounters::from),
    })
}

/// Run the workload on `kind` in `dir` (created empty; left as it ends).
pub fn run(
    kind: SessionEngineKind,
    dir: &Path,
    cfg: &SessionConfig,
) -> Result<SessionResult, String> {
    cfg.validate()?;
    let records = Workload::new(cfg.seed, cfg.record_size)?.with_keys(cfg.keys);
    let zipf = cfg.zipfian.then(|| Zipf::new(cfg.keys_per_ttl));
    let engine = kind.open(dir, cfg.ttl())?;
    let cpu_before = measure::cpu_seconds();
    let server_cpu_before = engine.server_cpu_seconds().transpose()?;
    let shared = Shared {
        engine: engine.as_ref(),
        cfg,
        records,
        start: Instant::now(),
        written: AtomicU64::new(0),
        timeline: Timeline::default(),
        stop: AtomicBool::new(false),
    };
    let s = &shared;
    let (writer, readers, samples) = std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            let r = write_loop(s);
            if r.is_err() {
                s.stop.store(true, Ordering::Relaxed);
            }
            r
        });
        let readers: Vec<_> = (0..cfg.readers)
            .map(|t| {
                let zipf = zipf.as_ref();
                scope.spawn(move || {
                    let r = read_loop(s, zipf, cfg.seed ^ mix64(t as u64 + 1));
                    if r.is_err() {
                        s.stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        // This thread samples, on a schedule of its own (a slow `du` delays the next sample,
        // it does not shift them all).
        let mut samples = Vec::new();
        let mut k = 0u64;
        let sampled = loop {
            match sample(s, dir) {
                Ok(x) => samples.push(x),
                Err(e) => {
                    s.stop.store(true, Ordering::Relaxed);
                    break Err(e);
                }
            }
            k += 1;
            let next = (k as f64 * cfg.sample_secs).min(cfg.seconds);
            while !s.stop.load(Ordering::Relaxed) && s.now() < next {
                let left = next - s.now();
                std::thread::sleep(Duration::from_secs_f64(left.clamp(0.0, 0.05)));
            }
            if s.stop.load(Ordering::Relaxed) || s.now() >= cfg.seconds {
                break Ok(());
            }
        };
        let writer = writer
            .join()
            .unwrap_or_else(|_| Err("the writer panicked".into()));
        let readers: Vec<Result<ReaderTally, String>> = readers
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a GET thread panicked".into()))
            })
            .collect();
        (writer, readers, sampled.map(|()| samples))
    });
    let seconds = shared.now();
    let writer = writer?;
    let mut samples = samples?;
    let mut all = ReaderTally::default();
    for r in readers {
        let r = r?;
        all.gets += r.gets;
        all.found += r.found;
        all.missed += r.missed;
        all.expired_checks += r.expired_checks;
        all.stale += r.stale;
        all.wrong += r.wrong;
        all.latency.merge(&r.latency);
    }
    // The end of the run, every thread stopped.
    samples.push(sample(&shared, dir)?);
    let cpu_seconds = measure::cpu_seconds() - cpu_before;
    let server_cpu_seconds = match (engine.server_cpu_seconds().transpose()?, server_cpu_before) {
        (Some(after), Some(before)) => Some(after - before),
        _ => None,
    };
    let expiry_work = engine.expiry_work();
    let counters = engine.stats().as_ref().map(EngineCounters::from);
    let rss_bytes = measure::rss_bytes();
    engine.close()?;

    let steady: Vec<f64> = samples
        .iter()
        .filter(|x| x.t >= cfg.ttl_secs && x.live_bytes > 0)
        .map(|x| x.space_bytes as f64 / x.live_bytes as f64)
        .collect();
    let last = samples.last().expect("one sample at least");
    let us = |q: f64| all.latency.quantile(q) as f64 / 1000.0;
    Ok(SessionResult {
        engine: kind.name().into(),
        options: kind.options_note().into(),
        space: if kind.in_memory() { "memory" } else { "disk" }.into(),
        seconds,
        inserts: writer.inserts,
        target_inserts: cfg.target_inserts(),
        inserts_per_sec: writer.inserts as f64 / seconds.max(1e-9),
        max_lag_secs: writer.max_lag_secs,
        gets: all.gets,
        gets_per_sec: all.gets as f64 / seconds.max(1e-9),
        found: all.found,
        missed: all.missed,
        get_p50_us: us(0.5),
        get_p99_us: us(0.99),
        get_max_us: all.latency.max() as f64 / 1000.0,
        expired_checks: all.expired_checks,
        stale: all.stale,
        wrong: all.wrong,
        written_bytes: writer.inserts * cfg.record_size as u64,
        peak_space_bytes: samples.iter().map(|x| x.space_bytes).max().unwrap_or(0),
        final_space_bytes: last.space_bytes,
        final_live_bytes: last.live_bytes,
        peak_ratio: steady.iter().copied().reduce(f64::max),
        // Never above the peak: equal ratios summed and divided can round one ulp over it
        // (seen with Redis, whose ratio held still).
        mean_ratio: steady
            .iter()
            .copied()
            .reduce(f64::max)
            .map(|peak| (steady.iter().sum::<f64>() / steady.len() as f64).min(peak)),
        final_ratio: (last.live_bytes > 0)
            .then(|| last.space_bytes as f64 / last.live_bytes as f64),
        samples,
        cpu_seconds,
        server_cpu_seconds,
        rss_bytes,
        expiry_work,
        counters,
    })
}

/// The figures a run must not have to be trusted: an expired record read back, a wrong value.
pub fn check(r: &SessionResult) -> Result<(), String> {
    if r.wrong > 0 {
        return Err(format!(
            "{}: {} of {} GETs returned a value that was not the key's — results not trusted",
            r.engine, r.wrong, r.gets
        ));
    }
    if r.stale > 0 {
        return Err(format!(
            "{}: {} of {} GETs of keys expired at least {EXPIRED_MARGIN} s before returned a \
             value — results not trusted",
            r.engine, r.stale, r.expired_checks
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeline_says_what_was_written_by_when() {
        let t = Timeline::default();
        assert_eq!(t.written_by(5.0), 0);
        t.record(1.0, 10);
        t.record(1.0005, 20); // the same millisecond: replaces the entry, later
        t.record(2.0, 30);
        assert_eq!(t.written_by(0.9), 0);
        assert_eq!(t.written_by(1.0), 0);
        assert_eq!(t.written_by(1.0005), 20);
        assert_eq!(t.written_by(1.9), 20);
        assert_eq!(t.written_by(2.5), 30);
        assert_eq!(t.written_by(-3.0), 0);
    }

    #[test]
    fn du_counts_blocks_and_lengths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![1u8; 10_000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b"), vec![2u8; 5_000]).unwrap();
        let (blocks, len) = du(dir.path());
        assert_eq!(len, 15_000);
        assert!(blocks >= 15_000, "{blocks}");
        assert_eq!(du(&dir.path().join("missing")), (0, 0));
    }
}
