//! Where a key lives: the one place hashed and ordered stores differ.
//!
//! Every record has a *position* `(route, key)`, and everything below the root buffer — lists,
//! page indexes, node ranges, spills, splits, merges — works on positions alone. Only the
//! route differs between the two kinds of store ([`KeyOrder`]):
//!
//! - **hashed**: the route is the key's 64-bit xxh3 hash, so keys spread evenly over the tree
//!   whatever they look like (the WB tree of the paper);
//! - **ordered**: the route is the key's first 8 bytes, big-endian and zero-padded. That map
//!   never reverses the order of two keys, so position order *is* key order, and the same
//!   machinery keeps the tree in key order for range scans.
//!
//! Where many keys share their first 8 bytes (`user:0000…`, table prefixes) routes tie, and
//! node boundaries ([`Pivot`]s) and page separators carry key bytes to split between them.

use std::cmp::Ordering;

/// How a store places its keys, chosen when it is created and recorded in its manifest.
///
/// ```
/// let opts = spillway::Options::default().key_order(spillway::KeyOrder::Ordered);
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spillway::Db::open(dir.path(), opts)?;
/// db.put("b", "2")?;
/// db.put("a", "1")?;
/// let keys: Vec<Vec<u8>> = db.iter().map(|r| r.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
/// # Ok::<(), spillway::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyOrder {
    /// Keys placed by hash: point reads and writes only, and [`Db::iter`](crate::Db::iter)
    /// in hash order. Writes spread evenly whatever the keys look like.
    #[default]
    Hashed,
    /// Keys kept in byte order: everything a hashed store does, plus
    /// [`Db::range`](crate::Db::range) and [`Db::prefix`](crate::Db::prefix) scans.
    Ordered,
}

impl KeyOrder {
    /// The key's route: its 64-bit hash (xxh3) in a hashed store, its first 8 bytes
    /// (big-endian, zero-padded) in an ordered one. Iterators return keys by route, then by
    /// key among keys of one route; [`Iter::seek_route`](crate::Iter::seek_route) resumes a
    /// scan from a route, which fits in a number where a key would not (Redis's `SCAN`
    /// cursors).
    ///
    /// ```
    /// use spillway::KeyOrder;
    /// assert_eq!(KeyOrder::Ordered.route(b"ab"), 0x6162 << 48);
    /// assert_ne!(KeyOrder::Hashed.route(b"ab"), KeyOrder::Hashed.route(b"ac"));
    /// ```
    #[inline]
    pub fn route(self, key: &[u8]) -> u64 {
        match self {
            KeyOrder::Hashed => hash(key),
            KeyOrder::Ordered => prefix_route(key),
        }
    }

    /// The hash that filters and the root buffer's table use: the route where that is a hash
    /// already, so a hashed store hashes each key once.
    #[inline]
    pub(crate) fn hash(self, route: u64, key: &[u8]) -> u64 {
        match self {
            KeyOrder::Hashed => route,
            KeyOrder::Ordered => hash(key),
        }
    }

    /// The byte recorded in manifests and list files.
    pub(crate) fn code(self) -> u8 {
        match self {
            KeyOrder::Hashed => 0,
            KeyOrder::Ordered => 1,
        }
    }

    pub(crate) fn from_code(code: u8) -> Option<KeyOrder> {
        match code {
            0 => Some(KeyOrder::Hashed),
            1 => Some(KeyOrder::Ordered),
            _ => None,
        }
    }
}

impl std::fmt::Display for KeyOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyOrder::Hashed => "hashed",
            KeyOrder::Ordered => "ordered",
        })
    }
}

#[inline]
fn hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// The first 8 bytes of `key`, big-endian, zero-padded: `a < b` implies
/// `prefix_route(a) <= prefix_route(b)`.
#[inline]
fn prefix_route(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// Order two positions.
#[inline]
pub fn cmp_pos(a: (u64, &[u8]), b: (u64, &[u8])) -> Ordering {
    a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// A boundary between positions: every position at or above it is on its right. Hashed
/// stores split between routes, so their pivots carry no key bytes; ordered stores need them
/// only where the keys on both sides share a route.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pivot {
    pub route: u64,
    pub key: Box<[u8]>,
}

impl Pivot {
    pub fn new(route: u64, key: &[u8]) -> Pivot {
        Pivot {
            route,
            key: key.into(),
        }
    }

    /// A pivot between two records, `a < b`: at or below `b` and above `a`, with as few key
    /// bytes as that takes (none when their routes differ).
    pub fn between(a: (u64, &[u8]), b: (u64, &[u8])) -> Pivot {
        debug_assert!(cmp_pos(a, b).is_lt());
        if a.0 != b.0 {
            return Pivot::new(b.0, &[]);
        }
        Pivot::new(b.0, shortest_separator(a.1, b.1))
    }

    pub fn as_pos(&self) -> (u64, &[u8]) {
        (self.route, &self.key)
    }

    /// Whether position `p` is at or above this pivot.
    #[inline]
    pub fn le(&self, p: (u64, &[u8])) -> bool {
        cmp_pos(self.as_pos(), p).is_le()
    }
}

/// The shortest prefix of `b` above `a` (`a < b`): what a page index or a pivot must keep of
/// `b` to tell the two apart.
pub fn shortest_separator<'b>(a: &[u8], b: &'b [u8]) -> &'b [u8] {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    &b[..(common + 1).min(b.len())]
}

