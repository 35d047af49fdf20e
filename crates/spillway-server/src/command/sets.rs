//! The set commands: `SADD`, `SMEMBERS`, `SINTER` and their kin. A set is a metadata record and
//! a record per member, with an empty value (`encoding`): membership is one point read, the
//! whole set one range of the fields keyspace, in member order (Redis's order is its hash
//! table's, or an integer set's numeric order: no client may rely on either).
//!
//! Intersections read the smallest set whole and ask the others member by member, as Redis
//! does; unions and differences read every set whole. The `STORE` forms overwrite their
//! destination, of any type, and delete it when the result is empty.

use std::collections::BTreeSet;

use spillway::Expiry;

use super::context::Ctx;
use super::databases::Space;
use super::encoding::{Meta, Type};
use super::hashes::scan_reply;
use super::members::{self, ScanArgs};
use super::{integer, CmdResult};
use crate::resp::Reply;

type Result = CmdResult;

/// `SADD key member [member ...]`: how many members were new.
pub fn sadd(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let (mut meta, expiry) = ctx.get_or_new_meta(key, Type::Set)?;
    let added = add(ctx, key, &mut meta, &args[2..])?;
    // As Redis: a set left as it was is not written (a WATCH of it holds).
    if added > 0 {
        ctx.put_meta(key, &mut meta, expiry)?;
    }
    Ok(Reply::Integer(added))
}

/// Add `members` to set `key` (its metadata `meta`, not written here): how many were new.
fn add(ctx: &mut Ctx, key: &[u8], meta: &mut Meta, members: &[Vec<u8>]) -> CmdResult<i64> {
    let fields = meta.fields(key);
    let mut added = 0;
    for m in members {
        let k = fields.member(b"", m);
        if ctx.get_in(Space::Fields, &k)?.is_none() {
            ctx.put_in(Space::Fields, &k, b"", Expiry::Never)?;
            meta.size += 1;
            added += 1;
        }
    }
    Ok(added)
}

/// `SREM key member [member ...]`: how many members were removed (the set goes with its last).
pub fn srem(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::Set)? else {
        return Ok(Reply::Integer(0));
    };
    let removed = remove(ctx, key, &mut meta, &args[2..])?;
    if removed > 0 {
        ctx.put_meta(key, &mut meta, expiry)?;
    }
    Ok(Reply::Integer(removed))
}

/// Remove `members` from set `key` (its metadata `meta`, not written here): how many were in
/// it.
fn remove(ctx: &mut Ctx, key: &[u8], meta: &mut Meta, members: &[Vec<u8>]) -> CmdResult<i64> {
    let fields = meta.fields(key);
    let mut removed = 0;
    for m in members {
        let k = fields.member(b"", m);
        if ctx.get_in(Space::Fields, &k)?.is_some() {
            ctx.delete_in(Space::Fields, &k)?;
            meta.size -= 1;
            meta.deleted += 1;
            removed += 1;
        }
    }
    Ok(removed)
}

/// `SISMEMBER key member`.
pub fn sismember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(meta) = ctx.read_meta(&args[1], Type::Set)? else {
        return Ok(Reply::Integer(0));
    };
    let found = ctx.read_in(Space::Fields, &meta.fields(&args[1]).member(b"", &args[2]))?;
    Ok(Reply::Integer(found.is_some() as i64))
}

/// `SMISMEMBER key member [member ...]`.
pub fn smismember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let Some(meta) = ctx.read_meta(&args[1], Type::Set)? else {
        return Ok(Reply::Array(vec![Reply::Integer(0); args.len() - 2]));
    };
    let fields = meta.fields(&args[1]);
    let mut out = Vec::with_capacity(args.len() - 2);
    for m in &args[2..] {
        let found = ctx.read_in(Space::Fields, &fields.member(b"", m))?;
        out.push(Reply::Integer(found.is_some() as i64));
    }
    Ok(Reply::Array(out))
}

/// `SCARD key`: from the metadata.
pub fn scard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let meta = ctx.read_meta(&args[1], Type::Set)?;
    Ok(Reply::Integer(meta.map_or(0, |m| m.size as i64)))
}

/// `SMEMBERS key`.
pub fn smembers(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let members = match ctx.read_meta(&args[1], Type::Set)? {
        Some(meta) => members::all(ctx, &meta.fields(&args[1]), b"")?,
        None => Vec::new(),
    };
    Ok(set_reply(ctx, members.into_iter().map(|(m, _)| m)))
}

