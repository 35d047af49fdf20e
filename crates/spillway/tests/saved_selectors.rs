//! Saved node selectors (hashed stores): an open takes the selectors a store saved
//! (`NNNNNNNNNN.sel` files and the `SELECTORS` index) instead of building them again from
//! every list's fingerprints, reading each tier at its first use, by `Db::load_selectors`, or
//! in the background (`Options::preload_selectors`), and builds only what it cannot read — a
//! missing or damaged index or tier, a node changed since, other selector options — with the
//! same answers.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use spillway::{Db, Options};

/// No preload: each tier is read at its first use, or by `load_selectors`, when the test says.
fn options() -> Options {
    common::selector_options()
        .background_spills(false)
        .preload_selectors(false)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Two rounds of writes of `keys` keys, every 7th deleted in the second.
fn load(db: &Db, keys: u64, model: &mut Model) {
    for round in 0..2u64 {
        for i in 0..keys {
            let k = key((i * 7919 + round) % keys);
            if round == 1 && i % 7 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("value-{i}-{round}-{}", "x".repeat((i % 40) as usize));
                db.put(&k, v.as_bytes()).unwrap();
                model.insert(k, v.into_bytes());
            }
        }
    }
}

/// Every key of the model reads back, and absent keys read nothing at about no pages each.
fn verify(db: &Db, model: &Model, keys: u64, ctx: &str) {
    for i in 0..keys {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap().as_deref(),
            model.get(&k).map(|v| &v[..]),
            "{ctx}: key {i}"
        );
    }
    let before = db.stats().pages_read;
    for i in 0..5_000u64 {
        assert_eq!(db.get(format!("absent{i}")).unwrap(), None, "{ctx}");
    }
    let pages = (db.stats().pages_read - before) as f64 / 5_000.0;
    assert!(pages < 0.05, "{ctx}: {pages} pages per absent GET");
}

/// A store of `keys` keys, closed: its model.
fn store(dir: &Path, keys: u64) -> Model {
    let db = Db::open(dir, options()).unwrap();
    let mut model = Model::new();
    load(&db, keys, &mut model);
    db.close().unwrap();
    model
}

/// The store in `dir`, opened for reading only or not, with the tests' options.
fn open(dir: &Path, read_only: bool) -> Db {
    if read_only {
        Db::open_read_only(dir, options()).unwrap()
    } else {
        Db::open(dir, options()).unwrap()
    }
}

fn sound(dir: &Path) -> spillway::CheckReport {
    let report = spillway::check(dir, false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    report
}

#[test]
fn a_reopen_reads_the_saved_selectors_instead_of_building_them() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 30_000;
    let model = store(dir.path(), keys);
    assert!(!common::files_with_extension(dir.path(), "sel").is_empty());
    // Nothing unreachable: the selector files of superseded tiers went with them.
    let report = sound(dir.path());
    assert!(report.unreachable.is_empty(), "{:?}", report.unreachable);

    for read_only in [false, true] {
        let db = open(dir.path(), read_only);
        // The open reads no tier: GETs read each one at its first use.
        let s = db.stats();
        assert_eq!(s.selector_entries_built, 0, "read-only {read_only}: {s:?}");
        assert_eq!(s.selector_tiers_loaded, 0, "{s:?}");
        assert!(s.selector_bytes > 0, "{s:?}");
        verify(
            &db,
            &model,
            keys,
            &format!("reopened (read-only {read_only})"),
        );
        let s = db.stats();
        assert_eq!(s.selector_entries_built, 0, "read-only {read_only}: {s:?}");
        assert!(s.selector_tiers_loaded > 0, "{s:?}");
        drop(db);
    }
}

