//! Every option at each end of its range, in both key orders: a store takes writes, spills,
//! splits, reopens with those options and with the defaults, reads back every record and
//! passes `check`, with its metadata memory bounded. Before the fix, `filter_bits_per_key` 32
//! built node selectors of gigabytes (an empty Elias–Fano sequence over a universe of 2^40),
//! and some seeds aborted the process on an allocation of 32 GiB.

use std::collections::BTreeMap;

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions, MIN_MEMORY_BUDGET};

/// Small enough that a few hundred records spill and split.
fn base(order: KeyOrder) -> Options {
    Options {
        root_buffer_size: 4096,
        node_size: 16 << 10,
        fan_out: 4,
        page_size: 256,
        key_order: Some(order),
        ..Options::default()
    }
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
    case(
        "root_buffer_size min",
        Options {
            root_buffer_size: 1024,
            ..b.clone()
        },
    );
    case(
        "root_buffer_size max",
        Options {
            root_buffer_size: 1 << 36,
            ..b.clone()
        },
    );
    case(
        "node_size min",
        Options {
            node_size: 2 * b.page_size,
            ..b.clone()
        },
    );
    case(
        "node_size max",
        Options {
            node_size: 1 << 36,
            ..b.clone()
        },
    );
    case(
        "fan_out min",
        Options {
            fan_out: 2,
            ..b.clone()
        },
    );
    case(
        "fan_out max",
        Options {
            fan_out: 4096,
            ..b.clone()
        },
    );
    case(
        "fast_split_ratio min",
        Options {
            fast_split_ratio: 0,
            ..b.clone()
        },
    );
    case(
        "fast_split_ratio max",
        Options {
            fast_split_ratio: 64,
            ..b.clone()
        },
    );
    case(
        "page_size min",
        Options {
            page_size: 64,
            ..b.clone()
        },
    );
    case(
        "page_size max",
        Options {
            page_size: 1 << 20,
            node_size: 2 << 20,
            ..b.clone()
        },
    );
    for bits in [0, 1, 2, 3, 4, 20, 31, 32] {
        case(
            &format!("filter_bits_per_key {bits}"),
            Options {
                filter_bits_per_key: bits,
                ..b.clone()
            },
        );
        // Tiny nodes (every spill splits) and wide ones with high precision: the selectors'
        // universes are largest there.
        case(
            &format!("filter_bits_per_key {bits}, 1 KiB nodes"),
            Options {
                filter_bits_per_key: bits,
                node_size: 1024,
                ..b.clone()
            },
        );
        case(
            &format!("filter_bits_per_key {bits}, 8 MiB nodes"),
            Options {
                filter_bits_per_key: bits,
                node_size: 8 << 20,
                ..b.clone()
            },
        );
    }
    case(
        "max_lists_per_node min",
        Options {
            max_lists_per_node: Some(2),
            ..b.clone()
        },
    );
    case(
        "max_lists_per_node max",
        Options {
            max_lists_per_node: Some(usize::MAX),
            ..b.clone()
        },
    );
    case(
        "memory_budget min",
        Options {
            memory_budget: Some(MIN_MEMORY_BUDGET),
            ..b.clone()
        },
    );
    case(
        "memory_budget max",
        Options {
            memory_budget: Some(1 << 40),
            ..b.clone()
        },
    );
    case(
        "max_open_files min",
        Options {
            max_open_files: 16,
            ..b.clone()
        },
    );
    case(
        "max_open_files max",
        Options {
            max_open_files: usize::MAX,
            ..b.clone()
        },
    );
    case(
        "sync_by_default",
        Options {
            sync_by_default: true,
            ..b.clone()
        },
    );
    case(
        "background_spills off",
        Options {
            background_spills: false,
            ..b.clone()
        },
    );
    case(
        "mmap off",
        Options {
            mmap_reads: false,
            mmap_log: false,
            ..b.clone()
        },
    );
    case(
        "log_prefill off",
        Options {
            log_prefill: false,
            ..b.clone()
        },
    );
    case(
        "create_if_missing off (an existing store)",
        Options {
            create_if_missing: false,
            ..b.clone()
        },
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
