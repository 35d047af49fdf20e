//! A node's lists read as one stream, each key collapsed: what spills, splits and list merges
//! write back out (see `collapse`).

use std::sync::atomic::AtomicU64;

use crate::collapse::cursor::Direction;
use crate::collapse::Collapse;
use crate::error::Result;
use crate::list::{ListCursor, ListRef, Readahead};
use crate::record::Op;
use crate::upsert::fold::Stack;
use crate::upsert::operator::Operator;

/// Stream the union of `lists` (newest first) forward to `emit`, each key collapsed (see
/// `Stack::collapse`): its newest record, or its operands folded as far as `operator` can
/// without reading further. `bottom`: no older list below can hold the keys, so deletions
/// are consumed instead of emitted and operands fold into nothing. `horizon`: no message
/// above the lists was written before it, so values that expired by then are deleted (see
/// `Stack::collapse`).
pub fn collapse_lists(
    lists: &[ListRef],
    bottom: bool,
    horizon: u64,
    operator: Option<&Operator>,
    failures: &AtomicU64,
    mut emit: impl FnMut(u64, &[u8], Op<'_>) -> Result<()>,
) -> Result<()> {
    let cursors = lists
        .iter()
        .map(|l| ListCursor::new(l.clone(), &l.span, Direction::Forward, Readahead::MERGE))
        .collect::<Result<Vec<_>>>()?;
    let mut m = Collapse::new(cursors, Direction::Forward);
    let mut stack = Stack::default();
    let mut key = Vec::new();
    while let Some(e) = m.peek() {
        if e.op.is_base() {
            let op = match e.op {
                Op::PutUntil(_, until) if until <= horizon => Op::Delete,
                op => op,
            };
            if !(bottom && op == Op::Delete) {
                emit(e.route, e.key, op)?;
            }
            m.advance()?;
            continue;
        }
        let route = e.route;
        key.clear();
        key.extend_from_slice(e.key);
        stack.clear();
        m.take_stack(&mut stack)?;
        stack.collapse(&key, operator, bottom, horizon, failures, |op| {
            emit(route, &key, op)
        })?;
    }
    Ok(())
}
