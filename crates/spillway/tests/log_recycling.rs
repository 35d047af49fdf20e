//! Logs are recycled (`wal/free_logs.rs`): a new log is written over the file of one the tree
//! already holds, so past its records lie the old log's. Every acknowledged write comes back
//! after a crash and after a power loss in such a log, with mapped appends and zeros ahead on
//! and off (and changed between opens); a read-only open leaves the free logs alone.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use spillway::power_loss;
use spillway::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Batches `from..to` of ten 1000-byte values each, `sync`ed or not, into `model`.
fn write(db: &Db, from: u32, to: u32, sync: bool, model: &mut Model) {
    for b in from..to {
        let mut batch = WriteBatch::new();
        for i in 0..10 {
            let k = format!("key{:05}", (b * 10 + i) % 20_000);
            let v = format!("{b}:{i}:{}", "v".repeat(990)).into_bytes();
            batch.put(&k, &v);
            model.insert(k.into_bytes(), v);
        }
        let how = if sync {
            WriteOptions::SYNC
        } else {
            WriteOptions::default()
        };
        db.write(batch, how).unwrap();
    }
}

fn free_logs(dir: &Path) -> Vec<std::path::PathBuf> {
    common::files_with_extension(dir, "freelog")
}

#[test]
fn logs_written_over_retired_ones_lose_no_acknowledged_write() {
    for (prefill, mapped) in [(true, true), (false, false), (true, false), (false, true)] {
        let ctx = format!("log_prefill {prefill}, mmap_log {mapped}");
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let opts = Options::default()
            .root_buffer_size(256 << 10)
            .log_prefill(prefill)
            .mmap_log(mapped);
        let mut model = Model::new();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        // About twenty buffers, so twenty logs: all but the first few written over others.
        write(&db, 0, 500, true, &mut model);
        let s = db.stats();
        assert!(s.logs_recycled >= 10, "{ctx}: {s:?}");
        // (None while the last freeze has taken the one the spill before freed.)
        let free = free_logs(dir.path()).len();
        assert!(free <= 2, "{ctx}: {free} free logs");

        // A crash while writing into a recycled log: its old records lie past its end.
        write(&db, 500, 520, true, &mut model);
        write(&db, 520, 530, false, &mut model);
        tracked.crash();
        drop(db);
        tracked.restart();
        let changed = opts.clone().log_prefill(!prefill).mmap_log(!mapped);
        let db = Db::open(dir.path(), changed.clone()).unwrap();
        assert_eq!(db.stats().log_records_dropped, 0, "{ctx}");
        assert_eq!(common::contents(&db), model, "{ctx}: after a crash");
        write(&db, 530, 700, true, &mut model);
        db.close().unwrap();

        // A read-only open reads around the free logs and leaves them.
        let before = free_logs(dir.path());
        assert!(!before.is_empty(), "{ctx}: the spills retired logs");
        let reader = Db::open_read_only(dir.path(), opts.clone()).unwrap();
        assert_eq!(common::contents(&reader), model, "{ctx}: read-only");
        drop(reader);
        assert_eq!(free_logs(dir.path()), before, "{ctx}");

        // A power loss: synced writes survive, unsynced ones after them may go.
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        write(&db, 700, 900, true, &mut model);
        let synced = model.clone();
        let mut unsynced = model.clone();
        write(&db, 900, 930, false, &mut unsynced);
        tracked.power_loss();
        drop(db);
        tracked.restart();
        let db = Db::open(dir.path(), changed).unwrap();
        let got = common::contents(&db);
        assert!(
            got == synced || got == unsynced,
            "{ctx}: after a power loss"
        );
        db.check_tree().unwrap();
        db.close().unwrap();
        drop(tracked);
    }
}
