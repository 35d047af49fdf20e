//! The Redis serialization protocol (RESP): requests in, replies out.
//!
//! A request is an array of bulk strings (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`) or an inline line
//! (`GET k\r\n`, what `redis-cli` in a pipe and telnet send). Replies are RESP2 by default;
//! after `HELLO 3` a connection gets RESP3's null, map, set and double types. Malformed input
//! is answered with Redis's own protocol error texts, and the connection is then closed (as
//! Redis does): nothing after a framing error can be trusted to start a request.

use std::borrow::Cow;

/// Limits on what one request may hold, so that a client cannot make the server buffer
/// without bound (Redis: `proto-max-bulk-len`, at most 1,048,576 arguments, inline requests
/// at most 64 KiB). A bulk string may be as long as the store's largest value, a request as
/// large as its largest write batch.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_bulk_len: usize,
    pub max_args: usize,
    pub max_inline_len: usize,
    pub max_request_len: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bulk_len: spillway::MAX_VALUE_LEN,
            max_args: 1 << 20,
            max_inline_len: 64 << 10,
            max_request_len: spillway::MAX_BATCH_BYTES,
        }
    }
}

/// What the start of a buffer holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet: read more.
    Incomplete,
    /// A request (its arguments; empty for a blank inline line) and the bytes it took.
    Request(Vec<Vec<u8>>, usize),
    /// Not RESP: the error to reply before closing the connection.
    Invalid(String),
}

/// Most arguments, and longest bulk string, a client may announce before it authenticates
/// (Redis's figures): one without the password then makes the server wait for, and hold, no
/// more than a small request.
const UNAUTHENTICATED_ARGS: i64 = 10;
const UNAUTHENTICATED_BULK_LEN: usize = 16 << 10;

/// Parse the request at the start of `buf`, from a client that has authenticated (or need not)
/// or not: an unauthenticated one may announce no more than Redis lets it.
pub fn parse(buf: &[u8], limits: &Limits, authenticated: bool) -> Parsed {
    match buf.first() {
        None => Parsed::Incomplete,
        Some(b'*') => parse_multibulk(buf, limits, authenticated),
        Some(_) => parse_inline(buf, limits),
    }
}

fn protocol_error(what: &str) -> Parsed {
    Parsed::Invalid(format!("ERR Protocol error: {what}"))
}

/// The line starting at `at` (without its CRLF) and where the next begins.
fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = buf[at..].windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[at..at + end], at + end + 2))
}

fn number(digits: &[u8]) -> Option<i64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn parse_multibulk(buf: &[u8], limits: &Limits, authenticated: bool) -> Parsed {
    let Some((head, mut at)) = line(buf, 1) else {
        return too_long_or_incomplete(buf, limits);
    };
    let count = match number(head) {
        Some(n) if n > UNAUTHENTICATED_ARGS && !authenticated => {
            return protocol_error("unauthenticated multibulk length")
        }
        Some(n) if n <= limits.max_args as i64 => n,
        _ => return protocol_error("invalid multibulk length"),
    };
    let mut args = Vec::with_capacity(count.clamp(0, 1024) as usize);
    for _ in 0..count.max(0) {
        if at > limits.max_request_len {
            return protocol_error("request larger than the largest write batch");
        }
        let Some(&kind) = buf.get(at) else {
            return Parsed::Incomplete;
        };
        if kind != b'$' {
            return protocol_error(&format!("expected '$', got '{}'", kind as char));
        }
        let Some((len, start)) = line(buf, at + 1) else {
            return too_long_or_incomplete(&buf[at..], limits);
        };
        let len = match number(len) {
            Some(n) if n >= 0 && n as usize <= limits.max_bulk_len => n as usize,
            _ => return protocol_error("invalid bulk length"),
        };
        if len > UNAUTHENTICATED_BULK_LEN && !authenticated {
            return protocol_error("unauthenticated bulk length");
        }
        let end = start + len;
        if end > limits.max_request_len {
            return protocol_error("request larger than the largest write batch");
        }
        if buf.len() < end + 2 {
            return Parsed::Incomplete;
        }
        if &buf[end..end + 2] != b"\r\n" {
            return protocol_error("expected CRLF after a bulk string");
        }
        args.push(buf[start..end].to_vec());
        at = end + 2;
    }
    Parsed::Request(args, at)
}

