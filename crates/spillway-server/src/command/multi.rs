//! Transactions, as Redis has them: `MULTI` starts queueing, `EXEC` runs the queue, `DISCARD`
//! drops it.
//!
//! Between MULTI and EXEC a command is checked as it would be before running (arity,
//! authentication, whether MULTI allows it: `Engine::call`) and queued, answering `QUEUED`; a
//! command refused there (or one unknown) marks the transaction, and its EXEC answers
//! `EXECABORT` and runs nothing. Errors of the queued commands as they run are their replies in
//! EXEC's array, and the others run regardless: there is no rollback, as in Redis. MULTI, EXEC,
//! DISCARD, WATCH and QUIT run at once instead of being queued (`flag::NOT_QUEUED`).
//!
//! EXEC runs its queue under the lock that orders writes, held alone throughout, reading
//! through an engine transaction (`context`): no other client's write comes between its
//! commands, and its writes are committed as one batch — one log record, which a crash keeps
//! whole or drops whole and which other clients' reads see whole or not at all. A FLUSHDB or
//! FLUSHALL in the queue is a clear in that batch; a SWAPDB commits what came before it.
//!
//! **WATCH** begins an engine [`Transaction`] and reads the watched keys in it, in the
//! selected database: its snapshot is the WATCH. EXEC, before running anything, asks each
//! watch's transaction whether a commit would conflict (`Transaction::check`): one does if
//! anything wrote a watched key since its WATCH — another client, or this one before MULTI —
//! and EXEC then answers a null array and runs nothing, as Redis. The check is made under the
//! lock held alone, so no write comes between it and the queue. A watched key that expires
//! before EXEC fails it too, as in Redis (its expiry deletes it: a change): WATCH notes the
//! earliest expiry of the keys it read, which no write check would see pass. Where this
//! differs from Redis
//! (each a failed EXEC where Redis would run it, never the reverse): a flush or swap of a
//! watched database fails the watch even if the watched keys were in neither database
//! (a clear conflicts with every read of its keyspace; `databases`: a generation per
//! database); and keys share the engine's conflict slots, so
//! about one write to another key in 2^18 since the WATCH fails it too.

use std::time::SystemTime;

use spillway::{Expiry, Transaction};

use super::context::Ctx;
use super::databases::Space;
use super::spec::{flag, Command};
use super::Session;
use crate::resp::Reply;

type Result = super::CmdResult;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Multi {
    queued: Vec<Queued>,
    /// A command was refused while queueing: EXEC runs nothing.
    refused: bool,
    /// The queue's memory as Redis counts it for `CLIENT LIST`'s `multi-mem`: each queued
    /// command's arguments and a pointer per argument.
    bytes: usize,
}

impl Multi {
    /// The commands queued and their memory, as `CLIENT LIST` shows them.
    pub fn size(&self) -> (usize, usize) {
        (self.queued.len(), self.bytes)
    }
}

/// A queued command, found and checked already.
#[derive(Debug)]
struct Queued {
    id: usize,
    command: &'static Command,
    args: Vec<Vec<u8>>,
}

/// What a client watches: a transaction per `WATCH`, which read its keys at its snapshot (one
/// per WATCH rather than one for all: a key is watched from its own WATCH on, as in Redis),
/// the generation of each database it watched in then, and the earliest time one of the keys
/// it found expires.
#[derive(Debug, Default)]
pub struct Watch {
    reads: Vec<Transaction>,
    generations: Vec<(usize, u64)>,
    expires: Option<SystemTime>,
}

