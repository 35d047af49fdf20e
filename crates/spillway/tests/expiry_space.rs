//! The space expired data takes: a store whose keys all expire `T` after they are written,
//! written at a steady rate for 10 × `T` under a test clock, keeps its list files within a
//! stated multiple of its live data — for random keys (every leaf keeps being written) and for
//! keys in time order (a leaf, once past, is never written again: only the sweep at each
//! spill finds it). The bound (DURABILITY.md, "Expiry"): a node is collected once half of it
//! is dead — counting, for a leaf, its share of the file bytes no view covers — so leaves
//! take at most about twice their live data; internal nodes' lists (up to a node each) and
//! the root buffer come on top, which at these tiny sizes is most of the margin to 3×.

mod common;

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use spillway::{Db, KeyOrder, ManualClock, Options};

const T_MS: u64 = 10_000;
const STEP_MS: u64 = 500;
const PER_STEP: u64 = 300;
const VALUE: usize = 100;

fn list_bytes(dir: &std::path::Path) -> u64 {
    common::files_with_extension(dir, "list")
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum()
}

/// The worst ratio of list bytes to live bytes once the store is in its steady state.
fn worst_ratio(order: KeyOrder) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let clock = Arc::new(ManualClock::new(start));
    let opts = Options::default()
        .root_buffer_size(64 << 10)
        .node_size(128 << 10)
        .fan_out(4)
        .page_size(1024)
        .key_order(order)
        .background_spills(false)
        .clock(clock.clone());
    let node_size = opts.node_size as u64;
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = common::Rng::new(3);
    let mut seq = 0u64;
    let record = (16 + VALUE) as u64;
    let steps = 10 * T_MS / STEP_MS;
    // Measured after the clock moves on: the keys of the last T / STEP - 1 steps are live.
    let live_steps = T_MS / STEP_MS - 1;
    let mut worst: f64 = 0.0;
    for step in 0..steps {
        for _ in 0..PER_STEP {
            let key = match order {
                KeyOrder::Hashed => format!("s{:015}", rng.next_u64() % 1_000_000_000_000),
                KeyOrder::Ordered => format!("t{seq:015}"),
            };
            seq += 1;
            db.put_ttl(key, [b'v'; VALUE], Duration::from_millis(T_MS))
                .unwrap();
        }
        clock.advance(Duration::from_millis(STEP_MS));
        if step >= 2 * live_steps {
            let live = live_steps * PER_STEP * record;
            let ratio = list_bytes(dir.path()) as f64 / live as f64;
            worst = worst.max(ratio);
        }
    }
    // Every key written in the last T is there; none older is.
    let n = db.iter().count() as u64;
    assert_eq!(n, live_steps * PER_STEP, "{order:?}: live keys");
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    (worst, node_size)
}

#[test]
fn expiring_keys_take_a_bounded_multiple_of_their_live_size() {
    for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
        let (worst, _) = worst_ratio(order);
        eprintln!("{order:?}: worst list bytes / live bytes = {worst:.2}");
        assert!(worst <= 3.0, "{order:?}: {worst:.2}× the live data");
    }
}

/// A spill that finds every leaf half expired collects them all, but a few at a time: each
/// step's new lists are durable and the old ones deleted before the next step writes, so the
/// old and new lists of the whole tree are never on disk together (they were, before sweeps
/// were published step by step: the spill's old version kept every file until it ended). A
/// thread samples the list files' bytes while the spill runs.
#[test]
fn a_sweep_frees_the_space_of_each_step_before_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let start = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let clock = Arc::new(ManualClock::new(start));
    let node = 256 << 10;
    let opts = Options::default()
        .root_buffer_size(128 << 10)
        .node_size(node)
        .fan_out(64)
        .page_size(1024)
        .background_spills(false)
        .clock(clock.clone());
    let db = Db::open(dir.path(), opts).unwrap();
    let mut rng = common::Rng::new(11);
    // Every other key dies after T; the rest live ten times as long: each leaf ends half
    // dead, all at the same moment.
    let keys = 60_000u64;
    for i in 0..keys {
        let ttl = if i % 2 == 0 { T_MS } else { 10 * T_MS };
        let key = format!("k{:015}", rng.next_u64() % 1_000_000_000_000);
        db.put_ttl(key, [b'v'; VALUE], Duration::from_millis(ttl))
            .unwrap();
    }
    db.flush().unwrap();
    let leaves = db.stats().leaves;
    assert!(
        leaves >= 20,
        "the tree has {leaves} leaves: too few to show steps"
    );
    let before = list_bytes(dir.path());

    clock.advance(Duration::from_millis(T_MS + 1));
    let sampling = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (sampling, path) = (sampling.clone(), dir.path().to_owned());
        std::thread::spawn(move || {
            let mut peak = 0;
            while sampling.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(list_bytes(&path));
            }
            peak
        })
    };
    let collections = db.stats().collections;
    db.put_ttl("one more", [b'v'; VALUE], Duration::from_millis(T_MS))
        .unwrap();
    db.flush().unwrap();
    sampling.store(false, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().unwrap();
    let after = list_bytes(dir.path());
    let collected = db.stats().collections - collections;
    eprintln!(
        "{leaves} leaves, {collected} collected: lists {before} -> {after} bytes, {peak} at the peak"
    );
    // Most leaves were collected, and half of what they held is gone.
    assert!(
        collected * 4 >= leaves * 3,
        "{collected} of {leaves} leaves collected"
    );
    assert!(after * 10 <= before * 7, "{before} -> {after} bytes");
    // At any moment, the old lists of the steps not yet published and the new lists of the
    // step in progress: a step collects up to a node's worth (or a 32nd of the tree), plus the
    // one leaf that crosses that, and writes about half of what it reads.
    assert!(
        peak <= before + 3 * node as u64,
        "{peak} bytes of lists at the peak, {before} before: the whole sweep at once?"
    );
    assert_eq!(db.iter().count() as u64, keys / 2 + 1);
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
