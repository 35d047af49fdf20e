//! `spillway`: load, read and inspect a Spillway store from the command line.
//!
//! This file holds the command-line definitions and the dispatch; each command lives in its
//! own module. Every failure is printed once as `error: <message>` (the engine's `Display`
//! text for engine errors). Usage errors — clap's, and the values the CLI or the engine's
//! option checks refuse — exit with status 2; every other failure with 1.

mod bench;
mod check;
mod error;
mod escape;
mod expiry;
mod kv;
mod load;
mod loadgen;
mod operators;
mod progress;
mod read;
mod report;
mod scan;
mod sessions;
mod stats;
mod store;
mod transfer;
mod tuning;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use spillway::WriteOptions;

use crate::error::CliError;
use crate::tuning::Tuning;

#[derive(Parser, Debug)]
#[command(
    name = "spillway",
    version,
    about = "Load, read and inspect a Spillway store",
    after_help = "Exit status: 0 on success; 1 when a command fails at its work (a store that is \
                  not there, a key not found, a check that finds a problem); 2 for a usage \
                  error (a flag or value the command refuses)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write generated records in batches, then print throughput and engine metrics.
    ///
    /// With --op add, a counter load: record i, instead of a put, is a merge that adds 1 to
    /// the counter (merge operator spillway.u64add) of the key of record i mod --distinct,
    /// so that increments pile up on --distinct keys, round-robin; the report adds the
    /// engine's merge figures. `read` then checks every counter's exact value — if the load
    /// went into a store no earlier load wrote to (otherwise the increments add to values
    /// it does not know, and it refuses).
    Load(LoadArgs),
    /// Random GETs of the records `load` wrote, checking every value.
    ///
    /// After `load --op add`, GETs of its counters, checking each one's count: exactly after
    /// a complete load, and after one that stopped early between what its acknowledged
    /// records added and what every planned record would have. A counter load into a store
    /// an earlier load had written to is refused: its counters' values are not known.
    Read(ReadArgs),
    /// Set KEY to VALUE (durable when the command returns).
    ///
    /// VALUE is an argument, `-` to read it from stdin, or --value-file FILE: stdin and files
    /// are taken byte for byte (`spillway get --raw K | spillway put K2 -` copies a value).
    ///
    /// With --ttl the value expires: from DURATION after the write on, every command finds
    /// KEY absent (get, scan, read). Without it, the value does not expire, whatever expiry
    /// KEY had before.
    #[command(after_long_help = escape::RULE)]
    Put {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg())]
        key: escape::Key,
        /// The value (bytes; scan's escapes decoded); `-` reads it from stdin.
        #[arg(allow_hyphen_values = true, value_parser = escape::value_arg(),
              required_unless_present = "value_file", conflicts_with = "value_file")]
        value: Option<escape::Value>,
        /// Read the value from FILE, byte for byte, instead of VALUE (`-`: stdin).
        #[arg(long, value_name = "FILE")]
        value_file: Option<PathBuf>,
        /// The value expires DURATION after the write: a number and a unit, ms, s, m, h or d
        /// (1500ms, 30s, 5m, 1.5h, 7d), or a number of seconds (90); at least 1ms, by the wall
        /// clock, kept to the millisecond.
        #[arg(long, value_name = "DURATION", value_parser = expiry::parse_duration)]
        ttl: Option<std::time::Duration>,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the value of KEY and a newline; if it is absent, print nothing on stdout,
    /// "(not found)" on stderr, and exit with status 1.
    ///
    /// --raw prints the value's bytes exactly, with no newline after them (`get --raw K >
    /// FILE` holds the value; `put K2 --value-file FILE` puts it back). In a store of counters
    /// (merge operator spillway.u64add: `merge --op add`, `load --op add`), an 8-byte value
    /// prints as the decimal number it holds (an unsigned 64-bit integer: a counter taken
    /// below zero wraps around to 2^64 - n); --raw prints its bytes.
    ///
    /// --with-expiry prints a second line: `no expiry`, or when the key expires, in UTC to the
    /// millisecond, and the time left by the wall clock: `expires 2026-11-26T01:30:00.123Z
    /// (in 29.877s)`. A key whose time has come is absent, as for every read.
    #[command(after_long_help = escape::RULE)]
    Get {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg())]
        key: escape::Key,
        /// Print the value's bytes as stored, even a counter's, and nothing after them.
        #[arg(long)]
        raw: bool,
        /// Print when the key expires on a line after the value (`no expiry` if it does not).
        #[arg(long, conflicts_with = "raw")]
        with_expiry: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Delete KEY, or every key of a range, a prefix or the keyspace (durable when the
    /// command returns).
    ///
    /// Deleting an absent key is not an error. --from START and --to END delete the keys
    /// `scan --from START --to END` lists: from START (inclusive) to END (exclusive); without
    /// --from the range starts at the first key, without --to it runs to the last;
    /// --range START..END says the same in one argument (`a..`, `..b`). --prefix P
    /// deletes every key starting with P. These need an ordered store (or keyspace), as scan's
    /// do. --all deletes every key of the store's default keyspace (or of --keyspace NAME), in
    /// a store of either order. A range is one write, whatever it holds: the keys are not
    /// read or counted, and a key written after it is not covered. Their
    /// space on disk comes back as the store's spills meet them, not at once.
    #[command(after_long_help = escape::RULE)]
    Del {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg(),
              required_unless_present_any = ["from", "to", "range", "prefix", "all"],
              conflicts_with_all = ["from", "to", "range", "prefix", "all"])]
        key: Option<escape::Key>,
        /// Delete every key from KEY on (inclusive), up to --to if given.
        #[arg(long, value_name = "KEY", allow_hyphen_values = true,
              value_parser = escape::arg())]
        from: Option<escape::Key>,
        /// Delete every key before KEY (exclusive), from --from if given.
        #[arg(long, value_name = "KEY", allow_hyphen_values = true,
              value_parser = escape::arg())]
        to: Option<escape::Key>,
        /// Delete every key from START (inclusive) to END (exclusive): split at the first `..`
        /// (a START holding `..` or ending in `.` writes those dots `\x2e`); either side may
        /// be empty.
        #[arg(long, value_name = "START..END", allow_hyphen_values = true,
              value_parser = escape::range_arg(), conflicts_with_all = ["from", "to"])]
        range: Option<escape::KeyRange>,
        /// Delete every key that starts with P.
        #[arg(long, value_name = "P", allow_hyphen_values = true,
              value_parser = escape::arg(), conflicts_with_all = ["from", "to", "range"])]
        prefix: Option<escape::Key>,
        /// Delete every key of the keyspace (the default one, or --keyspace NAME).
        #[arg(long, conflicts_with_all = ["from", "to", "range", "prefix"])]
        all: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Make KEY expire DURATION from now, if it is there (durable when the command returns).
    ///
    /// A later expire replaces an earlier one, and `persist` takes it away. KEY is not read:
    /// the change is written as a message, applied where the key is, so an absent (or
    /// expired) key stays absent and that is not an error, as for `del`. `get --with-expiry`
    /// shows what it did.
    #[command(after_long_help = escape::RULE)]
    Expire {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg())]
        key: escape::Key,
        /// A number and a unit, ms, s, m, h or d (1500ms, 30s, 5m, 1.5h, 7d), or a number of
        /// seconds (90); at least 1ms, by the wall clock, kept to the millisecond.
        #[arg(value_parser = expiry::parse_duration)]
        duration: std::time::Duration,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Take KEY's expiry away, if it is there, so that it stays until deleted (durable when
    /// the command returns).
    ///
    /// As `expire`, a message: KEY is not read, and an absent (or expired) key stays absent
    /// without an error.
    #[command(after_long_help = escape::RULE)]
    Persist {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg())]
        key: escape::Key,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Merge OPERAND into KEY's value with a merge operator (durable when the command returns).
    ///
    /// An upsert: the value is not read, and the store folds the operand into it later.
    /// Creates the store if needed, as put does.
    ///
    /// --op add: OPERAND is a decimal integer, added to the counter at KEY (an 8-byte
    /// unsigned integer, little-endian; an absent key counts as 0). A negative OPERAND
    /// subtracts (`merge --op add KEY -3`; `--` before KEY works too), wrapping around at
    /// 2^64; `get` and `scan` print a counter as its number. --op append: OPERAND's bytes are
    /// appended to the value, with --separator between the pieces if one is given (none
    /// before the first). --op max, --op min: the value becomes the greatest (least) of it
    /// and OPERAND, comparing bytes ("9" > "10": pad numbers to one width).
    ///
    /// A store records the operator of its first merge (or `load --op add`) and from then on
    /// merges only with it: another --op, or another separator, is an error. Every command
    /// opens such a store with its operator by itself. A `put` value in a store of counters
    /// is not a counter unless it has 8 bytes: adding to it fails the reads of its key.
    #[command(after_long_help = escape::RULE)]
    Merge {
        /// The key (bytes; scan's escapes decoded, see below).
        #[arg(allow_hyphen_values = true, value_parser = escape::arg())]
        key: escape::Key,
        /// The operand: a decimal integer for --op add, bytes for the others (scan's
        /// escapes decoded); `-` reads it from stdin.
        #[arg(allow_hyphen_values = true, value_parser = escape::value_arg(),
              required_unless_present = "operand_file", conflicts_with = "operand_file")]
        operand: Option<escape::Value>,
        /// Read the operand from FILE, byte for byte, instead of OPERAND (`-`: stdin).
        #[arg(long, value_name = "FILE")]
        operand_file: Option<PathBuf>,
        /// The merge operator.
        #[arg(long, value_enum)]
        op: operators::Op,
        /// With --op append: the bytes between two pieces, written with the escapes `scan`
        /// prints (`\n` for a newline, `\xHH` for any byte).
        #[arg(long, value_name = "S", allow_hyphen_values = true,
              value_parser = escape::arg())]
        separator: Option<escape::Key>,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print pairs in key order, one per line: the key, a tab, the value.
    ///
    /// In a store of counters (merge operator spillway.u64add) an 8-byte value prints as its
    /// decimal number, as `get` prints it; --raw prints it escaped as below.
    ///
    /// A key or value that is valid UTF-8 prints as its text; one that is not prints as Rust's
    /// escape_ascii does, printable ASCII as itself and every other byte as `\xHH`. Either way
    /// a backslash prints as `\\`, tab, newline and return as `\t`, `\n`, `\r`, and control
    /// characters as `\xHH`, so every line splits on its one tab and reads back byte for byte
    /// (a sequential `load` key: `\x00\x00\x00\x00\x00\x00\x00\x2a`). --from, --to and
    /// --prefix take keys written the same way, and so do the KEY, VALUE and OPERAND of get,
    /// put, del and merge: a key printed here can be typed back as it is. (`get` prints a
    /// value's raw bytes: the same text for a printable value.)
    ///
    /// --from is inclusive and --to exclusive, as the range from..to; they and --prefix need a
    /// store created with --ordered. On a hashed store, scan without them lists every pair in
    /// hash order. The count goes to stderr at the end; a closed pipe (`| head`) ends the scan
    /// with status 0.
    ///
    /// A key that cannot be read because its merge operands do not fold (`put k text`, then
    /// `merge --op add k 1`) is reported on stderr, `error: skipped KEY: ...`, and the scan
    /// goes on with the next keys; it then ends with exit status 1, after every other pair.
    /// (--limit counts the pairs printed.) Any other error ends the scan at once, status 1.
    Scan {
        /// First key to print (inclusive).
        #[arg(long, value_name = "KEY", allow_hyphen_values = true,
              value_parser = escape::arg())]
        from: Option<escape::Key>,
        /// Key to stop before (exclusive).
        #[arg(long, value_name = "KEY", allow_hyphen_values = true,
              value_parser = escape::arg())]
        to: Option<escape::Key>,
        /// Only keys that start with P.
        #[arg(long, value_name = "P", allow_hyphen_values = true,
              value_parser = escape::arg(), conflicts_with_all = ["from", "to"])]
        prefix: Option<escape::Key>,
        /// Stop after N pairs.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
        /// Last key first.
        #[arg(long)]
        reverse: bool,
        /// Print every value's bytes (escaped), even counters'.
        #[arg(long)]
        raw: bool,
        #[command(flatten)]
        keyspace: KeyspaceArg,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the store's key order, merge operator, shape, files, memory and disk figures,
    /// and its keyspaces.
    ///
    /// Also the engine's counters since open (writes, reads, merges): for a store opened
    /// just to look at it, mostly zero, besides what the open replayed from the logs. The
    /// key order, merge operator and keys at the top are the default keyspace's; the other
    /// figures are the whole store's. Under "Keyspaces", one line per keyspace (`(default)`
    /// first): its key order, merge operator and keys.
    Stats {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Verify every checksum, list (order, filter, index) and log record of a closed store,
    /// and the manifest against the files; exit status 1 if anything is wrong.
    ///
    /// Exit status: 0 if the store is sound; 1 if a problem was found, or the store could not
    /// be checked at all (no store there, in use by another process, unreadable); 2 for a
    /// usage error. Notes never fail a check: a torn log tail (a crash mid-append) and files
    /// no sound manifest reaches — the lists of a spill a crash interrupted, finished or not,
    /// logs already spilled — are what a crash leaves, and the next open removes them. With
    /// --repair the status is that of the repaired store.
    Check {
        /// Also remove the files no sound manifest needs (an interrupted spill's lists,
        /// spilled logs, a half-written manifest); nothing when the manifest is damaged.
        #[arg(long)]
        repair: bool,
        /// The store's folder.
        #[arg(long, value_name = "DIR", default_value = "./spillway-data")]
        path: PathBuf,
    },
    /// Run Spillway, RocksDB, LevelDB, fjall and redb in turn on the same workload and print
    /// each figure as a ratio to the first engine's (the peers need a build with
    /// `--features peers`).
    ///
    /// A scan workload (ycsb-e, scan-all) that an engine cannot complete — its scan returns an
    /// error, as a store without key order does, or a full scan misses records — is reported
    /// under the table for that engine while the run goes on; the exit status is then 1. So is
    /// every workload that reads on raw-append and raw-overwrite, which only write.
    ///
    /// `--workloads transfer` runs transactions instead (issue 29) on Spillway, RocksDB's
    /// OptimisticTransactionDB, fjall, redb and LMDB: commits/s and abort rate.
    ///
    /// `--workloads sessions` runs a session store (issue 30) on Spillway, RocksDB, fjall and
    /// Redis: keys written with a TTL and read zipfian, in real time; space over time against
    /// the live data, inserts/s and GETs/s.
    Bench(BenchArgs),
    /// Serve the store to Redis clients (the RESP protocol) until SIGTERM or SHUTDOWN.
    ///
    /// The store opens with the engine tuning flags and -o options below, as for every
    /// other command; an existing store keeps its key order and merge operator.
    Serve(ServeArgs),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// The store's folder (created if missing).
    #[arg(long, value_name = "DIR", default_value = "./spillway-data")]
    path: PathBuf,
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:6380")]
    bind: std::net::SocketAddr,
    /// When a write's reply leaves: after an fsync of the log (always), or once the log
    /// has it, fsynced within a second (everysec) or when the OS writes it back (no).
    #[arg(long, value_enum, default_value = "always")]
    fsync: ServeFsync,
    /// Most clients connected at once; more are refused with Redis's error.
    #[arg(long, default_value_t = 10_000)]
    max_clients: usize,
    /// A password clients must give (AUTH) before any other command.
    #[arg(long, value_name = "PASSWORD")]
    requirepass: Option<String>,
    /// Databases clients SELECT from (0 to N-1): database 0 is the store's default keyspace,
    /// database n a keyspace of its own (`redis:db:n`), made when first written.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..))]
    databases: u16,

    #[command(flatten)]
    tuning: Tuning,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ServeFsync {
    Always,
    Everysec,
    No,
}

/// `bench --engines` by default: the peers only where they are built in, so that a plain
/// `spillway bench` runs in every build.
const DEFAULT_ENGINES: &str = if cfg!(feature = "peers") {
    "spillway,rocksdb,leveldb"
} else {
    "spillway"
};

#[derive(Args, Debug)]
struct BenchArgs {
    /// Engines to run, in order; the first is the base of every ratio: spillway,
    /// spillway-inline (spills on the writer's thread), spillway-ordered and spillway-hashed
    /// (keys kept in byte order or hash order), rocksdb, leveldb, fjall, redb; and two
    /// baselines of the device's own cost, which only write: raw-append (each batch framed as
    /// a log would, one write to a growing file, fdatasync when synced) and raw-overwrite (the
    /// same into a file zero-filled ahead, so an fdatasync flushes no size change). The
    /// default is the comparison this build can run: spillway,rocksdb,leveldb in a build with
    /// `--features peers`, spillway alone otherwise. The transfer workload runs on the
    /// engines with transactions: spillway, rocksdb, fjall, redb and lmdb (all of them by
    /// default, as the build has them). The sessions workload runs on spillway, rocksdb (a
    /// TTL compaction filter), fjall (scan-and-delete every TTL/4), fjall-filter (fjall 3.1's
    /// compaction filter) and redis (a redis-server of its own; memory, not disk): all that
    /// this build and machine have by default; and spillway-ordered, by name.
    #[arg(long, value_delimiter = ',')]
    engines: Option<Vec<String>>,

    /// Records to load. In the sessions workload: keys written per TTL (the live data once
    /// the run is one TTL old), at a steady rate of N per --ttl-secs.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    records: u64,

    /// Bytes per record: an 8-byte key plus a value of the rest.
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    record_size: usize,

    /// Keys: random (uniform random 8-byte keys) or sequential (big-endian record numbers, so
    /// each writer thread inserts in ascending byte order). Reads and YCSB choose among the
    /// loaded keys either way.
    #[arg(long, value_enum, default_value_t = KeysArg::Random)]
    keys: KeysArg,

    /// Workloads, in order (load first): load, settle (wait until the engine stops writing),
    /// reopen (close and open again, timed), read, read-missing, ycsb-a, ycsb-b, ycsb-c,
    /// ycsb-f; and for ordered engines ycsb-e (95% scans of 1..=100 records from a loaded key,
    /// 5% inserts of new keys) and scan-all (one scan of every record from the smallest key,
    /// checked against the count written; records/s and MB/s). Operations are records in
    /// load and scan-all; elsewhere a GET, an update, a scan or an insert is one.
    ///
    /// Or transfer, alone (issue 29): --accounts accounts of 8-byte big-endian numbers and
    /// u64 balances; each thread moves an amount between two of them (--distribution) in a
    /// transaction that reads both and writes both, retried after a conflict; commits/s,
    /// abort rate, and the balances summed after a reopen (the run fails unless conserved).
    ///
    /// Or sessions, alone (issue 30): one writer inserts new 8-byte keys (--keys: random session
    /// ids, or sequential, time-ordered ones) at a steady --records per --ttl-secs, each with a
    /// TTL of --ttl-secs, in writes of up to --batch records; --threads GET threads read flat out
    /// among the --records newest keys (--distribution, zipfian by default) and check each value,
    /// and ask now and then for an expired key (the run fails if one comes back); every
    /// --sample-secs the store's space (du of its folder; redis: used_memory) is sampled beside
    /// the live data (key + value bytes written within the last TTL); for --seconds (10 TTLs by
    /// default). --svg draws the space over time.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "load,settle,reopen,read,read-missing,ycsb-a,ycsb-b,ycsb-c,ycsb-f"
    )]
    workloads: Vec<String>,

    /// Accounts in the transfer workload.
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = count_in(2, u64::MAX))]
    accounts: u64,

    /// How long the transfer workload runs on each engine [default: 10, unless --transfers];
    /// the sessions workload [default: 10 × --ttl-secs].
    #[arg(long, value_name = "SECONDS")]
    seconds: Option<f64>,

    /// The sessions workload's TTL, T, in seconds: every key expires T after its write.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    ttl_secs: f64,

    /// How often the sessions workload samples each store's space, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
    sample_secs: f64,

    /// Transfers (committed or skipped) the transfer workload does on each engine, instead
    /// of (or before) --seconds.
    #[arg(long, value_name = "N", value_parser = count_in(1, u64::MAX))]
    transfers: Option<u64>,

    /// Operations in each read or YCSB workload.
    #[arg(long, value_name = "M", default_value_t = 1_000_000)]
    ops: u64,

    /// `batch`: fsync the log on every write (per 1000-record batch in the load, per update or
    /// insert in YCSB, per commit in transfer, per write in sessions); `none`: log written,
    /// never waited for [default: batch; none in sessions, as a session store writes].
    #[arg(long, value_enum)]
    sync: Option<SyncMode>,

    /// Writer (and reader) threads.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = count_in(1, 256))]
    threads: u64,

    /// Records per write batch in the load.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = count_in(1, u64::MAX))]
    batch: u64,

    /// Extra threads doing GETs of already loaded keys while the load runs (their latency is
    /// reported beside the load's).
    #[arg(long, value_name = "R", default_value_t = 0, value_parser = count_in(0, 64))]
    readers: u64,

    /// Threads busy-looping at normal priority for the whole run, beside the engines (in the
    /// process that starts them, so their CPU time is not the engines'): how each engine
    /// fares on a busy machine.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = count_in(0, 64))]
    cpu_hog: u64,

    /// Key choice in reads and YCSB (ycsb-e's scan starts too): uniform, or YCSB's scrambled
    /// zipfian (θ = 0.99) [default: uniform; zipfian in sessions].
    #[arg(long, value_parser = ["uniform", "zipfian"])]
    distribution: Option<String>,

    /// Evict each store from the page cache before every read phase: each engine is closed,
    /// evicted and opened again (untimed); Spillway then reads its node selectors in
    /// (`Db::load_selectors`, reported as "warm-up s", not part of the phase), as RocksDB
    /// reads its index and filter blocks at open — so the phase measures reads from the
    /// device.
    #[arg(long)]
    cold: bool,

    /// Spillway's memory budget in MiB (`Options::memory_budget`) for each of its
    /// configurations; the peers keep their defaults.
    #[arg(long, value_name = "MIB")]
    spillway_memory_mb: Option<f64>,

    /// Set an engine option by name in each of Spillway's configurations, after its own
    /// (repeatable; e.g. -o fan_out=1024 -o root_buffer_size=512M; names: spillway load
    /// --help); the peers keep their defaults.
    #[arg(short = 'o', long = "option", value_name = "NAME=VALUE", value_parser = tuning::parse_option)]
    options: Vec<tuning::NamedOption>,

    /// Seed of the generated records.
    #[arg(long, default_value_t = 0)]
    seed: u64,

    /// Where the stores are built (each engine gets a subfolder, removed afterwards, as is
    /// DIR if the run created it, whether the run succeeds or fails).
    #[arg(long, value_name = "DIR", default_value = "./spillway-bench-data")]
    dir: PathBuf,

    /// Keep the stores after the run (a failed one's too); a run that loaded them notes which
    /// records they hold, for --use-existing.
    #[arg(long)]
    keep: bool,

    /// Open the stores a run with --keep loaded in --dir instead of loading new ones, as
    /// db_bench's --use_existing_db does: --workloads without load, and the records' flags
    /// (--records, --record-size, --seed, --keys) those of the run that loaded them (checked).
    /// The stores are removed afterwards unless --keep is given again.
    #[arg(long)]
    use_existing: bool,

    /// Write the raw results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write a chart of throughput and p99 latency as SVG here (sessions: space over time).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// `--keyspace`, for the commands that read or write keys (put, get, del, expire, persist,
