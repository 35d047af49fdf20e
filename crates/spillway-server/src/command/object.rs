//! `OBJECT ENCODING key`: the encoding Redis 7.0 would give a key of this content, freshly
//! written. The store keeps every type one way (`encoding`), so this answers what clients and
//! Redis's tests ask about — whether a value is small — by Redis's thresholds as `CONFIG SET`
//! set them (`hash-max-listpack-entries 128`, `-value 64`, `set-max-intset-entries 512`,
//! `zset-max-listpack-entries 128`, `-value 64` by default; strings up to 44 bytes are
//! `embstr`). A string grown in place (`APPEND`, `SETRANGE`) is `raw` in Redis whatever its
//! size; here it is judged by its size like any other. Redis converts a small key to the big
//! encoding once and never back; here a key shrunk below the thresholds reads small again.

use super::config::Threshold;
use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Meta, Type};
use super::members;
use super::CmdResult;
use crate::locks::lock;
use crate::resp::Reply;

const EMBSTR_SIZE: usize = 44;

/// `OBJECT ENCODING key`.
pub fn encoding(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[2];
    let Some(entry) = ctx.read_entry(key)? else {
        return Ok(Reply::Null);
    };
    let meta = match (entry.space, Meta::decode(&entry.value)) {
        (Space::Meta, Some(meta)) => meta,
        _ => return Ok(Reply::bulk(string_encoding(&entry.value))),
    };
    let small = |ctx: &mut Ctx, limit: i64, tag: &[u8]| -> CmdResult<Option<members::Records>> {
        match meta.size as i64 <= limit {
            true => Ok(Some(members::all(ctx, &meta.fields(key), tag)?)),
            false => Ok(None),
        }
    };
    let at = |t| lock(&ctx.engine.kept).threshold(t);
    let (hash_entries, hash_value) = (at(Threshold::HashEntries), at(Threshold::HashValue));
    let intset_entries = at(Threshold::SetIntsetEntries);
    let (zset_entries, zset_value) = (at(Threshold::ZsetEntries), at(Threshold::ZsetValue));
    let fits = |b: &[u8], max: i64| b.len() as i64 <= max;
    let name = match meta.ty {
        Type::Hash => match small(ctx, hash_entries, b"")? {
            Some(all)
                if all
                    .iter()
                    .all(|(f, v)| fits(f, hash_value) && fits(v, hash_value)) =>
            {
                "listpack"
            }
            _ => "hashtable",
        },
        Type::Set => match small(ctx, intset_entries, b"")? {
            Some(all) if all.iter().all(|(m, _)| is_integer(m)) => "intset",
            _ => "hashtable",
        },
        Type::ZSet => match small(ctx, zset_entries, b"m")? {
            Some(all) if all.iter().all(|(m, _)| fits(m, zset_value)) => "listpack",
            _ => "skiplist",
        },
        Type::List => "quicklist",
    };
    Ok(Reply::bulk(name))
}

/// How many fields `MEMORY USAGE` reads by default to estimate a key's (Redis's too).
const SAMPLES: u64 = 5;

/// `MEMORY USAGE key [SAMPLES count]`: the bytes of `key`'s records (its key and value, or
/// its metadata and fields), the fields estimated from the first `count` (0: all), as Redis
/// samples its elements. What the store holds for them — a record's bytes on disk, before
/// compression — not what Redis's allocator would; null if the key is absent.
pub fn usage(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let key = &args[2];
    let samples = match args.get(3..) {
        Some([word, n]) if word.eq_ignore_ascii_case(b"SAMPLES") => match super::integer(n) {
            Some(n) if n >= 0 => n as u64,
            Some(_) => return Ok(Reply::error("ERR syntax error")),
            None => return Ok(super::not_an_integer()),
        },
        Some([]) | None => SAMPLES,
        Some(_) => return Ok(Reply::error("ERR syntax error")),
    };
    let Some(entry) = ctx.read_entry(key)? else {
        return Ok(Reply::Null);
    };
    let own = (key.len() + entry.value.len()) as u64;
    let meta = match (entry.space, Meta::decode(&entry.value)) {
        (Space::Meta, Some(meta)) => meta,
        _ => return Ok(Reply::Integer(own as i64)),
    };
    let fields = meta.fields(key);
    let end = fields.end();
    let scan = ctx.scan_in(
        Space::Fields,
        fields.start(),
        std::ops::Bound::Excluded(&end),
    )?;
    let (mut read, mut bytes) = (0u64, 0u64);
    for record in scan {
        if samples != 0 && read == samples {
            break;
        }
        let (k, v) = record?;
        read += 1;
        bytes += (k.len() + v.len()) as u64;
    }
    // Sorted sets keep two records a member (its score, and its place in the score index).
    let estimate = match read {
        0 => 0,
        n => bytes.saturating_mul(meta.size) / n * if meta.ty == Type::ZSet { 2 } else { 1 },
    };
    Ok(Reply::Integer(
        own.saturating_add(estimate).min(i64::MAX as u64) as i64,
    ))
}

/// A string's encoding: `int` for what a long holds, then `embstr` or `raw` by size.
fn string_encoding(value: &[u8]) -> &'static str {
    match value.len() {
        0..=20 if is_integer(value) => "int",
        n if n <= EMBSTR_SIZE => "embstr",
        _ => "raw",
    }
}

/// Whether `text` is a long as Redis writes one (`string2ll`: no sign but `-`, no leading
/// zeros).
fn is_integer(text: &[u8]) -> bool {
    super::integer(text).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_encoded_by_what_they_hold() {
        assert_eq!(string_encoding(b"12345"), "int");
        assert_eq!(string_encoding(b"-9223372036854775808"), "int");
        assert_eq!(string_encoding(b"9223372036854775808"), "embstr");
        assert_eq!(string_encoding(b"012"), "embstr");
        assert_eq!(string_encoding(&[b'x'; 44]), "embstr");
        assert_eq!(string_encoding(&[b'x'; 45]), "raw");
    }
}
