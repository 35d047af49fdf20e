//! Node selectors (hashed stores): a GET finds which of a node's lists may hold its key in one
//! lookup, and reads a page only there. They are built from the lists' fingerprints, kept up
//! to date through spills, fast- and slow-splits and collections, and rebuilt at open.

mod common;

use std::collections::BTreeMap;

use spillway::{Db, KeyOrder, Options};

fn options() -> Options {
    common::selector_options()
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u64, round: u64) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 40) as usize)).into_bytes()
}

/// Writes `rounds` of overwrites of `keys` keys (and deletes every 7th key in the last round),
/// returning what the store must hold.
fn load(db: &Db, keys: u64, rounds: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for round in 0..rounds {
        for i in 0..keys {
            let k = key((i * 7919 + round) % keys);
            if round == rounds - 1 && i % 7 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = value(i, round);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
    }
    model
}

/// Every key of `model` reads back, every absent key reads nothing; returns the pages read
/// per absent GET.
fn verify(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, keys: u64) -> f64 {
    for i in 0..keys {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap().as_deref(),
            model.get(&k).map(|v| &v[..])
        );
    }
    let before = db.stats().pages_read;
    let absent = 20_000u64;
    for i in 0..absent {
        assert_eq!(db.get(format!("absent{i}")).unwrap(), None);
    }
    (db.stats().pages_read - before) as f64 / absent as f64
}

#[test]
fn selectors_find_every_key_and_few_absent_ones() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 30_000;
    let model = {
        // Spills on the writer's thread, so that the tree's shape below (lists per node) is
        // the same every run: with background spills it hangs on how far upkeep got.
        let db = Db::open(dir.path(), options().background_spills(false)).unwrap();
        let model = load(&db, keys, 3);
        db.flush().unwrap();
        let s = db.stats();
        assert!(s.fast_splits > 0 && s.slow_splits > 0, "{s:?}");
        assert!(s.lists as f64 / (s.leaves + s.internal_nodes) as f64 > 4.0);
        // Hashed lists carry fingerprints instead of filters; the selectors take their place.
        assert_eq!(s.filter_bytes, 0);
        assert!(s.selector_bytes > 0);
        let per_key = s.selector_bytes as f64 / s.disk_records as f64;
        assert!(per_key < 3.0, "{per_key} selector bytes per record");
        let pages = verify(&db, &model, keys);
        eprintln!("{s:?}\n{per_key} selector bytes per record, {pages} pages per absent GET");
        // About 2^-8 false matches per node on the path, 3 or 4 nodes deep.
        assert!(pages < 0.05, "{pages} pages per absent GET");
        model
    };
    // Reopened, the selectors are rebuilt from the lists' fingerprints.
    let db = Db::open(dir.path(), options()).unwrap();
    let pages = verify(&db, &model, keys);
    assert!(pages < 0.05, "{pages} pages per absent GET after reopening");
    let positive_before = db.stats();
    for i in 0..keys {
        db.get(key(i)).unwrap();
    }
    let s = db.stats();
    let found = model.len() as f64;
    let pages = (s.pages_read - positive_before.pages_read) as f64 / found;
    eprintln!("{pages} pages per present key");
    assert!(pages < 1.1, "{pages} pages per present key");
    drop(db);
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn stores_without_selectors_answer_the_same() {
    // Filters off (no fingerprints, so no selectors), and an ordered store (Bloom filters):
    // the same writes read back the same.
    for opts in [
        options().filter_bits_per_key(0),
        options().key_order(KeyOrder::Ordered),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let model = load(&db, 5_000, 2);
        db.flush().unwrap();
        assert_eq!(db.stats().selector_bytes, 0);
        verify(&db, &model, 5_000);
    }
}

#[test]
fn a_store_reopened_with_filters_off_keeps_its_selectors() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let model = load(&db, 10_000, 2);
    // Everything in lists with fingerprints: a buffer left in the log (up to twice its limit
    // while upkeep ran) would be spilled at the reopen into a list without any.
    db.flush().unwrap();
    drop(db);
    let off = options().filter_bits_per_key(0);
    let db = Db::open(dir.path(), off).unwrap();
    assert!(db.stats().selector_bytes > 0);
    let pages = verify(&db, &model, 10_000);
    assert!(pages < 0.05, "{pages} pages per absent GET");
}

#[test]
fn damaged_fingerprints_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    load(&db, 3_000, 1);
    drop(db);
    // The fingerprints sit right after the pages: damage the byte after the last page of the
    // largest list (the trailer says where; its fourth field is the filter offset).
    let lists = common::files_with_extension(dir.path(), "list");
    let path = lists
        .iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(path).unwrap();
    let t = bytes.len() - 48;
    let at = u64::from_le_bytes(bytes[t + 16..t + 24].try_into().unwrap()) as usize;
    assert_eq!(bytes[at], 0xF6, "a fingerprint section starts there");
    bytes[at + 20] ^= 0x10;
    std::fs::write(path, &bytes).unwrap();
    // `check` reads every fingerprint section.
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(!report.problems.is_empty());
    // An open reads fingerprints only to build selectors (list format 9: they are outside the
    // list's metadata checksum, under their own): with the saved selectors gone, it must.
    std::fs::remove_file(dir.path().join("SELECTORS")).unwrap();
    match Db::open(dir.path(), options()) {
        Err(spillway::Error::Corruption { .. }) => {}
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("a store with damaged fingerprints built its selectors"),
    }
}

