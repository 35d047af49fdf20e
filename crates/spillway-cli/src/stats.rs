//! `spillway stats`: open a store and print its key order, its merge operator and every
//! [`spillway::Stats`] field.
//!
//! The engine's counters (bytes written, spills, GETs, ...) count from open, so for a store
//! opened just to look at it they are mostly zero; the tree, data and memory figures describe
//! the store itself. Its keys, the root buffer's included, are counted while there are at
//! most 100,000 of them, and estimated past that.

use std::path::Path;

use spillway::{Db, KeyOrder};

use crate::error::CliError;
use crate::operators;
use crate::report::{self, Keys, Table};
use crate::store;
use crate::tuning::Tuning;

/// Up to this many keys `stats` counts one by one (as the server's DBSIZE does); past it, the
/// store's estimate is the figure, read without visiting every key.
const COUNTED_UP_TO: u64 = 100_000;

pub fn run(dir: &Path, tuning: &Tuning) -> Result<(), CliError> {
    let store = store::open_to_read(dir, tuning)?;
    let s = store.db.stats();
    let order = store.db.key_order();
    let keys = keys(&store.db)?;
    store.db.close()?;
    let mut t = Table::new();
    t.section(&format!("Store {}", dir.display()))
        .row(
            "key order",
            match order {
                KeyOrder::Ordered => "ordered (keys in byte order: range and prefix scans)",
                KeyOrder::Hashed => {
                    "hashed (keys placed by hash: point reads, scans in hash order)"
                }
            },
        )
        .row(
            "merge operator",
            match &store.operator {
                Some(name) => operators::describe(name),
                None => "none (no merge yet)".into(),
            },
        );
    report::recovery(&mut t, &s);
    report::shape(&mut t, &s);
    report::disk(&mut t, &s, keys);
    report::memory(&mut t, &s);
    report::writes(&mut t, &s);
    report::reads(&mut t, &s);
    report::merges(&mut t, &s);
    t.print();
    Ok(())
}

/// The keys `db` holds: counted while there are few, else its estimate
/// (`Db::estimate_keys`, which unlike `Stats::live_keys` includes the root buffer's).
pub fn keys(db: &Db) -> Result<Keys, CliError> {
    let estimate = db.estimate_keys();
    if estimate.is_some_and(|n| n > COUNTED_UP_TO) {
        return Ok(Keys::Estimated(estimate.unwrap_or_default()));
    }
    let mut n = 0;
    for item in db.iter() {
        match item {
            // A key whose operands do not fold is still a key the store holds.
            Ok(_) | Err(spillway::Error::MergeFailed { .. }) => n += 1,
            Err(e) => return Err(e.into()),
        }
        if n > COUNTED_UP_TO {
            return Ok(estimate.map_or(Keys::MoreThan(COUNTED_UP_TO), Keys::Estimated));
        }
    }
    Ok(Keys::Counted(n))
}
