//! Two baselines that are not engines: each batch framed as a write-ahead log frames it and
//! written to one file, nothing else. They show what the device alone costs for the bytes a
//! durable write must land, measured in the same run as the engines. Issue 16 asks a durable
//! one-record write to cost at most 1.1× "the raw append+fdatasync latency of the same bytes",
//! and synced batches to reach 70% of the fsync ceiling; these are those denominators.
//!
//! - `raw-append`: one `write(2)` per batch to a file opened `O_APPEND`, which grows with
//!   every write; `fdatasync` when the write is synced. That fdatasync also flushes the new
//!   file size (and on ext4 the allocation of new blocks): what a log that grows pays.
//! - `raw-overwrite`: the same bytes `pwrite(2)` into a file zero-filled ahead of the writes,
//!   [`CHUNK`] at a time, so that a synced write overwrites blocks already allocated and
//!   written, and its fdatasync flushes data alone: what a preallocated or recycled log pays.
//!   The chunks are written with real zeros, not `fallocate`: fallocate leaves unwritten
//!   extents, whose conversion on the first write into them costs a journal commit, the very
//!   cost this baseline leaves out.
//!
//! Nothing is buffered in user space from one call to the next: an unsynced write still goes
//! to the OS on its call, as a log's unsynced write does (what survives a process crash). One
//! lock serializes writes, fdatasync included, so there is no group commit: with several
//! writers this is a log that makes each write durable on its own.
//!
//! Frame layout (little-endian; Spillway's own log frames are also 16 bytes, see its
//! `wal::format`):
//!
//! ```text
//! frame   crc32c(payload) u32 | payload len u32 | records u32 | crc32c(len ‖ records) u32
//!         | payload
//! payload (varint key_len | varint value_len | key | value)*
//! ```
//!
//! They keep no index: GETs, scans and increments (which need a read or a merge that a read
//! folds) are refused, and the driver does not run the phases that read on them (see
//! [`Engine::refuses_reads`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::counter::CounterBatch;
use crate::engine::{Engine, RecordBatch};
use crate::scan::ScanResult;

/// The file each baseline writes, in the engine's folder.
const FILE_NAME: &str = "raw.log";

/// Bytes of a frame's header.
pub const FRAME_HEADER: usize = 16;

/// `raw-overwrite` zero-fills this much ahead of the writes: one chunk at open, the next
/// (inline, in the write that needs it) whenever a write would pass the end.
pub const CHUNK: u64 = 64 << 20;

/// Preallocation writes its zeros a page at a time. The page cache sizes a folio by the write
/// that creates it: zeros written a MiB at a time leave 1 MiB folios behind (ext4 has large
/// folios since Linux 6.16), and a later 150-byte write into one dirties the whole MiB. On
/// Linux 6.18 each synced one-record write was then counted as 1 MiB written
/// (`/proc/self/io`), not 4 KiB, and its p50 was ~30% higher. A log's small appends make
/// page-sized folios; so must the baseline.
const ZERO_WRITE: usize = 4096;

/// Where a write lands.
enum Layout {
    /// At the end of a file opened `O_APPEND`, which grows.
    Append,
    /// At `pos`, in a file of `len` bytes zero-filled `chunk` bytes at a time.
    Overwrite { pos: u64, len: u64, chunk: u64 },
}

/// The file and what writing to it needs, behind the baseline's one lock.
struct Log {
    file: File,
    layout: Layout,
    /// The frame being written: reused, so that a write allocates nothing.
    frame: Vec<u8>,
}

/// One of the two baselines (see the module's doc).
pub struct RawLog {
    /// `raw-append` or `raw-overwrite`, for messages.
    name: &'static str,
    path: PathBuf,
    log: Mutex<Log>,
}

/// `raw-append` in `dir`: appends to `raw.log`, after whatever an earlier open left there.
pub fn open_append(dir: &Path) -> Result<Box<dyn Engine>, String> {
    Ok(Box::new(RawLog::append(dir)?))
}

/// `raw-overwrite` in `dir`, preallocating [`CHUNK`] at a time.
pub fn open_overwrite(dir: &Path) -> Result<Box<dyn Engine>, String> {
    Ok(Box::new(RawLog::overwrite(dir, CHUNK)?))
}

