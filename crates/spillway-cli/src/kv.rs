//! `spillway put | get | del | merge`: one key at a time, for poking at a store by hand. Writes
//! use `WriteOptions::SYNC`: a command that returns has made its write durable.
//!
//! Keys, values and operands are bytes (see [`crate::escape`]); a value may also come from a
//! file or stdin, byte for byte.

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

/// `put` and `merge` may create the store; `del` may not.
pub fn put(dir: &Path, tuning: &Tuning, key: &[u8], value: Source) -> Result<(), CliError> {
    let value = value.read()?;
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    write(store::open_to_write(dir, tuning, true, None)?.db, batch)
}

pub fn del(dir: &Path, tuning: &Tuning, key: &[u8]) -> Result<(), CliError> {
    let mut batch = WriteBatch::new();
    batch.delete(key);
    write(store::open_to_write(dir, tuning, false, None)?.db, batch)
}

/// Merge `operand` (as `op` reads it) into `key`'s value with `op`'s operator, which a store
/// without one records; a store that records another is an error. The operand is read and
/// parsed before the store is opened: a malformed one changes nothing.
pub fn merge(
    dir: &Path,
    tuning: &Tuning,
    key: &[u8],
    operand: Source,
    op: Op,
    separator: Option<&[u8]>,
) -> Result<(), CliError> {
    let operator = op.operator(separator)?;
    let operand = op.operand(operand.read()?)?;
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

/// Print the value on stdout: with `raw`, its bytes exactly, nothing after them (so that
/// `get --raw K > file` holds the value); otherwise its bytes and a newline, and in a store
/// of counters (`spillway.u64add`) an 8-byte value as its decimal number. An absent key
/// prints nothing there — any text would read like a stored value — but `(not found)` on
/// stderr, with exit status 1.
pub fn get(dir: &Path, tuning: &Tuning, key: &[u8], raw: bool) -> Result<ExitCode, CliError> {
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
    if !raw {
        value.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
