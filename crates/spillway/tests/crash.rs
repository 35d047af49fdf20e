//! Crash consistency under real `SIGKILL`s, with a real child process and no mocks, and with
//! one or several writer threads in the child.
//!
//! The test binary re-runs itself as the child: the parent test spawns
//! `current_exe() --exact crash_child --nocapture --include-ignored` with
//! `SPILLWAY_CRASH_CHILD=<seed>:<threads>:<order>:<first_batches>:<dir>` in the environment, where
//! `<first_batches>` holds one batch number per writer thread, separated by commas. Without
//! that variable `crash_child` is a no-op that passes, so it is harmless under a normal
//! `cargo test` or `cargo nextest run`.
//!
//! Three tests drive the same protocol: `crash_recovery_keeps_acknowledged_batches_whole` with
//! one writer thread, `crash_recovery_with_concurrent_writers_keeps_acknowledged_batches_whole`
//! with `T` writer threads (default 4), and
//! `crash_recovery_of_an_ordered_store_keeps_acknowledged_batches_whole` with one writer on an
//! ordered store. Each test has its own store, seed and model. Every check also scans the
//! whole store, which must show exactly what the gets show.
//!
//! The child opens the store with tiny options (4 KiB root buffer, 8 KiB nodes, fan-out 4,
//! fast-split ratio 2, 256-byte pages), so root spills, internal-node spills, fast-splits,
//! slow-splits and internal splits happen every few writes, and runs `T` writer threads at
//! once. The 2000 keys are cut into `T` contiguous ranges, one per thread (with `T = 1` the
//! single thread owns them all); no thread ever writes another thread's keys. Each thread
//! writes batch after batch — synced ([`WriteOptions::SYNC`]) except every third one (`b % 3
//! == 1`, [`WriteOptions::NO_SYNC`]: a process crash must not lose those either) — numbered by
//! a counter of its own that
//! goes on across cycles, so a thread's batch numbers never repeat. Batch `b` of thread `t` is
//! a pure function of `(seed, T, t, b)`: 1–20 puts and deletes over the thread's keys, a third
//! of them on its hot set (its first tenth). Every value starts with `(t, b, key, op)` followed
//! by 0–300 bytes of filler derived from them, so a value names exactly which write made it.
//! After each `write` returns `Ok` the thread prints `ack <t> <b> <its spill/split counters>`
//! and flushes, holding the stdout lock for the whole line so lines never interleave. A thread
//! starts batch `b + 1` only after printing the ack of `b`, so each thread has at most one
//! unacknowledged batch at any time. A writer that panics aborts the child.
//!
//! The parent runs `SPILLWAY_CRASH_CYCLES` cycles (default 20) per test. Each cycle starts a
//! child, kills it with `SIGKILL` at a random moment — after 1–300 acks (counted over all
//! threads), after 1–300 acks plus up to 3 ms, or 0–150 ms after spawning (which can land
//! inside `Db::open`'s recovery) — then opens the store itself, twice. The first open uses a
//! root buffer too large to fill, so recovery does not spill and the tree is exactly what the
//! manifest recorded; the second uses the child's options, so it spills at once when the
//! replayed log fills the buffer (as it does after a kill mid-spill). A thread's in-flight
//! batch is its last ack + 1 (its cycle's first batch if it acknowledged none). It asserts:
//!
//! * the child died of our `SIGKILL` (it did not panic, fail or exit on its own), every ack
//!   names one of its threads, and each thread's acks are exactly the consecutive batches
//!   starting at that thread's first batch of the cycle;
//! * `get` and `multi_get` agree on every key;
//! * every value present is genuine: it decodes to `(t, b, key, op)` for the key it is stored
//!   under, `t` is the thread that owns that key, `b` was written by `t` (at most `t`'s
//!   in-flight batch), and it is byte for byte the *final* effect of `t`'s batch `b` on that key
//!   (not an overwritten intermediate, not corrupted);
//! * every key in thread `t`'s range equals `t`'s model (all of `t`'s acknowledged batches
//!   applied in order), except keys that `t`'s in-flight batch changes, which may instead show
//!   that batch's value;
//! * each thread's in-flight batch is atomic: all of its effects are visible or none are
//!   (independently of the other threads' in-flight batches);
//! * `check_tree()` is `Ok`, every file in `files_in_use()` exists, no `*.list` file outside
//!   it exists (open removes orphans), and no `MANIFEST.tmp` is left;
//! * after the first open the model takes each in-flight batch that was found applied, and the
//!   second open must then equal the model exactly (same value, file and tree checks).
//!
//! The store is closed and in the next cycle each thread starts at the batch after its
//! in-flight one, so batch numbers never repeat and a lost batch cannot hide behind a rewrite.
//! At the end the store is reopened once more and must equal the model exactly, and the test
//! asserts that the children (their counters arrive on the ack lines; the highest seen counts,
//! since threads print in any order) did root spills, internal-node spills, fast-splits,
//! slow-splits and internal splits, and that the final tree has at least three levels and
//! more leaves than the fan-out, so the kills really landed on a store busy spilling and
//! splitting. The summary line also counts the recoveries that removed orphan lists (the kill
//! interrupted a spill) and the opens that spilled right away.
//!
//! The seed is random per run (and per test) and printed on the summary line and in every
//! failure; on failure the store folder is kept and its path printed. Environment:
//!
//! * `SPILLWAY_CRASH_CYCLES=N` — number of kill/recover cycles of each test (default 20);
//! * `SPILLWAY_CRASH_SEED=S` — fix the seed of both tests (the batches and the kill plans; the
//!   exact kill instants, and with several threads the order of their writes, still depend on
//!   timing);
//! * `SPILLWAY_CRASH_THREADS=T` — writer threads of the concurrent test (default 4, at most
//!   100); the first test always runs one.
//!
//! ```text
//! cargo test -p spillway --test crash -- --nocapture
//! SPILLWAY_CRASH_CYCLES=200 cargo test -p spillway --test crash -- --nocapture
//! SPILLWAY_CRASH_THREADS=8 cargo test -p spillway --test crash concurrent -- --nocapture
//! cargo nextest run -p spillway --test crash --no-capture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

