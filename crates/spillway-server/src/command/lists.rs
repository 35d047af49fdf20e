//! The list commands: `LPUSH`, `LPOP`, `LRANGE`, `LINSERT`... and the blocking pops (`BLPOP`,
//! `BLMOVE`...; how a client waits is `blocking`'s).
//!
//! A list is a metadata record — its size and `head`, the index of its first element — and a
//! record per element at index `head + i` (`encoding`), indices growing either way from the
//! middle of the `u64`s. So:
//! - `LPUSH`/`RPUSH` write an element at `head - 1` or `head + size`; `LPOP`/`RPOP` read and
//!   delete one there (a count of them: a range read and one range delete): O(1) an element;
//! - `LINDEX` and `LSET` are one point read or write: O(1) anywhere in the list (Redis walks
//!   its quicklist: O(n));
//! - `LRANGE` is one range scan of the elements asked for; `LPOS` one scan from either end
//!   (bounded by `MAXLEN`); `LLEN` reads the metadata alone;
//! - `LTRIM` deletes what it cuts with (at most) two range deletes: O(1) whatever it removes;
//! - `LINSERT` and `LREM` move elements, since indices are consecutive: every element on one
//!   side of the insertion (or of the removed ones) is rewritten one place over — the shorter
//!   side — so they cost O(n) writes, as in Kvrocks, whose encoding this is, beside the O(n)
//!   reads Redis makes too.
//!
//! Every write rewrites the metadata (so `WATCH` sees it) and keeps the key's expiry; a list
//! left empty is deleted, as Redis deletes it. A push notes its key for the clients blocked
//! on it (`Ctx::pushed`).

use std::ops::Bound;

use spillway::Expiry;

use super::blocking::{self, Timeout};
use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Fields, Meta, Type};
use super::{arity, integer, not_an_integer, CmdResult, Fail};
use crate::resp::Reply;

type Result = CmdResult;

/// Up to this many elements, a write command reads them one by one (staying in its staged
/// run); past it, with one scan.
const POINT_READS: u64 = 8;

/// One end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

fn refuse(e: &str) -> Fail {
    Fail::Reply(Reply::error(e))
}

fn syntax_error() -> Fail {
    refuse("ERR syntax error")
}

/// `LEFT` or `RIGHT`, in any case.
fn end(arg: &[u8]) -> CmdResult<End> {
    match arg.to_ascii_uppercase().as_slice() {
        b"LEFT" => Ok(End::Left),
        b"RIGHT" => Ok(End::Right),
        _ => Err(syntax_error()),
    }
}

/// An integer argument, or Redis's error for one that is not.
fn integer_arg(arg: &[u8]) -> CmdResult<i64> {
    integer(arg).ok_or_else(|| Fail::Reply(not_an_integer()))
}

/// The record key of position `pos` (from the head) of list `meta`.
fn at(fields: &Fields, meta: &Meta, pos: u64) -> Vec<u8> {
    fields.key(&(meta.head + pos).to_be_bytes())
}

/// An index counted from the head (from the tail if negative) as a position, if in the list.
fn position(index: i64, size: u64) -> Option<u64> {
    let len = size as i64;
    let i = if index < 0 { index + len } else { index };
    (0..len).contains(&i).then_some(i as u64)
}

/// The positions `[from, to)` of `LRANGE`/`LTRIM`'s `start` and `stop` in a list of `size`, as
/// Redis clamps them; `None` if the range is empty.
fn range(start: i64, stop: i64, size: u64) -> Option<(u64, u64)> {
    let len = size as i64;
    let start = if start < 0 { len + start } else { start }.max(0);
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    Some((start as u64, stop.min(len - 1) as u64 + 1))
}

/// Redis's answer to an element that should be there and is not: a list damaged.
fn missing() -> Fail {
    refuse("ERR a list element is missing (the list is damaged)")
}

/// The elements at positions `[from, to)` of list `meta`, in order, for a command that
/// writes: read one by one, or scanned.
fn elements(
    ctx: &mut Ctx,
    fields: &Fields,
    meta: &Meta,
    from: u64,
    to: u64,
) -> CmdResult<Vec<Vec<u8>>> {
    if to - from > POINT_READS {
        return scan(ctx, fields, meta, from, to);
    }
    (from..to)
        .map(
            |pos| match ctx.get_in(Space::Fields, &at(fields, meta, pos))? {
                Some((value, _)) => Ok(value),
                None => Err(missing()),
            },
        )
        .collect()
}

