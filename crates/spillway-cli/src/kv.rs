//! `spillway put | get | del | merge`: one key at a time, for poking at a store by hand. Writes
//! use `WriteOptions::SYNC`: a command that returns has made its write durable.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use spillway::{Db, WriteBatch, WriteOptions};

use crate::error::CliError;
use crate::operators::{self, Op};
use crate::store;
use crate::tuning::Tuning;

/// `put` and `merge` may create the store; `del` may not.
pub fn put(dir: &Path, tuning: &Tuning, key: &str, value: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    write(store::open_to_write(dir, tuning, true, None)?.db, batch)
}

pub fn del(dir: &Path, tuning: &Tuning, key: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.delete(key);
    write(store::open_to_write(dir, tuning, false, None)?.db, batch)
}

/// Merge `operand` (text, as `op` reads it) into `key`'s value with `op`'s operator, which
/// a store without one records; a store that records another is an error. The operand is
/// parsed before the store is opened: a malformed one changes nothing.
pub fn merge(
    dir: &Path,
    tuning: &Tuning,
    key: &str,
    operand: &str,
    op: Op,
    separator: Option<&[u8]>,
) -> Result<(), CliError> {
    let operator = op.operator(separator)?;
    let operand = op.operand(operand)?;
    let mut batch = WriteBatch::new();
    batch.merge(key, operand);
    write(
        store::open_to_write(dir, tuning, true, Some(operator))?.db,
        batch,
    )
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

/// Print the value (its raw bytes, then a newline) on stdout; in a store of counters
/// (`spillway.u64add`) an 8-byte value prints as its decimal number unless `raw`. An absent
/// key prints nothing there — any text would read like a stored value — but `(not found)`
/// on stderr, with exit status 1.
pub fn get(dir: &Path, tuning: &Tuning, key: &str, raw: bool) -> Result<ExitCode, CliError> {
    let store = store::open_to_read(dir, tuning)?;
    let counters = store.is_counters() && !raw;
    let value = store.db.get(key)?;
    store.db.close()?;
    let Some(mut value) = value else {
        eprintln!("(not found)");
        return Ok(ExitCode::FAILURE);
    };
    if let Some(n) = counters.then(|| operators::counter(&value)).flatten() {
        value = n.into_bytes();
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
