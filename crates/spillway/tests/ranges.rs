//! Ordered stores against `BTreeMap::range`: random writes over keys of every shape — empty,
//! one byte of 0x00 or 0xFF, long runs of a shared 8-byte-plus prefix (where routes tie and
//! nodes must split on key bytes), up to the longest key allowed — with tiny buffers and nodes
//! so that spills and splits of every kind happen, reopens at random points, and scans with
//! random bounds (empty, inverted, unbounded, prefixes ending in 0xFF) read forward, backward,
//! from both ends at once and after seeks.

use std::collections::BTreeMap;
use std::ops::Bound;

use proptest::prelude::*;
use spillway::{Db, Iter, KeyOrder, Options, MAX_KEY_LEN};

mod common;

fn tiny() -> Options {
    common::minimal_options().key_order(KeyOrder::Ordered)
}

/// Key `i` of a small universe with every shape that matters to an ordered tree.
fn key(i: u16) -> Vec<u8> {
    match i % 8 {
        // Long shared prefixes: routes (the first 8 bytes) tie.
        0..=2 => format!("user:000000{:05}", i).into_bytes(),
        3 => format!("t{}", i).into_bytes(),
        4 => vec![0xff; usize::from(i % 11)],
        5 => vec![0x00; usize::from(i % 11)],
        6 => {
            (u32::from(i).wrapping_mul(2_654_435_761)).to_be_bytes()[..usize::from(i % 5)].to_vec()
        }
        // A few long keys, up to the limit.
        _ => match i % 3 {
            0 => vec![b'L'; MAX_KEY_LEN - usize::from(i % 7)],
            _ => {
                let mut k = b"user:000000".to_vec();
                k.resize(200 + usize::from(i), b'z');
                k
            }
        },
    }
}

const KEYS: u16 = 240;

fn value(i: u16, seed: u8, len: usize) -> Vec<u8> {
    let mut v = format!("{i}:{seed}:").into_bytes();
    v.resize(len.max(v.len()), seed);
    v
}

/// A scan bound: a key of the universe, a key beside it, or a short arbitrary string.
fn bound_key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0..KEYS).prop_map(key),
        (0..KEYS).prop_map(|i| {
            let mut k = key(i);
            k.push(0);
            k
        }),
        proptest::collection::vec(
            prop_oneof![Just(0u8), Just(0xffu8), Just(b'u'), any::<u8>()],
            0..6
        ),
    ]
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    prop_oneof![
        1 => Just(Bound::Unbounded),
        3 => bound_key().prop_map(Bound::Included),
        3 => bound_key().prop_map(Bound::Excluded),
    ]
}

#[derive(Clone, Debug)]
enum Read {
    Forward,
    Backward,
    /// Alternate ends by the bits of the pattern.
    BothEnds(u64),
    /// Seek the front to a key after `n` records.
    Seek(usize, Vec<u8>),
    SeekBack(usize, Vec<u8>),
    /// Steps from either end interleaved with seeks from either end.
    Steps(Vec<Step>),
}

#[derive(Clone, Debug)]
enum Step {
    Next,
    NextBack,
    Seek(Vec<u8>),
    SeekBack(Vec<u8>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Next),
        3 => Just(Step::NextBack),
        1 => bound_key().prop_map(Step::Seek),
        1 => bound_key().prop_map(Step::SeekBack),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Put(u16, u8, usize),
    Delete(u16),
    Batch(Vec<(u16, Option<(u8, usize)>)>),
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>, Read),
    Prefix(Vec<u8>, bool),
    Reopen,
}

