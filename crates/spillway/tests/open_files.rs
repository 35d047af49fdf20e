//! A store of many more list files than the process may hold open (issue 10, item 14): the
//! list files' descriptors live in a cache of at most `Options::max_open_files`, so writes,
//! reads, a reopen and `check` all work under a low `RLIMIT_NOFILE`.
//!
//! The test binary re-runs itself as the child (`current_exe() --exact open_files_child
//! --nocapture` with `SPILLWAY_OPEN_FILES_CHILD=<dir>`; without that variable the child test
//! is a no-op that passes). The child lowers its soft and hard limit on open files to
//! [`FD_LIMIT`] — something a process cannot undo, hence the child — then, with tiny options
//! and `max_open_files: 16`, writes batches of puts and deletes against a `BTreeMap` model
//! while a second thread keeps reading keys that never change, until the folder holds
//! [`MIN_LISTS`] list files or more (four times the limit: the store before item 14 held every
//! one open and failed with "Too many open files"); checks every key, reopens (which opens
//! every list file), checks every key again and runs `spillway::check`. The descriptors the
//! process holds are counted after every batch and must stay well under the limit.
//!
//! A second child (`wide_spill_child`) spills into a root of hundreds of children under the
//! same limit: the lists a spill finishes wait for their fsync holding a descriptor each, and
//! must be synced in groups the limit allows.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use spillway::{Db, Options, WriteBatch, WriteOptions};

mod common;

use common::Rng;

const CHILD_ENV: &str = "SPILLWAY_OPEN_FILES_CHILD";
/// The child's soft and hard limit on open files.
const FD_LIMIT: u64 = 64;
const MAX_OPEN_FILES: usize = 16;
/// List files the store must reach.
const MIN_LISTS: usize = 4 * FD_LIMIT as usize;
const KEYS: u64 = 12_000;
/// Keys `0..PINNED` are written once, first, and read throughout by another thread.
const PINNED: u64 = 100;
const MAX_BATCHES: u64 = 10_000;

fn options() -> Options {
    common::tiny_options()
        .page_size(64)
        .max_open_files(MAX_OPEN_FILES)
}

fn key(k: u64) -> Vec<u8> {
    format!("key{k:05}").into_bytes()
}

fn pinned_value(k: u64) -> Vec<u8> {
    format!("pinned{k}").into_bytes()
}

/// Descriptors this process holds now.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn check_all(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    for k in 0..KEYS {
        let key = key(k);
        let got = db
            .get(&key)
            .unwrap_or_else(|e| panic!("{when}: get key{k}: {e}"));
        assert_eq!(got.as_ref(), model.get(&key), "{when}: key{k}");
    }
}

