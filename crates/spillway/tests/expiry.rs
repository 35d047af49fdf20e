//! Expiry against a model that expires too: a `BTreeMap` of values with their expiry times,
//! under a test clock ([`ManualClock`]) that the test moves in small steps and big jumps.
//! Puts with and without expiry, changes of expiry (`expire`, `persist`), deletes and merge
//! operands (which fold into what the key held when they were written: nothing, once it
//! expired) go through tiny buffers and nodes, so that spills, splits, collections and
//! sweeps happen every few writes; the store is reopened at random points, with its options
//! changed. Every key is read back by `get`, `get_with_expiry`, `multi_get`, iterators from
//! both ends at once, snapshots taken earlier (which must hide what expired since) and
//! transactions. Keys include pairs whose hashes collide.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use proptest::prelude::*;
use spillway::{Clock, Db, Expiry, KeyOrder, ManualClock, Options, WriteBatch, WriteOptions};

/// A key's value and when it expires (ms; `u64::MAX`: never).
type Model = BTreeMap<Vec<u8>, (Vec<u8>, u64)>;
const NEVER: u64 = u64::MAX;
/// Where the test clock starts (ms since the epoch).
const START: u64 = 1_800_000_000_000;

fn time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

fn expiry_of(until: u64) -> Expiry {
    if until == NEVER {
        Expiry::Never
    } else {
        Expiry::At(time(until))
    }
}

#[derive(Clone, Debug)]
enum W {
    Put(u8),
    /// A value that expires `.1` ms from now (0: already gone).
    PutFor(u8, u64),
    Delete,
    Merge(u8),
    /// Expire `.0` ms from now.
    Expire(u64),
    Persist,
}

#[derive(Clone, Debug)]
enum Op {
    Write(u16, W),
    Batch(Vec<(u16, W)>),
    /// Move the clock on by this many ms.
    Tick(u64),
    Check,
    Snapshot,
    Flush,
    Reopen(u8),
}

fn write() -> impl Strategy<Value = W> {
    prop_oneof![
        3 => any::<u8>().prop_map(W::Put),
        4 => (any::<u8>(), 0..200u64).prop_map(|(v, t)| W::PutFor(v, t)),
        1 => Just(W::Delete),
        3 => any::<u8>().prop_map(W::Merge),
        2 => (0..200u64).prop_map(W::Expire),
        1 => Just(W::Persist),
    ]
}

fn op(keys: u16) -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0..keys, write()).prop_map(|(k, w)| Op::Write(k, w)),
        4 => prop::collection::vec((0..keys, write()), 1..6).prop_map(Op::Batch),
        6 => prop_oneof![1..20u64, 50..150u64, Just(1_000), Just(86_400_000)].prop_map(Op::Tick),
        2 => Just(Op::Check),
        1 => Just(Op::Snapshot),
        1 => Just(Op::Flush),
        1 => any::<u8>().prop_map(Op::Reopen),
    ]
}

/// Keys: short ones, and every tenth of a pair whose hashes collide.
fn key(i: u16) -> Vec<u8> {
    if i % 10 == 9 {
        let pairs = common::colliding_pairs();
        let (a, b) = &pairs[usize::from(i / 10) % pairs.len()];
        return if (i / 10).is_multiple_of(2) {
            a.clone()
        } else {
            b.clone()
        };
    }
    format!("k{i:03}").into_bytes()
}

fn value(v: u8) -> Vec<u8> {
    format!("v{v}").into_bytes()
}

/// What the model holds for `key` at `now`.
fn live(model: &Model, key: &[u8], now: u64) -> Option<(Vec<u8>, u64)> {
    model.get(key).filter(|(_, until)| *until > now).cloned()
}

