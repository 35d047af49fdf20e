//! The commands about keys rather than values, of any type: `DEL`, `EXISTS`, `TYPE`, and those
//! over a database's keys, `SCAN`, `KEYS`, `DBSIZE`, `FLUSHDB`, `FLUSHALL`, `SWAPDB`. Each reads or writes the
//! client's selected database (`databases`). (A key's expiry: `expiry`.)
//!
//! An expired key is not there for any of them: the engine's reads and iterators hide it. So
//! `DBSIZE` counts none where it counts exactly, where Redis's counts a key that expired until
//! its expiry cycle or a read deletes it (past [`COUNTED_UP_TO`] it answers the engine's
//! estimate, which counts expired records until a spill drops them).
//!
//! **SCAN's cursor is a route** (`KeyOrder::route`: the key's hash in a hashed store, its first
//! 8 bytes in an ordered one). The store iterates by route, so a call returns the keys from the
//! cursor's route on and answers with the route of the first key it did not examine; the next
//! call seeks there (`Iter::seek_route`). The cursor holds no state on the server and stays
//! valid across restarts; Redis's guarantees hold — every key present from the first call to
//! the last is returned, a key may come twice if it is rewritten meanwhile (never here: a key's
//! route does not change) — and `0` starts and ends a scan. A call ends only where the route
//! changes, so keys sharing a route come in one answer: in a hashed store only 64-bit hash
//! collisions do; in an ordered store keys sharing their first 8 bytes do, so an answer may
//! hold many more keys than `COUNT`.

use super::context::Ctx;
use super::count::COUNTED_UP_TO;
use super::databases::Space;
use super::encoding::Meta;
use super::{integer, not_an_integer};
use crate::pattern;
use crate::resp::Reply;

type Result = super::CmdResult;

/// What `SCAN` examines by default, as Redis.
const DEFAULT_COUNT: usize = 10;

/// `DEL key [key ...]` (and `UNLINK`): how many of the keys existed (each counted once).
/// Only those are deleted: as in Redis, deleting a missing key changes nothing, and so fails
/// no `WATCH` of it (the engine would count the tombstone as a write).
/// A hash, set, sorted set or list goes whole, in O(1) (`encoding`).
pub fn del(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut gone = 0;
    let mut seen = std::collections::HashSet::new();
    for k in &args[1..] {
        if !seen.insert(k) {
            continue;
        }
        if let Some(e) = ctx.entry(k)? {
            gone += 1;
            ctx.remove(k, e.space, &e.value)?;
        }
    }
    Ok(Reply::Integer(gone))
}

/// `EXISTS key [key ...]`: how many of the keys exist (each counted as often as given).
pub fn exists(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut found = 0;
    for k in &args[1..] {
        found += i64::from(ctx.read_entry(k)?.is_some());
    }
    Ok(Reply::Integer(found))
}

/// `TOUCH key [key ...]`: how many of the keys exist (as `EXISTS`: the store keeps no access
/// times to update).
pub fn touch(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    exists(ctx, args)
}

/// `RANDOMKEY`: a key at random, or null if the database is empty. The key after a random
/// route (wrapping around): one seek, uniform over routes — over keys in a hashed store,
/// where routes are hashes; in an ordered one, keys after long gaps in their first 8 bytes
/// come more often.
pub fn randomkey(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    let route = fastrand::u64(1..);
    let found = match ctx.keys(route, None)?.next() {
        Some(entry) => Some(entry?),
        None => ctx.keys(0, None)?.next().transpose()?,
    };
    Ok(found.map_or(Reply::Null, |(key, ..)| Reply::Bulk(key)))
}

/// `TYPE key`: `string`, `hash`, `set`, `zset`, `list`, or `none`.
pub fn type_of(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let name = ctx
        .read_entry(&args[1])?
        .map_or("none", |e| type_name(e.space, &e.value));
    Ok(Reply::status(name))
}

/// The type's name of a key found in `space` holding `value`.
fn type_name(space: Space, value: &[u8]) -> &'static str {
    match space {
        Space::Meta => Meta::decode(value).map_or("none", |m| m.ty.name()),
        _ => "string",
    }
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub fn scan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(cursor) = std::str::from_utf8(&args[1])
        .ok()
        .and_then(|c| c.parse::<u64>().ok())
    else {
        return Ok(Reply::error("ERR invalid cursor"));
    };
    let mut filter = Filter::default();
    let mut count = DEFAULT_COUNT;
    let mut i = 2;
    while i < args.len() {
        let Some(value) = args.get(i + 1) else {
            return Ok(Reply::error("ERR syntax error"));
        };
        match args[i].to_ascii_uppercase().as_slice() {
            b"MATCH" => filter.pattern = Some(value.clone()),
            b"COUNT" => match integer(value) {
                Some(n) if n >= 1 => count = usize::try_from(n).unwrap_or(usize::MAX),
                Some(_) => return Ok(Reply::error("ERR syntax error")),
                None => return Ok(not_an_integer()),
            },
            b"TYPE" => filter.ty = Some(value.to_ascii_lowercase()),
            _ => return Ok(Reply::error("ERR syntax error")),
        }
        i += 2;
    }
    let order = ctx.engine.db.key_order();
    let it = ctx.keys(cursor, None)?;
    let mut keys = Vec::new();
    let mut last_route = None;
    let mut next = 0;
    for (examined, entry) in it.enumerate() {
        let (key, space, value) = entry?;
        let route = order.route(&key);
        if examined >= count && last_route != Some(route) {
            // Past the first key, routes only grow: the cursor is never 0 here.
            next = route;
            break;
        }
        last_route = Some(route);
        if filter.accepts(&key, type_name(space, &value)) {
            keys.push(Reply::Bulk(key));
        }
    }
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys),
    ]))
}

