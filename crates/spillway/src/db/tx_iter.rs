//! [`TxIter`]: a transaction's scan — the snapshot's records with the transaction's own
//! writes merged in, either way.

use std::collections::VecDeque;

use super::iter::Iter;
use crate::error::{Error, Result};
use crate::order::KeyOrder;
use crate::upsert::operator::Operator;

/// A write a transaction holds until it commits.
#[derive(Clone, Debug)]
pub(crate) enum Pending {
    Put(Vec<u8>),
    Delete,
    /// Merge operands on whatever the snapshot holds, oldest first.
    Merge(Vec<Vec<u8>>),
}

impl Pending {
    /// Fold `operands` (oldest first) into `base` with `operator`.
    pub fn fold(
        operator: &Operator,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[Vec<u8>],
    ) -> Result<Vec<u8>> {
        let newest_first: Vec<&[u8]> = operands.iter().rev().map(Vec::as_slice).collect();
        operator.full(key, base, &newest_first)
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
    /// Records taken from `base` and not yet returned: at most one at each end.
    front: Option<(Vec<u8>, Vec<u8>)>,
    back: Option<(Vec<u8>, Vec<u8>)>,
    done: bool,
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
    ) -> TxIter {
        TxIter {
            base,
            order,
            operator,
            pending: pending.into(),
            front: None,
            back: None,
            done: false,
        }
    }

    /// The next record of the snapshot from `end`, kept there until taken. When the snapshot
    /// has no more, the one the other end holds is the last (the two ends meet).
    fn peek_base(&mut self, end: End) -> Result<Option<&(Vec<u8>, Vec<u8>)>> {
        let (mine, other) = match end {
            End::Front => (&mut self.front, &mut self.back),
            End::Back => (&mut self.back, &mut self.front),
        };
        if mine.is_none() {
            let next = match end {
                End::Front => self.base.next(),
                End::Back => self.base.next_back(),
            };
            *mine = match next.transpose()? {
                Some(r) => Some(r),
                None => other.take(),
            };
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
        match pending {
            Pending::Put(v) => Some(Ok((key, v))),
            Pending::Delete => None,
            Pending::Merge(operands) => {
                let Some(operator) = &self.operator else {
                    return Some(Err(Error::NoMergeOperator));
                };
                let folded = Pending::fold(operator, &key, base.as_deref(), &operands);
                Some(folded.map(|v| (key, v)))
            }
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
