//! The open-file cache of list files (LevelDB's table cache): a [`ListFile`](super::ListFile)
//! keeps its page index and filter in memory for as long as the tree refers to it, but its file
//! descriptor lives here, in a least-recently-used cache of at most `max_open_files` entries.
//! A read whose file was closed reopens it (a miss costs one `open`); a store of any number of
//! list files holds a bounded number of descriptors open.
//!
//! Reads get an `Arc<File>`: a handle evicted while a read is in flight is closed only once
//! that read lets go of it. So the descriptors open at once are the cache's plus one per read in
//! flight that raced an eviction.
//!
//! A hit costs one uncontended lock, a hash lookup and two pointer moves to mark the entry most
//! recently used; a GET does one, beside a `pread` that costs a hundred times more.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard};

use super::maps::MapBudget;
use crate::error::Result;
use crate::io;
use crate::stats::Counters;

use crate::options::MIN_OPEN_FILES;

/// The descriptors of a store's list files, by file id (ids are never reused).
pub struct Handles {
    capacity: usize,
    lru: Mutex<Lru>,
    counters: Arc<Counters>,
    /// Where maps of list files come from (see `maps`), shared with the process's other
    /// stores; `None`: none are mapped. This store's maps are `counters.mapped_list_files`.
    maps: Option<Arc<MapBudget>>,
}

impl std::fmt::Debug for Handles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handles({} of {})", self.len(), self.capacity)
    }
}

impl Handles {
    /// A cache keeping at most `max_open_files` descriptors, and at most half of `fd_limit`
    /// (the process's limit on open files, if known), so that the rest of the process keeps
    /// room; never fewer than [`MIN_OPEN_FILES`].
    pub fn new(max_open_files: usize, fd_limit: Option<u64>, counters: Arc<Counters>) -> Self {
        let room = fd_limit.map_or(usize::MAX, |l| usize::try_from(l / 2).unwrap_or(usize::MAX));
        Handles::with_capacity(max_open_files.min(room.max(MIN_OPEN_FILES)), counters)
    }

    /// The most descriptors the cache keeps open.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A cache of exactly `capacity` (at least 1) descriptors.
    pub fn with_capacity(capacity: usize, counters: Arc<Counters>) -> Self {
        Handles {
            capacity: capacity.max(1),
            lru: Mutex::new(Lru::default()),
            counters,
            maps: None,
        }
    }

    /// Let list files be mapped into memory for point reads, as many as `budget` gives
    /// (none by default).
    pub fn with_maps(mut self, budget: Arc<MapBudget>) -> Self {
        self.maps = Some(budget);
        self
    }

    /// Whether a file might be mapped now (a read-only hint; see
    /// [`reserve_map`](Self::reserve_map)).
    pub fn may_map(&self) -> bool {
        self.maps.as_ref().is_some_and(|b| b.has_room())
    }

    /// Take a map for one more file, if the budget has room; see
    /// [`release_map`](Self::release_map).
    pub fn reserve_map(&self) -> bool {
        let taken = self.maps.as_ref().is_some_and(|b| b.reserve());
        if taken {
            self.counters.mapped_list_files.fetch_add(1, Relaxed);
        }
        taken
    }

    /// A mapped file was unmapped (or its map failed): its map goes back to the budget.
    pub fn release_map(&self) {
        let budget = self
            .maps
            .as_ref()
            .expect("a map released where none are taken");
        budget.release();
        let was = self.counters.mapped_list_files.fetch_sub(1, Relaxed);
        debug_assert!(was > 0, "a map released that was never reserved");
    }

    /// The store's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Descriptors held now.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// The descriptor of list file `id` (at `path`), reopened if the cache closed it.
    pub fn get(&self, id: u64, path: &Path) -> Result<Arc<File>> {
        if let Some(file) = self.lock().touch(id) {
            return Ok(file);
        }
        Counters::bump(&self.counters.handle_misses);
        // Opened outside the lock: other reads go on meanwhile.
        let file = Arc::new(io::open_read(path)?);
        Ok(self.insert(id, file))
    }

