//! Group commit: writers queue up; one of them, the leader, commits everything queued as a
//! single log append (and a single fsync if any of them asked for one), then wakes the rest.
//! While the leader waits on the disk, new writers gather for the next group, so many threads
//! writing with `sync: true` share fsyncs instead of each paying for one.
//!
//! A transaction's batch comes with what it read ([`Reads`]): the leader checks those reads
//! against the commits before it (see `conflicts`) and may refuse that batch alone, whose
//! writer then gets the refusal while the rest of the group commits.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};

use crate::batch::WriteBatch;
use crate::db::Reads;
use crate::error::{Error, Result};
use crate::util::sync::{lock, wait};

/// A group stops growing at this many bytes of payload, so one writer's latency is bounded.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// ... or at this much past a small first batch, so a small write is not held up by big ones.
const SMALL_GROUP_SLACK: usize = 128 << 10;

pub struct Group<'a> {
    /// A lone writer's batch is borrowed: a single put allocates nothing to be committed.
    pub batches: Cow<'a, [WriteBatch]>,
    /// Whether any member asked for `sync`.
    pub sync: bool,
    /// For each batch that is a transaction's, what it read (by index in `batches`).
    pub reads: Vec<(usize, Arc<Reads>)>,
}

/// Batches of a group that the commit refused (by index in the group), each with why: the
/// others are committed.
pub type Refused = Vec<(usize, Error)>;

/// A batch waiting for a leader: its ticket, the batch, whether it asked for sync, its reads.
type Waiting = (u64, WriteBatch, bool, Option<Arc<Reads>>);

#[derive(Default)]
pub struct WriteQueue {
    state: Mutex<State>,
    wake: Condvar,
}

#[derive(Default)]
struct State {
    waiting: VecDeque<Waiting>,
    next_ticket: u64,
    leader: bool,
    results: HashMap<u64, Result<()>>,
    /// Writers asleep on `wake`: a leader whose group had no one else waiting wakes no one
    /// (a notify is a system call even when nobody waits, one per write for a lone writer).
    sleepers: usize,
}

impl WriteQueue {
    /// Commit `batch` through `commit`, alone or in a group; returns once it is committed. A
    /// borrowed batch is copied only if it has to wait in the queue.
    pub fn submit(
        &self,
        batch: Cow<'_, WriteBatch>,
        sync: bool,
        reads: Option<Arc<Reads>>,
        commit: impl Fn(&Group) -> Result<Refused>,
    ) -> Result<()> {
        let mut st = lock(&self.state);
        if !st.leader && st.waiting.is_empty() {
            // No one to group with: lead a group of one, and keep the result (the queue, the
            // tickets and the results table are for writers who wait on a leader).
            st.leader = true;
            drop(st);
            let group = Group {
                batches: Cow::Borrowed(std::slice::from_ref(&*batch)),
                sync,
                reads: reads.map(|r| (0, r)).into_iter().collect(),
            };
            let mut guard = LeaderGuard {
                queue: self,
                tickets: Vec::new(),
                result: None,
            };
            let result = commit(&group);
            guard.result = Some(result.clone());
            return match result {
                Ok(mut refused) => refused.pop().map_or(Ok(()), |(_, e)| Err(e)),
                Err(e) => Err(e),
            };
        }
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.waiting
            .push_back((ticket, batch.into_owned(), sync, reads));
        loop {
            if let Some(result) = st.results.remove(&ticket) {
                return result;
            }
            if st.leader {
                st.sleepers += 1;
                st = wait(&self.wake, st);
                st.sleepers -= 1;
                continue;
            }
            st.leader = true;
            let (tickets, group) = take_group(&mut st.waiting);
            drop(st);
            let mut guard = LeaderGuard {
                queue: self,
                tickets,
                result: None,
            };
            guard.result = Some(commit(&group));
            drop(guard);
            st = lock(&self.state);
        }
    }
}

fn take_group(waiting: &mut VecDeque<Waiting>) -> (Vec<u64>, Group<'static>) {
    let mut tickets = Vec::new();
    let mut batches = Vec::new();
    let mut all_reads = Vec::new();
    let mut sync = false;
    let mut bytes = 0;
    let mut limit = MAX_GROUP_BYTES;
    while let Some((_, batch, _, _)) = waiting.front() {
        let len = batch.payload().len();
        if !tickets.is_empty() && bytes + len > limit {
            break;
        }
        if tickets.is_empty() && len <= SMALL_GROUP_SLACK {
            limit = len + SMALL_GROUP_SLACK;
        }
        let (ticket, batch, batch_sync, reads) = waiting.pop_front().expect("front exists");
        if let Some(r) = reads {
            all_reads.push((batches.len(), r));
        }
        bytes += len;
        tickets.push(ticket);
        sync |= batch_sync;
        batches.push(batch);
    }
    let group = Group {
        batches: Cow::Owned(batches),
        sync,
        reads: all_reads,
    };
    (tickets, group)
}

