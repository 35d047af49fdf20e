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
    /// The free logs of `dir`, of those `found` there (their numbers): up to [`KEEP`] are kept,
    /// the newest, and the others removed.
    pub fn adopt(dir: &Path, mut found: Vec<u64>) -> Result<FreeLogs> {
        found.sort_unstable();
        let extra = found.len().saturating_sub(KEEP);
        for n in found.drain(..extra) {
            io::remove_file(&dir.join(free_log_name(n)))?;
        }
        Ok(FreeLogs {
            dir: dir.to_owned(),
            numbers: Mutex::new(found),
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
