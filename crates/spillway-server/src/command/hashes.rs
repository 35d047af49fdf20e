//! The hash commands: `HSET`, `HGET`, `HGETALL` and their kin. A hash is a metadata record and
//! a record per field (`encoding`): a field is read or written by one point read or write, the
//! whole hash by one range of the fields keyspace, in field order (Redis's order is its hash
//! table's, which no client may rely on).

use spillway::Expiry;

use super::context::Ctx;
use super::databases::Space;
use super::encoding::Type;
use super::members::{self, Records, ScanArgs};
use super::{arity, integer, not_an_integer, CmdResult};
use crate::float;
use crate::resp::Reply;

type Result = CmdResult;

/// `HSET key field value [field value ...]`: how many fields were new.
pub fn hset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if !args.len().is_multiple_of(2) {
        return Ok(arity("hset"));
    }
    Ok(Reply::Integer(set_fields(ctx, &args[1], &args[2..])?))
}

/// `HMSET key field value [field value ...]`: `HSET` answering OK.
pub fn hmset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if !args.len().is_multiple_of(2) {
        return Ok(arity("hmset"));
    }
    set_fields(ctx, &args[1], &args[2..])?;
    Ok(Reply::ok())
}

/// Set each field of `pairs` in hash `key`: how many were new.
fn set_fields(ctx: &mut Ctx, key: &[u8], pairs: &[Vec<u8>]) -> CmdResult<i64> {
    let (mut meta, expiry) = ctx.get_or_new_meta(key, Type::Hash)?;
    let fields = meta.fields(key);
    let mut added = 0;
    for pair in pairs.chunks(2) {
        let k = fields.member(b"", &pair[0]);
        if ctx.get_in(Space::Fields, &k)?.is_none() {
            added += 1;
            meta.size += 1;
        }
        ctx.put_in(Space::Fields, &k, &pair[1], Expiry::Never)?;
    }
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(added)
}

/// `HSETNX key field value`: 1 if the field was new and is set, 0 if it existed.
pub fn hsetnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, field) = (&args[1], &args[2]);
    let (mut meta, expiry) = ctx.get_or_new_meta(key, Type::Hash)?;
    let k = meta.fields(key).member(b"", field);
    if ctx.get_in(Space::Fields, &k)?.is_some() {
        return Ok(Reply::Integer(0));
    }
    ctx.put_in(Space::Fields, &k, &args[3], Expiry::Never)?;
    meta.size += 1;
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Integer(1))
}

/// `HGET key field`.
pub fn hget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(field(ctx, &args[1], &args[2])?.map_or(Reply::Null, Reply::Bulk))
}

/// Field `field` of hash `key`, for a command that only reads.
fn field(ctx: &mut Ctx, key: &[u8], field: &[u8]) -> CmdResult<Option<Vec<u8>>> {
    match ctx.read_meta(key, Type::Hash)? {
        Some(meta) => Ok(ctx.read_in(Space::Fields, &meta.fields(key).member(b"", field))?),
        None => Ok(None),
    }
}

/// `HMGET key field [field ...]`.
pub fn hmget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(meta) = ctx.read_meta(&args[1], Type::Hash)? else {
        return Ok(Reply::Array(vec![Reply::Null; args.len() - 2]));
    };
    let fields = meta.fields(&args[1]);
    let mut out = Vec::with_capacity(args.len() - 2);
    for f in &args[2..] {
        let v = ctx.read_in(Space::Fields, &fields.member(b"", f))?;
        out.push(v.map_or(Reply::Null, Reply::Bulk));
    }
    Ok(Reply::Array(out))
}

/// `HDEL key field [field ...]`: how many fields were removed (the hash goes with its last).
pub fn hdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::Hash)? else {
        return Ok(Reply::Integer(0));
    };
    let fields = meta.fields(key);
    let mut removed = 0;
    for f in &args[2..] {
        let k = fields.member(b"", f);
        if ctx.get_in(Space::Fields, &k)?.is_some() {
            ctx.delete_in(Space::Fields, &k)?;
            removed += 1;
            meta.size -= 1;
            meta.deleted += 1;
        }
    }
    if removed > 0 {
        ctx.put_meta(key, &mut meta, expiry)?;
    }
    Ok(Reply::Integer(removed))
}

