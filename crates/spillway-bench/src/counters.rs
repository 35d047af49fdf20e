//! The counter workloads: upserts, where Spillway and RocksDB merge an increment without
//! reading while LevelDB, fjall and redb must read, add and write (see
//! [`Engine::increment`](crate::engine::Engine::increment)).
//!
//! - `counters`: `ops` increments of 1, spread uniformly or zipfian over `records` counters,
//!   in (synced) batches of `batch`; then a GET of every counter, each checked for its exact
//!   value — the GETs of the 100 most incremented counters also on their own: their first
//!   reads, which fold whatever operands the engine has not.
//! - `ycsb-f-merge`: YCSB F on counters — 50% GETs, 50% read-modify-writes that add 1, on the
//!   same key choice; for the merge engines the read-modify-write is a blind merge. Every
//!   counter is put (as 0) first if it has no value yet, so reads find a loaded keyspace; then
//!   every counter is checked, as after `counters`.
//! - `hot-get`: repeated GETs of the most incremented counter alternating with GETs of a
//!   loaded (put) record. After the check's first read, an engine that wrote the folded value
//!   back (Spillway does when a read met operands in several lists) answers the repeats from
//!   its root buffer; one that folds on every read (RocksDB) pays for every pending operand
//!   each time.
//!
//! Counters are keys of their own, never the loaded records' (whose values are not u64s), so
//! these workloads run beside the others in one store; the driver keeps what each counter
//! must hold ([`CounterModel`]) and any difference fails the run.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::counter::{self, CounterBatch};
use crate::engine::RecordBatch;
use crate::phase::{Gets, Phase, RunConfig, Tally, Worker};
use crate::workload::{SplitMix64, Workload, KEY_LEN};
use crate::zipf::KeyChoice;

/// Counter `j` is record `COUNTER_BASE + j`'s key: distinct from every loaded record's (the key
/// mixer is a bijection, and sequential keys are the index itself) and from YCSB E's inserts,
/// which count up from `records`. `read-missing` draws from `records..records + 2^63`, which
/// holds the counters, but at `records / 2^63` a draw it never meets one.
pub const COUNTER_BASE: u64 = 1 << 62;

/// The key of counter `j`.
pub fn key(workload: &Workload, j: u64) -> [u8; KEY_LEN] {
    workload.key(COUNTER_BASE + j)
}

/// At most this many GETs in `hot-get` (`ops` if fewer): two keys' latencies settle long
/// before, and `ops` is sized for the increments that run in the same invocation.
pub const HOT_GETS: u64 = 100_000;

/// `hot-get` also stops after this long (at a block's end, once both kinds have run): RocksDB
/// folds every operand of a key still in its memtable on each GET — tens of thousands for the
/// hottest counter, milliseconds per GET — and would otherwise take many minutes.
pub const HOT_GET_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// `hot-get` alternates between the two keys in blocks of this many GETs, so that what one
/// kind leaves in the CPU caches (a long fold walks a lot of memory) weighs on the other kind's
/// first GET only.
const HOT_BLOCK: u64 = 1000;

/// The GETs `hot-get` runs, hot and plain together (fewer if it runs out of time).
pub fn hot_gets(cfg: &RunConfig) -> u64 {
    cfg.ops.min(HOT_GETS)
}

/// The check after the increments times the GETs of this many most incremented counters on
/// their own: after `counters` they are those counters' first reads, each folding every
/// operand the engine has not yet folded — the cost repeated GETs of one counter hide once an
/// engine writes the folded value back (Spillway does).
pub const TOP_COUNTERS: usize = 100;

/// YCSB F's share of read-modify-writes (the rest are reads).
const YCSB_F_WRITES: f64 = 0.5;

/// What every counter must hold, kept by the driver across an engine's phases: each increment
/// is added once the engine has acknowledged it. Counters only grow (every increment adds 1),
/// so a concurrent read must see at least what was acknowledged before it began.
#[derive(Debug, Default)]
pub struct CounterModel {
    expected: Vec<AtomicU64>,
    /// Whether every counter has a value (was put as 0 when it had none).
    populated: AtomicBool,
}

impl CounterModel {
    /// `counters` counters, all absent (0).
    pub fn new(counters: u64) -> CounterModel {
        CounterModel {
            expected: (0..counters).map(|_| AtomicU64::new(0)).collect(),
            populated: AtomicBool::new(false),
        }
    }

    /// A model for `phases`: one counter per record if any of them counts, else none (a
    /// 20 M-record run that never counts need not hold 160 MB of zeros).
    pub fn for_run(phases: &[Phase], cfg: &RunConfig) -> CounterModel {
        if phases.iter().any(|p| p.counts()) {
            CounterModel::new(cfg.records)
        } else {
            CounterModel::default()
        }
    }