/// Each way the saved selectors can be lost or damaged: the store opens, builds what it
/// cannot read, answers as before, and saves again, so that the next open reads them.
#[test]
fn missing_or_damaged_saved_selectors_are_built_again() {
    type Damage = fn(&Path);
    let damages: [(&str, Damage); 7] = [
        ("index removed", |d| {
            std::fs::remove_file(d.join("SELECTORS")).unwrap()
        }),
        ("index byte flipped", |d| {
            let p = d.join("SELECTORS");
            let mut b = std::fs::read(&p).unwrap();
            let i = b.len() / 2;
            b[i] ^= 0x40;
            std::fs::write(p, b).unwrap();
        }),
        ("index truncated", |d| {
            let p = d.join("SELECTORS");
            let b = std::fs::read(&p).unwrap();
            std::fs::write(p, &b[..b.len() - 3]).unwrap();
        }),
        ("index replaced by a foreign file", |d| {
            std::fs::write(d.join("SELECTORS"), b"not an index at all, but long enough").unwrap()
        }),
        ("tier byte flipped", |d| {
            for p in common::files_with_extension(d, "sel") {
                let mut b = std::fs::read(&p).unwrap();
                let i = b.len() * 2 / 3;
                b[i] ^= 0x40;
                std::fs::write(p, b).unwrap();
            }
        }),
        ("selector files removed", |d| {
            for p in common::files_with_extension(d, "sel") {
                std::fs::remove_file(p).unwrap();
            }
        }),
        ("selector files truncated", |d| {
            for p in common::files_with_extension(d, "sel") {
                let len = std::fs::metadata(&p).unwrap().len();
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_len(len / 2)
                    .unwrap();
            }
        }),
    ];
    let keys = 12_000;
    for ((what, damage), read) in damages.into_iter().zip(
        [Read::FirstUse, Read::Load, Read::Background]
            .into_iter()
            .cycle(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let model = store(dir.path(), keys);
        damage(dir.path());
        // Damage to derived data is a note to `check`, never a problem.
        sound(dir.path());
        // What cannot be read is built: at open (the index), or when a tier is read — at its
        // first use, by `load_selectors`, or by the preload.
        let what = &format!("{what}, read {read:?}");
        let db = read.open(dir.path());
        verify(&db, &model, keys, what);
        let s = db.stats();
        assert!(s.selector_entries_built > 0, "{what}: {s:?}");
        db.close().unwrap();
        let report = sound(dir.path());
        assert!(
            report.unreachable.is_empty(),
            "{what}: {:?}",
            report.unreachable
        );
        let db = Db::open(dir.path(), options()).unwrap();
        verify(&db, &model, keys, what);
        assert_eq!(db.stats().selector_entries_built, 0, "{what}: saved again");
    }
}

/// How a test reads a reopened store's saved tiers.
#[derive(Clone, Copy, Debug)]
enum Read {
    /// Each at its first use.
    FirstUse,
    /// All of them by `load_selectors`, before the first GET.
    Load,
    /// By the preload an open starts, racing the GETs.
    Background,
}

impl Read {
    fn open(self, dir: &Path) -> Db {
        let opts = options().preload_selectors(matches!(self, Read::Background));
        let db = Db::open(dir, opts).unwrap();
        if let Read::Load = self {
            db.load_selectors().unwrap();
            assert_eq!(db.stats().selector_tiers_unread, 0);
        }
        db
    }
}

/// `load_selectors` reads every tier an open left on disk, once: GETs after it read none, and
/// answer as before. A second call has nothing left to do.
#[test]
fn load_selectors_reads_every_saved_tier() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 30_000;
    let model = store(dir.path(), keys);
    for read_only in [false, true] {
        let db = open(dir.path(), read_only);
        let s = db.stats();
        assert!(s.selector_tiers_unread > 1, "{s:?}");
        assert!(s.selector_tiers_unread <= s.selector_tiers, "{s:?}");
        db.load_selectors().unwrap();
        let loaded = db.stats();
        assert_eq!(loaded.selector_tiers_unread, 0, "{loaded:?}");
        assert_eq!(
            loaded.selector_tiers_loaded, s.selector_tiers_unread,
            "{loaded:?}"
        );
        assert_eq!(loaded.selector_entries_built, 0, "{loaded:?}");
        assert_eq!(loaded.selector_entries, s.selector_entries, "{loaded:?}");
        db.load_selectors().unwrap();
        verify(
            &db,
            &model,
            keys,
            &format!("loaded (read-only {read_only})"),
        );
        let after = db.stats();
        assert_eq!(
            after.selector_tiers_loaded, loaded.selector_tiers_loaded,
            "{after:?}"
        );
        assert_eq!(after.selector_entries_built, 0, "{after:?}");
        drop(db);
    }
}

/// The preload an open starts reads every saved tier while GETs go on, and a close stops it
/// wherever it is: reopened, the store answers as before.
#[test]
fn the_background_preload_reads_every_saved_tier_and_stops_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 30_000;
    let model = store(dir.path(), keys);
    // Closed at once, the preload barely started (or not at all).
    for _ in 0..3 {
        Db::open(dir.path(), options().preload_selectors(true))
            .unwrap()
            .close()
            .unwrap();
    }
    let db = Db::open(dir.path(), options().preload_selectors(true)).unwrap();
    verify(&db, &model, keys, "while the preload runs");
    // It ends: wait for it (a hang is the failure; a minute is far beyond its work).
    let start = std::time::Instant::now();
    while db.stats().selector_tiers_unread > 0 {
        assert!(start.elapsed().as_secs() < 60, "{:?}", db.stats());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let s = db.stats();
    assert!(s.selector_tiers_loaded > 0, "{s:?}");
    assert_eq!(s.selector_entries_built, 0, "{s:?}");
    verify(&db, &model, keys, "preloaded");
    assert_eq!(db.stats().selector_tiers_loaded, s.selector_tiers_loaded);
    db.close().unwrap();
    sound(dir.path());
}

