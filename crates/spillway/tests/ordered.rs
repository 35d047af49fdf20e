//! Ordered stores beyond the model test: key shapes that stress an order-preserving route
//! (sequential counters, long shared prefixes), iterators and snapshots held while writers
//! spill and split under them, and the typed errors of the key-order choice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use spillway::{Db, Error, KeyOrder, Options, WriteBatch, WriteOptions};

mod common;

fn ordered(opts: Options) -> Options {
    opts.key_order(KeyOrder::Ordered)
}

fn pairs(
    it: impl Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.collect::<spillway::Result<_>>().unwrap()
}

/// Load `keys` (already in order) in batches, then check gets, full scans both ways, a range
/// in the middle, and the tree's shape: it must have grown past one leaf, which keys sharing
/// their first 8 bytes can only do by splitting on key bytes.
fn load_and_check(keys: &[Vec<u8>]) {
    let dir = tempfile::tempdir().unwrap();
    // Spills on the writer's thread: the shape checked below is then the same every run
    // (with background spills a flush leaves upkeep's splits to later spills).
    let opts = ordered(common::small_options()).background_spills(false);
    let db = Db::open(dir.path(), opts).unwrap();
    for chunk in keys.chunks(500) {
        let mut b = WriteBatch::new();
        for k in chunk {
            b.put(k, [k.as_slice(), b"=v"].concat());
        }
        db.write(b, WriteOptions::NO_SYNC).unwrap();
    }
    db.flush().unwrap();
    db.check_tree().unwrap();
    let stats = db.stats();
    assert!(stats.leaves >= 8, "the tree did not split: {stats:?}");
    for k in keys.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap(), Some([k.as_slice(), b"=v"].concat()));
    }
    let all = pairs(db.iter());
    assert_eq!(all.len(), keys.len());
    assert!(all.iter().map(|(k, _)| k).eq(keys.iter()));
    let mut back = pairs(db.iter().rev());
    back.reverse();
    assert!(back == all);
    let (a, b) = (&keys[keys.len() / 3], &keys[keys.len() / 2]);
    let mid = pairs(db.range(a.as_slice()..b.as_slice()).unwrap());
    assert_eq!(mid.len(), keys.len() / 2 - keys.len() / 3);
    assert_eq!(&mid[0].0, a);
    db.close().unwrap();
    let db = Db::open(dir.path(), ordered(common::small_options())).unwrap();
    assert_eq!(pairs(db.iter()).len(), keys.len());
    assert_eq!(db.files_in_use(), common::list_file_names(dir.path()));
}

#[test]
fn sequential_counters_load_and_scan() {
    let keys: Vec<Vec<u8>> = (0u64..30_000)
        .map(|i| (1_700_000_000_000 + i * 3).to_be_bytes().to_vec())
        .collect();
    load_and_check(&keys);
}

#[test]
fn keys_sharing_long_prefixes_split_on_key_bytes() {
    // Every key shares its first 13 bytes: one route for all of them.
    let keys: Vec<Vec<u8>> = (0u64..30_000)
        .map(|i| format!("user:00000000{i:08}").into_bytes())
        .collect();
    load_and_check(&keys);
}

#[test]
fn random_keys_sharing_a_prefix_in_random_order() {
    let mut x = 0x1234_5678_u64;
    let mut keys: Vec<Vec<u8>> = (0..20_000)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            format!("tenant/0001/{:016x}", x).into_bytes()
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), ordered(common::small_options())).unwrap();
    for k in &keys {
        db.put(k, b"v").unwrap();
    }
    keys.sort();
    keys.dedup();
    assert!(pairs(db.prefix("tenant/0001/").unwrap())
        .iter()
        .map(|(k, _)| k)
        .eq(keys.iter()));
    assert_eq!(pairs(db.prefix("tenant/0002/").unwrap()).len(), 0);
    db.check_tree().unwrap();
}

/// An iterator and a snapshot taken at one point see exactly that point while a writer
/// overwrites, deletes and adds keys, forcing spills, splits and garbage collection; the files
/// they read stay on disk until they are dropped.
#[test]
fn iterators_and_snapshots_keep_their_point_in_time_under_spills_and_splits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), ordered(common::tiny_options())).unwrap());
    let key = |i: u32| format!("k{i:06}").into_bytes();
    for i in 0..3000 {
        db.put(key(i), format!("old{i}")).unwrap();
    }
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0..3000)
        .map(|i| (key(i), format!("old{i}").into_bytes()))
        .collect();
    let snapshot = db.snapshot();
    let mut fwd = db.iter();
    let mut rev = db.range(key(0)..).unwrap().rev();
    // Read a little before the writer starts, the rest after.
    let first: Vec<_> = (&mut fwd).take(10).map(Result::unwrap).collect();
    let last: Vec<_> = (&mut rev).take(10).map(Result::unwrap).collect();
    let before = db.stats();

    let stop = Arc::new(AtomicBool::new(false));
    let begun = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop, begun) = (db.clone(), stop.clone(), begun.clone());
        std::thread::spawn(move || {
            // At least one whole round, however soon the readers are done.
            for round in 0..4 {
                for i in 0..3000 {
                    match i % 3 {
                        0 => db.delete(key(i)).unwrap(),
                        _ => db.put(key(i), format!("new{round}-{i}")).unwrap(),
                    }
                    db.put(key(10_000 + i), "added").unwrap();
                    if i == 100 {
                        begun.store(true, Ordering::Relaxed);
                    }
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        })
    };
    // The rest is read while the writer writes (on a busy machine, it might not have
    // started yet).
    while !begun.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    let mut got = first;
    got.extend(fwd.map(Result::unwrap));
    let mut got_rev: Vec<_> = last;
    got_rev.extend(rev.map(Result::unwrap));
    got_rev.reverse();
    let snap_all = pairs(snapshot.range(key(0)..key(5000)).unwrap());
    let snap_get = snapshot.get(key(3)).unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(got == expected, "forward iterator saw other writes");
    assert!(got_rev == expected, "backward iterator saw other writes");
    assert!(snap_all == expected, "snapshot range saw other writes");
    assert_eq!(snap_get, Some(b"old3".to_vec()));

    // And after the writer is done, everything the snapshot pinned is still readable.
    db.flush().unwrap();
    let after = db.stats();
    assert!(
        after.root_spills > before.root_spills && after.fast_splits + after.slow_splits > 0,
        "the writer must have spilled and split under the readers: {after:?}"
    );
    assert!(pairs(snapshot.iter()) == expected);
    drop(snapshot);
    // Now only the current tree's files remain (the old ones went with the last reader).
    let db = Arc::try_unwrap(db).ok().unwrap();
    db.flush().unwrap();
    assert_eq!(db.files_in_use(), common::list_file_names(dir.path()));
    let now = pairs(db.range(key(0)..key(3000)).unwrap());
    assert_eq!(now.len(), 2000);
}

