//! What a handler runs with ([`Ctx`]): its connection, its selected database, and the
//! pipeline's writes.
//!
//! A pipeline's writes reach the store in as few log appends as keep every reply true:
//! - **blind writes** (`SET k v`, `MSET`: they read nothing) gather in one batch, written once
//!   something must see them (a read, a command that reads what it writes) or at the
//!   pipeline's end. The batch holds the shared side of `Engine::read_modify_write` from its
//!   first write to its append: a flush or swap of databases holds it alone, so a write comes
//!   wholly before or after one (`databases`);
//! - a run of **read-modify-write** commands (`INCR k`, `SET k v NX`, `DEL`'s count) is
//!   staged: it holds that lock alone from its first read to its append, so that no other
//!   write comes between what it read and what it writes, and its reads see its own staged
//!   writes first. One append per run instead of one per command: 16 pipelined INCRs cost one.
//!
//! A command is one or the other by what it does: a read through [`Ctx::get`] makes its writes
//! staged. A batch past a megabyte is written between commands (never within one: a command's
//! writes stay in one batch, so that it is atomic), so that a pipeline of big values is not
//! held in memory twice.
//!
//! A transaction's queue (EXEC) runs under that lock held alone, which it keeps to the end,
//! with an engine [`Transaction`] begun then to read: every read and scan of the queue's
//! commands sees the queue's own writes on top of the store as it was when EXEC began. The
//! writes also go, in order, into one [`WriteBatch`], committed at the end — one log record,
//! which a crash keeps whole or drops whole and which other clients' reads see whole or not at
//! all. Nothing else writes meanwhile, so there is nothing to conflict with.
//!
//! **A flush in the queue** (`FLUSHDB`, `FLUSHALL`) is a clear of each database's keyspace
//! (`databases`), added to that batch where it comes: atomic with the rest of the queue like
//! any write. The transaction cannot take a clear, so from then on the queue's commands read a
//! flushed database from what the queue wrote to it since the flush alone (an overlay, in key
//! order), not from the transaction. A swap (`SWAPDB`) changes keyspaces, not keys: the
//! queue's writes before it are committed first, and a new transaction takes the rest.
//!
//! Nothing here waits for an fsync: [`Ctx::finish`] lists the replies of commands that wrote,
//! which the server holds until an fsync begun after the writes covers them (see `sync`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{RwLockReadGuard, RwLockWriteGuard};
use std::time::SystemTime;

use spillway::{Expiry, Keyspace, Transaction, WriteBatch, WriteOptions};

use super::time;
use super::{store_error, Engine, Session};
use crate::locks;
use crate::resp::Reply;

/// Bytes of writes past which a batch is written before the next command.
const MAX_BATCH: usize = 1 << 20;

/// Keys and values of a database, in its order, as a command over every key reads them.
pub type Keys = Box<dyn Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>> + 'static>;

/// A handler's view of its connection, the store and its pipeline's writes.
pub struct Ctx<'a> {
    pub engine: &'a Engine,
    pub session: &'a mut Session,
    replies: &'a mut Vec<Reply>,
    blind: Batch,
    staged: Batch,
    /// The side of `Engine::read_modify_write` held: shared while `blind` has writes, alone
    /// while `staged` has (or may get) some, or through a transaction's queue.
    held: Held<'a>,
    /// The staged value and expiry of each key the run wrote (`None`: deleted), in the selected
    /// database (a SELECT outside a transaction ends the run).
    newest: HashMap<Vec<u8>, Option<(Vec<u8>, Expiry)>>,
    /// Indices of the replies of commands that wrote.
    wrote: Vec<usize>,
    /// How the running command has used the store.
    now: Running,
    /// A transaction's queue is running (see [`Ctx::begin_transaction`]).
    exec: Option<Exec>,
    /// Keys the pipeline's reads found and did not find (Redis's keyspace hits and misses),
    /// added to the server's counts once, at its end.
    hits: u64,
    misses: u64,
}

enum Held<'a> {
    Nothing,
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

