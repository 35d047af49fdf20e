//! A list's page index, held in memory: where each page starts and the position of its first
//! record, so that a point read finds its one page and a scan its first page with no I/O.
//!
//! A page's position is its first record's route plus a *separator*: the fewest key bytes
//! that tell the page's first key from the key before it. Routes differ between most pages
//! — a hashed list's always, bar hash collisions; an ordered list's wherever keys differ in
//! their first 8 bytes — and then a page needs no separator at all. Where they tie, the
//! separator is the shortest prefix of the first key above the previous key. Separators are
//! prefix-truncated: the bytes every separator of the list starts with are kept once.
//!
//! ```text
//! index (format 3) = order u8 | page_count × (route u64 | offset u64)
//!                    | prefix_len u32 | prefix | page_count × suffix_len u32 | suffixes
//! index (formats 1, 2) = page_count × (route u64 | offset u64)
//! ```
//! A suffix of length 0 means the page has no separator; every separator is longer than the
//! prefix, so that is never ambiguous.

use std::cmp::Ordering;

use crate::order::{KeyOrder, Pivot};

pub struct PageIndex {
    /// Route of each page's first record.
    routes: Box<[u64]>,
    /// Offset of each page, plus one past the last page.
    offsets: Box<[u64]>,
    seps: Option<Separators>,
    /// Whether a page's position is above every record of the page before it (format 3): a
    /// search then finds the one page a position can be in. Older indexes hold routes only,
    /// and records sharing a route (a hash collision) may straddle pages.
    exact: bool,
}

struct Separators {
    prefix: Box<[u8]>,
    /// Page `p`'s suffix is `suffixes[ends[p - 1]..ends[p]]` (`ends[-1]` = 0).
    ends: Box<[u32]>,
    suffixes: Box<[u8]>,
}

impl PageIndex {
    /// An index of pages with these first routes, offsets (one more than routes) and
    /// separators (empty: none needed), as a list writer produces them.
    pub fn new(routes: Vec<u64>, offsets: Vec<u64>, seps: &[Vec<u8>]) -> PageIndex {
        debug_assert_eq!(routes.len() + 1, offsets.len());
        debug_assert_eq!(routes.len(), seps.len());
        let present: Vec<&[u8]> = seps
            .iter()
            .filter(|s| !s.is_empty())
            .map(Vec::as_slice)
            .collect();
        let seps = present.first().map(|first| {
            let mut prefix_len = present
                .iter()
                .map(|s| s.len() - 1)
                .min()
                .unwrap_or(0)
                .min(first.len());
            for s in &present {
                prefix_len = first[..prefix_len]
                    .iter()
                    .zip(s.iter())
                    .take_while(|(a, b)| a == b)
                    .count();
            }
            let mut ends = Vec::with_capacity(seps.len());
            let mut suffixes = Vec::new();
            for s in seps {
                if !s.is_empty() {
                    suffixes.extend_from_slice(&s[prefix_len..]);
                }
                ends.push(suffixes.len() as u32);
            }
            Separators {
                prefix: first[..prefix_len].into(),
                ends: ends.into(),
                suffixes: suffixes.into(),
            }
        });
        PageIndex {
            routes: routes.into(),
            offsets: offsets.into(),
            seps,
            exact: true,
        }
    }

    /// Append the format-3 encoding (everything after the filter).
    pub fn encode(&self, order: KeyOrder, out: &mut Vec<u8>) {
        out.push(order.code());
        for (r, o) in self.routes.iter().zip(self.offsets.iter()) {
            out.extend_from_slice(&r.to_le_bytes());
            out.extend_from_slice(&o.to_le_bytes());
        }
        let prefix = self.seps.as_ref().map_or(&[][..], |s| &s.prefix);
        out.extend_from_slice(&(prefix.len() as u32).to_le_bytes());
        out.extend_from_slice(prefix);
        for p in 0..self.pages() {
            out.extend_from_slice(&(self.suffix(p).len() as u32).to_le_bytes());
        }
        if let Some(s) = &self.seps {
            out.extend_from_slice(&s.suffixes);
        }
    }

