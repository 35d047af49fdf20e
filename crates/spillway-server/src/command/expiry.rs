//! A key's time to live: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with Redis 7's `NX`,
//! `XX`, `GT`, `LT`), `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`, `PERSIST`.
//!
//! The engine keeps each key's expiry and hides a key from every read once it has passed
//! (`spillway::Expiry`), so an expired key is absent to every command without anything here;
//! these commands read and change that expiry, with Redis 7.0's replies, errors and order of
//! checks (`expireGenericCommand`, `ttlGenericCommand`, `persistCommand`). Times are Redis's
//! milliseconds since the epoch (`time`), "now" the store's clock.

use spillway::Expiry;

use super::context::{Ctx, Entry};
use super::set::c_str;
use super::{integer, not_an_integer, time};
use crate::resp::Reply;

type Result = super::CmdResult;

/// `EXPIRE key seconds [NX | XX | GT | LT]`.
pub fn expire(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    expire_as(ctx, args, "expire", Unit::Seconds, Base::Now)
}

/// `PEXPIRE key milliseconds [NX | XX | GT | LT]`.
pub fn pexpire(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    expire_as(ctx, args, "pexpire", Unit::Millis, Base::Now)
}

/// `EXPIREAT key unix-time-seconds [NX | XX | GT | LT]`.
pub fn expireat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    expire_as(ctx, args, "expireat", Unit::Seconds, Base::Epoch)
}

/// `PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]`.
pub fn pexpireat(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    expire_as(ctx, args, "pexpireat", Unit::Millis, Base::Epoch)
}

/// `TTL key`: seconds left, rounded; -1 if it has no expiry, -2 if it is absent.
pub fn ttl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    ttl_as(ctx, &args[1], Unit::Seconds, Base::Now)
}

/// `PTTL key`: as `TTL`, in milliseconds.
pub fn pttl(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    ttl_as(ctx, &args[1], Unit::Millis, Base::Now)
}

/// `EXPIRETIME key`: when it expires, in seconds since the epoch (rounded, as Redis does).
pub fn expiretime(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    ttl_as(ctx, &args[1], Unit::Seconds, Base::Epoch)
}

/// `PEXPIRETIME key`: when it expires, in milliseconds since the epoch.
pub fn pexpiretime(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    ttl_as(ctx, &args[1], Unit::Millis, Base::Epoch)
}

/// `PERSIST key`: 1 if it took the key's expiry away, 0 if it had none or is absent.
pub fn persist(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let key = &args[1];
    Ok(Reply::Integer(match ctx.entry(key)? {
        Some(
            e @ Entry {
                expiry: Expiry::At(_),
                ..
            },
        ) => {
            ctx.retime_in(e.space, key, &e.value, e.expiry, Expiry::Never)?;
            1
        }
        _ => 0,
    }))
}

#[derive(Clone, Copy)]
enum Unit {
    Seconds,
    Millis,
}

/// What a time is counted from: now (a TTL) or the epoch (a point in time).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Now,
    Epoch,
}

