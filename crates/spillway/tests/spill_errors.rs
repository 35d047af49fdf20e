//! A spill that fails — a full disk while writing lists or the manifest, a failed fsync — never
//! panics and never loses an acknowledged write: reads keep finding everything, and a reopen
//! (with the fault gone) recovers it all from the logs. A spill that lacks space is kept and
//! run again: writes are refused (with the disk-full error) only once the buffer is full
//! again, and go through once space is back. Any other failure is reported on the next write,
//! on `flush` and on `close`, and stops writes until the store is reopened.

mod common;

use std::collections::BTreeMap;

use spillway::faults::{self, Op};
use spillway::{Db, Error, Options, WriteBatch, WriteOptions};

fn options(background_spills: bool) -> Options {
    Options::default()
        .root_buffer_size(64 << 10)
        .node_size(128 << 10)
        .fan_out(4)
        .page_size(512)
        .background_spills(background_spills)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn batch(n: u64, model: &mut Model) -> WriteBatch {
    let mut b = WriteBatch::new();
    for j in 0..40 {
        // Keys repeat across batches, so newer values must win over spilled ones.
        let k = format!("key{}", (n * 40 + j) % 3000).into_bytes();
        let v = format!("value {n} {j} {}", "x".repeat(30)).into_bytes();
        b.put(&k, &v);
        model.insert(k, v);
    }
    b
}

fn check(db: &Db, model: &Model, when: &str) {
    for (k, v) in model {
        let got = db.get(k).unwrap_or_else(|e| panic!("{when}: get: {e}"));
        assert_eq!(
            got.as_ref(),
            Some(v),
            "{when}: {}",
            String::from_utf8_lossy(k)
        );
    }
}

fn is_injected(e: &Error) -> bool {
    e.to_string().contains("injected fault")
}

/// Fill a store (so spills have a tree to go into), arm `op` on files ending in `suffix`, and
/// write until a write is refused. Returns how many writes were acknowledged after the fault.
fn a_failed_spill_loses_nothing(op: Op, suffix: &str, background: bool) -> u64 {
    a_failed_spill_under_writes_loses_nothing(op, suffix, background, true)
}

/// [`a_failed_spill_loses_nothing`], the writes after the fault every other one synced
/// (`synced`) or none: then the first fsync of a log is the retired log's, by the spill,
/// beside its merges.
fn a_failed_spill_under_writes_loses_nothing(
    op: Op,
    suffix: &str,
    background: bool,
    synced: bool,
) -> u64 {
    let ctx = format!("{op:?} on '{suffix}' (background spills: {background}, synced: {synced})");
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(background)).unwrap();
    let mut model = Model::new();
    let mut n = 0;
    for _ in 0..100 {
        db.write(batch(n, &mut model), WriteOptions::NO_SYNC)
            .unwrap();
        n += 1;
    }
    db.flush().unwrap();
    assert!(db.stats().root_spills >= 2, "{ctx}: the tree has data");

    let fault = faults::fail(dir.path(), op, suffix, 0);
    let mut acked_after_fault = 0;
    // The refused write itself is in doubt if it reached the log before its fsync failed:
    // after a reopen it is there entirely or not at all.
    let (refused, in_doubt) = loop {
        let mut pending = model.clone();
        let sync = if synced && n % 2 == 0 {
            WriteOptions::SYNC
        } else {
            WriteOptions::NO_SYNC
        };
        match db.write(batch(n, &mut pending), sync) {
            Ok(()) => model = pending,
            Err(e) => break (e, pending),
        }
        n += 1;
        acked_after_fault += 1;
        // Two buffers' worth at most: the second freeze waits for the failed spill.
        assert!(acked_after_fault < 1000, "{ctx}: no write was refused");
    };
    assert!(fault.hits() > 0, "{ctx}: the fault was never hit");
    assert!(
        is_injected(&refused),
        "{ctx}: the error names its cause: {refused}"
    );
    // Everything acknowledged is still readable, and while the fault holds, writes, `flush`
    // and `close` fail.
    check(&db, &model, &ctx);
    assert!(db.put("late", "write").is_err(), "{ctx}");
    assert!(db.flush().is_err(), "{ctx}");
    let closed = db.close();
    assert!(closed.is_err(), "{ctx}: close reports the failure");
    drop(fault);

    let db = Db::open(dir.path(), options(background)).unwrap();
    let changed = in_doubt.iter().find(|(k, v)| model.get(*k) != Some(*v));
    let (k, v) = changed.expect("a batch changes some key");
    if db.get(k).unwrap().as_ref() == Some(v) {
        model = in_doubt;
    }
    check(&db, &model, &format!("{ctx}, after reopen"));
    db.write(batch(n + 1, &mut model), WriteOptions::SYNC)
        .unwrap();
    db.flush().unwrap();
    check(&db, &model, &format!("{ctx}, after reopen and flush"));
    db.check_tree().unwrap();
    assert_eq!(
        db.files_in_use(),
        common::list_file_names(dir.path()),
        "{ctx}"
    );
    db.close().unwrap();
    acked_after_fault
}

