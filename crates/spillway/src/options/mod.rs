//! Tuning knobs, checked once at `Db::open`; by name in `named`.

mod named;

pub use named::{OptionInfo, OPTIONS};

use std::sync::Arc;

use crate::clock::{Clock, SystemClock};
use crate::compaction_filter::CompactionFilter;
use crate::error::{Error, Result};
use crate::order::KeyOrder;
use crate::upsert::operator::{MergeOperator, Operator};

/// The longest key accepted, in bytes (64 KiB).
pub const MAX_KEY_LEN: usize = 64 * 1024;
/// The longest value accepted, in bytes (16 MiB).
pub const MAX_VALUE_LEN: usize = 16 * 1024 * 1024;
/// The largest encoded [`WriteBatch`](crate::WriteBatch) accepted, in bytes (256 MiB).
pub const MAX_BATCH_BYTES: usize = 256 * 1024 * 1024;
/// The largest root buffer (64 GiB).
pub(crate) const MAX_ROOT_BUFFER: usize = 1 << 36;
/// The most threads a spill may merge on (`Options::spill_threads`).
pub const MAX_SPILL_THREADS: usize = 256;

/// The fewest descriptors a store may keep open (`Options::max_open_files`): with fewer,
/// nearly every read would reopen its file.
pub(crate) const MIN_OPEN_FILES: usize = 16;
/// The longest merge operator name a store records.
pub(crate) const MAX_OPERATOR_NAME: usize = 1024;
/// The smallest memory budget accepted (4 MiB): room for two of the smallest buffers a budget
/// leaves, and then some.
pub const MIN_MEMORY_BUDGET: usize = 4 << 20;

