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
mod metadata;
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
pub use metadata::Outline;
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
    /// Bytes of pages `start..end`: known without the file's page index, which is read at
    /// the file's first use (see `file`).
    bytes: u64,
}

impl ListRef {
    /// A view of the whole file, limited to `span`.
    pub fn new(file: Arc<ListFile>, span: Span) -> ListRef {
        let (end, bytes) = (file.pages(), file.page_bytes());
        ListRef {
            file,
            start: 0,
            end,
            span,
            bytes,
        }
    }

    /// A view of pages `start..end` of `file`, which span `bytes`, limited to `span`: as the
    /// manifest records it.
    pub fn of_pages(file: Arc<ListFile>, start: u32, end: u32, span: Span, bytes: u64) -> ListRef {
        ListRef {
            file,
            start,
            end,
            span,
            bytes,
        }
    }

    /// A view of pages `start..end` of `file` limited to `span`, its bytes from the file's
    /// page index (read now if it was not).
    pub fn with_pages(file: Arc<ListFile>, start: u32, end: u32, span: Span) -> Result<ListRef> {
        let bytes = file.index()?.span_bytes(start, end);
        Ok(ListRef::of_pages(file, start, end, span, bytes))
    }

    /// Bytes of pages this view spans (shared boundary pages count in both views).
    pub fn bytes(&self) -> u64 {
        self.bytes
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
        if !self.span.contains((route, key)) || !self.file.may_contain(hash)? {
            return Ok(false);
        }
        Counters::bump(&counters.lists_probed);
        let index = self.file.index()?;
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
    /// holds the key (its node's selector) can then wait for both at once. Nothing, if the
    /// file's page index is not in memory yet (a prefetch reads nothing from disk).
    pub fn prefetch(&self, route: u64, key: &[u8]) {
        if !self.span.contains((route, key)) || !self.file.is_read() {
            return;
        }
        let Ok(index) = self.file.index() else { return };
        if let Some(page) = index.page_for(self.start, self.end, (route, key)) {
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

    /// Divide the view at `sep`: positions below go left, the rest right. No data moves (the
    /// file's page index is read if it was not).
    pub fn split(&self, sep: &Pivot) -> Result<(Option<ListRef>, Option<ListRef>)> {
        let index = self.file.index()?;
        let k = self.start + index.count_below(self.start, self.end, sep.as_pos(), true);
        // A view of no pages stays if the file carries range deletes (a list of nothing
        // else): they apply to the whole span.
        let ranged = !self.file.ranges().is_empty();
        let view = |start, end, span| ListRef {
            start,
            end,
            span,
            bytes: index.span_bytes(start, end),
            ..self.clone()
        };
        let left = ((k > self.start || ranged) && self.span.lo < *sep).then(|| {
            view(
                self.start,
                k,
                Span::new(self.span.lo.clone(), Some(sep.clone())),
            )
        });
        // The page before `k` starts below `sep` but may end at or above it — unless the
        // index is exact and page `k` starts right at `sep`.
        let shared = k > self.start
            && !(index.is_exact() && k < self.end && index.cmp_page(k, sep.as_pos()).is_eq());
        let right_start = if shared { k - 1 } else { k };
        let right = ((right_start < self.end || ranged)
            && self.span.hi.as_ref().is_none_or(|h| sep < h))
        .then(|| {
            view(
                right_start,
                self.end,
                Span::new(sep.clone(), self.span.hi.clone()),
            )
        });
        Ok((left, right))
    }

    /// The part of the view inside `span`, if any. No data moves.
    pub fn narrow(&self, span: &Span) -> Result<Option<ListRef>> {
        let mut view = Some(self.clone());
        if self.span.lo < span.lo {
            view = match view {
                Some(v) => v.split(&span.lo)?.1,
                None => None,
            };
        }
        if let Some(hi) = &span.hi {
            if self.span.hi.as_ref().is_none_or(|h| hi < h) {
                view = match view {
                    Some(v) => v.split(hi)?.0,
                    None => None,
                };
            }
        }
        Ok(view.filter(|v| !v.span.intersect(span).is_empty()))
    }

    /// A separator near the middle of the view by bytes, taken from the page index (no I/O
    /// once it is in memory): the position of a page strictly inside the view's span.
    pub fn median(&self) -> Result<Option<Pivot>> {
        let index = self.file.index()?;
        let half = index.offset(self.start) + self.bytes() / 2;
        Ok((self.start + 1..self.end)
            .map(|p| (p, index.pivot(p)))
            .filter(|(_, pivot)| self.span.splits_at(pivot))
            .min_by_key(|&(p, _)| index.offset(p).abs_diff(half))
            .map(|(_, pivot)| pivot))
    }
}
