//! `spillway put | get | del`: one key at a time, for poking at a store by hand. Writes use
//! `WriteOptions::SYNC`: a command that returns has made its write durable.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use spillway::{Db, Options, WriteBatch, WriteOptions};

use crate::error::CliError;

pub fn put(dir: &Path, opts: Options, key: &str, value: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    write(dir, opts, batch)
}

pub fn del(dir: &Path, opts: Options, key: &str) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.delete(key);
    write(dir, opts, batch)
}

fn write(dir: &Path, opts: Options, batch: WriteBatch) -> Result<(), CliError> {
    let db = Db::open(dir, opts)?;
    db.write(batch, WriteOptions::SYNC)?;
    db.close()?;
    Ok(())
}

/// Print the value (its raw bytes, then a newline), or `(not found)` with exit code 1 so that
/// scripts can tell the two apart.
pub fn get(dir: &Path, opts: Options, key: &str) -> Result<ExitCode, CliError> {
    let db = Db::open(dir, opts)?;
    let value = db.get(key)?;
    db.close()?;
    let mut out = std::io::stdout().lock();
    let (text, code): (&[u8], _) = match &value {
        Some(v) => (v, ExitCode::SUCCESS),
        None => (b"(not found)", ExitCode::FAILURE),
    };
    out.write_all(text)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(code)
}
