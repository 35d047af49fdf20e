//! Fault injection for tests (cargo feature `fault-injection`): make the file layer fail chosen
//! operations on chosen files, the way a full disk or a failing device would, so that tests can
//! check that every failure becomes a typed error and loses nothing acknowledged.
//!
//! Rules are process-wide and match by folder, so tests running in parallel on different
//! stores do not disturb each other.
//!
//! ```
//! # fn main() -> spillway::Result<()> {
//! use spillway::faults::{self, Op};
//! let dir = tempfile::tempdir().unwrap();
//! let db = spillway::Db::open(dir.path(), Default::default())?;
//! db.put("k", "v")?;
//! let disk_full = faults::fail(dir.path(), Op::Create, ".list", 0);
//! assert!(db.flush().is_err()); // the spill cannot create its list files
//! assert_eq!(disk_full.hits(), 1);
//! assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..])); // reads go on
//! drop(disk_full); // space is back
//! db.flush()?; // the kept spill runs again
//! assert_eq!(db.stats().root_spills, 2);
//! # Ok(()) }
//! ```

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// The kinds of file operation a rule can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Creating a file.
    Create,
    /// Handing bytes to the OS (a `write` call).
    Write,
    /// fsync or fdatasync of a file or a folder.
    Sync,
    /// Renaming a file into place (the manifest).
    Rename,
    /// Reading a file.
    Read,
}

struct Rule {
    dir: PathBuf,
    ops: Vec<Op>,
    suffix: String,
    /// Matching operations that succeed before the rule starts failing them.
    after: u64,
    /// How many it fails then (`u64::MAX`: all of them).
    times: u64,
    /// A full disk (`fail`) or a failing device (`fail_once`); `None`: a panic (`panic_once`).
    kind: Option<io::ErrorKind>,
    seen: AtomicU64,
    hits: AtomicU64,
}

static RULES: Mutex<Vec<Arc<Rule>>> = Mutex::new(Vec::new());
/// How many rules exist: the common case (none) costs one relaxed load per operation.
static ARMED: AtomicUsize = AtomicUsize::new(0);

/// Fail every `op` on files in `dir` whose names end with `suffix` (`""` for all; a folder's
/// own fsync matches `""` only), once `after` matching operations have succeeded, with a "no
/// space left on device" error: a full disk. The rule holds until the returned guard is dropped.
pub fn fail(dir: &Path, op: Op, suffix: &str, after: u64) -> Injected {
    arm(
        dir,
        &[op],
        suffix,
        after,
        u64::MAX,
        Some(io::ErrorKind::StorageFull),
    )
}

/// Fail only the `nth` (from 0) of the operations of kinds `ops` on `dir` and its files, with
/// an I/O error (a failing device, not a full disk): a transient fault at one chosen point. [`Injected::seen`] then tells how many operations
/// there were, so a first run with `nth = u64::MAX` counts the fault points of a workload.
pub fn fail_once(dir: &Path, ops: &[Op], nth: u64) -> Injected {
    arm(dir, ops, "", nth, 1, Some(io::ErrorKind::Other))
}

/// Panic at the `nth` (from 0) of the operations of kinds `ops` on files in `dir` whose names
/// end with `suffix`: a bug in the engine at that point, for tests of what a panic leaves
/// behind (a panic in a spill, in a write).
pub fn panic_once(dir: &Path, ops: &[Op], suffix: &str, nth: u64) -> Injected {
    arm(dir, ops, suffix, nth, 1, None)
}

fn arm(
    dir: &Path,
    ops: &[Op],
    suffix: &str,
    after: u64,
    times: u64,
    kind: Option<io::ErrorKind>,
) -> Injected {
    let rule = Arc::new(Rule {
        dir: dir.to_owned(),
        ops: ops.to_vec(),
        suffix: suffix.to_owned(),
        after,
        times,
        kind,
        seen: AtomicU64::new(0),
        hits: AtomicU64::new(0),
    });
    let mut rules = crate::util::sync::lock(&RULES);
    rules.push(rule.clone());
    ARMED.store(rules.len(), Relaxed);
    Injected { rule }
}

/// A rule in force; dropping it lifts the fault.
pub struct Injected {
    rule: Arc<Rule>,
}

impl Injected {
    /// Operations this rule has failed so far.
    pub fn hits(&self) -> u64 {
        self.rule.hits.load(Relaxed)
    }

    /// Matching operations so far, failed or not.
    pub fn seen(&self) -> u64 {
        self.rule.seen.load(Relaxed)
    }
}

impl Drop for Injected {
    fn drop(&mut self) {
        let mut rules = crate::util::sync::lock(&RULES);
        rules.retain(|r| !Arc::ptr_eq(r, &self.rule));
        ARMED.store(rules.len(), Relaxed);
    }
}

/// Called by the file layer before each operation on `path` (a file, or a folder for `Sync`).
/// A failed `Write` has written part of its bytes, as a write that runs out of space does.
pub(crate) fn check(path: &Path, op: Op) -> io::Result<()> {
    if ARMED.load(Relaxed) == 0 {
        return Ok(());
    }
    let rules = crate::util::sync::lock(&RULES);
    for r in rules.iter() {
        let (dir, name) = if path == r.dir {
            (path, "")
        } else {
            match (path.parent(), path.file_name()) {
                (Some(d), Some(n)) => (d, n.to_str().unwrap_or("")),
                _ => continue,
            }
        };
        if !r.ops.contains(&op) || dir != r.dir || !name.ends_with(&r.suffix) {
            continue;
        }
        let n = r.seen.fetch_add(1, Relaxed);
        if n >= r.after && n - r.after < r.times {
            r.hits.fetch_add(1, Relaxed);
            let what = match r.kind {
                Some(io::ErrorKind::StorageFull) => "no space left on device",
                Some(_) => "input/output error",
                None => {
                    drop(rules);
                    panic!("injected panic at {op:?} of {}", path.display());
                }
            };
            return Err(io::Error::new(
                r.kind.unwrap_or(io::ErrorKind::Other),
                format!("{what} (injected fault)"),
            ));
        }
    }
    Ok(())
}
