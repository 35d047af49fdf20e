//! Redis commands over a Spillway store: a connection's pipelined requests in, replies out.
//!
//! Consecutive blind writes of a pipeline (`SET k v`, `MSET`) go into one `WriteBatch`, written
//! with one log append before the first request that reads, or at the pipeline's end.
//! Read-modify-write commands (`SET NX`, `INCR`, `DEL`'s count, ...) run one at a time, and
//! with no blind write between their read and their write (a lock that blind writes share and
//! they hold alone), so that what they read is what they change. Nothing here waits for an
//! fsync: [`Engine::run`] says which replies are of writes, and the caller holds those back
//! until an fsync that began after `run` returned (see `sync`), so that one fsync serves every
//! connection's pipelines at once and no thread waits for it per connection.

use std::sync::RwLock;

use spillway::{Db, WriteBatch, WriteOptions};

use crate::float;
use crate::resp::Reply;
use admin::{client, command_info, config};

mod admin;
mod keyspace;
mod staged;

use staged::Staged;

/// One client's connection state.
#[derive(Debug)]
pub struct Session {
    pub id: u64,
    /// The protocol version replies are encoded for (2, or 3 after `HELLO 3`).
    pub resp: u8,
    pub name: Option<Vec<u8>>,
    /// Set by `QUIT`: close once the replies are sent.
    pub quit: bool,
    /// Set by `SHUTDOWN`: close, and stop the server.
    pub shutdown: bool,
    /// Whether the client may run commands: it authenticated, or no password is set.
    authed: bool,
}

impl Session {
    pub fn new(id: u64) -> Session {
        Session {
            id,
            resp: 2,
            name: None,
            quit: false,
            shutdown: false,
            authed: false,
        }
    }
}

/// The store, how writes are made durable, and the password clients must give.
pub struct Engine {
    db: Db,
    password: Option<Vec<u8>>,
    /// Held shared by blind writes, alone by a run of read-modify-write commands (`staged`).
    read_modify_write: RwLock<()>,
}

/// `SET`'s conditions and whether it returns the old value.
#[derive(Clone, Copy, Default)]
struct SetMode {
    nx: bool,
    xx: bool,
    get: bool,
}

/// Blind writes waiting to go into the store, and the replies that wait for them.
struct Pending {
    batch: WriteBatch,
    replies: Vec<usize>,
}

fn arity(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{}' command",
        name.to_ascii_lowercase()
    ))
}

fn not_an_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

fn store_error(e: spillway::Error) -> Reply {
    Reply::error(format!("ERR {e}"))
}

fn integer(arg: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(arg).ok()?;
    // Redis refuses "+1", " 1", "01", "-0" and "-01"; Rust's parser takes "+1" and the rest.
    let digits = text.strip_prefix('-').unwrap_or(text);
    if text.starts_with('+') || (digits.starts_with('0') && text != "0") {
        return None;
    }
    text.parse().ok()
}

impl Engine {
    pub fn new(db: Db, password: Option<Vec<u8>>) -> Engine {
        Engine {
            db,
            password,
            read_modify_write: RwLock::new(()),
        }
    }

