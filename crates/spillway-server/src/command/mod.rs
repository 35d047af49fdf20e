//! Redis commands over a Spillway store: a connection's pipelined requests in, replies out.
//!
//! Each request is looked up in the command table (`table`: name, arity, flags, keys, kind,
//! handler, as Redis keeps its own), checked for arity and authentication as Redis checks
//! them, queued if the client is in a transaction (`multi`), and run by its handler
//! (`strings`, `set`, `bits`, `lcs`, `expiry`, `keys`, `multi`, `admin`, `info`) through a
//! [`Ctx`] that gathers the pipeline's writes into as few log appends as keep every reply true (`context`). Nothing here waits for an fsync: [`Engine::run`] says which replies are of
//! writes, and the caller holds those back until an fsync that began after `run` returned
//! (see `sync`), so that one fsync serves every connection's pipelines at once.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime};

use spillway::{Clock, Db, Options};

use crate::clients::{Client, Clients};
use crate::resp::Reply;
use crate::server::{Config, Fsync};
use context::Ctx;
use counters::Counters;
use databases::Databases;
use errorstats::ErrorStats;
use spec::{flag, Kind};
use stats::CommandStats;

mod admin;
mod bits;
mod blocking;
mod client;
mod config;
mod context;
mod count;
mod counters;
mod databases;
mod encoding;
mod errorstats;
mod expiry;
mod hashes;
mod info;
mod kept;
mod keys;
mod lcs;
mod lists;
mod members;
mod multi;
mod object;
mod overlay;
mod rename;
mod score;
mod set;
mod sets;
mod spec;
mod staged_run;
mod stats;
mod strings;
mod table;
mod time;
mod zrange;
mod zsets;
mod zunion;

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
    /// The selected database (`SELECT`).
    db: usize,
    /// Between MULTI and EXEC (or DISCARD): the commands queued.
    multi: Option<multi::Multi>,
    /// What `WATCH` watches, until EXEC, DISCARD or UNWATCH.
    watch: Option<multi::Watch>,
    /// The last command looked up (`None`: none yet, or one unknown), for `CLIENT LIST`.
    last_command: Option<&'static str>,
    /// Its connection in the server's registry, to which it publishes itself after each
    /// pipeline (`None`: a session of no connection, as in tests).
    client: Option<Arc<Client>>,
    /// A blocking command waiting (`BLPOP`...), and the requests pipelined after it.
    block: Option<blocking::Blocked>,
    /// Its last pipeline held the read-modify-write lock alone: the next one likely will too,
    /// and waits for its [turn](Engine::turn) before it runs.
    took_alone: bool,
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
            db: 0,
            multi: None,
            watch: None,
            last_command: None,
            client: None,
            block: None,
            took_alone: false,
        }
    }

    /// Its connection's entry in the server's registry, if it has one.
    pub fn client(&self) -> Option<&Arc<Client>> {
        self.client.as_ref()
    }

    /// The session of registered connection `client`.
    fn of(client: Arc<Client>) -> Session {
        Session {
            client: Some(client.clone()),
            ..Session::new(client.id)
        }
    }

    /// Publish what `CLIENT LIST` shows of it to its connection's entry (once per pipeline).
    fn publish(&self) {
        let Some(client) = &self.client else {
            return;
        };
        client.publish(|p| {
            if p.name != self.name {
                p.name.clone_from(&self.name);
            }
            p.db = self.db;
            p.resp = self.resp;
            p.multi = self.multi.as_ref().map(multi::Multi::size);
            p.last_command = self.last_command;
            p.last_active = Instant::now();
        });
    }

    /// Whether a blocking command waits: [`Engine::run`] runs it again first (with nothing
    /// new, too) once [`Session::unblocked`] resolves.
    pub fn blocked(&self) -> bool {
        self.block.is_some()
    }

    /// If a blocking command waits: what resolves once it should run again (a push to one of
    /// its keys, or its timeout). See `blocking`.
    pub fn unblocked(&self) -> Option<impl Future<Output = ()> + Send + 'static> {
        self.block.as_ref().map(blocking::Blocked::unblocked)
    }

    /// Whether its next pipeline should wait for its [turn](Engine::turn): its last one read
    /// what it wrote (a client sends the same commands again, as a queue's producer does).
    pub fn wants_turn(&self) -> bool {
        self.took_alone
    }
}

