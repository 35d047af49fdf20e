//! The string commands: `GET`, `MGET`, `MSET` and their kin, counters, `APPEND`, and the
//! ranges of a string, `SETRANGE`, `GETRANGE` (`SUBSTR`). Every value is a string. (`SET` and
//! the commands with its options: `set`; bits: `bits`; `LCS`: `lcs`.)
//!
//! Reads (`GET`, `MGET`, `STRLEN`, `GETRANGE`) read the selected database as it is (and a
//! transaction's own writes); writes go through [`Ctx`]: those that read first (`MSETNX`,
//! `INCR`, `SETRANGE`) are staged, the rest are blind (see `context`).
//!
//! As in Redis, a command that changes a value in place (`INCR` and its kin, `APPEND`,
//! `SETRANGE`, and `SETBIT` in `bits`) keeps the key's expiry: it writes the new value back
//! expiring when the old one did. One that sets a value (`MSET`, `MSETNX`) takes the expiry
//! away.

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
    // A key of any type counts, as in Redis.
    for kv in args[1..].chunks(2) {
        if ctx.entry(&kv[0])?.is_some() {
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

/// Redis's `proto-max-bulk-len` as it ships (512 MiB): the longest string it makes, by which
/// it refuses a `SETRANGE` or a bit offset past it. Ours is the store's largest value,
/// [`spillway::MAX_VALUE_LEN`] (16 MiB), which [`too_long`] refuses too, with an error of its
/// own.
pub const REDIS_MAX_LEN: u64 = 512 << 20;

/// The error for a string that would be `len` bytes long, if it is too long: past Redis's
/// limit, Redis's error; past the store's largest value but within Redis's (which would make
/// it), one that says which limit it is, after Redis's words.
pub fn too_long(len: u64) -> Option<Reply> {
    if len > REDIS_MAX_LEN {
        return Some(Reply::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    (len > spillway::MAX_VALUE_LEN as u64).then(|| {
        Reply::error(format!(
            "ERR string exceeds maximum allowed size ({} bytes, the store's largest value)",
            spillway::MAX_VALUE_LEN
        ))
    })
}

/// The positions `start` to `end` (inclusive) of a string of `len` positions (bytes, or bits),
/// as Redis reads a range: negative ones count from the end, then both are clamped to the
/// string; `None` if nothing is left. (Redis's `GETRANGE` and `BITCOUNT` answer nothing first
/// where both are negative and `start` is past `end`, before clamping; `BITPOS` does not: see
/// [`reversed_from_end`].)
pub fn clamp(start: i64, end: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i64; // at most 8 times the store's largest value
    let from_end = |i: i64| if i < 0 { len + i } else { i };
    let start = from_end(start).max(0);
    let end = from_end(end).max(0).min(len - 1);
    (start <= end).then_some((start as u64, end as u64))
}

/// Whether `start` and `end` both count from the end and `start` comes after `end`: an empty
/// range to `GETRANGE` and `BITCOUNT` whatever the string's length, where [`clamp`] would
/// make both 0 if both are before its start.
pub fn reversed_from_end(start: i64, end: i64) -> bool {
    start < 0 && end < 0 && start > end
}

/// `SETRANGE key offset value`: `value` written over the string from byte `offset` on, zeros
/// between its end and `offset`; the new length. As Redis: an empty `value` writes nothing
/// (and creates no key), answering the length as it is; a string longer than the limits is
/// refused (see [`too_long`]).
pub fn setrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (key, patch) = (&args[1], &args[3]);
    let Some(offset) = integer(&args[2]) else {
        return Ok(not_an_integer());
    };
    let Ok(offset) = usize::try_from(offset) else {
        return Ok(Reply::error("ERR offset is out of range"));
    };
    let old = ctx.get_with_expiry(key)?;
    if patch.is_empty() {
        return Ok(Reply::Integer(old.map_or(0, |(v, _)| v.len() as i64)));
    }
    let end = offset as u64 + patch.len() as u64; // below i64::MAX + 16 MiB: no overflow
    if let Some(refused) = too_long(end) {
        return Ok(refused);
    }
    let (mut value, expiry) = old.unwrap_or((Vec::new(), Expiry::Never));
    let end = end as usize;
    if value.len() < end {
        value.resize(end, 0);
    }
    value[offset..end].copy_from_slice(patch);
    ctx.put_expiring(key, &value, expiry)?;
    Ok(Reply::Integer(value.len() as i64))
}

/// `GETRANGE key start end` (and `SUBSTR`, its old name): the bytes from `start` to `end`,
/// inclusive, as [`clamp`] reads them; an empty string for a missing key or an empty range.
pub fn getrange(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (Some(start), Some(end)) = (integer(&args[2]), integer(&args[3])) else {
        return Ok(not_an_integer());
    };
    let value = ctx.read(&args[1])?.unwrap_or_default();
    if reversed_from_end(start, end) {
        return Ok(Reply::bulk(""));
    }
    Ok(match clamp(start, end, value.len() as u64) {
        Some((start, end)) => Reply::bulk(&value[start as usize..=end as usize]),
        None => Reply::bulk(""),
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::*;

    #[test]
    fn ranges_count_from_the_end_and_are_clamped_as_redis_clamps_them() {
        assert_eq!(clamp(0, -1, 5), Some((0, 4)));
        assert_eq!(clamp(-3, -1, 5), Some((2, 4)));
        assert_eq!(clamp(-100, 2, 5), Some((0, 2)));
        assert_eq!(clamp(3, 100, 5), Some((3, 4)));
        assert_eq!(clamp(5, 100, 5), None, "past the end");
        assert_eq!(clamp(3, 2, 5), None);
        assert_eq!(clamp(0, -1, 0), None, "an empty string");
        assert_eq!(clamp(0, 0, 0), None);
        assert_eq!(clamp(-10, -20, 5), Some((0, 0)), "both before the start");
        assert!(reversed_from_end(-10, -20) && !reversed_from_end(-20, -10));
        assert_eq!(clamp(i64::MIN, i64::MAX, 5), Some((0, 4)));
        assert_eq!(clamp(i64::MAX, i64::MIN, 5), None);
    }

    #[test]
    fn strings_past_either_limit_are_refused_each_with_its_error() {
        assert_eq!(too_long(spillway::MAX_VALUE_LEN as u64), None);
        let ours = too_long(spillway::MAX_VALUE_LEN as u64 + 1).unwrap();
        assert!(matches!(&ours, Reply::Error(e) if e.contains("the store's largest value")));
        let redis = too_long(REDIS_MAX_LEN + 1).unwrap();
        assert_eq!(
            redis,
            Reply::error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
        );
    }

    #[test]
    fn setrange_refuses_past_the_stores_largest_value_and_writes_nothing() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let max = spillway::MAX_VALUE_LEN;
        let (at_max, past_max) = ((max - 1).to_string(), max.to_string());
        let out = run(
            &e,
            &mut s,
            &[
                &["INCR", "before"],
                &["SETRANGE", "k", &past_max, "x"],
                &["EXISTS", "k"],
                &["SETRANGE", "k", &at_max, "x"],
                &["SETRANGE", "k", &at_max, "xy"],
                &["STRLEN", "k"],
                &["GETRANGE", "k", "-2", "-1"],
                &["INCR", "before"],
            ],
        );
        let refused = Reply::error(format!(
            "ERR string exceeds maximum allowed size ({max} bytes, the store's largest value)"
        ));
        assert_eq!(out[0], Reply::Integer(1));
        assert_eq!(out[1], refused);
        assert_eq!(out[2], Reply::Integer(0), "no key made");
        assert_eq!(out[3], Reply::Integer(max as i64));
        assert_eq!(out[4], refused);
        assert_eq!(out[5], Reply::Integer(max as i64));
        assert_eq!(out[6], Reply::bulk(&b"\0x"[..]));
        assert_eq!(out[7], Reply::Integer(2), "the run's other writes stand");
    }

    #[test]
    fn setrange_keeps_the_expiry_and_starts_afresh_on_a_key_gone() {
        let (_d, e, clock) = super::super::tests::engine_at_2030();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "hello", "EX", "100"],
                &["SET", "short", "abc", "EX", "1"],
                &["SETRANGE", "k", "1", "ipp"],
                &["TTL", "k"],
                &["GET", "k"],
            ],
        );
        assert_eq!(out[2], Reply::Integer(5));
        assert_eq!(out[3], Reply::Integer(100));
        assert_eq!(out[4], Reply::bulk("hippo"));
        clock.advance(std::time::Duration::from_secs(2));
        let out = run(
            &e,
            &mut s,
            &[
                &["SETRANGE", "short", "1", "x"],
                &["GET", "short"],
                &["TTL", "short"],
                &["TTL", "k"],
            ],
        );
        assert_eq!(out[0], Reply::Integer(2), "the expired value is gone");
        assert_eq!(out[1], Reply::bulk(&b"\0x"[..]));
        assert_eq!(out[2], Reply::Integer(-1));
        assert_eq!(out[3], Reply::Integer(98));
    }
}
