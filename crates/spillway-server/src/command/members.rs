//! What the commands over a hash's fields, a set's or a sorted set's members share: reading
//! them all, paging through them (`HSCAN`, `SSCAN`, `ZSCAN`) and picking some at random
//! (`HRANDFIELD`, `SRANDMEMBER`, `SPOP`, `ZRANDMEMBER`).
//!
//! Members are kept by their hash (`encoding`): each record's sub-key is `hash | member`.
//!
//! **Cursors.** A page ends where the hash of the next member changes, and the cursor is that
//! hash: the next page seeks to it. Every member present from the first call to the last is
//! returned once (members of one hash come in one page); a page holds `COUNT` members or more
//! (more only on a hash collision), never fewer unless it is the last. Cursor 0 starts and
//! ends: a page never resumes at 0, as the first page takes every member of hash 0. A cursor
//! stays valid across writes and restarts: it holds no state.
//!
//! **Random picks.** Members are not numbered, so an exact, uniform pick reads the key's range
//! once for all the picks. Past [`UNIFORM_UP_TO`] members, a pick seeks to a random 64-bit
//! point instead and takes the member there (wrapping around): one seek, and each member's
//! chance is the gap before its hash, on average one in the set's size.

use std::ops::Bound;

use super::context::Ctx;
use super::databases::Space;
use super::encoding::{member_of, Fields};
use super::{integer, not_an_integer, CmdResult, Fail};
use crate::pattern;
use crate::resp::Reply;

/// Records as `(sub-key, value)`, in the order read.
pub type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Up to this many members, random picks are uniform (and read every member). Small: a pick
/// that reads every member of a set of 19,000 cost 32 ms (`SPOP` under redis-benchmark).
pub const UNIFORM_UP_TO: u64 = 128;

/// Every member of `fields` under `tag` (empty: the key's only kind of record), with its
/// value, in hash order.
pub fn all(ctx: &mut Ctx, fields: &Fields, tag: &[u8]) -> CmdResult<Records> {
    let end = match tag {
        [] => fields.end(),
        [t] => fields.tagged(t + 1, b""),
        _ => unreachable!("tags are one byte"),
    };
    let start = fields.key(tag);
    let mut out = Vec::new();
    for record in ctx.scan_in(Space::Fields, &start, Bound::Excluded(&end))? {
        let (k, v) = record?;
        out.push((member_of(&fields.sub(&k)[tag.len()..]).to_vec(), v));
    }
    Ok(out)
}

/// `SCAN`-style arguments after the key: the cursor, then `MATCH pattern` and `COUNT count` in
/// any order; or Redis's error.
pub struct ScanArgs {
    pub cursor: u64,
    pub pattern: Option<Vec<u8>>,
    pub count: usize,
}

impl ScanArgs {
    pub fn parse(args: &[Vec<u8>]) -> Result<ScanArgs, Fail> {
        let refuse = |r: Reply| Err(Fail::Reply(r));
        let Some(cursor) = cursor(&args[0]) else {
            return refuse(Reply::error("ERR invalid cursor"));
        };
        let mut parsed = ScanArgs {
            cursor,
            pattern: None,
            count: 10,
        };
        let mut i = 1;
        while i < args.len() {
            let Some(value) = args.get(i + 1) else {
                return refuse(Reply::error("ERR syntax error"));
            };
            match args[i].to_ascii_uppercase().as_slice() {
                b"MATCH" => parsed.pattern = Some(value.clone()),
                b"COUNT" => match integer(value) {
                    Some(n) if n >= 1 => parsed.count = usize::try_from(n).unwrap_or(usize::MAX),
                    Some(_) => return refuse(Reply::error("ERR syntax error")),
                    None => return refuse(not_an_integer()),
                },
                _ => return refuse(Reply::error("ERR syntax error")),
            }
            i += 2;
        }
        Ok(parsed)
    }
}

