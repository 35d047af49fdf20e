//! Verifying a store at rest (`spillway check`): every checksum, the order and filter of every
//! list, the manifest against the files in the folder, and every log record. A GET checks only
//! the page it reads; this reads everything, so damage is found before a read stumbles on it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::batch;
use crate::db::lock::FolderLock;
use crate::error::{Error, IoContext, Result};
use crate::files::{self, FileKind};
use crate::io;
use crate::list::fingerprints::Fingerprints;
use crate::list::sketch::SketchBuilder;
use crate::list::{Handles, ListFile, Outline};
use crate::manifest;
use crate::options::MIN_OPEN_FILES;
use crate::record;
use crate::tree;
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
    /// Damage in them — an interrupted spill's last list has no trailer — is a note, not a
    /// problem. Only a sound manifest proves a list or log unreachable: with a damaged one
    /// every list file counts as one the store may need, and `repair` removes nothing.
    pub unreachable: Vec<PathBuf>,
    /// Facts worth knowing that are not problems (a torn log tail, an unfinished or damaged
    /// list no manifest reaches, files removed by repair).
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Whether no problem was found.
    pub fn is_sound(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verify the store in `dir`, which no writer may have open (the folder is locked meanwhile:
/// shared, as read-only handles lock it, or — with `repair` — exclusively). Without `repair`
/// nothing in the folder is written, so a user who may only read it can check it.
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
    probe(dir)?;
    // Reading takes the shared lock that read-only handles take, and writes nothing; only
    // a repair, which removes files, needs the store to itself.
    let _lock = if repair {
        FolderLock::acquire(dir)?
    } else {
        FolderLock::share(dir)?
    };
    let mut report = CheckReport::default();
    let names = folder_names(dir)?;
    // However many list files there are, a few descriptors at a time.
    let handles = Arc::new(Handles::with_capacity(MIN_OPEN_FILES, Arc::default()));

    // Only a sound manifest proves a file unreachable: with a damaged one (or a tree it names
    // that cannot be read) every list file may be one the store needs.
    let manifest = manifest::read(dir, &handles);
    let (meta, live) = match &manifest {
        Ok((meta, trees)) => match trees.iter().try_for_each(|t| t.check(usize::MAX)) {
            Ok(()) => (
                Some(meta.clone()),
                Some(
                    trees
                        .iter()
                        .flat_map(|t| t.live_files())
                        .collect::<BTreeSet<u64>>(),
                ),
            ),
            Err(e) => {
                report
                    .problems
                    .push(format!("MANIFEST: the tree is malformed: {e}"));
                (None, None)
            }
        },
        Err(e) => {
            report.problems.push(format!("MANIFEST: {e}"));
            (None, None)
        }
    };

    let outlines = match (&manifest, &live) {
        (Ok((_, trees)), Some(_)) => outlined(trees),
        _ => Outlined::new(),
    };
    for &id in outlines.keys() {
        if !names.contains(&files::list_name(id)) {
            report.problems.push(format!(
                "{}: the manifest names this list file, and it is missing",
                files::list_path(dir, id).display()
            ));
        }
    }

    // Saved selectors are derived data: what cannot be read is built again at open (a
    // note), but one that reads back and answers wrongly would lose keys (a problem).
    let selector_files = match (&manifest, &live) {
        (Ok((meta, trees)), Some(_)) => {
            let ids = std::iter::once(0).chain(meta.keyspaces.iter().map(|k| k.id));
            let trees: Vec<_> = ids.zip(trees).collect();
            let v = tree::selector_index::verify(dir, &trees);
            report.problems.extend(v.problems);
            report.notes.extend(v.notes);
            Some(v.files)
        }
        _ => None,
    };

    let mut logs = Vec::new();
    for name in &names {
        let path = dir.join(name);
        let kind = FileKind::parse(name);
        if let Some(FileKind::List(id)) = kind {
            // A list file the sound manifest does not reach is a leftover: the lists of a
            // spill a crash interrupted (the last one unfinished, without its trailer), or
            // files a crash kept from being removed after a new manifest made them dead. No
            // read can reach it and the next open removes it, so nothing in it is a problem
            // of the store: reporting its damage as one would be a false alarm after every
            // crash mid-spill. It is verified all the same, and what is found is a note —
            // leftovers share a disk with the live files, so damage to a complete one is
            // worth knowing, and costs a read of a file that is usually small.
            let leftover = live.as_ref().is_some_and(|l| !l.contains(&id));
            if leftover {
                report.unreachable.push(path.clone());
            }
            let before = report.problems.len();
            match ListFile::open(dir, id, &handles) {
                Ok(file) => {
                    if let Some(outlined) = outlines.get(&id) {
                        check_outline(&file, outlined, &mut report);
                    }
                    check_list(&file, &mut report)
                }
                Err(e) if leftover => {
                    let what = match e {
                        Error::Corruption { reason, .. } => reason,
                        e => e.to_string(),
                    };
                    report.notes.push(format!(
                        "{}: not a complete list ({what}), and no manifest reaches it: a \
                         leftover, such as the file a spill was writing when a crash stopped \
                         it; the next open removes it",
                        path.display()
                    ));
                }
                Err(e) => report.problems.push(e.to_string()),
            }
            if leftover && report.problems.len() > before {
                let found: Vec<String> = report.problems.drain(before..).collect();
                report.notes.push(format!(
                    "{}: damaged ({} finding(s), the first: {}), but no manifest reaches it: a \
                     leftover the next open removes",
                    path.display(),
                    found.len(),
                    found[0]
                ));
            }
        } else if let Some(FileKind::Log(n)) = kind {
            if meta.as_ref().is_some_and(|m| n < m.log_number) {
                report.unreachable.push(path);
                continue;
            }
            logs.push(n);
        } else if let Some(FileKind::Selectors(id)) = kind {
            if selector_files.as_ref().is_some_and(|f| !f.contains(&id)) {
                report.unreachable.push(path);
            }
        } else if matches!(
            kind,
            Some(FileKind::ManifestTemp | FileKind::SelectorIndexTemp)
        ) {
            report.unreachable.push(path);
        }
    }

    logs.sort_unstable();
    let expect = meta
        .as_ref()
        .map_or_else(wal::Expect::default, |m| m.expect());
    check_logs(dir, &logs, &expect, &mut report);

    if repair {
        if live.is_some() {
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

/// Whether `dir` holds a store at all. A folder that is not there, a file, a folder without a
/// manifest are not stores (`NotAStore`, each saying which); anything else that keeps the
/// folder or its manifest from being read — permission denied, say — is an I/O error with its
/// kind, never taken for a missing manifest.
fn probe(dir: &Path) -> Result<()> {
    let not_a_store = |reason: &str| {
        Err(Error::NotAStore {
            path: dir.to_owned(),
            reason: reason.into(),
        })
    };
    if !crate::db::folder_exists(dir)? {
        return not_a_store("the folder does not exist");
    }
    let path = dir.join(files::MANIFEST);
    match std::fs::File::open(&path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => not_a_store("no MANIFEST in the folder"),
        Err(e) => Err(e).context(|| format!("opening {}", path.display())),
    }
}

/// What the manifest says of each list file of `trees`: its outline (see `list::file`), and
/// the pages and bytes of each list of it.
type Outlined = BTreeMap<u64, (Outline, Vec<(u32, u32, u64)>)>;

fn outlined(trees: &[tree::Tree]) -> Outlined {
    let mut out = Outlined::new();
    for tree in trees {
        tree.root.visit(&mut |node| {
            for l in &node.lists {
                let entry = out
                    .entry(l.file.id())
                    .or_insert_with(|| (l.file.outline(), vec![]));
                entry.1.push((l.start, l.end, l.bytes()));
            }
        });
    }
    out
}

/// `file` against what the manifest says of it (see [`outlined`]).
fn check_outline(
    file: &ListFile,
    (outline, lists): &(Outline, Vec<(u32, u32, u64)>),
    report: &mut CheckReport,
) {
    let path = file.path().display();
    let found = file.outline();
    // Memory is not the file's to match: another build's structures take more or less.
    if found
        != (Outline {
            memory: found.memory,
            ..*outline
        })
    {
        report.problems.push(format!(
            "{path}: the list file does not match the manifest's outline of it: it is \
             {found:?}, the manifest says {outline:?}"
        ));
    }
    let Ok(index) = file.index() else { return };
    for &(start, end, bytes) in lists {
        let spans = (end <= index.pages()).then(|| index.span_bytes(start, end));
        if spans != Some(bytes) {
            report.problems.push(format!(
                "MANIFEST: its list of pages {start}..{end} of {path} spans {bytes} bytes, \
                 the file's page index {spans:?}"
            ));
        }
    }
}

/// Every page of `file`: checksums, records well formed and in position order, each key in the
/// filter, each segment's first route as its page's directory says and no key's records
/// across two segments (format 10), each page's place as the index says (its route, and a separator
/// between the page's first key and the key before), the record count as the trailer says, the
/// sketch the sample of the records it should be, the fingerprints those of its routes.
fn check_list(file: &ListFile, report: &mut CheckReport) {
    report.lists += 1;
    let path = file.path().display();
    // Read with the file: what follows reads only its pages.
    let (index, sketch_stored) = match (file.index(), file.sketch()) {
        (Ok(index), Ok(sketch)) => (index, sketch),
        (Err(e), _) | (_, Err(e)) => return report.problems.push(e.to_string()),
    };
    let mut prev: Option<(u64, Vec<u8>, bool)> = None;
    let mut records = 0u64;
    let mut routes = Vec::new();
    let mut sketch = SketchBuilder::default();
    let mut damaged = false;
    for p in 0..file.pages() {
        report.pages += 1;
        let page = match file.read_pages(p, p + 1) {
            Ok(page) => page,
            Err(e) => {
                report.problems.push(e.to_string());
                damaged = true;
                continue;
            }
        };
        let end = file.records_end(&page);
        if page[end..end + file.padding(&page)].iter().any(|&b| b != 0) {
            report
                .problems
                .push(format!("{path}: page {p}: padding that is not zeros"));
        }
        let data = &page[..end];
        // Where each segment starts, and the route its directory entry gives it.
        let mut segments = file.segments(&page).into_iter().peekable();
        let mut pos = 0;
        let mut first = true;
        while pos < data.len() {
            let segment = match segments.peek() {
                Some((route, r)) if r.start == pos => {
                    let route = *route;
                    segments.next();
                    Some(route)
                }
                _ => None,
            };
            let Some(r) = record::decode_as(file.encoding(), data, &mut pos) else {
                report
                    .problems
                    .push(format!("{path}: page {p}: a malformed record"));
                damaged = true;
                break;
            };
            records += 1;
            let order = file.order();
            let route = order.route(r.key);
            routes.push(route);
            let same_key = prev.as_ref().is_some_and(|(_, pk, _)| pk == r.key);
            let len = record::encoded_len(r.key, r.op);
            let tombstone = r.op == record::Op::Delete;
            sketch.add(order.hash(route, r.key), p, len, tombstone, same_key);
            let mut problem = |what: &str| {
                report.problems.push(format!("{path}: page {p}: {what}"));
            };
            if first {
                let above_prev = prev.as_ref().is_none_or(|(pr, pk, _)| {
                    !index.is_exact() || index.cmp_page(p, (*pr, pk)).is_gt()
                });
                // Format 7 keeps the roundest route above the previous page's last record.
                let expected = match &prev {
                    Some((pr, _, _)) if index.is_rounded() && *pr < route => {
                        crate::order::round_route(*pr, route)
                    }
                    _ => route,
                };
                if expected != index.route(p)
                    || index.cmp_page(p, (route, r.key)).is_gt()
                    || !above_prev
                {
                    problem("its first record is not where the page index places the page");
                }
            }
            if segment.flatten().is_some_and(|at| at != route) {
                problem("a segment's route in its page's directory is not its first record's");
            }
            if !file.may_contain(order.hash(route, r.key)).unwrap_or(false) {
                problem("a record the list's filter does not contain");
            }
            // A key comes again only under a merge operand of it, on the same page and segment.
            if let Some((pr, pk, operand)) = &prev {
                let ord = (*pr, pk.as_slice()).cmp(&(route, r.key));
                if ord.is_gt() || (ord.is_eq() && (!operand || first || segment.is_some())) {
                    problem("records out of order");
                }
            }
            first = false;
            prev = Some((route, r.key.to_vec(), !r.op.is_base()));
        }
        if segments.next().is_some() && !damaged {
            report.problems.push(format!(
                "{path}: page {p}: a segment that does not start at a record"
            ));
        }
    }
    report.records += records;
    if let (Some(stored), false) = (sketch_stored, damaged) {
        if *stored != sketch.finish() {
            report.problems.push(format!(
                "{path}: its sketch is not the sample of its records"
            ));
        }
    }
    if let (Some(shift), false) = (file.fingerprint_shift(), damaged || routes.is_empty()) {
        let expect = Fingerprints::at_shift(&routes, shift);
        match file.fingerprints() {
            Ok(stored) if stored == expect => {}
            Ok(_) => report.problems.push(format!(
                "{path}: its fingerprints are not those of its records"
            )),
            Err(e) => report.problems.push(e.to_string()),
        }
    }
    if records != file.records() {
        report.problems.push(format!(
            "{path}: {records} records in its pages, {} in its trailer",
            file.records()
        ));
    }
}

/// Every record of the logs, as recovery reads them: checksums, well-formed writes inside,
/// and damage — what a crash explains (a torn last record, a note) and what it does not.
fn check_logs(dir: &Path, logs: &[u64], expect: &wal::Expect, report: &mut CheckReport) {
    let recovered = wal::recover(dir, logs, expect, |path, encoding, payload| {
        if batch::records(encoding, payload).any(|r| r.is_err()) {
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
    let path = crate::files::log_path(dir, cut.log);
    let what = cut.describe();
    if cut.bad == wal::Bad::Unwritten {
        report.notes.push(format!(
            "{}: {what}: where the writes stopped (a crash, or space the log set aside); the \
             next open cuts it off",
            path.display()
        ));
    } else if cut.is_torn_tail() {
        report.notes.push(format!(
            "{}: {what}, with nothing valid after it: a torn tail (a crash mid-append), or \
             the end of a log written over a retired one, cut at the next open",
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
