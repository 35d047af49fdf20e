//! The sorted-set commands over a range of members: `ZRANGE` (by rank, `BYSCORE`, `BYLEX`,
//! `REV`, `LIMIT`, `WITHSCORES`) and the older forms of it (`ZREVRANGE`, `Z[REV]RANGEBYSCORE`,
//! `Z[REV]RANGEBYLEX`), `ZRANGESTORE`, `ZCOUNT`, `ZLEXCOUNT` and `ZREMRANGEBYRANK|SCORE|LEX`,
//! parsed as Redis 7.0's `zrangeGenericCommand` parses them (the same options, errors and
//! order of checks).
//!
//! Every range is one run of the score index (`zsets`), read in either direction:
//! - **by score**: a seek to the lower (or upper) bound's key, then the members up to the
//!   other: O(offset + members returned). `ZCOUNT` counts them: O(count), where Redis's
//!   skiplist is O(log N);
//! - **by rank**: the members before the range are skipped from whichever end is nearer:
//!   O(min(rank, size - rank) + members returned);
//! - **by lex**: meant for members of one score. When every score is the same (the first and
//!   the last in the index are), a seek, as by score. When they differ, Redis's answer is its
//!   walk in score order — from the first member past the near bound to the first past the
//!   far one, as a small sorted set (a listpack) answers; we walk so too, reading from the
//!   start: O(position).

use std::cmp::Ordering;
use std::ops::Bound;

use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Fields, Type};
use super::score;
use super::zsets::{self, index_bounds, index_entry, index_key, Scored};
use super::{integer, not_an_integer, CmdResult};
use crate::resp::Reply;

type Result = CmdResult;

/// Records of an ordered space, each its key and value.
type Records = Box<dyn Iterator<Item = spillway::Result<(Vec<u8>, Vec<u8>)>>>;

/// Records of the score index in order or reversed, decoded only when taken: skipping past
/// an offset or a rank copies no member.
struct Walk {
    records: Records,
    fields: Fields,
}

impl Walk {
    fn empty(fields: &Fields) -> Walk {
        Walk {
            records: Box::new(std::iter::empty()),
            fields: fields.clone(),
        }
    }

    /// Step over `n` records: false if the walk ended first.
    fn step_over(&mut self, n: u64) -> CmdResult<bool> {
        for _ in 0..n {
            match self.records.next() {
                None => return Ok(false),
                Some(record) => drop(record?),
            }
        }
        Ok(true)
    }

    /// The next record's index key, undecoded.
    fn next_key(&mut self) -> CmdResult<Option<Vec<u8>>> {
        Ok(self.records.next().transpose()?.map(|(k, _)| k))
    }

    /// The member of index key `k` (see `zsets::index_entry`), borrowed.
    fn member<'k>(&self, k: &'k [u8]) -> &'k [u8] {
        &self.fields.sub(k)[9..]
    }
}

impl Iterator for Walk {
    type Item = CmdResult<Scored>;

    fn next(&mut self) -> Option<CmdResult<Scored>> {
        Some(match self.records.next()? {
            Ok((k, _)) => {
                let (s, member) = index_entry(&self.fields, &k);
                Ok((member, s))
            }
            Err(e) => Err(e.into()),
        })
    }
}

// ---- Ranges ----

/// A range of scores: `min` and `max`, each included or not (`(1.5`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub min_ex: bool,
    pub max: f64,
    pub max_ex: bool,
}

impl ScoreRange {
    /// `min` and `max` as `zslParseRange` reads them (`score::parse_bound`), or `None`.
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let bound = |arg: &[u8]| match arg.first() {
            Some(b'(') => Some((score::parse_bound(&arg[1..])?, true)),
            _ => Some((score::parse_bound(arg)?, false)),
        };
        let ((min, min_ex), (max, max_ex)) = (bound(min)?, bound(max)?);
        Some(ScoreRange {
            min,
            min_ex,
            max,
            max_ex,
        })
    }

    /// The range's run of the score index: its first key and the first past it.
    fn keys(&self, fields: &Fields) -> (Vec<u8>, Vec<u8>) {
        let from = match self.min_ex {
            true => score::ordered_after(self.min),
            false => score::ordered(self.min),
        };
        let to = match self.max_ex {
            true => score::ordered(self.max),
            false => score::ordered_after(self.max),
        };
        (fields.tagged(b's', &from), fields.tagged(b's', &to))
    }
}