/// merge, scan, load, read).
#[derive(Args, Debug)]
struct KeyspaceArg {
    /// Work in keyspace NAME of the store instead of the default one. put, merge and load
    /// create it if needed, with --ordered or -o key_order, and merge's --op, load's --op add
    /// or -o merge_operator, which then describe the keyspace, not the store: its order and
    /// operator are fixed when it is created. get, scan, del, expire and persist need it to
    /// exist. read reads the keyspace the last load went into (its LOADGEN file says which);
    /// given, NAME must be that one. `""` is the default keyspace. `spillway stats` lists a
    /// store's keyspaces.
    #[arg(long, value_name = "NAME")]
    keyspace: Option<String>,
}

impl KeyspaceArg {
    fn name(&self) -> Option<&str> {
        self.keyspace.as_deref()
    }
}

/// Which store, and how to open it; shared by every command. Each command flattens it after
/// its own arguments: clap's "Engine tuning" heading would otherwise swallow those.
#[derive(Args, Debug)]
struct StoreArgs {
    /// The store's folder.
    #[arg(long, value_name = "DIR", default_value = "./spillway-data")]
    path: PathBuf,

    #[command(flatten)]
    tuning: Tuning,
}

#[derive(Args, Debug)]
struct LoadArgs {
    /// Records to write.
    #[arg(long, value_name = "N")]
    records: u64,

