//! The commands about the connection and the server rather than the data: `PING`, `AUTH`,
//! `HELLO`, `CLIENT SETNAME` and its kin, `COMMAND`, `SHUTDOWN`, ... — what clients and tools
//! send on connecting. (`INFO`, `CONFIG` and `CLIENT LIST`/`INFO`/`KILL` have files of their
//! own.)

use super::context::Ctx;
use super::spec::{key_flags, ArgType, Command, CATEGORY_NAMES};
use super::{integer, not_an_integer, table, Session};
use crate::pattern;
use crate::resp::Reply;

type Result = super::CmdResult;

/// `PING [message]`.
pub fn ping(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(match args.get(1) {
        None => Reply::status("PONG"),
        Some(message) if args.len() == 2 => Reply::bulk(message.clone()),
        Some(_) => super::arity("ping"),
    })
}

/// `ECHO message`.
pub fn echo(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(Reply::bulk(args[1].clone()))
}

/// `QUIT`: the connection closes once the replies before it are sent.
pub fn quit(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    ctx.session.quit = true;
    Ok(Reply::ok())
}

/// `SELECT index`: the database the connection's commands use from now on (in a transaction,
/// from its place in the queue on, and after EXEC too, as in Redis).
pub fn select(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let count = ctx.engine.dbs.count();
    Ok(match integer(&args[1]) {
        Some(n) if (0..count as i64).contains(&n) => {
            ctx.select(n as usize);
            Reply::ok()
        }
        Some(_) => Reply::error("ERR DB index is out of range"),
        None => not_an_integer(),
    })
}

/// `AUTH [user] password`: only the default user exists, and it needs no password unless
/// the server has one (as Redis's `requirepass`).
pub fn auth(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(match args.len() {
        2 => authenticate(ctx, None, &args[1]),
        3 => authenticate(ctx, Some(&args[1]), &args[2]),
        _ => Reply::error("ERR syntax error"),
    })
}

fn authenticate(ctx: &mut Ctx, user: Option<&[u8]>, password: &[u8]) -> Reply {
    let default_user = user.is_none_or(|u| u == b"default");
    match &ctx.engine.password {
        None if user.is_none() => Reply::error(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ),
        None if default_user => Reply::ok(),
        Some(p) if p == password && default_user => {
            ctx.session.authed = true;
            Reply::ok()
        }
        _ => Reply::error("WRONGPASS invalid username-password pair or user is disabled."),
    }
}

/// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
pub fn hello(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut i = 1;
    if let Some(v) = args.get(1) {
        match integer(v) {
            Some(v @ 2..=3) => ctx.session.resp = v as u8,
            Some(_) => return Ok(Reply::error("NOPROTO unsupported protocol version")),
            None => {
                return Ok(Reply::error(
                    "ERR Protocol version is not an integer or out of range",
                ))
            }
        }
        i = 2;
    }
    while i < args.len() {
        match args[i].to_ascii_uppercase().as_slice() {
            b"AUTH" if i + 2 < args.len() => {
                if let e @ Reply::Error(_) = authenticate(ctx, Some(&args[i + 1]), &args[i + 2]) {
                    return Ok(e);
                }
                i += 3;
            }
            b"SETNAME" if i + 1 < args.len() => {
                ctx.session.name = Some(args[i + 1].clone());
                i += 2;
            }
            _ => {
                return Ok(Reply::error(format!(
                    "ERR Syntax error in HELLO option '{}'",
                    String::from_utf8_lossy(&args[i])
                )))
            }
        }
    }
    let Session { resp, id, .. } = *ctx.session;
    let field = |k: &str, v: Reply| (Reply::bulk(k), v);
    Ok(Reply::Map(vec![
        field("server", Reply::bulk("spillway")),
        field("version", Reply::bulk(env!("CARGO_PKG_VERSION"))),
        field("proto", Reply::Integer(i64::from(resp))),
        field("id", Reply::Integer(id as i64)),
        field("mode", Reply::bulk("standalone")),
        field("role", Reply::bulk("master")),
        field("modules", Reply::Array(vec![])),
    ]))
}

