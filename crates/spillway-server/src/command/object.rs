//! `OBJECT ENCODING key`: the encoding Redis 7.0 would give a key of this content, freshly
//! written. The store keeps every type one way (`encoding`), so this answers what clients and
//! Redis's tests ask about — whether a value is small — by Redis's default thresholds
//! (`hash-max-listpack-entries 128`, `-value 64`, `set-max-intset-entries 512`,
//! `zset-max-listpack-entries 128`, `-value 64`; strings up to 44 bytes are `embstr`). A
//! string grown in place (`APPEND`, `SETRANGE`) is `raw` in Redis whatever its size; here it
//! is judged by its size like any other.

use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Meta, Type};
use super::members;
use super::CmdResult;
use crate::resp::Reply;

const LISTPACK_ENTRIES: u64 = 128;
const LISTPACK_VALUE: usize = 64;
const INTSET_ENTRIES: u64 = 512;
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
    let small = |ctx: &mut Ctx, limit: u64, tag: &[u8]| -> CmdResult<Option<members::Records>> {
        match meta.size <= limit {
            true => Ok(Some(members::all(ctx, &meta.fields(key), tag)?)),
            false => Ok(None),
        }
    };
    let name = match meta.ty {
        Type::Hash => match small(ctx, LISTPACK_ENTRIES, b"")? {
            Some(all)
                if all
                    .iter()
                    .all(|(f, v)| f.len() <= LISTPACK_VALUE && v.len() <= LISTPACK_VALUE) =>
            {
                "listpack"
            }
            _ => "hashtable",
        },
        Type::Set => match small(ctx, INTSET_ENTRIES, b"")? {
            Some(all) if all.iter().all(|(m, _)| is_integer(m)) => "intset",
            _ => "hashtable",
        },
        Type::ZSet => match small(ctx, LISTPACK_ENTRIES, b"m")? {
            Some(all) if all.iter().all(|(m, _)| m.len() <= LISTPACK_VALUE) => "listpack",
            _ => "skiplist",
        },
        Type::List => "quicklist",
    };
    Ok(Reply::bulk(name))
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
