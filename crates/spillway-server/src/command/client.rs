//! `CLIENT LIST`, `CLIENT INFO` and `CLIENT KILL`: the connections open (`clients`), one line
//! each in Redis 7.0's form, and closing them. (`CLIENT SETNAME`, `GETNAME` and `ID`: `admin`.)
//!
//! A line's fields are Redis's, in its order. Those we know are ours: id, addresses, socket,
//! name, age, idle time, database, transaction (`flags=x`, `multi=` queued commands and
//! `multi-mem=` their memory as Redis counts it), the last command, RESP version. For the
//! client asking, its current request is in its buffer (`qbuf=` its bytes, `argv-mem=` its
//! arguments'), as in Redis. The buffers are ours: `qbuf-free=` the room left in the input
//! buffer, `rbs=` the output buffer's size and `rbp=` the last batch of replies written
//! (Redis: its reply buffer's peak), `tot-mem=` both buffers and the request and queue.
//! Fields of what this server has not, Redis's value for a client without it: `sub=0 psub=0
//! ssub=0` (no pub/sub), `obl=0 oll=0 omem=0` (replies are written whole before the next
//! read: none wait in a list), `events=r`, `user=default` (the only user), `redir=-1` (no
//! tracking). `flags` is `x` in a transaction, else `N` (Redis's other flags are of
//! replication, pub/sub, blocking and tracking).

use std::time::Instant;

use super::context::Ctx;
use super::Session;
use crate::clients::{Client, Published};
use crate::resp::Reply;