/// `HEXISTS key field`.
pub fn hexists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(Reply::Integer(
        field(ctx, &args[1], &args[2])?.is_some() as i64
    ))
}

/// `HLEN key`: from the metadata, without reading a field.
pub fn hlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let meta = ctx.read_meta(&args[1], Type::Hash)?;
    Ok(Reply::Integer(meta.map_or(0, |m| m.size as i64)))
}

/// `HSTRLEN key field`.
pub fn hstrlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let v = field(ctx, &args[1], &args[2])?;
    Ok(Reply::Integer(v.map_or(0, |v| v.len() as i64)))
}

/// Every field of hash `key` with its value, for a command that only reads.
fn all(ctx: &mut Ctx, key: &[u8]) -> CmdResult<Records> {
    match ctx.read_meta(key, Type::Hash)? {
        Some(meta) => members::all(ctx, &meta.fields(key), b""),
        None => Ok(Vec::new()),
    }
}

/// `HKEYS key`.
pub fn hkeys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let all = all(ctx, &args[1])?;
    Ok(Reply::Array(
        all.into_iter().map(|(f, _)| Reply::Bulk(f)).collect(),
    ))
}

/// `HVALS key`.
pub fn hvals(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let all = all(ctx, &args[1])?;
    Ok(Reply::Array(
        all.into_iter().map(|(_, v)| Reply::Bulk(v)).collect(),
    ))
}

/// `HGETALL key`: fields and values, a map in RESP3.
pub fn hgetall(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let all = all(ctx, &args[1])?;
    Ok(pairs_reply(ctx, all))
}

/// Fields and values: a flat array, or (RESP3) a map.
fn pairs_reply(ctx: &Ctx, pairs: Records) -> Reply {
    let pairs = pairs
        .into_iter()
        .map(|(f, v)| (Reply::Bulk(f), Reply::Bulk(v)));
    match ctx.session.resp {
        3 => Reply::Map(pairs.collect()),
        _ => Reply::Array(pairs.flat_map(|(f, v)| [f, v]).collect()),
    }
}

/// `HINCRBY key field increment`: the new value.
pub fn hincrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, field) = (&args[1], &args[2]);
    let Some(by) = integer(&args[3]) else {
        return Ok(not_an_integer());
    };
    let (mut meta, expiry) = ctx.get_or_new_meta(key, Type::Hash)?;
    let k = meta.fields(key).member(b"", field);
    let old = ctx.get_in(Space::Fields, &k)?;
    let now = match &old {
        Some((v, _)) => match integer(v) {
            Some(n) => n,
            None => return Ok(Reply::error("ERR hash value is not an integer")),
        },
        None => 0,
    };
    let Some(next) = now.checked_add(by) else {
        return Ok(Reply::error("ERR increment or decrement would overflow"));
    };
    ctx.put_in(
        Space::Fields,
        &k,
        next.to_string().as_bytes(),
        Expiry::Never,
    )?;
    meta.size += u64::from(old.is_none());
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Integer(next))
}

