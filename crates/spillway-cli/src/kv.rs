//! `spillway put | get | del | merge`: one key at a time, for poking at a store by hand. Writes
//! use `WriteOptions::SYNC`: a command that returns has made its write durable.
//!
//! Keys, values and operands are bytes (see [`crate::escape`]); a value may also come from a
//! file or stdin, byte for byte.
//!
//! Each works in the default keyspace, or in `--keyspace NAME` (see [`store::write_in`]).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use spillway::{Db, WriteBatch, WriteOptions};

use crate::error::CliError;
use crate::escape::Value;
use crate::operators::{self, Op};
use crate::store;
use crate::tuning::Tuning;

/// Where a put's value or a merge's operand comes from.
pub enum Source {
    /// The argument (escapes decoded), or stdin for `-`.
    Arg(Value),
    /// `--value-file PATH` (`-`: stdin).
    File(PathBuf),
}

impl Source {
    /// The bytes, read before the store is opened: a file that cannot be read changes
    /// nothing. Reading stops one byte past the engine's largest value, so that a huge file
    /// is refused without being read whole.
    pub fn read(self) -> Result<Vec<u8>, CliError> {
        let (what, reader): (String, Box<dyn Read>) = match self {
            Source::Arg(Value::Bytes(bytes)) => return Ok(bytes),
            Source::Arg(Value::Stdin) => ("stdin".into(), Box::new(std::io::stdin())),
            Source::File(path) if path.as_os_str() == "-" => {
                ("stdin".into(), Box::new(std::io::stdin()))
            }
            Source::File(path) => {
                let file = std::fs::File::open(&path)
                    .map_err(|e| CliError::io(format!("opening {}", path.display()), e))?;
                (path.display().to_string(), Box::new(file))
            }
        };
        let max = spillway::MAX_VALUE_LEN;
        let mut bytes = Vec::new();
        reader
            .take(max as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::io(format!("reading {what}"), e))?;
        if bytes.len() > max {
            return Err(CliError::Failed(format!(
                "the value in {what} is larger than the largest value a store takes ({max} bytes)"
            )));
        }
        Ok(bytes)
    }
}

/// `put` and `merge` may create the store and the keyspace; `del` may not.
pub fn put(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    value: Source,
) -> Result<(), CliError> {
    let value = value.read()?;
    let (db, space) = store::write_in(dir, tuning, keyspace, true, None)?;
    let mut batch = WriteBatch::new();
    batch.put_in(&space.ks, key, value);
    write(db, batch)
}

pub fn del(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
) -> Result<(), CliError> {
    let (db, space) = store::write_in(dir, tuning, keyspace, false, None)?;
    let mut batch = WriteBatch::new();
    batch.delete_in(&space.ks, key);
    write(db, batch)
}

/// Merge `operand` (as `op` reads it) into `key`'s value with `op`'s operator, which a store
/// without one records; a store that records another is an error. The operand is read and
/// parsed before the store is opened: a malformed one changes nothing.
pub fn merge(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    operand: Source,
    op: Op,
    separator: Option<&[u8]>,
) -> Result<(), CliError> {
    let operator = op.operator(separator)?;
    let operand = op.operand(operand.read()?)?;
    let (db, space) = store::write_in(dir, tuning, keyspace, true, Some(operator))?;
    let mut batch = WriteBatch::new();
    batch.merge_in(&space.ks, key, operand);
    write(db, batch)
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

/// Print the value on stdout: with `raw`, its bytes exactly, nothing after them (so that
/// `get --raw K > file` holds the value); otherwise its bytes and a newline, and in a store
/// of counters (`spillway.u64add`) an 8-byte value as its decimal number. An absent key
/// prints nothing there — any text would read like a stored value — but `(not found)` on
/// stderr, with exit status 1.
pub fn get(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    raw: bool,
) -> Result<ExitCode, CliError> {
    let (db, space) = store::read_in(dir, tuning, keyspace)?;
    let counters = space.is_counters() && !raw;
    let value = space.ks.get(key)?;
    db.close()?;
    let Some(mut value) = value else {
        eprintln!("(not found)");
        return Ok(ExitCode::FAILURE);
    };
    if let Some(n) = counters.then(|| operators::counter(&value)).flatten() {
        value = n.into_bytes();
    }
    if !raw {
        value.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
