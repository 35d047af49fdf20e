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
    }
}
