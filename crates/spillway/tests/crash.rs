//! Crash consistency under real `SIGKILL`s, with a real child process and no mocks.
//!
//! The test binary re-runs itself as the child: the parent test spawns
//! `current_exe() --exact crash_child --nocapture --include-ignored` with
//! `SPILLWAY_CRASH_CHILD=<seed>:<first_batch>:<dir>` in the environment. Without that variable
//! `crash_child` is a no-op that passes, so it is harmless under a normal `cargo test` or
//! `cargo nextest run`.
//!
//! The child opens the store with tiny options (4 KiB root buffer, 8 KiB nodes, fan-out 4,
//! fast-split ratio 2, 256-byte pages), so root spills, internal-node spills, fast-splits,
//! slow-splits and internal splits happen every few writes, and writes batch after batch with
//! [`WriteOptions::SYNC`]. Batch `b` (a counter that goes on across cycles, so numbers never
//! repeat) is a pure function of `(seed, b)`: 1–20 puts and deletes over 2000 keys, a third of
//! them on a hot set of 200 keys. Every value starts with `(b, key, op)` followed by 0–300
//! bytes of filler derived from them, so a value names exactly which write made it. After each
//! `write` returns `Ok` the child prints `ack <b> <its spill/split counters>` and flushes.
//!
//! The parent runs `SPILLWAY_CRASH_CYCLES` cycles (default 20). Each cycle starts a child,
//! kills it with `SIGKILL` at a random moment — after 1–300 acks, after 1–300 acks plus up to
//! 3 ms, or 0–150 ms after spawning (which can land inside `Db::open`'s recovery) — then opens
//! the store itself, twice. The first open uses a root buffer too large to fill, so recovery
//! does not spill and the tree is exactly what the manifest recorded; the second uses the
//! child's options, so it spills at once when the replayed log fills the buffer (as it does
//! after a kill mid-spill). It asserts:
//!
//! * the child died of our `SIGKILL` (it did not panic, fail or exit on its own), and its acks
//!   are exactly the consecutive batches starting at the cycle's first batch;
//! * `get` and `multi_get` agree on every key;
//! * every value present is genuine: it decodes to `(b, key, op)` for the key it is stored under,
//!   `b` was written (at most the in-flight batch), and it is byte for byte the *final* effect
//!   of batch `b` on that key (not an overwritten intermediate, not corrupted);
//! * every key equals the model (all acknowledged batches applied in order), except keys the
//!   in-flight batch (last ack + 1) changes, which may instead show that batch's value;
//! * the in-flight batch is atomic: all of its effects are visible or none are;
//! * `check_tree()` is `Ok`, every file in `files_in_use()` exists, no `*.list` file outside
//!   it exists (open removes orphans), and no `MANIFEST.tmp` is left;
//! * after the first open the model takes the in-flight batch if it was found applied, and the
//!   second open must then equal the model exactly (same value, file and tree checks).
//!
//! The store is closed and the next cycle's child starts at the batch after the in-flight one,
//! so batch numbers never repeat and a lost batch cannot hide behind a rewrite. At the end the
//! store is reopened once more and must equal the model exactly, and the test asserts that the
//! children (their counters arrive on the ack lines) did root spills, internal-node spills,
//! fast-splits, slow-splits and internal splits, and that the final tree has at least three
//! levels and more leaves than the fan-out, so the kills really landed on a store busy
//! spilling and splitting. The summary line also counts the recoveries that removed orphan
//! lists (the kill interrupted a spill) and the opens that spilled right away.
//!
//! The seed is random per run and printed on the summary line and in every failure; on failure
//! the store folder is kept and its path printed. Environment:
//!
//! * `SPILLWAY_CRASH_CYCLES=N` — number of kill/recover cycles (default 20);
//! * `SPILLWAY_CRASH_SEED=S` — fix the seed (the batches and the kill plans; the exact kill
//!   instants still depend on timing).
//!
//! ```text
//! cargo test -p spillway --test crash -- --nocapture
//! SPILLWAY_CRASH_CYCLES=200 cargo test -p spillway --test crash -- --nocapture
//! cargo nextest run -p spillway --test crash --no-capture
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use spillway::{Db, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "SPILLWAY_CRASH_CHILD";
const CYCLES_ENV: &str = "SPILLWAY_CRASH_CYCLES";
const SEED_ENV: &str = "SPILLWAY_CRASH_SEED";
const DEFAULT_CYCLES: u64 = 20;

/// Keys are `0..KEYS`; a third of the operations go to the hot keys `0..HOT_KEYS`.
const KEYS: u32 = 2000;
const HOT_KEYS: u32 = 200;
const MAX_OPS: u64 = 20;
const MAX_FILLER: u64 = 300;
/// Percent of operations that are deletes.
const DELETE_PERCENT: u64 = 15;
/// Longest the parent waits for the next line from a child before calling it hung.
const HANG_TIMEOUT: Duration = Duration::from_secs(60);

/// Tiny nodes, so that spills and splits of every kind happen constantly.
fn options() -> Options {
    Options {
        root_buffer_size: 4096,
        node_size: 8192,
        fan_out: 4,
        fast_split_ratio: 2,
        page_size: 256,
        ..Default::default()
    }
}

/// The same tree shape with a root buffer that recovery cannot fill, so `open` never spills.
fn no_spill_options() -> Options {
    Options {
        root_buffer_size: 1 << 30,
        ..options()
    }
}

/// splitmix64 (Steele, Lea, Flood): tiny, fast, and good enough for test randomness.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (the modulo bias is irrelevant here).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform-ish in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

/// Derive an independent seed from several numbers.
fn mix(parts: &[u64]) -> u64 {
    let mut r = Rng::new(0x5EED_5EED_5EED_5EED);
    for &p in parts {
        r.0 ^= p;
        r.next_u64();
    }
    r.next_u64()
}

// ---------------------------------------------------------------------------------------------
// The workload: a pure function of (seed, batch number).
// ---------------------------------------------------------------------------------------------

/// Key `i`, of varying length.
fn key(i: u32) -> Vec<u8> {
    let mut k = format!("key:{i:04}:").into_bytes();
    k.resize(k.len() + (i % 13) as usize, b'k');
    k
}

const VALUE_HEADER: usize = 1 + 8 + 4 + 1;

/// The value operation `op` of batch `b` puts under key `k`: a header naming `(b, k, op)`,
/// then 0..=300 bytes of filler derived from the same numbers.
fn value(seed: u64, b: u64, op: u8, k: u32) -> Vec<u8> {
    let mut rng = Rng::new(mix(&[seed, b, u64::from(op), u64::from(k), 0xF111]));
    let filler = rng.below(MAX_FILLER + 1) as usize;
    let mut v = Vec::with_capacity(VALUE_HEADER + filler);
    v.push(b'V');
    v.extend_from_slice(&b.to_le_bytes());
    v.extend_from_slice(&k.to_le_bytes());
    v.push(op);
    while v.len() < VALUE_HEADER + filler {
        v.push(rng.next_u64() as u8);
    }
    v
}

/// `(b, k, op)` of a value written by [`value`], if it has the header.
fn decode_value(v: &[u8]) -> Option<(u64, u32, u8)> {
    if v.len() < VALUE_HEADER || v[0] != b'V' {
        return None;
    }
    let b = u64::from_le_bytes(v[1..9].try_into().unwrap());
    let k = u32::from_le_bytes(v[9..13].try_into().unwrap());
    Some((b, k, v[13]))
}

/// The operations of batch `b`, in order: `(key, Some(value))` puts, `(key, None)` deletes.
fn batch_ops(seed: u64, b: u64) -> Vec<(u32, Option<Vec<u8>>)> {
    let mut rng = Rng::new(mix(&[seed, b, 0xBA7C]));
    let n = rng.range(1, MAX_OPS);
    (0..n)
        .map(|op| {
            let k = if rng.below(3) == 0 {
                rng.below(u64::from(HOT_KEYS))
            } else {
                rng.below(u64::from(KEYS))
            } as u32;
            let v = (rng.below(100) >= DELETE_PERCENT).then(|| value(seed, b, op as u8, k));
            (k, v)
        })
        .collect()
}

/// What batch `b` leaves behind: the last operation on each key it touches.
fn batch_effects(seed: u64, b: u64) -> BTreeMap<u32, Option<Vec<u8>>> {
    batch_ops(seed, b).into_iter().collect()
}

fn write_batch(seed: u64, b: u64) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for (k, v) in batch_ops(seed, b) {
        match v {
            Some(v) => batch.put(key(k), v),
            None => batch.delete(key(k)),
        }
    }
    batch
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
}