/// Hands the group's result to every member and gives up leadership — also if the commit
/// panicked, so that the other writers get an error instead of waiting forever.
struct LeaderGuard<'a> {
    queue: &'a WriteQueue,
    tickets: Vec<u64>,
    result: Option<Result<Refused>>,
}

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        let result = self.result.take().unwrap_or_else(|| {
            Err(Error::Poisoned {
                reason: "a write panicked while committing".into(),
            })
        });
        let mut st = lock(&self.queue.state);
        let (group, mut refused) = match result {
            Ok(refused) => (Ok(()), refused),
            Err(e) => (Err(e), Vec::new()),
        };
        for (i, &t) in self.tickets.iter().enumerate() {
            let mine = refused.iter().position(|(at, _)| *at == i);
            let result = match mine {
                Some(j) => Err(refused.swap_remove(j).1),
                None => group.clone(),
            };
            st.results.insert(t, result);
        }
        st.leader = false;
        let sleepers = st.sleepers;
        drop(st);
        if sleepers > 0 {
            self.queue.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn one(key: &str) -> Cow<'static, WriteBatch> {
        let mut b = WriteBatch::new();
        b.put(key, "v");
        Cow::Owned(b)
    }

    /// While a leader is busy (in its fsync, say), everyone who arrives joins one next group.
    #[test]
    fn writers_arriving_during_a_commit_share_the_next_one() {
        let queue = Arc::new(WriteQueue::default());
        let groups = Arc::new(Mutex::new(Vec::new()));
        let first_started = Arc::new(AtomicBool::new(false));
        let commit = {
            let (queue, groups, first_started) =
                (queue.clone(), groups.clone(), first_started.clone());
            move |g: &Group| {
                let first = !first_started.swap(true, Ordering::SeqCst);
                if first {
                    // Hold the first commit until seven more writers are queued behind it.
                    while lock(&queue.state).waiting.len() < 7 {
                        std::thread::yield_now();
                    }
                }
                lock(&groups).push((g.batches.len(), g.sync));
                Ok(Vec::new())
            }
        };
        let leader = {
            let (queue, commit) = (queue.clone(), commit.clone());
            std::thread::spawn(move || queue.submit(one("first"), false, None, commit))
        };
        while !first_started.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        let followers: Vec<_> = (0..7)
            .map(|i| {
                let (queue, commit) = (queue.clone(), commit.clone());
                std::thread::spawn(move || {
                    queue.submit(one(&format!("k{i}")), i == 3, None, commit)
                })
            })
            .collect();
        leader.join().unwrap().unwrap();
        for f in followers {
            f.join().unwrap().unwrap();
        }
        // One group of seven, synced because one member asked.
        assert_eq!(*lock(&groups), vec![(1, false), (7, true)]);
    }

    /// Leaders wake sleepers only when there are some: no writer is ever left asleep, and
    /// every batch is committed exactly once.
    #[test]
    fn many_writers_all_return_and_each_batch_commits_once() {
        const THREADS: usize = 8;
        const EACH: usize = 500;
        let queue = Arc::new(WriteQueue::default());
        let committed = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = std::sync::mpsc::channel();
        for t in 0..THREADS {
            let (queue, committed, done) = (queue.clone(), committed.clone(), done.clone());
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let commit = |g: &Group| {
                        let mut c = lock(&committed);
                        for b in g.batches.iter() {
                            c.extend(b.iter().map(|(_, r)| r.key.to_vec()));
                        }
                        Ok(Vec::new())
                    };
                    queue
                        .submit(one(&format!("{t}/{i}")), i % 7 == 0, None, commit)
                        .unwrap();
                }
                done.send(()).unwrap();
            });
        }
        for _ in 0..THREADS {
            // A writer left asleep would never send: a minute is forever here.
            finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("a writer was never woken");
        }
        let mut keys = lock(&committed).clone();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), THREADS * EACH);
        assert_eq!(lock(&committed).len(), THREADS * EACH);
    }

    #[test]
    fn every_member_of_a_failed_group_gets_the_error() {
        let queue = WriteQueue::default();
        let err = queue.submit(one("a"), true, None, |_| Err(Error::Closed));
        assert!(matches!(err, Err(Error::Closed)));
        // The queue is usable afterwards.
        queue
            .submit(one("b"), true, None, |_| Ok(Vec::new()))
            .unwrap();
    }

    /// A writer alone commits its batch as a group of one, through no ticket or table.
    #[test]
    fn a_lone_writer_leads_a_group_of_one_and_gets_its_own_result() {
        let queue = WriteQueue::default();
        for i in 0..100 {
            let fail = i % 10 == 9;
            let result = queue.submit(one("k"), i % 2 == 0, None, |g: &Group| {
                assert_eq!((g.batches.len(), g.sync), (1, i % 2 == 0));
                if fail {
                    Err(Error::Closed)
                } else {
                    Ok(Vec::new())
                }
            });
            assert_eq!(result.is_err(), fail);
        }
        let st = lock(&queue.state);
        assert!(st.results.is_empty() && st.waiting.is_empty() && !st.leader);
        assert_eq!(st.next_ticket, 0);
    }
}
