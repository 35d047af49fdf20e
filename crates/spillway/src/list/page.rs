//! One page of a list file: its records, and the trailer that checks them.
//!
//! ```text
//! format 10:   records | zero padding
//!              | segments × (first route u64 | end u32 | crc32c(the segment's records) u32)
//!              | segment count u16 | pad_len u16 | crc32c(segments ‖ count ‖ pad_len) u32
//! formats 5–9: records | zero padding | pad_len u16 | crc32c(records ‖ padding ‖ pad_len) u32
//! formats 1–4: records | crc32c(records) u32
//! ```
//!
//! **Segments** (format 10). A point read needs one key's records, but a page with one
//! checksum must be hashed whole before any of it is trusted, and then scanned up to the key:
//! at 16-byte records most of a GET's time goes to the 4 KiB page's checksum and scan (see
//! BENCHMARKS.md, "Point reads through memory maps"). Smaller pages cut both, but each page
//! costs the in-memory index a route and an offset. So a page is cut into segments of about
//! [`SEGMENT`] bytes of records, each with its own checksum, and a small directory at the
//! page's end gives each segment's first route. A GET checks the directory, picks the one
//! segment the key's route can be in, checks it and scans it: a small page's work for a big
//! page's index memory, still one read of one block from the device. A key's records (a
//! merge stack) never straddle segments, as they never straddle pages; where records of one
//! route do (keys sharing a route), a read walks back to the segment before, as it does to
//! the page before.
//!
//! Padding is outside every checksum of format 10 (a GET never reads it): a whole-page read
//! checks that it is zeros.

use std::ops::Range;

use super::format::CRC_LEN;

/// Bytes of records a segment holds before the next key starts a new one (format 10).
pub const SEGMENT: usize = 512;
/// Directory entries a read's prefetch loads ahead: a 4 KiB page's segments and a few more.
const SEGMENTS_PREFETCHED: usize = 9;
/// Bytes of one segment's directory entry: first route, end, checksum.
const ENTRY: usize = 8 + 4 + CRC_LEN;
/// Bytes of a format 10 page's trailer after its segment entries: count, pad_len, checksum.
const TAIL: usize = 2 + 2 + CRC_LEN;

/// How a list's pages end (by its format version).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Formats 1–4: a checksum of the records.
    Plain,
    /// Formats 5–9: padding to a block's end, its length, a checksum of all of it.
    Padded,
    /// Format 10: padding, then segments with a checksum each (see the module's doc).
    Segmented,
}

impl Layout {
    pub fn of(version: u32) -> Layout {
        match version {
            ..=4 => Layout::Plain,
            5..=9 => Layout::Padded,
            _ => Layout::Segmented,
        }
    }

    /// The fewest bytes a page of this layout can take: one record of 2 bytes, one segment.
    pub fn least_page(self) -> usize {
        2 + match self {
            Layout::Plain => CRC_LEN,
            Layout::Padded => 2 + CRC_LEN,
            Layout::Segmented => trailer_len(1),
        }
    }

    /// Bytes after a page's records and padding: the trailer. `page` is a whole page.
    fn trailer(self, page: &[u8]) -> usize {
        match self {
            Layout::Plain => CRC_LEN,
            Layout::Padded => 2 + CRC_LEN,
            Layout::Segmented => trailer_len(usize::from(u16_at(page, page.len() - TAIL))),
        }
    }

    /// Padding bytes between the records of `page` (a whole page, checked) and its trailer.
    pub fn padding(self, page: &[u8]) -> usize {
        match self {
            Layout::Plain => 0,
            _ => usize::from(u16_at(page, page.len() - CRC_LEN - 2)),
        }
    }

    /// Where the records of `page` (a whole page, checked) end.
    pub fn records_end(self, page: &[u8]) -> usize {
        page.len() - self.trailer(page) - self.padding(page)
    }

