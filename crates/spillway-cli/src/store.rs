//! Opening the store, in one place: which open call each kind of command makes, with options
//! checked first (sizes reported in the MiB typed) and the engine's errors in the CLI's words.
//!
//! The engine opens a store as it was made: in the key order its manifest records, and with
//! the built-in merge operator it records. `--ordered` chooses the order of a new store; an
//! existing one of the other order is then an error (`CliError::KeyOrderFixed`) rather than a
//! silent no-op. A merge with another operator than the store's is an error
//! (`CliError::OperatorFixed`), and so is a store whose operator is not a built-in
//! (`CliError::UnknownOperator`).
//!
//! `--keyspace NAME` (put, get, del, expire, persist, merge, scan, load, read) works in one
//! named keyspace of the store instead of the default one: see [`Space`]. Its order and operator are fixed when it is
//! created, and `--ordered`, `-o key_order` and `-o merge_operator` (or merge's `--op`) then
//! describe the keyspace, not the store, which opens as it was made.

use std::path::Path;
use std::sync::Arc;

use spillway::{Db, KeyOrder, Keyspace, KeyspaceOptions, MergeOperator};

use crate::error::CliError;
use crate::operators::COUNTERS;
use crate::tuning::Tuning;

/// An open store, and the name of the merge operator it was opened with: the one it records,
/// if it records one.
pub struct Store {
    pub db: Db,
    pub operator: Option<String>,
}

/// For `get`, `scan`, `stats` and `read`: a store that must exist already, opened read-only —
/// nothing in the folder is written, so these work without write permission and on a full
/// disk.
pub fn open_to_read(dir: &Path, tuning: &Tuning) -> Result<Store, CliError> {
    let opts = tuning.validated(false)?;
    opened(dir, Db::open_read_only(dir, opts))
}

/// For `load`, `put` and `merge` (which may create the store: `create`) and `del`, `expire`
/// and `persist` (which may not); `operator` is the one a merge needs (`None`: whichever the
/// store records, if any, or `-o merge_operator`'s). A store without an operator records
/// `operator`.
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

/// The keyspace a key command works in: the default one, or `--keyspace`'s.
pub struct Space {
    pub ks: Keyspace,
    /// `None` for the default keyspace.
    pub name: Option<String>,
    pub order: KeyOrder,
    /// The name of the merge operator the keyspace records, if it records one.
    pub operator: Option<String>,
}

impl Space {
    /// Whether the keyspace holds counters (`spillway.u64add`): `get`, `scan` and `read`
    /// read 8-byte values as numbers.
    pub fn is_counters(&self) -> bool {
        self.operator.as_deref() == Some(COUNTERS)
    }

    fn default_of(store: &Store) -> Space {
        Space {
            ks: store.db.default_keyspace(),
            name: None,
            order: store.db.key_order(),
            operator: store.operator.clone(),
        }
    }
}

/// What the flags ask of a named keyspace: an order (`--ordered`, `-o key_order`) and an
/// operator (merge's `--op`, `-o merge_operator`), which a new keyspace is created with and
/// an existing one must have.
struct Wanted {
    order: Option<KeyOrder>,
    operator: Option<Arc<dyn MergeOperator>>,
}

/// `--keyspace ""` is the default keyspace, as the engine's empty name is: a script may
/// pass `--keyspace "$KS"` whether or not it has one.
fn named(keyspace: Option<&str>) -> Option<&str> {
    keyspace.filter(|name| !name.is_empty())
}

/// For `get`, `scan` and `read`: the store opened as [`open_to_read`] opens it, and the keyspace,
/// which must exist (a read-only handle cannot create one, and a read should not).
pub fn read_in(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
) -> Result<(Db, Space), CliError> {
    let Some(name) = named(keyspace) else {
        let store = open_to_read(dir, tuning)?;
        let space = Space::default_of(&store);
        return Ok((store.db, space));
    };
    let mut opts = tuning.validated(false)?;
    let wanted = Wanted {
        order: opts.key_order.take(),
        operator: opts.merge_operator.take(),
    };
    let db = opened(dir, Db::open_read_only(dir, opts))?.db;
    let space = space(&db, dir, name, wanted, false)?;
    Ok((db, space))
}