/// A transaction's queue, running.
struct Exec {
    /// The store as it was when the queue began (or at its last swap), and the queue's writes
    /// since to the databases it has not flushed: what the queue reads.
    tx: Transaction,
    /// Every write of the queue (since its last swap), flushes' clears included, in order: what
    /// is committed.
    batch: WriteBatch,
    /// The databases the queue flushed (since its last swap), each with what the queue wrote
    /// to it since: what the queue reads of them.
    flushed: HashMap<usize, Overlay>,
    /// The databases whose clears `batch` holds.
    clears: Vec<usize>,
    /// Some of the queue's writes were committed already (before a swap in it).
    committed: bool,
    /// A commit before a swap failed: EXEC's reply is its error.
    failed: Option<spillway::Error>,
}

/// A flushed database's keys as a transaction's queue wrote them since the flush, by position
/// (route, key); `None`: deleted.
type Overlay = BTreeMap<(u64, Vec<u8>), Option<(Vec<u8>, Expiry)>>;

/// [`Error::KeyTooLarge`](spillway::Error::KeyTooLarge) or
/// [`Error::ValueTooLarge`](spillway::Error::ValueTooLarge), if `key` or `op`'s value is.
fn check_sizes(key: &[u8], op: &Op) -> spillway::Result<()> {
    if key.len() > spillway::MAX_KEY_LEN {
        return Err(spillway::Error::KeyTooLarge {
            len: key.len(),
            max: spillway::MAX_KEY_LEN,
        });
    }
    match op {
        Op::Put(v, _) if v.len() > spillway::MAX_VALUE_LEN => Err(spillway::Error::ValueTooLarge {
            len: v.len(),
            max: spillway::MAX_VALUE_LEN,
        }),
        _ => Ok(()),
    }
}

/// What `overlay` holds at `key` at `now` (an expired write is gone).
fn overlay_entry(overlay: &Overlay, engine: &Engine, key: &[u8]) -> Option<(Vec<u8>, Expiry)> {
    let route = engine.db.key_order().route(key);
    let now = engine.now();
    let found = overlay.get(&(route, key.to_vec()))?.clone();
    found.filter(|&(_, e)| time::alive(e, now))
}

impl Exec {
    /// Commit the queue's batch so far (unsynced): then the store has its writes and clears,
    /// and its reads go to the store again. A failure is kept as EXEC's reply.
    fn commit_so_far(&mut self, engine: &Engine) -> spillway::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let clears = std::mem::take(&mut self.clears);
        self.flushed.clear();
        if let Some(e) = &self.failed {
            engine.dbs.not_flushed(&clears);
            return Err(e.clone()); // nothing after a failed part is committed
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.committed = true;
        engine
            .db
            .write(batch, WriteOptions::NO_SYNC)
            .inspect_err(|e| {
                engine.dbs.not_flushed(&clears);
                self.failed.get_or_insert(e.clone());
            })
    }
}

/// A write to a key, as a batch or a transaction takes it.
#[derive(Clone, Copy)]
enum Op<'v> {
    /// The value, and when it expires.
    Put(&'v [u8], Expiry),
    Delete,
    /// The engine's expire message: the key's value stays, its expiry becomes this.
    Expire(SystemTime),
}

impl Op<'_> {
    fn value_len(&self) -> usize {
        match self {
            Op::Put(v, _) => v.len(),
            Op::Delete | Op::Expire(_) => 0,
        }
    }

    fn add_to(self, batch: &mut WriteBatch, ks: &Keyspace, key: &[u8]) {
        match self {
            Op::Put(v, Expiry::Never) => batch.put_in(ks, key, v),
            Op::Put(v, Expiry::At(t)) => batch.put_expiring_in(ks, key, v, t),
            Op::Delete => batch.delete_in(ks, key),
            Op::Expire(t) => batch.expire_in(ks, key, t),
        }
    }
}

/// Writes waiting to go in, and the replies that wait for them.
#[derive(Default)]
struct Batch {
    batch: WriteBatch,
    bytes: usize,
    /// Replies of the commands whose writes it holds: the append's error instead, if it fails.
    replies: Vec<usize>,
}

