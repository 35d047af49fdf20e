//! The one interface every engine is driven through, so that each gets exactly the same work.

use std::path::Path;

use crate::counter::CounterBatch;
use crate::engines::spillway::Tuning;
use crate::scan::ScanResult;

/// A batch of records to write atomically. Keys and values are fixed-size within a run, so
/// they are kept flat: the same memory traffic for every engine's adapter.
#[derive(Debug, Default)]
pub struct RecordBatch {
    keys: Vec<u8>,
    values: Vec<u8>,
    key_len: usize,
    value_len: usize,
}

impl RecordBatch {
    pub fn new(key_len: usize, value_len: usize) -> RecordBatch {
        RecordBatch {
            keys: Vec::new(),
            values: Vec::new(),
            key_len,
            value_len,
        }
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
    }

    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        debug_assert_eq!((key.len(), value.len()), (self.key_len, self.value_len));
        self.keys.extend_from_slice(key);
        self.values.extend_from_slice(value);
    }

    pub fn len(&self) -> usize {
        self.keys.len() / self.key_len.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key + value bytes: the denominator of write amplification.
    pub fn user_bytes(&self) -> u64 {
        (self.keys.len() + self.values.len()) as u64
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.keys
            .chunks_exact(self.key_len)
            .zip(self.values.chunks_exact(self.value_len.max(1)))
    }
}

/// A key-value engine under test. Implementations must be usable from many threads at once.
pub trait Engine: Send + Sync {
    /// Write `batch` atomically; with `sync`, return only once it is durable (fsynced log).
    fn write(&self, batch: &RecordBatch, sync: bool) -> Result<(), String>;
    /// Apply `batch`'s increments to their counters (see [`counter`](crate::counter))
    /// atomically, all or none; with `sync`, return only once they are durable. Spillway and
    /// RocksDB write one merge operand per increment, without reading; the engines that have
    /// no merge operator (LevelDB, fjall, redb) read each counter, add, and write the sums in
    /// one batch or transaction — what their users must do, serialized against other
    /// increments so that none is lost.
    fn increment(&self, batch: &CounterBatch, sync: bool) -> Result<(), String>;
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// Read forward from the first key `>= start` (an empty `start` is the smallest key), at
    /// most `limit` records, counting them with [`ScanTally`](crate::scan::ScanTally). An
    /// engine that keeps no key order (a hashed Spillway store) returns an error; the scan
    /// phases report it for that engine and the run goes on.
    fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String>;
    /// Why the engine cannot read at all, if it cannot: the raw-log baselines keep no index.
    /// The phases that read or count are then not run on it (nor a load with readers beside
    /// it); each records this as its error, as a refused scan is, and the run goes on. Asked
    /// once per phase: a GET error in a phase that runs still ends the run.
    fn refuses_reads(&self) -> Option<String> {
        None
    }
    /// Bring in what the engine keeps in memory to serve reads, before a cold phase, where
    /// it loads that lazily and can be asked to load it now (Spillway's node selectors, see
    /// `Db::load_selectors`): so that a cold phase measures reads from the device, as it does
    /// for an engine that loads that at open (RocksDB's index and filter blocks). `true` if it
    /// did anything. LevelDB loads a table's index and filter at the table's first read, and
    /// has no call to do it sooner: its cold phases include those reads.
    fn warm_up(&self) -> Result<bool, String> {
        Ok(false)
    }
    /// The engine's own counters, where it keeps them (Spillway does).
    fn stats(&self) -> Option<spillway::Stats> {
        None
    }
    /// Flush what the engine buffers for durability and release the store.
    fn close(self: Box<Self>) -> Result<(), String>;
}

