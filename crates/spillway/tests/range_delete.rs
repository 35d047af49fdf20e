//! Range deletes against a `BTreeMap` model: ordered stores with tiny buffers and nodes (so
//! that range deletes ride spills, splits, list merges and reopens), overlapping and nested
//! ranges of every bound kind, range deletes in one batch with puts to the same range (later
//! wins), merge operands over a range delete, iterators and snapshots taken before and after
//! (from both ends at once), and `clear` in stores of both orders. Every key is read back by
//! `get`, `multi_get` and scans, and the store must check clean at the end.

mod common;

use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

use common::scan_both_ends;
use proptest::prelude::*;
use spillway::{Db, Error, KeyOrder, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
const KEYS: u16 = 60;

fn key(i: u16) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

#[derive(Clone, Debug)]
enum W {
    Put(u8),
    Delete,
    Merge(u8),
}

#[derive(Clone, Debug)]
enum Op {
    Write(u16, W),
    /// A range delete from `.0` to `.1`, each bound included (0), excluded (1) or absent (2).
    Range(u16, u8, u16, u8),
    /// A batch: writes and one range delete, in this order or the other.
    Batch(Vec<(u16, W)>, (u16, u16), bool),
    Check,
    /// Take an iterator and a snapshot now; read them after the next ops.
    Hold,
    Flush,
    Reopen(u8),
}

fn write() -> impl Strategy<Value = W> {
    prop_oneof![
        3 => any::<u8>().prop_map(W::Put),
        1 => Just(W::Delete),
        2 => any::<u8>().prop_map(W::Merge),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0..KEYS, write()).prop_map(|(k, w)| Op::Write(k, w)),
        6 => (0..KEYS, 0..3u8, 0..KEYS, 0..3u8).prop_map(|(a, x, b, y)| Op::Range(a, x, b, y)),
        3 => (prop::collection::vec((0..KEYS, write()), 1..5), (0..KEYS, 0..KEYS), any::<bool>())
            .prop_map(|(ws, r, first)| Op::Batch(ws, r, first)),
        2 => Just(Op::Check),
        1 => Just(Op::Hold),
        1 => Just(Op::Flush),
        1 => any::<u8>().prop_map(Op::Reopen),
    ]
}

fn value(v: u8) -> Vec<u8> {
    format!("v{v}").into_bytes()
}

fn bound(i: u16, kind: u8) -> Bound<Vec<u8>> {
    match kind {
        0 => Bound::Included(key(i)),
        1 => Bound::Excluded(key(i)),
        _ => Bound::Unbounded,
    }
}

fn apply(model: &mut Model, k: Vec<u8>, w: &W) {
    match w {
        W::Put(v) => {
            model.insert(k, value(*v));
        }
        W::Delete => {
            model.remove(&k);
        }
        W::Merge(o) => match model.get_mut(&k) {
            Some(v) => {
                v.push(b',');
                v.extend_from_slice(&value(*o));
            }
            None => {
                model.insert(k, value(*o));
            }
        },
    }
}

fn add(b: &mut WriteBatch, k: &[u8], w: &W) {
    match w {
        W::Put(v) => b.put(k, value(*v)),
        W::Delete => b.delete(k),
        W::Merge(o) => b.merge(k, value(*o)),
    }
}

fn options(n: u8) -> Options {
    let base = common::minimal_options()
        .key_order(KeyOrder::Ordered)
        .merge_operator(common::comma_append());
    match n % 5 {
        0 => base,
        1 => base.fast_split_ratio(0).max_lists_per_node(2),
        2 => base.node_size(64 << 10).fan_out(64),
        3 => base.page_size(64).filter_bits_per_key(0),
        _ => base.background_spills(false).root_buffer_size(1 << 20),
    }
}

/// `got == want`, or a panic naming the first difference (not the whole of both).
fn same(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    if got != want {
        let i = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let show = |v: Option<&(Vec<u8>, Vec<u8>)>| {
            v.map(|(k, v)| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                )
            })
        };
        panic!(
            "{what}: {} records, want {}; first difference at {i}: {:?} vs {:?}",
            got.len(),
            want.len(),
            show(got.get(i)),
            show(want.get(i))
        );
    }
}

