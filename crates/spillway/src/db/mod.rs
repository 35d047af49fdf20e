//! [`Db`]: the handle users hold. Data flows one way: `write` → log → root buffer (see
//! `commit`) → a full buffer is frozen and spilled into the tree on a background thread (see
//! `spill`); `open` rebuilds the same state from the manifest and the logs (see `open`). Reads
//! take an immutable [`Version`] and never wait for a spill.

mod budget;
mod commit;
mod conflicts;
mod expiry;
mod iter;
mod keyspace;
pub(crate) mod lock;
mod open;
mod pacing;
mod preload;
mod range_delete;
mod snapshot;
mod transaction;
mod tx_iter;
mod writer;

pub(crate) use open::folder_exists;
mod spill;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::batch::WriteBatch;
use crate::buffer::Buffer;
use crate::error::{Error, Result};
use crate::list::sketch::{self, View};
use crate::list::Handles;
use crate::manifest::{self, Meta};
use crate::options::{Options, WriteOptions, MAX_KEY_LEN};
use crate::order::KeyOrder;
use crate::record::Op;
use crate::stats::{Counters, Stats};
use crate::tree::hunch;
use crate::tree::Tree;
use crate::upsert::fold::{live, Found, Stack};
use crate::util::sync::{lock, read, write};

pub(crate) use conflicts::Reads;
pub use iter::Iter;
pub use keyspace::{Keyspace, KeyspaceOptions};
pub use snapshot::Snapshot;
pub use transaction::Transaction;
pub use tx_iter::TxIter;
use writer::Writer;

/// An open Spillway store. `Send + Sync`: share it between threads behind an `Arc`.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use spillway::{Db, Options, WriteBatch, WriteOptions};
///
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"hello", b"world")?;
/// assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
///
/// let mut batch = WriteBatch::new();
/// batch.put(b"a", b"1");
/// batch.delete(b"hello");
/// db.write(batch, WriteOptions::SYNC)?; // durable once this returns
/// assert_eq!(db.get(b"hello")?, None);
/// db.close()?;
/// # Ok(()) }
/// ```
pub struct Db {
    inner: Arc<Inner>,
}

/// The store behind a [`Db`]. Its state and methods are grouped by role, one file each:
/// `open.rs` builds it; `writer.rs` holds the write path's state (`Writer`: the group-commit
/// queue, the log, the running spill) and `commit.rs` the write path (log the group, apply it
/// to the root buffer, freeze a full buffer); `spill.rs` spills a frozen buffer into the tree
/// and keeps what spills leave for the writer (`Spills`) — it knows nothing of the write
/// path: `commit` hands it a `SpillJob`; this file has the reads and `close`.
struct Inner {
    dir: PathBuf,
    opts: Options,
    counters: Arc<Counters>,
    /// The descriptors of the list files, at most `opts.max_open_files` open.
    handles: Arc<Handles>,
    /// What readers see; replaced (not mutated) when a spill publishes a new tree.
    current: RwLock<Arc<Version>>,
    /// The group-commit queue and the write path's state (see `writer`).
    writer: Writer,
    /// Numbers for new logs (taken by the writer) and list files (taken by spills).
    next_file: AtomicU64,
    /// Retired logs whose files new logs are written over (see `wal::free_logs`).
    free_logs: crate::wal::FreeLogs,
    /// What the manifest on disk says besides the tree (whose durable version is the one
    /// readers see). Changed by whoever writes the manifest: a spill, or `close`.
    durable_meta: Mutex<Meta>,
    /// What spills leave for the writer: a failure, or a spill to run again (see `spill`).
    spills: spill::Spills,
    /// How big the root buffer may grow (see `budget`).
    budget: budget::Budget,
    /// The cores spills (and sweeps) merge on (`Options::spill_threads`); one spill runs at a
    /// time.
    spill_cores: crate::util::cores::Cores,
    /// The number of the last commit readers may see (see `ReadPoint`).
    visible: AtomicU64,
    /// Whether the writer marks where each group starts in the buffers it writes (see
    /// `Buffer::mark`): from the first read point on — 16 bytes a group that a store no
    /// one takes a snapshot of does not pay.
    marking: AtomicBool,
    /// Whether commits are recorded for transactions' checks (from the first transaction on).
    tracking: AtomicBool,
    /// The snapshots of running transactions (number → how many), whose reads the commits'
    /// record must keep (see `conflicts`).
    transactions: Mutex<BTreeMap<u64, usize>>,
    /// This open store among those of the process: what keyspace handles carry, so that one
    /// of another store is refused rather than taken for the keyspace of the same id here.
    store_id: u64,
    /// Names of keyspaces dropped while this handle was open, for errors.
    dropped: Mutex<HashMap<u32, String>>,
    /// Keeps other processes and handles out of the folder for as long as the store is open:
    /// released by `close` (or dropping the `Db`) even while keyspace handles, transactions or
    /// iterators still hold the store, which then refuse writes with [`Error::Closed`].
    folder_lock: Mutex<Option<lock::FolderLock>>,
    /// The background read of the selectors the open left on disk (see `preload`), stopped
    /// by `close`.
    preload: Mutex<Option<crate::util::worker::Worker<preload::Preloading>>>,
}

