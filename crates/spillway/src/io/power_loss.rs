//! A simulated power loss, for tests (cargo feature `fault-injection`): the file layer records
//! what each operation has made durable, and [`Tracked::power_loss`] puts every file of the
//! folder back to exactly that — as the disk would hold it after the machine stopped.
//!
//! The model is POSIX's: bytes appended to a file are durable once the file is fsynced; a new
//! file's name, a rename and a removal, once its folder is fsynced. [`Tracked::power_loss`]
//! takes it strictly: bytes past the last fsync are cut, files whose names never became
//! durable vanish, and renames and removals not yet made durable are undone (a removed file
//! comes back with its durable bytes). [`Tracked::power_loss_keeping`] is what real disks
//! also do: the OS had written back some of what was not synced, in any order — so a random
//! part of each file's unsynced tail survives, a random 4 KiB block of it here and there, the
//! blocks between them zeros (as file systems show blocks never written) — in a file written
//! over in place (a recycled log), the old bytes instead — and each unsynced
//! name, rename or removal survives or not. [`Tracked::crash`] is a process crash instead:
//! the files stay, but what was not synced is still exposed to a later power loss. From a
//! power loss or crash on, every operation in the folder fails, so the store's handle can be
//! dropped without touching the files again — until [`Tracked::restart`].

use crate::util::sync::lock;
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
    /// Files removed since their folder was last fsynced, with their durable bytes.
    removed: HashMap<PathBuf, Vec<u8>>,
    /// Files written over in place (recycled logs), with their durable bytes: a write over
    /// old bytes that no fsync covered leaves the old bytes on the disk.
    overwritten: HashMap<PathBuf, Vec<u8>>,
}

static TRACKED: Mutex<Vec<Arc<Mutex<State>>>> = Mutex::new(Vec::new());
static ARMED: AtomicUsize = AtomicUsize::new(0);

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
    /// Cut the power: every file of the folder goes back to exactly what was durable, and every
    /// later operation in it fails.
    pub fn power_loss(&self) {
        self.cut(None);
    }

    /// Cut the power after the OS wrote back some of what was not synced, chosen by `seed`:
    /// each file keeps a random length of its unsynced tail, of which random 4 KiB blocks hold
    /// what was written and the others zeros; each unsynced name and rename
    /// survives or not. Every later operation in the folder fails.
    pub fn power_loss_keeping(&self, seed: u64) {
        self.cut(Some(SplitMix(seed)));
    }

    /// The process dies: every later operation in the folder fails (so the dropped handle
    /// writes nothing more), and the files stay as they are — written, but durable only as far
    /// as they were synced, so a later power loss can still take what was not. Start the
    /// process again with [`restart`](Self::restart).
    pub fn crash(&self) {
        lock(&self.state).dead = true;
    }

    /// Operations work again, after a [`crash`](Self::crash) or a power loss, and tracking
    /// goes on: reopen the store while still tracked.
    pub fn restart(&self) {
        lock(&self.state).dead = false;
    }

    fn cut(&self, mut keep: Option<SplitMix>) {
        let mut coin = |n: u64| keep.as_mut().map_or(0, |r| r.below(n));
        let mut s = lock(&self.state);
        s.dead = true;
        for (path, before) in std::mem::take(&mut s.renamed) {
            if coin(2) == 1 {
                continue; // the new name reached the disk
            }
            match before {
                Some(bytes) => std::fs::write(&path, bytes).expect("undoing a rename"),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            s.durable_len.remove(&path);
        }
        for (path, bytes) in std::mem::take(&mut s.removed) {
            if coin(2) == 0 {
                std::fs::write(&path, bytes).expect("undoing a removal");
            }
        }
        for path in std::mem::take(&mut s.unsynced_names) {
            if coin(2) == 0 {
                let _ = std::fs::remove_file(&path);
                s.durable_len.remove(&path);
            }
        }
        for (path, durable) in std::mem::take(&mut s.overwritten) {
            s.durable_len.remove(&path);
            let Ok(data) = std::fs::read(&path) else {
                continue; // removed
            };
            let mut kept = durable;
            for (i, block) in data.chunks(BLOCK as usize).enumerate() {
                let at = i * BLOCK as usize;
                let old = kept.get(at..(at + block.len()).min(kept.len()));
                if old != Some(block) && coin(2) == 1 {
                    // Written back: the new bytes reached the disk, the file growing with them.
                    kept.resize(kept.len().max(at + block.len()), 0);
                    kept[at..at + block.len()].copy_from_slice(block);
                }
            }
            if data.len() < kept.len() && coin(2) == 1 {
                kept.truncate(data.len()); // a cut that reached the disk
            }
            std::fs::write(&path, &kept).expect("putting back what the disk held");
        }
        for (path, &durable) in &s.durable_len {
            let Ok(mut data) = std::fs::read(path) else {
                continue; // removed
            };
            let len = data.len() as u64;
            if len <= durable {
                continue;
            }
            let kept = durable + coin(len - durable + 1);
            let mut block = durable;
            while block < kept {
                let end = ((block / BLOCK + 1) * BLOCK).min(kept);
                let bytes = &mut data[block as usize..end as usize];
                if coin(2) == 0 {
                    // Not written back: a block allocated, never written, reads as zeros.
                    bytes.fill(0);
                }
                block = end;
            }
            data.truncate(kept as usize);
            std::fs::write(path, &data).expect("putting back what the disk held");
        }
        // What is on disk now is what the disk holds.
        s.durable_len.clear();
    }
}

