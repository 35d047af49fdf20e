//! What a transaction's commit checks: that nothing it read was written after its snapshot
//! (serializable snapshot isolation, optimistic, as in fjall's SSI transactions and Badger).
//!
//! Every commit — a transaction's or a plain write — is numbered (its *sequence number*), and
//! the group-commit leader records, for each key it writes, the number of the commit:
//!
//! - per key, in a fixed table of slots indexed by a hash of the keyspace and key. A read of
//!   key `k` at snapshot `s` is invalid if `k`'s slot holds a number above `s`. Two keys
//!   sharing a slot can only make a check fail that need not have (never pass one that
//!   should fail), and cost one probe each: a commit's check is O(its reads), whatever the
//!   store's size or how many commits ran meanwhile, and the table never grows.
//! - per keyspace, the newest commit that wrote to it: a scan of a whole keyspace (the only
//!   scan a hashed keyspace has) is invalid if that is above the snapshot.
//! - for ordered keyspaces, the keys written recently, in key order, so that a range scan can
//!   tell whether a key was written into its range since (a phantom). This index is bounded:
//!   writes older than the oldest running transaction's snapshot are forgotten, and past
//!   [`RECENT_CAP`] keys the oldest are forgotten anyway and the *floor* rises to their
//!   number — a range scan whose snapshot is below the floor then fails its check (the store
//!   no longer knows what was written into its range). A check of a range costs a search of
//!   the index plus the writes into that range since the oldest running transaction began.
//!
//! Nothing is recorded until the first transaction starts (see [`Conflicts::enable`]): a
//! store that never runs one pays nothing.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;

/// Slots of the per-key table: 2 MiB. A read is refused for a write to another key of its
/// slot with probability (keys written since its snapshot) / SLOTS.
const SLOTS: usize = 1 << 18;

/// Keys of ordered keyspaces the range index keeps at most.
pub const RECENT_CAP: usize = 1 << 16;

/// What a transaction read, to be checked at its commit.
#[derive(Debug, Default)]
pub struct Reads {
    /// The sequence number of the last commit its snapshot sees.
    pub snapshot: u64,
    /// The slot hashes of the keys it read (see [`key_hash`]).
    pub keys: Vec<u64>,
    /// The ranges it scanned.
    pub scans: Vec<Scan>,
}

/// A scan a transaction made, by keyspace id.
#[derive(Clone, Debug)]
pub enum Scan {
    /// Every key of the keyspace.
    Whole(u32),
    /// The keys of an ordered keyspace in a range.
    Range {
        ks: u32,
        lo: Bound<Vec<u8>>,
        hi: Bound<Vec<u8>>,
    },
}

/// The hash that picks the slot of `key` in keyspace `ks`.
pub fn key_hash(ks: u32, key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(key, u64::from(ks))
}

/// The commits' record of what they wrote (held by the group-commit leader).
#[derive(Default)]
pub struct Conflicts {
    /// Empty until enabled.
    slots: Vec<u64>,
    keyspaces: HashMap<u32, u64>,
    /// Keys of ordered keyspaces written since the oldest running transaction's snapshot,
    /// with the newest commit that wrote each.
    recent: BTreeMap<(u32, Vec<u8>), u64>,
    /// The same writes in commit order, to forget the oldest first.
    fifo: VecDeque<(u64, u32, Vec<u8>)>,
    /// Writes up to this number were forgotten while transactions older than them ran.
    floor: u64,
}

impl Conflicts {
    /// Start recording. Commits before this are not recorded: a transaction whose snapshot
    /// is taken after this call sees them all, so no check needs them.
    pub fn enable(&mut self) {
        if self.slots.is_empty() {
            self.slots = vec![0; SLOTS];
        }
    }

    pub fn is_enabled(&self) -> bool {
        !self.slots.is_empty()
    }

    /// Whether a commit of `reads` now would be serializable: nothing it read was written
    /// after its snapshot.
    pub fn allows(&self, reads: &Reads) -> bool {
        let s = reads.snapshot;
        debug_assert!(self.is_enabled(), "transactions enable the record first");
        let keys = reads.keys.iter().all(|&h| self.slots[slot(h)] <= s);
        keys && reads.scans.iter().all(|scan| match scan {
            Scan::Whole(ks) => self.keyspaces.get(ks).is_none_or(|&w| w <= s),
            Scan::Range { ks, lo, hi } => {
                if self.keyspaces.get(ks).is_none_or(|&w| w <= s) {
                    return true; // nothing written to the keyspace since
                }
                if s < self.floor {
                    return false;
                }
                let lo = bound_in(*ks, lo.as_ref(), Vec::new());
                let hi = match hi {
                    Bound::Unbounded => Bound::Excluded((ks + 1, Vec::new())),
                    hi => bound_in(*ks, hi.as_ref(), Vec::new()),
                };
                self.recent.range((lo, hi)).all(|(_, &w)| w <= s)
            }
        })
    }