#[test]
fn a_full_disk_while_writing_lists_in_the_background() {
    a_failed_spill_loses_nothing(Op::Write, ".list", true);
}

#[test]
fn a_full_disk_while_creating_lists_in_the_background() {
    a_failed_spill_loses_nothing(Op::Create, ".list", true);
}

#[test]
fn a_failed_manifest_rename_in_the_background() {
    a_failed_spill_loses_nothing(Op::Rename, "MANIFEST", true);
}

#[test]
fn a_failed_list_fsync_in_the_background() {
    a_failed_spill_loses_nothing(Op::Sync, ".list", true);
}

/// With spills on the writer's thread, a spill that fails for lack of space is kept: writes
/// go on into the new buffer, are refused (a full disk) once it is full too, and go through
/// again once space is back — the kept spill runs first.
#[test]
fn an_inline_spill_that_lacks_space_is_retried_once_space_is_back() {
    a_failed_spill_loses_nothing(Op::Write, ".list", false);
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(false)).unwrap();
    let mut model = Model::new();
    let full = faults::fail(dir.path(), Op::Write, ".list", 0);
    let mut n = 0;
    let refused = loop {
        let mut pending = model.clone();
        match db.write(batch(n, &mut pending), WriteOptions::NO_SYNC) {
            Ok(()) => model = pending,
            Err(e) => break e,
        }
        n += 1;
        assert!(n < 1000, "no write was refused");
    };
    assert_eq!(
        refused.io_kind(),
        Some(std::io::ErrorKind::StorageFull),
        "{refused}"
    );
    assert!(
        db.stats().root_spills >= 2,
        "the spill ran again before refusing"
    );
    check(&db, &model, "inline, disk full");
    drop(full);
    for _ in 0..200 {
        db.write(batch(n, &mut model), WriteOptions::NO_SYNC)
            .unwrap();
        n += 1;
    }
    db.flush().unwrap();
    check(&db, &model, "inline, space back");
    db.close().unwrap();
    let db = Db::open(dir.path(), options(false)).unwrap();
    check(&db, &model, "inline, reopened");
    assert_eq!(db.files_in_use(), common::list_file_names(dir.path()));
}

/// A spill that lacks space while many writers go on: they are refused once the buffer is full
/// again, and once space is back, `close` runs the kept spill; nothing acknowledged is lost.
#[test]
fn many_writers_are_refused_on_a_full_disk_and_nothing_acknowledged_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(Db::open(dir.path(), options(true)).unwrap());
    let fault = faults::fail(dir.path(), Op::Write, ".list", 0);
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut acked = Model::new();
                for n in 0.. {
                    let mut pending = Model::new();
                    let mut b = WriteBatch::new();
                    for j in 0..40u64 {
                        let k = format!("t{t}-{}", (n * 40 + j) % 2000).into_bytes();
                        let v = format!("{t} {n} {j}").into_bytes();
                        b.put(&k, &v);
                        pending.insert(k, v);
                    }
                    match db.write(b, WriteOptions::SYNC) {
                        Ok(()) => acked.extend(pending),
                        Err(e) => {
                            assert!(is_injected(&e), "thread {t}: {e}");
                            return acked;
                        }
                    }
                    assert!(n < 5000, "thread {t}: no write was refused");
                }
                unreachable!()
            })
        })
        .collect();
    let mut model = Model::new();
    for t in threads {
        model.extend(t.join().unwrap());
    }
    check(&db, &model, "before close");
    drop(fault); // space is back: close runs the kept spill
    let db = std::sync::Arc::try_unwrap(db).ok().unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), options(true)).unwrap();
    check(&db, &model, "after reopen");
}

/// The log's own fsync fails (the retired log's, synced by the spill or by the next synced
/// write, or the current one's): the write that needed it is refused, nothing before is lost.
#[test]
fn a_failed_log_fsync() {
    a_failed_spill_loses_nothing(Op::Sync, ".log", true);
}

/// The retired log's fsync fails in a spill, on the thread beside its merges (no write asks
/// for an fsync): the failure reaches the writes after it, `flush` and `close`; nothing
/// acknowledged is lost, and the reopened store holds exactly the files its tree uses,
/// inline or in the background.
#[test]
fn a_failed_fsync_of_the_retired_log_beside_a_spill() {
    for background in [true, false] {
        a_failed_spill_under_writes_loses_nothing(Op::Sync, ".log", background, false);
    }
}
