//! The writes of a run of read-modify-write commands in one pipeline (`INCR k`, `INCR k`,
//! `SET k v NX`, ...), staged in one batch and written with one log append when the run ends.
//! The run holds the exclusive lock from its first read to that append, so no other write
//! comes between what it read and what it writes; its own reads see its staged writes first.
//! One append per run instead of one per command: a pipeline of 16 INCRs costs one.

use std::collections::HashMap;
use std::sync::RwLockWriteGuard;

use spillway::{WriteBatch, WriteOptions};

use super::{store_error, Engine};
use crate::resp::Reply;

/// A run's lock, staged writes, and the replies that wait for them.
pub(super) struct Staged<'a> {
    engine: &'a Engine,
    alone: Option<RwLockWriteGuard<'a, ()>>,
    batch: WriteBatch,
    /// The staged value of each key written (`None`: deleted).
    newest: HashMap<Vec<u8>, Option<Vec<u8>>>,
    bytes: usize,
    /// Replies of commands that staged a write: an error instead if the append fails.
    pub(super) replies: Vec<usize>,
}

/// Staged bytes past which a run writes what it has and goes on (a pipeline of APPENDs of
/// big values must not gather the whole pipeline in memory twice).
const MAX_STAGED: usize = 1 << 20;

impl<'a> Staged<'a> {
    pub(super) fn new(engine: &'a Engine) -> Staged<'a> {
        Staged {
            engine,
            alone: None,
            batch: WriteBatch::new(),
            newest: HashMap::new(),
            bytes: 0,
            replies: Vec::new(),
        }
    }

    fn lock(&mut self) {
        if self.alone.is_none() {
            let lock = &self.engine.read_modify_write;
            self.alone = Some(lock.write().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// `key`'s value as the run has left it.
    pub(super) fn get(&mut self, key: &[u8]) -> spillway::Result<Option<Vec<u8>>> {
        self.lock();
        match self.newest.get(key) {
            Some(staged) => Ok(staged.clone()),
            None => self.engine.db.get(key),
        }
    }

    pub(super) fn put(&mut self, key: &[u8], value: &[u8]) {
        self.lock();
        self.batch.put(key, value);
        self.bytes += key.len() + value.len();
        self.newest.insert(key.to_vec(), Some(value.to_vec()));
    }

    pub(super) fn delete(&mut self, key: &[u8]) {
        self.lock();
        self.batch.delete(key);
        self.bytes += key.len();
        self.newest.insert(key.to_vec(), None);
    }

    /// How many writes are staged (to tell whether a command wrote).
    pub(super) fn len(&self) -> usize {
        self.batch.len()
    }

    pub(super) fn is_full(&self) -> bool {
        self.bytes >= MAX_STAGED
    }

    /// Write what is staged, unsynced (the server syncs before the replies leave), and let
    /// other writers in; if the append fails, the staged commands' replies become its error.
    pub(super) fn commit(&mut self, replies: &mut [Reply]) {
        let staged = std::mem::take(&mut self.replies);
        if let Err(e) = self.write() {
            let failed = store_error(e);
            for i in staged {
                replies[i] = failed.clone();
            }
        }
    }

    /// Write what is staged, unsynced, and let other writers in.
    pub(super) fn write(&mut self) -> spillway::Result<()> {
        let batch = std::mem::take(&mut self.batch);
        self.newest.clear();
        self.bytes = 0;
        self.replies.clear();
        let written = match batch.is_empty() {
            true => Ok(()),
            false => self.engine.db.write(batch, WriteOptions::NO_SYNC),
        };
        self.alone = None;
        written
    }
}
