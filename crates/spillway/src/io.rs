//! The file layer: every byte Spillway writes or reads goes through here, so that write
//! amplification is counted in one place and faults are injected in one place (`faults`).

// Compiled in always (an unarmed check is one relaxed load beside a system call), public only
// with the `fault-injection` feature.
mod append_map;
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub mod faults;
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub mod power_loss;

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Acquire, Ordering::Release};
use std::sync::{Arc, Mutex};

use self::append_map::{AppendMap, MapError};
use self::faults::Op;
use crate::error::{IoContext, Result};
use crate::stats::Counters;

/// An append-only file with a write buffer. Bytes reach the OS on [`flush`](Self::flush) and
/// the device on [`sync`](Self::sync).
pub struct AppendFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
    /// Start writeback of each chunk as soon as it is written (see `write_behind`).
    write_behind: bool,
    /// Append by copying into a map of the file (see [`mapped`](Self::mapped)), through
    /// `map`, the window now mapped.
    mapped: bool,
    map: Option<AppendMap>,
    /// Appends through the map have moved the end past the descriptor's offset.
    cursor_behind: bool,
    counters: Arc<Counters>,
}

const WRITE_BUFFER: usize = 256 * 1024;

/// Before every operation: an injected fault, or a simulated power loss, fails it.
fn fault(path: &Path, op: Op) -> std::io::Result<()> {
    faults::check(path, op).and_then(|()| power_loss::check(path))
}

impl AppendFile {
    /// Create a new file; fails if it exists (names are never reused).
    pub fn create(path: &Path, counters: Arc<Counters>) -> Result<Self> {
        // Readable too: a writable map of a file needs it (see `mapped`).
        let file = create_new(path)?;
        power_loss::created(path);
        Ok(Self::at(file, path, 0, counters))
    }

    /// Appending to `file` (at `path`), whose descriptor's offset is `len`.
    fn at(file: File, path: &Path, len: u64, counters: Arc<Counters>) -> Self {
        AppendFile {
            file,
            path: path.to_owned(),
            buf: Vec::with_capacity(WRITE_BUFFER),
            len,
            write_behind: false,
            mapped: false,
            map: None,
            cursor_behind: false,
            counters,
        }
    }

