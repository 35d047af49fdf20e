//! Keyspaces against `BTreeMap` models: one store holding the default keyspace (hashed, with a
//! merge operator) and named keyspaces of both orders, with and without an operator, each
//! against its own model, with tiny buffers and nodes so that spills and splits happen every
//! few writes; batches span keyspaces; a keyspace is dropped and created again; snapshots
//! taken along the way must keep seeing every keyspace as it was; the store is reopened at
//! random points. After each reopen every keyspace is compared whole, the trees' invariants
//! are checked, and the files on disk must be exactly those the trees use.

mod common;

use std::collections::BTreeMap;

use proptest::prelude::*;
use spillway::{Db, Error, KeyOrder, Keyspace, KeyspaceOptions, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn tiny() -> Options {
    common::minimal_options().merge_operator(common::comma_append())
}

/// The keyspaces: 0 the default; then "ordered" (ordered, comma-append), "plain" (hashed, no
/// operator) and "tmp" (ordered, comma-append), which is dropped and created again.
const NAMED: [&str; 3] = ["ordered", "plain", "tmp"];
const SPACES: usize = 4;

fn ks_options(i: usize) -> KeyspaceOptions {
    match i {
        1 | 3 => KeyspaceOptions::default()
            .key_order(KeyOrder::Ordered)
            .merge_operator(common::comma_append()),
        _ => KeyspaceOptions::default(),
    }
}

fn has_operator(i: usize) -> bool {
    i != 2
}

fn is_ordered(i: usize) -> bool {
    i == 1 || i == 3
}

fn key(i: u16) -> Vec<u8> {
    format!("k{i:03}-{}", "x".repeat(usize::from(i % 4))).into_bytes()
}

#[derive(Clone, Debug)]
enum Op {
    Write(usize, u16, W),
    Batch(Vec<(usize, u16, W)>),
    Get(usize, u16),
    Range(usize, u16, u16),
    Snapshot,
    Drop,
    Reopen,
}

#[derive(Clone, Debug)]
enum W {
    Put(u8, usize),
    Delete,
    Merge(u8),
}

const KEYS: u16 = 120;

fn w() -> impl Strategy<Value = W> {
    prop_oneof![
        6 => (any::<u8>(), 0usize..120).prop_map(|(s, l)| W::Put(s, l)),
        2 => Just(W::Delete),
        3 => any::<u8>().prop_map(W::Merge),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0..SPACES, 0..KEYS, w()).prop_map(|(s, k, w)| Op::Write(s, k, w)),
        3 => proptest::collection::vec((0..SPACES, 0..KEYS, w()), 1..20).prop_map(Op::Batch),
        4 => (0..SPACES, 0..KEYS).prop_map(|(s, k)| Op::Get(s, k)),
        2 => (0..SPACES, 0..KEYS, 0..KEYS).prop_map(|(s, a, b)| Op::Range(s, a, b)),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Drop),
        1 => Just(Op::Reopen),
    ]
}

/// A merge where the keyspace has no operator is a put, so that every op is valid.
fn effect(space: usize, k: u16, w: &W) -> common::Write {
    match *w {
        W::Put(s, l) => {
            let mut v = format!("{space}:{k}:{s}:").into_bytes();
            v.resize(l.max(v.len()), s);
            common::Write::Put(v)
        }
        W::Delete => common::Write::Delete,
        W::Merge(s) if has_operator(space) => common::Write::Merge(format!("+{s}").into_bytes()),
        W::Merge(s) => common::Write::Put(vec![s]),
    }
}

struct Store {
    db: Db,
    spaces: Vec<Keyspace>,
}

impl Store {
    fn open(dir: &std::path::Path) -> Store {
        let db = Db::open(dir, tiny()).unwrap();
        let mut spaces = vec![db.default_keyspace()];
        for (i, name) in NAMED.iter().enumerate() {
            spaces.push(db.keyspace(name, ks_options(i + 1)).unwrap());
        }
        Store { db, spaces }
    }
}

fn add(batch: &mut WriteBatch, ks: &Keyspace, key: &[u8], w: &common::Write) {
    match w {
        common::Write::Put(v) => batch.put_in(ks, key, v),
        common::Write::Delete => batch.delete_in(ks, key),
        common::Write::Merge(o) => batch.merge_in(ks, key, o),
    }
}