/// The store and what every connection shares: its databases, the password, the lock that
/// orders read-modify-write commands, and the server's counters.
pub struct Engine {
    db: Db,
    /// The handle of each database's keyspace (`databases`).
    dbs: Databases,
    password: Option<Vec<u8>>,
    /// Held shared by blind writes, alone by a run of read-modify-write commands, a
    /// transaction's queue and a flush or swap of databases (`context`).
    read_modify_write: RwLock<()>,
    /// The order in which pipelines that will hold `read_modify_write` alone run: a
    /// connection waits here, without blocking its thread, before its pipeline takes that
    /// lock (`server`). Two runtime threads blocking on the lock in turn would each sleep and
    /// be woken for every pipeline (a third of a hot list's pushes went in that hand-off); a
    /// waiter woken here runs next on the thread that woke it instead. It only orders: the
    /// lock still keeps other writes out, and a pipeline that takes it unannounced is correct.
    turn: Arc<tokio::sync::Mutex<()>>,
    /// What the store was opened with (`memory_budget` as `CONFIG SET` changed it since), for
    /// `CONFIG GET`.
    options: Mutex<Options>,
    /// What `CONFIG SET` keeps that changes nothing (`config`).
    kept: Mutex<config::Kept>,
    /// When a write's reply may leave (`Fsync`, as a number): `--fsync`, or `CONFIG SET
    /// appendfsync` since.
    fsync: AtomicU8,
    /// The store's clock: "now" for TTLs and expiry times (`time`).
    clock: Arc<dyn Clock>,
    /// The connections open (`CLIENT LIST`, `INFO clients`, `maxclients`).
    pub(crate) clients: Clients,
    /// Calls and time per command, for `INFO commandstats`.
    stats: CommandStats,
    /// Error replies by code, for `INFO errorstats`.
    errors: ErrorStats,
    /// Keyspace hits and misses, bytes in and out, rates (`INFO stats`).
    pub(crate) counters: Counters,
    started: Instant,
    /// The last version given to a hash, set, sorted set or list (`encoding`).
    versions: std::sync::atomic::AtomicU64,
    /// The clients blocked on keys (`blocking`).
    blocking: Arc<blocking::Registry>,
}