    /// Bytes per record: an 8-byte key plus a value of the rest (at least 9). Required
    /// with --op put; a counter's record is an 8-byte key and an 8-byte increment.
    #[arg(long, value_name = "BYTES")]
    record_size: Option<usize>,

    /// What each record is: put (its generated value) or add (1 added to a counter: a merge
    /// with the spillway.u64add operator, which the store records).
    #[arg(long, value_enum, default_value_t = LoadOp::Put)]
    op: LoadOp,

    /// With --op add: the keys the increments go to, round-robin (record i adds to the
    /// counter of record i mod N's key) [default: --records, one increment per key].
    #[arg(long, value_name = "N", value_parser = count_in(1, u64::MAX))]
    distinct: Option<u64>,

    /// Seed of the keys and values; `read` finds it in the LOADGEN file.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,

    /// Records per write batch.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = count_in(1, u64::MAX))]
    batch: u64,

    /// Whether each batch waits for the log to be fsynced.
    #[arg(long, value_enum, default_value_t = SyncMode::Batch)]
    sync: SyncMode,

    /// Writer threads sharing the load (and, with `--sync batch`, group commits).
    #[arg(long, value_name = "T", default_value_t = 1,
          value_parser = count_in(1, 256))]
    threads: u64,

    /// Keys rising in byte order: record i's key is i as a big-endian u64 (the seed still
    /// makes the values), instead of a random 8-byte key; `read` finds the choice in the
    /// LOADGEN file.
    #[arg(long)]
    sequential: bool,

    #[command(flatten)]
    keyspace: KeyspaceArg,

    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LoadOp {
    /// Put each record's generated value.
    Put,
    /// Add 1 to a counter per record (spillway.u64add merges).
    Add,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum KeysArg {
    /// Uniform random keys (a mix of the seed and the record number).
    Random,
    /// The record number, big-endian: byte order is insertion order.
    Sequential,
}

impl KeysArg {
    fn keys(self) -> spillway_bench::Keys {
        match self {
            KeysArg::Random => spillway_bench::Keys::Random,
            KeysArg::Sequential => spillway_bench::Keys::Sequential,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SyncMode {
    /// Wait for an fsync of the log after every batch (WriteOptions::SYNC).
    Batch,
    /// Never wait for fsync (WriteOptions::NO_SYNC); the log is synced once at close.
    None,
}

impl SyncMode {
    fn write_options(self) -> WriteOptions {
        match self {
            SyncMode::Batch => WriteOptions::SYNC,
            SyncMode::None => WriteOptions::NO_SYNC,
        }
    }
}

#[derive(Args, Debug)]
struct ReadArgs {
    /// GETs to issue.
    #[arg(long, value_name = "M")]
    ops: u64,

    /// Seed of the random choice of keys (independent of the load's seed).
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,

    #[command(flatten)]
    keyspace: KeyspaceArg,

    #[command(flatten)]
    store: StoreArgs,
}

/// A whole number from `min` to `max`, for clap. Its own range check words an open range as
/// `0 is not in 1..18446744073709551615`; this one says what the flag takes.
fn count_in(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let n: u64 = text
            .parse()
            .map_err(|_| "must be a whole number".to_string())?;
        match (min, max) {
            _ if (min..=max).contains(&n) => Ok(n),
            (_, u64::MAX) => Err(format!("must be at least {min}")),
            (0, _) => Err(format!("must be at most {max}")),
            _ => Err(format!("must be from {min} to {max}")),
        }
    }
}

fn main() -> ExitCode {
    // `spillway bench` runs each engine in a child copy of this program.
    let result = if let Some(job) = std::env::var_os(spillway_bench::CHILD_ENV) {
        bench::child(std::path::Path::new(&job)).map(|()| ExitCode::SUCCESS)
    } else if let Some(job) = std::env::var_os(spillway_bench::transfer_run::CHILD_ENV) {
        transfer::child(std::path::Path::new(&job)).map(|()| ExitCode::SUCCESS)
    } else if let Some(job) = std::env::var_os(spillway_bench::sessions_run::CHILD_ENV) {
        sessions::child(std::path::Path::new(&job)).map(|()| ExitCode::SUCCESS)
    } else {
        run(Cli::parse().command)
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            if let Some(hint) = err.hint() {
                eprintln!("  ({hint})");
            }
            ExitCode::from(err.exit_code())
        }
    }
}

/// Only `load`, `put` and `merge` may create a store; the other commands report a missing
/// one (see `store`, where each command's open call is chosen).
fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Load(a) => {
            let plan = load::Plan {
                records: a.records,
                record_size: load_record_size(&a)?,
                counters: match a.op {
                    LoadOp::Put => None,
                    LoadOp::Add => Some(a.distinct.unwrap_or(a.records).max(1)),
                },
                seed: a.seed,
                batch: a.batch,
                sync: a.sync.write_options(),
                threads: a.threads,
                keys: if a.sequential {
                    spillway_records::Keys::Sequential
                } else {
                    spillway_records::Keys::Random
                },
                keyspace: a.keyspace.keyspace,
            };
            load::run(&a.store.path, &a.store.tuning, &plan)?;
        }
        Command::Read(a) => {
            read::run(
                &a.store.path,
                &a.store.tuning,
                a.keyspace.name(),
                a.ops,
                a.seed,
            )?;
        }
        Command::Put {
            store,
            keyspace,
            key,
            value,
            value_file,
            ttl,
        } => {
            let value = source(value, value_file);
            kv::put(
                &store.path,
                &store.tuning,
                keyspace.name(),
                &key.0,
                value,
                ttl,
            )?;
        }
        Command::Get {
            store,
            keyspace,
            key,
            raw,
            with_expiry,
        } => {
            let print = kv::Print { raw, with_expiry };
            return kv::get(&store.path, &store.tuning, keyspace.name(), &key.0, print);
        }
        Command::Del {
            store,
            keyspace,
            key,
            from,
            to,
            range,
            prefix,
            all,
        } => {
            let what = match (key, prefix, all, range) {
                (Some(key), ..) => kv::Deletion::Key(key.0),
                (None, Some(prefix), ..) => kv::Deletion::Prefix(prefix.0),
                (None, None, true, _) => kv::Deletion::All,
                (None, None, false, Some(r)) => kv::Deletion::Range {
                    from: r.start,
                    to: r.end,
                },
                (None, None, false, None) => kv::Deletion::Range {
                    from: from.map(|k| k.0),
                    to: to.map(|k| k.0),
                },
            };
            kv::del(&store.path, &store.tuning, keyspace.name(), what)?;
        }
        Command::Expire {
            store,
            keyspace,
            key,
            duration,
        } => {
            let change = kv::Change::Expire(duration);
            kv::change_expiry(&store.path, &store.tuning, keyspace.name(), &key.0, change)?;
        }
        Command::Persist {
            store,
            keyspace,
            key,
        } => {
            let change = kv::Change::Persist;
            kv::change_expiry(&store.path, &store.tuning, keyspace.name(), &key.0, change)?;
        }
        Command::Merge {
            key,
            operand,
            operand_file,
            op,
            separator,
            keyspace,
            store,
        } => {
            let separator = separator.as_ref().map(|s| s.0.as_slice());
            let operand = source(operand, operand_file);
            kv::merge(
                &store.path,
                &store.tuning,
                keyspace.name(),
                &key.0,
                operand,
                op,
                separator,
            )?;
        }
        Command::Scan {
            from,
            to,
            prefix,
            limit,
            reverse,
            raw,
            keyspace,
            store,
        } => {
            let query = scan::Query {
                from,
                to,
                prefix,
                limit,
                reverse,
                raw,
            };
            scan::run(&store.path, &store.tuning, keyspace.name(), &query)?;
        }
        Command::Stats { store } => {
            stats::run(&store.path, &store.tuning)?;
        }
        Command::Check { repair, path } => check::run(&path, repair)?,
        Command::Bench(a) if a.workloads.iter().any(|w| w == "transfer") => {
            transfer::run(&transfer_plan(a)?)?
        }
        Command::Bench(a) if a.workloads.iter().any(|w| w == "sessions") => {
            sessions::run(&sessions_plan(a)?)?
        }
        Command::Bench(a) => bench::run(&bench_plan(a)?)?,
        Command::Serve(a) => {
            let mut config = spillway_server::Config::new(a.path);
            config.options = a.tuning.validated(true)?;
            config.bind = a.bind;
            config.max_clients = a.max_clients;
            config.databases = usize::from(a.databases);
            config.password = a.requirepass;
            config.fsync = match a.fsync {
                ServeFsync::Always => spillway_server::Fsync::Always,
                ServeFsync::Everysec => spillway_server::Fsync::EverySec,
                ServeFsync::No => spillway_server::Fsync::No,
            };
            spillway_server::run(config, |addr| eprintln!("spillway: serving on {addr}"))
                .map_err(CliError::Failed)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A value's argument or its file: clap makes sure exactly one is given.
fn source(arg: Option<escape::Value>, file: Option<PathBuf>) -> kv::Source {
    match (arg, file) {
        (_, Some(path)) => kv::Source::File(path),
        (Some(value), None) => kv::Source::Arg(value),
        (None, None) => unreachable!("clap requires VALUE or its file"),
    }
}

/// `--record-size`, which a put load needs; a counter load's records are an 8-byte
/// key and an 8-byte increment, and `--distinct` is for counter loads only.
fn load_record_size(a: &LoadArgs) -> Result<usize, CliError> {
    let counter = 2 * spillway_records::KEY_LEN;
    match (a.op, a.record_size, a.distinct) {
        (LoadOp::Put, _, Some(_)) => Err(CliError::Usage(
            "--distinct goes with --op add: a put load writes one key per record".into(),
        )),
        (LoadOp::Put, Some(size), None) => Ok(size),
        (LoadOp::Put, None, None) => Err(CliError::Usage(
            "--record-size is required: the bytes of each record, an 8-byte key and a value of \
             the rest (a counter load, --op add, needs none)"
                .into(),
        )),
        (LoadOp::Add, None, _) => Ok(counter),
        (LoadOp::Add, Some(size), _) if size == counter => Ok(size),
        (LoadOp::Add, Some(size), _) => Err(CliError::Usage(format!(
            "--record-size {size} does not go with --op add: a counter's record is an 8-byte \
             key and an 8-byte increment ({counter} bytes)"
        ))),
    }
}

fn bench_plan(a: BenchArgs) -> Result<bench::Plan, CliError> {
    let engines = a
        .engines
        .unwrap_or_else(|| DEFAULT_ENGINES.split(',').map(String::from).collect())
        .iter()
        .map(|e| spillway_bench::EngineKind::parse(e))
        .collect::<Result<Vec<_>, _>>();
    let phases = a
        .workloads
        .iter()
        .map(|w| spillway_bench::Phase::parse(w))
        .collect::<Result<Vec<_>, _>>();
    spillway_bench::workload::Workload::new(a.seed, a.record_size).map_err(CliError::Usage)?;
    let spillway_memory_budget = a.spillway_memory_mb.map(|mb| (mb * 1048576.0) as usize);
    let spillway_options: Vec<(String, String)> = a
        .options
        .iter()
        .map(|o| (o.name.to_string(), o.value.clone()))
        .collect();
    // Checked here, where it is a usage error, rather than in each engine's child process.
    let tuning = spillway_bench::Tuning {
        memory_budget: spillway_memory_budget,
        options: spillway_options,
    };
    tuning
        .apply(spillway::Options::default())
        .and_then(|o| o.validate().map_err(|e| e.to_string()))
        .map_err(|e| CliError::Usage(format!("--spillway-memory-mb, -o: {e}")))?;
    Ok(bench::Plan {
        engines: engines.map_err(CliError::Usage)?,
        phases: phases.map_err(CliError::Usage)?,
        config: spillway_bench::RunConfig {
            records: a.records,
            record_size: a.record_size,
            seed: a.seed,
            batch: a.batch as usize,
            sync: matches!(a.sync.unwrap_or(SyncMode::Batch), SyncMode::Batch),
            threads: a.threads as usize,
            ops: a.ops,
            zipfian: a.distribution.as_deref() == Some("zipfian"),
            cold: a.cold,
            readers: a.readers as usize,
            keys: a.keys.keys(),
            spillway_memory_budget,
            spillway_options: tuning.options,
            cpu_hogs: a.cpu_hog as usize,
            existing: a.use_existing,
        },
        work_dir: a.dir,
        keep: a.keep,
        json: a.json,
        svg: a.svg,
    })
}

/// `bench --workloads transfer`: the flags of the plain workloads that mean something to it
/// (threads, distribution, sync, seed, dir, keep, json) and its own.
fn transfer_plan(a: BenchArgs) -> Result<transfer::Plan, CliError> {
    if a.use_existing {
        return Err(CliError::Usage(
            "transfer starts from empty stores: drop --use-existing".into(),
        ));
    }
    if a.workloads.len() > 1 {
        return Err(CliError::Usage(
            "transfer runs alone: --workloads transfer".into(),
        ));
    }
    if a.svg.is_some() {
        return Err(CliError::Usage(
            "transfer draws no chart: drop --svg".into(),
        ));
    }
    let engines = match &a.engines {
        None => spillway_bench::TxEngineKind::all_available(),
        Some(names) => names
            .iter()
            .map(|e| spillway_bench::TxEngineKind::parse(e))
            .collect::<Result<_, _>>()
            .map_err(CliError::Usage)?,
    };
    let seconds = match (a.seconds, a.transfers) {
        (Some(s), _) if !(s > 0.0 && s.is_finite()) => {
            return Err(CliError::Usage(format!(
                "--seconds {s}: give a positive time"
            )))
        }
        (None, None) => Some(10.0),
        (s, _) => s,
    };
    Ok(transfer::Plan {
        engines,
        config: spillway_bench::TransferConfig {
            accounts: a.accounts,
            threads: a.threads as usize,
            zipfian: a.distribution.as_deref() == Some("zipfian"),
            sync: matches!(a.sync.unwrap_or(SyncMode::Batch), SyncMode::Batch),
            transfers: a.transfers,
            seconds,
            seed: a.seed,
        },
        work_dir: a.dir,
        keep: a.keep,
        json: a.json,
    })
}

/// `bench --workloads sessions`: the flags of the plain workloads that mean something to it
/// (records, record size, batch, threads, distribution, sync, seed, dir, keep, json, svg)
/// and its own (--ttl-secs, --sample-secs, and --seconds).
fn sessions_plan(a: BenchArgs) -> Result<sessions::Plan, CliError> {
    if a.use_existing {
        return Err(CliError::Usage(
            "sessions starts from empty stores: drop --use-existing".into(),
        ));
    }
    if a.workloads.len() > 1 {
        return Err(CliError::Usage(
            "sessions runs alone: --workloads sessions".into(),
        ));
    }
    let engines = match &a.engines {
        None => spillway_bench::SessionEngineKind::all_available(),
        Some(names) => names
            .iter()
            .map(|e| spillway_bench::SessionEngineKind::parse(e))
            .collect::<Result<_, _>>()
            .map_err(CliError::Usage)?,
    };
    let config = spillway_bench::SessionConfig {
        keys_per_ttl: a.records,
        record_size: a.record_size,
        ttl_secs: a.ttl_secs,
        seconds: a.seconds.unwrap_or(10.0 * a.ttl_secs),
        batch: a.batch as usize,
        sync: matches!(a.sync.unwrap_or(SyncMode::None), SyncMode::Batch),
        readers: a.threads as usize,
        zipfian: a.distribution.as_deref() != Some("uniform"),
        sample_secs: a.sample_secs,
        seed: a.seed,
        keys: a.keys.keys(),
    };
    config.validate().map_err(CliError::Usage)?;
    Ok(sessions::Plan {
        engines,
        config,
        work_dir: a.dir,
        keep: a.keep,
        json: a.json,
        svg: a.svg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `--path` has a default: no usage line may show it outside `[...]`, as if required.
    #[test]
    fn usage_lines_show_path_as_optional() {
        let mut cli = Cli::command();
        cli.build();
        for sub in cli.get_subcommands_mut() {
            let usage = sub.render_usage().to_string();
            let mut depth = 0i32;
            for (i, c) in usage.char_indices() {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    '-' if depth == 0 => {
                        assert!(!usage[i..].starts_with("--path"), "{usage}")
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn check_help_documents_its_exit_status() {
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("check")
            .unwrap()
            .render_long_help()
            .to_string();
        assert!(
            help.contains("Exit status: 0 if the store is sound") && help.contains("Notes never"),
            "{help}"
        );
    }

    #[test]
    fn path_defaults_and_flags_parse() {
        let cli =
            Cli::try_parse_from(["spillway", "load", "--records", "5", "--record-size", "16"])
                .unwrap();
        let Command::Load(a) = cli.command else {
            panic!("expected load")
        };
        assert_eq!(a.store.path, PathBuf::from("./spillway-data"));
        assert_eq!((a.batch, a.seed), (1000, 0));
        assert_eq!(a.sync.write_options(), WriteOptions::SYNC);
        assert_eq!(
            a.store.tuning.validated(true).unwrap(),
            spillway::Options::default()
        );

        let cli =
            Cli::try_parse_from(["spillway", "get", "--path", "/tmp/x", "--fan-out", "1", "k"])
                .unwrap();
        let Command::Get { store, key, .. } = cli.command else {
            panic!("expected get")
        };
        assert_eq!(
            (store.path, key.0),
            (PathBuf::from("/tmp/x"), b"k".to_vec())
        );
        assert_eq!(store.tuning.fan_out, 1);
        assert!(Cli::try_parse_from([
            "spillway",
            "load",
            "--records",
            "1",
            "--record-size",
            "9",
            "--batch",
            "0"
        ])
        .is_err());
        assert!(Cli::try_parse_from(["spillway", "put", "k", "-1"]).is_ok());
    }

    #[test]
    fn scan_flags_parse_escapes_and_refuse_prefix_with_bounds() {
        let cli = Cli::try_parse_from([
            "spillway",
            "scan",
            "--from",
            "a\\x00",
            "--to",
            "-z",
            "--limit",
            "3",
            "--reverse",
        ])
        .unwrap();
        let Command::Scan {
            from,
            to,
            prefix,
            limit,
            reverse,
            ..
        } = cli.command
        else {
            panic!("expected scan")
        };
        assert_eq!(from, Some(escape::Key(b"a\0".to_vec())));
        assert_eq!(to, Some(escape::Key(b"-z".to_vec())));
        assert_eq!((prefix, limit, reverse), (None, Some(3), true));

        for bounds in [&["--from", "a"][..], &["--to", "b"]] {
            let mut args = vec!["spillway", "scan", "--prefix", "p"];
            args.extend_from_slice(bounds);
            let err = Cli::try_parse_from(&args).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{err}"
            );
        }
        let err = Cli::try_parse_from(["spillway", "scan", "--from", "\\x4"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{err}");

        let cli = Cli::try_parse_from([
            "spillway",
            "load",
            "--records",
            "5",
            "--record-size",
            "16",
            "--sequential",
            "--ordered",
        ])
        .unwrap();
        let Command::Load(a) = cli.command else {
            panic!("expected load")
        };
        assert!(a.sequential);
        assert_eq!(
            a.store.tuning.validated(true).unwrap().key_order,
            Some(spillway::KeyOrder::Ordered)
        );
    }

    #[test]
    fn merge_takes_negative_operands_and_load_takes_counters() {
        for args in [
            &["spillway", "merge", "--op", "add", "k", "-3"][..],
            &["spillway", "merge", "k", "-3", "--op", "add"],
            &["spillway", "merge", "--op", "add", "--", "k", "-3"],
        ] {
            let cli = Cli::try_parse_from(args).unwrap();
            let Command::Merge {
                key, operand, op, ..
            } = cli.command
            else {
                panic!("expected merge")
            };
            assert_eq!(key.0, b"k", "{args:?}");
            assert_eq!(
                operand,
                Some(escape::Value::Bytes(b"-3".to_vec())),
                "{args:?}"
            );
            assert_eq!(op, operators::Op::Add);
        }
        let cli = Cli::try_parse_from([
            "spillway",
            "merge",
            "--op",
            "append",
            "--separator",
            "\\n",
            "k",
            "v",
        ])
        .unwrap();
        let Command::Merge { separator, .. } = cli.command else {
            panic!("expected merge")
        };
        assert_eq!(separator, Some(escape::Key(b"\n".to_vec())));
        assert!(Cli::try_parse_from(["spillway", "merge", "k", "1"]).is_err());

        let load = |extra: &[&str]| {
            let cli =
                Cli::try_parse_from([&["spillway", "load", "--records", "10"], extra].concat())
                    .unwrap();
            let Command::Load(a) = cli.command else {
                panic!("expected load")
            };
            load_record_size(&a).map(|size| (a.op, size, a.distinct))
        };
        assert_eq!(load(&["--op", "add"]).unwrap(), (LoadOp::Add, 16, None));
        assert_eq!(
            load(&["--op", "add", "--distinct", "3", "--record-size", "16"]).unwrap(),
            (LoadOp::Add, 16, Some(3))
        );
        assert_eq!(
            load(&["--record-size", "20"]).unwrap(),
            (LoadOp::Put, 20, None)
        );
        assert!(load(&[]).is_err());
        assert!(load(&["--record-size", "20", "--distinct", "3"]).is_err());
        assert!(load(&["--op", "add", "--record-size", "20"]).is_err());
        assert!(
            Cli::try_parse_from(["spillway", "load", "--records", "1", "--distinct", "0"]).is_err()
        );
    }

    #[test]
    fn keyspace_goes_with_the_key_commands_only() {
        for args in [
            &["put", "k", "v"][..],
            &["get", "k"],
            &["del", "k"],
            &["merge", "--op", "add", "k", "1"],
            &["scan"],
            &["load", "--records", "1", "--record-size", "16"],
            &["read", "--ops", "1"],
        ] {
            let cli = Cli::try_parse_from(
                [&["spillway"], args, &["--keyspace", "users", "--ordered"]].concat(),
            )
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            let keyspace = match cli.command {
                Command::Put { keyspace, .. }
                | Command::Get { keyspace, .. }
                | Command::Del { keyspace, .. }
                | Command::Merge { keyspace, .. }
                | Command::Scan { keyspace, .. } => keyspace,
                Command::Load(a) => a.keyspace,
                Command::Read(a) => a.keyspace,
                other => panic!("{other:?}"),
            };
            assert_eq!(keyspace.name(), Some("users"), "{args:?}");
        }
        for args in [&["stats"][..], &["check"]] {
            let args = [&["spillway"], args, &["--keyspace", "users"]].concat();
            assert!(Cli::try_parse_from(&args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn get_help_documents_counters() {
        let mut cli = Cli::command();
        for (sub, words) in [
            ("get", &["spillway.u64add", "decimal number", "--raw"][..]),
            ("scan", &["spillway.u64add", "--raw"]),
            (
                "merge",
                &[
                    "--op add",
                    "negative",
                    "--separator",
                    "records the operator",
                ],
            ),
        ] {
            let help = cli
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            for word in words {
                assert!(help.contains(word), "{sub}: {word}: {help}");
            }
        }
    }

    #[test]
    fn bench_keys_default_to_random_and_take_sequential() {
        let plan = |extra: &[&str]| {
            let cli = Cli::try_parse_from([&["spillway", "bench"], extra].concat()).unwrap();
            let Command::Bench(a) = cli.command else {
                panic!("expected bench")
            };
            bench_plan(a).unwrap()
        };
        assert_eq!(plan(&[]).config.keys, spillway_bench::Keys::Random);
        let p = plan(&[
            "--keys",
            "sequential",
            "--workloads",
            "load,ycsb-e,scan-all",
        ]);
        assert_eq!(p.config.keys, spillway_bench::Keys::Sequential);
        use spillway_bench::Phase;
        assert_eq!(p.phases, [Phase::Load, Phase::YcsbE, Phase::ScanAll]);
        assert!(Cli::try_parse_from(["spillway", "bench", "--keys", "sorted"]).is_err());
        let e = plan(&["--engines", "fjall,redb,spillway-ordered,spillway-hashed"]).engines;
        assert_eq!(e.len(), 4);
        let e = plan(&["--engines", "raw-append,raw-overwrite"]).engines;
        use spillway_bench::EngineKind;
        assert_eq!(e, [EngineKind::RawAppend, EngineKind::RawOverwrite]);
        assert!(e.iter().all(|k| k.available()), "built without the peers");
    }

    #[test]
    fn bench_transfer_takes_its_engines_and_runs_alone() {
        let plan = |extra: &[&str]| {
            let args = [&["spillway", "bench", "--workloads", "transfer"], extra].concat();
            let Command::Bench(a) = Cli::try_parse_from(args).unwrap().command else {
                panic!("expected bench")
            };
            transfer_plan(a)
        };
        use spillway_bench::TxEngineKind;
        let p = plan(&[]).unwrap();
        assert_eq!(p.engines, TxEngineKind::all_available());
        assert_eq!(p.engines[0], TxEngineKind::Spillway);
        assert_eq!((p.config.accounts, p.config.seconds), (100_000, Some(10.0)));
        assert!(p.config.sync && !p.config.zipfian);
        let p = plan(&[
            "--engines",
            "rocksdb,lmdb",
            "--accounts",
            "1000",
            "--transfers",
            "50",
            "--distribution",
            "zipfian",
            "--threads",
            "8",
        ])
        .unwrap();
        assert_eq!(p.engines, [TxEngineKind::RocksDb, TxEngineKind::Lmdb]);
        assert_eq!((p.config.transfers, p.config.seconds), (Some(50), None));
        assert!(p.config.zipfian && p.config.threads == 8);
        assert!(plan(&["--engines", "leveldb"]).is_err());
        assert!(plan(&["--seconds", "0"]).is_err());
        assert!(Cli::try_parse_from(["spillway", "bench", "--accounts", "1"]).is_err());
        let Command::Bench(a) =
            Cli::try_parse_from(["spillway", "bench", "--workloads", "load,transfer"])
                .unwrap()
                .command
        else {
            panic!("expected bench")
        };
        assert!(transfer_plan(a).is_err());
    }

    #[test]
    fn bench_sessions_takes_its_defaults_and_runs_alone() {
        let plan = |extra: &[&str]| {
            let args = [&["spillway", "bench", "--workloads", "sessions"], extra].concat();
            let Command::Bench(a) = Cli::try_parse_from(args).unwrap().command else {
                panic!("expected bench")
            };
            sessions_plan(a)
        };
        use spillway_bench::SessionEngineKind;
        let p = plan(&[]).unwrap();
        assert_eq!(p.engines, SessionEngineKind::all_available());
        assert_eq!(p.engines[0], SessionEngineKind::Spillway);
        let c = &p.config;
        assert_eq!(
            (c.ttl_secs, c.seconds, c.keys_per_ttl),
            (10.0, 100.0, 1_000_000)
        );
        assert!(c.zipfian && !c.sync && c.readers == 1 && c.batch == 1000);
        let p = plan(&[
            "--engines",
            "rocksdb,redis",
            "--ttl-secs",
            "2",
            "--records",
            "5000",
            "--distribution",
            "uniform",
            "--sync",
            "batch",
            "--batch",
            "1",
        ])
        .unwrap();
        assert_eq!(
            p.engines,
            [SessionEngineKind::RocksDb, SessionEngineKind::Redis]
        );
        let c = &p.config;
        assert_eq!((c.ttl_secs, c.seconds, c.keys_per_ttl), (2.0, 20.0, 5000));
        assert!(!c.zipfian && c.sync && c.batch == 1);
        assert_eq!(plan(&["--seconds", "7"]).unwrap().config.seconds, 7.0);
        assert!(plan(&["--engines", "leveldb"]).is_err());
        assert!(plan(&["--ttl-secs", "0"]).is_err());
        assert!(plan(&["--records", "1"]).is_err());
        let Command::Bench(a) =
            Cli::try_parse_from(["spillway", "bench", "--workloads", "load,sessions"])
                .unwrap()
                .command
        else {
            panic!("expected bench")
        };
        assert!(sessions_plan(a).is_err());
    }

    #[test]
    fn bench_help_documents_the_scan_workloads_and_key_order() {
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("bench")
            .unwrap()
            .render_long_help()
            .to_string();
        for word in [
            "ycsb-e",
            "scan-all",
            "sequential",
            "fjall",
            "redb",
            "spillway-ordered",
            "raw-append",
            "raw-overwrite",
            "transfer",
            "lmdb",
            "sessions",
            "ttl-secs",
        ] {
            assert!(help.contains(word), "{word}: {help}");
        }
    }
}
