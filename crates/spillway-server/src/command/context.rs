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
//!   The run keeps only the last put or delete of each key (`staged_run`): 16 pipelined
//!   LPUSHes rewrite the list's metadata 16 times, and append it once.
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
//! **A flush in the queue** (`FLUSHDB`, `FLUSHALL`) is a clear of each of the database's
//! keyspaces (`databases`), added to that batch where it comes, and to the transaction, whose
//! reads from then on see only what the queue writes after it. A swap (`SWAPDB`) changes
//! keyspaces, not keys: the queue's writes before it are committed first, and a new
//! transaction takes the rest.
//!
//! **Spaces.** A database keeps strings, the metadata of other types and their fields in a
//! keyspace each (`databases::Space`); everything here takes the space it reads or writes, and
//! a pipeline's batch and a transaction's commit span them all. The string accessors
//! ([`Ctx::read`], [`Ctx::get`], [`Ctx::put`]...) keep a key one type: reading a key that
//! holds another type is Redis's `WRONGTYPE`, and writing a string over one removes it
//! (`encoding`).
//!
//! Nothing here waits for an fsync: [`Ctx::finish`] lists the replies of commands that wrote,
//! which the server holds until an fsync begun after the writes covers them (see `sync`).

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::{RwLockReadGuard, RwLockWriteGuard};
use std::time::SystemTime;

use spillway::{Expiry, Keyspace, Transaction, WriteBatch, WriteOptions};

use super::databases::Space;
use super::kept::Kept;
use super::overlay::Overlay;
use super::staged_run::{Owned, StagedRun};
use super::{encoding, time, wrong_type, CmdResult};
use super::{store_error, Engine, Session};
use crate::locks;
use crate::resp::Reply;

/// Bytes of writes past which a batch is written before the next command.
const MAX_BATCH: usize = 1 << 20;

/// The most staged keys a scan lays over the store (each scan reads them all); past it the
/// staged run is appended first.
const MAX_OVERLAY: usize = 1024;

/// The keys of a database, in its order (route, then key), as a command over every key reads
/// them: each with the space it is in (strings or another type's metadata) and its value there.
pub type Keys = Box<dyn Iterator<Item = spillway::Result<(Vec<u8>, Space, Vec<u8>)>> + 'static>;

/// Records of an ordered space in a range, either way.
pub type Scan = Box<dyn DoubleEndedIterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>> + 'static>;

/// A key found in a database: where, its value there and its expiry.
#[derive(Clone, Debug)]
pub struct Entry {
    pub space: Space,
    pub value: Vec<u8>,
    pub expiry: Expiry,
}

/// A staged write: the value and expiry (`None`: deleted).
pub(super) type Staged = Option<(Vec<u8>, Expiry)>;

/// A key of a space, as `newest` holds it.
pub(super) type At = (Space, Vec<u8>);

/// A handler's view of its connection, the store and its pipeline's writes.
pub struct Ctx<'a> {
    pub engine: &'a Engine,
    pub session: &'a mut Session,
    replies: &'a mut Vec<Reply>,
    blind: Batch,
    staged: StagedRun,
    /// The side of `Engine::read_modify_write` held: shared while `blind` has writes, alone
    /// while `staged` has (or may get) some, or through a transaction's queue.
    held: Held<'a>,
    /// The staged value and expiry of each key the run wrote (`None`: deleted), in the selected
    /// database (a SELECT outside a transaction ends the run).
    newest: HashMap<At, Staged>,
    /// Whether `newest` holds a blind write: one appended already, which another client may
    /// have written over since (a scan then reads the store, not `newest`: `scan_in`).
    newest_blind: bool,
    /// Indices of the replies of commands that wrote.
    wrote: Vec<usize>,
    /// The range deletes of the staged run (or of the running command, in a transaction),
    /// which its reads of keys `newest` does not hold must honour: `(space, from, to)`.
    deleted: Vec<(Space, Vec<u8>, Vec<u8>)>,
    /// The store scan the last command read, kept for the next (`kept`): valid while the lock
    /// is held alone and nothing is appended, so every change of either forgets it.
    kept: Option<Kept>,
    /// How the running command has used the store.
    now: Running,
    /// A transaction's queue is running (see [`Ctx::begin_transaction`]).
    exec: Option<Exec>,
    /// Keys the pipeline's reads found and did not find (Redis's keyspace hits and misses),
    /// added to the server's counts once, at its end.
    hits: u64,
    misses: u64,
    /// Keys pushed to and the running command's blocking (`blocking`).
    pub blocking: super::blocking::Pending,
    /// Run between letting the shared lock go and taking it alone (`alone`): another
    /// connection's write in that window, for a test.
    #[cfg(test)]
    between_locks: Option<Box<dyn FnMut() + 'a>>,
}

/// A write of the running command, held until it ends well (see [`Ctx::end_command`]).
struct Pending {
    /// The database, as selected when it was written (`COPY ... DB` writes in another).
    db: usize,
    space: Space,
    key: Vec<u8>,
    op: Owned,
}

