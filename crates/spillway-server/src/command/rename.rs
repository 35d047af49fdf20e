//! Moving and copying keys of any type: `RENAME`, `RENAMENX`, `COPY`.
//!
//! A string is one record, moved or copied as it is. A hash, set, sorted set or list is its
//! metadata and one record per field under its key (`encoding`), so renaming one rewrites
//! every field under the new key — O(n), where Redis's `RENAME` is O(1) — and removes the old
//! key in O(1) (one range delete). The copy gets a new version; the expiry goes with the key.
//!
//! `COPY ... DB n` reads the key, then writes it in database `n`: the pipeline's writes go in
//! between (a database switch ends a staged run, as `SELECT` does), so another client's write
//! to the source may come between the read and the copy; the copy is the key as it was read.

use std::ops::Bound;

use spillway::Expiry;

use super::context::{Ctx, Entry};
use super::databases::Space;
use super::encoding::Meta;
use super::{integer, CmdResult};
use crate::resp::Reply;

type Result = CmdResult;

/// A key read whole: its entry and, for a typed key, every record under it (sub-key, value).
struct Whole {
    entry: Entry,
    records: Vec<(Vec<u8>, Vec<u8>)>,
}

/// `key` read whole, for a command that writes what it reads.
fn read_whole(ctx: &mut Ctx, key: &[u8]) -> CmdResult<Option<Whole>> {
    let Some(entry) = ctx.entry(key)? else {
        return Ok(None);
    };
    let mut records = Vec::new();
    if let (Space::Meta, Some(meta)) = (entry.space, Meta::decode(&entry.value)) {
        let fields = meta.fields(key);
        let end = fields.end();
        for r in ctx.scan_in(Space::Fields, fields.start(), Bound::Excluded(&end))? {
            let (k, v) = r?;
            records.push((fields.sub(&k).to_vec(), v));
        }
    }
    Ok(Some(Whole { entry, records }))
}

/// Write `whole` at `key` of the selected database (which holds nothing there now), with
/// `expiry`.
fn write_whole(ctx: &mut Ctx, key: &[u8], whole: &Whole, expiry: Expiry) -> CmdResult<()> {
    let e = &whole.entry;
    let Some(mut meta) = Meta::decode(&e.value).filter(|_| e.space == Space::Meta) else {
        return Ok(ctx.put_in(Space::Strings, key, &e.value, expiry)?);
    };
    meta.version = Meta::new(meta.ty, ctx.engine).version;
    meta.deleted = 0; // only the live records are written
    let fields = meta.fields(key);
    for (sub, value) in &whole.records {
        ctx.put_in(Space::Fields, &fields.key(sub), value, Expiry::Never)?;
    }
    if meta.ty == super::encoding::Type::List {
        ctx.pushed(key); // a client blocked on `key` may pop it now (`blocking`)
    }
    ctx.put_meta(key, &mut meta, expiry)
}

/// `RENAME key newkey`.
pub fn rename(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    rename_as(ctx, &args[1], &args[2], false)
}

/// `RENAMENX key newkey`: 1 if renamed, 0 if `newkey` exists.
pub fn renamenx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    rename_as(ctx, &args[1], &args[2], true)
}

fn rename_as(ctx: &mut Ctx, from: &[u8], to: &[u8], nx: bool) -> Result {
    let Some(whole) = read_whole(ctx, from)? else {
        return Ok(Reply::error("ERR no such key"));
    };
    let done = |nx| match nx {
        true => Reply::Integer(1),
        false => Reply::ok(),
    };
    if from == to {
        return Ok(if nx { Reply::Integer(0) } else { done(nx) });
    }
    if let Some(old) = ctx.entry(to)? {
        if nx {
            return Ok(Reply::Integer(0));
        }
        ctx.remove(to, old.space, &old.value)?;
    }
    let e = &whole.entry;
    ctx.remove(from, e.space, &e.value)?;
    write_whole(ctx, to, &whole, e.expiry)?;
    Ok(done(nx))
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 if copied, 0 if `destination`
/// exists (without REPLACE) or `source` does not.
pub fn copy(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (from, to) = (&args[1], &args[2]);
    let here = ctx.session.db;
    let (mut db, mut replace) = (here, false);
    let mut i = 3;
    while i < args.len() {
        let word = args[i].to_ascii_uppercase();
        match (word.as_slice(), args.get(i + 1)) {
            (b"REPLACE", _) => replace = true,
            (b"DB", Some(n)) => {
                let Some(n) = integer(n) else {
                    return Ok(super::not_an_integer());
                };
                match usize::try_from(n)
                    .ok()
                    .filter(|&n| n < ctx.engine.dbs.count())
                {
                    Some(n) => db = n,
                    None => return Ok(Reply::error("ERR DB index is out of range")),
                }
                i += 1;
            }
            _ => return Ok(Reply::error("ERR syntax error")),
        }
        i += 1;
    }
    if db == here && from == to {
        return Ok(Reply::error(
            "ERR source and destination objects are the same",
        ));
    }
    let Some(whole) = read_whole(ctx, from)? else {
        return Ok(Reply::Integer(0));
    };
    if db != here {
        ctx.select(db);
    }
    let copied = copy_into(ctx, to, &whole, replace);
    if db != here {
        ctx.select(here);
    }
    copied
}

/// Write `whole` at `to` in the selected database, over what is there only if `replace`.
fn copy_into(ctx: &mut Ctx, to: &[u8], whole: &Whole, replace: bool) -> Result {
    if let Some(old) = ctx.entry(to)? {
        if !replace {
            return Ok(Reply::Integer(0));
        }
        ctx.remove(to, old.space, &old.value)?;
    }
    write_whole(ctx, to, whole, whole.entry.expiry)?;
    Ok(Reply::Integer(1))
}
