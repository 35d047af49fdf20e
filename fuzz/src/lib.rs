//! Shared by the fuzz targets: a small real store as a template, and a folder that holds it
//! with one file replaced by the fuzzer's bytes.
//!
//! Each target hands arbitrary bytes to one of Spillway's readers through its public API
//! (`Db::open` replays logs and reads the manifest and list headers; `get` reads pages;
//! `check` reads everything). Any outcome is fine except a panic, a hang or a crash.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::sync::Arc;

use spillway::{Db, KeyOrder, MergeOperator, Options};

/// A store's files, read once: name → bytes.
pub struct Template {
    pub files: Vec<(String, Vec<u8>)>,
}

fn options() -> Options {
    Options::default()
        .root_buffer_size(4 << 10)
        .node_size(16 << 10)
        .fan_out(4)
        .known_operators(vec![Arc::new(Join)])
}

/// The store in `fuzz/seed-store` — an ordered store with merge operator [`Join`]: one list of
/// 300 keys sharing a 13-byte prefix (so its page index has separators) and 60 keys holding a
/// stack of three operands each (`Join` has no partial merge), a log of a few more writes
/// (puts, merges, a delete), the manifest naming them and the operator; its files are also the
/// seeds of the corpora (the stores of earlier formats are kept in them: `seed-v4`, the list
/// of format 4, before aligned pages and sketches; `seed-v3`, the ordered store of list
/// format 3 and manifest format 3; `seed-hashed`, the hashed store
/// before them).
pub fn template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| Template::read("seed-store"))
}

/// The store in `fuzz/seed-store-hashed` — a hashed store of list format 7, whose list has
/// fingerprints that node selectors are built from and rounded page routes (500 records
/// written by `spillway load`, then a log of a few puts and a delete), with its selector saved
/// (`SELECTORS` and one `.sel` file, written by an open of issue 32); its files are the
/// `seed-v7-hashed` seeds (the format-6 store's, `seed-v6-hashed`, are kept), and the
/// selector files the `seed-v1-hashed` seeds of the `selectors` and `selector_file` targets.
pub fn hashed_template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| Template::read("seed-store-hashed"))
}

impl Template {
    fn read(folder: &str) -> Template {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).expect("a seed store folder") {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            files.push((name, std::fs::read(&p).unwrap()));
        }
        files.sort();
        Template { files }
    }
}

/// Scratch space: memory-backed where there is some, so that fsyncs cost nothing.
fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Put `data` in place of one file of each seed store (the one whose name ends with
/// `suffix`) and [`exercise`] the store.
pub fn exercise_with(suffix: &str, data: &[u8]) {
    for template in [template(), hashed_template()] {
        exercise(&store_with(template, suffix, data));
    }
}

/// This process's scratch folder, filled with `template` except that every file whose name
/// ends with `suffix` holds `data` instead.
pub fn store_with(template: &Template, suffix: &str, data: &[u8]) -> PathBuf {
    let dir = scratch().join(format!("spillway-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in &template.files {
        let bytes = if name.ends_with(suffix) { data } else { bytes };
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    dir
}

/// The seed store's merge operator: joins operands with commas, and cannot combine operands
/// without their base, so they stack in lists.
pub struct Join;

impl MergeOperator for Join {
    fn name(&self) -> &str {
        "fuzz.join"
    }
    fn full_merge(
        &self,
        _key: &[u8],
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

/// Open the store in whichever key order and with whichever merge operator its manifest
/// records (the seed store's, or a built-in): the engine's own open does that.
fn open(dir: &Path) -> spillway::Result<Db> {
    Db::open(dir, options())
}

/// Everything a reader of the store does: check it, open it, read from it — point reads and
/// scans both ways.
pub fn exercise(dir: &Path) {
    let _ = spillway::check(dir, false);
    if let Ok(db) = open(dir) {
        let mut keys = lookup_keys();
        // And keys the store holds, whatever they are: they read pages.
        keys.extend(db.iter().take(64).filter_map(|r| r.ok()).map(|(k, _)| k));
        for k in &keys {
            let _ = db.get(k);
        }
        let _ = db.iter().take(1000).count();
        let _ = db.iter().rev().take(1000).count();
        if db.key_order() == KeyOrder::Ordered {
            if let Ok(it) = db.range(&b"user:000000000100"[..]..&b"user:000000000200"[..]) {
                let _ = it.rev().count();
            }
            if let Ok(it) = db.prefix("user:00000000") {
                let _ = it.count();
            }
        }
        let _ = db.close();
    }
}

/// Keys to look up: some the seed store's list holds, some it does not (they probe filters
/// and pages), the ones its log holds, and 8-byte keys of the older hashed seeds.
fn lookup_keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = (0..32u64).map(|i| i.to_le_bytes().to_vec()).collect();
    keys.extend(
        (0..320u32)
            .step_by(7)
            .map(|i| format!("user:00000000{i:04}").into_bytes()),
    );
    keys.extend(
        (0..320u32)
            .step_by(5)
            .map(|i| format!("user:00000000{i:04}+").into_bytes()),
    );
    keys.extend([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    keys
}
