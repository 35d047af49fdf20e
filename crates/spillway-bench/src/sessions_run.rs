//! The session-store workload on several stores in turn, each in a child process of its own
//! (as [`run_isolated`](crate::run_isolated) does for the plain workloads), and its
//! side-by-side table. The chart of space over time is [`chart::sessions_svg`](crate::chart).

use std::fmt::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::run::{child_job, engines_in_children, Machine};
use crate::session_engine::SessionEngineKind;
use crate::sessions::{self, SessionConfig, SessionResult};
use crate::table;

/// Everything a sessions run produced, as written to JSON.
#[derive(Debug, Serialize, Deserialize)]
pub struct SessionsReport {
    pub config: SessionConfig,
    pub engines: Vec<SessionResult>,
    pub machine: Machine,
}

impl SessionsReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

/// The environment variable that turns a process into a sessions child; its value is the
/// path of the job file.
pub const CHILD_ENV: &str = "SPILLWAY_SESSIONS_CHILD";

/// Run `engines` in turn, each by a child `exe` (which must call [`child_main`] when
/// [`CHILD_ENV`] is set) on a fresh folder under `work_dir`; `announce` is told each engine as
/// its turn begins.
pub fn run_isolated(
    exe: &Path,
    engines: &[SessionEngineKind],
    cfg: &SessionConfig,
    work_dir: &Path,
    keep: bool,
    announce: &dyn Fn(SessionEngineKind),
) -> Result<SessionsReport, String> {
    cfg.validate()?;
    let results = engines_in_children(
        exe,
        CHILD_ENV,
        "sessions",
        engines,
        SessionEngineKind::name,
        cfg,
        work_dir,
        keep,
        announce,
    )?;
    Ok(SessionsReport {
        config: cfg.clone(),
        engines: results,
        machine: Machine::here(),
    })
}

/// Run the job named by [`CHILD_ENV`] and write its result where the parent expects it.
pub fn child_main(job_path: &Path) -> Result<(), String> {
    child_job(job_path, |engine, dir, cfg: &SessionConfig| {
        sessions::run(SessionEngineKind::parse(engine)?, dir, cfg)
    })
}

const MIB: f64 = (1 << 20) as f64;

/// One row of the table.
struct Metric {
    label: &'static str,
    get: fn(&SessionResult) -> Option<f64>,
}

const METRICS: &[Metric] = &[
    Metric {
        label: "inserts/s",
        get: |r| Some(r.inserts_per_sec),
    },
    Metric {
        label: "writer max lag s",
        get: |r| Some(r.max_lag_secs),
    },
    Metric {
        label: "GETs/s",
        get: |r| Some(r.gets_per_sec),
    },
    Metric {
        label: " GET p50 µs",
        get: |r| Some(r.get_p50_us),
    },
    Metric {
        label: " GET p99 µs",
        get: |r| Some(r.get_p99_us),
    },
    Metric {
        label: " GET max µs",
        get: |r| Some(r.get_max_us),
    },
    Metric {
        label: " found %",
        get: |r| {
            let asked = r.found + r.missed;
            (asked > 0).then(|| 100.0 * r.found as f64 / asked as f64)
        },
    },
    Metric {
        label: "peak space MiB",
        get: |r| Some(r.peak_space_bytes as f64 / MIB),
    },
    Metric {
        label: "final space MiB",
        get: |r| Some(r.final_space_bytes as f64 / MIB),
    },
    Metric {
        label: " files' length MiB",
        get: |r| {
            (r.space == "disk")
                .then(|| r.samples.last().map_or(0.0, |s| s.other_bytes as f64 / MIB))
        },
    },
    Metric {
        label: " redis RSS MiB",
        get: |r| {
            (r.space == "memory")
                .then(|| r.samples.last().map_or(0.0, |s| s.other_bytes as f64 / MIB))
        },
    },
    Metric {
        label: "live data MiB",
        get: |r| Some(r.final_live_bytes as f64 / MIB),
    },
    Metric {
        label: "peak ÷ live",
        get: |r| r.peak_ratio,
    },
    Metric {
        label: "mean ÷ live",
        get: |r| r.mean_ratio,
    },
    Metric {
        label: "final ÷ live",
        get: |r| r.final_ratio,
    },
    Metric {
        label: "written MiB",
        get: |r| Some(r.written_bytes as f64 / MIB),
    },
    Metric {
        label: "CPU cores busy",
        get: |r| Some((r.cpu_seconds + r.server_cpu_seconds.unwrap_or(0.0)) / r.seconds.max(1e-9)),
    },
    Metric {
        label: "spill stalls",
        get: |r| r.counters.map(|c| c.stalls as f64),
    },
    Metric {
        label: " longest stall ms",
        get: |r| r.counters.map(|c| c.max_stall_micros as f64 / 1000.0),
    },
    Metric {
        label: "RSS MiB",
        get: |r| Some(r.rss_bytes as f64 / MIB),
    },
];

