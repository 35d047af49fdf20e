//! `SET` and its kin — `SETNX`, `GETSET`, `SETEX`, `PSETEX` — and `GETEX`: the commands that
//! set a string with options, and the options' rules as Redis 7.0 parses them
//! (`parseExtendedStringArgumentsOrReply`, `getExpireMillisecondsOrReply`).
//!
//! A SET with only an expiry (`SET k v EX 10`, `SETEX`) reads nothing: it is a blind write,
//! batched with the pipeline's others. With NX, XX, GET or KEEPTTL it reads the key first, and
//! is staged (see `context`).

use spillway::Expiry;

use super::context::Ctx;
use super::spec::key;
use super::{integer, not_an_integer, time};
use crate::resp::Reply;

type Result = super::CmdResult;

/// How an expiry is given: EX seconds, PX milliseconds from now, EXAT seconds, PXAT
/// milliseconds since the epoch.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl Unit {
    fn seconds(self) -> bool {
        matches!(self, Unit::Ex | Unit::ExAt)
    }

    fn relative(self) -> bool {
        matches!(self, Unit::Ex | Unit::Px)
    }
}

/// Which command's options are parsed: SET takes NX, XX, GET and KEEPTTL; GETEX PERSIST.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Of {
    Set,
    Getex,
}

/// SET's or GETEX's options.
#[derive(Clone, Copy, Default)]
struct Options<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// How the expiry is given and its argument, not yet checked.
    expire: Option<(Unit, &'a [u8])>,
}

/// `arg` as C reads it: up to its first NUL. Redis compares its options as C strings, so
/// `"NX\0junk"` is NX to it.
pub fn c_str(arg: &[u8]) -> &[u8] {
    arg.iter()
        .position(|&b| b == 0)
        .map_or(arg, |end| &arg[..end])
}

/// The options in `args[from..]`, or Redis's syntax error. Each rule is Redis's: NX and XX
/// exclude each other, one kind of expiry excludes the others and KEEPTTL (the same one
/// twice is taken, the last wins), and an expiry needs its argument.
fn parse(args: &[Vec<u8>], from: usize, of: Of) -> std::result::Result<Options<'_>, Reply> {
    let mut o = Options::default();
    let mut i = from;
    while i < args.len() {
        let next = args.get(i + 1).map(Vec::as_slice);
        let word = c_str(&args[i]).to_ascii_uppercase();
        let set = of == Of::Set;
        let no_expiry = o.expire.is_none();
        let expire_as = |unit: Unit| match (o.expire, next) {
            (None, Some(arg)) => Some((unit, arg)),
            (Some((u, _)), Some(arg)) if u == unit => Some((unit, arg)),
            _ => None,
        };
        let unit = match word.as_slice() {
            b"EX" => Some(Unit::Ex),
            b"PX" => Some(Unit::Px),
            b"EXAT" => Some(Unit::ExAt),
            b"PXAT" => Some(Unit::PxAt),
            _ => None,
        };
        match word.as_slice() {
            b"NX" if set && !o.xx => o.nx = true,
            b"XX" if set && !o.nx => o.xx = true,
            b"GET" if set => o.get = true,
            b"KEEPTTL" if set && no_expiry => o.keepttl = true,
            b"PERSIST" if !set && no_expiry => o.persist = true,
            _ => match unit.and_then(|u| expire_as(u).filter(|_| !o.keepttl && !o.persist)) {
                Some(expire) => {
                    o.expire = Some(expire);
                    i += 1;
                }
                None => return Err(Reply::error("ERR syntax error")),
            },
        }
        i += 1;
    }
    Ok(o)
}