    /// An existing file, opened to write (and read: see `mapped`), its offset at `at`.
    fn open_at(path: &Path, at: u64) -> Result<File> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .context(|| format!("opening {}", path.display()))?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(at))
            .context(|| format!("seeking in {}", path.display()))?;
        Ok(file)
    }

    /// Hand each chunk to the device as soon as it is written instead of leaving it all to
    /// the final fsync. A spill writes tens of MiB of lists; flushed in one burst at its fsync,
    /// they queue ahead of the log's small fsyncs on the device and stall writers for tens of
    /// milliseconds. Written behind, the device sees a steady trickle instead.
    pub fn write_behind(mut self) -> Self {
        self.write_behind = true;
        self
    }

    /// Whether [`append_through_map`](Self::append_through_map) copies into a writable map of
    /// the file instead of making a `write` per append (see `append_map`): no system call, and
    /// the bytes are as safe from a process crash. Falls back to `write` where the file system
    /// cannot allocate ahead.
    pub fn mapped(mut self, on: bool) -> Self {
        debug_assert!(self.buf.is_empty());
        self.mapped = on;
        self.map = None;
        self
    }

    /// Reopen an existing file to append after its first `len` bytes; anything past them (a
    /// torn tail) is cut off durably first.
    pub fn reopen(path: &Path, len: u64, counters: Arc<Counters>) -> Result<Self> {
        let file = Self::open_at(path, len)?;
        let on_disk = file
            .metadata()
            .context(|| format!("reading size of {}", path.display()))?
            .len();
        if on_disk != len {
            fault(path, Op::Write)
                .and_then(|()| file.set_len(len))
                .and_then(|()| fault(path, Op::Sync))
                .and_then(|()| file.sync_all())
                .context(|| format!("cutting {} to {len} bytes", path.display()))?;
            power_loss::synced(path, len);
        }
        Ok(Self::at(file, path, len, counters))
    }

    /// Open an existing file to write over it from byte `at` on: what lies past `at` stays
    /// until written over (a recycled log, see `wal`), and the file does not shrink.
    pub fn overwrite(path: &Path, at: u64, counters: Arc<Counters>) -> Result<Self> {
        let file = Self::open_at(path, at)?;
        power_loss::overwriting(path);
        Ok(Self::at(file, path, at, counters))
    }

    /// The file's size as the file system has it: past [`len`](Self::len) when written over
    /// (see [`overwrite`](Self::overwrite)) or mapped ahead. 0 if it cannot be read.
    pub fn size_on_disk(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, for positional writes past the end (see `wal::prefill`).
    pub fn handle(&self) -> &File {
        &self.file
    }

    /// Logical length, including bytes still in the write buffer.
    pub fn len(&self) -> u64 {
        self.len + self.buf.len() as u64
    }

    pub fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.flush()?;
        }
        if data.len() >= WRITE_BUFFER {
            self.write_through(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }

    /// Append `data` by copying it into the map, where this file is [`mapped`](Self::mapped)
    /// (else by `write`). Nothing stays buffered: the bytes are in the page cache when this
    /// returns.
    pub fn append_through_map(&mut self, data: &[u8]) -> Result<()> {
        self.flush()?;
        if self.mapped && self.map_window(data.len() as u64)? {
            self.copy_into_map(data)
        } else {
            self.append(data).and_then(|()| self.flush())
        }
    }

    /// Make the map cover the next `n` bytes; `false` if this file cannot be mapped (then
    /// appends go on with `write`, from where the map left off).
    fn map_window(&mut self, n: u64) -> Result<bool> {
        let at = self.len;
        if self.map.as_ref().is_some_and(|m| m.covers(at, n)) {
            return Ok(true);
        }
        self.map = None;
        // After a simulated crash or power loss (tests), nothing more is allocated either.
        match power_loss::check(&self.path).map(|()| AppendMap::covering(&self.file, at, n)) {
            Ok(Ok(map)) => {
                self.map = Some(map);
                Ok(true)
            }
            Ok(Err(MapError::Unsupported)) => {
                self.mapped = false;
                std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(at))
                    .context(|| format!("seeking in {}", self.path.display()))?;
                Ok(false)
            }
            Ok(Err(MapError::Io(e))) | Err(e) => Err(e)
                .context(|| format!("allocating {n} bytes at {at} of {}", self.path.display())),
        }
    }

    /// Copy `data` to the end of the file, through the map (which covers it).
    fn copy_into_map(&mut self, data: &[u8]) -> Result<()> {
        let map = self.map.as_mut().expect("mapped");
        if let Err(e) = fault(&self.path, Op::Write) {
            // Like a write that runs out of space: part of it lands.
            map.write(self.len, &data[..data.len() / 2]);
            return Err(e).context(|| format!("writing {}", self.path.display()));
        }
        map.write(self.len, data);
        self.len += data.len() as u64;
        self.cursor_behind = true;
        self.counters.add_disk_write(data.len() as u64);
        Ok(())
    }

    fn write_through(&mut self, data: &[u8]) -> Result<()> {
        if self.cursor_behind {
            // Copies through the map moved the end, not the descriptor's offset.
            std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(self.len))
                .context(|| format!("seeking in {}", self.path.display()))?;
            self.cursor_behind = false;
        }
        fault(&self.path, Op::Write)
            .inspect_err(|_| {
                // Like a write that runs out of space: part of it lands.
                let _ = self.file.write_all(&data[..data.len() / 2]);
            })
            .and_then(|()| self.file.write_all(data))
            .context(|| format!("writing {}", self.path.display()))?;
        if self.write_behind {
            // Only a hint: a failure here surfaces at the fsync that follows.
            // SAFETY: a range of a valid open descriptor; the call reads no memory of ours.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    self.len as libc::off64_t,
                    data.len() as libc::off64_t,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
        }
        self.len += data.len() as u64;
        self.counters.add_disk_write(data.len() as u64);
        Ok(())
    }

    /// Forget everything after the first `len` bytes — buffered or already handed to the OS —
    /// so that appending goes on from there: what a failed append (a full disk) leaves behind
    /// is taken back.
    pub fn cut_to(&mut self, len: u64) -> Result<()> {
        debug_assert!(len <= self.len());
        self.buf.clear();
        // No page of a map may lie past the end of its file; the seek below puts the
        // descriptor's offset back at the end.
        self.map = None;
        self.cursor_behind = false;
        // Shrinking a file needs no space: a full disk does not fail it.
        power_loss::check(&self.path)
            .and_then(|()| self.file.set_len(len))
            .and_then(|()| std::io::Seek::seek(&mut self.file, std::io::SeekFrom::Start(len)))
            .context(|| format!("cutting {} back to {len} bytes", self.path.display()))?;
        self.len = len;
        Ok(())
    }

    /// Cut the file back to `size` bytes (never below what was appended, nor past what the
    /// file holds): what lies between the appended bytes and `size` stays, space set aside
    /// past it goes (see `wal::free_logs`). Nothing more is to be appended.
    pub fn trim_to(&mut self, size: u64) -> Result<()> {
        debug_assert!(size >= self.len());
        self.flush()?;
        // No page of a map may lie past the end of its file.
        self.map = None;
        let on_disk = self.size_on_disk();
        power_loss::check(&self.path)
            .and_then(|()| self.file.set_len(size.min(on_disk).max(self.len)))
            .context(|| format!("cutting {} back to {size} bytes", self.path.display()))
    }

    /// Hand buffered bytes to the OS (they survive a process crash from here on).
    pub fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let buf = std::mem::take(&mut self.buf);
            let r = self.write_through(&buf);
            self.buf = buf;
            self.buf.clear();
            r?;
        }
        Ok(())
    }

    /// Flush and fdatasync: the bytes survive power loss from here on.
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        sync_data(&self.file, &self.path)?;
        power_loss::synced(&self.path, self.len);
        self.counters.add_fsync();
        Ok(())
    }
}

