//! Radix sort of `(route, payload)` pairs by route: the paper's choice for ordering the root
//! buffer at a spill (WB-tree §3.1). Routes are uniform hashes, so every byte matters and
//! counting passes beat a comparison sort by several times on millions of records. A big
//! sort cuts the pairs into buckets by the top byte first, then sorts each bucket by the
//! other seven: a bucket fits a core's cache, and buckets go to any core.

use std::mem::MaybeUninit;

use crate::util::cores::Cores;

/// Sort `v` by `.0`, stably. `scratch` is reused between calls to avoid reallocating.
pub fn sort_by_route(v: &mut [(u64, u64)], scratch: &mut Vec<(u64, u64)>) {
    if v.len() < 256 {
        v.sort_by_key(|e| e.0);
        return;
    }
    scratch.clear();
    scratch.resize(v.len(), (0, 0));
    radix_passes(v, scratch, 8);
}

/// Fewer pairs than this sort in one go: cutting them into buckets is a pass of its own.
const PARALLEL_MIN: usize = 1 << 16;

/// The `len` pairs that `part(i, n)` yields for `i` in `0..n` (each part, any time it is
/// asked, the same pairs), sorted by route on `cores`; then `then` on runs of the result that
/// no two equal routes straddle. Pairs of equal routes come in no set order: `then` orders
/// them (a spill's `sort_ties`).
///
/// The routes' top byte cuts the pairs into 256 buckets: each core counts its part's pairs
/// per bucket, then scatters them into its share of each — read straight from where they lie
/// (a buffer's table), with no copy gathered first: on a spill's two cores that copy, and the
/// page faults of its fresh memory, were half the sort. Pieces of whole buckets then sort on
/// whichever core is free, a bucket at a time (a spill's bucket holds a few thousand pairs:
/// sorted within a core's cache, where passes over every pair went to memory).
pub fn sort_by_route_on<I: Iterator<Item = (u64, u64)>>(
    len: usize,
    part: impl Fn(usize, usize) -> I + Sync,
    cores: &Cores,
    then: impl Fn(&mut [(u64, u64)]) + Sync,
) -> Vec<(u64, u64)> {
    if len < PARALLEL_MIN {
        let mut v: Vec<(u64, u64)> = part(0, 1).collect();
        sort_by_route(&mut v, &mut Vec::new());
        then(&mut v);
        return v;
    }
    let parts = cores.threads();
    let top = |e: &(u64, u64)| (e.0 >> 56) as usize;
    let counts = cores.map((0..parts).collect(), |i| {
        let mut counts = [0usize; 256];
        for e in part(i, parts) {
            counts[top(&e)] += 1;
        }
        counts
    });
    // Each part's share of each bucket, cut from the output bucket by bucket and part by part
    // within one. The output is not zeroed first (as long as the scatter, on fresh memory):
    // the scatter writes every slot, and checks that it did.
    let mut sorted: Vec<(u64, u64)> = Vec::with_capacity(len);
    type Share<'a> = Vec<&'a mut [MaybeUninit<(u64, u64)>]>; // a part's, bucket by bucket
    let mut shares: Vec<Share> = (0..parts).map(|_| Vec::with_capacity(256)).collect();
    let mut rest = &mut sorted.spare_capacity_mut()[..len];
    for b in 0..256 {
        for (share, counts) in shares.iter_mut().zip(&counts) {
            let (mine, after) = std::mem::take(&mut rest).split_at_mut(counts[b]);
            share.push(mine);
            rest = after;
        }
    }
    assert!(rest.is_empty(), "the parts hold {len} pairs");
    // A part that yields more pairs than it was counted to hold runs out of its share (a
    // panic); one that yields fewer fails the check after.
    let scatter = |(i, mut share): (usize, Share)| {
        let mut next = [0usize; 256];
        for e in part(i, parts) {
            let b = top(&e);
            share[b][next[b]].write(e);
            next[b] += 1;
        }
        let whole = next.iter().zip(&share).all(|(&n, s)| n == s.len());
        assert!(whole, "part {i} yielded fewer pairs than counted");
    };
    cores.map(shares.into_iter().enumerate().collect(), scatter);
    // SAFETY: the shares cover the first `len` slots (asserted above), and each part wrote
    // every slot of each of its shares (asserted by the scatter, which `cores.map` waited
    // for: a panic there reaches this thread before this line).
    unsafe { sorted.set_len(len) };

    // Pieces of whole buckets, a few per core, so that a core done early takes another.
    let mut sizes = [0usize; 256];
    for counts in &counts {
        for (size, n) in sizes.iter_mut().zip(counts) {
            *size += n;
        }
    }
    let target = len.div_ceil(parts * 4);
    let mut pieces = Vec::new();
    let mut rest: &mut [(u64, u64)] = &mut sorted;
    let (mut from, mut piece_len) = (0, 0);
    for (b, &n) in sizes.iter().enumerate() {
        piece_len += n;
        if piece_len >= target || b == 255 {
            let (piece, after) = std::mem::take(&mut rest).split_at_mut(piece_len);
            pieces.push((piece, &sizes[from..=b]));
            (rest, from, piece_len) = (after, b + 1, 0);
        }
    }
    cores.map(pieces, |(piece, sizes)| {
        let mut scratch = vec![(0, 0); sizes.iter().copied().max().unwrap_or(0)];
        let mut rest = &mut *piece;
        for &n in sizes {
            let (bucket, after) = std::mem::take(&mut rest).split_at_mut(n);
            if n < 256 {
                bucket.sort_unstable_by_key(|e| e.0);
            } else {
                radix_passes(bucket, &mut scratch[..n], 7); // the top byte is the bucket's
            }
            rest = after;
        }
        then(piece);
    });
    sorted
}

