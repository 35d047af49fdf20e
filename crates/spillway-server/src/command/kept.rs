//! A scan of the store kept open from one command of a pipeline to the next.
//!
//! A pop (`ZPOPMIN`, `SPOP`) reads the store where it takes from: an engine iterator, whose
//! opening seeks every sorted run of the root buffers and reads a page of every list on the
//! path — most of what a pop costs. Sixteen pipelined pops opened sixteen. But while a
//! pipeline holds the read-modify-write lock alone and has appended nothing, the store does
//! not change under it (its own writes are staged, laid over the store by `overlay`), so the
//! next pop can go on reading the iterator the last one stopped in, instead of opening one at
//! the same place:
//!
//! - a scan of `[from, to)` shows the store's records in that range that no staged write
//!   hides, merged with the staged puts;
//! - the kept iterator has read (from either end) the records a new scan of `[from', to)`,
//!   `from' >= from`, would show first, unless the staged writes hide them now — which they do
//!   when the commands that read them deleted them (a pop) or wrote them again;
//! - so the kept iterator, skipping what lies below `from'`, shows what a new one would,
//!   exactly when every record it read at or above `from'` is hidden now.
//!
//! [`Kept::resume`] checks that, and is refused while another scan still reads the same
//! iterator. `Ctx` forgets the kept scan whenever the store may have changed under it: when it
//! appends, when it lets the lock go, when a failed command takes its staged writes back.

use std::cell::RefCell;
use std::iter::Fuse;
use std::ops::Bound;
use std::rc::Rc;

use super::context::Scan;
use super::databases::Space;

/// The most records a kept scan remembers having read: a longer scan is not kept (a pop reads
/// a few; a range remove reads what it removes, and is not repeated).
const REMEMBER: usize = 1024;

/// An engine iterator over `[from, to)` of `space` in database `db`, and what it has read.
pub struct Kept {
    space: Space,
    db: usize,
    from: Vec<u8>,
    to: Bound<Vec<u8>>,
    store: Rc<RefCell<Store>>,
}

struct Store {
    iter: Fuse<Scan>,
    /// Keys of the records read (either end) that may not be hidden yet.
    read: Vec<Vec<u8>>,
    /// It failed, or read more than [`REMEMBER`]: it is not resumed.
    spent: bool,
}

impl Kept {
    /// Keep `iter`, a new scan of `[from, to)`, and read it through the scan returned.
    pub fn open(
        iter: Scan,
        space: Space,
        db: usize,
        from: &[u8],
        to: Bound<&[u8]>,
    ) -> (Kept, Scan) {
        let store = Rc::new(RefCell::new(Store {
            iter: iter.fuse(),
            read: Vec::new(),
            spent: false,
        }));
        let kept = Kept {
            space,
            db,
            from: from.to_vec(),
            to: to.map(<[u8]>::to_vec),
            store: store.clone(),
        };
        (kept, Box::new(Reading::new(store, from)))
    }

    /// Where it began.
    pub fn from(&self) -> &[u8] {
        &self.from
    }

    /// A scan of `[from, to)` of `space` in `db` that goes on reading the kept iterator, if it
    /// shows what a new one would: `hidden` says whether the staged writes hide a key now.
    pub fn resume(
        &self,
        (space, db): (Space, usize),
        from: &[u8],
        to: Bound<&[u8]>,
        hidden: impl Fn(&[u8]) -> bool,
    ) -> Option<Scan> {
        if space != self.space
            || db != self.db
            || from < self.from.as_slice()
            || to != self.to.as_ref().map(Vec::as_slice)
            || Rc::strong_count(&self.store) > 1
        {
            return None;
        }
        let mut store = self.store.borrow_mut();
        if store.spent {
            return None;
        }
        // A hidden key stays hidden until `Ctx` forgets this scan: it need not be checked again.
        store.read.retain(|k| !hidden(k));
        if store.read.iter().any(|k| k.as_slice() >= from) {
            return None;
        }
        drop(store);
        Some(Box::new(Reading::new(self.store.clone(), from)))
    }
}

/// One scan's reading of a kept iterator: what it reads below `from` is not its own.
struct Reading {
    store: Rc<RefCell<Store>>,
    from: Vec<u8>,
    /// The back end went below `from`: nothing more that way.
    back_done: bool,
}

impl Reading {
    fn new(store: Rc<RefCell<Store>>, from: &[u8]) -> Reading {
        Reading {
            store,
            from: from.to_vec(),
            back_done: false,
        }
    }

