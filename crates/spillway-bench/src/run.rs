//! A whole benchmark: every engine in turn, on the same data, through the same phases.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::counters::{self, CounterModel};
use crate::engine::EngineKind;
use crate::engines::spillway::Tuning;
use crate::hog::CpuHog;
use crate::kept;
use crate::measure::{self, DeviceIo};
use crate::phase::{self, Phase, PhaseResult, RunConfig};

/// Everything a run produced, as written to JSON.
#[derive(Debug, Serialize, Deserialize)]
pub struct Report {
    pub config: RunConfig,
    pub engines: Vec<EngineReport>,
    pub machine: Machine,
    /// Rounds of busy arithmetic each of `config.cpu_hogs` threads spun during the run (see
    /// `hog`): how much of the machine they took.
    #[serde(default)]
    pub cpu_hog_rounds: Vec<u64>,
}

impl Report {
    /// The raw results, pretty-printed.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes")
    }
}

#[derive(Debug, Serialize, Deserialize)]
pub struct EngineReport {
    pub engine: String,
    pub options: String,
    pub phases: Vec<PhaseResult>,
    /// Device bytes written over the engine's whole turn — every phase and the close — over
    /// all user bytes written: this catches compaction work an LSM defers past the load.
    pub device_bytes_written_total: u64,
    pub user_bytes_written_total: u64,
    pub device_write_amp_total: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
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

/// What a child process is asked to do: one engine's share of a run.
#[derive(Debug, Serialize, Deserialize)]
struct Job {
    engine: String,
    phases: Vec<Phase>,
    config: RunConfig,
    work_dir: PathBuf,
    keep: bool,
    out: PathBuf,
}

/// The environment variable that turns a process into a benchmark child; its value is the
/// path of the job file.
pub const CHILD_ENV: &str = "SPILLWAY_BENCH_CHILD";

/// Like [`run`], but each engine runs in a child process of its own (`exe`, which must call
/// [`child_main`] when [`CHILD_ENV`] is set). Resident memory, `/proc/self/io` and the
/// allocator's state then belong to one engine alone, and no engine's background threads
/// outlive its turn.
pub fn run_isolated(
    exe: &Path,
    engines: &[EngineKind],
    phases: &[Phase],
    cfg: &RunConfig,
    work_dir: &Path,
    keep: bool,
) -> Result<Report, String> {
    std::fs::create_dir_all(work_dir)
        .map_err(|e| format!("creating {}: {e}", work_dir.display()))?;
    // Here, not in the children: the hogs' CPU time is not the engines'.
    let hogs = CpuHog::start(cfg.cpu_hogs);
    let mut reports = Vec::new();
    for &kind in engines {
        let job_path = work_dir.join(format!("{}.job.json", kind.name()));
        let out = work_dir.join(format!("{}.result.json", kind.name()));
        let job = Job {
            engine: kind.name().into(),
            phases: phases.to_vec(),
            config: cfg.clone(),
            work_dir: work_dir.to_owned(),
            keep,
            out: out.clone(),
        };
        let mut one: Report = in_child(exe, CHILD_ENV, &job_path, &job, &out)
            .map_err(|e| format!("the {} run failed ({e})", kind.name()))?;
        reports.append(&mut one.engines);
    }
    Ok(Report {
        config: cfg.clone(),
        engines: reports,
        machine: Machine::here(),
        cpu_hog_rounds: hogs.stop(),
    })
}

/// Run `job` in a child process `exe`, which finds it in file `job_path` (named by
/// environment variable `env`) and writes its result to `out`: that result.
pub(crate) fn in_child<J: Serialize, R: serde::de::DeserializeOwned>(
    exe: &Path,
    env: &str,
    job_path: &Path,
    job: &J,
    out: &Path,
) -> Result<R, String> {
    let _ = std::fs::remove_file(out);
    let text = serde_json::to_string(job).expect("plain data serializes");
    std::fs::write(job_path, text).map_err(|e| format!("writing {}: {e}", job_path.display()))?;
    let status = std::process::Command::new(exe)
        .env(env, job_path)
        .stdin(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let _ = std::fs::remove_file(job_path);
    if !status.success() {
        return Err(status.to_string());
    }
    let text =
        std::fs::read_to_string(out).map_err(|e| format!("reading {}: {e}", out.display()))?;
    let _ = std::fs::remove_file(out);
    serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", out.display()))
}

/// Run the job named by [`CHILD_ENV`] and write its report where the parent expects it.
pub fn child_main(job_path: &Path, progress: &dyn Progress) -> Result<(), String> {
    let text = std::fs::read_to_string(job_path)
        .map_err(|e| format!("reading {}: {e}", job_path.display()))?;
    let job: Job =
        serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", job_path.display()))?;
    let kind = EngineKind::parse(&job.engine)?;
    let report = run(
        &[kind],
        &job.phases,
        &job.config,
        &job.work_dir,
        job.keep,
        progress,
    )?;
    std::fs::write(&job.out, report.to_json())
        .map_err(|e| format!("writing {}: {e}", job.out.display()))
}

/// Run `phases` for each engine, each in a fresh folder under `work_dir` (removed afterwards
/// unless `keep`), or with `cfg.existing` in the folder a run with `keep` loaded (see `kept`).
/// The load phase, if asked for, runs first; reads need loaded data.
///
/// An engine error ends the run with `Err`; a scan phase the engine could not complete, and
/// a phase that reads on an engine that refuses reads (the raw-log baselines), are recorded
/// in that phase's `error`, and the run goes on (its next phases, the next engines).
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
        if cfg.existing {
            kept::check(work_dir, kind.name(), cfg)?;
        } else {
            kept::forget(work_dir, kind.name());
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .map_err(|e| format!("clearing {}: {e}", dir.display()))?;
            }
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        let io_before = DeviceIo::now();
        let tuning = Tuning::of(cfg);
        let mut engine = kind.open_with(&dir, &tuning)?;
        let mut results: Vec<PhaseResult> = Vec::new();
        // What the counters must hold, across this engine's phases.
        let model = CounterModel::for_run(phases, cfg);
        for &phase in phases {
            // Records inserted by earlier phases (YCSB E), beyond the load's.
            let inserted: u64 = results.iter().map(|r| r.inserted).sum();
            if phase == Phase::Reopen {
                let start = std::time::Instant::now();
                engine.close()?;
                engine = kind.open_with(&dir, &tuning)?;
                let seconds = start.elapsed().as_secs_f64();
                let mut r = phase::run(
                    engine.as_ref(),
                    kind.name(),
                    &dir,
                    cfg,
                    phase,
                    inserted,
                    &model,
                    &|_| {},
                )?;
                r.seconds = seconds;
                results.push(r);
                continue;
            }
            if phase::is_cold(cfg, phase) {
                // Close first: an engine that maps its files (LevelDB does) pins their pages,
                // and the kernel will not evict mapped pages. Reopening is not timed.
                engine.close()?;
                measure::evict(&dir)
                    .map_err(|e| format!("evicting {} from the page cache: {e}", dir.display()))?;
                engine = kind.open_with(&dir, &tuning)?;
            }
            let warm_up = if phase::is_cold(cfg, phase) {
                let start = std::time::Instant::now();
                engine.warm_up()?.then(|| start.elapsed().as_secs_f64())
            } else {
                None
            };
            let total = match phase {
                Phase::Load => cfg.records,
                Phase::Settle | Phase::Reopen => 0,
                Phase::ScanAll => cfg.records + inserted + model.present(),
                Phase::HotGet => counters::hot_gets(cfg),
                _ => cfg.ops,
            };
            progress.start(kind.name(), phase, total);
            let r = phase::run(
                engine.as_ref(),
                kind.name(),
                &dir,
                cfg,
                phase,
                inserted,
                &model,
                &|n| progress.advance(n),
            );
            progress.finish();
            results.push(PhaseResult {
                warm_up_seconds: warm_up,
                ..r?
            });
        }
        engine.close()?;
        let device = DeviceIo::now().since(io_before).write_bytes;
        if !keep {
            kept::forget(work_dir, kind.name());
            let _ = std::fs::remove_dir_all(&dir);
        } else if phases.contains(&Phase::Load) {
            kept::remember(work_dir, kind.name(), cfg)?;
        }
        let user: u64 = results.iter().map(|r| r.user_bytes_written).sum();
        reports.push(EngineReport {
            engine: kind.name().to_string(),
            options: if kind.is_spillway() {
                format!("{}{}", kind.options_note(), tuning.note())
            } else {
                kind.options_note().to_string()
            },
            phases: results,
            device_bytes_written_total: device,
            user_bytes_written_total: user,
            device_write_amp_total: (user > 0).then(|| device as f64 / user as f64),
        });
    }
    Ok(Report {
        config: cfg.clone(),
        engines: reports,
        machine: Machine::here(),
        cpu_hog_rounds: Vec::new(),
    })
}

