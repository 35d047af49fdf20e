//! The expiry sweep (`tree/sweep.rs`) keeps the tree's shape: found by
//! `expiry_power_loss`, whose `check_tree` after a flush failed with "5 children over fan-out
//! 4" — with no power loss needed.
//!
//! A spill sweeps the tree for mostly dead leaves (expired values, and the bytes of their files
//! no view covers) after it has settled the nodes it wrote and grown the root. A collected
//! leaf is rewritten by a slow-split, which makes two leaves of it when what survives is more
//! than half a node; the sweep puts both under the leaf's parent and nothing splits a parent
//! left with more children than the fan-out — neither the root (its growth loop in
//! `Spiller::spill_buffer` ran before the sweep) nor an internal node the sweep went down
//! into. The manifest records that tree; the next spill that settles the node repairs it.

mod common;

use std::sync::Arc;

use common::expiring::time;
use spillway::{Db, KeyOrder, ManualClock, WriteBatch, WriteOptions};

const T0: u64 = 1_800_000_000_000;

/// The smallest case a search of a few thousand random ones found: one leaf of values that
/// expire, then, once they have, permanent values after them. The second spill leaves four
/// leaves under the root (fast- and slow-splits of the one leaf); its sweep then collects two
/// of them — one mostly expired, rewritten into one leaf, and one charged the part of a file
/// it shares with a rewritten fast-split sibling (dead share about 0.66, measured with a print
/// in a copy of the engine), rewritten into two: five children under a root of fan-out 4.
#[test]
fn a_sweep_that_splits_a_collected_leaf_keeps_the_fan_out() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(time(T0)));
    let opts = common::tiny_options() // fan-out 4, 8 KiB nodes, fast-split ratio 2
        .root_buffer_size(16 << 10)
        .background_spills(false)
        .key_order(KeyOrder::Ordered)
        .clock(clock.clone());
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut b = WriteBatch::new();
    for i in 0..44 {
        b.put_expiring(format!("b{i:04}"), [b'v'; 150], time(T0 + 100));
    }
    db.write(b, WriteOptions::NO_SYNC).unwrap();
    db.flush().unwrap();
    db.check_tree().unwrap();

    clock.set(time(T0 + 200)); // the b keys have expired
    let mut b = WriteBatch::new();
    for i in 0..60 {
        b.put(format!("d{i:04}"), [b'v'; 150]);
    }
    db.write(b, WriteOptions::NO_SYNC).unwrap();
    db.flush().unwrap();

    // The data is right all along; the shape is not.
    let keys: Vec<Vec<u8>> = db.iter().map(|r| r.unwrap().0).collect();
    let want: Vec<Vec<u8>> = (0..60).map(|i| format!("d{i:04}").into_bytes()).collect();
    assert_eq!(keys, want);
    let s = db.stats();
    let shape = format!(
        "height {}, {} leaves, {} collections, {} slow-splits",
        s.height, s.leaves, s.collections, s.slow_splits
    );
    db.check_tree()
        .unwrap_or_else(|e| panic!("after the sweep: {e} ({shape})"));
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    db.check_tree()
        .unwrap_or_else(|e| panic!("reopened: {e} ({shape})"));
    db.close().unwrap();
}