/// Under a memory budget too small for every selector, the biggest leaves' selectors leave
/// memory for 4 KiB blocks in a scratch file: every key is still found, a GET reads at most
/// one selector block and one page, the store's metadata stays within the budget, and lifting
/// the budget brings the selectors back at the next spill.
#[test]
fn selectors_leave_memory_under_a_small_budget() {
    use spillway::{faults, WriteBatch, WriteOptions, MIN_MEMORY_BUDGET};
    let budget = MIN_MEMORY_BUDGET;
    let opts = options()
        .memory_budget(budget)
        .background_spills(false)
        .filter_bits_per_key(24);
    let keys = 1_000_000u64;
    let k = |i: u64| format!("k{i:09}").into_bytes();
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..2u64 {
        for chunk in 0..keys / 1000 {
            let mut batch = WriteBatch::new();
            for i in chunk * 1000..(chunk + 1) * 1000 {
                if round == 1 && i % 3 != 0 {
                    continue;
                }
                if round == 1 && i % 7 == 0 {
                    batch.delete(k(i));
                    model.remove(&k(i));
                } else {
                    let v = (i * 31 + round).to_le_bytes();
                    batch.put(k(i), v);
                    model.insert(k(i), v.to_vec());
                }
            }
            db.write(batch, WriteOptions::default()).unwrap();
        }
    }
    db.flush().unwrap();
    let s = db.stats();
    eprintln!("{s:?}");
    assert!(s.selector_disk_bytes > 0, "no selector left memory");
    assert!(
        s.metadata_bytes() <= budget as u64,
        "{} bytes",
        s.metadata_bytes()
    );
    let reads = |db: &Db, f: &dyn Fn(&Db)| {
        let before = db.stats();
        f(db);
        let after = db.stats();
        let gets = (after.gets - before.gets) as f64;
        let pages = (after.pages_read - before.pages_read) as f64 / gets;
        let blocks = (after.selector_blocks_read - before.selector_blocks_read) as f64 / gets;
        (pages, blocks)
    };
    let present = |db: &Db| {
        for i in (0..keys).step_by(7) {
            assert_eq!(db.get(k(i)).unwrap(), model.get(&k(i)).cloned(), "key {i}");
        }
    };
    let absent = |db: &Db| {
        for i in 0..20_000u64 {
            assert_eq!(db.get(format!("absent{i}")).unwrap(), None);
        }
    };
    let (pages, blocks) = reads(&db, &present);
    eprintln!("present: {pages} pages, {blocks} selector blocks per GET");
    assert!(blocks > 0.0 && blocks <= 1.0 && pages <= 1.05);
    let (pages, blocks) = reads(&db, &absent);
    eprintln!("absent: {pages} pages, {blocks} selector blocks per GET");
    assert!(blocks > 0.0 && blocks <= 1.0 && pages <= 0.01);
    drop(db);

    // Reopened under the same budget, the selectors are built straight to disk.
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let s = db.stats();
    assert!(s.selector_disk_bytes > 0 && s.metadata_bytes() <= budget as u64);
    let (pages, blocks) = reads(&db, &present);
    assert!(
        blocks <= 1.0 && pages <= 1.05,
        "{pages} pages, {blocks} blocks"
    );

    // A failing device under the blocks: GETs that need one fail with a typed error, and
    // answer again once it is back.
    {
        let _broken = faults::fail(dir.path(), faults::Op::Read, ".tiers", 0);
        let failed = (0..keys)
            .step_by(7)
            .filter(|&i| match db.get(k(i)) {
                Err(e) => e.io_kind().is_some(),
                // Keys of leaves whose selectors are in memory, or whose blocks are cached.
                Ok(v) => {
                    assert_eq!(v, model.get(&k(i)).cloned(), "key {i}");
                    false
                }
            })
            .count();
        assert!(failed > 0);
    }
    present(&db);

    // No budget: the next spill brings every selector back to memory.
    db.set_memory_budget(None).unwrap();
    db.put(k(keys), "new").unwrap();
    db.flush().unwrap();
    let s = db.stats();
    assert_eq!(s.selector_disk_bytes, 0);
    let (_, blocks) = reads(&db, &present);
    assert_eq!(blocks, 0.0);
    drop(db);
    // No room for the scratch file: the selectors stay in memory, over budget.
    {
        let _full = faults::fail(dir.path(), faults::Op::Create, ".tiers", 0);
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        let s = db.stats();
        assert!(s.selector_disk_bytes == 0 && s.metadata_bytes() > budget as u64);
        present(&db);
    }
    // Nothing of the scratch file is left in the folder.
    assert!(common::files_with_extension(dir.path(), "tiers").is_empty());
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
