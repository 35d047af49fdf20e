//! Merge operators: what turns a key's merge operands into a value (B^ε-tree upserts,
//! RocksDB's `MergeOperator`).
//!
//! [`Db::merge`](crate::Db::merge) writes an *operand* — "add 5", "append this" — without
//! reading the key. The operand rides the spills down the tree like any record, and wherever it
//! meets older records of its key it is folded into them: in the root buffer as it is written,
//! in spills ([`partial_merge`](MergeOperator::partial_merge), when no value can be below), at
//! the bottom of the tree ([`full_merge`](MergeOperator::full_merge)), and by reads, which fold
//! whatever has not met yet. See `fold` for where each happens.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::error::{Error, Result};

/// Folds merge operands into values. Set one with
/// [`Options::merge_operator`](crate::Options::merge_operator); its [`name`](Self::name) is
/// recorded in the store, and the store then opens only with an operator of that name.
///
/// An operator must be deterministic: the same inputs give the same output wherever and
/// however often they are folded (a crash may fold the same operands again from the log).
/// Partial merges must be associative with full merges: folding `[a, b]` in one full merge
/// equals one full merge of the operand `partial_merge([a, b])`.
///
/// A failure (an `Err`, or a panic, which is caught) fails the read of that key with
/// [`Error::MergeFailed`]; spills and splits keep the operands unfolded instead, so the store
/// stays usable for every other key, and a later put of the key replaces them.
///
/// ```
/// use std::sync::Arc;
/// use spillway::{MergeOperator, Options};
///
/// /// Keeps the longest value written.
/// struct Longest;
///
/// impl MergeOperator for Longest {
///     fn name(&self) -> &str {
///         "example.longest"
///     }
///     fn full_merge(&self, _key: &[u8], base: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
///         let longest = operands.iter().copied().chain(base).max_by_key(|v| v.len());
///         Ok(longest.unwrap_or_default().to_vec())
///     }
///     fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
///         self.full_merge(key, None, operands).ok()
///     }
/// }
///
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = spillway::Db::open(dir.path(), Options::default().merge_operator(Arc::new(Longest)))?;
/// db.merge("k", "ab")?;
/// db.merge("k", "abcd")?;
/// db.merge("k", "a")?;
/// assert_eq!(db.get("k")?.as_deref(), Some(&b"abcd"[..]));
/// # Ok(()) }
/// ```
pub trait MergeOperator: Send + Sync {
    /// The name recorded in the store. Change it whenever the operator's results change:
    /// a store opened with an operator of another name is [`Error::MergeOperatorMismatch`].
    fn name(&self) -> &str;

    /// The value of `key` given its `base` value (`None`: absent or deleted) and the operands
    /// written since, oldest first (at least one).
    fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String>;

    /// One operand equivalent to `operands` (oldest first, at least two), or `None` if they
    /// cannot be combined without the base: they then travel on separately, and reads fold
    /// them one by one. The default combines nothing.
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let _ = (key, operands);
        None
    }

    /// Whether `operand` is one this operator can fold; checked by `merge` before anything is
    /// written, so that a malformed operand is refused ([`Error::InvalidOperand`]) rather
    /// than stored where it would fail every read of its key. The default accepts anything.
    fn check_operand(&self, operand: &[u8]) -> std::result::Result<(), String> {
        let _ = operand;
        Ok(())
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MergeOperator({:?})", self.name())
    }
}

/// The built-in operator of name `name` (as [`MergeOperator::name`] gives it and a store
/// records), if there is one: for tools that open stores of any operator, as the CLI does.
///
/// ```
/// let add = spillway::operators::by_name("spillway.u64add").unwrap();
/// assert_eq!(add.name(), "spillway.u64add");
/// assert!(spillway::operators::by_name("someone.else").is_none());
/// ```
pub fn by_name(name: &str) -> Option<Arc<dyn MergeOperator>> {
    let op: Arc<dyn MergeOperator> = match name {
        "spillway.u64add" => Arc::new(U64Add),
        "spillway.append" => Arc::new(Append::new()),
        "spillway.max" => Arc::new(Max),
        "spillway.min" => Arc::new(Min),
        _ => {
            let hex = name.strip_prefix("spillway.append:")?;
            Arc::new(Append::with_separator(from_hex(hex)?))
        }
    };
    Some(op)
}