/// How a store is shaped. The defaults suit stores of millions to billions of small records;
/// see the WB-tree paper §4 for how each trades writes against reads.
///
/// Build them from the defaults, a method per field (the struct is `#[non_exhaustive]`: later
/// versions add options without breaking your code), or by name with [`set`](Self::set):
///
/// ```
/// let opts = spillway::Options::default().root_buffer_size(32 << 20);
/// assert!(opts.validate().is_ok());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Bytes of records the in-memory root buffer holds before it spills (default 64 MiB).
    /// Larger buffers mean fewer, larger spills and lower write amplification. With
    /// [`background_spills`](Self::background_spills) two buffers can be in memory at once:
    /// the one writers fill and the full one being spilled, together at most twice this. Once
    /// a spill has moved its buffer into the tree, what remains of it is upkeep (nodes it
    /// filled, settled a step at a time), and a buffer that fills meanwhile takes the frozen
    /// buffer's room — up to twice this — rather than wait.
    pub root_buffer_size: usize,
    /// Capacity of a node, in bytes of lists (default 64 MiB). An internal node spills and a
    /// leaf splits when its lists reach this size: in upkeep steps after the spill that
    /// filled it, or in the spill itself once it holds twice this (a node's bytes stay below
    /// that, but for a leaf of one record bigger than that).
    pub node_size: usize,
    /// Most children a node may have before it splits (default 64).
    pub fan_out: usize,
    /// Fast-splits a leaf may undergo before its next split is a slow-split (default 8).
    /// 0 means every split is a slow-split. Evenly spread keys fill leaves in step, so their
    /// slow-splits come due together, once the leaves number about `2^fast_split_ratio`:
    /// a wave of leaf rewrites (at 8 with one level of leaves, near a billion 16-byte
    /// records: BENCHMARKS.md).
    pub fast_split_ratio: u32,
    /// Target size of a page in a list file (default 4096): the unit of the in-memory page
    /// index (a route a page) and of a cold point read. A page holds whole records, so a
    /// record larger than this gets a page of its own. A point read checks and scans only the
    /// segment of about 512 bytes its key is in (list format 10), so smaller pages cost index
    /// memory without making warm reads faster.
    pub page_size: usize,
    /// How well reads skip lists that do not hold a key (default 10). In a hashed store each
    /// node has a selector that names the lists which may hold a key, with at most
    /// `2^-(bits - 3)` false matches per node (0.8% at 10; fewer in nodes not yet full), at
    /// about `bits + log2(lists per node)` bits per record in memory (about 1.8 bytes a
    /// record with the page index at 10, 64 lists a node); in an ordered store each list has a
    /// Bloom filter of this many bits per key (about 1% false positives at 10). 0 writes
    /// lists with neither: every list on a key's path is read.
    pub filter_bits_per_key: u32,
    /// Whether [`Db::put`](crate::Db::put) and [`Db::delete`](crate::Db::delete), which take
    /// no [`WriteOptions`], fsync the log before returning (default false).
    pub sync_by_default: bool,
    /// Create the folder and an empty store if none exists (default true).
    pub create_if_missing: bool,
    /// Spill a full root buffer on a background thread while writers go on into a fresh one
    /// (default true). Writers wait only if the buffer fills again before the previous spill
    /// is done. `false` spills on the writing thread: the write that fills the buffer waits
    /// for the whole spill (up to a second at default sizes), but only one buffer is ever in
    /// memory.
    pub background_spills: bool,
    /// Threads a spill merges on (default 0: one per core, at most 8). A spill's work below
    /// the root is independent from child to child — each child's share of the buffer or of
    /// its parent's lists is merged and written by itself, and so are its own spills and
    /// splits — so the children go to whichever thread is free, and the output is the same
    /// list for list as on one thread (TurtleKV's parallel checkpoint merges). `1` keeps a
    /// spill on its own thread, leaving the other cores to the application. Each thread may
    /// hold a leaf's worth of records while it slow-splits the leaf (`node_size` bytes),
    /// outside any memory budget.
    pub spill_threads: usize,
    /// Most list files kept open at once (default 65,536, at least 16), as LevelDB's and
    /// RocksDB's option of that name. A store holds one list file per few MiB of data (tens of
    /// thousands for tens of GiB), each with its page index and filter in memory, but only the
    /// most recently read ones keep a file descriptor; a read of another file reopens it (one
    /// `open` more for that GET: random GETs ran 28% slower with 2,700 list files and 1,000
    /// open). `Db::open` raises the process's soft limit on open files to its hard limit, and
    /// the store keeps at most half of that limit open whatever this says, leaving the rest to
    /// the application: so the default keeps every file open where the system allows (as
    /// RocksDB's default does), and stays bounded where it does not.
    pub max_open_files: usize,
    /// Whether point reads take list pages from a memory map of their file (default `true`)
    /// rather than `pread` them: a GET then makes no system call and copies no page, which
    /// made in-memory GETs 1.25–1.55× faster here (BENCHMARKS.md). Every page is still checked
    /// against its checksum on every read. The stores of a process map
    /// at most [`max_mapped_files`](crate::max_mapped_files) files together (a quarter of
    /// `vm.max_map_count`: each map is one of the process's memory areas); the rest, and
    /// scans, use `pread`. Maps hold no memory of their own: their pages are the page cache's.
    ///
    /// The price: where a read of a mapped page fails in the device (an I/O error, or a file
    /// cut short behind the store's back), the kernel stops the process with `SIGBUS` instead
    /// of the read returning [`Error::Io`](crate::Error::Io). Set `false` where that matters
    /// more than speed, as on network file systems.
    pub mmap_reads: bool,
    /// Whether a log that takes synced writes keeps zeros written ahead of its end (default
    /// `true`; up to 5 MiB, a thread writes them in the background). A synced append then
    /// overwrites blocks the file system has already allocated, and its fdatasync flushes the
    /// data alone instead of also committing the file's new size and blocks: synced writes
    /// took 0.64–0.67× the time here (BENCHMARKS.md). The price is the zeros: a synced store
    /// writes its log about twice. Set `false` on copy-on-write file systems (btrfs, ZFS),
    /// where an overwrite allocates anyway, or where write volume costs more than latency.
    pub log_prefill: bool,
    /// Whether unsynced writes (up to 4 KiB) are copied into the log through a writable
    /// memory map of it (default `true`) instead of a `write` system call each: 2× the
    /// unsynced single puts here (BENCHMARKS.md). They are as safe from a process crash: the
    /// bytes are in the page cache once copied. The map's space is allocated before it is
    /// mapped, so a full disk is an error; but a log file cut short behind the store's back
    /// stops the process with `SIGBUS`. Set `false` with `mmap_reads`, on network file systems.
    pub mmap_log: bool,
    /// Whether an open reads the node selectors saved on disk back into memory in the
    /// background, and then the list files' metadata (default `true`). An open reads none of
    /// them, so that it takes well under a second at any size (BENCHMARKS.md); each is read at
    /// its first use otherwise, and until it is, the first GET into its node waits for it —
    /// at a billion records 1.6 GB of selectors, a few hundred KiB a node, and a few KiB a
    /// list file. The preload reads the selectors in the order they lie on disk, at the
    /// device's sequential speed, then the list files in the order they were written, while
    /// GETs go on (a GET that needs one before the preload gets to it reads it itself). It
    /// also merges the few saved tiers of a node that an open groups into one (up to eight
    /// into three): a GET that reads them first probes each, and waits for no merge; without a
    /// preload they stay so until a spill into the node merges them. Set
    /// `false` for short-lived handles that read a few keys;
    /// [`Db::load_selectors`](crate::Db::load_selectors) does the same work in the caller's
    /// thread, whatever this says. Ordered stores have no selectors, only list files.
    pub preload_selectors: bool,
    /// Whether a writer that outruns the running spill is slowed in short steps (default
    /// `true`): once the buffer has used half the room it has before a write would wait for
    /// that spill, each write group waits its share of the spill's expected time, 50 ms at
    /// most, so that no write waits long (at a billion records: no stall, the longest wait
    /// the engine adds 50 ms). `false`: writers run at full speed until the buffer is full,
    /// then wait for the spill all at once — fewer, longer waits (seconds at a billion
    /// records) for a bulk load that minds its rate more than its waits (BENCHMARKS.md,
    /// "Writes paced through spills").
    pub pace_writes: bool,
    /// How the store places its keys: by hash, for point reads and writes, or in key order,
    /// for range and prefix scans as well. Fixed when the store is created and recorded in
    /// its manifest. `None` (the default) opens a store in the order it records, and creates
    /// a new one hashed; `Some(order)` creates a new store in `order`, and opening a store of
    /// the other order is then [`Error::KeyOrderMismatch`] (a read-only open reads either).
    /// [`Db::key_order`](crate::Db::key_order) tells the order of an open store.
    pub key_order: Option<KeyOrder>,
    /// Most lists a node keeps before it merges its newest ones (see below); `None` (the
    /// default) chooses by key order: 8 in an ordered store, no bound in a hashed one.
    ///
    /// A node gains a list at every spill of its parent, and a scan reads a page of every
    /// list on its path, so in an ordered store short scans get dearer as lists pile up.
    /// A bound makes a node holding more lists merge its newest lists of similar size into
    /// one (size-tiered): each record is rewritten a few more times, and a scan reads a few
    /// lists per level. Point reads skip lists through their filters and gain little, so
    /// hashed stores keep the WB tree's write-once lists. `Some(usize::MAX)` turns merging
    /// off in an ordered store; a small bound suits scan-heavy work. The figures are in
    /// BENCHMARKS.md.
    pub max_lists_per_node: Option<usize>,
    /// What folds the operands of [`Db::merge`](crate::Db::merge) into values. Built-ins are
    /// in [`operators`](crate::operators); set one with
    /// [`merge_operator`](Self::merge_operator()). The store records the operator's name the
    /// first time it is opened with one, and from then on opens only with an operator of that
    /// name ([`Error::MergeOperatorMismatch`]). `None` (the default) opens a store with the
    /// operator it records when that is a built-in (found by
    /// [`operators::by_name`](crate::operators::by_name)) or one of
    /// [`known_operators`](Self::known_operators), so that any tool opens any store as it was
    /// made; a store that records another operator is [`Error::MergeOperatorMismatch`]
    /// without it, and a store that records none refuses merges ([`Error::NoMergeOperator`]).
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// Operators of your own that a store opened without
    /// [`merge_operator`](Self::merge_operator) may take by the name it records, as it takes
    /// the built-ins (default none): for a tool that opens stores of several operators.
    pub known_operators: Vec<Arc<dyn MergeOperator>>,
    /// Bytes of memory for the root buffers, the lists' filters, page indexes and sketches and
    /// the node selectors together (default none: the buffer holds `root_buffer_size`, and
    /// metadata grows with the data). Under a budget the root buffer takes what the metadata
    /// leaves, decided again at every spill — split between the two buffers that background
    /// spills keep, and never below an eighth of `node_size` (8 MiB by default), nor 1 MiB —
    /// and `root_buffer_size` is not used. A bigger budget means larger, fewer spills and
    /// fewer lists per node (TurtleKV's write-versus-memory knob);
    /// [`Db::set_memory_budget`](crate::Db::set_memory_budget) turns it while the store runs.
    /// At least [`MIN_MEMORY_BUDGET`].
    ///
    /// When the node selectors do not fit beside the smallest buffers and the lists' own
    /// metadata, the biggest leaves' selectors leave memory, at the next spill or open, for a
    /// scratch file beside the lists (unlinked at once: nothing to clean up after a crash):
    /// a GET then reads one 4 KiB block of its leaf's selector before its page, unless a
    /// cache of those blocks (an eighth of the selectors' room) holds it. The entries of a
    /// leaf's newest lists stay in memory until they hold a quarter as many as its block —
    /// up to half, while upkeep after a spill (not the spill writers may wait for) has yet to
    /// rewrite the block. Page indexes and
    /// sketches stay in memory (~0.3 B per record of 64 bytes): a budget they alone exceed
    /// runs over it, with the smallest buffer, and `Stats` shows it.
    pub memory_budget: Option<usize>,
    /// Where the store reads the time that records expire by (default the wall clock,
    /// [`SystemClock`](crate::SystemClock)); a [`ManualClock`](crate::ManualClock) lets tests
    /// move it. Not recorded in the store.
    pub clock: Arc<dyn Clock>,
    /// The default keyspace's compaction filter (default none; a named keyspace takes its
    /// own from [`KeyspaceOptions`](crate::KeyspaceOptions)): shown every value as spills and
    /// merges rewrite it, lazily (see [`CompactionFilter`]). Not recorded in the store: give
    /// it at every open.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            root_buffer_size: 64 << 20,
            node_size: 64 << 20,
            fan_out: 64,
            fast_split_ratio: 8,
            page_size: 4096,
            filter_bits_per_key: 10,
            sync_by_default: false,
            create_if_missing: true,
            background_spills: true,
            spill_threads: 0,
            max_open_files: 1 << 16,
            mmap_reads: true,
            log_prefill: true,
            mmap_log: true,
            preload_selectors: true,
            pace_writes: true,
            key_order: None,
            max_lists_per_node: None,
            merge_operator: None,
            known_operators: Vec::new(),
            memory_budget: None,
            clock: Arc::new(SystemClock),
            compaction_filter: None,
        }
    }
}