fn scan(ks: &Keyspace) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut all: Vec<_> = ks.iter().unwrap().collect::<spillway::Result<_>>().unwrap();
    if ks.key_order().unwrap() == KeyOrder::Hashed {
        all.sort();
    }
    all
}

fn pairs(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn check_all(s: &Store, models: &[Model]) {
    for (i, (ks, model)) in s.spaces.iter().zip(models).enumerate() {
        assert_eq!(scan(ks), pairs(model), "keyspace {i}");
        for k in (0..KEYS).step_by(7) {
            assert_eq!(
                ks.get(key(k)).unwrap(),
                model.get(&key(k)).cloned(),
                "{i}/{k}"
            );
        }
    }
    s.db.flush().unwrap();
    s.db.check_tree().unwrap();
    assert_eq!(s.db.files_in_use(), common::list_file_names(s.db.path()));
}

fn run(ops: &[Op]) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(dir.path());
    let mut models: Vec<Model> = vec![Model::new(); SPACES];
    let mut snapshots: Vec<Vec<Model>> = Vec::new();
    for op in ops {
        match op {
            Op::Write(space, k, w) => {
                let (ks, key, w) = (&s.spaces[*space], key(*k), effect(*space, *k, w));
                match &w {
                    common::Write::Put(v) => ks.put(&key, v).unwrap(),
                    common::Write::Delete => ks.delete(&key).unwrap(),
                    common::Write::Merge(o) => ks.merge(&key, o).unwrap(),
                }
                common::model_write(&mut models[*space], key, w);
            }
            Op::Batch(entries) => {
                let mut batch = WriteBatch::new();
                for (space, k, w) in entries {
                    let w = effect(*space, *k, w);
                    add(&mut batch, &s.spaces[*space], &key(*k), &w);
                    common::model_write(&mut models[*space], key(*k), w);
                }
                s.db.write(batch, WriteOptions::NO_SYNC).unwrap();
            }
            Op::Get(space, k) => {
                let got = s.spaces[*space].get(key(*k)).unwrap();
                assert_eq!(got, models[*space].get(&key(*k)).cloned());
            }
            Op::Range(space, a, b) if is_ordered(*space) => {
                let (lo, hi) = (key(*a.min(b)), key(*a.max(b)));
                let ks = &s.spaces[*space];
                let got: Vec<_> = ks
                    .range(lo.as_slice()..hi.as_slice())
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let want: Vec<_> = models[*space]
                    .range(lo.clone()..hi.clone())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want);
                let back: Vec<_> = ks
                    .range(lo.as_slice()..hi.as_slice())
                    .unwrap()
                    .rev()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(back, want.into_iter().rev().collect::<Vec<_>>());
            }
            Op::Range(space, ..) => {
                assert!(matches!(
                    s.spaces[*space].range(key(0)..),
                    Err(Error::NotOrdered)
                ));
            }
            Op::Snapshot => {
                // A snapshot sees every keyspace as the models are now, after later writes.
                let snap = s.db.snapshot();
                let at: Vec<Model> = models.clone();
                for (i, ks) in s.spaces.iter().enumerate() {
                    let mut batch = WriteBatch::new();
                    batch.put_in(ks, key(0), b"after the snapshot");
                    s.db.write(batch, WriteOptions::NO_SYNC).unwrap();
                    common::model_write(
                        &mut models[i],
                        key(0),
                        common::Write::Put(b"after the snapshot".to_vec()),
                    );
                }
                for (i, ks) in s.spaces.iter().enumerate() {
                    let mut all: Vec<_> = snap.iter_in(ks).unwrap().map(Result::unwrap).collect();
                    all.sort();
                    assert_eq!(all, pairs(&at[i]), "snapshot of keyspace {i}");
                    assert_eq!(
                        snap.get_in(ks, key(0)).unwrap(),
                        at[i].get(&key(0)).cloned()
                    );
                }
                snapshots.push(at);
            }
            Op::Drop => {
                let old = s.spaces[3].clone();
                assert!(s.db.drop_keyspace("tmp").unwrap());
                assert!(matches!(
                    old.get(key(1)),
                    Err(Error::KeyspaceDropped { .. })
                ));
                assert!(matches!(
                    old.put(key(1), "x"),
                    Err(Error::KeyspaceDropped { .. })
                ));
                let mut batch = WriteBatch::new();
                batch.put_in(&old, key(1), "x");
                batch.put(key(1), "not written either");
                assert!(matches!(
                    s.db.write(batch, WriteOptions::NO_SYNC),
                    Err(Error::KeyspaceDropped { .. })
                ));
                s.spaces[3] = s.db.keyspace("tmp", ks_options(3)).unwrap();
                models[3].clear();
                assert_eq!(scan(&s.spaces[3]), vec![]);
            }
            Op::Reopen => {
                drop(s);
                s = Store::open(dir.path());
                check_all(&s, &models);
            }
        }
    }
    check_all(&s, &models);
    assert_eq!(s.db.keyspaces(), NAMED);
    drop(s);
    let s = Store::open(dir.path());
    check_all(&s, &models);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn every_keyspace_matches_its_model(ops in proptest::collection::vec(op(), 1..300)) {
        run(&ops);
    }
}

