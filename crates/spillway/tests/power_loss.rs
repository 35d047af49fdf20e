//! Power loss, simulated in the file layer (`spillway::power_loss`): every file goes back to
//! what had been made durable — bytes past the last fsync cut, names, renames and removals
//! not yet fsynced in their folder undone — or, in half the cases, to that plus a random part
//! of what was not synced: random 4 KiB blocks of each file's unsynced tail, the others zeros,
//! so that logs have holes with later records after them, and older logs lose their tails
//! while newer ones keep theirs. Each case runs three rounds of writes on one store, each
//! ended by such a power loss or by a process crash, and reopens after each. Checked, for one
//! writer mixing synced and unsynced batches (synced by the write, or by `Db::sync` after it),
//! with spills inline and in the background:
//!
//! * every batch is there entirely or not at all;
//! * what survived a power loss is a prefix of what was acknowledged (no later batch without
//!   every earlier one) — the retired log must be synced before a synced write in the next one
//!   is acknowledged;
//! * every batch up to the last synced one survived (and the store opened: a hole that only a
//!   power loss explains is not corruption); after a crash, every batch survived;
//! * what a recovery dropped stays dropped and what it kept stays kept, through later rounds;
//! * every batch also increments shared counters (merge operands): each counter equals the
//!   number of surviving batches that incremented it — an increment counts exactly once,
//!   never lost with its batch kept, never twice after a replay.
//!
//! In one case of three, batches span two keyspaces — the default one and one of the other
//! key order — and are all or nothing across both.

mod common;

use common::{mix, Rng};
use spillway::faults::{self, Op};
use spillway::power_loss;
use spillway::{Db, KeyOrder, Keyspace, KeyspaceOptions, Options, WriteBatch, WriteOptions};

const CASES: u64 = 80;

/// Tiny buffers, so that spills and new logs come often; or logs of several 4 KiB blocks,
/// synced seldom, so that a power loss can leave holes inside a log.
fn options(background_spills: bool, long_logs: bool, key_order: KeyOrder) -> Options {
    let tiny = common::tiny_options();
    let buffer = if long_logs {
        64 << 10
    } else {
        tiny.root_buffer_size
    };
    tiny.background_spills(background_spills)
        .key_order(key_order)
        .root_buffer_size(buffer)
        .merge_operator(std::sync::Arc::new(spillway::operators::U64Add))
}

/// Counters every batch increments: `total`, and `count{n % COUNTERS}`.
const COUNTERS: u64 = 5;

/// The counters' values when the batches `present` says are the ones in the store, and how
/// many counter keys exist.
fn expected_counters(present: &[bool]) -> (Vec<u64>, u64, usize) {
    let mut counts = vec![0; COUNTERS as usize];
    let mut total = 0;
    for (n, _) in present.iter().enumerate().filter(|(_, &p)| p) {
        counts[n % COUNTERS as usize] += 1;
        total += 1;
    }
    let keys = counts.iter().filter(|&&c| c > 0).count() + usize::from(total > 0);
    (counts, total, keys)
}

/// The keyspace batches spread over besides the default one: of the other key order than
/// the store's, with the counters' operator.
fn side(db: &Db, order: KeyOrder) -> Keyspace {
    let other = match order {
        KeyOrder::Hashed => KeyOrder::Ordered,
        _ => KeyOrder::Hashed,
    };
    let opts = KeyspaceOptions::default()
        .key_order(other)
        .merge_operator(std::sync::Arc::new(spillway::operators::U64Add));
    db.keyspace("side", opts).unwrap()
}

/// The keyspace a key of batch `n` is in: every other one goes to `side`, if there is one.
fn home<'a>(db: &'a Db, side: Option<&'a Keyspace>, j: usize) -> Keyspace {
    match side {
        Some(s) if j % 2 == 1 => s.clone(),
        _ => db.default_keyspace(),
    }
}

