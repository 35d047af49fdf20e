//! `spillway read`: random GETs of loaded keys, each value checked against the generator.
//!
//! After a counter load (`load --op add`) the keys are the counters', and each value is
//! checked against the increments the load gave that key: exactly, after a complete load;
//! after one that stopped early, between what the acknowledged records gave and what every
//! planned record would have (writes past the first failure may or may not be in).
//!
//! The GETs go to the keyspace `LOADGEN` names (the default one if it names none). `--keyspace
//! NAME` is a check, not a choice: it must be that keyspace (`""`: the default one), since
//! `LOADGEN` describes only the last load.

use std::path::Path;
use std::time::Instant;

use spillway::Keyspace;

use crate::error::CliError;
use crate::loadgen::{self, Counters, LoadGen, LoadState};
use crate::operators::{self, COUNTERS};
use crate::progress;
use crate::report::{self, Table};
use crate::store::{self, Space};
use crate::tuning::Tuning;
use spillway_records::{Keys, SplitMix64, Workload};

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
/// `keyspace` (`--keyspace`), if given, must be the one `LOADGEN` names.
pub fn run(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    ops: u64,
    seed: u64,
) -> Result<(), CliError> {
    // Which keyspace to open is in LOADGEN, read again once the store is open: a load may
    // have run in between (and a missing or malformed file is reported after the open).
    let chosen = match keyspace {
        Some(name) => Some(name.to_owned()),
        None => LoadGen::read(dir).ok().and_then(|g| g.keyspace),
    };
    let (db, space) = store::read_in(dir, tuning, chosen.as_deref())?;
    let gen = LoadGen::read(dir)?;
    if gen.keyspace != space.name {
        return Err(other_keyspace(dir, &gen, &space, keyspace.is_some()));
    }
    let records = match gen.records_to_verify(dir) {
        Ok(n) => n,
        Err(_) if ops == 0 => 0,
        Err(e) => return Err(e),
    };
    let workload = gen.workload()?;
    if let Some(c) = gen.counters {
        check_counter_store(dir, &space, c)?;
    }

    let bar = progress::bar(ops, "GETs");
    let start = Instant::now();
    let tally = match gen.counters {
        None => get_all(&space.ks, &workload, gen.keys, records, ops, seed, &bar),
        Some(c) => get_counters(&space.ks, &workload, &gen, c, records, ops, seed, &bar),
    };
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
    drop(space.ks);
    db.close()?;

    let mut t = Table::new();
    t.section(&format!("Read {}", dir.display()));
    if let Some(name) = &space.name {
        t.row("keyspace", name.as_str());
    }
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
    if let Some(c) = gen.counters {
        t.row(
            "counters",
            format!(
                "{} keys, each checked for the increments the load gave it",
                report::count(c.keys(records))
            ),
        );
    }
    t.row("ops", report::count(ops))
        .row("found", report::count(tally.found))
        .row("missing", report::count(tally.missing))
        .row("wrong values", report::count(tally.wrong))
        .row("elapsed", format!("{elapsed:.3} s"))
        .row("GETs/s", report::per_sec(ops, elapsed));
    report::reads(&mut t, &stats);
    if gen.counters.is_some() {
        report::merges(&mut t, &stats);
    }
    t.print();

    if tally.missing + tally.wrong > 0 {
        return Err(CliError::CheckFailed(format!(
            "{} missing and {} wrong of {} GETs: every loaded key must be found with its value",
            tally.missing, tally.wrong, ops
        )));
    }
    Ok(())
}

/// `--keyspace` named another keyspace than `LOADGEN` does (`given`), or `LOADGEN` changed
/// while the store was opened (a load ran in between).
fn other_keyspace(dir: &Path, gen: &LoadGen, space: &Space, given: bool) -> CliError {
    let describe = |name: &Option<String>| match name {
        None => "the default keyspace".to_string(),
        Some(name) => format!("keyspace `{name}`"),
    };
    let loaded = describe(&gen.keyspace);
    CliError::Failed(if given {
        format!(
            "{} in {} says the last `spillway load` went into {loaded}, not {}: `spillway \
             read` checks the records of the last load (drop --keyspace, or name that one)",
            loadgen::FILE_NAME,
            dir.display(),
            describe(&space.name)
        )
    } else {
        format!(
            "a `spillway load` into {loaded} of {} ran while `spillway read` opened the store: \
             run `spillway read` again",
            dir.display()
        )
    })
}

