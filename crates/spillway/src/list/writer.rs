//! Writes one list file from records arriving in position order.

use std::path::Path;
use std::sync::Arc;

use super::file::ListFile;
use super::format::{self, Trailer, CRC_LEN};
use super::handles::Handles;
use super::index::PageIndex;
use crate::error::Result;
use crate::filter::Filter;
use crate::io::AppendFile;
use crate::order::{cmp_pos, shortest_separator, KeyOrder};
use crate::record::{self, Encoding, Op};
use crate::stats::Counters;

pub struct ListWriter {
    id: u64,
    out: AppendFile,
    /// Where the finished file's read descriptor will live.
    handles: Arc<Handles>,
    order: KeyOrder,
    page_size: usize,
    bits_per_key: u32,
    page: Vec<u8>,
    /// Route of the page's first record, and where its last record starts in `page`.
    page_first_route: u64,
    page_last: usize,
    /// The last record of the previous page: its route and key, for the next separator.
    prev_route: u64,
    prev_key: Vec<u8>,
    /// Every record's key hash, for the filter built at the end.
    hashes: Vec<u64>,
    first_routes: Vec<u64>,
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
            AppendFile::create(&dir.join(format::file_name(id)), counters)?.write_behind();
        out.append(&format::header())?;
        Ok(ListWriter {
            id,
            out,
            handles,
            order,
            page_size,
            bits_per_key,
            page: Vec::with_capacity(page_size),
            page_first_route: 0,
            page_last: 0,
            prev_route: 0,
            prev_key: Vec::new(),
            hashes: Vec::new(),
            first_routes: Vec::new(),
            offsets: Vec::new(),
            seps: Vec::new(),
            last: None,
        })
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
        // A page ends between keys, never inside a key's stack: a read finds the whole stack
        // in the one page the index points it to.
        if !self.page.is_empty()
            && self.page.len() + len + CRC_LEN > self.page_size
            && !self.continues_last(key)
        {
            self.finish_page()?;
        }
        if self.page.is_empty() {
            self.page_first_route = route;
            // Where the previous page ended in the same route, the route alone does not
            // tell the pages apart: keep the fewest key bytes that do.
            let sep = if !self.offsets.is_empty() && self.prev_route == route {
                shortest_separator(&self.prev_key, key).to_vec()
            } else {
                Vec::new()
            };
            self.seps.push(sep);
        }
        self.page_last = self.page.len();
        record::encode(&mut self.page, key, op);
        self.hashes.push(self.order.hash(route, key));
        Ok(())
    }

    /// Whether `key` is the key of the page's last record.
    fn continues_last(&self, key: &[u8]) -> bool {
        record::decode(&self.page, &mut { self.page_last }).is_some_and(|r| r.key == key)
    }

    fn finish_page(&mut self) -> Result<()> {
        let last = record::decode(&self.page, &mut { self.page_last }).expect("encoded here");
        self.prev_key.clear();
        self.prev_key.extend_from_slice(last.key);
        self.prev_route = self.order.route(last.key);
        self.first_routes.push(self.page_first_route);
        self.offsets.push(self.out.len());
        let crc = crc32c::crc32c(&self.page);
        self.page.extend_from_slice(&crc.to_le_bytes());
        self.out.append(&self.page)?;
        self.page.clear();
        Ok(())
    }

    /// Write filter, index and trailer, fsync, close, and return the file ready for reads
    /// (the first read opens it through the handle cache).
    pub fn finish(mut self) -> Result<Arc<ListFile>> {
        if !self.page.is_empty() {
            self.finish_page()?;
        }
        let filter = Filter::build(&self.hashes, self.bits_per_key);
        let filter_offset = self.out.len();
        let mut meta = Vec::new();
        if let Some(f) = &filter {
            f.encode(&mut meta);
        }
        let filter_len = meta.len() as u64;
        let mut offsets = std::mem::take(&mut self.offsets);
        offsets.push(filter_offset);
        let pages = self.first_routes.len() as u64;
        let index = PageIndex::new(std::mem::take(&mut self.first_routes), offsets, &self.seps);
        index.encode(self.order, &mut meta);
        let trailer = Trailer {
            page_count: pages,
            record_count: self.hashes.len() as u64,
            filter_offset,
            filter_len,
            meta_crc: crc32c::crc32c(&meta),
        };
        self.out.append(&meta)?;
        self.out.append(&trailer.encode())?;
        self.out.sync()?;
        let path = self.out.path().to_owned();
        let size = self.out.len();
        drop(self.out);
        Ok(Arc::new(ListFile::from_parts(
            self.id,
            self.handles,
            path,
            self.order,
            Encoding::Current,
            index,
            filter,
            trailer.record_count,
            size,
        )))
    }
}