mod common;

use common::{mix, Rng};

const CHILD_ENV: &str = "SPILLWAY_CRASH_CHILD";
const CYCLES_ENV: &str = "SPILLWAY_CRASH_CYCLES";
const SEED_ENV: &str = "SPILLWAY_CRASH_SEED";
const THREADS_ENV: &str = "SPILLWAY_CRASH_THREADS";
const DEFAULT_CYCLES: u64 = 20;
/// Writer threads of the concurrent test unless `SPILLWAY_CRASH_THREADS` says otherwise.
const DEFAULT_THREADS: u32 = 4;
/// So that every thread owns at least 20 keys (and 2 hot ones).
const MAX_THREADS: u32 = 100;

/// Keys are `0..KEYS`, cut into one contiguous range per thread; a third of a thread's
/// operations go to its hot keys, the first `HOT_KEYS / KEYS` of its range.
const KEYS: u32 = 2000;
const HOT_KEYS: u32 = 200;
const MAX_OPS: u64 = 20;
const MAX_FILLER: u64 = 300;
/// Percent of operations that are deletes.
const DELETE_PERCENT: u64 = 15;
/// Longest the parent waits for the next line from a child before calling it hung.
const HANG_TIMEOUT: Duration = Duration::from_secs(60);

/// Tiny nodes, so that spills and splits of every kind happen constantly.
fn options(order: KeyOrder) -> Options {
    common::tiny_options().key_order(order)
}

/// The same tree shape with a root buffer that recovery cannot fill, so `open` never spills.
fn no_spill_options(order: KeyOrder) -> Options {
    options(order).root_buffer_size(1 << 30)
}

// ---------------------------------------------------------------------------------------------
// The workload: a pure function of (seed, threads, thread, batch number).
// ---------------------------------------------------------------------------------------------

/// Key `i`, of varying length.
fn key(i: u32) -> Vec<u8> {
    let mut k = format!("key:{i:04}:").into_bytes();
    k.resize(k.len() + (i % 13) as usize, b'k');
    k
}

const VALUE_HEADER: usize = 1 + 4 + 8 + 4 + 1;

/// Who wrote a value: thread `t`, its batch `b`, operation `op` of that batch, on key `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Origin {
    t: u32,
    b: u64,
    k: u32,
    op: u8,
}

/// `(t, b, k, op)` of a value written by [`Workload::value`], if it has the header.
fn decode_value(v: &[u8]) -> Option<Origin> {
    if v.len() < VALUE_HEADER || v[0] != b'V' {
        return None;
    }
    Some(Origin {
        t: u32::from_le_bytes(v[1..5].try_into().unwrap()),
        b: u64::from_le_bytes(v[5..13].try_into().unwrap()),
        k: u32::from_le_bytes(v[13..17].try_into().unwrap()),
        op: v[17],
    })
}

/// One test's workload: `threads` writers over `0..KEYS`, each batch a pure function of
/// `(seed, threads, thread, batch number)`.
#[derive(Clone, Copy, Debug)]
struct Workload {
    seed: u64,
    threads: u32,
    /// The store's key order: the same workload runs on hashed and ordered stores.
    order: KeyOrder,
}

