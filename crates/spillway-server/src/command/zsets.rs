//! The sorted-set commands on one member or end: `ZADD`, `ZINCRBY`, `ZREM`, `ZSCORE`,
//! `ZMSCORE`, `ZCARD`, `ZRANK`, `ZREVRANK`, `ZPOPMIN`, `ZPOPMAX`, `ZMPOP`, `ZRANDMEMBER` and
//! `ZSCAN`; the ranges are in `zrange`, the unions, intersections and differences in
//! `zunion`. Replies, errors and their order are Redis 7.0's.
//!
//! A sorted set is a metadata record (its size) and two records per member (`encoding`):
//!
//! ```text
//! 'm' | member                  -> score (f64 bits, big-endian)   a member's score
//! 's' | ordered score | member  -> (empty)                        the score index
//! ```
//!
//! so a member's score is one point read, and the members in score order (ties in member
//! byte order, as Redis orders them) are one range of the index (`score::ordered`: byte order
//! is numeric order).
//!
//! **Costs.** `ZADD`, `ZINCRBY`, `ZREM`, `ZSCORE`: O(1) reads and writes per member. `ZCARD`:
//! O(1), from the metadata. A score or lex range: a seek, then the members returned (`zrange`).
//! **Ranks cost O(rank)**: the index has no counts, so `ZRANK` counts the members before (or,
//! whichever is nearer, after) the member, and `ZRANGE` by rank reads from the nearer end up to
//! the range — where Redis's skiplist is O(log N); Kvrocks keeps sorted sets the same way and
//! pays the same. `ZPOPMIN`/`ZPOPMAX`: the members popped. Removing every member (the last
//! `ZREM`, a `ZPOPMIN` past the size, `ZREMRANGEBYSCORE -inf +inf`) deletes the key and its
//! records with one range delete.
//!
//! **Where this differs from Redis**, which keeps a small sorted set (up to 128 members of up
//! to 64 bytes) as a listpack and a larger one as a skiplist, and answers a few things
//! differently for each: we answer as for the small one. `-0` is kept as `0` (a skiplist keeps
//! and prints `-0`); `ZSCAN` prints whole scores up to 2^62 as integers (`score::scan_text`),
//! pages in member order with a cursor of its own (`members`; Redis returns a small set whole,
//! in score order) and reads its cursor as Redis does; the members of a random pick are ours.
//! A member's records are keyed by the key and the member, so a member is at most the store's
//! key limit (64 KiB) less 21 bytes and the key's length: a longer one fails its command whole.

use spillway::Expiry;

use super::blocking;
use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Fields, Meta, Type};
use super::hashes::scan_reply;
use super::members::{self, ScanArgs};
use super::score;
use super::{integer, CmdResult, Fail};
use crate::resp::Reply;

type Result = CmdResult;

/// A member and its score.
pub type Scored = (Vec<u8>, f64);

// ---- Records ----

/// The key of `member`'s record (its score).
pub fn member_key(fields: &Fields, member: &[u8]) -> Vec<u8> {
    fields.member(b"m", member)
}

/// The key of `member`'s record in the score index.
pub fn index_key(fields: &Fields, score: f64, member: &[u8]) -> Vec<u8> {
    let mut sub = Vec::with_capacity(8 + member.len());
    sub.extend_from_slice(&score::ordered(score));
    sub.extend_from_slice(member);
    fields.tagged(b's', &sub)
}

/// The score and member of the score index's record `key`.
pub fn index_entry(fields: &Fields, key: &[u8]) -> (f64, Vec<u8>) {
    let sub = &fields.sub(key)[1..];
    let (at, member) = sub.split_at(8);
    let at: [u8; 8] = at.try_into().expect("8 bytes");
    (score::from_ordered(at), member.to_vec())
}

/// The first key of the score index, and the first past it: within the sorted set's score
/// bounds (`encoding::Meta`), so that a scan starts past what pops deleted.
pub fn index_bounds(fields: &Fields) -> (Vec<u8>, Vec<u8>) {
    let start = fields.tagged(b's', &fields.low.to_be_bytes());
    let end = match fields.high.checked_add(1) {
        Some(past) => fields.tagged(b's', &past.to_be_bytes()),
        None => fields.tagged(b's' + 1, b""),
    };
    (start, end)
}

