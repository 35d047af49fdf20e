//! What an open costs when the log holds more than a root buffer: a store (loaded before,
//! e.g. by `spillway load`) is opened with a root buffer of four times the default, `MIB`
//! MiB of 16-byte records are written to it unsynced and then synced, and it is closed —
//! a close does not spill, so the log holds them. Then it is opened with the defaults, whose
//! replay fills the buffer: the open, the first GET after it, the close (which waits for
//! any spill still running) and a second open are timed.
//!
//! ```text
//! cargo run --release -p spillway --example open_cost -- DIR [MIB]
//! ```
//! (default MIB = 128: twice the default buffer). BENCHMARKS.md has the figures.

use std::time::Instant;

use spillway::{Db, Options, WriteBatch, WriteOptions};

fn main() -> spillway::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: open_cost DIR [MIB]");
    let mib: usize = args.next().map_or(128, |a| a.parse().expect("MIB"));
    let defaults = Options::default();

    let db = Db::open(
        &dir,
        defaults
            .clone()
            .root_buffer_size(4 * defaults.root_buffer_size),
    )?;
    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ std::process::id() as u64;
    let mut written = 0u64;
    // `stats` estimates the tree's keys too: ask it every 100 batches only.
    while !written.is_multiple_of(100_000) || db.stats().buffer_bytes < (mib << 20) as u64 {
        let mut batch = WriteBatch::new();
        for _ in 0..1000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            batch.put(x.to_be_bytes(), x.rotate_left(29).to_le_bytes());
        }
        db.write(batch, WriteOptions::NO_SYNC)?;
        written += 1000;
    }
    db.sync()?;
    let spills = db.stats().root_spills;
    db.close()?;
    println!(
        "left in the log: {written} records, {mib} MiB of buffer ({spills} spills while writing)"
    );

    let start = Instant::now();
    let db = Db::open(&dir, defaults.clone())?;
    let open = start.elapsed();
    let replayed = db.stats().log_records_replayed;
    let got = db.get(x.to_be_bytes())?;
    let first_get = start.elapsed();
    assert_eq!(got.as_deref(), Some(&x.rotate_left(29).to_le_bytes()[..]));
    let close_start = Instant::now();
    let spills = db.stats().root_spills;
    db.close()?;
    let close = close_start.elapsed();
    println!(
        "open {:.3} s ({replayed} log records replayed, {spills} spills published at its end), \
         first GET at {:.3} s, close {:.3} s",
        open.as_secs_f64(),
        first_get.as_secs_f64(),
        close.as_secs_f64()
    );
    let start = Instant::now();
    let db = Db::open(&dir, defaults)?;
    println!(
        "second open {:.3} s ({} log records replayed)",
        start.elapsed().as_secs_f64(),
        db.stats().log_records_replayed
    );
    db.close()
}