/// Counters can be checked only in a keyspace of counters whose values started from nothing.
fn check_counter_store(dir: &Path, space: &Space, c: Counters) -> Result<(), CliError> {
    if !space.is_counters() {
        let what = match &space.name {
            None => "the store's merge operator".to_string(),
            Some(name) => format!("keyspace `{name}`'s merge operator"),
        };
        return Err(CliError::Failed(format!(
            "{} says a counter load (`load --op add`) wrote into {}, but {what} is {}, not \
             `{COUNTERS}`: it has been written since",
            loadgen::FILE_NAME,
            dir.display(),
            space
                .operator
                .as_deref()
                .map_or_else(|| "none".into(), operators::describe)
        )));
    }
    if !c.from_zero {
        return Err(CliError::Failed(format!(
            "the last `spillway load --op add` into {} added to values an earlier load had \
             left under the same keys, so no counter's value is known: `spillway read` checks \
             the counters of a load into a new --path",
            dir.display()
        )));
    }
    Ok(())
}

/// Random GETs of the counters of records `0..records`: key `j` (of `c.keys(records)`) must
/// hold the increments records `0..records` gave it, or after a stopped load any number up
/// to what every planned record would have given it.
#[allow(clippy::too_many_arguments)]
fn get_counters(
    ks: &Keyspace,
    workload: &Workload,
    gen: &LoadGen,
    c: Counters,
    records: u64,
    ops: u64,
    seed: u64,
    bar: &indicatif::ProgressBar,
) -> Result<Tally, CliError> {
    let mut rng = SplitMix64::new(seed);
    let mut tally = Tally::default();
    let keys = c.keys(records);
    let most = match gen.state {
        LoadState::Complete => records,
        LoadState::Stopped | LoadState::Running => gen.planned.max(records),
    };
    for op in 0..ops {
        let j = rng.below(keys);
        let key = workload.key(j);
        let (low, high) = (c.hits(records, j), c.hits(most, j));
        let got = ks
            .get(key)?
            .map(|v| <[u8; 8]>::try_from(v).map(u64::from_le_bytes));
        let problem = match got {
            None => {
                tally.missing += 1;
                Some("missing".to_string())
            }
            Some(Ok(n)) if (low..=high).contains(&n) => {
                tally.found += 1;
                None
            }
            Some(n) => {
                tally.wrong += 1;
                let want = if low == high {
                    low.to_string()
                } else {
                    format!("{low} to {high}")
                };
                Some(match n {
                    Ok(n) => format!("wrong count {n}, not {want}"),
                    Err(v) => format!("a value of {} bytes, not the count {want}", v.len()),
                })
            }
        };
        if let Some(problem) = problem {
            if tally.missing + tally.wrong <= SHOW_BAD as u64 {
                bar.suspend(|| {
                    eprintln!("{problem}: counter {j} (key {})", show_key(gen.keys, key))
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

/// A generated key as `read` reports it: its number, in hex.
fn show_key(keys: Keys, key: [u8; 8]) -> String {
    let n = match keys {
        Keys::Random => u64::from_le_bytes(key),
        Keys::Sequential => u64::from_be_bytes(key),
    };
    format!("{n:016x}")
}

fn get_all(
    ks: &Keyspace,
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
        let problem = match ks.get(key)? {
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
                bar.suspend(|| eprintln!("{problem}: record {i} (key {})", show_key(keys, key)));
            }
        }
        if (op + 1).is_multiple_of(TICK) {
            bar.inc(TICK);
        }
    }
    bar.set_position(ops);
    Ok(tally)
}
