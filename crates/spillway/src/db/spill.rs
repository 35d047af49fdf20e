//! The spill of a frozen root buffer into the tree, with everything it sets off: internal-node
//! spills, splits, the manifest, garbage collection. It runs on a background thread of its own
//! (or on the writer's, with `Options::background_spills` off). One runs at a time, and only a
//! spill changes the tree, so it can build the new tree from the published one undisturbed.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{read, write, Inner, Part, Version};
use crate::error::{Error, Result};
use crate::io::{self, PendingSync};
use crate::manifest;
use crate::tree::Spiller;
use crate::util::sync::lock;

/// Selector entries a spill may reread from list fingerprints to rebuild the selectors of
/// nodes that splits made (~50 ms of work); the rest wait for later spills (see
/// `Selector::refresh`).
const REBUILD_PER_SPILL: u64 = 2 << 20;

/// Threads a spill brings its nodes' selectors up to date on. The spill thread is the one
/// writers wait for when the next buffer fills, and a writer that fsyncs each batch leaves
/// most of a core idle: a second thread took a 20 M-record load under a 24 MiB budget from
/// 0.68 M to 0.84–0.89 M inserts/s and halved its longest stalls (BENCHMARKS.md).
const SELECTOR_THREADS: usize = 2;

/// The frozen buffers (of the version the freeze published) and the logs that hold their
/// records.
pub(super) struct SpillJob {
    pub version: Arc<Version>,
    /// The log the buffer after this one starts in: once this spill is durable, recovery
    /// starts there.
    pub next_log: u64,
    /// Logs holding only this buffer's records, deleted once the spill is durable.
    pub logs: Vec<u64>,
    /// The newest of them, which may not be synced yet.
    pub retired_log: Arc<PendingSync>,
    /// When the buffer was frozen: every message written since is stamped no earlier, so a
    /// value expired by then may go wherever the spill meets it (see `tree::spill`).
    pub frozen_at: u64,
}