    /// Check a whole page: its checksums, that its trailer's lengths fit it, and (format 10)
    /// that its padding is zeros.
    pub fn verify(self, page: &[u8]) -> Result<(), &'static str> {
        if page.len() < CRC_LEN {
            return Err("is too short for a page");
        }
        let (data, crc) = page.split_at(page.len() - CRC_LEN);
        match self {
            Layout::Plain | Layout::Padded => {
                if crc_fast::crc32_iscsi(data).to_le_bytes() != crc {
                    return Err("fails its checksum");
                }
                if self == Layout::Padded
                    && (page.len() < 2 + CRC_LEN
                        || self.padding(page) > page.len() - self.trailer(page))
                {
                    return Err("is padded past its start");
                }
                Ok(())
            }
            Layout::Segmented => {
                let segments = Segments::read(page)?;
                for i in 0..segments.count {
                    segments.check(i)?;
                }
                let end = segments.records_end();
                if page[end..end + self.padding(page)].iter().any(|&b| b != 0) {
                    return Err("has padding that is not zeros");
                }
                Ok(())
            }
        }
    }

    /// Where in `page` (a whole page, unchecked) the records of a key of route `route` can
    /// be: the ranges to search, most likely first, each checked as it is handed out, and
    /// whether it starts at `route` (a range after which the route's records may have begun).
    /// A page of one checksum is checked whole and is one range.
    pub fn candidates(self, page: &[u8], route: u64) -> Result<Candidates<'_>, &'static str> {
        match self {
            Layout::Plain | Layout::Padded => {
                self.verify(page)?;
                Ok(Candidates::Whole(Some(0..self.records_end(page))))
            }
            Layout::Segmented => {
                let segments = Segments::read(page)?;
                // The last segment starting at or below the route; records of that route may
                // also end the segments before it, when they start with it.
                let next = segments.first_above(route);
                Ok(Candidates::Segments {
                    segments,
                    next,
                    route,
                })
            }
        }
    }

    /// Start loading what a point read of `route` in `page` will touch first, before it
    /// touches anything: the segment directory at the page's end, and the segment the route
    /// probably falls in — where `route` lies between the page's first route `lo` and the
    /// next page's `hi`, records being spread evenly over routes in a hashed list. The read
    /// then waits for one cache miss where it waited for two in turn (the directory, then
    /// the segment it names). Only a hint: a wrong guess costs a few lines of bandwidth.
    #[inline]
    pub fn prefetch(self, page: &[u8], route: u64, (lo, hi): (u64, u64)) {
        use crate::util::prefetch::prefetch;
        if self != Layout::Segmented || page.len() < trailer_len(1) || hi <= lo {
            return;
        }
        const LINE: usize = 64;
        let dir = page.len().saturating_sub(trailer_len(SEGMENTS_PREFETCHED));
        let mut at = dir & !(LINE - 1);
        while at < page.len() {
            prefetch(page, at);
            at += LINE;
        }
        // A float's division: the guess needs no more precision, and a u128's takes ~10 times
        // as long.
        let share = (route.saturating_sub(lo) as f64 / (hi - lo) as f64 * dir as f64) as usize;
        // The key's segment starts up to a segment before the key's guessed place.
        let from = share.saturating_sub(SEGMENT + LINE) & !(LINE - 1);
        let mut at = from;
        while at <= share.min(dir) {
            prefetch(page, at);
            at += LINE;
        }
    }

    /// Each segment of `page` (a whole page, checked): its first route and its records.
    /// Pages of formats before 10 are one segment, with no route.
    pub fn segments(self, page: &[u8]) -> Vec<(Option<u64>, Range<usize>)> {
        match self {
            Layout::Segmented => match Segments::read(page) {
                Ok(s) => (0..s.count)
                    .map(|i| (Some(s.route(i)), s.range(i)))
                    .collect(),
                Err(_) => Vec::new(),
            },
            _ => vec![(None, 0..self.records_end(page))],
        }
    }
}

/// Bytes of a format 10 page's trailer with `segments` segments.
pub const fn trailer_len(segments: usize) -> usize {
    segments * ENTRY + TAIL
}

