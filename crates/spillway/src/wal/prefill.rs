//! Zeros written ahead of a log's end, so that synced appends overwrite blocks the file system
//! has already allocated and written.
//!
//! An fdatasync after an append that grows the file must also commit the new size and the
//! new blocks (a journal commit on ext4); one after an overwrite of written blocks flushes the
//! data alone. Measured on this project's machine, a synced 160-byte append costs 117–135 µs
//! against 77–92 µs for the overwrite, and a 32 KiB one 158–174 µs against 104–112 µs (a
//! file merely extended with `ftruncate` or `fallocate` helps the small write only: its
//! blocks are allocated, or converted from unwritten, by the fdatasync that follows).
//!
//! So once a log takes a synced write soon after the last one (less than [`SYNCED_OFTEN`]
//! appended in between: synced batches, `appendfsync always`), a thread of its own keeps
//! [`AHEAD`] bytes past the
//! log's end written with zeros and synced, a [`CHUNK`] at a time, in the background. The log
//! writer tells it, before each append, where the append will end ([`Prefill::reserve`]); the
//! thread only ever zeros bytes past that, and an append that would reach into zeros being
//! written waits for them. Zeros past a log's records read, at recovery, as space never
//! written (`Bad::Unwritten`): what a crash leaves there is what it left before, a log that
//! simply ends.
//!
//! It is only a hint: a zero write that fails (a full disk) stops the thread, and appends go
//! on growing the file as before. The zeros are counted as disk writes, as they are.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::io::power_loss;
use crate::stats::Counters;
use crate::util::worker::{Shared, Stoppable, Worker};

/// How far past the log's end zeros are kept ready.
pub const AHEAD: u64 = 4 << 20;
/// How many bytes the thread zeros, and syncs, at a time.
pub const CHUNK: u64 = 1 << 20;
/// Syncs this close (in bytes appended between them) are frequent enough for zeros ahead to
/// pay: a log synced once a second under a heavy load (megabytes between syncs) saves a
/// journal commit a second with them, and pays a second write of every byte (5% of a
/// server's CPU at `appendfsync everysec`).
pub const SYNCED_OFTEN: u64 = CHUNK;
/// The zeros start this far past the end at which the log took its first synced write:
/// zeroing right at the end would make the next append wait for the first chunk.
const GAP: u64 = 64 << 10;

/// The thread that zeros a log ahead of its end; stopped (and joined) when dropped.
pub struct Prefill {
    worker: Worker<State>,
}

struct State {
    /// The furthest any append has ended, or is about to end: never zeroed.
    end: u64,
    /// Zeros are written (and synced) from `zeroed_from` to `zeroed`.
    zeroed_from: u64,
    zeroed: u64,
    /// Zeros being written from here to `zeroed + CHUNK`, without the lock.
    in_flight: Option<u64>,
    /// The thread waits for the log to grow.
    idle: bool,
    stop: bool,
}

impl Stoppable for State {
    fn stop(&mut self) {
        self.stop = true;
    }
}

/// What the thread writes zeros into.
struct Zeroer {
    file: File,
    path: PathBuf,
    counters: Arc<Counters>,
}

impl Prefill {
    /// Start zeroing ahead of `end` in `file` (a handle of the log at `path`). `None` if the
    /// handle cannot be duplicated or the thread not started: the log goes on without.
    /// Blocks before `written` hold bytes already (a recycled log's, see `free_logs`): an append
    /// over them is as cheap as one over zeros, so zeros go only past them.
    pub fn start(
        file: &File,
        path: PathBuf,
        end: u64,
        written: u64,
        counters: Arc<Counters>,
    ) -> Option<Prefill> {
        let (zeroed_from, zeroed) = match written > end + GAP {
            true => (end, written),
            false => (end + GAP, end + GAP),
        };
        let state = State {
            end,
            zeroed_from,
            zeroed,
            in_flight: None,
            idle: false,
            stop: false,
        };
        let zeroer = Zeroer {
            file: file.try_clone().ok()?,
            path,
            counters,
        };
        let worker = Worker::start("spillway-log-prefill", state, move |shared| {
            zeroer.run(shared)
        })
        .ok()?;
        Some(Prefill { worker })
    }

    /// The log writer is about to write up to byte `end`: no zeros go there from now on, and
    /// if zeros are being written below it, wait until they are.
    pub fn reserve(&self, end: u64) {
        let shared = self.worker.shared();
        let mut s = shared.lock();
        while s.in_flight.is_some_and(|from| from < end) {
            s = shared.wait(s);
        }
        s.end = s.end.max(end);
        if s.idle && s.zeroed < s.end + AHEAD {
            s.idle = false;
            shared.changed();
        }
    }

    /// Where the zeros written and synced so far end (or the blocks written before them, in a
    /// recycled log): no byte before it is space merely set aside.
    pub fn zeroed_to(&self) -> u64 {
        self.worker.shared().lock().zeroed
    }

    /// Whether appending from `from` up to `end` only overwrites zeros already written and
    /// synced.
    #[cfg(test)]
    pub fn covers(&self, from: u64, end: u64) -> bool {
        let s = self.worker.shared().lock();
        s.zeroed_from <= from && end <= s.zeroed
    }

    /// Wait until zeros reach `AHEAD` past the end, or the thread gave up.
    #[cfg(test)]
    pub fn wait_ahead(&self) {
        let shared = self.worker.shared();
        let mut s = shared.lock();
        while !s.stop && (s.zeroed < s.end + AHEAD || s.in_flight.is_some()) {
            s = shared.wait(s);
        }
    }
}

impl Zeroer {
    fn run(&self, shared: &Shared<State>) {
        let mut s = shared.lock();
        loop {
            if s.stop {
                return;
            }
            if s.zeroed >= s.end + AHEAD {
                s.idle = true;
                s = shared.wait(s);
                continue;
            }
            // An append that overtook the zeros (one larger than `AHEAD`, or while a chunk was
            // being written) leaves its bytes alone: zeros go on past it.
            if s.zeroed < s.end {
                s.zeroed_from = s.end;
                s.zeroed = s.end;
            }
            let from = s.zeroed;
            s.in_flight = Some(from);
            drop(s);
            let written = self.zero(from, CHUNK);
            s = shared.lock();
            s.in_flight = None;
            match written {
                Ok(()) => s.zeroed = from + CHUNK,
                Err(()) => s.stop = true, // a hint only: appends go on without it
            }
            shared.changed();
        }
    }

    /// Write `len` zeros at `from` and sync them. After a simulated crash or power loss
    /// (tests), nothing more is written.
    ///
    /// A page at a time: the page cache keeps what one write puts in as one folio (on Linux
    /// 6.x with ext4), and a later small append into a larger folio dirties all of it — each
    /// synced one-record write then sent 64 KiB to the device when the zeros went in 64 KiB
    /// at a time.
    fn zero(&self, from: u64, len: u64) -> Result<(), ()> {
        static ZEROS: [u8; 4096] = [0; 4096];
        let mut at = from;
        while at < from + len {
            let n = (from + len - at).min(ZEROS.len() as u64) as usize;
            power_loss::check(&self.path).map_err(drop)?;
            self.file.write_all_at(&ZEROS[..n], at).map_err(drop)?;
            at += n as u64;
        }
        power_loss::check(&self.path).map_err(drop)?;
        self.file.sync_data().map_err(drop)?;
        self.counters.add_disk_write(len);
        (self.counters.log_zero_bytes).fetch_add(len, std::sync::atomic::Ordering::Relaxed);
        self.counters.add_fsync();
        Ok(())
    }
}
