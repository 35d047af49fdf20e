//! Merge operators (upserts): counters that count exactly, operands that fold in order across
//! every place records meet, the operator recorded in the store, and failing or panicking
//! operators that fail only the reads of their key.

mod common;

use std::sync::Arc;

use spillway::operators::{Append, Max, Min, U64Add};
use spillway::{Db, Error, KeyOrder, MergeOperator, Options, WriteBatch, WriteOptions};

fn n(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn with(op: Arc<dyn MergeOperator>) -> Options {
    common::tiny_options().merge_operator(op)
}

#[test]
fn counters_count_exactly_through_spills_splits_and_reopens() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let opts = with(Arc::new(U64Add)).key_order(order);
        let mut db = Db::open(dir.path(), opts.clone()).unwrap();
        let mut work = spillway::Stats::default();
        let mut want = vec![0u64; 200];
        let mut rng = common::Rng::new(7);
        for round in 0..30 {
            let mut batch = WriteBatch::new();
            for _ in 0..200 {
                // Skewed: low keys are hot.
                let hot = rng.range(1, 200);
                let k = rng.below(hot) as usize;
                let d = rng.below(1000);
                batch.merge(format!("counter-{k:03}"), n(d));
                want[k] += d;
            }
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
            if round % 10 == 9 {
                common::add_tree_work(&mut work, &db.stats());
                db.close().unwrap();
                db = Db::open(dir.path(), opts.clone()).unwrap();
            }
        }
        assert!(work.slow_splits + work.fast_splits > 0, "{work:?}");
        for (k, &w) in want.iter().enumerate() {
            let got = db.get(format!("counter-{k:03}")).unwrap();
            let expect = (w > 0).then(|| n(w).to_vec());
            assert_eq!(got, expect, "{order}: counter {k}");
        }
        // A scan folds the same way.
        let scanned: u64 = db
            .iter()
            .map(|r| u64::from_le_bytes(r.unwrap().1.try_into().unwrap()))
            .sum();
        assert_eq!(scanned, want.iter().sum::<u64>());
        db.check_tree().unwrap();
        db.close().unwrap();
        let report = spillway::check(dir.path(), false).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}

#[test]
fn a_hot_counter_read_writes_its_value_back_once() {
    let dir = tempfile::tempdir().unwrap();
    // Spills in the writer's thread: upkeep the flush leaves to the spill thread would hold
    // the writer's lock at times, and a read writes back only when the writer is idle (it
    // never waits), so the count would depend on when the upkeep ran.
    let opts = with(Arc::new(U64Add)).background_spills(false);
    let db = Db::open(dir.path(), opts).unwrap();
    // One operand per spill, each spill a new list in the leaf.
    for i in 0..40u64 {
        db.merge("hot", n(1)).unwrap();
        for j in 0..40 {
            db.put(format!("filler-{i}-{j}"), [7u8; 64]).unwrap();
        }
    }
    db.flush().unwrap();
    let before = db.stats();
    assert_eq!(db.get("hot").unwrap(), Some(n(40).to_vec()));
    let first = db.stats();
    assert!(first.operands_folded > before.operands_folded, "{first:?}");
    assert_eq!(first.merge_write_backs, before.merge_write_backs + 1);
    // The next read stops at the value written back: no page read.
    assert_eq!(db.get("hot").unwrap(), Some(n(40).to_vec()));
    let second = db.stats();
    assert_eq!(second.pages_read, first.pages_read);
    assert_eq!(second.merge_write_backs, first.merge_write_backs);
    // Later increments fold into it in the buffer.
    db.merge("hot", n(2)).unwrap();
    assert_eq!(db.get("hot").unwrap(), Some(n(42).to_vec()));
    drop(db);
    let db = Db::open(dir.path(), with(Arc::new(U64Add))).unwrap();
    assert_eq!(db.get("hot").unwrap(), Some(n(42).to_vec()));
}

