//! The one error type every fallible Spillway call returns.

use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong, typed so that callers can act on it.
///
/// The engine never panics on bad input or bad files: a corrupted page, a foreign file, an
/// oversized key or a full disk each arrive here with a message that names what to do.
///
/// New kinds of error may be added in later versions (`#[non_exhaustive]`): a `match` needs
/// a `_` arm.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O failure (disk full, permission denied, ...), with what we were
    /// doing when it happened.
    #[error("I/O error while {context}: {source}")]
    Io {
        context: String,
        #[source]
        source: Arc<std::io::Error>,
    },

    /// Data on disk does not match its checksum or its format. Nothing from the damaged region is
    /// returned as data.
    #[error("corruption in {path}: {reason}")]
    Corruption { path: PathBuf, reason: String },

    /// The folder holds files that Spillway did not write, or that a newer format wrote.
    #[error("{path} is not a Spillway store: {reason}")]
    NotAStore { path: PathBuf, reason: String },

    /// A file written by a newer (or unknown) format version of Spillway.
    #[error("{path} has format version {found}; this build reads version {supported}")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    /// Another handle (in this or another process) has the store open.
    #[error("store {path} is locked by another process or handle")]
    Locked { path: PathBuf },

    /// An [`Options`](crate::Options) field is out of range.
    #[error("invalid option `{name}`: {reason}")]
    InvalidOption { name: &'static str, reason: String },

    /// [`Options::set`](crate::Options::set) of a name that is no option (see
    /// [`OPTIONS`](crate::OPTIONS)).
    #[error("no option is named `{name}` (options are named as the fields of Options: node_size, fan_out, ...)")]
    UnknownOption { name: String },

    /// A key longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN).
    #[error("key of {len} bytes exceeds the limit of {max} bytes")]
    KeyTooLarge { len: usize, max: usize },

    /// A value longer than [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN).
    #[error("value of {len} bytes exceeds the limit of {max} bytes")]
    ValueTooLarge { len: usize, max: usize },

    /// A write batch whose encoding exceeds [`MAX_BATCH_BYTES`](crate::MAX_BATCH_BYTES).
    #[error("write batch of {len} bytes exceeds the limit of {max} bytes")]
    BatchTooLarge { len: usize, max: usize },

    /// An earlier background or write-path failure left the store unable to accept writes
    /// safely; reopen it to recover from the log.
    #[error("store is read-only after an earlier failure: {reason}")]
    Poisoned { reason: String },

    /// The handle was closed.
    #[error("store is closed")]
    Closed,

    /// A write (or `flush`) on a handle from [`Db::open_read_only`](crate::Db::open_read_only).
    #[error("store is open read-only")]
    ReadOnly,

    /// The store was created with the other [`KeyOrder`](crate::KeyOrder) than
    /// [`Options::key_order`](crate::Options::key_order) asks for. A store's order is fixed
    /// at creation: open it with `stored`.
    #[error("the store's keys are {stored}, and the options ask for {requested}: a store keeps the key order it was created with")]
    KeyOrderMismatch {
        stored: crate::KeyOrder,
        requested: crate::KeyOrder,
    },

    /// A merge ([`Db::merge`](crate::Db::merge), [`WriteBatch::merge`](crate::WriteBatch::merge))
    /// on a store opened without [`Options::merge_operator`](crate::Options::merge_operator).
    /// Nothing was written.
    #[error(
        "merge needs a merge operator (Options::merge_operator); this store was opened without one"
    )]
    NoMergeOperator,

    /// The store records merge operator `stored` (it may hold operands only that operator
    /// folds), and the options name `given` (`None`: no operator). Open it with an operator
    /// of the stored name; [`operators::by_name`](crate::operators::by_name) finds a built-in.
    #[error("the store's merge operator is {}, and the options give {}: a store that records an operator opens only with an operator of that name", show(stored), show(given))]
    MergeOperatorMismatch {
        stored: Option<String>,
        given: Option<String>,
    },

    /// The merge operator refused an operand before it was written (see
    /// [`MergeOperator::check_operand`](crate::MergeOperator::check_operand)). Nothing of the
    /// write was written.
    #[error("merge operator {operator} refuses the operand: {reason}")]
    InvalidOperand { operator: String, reason: String },

    /// Folding the merge operands of `key` failed: the operator returned an error or
    /// panicked. Only reads of this key fail; its operands stay as they are until a put or
    /// delete of the key replaces them.
    #[error("merge operator {operator} failed on key {}: {reason}", show_key(key))]
    MergeFailed {
        operator: String,
        key: Vec<u8>,
        reason: String,
    },

    /// [`Db::range`](crate::Db::range) or [`Db::prefix`](crate::Db::prefix) on a store whose
    /// keys are hashed, not ordered; [`Db::iter`](crate::Db::iter) reads one whole, in hash
    /// order.
    #[error("range and prefix scans need an ordered store (Options::key_order = Some(Ordered)); this one is hashed (iter() reads it whole, in hash order)")]
    NotOrdered,

    /// A transaction's commit found that something it read — a key, or a range it scanned —
    /// was written by another commit (a transaction's, or a plain write) after the
    /// transaction's snapshot. Nothing of the transaction was applied: run it again in a new
    /// transaction (see [`Transaction`](crate::Transaction)).
    #[error("transaction conflict: something it read was written by another commit since its snapshot; nothing was applied, retry it")]
    Conflict,

    /// A [`Keyspace`](crate::Keyspace) handle of a keyspace that was dropped (or a batch
    /// naming one): nothing was written.
    #[error("keyspace {name:?} was dropped")]
    KeyspaceDropped { name: String },

    /// A keyspace name that cannot be used: empty (the default keyspace's), too long, or
    /// already taken by a keyspace of other options.
    #[error("keyspace {name:?}: {reason}")]
    InvalidKeyspace { name: String, reason: String },
}

fn show(name: &Option<String>) -> String {
    name.as_ref()
        .map_or_else(|| "none".to_owned(), |n| format!("`{n}`"))
}

/// A key for a message: as text where it is printable, in hex otherwise, cut after 64 bytes.
fn show_key(key: &[u8]) -> String {
    let shown = &key[..key.len().min(64)];
    let more = if key.len() > 64 { "…" } else { "" };
    match std::str::from_utf8(shown) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}{more}"),
        _ => {
            let hex: String = shown.iter().map(|b| format!("{b:02x}")).collect();
            format!("0x{hex}{more}")
        }
    }
}

/// `Result` with Spillway's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source: Arc::new(source),
        }
    }

    /// The OS error kind, for I/O errors (`StorageFull` for a full disk).
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    pub(crate) fn corruption(path: impl Into<PathBuf>, reason: impl Into<String>) -> Self {
        Error::Corruption {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// Attach context to `std::io::Result`s at the point of failure.
pub(crate) trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::io(what(), e))
    }
}
