//! Appending to a log.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use super::format::{self, Kind, FRAME_LEN, HEADER_LEN};
use super::prefill::{self, Prefill};
use crate::error::Result;
use crate::files::log_name;
use crate::io::{self, AppendFile, PendingSync, SyncPoint};
use crate::stats::Counters;

/// Unsynced records up to this size go through the map: the `write` it saves is most of a
/// small record's cost, while a big one pays more for the map's page faults than it saves
/// (unsynced batches of 1000 16-byte records loaded 0.90–0.94× as fast through it).
const MAP_AT_MOST: usize = 4096;

pub struct LogWriter {
    file: AppendFile,
    number: u64,
    /// Bytes known to be on the device: the length at the last successful sync. Each record
    /// says how far behind it this was (see `format`).
    durable: u64,
    /// Whether some record may not be vouched for by a later one (see [`seal`](Self::seal)).
    unsealed: bool,
    in_doubt: bool,
    /// Zeros kept ready past the end, from the first synced write on (see `prefill`).
    prefill: Option<Prefill>,
    /// No zeros are kept: prefill is turned off (`Options::log_prefill`), or the log is linked
    /// or sealed.
    prefill_off: bool,
    /// The file's blocks up to here were written before (a recycled log's): zeros ahead go
    /// only past them.
    written: u64,
    counters: Arc<Counters>,
}

impl LogWriter {
    /// A new, empty log. If it cannot be written whole (a full disk, say), nothing of it is
    /// left behind.
    pub fn create(dir: &Path, number: u64, counters: Arc<Counters>) -> Result<LogWriter> {
        let path = dir.join(log_name(number));
        let mut file = AppendFile::create(&path, counters.clone())?;
        let written = file.append(&format::header()).and_then(|()| file.flush());
        if let Err(e) = written {
            drop(file);
            let _ = io::remove_file(&path);
            return Err(e);
        }
        counters.wal_bytes.fetch_add(HEADER_LEN as u64, Relaxed);
        // Records go in through a map; the header went by `write`, so that a log created and
        // never written stays a header alone (see `start_prefill`).
        Ok(Self::new(file, number, 0, false, 0, counters))
    }

    /// A writer appending to `file`, log `number`, durable through `durable` bytes, with
    /// records through the map, no zeros ahead yet, and blocks written through `written`.
    fn new(
        file: AppendFile,
        number: u64,
        durable: u64,
        unsealed: bool,
        written: u64,
        counters: Arc<Counters>,
    ) -> LogWriter {
        LogWriter {
            file: file.mapped(true),
            number,
            durable,
            unsealed,
            in_doubt: false,
            prefill: None,
            prefill_off: false,
            written,
            counters,
        }
    }

    /// Continue log `number` after its first `valid_len` bytes, as recovery measured them:
    /// anything past them is cut off, and the rest made durable. `sealed`: whether it ends in
    /// a seal. Reusing the newest log at open keeps a store that is opened often from
    /// collecting one log per open until its next spill.
    pub fn reopen(
        dir: &Path,
        number: u64,
        valid_len: u64,
        sealed: bool,
        counters: Arc<Counters>,
    ) -> Result<LogWriter> {
        debug_assert!(valid_len >= HEADER_LEN as u64);
        let mut file =
            AppendFile::reopen(&dir.join(log_name(number)), valid_len, counters.clone())?;
        file.sync()?;
        Ok(Self::new(file, number, valid_len, !sealed, 0, counters))
    }

    /// Start log `number`, whose header never reached the disk (nor anything after it),
    /// afresh: a new header, synced. The number stays, as the manifest or a link may name it.
    pub fn restart(dir: &Path, number: u64, counters: Arc<Counters>) -> Result<LogWriter> {
        let mut file = AppendFile::reopen(&dir.join(log_name(number)), 0, counters.clone())?;
        file.append(&format::header())?;
        file.sync()?;
        counters.wal_bytes.fetch_add(HEADER_LEN as u64, Relaxed);
        Ok(Self::new(
            file,
            number,
            HEADER_LEN as u64,
            false,
            0,
            counters,
        ))
    }

