//! Exact counters kept by the engine, and the [`Stats`] snapshot users read.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters, bumped where the work happens.
#[derive(Debug, Default)]
pub struct Counters {
    pub user_bytes: AtomicU64,
    pub user_records: AtomicU64,
    pub disk_bytes: AtomicU64,
    pub wal_bytes: AtomicU64,
    /// Of `disk_bytes`: zeros written ahead of logs (see `wal::prefill`), the list files
    /// written by each cause (see [`Written`]), selector tiers written to selector and tier
    /// files, and small files replaced whole (the manifest, the index of saved selectors).
    pub log_zero_bytes: AtomicU64,
    /// Logs written over a retired log's file (see `wal::free_logs`).
    pub logs_recycled: AtomicU64,
    pub list_bytes: [AtomicU64; Written::CAUSES],
    pub selector_write_bytes: AtomicU64,
    pub metadata_write_bytes: AtomicU64,
    pub fsyncs: AtomicU64,
    pub write_groups: AtomicU64,
    pub synced_groups: AtomicU64,
    pub gets: AtomicU64,
    pub lists_probed: AtomicU64,
    pub pages_read: AtomicU64,
    pub selector_blocks_read: AtomicU64,
    /// Selector entries built from lists' fingerprints, and tiers read back from selector
    /// files, since open (see `tree::selector_index`).
    pub selector_entries_built: AtomicU64,
    pub selector_tiers_loaded: AtomicU64,
    pub root_spills: AtomicU64,
    pub node_spills: AtomicU64,
    pub fast_splits: AtomicU64,
    pub slow_splits: AtomicU64,
    pub node_splits: AtomicU64,
    pub collections: AtomicU64,
    pub upkeep_settles: AtomicU64,
    pub partial_node_spills: AtomicU64,
    pub pieces_rewritten: AtomicU64,
    pub list_merges: AtomicU64,
    pub scans: AtomicU64,
    pub scan_lists: AtomicU64,
    pub merges: AtomicU64,
    pub operands_folded: AtomicU64,
    pub merge_write_backs: AtomicU64,
    pub merge_failures: AtomicU64,
    pub filter_removed: AtomicU64,
    pub filter_changed: AtomicU64,
    pub filter_failures: AtomicU64,
    pub spill_micros: AtomicU64,
    pub stalls: AtomicU64,
    pub stall_micros: AtomicU64,
    pub max_stall_micros: AtomicU64,
    pub paced_writes: AtomicU64,
    pub pace_micros: AtomicU64,
    pub max_pace_micros: AtomicU64,
    pub upkeep_stalls: AtomicU64,
    pub max_upkeep_stall_micros: AtomicU64,
    pub max_log_sync_micros: AtomicU64,
    pub log_records_replayed: AtomicU64,
    pub log_records_dropped: AtomicU64,
    /// Set by the list files' handle cache (`list::Handles`).
    pub open_list_files: AtomicU64,
    pub handle_misses: AtomicU64,
    /// List files whose metadata was read since open (see `list::file`).
    pub lists_read: AtomicU64,
    pub mapped_list_files: AtomicU64,
}

/// What a list file was written for: the causes of write amplification below the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// The root buffer's records, appended to its children (a spill).
    RootSpill,
    /// A full internal node's lists, appended to its children.
    NodeSpill,
    /// A leaf's lists rewritten into new leaves (a slow-split, a collection, a sweep).
    LeafRewrite,
    /// A node's newest lists merged into one (see `tree::compact`).
    ListMerge,
}

impl Written {
    const CAUSES: usize = Written::ListMerge as usize + 1;
}

