//! Spillway against a `BTreeMap` model: random puts, deletes, merges (appends, which the model
//! folds the same way), batches and gets on a store with
//! tiny buffers and nodes, so that root spills, internal-node spills, fast- and slow-splits and
//! tree growth all happen many times, with reopens at random points. After every reopen the
//! whole key space is compared, the tree's invariants are checked, and the files on disk must
//! be exactly the files the tree uses (no orphan, nothing missing).

use std::collections::BTreeMap;

use proptest::prelude::*;
use spillway::{Db, KeyOrder, Options, Stats};

fn tiny() -> Options {
    common::minimal_options().merge_operator(common::comma_append())
}

fn key(i: u16) -> Vec<u8> {
    // Varied lengths, shared prefixes.
    format!("key-{i}-{}", "x".repeat(usize::from(i % 5))).into_bytes()
}

fn value(i: u16, seed: u8, len: usize) -> Vec<u8> {
    let mut v = format!("{i}:{seed}:").into_bytes();
    v.resize(len.max(v.len()), seed);
    v
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u8, usize),
    Delete(u16),
    Merge(u16, u8),
    Batch(Vec<(u16, W)>),
    Get(u16),
    Reopen,
}

/// A write in a batch.
#[derive(Clone, Debug)]
enum W {
    Put(u8, usize),
    Delete,
    Merge(u8),
}

/// A merge operand: short, and telling which write it was.
fn operand(seed: u8) -> Vec<u8> {
    format!("+{seed}").into_bytes()
}

fn write(k: u16, w: &W) -> (Vec<u8>, common::Write) {
    let w = match *w {
        W::Put(s, l) => common::Write::Put(value(k, s, l)),
        W::Delete => common::Write::Delete,
        W::Merge(s) => common::Write::Merge(operand(s)),
    };
    (key(k), w)
}

const KEYS: u16 = 300;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..KEYS, any::<u8>(), 0usize..200).prop_map(|(k, s, l)| Op::Put(k, s, l)),
        3 => (0..KEYS).prop_map(Op::Delete),
        // Merges go to a few hot keys mostly, so that operands pile up on them.
        6 => (prop_oneof![0..8u16, 0..KEYS], any::<u8>()).prop_map(|(k, s)| Op::Merge(k, s)),
        3 => proptest::collection::vec((0..KEYS, prop_oneof![
                6 => (any::<u8>(), 0usize..100).prop_map(|(s, l)| W::Put(s, l)),
                2 => Just(W::Delete),
                3 => any::<u8>().prop_map(W::Merge),
            ]), 1..30)
            .prop_map(Op::Batch),
        5 => (0..KEYS).prop_map(Op::Get),
        1 => Just(Op::Reopen),
    ]
}

mod common;

/// Compare every key (while a background spill may be running), then let spills finish and
/// compare the tree's invariants and the files on disk.
fn check_all(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for i in 0..KEYS {
        let k = key(i);
        assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "key {i}");
    }
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let got = db.multi_get(&keys).unwrap();
    let want: Vec<Option<Vec<u8>>> = keys.iter().map(|k| model.get(k).cloned()).collect();
    assert_eq!(got, want);
    // A full scan: in key order in an ordered store, every pair once in a hashed one.
    let mut all: Vec<(Vec<u8>, Vec<u8>)> = db.iter().collect::<spillway::Result<_>>().unwrap();
    if db.key_order() == KeyOrder::Hashed {
        let n = all.len();
        all.sort();
        all.dedup_by(|a, b| a.0 == b.0);
        assert_eq!(all.len(), n, "a key returned twice");
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all, want);
    db.flush().unwrap();
    db.check_tree().unwrap();
    assert_eq!(db.files_in_use(), common::list_file_names(db.path()));
}

