//! A key's records, newest first, and what they fold into: the one place merge operands and
//! changes of expiry meet what they change (see `operator`).
//!
//! A key's history is a *stack*: messages — merge operands and changes of expiry — newest
//! first, down to a *base* — a put (which may expire) or a delete — or to the bottom of the
//! tree. Sources hand over their part of a stack newest first (a root buffer, a list: each
//! keeps a key's records together, messages above what they change). Where a stack meets the
//! operator:
//!
//! - **the root buffer** ([`on_arrival`]) folds an operand into the key's newest record as it
//!   arrives, where the operator can without reading further;
//! - **reads** ([`Stack::resolve`]) fold it all: the base, or nothing, plus every message;
//! - **spills and merges of lists** ([`Stack::collapse`]) fold what they can without reading
//!   further: a stack ending in a base becomes one put (or nothing, expired); operands alone
//!   become one operand (a partial merge), or one put at the bottom of the tree, where nothing
//!   older can be.
//!
//! **Time.** A message applies to the key as it was when the message was written: an operand
//! or a change of expiry written at or after the key's expiry finds nothing there (an
//! operand then starts a new value, with no expiry; a change of expiry does nothing). A fold
//! never looks at the clock: what a stack folds into is the same whenever it is folded, and
//! whether that value has expired is the reader's question ([`Found`]). Operands carry the
//! time they were written only in keyspaces that have held expiring records (see
//! `Op::MergeAt`); an unstamped operand is older than every expiry below it.
//!
//! A failing operator never stops a spill: the stack is written on as it was, and only reads
//! of that key report the failure.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::{Error, Result};
use crate::record::{Op, NEVER};
use crate::upsert::operator::Operator;

/// What a key's records fold into: its value and when it expires ([`NEVER`]: it does not), or
/// nothing. A value whose time has come is the reader's to hide (see [`live`]).
pub type Found = Option<(Vec<u8>, u64)>;

/// `found` as a reader at time `now` (ms) sees it: its value, unless it has expired.
pub fn live(found: Found, now: impl FnOnce() -> u64) -> Found {
    match found {
        Some((_, until)) if until != NEVER && until <= now() => None,
        found => found,
    }
}

/// What an operand arriving in the root buffer and the key's newest record there fold into.
pub enum Arrival {
    /// A value, expiring at `.1` (a full merge: the record was a put or a delete).
    Put(Vec<u8>, u64),
    /// One operand standing for both (a partial merge).
    Merge(Vec<u8>),
}

/// Fold `operand`, written at time `at` (0: unstamped), into `newest`, the newest record of
/// `key` in the root buffer, if the operator can without reading further; `None` (the operand
/// is stacked on it) if it cannot, or fails — a failure is left for the reads of the key to
/// report.
pub fn on_arrival(
    operator: &Operator,
    key: &[u8],
    newest: Op<'_>,
    operand: &[u8],
    at: u64,
) -> Option<Arrival> {
    let full = |base: Option<&[u8]>, until: u64| {
        operator
            .full(key, base, &[operand])
            .ok()
            .map(|v| Arrival::Put(v, until))
    };
    match newest {
        Op::Put(v) => full(Some(v), NEVER),
        Op::PutUntil(_, until) if until <= at => full(None, NEVER),
        Op::PutUntil(v, until) => full(Some(v), until),
        Op::Delete => full(None, NEVER),
        // Two unstamped operands: no expiry can fall between them (see the module's doc).
        Op::Merge(m) if at == 0 => operator.partial(key, &[operand, m]).map(Arrival::Merge),
        Op::Merge(_) | Op::MergeAt(..) | Op::Expire { .. } => None,
    }
}