/// The time in milliseconds since the epoch that expiry argument `arg` of `unit` names, with
/// Redis's errors: not an integer, or not positive, or past what a time can hold.
/// `command` names the command in the error.
pub fn expire_at(
    ctx: &Ctx,
    unit: Unit,
    arg: &[u8],
    command: &str,
) -> std::result::Result<i64, Reply> {
    let invalid = || Reply::error(format!("ERR invalid expire time in '{command}' command"));
    let n = integer(arg).ok_or_else(not_an_integer)?;
    if n <= 0 {
        return Err(invalid());
    }
    let ms = match unit.seconds() {
        true => n.checked_mul(1000).ok_or_else(invalid)?,
        false => n,
    };
    match unit.relative() {
        true => ms
            .checked_add(time::millis(ctx.engine.now()))
            .ok_or_else(invalid),
        false => Ok(ms),
    }
}

/// `SET key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds |
/// PXAT unix-time-milliseconds | KEEPTTL]`: blind with no option but an expiry.
pub fn set(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let o = match parse(args, 3, Of::Set) {
        Ok(o) => o,
        Err(refused) => return Ok(refused),
    };
    let expiry = match o.expire {
        None => None,
        Some((unit, arg)) => match expire_at(ctx, unit, arg, "set") {
            Ok(ms) => Some(ms),
            Err(refused) => return Ok(refused),
        },
    };
    set_as(ctx, &args[1], &args[2], o, expiry)
}

/// The flags of `SET`'s key in request `args` (as Redis's `setGetKeys`): read and updated
/// with `GET`, else overwritten.
pub fn set_key_flags(args: &[Vec<u8>]) -> u32 {
    match args
        .iter()
        .skip(3)
        .any(|a| c_str(a).eq_ignore_ascii_case(b"GET"))
    {
        true => key::RW | key::ACCESS | key::UPDATE,
        false => key::OW | key::UPDATE,
    }
}

/// `SETNX key value`: 1 if it set the key, 0 if the key existed.
pub fn setnx(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let nx = Options {
        nx: true,
        ..Options::default()
    };
    let set = set_as(ctx, &args[1], &args[2], nx, None)?;
    Ok(Reply::Integer(i64::from(set != Reply::Null)))
}

/// `GETSET key value`: `SET key value GET` (the key's expiry goes, as with SET).
pub fn getset(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let get = Options {
        get: true,
        ..Options::default()
    };
    set_as(ctx, &args[1], &args[2], get, None)
}

/// `SETEX key seconds value`.
pub fn setex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    set_expiring(ctx, args, Unit::Ex, "setex")
}

/// `PSETEX key milliseconds value`.
pub fn psetex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    set_expiring(ctx, args, Unit::Px, "psetex")
}

fn set_expiring(ctx: &mut Ctx, args: &[Vec<u8>], unit: Unit, command: &str) -> Result {
    match expire_at(ctx, unit, &args[2], command) {
        Ok(ms) => set_as(ctx, &args[1], &args[3], Options::default(), Some(ms)),
        Err(refused) => Ok(refused),
    }
}

/// Set `key` to `value` as `o` says: only if absent (NX) or present (XX), expiring at `at`
/// (milliseconds since the epoch) or as it did (KEEPTTL) or never, replying with the old value
/// (GET) or OK, or null where the condition failed.
///
/// A key of another type is overwritten; only GET asks for a string (`WRONGTYPE` otherwise).
fn set_as(ctx: &mut Ctx, key: &[u8], value: &[u8], o: Options, at: Option<i64>) -> Result {
    let old = match (o.get, o.nx || o.xx || o.keepttl) {
        (true, _) => ctx.get_with_expiry(key)?,
        (false, true) => ctx.entry(key)?.map(|e| (Vec::new(), e.expiry)),
        (false, false) => None,
    };
    if o.get {
        ctx.looked_up(old.is_some()); // a read, as Redis's GET in SET counts
    }
    let write = !(o.nx && old.is_some() || o.xx && old.is_none());
    if write {
        // A time already past writes a key that is gone (and hides the old value), as Redis's
        // key expired at once.
        let expiry = match (at, &old) {
            (Some(ms), _) => Expiry::At(time::at(ms)),
            (None, Some((_, kept))) if o.keepttl => *kept,
            (None, _) => Expiry::Never,
        };
        ctx.put_expiring(key, value, expiry)?;
    }
    Ok(match (o.get, write) {
        (true, _) => old.map_or(Reply::Null, |(v, _)| Reply::Bulk(v)),
        (false, true) => Reply::ok(),
        (false, false) => Reply::Null,
    })
}