impl Counters {
    pub fn add_disk_write(&self, n: u64) {
        self.disk_bytes.fetch_add(n, Relaxed);
    }
    /// A list file of `n` bytes was written for `why` (its bytes are counted in
    /// `disk_bytes` as they are written).
    pub fn add_list_write(&self, why: Written, n: u64) {
        self.list_bytes[why as usize].fetch_add(n, Relaxed);
    }
    pub fn add_fsync(&self) {
        self.fsyncs.fetch_add(1, Relaxed);
    }
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }
    /// A writer waited `waited` for a spill; `behind_upkeep` if the spill had already
    /// published its buffer and the wait was for the upkeep or sweep step it was at.
    /// A write group waited `waited` for its share of the buffer's room (see `db::pacing`).
    pub fn add_pace(&self, waited: std::time::Duration) {
        let micros = waited.as_micros() as u64;
        self.paced_writes.fetch_add(1, Relaxed);
        self.pace_micros.fetch_add(micros, Relaxed);
        self.max_pace_micros.fetch_max(micros, Relaxed);
    }

    pub fn add_stall(&self, waited: std::time::Duration, behind_upkeep: bool) {
        let micros = waited.as_micros() as u64;
        self.stalls.fetch_add(1, Relaxed);
        self.stall_micros.fetch_add(micros, Relaxed);
        self.max_stall_micros.fetch_max(micros, Relaxed);
        if behind_upkeep {
            self.upkeep_stalls.fetch_add(1, Relaxed);
            self.max_upkeep_stall_micros.fetch_max(micros, Relaxed);
        }
    }
}