impl Workload {
    fn new(seed: u64, threads: u32, order: KeyOrder) -> Workload {
        assert!(
            (1..=MAX_THREADS).contains(&threads),
            "{threads} writer threads: must be 1..={MAX_THREADS}"
        );
        Workload {
            seed,
            threads,
            order,
        }
    }

    /// The keys thread `t` owns (and only it writes).
    fn keys(&self, t: u32) -> Range<u32> {
        t * KEYS / self.threads..(t + 1) * KEYS / self.threads
    }

    /// The thread that owns key `k`.
    fn owner(&self, k: u32) -> u32 {
        (0..self.threads)
            .find(|&t| self.keys(t).contains(&k))
            .expect("every key has an owner")
    }

    /// The value operation `op` of thread `t`'s batch `b` puts under key `k`: a header naming
    /// `(t, b, k, op)`, then 0..=300 bytes of filler derived from the same numbers.
    fn value(&self, t: u32, b: u64, op: u8, k: u32) -> Vec<u8> {
        let mut rng = Rng::new(mix(&[
            self.seed,
            u64::from(t),
            b,
            u64::from(op),
            u64::from(k),
            0xF111,
        ]));
        let filler = rng.below(MAX_FILLER + 1) as usize;
        let mut v = Vec::with_capacity(VALUE_HEADER + filler);
        v.push(b'V');
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&b.to_le_bytes());
        v.extend_from_slice(&k.to_le_bytes());
        v.push(op);
        while v.len() < VALUE_HEADER + filler {
            v.push(rng.next_u64() as u8);
        }
        v
    }

    /// The operations of thread `t`'s batch `b`, in order: `(key, Some(value))` puts,
    /// `(key, None)` deletes, all on keys `t` owns.
    fn batch_ops(&self, t: u32, b: u64) -> Vec<(u32, Option<Vec<u8>>)> {
        let keys = self.keys(t);
        let len = keys.end - keys.start;
        let hot = (len * HOT_KEYS / KEYS).max(1);
        let mut rng = Rng::new(mix(&[
            self.seed,
            u64::from(self.threads),
            u64::from(t),
            b,
            0xBA7C,
        ]));
        let n = rng.range(1, MAX_OPS);
        (0..n)
            .map(|op| {
                let i = if rng.below(3) == 0 {
                    rng.below(u64::from(hot))
                } else {
                    rng.below(u64::from(len))
                } as u32;
                let k = keys.start + i;
                let v = (rng.below(100) >= DELETE_PERCENT).then(|| self.value(t, b, op as u8, k));
                (k, v)
            })
            .collect()
    }

    /// What thread `t`'s batch `b` leaves behind: the last operation on each key it touches.
    fn batch_effects(&self, t: u32, b: u64) -> BTreeMap<u32, Option<Vec<u8>>> {
        self.batch_ops(t, b).into_iter().collect()
    }

    fn write_batch(&self, t: u32, b: u64) -> WriteBatch {
        let mut batch = WriteBatch::new();
        for (k, v) in self.batch_ops(t, b) {
            match v {
                Some(v) => batch.put(key(k), v),
                None => batch.delete(key(k)),
            }
        }
        batch
    }
}

// ---------------------------------------------------------------------------------------------
// The child.
// ---------------------------------------------------------------------------------------------

/// The counters a child reports on each ack line: work done since it opened the store.
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    root_spills: u64,
    node_spills: u64,
    fast_splits: u64,
    slow_splits: u64,
    node_splits: u64,
}

impl Work {
    fn add(&mut self, o: Work) {
        self.root_spills += o.root_spills;
        self.node_spills += o.node_spills;
        self.fast_splits += o.fast_splits;
        self.slow_splits += o.slow_splits;
        self.node_splits += o.node_splits;
    }

    /// The counters only grow, but threads print them in any order: keep the highest.
    fn max(&mut self, o: Work) {
        self.root_spills = self.root_spills.max(o.root_spills);
        self.node_spills = self.node_spills.max(o.node_spills);
        self.fast_splits = self.fast_splits.max(o.fast_splits);
        self.slow_splits = self.slow_splits.max(o.slow_splits);
        self.node_splits = self.node_splits.max(o.node_splits);
    }
}

/// Aborts the child if a writer thread panics, so that it does not go on writing (or hang)
/// with a thread missing; the panic message is on stderr already.
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::process::abort();
        }
    }
}

