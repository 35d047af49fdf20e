//! Opening a store: lock the folder, read the manifest, remove what an interrupted spill left
//! behind, and replay the logs the tree does not yet hold.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use super::commit::Spill;
use super::lock::{FolderLock, LOCK_FILE};
use super::{Inner, Version, WriterState};
use crate::batch;
use crate::buffer::Buffer;
use crate::error::{Error, IoContext, Result};
use crate::io;
use crate::list::format as list_format;
use crate::manifest::{self, Meta};
use crate::options::Options;
use crate::stats::Counters;
use crate::tree::Tree;
use crate::wal::{self, LogWriter};
use crate::write_queue::WriteQueue;

pub(super) fn open(dir: &Path, opts: Options) -> Result<Arc<Inner>> {
    opts.validate()?;
    if !dir.exists() {
        if !opts.create_if_missing {
            return Err(Error::NotAStore {
                path: dir.to_owned(),
                reason: "the folder does not exist and create_if_missing is false".into(),
            });
        }
        fs::create_dir_all(dir).context(|| format!("creating folder {}", dir.display()))?;
    } else if !dir.is_dir() {
        return Err(Error::NotAStore {
            path: dir.to_owned(),
            reason: "not a folder".into(),
        });
    }
    let lock = FolderLock::acquire(dir)?;
    let counters = Arc::new(Counters::default());

    let names = folder_names(dir)?;
    let (mut meta, tree) = if names.iter().any(|n| n == manifest::FILE_NAME) {
        manifest::read(dir)?
    } else {
        let ours = |n: &String| n == LOCK_FILE || *n == format!("{}.tmp", manifest::FILE_NAME);
        if let Some(foreign) = names.iter().find(|n| !ours(n)) {
            return Err(Error::NotAStore {
                path: dir.to_owned(),
                reason: format!(
                    "the folder has no MANIFEST but holds other files (such as {foreign})"
                ),
            });
        }
        let meta = Meta {
            next_file: 2,
            log_number: 1,
        };
        let tree = Tree::new();
        manifest::write(dir, meta, &tree, &counters)?;
        (meta, tree)
    };

    // Numbers are never reused, not even those of orphans about to be removed.
    let mut logs = Vec::new();
    for name in &names {
        if let Some(id) = list_format::parse_file_name(name) {
            meta.next_file = meta.next_file.max(id + 1);
        } else if let Some(n) = wal::parse_file_name(name) {
            meta.next_file = meta.next_file.max(n + 1);
            if n >= meta.log_number {
                logs.push(n);
            }
        }
    }
    remove_leftovers(dir, &names, &tree, meta)?;

    // Replay without spilling: a spill now would cut the log mid-way through what it holds.
    logs.sort_unstable();
    let mut mem = Buffer::with_capacity(0, opts.root_buffer_size);
    let recovery = wal::recover(dir, &logs, |path, payload| {
        for r in batch::records(payload) {
            let r = r.map_err(|()| {
                Error::corruption(
                    path,
                    "a log record with a valid checksum holds malformed writes",
                )
            })?;
            mem.put(r.key, r.value);
        }
        Ok(())
    })?;
    counters
        .log_records_replayed
        .store(recovery.records, Relaxed);
    counters.log_records_dropped.store(
        recovery.cut.as_ref().map_or(0, |c| c.records_dropped),
        Relaxed,
    );
    let (log, logs) = settle_logs(dir, &recovery, &mut meta, &counters)?;
    let full = mem.memory() >= opts.root_buffer_size;
    let inner = Arc::new(Inner {
        dir: dir.to_owned(),
        opts,
        counters,
        current: RwLock::new(Arc::new(Version {
            mem: Arc::new(mem.into()),
            frozen: None,
            tree: Arc::new(tree),
        })),
        queue: WriteQueue::default(),
        writer: Mutex::new(WriterState {
            log,
            older_logs: logs,
            spilling: None,
            retired_log: None,
            poisoned: None,
            closed: false,
        }),
        next_file: AtomicU64::new(meta.next_file),
        spill_error: Mutex::new(None),
        spill_retry: Mutex::new(None),
        _lock: lock,
    });
    if full {
        // Recovery is complete when `open` returns: spill here rather than in the background.
        let mut w = inner.writer();
        inner.freeze(&mut w, Spill::Inline)?;
    }
    Ok(inner)
}

/// Leave on disk exactly what recovery kept, durably, and choose the log writes go on in:
/// the newest, if this version can append to it, or a new one. Returns it and the logs before
/// it.
///
/// Order matters. The logs after a cut go first (and durably): were the cut log shortened
/// first and the machine stopped then, the next open would find nothing wrong with it and
/// replay the later logs — writes without the ones before them. Every log kept is synced
/// before anything is written, so that the claims new records make about what is durable
/// (see `wal::format`) hold for every earlier log too.
fn settle_logs(
    dir: &Path,
    recovery: &wal::Recovery,
    meta: &mut Meta,
    counters: &Arc<Counters>,
) -> Result<(LogWriter, Vec<u64>)> {
    for &n in &recovery.dropped_logs {
        io::remove_file(&dir.join(wal::file_name(n)))?;
    }
    if !recovery.dropped_logs.is_empty() {
        io::sync_dir(dir)?;
    }
    let mut older = Vec::new();
    let mut kept = recovery.kept.iter().peekable();
    while let Some(k) = kept.next() {
        let path = dir.join(wal::file_name(k.number));
        if kept.peek().is_none() && k.version == Some(wal::VERSION) {
            let log = LogWriter::reopen(dir, k.number, k.valid_len, k.sealed, counters.clone())?;
            return Ok((log, older));
        }
        if k.valid_len == 0 {
            // No header: it holds nothing.
            io::remove_file(&path)?;
        } else {
            io::AppendFile::reopen(&path, k.valid_len, counters.clone())?.sync()?;
            older.push(k.number);
        }
    }
    let log = LogWriter::create(dir, meta.next_file, counters.clone())?;
    meta.next_file += 1;
    io::sync_dir(dir)?;
    Ok((log, older))
}

fn folder_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).context(|| format!("listing {}", dir.display()))? {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// Remove what a crash mid-spill can leave: list files no node refers to, logs the tree
/// already holds, a half-written manifest. Files Spillway does not name are left alone.
fn remove_leftovers(dir: &Path, names: &[String], tree: &Tree, meta: Meta) -> Result<()> {
    let live = tree.live_files();
    for name in names {
        let dead = match (
            list_format::parse_file_name(name),
            wal::parse_file_name(name),
        ) {
            (Some(id), _) => !live.contains(&id),
            (_, Some(n)) => n < meta.log_number,
            _ => *name == format!("{}.tmp", manifest::FILE_NAME),
        };
        if dead {
            io::remove_file(&dir.join(name))?;
        }
    }
    Ok(())
}