fn read() -> impl Strategy<Value = Read> {
    prop_oneof![
        Just(Read::Forward),
        Just(Read::Backward),
        any::<u64>().prop_map(Read::BothEnds),
        (0usize..20, bound_key()).prop_map(|(n, k)| Read::Seek(n, k)),
        (0usize..20, bound_key()).prop_map(|(n, k)| Read::SeekBack(n, k)),
        proptest::collection::vec(step(), 1..40).prop_map(Read::Steps),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (0..KEYS, any::<u8>(), 0usize..120).prop_map(|(k, s, l)| Op::Put(k, s, l)),
        3 => (0..KEYS).prop_map(Op::Delete),
        2 => proptest::collection::vec((0..KEYS, proptest::option::weighted(0.8, (any::<u8>(), 0usize..60))), 1..30)
            .prop_map(Op::Batch),
        4 => (bound(), bound(), read()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        1 => (prop_oneof![Just(b"user:".to_vec()), Just(vec![0xff, 0xff]), Just(vec![0xff]),
                          Just(b"user:00000000".to_vec()), Just(vec![]), Just(vec![0])],
              any::<bool>()).prop_map(|(p, rev)| Op::Prefix(p, rev)),
        1 => Just(Op::Reopen),
    ]
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// What `BTreeMap::range` gives, where it does not panic: an inverted or empty range is empty.
fn model_range(model: &Model, lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> Pairs {
    let empty = match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
        | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
        _ => false,
    };
    if empty {
        return Vec::new();
    }
    model
        .range((lo.clone(), hi.clone()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Read `it` the way `how` says; returns the pairs in key order, and what the model says
/// the same reads return.
fn read_both(mut it: Iter, how: &Read, expected: &Pairs) -> (Pairs, Pairs) {
    let all = |it: Iter| -> Pairs { it.collect::<spillway::Result<_>>().unwrap() };
    match how {
        Read::Forward => (all(it), expected.clone()),
        Read::Backward => {
            let mut got: Pairs = it.rev().collect::<spillway::Result<_>>().unwrap();
            got.reverse();
            (got, expected.clone())
        }
        Read::BothEnds(bits) => {
            let (mut front, mut back) = (Vec::new(), Vec::new());
            let mut i = 0;
            loop {
                let from_front = bits >> (i % 64) & 1 == 1;
                i += 1;
                let next = if from_front {
                    it.next()
                } else {
                    it.next_back()
                };
                match next {
                    Some(r) if from_front => front.push(r.unwrap()),
                    Some(r) => back.push(r.unwrap()),
                    None => break,
                }
            }
            // One end ran dry: the other has nothing left either.
            assert!(it.next().is_none() && it.next_back().is_none());
            back.reverse();
            front.extend(back);
            (front, expected.clone())
        }
        Read::Seek(n, k) => {
            let mut got = Vec::new();
            for _ in 0..*n {
                match it.next() {
                    Some(r) => got.push(r.unwrap()),
                    None => break,
                }
            }
            it.seek(k);
            got.extend(all(it));
            // A seek goes where it is told, even back over what was read.
            let mut want: Pairs = expected.iter().take(*n).cloned().collect();
            want.extend(expected.iter().filter(|(key, _)| key >= k).cloned());
            (got, want)
        }
        Read::SeekBack(n, k) => {
            let mut got = Vec::new();
            for _ in 0..*n {
                match it.next_back() {
                    Some(r) => got.push(r.unwrap()),
                    None => break,
                }
            }
            it.seek_back(k);
            got.extend(it.rev().map(|r| r.unwrap()));
            let mut want: Pairs = expected.iter().rev().take(*n).cloned().collect();
            want.extend(expected.iter().rev().filter(|(key, _)| key <= k).cloned());
            (got, want)
        }
        Read::Steps(steps) => {
            // The model: the pairs still to return are `expected[lo..hi]`. `next` takes the
            // first, `next_back` the last; a seek moves `lo` to the first key at or after
            // its key (back over what was read, too), a backward seek moves `hi` past the
            // last key at or before its key; either end is then bounded by the other.
            let (mut lo, mut hi) = (0, expected.len());
            let (mut got, mut want) = (Vec::new(), Vec::new());
            for s in steps {
                match s {
                    Step::Next => {
                        got.extend(it.next().map(|r| r.unwrap()));
                        if lo < hi {
                            want.push(expected[lo].clone());
                            lo += 1;
                        }
                    }
                    Step::NextBack => {
                        got.extend(it.next_back().map(|r| r.unwrap()));
                        if lo < hi {
                            hi -= 1;
                            want.push(expected[hi].clone());
                        }
                    }
                    Step::Seek(k) => {
                        it.seek(k);
                        lo = expected.partition_point(|(key, _)| key < k);
                    }
                    Step::SeekBack(k) => {
                        it.seek_back(k);
                        hi = expected.partition_point(|(key, _)| key <= k);
                    }
                }
            }
            // What is left, from the front.
            got.extend(it.map(|r| r.unwrap()));
            if lo < hi {
                want.extend(expected[lo..hi].iter().cloned());
            }
            (got, want)
        }
    }
}

fn check_everything(db: &Db, model: &Model) {
    let all: Pairs = db.iter().collect::<spillway::Result<_>>().unwrap();
    let want: Pairs = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len());
    assert!(all == want, "full scan differs from the model");
    let mut back: Pairs = db.iter().rev().collect::<spillway::Result<_>>().unwrap();
    back.reverse();
    assert!(back == want, "backward full scan differs from the model");
    db.check_tree().unwrap();
}

fn run(ops: &[Op], opts: Options) {
    let dir = tempfile::tempdir().unwrap();
    let mut db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Put(k, s, l) => {
                common::write_one(&db, &mut model, key(*k), Some(value(*k, *s, *l)))
            }
            Op::Delete(k) => common::write_one(&db, &mut model, key(*k), None),
            Op::Batch(entries) => common::write_batch(
                &db,
                &mut model,
                entries
                    .iter()
                    .map(|&(k, v)| (key(k), v.map(|(s, l)| value(k, s, l)))),
            ),
            Op::Range(lo, hi, how) => {
                let it = db.range((lo.clone(), hi.clone())).unwrap();
                let expected = model_range(&model, lo, hi);
                let (got, want) = read_both(it, how, &expected);
                assert!(
                    got == want,
                    "range {lo:?}..{hi:?} read {how:?}: got {} pairs, want {}",
                    got.len(),
                    want.len()
                );
            }
            Op::Prefix(p, rev) => {
                let want: Pairs = model
                    .iter()
                    .filter(|(k, _)| k.starts_with(p))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let it = db.prefix(p).unwrap();
                let how = if *rev { Read::Backward } else { Read::Forward };
                let (got, want) = read_both(it, &how, &want);
                assert!(
                    got == want,
                    "prefix {p:?}: got {} want {}",
                    got.len(),
                    want.len()
                );
            }
            Op::Reopen => {
                db.close().unwrap();
                db = Db::open(dir.path(), opts.clone()).unwrap();
                check_everything(&db, &model);
            }
        }
    }
    check_everything(&db, &model);
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check_everything(&db, &model);
    assert_eq!(db.files_in_use(), common::list_file_names(db.path()));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn ranges_match_a_btreemap(ops in proptest::collection::vec(op(), 1..300)) {
        run(&ops, tiny());
    }

    #[test]
    fn ranges_match_a_btreemap_with_lists_merged_at_two(ops in proptest::collection::vec(op(), 1..300)) {
        run(&ops, tiny().max_lists_per_node(2).node_size(8192));
    }

    /// Everything in one root buffer: scans read it through many sorted runs (one per stretch
    /// of writes between scans), long enough to have fences and to hold one key in several.
    #[test]
    fn ranges_match_a_btreemap_in_one_big_buffer(ops in proptest::collection::vec(op(), 1..600)) {
        run(&ops, tiny().root_buffer_size(64 << 20).memory_budget(None));
    }

    #[test]
    fn ranges_match_a_btreemap_with_slow_splits_only_and_no_filters(ops in proptest::collection::vec(op(), 1..200)) {
        run(&ops, tiny().fast_split_ratio(0).filter_bits_per_key(0));
    }
}

/// A seek from one end bounds the other end too: the cases the differential tester found.
#[test]
fn a_seek_from_one_end_bounds_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny()).unwrap();
    for k in ["a", "b", "c", "d", "e"] {
        db.put(k, k).unwrap();
    }
    let key = |r: Option<spillway::Result<(Vec<u8>, Vec<u8>)>>| r.map(|r| r.unwrap().0);
    for flushed in [false, true] {
        let mut it = db.iter();
        assert_eq!(key(it.next()), Some(b"a".to_vec()));
        it.seek_back("b");
        assert_eq!(key(it.next()), Some(b"b".to_vec()));
        assert_eq!(key(it.next()), None, "flushed {flushed}");
        assert_eq!(key(it.next_back()), None, "flushed {flushed}");

        let mut it = db.iter();
        assert_eq!(key(it.next_back()), Some(b"e".to_vec()));
        it.seek("d");
        assert_eq!(key(it.next_back()), Some(b"d".to_vec()));
        assert_eq!(key(it.next_back()), None, "flushed {flushed}");

        let mut it = db.range("a"..).unwrap();
        assert_eq!(key(it.next()), Some(b"a".to_vec()));
        it.seek_back("c");
        let rest: Vec<Vec<u8>> = it.map(|r| r.unwrap().0).collect();
        assert_eq!(rest, [b"b".to_vec(), b"c".to_vec()], "flushed {flushed}");

        // A seek back over what the other end returned reopens what lies between.
        let mut it = db.iter();
        assert_eq!(key(it.next()), Some(b"a".to_vec()));
        assert_eq!(key(it.next()), Some(b"b".to_vec()));
        assert_eq!(key(it.next_back()), Some(b"e".to_vec()));
        it.seek("a");
        let rest: Vec<Vec<u8>> = it.rev().map(|r| r.unwrap().0).collect();
        assert_eq!(
            rest,
            [b"d".to_vec(), b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]
        );
        db.flush().unwrap();
    }
}