/// Keyspaces keep what they were created with, and say so when asked for something else.
#[test]
fn a_keyspace_reopens_with_its_order_and_operator_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ordered = KeyspaceOptions::default().key_order(KeyOrder::Ordered);
    let counters =
        KeyspaceOptions::default().merge_operator(std::sync::Arc::new(spillway::operators::U64Add));
    db.keyspace("o", ordered.clone()).unwrap();
    let c = db.keyspace("c", counters.clone()).unwrap();
    c.merge("n", 5u64.to_le_bytes()).unwrap();
    assert!(matches!(
        db.keyspace("o", KeyspaceOptions::default()),
        Err(Error::KeyOrderMismatch { .. })
    ));
    assert!(matches!(
        db.keyspace(
            "c",
            KeyspaceOptions::default().merge_operator(common::comma_append())
        ),
        Err(Error::MergeOperatorMismatch { .. })
    ));
    // The default keyspace has no operator: merges are refused there, not in "c".
    assert!(matches!(db.merge("n", [1]), Err(Error::NoMergeOperator)));
    assert!(matches!(
        db.keyspace(&"x".repeat(256), KeyspaceOptions::default()),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(matches!(
        db.drop_keyspace(""),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(!db.drop_keyspace("never").unwrap());
    db.close().unwrap();

    // Reopened with no options for them, both keep what they recorded (a built-in operator).
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.keyspaces(), ["c", "o"]);
    let c = db.keyspace("c", KeyspaceOptions::default()).unwrap();
    c.merge("n", 2u64.to_le_bytes()).unwrap();
    assert_eq!(c.get("n").unwrap(), Some(7u64.to_le_bytes().to_vec()));
    let o = db.keyspace("o", ordered).unwrap();
    assert_eq!(o.key_order().unwrap(), KeyOrder::Ordered);
    db.close().unwrap();

    // A read-only handle reads them, and creates none.
    let reader = Db::open_read_only(dir.path(), Options::default()).unwrap();
    let c = reader.keyspace("c", counters).unwrap();
    assert_eq!(c.get("n").unwrap(), Some(7u64.to_le_bytes().to_vec()));
    assert!(matches!(
        reader.keyspace("new", KeyspaceOptions::default()),
        Err(Error::ReadOnly)
    ));
}

/// A store that had a named keyspace never reuses its id, even after every named keyspace is
/// gone.
#[test]
fn keyspace_ids_are_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();

    // Written to the log, then dropped: the records must not come back in the next keyspace.
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    a.put("k", "in a").unwrap();
    db.drop_keyspace("a").unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    assert_eq!(b.get("k").unwrap(), None);
    db.drop_keyspace("b").unwrap();
    drop(db);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let c = db.keyspace("c", KeyspaceOptions::default()).unwrap();
    assert_eq!(
        c.get("k").unwrap(),
        None,
        "a dropped keyspace's records came back"
    );
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}

/// Dropping a keyspace removes its files (once no reader holds them), and none of another's.
#[test]
fn dropping_a_keyspace_releases_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::small_options()).unwrap();
    let big = db.keyspace("big", KeyspaceOptions::default()).unwrap();
    for i in 0..5000u32 {
        big.put(i.to_be_bytes(), [7u8; 64]).unwrap();
        db.put(i.to_be_bytes(), "default").unwrap();
    }
    db.flush().unwrap();
    let before = common::list_file_names(dir.path());
    let reader = big.iter().unwrap(); // pins the files it reads
    db.drop_keyspace("big").unwrap();
    assert_eq!(reader.count(), 5000, "an iterator reads on after the drop");
    let after = common::list_file_names(dir.path());
    assert!(
        after.len() < before.len(),
        "{} files before, {} after",
        before.len(),
        after.len()
    );
    assert_eq!(db.files_in_use(), after);
    assert_eq!(
        db.get(4999u32.to_be_bytes()).unwrap().as_deref(),
        Some(&b"default"[..])
    );
}