    /// Start log `number` in the file of a retired log, `free` (see `free_logs`), which holds a
    /// header of this version: records are written over the old ones from the start, and the
    /// blocks those took need no zeros ahead (see `prefill`). Past the new records, recovery
    /// reads the old ones as another log's (see `format`). The file takes the log's name at
    /// once; the caller syncs the folder before a write in it is acknowledged.
    pub fn recycle(
        dir: &Path,
        free: &Path,
        number: u64,
        counters: Arc<Counters>,
    ) -> Result<LogWriter> {
        let path = dir.join(log_name(number));
        io::rename_file(free, &path)?;
        let file = AppendFile::overwrite(&path, HEADER_LEN as u64, counters.clone())?;
        Counters::bump(&counters.logs_recycled);
        let written = file.size_on_disk();
        // The header is on the device, but a record's claim to it would say this log was
        // synced, and so every earlier one (see `recovery`): durable from 0, until the first
        // sync.
        Ok(Self::new(file, number, 0, false, written, counters))
    }

    /// Keep zeros ahead of the end once the log takes a synced write (see `prefill`), or not.
    pub fn prefill(mut self, on: bool) -> LogWriter {
        self.prefill_off = !on;
        self
    }

    /// Copy unsynced records in through a map of the file (see `add_unsynced_record`), or
    /// append every record by `write`.
    pub fn map_appends(mut self, on: bool) -> LogWriter {
        self.file = self.file.mapped(on);
        self
    }

    pub fn number(&self) -> u64 {
        self.number
    }

