//! Upkeep (`tree::upkeep`): a spill leaves the nodes it fills below twice their capacity to
//! steps that follow it, which a writer whose buffer fills may cut short. Whatever is left
//! for later, and however often, every acknowledged write reads back as the model has it, no
//! node grows past twice `node_size`, and a reopen — with node sizes at both ends — goes on
//! from there.

use std::collections::BTreeMap;

use proptest::prelude::*;
use spillway::{Db, KeyOrder, Options};

mod common;

fn key(i: u32) -> Vec<u8> {
    // A third of the keys share their first 8 bytes: one route in an ordered store.
    match i % 3 {
        0 => format!("samepfx-{i:06}"),
        _ => format!("k{i:07}"),
    }
    .into_bytes()
}

fn options(order: KeyOrder, node_size: usize, background: bool) -> Options {
    Options::default()
        .root_buffer_size(4 << 10)
        .node_size(node_size)
        .fan_out(3)
        .fast_split_ratio(2)
        .page_size(256)
        .key_order(order)
        .merge_operator(common::comma_append())
        .background_spills(background)
}

/// The bound upkeep keeps: a node reaching twice its capacity is settled by the spill itself.
fn assert_bounded(db: &Db, node_size: usize, what: &str) {
    let s = db.stats();
    assert!(
        s.fullest_node_bytes < 2 * node_size as u64,
        "{what}: a node of {} bytes, node_size {node_size}",
        s.fullest_node_bytes
    );
}

/// Internal-node spills and leaf splits, by upkeep or by spills.
fn tree_work(s: &spillway::Stats) -> u64 {
    s.node_spills + s.fast_splits + s.slow_splits
}

/// Writes `(key, value length or None for a delete, merge?)` into the store and the model.
fn write_all(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    writes: &[(u32, Option<usize>, bool)],
) {
    for (n, &(k, len, merge)) in writes.iter().enumerate() {
        let k = key(k);
        match (len, merge) {
            (Some(len), false) => {
                let v = vec![b'a' + (n % 26) as u8; len];
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            (None, _) => {
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            (Some(_), true) => {
                db.merge(&k, b"+").unwrap();
                // The operator puts its separator after any value, an empty one too.
                match model.get_mut(&k) {
                    Some(v) => v.extend_from_slice(b",+"),
                    None => {
                        model.insert(k, b"+".to_vec());
                    }
                }
            }
        }
    }
}

fn writes(
    keys: u32,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = Vec<(u32, Option<usize>, bool)>> {
    proptest::collection::vec(
        (
            0..keys,
            prop_oneof![6 => (1usize..200).prop_map(Some), 1 => Just(None)],
            proptest::bool::weighted(0.05),
        ),
        n,
    )
}

/// Inline spills: upkeep runs to the end of what is due after every spill, so its work is
/// the same every run; it settles nodes (the spills leave them), and the bound holds after
/// every write.
fn run_inline(order: KeyOrder, writes: &[(u32, Option<usize>, bool)]) {
    let node_size = 16 << 10;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(order, node_size, false)).unwrap();
    let mut model = BTreeMap::new();
    for chunk in writes.chunks(50) {
        write_all(&db, &mut model, chunk);
        assert_bounded(&db, node_size, "inline");
    }
    db.flush().unwrap();
    db.check_tree().unwrap();
    let s = db.stats();
    assert!(
        s.upkeep_settles <= s.node_spills + s.fast_splits + s.slow_splits,
        "each settle is a node spill or a split"
    );
    common::assert_same(&db, &model, "inline");
    db.close().unwrap();
    // Reopened with nodes at the small end and at twice the size: the store reads the same,
    // and the next spills' upkeep brings every node it reaches within the new bound.
    for node_size in [1024, 32 << 10] {
        let db = Db::open(dir.path(), options(order, node_size, false)).unwrap();
        common::assert_same(&db, &model, "reopened");
        write_all(&db, &mut model, &writes[..writes.len().min(400)]);
        db.flush().unwrap();
        db.check_tree().unwrap();
        common::assert_same(&db, &model, "reopened and written");
        db.close().unwrap();
    }
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn hashed_upkeep_reads_back_and_stays_bounded(writes in writes(3000, 1500..3000)) {
        run_inline(KeyOrder::Hashed, &writes);
    }

    #[test]
    fn ordered_upkeep_reads_back_and_stays_bounded(writes in writes(3000, 1500..3000)) {
        run_inline(KeyOrder::Ordered, &writes);
    }
}

/// Evenly spread keys fill the nodes of a level together: the spills leave them to upkeep,
/// which settles them, and inline the tree ends with no node at its capacity but those a
/// spill's upkeep could not yet take (lists it wrote itself).
#[test]
fn nodes_filled_together_are_settled_by_upkeep() {
    let node_size = 16 << 10;
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(KeyOrder::Hashed, node_size, false)).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = common::Rng(7);
    for _ in 0..20_000 {
        let k = (rng.next_u64() % 50_000) as u32;
        write_all(&db, &mut model, &[(k, Some(40), false)]);
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.upkeep_settles > 0, "no node was left to upkeep");
    assert!(s.height >= 2, "the tree grew internal nodes: {}", s.height);
    assert_bounded(&db, node_size, "evenly spread");
    common::assert_same(&db, &model, "evenly spread");
}

/// Background spills: a writer that fills its buffer while upkeep runs takes the frozen
/// buffer's room and stops it; whatever upkeep leaves, nothing is lost, the bound holds, and
/// the tree still spills and splits.
#[test]
fn a_writer_cuts_upkeep_short_and_loses_nothing() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let node_size = 16 << 10;
        let dir = tempfile::tempdir().unwrap();
        let mut db = Db::open(dir.path(), options(order, node_size, true)).unwrap();
        let mut model = BTreeMap::new();
        let mut rng = common::Rng(11);
        // Whether upkeep gets to settle a node before the writer stops it is timing: what
        // is counted is the tree's work in all, upkeep's or the spills' own at twice the size.
        let mut work = 0;
        for round in 0..60 {
            let batch: Vec<(u32, Option<usize>, bool)> = (0..500)
                .map(|_| {
                    let k = (rng.next_u64() % 40_000) as u32;
                    let r = rng.next_u64() % 20;
                    (k, (r != 0).then_some(16 + (r as usize) * 5), r == 1)
                })
                .collect();
            write_all(&db, &mut model, &batch);
            assert_bounded(&db, node_size, "background");
            // Stalls behind upkeep are a part of all stalls, their longest no longer.
            let s = db.stats();
            assert!(
                s.upkeep_stalls <= s.stalls,
                "{} of {}",
                s.upkeep_stalls,
                s.stalls
            );
            assert!(s.max_upkeep_stall_micros <= s.max_stall_micros);
            assert!(s.upkeep_stalls > 0 || s.max_upkeep_stall_micros == 0);
            if round % 20 == 19 {
                // Reopen mid-way: upkeep left undone is taken on by the next spills.
                work += tree_work(&db.stats());
                db.close().unwrap();
                db = Db::open(dir.path(), options(order, node_size, true)).unwrap();
                common::assert_same(&db, &model, "background, reopened");
            }
        }
        db.flush().unwrap();
        db.check_tree().unwrap();
        common::assert_same(&db, &model, "background");
        work += tree_work(&db.stats());
        assert!(work > 0, "nothing spilled or split");
        db.close().unwrap();
    }
}

