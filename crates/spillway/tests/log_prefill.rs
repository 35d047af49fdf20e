//! `Options::log_prefill`: a log that takes synced writes keeps zeros written ahead of its end
//! (`wal/prefill.rs`), or, turned off, grows with its records only. Either way every write
//! comes back, after a clean close and after a crash (the store dropped unclosed, its zeros
//! left in place).

mod common;

use spillway::power_loss;
use spillway::{Db, Options, WriteBatch, WriteOptions};

/// Bytes written to disk beyond the log's own: the zeros (and the manifest's few).
fn zeros_written(db: &Db) -> u64 {
    let s = db.stats();
    s.disk_bytes_written - s.wal_bytes_written
}

fn write_synced(db: &Db, from: u32, to: u32) {
    for i in from..to {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:05}"), vec![b'v'; 1000]);
        db.write(b, WriteOptions::SYNC).unwrap();
    }
}

#[test]
fn a_synced_log_keeps_zeros_ahead_only_with_log_prefill() {
    for prefill in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let opts = Options::default().log_prefill(prefill);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        write_synced(&db, 0, 200);
        // The zeros are written by a thread of their own: wait for them, if they come.
        let mut zeros_ahead = false;
        for _ in 0..1000 {
            zeros_ahead = zeros_written(&db) >= 4 << 20;
            if zeros_ahead || !prefill {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(zeros_ahead, prefill, "log_prefill {prefill}");
        if !prefill {
            assert!(zeros_written(&db) < 1 << 20);
        }
        // A crash: the process dies (nothing more is written), the zeros stay.
        tracked.crash();
        drop(db);
        tracked.restart();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        for i in [0, 100, 199] {
            assert_eq!(db.get(format!("key{i:05}")).unwrap().unwrap(), [b'v'; 1000]);
        }
        write_synced(&db, 200, 300);
        db.close().unwrap();
        // A clean close cuts the zeros: the log ends with its records.
        assert!(
            common::log_file_bytes(dir.path()) < 1 << 20,
            "log_prefill {prefill}"
        );
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(db.get("key00299").unwrap().unwrap(), [b'v'; 1000]);
        assert_eq!(db.stats().log_records_dropped, 0);
        drop(db);
        drop(tracked);
    }
}
