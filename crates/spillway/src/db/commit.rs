//! The write path: log the group, apply it to the root buffer, and when the buffer is full,
//! freeze it and hand it to a spill (WB-tree §3.2.1, §3.6; TurtleKV §4.1's pipelined update
//! path). Writers wait for a spill only when the buffer fills again before the previous spill
//! is done: back-pressure that bounds memory to two buffers.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use super::spill::{is_lack_of_space, PutOff, Spill, SpillJob};
use super::writer::WriterState;
use super::{read, write, Inner, Part, Version};
use crate::buffer::Buffer;
use crate::error::{Error, IoContext, Result};
use crate::io;
use crate::record::Op;
use crate::stats::Counters;
use crate::util::sync::lock;
use crate::wal::LogWriter;
use crate::write_queue::{Group, Refused};

/// Synced groups of at least this many records are applied to the buffer while their fsync
/// runs (see `wal::Syncer`). Below it, the hand-off's two wake-ups cost more than the overlap
/// saves: with the overlap, synced batches of 16 B records ran at 0.81–0.92× the rate
/// without it at 16–256 records a batch, 0.85–1.02× at 512, 1.19–1.22× at 1000 and
/// 1.16–1.17× at 2000 (BENCHMARKS.md).
const OVERLAP_RECORDS: usize = 768;

