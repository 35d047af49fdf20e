//! Opening a store: decide that the folder is a store (or may become one), lock it, read the
//! manifest, remove what an interrupted spill left behind, and replay the logs the tree does
//! not yet hold. A read-only open only reads: no lock file, no recovery writes, no new log.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};

use super::commit::Waiter;
use super::keyspace::KsDef;
use super::lock::FolderLock;
use super::spill::Spill;
use super::spill::Spills;
use super::writer::{Writer, WriterState};
use super::{Inner, Part, Version};
use crate::batch;
use crate::buffer::Buffer;
use crate::error::{Error, IoContext, Result};
use crate::files::{self, FileKind};
use crate::io;
use crate::list::{self, Handles, MapBudget};
use crate::manifest::{self, Meta};
use crate::options::Options;
use crate::stats::Counters;
use crate::tree::{selector_index, SelectorParams, TierFile, Tree};
use crate::wal::{self, LogWriter};

/// What an open may do to the folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    ReadWrite,
    ReadOnly,
}

pub(super) fn open(dir: &Path, mut opts: Options, mode: Mode) -> Result<Arc<Inner>> {
    opts.validate()?;
    let may_create = mode == Mode::ReadWrite && opts.create_if_missing;
    if !folder_exists(dir)? {
        if !may_create {
            return Err(no_store(dir, "the folder does not exist"));
        }
        fs::create_dir_all(dir).context(|| format!("creating folder {}", dir.display()))?;
    }
    // Decide before locking, so that a folder that is not a store gets no LOCK file; and
    // again under the lock, where nobody else changes the folder.
    what_is_there(dir, &folder_names(dir)?, may_create)?;
    let lock = match mode {
        Mode::ReadWrite => FolderLock::acquire(dir)?,
        Mode::ReadOnly => FolderLock::share(dir)?,
    };
    let counters = Arc::new(Counters::default());
    let mut names = folder_names(dir)?;
    if let Found::Nothing { leftovers } = what_is_there(dir, &names, may_create)? {
        create_store(dir, &leftovers, &opts, &counters)?;
        names = folder_names(dir)?;
    }
    let fd_limit = list::raise_open_file_limit();
    let mut handles = Handles::new(opts.max_open_files, fd_limit, counters.clone());
    if opts.mmap_reads {
        handles = handles.with_maps(MapBudget::process());
    }
    let handles = Arc::new(handles);
    let (mut meta, mut trees) = manifest::read(dir, &handles)?;
    // The list files are read at their first use (see `list::file`), but one the manifest
    // names and the folder lacks, or holds cut short, is damage to report now.
    check_list_sizes(&trees)?;
    match opts.key_order {
        // A writer that asked for an order must get it; a reader reads whatever is there.
        Some(requested) if requested != meta.order && mode == Mode::ReadWrite => {
            return Err(Error::KeyOrderMismatch {
                stored: meta.order,
                requested,
            });
        }
        _ => opts.key_order = Some(meta.order),
    }
    adopt_operator(dir, &mut opts, mode, &mut meta, &trees, &counters)?;
    let defs = keyspace_defs(&opts, &meta);
    // Selectors are built from their lists' fingerprints where none was saved: use the cores.
    let budget = super::budget::Budget::new(&opts, TierFile::new(dir, counters.clone()));
    let cores = crate::util::cores::Cores::new(crate::util::cores::per_machine());
    // Each tree's keyspace id and selector parameters, as the selector index knows them.
    let keys: Vec<_> = defs
        .iter()
        .map(|d| (d.id, crate::tree::SelectorParams::of(&d.opts)))
        .collect();
    let mut saved: Vec<_> = keys
        .iter()
        .zip(trees.iter_mut())
        .map(|(&(id, p), t)| (id, t, p))
        .collect();
    // Nodes take the selectors saved for them, their tiers read at first use; what could not
    // be used (`check` says why) is built below, as before selectors were saved:
    // `Stats::selector_entries_built` tells how much.
    let loaded = selector_index::load(dir, &mut saved, &counters);
    let lists = trees.iter().map(Tree::list_metadata_memory).sum();
    // Held back, with no allowance: the tier merges due (see `selector::Merges`) — spills
    // left them, or a node takes its saved tiers, which merge their own way (see
    // `tree::saved_tier`) — are the spills' to make. Made here, they would read the saved
    // tiers they merge: every one of them, at a billion records, seconds.
    let mut room = budget.selector_room(&opts, lists, &crate::tree::always);
    room.merge_allowance = 0;
    for (tree, &(_, params)) in trees.iter_mut().zip(&keys) {
        // No budget for rebuilding selectors that splits passed on: they answer for their
        // nodes, and spills rebuild them as they go, as before the close.
        let built =
            tree.refresh_selectors(params, &cores, &crate::tree::Rebuilds::none(), &room)?;
        counters.selector_entries_built.fetch_add(built, Relaxed);
    }

    // Numbers are never reused, not even those of orphans about to be removed.
    let mut logs = Vec::new();
    let mut free_logs = Vec::new();
    for name in &names {
        match FileKind::parse(name) {
            Some(FileKind::FreeLog(n)) => {
                meta.next_file = meta.next_file.max(n + 1);
                free_logs.push(n);
            }
            Some(FileKind::List(id) | FileKind::Selectors(id)) => {
                meta.next_file = meta.next_file.max(id + 1)
            }
            Some(FileKind::Log(n)) => {
                meta.next_file = meta.next_file.max(n + 1);
                if n >= meta.log_number {
                    logs.push(n);
                }
            }
            _ => {}
        }
    }
    if mode == Mode::ReadWrite {
        let with: Vec<_> = keys
            .iter()
            .zip(&trees)
            .map(|(&(id, p), t)| (id, t, p))
            .collect();
        save_selectors(dir, &mut meta, &with, &loaded, &counters);
        remove_leftovers(dir, &names, &trees, &meta)?;
    }

    // Replay without spilling: a spill now would cut the log mid-way through what it holds.
    logs.sort_unstable();
    let mut mems: Vec<Buffer> = defs
        .iter()
        .zip(&trees)
        .map(|(d, tree)| {
            let bytes = if d.id == 0 { opts.root_buffer_size } else { 0 };
            let mut mem = Buffer::with_capacity(d.order, d.operator.clone(), 0, bytes);
            if tree.holds_expiry() {
                mem.stamp_operands();
            }
            mem
        })
        .collect();
    // The latest time a replayed group was stamped with: times go on from there.
    let mut time_floor = 0;
    let recovery = wal::recover(dir, &logs, &meta.expect(), |path, encoding, payload| {
        let malformed = || {
            Error::corruption(
                path,
                "a log record with a valid checksum holds malformed writes",
            )
        };
        let at = batch::split_time(payload).0;
        time_floor = time_floor.max(at);
        for r in batch::records(encoding, payload) {
            let (ks, r) = r.map_err(|()| malformed())?;
            match defs.binary_search_by_key(&ks, |d| d.id) {
                Ok(i) => mems[i].put(r.key, r.op, at),
                // A keyspace dropped since: its records go with it.
                Err(_) if ks < meta.next_keyspace => {}
                Err(_) => return Err(malformed()),
            }
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
    let (log, older_logs) = match mode {
        Mode::ReadWrite => {
            let (log, older) = settle_logs(dir, &recovery, &mut meta, &counters)?;
            let log = log.prefill(opts.log_prefill).map_appends(opts.mmap_log);
            // From here on this manifest's promise holds, for one of an older version too:
            // recovery starts in the oldest log kept (no log before it exists).
            meta.log_number = older.first().copied().unwrap_or(log.number());
            meta.logs_promised = true;
            (Some(log), older)
        }
        Mode::ReadOnly => (None, Vec::new()),
    };
    // A read-only open writes no log, and leaves the free ones where they are.
    if mode == Mode::ReadOnly {
        free_logs.clear();
    }
    let free_logs = wal::FreeLogs::adopt(dir, free_logs)?;
    let named_buffered: usize = mems[1..].iter().map(Buffer::memory).sum();
    let parts: Vec<Part> = defs
        .into_iter()
        .zip(mems)
        .zip(trees)
        .map(|((def, mem), tree)| Part {
            def: Arc::new(def),
            mem: Arc::new(mem.into()),
            frozen: None,
            tree: Arc::new(tree),
        })
        .collect();
    let version = Version { parts };
    budget.plan(&opts, version.metadata_memory());
    let full = version
        .buffers()
        .map(|b| super::read(b).memory())
        .sum::<usize>()
        >= budget.buffer_limit();
    let spill_cores = crate::util::cores::Cores::new(opts.spill_cores());
    let inner = Arc::new(Inner {
        dir: dir.to_owned(),
        opts,
        counters,
        handles,
        current: RwLock::new(Arc::new(version)),
        writer: Writer::new(WriterState {
            log,
            older_logs,
            spilling: None,
            frozen_bytes: 0,
            pace: Default::default(),
            retired_log: None,
            poisoned: None,
            closed: false,
            syncer: None,
            seq: 0,
            named_buffered,
            conflicts: Default::default(),
            touched: Vec::new(),
            time_floor,
            scratch: Vec::new(),
        }),
        next_file: AtomicU64::new(meta.next_file),
        free_logs,
        durable_meta: Mutex::new(meta),
        spills: Spills::default(),
        budget,
        spill_cores,
        visible: AtomicU64::new(0),
        marking: AtomicBool::new(false),
        tracking: AtomicBool::new(false),
        transactions: Mutex::default(),
        dropped: Mutex::default(),
        store_id: super::keyspace::next_store_id(),
        folder_lock: Mutex::new(Some(lock)),
        preload: Mutex::default(),
    });
    inner.start_preload();
    if full && mode == Mode::ReadWrite {
        // The replayed buffer is full (a writer may fill one up to twice the limit while a
        // spill runs, and the limit may be lower now): freeze it as a writer would. With
        // background spills it spills as theirs do and `open` returns at once: reads go on
        // meanwhile, writes as after any freeze (a spill into a billion-record tree takes
        // seconds). Otherwise it spills here, its upkeep left to the spills after it:
        // an open would else run the backlog a close left (see `Spill::BufferOnly`). Without
        // room for the spill, it is put off as any spill is (see `PutOff`): the store opens,
        // reads work, and the recovered records wait in memory and in the logs.
        let mut w = inner.writer.lock();
        let spill = if inner.opts.background_spills {
            Spill::Background
        } else {
            Spill::BufferOnly
        };
        let frozen = inner.freeze_or_keep(&mut w, spill, Waiter::Caller);
        if frozen.is_err() && !inner.has_put_off() {
            return frozen.map(|()| unreachable!());
        }
    }
    Ok(inner)
}

/// Check the options' merge operator against the one the store records. A store that never
/// had one takes the options' (recorded at once, before any operand can reach the log); one
/// that has one opens only with an operator of that name, since it may hold operands only that
/// operator folds: the options' own, or the built-in of that name when they give none.
fn adopt_operator(
    dir: &Path,
    opts: &mut Options,
    mode: Mode,
    meta: &mut Meta,
    trees: &[Tree],
    counters: &Arc<Counters>,
) -> Result<()> {
    let given = opts.operator_name();
    match (&meta.operator, &given) {
        (stored, given) if stored == given => Ok(()),
        (Some(stored), None) if opts.resolve_operator(stored).is_some() => {
            opts.merge_operator = opts.resolve_operator(stored);
            Ok(())
        }
        (None, Some(_)) => {
            if mode == Mode::ReadWrite {
                let adopted = Meta {
                    operator: given,
                    ..meta.clone()
                };
                manifest::write(dir, &adopted, &trees.iter().collect::<Vec<_>>(), counters)?;
                *meta = adopted;
            }
            Ok(())
        }
        (stored, given) => Err(Error::MergeOperatorMismatch {
            stored: stored.clone(),
            given: given.clone(),
        }),
    }
}

/// Whether folder `dir` exists: a file there is `NotAStore`, and anything that keeps it from
/// being looked at (permission denied, say) an I/O error of that kind, never "missing".
pub(crate) fn folder_exists(dir: &Path) -> Result<bool> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(true),
        Ok(_) => Err(no_store(dir, "not a folder")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(format!("reading {}", dir.display()), e)),
    }
}

fn no_store(dir: &Path, why: &str) -> Error {
    Error::NotAStore {
        path: dir.to_owned(),
        reason: why.into(),
    }
}

/// What a folder holds, as far as opening it goes.
enum Found {
    /// A store: it has a manifest.
    Store,
    /// No store, and nothing but what an interrupted creation leaves (listed): a store may
    /// be created here.
    Nothing { leftovers: Vec<String> },
}

/// Whether `dir`, holding `names`, is a store or may become one. Creating a store writes its
/// first log, then its manifest: a folder with a lock file, a temporary manifest or logs
/// that hold no record, and no manifest, is one whose creation was cut short.
fn what_is_there(dir: &Path, names: &[String], may_create: bool) -> Result<Found> {
    if names.iter().any(|n| n == files::MANIFEST) {
        return Ok(Found::Store);
    }
    let mut leftovers = Vec::new();
    for name in names {
        let kind = FileKind::parse(name);
        let ours = match kind {
            Some(FileKind::Log(_)) => {
                let len = fs::metadata(dir.join(name))
                    .context(|| format!("reading size of {}", dir.join(name).display()))?
                    .len();
                len <= wal::HEADER_LEN as u64
            }
            Some(FileKind::Lock | FileKind::ManifestTemp) => true,
            _ => false,
        };
        if !ours {
            return Err(no_store(
                dir,
                &format!("the folder has no MANIFEST but holds other files (such as {name})"),
            ));
        }
        if kind != Some(FileKind::Lock) {
            leftovers.push(name.clone());
        }
    }
    if !may_create {
        return Err(no_store(dir, "the folder holds no MANIFEST"));
    }
    Ok(Found::Nothing { leftovers })
}

/// Create an empty store: its first log, durably, then the manifest that names it.
fn create_store(
    dir: &Path,
    leftovers: &[String],
    opts: &Options,
    counters: &Arc<Counters>,
) -> Result<()> {
    for name in leftovers {
        io::remove_file(&dir.join(name))?;
    }
    let meta = Meta::new(1, opts.order(), opts.operator_name());
    let mut log = LogWriter::create(dir, meta.log_number, counters.clone())?;
    log.sync()?;
    io::sync_dir(dir)?;
    manifest::write(dir, &meta, &[&Tree::new()], counters)
}

/// The keyspaces `meta` records, by id, with what they fold and order by (the default
/// keyspace's from `opts`, which `adopt_operator` settled; a named keyspace's operator, if
/// the store's options know its name).
fn keyspace_defs(opts: &Options, meta: &Meta) -> Vec<KsDef> {
    let default = KsDef::new(
        0,
        "",
        opts,
        opts.order(),
        opts.merge_operator.clone(),
        opts.operator_name(),
    );
    let named = meta.keyspaces.iter().map(|k| {
        let operator = k.operator.as_deref().and_then(|n| opts.resolve_operator(n));
        KsDef::new(k.id, &k.name, opts, k.order, operator, k.operator.clone())
    });
    std::iter::once(default).chain(named).collect()
}

/// Leave on disk exactly what recovery kept, durably, and choose the log writes go on in:
/// the newest, if this version can append to it, or a new one. Returns it and the logs before
/// it.
///
/// Order matters. The logs after a cut go first (and durably): were the cut log shortened
/// first and the machine stopped then, the next open would find nothing wrong with it and
/// replay the later logs — writes without the ones before them. Every log kept is synced
/// before anything is written, so that the claims new records make about what is durable
/// (see `wal::format`) hold for every earlier log too. A log whose header never reached the
/// disk is started afresh under its own number, which the manifest or a link may name.
fn settle_logs(
    dir: &Path,
    recovery: &wal::Recovery,
    meta: &mut Meta,
    counters: &Arc<Counters>,
) -> Result<(LogWriter, Vec<u64>)> {
    for &n in &recovery.dropped_logs {
        io::remove_file(&crate::files::log_path(dir, n))?;
    }
    if !recovery.dropped_logs.is_empty() {
        io::sync_dir(dir)?;
    }
    let mut older = Vec::new();
    let mut kept = recovery.kept.iter().peekable();
    while let Some(k) = kept.next() {
        let newest = kept.peek().is_none();
        let log = match k.version {
            None => Some(LogWriter::restart(dir, k.number, counters.clone())?),
            Some(wal::VERSION) if newest => Some(LogWriter::reopen(
                dir,
                k.number,
                k.valid_len,
                k.sealed,
                counters.clone(),
            )?),
            // Whole up to its link: only made durable, with what lies past it (which a full
            // disk could not cut anyway).
            Some(_) if k.linked => {
                io::sync_file(&crate::files::log_path(dir, k.number))?;
                None
            }
            Some(_) => {
                let path = crate::files::log_path(dir, k.number);
                io::AppendFile::reopen(&path, k.valid_len, counters.clone())?.sync()?;
                None
            }
        };
        match log {
            Some(log) if newest => return Ok((log, older)),
            _ => older.push(k.number),
        }
    }
    // The newest log is of an older version (or there is none): go on in a new one.
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

/// Save the selectors open had to build, and the index of them all (see
/// `tree::selector_index`), unless the index read at open (`loaded`) named them all already.
/// Best effort: a store opens on a full disk, and the next open builds what is not saved.
fn save_selectors(
    dir: &Path,
    meta: &mut Meta,
    trees: &[(u32, &Tree, Option<SelectorParams>)],
    loaded: &selector_index::Loaded,
    counters: &Arc<Counters>,
) {
    let next_file = AtomicU64::new(meta.next_file);
    let _ = selector_index::save(
        dir,
        &next_file,
        trees,
        counters,
        !loaded.problems.is_empty(),
    );
    meta.next_file = next_file.into_inner();
}

/// Remove what a crash mid-spill can leave: list files no node refers to, logs the tree
/// already holds, a half-written manifest, a selector scratch file that was never unlinked,
/// selector files no tree holds. Files Spillway does not name are left alone.
/// An error naming the first list file of `trees` the folder lacks, or holds at a size other
/// than the manifest's: a file cut short (a copy of the store that stopped part-way, say) is
/// found by the open, as when every list file was read with it, for a `stat` per file.
fn check_list_sizes(trees: &[Tree]) -> Result<()> {
    for tree in trees {
        for file in tree.files().values() {
            let path = file.path();
            let size = match fs::metadata(path) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(Error::corruption(
                        path,
                        "the manifest names this list file, and it is missing",
                    ))
                }
                Err(e) => return Err(e).context(|| format!("reading size of {}", path.display())),
            };
            if size != file.size() {
                return Err(Error::corruption(
                    path,
                    format!(
                        "the list file is {size} bytes, where the manifest has {} (cut short, \
                         or another file)",
                        file.size()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn remove_leftovers(dir: &Path, names: &[String], trees: &[Tree], meta: &Meta) -> Result<()> {
    let live: std::collections::BTreeSet<u64> = trees.iter().flat_map(Tree::live_files).collect();
    let selector_files: std::collections::BTreeSet<u64> = trees
        .iter()
        .flat_map(|t| t.selector_files().into_keys())
        .collect();
    for name in names {
        let dead = match FileKind::parse(name) {
            Some(FileKind::List(id)) => !live.contains(&id),
            Some(FileKind::Selectors(id)) => !selector_files.contains(&id),
            Some(FileKind::Log(n)) => n < meta.log_number,
            Some(FileKind::ManifestTemp | FileKind::Scratch | FileKind::SelectorIndexTemp) => true,
            Some(
                FileKind::Manifest
                | FileKind::Lock
                | FileKind::SelectorIndex
                | FileKind::FreeLog(_),
            )
            | None => false,
        };
        if dead {
            io::remove_file(&dir.join(name))?;
        }
    }
    Ok(())
}
