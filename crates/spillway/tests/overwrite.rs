//! Overwriting a fixed set of keys must not grow the tree without bound. A full leaf that is
//! mostly superseded records slow-splits (collapsing them away) instead of fast-splitting
//! them into ever more leaves: the leaf count follows the live data, not the bytes written.

use spillway::{Db, Options, WriteBatch, WriteOptions};

#[test]
fn overwrites_keep_the_tree_proportional_to_live_data() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        root_buffer_size: 4096,
        node_size: 8192,
        fan_out: 4,
        fast_split_ratio: 8,
        page_size: 256,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let keys = 1000u32;
    let value = |k: u32, round: u32| format!("{k}:{round}:{}", "v".repeat(40));
    let live_bytes = u64::from(keys) * 50;
    let rounds = 60;
    for round in 0..rounds {
        let mut b = WriteBatch::new();
        for k in 0..keys {
            b.put(k.to_le_bytes(), value(k, round));
        }
        db.write(b, WriteOptions::NO_SYNC).unwrap();
    }
    for k in 0..keys {
        assert_eq!(
            db.get(k.to_le_bytes()).unwrap(),
            Some(value(k, rounds - 1).into_bytes())
        );
    }
    let s = db.stats();
    eprintln!("{s:?}");
    // 60x the live data was written. Leaves hold at least a quarter of a node of live data
    // each after a slow-split, so a tree that tracks live data has at most a few times
    // live/node leaves; one that tracks bytes written would have hundreds.
    let bound = 4 * live_bytes / 8192 + 8;
    assert!(
        s.leaves <= bound,
        "{} leaves for {live_bytes} live bytes (bound {bound})",
        s.leaves
    );
    assert!(
        s.disk_bytes <= 8 * live_bytes,
        "{} bytes on disk for {live_bytes} live",
        s.disk_bytes
    );
    assert!(s.slow_splits > 0);
}
