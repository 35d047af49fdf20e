//! LSD radix sort of `(route, payload)` pairs by route: the paper's choice for ordering the root
//! buffer at a spill (WB-tree §3.1). Routes are uniform hashes, so every byte matters and
//! eight counting passes beat a comparison sort by several times on millions of records.

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

/// Fewer pairs than this sort on one thread: cutting them into buckets is a pass of its own.
const PARALLEL_MIN: usize = 1 << 16;

/// [`sort_by_route`] on `cores`, then `then` on runs of the result that no two equal routes
/// straddle: a counting pass on the routes' top byte cuts `v` into buckets, and pieces of
/// whole buckets sort on whichever core is free (a spill's one step that no child could
/// share).
pub fn sort_by_route_on(
    v: &mut Vec<(u64, u64)>,
    cores: &Cores,
    then: impl Fn(&mut [(u64, u64)]) + Sync,
) {
    if cores.threads() < 2 || v.len() < PARALLEL_MIN {
        sort_by_route(v, &mut Vec::new());
        then(v);
        return;
    }
    let top = |e: &(u64, u64)| (e.0 >> 56) as usize;
    let mut counts = [0usize; 256];
    for e in v.iter() {
        counts[top(e)] += 1;
    }
    let mut next = [0usize; 256];
    let mut sum = 0;
    for (slot, &n) in next.iter_mut().zip(&counts) {
        *slot = sum;
        sum += n;
    }
    let mut buckets = vec![(0, 0); v.len()];
    for e in v.iter() {
        let b = top(e);
        buckets[next[b]] = *e;
        next[b] += 1;
    }
    // Pieces of whole buckets, a few per core, so that a core done early takes another.
    let target = v.len().div_ceil(cores.threads() * 4);
    let mut pieces = Vec::new();
    let mut rest: &mut [(u64, u64)] = &mut buckets;
    let mut len = 0;
    for &n in &counts {
        len += n;
        if len >= target {
            let (piece, after) = std::mem::take(&mut rest).split_at_mut(len);
            pieces.push(piece);
            rest = after;
            len = 0;
        }
    }
    pieces.push(rest);
    cores.map(pieces, |piece| {
        if piece.len() < 256 {
            piece.sort_by_key(|e| e.0);
        } else {
            // Every byte: a piece may hold several buckets (a pass that would move nothing,
            // as the top byte's in a piece of one bucket, is skipped).
            radix_passes(piece, &mut vec![(0, 0); piece.len()], 8);
        }
        then(piece);
    });
    *v = buckets;
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
            // On several cores, the same order (PARALLEL_MIN is above these lengths: repeat
            // the pairs until it is not).
            let copies = PARALLEL_MIN.div_ceil(on_cores.len().max(1));
            let len = on_cores.len() as u64;
            let on_cores = &on_cores;
            let mut many: Vec<(u64, u64)> = (0..copies as u64)
                .flat_map(|c| {
                    on_cores.iter().zip(0..).map(move |(&(r, _), i)| (r, c * len + i))
                })
                .collect();
            let mut want = many.clone();
            want.sort_by_key(|e| e.0);
            // Each piece `then` sees: its first and last route's top bytes.
            let pieces = std::sync::Mutex::new(Vec::new());
            sort_by_route_on(&mut many, &Cores::new(3), |piece| {
                if let (Some(a), Some(b)) = (piece.first(), piece.last()) {
                    pieces.lock().unwrap().push((a.0 >> 56, b.0 >> 56));
                }
            });
            let first_wrong = many.iter().zip(&want).position(|(a, b)| a != b);
            prop_assert!(first_wrong.is_none(), "from {:?}: {:?} where {:?}", first_wrong,
                &many[first_wrong.unwrap_or(0)..][..3.min(many.len())], &want[first_wrong.unwrap_or(0)..][..3.min(want.len())]);
            // Whole buckets each: no top byte in two pieces, so no run of equal routes either.
            let mut pieces = pieces.into_inner().unwrap();
            pieces.sort_unstable();
            prop_assert!(pieces.windows(2).all(|w| w[0].1 < w[1].0), "{:?}", pieces);
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
