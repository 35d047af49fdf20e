//! An open reads no list file: the manifest outlines each (see `list::file`), and a file's
//! metadata is read at its first use. These tests hold the store to a model through opens that
//! read nothing, closes that write back outlines of files never read, option changes between
//! opens, and damage found at a file's first read instead of at the open.

use std::collections::BTreeMap;
use std::path::Path;

use spillway::{Db, Error, KeyOrder, Options, WriteBatch, WriteOptions};

mod common;

/// Without the background preload, which reads every list file after an open (see
/// `preload_reads_every_list_file`).
fn options(order: KeyOrder) -> Options {
    Options::default()
        .preload_selectors(false)
        .root_buffer_size(16 << 10)
        .node_size(32 << 10)
        .fan_out(4)
        .key_order(order)
}

/// A store of `n` keys in many list files, closed; its contents.
fn store(dir: &Path, order: KeyOrder, n: u32) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options(order)).unwrap();
    let mut model = BTreeMap::new();
    let mut rng = common::Rng::new(u64::from(n));
    for i in 0..n {
        let k = format!("key{:08}", rng.below(u64::from(n) * 2)).into_bytes();
        let v = format!("value-{i}-{}", "v".repeat(i as usize % 60)).into_bytes();
        if i % 13 == 0 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.close().unwrap();
    model
}

#[test]
fn an_open_reads_no_list_file_and_reads_each_at_its_first_use() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let model = store(dir.path(), order, 6000);
        let db = Db::open(dir.path(), options(order)).unwrap();
        let s = db.stats();
        let files = s.files;
        assert!(files > 10, "{order:?}: only {files} list files");
        assert_eq!((s.lists_read, s.unread_list_files), (0, files), "{order:?}");
        assert_eq!(s.index_bytes + s.sketch_bytes + s.filter_bytes, 0);
        assert!(s.unread_list_bytes > 0 && s.metadata_bytes() >= s.unread_list_bytes);

        let (k, v) = model.iter().next().unwrap();
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        let s = db.stats();
        assert!(
            s.lists_read > 0 && s.lists_read < files,
            "{order:?}: one GET read {} of {files} list files",
            s.lists_read
        );
        assert_eq!(s.lists_read + s.unread_list_files, files);
        common::assert_same(&db, &model, "after an open that read a few");
        // The estimate of keys reads every sketch.
        assert!(db.estimate_keys().is_some());
        let s = db.stats();
        assert_eq!((s.lists_read, s.unread_list_files), (files, 0));
        assert!(s.index_bytes > 0 && s.live_keys > 0);
    }
}

/// The preload reads every list file an open did not: in the background by default, or in
/// the caller's thread (`load_selectors`).
#[test]
fn preload_reads_every_list_file() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let model = store(dir.path(), order, 6000);
        let db = Db::open(dir.path(), options(order)).unwrap();
        db.load_selectors().unwrap();
        let s = db.stats();
        assert_eq!(s.lists_read, s.files, "{order:?}: load_selectors");
        db.close().unwrap();

        let db = Db::open(dir.path(), options(order).preload_selectors(true)).unwrap();
        // Waits for the preload (a minute at most, for a slow machine: the store is small).
        let mut waited = 0;
        let s = loop {
            let s = db.stats();
            if s.unread_list_files == 0 || waited == 6000 {
                break s;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            waited += 1;
        };
        assert_eq!(s.lists_read, s.files, "{order:?}: background preload");
        common::assert_same(&db, &model, "after a preload");
    }
}

/// A close after an open that read nothing writes the manifest again: the outlines of files
/// never read go through it as they came, opens after it read the same store, under other
/// options too, and `check` finds every file as outlined.
#[test]
fn outlines_of_files_never_read_survive_closes_and_option_changes() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let dir = tempfile::tempdir().unwrap();
        let mut model = store(dir.path(), order, 5000);
        // Keys whose routes collide, spilled into the lists the reopens do not read.
        let db = Db::open(dir.path(), options(order)).unwrap();
        for (i, (a, b)) in common::colliding_pairs().into_iter().enumerate() {
            for k in [a, b] {
                db.put(&k, format!("colliding-{i}")).unwrap();
                model.insert(k, format!("colliding-{i}").into_bytes());
            }
        }
        db.flush().unwrap();
        db.close().unwrap();
        for round in 0..3u32 {
            // Open and close, reading nothing: the close writes the manifest from outlines.
            Db::open(dir.path(), options(order))
                .unwrap()
                .close()
                .unwrap();
            let report = spillway::check(dir.path(), false).unwrap();
            assert!(report.is_sound(), "{order:?}: {:?}", report.problems);
            // Then grow the store under other options, which splits and spills into nodes
            // whose files were never read since the open.
            let opts = options(order)
                .fan_out(2 + round as usize * 3)
                .node_size((16 << 10) << round)
                .max_lists_per_node(2 + round as usize);
            let db = Db::open(dir.path(), opts).unwrap();
            for i in 0..1500u32 {
                let k = format!("key{:08}", (i * 7919 + round * 31) % 10_000).into_bytes();
                let v = format!("round-{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            db.flush().unwrap();
            common::assert_same(&db, &model, &format!("{order:?} round {round}"));
            db.close().unwrap();
        }
        let db = Db::open_read_only(dir.path(), options(order)).unwrap();
        common::assert_same(&db, &model, &format!("{order:?}, read only"));
        // Both ends at once, in a fresh open whose lists are read by the scan itself.
        let db = Db::open_read_only(dir.path(), options(order)).unwrap();
        let both = common::scan_both_ends(db.iter());
        let forward: Vec<_> = db.iter().map(Result::unwrap).collect();
        assert_eq!(both, forward, "{order:?}: a scan from both ends");
        assert_eq!(both.len(), model.len(), "{order:?}: scanned keys");
    }
}

