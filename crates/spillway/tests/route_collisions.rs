//! Distinct keys with the same 64-bit hash — the route of a hashed store, the filter and sketch
//! hash of an ordered one — are ordinary: real xxh3 collisions (found offline, see the
//! fixture's header) go through spills, fast- and slow-splits, reopens with other options,
//! `check`, point reads, full scans and scans resumed from a route as `SCAN` cursors do.
//! Before the fix, a list holding both keys of a pair wrote a sketch that `decode` refused:
//! the store could no longer be opened ("malformed sketch").

use std::collections::{BTreeMap, BTreeSet};

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

mod common;

fn value(key: &[u8], round: u32) -> Vec<u8> {
    let mut v = format!("{round}:").into_bytes();
    v.extend_from_slice(key);
    v
}

/// Small nodes and pages, so that a few thousand records spill and split many times.
fn small(order: KeyOrder) -> Options {
    Options::default()
        .root_buffer_size(4096)
        .node_size(16 << 10)
        .fan_out(3)
        .fast_split_ratio(2)
        .page_size(128)
        .key_order(order)
}

fn check_store(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for (k, v) in model {
        assert_eq!(
            db.get(k).unwrap().as_deref(),
            Some(&v[..]),
            "{:?}",
            k.escape_ascii()
        );
    }
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    let got = db.multi_get(&keys).unwrap();
    assert!(got
        .iter()
        .zip(model.values())
        .all(|(g, v)| g.as_ref() == Some(v)));
    // A full scan, either way, returns each key once.
    let all: BTreeMap<Vec<u8>, Vec<u8>> = db.iter().map(|r| r.unwrap()).collect();
    assert!(all == *model, "full scan differs from the model");
    assert_eq!(db.iter().count(), model.len());
    assert_eq!(db.iter().rev().count(), model.len());
    // Pages of 7 keys, each resumed from the route after the page's last key's, as `SCAN`
    // does; a page ends only where the route changes, so a pair comes in one page.
    let order = db.key_order();
    let (mut seen, mut cursor) = (BTreeSet::new(), 0u64);
    loop {
        let mut it = db.iter();
        it.seek_route(cursor);
        let mut last_route = None;
        let mut next = None;
        for (page, r) in it.enumerate() {
            let (k, _) = r.unwrap();
            let route = order.route(&k);
            if page >= 7 && last_route != Some(route) {
                next = Some(route);
                break;
            }
            last_route = Some(route);
            assert!(seen.insert(k), "a key came back in a later page");
        }
        match next {
            Some(n) => cursor = n,
            None => break,
        }
    }
    assert_eq!(seen.len(), model.len());
    db.check_tree().unwrap();
}

fn run(order: KeyOrder) {
    let pairs = common::colliding_pairs();
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let mut db = Db::open(dir.path(), small(order)).unwrap();
    // Rounds of filler keys with the pairs among them, so that pairs land in lists of every
    // size, on both sides of page and node boundaries; some of each pair deleted or
    // rewritten in later rounds.
    for round in 0..4u32 {
        let mut batch = WriteBatch::new();
        for i in 0..1500u32 {
            let k = format!("filler:{:06}", i * 7 + round).into_bytes();
            batch.put(&k, value(&k, round));
            model.insert(k.clone(), value(&k, round));
        }
        for (i, (a, b)) in pairs.iter().enumerate() {
            let i = i as u32;
            match (i + round) % 4 {
                0 if round > 0 => {
                    batch.delete(a);
                    model.remove(a);
                }
                _ => {
                    batch.put(a, value(a, round));
                    model.insert(a.clone(), value(a, round));
                }
            }
            batch.put(b, value(b, round + 10));
            model.insert(b.clone(), value(b, round + 10));
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
        if round % 2 == 1 {
            db.flush().unwrap();
        }
        check_store(&db, &model);
    }
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    // Reopens with other shapes: filters off and on, other pages and nodes.
    for opts in [
        small(order).filter_bits_per_key(0).page_size(256),
        small(order)
            .filter_bits_per_key(20)
            .node_size(64 << 10)
            .fan_out(8),
        Options::default().key_order(order),
    ] {
        db = Db::open(dir.path(), opts).unwrap();
        check_store(&db, &model);
        for (a, b) in pairs.iter().take(8) {
            db.put(a, value(a, 99)).unwrap();
            db.delete(b).unwrap();
            model.insert(a.clone(), value(a, 99));
            model.remove(b);
        }
        db.flush().unwrap();
        check_store(&db, &model);
        db.close().unwrap();
        let report = spillway::check(dir.path(), false).unwrap();
        assert!(report.is_sound(), "{:?}", report.problems);
    }
    let db = Db::open_read_only(dir.path(), Options::default()).unwrap();
    check_store(&db, &model);
}

#[test]
fn colliding_routes_in_a_hashed_store() {
    run(KeyOrder::Hashed);
}

#[test]
fn colliding_filter_hashes_in_an_ordered_store() {
    run(KeyOrder::Ordered);
}
