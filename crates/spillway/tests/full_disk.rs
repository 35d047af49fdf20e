//! A full disk: writes are refused with an error that says so, reads go on, and once space is
//! back the store takes writes again — without a reopen and without losing anything
//! acknowledged. The disk is "full" through the file layer's fault injection: every write in
//! the folder fails with `StorageFull`, as `write(2)` does with ENOSPC.

use std::collections::BTreeMap;

use spillway::faults::{self, Op};
use spillway::{Db, Options, WriteBatch, WriteOptions};

fn options() -> Options {
    Options {
        root_buffer_size: 1 << 20, // no spill during the test: the log takes every write
        ..Options::default()
    }
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
