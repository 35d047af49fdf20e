//! What a forward scan returned, counted as the adapter walks the engine's iterator, so that
//! the harness can check a scan (order, start, length) without keeping its records.

/// One forward scan's records, in figures. Every adapter builds it with [`ScanTally`], so every
/// engine pays for the same bookkeeping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanResult {
    /// Records returned (at most the scan's limit).
    pub records: u64,
    /// Their key + value bytes.
    pub bytes: u64,
    /// Whether the first record's key was `start` itself: a scan from a present key must begin
    /// there.
    pub began_at_start: bool,
    /// Records whose key was not above the one before (for the first: below `start`); zero
    /// from a correct ordered engine.
    pub out_of_order: u64,
    /// Whether the scan stopped because no key was left, not at its limit: a scan may only
    /// come back short at the end of the key space.
    pub reached_end: bool,
}

/// Builds a [`ScanResult`] record by record. It copies each key (8 bytes here) to compare it
/// with the next: the order check is what makes a scan's figures trustworthy.
#[derive(Debug)]
pub struct ScanTally<'a> {
    start: &'a [u8],
    limit: u64,
    last: Vec<u8>,
    result: ScanResult,
}

impl<'a> ScanTally<'a> {
    /// A scan from the first key `>= start`, of at most `limit` records.
    pub fn new(start: &'a [u8], limit: usize) -> ScanTally<'a> {
        ScanTally {
            start,
            limit: u64::try_from(limit).unwrap_or(u64::MAX),
            last: Vec::new(),
            result: ScanResult::default(),
        }
    }

    /// Whether the scan wants another record (it has fewer than `limit`).
    pub fn wants_more(&self) -> bool {
        self.result.records < self.limit
    }

    /// Count the next record the engine returned.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let r = &mut self.result;
        if r.records == 0 {
            r.began_at_start = key == self.start;
            if key < self.start {
                r.out_of_order += 1;
            }
        } else if key <= self.last.as_slice() {
            r.out_of_order += 1;
        }
        self.last.clear();
        self.last.extend_from_slice(key);
        r.records += 1;
        r.bytes += (key.len() + value.len()) as u64;
    }

    /// The scan ended: at its limit, or with `reached_end` when the engine had no key left.
    pub fn finish(self, reached_end: bool) -> ScanResult {
        ScanResult {
            reached_end,
            ..self.result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_records_bytes_and_checks_order_and_start() {
        let mut t = ScanTally::new(b"b", 10);
        for k in [&b"b"[..], b"c", b"d"] {
            assert!(t.wants_more());
            t.add(k, b"vv");
        }
        let r = t.finish(true);
        assert_eq!(
            r,
            ScanResult {
                records: 3,
                bytes: 9,
                began_at_start: true,
                out_of_order: 0,
                reached_end: true
            }
        );

        let mut t = ScanTally::new(b"c", 3);
        for k in [&b"b"[..], b"d", b"d"] {
            t.add(k, b"");
        }
        assert!(!t.wants_more(), "the limit is reached");
        let r = t.finish(false);
        // Below the start, then a repeated key.
        assert_eq!((r.out_of_order, r.began_at_start, r.records), (2, false, 3));

        let mut t = ScanTally::new(b"", usize::MAX);
        t.add(b"a", b"x");
        assert!(t.wants_more());
        let r = t.finish(true);
        assert_eq!((r.out_of_order, r.began_at_start), (0, false));
        assert_eq!(ScanTally::new(b"", 0).finish(false).records, 0);
    }
}