impl Options {
    /// Check every field, naming the first one out of range.
    pub fn validate(&self) -> Result<()> {
        fn bad(name: &'static str, reason: String) -> Result<()> {
            Err(Error::InvalidOption { name, reason })
        }
        if !(64..=1 << 20).contains(&self.page_size) {
            return bad(
                "page_size",
                format!("{} is outside 64 B ..= 1 MiB", self.page_size),
            );
        }
        if let Some(reason) = self.memory_budget.and_then(budget_problem) {
            return bad("memory_budget", reason);
        }
        if self.root_buffer_size < 1024 || self.root_buffer_size > MAX_ROOT_BUFFER {
            return bad(
                "root_buffer_size",
                format!("{} is outside 1 KiB ..= 64 GiB", self.root_buffer_size),
            );
        }
        if self.node_size < 2 * self.page_size || self.node_size > 1 << 36 {
            return bad(
                "node_size",
                format!(
                    "{} must be at least two pages ({}) and at most 64 GiB",
                    self.node_size,
                    2 * self.page_size
                ),
            );
        }
        if !(2..=4096).contains(&self.fan_out) {
            return bad("fan_out", format!("{} is outside 2 ..= 4096", self.fan_out));
        }
        if self.fast_split_ratio > 64 {
            return bad(
                "fast_split_ratio",
                format!(
                    "{} is above 64: leaves would hold so many lists that reads slow down",
                    self.fast_split_ratio
                ),
            );
        }
        if self.filter_bits_per_key > 32 {
            return bad(
                "filter_bits_per_key",
                format!("{} is above 32", self.filter_bits_per_key),
            );
        }
        if self.max_lists_per_node.is_some_and(|n| n < 2) {
            return bad(
                "max_lists_per_node",
                "must be at least 2 (a node must be able to hold a list and gain one)".into(),
            );
        }
        if let Some(name) = self.operator_name() {
            let max = MAX_OPERATOR_NAME;
            if name.is_empty() || name.len() > max {
                return bad(
                    "merge_operator",
                    format!("its name must be 1 to {max} bytes, not {}", name.len()),
                );
            }
        }
        if self.spill_threads > MAX_SPILL_THREADS {
            return bad(
                "spill_threads",
                format!("{} is above {MAX_SPILL_THREADS}", self.spill_threads),
            );
        }
        if self.max_open_files < MIN_OPEN_FILES {
            return bad(
                "max_open_files",
                format!(
                    "{} is below {MIN_OPEN_FILES}: nearly every read would reopen its file",
                    self.max_open_files
                ),
            );
        }
        Ok(())
    }
}

