//! The store folder's lock: one open `Db` per folder, across processes and within one.
//!
//! A POSIX record lock (`fcntl(F_SETLK)`) on the `LOCK` file keeps other processes out, as
//! LevelDB and RocksDB do. `flock` would be simpler but its lock belongs to the open file,
//! which every `fork` duplicates: while any thread of the process forks a child (to run a
//! command, say), the child holds the lock until it calls `exec`, and a close-then-reopen of
//! the store in that window fails as `Locked`. A record lock belongs to the process and is
//! not inherited. It also does not keep a second `Db` of the same process out, so a table of
//! the folders this process holds does that.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, IoContext, Result};
use crate::write_queue::lock;

pub const LOCK_FILE: &str = "LOCK";

/// Folders (canonical paths) locked by this process.
static HELD: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Holds the folder until dropped.
pub struct FolderLock {
    /// Closing it releases the record lock, so it stays open for as long as the store is.
    file: Option<File>,
    folder: PathBuf,
}

impl FolderLock {
    pub fn acquire(dir: &Path) -> Result<FolderLock> {
        let folder = dir
            .canonicalize()
            .context(|| format!("resolving {}", dir.display()))?;
        if !lock(&HELD)
            .get_or_insert_with(HashSet::new)
            .insert(folder.clone())
        {
            return Err(Error::Locked {
                path: dir.to_owned(),
            });
        }
        match lock_file(&folder, dir) {
            Ok(file) => Ok(FolderLock {
                file: Some(file),
                folder,
            }),
            Err(e) => {
                release(&folder);
                Err(e)
            }
        }
    }
}

/// Open `LOCK` in `folder` and take the record lock on it.
fn lock_file(folder: &Path, dir: &Path) -> Result<File> {
    let path = folder.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .context(|| format!("opening {}", path.display()))?;
    // SAFETY: `flock` is plain data; fcntl reads it and the descriptor is open.
    let locked = unsafe {
        let mut l: libc::flock = std::mem::zeroed();
        l.l_type = libc::F_WRLCK as _;
        l.l_whence = libc::SEEK_SET as _;
        libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &l)
    };
    if locked != 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EACCES) => Error::Locked {
                path: dir.to_owned(),
            },
            _ => Error::io(format!("locking {}", path.display()), e),
        });
    }
    Ok(file)
}

fn release(folder: &Path) {
    if let Some(set) = lock(&HELD).as_mut() {
        set.remove(folder);
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Release the record lock before the folder leaves `HELD`: a new `Db` of this process
        // could otherwise lock it first, and our close would then release the process's lock
        // — its lock — too (record locks belong to the process, not to a descriptor).
        drop(self.file.take());
        release(&self.folder);
    }
}
