//! Opening the store, in one place: which open call each kind of command makes, with options
//! checked first (sizes reported in the MiB typed) and the engine's errors in the CLI's words.
//!
//! A store's key order (hashed or ordered) is fixed when it is created. `--ordered` chooses it
//! for a new store; an existing one is opened in its own order unless `--ordered` asks for
//! another, which is an error (`CliError::KeyOrderFixed`) rather than a silent no-op.
//!
//! A store's merge operator is fixed by its first merge (`merge --op`, `load --op add`): the
//! engine records its name, and opens the store only with an operator of that name. Every
//! command opens such a store with it by itself (the engine names it in its
//! `MergeOperatorMismatch`, and the open is retried with the built-in of that name); a merge
//! with another operator is an error (`CliError::OperatorFixed`), and so is a store whose
//! operator is not a built-in (`CliError::UnknownOperator`).

use std::path::Path;
use std::sync::Arc;

use spillway::{Db, MergeOperator, Options};

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
/// disk. The engine reads a store in whichever order it was created with.
pub fn open_to_read(dir: &Path, tuning: &Tuning) -> Result<Store, CliError> {
    let opts = tuning.validated(false)?;
    open_adopting(dir, opts, false, |d, o| Db::open_read_only(d, o))
}

/// For `load`, `put` and `merge` (which may create the store: `create`) and `del` (which may
/// not); `operator` is the one a merge needs (`None`: whichever the store records, if any).
///
/// Without `--ordered`, an existing ordered store is opened as ordered (the engine names the
/// stored order in its `KeyOrderMismatch`, and the open is retried with it); with `--ordered`,
/// an existing hashed store is an error. A store without an operator records `operator`.
pub fn open_to_write(
    dir: &Path,
    tuning: &Tuning,
    create: bool,
    operator: Option<Arc<dyn MergeOperator>>,
) -> Result<Store, CliError> {
    let opts = Options {
        merge_operator: operator,
        ..tuning.validated(create)?
    };
    open_adopting(dir, opts, !tuning.ordered, |d, o| Db::open(d, o))
}

/// Open with `opts`, adopting the store's merge operator when `opts` has none, and its key
/// order when `adopt_order`: each mismatch the engine reports names what the store records,
/// and the open is tried again with that (at most once each).
fn open_adopting(
    dir: &Path,
    mut opts: Options,
    adopt_order: bool,
    open: fn(&Path, Options) -> spillway::Result<Db>,
) -> Result<Store, CliError> {
    let mut retries = 2;
    loop {
        let e = match open(dir, opts.clone()) {
            Ok(db) => {
                let operator = opts.merge_operator.as_ref().map(|o| o.name().to_owned());
                return Ok(Store { db, operator });
            }
            Err(e) if retries == 0 => e,
            Err(spillway::Error::KeyOrderMismatch { stored, .. })
                if adopt_order && opts.key_order != stored =>
            {
                opts.key_order = stored;
                retries -= 1;
                continue;
            }
            Err(spillway::Error::MergeOperatorMismatch {
                stored: Some(name),
                given: None,
            }) => match spillway::operators::by_name(&name) {
                Some(op) => {
                    opts.merge_operator = Some(op);
                    retries -= 1;
                    continue;
                }
                None => {
                    return Err(CliError::UnknownOperator {
                        dir: dir.to_owned(),
                        name,
                    })
                }
            },
            Err(e) => e,
        };
        return Err(CliError::opening(dir, e));
    }
}