/// A record's value as a score; a value this server did not write reads as NaN, which no
/// comparison takes (never met: only this module writes these records).
fn stored(value: &[u8]) -> f64 {
    score::decode(value).unwrap_or(f64::NAN)
}

/// `member`'s score, for a command that only reads.
pub fn read_score(ctx: &mut Ctx, fields: &Fields, member: &[u8]) -> CmdResult<Option<f64>> {
    let found = ctx.read_in(Space::Fields, &member_key(fields, member))?;
    Ok(found.map(|v| stored(&v)))
}

/// `member`'s score, for a command that writes what it reads.
pub fn get_score(ctx: &mut Ctx, fields: &Fields, member: &[u8]) -> CmdResult<Option<f64>> {
    let found = ctx.get_in(Space::Fields, &member_key(fields, member))?;
    Ok(found.map(|(v, _)| stored(&v)))
}

/// Give `member` (whose score is `old`, if it is there) the score `new`.
fn put_score(
    ctx: &mut Ctx,
    fields: &Fields,
    member: &[u8],
    old: Option<f64>,
    new: f64,
) -> CmdResult<()> {
    if let Some(old) = old {
        ctx.delete_in(Space::Fields, &index_key(fields, old, member))?;
    }
    ctx.put_in(
        Space::Fields,
        &index_key(fields, new, member),
        b"",
        Expiry::Never,
    )?;
    let value = score::encode(new);
    ctx.put_in(
        Space::Fields,
        &member_key(fields, member),
        &value,
        Expiry::Never,
    )?;
    Ok(())
}

/// Remove `members`, consecutive in the score index (as a range or a pop reads them, in either
/// direction), from sorted set `key`; the key goes with its last member, its records by one
/// range delete.
pub fn remove_run(
    ctx: &mut Ctx,
    key: &[u8],
    meta: &mut Meta,
    expiry: Expiry,
    run: &[Scored],
) -> CmdResult<()> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Ok(());
    };
    if run.len() as u64 >= meta.size {
        return Ok(ctx.remove(key, Space::Meta, &meta.encode())?);
    }
    let fields = meta.fields(key);
    for (member, _) in run {
        ctx.delete_in(Space::Fields, &member_key(&fields, member))?;
    }
    let a = index_key(&fields, first.1, &first.0);
    if run.len() == 1 {
        ctx.delete_in(Space::Fields, &a)?;
    } else {
        let b = index_key(&fields, last.1, &last.0);
        let (from, mut to) = if a < b { (a, b) } else { (b, a) };
        to.push(0); // just past the last
        ctx.delete_range_in(Space::Fields, &from, &to)?;
    }
    // Not counted in `meta.deleted` (see `encoding`): the run's index records go by a range
    // delete, which scans seek past, or lie below the bound a pop raises; its member records
    // are left to the spills. Queues of pops and sliding windows (`ZREMRANGEBYSCORE`) would
    // otherwise pay for rewrites that no scan of theirs needs (ZPOPMIN a third slower).
    meta.size -= run.len() as u64;
    ctx.put_meta(key, meta, expiry)
}

/// Make `dest` a sorted set of `members` (distinct), whatever it held, with no expiry (Redis's
/// `setKey`): `ZUNIONSTORE` and its kin. Nothing is left at `dest` if `members` is empty. The
/// reply: the size.
pub fn store(ctx: &mut Ctx, dest: &[u8], members: &[Scored]) -> Result {
    if let Some(old) = ctx.entry(dest)? {
        ctx.remove(dest, old.space, &old.value)?;
    }
    if members.is_empty() {
        return Ok(Reply::Integer(0));
    }
    let mut meta = Meta::new(Type::ZSet, ctx.engine);
    meta.size = members.len() as u64;
    let fields = meta.fields(dest);
    for (member, s) in members {
        ctx.put_in(
            Space::Fields,
            &index_key(&fields, *s, member),
            b"",
            Expiry::Never,
        )?;
        let value = score::encode(*s);
        ctx.put_in(
            Space::Fields,
            &member_key(&fields, member),
            &value,
            Expiry::Never,
        )?;
    }
    ctx.put_meta(dest, &mut meta, Expiry::Never)?;
    ctx.pushed(dest);
    Ok(Reply::Integer(members.len() as i64))
}

// ---- Replies ----