impl AppendFile {
    /// A handle that fsyncs what the file holds now without holding the file: appends may go
    /// on meanwhile (what they add is not covered). Flushes the write buffer first.
    pub fn sync_point(&mut self) -> Result<SyncPoint> {
        self.flush()?;
        let file = self
            .file
            .try_clone()
            .context(|| format!("duplicating the handle of {}", self.path.display()))?;
        Ok(SyncPoint {
            file,
            path: self.path.clone(),
            len: self.len,
            counters: self.counters.clone(),
        })
    }

    /// Stop appending: hand buffered bytes to the OS and return the file, to be synced later
    /// by whichever thread needs it durable first.
    pub fn into_pending_sync(mut self) -> Result<PendingSync> {
        self.flush()?;
        Ok(PendingSync {
            len: self.len,
            file: self.file,
            path: self.path,
            synced: AtomicBool::new(false),
            failed: Mutex::new(None),
            counters: self.counters,
        })
    }
}

/// The first `len` bytes of a file being appended to, to be made durable by another thread
/// than the appender's ([`AppendFile::sync_point`]).
pub struct SyncPoint {
    file: File,
    path: PathBuf,
    len: u64,
    counters: Arc<Counters>,
}

impl SyncPoint {
    /// fdatasync: the first [`len`](Self::len) bytes survive power loss from here on.
    pub fn sync(&self) -> Result<()> {
        sync_data(&self.file, &self.path)?;
        power_loss::synced_at_least(&self.path, self.len);
        self.counters.add_fsync();
        Ok(())
    }

    pub fn len(&self) -> u64 {
        self.len
    }
}

/// A finished file that is not yet known to be durable.
pub struct PendingSync {
    len: u64,
    file: File,
    path: PathBuf,
    synced: AtomicBool,
    /// The first failed fsync, returned by every later call: never retried, since after a
    /// failed fsync the kernel may have dropped the dirty pages and a second one would report
    /// success for data that is gone.
    failed: Mutex<Option<crate::error::Error>>,
    counters: Arc<Counters>,
}

impl PendingSync {
    /// fdatasync, unless it was already done (or already failed: then that error again).
    pub fn sync(&self) -> Result<()> {
        if self.synced.load(Acquire) {
            return Ok(());
        }
        let mut failed = crate::util::sync::lock(&self.failed);
        if let Some(e) = &*failed {
            return Err(e.clone());
        }
        if self.synced.load(Acquire) {
            return Ok(()); // by another thread, while this one waited
        }
        sync_data(&self.file, &self.path).inspect_err(|e| *failed = Some(e.clone()))?;
        power_loss::synced(&self.path, self.len);
        self.counters.add_fsync();
        self.synced.store(true, Release);
        Ok(())
    }
}

