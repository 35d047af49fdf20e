//! Scans resumed from a route (`Iter::seek_route`, what Redis's numeric SCAN cursors rest
//! on) and key counts (`Db::estimate_keys`), against a `BTreeMap`: random writes and deletes
//! with tiny buffers and nodes so that spills and splits happen, in both kinds of store, then
//! a scan in chunks of a few keys, each resumed from the route after the last one returned.
//! Every key must come back exactly once, and the count must be exact in a hashed store (lists
//! this small keep every key as a sample).

use std::collections::BTreeMap;

use proptest::prelude::*;
use spillway::{Db, KeyOrder, Options};

mod common;

fn tiny(order: KeyOrder) -> Options {
    Options::default()
        .root_buffer_size(2048)
        .node_size(1024)
        .fan_out(3)
        .page_size(128)
        .key_order(order)
}

/// Key `i`: short keys, and in an ordered store runs sharing their first 8 bytes (one route).
fn key(i: u8) -> Vec<u8> {
    match i % 3 {
        0 => format!("user:000{i:03}").into_bytes(),
        1 => vec![i; usize::from(i % 5)],
        _ => format!("k{i}").into_bytes(),
    }
}

/// Fewer keys than a list keeps samples of, so that counts are exact.
const KEYS: u8 = 60;

/// Scan `db` in chunks of at least `chunk` keys; a chunk ends where the route changes, as a
/// cursor that is a route must.
fn scan_in_chunks(db: &Db, chunk: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let order = db.key_order();
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut from = 0u64;
    loop {
        let mut it = db.iter();
        it.seek_route(from);
        let mut next = None;
        for (taken, r) in it.enumerate() {
            let (k, v) = r.unwrap();
            let route = order.route(&k);
            if taken >= chunk && out.last().is_some_and(|(l, _)| order.route(l) != route) {
                next = Some(route);
                break;
            }
            out.push((k, v));
        }
        match next {
            Some(route) => from = route,
            None => return out,
        }
    }
}

fn run(order: KeyOrder, ops: &[(u8, Option<u8>)], chunk: usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), tiny(order)).unwrap();
    let mut model = BTreeMap::new();
    for &(k, v) in ops {
        let value = v.map(|v| vec![v; usize::from(v % 40)]);
        common::write_one(&db, &mut model, key(k % KEYS), value);
    }
    let mut got = scan_in_chunks(&db, chunk);
    let estimate = db.estimate_keys().unwrap();
    match order {
        KeyOrder::Hashed => assert_eq!(estimate, model.len() as u64),
        // A page a fast-split left on one side of a list holds keys of the other; in an
        // ordered store samples cannot tell which (no route), so one may count on both sides.
        KeyOrder::Ordered => assert!(estimate.abs_diff(model.len() as u64) <= 2),
    }
    got.sort();
    let want: Vec<_> = model.into_iter().collect();
    assert!(got == want, "got {} pairs, want {}", got.len(), want.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn hashed_scans_resume_from_routes(
        ops in proptest::collection::vec((any::<u8>(), proptest::option::weighted(0.8, any::<u8>())), 1..400),
        chunk in 1usize..12,
    ) {
        run(KeyOrder::Hashed, &ops, chunk);
    }

    #[test]
    fn ordered_scans_resume_from_routes(
        ops in proptest::collection::vec((any::<u8>(), proptest::option::weighted(0.8, any::<u8>())), 1..400),
        chunk in 1usize..12,
    ) {
        run(KeyOrder::Ordered, &ops, chunk);
    }
}
