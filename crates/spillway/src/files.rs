//! A store folder's files by name: the one place that names them and tells them apart
//! (LevelDB's `filename.cc`). Opening, checking, spilling, locking and removing dead files
//! all go through here, so that a new kind of file is named and recognised in one place.
//!
//! ```text
//! MANIFEST                 the tree and the store's settings (see `manifest`)
//! MANIFEST.tmp             a manifest being written; renamed over MANIFEST once synced
//! LOCK                     held (flock) by the writer or shared by readers
//! 0000000042.log           a log of writes not yet spilled (see `wal`)
//! 0000000042.list          a sorted list of records (see `list`)
//! 0000000042.sel           saved node selector tiers, derived data (see `tree::selector_file`)
//! SELECTORS                which saved tiers make each node's selector (`tree::selector_index`)
//! SELECTORS.tmp            an index being written; renamed over SELECTORS
//! selectors-PID-N.tiers    a scratch file of selector blocks, unlinked once created
//! ```
//! Numbers are ten digits at least, shared by logs, lists and selector files, and never reused.

use std::path::{Path, PathBuf};

pub const MANIFEST: &str = "MANIFEST";
pub const MANIFEST_TEMP: &str = "MANIFEST.tmp";
pub const LOCK: &str = "LOCK";
pub const SELECTORS: &str = "SELECTORS";
pub const SELECTORS_TEMP: &str = "SELECTORS.tmp";
const SCRATCH_PREFIX: &str = "selectors-";
const SCRATCH_SUFFIX: &str = ".tiers";

/// What a file of a store folder is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Manifest,
    ManifestTemp,
    Lock,
    Log(u64),
    /// A retired log kept for reuse (see `wal::free_logs`), under its old number.
    FreeLog(u64),
    List(u64),
    /// A selector scratch file some earlier process failed to unlink.
    Scratch,
    /// Saved selector tiers.
    Selectors(u64),
    /// The index of saved selectors, or one being written.
    SelectorIndex,
    SelectorIndexTemp,
}

impl FileKind {
    /// The kind of the file named `name`; `None` for a name Spillway never writes.
    pub fn parse(name: &str) -> Option<FileKind> {
        Some(match name {
            MANIFEST => FileKind::Manifest,
            MANIFEST_TEMP => FileKind::ManifestTemp,
            LOCK => FileKind::Lock,
            SELECTORS => FileKind::SelectorIndex,
            SELECTORS_TEMP => FileKind::SelectorIndexTemp,
            _ if name.starts_with(SCRATCH_PREFIX) && name.ends_with(SCRATCH_SUFFIX) => {
                FileKind::Scratch
            }
            _ => {
                if let Some(n) = number(name, ".log") {
                    FileKind::Log(n)
                } else if let Some(n) = number(name, ".freelog") {
                    FileKind::FreeLog(n)
                } else if let Some(n) = number(name, ".sel") {
                    FileKind::Selectors(n)
                } else {
                    FileKind::List(number(name, ".list")?)
                }
            }
        })
    }
}

/// The number in `name` if it is ten digits or more and then `suffix`.
fn number(name: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_suffix(suffix)?;
    (digits.len() >= 10 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

pub fn log_name(number: u64) -> String {
    format!("{number:010}.log")
}

pub fn free_log_name(number: u64) -> String {
    format!("{number:010}.freelog")
}

pub fn list_name(id: u64) -> String {
    format!("{id:010}.list")
}

pub fn selector_file_name(id: u64) -> String {
    format!("{id:010}.sel")
}

pub fn selector_file_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(selector_file_name(id))
}

pub fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(log_name(number))
}

pub fn list_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(list_name(id))
}

/// A name for a new scratch file, unique among this process's (`n`) and others' (its id).
pub fn scratch_name(n: u64) -> String {
    format!("{SCRATCH_PREFIX}{}-{n}{SCRATCH_SUFFIX}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_none() {
        assert_eq!(FileKind::parse(&log_name(7)), Some(FileKind::Log(7)));
        assert_eq!(
            FileKind::parse(&free_log_name(7)),
            Some(FileKind::FreeLog(7))
        );
        assert_eq!(FileKind::parse(&list_name(42)), Some(FileKind::List(42)));
        assert_eq!(
            FileKind::parse(&list_name(12_345_678_901)),
            Some(FileKind::List(12_345_678_901))
        );
        assert_eq!(FileKind::parse(&scratch_name(3)), Some(FileKind::Scratch));
        assert_eq!(
            FileKind::parse(&selector_file_name(9)),
            Some(FileKind::Selectors(9))
        );
        assert_eq!(FileKind::parse("SELECTORS"), Some(FileKind::SelectorIndex));
        assert_eq!(
            FileKind::parse("SELECTORS.tmp"),
            Some(FileKind::SelectorIndexTemp)
        );
        assert_eq!(FileKind::parse("MANIFEST"), Some(FileKind::Manifest));
        assert_eq!(
            FileKind::parse("MANIFEST.tmp"),
            Some(FileKind::ManifestTemp)
        );
        assert_eq!(FileKind::parse("LOCK"), Some(FileKind::Lock));
        for stranger in [
            "42.list",
            "00000000x1.list",
            "0000000001.lst",
            "notes.txt",
            "",
            "manifest",
        ] {
            assert_eq!(FileKind::parse(stranger), None, "{stranger}");
        }
    }
}