/// A point-in-time view of what the engine has done and how the tree looks.
///
/// Amplification figures are ratios over the bytes users asked to write (keys plus values).
/// Later versions may add figures (`#[non_exhaustive]`).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Key + value (or operand) bytes of every put, delete and merge since open.
    pub user_bytes_written: u64,
    /// Records (puts, deletes and merges) written since open.
    pub user_records_written: u64,
    /// Bytes the engine wrote to files since open: log (and zeros ahead of it), lists,
    /// selector tiers, manifest.
    pub disk_bytes_written: u64,
    /// The parts of `disk_bytes_written`, which add up to it (but for a list that a failed
    /// spill or split left unfinished); over [`user_bytes_written`](Self::user_bytes_written),
    /// each is its share of the write amplification. Log bytes (records and their framing).
    pub wal_bytes_written: u64,
    /// Zeros written ahead of a log's end while it takes frequent synced writes, so that
    /// those overwrite blocks already allocated (fsyncs without a journal commit).
    pub log_prefill_bytes_written: u64,
    /// New logs written over the file of a retired one instead of a new file (see
    /// DURABILITY.md): their blocks need no zeros ahead. The rest are created; the first
    /// logs of an open always are.
    pub logs_recycled: u64,
    /// List files written by root spills (the buffer's records appended to the root's
    /// children), by internal-node spills (a full node's records appended to its children),
    /// by leaf rewrites (slow-splits, collections of mostly dead leaves, sweeps), and by
    /// merges of a node's newest lists.
    pub root_spill_bytes_written: u64,
    pub node_spill_bytes_written: u64,
    pub leaf_rewrite_bytes_written: u64,
    pub list_merge_bytes_written: u64,
    /// Node selector tiers saved to selector files (so that an open reads them instead of
    /// building them), and written to tier files under a memory budget.
    pub selector_bytes_written: u64,
    /// Small files replaced whole: the manifest, the index of saved selectors.
    pub metadata_bytes_written: u64,
    /// `disk_bytes_written / user_bytes_written`.
    pub write_amplification: f64,
    /// fsync/fdatasync calls since open.
    pub fsyncs: u64,
    /// Write groups committed (one log append each) and how many of those were synced.
    pub write_groups: u64,
    pub synced_write_groups: u64,
    /// Point reads since open, lists whose filter said "maybe", pages read from disk.
    pub gets: u64,
    pub lists_probed: u64,
    pub pages_read: u64,
    /// Blocks of selector tiers that left memory (see
    /// [`Options::memory_budget`](crate::Options::memory_budget)) read from their file: the
    /// reads a GET adds when its leaf's selector is not in memory, and not in the block cache.
    pub selector_blocks_read: u64,
    /// Node selector entries built from lists' fingerprints since open (at open, those not
    /// saved; then, those of each spill's new lists), and saved selector tiers read back at
    /// open instead (see `tree::selector_index`).
    pub selector_entries_built: u64,
    pub selector_tiers_loaded: u64,
    /// Root-buffer spills, internal-node spills, leaf fast- and slow-splits, internal splits.
    pub root_spills: u64,
    pub node_spills: u64,
    pub fast_splits: u64,
    pub slow_splits: u64,
    pub node_splits: u64,
    /// Nodes rewritten before they were full because their sketches said that most of their
    /// records were repeats or tombstones (leaves slow-split, internal nodes spilled).
    pub collections: u64,
    /// Nodes that filled and were settled (spilled or split) by an upkeep step after their
    /// spill rather than in it (see `tree::upkeep`).
    pub upkeep_settles: u64,
    /// Internal-node spills an upkeep step left part-way, a writer needing the spill thread
    /// back: the node keeps its lists for the children not yet spilled (see
    /// `Spiller::spill_children`).
    pub partial_node_spills: u64,
    /// Leaves owed a slow-split rewritten a piece at a time by upkeep steps (see
    /// `tree::upkeep`), each piece counted.
    pub pieces_rewritten: u64,
    /// Merges of a node's newest lists into one, to keep its list count within
    /// [`Options::max_lists_per_node`](crate::Options::max_lists_per_node).
    pub list_merges: u64,
    /// Iterators created, and the lists their segments read (lists per segment: the cost
    /// of a short scan).
    pub scans: u64,
    pub scan_lists: u64,
    /// Merge operands written since open (see [`Db::merge`](crate::Db::merge)).
    pub merges: u64,
    /// Operands reads folded into the values they returned (operands that spills had not yet
    /// folded: what a read of a merged key costs beyond a plain read).
    pub operands_folded: u64,
    /// Folded values written back to the root buffer, so that the next read stops there:
    /// by reads that met a key's operands on several list pages, and by writes whose key's
    /// operands stacked up in the buffer (an operator without partial merges).
    pub merge_write_backs: u64,
    /// Folds the merge operator failed (an error or a panic) in spills, splits and list
    /// merges, which keep the operands as they were. Failed reads return the error instead.
    pub merge_failures: u64,
    /// Values a compaction filter removed, changed, or failed on (a panic: the value was
    /// kept), since open.
    pub filter_removed: u64,
    pub filter_changed: u64,
    pub filter_failures: u64,
    /// Time spent in root spills (on the background thread, with everything they set off).
    pub spill_micros: u64,
    /// Writes that had to wait for the previous spill to finish before the buffer could be
    /// frozen (back-pressure), the total time they waited, and the longest wait. A flush, a
    /// close or a change of keyspaces waits for the running spill too, by its nature: those
    /// waits are not stalls.
    pub stalls: u64,
    pub stall_micros: u64,
    pub max_stall_micros: u64,
    /// Write groups slowed down while a spill ran, so that the buffer would not fill before
    /// it ended (many short waits instead of one stall; see `db::pacing`), the total time
    /// they waited, and the longest wait (at most 50 ms).
    pub paced_writes: u64,
    pub pace_micros: u64,
    pub max_pace_micros: u64,
    /// Of those stalls, the ones that found the spill past its buffer (published) and waited
    /// for the upkeep or sweep step it was at (see `tree::upkeep`), and the longest of them;
    /// the others waited for the spill of the buffer itself.
    pub upkeep_stalls: u64,
    pub max_upkeep_stall_micros: u64,
    /// The longest fdatasync of the log by a write: what the disk alone added to the slowest
    /// synced write.
    pub max_log_sync_micros: u64,
    /// What `open` recovered from the logs: records (write groups) replayed into the root
    /// buffer, and valid records it found past the logs' first damage and dropped. Those are
    /// writes that were never synced, lost to a power loss (or damage that looks like one);
    /// see DURABILITY.md. A torn last record is not counted: it was never acknowledged.
    pub log_records_replayed: u64,
    pub log_records_dropped: u64,
    /// List files whose descriptor the handle cache holds open now (at most
    /// [`Options::max_open_files`](crate::Options::max_open_files)), and reads since open that
    /// found theirs closed and reopened it (none while the store has fewer list files).
    pub open_list_files: u64,
    pub handle_misses: u64,
    /// List files whose metadata — page index, filter, sketch — was read from disk since open:
    /// at the open only those that carry range deletes or times, the others at their first
    /// use (a GET, scan or spill that reaches them, the background preload, or
    /// [`Db::estimate_keys`](crate::Db::estimate_keys), which needs every sketch). An open
    /// costs the same however many list files the store has.
    pub lists_read: u64,
    /// List files mapped into memory for point reads now (see
    /// [`Options::mmap_reads`](crate::Options::mmap_reads)).
    pub mapped_list_files: u64,
    /// Levels below the root buffer (1 = the root buffer spills straight into leaves).
    pub height: u32,
    pub internal_nodes: u64,
    pub leaves: u64,
    pub lists: u64,
    /// Bytes of the lists of the fullest node. A node that fills (`node_size`) is settled
    /// by an upkeep step after the spill that filled it, and by a spill itself once it holds
    /// twice that (see `tree::upkeep`): at most `2 × node_size` bytes, but for a leaf of one
    /// record bigger than that.
    pub fullest_node_bytes: u64,
    /// List files alive (a fast-split makes several lists share one file).
    pub files: u64,
    /// Records held in live list files (superseded copies included).
    pub disk_records: u64,
    /// Bytes of live list files.
    pub disk_bytes: u64,
    /// Memory held by Bloom filters, the first-hash page indexes and the cardinality sketches
    /// of live lists (of the files read since open).
    pub filter_bytes: u64,
    pub index_bytes: u64,
    pub sketch_bytes: u64,
    /// Live list files not read since open (see [`lists_read`](Self::lists_read)), and the
    /// memory their metadata takes once read, by the manifest: counted in
    /// [`metadata_bytes`](Self::metadata_bytes), as a memory budget counts it.
    pub unread_list_files: u64,
    pub unread_list_bytes: u64,
    /// Memory held by the node selectors of hashed stores (which replace the Bloom filters of
    /// lists written in format 6 on).
    pub selector_bytes: u64,
    /// Entries of the node selectors (about one per record of a hashed store's lists), and
    /// their tiers (see `tree::selector`).
    pub selector_entries: u64,
    pub selector_tiers: u64,
    /// Of those tiers, the ones saved and not read back yet since open: each is read at its
    /// first use, or by the preload an open starts (see
    /// [`Options::preload_selectors`](crate::Options::preload_selectors)). Until it is, the
    /// first GET into its node reads it.
    pub selector_tiers_unread: u64,
    /// Of the selectors, bytes of tiers that left memory for a scratch file because the memory
    /// budget had no room for them (a 4 KiB block read per lookup of such a tier, unless
    /// cached), and the memory of the cache of their blocks (counted in
    /// [`metadata_bytes`](Self::metadata_bytes)).
    pub selector_disk_bytes: u64,
    pub selector_cache_bytes: u64,
    /// Estimates from the lists' sketches (WB-tree §6): distinct keys on disk whose newest
    /// record is a value or merge operand, and the bytes of those newest records. 0 while lists
    /// written before format 5 (which have no sketch) remain. Of the list files read since
    /// open: while [`unread_list_files`](Self::unread_list_files) is not 0, a part
    /// ([`Db::estimate_keys`](crate::Db::estimate_keys) reads them all).
    pub live_keys: u64,
    pub live_bytes: u64,
    /// Bytes of records in the in-memory root buffers (the one filling and the one spilling).
    pub buffer_bytes: u64,
    /// The memory budget (0: none), and the bytes of records the root buffer now holds before
    /// it spills: `root_buffer_size`, or under a budget what the lists' metadata leaves.
    pub memory_budget: u64,
    pub buffer_limit: u64,
}

