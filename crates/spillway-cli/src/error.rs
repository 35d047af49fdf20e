//! The CLI's one error type. Engine errors pass through untouched so that users read the
//! engine's own message (printed with `Display`, never `Debug`); the other variants are
//! problems the CLI finds itself.

use std::fmt;

use crate::tuning;

#[derive(Debug)]
pub enum CliError {
    /// Anything the engine reported, including an out-of-range option at open.
    Engine(spillway::Error),
    /// Input the CLI rejects before it touches the store.
    Usage(String),
    /// A file the CLI owns (the `LOADGEN` sidecar, stdout) could not be read or written.
    Io {
        context: String,
        source: std::io::Error,
    },
    /// The command ran, but what it checked was wrong (a `read` missed keys); the numbers
    /// have already been printed.
    CheckFailed(String),
}

impl CliError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> CliError {
        CliError::Io {
            context: context.into(),
            source,
        }
    }

    /// The engine names options by their `Options` field; tell the user which flag sets it.
    pub fn hint(&self) -> Option<String> {
        match self {
            CliError::Engine(spillway::Error::InvalidOption { name, .. }) => {
                tuning::flag_for(name).map(|flag| format!("set with {flag}"))
            }
            _ => None,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Engine(e) => write!(f, "{e}"),
            CliError::Usage(msg) | CliError::CheckFailed(msg) => f.write_str(msg),
            CliError::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<spillway::Error> for CliError {
    fn from(e: spillway::Error) -> Self {
        CliError::Engine(e)
    }
}