/// Under a budget that sends the biggest leaves' selectors to disk, spills leave the
/// rewrites of their blocks to upkeep, and writers with background spills cut it short:
/// every key is still found, and once upkeep has run to its end the metadata is within the
/// budget again.
#[test]
fn selector_blocks_rewritten_in_upkeep_answer_alike() {
    use spillway::{WriteBatch, WriteOptions, MIN_MEMORY_BUDGET};
    let opts = common::selector_options()
        .memory_budget(MIN_MEMORY_BUDGET)
        .filter_bits_per_key(24);
    let k = |i: u64| format!("k{i:09}").into_bytes();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = common::Rng(5);
    // A million keys, then a third of them again.
    for round in 0..2u64 {
        for chunk in 0..1000u64 {
            let mut batch = WriteBatch::new();
            for i in chunk * 1000..(chunk + 1) * 1000 {
                if round == 1 && i % 3 != 0 {
                    continue;
                }
                let v = rng.next_u64().to_le_bytes();
                batch.put(k(i), v);
                model.insert(k(i), v.to_vec());
            }
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
        }
    }
    for (key, v) in model.iter().step_by(11) {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(v));
    }
    db.flush().unwrap();
    assert!(
        db.stats().selector_disk_bytes > 0,
        "no selector left memory"
    );
    common::assert_same(&db, &model, "selectors on disk");
    db.close().unwrap();
    // Reopened with spills on the writer's thread, a flush runs upkeep to its end: every
    // block left to it is rewritten, and the metadata is within the budget again.
    let db = Db::open(dir.path(), opts.background_spills(false)).unwrap();
    db.put(k(0), b"last").unwrap();
    model.insert(k(0), b"last".to_vec());
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.selector_disk_bytes > 0, "no selector left memory");
    assert!(
        s.metadata_bytes() <= MIN_MEMORY_BUDGET as u64,
        "{} bytes",
        s.metadata_bytes()
    );
    for (key, v) in model.iter().step_by(7) {
        assert_eq!(db.get(key).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