fn arity(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

fn not_an_integer() -> Reply {
    Reply::error("ERR value is not an integer or out of range")
}

fn store_error(e: spillway::Error) -> Reply {
    Reply::error(format!("ERR {e}"))
}

/// Why a command fails: the store's error (`ERR ...`), or an error of Redis's own that a
/// helper deep in a command finds (`WRONGTYPE ...`), returned with `?` like the store's.
#[derive(Debug)]
pub enum Fail {
    Store(spillway::Error),
    Reply(Reply),
}

impl From<spillway::Error> for Fail {
    fn from(e: spillway::Error) -> Fail {
        Fail::Store(e)
    }
}

impl Fail {
    fn into_reply(self) -> Reply {
        match self {
            Fail::Store(e) => store_error(e),
            Fail::Reply(r) => r,
        }
    }
}

/// What a handler (or a helper of handlers) returns.
pub type CmdResult<T = Reply> = Result<T, Fail>;

/// Redis's error for a command on a key holding another type.
pub fn wrong_type() -> Fail {
    Fail::Reply(Reply::error(
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    ))
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
    /// Serve `db` as `config` says (its databases, password, client limit and options).
    /// "Now" is the store's own clock (`Db::clock`), the one it hides expired keys by.
    pub fn new(db: Db, config: &Config) -> spillway::Result<Engine> {
        if config.databases == 0 {
            return Err(spillway::Error::InvalidOption {
                name: "databases",
                reason: "a server has at least one database".into(),
            });
        }
        Ok(Engine {
            dbs: Databases::open(&db, config.databases, &config.options)?,
            clock: db.clock(),
            db,
            password: config.password.clone().map(String::into_bytes),
            read_modify_write: RwLock::new(()),
            turn: Arc::default(),
            options: Mutex::new(config.options.clone()),
            kept: Mutex::new(config::Kept::default()),
            fsync: AtomicU8::new(config.fsync as u8),
            clients: Clients::new(config.max_clients),
            stats: CommandStats::new(),
            errors: ErrorStats::default(),
            counters: Counters::default(),
            started: Instant::now(),
            versions: std::sync::atomic::AtomicU64::new(0),
            blocking: Arc::default(),
        })
    }

    /// A new connection's session, registered for `CLIENT LIST` and `KILL`: from `peer` to
    /// `local` on socket `fd`. `None` if `maxclients` are open already (counted as refused).
    pub fn connect(&self, peer: SocketAddr, local: SocketAddr, fd: i64) -> Option<Session> {
        self.clients.open(peer, local, fd).map(Session::of)
    }

    /// Connection `id` closed.
    pub fn disconnect(&self, id: u64) {
        self.clients.close(id);
    }

    /// Wait for a turn to run a pipeline that will hold the read-modify-write lock alone
    /// (see [`Session::wants_turn`]); the turn lasts until the guard is dropped.
    pub async fn turn(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.turn.clone().lock_owned().await
    }

    /// When a write's reply may leave, now.
    pub fn fsync(&self) -> Fsync {
        match self.fsync.load(Relaxed) {
            f if f == Fsync::EverySec as u8 => Fsync::EverySec,
            f if f == Fsync::No as u8 => Fsync::No,
            _ => Fsync::Always,
        }
    }

    /// An error sent outside any command (a request that breaks the protocol): counted as
    /// Redis counts every error reply.
    pub fn count_error(&self, text: &str) {
        self.errors.count(text);
    }

    /// Take a sample of the instantaneous rates (the server does every 100 ms).
    pub fn sample_rates(&self) {
        self.counters.sample(self.stats.total_calls());
    }

    /// `CONFIG RESETSTAT`: every statistic INFO shows starts again.
    fn reset_stats(&self) {
        self.stats.reset();
        self.errors.reset();
        self.counters.reset();
        self.clients.reset_counts();
    }

    /// Whether `session` may run commands: it authenticated, or the server has no password.
    pub fn authenticated(&self, session: &Session) -> bool {
        session.authed || self.password.is_none()
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Now, by the store's clock.
    pub(crate) fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// Close the store: the buffer's writes are flushed and the log sealed.
    pub fn close(self) -> spillway::Result<()> {
        self.db.close()
    }

    /// Run `requests` in order for `session`, pushing one reply each to `replies` (none for
    /// an empty request, nor from `SHUTDOWN` on); return the indices in `replies` of those that
    /// wrote, which must wait for an fsync where the server promises one (the store has their
    /// writes, not yet synced).
    ///
    /// A blocking command that blocks (`BLPOP` on empty lists) stops the run: it and the
    /// requests after it wait in the session ([`Session::blocked`]), and run first, before
    /// `requests`, at the next call — made once [`Session::unblocked`] resolves (`blocking`).
    pub fn run(
        &self,
        session: &mut Session,
        requests: Vec<Vec<Vec<u8>>>,
        replies: &mut Vec<Reply>,
    ) -> Vec<usize> {
        session.authed |= self.password.is_none();
        let (mut queue, mut resumed) = match session.block.take() {
            Some(blocked) => {
                let mut queue = VecDeque::from(blocked.rest);
                queue.push_front(blocked.args);
                queue.extend(requests);
                (queue, Some(blocked.registration))
            }
            None => (VecDeque::from(requests), None),
        };
        // Blocked clients that ran again and leave, once this run's writes are in.
        let mut left = Vec::new();
        session.took_alone = false;
        let mut ctx = Ctx::new(self, session, replies);
        while let Some(args) = queue.pop_front() {
            if ctx.session.quit {
                break;
            }
            if args.is_empty() {
                continue; // an empty inline line: Redis answers nothing
            }
            let reply = match (resumed.take(), table::find(&args)) {
                (Some(place), Ok((id, command))) if place.expired() => {
                    ctx.session.last_command = Some(command.name);
                    self.stats.ran(id, std::time::Duration::ZERO, false);
                    left.push(place);
                    Reply::NullArray
                }
                (place, Ok((id, command))) => {
                    ctx.session.last_command = Some(command.name);
                    if let Some(place) = place {
                        ctx.blocking.resume(place);
                    }
                    self.call(&mut ctx, id, command, &args)
                }
                (_, Err(unknown)) => {
                    ctx.session.last_command = None; // as Redis: `cmd=NULL`
                    multi::refused(ctx.session, None, unknown)
                }
            };
            left.extend(ctx.blocking.take_resumed());
            if let Some(registration) = ctx.blocking.take_blocked() {
                let rest = queue.drain(..).collect();
                ctx.session.block = Some(blocking::Blocked {
                    args,
                    rest,
                    registration,
                });
                break;
            }
            if ctx.session.shutdown {
                break; // as Redis: no reply; the connection closes and the server stops
            }
            ctx.reply(reply);
        }
        let ready = std::mem::take(&mut ctx.blocking.ready);
        let swapped = std::mem::take(&mut ctx.blocking.swapped);
        let wrote = ctx.finish();
        session.publish();
        // The writes are in the store: wake whom they concern.
        self.blocking.signal(&ready);
        self.blocking.signal_databases(&swapped);
        drop(left);
        wrote
    }

    /// Run command `id` (`command`) on `args` as Redis would: refused for its arity, then for
    /// want of authentication, then if MULTI may not queue it; queued after MULTI; counted in
    /// its statistics when it runs.
    fn call(
        &self,
        ctx: &mut Ctx,
        id: usize,
        command: &'static spec::Command,
        args: &[Vec<u8>],
    ) -> Reply {
        let handler = match admit(ctx.session, command, args) {
            Ok(handler) => handler,
            Err(refusal) => {
                self.stats.rejected(id);
                return multi::refused(ctx.session, Some(command), refusal);
            }
        };
        if multi::queue(ctx.session, id, command, args) {
            return Reply::status("QUEUED");
        }
        if command.kind == Kind::Read {
            ctx.before_read();
        }
        let started = Instant::now();
        let ran = handler(ctx, args);
        let ended = ctx.end_command(ran.is_ok());
        let reply = match (ran, ended) {
            (Ok(reply), Ok(())) => reply,
            (Err(fail), _) => fail.into_reply(),
            (Ok(_), Err(e)) => store_error(e),
        };
        let failed = matches!(reply, Reply::Error(_));
        if !ctx.blocking.blocked() {
            // A command that blocked counts once it answers.
            self.stats.ran(id, started.elapsed(), failed);
        }
        reply
    }

    /// Whether running `requests` may take long (commands over every key): the server runs
    /// those off its event loop's threads. The rest read a page or two, or write unsynced.
    pub fn may_take_long(requests: &[Vec<Vec<u8>>]) -> bool {
        requests
            .iter()
            .any(|r| !r.is_empty() && table::find(r).is_ok_and(|(_, c)| c.has(flag::LONG)))
    }
}

/// The handler of `command` if `session` may run `args` with it, as Redis checks before running
/// or queueing a command: its arity, authentication, and whether MULTI allows it; else
/// Redis's refusal.
fn admit(
    session: &Session,
    command: &spec::Command,
    args: &[Vec<u8>],
) -> Result<spec::Handler, Reply> {
    // Only a container has no handler of its own, and its arity refuses it alone.
    let (true, Some(handler)) = (command.takes(args.len()), command.run) else {
        return Err(arity(command.name));
    };
    if !session.authed && !command.has(flag::NO_AUTH) {
        return Err(Reply::error("NOAUTH Authentication required."));
    }
    if session.multi.is_some() && command.has(flag::NO_MULTI) {
        return Err(Reply::error("ERR Command not allowed inside a transaction"));
    }
    Ok(handler)
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
    use spillway::{ManualClock, WriteBatch, WriteOptions};

    use super::*;

    pub(in crate::command) fn engine() -> (tempfile::TempDir, Engine) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), spillway::Options::default()).unwrap();
        let engine = Engine::new(db, &Config::new(dir.path())).unwrap();
        (dir, engine)
    }

    /// An engine whose store tells time by a manual clock, which starts at 2030-01-01
    /// (1,893,456,000,000 ms since the epoch). The server's configuration does not name it:
    /// the server takes the store's (`Db::clock`).
    pub(in crate::command) fn engine_at_2030() -> (tempfile::TempDir, Engine, Arc<ManualClock>) {
        let start = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_893_456_000_000);
        let clock = Arc::new(ManualClock::new(start));
        let dir = tempfile::tempdir().unwrap();
        let options = spillway::Options::default().clock(clock.clone());
        let db = Db::open(dir.path(), options).unwrap();
        let engine = Engine::new(db, &Config::new(dir.path())).unwrap();
        (dir, engine, clock)
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
        assert_eq!(out[17], Reply::ok(), "an expiry");
        assert!(err(&out[18]));
    }

    #[test]
    fn a_password_comes_before_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), spillway::Options::default()).unwrap();
        let mut config = Config::new(dir.path());
        config.password = Some("pw".into());
        let e = Engine::new(db, &config).unwrap();
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
                &["SET", "k", "v"],
                &["INFO"],
                &["INFO", "keyspace"],
                &["COMMAND", "COUNT"],
                &["COMMAND", "DOCS"],
                &["CONFIG", "GET", "appendonly"],
                &["CONFIG", "SET", "x", "y"],
                &["AUTH", "x"],
            ],
        );
        let out = &out[1..];
        let Reply::Verbatim(info) = &out[0] else {
            panic!("{:?}", out[0])
        };
        let info = String::from_utf8_lossy(info);
        assert!(info.starts_with("# Server\r\nredis_version:") && info.contains("\r\ndb0:keys="));
        let Reply::Verbatim(keyspace) = &out[1] else {
            panic!("{:?}", out[1])
        };
        assert!(String::from_utf8_lossy(keyspace).starts_with("# Keyspace\r\ndb0:keys=1,"));
        assert_eq!(out[2], Reply::Integer(table::commands().count() as i64));
        let Reply::Map(docs) = &out[3] else {
            panic!("COMMAND DOCS answers a map")
        };
        assert_eq!(docs.len(), table::commands().count());
        assert_eq!(
            out[4],
            Reply::Map(vec![(Reply::bulk("appendonly"), Reply::bulk("yes"))])
        );
        assert!(matches!(&out[5], Reply::Error(_)));
        assert!(matches!(&out[6], Reply::Error(e) if e.contains("without any password")));
    }

    /// The lines of `INFO section`'s answer, as `field:value` pairs.
    fn info_fields(e: &Engine, s: &mut Session, section: &str) -> Vec<(String, String)> {
        let Reply::Verbatim(text) = &run(e, s, &[&["INFO", section]])[0] else {
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
        // The bytes written by cause add up to the bytes written. The counters are read one
        // by one while background threads (the log's prefill, a spill) write: a snapshot
        // between a count and its part does not add up, so take the first that does — a
        // count without its part, or twice, would never.
        let parts_of = |fields: &[(String, String)]| {
            [
                "log",
                "log_prefill",
                "root_spill",
                "node_spill",
                "leaf_rewrite",
                "list_merge",
                "selector",
                "metadata",
            ]
            .map(|p| field(fields, &format!("spillway_{p}_bytes_written")).unwrap())
            .iter()
            .sum::<f64>()
        };
        let mut fields = info_fields(&e, &mut s, "persistence");
        for _ in 0..1000 {
            if parts_of(&fields) == field(&fields, "spillway_disk_bytes_written").unwrap() {
                break;
            }
            fields = info_fields(&e, &mut s, "persistence");
        }
        let written = field(&fields, "spillway_disk_bytes_written").unwrap();
        assert_eq!(parts_of(&fields), written, "{fields:?}");
        let amplification = field(&fields, "spillway_write_amplification").unwrap();
        assert!((1.0..3.0).contains(&amplification), "{amplification}");
    }

    #[test]
    fn commandstats_count_calls_refusals_and_errors_until_a_reset() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v"],
                &["GET", "k"],
                &["get", "k"],
                &["GET"],
                &["INCR", "k"],
                &["CLIENT", "ID"],
            ],
        );
        let stats = info_fields(&e, &mut s, "commandstats");
        let of = |name: &str| {
            let line = stats.iter().find(|(k, _)| k == &format!("cmdstat_{name}"));
            let value = line.map_or("", |(_, v)| v.as_str());
            let counts: Vec<_> = value.split(',').filter_map(|f| f.split_once('=')).collect();
            let count = |field| counts.iter().find(|(k, _)| *k == field).map(|(_, v)| *v);
            (
                count("calls"),
                count("rejected_calls"),
                count("failed_calls"),
            )
        };
        assert_eq!(of("get"), (Some("2"), Some("1"), Some("0")));
        assert_eq!(of("incr"), (Some("1"), Some("0"), Some("1")));
        assert_eq!(of("client|id").0, Some("1"));
        assert_eq!(of("set").0, Some("1"));
        assert_eq!(of("del").0, None, "only commands used are listed");
        let everything = info_fields(&e, &mut s, "all");
        assert!(everything.iter().any(|(k, _)| k == "cmdstat_get"));
        let default = info_fields(&e, &mut s, "default");
        assert!(!default.iter().any(|(k, _)| k.starts_with("cmdstat_")));
        assert!(default.iter().any(|(k, _)| k == "connected_clients"));
        run(&e, &mut s, &[&["CONFIG", "RESETSTAT"]]);
        let stats = info_fields(&e, &mut s, "commandstats");
        let names: Vec<&str> = stats.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["cmdstat_config|resetstat"],
            "counted since the reset"
        );
    }

    #[test]
    fn commands_that_may_take_long_run_off_the_event_loop() {
        let req = |args: &[&str]| vec![args.iter().map(|a| a.as_bytes().to_vec()).collect()];
        for long in [
            "KEYS *",
            "SCAN 0",
            "SWAPDB 0 1",
            "DBSIZE",
            "INFO",
            "EXEC",
            "LCS a b",
        ] {
            let args: Vec<&str> = long.split(' ').collect();
            assert!(Engine::may_take_long(&req(&args)), "{long}");
        }
        // A flush is one record per database, whatever they hold.
        for short in [
            "GET k",
            "SET k v",
            "PING",
            "NOSUCH",
            "CLIENT ID",
            "FLUSHDB",
            "flushall ASYNC",
        ] {
            let args: Vec<&str> = short.split(' ').collect();
            assert!(!Engine::may_take_long(&req(&args)), "{short}");
        }
    }

    #[test]
    fn config_get_takes_several_patterns_and_names_the_stores_options() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["CONFIG", "GET", "appendonly", "SAVE", "appendonly"],
                &["CONFIG", "GET", "key_order", "*_size"],
                &["CONFIG", "GET", "nosuch"],
            ],
        );
        let names = |r: &Reply| match r {
            Reply::Map(pairs) => pairs.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let bulks = |names: &[&str]| names.iter().map(|n| Reply::bulk(*n)).collect::<Vec<_>>();
        assert_eq!(names(&out[0]), bulks(&["save", "appendonly"]));
        assert_eq!(
            names(&out[1]),
            bulks(&["root_buffer_size", "node_size", "page_size", "key_order"])
        );
        let Reply::Map(pairs) = &out[1] else {
            unreachable!()
        };
        assert_eq!(pairs[3].1, Reply::bulk("hashed"), "the store's, not `none`");
        assert_eq!(out[2], Reply::Map(vec![]));
    }

    /// A connection waits for its turn when its last pipeline read what it wrote (it held the
    /// lock alone), and not when it only wrote blind or read.
    #[test]
    fn a_pipeline_that_read_what_it_wrote_asks_for_a_turn_next() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        assert!(!s.wants_turn());
        for (pipeline, turn) in [
            (&[&["INCR", "n"][..]][..], true),
            (&[&["SET", "k", "v"], &["GET", "k"]], false),
            (&[&["SET", "k", "v"], &["LPUSH", "l", "x"]], true),
            (&[&["MGET", "k", "n"]], false),
            (&[&["MULTI"], &["SET", "k", "w"], &["EXEC"]], true),
        ] {
            run(&e, &mut s, pipeline);
            assert_eq!(s.wants_turn(), turn, "after {pipeline:?}");
        }
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
                &["SELECT", "16"],
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
        assert_eq!(out[2], Reply::status("PONG"));
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
                // As Redis: 4989.4 in 80 bits is 17-decimal exact no more.
                Reply::bulk("-4989.39999999999999991")
            ]
        );
        assert_eq!(out[3..6], [float_error.clone(), Reply::ok(), float_error]);
        assert_eq!(
            out[6],
            Reply::error("ERR increment would produce NaN or Infinity")
        );
        assert_eq!(out[7], Reply::bulk("-4989.39999999999999991"));
        assert_eq!(out[8], Reply::error("ERR No shutdown in progress."));
        assert_eq!(
            out[9..11],
            [
                Reply::error("ERR syntax error"),
                Reply::error("ERR syntax error")
            ]
        );
        assert_eq!(out[11], Reply::status("PONG"));
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
