//! A differential test: the same commands sent to a real `redis-server` and to `spillway serve`
//! must get the same replies, byte for byte. The script is one command a line in [`SCRIPT`];
//! it runs once a command at a time, once pipelined (all of it written before any reply is
//! read), and [`INLINE`] checks inline requests (what telnet and `redis-cli` in a pipe send).
//! [`EXPIRING`] waits for keys to expire between its commands. `incrbyfloat` sends both
//! 60,000 INCRBYFLOATs of random numbers of every form `strtold` reads.
//!
//! Needs Debian's `redis-server` package; `.ci/run` installs it and runs these tests.
//!
//! Left out of the script, because their replies differ by design:
//! - INFO but for the fields and sections both have (`ops.rs` compares those: `Fields`,
//!   `Sections`), HELLO (2 or 3), COMMAND DOCS, COUNT and LIST, the HELP of containers,
//!   CONFIG GET of most settings: they describe the server, and we are not Redis (`COMMAND
//!   INFO` of every command we have is compared in a test of its own);
//! - CLIENT ID: connection numbers depend on what connected before;
//! - `avg_ttl` in INFO keyspace: Redis's is a running estimate its expiry cycle keeps, ours the
//!   mean of the keys' TTLs (`keys=` and `expires=` are compared);
//! - DBSIZE and INFO's `keys=` just after keys expired: Redis counts them until its expiry cycle
//!   (or a read) deletes them, we never do (`EXPIRING` reads them first);
//! - SHUTDOWN that succeeds: it ends the server (`tests/serve.rs` tests it);
//! - bytes that are not UTF-8 echoed in an error (an unknown command's name): we send U+FFFD;
//! - CONFIG SET of values Redis takes and we refuse (`appendonly no`, `save "900 1"`,
//!   `maxmemory 1gb`: no snapshots, no eviction) and of settings we do not have; CONFIG
//!   REWRITE (`redis_compat/ops.rs` compares CONFIG SET's errors and the values both take);
//! - CLIENT LIST, CLIENT INFO and CLIENT KILL of live clients: ids, addresses and ages differ
//!   (`tests/operations.rs` checks their form; `ops.rs` their errors).
//! - blocking pops served by another client's push (one connection here: `tests/serve.rs`
//!   tests them), and their timeouts in hex (`0x1p-3`) or past an f64's range (`1e5000`):
//!   Redis reads a long double.

use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use spillway_server::{run, Config, Fsync};

mod common;

/// How a line's two replies are compared.
#[derive(Clone, Copy, Debug)]
enum Compare {
    /// Equal as they are.
    Exact,
    /// Equal once every array in them is sorted: for replies whose order Redis leaves
    /// unspecified (KEYS, SCAN's keys).
    Sorted,
    /// Flat arrays of the same pairs, in any order (`HGETALL`).
    Pairs,
    /// Arrays (or RESP3 maps) of the same length (random picks: `HRANDFIELD key 3`; `HELLO
    /// 3`'s description of the server); other replies equal.
    Len,
    /// The same `dbN:...` lines of `INFO keyspace` (the rest of INFO describes the server).
    DbLines,
    /// As `DbLines`, but for `avg_ttl` (Redis's is an estimate kept by its expiry cycle).
    DbCounts,
    /// Integers at most this far apart: TTLs and expiry times from now, which the two servers
    /// compute from clocks read a little apart.
    Near(i64),
    /// The same values of these `field:value` lines of an INFO reply, which both must have
    /// (the rest describes the server).
    Fields(&'static [&'static str]),
    /// The same `# Section` titles of an INFO reply, in the same order.
    Sections,
}

use Compare::{DbCounts, DbLines, Exact, Fields, Len, Near, Pairs, Sections, Sorted};

/// 150 characters: Redis cuts an unknown command's name and arguments at 128 in its error.
const LONG: &str = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz012345";

