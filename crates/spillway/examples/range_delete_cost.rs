//! What a range delete costs and what it gives back: an ordered store of `2·N` keys, then a
//! `delete_range` over the first `N` of them — the time it takes to write; GETs of the keys
//! that survive and a scan of them, right after it against right before it; many small range
//! deletes (thousands, overlapping) and the reads after them; and the bytes on disk before,
//! after the next spills, and after the store has been written over once more.
//!
//! ```text
//! cargo run --release -p spillway --example range_delete_cost -- [DIR] [N]
//! ```
//! (defaults: a temporary folder, N = 10,000,000). BENCHMARKS.md ("Range deletes") has the
//! figures.

use std::time::{Duration, Instant};

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

fn key(i: u64) -> [u8; 9] {
    let mut k = [b'k'; 9];
    k[1..].copy_from_slice(&i.to_be_bytes());
    k
}

fn list_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "list"))
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// Random GETs of surviving keys (`n..2n`) and a scan of 1M of them: (GETs/s, scan keys/s).
fn reads(db: &Db, n: u64, rounds: u64) -> (f64, f64) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let started = Instant::now();
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let i = n + x % n;
        assert!(db.get(key(i)).unwrap().is_some());
    }
    let gets = rounds as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    let scanned = db
        .range(key(n + n / 2)..)
        .unwrap()
        .take(1_000_000)
        .inspect(|r| assert!(r.is_ok()))
        .count();
    let scan = scanned as f64 / started.elapsed().as_secs_f64();
    (gets, scan)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_owned());
    let n: u64 = args.next().map_or(10_000_000, |a| a.parse().unwrap());
    let opts = Options::default().key_order(KeyOrder::Ordered);
    let db = Db::open(&dir, opts).unwrap();
    let started = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..2 * n {
        batch.put(key(i), i.to_le_bytes());
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch), WriteOptions::NO_SYNC)
                .unwrap();
        }
    }
    db.write(batch, WriteOptions::NO_SYNC).unwrap();
    db.flush().unwrap();
    println!(
        "loaded {} keys in {:.1} s; lists {:.1} MiB",
        2 * n,
        started.elapsed().as_secs_f64(),
        list_bytes(&dir) as f64 / (1 << 20) as f64
    );
    let rounds = 1_000_000;
    let (gets0, scan0) = reads(&db, n, rounds);
    println!("before: {gets0:.0} GETs/s, scan {scan0:.0} keys/s");

    let started = Instant::now();
    db.delete_range(key(0)..key(n)).unwrap();
    let took = started.elapsed();
    println!("delete_range over {n} keys: {} µs", took.as_micros());
    assert!(db.get(key(0)).unwrap().is_none() && db.get(key(n - 1)).unwrap().is_none());
    let (gets1, scan1) = reads(&db, n, rounds);
    println!(
        "right after: {gets1:.0} GETs/s ({:.3}× before), scan {scan1:.0} keys/s ({:.3}×)",
        gets1 / gets0,
        scan1 / scan0
    );

    // Thousands of small, overlapping range deletes in the deleted half.
    let started = Instant::now();
    let mut x = 7u64;
    for _ in 0..5000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let lo = (x >> 11) % n;
        let hi = (lo + 1 + (x >> 50) % 1000).min(n);
        db.delete_range(key(lo)..key(hi)).unwrap();
    }
    let per = started.elapsed() / 5000;
    let (gets2, scan2) = reads(&db, n, rounds);
    println!(
        "5000 more range deletes ({} µs each): {gets2:.0} GETs/s ({:.3}× before), scan {scan2:.0} keys/s ({:.3}×)",
        per.as_micros(),
        gets2 / gets0,
        scan2 / scan0
    );

    let before = list_bytes(&dir);
    db.flush().unwrap();
    // Dead files go once the last reader of the old tree lets go, just after the spill.
    std::thread::sleep(Duration::from_millis(200));
    let (gets3, scan3) = reads(&db, n, rounds);
    println!(
        "after the spill: lists {:.1} MiB (were {:.1}); {gets3:.0} GETs/s ({:.3}×), scan {scan3:.0} keys/s ({:.3}×)",
        list_bytes(&dir) as f64 / (1 << 20) as f64,
        before as f64 / (1 << 20) as f64,
        gets3 / gets0,
        scan3 / scan0
    );
    // Space comes back as spills reach the leaves that hold the deleted keys: write the
    // surviving half over once and see.
    let mut batch = WriteBatch::new();
    for i in n..2 * n {
        batch.put(key(i), (i + 1).to_le_bytes());
        if batch.len() == 1000 {
            db.write(std::mem::take(&mut batch), WriteOptions::NO_SYNC)
                .unwrap();
        }
    }
    db.write(batch, WriteOptions::NO_SYNC).unwrap();
    db.flush().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    println!(
        "after rewriting the surviving half: lists {:.1} MiB",
        list_bytes(&dir) as f64 / (1 << 20) as f64
    );
    println!("{:?}", db.stats().collections);
}