/// A read that found a key's operands on this many list pages or more writes the value it
/// folded back (see `Inner::write_back`): two page reads where a plain read does one.
const WRITE_BACK_PAGES: u32 = 2;

/// A root buffer shared between the writer, readers and the spill that empties it.
type SharedBuffer = Arc<RwLock<Buffer>>;

/// A consistent view of every keyspace, newest data first in each: the buffer writers fill,
/// the frozen buffer being spilled (if a spill is running), and the tree below them. Only the
/// writer mutates anything here, and only the `mem` buffers; everything else changes by
/// publishing a new `Version`. All keyspaces freeze together (they share the log, which can
/// be retired only once every record in it is spilled), so one spill moves every keyspace's
/// frozen buffer into its tree.
struct Version {
    /// One per keyspace, by id: the default keyspace (id 0) first.
    parts: Vec<Part>,
}

/// One keyspace's part of a [`Version`].
#[derive(Clone)]
struct Part {
    def: Arc<keyspace::KsDef>,
    mem: SharedBuffer,
    frozen: Option<SharedBuffer>,
    tree: Arc<Tree>,
}

impl Part {
    /// The root buffers, newest first.
    fn buffers(&self) -> impl Iterator<Item = &SharedBuffer> {
        std::iter::once(&self.mem).chain(&self.frozen)
    }
}

/// A point in time to read at: a version, and the sequence number of the last write group
/// to see in its buffers (`u64::MAX`: all readers may see; see `Buffer::end_at`). The
/// buffers are the only part of a version that still changes.
#[derive(Clone)]
struct ReadPoint {
    version: Arc<Version>,
    seq: u64,
}

impl ReadPoint {
    /// The newest data, whatever is committed meanwhile: for one lookup, which sees whole
    /// write groups by itself.
    fn now(version: Arc<Version>) -> ReadPoint {
        ReadPoint {
            version,
            seq: u64::MAX,
        }
    }
}

/// What writes get once failure `e` has stopped them.
fn read_only_after(e: &Error) -> Error {
    match e {
        Error::Poisoned { .. } => e.clone(),
        _ => Error::Poisoned {
            reason: e.to_string(),
        },
    }
}