/// Members with their scores or without: `[m, s, m, s]` in RESP2, `[[m, s], [m, s]]` in RESP3
/// (scores as doubles), as Redis answers `ZRANGE ... WITHSCORES`.
pub fn scored_reply(ctx: &Ctx, members: Vec<Scored>, with_scores: bool) -> Reply {
    if !with_scores {
        return Reply::Array(members.into_iter().map(|(m, _)| Reply::Bulk(m)).collect());
    }
    let pairs = members
        .into_iter()
        .map(|(m, s)| (Reply::Bulk(m), Reply::Double(s)));
    match ctx.session.resp {
        3 => Reply::Array(pairs.map(|(m, s)| Reply::Array(vec![m, s])).collect()),
        _ => Reply::Array(pairs.flat_map(|(m, s)| [m, s]).collect()),
    }
}

pub fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

fn not_a_float() -> Reply {
    Reply::error("ERR value is not a valid float")
}

// ---- ZADD, ZINCRBY ----

/// ZADD's options.
#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`: how many members
/// were added (and, with CH, changed); with INCR the new score, or null if nothing was done.
pub fn zadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut flags = AddFlags::default();
    let mut at = 2;
    while let Some(arg) = args.get(at) {
        match arg.to_ascii_uppercase().as_slice() {
            b"NX" => flags.nx = true,
            b"XX" => flags.xx = true,
            b"GT" => flags.gt = true,
            b"LT" => flags.lt = true,
            b"CH" => flags.ch = true,
            b"INCR" => flags.incr = true,
            _ => break,
        }
        at += 1;
    }
    let pairs = &args[at..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Ok(syntax_error());
    }
    if flags.nx && flags.xx {
        return Ok(Reply::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.gt || flags.lt) && flags.nx || flags.gt && flags.lt {
        return Ok(Reply::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && pairs.len() > 2 {
        return Ok(Reply::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    // Every score is read before anything is written: all or nothing.
    let mut scored = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        let Some(s) = score::parse(&pair[0]) else {
            return Ok(not_a_float());
        };
        scored.push((s, &pair[1][..]));
    }
    add(ctx, &args[1], &flags, &scored)
}

/// `ZINCRBY key increment member`: the new score (`ZADD key INCR increment member`).
pub fn zincrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(by) = score::parse(&args[2]) else {
        return Ok(not_a_float());
    };
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    add(ctx, &args[1], &flags, &[(by, &args[3])])
}

/// Add or update `scored` in sorted set `key` as ZADD's `flags` say (Redis's `zsetAdd`).
fn add(ctx: &mut Ctx, key: &[u8], flags: &AddFlags, scored: &[(f64, &[u8])]) -> Result {
    let found = ctx.get_meta(key, Type::ZSet)?;
    let (mut meta, expiry) = match found {
        Some(found) => found,
        None if flags.xx => return Ok(add_reply(flags, 0, 0, None)),
        None => (Meta::new(Type::ZSet, ctx.engine), Expiry::Never),
    };
    let fields = meta.fields(key);
    let (mut added, mut updated) = (0, 0);
    let mut last = None; // the score of the last member not left as it was (INCR's reply)
    for &(s, member) in scored {
        match get_score(ctx, &fields, member)? {
            Some(_) if flags.nx => {}
            Some(old) => {
                let new = if flags.incr { s + old } else { s };
                if new.is_nan() {
                    return Ok(Reply::error("ERR resulting score is not a number (NaN)"));
                }
                if flags.lt && new >= old || flags.gt && new <= old {
                    continue;
                }
                last = Some(new);
                if new != old {
                    put_score(ctx, &fields, member, Some(old), new)?;
                    meta.deleted += 1; // its old index record
                    meta.widen(u64::from_be_bytes(score::ordered(new)));
                    updated += 1;
                }
            }
            None if flags.xx => {}
            None => {
                put_score(ctx, &fields, member, None, s)?;
                meta.widen(u64::from_be_bytes(score::ordered(s)));
                meta.size += 1;
                added += 1;
                // As given: a new member's `-0` is answered `-0` (and kept as 0).
                last = Some(s);
            }
        }
    }
    if added + updated > 0 {
        ctx.put_meta(key, &mut meta, expiry)?;
    }
    if added > 0 {
        ctx.pushed(key); // a client blocked on `key` may pop it now (`blocking`)
    }
    Ok(add_reply(flags, added, updated, last))
}

fn add_reply(flags: &AddFlags, added: i64, updated: i64, last: Option<f64>) -> Reply {
    match (flags.incr, last) {
        (true, Some(s)) => Reply::Double(s),
        (true, None) => Reply::Null,
        (false, _) if flags.ch => Reply::Integer(added + updated),
        (false, _) => Reply::Integer(added),
    }
}

// ---- ZREM, ZSCORE, ZMSCORE, ZCARD ----

/// `ZREM key member [member ...]`: how many were removed (the key goes with its last).
pub fn zrem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::ZSet)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(key);
    let mut removed = 0;
    for member in &args[2..] {
        if let Some(s) = get_score(ctx, &fields, member)? {
            ctx.delete_in(Space::Fields, &member_key(&fields, member))?;
            ctx.delete_in(Space::Fields, &index_key(&fields, s, member))?;
            meta.size -= 1;
            meta.deleted += 1;
            removed += 1;
        }
    }
    match (removed, meta.size) {
        (0, _) => {}
        (_, 0) => ctx.remove(key, Space::Meta, &meta.encode())?,
        _ => ctx.put_meta(key, &mut meta, expiry)?,
    }
    Ok(Reply::Integer(removed))
}