    /// Whether `session` may run commands: it authenticated, or the server has no password.
    pub fn authenticated(&self, session: &Session) -> bool {
        session.authed || self.password.is_none()
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Close the store: the buffer's writes are flushed and the log sealed.
    pub fn close(self) -> spillway::Result<()> {
        self.db.close()
    }

    /// Run `requests` in order for `session`, pushing one reply each to `replies`; return the
    /// indices in `replies` of those that wrote, which must wait for an fsync where the
    /// server promises one (the store has their writes, not yet synced).
    pub fn run(
        &self,
        session: &mut Session,
        requests: Vec<Vec<Vec<u8>>>,
        replies: &mut Vec<Reply>,
    ) -> Vec<usize> {
        let mut pending = Pending {
            batch: WriteBatch::new(),
            replies: Vec::new(),
        };
        let mut tx = Staged::new(self);
        let mut wrote = Vec::new();
        for args in requests {
            if session.quit {
                break;
            }
            let Some(name) = args.first() else {
                continue; // an empty inline line: Redis answers nothing
            };
            let name = String::from_utf8_lossy(name).to_ascii_uppercase();
            session.authed |= self.password.is_none();
            if !session.authed && !matches!(name.as_str(), "AUTH" | "HELLO" | "QUIT") {
                replies.push(Reply::error("NOAUTH Authentication required."));
                continue;
            }
            if name == "SHUTDOWN" {
                match shutdown(&args) {
                    // As Redis: no reply; the connection closes and the server stops.
                    None => {
                        session.shutdown = true;
                        session.quit = true;
                        break;
                    }
                    Some(refused) => {
                        replies.push(refused);
                        continue;
                    }
                }
            }
            let i = replies.len();
            if let Some(reply) = self.blind_write(&name, &args, &mut pending.batch) {
                tx.commit(replies); // what the pipeline staged before comes first
                pending.replies.push(i);
                wrote.push(i);
                replies.push(reply);
                continue;
            }
            self.flush(&mut pending, replies);
            let staged = tx.len();
            if let Some(reply) = self.read_modify_write(&mut tx, &name, &args) {
                if tx.len() > staged {
                    tx.replies.push(i);
                    wrote.push(i);
                }
                replies.push(reply);
                if tx.is_full() {
                    tx.commit(replies);
                }
                continue;
            }
            tx.commit(replies);
            let reply = self.execute(session, &name, &args);
            if matches!(name.as_str(), "FLUSHDB" | "FLUSHALL") {
                wrote.push(i);
            }
            replies.push(reply);
        }
        tx.commit(replies);
        self.flush(&mut pending, replies);
        wrote
    }

    /// Whether running `requests` may take long (commands over every key): the server runs
    /// those off its event loop's threads. The rest read a page or two, or write unsynced.
    pub fn may_take_long(requests: &[Vec<Vec<u8>>]) -> bool {
        const LONG: [&[u8]; 6] = [
            b"KEYS",
            b"SCAN",
            b"FLUSHDB",
            b"FLUSHALL",
            b"DBSIZE",
            b"INFO",
        ];
        requests.iter().any(|r| {
            r.first()
                .is_some_and(|name| LONG.iter().any(|l| name.eq_ignore_ascii_case(l)))
        })
    }

    /// Add a write that needs no read to `batch`: its reply, or `None` if `args` is not one.
    fn blind_write(&self, name: &str, args: &[Vec<u8>], batch: &mut WriteBatch) -> Option<Reply> {
        match name {
            "SET" if args.len() == 3 => batch.put(&args[1], &args[2]),
            "MSET" if args.len() >= 3 && args.len() % 2 == 1 => {
                for kv in args[1..].chunks(2) {
                    batch.put(&kv[0], &kv[1]);
                }
            }
            _ => return None,
        }
        Some(Reply::ok())
    }

    /// Write the pending blind writes; if that fails, their replies become the error.
    fn flush(&self, pending: &mut Pending, replies: &mut [Reply]) {
        if pending.replies.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut pending.batch);
        let _shared = self
            .read_modify_write
            .read()
            .unwrap_or_else(|p| p.into_inner());
        if let Err(e) = self.db.write(batch, WriteOptions::NO_SYNC) {
            let reply = store_error(e);
            for &i in &pending.replies {
                replies[i] = reply.clone();
            }
        }
        pending.replies.clear();
    }

