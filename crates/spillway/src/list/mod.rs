//! Lists: immutable sorted runs of records, one file each, and views over them.
//!
//! A [`ListRef`] is a view of a [`ListFile`]: a page range plus a route range. A fast-split
//! (WB-tree §3.3) divides a list without copying a byte by giving each new leaf a view of the
//! same file; the page on the boundary is shared and each view ignores records outside its
//! route range. Files are reference-counted through these views (`Arc`) and through the
//! manifest, which is what lets garbage collection delete a file only once no view needs it.
//! A file's descriptor lives apart, in the store's [`Handles`] cache, which keeps at most
//! `Options::max_open_files` open however many files the tree holds.

mod file;
pub mod format;
mod handles;
mod iter;
mod writer;

use std::sync::Arc;

pub use file::ListFile;
pub use handles::{raise_open_file_limit, Handles, MIN_OPEN_FILES};
pub use iter::ListIter;
pub use writer::ListWriter;

use crate::error::Result;
use crate::stats::Counters;

#[derive(Clone, Debug)]
pub struct ListRef {
    pub file: Arc<ListFile>,
    /// Pages `start..end` of the file.
    pub start: u32,
    pub end: u32,
    /// Routes `lo..=hi`: records outside are not part of this view.
    pub lo: u64,
    pub hi: u64,
}

/// A point lookup's answer from one list: `None` = not here, `Some(None)` = deleted here.
pub type Found = Option<Option<Vec<u8>>>;

impl ListRef {
    /// A view of the whole file, limited to routes `lo..=hi`.
    pub fn new(file: Arc<ListFile>, lo: u64, hi: u64) -> ListRef {
        let end = file.pages();
        ListRef {
            file,
            start: 0,
            end,
            lo,
            hi,
        }
    }

    /// Bytes of pages this view spans (shared boundary pages count in both views).
    pub fn bytes(&self) -> u64 {
        self.file.span_bytes(self.start, self.end)
    }

    pub fn iter(&self) -> Result<ListIter<'_>> {
        ListIter::new(self)
    }

    /// Point lookup (WB-tree §3.4): route range, filter, first-route index, one page read.
    pub fn get(&self, route: u64, key: &[u8], counters: &Counters) -> Result<Found> {
        if route < self.lo || route > self.hi || !self.file.may_contain(route) {
            return Ok(None);
        }
        Counters::bump(&counters.lists_probed);
        let routes = &self.file.first_routes()[self.start as usize..self.end as usize];
        let n = routes.partition_point(|&r| r <= route) as u32;
        if n == 0 {
            return Ok(None);
        }
        let mut page = self.start + n - 1;
        loop {
            Counters::bump(&counters.pages_read);
            if let Some(found) = self.file.search_page(page, key)? {
                return Ok(Some(found));
            }
            // Records sharing a route may straddle a page boundary: only then look back.
            if page == self.start || self.file.first_route(page) != route {
                return Ok(None);
            }
            page -= 1;
        }
    }

    /// Divide the view at `sep`: routes below go left, the rest right. No data moves.
    pub fn split(&self, sep: u64) -> (Option<ListRef>, Option<ListRef>) {
        let routes = &self.file.first_routes()[self.start as usize..self.end as usize];
        let k = self.start + routes.partition_point(|&r| r < sep) as u32;
        let left = (k > self.start && sep > self.lo).then(|| ListRef {
            end: k,
            hi: sep - 1,
            ..self.clone()
        });
        // The page before `k` starts below `sep` but may end at or above it.
        let right_start = if k > self.start { k - 1 } else { self.start };
        let right = (right_start < self.end && sep <= self.hi).then(|| ListRef {
            start: right_start,
            lo: sep,
            ..self.clone()
        });
        (left, right)
    }

    /// The part of the view inside routes `lo..=hi`, if any. No data moves.
    pub fn narrow(&self, lo: u64, hi: u64) -> Option<ListRef> {
        if lo > self.hi || hi < self.lo {
            return None;
        }
        let mut view = Some(self.clone());
        if lo > self.lo {
            view = view.and_then(|v| v.split(lo).1);
        }
        if hi < self.hi {
            view = view.and_then(|v| v.split(hi + 1).0);
        }
        view
    }

    /// A separator near the middle of the view by bytes, taken from the in-memory index (no
    /// I/O): the first route of a page strictly inside the view's route range.
    pub fn median_route(&self) -> Option<u64> {
        let half = self.file.offset(self.start) + self.bytes() / 2;
        (self.start + 1..self.end)
            .filter(|&p| {
                let r = self.file.first_route(p);
                r > self.lo && r <= self.hi
            })
            .min_by_key(|&p| self.file.offset(p).abs_diff(half))
            .map(|p| self.file.first_route(p))
    }
}