/// Equal when every field is; merge operators by name (the name is what a store records).
impl PartialEq for Options {
    fn eq(&self, other: &Options) -> bool {
        // Destructured, so that a new field cannot be forgotten here.
        let Options {
            root_buffer_size,
            node_size,
            fan_out,
            fast_split_ratio,
            page_size,
            filter_bits_per_key,
            sync_by_default,
            create_if_missing,
            background_spills,
            spill_threads,
            max_open_files,
            mmap_reads,
            log_prefill,
            mmap_log,
            preload_selectors,
            pace_writes,
            key_order,
            max_lists_per_node,
            merge_operator: _,
            known_operators,
            memory_budget,
            clock: _,
            compaction_filter: _,
        } = self;
        (
            *root_buffer_size,
            *node_size,
            *fan_out,
            *fast_split_ratio,
            *page_size,
            *filter_bits_per_key,
            *sync_by_default,
            *create_if_missing,
            *background_spills,
            *max_open_files,
            *key_order,
            *max_lists_per_node,
        ) == (
            other.root_buffer_size,
            other.node_size,
            other.fan_out,
            other.fast_split_ratio,
            other.page_size,
            other.filter_bits_per_key,
            other.sync_by_default,
            other.create_if_missing,
            other.background_spills,
            other.max_open_files,
            other.key_order,
            other.max_lists_per_node,
        ) && *memory_budget == other.memory_budget
            && *spill_threads == other.spill_threads
            && *mmap_reads == other.mmap_reads
            && *log_prefill == other.log_prefill
            && *mmap_log == other.mmap_log
            && *preload_selectors == other.preload_selectors
            && *pace_writes == other.pace_writes
            && self.operator_name() == other.operator_name()
            && known_operators
                .iter()
                .map(|o| o.name())
                .eq(other.known_operators.iter().map(|o| o.name()))
    }
}

