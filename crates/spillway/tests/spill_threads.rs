//! Spills on several threads (`Options::spill_threads`) write what one thread writes: the same
//! writes into stores that differ only in their spill threads give the same tree — the same
//! spills, splits and merges, lists of the same sizes — and the same contents, which are the
//! model's; reopened with another thread count, each store goes on as before.

use std::collections::BTreeMap;

use proptest::prelude::*;
use spillway::{Db, KeyOrder, Options, Stats, WriteBatch, WriteOptions};

mod common;

/// One write of the sequence every store gets.
#[derive(Clone, Debug)]
enum W {
    Put(u16, u8, usize),
    Delete(u16),
    Merge(u16, u8),
    /// Ordered stores only: every key from the first to the second.
    DeleteRange(u16, u16),
}

/// Every third key shares its first 8 bytes — its route, in an ordered store — with the
/// others of its kind, so that a spill's sort and merges order many keys of one route.
fn key(i: u16) -> Vec<u8> {
    match i % 3 {
        0 => format!("collide!{i:05}"),
        _ => format!("k{:05}{}", i, "-".repeat(usize::from(i % 7))),
    }
    .into_bytes()
}

fn writes() -> impl Strategy<Value = Vec<W>> {
    proptest::collection::vec(
        prop_oneof![
            12 => (0..2000u16, any::<u8>(), 0usize..300).prop_map(|(k, s, l)| W::Put(k, s, l)),
            2 => (0..2000u16).prop_map(W::Delete),
            3 => (0..40u16, any::<u8>()).prop_map(|(k, s)| W::Merge(k, s)),
            1 => (0..2000u16, 0..60u16).prop_map(|(k, n)| W::DeleteRange(k, k.saturating_add(n))),
        ],
        200..1500,
    )
}

fn options(order: KeyOrder, threads: usize) -> Options {
    // Small enough that a few hundred writes spill internal nodes and split leaves, both
    // ways, and grow the tree by levels.
    Options::default()
        .root_buffer_size(8 << 10)
        .node_size(16 << 10)
        .fan_out(3)
        .fast_split_ratio(2)
        .page_size(256)
        .key_order(order)
        .merge_operator(common::comma_append())
        // Spills where the writes put them, whatever the threads' timing.
        .background_spills(false)
        .spill_threads(threads)
}

/// Apply `w` to the store and to the model.
fn apply(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, w: &W, ordered: bool) {
    match *w {
        W::Put(k, s, l) => {
            let v = vec![s; l];
            db.put(key(k), &v).unwrap();
            model.insert(key(k), v);
        }
        W::Delete(k) => {
            db.delete(key(k)).unwrap();
            model.remove(&key(k));
        }
        W::Merge(k, s) => {
            let operand = format!("+{s}").into_bytes();
            db.merge(key(k), &operand).unwrap();
            // The operator puts its separator after any value, an empty one too.
            match model.get_mut(&key(k)) {
                Some(v) => {
                    v.push(b',');
                    v.extend_from_slice(&operand);
                }
                None => {
                    model.insert(key(k), operand);
                }
            }
        }
        W::DeleteRange(a, b) if ordered => {
            // The keys' byte order, not their numbers', bounds the range.
            let (lo, hi) = (key(a).min(key(b)), key(a).max(key(b)));
            let mut batch = WriteBatch::new();
            batch.delete_range(lo.clone()..hi.clone());
            db.write(batch, WriteOptions::default()).unwrap();
            let doomed: Vec<Vec<u8>> = model.range(lo..hi).map(|(k, _)| k.clone()).collect();
            for k in doomed {
                model.remove(&k);
            }
        }
        W::DeleteRange(..) => {}
    }
}

/// What the tree did: the same on any number of threads.
fn tree_work(s: &Stats) -> [u64; 8] {
    [
        s.root_spills,
        s.node_spills,
        s.fast_splits,
        s.slow_splits,
        s.node_splits,
        s.collections,
        s.list_merges,
        s.upkeep_settles,
    ]
}

/// The sizes of the store's list files, smallest first: the same lists whatever numbers
/// the threads gave them.
fn list_sizes(dir: &std::path::Path) -> Vec<u64> {
    let mut sizes: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".list"))
        .map(|e| e.metadata().unwrap().len())
        .collect();
    sizes.sort_unstable();
    sizes
}

fn run(order: KeyOrder, writes: &[W]) {
    let ordered = order == KeyOrder::Ordered;
    let mut seen: Option<([u64; 8], Vec<u64>)> = None;
    let mut dirs = Vec::new();
    let mut model = BTreeMap::new();
    for threads in [1, 2, 5] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(order, threads)).unwrap();
        model.clear();
        for w in writes {
            apply(&db, &mut model, w, ordered);
        }
        db.flush().unwrap();
        db.check_tree().unwrap();
        let work = tree_work(&db.stats());
        common::assert_same(&db, &model, &format!("{threads} threads"));
        for k in (0..2000u16).step_by(97) {
            assert_eq!(
                db.get(key(k)).unwrap().as_ref(),
                model.get(&key(k)),
                "{threads} threads"
            );
        }
        db.close().unwrap();
        let sizes = list_sizes(dir.path());
        match &seen {
            None => seen = Some((work, sizes)),
            Some((w, s)) => {
                assert_eq!(&work, w, "spills and splits on {threads} threads");
                assert_eq!(&sizes, s, "list sizes on {threads} threads");
            }
        }
        dirs.push(dir);
    }
    // Reopened with other thread counts, every store reads the same and takes more writes.
    for (dir, threads) in dirs.iter().zip([4, 0, 1]) {
        let db = Db::open(dir.path(), options(order, threads)).unwrap();
        common::assert_same(&db, &model, "reopened");
        let mut more = model.clone();
        for w in writes.iter().rev().take(300) {
            apply(&db, &mut more, w, ordered);
        }
        db.flush().unwrap();
        db.check_tree().unwrap();
        common::assert_same(&db, &more, "more writes");
        db.close().unwrap();
        let report = spillway::check(dir.path(), false).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn hashed_stores_spill_alike_on_any_number_of_threads(writes in writes()) {
        run(KeyOrder::Hashed, &writes);
    }

    #[test]
    fn ordered_stores_spill_alike_on_any_number_of_threads(writes in writes()) {
        run(KeyOrder::Ordered, &writes);
    }
}

#[test]
fn a_spill_thread_count_out_of_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = Db::open(
        dir.path(),
        Options::default().spill_threads(spillway::MAX_SPILL_THREADS + 1),
    )
    .map(drop)
    .unwrap_err();
    assert!(
        matches!(
            err,
            spillway::Error::InvalidOption {
                name: "spill_threads",
                ..
            }
        ),
        "{err}"
    );
    // Both ends of the range open.
    for threads in [0, 1, spillway::MAX_SPILL_THREADS] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default().spill_threads(threads)).unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
    }
}