#[test]
fn merges_fold_onto_puts_and_deletes_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), with(Arc::new(Append::with_separator("|")))).unwrap();
    db.merge("k", "a").unwrap();
    db.flush().unwrap();
    db.merge("k", "b").unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"a|b"[..]));
    db.put("k", "base").unwrap();
    db.merge("k", "c").unwrap();
    db.flush().unwrap();
    db.merge("k", "d").unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"base|c|d"[..]));
    db.delete("k").unwrap();
    db.flush().unwrap();
    db.merge("k", "e").unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"e"[..]));
    let mut batch = WriteBatch::new();
    batch.merge("k", "f");
    batch.put("k", "g");
    batch.merge("k", "h");
    db.write(batch, WriteOptions::SYNC).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"g|h"[..]));
}

#[test]
fn max_and_min_keep_the_extreme() {
    for (op, want) in [
        (Arc::new(Max) as Arc<dyn MergeOperator>, &b"zebra"[..]),
        (Arc::new(Min), &b"ant"[..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), with(op)).unwrap();
        for (i, w) in ["cat", "zebra", "ant", "moose"].iter().enumerate() {
            db.merge("k", w).unwrap();
            if i % 2 == 1 {
                db.flush().unwrap();
            }
        }
        assert_eq!(db.get("k").unwrap().as_deref(), Some(want));
    }
}

#[test]
fn snapshots_and_iterators_see_the_fold_of_their_time() {
    let dir = tempfile::tempdir().unwrap();
    let opts = with(Arc::new(common::CommaJoin)).key_order(KeyOrder::Ordered);
    let db = Db::open(dir.path(), opts).unwrap();
    db.merge("a", "1").unwrap();
    db.merge("b", "1").unwrap();
    db.flush().unwrap();
    db.merge("a", "2").unwrap();
    let snap = db.snapshot();
    let it = db.iter();
    db.merge("a", "3").unwrap();
    db.flush().unwrap();
    db.merge("b", "2").unwrap();
    assert_eq!(snap.get("a").unwrap().as_deref(), Some(&b"1,2"[..]));
    assert_eq!(snap.get("b").unwrap().as_deref(), Some(&b"1"[..]));
    let old: Vec<_> = it.map(Result::unwrap).collect();
    assert_eq!(
        old,
        [
            (b"a".to_vec(), b"1,2".to_vec()),
            (b"b".to_vec(), b"1".to_vec())
        ]
    );
    let now: Vec<_> = db.iter().rev().map(Result::unwrap).collect();
    assert_eq!(
        now,
        [
            (b"b".to_vec(), b"1,2".to_vec()),
            (b"a".to_vec(), b"1,2,3".to_vec())
        ]
    );
    assert_eq!(
        db.multi_get(&["a", "b", "c"]).unwrap(),
        [Some(b"1,2,3".to_vec()), Some(b"1,2".to_vec()), None]
    );
}