/// `GETEX key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT
/// unix-time-milliseconds | PERSIST]`: the value, its expiry changed. As Redis: a missing key
/// answers null before the expiry is checked, and a time already past deletes the key.
pub fn getex(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let o = match parse(args, 2, Of::Getex) {
        Ok(o) => o,
        Err(refused) => return Ok(refused),
    };
    let key = &args[1];
    let found = ctx.get_with_expiry(key)?;
    ctx.looked_up(found.is_some());
    let Some((value, expiry)) = found else {
        return Ok(Reply::Null);
    };
    if let Some((unit, arg)) = o.expire {
        let ms = match expire_at(ctx, unit, arg, "getex") {
            Ok(ms) => ms,
            Err(refused) => return Ok(refused),
        };
        if ms <= time::millis(ctx.engine.now()) {
            ctx.delete(key)?;
        } else {
            ctx.retime(key, &value, expiry, Expiry::At(time::at(ms)))?;
        }
    } else if o.persist {
        ctx.retime(key, &value, expiry, Expiry::Never)?;
    }
    Ok(Reply::Bulk(value))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::Session;
    use super::*;

    fn req(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    /// Whether `args` (a SET from its options on) parse, and the expiry's unit if any.
    fn parses(of: Of, args: &[&str]) -> std::result::Result<Option<u8>, ()> {
        let args = req(args);
        let unit = |u: Unit| u as u8;
        parse(&args, 0, of)
            .map(|o| o.expire.map(|(u, _)| unit(u)))
            .map_err(|_| ())
    }

    #[test]
    fn options_follow_redis_rules_of_what_goes_with_what() {
        let ex = Some(Unit::Ex as u8);
        assert_eq!(parses(Of::Set, &["NX", "GET", "EX", "1"]), Ok(ex));
        assert_eq!(
            parses(Of::Set, &["ex", "1", "EX", "2"]),
            Ok(ex),
            "the same twice"
        );
        assert_eq!(parses(Of::Set, &["KEEPTTL", "keepttl", "xx"]), Ok(None));
        assert_eq!(
            parses(Of::Set, &["NX\0junk", "keepttl\0"]),
            Ok(None),
            "C strings"
        );
        for refused in [
            &["EX", "1", "PX", "1"][..],
            &["EXAT", "1", "PXAT", "1"],
            &["KEEPTTL", "EX", "1"],
            &["EX", "1", "KEEPTTL"],
            &["EX"],
            &["NX", "XX"],
            &["PERSIST"],
        ] {
            assert_eq!(parses(Of::Set, refused), Err(()), "{refused:?}");
        }
        assert_eq!(parses(Of::Getex, &["PERSIST"]), Ok(None));
        assert_eq!(
            parses(Of::Getex, &["PXAT", "5"]),
            Ok(Some(Unit::PxAt as u8))
        );
        for refused in [
            &["NX"][..],
            &["GET"],
            &["KEEPTTL"],
            &["PERSIST", "EX", "1"],
            &["EX", "1", "PERSIST"],
        ] {
            assert_eq!(parses(Of::Getex, refused), Err(()), "{refused:?}");
        }
    }

    #[test]
    fn expire_times_are_checked_as_redis_checks_them() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v", "EX", "0"],
                &["SET", "k", "v", "PX", "-1"],
                &["SET", "k", "v", "EX", "x"],
                &["SET", "k", "v", "EX", "9223372036854775"],
                &["SET", "k", "v", "PX", "9223372036854775807"],
                &["SET", "k", "v", "EXAT", "9223372036854775"],
                &["SETEX", "k", "0", "v"],
                &["PSETEX", "k", "9223372036854775807", "v"],
                &["GETEX", "nope", "PX", "0"],
                &["GETEX", "k", "PX", "0"],
            ],
        );
        let invalid = |c: &str| Reply::error(format!("ERR invalid expire time in '{c}' command"));
        assert_eq!(out[..2], [invalid("set"), invalid("set")]);
        assert_eq!(
            out[2],
            Reply::error("ERR value is not an integer or out of range")
        );
        assert_eq!(out[3..5], [invalid("set"), invalid("set")]);
        assert_eq!(out[5], Reply::ok(), "a time that fits");
        assert_eq!(out[6..8], [invalid("setex"), invalid("psetex")]);
        assert_eq!(out[8], Reply::Null, "a missing key before the time");
        assert_eq!(out[9], invalid("getex"));
    }

    #[test]
    fn set_clears_a_keys_expiry_and_keepttl_keeps_it() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v", "EX", "100"],
                &["TTL", "k"],
                &["SET", "k", "w", "KEEPTTL"],
                &["TTL", "k"],
                &["SET", "k", "x", "KEEPTTL", "GET"],
                &["TTL", "k"],
                &["SET", "k", "y"],
                &["TTL", "k"],
                &["SETEX", "k", "50", "z"],
                &["GETSET", "k", "g"],
                &["TTL", "k"],
                &["PSETEX", "k", "50000", "p"],
                &["SET", "k", "q", "XX", "KEEPTTL"],
                &["PTTL", "k"],
                &["SET", "n", "v", "KEEPTTL", "NX"],
                &["TTL", "n"],
                &["SET", "k", "gone", "PXAT", "1"],
                &["GET", "k"],
                &["SET", "k", "back", "NX"],
            ],
        );
        assert_eq!(out[1], Reply::Integer(100));
        assert_eq!(out[3], Reply::Integer(100), "KEEPTTL");
        assert_eq!(out[4], Reply::bulk("w"));
        assert_eq!(out[5], Reply::Integer(100), "KEEPTTL with GET");
        assert_eq!(out[7], Reply::Integer(-1), "a plain SET clears it");
        assert_eq!(out[9], Reply::bulk("z"));
        assert_eq!(out[10], Reply::Integer(-1), "GETSET clears it");
        assert!(
            matches!(out[13], Reply::Integer(ms) if (49_000..=50_000).contains(&ms)),
            "{:?}",
            out[13]
        );
        assert_eq!(out[15], Reply::Integer(-1), "a new key keeps no TTL");
        assert_eq!(out[16], Reply::ok());
        assert_eq!(out[17], Reply::Null, "a time past: the key is gone at once");
        assert_eq!(out[18], Reply::ok(), "and NX finds it absent");
    }

    #[test]
    fn getex_sets_takes_away_or_keeps_the_expiry() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "k", "v"],
                &["GETEX", "k"],
                &["TTL", "k"],
                &["GETEX", "k", "EX", "100"],
                &["TTL", "k"],
                &["GETEX", "k", "EX", "5", "EX", "7"],
                &["TTL", "k"],
                &["GETEX", "k", "PERSIST"],
                &["TTL", "k"],
                &["GETEX", "k", "PXAT", "1"],
                &["EXISTS", "k"],
                &["GETEX", "k", "NX"],
            ],
        );
        assert_eq!(out[1], Reply::bulk("v"));
        assert_eq!(out[2], Reply::Integer(-1));
        assert_eq!(out[3], Reply::bulk("v"));
        assert_eq!(out[4], Reply::Integer(100));
        assert_eq!(out[6], Reply::Integer(7), "the last of the same kind");
        assert_eq!(out[8], Reply::Integer(-1), "PERSIST");
        assert_eq!(out[9], Reply::bulk("v"), "answered before it is deleted");
        assert_eq!(out[10], Reply::Integer(0));
        assert_eq!(out[11], Reply::error("ERR syntax error"));
    }
}