/// The elements at positions `[from, to)` of list `meta`, in order, with one scan (as the
/// command sees the store: `Ctx::scan_in`).
fn scan(
    ctx: &mut Ctx,
    fields: &Fields,
    meta: &Meta,
    from: u64,
    to: u64,
) -> CmdResult<Vec<Vec<u8>>> {
    let (start, end) = (at(fields, meta, from), at(fields, meta, to));
    let mut out = Vec::with_capacity((to - from).min(1 << 16) as usize);
    for record in ctx.scan_in(Space::Fields, &start, Bound::Excluded(&end))? {
        out.push(record?.1);
    }
    if out.len() as u64 != to - from {
        return Err(missing());
    }
    Ok(out)
}

/// Delete the elements at positions `[from, to)` of list `meta`: one delete, or one range
/// delete.
fn delete(ctx: &mut Ctx, fields: &Fields, meta: &Meta, from: u64, to: u64) -> CmdResult<()> {
    match to.saturating_sub(from) {
        0 => {}
        1 => ctx.delete_in(Space::Fields, &at(fields, meta, from))?,
        _ => {
            let (start, end) = (at(fields, meta, from), at(fields, meta, to));
            ctx.delete_range_in(Space::Fields, &start, &end)?
        }
    }
    Ok(())
}

/// Write `value` at position `pos` of list `meta`.
fn put(ctx: &mut Ctx, fields: &Fields, meta: &Meta, pos: u64, value: &[u8]) -> CmdResult<()> {
    Ok(ctx.put_in(Space::Fields, &at(fields, meta, pos), value, Expiry::Never)?)
}

/// Push `elements` one by one onto `end` of list `key` (`meta`, updated; the caller writes
/// it).
fn push_onto(
    ctx: &mut Ctx,
    key: &[u8],
    meta: &mut Meta,
    end: End,
    elements: &[Vec<u8>],
) -> CmdResult<()> {
    let fields = meta.fields(key);
    for e in elements {
        let pos = match end {
            End::Left => {
                meta.head -= 1;
                0
            }
            End::Right => meta.size,
        };
        meta.size += 1;
        put(ctx, &fields, meta, pos, e)?;
    }
    ctx.pushed(key);
    Ok(())
}

/// Remove up to `count` elements from `end` of list `key` (`meta`, updated; the caller
/// writes it): them, from that end inward.
fn pop_from(
    ctx: &mut Ctx,
    key: &[u8],
    meta: &mut Meta,
    end: End,
    count: u64,
) -> CmdResult<Vec<Vec<u8>>> {
    let n = count.min(meta.size);
    let fields = meta.fields(key);
    let (from, to) = match end {
        End::Left => (0, n),
        End::Right => (meta.size - n, meta.size),
    };
    let mut out = elements(ctx, &fields, meta, from, to)?;
    delete(ctx, &fields, meta, from, to)?;
    match end {
        End::Left => meta.head += n,
        End::Right => out.reverse(),
    }
    meta.size -= n;
    Ok(out)
}

fn bulks(values: Vec<Vec<u8>>) -> Reply {
    Reply::Array(values.into_iter().map(Reply::Bulk).collect())
}

// ---- Pushes and pops ----

/// `LPUSH key element [element ...]`: the list's new length.
pub fn lpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    push(ctx, args, End::Left, true)
}

/// `RPUSH key element [element ...]`.
pub fn rpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    push(ctx, args, End::Right, true)
}

/// `LPUSHX key element [element ...]`: pushes only onto a list that exists (else 0).
pub fn lpushx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    push(ctx, args, End::Left, false)
}

/// `RPUSHX key element [element ...]`.
pub fn rpushx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    push(ctx, args, End::Right, false)
}

fn push(ctx: &mut Ctx, args: &[Vec<u8>], end: End, create: bool) -> Result {
    let key = &args[1];
    let (mut meta, expiry) = match ctx.get_meta(key, Type::List)? {
        Some(found) => found,
        None if create => (Meta::new(Type::List, ctx.engine), Expiry::Never),
        None => return Ok(Reply::Integer(0)),
    };
    push_onto(ctx, key, &mut meta, end, &args[2..])?;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Integer(meta.size as i64))
}