    /// Append one record and hand it to the OS: from here it survives a process crash.
    ///
    /// If the append fails (a full disk, say), whatever part of the record reached the file is
    /// cut off again, so the log stays whole and later appends can succeed; only if that cut
    /// fails too is the log left in doubt ([`is_in_doubt`](Self::is_in_doubt)).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.append(Kind::Writes, payload, false)
    }

    /// [`add_record`](Self::add_record) for a record no fsync follows at once: it is copied
    /// into the log through a map of the file, with no system call (`AppendFile::mapped`).
    /// A record about to be synced goes by `write` instead: an fdatasync of pages written
    /// through a map must write-protect them again, and the next copy into the last page
    /// faults; synced batches of 1000 ran 0.78–0.89× as fast so.
    pub fn add_unsynced_record(&mut self, payload: &[u8]) -> Result<()> {
        self.append(Kind::Writes, payload, payload.len() <= MAP_AT_MOST)
    }

    /// End this log with a link to log `next`, where writes go on: from then on recovery
    /// knows that `next` must exist. The writer adds nothing after it.
    ///
    /// The blocks written past the link — zeros ahead, a recycled file's old records — stay,
    /// for the log that is written over this file once it is retired (see `free_logs`): it
    /// then needs zeros only past them. Space set aside and never written goes.
    pub fn link(&mut self, next: u64) -> Result<()> {
        self.append(Kind::Link, &next.to_le_bytes(), false)?;
        let zeroed = self.prefill.as_ref().map_or(0, Prefill::zeroed_to);
        self.cut_tail(zeroed.max(self.written));
        Ok(())
    }

    /// Once nothing more is appended: no more zeros ahead of the end, and the file cut back
    /// to its records, or to `keep` bytes if more (blocks written past them), so that no space
    /// set aside by the map stays. Best effort: recovery reads what lies past a log's last
    /// record as no record of it.
    fn cut_tail(&mut self, keep: u64) {
        self.prefill_off = true;
        self.prefill = None; // its thread joined: no zeros land past the cut
        let _ = self.file.trim_to(keep.max(self.file.len()));
    }

    /// From the first sync of a record that came soon after the last (`since`: the bytes
    /// appended in between, below [`prefill::SYNCED_OFTEN`]) on, keep zeros ready past the
    /// end. A log synced rarely (`appendfsync everysec`: a sync per many megabytes) gains
    /// nothing from them, and would write everything twice. (Not for a sync of the header
    /// alone: a new store's first log must hold nothing else until its manifest exists, or an
    /// interrupted creation would leave a log that is not plainly empty.)
    fn start_prefill(&mut self, since: u64) {
        if self.prefill.is_none()
            && !self.prefill_off
            && since < prefill::SYNCED_OFTEN
            && self.file.len() > HEADER_LEN as u64
        {
            self.prefill = Prefill::start(
                self.file.handle(),
                self.file.path().to_owned(),
                self.file.len(),
                self.written,
                self.counters.clone(),
            );
        }
    }

    fn append(&mut self, kind: Kind, payload: &[u8], through_map: bool) -> Result<()> {
        let start = self.file.len();
        let frame = format::frame(self.number, kind, payload, start - self.durable);
        if let Some(p) = &self.prefill {
            p.reserve(start + (FRAME_LEN + payload.len()) as u64);
        }
        let appended = if through_map {
            self.file
                .append_through_map(&frame)
                .and_then(|()| self.file.append_through_map(payload))
        } else {
            self.file
                .append(&frame)
                .and_then(|()| self.file.append(payload))
                .and_then(|()| self.file.flush())
        };
        if let Err(e) = appended {
            // The cut takes the zeros past it too; they are started again at the next sync.
            self.prefill = None;
            self.written = self.written.min(start);
            if self.file.cut_to(start).is_err() {
                self.in_doubt = true;
            }
            return Err(e);
        }
        self.counters
            .wal_bytes
            .fetch_add((FRAME_LEN + payload.len()) as u64, Relaxed);
        self.unsealed = kind == Kind::Writes;
        Ok(())
    }

    /// Where the records written so far end.
    pub fn end(&self) -> u64 {
        self.file.len()
    }

    /// At a clean close: sync, then add an empty record that vouches for every byte before
    /// it, and sync that. Otherwise nothing would vouch for the records since the last sync
    /// but one, and damage to them at rest would be taken for a power loss (their records
    /// dropped, synced ones too) instead of reported as corruption. Only a log that a crash
    /// ended keeps such a tail. Nothing is added when the log already ends in a seal.
    pub fn seal(&mut self) -> Result<()> {
        if !self.unsealed {
            self.cut_tail(0);
            return Ok(());
        }
        self.sync()?;
        self.append(Kind::Seal, &[], false)?;
        self.cut_tail(0);
        self.sync()
    }

    /// Whether a failed append could not be taken back: the file may end in part of a record.
    pub fn is_in_doubt(&self) -> bool {
        self.in_doubt
    }

    /// fdatasync: everything added so far survives power loss. The longest one is kept: a
    /// slow write is then easy to tell from a slow disk.
    ///
    /// Callers sync a log only once every earlier log is durable (recovery relies on it: see
    /// `recovery`).
    pub fn sync(&mut self) -> Result<()> {
        let started = std::time::Instant::now();
        self.file.sync()?;
        let since = self.file.len() - self.durable;
        self.durable = self.file.len();
        let micros = started.elapsed().as_micros() as u64;
        self.counters.max_log_sync_micros.fetch_max(micros, Relaxed);
        self.start_prefill(since);
        Ok(())
    }

    /// Stop writing to this log; it still has to be synced (see [`PendingSync`]).
    /// What [`sync`](Self::sync) would make durable, for a thread that fsyncs without holding
    /// the writer; [`synced`](Self::synced) records it once done.
    pub fn sync_point(&mut self) -> Result<SyncPoint> {
        self.file.sync_point()
    }

    /// `point`, taken from this log, was synced: records from here on may vouch for it.
    pub fn synced(&mut self, point: &SyncPoint) {
        let since = point.len().saturating_sub(self.durable);
        self.durable = self.durable.max(point.len());
        self.start_prefill(since);
    }

    /// Whether an append of `len` bytes now would only overwrite zeros already synced (for
    /// tests).
    #[cfg(test)]
    pub fn would_overwrite(&self, len: u64) -> bool {
        let end = self.file.len();
        self.prefill.as_ref().is_some_and(|p| {
            p.wait_ahead();
            p.covers(end, end + len)
        })
    }

    pub fn retire(self) -> Result<PendingSync> {
        self.file.into_pending_sync()
    }
}
