//! A run of read-modify-write commands' writes, waiting to be appended as one batch, with
//! only the last write of each key kept.
//!
//! Sixteen pipelined `LPUSH`es of one list write sixteen elements and its metadata sixteen
//! times: each push rewrites the size. Only the last of those metadata records would ever be
//! read (the batch is appended whole or not at all), so a put or a delete of a key drops the
//! put or delete of that key before it in the run: the batch holds 17 records instead of 32,
//! and the log, the root buffer and the spills each see half as many.
//!
//! Dropping an earlier write is right whatever came between: a later put or delete decides
//! the key alone, and a range delete between the two (applied in order) can only have covered
//! the earlier one. An expire message is not a whole write (it keeps the value before it), so
//! it drops nothing and nothing drops it.

use std::collections::HashMap;

use spillway::{Expiry, Keyspace, WriteBatch};

use super::databases::Space;

/// A write of a run, owned.
#[derive(Clone, Debug)]
pub enum Owned {
    Put(Vec<u8>, Expiry),
    Delete,
    Expire(std::time::SystemTime),
    /// Every key from the write's key to this one (excluded).
    DeleteRange(Vec<u8>),
}

impl Owned {
    /// What the write of it at `key` weighs in a batch (see `MAX_BATCH`).
    pub fn bytes(&self, key: &[u8]) -> usize {
        key.len()
            + match self {
                Owned::Put(v, _) | Owned::DeleteRange(v) => v.len(),
                Owned::Delete | Owned::Expire(_) => 0,
            }
    }
}

/// One write: where (`ks`, the keyspace's handle), the key, what.
struct Write<K> {
    ks: K,
    db: usize,
    space: Space,
    key: Vec<u8>,
    op: Owned,
}

pub struct StagedRun<K = Keyspace> {
    /// The run's writes in order; `None` where a later write of the same key dropped one.
    writes: Vec<Option<Write<K>>>,
    /// Where the last whole write (a put or a delete) of a key is in `writes`, by a hash of
    /// its database, space and key (a key whose hash another shares is checked, and is not
    /// dropped if it differs).
    last: HashMap<u64, usize>,
    /// The size of the writes added (dropped ones included): see `MAX_BATCH`.
    pub bytes: usize,
    /// Replies of the commands whose writes it holds: the append's error instead, if it fails.
    pub replies: Vec<usize>,
}

impl<K> Default for StagedRun<K> {
    fn default() -> Self {
        StagedRun {
            writes: Vec::new(),
            last: HashMap::new(),
            bytes: 0,
            replies: Vec::new(),
        }
    }
}

impl<K> StagedRun<K> {
    /// Add `op` at `key` of keyspace `ks` (`space` of database `db`).
    pub fn add(&mut self, ks: K, (db, space): (usize, Space), key: Vec<u8>, op: Owned) {
        self.bytes += op.bytes(&key);
        let at = self.writes.len();
        let whole = matches!(op, Owned::Put(..) | Owned::Delete);
        if matches!(op, Owned::Put(..) | Owned::Delete | Owned::Expire(_)) {
            let h = hash(db, space, &key);
            let earlier = match whole {
                true => self.last.insert(h, at),
                false => self.last.remove(&h), // an expire keeps what came before it
            };
            if let (true, Some(i)) = (whole, earlier) {
                let slot = &mut self.writes[i];
                if slot
                    .as_ref()
                    .is_some_and(|w| w.db == db && w.space == space && w.key == key)
                {
                    *slot = None;
                }
            }
        }
        self.writes.push(Some(Write {
            ks,
            db,
            space,
            key,
            op,
        }));
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }
}

impl StagedRun {
    /// The batch to append: the writes not dropped, in order.
    pub fn into_batch(self) -> (WriteBatch, Vec<usize>) {
        let mut batch = WriteBatch::new();
        for Write { ks, key, op, .. } in self.writes.into_iter().flatten() {
            match op {
                Owned::Put(v, Expiry::Never) => batch.put_in(&ks, &key, &v),
                Owned::Put(v, Expiry::At(t)) => batch.put_expiring_in(&ks, &key, &v, t),
                Owned::Delete => batch.delete_in(&ks, &key),
                Owned::Expire(t) => batch.expire_in(&ks, &key, t),
                Owned::DeleteRange(to) => batch.delete_range_in(&ks, key..to),
            }
        }
        (batch, self.replies)
    }
}

