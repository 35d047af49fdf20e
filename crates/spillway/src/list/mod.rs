//! Lists: immutable sorted runs of records, one file each, and views over them.
//!
//! A [`ListRef`] is a view of a [`ListFile`]: a page range plus a span of positions. A fast-split
//! (WB-tree §3.3) divides a list without copying a byte by giving each new leaf a view of the
//! same file; the page on the boundary is shared and each view ignores records outside its
//! span. Files are reference-counted through these views (`Arc`) and through the
//! manifest, which is what lets garbage collection delete a file only once no view needs it.
//! A file's descriptor lives apart, in the store's [`Handles`] cache, which keeps at most
//! `Options::max_open_files` open however many files the tree holds.

mod cursor;
pub mod expiry;
mod file;
pub mod filter;
pub mod fingerprints;
pub mod format;
mod handles;
mod index;
mod maps;
pub mod page;
pub mod ranges;
pub mod sketch;
mod writer;

use std::sync::Arc;

pub use cursor::{ListCursor, Readahead};
pub use file::ListFile;
pub(crate) use handles::IdHasher;
pub use handles::{raise_open_file_limit, Handles};
pub use maps::{max_mapped_files, MapBudget};
#[cfg(test)]
pub(crate) use writer::hashed_test_list;
pub use writer::ListWriter;

use crate::error::Result;
use crate::order::{Pivot, Span};
use crate::stats::Counters;
use crate::upsert::fold::Stack;

#[derive(Clone, Debug)]
pub struct ListRef {
    pub file: Arc<ListFile>,
    /// Pages `start..end` of the file.
    pub start: u32,
    pub end: u32,
    /// The positions that are part of this view; records outside it are not.
    pub span: Span,
}

impl ListRef {
    /// A view of the whole file, limited to `span`.
    pub fn new(file: Arc<ListFile>, span: Span) -> ListRef {
        let end = file.pages();
        ListRef {
            file,
            start: 0,
            end,
            span,
        }
    }

    /// Bytes of pages this view spans (shared boundary pages count in both views).
    pub fn bytes(&self) -> u64 {
        self.file.span_bytes(self.start, self.end)
    }

    /// Point lookup (WB-tree §3.4): span, filter, page index, one page read (and within it,
    /// one segment checked and scanned: see `page`). Adds the key's
    /// records here to `stack`, and says whether that completed it. `hash` is the key's
    /// filter hash (see `KeyOrder::hash`).
    pub fn get(
        &self,
        route: u64,
        key: &[u8],
        hash: u64,
        counters: &Counters,
        stack: &mut Stack,
    ) -> Result<bool> {
        if !self.span.contains((route, key)) || !self.file.may_contain(hash) {
            return Ok(false);
        }
        Counters::bump(&counters.lists_probed);
        let index = self.file.index();
        let Some(mut page) = index.page_for(self.start, self.end, (route, key)) else {
            return Ok(false);
        };
        loop {
            Counters::bump(&counters.pages_read);
            if let Some(complete) = self.file.search_page(page, route, key, stack)? {
                stack.pages += 1;
                return Ok(complete);
            }
            // An index of routes only: records sharing a route may straddle a page boundary.
            if index.is_exact() || page == self.start || index.route(page) != route {
                return Ok(false);
            }
            page -= 1;
        }
    }

    /// Start loading the page [`get`](Self::get) of `(route, key)` would read, and the
    /// part of it the read touches first: a read that has yet to learn whether this list
    /// holds the key (its node's selector) can then wait for both at once.
    pub fn prefetch(&self, route: u64, key: &[u8]) {
        if !self.span.contains((route, key)) {
            return;
        }
        if let Some(page) = self
            .file
            .index()
            .page_for(self.start, self.end, (route, key))
        {
            self.file.prefetch_page(page, route);
        }
    }

    /// Whether a range delete of the list covers position `(route, key)` of the view: every
    /// record of the key in older lists is gone (see `ranges`).
    pub fn covers(&self, route: u64, key: &[u8]) -> bool {
        let ranges = self.file.ranges();
        !ranges.is_empty() && self.span.contains((route, key)) && ranges.covers(key)
    }

    /// The positions of the range delete that [`covers`](Self::covers) `(route, key)`.
    pub fn covering(&self, route: u64, key: &[u8]) -> Option<Span> {
        if !self.covers(route, key) {
            return None;
        }
        self.file.ranges().span_of(key, self.file.order())
    }

    /// Divide the view at `sep`: positions below go left, the rest right. No data moves.
    pub fn split(&self, sep: &Pivot) -> (Option<ListRef>, Option<ListRef>) {
        let index = self.file.index();
        let k = self.start + index.count_below(self.start, self.end, sep.as_pos(), true);
        // A view of no pages stays if the file carries range deletes (a list of nothing
        // else): they apply to the whole span.
        let ranged = !self.file.ranges().is_empty();
        let left = ((k > self.start || ranged) && self.span.lo < *sep).then(|| ListRef {
            end: k,
            span: Span::new(self.span.lo.clone(), Some(sep.clone())),
            ..self.clone()
        });
        // The page before `k` starts below `sep` but may end at or above it — unless the
        // index is exact and page `k` starts right at `sep`.
        let shared = k > self.start
            && !(index.is_exact() && k < self.end && index.cmp_page(k, sep.as_pos()).is_eq());
        let right_start = if shared { k - 1 } else { k };
        let right = ((right_start < self.end || ranged)
            && self.span.hi.as_ref().is_none_or(|h| sep < h))
        .then(|| ListRef {
            start: right_start,
            span: Span::new(sep.clone(), self.span.hi.clone()),
            ..self.clone()
        });
        (left, right)
    }

    /// The part of the view inside `span`, if any. No data moves.
    pub fn narrow(&self, span: &Span) -> Option<ListRef> {
        let mut view = Some(self.clone());
        if self.span.lo < span.lo {
            view = view.and_then(|v| v.split(&span.lo).1);
        }
        if let Some(hi) = &span.hi {
            if self.span.hi.as_ref().is_none_or(|h| hi < h) {
                view = view.and_then(|v| v.split(hi).0);
            }
        }
        view.filter(|v| !v.span.intersect(span).is_empty())
    }

    /// A separator near the middle of the view by bytes, taken from the in-memory index (no
    /// I/O): the position of a page strictly inside the view's span.
    pub fn median(&self) -> Option<Pivot> {
        let half = self.file.offset(self.start) + self.bytes() / 2;
        (self.start + 1..self.end)
            .map(|p| (p, self.file.index().pivot(p)))
            .filter(|(_, pivot)| self.span.splits_at(pivot))
            .min_by_key(|&(p, _)| self.file.offset(p).abs_diff(half))
            .map(|(_, pivot)| pivot)
    }
}
