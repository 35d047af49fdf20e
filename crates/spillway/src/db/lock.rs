//! The store folder's lock: one writing `Db` per folder, or any number of read-only ones,
//! across processes and within one.
//!
//! A POSIX record lock (`fcntl(F_SETLK)`) on the `LOCK` file keeps other processes out, as
//! LevelDB and RocksDB do: exclusive for a writer, shared for read-only handles. `flock`
//! would be simpler but its lock belongs to the open file, which every `fork` duplicates:
//! while any thread of the process forks a child (to run a command, say), the child holds the
//! lock until it calls `exec`, and a close-then-reopen of the store in that window fails as
//! `Locked`. A record lock belongs to the process and is not inherited — and is released by
//! closing *any* of the process's descriptors of the file. So a table of the folders this
//! process holds keeps a second handle of the same process out, and lets the read-only
//! handles of one folder share one descriptor, closed when the last of them goes.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, IoContext, Result};
use crate::util::sync::lock;

use crate::files::LOCK as LOCK_FILE;

/// How this process holds a folder.
enum Held {
    Writer,
    /// Read-only handles, sharing the descriptor that holds the shared lock (none when the
    /// folder has no `LOCK` file, which read-only handles never create).
    Readers {
        count: usize,
        _file: Option<File>,
    },
}

/// Folders (canonical paths) held by this process.
static HELD: Mutex<Option<HashMap<PathBuf, Held>>> = Mutex::new(None);

/// Holds the folder until dropped.
pub struct FolderLock {
    /// A writer's descriptor: closing it releases the record lock, so it stays open for as
    /// long as the store is. Readers' descriptor lives in `HELD`.
    file: Option<File>,
    folder: PathBuf,
    shared: bool,
}

impl FolderLock {
    /// The exclusive lock of a writer, creating the `LOCK` file if need be.
    pub fn acquire(dir: &Path) -> Result<FolderLock> {
        let folder = canonical(dir)?;
        let mut held = lock(&HELD);
        let held = held.get_or_insert_with(HashMap::new);
        if held.contains_key(&folder) {
            return Err(Error::Locked {
                path: dir.to_owned(),
            });
        }
        let path = folder.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .context(|| format!("opening {}", path.display()))?;
        record_lock(&file, libc::F_WRLCK, &path, dir)?;
        held.insert(folder.clone(), Held::Writer);
        Ok(FolderLock {
            file: Some(file),
            folder,
            shared: false,
        })
    }

    /// A shared lock for a read-only handle: writes nothing, so it works in a folder the user
    /// may only read. Fails with `Locked` while a writer has the store open.
    pub fn share(dir: &Path) -> Result<FolderLock> {
        let folder = canonical(dir)?;
        let mut held = lock(&HELD);
        let held = held.get_or_insert_with(HashMap::new);
        match held.get_mut(&folder) {
            Some(Held::Writer) => {
                return Err(Error::Locked {
                    path: dir.to_owned(),
                })
            }
            Some(Held::Readers { count, .. }) => *count += 1,
            None => {
                let path = folder.join(LOCK_FILE);
                let file = match File::open(&path) {
                    Ok(file) => {
                        record_lock(&file, libc::F_RDLCK, &path, dir)?;
                        Some(file)
                    }
                    // No writer ever locked it here (or a copy left the file behind).
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    Err(e) => return Err(Error::io(format!("opening {}", path.display()), e)),
                };
                held.insert(
                    folder.clone(),
                    Held::Readers {
                        count: 1,
                        _file: file,
                    },
                );
            }
        }
        Ok(FolderLock {
            file: None,
            folder,
            shared: true,
        })
    }
}

fn canonical(dir: &Path) -> Result<PathBuf> {
    dir.canonicalize()
        .context(|| format!("resolving {}", dir.display()))
}

/// Take record lock `kind` (`F_WRLCK` or `F_RDLCK`) on the whole of `file`.
fn record_lock(file: &File, kind: libc::c_int, path: &Path, dir: &Path) -> Result<()> {
    // SAFETY: `flock` is plain data; fcntl reads it and the descriptor is open.
    let locked = unsafe {
        let mut l: libc::flock = std::mem::zeroed();
        l.l_type = kind as _;
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
    Ok(())
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        let mut held = lock(&HELD);
        let Some(held) = held.as_mut() else { return };
        if self.shared {
            if let Some(Held::Readers { count, .. }) = held.get_mut(&self.folder) {
                *count -= 1;
                if *count == 0 {
                    held.remove(&self.folder); // closes the shared descriptor
                }
            }
            return;
        }
        // Release the record lock while the folder is still in `HELD`: a new `Db` of this
        // process could otherwise lock it first, and our close would then release the
        // process's lock — its lock — too (record locks belong to the process).
        drop(self.file.take());
        held.remove(&self.folder);
    }
}
