//! The CLI's one error type. Engine errors pass through untouched so that users read the
//! engine's own message (printed with `Display`, never `Debug`), except where the engine's
//! words are about its API rather than the command line; the other variants are problems the
//! CLI finds itself.

use std::fmt;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::operators;
use crate::tuning;

#[derive(Debug)]
pub enum CliError {
    /// Anything the engine reported, including an out-of-range option at open.
    Engine(spillway::Error),
    /// There is no store at `--path`: the folder does not exist. (The engine says
    /// `Error::NotAStore` in the words of its API — `create_if_missing` — which a user of the
    /// command line never sets.)
    NoStore(PathBuf),
    /// `--ordered` for a store created hashed (the engine's `Error::KeyOrderMismatch`, whose
    /// words are about `Options`): a store keeps the order it was created with. With
    /// `keyspace`, the same of that keyspace (`--ordered` then describes the keyspace).
    KeyOrderFixed {
        dir: PathBuf,
        keyspace: Option<String>,
        stored: spillway::KeyOrder,
        requested: spillway::KeyOrder,
    },
    /// A merge with another operator than the one the store records (the engine's
    /// `Error::MergeOperatorMismatch`, whose words are about `Options`): a store keeps the
    /// merge operator of its first merge; a keyspace (`keyspace`), the one it was created with.
    OperatorFixed {
        dir: PathBuf,
        keyspace: Option<String>,
        stored: String,
        given: String,
    },
    /// A merge into keyspace `name`, created without a merge operator (by a `put`, say): a
    /// keyspace's operator is fixed when it is created, unlike a store's.
    NoOperator { dir: PathBuf, name: String },
    /// The store (or keyspace `keyspace`) records a merge operator that is not one of the
    /// engine's built-ins: only the program that defines it can open the store.
    UnknownOperator {
        dir: PathBuf,
        keyspace: Option<String>,
        name: String,
    },
    /// `scan` or `del` with `--from/--to/--prefix` on a hashed store or keyspace (the
    /// engine's `Error::NotOrdered`, whose words name `Options::key_order` and `iter()`).
    NotOrdered {
        dir: PathBuf,
        keyspace: Option<String>,
        /// The command: "scan" or "del".
        command: &'static str,
    },
    /// `--keyspace NAME` on a command that does not create one (get, scan, del, expire,
    /// persist), and the store has no keyspace of that name: `keyspaces` are the ones it has.
    NoKeyspace {
        dir: PathBuf,
        name: String,
        keyspaces: Vec<String>,
    },
    /// Input the CLI rejects before it touches the store: the command line itself is wrong
    /// (exit status 2, as clap's own usage errors).
    Usage(String),
    /// The command line is fine, but the command could not do its work: a `read` with
    /// nothing to verify, a benchmark run that failed, a server that stopped with an error.
    Failed(String),
    /// A file the CLI owns (the `LOADGEN` sidecar, stdout) could not be read or written.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The command ran, but what it checked was wrong (a `read` missed keys); the numbers
    /// have already been printed.
    CheckFailed(String),
    /// `scan` listed the store but skipped this many keys whose merge operands do not fold
    /// (each reported as it was met).
    KeysSkipped(u64),
    /// A writer thread of `load` panicked (the panic's message is already on stderr).
    Panicked,
    /// `load` stopped before every batch was acknowledged.
    LoadStopped(Box<LoadStopped>),
}

/// How far a failed `load` got, and what it left for `read`.
#[derive(Debug)]
pub struct LoadStopped {
    /// Batches acknowledged (their writes returned `Ok`), of all the load would have written.
    pub acknowledged: u64,
    pub batches: u64,
    /// Records `0..verifiable`, every one acknowledged: what `LOADGEN` now lists for `read`.
    pub verifiable: u64,
    /// Why `LOADGEN` could not be rewritten, if it could not.
    pub sidecar_error: Option<String>,
    /// Why it stopped.
    pub cause: CliError,
}

