//! `Options::mmap_log`: unsynced writes are copied into the log through a writable map of it
//! (`io/append_map.rs`), or appended by `write`. Either way each one is in the log once
//! acknowledged: a process crash loses none, and a clean close leaves the log ending with its
//! records.

mod common;

use spillway::power_loss;
use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

#[test]
fn unsynced_writes_through_the_map_or_not_survive_a_crash() {
    for mmap_log in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let opts = Options::default()
            .mmap_log(mmap_log)
            .key_order(KeyOrder::Ordered);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("key{i:06}"), format!("value {i}")).unwrap();
        }
        // A big batch goes by `write` either way, between small ones.
        let mut big = WriteBatch::new();
        for i in 0..2_000u32 {
            big.put(format!("big{i:06}"), [7u8; 100]);
        }
        db.write(big, WriteOptions::NO_SYNC).unwrap();
        db.delete("key000000").unwrap();
        // The map sets space aside past the records; `write` does not.
        let records = db.stats().wal_bytes_written;
        assert_eq!(
            common::log_file_bytes(dir.path()) > records,
            mmap_log,
            "mmap_log {mmap_log}"
        );

        // The process dies: nothing more is written, and nothing was synced.
        tracked.crash();
        drop(db);
        tracked.restart();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        assert_eq!(db.get("key000000").unwrap(), None);
        assert_eq!(db.get("key019999").unwrap().unwrap(), b"value 19999");
        assert_eq!(db.range("big".."bih").unwrap().count(), 2_000);
        assert_eq!(db.range("key".."kez").unwrap().count(), 19_999);
        db.put("after", "the crash").unwrap();
        db.close().unwrap();
        // A clean close cuts the log to its records.
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(db.get("after").unwrap().unwrap(), b"the crash");
        assert_eq!(db.stats().log_records_dropped, 0);
        drop(db);
        assert!(common::log_file_bytes(dir.path()) < 4 << 20);
        drop(tracked);
    }
}