/// One engine's share of a workload that runs each engine in a child of its own (sessions,
/// transfer), handed to the child as JSON.
#[derive(Debug, Serialize, Deserialize)]
struct EngineJob<C> {
    engine: String,
    config: C,
    dir: PathBuf,
    keep: bool,
    out: PathBuf,
}

/// Run `workload` on `engines` in turn, each by a child `exe` (which reads its job with
/// [`child_job`] when `env` is set) on a fresh folder under `work_dir`; `announce` is told each
/// engine as its turn begins.
#[allow(clippy::too_many_arguments)]
pub(crate) fn engines_in_children<K: Copy, C: Serialize + Clone, R: serde::de::DeserializeOwned>(
    exe: &Path,
    env: &str,
    workload: &str,
    engines: &[K],
    name: fn(K) -> &'static str,
    config: &C,
    work_dir: &Path,
    keep: bool,
    announce: &dyn Fn(K),
) -> Result<Vec<R>, String> {
    std::fs::create_dir_all(work_dir)
        .map_err(|e| format!("creating {}: {e}", work_dir.display()))?;
    let mut results = Vec::new();
    for &kind in engines {
        announce(kind);
        let engine = name(kind);
        let folder = format!("{workload}-{engine}");
        let job_path = work_dir.join(format!("{folder}.job.json"));
        let out = work_dir.join(format!("{folder}.result.json"));
        let job = EngineJob {
            engine: engine.into(),
            config: config.clone(),
            dir: work_dir.join(&folder),
            keep,
            out: out.clone(),
        };
        let result = in_child(exe, env, &job_path, &job, &out);
        if result.is_err() && !keep {
            let _ = std::fs::remove_dir_all(&job.dir);
        }
        results.push(result.map_err(|e| format!("the {engine} {workload} run failed ({e})"))?);
    }
    Ok(results)
}