/// fdatasync each of `files`, up to `threads` at a time. A file system that journals commits
/// one journal transaction for the fsyncs that arrive together (ext4's jbd2, XFS's log):
/// a spill's tens of new lists, each synced as it was finished, waited for a commit each.
/// Returns the first failure (each file's own is kept, see [`PendingSync::sync`]).
pub fn sync_together(files: &[PendingSync], threads: usize) -> Result<()> {
    if files.len() < 2 || threads < 2 {
        return files.iter().try_for_each(PendingSync::sync);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || -> Result<()> {
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match files.get(i) {
                Some(f) => f.sync()?,
                None => return Ok(()),
            }
        }
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads.min(files.len()))
            .map(|_| scope.spawn(work))
            .collect();
        let mine = work();
        helpers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .fold(mine, Result::and)
    })
}

/// fdatasync `file` (at `path`), or the fault injected there.
/// fdatasync the file at `path`, as it is.
pub fn sync_file(path: &Path) -> Result<()> {
    let file = File::open(path).context(|| format!("opening {}", path.display()))?;
    sync_data(&file, path)?;
    let len = file.metadata().map_or(0, |m| m.len());
    power_loss::synced(path, len);
    Ok(())
}

fn sync_data(file: &File, path: &Path) -> Result<()> {
    fault(path, Op::Sync)
        .and_then(|()| file.sync_data())
        .context(|| format!("syncing {}", path.display()))
}

/// Open a list file for positional reads. A GET reads one page at a random place, so the
/// kernel's readahead is turned off: it would read several pages per GET from the device (9.7
/// KiB per 4 KiB page read, measured on a store larger than its page cache). Merges read big
/// chunks and need no readahead.
pub fn open_read(path: &Path) -> Result<File> {
    let file = fault(path, Op::Read)
        .and_then(|()| File::open(path))
        .context(|| format!("opening {}", path.display()))?;
    // SAFETY: advice on a valid open descriptor; a failure only leaves readahead on.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    Ok(file)
}

/// A whole file mapped read-only into memory: a point read slices the page it wants out of the
/// map, with no system call and no copy (LevelDB maps its table files the same way). Only
/// files that never change once written are mapped — list files.
///
/// An I/O error on a mapped page cannot be returned: the kernel stops the process with
/// `SIGBUS` instead. That is why mapping is an option (`Options::mmap_reads`).
pub struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the map is read-only and never moves; it is unmapped once, when dropped.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Map the first `len` bytes of `file` (at `path`; `len` at least 1), for random reads.
    pub fn new(file: &File, path: &Path, len: u64) -> Result<Mapping> {
        let context = || format!("mapping {} bytes of {}", len, path.display());
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))
            .context(context)?;
        // SAFETY: a fresh read-only shared mapping of an open descriptor; the kernel chooses
        // the address. The file is immutable (see the type's doc), so the bytes behind the
        // slices `read` hands out do not change.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context(context);
        }
        // A GET touches one page at a random place: no readahead (as `open_read`). Advice
        // only; a refusal leaves readahead on.
        // SAFETY: advice on the range just mapped.
        unsafe { libc::madvise(ptr, len, libc::MADV_RANDOM) };
        Ok(Mapping { ptr, len })
    }

    /// The `len` bytes at `offset`; past the end of the map is an `UnexpectedEof` error, as a
    /// `pread` past the end of the file.
    pub fn read(&self, path: &Path, offset: u64, len: usize) -> Result<&[u8]> {
        fault(path, Op::Read)
            .and_then(|()| {
                self.bytes(offset, len)
                    .ok_or_else(|| std::io::ErrorKind::UnexpectedEof.into())
            })
            .context(|| format!("reading {len} bytes at {offset} of {}", path.display()))
    }

    /// The `len` bytes at `offset` as a slice, untouched (`None` past the end of the map):
    /// where a prefetch hint points, which reads nothing and so can fail at nothing.
    pub fn bytes(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len).filter(|&end| end <= self.len)?;
        // SAFETY: `start..end` lies inside the map, which lives as long as `self`.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>().add(start), end - start) })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range `new` mapped; no slice of it outlives `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Read a whole (small) file.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    fault(path, Op::Read)
        .and_then(|()| fs::read(path))
        .context(|| format!("reading {}", path.display()))
}

