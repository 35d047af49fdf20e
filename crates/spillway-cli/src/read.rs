//! `spillway read`: random GETs of loaded keys, each value checked against the generator.

use std::path::Path;
use std::time::Instant;

use spillway::Db;

use crate::error::CliError;
use crate::loadgen::{LoadGen, LoadState};
use crate::progress;
use crate::report::{self, Table};
use crate::store;
use crate::tuning::Tuning;
use spillway_bench::workload::{Keys, SplitMix64, Workload};

/// Bad records listed on stderr before the summary; enough to debug, few enough to read.
const SHOW_BAD: usize = 5;

/// Progress is drawn every this many GETs, so that the bar costs nothing per GET.
const TICK: u64 = 1024;

#[derive(Default)]
struct Tally {
    found: u64,
    missing: u64,
    wrong: u64,
}

/// Random GETs of records `0..n` of the last load, where `n` is what `LOADGEN` says was
/// acknowledged. The store is opened first: while a `load` holds it, the lock says so.
pub fn run(dir: &Path, tuning: &Tuning, ops: u64, seed: u64) -> Result<(), CliError> {
    let db = store::open_to_read(dir, tuning)?;
    let gen = LoadGen::read(dir)?;
    let records = match gen.records_to_verify(dir) {
        Ok(n) => n,
        Err(_) if ops == 0 => 0,
        Err(e) => return Err(e),
    };
    let workload = gen.workload()?;

    let bar = progress::bar(ops, "GETs");
    let start = Instant::now();
    let tally = get_all(&db, &workload, gen.keys, records, ops, seed, &bar);
    let elapsed = start.elapsed().as_secs_f64();
    let tally = match tally {
        Ok(t) => {
            bar.finish_and_clear();
            t
        }
        Err(e) => {
            bar.abandon();
            return Err(e);
        }
    };
    let stats = db.stats();
    db.close()?;

    let mut t = Table::new();
    t.section(&format!("Read {}", dir.display()));
    if gen.state == LoadState::Stopped {
        t.row(
            "records read from",
            format!(
                "the first {} of {} (the load stopped early; these were acknowledged)",
                report::count(records),
                report::count(gen.planned)
            ),
        );
    }
    if gen.keys == Keys::Sequential {
        t.row("keys", "sequential (as loaded)");
    }
    t.row("ops", report::count(ops))
        .row("found", report::count(tally.found))
        .row("missing", report::count(tally.missing))
        .row("wrong values", report::count(tally.wrong))
        .row("elapsed", format!("{elapsed:.3} s"))
        .row("GETs/s", report::per_sec(ops, elapsed));
    report::reads(&mut t, &stats);
    t.print();

    if tally.missing + tally.wrong > 0 {
        return Err(CliError::CheckFailed(format!(
            "{} missing and {} wrong of {} GETs: every loaded key must be found with its value",
            tally.missing, tally.wrong, ops
        )));
    }
    Ok(())
}

fn get_all(
    db: &Db,
    workload: &Workload,
    keys: Keys,
    records: u64,
    ops: u64,
    seed: u64,
    bar: &indicatif::ProgressBar,
) -> Result<Tally, CliError> {
    let mut rng = SplitMix64::new(seed);
    let mut expected = Vec::with_capacity(workload.value_len());
    let mut tally = Tally::default();
    for op in 0..ops {
        let i = rng.below(records);
        let key = workload.key(i);
        let problem = match db.get(key)? {
            None => {
                tally.missing += 1;
                Some("missing")
            }
            Some(value) => {
                workload.fill_value(i, &mut expected);
                if value == expected {
                    tally.found += 1;
                    None
                } else {
                    tally.wrong += 1;
                    Some("wrong value")
                }
            }
        };
        if let Some(problem) = problem {
            if tally.missing + tally.wrong <= SHOW_BAD as u64 {
                bar.suspend(|| {
                    eprintln!(
                        "{problem}: record {i} (key {:016x})",
                        match keys {
                            Keys::Random => u64::from_le_bytes(key),
                            Keys::Sequential => u64::from_be_bytes(key),
                        }
                    )
                });
            }
        }
        if (op + 1).is_multiple_of(TICK) {
            bar.inc(TICK);
        }
    }
    bar.set_position(ops);
    Ok(tally)
}
