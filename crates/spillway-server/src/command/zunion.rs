//! Sorted sets combined: `ZUNION`, `ZINTER`, `ZDIFF`, their `...STORE` forms and
//! `ZINTERCARD`, as Redis 7.0's `zunionInterDiffGenericCommand`: the same checks in the same
//! order (the count of keys, then every key's type, then the options), `WEIGHTS` and
//! `AGGREGATE SUM|MIN|MAX`, and a set (`SADD`'s) read as members of score 1.
//!
//! The inputs are read whole, the result built in memory and sorted by score, then member (as
//! Redis builds it in a skiplist): O(N) reads for a union (N: the inputs' sizes), O(N·K)
//! point reads for an intersection (the smallest input's members looked up in the K others),
//! plus O(M log M) for the result's M members and, for a store, O(M) writes. Inputs are
//! combined in Redis's order, smallest first (ties in the order given), so that sums of
//! floating-point scores round as Redis's do.

use std::collections::HashMap;

use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Fields, Meta, Type};
use super::members;
use super::score;
use super::zsets::{self, Scored};
use super::{integer, not_an_integer, wrong_type, CmdResult};
use crate::resp::Reply;

type Result = CmdResult;

/// What the command computes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Fold `value` into `into`, as Redis's `zunionInterAggregate`: a sum of `inf` and `-inf`
    /// is 0.
    fn fold(self, into: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *into += value;
                if into.is_nan() {
                    *into = 0.0;
                }
            }
            Aggregate::Min => *into = if value < *into { value } else { *into },
            Aggregate::Max => *into = if value > *into { value } else { *into },
        }
    }
}

/// An input key: a sorted set or a set (its members score 1), with its weight.
struct Source {
    fields: Fields,
    size: u64,
    set: bool,
    weight: f64,
}

impl Source {
    /// Every member and its score.
    fn all(&self, ctx: &mut Ctx) -> CmdResult<Vec<Scored>> {
        let tag: &[u8] = if self.set { b"" } else { b"m" };
        let records = members::all(ctx, &self.fields, tag)?;
        Ok(records
            .into_iter()
            .map(|(m, v)| {
                let s = match self.set {
                    true => 1.0,
                    false => score::decode(&v).unwrap_or(f64::NAN),
                };
                (m, s)
            })
            .collect())
    }

    /// `member`'s score, if it holds it.
    fn score(&self, ctx: &mut Ctx, member: &[u8], write: bool) -> CmdResult<Option<f64>> {
        if self.set {
            let k = self.fields.member(b"", member);
            let found = match write {
                true => ctx.get_in(Space::Fields, &k)?.is_some(),
                false => ctx.read_in(Space::Fields, &k)?.is_some(),
            };
            return Ok(found.then_some(1.0));
        }
        match write {
            true => zsets::get_score(ctx, &self.fields, member),
            false => zsets::read_score(ctx, &self.fields, member),
        }
    }
}

/// The input at `key` (`None` if absent): a sorted set or a set, else `WRONGTYPE`. `write`:
/// for a command that writes (it reads as `Ctx::get_in`).
fn source(ctx: &mut Ctx, key: &[u8], write: bool) -> CmdResult<Option<Source>> {
    let read = |ctx: &mut Ctx, space| -> CmdResult<Option<Vec<u8>>> {
        Ok(match write {
            true => ctx.get_in(space, key)?.map(|(v, _)| v),
            false => ctx.read_in(space, key)?,
        })
    };
    let Some(value) = read(ctx, Space::Meta)? else {
        return match read(ctx, Space::Strings)? {
            Some(_) => Err(wrong_type()),
            None => Ok(None),
        };
    };
    match Meta::decode(&value) {
        Some(meta) if meta.ty == Type::ZSet || meta.ty == Type::Set => Ok(Some(Source {
            fields: meta.fields(key),
            size: meta.size,
            set: meta.ty == Type::Set,
            weight: 1.0,
        })),
        _ => Err(wrong_type()),
    }
}

/// `ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]`.
pub fn zunionstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Union, Some(&args[1]), false)
}

/// `ZINTERSTORE destination numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX]`.
pub fn zinterstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Inter, Some(&args[1]), false)
}

/// `ZDIFFSTORE destination numkeys key [key ...]`.
pub fn zdiffstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Diff, Some(&args[1]), false)
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub fn zunion(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Union, None, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub fn zinter(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Inter, None, false)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`.
pub fn zdiff(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Diff, None, false)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`: the size of the intersection, counted up
/// to the limit (0: none).
pub fn zintercard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    combine(ctx, args, Op::Inter, None, true)
}

