//! Point reads through memory maps of the list files (`Options::mmap_reads`, on by default)
//! answer exactly as reads with `pread`: the same values, the same corruption errors, the same
//! injected faults; and a store counts the maps it holds and gives them back.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;

use spillway::faults::{self, Op};
use spillway::{Db, Error, Options, WriteBatch, WriteOptions};

mod common;

use common::Rng;

const KEYS: u64 = 4000;

fn options(mmap_reads: bool) -> Options {
    common::small_options()
        .mmap_reads(mmap_reads)
        .page_size(4096)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:06}").into_bytes()
}

/// Fill a store at `dir` with overwrites and deletes of `KEYS` keys, all of it spilled into
/// list files; the model of what it holds.
fn fill(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options(true)).unwrap();
    let mut rng = Rng::new(7);
    let mut model = BTreeMap::new();
    for round in 0..6u64 {
        let mut batch = WriteBatch::new();
        for _ in 0..KEYS / 2 {
            let k = key(rng.below(KEYS));
            if rng.below(8) == 0 {
                batch.delete(&k);
                model.remove(&k);
            } else {
                let v = format!("value {round} {}", rng.next_u64()).into_bytes();
                batch.put(&k, &v);
                model.insert(k, v);
            }
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    model
}

fn check_all(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    for k in 0..KEYS + 100 {
        let k = key(k);
        assert_eq!(
            db.get(&k).unwrap().as_deref(),
            model.get(&k).map(Vec::as_slice),
            "key {}",
            String::from_utf8_lossy(&k)
        );
    }
}

#[test]
fn mapped_and_read_pages_give_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path());
    let lists = common::list_file_names(dir.path()).len() as u64;
    assert!(lists > 4, "only {lists} list files");

    let db = Db::open(dir.path(), options(false)).unwrap();
    check_all(&db, &model);
    assert_eq!(db.stats().mapped_list_files, 0);
    db.close().unwrap();

    let db = Db::open(dir.path(), options(true)).unwrap();
    check_all(&db, &model);
    let mapped = db.stats().mapped_list_files;
    assert!(
        (1..=lists).contains(&mapped),
        "{mapped} maps for {lists} lists"
    );
    // Writes go on beside the maps; lists merged away give their maps back.
    let mut model = model;
    let mut rng = Rng::new(11);
    for _ in 0..KEYS * 3 {
        let (k, v) = (key(rng.below(KEYS)), rng.next_u64().to_le_bytes().to_vec());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    check_all(&db, &model);
    let lists = common::list_file_names(dir.path()).len() as u64;
    let mapped = db.stats().mapped_list_files;
    assert!(mapped <= lists, "{mapped} maps for {lists} lists");
    db.close().unwrap();
}

/// Flip one byte in every 256 of every list file past its first block (the header's), with
/// the store open and its files mapped: each page segment (about 512 bytes, see `list::page`)
/// has one, so each GET that reaches a list page past the first block must fail a checksum.
fn corrupt_lists(dir: &Path) {
    for path in common::files_with_extension(dir, "list") {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .read(true)
            .open(&path)
            .unwrap();
        let len = file.metadata().unwrap().len();
        let mut at = 4096 + 40;
        while at < len {
            let mut b = [0u8];
            file.read_exact_at(&mut b, at).unwrap();
            file.write_all_at(&[b[0] ^ 0x5a], at).unwrap();
            at += 256;
        }
    }
}

#[test]
fn a_page_damaged_under_a_mapped_store_is_corruption_not_a_wrong_value() {
    for mmap_reads in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let model = fill(dir.path());
        {
            let db = Db::open(dir.path(), options(mmap_reads)).unwrap();
            check_all(&db, &model);
            corrupt_lists(dir.path());
            let (mut corrupt, mut right) = (0, 0);
            for k in 0..KEYS {
                let k = key(k);
                match db.get(&k) {
                    Ok(v) => {
                        assert_eq!(v.as_deref(), model.get(&k).map(Vec::as_slice));
                        right += 1;
                    }
                    Err(Error::Corruption { .. }) => corrupt += 1,
                    Err(e) => panic!("mmap_reads {mmap_reads}: {e}"),
                }
            }
            assert!(
                corrupt > KEYS / 2,
                "mmap_reads {mmap_reads}: {corrupt} corrupt, {right} right"
            );
        }
    }
}

#[test]
fn an_injected_read_fault_fails_a_mapped_read() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path());
    let db = Db::open(dir.path(), options(true)).unwrap();
    check_all(&db, &model);
    assert!(db.stats().mapped_list_files > 0);
    let (k, v) = model.iter().next().unwrap();
    let failing = faults::fail(dir.path(), Op::Read, ".list", 0);
    assert!(matches!(db.get(k), Err(Error::Io { .. })));
    assert!(failing.hits() > 0);
    drop(failing);
    assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_slice()));
}

#[test]
fn many_readers_share_the_maps() {
    let dir = tempfile::tempdir().unwrap();
    let model = fill(dir.path());
    let db = Db::open(dir.path(), options(true)).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (db, model) = (&db, &model);
            s.spawn(move || {
                let mut rng = Rng::new(t);
                for _ in 0..KEYS {
                    let k = key(rng.below(KEYS));
                    assert_eq!(
                        db.get(&k).unwrap().as_deref(),
                        model.get(&k).map(Vec::as_slice)
                    );
                }
            });
        }
    });
    let lists = common::list_file_names(dir.path()).len() as u64;
    assert!(db.stats().mapped_list_files <= lists);
}
