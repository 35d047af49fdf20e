//! The write-ahead log (WB-tree §3.6): every write is appended here before it is acknowledged.
//!
//! ```text
//! file    magic "SPWYLOG\0" | format version u32 | reserved u32 | record*
//! record  crc32c(payload) u32 | len u32 | crc32c(len) u32 | payload (one write group)
//! ```
//!
//! Recovery tells a torn tail from corruption. A crash can leave the last record incomplete
//! (its declared length runs past the end of the file, its bytes fail their checksum while
//! reaching the end of the file, or only zeros follow): that tail was never acknowledged and is
//! cut off. A bad record with valid data after it cannot be explained by a crash, so it is
//! reported as corruption rather than silently dropping what follows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{AppendFile, PendingSync};
use crate::stats::Counters;

const MAGIC: &[u8; 8] = b"SPWYLOG\0";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const FRAME_LEN: usize = 12;

pub fn file_name(number: u64) -> String {
    format!("{number:010}.log")
}

pub fn parse_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(".log")?;
    (digits.len() >= 10 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

pub struct LogWriter {
    file: AppendFile,
    number: u64,
    in_doubt: bool,
    counters: Arc<Counters>,
}

impl LogWriter {
    pub fn create(dir: &Path, number: u64, counters: Arc<Counters>) -> Result<LogWriter> {
        let mut file = AppendFile::create(&dir.join(file_name(number)), counters.clone())?;
        let mut header = [0u8; HEADER_LEN];
        header[..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        file.append(&header)?;
        file.flush()?;
        counters
            .wal_bytes
            .fetch_add(HEADER_LEN as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(LogWriter {
            file,
            number,
            in_doubt: false,
            counters,
        })
    }

    /// Continue log `number` after its first `valid_len` bytes, as [`replay`] measured them.
    /// Reusing the newest log at open keeps a store that is opened often from collecting one
    /// log per open until its next spill.
    pub fn reopen(
        dir: &Path,
        number: u64,
        valid_len: u64,
        counters: Arc<Counters>,
    ) -> Result<LogWriter> {
        debug_assert!(valid_len >= HEADER_LEN as u64);
        let file = AppendFile::reopen(&dir.join(file_name(number)), valid_len, counters.clone())?;
        Ok(LogWriter {
            file,
            number,
            in_doubt: false,
            counters,
        })
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
        let len = u32::try_from(payload.len()).expect("batches are limited well below 4 GiB");
        let mut frame = [0u8; FRAME_LEN];
        frame[0..4].copy_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        frame[4..8].copy_from_slice(&len.to_le_bytes());
        frame[8..12].copy_from_slice(&crc32c::crc32c(&len.to_le_bytes()).to_le_bytes());
        let start = self.file.len();
        let appended = self
            .file
            .append(&frame)
            .and_then(|()| self.file.append(payload))
            .and_then(|()| self.file.flush());
        if let Err(e) = appended {
            if self.file.cut_to(start).is_err() {
                self.in_doubt = true;
            }
            return Err(e);
        }
        self.counters.wal_bytes.fetch_add(
            (FRAME_LEN + payload.len()) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    /// Whether a failed append could not be taken back: the file may end in part of a record.
    pub fn is_in_doubt(&self) -> bool {
        self.in_doubt
    }

    /// fdatasync: everything added so far survives power loss. The longest one is kept: a
    /// slow write is then easy to tell from a slow disk.
    pub fn sync(&mut self) -> Result<()> {
        let started = std::time::Instant::now();
        self.file.sync()?;
        let micros = started.elapsed().as_micros() as u64;
        self.counters
            .max_log_sync_micros
            .fetch_max(micros, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Stop writing to this log; it still has to be synced (see [`PendingSync`]).
    pub fn retire(self) -> Result<PendingSync> {
        self.file.into_pending_sync()
    }
}

/// What reading a log found.
#[derive(Debug, PartialEq, Eq)]
pub struct Replayed {
    /// Whether the file holds a whole header, so that records can be appended to it.
    pub has_header: bool,
    /// Bytes of the file that hold whole, valid records (header included).
    pub valid_len: u64,
    /// Whether an incomplete tail was found past `valid_len`.
    pub torn_tail: bool,
}

/// Read every valid record of log `path` in order, handing each payload to `apply`.
pub fn replay(path: &Path, mut apply: impl FnMut(&[u8]) -> Result<()>) -> Result<Replayed> {
    let data = crate::io::read_file(path)?;
    let corrupt = |reason: String| Error::corruption(PathBuf::from(path), reason);
    if data.len() < HEADER_LEN {
        // Created but the header never fully reached the disk: nothing was acknowledged in it.
        return Ok(Replayed {
            has_header: false,
            valid_len: 0,
            torn_tail: !data.is_empty(),
        });
    }
    if &data[..8] != MAGIC {
        return Err(Error::NotAStore {
            path: path.to_owned(),
            reason: "a .log file without the Spillway log header".into(),
        });
    }
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            path: path.to_owned(),
            found: version,
            supported: VERSION,
        });
    }
    let mut pos = HEADER_LEN;
    let u32_at = |i: usize| u32::from_le_bytes(data[i..i + 4].try_into().unwrap());
    let torn = |pos: usize| {
        Ok(Replayed {
            has_header: true,
            valid_len: pos as u64,
            torn_tail: true,
        })
    };
    while pos < data.len() {
        let rest = &data[pos..];
        if rest.len() < FRAME_LEN || rest.iter().all(|&b| b == 0) {
            return torn(pos);
        }
        let len = u32_at(pos + 4);
        if crc32c::crc32c(&len.to_le_bytes()) != u32_at(pos + 8) {
            return Err(corrupt(format!(
                "record header at offset {pos} fails its checksum"
            )));
        }
        let end = pos + FRAME_LEN + len as usize;
        if end > data.len() {
            return torn(pos);
        }
        let payload = &data[pos + FRAME_LEN..end];
        if crc32c::crc32c(payload) != u32_at(pos) {
            if end == data.len() {
                return torn(pos);
            }
            return Err(corrupt(format!(
                "record at offset {pos} fails its checksum and {} bytes of log follow it",
                data.len() - end
            )));
        }
        apply(payload)?;
        pos = end;
    }
    Ok(Replayed {
        has_header: true,
        valid_len: pos as u64,
        torn_tail: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_log(dir: &Path, payloads: &[&[u8]]) -> PathBuf {
        let mut w = LogWriter::create(dir, 1, Arc::default()).unwrap();
        for p in payloads {
            w.add_record(p).unwrap();
        }
        w.sync().unwrap();
        dir.join(file_name(1))
    }

    fn read_all(path: &Path) -> Result<(Vec<Vec<u8>>, Replayed)> {
        let mut got = Vec::new();
        let r = replay(path, |p| {
            got.push(p.to_vec());
            Ok(())
        })?;
        Ok((got, r))
    }

    #[test]
    fn every_truncation_is_a_torn_tail_keeping_whole_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), &[b"first", b"second record", b"third"]);
        let full = std::fs::read(&path).unwrap();
        let ends = [16, 16 + 12 + 5, 16 + 12 + 5 + 12 + 13, full.len()];
        for cut in 0..=full.len() {
            std::fs::write(&path, &full[..cut]).unwrap();
            let (got, r) = read_all(&path).unwrap();
            let whole = ends.iter().filter(|&&e| e <= cut).count().saturating_sub(1);
            assert_eq!(got.len(), whole, "cut at {cut}");
            assert_eq!(
                r.torn_tail,
                !ends.contains(&cut) && cut != 0,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn corruption_before_the_tail_is_an_error_and_at_the_tail_is_torn() {
        let dir = tempfile::tempdir().unwrap();
        let path = write_log(dir.path(), &[b"first", b"second", b"third"]);
        let full = std::fs::read(&path).unwrap();
        // A flipped payload bit in the middle record: data follows, so this is corruption.
        let mut bad = full.clone();
        bad[16 + 12 + 5 + 12 + 2] ^= 1;
        std::fs::write(&path, &bad).unwrap();
        assert!(matches!(read_all(&path), Err(Error::Corruption { .. })));
        // The same flip in the last record is a torn tail: the first two survive.
        let mut tail = full.clone();
        let n = tail.len();
        tail[n - 1] ^= 1;
        std::fs::write(&path, &tail).unwrap();
        let (got, r) = read_all(&path).unwrap();
        assert_eq!(got, vec![b"first".to_vec(), b"second".to_vec()]);
        assert!(r.torn_tail);
        // Zeros after the last record (space allocated, never written) are a torn tail too.
        let mut zeros = full.clone();
        zeros.extend_from_slice(&[0; 100]);
        std::fs::write(&path, &zeros).unwrap();
        assert_eq!(read_all(&path).unwrap().0.len(), 3);
        // A foreign file is refused.
        std::fs::write(&path, b"this is not a log file at all").unwrap();
        assert!(matches!(read_all(&path), Err(Error::NotAStore { .. })));
    }
}