fn counter(db: &Db, side: Option<&Keyspace>, key: &str) -> u64 {
    let ks = if key == "total" {
        db.default_keyspace()
    } else {
        home(db, side, 1)
    };
    ks.get(key)
        .unwrap()
        .map_or(0, |v| u64::from_le_bytes(v.try_into().unwrap()))
}

/// Batch `n` writes keys `b{n}.0 ..`, never written by another batch (every other one in
/// `side`, and the counters `count*` too).
fn batch(db: &Db, side: Option<&Keyspace>, n: u64) -> (WriteBatch, Vec<(Keyspace, String)>) {
    let mut rng = Rng::new(mix(&[n, 0x90E4]));
    let mut b = WriteBatch::new();
    let keys: Vec<(Keyspace, String)> = (0..rng.range(1, 12) as usize)
        .map(|j| (home(db, side, j), format!("b{n}.{j}")))
        .collect();
    for (ks, k) in &keys {
        b.put_in(ks, k, format!("{k}={}", "v".repeat(rng.below(40) as usize)));
    }
    b.merge("total", 1u64.to_le_bytes());
    let count = format!("count{}", n % COUNTERS);
    b.merge_in(&home(db, side, 1), count, 1u64.to_le_bytes());
    (b, keys)
}

/// One writer's run: batches `from..to`, each synced with odds `1 / sync_one_in` — by a
/// synced write, or half the time by an unsynced one and then `Db::sync`. Returns the last
/// synced one.
fn write(
    db: &Db,
    side: Option<&Keyspace>,
    rng: &mut Rng,
    (from, to): (u64, u64),
    sync_one_in: u64,
    ctx: &str,
) -> Option<u64> {
    let mut last_synced = None;
    for n in from..to {
        let sync = rng.below(sync_one_in) == 0;
        let then_sync = sync && rng.below(2) == 0;
        let opts = if sync && !then_sync {
            WriteOptions::SYNC
        } else {
            WriteOptions::NO_SYNC
        };
        db.write(batch(db, side, n).0, opts)
            .unwrap_or_else(|e| panic!("{ctx}: write {n}: {e}"));
        if then_sync {
            db.sync()
                .unwrap_or_else(|e| panic!("{ctx}: sync after {n}: {e}"));
        }
        if sync {
            last_synced = Some(n);
        }
    }
    last_synced
}

/// Which of batches `from..to` are in the store, each entirely or not at all.
fn present(db: &Db, side: Option<&Keyspace>, from: u64, to: u64, ctx: &str) -> Vec<bool> {
    (from..to)
        .map(|n| {
            let present: Vec<bool> = batch(db, side, n)
                .1
                .iter()
                .map(|(ks, k)| ks.get(k).unwrap().is_some())
                .collect();
            let all = present.iter().all(|&p| p);
            assert!(
                all || present.iter().all(|&p| !p),
                "{ctx}: batch {n} survived in part: {present:?}"
            );
            all
        })
        .collect()
}

