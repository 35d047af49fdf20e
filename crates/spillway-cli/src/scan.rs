//! `spillway scan`: print a store's pairs in key order, one per line, `key<TAB>value`.
//!
//! Keys and values are bytes, printed so that a line always splits on its one tab and reads
//! back byte for byte:
//!
//! - one that is valid UTF-8 prints as its text (`user:42`, `café`), except that a backslash
//!   prints as `\\`, tab, newline and carriage return as `\t`, `\n`, `\r`, and the bytes of
//!   every other control character (C0, DEL, C1) as `\xHH`;
//! - one that is not valid UTF-8 prints byte by byte as Rust's `escape_ascii` does: printable
//!   ASCII as itself, `\\`, `\t`, `\n`, `\r`, and `\xHH` (lowercase hex) for every other
//!   byte, non-ASCII ones included — except that quotes are not escaped.
//!
//! So `\xHH` always stands for one byte, and a printable text value reads the same here as
//! from `spillway get`, which prints a value's raw bytes. `--from`, `--to` and `--prefix` take
//! keys written the same way (`\x00\x00\x00\x00\x00\x00\x00\x2a`), so a key copied from
//! the output can be typed back.
//!
//! The store is opened read-only. `--from` is inclusive and `--to` exclusive (the Rust range
//! `from..to`); both, and `--prefix`, need an ordered store, and on a hashed one the engine's
//! `NotOrdered` is reported with a hint about `--ordered`. Without them a hashed store is
//! listed whole, in hash order (said once on stderr). The count goes to stderr at the end; a
//! reader that closes the pipe (`| head`) ends the scan quietly, with status 0.
//!
//! In a store of counters (merge operator `spillway.u64add`), an 8-byte value prints as its
//! decimal number, as `get` prints it; `--raw` prints every value escaped as above.

use std::io::{BufWriter, ErrorKind, Write};
use std::ops::Bound;
use std::path::Path;

use spillway::KeyOrder;

use crate::error::CliError;
use crate::operators;
use crate::report;
use crate::store;
use crate::tuning::Tuning;

/// A key typed on the command line, escapes decoded (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key(pub Vec<u8>);

/// Clap's value parser for `--from`, `--to` and `--prefix`: a bad escape is a usage error.
pub fn parse_key(text: &str) -> Result<Key, String> {
    unescape(text).map(Key)
}

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

/// How printing ended.
enum End {
    /// Every pair asked for was printed: this many.
    Printed(u64),
    /// The reader closed stdout.
    Closed,
}

type Pairs = Box<dyn Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>>>;

pub fn run(dir: &Path, tuning: &Tuning, q: &Query) -> Result<(), CliError> {
    let store = store::open_to_read(dir, tuning)?;
    let counters = store.is_counters() && !q.raw;
    let db = store.db;
    let not_ordered = |e| match e {
        spillway::Error::NotOrdered => CliError::NotOrdered(dir.to_owned()),
        e => CliError::Engine(e),
    };
    let iter = match (&q.prefix, &q.from, &q.to) {
        (Some(p), _, _) => db.prefix(&p.0),
        (None, None, None) => Ok(db.iter()),
        (None, from, to) => {
            let from = from
                .as_ref()
                .map_or(Bound::Unbounded, |k| Bound::Included(&k.0));
            let to = to
                .as_ref()
                .map_or(Bound::Unbounded, |k| Bound::Excluded(&k.0));
            db.range::<&Vec<u8>, _>((from, to))
        }
    }
    .map_err(not_ordered)?;
    if db.key_order() == KeyOrder::Hashed && !q.bounded() {
        eprintln!("(hashed store: keys in hash order)");
    }
    let pairs: Pairs = if q.reverse {
        Box::new(iter.rev())
    } else {
        Box::new(iter)
    };
    let end = print(pairs, q.limit, counters)?;
    db.close()?;
    if let End::Printed(n) = end {
        let noun = if n == 1 { "pair" } else { "pairs" };
        match q.limit {
            Some(limit) if n == limit => {
                eprintln!("{} {noun} (--limit {limit} reached)", report::count(n))
            }
            _ => eprintln!("{} {noun}", report::count(n)),
        }
    }
    Ok(())
}

