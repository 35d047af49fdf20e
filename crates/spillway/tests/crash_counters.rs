//! Counters under real `SIGKILL`s: an acknowledged increment counts exactly once after
//! recovery — never lost, never counted twice by a replay — and a batch of increments is atomic.
//!
//! The test binary re-runs itself as the child (as `crash.rs` does): with
//! `SPILLWAY_COUNTER_CHILD=<seed>:<order>:<first_batch>:<dir>` set, `counter_child` opens the
//! store with tiny options (spills and splits every few writes) and the `U64Add` operator,
//! and writes batch after batch from `first_batch` on, printing `ack <b>` once `write` returns.
//! Batch `b` is a pure function of `(seed, b)`: 1–30 increments over 100 counters, skewed so a
//! few are hot, and now and then a put that resets a counter or a delete, so that the order of
//! folding matters. Every other batch is synced; a process kill must lose neither kind.
//!
//! The parent kills the child at a random moment (after 1–200 acks, or 0–150 ms after it
//! started, which can land inside recovery), reopens the store and requires every counter to
//! equal the model of all acknowledged batches — or, for every counter at once, the model with
//! the one in-flight batch applied too. `SPILLWAY_CRASH_CYCLES` sets the cycles per key order
//! (default 12); the seed is random and printed on failure (`SPILLWAY_CRASH_SEED` fixes it).

mod common;

use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{mix, Rng};
use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

const CHILD_ENV: &str = "SPILLWAY_COUNTER_CHILD";
const COUNTERS: u64 = 100;

fn options(order: KeyOrder) -> Options {
    common::tiny_options()
        .key_order(order)
        .merge_operator(Arc::new(spillway::operators::U64Add))
}

#[derive(Clone, Copy, Debug)]
enum Change {
    Add(u64),
    Set(u64),
    Delete,
}

fn key(k: u64) -> String {
    format!("counter-{k:03}")
}

fn batch_changes(seed: u64, b: u64) -> Vec<(u64, Change)> {
    let mut rng = Rng::new(mix(&[seed, b, 0xC0]));
    (0..rng.range(1, 30))
        .map(|_| {
            let hot = rng.range(1, COUNTERS);
            let k = rng.below(hot);
            let change = match rng.below(40) {
                0 => Change::Set(rng.below(1 << 40)),
                1 => Change::Delete,
                _ => Change::Add(rng.range(1, 1000)),
            };
            (k, change)
        })
        .collect()
}

fn apply(model: &mut [Option<u64>], changes: &[(u64, Change)]) {
    for &(k, c) in changes {
        let v = &mut model[k as usize];
        *v = match c {
            Change::Add(d) => Some(v.unwrap_or(0).wrapping_add(d)),
            Change::Set(x) => Some(x),
            Change::Delete => None,
        };
    }
}

#[test]
fn counter_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // a normal test run: nothing to do
    };
    let mut parts = spec.splitn(4, ':');
    let seed: u64 = parts.next().unwrap().parse().unwrap();
    let order = match parts.next().unwrap() {
        "hashed" => KeyOrder::Hashed,
        _ => KeyOrder::Ordered,
    };
    let first: u64 = parts.next().unwrap().parse().unwrap();
    let dir = parts.next().unwrap();
    let db = Db::open(dir, options(order)).unwrap();
    let stdout = std::io::stdout();
    for b in first.. {
        let mut batch = WriteBatch::new();
        for (k, c) in batch_changes(seed, b) {
            match c {
                Change::Add(d) => batch.merge(key(k), d.to_le_bytes()),
                Change::Set(x) => batch.put(key(k), x.to_le_bytes()),
                Change::Delete => batch.delete(key(k)),
            }
        }
        let sync = if b % 2 == 0 {
            WriteOptions::SYNC
        } else {
            WriteOptions::NO_SYNC
        };
        db.write(batch, sync).unwrap();
        let mut out = stdout.lock();
        writeln!(out, "ack {b}").unwrap();
        out.flush().unwrap();
    }
}

/// Run the child from batch `first` and kill it; the batches it acknowledged.
fn run_child(dir: &Path, seed: u64, order: &str, first: u64, rng: &mut Rng) -> Vec<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "counter_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{seed}:{order}:{first}:{}", dir.display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest may print "test counter_child ... " on the same line first.
            if let Some(b) = line.find("ack ").map(|i| &line[i + 4..]) {
                if tx.send(b.parse::<u64>().unwrap()).is_err() {
                    break;
                }
            }
        }
    });
    let mut acks = Vec::new();
    if rng.below(4) == 0 {
        std::thread::sleep(Duration::from_millis(rng.below(150)));
    } else {
        let want = rng.range(1, 199);
        while acks.len() < want as usize {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(b) => acks.push(b),
                Err(_) => break,
            }
        }
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the child stopped on its own: {status:?}"
    );
    reader.join().unwrap();
    acks.extend(rx.try_iter());
    acks
}

fn read_all(db: &Db) -> Vec<Option<u64>> {
    (0..COUNTERS)
        .map(|k| {
            db.get(key(k))
                .unwrap()
                .map(|v| u64::from_le_bytes(v.try_into().unwrap()))
        })
        .collect()
}

fn cycles(order: KeyOrder) {
    let cycles = std::env::var("SPILLWAY_CRASH_CYCLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12u64);
    let seed = std::env::var("SPILLWAY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let name = match order {
        KeyOrder::Hashed => "hashed",
        KeyOrder::Ordered => "ordered",
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(mix(&[seed, 0xC1]));
    let mut model = vec![None; COUNTERS as usize];
    let mut next = 0;
    let (mut acked_total, mut in_flight_kept) = (0, 0);
    for cycle in 0..cycles {
        let ctx = format!("{name} store, seed {seed} (SPILLWAY_CRASH_SEED), cycle {cycle}");
        let acks = run_child(dir.path(), seed, name, next, &mut rng);
        let expect: Vec<u64> = (next..next + acks.len() as u64).collect();
        assert_eq!(acks, expect, "{ctx}: acks out of sequence");
        for &b in &acks {
            apply(&mut model, &batch_changes(seed, b));
        }
        acked_total += acks.len();
        let in_flight = next + acks.len() as u64;
        let db =
            Db::open(dir.path(), options(order)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let got = read_all(&db);
        if got != model {
            let mut with_in_flight = model.clone();
            apply(&mut with_in_flight, &batch_changes(seed, in_flight));
            assert_eq!(
                got, with_in_flight,
                "{ctx}: the counters are neither the acknowledged batches' nor those plus \
                 in-flight batch {in_flight} (whole)"
            );
            model = with_in_flight;
            in_flight_kept += 1;
        }
        db.check_tree()
            .unwrap_or_else(|e| panic!("{ctx}: tree: {e}"));
        db.close().unwrap();
        next = in_flight + 1;
    }
    let db = Db::open(dir.path(), options(order)).unwrap();
    assert_eq!(read_all(&db), model, "seed {seed}: after a clean reopen");
    let stats = db.stats();
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(
        report.problems.is_empty(),
        "seed {seed}: {:?}",
        report.problems
    );
    eprintln!(
        "{name}: {cycles} kills, {acked_total} acknowledged batches of increments, in-flight \
         batch found applied {in_flight_kept} times; seed {seed}; {stats:?}"
    );
    assert!(acked_total > 0, "the children acknowledged nothing");
}

#[test]
fn killed_counters_count_every_acknowledged_increment_once() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    cycles(KeyOrder::Hashed);
}

#[test]
fn killed_counters_count_every_acknowledged_increment_once_ordered() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    cycles(KeyOrder::Ordered);
}