/// `LPOP key [count]`: an element (nil if none), or with a count an array of up to that
/// many (a null array if the key is absent).
pub fn lpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    pop(ctx, args, End::Left, "lpop")
}

/// `RPOP key [count]`.
pub fn rpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    pop(ctx, args, End::Right, "rpop")
}

fn pop(ctx: &mut Ctx, args: &[Vec<u8>], end: End, name: &str) -> Result {
    if args.len() > 3 {
        return Ok(arity(name));
    }
    let count = match args.get(2).map(|c| integer(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as u64),
        Some(_) => return Err(refuse("ERR value is out of range, must be positive")),
    };
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::List)? else {
        return Ok(match count {
            Some(_) => Reply::NullArray,
            None => Reply::Null,
        });
    };
    if count == Some(0) {
        return Ok(Reply::Array(Vec::new()));
    }
    let popped = pop_from(ctx, key, &mut meta, end, count.unwrap_or(1))?;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(match count {
        Some(_) => bulks(popped),
        None => popped.into_iter().next().map_or(Reply::Null, Reply::Bulk),
    })
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: `[key, [elements]]` from the
/// first list of `keys` that is not empty, or a null array.
pub fn lmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (keys, end, count) = mpop_args(args, 1)?;
    match mpop(ctx, keys, end, count)? {
        Some(reply) => Ok(reply),
        None => Ok(Reply::NullArray),
    }
}

/// The keys, end and count of `[B]LMPOP`, whose `numkeys` is `args[at]`.
fn mpop_args(args: &[Vec<u8>], at: usize) -> CmdResult<(&[Vec<u8>], End, u64)> {
    let numkeys = match integer(&args[at]) {
        Some(n) if n > 0 => n as u64,
        _ => return Err(refuse("ERR numkeys should be greater than 0")),
    };
    let where_at = (at as u64 + 1).saturating_add(numkeys);
    if where_at >= args.len() as u64 {
        return Err(syntax_error());
    }
    let where_at = where_at as usize;
    let end = end(&args[where_at])?;
    let mut count = None;
    let mut i = where_at + 1;
    while i < args.len() {
        let more = i + 1 < args.len();
        if count.is_none() && more && args[i].eq_ignore_ascii_case(b"COUNT") {
            i += 1;
            match integer(&args[i]) {
                Some(n) if n > 0 => count = Some(n as u64),
                _ => return Err(refuse("ERR count should be greater than 0")),
            }
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    Ok((&args[at + 1..where_at], end, count.unwrap_or(1)))
}

/// Pop up to `count` from `end` of the first of `keys` that holds a list: `[key, [elements]]`.
fn mpop(ctx: &mut Ctx, keys: &[Vec<u8>], end: End, count: u64) -> CmdResult<Option<Reply>> {
    for key in keys {
        if let Some((mut meta, expiry)) = waited_list(ctx, key)? {
            let popped = pop_from(ctx, key, &mut meta, end, count)?;
            ctx.put_meta(key, &mut meta, expiry)?;
            return Ok(Some(Reply::Array(vec![
                Reply::Bulk(key.clone()),
                bulks(popped),
            ])));
        }
    }
    Ok(None)
}

// ---- Reads ----

/// `LLEN key`: from the metadata alone.
pub fn llen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let meta = ctx.read_meta(&args[1], Type::List)?;
    Ok(Reply::Integer(meta.map_or(0, |m| m.size as i64)))
}

/// `LINDEX key index`: one point read.
pub fn lindex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some(meta) = ctx.read_meta(key, Type::List)? else {
        return Ok(Reply::Null);
    };
    let Some(pos) = position(integer_arg(&args[2])?, meta.size) else {
        return Ok(Reply::Null);
    };
    let found = ctx.read_in(Space::Fields, &at(&meta.fields(key), &meta, pos))?;
    Ok(found.map_or(Reply::Null, Reply::Bulk))
}