/// The child side: a no-op unless `SPILLWAY_CRASH_CHILD` is set, else write until killed.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(5, ':');
    let (Some(seed), Some(threads), Some(order), Some(firsts), Some(dir)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        panic!("{CHILD_ENV}={spec:?} is not <seed>:<threads>:<order>:<first_batches>:<dir>");
    };
    let order = match order {
        "hashed" => KeyOrder::Hashed,
        "ordered" => KeyOrder::Ordered,
        other => panic!("{CHILD_ENV}: unknown key order {other:?}"),
    };
    let w = Workload::new(
        seed.parse().expect("seed"),
        threads.parse().expect("threads"),
        order,
    );
    let firsts: Vec<u64> = firsts
        .split(',')
        .map(|f| f.parse().expect("first batch"))
        .collect();
    assert_eq!(firsts.len(), w.threads as usize, "{CHILD_ENV}={spec:?}");
    let db = Db::open(dir, options(w.order)).unwrap_or_else(|e| panic!("child: open {dir}: {e}"));
    // Write straight to the stdout handle (not `println!`, which the test harness may capture).
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "opened")
            .and_then(|()| out.flush())
            .expect("stdout");
    }
    std::thread::scope(|s| {
        for (t, &first) in (0..w.threads).zip(&firsts) {
            let db = &db;
            s.spawn(move || {
                let _abort = AbortOnPanic;
                for b in first.. {
                    let sync = if b % 3 == 1 {
                        WriteOptions::NO_SYNC
                    } else {
                        WriteOptions::SYNC
                    };
                    db.write(w.write_batch(t, b), sync)
                        .unwrap_or_else(|e| panic!("child: write of thread {t} batch {b}: {e}"));
                    let st = db.stats();
                    // The lock is held for the whole line and its flush: lines never interleave.
                    let mut out = std::io::stdout().lock();
                    writeln!(
                        out,
                        "ack {t} {b} {} {} {} {} {}",
                        st.root_spills,
                        st.node_spills,
                        st.fast_splits,
                        st.slow_splits,
                        st.node_splits
                    )
                    .and_then(|()| out.flush())
                    .expect("stdout");
                }
            });
        }
    });
}

// ---------------------------------------------------------------------------------------------
// The parent: spawning, killing, collecting acks.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum KillPlan {
    /// Kill as soon as this many acks (of all threads) have arrived.
    Acks(u64),
    /// ... and then let it run this much longer, to land inside a write or a spill.
    AcksThenDelay(u64, Duration),
    /// Kill this long after spawning, whatever the child is doing (maybe still opening).
    Delay(Duration),
}

impl KillPlan {
    fn random(rng: &mut Rng) -> KillPlan {
        match rng.below(10) {
            0..=3 => KillPlan::Acks(rng.range(1, 300)),
            4..=6 => KillPlan::AcksThenDelay(
                rng.range(1, 300),
                Duration::from_micros(rng.range(0, 3000)),
            ),
            _ => KillPlan::Delay(Duration::from_millis(rng.range(0, 150))),
        }
    }
}

enum Event {
    Opened,
    /// Thread, batch, the child's counters.
    Ack(u64, u64, Work),
}

fn parse_line(line: &str) -> Option<Event> {
    if line == "opened" {
        return Some(Event::Opened);
    }
    let rest = line.strip_prefix("ack ")?;
    let n: Vec<u64> = rest
        .split(' ')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [t, b, root_spills, node_spills, fast_splits, slow_splits, node_splits] = n[..] else {
        return None;
    };
    Some(Event::Ack(
        t,
        b,
        Work {
            root_spills,
            node_spills,
            fast_splits,
            slow_splits,
            node_splits,
        },
    ))
}

