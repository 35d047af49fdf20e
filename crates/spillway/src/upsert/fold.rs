//! A key's records, newest first, and what they fold into: the one place merge operands meet
//! the operator (see `operator`).
//!
//! A key's history is a *stack*: merge operands, newest first, down to a *base* — a put or a
//! delete — or to the bottom of the tree. Sources hand over their part of a stack newest first
//! (a root buffer, a list: each keeps a key's records together, operands above what they fold
//! into). Where a stack meets the operator:
//!
//! - **the root buffer** ([`on_arrival`]) folds an operand into the key's newest record as it
//!   arrives, where the operator can without reading further;
//! - **reads** ([`Stack::resolve`]) fold it all: the base, or nothing, plus every operand;
//! - **spills and merges of lists** ([`Stack::collapse`]) fold what they can without reading
//!   further: a stack ending in a base becomes one put; operands alone become one operand
//!   (a partial merge), or one put at the bottom of the tree, where nothing older can be.
//!
//! A failing operator never stops a spill: the stack is written on as it was, and only reads
//! of that key report the failure.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::{Error, Result};
use crate::record::Op;
use crate::upsert::operator::Operator;

/// What an operand arriving in the root buffer and the key's newest record there fold into.
pub enum Arrival {
    /// A value: the record was a put or a delete (a full merge).
    Put(Vec<u8>),
    /// One operand standing for both (a partial merge).
    Merge(Vec<u8>),
}

/// Fold `operand` into `newest`, the newest record of `key` in the root buffer, if the
/// operator can without reading further; `None` (the operand is stacked on it) if it cannot,
/// or fails — a failure is left for the reads of the key to report.
pub fn on_arrival(
    operator: &Operator,
    key: &[u8],
    newest: Op<'_>,
    operand: &[u8],
) -> Option<Arrival> {
    match newest {
        Op::Put(v) => operator
            .full(key, Some(v), &[operand])
            .ok()
            .map(Arrival::Put),
        Op::Delete => operator.full(key, None, &[operand]).ok().map(Arrival::Put),
        Op::Merge(m) => operator.partial(key, &[operand, m]).map(Arrival::Merge),
    }
}

/// The records of one key gathered so far, newest first.
#[derive(Debug, Default)]
pub struct Stack {
    /// Operands, newest first.
    operands: Vec<Vec<u8>>,
    /// The base under them, once reached: `Some(None)` for a delete.
    base: Option<Option<Vec<u8>>>,
    /// List pages that held records of the key: what a read paid for it.
    pub pages: u32,
}

impl Stack {
    pub fn clear(&mut self) {
        self.operands.clear();
        self.base = None;
        self.pages = 0;
    }

    /// Add the next older record; `true` once the stack is complete (a base reached), after
    /// which older records no longer matter.
    pub fn push(&mut self, op: Op<'_>) -> bool {
        debug_assert!(!self.is_complete(), "nothing matters below a base");
        match op {
            Op::Put(v) => self.base = Some(Some(v.to_vec())),
            Op::Delete => self.base = Some(None),
            Op::Merge(o) => self.operands.push(o.to_vec()),
        }
        self.is_complete()
    }

    pub fn is_complete(&self) -> bool {
        self.base.is_some()
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.operands.is_empty()
    }

    pub fn operands(&self) -> usize {
        self.operands.len()
    }

    /// The key's value: the base (absent if none was reached: nothing lies below) with every
    /// operand folded in. Leaves the stack empty.
    pub fn resolve(&mut self, key: &[u8], operator: Option<&Operator>) -> Result<Option<Vec<u8>>> {
        let base = self.base.take().flatten();
        if self.operands.is_empty() {
            return Ok(base);
        }
        let operator = operator.ok_or(Error::NoMergeOperator)?;
        let newest_first: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
        let value = operator.full(key, base.as_deref(), &newest_first);
        self.operands.clear();
        value.map(Some)
    }

    /// The records that replace the stack where a spill or merge writes it, newest first,
    /// given to `emit`. `bottom`: nothing older than the stack can exist (the bottom of the
    /// tree), so a delete need not be kept and operands fold with no base. A fold that fails
    /// leaves the stack as it was (counted in `failures`).
    pub fn collapse(
        &self,
        key: &[u8],
        operator: Option<&Operator>,
        bottom: bool,
        failures: &AtomicU64,
        mut emit: impl FnMut(Op<'_>) -> Result<()>,
    ) -> Result<()> {
        let base = self.base.as_ref().map(Option::as_deref);
        let newest_first: Vec<&[u8]> = self.operands.iter().map(Vec::as_slice).collect();
        if let Some(operator) = operator.filter(|_| !newest_first.is_empty()) {
            if base.is_some() || bottom {
                match operator.full(key, base.flatten(), &newest_first) {
                    Ok(v) => return emit(Op::Put(&v)),
                    Err(_) => {
                        failures.fetch_add(1, Relaxed);
                    }
                }
            } else if newest_first.len() == 1 {
                return emit(Op::Merge(newest_first[0]));
            } else if let Some(m) = operator.partial(key, &newest_first) {
                return emit(Op::Merge(&m));
            }
        }
        for o in newest_first {
            emit(Op::Merge(o))?;
        }
        match base {
            Some(Some(v)) => emit(Op::Put(v)),
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

    fn collapsed(stack: &Stack, op: &Operator, bottom: bool) -> Vec<String> {
        let failures = AtomicU64::new(0);
        let mut out = Vec::new();
        stack
            .collapse(b"k", Some(op), bottom, &failures, |o| {
                out.push(match o {
                    Op::Put(v) => format!("put {}", String::from_utf8_lossy(v)),
                    Op::Delete => "delete".into(),
                    Op::Merge(v) => format!("merge {}", String::from_utf8_lossy(v)),
                });
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
        s.collapse(b"k", Some(&op), true, &failures, |_| {
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
            Some(6u64.to_le_bytes().to_vec())
        );
        assert!(s.is_empty());
        s.push(Op::Merge(&1u64.to_le_bytes()));
        assert!(matches!(s.resolve(b"k", None), Err(Error::NoMergeOperator)));
    }
}
