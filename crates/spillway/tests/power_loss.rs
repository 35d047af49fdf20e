//! Power loss, simulated in the file layer (`spillway::power_loss`): at a random moment every
//! file goes back to what had been made durable — bytes past the last fsync cut, names and
//! renames not yet fsynced in their folder undone — and the store is reopened. Checked, for
//! one writer mixing synced and unsynced batches, with spills inline and in the background:
//!
//! * every batch is there entirely or not at all;
//! * what survived is a prefix of what was acknowledged (no later batch without every earlier
//!   one) — the retired log must be synced before a synced write in the next one is
//!   acknowledged;
//! * every batch up to the last synced one survived.

mod common;

use common::{mix, Rng};
use spillway::power_loss;
use spillway::{Db, Options, WriteBatch, WriteOptions};

const CASES: u64 = 40;

fn options(background_spills: bool) -> Options {
    Options {
        background_spills,
        ..common::tiny_options()
    }
}

/// Batch `n` writes keys `b{n}.0 ..`, never written by another batch.
fn batch(n: u64) -> (WriteBatch, Vec<String>) {
    let mut rng = Rng::new(mix(&[n, 0x90E4]));
    let mut b = WriteBatch::new();
    let keys: Vec<String> = (0..rng.range(1, 12)).map(|j| format!("b{n}.{j}")).collect();
    for k in &keys {
        b.put(k, format!("{k}={}", "v".repeat(rng.below(40) as usize)));
    }
    (b, keys)
}

#[test]
fn after_a_power_loss_synced_writes_and_a_prefix_of_the_rest_survive() {
    let seed: u64 = std::env::var("SPILLWAY_POWER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9077);
    let mut totals = (0, 0, 0);
    for case in 0..CASES {
        let ctx = format!("seed {seed} (SPILLWAY_POWER_SEED), case {case}");
        let mut rng = Rng::new(mix(&[seed, case]));
        let background = case % 2 == 1;
        let dir = tempfile::tempdir().unwrap();
        let tracked = power_loss::track(dir.path());
        let db = Db::open(dir.path(), options(background)).unwrap();
        let batches = rng.range(1, 400);
        let mut last_synced = None;
        for n in 0..batches {
            let sync = rng.below(8) == 0;
            let (b, _) = batch(n);
            let opts = if sync {
                WriteOptions::SYNC
            } else {
                WriteOptions::NO_SYNC
            };
            db.write(b, opts)
                .unwrap_or_else(|e| panic!("{ctx}: write {n}: {e}"));
            if sync {
                last_synced = Some(n);
            }
        }
        tracked.power_loss();
        drop(db); // its close fails: the power is out
        drop(tracked);

        let db = Db::open(dir.path(), options(background))
            .unwrap_or_else(|e| panic!("{ctx}: reopen after the power loss: {e}"));
        let mut survived = Vec::new();
        for n in 0..batches {
            let (_, keys) = batch(n);
            let present: Vec<bool> = keys.iter().map(|k| db.get(k).unwrap().is_some()).collect();
            let all = present.iter().all(|&p| p);
            assert!(
                all || present.iter().all(|&p| !p),
                "{ctx}: batch {n} of {batches} survived in part: {present:?}"
            );
            survived.push(all);
        }
        let kept = survived.iter().take_while(|&&s| s).count();
        assert!(
            survived[kept..].iter().all(|&s| !s),
            "{ctx}: batches 0..{kept} survived, then a gap, then later ones: not a prefix"
        );
        if let Some(s) = last_synced {
            assert!(
                kept as u64 > s,
                "{ctx}: batch {s} was synced, but only batches 0..{kept} of {batches} survived"
            );
        }
        db.check_tree().unwrap();
        db.flush().unwrap();
        assert_eq!(
            db.files_in_use(),
            common::list_file_names(dir.path()),
            "{ctx}"
        );
        db.close().unwrap();
        totals.0 += batches;
        totals.1 += kept as u64;
        totals.2 += u64::from(kept as u64 > last_synced.map_or(0, |s| s + 1));
    }
    eprintln!(
        "{CASES} power losses: {} of {} acknowledged batches survived; {} cases kept unsynced batches past the last synced one",
        totals.1, totals.0, totals.2
    );
}