#[test]
fn stacked_operands_scan_the_same_both_ways() {
    // Without partial merges every operand stays a record of its own down the tree: stacks
    // in lists, across pages of many keys, read forward and backward.
    let dir = tempfile::tempdir().unwrap();
    let opts = with(Arc::new(common::CommaJoin)).key_order(KeyOrder::Ordered);
    let db = Db::open(dir.path(), opts).unwrap();
    let mut model = std::collections::BTreeMap::new();
    let mut rng = common::Rng::new(11);
    for _ in 0..3000 {
        let k = format!("k{:03}", rng.below(60)).into_bytes();
        let w = match rng.below(10) {
            0 => common::Write::Put(format!("p{}", rng.below(100)).into_bytes()),
            1 => common::Write::Delete,
            _ => common::Write::Merge(format!("{}", rng.below(100)).into_bytes()),
        };
        common::write_mixed(&db, &mut model, [(k, w)]);
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    let fwd: Vec<_> = db.iter().map(Result::unwrap).collect();
    assert_eq!(fwd, want);
    let mut back: Vec<_> = db.iter().rev().map(Result::unwrap).collect();
    back.reverse();
    assert_eq!(back, want);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_merge_needs_an_operator_that_accepts_the_operand() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny_options()).unwrap();
    assert!(matches!(db.merge("k", n(1)), Err(Error::NoMergeOperator)));
    let mut batch = WriteBatch::new();
    batch.put("p", "v");
    batch.merge("k", n(1));
    assert!(matches!(
        db.write(batch, WriteOptions::SYNC),
        Err(Error::NoMergeOperator)
    ));
    assert_eq!(
        db.get("p").unwrap(),
        None,
        "nothing of the batch is written"
    );
    drop(db);

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), with(Arc::new(U64Add))).unwrap();
    let mut batch = WriteBatch::new();
    batch.put("p", "v");
    batch.merge("k", b"abc");
    match db.write(batch, WriteOptions::SYNC) {
        Err(Error::InvalidOperand { operator, reason }) => {
            assert_eq!(operator, "spillway.u64add");
            assert!(reason.contains("3 bytes"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(db.get("p").unwrap(), None);
    assert_eq!(db.stats().user_records_written, 0);
}

#[test]
fn a_store_takes_its_first_operator_at_once() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), common::tiny_options())
        .unwrap()
        .close()
        .unwrap();
    let db = Db::open(dir.path(), with(Arc::new(common::CommaJoin))).unwrap();
    db.merge("k", "a").unwrap();
    db.write(WriteBatch::new(), WriteOptions::SYNC).unwrap();
    // The folder as a crash would leave it now: the operand only in the log. It must not
    // open without the operator that folds it.
    let copy = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).unwrap();
        }
    }
    match Db::open(copy.path(), common::tiny_options()) {
        Err(Error::MergeOperatorMismatch { stored, given }) => {
            assert_eq!(stored.as_deref(), Some(common::CommaJoin.name()));
            assert_eq!(given, None);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let reopened = Db::open(copy.path(), with(Arc::new(common::CommaJoin))).unwrap();
    assert_eq!(reopened.get("k").unwrap(), Some(b"a".to_vec()));
}

#[test]
fn a_store_opens_with_the_operator_it_records_and_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let db = Db::open(path, with(Arc::new(U64Add))).unwrap();
    db.merge("k", n(5)).unwrap();
    db.close().unwrap();
    let u64add = Some("spillway.u64add".to_string());
    for read_only in [false, true] {
        let open = |opts: Options| {
            if read_only {
                Db::open_read_only(path, opts)
            } else {
                Db::open(path, opts)
            }
        };
        match open(with(Arc::new(Append::new()))) {
            Err(Error::MergeOperatorMismatch { stored, given }) => {
                assert_eq!(
                    (stored, given),
                    (u64add.clone(), Some("spillway.append".into()))
                )
            }
            other => panic!("opened with the wrong operator: {:?}", other.map(|_| ())),
        }
        // No operator given: the built-in the store records.
        let db = open(common::tiny_options()).unwrap();
        assert_eq!(db.merge_operator_name(), u64add.as_deref());
        // The read-only open comes after the merge of 2 below.
        let want = if read_only { n(7) } else { n(5) };
        assert_eq!(db.get("k").unwrap(), Some(want.to_vec()));
        if !read_only {
            db.merge("k", n(2)).unwrap();
            assert_eq!(db.get("k").unwrap(), Some(n(7).to_vec()));
        }
        db.close().unwrap();
    }
    let msg = Error::MergeOperatorMismatch {
        stored: u64add,
        given: None,
    }
    .to_string();
    assert!(
        msg.contains("`spillway.u64add`") && msg.contains("none"),
        "{msg}"
    );
}

#[test]
fn a_store_of_an_operator_of_your_own_opens_with_it_known() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), with(Arc::new(common::CommaJoin))).unwrap();
    db.merge("k", "a").unwrap();
    db.merge("k", "b").unwrap();
    db.close().unwrap();
    assert!(matches!(
        Db::open(dir.path(), common::tiny_options()),
        Err(Error::MergeOperatorMismatch { .. })
    ));
    let opts = common::tiny_options()
        .known_operators(vec![Arc::new(Append::new()), Arc::new(common::CommaJoin)]);
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.merge_operator_name(), Some(common::CommaJoin.name()));
    assert_eq!(db.get("k").unwrap(), Some(b"a,b".to_vec()));
}

/// Fails on operand `bad` and panics on operand `panic`; appends otherwise.
struct Fragile;

impl MergeOperator for Fragile {
    fn name(&self) -> &str {
        "test.fragile"
    }
    fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        if operands.contains(&&b"panic"[..]) {
            panic!("the operator panicked on purpose");
        }
        if operands.contains(&&b"bad"[..]) {
            return Err("a bad operand".into());
        }
        Append::with_separator(",").full_merge(key, base, operands)
    }
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands).ok()
    }
}

