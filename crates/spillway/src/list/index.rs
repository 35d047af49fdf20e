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
//!
//! **Rounded routes** (format 7). A page's route need not be its first record's: any route
//! above the previous page's last record and at most the first record's tells the pages
//! apart. Format 7 writes the roundest one (`order::round_route`), and the index then holds
//! routes in memory as 4-byte steps of `2^shift` from the first page's, `shift` chosen so that
//! the list's span fits: a page's route has bits below `shift` only where two records less
//! than `2^shift` apart straddle its start (about one page in `2^32 / records`), and those
//! few are kept whole beside the steps. Older lists' routes are first routes, with random low
//! bits: they stay 8 bytes.
//!
//! **Offsets** need no memory where pages are whole blocks (aligned pages of the default page
//! size, format 5): page `p` starts at block `p`, but for the few places where a big record's
//! page took several. Elsewhere they take 4 bytes in files under 4 GiB. At 64-byte records
//! (~60 a page) the index holds ~0.07 bytes per record.

use std::cmp::Ordering;

use super::format::{BLOCK, HEADER_LEN};
use crate::order::{KeyOrder, Pivot};

/// Pages a search first narrows by a guess from their routes (see `PageIndex::narrow`).
const GUESS_FROM: u32 = 32;

pub struct PageIndex {
    /// Each page's route: its first record's, or below it and above the previous page's last
    /// record (format 7).
    routes: Routes,
    /// Offset of each page, plus one past the last page.
    offsets: Offsets,
    seps: Option<Separators>,
    /// Whether a page's position is above every record of the page before it (format 3): a
    /// search then finds the one page a position can be in. Older indexes hold routes only,
    /// and records sharing a route (a hash collision) may straddle pages.
    exact: bool,
    /// Whether page routes are rounded (format 7) rather than first records' routes.
    rounded: bool,
}

/// Page routes, in 4 bytes a page where their low bits allow (see the module's doc).
enum Routes {
    Wide(Box<[u64]>),
    Narrow {
        base: u64,
        shift: u32,
        /// `(route - base) >> shift` of each page.
        steps: Box<[u32]>,
        /// The pages whose routes have bits below `shift`, with their routes, by page.
        exact: Box<[(u32, u64)]>,
    },
}

impl Routes {
    fn new(routes: Vec<u64>) -> Routes {
        let (Some(&first), Some(&last)) = (routes.first(), routes.last()) else {
            return Routes::Wide(routes.into());
        };
        // Out of order routes are refused by `decode`; keep them as they are until then.
        let Some(span) = last.checked_sub(first) else {
            return Routes::Wide(routes.into());
        };
        // Steps from `first` rounded down (the first page's route is its first record's, with
        // low bits): one bit more if that rounding takes the last step past 32 bits.
        let mut shift = (u64::BITS - span.leading_zeros()).saturating_sub(u32::BITS);
        if (last - (first >> shift << shift)) >> shift > u64::from(u32::MAX) {
            shift += 1;
        }
        let base = first >> shift << shift;
        let span = last - base;
        let low = (1u64 << shift) - 1;
        let mut exact = Vec::new();
        let mut steps = Vec::with_capacity(routes.len());
        for (p, &r) in routes.iter().enumerate() {
            let Some(d) = r.checked_sub(base).filter(|d| *d <= span) else {
                return Routes::Wide(routes.into());
            };
            if d & low != 0 {
                // Each costs 16 bytes: past one page in 8, 8 bytes a page is less.
                if exact.len() * 8 > routes.len() {
                    return Routes::Wide(routes.into());
                }
                exact.push((p as u32, r));
            }
            steps.push((d >> shift) as u32);
        }
        Routes::Narrow {
            base,
            shift,
            steps: steps.into(),
            exact: exact.into(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Routes::Wide(r) => r.len(),
            Routes::Narrow { steps, .. } => steps.len(),
        }
    }

    fn get(&self, page: usize) -> u64 {
        match self {
            Routes::Wide(r) => r[page],
            Routes::Narrow {
                base,
                shift,
                steps,
                exact,
            } => match exact.binary_search_by_key(&(page as u32), |e| e.0) {
                Ok(i) => exact[i].1,
                Err(_) => base + (u64::from(steps[page]) << shift),
            },
        }
    }

    /// Order page `page`'s route against `route`, reading the exact routes only when the
    /// steps cannot tell.
    #[inline]
    fn cmp_at(&self, page: usize, route: u64) -> Ordering {
        match self {
            Routes::Wide(r) => r[page].cmp(&route),
            Routes::Narrow {
                base,
                shift,
                steps,
                exact,
            } => {
                // The page's route is `at` or, for the few kept whole, less than `2^shift`
                // above it.
                let at = base + (u64::from(steps[page]) << shift);
                if !exact.is_empty() && route >= at && route - at < 1 << shift {
                    self.get(page).cmp(&route)
                } else {
                    at.cmp(&route)
                }
            }
        }
    }

    fn memory(&self) -> usize {
        match self {
            Routes::Wide(r) => r.len() * 8,
            Routes::Narrow { steps, exact, .. } => steps.len() * 4 + exact.len() * 16,
        }
    }
}

/// Page offsets: none at all where pages fill whole blocks, else 4 bytes a page in files under
/// 4 GiB.
enum Offsets {
    Wide(Box<[u64]>),
    Narrow(Box<[u32]>),
    /// Aligned pages (format 5) of a page size of one block: page 0 starts after the header,
    /// and page `p > 0` at block `p + extra`, where `extra` — the blocks that pages larger
    /// than one (a big record's) took beyond theirs — changes at the few pages listed. The
    /// last of the `pages` ends at `end`.
    Blocks {
        pages: u32,
        extra: Box<[(u32, u32)]>,
        end: u64,
    },
}

impl Offsets {
    fn new(offsets: Vec<u64>) -> Offsets {
        if let Some(blocks) = Self::blocks(&offsets) {
            return blocks;
        }
        match offsets.iter().map(|&o| u32::try_from(o)).collect() {
            Ok(narrow) => Offsets::Narrow(narrow),
            Err(_) => Offsets::Wide(offsets.into()),
        }
    }