impl Stats {
    /// Memory held by the lists' filters, page indexes and sketches (those of lists not read
    /// yet as they will be once read), the node selectors and the cache of selector blocks
    /// together.
    pub fn metadata_bytes(&self) -> u64 {
        self.filter_bytes
            + self.index_bytes
            + self.sketch_bytes
            + self.unread_list_bytes
            + self.selector_bytes
            + self.selector_cache_bytes
    }
    /// Filter + index + sketch + selector memory per record on disk.
    pub fn memory_bytes_per_key(&self) -> f64 {
        ratio(self.metadata_bytes(), self.disk_records)
    }
    /// Bytes of list files per byte of live data ([`live_bytes`](Self::live_bytes)): what
    /// superseded records, tombstones and page overhead cost on disk. 0 when unknown.
    pub fn space_amplification(&self) -> f64 {
        ratio(self.disk_bytes, self.live_bytes)
    }
    /// Lists probed per GET (filter said "maybe").
    pub fn lists_per_get(&self) -> f64 {
        ratio(self.lists_probed, self.gets)
    }
    /// Pages read from disk per GET.
    pub fn pages_per_get(&self) -> f64 {
        ratio(self.pages_read, self.gets)
    }
    /// Reads per GET: list pages and selector blocks.
    pub fn reads_per_get(&self) -> f64 {
        ratio(self.pages_read + self.selector_blocks_read, self.gets)
    }

