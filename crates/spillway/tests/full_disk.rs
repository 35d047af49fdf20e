//! A full disk: writes are refused with an error that says so, reads go on, and once space is
//! back the store takes writes again — without a reopen and without losing anything
//! acknowledged. The disk is "full" through the file layer's fault injection: every write in
//! the folder fails with `StorageFull`, as `write(2)` does with ENOSPC.

use std::collections::BTreeMap;

use spillway::faults::{self, Op};
use spillway::{Db, Options, WriteBatch, WriteOptions};

fn options() -> Options {
    Options::default().root_buffer_size(1 << 20)
}

fn write(db: &Db, n: u32, model: &mut BTreeMap<String, String>) -> spillway::Result<()> {
    let mut b = WriteBatch::new();
    let mut pending = Vec::new();
    for j in 0..20 {
        let (k, v) = (
            format!("key{}", (n * 20 + j) % 700),
            format!("value {n} {j}"),
        );
        b.put(&k, &v);
        pending.push((k, v));
    }
    let sync = if n.is_multiple_of(2) {
        WriteOptions::SYNC
    } else {
        WriteOptions::NO_SYNC
    };
    db.write(b, sync)?;
    model.extend(pending);
    Ok(())
}

fn check(db: &Db, model: &BTreeMap<String, String>, when: &str) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).unwrap().as_deref(),
            Some(v.as_bytes()),
            "{when}: {k}"
        );
    }
}

#[test]
fn a_full_disk_refuses_writes_keeps_reads_and_takes_writes_again_once_space_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let mut model = BTreeMap::new();
    for n in 0..50 {
        write(&db, n, &mut model).unwrap();
    }

    let full = faults::fail(dir.path(), Op::Write, "", 0);
    for n in 50..70 {
        let e = write(&db, n, &mut model).expect_err("the disk is full");
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
        assert!(e.to_string().contains("no space left"), "{e}");
    }
    assert!(full.hits() >= 20);
    check(&db, &model, "while the disk is full");
    drop(full); // space freed

    for n in 70..120 {
        write(&db, n, &mut model).unwrap();
    }
    check(&db, &model, "after space came back");
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model, "after reopening");
    for n in 120..130 {
        write(&db, n, &mut model).unwrap();
    }
    db.close().unwrap();
}

/// Every file in `dir` with its size: what an open must leave as it was.
fn folder(dir: &std::path::Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect()
}

#[test]
fn a_store_that_ran_out_of_space_opens_and_reads_while_the_disk_is_still_full() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().root_buffer_size(64 << 10);
    // No room for list files: spills are put off, and the logs end up holding more than a
    // buffer's worth of writes, which the next open replays.
    let no_lists = faults::fail(dir.path(), Op::Create, ".list", 0);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut n = 0;
    let refused = loop {
        match write(&db, n, &mut model) {
            Ok(()) => n += 1,
            Err(e) => break e,
        }
    };
    assert_eq!(refused.io_kind(), Some(std::io::ErrorKind::StorageFull));
    assert!(n > 100, "{n} batches before the second buffer filled");
    assert!(db.close().is_err(), "the spill still has no room");
    drop(no_lists);

    // Now nothing can be written at all.
    let full = [Op::Create, Op::Write].map(|op| faults::fail(dir.path(), op, "", 0));
    let before = folder(dir.path());
    for round in 0..3 {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        check(&db, &model, &format!("opened on a full disk ({round})"));
        let stats = db.stats();
        assert!(stats.log_records_replayed >= n as u64, "{stats:?}");
        let e = write(&db, 1000, &mut BTreeMap::new()).expect_err("no room for writes");
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull), "{e}");
        drop(db);
        let reader = Db::open_read_only(dir.path(), opts.clone()).unwrap();
        check(
            &reader,
            &model,
            &format!("read-only on a full disk ({round})"),
        );
        drop(reader);
        assert_eq!(
            folder(dir.path()),
            before,
            "open {round} changed the folder"
        );
    }
    assert!(full.iter().map(|f| f.hits()).sum::<u64>() > 0);
    drop(full);

    // Space is back: the put-off spill runs, and nothing acknowledged was lost.
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for m in n..n + 50 {
        write(&db, m, &mut model).unwrap();
    }
    check(&db, &model, "after space came back");
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db, &model, "after reopening");
    assert!(db.stats().files > 0);
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
}
