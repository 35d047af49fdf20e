//! `spillway`: load, read and inspect a Spillway store from the command line.
//!
//! This file holds the command-line definitions and the dispatch; each command lives in its
//! own module. Every failure is printed once as `error: <message>` (the engine's `Display`
//! text for engine errors) and exits with status 1; usage errors from clap exit with 2.

mod bench;
mod check;
mod error;
mod kv;
mod load;
mod loadgen;
mod progress;
mod read;
mod report;
mod stats;
mod store;
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
    about = "Load, read and inspect a Spillway store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Write generated records in batches, then print throughput and engine metrics.
    Load(LoadArgs),
    /// Random GETs of the records `load` wrote, checking every value.
    Read(ReadArgs),
    /// Set KEY to VALUE (durable when the command returns).
    Put {
        /// The key, as UTF-8 text.
        #[arg(allow_hyphen_values = true)]
        key: String,
        /// The value, as UTF-8 text.
        #[arg(allow_hyphen_values = true)]
        value: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the value of KEY; if it is absent, print nothing on stdout, "(not found)" on
    /// stderr, and exit with status 1.
    Get {
        /// The key, as UTF-8 text.
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Delete KEY (deleting an absent key is not an error).
    Del {
        /// The key, as UTF-8 text.
        #[arg(allow_hyphen_values = true)]
        key: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Print the store's shape, files, memory and disk figures.
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
    /// Run Spillway, RocksDB and LevelDB in turn on the same workload and print each figure
    /// as a ratio to Spillway's (RocksDB and LevelDB need a build with `--features peers`).
    Bench(BenchArgs),
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// Engines to run, in order; the first is the base of every ratio.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "spillway,rocksdb,leveldb"
    )]
    engines: Vec<String>,

    /// Records to load.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    records: u64,

    /// Bytes per record: an 8-byte key plus a value of the rest.
    #[arg(long, value_name = "BYTES", default_value_t = 16)]
    record_size: usize,

    /// Workloads, in order (load first): load, settle (wait until the engine stops writing),
    /// reopen (close and open again, timed), read, read-missing, ycsb-a, ycsb-b, ycsb-c, ycsb-f.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "load,settle,reopen,read,read-missing,ycsb-a,ycsb-b,ycsb-c,ycsb-f"
    )]
    workloads: Vec<String>,

    /// Operations in each read or YCSB workload.
    #[arg(long, value_name = "M", default_value_t = 1_000_000)]
    ops: u64,

    /// `batch`: fsync the log on every write (per 1000-record batch in the load, per update in
    /// YCSB); `none`: log written, never waited for.
    #[arg(long, value_enum, default_value_t = SyncMode::Batch)]
    sync: SyncMode,

    /// Writer (and reader) threads.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,

    /// Records per write batch in the load.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,

    /// Extra threads doing GETs of already loaded keys while the load runs (their latency is
    /// reported beside the load's).
    #[arg(long, value_name = "R", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=64))]
    readers: u64,

    /// Key choice in reads and YCSB: uniform, or YCSB's scrambled zipfian (θ = 0.99).
    #[arg(long, default_value = "uniform", value_parser = ["uniform", "zipfian"])]
    distribution: String,

    /// Evict each store from the page cache before every read phase.
    #[arg(long)]
    cold: bool,

    /// Seed of the generated records.
    #[arg(long, default_value_t = 0)]
    seed: u64,

    /// Where the stores are built (each engine gets a subfolder, removed afterwards).
    #[arg(long, value_name = "DIR", default_value = "./spillway-bench-data")]
    dir: PathBuf,

    /// Keep the stores after the run.
    #[arg(long)]
    keep: bool,

    /// Write the raw results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,

    /// Write a chart of throughput and p99 latency as SVG here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
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

    /// Bytes per record: an 8-byte key plus a value of the rest (at least 9).
    #[arg(long, value_name = "BYTES")]
    record_size: usize,

    /// Seed of the keys and values; `read` finds it in the LOADGEN file.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,

    /// Records per write batch.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,

    /// Whether each batch waits for the log to be fsynced.
    #[arg(long, value_enum, default_value_t = SyncMode::Batch)]
    sync: SyncMode,

    /// Writer threads sharing the load (and, with `--sync batch`, group commits).
    #[arg(long, value_name = "T", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,

    #[command(flatten)]
    store: StoreArgs,
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
    store: StoreArgs,
}

fn main() -> ExitCode {
    // `spillway bench` runs each engine in a child copy of this program.
    let result = match std::env::var_os(spillway_bench::CHILD_ENV) {
        Some(job) => bench::child(std::path::Path::new(&job)).map(|()| ExitCode::SUCCESS),
        None => run(Cli::parse().command),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err}");
            if let Some(hint) = err.hint() {
                eprintln!("  ({hint})");
            }
            ExitCode::FAILURE
        }
    }
}

/// Only `load` and `put` may create a store; the other commands report a missing one (see
/// `store`, where each command's open call is chosen).
fn run(command: Command) -> Result<ExitCode, CliError> {
    match command {
        Command::Load(a) => {
            let plan = load::Plan {
                records: a.records,
                record_size: a.record_size,
                seed: a.seed,
                batch: a.batch,
                sync: a.sync.write_options(),
                threads: a.threads,
            };
            load::run(&a.store.path, &a.store.tuning, &plan)?;
        }
        Command::Read(a) => {
            read::run(&a.store.path, &a.store.tuning, a.ops, a.seed)?;
        }
        Command::Put { store, key, value } => {
            kv::put(&store.path, &store.tuning, &key, &value)?;
        }
        Command::Get { store, key } => {
            return kv::get(&store.path, &store.tuning, &key);
        }
        Command::Del { store, key } => {
            kv::del(&store.path, &store.tuning, &key)?;
        }
        Command::Stats { store } => {
            stats::run(&store.path, &store.tuning)?;
        }
        Command::Check { repair, path } => check::run(&path, repair)?,
        Command::Bench(a) => bench::run(&bench_plan(a)?)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn bench_plan(a: BenchArgs) -> Result<bench::Plan, CliError> {
    let engines = a
        .engines
        .iter()
        .map(|e| spillway_bench::EngineKind::parse(e))
        .collect::<Result<Vec<_>, _>>();
    let phases = a
        .workloads
        .iter()
        .map(|w| spillway_bench::Phase::parse(w))
        .collect::<Result<Vec<_>, _>>();
    spillway_bench::workload::Workload::new(a.seed, a.record_size).map_err(CliError::Usage)?;
    Ok(bench::Plan {
        engines: engines.map_err(CliError::Usage)?,
        phases: phases.map_err(CliError::Usage)?,
        config: spillway_bench::RunConfig {
            records: a.records,
            record_size: a.record_size,
            seed: a.seed,
            batch: a.batch as usize,
            sync: matches!(a.sync, SyncMode::Batch),
            threads: a.threads as usize,
            ops: a.ops,
            zipfian: a.distribution == "zipfian",
            cold: a.cold,
            readers: a.readers as usize,
        },
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
        let Command::Get { store, key } = cli.command else {
            panic!("expected get")
        };
        assert_eq!((store.path, key.as_str()), (PathBuf::from("/tmp/x"), "k"));
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
}