/// A list with range deletes or expiring values is read with the open (every read below it
/// consults them); the others are not.
#[test]
fn lists_with_range_deletes_or_times_are_read_with_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = store(dir.path(), KeyOrder::Ordered, 4000);
    let db = Db::open(dir.path(), options(KeyOrder::Ordered)).unwrap();
    db.delete_range("key00000100".as_bytes().."key00000900".as_bytes())
        .unwrap();
    model.retain(|k, _| !(k.as_slice() >= b"key00000100" && k.as_slice() < b"key00000900"));
    db.put_ttl("ttl", "far off", std::time::Duration::from_secs(1 << 30))
        .unwrap();
    model.insert(b"ttl".to_vec(), b"far off".to_vec());
    db.flush().unwrap();
    db.close().unwrap();

    let db = Db::open(dir.path(), options(KeyOrder::Ordered)).unwrap();
    let read = db.stats().lists_read;
    assert!(read >= 1, "the list with the range delete was not read");
    let db2 = {
        db.close().unwrap();
        Db::open(dir.path(), options(KeyOrder::Ordered)).unwrap()
    };
    common::assert_same(&db2, &model, "range delete and expiry after reopen");
    assert!(
        read < db2.stats().files,
        "an open read all {read} list files"
    );
}

fn list_files(dir: &Path) -> Vec<std::path::PathBuf> {
    common::files_with_extension(dir, "list")
}

#[test]
fn a_missing_list_file_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path(), KeyOrder::Hashed, 3000);
    std::fs::remove_file(&list_files(dir.path())[0]).unwrap();
    match Db::open(dir.path(), options(KeyOrder::Hashed)) {
        Err(Error::Corruption { reason, .. }) => assert!(reason.contains("missing"), "{reason}"),
        other => panic!("opened without a list file: {:?}", other.map(|_| ())),
    }
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("missing")),
        "{:?}",
        report.problems
    );
}

/// Damage to a list's metadata (same size, so the open's `stat` cannot see it) is found at the
/// file's first read: reads that reach it fail with `Corruption`, the others go on, and
/// nothing is returned wrong.
#[test]
fn damaged_metadata_is_corruption_at_the_first_read_of_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let model = store(dir.path(), KeyOrder::Ordered, 4000);
    let victim = list_files(dir.path()).into_iter().last().unwrap();
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() - 40; // in the metadata, before the trailer
    bytes[at] ^= 0x10;
    std::fs::write(&victim, &bytes).unwrap();

    let db = Db::open(dir.path(), options(KeyOrder::Ordered)).unwrap();
    let (mut ok, mut damaged) = (0, 0);
    for (k, v) in &model {
        match db.get(k) {
            Ok(got) => {
                assert_eq!(got.as_ref(), Some(v));
                ok += 1;
            }
            Err(Error::Corruption { .. }) => damaged += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(damaged > 0 && ok > 0, "{ok} read, {damaged} damaged");
    // Upkeep after the open may have reached the file in the background: the close reports
    // that, and loses nothing.
    match db.close() {
        Ok(()) | Err(Error::Corruption { .. }) => {}
        Err(e) => panic!("unexpected error {e}"),
    }
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(!report.is_sound(), "check found no damage");
}

/// A list file swapped for another of the same size — another copy of the store, say — is
/// caught by its outline at its first read, never read as the list the manifest names.
#[test]
fn a_list_file_swapped_for_another_of_its_size_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(KeyOrder::Hashed)).unwrap();
    // Lists of fixed-size records, spilled one buffer at a time: files of one size.
    for round in 0..2u32 {
        let mut b = WriteBatch::new();
        for i in 0..200u32 {
            b.put(format!("r{round}-{i:05}"), [b'x'; 32]);
        }
        db.write(b, WriteOptions::SYNC).unwrap();
        db.flush().unwrap();
    }
    db.close().unwrap();
    let files = list_files(dir.path());
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    let pair = (0..files.len())
        .flat_map(|a| (a + 1..files.len()).map(move |b| (a, b)))
        .find(|&(a, b)| {
            sizes[a] == sizes[b]
                && std::fs::read(&files[a]).unwrap() != std::fs::read(&files[b]).unwrap()
        });
    let Some((a, b)) = pair else {
        panic!("no two list files of one size: {sizes:?}");
    };
    std::fs::copy(&files[a], &files[b]).unwrap();
    let db = Db::open(dir.path(), options(KeyOrder::Hashed)).unwrap();
    let mut damaged = 0;
    for round in 0..2u32 {
        for i in 0..200u32 {
            match db.get(format!("r{round}-{i:05}")) {
                Ok(Some(v)) => assert_eq!(v, [b'x'; 32]),
                Ok(None) => panic!("r{round}-{i:05} lost without an error"),
                Err(Error::Corruption { .. }) => damaged += 1,
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
    assert!(damaged > 0, "the swapped file was read as the other");
}
