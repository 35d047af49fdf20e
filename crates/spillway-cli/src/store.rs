//! Opening the store, in one place: which open call each kind of command makes, with options
//! checked first (sizes reported in the MiB typed) and the engine's errors in the CLI's words.

use std::path::Path;

use spillway::Db;

use crate::error::CliError;
use crate::tuning::Tuning;

/// For `get`, `stats` and `read`: a store that must exist already, opened read-only — nothing
/// in the folder is written, so these work without write permission and on a full disk.
pub fn open_to_read(dir: &Path, tuning: &Tuning) -> Result<Db, CliError> {
    let opts = tuning.validated(false)?;
    Db::open_read_only(dir, opts).map_err(|e| CliError::opening(dir, e))
}

/// For `load`, `put` (which may create the store: `create`) and `del` (which may not).
pub fn open_to_write(dir: &Path, tuning: &Tuning, create: bool) -> Result<Db, CliError> {
    let opts = tuning.validated(create)?;
    Db::open(dir, opts).map_err(|e| CliError::opening(dir, e))
}
