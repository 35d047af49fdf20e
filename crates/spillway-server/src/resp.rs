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
                let _ = write!(out, ":{n}\r\n");
            }
            Reply::Bulk(data) => {
                let _ = write!(out, "${}\r\n", data.len());
                out.extend_from_slice(data);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Null if resp >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::Null => out.extend_from_slice(b"$-1\r\n"),
            Reply::NullArray if resp >= 3 => out.extend_from_slice(b"_\r\n"),
            Reply::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                let _ = write!(out, "*{}\r\n", items.len());
                for item in items {
                    item.encode(resp, out);
                }
            }
            Reply::Set(items) => {
                let kind = if resp >= 3 { '~' } else { '*' };
                let _ = write!(out, "{kind}{}\r\n", items.len());
                for item in items {
                    item.encode(resp, out);
                }
            }
            Reply::Map(pairs) => {
                if resp >= 3 {
                    let _ = write!(out, "%{}\r\n", pairs.len());
                } else {
                    let _ = write!(out, "*{}\r\n", pairs.len() * 2);
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

/// A double as Redis prints it: the shortest text that reads back the same, `inf`/`-inf`.
pub fn format_double(d: f64) -> String {
    if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{d}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