fn check(db: &Db, model: &Model) {
    for i in 0..KEYS {
        assert_eq!(
            db.get(key(i)).unwrap().as_ref(),
            model.get(&key(i)),
            "get {i}"
        );
    }
    let all: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    for (k, v) in all.iter().zip(db.multi_get(&all).unwrap()) {
        assert_eq!(v.as_ref(), model.get(k), "multi_get");
    }
    let want: Vec<_> = model.clone().into_iter().collect();
    same(&scan_both_ends(db.iter()), &want, "iter");
    let mut rev: Vec<_> = db.iter().rev().map(Result::unwrap).collect();
    rev.reverse();
    same(&rev, &want, "iter back");
    let (lo, hi) = (key(KEYS / 4), key(3 * KEYS / 4));
    let part: Vec<_> = model
        .range(lo.clone()..hi.clone())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    same(&scan_both_ends(db.range(lo..hi).unwrap()), &part, "range");
}

fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), options(0)).unwrap();
    let mut model = Model::new();
    // An iterator and a transaction taken earlier, with the model then.
    let mut held: Option<(spillway::Iter, spillway::Transaction, Model)> = None;
    for op in ops {
        match op {
            Op::Write(k, w) => {
                let mut b = WriteBatch::new();
                add(&mut b, &key(k), &w);
                db.write(b, WriteOptions::NO_SYNC).unwrap();
                apply(&mut model, key(k), &w);
            }
            Op::Range(a, x, b, y) => {
                // Any bounds, inverted and empty ones too: those delete nothing.
                let range = (bound(a, x), bound(b, y));
                db.delete_range(range.clone()).unwrap();
                model.retain(|k, _| !range.contains(k));
            }
            Op::Batch(ws, (a, b), range_first) => {
                let mut batch = WriteBatch::new();
                let range = key(a.min(b))..key(a.max(b));
                let delete = |batch: &mut WriteBatch, model: &mut Model| {
                    batch.delete_range(range.clone());
                    model.retain(|k, _| !range.contains(k));
                };
                if range_first {
                    delete(&mut batch, &mut model);
                }
                for (k, w) in &ws {
                    add(&mut batch, &key(*k), w);
                    apply(&mut model, key(*k), w);
                }
                if !range_first {
                    delete(&mut batch, &mut model);
                }
                db.write(batch, WriteOptions::NO_SYNC).unwrap();
            }
            Op::Check => check(&db, &model),
            Op::Hold => {
                if let Some((it, mut tx, then)) = held.take() {
                    let ks = db.default_keyspace();
                    let then_v: Vec<_> = then.clone().into_iter().collect();
                    same(&scan_both_ends(it), &then_v, "held iterator");
                    for i in 0..KEYS {
                        assert_eq!(tx.get(&ks, key(i)).unwrap().as_ref(), then.get(&key(i)));
                    }
                }
                held = Some((db.iter(), db.transaction(), model.clone()));
            }
            Op::Flush => db.flush().unwrap(),
            Op::Reopen(n) => {
                held = None;
                db.close().unwrap();
                db = Db::open(dir.path(), options(n)).unwrap();
                db.check_tree().unwrap();
            }
        }
    }
    drop(held);
    check(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), options(0)).unwrap();
    check(&db, &model);
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn range_deletes_match_the_model(ops in prop::collection::vec(op(), 1..400)) {
        run(ops);
    }
}

#[test]
fn clear_empties_a_store_of_either_order_in_one_write() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), common::minimal_options().key_order(order)).unwrap();
        for i in 0..2000u32 {
            db.put(format!("k{i}"), "v").unwrap();
        }
        let before = db.stats().user_records_written;
        db.clear().unwrap();
        assert_eq!(db.stats().user_records_written, before + 1, "one record");
        assert_eq!(db.iter().count(), 0, "{order:?}");
        assert_eq!(db.get("k7").unwrap(), None);
        db.put("k7", "again").unwrap();
        assert_eq!(db.get("k7").unwrap().as_deref(), Some(&b"again"[..]));
        db.flush().unwrap();
        for i in 2000..3000u32 {
            db.put(format!("k{i}"), "v").unwrap();
        }
        db.flush().unwrap();
        let keys: Vec<_> = db.iter().map(|r| r.unwrap().0).collect();
        assert_eq!(keys.len(), 1001, "{order:?}");
        drop(db);
        let db = Db::open(dir.path(), common::minimal_options().key_order(order)).unwrap();
        assert_eq!(db.iter().count(), 1001);
        assert_eq!(db.get("k8").unwrap(), None);
        // Only `..` in a hashed store: its keys are in no order a range could follow.
        if order == KeyOrder::Hashed {
            assert!(matches!(db.delete_range("a".."b"), Err(Error::NotOrdered)));
        }
    }
}

