//! A thread that fsyncs the log while the writer applies the group being synced to the root
//! buffer (TurtleKV's pipelined update path, one step further): the group's CPU work and its
//! fdatasync overlap instead of following each other. The group stays invisible to readers
//! until its fsync returns (see `Buffer::hold`), and is acknowledged only then.
//!
//! A hand-off costs two wake-ups, so the writer uses it only for groups whose apply costs
//! more than that (see `db::commit`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::error::{IoContext, Result};
use crate::io::SyncPoint;
use crate::stats::Counters;

pub struct Syncer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    slot: Mutex<Slot>,
    changed: Condvar,
    counters: Arc<Counters>,
}

enum Slot {
    Idle,
    /// Handed over, not yet taken by the thread.
    Pending(SyncPoint),
    /// The thread is syncing it.
    Syncing,
    /// Synced (or failed), not yet taken back.
    Done(SyncPoint, Result<()>),
    Stop,
}

impl Syncer {
    pub fn start(counters: Arc<Counters>) -> Result<Syncer> {
        let shared = Arc::new(Shared {
            slot: Mutex::new(Slot::Idle),
            changed: Condvar::new(),
            counters,
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("spillway-log-sync".into())
            .spawn(move || worker.run())
            .context(|| "starting the log's sync thread".to_string())?;
        Ok(Syncer {
            shared,
            thread: Some(thread),
        })
    }

    /// Start syncing `point`; [`finish`](Self::finish) waits for it. One at a time.
    pub fn begin(&self, point: SyncPoint) {
        let mut slot = self.shared.lock();
        assert!(matches!(*slot, Slot::Idle), "one sync in flight at a time");
        *slot = Slot::Pending(point);
        self.shared.changed.notify_all();
    }

    /// Wait for the sync [`begin`](Self::begin) started: the point, and whether it is durable.
    pub fn finish(&self) -> (SyncPoint, Result<()>) {
        let mut slot = self.shared.lock();
        loop {
            match std::mem::replace(&mut *slot, Slot::Idle) {
                Slot::Done(point, result) => return (point, result),
                Slot::Idle => panic!("finish without begin"),
                other => {
                    *slot = other;
                    slot = self.shared.wait(slot);
                }
            }
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        *self.shared.lock() = Slot::Stop;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        crate::util::sync::lock(&self.slot)
    }

    fn wait<'a>(&self, s: MutexGuard<'a, Slot>) -> MutexGuard<'a, Slot> {
        crate::util::sync::wait(&self.changed, s)
    }

    fn run(&self) {
        let mut slot = self.lock();
        loop {
            match std::mem::replace(&mut *slot, Slot::Idle) {
                Slot::Stop => return,
                Slot::Pending(point) => {
                    *slot = Slot::Syncing;
                    drop(slot);
                    let started = Instant::now();
                    let result = point.sync();
                    let micros = started.elapsed().as_micros() as u64;
                    self.counters.max_log_sync_micros.fetch_max(micros, Relaxed);
                    slot = self.lock();
                    if !matches!(*slot, Slot::Stop) {
                        *slot = Slot::Done(point, result);
                    }
                    self.changed.notify_all();
                }
                other => {
                    *slot = other;
                    slot = self.wait(slot);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::AppendFile;

    #[test]
    fn each_begin_is_finished_with_its_point_synced() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::<Counters>::default();
        let mut file = AppendFile::create(&dir.path().join("f"), counters.clone()).unwrap();
        let syncer = Syncer::start(counters.clone()).unwrap();
        for round in 1..=50u64 {
            file.append(&[round as u8; 100]).unwrap();
            syncer.begin(file.sync_point().unwrap());
            let (point, result) = syncer.finish();
            result.unwrap();
            assert_eq!(point.len(), round * 100);
        }
        assert_eq!(counters.fsyncs.load(Relaxed), 50);
    }
}