impl Db {
    /// Open the store in folder `path`, creating it if [`Options::create_if_missing`] allows,
    /// and recover every write the log acknowledged.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, open::Mode::ReadWrite).map(|inner| Db { inner })
    }

    /// Open the store in folder `path` for reading only, as RocksDB's `OpenForReadOnly` and
    /// LMDB's `MDB_RDONLY` do: nothing in the folder is written — no lock file, no new log,
    /// no recovery writes (the logs are replayed into memory only) — so it works on a folder
    /// the user may only read, and on a full disk. Any number of read-only handles, in any
    /// processes, may be open at once; none while a writer has the store open, and no writer
    /// while one is (both get [`Error::Locked`]). Writes and [`flush`](Self::flush) return
    /// [`Error::ReadOnly`]. A folder that holds no store is [`Error::NotAStore`]: nothing is
    /// created. Of [`Options`], only the read-side ones matter (`max_open_files`).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.put("k", "v")?;
    /// db.close()?;
    /// let reader = spillway::Db::open_read_only(dir.path(), Default::default())?;
    /// assert_eq!(reader.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(matches!(reader.put("k", "w"), Err(spillway::Error::ReadOnly)));
    /// # Ok(()) }
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        open::open(path.as_ref(), opts, open::Mode::ReadOnly).map(|inner| Db { inner })
    }

    /// Insert or overwrite one key, with [`Options::sync_by_default`] durability.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write_one(|b| b.put(key, value))
    }

    /// Write merge operand `operand` to `key`, with [`Options::sync_by_default`] durability:
    /// an upsert, folded into the key's value by the store's
    /// [merge operator](Options::merge_operator) without reading it now. Reads see the fold
    /// at once; the store does it lazily, wherever the operand meets older records of its
    /// key. [`Error::NoMergeOperator`] without an operator, [`Error::InvalidOperand`] if the
    /// operator refuses the operand; nothing is written then.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::sync::Arc;
    /// use spillway::{operators::U64Add, Db, Options};
    ///
    /// let db = Db::open(dir.path(), Options::default().merge_operator(Arc::new(U64Add)))?;
    /// for _ in 0..3 {
    ///     db.merge("page:/home", 1u64.to_le_bytes())?;
    /// }
    /// assert_eq!(db.get("page:/home")?, Some(3u64.to_le_bytes().to_vec()));
    /// # Ok(()) }
    /// ```
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write_one(|b| b.merge(key, operand))
    }

    /// Delete one key (deleting an absent key is not an error).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write_one(|b| b.delete(key))
    }

    /// Apply a batch atomically: after a crash, all of it or none of it is there.
    pub fn write(&self, batch: WriteBatch, opts: WriteOptions) -> Result<()> {
        self.inner.submit(Cow::Owned(batch), opts, None)
    }

    /// Make every write acknowledged so far durable: an fsync of the log (a write made with
    /// [`WriteOptions::NO_SYNC`] is durable once a later `sync` returns). Writers are not held
    /// up meanwhile: the fsync runs beside their appends, covering what the log held when
    /// `sync` was called. For a server's "fsync every second", or one that makes each round
    /// of unsynced writes durable before it answers them (group commit of its own).
    ///
    /// A failed fsync stops every later write (as a synced write's would: the OS may have
    /// dropped what it did not write).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// let mut batch = spillway::WriteBatch::new();
    /// batch.put("k", "v");
    /// db.write(batch, spillway::WriteOptions::NO_SYNC)?;
    /// db.sync()?; // now a crash cannot lose it
    /// # Ok(()) }
    /// ```
    pub fn sync(&self) -> Result<()> {
        self.inner.sync_log()
    }

    /// The newest value of `key`, or `None` if it is absent or deleted.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let now = ReadPoint::now(self.inner.version());
        self.inner
            .get_at(&now, now.version.default_part(), key.as_ref())
    }

    /// Look up many keys at one point in time: writes committed meanwhile are not seen, so
    /// the answers never show part of an atomic batch.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.put("a", "1")?;
    /// assert_eq!(db.multi_get(&["a", "b"])?, [Some(b"1".to_vec()), None]);
    /// # Ok(()) }
    /// ```
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.snapshot().multi_get(keys)
    }

    /// The store as it is now, for reads that must agree with each other while writes go on
    /// (see [`Snapshot`]).
    pub fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::new(self)
    }

    /// Every key and value, in key order in an ordered store and in hash order in a hashed
    /// one (for full scans, exports and backups), as of now (see [`Iter`]).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?; // hashed
    /// db.put("a", "1")?;
    /// db.put("b", "2")?;
    /// assert_eq!(db.iter().count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn iter(&self) -> Iter {
        // An iterator holds its own read point: the snapshot's, taken now.
        self.snapshot().iter()
    }

    /// The keys in `range` and their values, in key order, as of now (see [`Iter`]): any
    /// range of byte strings — `a..b`, `a..=b`, `a..`, `..b`, `..`. A range that is empty or
    /// inverted (`b..a`) yields nothing. [`Error::NotOrdered`] in a hashed store.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let opts = spillway::Options::default().key_order(spillway::KeyOrder::Ordered);
    /// let db = spillway::Db::open(dir.path(), opts)?;
    /// for i in 0..10u8 {
    ///     db.put([i], [i * 10])?;
    /// }
    /// let got: Vec<_> = db.range([3u8]..[6u8])?.collect::<spillway::Result<_>>()?;
    /// assert_eq!(got, [(vec![3], vec![30]), (vec![4], vec![40]), (vec![5], vec![50])]);
    /// let last = db.range([3u8]..)?.next_back().transpose()?;
    /// assert_eq!(last, Some((vec![9], vec![90])));
    /// # Ok(()) }
    /// ```
    pub fn range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(&self, range: R) -> Result<Iter> {
        self.snapshot().range(range)
    }

    /// The keys starting with `prefix` and their values, in key order, as of now.
    /// [`Error::NotOrdered`] in a hashed store.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let opts = spillway::Options::default().key_order(spillway::KeyOrder::Ordered);
    /// let db = spillway::Db::open(dir.path(), opts)?;
    /// db.put("user:1", "Ada")?;
    /// db.put("user:2", "Grace")?;
    /// db.put("video:1", "...")?;
    /// assert_eq!(db.prefix("user:")?.count(), 2);
    /// # Ok(()) }
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<Iter> {
        self.snapshot().prefix(prefix)
    }

    /// How this store places its keys (fixed when it was created).
    pub fn key_order(&self) -> KeyOrder {
        self.inner.opts.order()
    }

    /// The name of the merge operator this store folds operands with (the one it records, or
    /// the one it was just given): `None` if it has none and refuses merges.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::sync::Arc;
    /// let opts = spillway::Options::default().merge_operator(Arc::new(spillway::operators::U64Add));
    /// spillway::Db::open(dir.path(), opts)?.close()?;
    /// // Opened with no operator given, the store takes the built-in it records.
    /// let db = spillway::Db::open(dir.path(), spillway::Options::default())?;
    /// assert_eq!(db.merge_operator_name(), Some("spillway.u64add"));
    /// # Ok(()) }
    /// ```
    pub fn merge_operator_name(&self) -> Option<&str> {
        self.inner.opts.merge_operator.as_ref().map(|o| o.name())
    }

    /// Spill everything still only in memory (and the log) into the tree, and return once that
    /// is durable; writers wait meanwhile. Writes need no flush to be durable — the log keeps
    /// them — but a flushed store reopens without replaying anything. With background spills
    /// the flush does not wait for upkeep (nodes the spills filled, settled in steps after
    /// them): later spills see to it, as RocksDB's flush leaves compactions to run.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// db.put("k", "v")?;
    /// db.flush()?;
    /// assert_eq!(db.stats().root_spills, 1);
    /// # Ok(()) }
    /// ```
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Counters since open, tree shape and index memory.
    pub fn stats(&self) -> Stats {
        let mut s = Stats::from_counters(&self.inner.counters);
        let version = self.inner.version();
        for part in &version.parts {
            part.tree.describe(part.def.order, &mut s);
        }
        s.buffer_bytes = version
            .buffers()
            .map(|b| read(b).memory() as u64)
            .sum::<u64>();
        s.memory_budget = self.inner.budget.get().unwrap_or(0) as u64;
        s.selector_disk_bytes = self.inner.budget.tiers().disk_bytes();
        s.selector_cache_bytes = self.inner.budget.tiers().cache_bytes() as u64;
        s.buffer_limit = self.inner.budget.buffer_limit() as u64;
        s
    }

    /// The distinct keys the store holds (deleted ones not counted), estimated: from samples
    /// of one key in 256 of each list (within a few percent; see `sketch`), and exactly while
    /// lists are small (an ordered store's may be a key or two off: samples of a page that a
    /// fast-split divided cannot tell which side their keys are on). Unlike [`Stats::live_keys`] (what is on disk), it counts what the root
    /// buffer holds too, and so costs a pass over the buffer's keys. `None` while lists written
    /// before format 5, which have no samples, remain, or if a list cannot be read. It reads
    /// every list file not read since open (see [`Stats::lists_read`]).
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), Default::default())?;
    /// for i in 0..100u32 {
    ///     db.put(i.to_be_bytes(), "v")?;
    /// }
    /// db.flush()?;
    /// db.put(7u32.to_be_bytes(), "again")?;  // in the buffer and on disk: one key
    /// db.delete(8u32.to_be_bytes())?;
    /// assert_eq!(db.estimate_keys(), Some(99));
    /// # Ok(()) }
    /// ```
    pub fn estimate_keys(&self) -> Option<u64> {
        estimate_keys(self.inner.version().default_part())
    }

    /// Change the memory budget (see [`Options::memory_budget`]) while the store runs; `None`
    /// removes it, and the root buffer holds `root_buffer_size` again. The next root buffer
    /// is sized for it; the current one, if it is already over its new size, is spilled by
    /// the next write.
    ///
    /// ```
    /// # fn main() -> spillway::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = spillway::Db::open(dir.path(), spillway::Options::default())?;
    /// db.set_memory_budget(Some(256 << 20))?; // fewer, larger spills
    /// assert_eq!(db.stats().memory_budget, 256 << 20);
    /// assert!(db.set_memory_budget(Some(1024)).is_err());
    /// # Ok(()) }
    /// ```
    pub fn set_memory_budget(&self, budget: Option<usize>) -> Result<()> {
        if let Some(reason) = budget.and_then(crate::options::budget_problem) {
            return Err(Error::InvalidOption {
                name: "memory_budget",
                reason,
            });
        }
        let inner = &self.inner;
        inner.budget.set(budget);
        inner
            .budget
            .plan(&inner.opts, inner.version().metadata_memory());
        Ok(())
    }

    /// File names (in the store folder) of every list file the current tree refers to.
    /// Not part of the API (hidden from the docs): for Spillway's own tests, which check
    /// that garbage collection leaves exactly these; it may change without notice. Stops the
    /// background preload, if it runs (what it has not read is read at its first use).
    #[doc(hidden)]
    pub fn files_in_use(&self) -> BTreeSet<String> {
        // A running spill has files the tree names only once it publishes (an open may leave
        // one running): wait for it, so that the tree and the folder compare. Its outcome is
        // left for the next write to report, as `wait_for_spill` does.
        if let Some(spill) = self.inner.writer.lock().spilling.take() {
            let _ = spill.join();
        }
        // The preload holds the files of the tiers and lists it is reading: one a spill has
        // replaced meanwhile leaves the folder only once the preload lets it go.
        self.inner.stop_preload();
        let version = self.inner.version();
        let ids = version.parts.iter().flat_map(|p| p.tree.live_files());
        ids.map(crate::files::list_name).collect()
    }

    /// The store's folder.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// Wait for a running spill, sync the log and release the store. Dropping a `Db` does the
    /// same but cannot report an error; call `close` to know that every write is durable. An
    /// error here (a failed background spill, say) loses nothing acknowledged: the log holds it,
    /// and the next open recovers it.
    pub fn close(self) -> Result<()> {
        let closed = self.inner.close();
        lock(&self.inner.folder_lock).take();
        closed
    }

    /// Check the tree's structural invariants (ranges, fan-out, balance). Not part of the API
    /// (hidden from the docs): for Spillway's own tests; it may change without notice.
    #[doc(hidden)]
    pub fn check_tree(&self) -> std::result::Result<(), String> {
        let version = self.inner.version();
        version
            .parts
            .iter()
            .try_for_each(|p| p.tree.check(self.inner.opts.fan_out))
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.inner.close();
        lock(&self.inner.folder_lock).take();
    }
}

