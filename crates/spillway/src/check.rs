//! Verifying a store at rest (`spillway check`): every checksum, the order and filter of every
//! list, the manifest against the files in the folder, and every log record. A GET checks only
//! the page it reads; this reads everything, so damage is found before a read stumbles on it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::batch;
use crate::db::lock::FolderLock;
use crate::error::{Error, IoContext, Result};
use crate::io;
use crate::list::format::{self as list_format, CRC_LEN};
use crate::list::ListFile;
use crate::manifest;
use crate::record;
use crate::wal;

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// List files, pages and records read (every list file in the folder).
    pub lists: u64,
    pub pages: u64,
    pub records: u64,
    /// Log records read (each one write group).
    pub log_records: u64,
    /// Damage or inconsistency, each naming the file and the place: what makes the store
    /// unsafe to trust. Empty when the store is sound.
    pub problems: Vec<String>,
    /// Files no valid manifest needs: lists of an interrupted spill, logs already spilled, a
    /// half-written manifest. Harmless (the next open removes them); `repair` removes them.
    pub unreachable: Vec<PathBuf>,
    /// Facts worth knowing that are not problems (a torn log tail, files removed by repair).
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verify the store in `dir`, which must not be open (the folder is locked meanwhile).
/// With `repair`, also remove the files that are provably unreachable — only when the
/// manifest itself is sound, since it is what proves them so. Nothing else is ever changed.
///
/// An `Err` means the folder could not be checked at all (not a store, locked, unreadable);
/// damage inside it is reported in [`CheckReport::problems`].
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spillway::Db::open(dir.path(), Default::default())?;
/// db.put("k", "v")?;
/// db.close()?;
/// let report = spillway::check(dir.path(), false)?;
/// assert!(report.is_sound(), "{:?}", report.problems);
/// # Ok(()) }
/// ```
pub fn check(dir: &Path, repair: bool) -> Result<CheckReport> {
    if !dir.join(manifest::FILE_NAME).exists() {
        return Err(Error::NotAStore {
            path: dir.to_owned(),
            reason: "no MANIFEST in the folder".into(),
        });
    }
    let _lock = FolderLock::acquire(dir)?;
    let mut report = CheckReport::default();
    let names = folder_names(dir)?;

    let manifest = manifest::read(dir);
    let (meta, live) = match &manifest {
        Ok((meta, tree)) => {
            if let Err(e) = tree.check(usize::MAX) {
                report
                    .problems
                    .push(format!("MANIFEST: the tree is malformed: {e}"));
            }
            (Some(*meta), Some(tree.live_files()))
        }
        Err(e) => {
            report.problems.push(format!("MANIFEST: {e}"));
            (None, None)
        }
    };

    let mut logs = Vec::new();
    for name in &names {
        let path = dir.join(name);
        if let Some(id) = list_format::parse_file_name(name) {
            if live.as_ref().is_some_and(|l| !l.contains(&id)) {
                report.unreachable.push(path);
            }
            match ListFile::open(dir, id) {
                Ok(file) => check_list(&file, &mut report),
                Err(e) => report.problems.push(e.to_string()),
            }
        } else if let Some(n) = wal::parse_file_name(name) {
            if meta.is_some_and(|m| n < m.log_number) {
                report.unreachable.push(path);
                continue;
            }
            logs.push(n);
        } else if *name == format!("{}.tmp", manifest::FILE_NAME) {
            report.unreachable.push(path);
        }
    }

    logs.sort_unstable();
    check_logs(dir, &logs, &mut report);

    if repair {
        if manifest.is_ok() {
            for path in &report.unreachable {
                io::remove_file(path)?;
                report.notes.push(format!("removed {}", path.display()));
            }
            report.unreachable.clear();
        } else if !report.unreachable.is_empty() {
            report.notes.push(
                "nothing removed: without a sound manifest no file is provably unreachable".into(),
            );
        }
    }
    Ok(report)
}

/// Every page of `file`: checksum, records well formed and in (route, key) order, each route
/// the hash of its key and in the filter, each page's first route as the index says, the
/// record count as the trailer says.
fn check_list(file: &ListFile, report: &mut CheckReport) {
    report.lists += 1;
    let path = file.path().display();
    let mut prev: Option<(u64, Vec<u8>)> = None;
    let mut records = 0u64;
    for p in 0..file.pages() {
        report.pages += 1;
        let page = match file.read_pages(p, p + 1) {
            Ok(page) => page,
            Err(e) => {
                report.problems.push(e.to_string());
                continue;
            }
        };
        let data = &page[..page.len() - CRC_LEN];
        let mut pos = 0;
        let mut first = true;
        while pos < data.len() {
            let Some(r) = record::decode(data, &mut pos) else {
                report
                    .problems
                    .push(format!("{path}: page {p}: a malformed record"));
                break;
            };
            records += 1;
            let route = record::route(r.key);
            let mut problem = |what: &str| {
                report.problems.push(format!("{path}: page {p}: {what}"));
            };
            if first && route != file.first_route(p) {
                problem("its first record's route differs from the page index");
            }
            first = false;
            if !file.may_contain(route) {
                problem("a record the list's filter does not contain");
            }
            if let Some((pr, pk)) = &prev {
                if (*pr, pk.as_slice()) >= (route, r.key) {
                    problem("records out of (route, key) order");
                }
            }
            prev = Some((route, r.key.to_vec()));
        }
    }
    report.records += records;
    if records != file.records() {
        report.problems.push(format!(
            "{path}: {records} records in its pages, {} in its trailer",
            file.records()
        ));
    }
}

/// Every record of the logs, as recovery reads them: checksums, well-formed writes inside,
/// and damage — what a crash explains (a torn last record, a note) and what it does not.
fn check_logs(dir: &Path, logs: &[u64], report: &mut CheckReport) {
    let recovered = wal::recover(dir, logs, |path, payload| {
        if batch::records(payload).any(|r| r.is_err()) {
            return Err(Error::corruption(
                path,
                "a log record with a valid checksum holds malformed writes",
            ));
        }
        Ok(())
    });
    let rec = match recovered {
        Ok(rec) => rec,
        Err(e) => return report.problems.push(e.to_string()),
    };
    report.log_records += rec.records;
    let Some(cut) = rec.cut else { return };
    let path = dir.join(wal::file_name(cut.log));
    let what = cut.describe();
    if cut.is_torn_tail() {
        report.notes.push(format!(
            "{}: {what}, with nothing valid after it: a torn tail (a crash mid-append), cut at \
             the next open",
            path.display()
        ));
    } else {
        report.problems.push(format!(
            "{}: {what}, and {} valid records after it{}. No later record says the damaged \
             bytes were synced, so the next open drops them all: what a power loss leaves when \
             the OS wrote later pages before earlier ones, and also what damage to records \
             not yet vouched for looks like",
            path.display(),
            cut.records_dropped,
            if rec.dropped_logs.is_empty() {
                String::new()
            } else {
                format!(" (in this log and {} later ones)", rec.dropped_logs.len())
            }
        ));
    }
}

fn folder_names(dir: &Path) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).context(|| format!("listing {}", dir.display()))? {
        let entry = entry.context(|| format!("listing {}", dir.display()))?;
        names.insert(entry.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}