/// Apply `w` to the model at time `now`, as the store does: a message finds the key as it is
/// at `now`.
fn apply(model: &mut Model, key: Vec<u8>, w: &W, now: u64) {
    let current = live(model, &key, now);
    match *w {
        W::Put(v) => {
            model.insert(key, (value(v), NEVER));
        }
        W::PutFor(v, ms) => {
            model.insert(key, (value(v), now + ms));
        }
        W::Delete => {
            model.remove(&key);
        }
        W::Merge(o) => {
            let next = match current {
                Some((mut v, until)) => {
                    v.push(b',');
                    v.extend_from_slice(&value(o));
                    (v, until)
                }
                None => (value(o), NEVER),
            };
            model.insert(key, next);
        }
        W::Expire(ms) => {
            if let Some((v, _)) = current {
                model.insert(key, (v, now + ms));
            }
        }
        W::Persist => {
            if let Some((v, _)) = current {
                model.insert(key, (v, NEVER));
            }
        }
    }
}

fn add(b: &mut WriteBatch, key: &[u8], w: &W, now: u64) {
    match *w {
        W::Put(v) => b.put(key, value(v)),
        W::PutFor(v, ms) => b.put_expiring(key, value(v), time(now + ms)),
        W::Delete => b.delete(key),
        W::Merge(o) => b.merge(key, value(o)),
        W::Expire(ms) => b.expire(key, time(now + ms)),
        W::Persist => b.persist(key),
    }
}

/// The store's options for reopen number `n`: each at one end of its range in turn. With
/// `partial`, an operator whose operands combine on their way down (unstamped ones only);
/// without, one whose operands stack.
fn options(order: KeyOrder, partial: bool, n: u8, clock: &Arc<ManualClock>) -> Options {
    let operator: Arc<dyn spillway::MergeOperator> = if partial {
        common::comma_append()
    } else {
        Arc::new(common::CommaJoin)
    };
    let base = common::minimal_options()
        .key_order(order)
        .merge_operator(operator)
        .clock(clock.clone());
    match n % 6 {
        0 => base,
        1 => base.node_size(64 << 10).fan_out(64),
        2 => base.fast_split_ratio(0).filter_bits_per_key(0),
        3 => base.max_lists_per_node(2).page_size(64),
        4 => base.filter_bits_per_key(32).node_size(2048),
        _ => base.background_spills(false).root_buffer_size(1 << 20),
    }
}

fn check(db: &Db, model: &Model, keys: u16, now: u64) {
    let want: BTreeMap<Vec<u8>, Vec<u8>> = model
        .iter()
        .filter(|(_, (_, until))| *until > now)
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect();
    for i in 0..keys {
        let k = key(i);
        let found = live(model, &k, now);
        assert_eq!(db.get(&k).unwrap(), found.clone().map(|f| f.0), "get {i}");
        assert_eq!(
            db.get_with_expiry(&k).unwrap(),
            found.clone().map(|(v, until)| (v, expiry_of(until))),
            "get_with_expiry {i}"
        );
        assert_eq!(
            db.expiry(&k).unwrap(),
            found.map(|(_, until)| expiry_of(until)),
            "expiry {i}"
        );
    }
    let all: Vec<Vec<u8>> = (0..keys).map(key).collect();
    let got = db.multi_get(&all).unwrap();
    for (k, v) in all.iter().zip(got) {
        assert_eq!(v.as_ref(), want.get(k), "multi_get");
    }
    let mut scanned = common::scan_both_ends(db.iter());
    if db.key_order() == KeyOrder::Hashed {
        scanned.sort();
    }
    let want_v: Vec<_> = want.into_iter().collect();
    assert_eq!(scanned, want_v, "iter from both ends");
}