impl Inner {
    /// A one-record write, built in this thread's scratch batch: a lone writer's single put
    /// allocates nothing (the queue copies the batch only if it has to wait).
    pub(crate) fn write_one(self: &Arc<Self>, fill: impl FnOnce(&mut WriteBatch)) -> Result<()> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<WriteBatch> = std::cell::RefCell::default();
        }
        /// A scratch batch that grew past this (a big value) is not kept.
        const KEEP: usize = 64 << 10;
        let opts = self.default_write_options();
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut b) => {
                b.clear();
                fill(&mut b);
                let written = self.submit(Cow::Borrowed(&*b), opts, None);
                if b.payload().len() > KEEP {
                    *b = WriteBatch::new();
                }
                written
            }
            // Called from within a write on this thread (a merge operator's callback, say).
            Err(_) => {
                let mut b = WriteBatch::new();
                fill(&mut b);
                self.submit(Cow::Owned(b), opts, None)
            }
        })
    }

    pub(crate) fn default_write_options(&self) -> WriteOptions {
        WriteOptions {
            sync: self.opts.sync_by_default,
        }
    }

    /// Commit `batch` (with the reads of the transaction it is the writes of, which must not
    /// have been written since its snapshot: see `conflicts`).
    pub(crate) fn submit(
        self: &Arc<Self>,
        batch: Cow<'_, WriteBatch>,
        opts: WriteOptions,
        reads: Option<&Arc<conflicts::Reads>>,
    ) -> Result<()> {
        batch.validate()?;
        if !batch.is_of_store(self.store_id) {
            return Err(keyspace::of_another_store());
        }
        if batch.is_empty() {
            return Ok(()); // a read-only transaction's too: its snapshot is consistent
        }
        if batch.merges() > 0 {
            self.check_operands(&batch)?;
        }
        if let Some(&ks) = batch.partial_ranges().first() {
            self.check_ranges(batch.partial_ranges(), ks)?;
        }
        self.writer
            .queue
            .submit(batch, opts.sync, reads.cloned(), |group| {
                self.commit_group(group)
            })
    }

    fn version(&self) -> Arc<Version> {
        read(&self.current).clone()
    }

    /// Now, as a point in time reads can share. The sequence number is taken first: every
    /// group up to it is then in the version taken after it (a freeze or a spill only moves
    /// records), so the point sees at least those groups — and, cut by `seq`, none after
    /// them in the buffers (a spill may have moved a later one into a tree: the point then
    /// sees a later, still whole, prefix of the writes).
    fn read_point(&self) -> ReadPoint {
        if !self.marking.load(Ordering::Relaxed) {
            // Under the writer, which holds it through a whole group: every group from now
            // on is marked, and every group before is done and visible.
            let _w = self.writer.lock();
            self.marking.store(true, Ordering::Relaxed);
        }
        let seq = self.visible.load(Ordering::Acquire);
        ReadPoint {
            version: self.version(),
            seq,
        }
    }

    fn get_at(&self, at: &ReadPoint, part: &Part, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.entry_at(at, part, key)?.map(|(value, _)| value))
    }

    /// A user's read of `key` at `at`: its value and when it expires, unless it has.
    pub(super) fn entry_at(&self, at: &ReadPoint, part: &Part, key: &[u8]) -> Result<Found> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: MAX_KEY_LEN,
            });
        }
        Counters::bump(&self.counters.gets);
        let found = self.fold_at(at, part, key)?;
        Ok(live(found, || self.opts.now()))
    }

    /// What `key` holds at `at`: its records gathered and folded, whether or not its time has
    /// come (a user's read, or the writer folding a key whose operands stacked up, which is not
    /// counted as a GET).
    pub(super) fn fold_at(&self, at: &ReadPoint, part: &Part, key: &[u8]) -> Result<Found> {
        let order = part.def.order;
        let route = order.route(key);
        let hash = order.hash(route, key);
        // Newest first, until a put or a delete: a merge operand needs what it folds into.
        // Only the newest buffer still changes; the frozen one and the tree never do.
        let started = part.tree.start_read(route, key, hash);
        let mut stack = Stack::default();
        let (in_mem, seen, mem_end) = {
            let mem = read(&part.mem);
            let end = mem.end_at(at.seq);
            let found = mem.get_at(route, hash, key, end, &mut stack);
            (found, mem.end(), end)
        };
        let complete = in_mem
            || part.frozen.as_ref().is_some_and(|frozen| {
                let frozen = read(frozen);
                frozen.get_at(route, hash, key, frozen.end_at(at.seq), &mut stack)
            });
        if !complete {
            part.tree
                .get(started, route, key, hash, &self.counters, &mut stack)?;
        }
        // What the next read expects (see `tree::hunch`): whether this one found its key in
        // the tree's lists, rather than in a buffer or nowhere.
        hunch::record(!complete && stack.pages > 0);
        let operands = stack.operands();
        if operands == 0 {
            return stack.resolve(key, None);
        }
        let pages = stack.pages;
        let value = stack.resolve(key, part.def.operator.as_ref())?;
        self.counters
            .operands_folded
            .fetch_add(operands as u64, std::sync::atomic::Ordering::Relaxed);
        if pages >= WRITE_BACK_PAGES {
            if let Some(found) = &value {
                self.write_back(&part.mem, mem_end.min(seen), (route, hash), key, found);
            }
        }
        Ok(value)
    }

    /// Put `value`, the fold a read just made of `key`'s records, at the top of the root
    /// buffer, so that the next read stops there instead of folding the same operands again
    /// (RocksDB's reads fold a hot key's operands every time: rocksdb#1988). It changes no
    /// answer, so it is not logged: after a crash the log's operands fold to the same value.
    /// It is written only if nothing has been written to the key since the read's point in
    /// time, in the same buffer, only while the buffer is not full, and only if the writer
    /// is idle: a read never waits.
    fn write_back(
        &self,
        read_mem: &SharedBuffer,
        seen: u64,
        (route, hash): (u64, u64),
        key: &[u8],
        (value, until): &(Vec<u8>, u64),
    ) {
        let Some(w) = self.writer.try_lock() else {
            return;
        };
        if w.log.is_none() || w.closed || w.poisoned.is_some() {
            return;
        }
        let current = self.version();
        if !current.parts.iter().any(|p| Arc::ptr_eq(&p.mem, read_mem)) {
            return; // frozen since (or dropped): its records are no longer the newest
        }
        // Only writes fill a buffer up and freeze it: reads stop writing back at its size.
        if self.buffered(&w, &current) >= self.budget.buffer_limit() {
            return;
        }
        let mut mem = write(read_mem);
        if mem.written_since(route, hash, key, seen) {
            return;
        }
        mem.put(key, Op::put_until(value, *until), 0);
        Counters::bump(&self.counters.merge_write_backs);
    }

    /// Refuse a batch's merges unless the store has an operator that accepts every operand.
    fn check_operands(&self, batch: &WriteBatch) -> Result<()> {
        let version = self.version();
        for (ks, r) in batch.iter() {
            if let Op::Merge(operand) = r.op {
                let part = version.part(ks).ok_or_else(|| self.dropped(ks))?;
                let operator = part.def.operator.as_ref().ok_or(Error::NoMergeOperator)?;
                operator.check(operand)?;
            }
        }
        Ok(())
    }

    /// Refuse range deletes of part of a hashed keyspace (`ids`: the keyspaces a batch deletes
    /// part of): its keys are in no order a range could follow.
    fn check_ranges(&self, ids: &[u32], _first: u32) -> Result<()> {
        let version = self.version();
        for &ks in ids {
            let part = version.part(ks).ok_or_else(|| self.dropped(ks))?;
            if part.def.order != KeyOrder::Ordered {
                return Err(Error::NotOrdered);
            }
        }
        Ok(())
    }

    /// The error for keyspace `id`, which is gone.
    fn dropped(&self, id: u32) -> Error {
        let name = lock(&self.dropped).get(&id).cloned();
        Error::KeyspaceDropped {
            name: name.unwrap_or_else(|| format!("#{id}")),
        }
    }

    fn close(&self) -> Result<()> {
        self.stop_preload();
        let mut w = self.writer.lock();
        if w.closed {
            return Ok(());
        }
        w.closed = true;
        if w.log.is_none() {
            return Ok(()); // read-only: nothing was written
        }
        let spilled = self.wait_for_spill(&mut w, commit::Waiter::Caller);
        if let Some(e) = &w.poisoned {
            // The log's tail is in doubt; reopening recovers what it holds.
            return Err(read_only_after(e));
        }
        // Make every acknowledged write durable even if the spill failed: recovery needs it.
        // The retired log first: a log is synced only once every earlier log is (see `wal`).
        // If its fsync failed, that failure comes back here and nothing is sealed.
        if let Some(retired) = w.retired_log.take() {
            retired.sync()?;
        }
        let log = w.log();
        log.seal()?;
        let sealed = (log.number(), log.end());
        self.record_clean_close(sealed)?;
        self.save_selectors_at_close();
        spilled
    }

    /// Save what the selectors hold that is not saved (tiers whose saved record turned out
    /// damaged and were built again), so that the next open reads them. Best effort: no spill
    /// runs now, and the next open builds what is not saved.
    fn save_selectors_at_close(&self) {
        let version = self.version();
        let trees = spill::selector_trees(&version.parts, &version.trees());
        let (dir, next, counters) = (&self.dir, &self.next_file, &self.counters);
        let _ = crate::tree::selector_index::save(dir, next, &trees, counters, false);
    }

    /// Write in the manifest that log `sealed.0` was sealed at byte `sealed.1`: damage before
    /// that is then corruption to the next open and to `check`, never a torn tail, and a
    /// missing log is noticed. Only at a close: no spill runs, and the tree readers see is
    /// the one in the manifest.
    fn record_clean_close(&self, sealed: (u64, u64)) -> Result<()> {
        let mut meta = lock(&self.durable_meta);
        if meta.sealed == Some(sealed) {
            return Ok(());
        }
        let next = Meta {
            next_file: self.next_file.load(std::sync::atomic::Ordering::Relaxed),
            sealed: Some(sealed),
            ..meta.clone()
        };
        manifest::write(&self.dir, &next, &self.version().trees(), &self.counters)?;
        *meta = next;
        Ok(())
    }
}