    /// Decode an index of `pages` pages ending at `end` (the filter's offset) from the start
    /// of `data`; `version` is the list format's. Returns the key order too (hashed before
    /// format 3), and the bytes the index took (what follows is the sketch, from format 5).
    pub fn decode(
        data: &[u8],
        pages: usize,
        end: u64,
        version: u32,
    ) -> Result<(KeyOrder, PageIndex, usize), &'static str> {
        let malformed = "malformed page index";
        let mut pos = 0;
        let order = if version >= 3 {
            pos = 1;
            KeyOrder::from_code(*data.first().ok_or(malformed)?).ok_or("unknown key order")?
        } else {
            KeyOrder::Hashed
        };
        let table = data.get(pos..pos + pages * 16).ok_or(malformed)?;
        pos += pages * 16;
        let mut routes = Vec::with_capacity(pages);
        let mut offsets = Vec::with_capacity(pages + 1);
        for e in table.chunks_exact(16) {
            routes.push(u64::from_le_bytes(e[..8].try_into().unwrap()));
            offsets.push(u64::from_le_bytes(e[8..].try_into().unwrap()));
        }
        offsets.push(end);
        let mut seps = Vec::with_capacity(pages);
        if version >= 3 {
            let u32_at = |at: usize| -> Result<usize, &'static str> {
                let b = data.get(at..at + 4).ok_or(malformed)?;
                Ok(u32::from_le_bytes(b.try_into().unwrap()) as usize)
            };
            let prefix_len = u32_at(pos)?;
            let prefix = data.get(pos + 4..pos + 4 + prefix_len).ok_or(malformed)?;
            pos += 4 + prefix_len;
            let lens_at = pos;
            pos += pages * 4;
            for p in 0..pages {
                let len = u32_at(lens_at + p * 4)?;
                let suffix = data.get(pos..pos + len).ok_or(malformed)?;
                pos += len;
                seps.push(if len == 0 {
                    Vec::new()
                } else {
                    [prefix, suffix].concat()
                });
            }
        } else {
            seps.resize(pages, Vec::new());
        }
        let mut index = PageIndex::new(routes, offsets, &seps);
        index.exact = version >= 3;
        let in_order = (1..index.pages()).all(|p| match index.cmp_pages(p - 1, p) {
            Ordering::Less => true,
            Ordering::Equal => !index.exact,
            Ordering::Greater => false,
        });
        if !in_order {
            return Err("page index out of order");
        }
        Ok((order, index, pos))
    }

    pub fn pages(&self) -> u32 {
        self.routes.len() as u32
    }

    pub fn route(&self, page: u32) -> u64 {
        self.routes[page as usize]
    }

    pub fn offset(&self, page: u32) -> u64 {
        self.offsets[page as usize]
    }

    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    pub fn is_exact(&self) -> bool {
        self.exact
    }

    fn suffix(&self, page: u32) -> &[u8] {
        let Some(s) = &self.seps else { return &[] };
        let p = page as usize;
        let start = if p == 0 { 0 } else { s.ends[p - 1] as usize };
        &s.suffixes[start..s.ends[p] as usize]
    }

    /// Page `page`'s position as a pivot (allocates: for splits, not reads).
    pub fn pivot(&self, page: u32) -> Pivot {
        let suffix = self.suffix(page);
        let key = match &self.seps {
            Some(s) if !suffix.is_empty() => [&s.prefix[..], suffix].concat(),
            _ => Vec::new(),
        };
        Pivot::new(self.route(page), &key)
    }

    /// Order page `page`'s position against position `p`.
    #[inline]
    pub fn cmp_page(&self, page: u32, p: (u64, &[u8])) -> Ordering {
        let by_route = self.route(page).cmp(&p.0);
        if by_route.is_ne() {
            return by_route;
        }
        let suffix = self.suffix(page);
        if suffix.is_empty() {
            return [][..].cmp(p.1);
        }
        let prefix = &self.seps.as_ref().expect("a suffix has separators").prefix;
        let n = prefix.len().min(p.1.len());
        prefix[..n]
            .cmp(&p.1[..n])
            .then_with(|| suffix.cmp(&p.1[n..]))
    }

    fn cmp_pages(&self, a: u32, b: u32) -> Ordering {
        let pb = self.pivot(b);
        self.cmp_page(a, pb.as_pos())
    }

    /// How many of pages `start..end` have positions at or below `p` (`strict`: below).
    pub fn count_below(&self, start: u32, end: u32, p: (u64, &[u8]), strict: bool) -> u32 {
        let (mut lo, mut hi) = (start, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let c = self.cmp_page(mid, p);
            if c.is_lt() || (!strict && c.is_eq()) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - start
    }

    /// The page in `start..end` where a record at position `p` would be, if it is there: the
    /// last whose position is at or below `p`. With an index of routes only, a record sharing
    /// its route with the page's first may be on an earlier page too (see `exact`).
    pub fn page_for(&self, start: u32, end: u32, p: (u64, &[u8])) -> Option<u32> {
        let n = self.count_below(start, end, p, false);
        (n > 0).then(|| start + n - 1)
    }

    /// Bytes of memory held.
    pub fn memory(&self) -> usize {
        let seps = self
            .seps
            .as_ref()
            .map_or(0, |s| s.prefix.len() + s.ends.len() * 4 + s.suffixes.len());
        (self.routes.len() + self.offsets.len()) * 8 + seps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::cmp_pos;

    fn index(pages: &[(u64, &[u8])]) -> PageIndex {
        let routes = pages.iter().map(|p| p.0).collect();
        let offsets = (0..=pages.len() as u64).map(|i| 16 + i * 100).collect();
        let seps: Vec<Vec<u8>> = pages.iter().map(|p| p.1.to_vec()).collect();
        PageIndex::new(routes, offsets, &seps)
    }

    #[test]
    fn positions_compare_through_the_truncated_prefix() {
        let ix = index(&[
            (1, b""),
            (7, b""),
            (7, b"user:0012"),
            (7, b"user:0107"),
            (9, b""),
        ]);
        assert_eq!(&ix.seps.as_ref().unwrap().prefix[..], b"user:0");
        assert_eq!(ix.pivot(3), Pivot::new(7, b"user:0107"));
        assert_eq!(ix.pivot(1), Pivot::new(7, b""));
        for page in 0..ix.pages() {
            let pivot = ix.pivot(page);
            for key in [
                &b""[..],
                b"user:",
                b"user:0012",
                b"user:00120",
                b"user:1",
                b"z",
            ] {
                for route in [1, 7, 9] {
                    assert_eq!(
                        ix.cmp_page(page, (route, key)),
                        cmp_pos(pivot.as_pos(), (route, key)),
                        "page {page} vs {route}/{}",
                        key.escape_ascii()
                    );
                }
            }
        }
        assert_eq!(ix.page_for(0, 5, (7, b"user:0100")), Some(2));
        assert_eq!(ix.page_for(0, 5, (7, b"user:0107")), Some(3));
        assert_eq!(ix.page_for(0, 5, (0, b"")), None);
        assert_eq!(ix.count_below(0, 5, (7, b"user:0107"), true), 3);
    }

    #[test]
    fn encoding_round_trips_and_checks_order() {
        let ix = index(&[(1, b""), (7, b""), (7, b"abc"), (7, b"abd")]);
        let mut buf = Vec::new();
        ix.encode(KeyOrder::Ordered, &mut buf);
        let (order, back, used) = PageIndex::decode(&buf, 4, 416, 3).unwrap();
        assert_eq!(order, KeyOrder::Ordered);
        assert_eq!(used, buf.len());
        for p in 0..4 {
            assert_eq!(back.pivot(p), ix.pivot(p));
            assert_eq!(back.offset(p), ix.offset(p));
        }
        assert_eq!(back.memory(), ix.memory());
        let unordered = index(&[(7, b"abd"), (7, b"abc")]);
        let mut buf = Vec::new();
        unordered.encode(KeyOrder::Ordered, &mut buf);
        assert!(PageIndex::decode(&buf, 2, 216, 3).is_err());
        assert!(PageIndex::decode(&buf[..buf.len() - 1], 2, 216, 3).is_err());
    }
}
