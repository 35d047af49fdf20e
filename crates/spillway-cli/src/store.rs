//! Opening the store, in one place: which open call each kind of command makes, with options
//! checked first (sizes reported in the MiB typed) and the engine's errors in the CLI's words.
//!
//! A store's key order (hashed or ordered) is fixed when it is created. `--ordered` chooses it
//! for a new store; an existing one is opened in its own order unless `--ordered` asks for
//! another, which is an error (`CliError::KeyOrderFixed`) rather than a silent no-op.

use std::path::Path;

use spillway::{Db, Options};

use crate::error::CliError;
use crate::tuning::Tuning;

/// For `get`, `scan`, `stats` and `read`: a store that must exist already, opened read-only —
/// nothing in the folder is written, so these work without write permission and on a full
/// disk. The engine reads a store in whichever order it was created with.
pub fn open_to_read(dir: &Path, tuning: &Tuning) -> Result<Db, CliError> {
    let opts = tuning.validated(false)?;
    Db::open_read_only(dir, opts).map_err(|e| CliError::opening(dir, e))
}

/// For `load`, `put` (which may create the store: `create`) and `del` (which may not).
///
/// Without `--ordered`, an existing ordered store is opened as ordered (the engine names the
/// stored order in its `KeyOrderMismatch`, and the open is retried with it); with `--ordered`,
/// an existing hashed store is an error.
pub fn open_to_write(dir: &Path, tuning: &Tuning, create: bool) -> Result<Db, CliError> {
    let opts = tuning.validated(create)?;
    match Db::open(dir, opts.clone()) {
        Err(spillway::Error::KeyOrderMismatch { stored, .. }) if !tuning.ordered => Db::open(
            dir,
            Options {
                key_order: stored,
                ..opts
            },
        ),
        opened => opened,
    }
    .map_err(|e| CliError::opening(dir, e))
}