/// Run the child test `name` in a process of its own, with `env` naming a fresh folder; it
/// must finish and say "child done". Returns that line.
fn run_child(name: &str, env: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture"])
        .env(env, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("child done"),
        "child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let summary = stdout.lines().find(|l| l.contains("child done")).unwrap();
    summary.to_owned()
}

/// Lower this process's soft and hard limit on open files to [`FD_LIMIT`] (for good).
fn limit_open_files() {
    let lim = libc::rlimit {
        rlim_cur: FD_LIMIT,
        rlim_max: FD_LIMIT,
    };
    // SAFETY: setrlimit reads only the struct we pass.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
}

/// In a child process (`env` names its store), the store's folder, with the limit lowered;
/// `None` in the test run itself.
fn child_dir(env: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(env)?;
    limit_open_files();
    Some(dir.into())
}

#[test]
fn a_store_of_many_more_list_files_than_the_fd_limit_works() {
    println!("{}", run_child("open_files_child", CHILD_ENV));
}

#[test]
fn open_files_child() {
    let Some(dir) = child_dir(CHILD_ENV) else {
        return;
    };
    let dir = dir.as_path();

    let db = Db::open(dir, options()).unwrap();
    let mut model = BTreeMap::new();
    let mut pinned = WriteBatch::new();
    for k in 0..PINNED {
        pinned.put(key(k), pinned_value(k));
        model.insert(key(k), pinned_value(k));
    }
    db.write(pinned, WriteOptions::SYNC).unwrap();

    let mut rng = Rng::new(14);
    let (stop, reads) = (AtomicBool::new(false), AtomicU64::new(0));
    let mut max_fds = 0;
    let mut batches = 0;
    let mut peak = 0;
    std::thread::scope(|s| {
        // A reader racing every spill: its versions' files are superseded, removed and their
        // descriptors evicted under it.
        s.spawn(|| {
            let mut r = Rng::new(41);
            while !stop.load(Relaxed) {
                let k = r.below(PINNED);
                let got = db.get(key(k)).unwrap();
                assert_eq!(got, Some(pinned_value(k)), "pinned key{k}");
                reads.fetch_add(1, Relaxed);
            }
        });
        // Stops the reader even if a write below panics (or the scope would wait forever).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Relaxed);
            }
        }
        let _stop = Stop(&stop);
        // The most list files seen at once: a background spill may remove some between two
        // looks, so the count after the loop can be lower than the one that ended it.
        let mut lists = || {
            let n = common::files_with_extension(dir, "list").len();
            peak = peak.max(n);
            n
        };
        while batches < MAX_BATCHES && (batches % 50 != 0 || lists() < MIN_LISTS) {
            let mut b = WriteBatch::new();
            for _ in 0..rng.range(1, 40) {
                let k = rng.range(PINNED, KEYS - 1);
                if rng.below(10) == 0 {
                    b.delete(key(k));
                    model.remove(&key(k));
                } else {
                    let v = vec![b'a' + (k % 26) as u8; rng.range(8, 40) as usize];
                    b.put(key(k), &v);
                    model.insert(key(k), v);
                }
            }
            db.write(b, WriteOptions::NO_SYNC).unwrap();
            batches += 1;
            let k = key(rng.range(PINNED, KEYS - 1));
            assert_eq!(
                db.get(&k).unwrap().as_ref(),
                model.get(&k),
                "batch {batches}"
            );
            max_fds = max_fds.max(open_fds());
        }
    });
    assert!(
        peak >= MIN_LISTS,
        "{peak} list files after {batches} batches: the test needs more"
    );
    // The flush's splits may merge some lists away; the reopen must still open more list
    // files than the process may hold.
    db.flush().unwrap();
    let lists = common::files_with_extension(dir, "list").len();
    assert!(
        lists > FD_LIMIT as usize,
        "{lists} list files after the flush"
    );
    assert_eq!(db.files_in_use(), common::list_file_names(dir));
    check_all(&db, &model, "before reopen");
    let stats = db.stats();
    assert!(stats.open_list_files <= MAX_OPEN_FILES as u64, "{stats:?}");
    assert!(stats.handle_misses > 0, "{stats:?}");
    db.close().unwrap();

    // Reopened with the default `max_open_files`, far above the limit: the store keeps at
    // most half the limit open.
    let default_cap = options().max_open_files(Options::default().max_open_files);
    let db = Db::open(dir, default_cap).unwrap();
    max_fds = max_fds.max(open_fds());
    check_all(&db, &model, "after reopen");
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let values = db.multi_get(&keys).unwrap();
    for (k, v) in keys.iter().zip(values) {
        assert_eq!(v.as_ref(), model.get(k));
    }
    db.check_tree().unwrap();
    max_fds = max_fds.max(open_fds());
    let stats = db.stats();
    assert!(stats.open_list_files <= FD_LIMIT / 2, "{stats:?}");
    db.close().unwrap();

    let report = spillway::check(dir, false).unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);
    assert_eq!(report.lists, lists as u64);

    // The cache's (16, then half the limit), the log, the lock, a list being written, the
    // test harness's own.
    assert!(
        max_fds <= FD_LIMIT as usize / 2 + 16,
        "{max_fds} descriptors open at once"
    );
    println!(
        "child done: {lists} list files (descriptor limit {FD_LIMIT}), {batches} batches, \
         {} pinned reads, at most {max_fds} descriptors open",
        reads.load(Relaxed)
    );
}

const WIDE_CHILD_ENV: &str = "SPILLWAY_WIDE_SPILL_CHILD";

/// A spill into a root of well over `FD_LIMIT` children writes a list for each: the lists
/// wait for their fsync together, each holding a descriptor, and under a low limit they must
/// be synced in groups the limit allows (256 at once failed with "Too many open files").
#[test]
fn a_spill_into_more_children_than_the_fd_limit_works() {
    println!("{}", run_child("wide_spill_child", WIDE_CHILD_ENV));
}

#[test]
fn wide_spill_child() {
    let Some(dir) = child_dir(WIDE_CHILD_ENV) else {
        return;
    };
    let dir = dir.as_path();
    let opts = Options::default()
        .root_buffer_size(256 << 10)
        .node_size(64 << 10)
        .fan_out(256)
        .page_size(512)
        .max_open_files(MAX_OPEN_FILES);
    let db = Db::open(dir, opts.clone()).unwrap();
    let mut rng = Rng::new(77);
    let mut model = BTreeMap::new();
    // How many leaves 400 K records make depends on when background upkeep splits them (126
    // to well over 128 seen): write on until the spills reach more leaves than the limit.
    for b in 0..2_000u64 {
        if b >= 400 && db.stats().leaves > 2 * FD_LIMIT {
            break;
        }
        let mut batch = WriteBatch::new();
        for _ in 0..1000 {
            let k = rng.next_u64().to_be_bytes().to_vec();
            batch.put(&k, b.to_le_bytes());
            model.insert(k, b.to_le_bytes().to_vec());
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap_or_else(|e| {
            let fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
                .unwrap()
                .filter_map(|f| std::fs::read_link(f.unwrap().path()).ok())
                .map(|p| p.display().to_string())
                .collect();
            panic!("batch {b}: {e}; open: {fds:?}")
        });
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(
        s.leaves > 2 * FD_LIMIT,
        "{} leaves: the spills must reach more children than the limit",
        s.leaves
    );
    for (k, v) in model.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let db = Db::open(dir, opts).unwrap();
    assert_eq!(db.iter().count(), model.len());
    db.close().unwrap();
    println!("child done: {} leaves", s.leaves);
}