    /// Record that commit `seq` wrote `key` in keyspace `ks` (`ordered`: a range can hold it).
    pub fn wrote(&mut self, seq: u64, ks: u32, ordered: bool, key: &[u8]) {
        self.slots[slot(key_hash(ks, key))] = seq;
        self.keyspaces.insert(ks, seq);
        if ordered {
            self.recent.insert((ks, key.to_vec()), seq);
            self.fifo.push_back((seq, ks, key.to_vec()));
        }
    }

    /// Forget the writes no running transaction can conflict with — those up to `oldest`,
    /// the oldest running snapshot (`u64::MAX`: none runs) — and, past [`RECENT_CAP`], the
    /// oldest others, raising the floor.
    pub fn forget(&mut self, oldest: u64) {
        while let Some((seq, ..)) = self.fifo.front() {
            let seq = *seq;
            let over = self.fifo.len() > RECENT_CAP;
            if seq > oldest && !over {
                break;
            }
            if seq > oldest {
                self.floor = self.floor.max(seq);
            }
            let (_, ks, key) = self.fifo.pop_front().expect("front exists");
            let k = (ks, key);
            if self.recent.get(&k) == Some(&seq) {
                self.recent.remove(&k);
            }
        }
    }

    /// Keys the range index holds (for tests of its bound).
    #[cfg(test)]
    fn recent_len(&self) -> usize {
        self.recent.len()
    }
}

fn slot(hash: u64) -> usize {
    (hash as usize) & (SLOTS - 1)
}

/// `b` as a bound on `(keyspace, key)` pairs; `unbounded` stands for the keyspace's start.
fn bound_in(ks: u32, b: Bound<&Vec<u8>>, unbounded: Vec<u8>) -> Bound<(u32, Vec<u8>)> {
    match b {
        Bound::Included(k) => Bound::Included((ks, k.clone())),
        Bound::Excluded(k) => Bound::Excluded((ks, k.clone())),
        Bound::Unbounded => Bound::Included((ks, unbounded)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(snapshot: u64, keys: &[&[u8]], scans: Vec<Scan>) -> Reads {
        Reads {
            snapshot,
            keys: keys.iter().map(|k| key_hash(1, k)).collect(),
            scans,
        }
    }

    fn range(lo: &[u8], hi: &[u8]) -> Scan {
        Scan::Range {
            ks: 1,
            lo: Bound::Included(lo.to_vec()),
            hi: Bound::Excluded(hi.to_vec()),
        }
    }

    #[test]
    fn a_read_fails_only_for_writes_after_its_snapshot() {
        let mut c = Conflicts::default();
        c.enable();
        c.wrote(5, 1, true, b"a");
        assert!(c.allows(&reads(5, &[b"a"], vec![])));
        assert!(!c.allows(&reads(4, &[b"a"], vec![])));
        assert!(c.allows(&reads(4, &[b"b"], vec![])));
        // The same key in another keyspace is another key.
        let other = Reads {
            snapshot: 4,
            keys: vec![key_hash(2, b"a")],
            scans: vec![Scan::Whole(2)],
        };
        assert!(c.allows(&other));
    }

    #[test]
    fn a_range_fails_for_a_write_into_it_only() {
        let mut c = Conflicts::default();
        c.enable();
        c.wrote(7, 1, true, b"m");
        assert!(!c.allows(&reads(6, &[], vec![range(b"a", b"z")])));
        assert!(c.allows(&reads(6, &[], vec![range(b"n", b"z")])));
        assert!(c.allows(&reads(6, &[], vec![range(b"a", b"m")])));
        assert!(!c.allows(&reads(6, &[], vec![Scan::Whole(1)])));
        let open = Scan::Range {
            ks: 1,
            lo: Bound::Excluded(b"l".to_vec()),
            hi: Bound::Unbounded,
        };
        assert!(!c.allows(&reads(6, &[], vec![open])));
    }

    #[test]
    fn the_range_index_stays_bounded_and_the_floor_keeps_checks_safe() {
        let mut c = Conflicts::default();
        c.enable();
        // A transaction at snapshot 0 runs all along: nothing may be forgotten for it...
        for seq in 1..=(RECENT_CAP as u64 + 100) {
            c.wrote(seq, 1, true, &seq.to_be_bytes());
            c.forget(0);
        }
        // ...but the index stays bounded, and its range checks fail rather than pass.
        assert!(c.recent_len() <= RECENT_CAP);
        assert!(!c.allows(&reads(0, &[], vec![range(b"\xff", b"\xff\xff")])));
        // With no transaction running, everything goes.
        c.forget(u64::MAX);
        assert_eq!(c.recent_len(), 0);
    }
}