/// The built-ins by the short names front ends take (`spillway merge --op add`, Python's
/// `merge_operator="add"`), with the names stores record.
pub const SHORT_NAMES: [(&str, &str); 4] = [
    ("add", "spillway.u64add"),
    ("append", "spillway.append"),
    ("max", "spillway.max"),
    ("min", "spillway.min"),
];

/// A built-in by its short name ([`SHORT_NAMES`]) or by the name a store records.
///
/// ```
/// let add = spillway::operators::by_short_name("add").unwrap();
/// assert_eq!(add.name(), "spillway.u64add");
/// assert!(spillway::operators::by_short_name("spillway.max").is_some());
/// assert!(spillway::operators::by_short_name("sum").is_none());
/// ```
pub fn by_short_name(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match SHORT_NAMES.iter().find(|(short, _)| *short == name) {
        Some((_, full)) => by_name(full),
        None => by_name(name),
    }
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Counters: values and operands are unsigned 64-bit integers, 8 bytes little-endian, and a
/// merge adds them, wrapping around at 2^64 as RocksDB's `UInt64AddOperator` does. Wrapping
/// (not saturating) keeps every order of folding equal, and makes a signed counter work too:
/// adding `(-n as i64) as u64` subtracts `n`. An absent key counts as 0. Operands of another
/// length are refused when written; a value of another length fails the reads that fold into
/// it ([`Error::MergeFailed`]) until it is overwritten.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use std::sync::Arc;
/// let opts = spillway::Options::default().merge_operator(Arc::new(spillway::operators::U64Add));
/// let db = spillway::Db::open(dir.path(), opts)?;
/// db.merge("visits", 5u64.to_le_bytes())?;
/// db.merge("visits", (-2i64 as u64).to_le_bytes())?;
/// assert_eq!(db.get("visits")?, Some(3u64.to_le_bytes().to_vec()));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct U64Add;

fn as_u64(bytes: &[u8], what: &str) -> std::result::Result<u64, String> {
    let b: [u8; 8] = bytes.try_into().map_err(|_| match bytes.len() {
        1 => format!("{what} is 1 byte, not an 8-byte u64"),
        n => format!("{what} is {n} bytes, not an 8-byte u64"),
    })?;
    Ok(u64::from_le_bytes(b))
}

impl MergeOperator for U64Add {
    fn name(&self) -> &str {
        "spillway.u64add"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut sum = match base {
            Some(b) => as_u64(b, "the value")?,
            None => 0,
        };
        for op in operands {
            sum = sum.wrapping_add(as_u64(op, "an operand")?);
        }
        Ok(sum.to_le_bytes().to_vec())
    }
    fn partial_merge(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        self.full_merge(key, None, operands).ok()
    }
    fn check_operand(&self, operand: &[u8]) -> std::result::Result<(), String> {
        as_u64(operand, "the operand").map(drop)
    }
}

/// Lists: each operand is appended to the value, with an optional separator between the
/// pieces (none before the first). Never fails.
///
/// ```
/// # fn main() -> spillway::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// use std::sync::Arc;
/// let tags = spillway::operators::Append::with_separator(",");
/// let db = spillway::Db::open(dir.path(), spillway::Options::default().merge_operator(Arc::new(tags)))?;
/// db.merge("tags", "red")?;
/// db.merge("tags", "blue")?;
/// assert_eq!(db.get("tags")?.as_deref(), Some(&b"red,blue"[..]));
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Append {
    separator: Vec<u8>,
    name: String,
}

impl Append {
    /// Appends with nothing between the pieces.
    pub fn new() -> Append {
        Append {
            separator: Vec::new(),
            name: "spillway.append".into(),
        }
    }

    /// Appends with `separator` between the pieces. The separator is part of the name
    /// recorded in the store.
    pub fn with_separator(separator: impl AsRef<[u8]>) -> Append {
        let separator = separator.as_ref().to_vec();
        if separator.is_empty() {
            return Append::new();
        }
        let hex: String = separator.iter().map(|b| format!("{b:02x}")).collect();
        Append {
            name: format!("spillway.append:{hex}"),
            separator,
        }
    }

    fn join(&self, pieces: impl Iterator<Item = impl AsRef<[u8]>>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in pieces.enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.separator);
            }
            out.extend_from_slice(p.as_ref());
        }
        out
    }
}

