//! The string commands: `GET`, `MGET`, `MSET` and their kin, counters, `APPEND`. Every value
//! is a string. (`SET` and the commands with its options: `set`.)
//!
//! Reads (`GET`, `MGET`, `STRLEN`) read the selected database as it is (and a transaction's
//! own writes); writes go through [`Ctx`]: those that read first (`MSETNX`, `INCR`) are
//! staged, the rest are blind (see `context`).
//!
//! As in Redis, a command that changes a value in place (`INCR` and its kin, `APPEND`) keeps
//! the key's expiry: it writes the new value back expiring when the old one did. One that sets
//! a value (`MSET`, `MSETNX`) takes the expiry away.

use spillway::Expiry;

use super::context::Ctx;
use super::{integer, not_an_integer};
use crate::float;
use crate::resp::Reply;

type Result = super::CmdResult;

/// `GET key`.
pub fn get(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(ctx.read(&args[1])?.map_or(Reply::Null, Reply::Bulk))
}

/// `MGET key [key ...]`.
pub fn mget(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let values = ctx.read_many(&args[1..])?;
    let values = values
        .into_iter()
        .map(|v| v.map_or(Reply::Null, Reply::Bulk));
    Ok(Reply::Array(values.collect()))
}

/// `STRLEN key`.
pub fn strlen(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let value = ctx.read(&args[1])?;
    Ok(Reply::Integer(value.map_or(0, |v| v.len() as i64)))
}

/// `GETDEL key`.
pub fn getdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let old = ctx.get(&args[1])?;
    ctx.looked_up(old.is_some());
    if old.is_some() {
        ctx.delete(&args[1])?;
    }
    Ok(old.map_or(Reply::Null, Reply::Bulk))
}

/// `MSET key value [key value ...]`: blind.
pub fn mset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if args.len().is_multiple_of(2) {
        return Ok(super::arity("mset"));
    }
    for kv in args[1..].chunks(2) {
        ctx.put(&kv[0], &kv[1])?;
    }
    Ok(Reply::ok())
}

/// `MSETNX key value [key value ...]`: all of them, only if none exists.
pub fn msetnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if args.len().is_multiple_of(2) {
        return Ok(super::arity("msetnx"));
    }
    for kv in args[1..].chunks(2) {
        if ctx.get(&kv[0])?.is_some() {
            return Ok(Reply::Integer(0));
        }
    }
    for kv in args[1..].chunks(2) {
        ctx.put(&kv[0], &kv[1])?;
    }
    Ok(Reply::Integer(1))
}

/// `APPEND key value`: the new length.
pub fn append(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (mut value, expiry) = ctx
        .get_with_expiry(&args[1])?
        .unwrap_or((Vec::new(), Expiry::Never));
    value.extend_from_slice(&args[2]);
    ctx.put_expiring(&args[1], &value, expiry)?;
    Ok(Reply::Integer(value.len() as i64))
}

/// `INCR key`.
pub fn incr(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    add(ctx, &args[1], 1)
}

/// `DECR key`.
pub fn decr(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    add(ctx, &args[1], -1)
}

/// `INCRBY key increment`.
pub fn incrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    match integer(&args[2]) {
        Some(by) => add(ctx, &args[1], by),
        None => Ok(not_an_integer()),
    }
}

/// `DECRBY key decrement`.
pub fn decrby(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    match integer(&args[2]).map(i64::checked_neg) {
        Some(Some(by)) => add(ctx, &args[1], by),
        Some(None) => Ok(Reply::error("ERR decrement would overflow")),
        None => Ok(not_an_integer()),
    }
}

/// Add `by` to the integer at `key` (0 if absent), keeping its expiry.
fn add(ctx: &mut Ctx, key: &[u8], by: i64) -> Result {
    let (now, expiry) = match ctx.get_with_expiry(key)? {
        None => (0, Expiry::Never),
        Some((v, expiry)) => match integer(&v) {
            Some(n) => (n, expiry),
            None => return Ok(not_an_integer()),
        },
    };
    let Some(next) = now.checked_add(by) else {
        return Ok(Reply::error("ERR increment or decrement would overflow"));
    };
    ctx.put_expiring(key, next.to_string().as_bytes(), expiry)?;
    Ok(Reply::Integer(next))
}

/// `INCRBYFLOAT key increment`: the sum as Redis prints it (see `float`).
pub fn incrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, by) = (&args[1], &args[2]);
    let (now, expiry) = ctx
        .get_with_expiry(key)?
        .unwrap_or_else(|| (b"0".to_vec(), Expiry::Never));
    if !float::is_number(&now) || !float::is_number(by) {
        return Ok(Reply::error("ERR value is not a valid float"));
    }
    let Some(next) = float::add(&now, by) else {
        return Ok(Reply::error("ERR increment would produce NaN or Infinity"));
    };
    ctx.put_expiring(key, next.as_bytes(), expiry)?;
    Ok(Reply::Bulk(next.into_bytes()))
}