/// Part `i` of `n` of `v`: the parts [`sort_by_route_on`] reads of pairs already in a slice.
pub fn slice_parts<'v>(
    v: &'v [(u64, u64)],
) -> impl Fn(usize, usize) -> std::iter::Copied<std::slice::Iter<'v, (u64, u64)>> + Sync + 'v {
    move |i, n| {
        let chunk = v.len().div_ceil(n);
        v[(i * chunk).min(v.len())..((i + 1) * chunk).min(v.len())]
            .iter()
            .copied()
    }
}

/// Stable counting passes on the low `bytes` bytes of the routes, between `v` and `scratch`
/// (as long as `v`); the result in `v`.
fn radix_passes(v: &mut [(u64, u64)], scratch: &mut [(u64, u64)], bytes: usize) {
    let mut counts = [[0usize; 256]; 8];
    for e in v.iter() {
        for (b, c) in counts[..bytes].iter_mut().enumerate() {
            c[((e.0 >> (b * 8)) & 0xff) as usize] += 1;
        }
    }
    let len = v.len();
    let (mut src, mut dst) = (v, scratch);
    let mut swapped = false;
    for (b, c) in counts[..bytes].iter().enumerate() {
        if c.contains(&len) {
            continue; // every route has the same byte here: the pass would not move anything
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (slot, &n) in next.iter_mut().zip(c.iter()) {
            *slot = sum;
            sum += n;
        }
        for e in src.iter() {
            let d = ((e.0 >> (b * 8)) & 0xff) as usize;
            dst[next[d]] = *e;
            next[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
        swapped = !swapped;
    }
    if swapped {
        dst.copy_from_slice(src);
    }
}

/// Groups of equal keys bigger than this take more radix passes; smaller ones a comparison
/// sort.
const SMALL_GROUP: usize = 32;
/// Radix passes over key bytes before the rest is left to comparisons (keys sharing 40
/// bytes are ordered by comparing them).
const MAX_CHUNK: usize = 5;

/// After [`sort_by_route`]: order each run of equal routes by the keys `key_of(payload)`
/// gives, and equal keys by payload, highest first (newest first, where payloads are arena
/// offsets). Big runs are radix-sorted on the keys' 8-byte chunks from `chunk` on (each
/// big-endian, zero-padded), the way the route sorted their first.
pub fn sort_ties<'k>(
    v: &mut [(u64, u64)],
    chunk: usize,
    key_of: &(dyn Fn(u64) -> &'k [u8] + Sync),
) {
    let mut i = 0;
    while i < v.len() {
        let mut j = i + 1;
        while j < v.len() && v[j].0 == v[i].0 {
            j += 1;
        }
        if j - i > 1 {
            sort_group(&mut v[i..j], chunk, key_of);
        }
        i = j;
    }
}

fn sort_group<'k>(g: &mut [(u64, u64)], chunk: usize, key_of: &(dyn Fn(u64) -> &'k [u8] + Sync)) {
    if g.len() <= SMALL_GROUP || chunk >= MAX_CHUNK {
        g.sort_by(|a, b| key_of(a.1).cmp(key_of(b.1)).then(b.1.cmp(&a.1)));
        return;
    }
    // Read the group's keys in arena order (payloads are offsets there; the table gave them
    // in random order): a shared prefix then costs a sequential read, not a cache miss a key
    // (a spill of list-like keys 25% faster). Groups below are left in this order by the
    // stable radix passes, so this sorts once.
    g.sort_unstable_by_key(|e| e.1);
    let mut sub: Vec<(u64, u64)> = g
        .iter()
        .map(|&(_, p)| (key_chunk(key_of(p), chunk), p))
        .collect();
    sort_by_route(&mut sub, &mut Vec::new());
    sort_ties(&mut sub, chunk + 1, key_of);
    for (slot, s) in g.iter_mut().zip(sub) {
        slot.1 = s.1;
    }
}

/// Bytes `8 * chunk ..` of `key`, big-endian, zero-padded.
fn key_chunk(key: &[u8], chunk: usize) -> u64 {
    let mut b = [0u8; 8];
    let rest = key.get(chunk * 8..).unwrap_or(&[]);
    let n = rest.len().min(8);
    b[..n].copy_from_slice(&rest[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_part_that_yields_fewer_pairs_than_it_was_counted_to_hold_panics() {
        let v: Vec<(u64, u64)> = (0..PARALLEL_MIN as u64 * 2)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i))
            .collect();
        for threads in [1, 2] {
            let asked = std::sync::atomic::AtomicUsize::new(0);
            let parts = slice_parts(&v);
            let shrinking = |i, n| {
                // The second time a part is read (the scatter), it lacks its last pair.
                let again = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= n;
                let all = parts(i, n);
                let len = all.len() - usize::from(again);
                all.take(len)
            };
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                sort_by_route_on(v.len(), shrinking, &Cores::new(threads), |_| {})
            }));
            assert!(r.is_err(), "{threads} threads");
        }
    }

    proptest! {
        #[test]
        fn sorts_like_a_stable_sort(v in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..2000),
                                   narrow in any::<bool>()) {
            let mut v: Vec<(u64, u64)> = if narrow {
                v.into_iter().map(|(r, p)| (r & 0xff00_0000_00ff_0f00, p)).collect()
            } else { v };
            let mut expected = v.clone();
            expected.sort_by_key(|e| e.0);
            let on_cores = v.clone();
            sort_by_route(&mut v, &mut Vec::new());
            prop_assert_eq!(&v, &expected);
            // On any number of cores from parts of the pairs, the same order, ties by payload
            // as `then` orders them (PARALLEL_MIN is above these lengths: repeat the pairs
            // until it is not).
            let copies = PARALLEL_MIN.div_ceil(on_cores.len().max(1));
            let len = on_cores.len() as u64;
            let on_cores = &on_cores;
            let many: Vec<(u64, u64)> = (0..copies as u64)
                .flat_map(|c| {
                    on_cores.iter().zip(0..).map(move |(&(r, _), i)| (r, c * len + i))
                })
                .collect();
            let mut want = many.clone();
            want.sort_by_key(|e| (e.0, std::cmp::Reverse(e.1)));
            for threads in [1, 2, 3] {
                // Each piece `then` sees: its first and last route's top bytes.
                let pieces = std::sync::Mutex::new(Vec::new());
                let got = sort_by_route_on(many.len(), slice_parts(&many), &Cores::new(threads), |piece| {
                    sort_ties(piece, 0, &|_| &[][..]);
                    if let (Some(a), Some(b)) = (piece.first(), piece.last()) {
                        pieces.lock().unwrap().push((a.0 >> 56, b.0 >> 56));
                    }
                });
                let first_wrong = got.iter().zip(&want).position(|(a, b)| a != b);
                prop_assert!(got.len() == want.len() && first_wrong.is_none(), "{} threads, from {:?}: {:?} where {:?}", threads, first_wrong,
                    &got[first_wrong.unwrap_or(0)..][..3.min(got.len())], &want[first_wrong.unwrap_or(0)..][..3.min(want.len())]);
                // Whole buckets each: no top byte in two pieces, so no run of equal routes either.
                let mut pieces = pieces.into_inner().unwrap();
                pieces.sort_unstable();
                prop_assert!(pieces.windows(2).all(|w| w[0].1 < w[1].0), "{:?}", pieces);
            }
        }

        #[test]
        fn ties_sort_by_key_then_newest(
            (keys, order) in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..20), 0..300)
                .prop_flat_map(|keys| {
                    let order = Just((0..keys.len() as u64).collect::<Vec<u64>>()).prop_shuffle();
                    (Just(keys), order)
                }),
        ) {
            // Every key shares one route, as keys sharing a prefix do in an ordered store, and
            // they come in any order of their payloads (a table's order).
            let mut v: Vec<(u64, u64)> = order.iter().map(|&i| (7, i)).collect();
            sort_ties(&mut v, 0, &|p| &keys[p as usize][..]);
            let mut expected: Vec<u64> = (0..keys.len() as u64).collect();
            expected.sort_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]).then(b.cmp(&a)));
            let got: Vec<u64> = v.iter().map(|e| e.1).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