/// Selector options are the open's: a reopen with others builds selectors for them.
#[test]
fn a_reopen_with_other_selector_options_builds_for_them() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 12_000;
    let model = store(dir.path(), keys);
    // Each open saves for its options: the next with the same ones builds nothing.
    for (what, opts, same) in [
        ("more filter bits", options().filter_bits_per_key(20), false),
        (
            "more filter bits again",
            options().filter_bits_per_key(20),
            true,
        ),
        ("bigger nodes", options().node_size(2 << 20), false),
        ("the first options", options(), false),
        ("the first options again", options(), true),
    ] {
        let db = Db::open(dir.path(), opts).unwrap();
        verify(&db, &model, keys, what);
        let built = db.stats().selector_entries_built;
        assert_eq!(built == 0, same, "{what}: {built}");
        db.close().unwrap();
    }
}

/// Selector files no index names (a spill a crash interrupted, say) are leftovers: `check`
/// says so, and an open removes them.
#[test]
fn selector_files_no_index_names_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let keys = 12_000;
    let model = store(dir.path(), keys);
    let sel = common::files_with_extension(dir.path(), "sel");
    let orphan = dir.path().join("9999999999.sel");
    std::fs::copy(&sel[0], &orphan).unwrap();
    let report = sound(dir.path());
    assert_eq!(report.unreachable, vec![orphan.clone()]);
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(!orphan.exists());
    verify(&db, &model, keys, "after the leftover went");
    assert_eq!(db.stats().selector_entries_built, 0);
}

/// A dropped keyspace's selector files go with it.
#[test]
fn a_dropped_keyspace_takes_its_selector_files() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    let ks = db.keyspace("other", Default::default()).unwrap();
    for i in 0..20_000u64 {
        ks.put(key(i), b"some value in another keyspace").unwrap();
    }
    let mut model = Model::new();
    load(&db, 3_000, &mut model);
    db.flush().unwrap();
    let before = common::files_with_extension(dir.path(), "sel").len();
    let index_of_two = std::fs::read(dir.path().join("SELECTORS")).unwrap();
    drop(ks);
    assert!(db.drop_keyspace("other").unwrap());
    let after = common::files_with_extension(dir.path(), "sel").len();
    assert!(after < before, "{before} -> {after} selector files");
    db.close().unwrap();
    let report = sound(dir.path());
    assert!(report.unreachable.is_empty(), "{:?}", report.unreachable);
    let db = Db::open(dir.path(), options()).unwrap();
    verify(&db, &model, 3_000, "after the drop");
    assert_eq!(db.stats().selector_entries_built, 0);
    drop(db);
    // An index from before the drop (as a crash between the index and the manifest leaves
    // one) still serves the keyspace that is left: trees are matched by keyspace id.
    std::fs::write(dir.path().join("SELECTORS"), index_of_two).unwrap();
    let db = Db::open_read_only(dir.path(), options()).unwrap();
    verify(&db, &model, 3_000, "with the index of two keyspaces");
    assert_eq!(db.stats().selector_entries_built, 0);
}

/// Selector files and the index are never fsynced: after a power loss — unsynced bytes cut, or
/// random 4 KiB blocks of them kept — every synced write reads back, `check` finds nothing
/// wrong, and the store saves its selectors again.
#[test]
fn a_power_loss_takes_unsynced_selectors_and_nothing_else() {
    use spillway::{power_loss, WriteBatch, WriteOptions};
    for seed in [None, Some(7), Some(8)] {
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let db = Db::open(dir.path(), options()).unwrap();
        let mut model = Model::new();
        for chunk in 0..12u64 {
            let mut b = WriteBatch::new();
            for i in chunk * 1000..(chunk + 1) * 1000 {
                let v = format!("v{i}-{}", "y".repeat((i % 30) as usize));
                b.put(key(i), v.as_bytes());
                model.insert(key(i), v.into_bytes());
            }
            db.write(b, WriteOptions::SYNC).unwrap();
        }
        assert!(!common::files_with_extension(dir.path(), "sel").is_empty());
        match seed {
            None => tracked.power_loss(),
            Some(seed) => tracked.power_loss_keeping(seed),
        }
        drop(db);
        tracked.restart();
        drop(tracked);
        sound(dir.path());
        let db = Db::open(dir.path(), options()).unwrap();
        verify(
            &db,
            &model,
            12_000,
            &format!("after a power loss ({seed:?})"),
        );
        if seed.is_none() {
            // Nothing unsynced survived: every selector was built again.
            assert!(db.stats().selector_entries_built > 0);
        }
        db.close().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        verify(&db, &model, 12_000, "reopened");
        assert_eq!(
            db.stats().selector_entries_built,
            0,
            "{seed:?}: saved again"
        );
    }
}