/// Run `ops` against a fresh store and the model; returns the summed counters.
fn run(ops: &[Op], opts: Options) -> Stats {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut total = Stats::default();
    for op in ops {
        match op {
            Op::Put(k, s, l) => {
                common::write_one(&db, &mut model, key(*k), Some(value(*k, *s, *l)))
            }
            Op::Delete(k) => common::write_one(&db, &mut model, key(*k), None),
            Op::Merge(k, s) => {
                db.merge(key(*k), operand(*s)).unwrap();
                common::model_write(&mut model, key(*k), common::Write::Merge(operand(*s)));
            }
            Op::Batch(entries) => {
                common::write_mixed(&db, &mut model, entries.iter().map(|(k, w)| write(*k, w)))
            }
            Op::Get(k) => assert_eq!(
                db.get(key(*k)).unwrap(),
                model.get(&key(*k)).cloned(),
                "get {k}"
            ),
            Op::Reopen => {
                common::add_tree_work(&mut total, &db.stats());
                db.close().unwrap();
                db = Db::open(dir.path(), opts.clone()).unwrap();
                check_all(&db, &model);
            }
        }
    }
    check_all(&db, &model);
    common::add_tree_work(&mut total, &db.stats());
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check_all(&db, &model);
    total
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn matches_a_btreemap(ops in proptest::collection::vec(op(), 1..400)) {
        run(&ops, tiny());
    }

    #[test]
    fn matches_a_btreemap_ordered(ops in proptest::collection::vec(op(), 1..400)) {
        run(&ops, tiny().key_order(KeyOrder::Ordered));
    }

    #[test]
    fn matches_a_btreemap_with_merged_lists(ops in proptest::collection::vec(op(), 1..400),
                                            ordered in any::<bool>()) {
        let key_order = if ordered { KeyOrder::Ordered } else { KeyOrder::Hashed };
        // Nodes that take several spills to fill, so that they gather lists to merge.
        run(&ops, tiny().key_order(key_order).max_lists_per_node(2).node_size(8192));
    }

    #[test]
    fn matches_a_btreemap_without_partial_merges(ops in proptest::collection::vec(op(), 1..400),
                                                 ordered in any::<bool>()) {
        // Operands stack in the buffer and in lists; reads fold them one by one.
        let key_order = if ordered { KeyOrder::Ordered } else { KeyOrder::Hashed };
        let merge_operator: Option<std::sync::Arc<dyn spillway::MergeOperator>> =
            Some(std::sync::Arc::new(common::CommaJoin));
        let opts = tiny().key_order(key_order);
        run(&ops, match merge_operator { Some(op) => opts.merge_operator(op), None => opts.no_merge_operator() });
    }

    #[test]
    fn matches_a_btreemap_with_slow_splits_only_and_no_filters(ops in proptest::collection::vec(op(), 1..300)) {
        run(&ops, tiny().fast_split_ratio(0).filter_bits_per_key(0));
    }
}

/// A long deterministic run that must exercise every structural operation — and the file-set
/// check in `check_all` is the garbage-collection test: after hundreds of fast- and slow-splits
/// no list file is left that no list refers to, and none that is referred to is missing. The
/// counters prove that the property tests above do not pass on a tree that never changes shape.
#[test]
fn long_run_exercises_every_spill_and_split() {
    let ops = long_run_ops(KEYS);
    // Tiny nodes fill before they gather the default 8 lists: in the ordered run, nodes
    // hold more and the bound is 3, so that list merges happen too.
    for (order, bound) in [(KeyOrder::Hashed, None), (KeyOrder::Ordered, Some(3))] {
        let opts =
            tiny()
                .key_order(order)
                .max_lists_per_node(bound)
                .node_size(if bound.is_some() {
                    8192
                } else {
                    tiny().node_size
                });
        let total = run(&ops, opts);
        eprintln!("{order}: counters over the run: {total:?}");
        assert!(total.root_spills > 10, "{total:?}");
        assert!(total.node_spills > 0, "{total:?}");
        assert!(total.fast_splits > 0, "{total:?}");
        assert!(total.slow_splits > 0, "{total:?}");
        assert!(total.node_splits > 0, "{total:?}");
        assert_eq!(total.list_merges > 0, bound.is_some(), "{total:?}");
    }
}

/// Overwrites of a few dozen keys: nodes mostly made of superseded records are collected
/// (leaves slow-split, internal nodes spill) before they fill, hashed or ordered, filters on
/// or off, and the store still matches the model.
#[test]
fn long_run_of_overwrites_collects_garbage() {
    let ops = long_run_ops(40);
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        for bits in [0, 10] {
            let opts = tiny()
                .key_order(order)
                .filter_bits_per_key(bits)
                .node_size(64 << 10);
            let total = run(&ops, opts);
            assert!(total.collections > 0, "{order}, {bits} bits: {total:?}");
        }
    }
}

/// The long runs' operations over `keys` keys: puts, deletes, merges, batches, gets and a
/// reopen every 1,500, from a fixed seed.
fn long_run_ops(keys: u16) -> Vec<Op> {
    let mut rng = common::Rng::new(0x5eed);
    let mut next = move || rng.next_u64();
    (0..6000)
        .map(|i| {
            let r = next();
            let k = (r % u64::from(keys * 4)) as u16 % keys;
            match (r >> 32) % 20 {
                _ if i % 1500 == 1499 => Op::Reopen,
                0..=11 => Op::Put(k, (r >> 8) as u8, ((r >> 16) % 120) as usize),
                12..=13 => Op::Delete(k),
                14 => Op::Merge(k % 16, (r >> 8) as u8),
                15 => Op::Batch(
                    (0..10)
                        .map(|j| {
                            let w = if j % 3 == 0 {
                                W::Merge(j as u8)
                            } else {
                                W::Put(j as u8, 40)
                            };
                            ((k + j) % keys, w)
                        })
                        .collect(),
                ),
                _ => Op::Get(k),
            }
        })
        .collect()
}