#[test]
fn many_overlapping_and_nested_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(1)).unwrap();
    let mut model = Model::new();
    let mut rng = common::Rng::new(5);
    for round in 0..3000u32 {
        let a = rng.below(5000) as u32;
        let k = format!("k{a:05}").into_bytes();
        let v = format!("{round}").into_bytes();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        if round % 3 == 0 {
            let lo = rng.below(5000);
            let hi = lo + rng.below(40);
            let (lo, hi) = (
                format!("k{lo:05}").into_bytes(),
                format!("k{hi:05}").into_bytes(),
            );
            db.delete_range(lo.clone()..hi.clone()).unwrap();
            let doomed: Vec<_> = model.range(lo..hi).map(|(k, _)| k.clone()).collect();
            for k in doomed {
                model.remove(&k);
            }
        }
    }
    let want: Vec<_> = model.clone().into_iter().collect();
    same(&scan_both_ends(db.iter()), &want, "before flush");
    db.flush().unwrap();
    same(&scan_both_ends(db.iter()), &want, "after flush");
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn a_clear_stays_with_its_keyspace_through_a_swap_flush_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Db::open(dir.path(), common::minimal_options()).unwrap();
    let db = open();
    let a = db.keyspace("a", Default::default()).unwrap();
    let b = db.keyspace("b", Default::default()).unwrap();
    b.put("from-b", "1").unwrap();
    a.put("from-a", "1").unwrap();
    db.flush().unwrap();
    // The buffer of `a` holds nothing but the clear: it must spill with the swap all the same.
    a.clear().unwrap();
    db.swap_keyspaces("a", "b").unwrap();
    let a = db.keyspace_handle("a").unwrap();
    let b = db.keyspace_handle("b").unwrap();
    let keys = |ks: &spillway::Keyspace| -> Vec<Vec<u8>> {
        ks.iter().unwrap().map(|r| r.unwrap().0).collect()
    };
    assert_eq!(keys(&a), [b"from-b".to_vec()]);
    assert!(keys(&b).is_empty());
    db.flush().unwrap();
    assert_eq!(keys(&a), [b"from-b".to_vec()]);
    assert!(keys(&b).is_empty());
    db.close().unwrap();
    let db = open();
    let (a, b) = (
        db.keyspace_handle("a").unwrap(),
        db.keyspace_handle("b").unwrap(),
    );
    assert_eq!(keys(&a), [b"from-b".to_vec()]);
    assert!(keys(&b).is_empty());
}

#[test]
fn scans_seek_past_a_big_range_delete_both_ways() {
    // Thousands of keys under one range delete, in lists and in the buffer: scans from each
    // end and both at once, before and after the spill, read exactly the keys around it.
    for (flush_between, n) in [(false, 0), (true, 0), (false, 2), (true, 2)] {
        // Tiny nodes (a scan opens a segment every few keys) and wide ones (one segment
        // crosses the whole range).
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(n)).unwrap();
        let mut model = Model::new();
        for i in 0..6000u32 {
            let (k, v) = (format!("k{i:05}").into_bytes(), format!("{i}").into_bytes());
            db.put(&k, &v).unwrap();
            model.insert(k, v);
            if flush_between && i == 3000 {
                db.flush().unwrap();
            }
        }
        let range = b"k01000".to_vec()..b"k05000".to_vec();
        db.delete_range(range.clone()).unwrap();
        model.retain(|k, _| !range.contains(k));
        // One put inside the range after it: seen, whatever the seek skips.
        db.put("k03000", "back").unwrap();
        model.insert(b"k03000".to_vec(), b"back".to_vec());
        let want: Vec<_> = model.clone().into_iter().collect();
        for round in 0..2 {
            same(&scan_both_ends(db.iter()), &want, "both ends");
            let fwd: Vec<_> = db.iter().map(Result::unwrap).collect();
            same(&fwd, &want, "forward");
            let mut back: Vec<_> = db.iter().rev().map(Result::unwrap).collect();
            back.reverse();
            same(&back, &want, "backward");
            let part: Vec<_> = model
                .range(b"k00900".to_vec()..b"k05100".to_vec())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            same(
                &scan_both_ends(db.range("k00900".."k05100").unwrap()),
                &part,
                "range",
            );
            if round == 0 {
                db.flush().unwrap();
            }
        }
    }
}