impl RawLog {
    pub fn append(dir: &Path) -> Result<RawLog, String> {
        let name = "raw-append";
        let path = dir.join(FILE_NAME);
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| format!("{name}: opening {}: {e}", path.display()))?;
        Ok(RawLog::new(name, path, file, Layout::Append))
    }

    /// `chunk` is the preallocation step ([`CHUNK`] in a run; tests take a small one). An
    /// existing file is reused as it is, its blocks already written, and written again from
    /// its start: a recycled log. (The baseline keeps no record of where its last write
    /// ended, and needs none: nothing reads what it wrote.)
    pub fn overwrite(dir: &Path, chunk: u64) -> Result<RawLog, String> {
        assert!(
            chunk > 0,
            "a preallocation step of 0 bytes never reaches a write"
        );
        let name = "raw-overwrite";
        let path = dir.join(FILE_NAME);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| format!("{name}: opening {}: {e}", path.display()))?;
        let mut len = file
            .metadata()
            .map_err(|e| format!("{name}: {}: {e}", path.display()))?
            .len();
        if len == 0 {
            zero_fill(&file, 0, chunk)
                .map_err(|e| format!("{name}: preallocating {}: {e}", path.display()))?;
            len = chunk;
        }
        let layout = Layout::Overwrite { pos: 0, len, chunk };
        Ok(RawLog::new(name, path, file, layout))
    }

    fn new(name: &'static str, path: PathBuf, file: File, layout: Layout) -> RawLog {
        RawLog {
            name,
            path,
            log: Mutex::new(Log {
                file,
                layout,
                frame: Vec::new(),
            }),
        }
    }

    fn no_index(&self) -> String {
        format!(
            "{} keeps no index: it only writes (a baseline for the device's cost)",
            self.name
        )
    }

    fn io_error(&self, what: &str, e: std::io::Error) -> String {
        format!("{}: {what} {}: {e}", self.name, self.path.display())
    }
}

impl Engine for RawLog {
    /// One frame, one system call (`write` or `pwrite`), then `fdatasync` if `sync`. A
    /// regular file's write takes all its bytes at once; `write_all` only loops on the
    /// short writes a full disk or a signal would cause.
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String> {
        let mut guard = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let log = &mut *guard;
        encode(batch, &mut log.frame).map_err(|e| format!("{}: {e}", self.name))?;
        match &mut log.layout {
            Layout::Append => log
                .file
                .write_all(&log.frame)
                .map_err(|e| self.io_error("appending to", e))?,
            Layout::Overwrite { pos, len, chunk } => {
                let end = *pos + log.frame.len() as u64;
                while end > *len {
                    // Inline, as a log that preallocates on its write path would: one write in
                    // every CHUNK of them pays for it.
                    zero_fill(&log.file, *len, *chunk)
                        .map_err(|e| self.io_error("preallocating", e))?;
                    *len += *chunk;
                }
                log.file
                    .write_all_at(&log.frame, *pos)
                    .map_err(|e| self.io_error("writing", e))?;
                *pos = end;
            }
        }
        if sync {
            log.file
                .sync_data()
                .map_err(|e| self.io_error("syncing", e))?;
        }
        Ok(())
    }

    /// Refused: a counter's increment reads the counter (or merges, which a read must fold),
    /// and these baselines keep nothing to read. The counter workloads are not run on them.
    fn increment(&self, _batch: &CounterBatch, _sync: bool) -> Result<(), String> {
        Err(format!(
            "{} keeps no counters: an increment needs a read or a merge (a baseline for the device's cost)",
            self.name
        ))
    }

    fn get(&self, _key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        Err(self.no_index())
    }

    fn scan(&self, _start: &[u8], _limit: usize) -> Result<ScanResult, String> {
        Err(self.no_index())
    }

    fn refuses_reads(&self) -> Option<String> {
        Some(self.no_index())
    }

    /// Makes the unsynced writes durable, as the engines' closes do.
    fn close(self: Box<Self>) -> Result<(), String> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.file
            .sync_data()
            .map_err(|e| self.io_error("syncing", e))
    }
}

/// Frame `batch` into `out` (replacing what it held): header, then each record.
fn encode(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    out.resize(FRAME_HEADER, 0);
    for (key, value) in batch.iter() {
        put_varint(out, key.len() as u64);
        put_varint(out, value.len() as u64);
        out.extend_from_slice(key);
        out.extend_from_slice(value);
    }
    let (header, payload) = out.split_at_mut(FRAME_HEADER);
    let len = u32::try_from(payload.len())
        .map_err(|_| format!("a batch of {} bytes does not fit a frame", payload.len()))?;
    let records = u32::try_from(batch.len()).expect("fewer records than bytes");
    header[0..4].copy_from_slice(&crc_fast::crc32_iscsi(payload).to_le_bytes());
    header[4..8].copy_from_slice(&len.to_le_bytes());
    header[8..12].copy_from_slice(&records.to_le_bytes());
    let header_crc = crc_fast::crc32_iscsi(&header[4..12]);
    header[12..16].copy_from_slice(&header_crc.to_le_bytes());
    Ok(())
}