impl Inner {
    /// The spill thread's body: a failure, even a panic, is kept for the writer and `close`
    /// to report, never lost.
    pub(super) fn spill_in_background(self: Arc<Self>, job: SpillJob) {
        struct ReportPanic<'a>(&'a Inner);
        impl Drop for ReportPanic<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.fail_spill(Error::Poisoned {
                        reason: "a background spill panicked".into(),
                    });
                }
            }
        }
        let _report = ReportPanic(&self);
        if let Err(e) = self.run_spill(job) {
            if !is_lack_of_space(&e) {
                self.fail_spill(e);
            }
        }
    }

    /// Spill `job`; if that fails for lack of space, keep it to run again (see
    /// `wait_for_spill`) rather than stopping the store: nothing of it was published, and its
    /// records stay readable in the frozen buffer and durable in its logs.
    pub(super) fn run_spill(&self, job: SpillJob) -> Result<()> {
        let spilled = self.spill(&job);
        if let Err(e) = &spilled {
            if is_lack_of_space(e) {
                *lock(&self.spills.put_off) = Some(PutOff::Spill(job));
            }
        }
        spilled
    }

    fn fail_spill(&self, e: Error) {
        lock(&self.spills.error).get_or_insert(e);
    }

    /// Move a frozen buffer into the tree. Order matters for crashes: new list files are
    /// fsynced, then the manifest naming them and the log recovery starts from is made durable,
    /// and only then are the buffer's logs and superseded list files deleted. Until the new
    /// tree is published, readers find the records in the frozen buffer.
    pub(super) fn spill(&self, job: &SpillJob) -> Result<()> {
        let started = Instant::now();
        // A failure here is final: `PendingSync` never retries a failed fsync.
        job.retired_log.sync().map_err(|e| Error::Poisoned {
            reason: format!("the retired log could not be synced: {e}"),
        })?;
        let mut trees = Vec::with_capacity(job.version.parts.len());
        let mut created = Vec::new();
        let mut spilled = Ok(());
        let lists: u64 = job
            .version
            .parts
            .iter()
            .map(|p| p.tree.list_metadata_memory())
            .sum();
        for part in &job.version.parts {
            // A keyspace no one wrote to since the last spill is swept all the same: its
            // expired data goes at the time it would have gone with writes.
            if part.frozen.is_none() && !part.tree.holds_expiry() {
                trees.push(part.tree.clone());
                continue;
            }
            let mut tree = (*part.tree).clone();
            let mut sp = Spiller {
                dir: &self.dir,
                opts: &part.def.opts,
                counters: &self.counters,
                handles: &self.handles,
                next_file: &self.next_file,
                created: Vec::new(),
                horizon: job.frozen_at,
            };
            spilled = (|| {
                if let Some(frozen) = &part.frozen {
                    sp.spill_buffer(&mut tree, &read(frozen).sorted())?;
                }
                if tree.holds_expiry() {
                    sp.sweep_expired(&mut tree.root)?;
                }
                Ok(())
            })()
            .and_then(|()| {
                let room = self.budget.selector_room(&self.opts, lists);
                let params = crate::tree::SelectorParams::of(&part.def.opts);
                tree.refresh_selectors(params, SELECTOR_THREADS, REBUILD_PER_SPILL, &room)
            });
            created.append(&mut sp.created);
            if spilled.is_err() {
                break;
            }
            trees.push(Arc::new(tree));
        }
        if let Err(e) = spilled {
            for id in created {
                let _ = io::remove_file(&crate::files::list_path(&self.dir, id));
            }
            return Err(e);
        }

        // The new lists' directory entries must be durable before a manifest names them.
        io::sync_dir(&self.dir)?;
        // Recovery starts in the log after the frozen buffers'; no clean close sealed that.
        let meta = lock(&self.durable_meta).after_spill(job.next_log, self.next_file.load(Relaxed));
        let refs: Vec<&crate::tree::Tree> = trees.iter().map(|t| &**t).collect();
        manifest::write(&self.dir, &meta, &refs, &self.counters)?;
        *lock(&self.durable_meta) = meta;

        let mut new_live = BTreeSet::new();
        for t in &trees {
            new_live.extend(t.live_files());
        }
        {
            let mut current = write(&self.current);
            assert!(
                Arc::ptr_eq(&current, &job.version)
                    || current.parts.len() == job.version.parts.len()
                        && current.parts.iter().zip(&job.version.parts).all(|(c, j)| {
                            Arc::ptr_eq(&c.tree, &j.tree)
                                && c.frozen.as_ref().map(Arc::as_ptr)
                                    == j.frozen.as_ref().map(Arc::as_ptr)
                        }),
                "only spills change the trees, and keyspaces change only while none runs"
            );
            let parts = current
                .parts
                .iter()
                .zip(trees)
                .map(|(p, tree)| Part {
                    def: p.def.clone(),
                    mem: p.mem.clone(),
                    frozen: None,
                    tree,
                })
                .collect();
            *current = Arc::new(Version { parts });
        }

        // Garbage: files the old tree used, and files this spill wrote and already merged
        // away (a list spilled into an internal node that then spilled itself). Removal is best
        // effort: the new tree is durable, so a file left behind is an orphan that the next
        // open removes, never something a reader could miss. The old tree's files go once the
        // last reader of an old version is done with them (it may have to reopen one: the
        // handle cache may have closed it); no reader ever saw the others.
        for part in &job.version.parts {
            part.tree.root.visit(&mut |n| {
                for l in n.lists.iter().filter(|l| !new_live.contains(&l.file.id())) {
                    l.file.remove_when_unused();
                }
            });
        }
        let dead: BTreeSet<u64> = created
            .into_iter()
            .filter(|id| !new_live.contains(id))
            .collect();
        for id in dead {
            let _ = io::remove_file(&crate::files::list_path(&self.dir, id));
        }
        for &n in &job.logs {
            let _ = io::remove_file(&crate::files::log_path(&self.dir, n));
        }
        self.counters
            .spill_micros
            .fetch_add(started.elapsed().as_micros() as u64, Relaxed);
        Ok(())
    }
}

/// A failure that freeing space cures: the spill can simply run again.
pub(super) fn is_lack_of_space(e: &Error) -> bool {
    e.io_kind() == Some(std::io::ErrorKind::StorageFull)
}

/// What spills leave for the writer, which reports or retries it at its next write.
#[derive(Default)]
pub(super) struct Spills {
    /// The first failure of a background spill. Every later write and `close` report it.
    pub error: Mutex<Option<Error>>,
    /// A freeze or spill that failed for lack of space, to run again (see `PutOff`).
    pub put_off: Mutex<Option<PutOff>>,
}

/// Work that failed for lack of space, to run again once there may be room: it changed
/// nothing, and what it would have moved is still in memory and in the logs. Meanwhile the
/// store takes writes until the buffer is full again, and reads all along.
pub(super) enum PutOff {
    /// A freeze that found no room for the new log (or the old log's link to it).
    Freeze,
    /// The spill of the frozen buffer.
    Spill(SpillJob),
}

/// Where a frozen buffer is spilled.
pub(super) enum Spill {
    /// On this thread, before `freeze` returns.
    Inline,
    /// On a thread of its own; the writer goes on.
    Background,
}