enum Held<'a> {
    Nothing,
    Shared(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

/// A transaction's queue, running.
struct Exec {
    /// The store as it was when the queue began (or at its last swap), and the queue's writes
    /// and clears since: what the queue reads.
    tx: Transaction,
    /// Every write of the queue (since its last swap), flushes' clears included, in order: what
    /// is committed.
    batch: WriteBatch,
    /// The databases whose clears `batch` holds.
    clears: Vec<usize>,
    /// Some of the queue's writes were committed already (before a swap in it).
    committed: bool,
    /// A commit before a swap failed: EXEC's reply is its error.
    failed: Option<spillway::Error>,
}

impl Exec {
    /// Commit the queue's batch so far (unsynced): then the store has its writes and clears.
    /// A failure is kept as EXEC's reply.
    fn commit_so_far(&mut self, engine: &Engine) -> spillway::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let clears = std::mem::take(&mut self.clears);
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
    fn add_to(self, batch: &mut WriteBatch, ks: &Keyspace, key: &[u8]) {
        match self {
            Op::Put(v, Expiry::Never) => batch.put_in(ks, key, v),
            Op::Put(v, Expiry::At(t)) => batch.put_expiring_in(ks, key, v, t),
            Op::Delete => batch.delete_in(ks, key),
            Op::Expire(t) => batch.expire_in(ks, key, t),
        }
    }

    fn apply_to(self, tx: &mut Transaction, ks: &Keyspace, key: &[u8]) -> spillway::Result<()> {
        match self {
            Op::Put(v, Expiry::Never) => tx.put(ks, key, v),
            Op::Put(v, Expiry::At(t)) => tx.put_expiring(ks, key, v, t),
            Op::Delete => tx.delete(ks, key),
            Op::Expire(t) => tx.expire(ks, key, t),
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
    /// Its writes so far, not yet in a batch: a command that fails midway (a value too large,
    /// a read that fails) writes nothing, so that a key's metadata never disagrees with its
    /// fields.
    pending: Vec<Pending>,
    /// What `newest` held at each key the command wrote, to put back if it fails.
    undo: Vec<(At, Option<Staged>)>,
    /// How many of `deleted` were there when the command began.
    deleted_before: usize,
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
            staged: StagedRun::default(),
            held: Held::Nothing,
            newest: HashMap::new(),
            newest_blind: false,
            wrote: Vec::new(),
            deleted: Vec::new(),
            kept: None,
            now: Running::default(),
            exec: None,
            hits: 0,
            misses: 0,
            blocking: Default::default(),
            #[cfg(test)]
            between_locks: None,
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

    /// Whether the command runs in a transaction's queue (EXEC).
    pub fn in_transaction(&self) -> bool {
        self.exec.is_some()
    }

    /// The selected database's handle for `space` (`None`: it has no keyspace, so no key).
    fn keyspace(&self, space: Space) -> Option<Keyspace> {
        self.engine.dbs.handle(self.session.db, space)
    }

    /// The selected database's handle for `space`, its keyspace created if need be: for a
    /// write, under the lock.
    fn writable(&self, space: Space) -> spillway::Result<Keyspace> {
        self.engine
            .dbs
            .create(&self.engine.db, self.session.db, space)
    }

    // ---- Strings: one type per key ----

    /// `key`'s string for a command that only reads: as the store has it, or as the running
    /// transaction sees it. `WRONGTYPE` if it holds another type.
    pub fn read(&mut self, key: &[u8]) -> CmdResult<Option<Vec<u8>>> {
        let found = self.read_in(Space::Strings, key)?;
        if found.is_none() && self.read_in(Space::Meta, key)?.is_some() {
            self.looked_up(true);
            return Err(wrong_type());
        }
        self.looked_up(found.is_some());
        Ok(found)
    }

    /// The strings at `keys`, as [`Ctx::read`] reads each, at one point in time: `None` for a
    /// key that is absent or holds another type (Redis's `MGET`).
    pub fn read_many(&mut self, keys: &[Vec<u8>]) -> spillway::Result<Vec<Option<Vec<u8>>>> {
        let ks = self.keyspace(Space::Strings);
        let values = match (&mut self.exec, ks) {
            (_, None) => vec![None; keys.len()],
            (Some(exec), Some(ks)) => exec.tx.multi_get(&ks, keys)?,
            (None, Some(ks)) => ks.multi_get(keys)?,
        };
        for v in &values {
            self.looked_up(v.is_some());
        }
        Ok(values)
    }

    /// The strings at `keys`, as [`Ctx::read_many`] reads them, `WRONGTYPE` if one holds
    /// another type (its metadata read after: a key changes type only by a write, and a
    /// command that only reads runs after the pipeline's writes).
    pub fn read_strings(&mut self, keys: &[Vec<u8>]) -> CmdResult<Vec<Option<Vec<u8>>>> {
        let values = self.read_many(keys)?;
        for (k, v) in keys.iter().zip(&values) {
            if v.is_none() && self.read_in(Space::Meta, k)?.is_some() {
                return Err(wrong_type());
            }
        }
        Ok(values)
    }

    /// The expiry of `key`, of any type, for a command that only reads (`TTL`): `None` if it
    /// is absent.
    pub fn read_expiry(&mut self, key: &[u8]) -> spillway::Result<Option<Expiry>> {
        let expiry = match self.expiry_in(Space::Strings, key)? {
            Some(e) => Some(e),
            None => self.expiry_in(Space::Meta, key)?,
        };
        self.looked_up(expiry.is_some());
        Ok(expiry)
    }

    /// `key`'s string for a command that writes what it reads: the pipeline's writes so far
    /// are seen, and no other connection's write comes between this read and this command's
    /// writes. `WRONGTYPE` if it holds another type.
    pub fn get(&mut self, key: &[u8]) -> CmdResult<Option<Vec<u8>>> {
        Ok(self.get_with_expiry(key)?.map(|(value, _)| value))
    }

    /// `key`'s string and expiry, read as [`Ctx::get`] reads.
    pub fn get_with_expiry(&mut self, key: &[u8]) -> CmdResult<Option<(Vec<u8>, Expiry)>> {
        let found = self.get_in(Space::Strings, key)?;
        if found.is_none() && self.get_in(Space::Meta, key)?.is_some() {
            return Err(wrong_type());
        }
        Ok(found)
    }

    /// Put string `value` at `key`, with no expiry (a key's former one goes: Redis's `SET`).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> spillway::Result<()> {
        self.put_expiring(key, value, Expiry::Never)
    }

    /// Put string `value` at `key`, gone at `expiry`'s time (already gone if that has passed).
    /// What the key held, of any type, goes.
    pub fn put_expiring(
        &mut self,
        key: &[u8],
        value: &[u8],
        expiry: Expiry,
    ) -> spillway::Result<()> {
        self.drop_other_type(key)?;
        self.write(
            Space::Strings,
            key,
            Op::Put(value, expiry),
            Some((value, expiry)),
        )
    }

    /// Delete `key`'s string.
    pub fn delete(&mut self, key: &[u8]) -> spillway::Result<()> {
        self.write(Space::Strings, key, Op::Delete, None)
    }

    /// Give `key`'s string the expiry `to`: the command read it holding `value`, expiring
    /// `from` (see [`Ctx::retime_in`]).
    pub fn retime(
        &mut self,
        key: &[u8],
        value: &[u8],
        from: Expiry,
        to: Expiry,
    ) -> spillway::Result<()> {
        self.retime_in(Space::Strings, key, value, from, to)
    }

    /// Before a string is written at `key`: remove the other type it holds, if any. A blind
    /// write reads the store here, holding the lock shared: a key gets another type only by a
    /// command that reads first, holding it alone, so the answer holds until the append.
    fn drop_other_type(&mut self, key: &[u8]) -> spillway::Result<()> {
        let meta = match (&mut self.exec, self.now.read) {
            (Some(_), _) | (None, true) => self.get_in(Space::Meta, key)?,
            (None, false) => {
                self.blind_write();
                let found = match self.keyspace(Space::Meta) {
                    Some(ks) => ks.get_with_expiry(key)?,
                    None => None,
                };
                // Rare: the command turns staged, and reads the key again holding the lock
                // alone, so that nothing comes between what it removes and its write.
                match found {
                    Some(_) => self.get_in(Space::Meta, key)?,
                    None => None,
                }
            }
        };
        match meta {
            Some((value, _)) => self.remove(key, Space::Meta, &value),
            None => Ok(()),
        }
    }

    // ---- Any space ----

    /// `key`'s record in `space`, for a command that only reads.
    pub fn read_in(&mut self, space: Space, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        let Some(ks) = self.keyspace(space) else {
            return Ok(None);
        };
        match &mut self.exec {
            Some(exec) => exec.tx.get(&ks, key),
            None => ks.get(key),
        }
    }

    /// The expiry of `key`'s record in `space`, for a command that only reads.
    pub fn expiry_in(&mut self, space: Space, key: &[u8]) -> spillway::Result<Option<Expiry>> {
        let Some(ks) = self.keyspace(space) else {
            return Ok(None);
        };
        match &mut self.exec {
            Some(exec) => exec.tx.expiry(&ks, key),
            None => ks.expiry(key),
        }
    }

    /// `key`'s record in `space` and its expiry, for a command that writes what it reads
    /// (as [`Ctx::get`]).
    pub fn get_in(
        &mut self,
        space: Space,
        key: &[u8],
    ) -> spillway::Result<Option<(Vec<u8>, Expiry)>> {
        self.now.read = true;
        if self.exec.is_none() {
            self.alone();
        }
        // Looked up under the lock: a keyspace another client's write created meanwhile (its
        // first typed key in this database) is read, not taken for absent.
        let ks = self.keyspace(space);
        if let Some(staged) = self.newest.get(&(space, key.to_vec())) {
            // A staged write whose time has come since is gone, as the engine will have it.
            let now = self.engine.now();
            return Ok(staged.clone().filter(|&(_, e)| time::alive(e, now)));
        }
        let k = key;
        if self
            .deleted
            .iter()
            .any(|(s, from, to)| *s == space && from.as_slice() <= k && k < to.as_slice())
        {
            return Ok(None);
        }
        match (&mut self.exec, ks) {
            (_, None) => Ok(None),
            (Some(exec), Some(ks)) => exec.tx.get_with_expiry(&ks, key),
            (None, Some(ks)) => ks.get_with_expiry(key),
        }
    }

    /// Put `value` at `key` in `space`, gone at `expiry`'s time.
    pub fn put_in(
        &mut self,
        space: Space,
        key: &[u8],
        value: &[u8],
        expiry: Expiry,
    ) -> spillway::Result<()> {
        self.write(space, key, Op::Put(value, expiry), Some((value, expiry)))
    }

    /// Delete `key`'s record in `space`.
    pub fn delete_in(&mut self, space: Space, key: &[u8]) -> spillway::Result<()> {
        self.write(space, key, Op::Delete, None)
    }

    /// Give `key`'s record in `space` the expiry `to`: the command read it holding `value`,
    /// expiring `from`.
    ///
    /// A key that had no expiry gets the engine's expire message, which rewrites no value. A
    /// key that had one is written again whole: a message is folded with the key's record
    /// when it is applied, and by then the old expiry may have passed — the key found gone,
    /// the message dropped — where Redis, having answered that it set the new expiry, keeps the
    /// key. The same holds for taking an expiry away (`PERSIST`).
    pub fn retime_in(
        &mut self,
        space: Space,
        key: &[u8],
        value: &[u8],
        from: Expiry,
        to: Expiry,
    ) -> spillway::Result<()> {
        match (from, to) {
            (Expiry::Never, Expiry::Never) => Ok(()),
            (Expiry::Never, Expiry::At(t)) => {
                self.write(space, key, Op::Expire(t), Some((value, to)))
            }
            (Expiry::At(_), _) => self.put_in(space, key, value, to),
        }
    }

    /// Delete every record of ordered `space` from `from` (included) to `to` (excluded): one
    /// range delete, whatever it covers. Only by a command that read first (it is staged).
    pub fn delete_range_in(
        &mut self,
        space: Space,
        from: &[u8],
        to: &[u8],
    ) -> spillway::Result<()> {
        debug_assert!(self.now.read, "a range delete is staged, after a read");
        self.writable(space)?; // the lock is held alone
        let in_range = |k: &[u8]| from <= k && k < to;
        let gone: Vec<At> = self
            .newest
            .keys()
            .filter(|(s, k)| *s == space && in_range(k))
            .cloned()
            .collect();
        for at in gone {
            let old = self.newest.remove(&at);
            self.now.undo.push((at, old));
        }
        self.deleted.push((space, from.to_vec(), to.to_vec()));
        self.now.pending.push(Pending {
            db: self.session.db,
            space,
            key: from.to_vec(),
            op: Owned::DeleteRange(to.to_vec()),
        });
        Ok(())
    }

    /// The records of ordered `space` in `[from, to)`, as the command sees the store: a
    /// transaction's own writes included, and, for a command that writes what it reads, the
    /// run's writes so far, laid over the store (`overlay`; or appended first, if `newest`
    /// holds more than it or a blind write), the lock kept alone so that nothing comes between.
    pub fn scan_in(&mut self, space: Space, from: &[u8], to: Bound<&[u8]>) -> CmdResult<Scan> {
        // The command's writes so far go in first: it cannot take them back past here.
        self.apply_pending()?;
        let mut overlay = None;
        if self.exec.is_none() && (self.now.read || !self.staged.is_empty()) {
            self.now.read = true;
            self.alone();
            if !self.overlay_fits() {
                self.write_staged_keeping_lock()?;
            } else {
                overlay = Some(self.overlay(space, from, to));
            }
        }
        let Some(overlay) = overlay else {
            return self.store_scan(space, from, to);
        };
        // The lock is held alone: the store stays as read until it is let go, and the last
        // command's scan may go on (`kept`).
        let db = self.session.db;
        let resumed = self
            .kept
            .as_ref()
            .and_then(|kept| kept.resume((space, db), from, to, |k| self.hidden(space, k)));
        if let Some(scan) = resumed {
            return Ok(overlay.over(scan));
        }
        let (kept, scan) = Kept::open(self.store_scan(space, from, to)?, space, db, from, to);
        self.kept = Some(kept);
        Ok(overlay.over(scan))
    }

    /// A scan from wherever in `[lo, to)` of `space` the last command's kept scan began, if it
    /// can go on (see `kept`): for a pick that may start anywhere (`SPOP`), so that a pipeline's
    /// picks read one iterator on. `None`: open a scan with [`Ctx::scan_in`].
    pub fn resume_scan_within(
        &mut self,
        space: Space,
        lo: &[u8],
        to: &[u8],
    ) -> CmdResult<Option<Scan>> {
        self.apply_pending()?;
        let Some(kept) = &self.kept else {
            return Ok(None);
        };
        let from = kept.from();
        if from < lo || from >= to || !self.overlay_fits() {
            return Ok(None);
        }
        let db = self.session.db;
        let to = Bound::Excluded(to);
        let Some(scan) = kept.resume((space, db), from, to, |k| self.hidden(space, k)) else {
            return Ok(None);
        };
        let from = from.to_vec();
        self.now.read = true;
        Ok(Some(self.overlay(space, &from, to).over(scan)))
    }

    /// Whether a scan may read the staged writes laid over the store: none of them is a blind
    /// write (appended already, perhaps written over since) and there are not too many.
    fn overlay_fits(&self) -> bool {
        !self.newest_blind && self.newest.len() <= MAX_OVERLAY
    }

    /// The staged writes of `space` in `[from, to)`, to lay over a scan of the store.
    fn overlay(&self, space: Space, from: &[u8], to: Bound<&[u8]>) -> Overlay {
        Overlay::new(
            self.newest.iter(),
            &self.deleted,
            space,
            (from, to),
            self.engine.now(),
        )
    }

    /// Whether a staged write hides the store's record of `key` in `space` from a scan.
    fn hidden(&self, space: Space, key: &[u8]) -> bool {
        // `newest` is keyed by owned keys: the lookup allocates, as `get_in`'s does.
        self.newest.contains_key(&(space, key.to_vec()))
            || self
                .deleted
                .iter()
                .any(|(s, from, to)| *s == space && from.as_slice() <= key && key < to.as_slice())
    }

    /// The store's records of `space` in `[from, to)`, as the command sees them (a
    /// transaction's own writes included).
    fn store_scan(&mut self, space: Space, from: &[u8], to: Bound<&[u8]>) -> CmdResult<Scan> {
        // After the lock, as in `get_in`.
        Ok(match self.keyspace(space) {
            None => Box::new(std::iter::empty()),
            Some(ks) => {
                let range = (Bound::Included(from.to_vec()), to.map(<[u8]>::to_vec));
                match &mut self.exec {
                    Some(exec) => Box::new(exec.tx.range(&ks, range)?),
                    None => Box::new(ks.range(range)?),
                }
            }
        })
    }

    /// Apply `op` to `key` in `space`, which then holds `after` (for the command's and the
    /// staged run's later reads). Held until the command ends (`end_command`).
    fn write(
        &mut self,
        space: Space,
        key: &[u8],
        op: Op,
        after: Option<(&[u8], Expiry)>,
    ) -> spillway::Result<()> {
        check_sizes(key, &op)?;
        match (&self.exec, self.now.read) {
            (Some(_), _) => {
                self.engine
                    .dbs
                    .create(&self.engine.db, self.session.db, space)?;
            }
            (None, true) => {
                self.writable(space)?; // the lock is held alone
            }
            (None, false) => {
                self.blind_write();
                self.writable(space)?; // the lock is held shared
                self.newest_blind = true;
            }
        }
        let at = (space, key.to_vec());
        let after = after.map(|(v, e)| (v.to_vec(), e));
        let old = self.newest.insert(at.clone(), after);
        self.now.undo.push((at, old));
        let op = match op {
            Op::Put(v, e) => Owned::Put(v.to_vec(), e),
            Op::Delete => Owned::Delete,
            Op::Expire(t) => Owned::Expire(t),
        };
        self.now.pending.push(Pending {
            db: self.session.db,
            space,
            key: key.to_vec(),
            op,
        });
        Ok(())
    }

    /// Put the running command's writes so far where they go: its transaction and the
    /// queue's batch, the staged run's batch (a command that read) or the blind batch.
    fn apply_pending(&mut self) -> spillway::Result<()> {
        let pending = std::mem::take(&mut self.now.pending);
        self.now.undo.clear();
        self.now.deleted_before = self.deleted.len();
        let engine = self.engine;
        for Pending {
            db: n,
            space,
            key,
            op,
        } in pending
        {
            let ks = engine.dbs.create(&engine.db, n, space)?; // the lock is held
            let put = matches!(op, Owned::Put(..)) && space != Space::Fields;
            engine.dbs.wrote(n, put);
            let batch = match (&mut self.exec, self.now.read) {
                (None, true) => {
                    self.staged.add(ks, (n, space), key, op);
                    self.now.staged = true;
                    continue;
                }
                (Some(exec), _) => {
                    match &op {
                        Owned::Put(v, e) => Op::Put(v, *e).apply_to(&mut exec.tx, &ks, &key)?,
                        Owned::Delete => Op::Delete.apply_to(&mut exec.tx, &ks, &key)?,
                        Owned::Expire(t) => Op::Expire(*t).apply_to(&mut exec.tx, &ks, &key)?,
                        Owned::DeleteRange(to) => {
                            exec.tx.delete_range(&ks, key.clone()..to.clone())?
                        }
                    }
                    &mut exec.batch
                }
                (None, false) => {
                    self.blind.bytes += op.bytes(&key);
                    &mut self.blind.batch
                }
            };
            match op {
                Owned::Put(v, e) => Op::Put(&v, e).add_to(batch, &ks, &key),
                Owned::Delete => Op::Delete.add_to(batch, &ks, &key),
                Owned::Expire(t) => Op::Expire(t).add_to(batch, &ks, &key),
                Owned::DeleteRange(to) => batch.delete_range_in(&ks, key..to),
            }
        }
        if self.exec.is_some() {
            // The transaction holds them now: its reads see them.
            self.newest.clear();
            self.newest_blind = false;
            self.deleted.clear();
            self.now.deleted_before = 0;
        }
        Ok(())
    }

    /// The running command ended, well (`ok`) or not: its writes go where they go, or are
    /// dropped, with what its later reads would have seen of them.
    pub(super) fn end_command(&mut self, ok: bool) -> spillway::Result<()> {
        if ok {
            return self.apply_pending();
        }
        self.now.pending.clear();
        self.kept = None; // what it hid may show again
        for (at, old) in std::mem::take(&mut self.now.undo).into_iter().rev() {
            match old {
                Some(old) => self.newest.insert(at, old),
                None => self.newest.remove(&at),
            };
        }
        self.deleted.truncate(self.now.deleted_before);
        Ok(())
    }

    /// Hold `held` of the lock from now: other writers may have come between, so a kept scan
    /// is forgotten.
    fn hold(&mut self, held: Held<'a>) {
        self.session.took_alone |= matches!(held, Held::Alone(_));
        self.held = held;
        self.kept = None;
    }

    /// Hold the lock alone, after writing what the pipeline wrote blind (holding it shared).
    fn alone(&mut self) {
        if !matches!(self.held, Held::Alone(_)) {
            let _ = self.write_blind(); // their replies say if it failed
            #[cfg(test)]
            if let Some(run) = &mut self.between_locks {
                run();
            }
            let lock = locks::write(&self.engine.read_modify_write);
            self.hold(Held::Alone(lock));
            // What `newest` holds was appended (nothing is staged without this lock), and
            // another connection may have written those keys since: read the store instead.
            // The running command's own writes are not appended yet: they stay.
            if self.now.pending.is_empty() {
                self.newest.clear();
                self.newest_blind = false;
            }
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
            let lock = locks::read(&self.engine.read_modify_write);
            self.hold(Held::Shared(lock));
        }
    }

    // ---- Keys of any type ----

    /// `key` as it is in the selected database, of any type, for a command that only reads.
    pub fn read_entry(&mut self, key: &[u8]) -> spillway::Result<Option<Entry>> {
        for space in [Space::Strings, Space::Meta] {
            let Some(ks) = self.keyspace(space) else {
                continue;
            };
            let found = match &mut self.exec {
                Some(exec) => exec.tx.get_with_expiry(&ks, key)?,
                None => ks.get_with_expiry(key)?,
            };
            if let Some((value, expiry)) = found {
                self.looked_up(true);
                return Ok(Some(Entry {
                    space,
                    value,
                    expiry,
                }));
            }
        }
        self.looked_up(false);
        Ok(None)
    }

    /// `key` of any type, for a command that writes what it reads (as [`Ctx::get`]).
    pub fn entry(&mut self, key: &[u8]) -> spillway::Result<Option<Entry>> {
        for space in [Space::Strings, Space::Meta] {
            if let Some((value, expiry)) = self.get_in(space, key)? {
                return Ok(Some(Entry {
                    space,
                    value,
                    expiry,
                }));
            }
        }
        Ok(None)
    }

    /// Delete `key`, which holds `value` in `space`: a string, or another type's metadata and
    /// all its fields (one range delete: O(1) whatever it holds).
    pub fn remove(&mut self, key: &[u8], space: Space, value: &[u8]) -> spillway::Result<()> {
        if space == Space::Meta {
            if let Some((from, to)) = encoding::fields_of(key, value) {
                self.now.read = true; // the metadata was read: the run is staged
                self.delete_range_in(Space::Fields, &from, &to)?;
            }
        }
        self.delete_in(space, key)
    }

    /// Every key of the selected database, of any type, with where it is and its value there,
    /// in its order: those whose route is `from` or more (a SCAN's cursor), or under `prefix`
    /// (in an ordered store). In a transaction, its own writes are seen.
    pub fn keys(&mut self, from: u64, prefix: Option<&[u8]>) -> spillway::Result<Keys> {
        let strings = self.keys_in(Space::Strings, from, prefix)?;
        let meta = self.keys_in(Space::Meta, from, prefix)?;
        let order = self.engine.db.key_order();
        Ok(Box::new(merge_keys(strings, meta, order)))
    }

    fn keys_in(
        &mut self,
        space: Space,
        from: u64,
        prefix: Option<&[u8]>,
    ) -> spillway::Result<Keys> {
        let Some(ks) = self.keyspace(space) else {
            return Ok(Box::new(std::iter::empty()));
        };
        let tag = move |e: spillway::Result<(Vec<u8>, Vec<u8>)>| e.map(|(k, v)| (k, space, v));
        if let Some(exec) = &mut self.exec {
            let it = match prefix {
                Some(p) => exec.tx.prefix(&ks, p)?,
                None => exec.tx.iter(&ks)?,
            };
            if from == 0 {
                return Ok(Box::new(it.map(tag)));
            }
            // A transaction's iterator cannot seek: SCAN in MULTI reads up to its cursor.
            let order = self.engine.db.key_order();
            let before = move |e: &spillway::Result<(Vec<u8>, Vec<u8>)>| {
                e.as_ref().is_ok_and(|(k, _)| order.route(k) < from)
            };
            return Ok(Box::new(it.skip_while(before).map(tag)));
        }
        let mut it = match prefix {
            Some(p) => ks.prefix(p)?,
            None => ks.iter()?,
        };
        if from != 0 {
            it.seek_route(from);
        }
        Ok(Box::new(it.map(tag)))
    }

    /// The keys of the selected database, as `DBSIZE` answers: counted exactly up to
    /// `counted_up_to`, else estimated.
    pub fn key_count(&mut self, counted_up_to: u64) -> spillway::Result<u64> {
        let n = self.session.db;
        let flushed_in_queue = self.exec.as_ref().is_some_and(|e| e.clears.contains(&n));
        let mut estimate = Some(0u64);
        for space in [Space::Strings, Space::Meta] {
            match self.keyspace(space) {
                Some(_) if flushed_in_queue => {} // counted from the transaction
                Some(ks) => {
                    let e = ks.estimate_keys()?;
                    estimate = estimate.zip(e).map(|(a, b)| a.saturating_add(b));
                }
                None => {}
            }
        }
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
    /// run reads one database. A command that has read (`COPY ... DB`) keeps the lock alone
    /// across the change: what it read and what it writes, in either database, stay one
    /// step that no other client's write comes between.
    pub fn select(&mut self, n: usize) {
        if self.exec.is_none() {
            match self.now.read {
                true => {
                    let _ = self.write_staged_keeping_lock(); // its replies say if it failed
                }
                false => self.settle(),
            }
        }
        self.session.db = n;
    }

    /// Empty databases `ns` (`FLUSHDB`, `FLUSHALL`): a clear of each that may hold keys, in
    /// one batch. Outside a transaction, after the pipeline's writes, holding the lock alone
    /// (the reply waits for the fsync, as a write's). In a transaction's queue, the clears join
    /// its batch and its transaction, whose reads of those databases see only what it writes
    /// to them from now.
    pub fn flush(&mut self, ns: &[usize]) -> spillway::Result<()> {
        let engine = self.engine;
        let Some(exec) = &mut self.exec else {
            self.settle();
            self.hold(Held::Alone(locks::write(&engine.read_modify_write)));
            let flushed = engine.dbs.flush(&engine.db, ns);
            self.hold(Held::Nothing);
            self.now.appended |= matches!(flushed, Ok(true));
            return flushed.map(drop);
        };
        for n in engine.dbs.clear(ns, &mut exec.batch) {
            for space in super::databases::SPACES {
                if let Some(ks) = engine.dbs.handle(n, space) {
                    exec.tx.clear(&ks)?;
                }
            }
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
            self.hold(Held::Alone(locks::write(&engine.read_modify_write)));
            let changed = change(engine);
            self.hold(Held::Nothing);
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
        let lock = locks::write(&self.engine.read_modify_write);
        self.hold(Held::Alone(lock));
        self.exec = Some(Exec {
            tx: self.engine.db.transaction(),
            batch: WriteBatch::new(),
            clears: Vec::new(),
            committed: false,
            failed: None,
        });
    }

    /// Run nothing of the transaction (a watched key changed), and let other writers in.
    pub(super) fn abort_transaction(&mut self) {
        self.exec = None;
        self.hold(Held::Nothing);
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
        self.hold(Held::Nothing);
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
        debug_assert!(self.now.pending.is_empty(), "end_command ran");
        self.now = Running {
            deleted_before: self.deleted.len(),
            ..Running::default()
        };
        if self.staged.bytes >= MAX_BATCH {
            let _ = self.write_staged();
        }
        if self.blind.bytes >= MAX_BATCH {
            let _ = self.write_blind();
        }
    }

    /// Write what is left; the indices of the replies of commands that wrote.
    pub(super) fn finish(mut self) -> Vec<usize> {
        let _ = self.apply_pending(); // a command ended without `end_command` (tests)
        self.settle();
        self.count_lookups();
        std::mem::take(&mut self.wrote)
    }

    /// Append the blind batch (under the shared lock it holds), and let it go.
    fn write_blind(&mut self) -> spillway::Result<()> {
        let Batch { batch, replies, .. } = std::mem::take(&mut self.blind);
        if !batch.is_empty() {
            self.kept = None;
        }
        let written = match batch.is_empty() {
            true => Ok(()),
            false => self.engine.db.write(batch, WriteOptions::NO_SYNC),
        };
        if matches!(self.held, Held::Shared(_)) {
            self.hold(Held::Nothing);
        }
        self.fail(&written, &replies);
        written
    }

    /// Write the staged run, and let other writers in (unless a transaction runs on).
    fn write_staged(&mut self) -> spillway::Result<()> {
        let written = self.write_staged_keeping_lock();
        if self.exec.is_none() && matches!(self.held, Held::Alone(_)) {
            self.hold(Held::Nothing);
        }
        written
    }

    /// Write the staged run, still holding the lock: a command that scans what it writes
    /// (`SPOP`) reads the store with the run's writes in it, and nothing else comes between.
    fn write_staged_keeping_lock(&mut self) -> spillway::Result<()> {
        let (batch, replies) = std::mem::take(&mut self.staged).into_batch();
        self.kept = None;
        self.newest.clear();
        self.newest_blind = false;
        self.deleted.clear();
        let written = match batch.is_empty() {
            true => Ok(()),
            false => self.engine.db.write(batch, WriteOptions::NO_SYNC),
        };
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

/// Two databases' key iterators (strings, metadata), each in (route, key) order, as one.
fn merge_keys(
    a: Keys,
    b: Keys,
    order: spillway::KeyOrder,
) -> impl Iterator<Item = <Keys as Iterator>::Item> {
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || {
        let first = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(Err(_)), _) => true,
            (_, Some(Err(_))) => false,
            (Some(Ok((x, ..))), Some(Ok((y, ..)))) => {
                (order.route(x), x.as_slice()) <= (order.route(y), y.as_slice())
            }
        };
        if first {
            a.next()
        } else {
            b.next()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::Ctx;

    /// A pipeline's blind write appended, then another connection's write of the key, then a
    /// read for a write in the pipeline (`SET k 1; INCR k`): it reads the other's value, the
    /// store's, not its own appended one, which it would otherwise write over.
    #[test]
    fn a_read_after_the_pipelines_blind_writes_went_in_sees_later_writes() {
        let (_d, e) = engine();
        let (mut s1, mut s2) = (Session::new(1), Session::new(2));
        let mut replies = Vec::new();
        let mut ctx = Ctx::new(&e, &mut s1, &mut replies);
        ctx.put(b"k", b"1").unwrap();
        ctx.end_command(true).unwrap();
        let other = &e;
        ctx.between_locks = Some(Box::new(move || {
            let out = run(other, &mut s2, &[&["SET", "k", "5"]]);
            assert_eq!(out, vec![crate::resp::Reply::Status("OK".into())]);
        }));
        assert_eq!(ctx.get(b"k").unwrap(), Some(b"5".to_vec()));
        ctx.end_command(true).unwrap();
        ctx.between_locks = None;
        ctx.finish();
    }

    /// `COPY ... DB n` reads the source, then the destination in database n, and writes it:
    /// the lock stays held alone from the first read to the append, across both changes of
    /// database, so that no other client's write comes between (a SET of the destination
    /// acknowledged in between would be lost under the copy).
    #[test]
    fn a_copy_to_another_database_holds_the_lock_until_its_write_is_in() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        run(&e, &mut s, &[&["SET", "src", "v"]]);
        let mut replies = Vec::new();
        let mut ctx = Ctx::new(&e, &mut s, &mut replies);
        let args: Vec<Vec<u8>> = ["COPY", "src", "dst", "DB", "3"]
            .iter()
            .map(|a| a.as_bytes().to_vec())
            .collect();
        let reply = super::super::rename::copy(&mut ctx, &args).unwrap();
        assert_eq!(reply, crate::resp::Reply::Integer(1));
        assert_eq!(ctx.session.db, 0);
        assert!(
            matches!(ctx.held, super::Held::Alone(_)),
            "the lock was let go"
        );
        assert!(
            e.read_modify_write.try_read().is_err(),
            "a blind write could come in"
        );
        ctx.end_command(true).unwrap();
        ctx.finish();
        let out = run(&e, &mut s, &[&["SELECT", "3"], &["GET", "dst"]]);
        assert_eq!(out[1], crate::resp::Reply::Bulk(b"v".to_vec()));
    }

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