/// The child side: a no-op unless `SPILLWAY_CRASH_CHILD` is set, else write until killed.
#[test]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut parts = spec.splitn(3, ':');
    let (Some(seed), Some(first), Some(dir)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("{CHILD_ENV}={spec:?} is not <seed>:<first_batch>:<dir>");
    };
    let seed: u64 = seed.parse().expect("seed");
    let first: u64 = first.parse().expect("first batch");
    let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("child: open {dir}: {e}"));
    // Write straight to the stdout handle (not `println!`, which the test harness may capture).
    let mut out = std::io::stdout().lock();
    writeln!(out, "opened")
        .and_then(|()| out.flush())
        .expect("stdout");
    for b in first.. {
        db.write(write_batch(seed, b), WriteOptions::SYNC)
            .unwrap_or_else(|e| panic!("child: write of batch {b}: {e}"));
        let s = db.stats();
        writeln!(
            out,
            "ack {b} {} {} {} {} {}",
            s.root_spills, s.node_spills, s.fast_splits, s.slow_splits, s.node_splits
        )
        .and_then(|()| out.flush())
        .expect("stdout");
    }
}

// ---------------------------------------------------------------------------------------------
// The parent: spawning, killing, collecting acks.
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
    Ack(u64, Work),
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
    let [b, root_spills, node_spills, fast_splits, slow_splits, node_splits] = n[..] else {
        return None;
    };
    Some(Event::Ack(
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
    acks: Vec<u64>,
    /// Counters from the last ack: a lower bound of the child's work.
    work: Work,
}

fn run_child(dir: &Path, seed: u64, first: u64, plan: KillPlan, ctx: &str) -> ChildRun {
    let exe = std::env::current_exe().expect("current_exe");
    let child = Command::new(exe)
        .args(["--exact", "crash_child", "--nocapture", "--include-ignored"])
        .env(CHILD_ENV, format!("{seed}:{first}:{}", dir.display()))
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
        acks: Vec::new(),
        work: Work::default(),
    };
    let take = |ev: Event, run: &mut ChildRun| match ev {
        Event::Opened => run.opened = true,
        Event::Ack(b, w) => {
            run.acks.push(b);
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
    for (i, &b) in run.acks.iter().enumerate() {
        assert_eq!(
            b,
            first + i as u64,
            "{ctx}: the child acknowledged batches out of order: {:?}",
            run.acks
        );
    }
    run
}

// ---------------------------------------------------------------------------------------------
// The parent: checking a recovered store against the model.
// ---------------------------------------------------------------------------------------------

/// Every key's value after the batches applied so far (`None` = absent).
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
            Some((b, k, op)) => {
                format!("value of batch {b} op {op} for key {k} ({} bytes)", v.len())
            }
            None => format!(
                "unrecognized {} bytes {:02x?}",
                v.len(),
                &v[..v.len().min(16)]
            ),
        },
    }
}

