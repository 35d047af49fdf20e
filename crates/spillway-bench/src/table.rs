//! The side-by-side table: each figure of each engine, and its ratio to Spillway's; then the
//! phases an engine could not complete, with why.

use std::fmt::Write;

use crate::phase::{Phase, PhaseResult};
use crate::run::Report;

/// One row of the table: a label and how to read the figure from a phase result.
struct Metric {
    label: &'static str,
    get: fn(&PhaseResult) -> Option<f64>,
}

const METRICS: &[Metric] = &[
    Metric {
        label: "seconds",
        get: |r| Some(r.seconds),
    },
    Metric {
        label: "ops/s",
        get: |r| Some(r.ops_per_sec),
    },
    Metric {
        label: "p50 µs",
        get: |r| latency(r, r.latency_p50_us),
    },
    Metric {
        label: "p99 µs",
        get: |r| latency(r, r.latency_p99_us),
    },
    Metric {
        label: "p99.9 µs",
        get: |r| latency(r, r.latency_p999_us),
    },
    Metric {
        label: "max µs",
        get: |r| latency(r, r.latency_max_us),
    },
    Metric {
        label: "warm-up s (untimed)",
        get: |r| r.warm_up_seconds,
    },
    Metric {
        label: "records/scan",
        get: |r| {
            r.scans
                .filter(|&n| n > 0)
                .zip(r.scanned_records)
                .map(|(n, rec)| rec as f64 / n as f64)
        },
    },
    Metric {
        label: "scan records/s",
        get: |r| r.scanned_records.map(|n| n as f64 / r.seconds.max(1e-9)),
    },
    Metric {
        label: "scan MB/s",
        get: |r| {
            r.scanned_bytes
                .map(|b| b as f64 / 1e6 / r.seconds.max(1e-9))
        },
    },
    Metric {
        label: "CPU cores busy",
        get: |r| (r.cpu_seconds > 0.0).then(|| r.cpu_seconds / r.seconds.max(1e-9)),
    },
    Metric {
        label: "log fsyncs/write",
        get: |r| r.log_syncs_per_write,
    },
    Metric {
        label: "spill stalls",
        get: |r| r.stalls.filter(|_| r.writes > 0).map(|s| s as f64),
    },
    Metric {
        label: "longest stall ms",
        get: |r| {
            r.max_stall_us
                .filter(|_| r.writes > 0)
                .map(|us| us / 1000.0)
        },
    },
    Metric {
        label: "stalls behind upkeep",
        get: |r| r.upkeep_stalls.filter(|_| r.writes > 0).map(|s| s as f64),
    },
    Metric {
        label: "longest upkeep stall ms",
        get: |r| {
            r.max_upkeep_stall_us
                .filter(|_| r.writes > 0)
                .map(|us| us / 1000.0)
        },
    },
    Metric {
        label: "paced writes",
        get: |r| r.paced_writes.filter(|_| r.writes > 0).map(|s| s as f64),
    },
    Metric {
        label: "seconds paced",
        get: |r| r.pace_seconds.filter(|_| r.writes > 0),
    },
    Metric {
        label: "longest fsync ms",
        get: |r| {
            r.max_log_sync_us
                .filter(|_| r.writes > 0)
                .map(|us| us / 1000.0)
        },
    },
    Metric {
        label: "reads meanwhile/s",
        get: |r| r.reads_during_load.as_ref().map(|c| c.ops_per_sec),
    },
    Metric {
        label: " read p50 µs",
        get: |r| r.reads_during_load.as_ref().map(|c| c.latency_p50_us),
    },
    Metric {
        label: " read p99 µs",
        get: |r| r.reads_during_load.as_ref().map(|c| c.latency_p99_us),
    },
    Metric {
        label: " read p99.9 µs",
        get: |r| r.reads_during_load.as_ref().map(|c| c.latency_p999_us),
    },
    Metric {
        label: " read max µs",
        get: |r| r.reads_during_load.as_ref().map(|c| c.latency_max_us),
    },
    Metric {
        label: "check GETs/s",
        get: |r| r.counter_gets.as_ref().map(|c| c.ops_per_sec),
    },
    Metric {
        label: " check p50 µs",
        get: |r| r.counter_gets.as_ref().map(|c| c.latency_p50_us),
    },
    Metric {
        label: " check p99 µs",
        get: |r| r.counter_gets.as_ref().map(|c| c.latency_p99_us),
    },
    Metric {
        label: "top-100 GETs/s",
        get: |r| r.top_counter_gets.as_ref().map(|c| c.ops_per_sec),
    },
    Metric {
        label: " top-100 p50 µs",
        get: |r| r.top_counter_gets.as_ref().map(|c| c.latency_p50_us),
    },
    Metric {
        label: " top-100 max µs",
        get: |r| r.top_counter_gets.as_ref().map(|c| c.latency_max_us),
    },
    Metric {
        label: "hot GETs/s",
        get: |r| r.hot_get.as_ref().map(|h| h.hot.ops_per_sec),
    },
    Metric {
        label: " hot p50 µs",
        get: |r| r.hot_get.as_ref().map(|h| h.hot.latency_p50_us),
    },
    Metric {
        label: " hot p99 µs",
        get: |r| r.hot_get.as_ref().map(|h| h.hot.latency_p99_us),
    },
    Metric {
        label: "plain GETs/s",
        get: |r| r.hot_get.as_ref().map(|h| h.plain.ops_per_sec),
    },
    Metric {
        label: " plain p50 µs",
        get: |r| r.hot_get.as_ref().map(|h| h.plain.latency_p50_us),
    },
    Metric {
        label: " plain p99 µs",
        get: |r| r.hot_get.as_ref().map(|h| h.plain.latency_p99_us),
    },
    Metric {
        label: "hot÷plain GET",
        get: |r| r.hot_get.as_ref().and_then(|h| h.slowdown()),
    },
    Metric {
        label: "device write amp",
        get: |r| r.device_write_amp,
    },
    Metric {
        label: "device KiB read/op",
        get: |r| (r.ops > 0).then(|| r.device_bytes_read as f64 / 1024.0 / r.ops as f64),
    },
    Metric {
        label: "disk MiB",
        get: |r| Some(r.disk_bytes as f64 / (1 << 20) as f64),
    },
    Metric {
        label: "RSS MiB",
        get: |r| Some(r.rss_bytes as f64 / (1 << 20) as f64),
    },
];

