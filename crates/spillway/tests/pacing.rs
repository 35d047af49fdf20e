//! Writes paced through spills (`db::pacing`): a writer that outruns the spill thread waits
//! in short steps while the spill runs instead of all at once when the buffer is full — and
//! loses nothing, and never waits longer than the pace allows for one step.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use spillway::{CompactionFilter, Db, Decision, Options, WriteBatch, WriteOptions};

/// Makes every spill slow: a millisecond for each value of a `slow:` key it rewrites.
struct Slow;

impl CompactionFilter for Slow {
    fn name(&self) -> &str {
        "slow"
    }

    fn filter(&self, key: &[u8], _value: &[u8]) -> Decision {
        if key.starts_with(b"slow:") {
            std::thread::sleep(Duration::from_millis(1));
        }
        Decision::Keep
    }
}

/// Loads 2,000 batches of ~4 KiB (one slow key each: each spill of the 256 KiB buffer takes
/// tens of milliseconds, a batch microseconds) into a store of `order` with `pace` on or off;
/// checks every record, reopened too, and returns the writer's stats.
fn load(order: spillway::KeyOrder, pace: bool) -> spillway::Stats {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .root_buffer_size(256 << 10)
        .node_size(2 << 20)
        .fan_out(8)
        .key_order(Some(order))
        .pace_writes(pace)
        .compaction_filter(Arc::new(Slow));
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    for b in 0..2_000u64 {
        let mut batch = WriteBatch::new();
        for i in 0..40u64 {
            let key = format!("key:{:06}", (b * 40 + i) % 50_000).into_bytes();
            let value = format!("value {b} {i} {}", "x".repeat(60)).into_bytes();
            batch.put(&key, &value);
            model.insert(key, value);
        }
        let slow = format!("slow:{b:06}").into_bytes();
        batch.put(&slow, b"s");
        model.insert(slow, b"s".to_vec());
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
    let s = db.stats();
    assert!(s.root_spills > 10, "{order:?}: {s:?}");
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{order:?}");
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(common::contents(&db), model, "{order:?}: reopened");
    db.check_tree().unwrap();
    s
}

#[test]
fn a_writer_outrunning_the_spills_is_paced_and_loses_nothing() {
    for order in [spillway::KeyOrder::Hashed, spillway::KeyOrder::Ordered] {
        let s = load(order, true);
        assert!(
            s.paced_writes > 0,
            "{order:?}: the writer outran every spill: {s:?}"
        );
        assert!(s.max_pace_micros <= 50_000, "{order:?}: {s:?}");
        assert!(s.pace_micros >= s.max_pace_micros, "{order:?}: {s:?}");
        assert!(
            s.pace_micros <= s.paced_writes * s.max_pace_micros,
            "{order:?}: {s:?}"
        );
    }
}

#[test]
fn with_pacing_off_the_writer_waits_only_for_a_full_buffer() {
    for order in [spillway::KeyOrder::Hashed, spillway::KeyOrder::Ordered] {
        let s = load(order, false);
        assert_eq!(s.paced_writes, 0, "{order:?}: {s:?}");
        assert_eq!(s.pace_micros, 0, "{order:?}: {s:?}");
        assert!(
            s.stalls > 0,
            "{order:?}: unpaced, the writer fills the buffer while the slow spills run: {s:?}"
        );
    }
}

/// A stall is a write that waits for the running spill because its buffer is full: a flush
/// (or a close) waits for the spill by its nature, and is not counted as one.
#[test]
fn a_flush_that_waits_for_a_spill_is_not_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    // Leaves far smaller than the buffer: each spill leaves them to slow-split in upkeep, where
    // the filter makes each of their slow keys cost a millisecond.
    let opts = Options::default()
        .root_buffer_size(256 << 10)
        .node_size(32 << 10)
        .fan_out(4)
        .fast_split_ratio(1)
        .pace_writes(false)
        .compaction_filter(Arc::new(Slow));
    let db = Db::open(dir.path(), opts).unwrap();
    // Batches of 1,000 records of 100 bytes, one in twenty slow: the third fills the buffer.
    let mut next = 0u64;
    let mut write_buffer = || {
        for _ in 0..3 {
            let mut batch = WriteBatch::new();
            for i in 0..1000 {
                let kind = if i % 20 == 0 { "slow" } else { "key" };
                batch.put(format!("{kind}:{next:08}").as_bytes(), [b'v'; 100]);
                next += 1;
            }
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
        }
    };
    for round in 0..5 {
        write_buffer();
        let before = db.stats();
        db.flush().unwrap();
        let s = db.stats();
        assert!(s.root_spills > before.root_spills, "{round}: {s:?}");
        assert_eq!(
            s.stalls, before.stalls,
            "{round}: the flush's wait was a stall: {s:?}"
        );
    }
    // Two buffers' worth: the second fills while the first's spill runs, and the write that
    // fills it waits, a stall.
    let before = db.stats();
    write_buffer();
    write_buffer();
    let s = db.stats();
    assert!(s.stalls > before.stalls, "{s:?}");
    db.close().unwrap();
}
