//! Writes one list file from records arriving in position order.

use std::path::Path;
use std::sync::Arc;

use super::file::ListFile;
use super::format::{self, Trailer};
use super::handles::Handles;
use super::index::PageIndex;
use super::metadata::FingerprintSection;
use super::page::{self, SEGMENT};
use crate::error::{Error, Result};
use crate::io::{AppendFile, PendingSync};
use crate::list::expiry::ExpiryBuilder;
use crate::list::filter::Filter;
use crate::list::fingerprints::Fingerprints;
use crate::list::ranges::RangeSet;
use crate::list::sketch::SketchBuilder;
use crate::order::{cmp_pos, round_route, shortest_separator, KeyOrder};
use crate::record::{self, Op};
use crate::stats::Counters;

pub struct ListWriter {
    id: u64,
    out: AppendFile,
    /// Where the finished file's read descriptor will live.
    handles: Arc<Handles>,
    order: KeyOrder,
    page_size: usize,
    bits_per_key: u32,
    /// The node size fingerprints are cut for, and the bits of precision they keep beyond it
    /// (see `fingerprints`).
    node_size: usize,
    headroom: u32,
    page: Vec<u8>,
    /// The most bytes the page may take (see `format::page_limit`).
    page_limit: usize,
    /// The page's route in the index (see `index`), and where its last record starts in
    /// `page`.
    page_route: u64,
    page_last: usize,
    /// The page's segments: each one's first route and where it starts in `page`.
    segments: Vec<(u64, usize)>,
    /// The last record of the previous page: its route and key, for the next separator.
    prev_route: u64,
    prev_key: Vec<u8>,
    /// Every record's key hash, for the filter built at the end.
    hashes: Vec<u64>,
    sketch: SketchBuilder,
    expiry: ExpiryBuilder,
    /// The range deletes the list carries (see `ranges`).
    ranges: RangeSet,
    page_routes: Vec<u64>,
    offsets: Vec<u64>,
    seps: Vec<Vec<u8>>,
    /// The last position added, and whether its record was an operand (debug builds).
    last: Option<(u64, Vec<u8>, bool)>,
}

impl ListWriter {
    pub fn create(
        dir: &Path,
        id: u64,
        order: KeyOrder,
        page_size: usize,
        bits_per_key: u32,
        counters: Arc<Counters>,
        handles: Arc<Handles>,
    ) -> Result<ListWriter> {
        let mut out =
            AppendFile::create(&crate::files::list_path(dir, id), counters)?.write_behind();
        out.append(&format::header())?;
        Ok(ListWriter {
            id,
            out,
            handles,
            order,
            page_size,
            bits_per_key,
            node_size: crate::Options::default().node_size,
            headroom: 2,
            page: Vec::with_capacity(page_size),
            page_limit: page_size,
            page_route: 0,
            page_last: 0,
            segments: Vec::new(),
            prev_route: 0,
            prev_key: Vec::new(),
            hashes: Vec::new(),
            sketch: SketchBuilder::default(),
            expiry: ExpiryBuilder::default(),
            ranges: RangeSet::default(),
            page_routes: Vec::new(),
            offsets: Vec::new(),
            seps: Vec::new(),
            last: None,
        })
    }

    /// Carry range deletes `ranges` (see `ranges`): the list may hold them alone.
    pub fn add_ranges(&mut self, ranges: &RangeSet) {
        self.ranges.extend(ranges);
    }

    /// Cut the fingerprints for a node of `node_size` bytes, with `headroom` bits more
    /// precision than that calls for: one per time the list's node may be split in half while
    /// the list is in it.
    pub fn for_node(mut self, node_size: usize, headroom: u32) -> ListWriter {
        self.node_size = node_size;
        self.headroom = headroom;
        self
    }

