//! A big synced group is applied to the root buffer while its fsync runs on the log's sync
//! thread (`wal::Syncer`). Readers must not see it before it is durable: if the fsync fails,
//! no read ever shows any of it, and reopening finds it whole or not at all.

mod common;

use spillway::faults::{self, Op};
use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

fn ordered(opts: Options) -> Options {
    opts.key_order(KeyOrder::Ordered)
}

fn batch(prefix: &str, n: usize) -> WriteBatch {
    let mut b = WriteBatch::new();
    for i in 0..n {
        b.put(format!("{prefix}{i:05}"), format!("value of {prefix}{i}"));
    }
    b
}

fn count_with_prefix(it: spillway::Iter, prefix: &str) -> usize {
    it.map(|r| r.unwrap())
        .filter(|(k, _)| k.starts_with(prefix.as_bytes()))
        .count()
}

#[test]
fn a_big_synced_group_whose_fsync_fails_is_never_seen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), ordered(Options::default())).unwrap();
    db.write(batch("kept", 1000), WriteOptions::SYNC).unwrap();
    assert_eq!(count_with_prefix(db.iter(), "kept"), 1000);

    let failing = faults::fail(dir.path(), Op::Sync, ".log", 0);
    assert!(db.write(batch("lost", 1000), WriteOptions::SYNC).is_err());
    assert!(failing.hits() >= 1);
    drop(failing);
    // Not by a lookup, nor a scan, nor a later snapshot.
    for i in [0, 500, 999] {
        assert_eq!(db.get(format!("lost{i:05}")).unwrap(), None);
    }
    assert_eq!(count_with_prefix(db.iter(), "lost"), 0);
    assert_eq!(count_with_prefix(db.snapshot().iter(), "lost"), 0);
    assert_eq!(db.get("kept00999").unwrap().unwrap(), b"value of kept999");
    // The failed fsync stops writes; what the log holds decides, all or nothing.
    assert!(db.put("after", "x").is_err());
    drop(db);
    let db = Db::open(dir.path(), ordered(Options::default())).unwrap();
    assert_eq!(count_with_prefix(db.iter(), "kept"), 1000);
    let lost = count_with_prefix(db.iter(), "lost");
    assert!(
        lost == 0 || lost == 1000,
        "{lost} of the group's 1000 records"
    );
}

#[test]
fn big_and_small_synced_groups_from_many_threads_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), ordered(common::tiny_options())).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = &db;
            s.spawn(move || {
                for round in 0..20 {
                    let n = if round % 2 == 0 { 800 } else { 3 };
                    db.write(batch(&format!("t{t}r{round:02}k"), n), WriteOptions::SYNC)
                        .unwrap();
                    // Read your own write at once, every record of it.
                    let last = format!("t{t}r{round:02}k{:05}", n - 1);
                    assert!(db.get(&last).unwrap().is_some(), "{last}");
                }
            });
        }
    });
    let expected = 4 * 10 * (800 + 3);
    assert_eq!(db.iter().count(), expected);
    db.close().unwrap();
    let db = Db::open(dir.path(), ordered(common::tiny_options())).unwrap();
    assert_eq!(db.iter().count(), expected);
}
