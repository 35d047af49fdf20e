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

/// Up to this many members, random picks are uniform (and read every member).
pub const UNIFORM_UP_TO: u64 = 1 << 16;

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
        let Some(cursor) = std::str::from_utf8(&args[0])
            .ok()
            .and_then(|c| c.parse().ok())
        else {
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
    if size <= UNIFORM_UP_TO || count.saturating_mul(4) >= size {
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
    while (out.len() as u64) < count {
        let mut at = fields.key(tag);
        at.extend_from_slice(&fastrand::u64(..).to_be_bytes());
        let mut found = ctx
            .scan_in(Space::Fields, &at, Bound::Excluded(&end))?
            .next()
            .transpose()?;
        if found.is_none() {
            let start = fields.key(tag);
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
    let Some(n) = integer(arg) else {
        return Err(Fail::Reply(not_an_integer()));
    };
    if n >= 0 {
        return Ok((n as u64, true));
    }
    if n == i64::MIN {
        return Err(Fail::Reply(Reply::error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )));
    }
    // Redis refuses a count whose pairs would not fit a long.
    if with_values && n.unsigned_abs() > (i64::MAX / 2) as u64 {
        return Err(Fail::Reply(Reply::error("ERR value is out of range")));
    }
    Ok((n.unsigned_abs(), false))
}

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
