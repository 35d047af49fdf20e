//! A node's lists read as one stream, each key collapsed: what spills, splits and list merges
//! write back out (see `collapse`).

use crate::collapse::cursor::Direction;
use crate::collapse::Collapse;
use crate::compaction_filter::{self, CompactionFilter};
use crate::error::Result;
use crate::list::ranges::RangeSet;
use crate::list::{ListCursor, ListRef, Readahead};
use crate::record::Op;
use crate::stats::Counters;
use crate::upsert::fold::Stack;
use crate::upsert::operator::Operator;

/// How a rewrite treats what it reads.
pub struct Rewrite<'a> {
    /// No older list below can hold the keys: deletions are consumed instead of emitted, and
    /// operands fold into nothing.
    pub bottom: bool,
    /// No message above the lists was written before this time: values that expired by then
    /// are deleted (see `Stack::collapse`).
    pub horizon: u64,
    pub operator: Option<&'a Operator>,
    /// The keyspace's compaction filter, shown every value written out.
    pub filter: Option<&'a dyn CompactionFilter>,
    pub counters: &'a Counters,
    /// Range deletes of lists above these, newer than all of them: the keys they cover are
    /// gone and are not written out (a sweep collecting a leaf under them).
    pub above: RangeSet,
}

/// Stream the union of `lists` (newest first) forward to `emit`, each key collapsed (see
/// `Stack::collapse`): its newest record, or its operands folded as far as the operator can
/// without reading further, then filtered.
pub fn collapse_lists(
    lists: &[ListRef],
    how: &Rewrite<'_>,
    mut emit: impl FnMut(u64, &[u8], Op<'_>) -> Result<()>,
) -> Result<()> {
    let cursors = lists
        .iter()
        .map(|l| ListCursor::new(l.clone(), &l.span, Direction::Forward, Readahead::MERGE))
        .collect::<Result<Vec<_>>>()?;
    let mut m = Collapse::new(cursors, Direction::Forward)?;
    let mut stack = Stack::default();
    let mut key = Vec::new();
    let mut changed = Vec::new();
    let mut out = |route: u64, key: &[u8], op: Op<'_>| -> Result<()> {
        let op = match how.filter {
            Some(f) => compaction_filter::apply(f, key, op, how.bottom, how.counters, &mut changed),
            None => Some(op),
        };
        match op {
            Some(Op::Delete) if how.bottom => Ok(()),
            Some(op) => emit(route, key, op),
            None => Ok(()),
        }
    };
    while let Some(e) = m.peek() {
        if !how.above.is_empty() && how.above.covers(e.key) {
            m.advance()?;
            continue;
        }
        if e.op.is_base() {
            let op = match e.op {
                Op::PutUntil(_, until) if until <= how.horizon => Op::Delete,
                op => op,
            };
            out(e.route, e.key, op)?;
            m.advance()?;
            continue;
        }
        let route = e.route;
        key.clear();
        key.extend_from_slice(e.key);
        stack.clear();
        m.take_stack(&mut stack)?;
        stack.collapse(
            &key,
            how.operator,
            how.bottom,
            how.horizon,
            &how.counters.merge_failures,
            |op| out(route, &key, op),
        )?;
    }
    Ok(())
}