#[test]
fn expiry_messages_under_a_range_delete_find_nothing() {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(spillway::ManualClock::new(SystemTime::now()));
    let db = Db::open(dir.path(), options(0).clock(clock.clone())).unwrap();
    let later = spillway::Clock::now(&*clock) + Duration::from_secs(3600);
    for flush in [false, true] {
        db.put_expiring("a", "1", later).unwrap();
        db.put("b", "2").unwrap();
        db.merge("c", "3").unwrap();
        if flush {
            db.flush().unwrap();
        }
        db.delete_range("a".."d").unwrap();
        // Messages written after the range delete find nothing under it.
        db.expire("a", later).unwrap();
        db.persist("b").unwrap();
        db.merge("c", "4").unwrap();
        assert_eq!(db.get("a").unwrap(), None);
        assert_eq!(db.get("b").unwrap(), None);
        assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"4"[..]));
        db.flush().unwrap();
        assert_eq!(db.get("a").unwrap(), None);
        assert_eq!(db.expiry("b").unwrap(), None);
        assert_eq!(db.get("c").unwrap().as_deref(), Some(&b"4"[..]));
        db.delete("c").unwrap();
    }
}

/// The space a range delete frees comes back at the next spill, whole. Keys loaded in order
/// into one leaf that then fast-splits leave two leaves sharing files; a range delete of the
/// first half's keys is collected with the first leaf, which drops the tree's only range
/// delete, and leaves the second the last view of files mostly dead: the sweep must go on
/// to collect it in the same spill (it did not, for a while, when sweeps went by steps and a
/// step looked only at trees that still held a range delete or an expiring record). The
/// example `range_delete_cost` at a 64th of its size.
#[test]
fn a_range_delete_gives_its_space_back_at_the_next_spill() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .key_order(KeyOrder::Ordered)
        .root_buffer_size(1 << 20)
        .node_size(1 << 20)
        .background_spills(false);
    let db = Db::open(dir.path(), opts).unwrap();
    let n = 31_250u64;
    let key = |i: u64| {
        let mut k = [b'k'; 9];
        k[1..].copy_from_slice(&i.to_be_bytes());
        k
    };
    let mut batch = WriteBatch::new();
    for i in 0..2 * n {
        batch.put(key(i), i.to_le_bytes());
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch), WriteOptions::NO_SYNC)
                .unwrap();
        }
    }
    db.write(batch, WriteOptions::NO_SYNC).unwrap();
    db.flush().unwrap();
    let lists = |d: &std::path::Path| -> u64 {
        common::files_with_extension(d, "list")
            .iter()
            .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
            .sum()
    };
    let before = lists(dir.path());
    assert!(
        db.stats().fast_splits > 0,
        "no leaves share files: nothing to show"
    );
    db.delete_range(key(0)..key(n)).unwrap();
    db.flush().unwrap();
    let after = lists(dir.path());
    eprintln!("lists {before} -> {after} bytes");
    assert!(
        after * 10 <= before * 6,
        "lists {before} -> {after} bytes: half the keys are left"
    );
    assert_eq!(db.iter().count() as u64, n);
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn an_old_snapshot_folding_operands_writes_nothing_back_over_a_range_delete_since() {
    // A read that folds operands from two lists or more writes the value back to the root
    // buffer (so the next read stops there) unless the key was written since the read's
    // point. A range delete since is such a write: the value written back would bring the
    // key back over it. (Found by `range_deletes_match_the_model`: a transaction's reads
    // at its snapshot, then a scan of the store.)
    for how in ["transaction", "snapshot", "clear"] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(0)).unwrap();
        let ks = db.default_keyspace();
        // The key's operands over a delete, in two lists: a read folds two pages.
        db.delete("k054").unwrap();
        db.flush().unwrap();
        db.merge("k054", "v10").unwrap();
        db.put("k060", "stays").unwrap();
        db.flush().unwrap();
        let mut tx = db.transaction();
        let snapshot = db.snapshot();
        let before = db.stats().merge_write_backs;
        if how == "clear" {
            db.clear().unwrap();
            db.put("k060", "stays").unwrap();
        } else {
            db.delete_range("k047".."k056").unwrap();
        }
        let old = match how {
            "transaction" => tx.get(&ks, "k054").unwrap(),
            _ => snapshot.get("k054").unwrap(),
        };
        assert_eq!(
            old.as_deref(),
            Some(&b"v10"[..]),
            "{how}: the snapshot's value"
        );
        assert_eq!(
            db.stats().merge_write_backs,
            before,
            "{how}: nothing written back"
        );
        let now = || -> Vec<_> { db.iter().map(|r| r.unwrap().0).collect() };
        assert_eq!(db.get("k054").unwrap(), None, "{how}");
        assert_eq!(now(), vec![b"k060".to_vec()], "{how}");
        drop((tx, snapshot));
        db.flush().unwrap();
        assert_eq!(db.get("k054").unwrap(), None, "{how}: spilled");
        db.close().unwrap();
        let db = Db::open(dir.path(), options(0)).unwrap();
        assert_eq!(db.get("k054").unwrap(), None, "{how}: reopened");
        assert_eq!(db.iter().count(), 1, "{how}");
    }
}
