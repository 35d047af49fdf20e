//! What a seek costs in an ordered store whose root buffer holds `N` records: a range iterator
//! opened at a random key and read for one record, alone (the buffer's sorted runs built once)
//! and after each of a stream of one-record writes (a write between seeks, as a server's
//! `SPOP` or `ZPOPMIN` does: each seek first sorts what the last write added); and scans of
//! 100 records, a write before each. Keys are like a Redis set's members in `spillway serve`:
//! a 14-byte common prefix, then 8 random bytes, then 8 more.
//!
//! ```text
//! cargo run --release -p spillway --example seek_cost -- [DIR] [N] [SEEKS]
//! ```
//! (defaults: a temporary folder, N = 600,000, SEEKS = 100,000). For a profile of one part:
//! `SEEK_COST_ALONE=1` stops after the seeks alone, `SEEK_COST_SCANS=1` runs only the scans.
//! BENCHMARKS.md has the figures.

use std::time::Instant;

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

fn key(x: u64) -> Vec<u8> {
    let mut k = b"\x05myset\x00\x00\x01\x02\x03\x04\x05".to_vec();
    k.extend_from_slice(&x.to_be_bytes());
    k.extend_from_slice(&x.rotate_left(17).to_be_bytes());
    k
}

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// One seek: an iterator from a random key, read for `take` records; µs each over `seeks`.
fn seeks(db: &Db, seeks: u64, take: usize, write_between: bool, rng: &mut u64) -> f64 {
    let mut took = 0.0;
    for i in 0..seeks {
        if write_between {
            let mut batch = WriteBatch::new();
            batch.put(key(next(rng)), b"v");
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
        }
        let started = Instant::now();
        let found = db.range(key(next(rng))..).unwrap().take(take).count();
        took += started.elapsed().as_secs_f64();
        assert!(found > 0 || i < 10 || !write_between);
    }
    took * 1e6 / seeks as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let tmp = tempfile::tempdir().unwrap();
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("db"));
    let n: u64 = args.next().map_or(600_000, |a| a.parse().unwrap());
    let rounds: u64 = args.next().map_or(100_000, |a| a.parse().unwrap());
    let options = Options::default()
        .key_order(KeyOrder::Ordered)
        .root_buffer_size(1 << 30)
        .background_spills(false);
    let db = Db::open(&dir, options).unwrap();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in 0..n.div_ceil(1000) {
        let mut batch = WriteBatch::new();
        for _ in 0..1000.min(n - chunk * 1000) {
            batch.put(key(next(&mut rng)), b"value");
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
    println!("{n} records in the root buffer (ordered keys of 30 bytes)");
    if std::env::var_os("SEEK_COST_SCANS").is_some() {
        let scans = seeks(&db, rounds, 100, true, &mut rng);
        println!("{rounds} scans of 100 records, a write before each: {scans:.2} us a scan");
        return;
    }
    let first = seeks(&db, 1, 1, false, &mut rng);
    println!("first seek (sorts the buffer): {first:.0} us");
    let alone = seeks(&db, rounds, 1, false, &mut rng);
    println!("{rounds} seeks, no writes between: {alone:.2} us a seek");
    if std::env::var_os("SEEK_COST_ALONE").is_some() {
        return;
    }
    let mixed = seeks(&db, rounds, 1, true, &mut rng);
    println!("{rounds} seeks, a write before each: {mixed:.2} us a seek");
    let scans = seeks(&db, rounds / 10, 100, true, &mut rng);
    println!(
        "{} scans of 100 records, a write before each: {scans:.2} us a scan",
        rounds / 10
    );
}
