//! Keys and values as text: how `scan` prints bytes, and how every command reads the bytes a
//! user types, so that whatever `scan` prints can be typed back.
//!
//! Printing (`scan`'s keys and values):
//!
//! - bytes that are valid UTF-8 print as their text (`user:42`, `café`), except that a
//!   backslash prints as `\\`, tab, newline and carriage return as `\t`, `\n`, `\r`, and the
//!   bytes of every other control character (C0, DEL, C1) as `\xHH`;
//! - bytes that are not valid UTF-8 print one by one as Rust's `escape_ascii` does: printable
//!   ASCII as itself, `\\`, `\t`, `\n`, `\r`, and `\xHH` (lowercase hex) for every other
//!   byte, non-ASCII ones included — except that quotes are not escaped.
//!
//! So `\xHH` always stands for one byte, and a printed key never holds a tab or a newline.
//!
//! Reading (KEY, VALUE and OPERAND arguments, `--from`, `--to`, `--prefix`, `--separator`):
//! an argument's bytes are taken as the shell passed them — any bytes, not only UTF-8 — with
//! `\\`, `\t`, `\n`, `\r` and `\xHH` (either case) decoded; any other backslash is an error,
//! so that a typo never becomes a key silently. Decoding what printing wrote gives back the
//! bytes printed.

use std::ffi::OsString;

use clap::builder::{OsStringValueParser, TypedValueParser};

/// The rule, as `--help` states it under every command that takes keys or values.
pub const RULE: &str = "\
Keys and values on the command line are bytes: an argument is taken byte for byte as the shell \
passes it (UTF-8 or not), with the escapes `scan` prints decoded: \\\\ for a backslash, \\t, \\n, \
\\r, and \\xHH for any byte (\\xff\\xfe). Any other backslash is an error, so a key `scan` \
prints can be typed back as it is; write a backslash of your own as \\\\. A value read from a \
file or stdin (--value-file, or `-` for VALUE) is taken exactly as it is, escapes and all.";

/// Bytes typed on the command line, escapes decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key(pub Vec<u8>);

/// Clap's parser of an argument of bytes (see the module docs): a bad escape, or on a
/// platform without byte arguments text that is not Unicode, is a usage error.
pub fn arg() -> impl TypedValueParser<Value = Key> {
    OsStringValueParser::new().try_map(|text| unescape(&os_bytes(text)?).map(Key))
}

/// The bounds of a key range written `START..END`, either side empty for no bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Option<Vec<u8>>,
    pub end: Option<Vec<u8>>,
}

/// Clap's parser of a `START..END` argument: split at its first `..` (so a START holding `..`
/// or ending in `.` writes those dots `\x2e`), each side read as [`arg`] reads a key; an
/// empty side is no bound (`a..`, `..b`, `..`).
pub fn range_arg() -> impl TypedValueParser<Value = KeyRange> {
    OsStringValueParser::new().try_map(|text| {
        let bytes = os_bytes(text)?;
        let Some(at) = bytes.windows(2).position(|w| w == b"..") else {
            return Err("expected START..END (either side may be empty)".to_string());
        };
        let side = |b: &[u8]| -> Result<Option<Vec<u8>>, String> {
            if b.is_empty() {
                Ok(None)
            } else {
                unescape(b).map(Some)
            }
        };
        Ok(KeyRange {
            start: side(&bytes[..at])?,
            end: side(&bytes[at + 2..])?,
        })
    })
}

/// Where a value comes from: its argument, or stdin (`-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Bytes(Vec<u8>),
    Stdin,
}

/// Clap's parser of a VALUE or OPERAND argument: `-` alone is stdin, as for most tools (the
/// one-byte value `-` is `\x2d`); any other is read as [`arg`] reads it.
pub fn value_arg() -> impl TypedValueParser<Value = Value> {
    OsStringValueParser::new().try_map(|text| {
        if text == "-" {
            return Ok(Value::Stdin);
        }
        unescape(&os_bytes(text)?).map(Value::Bytes)
    })
}

#[cfg(unix)]
fn os_bytes(text: OsString) -> Result<Vec<u8>, String> {
    Ok(std::os::unix::ffi::OsStringExt::into_vec(text))
}

#[cfg(not(unix))]
fn os_bytes(text: OsString) -> Result<Vec<u8>, String> {
    text.into_string().map(String::into_bytes).map_err(|text| {
        format!(
            "`{}` is not valid Unicode: write such bytes as \\xHH",
            text.to_string_lossy()
        )
    })
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

/// `bytes` as the module docs describe, for messages (and `LOADGEN`'s keyspace name).
pub fn escape(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len());
    escape_into(bytes, &mut out);
    String::from_utf8(out).expect("escaping leaves valid UTF-8")
}

/// The bytes `text` stands for: the inverse of [`escape`].
pub fn unescape(text: &[u8]) -> Result<Vec<u8>, String> {
    let bad = |what: &str| {
        Err(format!(
            "`{}`: {what} (escapes are \\\\ for a backslash, \\t, \\n, \\r, and \\xHH for any \
             byte)",
            String::from_utf8_lossy(text)
        ))
    };
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&next) = text.get(i) else {
            return bad("a lone backslash at the end");
        };
        i += 1;
        match next {
            b'\\' => out.push(b'\\'),
            b't' => out.push(b'\t'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'x' => {
                let digits = text.get(i..i + 2).and_then(|d| std::str::from_utf8(d).ok());
                match digits.and_then(|d| u8::from_str_radix(d, 16).ok()) {
                    Some(byte) if digits.is_some_and(|d| !d.starts_with('+')) => {
                        out.push(byte);
                        i += 2;
                    }
                    _ => return bad("\\x must be followed by two hex digits"),
                }
            }
            _ => {
                // Name the whole character after the backslash, not its first byte.
                let rest = String::from_utf8_lossy(&text[i - 1..(i + 3).min(text.len())]);
                let c = rest.chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
                return bad(&format!("`\\{c}` is not an escape"));
            }
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
            assert_eq!(unescape(e.as_bytes()).unwrap(), s, "{e}");
        }
        assert!(unescape(b"\\X41")
            .unwrap_err()
            .contains("`\\X` is not an escape"));
        assert!(unescape("\\日".as_bytes())
            .unwrap_err()
            .contains("`\\日` is not an escape"));
        assert_eq!(unescape(b"\\x4a\\x4A").unwrap(), b"JJ");
    }

    #[test]
    fn raw_bytes_are_taken_as_they_are() {
        assert_eq!(unescape(&[0xff, 0xfe]).unwrap(), [0xff, 0xfe]);
        assert_eq!(
            unescape(&[0xd5, b'\\', b'n', 0x90]).unwrap(),
            [0xd5, b'\n', 0x90]
        );
        assert_eq!(unescape(b"-").unwrap(), b"-");
    }

    #[test]
    fn bad_escapes_are_refused() {
        for bad in ["a\\", "\\q", "\\x4", "\\x", "\\xg0", "\\x+1", "\\x日"] {
            let err = unescape(bad.as_bytes()).unwrap_err();
            assert!(err.starts_with(&format!("`{bad}`: ")), "{err}");
            assert!(err.contains("\\xHH for any byte"), "{err}");
        }
        assert!(unescape(&[b'\\', 0xff])
            .unwrap_err()
            .contains("is not an escape"));
    }
}