impl Version {
    /// The default keyspace's part.
    fn default_part(&self) -> &Part {
        &self.parts[0]
    }

    /// The part of keyspace `id`, if it exists in this version.
    fn part(&self, id: u32) -> Option<&Part> {
        let i = self.parts.binary_search_by_key(&id, |p| p.def.id).ok()?;
        Some(&self.parts[i])
    }

    /// Every root buffer of every keyspace.
    fn buffers(&self) -> impl Iterator<Item = &SharedBuffer> {
        self.parts.iter().flat_map(Part::buffers)
    }

    /// The trees, in the manifest's order (the default keyspace's first).
    fn trees(&self) -> Vec<&Tree> {
        self.parts.iter().map(|p| &*p.tree).collect()
    }

    /// Memory the trees' list metadata and selectors hold (see `budget`).
    fn metadata_memory(&self) -> budget::Metadata {
        let mut m = budget::Metadata::default();
        for p in &self.parts {
            m.lists += p.tree.list_metadata_memory();
            m.selectors += p.tree.selector_memory().1;
        }
        m
    }
}

/// The distinct keys of a keyspace, estimated (see [`Db::estimate_keys`]).
fn estimate_keys(part: &Part) -> Option<u64> {
    let buffers: Vec<_> = part.buffers().map(|b| read(b).sketch()).collect();
    let views = part.tree.sketch_views(part.def.order, true).ok()??;
    let newest_first = buffers.iter().map(View::whole).chain(views);
    Some(sketch::union(newest_first).map_or(0, |e| e.live.round() as u64))
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Db>();
}
