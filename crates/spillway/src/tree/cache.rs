//! A bounded cache (CLOCK, in shards): what is read often stays, what was read once makes room.
//! It holds the selector blocks that left memory (see `tree::tier_file`), so that the blocks
//! of hot leaves cost no read.
//!
//! CLOCK rather than LRU: a hit only sets a bit, so reads contend on nothing but their
//! shard's lock for the lookup itself.

use crate::util::sync::lock;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

const SHARDS: usize = 16;

pub struct Cache<K, V> {
    shards: Box<[Mutex<Shard<K, V>>]>,
    hasher: RandomState,
    /// Bytes the cache may hold, all shards together.
    capacity: AtomicUsize,
}

struct Shard<K, V> {
    index: HashMap<K, usize>,
    /// The clock's face: slots keep their place, so the hand sees each once per turn.
    slots: Vec<Option<Slot<K, V>>>,
    empty: Vec<usize>,
    /// The clock hand: the slot looked at next for eviction.
    hand: usize,
    bytes: usize,
}

struct Slot<K, V> {
    key: K,
    value: V,
    charge: usize,
    /// Read since the hand last passed: spared once.
    referenced: bool,
}

impl<K: Hash + Eq + Copy, V: Clone> Cache<K, V> {
    pub fn new(capacity: usize) -> Self {
        Cache {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        index: HashMap::new(),
                        slots: Vec::new(),
                        empty: Vec::new(),
                        hand: 0,
                        bytes: 0,
                    })
                })
                .collect(),
            hasher: Default::default(),
            capacity: AtomicUsize::new(capacity),
        }
    }

    /// Change the capacity; a smaller one evicts as entries come in.
    pub fn set_capacity(&self, bytes: usize) {
        self.capacity.store(bytes, Relaxed);
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.shards.iter().map(|s| lock(s).bytes).sum()
    }

    fn shard(&self, key: &K) -> &Mutex<Shard<K, V>> {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    pub fn get(&self, key: &K) -> Option<V> {
        let mut shard = lock(self.shard(key));
        let i = *shard.index.get(key)?;
        let slot = shard.slots[i].as_mut().expect("indexed slots are full");
        slot.referenced = true;
        Some(slot.value.clone())
    }

    /// Keep `value` under `key`, charged `charge` bytes, evicting what the clock finds cold.
    /// A value larger than a shard's share is not kept.
    pub fn insert(&self, key: K, value: V, charge: usize) {
        let room = self.capacity.load(Relaxed) / SHARDS;
        let mut shard = lock(self.shard(&key));
        if charge > room || shard.index.contains_key(&key) {
            return;
        }
        while shard.bytes + charge > room {
            shard.evict_one();
        }
        let slot = Some(Slot {
            key,
            value,
            charge,
            referenced: false,
        });
        let at = match shard.empty.pop() {
            Some(at) => {
                shard.slots[at] = slot;
                at
            }
            None => {
                shard.slots.push(slot);
                shard.slots.len() - 1
            }
        };
        shard.index.insert(key, at);
        shard.bytes += charge;
    }
}

impl<K: Hash + Eq + Copy, V> Shard<K, V> {
    /// Advance the hand to the first slot not read since it last passed, and drop it.
    fn evict_one(&mut self) {
        debug_assert!(!self.index.is_empty(), "bytes held without slots");
        loop {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let at = self.hand;
            self.hand += 1;
            match &mut self.slots[at] {
                None => {}
                Some(slot) if slot.referenced => slot.referenced = false,
                Some(_) => {
                    let gone = self.slots[at].take().expect("just seen");
                    self.index.remove(&gone.key);
                    self.bytes -= gone.charge;
                    self.empty.push(at);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_at_most_its_capacity_and_keeps_what_is_read() {
        let cache: Cache<u64, u64> = Cache::new(SHARDS * 100);
        for k in 0..10_000u64 {
            cache.insert(k, k * 2, 10);
            assert!(cache.bytes() <= SHARDS * 100);
            // Key 7 is read after every insert: the clock always spares it.
            if k >= 7 {
                assert_eq!(cache.get(&7), Some(14), "after {k}");
            }
        }
        assert_eq!(cache.get(&9_999), Some(19_998));
        assert!(cache.get(&100).is_none());
        cache.insert(1, 1, SHARDS * 100 + 1);
        assert!(cache.get(&1).is_none(), "larger than a shard: not kept");
    }

    #[test]
    fn a_smaller_capacity_evicts_as_entries_come() {
        let cache: Cache<u64, ()> = Cache::new(SHARDS * 1000);
        for k in 0..1000u64 {
            cache.insert(k, (), 10);
        }
        cache.set_capacity(SHARDS * 20);
        for k in 1000..2000u64 {
            cache.insert(k, (), 10);
        }
        assert!(cache.bytes() <= SHARDS * 20);
    }
}
