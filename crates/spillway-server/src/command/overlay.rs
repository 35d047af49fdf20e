//! A scan of the store with a staged run's writes laid over it.
//!
//! A command that reads what it writes and scans (`SPOP`, `ZPOPMIN`, `LMOVE`...) must see the
//! writes of the commands before it in its pipeline, which are staged, not yet in the store
//! (`context`). Appending them before each such scan costs a log append and a new sorted run
//! of the root buffer per command: 16 pipelined pops cost 16 appends. Instead the scan reads
//! the store and the staged writes together: the store's records in range that no staged
//! write touches (a put, a delete, a range delete), merged in key order with the staged puts
//! in range. The lock that keeps other writers out is held, so the store under the overlay is
//! what the staged writes will be appended to.

use std::collections::{HashSet, VecDeque};
use std::iter::Fuse;
use std::ops::Bound;
use std::time::SystemTime;

use super::context::{At, Scan, Staged};
use super::databases::Space;
use super::time;

type Record = (Vec<u8>, Vec<u8>);

/// The staged writes of one space within a scan's range.
pub struct Overlay {
    /// Staged puts in range, in key order.
    puts: VecDeque<Record>,
    /// Every key a staged write touched: the store's record of it is not read.
    touched: HashSet<Vec<u8>>,
    /// Staged range deletes: `[from, to)`.
    deleted: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Overlay {
    /// What of `newest` (the staged value of each key written) and `deleted` (staged range
    /// deletes) lies in `space` between `from` and `to`, as of `now` (a put whose expiry has
    /// come is a delete).
    pub fn new<'a>(
        newest: impl Iterator<Item = (&'a At, &'a Staged)>,
        deleted: &[(Space, Vec<u8>, Vec<u8>)],
        space: Space,
        (from, to): (&[u8], Bound<&[u8]>),
        now: SystemTime,
    ) -> Overlay {
        let within = |k: &[u8]| {
            k >= from
                && match to {
                    Bound::Included(t) => k <= t,
                    Bound::Excluded(t) => k < t,
                    Bound::Unbounded => true,
                }
        };
        let mut puts = Vec::new();
        let mut touched = HashSet::new();
        for ((s, key), staged) in newest {
            if *s != space || !within(key) {
                continue;
            }
            touched.insert(key.clone());
            if let Some((value, expiry)) = staged {
                if time::alive(*expiry, now) {
                    puts.push((key.clone(), value.clone()));
                }
            }
        }
        puts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let deleted = deleted
            .iter()
            .filter(|(s, ..)| *s == space)
            .map(|(_, f, t)| (f.clone(), t.clone()))
            .collect();
        Overlay {
            puts: puts.into(),
            touched,
            deleted,
        }
    }

    /// Whether the store's record of `key` is what the scan sees.
    fn shows(&self, key: &[u8]) -> bool {
        !self.touched.contains(key)
            && !self
                .deleted
                .iter()
                .any(|(f, t)| f.as_slice() <= key && key < t.as_slice())
    }

    /// `store` (the store's records in the range) with the overlay laid over it.
    pub fn over(self, store: Scan) -> Scan {
        Box::new(Overlaid {
            store: store.fuse(),
            overlay: self,
            front: None,
            back: None,
        })
    }
}

/// A scan of the store under an overlay, from either end.
struct Overlaid {
    store: Fuse<Scan>,
    overlay: Overlay,
    /// Records of the store taken from either end and shown, not yet given.
    front: Option<Record>,
    back: Option<Record>,
}

impl Overlaid {
    /// The next record from the front (or from the back): the store's or a staged put's,
    /// whichever comes first that way.
    fn take(&mut self, from_back: bool) -> Option<spillway::Result<Record>> {
        let (mine, other) = match from_back {
            false => (&mut self.front, &mut self.back),
            true => (&mut self.back, &mut self.front),
        };
        // The store's next shown record that way.
        while mine.is_none() {
            let next = match from_back {
                false => self.store.next(),
                true => self.store.next_back(),
            };
            match next {
                Some(Ok(record)) => {
                    if self.overlay.shows(&record.0) {
                        *mine = Some(record);
                    }
                }
                Some(Err(e)) => return Some(Err(e)),
                // Nothing left between the ends: what the other end holds is next.
                None => {
                    *mine = other.take();
                    break;
                }
            }
        }
        let puts = &mut self.overlay.puts;
        let staged = match from_back {
            false => puts.front(),
            true => puts.back(),
        };
        // A key is in the store's records or in the puts, never both (`touched`).
        let put_first = match (&*mine, staged) {
            (None, None) => return None,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some((k, _)), Some((p, _))) => (p < k) != from_back,
        };
        match (put_first, from_back) {
            (true, false) => puts.pop_front().map(Ok),
            (true, true) => puts.pop_back().map(Ok),
            (false, _) => mine.take().map(Ok),
        }
    }
}