/// A phase's latency figure, except for `scan-all`, which is one operation (its time is the
/// phase's seconds).
fn latency(r: &PhaseResult, us: f64) -> Option<f64> {
    (r.phase != Phase::ScanAll).then_some(us)
}

fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A plain-text table: for every phase and metric, each engine's figure with its ratio to the
/// first engine (Spillway when present) in brackets.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let engines: Vec<&str> = report.engines.iter().map(|e| e.engine.as_str()).collect();
    let base = report.engines.first();
    let phases = base
        .map(|b| {
            b.phases
                .iter()
                .map(|p| (p.phase, p.cold))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let label = |phase: Phase, cold: bool| {
        format!("{}{}", phase_name(phase), if cold { " (cold)" } else { "" })
    };
    // A space at least between the phase and the metric, however long the phase's name.
    let width = phases
        .iter()
        .map(|&(p, c)| label(p, c).len() + 1)
        .fold(14, usize::max);
    let _ = write!(out, "{:<width$}{:<18}", "phase", "metric");
    for e in &engines {
        let _ = write!(out, "{e:>22}");
    }
    out.push('\n');
    for (phase, cold) in phases {
        for m in METRICS {
            let cells: Vec<Option<f64>> = report
                .engines
                .iter()
                .map(|e| {
                    e.phases
                        .iter()
                        .find(|p| p.phase == phase && p.cold == cold)
                        .filter(|p| p.error.is_none()) // a failed phase's figures are partial
                        .and_then(|p| (m.get)(p))
                })
                .collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let _ = write!(out, "{:<width$}{:<18}", label(phase, cold), m.label);
            row(&mut out, &cells);
            out.push('\n');
        }
    }
    let _ = write!(out, "{:<w$}", "device write amp, whole run", w = width + 18);
    let totals: Vec<Option<f64>> = report
        .engines
        .iter()
        .map(|e| e.device_write_amp_total)
        .collect();
    row(&mut out, &totals);
    out.push('\n');
    for e in &report.engines {
        for p in &e.phases {
            if let Some(err) = &p.error {
                let _ = writeln!(out, "{} {} failed: {err}", e.engine, phase_name(p.phase));
            }
        }
    }
    // Spillway's own counters, for each of its configurations in the run.
    for s in report
        .engines
        .iter()
        .filter(|e| e.engine.starts_with("spillway"))
    {
        let name = &s.engine;
        for p in &s.phases {
            if let Some(pp) = p.pages_per_get {
                let blocks = match p.selector_blocks_per_get {
                    Some(b) if b > 0.0 => format!(" and {b:.3} selector blocks"),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "{name} {}: {:.3} pages{blocks} read per GET",
                    phase_name(p.phase),
                    pp
                );
            }
        }
        for p in &s.phases {
            let Some(m) = p.merge_stats.filter(|m| m.any()) else {
                continue;
            };
            let _ = writeln!(
                out,
                "{name} {}: {} merge operands written, {:.3} operands folded and {:.3} pages \
                 read per GET, {} folded values written back, {} failed folds",
                phase_name(p.phase),
                m.merges,
                m.operands_folded as f64 / m.gets.max(1) as f64,
                m.pages_read as f64 / m.gets.max(1) as f64,
                m.merge_write_backs,
                m.merge_failures
            );
        }
        if let Some(m) = s.phases.iter().find_map(|p| p.memory_bytes_per_key) {
            let _ = writeln!(out, "{name} metadata memory (selectors or filters, page index, sketches): {m:.2} bytes per key");
        }
        if let Some(w) = s.phases.iter().find_map(|p| p.engine_write_amp) {
            let _ = writeln!(
                out,
                "{name} write amplification by its own counters (load): {w:.2}"
            );
        }
        // The settle after a load finishes what the load left to upkeep: the write
        // amplification of the load's records at rest counts both.
        let load = s.phases.iter().position(|p| p.phase == Phase::Load);
        if let Some(i) = load.filter(|&i| {
            s.phases
                .get(i + 1)
                .is_some_and(|p| p.phase == Phase::Settle)
        }) {
            if let (Some(l), Some(t)) = (s.phases[i].engine_writes, s.phases[i + 1].engine_writes) {
                let _ = writeln!(
                    out,
                    "{name} write amplification by its own counters, load and settle: {}",
                    l.plus(&t).amplification(l.user)
                );
            }
        }
    }
    for e in &report.engines {
        for p in &e.phases {
            if let Some(h) = &p.hot_get {
                let _ = writeln!(
                    out,
                    "{} hot-get: the hottest counter ({} increments) {:.2} µs per GET, a loaded \
                     record {:.2} µs: ×{:.2}",
                    e.engine,
                    h.hot_increments,
                    1e6 / h.hot.ops_per_sec.max(1e-9),
                    1e6 / h.plain.ops_per_sec.max(1e-9),
                    h.slowdown().unwrap_or(f64::NAN)
                );
            }
        }
    }
    out.push_str("(×r) = figure relative to the first column; for ops/s and GETs/s higher is better, for the rest lower.\n");
    out
}

/// Each engine's figure, and after the first its ratio to the first engine's.
pub(crate) fn row(out: &mut String, cells: &[Option<f64>]) {
    for (i, c) in cells.iter().enumerate() {
        let cell = match (c, cells[0]) {
            (Some(v), Some(b)) if i > 0 && b > 0.0 => format!("{} (×{:.2})", fmt(*v), v / b),
            (Some(v), _) => fmt(*v),
            (None, _) => "—".into(),
        };
        let _ = write!(out, "{cell:>22}");
    }
}

fn phase_name(p: Phase) -> &'static str {
    p.name()
}