impl Eq for Options {}

/// A builder method per field, so that options read as one expression (the struct is
/// `#[non_exhaustive]`: outside this crate it is built from `Options::default()`):
///
/// ```
/// use spillway::{KeyOrder, Options};
/// let opts = Options::default().key_order(KeyOrder::Ordered).node_size(16 << 20).memory_budget(256 << 20);
/// assert_eq!(opts.key_order, Some(KeyOrder::Ordered));
/// assert_eq!(opts.memory_budget, Some(256 << 20));
/// ```
impl Options {
    /// These options with merge operator `op` (see the field
    /// [`merge_operator`](Self::merge_operator)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let opts = spillway::Options::default().merge_operator(Arc::new(spillway::operators::U64Add));
    /// assert_eq!(opts.merge_operator.unwrap().name(), "spillway.u64add");
    /// ```
    pub fn merge_operator(mut self, op: Arc<dyn MergeOperator>) -> Options {
        self.merge_operator = Some(op);
        self
    }

    /// These options with `clock` (see the field [`clock`](Self::clock)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::SystemTime;
    /// let clock = Arc::new(spillway::ManualClock::new(SystemTime::now()));
    /// let opts = spillway::Options::default().clock(clock);
    /// ```
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Options {
        self.clock = clock;
        self
    }

    /// These options with compaction filter `filter` (see the field
    /// [`compaction_filter`](Self::compaction_filter)).
    pub fn compaction_filter(mut self, filter: Arc<dyn CompactionFilter>) -> Options {
        self.compaction_filter = Some(filter);
        self
    }

    /// The time now by the clock, in ms since the epoch.
    pub(crate) fn now(&self) -> u64 {
        crate::clock::millis(self.clock.now())
    }

    /// These options with no merge operator (the store's own, if it records a built-in).
    pub fn no_merge_operator(mut self) -> Options {
        self.merge_operator = None;
        self
    }

    /// These options with [`root_buffer_size`](Self::root_buffer_size) set to `bytes`.
    pub fn root_buffer_size(mut self, bytes: usize) -> Options {
        self.root_buffer_size = bytes;
        self
    }

    /// These options with [`node_size`](Self::node_size) set to `bytes`.
    pub fn node_size(mut self, bytes: usize) -> Options {
        self.node_size = bytes;
        self
    }

