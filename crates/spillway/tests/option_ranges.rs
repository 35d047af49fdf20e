//! Every option at each end of its range, in both key orders: a store takes writes, spills,
//! splits, reopens with those options and with the defaults, reads back every record and
//! passes `check`, with its metadata memory bounded. Before the fix, `filter_bits_per_key` 32
//! built node selectors of gigabytes (an empty Elias–Fano sequence over a universe of 2^40),
//! and some seeds aborted the process on an allocation of 32 GiB.

use std::collections::BTreeMap;

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions, MIN_MEMORY_BUDGET};

/// Small enough that a few hundred records spill and split.
fn base(order: KeyOrder) -> Options {
    Options::default()
        .root_buffer_size(4096)
        .node_size(16 << 10)
        .fan_out(4)
        .page_size(256)
        .key_order(order)
}

/// Each option at the ends of its range (and a few values between where the range is a
/// choice), on top of `base`.
fn extremes(order: KeyOrder) -> Vec<(String, Options)> {
    let b = base(order);
    let mut cases: Vec<(String, Options)> = Vec::new();
    let mut case = |name: &str, o: Options| {
        o.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        cases.push((name.to_owned(), o));
    };
    case("root_buffer_size min", b.clone().root_buffer_size(1024));
    case("root_buffer_size max", b.clone().root_buffer_size(1 << 36));
    case("node_size min", b.clone().node_size(2 * b.page_size));
    case("node_size max", b.clone().node_size(1 << 36));
    case("fan_out min", b.clone().fan_out(2));
    case("fan_out max", b.clone().fan_out(4096));
    case("fast_split_ratio min", b.clone().fast_split_ratio(0));
    case("fast_split_ratio max", b.clone().fast_split_ratio(64));
    case("page_size min", b.clone().page_size(64));
    case(
        "page_size max",
        b.clone().page_size(1 << 20).node_size(2 << 20),
    );
    for bits in [0, 1, 2, 3, 4, 20, 31, 32] {
        case(
            &format!("filter_bits_per_key {bits}"),
            b.clone().filter_bits_per_key(bits),
        );
        // Tiny nodes (every spill splits) and wide ones with high precision: the selectors'
        // universes are largest there.
        case(
            &format!("filter_bits_per_key {bits}, 1 KiB nodes"),
            b.clone().filter_bits_per_key(bits).node_size(1024),
        );
        case(
            &format!("filter_bits_per_key {bits}, 8 MiB nodes"),
            b.clone().filter_bits_per_key(bits).node_size(8 << 20),
        );
    }
    case("max_lists_per_node min", b.clone().max_lists_per_node(2));
    case(
        "max_lists_per_node max",
        b.clone().max_lists_per_node(usize::MAX),
    );
    case(
        "memory_budget min",
        b.clone().memory_budget(MIN_MEMORY_BUDGET),
    );
    case("memory_budget max", b.clone().memory_budget(1 << 40));
    case("max_open_files min", b.clone().max_open_files(16));
    case("max_open_files max", b.clone().max_open_files(usize::MAX));
    case("sync_by_default", b.clone().sync_by_default(true));
    case("background_spills off", b.clone().background_spills(false));
    case("mmap off", b.clone().mmap_reads(false).mmap_log(false));
    case("log_prefill off", b.clone().log_prefill(false));
    case(
        "create_if_missing off (an existing store)",
        b.clone().create_if_missing(false),
    );
    cases
}

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
        for (name, opts) in extremes(order) {
            let name = format!("{order} {name}");
            let dir = tempfile::tempdir().unwrap();
            // A store must exist for `create_if_missing: false`.
            Db::open(dir.path(), base(order)).unwrap().close().unwrap();
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