impl CliError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> CliError {
        CliError::Io {
            context: context.into(),
            source,
        }
    }

    /// An error from opening or checking the store in `dir`, in the CLI's words: a folder
    /// that is not there is "no store" (matched on the variant, whatever the engine's text).
    pub fn opening(dir: &Path, e: spillway::Error) -> CliError {
        let missing =
            matches!(std::fs::symlink_metadata(dir), Err(e) if e.kind() == ErrorKind::NotFound);
        match e {
            spillway::Error::NotAStore { .. } if missing => CliError::NoStore(dir.to_owned()),
            spillway::Error::KeyOrderMismatch { stored, requested } => CliError::KeyOrderFixed {
                dir: dir.to_owned(),
                keyspace: None,
                stored,
                requested,
            },
            spillway::Error::MergeOperatorMismatch {
                stored: Some(stored),
                given: Some(given),
            } => CliError::OperatorFixed {
                dir: dir.to_owned(),
                keyspace: None,
                stored,
                given,
            },
            e => CliError::Engine(e),
        }
    }

    /// The exit status: 2 for a usage error — a value the command line gave that the CLI or
    /// the engine's option checks refuse — as clap's own; 1 for every other failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_)
            | CliError::Engine(
                spillway::Error::InvalidOption { .. }
                | spillway::Error::UnknownOption { .. }
                // A --keyspace name the engine refuses (too long).
                | spillway::Error::InvalidKeyspace { .. },
            ) => 2,
            _ => 1,
        }
    }

    /// What to do about it, printed under the message: the engine names options by their
    /// `Options` field, so say which flag sets it; say what a lock or a missing store means.
    pub fn hint(&self) -> Option<String> {
        match self {
            CliError::Engine(spillway::Error::InvalidOption { name, .. }) => {
                Some(match tuning::flag_for(name) {
                    Some(flag) => format!("set with {flag}, or -o {name}=VALUE"),
                    None => format!("set with -o {name}=VALUE"),
                })
            }
            CliError::Engine(spillway::Error::Locked { .. }) => Some(
                "the store is in use by another process (a `spillway load` still running, \
                 say); try again once it has finished"
                    .into(),
            ),
            CliError::NoStore(_) => Some(
                "`spillway load` or `spillway put` creates a store; --path chooses the folder"
                    .into(),
            ),
            CliError::KeyOrderFixed {
                keyspace: Some(_), ..
            } => Some(
                "with --keyspace, --ordered only chooses the key order of a new keyspace: drop \
                 it to use this one, or give a new --keyspace name to create an ordered one, \
                 which range scans need"
                    .into(),
            ),
            CliError::KeyOrderFixed { .. } => Some(
                "--ordered only chooses the key order of a new store: drop it to use this one, \
                 or give a new --path to create an ordered store, which range scans need"
                    .into(),
            ),
            CliError::Engine(spillway::Error::MergeFailed { .. }) => Some(
                "the key's operands cannot fold into its value (a `put` of a value other than 8 \
                 bytes under a counter, say); `spillway put` or `spillway del` of the key \
                 replaces both"
                    .into(),
            ),
            CliError::KeysSkipped(_) => Some(
                "its merge operands cannot fold into its value — a `put` of a value other than \
                 8 bytes under a counter, say; `spillway put` or `spillway del` of the key \
                 replaces both"
                    .into(),
            ),
            CliError::OperatorFixed {
                stored, keyspace, ..
            } => {
                let (this, new) = match keyspace {
                    Some(_) => ("keyspace", "--keyspace name"),
                    None => ("store", "--path"),
                };
                Some(match operators::flags_for(stored) {
                    Some(flags) => format!(
                        "merge into this {this} with {flags}, or give a new {new} for a {this} \
                         of another operator"
                    ),
                    None => format!("give a new {new} for a {this} of this operator"),
                })
            }
            CliError::NoOperator { .. } => Some(
                "the first `spillway merge --keyspace NAME --op OP` of a new keyspace creates \
                 it with that operator (so does `put --keyspace NAME -o merge_operator=OP`): \
                 give a new --keyspace name"
                    .into(),
            ),
            CliError::NoKeyspace { .. } => Some(
                "`spillway put --keyspace NAME` or `spillway merge --keyspace NAME` creates \
                 a keyspace; `spillway stats` lists a store's keyspaces"
                    .into(),
            ),
            CliError::UnknownOperator { .. } => Some(
                "the command line knows spillway's built-in operators: spillway.u64add (--op \
                 add), spillway.append (--op append [--separator S]), spillway.max (--op max) \
                 and spillway.min (--op min)"
                    .into(),
            ),
            CliError::NotOrdered {
                keyspace: Some(_),
                command,
                ..
            } => Some(format!(
                "a keyspace's key order is chosen when it is created: `spillway put --keyspace \
                 NAME --ordered` creates an ordered keyspace; {}",
                whole(command, " --keyspace NAME")
            )),
            CliError::NotOrdered { command, .. } => Some(format!(
                "a store's key order is chosen when it is created: `spillway load --ordered` or \
                 `spillway put --ordered` at a new --path creates an ordered store; {}",
                whole(command, "")
            )),
            CliError::LoadStopped(s) => {
                let sidecar = match &s.sidecar_error {
                    None if s.verifiable == 0 => {
                        "no record before the first unacknowledged one: `spillway read` has \
                         nothing to verify"
                            .to_string()
                    }
                    None => format!(
                        "LOADGEN now lists the first {} records, every one acknowledged: \
                         `spillway read` verifies those",
                        crate::report::count(s.verifiable)
                    ),
                    Some(e) => format!("LOADGEN could not be updated ({e})"),
                };
                Some(match s.cause.hint() {
                    Some(h) => format!("{h}; {sidecar}"),
                    None => sidecar,
                })
            }
            _ => None,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Engine(e) => write!(f, "{e}"),
            CliError::NoStore(dir) => {
                write!(
                    f,
                    "no store at {}: the folder does not exist",
                    dir.display()
                )
            }
            CliError::KeyOrderFixed {
                dir,
                keyspace: Some(name),
                stored,
                requested,
            } => write!(
                f,
                "keyspace `{name}` of {} is {stored}, not {requested}: a keyspace keeps the key \
                 order it was created with",
                dir.display()
            ),
            CliError::KeyOrderFixed {
                dir,
                keyspace: None,
                stored,
                requested,
            } => write!(
                f,
                "{} is a {stored} store, not {requested}: a store keeps the key order it was \
                 created with",
                dir.display()
            ),
            CliError::OperatorFixed {
                dir,
                keyspace,
                stored,
                given,
            } => write!(
                f,
                "{} merges with {}, not {}: {}",
                place(dir, keyspace),
                operators::describe(stored),
                operators::describe(given),
                match keyspace {
                    Some(_) => "a keyspace keeps the merge operator it was created with",
                    None => "a store keeps the merge operator of its first merge",
                }
            ),
            CliError::NoOperator { dir, name } => write!(
                f,
                "keyspace `{name}` of {} has no merge operator: a keyspace's operator is chosen \
                 when it is created",
                dir.display()
            ),
            CliError::UnknownOperator {
                dir,
                keyspace,
                name,
            } => {
                write!(
                f,
                "{} records merge operator `{name}`, which is not one of spillway's built-ins: \
                 only a program that defines it can open this {}",
                place(dir, keyspace),
                if keyspace.is_some() { "keyspace" } else { "store" }
            )
            }
            CliError::NotOrdered { dir, keyspace, .. } => write!(
                f,
                "--from, --to and --prefix need an ordered {}, and {} is hashed (its keys are \
                 placed by hash, not kept in order)",
                if keyspace.is_some() {
                    "keyspace"
                } else {
                    "store"
                },
                place(dir, keyspace)
            ),
            CliError::NoKeyspace {
                dir,
                name,
                keyspaces,
            } => {
                write!(f, "no keyspace `{name}` in {}: ", dir.display())?;
                match keyspaces.as_slice() {
                    [] => f.write_str("it has none besides the default keyspace"),
                    names => {
                        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                        write!(f, "its keyspaces are {}", names.join(", "))
                    }
                }
            }
            CliError::Usage(msg) | CliError::Failed(msg) | CliError::CheckFailed(msg) => {
                f.write_str(msg)
            }
            CliError::Io { context, source } => write!(f, "{context}: {source}"),
            CliError::KeysSkipped(n) => write!(
                f,
                "{} {} could not be read and {} skipped (see above); the scan listed the rest",
                crate::report::count(*n),
                if *n == 1 { "key" } else { "keys" },
                if *n == 1 { "was" } else { "were" }
            ),
            CliError::Panicked => f.write_str("a writer thread panicked (its message is above)"),
            CliError::LoadStopped(s) => write!(
                f,
                "load stopped after {} of {} batches were acknowledged: {}",
                crate::report::count(s.acknowledged),
                crate::report::count(s.batches),
                s.cause
            ),
        }
    }
}

/// The store at `dir`, or its keyspace, for a message: `/data` or ``keyspace `users` of /data``.
fn place(dir: &Path, keyspace: &Option<String>) -> String {
    match keyspace {
        Some(name) => format!("keyspace `{name}` of {}", dir.display()),
        None => dir.display().to_string(),
    }
}

impl std::error::Error for CliError {}

/// What `command` (scan or del) does with a hashed store or keyspace whole (`keyspace`: the
/// flag naming it, if one is).
fn whole(command: &str, keyspace: &str) -> String {
    match command {
        "del" => format!("`spillway del{keyspace} --all` deletes every key of this one"),
        _ => format!(
            "`spillway scan{keyspace}` without --from, --to or --prefix lists this one whole, \
             in hash order"
        ),
    }
}

impl From<spillway::Error> for CliError {
    fn from(e: spillway::Error) -> Self {
        CliError::Engine(e)
    }
}