    /// These options with [`fan_out`](Self::fan_out) set to `children`.
    pub fn fan_out(mut self, children: usize) -> Options {
        self.fan_out = children;
        self
    }

    /// These options with [`fast_split_ratio`](Self::fast_split_ratio) set to `ratio`.
    pub fn fast_split_ratio(mut self, ratio: u32) -> Options {
        self.fast_split_ratio = ratio;
        self
    }

    /// These options with [`page_size`](Self::page_size) set to `bytes`.
    pub fn page_size(mut self, bytes: usize) -> Options {
        self.page_size = bytes;
        self
    }

    /// These options with [`filter_bits_per_key`](Self::filter_bits_per_key) set to `bits`.
    pub fn filter_bits_per_key(mut self, bits: u32) -> Options {
        self.filter_bits_per_key = bits;
        self
    }

    /// These options with [`sync_by_default`](Self::sync_by_default) set to `on`.
    pub fn sync_by_default(mut self, on: bool) -> Options {
        self.sync_by_default = on;
        self
    }

    /// These options with [`create_if_missing`](Self::create_if_missing) set to `on`.
    pub fn create_if_missing(mut self, on: bool) -> Options {
        self.create_if_missing = on;
        self
    }

    /// These options with [`background_spills`](Self::background_spills) set to `on`.
    pub fn background_spills(mut self, on: bool) -> Options {
        self.background_spills = on;
        self
    }

    /// These options with [`spill_threads`](Self::spill_threads) set to `threads`.
    pub fn spill_threads(mut self, threads: usize) -> Options {
        self.spill_threads = threads;
        self
    }

    /// The threads a spill merges on: [`spill_threads`](Self::spill_threads), or one per
    /// core (at most 8) where it is 0.
    pub(crate) fn spill_cores(&self) -> usize {
        match self.spill_threads {
            0 => crate::util::cores::per_machine(),
            n => n,
        }
    }

    /// These options with [`max_open_files`](Self::max_open_files) set to `files`.
    pub fn max_open_files(mut self, files: usize) -> Options {
        self.max_open_files = files;
        self
    }

    /// These options with [`mmap_reads`](Self::mmap_reads) set to `on`.
    pub fn mmap_reads(mut self, on: bool) -> Options {
        self.mmap_reads = on;
        self
    }

    /// These options with [`log_prefill`](Self::log_prefill) set to `on`.
    pub fn log_prefill(mut self, on: bool) -> Options {
        self.log_prefill = on;
        self
    }

    /// These options with [`mmap_log`](Self::mmap_log) set to `on`.
    pub fn mmap_log(mut self, on: bool) -> Options {
        self.mmap_log = on;
        self
    }

    /// These options with [`preload_selectors`](Self::preload_selectors) set to `on`.
    pub fn preload_selectors(mut self, on: bool) -> Options {
        self.preload_selectors = on;
        self
    }

    /// These options with [`pace_writes`](Self::pace_writes) set to `on`.
    pub fn pace_writes(mut self, on: bool) -> Options {
        self.pace_writes = on;
        self
    }

    /// These options with [`key_order`](Self::key_order) set: an order (a new store's, and
    /// the one an existing store must have), or `None` (the store's own).
    pub fn key_order(mut self, order: impl Into<Option<KeyOrder>>) -> Options {
        self.key_order = order.into();
        self
    }

    /// These options with [`max_lists_per_node`](Self::max_lists_per_node) set (`None`: by
    /// key order).
    pub fn max_lists_per_node(mut self, lists: impl Into<Option<usize>>) -> Options {
        self.max_lists_per_node = lists.into();
        self
    }

    /// These options with [`memory_budget`](Self::memory_budget) set (`None`: no budget).
    pub fn memory_budget(mut self, bytes: impl Into<Option<usize>>) -> Options {
        self.memory_budget = bytes.into();
        self
    }

    /// These options with [`known_operators`](Self::known_operators) set.
    pub fn known_operators(mut self, operators: Vec<Arc<dyn MergeOperator>>) -> Options {
        self.known_operators = operators;
        self
    }

    /// The key order in force: the one asked for, else hashed (after `Db::open`, the
    /// store's own).
    pub(crate) fn order(&self) -> KeyOrder {
        self.key_order.unwrap_or_default()
    }

