//! A list file of the tree: immutable, its pages on disk, its metadata — page index, filter,
//! sketch — in memory once read, its file descriptor in the store's [`Handles`] cache (reopened
//! by a read that finds it closed).
//!
//! An open reads no list file: the manifest keeps an [`Outline`] of each — its pages, records,
//! size, how it is encoded — enough for the tree to know its shape, and a file's metadata is
//! read at its first use (LevelDB's table cache does the same), checked against the outline.
//! So an open costs the same at ten list files as at fifteen thousand. The exception is a list
//! that carries range deletes or times (expiring values, stamped operands): every read and
//! spill of the keys below it consults those, so it is read with the open, as every list was
//! before manifests kept outlines (format 6 of the manifest).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use super::format::{self, Trailer};
use super::handles::Handles;
use super::index::PageIndex;
use super::metadata::{self, FingerprintSection, Metadata, Outline};
use super::page::Layout;
use crate::error::{Error, Result};
use crate::io;
use crate::list::expiry::ExpirySummary;
use crate::list::filter::Filter;
use crate::list::fingerprints::Fingerprints;
use crate::list::ranges::RangeSet;
use crate::list::sketch::Sketch;
use crate::order::KeyOrder;
use crate::record::{self, Encoding};
use crate::stats::Counters;
use crate::upsert::fold::Stack;

pub struct ListFile {
    id: u64,
    path: PathBuf,
    handles: Arc<Handles>,
    /// How the records' routes are computed, and so their order.
    order: KeyOrder,
    /// What the manifest keeps of the file (its `memory` as of when it was read or written).
    outline: Outline,
    /// How the records are encoded (by the format version).
    encoding: Encoding,
    /// How each page ends and is checked (by the format version).
    layout: Layout,
    /// The file's metadata, once read: at its first use, or when the file was written or read
    /// whole (see the module's doc).
    metadata: OnceLock<Metadata>,
    /// The file mapped into memory for point reads, once a read has mapped it; until then
    /// reads use `pread` (mapping is off, or the process's maps are all taken: a later read
    /// asks again, see `list::maps`).
    map: OnceLock<io::Mapping>,
    /// Set where the kernel refused the map (out of memory areas, say): the file is read with
    /// `pread` from then on, not mapped again at every read.
    unmappable: AtomicBool,
    /// Set once no durable tree names the file any more: whoever drops the last reference
    /// removes it (see [`remove_when_unused`](Self::remove_when_unused)).
    remove_when_dropped: AtomicBool,
}

/// What a list that is not read yet answers for its times and range deletes: it has none
/// (a list that has is read with the open).
static NO_EXPIRY: ExpirySummary = ExpirySummary::none();
static NO_RANGES: RangeSet = RangeSet::new();

impl std::fmt::Debug for ListFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ListFile({}, {} pages)", self.id, self.pages())
    }
}

