//! Power loss with expiring records (issue 30), simulated in the file layer as in
//! `tests/power_loss.rs` (`spillway::power_loss`: files go back to what was fsynced, or to
//! that plus random 4 KiB blocks of what was not).
//!
//! `after_a_power_loss_expiring_writes_survive_as_a_prefix_at_their_times`: each case (16, or
//! `SPILLWAY_EXPIRY_POWER_CASES`; seed `SPILLWAY_POWER_SEED`) runs three rounds of writes on
//! one store under a [`ManualClock`], each round ended by a power loss (strict, or keeping
//! part of what was not synced) or a process crash, then reopened with the clock at the last
//! write's time or jumped past it (up to 50 ms, up to 1 s, or a day). Batch `n` puts its
//! marker key `batch{n}` and makes 1–6 changes to 60 shared keys — `put`, `put_expiring` (a
//! few ms in the past, up to 60 ms or up to 5 s ahead), `put_ttl`, `delete`, `merge` (comma
//! append), `expire`, `persist` — at its own time (the clock moves 0–2 ms per batch); the
//! first batch of a round merges only, so that operands come first after a recovery. Batches
//! are synced with odds 1/8 (1/60 with long logs), by the write or by `Db::sync` after it.
//! After each reopen:
//!
//! * the batches whose markers survived are a prefix of those written, and include every one
//!   up to the last synced; after a crash, all of them;
//! * the whole store — every shared key's value and expiry (`get_with_expiry`, agreeing with
//!   `get`, `expiry`, `multi_get` and a scan from both ends, which shows no other key) and
//!   every marker — equals a model that applies the surviving batches, and only them, each at
//!   the time it was written, read at the reopen's time: no batch survived in part, an expiry
//!   change or merge replayed from the log applied to the key as it was when it was written
//!   (the log's time marks), and what expired is gone; the same after a `flush` spills at
//!   that time, in every other round; and what earlier rounds left stays;
//! * `check_tree` passes (asserted at the end, listing every failure, so that a bad shape
//!   hides no later case).
//!
//! Cases alternate background spills, long logs (64 KiB buffers, so that a power loss leaves
//! holes inside a log) and the key order. At the end the test asserts that power losses
//! dropped acknowledged batches, that clock jumps expired keys, and that the workload met
//! each case that sets expiry apart (see `common::expiring::Tally`).
//!
//! `messages_replayed_after_a_crash_or_power_loss_keep_the_time_they_were_written`: a few
//! changes of expiry and merges written before their key's expiry, replayed from the log
//! after it by a reopen that does not spill, then spilled and read back from the lists.

mod common;

use std::sync::Arc;

use common::expiring::{differences, read_store, time, Change, Model, Tally};
use common::{mix, Rng};
use spillway::power_loss;
use spillway::{Db, Expiry, KeyOrder, ManualClock, Options, WriteBatch, WriteOptions};

/// Cases unless `SPILLWAY_EXPIRY_POWER_CASES` says otherwise: each combination of background
/// spills, unsynced blocks kept, long logs and key order once.
const CASES: u64 = 16;
const KEYS: u32 = 60;
/// A third of the changes go to the first `HOT_KEYS` keys.
const HOT_KEYS: u32 = 10;
/// Where the clock starts (ms since the epoch).
const START: u64 = 1_800_000_000_000;
const DAY: u64 = 86_400_000;

/// Tiny buffers, so that spills and new logs come often; or logs of several 4 KiB blocks,
/// synced seldom, so that a power loss can leave holes inside a log.
fn options(
    background_spills: bool,
    long_logs: bool,
    order: KeyOrder,
    clock: &Arc<ManualClock>,
) -> Options {
    let tiny = common::tiny_options();
    let buffer = if long_logs {
        64 << 10
    } else {
        tiny.root_buffer_size
    };
    tiny.background_spills(background_spills)
        .key_order(order)
        .root_buffer_size(buffer)
        .merge_operator(common::comma_append())
        .clock(clock.clone())
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:03}").into_bytes()
}

fn marker(n: u64) -> Vec<u8> {
    format!("batch{n:05}").into_bytes()
}