    pub(crate) fn from_counters(c: &Counters) -> Stats {
        let user = c.user_bytes.load(Relaxed);
        let disk = c.disk_bytes.load(Relaxed);
        Stats {
            user_bytes_written: user,
            user_records_written: c.user_records.load(Relaxed),
            disk_bytes_written: disk,
            wal_bytes_written: c.wal_bytes.load(Relaxed),
            log_prefill_bytes_written: c.log_zero_bytes.load(Relaxed),
            logs_recycled: c.logs_recycled.load(Relaxed),
            root_spill_bytes_written: c.list_bytes[Written::RootSpill as usize].load(Relaxed),
            node_spill_bytes_written: c.list_bytes[Written::NodeSpill as usize].load(Relaxed),
            leaf_rewrite_bytes_written: c.list_bytes[Written::LeafRewrite as usize].load(Relaxed),
            list_merge_bytes_written: c.list_bytes[Written::ListMerge as usize].load(Relaxed),
            selector_bytes_written: c.selector_write_bytes.load(Relaxed),
            metadata_bytes_written: c.metadata_write_bytes.load(Relaxed),
            write_amplification: ratio(disk, user),
            fsyncs: c.fsyncs.load(Relaxed),
            write_groups: c.write_groups.load(Relaxed),
            synced_write_groups: c.synced_groups.load(Relaxed),
            gets: c.gets.load(Relaxed),
            lists_probed: c.lists_probed.load(Relaxed),
            pages_read: c.pages_read.load(Relaxed),
            selector_blocks_read: c.selector_blocks_read.load(Relaxed),
            selector_entries_built: c.selector_entries_built.load(Relaxed),
            selector_tiers_loaded: c.selector_tiers_loaded.load(Relaxed),
            root_spills: c.root_spills.load(Relaxed),
            node_spills: c.node_spills.load(Relaxed),
            fast_splits: c.fast_splits.load(Relaxed),
            slow_splits: c.slow_splits.load(Relaxed),
            node_splits: c.node_splits.load(Relaxed),
            collections: c.collections.load(Relaxed),
            upkeep_settles: c.upkeep_settles.load(Relaxed),
            partial_node_spills: c.partial_node_spills.load(Relaxed),
            pieces_rewritten: c.pieces_rewritten.load(Relaxed),
            list_merges: c.list_merges.load(Relaxed),
            scans: c.scans.load(Relaxed),
            scan_lists: c.scan_lists.load(Relaxed),
            merges: c.merges.load(Relaxed),
            operands_folded: c.operands_folded.load(Relaxed),
            merge_write_backs: c.merge_write_backs.load(Relaxed),
            merge_failures: c.merge_failures.load(Relaxed),
            filter_removed: c.filter_removed.load(Relaxed),
            filter_changed: c.filter_changed.load(Relaxed),
            filter_failures: c.filter_failures.load(Relaxed),
            spill_micros: c.spill_micros.load(Relaxed),
            log_records_replayed: c.log_records_replayed.load(Relaxed),
            log_records_dropped: c.log_records_dropped.load(Relaxed),
            open_list_files: c.open_list_files.load(Relaxed),
            handle_misses: c.handle_misses.load(Relaxed),
            lists_read: c.lists_read.load(Relaxed),
            mapped_list_files: c.mapped_list_files.load(Relaxed),
            stalls: c.stalls.load(Relaxed),
            stall_micros: c.stall_micros.load(Relaxed),
            max_stall_micros: c.max_stall_micros.load(Relaxed),
            paced_writes: c.paced_writes.load(Relaxed),
            pace_micros: c.pace_micros.load(Relaxed),
            max_pace_micros: c.max_pace_micros.load(Relaxed),
            upkeep_stalls: c.upkeep_stalls.load(Relaxed),
            max_upkeep_stall_micros: c.max_upkeep_stall_micros.load(Relaxed),
            max_log_sync_micros: c.max_log_sync_micros.load(Relaxed),
            ..Stats::default()
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}