/// Append the trailer of format 10 to `page`, its records followed by `pad` zero bytes:
/// `segments` are the segments' first routes and where their records start.
pub fn finish(page: &mut Vec<u8>, segments: &[(u64, usize)], pad: usize) {
    debug_assert!(
        segments.first().is_some_and(|s| s.1 == 0),
        "a segment starts the page"
    );
    let records_end = page.len();
    page.resize(records_end + pad, 0);
    let dir = page.len();
    for (i, &(route, start)) in segments.iter().enumerate() {
        let end = segments.get(i + 1).map_or(records_end, |s| s.1);
        debug_assert!(start < end, "a segment holds a record");
        let crc = crc_fast::crc32_iscsi(&page[start..end]);
        page.extend_from_slice(&route.to_le_bytes());
        page.extend_from_slice(&u32::try_from(end).expect("pages under 4 GiB").to_le_bytes());
        page.extend_from_slice(&crc.to_le_bytes());
    }
    let count = u16::try_from(segments.len()).expect("segments of a page fit a u16");
    page.extend_from_slice(&count.to_le_bytes());
    page.extend_from_slice(&u16::try_from(pad).expect("under a block").to_le_bytes());
    let crc = crc_fast::crc32_iscsi(&page[dir..]);
    page.extend_from_slice(&crc.to_le_bytes());
}

/// The ranges of a page a key's records can be in, checked as they are handed out.
pub enum Candidates<'a> {
    Whole(Option<Range<usize>>),
    Segments {
        segments: Segments<'a>,
        /// One past the next segment to hand out.
        next: usize,
        route: u64,
    },
}

/// A range of a page to search, and whether it starts at the route searched for.
pub type Candidate = (Range<usize>, bool);

impl Iterator for Candidates<'_> {
    type Item = Result<Candidate, &'static str>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Candidates::Whole(range) => range.take().map(|r| Ok((r, false))),
            Candidates::Segments {
                segments,
                next,
                route,
            } => {
                // The segment before is a candidate only if this one starts at the route: the
                // route's records may then have begun before it.
                let i = next.checked_sub(1)?;
                let more = segments.route(i) == *route;
                *next = if more { i } else { 0 };
                Some(segments.check(i).map(|()| (segments.range(i), more)))
            }
        }
    }
}

/// A format 10 page's segment directory, its checksum checked.
pub struct Segments<'a> {
    page: &'a [u8],
    /// Where the entries start.
    dir: usize,
    count: usize,
}

impl<'a> Segments<'a> {
    /// The directory of `page` (a whole page), checked: its checksum, and that its ends rise
    /// within the page's records.
    fn read(page: &'a [u8]) -> Result<Segments<'a>, &'static str> {
        if page.len() < trailer_len(1) {
            return Err("is too short for a page");
        }
        let count = usize::from(u16_at(page, page.len() - TAIL));
        let Some(dir) = page.len().checked_sub(trailer_len(count)) else {
            return Err("has more segments than fit it");
        };
        let (data, crc) = page[dir..].split_at(page.len() - dir - CRC_LEN);
        if crc_fast::crc32_iscsi(data).to_le_bytes() != crc {
            return Err("fails its checksum");
        }
        let s = Segments { page, dir, count };
        let pad = Layout::Segmented.padding(page);
        let rising = (0..count).all(|i| s.start(i) < s.end(i));
        if count == 0 || !rising || s.end(count - 1) + pad != dir {
            return Err("has a segment directory that does not fit its records");
        }
        Ok(s)
    }

    fn entry(&self, i: usize) -> usize {
        self.dir + i * ENTRY
    }
    fn route(&self, i: usize) -> u64 {
        let at = self.entry(i);
        u64::from_le_bytes(self.page[at..at + 8].try_into().unwrap())
    }
    fn end(&self, i: usize) -> usize {
        let at = self.entry(i) + 8;
        u32::from_le_bytes(self.page[at..at + 4].try_into().unwrap()) as usize
    }
    fn start(&self, i: usize) -> usize {
        i.checked_sub(1).map_or(0, |j| self.end(j))
    }
    fn range(&self, i: usize) -> Range<usize> {
        self.start(i)..self.end(i)
    }
    fn records_end(&self) -> usize {
        self.end(self.count - 1)
    }

    /// One past the last segment whose first route is at most `route` (at least 1: the first
    /// segment is the one to search for a route below every segment's).
    fn first_above(&self, route: u64) -> usize {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.route(mid) <= route {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.max(1)
    }

    /// Check segment `i`'s records against its checksum.
    fn check(&self, i: usize) -> Result<(), &'static str> {
        let at = self.entry(i) + 12;
        let crc = &self.page[at..at + CRC_LEN];
        match crc_fast::crc32_iscsi(&self.page[self.range(i)]).to_le_bytes() == crc {
            true => Ok(()),
            false => Err("fails a segment's checksum"),
        }
    }
}