/// `swap_keyspaces` exchanges contents (the default keyspace's too), durably.
#[test]
fn swapping_keyspaces_exchanges_their_contents() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let one = db.keyspace("one", KeyspaceOptions::default()).unwrap();
    db.put("k", "default").unwrap();
    one.put("k", "one").unwrap();
    db.swap_keyspaces("", "one").unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(one.get("k").unwrap().as_deref(), Some(&b"default"[..]));
    let ordered = db
        .keyspace("o", KeyspaceOptions::default().key_order(KeyOrder::Ordered))
        .unwrap();
    assert!(matches!(
        db.swap_keyspaces("one", "o"),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(matches!(
        db.swap_keyspaces("one", "none"),
        Err(Error::InvalidKeyspace { .. })
    ));
    drop((one, ordered));
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let one = db.keyspace("one", KeyspaceOptions::default()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"one"[..]));
    assert_eq!(one.get("k").unwrap().as_deref(), Some(&b"default"[..]));
}

/// `swap_keyspace_pairs` swaps every pair at once, or none: one pair refused refuses all.
#[test]
fn swapping_pairs_of_keyspaces_swaps_all_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ordered = || KeyspaceOptions::default().key_order(KeyOrder::Ordered);
    let (a, b) = (
        db.keyspace("a", ordered()).unwrap(),
        db.keyspace("b", ordered()).unwrap(),
    );
    let one = db.keyspace("one", KeyspaceOptions::default()).unwrap();
    a.put("k", "a").unwrap();
    b.put("k", "b").unwrap();
    db.put("k", "default").unwrap();
    one.put("k", "one").unwrap();
    let refused = [
        db.swap_keyspace_pairs(&[("a", "b"), ("", "none")]),
        db.swap_keyspace_pairs(&[("a", "b"), ("b", "one")]),
        db.swap_keyspace_pairs(&[("a", "b"), ("a", "b")]),
    ];
    for r in refused {
        assert!(matches!(r, Err(Error::InvalidKeyspace { .. })), "{r:?}");
    }
    assert_eq!(a.get("k").unwrap().as_deref(), Some(&b"a"[..]));
    db.swap_keyspace_pairs(&[("a", "b"), ("one", ""), ("a", "a")])
        .unwrap();
    let seen = |db: &Db| {
        let names = ["a", "b", "", "one"];
        let handles: Vec<_> = names
            .iter()
            .map(|n| db.keyspace_handle(n).unwrap())
            .collect();
        handles
            .iter()
            .map(|ks| ks.get("k").unwrap().unwrap())
            .collect::<Vec<_>>()
    };
    let want: Vec<Vec<u8>> = ["b", "a", "one", "default"].map(|v| v.into()).to_vec();
    assert_eq!(seen(&db), want);
    drop((a, b, one));
    db.close().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    db.keyspace("a", ordered()).unwrap();
    db.keyspace("b", ordered()).unwrap();
    db.keyspace("one", KeyspaceOptions::default()).unwrap();
    assert_eq!(seen(&db), want);
}

