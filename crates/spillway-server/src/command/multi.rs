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
//! EXEC runs its queue as one run of read-modify-write commands (`context`): the lock that
//! orders writes is held alone throughout, so no other client's write comes between its
//! commands, and its writes reach the log as one batch, which a crash keeps whole or drops
//! whole and which other clients' reads see whole or not at all.

use super::context::Ctx;
use super::spec::{flag, Command};
use super::Session;
use crate::resp::Reply;

type Result = spillway::Result<Reply>;

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Multi {
    queued: Vec<Queued>,
    /// A command was refused while queueing: EXEC runs nothing.
    refused: bool,
}

/// A queued command, found and checked already.
#[derive(Debug)]
struct Queued {
    id: usize,
    command: &'static Command,
    args: Vec<Vec<u8>>,
}

/// A command (`None`: an unknown one) was refused before it ran: the transaction being queued,
/// if any, fails at EXEC; the reply to give. As Redis: a refused EXEC itself discards the
/// transaction, saying why.
pub fn refused(session: &mut Session, command: Option<&Command>, refusal: Reply) -> Reply {
    if command.is_some_and(|c| c.name == "exec") {
        session.multi = None;
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
        Some(_) => Reply::ok(),
        None => Reply::error("ERR DISCARD without MULTI"),
    })
}

/// `EXEC`: each queued command's reply, in an array.
pub fn exec(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    let Some(multi) = ctx.session.multi.take() else {
        return Ok(Reply::error("ERR EXEC without MULTI"));
    };
    if multi.refused {
        return Ok(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let engine = ctx.engine;
    ctx.begin_transaction();
    let replies = multi
        .queued
        .iter()
        .map(|q| engine.call(ctx, q.id, q.command, &q.args))
        .collect();
    // If the append fails nothing of the transaction was written: its error is EXEC's reply.
    ctx.end_transaction()?;
    Ok(Reply::Array(replies))
}

/// `WATCH key [key ...]`.
pub fn watch(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    if ctx.session.multi.is_some() {
        return Ok(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    // Needs the engine's transactions (issue 29), which are not merged yet.
    Ok(Reply::error("ERR WATCH is not supported yet"))
}

/// `UNWATCH`.
pub fn unwatch(_: &mut Ctx, _: &[Vec<u8>]) -> Result {
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
}
