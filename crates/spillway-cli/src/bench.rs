//! `spillway bench`: every engine in turn on the same generated data, a table of each figure
//! as a ratio to Spillway's, raw results as JSON and a chart as SVG.
//!
//! Wrong answers (a read's value, a scan's order) make the results untrusted: nothing is
//! printed but the error. A scan phase an engine could not complete is a finding about that
//! engine: everything is printed and written, the failure under the table, and the exit
//! status is 1. The same goes for the phases that read on the raw-log baselines, which refuse
//! every read.

use std::path::PathBuf;
use std::sync::Mutex;

use indicatif::ProgressBar;
use spillway_bench::{table, EngineKind, Phase, Progress, RunConfig};

use crate::error::CliError;
use crate::progress;

pub struct Plan {
    pub engines: Vec<EngineKind>,
    pub phases: Vec<Phase>,
    pub config: RunConfig,
    pub work_dir: PathBuf,
    pub keep: bool,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
}

/// One progress bar per phase.
struct Bars(Mutex<Option<ProgressBar>>);

impl Progress for Bars {
    fn start(&self, engine: &str, phase: Phase, total: u64) {
        let bar = progress::bar(total, "ops");
        bar.set_prefix(format!("{engine} {}", phase.name()));
        bar.set_message(format!("{engine} {}", phase.name()));
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar);
    }
    fn advance(&self, n: u64) {
        if let Some(b) = self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            b.inc(n);
        }
    }
    fn finish(&self) {
        if let Some(b) = self.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
            b.finish_and_clear();
        }
    }
}

/// In a child started by `run` (see `spillway_bench::run_isolated`): run one engine's job.
pub fn child(job: &std::path::Path) -> Result<(), CliError> {
    spillway_bench::child_main(job, &Bars(Mutex::new(None))).map_err(CliError::Failed)
}

pub fn run(plan: &Plan) -> Result<(), CliError> {
    for e in &plan.engines {
        if !e.available() {
            return Err(CliError::Usage(format!(
                "{} is not in this build: build with `cargo build --release -p spillway-cli --features peers` (see BENCHMARKS.md)",
                e.name()
            )));
        }
    }
    let loads = plan.phases.contains(&Phase::Load);
    if plan.config.existing && loads {
        return Err(CliError::Usage(
            "--use-existing reads stores already loaded: drop `load` from --workloads".into(),
        ));
    }
    // The counter workloads but `hot-get` use keys of their own and need no load.
    let reads_need_load = plan.phases.iter().any(|p| p.needs_load()) && !loads;
    if reads_need_load && !plan.config.existing {
        return Err(CliError::Usage(
            "read, YCSB, scan and hot-get workloads need `load` in --workloads first (or --use-existing)".into(),
        ));
    }
    let created = !plan.work_dir.exists();
    let result = run_engines(plan);
    if !plan.keep {
        clean_up(plan, created, result.is_err());
    }
    result
}

/// What a run leaves when it is not to keep its stores: the stores of a failed run (a
/// successful child removes its own), the job files, and `work_dir` if the run created it.
/// Only what the run writes is removed, so that a `--dir` holding other files keeps them.
fn clean_up(plan: &Plan, created: bool, failed: bool) {
    if failed {
        for e in &plan.engines {
            let _ = std::fs::remove_dir_all(plan.work_dir.join(e.name()));
            spillway_bench::kept::forget(&plan.work_dir, e.name());
            for file in [".job.json", ".result.json"] {
                let _ = std::fs::remove_file(plan.work_dir.join(format!("{}{file}", e.name())));
            }
        }
    }
    if created {
        // Fails, leaving it, if anything else has been put there meanwhile.
        let _ = std::fs::remove_dir(&plan.work_dir);
    }
}

fn run_engines(plan: &Plan) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("finding this program: {e}")))?;
    let report = spillway_bench::run_isolated(
        &exe,
        &plan.engines,
        &plan.phases,
        &plan.config,
        &plan.work_dir,
        plan.keep,
    )
    .map_err(CliError::Failed)?;
    for e in &report.engines {
        for p in &e.phases {
            if let Some(r) = p.reads_during_load.as_ref().filter(|r| r.wrong > 0) {
                return Err(CliError::CheckFailed(format!(
                    "{}: {} of {} reads during the load missed an acknowledged write or got a wrong value — results not trusted",
                    e.engine, r.wrong, r.ops
                )));
            }
            if p.phase.scans() && p.wrong > 0 {
                return Err(CliError::CheckFailed(format!(
                    "{} {}: {} — results not trusted",
                    e.engine,
                    p.phase.name(),
                    if p.phase == Phase::ScanAll {
                        format!("{} records out of key order", p.wrong)
                    } else {
                        format!(
                            "{} of {} scans did not begin at their key, came back out of key order, or too short or long",
                            p.wrong,
                            p.scans.unwrap_or(0)
                        )
                    }
                )));
            }
            if p.wrong > 0 || (p.phase == Phase::Read && p.found != p.ops) {
                return Err(CliError::CheckFailed(format!(
                    "{} {}: {} of {} reads found, {} wrong values — results not trusted",
                    e.engine,
                    p.phase.name(),
                    p.found,
                    p.ops,
                    p.wrong
                )));
            }
        }
    }
    print!("{}", table::render(&report));
    for e in &report.engines {
        println!("{}: {}", e.engine, e.options);
    }
    if let Some(path) = &plan.json {
        std::fs::write(path, report.to_json())
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
        println!("raw results: {}", path.display());
    }
    if let Some(path) = &plan.svg {
        std::fs::write(path, spillway_bench::chart::svg(&report))
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
        println!("chart: {}", path.display());
    }
    let failed: Vec<String> = report
        .engines
        .iter()
        .flat_map(|e| {
            e.phases
                .iter()
                .filter(|p| p.error.is_some())
                .map(move |p| format!("{} {}", e.engine, p.phase.name()))
        })
        .collect();
    if !failed.is_empty() {
        return Err(CliError::CheckFailed(format!(
            "{} could not be completed (see above)",
            failed.join(", ")
        )));
    }
    Ok(())
}
