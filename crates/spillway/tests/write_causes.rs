//! Write amplification by cause (`Stats::*_bytes_written`): every list file is counted once,
//! under what wrote it, and the parts add up to what the store wrote to disk.

use spillway::{Db, KeyOrder, Options, Stats, WriteBatch, WriteOptions};

/// Bytes of the list files in `dir` now.
fn list_file_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".list"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Every part of `disk_bytes_written`.
fn parts(s: &Stats) -> u64 {
    s.wal_bytes_written
        + s.log_prefill_bytes_written
        + lists_written(s)
        + s.selector_bytes_written
        + s.metadata_bytes_written
}

fn lists_written(s: &Stats) -> u64 {
    s.root_spill_bytes_written
        + s.node_spill_bytes_written
        + s.leaf_rewrite_bytes_written
        + s.list_merge_bytes_written
}

#[test]
fn a_first_spill_counts_the_lists_it_wrote_as_root_spills() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        // Spills on the writer's thread: nothing writes once `flush` returns.
        let opts = Options::default().key_order(order).background_spills(false);
        let db = Db::open(dir.path(), opts).unwrap();
        let mut batch = WriteBatch::new();
        for i in 0..20_000u32 {
            batch.put(format!("key{i:06}"), i.to_le_bytes());
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
        let before = db.stats();
        assert_eq!(lists_written(&before), 0, "{order:?}: no spill yet");
        db.flush().unwrap();
        let s = db.stats();
        assert_eq!(s.root_spills, 1);
        // One spill into an empty tree: the only lists there are, and nothing else wrote any.
        assert_eq!(
            s.root_spill_bytes_written,
            list_file_bytes(dir.path()),
            "{order:?}"
        );
        assert_eq!(lists_written(&s), s.root_spill_bytes_written, "{order:?}");
        assert!(s.metadata_bytes_written > 0, "a manifest was written");
        assert_eq!(parts(&s), s.disk_bytes_written, "{order:?}: {s:?}");
    }
}

#[test]
fn every_cause_is_counted_when_it_writes_and_the_causes_add_up() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        // Small nodes and buffers so that a few thousand writes make every kind of rewrite:
        // internal nodes spill (fan-out 3), leaves slow-split (after two fast-splits), nodes
        // merge their newest lists (at 3 lists), and hashed stores save selector tiers.
        let opts = Options::default()
            .key_order(order)
            .root_buffer_size(8 << 10)
            .node_size(16 << 10)
            .fan_out(3)
            .fast_split_ratio(2)
            .max_lists_per_node(3)
            .page_size(256)
            .background_spills(false);
        let db = Db::open(dir.path(), opts).unwrap();
        for i in 0..12_000u32 {
            // Keys again and again: leaves fill with repeats, which collections rewrite.
            db.put(format!("k{:05}", (i * 7919) % 5_000), [b'v'; 24])
                .unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        let pairs = [
            ("root spills", s.root_spills, s.root_spill_bytes_written),
            ("node spills", s.node_spills, s.node_spill_bytes_written),
            (
                "leaf rewrites",
                s.slow_splits + s.collections,
                s.leaf_rewrite_bytes_written,
            ),
            ("list merges", s.list_merges, s.list_merge_bytes_written),
        ];
        for (what, events, bytes) in pairs {
            assert!(events > 0, "{order:?}: no {what} happened: {s:?}");
            assert!(bytes > 0, "{order:?}: {what} wrote nothing: {s:?}");
        }
        if order == KeyOrder::Hashed {
            assert!(s.selector_bytes_written > 0, "{s:?}");
        }
        assert_eq!(parts(&s), s.disk_bytes_written, "{order:?}: {s:?}");
    }
}

#[test]
fn zeros_written_ahead_of_a_synced_log_are_counted_apart_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    // Synced writes close together: the log gets zeros ahead of its end (`wal::prefill`).
    for i in 0..300u32 {
        let mut batch = WriteBatch::new();
        batch.put(format!("key{i:06}"), [b'v'; 100]);
        db.write(batch, WriteOptions::SYNC).unwrap();
    }
    // The zeros are written by a thread of their own, which stops once it is far enough
    // ahead: wait until it wrote some and two readings agree (a reading while it writes may
    // catch one counter bumped and not the other).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let s = loop {
        let (a, b) = (db.stats(), db.stats());
        let settled = a.log_prefill_bytes_written > 0 && a == b;
        if settled || std::time::Instant::now() > deadline {
            break a;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(s.log_prefill_bytes_written > 0, "{s:?}");
    assert_eq!(parts(&s), s.disk_bytes_written, "{s:?}");
}