    /// The operator a store recording `name` opens with when none is given: one of
    /// [`known_operators`](Self::known_operators), else the built-in of that name.
    pub(crate) fn resolve_operator(&self, name: &str) -> Option<Arc<dyn MergeOperator>> {
        self.known_operators
            .iter()
            .find(|o| o.name() == name)
            .cloned()
            .or_else(|| crate::upsert::operator::by_name(name))
    }

    /// The name of the merge operator, as the manifest records it.
    pub(crate) fn operator_name(&self) -> Option<String> {
        self.merge_operator.as_ref().map(|o| o.name().to_owned())
    }

    /// The merge operator as the engine calls it.
    pub(crate) fn operator(&self) -> Option<Operator> {
        self.merge_operator.clone().map(Operator)
    }

    /// The list bound in force: [`max_lists_per_node`](Self::max_lists_per_node), or the
    /// key order's default.
    pub(crate) fn lists_bound(&self) -> Option<usize> {
        match (self.max_lists_per_node, self.order()) {
            (Some(usize::MAX), _) | (None, KeyOrder::Hashed) => None,
            (Some(n), _) => Some(n),
            (None, KeyOrder::Ordered) => Some(DEFAULT_ORDERED_LIST_BOUND),
        }
    }
}

/// Why `budget` is not a memory budget this build accepts, if it is not.
pub(crate) fn budget_problem(budget: usize) -> Option<String> {
    (!(MIN_MEMORY_BUDGET..=1 << 40).contains(&budget))
        .then(|| format!("{budget} is outside 4 MiB ..= 1 TiB"))
}

/// The default list bound of ordered stores (see `Options::max_lists_per_node`).
const DEFAULT_ORDERED_LIST_BOUND: usize = 8;

/// Per-write durability, for [`Db::write`](crate::Db::write).
///
/// ```
/// let durable = spillway::WriteOptions { sync: true };
/// assert_eq!(durable, spillway::WriteOptions::SYNC);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `true`: return only after the log holding this write is fsynced (fdatasync), so the
    /// write survives power loss. `false` (the default): the write is in the log — the OS page
    /// cache — and survives a crash of the process, not necessarily a power loss.
    pub sync: bool,
}

impl WriteOptions {
    /// Durable before return.
    pub const SYNC: WriteOptions = WriteOptions { sync: true };
    /// Logged, not fsynced.
    pub const NO_SYNC: WriteOptions = WriteOptions { sync: false };
}

/// The precision `r` of selectors and fingerprints for `bits` filter bits per key: about
/// `2^-r` false matches per full node. An entry costs about `2 + r + log2(slots)` bits (the
/// unary part of Elias–Fano, the precision, the list's slot): `bits - 3` keeps a hashed
/// store's selectors and page index within ~2 bytes per record at 10 (a leaf's ~64 lists
/// cost 6 bits of slot), with an absent key reading ~0.012 pages.
pub(crate) fn selector_precision(bits: u32) -> u32 {
    bits.saturating_sub(3).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Options::default().validate().unwrap();
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases: Vec<(Options, &str)> = vec![
            (
                Options {
                    page_size: 10,
                    ..Default::default()
                },
                "page_size",
            ),
            (
                Options {
                    root_buffer_size: 10,
                    ..Default::default()
                },
                "root_buffer_size",
            ),
            (
                Options {
                    node_size: 4096,
                    ..Default::default()
                },
                "node_size",
            ),
            (
                Options {
                    fan_out: 1,
                    ..Default::default()
                },
                "fan_out",
            ),
            (
                Options {
                    fast_split_ratio: 65,
                    ..Default::default()
                },
                "fast_split_ratio",
            ),
            (
                Options {
                    filter_bits_per_key: 33,
                    ..Default::default()
                },
                "filter_bits_per_key",
            ),
            (
                Options {
                    max_lists_per_node: Some(1),
                    ..Default::default()
                },
                "max_lists_per_node",
            ),
            (
                Options {
                    memory_budget: Some(1 << 20),
                    ..Default::default()
                },
                "memory_budget",
            ),
            (
                Options {
                    max_open_files: 0,
                    ..Default::default()
                },
                "max_open_files",
            ),
        ];
        for (opts, field) in cases {
            match opts.validate() {
                Err(Error::InvalidOption { name, .. }) => assert_eq!(name, field),
                other => panic!("{field}: expected InvalidOption, got {other:?}"),
            }
        }
    }
}