/// `ZSCORE key member`.
pub fn zscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(meta) = ctx.read_meta(&args[1], Type::ZSet)? else {
        return Ok(Reply::Null);
    };
    let s = read_score(ctx, &meta.fields(&args[1]), &args[2])?;
    Ok(s.map_or(Reply::Null, Reply::Double))
}

/// `ZMSCORE key member [member ...]`.
pub fn zmscore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(meta) = ctx.read_meta(&args[1], Type::ZSet)? else {
        return Ok(Reply::Array(vec![Reply::Null; args.len() - 2]));
    };
    let fields = meta.fields(&args[1]);
    let mut out = Vec::with_capacity(args.len() - 2);
    for member in &args[2..] {
        let s = read_score(ctx, &fields, member)?;
        out.push(s.map_or(Reply::Null, Reply::Double));
    }
    Ok(Reply::Array(out))
}

/// `ZCARD key`: from the metadata.
pub fn zcard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let meta = ctx.read_meta(&args[1], Type::ZSet)?;
    Ok(Reply::Integer(meta.map_or(0, |m| m.size as i64)))
}

// ---- ZRANK, ZREVRANK ----

/// `ZRANK key member`.
pub fn zrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    rank(ctx, args, false)
}

/// `ZREVRANK key member`.
pub fn zrevrank(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    rank(ctx, args, true)
}

fn rank(ctx: &mut Ctx, args: &[Vec<u8>], rev: bool) -> Result {
    let (key, member) = (&args[1], &args[2]);
    let Some(meta) = ctx.read_meta(key, Type::ZSet)? else {
        return Ok(Reply::Null);
    };
    let fields = meta.fields(key);
    let Some(s) = read_score(ctx, &fields, member)? else {
        return Ok(Reply::Null);
    };
    let rank = rank_of(ctx, &fields, meta.size, &index_key(&fields, s, member))?;
    let rank = if rev { meta.size - 1 - rank } else { rank };
    Ok(Reply::Integer(rank as i64))
}

/// The rank (from 0, in score order) of the member whose index record is `at`, in a sorted set
/// of `size` members: the members before it counted from the start and those after it from the
/// end, a step each in turn, until one side ends — O(min(rank, size - rank)).
fn rank_of(ctx: &mut Ctx, fields: &Fields, size: u64, at: &[u8]) -> CmdResult<u64> {
    let (start, end) = index_bounds(fields);
    let mut after_at = at.to_vec();
    after_at.push(0);
    let mut before = ctx.scan_in(Space::Fields, &start, std::ops::Bound::Excluded(at))?;
    let mut after = ctx
        .scan_in(Space::Fields, &after_at, std::ops::Bound::Excluded(&end))?
        .rev();
    let mut n = 0;
    loop {
        if before.next().transpose()?.is_none() {
            return Ok(n);
        }
        if after.next().transpose()?.is_none() {
            return Ok(size.saturating_sub(1).saturating_sub(n));
        }
        n += 1;
    }
}

// ---- ZPOPMIN, ZPOPMAX, ZMPOP ----

/// `ZPOPMIN key [count]`.
pub fn zpopmin(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    pop_command(ctx, args, false)
}

