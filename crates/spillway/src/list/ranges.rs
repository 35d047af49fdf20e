//! The range deletes a list carries (issue 30): key ranges in which every record of the lists
//! *older* than this one is gone. Kept beside the pages, in the list's metadata and in memory,
//! so that a point read asks them without a read of the disk, and a spill hands them on to
//! the lists it writes below (see `tree::spill`).
//!
//! Within a list every record in one of its ranges is newer than the range: the merge that
//! wrote the list dropped the older ones. So the ranges of a list make one set — their union,
//! as disjoint sorted intervals — whatever the order they were written in.
//!
//! ```text
//! n u32 | (start_len varint | start | end_len + 1 varint (0: no end) | end)·n
//! ```
//!
//! Ranges are of keys, in key order: an ordered keyspace's position order. A hashed keyspace
//! holds only the range of every key (`clear`).

use crate::order::{cmp_pos, KeyOrder, Pivot, Span};
use crate::record::{get_varint, put_varint};

/// A set of key ranges `[start, end)` (`end` `None`: every key from `start` on), kept as
/// disjoint intervals in key order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl RangeSet {
    /// No range.
    pub const fn new() -> RangeSet {
        RangeSet { ranges: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The ranges, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.ranges
            .iter()
            .map(|(s, e)| (s.as_slice(), e.as_deref()))
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Add `[start, end)` (nothing if it is empty).
    pub fn insert(&mut self, start: &[u8], end: Option<&[u8]>) {
        if end.is_some_and(|e| e <= start) {
            return;
        }
        let (mut start, mut end) = (start.to_vec(), end.map(<[u8]>::to_vec));
        // Absorb every range that overlaps or touches the new one.
        let first = self
            .ranges
            .partition_point(|(_, e)| e.as_deref().is_some_and(|e| e < start.as_slice()));
        let mut last = first;
        while last < self.ranges.len()
            && end
                .as_deref()
                .is_none_or(|e| self.ranges[last].0.as_slice() <= e)
        {
            let (s, e) = &self.ranges[last];
            if s < &start {
                start = s.clone();
            }
            end = match (end, e) {
                (Some(a), Some(b)) => Some(a.max(b.clone())),
                _ => None,
            };
            last += 1;
        }
        self.ranges.splice(first..last, [(start, end)]);
    }

    /// The positions of the range covering `key`, if one does, in a keyspace of `order`.
    pub fn span_of(&self, key: &[u8], order: KeyOrder) -> Option<Span> {
        if !self.covers(key) {
            return None;
        }
        if order == KeyOrder::Hashed {
            return Some(Span::all()); // the range of every key
        }
        let i = self.ranges.partition_point(|(s, _)| s.as_slice() <= key);
        let (s, e) = &self.ranges[i - 1];
        let pivot = |k: &[u8]| Pivot::new(order.route(k), k);
        Some(Span::new(pivot(s), e.as_deref().map(pivot)))
    }

    /// Whether every key in `[lo, hi)` (`hi` `None`: every key from `lo` on) is in one range;
    /// in a hashed keyspace (`ordered` false), whether the set holds every key.
    pub fn covers_all(&self, lo: &[u8], hi: Option<&[u8]>, ordered: bool) -> bool {
        if !ordered {
            return self
                .ranges
                .first()
                .is_some_and(|(s, e)| s.is_empty() && e.is_none());
        }
        let i = self.ranges.partition_point(|(s, _)| s.as_slice() <= lo);
        i > 0 && {
            let end = self.ranges[i - 1].1.as_deref();
            match (end, hi) {
                (None, _) => true,
                (Some(_), None) => false,
                (Some(e), Some(h)) => h <= e,
            }
        }
    }

    /// Every range of `other` added.
    pub fn extend(&mut self, other: &RangeSet) {
        for (s, e) in &other.ranges {
            self.insert(s, e.as_deref());
        }
    }

    /// Whether `key` is in a range.
    pub fn covers(&self, key: &[u8]) -> bool {
        // Most keys a read asks of a list lie outside all its ranges: two comparisons.
        let (Some(first), Some(last)) = (self.ranges.first(), self.ranges.last()) else {
            return false;
        };
        if key < first.0.as_slice() || last.1.as_deref().is_some_and(|e| key >= e) {
            return false;
        }
        let i = self.ranges.partition_point(|(s, _)| s.as_slice() <= key);
        i > 0 && self.ranges[i - 1].1.as_deref().is_none_or(|e| key < e)
    }

    /// The ranges that meet `span` — whole: a list only ever asks about keys in its span —
    /// for a keyspace in `ordered` key order (in a hashed one, positions are not keys: every
    /// range, which is then the range of every key, meets every span). Spans are of
    /// positions, whose pivots may hold a route and no key bytes: keys are compared as
    /// positions.
    pub fn meeting(&self, span: &Span, ordered: bool) -> RangeSet {
        if !ordered {
            return self.clone();
        }
        let pos = |k: &[u8]| (KeyOrder::Ordered.route(k), k.to_vec());
        let ranges = self
            .ranges
            .iter()
            .filter(|(s, e)| {
                let s = pos(s);
                let below_hi = span
                    .hi
                    .as_ref()
                    .is_none_or(|hi| cmp_pos((s.0, &s.1), hi.as_pos()).is_lt());
                let above_lo = e.as_deref().is_none_or(|e| {
                    let e = pos(e);
                    cmp_pos((e.0, &e.1), span.lo.as_pos()).is_gt()
                });
                below_hi && above_lo
            })
            .cloned()
            .collect();
        RangeSet { ranges }
    }

    pub fn memory(&self) -> usize {
        self.ranges
            .iter()
            .map(|(s, e)| 48 + s.len() + e.as_ref().map_or(0, Vec::len))
            .sum()
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.ranges.len() as u32).to_le_bytes());
        for (s, e) in &self.ranges {
            put_varint(out, s.len() as u64);
            out.extend_from_slice(s);
            match e {
                Some(e) => {
                    put_varint(out, e.len() as u64 + 1);
                    out.extend_from_slice(e);
                }
                None => put_varint(out, 0),
            }
        }
    }

    /// Decode what [`encode`](Self::encode) wrote, all of `data`; `None` if malformed (or not
    /// disjoint and sorted, which a writer never makes).
    pub fn decode(data: &[u8]) -> Option<RangeSet> {
        let n = u32::from_le_bytes(data.get(..4)?.try_into().ok()?) as usize;
        let mut ranges = Vec::with_capacity(n.min(data.len()));
        let mut p = 4;
        for _ in 0..n {
            let slen = usize::try_from(get_varint(data, &mut p)?).ok()?;
            let s = data.get(p..p.checked_add(slen)?)?.to_vec();
            p += slen;
            let elen = get_varint(data, &mut p)?;
            let e = if elen == 0 {
                None
            } else {
                let elen = usize::try_from(elen - 1).ok()?;
                let e = data.get(p..p.checked_add(elen)?)?.to_vec();
                p += elen;
                Some(e)
            };
            ranges.push((s, e));
        }
        let sorted = ranges.windows(2).all(|w| {
            let (_, e0) = &w[0];
            e0.as_ref().is_some_and(|e0| e0 < &w[1].0)
        });
        let nonempty = ranges.iter().all(|(s, e)| e.as_ref().is_none_or(|e| s < e));
        (p == data.len() && sorted && nonempty).then_some(RangeSet { ranges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_the_union_of_its_ranges() {
        let mut s = RangeSet::default();
        s.insert(b"c", Some(b"e"));
        s.insert(b"a", Some(b"b"));
        s.insert(b"d", Some(b"g")); // overlaps c..e
        s.insert(b"g", Some(b"h")); // touches d..g
        s.insert(b"x", None);
        s.insert(b"q", Some(b"q")); // empty
        assert_eq!(s.len(), 3);
        for (k, inside) in [
            (&b"a"[..], true),
            (b"ab", true),
            (b"b", false),
            (b"c", true),
            (b"gz", true),
            (b"h", false),
            (b"q", false),
            (b"x", true),
            (b"\xff\xff", true),
            (b"", false),
        ] {
            assert_eq!(s.covers(k), inside, "{k:?}");
        }
        s.insert(b"", Some(b"zz"));
        assert_eq!(s, {
            let mut all = RangeSet::default();
            all.insert(b"", None);
            all
        });
        assert!(s.covers(b""));
        let mut enc = Vec::new();
        s.encode(&mut enc);
        assert_eq!(RangeSet::decode(&enc), Some(s));
        let mut many = RangeSet::default();
        for i in (0..1000u32).rev() {
            many.insert(&(i * 10).to_be_bytes(), Some(&(i * 10 + 5).to_be_bytes()));
        }
        assert_eq!(many.len(), 1000);
        assert!(many.covers(&42u32.to_be_bytes()) && !many.covers(&47u32.to_be_bytes()));
        let mut enc = Vec::new();
        many.encode(&mut enc);
        assert_eq!(RangeSet::decode(&enc).as_ref(), Some(&many));
        for cut in 0..enc.len().min(50) {
            assert!(RangeSet::decode(&enc[..cut]).is_none());
        }
    }
}