#[test]
fn a_failing_operator_fails_only_the_reads_of_its_key() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let opts = with(Arc::new(Fragile)).key_order(order);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        db.merge("bad-key", "bad").unwrap();
        db.merge("panic-key", "panic").unwrap();
        // Enough other writes for spills, splits and the merges of leaves at the bottom of
        // the tree, each of which meets the failing keys.
        for i in 0..3000 {
            db.merge(format!("good-{}", i % 50), format!("{i}"))
                .unwrap();
            if i % 500 == 0 {
                db.merge("bad-key", "x").unwrap();
                db.merge("panic-key", "y").unwrap();
            }
        }
        db.flush().unwrap();
        let stats = db.stats();
        // Slow-splits, or merges of a leaf's lists (ordered stores): folds at the bottom.
        assert!(stats.slow_splits + stats.list_merges > 0, "{stats:?}");
        assert!(stats.merge_failures > 0, "{stats:?}");
        for key in ["bad-key", "panic-key"] {
            match db.get(key) {
                Err(Error::MergeFailed {
                    operator,
                    key: k,
                    reason,
                }) => {
                    assert_eq!(operator, "test.fragile");
                    assert_eq!(k, key.as_bytes());
                    assert!(
                        reason.contains("bad operand") || reason.contains("panicked"),
                        "{reason}"
                    );
                }
                other => panic!("{key}: {other:?}"),
            }
        }
        // Everything else reads and writes as before.
        let good = db.get("good-7").unwrap().unwrap();
        assert_eq!(good.split(|&b| b == b',').count(), 60);
        db.put("other", "v").unwrap();
        assert_eq!(db.get("other").unwrap().as_deref(), Some(&b"v"[..]));
        // A scan reports each failing key in its place and goes on past it, either way.
        for backward in [false, true] {
            let it = db.iter();
            let items: Vec<_> = if backward {
                it.rev().collect()
            } else {
                it.collect()
            };
            let failed: Vec<Vec<u8>> = items
                .iter()
                .filter_map(|r| match r {
                    Err(Error::MergeFailed { key, .. }) => Some(key.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(failed.len(), 2, "{order}: {failed:?}");
            let good = items.iter().filter(|r| r.is_ok()).count();
            assert_eq!(
                good, 51,
                "{order}: every other key is read (good-0..49, other)"
            );
        }
        // A put replaces the operands; the key reads again.
        db.put("bad-key", "fixed").unwrap();
        db.delete("panic-key").unwrap();
        assert_eq!(db.get("bad-key").unwrap().as_deref(), Some(&b"fixed"[..]));
        assert_eq!(db.get("panic-key").unwrap(), None);
        db.close().unwrap();
        let db = Db::open(dir.path(), opts).unwrap();
        assert_eq!(db.get("bad-key").unwrap().as_deref(), Some(&b"fixed"[..]));
        assert_eq!(db.iter().filter(|r| r.is_err()).count(), 0);
    }
}

#[test]
fn operands_that_cannot_combine_do_not_pile_up_in_the_buffer() {
    // Without partial merges each operand stacks in the root buffer; past a bound the writer
    // folds the stack with what lies below, as RocksDB's `max_successive_merges` does.
    let dir = tempfile::tempdir().unwrap();
    let opts = with(Arc::new(common::CommaJoin)).root_buffer_size(1 << 20);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    db.put("k", "base").unwrap();
    db.flush().unwrap();
    let mut want = b"base".to_vec();
    for i in 0..200 {
        db.merge("k", format!("{i}")).unwrap();
        want.extend_from_slice(format!(",{i}").as_bytes());
    }
    // The 17th operand makes the writer fold the stack with the base in the tree; every
    // later one then folds into that value as it arrives.
    let stats = db.stats();
    assert_eq!(stats.merge_write_backs, 1, "{stats:?}");
    assert_eq!(db.get("k").unwrap(), Some(want.clone()));
    db.close().unwrap();
    // The folds were not logged: the replay folds the logged operands to the same value.
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(want));
}