    pub fn len(&self) -> u64 {
        self.expected.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.expected.is_empty()
    }

    pub fn expected(&self, j: u64) -> u64 {
        self.expected[j as usize].load(Relaxed)
    }

    fn add(&self, j: u64, delta: u64) {
        self.expected[j as usize].fetch_add(delta, Relaxed); // wraps, as the engines do
    }

    /// Counters that have a value in the store: every one once populated, else those
    /// incremented (each increment adds 1, so none of those is back at 0).
    pub fn present(&self) -> u64 {
        if self.populated.load(Relaxed) {
            return self.len();
        }
        self.expected
            .iter()
            .filter(|c| c.load(Relaxed) != 0)
            .count() as u64
    }

    /// The `n` most incremented counters (fewer if fewer were incremented), in no order.
    fn top(&self, n: usize) -> std::collections::HashSet<u64> {
        let mut counts: Vec<(u64, u64)> = (0..self.len())
            .map(|j| (self.expected(j), j))
            .filter(|&(v, _)| v > 0)
            .collect();
        if counts.len() > n {
            counts.select_nth_unstable_by(n, |a, b| b.cmp(a));
            counts.truncate(n);
        }
        counts.into_iter().map(|(_, j)| j).collect()
    }

    /// The most incremented counter and its value (the first of equals), if any was.
    fn hottest(&self) -> Option<(u64, u64)> {
        let (j, v) = self
            .expected
            .iter()
            .map(|c| c.load(Relaxed))
            .enumerate()
            .fold(
                (0, 0),
                |best, (j, v)| if v > best.1 { (j, v) } else { best },
            );
        (v > 0).then_some((j as u64, v))
    }
}

/// Thread `t`'s share of `total` operations split over `threads`.
fn share(total: u64, t: usize, threads: usize) -> u64 {
    total / threads as u64 + u64::from((t as u64) < total % threads as u64)
}

/// Whether a counter read `got` is right: the value it had when the read began (`before`, from
/// the model), plus at most `in_flight` increments acknowledged by the engine but not yet
/// added to the model by their threads; `after` is the model when the read returned.
fn plausible(got: u64, before: u64, after: u64, in_flight: u64) -> bool {
    (before..=after + in_flight).contains(&got)
}