    fn execute(&self, session: &mut Session, name: &str, args: &[Vec<u8>]) -> Reply {
        let n = args.len();
        match name {
            "PING" => match n {
                1 => Reply::Status("PONG"),
                2 => Reply::bulk(args[1].clone()),
                _ => arity(name),
            },
            "ECHO" if n == 2 => Reply::bulk(args[1].clone()),
            "QUIT" => {
                session.quit = true;
                Reply::ok()
            }
            "SELECT" if n == 2 => match integer(&args[1]) {
                Some(0) => Reply::ok(),
                Some(_) => Reply::error("ERR DB index is out of range"),
                None => not_an_integer(),
            },
            "HELLO" => self.hello(session, args),
            "AUTH" if n == 2 => self.auth(session, None, &args[1]),
            "AUTH" if n == 3 => self.auth(session, Some(&args[1]), &args[2]),
            "AUTH" if n > 3 => Reply::error("ERR syntax error"),
            "INFO" => Reply::Bulk(self.info(&args[1..]).into_bytes()),
            "COMMAND" => command_info(args),
            "CONFIG" => config(args),
            "CLIENT" => client(session, args),
            "GET" if n == 2 => match self.db.get(&args[1]) {
                Ok(Some(v)) => Reply::Bulk(v),
                Ok(None) => Reply::Null,
                Err(e) => store_error(e),
            },
            "MGET" if n >= 2 => {
                let keys: Vec<&Vec<u8>> = args[1..].iter().collect();
                match self.db.multi_get(&keys) {
                    Ok(values) => Reply::Array(
                        values
                            .into_iter()
                            .map(|v| v.map_or(Reply::Null, Reply::Bulk))
                            .collect(),
                    ),
                    Err(e) => store_error(e),
                }
            }
            "EXISTS" if n >= 2 => {
                let mut found = 0;
                for k in &args[1..] {
                    match self.db.get(k) {
                        Ok(v) => found += i64::from(v.is_some()),
                        Err(e) => return store_error(e),
                    }
                }
                Reply::Integer(found)
            }
            "STRLEN" if n == 2 => match self.db.get(&args[1]) {
                Ok(v) => Reply::Integer(v.map_or(0, |v| v.len() as i64)),
                Err(e) => store_error(e),
            },
            "SCAN" if n >= 2 => self.scan(args),
            "KEYS" if n == 2 => self.keys(&args[1]),
            "DBSIZE" if n == 1 => self.dbsize(),
            "FLUSHDB" | "FLUSHALL" => self.flushdb(args),
            "ECHO" | "SELECT" | "GET" | "MGET" | "EXISTS" | "STRLEN" | "SET" | "SETNX"
            | "GETSET" | "GETDEL" | "DEL" | "UNLINK" | "MSET" | "MSETNX" | "APPEND" | "INCR"
            | "DECR" | "INCRBY" | "DECRBY" | "INCRBYFLOAT" | "SCAN" | "KEYS" | "DBSIZE"
            | "AUTH" => arity(name),
            _ => unknown(args),
        }
    }

    /// Run `args` if it is a read-modify-write command, with its reads and writes through
    /// `tx` (see `staged`); `None` if it is not one (or has the wrong arity: `execute` says).
    fn read_modify_write(&self, tx: &mut Staged, name: &str, args: &[Vec<u8>]) -> Option<Reply> {
        let n = args.len();
        let reply = match name {
            "SET" if n >= 3 => set(tx, args),
            "SETNX" if n == 3 => {
                let nx = SetMode {
                    nx: true,
                    ..SetMode::default()
                };
                match set_as(tx, &args[1..3], nx) {
                    Ok(Reply::Null) => Ok(Reply::Integer(0)),
                    Ok(Reply::Status(_)) => Ok(Reply::Integer(1)),
                    other => other,
                }
            }
            "GETSET" if n == 3 => {
                let get = SetMode {
                    get: true,
                    ..SetMode::default()
                };
                set_as(tx, &args[1..3], get)
            }
            "GETDEL" if n == 2 => tx.get(&args[1]).map(|old| {
                if old.is_some() {
                    tx.delete(&args[1]);
                }
                old.map_or(Reply::Null, Reply::Bulk)
            }),
            "DEL" | "UNLINK" if n >= 2 => delete(tx, &args[1..]),
            "MSETNX" if n >= 3 && n % 2 == 1 => set_all_absent(tx, &args[1..]),
            "APPEND" if n == 3 => tx.get(&args[1]).map(|v| {
                let mut v = v.unwrap_or_default();
                v.extend_from_slice(&args[2]);
                tx.put(&args[1], &v);
                Reply::Integer(v.len() as i64)
            }),
            "INCR" | "DECR" if n == 2 => incr(tx, &args[1], if name == "INCR" { 1 } else { -1 }),
            "INCRBY" | "DECRBY" if n == 3 => match integer(&args[2]) {
                Some(by) if name == "INCRBY" => incr(tx, &args[1], by),
                Some(by) => match by.checked_neg() {
                    Some(by) => incr(tx, &args[1], by),
                    None => Ok(Reply::error("ERR decrement would overflow")),
                },
                None => Ok(not_an_integer()),
            },
            "INCRBYFLOAT" if n == 3 => incr_by_float(tx, &args[1], &args[2]),
            _ => return None,
        };
        Some(reply.unwrap_or_else(store_error))
    }
}