    /// Keep `file`, just opened, as the descriptor of `id`, closing the least recently used
    /// one if the cache is full. Returns the descriptor the cache holds for `id`: `file`, or
    /// one another thread put there first.
    pub fn insert(&self, id: u64, file: Arc<File>) -> Arc<File> {
        let (kept, evicted) = {
            let mut lru = self.lock();
            if let Some(theirs) = lru.touch(id) {
                (theirs, None)
            } else {
                let evicted = (lru.map.len() >= self.capacity)
                    .then(|| lru.pop_oldest())
                    .flatten();
                lru.push_newest(id, file.clone());
                self.counters
                    .open_list_files
                    .store(lru.map.len() as u64, Relaxed);
                (file, evicted)
            }
        };
        drop(evicted); // closed outside the lock
        kept
    }

    /// Close the descriptor of `id`, if open: its `ListFile` is gone.
    pub fn forget(&self, id: u64) {
        let closed = {
            let mut lru = self.lock();
            let closed = lru.remove(id);
            self.counters
                .open_list_files
                .store(lru.map.len() as u64, Relaxed);
            closed
        };
        drop(closed);
    }

    fn lock(&self) -> MutexGuard<'_, Lru> {
        // The list is never left half-linked (nothing in it can panic but allocation).
        crate::util::sync::lock(&self.lru)
    }

    /// Ids from most to least recently used; for tests.
    #[cfg(test)]
    fn order(&self) -> Vec<u64> {
        let lru = self.lock();
        let mut ids = Vec::new();
        let mut s = lru.head;
        while s != NIL {
            ids.push(lru.slots[s as usize].id);
            s = lru.slots[s as usize].next;
        }
        ids
    }
}

/// Raise the process's soft limit on open files to its hard limit, as servers do, and return
/// the soft limit then in force (`None`: unlimited or unknown). A refusal changes nothing.
pub fn raise_open_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
    (lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur as u64)
}

const NIL: u32 = u32::MAX;

/// A doubly linked list of slots, most recently used at `head`, indexed by id.
struct Lru {
    map: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
}

struct Slot {
    id: u64,
    file: Option<Arc<File>>,
    prev: u32,
    next: u32,
}

impl Lru {
    /// The descriptor of `id`, now the most recently used.
    fn touch(&mut self, id: u64) -> Option<Arc<File>> {
        let s = *self.map.get(&id)?;
        if self.head != s {
            self.unlink(s);
            self.link_first(s);
        }
        self.slots[s as usize].file.clone()
    }

