//! Stores one run keeps for the next (`--keep`, then `--use-existing`): a billion records are
//! loaded once and then read warm, cold and under a memory cap. Beside each kept store, a note
//! of the records it holds, so that a later run that would read other records is refused
//! instead of reporting every read as missing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::phase::RunConfig;
use crate::workload::Keys;

/// What a kept store was loaded with: everything that decides which keys a read asks for and
/// which values it expects.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Loaded {
    records: u64,
    record_size: usize,
    seed: u64,
    keys: Keys,
}

impl Loaded {
    fn of(cfg: &RunConfig) -> Loaded {
        Loaded {
            records: cfg.records,
            record_size: cfg.record_size,
            seed: cfg.seed,
            keys: cfg.keys,
        }
    }
}

/// The note beside engine `engine`'s store in `work_dir`.
fn note(work_dir: &Path, engine: &str) -> PathBuf {
    work_dir.join(format!("{engine}.loaded.json"))
}

/// Record that `engine`'s store in `work_dir` holds the records `cfg` describes.
pub fn remember(work_dir: &Path, engine: &str, cfg: &RunConfig) -> Result<(), String> {
    let path = note(work_dir, engine);
    let text = serde_json::to_string_pretty(&Loaded::of(cfg)).expect("plain data serializes");
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Forget `engine`'s store in `work_dir` (it is being removed or loaded anew).
pub fn forget(work_dir: &Path, engine: &str) {
    let _ = std::fs::remove_file(note(work_dir, engine));
}

/// Check that `engine`'s store in `work_dir` was kept by a run that loaded the records `cfg`
/// describes.
pub fn check(work_dir: &Path, engine: &str, cfg: &RunConfig) -> Result<(), String> {
    let path = note(work_dir, engine);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "no {engine} store kept in {} ({}: {e}): load one first with --keep",
            work_dir.display(),
            path.display()
        )
    })?;
    let kept: Loaded =
        serde_json::from_str(&text).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let asked = Loaded::of(cfg);
    if kept != asked {
        return Err(format!(
            "the {engine} store kept in {} holds other records ({kept:?}) than this run reads \
             ({asked:?}): give the flags of the run that loaded it",
            work_dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(records: u64) -> RunConfig {
        RunConfig {
            records,
            record_size: 16,
            seed: 3,
            batch: 1000,
            sync: true,
            threads: 1,
            ops: 10,
            zipfian: false,
            cold: false,
            readers: 0,
            keys: Keys::Random,
            spillway_memory_budget: None,
            spillway_options: Vec::new(),
            cpu_hogs: 0,
            existing: true,
        }
    }

    #[test]
    fn a_kept_store_is_found_only_for_the_records_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let err = check(dir.path(), "spillway", &config(100)).unwrap_err();
        assert!(err.contains("load one first with --keep"), "{err}");
        remember(dir.path(), "spillway", &config(100)).unwrap();
        check(dir.path(), "spillway", &config(100)).unwrap();
        let err = check(dir.path(), "spillway", &config(200)).unwrap_err();
        assert!(err.contains("holds other records"), "{err}");
        assert!(check(dir.path(), "rocksdb", &config(100)).is_err());
        forget(dir.path(), "spillway");
        assert!(check(dir.path(), "spillway", &config(100)).is_err());
    }
}