/// `SET key value [NX | XX] [GET]`.
fn set(tx: &mut Staged, args: &[Vec<u8>]) -> spillway::Result<Reply> {
    let mut mode = SetMode::default();
    for opt in &args[3..] {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" if !mode.xx => mode.nx = true,
            b"XX" if !mode.nx => mode.xx = true,
            b"GET" => mode.get = true,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" | b"KEEPTTL" => {
                return Ok(Reply::error(
                    "ERR expiry (EX, PX, EXAT, PXAT, KEEPTTL) is not supported",
                ))
            }
            _ => return Ok(Reply::error("ERR syntax error")),
        }
    }
    set_as(tx, &args[1..3], mode)
}

/// Set `key` to `value` (`kv`) as `mode` says: only if absent (NX) or present (XX),
/// replying with the old value (GET) or OK, or null where the condition failed.
fn set_as(tx: &mut Staged, kv: &[Vec<u8>], mode: SetMode) -> spillway::Result<Reply> {
    let SetMode { nx, xx, get } = mode;
    let (key, value) = (&kv[0], &kv[1]);
    let old = if nx || xx || get { tx.get(key)? } else { None };
    let write = !(nx && old.is_some() || xx && old.is_none());
    if write {
        tx.put(key, value);
    }
    Ok(match (get, write) {
        (true, _) => old.map_or(Reply::Null, Reply::Bulk),
        (false, true) => Reply::ok(),
        (false, false) => Reply::Null,
    })
}

/// `DEL key ...`: how many of the keys existed (each counted once).
fn delete(tx: &mut Staged, keys: &[Vec<u8>]) -> spillway::Result<Reply> {
    let mut gone = 0;
    let mut seen = std::collections::HashSet::new();
    for k in keys {
        if seen.insert(k) && tx.get(k)?.is_some() {
            gone += 1;
        }
        tx.delete(k);
    }
    Ok(Reply::Integer(gone))
}

/// `MSETNX key value ...`: all of them, only if none exists.
fn set_all_absent(tx: &mut Staged, kvs: &[Vec<u8>]) -> spillway::Result<Reply> {
    for kv in kvs.chunks(2) {
        if tx.get(&kv[0])?.is_some() {
            return Ok(Reply::Integer(0));
        }
    }
    for kv in kvs.chunks(2) {
        tx.put(&kv[0], &kv[1]);
    }
    Ok(Reply::Integer(1))
}

fn incr(tx: &mut Staged, key: &[u8], by: i64) -> spillway::Result<Reply> {
    let now = match tx.get(key)? {
        None => 0,
        Some(v) => match integer(&v) {
            Some(n) => n,
            None => return Ok(not_an_integer()),
        },
    };
    let Some(next) = now.checked_add(by) else {
        return Ok(Reply::error("ERR increment or decrement would overflow"));
    };
    tx.put(key, next.to_string().as_bytes());
    Ok(Reply::Integer(next))
}