fn hash(db: usize, space: Space, key: &[u8]) -> u64 {
    let h = spillway::KeyOrder::Hashed.route(key);
    h ^ ((db as u64) << 2 | space as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{Duration, SystemTime};

    use proptest::prelude::*;

    use super::*;

    type Model = BTreeMap<(usize, u8, Vec<u8>), (Vec<u8>, Option<u64>)>;

    /// The store after `writes`, applied in order.
    fn apply<'w>(writes: impl Iterator<Item = (usize, Space, &'w [u8], &'w Owned)>) -> Model {
        let mut model = Model::new();
        for (db, space, key, op) in writes {
            let at = (db, space as u8, key.to_vec());
            match op {
                Owned::Put(v, Expiry::Never) => drop(model.insert(at, (v.clone(), None))),
                Owned::Put(..) => unreachable!("not generated"),
                Owned::Delete => drop(model.remove(&at)),
                Owned::Expire(t) => {
                    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
                    if let Some(found) = model.get_mut(&at) {
                        found.1 = Some(secs);
                    }
                }
                Owned::DeleteRange(to) => model.retain(|(d, s, k), _| {
                    !(*d == db && *s == space as u8 && k.as_slice() >= key && k < to)
                }),
            }
        }
        model
    }

    fn write() -> impl Strategy<Value = (usize, Space, Vec<u8>, Owned)> {
        let key = || (0u8..4).prop_map(|k| vec![b'k', k]);
        let space = prop_oneof![Just(Space::Meta), Just(Space::Fields)];
        let op = prop_oneof![
            4 => (0u8..9).prop_map(|v| Owned::Put(vec![v], Expiry::Never)),
            2 => Just(Owned::Delete),
            1 => (1u64..5).prop_map(|s| Owned::Expire(SystemTime::UNIX_EPOCH + Duration::from_secs(s))),
            1 => key().prop_map(Owned::DeleteRange),
        ];
        (0usize..2, space, key(), op).prop_map(|(db, space, key, op)| (db, space, key, op))
    }

    /// Two keys whose hashes collide: the later write finds the other key's slot, and drops
    /// nothing.
    #[test]
    fn a_write_whose_hash_another_key_shares_drops_nothing() {
        let mut run = StagedRun::<()>::default();
        let put = |v: u8| Owned::Put(vec![v], Expiry::Never);
        run.add((), (0, Space::Fields), b"a".to_vec(), put(1));
        // As if `b` hashed to `a`'s slot.
        run.last.insert(hash(0, Space::Fields, b"b"), 0);
        run.add((), (0, Space::Fields), b"b".to_vec(), put(2));
        let kept: Vec<&[u8]> = run
            .writes
            .iter()
            .flatten()
            .map(|w| w.key.as_slice())
            .collect();
        assert_eq!(kept, [&b"a"[..], b"b"]);
        // The same key in another database or space is another key.
        run.add((), (1, Space::Fields), b"b".to_vec(), put(3));
        run.add((), (0, Space::Meta), b"b".to_vec(), put(4));
        assert_eq!(run.writes.iter().flatten().count(), 4);
        run.add((), (0, Space::Fields), b"b".to_vec(), put(5));
        assert_eq!(
            run.writes.iter().flatten().count(),
            4,
            "b's earlier put dropped"
        );
    }

    proptest! {
        /// The writes a run keeps leave the store as all of them, in order, would: whatever
        /// mix of puts, deletes, expires and range deletes over a few keys of two databases
        /// and two spaces. And a put or delete of a key that was put or deleted before it (no
        /// expire between) leaves one record, not two.
        #[test]
        fn a_run_keeps_what_decides_the_store(
            writes in proptest::collection::vec(write(), 0..40),
        ) {
            let all = apply(writes.iter().map(|(d, s, k, o)| (*d, *s, k.as_slice(), o)));
            let mut run = StagedRun::<()>::default();
            for (db, space, key, op) in &writes {
                run.add((), (*db, *space), key.clone(), op.clone());
            }
            let kept: Vec<_> = run.writes.iter().flatten().collect();
            let got = apply(kept.iter().map(|w| (w.db, w.space, w.key.as_slice(), &w.op)));
            prop_assert_eq!(got, all);
            // Two whole writes of one key in a row: the first is gone.
            for (i, w) in kept.iter().enumerate() {
                let whole = |o: &Owned| matches!(o, Owned::Put(..) | Owned::Delete);
                let later = kept[i + 1..].iter().find(|v| (v.db, v.space, &v.key) == (w.db, w.space, &w.key));
                if let Some(v) = later {
                    prop_assert!(!(whole(&w.op) && whole(&v.op)), "{:?} kept before another write of it", w.key);
                }
            }
        }
    }
}