    fn take(&mut self, from_back: bool) -> Option<spillway::Result<(Vec<u8>, Vec<u8>)>> {
        if from_back && self.back_done {
            return None;
        }
        let mut store = self.store.borrow_mut();
        loop {
            let next = match from_back {
                false => store.iter.next(),
                true => store.iter.next_back(),
            };
            let record = match next {
                Some(Ok(record)) => record,
                Some(Err(e)) => {
                    store.spent = true;
                    return Some(Err(e));
                }
                None => return None,
            };
            if !store.spent {
                if store.read.len() >= REMEMBER {
                    store.spent = true;
                    store.read = Vec::new();
                } else {
                    store.read.push(record.0.clone());
                }
            }
            if record.0 >= self.from {
                return Some(Ok(record));
            }
            if from_back {
                self.back_done = true;
                return None;
            }
        }
    }
}

impl Iterator for Reading {
    type Item = spillway::Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.take(false)
    }
}

impl DoubleEndedIterator for Reading {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.take(true)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    type Records = Vec<(Vec<u8>, Vec<u8>)>;

    fn scan_of(model: &BTreeMap<Vec<u8>, Vec<u8>>, from: &[u8]) -> Scan {
        let records: Records = model
            .range(from.to_vec()..)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Box::new(records.into_iter().map(Ok))
    }

    fn key(i: u8) -> Vec<u8> {
        vec![b'k', i]
    }

    proptest! {
        /// Rounds of reading from either end, hiding what was read (or not), and resuming from
        /// a start raised (or not): `resume` agrees exactly when everything read at or above
        /// the new start is hidden, and a resumed scan reads, from either end, the store's next
        /// records from that start that no scan has read — so, hidden records aside, what a
        /// new scan would.
        #[test]
        fn a_resumed_scan_reads_on_as_a_new_one_would(
            keys in proptest::collection::btree_set(0u8..40, 0..30),
            rounds in proptest::collection::vec((0u8..45, 0usize..4, 0usize..3, any::<bool>()), 1..8),
        ) {
            let store: BTreeMap<Vec<u8>, Vec<u8>> =
                keys.iter().map(|&i| (key(i), vec![i])).collect();
            let mut hidden = std::collections::BTreeSet::<Vec<u8>>::new();
            let mut read = std::collections::BTreeSet::<Vec<u8>>::new();
            let mut from = key(0);
            let (kept, mut scan) =
                Kept::open(scan_of(&store, &from), Space::Fields, 0, &from, Bound::Unbounded);
            for (raise, front, back, hide) in rounds {
                for (n, from_back) in [(front, false), (back, true)] {
                    for _ in 0..n {
                        let mut unread = store.range(from.clone()..).map(|(k, _)| k).filter(|k| !read.contains(*k));
                        let expected = match from_back {
                            false => unread.next(),
                            true => unread.next_back(),
                        }
                        .cloned();
                        let got = match from_back {
                            false => scan.next(),
                            true => scan.next_back(),
                        };
                        let got = got.map(|r| r.unwrap().0);
                        prop_assert_eq!(&got, &expected);
                        read.extend(got);
                    }
                }
                drop(scan);
                if hide {
                    hidden.extend(read.iter().cloned());
                }
                let raised = key(raise).max(from.clone());
                let resumable = read.iter().all(|k| hidden.contains(k) || *k < raised);
                let resumed =
                    kept.resume((Space::Fields, 0), &raised, Bound::Unbounded, |k| hidden.contains(k));
                prop_assert_eq!(resumed.is_some(), resumable);
                let Some(resumed) = resumed else { return Ok(()) };
                from = raised;
                scan = resumed;
            }
        }
    }

    #[test]
    fn a_second_reading_is_refused_while_the_first_reads() {
        let store: BTreeMap<Vec<u8>, Vec<u8>> = (0..5).map(|i| (key(i), vec![i])).collect();
        let (kept, first) = Kept::open(
            scan_of(&store, &key(0)),
            Space::Fields,
            0,
            &key(0),
            Bound::Unbounded,
        );
        let resume =
            |kept: &Kept| kept.resume((Space::Fields, 0), &key(0), Bound::Unbounded, |_| true);
        assert!(resume(&kept).is_none());
        drop(first);
        assert!(resume(&kept).is_some());
        // Another space, database or end: a scan of something else.
        assert!(kept
            .resume((Space::Meta, 0), &key(0), Bound::Unbounded, |_| true)
            .is_none());
        assert!(kept
            .resume((Space::Fields, 1), &key(0), Bound::Unbounded, |_| true)
            .is_none());
        let to = key(3);
        assert!(kept
            .resume((Space::Fields, 0), &key(0), Bound::Excluded(&to), |_| true)
            .is_none());
        // A start below where it began: records it never read.
        assert!(kept
            .resume((Space::Fields, 0), b"a", Bound::Unbounded, |_| true)
            .is_none());
    }
}
