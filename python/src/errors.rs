//! `spillway::Error` as Python exceptions: one class per kind, all subclasses of
//! `SpillwayError`, so that `except spillway.SpillwayError` catches every one.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    spillway,
    SpillwayError,
    PyException,
    "Every error of the store."
);

macro_rules! kinds {
    ($($name:ident: $doc:literal),* $(,)?) => {
        $(create_exception!(spillway, $name, SpillwayError, $doc);)*

        /// Add every exception class to the module.
        pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
            let py = m.py();
            m.add("SpillwayError", py.get_type::<SpillwayError>())?;
            $(m.add(stringify!($name), py.get_type::<$name>())?;)*
            Ok(())
        }
    };
}

kinds! {
    IoError: "A file operation failed (a full disk, a failed fsync, ...).",
    CorruptionError: "A checksum or structure check failed: the store is damaged.",
    NotAStoreError: "The folder holds files that are not a Spillway store.",
    UnsupportedVersionError: "The store was written by a newer Spillway.",
    LockedError: "Another process has the store open.",
    InvalidOptionError: "An option's value is out of range.",
    KeyTooLargeError: "A key longer than spillway.MAX_KEY_LEN.",
    ValueTooLargeError: "A value longer than spillway.MAX_VALUE_LEN.",
    BatchTooLargeError: "A write batch larger than the largest batch.",
    PoisonedError: "An earlier failure stopped writes until the store is reopened.",
    ClosedError: "The store was closed.",
    ReadOnlyError: "The store was opened read-only.",
    KeyOrderMismatchError: "The store was created with the other key order.",
    NoMergeOperatorError: "merge() on a store opened without a merge operator.",
    MergeOperatorMismatchError: "The store was created with another merge operator.",
    InvalidOperandError: "The merge operator refused an operand.",
    MergeFailedError: "A key's merge operands failed to fold.",
    NotOrderedError: "range(), prefix() or delete_range() (of less than every key) on a hashed store or keyspace.",
    ConflictError: "A transaction's commit found that something it read was written since its snapshot: nothing of it was applied; run it again.",
    KeyspaceDroppedError: "A Keyspace whose keyspace was dropped since (or a batch writing into one): nothing was written.",
    InvalidKeyspaceError: "A keyspace name that cannot be used here: too long, the default keyspace's where a named one is needed, missing, or of other options.",
}

/// The Python exception for `e`, its message Spillway's.
pub fn to_py(e: spillway::Error) -> PyErr {
    use spillway::Error as E;
    let text = e.to_string();
    match e {
        E::Io { .. } => IoError::new_err(text),
        E::Corruption { .. } => CorruptionError::new_err(text),
        E::NotAStore { .. } => NotAStoreError::new_err(text),
        E::UnsupportedVersion { .. } => UnsupportedVersionError::new_err(text),
        E::Locked { .. } => LockedError::new_err(text),
        E::InvalidOption { .. } => InvalidOptionError::new_err(text),
        // Options come as keyword arguments: an unknown one is Python's own error for that.
        E::UnknownOption { .. } => pyo3::exceptions::PyTypeError::new_err(text),
        E::KeyTooLarge { .. } => KeyTooLargeError::new_err(text),
        E::ValueTooLarge { .. } => ValueTooLargeError::new_err(text),
        E::BatchTooLarge { .. } => BatchTooLargeError::new_err(text),
        E::Poisoned { .. } => PoisonedError::new_err(text),
        E::Closed => ClosedError::new_err(text),
        E::ReadOnly => ReadOnlyError::new_err(text),
        E::KeyOrderMismatch { .. } => KeyOrderMismatchError::new_err(text),
        E::NoMergeOperator => NoMergeOperatorError::new_err(text),
        E::MergeOperatorMismatch { .. } => MergeOperatorMismatchError::new_err(text),
        E::InvalidOperand { .. } => InvalidOperandError::new_err(text),
        E::MergeFailed { .. } => MergeFailedError::new_err(text),
        E::NotOrdered => NotOrderedError::new_err(text),
        E::Conflict => ConflictError::new_err(text),
        E::KeyspaceDropped { .. } => KeyspaceDroppedError::new_err(text),
        E::InvalidKeyspace { .. } => InvalidKeyspaceError::new_err(text),
        // A kind of error this build of the package does not know yet.
        _ => SpillwayError::new_err(text),
    }
}
