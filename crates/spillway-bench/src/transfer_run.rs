//! The transfer workload on several engines in turn, each in a child process of its own (as
//! [`run_isolated`](crate::run_isolated) does for the plain workloads: memory, CPU time and
//! background threads then belong to one engine alone), and its side-by-side table.

use std::fmt::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::run::{child_job, engines_in_children, Machine};
use crate::table;
use crate::transfer::{self, TransferConfig, TransferResult};
use crate::tx_engine::TxEngineKind;

/// Everything a transfer run produced, as written to JSON.
#[derive(Debug, Serialize, Deserialize)]
pub struct TransferReport {
    pub config: TransferConfig,
    pub engines: Vec<TransferResult>,
    pub machine: Machine,
}

impl TransferReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

/// The environment variable that turns a process into a transfer child; its value is the path
/// of the job file.
pub const CHILD_ENV: &str = "SPILLWAY_TRANSFER_CHILD";

/// Run `engines` in turn, each by a child `exe` (which must call [`child_main`] when
/// [`CHILD_ENV`] is set) on a fresh folder under `work_dir`; `announce` is told each engine as
/// its turn begins.
pub fn run_isolated(
    exe: &Path,
    engines: &[TxEngineKind],
    cfg: &TransferConfig,
    work_dir: &Path,
    keep: bool,
    announce: &dyn Fn(TxEngineKind),
) -> Result<TransferReport, String> {
    let results = engines_in_children(
        exe,
        CHILD_ENV,
        "transfer",
        engines,
        TxEngineKind::name,
        cfg,
        work_dir,
        keep,
        announce,
    )?;
    Ok(TransferReport {
        config: cfg.clone(),
        engines: results,
        machine: Machine::here(),
    })
}

/// Run the job named by [`CHILD_ENV`] and write its result where the parent expects it.
pub fn child_main(job_path: &Path) -> Result<(), String> {
    child_job(job_path, |engine, dir, cfg: &TransferConfig| {
        transfer::run(TxEngineKind::parse(engine)?, dir, cfg)
    })
}

/// One row of the table.
struct Metric {
    label: &'static str,
    get: fn(&TransferResult) -> f64,
}

const METRICS: &[Metric] = &[
    Metric {
        label: "commits/s",
        get: |r| r.commits_per_sec,
    },
    Metric {
        label: "abort rate %",
        get: |r| 100.0 * r.abort_rate,
    },
    Metric {
        label: "commits",
        get: |r| r.commits as f64,
    },
    Metric {
        label: "conflicts",
        get: |r| r.conflicts as f64,
    },
    Metric {
        label: "skipped",
        get: |r| r.skipped as f64,
    },
    Metric {
        label: "seconds",
        get: |r| r.seconds,
    },
    Metric {
        label: "p50 ms",
        get: |r| r.latency_p50_us / 1000.0,
    },
    Metric {
        label: "p99 ms",
        get: |r| r.latency_p99_us / 1000.0,
    },
    Metric {
        label: "max ms",
        get: |r| r.latency_max_us / 1000.0,
    },
    Metric {
        label: "CPU cores busy",
        get: |r| r.cpu_seconds / r.seconds.max(1e-9),
    },
    Metric {
        label: "load seconds",
        get: |r| r.load_seconds,
    },
    Metric {
        label: "disk MiB",
        get: |r| r.disk_bytes as f64 / (1 << 20) as f64,
    },
];

/// A plain-text table in the style of [`table::render`]: each engine's figure with its ratio
/// to the first engine's (Spillway when present) in brackets; then each engine's options.
pub fn render(report: &TransferReport) -> String {
    let c = &report.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "transfer: {} accounts, {}, {} thread{}, {} commits",
        c.accounts,
        if c.zipfian { "zipfian" } else { "uniform" },
        c.threads,
        if c.threads == 1 { "" } else { "s" },
        if c.sync { "synced" } else { "unsynced" },
    );
    let _ = write!(out, "{:<18}", "metric");
    for e in &report.engines {
        let _ = write!(out, "{:>22}", e.engine);
    }
    out.push('\n');
    for m in METRICS {
        let _ = write!(out, "{:<18}", m.label);
        let cells: Vec<Option<f64>> = report.engines.iter().map(|e| Some((m.get)(e))).collect();
        table::row(&mut out, &cells);
        out.push('\n');
    }
    let total = report.engines.iter().map(|e| e.total).next();
    let _ = writeln!(
        out,
        "balances after a reopen: {} in every engine (conserved)",
        total.map_or("—".into(), |t| t.to_string())
    );
    for e in &report.engines {
        let _ = writeln!(out, "{}: {}", e.engine, e.options);
    }
    out.push_str("(×r) = figure relative to the first column; for commits/s higher is better, for the rest lower. Abort rate: conflicts over transactions begun.\n");
    out
}