/// `KEYS pattern`: every matching key at once (as in Redis, meant for debugging: a large
/// store's answer is large). An ordered store reads only the keys under the pattern's
/// literal prefix.
pub fn keys(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let pattern = &args[1];
    let it = match ctx.engine.db.key_order() {
        spillway::KeyOrder::Ordered => ctx.keys(0, Some(&pattern::literal_prefix(pattern)))?,
        spillway::KeyOrder::Hashed => ctx.keys(0, None)?,
    };
    let filter = Filter {
        pattern: Some(pattern.to_vec()),
        ty: None,
    };
    let mut keys = Vec::new();
    for entry in it {
        let (key, ..) = entry?;
        if filter.accepts(&key, "") {
            keys.push(Reply::Bulk(key));
        }
    }
    Ok(Reply::Array(keys))
}

/// `DBSIZE`: the keys of the selected database, counted exactly up to [`COUNTED_UP_TO`], else
/// its estimate (`Keyspace::estimate_keys`, within a few percent): counting a large database
/// would read every key.
pub fn dbsize(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(Reply::Integer(ctx.key_count(COUNTED_UP_TO)? as i64))
}

/// `FLUSHDB [ASYNC | SYNC]`: empty the selected database, in O(1) whatever it holds: one
/// clear of its keyspace (see `databases`). A write by another client comes wholly before it
/// or after it; in a transaction it is part of the queue's one batch (see `context`).
pub fn flushdb(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if let Some(refused) = flush_mode(args) {
        return Ok(refused);
    }
    let n = ctx.session.db;
    ctx.flush(&[n])?;
    Ok(Reply::ok())
}

/// `FLUSHALL [ASYNC | SYNC]`: empty every database, each as `FLUSHDB` does, all in one batch.
pub fn flushall(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if let Some(refused) = flush_mode(args) {
        return Ok(refused);
    }
    let all: Vec<usize> = (0..ctx.engine.dbs.count()).collect();
    ctx.flush(&all)?;
    Ok(Reply::ok())
}

/// Redis's error for a flush's arguments, if they are wrong: ASYNC or SYNC, or nothing
/// (every flush here is immediate and O(1)).
fn flush_mode(args: &[Vec<u8>]) -> Option<Reply> {
    match args.get(1).map(|a| a.to_ascii_uppercase()).as_deref() {
        None | Some(b"ASYNC" | b"SYNC") if args.len() <= 2 => None,
        _ => Some(Reply::error("ERR syntax error")),
    }
}

/// `SWAPDB index1 index2`: exchange two databases' contents (clients that selected one see
/// the other's keys). What is in memory is spilled first; then it is O(1).
pub fn swapdb(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let count = ctx.engine.dbs.count();
    let index = |arg: &[u8], which: &str| match integer(arg) {
        Some(n) => Ok(usize::try_from(n).ok().filter(|&n| n < count)),
        None => Err(Reply::error(format!("ERR invalid {which} DB index"))),
    };
    let (a, b) = match (index(&args[1], "first"), index(&args[2], "second")) {
        (Err(e), _) | (_, Err(e)) => return Ok(e),
        (Ok(Some(a)), Ok(Some(b))) => (a, b),
        _ => return Ok(Reply::error("ERR DB index is out of range")),
    };
    ctx.change_databases(|e| e.dbs.swap(&e.db, a, b))?;
    // Clients blocked on keys of either may find them now (as Redis 7.0 wakes them).
    ctx.blocking.swapped.extend([a, b]);
    Ok(Reply::ok())
}

/// Which examined keys `SCAN` and `KEYS` return.
#[derive(Default)]
struct Filter {
    pattern: Option<Vec<u8>>,
    /// The type `TYPE` asked for, lowercase (a name no type has matches nothing, as in Redis).
    ty: Option<Vec<u8>>,
}