/// Batch `n` of a case, written at `now`: its marker, then 1–6 changes of shared keys —
/// merges only if it is the `first` of a round, so that operands come first after a recovery
/// (they must be stamped with their time although the reopened store has seen no expiring
/// write yet).
fn batch(seed: u64, case: u64, n: u64, now: u64, first: bool) -> Vec<(Vec<u8>, Change)> {
    let mut rng = Rng::new(mix(&[seed, case, n, 0xBA7C]));
    let mut changes = vec![(marker(n), Change::Put(format!("b{n}").into_bytes()))];
    for i in 0..rng.range(1, 6) {
        let k = if first || rng.below(3) == 0 {
            rng.below(u64::from(HOT_KEYS))
        } else {
            rng.below(u64::from(KEYS))
        } as u32;
        let until = |rng: &mut Rng| match rng.below(10) {
            0 => now - rng.below(4),
            1..=6 => now + rng.range(1, 60),
            _ => now + rng.range(60, 5000),
        };
        let value = |rng: &mut Rng| {
            let mut v = format!("p{n}.{i}:").into_bytes();
            for _ in 0..rng.below(60) {
                v.push(b'a' + rng.below(26) as u8);
            }
            v
        };
        let kind = if first { MERGE } else { rng.below(100) };
        let change = match kind {
            0..=14 => Change::Put(value(&mut rng)),
            15..=37 => Change::PutUntil(value(&mut rng), until(&mut rng)),
            38..=42 => Change::PutTtl(value(&mut rng), rng.range(1, 100)),
            43..=50 => Change::Delete,
            51..=72 => Change::Merge(format!("m{n}.{i}").into_bytes()),
            73..=87 => Change::Expire(until(&mut rng)),
            _ => Change::Persist,
        };
        changes.push((key(k), change));
    }
    changes
}

/// A kind of change (see `batch`): a merge.
const MERGE: u64 = 60;

/// Every key a case may have written by batch `end`.
fn keys(end: u64) -> Vec<Vec<u8>> {
    (0..KEYS).map(key).chain((0..end).map(marker)).collect()
}

/// What the case's rounds added up to.
#[derive(Default)]
struct Totals {
    written: u64,
    kept: u64,
    crashes: u64,
    /// Rounds ended by a power loss that lost acknowledged batches.
    lost: u64,
    /// ... and that kept unsynced batches past the last synced one.
    unsynced_kept: u64,
    /// Recoveries that dropped log records found after a hole.
    holes: u64,
    expired_by_jumps: usize,
}

