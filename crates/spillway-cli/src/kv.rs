//! `spillway put | get | del`: one key at a time, for poking at a store by hand. Writes use
//! `WriteOptions::SYNC`: a command that returns has made its write durable.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use spillway::{Db, WriteBatch, WriteOptions};

use crate::error::CliError;
use crate::store;
use crate::tuning::Tuning;

/// Only `put` may create the store.
pub fn put(dir: &Path, tuning: &Tuning, key: &str, value: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    write(store::open_to_write(dir, tuning, true)?, batch)
}

pub fn del(dir: &Path, tuning: &Tuning, key: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.delete(key);
    write(store::open_to_write(dir, tuning, false)?, batch)
}

fn write(db: Db, batch: WriteBatch) -> Result<(), CliError> {
    db.write(batch, WriteOptions::SYNC)?;
    // The write is durable in the log from here: a close that fails (a spill that finds no
    // room on a full disk, say) loses nothing, and the next open recovers it. Failing the
    // command would tell the user the write did not happen.
    if let Err(e) = db.close() {
        eprintln!("warning: the write is durable, but closing the store failed: {e}");
    }
    Ok(())
}

/// Print the value (its raw bytes, then a newline) on stdout. An absent key prints nothing
/// there — any text would read like a stored value — but `(not found)` on stderr, with exit
/// status 1.
pub fn get(dir: &Path, tuning: &Tuning, key: &str) -> Result<ExitCode, CliError> {
    let db = store::open_to_read(dir, tuning)?;
    let value = db.get(key)?;
    db.close()?;
    let Some(value) = value else {
        eprintln!("(not found)");
        return Ok(ExitCode::FAILURE);
    };
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