    fn push_newest(&mut self, id: u64, file: Arc<File>) {
        let slot = Slot {
            id,
            file: Some(file),
            prev: NIL,
            next: NIL,
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(id, s);
        self.link_first(s);
    }

    fn pop_oldest(&mut self) -> Option<Arc<File>> {
        (self.tail != NIL)
            .then(|| self.slots[self.tail as usize].id)
            .and_then(|id| self.remove(id))
    }

    fn remove(&mut self, id: u64) -> Option<Arc<File>> {
        let s = self.map.remove(&id)?;
        self.unlink(s);
        self.free.push(s);
        self.slots[s as usize].file.take()
    }

    fn unlink(&mut self, s: u32) {
        let (prev, next) = {
            let slot = &self.slots[s as usize];
            (slot.prev, slot.next)
        };
        match prev {
            NIL => self.head = next,
            p => self.slots[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }

    fn link_first(&mut self, s: u32) {
        let old = self.head;
        {
            let slot = &mut self.slots[s as usize];
            slot.prev = NIL;
            slot.next = old;
        }
        match old {
            NIL => self.tail = s,
            o => self.slots[o as usize].prev = s,
        }
        self.head = s;
    }
}

impl Default for Lru {
    fn default() -> Self {
        Lru {
            map: HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }
}

/// For `u64` keys such as file ids — small sequential numbers — and key hashes: one
/// multiplication spreads them over the table.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;
    use std::path::PathBuf;

    use super::*;

    /// `n` files in a fresh folder, file `i` holding `i` as 8 bytes.
    fn files(n: u64) -> (tempfile::TempDir, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let paths = (0..n)
            .map(|i| {
                let p = dir.path().join(format!("{i}"));
                std::fs::write(&p, i.to_le_bytes()).unwrap();
                p
            })
            .collect();
        (dir, paths)
    }

    fn read_id(f: &File) -> u64 {
        let mut b = [0u8; 8];
        f.read_exact_at(&mut b, 0).unwrap();
        u64::from_le_bytes(b)
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let (_dir, paths) = files(5);
        let counters = Arc::new(Counters::default());
        let h = Handles::with_capacity(3, counters.clone());
        for id in 0..3 {
            h.get(id, &paths[id as usize]).unwrap();
        }
        assert_eq!(h.order(), [2, 1, 0]);
        h.get(0, &paths[0]).unwrap(); // a hit: 0 is now the newest
        assert_eq!(h.order(), [0, 2, 1]);
        assert_eq!(counters.handle_misses.load(Relaxed), 3);
        h.get(3, &paths[3]).unwrap(); // 1 goes
        assert_eq!(h.order(), [3, 0, 2]);
        h.get(4, &paths[4]).unwrap(); // then 2
        assert_eq!(h.order(), [4, 3, 0]);
        assert_eq!(counters.open_list_files.load(Relaxed), 3);
        h.forget(3);
        assert_eq!(h.order(), [4, 0]);
        assert_eq!(counters.open_list_files.load(Relaxed), 2);
        // Room again: nothing more is evicted until the cache is full.
        h.get(1, &paths[1]).unwrap();
        assert_eq!(h.order(), [1, 4, 0]);
        assert_eq!(counters.handle_misses.load(Relaxed), 6);
    }

    #[test]
    fn a_closed_file_is_reopened_and_an_evicted_handle_stays_valid() {
        let (_dir, paths) = files(4);
        let counters = Arc::new(Counters::default());
        let h = Handles::with_capacity(2, counters.clone());
        let held = h.get(0, &paths[0]).unwrap();
        h.get(1, &paths[1]).unwrap();
        h.get(2, &paths[2]).unwrap();
        assert_eq!(h.order(), [2, 1]);
        // Evicted, yet the read in flight still has its descriptor.
        assert_eq!(read_id(&held), 0);
        drop(held);
        assert_eq!(read_id(&h.get(0, &paths[0]).unwrap()), 0);
        assert_eq!(counters.handle_misses.load(Relaxed), 4);
        h.forget(0);
        assert_eq!(read_id(&h.get(0, &paths[0]).unwrap()), 0);
        assert_eq!(counters.handle_misses.load(Relaxed), 5);
        // A reopen that fails is an error, and leaves the cache as it was.
        assert!(h.get(9, &paths[0].with_file_name("absent")).is_err());
        assert_eq!(h.order(), [0, 2]);
    }

    #[test]
    fn the_capacity_leaves_half_the_process_limit_free() {
        let c = Arc::new(Counters::default());
        assert_eq!(Handles::new(1000, None, c.clone()).capacity, 1000);
        assert_eq!(Handles::new(1000, Some(1024), c.clone()).capacity, 512);
        assert_eq!(
            Handles::new(1000, Some(4), c.clone()).capacity,
            MIN_OPEN_FILES
        );
        assert_eq!(Handles::new(16, Some(64), c).capacity, 16);
    }

    #[test]
    fn concurrent_readers_while_evicting() {
        const FILES: u64 = 64;
        const CAPACITY: usize = 5;
        let (_dir, paths) = files(FILES);
        let counters = Arc::new(Counters::default());
        let h = Handles::with_capacity(CAPACITY, counters.clone());
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (h, paths) = (&h, &paths);
                s.spawn(move || {
                    let mut x = t;
                    for _ in 0..20_000 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Skewed: most reads go to a few files, the rest evict them.
                        let id = if x >> 62 == 0 {
                            (x >> 33) % FILES
                        } else {
                            (x >> 33) % 4
                        };
                        let f = h.get(id, &paths[id as usize]).unwrap();
                        assert!(h.len() <= CAPACITY);
                        assert_eq!(read_id(&f), id);
                    }
                });
            }
        });
        let misses = counters.handle_misses.load(Relaxed);
        assert!(misses > 1000 && misses < 80_000, "{misses} misses");
        assert_eq!(h.len(), CAPACITY);
        let order = h.order();
        let mut unique = order.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), order.len(), "{order:?}");
    }

    #[test]
    fn a_list_file_no_tree_names_is_removed_by_its_last_reader() {
        use crate::list::{ListRef, ListWriter};
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let h = Arc::new(Handles::with_capacity(1, counters.clone()));
        let write = |id: u64| {
            let mut w = ListWriter::create(
                dir.path(),
                id,
                crate::order::KeyOrder::Hashed,
                64,
                10,
                counters.clone(),
                h.clone(),
            )
            .unwrap();
            let mut keys: Vec<[u8; 4]> = (0..100u32).map(u32::to_le_bytes).collect();
            keys.sort_by_key(|k| (crate::order::KeyOrder::Hashed.route(k), *k));
            for key in keys {
                w.add(
                    crate::order::KeyOrder::Hashed.route(&key),
                    &key,
                    crate::record::Op::Put(&key),
                )
                .unwrap();
            }
            w.finish().unwrap()
        };
        let old = ListRef::new(write(2), crate::order::Span::all());
        let other = ListRef::new(write(3), crate::order::Span::all());
        let reader = old.clone(); // a reader of an older version
        old.file.remove_when_unused(); // the spill that superseded it
        drop(old);
        // The other file's reads evict it, and the reader reopens it.
        let key = 7u32.to_le_bytes();
        let route = crate::order::KeyOrder::Hashed.route(&key);
        let mut stack = crate::upsert::fold::Stack::default();
        assert!(other
            .get(route, &key, route, &counters, &mut stack)
            .unwrap());
        assert_eq!(h.order(), [3]);
        stack.clear();
        assert!(reader
            .get(route, &key, route, &counters, &mut stack)
            .unwrap());
        assert_eq!(
            stack.resolve(&key, None).unwrap(),
            Some((key.to_vec(), crate::record::NEVER))
        );
        assert_eq!(h.order(), [2]);
        let path = reader.file.path().to_owned();
        assert!(path.exists());
        drop(reader);
        assert!(!path.exists(), "removed with its last reference");
        assert_eq!(h.len(), 0, "and its descriptor closed");
        drop(other);
        assert!(crate::files::list_path(dir.path(), 3).exists());
    }

    #[test]
    fn a_file_refused_a_map_gets_one_once_another_gives_its_back() {
        use crate::list::{hashed_test_list, ListFile, ListRef};
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let budget = Arc::new(MapBudget::new(1));
        let h = Arc::new(Handles::with_capacity(8, counters.clone()).with_maps(budget.clone()));
        let list = |id| hashed_test_list(dir.path(), id, 200, 512, (1 << 20, 1), &counters, &h);
        let ((a, a_keys), (b, b_keys)) = (list(1), list(2));
        let get = |file: &Arc<ListFile>, key: &[u8]| {
            let route = crate::order::KeyOrder::Hashed.route(key);
            let mut stack = crate::upsert::fold::Stack::default();
            let found = ListRef::new(file.clone(), crate::order::Span::all())
                .get(route, key, route, &counters, &mut stack)
                .unwrap();
            assert!(found, "{}", String::from_utf8_lossy(key));
        };
        let mapped = || counters.mapped_list_files.load(Relaxed);
        get(&a, &a_keys[0].1);
        assert_eq!((mapped(), budget.mapped()), (1, 1));
        // The budget is spent: b is read without a map, and read right.
        for (_, k) in &b_keys {
            get(&b, k);
        }
        assert_eq!((mapped(), budget.mapped()), (1, 1));
        assert!(!h.may_map());
        drop(a);
        assert_eq!((mapped(), budget.mapped()), (0, 0), "a's map given back");
        get(&b, &b_keys[0].1);
        assert_eq!(
            (mapped(), budget.mapped()),
            (1, 1),
            "b mapped at its next read"
        );
        drop(b);
        assert_eq!((mapped(), budget.mapped()), (0, 0));
    }
}
