//! `spillway bench --workloads transfer` (issue 29): money moved between accounts in
//! serializable transactions on each engine that has them, in turn; a table of commits/s and
//! abort rates as ratios to Spillway's. A run whose balances do not add up at the end fails
//! (the engine's child reports it) and prints nothing else: its figures are not trusted.

use std::path::{Path, PathBuf};

use spillway_bench::{transfer_run, TransferConfig, TxEngineKind};

use crate::error::CliError;

pub struct Plan {
    pub engines: Vec<TxEngineKind>,
    pub config: TransferConfig,
    pub work_dir: PathBuf,
    pub keep: bool,
    pub json: Option<PathBuf>,
}

/// In a child started by `run`: one engine's turn.
pub fn child(job: &Path) -> Result<(), CliError> {
    transfer_run::child_main(job).map_err(CliError::Failed)
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
    let created = !plan.work_dir.exists();
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Failed(format!("finding this program: {e}")))?;
    let report = transfer_run::run_isolated(
        &exe,
        &plan.engines,
        &plan.config,
        &plan.work_dir,
        plan.keep,
        &|kind| eprintln!("transfer: {}", kind.name()),
    );
    if created && !plan.keep {
        // Fails, leaving it, if anything else has been put there meanwhile.
        let _ = std::fs::remove_dir(&plan.work_dir);
    }
    let report = report.map_err(CliError::Failed)?;
    print!("{}", transfer_run::render(&report));
    if let Some(path) = &plan.json {
        std::fs::write(path, report.to_json())
            .map_err(|e| CliError::io(format!("writing {}", path.display()), e))?;
        println!("raw results: {}", path.display());
    }
    Ok(())
}