#[test]
fn after_a_power_loss_synced_writes_and_a_prefix_of_the_rest_survive() {
    let seed: u64 = std::env::var("SPILLWAY_POWER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9077);
    let mut totals = (0, 0, 0, 0);
    let mut dropped = (0, 0);
    for case in 0..CASES {
        let mut rng = Rng::new(mix(&[seed, case]));
        let background = case % 2 == 1;
        let keep_some = case % 4 >= 2;
        let long_logs = case % 8 >= 4;
        let order = if case % 16 >= 8 {
            KeyOrder::Ordered
        } else {
            KeyOrder::Hashed
        };
        let opts = options(background, long_logs, order);
        let (max_batches, sync_one_in) = if long_logs { (1000, 60) } else { (300, 8) };
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());

        // Rounds of writes, each ended by a power loss or a process crash, on top of what the
        // last one left: what a recovery dropped must stay dropped, and what it kept must stay
        // kept — also unsynced writes that survived a crash, when the power fails later.
        let mut model: Vec<bool> = Vec::new(); // which batches the store holds
        for round in 0..3 {
            let ctx = format!("seed {seed} (SPILLWAY_POWER_SEED), case {case}, round {round}");
            let db = Db::open(dir.path(), opts.clone()).unwrap();
            let spread = (case % 3 == 1).then(|| side(&db, order));
            let start = model.len() as u64;
            let end = start + rng.range(1, max_batches);
            let span = (start, end);
            let last_synced = write(&db, spread.as_ref(), &mut rng, span, sync_one_in, &ctx);
            let crash = rng.below(3) == 0;
            if crash {
                tracked.crash();
            } else if keep_some {
                tracked.power_loss_keeping(mix(&[seed, case, round, 0x4B]));
            } else {
                tracked.power_loss();
            }
            drop(spread);
            drop(db); // its close fails: the process is dead
            tracked.restart();

            let db =
                Db::open(dir.path(), opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            let spread = (case % 3 == 1).then(|| side(&db, order));
            let side = spread.as_ref();
            assert!(
                present(&db, side, 0, start, &ctx) == model,
                "{ctx}: what earlier rounds left changed"
            );
            let now = present(&db, side, start, end, &ctx);
            let kept = start + now.iter().take_while(|&&p| p).count() as u64;
            assert!(
                now[(kept - start) as usize..].iter().all(|&p| !p),
                "{ctx}: batches {start}..{kept} survived, then a gap, then later ones"
            );
            if crash {
                assert_eq!(
                    kept, end,
                    "{ctx}: acknowledged writes lost to a process crash"
                );
            }
            if let Some(s) = last_synced {
                assert!(
                    kept > s,
                    "{ctx}: batch {s} was synced, but only batches {start}..{kept} survived"
                );
            }
            let stats = db.stats();
            if stats.log_records_dropped > 0 {
                assert!(
                    keep_some && !crash,
                    "{ctx}: nothing unsynced was kept, yet records were dropped"
                );
                dropped.0 += 1;
                dropped.1 += stats.log_records_dropped;
            }
            db.check_tree().unwrap();
            model.extend(now);
            // Each surviving batch's increments count once.
            let (counts, total, counter_keys) = expected_counters(&model);
            assert_eq!(
                counter(&db, side, "total"),
                total,
                "{ctx}: the total counter"
            );
            for (i, &c) in counts.iter().enumerate() {
                let c_now = counter(&db, side, &format!("count{i}"));
                assert_eq!(c_now, c, "{ctx}: counter {i}");
            }
            // A scan shows exactly the keys of the batches that survived, and the counters.
            let scanned = db.iter().count() + side.map_or(0, |s| s.iter().unwrap().count());
            let expected: usize = (0..end)
                .filter(|&n| model[n as usize])
                .map(|n| batch(&db, side, n).1.len())
                .sum::<usize>()
                + counter_keys;
            assert_eq!(
                scanned, expected,
                "{ctx}: a full scan disagrees with the gets"
            );
            totals.0 += end - start;
            totals.1 += kept - start;
            totals.2 += u64::from(!crash && kept > last_synced.map_or(start, |s| s + 1));
            totals.3 += u64::from(crash);
            if round == 2 {
                db.flush().unwrap();
                assert_eq!(
                    db.files_in_use(),
                    common::list_file_names(dir.path()),
                    "{ctx}"
                );
            }
            db.close().unwrap();
        }
    }
    eprintln!(
        "{CASES} cases of 3 rounds, {} ended by a crash, the others by a power loss: {} of {} acknowledged batches survived; {} times unsynced batches past the last synced one survived a power loss; {} recoveries dropped {} log records found after a hole",
        totals.3, totals.1, totals.0, totals.2, dropped.0, dropped.1
    );
    // Otherwise the holes this test is about never happened.
    assert!(
        dropped.0 > 0,
        "no power loss left a hole before later records"
    );
}

/// Unsynced writes that survived a process crash are made durable by the open that recovers
/// them: a synced write after it must not outlive them in a power loss. The crash comes while
/// an older log is not yet synced (the spill that would have synced it panicked first).
#[test]
fn writes_recovered_after_a_crash_survive_a_later_power_loss() {
    let dir = tempfile::tempdir().unwrap();
    let tracked = power_loss::track(dir.path());
    let db = Db::open(dir.path(), options(true, false, KeyOrder::Hashed)).unwrap();
    let no_retired_sync = faults::panic_once(dir.path(), &[Op::Sync], ".log", 0);
    let mut acknowledged = Vec::new();
    for n in 0..40 {
        if db
            .write(batch(&db, None, n).0, WriteOptions::NO_SYNC)
            .is_ok()
        {
            acknowledged.push(n);
        }
    }
    assert_eq!(no_retired_sync.hits(), 1, "no spill began");
    assert!(acknowledged.len() > 5, "{acknowledged:?}");
    tracked.crash();
    drop(db);
    drop(no_retired_sync);
    tracked.restart();

    // A bigger buffer now, so that opening does not spill what it recovers (which would
    // sync the older log on the way).
    let roomy = options(true, false, KeyOrder::Hashed).root_buffer_size(1 << 20);
    let db = Db::open(dir.path(), roomy.clone()).unwrap();
    assert!(db.stats().log_records_replayed as usize >= acknowledged.len());
    assert_eq!(db.stats().root_spills, 0);
    db.write(batch(&db, None, 1000).0, WriteOptions::SYNC)
        .unwrap();
    tracked.power_loss();
    drop(db);
    tracked.restart();

    let db = Db::open(dir.path(), roomy).unwrap();
    for n in acknowledged.into_iter().chain([1000]) {
        assert_eq!(
            present(&db, None, n, n + 1, "after the power loss"),
            [true],
            "batch {n}"
        );
    }
    db.close().unwrap();
}

/// `Db::sync` runs beside writers, without holding them up: one thread writes unsynced batches
/// while another syncs in a loop, noting how many batches had been acknowledged when each sync
/// began. After a power loss every batch a finished sync covered survived, and what survived
/// is a prefix — through log switches (tiny buffers, spills inline and in the background).
#[test]
fn syncs_beside_writers_make_what_they_covered_durable() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
    use std::sync::Arc;

    for case in 0..16u64 {
        let ctx = format!("case {case}");
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let opts = options(case % 2 == 1, case % 4 >= 2, KeyOrder::Hashed);
        let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
        let acknowledged = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let syncer = {
            let (db, acknowledged, stop) = (db.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut syncs = 0;
                // At least one sync, however soon the writes are done.
                let durable = loop {
                    let done = stop.load(SeqCst);
                    let covered = acknowledged.load(SeqCst);
                    db.sync().unwrap();
                    syncs += 1;
                    if done {
                        break covered;
                    }
                };
                (durable, syncs)
            })
        };
        let batches = 300 + case * 20;
        for n in 0..batches {
            db.write(batch(&db, None, n).0, WriteOptions::NO_SYNC)
                .unwrap();
            acknowledged.store(n + 1, SeqCst);
        }
        stop.store(true, SeqCst);
        let (durable, syncs) = syncer.join().unwrap();
        assert!(syncs > 0, "{ctx}: no sync ran");
        if case % 3 == 0 {
            tracked.power_loss_keeping(mix(&[case, 0x5C]));
        } else {
            tracked.power_loss();
        }
        drop(Arc::into_inner(db).unwrap());
        tracked.restart();
        let db = Db::open(dir.path(), opts).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
        let now = present(&db, None, 0, batches, &ctx);
        let kept = now.iter().take_while(|&&p| p).count() as u64;
        assert!(
            now[kept as usize..].iter().all(|&p| !p),
            "{ctx}: batches 0..{kept} survived, then a gap, then later ones"
        );
        assert!(
            kept >= durable,
            "{ctx}: a sync covered {durable} batches, only {kept} survived ({syncs} syncs)"
        );
    }
}