/// Kills and reaps the child if the parent panics while it runs.
struct ChildGuard(Option<Child>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What one child did before it was killed.
struct ChildRun {
    opened: bool,
    /// The batches each thread acknowledged, in the order it printed them.
    acks: Vec<Vec<u64>>,
    /// Acks of all threads.
    total: u64,
    /// Acks naming a thread the child does not have: `(thread, batch)`.
    stray: Vec<(u64, u64)>,
    /// The highest counters seen on an ack line: a lower bound of the child's work.
    work: Work,
}

fn run_child(dir: &Path, w: Workload, firsts: &[u64], plan: KillPlan, ctx: &str) -> ChildRun {
    let exe = std::env::current_exe().expect("current_exe");
    let firsts_arg: Vec<String> = firsts.iter().map(u64::to_string).collect();
    let child = Command::new(exe)
        .args(["--exact", "crash_child", "--nocapture", "--include-ignored"])
        .env(
            CHILD_ENV,
            format!(
                "{}:{}:{}:{}:{}",
                w.seed,
                w.threads,
                w.order,
                firsts_arg.join(","),
                dir.display()
            ),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{ctx}: spawning the child: {e}"));
    let spawned = Instant::now();
    let mut guard = ChildGuard(Some(child));
    let child = guard.0.as_mut().expect("just set");

    let stdout = child.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                // A line cut short by the kill is not an ack: that batch counts as in flight.
                Ok(0) | Err(_) => return,
                Ok(_) if !line.ends_with('\n') => return,
                Ok(_) => {
                    if let Some(ev) = parse_line(line.trim_end()) {
                        if tx.send(ev).is_err() {
                            return;
                        }
                    }
                }
            }
        }
    });
    let mut stderr = child.stderr.take().expect("piped");
    let stderr_reader: JoinHandle<String> = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let mut run = ChildRun {
        opened: false,
        acks: vec![Vec::new(); firsts.len()],
        total: 0,
        stray: Vec::new(),
        work: Work::default(),
    };
    let take = |ev: Event, run: &mut ChildRun| match ev {
        Event::Opened => run.opened = true,
        Event::Ack(t, b, w) => {
            match run.acks.get_mut(t as usize) {
                Some(acks) => acks.push(b),
                None => run.stray.push((t, b)),
            }
            run.total += 1;
            run.work.max(w);
        }
    };
    // Wait for the kill moment; the child must stay alive (and not hang) until then.
    let outcome: Result<(), String> = (|| {
        let acks_wanted = match plan {
            KillPlan::Acks(n) | KillPlan::AcksThenDelay(n, _) => n,
            KillPlan::Delay(_) => 0,
        };
        while run.total < acks_wanted {
            match rx.recv_timeout(HANG_TIMEOUT) {
                Ok(ev) => take(ev, &mut run),
                Err(RecvTimeoutError::Timeout) => return Err("sent nothing for 60 s".into()),
                Err(RecvTimeoutError::Disconnected) => return Err("closed its stdout".into()),
            }
        }
        let deadline = match plan {
            KillPlan::Acks(_) => return Ok(()),
            KillPlan::AcksThenDelay(_, d) => Instant::now() + d,
            KillPlan::Delay(d) => spawned + d,
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            match rx.recv_timeout(left) {
                Ok(ev) => take(ev, &mut run),
                Err(RecvTimeoutError::Timeout) => return Ok(()),
                Err(RecvTimeoutError::Disconnected) => return Err("closed its stdout".into()),
            }
        }
    })();
    let child = guard.0.as_mut().expect("still held");
    // `Child::kill` sends SIGKILL on Unix.
    let _ = child.kill();
    let status: ExitStatus = child
        .wait()
        .unwrap_or_else(|e| panic!("{ctx}: waiting for the child: {e}"));
    guard.0 = None;
    reader.join().expect("stdout reader");
    for ev in rx.try_iter() {
        take(ev, &mut run);
    }
    let stderr = stderr_reader.join().expect("stderr reader");
    if let Err(why) = outcome {
        panic!("{ctx}: the child {why} before the kill; status {status:?}; stderr:\n{stderr}");
    }
    if stderr.contains("panicked") {
        panic!("{ctx}: the child panicked before the kill; stderr:\n{stderr}");
    }
    if status.signal() != Some(9) {
        panic!("{ctx}: the child was not ended by our SIGKILL: {status:?}; stderr:\n{stderr}");
    }
    assert!(
        run.stray.is_empty(),
        "{ctx}: the child acknowledged (thread, batch) {:?}, but it has {} threads",
        run.stray,
        firsts.len()
    );
    for (t, (acks, &first)) in run.acks.iter().zip(firsts).enumerate() {
        for (i, &b) in acks.iter().enumerate() {
            assert_eq!(
                b,
                first + i as u64,
                "{ctx}: thread {t} acknowledged batches out of order (its first batch is \
                 {first}): {acks:?}"
            );
        }
    }
    run
}

// ---------------------------------------------------------------------------------------------
// The parent: checking a recovered store against the model.
// ---------------------------------------------------------------------------------------------

/// Every key's value after the batches applied so far (`None` = absent). Threads own disjoint
/// keys, so the model of thread `t` is this model restricted to `t`'s range.
struct Model {
    values: Vec<Option<Vec<u8>>>,
}

impl Model {
    fn new() -> Model {
        Model {
            values: vec![None; KEYS as usize],
        }
    }

    fn apply(&mut self, effects: &BTreeMap<u32, Option<Vec<u8>>>) {
        for (&k, v) in effects {
            self.values[k as usize] = v.clone();
        }
    }
}

