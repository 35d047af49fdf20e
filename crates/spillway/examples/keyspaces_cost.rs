//! What keyspaces cost: N keyspaces of K keys each against one keyspace of N·K keys — files,
//! bytes on disk, the time to open the store, and the memory an open store holds (resident
//! set growth of this process, from `/proc/self/statm`).
//!
//! ```text
//! cargo run --release -p spillway --example keyspaces_cost -- [DIR] [N] [K]
//! ```
//! (defaults: a temporary folder, 1000 keyspaces, 1000 keys). Memory is measured again in a
//! fresh process that only opens the flushed store. BENCHMARKS.md ("Keyspaces") has the
//! figures.

use std::time::Instant;

use spillway::{Db, KeyspaceOptions, Options, WriteBatch, WriteOptions};

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn folder_figures(dir: &std::path::Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        files += 1;
        bytes += e.metadata().unwrap().len();
    }
    (files, bytes)
}

/// Load `spaces` keyspaces (0: the default keyspace alone) of `keys` keys each, close, and
/// measure a reopen.
fn measure(dir: &std::path::Path, spaces: usize, keys: u64) {
    let db = Db::open(dir, Options::default()).unwrap();
    let started = Instant::now();
    let handles: Vec<_> = match spaces {
        0 => vec![db.default_keyspace()],
        n => (0..n)
            .map(|i| {
                db.keyspace(&format!("ks{i:05}"), KeyspaceOptions::default())
                    .unwrap()
            })
            .collect(),
    };
    let create = started.elapsed();
    let started = Instant::now();
    for ks in &handles {
        let mut batch = WriteBatch::new();
        for k in 0..keys {
            batch.put_in(ks, k.to_be_bytes(), (k * 7).to_le_bytes());
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
    db.sync().unwrap();
    let load = started.elapsed();
    drop(handles);
    db.close().unwrap();
    let (files, bytes) = folder_figures(dir);

    let before = resident_bytes();
    let started = Instant::now();
    let db = Db::open(dir, Options::default()).unwrap();
    let open = started.elapsed();
    let held = resident_bytes().saturating_sub(before);
    // Every keyspace answers (and a GET of each checks it holds what was written).
    let names = db.keyspaces();
    let started = Instant::now();
    for name in names
        .iter()
        .map(String::as_str)
        .chain((spaces == 0).then_some(""))
    {
        let ks = db.keyspace(name, KeyspaceOptions::default()).unwrap();
        let v = ks.get((keys - 1).to_be_bytes()).unwrap();
        assert_eq!(v, Some(((keys - 1) * 7).to_le_bytes().to_vec()));
    }
    let gets = started.elapsed();
    let what = match spaces {
        0 => format!("1 default keyspace of {keys} keys"),
        n => format!("{n} keyspaces of {keys} keys"),
    };
    println!(
        "{what}: created in {:.2} s (a manifest write each), loaded in {:.2} s; {files} files, {:.1} MiB on disk; reopen {:.0} ms (replaying \
         the log), {:.1} MiB resident after it; a GET in each keyspace {:.1} ms",
        create.as_secs_f64(),
        load.as_secs_f64(),
        bytes as f64 / (1 << 20) as f64,
        open.as_secs_f64() * 1e3,
        held as f64 / (1 << 20) as f64,
        gets.as_secs_f64() * 1e3,
    );
    let started = Instant::now();
    db.flush().unwrap();
    let flush = started.elapsed();
    db.close().unwrap();
    let (files, bytes) = folder_figures(dir);
    let before = resident_bytes();
    let started = Instant::now();
    let db = Db::open(dir, Options::default()).unwrap();
    let open = started.elapsed();
    let held = resident_bytes().saturating_sub(before);
    println!(
        "  flushed in {:.2} s: {files} files, {:.1} MiB on disk; reopen {:.0} ms, {:.1} MiB resident after it",
        flush.as_secs_f64(),
        bytes as f64 / (1 << 20) as f64,
        open.as_secs_f64() * 1e3,
        held as f64 / (1 << 20) as f64,
    );
    db.close().unwrap();
}

/// Open the store in `dir` in this fresh process and report what the open holds.
fn open_only(dir: &std::path::Path) {
    let before = resident_bytes();
    let started = Instant::now();
    let db = Db::open(dir, Options::default()).unwrap();
    let open = started.elapsed();
    let held = resident_bytes().saturating_sub(before);
    let s = db.stats();
    let metadata = s.filter_bytes + s.index_bytes + s.sketch_bytes + s.selector_bytes;
    println!(
        "  a fresh process opens it in {:.0} ms and holds {:.1} MiB more resident ({} keyspaces, \
         {} list files; their filters, page indexes, sketches and selectors: {:.2} MiB by the \
         store's own count)",
        open.as_secs_f64() * 1e3,
        held as f64 / (1 << 20) as f64,
        db.keyspaces().len() + 1,
        s.files,
        metadata as f64 / (1 << 20) as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("open") {
        return open_only(std::path::Path::new(&args[1]));
    }
    let tmp = tempfile::tempdir().unwrap();
    let base = args
        .first()
        .map_or_else(|| tmp.path().to_owned(), std::path::PathBuf::from);
    let spaces: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let keys: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let one = base.join("one");
    let many = base.join("many");
    let exe = std::env::current_exe().unwrap();
    for (dir, n) in [(&one, 0), (&many, spaces)] {
        let per = if n == 0 { spaces as u64 * keys } else { keys };
        measure(dir, n, per);
        let status = std::process::Command::new(&exe)
            .arg("open")
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success());
    }
}
