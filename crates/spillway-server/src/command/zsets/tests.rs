//! The sorted-set commands against a model (random writes and reads in pipelines and
//! transactions), under WATCH, and from several clients at once.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::super::tests::{engine, run};
use super::super::Session;
use crate::resp::Reply;

/// Scores with ties and both infinities; members that sort as their letters.
const SCORES: &[&str] = &["-inf", "-2", "-1.5", "0", "1", "1.5", "2", "inf"];
const INCREMENTS: &[&str] = &["-1", "0.5", "1", "2"];
const MEMBERS: &[&str] = &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

/// The model: member -> score.
type Model = BTreeMap<String, f64>;

/// The model's members in Redis's order: by score, then member.
fn ordered(model: &Model) -> Vec<(String, f64)> {
    let mut all: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
    all.sort_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then(a.0.cmp(&b.0)));
    all
}

fn flat(members: &[(String, f64)]) -> Reply {
    let items = members
        .iter()
        .flat_map(|(m, s)| [Reply::bulk(m.as_str()), Reply::Double(*s)]);
    Reply::Array(items.collect())
}

fn num(text: &str) -> f64 {
    text.parse().unwrap()
}

/// A score bound: the number and whether it is excluded.
fn bound() -> impl Strategy<Value = (usize, bool)> {
    (0..SCORES.len(), any::<bool>())
}

fn bound_text((i, ex): (usize, bool)) -> String {
    format!("{}{}", if ex { "(" } else { "" }, SCORES[i])
}

fn within(s: f64, (min, min_ex): (f64, bool), (max, max_ex): (f64, bool)) -> bool {
    (if min_ex { s > min } else { s >= min }) && (if max_ex { s < max } else { s <= max })
}

#[derive(Clone, Debug)]
enum Op {
    /// Flags (NX/XX, GT/LT, CH as bits) and pairs.
    Add(u8, Vec<(usize, usize)>),
    Incr(usize, usize),
    Rem(Vec<usize>),
    RemByScore((usize, bool), (usize, bool)),
    RemByRank(i64, i64),
    RemByLex(usize, usize),
    Pop(bool, u64),
    // Queries.
    Range(i64, i64, bool),
    ByScore((usize, bool), (usize, bool), bool, i64, i64),
    Count((usize, bool), (usize, bool)),
    Rank(usize, bool),
    Score(usize),
    Card,
}