/// Read exactly `len` bytes at `offset`; a file shorter than that is an `UnexpectedEof` error.
pub fn read_at(file: &File, path: &Path, offset: u64, len: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; len];
    read_into(file, path, offset, &mut buf)?;
    Ok(buf)
}

/// [`read_at`] into `buf`, filling it.
pub fn read_into(file: &File, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    fault(path, Op::Read)
        .and_then(|()| file.read_exact_at(buf, offset))
        .context(|| {
            format!(
                "reading {} bytes at {offset} of {}",
                buf.len(),
                path.display()
            )
        })
}

/// Create a new file at `path`, for reading and writing; fails if it exists.
fn create_new(path: &Path) -> Result<File> {
    fault(path, Op::Create)
        .and_then(|()| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(path)
        })
        .context(|| format!("creating {}", path.display()))
}

/// Create a scratch file for derived data at `path`, and unlink it at once: it lives as long as
/// its descriptor, and a crash leaves nothing behind. (Should the unlink fail, the file stays
/// under its name until the next open removes it.)
pub fn create_scratch(path: &Path) -> Result<File> {
    let file = create_new(path)?;
    // SAFETY: advice on a valid open descriptor; a failure only leaves readahead on.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    remove_file(path)?;
    Ok(file)
}

/// Write all of `data` at `offset` of `file` (no fsync: for scratch files).
pub fn write_at(
    file: &File,
    path: &Path,
    offset: u64,
    data: &[u8],
    counters: &Counters,
) -> Result<()> {
    fault(path, Op::Write)
        .and_then(|()| file.write_all_at(data, offset))
        .context(|| {
            format!(
                "writing {} bytes at {offset} of {}",
                data.len(),
                path.display()
            )
        })?;
    counters.add_disk_write(data.len() as u64);
    Ok(())
}

/// Write a whole small file durably under `name` in `dir`: write a temporary, fsync it, rename
/// it over `name`, fsync the folder. A crash leaves either the old file or the new one.
pub fn write_atomically(
    dir: &Path,
    name: &str,
    data: &[u8],
    counters: &Arc<Counters>,
) -> Result<()> {
    write_and_rename(dir, name, data, counters, true)?;
    sync_dir(dir)
}

/// Replace `name` in `dir` by a file of `data`, through a temporary and a rename, without
/// fsync: for derived data that is checked when read (a power loss may leave the old file,
/// the new one, or a damaged one).
pub fn replace_unsynced(
    dir: &Path,
    name: &str,
    data: &[u8],
    counters: &Arc<Counters>,
) -> Result<()> {
    write_and_rename(dir, name, data, counters, false)
}

/// Write `data` to `name.tmp` in `dir` (and fsync it if `sync`), then rename it over `name`.
fn write_and_rename(
    dir: &Path,
    name: &str,
    data: &[u8],
    counters: &Arc<Counters>,
    sync: bool,
) -> Result<()> {
    let tmp = dir.join(format!("{name}.tmp"));
    let _ = fs::remove_file(&tmp);
    (counters.metadata_write_bytes)
        .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
    let mut f = AppendFile::create(&tmp, counters.clone())?;
    let written = f
        .append(data)
        .and_then(|()| if sync { f.sync() } else { f.flush() });
    if let Err(e) = written {
        // A full disk, say: leave nothing behind (the old file is untouched).
        drop(f);
        let _ = remove_file(&tmp);
        return Err(e);
    }
    drop(f);
    rename(&tmp, &dir.join(name))
}

/// fsync a folder so that file creations, renames and removals in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    fault(dir, Op::Sync)
        .and_then(|()| File::open(dir))
        .and_then(|d| d.sync_all())
        .context(|| format!("syncing folder {}", dir.display()))?;
    power_loss::folder_synced(dir);
    Ok(())
}

/// Rename `from` into place as `to` (in the same folder): durable once the folder is synced.
fn rename(from: &Path, to: &Path) -> Result<()> {
    fault(to, Op::Rename).context(|| format!("renaming {} to {}", from.display(), to.display()))?;
    rename_file(from, to)
}