/// A value found under key `k` must be one a batch `<= newest` really left there.
fn check_genuine(seed: u64, k: u32, v: &[u8], newest: u64, ctx: &str) {
    let Some((b, vk, op)) = decode_value(v) else {
        panic!(
            "{ctx}: key {k} holds bytes no write produced: {}",
            describe(&Some(v.to_vec()))
        );
    };
    assert_eq!(
        vk, k,
        "{ctx}: key {k} holds a value written for key {vk} (batch {b} op {op})"
    );
    assert!(
        b <= newest,
        "{ctx}: key {k} holds a value of batch {b}, which was never written (newest is {newest})"
    );
    let ops = batch_ops(seed, b);
    let Some((_, intended)) = ops.get(op as usize) else {
        panic!(
            "{ctx}: key {k} holds a value of batch {b} op {op}, but that batch has {} ops",
            ops.len()
        );
    };
    assert_eq!(
        ops[op as usize].0, k,
        "{ctx}: key {k} holds a value claiming batch {b} op {op}, which wrote another key"
    );
    assert!(
        intended.as_deref() == Some(v),
        "{ctx}: key {k} holds a corrupted value of batch {b} op {op} ({} bytes, expected {})",
        v.len(),
        intended.as_ref().map_or(0, Vec::len)
    );
    assert_eq!(
        batch_effects(seed, b).get(&k),
        Some(&Some(v.to_vec())),
        "{ctx}: key {k} holds batch {b} op {op}, which a later op of the same batch overwrote \
         (a batch is applied partially)"
    );
}

