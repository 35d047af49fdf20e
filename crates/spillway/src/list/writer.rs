//! Writes one list file from records arriving in `(route, key)` order.

use std::path::Path;
use std::sync::Arc;

use super::file::ListFile;
use super::format::{self, Trailer, CRC_LEN};
use super::handles::Handles;
use crate::error::Result;
use crate::filter::Filter;
use crate::io::AppendFile;
use crate::record;
use crate::stats::Counters;

pub struct ListWriter {
    id: u64,
    out: AppendFile,
    /// Where the finished file's read descriptor will live.
    handles: Arc<Handles>,
    page_size: usize,
    bits_per_key: u32,
    page: Vec<u8>,
    page_first_route: u64,
    /// Every record's route, for the filter built at the end.
    routes: Vec<u64>,
    first_routes: Vec<u64>,
    offsets: Vec<u64>,
    last: Option<(u64, Vec<u8>)>,
}

impl ListWriter {
    pub fn create(
        dir: &Path,
        id: u64,
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
            page_size,
            bits_per_key,
            page: Vec::with_capacity(page_size),
            page_first_route: 0,
            routes: Vec::new(),
            first_routes: Vec::new(),
            offsets: Vec::new(),
            last: None,
        })
    }

    /// Append a record; records must arrive in strictly increasing `(route, key)` order.
    pub fn add(&mut self, route: u64, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if cfg!(debug_assertions) {
            if let Some((r, k)) = &self.last {
                assert!(
                    record::cmp_routed((*r, k), (route, key)).is_lt(),
                    "list records out of order"
                );
            }
            self.last = Some((route, key.to_vec()));
        }
        let len = record::encoded_len(key, value);
        if !self.page.is_empty() && self.page.len() + len + CRC_LEN > self.page_size {
            self.finish_page()?;
        }
        if self.page.is_empty() {
            self.page_first_route = route;
        }
        record::encode(&mut self.page, key, value);
        self.routes.push(route);
        Ok(())
    }

    fn finish_page(&mut self) -> Result<()> {
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
        let filter = Filter::build(&self.routes, self.bits_per_key);
        let filter_offset = self.out.len();
        let mut meta = Vec::new();
        if let Some(f) = &filter {
            f.encode(&mut meta);
        }
        let filter_len = meta.len() as u64;
        for (r, o) in self.first_routes.iter().zip(&self.offsets) {
            meta.extend_from_slice(&r.to_le_bytes());
            meta.extend_from_slice(&o.to_le_bytes());
        }
        let trailer = Trailer {
            page_count: self.first_routes.len() as u64,
            record_count: self.routes.len() as u64,
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
        let mut offsets = self.offsets;
        offsets.push(filter_offset);
        Ok(Arc::new(ListFile::from_parts(
            self.id,
            self.handles,
            path,
            self.first_routes.into(),
            offsets.into(),
            filter,
            trailer.record_count,
            size,
        )))
    }
}