impl ListFile {
    /// A list file just written, its metadata in hand.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn from_parts(
        id: u64,
        handles: Arc<Handles>,
        path: PathBuf,
        order: KeyOrder,
        version: u32,
        index: PageIndex,
        filter: Option<Filter>,
        fingerprints: Option<FingerprintSection>,
        sketch: Option<Sketch>,
        expiry: ExpirySummary,
        ranges: RangeSet,
        trailer: &Trailer,
        size: u64,
    ) -> ListFile {
        let metadata = Metadata {
            index,
            filter,
            fingerprints,
            sketch,
            expiry,
            ranges,
        };
        let outline = metadata::outline_of(version, trailer, size, &metadata);
        ListFile::new(id, handles, path, order, outline, Some(metadata))
    }

    fn new(
        id: u64,
        handles: Arc<Handles>,
        path: PathBuf,
        order: KeyOrder,
        outline: Outline,
        metadata: Option<Metadata>,
    ) -> ListFile {
        ListFile {
            id,
            path,
            handles,
            order,
            outline,
            encoding: format::encoding(outline.version),
            layout: Layout::of(outline.version),
            metadata: metadata.map_or_else(OnceLock::new, OnceLock::from),
            map: OnceLock::new(),
            unmappable: AtomicBool::new(false),
            remove_when_dropped: AtomicBool::new(false),
        }
    }

    /// Open list file `id` in `dir` and read its metadata now, verifying header, trailer,
    /// filter and index; its descriptor goes to `handles`.
    pub fn open(dir: &Path, id: u64, handles: &Arc<Handles>) -> Result<ListFile> {
        let path = crate::files::list_path(dir, id);
        let file = Arc::new(io::open_read(&path)?);
        let (order, outline, metadata) = metadata::read(&file, &path)?;
        handles.insert(id, file);
        Counters::bump(&handles.counters().lists_read);
        let handles = handles.clone();
        Ok(ListFile::new(
            id,
            handles,
            path,
            order,
            outline,
            Some(metadata),
        ))
    }

    /// List file `id` in `dir` as the manifest outlines it, sorted in `order`: read at its
    /// first use, or now if it carries range deletes or times (see the module's doc).
    pub fn outlined(
        dir: &Path,
        id: u64,
        handles: &Arc<Handles>,
        order: KeyOrder,
        outline: Outline,
    ) -> Result<ListFile> {
        let path = crate::files::list_path(dir, id);
        let file = ListFile::new(id, handles.clone(), path, order, outline, None);
        if outline.eager {
            file.metadata()?;
        }
        Ok(file)
    }

    /// What the manifest keeps of the file (see [`Outline`]).
    pub fn outline(&self) -> Outline {
        Outline {
            memory: self.metadata_memory() as u64,
            ..self.outline
        }
    }

    /// Whether the file's metadata is in memory.
    pub fn is_read(&self) -> bool {
        self.metadata.get().is_some()
    }

    /// Read the file's metadata now, if it is not in memory (see the module's doc).
    pub fn read_metadata(&self) -> Result<()> {
        self.metadata().map(|_| ())
    }

    /// The file's metadata, read now if it was not (see the module's doc). The file must
    /// match its outline: a file of the same name but other contents (restored from another
    /// copy of the store, say) is damage.
    fn metadata(&self) -> Result<&Metadata> {
        if let Some(m) = self.metadata.get() {
            return Ok(m);
        }
        let file = self.handles.get(self.id, &self.path)?;
        let (order, outline, metadata) = metadata::read_outlined(&file, &self.path, &self.outline)?;
        let expected = Outline {
            memory: outline.memory,
            ..self.outline
        };
        if order != self.order || outline != expected {
            return Err(Error::corruption(
                &self.path,
                format!(
                    "the list file does not match the manifest's outline of it: a {order:?} \
                     list of {outline:?}, where the manifest has a {:?} list of {expected:?}",
                    self.order
                ),
            ));
        }
        // A read in another thread may have set it first: that one stays, the same, and is
        // the one counted.
        let mut ours = false;
        let metadata = self.metadata.get_or_init(|| {
            ours = true;
            metadata
        });
        if ours {
            Counters::bump(&self.handles.counters().lists_read);
        }
        Ok(metadata)
    }

    /// Remove the file once the last view of it is dropped: no durable tree names it any
    /// more, but a reader of an older version may still read it — and may have to reopen it,
    /// the cache having closed its descriptor — so it cannot be removed right away.
    pub fn remove_when_unused(&self) {
        self.remove_when_dropped.store(true, Relaxed);
    }

    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn pages(&self) -> u32 {
        self.outline.pages
    }
    pub fn order(&self) -> KeyOrder {
        self.order
    }
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
    /// The page index, read now if the file's metadata is not in memory.
    pub fn index(&self) -> Result<&PageIndex> {
        self.metadata().map(|m| &m.index)
    }
    pub fn records(&self) -> u64 {
        self.outline.records
    }
    pub fn size(&self) -> u64 {
        self.outline.size
    }
    /// Bytes of all its pages: what a view of the whole file spans.
    pub fn page_bytes(&self) -> u64 {
        self.outline.page_bytes
    }
    /// Start loading what [`may_contain`](Self::may_contain) will read for `hash`, if the
    /// file's metadata is in memory (a prefetch reads nothing from disk).
    #[inline]
    pub fn prefetch_filter(&self, hash: u64) {
        if let Some(f) = self.metadata.get().and_then(|m| m.filter.as_ref()) {
            f.prefetch(hash);
        }
    }
    /// How finely the list's fingerprints cut routes, if it has fingerprints.
    pub fn fingerprint_shift(&self) -> Option<u32> {
        self.outline.fingerprint_shift
    }

    /// The list's fingerprints, read from disk (verifying their checksum).
    pub fn fingerprints(&self) -> Result<Fingerprints> {
        let at = self
            .metadata()?
            .fingerprints
            .ok_or_else(|| Error::corruption(&self.path, "the list has no fingerprints"))?;
        let file = self.handles.get(self.id, &self.path)?;
        let data = io::read_at(&file, &self.path, at.offset, at.len)?;
        Fingerprints::decode(&data)
            .filter(|f| f.shift() == at.shift)
            .ok_or_else(|| Error::corruption(&self.path, "its fingerprints fail their checksum"))
    }

    /// Whether the filter lets key hash `hash` through (see `KeyOrder::hash`). A list with
    /// fingerprints has no filter: its node's selector answers for it.
    pub fn may_contain(&self, hash: u64) -> Result<bool> {
        let filter = self.metadata()?.filter.as_ref();
        Ok(filter.is_none_or(|f| f.may_contain(hash)))
    }
    /// Memory held by this file's filter, page index and sketch (none until they are read).
    pub fn filter_memory(&self) -> usize {
        self.metadata
            .get()
            .and_then(|m| m.filter.as_ref())
            .map_or(0, Filter::memory)
    }
    pub fn index_memory(&self) -> usize {
        self.metadata.get().map_or(0, |m| m.index.memory())
    }
    pub fn sketch_memory(&self) -> usize {
        let sketch = self.metadata.get().and_then(|m| m.sketch.as_ref());
        sketch.map_or(0, Sketch::memory)
    }
    /// The list's sketch (none before format 5), read now if the file's metadata is not in
    /// memory.
    pub fn sketch(&self) -> Result<Option<&Sketch>> {
        self.metadata().map(|m| m.sketch.as_ref())
    }
    /// When its values expire (see `expiry`). A file that has any is read with the open.
    pub fn expiry(&self) -> &ExpirySummary {
        self.metadata.get().map_or(&NO_EXPIRY, |m| &m.expiry)
    }

    /// Its range deletes (see `ranges`). A file that has any is read with the open.
    pub fn ranges(&self) -> &RangeSet {
        self.metadata.get().map_or(&NO_RANGES, |m| &m.ranges)
    }

    /// Memory held by filter, page index and sketch: what a memory budget counts of a list.
    /// Of a file not read yet, what they will take once it is (by its outline): a budget
    /// counts what the tree may come to hold, not what it happens to hold at the moment.
    pub fn metadata_memory(&self) -> usize {
        match self.metadata.get() {
            Some(m) => m.memory(),
            None => self.outline.memory as usize,
        }
    }

    /// Read pages `a..b` in one pread, verifying each page's checksum (and padding length).
    /// [`records_end`](Self::records_end) then says where each page's records end.
    pub fn read_pages(&self, a: u32, b: u32) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.read_pages_into(a, b, &mut buf)?;
        Ok(buf)
    }

    /// [`read_pages`](Self::read_pages) into `buf`, resized to the pages: a reader that reads
    /// page after page allocates once.
    pub fn read_pages_into(&self, a: u32, b: u32, buf: &mut Vec<u8>) -> Result<()> {
        let index = self.index()?;
        self.read_unchecked_into(index, a, b, buf)?;
        self.verify(index, a, b, buf)
    }

    /// Pages `a..b` into `buf`, resized to them, unchecked.
    fn read_unchecked_into(
        &self,
        index: &PageIndex,
        a: u32,
        b: u32,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        // Only growth is zeroed; the read overwrites the rest.
        buf.resize(index.span_bytes(a, b) as usize, 0);
        let file = self.handles.get(self.id, &self.path)?;
        io::read_into(&file, &self.path, index.offset(a), buf)
    }

    /// Check pages `a..b`, read into `buf`: each page's checksums, and its trailer's lengths.
    fn verify(&self, index: &PageIndex, a: u32, b: u32, buf: &[u8]) -> Result<()> {
        let base = index.offset(a);
        for p in a..b {
            let s = (index.offset(p) - base) as usize;
            let e = (index.offset(p + 1) - base) as usize;
            self.layout
                .verify(&buf[s..e])
                .map_err(|why| self.damaged_page(index, p, why))?;
        }
        Ok(())
    }

    fn damaged_page(&self, index: &PageIndex, p: u32, why: &str) -> Error {
        Error::corruption(
            &self.path,
            format!("page {p} at offset {} {why}", index.offset(p)),
        )
    }

    /// The file's map, mapping it now if the store maps files and the process has a map to
    /// spare (see `map`).
    fn mapping(&self) -> Option<&io::Mapping> {
        match self.map.get() {
            Some(map) => Some(map),
            None if self.handles.may_map() && !self.unmappable.load(Relaxed) => self.map_now(),
            None => None,
        }
    }

    #[cold]
    fn map_now(&self) -> Option<&io::Mapping> {
        if !self.handles.reserve_map() {
            return None;
        }
        let map = self
            .handles
            .get(self.id, &self.path)
            .and_then(|file| io::Mapping::new(&file, &self.path, self.size()));
        match map {
            // A read in another thread may have mapped the file first: ours is given back.
            Ok(map) => {
                if self.map.set(map).is_err() {
                    self.handles.release_map();
                }
            }
            Err(_) => {
                self.unmappable.store(true, Relaxed);
                self.handles.release_map();
            }
        }
        self.map.get()
    }

    /// Padding bytes between the records of `page` (a whole page, as read) and its trailer.
    pub fn padding(&self, page: &[u8]) -> usize {
        self.layout.padding(page)
    }

    /// Where the records of `page` (a whole page read by [`read_pages`](Self::read_pages)) end.
    pub fn records_end(&self, page: &[u8]) -> usize {
        self.layout.records_end(page)
    }

    /// Each segment of `page` (a whole page read by [`read_pages`](Self::read_pages)): its
    /// first route (format 10 on) and its records (see `page`).
    pub fn segments(&self, page: &[u8]) -> Vec<(Option<u64>, std::ops::Range<usize>)> {
        self.layout.segments(page)
    }

    /// Add the records of `key` (of route `route`) in page `p` to `stack` (a key's records
    /// share a page, and a segment of it): `None` if it has none, else whether they completed
    /// the stack. Only the segments the route leads to are checked and searched.
    pub fn search_page(
        &self,
        p: u32,
        route: u64,
        key: &[u8],
        stack: &mut Stack,
    ) -> Result<Option<bool>> {
        let index = self.index()?;
        let len = index.span_bytes(p, p + 1) as usize;
        if let Some(map) = self.mapping() {
            let page = map.read(&self.path, index.offset(p), len)?;
            self.prefetch_in(index, p, page, route);
            return self.search_in(index, p, page, route, key, stack);
        }
        // Each thread reads its point lookups' pages into one buffer: a GET allocates no page.
        thread_local! {
            static PAGE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        PAGE.with_borrow_mut(|page| {
            // Checked by the search, a segment at a time.
            let found = self
                .read_unchecked_into(index, p, p + 1, page)
                .and_then(|()| self.search_in(index, p, page, route, key, stack));
            // A big record's page is not kept.
            if page.capacity() > KEEP_PAGE_BUFFER {
                *page = Vec::new();
            }
            found
        })
    }

    /// Start loading what [`search_page`](Self::search_page) of `route` in page `p` reads
    /// first, where the page is mapped (a read into a buffer has nothing to gain) and the
    /// file's metadata is in memory (a prefetch reads nothing from disk).
    pub fn prefetch_page(&self, p: u32, route: u64) {
        let Some(m) = self.metadata.get() else { return };
        let Some(map) = self.mapping() else { return };
        let len = m.index.span_bytes(p, p + 1) as usize;
        if let Some(page) = map.bytes(m.index.offset(p), len) {
            self.prefetch_in(&m.index, p, page, route);
        }
    }

    fn prefetch_in(&self, index: &PageIndex, p: u32, page: &[u8], route: u64) {
        if p + 1 < index.pages() {
            let bounds = (index.route(p), index.route(p + 1));
            self.layout.prefetch(page, route, bounds);
        }
    }

    /// [`search_page`](Self::search_page) in `page`, page `p` as read (unchecked).
    fn search_in(
        &self,
        index: &PageIndex,
        p: u32,
        page: &[u8],
        route: u64,
        key: &[u8],
        stack: &mut Stack,
    ) -> Result<Option<bool>> {
        let candidates = self
            .layout
            .candidates(page, route)
            .map_err(|why| self.damaged_page(index, p, why))?;
        for candidate in candidates {
            let (range, at_route) = candidate.map_err(|why| self.damaged_page(index, p, why))?;
            let records = &page[range];
            // Segments that start at the key's route, walked back through where many keys
            // share a route (an ordered list's keys with one 8-byte prefix): one whose first
            // key is above the key cannot hold it.
            if at_route && self.first_key(p, records)? > key {
                continue;
            }
            if let Some(complete) = self.search_records(p, records, key, stack)? {
                return Ok(Some(complete));
            }
        }
        Ok(None)
    }

    /// The key of the first record of `records` (checked records of page `p`).
    fn first_key<'a>(&self, p: u32, records: &'a [u8]) -> Result<&'a [u8]> {
        record::decode_as(self.encoding, records, &mut 0)
            .map(|r| r.key)
            .ok_or_else(|| Error::corruption(&self.path, format!("malformed record in page {p}")))
    }

    /// [`search_page`](Self::search_page) in `data`, page `p`'s records.
    fn search_records(
        &self,
        p: u32,
        data: &[u8],
        key: &[u8],
        stack: &mut Stack,
    ) -> Result<Option<bool>> {
        let malformed = || Error::corruption(&self.path, format!("malformed record in page {p}"));
        let mut pos = 0;
        let mut found = false;
        while pos < data.len() {
            let (k, end) = record::key_and_end(self.encoding, data, pos).ok_or_else(malformed)?;
            // The last byte first: keys that share a prefix mostly differ there, and a
            // mismatch then costs no call to memcmp.
            if k.len() == key.len() && k.last() == key.last() && k == key {
                found = true;
                let r = record::decode_as(self.encoding, data, &mut pos).ok_or_else(malformed)?;
                if stack.push(r.op) {
                    return Ok(Some(true));
                }
            } else if found {
                break;
            } else {
                pos = end;
            }
        }
        Ok(found.then_some(false))
    }
}