/// One end of a lex range: `-`, `+`, `[member` (included) or `(member` (excluded).
#[derive(Clone, Debug, PartialEq)]
pub enum LexBound {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    In(Vec<u8>),
    Ex(Vec<u8>),
}

impl LexBound {
    /// As `zslParseLexRangeItem` reads it, or `None`.
    fn parse(arg: &[u8]) -> Option<LexBound> {
        // `+` and `-` stand alone (in C: the next byte ends the string).
        let alone = arg.get(1).is_none_or(|&c| c == 0);
        match arg.first()? {
            b'+' if alone => Some(LexBound::Max),
            b'-' if alone => Some(LexBound::Min),
            b'(' => Some(LexBound::Ex(arg[1..].to_vec())),
            b'[' => Some(LexBound::In(arg[1..].to_vec())),
            _ => None,
        }
    }

    /// Redis's `sdscmplex`: `-` below everything, `+` above.
    fn cmp(&self, other: &LexBound) -> Ordering {
        use LexBound::*;
        match (self, other) {
            (Min, Min) | (Max, Max) => Ordering::Equal,
            (Min, _) | (_, Max) => Ordering::Less,
            (Max, _) | (_, Min) => Ordering::Greater,
            (In(a) | Ex(a), In(b) | Ex(b)) => a.cmp(b),
        }
    }

    fn inclusive(&self) -> bool {
        matches!(self, LexBound::In(_))
    }
}

/// A range of members by their bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange {
            min: LexBound::parse(min)?,
            max: LexBound::parse(max)?,
        })
    }

    /// A range that holds nothing, whatever the members (`zslIsInLexRange`'s first test).
    fn is_empty(&self) -> bool {
        match self.min.cmp(&self.max) {
            Ordering::Greater => true,
            Ordering::Equal => !self.min.inclusive() || !self.max.inclusive(),
            Ordering::Less => false,
        }
    }

    fn above_min(&self, member: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::In(m) => member >= m.as_slice(),
            LexBound::Ex(m) => member > m.as_slice(),
        }
    }

    fn below_max(&self, member: &[u8]) -> bool {
        match &self.max {
            LexBound::Max => true,
            LexBound::Min => false,
            LexBound::In(m) => member <= m.as_slice(),
            LexBound::Ex(m) => member < m.as_slice(),
        }
    }
}

/// What a `ZRANGE` selects.
#[derive(Clone, Debug, PartialEq)]
pub enum Range {
    /// From rank to rank (negative: from the end), both included.
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Ranks `start..=end` (negative: from the end) of `size` members as Redis sanitizes them:
/// `None` if the range is empty.
pub fn ranks(size: u64, start: i64, end: i64) -> Option<(u64, u64)> {
    let len = size as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as u64, end.min(len - 1) as u64))
}

// ---- Queries ----

/// The score index's records in `[from, to)`, in order or (`rev`) reversed.
fn walk(ctx: &mut Ctx, fields: &Fields, from: &[u8], to: &[u8], rev: bool) -> CmdResult<Walk> {
    if from >= to {
        return Ok(Walk::empty(fields));
    }
    let scan = ctx.scan_in(Space::Fields, from, Bound::Excluded(to))?;
    Ok(Walk {
        records: match rev {
            true => Box::new(scan.rev()),
            false => scan,
        },
        fields: fields.clone(),
    })
}

