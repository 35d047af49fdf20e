//! What a handler runs with ([`Ctx`]): its connection, the store, and the pipeline's writes.
//!
//! A pipeline's writes reach the store in as few log appends as keep every reply true:
//! - **blind writes** (`SET k v`, `MSET`: they read nothing) gather in one batch, written under
//!   the shared side of `Engine::read_modify_write` once something must see them (a read, a
//!   command that reads what it writes) or at the pipeline's end;
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
//! A transaction's queue (EXEC) runs as one run of read-modify-write commands that every command
//! of it joins: the lock is held alone from its start to its end, every write is staged, and
//! reads see the staged writes, so that its writes are one append, which no other client's
//! write comes before or inside of and which readers see whole or not at all. (A command over
//! every key, `KEYS` or `SCAN`, reads the store itself: the writes staged before it go in first,
//! as their own append, still under the lock.)
//!
//! Nothing here waits for an fsync: [`Ctx::finish`] lists the replies of commands that wrote,
//! which the server holds until an fsync begun after the writes covers them (see `sync`).

use std::collections::HashMap;
use std::sync::RwLockWriteGuard;

use spillway::{Db, WriteBatch, WriteOptions};

use super::{store_error, Engine, Session};
use crate::resp::Reply;

/// Bytes of writes past which a batch is written before the next command.
const MAX_BATCH: usize = 1 << 20;

/// A handler's view of its connection, the store and its pipeline's writes.
pub struct Ctx<'a> {
    pub engine: &'a Engine,
    pub session: &'a mut Session,
    replies: &'a mut Vec<Reply>,
    blind: Batch,
    staged: Batch,
    /// Held while `staged` is: what the run read stays as it read it.
    alone: Option<RwLockWriteGuard<'a, ()>>,
    /// The staged value of each key the run wrote (`None`: deleted).
    newest: HashMap<Vec<u8>, Option<Vec<u8>>>,
    /// Indices of the replies of commands that wrote.
    wrote: Vec<usize>,
    /// How the running command has used the store.
    now: Running,
    /// A transaction's queue is running (see [`Ctx::begin_transaction`]).
    transaction: bool,
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
            alone: None,
            newest: HashMap::new(),
            wrote: Vec::new(),
            now: Running::default(),
            transaction: false,
        }
    }

    /// The store, to read as it is (a [`Kind::Read`](super::spec::Kind::Read) command runs
    /// once the pipeline's writes are in it).
    pub fn db(&self) -> &'a Db {
        &self.engine.db
    }

    /// `key`'s value for a command that only reads: as the store has it, or as the running
    /// transaction wrote it.
    pub fn read(&self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        match self.newest.get(key) {
            Some(staged) => Ok(staged.clone()),
            None => self.engine.db.get(key),
        }
    }

    /// The values of `keys`, as [`Ctx::read`] reads each.
    pub fn read_many(&self, keys: &[Vec<u8>]) -> spillway::Result<Vec<Option<Vec<u8>>>> {
        if self.newest.is_empty() {
            return self.engine.db.multi_get(keys);
        }
        keys.iter().map(|k| self.read(k)).collect()
    }

    /// `key`'s value for a command that writes what it reads: the pipeline's writes so far
    /// are seen, and no other connection's write comes between this read and this command's
    /// writes.
    pub fn get(&mut self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        let _ = self.write_blind(); // their replies say if it failed
        self.now.read = true;
        if self.alone.is_none() {
            let lock = &self.engine.read_modify_write;
            self.alone = Some(crate::locks::write(lock));
        }
        match self.newest.get(key) {
            Some(staged) => Ok(staged.clone()),
            None => self.engine.db.get(key),
        }
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        if self.now.read || self.transaction {
            self.staged.batch.put(key, value);
            self.staged.bytes += key.len() + value.len();
            self.newest.insert(key.to_vec(), Some(value.to_vec()));
            self.now.staged = true;
        } else {
            self.blind_write();
            self.blind.batch.put(key, value);
            self.blind.bytes += key.len() + value.len();
        }
    }

    pub fn delete(&mut self, key: &[u8]) {
        if self.now.read || self.transaction {
            self.staged.batch.delete(key);
            self.staged.bytes += key.len();
            self.newest.insert(key.to_vec(), None);
            self.now.staged = true;
        } else {
            self.blind_write();
            self.blind.batch.delete(key);
            self.blind.bytes += key.len();
        }
    }

    /// A blind write follows what the pipeline staged, and needs no lock held meanwhile.
    fn blind_write(&mut self) {
        if !self.now.wrote_blind {
            let _ = self.write_staged();
            self.now.wrote_blind = true;
        }
    }

    /// Write what the pipeline holds, so that a command reading the store directly sees it
    /// (done before every [`Kind::Read`](super::spec::Kind::Read) command; `FLUSHDB`, a write
    /// that reads every key, calls it itself).
    pub fn settle(&mut self) {
        let _ = self.write_staged();
        let _ = self.write_blind();
    }

    /// Before a [`Kind::Read`](super::spec::Kind::Read) command: settle, but in a transaction
    /// only for a command that reads the store itself (`iterates`: over every key), as point
    /// reads see its staged writes.
    pub(super) fn before_read(&mut self, iterates: bool) {
        if !self.transaction || iterates {
            self.settle();
        }
    }

    /// Start running a transaction's queue (EXEC): what the pipeline wrote before it goes in
    /// first, then no other client writes until [`Ctx::end_transaction`].
    pub(super) fn begin_transaction(&mut self) {
        self.settle();
        self.alone = Some(crate::locks::write(&self.engine.read_modify_write));
        self.transaction = true;
    }

    /// Write what the transaction's queue wrote, as one append, and let other writers in.
    pub(super) fn end_transaction(&mut self) -> spillway::Result<()> {
        self.transaction = false;
        self.now.appended |= !self.staged.batch.is_empty();
        self.now.staged = false;
        self.write_staged()
    }

    /// For a command that writes more than a batch should hold (`FLUSHDB`): write what it
    /// wrote blind so far if that is past a megabyte. Its error, if any, is this command's.
    pub fn write_if_full(&mut self) -> spillway::Result<()> {
        match self.blind.bytes >= MAX_BATCH {
            true => self.write_blind(),
            false => Ok(()),
        }
    }

    /// The running command's reply: keep it, and note it among those its writes' append
    /// decides, if it wrote.
    pub(super) fn reply(&mut self, reply: Reply) {
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
        std::mem::take(&mut self.wrote)
    }

    fn write_blind(&mut self) -> spillway::Result<()> {
        let Batch { batch, replies, .. } = std::mem::take(&mut self.blind);
        if batch.is_empty() {
            return Ok(());
        }
        let lock = &self.engine.read_modify_write;
        let _shared = crate::locks::read(lock);
        let written = self.engine.db.write(batch, WriteOptions::NO_SYNC);
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
        if !self.transaction {
            self.alone = None;
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