/// Print up to `limit` pairs on a locked, buffered stdout (8-byte values as numbers if
/// `counters`). An error from the store is returned after what came before it has been
/// flushed.
fn print(pairs: Pairs, limit: Option<u64>, counters: bool) -> Result<End, CliError> {
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(64 << 10, stdout.lock());
    let limit = limit.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut line = Vec::new();
    let mut n = 0;
    for pair in pairs.take(limit) {
        let (key, value) = match pair {
            Ok(pair) => pair,
            Err(e) => {
                finish(out)?;
                return Err(e.into());
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
            return closed_or(e);
        }
        n += 1;
    }
    Ok(match finish(out)? {
        true => End::Printed(n),
        false => End::Closed,
    })
}

/// Flush stdout: `false` if the reader has gone.
fn finish(mut out: impl Write) -> Result<bool, CliError> {
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

/// Append `bytes` to `out` as the module docs describe.
pub fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    fn hex(out: &mut Vec<u8>, b: u8) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        out.extend_from_slice(&[
            b'\\',
            b'x',
            DIGITS[usize::from(b >> 4)],
            DIGITS[usize::from(b & 15)],
        ]);
    }
    fn special(out: &mut Vec<u8>, b: u8) -> bool {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => return false,
        }
        true
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            for c in text.chars() {
                let mut buf = [0; 4];
                let encoded = c.encode_utf8(&mut buf).as_bytes();
                if c.is_ascii() && special(out, encoded[0]) {
                    continue;
                }
                if c.is_control() {
                    encoded.iter().for_each(|&b| hex(out, b));
                } else {
                    out.extend_from_slice(encoded);
                }
            }
        }
        Err(_) => {
            for &b in bytes {
                if !special(out, b) {
                    match b {
                        b' '..=b'~' => out.push(b),
                        _ => hex(out, b),
                    }
                }
            }
        }
    }
}

/// `bytes` as the module docs describe.
#[cfg(test)]
pub fn escape(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    escape_into(bytes, &mut out);
    String::from_utf8(out).expect("escaping leaves valid UTF-8")
}

/// The bytes `text` stands for: the inverse of [`escape`].
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let bad = |what: &str| {
        Err(format!(
            "`{text}`: {what} (escapes are \\\\ for a backslash, \\t, \\n, \\r, and \\xHH for \
             any byte)"
        ))
    };
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            continue;
        }
        match chars.next() {
            None => return bad("a lone backslash at the end"),
            Some('\\') => out.push(b'\\'),
            Some('t') => out.push(b'\t'),
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('x') => {
                let mut digit = || chars.next().and_then(|c| c.to_digit(16));
                match (digit(), digit()) {
                    (Some(hi), Some(lo)) => out.push((hi * 16 + lo) as u8),
                    _ => return bad("\\x must be followed by two hex digits"),
                }
            }
            Some(other) => return bad(&format!("`\\{other}` is not an escape")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_prints_as_itself_and_the_rest_escaped() {
        assert_eq!(escape(b"user:42"), "user:42");
        assert_eq!(
            escape("café 日本 \"q\" 'q'".as_bytes()),
            "café 日本 \"q\" 'q'"
        );
        assert_eq!(escape(b"a\tb\nc\rd\\e"), "a\\tb\\nc\\rd\\\\e");
        assert_eq!(escape(&[0, 1, 0x1f, 0x7f]), "\\x00\\x01\\x1f\\x7f");
        assert_eq!(escape(&42u64.to_be_bytes()), "\\x00".repeat(7) + "*");
        // Not UTF-8: a lone continuation byte, a truncated sequence, 0xff; then every
        // non-ASCII byte is escaped, even where it begins a valid character.
        assert_eq!(escape(&[b'a', 0x80, b'b']), "a\\x80b");
        assert_eq!(escape(&[0xe6, 0x97]), "\\xe6\\x97");
        assert_eq!(escape(&[0xff, b'z', b'\t', b'"']), "\\xffz\\t\"");
        assert_eq!(escape(&[0xe6, 0x97, 0xa5, 0xff]), "\\xe6\\x97\\xa5\\xff");
        // A C1 control character is valid UTF-8, but escaped byte by byte.
        assert_eq!(escape("\u{85}".as_bytes()), "\\xc2\\x85");
        assert_eq!(escape(b""), "");
    }

    #[test]
    fn escapes_read_back_byte_for_byte() {
        let samples: Vec<Vec<u8>> = vec![
            b"plain".to_vec(),
            b"\\x41 is not A".to_vec(),
            (0..=255).collect(),
            "日本\u{85}\t".as_bytes().to_vec(),
            vec![0xe6, 0x97, b'\\', b'x'],
        ];
        for s in samples {
            let e = escape(&s);
            assert!(!e.contains('\t') && !e.contains('\n'), "{e}");
            assert_eq!(unescape(&e).unwrap(), s, "{e}");
        }
        assert!(unescape("\\X41")
            .unwrap_err()
            .contains("`\\X` is not an escape"));
        assert!(unescape("\\日")
            .unwrap_err()
            .contains("`\\日` is not an escape"));
        assert_eq!(unescape("\\x4a\\x4A").unwrap(), b"JJ");
    }

    #[test]
    fn bad_escapes_are_refused() {
        for bad in ["a\\", "\\q", "\\x4", "\\x", "\\xg0", "\\x+1", "\\x日"] {
            let err = unescape(bad).unwrap_err();
            assert!(err.starts_with(&format!("`{bad}`: ")), "{err}");
            assert!(err.contains("\\xHH for any byte"), "{err}");
        }
    }
}
