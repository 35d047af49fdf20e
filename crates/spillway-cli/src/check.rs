//! `spillway check`: verify every checksum, list and log of a closed store. Exit status 0 if
//! it is sound — notes (a torn log tail, leftovers of a spill a crash interrupted) never fail
//! it — and 1 on any problem. With `--repair`, also remove files no manifest needs; the
//! status is then that of the repaired store.

use std::path::Path;

use crate::error::CliError;
use crate::report::{self, Table};

pub fn run(dir: &Path, repair: bool) -> Result<(), CliError> {
    let r = spillway::check(dir, repair).map_err(|e| CliError::opening(dir, e))?;
    let mut t = Table::new();
    t.section(&format!("Checked {}", dir.display()))
        .row("list files", report::count(r.lists))
        .row("pages", report::count(r.pages))
        .row("records in lists", report::count(r.records))
        .row("log records", report::count(r.log_records))
        .row(
            "unreachable files",
            report::count(r.unreachable.len() as u64),
        )
        .row("notes", report::count(r.notes.len() as u64))
        .row("problems", report::count(r.problems.len() as u64));
    t.print();
    for path in &r.unreachable {
        println!(
            "unreachable: {} (the next open removes it; --repair now)",
            path.display()
        );
    }
    for note in &r.notes {
        println!("note: {note}");
    }
    for problem in &r.problems {
        println!("PROBLEM: {problem}");
    }
    if r.is_sound() {
        println!("sound");
        Ok(())
    } else {
        Err(CliError::CheckFailed(format!(
            "{} problem(s) in {}",
            r.problems.len(),
            dir.display()
        )))
    }
}