/// Every form: `dest` for a store (its numkeys at `args[2]`, else at `args[1]`); `card`:
/// ZINTERCARD.
fn combine(ctx: &mut Ctx, args: &[Vec<u8>], op: Op, dest: Option<&[u8]>, card: bool) -> Result {
    let at = if dest.is_some() { 2 } else { 1 };
    let Some(numkeys) = integer(&args[at]) else {
        return Ok(not_an_integer());
    };
    if numkeys < 1 {
        let name = String::from_utf8_lossy(&args[0]).to_lowercase();
        return Ok(Reply::error(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    let first = at + 1;
    if numkeys as u64 > (args.len() - first) as u64 {
        return Ok(zsets::syntax_error());
    }
    let keys = &args[first..first + numkeys as usize];
    let write = dest.is_some();
    let mut sources = Vec::with_capacity(keys.len());
    for key in keys {
        sources.push(source(ctx, key, write)?);
    }
    // The options, after the keys' types.
    let mut aggregate = Aggregate::Sum;
    let (mut with_scores, mut limit) = (false, 0u64);
    let mut j = first + keys.len();
    while j < args.len() {
        let left = args.len() - j;
        match args[j].to_ascii_uppercase().as_slice() {
            b"WEIGHTS" if op != Op::Diff && !card && left > keys.len() => {
                for (i, w) in args[j + 1..=j + keys.len()].iter().enumerate() {
                    let Some(w) = score::parse(w) else {
                        return Ok(Reply::error("ERR weight value is not a float"));
                    };
                    if let Some(s) = &mut sources[i] {
                        s.weight = w;
                    }
                }
                j += 1 + keys.len();
            }
            b"AGGREGATE" if op != Op::Diff && !card && left >= 2 => {
                aggregate = match args[j + 1].to_ascii_uppercase().as_slice() {
                    b"SUM" => Aggregate::Sum,
                    b"MIN" => Aggregate::Min,
                    b"MAX" => Aggregate::Max,
                    _ => return Ok(zsets::syntax_error()),
                };
                j += 2;
            }
            b"WITHSCORES" if dest.is_none() && !card => {
                with_scores = true;
                j += 1;
            }
            b"LIMIT" if card && left >= 2 => {
                match integer(&args[j + 1]) {
                    Some(n) if n >= 0 => limit = n as u64,
                    _ => return Ok(Reply::error("ERR LIMIT can't be negative")),
                }
                j += 2;
            }
            _ => return Ok(zsets::syntax_error()),
        }
    }
    // A missing key is an empty input, weighed as any (its weight is never used).
    let mut sources: Vec<Option<Source>> = sources;
    if op != Op::Diff {
        // Smallest first (a stable sort: ties in the order given), as Redis orders them.
        sources.sort_by_key(|s| s.as_ref().map_or(0, |s| s.size));
    }
    let result = match op {
        Op::Inter if card => {
            let n = intersection(ctx, &sources, aggregate, write, limit)?.len();
            return Ok(Reply::Integer(n as i64));
        }
        Op::Inter => intersection(ctx, &sources, aggregate, write, 0)?,
        Op::Union => union(ctx, &sources, aggregate)?,
        Op::Diff => difference(ctx, &sources, write)?,
    };
    let mut result = result;
    // By score, then member; -0 and 0 are equal scores (NaN is never one).
    result.sort_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
    match dest {
        Some(dest) => zsets::store(ctx, dest, &result),
        None => Ok(zsets::scored_reply(ctx, result, with_scores)),
    }
}

/// The members of every source (ordered smallest first), each scored by its weighted scores
/// folded by `aggregate`: with `limit` (not 0), only that many found.
fn intersection(
    ctx: &mut Ctx,
    sources: &[Option<Source>],
    aggregate: Aggregate,
    write: bool,
    limit: u64,
) -> CmdResult<Vec<Scored>> {
    let Some(Some(smallest)) = sources.first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    'members: for (member, s) in smallest.all(ctx)? {
        let mut total = smallest.weight * s;
        if total.is_nan() {
            total = 0.0;
        }
        for other in &sources[1..] {
            let Some(other) = other else {
                return Ok(Vec::new()); // an empty input: nothing is in all
            };
            let Some(s) = other.score(ctx, &member, write)? else {
                continue 'members;
            };
            aggregate.fold(&mut total, s * other.weight);
        }
        out.push((member, total));
        if limit != 0 && out.len() as u64 >= limit {
            break;
        }
    }
    Ok(out)
}

/// The members of any source, each scored by its weighted scores folded by `aggregate`, in
/// the sources' order.
fn union(
    ctx: &mut Ctx,
    sources: &[Option<Source>],
    aggregate: Aggregate,
) -> CmdResult<Vec<Scored>> {
    let mut totals: HashMap<Vec<u8>, f64> = HashMap::new();
    for source in sources.iter().flatten() {
        for (member, s) in source.all(ctx)? {
            let mut value = source.weight * s;
            if value.is_nan() {
                value = 0.0;
            }
            match totals.get_mut(&member) {
                Some(total) => aggregate.fold(total, value),
                None => {
                    totals.insert(member, value);
                }
            }
        }
    }
    Ok(totals.into_iter().collect())
}

/// The members of the first source in none of the others, with their scores there.
fn difference(ctx: &mut Ctx, sources: &[Option<Source>], write: bool) -> CmdResult<Vec<Scored>> {
    let Some(Some(first)) = sources.first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    'members: for (member, s) in first.all(ctx)? {
        for other in sources[1..].iter().flatten() {
            if other.score(ctx, &member, write)?.is_some() {
                continue 'members;
            }
        }
        out.push((member, s));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use spillway::Expiry;

    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::*;

    fn bulks(items: &[&str]) -> Reply {
        Reply::Array(items.iter().map(|i| Reply::bulk(*i)).collect())
    }

    fn scored(items: &[(&str, f64)]) -> Reply {
        let flat = items
            .iter()
            .flat_map(|(m, s)| [Reply::bulk(*m), Reply::Double(*s)]);
        Reply::Array(flat.collect())
    }

    /// Sets (`Type::Set`, a record per member) are inputs whose members score 1, as in Redis
    /// (the expected replies are Redis 7.0's).
    #[test]
    fn sets_are_inputs_whose_members_score_1() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let mut replies = Vec::new();
        let mut ctx = Ctx::new(&e, &mut s, &mut replies);
        let mut meta = Meta::new(Type::Set, &e);
        meta.size = 3;
        let fields = meta.fields(b"st");
        for m in ["y", "w", "q"] {
            let k = fields.member(b"", m.as_bytes());
            ctx.put_in(Space::Fields, &k, b"", Expiry::Never).unwrap();
        }
        ctx.put_meta(b"st", &mut meta, Expiry::Never).unwrap();
        ctx.finish();
        let out = run(
            &e,
            &mut s,
            &[
                &["ZADD", "a", "1", "x", "2", "y", "3", "z"],
                &["ZADD", "b", "10", "y", "20", "z", "30", "w"],
                &["ZUNIONSTORE", "d", "3", "a", "b", "st"],
                &["ZRANGE", "d", "0", "-1", "WITHSCORES"],
                &["ZUNION", "1", "st", "WITHSCORES"],
                &["ZINTER", "2", "st", "st", "WITHSCORES"],
                &["ZINTER", "2", "a", "st", "WEIGHTS", "1", "5", "WITHSCORES"],
                &["ZDIFF", "2", "st", "a"],
                &["ZINTERCARD", "2", "st", "b"],
                &["ZUNIONSTORE", "st2", "1", "st"],
                &["ZRANGE", "st2", "0", "-1"],
                &["ZADD", "st", "1", "a"],
                &["ZRANGE", "st", "0", "-1"],
            ],
        );
        let wrong =
            Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(out[2], Reply::Integer(5));
        assert_eq!(
            out[3],
            scored(&[
                ("q", 1.0),
                ("x", 1.0),
                ("y", 13.0),
                ("z", 23.0),
                ("w", 31.0)
            ])
        );
        assert_eq!(out[4], scored(&[("q", 1.0), ("w", 1.0), ("y", 1.0)]));
        assert_eq!(out[5], scored(&[("q", 2.0), ("w", 2.0), ("y", 2.0)]));
        assert_eq!(out[6], scored(&[("y", 7.0)]));
        assert_eq!(out[7], bulks(&["q", "w"]));
        assert_eq!(out[8], Reply::Integer(2));
        assert_eq!(out[9], Reply::Integer(3));
        assert_eq!(out[10], bulks(&["q", "w", "y"]));
        assert_eq!(out[11..], [wrong.clone(), wrong]);
    }
}