impl Filter {
    /// Whether the SCAN returns `key`, of type `ty`.
    fn accepts(&self, key: &[u8], ty: &str) -> bool {
        self.ty.as_deref().is_none_or(|t| t == ty.as_bytes())
            && self
                .pattern
                .as_deref()
                .is_none_or(|p| pattern::matches(p, key))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::tests::{engine, run};
    use super::super::{Engine, Session};
    use super::*;
    use crate::server::Config;

    fn bulk_text(r: &Reply) -> String {
        match r {
            Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("not a bulk string: {other:?}"),
        }
    }

    /// Scan to the end with `extra` options; the keys returned, and the calls it took.
    fn scan_all(e: &Engine, s: &mut Session, extra: &[&str]) -> (Vec<String>, usize) {
        let mut cursor = "0".to_string();
        let mut keys = Vec::new();
        for calls in 1.. {
            let mut req = vec!["SCAN", cursor.as_str()];
            req.extend(extra);
            let out = run(e, s, &[&req]);
            let Reply::Array(parts) = &out[0] else {
                panic!("{out:?}")
            };
            let Reply::Array(found) = &parts[1] else {
                panic!("{parts:?}")
            };
            keys.extend(found.iter().map(bulk_text));
            cursor = bulk_text(&parts[0]);
            if cursor == "0" {
                return (keys, calls);
            }
        }
        unreachable!()
    }

    #[test]
    fn scan_returns_every_key_once_across_calls_and_a_flush() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let mut want = BTreeSet::new();
        for i in 0..500 {
            let k = format!("user:{i}");
            run(&e, &mut s, &[&["SET", &k, "v"]]);
            want.insert(k);
            if i == 250 {
                e.db().flush().unwrap();
            }
        }
        let (keys, calls) = scan_all(&e, &mut s, &["COUNT", "7"]);
        assert_eq!(keys.len(), 500, "no key twice");
        assert_eq!(keys.iter().cloned().collect::<BTreeSet<_>>(), want);
        assert!(calls >= 500 / 7, "COUNT bounds each call: {calls} calls");
        let (matched, _) = scan_all(&e, &mut s, &["MATCH", "user:1?", "COUNT", "100"]);
        let matched: BTreeSet<_> = matched.into_iter().collect();
        assert_eq!(matched, (10..20).map(|i| format!("user:{i}")).collect());
        let (none, _) = scan_all(&e, &mut s, &["TYPE", "hash", "COUNT", "1000"]);
        assert!(none.is_empty());
        let out = run(
            &e,
            &mut s,
            &[
                &["SCAN", "x"],
                &["SCAN", "0", "COUNT", "0"],
                &["SCAN", "0", "COUNT"],
                &["SCAN", "0", "BY", "1"],
                &["DBSIZE"],
            ],
        );
        assert_eq!(out[0], Reply::error("ERR invalid cursor"));
        assert_eq!(out[1..4], vec![Reply::error("ERR syntax error"); 3][..]);
        assert_eq!(out[4], Reply::Integer(500));
    }

    #[test]
    fn flushdb_deletes_what_its_pipeline_wrote_before_it_and_not_after() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "a", "1"],
                &["INCR", "n"],
                &["FLUSHDB"],
                &["SET", "b", "2"],
                &["MGET", "a", "n", "b"],
            ],
        );
        let nil_nil_2 = Reply::Array(vec![Reply::Null, Reply::Null, Reply::bulk("2")]);
        assert_eq!(out[2..], [Reply::ok(), Reply::ok(), nil_nil_2]);
    }

    #[test]
    fn keys_matches_and_flushdb_empties_the_store() {
        for order in [spillway::KeyOrder::Hashed, spillway::KeyOrder::Ordered] {
            let dir = tempfile::tempdir().unwrap();
            let opts = spillway::Options::default().key_order(Some(order));
            let db = spillway::Db::open(dir.path(), opts).unwrap();
            let e = Engine::new(db, &Config::new(dir.path())).unwrap();
            let mut s = Session::new(1);
            run(
                &e,
                &mut s,
                &[&[
                    "MSET", "user:1", "a", "user:2", "b", "video:1", "c", "u", "d",
                ]],
            );
            let out = run(
                &e,
                &mut s,
                &[
                    &["KEYS", "user:*"],
                    &["KEYS", "*"],
                    &["KEYS", "v?deo:[0-9]"],
                ],
            );
            let sorted = |r: &Reply| {
                let Reply::Array(a) = r else { panic!("{r:?}") };
                let mut v: Vec<String> = a.iter().map(bulk_text).collect();
                v.sort();
                v
            };
            assert_eq!(sorted(&out[0]), ["user:1", "user:2"], "{order}");
            assert_eq!(sorted(&out[1]).len(), 4);
            assert_eq!(sorted(&out[2]), ["video:1"]);
            let out = run(
                &e,
                &mut s,
                &[
                    &["FLUSHDB", "NOW"],
                    &["FLUSHALL", "ASYNC"],
                    &["DBSIZE"],
                    &["KEYS", "*"],
                    &["GET", "u"],
                ],
            );
            assert_eq!(out[0], Reply::error("ERR syntax error"));
            assert_eq!(
                out[1..],
                [
                    Reply::ok(),
                    Reply::Integer(0),
                    Reply::Array(vec![]),
                    Reply::Null
                ]
            );
        }
    }
}
