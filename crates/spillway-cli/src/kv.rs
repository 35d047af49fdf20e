//! `spillway put | get | del | merge | expire | persist`: one key at a time, for poking at a
//! store by hand (and `del` of a range, a prefix or a whole keyspace: the engine's range
//! delete, one record whatever it covers). Writes use `WriteOptions::SYNC`: a command that
//! returns has made its write durable.
//!
//! Keys, values and operands are bytes (see [`crate::escape`]); a value may also come from a
//! file or stdin, byte for byte.
//!
//! Each works in the default keyspace, or in `--keyspace NAME` (see [`store::write_in`]).

use std::io::{Read, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use spillway::{Db, WriteBatch, WriteOptions};

use crate::error::CliError;
use crate::escape::Value;
use crate::expiry;
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

/// `put` and `merge` may create the store and the keyspace; `del`, `expire` and `persist` may
/// not. With `ttl`, the value expires that long after the write (counted once the store is
/// open, by the wall clock: the store's clock, as the CLI opens every store).
pub fn put(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    value: Source,
    ttl: Option<Duration>,
) -> Result<(), CliError> {
    let value = value.read()?;
    let (db, space) = store::write_in(dir, tuning, keyspace, true, None)?;
    let mut batch = WriteBatch::new();
    match ttl {
        Some(ttl) => batch.put_expiring_in(&space.ks, key, value, expires_after(ttl)?),
        None => batch.put_in(&space.ks, key, value),
    }
    write(db, batch)
}

/// What `expire` or `persist` does to a key's expiry.
pub enum Change {
    /// It expires this long from the write.
    Expire(Duration),
    /// It does not expire.
    Persist,
}

/// `expire` and `persist`: a change of `key`'s expiry, written without reading the key (the
/// engine's message: an absent key stays absent).
pub fn change_expiry(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    change: Change,
) -> Result<(), CliError> {
    let (db, space) = store::write_in(dir, tuning, keyspace, false, None)?;
    let mut batch = WriteBatch::new();
    match change {
        Change::Expire(ttl) => batch.expire_in(&space.ks, key, expires_after(ttl)?),
        Change::Persist => batch.persist_in(&space.ks, key),
    }
    write(db, batch)
}

/// When a write made now with `ttl` expires.
fn expires_after(ttl: Duration) -> Result<SystemTime, CliError> {
    expiry::after(ttl).ok_or_else(|| {
        CliError::Usage(format!(
            "a duration of {} s reaches past any time a store keeps",
            ttl.as_secs()
        ))
    })
}

/// What `del` deletes.
pub enum Deletion {
    /// One key.
    Key(Vec<u8>),
    /// The keys from `from` (inclusive) to `to` (exclusive); `None`: an open end.
    Range {
        from: Option<Vec<u8>>,
        to: Option<Vec<u8>>,
    },
    /// The keys starting with these bytes.
    Prefix(Vec<u8>),
    /// Every key of the keyspace.
    All,
}

/// `del`: a key's tombstone, or one range delete — refused before the store is opened if its
/// range is empty (a typo that would delete nothing), and as [`CliError::NotOrdered`] in a
/// hashed store or keyspace unless it is every key.
pub fn del(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    what: Deletion,
) -> Result<(), CliError> {
    let range = match what {
        Deletion::Key(key) => {
            let (db, space) = store::write_in(dir, tuning, keyspace, false, None)?;
            let mut batch = WriteBatch::new();
            batch.delete_in(&space.ks, key);
            return write(db, batch);
        }
        Deletion::Range { from, to } => {
            if let (Some(from), Some(to)) = (&from, &to) {
                if from >= to {
                    return Err(CliError::Usage(format!(
                        "--from {} is not before --to {}: the range holds no key (--to is \
                         exclusive)",
                        crate::escape::escape(from),
                        crate::escape::escape(to)
                    )));
                }
            }
            (
                from.map_or(Bound::Unbounded, Bound::Included),
                to.map_or(Bound::Unbounded, Bound::Excluded),
            )
        }
        Deletion::Prefix(p) => {
            let end = prefix_end(&p);
            (
                Bound::Included(p),
                end.map_or(Bound::Unbounded, Bound::Excluded),
            )
        }
        Deletion::All => (Bound::Unbounded, Bound::Unbounded),
    };
    let (db, space) = store::write_in(dir, tuning, keyspace, false, None)?;
    let mut batch = WriteBatch::new();
    batch.delete_range_in::<Vec<u8>, _>(&space.ks, range);
    write_or(db, batch, |e| match e {
        spillway::Error::NotOrdered => CliError::NotOrdered {
            dir: dir.to_owned(),
            keyspace: space.name.clone(),
            command: "del",
        },
        e => CliError::Engine(e),
    })
}

/// The least key past every key starting with `prefix`, `None` if there is none (`prefix` is
/// all `0xff` bytes, or empty).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
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
    write_or(db, batch, CliError::Engine)
}

/// [`write`], with `failed` telling a failed write in the CLI's words.
fn write_or(
    db: Db,
    batch: WriteBatch,
    failed: impl FnOnce(spillway::Error) -> CliError,
) -> Result<(), CliError> {
    db.write(batch, WriteOptions::SYNC).map_err(failed)?;
    // The write is durable in the log from here: a close that fails (a spill that finds no
    // room on a full disk, say) loses nothing, and the next open recovers it. Failing the
    // command would tell the user the write did not happen.
    if let Err(e) = db.close() {
        eprintln!("warning: the write is durable, but closing the store failed: {e}");
    }
    Ok(())
}

/// How `get` prints.
pub struct Print {
    /// The value's bytes exactly, nothing after them.
    pub raw: bool,
    /// A line after the value saying when the key expires (not with `raw`: clap refuses it).
    pub with_expiry: bool,
}

/// Print the value on stdout: with `raw`, its bytes exactly, nothing after them (so that
/// `get --raw K > file` holds the value); otherwise its bytes and a newline, and in a store
/// of counters (`spillway.u64add`) an 8-byte value as its decimal number; `with_expiry` adds
/// a line, `no expiry` or `expires TIME (in SECONDS)` (see [`expiry::describe`]). An absent
/// key prints nothing there — any text would read like a stored value — but `(not found)` on
/// stderr, with exit status 1.
pub fn get(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    key: &[u8],
    print: Print,
) -> Result<ExitCode, CliError> {
    let (db, space) = store::read_in(dir, tuning, keyspace)?;
    let counters = space.is_counters() && !print.raw;
    let found = space.ks.get_with_expiry(key)?;
    let now = SystemTime::now();
    db.close()?;
    let Some((mut value, expires)) = found else {
        eprintln!("(not found)");
        return Ok(ExitCode::FAILURE);
    };
    if let Some(n) = counters.then(|| operators::counter(&value)).flatten() {
        value = n.into_bytes();
    }
    if !print.raw {
        value.push(b'\n');
    }
    if print.with_expiry {
        value.extend_from_slice(expiry::describe(expires, now).as_bytes());
        value.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&value)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::io("writing to stdout", e))?;
    Ok(ExitCode::SUCCESS)
}
