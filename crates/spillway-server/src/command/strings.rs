//! The string commands: `GET`, `SET` and its kin, counters. Every value is a string.
//!
//! Reads (`GET`, `MGET`, `STRLEN`) read the selected database as it is (and a transaction's
//! own writes); writes go through [`Ctx`]: those that read first (`SET k v NX`, `INCR`) are
//! staged, the rest are blind (see `context`).

use super::context::Ctx;
use super::spec::key;
use super::{integer, not_an_integer};
use crate::float;
use crate::resp::Reply;

type Result = spillway::Result<Reply>;

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

/// `SET`'s conditions and whether it returns the old value.
#[derive(Clone, Copy, Default)]
struct SetMode {
    nx: bool,
    xx: bool,
    get: bool,
}

/// `SET key value [NX | XX] [GET]`: blind without options.
pub fn set(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut mode = SetMode::default();
    for opt in &args[3..] {
        match opt.to_ascii_uppercase().as_slice() {
            b"NX" if !mode.xx => mode.nx = true,
            b"XX" if !mode.nx => mode.xx = true,
            b"GET" => mode.get = true,
            b"EX" | b"PX" | b"EXAT" | b"PXAT" | b"KEEPTTL" => {
                return Ok(Reply::error(
                    "ERR expiry (EX, PX, EXAT, PXAT, KEEPTTL) is not supported",
                ))
            }
            _ => return Ok(Reply::error("ERR syntax error")),
        }
    }
    set_as(ctx, &args[1], &args[2], mode)
}

/// The flags of `SET`'s key in request `args` (as Redis's `setGetKeys`): read and updated
/// with `GET`, else overwritten.
pub fn set_key_flags(args: &[Vec<u8>]) -> u32 {
    match args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"GET")) {
        true => key::RW | key::ACCESS | key::UPDATE,
        false => key::OW | key::UPDATE,
    }
}

/// `SETNX key value`: 1 if it set the key, 0 if the key existed.
pub fn setnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let nx = SetMode {
        nx: true,
        ..SetMode::default()
    };
    let set = set_as(ctx, &args[1], &args[2], nx)?;
    Ok(Reply::Integer(i64::from(set != Reply::Null)))
}

/// `GETSET key value`: `SET key value GET`.
pub fn getset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let get = SetMode {
        get: true,
        ..SetMode::default()
    };
    set_as(ctx, &args[1], &args[2], get)
}

/// Set `key` to `value` as `mode` says: only if absent (NX) or present (XX), replying with
/// the old value (GET) or OK, or null where the condition failed.
fn set_as(ctx: &mut Ctx, key: &[u8], value: &[u8], mode: SetMode) -> Result {
    let SetMode { nx, xx, get } = mode;
    let old = if nx || xx || get { ctx.get(key)? } else { None };
    let write = !(nx && old.is_some() || xx && old.is_none());
    if write {
        ctx.put(key, value)?;
    }
    Ok(match (get, write) {
        (true, _) => old.map_or(Reply::Null, Reply::Bulk),
        (false, true) => Reply::ok(),
        (false, false) => Reply::Null,
    })
}

/// `GETDEL key`.
pub fn getdel(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let old = ctx.get(&args[1])?;
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
    let mut value = ctx.get(&args[1])?.unwrap_or_default();
    value.extend_from_slice(&args[2]);
    ctx.put(&args[1], &value)?;
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

/// Add `by` to the integer at `key` (0 if absent).
fn add(ctx: &mut Ctx, key: &[u8], by: i64) -> Result {
    let now = match ctx.get(key)? {
        None => 0,
        Some(v) => match integer(&v) {
            Some(n) => n,
            None => return Ok(not_an_integer()),
        },
    };
    let Some(next) = now.checked_add(by) else {
        return Ok(Reply::error("ERR increment or decrement would overflow"));
    };
    ctx.put(key, next.to_string().as_bytes())?;
    Ok(Reply::Integer(next))
}

/// `INCRBYFLOAT key increment`: the sum as Redis prints it (see `float`).
pub fn incrbyfloat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, by) = (&args[1], &args[2]);
    let now = ctx.get(key)?.unwrap_or_else(|| b"0".to_vec());
    if !float::is_number(&now) || !float::is_number(by) {
        return Ok(Reply::error("ERR value is not a valid float"));
    }
    let Some(next) = float::add(&now, by) else {
        return Ok(Reply::error("ERR increment would produce NaN or Infinity"));
    };
    ctx.put(key, next.as_bytes())?;
    Ok(Reply::Bulk(next.into_bytes()))
}