fn u16_at(page: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([page[at], page[at + 1]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of `records` (route, bytes), cut into segments where `cuts` says, padded.
    fn page(records: &[(u64, &[u8])], cuts: &[usize], pad: usize) -> Vec<u8> {
        let mut page = Vec::new();
        let mut segments = Vec::new();
        for (i, (route, bytes)) in records.iter().enumerate() {
            if i == 0 || cuts.contains(&i) {
                segments.push((*route, page.len()));
            }
            page.extend_from_slice(bytes);
        }
        finish(&mut page, &segments, pad);
        page
    }

    #[test]
    fn a_route_finds_its_segment_and_the_ones_it_may_have_begun_in() {
        let records: [(u64, &[u8]); 6] = [
            (10, b"aa"),
            (20, b"bb"),
            (30, b"cc"),
            (30, b"dd"),
            (30, b"ee"),
            (40, b"ff"),
        ];
        let p = page(&records, &[2, 3, 5], 3);
        let l = Layout::Segmented;
        l.verify(&p).unwrap();
        assert_eq!(l.records_end(&p), 12);
        assert_eq!(l.padding(&p), 3);
        let found = |route| -> Vec<Range<usize>> {
            l.candidates(&p, route)
                .unwrap()
                .map(|c| c.unwrap().0)
                .collect()
        };
        // Segments: 0..4 (10, 20), 4..6 (30), 6..10 (30, 30), 10..12 (40).
        assert_eq!(found(5), vec![0..4]);
        assert_eq!(found(20), vec![0..4]);
        assert_eq!(found(25), vec![0..4]);
        assert_eq!(found(30), vec![6..10, 4..6, 0..4]);
        assert_eq!(found(35), vec![6..10]);
        assert_eq!(found(u64::MAX), vec![10..12]);
        let segments = l.segments(&p);
        assert_eq!(segments.len(), 4);
        assert_eq!(segments[2], (Some(30), 6..10));
    }

    #[test]
    fn every_flipped_bit_is_caught() {
        let records: [(u64, &[u8]); 3] = [(1, b"abc"), (2, b"def"), (3, b"ghi")];
        let p = page(&records, &[1, 2], 2);
        for bit in 0..p.len() * 8 {
            let mut bad = p.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Layout::Segmented.verify(&bad).is_err(), "bit {bit}");
            // A read of route 2 looks at segments 1 and 0 (bytes 0..6), and at the directory:
            // a flip anywhere else but the last segment and the padding fails it.
            let read: Result<Vec<_>, _> = match Layout::Segmented.candidates(&bad, 2) {
                Ok(c) => c.collect(),
                Err(e) => Err(e),
            };
            let skipped = (6..11).contains(&(bit / 8));
            assert!(read.is_err() || skipped, "bit {bit}");
        }
    }

    #[test]
    fn damaged_directories_are_refused_not_trusted() {
        let records: [(u64, &[u8]); 2] = [(1, b"abc"), (2, b"def")];
        let p = page(&records, &[1], 0);
        // A count too large for the page, with a checksum that matches it.
        let mut bad = p.clone();
        let n = bad.len();
        bad[n - TAIL..n - TAIL + 2].copy_from_slice(&40u16.to_le_bytes());
        assert!(Layout::Segmented.verify(&bad).is_err());
        // Ends that do not rise, re-checksummed: refused, not read out of bounds.
        let mut bad = p.clone();
        let dir = n - trailer_len(2);
        bad[dir + 8..dir + 12].copy_from_slice(&9u32.to_le_bytes());
        let crc = crc_fast::crc32_iscsi(&bad[dir..n - CRC_LEN]);
        bad[n - CRC_LEN..].copy_from_slice(&crc.to_le_bytes());
        assert!(Layout::Segmented.verify(&bad).is_err());
        assert!(Layout::Segmented.candidates(&bad, 1).is_err());
        assert!(Layout::Segmented.verify(&[0; 3]).is_err());
    }
}
