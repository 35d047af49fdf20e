//! LSD radix sort of `(route, payload)` pairs by route: the paper's choice for ordering the root
//! buffer at a spill (WB-tree §3.1). Routes are uniform hashes, so every byte matters and
//! eight counting passes beat a comparison sort by several times on millions of records.

/// Sort `v` by `.0`, stably. `scratch` is reused between calls to avoid reallocating.
pub fn sort_by_route(v: &mut Vec<(u64, u64)>, scratch: &mut Vec<(u64, u64)>) {
    if v.len() < 256 {
        v.sort_by_key(|e| e.0);
        return;
    }
    scratch.clear();
    scratch.resize(v.len(), (0, 0));
    let mut counts = [[0usize; 256]; 8];
    for e in v.iter() {
        for (b, c) in counts.iter_mut().enumerate() {
            c[((e.0 >> (b * 8)) & 0xff) as usize] += 1;
        }
    }
    let (mut src, mut dst) = (std::mem::take(v), std::mem::take(scratch));
    for (b, c) in counts.iter().enumerate() {
        if c.contains(&src.len()) {
            continue; // every route has the same byte here: the pass would not move anything
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (slot, &n) in next.iter_mut().zip(c.iter()) {
            *slot = sum;
            sum += n;
        }
        for e in &src {
            let d = ((e.0 >> (b * 8)) & 0xff) as usize;
            dst[next[d]] = *e;
            next[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *v = src;
    *scratch = dst;
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
pub fn sort_ties<'k>(v: &mut [(u64, u64)], chunk: usize, key_of: &dyn Fn(u64) -> &'k [u8]) {
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

fn sort_group<'k>(g: &mut [(u64, u64)], chunk: usize, key_of: &dyn Fn(u64) -> &'k [u8]) {
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
            sort_by_route(&mut v, &mut Vec::new());
            prop_assert_eq!(v, expected);
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