impl Inner {
    /// Commit one group (called by the group-commit leader only). A batch of the group may
    /// be refused alone — a transaction whose reads were written since its snapshot, a
    /// batch naming a dropped keyspace — and the rest committed; the refused are returned.
    pub(super) fn commit_group(self: &Arc<Self>, group: &Group) -> Result<Refused> {
        let mut w = self.writer.lock();
        self.check_writable(&mut w)?;
        let writes = group.batches.iter().any(|b| !b.is_empty());
        if let Some(wait) = self.pace(&mut w).filter(|_| writes) {
            // Under the writer's lock: the writers queued behind slow down with this one. A
            // group of `Db::sync` calls alone adds nothing to the buffer, and is not paced.
            std::thread::sleep(wait);
            self.counters.add_pace(wait);
        }
        if self.has_put_off() && self.buffered(&w, &self.version()) >= self.budget.buffer_limit() {
            // The last freeze or spill failed for lack of space and the buffer has filled
            // again: take no more until it goes through (back-pressure on a full disk).
            self.freeze_or_keep(&mut w, self.spill_mode(), Waiter::Write)?;
        }
        let version = self.version();
        let (refused, seqs) = self.admit(&mut w, &version, group);
        // The admitted batches (all of them, but for a refused transaction).
        let batches = || {
            let refused = &refused;
            group
                .batches
                .iter()
                .enumerate()
                .filter(move |(i, _)| !refused.iter().any(|(r, _)| r == i))
                .map(|(_, b)| b)
        };
        // Merge operands and changes of expiry take the time they are written: the group's,
        // logged at its start so that a replay stamps them alike (see `batch`).
        let now = if batches().any(|b| b.is_timed()) {
            w.stamp(self.opts.now())
        } else {
            0
        };
        // Built in the writer's scratch buffer, so that a lone writer's merge allocates
        // nothing either.
        let mut scratch = std::mem::take(&mut w.scratch);
        let payload: &[u8] = match (refused.is_empty(), &*group.batches) {
            (true, [one]) if now == 0 => one.payload(),
            _ => {
                scratch.clear();
                if now != 0 {
                    crate::batch::put_time_mark(&mut scratch, now);
                }
                for b in batches() {
                    scratch.extend_from_slice(b.payload());
                }
                &scratch
            }
        };
        let empty = payload.is_empty();
        // A failed append is taken back (see `add_record`): the group is not written, and
        // later writes may succeed (once a full disk has room again). A failed fsync, or an
        // append that could not be taken back, leaves the log's tail in doubt (after a failed
        // fsync the OS may have dropped the dirty pages): no later write may be acknowledged
        // on top of it, and reopening recovers exactly what the log holds.
        // A group of `Db::sync` calls alone has nothing to append, only the fsync.
        if !empty {
            let added = if group.sync {
                w.log().add_record(payload)
            } else {
                w.log().add_unsynced_record(payload)
            };
            if let Err(e) = added {
                if w.log().is_in_doubt() {
                    w.poisoned = Some(e.clone());
                }
                return Err(e);
            }
        }
        /// A scratch buffer that grew past this (a big group) is not kept.
        const KEEP: usize = 1 << 20;
        if scratch.capacity() <= KEEP {
            w.scratch = scratch;
        }
        let records: usize = batches().map(|b| b.len()).sum();
        let synced = if group.sync {
            self.sync_group(&mut w, records)
        } else {
            Ok(false)
        };
        let overlap = match synced {
            Ok(overlap) => overlap,
            Err(e) => {
                w.poisoned = Some(e.clone());
                return Err(e);
            }
        };
        if empty {
            return Ok(refused);
        }

        // Readers wait only for this loop: the group becomes visible all at once (once
        // durable, if its fsync is still in flight).
        let marking = self.marking.load(std::sync::atomic::Ordering::Relaxed);
        let limit = self.budget.buffer_limit();
        // (keyspace, its buffer's memory before the group), kept by the writer to allocate
        // nothing per write.
        let mut touched = std::mem::take(&mut w.touched);
        touched.clear();
        let mut deep = Vec::new();
        {
            // Batches hold sections of keyspaces: one buffer lock per section.
            let mut current: Option<(u32, std::sync::RwLockWriteGuard<'_, Buffer>)> = None;
            for batch in batches() {
                for (ks, r) in batch.iter() {
                    if current.as_ref().map(|c| c.0) != Some(ks) {
                        current = None;
                        // Admitted batches name live keyspaces, and only the writer drops one.
                        let Some(part) = version.part(ks) else {
                            continue;
                        };
                        let mut mem = write(&part.mem);
                        if !touched.iter().any(|t| t.0 == ks) {
                            touched.push((ks, mem.memory()));
                            if overlap {
                                mem.hold();
                            }
                            if marking {
                                mem.mark(seqs.start);
                            }
                        }
                        current = Some((ks, mem));
                    }
                    if let Some((_, mem)) = current.as_mut() {
                        mem.put(r.key, r.op, now);
                    }
                }
            }
        }
        for &(ks, before) in &touched {
            let Some(part) = version.part(ks) else {
                continue;
            };
            let mut mem = write(&part.mem);
            if ks == 0 {
                mem.size_for(limit);
            } else {
                w.named_buffered = (w.named_buffered + mem.memory()).saturating_sub(before);
            }
            deep.extend(mem.take_deep().into_iter().map(|key| (ks, key)));
        }
        if overlap {
            let (point, result) = w.syncer.as_ref().expect("started").finish();
            if let Err(e) = result {
                // The group stays held: no reader ever sees it, and no write follows it.
                w.poisoned = Some(e.clone());
                return Err(e);
            }
            w.log().synced(&point);
            for &(ks, _) in &touched {
                if let Some(part) = version.part(ks) {
                    write(&part.mem).release();
                }
            }
        }
        self.visible
            .store(seqs.end - 1, std::sync::atomic::Ordering::Release);
        let c = &self.counters;
        Counters::bump(&c.write_groups);
        if group.sync {
            Counters::bump(&c.synced_groups);
        }
        c.user_bytes
            .fetch_add(batches().map(|b| b.user_bytes()).sum(), Relaxed);
        c.user_records.fetch_add(records as u64, Relaxed);
        c.merges
            .fetch_add(batches().map(|b| b.merges() as u64).sum(), Relaxed);
        w.touched = touched;
        for (id, key) in deep {
            if let Some(part) = version.part(id) {
                self.fold_stacked(&version, part, &key);
            }
        }
        let buffered = self.buffered(&w, &version);
        if self.must_freeze(&w, buffered, limit) {
            // The group is logged, so it is acknowledged whatever happens to the spill.
            let _ = self.freeze_or_keep(&mut w, self.spill_mode(), Waiter::Write);
        }
        Ok(refused)
    }

    /// Whether the buffers, holding `buffered` bytes, are to be frozen now (waiting for the
    /// running spill, if any). Without a spill running, at `limit`. While one moves its frozen
    /// buffers into the tree, at `limit` or where both together would reach twice it. Once it
    /// has published them, what it does is upkeep and sweeping (see `tree::upkeep`): the
    /// frozen buffers' memory is free, and the buffer takes it — up to twice the limit —
    /// rather than wait, while the spill is asked to stop after the node it is at.
    fn must_freeze(&self, w: &WriterState, buffered: usize, limit: usize) -> bool {
        let running = w.spilling.as_ref().is_some_and(|h| !h.is_finished());
        if !running {
            return buffered >= limit;
        }
        let twice = limit.saturating_mul(2);
        if self.spills.published.load(Relaxed) {
            if buffered >= limit {
                self.spills.freeze_waits.store(true, Relaxed);
            }
            buffered >= twice
        } else {
            buffered >= limit.min(twice.saturating_sub(w.frozen_bytes))
        }
    }

    /// How long the next group is to wait for the running spill (see `pacing`), by the room
    /// `must_freeze` leaves the buffer.
    fn pace(&self, w: &mut WriterState) -> Option<std::time::Duration> {
        let running = w.spilling.as_ref().is_some_and(|h| !h.is_finished());
        if !running || !self.opts.pace_writes {
            return None;
        }
        let limit = self.budget.buffer_limit();
        let twice = limit.saturating_mul(2);
        let published = self.spills.published.load(Relaxed);
        let full = if published {
            twice
        } else {
            limit.min(twice.saturating_sub(w.frozen_bytes))
        };
        let room = full.saturating_sub(self.buffered(w, &self.version()));
        w.pace.wait(&self.spills.times, room, full, published)
    }

    /// Decide which batches of `group` commit, numbering each admitted one (the numbers
    /// returned), and record what they write for later transactions' checks: a batch is
    /// refused if it names a keyspace that is gone, or if it is a transaction's and something
    /// it read was written after its snapshot — by an earlier commit, or an earlier batch of
    /// this group.
    fn admit(
        &self,
        w: &mut WriterState,
        version: &Version,
        group: &Group,
    ) -> (Refused, std::ops::Range<u64>) {
        let mut refused = Refused::new();
        let first = w.seq + 1;
        for (i, batch) in group.batches.iter().enumerate() {
            if let Some(&gone) = batch
                .keyspaces()
                .iter()
                .find(|&&k| version.part(k).is_none())
            {
                refused.push((i, self.dropped(gone)));
                continue;
            }
            let reads = group.reads.iter().find(|(at, _)| *at == i);
            if let Some((_, reads)) = reads {
                if !w.conflicts.allows(reads) {
                    refused.push((i, Error::Conflict));
                    continue;
                }
            }
            w.seq += 1;
            if w.conflicts.is_enabled() {
                let mut section = (u32::MAX, false); // the keyspace, and whether it is ordered
                for (ks, r) in batch.iter() {
                    if section.0 != ks {
                        let order = version.part(ks).map(|p| p.def.order);
                        section = (ks, order == Some(crate::order::KeyOrder::Ordered));
                    }
                    if let Op::DeleteRange { .. } = r.op {
                        w.conflicts.reset(w.seq, ks); // every read of the keyspace conflicts
                    } else {
                        w.conflicts.wrote(w.seq, ks, section.1, r.key);
                    }
                }
            }
        }
        if w.conflicts.is_enabled() {
            let oldest = self.oldest_snapshot();
            w.conflicts.forget(oldest);
        }
        (refused, first..w.seq + 1)
    }

    /// Make the log durable through the group just appended: here, or — for a group big
    /// enough that applying it takes longer than a hand-off — on the log's sync thread while
    /// the caller applies it (`true`: the caller must `finish` it before acknowledging).
    fn sync_group(&self, w: &mut WriterState, records: usize) -> Result<bool> {
        if let Some(retired) = w.retired_log.take() {
            retired.sync()?; // usually done already, by the spill
        }
        if records >= OVERLAP_RECORDS && w.syncer(&self.counters).is_some() {
            // Without a second handle (no descriptor left), sync here.
            if let Ok(point) = w.log().sync_point() {
                w.syncer.as_ref().expect("started").begin(point);
                return Ok(true);
            }
        }
        w.log().sync()?;
        Ok(false)
    }

    /// Fold a key whose operands stacked up in the root buffer with everything below, and
    /// put the value on top (only the writer, which holds the writer's lock, writes the
    /// buffer). Not logged, as a read's write-back: a replay folds the logged operands to the
    /// same value. If the fold fails, the operands stay as they are.
    fn fold_stacked(&self, version: &Arc<Version>, part: &Part, key: &[u8]) {
        let now = super::ReadPoint::now(version.clone());
        if let Ok(found) = self.fold_at(&now, part, key) {
            // What the stack folds into (a value that has expired included: reads hide it).
            let op = match &found {
                Some((value, until)) => Op::put_until(value, *until),
                None => Op::Delete,
            };
            write(&part.mem).put(key, op, 0);
            Counters::bump(&self.counters.merge_write_backs);
        }
    }

    /// The bytes the root buffers hold: the default keyspace's buffer measured, the named
    /// keyspaces' as the writer counted them (measuring a thousand buffers per write would
    /// cost more than the write).
    pub(super) fn buffered(&self, w: &WriterState, version: &Version) -> usize {
        read(&version.default_part().mem).memory() + w.named_buffered
    }

    fn spill_mode(&self) -> Spill {
        if self.opts.background_spills {
            Spill::Background
        } else {
            Spill::Inline
        }
    }

    /// How a spill that must be done before the caller goes on runs: with its upkeep where
    /// spills run on the writer's thread anyway, without where background spills will see
    /// to it (see `Spill::BufferOnly`).
    pub(super) fn spill_now(&self) -> Spill {
        if self.opts.background_spills {
            Spill::BufferOnly
        } else {
            Spill::Inline
        }
    }

    /// `freeze`, and decide what its failure means (see `stop_writes_unless_kept`): writes go
    /// on after a spill kept for lack of space, refused only while the buffer is full.
    pub(super) fn freeze_or_keep(
        self: &Arc<Self>,
        w: &mut WriterState,
        spill: Spill,
        waiter: Waiter,
    ) -> Result<()> {
        let frozen = self.freeze(w, spill, waiter);
        if let Err(e) = &frozen {
            self.stop_writes_unless_kept(w, e);
        }
        frozen
    }

    /// After a failed freeze or spill: stop writes until reopen, unless it was put off to
    /// run again (it failed for lack of space, and nothing else is in doubt).
    fn stop_writes_unless_kept(&self, w: &mut WriterState, e: &Error) {
        if !self.has_put_off() {
            w.poisoned = Some(e.clone());
        }
    }

    /// Whether a freeze or spill waits for room to run again.
    pub(super) fn has_put_off(&self) -> bool {
        lock(&self.spills.put_off).is_some()
    }

    /// Spill whatever the root buffer holds and wait until it is durable in the tree.
    pub(super) fn flush(self: &Arc<Self>) -> Result<()> {
        let mut w = self.writer.lock();
        self.check_writable(&mut w)?;
        let flushed = self.wait_for_spill(&mut w, Waiter::Caller).and_then(|()| {
            if self.version().parts.iter().all(|p| read(&p.mem).is_empty()) {
                return Ok(());
            }
            self.freeze(&mut w, self.spill_now(), Waiter::Caller)
        });
        if let Err(e) = &flushed {
            self.stop_writes_unless_kept(&mut w, e);
        }
        flushed
    }

    /// Writes go on until `close`, or until a failure leaves the log or the tree in doubt.
    /// [`Db::sync`](super::Db::sync): fsync the log as it is now, holding the writer only to
    /// take what to sync and to record it synced.
    pub(super) fn sync_log(&self) -> Result<()> {
        let (retired, log, point) = {
            let mut w = self.writer.lock();
            self.check_writable(&mut w)?;
            let point = w.log().sync_point()?;
            (w.retired_log.clone(), w.log().number(), point)
        };
        // A write in this log may be acknowledged only once the logs before it are durable
        // too (or a power failure could keep it and lose older ones): the retired log first.
        let synced = retired
            .as_ref()
            .map_or(Ok(()), |r| r.sync())
            .and_then(|()| point.sync());
        let mut w = self.writer.lock();
        if let Err(e) = synced {
            w.poisoned.get_or_insert(e.clone());
            return Err(e);
        }
        if let (Some(r), Some(now)) = (&retired, &w.retired_log) {
            if Arc::ptr_eq(r, now) {
                w.retired_log = None;
            }
        }
        if let Some(current) = w.log.as_mut().filter(|l| l.number() == log) {
            current.synced(&point);
        }
        Ok(())
    }

    pub(super) fn check_writable(&self, w: &mut WriterState) -> Result<()> {
        if w.closed {
            return Err(Error::Closed);
        }
        if w.log.is_none() {
            return Err(Error::ReadOnly);
        }
        if w.poisoned.is_none() {
            w.poisoned = lock(&self.spills.error).clone();
        }
        match &w.poisoned {
            Some(e) => Err(super::read_only_after(e)),
            None => Ok(()),
        }
    }

    /// Freeze the full buffer behind a fresh one and a fresh log, and spill it.
    ///
    /// Order matters for crashes. The retired log is synced before a synced write in the new
    /// one is acknowledged (by the spill, or by that write): otherwise a power failure could
    /// keep synced writes in the new log while losing older unsynced ones, and recovery would
    /// no longer see a prefix of what was written. Syncing it here instead would stall the
    /// writer on up to a buffer's worth of unsynced log. The new log's folder entry is synced
    /// before any write in it is acknowledged, and the old log ends in a link to it, so that
    /// recovery knows it must exist.
    ///
    /// Without room for the new log or the link, nothing changes: the freeze is put off (see
    /// `PutOff`) and the full buffer goes on taking reads.
    pub(super) fn freeze(
        self: &Arc<Self>,
        w: &mut WriterState,
        spill: Spill,
        waiter: Waiter,
    ) -> Result<()> {
        self.wait_for_spill(w, waiter)?;
        if let Some(retired) = w.retired_log.take() {
            retired.sync()?; // the one before, if no synced write has come since
        }
        let log = match self.start_next_log(w) {
            Ok(log) => log,
            Err(e) => {
                if is_lack_of_space(&e) && !w.log().is_in_doubt() {
                    *lock(&self.spills.put_off) = Some(PutOff::Freeze);
                }
                return Err(e);
            }
        };
        io::sync_dir(&self.dir)?;
        let log_number = log.number();
        let retired = std::mem::replace(w.log(), log);
        let mut logs = std::mem::take(&mut w.older_logs);
        logs.push(retired.number());
        let retired = Arc::new(retired.retire()?);
        w.retired_log = Some(retired.clone());

        let frozen_bytes = self.buffered(w, &self.version());
        // Size the next buffer by the lists as they stand (before the lock readers wait on).
        self.budget
            .plan(&self.opts, self.version().metadata_memory());
        let frozen = {
            let mut current = write(&self.current);
            let limit = self.budget.buffer_limit();
            let parts = current
                .parts
                .iter()
                .map(|p| {
                    assert!(p.frozen.is_none(), "one frozen buffer at a time");
                    let mem = read(&p.mem);
                    if mem.is_empty() {
                        return p.clone(); // nothing to spill: the buffer stays
                    }
                    // The next buffer will likely hold as many keys as this one did; the
                    // default keyspace's may take the whole limit, and a named one what it
                    // took this time (a thousand keyspaces reserve no thousand buffers).
                    let bytes = if p.def.id == 0 { limit } else { mem.memory() };
                    let mut next = Buffer::with_capacity(
                        p.def.order,
                        p.def.operator.clone(),
                        mem.len(),
                        bytes,
                    );
                    if mem.stamps_operands() {
                        next.stamp_operands();
                    }
                    Part {
                        def: p.def.clone(),
                        mem: Arc::new(RwLock::new(next)),
                        frozen: Some(p.mem.clone()),
                        tree: p.tree.clone(),
                    }
                })
                .collect();
            *current = Arc::new(Version { parts });
            current.clone()
        };
        w.frozen_bytes = frozen_bytes;
        w.pace = super::pacing::Pace::starting();
        w.named_buffered = 0;
        let job = SpillJob {
            frozen_at: w.stamp(self.opts.now()),
            version: frozen,
            next_log: log_number,
            logs,
            retired_log: retired,
        };
        match spill {
            Spill::Inline => self.run_spill(job, true),
            Spill::BufferOnly => self.run_spill(job, false),
            Spill::Background => {
                let inner = self.clone();
                let handle = std::thread::Builder::new()
                    .name("spillway-spill".into())
                    .spawn(move || inner.spill_in_background(job))
                    .context(|| "starting a spill thread".to_string())?;
                w.spilling = Some(handle);
                Ok(())
            }
        }
    }

    /// Create the log writes go on in after a freeze — over a retired log's file if one is
    /// free (see `wal::free_logs`) — and end the current one with a link to it. If either
    /// fails, neither is left: the new file is removed, a partial link cut off.
    fn start_next_log(&self, w: &mut WriterState) -> Result<LogWriter> {
        let number = self.next_file.fetch_add(1, Relaxed);
        let recycled = self.free_logs.take().and_then(|free| {
            let log = LogWriter::recycle(&self.dir, &free, number, self.counters.clone());
            // A free log that cannot be reused goes: a new file takes its place.
            log.inspect_err(|_| {
                let _ = io::remove_file(&free);
                let _ = io::remove_file(&crate::files::log_path(&self.dir, number));
            })
            .ok()
        });
        let log = match recycled {
            Some(log) => log,
            None => LogWriter::create(&self.dir, number, self.counters.clone())?,
        };
        let log = log
            .prefill(self.opts.log_prefill)
            .map_appends(self.opts.mmap_log);
        if let Err(e) = w.log().link(number) {
            drop(log);
            let _ = io::remove_file(&crate::files::log_path(&self.dir, number));
            return Err(e);
        }
        Ok(log)
    }

    /// Wait until no spill runs, then report any failure a spill had.
    pub(super) fn wait_for_spill(&self, w: &mut WriterState, waiter: Waiter) -> Result<()> {
        if let Some(handle) = w.spilling.take() {
            self.spills.freeze_waits.store(true, Relaxed);
            let stalled = !handle.is_finished() && matches!(waiter, Waiter::Write);
            let behind_upkeep = self.spills.published.load(Relaxed);
            let started = Instant::now();
            // A panic cannot escape: the spill thread turns it into `spill_error`.
            let _ = handle.join();
            if stalled {
                self.counters.add_stall(started.elapsed(), behind_upkeep);
            }
        }
        if let Some(e) = lock(&self.spills.error).clone() {
            return Err(e);
        }
        // A spill that failed for lack of space runs again here, on this thread; if it fails
        // again it is kept for the next try. A freeze put off is what the caller is about to
        // try (or, at `close`, has no more reason to).
        let retry = lock(&self.spills.put_off).take();
        match retry {
            Some(PutOff::Spill(job)) => self.run_spill(job, false),
            Some(PutOff::Freeze) | None => Ok(()),
        }
    }
}

/// Who waits for a running spill: a write whose buffer is full (back-pressure: the wait is a
/// stall, `Stats::stalls`), or a caller whose operation waits by its nature — a flush, a
/// close, an open's recovery, a change of keyspaces.
#[derive(Clone, Copy, Debug)]
pub(super) enum Waiter {
    Write,
    Caller,
}