impl Worker<'_> {
    /// Thread `t`'s share of `counters`: increments of 1 to chosen counters, in batches of
    /// `batch` (a key may come up more than once in a batch, as it would for a user). Latency
    /// is per batch, as in the load: the unit a writer waits for.
    pub(crate) fn increments(
        &self,
        t: usize,
        choice: &KeyChoice,
        model: &CounterModel,
    ) -> Result<Tally, String> {
        let mut tally = Tally::default();
        let mut rng = SplitMix64::new(
            self.cfg.seed ^ 0xc0a7_e45e ^ ((t as u64 + 1) << 40) ^ Phase::Counters as u64,
        );
        let ops = share(self.cfg.ops, t, self.threads);
        let mut batch = CounterBatch::new(KEY_LEN);
        let mut chosen = Vec::with_capacity(self.cfg.batch);
        while tally.ops < ops {
            batch.clear();
            chosen.clear();
            while batch.len() < self.cfg.batch && tally.ops + (batch.len() as u64) < ops {
                let j = choice.next(&mut rng);
                batch.push(&key(self.workload, j), 1);
                chosen.push(j);
            }
            let start = Instant::now();
            self.engine.increment(&batch, self.cfg.sync)?;
            tally.latency.record(start.elapsed().as_nanos() as u64);
            for &j in &chosen {
                model.add(j, 1);
            }
            self.user_bytes.fetch_add(batch.user_bytes(), Relaxed);
            self.writes.fetch_add(1, Relaxed);
            (self.progress)(batch.len() as u64);
            tally.ops += batch.len() as u64;
        }
        Ok(tally)
    }

    /// Thread `t`'s share of `ycsb-f-merge`: a GET of a chosen counter (checked against the
    /// model), or an increment of 1 to it, one write each (synced with `sync`).
    pub(crate) fn counter_ops(
        &self,
        t: usize,
        choice: &KeyChoice,
        model: &CounterModel,
    ) -> Result<Tally, String> {
        let mut tally = Tally::default();
        let mut rng = SplitMix64::new(
            self.cfg.seed ^ 0x0b5e_55ed ^ ((t as u64 + 1) << 40) ^ Phase::YcsbFMerge as u64,
        );
        let ops = share(self.cfg.ops, t, self.threads);
        let in_flight = self.threads as u64 - 1; // the other threads' increments
        let mut batch = CounterBatch::new(KEY_LEN);
        while tally.ops < ops {
            let j = choice.next(&mut rng);
            let key = key(self.workload, j);
            let start = Instant::now();
            if rng.unit() < YCSB_F_WRITES {
                batch.clear();
                batch.push(&key, 1);
                self.engine.increment(&batch, self.cfg.sync)?;
                tally.latency.record(start.elapsed().as_nanos() as u64);
                model.add(j, 1);
                self.user_bytes.fetch_add(batch.user_bytes(), Relaxed);
                self.writes.fetch_add(1, Relaxed);
            } else {
                let before = model.expected(j);
                let got = self.engine.get(&key)?;
                tally.latency.record(start.elapsed().as_nanos() as u64);
                let right = match got.as_deref().map(counter::decode) {
                    None => before == 0,
                    Some(Ok(v)) => plausible(v, before, model.expected(j), in_flight),
                    Some(Err(_)) => false,
                };
                if right {
                    tally.found += 1;
                } else {
                    tally.wrong += 1;
                }
            }
            tally.ops += 1;
            if tally.ops % 1024 == 0 {
                (self.progress)(1024);
            }
        }
        (self.progress)(tally.ops % 1024);
        Ok(tally)
    }

    /// Give every counter that has none a value (0, by plain puts in batches of `batch`), so
    /// that `ycsb-f-merge` reads a loaded keyspace. Not timed; its bytes are not counted.
    pub(crate) fn populate(&self, model: &CounterModel) -> Result<(), String> {
        if model.populated.load(Relaxed) {
            return Ok(());
        }
        let zero = counter::encode(0);
        let mut batch = RecordBatch::new(KEY_LEN, zero.len());
        for j in 0..model.len() {
            if model.expected(j) == 0 {
                batch.push(&key(self.workload, j), &zero);
            }
            if batch.len() >= self.cfg.batch || (j + 1 == model.len() && !batch.is_empty()) {
                self.engine.write(&batch, self.cfg.sync)?;
                batch.clear();
            }
        }
        model.populated.store(true, Relaxed);
        Ok(())
    }

    /// GET every counter (thread `t` of `threads` takes counters `t, t + threads, ...`), each
    /// checked for exactly the model's value (absent is 0). Any difference is an `Err` naming
    /// the first: wrong counts make every figure of the run untrustworthy. Returns all the
    /// GETs, and those of the [`TOP_COUNTERS`] most incremented counters on their own.
    pub(crate) fn check(&self, model: &CounterModel) -> Result<(Gets, Gets), String> {
        let top = model.top(TOP_COUNTERS);
        let start = Instant::now();
        let per_thread: Vec<Result<(Tally, Side), String>> = std::thread::scope(|s| {
            let top = &top;
            let handles: Vec<_> = (0..self.threads)
                .map(|t| s.spawn(move || self.check_share(t, model, top)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("benchmark thread panicked"))
                .collect()
        });
        let seconds = start.elapsed().as_secs_f64();
        let (mut sum, mut hot) = (Tally::default(), Side::default());
        for r in per_thread {
            let (t, h) = r?;
            sum.add(&t); // keeps the first error
            hot.tally.add(&h.tally);
            hot.nanos += h.nanos;
        }
        if let Some(first) = sum.error {
            return Err(format!(
                "{} of {} counters hold a wrong value ({first}) — results not trusted",
                sum.wrong, sum.ops
            ));
        }
        Ok((
            Gets::from_tally(&sum, seconds),
            Gets::from_tally(&hot.tally, hot.nanos as f64 / 1e9),
        ))
    }

    /// Thread `t`'s share of [`check`](Self::check): all its GETs, and those of `top`.
    fn check_share(
        &self,
        t: usize,
        model: &CounterModel,
        top: &std::collections::HashSet<u64>,
    ) -> Result<(Tally, Side), String> {
        let mut tally = Tally::default();
        let mut hot = Side::default();
        let mut j = t as u64;
        while j < model.len() {
            let expected = model.expected(j);
            let start = Instant::now();
            let got = self.engine.get(&key(self.workload, j))?;
            let nanos = start.elapsed().as_nanos() as u64;
            tally.latency.record(nanos);
            if top.contains(&j) {
                hot.tally.latency.record(nanos);
                hot.tally.ops += 1;
                hot.tally.found += u64::from(got.is_some());
                hot.nanos += nanos;
            }
            tally.ops += 1;
            let value = match got.as_deref().map(counter::decode) {
                None => Ok(0),
                Some(r) => {
                    tally.found += 1;
                    r
                }
            };
            if value != Ok(expected) {
                tally.wrong += 1;
                if tally.error.is_none() {
                    let got = match value {
                        Ok(v) => v.to_string(),
                        Err(e) => e,
                    };
                    tally.error = Some(format!("counter {j}: expected {expected}, got {got}"));
                }
            }
            j += self.threads as u64;
        }
        Ok((tally, hot))
    }

    /// `hot-get`, in this thread: GETs of the most incremented counter and of a loaded record,
    /// alternating in blocks of [`HOT_BLOCK`], each GET timed alone and its value checked;
    /// [`hot_gets`] of them, or fewer after [`HOT_GET_TIME`]. Its operations are both kinds;
    /// `HotGet` has each kind on its own.
    pub(crate) fn hot_get(&self, model: &CounterModel) -> Result<(Tally, HotGet), String> {
        let (hot, increments) = model.hottest().ok_or(
            "hot-get needs `counters` (or `ycsb-f-merge`) earlier in the workloads: \
             no counter has been incremented",
        )?;
        let hot_key = key(self.workload, hot);
        let plain = SplitMix64::new(self.cfg.seed ^ 0x0407_9e75).below(self.cfg.records);
        let plain_key = self.workload.key(plain);
        let plain_value = self.workload.value(plain);
        let mut tally = Tally::default();
        let mut sides = [Side::default(), Side::default()];
        let total = hot_gets(self.cfg);
        let began = Instant::now();
        let mut n = 0;
        while n < total {
            let block = n / HOT_BLOCK;
            let is_hot = block.is_multiple_of(2);
            if is_hot && block > 0 && n % HOT_BLOCK == 0 && began.elapsed() > HOT_GET_TIME {
                break; // out of time, with as many blocks of each kind
            }
            let start = Instant::now();
            let got = self
                .engine
                .get(if is_hot { &hot_key } else { &plain_key })?;
            let nanos = start.elapsed().as_nanos() as u64;
            let right = if is_hot {
                got.as_deref().map(counter::decode) == Some(Ok(increments))
            } else {
                got.as_deref() == Some(&plain_value[..])
            };
            let side = &mut sides[usize::from(!is_hot)];
            side.tally.latency.record(nanos);
            side.tally.ops += 1;
            side.nanos += nanos;
            if right {
                side.tally.found += 1;
            } else {
                side.tally.wrong += 1;
            }
            n += 1;
            if n % 1024 == 0 {
                (self.progress)(1024);
            }
        }
        (self.progress)(n % 1024);
        for s in &sides {
            tally.add(&s.tally);
        }
        let [h, p] = sides;
        Ok((
            tally,
            HotGet {
                hot_increments: increments,
                hot: Gets::from_tally(&h.tally, h.nanos as f64 / 1e9),
                plain: Gets::from_tally(&p.tally, p.nanos as f64 / 1e9),
            },
        ))
    }
}