/// `LRANGE key start stop`: one scan.
pub fn lrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (start, stop) = (integer_arg(&args[2])?, integer_arg(&args[3])?);
    let key = &args[1];
    let Some(meta) = ctx.read_meta(key, Type::List)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let Some((from, to)) = range(start, stop, meta.size) else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(bulks(scan(ctx, &meta.fields(key), &meta, from, to)?))
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`: the position of the
/// `rank`-th match (from the tail if negative), or with `COUNT` an array of up to that many
/// (0: all), looking at `MAXLEN` elements at most (0: all). One scan from that end.
pub fn lpos(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, element) = (&args[1], &args[2]);
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0u64);
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        match args[i].to_ascii_uppercase().as_slice() {
            b"RANK" if more => {
                i += 1;
                rank = integer_arg(&args[i])?;
                if rank == 0 {
                    return Err(refuse(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from \
                         the second ... or use negative to start from the end of the list",
                    ));
                }
            }
            b"COUNT" if more => {
                i += 1;
                match integer(&args[i]) {
                    Some(n) if n >= 0 => count = Some(n),
                    _ => return Err(refuse("ERR COUNT can't be negative")),
                }
            }
            b"MAXLEN" if more => {
                i += 1;
                match integer(&args[i]) {
                    Some(n) if n >= 0 => maxlen = n as u64,
                    _ => return Err(refuse("ERR MAXLEN can't be negative")),
                }
            }
            _ => return Err(syntax_error()),
        }
        i += 1;
    }
    // As Redis: a negative rank counts from the tail (i64::MIN stays negative: every match
    // is at or past it).
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let none = || match count {
        Some(_) => Reply::Array(Vec::new()),
        None => Reply::Null,
    };
    let Some(meta) = ctx.read_meta(key, Type::List)? else {
        return Ok(none());
    };
    let looked = match maxlen {
        0 => meta.size,
        n => n.min(meta.size),
    };
    let (from, to) = match from_tail {
        false => (0, looked),
        true => (meta.size - looked, meta.size),
    };
    let fields = meta.fields(key);
    let (start, end) = (at(&fields, &meta, from), at(&fields, &meta, to));
    let records = ctx.scan_in(Space::Fields, &start, Bound::Excluded(&end))?;
    let records: Box<dyn Iterator<Item = _>> = match from_tail {
        false => records,
        true => Box::new(records.rev()),
    };
    let mut matches = 0i64;
    let mut found = Vec::new();
    for (index, record) in records.enumerate() {
        if record?.1 != *element {
            continue;
        }
        matches += 1;
        if matches < rank {
            continue;
        }
        let pos = match from_tail {
            false => index as u64,
            true => meta.size - index as u64 - 1,
        };
        let Some(count) = count else {
            return Ok(Reply::Integer(pos as i64));
        };
        found.push(Reply::Integer(pos as i64));
        if count != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= count {
            break;
        }
    }
    Ok(match count {
        Some(_) => Reply::Array(found),
        None => Reply::Null,
    })
}

// ---- Writes inside the list ----

/// `LSET key index element`: one point write.
pub fn lset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::List)? else {
        return Err(refuse("ERR no such key"));
    };
    let Some(pos) = position(integer_arg(&args[2])?, meta.size) else {
        return Err(refuse("ERR index out of range"));
    };
    put(ctx, &meta.fields(key), &meta, pos, &args[3])?;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::ok())
}

/// `LTRIM key start stop`: what is cut goes in at most two range deletes.
pub fn ltrim(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (start, stop) = (integer_arg(&args[2])?, integer_arg(&args[3])?);
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::List)? else {
        return Ok(Reply::ok());
    };
    let fields = meta.fields(key);
    let (from, to) = range(start, stop, meta.size).unwrap_or((0, 0));
    delete(ctx, &fields, &meta, 0, from)?;
    delete(ctx, &fields, &meta, to.max(from), meta.size)?;
    meta.head += from;
    meta.size = to - from;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::ok())
}

/// `LREM key count element`: remove the first `count` matches (from the tail if negative,
/// all if 0); how many were removed. The list is read up to the last one removed (all of it
/// for 0), and the elements on the shorter side of those removed are rewritten closer.
pub fn lrem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let count = integer_arg(&args[2])?;
    let (key, element) = (&args[1], &args[3]);
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::List)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(key);
    let limit = count.unsigned_abs();
    let from_tail = count < 0;
    // The elements read, `(position, value)` in the order read, and the positions removed.
    let mut read = Vec::new();
    let mut removed = Vec::new();
    {
        let (start, end) = (at(&fields, &meta, 0), at(&fields, &meta, meta.size));
        let records = ctx.scan_in(Space::Fields, &start, Bound::Excluded(&end))?;
        let records: Box<dyn Iterator<Item = _>> = match from_tail {
            false => records,
            true => Box::new(records.rev()),
        };
        for (i, record) in records.enumerate() {
            let value = record?.1;
            let pos = match from_tail {
                false => i as u64,
                true => meta.size - 1 - i as u64,
            };
            if value == *element {
                removed.push(pos);
            }
            read.push((pos, value));
            if limit != 0 && removed.len() as u64 == limit {
                break;
            }
        }
    }
    if removed.is_empty() {
        return Ok(Reply::Integer(0));
    }
    if from_tail {
        read.reverse();
        removed.reverse();
    }
    let (lo, hi, n) = (removed[0], removed[removed.len() - 1], removed.len() as u64);
    let (read_from, read_to) = (read[0].0, read[read.len() - 1].0 + 1);
    let is_removed = |p: &u64| removed.binary_search(p).is_ok();
    // Kept elements past the first removed, or before the last: the fewer move.
    if meta.size - lo - n <= hi + 1 - n {
        let mut kept: Vec<Vec<u8>> = read
            .into_iter()
            .filter(|(p, _)| *p > lo && !is_removed(p))
            .map(|(_, v)| v)
            .collect();
        kept.extend(elements(ctx, &fields, &meta, read_to, meta.size)?);
        for (i, v) in kept.iter().enumerate() {
            put(ctx, &fields, &meta, lo + i as u64, v)?;
        }
        delete(ctx, &fields, &meta, meta.size - n, meta.size)?;
    } else {
        let mut kept = elements(ctx, &fields, &meta, 0, read_from)?;
        kept.extend(
            read.into_iter()
                .filter(|(p, _)| *p < hi && !is_removed(p))
                .map(|(_, v)| v),
        );
        for (i, v) in kept.iter().enumerate() {
            put(ctx, &fields, &meta, n + i as u64, v)?;
        }
        delete(ctx, &fields, &meta, 0, n)?;
        meta.head += n;
    }
    meta.size -= n;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Integer(n as i64))
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 if `pivot` is not in the
/// list, 0 if there is no list. The list is read up to the pivot, and the elements on the
/// shorter side of it are rewritten one place over.
pub fn linsert(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let before = match args[2].to_ascii_uppercase().as_slice() {
        b"BEFORE" => true,
        b"AFTER" => false,
        _ => return Err(syntax_error()),
    };
    let (key, pivot, element) = (&args[1], &args[3], &args[4]);
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::List)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(key);
    // The elements up to the pivot, which is the last.
    let mut read = Vec::new();
    {
        let (start, end) = (at(&fields, &meta, 0), at(&fields, &meta, meta.size));
        for record in ctx.scan_in(Space::Fields, &start, Bound::Excluded(&end))? {
            let value = record?.1;
            let found = value == *pivot;
            read.push(value);
            if found {
                break;
            }
        }
    }
    if read.last() != Some(pivot) {
        return Ok(Reply::Integer(-1));
    }
    let pivot_at = read.len() as u64 - 1;
    // The new element's position: the elements before it move one toward the head, or those
    // from it one toward the tail.
    let q = if before { pivot_at } else { pivot_at + 1 };
    if q <= meta.size - q {
        meta.head -= 1;
        for (i, v) in read.iter().take(q as usize).enumerate() {
            put(ctx, &fields, &meta, i as u64, v)?;
        }
    } else {
        let mut moved: Vec<Vec<u8>> = read.split_off(q as usize);
        moved.extend(elements(ctx, &fields, &meta, pivot_at + 1, meta.size)?);
        for (i, v) in moved.iter().enumerate() {
            put(ctx, &fields, &meta, q + 1 + i as u64, v)?;
        }
    }
    put(ctx, &fields, &meta, q, element)?;
    meta.size += 1;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Integer(meta.size as i64))
}

// ---- Moves ----

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: the element moved, nil if `source` is
/// empty. The same key both ways rotates the list.
pub fn lmove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (from, to) = (end(&args[3])?, end(&args[4])?);
    move_element(ctx, &args[1], &args[2], from, to)
}

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
pub fn rpoplpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    move_element(ctx, &args[1], &args[2], End::Right, End::Left)
}

fn move_element(ctx: &mut Ctx, source: &[u8], dest: &[u8], from: End, to: End) -> Result {
    let Some((mut meta, expiry)) = ctx.get_meta(source, Type::List)? else {
        return Ok(Reply::Null);
    };
    if source == dest {
        let popped = pop_from(ctx, source, &mut meta, from, 1)?;
        push_onto(ctx, source, &mut meta, to, &popped)?;
        ctx.put_meta(source, &mut meta, expiry)?;
        return Ok(popped.into_iter().next().map_or(Reply::Null, Reply::Bulk));
    }
    let (mut into, into_expiry) = ctx.get_or_new_meta(dest, Type::List)?;
    let popped = pop_from(ctx, source, &mut meta, from, 1)?;
    ctx.put_meta(source, &mut meta, expiry)?;
    push_onto(ctx, dest, &mut into, to, &popped)?;
    ctx.put_meta(dest, &mut into, into_expiry)?;
    Ok(popped.into_iter().next().map_or(Reply::Null, Reply::Bulk))
}

// ---- Blocking ----

/// List `key` for a pop that may block. Run again after a wake-up, a key that holds another
/// type now is as if empty (Redis serves a blocked client from lists only, and keeps it
/// blocked); the first time, it is `WRONGTYPE`.
fn waited_list(ctx: &mut Ctx, key: &[u8]) -> CmdResult<Option<(Meta, Expiry)>> {
    match ctx.get_meta(key, Type::List) {
        Err(Fail::Reply(_)) if ctx.blocking.resuming() => Ok(None),
        found => found,
    }
}

/// `BLPOP key [key ...] timeout`: `[key, element]` from the first list of `keys` that is not
/// empty; else waits for a push to one (`blocking`), up to `timeout` seconds (0: for ever),
/// and answers a null array if none comes.
pub fn blpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    blocking_pop(ctx, args, End::Left)
}

/// `BRPOP key [key ...] timeout`.
pub fn brpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    blocking_pop(ctx, args, End::Right)
}

fn blocking_pop(ctx: &mut Ctx, args: &[Vec<u8>], end: End) -> Result {
    let timeout = blocking::timeout(&args[args.len() - 1])?;
    let keys = &args[1..args.len() - 1];
    for key in keys {
        if let Some((mut meta, expiry)) = waited_list(ctx, key)? {
            let popped = pop_from(ctx, key, &mut meta, end, 1)?;
            ctx.put_meta(key, &mut meta, expiry)?;
            let mut reply = vec![Reply::Bulk(key.clone())];
            reply.extend(popped.into_iter().map(Reply::Bulk));
            return Ok(Reply::Array(reply));
        }
    }
    blocking::block(ctx, keys, timeout, Reply::NullArray)
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`: `LMPOP`, waiting as
/// `BLPOP` does when every list is empty.
pub fn blmpop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (keys, end, count) = mpop_args(args, 2)?;
    let timeout = blocking::timeout(&args[1])?;
    match mpop(ctx, keys, end, count)? {
        Some(reply) => Ok(reply),
        None => blocking::block(ctx, keys, timeout, Reply::NullArray),
    }
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`: `LMOVE`, waiting for a push to
/// `source` if it is empty (a null array after the timeout, as Redis answers; nil in a
/// transaction).
pub fn blmove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (from, to) = (end(&args[3])?, end(&args[4])?);
    let timeout = blocking::timeout(&args[5])?;
    blocking_move(ctx, &args[1], &args[2], from, to, timeout)
}

/// `BRPOPLPUSH source destination timeout`: `BLMOVE source destination RIGHT LEFT timeout`.
pub fn brpoplpush(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let timeout = blocking::timeout(&args[3])?;
    blocking_move(ctx, &args[1], &args[2], End::Right, End::Left, timeout)
}

fn blocking_move(
    ctx: &mut Ctx,
    source: &[u8],
    dest: &[u8],
    from: End,
    to: End,
    timeout: Timeout,
) -> Result {
    if waited_list(ctx, source)?.is_none() {
        return blocking::block(ctx, &[source.to_vec()], timeout, Reply::Null);
    }
    move_element(ctx, source, dest, from, to)
}

#[cfg(test)]
mod tests;
