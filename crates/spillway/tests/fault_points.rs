//! Every file operation of a small workload, failed in turn: for each fault point the store
//! must report a typed error or keep working, never panic, and after a reopen (the fault gone)
//! hold every acknowledged write, with the one write that failed there entirely or not at all.
//!
//! A first run counts the operations (creates, writes, fsyncs, renames, reads) of the workload;
//! then the workload runs once per operation with exactly that operation failing — a failed
//! write having written part of its bytes, as a full disk does. With spills on the writer's
//! thread operation `n` is the same one in every run; with background spills (the second
//! sweep) the spill thread's operations interleave with the writer's differently each time.
//! The workload ends with `close`, no `flush`: what the last spill did not take must come
//! back from the log, so an acknowledged write that never reached it would be caught.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{mix, Rng};
use spillway::faults::{self, Op};
use spillway::{Db, Options, WriteBatch, WriteOptions};

const BATCHES: u64 = 120;
const KEYS: u64 = 150;
const ALL: [Op; 5] = [Op::Create, Op::Write, Op::Sync, Op::Rename, Op::Read];

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(background_spills: bool) -> Options {
    common::tiny_options().background_spills(background_spills)
}

/// Batch `n`: 1–8 puts and deletes, or every 30th (a synced one) 770–900, big enough to be
/// applied while its fsync runs; returns it and the model with it applied.
fn batch(n: u64, model: &Model) -> (WriteBatch, Model) {
    let mut rng = Rng::new(mix(&[n, 0xFA17]));
    let mut b = WriteBatch::new();
    let mut after = model.clone();
    let records = if n.is_multiple_of(30) {
        rng.range(770, 900)
    } else {
        rng.range(1, 8)
    };
    for j in 0..records {
        let k = format!("key{:03}", rng.below(KEYS)).into_bytes();
        if rng.below(5) == 0 {
            b.delete(&k);
            after.remove(&k);
        } else {
            let v = format!("{n}:{j}:{}", "v".repeat(rng.below(60) as usize)).into_bytes();
            b.put(&k, &v);
            after.insert(k, v);
        }
    }
    (b, after)
}

/// What a run of the workload acknowledged.
struct Outcome {
    model: Model,
    /// The model with the write that failed applied, if one failed.
    in_doubt: Option<Model>,
    /// Whether something reported an error (any call, not only writes).
    errors: u64,
}

/// Open, write `BATCHES` batches (every third synced) with reads between them, close;
/// stop writing at the first refused write.
fn workload(dir: &Path, background: bool) -> Outcome {
    let mut out = Outcome {
        model: Model::new(),
        in_doubt: None,
        errors: 0,
    };
    let db = match Db::open(dir, options(background)) {
        Ok(db) => db,
        Err(_) => {
            out.errors += 1;
            return out;
        }
    };
    for n in 0..BATCHES {
        let (b, after) = batch(n, &out.model);
        let sync = if n % 3 == 0 {
            WriteOptions::SYNC
        } else {
            WriteOptions::NO_SYNC
        };
        match db.write(b, sync) {
            Ok(()) => out.model = after,
            Err(_) => {
                out.errors += 1;
                out.in_doubt = Some(after);
                break;
            }
        }
        // A read that fails is an error, never a wrong answer.
        let k = format!("key{:03}", n % KEYS).into_bytes();
        match db.get(&k) {
            Ok(v) => assert_eq!(v.as_ref(), out.model.get(&k), "get {n} during the workload"),
            Err(_) => out.errors += 1,
        }
    }
    // No flush: what the last spill did not take must come back from the log.
    if db.close().is_err() {
        out.errors += 1;
    }
    out
}

/// Reopen without faults and compare with what was acknowledged.
fn check(dir: &Path, out: Outcome, ctx: &str) {
    let db = Db::open(dir, options(true)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    let mut model = out.model;
    if let Some(doubt) = out.in_doubt {
        // Present entirely or not at all: decide by one key it changed, then compare all.
        let changed = doubt
            .keys()
            .chain(model.keys())
            .find(|k| doubt.get(*k) != model.get(*k))
            .cloned();
        if let Some(k) = changed {
            if db.get(&k).unwrap().as_ref() == doubt.get(&k) {
                model = doubt;
            }
        }
    }
    for i in 0..KEYS {
        let k = format!("key{i:03}").into_bytes();
        let got = db.get(&k).unwrap_or_else(|e| panic!("{ctx}: get: {e}"));
        assert_eq!(got.as_ref(), model.get(&k), "{ctx}: key{i:03}");
    }
    db.flush().unwrap_or_else(|e| panic!("{ctx}: flush: {e}"));
    db.check_tree()
        .unwrap_or_else(|e| panic!("{ctx}: check_tree: {e}"));
    assert_eq!(db.files_in_use(), common::list_file_names(dir), "{ctx}");
    db.close().unwrap();
}

/// Count the fault points of the workload, then fail each in turn; returns (points, runs
/// that saw an error).
fn sweep(background: bool) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let counting = faults::fail_once(dir.path(), &ALL, u64::MAX);
    let clean = workload(dir.path(), background);
    let points = counting.seen();
    drop(counting);
    assert_eq!(clean.errors, 0);
    check(dir.path(), clean, "without faults");
    assert!(points > 200, "the workload does {points} file operations");

    let mut failed_runs = 0;
    for n in 0..points {
        let dir = tempfile::tempdir().unwrap();
        let fault = faults::fail_once(dir.path(), &ALL, n);
        let out = workload(dir.path(), background);
        // With background spills the operations interleave differently from run to run, so
        // a run may end before operation `n`.
        assert!(
            fault.hits() == 1 || background,
            "fault point {n} of {points} was not reached"
        );
        drop(fault);
        if out.errors > 0 {
            failed_runs += 1;
        }
        let ctx = format!("fault point {n} of {points} (background spills: {background})");
        check(dir.path(), out, &ctx);
    }
    (points, failed_runs)
}

#[test]
fn every_fault_point_of_a_workload_loses_nothing_acknowledged() {
    let (points, failed) = sweep(false);
    eprintln!("spills inline: {points} fault points exercised; {failed} surfaced as errors");
    assert_eq!(failed, points, "every fault is reported somewhere");
}

#[test]
fn every_fault_point_with_background_spills() {
    let (points, failed) = sweep(true);
    eprintln!("background spills: {points} fault points exercised; {failed} surfaced as errors");
    assert!(failed > points / 2);
}
