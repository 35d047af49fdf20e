"""Spillway: an embedded, write-optimized key-value store (the WriteBuffer tree), from Python.

    import spillway

    with spillway.open("my-store") as db:
        db[b"user:42"] = b"Ada"
        assert db[b"user:42"] == b"Ada"
        with db.batch() as b:          # applied atomically when the block ends
            b.put(b"user:43", b"Grace")
            b.delete(b"user:42")

Keys and values are bytes; a str is taken as its UTF-8 encoding. Errors are subclasses of
SpillwayError. Calls that touch the disk release the GIL, so threads write and read at once.
"""

from ._spillway import (  # noqa: F401
    MAX_KEY_LEN,
    MAX_VALUE_LEN,
    OPTIONS,
    BatchTooLargeError,
    ClosedError,
    CorruptionError,
    Db,
    InvalidOperandError,
    InvalidOptionError,
    IoError,
    Iter,
    KeyOrderMismatchError,
    KeyTooLargeError,
    LockedError,
    MergeFailedError,
    MergeOperatorMismatchError,
    NoMergeOperatorError,
    NotAStoreError,
    NotOrderedError,
    PoisonedError,
    ReadOnlyError,
    Snapshot,
    SpillwayError,
    UnsupportedVersionError,
    ValueTooLargeError,
    WriteBatch,
    check,
    open,
)

__all__ = [name for name in dir() if not name.startswith("_")]