/// From `walk`: `offset` members skipped (a negative offset skips them all, as Redis's loop
/// does), then up to `limit` (negative: no limit) while `in_range` holds of their members.
fn take(
    mut walk: Walk,
    offset: i64,
    limit: i64,
    in_range: impl Fn(&[u8]) -> bool,
) -> CmdResult<Vec<Scored>> {
    if offset < 0 || !walk.step_over(offset as u64)? {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut left = limit;
    while left != 0 {
        let Some(k) = walk.next_key()? else { break };
        if !in_range(walk.member(&k)) {
            break;
        }
        let (s, member) = index_entry(&walk.fields, &k);
        out.push((member, s));
        left -= left.signum().max(0);
    }
    Ok(out)
}

/// The members of `range` in a sorted set of `size` members at `fields`, in order or (`rev`)
/// reversed: past `offset` of them, at most `limit` (negative: all; by rank: 0 and -1).
pub fn query(
    ctx: &mut Ctx,
    fields: &Fields,
    size: u64,
    range: &Range,
    rev: bool,
    offset: i64,
    limit: i64,
) -> CmdResult<Vec<Scored>> {
    match range {
        Range::Rank(start, end) => by_rank(ctx, fields, size, *start, *end, rev),
        Range::Score(r) => {
            let (from, to) = r.keys(fields);
            take(walk(ctx, fields, &from, &to, rev)?, offset, limit, |_| true)
        }
        Range::Lex(r) => {
            let run = lex_run(ctx, fields, r, rev)?;
            let r = r.clone();
            take(run, offset, limit, move |m| match rev {
                true => r.above_min(m),
                false => r.below_max(m),
            })
        }
    }
}

/// Ranks `start..=end` (in reverse order if `rev`), read from the nearer end.
fn by_rank(
    ctx: &mut Ctx,
    fields: &Fields,
    size: u64,
    start: i64,
    end: i64,
    rev: bool,
) -> CmdResult<Vec<Scored>> {
    let Some((a, b)) = ranks(size, start, end) else {
        return Ok(Vec::new());
    };
    // The range's ranks in index order: `lo..=hi`.
    let (lo, hi) = match rev {
        true => (size - 1 - b, size - 1 - a),
        false => (a, b),
    };
    let n = (hi - lo + 1) as i64;
    let (from, to) = index_bounds(fields);
    let from_end = size - 1 - hi;
    let mut out = if lo <= from_end {
        take(walk(ctx, fields, &from, &to, false)?, lo as i64, n, |_| {
            true
        })?
    } else {
        let mut back = take(
            walk(ctx, fields, &from, &to, true)?,
            from_end as i64,
            n,
            |_| true,
        )?;
        back.reverse();
        back
    };
    if rev {
        out.reverse();
    }
    Ok(out)
}

/// The members of lex range `r` in the index's order (or reversed) from the first one Redis
/// starts at, on past the far bound (where the caller stops), or nothing.
fn lex_run(ctx: &mut Ctx, fields: &Fields, r: &LexRange, rev: bool) -> CmdResult<Walk> {
    let nothing = || -> CmdResult<Walk> { Ok(Walk::empty(fields)) };
    let (start, end) = index_bounds(fields);
    let first = walk(ctx, fields, &start, &end, false)?.next().transpose()?;
    let last = walk(ctx, fields, &start, &end, true)?.next().transpose()?;
    let (Some(first), Some(last)) = (first, last) else {
        return nothing();
    };
    // `zzlIsInLexRange`: nothing if the range is empty, or every member misses it.
    if r.is_empty() || !r.above_min(&last.0) || !r.below_max(&first.0) {
        return nothing();
    }
    if first.1 == last.1 {
        // One score: the index is in member order, so the near bound is a seek.
        let at = |m: &[u8]| index_key(fields, first.1, m);
        let after = |m: &[u8]| {
            let mut k = at(m);
            k.push(0);
            k
        };
        return match (rev, &r.min, &r.max) {
            (false, LexBound::Max, _) | (true, _, LexBound::Min) => nothing(),
            (false, LexBound::Min, _) => walk(ctx, fields, &start, &end, false),
            (false, LexBound::In(m), _) => walk(ctx, fields, &at(m), &end, false),
            (false, LexBound::Ex(m), _) => walk(ctx, fields, &after(m), &end, false),
            (true, _, LexBound::Max) => walk(ctx, fields, &start, &end, true),
            (true, _, LexBound::In(m)) => walk(ctx, fields, &start, &after(m), true),
            (true, _, LexBound::Ex(m)) => walk(ctx, fields, &start, &at(m), true),
        };
    }
    // Scores differ: Redis's walk, from the first member past the near bound, if that one is
    // within the far bound.
    let (near, far) = (r.clone(), r.clone());
    let near = move |m: &[u8]| match rev {
        true => near.below_max(m),
        false => near.above_min(m),
    };
    let far = move |m: &[u8]| match rev {
        true => far.above_min(m),
        false => far.below_max(m),
    };
    let all = walk(ctx, fields, &start, &end, rev)?;
    let prefix = fields.start().len() + 9; // a member's offset in its index key
    let mut run = all
        .records
        .skip_while(move |e| e.as_ref().is_ok_and(|(k, _)| !near(&k[prefix..])))
        .peekable();
    match run.peek() {
        None => nothing(),
        Some(Ok((k, _))) if !far(&k[prefix..]) => nothing(),
        Some(_) => Ok(Walk {
            records: Box::new(run),
            fields: fields.clone(),
        }),
    }
}

// ---- Commands ----

fn not_a_float_range() -> Reply {
    Reply::error("ERR min or max is not a float")
}

fn not_a_lex_range() -> Reply {
    Reply::error("ERR min or max not valid string range item")
}

/// How a ZRANGE form selects.
#[derive(Clone, Copy, Debug, PartialEq)]
enum By {
    Rank,
    Score,
    Lex,
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
pub fn zrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, None, None)
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`: the size of
/// what was stored.
pub fn zrangestore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 2, Some(&args[1]), None, None)
}

/// `ZREVRANGE key start stop [WITHSCORES]`.
pub fn zrevrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, Some(By::Rank), Some(true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub fn zrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, Some(By::Score), Some(false))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub fn zrevrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, Some(By::Score), Some(true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`.
pub fn zrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, Some(By::Lex), Some(false))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub fn zrevrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    range_command(ctx, args, 1, None, Some(By::Lex), Some(true))
}