/// One kind of GET (in `hot-get`, or the top counters' in the check): its tally and the time
/// its GETs took, summed.
#[derive(Default)]
struct Side {
    tally: Tally,
    nanos: u64,
}

/// `hot-get`'s two kinds of GET, each on its own: GETs/s is GETs over the time those GETs
/// took (the other kind's excluded).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct HotGet {
    /// The hot counter's value: the increments it has had.
    pub hot_increments: u64,
    pub hot: Gets,
    pub plain: Gets,
}

impl HotGet {
    /// Mean time of a hot counter's GET over a plain record's: the "within 2×" figure.
    pub fn slowdown(&self) -> Option<f64> {
        (self.hot.ops_per_sec > 0.0).then(|| self.plain.ops_per_sec / self.hot.ops_per_sec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_keys_are_apart_from_records_and_inserts() {
        let w = Workload::new(3, 16).unwrap();
        let records: std::collections::HashSet<_> = (0..100_000).map(|i| w.key(i)).collect();
        assert!((0..100_000).all(|j| !records.contains(&key(&w, j))));
        let seq = w.with_keys(crate::workload::Keys::Sequential);
        assert_eq!(key(&seq, 5), (COUNTER_BASE + 5).to_be_bytes());
    }

    #[test]
    fn the_model_adds_finds_the_hottest_and_counts_present() {
        let m = CounterModel::new(5);
        assert_eq!((m.hottest(), m.present()), (None, 0));
        m.add(3, 1);
        m.add(1, 1);
        m.add(3, 1);
        assert_eq!((m.hottest(), m.present()), (Some((3, 2)), 2));
        assert_eq!(m.expected(3), 2);
        m.populated.store(true, Relaxed);
        assert_eq!(m.present(), 5);
    }

    #[test]
    fn shares_cover_the_total_and_reads_allow_only_in_flight_increments() {
        for (total, threads) in [(10, 3), (2, 4), (1_000_000, 7)] {
            let sum: u64 = (0..threads).map(|t| share(total, t, threads)).sum();
            assert_eq!(sum, total);
        }
        assert!(plausible(5, 5, 5, 0));
        assert!(!plausible(4, 5, 5, 0), "an acknowledged increment lost");
        assert!(!plausible(6, 5, 5, 0), "one thread: exact");
        assert!(plausible(7, 5, 6, 1));
        assert!(!plausible(8, 5, 6, 1));
    }
}
