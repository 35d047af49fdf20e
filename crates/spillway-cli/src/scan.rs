//! `spillway scan`: print a store's pairs in key order, one per line, `key<TAB>value`.
//!
//! Keys and values are bytes, printed as [`crate::escape`] describes, so that a line always
//! splits on its one tab and reads back byte for byte; `--from`, `--to` and `--prefix` take
//! keys written the same way (`\x00\x00\x00\x00\x00\x00\x00\x2a`), so a key copied from the
//! output can be typed back.
//!
//! The store is opened read-only. `--from` is inclusive and `--to` exclusive (the Rust range
//! `from..to`); both, and `--prefix`, need an ordered store, and on a hashed one the engine's
//! `NotOrdered` is reported with a hint about `--ordered`. Without them a hashed store is
//! listed whole, in hash order (said once on stderr). The count goes to stderr at the end; a
//! reader that closes the pipe (`| head`) ends the scan quietly, with status 0.
//!
//! In a store of counters (merge operator `spillway.u64add`), an 8-byte value prints as its
//! decimal number, as `get` prints it; `--raw` prints every value escaped as above.
//!
//! `--keyspace NAME` lists that keyspace instead of the default one, by its own order and
//! operator; it must exist (see [`store::read_in`]).

use std::io::{BufWriter, ErrorKind, Write};
use std::ops::Bound;
use std::path::Path;

use spillway::KeyOrder;

use crate::error::CliError;
use crate::escape::{escape_into, Key};
use crate::operators;
use crate::report;
use crate::store;
use crate::tuning::Tuning;

/// What to print.
#[derive(Debug, Default)]
pub struct Query {
    /// First key (inclusive).
    pub from: Option<Key>,
    /// Key to stop at (exclusive).
    pub to: Option<Key>,
    /// Only keys starting with these bytes (never together with `from`/`to`).
    pub prefix: Option<Key>,
    /// At most this many pairs.
    pub limit: Option<u64>,
    /// Last key first.
    pub reverse: bool,
    /// Values as bytes (escaped), even counters.
    pub raw: bool,
}

impl Query {
    fn bounded(&self) -> bool {
        self.from.is_some() || self.to.is_some() || self.prefix.is_some()
    }
}

/// How printing ended, and the keys skipped on the way.
struct Printed {
    end: End,
    skipped: u64,
}

enum End {
    /// Every pair asked for was printed: this many.
    Printed(u64),
    /// The reader closed stdout.
    Closed,
}

type Pairs = Box<dyn Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>>>;

pub fn run(dir: &Path, tuning: &Tuning, keyspace: Option<&str>, q: &Query) -> Result<(), CliError> {
    let (db, space) = store::read_in(dir, tuning, keyspace)?;
    let counters = space.is_counters() && !q.raw;
    let ks = &space.ks;
    let not_ordered = |e| match e {
        spillway::Error::NotOrdered => CliError::NotOrdered {
            dir: dir.to_owned(),
            keyspace: space.name.clone(),
            command: "scan",
        },
        e => CliError::Engine(e),
    };
    let iter = match (&q.prefix, &q.from, &q.to) {
        (Some(p), _, _) => ks.prefix(&p.0),
        (None, None, None) => ks.iter(),
        (None, from, to) => {
            let from = from
                .as_ref()
                .map_or(Bound::Unbounded, |k| Bound::Included(&k.0));
            let to = to
                .as_ref()
                .map_or(Bound::Unbounded, |k| Bound::Excluded(&k.0));
            ks.range::<&Vec<u8>, _>((from, to))
        }
    }
    .map_err(not_ordered)?;
    if space.order == KeyOrder::Hashed && !q.bounded() {
        let what = if space.name.is_some() {
            "keyspace"
        } else {
            "store"
        };
        eprintln!("(hashed {what}: keys in hash order)");
    }
    let pairs: Pairs = if q.reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    let printed = print(pairs, q.limit, counters)?;
    db.close()?;
    if let End::Printed(n) = printed.end {
        let noun = if n == 1 { "pair" } else { "pairs" };
        match q.limit {
            Some(limit) if n == limit => {
                eprintln!("{} {noun} (--limit {limit} reached)", report::count(n))
            }
            _ => eprintln!("{} {noun}", report::count(n)),
        }
    }
    match printed.skipped {
        0 => Ok(()),
        skipped => Err(CliError::KeysSkipped(skipped)),
    }
}

/// Print up to `limit` pairs on a locked, buffered stdout (8-byte values as numbers if
/// `counters`). A key whose merge operands do not fold is reported on stderr and skipped
/// (the engine's iterator goes on past it): one bad counter must not hide the rest of the
/// store. Any other error from the store ends the listing, returned after what came
/// before it has been flushed.
fn print(mut pairs: Pairs, limit: Option<u64>, counters: bool) -> Result<Printed, CliError> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 << 10, stdout.lock());
    let limit = limit.unwrap_or(u64::MAX);
    let mut line = Vec::new();
    let (mut n, mut skipped) = (0, 0);
    while n < limit {
        let Some(pair) = pairs.next() else { break };
        let (key, value) = match pair {
            Ok(pair) => pair,
            Err(e) => {
                let spillway::Error::MergeFailed { key, .. } = &e else {
                    finish(&mut out)?;
                    return Err(e.into());
                };
                // The pairs before it first, so that the report sits where the key would.
                if !finish(&mut out)? {
                    return Ok(Printed {
                        end: End::Closed,
                        skipped,
                    });
                }
                let mut shown = Vec::new();
                escape_into(key, &mut shown);
                eprintln!("error: skipped {}: {e}", String::from_utf8_lossy(&shown));
                skipped += 1;
                continue;
            }
        };
        line.clear();
        escape_into(&key, &mut line);
        line.push(b'\t');
        match counters.then(|| operators::counter(&value)).flatten() {
            Some(n) => line.extend_from_slice(n.as_bytes()),
            None => escape_into(&value, &mut line),
        }
        line.push(b'\n');
        if let Err(e) = out.write_all(&line) {
            return closed_or(e).map(|end| Printed { end, skipped });
        }
        n += 1;
    }
    let end = match finish(&mut out)? {
        true => End::Printed(n),
        false => End::Closed,
    };
    Ok(Printed { end, skipped })
}

/// Flush stdout: `false` if the reader has gone.
fn finish(out: &mut impl Write) -> Result<bool, CliError> {
    match out.flush() {
        Ok(()) => Ok(true),
        Err(e) => closed_or(e).map(|_| false),
    }
}

/// A closed pipe ends the scan normally; any other write error is one.
fn closed_or(e: std::io::Error) -> Result<End, CliError> {
    match e.kind() {
        ErrorKind::BrokenPipe => Ok(End::Closed),
        _ => Err(CliError::io("writing to stdout", e)),
    }
}