/// A plain-text table in the style of [`table::render`]: each store's figure with its ratio
/// to the first's (Spillway when present) in brackets; then each store's options.
pub fn render(report: &SessionsReport) -> String {
    let c = &report.config;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sessions: {} {} keys per TTL of {} s ({:.0} inserts/s, {} B records, {} per write{}), \
         {} s, {} GET thread{} ({}), space sampled every {} s",
        c.keys_per_ttl,
        c.keys.name(),
        c.ttl_secs,
        c.rate(),
        c.record_size,
        c.batch,
        if c.sync { ", synced" } else { "" },
        c.seconds,
        c.readers,
        if c.readers == 1 { "" } else { "s" },
        if c.zipfian { "zipfian" } else { "uniform" },
        c.sample_secs,
    );
    let _ = write!(out, "{:<18}", "metric");
    for e in &report.engines {
        let name = if e.space == "memory" {
            format!("{} (memory)", e.engine)
        } else {
            e.engine.clone()
        };
        let _ = write!(out, "{name:>22}");
    }
    out.push('\n');
    for m in METRICS {
        let _ = write!(out, "{:<18}", m.label);
        let cells: Vec<Option<f64>> = report.engines.iter().map(|e| (m.get)(e)).collect();
        table::row(&mut out, &cells);
        out.push('\n');
    }
    for e in &report.engines {
        // A tick's keys short at the end is the run ending, not the writer falling behind.
        let tick = (report.config.rate() * 0.02) as u64;
        if e.inserts + tick < e.target_inserts {
            let _ = writeln!(
                out,
                "{}: wrote {} of {} keys: the writer fell behind its schedule (up to {:.1} s)",
                e.engine, e.inserts, e.target_inserts, e.max_lag_secs
            );
        }
        if let Some(w) = e.expiry_work {
            let _ = writeln!(
                out,
                "{}: {} scan-and-delete passes, {} keys scanned, {} deleted, {:.1} s scanning \
                 (longest pass {:.2} s)",
                e.engine, w.passes, w.scanned, w.deleted, w.seconds, w.longest_pass
            );
        }
        if let Some(c) = e.counters {
            let _ = writeln!(
                out,
                "{}: {} root spills, {} node spills, {} fast and {} slow splits, {} collections, \
                 {} list merges; {:.0} MiB written to its files ({:.2} × the user bytes)",
                e.engine,
                c.root_spills,
                c.node_spills,
                c.fast_splits,
                c.slow_splits,
                c.collections,
                c.list_merges,
                c.disk_bytes_written as f64 / MIB,
                c.disk_bytes_written as f64 / e.written_bytes.max(1) as f64
            );
        }
        let _ = writeln!(
            out,
            "{}: {} expired keys asked for, {} returned",
            e.engine, e.expired_checks, e.stale
        );
    }
    for e in &report.engines {
        let _ = writeln!(out, "{}: {}", e.engine, e.options);
    }
    out.push_str(
        "Space: bytes allocated to the store's folder (du), or for redis its used_memory (memory, \
         not disk); below it, the final files' lengths (du --apparent-size: preallocated \
         space not counted) or redis's used_memory_rss. Live data: key + value bytes written within the last TTL. Ratios of space \
         to live data from the first TTL on (peak, mean) and at the end. (×r) = figure relative \
         to the first column; for inserts/s and GETs/s higher is better, for the rest lower.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_with_no_time_or_keys_is_refused() {
        let good = SessionConfig {
            keys_per_ttl: 100,
            record_size: 16,
            ttl_secs: 1.0,
            seconds: 10.0,
            batch: 10,
            sync: false,
            readers: 1,
            zipfian: true,
            sample_secs: 1.0,
            seed: 0,
            keys: crate::Keys::Random,
        };
        assert!(good.validate().is_ok());
        assert_eq!(good.target_inserts(), 1000);
        for bad in [
            SessionConfig {
                ttl_secs: 0.0,
                ..good.clone()
            },
            SessionConfig {
                seconds: f64::NAN,
                ..good.clone()
            },
            SessionConfig {
                keys_per_ttl: 1,
                ..good.clone()
            },
            SessionConfig {
                batch: 0,
                ..good.clone()
            },
            SessionConfig {
                record_size: 8,
                ..good.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