type Result = super::CmdResult;

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]`.
pub fn client_list(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let engine = ctx.engine;
    let clients = match args.len() {
        2 => engine.clients.all(),
        4 if args[2].eq_ignore_ascii_case(b"TYPE") => match client_type(&args[3]) {
            // Every client here is a normal one: no replication, no pub/sub.
            Some(true) => engine.clients.all(),
            Some(false) => Vec::new(),
            None => return Ok(unknown_type(&args[3])),
        },
        n if n > 3 && args[2].eq_ignore_ascii_case(b"ID") => {
            let mut found = Vec::new();
            for id in &args[3..] {
                let Some(id) = super::integer(id) else {
                    return Ok(Reply::error("ERR Invalid client ID"));
                };
                // As Redis: in the order asked, twice if asked twice.
                found.extend(u64::try_from(id).ok().and_then(|id| engine.clients.get(id)));
            }
            found
        }
        _ => return Ok(Reply::error("ERR syntax error")),
    };
    let mut text = String::new();
    for client in clients {
        text.push_str(&line(ctx.session, &client, args));
        text.push('\n');
    }
    Ok(Reply::Verbatim(text.into_bytes()))
}

/// `CLIENT INFO`: the line of the client asking.
pub fn client_info(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let mut text = match ctx.session.client.clone() {
        Some(client) => line(ctx.session, &client, args),
        None => String::new(),
    };
    text.push('\n');
    Ok(Reply::Verbatim(text.into_bytes()))
}

/// Whether a `TYPE` is `normal` (`Some(true)`) or another Redis knows (`Some(false)`).
fn client_type(name: &[u8]) -> Option<bool> {
    match name.to_ascii_lowercase().as_slice() {
        b"normal" => Some(true),
        b"master" | b"replica" | b"slave" | b"pubsub" => Some(false),
        _ => None,
    }
}

fn unknown_type(name: &[u8]) -> Reply {
    Reply::error(format!(
        "ERR Unknown client type '{}'",
        String::from_utf8_lossy(name)
    ))
}

/// `client`'s line; `session` is the one asking, whose own line shows it as it is now, its
/// current request `request` in its buffer.
fn line(session: &Session, client: &Client, request: &[Vec<u8>]) -> String {
    let own = session.id == client.id;
    let now = Instant::now();
    let p = if own {
        Published {
            name: session.name.clone(),
            db: session.db,
            resp: session.resp,
            multi: session.multi.as_ref().map(super::multi::Multi::size),
            last_command: session.last_command,
            last_active: now,
        }
    } else {
        client.published()
    };
    let (qbuf, argv_mem) = match own {
        true => (resp_size(request), request.iter().map(Vec::len).sum()),
        false => (0, 0),
    };
    let b = client.buffers();
    let (multi, multi_mem) = p.multi.map_or((-1, 0), |(n, mem)| (n as i64, mem));
    let tot_mem = b.input_capacity + b.output_capacity + argv_mem + multi_mem;
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 \
         multi={multi} qbuf={qbuf} qbuf-free={} argv-mem={argv_mem} multi-mem={multi_mem} \
         rbs={} rbp={} obl=0 oll=0 omem=0 tot-mem={tot_mem} events=r cmd={} user=default \
         redir=-1 resp={}",
        client.id,
        client.peer,
        client.local,
        client.fd,
        String::from_utf8_lossy(p.name.as_deref().unwrap_or_default()),
        now.saturating_duration_since(client.created).as_secs(),
        now.saturating_duration_since(p.last_active).as_secs(),
        if p.multi.is_some() { "x" } else { "N" },
        p.db,
        b.input_capacity.saturating_sub(qbuf),
        b.output_capacity,
        b.last_output,
        p.last_command.unwrap_or("NULL"),
        p.resp,
    )
}

/// The bytes of `args` sent as a RESP request.
fn resp_size(args: &[Vec<u8>]) -> usize {
    let digits = |n: usize| n.to_string().len();
    let header = 3 + digits(args.len());
    header
        + args
            .iter()
            .map(|a| 5 + digits(a.len()) + a.len())
            .sum::<usize>()
}

/// Which clients `CLIENT KILL` kills: those that match every filter given.
#[derive(Default)]
struct Filter {
    addr: Option<Vec<u8>>,
    laddr: Option<Vec<u8>>,
    id: Option<u64>,
    /// `TYPE`: only normal clients match (`Some(true)`), or none (another type).
    normal: Option<bool>,
    /// Whether the client asking is spared (the filter form's default).
    skip_me: bool,
}

/// `CLIENT KILL ip:port`, or `CLIENT KILL [ID id] [TYPE type] [USER user] [ADDR ip:port]
/// [LADDR ip:port] [SKIPME yes|no] ...`: OK (or `No such client`) for the first form, the
/// number killed for the second. A client killed closes at once; the one asking, if it kills
/// itself, once this reply is sent (as `QUIT`).
pub fn client_kill(ctx: &mut Ctx, args: &[Vec<u8>]) -> Result {
    let old_form = args.len() == 3;
    let filter = if old_form {
        Filter {
            addr: Some(args[2].clone()),
            ..Filter::default()
        }
    } else {
        match filter(&args[2..]) {
            Ok(filter) => filter,
            Err(refusal) => return Ok(refusal),
        }
    };
    let session = &mut *ctx.session;
    let mut killed = 0;
    for client in ctx.engine.clients.all() {
        let own = client.id == session.id;
        let matches = filter
            .addr
            .as_ref()
            .is_none_or(|a| *a == client.peer.as_bytes())
            && filter
                .laddr
                .as_ref()
                .is_none_or(|a| *a == client.local.as_bytes())
            && filter.id.is_none_or(|id| id == client.id)
            && filter.normal.is_none_or(|normal| normal)
            && !(own && filter.skip_me);
        if !matches {
            continue;
        }
        if own {
            session.quit = true;
        } else {
            // Gone from the list at once, as Redis frees it at once; its connection closes
            // as soon as it sees the mark.
            ctx.engine.clients.close(client.id);
            client.kill();
        }
        killed += 1;
    }
    Ok(match (old_form, killed) {
        (true, 0) => Reply::error("ERR No such client"),
        (true, _) => Reply::ok(),
        (false, n) => Reply::Integer(n),
    })
}

/// The filter form's pairs, as Redis reads them: each in turn, the first bad one refused.
fn filter(pairs: &[Vec<u8>]) -> std::result::Result<Filter, Reply> {
    let syntax = || Reply::error("ERR syntax error");
    if pairs.len() % 2 == 1 {
        return Err(syntax());
    }
    let mut f = Filter {
        skip_me: true,
        ..Filter::default()
    };
    for pair in pairs.chunks(2) {
        let value = &pair[1];
        match pair[0].to_ascii_uppercase().as_slice() {
            b"ID" => match super::integer(value) {
                Some(id) if id > 0 => f.id = Some(id as u64),
                _ => return Err(Reply::error("ERR client-id should be greater than 0")),
            },
            b"TYPE" => match client_type(value) {
                Some(normal) => f.normal = Some(normal),
                None => return Err(unknown_type(value)),
            },
            b"ADDR" => f.addr = Some(value.clone()),
            b"LADDR" => f.laddr = Some(value.clone()),
            b"USER" if value.as_slice() == b"default" => {}
            b"USER" => {
                return Err(Reply::error(format!(
                    "ERR No such user '{}'",
                    String::from_utf8_lossy(value)
                )))
            }
            b"SKIPME" => match value.to_ascii_lowercase().as_slice() {
                b"yes" => f.skip_me = true,
                b"no" => f.skip_me = false,
                _ => return Err(syntax()),
            },
            _ => return Err(syntax()),
        }
    }
    Ok(f)
}