fn op() -> impl Strategy<Value = Op> {
    let member = 0..MEMBERS.len();
    let pairs = prop::collection::vec((0..SCORES.len(), member.clone()), 1..5);
    prop_oneof![
        4 => (0u8..32, pairs).prop_map(|(f, p)| Op::Add(f, p)),
        2 => (0..INCREMENTS.len(), member.clone()).prop_map(|(i, m)| Op::Incr(i, m)),
        1 => prop::collection::vec(member.clone(), 1..4).prop_map(Op::Rem),
        1 => (bound(), bound()).prop_map(|(a, b)| Op::RemByScore(a, b)),
        1 => (-6i64..6, -6i64..6).prop_map(|(a, b)| Op::RemByRank(a, b)),
        1 => (member.clone(), member.clone()).prop_map(|(a, b)| Op::RemByLex(a, b)),
        1 => (any::<bool>(), 0u64..4).prop_map(|(max, n)| Op::Pop(max, n)),
        2 => (-12i64..12, -12i64..12, any::<bool>()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        2 => (bound(), bound(), any::<bool>(), -1i64..4, -2i64..4)
            .prop_map(|(a, b, r, o, c)| Op::ByScore(a, b, r, o, c)),
        1 => (bound(), bound()).prop_map(|(a, b)| Op::Count(a, b)),
        2 => (member.clone(), any::<bool>()).prop_map(|(m, r)| Op::Rank(m, r)),
        1 => member.prop_map(Op::Score),
        1 => Just(Op::Card),
    ]
}

/// The request for `op` and the model's reply, the model updated as Redis would.
fn apply(model: &mut Model, op: &Op) -> (Vec<String>, Reply) {
    let s = |x: &str| x.to_string();
    let range_of = |(i, ex): (usize, bool)| (num(SCORES[i]), ex);
    match op {
        Op::Add(flags, pairs) => {
            let (nx, xx) = (flags & 3 == 1, flags & 3 == 2);
            let (gt, lt) = (!nx && flags >> 2 & 3 == 1, !nx && flags >> 2 & 3 == 2);
            let ch = flags & 16 != 0;
            let mut req = vec![s("ZADD"), s("k")];
            for (on, word) in [(nx, "NX"), (xx, "XX"), (gt, "GT"), (lt, "LT"), (ch, "CH")] {
                if on {
                    req.push(s(word));
                }
            }
            let (mut added, mut changed) = (0, 0);
            for &(i, m) in pairs {
                req.extend([s(SCORES[i]), s(MEMBERS[m])]);
                let new = num(SCORES[i]);
                match model.get(MEMBERS[m]).copied() {
                    Some(_) if nx => {}
                    Some(old) if lt && new >= old || gt && new <= old => {}
                    Some(old) => {
                        if new != old {
                            changed += 1;
                            model.insert(s(MEMBERS[m]), new);
                        }
                    }
                    None if xx => {}
                    None => {
                        added += 1;
                        model.insert(s(MEMBERS[m]), new);
                    }
                }
            }
            (
                req,
                Reply::Integer(if ch { added + changed } else { added }),
            )
        }
        Op::Incr(i, m) => {
            let by = num(INCREMENTS[*i]);
            let new = model.get(MEMBERS[*m]).map_or(by, |old| old + by);
            model.insert(s(MEMBERS[*m]), new);
            let req = vec![s("ZINCRBY"), s("k"), s(INCREMENTS[*i]), s(MEMBERS[*m])];
            (req, Reply::Double(new))
        }
        Op::Rem(members) => {
            let mut req = vec![s("ZREM"), s("k")];
            let mut n = 0;
            for &m in members {
                req.push(s(MEMBERS[m]));
                n += i64::from(model.remove(MEMBERS[m]).is_some());
            }
            (req, Reply::Integer(n))
        }
        Op::RemByScore(a, b) => {
            let (min, max) = (range_of(*a), range_of(*b));
            let before = model.len();
            model.retain(|_, s| !within(*s, min, max));
            let req = vec![
                s("ZREMRANGEBYSCORE"),
                s("k"),
                bound_text(*a),
                bound_text(*b),
            ];
            (req, Reply::Integer((before - model.len()) as i64))
        }
        Op::RemByRank(a, b) => {
            let all = ordered(model);
            let gone = match super::super::zrange::ranks(all.len() as u64, *a, *b) {
                Some((lo, hi)) => all[lo as usize..=hi as usize].to_vec(),
                None => Vec::new(),
            };
            for (m, _) in &gone {
                model.remove(m);
            }
            let req = vec![s("ZREMRANGEBYRANK"), s("k"), a.to_string(), b.to_string()];
            (req, Reply::Integer(gone.len() as i64))
        }
        Op::RemByLex(a, b) => {
            // Redis's walk in score order: from the first member at or past `[a` while
            // the members are at or before `[b` (nothing if the range's ends miss).
            let (lo, hi) = (MEMBERS[*a], MEMBERS[*b]);
            let all = ordered(model);
            let misses = lo > hi
                || all.last().is_none_or(|(m, _)| m.as_str() < lo)
                || all.first().is_none_or(|(m, _)| m.as_str() > hi);
            let gone: Vec<_> = match misses {
                true => Vec::new(),
                false => all
                    .iter()
                    .skip_while(|(m, _)| m.as_str() < lo)
                    .take_while(|(m, _)| m.as_str() <= hi)
                    .cloned()
                    .collect(),
            };
            for (m, _) in &gone {
                model.remove(m);
            }
            let req = vec![
                s("ZREMRANGEBYLEX"),
                s("k"),
                format!("[{lo}"),
                format!("[{hi}"),
            ];
            (req, Reply::Integer(gone.len() as i64))
        }
        Op::Pop(max, n) => {
            let mut all = ordered(model);
            if *max {
                all.reverse();
            }
            all.truncate(*n as usize);
            for (m, _) in &all {
                model.remove(m);
            }
            let name = if *max { "ZPOPMAX" } else { "ZPOPMIN" };
            (vec![s(name), s("k"), n.to_string()], flat(&all))
        }
        Op::Range(a, b, rev) => {
            let mut all = ordered(model);
            if *rev {
                all.reverse();
            }
            let found = match super::super::zrange::ranks(all.len() as u64, *a, *b) {
                Some((lo, hi)) => all[lo as usize..=hi as usize].to_vec(),
                None => Vec::new(),
            };
            let mut req = vec![s("ZRANGE"), s("k"), a.to_string(), b.to_string()];
            if *rev {
                req.push(s("REV"));
            }
            req.push(s("WITHSCORES"));
            (req, flat(&found))
        }
        Op::ByScore(a, b, rev, offset, count) => {
            let (min, max) = (range_of(*a), range_of(*b));
            let mut all: Vec<_> = ordered(model)
                .into_iter()
                .filter(|(_, s)| within(*s, min, max))
                .collect();
            if *rev {
                all.reverse();
            }
            let found: Vec<_> = match *offset < 0 {
                true => Vec::new(),
                false => all
                    .into_iter()
                    .skip(*offset as usize)
                    .take(if *count < 0 {
                        usize::MAX
                    } else {
                        *count as usize
                    })
                    .collect(),
            };
            let (name, first, second) = match rev {
                true => ("ZREVRANGEBYSCORE", *b, *a),
                false => ("ZRANGEBYSCORE", *a, *b),
            };
            let req = vec![
                s(name),
                s("k"),
                bound_text(first),
                bound_text(second),
                s("WITHSCORES"),
                s("LIMIT"),
                offset.to_string(),
                count.to_string(),
            ];
            (req, flat(&found))
        }
        Op::Count(a, b) => {
            let (min, max) = (range_of(*a), range_of(*b));
            let n = model.values().filter(|s| within(**s, min, max)).count();
            let req = vec![s("ZCOUNT"), s("k"), bound_text(*a), bound_text(*b)];
            (req, Reply::Integer(n as i64))
        }
        Op::Rank(m, rev) => {
            let mut all = ordered(model);
            if *rev {
                all.reverse();
            }
            let rank = all.iter().position(|(x, _)| x == MEMBERS[*m]);
            let name = if *rev { "ZREVRANK" } else { "ZRANK" };
            let reply = rank.map_or(Reply::Null, |r| Reply::Integer(r as i64));
            (vec![s(name), s("k"), s(MEMBERS[*m])], reply)
        }
        Op::Score(m) => {
            let reply = model
                .get(MEMBERS[*m])
                .map_or(Reply::Null, |s| Reply::Double(*s));
            (vec![s("ZSCORE"), s("k"), s(MEMBERS[*m])], reply)
        }
        Op::Card => (vec![s("ZCARD"), s("k")], Reply::Integer(model.len() as i64)),
    }
}

/// As in Redis, a write that changes a sorted set fails a WATCH of it, and one that
/// changes nothing (a member already there with NX, a member not there removed, an
/// empty range removed, a pop of a missing key) does not.
#[test]
fn only_a_change_fails_a_watch() {
    let (_d, e) = engine();
    let (mut a, mut b) = (Session::new(1), Session::new(2));
    run(&e, &mut a, &[&["ZADD", "k", "1", "x", "2", "y"]]);
    let exec = |a: &mut Session| {
        let out = run(&e, a, &[&["MULTI"], &["ZCARD", "k"], &["EXEC"]]);
        out[2].clone()
    };
    for nothing in [
        &["ZADD", "k", "NX", "5", "x"][..],
        &["ZADD", "k", "1", "x"],
        &["ZADD", "k", "XX", "1", "new"],
        &["ZADD", "k", "GT", "0", "y"],
        &["ZREM", "k", "nope"],
        &["ZREMRANGEBYSCORE", "k", "5", "6"],
        &["ZREMRANGEBYRANK", "k", "5", "6"],
        &["ZPOPMIN", "nokey"],
        &["ZPOPMIN", "k", "0"],
        &["ZUNIONSTORE", "k2", "1", "nokey"],
    ] {
        run(&e, &mut a, &[&["WATCH", "k", "k2"]]);
        run(&e, &mut b, &[nothing]);
        assert_eq!(
            exec(&mut a),
            Reply::Array(vec![Reply::Integer(2)]),
            "{nothing:?}"
        );
    }
    for change in [
        &["ZADD", "k", "3", "z"][..],
        &["ZADD", "k", "7", "z"],
        &["ZINCRBY", "k", "0.5", "x"],
        &["ZREM", "k", "z"],
        &["ZPOPMAX", "k"],
        &["ZADD", "k", "2", "y"],
        &["ZUNIONSTORE", "k", "1", "k"],
    ] {
        run(&e, &mut a, &[&["WATCH", "k"]]);
        run(&e, &mut b, &[change]);
        assert_eq!(exec(&mut a), Reply::NullArray, "{change:?}");
    }
}

/// Increments and adds from several clients at once, pipelined, lose none: each reads
/// and writes with no other write between (`context`). The first of them create the
/// database's metadata and fields keyspaces: the others, waiting for the lock, must then
/// find the key (they took it for absent, and made it anew, when `Ctx::get_in` looked the
/// keyspace up before taking the lock).
#[test]
fn increments_from_many_clients_lose_none() {
    // Fresh stores each time: the race for the keyspaces is at their creation.
    for _ in 0..8 {
        increments_from_many_clients_on_a_fresh_store();
    }
}

fn increments_from_many_clients_on_a_fresh_store() {
    let (_d, e) = engine();
    std::thread::scope(|scope| {
        for t in 0..4u32 {
            let e = &e;
            scope.spawn(move || {
                let mut s = Session::new(u64::from(t));
                let own = format!("m{t}");
                for round in 0..25 {
                    let reqs: Vec<Vec<String>> = vec![
                        vec!["ZINCRBY".into(), "k".into(), "1".into(), "shared".into()],
                        vec![
                            "ZADD".into(),
                            "k".into(),
                            "INCR".into(),
                            "2".into(),
                            own.clone(),
                        ],
                        vec!["ZINCRBY".into(), "k".into(), "1".into(), "shared".into()],
                        vec!["ZPOPMIN".into(), "other".into()],
                        vec![
                            "ZADD".into(),
                            "other".into(),
                            round.to_string(),
                            own.clone(),
                        ],
                    ];
                    let reqs: Vec<Vec<&str>> = reqs
                        .iter()
                        .map(|r| r.iter().map(String::as_str).collect())
                        .collect();
                    let reqs: Vec<&[&str]> = reqs.iter().map(Vec::as_slice).collect();
                    let out = run(e, &mut s, &reqs);
                    assert_eq!(out[1], Reply::Double(f64::from(2 * (round + 1))));
                }
            });
        }
    });
    let mut s = Session::new(9);
    let out = run(&e, &mut s, &[&["ZSCORE", "k", "shared"], &["ZCARD", "k"]]);
    assert_eq!(out, [Reply::Double(200.0), Reply::Integer(5)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random writes and reads, in pipelines (and some in transactions), answer as the
    /// model does; after each pipeline the whole set, its size and every score do.
    #[test]
    fn sorted_sets_answer_as_a_model(
        batches in prop::collection::vec((prop::collection::vec(op(), 1..12), any::<bool>()), 1..8)
    ) {
        let (_d, e) = engine();
        let mut session = Session::new(1);
        let mut model = Model::new();
        for (ops, in_multi) in &batches {
            let mut requests = Vec::new();
            let mut want = Vec::new();
            for op in ops {
                // No increment makes NaN: inf - inf would be refused, and the model skips it.
                if let Op::Incr(_, m) = op {
                    if model.get(MEMBERS[*m]).is_some_and(|s| s.is_infinite()) {
                        continue;
                    }
                }
                let (req, reply) = apply(&mut model, op);
                requests.push(req);
                want.push(reply);
            }
            let mut all: Vec<Vec<String>> = Vec::new();
            if *in_multi {
                all.push(vec!["MULTI".into()]);
            }
            all.extend(requests.iter().cloned());
            if *in_multi {
                all.push(vec!["EXEC".into()]);
            }
            all.push(vec!["ZRANGE".into(), "k".into(), "0".into(), "-1".into(), "WITHSCORES".into()]);
            all.push(vec!["ZCARD".into(), "k".into()]);
            all.push(vec!["EXISTS".into(), "k".into()]);
            let refs: Vec<Vec<&str>> = all.iter().map(|r| r.iter().map(String::as_str).collect()).collect();
            let refs: Vec<&[&str]> = refs.iter().map(Vec::as_slice).collect();
            let mut out = run(&e, &mut session, &refs);
            let tail = out.split_off(out.len() - 3);
            let got = match in_multi {
                true => {
                    prop_assert!(out[1..out.len() - 1].iter().all(|r| *r == Reply::status("QUEUED")));
                    match out.pop() {
                        Some(Reply::Array(replies)) => replies,
                        other => return Err(TestCaseError::fail(format!("EXEC: {other:?}"))),
                    }
                }
                false => out,
            };
            for (i, (got, want)) in got.iter().zip(&want).enumerate() {
                prop_assert_eq!(got, want, "{:?}", requests[i]);
            }
            prop_assert_eq!(&tail[0], &flat(&ordered(&model)));
            prop_assert_eq!(&tail[1], &Reply::Integer(model.len() as i64));
            prop_assert_eq!(&tail[2], &Reply::Integer(i64::from(!model.is_empty())));
        }
    }
}

/// Pops in a pipeline read on from the scan the pop before them kept (`kept`), but not past a
/// member that scan read and left: one a lower staged score came before.
#[test]
fn a_pop_after_a_lower_staged_score_still_pops_the_stores_minimum() {
    let (_d, e) = engine();
    let mut s = Session::new(1);
    run(&e, &mut s, &[&["ZADD", "z", "1", "a", "2", "b", "3", "c"]]);
    let out = run(
        &e,
        &mut s,
        &[
            &["ZADD", "z", "0", "x"],
            &["ZPOPMIN", "z"],
            &["ZPOPMIN", "z"],
            &["ZPOPMAX", "z"],
            &["ZADD", "z", "9", "y"],
            &["ZPOPMAX", "z"],
            &["ZPOPMAX", "z"],
            &["ZRANGE", "z", "0", "-1"],
        ],
    );
    let popped = |m: &str, score: f64| Reply::Array(vec![Reply::bulk(m), Reply::Double(score)]);
    assert_eq!(out[1], popped("x", 0.0));
    assert_eq!(out[2], popped("a", 1.0));
    assert_eq!(out[3], popped("c", 3.0));
    assert_eq!(out[5], popped("y", 9.0));
    assert_eq!(out[6], popped("b", 2.0));
    assert_eq!(out[7], Reply::Array(vec![]));
}