#[test]
fn the_key_order_is_fixed_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), ordered(Options::default())).unwrap();
    db.put("a", "1").unwrap();
    db.close().unwrap();
    let hashed = Options::default().key_order(KeyOrder::Hashed);
    match Db::open(dir.path(), hashed) {
        Err(Error::KeyOrderMismatch { stored, requested }) => {
            assert_eq!((stored, requested), (KeyOrder::Ordered, KeyOrder::Hashed));
        }
        other => panic!("expected KeyOrderMismatch, got {:?}", other.map(|_| ())),
    }
    // Options that name no order open the store in its own.
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.key_order(), KeyOrder::Ordered);
    assert_eq!(pairs(db.prefix("a").unwrap()).len(), 1);
    db.close().unwrap();
    // A reader takes whatever the store has.
    let reader = Db::open_read_only(dir.path(), Options::default()).unwrap();
    assert_eq!(reader.key_order(), KeyOrder::Ordered);
    assert_eq!(pairs(reader.prefix("a").unwrap()).len(), 1);
    drop(reader);

    let hashed_dir = tempfile::tempdir().unwrap();
    let db = Db::open(hashed_dir.path(), Options::default()).unwrap();
    db.put("a", "1").unwrap();
    assert!(matches!(db.range("a"..), Err(Error::NotOrdered)));
    assert!(matches!(db.prefix("a"), Err(Error::NotOrdered)));
    assert!(matches!(
        db.snapshot().range("a".."b"),
        Err(Error::NotOrdered)
    ));
    // A hashed store still iterates whole, in hash order.
    assert_eq!(pairs(db.iter()), [(b"a".to_vec(), b"1".to_vec())]);
    db.close().unwrap();
    assert!(matches!(
        Db::open(hashed_dir.path(), ordered(Options::default())),
        Err(Error::KeyOrderMismatch { .. })
    ));
}

#[test]
fn tombstones_never_appear_and_empty_ranges_are_empty() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), ordered(common::tiny_options())).unwrap();
    for i in 0u32..500 {
        db.put(i.to_be_bytes(), b"v").unwrap();
    }
    for i in (0u32..500).filter(|i| i % 2 == 0) {
        db.delete(i.to_be_bytes()).unwrap();
    }
    let keys: Vec<u32> = pairs(db.iter())
        .into_iter()
        .map(|(k, _)| u32::from_be_bytes(k.try_into().unwrap()))
        .collect();
    assert_eq!(keys, (0..500).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    let (a, b) = (10u32.to_be_bytes(), 5u32.to_be_bytes());
    assert_eq!(db.range(a..b).unwrap().count(), 0);
    assert_eq!(db.range(a..a).unwrap().count(), 0);
    assert_eq!(db.range(a..=a).unwrap().count(), 0); // deleted
    let eleven = 11u32.to_be_bytes();
    assert_eq!(db.range(eleven..=eleven).unwrap().count(), 1);
}

/// `check` verifies an ordered store's lists (their key order, separators and filters), and a
/// damaged page is an error from a scan, once, never wrong data.
#[test]
fn check_verifies_ordered_lists_and_scans_report_damage() {
    let dir = tempfile::tempdir().unwrap();
    // Spills on the writer's thread: the lists are then the same every run (with background
    // spills, whether upkeep rewrote the last ones before the flush is timing), each with a
    // first page long enough for the byte damaged below.
    let opts = || ordered(common::small_options()).background_spills(false);
    let db = Db::open(dir.path(), opts()).unwrap();
    for i in 0u32..5000 {
        db.put(format!("user:00000000{i:06}"), [b'v'; 20]).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert!(report.lists > 1 && report.records >= 5000, "{report:?}");

    // Damage a byte in the middle of the first page of every list file.
    for path in common::files_with_extension(dir.path(), "list") {
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[100] ^= 0x40;
        std::fs::write(&path, bytes).unwrap();
    }
    assert!(!spillway::check(dir.path(), false).unwrap().is_sound());
    let db = Db::open(dir.path(), opts()).unwrap();
    let mut it = db.iter();
    let mut good = 0;
    let err = loop {
        match it.next() {
            Some(Ok((k, v))) => {
                assert!(k.starts_with(b"user:") && v == [b'v'; 20]);
                good += 1;
            }
            Some(Err(e)) => break e,
            None => panic!("a scan over damaged pages ended without an error"),
        }
    };
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(it.next().is_none(), "the iterator ends after its error");
    assert!(good < 5000);
}