/// The largest page buffer a thread keeps between point lookups.
const KEEP_PAGE_BUFFER: usize = 64 << 10;

impl Drop for ListFile {
    fn drop(&mut self) {
        if self.map.take().is_some() {
            self.handles.release_map();
        }
        self.handles.forget(self.id);
        if *self.remove_when_dropped.get_mut() {
            // Best effort, as all garbage collection: the next open removes an orphan.
            let _ = io::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::hashed_test_list;

    #[test]
    fn an_outlined_file_is_read_at_its_first_use_and_must_match_its_outline() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(16, counters.clone()));
        let (file, _) =
            hashed_test_list(dir.path(), 1, 3000, 512, (1 << 22, 3), &counters, &handles);
        let outline = file.outline();
        assert!(outline.pages > 1 && outline.fingerprint_shift.is_some() && !outline.eager);
        let outlined = |order, o| ListFile::outlined(dir.path(), 1, &handles, order, o);
        let read = || counters.lists_read.load(Relaxed);

        let lazy = outlined(KeyOrder::Hashed, outline).unwrap();
        assert!(!lazy.is_read());
        assert_eq!(read(), 0, "outlined is not read");
        assert_eq!(lazy.metadata_memory() as u64, outline.memory);
        assert_eq!(lazy.index_memory(), 0);
        assert_eq!(lazy.outline(), outline);
        assert_eq!(lazy.index().unwrap().pages(), outline.pages);
        assert!(lazy.is_read());
        assert_eq!(read(), 1);
        assert_eq!(lazy.index_memory(), file.index_memory());
        assert_eq!(
            lazy.fingerprints().unwrap().shift(),
            file.fingerprints().unwrap().shift()
        );
        // Memory alone is not the file's to match.
        let other_memory = Outline {
            memory: 1,
            ..outline
        };
        assert!(outlined(KeyOrder::Hashed, other_memory)
            .unwrap()
            .index()
            .is_ok());

        // Every other field, and the order, changed: damage at the first read, never data.
        // (Not the version: the read takes the outline's word for it, as the header is not
        // read; the metadata's checksum ties the outline to the file, and `check` compares the
        // header with it.)
        let wrong = [
            Outline {
                pages: outline.pages + 1,
                ..outline
            },
            Outline {
                records: outline.records - 1,
                ..outline
            },
            Outline {
                size: outline.size + 1,
                ..outline
            },
            Outline {
                page_bytes: outline.page_bytes - 1,
                ..outline
            },
            Outline {
                metadata_offset: outline.metadata_offset - 1,
                ..outline
            },
            Outline {
                metadata_offset: outline.metadata_offset + 8,
                ..outline
            },
            Outline {
                checksum: outline.checksum ^ 1,
                ..outline
            },
            Outline {
                fingerprint_shift: None,
                ..outline
            },
            Outline {
                eager: true,
                ..outline
            },
        ];
        for (i, o) in wrong.into_iter().enumerate() {
            // An eager file is read at once, the others at their first use.
            let found = outlined(KeyOrder::Hashed, o).and_then(|f| f.index().map(|_| ()));
            assert!(
                matches!(found, Err(Error::Corruption { .. })),
                "case {i}: {found:?}"
            );
        }
        let found = outlined(KeyOrder::Ordered, outline).unwrap();
        assert!(matches!(
            found.may_contain(7),
            Err(Error::Corruption { .. })
        ));
        assert!(matches!(found.sketch(), Err(Error::Corruption { .. })));
        assert!(!found.is_read());
        // What a file not read answers without reading: no range deletes, no times.
        assert!(found.ranges().is_empty());
        assert_eq!(*found.expiry(), ExpirySummary::none());
    }
}
