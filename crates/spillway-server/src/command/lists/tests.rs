//! Lists through `Engine::run`: a property test against a `VecDeque`, pipelines and
//! transactions of list writes, and blocking pops at the engine's level (the server's side is
//! in `tests/serve.rs`).

use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;

use super::super::tests::{engine, run};
use super::super::{Engine, Session};
use crate::resp::Reply;

/// A list command, as the model and the engine run it.
#[derive(Clone, Debug)]
enum Op {
    Push(bool, Vec<&'static str>),
    Pop(bool, Option<u8>),
    Set(i64, &'static str),
    Trim(i64, i64),
    Rem(i64, &'static str),
    Insert(bool, &'static str, &'static str),
    Rotate(bool, bool),
    Index(i64),
    Range(i64, i64),
    Pos(&'static str, i64, Option<u8>, u8),
}

fn element() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just("a"), Just("b"), Just("c"), Just("dd"), Just("")]
}

fn index() -> impl Strategy<Value = i64> {
    -40i64..40
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<bool>(), prop::collection::vec(element(), 1..12)).prop_map(|(l, e)| Op::Push(l, e)),
        2 => (any::<bool>(), prop::option::of(0u8..14)).prop_map(|(l, c)| Op::Pop(l, c)),
        1 => (index(), element()).prop_map(|(i, e)| Op::Set(i, e)),
        1 => (index(), index()).prop_map(|(a, b)| Op::Trim(a, b)),
        2 => (-4i64..4, element()).prop_map(|(c, e)| Op::Rem(c, e)),
        2 => (any::<bool>(), element(), element()).prop_map(|(b, p, e)| Op::Insert(b, p, e)),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(f, t)| Op::Rotate(f, t)),
        1 => index().prop_map(Op::Index),
        1 => (index(), index()).prop_map(|(a, b)| Op::Range(a, b)),
        1 => (element(), prop_oneof![Just(1i64), Just(2), Just(-1), Just(-3)], prop::option::of(0u8..3), 0u8..6)
            .prop_map(|(e, r, c, m)| Op::Pos(e, r, c, m)),
    ]
}

fn side(left: bool) -> &'static str {
    if left {
        "LEFT"
    } else {
        "RIGHT"
    }
}

impl Op {
    fn args(&self) -> Vec<String> {
        let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
        match self {
            Op::Push(left, e) => {
                let mut a = s(&[if *left { "LPUSH" } else { "RPUSH" }, "l"]);
                a.extend(e.iter().map(|e| e.to_string()));
                a
            }
            Op::Pop(left, count) => {
                let mut a = s(&[if *left { "LPOP" } else { "RPOP" }, "l"]);
                a.extend(count.map(|c| c.to_string()));
                a
            }
            Op::Set(i, e) => s(&["LSET", "l", &i.to_string(), e]),
            Op::Trim(a, b) => s(&["LTRIM", "l", &a.to_string(), &b.to_string()]),
            Op::Rem(c, e) => s(&["LREM", "l", &c.to_string(), e]),
            Op::Insert(before, p, e) => s(&[
                "LINSERT",
                "l",
                if *before { "BEFORE" } else { "AFTER" },
                p,
                e,
            ]),
            Op::Rotate(from, to) => s(&["LMOVE", "l", "l", side(*from), side(*to)]),
            Op::Index(i) => s(&["LINDEX", "l", &i.to_string()]),
            Op::Range(a, b) => s(&["LRANGE", "l", &a.to_string(), &b.to_string()]),
            Op::Pos(e, rank, count, maxlen) => {
                let mut a = s(&["LPOS", "l", e, "RANK", &rank.to_string()]);
                if let Some(c) = count {
                    a.extend(s(&["COUNT", &c.to_string()]));
                }
                a.extend(s(&["MAXLEN", &maxlen.to_string()]));
                a
            }
        }
    }

