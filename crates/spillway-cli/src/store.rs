//! Opening the store, in one place: which open call each kind of command makes, with options
//! checked first (sizes reported in the MiB typed) and the engine's errors in the CLI's words.
//!
//! The engine opens a store as it was made: in the key order its manifest records, and with
//! the built-in merge operator it records. `--ordered` chooses the order of a new store; an
//! existing one of the other order is then an error (`CliError::KeyOrderFixed`) rather than a
//! silent no-op. A merge with another operator than the store's is an error
//! (`CliError::OperatorFixed`), and so is a store whose operator is not a built-in
//! (`CliError::UnknownOperator`).

use std::path::Path;
use std::sync::Arc;

use spillway::{Db, MergeOperator};

use crate::error::CliError;
use crate::operators::COUNTERS;
use crate::tuning::Tuning;

/// An open store, and the name of the merge operator it was opened with: the one it records,
/// if it records one.
pub struct Store {
    pub db: Db,
    pub operator: Option<String>,
}

impl Store {
    /// Whether the store holds counters (`spillway.u64add`): `get` and `scan` print 8-byte
    /// values as numbers.
    pub fn is_counters(&self) -> bool {
        self.operator.as_deref() == Some(COUNTERS)
    }
}

/// For `get`, `scan`, `stats` and `read`: a store that must exist already, opened read-only —
/// nothing in the folder is written, so these work without write permission and on a full
/// disk.
pub fn open_to_read(dir: &Path, tuning: &Tuning) -> Result<Store, CliError> {
    let opts = tuning.validated(false)?;
    opened(dir, Db::open_read_only(dir, opts))
}

/// For `load`, `put` and `merge` (which may create the store: `create`) and `del` (which may
/// not); `operator` is the one a merge needs (`None`: whichever the store records, if any,
/// or `-o merge_operator`'s). A store without an operator records `operator`.
pub fn open_to_write(
    dir: &Path,
    tuning: &Tuning,
    create: bool,
    operator: Option<Arc<dyn MergeOperator>>,
) -> Result<Store, CliError> {
    let mut opts = tuning.validated(create)?;
    if let Some(operator) = operator {
        if tuning.sets("merge_operator") {
            return Err(CliError::Usage(
                "-o merge_operator does not go with a command that chooses the operator \
                 (merge --op, load --op add)"
                    .into(),
            ));
        }
        opts.merge_operator = Some(operator);
    }
    opened(dir, Db::open(dir, opts))
}

/// The store an open gave, or its error in the CLI's words.
fn opened(dir: &Path, db: spillway::Result<Db>) -> Result<Store, CliError> {
    match db {
        Ok(db) => {
            let operator = db.merge_operator_name().map(str::to_owned);
            Ok(Store { db, operator })
        }
        Err(spillway::Error::MergeOperatorMismatch {
            stored: Some(name),
            given: None,
        }) => Err(CliError::UnknownOperator {
            dir: dir.to_owned(),
            name,
        }),
        Err(e) => Err(CliError::opening(dir, e)),
    }
}
