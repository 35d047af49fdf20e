//! The write path: log the group, apply it to the root buffer, and spill the buffer into the
//! tree when it is full (WB-tree §3.2.1, §3.6).

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::{write, Inner, Version, WriterState};
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::io;
use crate::list::format as list_format;
use crate::manifest::{self, Meta};
use crate::stats::Counters;
use crate::tree::Spiller;
use crate::wal::{self, LogWriter};
use crate::write_queue::{lock, Group};

impl Inner {
    /// Commit one group (called by the group-commit leader only).
    pub(super) fn commit_group(&self, group: &Group) -> Result<()> {
        let mut w = lock(&self.writer);
        if w.closed {
            return Err(Error::Closed);
        }
        if let Some(e) = &w.poisoned {
            return Err(Error::Poisoned {
                reason: e.to_string(),
            });
        }
        let payload: Cow<[u8]> = match group.batches.as_slice() {
            [one] => Cow::Borrowed(one.payload()),
            many => Cow::Owned(many.iter().flat_map(|b| b.payload()).copied().collect()),
        };
        // A failed append or fsync leaves the log's tail in doubt (and after a failed fsync
        // the OS may have dropped the dirty pages): no later write may be acknowledged on top
        // of it. Reopening recovers exactly what the log holds.
        let logged =
            w.log.add_record(&payload).and_then(
                |()| {
                    if group.sync {
                        w.log.sync()
                    } else {
                        Ok(())
                    }
                },
            );
        if let Err(e) = logged {
            w.poisoned = Some(e.clone());
            return Err(e);
        }
        let c = &self.counters;
        Counters::bump(&c.write_groups);
        if group.sync {
            Counters::bump(&c.synced_groups);
        }
        c.user_bytes
            .fetch_add(group.batches.iter().map(|b| b.user_bytes()).sum(), Relaxed);
        c.user_records
            .fetch_add(group.batches.iter().map(|b| b.len() as u64).sum(), Relaxed);

        let version = self.version();
        let full = {
            let mut mem = write(&version.mem);
            for batch in &group.batches {
                for r in batch.iter() {
                    mem.put(r.key, r.value);
                }
            }
            mem.memory() >= self.opts.root_buffer_size
        };
        if full {
            // The group is logged, so it is acknowledged whatever happens to the spill; a
            // failed spill only stops later writes.
            if let Err(e) = self.spill(&mut w, &version) {
                w.poisoned = Some(e);
            }
        }
        Ok(())
    }

    /// Move the root buffer into the tree and start a new log. Order matters for crashes:
    /// new list files are fsynced, then the manifest naming them and the new log number is
    /// made durable, and only then are the old logs and superseded files deleted.
    pub(super) fn spill(&self, w: &mut WriterState, version: &Arc<Version>) -> Result<()> {
        // Sync the log being retired: otherwise unsynced writes in it could be lost to a power
        // failure while later writes in the new log survive, and recovery would no longer see a
        // prefix of what was written.
        w.log.sync()?;
        let log_number = w.meta.next_file;
        w.meta.next_file += 1;
        let new_log = LogWriter::create(&self.dir, log_number, self.counters.clone())?;
        let retired = std::mem::replace(&mut w.log, new_log);
        w.old_logs.push(retired.number());
        drop(retired);

        let mut tree = (*version.tree).clone();
        let mem = super::read(&version.mem);
        let sorted = mem.sorted();
        let mut sp = Spiller {
            dir: &self.dir,
            opts: &self.opts,
            counters: &self.counters,
            next_file: &mut w.meta.next_file,
            created: Vec::new(),
        };
        let spilled = sp.spill_buffer(&mut tree, &sorted);
        let created = std::mem::take(&mut sp.created);
        if let Err(e) = spilled {
            for id in created {
                let _ = io::remove_file(&self.dir.join(list_format::file_name(id)));
            }
            return Err(e);
        }

        // The new lists' directory entries must be durable before a manifest names them.
        io::sync_dir(&self.dir)?;
        let meta = Meta {
            next_file: w.meta.next_file,
            log_number,
        };
        manifest::write(&self.dir, meta, &tree, &self.counters)?;
        w.meta = meta;

        let old_live = version.tree.live_files();
        let tree = Arc::new(tree);
        let new_live = tree.live_files();
        // The next buffer will likely hold as many keys as this one did.
        let keys = sorted.len();
        *write(&self.current) = Arc::new(Version {
            mem: Buffer::with_capacity(keys).into(),
            tree,
        });

        // Garbage: files the old tree used, and files this spill wrote and already merged
        // away (a list spilled into an internal node that then spilled itself).
        let dead: BTreeSet<u64> = old_live
            .into_iter()
            .chain(created)
            .filter(|id| !new_live.contains(id))
            .collect();
        // Removal is best effort: the new tree is durable, so a file left behind here is an
        // orphan that the next open removes, never something a reader could miss.
        for id in dead {
            let _ = io::remove_file(&self.dir.join(list_format::file_name(id)));
        }
        for n in std::mem::take(&mut w.old_logs) {
            let _ = io::remove_file(&self.dir.join(wal::file_name(n)));
        }
        Ok(())
    }
}