#[test]
fn after_a_power_loss_expiring_writes_survive_as_a_prefix_at_their_times() {
    let seed: u64 = std::env::var("SPILLWAY_POWER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xE4B1);
    let mut totals = Totals::default();
    let mut tally = Tally::default();
    let mut bad_trees = Vec::new();
    let cases: u64 = std::env::var("SPILLWAY_EXPIRY_POWER_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    for case in 0..cases {
        let mut rng = Rng::new(mix(&[seed, case]));
        let background = case % 2 == 1;
        let keep_some = case % 4 >= 2;
        let long_logs = case % 8 >= 4;
        let order = if case % 16 >= 8 {
            KeyOrder::Ordered
        } else {
            KeyOrder::Hashed
        };
        let (max_batches, sync_one_in) = if long_logs { (1000, 60) } else { (300, 8) };
        let mut now = START;
        let clock = Arc::new(ManualClock::new(time(now)));
        let opts = options(background, long_logs, order, &clock);
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let mut model = Model::default();
        let mut next = 0u64; // the next batch number: lost ones are not reused
        for round in 0..3 {
            let ctx = format!("seed {seed} (SPILLWAY_POWER_SEED), case {case}, round {round}");
            let db = Db::open(dir.path(), opts.clone()).unwrap();
            let (start, end) = (next, next + rng.range(1, max_batches));
            let mut written = Vec::new(); // (time, changes) of batches start..end
            let mut last_synced = None;
            for n in start..end {
                now += rng.below(3);
                clock.set(time(now));
                let changes = batch(seed, case, n, now, n == start);
                let mut b = WriteBatch::new();
                for (k, c) in &changes {
                    c.add_to(&mut b, k, now);
                }
                let sync = rng.below(sync_one_in) == 0;
                let then_sync = sync && rng.below(2) == 0;
                let opts = if sync && !then_sync {
                    WriteOptions::SYNC
                } else {
                    WriteOptions::NO_SYNC
                };
                db.write(b, opts)
                    .unwrap_or_else(|e| panic!("{ctx}: write {n}: {e}"));
                if then_sync {
                    db.sync()
                        .unwrap_or_else(|e| panic!("{ctx}: sync after {n}: {e}"));
                }
                if sync {
                    last_synced = Some(n);
                }
                written.push((now, changes));
            }
            let crash = rng.below(3) == 0;
            if crash {
                tracked.crash();
            } else if keep_some {
                tracked.power_loss_keeping(mix(&[seed, case, round, 0x4B]));
            } else {
                tracked.power_loss();
            }
            drop(db); // its close fails: the process is dead
            tracked.restart();

            let jump = match rng.below(8) {
                0 | 1 => 0,
                2 | 3 => rng.range(1, 50),
                4..=6 => rng.range(50, 1000),
                _ => DAY,
            };
            let before_jump = now;
            now += jump;
            clock.set(time(now));
            let ctx = format!("{ctx}, reopened {jump} ms after the last write, at {now} ms");
            let db =
                Db::open(dir.path(), opts.clone()).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
            // Which batches survived, by their markers: a prefix of those written.
            let survived: Vec<bool> = (start..end)
                .map(|n| db.get(marker(n)).unwrap().is_some())
                .collect();
            let kept = start + survived.iter().take_while(|&&p| p).count() as u64;
            assert!(
                survived[(kept - start) as usize..].iter().all(|&p| !p),
                "{ctx}: batches {start}..{kept} survived, then a gap, then later ones: {survived:?}"
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
            // The whole store is the model with the surviving batches, each at its time.
            for (at, changes) in &written[..(kept - start) as usize] {
                for (k, c) in changes {
                    model.apply(k, c, *at);
                }
            }
            let check = |db: &Db, ctx: &str| {
                let seen = read_store(db, &keys(end), ctx);
                let diff = differences(&seen, &model.visible(now), 20);
                assert!(
                    diff.is_empty(),
                    "{ctx}: the store differs from the model (batches {start}..{kept} of this \
                     round kept):\n{}",
                    diff.join("\n")
                );
            };
            check(&db, &ctx);
            if round % 2 == case % 2 {
                db.flush().unwrap_or_else(|e| panic!("{ctx}: flush: {e}"));
                check(&db, &format!("{ctx}, after a flush"));
            }
            // Checked to the end of the test, so that a bad shape hides no later case.
            if let Err(e) = db.check_tree() {
                bad_trees.push(format!("{ctx}: {e}"));
            }
            let dropped = db.stats().log_records_dropped;
            db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

            totals.written += end - start;
            totals.kept += kept - start;
            totals.crashes += u64::from(crash);
            totals.lost += u64::from(!crash && kept < end);
            totals.unsynced_kept +=
                u64::from(!crash && kept > last_synced.map_or(start, |s| s + 1));
            totals.holes += u64::from(dropped > 0);
            totals.expired_by_jumps += model.visible(before_jump).len() - model.visible(now).len();
            // No write older than `now` will come: an expired value is as good as none.
            model.prune(now);
            now += 1;
            next = end;
        }
        tally.add(&model.tally);
    }
    eprintln!(
        "{cases} cases of 3 rounds, {} ended by a crash: {} of {} acknowledged batches \
         survived; {} power losses lost acknowledged batches, {} kept unsynced ones past the \
         last synced; {} recoveries dropped log records after a hole; {} keys expired by clock \
         jumps; {tally:?}",
        totals.crashes,
        totals.kept,
        totals.written,
        totals.lost,
        totals.unsynced_kept,
        totals.holes,
        totals.expired_by_jumps
    );
    assert!(totals.lost > 0, "no power loss lost an acknowledged batch");
    assert!(totals.expired_by_jumps > 0, "no clock jump expired a key");
    tally.assert_all_seen("the power-loss workload");
    assert!(
        bad_trees.is_empty(),
        "check_tree failed {} times (every check against the model passed):\n{}",
        bad_trees.len(),
        bad_trees.join("\n")
    );
}

/// Changes of expiry and merge operands take the time they were written, logged with them:
/// a replay long after (here, after the keys' expiry) must fold them as they were folded
/// then — into a key that was live — not as if written at the time of the replay.
#[test]
fn messages_replayed_after_a_crash_or_power_loss_keep_the_time_they_were_written() {
    const T0: u64 = START;
    for power_off in [false, true] {
        for order in [KeyOrder::Hashed, KeyOrder::Ordered] {
            let ctx = format!("power loss {power_off}, {order} store");
            let dir = tempfile::tempdir().unwrap();
            let tracked = power_loss::track(dir.path());
            let clock = Arc::new(ManualClock::new(time(T0)));
            // A buffer nothing fills: every write stays in the log, for the replay.
            let roomy = options(false, false, order, &clock).root_buffer_size(1 << 20);
            let db = Db::open(dir.path(), roomy.clone()).unwrap();
            for k in ["a", "b", "c", "e"] {
                db.put_expiring(k, format!("v{k}"), time(T0 + 100)).unwrap();
            }
            db.put("d", "vd").unwrap();
            clock.set(time(T0 + 50));
            db.expire("a", time(T0 + 10_000)).unwrap(); // live: now until 10 s
            db.persist("b").unwrap(); // live: never expires now
            db.merge("c", "m").unwrap(); // into "vc", which keeps its expiry
            db.expire("d", time(T0 + 200)).unwrap();
            clock.set(time(T0 + 150));
            db.merge("e", "fresh").unwrap(); // after "ve" expired: starts afresh
            db.expire("c", time(T0 + 10_000)).unwrap(); // c has expired: nothing
            db.persist("d").unwrap(); // d is live until 200: never expires now
            db.sync().unwrap();
            if power_off {
                tracked.power_loss();
            } else {
                tracked.crash();
            }
            drop(db);
            tracked.restart();

            let want = |db: &Db, ctx: &str| {
                let got = |k: &str| {
                    db.get_with_expiry(k)
                        .unwrap_or_else(|e| panic!("{ctx}: {k}: {e}"))
                        .map(|(v, e)| (String::from_utf8(v).unwrap(), e))
                };
                let at = |ms| Expiry::At(time(ms));
                assert_eq!(got("a"), Some(("va".into(), at(T0 + 10_000))), "{ctx}: a");
                assert_eq!(got("b"), Some(("vb".into(), Expiry::Never)), "{ctx}: b");
                assert_eq!(got("c"), None, "{ctx}: c");
                assert_eq!(got("d"), Some(("vd".into(), Expiry::Never)), "{ctx}: d");
                assert_eq!(got("e"), Some(("fresh".into(), Expiry::Never)), "{ctx}: e");
                let keys: Vec<Vec<u8>> = ["a", "b", "c", "d", "e"]
                    .iter()
                    .map(|k| k.as_bytes().to_vec())
                    .collect();
                assert_eq!(read_store(db, &keys, ctx).len(), 4, "{ctx}");
            };
            // Long after every expiry written.
            clock.set(time(T0 + 1_000));
            let db = Db::open(dir.path(), roomy.clone()).unwrap();
            let s = db.stats();
            assert!(
                s.log_records_replayed >= 10 && s.root_spills == 0,
                "{ctx}: the store came from a replay of the log: {s:?}"
            );
            want(&db, &format!("{ctx}, replayed"));
            // Spilled at that time, and read back from the lists.
            db.flush().unwrap();
            want(&db, &format!("{ctx}, flushed"));
            db.close().unwrap();
            let db = Db::open(dir.path(), roomy).unwrap();
            want(&db, &format!("{ctx}, reopened after the flush"));
            db.check_tree().unwrap();
            db.close().unwrap();
        }
    }
}
