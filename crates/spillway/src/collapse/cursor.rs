//! The one interface every sorted source of records is read through — a list view, a root
//! buffer — so that spills, splits and scans merge them the same way (see `collapse`).

use crate::error::Result;
use crate::order::Span;
use crate::record::Op;

/// Which way a cursor moves through position order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

/// A record a cursor is at, borrowed from the cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub route: u64,
    pub key: &'a [u8],
    pub op: Op<'a>,
}

impl Entry<'_> {
    pub fn pos(&self) -> (u64, &[u8]) {
        (self.route, self.key)
    }
}

/// A position in a sorted run of records, moving one way. A key has one record, or a stack
/// of merge operands over what they fold into: a stack's records come together, newest first
/// whichever way the cursor moves.
pub trait Cursor {
    /// The record the cursor is at; `None` once it has moved past its last.
    fn peek(&self) -> Option<Entry<'_>>;
    /// Move to the next record (in the cursor's direction).
    fn advance(&mut self) -> Result<()>;
    /// Whether a range delete of this source covers position `(route, key)`: every record of
    /// it in *older* sources is gone (its own records of the key are newer than its range
    /// deletes).
    fn covers(&self, _route: u64, _key: &[u8]) -> bool {
        false
    }
    /// Whether this source has range deletes at all, so that [`covers`](Self::covers) may
    /// say yes: most have none, and a merge asks only those that do.
    fn may_cover(&self) -> bool {
        false
    }
    /// The positions of the range delete that [`covers`](Self::covers) `(route, key)`.
    fn covering(&self, _route: u64, _key: &[u8]) -> Option<Span> {
        None
    }
    /// Skip every record outside `keep` (ahead of the cursor): a seek past what a newer
    /// source's range delete covers. Stepping over the records one by one is as correct.
    fn narrow(&mut self, _keep: &Span) -> Result<()> {
        Ok(())
    }
}