impl Default for Append {
    fn default() -> Self {
        Append::new()
    }
}

impl MergeOperator for Append {
    fn name(&self) -> &str {
        &self.name
    }
    fn full_merge(
        &self,
        _key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        Ok(self.join(base.into_iter().chain(operands.iter().copied())))
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(operands.iter()))
    }
}

/// Keeps the greatest value written, comparing bytes lexicographically as RocksDB's `max`
/// operator does (encode numbers big-endian, fixed width, to compare them as numbers).
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

/// Keeps the least value written, comparing bytes lexicographically (see [`Max`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Min;

/// The greatest (`max`) or least of the base and the operands.
fn extreme(base: Option<&[u8]>, operands: &[&[u8]], max: bool) -> Vec<u8> {
    let all = base.into_iter().chain(operands.iter().copied());
    let pick = if max { all.max() } else { all.min() };
    pick.unwrap_or_default().to_vec()
}

impl MergeOperator for Max {
    fn name(&self) -> &str {
        "spillway.max"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        Ok(extreme(base, operands, true))
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(extreme(None, operands, true))
    }
}

impl MergeOperator for Min {
    fn name(&self) -> &str {
        "spillway.min"
    }
    fn full_merge(
        &self,
        _key: &[u8],
        base: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        Ok(extreme(base, operands, false))
    }
    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(extreme(None, operands, false))
    }
}

/// The store's operator as the engine calls it: a panic inside is caught and becomes a
/// failure, so a bad operator fails the fold it was asked for and nothing else.
#[derive(Clone)]
pub(crate) struct Operator(pub Arc<dyn MergeOperator>);

impl Operator {
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// [`MergeOperator::full_merge`], with operands given newest first (as reads meet them).
    pub fn full(&self, key: &[u8], base: Option<&[u8]>, newest_first: &[&[u8]]) -> Result<Vec<u8>> {
        let op = &self.0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            oldest_first(newest_first, |ops| op.full_merge(key, base, ops))
        }));
        let reason = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(why)) => why,
            Err(panic) => format!("it panicked: {}", panic_message(&panic)),
        };
        Err(Error::MergeFailed {
            operator: self.name().to_owned(),
            key: key.to_vec(),
            reason,
        })
    }

    /// [`MergeOperator::partial_merge`], operands newest first; `None` for a panic too.
    pub fn partial(&self, key: &[u8], newest_first: &[&[u8]]) -> Option<Vec<u8>> {
        let op = &self.0;
        catch_unwind(AssertUnwindSafe(|| {
            oldest_first(newest_first, |ops| op.partial_merge(key, ops))
        }))
        .ok()
        .flatten()
    }

    pub fn check(&self, operand: &[u8]) -> Result<()> {
        let op = &self.0;
        match catch_unwind(AssertUnwindSafe(|| op.check_operand(operand))) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(reason)) => Err(Error::InvalidOperand {
                operator: self.name().to_owned(),
                reason,
            }),
            Err(panic) => Err(Error::InvalidOperand {
                operator: self.name().to_owned(),
                reason: format!("its check panicked: {}", panic_message(&panic)),
            }),
        }
    }
}