    /// The offsets as pages of whole blocks, if they are and few pages take more than one.
    fn blocks(offsets: &[u64]) -> Option<Offsets> {
        let (&end, starts) = offsets.split_last()?;
        if starts.first().is_some_and(|&o| o != HEADER_LEN) {
            return None;
        }
        let mut extra = Vec::new();
        let mut current = 0;
        for (p, &o) in starts.iter().enumerate().skip(1) {
            let more = u32::try_from(o / BLOCK).ok()?.checked_sub(p as u32)?;
            if o % BLOCK != 0 || more < current {
                return None;
            }
            if more > current {
                extra.push((p as u32, more));
                current = more;
            }
        }
        // Each change costs 8 bytes, where 4-byte offsets cost 4 a page.
        if extra.len() * 2 > starts.len() {
            return None;
        }
        Some(Offsets::Blocks {
            pages: u32::try_from(starts.len()).ok()?,
            extra: extra.into(),
            end,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> u64 {
        match self {
            Offsets::Wide(o) => o[i],
            Offsets::Narrow(o) => u64::from(o[i]),
            &Offsets::Blocks {
                pages,
                ref extra,
                end,
            } => {
                let page = i as u32;
                if page == pages {
                    end
                } else if page == 0 {
                    HEADER_LEN
                } else {
                    let more = match extra.partition_point(|e| e.0 <= page) {
                        0 => 0,
                        k => extra[k - 1].1,
                    };
                    u64::from(page + more) * BLOCK
                }
            }
        }
    }

    fn memory(&self) -> usize {
        match self {
            Offsets::Wide(o) => o.len() * 8,
            Offsets::Narrow(o) => o.len() * 4,
            Offsets::Blocks { extra, .. } => extra.len() * 8 + 16,
        }
    }
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
            routes: Routes::new(routes),
            offsets: Offsets::new(offsets),
            seps,
            exact: true,
            rounded: true,
        }
    }

    /// Append the format-3 encoding (everything after the filter).
    pub fn encode(&self, order: KeyOrder, out: &mut Vec<u8>) {
        out.push(order.code());
        for p in 0..self.routes.len() {
            out.extend_from_slice(&self.routes.get(p).to_le_bytes());
            out.extend_from_slice(&self.offsets.get(p).to_le_bytes());
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
        index.rounded = version >= 7;
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

    /// Page `page`'s route: its first record's, or in a list of format 7 the roundest route
    /// above the previous page's last record (see the module's doc).
    pub fn route(&self, page: u32) -> u64 {
        self.routes.get(page as usize)
    }

    /// Where page `page` starts; page `pages()` is where the last one ends.
    #[inline]
    pub fn offset(&self, page: u32) -> u64 {
        self.offsets.get(page as usize)
    }
    /// Bytes of pages `a..b`.
    pub fn span_bytes(&self, a: u32, b: u32) -> u64 {
        self.offset(b) - self.offset(a)
    }

    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Whether page routes are rounded between pages (format 7), not first records' routes.
    pub fn is_rounded(&self) -> bool {
        self.rounded
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
        let by_route = self.routes.cmp_at(page as usize, p.0);
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
        let below = |page: u32| {
            let c = self.cmp_page(page, p);
            c.is_lt() || (!strict && c.is_eq())
        };
        let (mut lo, mut hi) = (start, end);
        if self.seps.is_none() && hi - lo > GUESS_FROM {
            (lo, hi) = self.narrow(lo, hi, p.0, below);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo - start
    }

    /// Narrow `lo..hi` down to a few pages around where `route` falls between the first and
    /// the last page's routes, keeping what a search relies on — every page before the range
    /// is `below`, none after it. A hashed list's routes spread evenly, so the guess lands
    /// within a few pages, and the gallop from it touches a few neighbouring entries where a
    /// binary search touches `log2 pages` scattered ones, each a cache miss in a big list's
    /// index. Where routes bunch (an ordered list's pages with no separators), the gallop
    /// takes at most about twice a binary search's steps.
    fn narrow(&self, lo: u32, hi: u32, route: u64, below: impl Fn(u32) -> bool) -> (u32, u32) {
        let (first, last) = (self.route(lo), self.route(hi - 1));
        if route <= first || route >= last {
            return (lo, hi);
        }
        // A float's division: the guess needs no more precision, and a u128's takes ~10 times
        // as long. It rounds down, and `route < last`: the guess is below `hi - 1`.
        let share = (route - first) as f64 / (last - first) as f64 * f64::from(hi - 1 - lo);
        let guess = (lo + share as u32).min(hi - 1);
        let mut step = 1;
        if below(guess) {
            // Pages up to `guess` are below; find one above it.
            let mut at = guess;
            loop {
                let next = at.saturating_add(step).min(hi);
                if next == hi || !below(next) {
                    return (at + 1, next);
                }
                at = next;
                step *= 2;
            }
        } else {
            let mut at = guess;
            loop {
                let next = at.saturating_sub(step).max(lo);
                if below(next) {
                    return (next + 1, at);
                }
                if next == lo {
                    return (lo, at);
                }
                at = next;
                step *= 2;
            }
        }
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
        self.routes.memory() + self.offsets.memory() + seps
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

    proptest::proptest! {
        /// Routes held as steps, with the few that have low bits kept whole, find the pages
        /// that full routes do, and come back exact.
        #[test]
        fn narrow_routes_find_the_pages_wide_ones_do(
            base in proptest::prelude::any::<u64>(),
            span_bits in 1u32..64,
            picks in proptest::collection::vec((proptest::prelude::any::<u64>(), 0u8..20), 1..200),
            probes in proptest::collection::vec(proptest::prelude::any::<u64>(), 50),
        ) {
            let span = (u64::MAX >> (64 - span_bits)).min(u64::MAX - base);
            let shift = (u64::BITS - span.leading_zeros()).saturating_sub(32);
            let mut routes: Vec<u64> = picks
                .iter()
                .map(|&(x, rough)| {
                    let d = x % span.max(1);
                    // Most routes rounded, as format 7 writes them; some not.
                    let d = if rough == 0 { d } else { d >> shift << shift };
                    base + d
                })
                .collect();
            routes.push(base);
            routes.sort();
            let n = routes.len();
            let offsets = (0..=n as u64).map(|i| 16 + i * 100).collect();
            let ix = PageIndex::new(routes.clone(), offsets, &vec![Vec::new(); n]);
            for (p, &r) in routes.iter().enumerate() {
                proptest::prop_assert_eq!(ix.route(p as u32), r);
            }
            let near = routes.iter().flat_map(|&r| [r.wrapping_sub(1), r, r.wrapping_add(1)]);
            for k in probes.into_iter().chain(near) {
                let expect = routes.iter().filter(|&&r| r <= k).count() as u32;
                proptest::prop_assert_eq!(ix.count_below(0, n as u32, (k, b"x"), false), expect);
            }
            proptest::prop_assert!(ix.memory() <= n * 16 + 8);
        }
    }

    proptest::proptest! {
        /// A search of any part of the pages, strict or not, counts what a walk of them
        /// counts, however the routes spread: evenly (where the guess lands near) or bunched,
        /// repeated, or at the ends of the route space (where the gallop goes far).
        #[test]
        fn searches_narrowed_by_a_guess_count_what_a_walk_counts(
            picks in proptest::collection::vec((proptest::prelude::any::<u64>(), 0u8..4), 33..400),
            cut in (proptest::prelude::any::<usize>(), proptest::prelude::any::<usize>()),
            probes in proptest::collection::vec(proptest::prelude::any::<u64>(), 20),
        ) {
            let mut routes: Vec<u64> = picks
                .iter()
                .map(|&(x, shape)| match shape {
                    0 => x,                              // even
                    1 => (x % 1000).pow(6),              // bunched low, sparse high
                    2 => u64::MAX - (x % 64),            // piled at the top
                    _ => x & 0xffff_0000_0000_0000,      // few distinct, repeated
                })
                .collect();
            routes.sort();
            let n = routes.len();
            let offsets = (0..=n as u64).map(|i| 16 + i * 100).collect();
            let ix = PageIndex::new(routes.clone(), offsets, &vec![Vec::new(); n]);
            let (a, b) = (cut.0 % n, cut.1 % n);
            let (start, end) = (a.min(b), a.max(b) + 1);
            let near = routes.iter().flat_map(|&r| [r.wrapping_sub(1), r, r.wrapping_add(1)]);
            for k in probes.into_iter().chain([0, u64::MAX]).chain(near) {
                for strict in [false, true] {
                    let expect = routes[start..end]
                        .iter()
                        .filter(|&&r| if strict { r < k } else { r <= k })
                        .count() as u32;
                    let got = ix.count_below(start as u32, end as u32, (k, b""), strict);
                    proptest::prop_assert_eq!(got, expect, "route {:#x} strict {}", k, strict);
                }
            }
        }
    }

    #[test]
    fn rounded_routes_take_half_the_memory() {
        // The first page's route is its first record's; the rest are rounded.
        let routes: Vec<u64> = (0..1000u64)
            .map(|i| if i == 0 { 12345 } else { (i << 40) + (7 << 30) })
            .collect();
        let offsets = (0..=1000u64).map(|i| 16 + i * 4000).collect();
        let ix = PageIndex::new(routes.clone(), offsets, &vec![Vec::new(); 1000]);
        assert!(matches!(ix.routes, Routes::Narrow { .. }));
        assert_eq!(ix.memory(), 1000 * 4 + 16 + 1001 * 4);
        assert!((0..1000).all(|p| ix.route(p) == routes[p as usize]));
        // First routes, with random low bits, stay whole.
        let routes: Vec<u64> = (0..1000u64).map(|i| (i << 40) | (i * 7919 + 1)).collect();
        let offsets = (0..=1000u64).map(|i| 16 + (i << 32)).collect();
        let ix = PageIndex::new(routes, offsets, &vec![Vec::new(); 1000]);
        assert!(matches!(ix.routes, Routes::Wide(_)));
        assert_eq!(ix.memory(), 1000 * 8 + 1001 * 8);
    }

    /// Pages of whole blocks need no offsets, but where a big record's page takes more.
    #[test]
    fn offsets_of_aligned_pages_are_implied() {
        let check = |offsets: Vec<u64>, blocks: bool| {
            let o = Offsets::new(offsets.clone());
            assert_eq!(matches!(o, Offsets::Blocks { .. }), blocks, "{offsets:?}");
            for (i, &want) in offsets.iter().enumerate() {
                assert_eq!(o.get(i), want, "offset {i} of {offsets:?}");
            }
        };
        check(vec![16, 4096, 8192, 16384, 20480, 20500], true);
        check(vec![16, 4096, 12288, 16384, 28672, 30000], true);
        check(vec![16, 9000], true);
        check(vec![700], true);
        // Pages sharing a block (a smaller page size), or a page not at a block's start.
        check(vec![16, 2048, 4096, 5000], false);
        check(vec![16, 4096, 8200, 9000], false);
        check(vec![16 + 4096, 8192, 9000], false);
        // A list of only big pages: more changes than pays.
        let big: Vec<u64> = (0..20u64)
            .map(|p| if p == 0 { 16 } else { p * p * 4096 })
            .collect();
        check(big, false);
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
