//! Compaction filters (RocksDB's `CompactionFilter`): a callback that sees values as spills,
//! splits and list merges rewrite them, and may keep, remove or change each one.
//!
//! It is lazy: a value is filtered when the tree happens to rewrite it — when its node spills
//! or is collected, its list is merged — not when it is written nor when it is read, and not
//! while it sits in the root buffer. A value the filter would remove is still returned by
//! reads until then. For data that must vanish at a time, use expiry (see
//! [`Db::put_ttl`](crate::Db::put_ttl)); a filter is for what depends on the value, or on
//! something outside the store (a schema, a retention policy), and may run late.
//!
//! A filter that panics keeps the record (counted in `Stats::filter_failures`) and fails
//! nothing else.

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::record::Op;
use crate::stats::Counters;

/// What a [`CompactionFilter`] makes of one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep it as it is.
    Keep,
    /// Delete the key: reads find it absent from then on (an older value does not come
    /// back).
    Remove,
    /// Replace the value (its expiry, if it has one, stays).
    Change(Vec<u8>),
}

/// Decides, as the tree rewrites them, which values stay (see the module's doc).
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use std::sync::Arc;
/// use spillway::{CompactionFilter, Db, Decision, Options};
///
/// /// Drops every value of the retired "tmp:" keys, and trims the others to 8 bytes.
/// struct Retention;
/// impl CompactionFilter for Retention {
///     fn name(&self) -> &str {
///         "retention"
///     }
///     fn filter(&self, key: &[u8], value: &[u8]) -> Decision {
///         if key.starts_with(b"tmp:") {
///             Decision::Remove
///         } else if value.len() > 8 {
///             Decision::Change(value[..8].to_vec())
///         } else {
///             Decision::Keep
///         }
///     }
/// }
/// let db = Db::open(dir.path(), Options::default().compaction_filter(Arc::new(Retention)))?;
/// db.put("tmp:1", "x")?;
/// assert!(db.get("tmp:1")?.is_some()); // lazy: until a spill rewrites it
/// # Ok(()) }
/// ```
pub trait CompactionFilter: Send + Sync {
    /// A name for messages and stats.
    fn name(&self) -> &str;

    /// What to do with `value`, the value of `key` being rewritten. Called from the spill
    /// thread, once per value rewritten (a value may be seen again by a later rewrite).
    fn filter(&self, key: &[u8], value: &[u8]) -> Decision;
}

/// Filter the record `op` of `key` a rewrite emits: the record to write instead (`None`: none,
/// at the bottom of the tree, where a removed key needs no tombstone).
pub(crate) fn apply<'a>(
    filter: &dyn CompactionFilter,
    key: &[u8],
    op: Op<'a>,
    bottom: bool,
    counters: &Counters,
    changed: &'a mut Vec<u8>,
) -> Option<Op<'a>> {
    let (value, until) = match op {
        Op::Put(v) => (v, None),
        Op::PutUntil(v, until) => (v, Some(until)),
        _ => return Some(op),
    };
    let decision = catch_unwind(AssertUnwindSafe(|| filter.filter(key, value)));
    match decision {
        Ok(Decision::Keep) => Some(op),
        Ok(Decision::Remove) => {
            Counters::bump(&counters.filter_removed);
            (!bottom).then_some(Op::Delete)
        }
        Ok(Decision::Change(v)) => {
            Counters::bump(&counters.filter_changed);
            *changed = v;
            Some(match until {
                None => Op::Put(changed),
                Some(until) => Op::PutUntil(changed, until),
            })
        }
        Err(_) => {
            Counters::bump(&counters.filter_failures);
            Some(op)
        }
    }
}

impl std::fmt::Debug for dyn CompactionFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompactionFilter({})", self.name())
    }
}