/// `ZPOPMAX key [count]`.
pub fn zpopmax(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    pop_command(ctx, args, true)
}

fn pop_command(ctx: &mut Ctx, args: &[Vec<u8>], max: bool) -> Result {
    if args.len() > 3 {
        return Ok(syntax_error());
    }
    let count = match args.get(2) {
        None => None,
        Some(arg) => match integer(arg) {
            Some(n) if n >= 0 => Some(n as u64),
            _ => return Ok(Reply::error("ERR value is out of range, must be positive")),
        },
    };
    let Some(popped) = pop(ctx, &args[1], max, count.unwrap_or(1))? else {
        return Ok(Reply::Array(Vec::new()));
    };
    // Pairs for a count in RESP3; else flat, as Redis answers.
    Ok(match (count, ctx.session.resp) {
        (Some(_), 3) => scored_reply(ctx, popped, true),
        _ => Reply::Array(
            popped
                .into_iter()
                .flat_map(|(m, s)| [Reply::Bulk(m), Reply::Double(s)])
                .collect(),
        ),
    })
}

/// Pop up to `count` members from the low (or, `max`, the high) end of sorted set `key`; `None`
/// if it is absent.
fn pop(ctx: &mut Ctx, key: &[u8], max: bool, count: u64) -> CmdResult<Option<Vec<Scored>>> {
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::ZSet)? else {
        return Ok(None);
    };
    if count == 0 {
        return Ok(Some(Vec::new()));
    }
    let fields = meta.fields(key);
    let (start, end) = index_bounds(&fields);
    let scan = ctx.scan_in(Space::Fields, &start, std::ops::Bound::Excluded(&end))?;
    let scan: Box<dyn Iterator<Item = _>> = if max { Box::new(scan.rev()) } else { scan };
    let mut popped = Vec::new();
    for record in scan.take(usize::try_from(count).unwrap_or(usize::MAX)) {
        let (k, _) = record?;
        let (s, member) = index_entry(&fields, &k);
        popped.push((member, s));
    }
    // What is left scores at least (or at most) what was taken last: the next pop's scan
    // starts there.
    if let Some(&(_, s)) = popped.last() {
        let at = u64::from_be_bytes(score::ordered(s));
        match max {
            false => meta.low = meta.low.max(at),
            true => meta.high = meta.high.min(at),
        }
    }
    remove_run(ctx, key, &mut meta, expiry, &popped)?;
    Ok(Some(popped))
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: `[key, [[member, score], ...]]` from
/// the first key that holds a sorted set, or a null array.
pub fn zmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (keys, max, count) = match mpop_args(args, 1) {
        Ok(parsed) => parsed,
        Err(refused) => return Ok(refused),
    };
    Ok(mpop(ctx, keys, max, count, false)?.unwrap_or(Reply::NullArray))
}

/// `ZMPOP`'s arguments from `args[from]` (its numkeys) on: the keys, whether from the high
/// end, and the count (absent: 1); or Redis's error.
fn mpop_args(args: &[Vec<u8>], from: usize) -> std::result::Result<(&[Vec<u8>], bool, u64), Reply> {
    let numkeys = match integer(&args[from]) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err(Reply::error("ERR numkeys should be greater than 0")),
    };
    let Some(at) = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(from + 1))
        .filter(|&at| at < args.len())
    else {
        return Err(syntax_error());
    };
    let max = match args[at].to_ascii_uppercase().as_slice() {
        b"MIN" => false,
        b"MAX" => true,
        _ => return Err(syntax_error()),
    };
    let mut count = None;
    let mut i = at + 1;
    while i < args.len() {
        if count.is_none() && args[i].eq_ignore_ascii_case(b"COUNT") && i + 1 < args.len() {
            match integer(&args[i + 1]) {
                Some(n) if n >= 1 => count = Some(n as u64),
                _ => return Err(Reply::error("ERR count should be greater than 0")),
            }
            i += 2;
        } else {
            return Err(syntax_error());
        }
    }
    Ok((&args[from + 1..at], max, count.unwrap_or(1)))
}