    /// Run on the model: Redis's reply.
    fn apply(&self, list: &mut VecDeque<&'static str>) -> Reply {
        let len = list.len() as i64;
        let pos = |i: i64| {
            let i = if i < 0 { i + len } else { i };
            (0..len).contains(&i).then_some(i as usize)
        };
        let bulk = |e: &str| Reply::bulk(e);
        match self {
            Op::Push(left, e) => {
                for &x in e {
                    if *left {
                        list.push_front(x)
                    } else {
                        list.push_back(x)
                    }
                }
                Reply::Integer(list.len() as i64)
            }
            Op::Pop(left, count) => {
                let mut take = || {
                    if *left {
                        list.pop_front()
                    } else {
                        list.pop_back()
                    }
                };
                match count {
                    None => take().map_or(Reply::Null, bulk),
                    Some(_) if len == 0 => Reply::NullArray,
                    Some(c) => Reply::Array((0..*c).map_while(|_| take()).map(bulk).collect()),
                }
            }
            Op::Set(i, e) => match (len, pos(*i)) {
                (0, _) => Reply::error("ERR no such key"),
                (_, None) => Reply::error("ERR index out of range"),
                (_, Some(p)) => {
                    list[p] = e;
                    Reply::ok()
                }
            },
            Op::Trim(a, b) => {
                match super::range(*a, *b, len as u64) {
                    None => list.clear(),
                    Some((from, to)) => {
                        list.truncate(to as usize);
                        list.drain(..from as usize);
                    }
                }
                Reply::ok()
            }
            Op::Rem(count, e) => {
                let limit = count.unsigned_abs() as usize;
                let mut matches: Vec<usize> = (0..list.len()).filter(|&i| list[i] == *e).collect();
                if *count < 0 {
                    matches.reverse();
                }
                if limit != 0 {
                    matches.truncate(limit);
                }
                matches.sort_unstable();
                for &i in matches.iter().rev() {
                    list.remove(i);
                }
                Reply::Integer(matches.len() as i64)
            }
            Op::Insert(before, p, e) => {
                if len == 0 {
                    return Reply::Integer(0);
                }
                match list.iter().position(|x| x == p) {
                    None => Reply::Integer(-1),
                    Some(i) => {
                        list.insert(if *before { i } else { i + 1 }, e);
                        Reply::Integer(list.len() as i64)
                    }
                }
            }
            Op::Rotate(from, to) => {
                let x = if *from {
                    list.pop_front()
                } else {
                    list.pop_back()
                };
                let Some(x) = x else { return Reply::Null };
                if *to {
                    list.push_front(x)
                } else {
                    list.push_back(x)
                }
                bulk(x)
            }
            Op::Index(i) => pos(*i).map_or(Reply::Null, |p| bulk(list[p])),
            Op::Range(a, b) => match super::range(*a, *b, len as u64) {
                None => Reply::Array(vec![]),
                Some((from, to)) => Reply::Array(
                    list.range(from as usize..to as usize)
                        .map(|e| bulk(e))
                        .collect(),
                ),
            },
            Op::Pos(e, rank, count, maxlen) => {
                let looked = match *maxlen as usize {
                    0 => list.len(),
                    m => m.min(list.len()),
                };
                let positions: Vec<usize> = match *rank > 0 {
                    true => (0..looked).filter(|&i| list[i] == *e).collect(),
                    false => (list.len() - looked..list.len())
                        .rev()
                        .filter(|&i| list[i] == *e)
                        .collect(),
                };
                let skip = rank.unsigned_abs() as usize - 1;
                let found = positions.into_iter().skip(skip);
                match count {
                    None => found
                        .take(1)
                        .next()
                        .map_or(Reply::Null, |p| Reply::Integer(p as i64)),
                    Some(c) => {
                        let c = if *c == 0 { usize::MAX } else { *c as usize };
                        Reply::Array(found.take(c).map(|p| Reply::Integer(p as i64)).collect())
                    }
                }
            }
        }
    }
}

fn run_args(e: &Engine, s: &mut Session, reqs: &[Vec<String>]) -> Vec<Reply> {
    let strs: Vec<Vec<&str>> = reqs
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let slices: Vec<&[&str]> = strs.iter().map(Vec::as_slice).collect();
    run(e, s, &slices)
}

