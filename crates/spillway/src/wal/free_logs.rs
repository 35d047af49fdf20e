//! Retired logs kept for reuse (RocksDB's `recycle_log_file_num`): a new log is written over
//! the file of one whose records the tree already holds, instead of a new file.
//!
//! A synced append to a file whose blocks are written costs an fdatasync of data alone; one
//! that grows the file also commits its new size and blocks. Zeros written ahead of a new
//! log's end buy that (see `prefill`), at the price of writing the log twice; a recycled log
//! has its blocks written already, for nothing. What lies past the new records are the old
//! log's, whose checksums hold the old number: recovery reads them as bytes that were never
//! this log's records (see `format`).
//!
//! A retired log waits as `<number>.freelog` (its old number): at most [`KEEP`] of them, the
//! rest are removed. The rename that makes one a log again is made durable, with the folder,
//! before a write in the log is acknowledged, as a new log's creation is. A free log lost to
//! a crash is only a file less to reuse; one found at open is reused (read-only opens leave
//! them alone).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::format::{self, Header, HEADER_LEN};
use crate::error::Result;
use crate::files::{free_log_name, log_path};
use crate::io;
use crate::util::sync::lock;

/// How many retired logs wait for reuse: one a freeze takes while the next waits, as the
/// spill that frees a log runs beside the buffer filling the next.
pub const KEEP: usize = 2;

pub struct FreeLogs {
    dir: PathBuf,
    /// The numbers of the free logs, in the order they were retired.
    numbers: Mutex<Vec<u64>>,
}

impl FreeLogs {
    /// The free logs of `dir`, of those `found` there (their numbers): up to [`KEEP`] that hold
    /// a header of this version are kept, the newest, and the others removed (a log of
    /// another version would be read by its header's rules).
    pub fn adopt(dir: &Path, mut found: Vec<u64>) -> Result<FreeLogs> {
        found.sort_unstable();
        let mut keep = Vec::new();
        for n in found.into_iter().rev() {
            let path = dir.join(free_log_name(n));
            if keep.len() < KEEP && current_header(&path) {
                keep.push(n);
            } else {
                io::remove_file(&path)?;
            }
        }
        keep.reverse();
        Ok(FreeLogs {
            dir: dir.to_owned(),
            numbers: Mutex::new(keep),
        })
    }

    /// Log `number`, whose records the tree holds durably, is no longer needed: keep its file
    /// for reuse if there is room and it holds a header of this version (the one a log in
    /// it takes), else remove it. Best effort, as removal is: a log left behind is removed
    /// by the next open.
    pub fn retire(&self, number: u64) {
        let path = log_path(&self.dir, number);
        let mut numbers = lock(&self.numbers);
        if numbers.len() < KEEP && current_header(&path) {
            let free = self.dir.join(free_log_name(number));
            if io::rename_file(&path, &free).is_ok() {
                numbers.push(number);
                return;
            }
        }
        drop(numbers);
        let _ = io::remove_file(&path);
    }

    /// The path of a free log to write a new log over, taken out of the pool.
    pub fn take(&self) -> Option<PathBuf> {
        let n = lock(&self.numbers).pop()?;
        Some(self.dir.join(free_log_name(n)))
    }
}

/// Whether the file at `path` starts with the header this version writes.
fn current_header(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let mut h = [0u8; HEADER_LEN];
    std::fs::File::open(path)
        .and_then(|f| f.read_exact_at(&mut h, 0))
        .is_ok_and(|()| format::read_header(&h) == Header::Version(format::VERSION))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::LogWriter;

    /// A log `n` of `dir` retired through `free`, with one record.
    fn retired(dir: &Path, free: &FreeLogs, n: u64) {
        let mut w = LogWriter::create(dir, n, Default::default()).unwrap();
        w.add_record(b"a record").unwrap();
        drop(w);
        free.retire(n);
    }

    #[test]
    fn at_most_keep_wait_and_only_logs_of_this_version() {
        let dir = tempfile::tempdir().unwrap();
        let free = FreeLogs::adopt(dir.path(), Vec::new()).unwrap();
        for n in 1..=4 {
            retired(dir.path(), &free, n);
        }
        let names = |dir: &Path| {
            let mut v: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        // The first two wait; the others were removed.
        assert_eq!(names(dir.path()), [free_log_name(1), free_log_name(2)]);
        let taken = free.take().unwrap();
        assert_eq!(taken, dir.path().join(free_log_name(2)));
        std::fs::rename(taken, dir.path().join(crate::files::log_name(9))).unwrap();
        std::fs::remove_file(dir.path().join(crate::files::log_name(9))).unwrap();

        // At open: a damaged header, or another version's, is removed, as are extras.
        std::fs::write(dir.path().join(free_log_name(7)), b"not a log").unwrap();
        for n in [5, 6] {
            let path = dir.path().join(free_log_name(n));
            std::fs::copy(dir.path().join(free_log_name(1)), &path).unwrap();
        }
        let mut other = std::fs::read(dir.path().join(free_log_name(6))).unwrap();
        other[8] = 5; // version 5
        std::fs::write(dir.path().join(free_log_name(6)), other).unwrap();
        let free = FreeLogs::adopt(dir.path(), vec![1, 5, 6, 7]).unwrap();
        assert_eq!(names(dir.path()), [free_log_name(1), free_log_name(5)]);
        assert_eq!(free.take(), Some(dir.path().join(free_log_name(5))));
        assert_eq!(free.take(), Some(dir.path().join(free_log_name(1))));
        assert_eq!(free.take(), None);
    }
}