/// The block a disk writes whole or not at all.
const BLOCK: u64 = 4096;

/// A small seeded generator (SplitMix64), so that a failing seed replays exactly.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
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
        Some(s) if lock(&s).dead => Err(io::Error::other(
            "the process died or the machine lost power (simulated)",
        )),
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

/// `path` is about to be written over in place from some offset on (see `overwritten`):
/// what it holds now is what the disk holds.
pub(crate) fn overwriting(path: &Path) {
    if let Some(s) = state_of(path) {
        let bytes = std::fs::read(path).unwrap_or_default();
        lock(&s).overwritten.insert(path.to_owned(), bytes);
    }
}

/// `path` was fsynced while `len` bytes long.
pub(crate) fn synced(path: &Path, len: u64) {
    if let Some(s) = state_of(path) {
        let mut s = lock(&s);
        s.durable_len.insert(path.to_owned(), len);
        if let Some(durable) = s.overwritten.get_mut(path) {
            *durable = std::fs::read(path).unwrap_or_default();
        }
    }
}

/// `path`'s first `len` bytes are durable, by an fsync that may have run beside appends and
/// finished after a later one: what is known durable never shrinks here. A file removed
/// meanwhile stays removed.
pub(crate) fn synced_at_least(path: &Path, len: u64) {
    if let Some(s) = state_of(path) {
        let mut s = lock(&s);
        if let Some(durable) = s.durable_len.get_mut(path) {
            *durable = (*durable).max(len);
        }
        if let Some(durable) = s.overwritten.get_mut(path) {
            let now = std::fs::read(path).unwrap_or_default();
            let len = (len as usize).min(now.len());
            durable.resize(durable.len().max(len), 0);
            durable[..len].copy_from_slice(&now[..len]);
        }
    }
}

pub(crate) fn folder_synced(dir: &Path) {
    if let Some(s) = state_of(dir) {
        let mut s = lock(&s);
        s.unsynced_names.retain(|p| p.parent() != Some(dir));
        s.renamed.retain(|p, _| p.parent() != Some(dir));
        s.removed.retain(|p, _| p.parent() != Some(dir));
    }
}

/// `path` is about to be removed.
pub(crate) fn removing(path: &Path) {
    if let Some(s) = state_of(path) {
        let mut s = lock(&s);
        let durable = s.durable_len.remove(path);
        let overwritten = s.overwritten.remove(path);
        if s.unsynced_names.remove(path) {
            return; // its name never reached the disk: nothing to bring back
        }
        if let Some(bytes) = overwritten {
            s.removed.insert(path.to_owned(), bytes);
        } else if let Ok(mut bytes) = std::fs::read(path) {
            if let Some(len) = durable {
                bytes.truncate(len as usize);
            }
            s.removed.insert(path.to_owned(), bytes);
        }
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
        if let Some(bytes) = s.overwritten.remove(from) {
            s.overwritten.insert(to.to_owned(), bytes);
        }
        s.unsynced_names.remove(from);
    }
}