/// A cursor as Redis reads it (`strtoul`, in base 10): digits after an optional sign, a minus
/// negating modulo 2^64 (`-1` is the largest cursor), nothing out of range, no space before it;
/// the empty string is 0.
fn cursor(arg: &[u8]) -> Option<u64> {
    let (negative, digits) = match arg.first() {
        None => return Some(0),
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        Some(_) => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(if negative { n.wrapping_neg() } else { n })
}

/// One page of the members of `fields` under `tag` from `scan.cursor`: the next cursor and
/// the members that match the pattern, with their values.
pub fn page(
    ctx: &mut Ctx,
    fields: &Fields,
    tag: &[u8],
    scan: &ScanArgs,
) -> CmdResult<(u64, Records)> {
    let mut start = fields.key(tag);
    if scan.cursor != 0 {
        start.extend_from_slice(&scan.cursor.to_be_bytes());
    }
    let end = match tag {
        [] => fields.end(),
        [t] => fields.tagged(t + 1, b""),
        _ => unreachable!("tags are one byte"),
    };
    let mut out = Vec::new();
    let mut last = None;
    for (examined, record) in ctx
        .scan_in(Space::Fields, &start, Bound::Excluded(&end))?
        .enumerate()
    {
        let (k, v) = record?;
        let sub = &fields.sub(&k)[tag.len()..];
        let hash = first_8(sub);
        if examined >= scan.count && last != Some(hash) {
            return Ok((hash, out));
        }
        last = Some(hash);
        let member = member_of(sub);
        let wanted = scan.pattern.as_deref();
        if wanted.is_none_or(|p| pattern::matches(p, member)) {
            out.push((member.to_vec(), v));
        }
    }
    Ok((0, out))
}

/// The first 8 bytes of `sub` (a member's hash), as a big-endian number.
fn first_8(sub: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = sub.len().min(8);
    b[..n].copy_from_slice(&sub[..n]);
    u64::from_be_bytes(b)
}

/// `count` members of `fields` under `tag` (which holds `size`) at random, with their values:
/// distinct ones (all of them if `count` is at least `size`), or with repeats.
pub fn random(
    ctx: &mut Ctx,
    fields: &Fields,
    tag: &[u8],
    size: u64,
    count: u64,
    distinct: bool,
) -> CmdResult<Records> {
    if size == 0 || count == 0 {
        return Ok(Vec::new());
    }
    if distinct && count >= size {
        return all(ctx, fields, tag);
    }
    if size <= UNIFORM_UP_TO || distinct && count.saturating_mul(4) >= size {
        let all = all(ctx, fields, tag)?;
        if distinct {
            let mut picked = fastrand_sample(all.len(), count as usize);
            picked.sort_unstable();
            return Ok(picked.into_iter().map(|i| all[i].clone()).collect());
        }
        let picks = (0..count).map(|_| all[fastrand::usize(..all.len())].clone());
        return Ok(picks.collect());
    }
    // A large key: a seek per pick, to a random point of its sub-keys.
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let end = match tag {
        [] => fields.end(),
        [t] => fields.tagged(t + 1, b""),
        _ => unreachable!("tags are one byte"),
    };
    let start = fields.key(tag);
    while (out.len() as u64) < count {
        // Where the last command's pick stopped, if what it read is gone now (popped): a
        // pipeline's pops read on from one random point. Else a new random point.
        let mut scan = match ctx.resume_scan_within(Space::Fields, &start, &end)? {
            Some(scan) => scan,
            None => {
                let mut at = start.clone();
                at.extend_from_slice(&fastrand::u64(..).to_be_bytes());
                ctx.scan_in(Space::Fields, &at, Bound::Excluded(&end))?
            }
        };
        let mut found = scan.next().transpose()?;
        drop(scan);
        if found.is_none() {
            found = ctx
                .scan_in(Space::Fields, &start, Bound::Excluded(&end))?
                .next()
                .transpose()?;
        }
        let Some((k, v)) = found else {
            break; // not as large as its metadata says
        };
        let member = member_of(&fields.sub(&k)[tag.len()..]).to_vec();
        if distinct && !seen.insert(member.clone()) {
            continue;
        }
        out.push((member, v));
    }
    Ok(out)
}

/// `count` distinct indices below `n` (`count < n`), in random order.
fn fastrand_sample(n: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    for i in 0..count {
        let j = fastrand::usize(i..n);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// A `RANDFIELD`/`RANDMEMBER` count argument: (how many, distinct), or Redis's error. A
/// negative count asks for that many with repeats.
pub fn random_count(arg: &[u8], with_values: bool) -> Result<(u64, bool), Fail> {
    let n = count_arg(arg)?;
    // Redis refuses a count whose pairs would not fit a long, either way.
    if with_values && n.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(Fail::Reply(Reply::error("ERR value is out of range")));
    }
    if n >= 0 {
        return Ok((n as u64, true));
    }
    // Not Redis's: it would try, and block, and run out of memory building the reply.
    if n.unsigned_abs() > MAX_REPEATS {
        return Err(Fail::Reply(Reply::error(format!(
            "ERR count with repeats is limited to {MAX_REPEATS}"
        ))));
    }
    Ok((n.unsigned_abs(), false))
}

/// A `RANDFIELD`/`RANDMEMBER` count as Redis reads it first (`getRangeLongFromObjectOrReply`
/// from `-LONG_MAX` to `LONG_MAX`), before its other arguments.
pub fn count_arg(arg: &[u8]) -> Result<i64, Fail> {
    match integer(arg) {
        None => Err(Fail::Reply(not_an_integer())),
        Some(i64::MIN) => Err(Fail::Reply(Reply::error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ))),
        Some(n) => Ok(n),
    }
}

/// The most picks with repeats (a negative count) one command answers.
pub const MAX_REPEATS: u64 = 10_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_the_first_8_bytes_of_where_the_page_resumes() {
        assert_eq!(first_8(b""), 0);
        assert_eq!(first_8(b"a"), 0x61 << 56);
        assert_eq!(first_8(b"abcdefghij"), u64::from_be_bytes(*b"abcdefgh"));
    }

    #[test]
    fn cursors_read_as_strtoul_reads_them() {
        let c = |t: &str| cursor(t.as_bytes());
        assert_eq!(c("0"), Some(0));
        assert_eq!(c(""), Some(0));
        assert_eq!(c("+5"), Some(5));
        assert_eq!(c("-1"), Some(u64::MAX));
        assert_eq!(c("18446744073709551615"), Some(u64::MAX));
        for bad in ["18446744073709551616", " 1", "1 ", "x", "-", "1.5"] {
            assert_eq!(c(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn random_counts_are_refused_as_redis_refuses_them() {
        let c = |t: &str, w: bool| random_count(t.as_bytes(), w).ok();
        assert_eq!(c("3", true), Some((3, true)));
        assert_eq!(c("-3", true), Some((3, false)));
        assert_eq!(
            c("4611686018427387903", true),
            Some((4611686018427387903, true))
        );
        assert_eq!(c("4611686018427387904", true), None);
        assert_eq!(c("-4611686018427387904", true), None);
        assert_eq!(
            c("9223372036854775807", false),
            Some((i64::MAX as u64, true))
        );
        assert_eq!(c("-9223372036854775808", false), None);
        assert_eq!(c("x", false), None);
    }

    #[test]
    fn a_sample_is_distinct_and_within_bounds() {
        for _ in 0..100 {
            let s = fastrand_sample(10, 4);
            let mut d = s.clone();
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), 4);
            assert!(s.iter().all(|&i| i < 10));
        }
    }
}