#[derive(Default)]
struct Running {
    read: bool,
    wrote_blind: bool,
    staged: bool,
    /// Wrote, and its writes are in the store already (a transaction's): its reply waits only
    /// for the fsync.
    appended: bool,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(
        engine: &'a Engine,
        session: &'a mut Session,
        replies: &'a mut Vec<Reply>,
    ) -> Ctx<'a> {
        Ctx {
            engine,
            session,
            replies,
            blind: Batch::default(),
            staged: Batch::default(),
            held: Held::Nothing,
            newest: HashMap::new(),
            wrote: Vec::new(),
            now: Running::default(),
            exec: None,
            hits: 0,
            misses: 0,
        }
    }

    /// Add the pipeline's keyspace hits and misses so far to the server's counts: at its end,
    /// and before an `INFO` in it, which shows them.
    pub fn count_lookups(&mut self) {
        self.engine.counters.looked_up(self.hits, self.misses);
        (self.hits, self.misses) = (0, 0);
    }

    /// A read of a key found it or not: a keyspace hit or miss, as Redis counts those of
    /// commands that read (GET, MGET, EXISTS, TTL, GETDEL, `SET ... GET`, ...) and not those of
    /// commands that write what they read (INCR, APPEND, EXPIRE, `SET NX`, ...).
    pub fn looked_up(&mut self, found: bool) {
        match found {
            true => self.hits += 1,
            false => self.misses += 1,
        }
    }

    /// The selected database's handle (`None`: it has no keyspace, so no key).
    fn keyspace(&self) -> Option<Keyspace> {
        self.engine.dbs.handle(self.session.db)
    }

    /// The selected database's handle, its keyspace created if need be: for a write, under
    /// the lock.
    fn writable(&self) -> spillway::Result<Keyspace> {
        self.engine.dbs.create(&self.engine.db, self.session.db)
    }

    /// `read` on the selected database's keyspace as it is now; `empty` if it has none.
    fn read_store<T>(
        &self,
        empty: impl Fn() -> T,
        read: impl Fn(&Keyspace) -> spillway::Result<T>,
    ) -> spillway::Result<T> {
        match self.keyspace() {
            Some(ks) => read(&ks),
            None => Ok(empty()),
        }
    }

    /// `key`'s value for a command that only reads: as the store has it, or as the running
    /// transaction sees it.
    pub fn read(&mut self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        let value = self.read_uncounted(key)?;
        self.looked_up(value.is_some());
        Ok(value)
    }

    fn read_uncounted(&mut self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        if let Some(exec) = &mut self.exec {
            if let Some(overlay) = exec.flushed.get(&self.session.db) {
                return Ok(overlay_entry(overlay, self.engine, key).map(|(v, _)| v));
            }
            return match self.engine.dbs.handle(self.session.db) {
                Some(ks) => exec.tx.get(&ks, key),
                None => Ok(None),
            };
        }
        self.read_store(|| None, |ks| ks.get(key))
    }

    /// The values of `keys`, as [`Ctx::read`] reads each, at one point in time.
    pub fn read_many(&mut self, keys: &[Vec<u8>]) -> spillway::Result<Vec<Option<Vec<u8>>>> {
        let values = self.read_many_uncounted(keys)?;
        for v in &values {
            self.looked_up(v.is_some());
        }
        Ok(values)
    }

    fn read_many_uncounted(&mut self, keys: &[Vec<u8>]) -> spillway::Result<Vec<Option<Vec<u8>>>> {
        if let Some(exec) = &mut self.exec {
            if let Some(overlay) = exec.flushed.get(&self.session.db) {
                let value = |k: &Vec<u8>| overlay_entry(overlay, self.engine, k).map(|(v, _)| v);
                return Ok(keys.iter().map(value).collect());
            }
            return match self.engine.dbs.handle(self.session.db) {
                Some(ks) => exec.tx.multi_get(&ks, keys),
                None => Ok(vec![None; keys.len()]),
            };
        }
        self.read_store(|| vec![None; keys.len()], |ks| ks.multi_get(keys))
    }

    /// The expiry of `key` for a command that only reads (`TTL`): `None` if it is absent.
    pub fn read_expiry(&mut self, key: &[u8]) -> spillway::Result<Option<Expiry>> {
        let expiry = self.read_expiry_uncounted(key)?;
        self.looked_up(expiry.is_some());
        Ok(expiry)
    }

    fn read_expiry_uncounted(&mut self, key: &[u8]) -> spillway::Result<Option<Expiry>> {
        if let Some(exec) = &mut self.exec {
            if let Some(overlay) = exec.flushed.get(&self.session.db) {
                return Ok(overlay_entry(overlay, self.engine, key).map(|(_, e)| e));
            }
            return match self.engine.dbs.handle(self.session.db) {
                Some(ks) => exec.tx.expiry(&ks, key),
                None => Ok(None),
            };
        }
        self.read_store(|| None, |ks| ks.expiry(key))
    }

    /// `key`'s value for a command that writes what it reads: the pipeline's writes so far
    /// are seen, and no other connection's write comes between this read and this command's
    /// writes.
    pub fn get(&mut self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        Ok(self.get_with_expiry(key)?.map(|(value, _)| value))
    }

    /// `key`'s value and expiry, read as [`Ctx::get`] reads.
    pub fn get_with_expiry(&mut self, key: &[u8]) -> spillway::Result<Option<(Vec<u8>, Expiry)>> {
        self.now.read = true;
        if let Some(exec) = &mut self.exec {
            if let Some(overlay) = exec.flushed.get(&self.session.db) {
                return Ok(overlay_entry(overlay, self.engine, key));
            }
            return match self.engine.dbs.handle(self.session.db) {
                Some(ks) => exec.tx.get_with_expiry(&ks, key),
                None => Ok(None),
            };
        }
        self.alone();
        match self.newest.get(key) {
            // A staged write whose time has come since is gone, as the engine will have it.
            Some(staged) => {
                let now = self.engine.now();
                Ok(staged.clone().filter(|&(_, e)| time::alive(e, now)))
            }
            None => self
                .keyspace()
                .map_or(Ok(None), |ks| ks.get_with_expiry(key)),
        }
    }

    /// Put `value` at `key`, with no expiry (a key's former one goes: Redis's `SET`).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> spillway::Result<()> {
        self.put_expiring(key, value, Expiry::Never)
    }

    /// Put `value` at `key`, gone at `expiry`'s time (already gone if that has passed).
    pub fn put_expiring(
        &mut self,
        key: &[u8],
        value: &[u8],
        expiry: Expiry,
    ) -> spillway::Result<()> {
        self.write(key, Op::Put(value, expiry), Some((value, expiry)))
    }

    pub fn delete(&mut self, key: &[u8]) -> spillway::Result<()> {
        self.write(key, Op::Delete, None)
    }

    /// Give `key` the expiry `to`: the command read it holding `value`, expiring `from`.
    ///
    /// A key that had no expiry gets the engine's expire message, which rewrites no value. A
    /// key that had one is written again whole: a message is folded with the key's record
    /// when it is applied, and by then the old expiry may have passed — the key found gone,
    /// the message dropped — where Redis, having answered that it set the new expiry, keeps the
    /// key. The same holds for taking an expiry away (`PERSIST`).
    pub fn retime(
        &mut self,
        key: &[u8],
        value: &[u8],
        from: Expiry,
        to: Expiry,
    ) -> spillway::Result<()> {
        match (from, to) {
            (Expiry::Never, Expiry::Never) => Ok(()),
            (Expiry::Never, Expiry::At(t)) => self.write(key, Op::Expire(t), Some((value, to))),
            (Expiry::At(_), _) => self.put_expiring(key, value, to),
        }
    }

    /// Apply `op` to `key`, which then holds `after` (for the staged run's later reads).
    fn write(
        &mut self,
        key: &[u8],
        op: Op,
        after: Option<(&[u8], Expiry)>,
    ) -> spillway::Result<()> {
        let (engine, n) = (self.engine, self.session.db);
        let put = matches!(op, Op::Put(..));
        if let Some(exec) = &mut self.exec {
            let ks = engine.dbs.create(&engine.db, n)?; // the lock is held alone
            match exec.flushed.get_mut(&n) {
                Some(overlay) => {
                    check_sizes(key, &op)?; // as the transaction checks its writes
                    let route = engine.db.key_order().route(key);
                    let after = after.map(|(v, e)| (v.to_vec(), e));
                    overlay.insert((route, key.to_vec()), after);
                }
                None => match op {
                    Op::Put(v, Expiry::Never) => exec.tx.put(&ks, key, v)?,
                    Op::Put(v, Expiry::At(t)) => exec.tx.put_expiring(&ks, key, v, t)?,
                    Op::Delete => exec.tx.delete(&ks, key)?,
                    Op::Expire(t) => exec.tx.expire(&ks, key, t)?,
                },
            }
            engine.dbs.wrote(n, put);
            op.add_to(&mut exec.batch, &ks, key);
            return Ok(());
        }
        let bytes = key.len() + op.value_len();
        if self.now.read {
            let ks = self.writable()?; // the lock is held alone
            engine.dbs.wrote(n, put);
            op.add_to(&mut self.staged.batch, &ks, key);
            self.staged.bytes += bytes;
            let after = after.map(|(v, e)| (v.to_vec(), e));
            self.newest.insert(key.to_vec(), after);
            self.now.staged = true;
        } else {
            self.blind_write();
            let ks = self.writable()?; // the lock is held shared
            engine.dbs.wrote(n, put);
            op.add_to(&mut self.blind.batch, &ks, key);
            self.blind.bytes += bytes;
        }
        Ok(())
    }

    /// Hold the lock alone, after writing what the pipeline wrote blind (holding it shared).
    fn alone(&mut self) {
        if !matches!(self.held, Held::Alone(_)) {
            let _ = self.write_blind(); // their replies say if it failed
            self.held = Held::Alone(locks::write(&self.engine.read_modify_write));
        }
    }

    /// A blind write follows what the pipeline staged, and holds the lock shared until its
    /// batch is appended.
    fn blind_write(&mut self) {
        if !self.now.wrote_blind {
            let _ = self.write_staged();
            self.now.wrote_blind = true;
        }
        if matches!(self.held, Held::Nothing) {
            self.held = Held::Shared(locks::read(&self.engine.read_modify_write));
        }
    }

    /// Every key of the selected database with its value, in its order: those whose route is
    /// `from` or more (a SCAN's cursor), or under `prefix` (in an ordered store). In a
    /// transaction, its own writes are seen.
    pub fn keys(&mut self, from: u64, prefix: Option<&[u8]>) -> spillway::Result<Keys> {
        if let Some(exec) = &mut self.exec {
            if let Some(overlay) = exec.flushed.get(&self.session.db) {
                let now = self.engine.now();
                let keys: Vec<_> = overlay
                    .range((from, Vec::new())..)
                    .filter(|((_, k), _)| prefix.is_none_or(|p| k.starts_with(p)))
                    .filter_map(|((_, k), entry)| match entry {
                        Some((v, e)) if time::alive(*e, now) => Some(Ok((k.clone(), v.clone()))),
                        _ => None,
                    })
                    .collect();
                return Ok(Box::new(keys.into_iter()));
            }
            let Some(ks) = self.engine.dbs.handle(self.session.db) else {
                return Ok(Box::new(std::iter::empty()));
            };
            let it = match prefix {
                Some(p) => exec.tx.prefix(&ks, p)?,
                None => exec.tx.iter(&ks)?,
            };
            if from == 0 {
                return Ok(Box::new(it));
            }
            // A transaction's iterator cannot seek: SCAN in MULTI reads up to its cursor.
            let order = self.engine.db.key_order();
            let before = move |e: &spillway::Result<(Vec<u8>, Vec<u8>)>| {
                e.as_ref().is_ok_and(|(k, _)| order.route(k) < from)
            };
            return Ok(Box::new(it.skip_while(before)));
        }
        self.read_store(
            || -> Keys { Box::new(std::iter::empty()) },
            |ks| -> spillway::Result<Keys> {
                let mut it = match prefix {
                    Some(p) => ks.prefix(p)?,
                    None => ks.iter()?,
                };
                if from != 0 {
                    it.seek_route(from);
                }
                Ok(Box::new(it))
            },
        )
    }

    /// The keys of the selected database, as `DBSIZE` answers: counted exactly up to
    /// `counted_up_to`, else estimated.
    pub fn key_count(&mut self, counted_up_to: u64) -> spillway::Result<u64> {
        let n = self.session.db;
        let flushed_in_queue = self
            .exec
            .as_ref()
            .is_some_and(|e| e.flushed.contains_key(&n));
        let estimate = match flushed_in_queue {
            true => Some(0), // counted from the overlay
            false => self.read_store(|| Some(0), |ks| ks.estimate_keys())?,
        };
        // The estimate counts what a flush covers until spills drop it: the puts since bound it.
        let bound = self.engine.dbs.bound(n).unwrap_or(u64::MAX);
        let estimate = estimate.unwrap_or(u64::MAX).min(bound);
        if estimate > counted_up_to {
            return Ok(estimate);
        }
        let mut n = 0;
        for entry in self.keys(0, None)? {
            entry?;
            n += 1;
        }
        Ok(n)
    }

    /// Select database `n`. Outside a transaction the pipeline's writes go in first: a staged
    /// run reads one database.
    pub fn select(&mut self, n: usize) {
        if self.exec.is_none() {
            self.settle();
        }
        self.session.db = n;
    }

    /// Empty databases `ns` (`FLUSHDB`, `FLUSHALL`): a clear of each that may hold keys, in
    /// one batch. Outside a transaction, after the pipeline's writes, holding the lock alone
    /// (the reply waits for the fsync, as a write's). In a transaction's queue, the clears join
    /// its batch, and its reads of those databases see only what it writes to them from now.
    pub fn flush(&mut self, ns: &[usize]) -> spillway::Result<()> {
        let engine = self.engine;
        let Some(exec) = &mut self.exec else {
            self.settle();
            self.held = Held::Alone(locks::write(&engine.read_modify_write));
            let flushed = engine.dbs.flush(&engine.db, ns);
            self.held = Held::Nothing;
            self.now.appended |= matches!(flushed, Ok(true));
            return flushed.map(drop);
        };
        for n in engine.dbs.clear(ns, &mut exec.batch) {
            exec.flushed.insert(n, Overlay::new());
            exec.clears.push(n);
        }
        Ok(())
    }

    /// Change databases' keyspaces (a swap) with `change`, holding the lock alone: after the
    /// pipeline's writes, or, in a transaction, after committing its writes so far (its reads
    /// after the change see the store as changed).
    pub fn change_databases(
        &mut self,
        change: impl FnOnce(&Engine) -> spillway::Result<()>,
    ) -> spillway::Result<()> {
        let engine = self.engine;
        let Some(exec) = &mut self.exec else {
            self.settle();
            self.held = Held::Alone(locks::write(&engine.read_modify_write));
            let changed = change(engine);
            self.held = Held::Nothing;
            return changed;
        };
        exec.commit_so_far(engine)?;
        let changed = change(engine);
        exec.tx = engine.db.transaction();
        changed
    }

    /// Write what the pipeline holds, so that a command reading the store directly sees it
    /// (done before every [`Kind::Read`](super::spec::Kind::Read) command outside a
    /// transaction, whose reads see its writes anyway).
    pub fn settle(&mut self) {
        let _ = self.write_staged();
        let _ = self.write_blind();
    }

    /// Before a [`Kind::Read`](super::spec::Kind::Read) command.
    pub(super) fn before_read(&mut self) {
        if self.exec.is_none() {
            self.settle();
        }
    }

    /// Write what the pipeline holds and hold the lock shared: no flush or swap of databases
    /// until the guard is dropped (`WATCH` notes keys and generations under it).
    pub(super) fn settled_shared(&mut self) -> RwLockReadGuard<'a, ()> {
        self.settle();
        locks::read(&self.engine.read_modify_write)
    }

    /// Start running a transaction's queue (EXEC): what the pipeline wrote before it goes in
    /// first, then no other client writes until [`Ctx::end_transaction`] (or
    /// [`Ctx::abort_transaction`]).
    pub(super) fn begin_transaction(&mut self) {
        self.settle();
        self.held = Held::Alone(locks::write(&self.engine.read_modify_write));
        self.exec = Some(Exec {
            tx: self.engine.db.transaction(),
            batch: WriteBatch::new(),
            flushed: HashMap::new(),
            clears: Vec::new(),
            committed: false,
            failed: None,
        });
    }

    /// Run nothing of the transaction (a watched key changed), and let other writers in.
    pub(super) fn abort_transaction(&mut self) {
        self.exec = None;
        self.held = Held::Nothing;
    }

    /// Commit what the transaction's queue wrote, as one batch, and let other writers in.
    pub(super) fn end_transaction(&mut self) -> spillway::Result<()> {
        let mut exec = self.exec.take().expect("a transaction runs");
        self.now.appended |= !exec.batch.is_empty() || exec.committed;
        let committed = match exec.failed.take() {
            Some(e) => {
                self.engine.dbs.not_flushed(&exec.clears);
                Err(e)
            }
            None => exec.commit_so_far(self.engine),
        };
        self.held = Held::Nothing;
        committed
    }

    /// The running command's reply: keep it, and note it among those its writes' append
    /// decides, if it wrote.
    pub(super) fn reply(&mut self, reply: Reply) {
        // Every error reply counts as it is made, those in EXEC's array too (as Redis).
        self.engine.errors.count_in(&reply);
        let i = self.replies.len();
        self.replies.push(reply);
        if self.now.wrote_blind {
            self.blind.replies.push(i);
            self.wrote.push(i);
        }
        if self.now.staged {
            self.staged.replies.push(i);
            self.wrote.push(i);
        }
        if self.now.appended {
            self.wrote.push(i);
        }
        self.now = Running::default();
        if self.staged.bytes >= MAX_BATCH {
            let _ = self.write_staged();
        }
        if self.blind.bytes >= MAX_BATCH {
            let _ = self.write_blind();
        }
    }

    /// Write what is left; the indices of the replies of commands that wrote.
    pub(super) fn finish(mut self) -> Vec<usize> {
        self.settle();
        self.count_lookups();
        std::mem::take(&mut self.wrote)
    }

    /// Append the blind batch (under the shared lock it holds), and let it go.
    fn write_blind(&mut self) -> spillway::Result<()> {
        let Batch { batch, replies, .. } = std::mem::take(&mut self.blind);
        let written = match batch.is_empty() {
            true => Ok(()),
            false => self.engine.db.write(batch, WriteOptions::NO_SYNC),
        };
        if matches!(self.held, Held::Shared(_)) {
            self.held = Held::Nothing;
        }
        self.fail(&written, &replies);
        written
    }

    /// Write the staged run, and let other writers in (unless a transaction runs on).
    fn write_staged(&mut self) -> spillway::Result<()> {
        let Batch { batch, replies, .. } = std::mem::take(&mut self.staged);
        self.newest.clear();
        let written = match batch.is_empty() {
            true => Ok(()),
            false => self.engine.db.write(batch, WriteOptions::NO_SYNC),
        };
        if self.exec.is_none() && matches!(self.held, Held::Alone(_)) {
            self.held = Held::Nothing;
        }
        self.fail(&written, &replies);
        written
    }

    /// If an append failed, the replies of the commands it held become its error.
    fn fail(&mut self, written: &spillway::Result<()>, replies: &[usize]) {
        if let Err(e) = written {
            let failed = store_error(e.clone());
            for &i in replies {
                self.replies[i] = failed.clone();
                self.engine.errors.count_in(&failed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;

    #[test]
    fn a_pipeline_of_big_values_is_written_a_megabyte_at_a_time() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let big = "v".repeat(700 << 10);
        let groups = || e.db().stats().write_groups;
        let before = groups();
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "a", &big],
                &["SET", "b", &big],
                &["SET", "c", &big],
                &["APPEND", "a", "x"],
                &["APPEND", "b", "x"],
                &["APPEND", "c", "x"],
            ],
        );
        assert_eq!(out.len(), 6);
        // Blind: a and b past a megabyte, then c; staged: the same for the APPENDs.
        assert_eq!(groups() - before, 4);
    }
}