/// The roundest route in `prev + 1..=next` (`prev < next`): `next` with every bit below the
/// highest one where the two differ cleared. A page index keeps this for a page whose first
/// route differs from the previous page's last (format 7): it tells the pages apart as well,
/// and its zero low bits let the index hold it in 4 bytes (see `index`).
pub fn round_route(prev: u64, next: u64) -> u64 {
    debug_assert!(prev < next);
    let high = 63 - (prev ^ next).leading_zeros();
    next >> high << high
}

/// A half-open range of positions `lo..hi` (`hi: None` reaches past every position): what a
/// node owns and what a list view covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub lo: Pivot,
    pub hi: Option<Pivot>,
}

impl Span {
    /// Every position.
    pub fn all() -> Span {
        Span::default()
    }

    pub fn new(lo: Pivot, hi: Option<Pivot>) -> Span {
        Span { lo, hi }
    }

    #[inline]
    pub fn contains(&self, p: (u64, &[u8])) -> bool {
        self.lo.le(p) && !self.is_above(p)
    }

    /// Whether `p` is at or past the end.
    #[inline]
    pub fn is_above(&self, p: (u64, &[u8])) -> bool {
        self.hi.as_ref().is_some_and(|h| h.le(p))
    }

    /// Whether `p` is strictly inside: a pivot there splits the span in two non-empty parts.
    pub fn splits_at(&self, p: &Pivot) -> bool {
        self.lo < *p && self.hi.as_ref().is_none_or(|h| p < h)
    }

    pub fn is_empty(&self) -> bool {
        self.hi.as_ref().is_some_and(|h| *h <= self.lo)
    }

    /// The positions in both spans.
    pub fn intersect(&self, other: &Span) -> Span {
        let lo = self.lo.clone().max(other.lo.clone());
        let hi = match (&self.hi, &other.hi) {
            (Some(a), Some(b)) => Some(a.min(b).clone()),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
        Span { lo, hi }
    }
}

impl std::fmt::Display for Pivot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.route)?;
        if !self.key.is_empty() {
            write!(f, "/{}", self.key.escape_ascii())?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.hi {
            Some(hi) => write!(f, "{}..{}", self.lo, hi),
            None => write!(f, "{}..", self.lo),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn ordered_positions_sort_as_keys(a in proptest::collection::vec(any::<u8>(), 0..12),
                                          b in proptest::collection::vec(any::<u8>(), 0..12)) {
            let o = KeyOrder::Ordered;
            let by_pos = cmp_pos((o.route(&a), &a), (o.route(&b), &b));
            prop_assert_eq!(by_pos, a.cmp(&b));
            if a < b {
                let p = Pivot::between((o.route(&a), &a), (o.route(&b), &b));
                prop_assert!(!p.le((o.route(&a), &a)));
                prop_assert!(p.le((o.route(&b), &b)));
            }
        }
    }

    proptest! {
        #[test]
        fn rounded_routes_fall_between(a in any::<u64>(), b in any::<u64>()) {
            let (prev, next) = (a.min(b), a.max(b));
            prop_assume!(prev < next);
            let r = round_route(prev, next);
            prop_assert!(prev < r && r <= next);
            // No route in between has more trailing zeros.
            let z = r.trailing_zeros();
            if z < 63 {
                let coarser = next >> (z + 1) << (z + 1);
                prop_assert!(coarser <= prev);
            }
        }
    }

    #[test]
    fn separators_are_short() {
        assert_eq!(shortest_separator(b"user:0001", b"user:0107"), b"user:01");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc");
        assert_eq!(shortest_separator(b"", b"a"), b"a");
        let p = Pivot::between((1, b"x"), (2, b"a"));
        assert!(p.key.is_empty());
    }

    #[test]
    fn spans() {
        let s = Span::new(Pivot::new(5, b""), Some(Pivot::new(9, b"k")));
        assert!(s.contains((5, b"")));
        assert!(s.contains((9, b"a")));
        assert!(!s.contains((9, b"k")));
        assert!(!s.contains((4, b"zz")));
        assert!(s.splits_at(&Pivot::new(9, b"")));
        assert!(!s.splits_at(&Pivot::new(5, b"")));
        assert!(Span::new(Pivot::new(3, b""), Some(Pivot::new(3, b""))).is_empty());
        let all = Span::all();
        assert_eq!(all.intersect(&s), s);
    }
}
