//! Selector files: node selector tiers (see `selector`) saved to disk, so that an open reads
//! them back instead of building every selector again from its lists' fingerprints — about a
//! second per 18 M records on two cores, a minute at a billion.
//!
//! They are derived data. A file is written without fsync and checked when read; a tier that
//! is missing or fails its checksum is built again from the lists, as before (a process crash
//! loses nothing written; a power loss may take what was not yet written back).
//!
//! One pass over a tree that builds tiers (a spill, a split, an open that had to build some)
//! writes them all to one new file, numbered from the store's file counter. Tiers never
//! change, so neither do files. A file lives while a tier of the current tree is in it; once
//! none is, it is removed when the last tree version holding one of its tiers is gone, as list
//! files are. `SELECTORS` says which tiers make each node's selector (see `selector_index`).
//!
//! ```text
//! file   = "SPWSEL01" | record*
//! record = crc32c u32 of body | body      (SELECTORS holds each record's offset and length)
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::files;
use crate::io::{self, AppendFile};
use crate::stats::Counters;

const MAGIC: &[u8; 8] = b"SPWSEL01";
const CRC_LEN: u64 = 4;

/// A selector file (see the module doc).
#[derive(Debug)]
pub struct SelectorFile {
    id: u64,
    path: PathBuf,
    /// Set once no current tree holds a tier of the file: whoever drops the last reference
    /// removes it.
    remove_when_dropped: AtomicBool,
}

/// Where a saved tier is: its file, and its record's place and checksum (which `SELECTORS`
/// repeats, so that a record read back is the one it names).
#[derive(Clone, Debug)]
pub struct Saved {
    pub file: Arc<SelectorFile>,
    pub offset: u64,
    pub len: u32,
    pub crc: u32,
}

impl SelectorFile {
    /// The file `id` of `dir`, which exists: its tiers are about to be read.
    pub fn existing(dir: &Path, id: u64) -> Arc<SelectorFile> {
        Arc::new(SelectorFile {
            id,
            path: files::selector_file_path(dir, id),
            remove_when_dropped: AtomicBool::new(false),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the file once the last tier in it is dropped (see the module doc).
    pub fn remove_when_unused(&self) {
        self.remove_when_dropped.store(true, Relaxed);
    }

    /// Open the file for [`read`](Self::read).
    pub fn open(&self) -> Result<File> {
        io::open_read(&self.path)
    }

    /// The body of the record `saved` names, read from `file` (this one, opened) into `buf`,
    /// if its checksum holds; a record that does not is corruption.
    pub fn read<'a>(&self, file: &File, saved: &Saved, buf: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        buf.resize(saved.len as usize, 0);
        io::read_into(file, &self.path, saved.offset, buf)?;
        self.check(saved, buf)
    }

    /// The body of `record`, the bytes `saved` names, if its checksum holds.
    pub fn check<'a>(&self, saved: &Saved, record: &'a [u8]) -> Result<&'a [u8]> {
        let (stored, body) = record.split_at(CRC_LEN.min(record.len() as u64) as usize);
        match <[u8; 4]>::try_from(stored).map(u32::from_le_bytes) {
            Ok(crc) if crc == saved.crc && crc_fast::crc32_iscsi(body) == crc => Ok(body),
            _ => Err(Error::corruption(
                &self.path,
                format!(
                    "the selector tier at {} fails its checksum (selectors are rebuilt from \
                     the lists)",
                    saved.offset
                ),
            )),
        }
    }
}

impl Drop for SelectorFile {
    fn drop(&mut self) {
        if *self.remove_when_dropped.get_mut() {
            // Best effort, as all garbage collection: the next open removes an orphan.
            let _ = io::remove_file(&self.path);
        }
    }
}

/// A selector file being written.
pub struct Writer {
    file: Arc<SelectorFile>,
    out: AppendFile,
    counters: Arc<Counters>,
}

impl Writer {
    pub fn create(dir: &Path, id: u64, counters: Arc<Counters>) -> Result<Writer> {
        let path = files::selector_file_path(dir, id);
        let mut out = AppendFile::create(&path, counters.clone())?;
        let file = Arc::new(SelectorFile {
            id,
            path,
            // Until `finish`, a failure or a drop leaves nothing behind.
            remove_when_dropped: AtomicBool::new(true),
        });
        out.append(MAGIC)?;
        Ok(Writer {
            file,
            out,
            counters,
        })
    }

    /// Append a record of `body`: where it is, once [`finish`](Self::finish) succeeds.
    pub fn append(&mut self, body: &[u8]) -> Result<Saved> {
        let offset = self.out.len();
        let crc = crc_fast::crc32_iscsi(body);
        self.out.append(&crc.to_le_bytes())?;
        self.out.append(body)?;
        let len = u32::try_from(CRC_LEN as usize + body.len()).map_err(|_| {
            Error::io(
                "saving a selector tier",
                std::io::Error::from(std::io::ErrorKind::FileTooLarge),
            )
        })?;
        Ok(Saved {
            file: self.file.clone(),
            offset,
            len,
            crc,
        })
    }

    /// Write out what was appended (no fsync: see the module doc); the file stays.
    pub fn finish(mut self) -> Result<Arc<SelectorFile>> {
        self.out.flush()?;
        self.counters
            .selector_write_bytes
            .fetch_add(self.out.len(), Relaxed);
        self.file.remove_when_dropped.store(false, Relaxed);
        Ok(self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_and_damage_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path(), 7, Arc::default()).unwrap();
        let a = w.append(b"first tier").unwrap();
        let b = w.append(&[9u8; 5000]).unwrap();
        let file = w.finish().unwrap();
        let f = file.open().unwrap();
        let mut buf = Vec::new();
        assert_eq!(file.read(&f, &a, &mut buf).unwrap(), b"first tier");
        assert_eq!(file.read(&f, &b, &mut buf).unwrap(), vec![9u8; 5000]);
        // A record named with another checksum is not the one asked for.
        let wrong = Saved {
            crc: a.crc ^ 1,
            ..a.clone()
        };
        assert!(matches!(
            file.read(&f, &wrong, &mut buf),
            Err(Error::Corruption { .. })
        ));
        // A damaged byte fails the checksum.
        use std::os::unix::fs::FileExt;
        let rw = std::fs::OpenOptions::new()
            .write(true)
            .open(files::selector_file_path(dir.path(), 7))
            .unwrap();
        rw.write_all_at(&[0], b.offset + 100).unwrap();
        assert!(matches!(
            file.read(&f, &b, &mut buf),
            Err(Error::Corruption { .. })
        ));
        // Kept when dropped, until marked.
        drop(f);
        let path = files::selector_file_path(dir.path(), 7);
        let again = SelectorFile::existing(dir.path(), 7);
        drop(file);
        assert!(path.exists());
        again.remove_when_unused();
        drop(again);
        assert!(!path.exists());
    }

    #[test]
    fn an_unfinished_file_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path(), 3, Arc::default()).unwrap();
        w.append(b"x").unwrap();
        drop(w);
        assert!(!files::selector_file_path(dir.path(), 3).exists());
    }
}
