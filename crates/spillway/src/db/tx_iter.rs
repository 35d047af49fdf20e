//! [`TxIter`]: a transaction's scan — the snapshot's records with the transaction's own
//! writes merged in, either way.

use std::collections::VecDeque;

use super::iter::Iter;
use crate::error::{Error, Result};
use crate::list::ranges::RangeSet;
use crate::order::KeyOrder;
use crate::record::NEVER;
use crate::upsert::fold::{live, Found};
use crate::upsert::operator::Operator;

/// A write a transaction holds until it commits.
#[derive(Clone, Debug)]
pub(crate) enum Pending {
    /// A value, until time `.1` ([`NEVER`]: a plain put).
    Put(Vec<u8>, u64),
    Delete,
    /// Messages on whatever the snapshot holds, oldest first.
    Messages(Vec<Message>),
}

/// A write that changes what the key holds without reading it.
#[derive(Clone, Debug)]
pub(crate) enum Message {
    Operand(Vec<u8>),
    /// A change of expiry ([`NEVER`]: none).
    Expire(u64),
}

impl Pending {
    /// What this write makes of a key whose snapshot holds `base` (as a read at `now` sees
    /// it), as a read at `now` sees it. Messages apply as of the commit, when the snapshot's
    /// value is still there (or not) as it is now.
    pub fn over(
        &self,
        key: &[u8],
        base: Found,
        operator: Option<&Operator>,
        now: u64,
    ) -> Result<Found> {
        let found = match self {
            Pending::Put(v, until) => Some((v.clone(), *until)),
            Pending::Delete => None,
            Pending::Messages(messages) => {
                let (value, mut until, mut exists) = match base {
                    Some((v, until)) => (Some(v), until, true),
                    None => (None, NEVER, false),
                };
                let mut operands: Vec<&[u8]> = Vec::new();
                for m in messages {
                    match m {
                        Message::Operand(o) => {
                            operands.push(o);
                            exists = true;
                        }
                        Message::Expire(to) if exists => until = *to,
                        Message::Expire(_) => {}
                    }
                }
                if !exists {
                    None
                } else if operands.is_empty() {
                    Some((value.unwrap_or_default(), until))
                } else {
                    let operator = operator.ok_or(Error::NoMergeOperator)?;
                    operands.reverse();
                    Some((operator.full(key, value.as_deref(), &operands)?, until))
                }
            }
        };
        Ok(live(found, || now))
    }
}

/// An iterator over a transaction's view of a keyspace: what its snapshot held, with the
/// transaction's own puts, deletes and merges on top, from [`Transaction::iter`],
/// [`range`](crate::Transaction::range) and [`prefix`](crate::Transaction::prefix).
/// Double-ended, like [`Iter`]; the transaction's writes made after it was created are not
/// in it.
///
/// [`Transaction::iter`]: crate::Transaction::iter
pub struct TxIter {
    base: Iter,
    order: KeyOrder,
    operator: Option<Operator>,
    /// The transaction's writes in the iterator's range, in position order.
    pending: VecDeque<(u64, Vec<u8>, Pending)>,
    /// The transaction's range deletes: the snapshot's records they cover are skipped.
    hidden: RangeSet,
    /// Records taken from `base` and not yet returned: at most one at each end.
    front: Option<(Vec<u8>, Vec<u8>)>,
    back: Option<(Vec<u8>, Vec<u8>)>,
    done: bool,
    /// `hidden` covers every key: the snapshot is not read at all.
    all_hidden: bool,
}

/// Which end an iterator step takes from.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Front,
    Back,
}

impl TxIter {
    pub(super) fn new(
        base: Iter,
        order: KeyOrder,
        operator: Option<Operator>,
        pending: Vec<(u64, Vec<u8>, Pending)>,
        hidden: RangeSet,
    ) -> TxIter {
        // Under a delete of every key the snapshot has nothing left to give.
        let all_hidden = hidden.covers_all(&[], None, order == KeyOrder::Ordered);
        TxIter {
            base,
            order,
            operator,
            pending: pending.into(),
            hidden,
            front: None,
            back: None,
            done: false,
            all_hidden,
        }
    }

    /// The next record of the snapshot from `end`, kept there until taken. When the snapshot
    /// has no more, the one the other end holds is the last (the two ends meet).
    fn peek_base(&mut self, end: End) -> Result<Option<&(Vec<u8>, Vec<u8>)>> {
        let (mine, other) = match end {
            End::Front => (&mut self.front, &mut self.back),
            End::Back => (&mut self.back, &mut self.front),
        };
        while mine.is_none() {
            let next = match end {
                _ if self.all_hidden => None,
                End::Front => self.base.next(),
                End::Back => self.base.next_back(),
            };
            match next.transpose()? {
                Some((k, _)) if self.hidden.covers(&k) => continue,
                Some(r) => *mine = Some(r),
                None => {
                    *mine = other.take();
                    break;
                }
            }
        }
        Ok(mine.as_ref())
    }

    /// The snapshot's record held at `end`, taken.
    fn take_held(&mut self, end: End) -> Option<(Vec<u8>, Vec<u8>)> {
        match end {
            End::Front => self.front.take(),
            End::Back => self.back.take(),
        }
    }

    fn step(&mut self, end: End) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        while !self.done {
            let order = self.order;
            let base = match self.peek_base(end) {
                Ok(b) => b.map(|(k, _)| (order.route(k), k.clone())),
                Err(e) => {
                    // A key whose operands fail to fold fails alone (as `Iter`'s do).
                    if !matches!(e, Error::MergeFailed { .. }) {
                        self.done = true;
                    }
                    return Some(Err(e));
                }
            };
            let pending = match end {
                End::Front => self.pending.front(),
                End::Back => self.pending.back(),
            }
            .map(|(route, key, _)| (*route, key.clone()));
            let take_base = match (&base, &pending) {
                (None, None) => {
                    self.done = true;
                    return None;
                }
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(b), Some(p)) if b == p => {
                    // The transaction's write replaces or folds over the snapshot's record.
                    let value = self.take_held(end).map(|(_, v)| v);
                    match self.take_pending(end, value) {
                        Some(r) => return Some(r),
                        None => continue,
                    }
                }
                (Some(b), Some(p)) => match end {
                    End::Front => b < p,
                    End::Back => b > p,
                },
            };
            if take_base {
                return self.take_held(end).map(Ok);
            }
            if let Some(r) = self.take_pending(end, None) {
                return Some(r);
            }
        }
        None
    }

    /// Take the pending write at `end`, on top of the snapshot's value `base`: what it makes
    /// of the key, or `None` for a delete.
    fn take_pending(
        &mut self,
        end: End,
        base: Option<Vec<u8>>,
    ) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        let (_, key, pending) = match end {
            End::Front => self.pending.pop_front(),
            End::Back => self.pending.pop_back(),
        }?;
        // The snapshot's value is live (the base iterator hides the expired): only the
        // transaction's own writes can make it expire.
        let base = base.map(|v| (v, NEVER));
        let now = self.base.now();
        match pending.over(&key, base, self.operator.as_ref(), now) {
            Ok(found) => found.map(|(v, _)| Ok((key, v))),
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for TxIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(End::Front)
    }
}

impl DoubleEndedIterator for TxIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(End::Back)
    }
}