    /// Append a record; records must arrive in increasing position order, a key more than
    /// once only as a stack: merge operands, newest first, then at most one base.
    pub fn add(&mut self, route: u64, key: &[u8], op: Op<'_>) -> Result<()> {
        if cfg!(debug_assertions) {
            if let Some((r, k, after_operand)) = &self.last {
                let ord = cmp_pos((*r, k), (route, key));
                assert!(
                    ord.is_lt() || (ord.is_eq() && *after_operand),
                    "list records out of order"
                );
            }
            self.last = Some((route, key.to_vec(), !op.is_base()));
        }
        let len = record::encoded_len(key, op);
        let hash = self.order.hash(route, key);
        // A page ends between keys, never inside a key's stack: a read finds the whole stack
        // in the one page the index points it to.
        let same_key =
            !self.page.is_empty() && self.hashes.last() == Some(&hash) && self.continues_last(key);
        // Likewise a segment (see `page`), once it holds `SEGMENT` bytes.
        let segment_start = self.segments.last().map_or(0, |s| s.1);
        let new_segment = !same_key && self.page.len() - segment_start + len > SEGMENT;
        let trailer = page::trailer_len(self.segments.len() + usize::from(new_segment));
        if !self.page.is_empty() && self.page.len() + len + trailer > self.page_limit && !same_key {
            let end =
                self.out.len() + (self.page.len() + page::trailer_len(self.segments.len())) as u64;
            let first = len + page::trailer_len(1);
            self.finish_page(format::padding(end, first, self.page_size))?;
        }
        if self.page.is_empty() || new_segment {
            self.segments.push((route, self.page.len()));
        }
        if self.page.is_empty() {
            self.page_limit = format::page_limit(self.out.len(), self.page_size);
            // Where the previous page ended in the same route, the route alone does not
            // tell the pages apart: keep the fewest key bytes that do. Where it ended below,
            // the roundest route in between does (and the index holds it in less memory).
            let first = self.offsets.is_empty();
            let (page_route, sep) = if !first && self.prev_route == route {
                (route, shortest_separator(&self.prev_key, key).to_vec())
            } else if !first {
                (round_route(self.prev_route, route), Vec::new())
            } else {
                (route, Vec::new())
            };
            self.page_route = page_route;
            self.seps.push(sep);
        }
        self.page_last = self.page.len();
        record::encode(&mut self.page, key, op);
        self.hashes.push(hash);
        let page = self.page_routes.len() as u32;
        let tombstone = op == Op::Delete;
        self.sketch.add(hash, page, len, tombstone, same_key);
        self.expiry.add(op, len);
        Ok(())
    }

    /// Whether `key` is the key of the page's last record.
    fn continues_last(&self, key: &[u8]) -> bool {
        record::decode(&self.page, &mut { self.page_last }).is_some_and(|r| r.key == key)
    }

    /// Write the page out, padded with `pad` zero bytes (see `format::padding`).
    fn finish_page(&mut self, pad: usize) -> Result<()> {
        // A page outgrows its page size only by one key's records (a stack of merge operands
        // that no operator combines); a segment's end is a u32.
        if u32::try_from(self.page.len()).is_err() {
            return Err(Error::ValueTooLarge {
                len: self.page.len(),
                max: u32::MAX as usize,
            });
        }
        let last = record::decode(&self.page, &mut { self.page_last }).expect("encoded here");
        self.prev_key.clear();
        self.prev_key.extend_from_slice(last.key);
        self.prev_route = self.order.route(last.key);
        self.page_routes.push(self.page_route);
        self.offsets.push(self.out.len());
        page::finish(&mut self.page, &self.segments, pad);
        self.out.append(&self.page)?;
        self.page.clear();
        self.segments.clear();
        Ok(())
    }

    /// Write filter, index and trailer, fsync, close, and return the file ready for reads
    /// (the first read opens it through the handle cache). The tree's lists are finished
    /// unsynced and synced together (see `Spiller::finish_list`); tests finish one at a time.
    #[cfg(test)]
    pub fn finish(self) -> Result<Arc<ListFile>> {
        let (file, pending) = self.finish_unsynced()?;
        pending.sync()?;
        Ok(file)
    }

