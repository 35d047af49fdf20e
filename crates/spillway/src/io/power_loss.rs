//! A simulated power loss, for tests (cargo feature `fault-injection`): the file layer records
//! what each operation has made durable, and [`Tracked::power_loss`] puts every file of the
//! folder back to exactly that — as the disk would hold it after the machine stopped.
//!
//! The model is POSIX's, taken strictly: bytes appended to a file are durable once the file is
//! fsynced; a new file's name, and a rename, once its folder is fsynced. At the power loss,
//! bytes past the last fsync are cut, files whose names never became durable vanish, and
//! renames not yet made durable are undone. (Real disks may also keep some unsynced bytes, or
//! write unsynced pages out of order; this model keeps none, in order.) Removals count as
//! durable at once. From the power loss on, every operation in the folder fails, so the
//! store's handle can be dropped without touching the files again.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct State {
    dir: PathBuf,
    /// The power is out: every operation fails.
    dead: bool,
    /// Durable length of every file written since tracking began.
    durable_len: HashMap<PathBuf, u64>,
    /// Files created since their folder was last fsynced.
    unsynced_names: HashSet<PathBuf>,
    /// Rename targets since their folder was last fsynced, with what they held before
    /// (`None`: nothing).
    renamed: HashMap<PathBuf, Option<Vec<u8>>>,
}

static TRACKED: Mutex<Vec<Arc<Mutex<State>>>> = Mutex::new(Vec::new());
static ARMED: AtomicUsize = AtomicUsize::new(0);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Track every file operation in `dir` from now on (start before the store is created).
pub fn track(dir: &Path) -> Tracked {
    let state = Arc::new(Mutex::new(State {
        dir: dir.to_owned(),
        ..State::default()
    }));
    let mut all = lock(&TRACKED);
    all.push(state.clone());
    ARMED.store(all.len(), Relaxed);
    Tracked { state }
}

/// A tracked folder; dropping it ends the tracking (and the power loss, if one happened).
pub struct Tracked {
    state: Arc<Mutex<State>>,
}

impl Tracked {
    /// Cut the power: every file of the folder goes back to what was durable, and every later
    /// operation in it fails.
    pub fn power_loss(&self) {
        let mut s = lock(&self.state);
        s.dead = true;
        for (path, before) in std::mem::take(&mut s.renamed) {
            match before {
                Some(bytes) => std::fs::write(&path, bytes).expect("undoing a rename"),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            s.durable_len.remove(&path);
        }
        for path in std::mem::take(&mut s.unsynced_names) {
            let _ = std::fs::remove_file(&path);
            s.durable_len.remove(&path);
        }
        for (path, &len) in &s.durable_len {
            if let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) {
                if f.metadata().is_ok_and(|m| m.len() > len) {
                    f.set_len(len).expect("cutting unsynced bytes");
                }
            }
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut all = lock(&TRACKED);
        all.retain(|s| !Arc::ptr_eq(s, &self.state));
        ARMED.store(all.len(), Relaxed);
    }
}

/// The state tracking `path` (a file in a tracked folder, or the folder itself).
fn state_of(path: &Path) -> Option<Arc<Mutex<State>>> {
    if ARMED.load(Relaxed) == 0 {
        return None;
    }
    let all = lock(&TRACKED);
    all.iter()
        .find(|s| {
            let s = lock(s);
            path == s.dir || path.parent() == Some(s.dir.as_path())
        })
        .cloned()
}

/// Before any operation: fails once the power is out.
pub(crate) fn check(path: &Path) -> io::Result<()> {
    match state_of(path) {
        Some(s) if lock(&s).dead => Err(io::Error::other("the machine lost power (simulated)")),
        _ => Ok(()),
    }
}

pub(crate) fn created(path: &Path) {
    if let Some(s) = state_of(path) {
        let mut s = lock(&s);
        s.unsynced_names.insert(path.to_owned());
        s.durable_len.insert(path.to_owned(), 0);
    }
}

/// `path` was fsynced while `len` bytes long.
pub(crate) fn synced(path: &Path, len: u64) {
    if let Some(s) = state_of(path) {
        lock(&s).durable_len.insert(path.to_owned(), len);
    }
}

pub(crate) fn folder_synced(dir: &Path) {
    if let Some(s) = state_of(dir) {
        let mut s = lock(&s);
        s.unsynced_names.retain(|p| p.parent() != Some(dir));
        s.renamed.retain(|p, _| p.parent() != Some(dir));
    }
}

/// `from` is about to be renamed over `to`.
pub(crate) fn renaming(from: &Path, to: &Path) {
    if let Some(s) = state_of(to) {
        let mut s = lock(&s);
        if !s.renamed.contains_key(to) {
            let before = std::fs::read(to).ok();
            s.renamed.insert(to.to_owned(), before);
        }
        let len = s.durable_len.remove(from).unwrap_or(0);
        s.durable_len.insert(to.to_owned(), len);
        s.unsynced_names.remove(from);
    }
}