/// `HINCRBYFLOAT key field increment`: the new value, as `INCRBYFLOAT` prints it.
pub fn hincrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, field, by) = (&args[1], &args[2], &args[3]);
    if !float::is_number(by) {
        return Ok(Reply::error("ERR value is not a valid float"));
    }
    if float::is_infinite(by) {
        return Ok(Reply::error("ERR value is NaN or Infinity"));
    }
    let (mut meta, expiry) = ctx.get_or_new_meta(key, Type::Hash)?;
    let k = meta.fields(key).member(b"", field);
    let old = ctx.get_in(Space::Fields, &k)?;
    let now = old.as_ref().map_or(&b"0"[..], |(v, _)| v);
    if !float::is_number(now) {
        return Ok(Reply::error("ERR hash value is not a float"));
    }
    let Some(next) = float::add(now, by) else {
        return Ok(Reply::error("ERR increment would produce NaN or Infinity"));
    };
    ctx.put_in(Space::Fields, &k, next.as_bytes(), Expiry::Never)?;
    meta.size += u64::from(old.is_none());
    ctx.put_meta(key, &mut meta, expiry)?;
    Ok(Reply::Bulk(next.into_bytes()))
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]` (see `members` for the cursor).
pub fn hscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let scan = ScanArgs::parse(&args[2..])?;
    let Some(meta) = ctx.read_meta(&args[1], Type::Hash)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let (next, page) = members::page(ctx, &meta.fields(&args[1]), b"", &scan)?;
    let flat = page
        .into_iter()
        .flat_map(|(f, v)| [Reply::Bulk(f), Reply::Bulk(v)]);
    Ok(scan_reply(next, flat.collect()))
}

/// A `*SCAN` reply: the next cursor and the page.
pub fn scan_reply(next: u64, page: Vec<Reply>) -> Reply {
    Reply::Array(vec![Reply::bulk(next.to_string()), Reply::Array(page)])
}

/// `HRANDFIELD key [count [WITHVALUES]]`.
pub fn hrandfield(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let with_values = match args.get(3) {
        None => false,
        Some(w) if args.len() == 4 && w.eq_ignore_ascii_case(b"WITHVALUES") => true,
        Some(_) => return Ok(Reply::error("ERR syntax error")),
    };
    let Some(count) = args.get(2) else {
        let Some(meta) = ctx.read_meta(key, Type::Hash)? else {
            return Ok(Reply::Null);
        };
        let picked = members::random(ctx, &meta.fields(key), b"", meta.size, 1, true)?;
        return Ok(picked
            .into_iter()
            .next()
            .map_or(Reply::Null, |(f, _)| Reply::Bulk(f)));
    };
    let (count, distinct) = members::random_count(count, with_values)?;
    let Some(meta) = ctx.read_meta(key, Type::Hash)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let picked = members::random(ctx, &meta.fields(key), b"", meta.size, count, distinct)?;
    if !with_values {
        return Ok(Reply::Array(
            picked.into_iter().map(|(f, _)| Reply::Bulk(f)).collect(),
        ));
    }
    Ok(match ctx.session.resp {
        // RESP3: an array of [field, value] pairs.
        3 => Reply::Array(
            picked
                .into_iter()
                .map(|(f, v)| Reply::Array(vec![Reply::Bulk(f), Reply::Bulk(v)]))
                .collect(),
        ),
        _ => pairs_reply(ctx, picked),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;
    use crate::resp::Reply;

    /// A command that fails midway (its third field's value past the store's largest) writes
    /// none of its fields, and the commands around it in the pipeline keep theirs.
    #[test]
    fn a_command_that_fails_midway_writes_nothing() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let big = "v".repeat(spillway::MAX_VALUE_LEN + 1);
        let failing = ["HSET", "h", "a", "1", "b", "2", "c", &big];
        for queued in [false, true] {
            let mut reqs: Vec<&[&str]> = vec![
                &["DEL", "h", "n"],
                &["HSET", "h", "keep", "1"],
                &["INCR", "n"],
                &failing,
                &["INCR", "n"],
                &["HLEN", "h"],
                &["HGET", "h", "a"],
            ];
            if queued {
                reqs.insert(0, &["MULTI"]);
                reqs.push(&["EXEC"]);
            }
            let out = run(&e, &mut s, &reqs);
            let replies = match queued {
                false => out,
                true => match out.last() {
                    Some(Reply::Array(replies)) => replies.clone(),
                    other => panic!("{other:?}"),
                },
            };
            assert!(
                matches!(&replies[3], Reply::Error(e) if e.contains("exceeds the limit")),
                "{replies:?}"
            );
            assert_eq!(replies[4], Reply::Integer(2));
            assert_eq!(
                replies[5..],
                [Reply::Integer(1), Reply::Null],
                "queued: {queued}"
            );
        }
        let out = run(&e, &mut s, &[&["HGETALL", "h"], &["GET", "n"]]);
        assert_eq!(
            out,
            [
                Reply::Array(vec![Reply::bulk("keep"), Reply::bulk("1")]),
                Reply::bulk("2")
            ]
        );
    }
}