/// A readable description of what a key holds, for failure messages.
fn describe(v: &Option<Vec<u8>>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match decode_value(v) {
            Some(Origin { t, b, k, op }) => {
                format!(
                    "value of thread {t} batch {b} op {op} for key {k} ({} bytes)",
                    v.len()
                )
            }
            None => format!(
                "unrecognized {} bytes {:02x?}",
                v.len(),
                &v[..v.len().min(16)]
            ),
        },
    }
}

/// A value found under key `k` must be one that a batch of the key's owner, at most that
/// thread's `newest[owner]`, really left there.
fn check_genuine(w: Workload, k: u32, v: &[u8], newest: &[u64], ctx: &str) {
    let owner = w.owner(k);
    let Some(Origin { t, b, k: vk, op }) = decode_value(v) else {
        panic!(
            "{ctx}: key {k} (thread {owner}) holds bytes no write produced: {}",
            describe(&Some(v.to_vec()))
        );
    };
    assert_eq!(
        vk, k,
        "{ctx}: key {k} (thread {owner}) holds a value written for key {vk} (thread {t} batch \
         {b} op {op})"
    );
    assert_eq!(
        t, owner,
        "{ctx}: key {k} of thread {owner} holds a value claiming thread {t} (batch {b} op {op}), \
         which does not own it"
    );
    let newest = newest[t as usize];
    assert!(
        b <= newest,
        "{ctx}: key {k} holds a value of thread {t} batch {b}, which was never written (the \
         thread's newest is {newest})"
    );
    let ops = w.batch_ops(t, b);
    let Some((ok, intended)) = ops.get(op as usize) else {
        panic!(
            "{ctx}: key {k} holds a value of thread {t} batch {b} op {op}, but that batch has {} \
             ops",
            ops.len()
        );
    };
    assert_eq!(
        *ok, k,
        "{ctx}: key {k} holds a value claiming thread {t} batch {b} op {op}, which wrote another \
         key"
    );
    assert!(
        intended.as_deref() == Some(v),
        "{ctx}: key {k} holds a corrupted value of thread {t} batch {b} op {op} ({} bytes, \
         expected {})",
        v.len(),
        intended.as_ref().map_or(0, Vec::len)
    );
    assert_eq!(
        w.batch_effects(t, b).get(&k),
        Some(&Some(v.to_vec())),
        "{ctx}: key {k} holds thread {t} batch {b} op {op}, which a later op of the same batch \
         overwrote (a batch is applied partially)"
    );
}

/// Check the whole store against `model` plus, maybe, each thread's in-flight batch
/// `inflight[t]`; thread `t` never wrote a batch after `newest[t]`. Returns, per thread,
/// whether its in-flight batch was found applied.
fn verify(
    db: &Db,
    model: &Model,
    w: Workload,
    newest: &[u64],
    inflight: Option<&[u64]>,
    ctx: &str,
) -> Vec<bool> {
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let got = db
        .multi_get(&keys)
        .unwrap_or_else(|e| panic!("{ctx}: multi_get: {e}"));
    for (k, kb) in keys.iter().enumerate() {
        let one = db
            .get(kb)
            .unwrap_or_else(|e| panic!("{ctx}: get of key {k}: {e}"));
        assert!(
            one == got[k],
            "{ctx}: key {k} (thread {}): get says {}, multi_get says {}",
            w.owner(k as u32),
            describe(&one),
            describe(&got[k])
        );
    }
    for (k, v) in got.iter().enumerate() {
        if let Some(v) = v {
            check_genuine(w, k as u32, v, newest, ctx);
        }
    }
    // A full scan shows what the gets show: in key order in an ordered store.
    let mut scanned: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter()
        .collect::<spillway::Result<_>>()
        .unwrap_or_else(|e| panic!("{ctx}: scan: {e}"));
    if w.order == KeyOrder::Hashed {
        scanned.sort();
    }
    let mut present: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .zip(&got)
        .filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v)))
        .collect();
    present.sort();
    assert!(
        scanned == present,
        "{ctx}: a full scan shows {} pairs, the gets {} (or other values)",
        scanned.len(),
        present.len()
    );
    let mut applied_all = Vec::new();
    for t in 0..w.threads {
        let inflight_t = inflight.map(|f| f[t as usize]);
        let effects = inflight_t
            .map(|b| w.batch_effects(t, b))
            .unwrap_or_default();
        let (mut applied, mut not_applied) = (Vec::new(), Vec::new());
        for k in w.keys(t) {
            let (old, seen) = (&model.values[k as usize], &got[k as usize]);
            match effects.get(&k) {
                Some(new) if new != old => {
                    if seen == new {
                        applied.push(k);
                    } else if seen == old {
                        not_applied.push(k);
                    } else {
                        panic!(
                            "{ctx}: key {k} of thread {t} (changed by its in-flight batch {}) \
                             shows {}; expected the acknowledged {} or the in-flight {}",
                            inflight_t.unwrap(),
                            describe(seen),
                            describe(old),
                            describe(new)
                        );
                    }
                }
                _ => assert!(
                    seen == old,
                    "{ctx}: key {k} of thread {t} shows {}; expected {} (acknowledged write lost \
                     or resurrected)",
                    describe(seen),
                    describe(old)
                ),
            }
        }
        assert!(
            applied.is_empty() || not_applied.is_empty(),
            "{ctx}: thread {t}'s in-flight batch {} is torn: keys {applied:?} show it, keys \
             {not_applied:?} do not",
            inflight_t.unwrap()
        );
        applied_all.push(!applied.is_empty());
    }
    applied_all
}