/// In a child of [`engines_in_children`]: read the job at `job_path`, run it with `run` (the
/// engine's name, a fresh folder, the config) and write its result where the parent expects
/// it. The folder is removed afterwards unless the job says to keep it.
pub(crate) fn child_job<C: serde::de::DeserializeOwned, R: Serialize>(
    job_path: &Path,
    run: impl FnOnce(&str, &Path, &C) -> Result<R, String>,
) -> Result<(), String> {
    let text = std::fs::read_to_string(job_path)
        .map_err(|e| format!("reading {}: {e}", job_path.display()))?;
    let job: EngineJob<C> =
        serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", job_path.display()))?;
    if job.dir.exists() {
        std::fs::remove_dir_all(&job.dir)
            .map_err(|e| format!("clearing {}: {e}", job.dir.display()))?;
    }
    std::fs::create_dir_all(&job.dir)
        .map_err(|e| format!("creating {}: {e}", job.dir.display()))?;
    let result = run(&job.engine, &job.dir, &job.config);
    if !job.keep {
        let _ = std::fs::remove_dir_all(&job.dir);
    }
    let text = serde_json::to_string(&result?).expect("plain data serializes");
    std::fs::write(&job.out, text).map_err(|e| format!("writing {}: {e}", job.out.display()))
}