/// What the engine holds at `l`, as LRANGE and LLEN see it.
fn check_list(e: &Engine, s: &mut Session, model: &VecDeque<&'static str>) {
    let out = run(
        e,
        s,
        &[
            &["LRANGE", "l", "0", "-1"],
            &["LLEN", "l"],
            &["EXISTS", "l"],
        ],
    );
    let want = Reply::Array(model.iter().map(|x| Reply::bulk(*x)).collect());
    assert_eq!(out[0], want);
    assert_eq!(out[1], Reply::Integer(model.len() as i64));
    assert_eq!(
        out[2],
        Reply::Integer(!model.is_empty() as i64),
        "an empty list is deleted"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Groups of commands, each one pipeline (a staged run: range deletes and puts in one
    /// batch), some in MULTI: every reply as the model's, and the list as the model's after.
    #[test]
    fn lists_answer_as_a_vecdeque(
        groups in prop::collection::vec((prop::collection::vec(op(), 1..6), any::<bool>()), 1..24)
    ) {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let mut model = VecDeque::new();
        for (ops, multi) in groups {
            let want: Vec<Reply> = ops.iter().map(|op| op.apply(&mut model)).collect();
            let mut reqs: Vec<Vec<String>> = ops.iter().map(Op::args).collect();
            if multi {
                reqs.insert(0, vec!["MULTI".into()]);
                reqs.push(vec!["EXEC".into()]);
            }
            let mut got = run_args(&e, &mut s, &reqs);
            if multi {
                let Some(Reply::Array(replies)) = got.pop() else { panic!("EXEC: {got:?}") };
                got = replies;
            }
            prop_assert_eq!(&got, &want, "{:?}", ops);
            check_list(&e, &mut s, &model);
        }
    }
}

#[test]
fn long_lists_move_the_shorter_side_and_read_with_scans() {
    let (_d, e) = engine();
    let mut s = Session::new(1);
    let mut model: VecDeque<&'static str> = VecDeque::new();
    let names: Vec<&'static str> = (0..200)
        .map(|i| &*Box::leak(format!("e{}", i % 17).into_boxed_str()))
        .collect();
    let mut ops = vec![
        Op::Push(false, names[..100].to_vec()),
        Op::Push(true, names[100..].to_vec()),
    ];
    for (i, name) in names.iter().enumerate().step_by(13) {
        ops.push(Op::Insert(i % 2 == 0, name, "new"));
        ops.push(Op::Rem([1, -1, 2, 0][i % 4], names[(i * 7) % 200]));
        ops.push(Op::Pop(i % 3 == 0, Some(10)));
        ops.push(Op::Set(-(i as i64) - 1, "set"));
    }
    ops.push(Op::Trim(5, -6));
    ops.push(Op::Rem(0, "new"));
    // Unique elements at the tail: insertions and removals there move the tail side.
    let tail: Vec<&'static str> = (0..40)
        .map(|i| &*Box::leak(format!("u{i}").into_boxed_str()))
        .collect();
    ops.push(Op::Push(false, tail.clone()));
    for (i, t) in tail.iter().enumerate().rev().step_by(7) {
        ops.push(Op::Insert(i % 2 == 0, t, "near-tail"));
        ops.push(Op::Rem(-1, tail[(i + 3) % 40]));
        ops.push(Op::Rem(1, "near-tail"));
    }
    for op in ops {
        let want = op.apply(&mut model);
        let got = run_args(&e, &mut s, &[op.args()]);
        assert_eq!(got, [want], "{op:?}");
        check_list(&e, &mut s, &model);
    }
}

#[test]
fn writes_keep_the_expiry_and_types_are_kept_apart() {
    let (_d, e) = engine();
    let mut s = Session::new(1);
    let out = run(
        &e,
        &mut s,
        &[
            &["RPUSH", "l", "a", "b"],
            &["EXPIRE", "l", "100"],
            &["LPUSH", "l", "c"],
            &["LSET", "l", "0", "x"],
            &["LREM", "l", "0", "b"],
            &["LINSERT", "l", "AFTER", "x", "y"],
            &["LTRIM", "l", "0", "1"],
            &["LMOVE", "l", "l", "LEFT", "RIGHT"],
            &["TTL", "l"],
            &["TYPE", "l"],
            &["SET", "s", "v"],
            &["LPUSH", "s", "a"],
            &["GET", "l"],
            &["SET", "l", "v"],
            &["LLEN", "l"],
        ],
    );
    assert_eq!(out[8], Reply::Integer(100));
    assert_eq!(out[9], Reply::status("list"));
    let wrong = Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(out[11], wrong);
    assert_eq!(out[12], wrong);
    assert_eq!(out[14], wrong);
}

// ---- Blocking, at the engine's level ----

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Whether `s`'s blocked command is woken (or timed out) within `within`.
fn woken(rt: &tokio::runtime::Runtime, s: &Session, within: Duration) -> bool {
    let ready = s.unblocked().expect("blocked");
    rt.block_on(async { tokio::time::timeout(within, ready).await })
        .is_ok()
}

const LONG: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(50);

#[test]
fn a_blocked_pop_waits_in_place_and_runs_again_once_pushed_to() {
    let rt = runtime();
    let (_d, e) = engine();
    let (mut a, mut b, mut c) = (Session::new(1), Session::new(2), Session::new(3));
    // A blocks; what it pipelined after waits with it.
    let out = run(
        &e,
        &mut a,
        &[&["PING"], &["BLPOP", "x", "k", "0"], &["PING", "after"]],
    );
    assert_eq!(out, [Reply::status("PONG")]);
    assert!(a.blocked());
    // B blocks after it, on the same key.
    assert!(run(&e, &mut b, &[&["BRPOP", "k", "0"]]).is_empty());
    assert!(!woken(&rt, &a, SHORT), "nothing pushed yet");
    // Another database's k is another key.
    run(
        &e,
        &mut c,
        &[&["SELECT", "1"], &["RPUSH", "k", "other"], &["SELECT", "0"]],
    );
    assert!(!woken(&rt, &a, SHORT));
    // One element: the first blocked gets it; the second waits on.
    assert_eq!(
        run(&e, &mut c, &[&["RPUSH", "k", "v1"]]),
        [Reply::Integer(1)]
    );
    assert!(woken(&rt, &a, LONG));
    assert!(!woken(&rt, &b, SHORT), "one element wakes one client");
    let out = run(&e, &mut a, &[&["ECHO", "new"]]);
    let pair = |k: &str, v: &str| Reply::Array(vec![Reply::bulk(k), Reply::bulk(v)]);
    assert_eq!(
        out,
        [pair("k", "v1"), Reply::bulk("after"), Reply::bulk("new")]
    );
    assert!(!a.blocked());
    // Two at once: B is woken for the first, and the second stays for whoever comes.
    run(&e, &mut c, &[&["RPUSH", "k", "v2", "v3"]]);
    assert!(woken(&rt, &b, LONG));
    assert_eq!(run(&e, &mut b, &[]), [pair("k", "v3")]);
    assert_eq!(
        run(&e, &mut c, &[&["LRANGE", "k", "0", "-1"]]),
        [Reply::Array(vec![Reply::bulk("v2")])]
    );
    assert_eq!(e.blocking.blocked_clients(), 0);
}

#[test]
fn a_woken_client_that_finds_nothing_blocks_again_and_one_that_leaves_passes_it_on() {
    let rt = runtime();
    let (_d, e) = engine();
    let (mut a, mut b, mut c) = (Session::new(1), Session::new(2), Session::new(3));
    run(&e, &mut a, &[&["BLPOP", "k", "0"]]);
    run(&e, &mut b, &[&["BLPOP", "k", "0"]]);
    // C pushes and takes the element back before A runs again: A waits on, first still.
    run(&e, &mut c, &[&["RPUSH", "k", "v"]]);
    run(&e, &mut c, &[&["LPOP", "k"]]);
    assert!(woken(&rt, &a, LONG));
    assert!(run(&e, &mut a, &[]).is_empty());
    assert!(a.blocked());
    run(&e, &mut c, &[&["RPUSH", "k", "w"]]);
    assert!(woken(&rt, &a, LONG));
    assert!(!woken(&rt, &b, SHORT));
    // A goes (its connection closed) before running again: B gets the wake-up.
    drop(a);
    assert!(woken(&rt, &b, LONG));
    let pair = Reply::Array(vec![Reply::bulk("k"), Reply::bulk("w")]);
    assert_eq!(run(&e, &mut b, &[]), [pair]);
    assert_eq!(e.blocking.blocked_clients(), 0);
    // Woken for a key that holds another type when it runs again: it waits on (Redis serves
    // blocked clients from lists only), where a first run answers WRONGTYPE.
    run(&e, &mut b, &[&["BLMPOP", "0", "2", "k", "j", "LEFT"]]);
    let exec = [
        &["MULTI"][..],
        &["LPUSH", "k", "a"],
        &["DEL", "k"],
        &["SET", "k", "foo"],
        &["EXEC"],
    ];
    run(&e, &mut c, &exec);
    assert!(woken(&rt, &b, LONG));
    assert!(run(&e, &mut b, &[]).is_empty());
    run(&e, &mut c, &[&["RPUSH", "j", "x"]]);
    assert!(woken(&rt, &b, LONG));
    let popped = Reply::Array(vec![Reply::bulk("j"), Reply::Array(vec![Reply::bulk("x")])]);
    assert_eq!(run(&e, &mut b, &[]), [popped]);
    let wrong = Reply::error("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(run(&e, &mut b, &[&["BLPOP", "k", "j", "0"]]), [wrong]);
}

#[test]
fn a_timeout_answers_a_null_array_and_a_transaction_never_blocks() {
    let rt = runtime();
    let (_d, e) = engine();
    let mut a = Session::new(1);
    assert!(run(
        &e,
        &mut a,
        &[&["BLMOVE", "k", "d", "LEFT", "RIGHT", "0.05"], &["PING"]]
    )
    .is_empty());
    let started = std::time::Instant::now();
    assert!(woken(&rt, &a, LONG));
    assert_eq!(
        run(&e, &mut a, &[]),
        [Reply::NullArray, Reply::status("PONG")]
    );
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "not before the timeout"
    );
    // Woken before its timeout but run after it: it still pops what woke it...
    let mut c = Session::new(2);
    run(&e, &mut a, &[&["BLPOP", "k", "0.05"]]);
    run(&e, &mut c, &[&["RPUSH", "k", "v"]]);
    std::thread::sleep(Duration::from_millis(60));
    let pair = Reply::Array(vec![Reply::bulk("k"), Reply::bulk("v")]);
    assert_eq!(run(&e, &mut a, &[]), [pair]);
    // ... and answers nil, not blocking again, if another took it.
    run(&e, &mut a, &[&["BLPOP", "k", "0.05"]]);
    run(&e, &mut c, &[&["RPUSH", "k", "v"], &["LPOP", "k"]]);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(run(&e, &mut a, &[]), [Reply::NullArray]);
    assert!(!a.blocked());
    let out = run(
        &e,
        &mut a,
        &[
            &["MULTI"],
            &["BLPOP", "k", "0"],
            &["BLMOVE", "k", "d", "LEFT", "RIGHT", "0"],
            &["BLMPOP", "0", "1", "k", "LEFT"],
            &["EXEC"],
        ],
    );
    assert_eq!(
        out[4],
        Reply::Array(vec![Reply::NullArray, Reply::Null, Reply::NullArray])
    );
    assert!(!a.blocked());
    assert_eq!(e.blocking.blocked_clients(), 0);
}

#[test]
fn blocked_moves_and_swapped_databases_wake_clients() {
    let rt = runtime();
    let (_d, e) = engine();
    let (mut a, mut b, mut c) = (Session::new(1), Session::new(2), Session::new(3));
    run(
        &e,
        &mut a,
        &[&["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]],
    );
    run(&e, &mut b, &[&["BLPOP", "dst", "0"]]);
    run(&e, &mut c, &[&["RPUSH", "src", "1", "2"]]);
    assert!(woken(&rt, &a, LONG));
    assert_eq!(run(&e, &mut a, &[]), [Reply::bulk("2")]);
    // A's move pushed to dst: B is woken in turn.
    assert!(woken(&rt, &b, LONG));
    let pair = Reply::Array(vec![Reply::bulk("dst"), Reply::bulk("2")]);
    assert_eq!(run(&e, &mut b, &[]), [pair]);
    // A list swapped in from another database.
    run(&e, &mut a, &[&["BLPOP", "swapped", "0"]]);
    run(
        &e,
        &mut c,
        &[
            &["SELECT", "3"],
            &["RPUSH", "swapped", "s"],
            &["SWAPDB", "0", "3"],
        ],
    );
    assert!(woken(&rt, &a, LONG));
    let pair = Reply::Array(vec![Reply::bulk("swapped"), Reply::bulk("s")]);
    assert_eq!(run(&e, &mut a, &[]), [pair]);
    // A list renamed or copied to the key.
    run(&e, &mut a, &[&["BLPOP", "renamed", "0"]]);
    run(&e, &mut b, &[&["BLPOP", "copied", "0"]]);
    run(
        &e,
        &mut c,
        &[
            &["SELECT", "0"],
            &["RPUSH", "l", "r"],
            &["COPY", "l", "copied"],
            &["RENAME", "l", "renamed"],
        ],
    );
    assert!(woken(&rt, &a, LONG) && woken(&rt, &b, LONG));
    let pair = Reply::Array(vec![Reply::bulk("renamed"), Reply::bulk("r")]);
    assert_eq!(run(&e, &mut a, &[]), [pair]);
    let pair = Reply::Array(vec![Reply::bulk("copied"), Reply::bulk("r")]);
    assert_eq!(run(&e, &mut b, &[]), [pair]);
}