/// Check the whole store against `model` plus, maybe, the in-flight batch `inflight`; no
/// batch after `newest` was ever written. Returns whether the in-flight batch was found applied.
fn verify(
    db: &Db,
    model: &Model,
    seed: u64,
    newest: u64,
    inflight: Option<u64>,
    ctx: &str,
) -> bool {
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
            "{ctx}: key {k}: get says {}, multi_get says {}",
            describe(&one),
            describe(&got[k])
        );
    }
    for (k, v) in got.iter().enumerate() {
        if let Some(v) = v {
            check_genuine(seed, k as u32, v, newest, ctx);
        }
    }
    let effects = inflight.map(|b| batch_effects(seed, b)).unwrap_or_default();
    let (mut applied, mut not_applied) = (Vec::new(), Vec::new());
    for k in 0..KEYS {
        let (old, seen) = (&model.values[k as usize], &got[k as usize]);
        match effects.get(&k) {
            Some(new) if new != old => {
                if seen == new {
                    applied.push(k);
                } else if seen == old {
                    not_applied.push(k);
                } else {
                    panic!(
                        "{ctx}: key {k} (changed by in-flight batch {}) shows {}; expected the \
                         acknowledged {} or the in-flight {}",
                        inflight.unwrap(),
                        describe(seen),
                        describe(old),
                        describe(new)
                    );
                }
            }
            _ => assert!(
                seen == old,
                "{ctx}: key {k} shows {}; expected {} (acknowledged write lost or resurrected)",
                describe(seen),
                describe(old)
            ),
        }
    }
    assert!(
        applied.is_empty() || not_applied.is_empty(),
        "{ctx}: in-flight batch {} is torn: keys {applied:?} show it, keys {not_applied:?} do not",
        inflight.unwrap()
    );
    !applied.is_empty()
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
            .prefix("spillway-crash-")
            .tempdir()
            .expect("tempdir"),
    );
    let dir = tmp.0.path().join("store");

    let mut plans = Rng::new(mix(&[seed, 0x4B11]));
    let mut model = Model::new();
    let mut next_batch = 0u64;
    let (mut acked, mut inflight_applied, mut killed_before_open) = (0, 0, 0);
    let (mut orphans_found, mut spilled_on_open) = (0, 0);
    let mut work = Work::default();
    for cycle in 0..cycles {
        let plan = KillPlan::random(&mut plans);
        let first = next_batch;
        let ctx = format!(
            "seed {seed} (rerun with {SEED_ENV}={seed}), cycle {cycle}, first batch {first}, \
             {plan:?}"
        );
        let run = run_child(&dir, seed, first, plan, &ctx);
        acked += run.acks.len() as u64;
        work.add(run.work);
        killed_before_open += u64::from(!run.opened);
        for b in &run.acks {
            model.apply(&batch_effects(seed, *b));
        }
        let inflight = first + run.acks.len() as u64;
        let ctx = format!("{ctx}, {} acks, in-flight batch {inflight}", run.acks.len());

        // First look with a root buffer too large to fill, so that open does not spill: the
        // tree is exactly what the manifest recorded, and the list files it does not name are
        // orphans of a spill the kill interrupted.
        let (lists_before, _) = folder_state(&dir);
        let db = Db::open(&dir, no_spill_options())
            .unwrap_or_else(|e| panic!("{ctx}: open without spilling: {e}"));
        if verify(&db, &model, seed, inflight, Some(inflight), &ctx) {
            model.apply(&batch_effects(seed, inflight));
            inflight_applied += 1;
        }
        check_files(&db, &dir, &ctx);
        if !lists_before.is_subset(&db.files_in_use()) {
            orphans_found += 1;
        }
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        // Then open as the child does, which spills at once if recovery filled the buffer; the
        // in-flight batch is settled now, so the store must equal the model exactly.
        let ctx = format!("{ctx}, second open");
        let db = Db::open(&dir, options()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        spilled_on_open += db.stats().root_spills;
        verify(&db, &model, seed, inflight, None, &ctx);
        check_files(&db, &dir, &ctx);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
        next_batch = inflight + 1;
    }

    // A clean reopen must show exactly the model.
    let ctx = format!("seed {seed} (rerun with {SEED_ENV}={seed}), final reopen");
    let db = Db::open(&dir, options()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
    verify(&db, &model, seed, next_batch.saturating_sub(1), None, &ctx);
    check_files(&db, &dir, &ctx);
    let s = db.stats();
    db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    let live = model.values.iter().filter(|v| v.is_some()).count();

    println!(
        "crash test: seed {seed}, {cycles} cycles in {:.1?}: {acked} batches acked, \
         {inflight_applied} in-flight batches found applied, {killed_before_open} kills before \
         open finished, {orphans_found} recoveries removed orphan lists, {spilled_on_open} \
         spilled on open; children did {} root spills, {} node spills, {} fast-splits, {} \
         slow-splits, {} internal splits; final tree: height {}, \
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
    let ctx = format!("seed {seed}: the workload did too little to test crashes: {work:?}, {s:?}");
    assert!(work.root_spills > 0, "{ctx}");
    assert!(work.node_spills > 0, "{ctx}");
    assert!(work.fast_splits > 0, "{ctx}");
    assert!(work.slow_splits > 0, "{ctx}");
    assert!(work.node_splits > 0, "{ctx}");
    assert!(
        s.height >= 3 && s.leaves > options().fan_out as u64,
        "{ctx}"
    );
}
