//! A thread that fsyncs the log while the writer applies the group being synced to the root
//! buffer (TurtleKV's pipelined update path, one step further): the group's CPU work and its
//! fdatasync overlap instead of following each other. The group stays invisible to readers
//! until its fsync returns (see `Buffer::hold`), and is acknowledged only then.
//!
//! A hand-off costs two wake-ups, so the writer uses it only for groups whose apply costs
//! more than that (see `db::commit`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{IoContext, Result};
use crate::io::SyncPoint;
use crate::stats::Counters;
use crate::util::worker::{Shared, Stoppable, Worker};

pub struct Syncer {
    worker: Worker<Slot>,
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

impl Stoppable for Slot {
    fn stop(&mut self) {
        *self = Slot::Stop;
    }
}

impl Syncer {
    pub fn start(counters: Arc<Counters>) -> Result<Syncer> {
        let worker = Worker::start("spillway-log-sync", Slot::Idle, move |shared| {
            run(shared, &counters)
        })
        .context(|| "starting the log's sync thread".to_string())?;
        Ok(Syncer { worker })
    }

    /// Start syncing `point`; [`finish`](Self::finish) waits for it. One at a time.
    pub fn begin(&self, point: SyncPoint) {
        let shared = self.worker.shared();
        let mut slot = shared.lock();
        assert!(matches!(*slot, Slot::Idle), "one sync in flight at a time");
        *slot = Slot::Pending(point);
        shared.changed();
    }

    /// Wait for the sync [`begin`](Self::begin) started: the point, and whether it is durable.
    pub fn finish(&self) -> (SyncPoint, Result<()>) {
        let shared = self.worker.shared();
        let mut slot = shared.lock();
        loop {
            match std::mem::replace(&mut *slot, Slot::Idle) {
                Slot::Done(point, result) => return (point, result),
                Slot::Idle => panic!("finish without begin"),
                other => {
                    *slot = other;
                    slot = shared.wait(slot);
                }
            }
        }
    }
}

/// The thread: sync each point handed over, until told to stop.
fn run(shared: &Shared<Slot>, counters: &Counters) {
    let mut slot = shared.lock();
    loop {
        match std::mem::replace(&mut *slot, Slot::Idle) {
            Slot::Stop => return,
            Slot::Pending(point) => {
                *slot = Slot::Syncing;
                drop(slot);
                let started = Instant::now();
                let result = point.sync();
                let micros = started.elapsed().as_micros() as u64;
                counters.max_log_sync_micros.fetch_max(micros, Relaxed);
                slot = shared.lock();
                if !matches!(*slot, Slot::Stop) {
                    *slot = Slot::Done(point, result);
                }
                shared.changed();
            }
            other => {
                *slot = other;
                slot = shared.wait(slot);
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