    /// [`finish`](Self::finish), leaving the fsync to the caller: the file reads the same,
    /// but is durable only once the [`PendingSync`] has synced (before a manifest names it).
    pub fn finish_unsynced(mut self) -> Result<(Arc<ListFile>, PendingSync)> {
        if !self.page.is_empty() {
            self.finish_page(0)?;
        }
        let filter_offset = self.out.len();
        let mut meta = Vec::new();
        // Hashed lists get fingerprints, for their nodes' selectors, in place of a filter.
        let (mut filter, mut fingerprints) = (None, None);
        if self.order == KeyOrder::Hashed && self.bits_per_key > 0 {
            let r = crate::options::selector_precision(self.bits_per_key);
            let fp = Fingerprints::build(
                &self.hashes,
                filter_offset,
                self.node_size,
                r,
                self.headroom,
            );
            if let Some(fp) = fp {
                fp.encode(&mut meta);
                fingerprints = Some(FingerprintSection {
                    offset: filter_offset,
                    len: meta.len(),
                    shift: fp.shift(),
                });
            }
        } else {
            filter = Filter::build(&self.hashes, self.bits_per_key);
            if let Some(f) = &filter {
                f.encode(&mut meta);
            }
        }
        let filter_len = meta.len() as u64;
        let mut offsets = std::mem::take(&mut self.offsets);
        offsets.push(filter_offset);
        let pages = self.page_routes.len() as u64;
        let index = PageIndex::new(std::mem::take(&mut self.page_routes), offsets, &self.seps);
        index.encode(self.order, &mut meta);
        let sketch = self.sketch.finish();
        sketch.encode(&mut meta);
        let expiry = self.expiry.finish();
        expiry.encode(&mut meta);
        self.ranges.encode(&mut meta);
        // Fingerprints carry their own checksum: an open need not read them (format 9).
        let covered = match fingerprints {
            Some(_) => &meta[filter_len as usize..],
            None => &meta[..],
        };
        let trailer = Trailer {
            page_count: pages,
            record_count: self.hashes.len() as u64,
            filter_offset,
            filter_len,
            meta_crc: crc_fast::crc32_iscsi(covered),
        };
        self.out.append(&meta)?;
        self.out.append(&trailer.encode())?;
        let path = self.out.path().to_owned();
        let size = self.out.len();
        let pending = self.out.into_pending_sync()?;
        let file = Arc::new(ListFile::from_parts(
            self.id,
            self.handles,
            path,
            self.order,
            format::VERSION,
            index,
            filter,
            fingerprints,
            Some(sketch),
            expiry,
            self.ranges,
            &trailer,
            size,
        ));
        Ok((file, pending))
    }
}