/// `CLIENT SETNAME name`: an empty name removes it.
pub fn client_setname(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let name = &args[2];
    if name.iter().any(|&b| b <= b' ' || b > b'~') {
        return Ok(Reply::error(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    ctx.session.name = (!name.is_empty()).then(|| name.clone());
    Ok(Reply::ok())
}

/// `CLIENT GETNAME`.
pub fn client_getname(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(ctx.session.name.clone().map_or(Reply::Null, Reply::Bulk))
}

/// `CLIENT ID`.
pub fn client_id(ctx: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(Reply::Integer(ctx.session.id as i64))
}

/// `<CONTAINER> HELP`: its subcommands and what they do, from the table, in Redis's form.
pub fn help(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let container = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let mut lines = vec![format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    )];
    let subcommands = table::by_name(&args[0]).map_or(&[][..], |(_, c)| c.subcommands);
    for sub in subcommands.iter().filter(|s| !s.name.ends_with("|help")) {
        let (_, name) = sub.name.split_once('|').unwrap_or(("", sub.name));
        let mut usage = name.to_ascii_uppercase();
        for arg in sub.doc.args {
            usage.push(' ');
            usage.push_str(&usage_of(arg));
        }
        lines.push(usage);
        lines.push(format!("    {}.", sub.doc.summary.trim_end_matches('.')));
    }
    lines.extend(["HELP".into(), "    Print this help.".into()]);
    Ok(Reply::Array(lines.into_iter().map(Reply::status).collect()))
}

/// An argument as help shows it: `<name>`, `TOKEN <name>`, `[optional]`, `a|b`, `x [x ...]`.
fn usage_of(arg: &super::spec::Arg) -> String {
    let inner = |parts: &[super::spec::Arg], sep: &str| {
        parts.iter().map(usage_of).collect::<Vec<_>>().join(sep)
    };
    let mut text = match arg.kind {
        ArgType::PureToken => String::new(),
        ArgType::OneOf(parts) => format!("({})", inner(parts, "|")),
        ArgType::Block(parts) => inner(parts, " "),
        _ => format!("<{}>", arg.name),
    };
    if let Some(token) = arg.token {
        text = [token, &text].join(" ").trim_end().to_owned();
    }
    if arg.multiple {
        text = format!("{text} [{text} ...]");
    }
    if arg.optional {
        text = format!("[{text}]");
    }
    text
}

/// `COMMAND`: every command's `COMMAND INFO` entry.
pub fn command(_: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(Reply::Array(table::commands().map(Command::info).collect()))
}

/// `COMMAND COUNT`: how many commands (not counting subcommands), as `COMMAND` lists.
pub fn command_count(_: &mut Ctx, _: &[Vec<u8>]) -> Result {
    Ok(Reply::Integer(table::commands().count() as i64))
}

/// `COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]`: the names of
/// every command and subcommand (`client|setname`) that passes the filter.
pub fn command_list(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let keep: Box<dyn Fn(&Command) -> bool> = match args.len() {
        2 => Box::new(|_| true),
        5 if args[2].eq_ignore_ascii_case(b"FILTERBY") => {
            let value = args[4].to_ascii_lowercase();
            match args[3].to_ascii_uppercase().as_slice() {
                b"MODULE" => Box::new(|_| false), // there are no modules
                b"ACLCAT" => {
                    let bit = CATEGORY_NAMES.iter().position(|c| c.as_bytes() == value);
                    Box::new(move |c| bit.is_some_and(|b| c.categories() & (1 << b) != 0))
                }
                b"PATTERN" => Box::new(move |c| pattern::matches(&value, c.name.as_bytes())),
                _ => return Ok(Reply::error("ERR syntax error")),
            }
        }
        _ => return Ok(Reply::error("ERR syntax error")),
    };
    let all = (0..table::count()).map(table::nth);
    Ok(Reply::Array(
        all.filter(|c| keep(c))
            .map(|c| Reply::bulk(c.name))
            .collect(),
    ))
}

/// `COMMAND INFO [name ...]`: the named commands' entries (null for an unknown one), or every
/// command's. A subcommand is named `container|sub`.
pub fn command_info(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    if args.len() == 2 {
        return command(ctx, args);
    }
    let found = args[2..].iter().map(|name| table::by_name(name));
    Ok(Reply::Array(
        found
            .map(|c| c.map_or(Reply::Null, |(_, c)| c.info()))
            .collect(),
    ))
}

/// `COMMAND DOCS [name ...]`: a map of the named commands' documentation (unknown ones left
/// out), or every command's.
pub fn command_docs(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let docs = |c: &Command| (Reply::bulk(c.name), c.docs());
    Ok(Reply::Map(match args.len() {
        2 => table::commands().map(docs).collect(),
        _ => args[2..]
            .iter()
            .filter_map(|name| table::by_name(name).map(|(_, c)| docs(c)))
            .collect(),
    }))
}

/// `COMMAND GETKEYS command [arg ...]`: the keys the command would touch.
pub fn command_getkeys(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(match keys_of(&args[2..]) {
        Ok(keys) => Reply::Array(keys.into_iter().map(|(k, _)| Reply::bulk(k)).collect()),
        Err(e) => e,
    })
}

/// `COMMAND GETKEYSANDFLAGS command [arg ...]`: the keys, each with its key spec's flags.
pub fn command_getkeysandflags(_: &mut Ctx, args: &[Vec<u8>]) -> Result {
    Ok(match keys_of(&args[2..]) {
        Ok(keys) => Reply::Array(
            keys.into_iter()
                .map(|(k, flags)| Reply::Array(vec![Reply::bulk(k), key_flags(flags)]))
                .collect(),
        ),
        Err(e) => e,
    })
}

/// The keys of request `request` with their flags, or Redis's error for why there are none.
fn keys_of(request: &[Vec<u8>]) -> std::result::Result<Vec<(&[u8], u32)>, Reply> {
    let Ok((_, command)) = table::find(request) else {
        return Err(Reply::error("ERR Invalid command specified"));
    };
    if command.keys.is_empty() {
        return Err(Reply::error("ERR The command has no key arguments"));
    }
    if !command.takes(request.len()) {
        return Err(Reply::error(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    match command.keys_of(request) {
        Some(keys) if !keys.is_empty() => Ok(keys),
        _ => Err(Reply::error("ERR Invalid arguments specified for command")),
    }
}

/// `SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]`: the server stops, and its reply is not
/// sent (as Redis: the connection closes). Every write is in the log already and closing
/// flushes the buffer, so `SAVE` and `NOSAVE` both close the store cleanly, and there is
/// never a shutdown in progress to abort.
pub fn shutdown(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut save = None;
    for a in &args[1..] {
        match a.to_ascii_uppercase().as_slice() {
            b"SAVE" | b"NOSAVE" if save.is_none() => save = Some(()),
            b"NOW" | b"FORCE" => {}
            b"ABORT" if args.len() == 2 => return Ok(Reply::error("ERR No shutdown in progress.")),
            _ => return Ok(Reply::error("ERR syntax error")),
        }
    }
    ctx.session.shutdown = true;
    ctx.session.quit = true;
    Ok(Reply::ok())
}
