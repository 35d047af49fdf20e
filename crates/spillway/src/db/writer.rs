//! The write path's own state: the group-commit queue, and what the group-commit leader
//! holds while it writes — the log, the logs before it whose records are still only in
//! memory, the running spill, the retired log until it is synced, and whether writes have
//! stopped. `commit` is the code that works on it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::conflicts::Conflicts;
use crate::error::Error;
use crate::io::PendingSync;
use crate::stats::Counters;
use crate::wal::{self, LogWriter};
use crate::write_queue::WriteQueue;

/// The group-commit queue, and the state its leader writes under.
pub(super) struct Writer {
    pub queue: WriteQueue,
    /// Touched only by the group-commit leader (and `close`, `flush`, `sync`).
    state: Mutex<WriterState>,
}

impl Writer {
    pub fn new(state: WriterState) -> Writer {
        Writer {
            queue: WriteQueue::default(),
            state: Mutex::new(state),
        }
    }

    /// The writer's state. A panic while it was held — in a write, or in a spill run on the
    /// writer's thread — may have left the log's tail or the buffers half-changed: writes
    /// stop until the store is reopened, as after a failed fsync.
    pub fn lock(&self) -> MutexGuard<'_, WriterState> {
        self.state.lock().unwrap_or_else(|panicked| {
            self.state.clear_poison();
            let mut w = panicked.into_inner();
            w.poisoned.get_or_insert(Error::Poisoned {
                reason: "a write panicked, or a spill it ran".into(),
            });
            w
        })
    }

    /// The writer's state if no one holds it (a read writing a fold back never waits).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, WriterState>> {
        self.state.try_lock().ok()
    }
}

pub(super) struct WriterState {
    /// The log writes go to; `None` in a read-only handle, which takes no writes.
    pub log: Option<LogWriter>,
    /// Logs before `log` whose records are in `mem` and not yet in the tree (after a recovery).
    pub older_logs: Vec<u64>,
    /// The background spill of `frozen`, while one runs.
    pub spilling: Option<JoinHandle<()>>,
    /// Bytes the buffers held at the last freeze: the frozen buffers' memory, until their
    /// spill publishes them (see `Inner::must_freeze`).
    pub frozen_bytes: usize,
    /// The writer's pace through the running spill (see `pacing`).
    pub pace: super::pacing::Pace,
    /// The log retired at the last freeze, until it is known to be synced. The spill syncs it
    /// first thing; a synced write in the new log must not be acknowledged before that (or
    /// a power failure could keep it while losing older writes), so it syncs it itself if the
    /// spill has not got there yet.
    pub retired_log: Option<Arc<PendingSync>>,
    /// Set by a failure that leaves the log or tree in doubt; writes then fail until reopen.
    pub poisoned: Option<Error>,
    pub closed: bool,
    /// The thread that fsyncs the log while a big synced group is applied (started by the
    /// first such group).
    pub syncer: Option<wal::Syncer>,
    /// The number of the last commit (batch) admitted.
    pub seq: u64,
    /// Bytes the named keyspaces' root buffers took since the last freeze.
    pub named_buffered: usize,
    /// What commits wrote, for transactions' checks (see `conflicts`).
    pub conflicts: Conflicts,
    /// Scratch for `commit_group`: the keyspaces a group wrote, and their buffers' memory
    /// before it.
    pub touched: Vec<(u32, usize)>,
    /// The latest time a group or a freeze was stamped with (ms): times handed out never go
    /// back, even if the clock does, so that every message written after a freeze is stamped
    /// no earlier than it (what lets a spill drop expired records: see `tree::spill`).
    pub time_floor: u64,
    /// Scratch for `commit_group`: a payload built of several batches, or marked with a time.
    pub scratch: Vec<u8>,
}

impl WriterState {
    /// The time for a group or a freeze: the clock's, or the last one handed out if later.
    pub fn stamp(&mut self, clock_now: u64) -> u64 {
        self.time_floor = self.time_floor.max(clock_now).max(1);
        self.time_floor
    }
}

impl WriterState {
    /// The sync thread, started if need be; `None` if it cannot be (the writer then syncs
    /// on its own thread).
    pub fn syncer(&mut self, counters: &Arc<Counters>) -> Option<&wal::Syncer> {
        if self.syncer.is_none() {
            self.syncer = wal::Syncer::start(counters.clone()).ok();
        }
        self.syncer.as_ref()
    }

    /// The log. Only a writable handle gets here: `check_writable` refuses writes to a
    /// read-only one, and `close` returns early.
    pub fn log(&mut self) -> &mut LogWriter {
        self.log
            .as_mut()
            .expect("a read-only handle never reaches the write path")
    }
}
