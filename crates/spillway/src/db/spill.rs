//! The spill of a frozen root buffer into the tree, with everything it sets off: internal-node
//! spills, splits, the manifest, garbage collection; then upkeep of the nodes it filled (see
//! `tree::upkeep`) and the sweep of dead data (see `tree::sweep`), a published step at a
//! time. It runs on a background thread of its own (or on the writer's, with
//! `Options::background_spills` off). One runs at a time, and only a spill changes the tree,
//! so it can build the new tree from the published one undisturbed.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicBool;
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
/// nodes that splits made, per 64 MiB of root buffer (~50 ms of work); the rest wait for
/// later spills (see `tree::Rebuilds`).
const REBUILD_PER_SPILL: u64 = 2 << 20;

/// What a spill or upkeep step may rebuild: [`REBUILD_PER_SPILL`] per 64 MiB of root buffer.
/// Splits come with records, so the rebuilds owed grow with what each spill brings; a fixed
/// allowance let a store of 512 MiB buffers (an eighth of the spills for its records) fall
/// behind, and at a billion records most leaves kept the selectors their splits passed on —
/// a bit coarser per split, and read back after an open once per leaf of the line that
/// shares them (BENCHMARKS.md, seventh run).
fn rebuild_allowance(root_buffer_size: usize) -> u64 {
    REBUILD_PER_SPILL * (root_buffer_size as u64 >> 26).max(1)
}

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
        if let Err(e) = self.run_spill(job, true) {
            if !is_lack_of_space(&e) {
                self.fail_spill(e);
            }
        }
    }

    /// Spill `job`, then upkeep (if `upkeep`) and sweep; if the spill fails for lack of space,
    /// keep the job to run again (see `wait_for_spill`) rather than stopping the store:
    /// nothing of it was published, and its records stay readable in the frozen buffer and
    /// durable in its logs.
    pub(super) fn run_spill(&self, job: SpillJob, upkeep: bool) -> Result<()> {
        let started = Instant::now();
        self.spills.freeze_waits.store(false, Relaxed);
        self.spills.published.store(false, Relaxed);
        let fresh_from = self.next_file.load(Relaxed);
        let version = match self.spill(&job, fresh_from) {
            Ok(version) => version,
            Err(e) => {
                if is_lack_of_space(&e) {
                    *lock(&self.spills.put_off) = Some(PutOff::Spill(job));
                }
                return Err(e);
            }
        };
        // What is left is upkeep: a writer whose buffer fills may go on (see `may_overfill`).
        self.spills.published.store(true, Relaxed);
        self.spills.times.published(started.elapsed());
        let (horizon, next_log) = (job.frozen_at, job.next_log);
        // The job's version holds the tree as it was before the spill: every file upkeep or
        // the sweep replaces would stay on disk until it let go.
        drop(job);
        let upkeep_from = self.next_file.load(Relaxed);
        let upkept = if upkeep {
            self.steps(version, horizon, upkeep_from, next_log, |_| Step::Upkeep)
        } else {
            Ok(version)
        };
        let swept = upkept
            .and_then(|version| {
                self.steps(version, horizon, fresh_from, next_log, |again| {
                    Step::Sweep { again }
                })
            })
            .map(drop);
        self.counters
            .spill_micros
            .fetch_add(started.elapsed().as_micros() as u64, Relaxed);
        swept
    }

    fn fail_spill(&self, e: Error) {
        lock(&self.spills.error).get_or_insert(e);
    }

    /// Move a frozen buffer into the tree, and publish the new version. Order matters for
    /// crashes: new list files are fsynced, then the manifest naming them and the log recovery
    /// starts from is made durable, and only then are the buffer's logs and superseded list
    /// files deleted. Until the new tree is published, readers find the records in the frozen
    /// buffer.
    fn spill(&self, job: &SpillJob, fresh_from: u64) -> Result<Arc<Version>> {
        // The retired log must be durable before the manifest stops naming it. Its fsync —
        // up to a buffer's worth of unsynced writes, a tenth of a second or more — runs on a
        // thread of its own while the spill merges, so that the device's time and the cores'
        // overlap (without a thread to spare, one after the other).
        let sync = || job.retired_log.sync();
        let rebuild = || self.rebuild(&job.version, job.frozen_at, fresh_from, Step::Spill);
        let (synced, spilled) =
            std::thread::scope(
                |s| match std::thread::Builder::new().spawn_scoped(s, sync) {
                    Ok(syncing) => {
                        let spilled = rebuild();
                        let synced = syncing.join().unwrap_or_else(|_| {
                            Err(Error::Poisoned {
                                reason: "the retired log's sync panicked".into(),
                            })
                        });
                        (synced, spilled)
                    }
                    Err(_) => (sync(), rebuild()),
                },
            );
        if let Err(e) = synced {
            // Final: `PendingSync` never retries a failed fsync.
            if let Ok(Some(rebuilt)) = spilled {
                self.remove_lists(&rebuilt.created);
            }
            return Err(Error::Poisoned {
                reason: format!("the retired log could not be synced: {e}"),
            });
        }
        self.publish(&job.version, spilled?, job.next_log, &job.logs)
    }

    /// Remove list files a rebuild wrote that will never be published.
    fn remove_lists(&self, ids: &[u64]) {
        for &id in ids {
            let _ = io::remove_file(&crate::files::list_path(&self.dir, id));
        }
    }

    /// Upkeep (see `tree::upkeep`) or sweep (see `tree::sweep`) the trees of `version`, a
    /// step at a time, each published before the next so that the old lists it rewrote go
    /// before more are written; `step(again)` is the step to take, `again` once one changed
    /// something. Returns the last version published. The buffer is spilled by now: a step
    /// that fails for lack of space is left to the next spill (a step whose manifest found
    /// no room leaves its lists as orphans for the next open to remove: the manifest may or
    /// may not name them), and a writer waiting to freeze the next buffer is not kept
    /// waiting for more than the node a step is at.
    fn steps(
        &self,
        mut version: Arc<Version>,
        horizon: u64,
        fresh_from: u64,
        next_log: u64,
        step: impl Fn(bool) -> Step,
    ) -> Result<Arc<Version>> {
        // Each step settles or collects at least one node not written by these steps, and
        // what they write is not taken again (`Spiller::fresh_from`): the steps are bounded
        // by the nodes there were, and those the first ones split. The bound is a guard
        // against a step that frees nothing.
        let mut nodes = 0;
        for part in &version.parts {
            part.tree.root.visit(&mut |_| nodes += 1);
        }
        let mut again = false;
        for _ in 0..4 * nodes + 4 {
            if self.spills.freeze_waits.load(Relaxed) {
                break;
            }
            let stepped = self
                .rebuild(&version, horizon, fresh_from, step(again))
                .and_then(|stepped| match stepped {
                    Some(stepped) => self
                        .publish(&version, Some(stepped), next_log, &[])
                        .map(Some),
                    None => Ok(None),
                });
            match stepped {
                Ok(Some(next)) => {
                    version = next;
                    again = true;
                }
                Ok(None) => break,
                Err(e) if is_lack_of_space(&e) => break,
                Err(e) => return Err(e),
            }
        }
        Ok(version)
    }

    /// The trees of `version` after `step`, and the files written for them; `None` if the
    /// step changed nothing. On failure, the files it wrote are removed.
    fn rebuild(
        &self,
        version: &Version,
        horizon: u64,
        fresh_from: u64,
        step: Step,
    ) -> Result<Option<Rebuilt>> {
        let mut trees = Vec::with_capacity(version.parts.len());
        let mut created = Vec::new();
        let mut changed = false;
        let lists: u64 = version
            .parts
            .iter()
            .map(|p| p.tree.list_metadata_memory())
            .sum();
        let mut result = Ok(());
        for part in &version.parts {
            let unchanged = match step {
                Step::Spill => part.frozen.is_none(),
                Step::Upkeep => !part
                    .tree
                    .may_need_upkeep(part.def.opts.node_size, part.def.opts.fast_split_ratio),
                Step::Sweep { again } => !again && !part.tree.may_hold_dead(),
            };
            if unchanged {
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
                cores: &self.spill_cores,
                created: Vec::new(),
                unsynced: Vec::new(),
                horizon,
                above: Default::default(),
                fresh_from,
            };
            result = (|| {
                let changed_here = match (step, &part.frozen) {
                    (Step::Spill, Some(frozen)) => {
                        sp.spill_buffer(&mut tree, &read(frozen).sorted_on(&self.spill_cores))?;
                        true
                    }
                    (Step::Spill, None) => false,
                    (Step::Upkeep, _) => {
                        let budget = sp.upkeep_budget(&tree);
                        let stop = || self.spills.freeze_waits.load(Relaxed);
                        sp.upkeep(&mut tree, budget, &stop)?
                    }
                    (Step::Sweep { .. }, _) => {
                        let budget = sp.sweep_budget(&tree);
                        sp.sweep(&mut tree, budget)?
                    }
                };
                // Upkeep also rewrites the tiers on disk that spills left growing in memory
                // (see `SelectorRoom::hold_back`), nodes settled or not.
                let upkeep = matches!(step, Step::Upkeep);
                if !changed_here && !upkeep {
                    return Ok(());
                }
                let stop = || self.spills.freeze_waits.load(Relaxed);
                let hold_back: &(dyn Fn() -> bool + Sync) = match step {
                    Step::Spill => &crate::tree::always,
                    Step::Upkeep | Step::Sweep { .. } => &stop,
                };
                let room = self.budget.selector_room(&self.opts, lists, hold_back);
                let before = (!changed_here).then(|| tree.selector_identities());
                let params = crate::tree::SelectorParams::of(&part.def.opts);
                // On every core the spill may use: the spill thread is the one writers wait for
                // when the next buffer fills, and a writer that fsyncs each batch leaves most of
                // a core idle. A second thread took a 20 M-record load under a 24 MiB budget
                // from 0.68 M to 0.84–0.89 M inserts/s and halved its longest stalls.
                // A writer waiting for this thread stops the rebuilds of split nodes' selectors
                // in a spill too, not only in upkeep: nothing is lost but precision for a while.
                let rebuilds = crate::tree::Rebuilds::new(
                    rebuild_allowance(part.def.opts.root_buffer_size),
                    &stop,
                );
                let built = tree.refresh_selectors(params, &self.spill_cores, &rebuilds, &room)?;
                self.counters
                    .selector_entries_built
                    .fetch_add(built, Relaxed);
                if before.is_some_and(|b| b == tree.selector_identities()) {
                    return Ok(()); // an upkeep step that found nothing to do
                }
                changed = true;
                tree.save_selectors(&self.dir, &self.next_file, &self.counters)
                    .map(drop)
            })();
            // The tree's new lists, synced together before a manifest may name them.
            result = result.and_then(|()| sp.sync_lists());
            created.append(&mut sp.created);
            if result.is_err() {
                break;
            }
            trees.push(Arc::new(tree));
        }
        if let Err(e) = result {
            self.remove_lists(&created);
            return Err(e);
        }
        Ok(changed.then_some(Rebuilt { trees, created }))
    }

    /// Rewrite the index of saved selectors for `trees`, the trees of `parts` as the manifest
    /// is about to hold them (see `tree::selector_index`).
    pub(super) fn write_selector_index(
        &self,
        parts: &[Part],
        trees: &[&crate::tree::Tree],
    ) -> Result<()> {
        let trees = selector_trees(parts, trees);
        crate::tree::selector_index::write(&self.dir, &trees, &self.counters)
    }

    /// Make `rebuilt` (if any: a spill of empty buffers rebuilds nothing, but still moves
    /// recovery past their logs) durable and current in place of `from`, then delete what it
    /// superseded: `logs`, the lists only `from` used, and those it wrote and merged away.
    fn publish(
        &self,
        from: &Arc<Version>,
        rebuilt: Option<Rebuilt>,
        next_log: u64,
        logs: &[u64],
    ) -> Result<Arc<Version>> {
        let Rebuilt { trees, created } = rebuilt.unwrap_or_else(|| Rebuilt {
            trees: from.parts.iter().map(|p| p.tree.clone()).collect(),
            created: Vec::new(),
        });
        // The new lists' directory entries must be durable before a manifest names them.
        io::sync_dir(&self.dir)?;
        // Recovery starts in the log after the frozen buffers'; no clean close sealed that.
        let meta = lock(&self.durable_meta).after_spill(next_log, self.next_file.load(Relaxed));
        let refs: Vec<&crate::tree::Tree> = trees.iter().map(|t| &**t).collect();
        // Before the manifest, so that a failure leaves the published tree as it is; an index
        // ahead of the manifest (a crash between the two) costs the next open a few rebuilds.
        self.write_selector_index(&from.parts, &refs)?;
        manifest::write(&self.dir, &meta, &refs, &self.counters)?;
        *lock(&self.durable_meta) = meta;

        let mut new_live = BTreeSet::new();
        for t in &trees {
            new_live.extend(t.live_files());
        }
        let published = {
            let mut current = write(&self.current);
            assert!(
                Arc::ptr_eq(&current, from)
                    || current.parts.len() == from.parts.len()
                        && current.parts.iter().zip(&from.parts).all(|(c, j)| {
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
            current.clone()
        };

        // Garbage: files the old tree used, and files this step wrote and already merged
        // away (a list spilled into an internal node that then spilled itself). Removal is best
        // effort: the new tree is durable, so a file left behind is an orphan that the next
        // open removes, never something a reader could miss. The old tree's files go once the
        // last reader of an old version is done with them (it may have to reopen one: the
        // handle cache may have closed it); no reader ever saw the others.
        for part in &from.parts {
            part.tree.root.visit(&mut |n| {
                for l in n.lists.iter().filter(|l| !new_live.contains(&l.file.id())) {
                    l.file.remove_when_unused();
                }
            });
        }
        let new_selector_files: BTreeSet<u64> = published
            .parts
            .iter()
            .flat_map(|p| p.tree.selector_files().into_keys())
            .collect();
        for part in &from.parts {
            for (id, file) in part.tree.selector_files() {
                if !new_selector_files.contains(&id) {
                    file.remove_when_unused();
                }
            }
        }
        let dead: BTreeSet<u64> = created
            .into_iter()
            .filter(|id| !new_live.contains(id))
            .collect();
        for id in dead {
            let _ = io::remove_file(&crate::files::list_path(&self.dir, id));
        }
        for &n in logs {
            self.free_logs.retire(n);
        }
        Ok(published)
    }
}

/// What a spill does to the trees: move the frozen buffers down, settle the nodes that
/// filled, or sweep.
#[derive(Clone, Copy)]
enum Step {
    Spill,
    Upkeep,
    /// `again`: a step before this one collected, so every tree is swept, not only those
    /// that may hold dead records: a collection that dropped a tree's last expiring record or
    /// range delete may have left the other half of a fast-split the last view of a dead file.
    Sweep {
        again: bool,
    },
}

/// Trees a step rebuilt (every keyspace's, in the version's order), and the list files it
/// wrote.
struct Rebuilt {
    trees: Vec<Arc<crate::tree::Tree>>,
    created: Vec<u64>,
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
    /// Someone waits for the running spill to end (`wait_for_spill`: a writer about to freeze
    /// the next buffer, a flush, a close, a change of keyspaces): the spill stops sweeping
    /// after the step it is in, and the next spill sweeps the rest.
    pub freeze_waits: AtomicBool,
    /// The running spill has published its buffers: what it does now is upkeep and sweeping,
    /// which stop when asked, and the frozen buffers' memory is free.
    pub published: AtomicBool,
    /// How long spills take to publish their buffers, which writers pace themselves by.
    pub times: super::pacing::SpillTimes,
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
    /// On this thread, before `freeze` returns, with its upkeep (see `tree::upkeep`).
    Inline,
    /// On this thread, before `freeze` returns, but upkeep is left to later spills: for an
    /// open's recovery, a flush or a change of keyspaces in a store with background spills,
    /// whose caller waits for the buffer to be in the tree, not for the backlog of upkeep the
    /// background spills were working through (at a billion records, a reopen that ran it
    /// took 390 s).
    BufferOnly,
    /// On a thread of its own; the writer goes on.
    Background,
}

/// `trees`, the trees of `parts`, with what the selector index needs of each: its keyspace id
/// and selector parameters.
pub(super) fn selector_trees<'a>(
    parts: &[Part],
    trees: &[&'a crate::tree::Tree],
) -> Vec<(
    u32,
    &'a crate::tree::Tree,
    Option<crate::tree::SelectorParams>,
)> {
    trees
        .iter()
        .zip(parts)
        .map(|(t, p)| (p.def.id, *t, crate::tree::SelectorParams::of(&p.def.opts)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebuilds_allowed_grow_with_the_root_buffer() {
        // The default buffer, and any smaller one (a budget's), keep the allowance it was
        // measured at; a buffer eight times bigger brings eight times the splits a spill.
        assert_eq!(rebuild_allowance(64 << 20), REBUILD_PER_SPILL);
        assert_eq!(rebuild_allowance(1 << 20), REBUILD_PER_SPILL);
        assert_eq!(rebuild_allowance(512 << 20), 8 * REBUILD_PER_SPILL);
    }
}
