"""Spillway: an embedded, write-optimized key-value store (the WriteBuffer tree), from Python.

    import spillway

    with spillway.open("my-store") as db:
        db[b"user:42"] = b"Ada"
        assert db[b"user:42"] == b"Ada"
        with db.batch() as b:          # applied atomically when the block ends
            b.put(b"user:43", b"Grace")
            b.delete(b"user:42")

        accounts = db.keyspace("accounts")  # a collection of its own in the same store
        accounts[b"ada"] = (100).to_bytes(8, "little")
        with db.transaction() as tx:   # commits at the end, or raises ConflictError
            balance = int.from_bytes(tx.get(b"ada", keyspace=accounts), "little")
            tx.put(b"ada", (balance - 1).to_bytes(8, "little"), keyspace=accounts)

        db.put(b"session:1", b"ada", ttl=30)   # gone from every read 30 s from now
        db.ttl(b"session:1")                   # ~30.0 seconds left (None: no expiry)
        db.persist(b"session:1")               # stays until deleted

Expiry: a ttl is seconds (int or float) or a datetime.timedelta, more than 0; a time is an aware
datetime or a Unix timestamp in seconds (a naive datetime is refused). Tests open a store with
clock=spillway.ManualClock(...) and advance() it instead of sleeping.

Keys and values are bytes; a str is taken as its UTF-8 encoding. Errors are subclasses of
SpillwayError. Calls that touch the disk release the GIL, so threads write and read at once.
"""

from ._spillway import (  # noqa: F401
    MAX_KEY_LEN,
    MAX_VALUE_LEN,
    OPTIONS,
    BatchTooLargeError,
    ClosedError,
    ConflictError,
    CorruptionError,
    Db,
    InvalidKeyspaceError,
    InvalidOperandError,
    InvalidOptionError,
    IoError,
    Iter,
    KeyOrderMismatchError,
    Keyspace,
    KeyspaceDroppedError,
    ManualClock,
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
    Transaction,
    UnsupportedVersionError,
    ValueTooLargeError,
    WriteBatch,
    check,
    open,
)

__all__ = [name for name in dir() if not name.startswith("_")]
