//! `spillway stats`: open a store and print its key order, its merge operator and every
//! [`spillway::Stats`] field.
//!
//! The engine's counters (bytes written, spills, GETs, ...) count from open, so for a store
//! opened just to look at it they are mostly zero; the tree, data and memory figures describe
//! the store itself.

use std::path::Path;

use spillway::KeyOrder;

use crate::error::CliError;
use crate::operators;
use crate::report::{self, Table};
use crate::store;
use crate::tuning::Tuning;

pub fn run(dir: &Path, tuning: &Tuning) -> Result<(), CliError> {
    let store = store::open_to_read(dir, tuning)?;
    let s = store.db.stats();
    let order = store.db.key_order();
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
    report::disk(&mut t, &s);
    report::memory(&mut t, &s);
    report::writes(&mut t, &s);
    report::reads(&mut t, &s);
    report::merges(&mut t, &s);
    t.print();
    Ok(())
}