/// A change of expiry to `until` written at `at`, arriving on `newest`, the newest record of
/// the key in the root buffer: the record it becomes (`Some(None)`: the change does nothing,
/// the key being gone), or `None` if it must be stacked on `newest` (not a base).
pub fn expire_on_arrival<'a>(newest: Op<'a>, until: u64, at: u64) -> Option<Option<Op<'a>>> {
    let with = |v| {
        Some(Some(if until == NEVER {
            Op::Put(v)
        } else {
            Op::PutUntil(v, until)
        }))
    };
    match newest {
        Op::Put(v) => with(v),
        Op::PutUntil(_, expired) if expired <= at => Some(None),
        Op::PutUntil(v, _) => with(v),
        Op::Delete => Some(None),
        Op::Merge(_) | Op::MergeAt(..) | Op::Expire { .. } => None,
    }
}

/// A message of a stack: an operand (written at `.1`, 0: unstamped) or a change of expiry.
#[derive(Debug)]
enum Message {
    Operand(Vec<u8>, u64),
    Expire { until: u64, at: u64 },
}

impl Message {
    fn at(&self) -> u64 {
        match *self {
            Message::Operand(_, at) | Message::Expire { at, .. } => at,
        }
    }

    fn op(&self) -> Op<'_> {
        match *self {
            Message::Operand(ref o, 0) => Op::Merge(o),
            Message::Operand(ref o, at) => Op::MergeAt(o, at),
            Message::Expire { until, at } => Op::Expire { until, at },
        }
    }
}

/// The records of one key gathered so far, newest first.
#[derive(Debug, Default)]
pub struct Stack {
    /// Operands and changes of expiry, newest first.
    messages: Vec<Message>,
    operands: usize,
    /// The base under them, once reached: `Some(None)` for a delete, else the value and its
    /// expiry.
    base: Option<Option<(Vec<u8>, u64)>>,
    /// List pages that held records of the key: what a read paid for it.
    pub pages: u32,
}

/// What a stack folds into, before the operator is called: `None` if nothing; else the base
/// value (if any survives), the operands to fold into it oldest first, and the expiry.
type Plan<'s> = Option<(Option<&'s [u8]>, Vec<&'s [u8]>, u64)>;

impl Stack {
    pub fn clear(&mut self) {
        self.messages.clear();
        self.operands = 0;
        self.base = None;
        self.pages = 0;
    }

    /// Add the next older record; `true` once the stack is complete (a base reached), after
    /// which older records no longer matter.
    pub fn push(&mut self, op: Op<'_>) -> bool {
        debug_assert!(!self.is_complete(), "nothing matters below a base");
        match op {
            Op::Put(v) => self.base = Some(Some((v.to_vec(), NEVER))),
            Op::PutUntil(v, until) => self.base = Some(Some((v.to_vec(), until))),
            Op::Delete => self.base = Some(None),
            Op::Merge(o) => self.push_operand(o, 0),
            Op::MergeAt(o, at) => self.push_operand(o, at),
            Op::Expire { until, at } => self.messages.push(Message::Expire { until, at }),
        }
        self.is_complete()
    }

    fn push_operand(&mut self, o: &[u8], at: u64) {
        self.messages.push(Message::Operand(o.to_vec(), at));
        self.operands += 1;
    }

    pub fn is_complete(&self) -> bool {
        self.base.is_some()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.messages.is_empty()
    }

    pub fn operands(&self) -> usize {
        self.operands
    }