/// LEB128: seven bits a byte, low first, the high bit set on all but the last.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Write `len` zero bytes at `from` and fdatasync them, so that later writes there overwrite
/// allocated, written blocks and the file's size no longer changes.
fn zero_fill(file: &File, from: u64, len: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; ZERO_WRITE.min(len as usize)];
    let mut at = from;
    while at < from + len {
        let n = zeros.len().min((from + len - at) as usize);
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch's records.
    type Records = Vec<(Vec<u8>, Vec<u8>)>;

    fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
        let mut v = 0u64;
        for (i, &b) in bytes.iter().enumerate().take(10) {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some((v, i + 1));
            }
        }
        None
    }

    /// The frames at the start of `bytes`, up to the first whose header or payload fails its
    /// check (zeros do: the crc32c of zeros is not zero), and the bytes they take.
    fn parse(bytes: &[u8]) -> (Vec<Records>, usize) {
        let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let (mut frames, mut at) = (Vec::new(), 0);
        while let Some(h) = bytes.get(at..at + FRAME_HEADER) {
            if crc_fast::crc32_iscsi(&h[4..12]) != u32_at(h, 12) {
                break;
            }
            let len = u32_at(h, 4) as usize;
            let Some(payload) = bytes.get(at + FRAME_HEADER..at + FRAME_HEADER + len) else {
                break;
            };
            if crc_fast::crc32_iscsi(payload) != u32_at(h, 0) {
                break;
            }
            let mut records = Vec::new();
            let mut p = payload;
            while !p.is_empty() {
                let (k, n) = varint(p).expect("key length");
                p = &p[n..];
                let (v, n) = varint(p).expect("value length");
                p = &p[n..];
                let (k, v) = (k as usize, v as usize);
                records.push((p[..k].to_vec(), p[k..k + v].to_vec()));
                p = &p[k + v..];
            }
            assert_eq!(
                records.len(),
                u32_at(h, 8) as usize,
                "the header's record count"
            );
            frames.push(records);
            at += FRAME_HEADER + len;
        }
        (frames, at)
    }

    /// Batch `i` of a test: `1 + i % 4` records of an 8-byte key and a value of 20 + i bytes
    /// (so that sizes differ from batch to batch, and one value needs a 2-byte varint).
    fn batch(i: usize) -> (RecordBatch, Records) {
        let value_len = 20 + i * 7;
        let mut b = RecordBatch::new(8, value_len);
        let mut records = Vec::new();
        for r in 0..1 + i % 4 {
            let key = ((i * 10 + r) as u64).to_be_bytes().to_vec();
            let value: Vec<u8> = (0..value_len).map(|j| (i + r + j) as u8).collect();
            b.push(&key, &value);
            records.push((key, value));
        }
        (b, records)
    }

    fn varint_len(v: usize) -> usize {
        let mut out = Vec::new();
        put_varint(&mut out, v as u64);
        out.len()
    }

    /// What batch `i` takes in the file: header, two varints and the bytes of each record.
    fn framed_len(records: &Records) -> usize {
        FRAME_HEADER
            + records
                .iter()
                .map(|(k, v)| varint_len(k.len()) + varint_len(v.len()) + k.len() + v.len())
                .sum::<usize>()
    }

    #[test]
    fn varints_take_seven_bits_a_byte() {
        for (v, len) in [(0u64, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3)] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), len, "{v}");
            assert_eq!(varint(&out), Some((v, len)), "{v}");
        }
    }

    #[test]
    fn raw_append_grows_by_each_frame_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let log = RawLog::append(dir.path()).unwrap();
        let mut written = Vec::new();
        let mut expected_len = 0;
        for i in 0..20 {
            let (b, records) = batch(i);
            log.write(&b, i % 3 != 0).unwrap(); // synced and unsynced alike reach the file
            expected_len += framed_len(&records);
            written.push(records);
            let on_disk = std::fs::metadata(dir.path().join(FILE_NAME)).unwrap().len();
            assert_eq!(on_disk, expected_len as u64, "after write {i}");
        }
        assert!(
            written.iter().any(|r| r[0].1.len() >= 128),
            "a 2-byte varint"
        );
        Box::new(log).close().unwrap();
        let bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
        let (frames, used) = parse(&bytes);
        assert_eq!(used, bytes.len(), "every byte belongs to a valid frame");
        assert_eq!(frames, written);

        // Reopened, it appends after what is there.
        let log = RawLog::append(dir.path()).unwrap();
        let (b, records) = batch(3);
        log.write(&b, true).unwrap();
        written.push(records);
        let bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
        assert_eq!(parse(&bytes), (written, bytes.len()));
    }

    #[test]
    fn a_damaged_frame_ends_the_parse() {
        let dir = tempfile::tempdir().unwrap();
        let log = RawLog::append(dir.path()).unwrap();
        for i in 0..3 {
            log.write(&batch(i).0, false).unwrap();
        }
        let mut bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
        let first = framed_len(&batch(0).1);
        bytes[first + FRAME_HEADER + 2] ^= 1; // a byte of the second frame's payload
        assert_eq!(parse(&bytes), (vec![batch(0).1], first));
    }

    #[test]
    fn raw_overwrite_keeps_its_length_and_grows_by_a_chunk_at_the_end() {
        const SMALL: u64 = 4096;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let log = RawLog::overwrite(dir.path(), SMALL).unwrap();
        let file_len = || std::fs::metadata(&path).unwrap().len();
        assert_eq!(file_len(), SMALL, "one chunk at open");
        let mut written = Vec::new();
        let mut used = 0u64;
        let mut grew = false;
        for i in 0..40 {
            let (b, records) = batch(i);
            let len = framed_len(&records) as u64;
            let chunks_before = file_len() / SMALL;
            log.write(&b, true).unwrap();
            used += len;
            written.push(records);
            // The smallest multiple of the chunk that holds what was written.
            let chunks = used.div_ceil(SMALL);
            assert_eq!(file_len(), chunks * SMALL, "after write {i} ({used} bytes)");
            if chunks > chunks_before {
                assert_eq!(chunks, chunks_before + 1, "a write adds at most one chunk");
                grew = true;
            }
        }
        assert!(grew, "the test crosses a chunk's end");
        Box::new(log).close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let (frames, end) = parse(&bytes);
        assert_eq!((frames, end as u64), (written, used));
        assert!(
            bytes[end..].iter().all(|&b| b == 0),
            "zeros past the frames"
        );
    }

    /// Bytes this thread has sent (dirtied) for the device, where the kernel counts them.
    fn thread_write_bytes() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/thread-self/io").ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("write_bytes:"))?;
        line.trim().parse().ok()
    }

    /// A small synced overwrite sends a page or two to the device, not the folio that
    /// preallocation left in the page cache (see [`ZERO_WRITE`]): 1 MiB per write when the
    /// zeros went in 1 MiB at a time, on Linux 6.18 with ext4.
    #[test]
    fn a_small_overwrite_writes_pages_not_the_preallocated_folio() {
        let dir = tempfile::tempdir().unwrap();
        let log = RawLog::overwrite(dir.path(), 4 << 20).unwrap();
        let Some(before) = thread_write_bytes() else {
            return; // no per-task I/O accounting in this kernel
        };
        let writes = 200;
        for i in 0..writes {
            log.write(&batch(i % 4).0, true).unwrap();
        }
        let per_write = (thread_write_bytes().unwrap() - before) / writes as u64;
        assert!(per_write <= 2 * 4096, "{per_write} bytes per write");
    }

    #[test]
    fn the_real_chunk_is_allocated_at_open_and_kept_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let engine = open_overwrite(dir.path()).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), CHUNK);
        engine.write(&batch(1).0, true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), CHUNK);
        engine.close().unwrap();
        // Reopened, the file is written again from its start; no chunk is added.
        let log = RawLog::overwrite(dir.path(), CHUNK).unwrap();
        log.write(&batch(2).0, true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), CHUNK);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(parse(&bytes[..framed_len(&batch(2).1)]).0, vec![batch(2).1]);
    }

    #[test]
    fn reads_scans_and_increments_are_refused() {
        let (a, o) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for engine in [
            open_append(a.path()).unwrap(),
            open_overwrite(o.path()).unwrap(),
        ] {
            let (b, records) = batch(0);
            engine.write(&b, true).unwrap();
            let got = engine.get(&records[0].0);
            assert!(
                got.as_ref().is_err_and(|e| e.contains("keeps no index")),
                "{got:?}"
            );
            assert!(engine.scan(&[], 10).is_err());
            let mut c = CounterBatch::new(8);
            c.push(&records[0].0, 1);
            assert!(engine.increment(&c, true).is_err());
            assert_eq!(engine.refuses_reads(), got.err());
            assert!(engine.stats().is_none());
            engine.close().unwrap();
        }
    }
}