/// Pop from the first of `keys` that holds a sorted set: `[key, [[member, score], ...]]`, or
/// `None` if none does. A key of another type is `WRONGTYPE` — except, `waiting`, for a
/// blocked client woken to run again, which waits on as Redis's does.
fn mpop(
    ctx: &mut Ctx,
    keys: &[Vec<u8>],
    max: bool,
    count: u64,
    waiting: bool,
) -> CmdResult<Option<Reply>> {
    for key in keys {
        let popped = match pop(ctx, key, max, count) {
            Err(Fail::Reply(_)) if waiting && ctx.blocking.resuming() => None,
            popped => popped?,
        };
        if let Some(popped) = popped {
            let pairs = popped
                .into_iter()
                .map(|(m, s)| Reply::Array(vec![Reply::Bulk(m), Reply::Double(s)]));
            return Ok(Some(Reply::Array(vec![
                Reply::Bulk(key.clone()),
                Reply::Array(pairs.collect()),
            ])));
        }
    }
    Ok(None)
}

/// `BZPOPMIN key [key ...] timeout`: `[key, member, score]` from the first sorted set of
/// `keys` that is not empty; else waits for one to get a member (`blocking`), up to `timeout`
/// seconds (0: for ever), and answers a null array if none comes.
pub fn bzpopmin(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    blocking_pop(ctx, args, false)
}

/// `BZPOPMAX key [key ...] timeout`.
pub fn bzpopmax(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    blocking_pop(ctx, args, true)
}

fn blocking_pop(ctx: &mut Ctx, args: &[Vec<u8>], max: bool) -> Result {
    let timeout = blocking::timeout(&args[args.len() - 1])?;
    let keys = &args[1..args.len() - 1];
    if let Some(Reply::Array(mut found)) = mpop(ctx, keys, max, 1, true)? {
        // `[key, [[member, score]]]` as `[key, member, score]`.
        if let (Some(Reply::Array(mut pairs)), Some(key)) = (found.pop(), found.pop()) {
            if let Some(Reply::Array(pair)) = pairs.pop() {
                let mut reply = vec![key];
                reply.extend(pair);
                return Ok(Reply::Array(reply));
            }
        }
    }
    blocking::block(ctx, keys, timeout, Reply::NullArray)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`: `ZMPOP`, waiting as
/// `BZPOPMIN` does when every sorted set is empty.
pub fn bzmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let timeout = blocking::timeout(&args[1])?;
    let (keys, max, count) = match mpop_args(args, 2) {
        Ok(parsed) => parsed,
        Err(refused) => return Ok(refused),
    };
    match mpop(ctx, keys, max, count, true)? {
        Some(reply) => Ok(reply),
        None => blocking::block(ctx, keys, timeout, Reply::NullArray),
    }
}

// ---- ZRANDMEMBER, ZSCAN ----

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub fn zrandmember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some(count) = args.get(2) else {
        let Some(meta) = ctx.read_meta(key, Type::ZSet)? else {
            return Ok(Reply::Null);
        };
        let picked = members::random(ctx, &meta.fields(key), b"m", meta.size, 1, true)?;
        return Ok(picked
            .into_iter()
            .next()
            .map_or(Reply::Null, |(m, _)| Reply::Bulk(m)));
    };
    // As Redis: the count is read first, then the rest, then the count's range with scores.
    members::count_arg(count)?;
    let with_scores = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 && w.eq_ignore_ascii_case(b"WITHSCORES") => true,
        Some(_) => return Ok(syntax_error()),
    };
    let (count, distinct) = members::random_count(count, with_scores)?;
    let Some(meta) = ctx.read_meta(key, Type::ZSet)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let picked = members::random(ctx, &meta.fields(key), b"m", meta.size, count, distinct)?;
    let picked = picked.into_iter().map(|(m, v)| (m, stored(&v))).collect();
    Ok(scored_reply(ctx, picked, with_scores))
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]` (see `members` for the cursor). As Redis,
/// the cursor is read before the key, the options after it.
pub fn zscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    ScanArgs::parse(&args[2..3])?;
    let Some(meta) = ctx.read_meta(&args[1], Type::ZSet)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let scan = ScanArgs::parse(&args[2..])?;
    let (next, page) = members::page(ctx, &meta.fields(&args[1]), b"m", &scan)?;
    let flat = page
        .into_iter()
        .flat_map(|(m, v)| [Reply::Bulk(m), Reply::bulk(score::scan_text(stored(&v)))]);
    Ok(scan_reply(next, flat.collect()))
}

#[cfg(test)]
mod tests;
