//! Every option at each end of its range, in both key orders: a store takes writes, spills,
//! splits, reopens with those options and with the defaults, reads back every record and
//! passes `check`, with its metadata memory bounded. Before the fix, `filter_bits_per_key` 32
//! built node selectors of gigabytes (an empty Elias–Fano sequence over a universe of 2^40),
//! and some seeds aborted the process on an allocation of 32 GiB.

use std::collections::BTreeMap;

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

mod common;

fn key(i: u32) -> Vec<u8> {
    format!("key:{:08}", i.wrapping_mul(2_654_435_761) % 100_000).into_bytes()
}

fn verify(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, name: &str) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]), "{name}");
    }
    assert_eq!(db.iter().count(), model.len(), "{name}");
    let s = db.stats();
    let metadata = s.filter_bytes + s.index_bytes + s.sketch_bytes + s.selector_bytes;
    // A few hundred records: anything past a few MiB is a runaway structure.
    assert!(
        metadata < 4 << 20,
        "{name}: {metadata} bytes of metadata: {s:?}"
    );
}

#[test]
fn every_option_at_each_end_of_its_range() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        for (name, opts) in common::option_extremes(order) {
            let name = format!("{order} {name}");
            let dir = tempfile::tempdir().unwrap();
            // A store must exist for `create_if_missing: false`.
            Db::open(dir.path(), common::extremes_base(order))
                .unwrap()
                .close()
                .unwrap();
            let mut model = BTreeMap::new();
            let db = Db::open(dir.path(), opts.clone()).unwrap();
            for round in 0..3u32 {
                let mut batch = WriteBatch::new();
                for i in 0..200 {
                    let (k, v) = (key(i * 3 + round), format!("{round}:{i}").repeat(3));
                    batch.put(&k, &v);
                    model.insert(k, v.into_bytes());
                }
                batch.delete(key(round));
                model.remove(&key(round));
                db.write(batch, WriteOptions::NO_SYNC).unwrap();
                for i in 0..20 {
                    let (k, v) = (key(1000 + i + round * 20), vec![round as u8; 40]);
                    db.put(&k, &v).unwrap();
                    model.insert(k, v);
                }
                if round == 1 {
                    db.flush().unwrap();
                }
                verify(&db, &model, &name);
            }
            db.close().unwrap();
            let db = Db::open(dir.path(), opts.clone()).unwrap();
            verify(&db, &model, &name);
            db.flush().unwrap();
            db.close().unwrap();
            // Reopened with every option back at its default.
            let db = Db::open(dir.path(), Options::default()).unwrap();
            verify(&db, &model, &name);
            db.close().unwrap();
            let report = spillway::check(dir.path(), false).unwrap();
            assert!(report.is_sound(), "{name}: {:?}", report.problems);
        }
    }
}