/// EXPIRE's conditions: on the key having no expiry (NX) or one (XX), or the new one being
/// later (GT) or earlier (LT) than the current, where none counts as infinitely late.
#[derive(Clone, Copy, Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    /// The conditions in `args`, or Redis's error: an unknown word (named up to a NUL, as C
    /// prints it), NX with any other, or GT with LT.
    fn parse(args: &[Vec<u8>]) -> std::result::Result<Conditions, Reply> {
        let mut c = Conditions::default();
        for arg in args {
            let word = c_str(arg);
            match word.to_ascii_uppercase().as_slice() {
                b"NX" => c.nx = true,
                b"XX" => c.xx = true,
                b"GT" => c.gt = true,
                b"LT" => c.lt = true,
                _ => {
                    let word = String::from_utf8_lossy(word);
                    return Err(Reply::error(format!("ERR Unsupported option {word}")));
                }
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Reply::error(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Reply::error(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// Whether a key expiring at `current` (ms; `None`: never) may be given `when`.
    fn allow(self, current: Option<i64>, when: i64) -> bool {
        !(self.nx && current.is_some()
            || self.xx && current.is_none()
            || self.gt && current.is_none_or(|c| when <= c)
            || self.lt && current.is_some_and(|c| when >= c))
    }
}

/// `args` as `command` (`EXPIRE` and its kin): the time in `unit` from `base`. As Redis
/// checks, in order: the options, the integer, its overflow (an error), the key (0 if
/// absent), the conditions (0 if one fails); then a time already past deletes the key, and
/// either way the reply is 1.
fn expire_as(ctx: &mut Ctx, args: &[Vec<u8>], command: &str, unit: Unit, base: Base) -> Result {
    let conditions = match Conditions::parse(&args[3..]) {
        Ok(c) => c,
        Err(refused) => return Ok(refused),
    };
    let Some(n) = integer(&args[2]) else {
        return Ok(not_an_integer());
    };
    let now = time::millis(ctx.engine.now());
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000),
        Unit::Millis => Some(n),
    };
    let from = match base {
        Base::Now => now,
        Base::Epoch => 0,
    };
    let Some(when) = ms.and_then(|ms| ms.checked_add(from)) else {
        return Ok(Reply::error(format!(
            "ERR invalid expire time in '{command}' command"
        )));
    };
    let key = &args[1];
    let Some(e) = ctx.entry(key)? else {
        return Ok(Reply::Integer(0));
    };
    if !conditions.allow(time::deadline(e.expiry), when) {
        return Ok(Reply::Integer(0));
    }
    if when <= now {
        ctx.remove(key, e.space, &e.value)?;
    } else {
        ctx.retime_in(e.space, key, &e.value, e.expiry, Expiry::At(time::at(when)))?;
    }
    Ok(Reply::Integer(1))
}

/// `key`'s expiry in `unit`, from `base` (from now: what is left, at least 0); -1 if it has
/// none, -2 if the key is absent.
fn ttl_as(ctx: &mut Ctx, key: &[u8], unit: Unit, base: Base) -> Result {
    let Some(expiry) = ctx.read_expiry(key)? else {
        return Ok(Reply::Integer(-2));
    };
    let Some(at) = time::deadline(expiry) else {
        return Ok(Reply::Integer(-1));
    };
    let ms = match base {
        Base::Now => at.saturating_sub(time::millis(ctx.engine.now())),
        Base::Epoch => at,
    }
    .max(0);
    Ok(Reply::Integer(match unit {
        Unit::Millis => ms,
        // Rounded to the nearest second, as Redis: (ms + 500) / 1000, without its overflow.
        Unit::Seconds => ((i128::from(ms) + 500) / 1000) as i64,
    }))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tests::{engine, engine_at_2030, run};
    use super::super::Session;
    use super::*;

    /// 2030-01-01 in milliseconds since the epoch: `engine_at_2030`'s clock at the start.
    const START: i64 = 1_893_456_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn ttls_count_down_by_the_stores_clock() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v", "PX", "100000"],
                &["PTTL", "k"],
                &["PEXPIRETIME", "k"],
            ],
        );
        assert_eq!(
            out[1..],
            [Reply::Integer(100_000), Reply::Integer(START + 100_000)]
        );
        clock.advance(ms(40_499));
        let out = run(&e, &mut s, &[&["PTTL", "k"], &["TTL", "k"]]);
        assert_eq!(out, [Reply::Integer(59_501), Reply::Integer(60)], "rounded");
        clock.advance(ms(59_500));
        let out = run(&e, &mut s, &[&["PTTL", "k"], &["GET", "k"]]);
        assert_eq!(out, [Reply::Integer(1), Reply::bulk("v")]);
        clock.advance(ms(1));
        let out = run(&e, &mut s, &[&["PTTL", "k"], &["GET", "k"], &["TTL", "k"]]);
        assert_eq!(
            out,
            [Reply::Integer(-2), Reply::Null, Reply::Integer(-2)],
            "gone at its time"
        );
    }

    #[test]
    fn an_expired_key_is_absent_to_every_command() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        let keys = [
            "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
        ];
        for k in keys {
            run(&e, &mut s, &[&["SET", k, "7", "PX", "1000"]]);
        }
        run(&e, &mut s, &[&["SET", "kept", "v"]]);
        e.db().flush().unwrap(); // some on disk, some in the buffer
        run(&e, &mut s, &[&["SET", "z", "7", "PX", "1000"]]);
        clock.advance(ms(1000));
        let out = run(
            &e,
            &mut s,
            &[
                &["GET", "a"],
                &["MGET", "a", "kept", "z"],
                &["EXISTS", "a", "b", "z", "kept"],
                &["STRLEN", "a"],
                &["DBSIZE"],
                &["KEYS", "*"],
                &["SCAN", "0", "COUNT", "100"],
                &["INCR", "b"],
                &["APPEND", "c", "x"],
                &["SETNX", "d", "x"],
                &["MSETNX", "e", "x", "f", "y"],
                &["SET", "g", "x", "NX"],
                &["SET", "h", "x", "XX"],
                &["GETDEL", "i"],
                &["DEL", "j", "z"],
                &["EXPIRE", "k", "100"],
                &["PERSIST", "l"],
                &["GETEX", "m", "PERSIST"],
                &["SET", "m", "x", "GET"],
                &["TTL", "b"],
                &["INCRBYFLOAT", "z", "0.5"],
            ],
        );
        let n = Reply::Integer;
        assert_eq!(out[0], Reply::Null);
        assert_eq!(
            out[1],
            Reply::Array(vec![Reply::Null, Reply::bulk("v"), Reply::Null])
        );
        assert_eq!(out[2..5], [n(1), n(0), n(1)]);
        assert_eq!(out[5], Reply::Array(vec![Reply::bulk("kept")]));
        assert_eq!(
            out[6],
            Reply::Array(vec![
                Reply::bulk("0"),
                Reply::Array(vec![Reply::bulk("kept")])
            ])
        );
        assert_eq!(out[7..11], [n(1), n(1), n(1), n(1)]);
        assert_eq!(out[11..13], [Reply::ok(), Reply::Null]);
        assert_eq!(out[13..18], [Reply::Null, n(0), n(0), n(0), Reply::Null]);
        assert_eq!(out[18], Reply::Null, "GET of the expired key");
        assert_eq!(
            out[19],
            n(-1),
            "INCR of an expired key starts a key without one"
        );
        assert_eq!(out[20], Reply::bulk("0.5"));
    }

    #[test]
    fn changes_in_place_keep_the_expiry_until_it_comes() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        let at = (START + 5000).to_string();
        let out = run(
            &e,
            &mut s,
            &[
                &["MSET", "n", "1", "s", "x", "f", "1.5"],
                &["PEXPIREAT", "n", &at],
                &["PEXPIREAT", "s", &at],
                &["PEXPIREAT", "f", &at],
                &["INCR", "n"],
                &["INCRBY", "n", "5"],
                &["DECR", "n"],
                &["DECRBY", "n", "2"],
                &["APPEND", "s", "y"],
                &["INCRBYFLOAT", "f", "1"],
                &["SET", "s", "z", "KEEPTTL"],
                &["PEXPIRETIME", "n"],
                &["PEXPIRETIME", "s"],
                &["PEXPIRETIME", "f"],
                &["MGET", "n", "s", "f"],
            ],
        );
        let at = Reply::Integer(START + 5000);
        assert_eq!(out[11..14], [at.clone(), at.clone(), at]);
        let values = ["4", "z", "2.5"].map(Reply::bulk).to_vec();
        assert_eq!(out[14], Reply::Array(values));
        clock.advance(ms(5000));
        let out = run(&e, &mut s, &[&["MGET", "n", "s", "f"], &["DBSIZE"]]);
        assert_eq!(out[0], Reply::Array(vec![Reply::Null; 3]));
        assert_eq!(out[1], Reply::Integer(0));
    }

    #[test]
    fn a_staged_write_whose_time_has_passed_reads_as_absent() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        // One pipeline, one staged run: the SET's write is not in the store when INCR reads.
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "word", "NX", "PXAT", "1"],
                &["INCR", "k"],
                &["TTL", "k"],
            ],
        );
        assert_eq!(out, [Reply::ok(), Reply::Integer(1), Reply::Integer(-1)]);
    }

    #[test]
    fn a_key_given_a_later_expiry_or_none_outlives_its_first_one() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        run(
            &e,
            &mut s,
            &[
                &["SET", "later", "v", "PX", "1000"],
                &["SET", "never", "v", "PX", "1000"],
                &["SET", "getex", "v", "PX", "1000"],
                &["SET", "plain", "v"],
                &["EXPIRE", "later", "100"],
                &["PERSIST", "never"],
                &["GETEX", "getex", "EX", "100"],
                &["PEXPIRE", "plain", "3000"],
            ],
        );
        e.db().flush().unwrap(); // the changes meet the records in a spill too
        clock.advance(ms(2000));
        let out = run(&e, &mut s, &[&["MGET", "later", "never", "getex", "plain"]]);
        assert_eq!(out[0], Reply::Array(vec![Reply::bulk("v"); 4]));
        clock.advance(ms(1000));
        let out = run(
            &e,
            &mut s,
            &[&["EXISTS", "later", "never", "getex", "plain"]],
        );
        assert_eq!(
            out[0],
            Reply::Integer(3),
            "the expire message given to `plain` came"
        );
    }

    #[test]
    fn expiry_commands_run_in_a_transaction_and_in_every_database() {
        let (_d, e, clock) = engine_at_2030();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "zero"],
                &["MULTI"],
                &["SELECT", "3"],
                &["SET", "k", "v"],
                &["EXPIRE", "k", "100"],
                &["TTL", "k"],
                &["PEXPIRE", "k", "50000", "LT"],
                &["PTTL", "k"],
                &["SETEX", "t", "10", "x"],
                &["INCR", "c"],
                &["PEXPIRE", "c", "10000", "NX"],
                &["INCR", "c"],
                &["PEXPIRETIME", "c"],
                &["PERSIST", "k"],
                &["GETEX", "k", "PX", "20000"],
                &["EXEC"],
                &["TTL", "k"],
                &["SELECT", "0"],
                &["TTL", "k"],
            ],
        );
        let n = Reply::Integer;
        let Reply::Array(replies) = &out[15] else {
            panic!("{:?}", out[15])
        };
        assert_eq!(replies[2..5], [n(1), n(100), n(1)]);
        assert_eq!(replies[5], n(50_000));
        assert_eq!(replies[7..10], [n(1), n(1), n(2)]);
        assert_eq!(replies[10], n(START + 10_000), "INCR kept it");
        assert_eq!(replies[11..], [n(1), Reply::bulk("v")]);
        assert_eq!(out[16], n(20));
        assert_eq!(out[18], n(-1), "database 0's k has none");
        clock.advance(ms(10_000));
        let out = run(
            &e,
            &mut s,
            &[&["SELECT", "3"], &["MGET", "k", "t", "c"], &["DBSIZE"]],
        );
        let k_only = vec![Reply::bulk("v"), Reply::Null, Reply::Null];
        assert_eq!(out[1..], [Reply::Array(k_only), n(1)]);
    }

    #[test]
    fn conditions_treat_no_expiry_as_infinitely_late() {
        let c = |words: &[&str]| {
            let args: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
            Conditions::parse(&args).unwrap()
        };
        let (none, at_10) = (None, Some(10));
        assert!(c(&["NX"]).allow(none, 5) && !c(&["nx"]).allow(at_10, 5));
        assert!(!c(&["XX"]).allow(none, 5) && c(&["XX"]).allow(at_10, 5));
        assert!(!c(&["GT"]).allow(none, 5), "nothing is later than never");
        assert!(c(&["GT"]).allow(at_10, 11) && !c(&["GT"]).allow(at_10, 10));
        assert!(c(&["LT"]).allow(none, 5), "anything is earlier than never");
        assert!(c(&["LT"]).allow(at_10, 9) && !c(&["LT"]).allow(at_10, 10));
        assert!(!c(&["XX", "GT"]).allow(none, 5) && c(&["XX", "LT"]).allow(at_10, 1));
        assert!(c(&[]).allow(none, 5) && c(&[]).allow(at_10, 5));
    }

    #[test]
    fn expire_errors_come_in_redis_order() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v"],
                &["EXPIRE", "k", "abc", "FOO"],
                &["EXPIRE", "k", "abc", "NX\0junk"],
                &["EXPIRE", "k", "10", "NX", "XX"],
                &["EXPIRE", "k", "10", "GT", "LT"],
                &["EXPIRE", "k", "9223372036854776"],
                &["EXPIRE", "k", "-9223372036854776"],
                &["PEXPIRE", "k", "9223372036854775807"],
                &["EXPIREAT", "k", "9223372036854776"],
                &["EXPIRE", "missing", "9223372036854776"],
                &["EXPIRE", "missing", "10"],
                &["EXPIRE", "k", ""],
            ],
        );
        assert_eq!(out[1], Reply::error("ERR Unsupported option FOO"));
        assert_eq!(out[2], not_an_integer(), "NX up to its NUL");
        assert_eq!(
            out[3],
            Reply::error("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            out[4],
            Reply::error("ERR GT and LT options at the same time are not compatible")
        );
        let invalid = |c: &str| Reply::error(format!("ERR invalid expire time in '{c}' command"));
        assert_eq!(out[5..7], [invalid("expire"), invalid("expire")]);
        assert_eq!(out[7], invalid("pexpire"));
        assert_eq!(out[8], invalid("expireat"));
        assert_eq!(out[9], invalid("expire"), "the time before the key");
        assert_eq!(out[10], Reply::Integer(0));
        assert_eq!(out[11], not_an_integer());
    }

    #[test]
    fn expire_sets_compares_and_deletes_as_redis() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v"],
                &["TTL", "k"],
                &["EXPIRE", "k", "10", "XX"],
                &["EXPIRE", "k", "10", "GT"],
                &["EXPIRE", "k", "100", "NX"],
                &["TTL", "k"],
                &["EXPIRE", "k", "50", "GT"],
                &["EXPIRE", "k", "200", "GT"],
                &["EXPIRE", "k", "300", "LT"],
                &["PEXPIRE", "k", "150000", "lt", "XX"],
                &["PTTL", "k"],
                &["PERSIST", "k"],
                &["PERSIST", "k"],
                &["TTL", "k"],
                &["PEXPIREAT", "k", "1999999999999"],
                &["EXPIRETIME", "k"],
                &["PEXPIRETIME", "k"],
                &["PEXPIREAT", "k", "9223372036854775807"],
                &["EXPIRETIME", "k"],
                &["EXPIRE", "k", "-1", "GT"],
                &["EXISTS", "k"],
                &["EXPIRE", "k", "0"],
                &["EXISTS", "k"],
                &["TTL", "k"],
                &["PERSIST", "k"],
                &["EXPIRETIME", "k"],
            ],
        );
        let n = Reply::Integer;
        assert_eq!(out[1], n(-1));
        assert_eq!(out[2..5], [n(0), n(0), n(1)]);
        assert_eq!(out[5], n(100));
        assert_eq!(out[6..10], [n(0), n(1), n(0), n(1)]);
        assert!(
            matches!(out[10], Reply::Integer(ms) if (149_000..=150_000).contains(&ms)),
            "{:?}",
            out[10]
        );
        assert_eq!(out[11..14], [n(1), n(0), n(-1)]);
        assert_eq!(out[15], n(2_000_000_000), "rounded, as Redis rounds");
        assert_eq!(out[16], n(1_999_999_999_999));
        assert_eq!(out[18], n(9_223_372_036_854_776), "no overflow");
        assert_eq!(out[19..21], [n(0), n(1)], "GT: a time past is not later");
        assert_eq!(
            out[21..24],
            [n(1), n(0), n(-2)],
            "a time past deletes the key"
        );
        assert_eq!(out[24..], [n(0), n(-2)]);
    }
}
