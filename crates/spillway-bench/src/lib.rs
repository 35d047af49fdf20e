//! Spillway against RocksDB, LevelDB, fjall and redb, side by side, on the same data (issue 3,
//! DESIGN.md "Benchmarks"): one generator, one batch size, log on for everyone, 10-bit Bloom
//! filters, no compression; load (random or sequential keys), uniform and missing reads, YCSB
//! A/B/C/F, and for ordered stores YCSB E (short scans) and a full scan; warm or cold. And
//! counters: increments that Spillway and RocksDB merge and the others read, add and write,
//! each counter's final value checked exactly. Beside them, two baselines that are not
//! engines (`raw-append`, `raw-overwrite`): the same batches framed as a log frames them and
//! written to one file, so that a run also measures what the device alone costs.
//!
//! And transactions (issue 29, [`transfer`]): money moved between accounts in serializable
//! transactions on Spillway, RocksDB's OptimisticTransactionDB, fjall's optimistic
//! transactions, redb and LMDB; commits/s, abort rate, and every balance summed at the end.
//!
//! And a session store (issue 30, [`sessions`]): keys written continuously with a TTL and read
//! zipfian among the newest, in real time, on Spillway (its own expiry), RocksDB (a compaction
//! filter), fjall (scan-and-delete, or a compaction filter) and Redis (`SET … PX`); the space
//! each takes over time against the live data.
//!
//! The peers are the real libraries built from source in release mode, behind the `peers`
//! feature (RocksDB's first build takes about 30 minutes on two cores).

pub mod chart;
pub mod counter;
pub mod counters;
pub mod engine;
mod engines;
pub mod hog;
pub mod kept;
pub mod measure;
pub mod phase;
pub mod run;
pub mod scan;
pub mod session_engine;
mod session_engines;
pub mod sessions;
pub mod sessions_run;
pub mod table;
pub mod transfer;
pub mod transfer_run;
pub mod tx_engine;
mod tx_engines;
/// The records every engine is loaded with (the `spillway-records` crate, which the CLI's
/// `load` and `read` use too).
pub use spillway_records as workload;
pub mod zipf;

pub use counter::CounterBatch;
pub use counters::CounterModel;
pub use engine::{Engine, EngineKind, RecordBatch};
pub use engines::spillway::Tuning;
pub use phase::{Phase, PhaseResult, RunConfig};
pub use run::{child_main, run, run_isolated, Progress, Report, CHILD_ENV};
pub use scan::{ScanResult, ScanTally};
pub use session_engine::SessionEngineKind;
pub use sessions::{SessionConfig, SessionResult};
pub use sessions_run::SessionsReport;
pub use transfer::{TransferConfig, TransferResult};
pub use transfer_run::TransferReport;
pub use tx_engine::{TxEngine, TxEngineKind};
pub use workload::Keys;