/// Names of the `*.list` files in the store folder, and whether a `MANIFEST.tmp` is there.
fn folder_state(dir: &Path) -> (BTreeSet<String>, bool) {
    let mut lists = BTreeSet::new();
    let mut tmp = false;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (lists, false); // the first child may die before creating the folder
    };
    for e in entries {
        let name = e.expect("listing the store").file_name();
        let name = name.to_string_lossy().into_owned();
        if name.ends_with(".list") {
            lists.insert(name);
        } else if name == "MANIFEST.tmp" {
            tmp = true;
        }
    }
    (lists, tmp)
}

/// The tree and the folder agree: nothing referenced is missing, nothing unreferenced is left.
fn check_files(db: &Db, dir: &Path, ctx: &str) {
    db.check_tree()
        .unwrap_or_else(|e| panic!("{ctx}: check_tree: {e}"));
    let in_use = db.files_in_use();
    let (on_disk, tmp) = folder_state(dir);
    let missing: Vec<_> = in_use.difference(&on_disk).collect();
    assert!(
        missing.is_empty(),
        "{ctx}: files in use but missing: {missing:?}"
    );
    let orphans: Vec<_> = on_disk.difference(&in_use).collect();
    assert!(
        orphans.is_empty(),
        "{ctx}: list files not in use after open: {orphans:?}"
    );
    assert!(!tmp, "{ctx}: MANIFEST.tmp survived open");
}

/// Keeps the store folder (and says where) if the test fails.
struct KeepOnPanic(tempfile::TempDir);

impl Drop for KeepOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!("crash test: store kept at {}", self.0.path().display());
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
    )
}

#[test]
fn crash_recovery_keeps_acknowledged_batches_whole() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // a child runs only `crash_child`
    }
    crash_cycles(
        1,
        KeyOrder::Hashed,
        "crash_recovery_keeps_acknowledged_batches_whole",
        "",
    );
}

#[test]
fn crash_recovery_of_an_ordered_store_keeps_acknowledged_batches_whole() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // a child runs only `crash_child`
    }
    crash_cycles(
        1,
        KeyOrder::Ordered,
        "crash_recovery_of_an_ordered_store_keeps_acknowledged_batches_whole",
        "",
    );
}

#[test]
fn crash_recovery_with_concurrent_writers_keeps_acknowledged_batches_whole() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // a child runs only `crash_child`
    }
    let threads = env_u64(THREADS_ENV).map_or(DEFAULT_THREADS, |t| {
        u32::try_from(t).unwrap_or_else(|_| panic!("{THREADS_ENV}={t} is too large"))
    });
    crash_cycles(
        threads,
        KeyOrder::Hashed,
        "crash_recovery_with_concurrent_writers_keeps_acknowledged_batches_whole",
        &format!(" {THREADS_ENV}={threads}"),
    );
}

