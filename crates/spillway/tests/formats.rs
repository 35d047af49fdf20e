//! Every on-disk format this build reads — logs 1–5, lists 1–7, 9 and 10, manifests 1–4 and 6 —
//! opened, checked, read, grown and read back. The stores are the fuzz targets' seeds
//! (`fuzz/corpus/{list,log,manifest}`), real files written by earlier versions: a seed name
//! with all three files is a whole store of that time; the rest are put in the place of one
//! file of a newer seed store, as the fuzz targets do. Every other corpus file goes through
//! the fuzz targets' reads as a regression test: any error is fine, a panic is not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use spillway::{Db, MergeOperator, Options};

mod common;

/// The ordered seed stores' merge operator (`fuzz/src/lib.rs`): operands joined by commas,
/// with no partial merge, so that they stack in lists.
struct Join;

impl MergeOperator for Join {
    fn name(&self) -> &str {
        "fuzz.join"
    }
    fn full_merge(
        &self,
        _: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, String> {
        let mut out = base.map(<[u8]>::to_vec).unwrap_or_default();
        for o in operands {
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(o);
        }
        Ok(out)
    }
}

fn options() -> Options {
    Options::default()
        .root_buffer_size(4 << 10)
        .node_size(16 << 10)
        .fan_out(4)
        .known_operators(vec![Arc::new(Join)])
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn corpus(kind: &str, seed: &str) -> Option<Vec<u8>> {
    std::fs::read(fuzz_dir().join("corpus").join(kind).join(seed)).ok()
}

/// A store in a new folder: the files of the seed store `template`, with the log, list or
/// manifest replaced by the corpus file of that kind named `seed` (of kind `only`, if given),
/// renamed as `rename` says (a seed whose manifest names other files than the template's).
fn store(
    template: &str,
    seed: &str,
    only: Option<&str>,
    rename: &[(&str, &str)],
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fuzz_dir().join(template)).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let kind = match () {
            _ if name.ends_with(".log") => "log",
            _ if name.ends_with(".list") => "list",
            _ => "manifest",
        };
        let bytes = match corpus(kind, seed) {
            Some(b) if only.is_none_or(|o| o == kind) => b,
            _ => std::fs::read(&p).unwrap(),
        };
        let name = rename
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name.as_str(), |(_, to)| to);
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

/// The format version in a file's header (after its 8-byte magic).
fn version(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[8..12].try_into().unwrap())
}

/// Open, check, read, grow past spills and splits, reopen and read back: everything that was
/// there still is, beside what was added.
fn open_check_grow(dir: &Path, what: &str) {
    let report = spillway::check(dir, false).unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.problems);
    let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let before = common::contents(&db);
    assert!(before.len() >= 10, "{what}: {} keys", before.len());
    let mut want = before.clone();
    for i in 0..2000u32 {
        let (k, v) = (
            format!("grown:{i:05}").into_bytes(),
            format!("{i}").repeat(4).into_bytes(),
        );
        db.put(&k, &v).unwrap();
        want.insert(k, v);
    }
    db.flush().unwrap();
    db.close().unwrap();
    let db = Db::open(dir, options()).unwrap();
    assert!(
        common::contents(&db) == want,
        "{what}: the grown store differs"
    );
    db.close().unwrap();
    let report = spillway::check(dir, false).unwrap();
    assert!(report.is_sound(), "{what}, grown: {:?}", report.problems);
}

#[test]
fn every_format_still_read_opens_checks_and_grows() {
    let mut seen = BTreeMap::<&str, std::collections::BTreeSet<u32>>::new();
    // Whole stores of their time: all three files of one seed.
    // The first store's manifest names log 3 and list 4; the others', log 2 and list 3.
    let v1_names = [
        ("0000000002.log", "0000000003.log"),
        ("0000000003.list", "0000000004.list"),
    ];
    for (template, seed, rename) in [
        ("seed-store", "seed-v1", &v1_names[..]),
        ("seed-store-hashed", "seed-hashed", &[]),
        ("seed-store", "seed-v3", &[]),
        ("seed-store", "seed", &[]),
        ("seed-store-hashed", "seed-v6-hashed", &[]),
        ("seed-store-hashed", "seed-v7-hashed", &[]),
        ("seed-store", "seed-v9", &[]),
        ("seed-store-hashed", "seed-v9-hashed", &[]),
        ("seed-store", "seed-v10", &[]),
        ("seed-store-hashed", "seed-v10-hashed", &[]),
    ] {
        let dir = store(template, seed, None, rename);
        for kind in ["log", "list", "manifest"] {
            seen.entry(kind)
                .or_default()
                .insert(version(&corpus(kind, seed).unwrap()));
        }
        open_check_grow(dir.path(), seed);
    }
    // Formats kept alone: a list of format 4 in the store of format 5, a log of format 2
    // in the first store (whose manifest, unlike later ones, records no seal at its log's end),
    // and manifests of format 6 (list files outlined, `list::file`) of the two seed stores,
    // written by this build from theirs.
    for (template, base, seed, kind, name, rename) in [
        (
            "seed-store",
            "seed",
            "seed-v4",
            "list",
            "0000000003.list",
            &[][..],
        ),
        (
            "seed-store",
            "seed-v1",
            "seed-v2",
            "log",
            "0000000003.log",
            &v1_names[..],
        ),
        (
            "seed-store",
            "seed",
            "seed-m6",
            "manifest",
            "MANIFEST",
            &[][..],
        ),
        (
            "seed-store-hashed",
            "seed-v7-hashed",
            "seed-m6-hashed",
            "manifest",
            "MANIFEST",
            &[][..],
        ),
    ] {
        let dir = store(template, base, None, rename);
        let bytes = corpus(kind, seed).unwrap();
        std::fs::write(dir.path().join(name), &bytes).unwrap();
        seen.entry(kind).or_default().insert(version(&bytes));
        open_check_grow(dir.path(), seed);
    }
    let all = |n: u32| (1..=n).collect::<std::collections::BTreeSet<u32>>();
    assert_eq!(seen["log"], all(5), "log formats");
    // List format 8 (expiry) was never kept as a seed: format 9 only left fingerprints out of
    // a checksum, and its seeds hold what 8 wrote.
    let mut lists = all(7);
    lists.extend([9, 10]);
    assert_eq!(seen["list"], lists, "list formats");
    // Manifest format 5 (named keyspaces) was never kept as a seed: 6 writes what it did.
    let mut manifests = all(4);
    manifests.insert(6);
    assert_eq!(seen["manifest"], manifests, "manifest formats");
}

/// The fuzz targets' reads of every corpus file, in place of its kind in both seed stores.
#[test]
fn the_fuzz_corpora_read_without_panics() {
    let mut files = 0;
    for kind in ["list", "log", "manifest"] {
        for e in std::fs::read_dir(fuzz_dir().join("corpus").join(kind)).unwrap() {
            let seed = e.unwrap().file_name().to_string_lossy().into_owned();
            for template in ["seed-store", "seed-store-hashed"] {
                let dir = store(template, &seed, Some(kind), &[]);
                let _ = spillway::check(dir.path(), false);
                if let Ok(db) = Db::open(dir.path(), options()) {
                    for (k, _) in db.iter().take(1000).flatten() {
                        let _ = db.get(&k);
                    }
                    let _ = db.iter().rev().take(1000).count();
                }
                files += 1;
            }
        }
    }
    assert!(files >= 40, "{files}");
}