/// A keyspace handle of one store is refused by another, never taken for the keyspace of
/// the same id there.
#[test]
fn a_keyspace_of_another_store_is_refused() {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = Db::open(d1.path(), Options::default()).unwrap();
    let two = Db::open(d2.path(), Options::default()).unwrap();
    let theirs = one.keyspace("k", KeyspaceOptions::default()).unwrap();
    let ours = two.keyspace("k", KeyspaceOptions::default()).unwrap();
    let mut batch = WriteBatch::new();
    batch.put_in(&theirs, "a", "1");
    assert!(matches!(
        two.write(batch, WriteOptions::NO_SYNC),
        Err(Error::InvalidKeyspace { .. })
    ));
    let mut mixed = WriteBatch::new();
    mixed.put_in(&ours, "a", "1");
    mixed.put_in(&theirs, "a", "1");
    assert!(matches!(
        two.write(mixed, WriteOptions::NO_SYNC),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(matches!(
        two.snapshot().get_in(&theirs, "a"),
        Err(Error::InvalidKeyspace { .. })
    ));
    let mut tx = two.transaction();
    assert!(matches!(
        tx.put(&theirs, "a", "1"),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(matches!(
        tx.get(&theirs, "a"),
        Err(Error::InvalidKeyspace { .. })
    ));
    assert!(tx.iter(&theirs).is_err());
    assert_eq!(ours.get("a").unwrap(), None);
}

/// Keys whose routes collide, in named keyspaces of both orders, through every option at
/// each end of its range: each reopen takes the extreme options, writes more (plain writes,
/// batches across keyspaces, transactions), and every keyspace — read whole, by key, and by a
/// transaction's scan taken from both ends at once — matches its model; then the store
/// reopens with the defaults and passes `check`.
#[test]
fn colliding_keys_in_keyspaces_under_every_option_at_its_ends() {
    let colliding = common::colliding_pairs();
    let keys: Vec<Vec<u8>> = colliding
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let spaces = [
        ("hashed", KeyspaceOptions::default()),
        (
            "ordered",
            KeyspaceOptions::default()
                .key_order(KeyOrder::Ordered)
                .merge_operator(common::comma_append()),
        ),
    ];
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        Db::open(dir.path(), common::extremes_base(order))
            .unwrap()
            .close()
            .unwrap();
        let mut models = vec![Model::new(); 2];
        for (round, (name, opts)) in common::option_extremes(order).into_iter().enumerate() {
            let ctx = format!("{order} {name}");
            let db = Db::open(dir.path(), opts).unwrap_or_else(|e| panic!("{ctx}: {e}"));
            let ks: Vec<Keyspace> = spaces
                .iter()
                .map(|(n, o)| db.keyspace(n, o.clone()).unwrap())
                .collect();
            // A batch across both keyspaces, then a transaction rewriting a pair in each.
            let mut batch = WriteBatch::new();
            for (i, k) in keys
                .iter()
                .enumerate()
                .filter(|(i, _)| (i + round) % 3 == 0)
            {
                let v = format!("{round}:{i}").into_bytes();
                batch.put_in(&ks[i % 2], k, &v);
                models[i % 2].insert(k.clone(), v);
            }
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
            let (a, b) = &colliding[round % colliding.len()];
            let mut tx = db.transaction();
            for (s, model) in models.iter_mut().enumerate() {
                let seen = tx.get(&ks[s], a).unwrap();
                assert_eq!(seen, model.get(a).cloned(), "{ctx}");
                tx.put(&ks[s], a, b"tx").unwrap();
                model.insert(a.clone(), b"tx".to_vec());
                tx.delete(&ks[s], b).unwrap();
                model.remove(b);
            }
            // The transaction's own view, from both ends at once.
            for (s, model) in models.iter().enumerate() {
                let mut it = tx.iter(&ks[s]).unwrap();
                let (mut front, mut back) = (Vec::new(), Vec::new());
                loop {
                    match (it.next(), it.next_back()) {
                        (None, None) => break,
                        (f, r) => {
                            front.extend(f.map(Result::unwrap));
                            back.extend(r.map(Result::unwrap));
                        }
                    }
                }
                front.extend(back.into_iter().rev());
                let mut seen: Vec<_> = front;
                let n = seen.len();
                if s == 0 {
                    seen.sort();
                }
                seen.dedup();
                assert_eq!(seen.len(), n, "{ctx}: a key twice");
                assert_eq!(seen, pairs(model), "{ctx}: keyspace {s} in the transaction");
            }
            tx.commit().unwrap();
            if round % 4 == 1 {
                db.flush().unwrap();
            }
            for (s, model) in models.iter().enumerate() {
                assert_eq!(scan(&ks[s]), pairs(model), "{ctx}: keyspace {s}");
                for k in &keys {
                    assert_eq!(ks[s].get(k).unwrap(), model.get(k).cloned(), "{ctx}");
                }
            }
            drop(ks);
            db.close().unwrap();
        }
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for ((n, _), model) in spaces.iter().zip(&models) {
            let ks = db.keyspace_handle(n).unwrap();
            assert_eq!(scan(&ks), pairs(model), "{order}: {n} with the defaults");
        }
        db.close().unwrap();
        assert!(
            spillway::check(dir.path(), false).unwrap().is_sound(),
            "{order}"
        );
    }
}