fn run(order: KeyOrder, partial: bool, ops: Vec<Op>) {
    const KEYS: u16 = 40;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(time(START)));
    let mut db = Db::open(dir.path(), options(order, partial, 0, &clock)).unwrap();
    let mut model = Model::new();
    let mut now = START;
    // Transactions begun along the way, with the model as it was: what they read must be
    // that, less what expired since.
    let mut snapshots: Vec<(spillway::Transaction, Model)> = Vec::new();
    for op in ops {
        match op {
            Op::Write(k, w) => {
                let mut b = WriteBatch::new();
                add(&mut b, &key(k), &w, now);
                db.write(b, WriteOptions::NO_SYNC).unwrap();
                apply(&mut model, key(k), &w, now);
            }
            Op::Batch(ws) => {
                let mut b = WriteBatch::new();
                for (k, w) in &ws {
                    add(&mut b, &key(*k), w, now);
                    apply(&mut model, key(*k), w, now);
                }
                db.write(b, WriteOptions::NO_SYNC).unwrap();
            }
            Op::Tick(ms) => {
                // A snapshot taken before the clock moves hides what expires after.
                let snap = db.snapshot();
                now += ms;
                clock.set(time(now));
                for i in (0..KEYS).step_by(7) {
                    let k = key(i);
                    assert_eq!(snap.get(&k).unwrap(), live(&model, &k, now).map(|f| f.0));
                }
            }
            Op::Check => check(&db, &model, KEYS, now),
            Op::Snapshot => snapshots.push((db.transaction(), model.clone())),
            Op::Flush => db.flush().unwrap(),
            Op::Reopen(n) => {
                check_snapshots(&db, &mut snapshots, now);
                db.close().unwrap();
                db = Db::open(dir.path(), options(order, partial, n, &clock)).unwrap();
                db.check_tree().unwrap();
            }
        }
    }
    check_snapshots(&db, &mut snapshots, now);
    check(&db, &model, KEYS, now);
    // A transaction sees the same, and its own expiring writes fold over it.
    let ks = db.default_keyspace();
    let mut tx = db.transaction();
    for i in 0..KEYS {
        let k = key(i);
        let found = live(&model, &k, now);
        assert_eq!(tx.get(&ks, &k).unwrap(), found.clone().map(|f| f.0));
        assert_eq!(
            tx.expiry(&ks, &k).unwrap(),
            found.map(|(_, until)| expiry_of(until))
        );
    }
    drop(tx);
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Every transaction still reads its snapshot, but not the values whose time has come since.
fn check_snapshots(db: &Db, snapshots: &mut Vec<(spillway::Transaction, Model)>, now: u64) {
    let ks = db.default_keyspace();
    for (mut tx, model) in snapshots.drain(..) {
        for k in model.keys() {
            let want = live(&model, k, now).map(|f| f.0);
            assert_eq!(tx.get(&ks, k).unwrap(), want, "snapshot");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn hashed_stores_expire_as_the_model(
        partial in any::<bool>(),
        ops in prop::collection::vec(op(40), 1..400),
    ) {
        run(KeyOrder::Hashed, partial, ops);
    }

    #[test]
    fn ordered_stores_expire_as_the_model(
        partial in any::<bool>(),
        ops in prop::collection::vec(op(40), 1..400),
    ) {
        run(KeyOrder::Ordered, partial, ops);
    }
}

#[test]
fn ttls_at_both_ends_of_their_range() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(time(START)));
    let db = Db::open(dir.path(), Options::default().clock(clock.clone())).unwrap();
    // The longest: no overflow, no panic; the key stays.
    db.put_ttl("forever", "v", Duration::MAX).unwrap();
    clock.advance(Duration::from_secs(100 * 365 * 86_400));
    assert!(db.get("forever").unwrap().is_some());
    assert!(matches!(db.expiry("forever").unwrap(), Some(Expiry::At(_))));
    // The shortest: gone at once, and still hiding what it overwrote.
    db.put("k", "old").unwrap();
    db.put_ttl("k", "new", Duration::ZERO).unwrap();
    assert_eq!(db.get("k").unwrap(), None);
    db.flush().unwrap();
    assert_eq!(db.get("k").unwrap(), None);
    // A time before the epoch is long past.
    db.put_expiring("old", "v", UNIX_EPOCH - Duration::from_secs(1))
        .unwrap();
    assert_eq!(db.get("old").unwrap(), None);
    // The store's clock is the one it was given.
    assert_eq!(db.clock().now(), clock.now());
}
