//! What a spill of a big root buffer costs in an ordered store: `N` records written in
//! batches of 1000 into a 1 GiB root buffer, then one spill (`Db::flush`), timed. Keys are
//! like the elements of four Redis lists in `spillway serve` — a 16-byte common prefix, the
//! list, then an 8-byte index — so most keys share their route (their first 8 bytes) and
//! the spill's sort orders them by reading them in the arena; `SPILL_SORT_RANDOM=1` gives
//! random 8-byte keys instead (no shared routes).
//!
//! ```text
//! cargo run --release -p spillway --example spill_sort_cost -- [N]
//! ```
//! (default N = 3,000,000). BENCHMARKS.md has the figures.

use std::time::Instant;

use spillway::{Db, KeyOrder, Options, WriteBatch, WriteOptions};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map_or(3_000_000, |a| a.parse().unwrap());
    let random = std::env::var_os("SPILL_SORT_RANDOM").is_some();
    let tmp = tempfile::tempdir().unwrap();
    let options = Options::default()
        .key_order(KeyOrder::Ordered)
        .root_buffer_size(1 << 30)
        .background_spills(false);
    let db = Db::open(tmp.path(), options).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in 0..n.div_ceil(1000) {
        let mut batch = WriteBatch::new();
        for i in 0..1000.min(n - chunk * 1000) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = if random {
                x.to_be_bytes().to_vec()
            } else {
                let mut k = b"\x00\x06mylist\x00\x00\x00\x00\x00\x00\x00".to_vec();
                k.push((x % 4) as u8);
                k.extend_from_slice(&(chunk * 1000 + i).to_be_bytes());
                k
            };
            batch.put(key, b"xxx");
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
    let started = Instant::now();
    db.flush().unwrap();
    let ms = started.elapsed().as_secs_f64() * 1e3;
    println!("{n} records in the root buffer, random keys: {random}; the spill: {ms:.0} ms");
}
