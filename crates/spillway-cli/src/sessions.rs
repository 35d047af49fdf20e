//! `spillway bench --workloads sessions` (issue 30): a session store — keys written with a
//! TTL, read zipfian among the newest — on each store in turn, in real time; the space each
//! takes over time against the live data, as a table of ratios to Spillway's, JSON and an SVG
//! chart. A store that returns an expired key or a wrong value fails the run: its figures are
//! not trusted, and nothing else is printed.

use std::path::{Path, PathBuf};

use spillway_bench::{chart, sessions, sessions_run, SessionConfig, SessionEngineKind};

use crate::error::CliError;

pub struct Plan {
    pub engines: Vec<SessionEngineKind>,
    pub config: SessionConfig,
    pub work_dir: PathBuf,
    pub keep: bool,
    pub json: Option<PathBuf>,
    pub svg: Option<PathBuf>,
}

/// In a child started by `run`: one store's turn.
pub fn child(job: &Path) -> Result<(), CliError> {
    sessions_run::child_main(job).map_err(CliError::Failed)
}

pub fn run(plan: &Plan) -> Result<(), CliError> {
    for e in &plan.engines {
        if let Some(why) = e.unavailable_because() {
            return Err(CliError::Usage(why));
        }
    }
    let created = !plan.work_dir.exists();
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("finding this program: {e}")))?;
    let c = &plan.config;
    let report = sessions_run::run_isolated(
        &exe,
        &plan.engines,
        &plan.config,
        &plan.work_dir,
        plan.keep,
        &|kind| {
            eprintln!(
                "sessions: {} ({:.0} s, {:.0} inserts/s)",
                kind.name(),
                c.seconds,
                c.rate()
            )
        },
    );
    if created && !plan.keep {
        // Fails, leaving it, if anything else has been put there meanwhile.
        let _ = std::fs::remove_dir(&plan.work_dir);
    }
    let report = report.map_err(CliError::Failed)?;
    for e in &report.engines {
        sessions::check(e).map_err(CliError::CheckFailed)?;
    }
    print!("{}", sessions_run::render(&report));
    if let Some(path) = &plan.json {
        std::fs::write(path, report.to_json())
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
        println!("raw results: {}", path.display());
    }
    if let Some(path) = &plan.svg {
        std::fs::write(path, chart::sessions_svg(&report))
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
        println!("chart: {}", path.display());
    }
    Ok(())
}