/// A hashed list of `records` keys `key-{id}-{i}` (each with value `v`) in file `id`, for a
/// node of `node_size` that may still fast-split `headroom - 1` times; and its keys with their
/// routes, in list order. For tests of the structures built over lists.
#[cfg(test)]
pub(crate) fn hashed_test_list(
    dir: &Path,
    id: u64,
    records: u64,
    page_size: usize,
    (node_size, headroom): (usize, u32),
    counters: &Arc<Counters>,
    handles: &Arc<Handles>,
) -> (Arc<ListFile>, Vec<(u64, Vec<u8>)>) {
    let order = KeyOrder::Hashed;
    let mut keys: Vec<(u64, Vec<u8>)> = (0..records)
        .map(|i| {
            let k = format!("key-{id}-{i}").into_bytes();
            (order.route(&k), k)
        })
        .collect();
    keys.sort();
    let w = ListWriter::create(
        dir,
        id,
        order,
        page_size,
        10,
        counters.clone(),
        handles.clone(),
    );
    let mut w = w.unwrap().for_node(node_size, headroom);
    for (r, k) in &keys {
        w.add(*r, k, Op::Put(b"v")).unwrap();
    }
    (w.finish().unwrap(), keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list::format::BLOCK;

    /// A writer of list `id` in `dir`, with 10 filter bits a key.
    fn writer(
        dir: &Path,
        id: u64,
        order: KeyOrder,
        page_size: usize,
        handles: &Arc<Handles>,
    ) -> ListWriter {
        let counters = Arc::new(Counters::default());
        ListWriter::create(dir, id, order, page_size, 10, counters, handles.clone()).unwrap()
    }

    /// Records of mixed sizes, some larger than a block, written at several page sizes: no
    /// page that fits in a block straddles one, and every record reads back in order.
    #[test]
    fn pages_that_fit_in_a_block_stay_inside_one() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(16, counters.clone()));
        let order = KeyOrder::Hashed;
        let mut keys: Vec<Vec<u8>> = (0..3000u32).map(|i| i.to_le_bytes().to_vec()).collect();
        keys.sort_by_key(|k| (order.route(k), k.clone()));
        let value = |i: usize| {
            vec![
                b'v';
                if i.is_multiple_of(97) {
                    5000
                } else {
                    (i * 37) % 300
                }
            ]
        };
        for (id, page_size) in [(1u64, 4096usize), (2, 1000), (3, 512), (4, 8192)] {
            let mut w = writer(dir.path(), id, order, page_size, &handles);
            for (i, k) in keys.iter().enumerate() {
                w.add(order.route(k), k, Op::Put(&value(i))).unwrap();
            }
            drop(w.finish().unwrap());
            let file = ListFile::open(dir.path(), id, &handles).unwrap();
            let mut read = 0;
            let index = file.index().unwrap();
            for p in 0..file.pages() {
                let (start, end) = (index.offset(p), index.offset(p + 1));
                let straddles = start / BLOCK != (end - 1) / BLOCK;
                if page_size as u64 <= BLOCK && end - start <= BLOCK {
                    assert!(
                        !straddles,
                        "page size {page_size}: page {p} at {start}..{end}"
                    );
                }
                let page = file.read_pages(p, p + 1).unwrap();
                let data = &page[..file.records_end(&page)];
                let mut pos = 0;
                while pos < data.len() {
                    let r = record::decode(data, &mut pos).unwrap();
                    assert_eq!(r.key, &keys[read][..]);
                    assert_eq!(r.op, Op::Put(&value(read)));
                    read += 1;
                }
            }
            assert_eq!(read, keys.len(), "page size {page_size}");
        }
    }

    /// Keys that share one route (an ordered list's keys with one 8-byte prefix), some with
    /// stacks of merge operands, some large: segments hold whole stacks and stay near
    /// `SEGMENT` bytes, and a point read finds every key's whole stack, walking back through
    /// the segments that start at its route; keys not written are not found.
    #[test]
    fn segments_keep_stacks_whole_and_reads_find_keys_that_share_a_route() {
        let dir = tempfile::tempdir().unwrap();
        let counters = Arc::new(Counters::default());
        let handles = Arc::new(Handles::with_capacity(16, counters.clone()));
        let order = KeyOrder::Ordered;
        let key = |i: u32| format!("prefix::{i:06}").into_bytes();
        let value =
            |i: u32| vec![b'a' + (i % 26) as u8; if i.is_multiple_of(41) { 700 } else { 5 }];
        let stacked = |i: u32| i.is_multiple_of(3);
        let keys: Vec<u32> = (0..1500).map(|i| i * 2).collect();
        for (id, page_size) in [(1u64, 4096usize), (2, 1024), (3, 64), (4, 16384)] {
            let mut w = writer(dir.path(), id, order, page_size, &handles);
            for &i in &keys {
                let k = key(i);
                if stacked(i) {
                    w.add(order.route(&k), &k, Op::Merge(b"newer")).unwrap();
                    w.add(order.route(&k), &k, Op::Merge(b"older")).unwrap();
                }
                w.add(order.route(&k), &k, Op::Put(&value(i))).unwrap();
            }
            drop(w.finish().unwrap());
            let file = Arc::new(ListFile::open(dir.path(), id, &handles).unwrap());
            // Segments: stacks whole, no segment past SEGMENT but by one key's records.
            for p in 0..file.pages() {
                let page = file.read_pages(p, p + 1).unwrap();
                for (route, range) in file.segments(&page) {
                    let data = &page[range];
                    let mut pos = 0;
                    let first = record::decode(data, &mut pos).unwrap().key;
                    assert_eq!(route, Some(order.route(first)));
                    let (mut last, mut last_start) = (first, 0);
                    while pos < data.len() {
                        let at = pos;
                        let r = record::decode(data, &mut pos).unwrap();
                        if r.key != last {
                            (last, last_start) = (r.key, at);
                        }
                    }
                    assert!(
                        last_start == 0 || last_start < SEGMENT,
                        "page size {page_size}: a segment of {} bytes",
                        data.len()
                    );
                }
            }
            let list = crate::list::ListRef::new(file.clone(), crate::order::Span::all());
            for i in 0..3000u32 {
                let k = key(i);
                let hash = order.hash(order.route(&k), &k);
                let mut stack = crate::upsert::fold::Stack::default();
                let found = list.get(order.route(&k), &k, hash, &counters, &mut stack);
                let written = keys.contains(&i);
                assert_eq!(found.unwrap(), written, "page size {page_size}: key {i}");
                let text = format!("{stack:?}");
                if written {
                    assert!(text.contains(&format!("{:?}", value(i))), "key {i}: {text}");
                    let operands = text.matches("Operand").count();
                    assert_eq!(operands, if stacked(i) { 2 } else { 0 }, "key {i}: {text}");
                } else {
                    assert!(!text.contains("Operand"), "key {i}: {text}");
                }
            }
        }
    }
}