/// Members: an array, or (RESP3) a set.
fn set_reply(ctx: &Ctx, members: impl Iterator<Item = Vec<u8>>) -> Reply {
    let members = members.map(Reply::Bulk).collect();
    match ctx.session.resp {
        3 => Reply::Set(members),
        _ => Reply::Array(members),
    }
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]` (see `members` for the cursor).
pub fn sscan(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let scan = ScanArgs::parse(&args[2..])?;
    let Some(meta) = ctx.read_meta(&args[1], Type::Set)? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let (next, page) = members::page(ctx, &meta.fields(&args[1]), b"", &scan)?;
    Ok(scan_reply(
        next,
        page.into_iter().map(|(m, _)| Reply::Bulk(m)).collect(),
    ))
}

/// `SRANDMEMBER key [count]`.
pub fn srandmember(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    if args.len() > 3 {
        return Ok(Reply::error("ERR syntax error"));
    }
    let Some(count) = args.get(2) else {
        let Some(meta) = ctx.read_meta(key, Type::Set)? else {
            return Ok(Reply::Null);
        };
        let picked = members::random(ctx, &meta.fields(key), b"", meta.size, 1, true)?;
        return Ok(picked
            .into_iter()
            .next()
            .map_or(Reply::Null, |(m, _)| Reply::Bulk(m)));
    };
    let (count, distinct) = members::random_count(count, false)?;
    let Some(meta) = ctx.read_meta(key, Type::Set)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let picked = members::random(ctx, &meta.fields(key), b"", meta.size, count, distinct)?;
    let picked = picked.into_iter().map(|(m, _)| Reply::Bulk(m));
    Ok(Reply::Array(picked.collect()))
}

/// `SPOP key [count]`: members removed at random.
pub fn spop(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    if args.len() > 3 {
        return Ok(Reply::error("ERR syntax error"));
    }
    let count = match args.get(2).map(|c| integer(c)) {
        None => None,
        Some(Some(n)) if n >= 0 => Some(n as u64),
        Some(_) => return Ok(Reply::error("ERR value is out of range, must be positive")),
    };
    let Some((mut meta, expiry)) = ctx.get_meta(key, Type::Set)? else {
        return Ok(count.map_or(Reply::Null, |_| set_reply(ctx, std::iter::empty())));
    };
    let fields = meta.fields(key);
    let picked = members::random(ctx, &fields, b"", meta.size, count.unwrap_or(1), true)?;
    let picked: Vec<Vec<u8>> = picked.into_iter().map(|(m, _)| m).collect();
    if picked.len() as u64 >= meta.size {
        let (value, space) = (meta.encode(), Space::Meta);
        ctx.remove(key, space, &value)?; // all of it: one range delete
    } else {
        remove(ctx, key, &mut meta, &picked)?;
        ctx.put_meta(key, &mut meta, expiry)?;
    }
    Ok(match count {
        None => picked.into_iter().next().map_or(Reply::Null, Reply::Bulk),
        Some(_) => set_reply(ctx, picked.into_iter()),
    })
}

/// `SMOVE source destination member`: 1 if it moved (or is in `source` = `destination`).
pub fn smove(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    let source = ctx.get_meta(src, Type::Set);
    let destination = ctx.get_meta(dst, Type::Set);
    // As Redis: a missing source answers 0 before either type is checked.
    let Some((mut src_meta, src_expiry)) = source? else {
        return Ok(Reply::Integer(0));
    };
    let destination = destination?;
    if src == dst {
        let found = ctx.get_in(Space::Fields, &src_meta.fields(src).member(b"", member))?;
        return Ok(Reply::Integer(found.is_some() as i64));
    }
    if remove(ctx, src, &mut src_meta, std::slice::from_ref(member))? == 0 {
        return Ok(Reply::Integer(0));
    }
    ctx.put_meta(src, &mut src_meta, src_expiry)?;
    let (mut dst_meta, dst_expiry) = match destination {
        Some(found) => found,
        None => (Meta::new(Type::Set, ctx.engine), Expiry::Never),
    };
    // A member `destination` holds already leaves it as it was (a WATCH of it holds).
    if add(ctx, dst, &mut dst_meta, std::slice::from_ref(member))? > 0 {
        ctx.put_meta(dst, &mut dst_meta, dst_expiry)?;
    }
    Ok(Reply::Integer(1))
}

/// A set read for a combination: its key and metadata.
type Source = (Vec<u8>, Meta);

/// How a command combines sets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// `SINTER key [key ...]`.
pub fn sinter(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let result = combine(ctx, Op::Inter, &args[1..], false)?;
    Ok(set_reply(ctx, result.into_iter()))
}

/// `SUNION key [key ...]`.
pub fn sunion(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let result = combine(ctx, Op::Union, &args[1..], false)?;
    Ok(set_reply(ctx, result.into_iter()))
}

/// `SDIFF key [key ...]`.
pub fn sdiff(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let result = combine(ctx, Op::Diff, &args[1..], false)?;
    Ok(set_reply(ctx, result.into_iter()))
}

/// `SINTERSTORE destination key [key ...]`: the result's size.
pub fn sinterstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    store(ctx, Op::Inter, args)
}

/// `SUNIONSTORE destination key [key ...]`.
pub fn sunionstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    store(ctx, Op::Union, args)
}

/// `SDIFFSTORE destination key [key ...]`.
pub fn sdiffstore(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    store(ctx, Op::Diff, args)
}

/// A `STORE` form: the result replaces `args[1]`, of any type (deleted if the result is
/// empty).
fn store(ctx: &mut Ctx, op: Op, args: &[Vec<u8>]) -> Result {
    let dst = &args[1];
    let result = combine(ctx, op, &args[2..], true)?;
    if let Some(old) = ctx.entry(dst)? {
        ctx.remove(dst, old.space, &old.value)?;
    }
    let mut meta = Meta::new(Type::Set, ctx.engine);
    let fields = meta.fields(dst);
    for m in &result {
        ctx.put_in(Space::Fields, &fields.member(b"", m), b"", Expiry::Never)?;
    }
    meta.size = result.len() as u64;
    ctx.put_meta(dst, &mut meta, Expiry::Never)?;
    Ok(Reply::Integer(result.len() as i64))
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: the intersection's size, counted up to
/// `limit` (0: no limit).
pub fn sintercard(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let numkeys = match integer(&args[1]) {
        Some(n) if n > 0 => n as usize,
        Some(_) => return Ok(Reply::error("ERR numkeys should be greater than 0")),
        None => return Ok(Reply::error("ERR numkeys should be greater than 0")),
    };
    if numkeys > args.len() - 2 {
        return Ok(Reply::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = &args[2..2 + numkeys];
    let mut limit = 0u64;
    let mut i = 2 + numkeys;
    while i < args.len() {
        match (args[i].eq_ignore_ascii_case(b"LIMIT"), args.get(i + 1)) {
            (true, Some(l)) => match integer(l) {
                Some(n) if n >= 0 => limit = n as u64,
                _ => return Ok(Reply::error("ERR LIMIT can't be negative")),
            },
            _ => return Ok(Reply::error("ERR syntax error")),
        }
        i += 2;
    }
    let sets = metas(ctx, keys, false)?;
    let Some(sets) = sets.into_iter().collect::<Option<Vec<_>>>() else {
        return Ok(Reply::Integer(0)); // a missing key: an empty set
    };
    let mut count = 0u64;
    for_each_common(ctx, &sets, false, &mut |_| {
        count += 1;
        limit == 0 || count < limit
    })?;
    Ok(Reply::Integer(count as i64))
}

/// The metadata of sets `keys` (`None`: missing), every key's type checked first, as Redis
/// checks them all before combining; read as a write command reads if `staged`.
fn metas(ctx: &mut Ctx, keys: &[Vec<u8>], staged: bool) -> CmdResult<Vec<Option<Source>>> {
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let meta = match staged {
            true => ctx.get_meta(k, Type::Set)?.map(|(m, _)| m),
            false => ctx.read_meta(k, Type::Set)?,
        };
        out.push(meta.map(|m| (k.clone(), m)));
    }
    Ok(out)
}

/// Call `each` with the members common to every one of `sets`, in the smallest's order, until
/// it returns false.
fn for_each_common(
    ctx: &mut Ctx,
    sets: &[Source],
    staged: bool,
    each: &mut dyn FnMut(&[u8]) -> bool,
) -> CmdResult<()> {
    let smallest = (0..sets.len())
        .min_by_key(|&i| sets[i].1.size)
        .expect("at least one key");
    let (key, meta) = &sets[smallest];
    let candidates = members::all(ctx, &meta.fields(key), b"")?;
    'member: for (m, _) in candidates {
        for (i, (k, meta)) in sets.iter().enumerate() {
            if i == smallest {
                continue;
            }
            let at = meta.fields(k).member(b"", &m);
            let found = match staged {
                true => ctx.get_in(Space::Fields, &at)?.is_some(),
                false => ctx.read_in(Space::Fields, &at)?.is_some(),
            };
            if !found {
                continue 'member;
            }
        }
        if !each(&m) {
            break;
        }
    }
    Ok(())
}

/// The result of `op` over sets `keys`, in member order.
fn combine(ctx: &mut Ctx, op: Op, keys: &[Vec<u8>], staged: bool) -> CmdResult<BTreeSet<Vec<u8>>> {
    let sets = metas(ctx, keys, staged)?;
    let mut result = BTreeSet::new();
    match op {
        Op::Inter => {
            if let Some(sets) = sets.into_iter().collect::<Option<Vec<_>>>() {
                for_each_common(ctx, &sets, staged, &mut |m| {
                    result.insert(m.to_vec());
                    true
                })?;
            }
        }
        Op::Union => {
            for (k, meta) in sets.into_iter().flatten() {
                result.extend(
                    members::all(ctx, &meta.fields(&k), b"")?
                        .into_iter()
                        .map(|(m, _)| m),
                );
            }
        }
        Op::Diff => {
            let mut sets = sets.into_iter();
            let Some(Some((k, meta))) = sets.next() else {
                return Ok(result);
            };
            result.extend(
                members::all(ctx, &meta.fields(&k), b"")?
                    .into_iter()
                    .map(|(m, _)| m),
            );
            for (k, meta) in sets.flatten() {
                if result.is_empty() {
                    break;
                }
                let fields = meta.fields(&k);
                let mut gone = Vec::new();
                for m in &result {
                    let at = fields.member(b"", m);
                    let found = match staged {
                        true => ctx.get_in(Space::Fields, &at)?.is_some(),
                        false => ctx.read_in(Space::Fields, &at)?.is_some(),
                    };
                    if found {
                        gone.push(m.clone());
                    }
                }
                for m in gone {
                    result.remove(&m);
                }
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::tests::{engine, run};
    use super::super::Session;
    use crate::resp::Reply;

    fn bulks(r: &Reply) -> Vec<String> {
        match r {
            Reply::Array(items) => items
                .iter()
                .map(|i| match i {
                    Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    /// SSCAN pages through a set a page at a time: every member present throughout is
    /// returned exactly once, whatever is added and removed between the pages.
    #[test]
    fn sscan_returns_every_member_present_throughout_once() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let members: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
        let mut sadd = vec!["SADD", "s"];
        sadd.extend(members.iter().map(String::as_str));
        run(&e, &mut s, &[&sadd]);
        let (mut cursor, mut seen, mut pages) = ("0".to_string(), Vec::new(), 0);
        loop {
            let out = run(&e, &mut s, &[&["SSCAN", "s", &cursor, "COUNT", "7"]]);
            let Reply::Array(parts) = &out[0] else {
                panic!()
            };
            let Reply::Bulk(next) = &parts[0] else {
                panic!()
            };
            let page = bulks(&parts[1]);
            assert!(
                page.len() >= 7 || next == b"0",
                "a short page before the end"
            );
            seen.extend(page);
            pages += 1;
            // Churn between pages: new members and members removed (not the first 500).
            let new = format!("new{pages}");
            let gone = format!("m{}", 500 + pages);
            run(&e, &mut s, &[&["SADD", "s", &new], &["SREM", "s", &gone]]);
            cursor = String::from_utf8(next.clone()).unwrap();
            if cursor == "0" {
                break;
            }
        }
        let once: BTreeSet<&String> = seen.iter().collect();
        assert_eq!(once.len(), seen.len(), "a member returned twice");
        for m in &members[..500] {
            assert!(once.contains(m), "{m} missed");
        }
        assert!(pages > 100, "{pages} pages");
    }

    /// SPOP and SRANDMEMBER on a set past the exact-pick size: one seek per pick, distinct
    /// members that were in the set, and the set shrinks by what was popped.
    #[test]
    fn random_picks_from_a_large_set_are_its_members() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        // Past the exact picks: past the members they read, and past four times the count.
        let n = 20_000;
        assert!(n > 4 * 300 && n as u64 > 4 * super::members::UNIFORM_UP_TO);
        let members: Vec<String> = (0..n).map(|i| format!("element:{i:06}")).collect();
        for chunk in members.chunks(5000) {
            let mut sadd = vec!["SADD", "big"];
            sadd.extend(chunk.iter().map(String::as_str));
            run(&e, &mut s, &[&sadd]);
        }
        let all: BTreeSet<&String> = members.iter().collect();
        let out = run(
            &e,
            &mut s,
            &[&["SRANDMEMBER", "big", "50"], &["SPOP", "big", "300"]],
        );
        let (picked, popped) = (bulks(&out[0]), bulks(&out[1]));
        assert_eq!(picked.len(), 50);
        assert_eq!(picked.iter().collect::<BTreeSet<_>>().len(), 50, "distinct");
        assert_eq!(
            popped.iter().collect::<BTreeSet<_>>().len(),
            300,
            "distinct"
        );
        assert!(picked.iter().chain(&popped).all(|m| all.contains(m)));
        // The picks spread over the set: not all from its first or last thousand.
        let first = popped
            .iter()
            .filter(|m| m.as_str() < "element:001000")
            .count();
        assert!(
            first < 100,
            "{first} of 300 pops among the first 1000 members"
        );
        let out = run(&e, &mut s, &[&["SCARD", "big"]]);
        assert_eq!(out[0], Reply::Integer(n as i64 - 300));
        let mut ismember = vec!["SMISMEMBER", "big"];
        ismember.extend(popped.iter().map(String::as_str));
        let out = run(&e, &mut s, &[&ismember]);
        assert_eq!(out[0], Reply::Array(vec![Reply::Integer(0); 300]));
    }

    /// An op of a pipeline over a set past the exact-pick size.
    #[derive(Clone, Debug)]
    enum SetOp {
        Pop,
        Add(u16),
        Remove(u16),
        IsMember(u16),
        Pick,
    }

    fn set_op() -> impl proptest::strategy::Strategy<Value = SetOp> {
        use proptest::prelude::*;
        prop_oneof![
            4 => Just(SetOp::Pop),
            1 => (0u16..400).prop_map(SetOp::Add),
            1 => (0u16..400).prop_map(SetOp::Remove),
            1 => (0u16..400).prop_map(SetOp::IsMember),
            1 => Just(SetOp::Pick),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

        /// A pipeline of SPOPs on a large set reads on from one pick to the next (`kept`):
        /// whatever comes between them (members added, removed, asked after), each pops a
        /// member the set holds then, and the set ends as a model of it does.
        #[test]
        fn pipelined_pops_take_members_the_set_holds(
            ops in proptest::collection::vec(set_op(), 1..120),
        ) {
            let (_d, e) = engine();
            let mut s = Session::new(1);
            let name = |i: u16| format!("m{i:03}");
            let mut model: BTreeSet<String> = (0..300).map(name).collect();
            let mut sadd = vec!["SADD".to_string(), "s".to_string()];
            sadd.extend(model.iter().cloned());
            let sadd: Vec<&str> = sadd.iter().map(String::as_str).collect();
            run(&e, &mut s, &[&sadd]);
            let words: Vec<Vec<String>> = ops
                .iter()
                .map(|op| match op {
                    SetOp::Pop => vec!["SPOP".into(), "s".into()],
                    SetOp::Add(i) => vec!["SADD".into(), "s".into(), name(*i)],
                    SetOp::Remove(i) => vec!["SREM".into(), "s".into(), name(*i)],
                    SetOp::IsMember(i) => vec!["SISMEMBER".into(), "s".into(), name(*i)],
                    SetOp::Pick => vec!["SRANDMEMBER".into(), "s".into()],
                })
                .collect();
            let words: Vec<Vec<&str>> =
                words.iter().map(|w| w.iter().map(String::as_str).collect()).collect();
            let pipeline: Vec<&[&str]> = words.iter().map(Vec::as_slice).collect();
            let out = run(&e, &mut s, &pipeline);
            for (i, (op, reply)) in ops.iter().zip(&out).enumerate() {
                match op {
                    SetOp::Pop | SetOp::Pick => {
                        let Reply::Bulk(m) = reply else {
                            proptest::prop_assert!(model.is_empty(), "{:?} at {}", reply, i);
                            continue;
                        };
                        let m = String::from_utf8(m.clone()).unwrap();
                        proptest::prop_assert!(model.contains(&m), "{} is not a member at {}", m, i);
                        if matches!(op, SetOp::Pop) {
                            model.remove(&m);
                        }
                    }
                    SetOp::Add(m) => {
                        let added = model.insert(name(*m));
                        proptest::prop_assert_eq!(reply, &Reply::Integer(added as i64));
                    }
                    SetOp::Remove(m) => {
                        let removed = model.remove(&name(*m));
                        proptest::prop_assert_eq!(reply, &Reply::Integer(removed as i64));
                    }
                    SetOp::IsMember(m) => {
                        let is = model.contains(&name(*m));
                        proptest::prop_assert_eq!(reply, &Reply::Integer(is as i64));
                    }
                }
            }
            let out = run(&e, &mut s, &[&["SMEMBERS", "s"]]);
            let left: BTreeSet<String> = bulks(&out[0]).into_iter().collect();
            proptest::prop_assert_eq!(left, model);
        }
    }
}