/// The engines this build can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    Spillway,
    /// Spillway with `background_spills` off: spills on the writer's thread, as before the
    /// pipelined write path. For before/after comparisons in one run.
    SpillwayInline,
    /// Spillway keeping keys in byte order (`KeyOrder::Ordered`): what scans need.
    SpillwayOrdered,
    /// Spillway keeping keys in hash order (`KeyOrder::Hashed`): its scans are refused.
    SpillwayHashed,
    /// An ordered Spillway that never merges a node's lists (`max_lists_per_node` off): what
    /// the default bound costs writes and saves scans.
    SpillwayOrderedUnmerged,
    RocksDb,
    LevelDb,
    /// fjall, an LSM-tree in Rust.
    Fjall,
    /// redb, a copy-on-write B-tree in Rust.
    Redb,
    /// Not an engine: each batch framed as a log frames it, appended to one growing file and
    /// fdatasynced when synced (see `engines::raw_log`). What the device alone costs.
    RawAppend,
    /// Not an engine: the same frames written over a file zero-filled ahead, so that an
    /// fdatasync flushes no size change: what a preallocated log would cost.
    RawOverwrite,
}

/// Every engine kind, in the order error messages list them.
const ALL: [EngineKind; 11] = [
    EngineKind::Spillway,
    EngineKind::SpillwayInline,
    EngineKind::SpillwayOrdered,
    EngineKind::SpillwayHashed,
    EngineKind::SpillwayOrderedUnmerged,
    EngineKind::RocksDb,
    EngineKind::LevelDb,
    EngineKind::Fjall,
    EngineKind::Redb,
    EngineKind::RawAppend,
    EngineKind::RawOverwrite,
];