/// Every ZRANGE form (Redis's `zrangeGenericCommand`): the source key at `args[src]`, then
/// the range's two ends, then options; the form's own `by` and `rev`, if it has them, are
/// not options. `store`: the destination (ZRANGESTORE).
fn range_command(
    ctx: &mut Ctx,
    args: &[Vec<u8>],
    src: usize,
    store: Option<&[u8]>,
    mut by: Option<By>,
    mut rev: Option<bool>,
) -> Result {
    let mut with_scores = false;
    let (mut offset, mut limit) = (0, -1);
    let mut j = src + 3;
    while j < args.len() {
        let left = args.len() - j - 1;
        match args[j].to_ascii_uppercase().as_slice() {
            b"WITHSCORES" if store.is_none() => with_scores = true,
            b"LIMIT" if left >= 2 => {
                let (Some(o), Some(l)) = (integer(&args[j + 1]), integer(&args[j + 2])) else {
                    return Ok(not_an_integer());
                };
                (offset, limit) = (o, l);
                j += 2;
            }
            b"REV" if rev.is_none() => rev = Some(true),
            b"BYLEX" if by.is_none() => by = Some(By::Lex),
            b"BYSCORE" if by.is_none() => by = Some(By::Score),
            _ => return Ok(zsets::syntax_error()),
        }
        j += 1;
    }
    let (by, rev) = (by.unwrap_or(By::Rank), rev.unwrap_or(false));
    // As Redis: a LIMIT of count -1 is no LIMIT.
    if limit != -1 && by == By::Rank {
        return Ok(Reply::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && by == By::Lex {
        return Ok(Reply::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (&args[src + 1], &args[src + 2]);
    if rev && by != By::Rank {
        (lo, hi) = (hi, lo); // given as max, min
    }
    let range = match by {
        By::Rank => match (integer(lo), integer(hi)) {
            (Some(start), Some(end)) => Range::Rank(start, end),
            _ => return Ok(not_an_integer()),
        },
        By::Score => match ScoreRange::parse(lo, hi) {
            Some(r) => Range::Score(r),
            None => return Ok(not_a_float_range()),
        },
        By::Lex => match LexRange::parse(lo, hi) {
            Some(r) => Range::Lex(r),
            None => return Ok(not_a_lex_range()),
        },
    };
    let key = &args[src];
    let meta = match store {
        Some(_) => ctx.get_meta(key, Type::ZSet)?.map(|(meta, _)| meta),
        None => ctx.read_meta(key, Type::ZSet)?,
    };
    let found = match meta {
        Some(meta) => query(
            ctx,
            &meta.fields(key),
            meta.size,
            &range,
            rev,
            offset,
            limit,
        )?,
        None => Vec::new(),
    };
    match store {
        Some(dest) => zsets::store(ctx, dest, &found),
        None => Ok(zsets::scored_reply(ctx, found, with_scores)),
    }
}

/// `ZCOUNT key min max`: how many members have a score in the range.
pub fn zcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(r) = ScoreRange::parse(&args[2], &args[3]) else {
        return Ok(not_a_float_range());
    };
    let Some(meta) = ctx.read_meta(&args[1], Type::ZSet)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(&args[1]);
    let (from, to) = r.keys(&fields);
    let mut records = walk(ctx, &fields, &from, &to, false)?;
    let mut n = 0;
    while records.next_key()?.is_some() {
        n += 1;
    }
    Ok(Reply::Integer(n))
}

/// `ZLEXCOUNT key min max`: how many members are in the lex range.
pub fn zlexcount(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(r) = LexRange::parse(&args[2], &args[3]) else {
        return Ok(not_a_lex_range());
    };
    let Some(meta) = ctx.read_meta(&args[1], Type::ZSet)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(&args[1]);
    let mut run = lex_run(ctx, &fields, &r, false)?;
    let mut n = 0;
    while let Some(k) = run.next_key()? {
        if !r.below_max(run.member(&k)) {
            break;
        }
        n += 1;
    }
    Ok(Reply::Integer(n))
}

/// `ZREMRANGEBYRANK key start stop`.
pub fn zremrangebyrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (Some(start), Some(end)) = (integer(&args[2]), integer(&args[3])) else {
        return Ok(not_an_integer());
    };
    remove_range(ctx, &args[1], Range::Rank(start, end))
}

/// `ZREMRANGEBYSCORE key min max`.
pub fn zremrangebyscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    match ScoreRange::parse(&args[2], &args[3]) {
        Some(r) => remove_range(ctx, &args[1], Range::Score(r)),
        None => Ok(not_a_float_range()),
    }
}

/// `ZREMRANGEBYLEX key min max`.
pub fn zremrangebylex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    match LexRange::parse(&args[2], &args[3]) {
        Some(r) => remove_range(ctx, &args[1], Range::Lex(r)),
        None => Ok(not_a_lex_range()),
    }
}

