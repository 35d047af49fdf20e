//! Shared by the fuzz targets: a small real store as a template, and a folder that holds it
//! with one file replaced by the fuzzer's bytes.
//!
//! Each target hands arbitrary bytes to one of Spillway's readers through its public API
//! (`Db::open` replays logs and reads the manifest and list headers; `get` reads pages;
//! `check` reads everything). Any outcome is fine except a panic, a hang or a crash.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use spillway::{Db, Error, KeyOrder, Options};

/// A store's files, read once: name → bytes.
pub struct Template {
    pub files: Vec<(String, Vec<u8>)>,
}

fn options() -> Options {
    Options {
        root_buffer_size: 4 << 10,
        node_size: 16 << 10,
        fan_out: 4,
        ..Options::default()
    }
}

/// The store in `fuzz/seed-store` — an ordered store: one list of 300 keys sharing a 13-byte
/// prefix (so its page index has separators), a log of a few more writes, the manifest naming
/// them; its files are also the seeds of the corpora (the hashed store of formats before list
/// 3 and manifest 3 is kept in them as `seed-hashed`).
pub fn template() -> &'static Template {
    static T: OnceLock<Template> = OnceLock::new();
    T.get_or_init(|| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seed-store");
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).expect("fuzz/seed-store") {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            files.push((name, std::fs::read(&p).unwrap()));
        }
        files.sort();
        Template { files }
    })
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

/// This process's scratch folder, filled with the template except that every file whose name
/// ends with `suffix` holds `data` instead.
pub fn store_with(suffix: &str, data: &[u8]) -> PathBuf {
    let dir = scratch().join(format!("spillway-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in &template().files {
        let bytes = if name.ends_with(suffix) { data } else { bytes };
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    dir
}

/// Open the store in whichever key order its manifest records.
fn open(dir: &Path) -> spillway::Result<Db> {
    match Db::open(dir, options()) {
        Err(Error::KeyOrderMismatch { stored, .. }) => Db::open(
            dir,
            Options {
                key_order: stored,
                ..options()
            },
        ),
        other => other,
    }
}

/// Everything a reader of the store does: check it, open it, read from it — point reads and
/// scans both ways.
pub fn exercise(dir: &Path) {
    let _ = spillway::check(dir, false);
    if let Ok(db) = open(dir) {
        let w = lookup_keys();
        for k in &w {
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
    keys.extend([b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    keys
}