impl Watch {
    /// Whether nothing watched was written since its WATCH (nor its database flushed or
    /// swapped, nor expired). The caller holds the lock that orders writes alone.
    fn unchanged(&self, ctx: &Ctx) -> spillway::Result<bool> {
        if self.expires.is_some_and(|t| t <= ctx.engine.now()) {
            return Ok(false);
        }
        let dbs = &ctx.engine.dbs;
        if self
            .generations
            .iter()
            .any(|&(n, g)| dbs.generation(n) != g)
        {
            return Ok(false);
        }
        for tx in &self.reads {
            match tx.check() {
                Ok(()) => {}
                Err(spillway::Error::Conflict) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

/// A command (`None`: an unknown one) was refused before it ran: the transaction being queued,
/// if any, fails at EXEC; the reply to give. As Redis: a refused EXEC itself discards the
/// transaction, saying why.
pub fn refused(session: &mut Session, command: Option<&Command>, refusal: Reply) -> Reply {
    if command.is_some_and(|c| c.name == "exec") {
        session.multi = None;
        session.watch = None;
        if let Reply::Error(e) = &refusal {
            let why = e.strip_prefix("ERR ").unwrap_or(e);
            return Reply::error(format!("EXECABORT Transaction discarded because of: {why}"));
        }
    }
    if let Some(multi) = &mut session.multi {
        multi.refused = true;
    }
    refusal
}

/// Queue the command if a transaction is being queued and it is one that queues; whether it
/// was.
pub fn queue(
    session: &mut Session,
    id: usize,
    command: &'static Command,
    args: &[Vec<u8>],
) -> bool {
    match &mut session.multi {
        Some(multi) if !command.has(flag::NOT_QUEUED) => {
            let args = args.to_vec();
            let pointers = args.len() * std::mem::size_of::<usize>();
            multi.bytes += args.iter().map(Vec::len).sum::<usize>() + pointers;
            multi.queued.push(Queued { id, command, args });
            true
        }
        _ => false,
    }
}

/// `MULTI`.
pub fn multi(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    if ctx.session.multi.is_some() {
        // As Redis: an error, but the transaction goes on unharmed.
        return Ok(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Reply::ok())
}

/// `DISCARD`.
pub fn discard(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(match ctx.session.multi.take() {
        Some(_) => {
            ctx.session.watch = None;
            Reply::ok()
        }
        None => Reply::error("ERR DISCARD without MULTI"),
    })
}

/// `EXEC`: each queued command's reply, in an array; a null array, running nothing, if a
/// watched key changed.
pub fn exec(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    let Some(multi) = ctx.session.multi.take() else {
        return Ok(Reply::error("ERR EXEC without MULTI"));
    };
    // EXEC ends the watch, whatever happens.
    let watch = ctx.session.watch.take();
    if multi.refused {
        return Ok(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let engine = ctx.engine;
    ctx.begin_transaction();
    match watch.as_ref().map_or(Ok(true), |w| w.unchanged(ctx)) {
        Ok(true) => {}
        Ok(false) => {
            ctx.abort_transaction();
            return Ok(Reply::NullArray);
        }
        Err(e) => {
            ctx.abort_transaction();
            return Err(e.into());
        }
    }
    drop(watch);
    let replies = multi
        .queued
        .iter()
        .map(|q| engine.call(ctx, q.id, q.command, &q.args))
        .collect();
    // If the commit fails nothing of the transaction was written (but what a swap in it
    // committed before it): its error is EXEC's reply.
    match ctx.end_transaction() {
        Ok(()) => Ok(Reply::Array(replies)),
        // Nothing else writes while EXEC holds the lock, so this is not expected; if it comes,
        // nothing was applied, which a null array says, as for a watch's conflict.
        Err(spillway::Error::Conflict) => Ok(Reply::NullArray),
        Err(e) => Err(e.into()),
    }
}

/// `WATCH key [key ...]`: EXEC runs nothing if one of them is written before it.
pub fn watch(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if ctx.session.multi.is_some() {
        return Ok(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    // The pipeline's writes before the WATCH are not watched: they go in first. No flush or
    // swap comes between the generation noted and the snapshot.
    let _no_flush = ctx.settled_shared();
    let engine = ctx.engine;
    let n = ctx.session.db;
    // A database with no keyspace gets one, so that a write to it after the WATCH is a write
    // to a keyspace the watch read. A key is watched where a string and where another type's
    // metadata is kept: every write of any type rewrites one or the other.
    let spaces = [Space::Strings, Space::Meta];
    let handles = spaces
        .iter()
        .map(|&space| engine.dbs.create(&engine.db, n, space))
        .collect::<spillway::Result<Vec<_>>>()?;
    let generation = engine.dbs.generation(n);
    let mut tx = engine.db.transaction();
    let mut expires = None;
    for key in &args[1..] {
        for ks in &handles {
            if let Some((_, Expiry::At(t))) = tx.get_with_expiry(ks, key)? {
                expires = Some(expires.map_or(t, |e: SystemTime| e.min(t)));
            }
        }
    }
    let watch = ctx.session.watch.get_or_insert_with(Watch::default);
    watch.reads.push(tx);
    watch.generations.push((n, generation));
    watch.expires = match (watch.expires, expires) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Ok(Reply::ok())
}

/// `UNWATCH`.
pub fn unwatch(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    ctx.session.watch = None;
    Ok(Reply::ok())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;
    use crate::resp::Reply;

    #[test]
    fn a_queue_runs_at_exec_and_a_refusal_while_queueing_aborts_it() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let queued = Reply::status("QUEUED");
        let out = run(
            &e,
            &mut s,
            &[
                &["MULTI"],
                &["SET", "a", "x"],
                &["INCR", "a"],
                &["GET", "a"],
                &["EXEC"],
                &["MULTI"],
                &["SET", "a", "y"],
                &["GET"],
                &["EXEC"],
                &["GET", "a"],
            ],
        );
        assert_eq!(
            out[..4],
            [Reply::ok(), queued.clone(), queued.clone(), queued]
        );
        assert_eq!(
            out[4],
            Reply::Array(vec![
                Reply::ok(),
                Reply::error("ERR value is not an integer or out of range"),
                Reply::bulk("x"),
            ])
        );
        assert_eq!(
            out[7],
            Reply::error("ERR wrong number of arguments for 'get' command")
        );
        assert_eq!(
            out[8],
            Reply::error("EXECABORT Transaction discarded because of previous errors.")
        );
        assert_eq!(out[9], Reply::bulk("x"), "the aborted SET did not run");
        assert!(s.multi.is_none());
    }

    #[test]
    fn a_transactions_writes_are_one_append_and_wait_for_the_fsync() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let groups = || e.db().stats().write_groups;
        let before = groups();
        let reqs = |e: &_, s: &mut _| {
            let mut out = Vec::new();
            let requests = [
                &["MULTI"][..],
                &["SET", "a", "1"],
                &["INCR", "a"],
                &["SET", "b", "1"],
                &["DEL", "b"],
                &["EXEC"],
                &["MULTI"],
                &["GET", "a"],
                &["EXEC"],
            ];
            let requests = requests
                .iter()
                .map(|r| r.iter().map(|a| a.as_bytes().to_vec()).collect())
                .collect();
            let wrote = super::super::Engine::run(e, s, requests, &mut out);
            (out, wrote)
        };
        let (out, wrote) = reqs(&e, &mut s);
        assert_eq!(groups() - before, 1);
        assert_eq!(wrote, [5], "only the EXEC that wrote waits for an fsync");
        let Reply::Array(replies) = &out[5] else {
            panic!("{:?}", out[5])
        };
        assert_eq!(replies[1], Reply::Integer(2));
        assert_eq!(out[8], Reply::Array(vec![Reply::bulk("2")]));
    }

    #[test]
    fn no_other_clients_write_comes_between_a_transactions_commands() {
        let (_d, e) = engine();
        std::thread::scope(|scope| {
            let e = &e;
            scope.spawn(move || {
                let mut s = Session::new(1);
                for i in 0..300 {
                    let i = i.to_string();
                    let out = run(
                        e,
                        &mut s,
                        &[&["MULTI"], &["SET", "a", &i], &["SET", "b", &i], &["EXEC"]],
                    );
                    assert_eq!(out[3], Reply::Array(vec![Reply::ok(), Reply::ok()]));
                }
            });
            for t in 2..4 {
                scope.spawn(move || {
                    let mut s = Session::new(t);
                    for _ in 0..300 {
                        let out = run(
                            e,
                            &mut s,
                            &[
                                &["MULTI"],
                                &["GET", "a"],
                                &["INCR", "n"],
                                &["GET", "b"],
                                &["EXEC"],
                            ],
                        );
                        let Reply::Array(replies) = &out[4] else {
                            panic!("{out:?}")
                        };
                        assert_eq!(replies[0], replies[2], "a and b read at one point in time");
                        // Without a transaction: a read sees both writes of one, or neither.
                        let out = run(e, &mut s, &[&["MGET", "a", "b"]]);
                        let Reply::Array(both) = &out[0] else {
                            panic!("{out:?}")
                        };
                        assert_eq!(both[0], both[1]);
                    }
                });
            }
        });
        let mut s = Session::new(9);
        assert_eq!(run(&e, &mut s, &[&["GET", "n"]]), [Reply::bulk("600")]);
    }

    /// `reqs` on `s`: the replies.
    fn on(e: &super::super::Engine, s: &mut Session, reqs: &[&[&str]]) -> Vec<Reply> {
        run(e, s, reqs)
    }

    #[test]
    fn a_watched_key_written_by_anyone_since_makes_exec_run_nothing() {
        let (_d, e) = engine();
        let (mut me, mut other) = (Session::new(1), Session::new(2));
        let set_x =
            |e: &_, me: &mut Session| on(e, me, &[&["MULTI"], &["SET", "k", "x"], &["EXEC"]]);
        let ran = Reply::Array(vec![Reply::ok()]);
        on(&e, &mut other, &[&["SET", "k", "0"]]);
        // Another client's blind SET.
        on(&e, &mut me, &[&["WATCH", "k", "j"]]);
        on(&e, &mut other, &[&["SET", "k", "1"]]);
        assert_eq!(set_x(&e, &mut me)[2], Reply::NullArray);
        assert_eq!(on(&e, &mut me, &[&["GET", "k"]]), [Reply::bulk("1")]);
        // EXEC ended the watch: the next transaction runs.
        assert_eq!(set_x(&e, &mut me)[2], ran);
        // Unchanged: it runs.
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(&e, &mut other, &[&["GET", "k"], &["SET", "other", "1"]]);
        assert_eq!(set_x(&e, &mut me)[2], ran);
        // The client's own write before MULTI, in the same pipeline.
        let out = on(
            &e,
            &mut me,
            &[
                &["WATCH", "k"],
                &["INCR", "j"],
                &["MULTI"],
                &["SET", "k", "y"],
                &["EXEC"],
            ],
        );
        assert_eq!(out[4], Reply::Array(vec![Reply::ok()]), "j is not watched");
        let out = on(
            &e,
            &mut me,
            &[
                &["WATCH", "k"],
                &["SET", "k", "z"],
                &["MULTI"],
                &["SET", "k", "y"],
                &["EXEC"],
            ],
        );
        assert_eq!(out[4], Reply::NullArray);
        // UNWATCH and DISCARD forget the watch.
        on(&e, &mut me, &[&["WATCH", "k"], &["UNWATCH"]]);
        on(&e, &mut other, &[&["SET", "k", "2"]]);
        assert_eq!(set_x(&e, &mut me)[2], ran);
        on(&e, &mut me, &[&["WATCH", "k"], &["MULTI"], &["DISCARD"]]);
        on(&e, &mut other, &[&["SET", "k", "3"]]);
        assert_eq!(set_x(&e, &mut me)[2], ran);
        // As Redis: a DEL of a missing key changes nothing, a DEL of a present one does.
        on(&e, &mut me, &[&["WATCH", "gone"]]);
        on(
            &e,
            &mut other,
            &[
                &["DEL", "gone"],
                &["GETDEL", "gone"],
                &["SET", "k", "v", "XX", "NX"],
            ],
        );
        assert_eq!(set_x(&e, &mut me)[2], ran);
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(&e, &mut other, &[&["DEL", "k"]]);
        assert_eq!(set_x(&e, &mut me)[2], Reply::NullArray);
    }

    #[test]
    fn a_watched_key_that_expires_before_exec_makes_it_run_nothing() {
        let (_d, e, clock) = super::super::tests::engine_at_2030();
        let mut s = Session::new(1);
        let exec = |e: &_, s: &mut Session| on(e, s, &[&["MULTI"], &["SET", "x", "1"], &["EXEC"]]);
        let ran = Reply::Array(vec![Reply::ok()]);
        on(
            &e,
            &mut s,
            &[
                &["SET", "soon", "v", "PX", "1000"],
                &["SET", "late", "v", "PX", "5000"],
            ],
        );
        // Still there at EXEC: it runs.
        on(&e, &mut s, &[&["WATCH", "soon", "late", "absent"]]);
        clock.advance(std::time::Duration::from_millis(999));
        assert_eq!(exec(&e, &mut s)[2], ran);
        // Gone by EXEC: nothing runs, as Redis (the earlier of two watches counts).
        on(&e, &mut s, &[&["WATCH", "late"], &["WATCH", "soon"]]);
        clock.advance(std::time::Duration::from_millis(1));
        assert_eq!(exec(&e, &mut s)[2], Reply::NullArray);
        // Gone before the WATCH: nothing changed since, it runs.
        on(&e, &mut s, &[&["WATCH", "soon"]]);
        assert_eq!(exec(&e, &mut s)[2], ran);
    }

    #[test]
    fn a_watch_is_of_a_key_in_a_database() {
        let (_d, e) = engine();
        let (mut me, mut other) = (Session::new(1), Session::new(2));
        let incr = |e: &_, me: &mut Session| on(e, me, &[&["MULTI"], &["INCR", "k"], &["EXEC"]]);
        on(&e, &mut me, &[&["SELECT", "2"], &["WATCH", "k"]]);
        // The same key in another database: not watched.
        on(&e, &mut other, &[&["SET", "k", "5"]]);
        assert_eq!(incr(&e, &mut me)[2], Reply::Array(vec![Reply::Integer(1)]));
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(
            &e,
            &mut other,
            &[&["SELECT", "2"], &["INCR", "k"], &["SELECT", "0"]],
        );
        assert_eq!(incr(&e, &mut me)[2], Reply::NullArray);
        // A watched database flushed: its keys were deleted.
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(&e, &mut other, &[&["FLUSHALL"]]);
        assert_eq!(incr(&e, &mut me)[2], Reply::NullArray);
        // A flush of an empty database changes nothing.
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(
            &e,
            &mut other,
            &[&["SELECT", "2"], &["FLUSHDB"], &["SELECT", "0"]],
        );
        assert_eq!(incr(&e, &mut me)[2], Reply::Array(vec![Reply::Integer(1)]));
        // A key watched in a database flushed since: written again after the flush.
        on(&e, &mut me, &[&["WATCH", "k"]]);
        on(
            &e,
            &mut other,
            &[&["SELECT", "2"], &["FLUSHDB"], &["SET", "k", "7"]],
        );
        assert_eq!(incr(&e, &mut me)[2], Reply::NullArray);
        assert_eq!(on(&e, &mut me, &[&["GET", "k"]]), [Reply::bulk("7")]);
    }

    #[test]
    fn a_flush_in_a_transaction_is_part_of_its_one_append_and_reads_after_it_see_it() {
        for order in [spillway::KeyOrder::Hashed, spillway::KeyOrder::Ordered] {
            let dir = tempfile::tempdir().unwrap();
            let opts = spillway::Options::default().key_order(Some(order));
            let db = spillway::Db::open(dir.path(), opts).unwrap();
            let e = super::super::Engine::new(db, &crate::server::Config::new(dir.path())).unwrap();
            let mut s = Session::new(1);
            on(
                &e,
                &mut s,
                &[
                    &["MSET", "a", "1", "user:1", "x", "n", "10"],
                    &["SELECT", "2"],
                    &["SET", "b", "2"],
                    &["SELECT", "0"],
                ],
            );
            e.db().flush().unwrap(); // some on disk
            on(&e, &mut s, &[&["SET", "user:2", "y"]]);
            let groups = || e.db().stats().write_groups;
            let before = groups();
            let out = on(
                &e,
                &mut s,
                &[
                    &["MULTI"],
                    &["SET", "x", "1"],
                    &["FLUSHDB"],
                    &["MGET", "x", "a", "user:1"],
                    &["SET", "user:3", "z"],
                    &["SET", "y", "2"],
                    &["INCR", "y"],
                    &["INCR", "n"],
                    &["DEL", "y", "x"],
                    &["SET", "y", "4", "PX", "100000"],
                    &["KEYS", "*"],
                    &["KEYS", "user:*"],
                    &["SCAN", "0", "COUNT", "100"],
                    &["DBSIZE"],
                    &["TTL", "y"],
                    &["EXISTS", "a", "y", "n"],
                    &["SELECT", "2"],
                    &["GET", "b"],
                    &["FLUSHALL"],
                    &["GET", "b"],
                    &["SET", "c", "3"],
                    &["SELECT", "0"],
                    &["GET", "y"],
                    &["SET", "z", "5"],
                    &["EXEC"],
                ],
            );
            assert_eq!(groups() - before, 1, "{order}: one append");
            let Reply::Array(r) = &out[24] else {
                panic!("{out:?}")
            };
            let null3 = Reply::Array(vec![Reply::Null; 3]);
            assert_eq!(
                r[..8],
                [
                    Reply::ok(),
                    Reply::ok(),
                    null3,
                    Reply::ok(),
                    Reply::ok(),
                    Reply::Integer(3),
                    Reply::Integer(1),
                    Reply::Integer(1)
                ],
                "{order}"
            );
            let sorted = |r: &Reply| {
                let Reply::Array(a) = r else { panic!("{r:?}") };
                let mut a: Vec<String> = a.iter().map(|r| format!("{r:?}")).collect();
                a.sort();
                a
            };
            let names = |ks: &[&str]| {
                ks.iter()
                    .map(|k| format!("{:?}", Reply::bulk(*k)))
                    .collect::<Vec<_>>()
            };
            assert_eq!(r[8], Reply::ok());
            assert_eq!(sorted(&r[9]), names(&["n", "user:3", "y"]), "{order}");
            assert_eq!(sorted(&r[10]), names(&["user:3"]), "{order}");
            let Reply::Array(scan) = &r[11] else {
                panic!("{r:?}")
            };
            assert_eq!(scan[0], Reply::bulk("0"));
            assert_eq!(sorted(&scan[1]), names(&["n", "user:3", "y"]), "{order}");
            assert_eq!(r[12], Reply::Integer(3));
            assert_eq!(r[13], Reply::Integer(100));
            assert_eq!(r[14], Reply::Integer(2));
            assert_eq!(
                r[16..],
                [
                    Reply::bulk("2"),
                    Reply::ok(),
                    Reply::Null,
                    Reply::ok(),
                    Reply::ok(),
                    Reply::Null,
                    Reply::ok()
                ],
                "{order}"
            );
            // After EXEC: the queue's writes after its last flush of each database, no more.
            let out = on(
                &e,
                &mut s,
                &[
                    &["KEYS", "*"],
                    &["DBSIZE"],
                    &["SELECT", "2"],
                    &["KEYS", "*"],
                    &["SELECT", "0"],
                ],
            );
            assert_eq!(out[0], Reply::Array(vec![Reply::bulk("z")]), "{order}");
            assert_eq!(out[1], Reply::Integer(1));
            assert_eq!(out[3], Reply::Array(vec![Reply::bulk("c")]), "{order}");
            // A transaction that flushes a database and swaps it: what it wrote goes first.
            let out = on(
                &e,
                &mut s,
                &[
                    &["MULTI"],
                    &["FLUSHDB"],
                    &["SET", "zero", "0"],
                    &["SWAPDB", "0", "2"],
                    &["KEYS", "*"],
                    &["SELECT", "2"],
                    &["KEYS", "*"],
                    &["EXEC"],
                ],
            );
            let Reply::Array(r) = &out[7] else {
                panic!("{out:?}")
            };
            assert_eq!(r[3], Reply::Array(vec![Reply::bulk("c")]), "{order}");
            assert_eq!(r[5], Reply::Array(vec![Reply::bulk("zero")]), "{order}");
        }
    }

    #[test]
    fn other_clients_see_a_transaction_with_a_flush_whole_or_not_at_all() {
        let (_d, e) = engine();
        std::thread::scope(|scope| {
            let e = &e;
            scope.spawn(move || {
                let mut s = Session::new(1);
                for i in 0..300 {
                    let i = i.to_string();
                    let out = on(
                        e,
                        &mut s,
                        &[
                            &["MULTI"],
                            &["SET", "before", &i],
                            &["FLUSHDB"],
                            &["SET", "a", &i],
                            &["SET", "b", &i],
                            &["EXEC"],
                        ],
                    );
                    assert!(
                        matches!(&out[5], Reply::Array(r) if r.len() == 4),
                        "{out:?}"
                    );
                }
            });
            for t in 2..4 {
                scope.spawn(move || {
                    let mut s = Session::new(t);
                    for _ in 0..300 {
                        let out = on(e, &mut s, &[&["MGET", "before", "a", "b"], &["DBSIZE"]]);
                        let Reply::Array(got) = &out[0] else {
                            panic!("{out:?}")
                        };
                        assert_eq!(got[0], Reply::Null, "the flush came after it");
                        assert_eq!(got[1], got[2]);
                        let Reply::Integer(n) = out[1] else {
                            panic!("{out:?}")
                        };
                        assert!(n == 0 || n == 2, "{n}");
                    }
                });
            }
        });
    }

    #[test]
    fn select_in_a_transaction_takes_effect_in_order_and_its_writes_are_one_append() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let groups = || e.db().stats().write_groups;
        on(&e, &mut s, &[&["SET", "a", "zero"]]);
        let before = groups();
        let out = on(
            &e,
            &mut s,
            &[
                &["MULTI"],
                &["SELECT", "1"],
                &["SET", "a", "one"],
                &["INCR", "n"],
                &["KEYS", "*"],
                &["DBSIZE"],
                &["SELECT", "0"],
                &["GET", "a"],
                &["SELECT", "1"],
                &["EXEC"],
                &["GET", "a"],
            ],
        );
        let Reply::Array(replies) = &out[9] else {
            panic!("{out:?}")
        };
        assert_eq!(replies[2], Reply::Integer(1));
        let Reply::Array(keys) = &replies[3] else {
            panic!("{replies:?}")
        };
        assert_eq!(keys.len(), 2, "KEYS sees the transaction's writes");
        assert_eq!(replies[4], Reply::Integer(2));
        assert_eq!(replies[6], Reply::bulk("zero"));
        assert_eq!(
            out[10],
            Reply::bulk("one"),
            "still in database 1 after EXEC"
        );
        assert_eq!(groups() - before, 1, "writes to two databases, one commit");
    }

    #[test]
    fn increments_under_watch_from_many_clients_lose_none() {
        let (_d, e) = engine();
        let (clients, each) = (4, 60);
        let retries = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for t in 0..clients {
                let (e, retries) = (&e, &retries);
                scope.spawn(move || {
                    let mut s = Session::new(t);
                    for _ in 0..each {
                        loop {
                            // Redis's optimistic increment: read, compute, write if unchanged.
                            let out = on(e, &mut s, &[&["WATCH", "c"], &["GET", "c"]]);
                            let now = match &out[1] {
                                Reply::Bulk(v) => {
                                    String::from_utf8_lossy(v).parse::<u64>().unwrap()
                                }
                                _ => 0,
                            };
                            std::thread::yield_now(); // let others come between
                            let next = (now + 1).to_string();
                            let out = on(e, &mut s, &[&["MULTI"], &["SET", "c", &next], &["EXEC"]]);
                            match &out[2] {
                                Reply::NullArray => {
                                    retries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                }
                                Reply::Array(r) if r == &[Reply::ok()] => break,
                                other => panic!("{other:?}"),
                            }
                        }
                    }
                });
            }
        });
        let mut s = Session::new(99);
        let total = (clients * each).to_string();
        assert_eq!(on(&e, &mut s, &[&["GET", "c"]]), [Reply::bulk(total)]);
        eprintln!("{} retries", retries.into_inner());
    }
}