/// Run the kill/recover cycles with `threads` writer threads in each child, on a store of
/// its own; `test` and `env` (more variables to set) say how to rerun it.
fn crash_cycles(threads: u32, order: KeyOrder, test: &str, env: &str) {
    let cycles = env_u64(CYCLES_ENV).unwrap_or(DEFAULT_CYCLES);
    let seed = env_u64(SEED_ENV).unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        mix(&[
            t.as_nanos() as u64,
            u64::from(std::process::id()),
            u64::from(threads),
        ])
    });
    let w = Workload::new(seed, threads, order);
    let started = Instant::now();
    let tmp = KeepOnPanic(
        tempfile::Builder::new()
            .prefix("spillway-crash-")
            .tempdir()
            .expect("tempdir"),
    );
    let dir = tmp.0.path().join("store");
    let writers = if threads == 1 {
        "1 writer thread".to_string()
    } else {
        format!("{threads} writer threads")
    };
    let rerun = format!("rerun with {SEED_ENV}={seed}{env} and --exact {test}");

    let mut plans = Rng::new(mix(&[seed, 0x4B11]));
    let mut model = Model::new();
    // Each thread's next batch number.
    let mut next = vec![0u64; threads as usize];
    let (mut acked, mut inflight_applied, mut killed_before_open) = (0, 0, 0);
    let (mut orphans_found, mut spilled_on_open) = (0, 0);
    let mut work = Work::default();
    for cycle in 0..cycles {
        let plan = KillPlan::random(&mut plans);
        let firsts = next.clone();
        let ctx = format!(
            "seed {seed} ({rerun}), {writers}, cycle {cycle}, first batches \
             {firsts:?}, {plan:?}"
        );
        let run = run_child(&dir, w, &firsts, plan, &ctx);
        acked += run.total;
        work.add(run.work);
        killed_before_open += u64::from(!run.opened);
        for (t, acks) in (0..threads).zip(&run.acks) {
            for &b in acks {
                model.apply(&w.batch_effects(t, b));
            }
        }
        let inflight: Vec<u64> = firsts
            .iter()
            .zip(&run.acks)
            .map(|(&f, acks)| f + acks.len() as u64)
            .collect();
        let acks_per_thread: Vec<usize> = run.acks.iter().map(Vec::len).collect();
        let ctx = format!("{ctx}, acks per thread {acks_per_thread:?}, in-flight {inflight:?}");

        // First look with a root buffer too large to fill, so that open does not spill: the
        // tree is exactly what the manifest recorded, and the list files it does not name are
        // orphans of a spill the kill interrupted.
        let (lists_before, _) = folder_state(&dir);
        let db = Db::open(&dir, no_spill_options(order))
            .unwrap_or_else(|e| panic!("{ctx}: open without spilling: {e}"));
        let applied = verify(&db, &model, w, &inflight, Some(&inflight), &ctx);
        for (t, &b) in (0..threads).zip(&inflight) {
            if applied[t as usize] {
                model.apply(&w.batch_effects(t, b));
                inflight_applied += 1;
            }
        }
        check_files(&db, &dir, &ctx);
        if !lists_before.is_subset(&db.files_in_use()) {
            orphans_found += 1;
        }
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        // Then open as the child does, which spills (in the background) if recovery filled the
        // buffer; the in-flight batches are settled now, so the store must equal the model
        // exactly.
        let ctx = format!("{ctx}, second open");
        let db = Db::open(&dir, options(order)).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        verify(&db, &model, w, &inflight, None, &ctx);
        check_files(&db, &dir, &ctx); // after the open's spill, if it made one
        spilled_on_open += db.stats().root_spills;
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        next = inflight.iter().map(|b| b + 1).collect();
    }

    // A clean reopen must show exactly the model.
    let ctx = format!("seed {seed} ({rerun}), {writers}, final reopen");
    let db = Db::open(&dir, options(order)).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    let newest: Vec<u64> = next.iter().map(|b| b.saturating_sub(1)).collect();
    verify(&db, &model, w, &newest, None, &ctx);
    check_files(&db, &dir, &ctx);
    let s = db.stats();
    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    let live = model.values.iter().filter(|v| v.is_some()).count();

    println!(
        "crash test: {order} store, seed {seed}, {writers}, {cycles} cycles in {:.1?}: {acked} \
         batches acked, {inflight_applied} in-flight batches found applied, \
         {killed_before_open} kills before open finished, {orphans_found} recoveries removed \
         orphan lists, {spilled_on_open} spilled on open; children did {} root spills, {} node \
         spills, {} fast-splits, {} slow-splits, {} internal splits; final tree: height {}, \
         {} internal nodes, {} leaves, {} lists in {} files holding {} records ({} KiB) for \
         {live} live keys",
        started.elapsed(),
        work.root_spills,
        work.node_spills,
        work.fast_splits,
        work.slow_splits,
        work.node_splits,
        s.height,
        s.internal_nodes,
        s.leaves,
        s.lists,
        s.files,
        s.disk_records,
        s.disk_bytes >> 10,
    );
    // The kills must have hit a store that was really spilling and splitting.
    let ctx = format!(
        "seed {seed}, {writers}: the workload did too little to test crashes: \
         {work:?}, {s:?}"
    );
    assert!(work.root_spills > 0, "{ctx}");
    assert!(work.node_spills > 0, "{ctx}");
    assert!(work.fast_splits > 0, "{ctx}");
    assert!(work.slow_splits > 0, "{ctx}");
    assert!(work.node_splits > 0, "{ctx}");
    assert!(
        s.height >= 3 && s.leaves > options(order).fan_out as u64,
        "{ctx}"
    );
}