impl EngineKind {
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Spillway => "spillway",
            EngineKind::SpillwayInline => "spillway-inline",
            EngineKind::SpillwayOrdered => "spillway-ordered",
            EngineKind::SpillwayHashed => "spillway-hashed",
            EngineKind::SpillwayOrderedUnmerged => "spillway-ordered-unmerged",
            EngineKind::RocksDb => "rocksdb",
            EngineKind::LevelDb => "leveldb",
            EngineKind::Fjall => "fjall",
            EngineKind::Redb => "redb",
            EngineKind::RawAppend => "raw-append",
            EngineKind::RawOverwrite => "raw-overwrite",
        }
    }

    pub fn parse(name: &str) -> Result<EngineKind, String> {
        ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|k| k.name()).collect();
            format!("unknown engine `{name}` ({})", names.join(", "))
        })
    }

    /// Whether this is one of Spillway's configurations (always built) rather than a peer.
    pub fn is_spillway(self) -> bool {
        matches!(
            self,
            EngineKind::Spillway
                | EngineKind::SpillwayInline
                | EngineKind::SpillwayOrdered
                | EngineKind::SpillwayHashed
                | EngineKind::SpillwayOrderedUnmerged
        )
    }

    /// Whether this is one of the raw-log baselines (always built: they need no library).
    pub fn is_baseline(self) -> bool {
        matches!(self, EngineKind::RawAppend | EngineKind::RawOverwrite)
    }

    /// Whether this binary was built with the engine (the peers need the `peers` feature).
    pub fn available(self) -> bool {
        self.is_spillway() || self.is_baseline() || cfg!(feature = "peers")
    }

    /// Open (creating) a store of this engine in `dir`, Spillway's with its default options.
    pub fn open(self, dir: &Path) -> Result<Box<dyn Engine>, String> {
        self.open_with(dir, &Tuning::default())
    }

    /// Open with `tuning` in Spillway's configurations (the peers and the baselines ignore
    /// it): the run's memory budget and options by name.
    pub fn open_with(self, dir: &Path, tuning: &Tuning) -> Result<Box<dyn Engine>, String> {
        use crate::engines::spillway;
        match self {
            EngineKind::Spillway => spillway::open(dir, true, tuning),
            EngineKind::SpillwayInline => spillway::open(dir, false, tuning),
            EngineKind::SpillwayOrdered => spillway::open_ordered(dir, None, tuning),
            EngineKind::SpillwayOrderedUnmerged => {
                spillway::open_ordered(dir, Some(usize::MAX), tuning)
            }
            EngineKind::SpillwayHashed => spillway::open_hashed(dir, tuning),
            EngineKind::RawAppend => crate::engines::raw_log::open_append(dir),
            EngineKind::RawOverwrite => crate::engines::raw_log::open_overwrite(dir),
            #[cfg(feature = "peers")]
            EngineKind::RocksDb => crate::engines::rocksdb::open(dir),
            #[cfg(feature = "peers")]
            EngineKind::LevelDb => crate::engines::leveldb::open(dir),
            #[cfg(feature = "peers")]
            EngineKind::Fjall => crate::engines::fjall::open(dir),
            #[cfg(feature = "peers")]
            EngineKind::Redb => crate::engines::redb::open(dir),
            #[cfg(not(feature = "peers"))]
            other => Err(format!(
                "{} is not in this build: rebuild with `--features peers` (see BENCHMARKS.md)",
                other.name()
            )),
        }
    }

    /// The options each engine runs with, for the report: the same spirit for all — log on,
    /// 10-bit Bloom filters, no compression, otherwise the engine's defaults. fjall and redb
    /// run on their defaults as they come (fjall's filters and redb's lack of a log are theirs).
    /// The last clause says how the engine applies counter increments.
    pub fn options_note(self) -> &'static str {
        match self {
            EngineKind::Spillway => "default Options (64 MiB root buffer and nodes, fan-out 64, fast-split ratio 8, 10 filter bits/key, background spills) + merge_operator U64Add; increments are merges",
            EngineKind::SpillwayInline => "default Options but background_spills: false (each spill runs on the writing thread) + merge_operator U64Add; increments are merges",
            EngineKind::SpillwayOrdered => "default Options but key_order: Ordered (keys kept in byte order, so scans work; nodes merge lists past 8) + merge_operator U64Add; increments are merges",
            EngineKind::SpillwayOrderedUnmerged => "default Options but key_order: Ordered and max_lists_per_node: Some(usize::MAX) (nodes never merge lists) + merge_operator U64Add; increments are merges",
            EngineKind::SpillwayHashed => "default Options but key_order: Hashed (keys kept in hash order; scans are refused) + merge_operator U64Add; increments are merges",
            EngineKind::RocksDb => "defaults + create_if_missing, compression none, block-based table with 10-bit Bloom filter + an associative uint64add merge operator (a Rust callback); increments are merges",
            EngineKind::LevelDb => "defaults + create_if_missing, compression none, 10-bit Bloom filter policy; no merge operator: increments read, add and write one batch, serialized by a lock",
            EngineKind::Fjall => "fjall 3.1 defaults (64 MiB memtable, 32 MiB block cache, leveled compaction, Bloom filters: 0.01% false positives in L0, 10 bits/key below), no compression (built without its lz4 feature); one keyspace; one write batch per batch, journal fdatasynced (PersistMode::SyncData) when synced, written to the OS (PersistMode::Buffer, its default) when not; no merge operator: increments read, add and write one batch, serialized by a lock",
            EngineKind::RawAppend => "not an engine: each batch one frame (a 16-byte header: crc32c of the payload, its length and record count, crc32c of those; then varint key and value lengths, key, value per record), appended with one write(2) to one growing file, fdatasynced when synced; one lock, no group commit; no index: reads, scans and increments are refused",
            EngineKind::RawOverwrite => "not an engine: raw-append's frames, pwrite(2) at an offset into a file zero-filled (real zeros, fdatasynced) 64 MiB at a time — at open, and inline when a write would pass the end — so that a synced write's fdatasync flushes no size change; one lock, no group commit; no index: reads, scans and increments are refused",
            EngineKind::Redb => "redb 4.6 defaults (1 GiB page cache, no log: a commit writes the B-tree's changed pages); one table; one write transaction per batch, Durability::Immediate when synced, Durability::None when not (made durable at close); no merge operator: increments read, add and write in one write transaction",
        }
    }
}