impl Iterator for Overlaid {
    type Item = spillway::Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.take(false)
    }
}

impl DoubleEndedIterator for Overlaid {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.take(true)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;
    use spillway::Expiry;

    use super::*;

    fn key(i: u8) -> Vec<u8> {
        vec![b'k', i]
    }

    /// Either end, in any interleaving: the store under the overlay reads as the model of
    /// the store with the staged writes applied.
    fn read(scan: Scan, ends: &[bool]) -> Vec<Record> {
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut scan = scan;
        let mut ends = ends.iter().cycle();
        loop {
            let next = match ends.next() {
                Some(true) => scan.next_back().map(|r| (true, r)),
                _ => scan.next().map(|r| (false, r)),
            };
            match next {
                Some((true, r)) => back.push(r.unwrap()),
                Some((false, r)) => front.push(r.unwrap()),
                None => break,
            }
        }
        assert!(scan.next().is_none() && scan.next_back().is_none());
        front.extend(back.into_iter().rev());
        front
    }

    proptest! {
        #[test]
        fn an_overlaid_scan_reads_as_the_writes_applied(
            store in proptest::collection::btree_map(0u8..40, any::<u8>(), 0..30),
            staged in proptest::collection::vec((0u8..40, proptest::option::of(any::<u8>())), 0..30),
            ranges in proptest::collection::vec((0u8..40, 0u8..40), 0..3),
            (lo, hi) in (0u8..40, 0u8..41),
            ends in proptest::collection::vec(any::<bool>(), 1..8),
        ) {
            // The model: the store, then the range deletes, then the staged writes (a key
            // written after a range delete is the write's; `newest` holds the last of each).
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> =
                store.iter().map(|(k, v)| (key(*k), vec![*v])).collect();
            let deleted: Vec<(Space, Vec<u8>, Vec<u8>)> =
                ranges.iter().map(|&(a, b)| (Space::Fields, key(a), key(b))).collect();
            model.retain(|k, _| !deleted.iter().any(|(_, f, t)| f <= k && k < t));
            let mut newest: HashMap<At, Staged> = HashMap::new();
            for (k, v) in &staged {
                let staged = v.map(|v| (vec![v], Expiry::Never));
                newest.insert((Space::Fields, key(*k)), staged);
                match v {
                    Some(v) => model.insert(key(*k), vec![*v]),
                    None => model.remove(&key(*k)),
                };
            }
            // A write to another space is not this scan's.
            newest.insert((Space::Meta, key(3)), Some((b"meta".to_vec(), Expiry::Never)));
            let (from, to) = (key(lo), key(hi));
            let want: Vec<Record> = model
                .range(from.clone()..)
                .filter(|(k, _)| k.as_slice() < to.as_slice())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let in_range: Vec<spillway::Result<Record>> = store
                .iter()
                .map(|(k, v)| (key(*k), vec![*v]))
                .filter(|(k, _)| *k >= from && *k < to)
                .map(Ok)
                .collect();
            let overlay = Overlay::new(
                newest.iter(),
                &deleted,
                Space::Fields,
                (&from, Bound::Excluded(&to)),
                SystemTime::now(),
            );
            let got = read(overlay.over(Box::new(in_range.into_iter())), &ends);
            prop_assert_eq!(got, want);
        }
    }

