//! Overwriting a fixed set of keys must not grow the tree without bound. A full leaf that is
//! mostly superseded records slow-splits (collapsing them away) instead of fast-splitting
//! them into ever more leaves: the leaf count follows the live data, not the bytes written.

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

#[test]
fn overwrites_keep_the_tree_proportional_to_live_data() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .root_buffer_size(4096)
        .node_size(8192)
        .fan_out(4)
        .fast_split_ratio(8)
        .page_size(256);
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

/// The bound an overwrite-only loop keeps list files under, as a multiple of the live data's
/// size: a node is collected once its sketches say that under half its records are live, so it
/// holds at most about twice its live data, plus the lists that arrive before the next look.
const SPACE_BOUND: f64 = 4.0;

/// Keys overwritten over and over: the store's files stay within a small multiple of the live
/// data all along, with filters on or off, hashed or ordered (without filters or in an ordered
/// store there used to be nothing to estimate garbage from, and the tree grew with every byte
/// written). A few hundred keys live in one leaf; a few thousand in a tree of several levels.
/// The sketches' live-key estimate finds the keys.
#[test]
fn overwrite_loops_stay_bounded_with_or_without_filters() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        for bits in [0, 10] {
            overwrite_loop(order, bits, 500, 600);
            overwrite_loop(order, bits, 5000, 60);
        }
    }
}

fn overwrite_loop(order: KeyOrder, bits: u32, keys: u32, rounds: u32) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .root_buffer_size(16 << 10)
        .node_size(64 << 10)
        .fan_out(4)
        .page_size(512)
        .filter_bits_per_key(bits)
        .key_order(order)
        .background_spills(false);
    let db = Db::open(dir.path(), opts).unwrap();
    let value = |k: u32, round: u32| format!("{k:05}:{round:06}:{}", "v".repeat(20));
    let live_bytes = u64::from(keys) * (4 + 34 + 2);
    let mut worst: f64 = 0.0;
    for round in 0..rounds {
        let mut b = WriteBatch::new();
        for k in 0..keys {
            b.put(k.to_be_bytes(), value(k, round));
        }
        db.write(b, WriteOptions::NO_SYNC).unwrap();
        let s = db.stats();
        worst = worst.max(s.disk_bytes as f64 / live_bytes as f64);
    }
    let s = db.stats();
    let what = format!("{order:?}, {bits} bits per key, {keys} keys");
    eprintln!("{what}: worst {worst:.2}× live; {s:?}");
    assert!(
        worst <= SPACE_BOUND,
        "{what}: list files reached {worst:.2}× the live data"
    );
    assert!(s.collections > 0, "{what}: nothing was collected");
    let found = s.live_keys as f64 / f64::from(keys);
    assert!(
        (0.8..=1.2).contains(&found),
        "{what}: {} live keys estimated for {keys}",
        s.live_keys
    );
    let amp = s.space_amplification();
    assert!((0.5..=SPACE_BOUND * 1.5).contains(&amp), "{what}: {amp}");
    for k in 0..keys {
        assert_eq!(
            db.get(k.to_be_bytes()).unwrap(),
            Some(value(k, rounds - 1).into_bytes())
        );
    }
    drop(db);
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{what}: {:?}", report.problems);
}

/// Distinct keys only: nothing is garbage, so nothing may be collected, however many lists
/// the leaves gather (an estimate that took live records for repeats would rewrite leaves
/// for nothing).
#[test]
fn fresh_keys_are_never_collected() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default()
            .root_buffer_size(32 << 10)
            .node_size(1 << 20)
            .fan_out(8)
            .page_size(512)
            .key_order(order)
            .max_lists_per_node(usize::MAX);
        let db = Db::open(dir.path(), opts).unwrap();
        for batch in 0..300u32 {
            let mut b = WriteBatch::new();
            for i in 0..500u32 {
                let k = (batch * 500 + i).wrapping_mul(2_654_435_761);
                b.put(k.to_be_bytes(), [7u8; 24]);
            }
            db.write(b, WriteOptions::NO_SYNC).unwrap();
        }
        db.flush().unwrap();
        let s = db.stats();
        eprintln!("{order:?}: {s:?}");
        assert!(
            s.lists >= 4 * s.leaves,
            "{order:?}: leaves must gather lists: {s:?}"
        );
        assert_eq!(s.collections, 0, "{order:?}: {s:?}");
        let found = s.live_keys as f64 / 150_000.0;
        assert!(
            (0.8..=1.2).contains(&found),
            "{order:?}: {} live keys",
            s.live_keys
        );
    }
}