    /// Replay the messages, oldest first, on the base (nothing, if none was reached): see the
    /// module's doc for what time does.
    fn plan(&self) -> Plan<'_> {
        let (mut value, mut until, mut exists) = match &self.base {
            Some(Some((v, until))) => (Some(v.as_slice()), *until, true),
            _ => (None, NEVER, false),
        };
        let mut pending: Vec<&[u8]> = Vec::new();
        for m in self.messages.iter().rev() {
            if exists && until <= m.at() {
                // The key expired before this message was written: it finds nothing.
                (value, until, exists) = (None, NEVER, false);
                pending.clear();
            }
            match m {
                Message::Operand(o, _) => {
                    pending.push(o);
                    exists = true;
                }
                Message::Expire { until: to, .. } => {
                    if exists {
                        until = *to;
                    }
                }
            }
        }
        exists.then_some((value, pending, until))
    }

    /// What the key holds: the base (absent if none was reached: nothing lies below) with every
    /// message folded in, and its expiry — whether or not that time has come (see [`live`]).
    /// Leaves the stack empty.
    pub fn resolve(&mut self, key: &[u8], operator: Option<&Operator>) -> Result<Found> {
        if self.messages.is_empty() {
            return Ok(self.base.take().flatten());
        }
        let found = match self.plan() {
            None => None,
            Some((value, pending, until)) if pending.is_empty() => {
                Some((value.unwrap_or_default().to_vec(), until))
            }
            Some((value, mut pending, until)) => {
                let operator = operator.ok_or(Error::NoMergeOperator)?;
                pending.reverse();
                Some((operator.full(key, value, &pending)?, until))
            }
        };
        self.clear();
        Ok(found)
    }

    /// The records that replace the stack where a spill or merge writes it, newest first,
    /// given to `emit`. `bottom`: nothing older than the stack can exist (the bottom of the
    /// tree), so a delete need not be kept and operands fold with no base. `horizon`: every
    /// message above the stack, not yet met, was written at or after this time (see
    /// `tree::spill`), so a value that expired by then is gone for all of them: it becomes a
    /// delete. A fold that fails leaves the stack as it was (counted in `failures`).
    pub fn collapse(
        &self,
        key: &[u8],
        operator: Option<&Operator>,
        bottom: bool,
        horizon: u64,
        failures: &AtomicU64,
        mut emit: impl FnMut(Op<'_>) -> Result<()>,
    ) -> Result<()> {
        if self.is_complete() || bottom {
            let folded = match self.plan() {
                None => Some(None),
                Some((value, pending, until)) if pending.is_empty() => {
                    Some(Some((value.unwrap_or_default().to_vec(), until)))
                }
                Some((value, mut pending, until)) => match operator {
                    Some(operator) => {
                        pending.reverse();
                        match operator.full(key, value, &pending) {
                            Ok(v) => Some(Some((v, until))),
                            Err(_) => {
                                failures.fetch_add(1, Relaxed);
                                None
                            }
                        }
                    }
                    None => None,
                },
            };
            if let Some(found) = folded {
                return match found {
                    Some((v, NEVER)) => emit(Op::Put(&v)),
                    Some((v, until)) if until > horizon => emit(Op::PutUntil(&v, until)),
                    _ if bottom => Ok(()),
                    _ => emit(Op::Delete),
                };
            }
        } else if let Some(operator) = operator {
            // Operands alone, all unstamped: no expiry falls between them.
            let unstamped: Option<Vec<&[u8]>> = self
                .messages
                .iter()
                .map(|m| match m {
                    Message::Operand(o, 0) => Some(o.as_slice()),
                    _ => None,
                })
                .collect();
            match unstamped.as_deref() {
                Some([_]) | None => {}
                Some(newest_first) => {
                    if let Some(m) = operator.partial(key, newest_first) {
                        return emit(Op::Merge(&m));
                    }
                }
            }
        }
        for m in &self.messages {
            emit(m.op())?;
        }
        match &self.base {
            Some(Some((v, NEVER))) => emit(Op::Put(v)),
            Some(Some((v, until))) => emit(Op::PutUntil(v, *until)),
            Some(None) if !bottom => emit(Op::Delete),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::upsert::operator::{Append, U64Add};

    fn describe(o: Op<'_>) -> String {
        let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
        match o {
            Op::Put(v) => format!("put {}", text(v)),
            Op::PutUntil(v, until) => format!("put {} until {until}", text(v)),
            Op::Delete => "delete".into(),
            Op::Merge(v) => format!("merge {}", text(v)),
            Op::MergeAt(v, at) => format!("merge {} at {at}", text(v)),
            Op::Expire { until, at } => format!("expire {until} at {at}"),
        }
    }

    fn collapsed(stack: &Stack, op: &Operator, bottom: bool) -> Vec<String> {
        let failures = AtomicU64::new(0);
        let mut out = Vec::new();
        stack
            .collapse(b"k", Some(op), bottom, 0, &failures, |o| {
                out.push(describe(o));
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn spills_fold_what_they_can_without_reading_further() {
        let op = Operator(Arc::new(Append::new()));
        let mut s = Stack::default();
        assert!(!s.push(Op::Merge(b"c")));
        assert!(!s.push(Op::Merge(b"b")));
        assert_eq!(collapsed(&s, &op, false), ["merge bc"]);
        assert_eq!(collapsed(&s, &op, true), ["put bc"]);
        assert!(s.push(Op::Put(b"a")));
        assert_eq!(collapsed(&s, &op, false), ["put abc"]);
        let mut d = Stack::default();
        d.push(Op::Merge(b"x"));
        d.push(Op::Delete);
        assert_eq!(collapsed(&d, &op, false), ["put x"]);
        let mut gone = Stack::default();
        gone.push(Op::Delete);
        assert_eq!(collapsed(&gone, &op, false), ["delete"]);
        assert!(collapsed(&gone, &op, true).is_empty());
    }

    #[test]
    fn a_failed_fold_keeps_the_stack() {
        let op = Operator(Arc::new(U64Add));
        let mut s = Stack::default();
        s.push(Op::Merge(&1u64.to_le_bytes()));
        s.push(Op::Put(b"not a number"));
        let failures = AtomicU64::new(0);
        let mut n = 0;
        s.collapse(b"k", Some(&op), true, 0, &failures, |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((n, failures.load(Relaxed)), (2, 1));
        assert!(matches!(
            s.resolve(b"k", Some(&op)),
            Err(Error::MergeFailed { .. })
        ));
    }

    #[test]
    fn reads_fold_everything() {
        let op = Operator(Arc::new(U64Add));
        let mut s = Stack::default();
        for i in 1..=3u64 {
            s.push(Op::Merge(&i.to_le_bytes()));
        }
        assert_eq!(
            s.resolve(b"k", Some(&op)).unwrap(),
            Some((6u64.to_le_bytes().to_vec(), NEVER))
        );
        assert!(s.is_empty());
        s.push(Op::Merge(&1u64.to_le_bytes()));
        assert!(matches!(s.resolve(b"k", None), Err(Error::NoMergeOperator)));
    }

    /// A stack built from `ops`, newest first.
    fn stack(ops: &[Op<'_>]) -> Stack {
        let mut s = Stack::default();
        for &op in ops {
            s.push(op);
        }
        s
    }

    fn read(ops: &[Op<'_>]) -> Option<(String, u64)> {
        let op = Operator(Arc::new(Append::new()));
        let found = stack(ops).resolve(b"k", Some(&op)).unwrap();
        found.map(|(v, until)| (String::from_utf8(v).unwrap(), until))
    }

    #[test]
    fn messages_apply_to_the_key_as_it_was_when_written() {
        let v = |s: &str, until| Some((s.to_string(), until));
        // An operand written before the value expired keeps its expiry ...
        assert_eq!(
            read(&[Op::MergeAt(b"b", 5), Op::PutUntil(b"a", 10)]),
            v("ab", 10)
        );
        // ... one written at or after it starts from nothing, with no expiry.
        assert_eq!(
            read(&[Op::MergeAt(b"b", 10), Op::PutUntil(b"a", 10)]),
            v("b", NEVER)
        );
        // A change of expiry on a live key moves it; on an expired or absent key does nothing.
        let expire = |until, at| Op::Expire { until, at };
        assert_eq!(read(&[expire(50, 5), Op::PutUntil(b"a", 10)]), v("a", 50));
        assert_eq!(
            read(&[expire(NEVER, 5), Op::PutUntil(b"a", 10)]),
            v("a", NEVER)
        );
        assert_eq!(read(&[expire(50, 11), Op::PutUntil(b"a", 10)]), None);
        assert_eq!(read(&[expire(50, 1), Op::Delete]), None);
        assert_eq!(read(&[expire(50, 1)]), None);
        // An expiry set in the past is kept: the reader hides the value (see `live`).
        assert_eq!(read(&[expire(3, 5), Op::Put(b"a")]), v("a", 3));
        assert_eq!(live(read_found(&[expire(3, 5), Op::Put(b"a")]), || 5), None);
        assert!(live(read_found(&[Op::PutUntil(b"a", 10)]), || 9).is_some());
        assert!(live(read_found(&[Op::PutUntil(b"a", 10)]), || 10).is_none());
        // Operands and changes of expiry interleave: the expiry set before an operand holds.
        assert_eq!(
            read(&[
                Op::MergeAt(b"d", 30),
                expire(40, 20),
                Op::MergeAt(b"c", 12),
                Op::MergeAt(b"b", 5),
                Op::PutUntil(b"a", 10)
            ]),
            v("cd", 40)
        );
        // Unstamped operands never cut: they are older than every expiry below them.
        assert_eq!(read(&[Op::Merge(b"b"), Op::Put(b"a")]), v("ab", NEVER));
    }

    fn read_found(ops: &[Op<'_>]) -> Found {
        let op = Operator(Arc::new(Append::new()));
        stack(ops).resolve(b"k", Some(&op)).unwrap()
    }

    fn collapsed_at(ops: &[Op<'_>], bottom: bool, horizon: u64) -> Vec<String> {
        let op = Operator(Arc::new(Append::new()));
        let failures = AtomicU64::new(0);
        let mut out = Vec::new();
        stack(ops)
            .collapse(b"k", Some(&op), bottom, horizon, &failures, |o| {
                out.push(describe(o));
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn spills_drop_what_expired_before_every_message_above() {
        let ops = [Op::MergeAt(b"b", 5), Op::PutUntil(b"a", 10)];
        assert_eq!(collapsed_at(&ops, false, 9), ["put ab until 10"]);
        assert_eq!(collapsed_at(&ops, false, 10), ["delete"]);
        assert!(collapsed_at(&ops, true, 10).is_empty());
        // Stamped operands alone stay apart: an expiry below may fall between them.
        let stamped = [Op::MergeAt(b"c", 7), Op::MergeAt(b"b", 5)];
        assert_eq!(
            collapsed_at(&stamped, false, 0),
            ["merge c at 7", "merge b at 5"]
        );
        assert_eq!(collapsed_at(&stamped, true, 0), ["put bc"]);
        let expire = [Op::Expire { until: 9, at: 4 }];
        assert_eq!(collapsed_at(&expire, false, 0), ["expire 9 at 4"]);
        assert!(collapsed_at(&expire, true, 0).is_empty());
    }

    #[test]
    fn arrivals_fold_by_the_time_of_the_operand() {
        let op = Operator(Arc::new(Append::new()));
        let put = |a: Option<Arrival>| match a {
            Some(Arrival::Put(v, until)) => (String::from_utf8(v).unwrap(), until),
            _ => panic!("a full merge"),
        };
        let live = on_arrival(&op, b"k", Op::PutUntil(b"a", 10), b"b", 9);
        assert_eq!(put(live), ("ab".into(), 10));
        let expired = on_arrival(&op, b"k", Op::PutUntil(b"a", 10), b"b", 10);
        assert_eq!(put(expired), ("b".into(), NEVER));
        assert!(on_arrival(&op, b"k", Op::MergeAt(b"a", 3), b"b", 4).is_none());
        assert!(matches!(
            on_arrival(&op, b"k", Op::Merge(b"a"), b"b", 0),
            Some(Arrival::Merge(_))
        ));
        assert_eq!(
            expire_on_arrival(Op::PutUntil(b"a", 10), 20, 9),
            Some(Some(Op::PutUntil(b"a", 20)))
        );
        assert_eq!(
            expire_on_arrival(Op::PutUntil(b"a", 10), 20, 10),
            Some(None)
        );
        assert_eq!(
            expire_on_arrival(Op::Put(b"a"), NEVER, 1),
            Some(Some(Op::Put(b"a")))
        );
        assert_eq!(expire_on_arrival(Op::Merge(b"a"), 5, 1), None);
    }
}