    /// A command of a pipeline: (name and arguments), over a few keys of each type, with
    /// small members so that the commands meet.
    fn command() -> impl Strategy<Value = Vec<String>> {
        let m = || (0u8..6).prop_map(|i| ((b'a' + i) as char).to_string());
        let n = || (0i64..4).prop_map(|i| i.to_string());
        let r = || (-3i64..4).prop_map(|i| i.to_string());
        let zkey = || prop_oneof![Just("z"), Just("z2")];
        let lkey = || prop_oneof![Just("l"), Just("l2")];
        let skey = || prop_oneof![Just("s"), Just("s2")];
        let v = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        prop_oneof![
            (zkey(), n(), m()).prop_map(move |(k, s, m)| v(&["ZADD", k, &s, &m])),
            (zkey(), n(), m()).prop_map(move |(k, s, m)| v(&["ZINCRBY", k, &s, &m])),
            (zkey(), m()).prop_map(move |(k, m)| v(&["ZREM", k, &m])),
            (zkey(), n()).prop_map(move |(k, c)| v(&["ZPOPMIN", k, &c])),
            (zkey(), n()).prop_map(move |(k, c)| v(&["ZPOPMAX", k, &c])),
            (zkey(), n(), n()).prop_map(move |(k, a, b)| v(&["ZREMRANGEBYSCORE", k, &a, &b])),
            (zkey(), r(), r()).prop_map(move |(k, a, b)| v(&["ZREMRANGEBYRANK", k, &a, &b])),
            zkey().prop_map(move |k| v(&["ZRANGE", k, "0", "-1", "WITHSCORES"])),
            Just(v(&["ZUNIONSTORE", "z2", "2", "z", "s"])),
            (lkey(), m()).prop_map(move |(k, m)| v(&["LPUSH", k, &m])),
            (lkey(), m()).prop_map(move |(k, m)| v(&["RPUSH", k, &m])),
            (lkey(), n()).prop_map(move |(k, c)| v(&["LPOP", k, &c])),
            (lkey(), n()).prop_map(move |(k, c)| v(&["RPOP", k, &c])),
            (lkey(), lkey()).prop_map(move |(a, b)| v(&["LMOVE", a, b, "LEFT", "RIGHT"])),
            (lkey(), lkey()).prop_map(move |(a, b)| v(&["RPOPLPUSH", a, b])),
            (lkey(), m()).prop_map(move |(k, m)| v(&["LREM", k, "0", &m])),
            (lkey(), r(), r()).prop_map(move |(k, a, b)| v(&["LTRIM", k, &a, &b])),
            (lkey(), m(), m()).prop_map(move |(k, a, b)| v(&["LINSERT", k, "BEFORE", &a, &b])),
            (lkey(), r(), m()).prop_map(move |(k, i, m)| v(&["LSET", k, &i, &m])),
            (lkey(), m()).prop_map(move |(k, m)| v(&["LPOS", k, &m])),
            lkey().prop_map(move |k| v(&["LRANGE", k, "0", "-1"])),
            (skey(), m()).prop_map(move |(k, m)| v(&["SADD", k, &m])),
            (skey(), m()).prop_map(move |(k, m)| v(&["SREM", k, &m])),
            (skey(), skey(), m()).prop_map(move |(a, b, m)| v(&["SMOVE", a, b, &m])),
            skey().prop_map(move |k| v(&["SPOP", k, "10"])),
            skey().prop_map(move |k| v(&["SMEMBERS", k])),
            Just(v(&["SINTERSTORE", "s2", "s", "s2"])),
            (m(), n()).prop_map(move |(f, x)| v(&["HSET", "h", &f, &x])),
            m().prop_map(move |f| v(&["HDEL", "h", &f])),
            m().prop_map(move |f| v(&["HINCRBY", "h", &f, "1"])),
            Just(v(&["HGETALL", "h"])),
            prop_oneof![Just("z"), Just("l"), Just("s"), Just("h")]
                .prop_map(move |k| v(&["DEL", k])),
            Just(v(&["RENAME", "l", "l2"])),
            Just(v(&["COPY", "z", "z2", "REPLACE"])),
            Just(v(&["SET", "s", "x"])),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The same commands in one pipeline and one by one answer alike: a scan of a command
        /// that writes sees the pipeline's staged writes before it as the store would, and a
        /// scan kept from the command before (`kept`) reads on as a new one would. The first
        /// `before` commands run one by one in both, so that the pipeline's scans read a store
        /// that holds records, not only staged writes.
        #[test]
        fn a_pipeline_answers_as_its_commands_one_by_one(
            commands in proptest::collection::vec(command(), 1..60),
            before in 0usize..40,
        ) {
            use super::super::tests::{engine, run};
            use super::super::Session;
            let commands: Vec<Vec<&str>> = commands
                .iter()
                .map(|c| c.iter().map(String::as_str).collect())
                .collect();
            let all: Vec<&[&str]> = commands.iter().map(Vec::as_slice).collect();
            let before = before.min(all.len());
            let (_d1, piped) = engine();
            let mut s = Session::new(1);
            let mut together: Vec<_> =
                all[..before].iter().flat_map(|c| run(&piped, &mut s, &[c])).collect();
            together.extend(run(&piped, &mut s, &all[before..]));
            let (_d2, alone) = engine();
            let mut s = Session::new(1);
            let apart: Vec<_> = all.iter().flat_map(|c| run(&alone, &mut s, &[c])).collect();
            for (i, c) in commands.iter().enumerate() {
                prop_assert_eq!(&together[i], &apart[i], "{:?} (command {})", c, i);
            }
        }
    }
}