/// Call `f` with `newest_first` reversed; the write path folds one or two operands per merge,
/// which need no allocation.
fn oldest_first<T>(newest_first: &[&[u8]], f: impl FnOnce(&[&[u8]]) -> T) -> T {
    match newest_first {
        [one] => f(&[one]),
        [b, a] => f(&[a, b]),
        _ => {
            let ops: Vec<&[u8]> = newest_first.iter().rev().copied().collect();
            f(&ops)
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    #[test]
    fn u64add_wraps_and_checks_lengths() {
        let op = Operator(Arc::new(U64Add));
        assert_eq!(op.full(b"k", None, &[&n(2), &n(3)]).unwrap(), n(5));
        assert_eq!(op.full(b"k", Some(&n(u64::MAX)), &[&n(2)]).unwrap(), n(1));
        assert_eq!(op.partial(b"k", &[&n(2), &n(3)]), Some(n(5)));
        assert!(matches!(
            op.full(b"k", Some(b"abc"), &[&n(1)]),
            Err(Error::MergeFailed { .. })
        ));
        assert!(matches!(
            op.check(b"abc"),
            Err(Error::InvalidOperand { .. })
        ));
        assert!(op.check(&n(1)).is_ok());
    }

    #[test]
    fn append_folds_oldest_first_and_partials_associate() {
        let op = Operator(Arc::new(Append::with_separator(",")));
        // Newest first, as reads give them.
        assert_eq!(op.full(b"k", Some(b"a"), &[b"c", b"b"]).unwrap(), b"a,b,c");
        let bc = op.partial(b"k", &[b"c", b"b"]).unwrap();
        assert_eq!(op.full(b"k", Some(b"a"), &[&bc]).unwrap(), b"a,b,c");
        assert_eq!(op.full(b"k", None, &[b"x"]).unwrap(), b"x");
        assert_eq!(by_name(op.name()).unwrap().name(), "spillway.append:2c");
    }

    #[test]
    fn max_and_min_compare_bytes() {
        let max = Operator(Arc::new(Max));
        let min = Operator(Arc::new(Min));
        assert_eq!(max.full(b"k", Some(b"b"), &[b"a", b"c"]).unwrap(), b"c");
        assert_eq!(min.full(b"k", Some(b"b"), &[b"a", b"c"]).unwrap(), b"a");
        assert_eq!(max.partial(b"k", &[b"a", b"ab"]), Some(b"ab".to_vec()));
    }

    #[test]
    fn a_panic_is_a_failure() {
        struct Boom;
        impl MergeOperator for Boom {
            fn name(&self) -> &str {
                "boom"
            }
            fn full_merge(
                &self,
                _: &[u8],
                _: Option<&[u8]>,
                _: &[&[u8]],
            ) -> std::result::Result<Vec<u8>, String> {
                panic!("boom")
            }
            fn partial_merge(&self, _: &[u8], _: &[&[u8]]) -> Option<Vec<u8>> {
                panic!("boom")
            }
        }
        let op = Operator(Arc::new(Boom));
        match op.full(b"k", None, &[b"x"]) {
            Err(Error::MergeFailed { reason, .. }) => assert!(reason.contains("boom"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(op.partial(b"k", &[b"x", b"y"]), None);
    }

    #[test]
    fn every_builtin_is_found_by_its_name() {
        let all: Vec<Arc<dyn MergeOperator>> = vec![
            Arc::new(U64Add),
            Arc::new(Append::new()),
            Arc::new(Append::with_separator("\n")),
            Arc::new(Max),
            Arc::new(Min),
        ];
        for op in all {
            assert_eq!(by_name(op.name()).unwrap().name(), op.name());
        }
        assert!(by_name("spillway.append:zz").is_none());
    }
}
