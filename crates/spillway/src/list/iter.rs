//! Streams a list view's records in order, reading pages in large verified chunks.

use super::file::ListFile;
use super::format::CRC_LEN;
use super::ListRef;
use crate::error::{Error, Result};
use crate::record::{self, RecordRef};

/// How much to read per pread while streaming (merges are sequential, so read big).
const CHUNK: u64 = 512 * 1024;

pub struct ListIter<'a> {
    list: &'a ListRef,
    file: &'a ListFile,
    /// Pages `chunk_first..loaded_end`, as read from disk.
    chunk: Vec<u8>,
    chunk_base: u64,
    loaded_end: u32,
    /// Page being decoded (`None` before the first), and where its records end in `chunk`.
    page: Option<u32>,
    page_end: usize,
    pos: usize,
    done: bool,
    /// Route, start and end in `chunk` of the current record.
    current: Option<(u64, usize, usize)>,
}

impl<'a> ListIter<'a> {
    pub fn new(list: &'a ListRef) -> Result<Self> {
        let mut it = ListIter {
            list,
            file: &list.file,
            chunk: Vec::new(),
            chunk_base: 0,
            loaded_end: list.start,
            page: None,
            page_end: 0,
            pos: 0,
            done: false,
            current: None,
        };
        it.advance()?;
        Ok(it)
    }

    /// The current record and its route.
    pub fn peek(&self) -> Option<(u64, RecordRef<'_>)> {
        let (route, s, e) = self.current?;
        let r = record::decode(&self.chunk[..e], &mut { s }).expect("decoded once already");
        Some((route, r))
    }

    /// Move to the next record inside the view's route range.
    pub fn advance(&mut self) -> Result<()> {
        self.current = None;
        while !self.done {
            if self.pos >= self.page_end {
                self.enter_next_page()?;
                continue;
            }
            let start = self.pos;
            let r =
                record::decode(&self.chunk[..self.page_end], &mut self.pos).ok_or_else(|| {
                    let p = self.page.unwrap_or(0);
                    Error::corruption(self.file.path(), format!("malformed record in page {p}"))
                })?;
            let route = record::route(r.key);
            if route > self.list.hi {
                self.done = true; // sorted: nothing further can be in range
            } else if route >= self.list.lo {
                self.current = Some((route, start, self.pos));
                return Ok(());
            }
        }
        Ok(())
    }

    fn enter_next_page(&mut self) -> Result<()> {
        let next = self.page.map_or(self.list.start, |p| p + 1);
        if next >= self.list.end {
            self.done = true;
            return Ok(());
        }
        if next >= self.loaded_end {
            let f = self.file;
            let mut end = next + 1;
            while end < self.list.end && f.span_bytes(next, end + 1) <= CHUNK {
                end += 1;
            }
            self.chunk = f.read_pages(next, end)?;
            self.chunk_base = f.offset(next);
            self.loaded_end = end;
        }
        self.page = Some(next);
        self.pos = (self.file.offset(next) - self.chunk_base) as usize;
        self.page_end = (self.file.offset(next + 1) - self.chunk_base) as usize - CRC_LEN;
        Ok(())
    }
}
