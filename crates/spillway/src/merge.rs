//! Merging a node's lists with collapsing (WB-tree §3.1): the newest record of each key wins.

use crate::error::Result;
use crate::list::{ListIter, ListRef};
use crate::record::cmp_routed;

/// Stream the union of `lists` (newest first) in `(route, key)` order, one record per key: the
/// one from the newest list. With `drop_tombstones`, deletions are consumed instead of emitted;
/// only safe where no older list below can still hold the key.
pub fn merge(
    lists: &[ListRef],
    drop_tombstones: bool,
    mut emit: impl FnMut(u64, &[u8], Option<&[u8]>) -> Result<()>,
) -> Result<()> {
    let mut iters = lists
        .iter()
        .map(ListRef::iter)
        .collect::<Result<Vec<ListIter>>>()?;
    let mut key = Vec::new();
    loop {
        // Lists are few (a node holds tens), so a linear scan beats a heap here. Ties go to the
        // lowest index, the newest list.
        let mut best: Option<(usize, u64)> = None;
        for (i, it) in iters.iter().enumerate() {
            if let Some((route, rec)) = it.peek() {
                let better = match best {
                    None => true,
                    Some((b, br)) => {
                        let bk = iters[b].peek().expect("best has a record").1.key;
                        cmp_routed((route, rec.key), (br, bk)).is_lt()
                    }
                };
                if better {
                    best = Some((i, route));
                }
            }
        }
        let Some((b, route)) = best else {
            return Ok(());
        };
        let rec = iters[b].peek().expect("best has a record").1;
        key.clear();
        key.extend_from_slice(rec.key);
        if !(drop_tombstones && rec.value.is_none()) {
            emit(route, rec.key, rec.value)?;
        }
        for it in &mut iters {
            while it
                .peek()
                .is_some_and(|(r, rec)| r == route && rec.key == key.as_slice())
            {
                it.advance()?;
            }
        }
    }
}