/// `INCRBYFLOAT key increment`: the sum as Redis prints it (see `float`).
fn incr_by_float(tx: &mut Staged, key: &[u8], by: &[u8]) -> spillway::Result<Reply> {
    let now = tx.get(key)?.unwrap_or_else(|| b"0".to_vec());
    if !float::is_number(&now) || !float::is_number(by) {
        return Ok(Reply::error("ERR value is not a valid float"));
    }
    let Some(next) = float::add(&now, by) else {
        return Ok(Reply::error("ERR increment would produce NaN or Infinity"));
    };
    tx.put(key, next.as_bytes());
    Ok(Reply::Bulk(next.into_bytes()))
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`: `None` to stop, else the reply. Every
/// write is in the log already and closing flushes the buffer, so `SAVE` and `NOSAVE` both
/// close the store cleanly, and there is never a shutdown in progress to abort.
fn shutdown(args: &[Vec<u8>]) -> Option<Reply> {
    let mut save = None;
    for a in &args[1..] {
        match a.to_ascii_uppercase().as_slice() {
            b"SAVE" | b"NOSAVE" if save.is_none() => save = Some(()),
            b"NOW" | b"FORCE" => {}
            b"ABORT" if args.len() == 2 => {
                return Some(Reply::error("ERR No shutdown in progress."))
            }
            _ => return Some(Reply::error("ERR syntax error")),
        }
    }
    None
}

/// Redis's error for a command it does not know: the name (at most 128 bytes) and the
/// arguments while the list is under 128 bytes, each cut to what is left of them.
fn unknown(args: &[Vec<u8>]) -> Reply {
    const MAX: usize = 128;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let mut listed = String::new();
    for a in &args[1..] {
        if listed.len() >= MAX {
            break;
        }
        let room = MAX - listed.len();
        listed.push_str(&format!("'{}' ", text(&a[..a.len().min(room)])));
    }
    Reply::Error(format!(
        "ERR unknown command '{}', with args beginning with: {listed}",
        text(&args[0][..args[0].len().min(MAX)])
    ))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::command) fn engine() -> (tempfile::TempDir, Engine) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), spillway::Options::default()).unwrap();
        (dir, Engine::new(db, None))
    }

    pub(in crate::command) fn run(e: &Engine, s: &mut Session, reqs: &[&[&str]]) -> Vec<Reply> {
        let reqs = reqs
            .iter()
            .map(|r| r.iter().map(|a| a.as_bytes().to_vec()).collect())
            .collect();
        let mut out = Vec::new();
        e.run(s, reqs, &mut out);
        out
    }

    #[test]
    fn a_pipeline_reads_its_own_writes_in_order() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "a", "1"],
                &["MSET", "b", "2", "c", "3"],
                &["GET", "a"],
                &["set", "a", "9"],
                &["MGET", "a", "b", "zz"],
                &["INCR", "c"],
                &["DEL", "a", "zz"],
                &["EXISTS", "a", "b", "b"],
            ],
        );
        assert_eq!(
            out,
            vec![
                Reply::ok(),
                Reply::ok(),
                Reply::bulk("1"),
                Reply::ok(),
                Reply::Array(vec![Reply::bulk("9"), Reply::bulk("2"), Reply::Null]),
                Reply::Integer(4),
                Reply::Integer(1),
                Reply::Integer(2),
            ]
        );
    }

    #[test]
    fn conditional_sets_and_counters_follow_redis() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v", "XX"],
                &["SET", "k", "v", "NX"],
                &["SET", "k", "w", "NX"],
                &["SET", "k", "w", "GET"],
                &["SETNX", "k", "x"],
                &["GETSET", "k", "5"],
                &["INCRBY", "k", "-7"],
                &["DECRBY", "k", "3"],
                &["APPEND", "k", "0"],
                &["STRLEN", "k"],
                &["INCR", "k"],
                &["SET", "n", "9223372036854775807"],
                &["INCR", "n"],
                &["SET", "t", "abc"],
                &["INCR", "t"],
                &["GETDEL", "t"],
                &["GET", "t"],
                &["SET", "k", "v", "EX", "10"],
                &["SET", "k", "v", "NX", "XX"],
            ],
        );
        let err = |r: &Reply| matches!(r, Reply::Error(_));
        assert_eq!(out[0], Reply::Null);
        assert_eq!(out[1], Reply::ok());
        assert_eq!(out[2], Reply::Null);
        assert_eq!(out[3], Reply::bulk("v"));
        assert_eq!(out[4], Reply::Integer(0));
        assert_eq!(out[5], Reply::bulk("w"));
        assert_eq!(out[6], Reply::Integer(-2));
        assert_eq!(out[7], Reply::Integer(-5));
        assert_eq!(out[8], Reply::Integer(3));
        assert_eq!(out[9], Reply::Integer(3));
        assert_eq!(out[10], Reply::Integer(-49));
        assert!(err(&out[12]) && err(&out[14]));
        assert_eq!(out[15], Reply::bulk("abc"));
        assert_eq!(out[16], Reply::Null);
        assert!(err(&out[17]) && err(&out[18]));
    }

    #[test]
    fn a_password_comes_before_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), spillway::Options::default()).unwrap();
        let e = Engine::new(db, Some(b"pw".to_vec()));
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v"],
                &["GET", "k"],
                &["AUTH", "nope"],
                &["AUTH", "someone", "pw"],
                &["AUTH", "pw"],
                &["SET", "k", "v"],
                &["GET", "k"],
            ],
        );
        let noauth = Reply::error("NOAUTH Authentication required.");
        let wrong = Reply::error("WRONGPASS invalid username-password pair or user is disabled.");
        assert_eq!(out[..2], [noauth.clone(), noauth]);
        assert_eq!(out[2..4], [wrong.clone(), wrong]);
        assert_eq!(out[4..6], [Reply::ok(), Reply::ok()]);
        assert_eq!(out[6], Reply::bulk("v"));
        let mut s = Session::new(2);
        let out = run(
            &e,
            &mut s,
            &[&["HELLO", "3", "AUTH", "default", "pw"], &["GET", "k"]],
        );
        assert!(matches!(out[0], Reply::Map(_)) && s.resp == 3);
        assert_eq!(out[1], Reply::bulk("v"));
    }

    #[test]
    fn info_command_and_config_answer_what_tools_ask() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["INFO"],
                &["INFO", "keyspace"],
                &["COMMAND", "COUNT"],
                &["COMMAND", "DOCS"],
                &["CONFIG", "GET", "appendonly"],
                &["CONFIG", "SET", "x", "y"],
                &["AUTH", "x"],
            ],
        );
        let Reply::Bulk(info) = &out[0] else {
            panic!("{:?}", out[0])
        };
        let info = String::from_utf8_lossy(info);
        assert!(info.starts_with("# Server\r\nredis_version:") && info.contains("\r\ndb0:keys="));
        let Reply::Bulk(keyspace) = &out[1] else {
            panic!("{:?}", out[1])
        };
        assert!(String::from_utf8_lossy(keyspace).starts_with("# Keyspace\r\ndb0:keys="));
        assert_eq!(out[2], Reply::Integer(admin::COMMANDS.len() as i64));
        assert_eq!(out[3], Reply::Map(vec![]));
        assert_eq!(
            out[4],
            Reply::Map(vec![(Reply::bulk("appendonly"), Reply::bulk("yes"))])
        );
        assert!(matches!(&out[5], Reply::Error(_)));
        assert!(matches!(&out[6], Reply::Error(e) if e.contains("without any password")));
    }

    /// The lines of `INFO section`'s answer, as `field:value` pairs.
    fn info_fields(e: &Engine, s: &mut Session, section: &str) -> Vec<(String, String)> {
        let Reply::Bulk(text) = &run(e, s, &[&["INFO", section]])[0] else {
            panic!("INFO answers a bulk string")
        };
        String::from_utf8_lossy(text)
            .lines()
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn write_amplification_is_shown_once_the_data_outweigh_fixed_costs() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        for i in 0..5 {
            run(&e, &mut s, &[&["SET", &format!("k{i}"), "value"]]);
            e.db().sync().unwrap(); // as under --fsync always: zeros go ahead of the log
        }
        let field = |fields: &[(String, String)], name: &str| {
            let found = fields.iter().find(|(k, _)| k == name);
            found.map(|(_, v)| v.parse::<f64>().unwrap())
        };
        let fields = info_fields(&e, &mut s, "persistence");
        assert_eq!(field(&fields, "spillway_write_amplification"), None);
        assert_eq!(field(&fields, "spillway_user_bytes_written"), Some(35.0));
        assert!(field(&fields, "spillway_log_bytes_written").unwrap() > 35.0);
        let value = vec![b'v'; 1 << 20];
        for i in 0..64 {
            let mut batch = WriteBatch::new();
            batch.put(format!("big{i}"), &value);
            e.db().write(batch, WriteOptions::NO_SYNC).unwrap();
        }
        let fields = info_fields(&e, &mut s, "persistence");
        let amplification = field(&fields, "spillway_write_amplification").unwrap();
        assert!((1.0..3.0).contains(&amplification), "{amplification}");
    }

    #[test]
    fn errors_are_redis_texts_and_the_session_goes_on() {
        let (_d, e) = engine();
        let mut s = Session::new(7);
        let out = run(
            &e,
            &mut s,
            &[
                &["GET"],
                &["NOPE", "a", "b"],
                &["PING"],
                &["CLIENT", "SETNAME", "me"],
                &["CLIENT", "GETNAME"],
                &["CLIENT", "ID"],
                &["SELECT", "1"],
                &["QUIT"],
                &["PING"],
            ],
        );
        assert_eq!(
            out[0],
            Reply::error("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            out[1],
            Reply::error("ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(out[2], Reply::Status("PONG"));
        assert_eq!(out[4], Reply::bulk("me"));
        assert_eq!(out[5], Reply::Integer(7));
        assert_eq!(out[6], Reply::error("ERR DB index is out of range"));
        assert_eq!(out.len(), 8, "nothing runs after QUIT");
        assert!(s.quit);
    }

    #[test]
    fn float_increments_and_shutdown_options_follow_redis() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["INCRBYFLOAT", "f", "10.50"],
                &["INCRBYFLOAT", "f", "0.1"],
                &["INCRBYFLOAT", "f", "-5.0e3"],
                &["INCRBYFLOAT", "f", "abc"],
                &["SET", "s", "x"],
                &["INCRBYFLOAT", "s", "1"],
                &["INCRBYFLOAT", "f", "inf"],
                &["GET", "f"],
                &["SHUTDOWN", "ABORT"],
                &["SHUTDOWN", "LATER"],
                &["SHUTDOWN", "NOSAVE", "SAVE"],
                &["PING"],
                &["SHUTDOWN", "nosave"],
                &["PING"],
            ],
        );
        let float_error = Reply::error("ERR value is not a valid float");
        assert_eq!(
            out[..3],
            [
                Reply::bulk("10.5"),
                Reply::bulk("10.6"),
                Reply::bulk("-4989.4")
            ]
        );
        assert_eq!(out[3..6], [float_error.clone(), Reply::ok(), float_error]);
        assert_eq!(
            out[6],
            Reply::error("ERR increment would produce NaN or Infinity")
        );
        assert_eq!(out[7], Reply::bulk("-4989.4"));
        assert_eq!(out[8], Reply::error("ERR No shutdown in progress."));
        assert_eq!(
            out[9..11],
            [
                Reply::error("ERR syntax error"),
                Reply::error("ERR syntax error")
            ]
        );
        assert_eq!(out[11], Reply::Status("PONG"));
        assert_eq!(
            out.len(),
            12,
            "SHUTDOWN answers nothing and nothing runs after it"
        );
        assert!(s.shutdown);
    }

    #[test]
    fn pipelined_increments_from_many_threads_lose_none() {
        let (_d, e) = engine();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let e = &e;
                scope.spawn(move || {
                    let mut s = Session::new(t);
                    let mut expect = 0;
                    for round in 0..50 {
                        // A run of INCRs, a blind SET that ends it, and INCRs of the key set.
                        let mut reqs: Vec<Vec<&str>> = vec![vec!["INCR", "shared"]; 20];
                        let own = format!("own{t}");
                        reqs.push(vec!["SET", &own, "10"]);
                        reqs.push(vec!["INCRBY", &own, "5"]);
                        reqs.push(vec!["GET", &own]);
                        let reqs: Vec<&[&str]> = reqs.iter().map(Vec::as_slice).collect();
                        let out = run(e, &mut s, &reqs);
                        expect += 20;
                        assert!(
                            matches!(out[19], Reply::Integer(n) if n >= expect),
                            "{round}"
                        );
                        assert_eq!(out[21..], [Reply::Integer(15), Reply::bulk("15")]);
                    }
                });
            }
        });
        let mut s = Session::new(9);
        assert_eq!(
            run(&e, &mut s, &[&["GET", "shared"]]),
            [Reply::bulk("4000")]
        );
    }
}
