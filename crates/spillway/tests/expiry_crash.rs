//! Crash consistency with expiring records (issue 30), under real `SIGKILL`s of a child
//! process that writes with a test clock.
//!
//! The test binary re-runs itself as the child, as `tests/crash.rs` does: the parent spawns
//! `current_exe() --exact expiry_crash_child --nocapture` with
//! `SPILLWAY_EXPIRY_CRASH_CHILD=<seed>:<order>:<first>:<base>:<dir>` in the environment; without
//! that variable `expiry_crash_child` is a no-op that passes.
//!
//! **The child** opens the store with tiny options (4 KiB root buffer, 8 KiB nodes, fan-out 4,
//! 256-byte pages, so root spills, node spills and splits happen every few writes), the comma
//! [`Append`](spillway::operators::Append) merge operator and a [`ManualClock`]. Its writes
//! are numbered on from `<first>`, across cycles, so a number never repeats; before write `n`
//! it sets the clock to `base + (n - first)` ms, so the parent knows the time of every write.
//! Write `n` is a pure function of `(seed, n, its time)`. A child's first write is a batch of
//! merges (so that operands come first after a recovery); of the others, six in ten are one
//! change written alone by the `Db` method of its name (`put`, `put_expiring`, `put_ttl`,
//! `delete`, `merge`, `expire`, `persist`: durable as `sync_by_default`, off), the others a
//! `WriteBatch` of 2–8 changes, synced ([`WriteOptions::SYNC`]) one time in three. Expiry times
//! are a few ms in the past (written gone), up to 200 ms ahead (gone a few writes later), or
//! up to 20 s ahead (gone after a clock jump); 1200 keys, a third of the changes on the first
//! 100. After each write returns `Ok`, the child prints `ack <n> <counters>` and flushes.
//!
//! **The parent** runs `SPILLWAY_EXPIRY_CRASH_CYCLES` cycles (default 20) per test. Each kills
//! a child with `SIGKILL` after 1–400 acks, after 1–400 acks and up to 3 ms more, or 0–100 ms
//! after spawning (maybe inside `Db::open`'s recovery), and checks that the child died of that
//! kill and acknowledged consecutive writes from `<first>`. The model (`common::expiring`)
//! applies each acknowledged write at its time. The write after the last ack is in flight: it
//! may or may not be in the store. Then:
//!
//! 1. The store is opened with the clock at the in-flight write's time — the latest the child's
//!    clock reached — and a root buffer too big to fill (no spill: what the log holds is
//!    replayed, at the times it records). Every key's value and expiry (`get_with_expiry`,
//!    agreeing with `get`, `expiry`, `multi_get` and a scan from both ends, which shows no other
//!    key) must equal the model's at that time, with the in-flight write applied entirely or
//!    not at all; the model takes it if it was. So: every acknowledged write is there, every
//!    value whose time has come is gone, merges written after their key expired started afresh,
//!    `expire` and `persist` changed only keys live when they were written.
//! 2. It is reopened with the child's options (recovery may spill at once) and the clock jumped
//!    forward — 0 ms, up to 50 ms, up to 1 s, or a day — and must equal the model at that
//!    time; in every other cycle a `flush` then spills at that time (dropping what expired) and
//!    it must still. Both opens check the tree and that no orphan list file or
//!    `MANIFEST.tmp` is left.
//!
//! The next cycle's clock starts after the jump, so no write is older than a time the store
//! was read at (a record a spill dropped at its time stays gone: see `clock.rs`). At the end a
//! clean reopen must equal the model, and the test asserts that the children spilled and
//! split, that the jumps expired keys, and that the workload met each case that sets expiry
//! apart: merges after expiry and into expiring values, expiry changes on live, expired and
//! absent keys, `expire` to a past time, `put_expiring` already gone over a live value.
//!
//! The seed is random per run and printed on the summary line and in every failure; on
//! failure the store is kept and its path printed. `SPILLWAY_EXPIRY_CRASH_SEED=S` fixes it (the
//! kill instants still depend on timing).
//!
//! ```text
//! cargo test -p spillway --test expiry_crash -- --nocapture
//! SPILLWAY_EXPIRY_CRASH_CYCLES=100 cargo test -p spillway --test expiry_crash -- --nocapture
//! ```

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write as _};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::expiring::{differences, read_store, time, Change, Model, Tally};
use common::{mix, Rng};
use spillway::{Db, KeyOrder, ManualClock, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "SPILLWAY_EXPIRY_CRASH_CHILD";
const CYCLES_ENV: &str = "SPILLWAY_EXPIRY_CRASH_CYCLES";
const SEED_ENV: &str = "SPILLWAY_EXPIRY_CRASH_SEED";
const DEFAULT_CYCLES: u64 = 20;
const KEYS: u32 = 1200;
/// A third of the changes go to the first `HOT_KEYS` keys.
const HOT_KEYS: u32 = 100;
/// Where the first child's clock starts (ms since the epoch).
const START: u64 = 1_800_000_000_000;
/// The child's clock moves this many ms before each write.
const STEP: u64 = 1;
/// A day, the longest jump of the clock between cycles: every expiry passes.
const DAY: u64 = 86_400_000;
/// Longest the parent waits for the next line from a child before calling it hung.
const HANG_TIMEOUT: Duration = Duration::from_secs(60);

fn options(order: KeyOrder) -> Options {
    common::tiny_options()
        .key_order(order)
        .merge_operator(common::comma_append())
}

/// The same with a root buffer that recovery cannot fill, so `open` never spills.
fn no_spill_options(order: KeyOrder) -> Options {
    options(order).root_buffer_size(1 << 30)
}

fn key(i: u32) -> Vec<u8> {
    let mut k = format!("key:{i:04}:").into_bytes();
    k.resize(k.len() + (i % 7) as usize, b'k');
    k
}

fn all_keys() -> Vec<Vec<u8>> {
    (0..KEYS).map(key).collect()
}

// ---------------------------------------------------------------------------------------------
// The workload: write `n` is a pure function of (seed, n, its time).
// ---------------------------------------------------------------------------------------------

/// One write: its changes (key number, change), alone or as a batch (synced or not).
#[derive(Debug)]
struct Write {
    changes: Vec<(u32, Change)>,
    /// `None`: the one change by its own `Db` method; `Some(sync)`: a batch.
    batch: Option<bool>,
}

impl Write {
    /// Write `n` at `now`; the first of a child (`first`) merges only, so that the first
    /// writes after a recovery are operands that must be stamped with their time although
    /// the reopened store has not seen an expiring write yet.
    fn new(seed: u64, n: u64, now: u64, first: bool) -> Write {
        let mut rng = Rng::new(mix(&[seed, n, 0xE1C7]));
        let alone = !first && rng.below(10) < 6;
        let count = if alone { 1 } else { rng.range(2, 8) };
        let changes = (0..count)
            .map(|i| {
                let k = if first || rng.below(3) == 0 {
                    rng.below(u64::from(HOT_KEYS))
                } else {
                    rng.below(u64::from(KEYS))
                } as u32;
                let c = if first {
                    Change::Merge(format!("m{n}.{i}").into_bytes())
                } else {
                    change(&mut rng, n, i, now)
                };
                (k, c)
            })
            .collect();
        Write {
            changes,
            batch: (!alone).then(|| rng.below(3) == 0),
        }
    }

    fn apply(&self, model: &mut Model, now: u64) {
        for (k, c) in &self.changes {
            model.apply(&key(*k), c, now);
        }
    }

    fn write(&self, db: &Db, now: u64) -> spillway::Result<()> {
        match self.batch {
            None => {
                let (k, c) = &self.changes[0];
                c.write_alone(db, &key(*k))
            }
            Some(sync) => {
                let mut b = WriteBatch::new();
                for (k, c) in &self.changes {
                    c.add_to(&mut b, &key(*k), now);
                }
                let opts = if sync {
                    WriteOptions::SYNC
                } else {
                    WriteOptions::NO_SYNC
                };
                db.write(b, opts)
            }
        }
    }
}

/// Change `i` of write `n`, written at `now`.
fn change(rng: &mut Rng, n: u64, i: u64, now: u64) -> Change {
    let until = |rng: &mut Rng| match rng.below(10) {
        0 => now - rng.below(6),
        1..=6 => now + rng.range(1, 200),
        _ => now + rng.range(200, 20_000),
    };
    let value = |rng: &mut Rng| {
        let mut v = format!("p{n}.{i}:").into_bytes();
        for _ in 0..rng.below(121) {
            v.push(b'a' + rng.below(26) as u8);
        }
        v
    };
    match rng.below(100) {
        0..=14 => Change::Put(value(rng)),
        15..=37 => Change::PutUntil(value(rng), until(rng)),
        38..=42 => Change::PutTtl(value(rng), rng.range(1, 300)),
        43..=50 => Change::Delete,
        51..=72 => Change::Merge(format!("m{n}.{i}").into_bytes()),
        73..=87 => Change::Expire(until(rng)),
        _ => Change::Persist,
    }
}

// ---------------------------------------------------------------------------------------------
// The child.
// ---------------------------------------------------------------------------------------------

/// The child side: a no-op unless `SPILLWAY_EXPIRY_CRASH_CHILD` is set, else write until
/// killed.
#[test]
fn expiry_crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = spec.splitn(5, ':').collect();
    let [seed, order, first, base, dir] = parts[..] else {
        panic!("{CHILD_ENV}={spec:?} is not <seed>:<order>:<first>:<base>:<dir>");
    };
    let order = match order {
        "hashed" => KeyOrder::Hashed,
        "ordered" => KeyOrder::Ordered,
        other => panic!("{CHILD_ENV}: unknown key order {other:?}"),
    };
    let seed: u64 = seed.parse().expect("seed");
    let first: u64 = first.parse().expect("first write");
    let base: u64 = base.parse().expect("base time");
    let clock = Arc::new(ManualClock::new(time(base)));
    let db = Db::open(dir, options(order).clock(clock.clone()))
        .unwrap_or_else(|e| panic!("child: open {dir}: {e}"));
    // Straight to the stdout handle (not `println!`, which the test harness may capture).
    let mut out = std::io::stdout().lock();
    writeln!(out, "opened")
        .and_then(|()| out.flush())
        .expect("stdout");
    for n in first.. {
        let now = base + (n - first) * STEP;
        clock.set(time(now));
        Write::new(seed, n, now, n == first)
            .write(&db, now)
            .unwrap_or_else(|e| panic!("child: write {n}: {e}"));
        let s = db.stats();
        writeln!(
            out,
            "ack {n} {} {} {} {}",
            s.root_spills,
            s.node_spills,
            s.fast_splits + s.slow_splits,
            s.node_splits
        )
        .and_then(|()| out.flush())
        .expect("stdout");
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: spawning and killing.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum KillPlan {
    /// Kill as soon as this many acks have arrived.
    Acks(u64),
    /// ... and then let it run this much longer, to land inside a write or a spill.
    AcksThenDelay(u64, Duration),
    /// Kill this long after spawning, whatever the child is doing (maybe still opening).
    Delay(Duration),
}

impl KillPlan {
    fn random(rng: &mut Rng) -> KillPlan {
        match rng.below(10) {
            0..=3 => KillPlan::Acks(rng.range(1, 400)),
            4..=7 => KillPlan::AcksThenDelay(
                rng.range(1, 400),
                Duration::from_micros(rng.range(0, 3000)),
            ),
            _ => KillPlan::Delay(Duration::from_millis(rng.range(0, 100))),
        }
    }
}

/// Root spills, node spills, fast- and slow-splits, internal splits.
type Work = [u64; 4];

enum Event {
    Opened,
    Ack(u64, Work),
}

fn parse_line(line: &str) -> Option<Event> {
    if line == "opened" {
        return Some(Event::Opened);
    }
    let n: Vec<u64> = line
        .strip_prefix("ack ")?
        .split(' ')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [n, a, b, c, d] = n[..] else {
        return None;
    };
    Some(Event::Ack(n, [a, b, c, d]))
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
#[derive(Default)]
struct ChildRun {
    opened: bool,
    acks: Vec<u64>,
    /// The counters of its last ack.
    work: Work,
}

fn run_child(
    dir: &Path,
    (seed, order): (u64, KeyOrder),
    (first, base): (u64, u64),
    plan: KillPlan,
    ctx: &str,
) -> ChildRun {
    let exe = std::env::current_exe().expect("current_exe");
    let child = Command::new(exe)
        .args(["--exact", "expiry_crash_child", "--nocapture"])
        .env(
            CHILD_ENV,
            format!("{seed}:{order}:{first}:{base}:{}", dir.display()),
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
                // A line cut short by the kill is not an ack: that write counts as in flight.
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
    let stderr_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let mut run = ChildRun::default();
    let take = |ev: Event, run: &mut ChildRun| match ev {
        Event::Opened => run.opened = true,
        Event::Ack(n, w) => {
            run.acks.push(n);
            run.work = w;
        }
    };
    // Wait for the kill moment; the child must stay alive (and not hang) until then.
    let outcome: Result<(), String> = (|| {
        let acks_wanted = match plan {
            KillPlan::Acks(n) | KillPlan::AcksThenDelay(n, _) => n,
            KillPlan::Delay(_) => 0,
        };
        while (run.acks.len() as u64) < acks_wanted {
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
    let _ = child.kill(); // SIGKILL on Unix
    let status = child
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
    assert!(
        !stderr.contains("panicked"),
        "{ctx}: the child panicked before the kill; stderr:\n{stderr}"
    );
    assert_eq!(
        status.signal(),
        Some(9),
        "{ctx}: the child was not ended by our SIGKILL: {status:?}; stderr:\n{stderr}"
    );
    for (i, &n) in run.acks.iter().enumerate() {
        assert_eq!(
            n,
            first + i as u64,
            "{ctx}: the child acknowledged writes out of order (its first is {first}): {:?}",
            run.acks
        );
    }
    run
}

// ---------------------------------------------------------------------------------------------
// The parent: checking a recovered store against the model.
// ---------------------------------------------------------------------------------------------

/// The store must show exactly what `model` shows at `now`.
fn check_exact(db: &Db, model: &Model, now: u64, ctx: &str) {
    let seen = read_store(db, &all_keys(), ctx);
    let diff = differences(&seen, &model.visible(now), 20);
    assert!(
        diff.is_empty(),
        "{ctx}: the store differs from the model at {now} ms:\n{}",
        diff.join("\n")
    );
}

/// Names of the `*.list` files in the store folder, and whether a `MANIFEST.tmp` is there.
fn folder_state(dir: &Path) -> (BTreeSet<String>, bool) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (BTreeSet::new(), false); // the first child may die before creating it
    };
    let names: Vec<String> = entries
        .map(|e| e.expect("listing the store").file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    let tmp = names.iter().any(|n| n == "MANIFEST.tmp");
    let lists = names.into_iter().filter(|n| n.ends_with(".list")).collect();
    (lists, tmp)
}

/// The tree and the folder agree: nothing referenced is missing, nothing unreferenced is left.
fn check_files(db: &Db, dir: &Path, ctx: &str) {
    db.check_tree()
        .unwrap_or_else(|e| panic!("{ctx}: check_tree: {e}"));
    let in_use = db.files_in_use();
    let (on_disk, tmp) = folder_state(dir);
    assert_eq!(in_use, on_disk, "{ctx}: list files in use vs on disk");
    assert!(!tmp, "{ctx}: MANIFEST.tmp survived open");
}

/// Keeps the store folder (and says where) if the test fails.
struct KeepOnPanic(tempfile::TempDir);

impl Drop for KeepOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!(
                "expiry crash test: store kept at {}",
                self.0.path().display()
            );
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

fn clock_at(ms: u64) -> Arc<ManualClock> {
    Arc::new(ManualClock::new(time(ms)))
}

#[test]
fn crash_recovery_keeps_expiring_writes_at_their_times() {
    if std::env::var_os(CHILD_ENV).is_none() {
        crash_cycles(
            KeyOrder::Hashed,
            "crash_recovery_keeps_expiring_writes_at_their_times",
        );
    }
}

#[test]
fn crash_recovery_of_an_ordered_store_keeps_expiring_writes_at_their_times() {
    if std::env::var_os(CHILD_ENV).is_none() {
        crash_cycles(
            KeyOrder::Ordered,
            "crash_recovery_of_an_ordered_store_keeps_expiring_writes_at_their_times",
        );
    }
}

fn crash_cycles(order: KeyOrder, test: &str) {
    let cycles = env_u64(CYCLES_ENV).unwrap_or(DEFAULT_CYCLES);
    let seed = env_u64(SEED_ENV).unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock");
        mix(&[t.as_nanos() as u64, u64::from(std::process::id())])
    });
    let started = Instant::now();
    let tmp = KeepOnPanic(
        tempfile::Builder::new()
            .prefix("spillway-expiry-crash-")
            .tempdir()
            .expect("tempdir"),
    );
    let dir = tmp.0.path().join("store");
    let rerun = format!("rerun with {SEED_ENV}={seed} and --exact {test}");
    let mut plans = Rng::new(mix(&[seed, 0x4B11]));
    let mut model = Model::default();
    let (mut next, mut cursor) = (0u64, START);
    let (mut acked, mut inflight_applied, mut expired_by_jumps) = (0, 0, 0);
    let mut work: Work = [0; 4];
    for cycle in 0..cycles {
        let plan = KillPlan::random(&mut plans);
        let (first, base) = (next, cursor);
        let ctx = format!(
            "seed {seed} ({rerun}), {order} store, cycle {cycle}, first write {first} at {base} \
             ms, {plan:?}"
        );
        let run = run_child(&dir, (seed, order), (first, base), plan, &ctx);
        let at = |n: u64| base + (n - first) * STEP;
        for &n in &run.acks {
            Write::new(seed, n, at(n), n == first).apply(&mut model, at(n));
        }
        acked += run.acks.len() as u64;
        for (total, w) in work.iter_mut().zip(run.work) {
            *total += w;
        }
        let inflight = first + run.acks.len() as u64;
        let now = at(inflight);
        let ctx = format!(
            "{ctx}, {} acks, in flight write {inflight} at {now} ms",
            run.acks.len()
        );

        // At the time the child reached, replaying the log without spilling: the acknowledged
        // writes, and the one in flight entirely or not at all.
        let db = Db::open(&dir, no_spill_options(order).clock(clock_at(now)))
            .unwrap_or_else(|e| panic!("{ctx}: open without spilling: {e}"));
        let seen = read_store(&db, &all_keys(), &ctx);
        let without = model.visible(now);
        let mut with_model = model.clone();
        let w = Write::new(seed, inflight, now, inflight == first);
        w.apply(&mut with_model, now);
        let with = with_model.visible(now);
        if seen == with && with != without {
            model = with_model;
            inflight_applied += 1;
        } else if seen != without {
            panic!(
                "{ctx}: the store is neither the model without the in-flight write ({w:?}) \
                 nor with it.\nWithout:\n{}\nWith:\n{}",
                differences(&seen, &without, 20).join("\n"),
                differences(&seen, &with, 20).join("\n")
            );
        }
        check_files(&db, &dir, &ctx);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        // Later, as the child opens (spilling at once if the replay fills the buffer).
        let jump = match plans.below(8) {
            0 | 1 => 0,
            2 | 3 => plans.range(1, 50),
            4..=6 => plans.range(50, 1000),
            _ => DAY,
        };
        let later = now + jump;
        let ctx = format!("{ctx}, reopened {jump} ms later");
        let db = Db::open(&dir, options(order).clock(clock_at(later)))
            .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        check_exact(&db, &model, later, &ctx);
        if cycle % 2 == 0 {
            db.flush().unwrap_or_else(|e| panic!("{ctx}: flush: {e}"));
            check_exact(&db, &model, later, &format!("{ctx}, after a flush"));
        }
        check_files(&db, &dir, &ctx);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        expired_by_jumps += model.visible(now).len() - model.visible(later).len();
        // No write will be older than `later`: an expired value is now as good as none.
        model.prune(later);
        next = inflight + 1;
        cursor = later + STEP;
    }

    let ctx = format!("seed {seed} ({rerun}), {order} store, final reopen");
    let db = Db::open(&dir, options(order).clock(clock_at(cursor)))
        .unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    check_exact(&db, &model, cursor, &ctx);
    check_files(&db, &dir, &ctx);
    let s = db.stats();
    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    let t: &Tally = &model.tally;
    println!(
        "expiry crash test: {order} store, seed {seed}, {cycles} cycles in {:.1?}: {acked} \
         writes acked, {inflight_applied} in-flight writes found applied, {expired_by_jumps} \
         keys expired by clock jumps; children did {} root spills, {} node spills, {} leaf \
         splits, {} internal splits; final tree: height {}, {} leaves, {} live keys; {t:?}",
        started.elapsed(),
        work[0],
        work[1],
        work[2],
        work[3],
        s.height,
        s.leaves,
        model.visible(cursor).len(),
    );
    let ctx = format!("seed {seed} ({rerun}), {order} store: the workload did too little");
    assert!(acked > 0, "{ctx}: no write was acknowledged");
    assert!(
        work[0] > 0 && work[1] > 0 && work[2] > 0,
        "{ctx}: spills and splits {work:?}"
    );
    assert!(expired_by_jumps > 0, "{ctx}: no clock jump expired a key");
    t.assert_all_seen(&ctx);
}