/// [`rename`] for callers to whom a failure costs only a file to reuse (recycled logs: see
/// `wal::free_logs`), not a point of injected faults — as removals are not.
pub fn rename_file(from: &Path, to: &Path) -> Result<()> {
    power_loss::check(to)
        .inspect(|()| power_loss::renaming(from, to))
        .and_then(|()| fs::rename(from, to))
        .context(|| format!("renaming {} to {}", from.display(), to.display()))
}

pub fn remove_file(path: &Path) -> Result<()> {
    let removed = power_loss::check(path)
        .inspect(|()| power_loss::removing(path))
        .and_then(|()| fs::remove_file(path));
    match removed {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r.context(|| format!("removing {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files synced together, several at a time: each is synced once, and a failure of one
    /// (injected) is returned, and returned again by that file's own `sync` (never retried).
    #[test]
    fn files_synced_together_report_the_one_that_failed() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let files = |names: &[&str]| -> Vec<PendingSync> {
            names
                .iter()
                .map(|n| {
                    let mut f = AppendFile::create(&dir.path().join(n), counters.clone()).unwrap();
                    f.append(b"data").unwrap();
                    f.into_pending_sync().unwrap()
                })
                .collect()
        };
        let ok = files(&["a", "b", "c", "d", "e"]);
        sync_together(&ok, 3).unwrap();
        assert_eq!(
            counters.fsyncs.load(std::sync::atomic::Ordering::Relaxed),
            5
        );
        // Synced already: nothing more to do.
        sync_together(&ok, 3).unwrap();
        assert_eq!(
            counters.fsyncs.load(std::sync::atomic::Ordering::Relaxed),
            5
        );
        let more = files(&["f.list", "g", "h", "i"]);
        let _failing = faults::fail(dir.path(), faults::Op::Sync, ".list", 0);
        assert!(sync_together(&more, 4).is_err());
        assert!(more[0].sync().is_err(), "a failed fsync is not retried");
        assert!(more[1..].iter().all(|f| f.sync().is_ok()));
    }

    /// Copies through the map and `write`s interleave in order; what went through the map is
    /// in the file at once (another reader sees it: it is in the page cache), windows follow
    /// one another, and a cut takes the space set aside.
    #[test]
    fn appends_through_the_map_and_by_write_interleave_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut f = AppendFile::create(&path, Arc::default())
            .unwrap()
            .mapped(true);
        let mut expect = Vec::new();
        let mut n = 0u32;
        // Past one window, so that a second one is mapped.
        while expect.len() < append_map::WINDOW as usize + (1 << 20) {
            let chunk = vec![(n % 251) as u8 + 1; 1000 + (n as usize % 5000)];
            if n.is_multiple_of(7) {
                f.append(&chunk).unwrap();
                f.flush().unwrap();
            } else {
                f.append_through_map(&chunk).unwrap();
            }
            expect.extend_from_slice(&chunk);
            n += 1;
            if n.is_multiple_of(100) {
                let on_disk = std::fs::read(&path).unwrap();
                assert_eq!(&on_disk[..expect.len()], &expect[..], "after {n} appends");
                assert!(on_disk[expect.len()..].iter().all(|&b| b == 0));
            }
        }
        assert_eq!(f.len(), expect.len() as u64);
        f.sync().unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert!(on_disk.len() > expect.len(), "space set aside past the end");
        assert_eq!(&on_disk[..expect.len()], &expect[..]);
        f.cut_to(f.len()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), expect);
        // Appending goes on after a cut, by either way.
        f.append_through_map(b"after").unwrap();
        f.append(b" the cut").unwrap();
        f.flush().unwrap();
        expect.extend_from_slice(b"after the cut");
        assert_eq!(&std::fs::read(&path).unwrap()[..expect.len()], &expect[..]);
    }

    #[test]
    fn a_failed_fsync_is_never_retried() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = AppendFile::create(&dir.path().join("f"), Arc::default()).unwrap();
        f.append(b"bytes the kernel may have dropped").unwrap();
        let pending = f.into_pending_sync().unwrap();
        let fault = faults::fail_once(dir.path(), &[Op::Sync], 0);
        assert!(pending.sync().is_err());
        // The fault is gone, yet the second call reports the first failure without an fsync.
        assert!(pending.sync().is_err());
        assert_eq!((fault.hits(), fault.seen()), (1, 1));
    }
}