/// The commands, in order, on one connection: later lines see what earlier ones wrote. Add new
/// lines before the final QUIT (the runner checks that both servers close the connection
/// after it).
/// A script: one command a line, with how its replies are compared.
type Script = &'static [(Compare, &'static [&'static str])];

// Scripts of their own, one file per group of commands (`redis_compat/*.rs`): each has a
// `SCRIPT` and the two tests that run it (one command at a time, pipelined).
#[path = "redis_compat/scripts.rs"]
mod scripts;

// INCRBYFLOAT on random pairs.
#[path = "redis_compat/incrbyfloat.rs"]
mod incrbyfloat;

const SCRIPT: Script = &[
    // PING, ECHO, SELECT (both have 16 databases).
    (Exact, &["PING"]),
    (Exact, &["PING", "hello"]),
    (Exact, &["PING", ""]),
    (Exact, &["PING", "a", "b"]),
    (Exact, &["ECHO", "hi"]),
    (Exact, &["ECHO", ""]),
    (Exact, &["ECHO", "a\r\nb\0c"]),
    (Exact, &["ECHO"]),
    (Exact, &["ECHO", "a", "b"]),
    (Exact, &["SELECT", "0"]),
    (Exact, &["SELECT", "1"]),
    (Exact, &["SELECT", "-1"]),
    (Exact, &["SELECT", "x"]),
    (Exact, &["SELECT", "00"]),
    (Exact, &["SELECT"]),
    (Exact, &["SELECT", "0", "1"]),
    // GET and SET with its options.
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "k", "v"]),
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "k", "v2", "NX"]),
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "k", "v3", "XX"]),
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "new", "v", "XX"]),
    (Exact, &["GET", "new"]),
    (Exact, &["SET", "new", "v", "NX"]),
    (Exact, &["GET", "new"]),
    (Exact, &["SET", "k", "v4", "GET"]),
    (Exact, &["SET", "absent", "v", "GET"]),
    (Exact, &["GET", "absent"]),
    (Exact, &["SET", "k", "v5", "NX", "GET"]),
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "k", "v6", "XX", "GET"]),
    (Exact, &["SET", "absent2", "v", "XX", "GET"]),
    (Exact, &["GET", "absent2"]),
    (Exact, &["SET", "absent3", "v", "NX", "GET"]),
    (Exact, &["GET", "absent3"]),
    (Exact, &["SET", "k", "v7", "GET", "XX"]),
    (Exact, &["SET", "k", "v8", "nx"]),
    (Exact, &["SET", "k", "v8", "xx", "get"]),
    (Exact, &["SET", "k", "v9", "NX", "NX"]),
    (Exact, &["SET", "k", "v9", "XX", "XX"]),
    (Exact, &["SET", "k", "v9", "GET", "GET"]),
    (Exact, &["SET", "k", "x", "NX", "XX"]),
    (Exact, &["SET", "k", "x", "XX", "NX"]),
    (Exact, &["SET", "k", "x", "GET", "NX", "XX"]),
    (Exact, &["SET", "k", "x", "FOO"]),
    (Exact, &["SET", "k", "x", ""]),
    (Exact, &["SET", "k", "x", "NX", "FOO"]),
    (Exact, &["GET", "k"]),
    (Exact, &["SET", "k"]),
    (Exact, &["SET"]),
    (Exact, &["GET"]),
    (Exact, &["GET", "a", "b"]),
    // Empty keys and values; binary ones, with CRLF and NUL inside.
    (Exact, &["SET", "", ""]),
    (Exact, &["GET", ""]),
    (Exact, &["EXISTS", ""]),
    (Exact, &["STRLEN", ""]),
    (Exact, &["SET", "empty", ""]),
    (Exact, &["GET", "empty"]),
    (Exact, &["STRLEN", "empty"]),
    (Exact, &["SET", "bin\r\n\0key", "v\r\n\0\r\n$3\r\n"]),
    (Exact, &["GET", "bin\r\n\0key"]),
    (Exact, &["STRLEN", "bin\r\n\0key"]),
    (Exact, &["APPEND", "bin\r\n\0key", "\0"]),
    (Exact, &["GET", "bin\r\n\0key"]),
    (Exact, &["MGET", "bin\r\n\0key", "", "empty"]),
    // SETNX, GETSET, GETDEL.
    (Exact, &["SETNX", "sn", "1"]),
    (Exact, &["SETNX", "sn", "2"]),
    (Exact, &["GET", "sn"]),
    (Exact, &["SETNX", "sn"]),
    (Exact, &["SETNX", "sn", "1", "2"]),
    (Exact, &["GETSET", "gs", "1"]),
    (Exact, &["GETSET", "gs", "2"]),
    (Exact, &["GET", "gs"]),
    (Exact, &["GETSET", "gs"]),
    (Exact, &["GETSET", "gs", "1", "2"]),
    (Exact, &["GETDEL", "gs"]),
    (Exact, &["GETDEL", "gs"]),
    (Exact, &["GET", "gs"]),
    (Exact, &["GETDEL"]),
    (Exact, &["GETDEL", "a", "b"]),
    // DEL, UNLINK, EXISTS: counts, missing keys, duplicates.
    (Exact, &["MSET", "d1", "1", "d2", "2", "d3", "3"]),
    (Exact, &["EXISTS", "d1", "d2", "d3", "nope"]),
    (Exact, &["EXISTS", "d1", "d1", "d1"]),
    (Exact, &["EXISTS", "nope"]),
    (Exact, &["DEL", "d1", "nope"]),
    (Exact, &["DEL", "d1"]),
    (Exact, &["DEL", "d2", "d2"]),
    (Exact, &["EXISTS", "d2"]),
    (Exact, &["UNLINK", "d3", "d3", "nope"]),
    (Exact, &["UNLINK", "d3"]),
    (Exact, &["MSET", "u1", "1", "u2", "2"]),
    (Exact, &["UNLINK", "u1", "u2"]),
    (Exact, &["MGET", "u1", "u2"]),
    (Exact, &["DEL"]),
    (Exact, &["UNLINK"]),
    (Exact, &["EXISTS"]),
    // MGET, MSET, MSETNX.
    (Exact, &["MGET", "k", "nope", "sn"]),
    (Exact, &["MGET", "nope"]),
    (Exact, &["MGET"]),
    (Exact, &["MSET", "m1", "a", "m2", "b"]),
    (Exact, &["MGET", "m1", "m2", "m1"]),
    (Exact, &["MSET", "m1", "x", "m1", "y"]),
    (Exact, &["GET", "m1"]),
    (Exact, &["MSET"]),
    (Exact, &["MSET", "m1"]),
    (Exact, &["MSET", "m1", "a", "m2"]),
    (Exact, &["MSETNX", "n1", "a", "n2", "b"]),
    (Exact, &["MSETNX", "n2", "c", "n3", "d"]),
    (Exact, &["MGET", "n1", "n2", "n3"]),
    (Exact, &["MSETNX", "n4", "a", "n4", "b"]),
    (Exact, &["GET", "n4"]),
    (Exact, &["MSETNX"]),
    (Exact, &["MSETNX", "n5"]),
    (Exact, &["MSETNX", "n5", "a", "n6"]),
    (Exact, &["EXISTS", "n5"]),
    // STRLEN, APPEND.
    (Exact, &["STRLEN", "nope"]),
    (Exact, &["STRLEN", "k"]),
    (Exact, &["APPEND", "ap", "hello"]),
    (Exact, &["APPEND", "ap", " world"]),
    (Exact, &["APPEND", "ap", ""]),
    (Exact, &["GET", "ap"]),
    (Exact, &["APPEND", "ap2", ""]),
    (Exact, &["EXISTS", "ap2"]),
    (Exact, &["GET", "ap2"]),
    (Exact, &["STRLEN"]),
    (Exact, &["STRLEN", "a", "b"]),
    (Exact, &["APPEND", "ap"]),
    (Exact, &["APPEND", "ap", "a", "b"]),
    // Counters: what an increment accepts, what a counter may hold, overflow.
    (Exact, &["INCR", "c"]),
    (Exact, &["INCR", "c"]),
    (Exact, &["DECR", "c"]),
    (Exact, &["INCRBY", "c", "10"]),
    (Exact, &["INCRBY", "c", "-20"]),
    (Exact, &["DECRBY", "c", "5"]),
    (Exact, &["DECRBY", "c", "-4"]),
    (Exact, &["INCRBY", "c", "0"]),
    (Exact, &["GET", "c"]),
    (Exact, &["DECR", "newc"]),
    (Exact, &["INCRBY", "c", "+1"]),
    (Exact, &["INCRBY", "c", " 1"]),
    (Exact, &["INCRBY", "c", "1 "]),
    (Exact, &["INCRBY", "c", "01"]),
    (Exact, &["INCRBY", "c", "-0"]),
    (Exact, &["INCRBY", "c", "-01"]),
    (Exact, &["INCRBY", "c", "1.5"]),
    (Exact, &["INCRBY", "c", ""]),
    (Exact, &["INCRBY", "c", "9223372036854775808"]),
    (Exact, &["INCRBY", "c", "99999999999999999999999"]),
    (Exact, &["DECRBY", "c", "-9223372036854775808"]),
    (Exact, &["DECRBY", "c", "9223372036854775807"]),
    (Exact, &["DECRBY", "c", "+1"]),
    (Exact, &["GET", "c"]),
    (Exact, &["SET", "big", "9223372036854775807"]),
    (Exact, &["INCR", "big"]),
    (Exact, &["INCRBY", "big", "0"]),
    (Exact, &["DECRBY", "big", "-1"]),
    (Exact, &["SET", "small", "-9223372036854775808"]),
    (Exact, &["DECR", "small"]),
    (Exact, &["DECRBY", "small", "1"]),
    (Exact, &["INCRBY", "small", "-1"]),
    (Exact, &["INCRBY", "small", "9223372036854775807"]),
    (Exact, &["SET", "small", "-9223372036854775808"]),
    (Exact, &["INCRBY", "small", "-9223372036854775808"]),
    (Exact, &["SET", "v", "+1"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", " 1"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "1 "]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "01"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "00"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "-0"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "1.0"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "abc"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "9223372036854775808"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "12345678901234567890123"]),
    (Exact, &["DECR", "v"]),
    (Exact, &["GET", "v"]),
    (Exact, &["INCR", "empty"]),
    (Exact, &["GET", "empty"]),
    (Exact, &["SET", "v", "0"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["SET", "v", "-1"]),
    (Exact, &["INCR", "v"]),
    (Exact, &["INCR", "bin\r\n\0key"]),
    (Exact, &["INCR"]),
    (Exact, &["INCR", "a", "b"]),
    (Exact, &["DECR"]),
    (Exact, &["DECR", "a", "b"]),
    (Exact, &["INCRBY", "c"]),
    (Exact, &["INCRBY", "c", "1", "2"]),
    (Exact, &["DECRBY", "c"]),
    (Exact, &["DECRBY", "c", "1", "2"]),
    // CLIENT SETNAME / GETNAME.
    (Exact, &["CLIENT", "GETNAME"]),
    (Exact, &["CLIENT", "SETNAME", "me"]),
    (Exact, &["CLIENT", "GETNAME"]),
    (Exact, &["CLIENT", "SETNAME", "a b"]),
    (Exact, &["CLIENT", "SETNAME", "a\nb"]),
    (Exact, &["CLIENT", "SETNAME", "caf\u{e9}"]),
    (Exact, &["CLIENT", "SETNAME", "a\0"]),
    (Exact, &["CLIENT", "GETNAME"]),
    (Exact, &["CLIENT", "SETNAME", "~!@#$%^&*()"]),
    (Exact, &["CLIENT", "GETNAME"]),
    (Exact, &["CLIENT", "SETNAME", ""]),
    (Exact, &["CLIENT", "GETNAME"]),
    (Exact, &["client", "setname", "Lower"]),
    (Exact, &["client", "getname"]),
    (Exact, &["CLIENT", "SETNAME"]),
    (Exact, &["CLIENT", "SETNAME", "a", "b"]),
    (Exact, &["CLIENT", "GETNAME", "x"]),
    (Exact, &["CLIENT"]),
    (Exact, &["CLIENT", "NOSUCH"]),
    (Exact, &["CLIENT", "nosuch", "x"]),
    // AUTH with no password set, and HELLO's errors (a HELLO that succeeds differs by
    // design, see the top).
    (Exact, &["AUTH", "x"]),
    (Exact, &["AUTH", "default", "x"]),
    (Exact, &["AUTH", "someone", "x"]),
    (Exact, &["AUTH"]),
    (Exact, &["AUTH", "a", "b", "c"]),
    (Exact, &["HELLO", "4"]),
    (Exact, &["HELLO", "1"]),
    (Exact, &["HELLO", "x"]),
    (Exact, &["HELLO", "2", "FOO"]),
    (Exact, &["HELLO", "2", "SETNAME"]),
    // Unknown commands, and names in any case.
    (Exact, &["NOSUCH"]),
    (Exact, &["NOSUCH", "a", "b"]),
    (Exact, &["nosuch", "a"]),
    (Exact, &[""]),
    (Exact, &["NOSUCH", "a\r\nb"]),
    (Exact, &["NOSUCH", LONG]),
    (Exact, &[LONG, "a"]),
    (Exact, &["NOSUCH", "a", LONG]),
    (
        Exact,
        &[
            "NOSUCH", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
            "15", "16", "17", "18", "19", "20",
        ],
    ),
    (Exact, &["ping"]),
    (Exact, &["Echo", "x"]),
    (Exact, &["sEt", "case", "1", "nX"]),
    (Exact, &["gEt", "case"]),
    (Exact, &["mget", "case", "nope"]),
    (Exact, &["incr", "case"]),
    (Exact, &["Del", "case"]),
    (Exact, &["select", "0"]),
    // INCRBYFLOAT: Redis adds in long double and prints with "%.17Lf", trailing zeros cut.
    (Exact, &["SET", "f", "10.50"]),
    (Exact, &["INCRBYFLOAT", "f", "0.1"]),
    (Exact, &["INCRBYFLOAT", "f", "-5"]),
    (Exact, &["SET", "f", "5.0e3"]),
    (Exact, &["INCRBYFLOAT", "f", "2.0e2"]),
    (Exact, &["INCRBYFLOAT", "f", "-5200"]),
    (Exact, &["GET", "f"]),
    (Exact, &["INCRBYFLOAT", "nf", "3"]),
    (Exact, &["INCRBYFLOAT", "nf", "1e-5"]),
    (Exact, &["INCRBYFLOAT", "nf", "+1.5"]),
    (Exact, &["INCRBYFLOAT", "nf", "-0.0"]),
    (Exact, &["INCRBYFLOAT", "nf2", "1e-18"]),
    (Exact, &["INCRBYFLOAT", "c", "1"]),
    (Exact, &["INCRBYFLOAT", "c", "0.5"]),
    (Exact, &["INCR", "c"]),
    (Exact, &["INCRBYFLOAT", "f", "inf"]),
    (Exact, &["INCRBYFLOAT", "f", "-inf"]),
    (Exact, &["INCRBYFLOAT", "f", "nan"]),
    (Exact, &["INCRBYFLOAT", "f", "abc"]),
    (Exact, &["INCRBYFLOAT", "f", ""]),
    (Exact, &["INCRBYFLOAT", "f", " 1"]),
    (Exact, &["INCRBYFLOAT", "f", "1 "]),
    (Exact, &["INCRBYFLOAT", "f", "1e"]),
    (Exact, &["INCRBYFLOAT", "k", "1"]),
    (Exact, &["SET", "f", "1.5 "]),
    (Exact, &["INCRBYFLOAT", "f", "1"]),
    (Exact, &["INCRBYFLOAT", "f"]),
    (Exact, &["INCRBYFLOAT", "f", "1", "2"]),
    // Where a double is not enough: exact decimal sums give what Redis's long double does.
    (Exact, &["SET", "f", "0.1"]),
    (Exact, &["INCRBYFLOAT", "f", "0.2"]),
    (Exact, &["SET", "f", "7"]),
    (Exact, &["INCRBYFLOAT", "f", "1.0e17"]),
    // KEYS and SCAN: the same keys, in any order. SCAN with a COUNT above the number of
    // keys finishes in one call (cursor "0"); other cursors differ by design.
    (Sorted, &["KEYS", "*"]),
    (Sorted, &["KEYS", "m?"]),
    (Sorted, &["KEYS", "n[1-3]"]),
    (Sorted, &["KEYS", "*\r\n*"]),
    (Sorted, &["KEYS", "nomatch*"]),
    (Exact, &["KEYS"]),
    (Exact, &["KEYS", "a", "b"]),
    (Sorted, &["SCAN", "0", "COUNT", "1000"]),
    (Sorted, &["SCAN", "0", "MATCH", "m*", "COUNT", "1000"]),
    (
        Sorted,
        &[
            "scan", "0", "match", "n?", "count", "1000", "type", "string",
        ],
    ),
    (Sorted, &["SCAN", "0", "TYPE", "list", "COUNT", "1000"]),
    (Exact, &["SCAN", "x"]),
    (Exact, &["SCAN", "0", "COUNT", "0"]),
    (Exact, &["SCAN", "0", "COUNT", "x"]),
    (Exact, &["SCAN", "0", "MATCH"]),
    (Exact, &["SCAN", "0", "FOO"]),
    (Exact, &["SCAN"]),
    (Exact, &["DBSIZE"]),
    // FLUSHDB (last: it empties the store for what follows).
    (Exact, &["FLUSHDB", "FOO"]),
    (Exact, &["FLUSHDB", "a", "b"]),
    (Exact, &["FLUSHDB"]),
    (Exact, &["EXISTS", "k", "sn", "m1"]),
    (Sorted, &["KEYS", "*"]),
    (Sorted, &["SCAN", "0"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["SET", "k", "after"]),
    (Exact, &["FLUSHDB", "ASYNC"]),
    (Exact, &["FLUSHALL", "SYNC"]),
    (Exact, &["GET", "k"]),
    // MULTI, EXEC, DISCARD: queued replies, EXEC's array with a command's error among the
    // replies (the others still run), EXECABORT after a command refused while queueing
    // (unknown, wrong arity, not allowed in a transaction), and the errors of misuse.
    (Exact, &["EXEC"]),
    (Exact, &["DISCARD"]),
    (Exact, &["MULTI", "x"]),
    (Exact, &["MULTI"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "1"]),
    (Exact, &["INCR", "t"]),
    (Exact, &["SET", "u", "x"]),
    (Exact, &["INCR", "u"]),
    (Exact, &["GET", "t"]),
    (Exact, &["MGET", "t", "u", "none"]),
    (Exact, &["SET", "t", "v", "NX"]),
    (Exact, &["DEL", "u", "u", "none"]),
    (Exact, &["EXISTS", "t", "u"]),
    (Exact, &["PING"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "t"]),
    (Exact, &["EXEC"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "2"]),
    (Exact, &["DISCARD"]),
    (Exact, &["GET", "t"]),
    (Exact, &["MULTI"]),
    (Exact, &["EXEC"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "3"]),
    (Exact, &["SET", "t"]),
    (Exact, &["GET", "t"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "t"]),
    (Exact, &["MULTI"]),
    (Exact, &["NOSUCH", "t"]),
    (Exact, &["SET", "t", "4"]),
    (Exact, &["EXEC"]),
    (Exact, &["MULTI"]),
    (Exact, &["CLIENT", "NOSUCH"]),
    (Exact, &["EXEC"]),
    (Exact, &["MULTI"]),
    (Exact, &["SHUTDOWN"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "t"]),
    (Exact, &["MULTI"]),
    (Exact, &["WATCH", "t"]),
    (Exact, &["UNWATCH"]),
    (Exact, &["exec"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "5"]),
    (Exact, &["FLUSHDB"]),
    (Exact, &["SET", "after", "flush"]),
    (Exact, &["KEYS", "*"]),
    (Exact, &["EXEC"]),
    // A flush of every database in a transaction, with writes before and after it.
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "7"]),
    (Exact, &["SELECT", "1"]),
    (Exact, &["SET", "one", "1"]),
    (Exact, &["FLUSHALL", "ASYNC"]),
    (Exact, &["GET", "one"]),
    (Exact, &["INCR", "one"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["SELECT", "0"]),
    (Exact, &["MGET", "t", "after"]),
    (Exact, &["SET", "t", "8"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "t"]),
    (Exact, &["DBSIZE"]),
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SELECT", "1"]),
    (Exact, &["GET", "one"]),
    (Exact, &["FLUSHDB", "SYNC"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["SELECT", "0"]),
    (Exact, &["DISCARD", "x"]),
    (Exact, &["EXEC", "x"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "t", "6"]),
    (Exact, &["EXEC", "x"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "t"]),
    (Exact, &["FLUSHALL"]),
    // Databases: keys of their own, DBSIZE and FLUSHDB of the selected one, SWAPDB, INFO
    // keyspace's lines (only those of databases holding keys, in both), SELECT queued in a
    // transaction and in force after its EXEC.
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SET", "d0", "zero"]),
    (Exact, &["SELECT", "1"]),
    (Exact, &["GET", "d0"]),
    (Exact, &["MSET", "d1", "one", "x", "1"]),
    (Exact, &["INCR", "x"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["SELECT", "15"]),
    (Exact, &["SET", "d15", "fifteen"]),
    (Exact, &["SELECT", "16"]),
    (Exact, &["DBSIZE"]),
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SWAPDB", "0", "1"]),
    (Exact, &["SELECT", "0"]),
    (Sorted, &["KEYS", "*"]),
    (Exact, &["SELECT", "1"]),
    (Exact, &["GET", "d0"]),
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SWAPDB", "1", "1"]),
    (Exact, &["SWAPDB", "2", "3"]),
    (Exact, &["SWAPDB", "1", "x"]),
    (Exact, &["SWAPDB", "x", "1"]),
    (Exact, &["SWAPDB", "x", "y"]),
    (Exact, &["SWAPDB", "1", "16"]),
    (Exact, &["SWAPDB", "-1", "0"]),
    (Exact, &["SWAPDB", "1"]),
    (Exact, &["FLUSHDB"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["GET", "d0"]),
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SELECT", "0"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["MULTI"]),
    (Exact, &["SELECT", "3"]),
    (Exact, &["SET", "m", "three"]),
    (Exact, &["SELECT", "99"]),
    (Exact, &["SELECT", "4"]),
    (Exact, &["DBSIZE"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "m"]),
    (Exact, &["SELECT", "3"]),
    (Exact, &["GET", "m"]),
    (Exact, &["FLUSHALL"]),
    (Exact, &["DBSIZE"]),
    (DbLines, &["INFO", "keyspace"]),
    (Exact, &["SELECT", "0"]),
    // WATCH on one connection: its own write after WATCH makes EXEC run nothing; an unchanged
    // key lets it run; UNWATCH, DISCARD and EXEC end the watch; a flush of a key watched.
    // (Other connections' writes: `watch_across_connections_as_redis`.)
    (Exact, &["WATCH"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["SET", "w", "1"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "w", "2"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "w"]),
    (Exact, &["WATCH", "w", "v"]),
    (Exact, &["GET", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["UNWATCH"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["DISCARD"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["NOSUCH"]),
    (Exact, &["EXEC"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["MULTI"]),
    (Exact, &["INCR", "w"]),
    (Exact, &["EXEC"]),
    (Exact, &["WATCH", "w"]),
    (Exact, &["FLUSHDB"]),
    (Exact, &["MULTI"]),
    (Exact, &["SET", "w", "after"]),
    (Exact, &["EXEC"]),
    (Exact, &["GET", "w"]),
    (Exact, &["FLUSHALL"]),
    // Expiry, with times fixed far ahead or long past so that both answer the same; TTLs
    // from now compared within a second (the two servers' clocks are read apart). What
    // takes time to pass: [`EXPIRING`].
    (Exact, &["SET", "t", "v"]),
    (Exact, &["TTL", "t"]),
    (Exact, &["PTTL", "t"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["TTL", "absent"]),
    (Exact, &["PTTL", "absent"]),
    (Exact, &["EXPIRETIME", "absent"]),
    (Exact, &["PEXPIRETIME", "absent"]),
    (Exact, &["EXPIRE", "absent", "100"]),
    (Exact, &["PERSIST", "absent"]),
    (Exact, &["PERSIST", "t"]),
    (Exact, &["PEXPIREAT", "t", "4000000000000", "XX"]),
    (Exact, &["PEXPIREAT", "t", "4000000000000", "NX"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Exact, &["PEXPIREAT", "t", "3000000000000", "NX"]),
    (Exact, &["PEXPIREAT", "t", "3000000000000", "GT"]),
    (Exact, &["PEXPIREAT", "t", "5000000000000", "GT"]),
    (Exact, &["PEXPIREAT", "t", "6000000000000", "LT"]),
    (Exact, &["PEXPIREAT", "t", "4500000000000", "LT"]),
    (Exact, &["PEXPIREAT", "t", "4500000000000", "xx", "lt"]),
    (Exact, &["PEXPIREAT", "t", "4400000000000", "LT", "XX"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["PERSIST", "t"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["PEXPIREAT", "t", "4000000000000", "GT"]),
    (Exact, &["PEXPIREAT", "t", "4000000000000", "LT"]),
    (Exact, &["EXPIREAT", "t", "4100000000", "gt", "xx"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Exact, &["PEXPIREAT", "t", "1999999999999"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Exact, &["PEXPIREAT", "t", "1999999999499"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Exact, &["PEXPIREAT", "t", "9223372036854775807"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["EXPIRETIME", "t"]),
    (Near(1000), &["PTTL", "t"]),
    (Near(1), &["TTL", "t"]),
    (Exact, &["EXPIREAT", "t", "9223372036854775"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["EXPIRE", "t", "100"]),
    (Exact, &["TTL", "t"]),
    (Near(1000), &["PTTL", "t"]),
    (Near(1), &["EXPIRETIME", "t"]),
    (Near(1000), &["PEXPIRETIME", "t"]),
    (Exact, &["PEXPIRE", "t", "200000", "GT"]),
    (Exact, &["TTL", "t"]),
    (Exact, &["EXPIRE", "t", "-1", "GT"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["EXPIRE", "t", "-1", "LT"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["TTL", "t"]),
    (Exact, &["SET", "t", "v"]),
    (Exact, &["EXPIRE", "t", "0"]),
    (Exact, &["GET", "t"]),
    (Exact, &["SET", "t", "v"]),
    (Exact, &["EXPIREAT", "t", "1", "LT"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["SET", "t", "v"]),
    (Exact, &["PEXPIREAT", "t", "-5"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["SET", "t", "v"]),
    (Exact, &["EXPIRE", "t", "1", "LT"]),
    (Exact, &["PERSIST", "t"]),
    // EXPIRE's errors, in Redis's order: options, the integer, its range, the key.
    (Exact, &["EXPIRE", "t", "abc", "FOO"]),
    (Exact, &["EXPIRE", "t", "abc", "NX\0junk"]),
    (Exact, &["EXPIRE", "t", "1", "FOO\0junk"]),
    (Exact, &["EXPIRE", "t", "1", ""]),
    (Exact, &["EXPIRE", "t", "1", "a b"]),
    (Exact, &["EXPIRE", "t", "10", "NX", "XX"]),
    (Exact, &["EXPIRE", "t", "10", "nx", "gt"]),
    (Exact, &["EXPIRE", "t", "10", "LT", "NX"]),
    (Exact, &["EXPIRE", "t", "10", "GT", "LT"]),
    (Exact, &["EXPIRE", "t", "10", "XX", "XX"]),
    (Exact, &["EXPIRE", "t", ""]),
    (Exact, &["EXPIRE", "t", "1.5"]),
    (Exact, &["EXPIRE", "t", "9223372036854776"]),
    (Exact, &["EXPIRE", "t", "-9223372036854776"]),
    (Exact, &["EXPIRE", "t", "-9223372036854775"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["SET", "t", "v"]),
    (Exact, &["PEXPIRE", "t", "9223372036854775807"]),
    (Exact, &["EXPIREAT", "t", "9223372036854776"]),
    (Exact, &["PEXPIREAT", "t", "-9223372036854775808"]),
    (Exact, &["EXISTS", "t"]),
    (Exact, &["EXPIRE", "absent", "9223372036854776"]),
    (Exact, &["EXPIRE", "t"]),
    (Exact, &["PEXPIRE"]),
    (Exact, &["EXPIREAT", "t"]),
    (Exact, &["PEXPIREAT", "t"]),
    (Exact, &["TTL"]),
    (Exact, &["TTL", "a", "b"]),
    (Exact, &["PTTL", "a", "b"]),
    (Exact, &["EXPIRETIME"]),
    (Exact, &["PEXPIRETIME", "a", "b"]),
    (Exact, &["PERSIST"]),
    (Exact, &["PERSIST", "a", "b"]),
    // SET's expiry options: with NX, XX and GET, KEEPTTL, and what Redis refuses.
    (Exact, &["SET", "s", "v", "EX", "100"]),
    (Exact, &["TTL", "s"]),
    (Exact, &["SET", "s", "w", "KEEPTTL"]),
    (Exact, &["TTL", "s"]),
    (Exact, &["GET", "s"]),
    (Exact, &["SET", "s", "x", "keepttl", "GET", "XX"]),
    (Exact, &["TTL", "s"]),
    (Exact, &["SET", "s", "y"]),
    (Exact, &["TTL", "s"]),
    (Exact, &["SET", "s", "v", "PXAT", "4000000000000"]),
    (Exact, &["PEXPIRETIME", "s"]),
    (Exact, &["SET", "s", "v", "EXAT", "4000000000"]),
    (Exact, &["PEXPIRETIME", "s"]),
    (Exact, &["SET", "s", "v", "px", "100000"]),
    (Near(1000), &["PTTL", "s"]),
    (Exact, &["SET", "s", "z", "EX", "10", "EX", "20"]),
    (Exact, &["TTL", "s"]),
    (Exact, &["SET", "s", "z", "NX", "EX", "10"]),
    (Exact, &["SET", "s2", "z", "XX", "EX", "10"]),
    (Exact, &["EXISTS", "s2"]),
    (Exact, &["SET", "s2", "z", "NX", "EX", "10", "GET"]),
    (Exact, &["TTL", "s2"]),
    (Exact, &["SET", "s2", "new", "EX", "30", "GET"]),
    (Exact, &["TTL", "s2"]),
    (Exact, &["SET", "s3", "z", "KEEPTTL"]),
    (Exact, &["TTL", "s3"]),
    (Exact, &["SET", "s", "gone", "EXAT", "1"]),
    (Exact, &["GET", "s"]),
    (Exact, &["SET", "s", "v"]),
    (Exact, &["SET", "s", "gone", "PXAT", "1", "GET"]),
    (Exact, &["EXISTS", "s"]),
    (Exact, &["SET", "s", "back", "NX", "PXAT", "1"]),
    (Exact, &["GET", "s"]),
    (Exact, &["SET", "s", "v", "EXAT", "9223372036854775"]),
    (Exact, &["PEXPIRETIME", "s"]),
    (Exact, &["SET", "s", "v", "EX", "0"]),
    (Exact, &["SET", "s", "v", "EX", "-1"]),
    (Exact, &["SET", "s", "v", "PX", "0"]),
    (Exact, &["SET", "s", "v", "EXAT", "0"]),
    (Exact, &["SET", "s", "v", "PXAT", "-1"]),
    (Exact, &["SET", "s", "v", "EX", "abc"]),
    (Exact, &["SET", "s", "v", "EX", ""]),
    (Exact, &["SET", "s", "v", "EX", "9223372036854775"]),
    (Exact, &["SET", "s", "v", "EX", "9223372036854776"]),
    (Exact, &["SET", "s", "v", "PX", "9223372036854775807"]),
    (Exact, &["SET", "s", "v", "EXAT", "9223372036854776"]),
    (Exact, &["SET", "s", "v", "EX", "10", "PX", "10"]),
    (Exact, &["SET", "s", "v", "EXAT", "10", "PXAT", "10"]),
    (Exact, &["SET", "s", "v", "PX", "10", "EX", "10"]),
    (Exact, &["SET", "s", "v", "KEEPTTL", "EX", "5"]),
    (Exact, &["SET", "s", "v", "EX", "5", "KEEPTTL"]),
    (Exact, &["SET", "s", "v", "KEEPTTL", "KEEPTTL"]),
    (Exact, &["SET", "s", "v", "EX"]),
    (Exact, &["SET", "s", "v", "NX", "EX"]),
    (Exact, &["SET", "s", "v", "PERSIST"]),
    (Exact, &["SET", "s", "v", "NX", "EX", "abc"]),
    (Exact, &["SET", "s", "v", "EX", "abc", "FOO"]),
    (Exact, &["SET", "s", "v", "NX\0junk", "GET\0"]),
    (Exact, &["SET", "s", "v", "EXAT\0", "4000000000", "KEEPTTL"]),
    (Exact, &["PEXPIRETIME", "s"]),
    // SETEX, PSETEX, GETEX.
    (Exact, &["SETEX", "x", "100", "v"]),
    (Exact, &["TTL", "x"]),
    (Exact, &["GET", "x"]),
    (Exact, &["PSETEX", "x", "100000", "w"]),
    (Near(1000), &["PTTL", "x"]),
    (Exact, &["GET", "x"]),
    (Exact, &["SETEX", "x", "0", "v"]),
    (Exact, &["SETEX", "x", "-1", "v"]),
    (Exact, &["SETEX", "x", "abc", "v"]),
    (Exact, &["SETEX", "x", "9223372036854775", "v"]),
    (Exact, &["PSETEX", "x", "0", "v"]),
    (Exact, &["PSETEX", "x", "9223372036854775807", "v"]),
    (Exact, &["SETEX", "x", "10"]),
    (Exact, &["SETEX", "x", "10", "v", "w"]),
    (Exact, &["PSETEX", "x"]),
    (Exact, &["GET", "x"]),
    (Exact, &["GETEX", "x"]),
    (Exact, &["GETEX", "x", "PERSIST"]),
    (Exact, &["TTL", "x"]),
    (Exact, &["GETEX", "x", "PERSIST"]),
    (Exact, &["GETEX", "x", "EX", "100"]),
    (Exact, &["TTL", "x"]),
    (Exact, &["GETEX", "x", "PXAT", "4000000000000"]),
    (Exact, &["PEXPIRETIME", "x"]),
    (Exact, &["GETEX", "x", "EXAT", "4100000000"]),
    (Exact, &["EXPIRETIME", "x"]),
    (Exact, &["GETEX", "x", "EX", "5", "EX", "6"]),
    (Exact, &["TTL", "x"]),
    (Exact, &["GETEX", "x", "px", "200000"]),
    (Near(1000), &["PTTL", "x"]),
    (Exact, &["GETEX", "absent"]),
    (Exact, &["GETEX", "absent", "EX", "10"]),
    (Exact, &["GETEX", "absent", "PX", "0"]),
    (Exact, &["GETEX", "x", "PX", "0"]),
    (Exact, &["GETEX", "x", "EX", "abc"]),
    (Exact, &["GETEX", "x", "EXAT", "9223372036854776"]),
    (Exact, &["GETEX", "x", "EX", "10", "PERSIST"]),
    (Exact, &["GETEX", "x", "PERSIST", "EX", "10"]),
    (Exact, &["GETEX", "x", "EX", "10", "PX", "10"]),
    (Exact, &["GETEX", "x", "NX"]),
    (Exact, &["GETEX", "x", "GET"]),
    (Exact, &["GETEX", "x", "KEEPTTL"]),
    (Exact, &["GETEX", "x", "EX"]),
    (Exact, &["GETEX", "absent", "FOO"]),
    (Exact, &["GETEX"]),
    (Exact, &["GETEX", "x", "EXAT", "1"]),
    (Exact, &["EXISTS", "x"]),
    (Exact, &["SET", "x", "v"]),
    (Exact, &["GETEX", "x", "PXAT", "0"]),
    (Exact, &["EXISTS", "x"]),
    // Commands that change a value in place keep its expiry; those that set one clear it.
    (Exact, &["SET", "c", "1", "PXAT", "4000000000000"]),
    (Exact, &["INCR", "c"]),
    (Exact, &["INCRBY", "c", "10"]),
    (Exact, &["DECR", "c"]),
    (Exact, &["DECRBY", "c", "2"]),
    (Exact, &["INCRBYFLOAT", "c", "0.5"]),
    (Exact, &["APPEND", "c", "1"]),
    (Exact, &["GET", "c"]),
    (Exact, &["PEXPIRETIME", "c"]),
    (Exact, &["INCR", "c"]),
    (Exact, &["PEXPIRETIME", "c"]),
    (Exact, &["GETSET", "c", "0"]),
    (Exact, &["PEXPIRETIME", "c"]),
    (Exact, &["PEXPIREAT", "c", "4000000000000"]),
    (Exact, &["MSET", "c", "1", "d", "2"]),
    (Exact, &["PEXPIRETIME", "c"]),
    (Exact, &["SETEX", "c", "100", "v"]),
    (Exact, &["SETNX", "c", "w"]),
    (Exact, &["TTL", "c"]),
    (Exact, &["GETDEL", "c"]),
    (Exact, &["TTL", "c"]),
    (Exact, &["SETEX", "c", "100", "v"]),
    (Exact, &["DEL", "c"]),
    (Exact, &["TTL", "c"]),
    // In a transaction, and in another database; INFO keyspace counts those that expire.
    (Exact, &["MULTI"]),
    (Exact, &["SET", "m", "v"]),
    (Exact, &["EXPIRE", "m", "100"]),
    (Exact, &["TTL", "m"]),
    (Exact, &["PEXPIREAT", "m", "4000000000000", "GT"]),
    (Exact, &["PEXPIRETIME", "m"]),
    (Exact, &["SETEX", "m2", "100", "v"]),
    (Exact, &["INCR", "m3"]),
    (Exact, &["EXPIRE", "m3", "100", "NX"]),
    (Exact, &["INCR", "m3"]),
    (Exact, &["TTL", "m3"]),
    (Exact, &["PERSIST", "m"]),
    (Exact, &["GETEX", "m", "EXAT", "4000000000"]),
    (Exact, &["EXPIRE", "m", "-1"]),
    (Exact, &["EXEC"]),
    (Exact, &["MGET", "m", "m2", "m3"]),
    (Exact, &["TTL", "m2"]),
    (Exact, &["MULTI"]),
    (Exact, &["EXPIRE", "m2", "100", "NX", "XX"]),
    (Exact, &["EXPIRE", "m2"]),
    (Exact, &["EXEC"]),
    (Exact, &["SELECT", "4"]),
    (Exact, &["SET", "t", "four", "PXAT", "4000000000000"]),
    (Exact, &["SET", "u", "four"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (Exact, &["SELECT", "0"]),
    (Exact, &["PEXPIRETIME", "t"]),
    (DbCounts, &["INFO", "keyspace"]),
    (Exact, &["FLUSHALL"]),
    // COMMAND's subcommands and errors (COMMAND INFO of every command: its own test below),
    // other containers' errors, CONFIG GET of a setting Redis has as we do.
    (
        Exact,
        &[
            "COMMAND",
            "INFO",
            "get",
            "nosuch",
            "client|setname",
            "get|x",
            "client|",
        ],
    ),
    (Exact, &["command", "info", "GET"]),
    (Exact, &["COMMAND", "GETKEYS", "GET", "k"]),
    (Exact, &["COMMAND", "GETKEYS", "set", "k", "v", "NX", "GET"]),
    (Exact, &["COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"]),
    (Exact, &["COMMAND", "GETKEYS", "MSET", "a", "1", "b"]),
    (Exact, &["COMMAND", "GETKEYS", "DEL", "a", "b", "c"]),
    (Exact, &["COMMAND", "GETKEYS", "GET"]),
    (Exact, &["COMMAND", "GETKEYS", "GET", "a", "b"]),
    (Exact, &["COMMAND", "GETKEYS", "PING", "x"]),
    (Exact, &["COMMAND", "GETKEYS", "SCAN", "0"]),
    (Exact, &["COMMAND", "GETKEYS", "NOSUCH", "k"]),
    (Exact, &["COMMAND", "GETKEYS", "CLIENT", "SETNAME", "x"]),
    (Exact, &["COMMAND", "GETKEYS", "CLIENT", "NOSUCH", "x"]),
    (Exact, &["COMMAND", "GETKEYS", "GET"]),
    (Exact, &["COMMAND", "GETKEYS"]),
    (Exact, &["COMMAND", "GETKEYSANDFLAGS", "GETDEL", "k"]),
    (Exact, &["COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v"]),
    (
        Exact,
        &["COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "get"],
    ),
    (
        Exact,
        &["COMMAND", "GETKEYSANDFLAGS", "MSETNX", "a", "1", "b", "2"],
    ),
    (
        Exact,
        &["COMMAND", "GETKEYSANDFLAGS", "GETEX", "k", "EX", "1"],
    ),
    (
        Exact,
        &["COMMAND", "GETKEYSANDFLAGS", "SETEX", "k", "1", "v"],
    ),
    (Exact, &["COMMAND", "GETKEYSANDFLAGS", "EXPIRE", "k", "1"]),
    (Exact, &["COMMAND", "GETKEYSANDFLAGS", "TTL", "k"]),
    (Exact, &["COMMAND", "GETKEYSANDFLAGS", "PERSIST", "k"]),
    (
        Exact,
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "SET",
            "k",
            "v",
            "EX",
            "1",
            "GET",
        ],
    ),
    (Exact, &["COMMAND", "COUNT", "x"]),
    (Exact, &["COMMAND", "NOSUCH"]),
    (Exact, &["command", "nosuch", "x"]),
    (Exact, &["COMMAND", "LIST", "FILTERBY", "MODULE", "x"]),
    (Exact, &["COMMAND", "LIST", "FILTERBY", "NOSUCH", "x"]),
    (Exact, &["COMMAND", "LIST", "FILTERBY"]),
    (Exact, &["COMMAND", "LIST", "x"]),
    (Exact, &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"]),
    (Exact, &["COMMAND", "DOCS", "nosuch"]),
    (Exact, &["CLIENT", "HELP", "x"]),
    (Exact, &["CONFIG"]),
    (Exact, &["CONFIG", "NOSUCH"]),
    (Exact, &["config", "nosuch", "x"]),
    (Exact, &["CONFIG", "GET"]),
    (Exact, &["CONFIG", "GET", "databases"]),
    (Exact, &["CONFIG", "GET", "databases", "databases"]),
    (Exact, &["CONFIG", "GET", "databas?"]),
    (Exact, &["CONFIG", "GET", "nosuch"]),
    (Sorted, &["CONFIG", "GET", "save", "databases", "nosuch*"]),
    // SHUTDOWN's errors (SHUTDOWN itself ends the server: tests/serve.rs).
    (Exact, &["SHUTDOWN", "FOO"]),
    (Exact, &["SHUTDOWN", "NOSAVE", "SAVE"]),
    (Exact, &["SHUTDOWN", "NOSAVE", "FOO"]),
    (Exact, &["QUIT"]),
];

/// Inline requests, each on a connection of its own: all its lines at once, everything
/// the server sends read until it closes the connection (after QUIT, or a protocol error).
const INLINE: &[&str] = &[
    "SET a b\r\nGET a\r\nQUIT\r\n",
    "set a b\r\nget a\r\nQUIT\r\n",
    // Double quotes: spaces and escapes inside; single quotes: taken as they are but \'.
    "SET \"a b\" 'x\\n'\r\nGET \"a b\"\r\nSTRLEN \"a b\"\r\nQUIT\r\n",
    "ECHO \"x\\n\\r\\t\\b\\a\\\\\\\"\\x41\\x4g\\q\"\r\nQUIT\r\n",
    "ECHO 'it\\'s' 'a\\\"b'\r\nQUIT\r\n",
    "ECHO \"\"\r\nECHO ''\r\nQUIT\r\n",
    "  ECHO   spaced\t \r\nQUIT\r\n",
    // A blank line gets no reply at all.
    "\r\n   \r\nPING\r\nQUIT\r\n",
    // A bare LF ends a line too.
    "PING\nECHO lf\nQUIT\n",
    "NOSUCH a 'b c'\r\nQUIT\r\n",
    // Bytes that are not UTF-8, which the script's lines cannot hold.
    "SET \"\\xff\\x00\" \"\\xfe\\r\\n\"\r\nGET \"\\xff\\x00\"\r\nQUIT\r\n",
    "GET\r\nQUIT\r\n",
    // Unbalanced quotes: a protocol error, then the connection closes.
    "ECHO \"abc\r\n",
    "ECHO 'abc\r\n",
    "ECHO \"a\"b\r\n",
    "ECHO 'a'b\r\n",
];

#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn the_script_one_command_at_a_time_as_redis() {
    compare_script(SCRIPT, false);
}

#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn the_script_pipelined_as_redis() {
    compare_script(SCRIPT, true);
}

/// Commands on two connections (0 and 1), one at a time in this order: WATCH against another
/// client's writes. Left out, as we differ by design (README.md, "Transactions"): a flush or
/// swap of a watched database whose watched keys exist in neither makes our EXEC run nothing
/// where Redis's runs.
const TWO_CLIENTS: &[(usize, Compare, &[&str])] = &[
    (1, Exact, &["SET", "k", "0"]),
    // Another client's blind write.
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["SET", "k", "1"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["SET", "k", "2"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["GET", "k"]),
    // Read, not written: EXEC runs.
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["GET", "k"]),
    (1, Exact, &["SET", "unwatched", "x"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["INCR", "k"]),
    (0, Exact, &["EXEC"]),
    // UNWATCH.
    (0, Exact, &["WATCH", "k"]),
    (0, Exact, &["UNWATCH"]),
    (1, Exact, &["SET", "k", "5"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["INCR", "k"]),
    (0, Exact, &["EXEC"]),
    // One of several keys, watched in two WATCHes.
    (0, Exact, &["WATCH", "k"]),
    (0, Exact, &["WATCH", "other", "third"]),
    (1, Exact, &["INCR", "third"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["INCR", "k"]),
    (0, Exact, &["EXEC"]),
    // Written between MULTI and EXEC.
    (0, Exact, &["WATCH", "k"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["INCR", "k"]),
    (1, Exact, &["APPEND", "k", "0"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["GET", "k"]),
    // Writes that change nothing: a DEL of a missing key, SET XX of one, SETNX of a present.
    (0, Exact, &["WATCH", "missing", "k"]),
    (1, Exact, &["DEL", "missing"]),
    (1, Exact, &["SET", "missing", "v", "XX"]),
    (1, Exact, &["SETNX", "k", "v"]),
    (1, Exact, &["GETDEL", "missing"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["DEL", "k", "missing"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    // Expiry: a change of a watched key's expiry is a write to it; a refused change, a read
    // of it and GETEX without an option are not.
    (1, Exact, &["SET", "k", "v"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["EXPIRE", "k", "100"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["EXPIRE", "k", "100", "NX"]),
    (1, Exact, &["PEXPIRE", "k", "200000", "LT"]),
    (1, Exact, &["TTL", "k"]),
    (1, Exact, &["GETEX", "k"]),
    (1, Exact, &["PERSIST", "missing"]),
    (1, Exact, &["EXPIRE", "missing", "10"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["PERSIST", "k"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["TTL", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["GETEX", "k", "PX", "100000"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["TTL", "k"]),
    (0, Exact, &["EXEC"]),
    (1, Exact, &["DEL", "k"]),
    // A watch is of a key in a database: the same key in another is another key.
    (0, Exact, &["SELECT", "2"]),
    (0, Exact, &["SET", "k", "two"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["SET", "k", "zero"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["SELECT", "2"]),
    (1, Exact, &["SET", "k", "TWO"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    // Another client's FLUSHDB, FLUSHALL and SWAPDB of a watched key that exists.
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["FLUSHDB"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["SET", "k", "mine"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["SET", "k", "again"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["SWAPDB", "2", "0"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["WATCH", "k"]),
    (1, Exact, &["FLUSHALL"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["GET", "k"]),
    (0, Exact, &["EXEC"]),
    (1, DbLines, &["INFO", "keyspace"]),
];

#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn watch_across_connections_as_redis() {
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let open = |addr| [Conn::open(addr).unwrap(), Conn::open(addr).unwrap()];
    let (mut theirs, mut ours) = (open(redis.addr), open(spillway.addr));
    let mut differences = Vec::new();
    for (line, &(client, compare, args)) in TWO_CLIENTS.iter().enumerate() {
        theirs[client].send(&request(args));
        ours[client].send(&request(args));
        let (want, got) = (theirs[client].reply(), ours[client].reply());
        let same = matches!((&want, &got), (Ok(w), Ok(g)) if compare.same(w, g));
        if !same {
            differences.push(format!(
                "#{} client {client}: {}\n    redis:    {}\n    spillway: {}",
                line + 1,
                show_command(args),
                show(&want),
                show(&got)
            ));
            if want.is_err() || got.is_err() {
                break; // out of step
            }
        }
    }
    report(&differences, TWO_CLIENTS.len());
}

/// Commands on one connection, one at a time, each after waiting the milliseconds it gives:
/// keys expire between them. Keys that must still be there for a command after the one that
/// gave them their expiry live 250 ms, and the waits are of 500 ms, so that a slow machine does
/// not make either server miss one.
const EXPIRING: &[(u64, Compare, &[&str])] = &[
    // Keys that will have expired, some given their expiry by SET, PSETEX or PEXPIRE.
    (0, Exact, &["SET", "a", "1", "PX", "250"]),
    (0, Exact, &["SET", "b", "x", "PX", "250"]),
    (0, Exact, &["PSETEX", "c", "250", "v"]),
    (0, Exact, &["SET", "d", "v"]),
    (0, Exact, &["PEXPIRE", "d", "250"]),
    (
        0,
        Exact,
        &["MSET", "e", "v", "f", "v", "g", "v", "h", "v", "i", "v"],
    ),
    (0, Exact, &["MSET", "j", "v", "k", "v", "l", "v", "m", "v"]),
    (0, Exact, &["PEXPIRE", "e", "250"]),
    (0, Exact, &["PEXPIRE", "f", "250"]),
    (0, Exact, &["PEXPIRE", "g", "250"]),
    (0, Exact, &["PEXPIRE", "h", "250"]),
    (0, Exact, &["PEXPIRE", "i", "250"]),
    (0, Exact, &["PEXPIRE", "j", "250"]),
    (0, Exact, &["PEXPIRE", "k", "250"]),
    (0, Exact, &["PEXPIRE", "l", "250"]),
    (0, Exact, &["PEXPIRE", "m", "250"]),
    (0, Exact, &["SET", "kept", "v"]),
    // Given a later expiry, or none, before their first comes: they stay.
    (0, Exact, &["SET", "later", "v", "PX", "250"]),
    (0, Exact, &["EXPIRE", "later", "100"]),
    (0, Exact, &["SET", "never", "v", "PX", "250"]),
    (0, Exact, &["PERSIST", "never"]),
    (0, Exact, &["SET", "getex", "v", "PX", "250"]),
    (0, Exact, &["GETEX", "getex", "PERSIST"]),
    (0, Exact, &["SET", "reset", "v", "PX", "250"]),
    (0, Exact, &["SET", "reset", "w"]),
    // Changed in place, they keep it: they go.
    (0, Exact, &["SET", "incr", "1", "PX", "250"]),
    (0, Exact, &["INCR", "incr"]),
    (0, Exact, &["SET", "keep", "v", "PX", "250"]),
    (0, Exact, &["SET", "keep", "w", "KEEPTTL"]),
    (0, Exact, &["SET", "appended", "v", "PX", "250"]),
    (0, Exact, &["APPEND", "appended", "w"]),
    // In a transaction, and in another database.
    (0, Exact, &["MULTI"]),
    (0, Exact, &["SET", "tx", "v", "PX", "250"]),
    (0, Exact, &["SET", "tx2", "v"]),
    (0, Exact, &["PEXPIRE", "tx2", "250"]),
    (0, Exact, &["EXEC"]),
    (0, Exact, &["SELECT", "5"]),
    (0, Exact, &["SET", "five", "v", "PX", "250"]),
    (0, Exact, &["SET", "five2", "v"]),
    (0, Exact, &["SELECT", "0"]),
    // A watched key that expires before EXEC: nothing runs.
    (0, Exact, &["SET", "w", "v", "PX", "250"]),
    (0, Exact, &["WATCH", "w"]),
    (500, Exact, &["MULTI"]),
    (0, Exact, &["SET", "x", "1"]),
    (0, Exact, &["EXEC"]),
    // Gone for every read: GET, MGET, EXISTS, STRLEN, KEYS, SCAN; then DBSIZE.
    (0, Exact, &["GET", "a"]),
    (
        0,
        Exact,
        &[
            "MGET", "a", "b", "c", "d", "later", "never", "getex", "reset", "incr", "keep",
            "appended", "tx", "tx2", "x",
        ],
    ),
    (0, Exact, &["EXISTS", "a", "b", "c", "d", "kept"]),
    (0, Exact, &["STRLEN", "a"]),
    (0, Sorted, &["KEYS", "*"]),
    (0, Sorted, &["SCAN", "0", "COUNT", "1000"]),
    (0, Exact, &["DBSIZE"]),
    (0, Exact, &["TTL", "a"]),
    (0, Exact, &["PTTL", "b"]),
    (0, Exact, &["EXPIRETIME", "c"]),
    (0, Exact, &["TTL", "never"]),
    (0, Exact, &["TTL", "later"]),
    // What reads then writes finds nothing: it starts afresh, with no expiry.
    (0, Exact, &["INCR", "e"]),
    (0, Exact, &["TTL", "e"]),
    (0, Exact, &["APPEND", "f", "x"]),
    (0, Exact, &["SETNX", "g", "x"]),
    (0, Exact, &["MSETNX", "h", "x", "h2", "y"]),
    (0, Exact, &["SET", "i", "x", "NX"]),
    (0, Exact, &["SET", "j", "x", "XX"]),
    (0, Exact, &["GETDEL", "k"]),
    (0, Exact, &["DEL", "l"]),
    (0, Exact, &["EXPIRE", "a", "100"]),
    (0, Exact, &["PERSIST", "b"]),
    (0, Exact, &["GETEX", "m", "PERSIST"]),
    (0, Exact, &["SET", "m", "x", "KEEPTTL", "GET"]),
    (0, Exact, &["TTL", "m"]),
    (0, Exact, &["INCRBYFLOAT", "d", "1.5"]),
    (0, Exact, &["TTL", "d"]),
    (0, Exact, &["SELECT", "5"]),
    (0, Exact, &["MGET", "five", "five2"]),
    (0, Exact, &["DBSIZE"]),
    (0, Exact, &["SELECT", "0"]),
    // A watched key gone before the WATCH: nothing changed since, EXEC runs.
    (0, Exact, &["SET", "w2", "v", "PX", "250"]),
    (500, Exact, &["WATCH", "w2"]),
    (0, Exact, &["MULTI"]),
    (0, Exact, &["SET", "x", "2"]),
    (0, Exact, &["EXEC"]),
    (0, Sorted, &["SCAN", "0", "COUNT", "1000"]),
    (0, Exact, &["DBSIZE"]),
    (0, DbCounts, &["INFO", "keyspace"]),
];

#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn keys_expire_as_in_redis() {
    let started = Instant::now();
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let (mut theirs, mut ours) = (
        Conn::open(redis.addr).unwrap(),
        Conn::open(spillway.addr).unwrap(),
    );
    let mut differences = Vec::new();
    for (line, &(wait, compare, args)) in EXPIRING.iter().enumerate() {
        thread::sleep(Duration::from_millis(wait));
        theirs.send(&request(args));
        ours.send(&request(args));
        let (want, got) = (theirs.reply(), ours.reply());
        let same = matches!((&want, &got), (Ok(w), Ok(g)) if compare.same(w, g));
        if !same {
            differences.push(format!(
                "#{} {}\n    redis:    {}\n    spillway: {}",
                line + 1,
                show_command(args),
                show(&want),
                show(&got)
            ));
            if want.is_err() || got.is_err() {
                break; // out of step
            }
        }
    }
    eprintln!("{} commands in {:?}", EXPIRING.len(), started.elapsed());
    report(&differences, EXPIRING.len());
}

#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn inline_requests_as_redis() {
    let started = Instant::now();
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let mut differences = Vec::new();
    for input in INLINE {
        let want = exchange(redis.addr, input.as_bytes());
        let got = exchange(spillway.addr, input.as_bytes());
        if want != got {
            differences.push(format!(
                "{}\n    redis:    {}\n    spillway: {}",
                input.as_bytes().escape_ascii(),
                want.escape_ascii(),
                got.escape_ascii()
            ));
        }
    }
    eprintln!("{} inline inputs in {:?}", INLINE.len(), started.elapsed());
    report(&differences, INLINE.len());
}

/// The command table against Redis's: `COMMAND INFO` of every command and subcommand we
/// have is Redis's entry for it (name, arity, flags, key positions, ACL categories, tips, key
/// specs), but that a container lists only the subcommands we have, each as Redis has it (in
/// any order: Redis's own order is its hash table's). `COMMAND COUNT` counts what `COMMAND`
/// lists, and `COMMAND LIST` names the subcommands too, in both.
#[test]
#[ignore = "needs redis-server (Debian package): .ci/run runs it"]
fn command_info_as_redis() {
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let mut theirs = Conn::open(redis.addr).unwrap();
    let mut ours = Conn::open(spillway.addr).unwrap();
    let ask = |conn: &mut Conn, args: &[&str]| {
        conn.send(&request(args));
        conn.reply().unwrap()
    };
    let array = |r: Reply| match r {
        Reply::Array(items) => items,
        other => panic!("not an array: {other}"),
    };
    let names = |list: Vec<Reply>| -> Vec<String> {
        let name = |r: Reply| match r {
            Reply::Bulk(b) => String::from_utf8(b).unwrap(),
            other => panic!("not a name: {other}"),
        };
        list.into_iter().map(name).collect()
    };
    for conn in [&mut theirs, &mut ours] {
        let count = match ask(conn, &["COMMAND", "COUNT"]) {
            Reply::Integer(n) => n as usize,
            other => panic!("COMMAND COUNT: {other}"),
        };
        assert_eq!(array(ask(conn, &["COMMAND"])).len(), count);
        assert_eq!(array(ask(conn, &["COMMAND", "INFO"])).len(), count);
        let listed = names(array(ask(conn, &["COMMAND", "LIST"])));
        assert_eq!(listed.iter().filter(|n| !n.contains('|')).count(), count);
        assert!(listed.iter().any(|n| n == "client|setname"));
    }
    let ours_listed = names(array(ask(&mut ours, &["COMMAND", "LIST"])));
    let mut differences = Vec::new();
    for name in &ours_listed {
        let want = array(ask(&mut theirs, &["COMMAND", "INFO", name])).remove(0);
        let got = array(ask(&mut ours, &["COMMAND", "INFO", name])).remove(0);
        let (Reply::Array(mut want), Reply::Array(mut got)) = (want.clone(), got.clone()) else {
            differences.push(format!("{name}\n    redis:    {want}\n    spillway: {got}"));
            continue;
        };
        // Subcommands: ours, each as Redis has it.
        let (theirs_subs, ours_subs) = (array(want.remove(9)), array(got.remove(9)));
        for sub in ours_subs {
            let sub_name = array(sub.clone()).remove(0);
            match theirs_subs
                .iter()
                .find(|s| array((*s).clone())[0] == sub_name)
            {
                Some(same) if *same == sub => {}
                found => differences.push(format!(
                    "{name}: subcommand {sub_name}\n    redis:    {}\n    spillway: {sub}",
                    found.map_or("(none)".into(), |f| f.to_string())
                )),
            }
        }
        if want != got {
            differences.push(format!(
                "{name}\n    redis:    {}\n    spillway: {}",
                Reply::Array(want),
                Reply::Array(got)
            ));
        }
    }
    report(&differences, ours_listed.len());
}

/// Run `script` (ending with QUIT) against a fresh Redis and a fresh Spillway, comparing each line's replies;
/// `pipelined`: write every command before reading any reply.
fn compare_script(script: Script, pipelined: bool) {
    let started = Instant::now();
    let (redis, spillway) = (Redis::start(), Spillway::start());
    let mut theirs = Conn::open(redis.addr).unwrap();
    let mut ours = Conn::open(spillway.addr).unwrap();
    if pipelined {
        let all: Vec<u8> = script.iter().flat_map(|(_, args)| request(args)).collect();
        theirs.send(&all);
        ours.send(&all);
    }
    let mut differences = Vec::new();
    let mut in_step = true;
    for (line, &(compare, args)) in script.iter().enumerate() {
        if !pipelined {
            theirs.send(&request(args));
            ours.send(&request(args));
        }
        let (want, got) = (theirs.reply(), ours.reply());
        let same = match (&want, &got) {
            (Ok(w), Ok(g)) => compare.same(w, g),
            _ => false,
        };
        if same {
            continue;
        }
        // With its place in the script (from 1): the same command occurs more than once.
        differences.push(format!(
            "#{} {}\n    redis:    {}\n    spillway: {}",
            line + 1,
            show_command(args),
            show(&want),
            show(&got)
        ));
        if want.is_err() || got.is_err() {
            // The reply stream is out of step: what follows cannot be paired up.
            if pipelined {
                in_step = false;
                let last = differences.last_mut().unwrap();
                last.push_str("\n    (the replies after it were not compared)");
                break;
            }
            // One at a time, new connections start in step again.
            match (Conn::open(redis.addr), Conn::open(spillway.addr)) {
                (Ok(r), Ok(s)) => (theirs, ours) = (r, s),
                (r, s) => {
                    in_step = false;
                    let last = differences.last_mut().unwrap();
                    last.push_str(&format!(
                        "\n    (could not connect again: redis {:?}, spillway {:?}; the rest was not run)",
                        r.err(),
                        s.err()
                    ));
                    break;
                }
            }
        }
    }
    // The script ends with QUIT: both close the connection after its reply.
    if in_step {
        let (redis_closed, spillway_closed) = (theirs.closed(), ours.closed());
        if redis_closed != spillway_closed {
            differences.push(format!(
                "after QUIT: redis closed the connection: {redis_closed}, spillway: {spillway_closed}"
            ));
        }
    }
    eprintln!(
        "{} commands{} in {:?}",
        script.len(),
        if pipelined { " pipelined" } else { "" },
        started.elapsed()
    );
    report(&differences, script.len());
}

fn report(differences: &[String], of: usize) {
    assert!(
        differences.is_empty(),
        "{} of {of} answered differently from Redis:\n{}",
        differences.len(),
        differences.join("\n")
    );
}

impl Compare {
    fn same(self, a: &Reply, b: &Reply) -> bool {
        match self {
            Exact => a == b,
            Sorted => sorted(a.clone()) == sorted(b.clone()),
            Pairs => pairs_sorted(a) == pairs_sorted(b),
            Len => match (a, b) {
                (Reply::Array(x), Reply::Array(y)) => x.len() == y.len(),
                (Reply::Map(x), Reply::Map(y)) => x.len() == y.len(),
                _ => a == b,
            },
            DbLines => db_lines(a).is_some_and(|lines| Some(lines) == db_lines(b)),
            DbCounts => {
                let counts = |r| {
                    db_lines(r)
                        .map(|lines| lines.iter().map(|l| without_avg_ttl(l)).collect::<Vec<_>>())
                };
                counts(a).is_some_and(|lines| Some(lines) == counts(b))
            }
            Near(by) => match (a, b) {
                (Reply::Integer(x), Reply::Integer(y)) => x.abs_diff(*y) <= by.unsigned_abs(),
                _ => a == b,
            },
            Fields(names) => {
                let values = |r| {
                    let lines = info_lines(r)?;
                    let value = |name: &&str| {
                        let line = lines.iter().find(|l| l.starts_with(&format!("{name}:")));
                        line.cloned()
                    };
                    names.iter().map(value).collect::<Option<Vec<String>>>()
                };
                values(a).is_some_and(|v| Some(v) == values(b))
            }
            Sections => {
                let titles = |r| {
                    let lines = info_lines(r)?;
                    Some(
                        lines
                            .into_iter()
                            .filter(|l| l.starts_with('#'))
                            .collect::<Vec<_>>(),
                    )
                };
                titles(a).is_some_and(|t| Some(t) == titles(b))
            }
        }
    }
}

/// The lines of an INFO reply (without their CRLF).
fn info_lines(reply: &Reply) -> Option<Vec<String>> {
    let Reply::Bulk(text) = reply else {
        return None;
    };
    let text = String::from_utf8_lossy(text);
    Some(text.split("\r\n").map(str::to_owned).collect())
}

/// A `dbN:keys=K,expires=E,avg_ttl=T` line without its `avg_ttl`.
fn without_avg_ttl(line: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(line);
    let kept: Vec<&str> = text
        .split(',')
        .filter(|f| !f.starts_with("avg_ttl="))
        .collect();
    kept.join(",").into_bytes()
}

/// The `dbN:keys=...` lines of an INFO reply.
fn db_lines(reply: &Reply) -> Option<Vec<Vec<u8>>> {
    let Reply::Bulk(text) = reply else {
        return None;
    };
    let lines = text
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    Some(
        lines
            .filter(|l| l.starts_with(b"db"))
            .map(<[u8]>::to_vec)
            .collect(),
    )
}

/// `reply` with every array in it sorted, at any depth.
/// A flat array of pairs (`HGETALL`'s fields and values) as its pairs, sorted; a scan's
/// page (`HSCAN`: the cursor, then pairs) as its cursor and its pairs, sorted.
fn pairs_sorted(reply: &Reply) -> Option<Vec<Vec<Reply>>> {
    let Reply::Array(items) = reply else {
        return None;
    };
    if let [cursor @ Reply::Bulk(_), page @ Reply::Array(_)] = &items[..] {
        let mut out = vec![vec![cursor.clone()]];
        out.extend(pairs_sorted(page)?);
        return Some(out);
    }
    let mut pairs: Vec<Vec<Reply>> = items.chunks(2).map(<[Reply]>::to_vec).collect();
    pairs.sort();
    Some(pairs)
}

fn sorted(reply: Reply) -> Reply {
    match reply {
        Reply::Array(items) => {
            let mut items: Vec<Reply> = items.into_iter().map(sorted).collect();
            items.sort();
            Reply::Array(items)
        }
        other => other,
    }
}

/// A reply: RESP2's types, and RESP3's after `HELLO 3`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Integer(i64),
    Bulk(Vec<u8>),
    /// `$-1`
    Null,
    /// `*-1`
    NullArray,
    Array(Vec<Reply>),
    /// RESP3's `,1.5`: the text as sent.
    Double(Vec<u8>),
    /// RESP3's `_`.
    Nil,
    /// RESP3's `%`: keys and values, in order.
    Map(Vec<(Reply, Reply)>),
    /// RESP3's `~`.
    Set(Vec<Reply>),
}

impl fmt::Display for Reply {
    /// As RESP shows it, on one line: `+OK`, `-ERR ...`, `:1`, `"bulk"`, `$-1`, `*-1`, `[a, b]`.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Reply::Status(s) => write!(f, "+{}", s.escape_ascii()),
            Reply::Error(e) => write!(f, "-{}", e.escape_ascii()),
            Reply::Integer(n) => write!(f, ":{n}"),
            Reply::Bulk(b) => write!(f, "\"{}\"", b.escape_ascii()),
            Reply::Null => write!(f, "$-1"),
            Reply::NullArray => write!(f, "*-1"),
            Reply::Array(items) | Reply::Set(items) => {
                write!(
                    f,
                    "{}",
                    if matches!(self, Reply::Set(_)) {
                        "~["
                    } else {
                        "["
                    }
                )?;
                for (i, item) in items.iter().enumerate() {
                    write!(f, "{}{item}", if i == 0 { "" } else { ", " })?;
                }
                write!(f, "]")
            }
            Reply::Double(d) => write!(f, ",{}", d.escape_ascii()),
            Reply::Nil => write!(f, "_"),
            Reply::Map(pairs) => {
                write!(f, "{{")?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    write!(f, "{}{k}: {v}", if i == 0 { "" } else { ", " })?;
                }
                write!(f, "}}")
            }
        }
    }
}

fn show(reply: &Result<Reply, String>) -> String {
    match reply {
        Ok(r) => r.to_string(),
        Err(e) => format!("(not a reply: {e})"),
    }
}

fn show_command(args: &[&str]) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|a| format!("\"{}\"", a.as_bytes().escape_ascii()))
        .collect();
    args.join(" ")
}

/// `args` as a RESP request: an array of bulk strings.
fn request(args: &[&str]) -> Vec<u8> {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    common::command(&bytes)
}

/// How long a reply may take before the test gives up on it (instead of hanging).
const TIMEOUT: Duration = Duration::from_secs(10);

/// A client connection reading RESP2 replies, and RESP3's after `HELLO 3`.
struct Conn {
    socket: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let socket = TcpStream::connect(addr)?;
        socket.set_read_timeout(Some(TIMEOUT))?;
        let reader = BufReader::new(socket.try_clone()?);
        Ok(Conn { socket, reader })
    }

    fn send(&mut self, bytes: &[u8]) {
        self.socket.write_all(bytes).unwrap();
    }

    /// The next whole reply, or what is wrong with what came instead.
    fn reply(&mut self) -> Result<Reply, String> {
        let line = self.line()?;
        let (kind, rest) = line.split_first().ok_or("an empty line")?;
        let number = || -> Result<i64, String> {
            std::str::from_utf8(rest)
                .ok()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("not a number: {}", line.escape_ascii()))
        };
        Ok(match kind {
            b'+' => Reply::Status(rest.to_vec()),
            b'-' => Reply::Error(rest.to_vec()),
            b':' => Reply::Integer(number()?),
            b'$' => match usize::try_from(number()?) {
                Err(_) => Reply::Null,
                Ok(len) => {
                    let mut data = vec![0; len + 2];
                    self.reader
                        .read_exact(&mut data)
                        .map_err(|e| e.to_string())?;
                    if !data.ends_with(b"\r\n") {
                        return Err(format!("no CRLF after a bulk string of {len}"));
                    }
                    data.truncate(len);
                    Reply::Bulk(data)
                }
            },
            b'*' => match usize::try_from(number()?) {
                Err(_) => Reply::NullArray,
                Ok(n) => Reply::Array((0..n).map(|_| self.reply()).collect::<Result<_, _>>()?),
            },
            b',' => Reply::Double(rest.to_vec()),
            b'_' if rest.is_empty() => Reply::Nil,
            b'~' => {
                let n = usize::try_from(number()?).map_err(|e| e.to_string())?;
                Reply::Set((0..n).map(|_| self.reply()).collect::<Result<_, _>>()?)
            }
            b'%' => {
                let n = usize::try_from(number()?).map_err(|e| e.to_string())?;
                let pair = |c: &mut Conn| Ok::<_, String>((c.reply()?, c.reply()?));
                Reply::Map((0..n).map(|_| pair(self)).collect::<Result<_, _>>()?)
            }
            _ => return Err(format!("a line {}", line.escape_ascii())),
        })
    }

    /// A line without its CRLF.
    fn line(&mut self) -> Result<Vec<u8>, String> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(0) => Err("the connection closed".into()),
            Ok(_) => match line.strip_suffix(b"\r\n") {
                Some(l) => Ok(l.to_vec()),
                None => Err(format!("a line without CRLF: {}", line.escape_ascii())),
            },
            Err(e) => Err(e.to_string()),
        }
    }

    /// Whether the server closed the connection (and sent nothing more).
    fn closed(&mut self) -> bool {
        let mut byte = [0];
        matches!(self.reader.read(&mut byte), Ok(0))
    }
}

/// Send `input` on a new connection and return all the server sends until it closes it.
fn exchange(addr: SocketAddr, input: &[u8]) -> Vec<u8> {
    let mut conn = Conn::open(addr).unwrap();
    conn.send(input);
    let mut out = Vec::new();
    let mut buf = [0; 4096];
    loop {
        match conn.reader.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            // A server that closes with our input unread resets the connection: an end too.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return out,
            Err(e) => {
                out.extend_from_slice(format!("(read failed: {e})").as_bytes());
                return out;
            }
        }
    }
}

/// A `redis-server` of its own, in a temporary folder, on a free port; killed when dropped,
/// so also when the test fails.
struct Redis {
    addr: SocketAddr,
    child: Child,
    dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        // A port the OS just gave out and took back: free, barring a race with another
        // program, which the wait below would report.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = File::create(dir.path().join("redis.log")).unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(dir.path())
            // No snapshots, no log, in the foreground; 16 databases, as both have by default.
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("redis-server (the Debian package redis-server)");
        let mut redis = Redis {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            child,
            dir,
        };
        redis.wait_ready();
        redis
    }

    /// Wait until it answers PING.
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(mut s) = TcpStream::connect(self.addr) {
                let mut pong = [0; 7];
                if s.write_all(b"PING\r\n").is_ok()
                    && s.read_exact(&mut pong).is_ok()
                    && &pong == b"+PONG\r\n"
                {
                    return;
                }
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.path().join("redis.log"));
                panic!("redis-server did not start ({exited:?}):\n{log:?}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `spillway serve` in this process, on a fresh store in a temporary folder; shut down when
/// dropped.
struct Spillway {
    addr: SocketAddr,
    server: Option<thread::JoinHandle<Result<(), String>>>,
    _dir: tempfile::TempDir,
}

impl Spillway {
    fn start() -> Spillway {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(dir.path());
        config.bind = "127.0.0.1:0".parse().unwrap();
        // Replies do not depend on when the log is synced; not syncing keeps the test fast.
        config.fsync = Fsync::No;
        let (tx, rx) = mpsc::channel();
        let server = thread::spawn(move || run(config, move |addr| tx.send(addr).unwrap()));
        Spillway {
            addr: rx.recv().expect("the server started"),
            server: Some(server),
            _dir: dir,
        }
    }
}

impl Drop for Spillway {
    fn drop(&mut self) {
        if let Ok(mut s) = TcpStream::connect(self.addr) {
            let _ = s.write_all(&request(&["SHUTDOWN"]));
        }
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// The comparisons of TTLs and INFO's counts, without servers.
#[test]
fn near_and_db_counts_allow_what_they_say_and_no_more() {
    let info = |text: &str| Reply::Bulk(text.into());
    let (a, b) = (
        info("# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=99950\r\n"),
        info("# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=100000\r\n"),
    );
    assert!(DbCounts.same(&a, &b) && !DbLines.same(&a, &b));
    let c = info("# Keyspace\r\ndb0:keys=3,expires=2,avg_ttl=99950\r\n");
    assert!(!DbCounts.same(&a, &c));
    assert!(Near(1000).same(&Reply::Integer(99_000), &Reply::Integer(100_000)));
    assert!(!Near(1000).same(&Reply::Integer(98_999), &Reply::Integer(100_000)));
    assert!(!Near(1000).same(&Reply::Integer(5), &Reply::Null));
}

/// The comparisons of INFO's fields and sections, without servers.
#[test]
fn fields_and_sections_compare_only_what_they_name() {
    let info = |text: &str| Reply::Bulk(text.into());
    let a = info("# Stats\r\ntotal_error_replies:2\r\nkeyspace_hits:9\r\nours:1\r\n");
    let b = info("# Stats\r\nkeyspace_hits:9\r\ntotal_error_replies:2\r\ntheirs:5\r\n");
    let c = info("# Stats\r\ntotal_error_replies:3\r\nkeyspace_hits:9\r\n");
    let d = info("# Other\r\ntotal_error_replies:2\r\n");
    const BOTH: &[&str] = &["total_error_replies", "keyspace_hits"];
    assert!(Fields(BOTH).same(&a, &b) && !Fields(BOTH).same(&a, &c));
    assert!(
        !Fields(BOTH).same(&a, &d),
        "a field missing from both is no match"
    );
    assert!(Sections.same(&a, &c) && !Sections.same(&a, &d));
}

/// The sorted comparison, without servers: arrays in any order, at any depth, are the same.
#[test]
fn sorted_ignores_the_order_of_arrays() {
    let bulk = |s: &str| Reply::Bulk(s.into());
    let scan = |keys: &[&str]| {
        Reply::Array(vec![
            bulk("0"),
            Reply::Array(keys.iter().map(|k| bulk(k)).collect()),
        ])
    };
    assert!(Sorted.same(&scan(&["a", "b", "c"]), &scan(&["c", "a", "b"])));
    assert!(!Exact.same(&scan(&["a", "b", "c"]), &scan(&["c", "a", "b"])));
    assert!(!Sorted.same(&scan(&["a", "b"]), &scan(&["a", "b", "b"])));
}
