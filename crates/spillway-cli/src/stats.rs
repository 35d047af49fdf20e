//! `spillway stats`: open a store and print every [`spillway::Stats`] field.
//!
//! The engine's counters (bytes written, spills, GETs, ...) count from open, so for a store
//! opened just to look at it they are mostly zero; the tree, data and memory figures describe
//! the store itself.

use std::path::Path;

use spillway::{Db, Options};

use crate::error::CliError;
use crate::report::{self, Table};

pub fn run(dir: &Path, opts: Options) -> Result<(), CliError> {
    let db = Db::open(dir, opts)?;
    let s = db.stats();
    db.close()?;
    let mut t = Table::new();
    t.section(&format!("Store {}", dir.display()));
    report::recovery(&mut t, &s);
    report::shape(&mut t, &s);
    report::disk(&mut t, &s);
    report::memory(&mut t, &s);
    report::writes(&mut t, &s);
    report::reads(&mut t, &s);
    t.print();
    Ok(())
}
