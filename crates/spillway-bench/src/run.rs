//! A whole benchmark: every engine in turn, on the same data, through the same phases.

use std::path::Path;

use serde::Serialize;

use crate::engine::EngineKind;
use crate::phase::{self, Phase, PhaseResult, RunConfig};

/// Everything a run produced, as written to JSON.
#[derive(Debug, Serialize)]
pub struct Report {
    pub config: RunConfig,
    pub engines: Vec<EngineReport>,
    pub machine: Machine,
}

impl Report {
    /// The raw results, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

#[derive(Debug, Serialize)]
pub struct EngineReport {
    pub engine: String,
    pub options: String,
    pub phases: Vec<PhaseResult>,
}

#[derive(Debug, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub memory_bytes: u64,
    pub kernel: String,
}

impl Machine {
    pub fn here() -> Machine {
        let mem_kb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .map(str::to_owned)
            })
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes: mem_kb * 1024,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_string(),
        }
    }
}

/// Called as a phase starts (engine, phase, operations to do) and as operations complete.
pub trait Progress: Sync {
    fn start(&self, engine: &str, phase: Phase, total: u64);
    fn advance(&self, n: u64);
    fn finish(&self);
}

/// Run `phases` for each engine, each in a fresh folder under `work_dir` (removed afterwards
/// unless `keep`). The load phase, if asked for, runs first; reads need loaded data.
pub fn run(
    engines: &[EngineKind],
    phases: &[Phase],
    cfg: &RunConfig,
    work_dir: &Path,
    keep: bool,
    progress: &dyn Progress,
) -> Result<Report, String> {
    let mut reports = Vec::new();
    for &kind in engines {
        let dir = work_dir.join(kind.name());
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("clearing {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let engine = kind.open(&dir)?;
        let mut results = Vec::new();
        for &phase in phases {
            let total = if phase == Phase::Load {
                cfg.records
            } else {
                cfg.ops
            };
            progress.start(kind.name(), phase, total);
            let r = phase::run(engine.as_ref(), kind.name(), &dir, cfg, phase, &|n| {
                progress.advance(n)
            });
            progress.finish();
            results.push(r?);
        }
        engine.close()?;
        if !keep {
            let _ = std::fs::remove_dir_all(&dir);
        }
        reports.push(EngineReport {
            engine: kind.name().to_string(),
            options: kind.options_note().to_string(),
            phases: results,
        });
    }
    Ok(Report {
        config: cfg.clone(),
        engines: reports,
        machine: Machine::here(),
    })
}