/// Remove the members of `range` from sorted set `key`: how many.
fn remove_range(ctx: &mut Ctx, key: &[u8], range: Range) -> Result {
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::ZSet)? else {
        return Ok(Reply::Integer(0));
    };
    let found = query(ctx, &meta.fields(key), meta.size, &range, false, 0, -1)?;
    zsets::remove_run(ctx, key, &mut meta, expiry, &found)?;
    Ok(Reply::Integer(found.len() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_ranges_parse_as_redis() {
        let r = |a: &str, b: &str| ScoreRange::parse(a.as_bytes(), b.as_bytes());
        assert_eq!(
            r("(1", "2.5"),
            Some(ScoreRange {
                min: 1.0,
                min_ex: true,
                max: 2.5,
                max_ex: false
            })
        );
        let inf = r("-inf", "+inf").unwrap();
        assert_eq!((inf.min, inf.max), (f64::NEG_INFINITY, f64::INFINITY));
        let empty = r("(", "").unwrap();
        assert_eq!((empty.min, empty.min_ex, empty.max), (0.0, true, 0.0));
        assert_eq!(r("1e400", " 2").map(|r| r.min), Some(f64::INFINITY));
        for (a, b) in [
            ("x", "1"),
            ("1", "nan"),
            ("((1", "2"),
            ("1", "2 "),
            (" ", "1"),
        ] {
            assert_eq!(r(a, b), None, "{a} {b}");
        }
    }

    #[test]
    fn lex_ranges_parse_as_redis() {
        use LexBound::*;
        let r = |a: &[u8], b: &[u8]| LexRange::parse(a, b);
        assert_eq!(
            r(b"[a", b"(b"),
            Some(LexRange {
                min: In(b"a".to_vec()),
                max: Ex(b"b".to_vec())
            })
        );
        assert_eq!(r(b"-", b"+").map(|r| (r.min, r.max)), Some((Min, Max)));
        assert_eq!(r(b"+\0x", b"(").map(|r| r.min), Some(Max));
        for (a, b) in [
            (&b"a"[..], &b"+"[..]),
            (b"", b"+"),
            (b"-", b"+x"),
            (b"--", b"+"),
        ] {
            assert_eq!(r(a, b), None, "{a:?} {b:?}");
        }
        let empty = |a: &[u8], b: &[u8]| r(a, b).unwrap().is_empty();
        assert!(!empty(b"[a", b"[a") && empty(b"(a", b"[a") && empty(b"[b", b"[a"));
        assert!(empty(b"+", b"-") && empty(b"-", b"-") && empty(b"+", b"+"));
        assert!(!empty(b"-", b"+") && !empty(b"-", b"[a") && !empty(b"[", b"+"));
    }

    #[test]
    fn ranks_are_sanitized_as_redis() {
        assert_eq!(ranks(5, 0, -1), Some((0, 4)));
        assert_eq!(ranks(5, -100, 100), Some((0, 4)));
        assert_eq!(ranks(5, -2, -1), Some((3, 4)));
        assert_eq!(ranks(5, 3, 1), None);
        assert_eq!(ranks(5, 5, 10), None);
        assert_eq!(ranks(5, 0, -6), None);
        assert_eq!(ranks(0, 0, -1), None);
        assert_eq!(ranks(5, i64::MIN, i64::MAX), Some((0, 4)));
    }
}