/// For `put`, `merge`, `load` (`create`: they create the store and the keyspace if needed) and
/// `del`, `expire` and `persist` (which create neither: they have nothing to change in a
/// keyspace that is not there); `operator` as for [`open_to_write`], for the keyspace when one
/// is named.
pub fn write_in(
    dir: &Path,
    tuning: &Tuning,
    keyspace: Option<&str>,
    create: bool,
    operator: Option<Arc<dyn MergeOperator>>,
) -> Result<(Db, Space), CliError> {
    let Some(name) = named(keyspace) else {
        let store = open_to_write(dir, tuning, create, operator)?;
        let space = Space::default_of(&store);
        return Ok((store.db, space));
    };
    let mut opts = tuning.validated(create)?;
    if operator.is_some() && tuning.sets("merge_operator") {
        return Err(CliError::Usage(
            "-o merge_operator does not go with a command that chooses the operator \
             (merge --op, load --op add)"
                .into(),
        ));
    }
    let wanted = Wanted {
        order: opts.key_order.take(),
        operator: operator.or(opts.merge_operator.take()),
    };
    let db = opened(dir, Db::open(dir, opts))?.db;
    let space = space(&db, dir, name, wanted, create)?;
    Ok((db, space))
}

/// Keyspace `name` of `db`, created with `wanted` if it is not there and `create`; an
/// existing one is checked against `wanted` first, so that a mismatch is reported in the
/// CLI's words (the engine's are about `KeyspaceOptions`).
fn space(db: &Db, dir: &Path, name: &str, wanted: Wanted, create: bool) -> Result<Space, CliError> {
    let keyspace = Some(name.to_owned());
    let names = db.keyspaces();
    if !names.iter().any(|n| n == name) {
        if !create {
            return Err(CliError::NoKeyspace {
                dir: dir.to_owned(),
                name: name.to_owned(),
                keyspaces: names,
            });
        }
        let operator = wanted.operator.as_ref().map(|o| o.name().to_owned());
        let mut opts = KeyspaceOptions::default().key_order(wanted.order.unwrap_or_default());
        if let Some(op) = wanted.operator {
            opts = opts.merge_operator(op);
        }
        let ks = db.keyspace(name, opts)?;
        return Ok(Space {
            order: ks.key_order()?,
            ks,
            name: keyspace,
            operator,
        });
    }
    let (order, operator) = inspect(db, name)?;
    if let Some(requested) = wanted.order.filter(|o| *o != order) {
        return Err(CliError::KeyOrderFixed {
            dir: dir.to_owned(),
            keyspace,
            stored: order,
            requested,
        });
    }
    match (&operator, &wanted.operator) {
        (stored, Some(given)) if stored.as_deref() != Some(given.name()) => {
            return Err(match stored {
                Some(stored) => CliError::OperatorFixed {
                    dir: dir.to_owned(),
                    keyspace,
                    stored: stored.clone(),
                    given: given.name().to_owned(),
                },
                None => CliError::NoOperator {
                    dir: dir.to_owned(),
                    name: name.to_owned(),
                },
            });
        }
        (Some(stored), None) if spillway::operators::by_name(stored).is_none() => {
            return Err(CliError::UnknownOperator {
                dir: dir.to_owned(),
                keyspace,
                name: stored.clone(),
            });
        }
        _ => {}
    }
    let mut opts = KeyspaceOptions::default().key_order(order);
    if let Some(op) = wanted.operator {
        opts = opts.merge_operator(op);
    }
    Ok(Space {
        ks: db.keyspace(name, opts)?,
        name: keyspace,
        order,
        operator,
    })
}

/// The key order and merge operator name of existing keyspace `name`.
pub fn inspect(db: &Db, name: &str) -> Result<(KeyOrder, Option<String>), CliError> {
    let ks = db
        .keyspace_handle(name)
        .ok_or_else(|| CliError::Failed(format!("keyspace `{name}` does not exist")))?;
    Ok((ks.key_order()?, ks.merge_operator_name()?))
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
            keyspace: None,
            name,
        }),
        Err(e) => Err(CliError::opening(dir, e)),
    }
}