/// A header line with no CRLF yet: incomplete, unless it is already longer than any header.
fn too_long_or_incomplete(buf: &[u8], limits: &Limits) -> Parsed {
    if buf.len() > limits.max_inline_len {
        protocol_error("too big mbulk count string")
    } else {
        Parsed::Incomplete
    }
}

fn parse_inline(buf: &[u8], limits: &Limits) -> Parsed {
    let Some(end) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > limits.max_inline_len {
            protocol_error("too big inline request")
        } else {
            Parsed::Incomplete
        };
    };
    let text = buf[..end].strip_suffix(b"\r").unwrap_or(&buf[..end]);
    match split_inline(text) {
        Some(args) => Parsed::Request(args, end + 1),
        None => protocol_error("unbalanced quotes in request"),
    }
}

/// Split an inline request as Redis does (`sdssplitargs`): on spaces, with "double quotes"
/// (and `\n`, `\xHH` escapes) and 'single quotes'.
fn split_inline(text: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let mut arg = Vec::new();
        match text[i] {
            b'"' => {
                i += 1;
                loop {
                    match *text.get(i)? {
                        b'"' => break,
                        b'\\' => {
                            let c = *text.get(i + 1)?;
                            i += 1;
                            let hex = text.get(i + 1..i + 3).and_then(|h| {
                                u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
                            });
                            match (c, hex) {
                                (b'x', Some(h)) => {
                                    arg.push(h);
                                    i += 2;
                                }
                                (b'n', _) => arg.push(b'\n'),
                                (b'r', _) => arg.push(b'\r'),
                                (b't', _) => arg.push(b'\t'),
                                (b'b', _) => arg.push(8),
                                (b'a', _) => arg.push(7),
                                (c, _) => arg.push(c),
                            }
                        }
                        c => arg.push(c),
                    }
                    i += 1;
                }
                i += 1;
                // A closing quote must be followed by a space or the end.
                if text.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
                    return None;
                }
            }
            b'\'' => {
                i += 1;
                loop {
                    match *text.get(i)? {
                        b'\'' => break,
                        b'\\' if text.get(i + 1) == Some(&b'\'') => {
                            arg.push(b'\'');
                            i += 1;
                        }
                        c => arg.push(c),
                    }
                    i += 1;
                }
                i += 1;
                if text.get(i).is_some_and(|c| !c.is_ascii_whitespace()) {
                    return None;
                }
            }
            _ => {
                while i < text.len() && !text[i].is_ascii_whitespace() {
                    arg.push(text[i]);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
    Some(args)
}

/// A reply, encoded for the connection's protocol version.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+OK`
    Status(Cow<'static, str>),
    /// `-ERR ...`: the text starts with its code (`ERR`, `WRONGTYPE`, `NOAUTH`, ...).
    Error(String),
    Integer(i64),
    Bulk(Vec<u8>),
    /// A missing value: `$-1` in RESP2, `_` in RESP3.
    Null,
    /// A missing array (`*-1` in RESP2, `_` in RESP3).
    NullArray,
    Array(Vec<Reply>),
    /// A set in RESP3; an array in RESP2.
    Set(Vec<Reply>),
    /// A map in RESP3; a flat array of keys and values in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A double in RESP3; a bulk string in RESP2.
    Double(f64),
    /// Text to show as it is (`INFO`, `CLIENT LIST`): a verbatim string of format `txt` in
    /// RESP3, a bulk string in RESP2.
    Verbatim(Vec<u8>),
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::status("OK")
    }

    pub fn status(text: impl Into<Cow<'static, str>>) -> Reply {
        Reply::Status(text.into())
    }

    pub fn error(text: impl Into<String>) -> Reply {
        Reply::Error(text.into())
    }

    pub fn bulk(data: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(data.into())
    }

    /// Append the encoding of this reply for protocol version `resp` (2 or 3).
    pub fn encode(&self, resp: u8, out: &mut Vec<u8>) {
        use std::io::Write;
        match self {
            Reply::Status(s) => {
                out.push(b'+');
                out.extend_from_slice(s.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Reply::Error(e) => {
                out.push(b'-');
                // A line break would end the error early and desynchronize the client.
                out.extend(
                    e.bytes()
                        .map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
                );
                out.extend_from_slice(b"\r\n");
            }
            Reply::Integer(n) => {
                header(out, b':', n.unsigned_abs(), *n < 0);
            }
            Reply::Bulk(data) => {
                header(out, b'$', data.len() as u64, false);
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Null if resp >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::NullArray if resp >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                header(out, b'*', items.len() as u64, false);
                for item in items {
                    item.encode(resp, out);
                }
            }
            Reply::Set(items) => {
                let kind = if resp >= 3 { b'~' } else { b'*' };
                header(out, kind, items.len() as u64, false);
                for item in items {
                    item.encode(resp, out);
                }
            }
            Reply::Map(pairs) => {
                if resp >= 3 {
                    header(out, b'%', pairs.len() as u64, false);
                } else {
                    header(out, b'*', pairs.len() as u64 * 2, false);
                }
                for (k, v) in pairs {
                    k.encode(resp, out);
                    v.encode(resp, out);
                }
            }
            Reply::Verbatim(text) if resp >= 3 => {
                let _ = write!(out, "={}\r\ntxt:", text.len() + 4);
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Verbatim(text) => Reply::Bulk(text.clone()).encode(resp, out),
            Reply::Double(d) => {
                let text = format_double(*d);
                if resp >= 3 {
                    let _ = write!(out, ",{text}\r\n");
                } else {
                    Reply::Bulk(text.into_bytes()).encode(resp, out);
                }
            }
        }
    }
}

/// A double as Redis 7.0 replies with one (`addReplyDouble`): `inf`/`-inf`, else C's
/// `%.17g` — 17 significant digits, trailing zeros dropped, in exponent form (`1e+20`,
/// `1.0000000000000001e-05`) when the exponent is below -4 or at least 17. So `0.1` is
/// `0.10000000000000001`, `1.5` is `1.5`, `-0.0` is `-0`. (Redis 7.2 prints the shortest text
/// that reads back instead.)
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d.is_nan() {
        return "nan".to_string();
    }
    // 17 significant digits, rounded as printf rounds (to nearest, ties to even).
    let sci = format!("{d:.16e}");
    let (mantissa, exponent) = sci.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("a number");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::with_capacity(24);
    if d.is_sign_negative() {
        out.push('-');
    }
    let point = |out: &mut String, fraction: &str| {
        let fraction = fraction.trim_end_matches('0');
        if !fraction.is_empty() {
            out.push('.');
            out.push_str(fraction);
        }
    };
    if (-4..17).contains(&exponent) {
        if exponent >= 0 {
            let (whole, fraction) = digits.split_at(exponent as usize + 1);
            out.push_str(whole);
            point(&mut out, fraction);
        } else {
            out.push('0');
            let zeros = "0".repeat((-exponent - 1) as usize);
            point(&mut out, &(zeros + &digits));
        }
    } else {
        let (first, fraction) = digits.split_at(1);
        out.push_str(first);
        point(&mut out, fraction);
        let sign = if exponent < 0 { '-' } else { '+' };
        out.push_str(&format!("e{sign}{:02}", exponent.unsigned_abs()));
    }
    out
}

/// A reply's header line: `kind`, `n` in decimal (negative if `minus`), CRLF. Every element
/// of an array reply has one, so it is written digit by digit rather than through `write!`.
fn header(out: &mut Vec<u8>, kind: u8, n: u64, minus: bool) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push(kind);
    if minus {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_lengths_encode_as_write_does() {
        for n in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            99,
            12345,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            let mut out = Vec::new();
            Reply::Integer(n).encode(2, &mut out);
            assert_eq!(out, format!(":{n}\r\n").into_bytes());
        }
        for len in [0usize, 1, 9, 10, 100, 65_536] {
            let mut out = Vec::new();
            Reply::Bulk(vec![b'x'; len]).encode(2, &mut out);
            assert_eq!(
                out[..out.len() - len - 2],
                *format!("${len}\r\n").as_bytes()
            );
        }
    }

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_requests_parse_whole_or_not_at_all() {
        let req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nva\r\nl\r\n*1\r\n$4\r\nPING\r\n";
        let first = 31;
        assert_eq!(
            parse(req, &Limits::default(), true),
            Parsed::Request(args(&["SET", "k", "va\r\nl"]), first)
        );
        // Every strict prefix of the first request is incomplete.
        for cut in 0..first {
            assert_eq!(
                parse(&req[..cut], &Limits::default(), true),
                Parsed::Incomplete,
                "{cut}"
            );
        }
        assert_eq!(
            parse(&req[first..], &Limits::default(), true),
            Parsed::Request(args(&["PING"]), req.len() - first)
        );
        assert_eq!(
            parse(b"*0\r\n", &Limits::default(), true),
            Parsed::Request(vec![], 4)
        );
    }

    #[test]
    fn malformed_requests_get_redis_errors() {
        let l = Limits::default();
        let bad = |r: &[u8]| match parse(r, &l, true) {
            Parsed::Invalid(e) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            bad(b"*x\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            bad(b"*1\r\n+PING\r\n"),
            "ERR Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            bad(b"*1\r\n$-5\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            bad(b"*1\r\n$2\r\nabcd\r\n"),
            "ERR Protocol error: expected CRLF after a bulk string"
        );
        let small = Limits {
            max_bulk_len: 4,
            max_args: 2,
            max_inline_len: 16,
            max_request_len: 12,
        };
        assert!(matches!(
            parse(b"*1\r\n$5\r\n", &small, true),
            Parsed::Invalid(_)
        ));
        // Two bulk strings each within their limit, together over the request's.
        assert!(matches!(
            parse(b"*2\r\n$4\r\nabcd\r\n$4\r\n", &small, true),
            Parsed::Invalid(_)
        ));
        assert_eq!(parse(b"*1\r\n$4\r\nab", &small, true), Parsed::Incomplete);
        assert!(matches!(parse(b"*3\r\n", &small, true), Parsed::Invalid(_)));
        assert!(matches!(
            parse(&[b'a'; 17], &small, true),
            Parsed::Invalid(_)
        ));
        assert_eq!(parse(&[b'a'; 16], &small, true), Parsed::Incomplete);
    }

    #[test]
    fn unauthenticated_clients_may_announce_only_small_requests() {
        let l = Limits::default();
        let bad = |r: &[u8]| match parse(r, &l, false) {
            Parsed::Invalid(e) => e,
            other => panic!("{other:?}"),
        };
        // Refused on the header alone: nothing announced is waited for.
        assert_eq!(
            bad(b"*11\r\n"),
            "ERR Protocol error: unauthenticated multibulk length"
        );
        assert_eq!(
            bad(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n"),
            "ERR Protocol error: unauthenticated bulk length"
        );
        let auth = b"*2\r\n$4\r\nAUTH\r\n$16384\r\n";
        assert_eq!(parse(auth, &l, false), Parsed::Incomplete);
        assert_eq!(parse(b"*10\r\n", &l, false), Parsed::Incomplete);
        assert_eq!(parse(b"*11\r\n", &l, true), Parsed::Incomplete);
    }

    #[test]
    fn inline_requests_split_like_redis() {
        let l = Limits::default();
        assert_eq!(
            parse(b"SET  k \"a b\\x41\\n\" 'it\\'s'\r\n", &l, true),
            Parsed::Request(args(&["SET", "k", "a bA\n", "it's"]), 28)
        );
        assert_eq!(
            parse(b"PING\n", &l, true),
            Parsed::Request(args(&["PING"]), 5)
        );
        assert_eq!(parse(b"\r\n", &l, true), Parsed::Request(vec![], 2));
        assert_eq!(parse(b"GET k", &l, true), Parsed::Incomplete);
        assert!(matches!(
            parse(b"SET \"k\r\n", &l, true),
            Parsed::Invalid(_)
        ));
        assert!(matches!(
            parse(b"SET \"k\"v\r\n", &l, true),
            Parsed::Invalid(_)
        ));
    }

    #[test]
    fn replies_encode_for_each_version() {
        let enc = |r: Reply, v: u8| {
            let mut out = Vec::new();
            r.encode(v, &mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(enc(Reply::ok(), 2), "+OK\r\n");
        assert_eq!(enc(Reply::error("ERR bad\nthing"), 2), "-ERR bad thing\r\n");
        assert_eq!(enc(Reply::Integer(-3), 2), ":-3\r\n");
        assert_eq!(enc(Reply::bulk("hi"), 2), "$2\r\nhi\r\n");
        assert_eq!(enc(Reply::Null, 2), "$-1\r\n");
        assert_eq!(enc(Reply::Null, 3), "_\r\n");
        assert_eq!(enc(Reply::NullArray, 2), "*-1\r\n");
        let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Integer(1))]);
        assert_eq!(enc(map.clone(), 2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(map, 3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(Reply::Double(1.5), 2), "$3\r\n1.5\r\n");
        let set = Reply::Set(vec![Reply::status("fast")]);
        assert_eq!(enc(set.clone(), 2), "*1\r\n+fast\r\n");
        assert_eq!(enc(set, 3), "~1\r\n+fast\r\n");
        assert_eq!(enc(Reply::Double(f64::INFINITY), 3), ",inf\r\n");
        assert_eq!(enc(Reply::Verbatim(b"a:1".to_vec()), 2), "$3\r\na:1\r\n");
        assert_eq!(
            enc(Reply::Verbatim(b"a:1".to_vec()), 3),
            "=7\r\ntxt:a:1\r\n"
        );
        assert_eq!(enc(Reply::Double(0.1), 3), ",0.10000000000000001\r\n");
    }

    #[test]
    fn doubles_print_as_printf_17g() {
        // Each against C's printf("%.17g") (Python's '%.17g' % x gives the same).
        for (d, text) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.5, "-2.5"),
            (0.1, "0.10000000000000001"),
            (0.30000000000000004, "0.30000000000000004"),
            (1e-5, "1.0000000000000001e-05"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012344999999999999"),
            (1e15, "1000000000000000"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e20, "1e+20"),
            (1e100, "1e+100"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (2.5e-300, "2.5e-300"),
            (12345.678, "12345.678"),
            (99999999999999999.0, "1e+17"),
            (0.5, "0.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(format_double(d), text, "{d:e}");
        }
    }

    #[test]
    fn random_doubles_print_as_printf_17g() {
        // Bits of random doubles and 1.2345e-8..1.2345e19, with Python's '%.17g' of each.
        for (bits, text) in [
            (0xf2a74de452e6b438, "-1.989032661366619e+244"),
            (0x6513270e269e0d37, "7.761117632285041e+178"),
            (0x0c5c7fd0a6a3a450, "3.980498358697587e-249"),
            (0xd23f0824128b2f33, "-1.5432835417340557e+88"),
            (0x1818e811892f902b, "1.3647584518757569e-192"),
            (0x9531985d5d9dc9f8, "-1.3701135617873088e-206"),
            (0xe8e25d940ed90475, "-1.7160537630466207e+197"),
            (0x36f675cc81e74ef5, "6.2946752411953861e-44"),
            (0x1600a35a099950d8, "1.0613447212142254e-202"),
            (0x6b0d549b6f03675a, "4.7083251603875462e+207"),
            (0x3d9c172411e20b8f, "6.3870161585135632e-12"),
            (0x8d116ece1738f7d9, "-9.9731303785687331e-246"),
            (0x0f21ddb66cad4a26, "8.7797532256802712e-236"),
            (0x90c192cfd3ac94af, "-5.7955032484989932e-228"),
            (0xf28c105d1fb17c23, "-5.9881801593860111e+243"),
            (0xa170b33839263059, "-1.3060523885277959e-147"),
            (0x953f48f1a09f76b5, "-2.4361176994848409e-206"),
            (0x0fd630f1f29d0da9, "2.2333869991501741e-232"),
            (0x95e60af593bd04cf, "-3.5152797062666699e-203"),
            (0x0cb1e29c658cda14, "1.5987381841032883e-247"),
            (0x3898d190f9ebdacc, "4.6678633181812096e-36"),
            (0x8e81973e0becd7b0, "-8.4418727921054556e-239"),
            (0x2217beaddbc496cb, "1.9015657400796622e-144"),
            (0x6b4cb2424a23d596, "7.370437700706684e+208"),
            (0x8a6a63ec24ede6a4, "-1.7163996725272777e-258"),
            (0x922766581e27a1c0, "-3.2367190832119987e-221"),
            (0x8f6d05584ef8aa38, "-2.2818334634712625e-234"),
            (0xae97ba94d0eda82f, "-3.0536383926309363e-84"),
            (0x1a61dbe22e44158b, "1.3449551894627777e-181"),
            (0x923a736994e3bf91, "-7.3174959760626057e-221"),
            (0x301850c5a38fd547, "5.2498223088143036e-77"),
            (0x18f135d25f557203, "1.5450754142984396e-188"),
            (0xb64ce4228c38fb29, "-3.9536256982247919e-47"),
            (0x907a70c31012f037, "-2.7249126747649799e-229"),
            (0x9e7769b10f4205b4, "-6.5051418615487723e-162"),
            (0x7f15052434b9b5df, "1.4414848395559941e+304"),
            (0x881ed162ae2eb154, "-1.4583679262758548e-269"),
            (0xc6f877186d76b07e, "-7.9394166688077208e+33"),
            (0x7731af10506bf2ef, "1.4255183989699612e+266"),
            (0xec66a78795e761d1, "-1.5253157012324029e+214"),
            (0x3e4a82bc4b32f8e2, "1.2344999999999999e-08"),
            (0x3e8091b5aeffdb8d, "1.2344999999999998e-07"),
            (0x3eb4b6231abfd270, "1.2344999999999998e-06"),
            (0x3ee9e3abe16fc70d, "1.2345e-05"),
            (0x3f202e4b6ce5dc68, "0.00012344999999999999"),
            (0x3f5439de481f5382, "0.0012344999999999999"),
            (0x3f894855da272863, "0.012345"),
            (0x3fbf9a6b50b0f27c, "0.12345"),
            (0x3ff3c083126e978d, "1.2344999999999999"),
            (0x4028b0a3d70a3d70, "12.344999999999999"),
            (0x405edccccccccccc, "123.44999999999999"),
            (0x40934a0000000000, "1234.5"),
            (0x40c81c8000000000, "12345"),
            (0x40fe23a000000000, "123450"),
            (0x4132d64400000000, "1234500"),
            (0x41678bd500000000, "12345000"),
            (0x419d6eca40000000, "123450000"),
            (0x41d2653e68000000, "1234500000"),
            (0x4206fe8e02000000, "12345000000"),
            (0x423cbe3182800000, "123450000000"),
            (0x4271f6def1900000, "1234500000000"),
            (0x42a67496adf40000, "12345000000000"),
            (0x42dc11bc59710000, "123450000000000"),
            (0x43118b15b7e6a000, "1234500000000000"),
            (0x4345eddb25e04800, "12345000000000000"),
            (0x437b6951ef585a00, "1.2345e+17"),
            (0x43b121d335973840, "1.2345e+18"),
            (0x43e56a4802fd0650, "1.2345e+19"),
        ] {
            assert_eq!(format_double(f64::from_bits(bits)), text, "{bits:#x}");
        }
    }
}
