//! The commands about the connection and the server rather than the data: `AUTH`, `HELLO`,
//! `INFO`, `CLIENT`, `COMMAND`, `CONFIG` — what clients and tools send on connecting.

use super::{arity, integer, Engine, Session};
use crate::resp::Reply;

/// User bytes written before `INFO` shows the write amplification. Below it the bytes a store
/// writes whatever its data are most of those written — the manifest at open, the log's header
/// and the 4 MiB of zeros the engine writes ahead of a log once it is synced (which
/// `Stats::disk_bytes_written` counts, with no counter of their own) — and the ratio said
/// 61685 after a few SETs. From here the zeros ahead add at most 1/16 to it.
const AMPLIFICATION_FROM: u64 = 64 << 20;

impl Engine {
    /// `AUTH [user] password`: only the default user exists, and it needs no password unless
    /// the server has one (as Redis's `requirepass`).
    pub(super) fn auth(
        &self,
        session: &mut Session,
        user: Option<&[u8]>,
        password: &[u8],
    ) -> Reply {
        let default_user = user.is_none_or(|u| u == b"default");
        match &self.password {
            None if user.is_none() => Reply::error(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ),
            None if default_user => Reply::ok(),
            Some(p) if p == password && default_user => {
                session.authed = true;
                Reply::ok()
            }
            _ => Reply::error("WRONGPASS invalid username-password pair or user is disabled."),
        }
    }

    /// `INFO [section ...]`: Redis's sections of `field:value` lines, with the store's figures.
    pub(super) fn info(&self, wanted: &[Vec<u8>]) -> String {
        let s = self.db.stats();
        let all = wanted.is_empty()
            || wanted.iter().any(|w| {
                matches!(
                    w.to_ascii_lowercase().as_slice(),
                    b"all" | b"default" | b"everything"
                )
            });
        let mut out = String::new();
        let mut section = |title: &str, fields: &[(&str, String)]| {
            if !all
                && !wanted
                    .iter()
                    .any(|w| w.eq_ignore_ascii_case(title.as_bytes()))
            {
                return;
            }
            out.push_str(&format!("# {title}\r\n"));
            for (k, v) in fields {
                out.push_str(&format!("{k}:{v}\r\n"));
            }
            out.push_str("\r\n");
        };
        section(
            "Server",
            &[
                // Tools read redis_version to pick what to send: we answer as Redis 7.0 does.
                ("redis_version", "7.0.0".into()),
                ("spillway_version", env!("CARGO_PKG_VERSION").into()),
                ("redis_mode", "standalone".into()),
                ("process_id", std::process::id().to_string()),
            ],
        );
        section(
            "Memory",
            &[
                (
                    "used_memory",
                    (s.metadata_bytes() + s.buffer_bytes).to_string(),
                ),
                ("spillway_metadata_bytes", s.metadata_bytes().to_string()),
                ("spillway_buffer_bytes", s.buffer_bytes.to_string()),
            ],
        );
        let mut persistence = vec![
            ("aof_enabled", "1".into()),
            ("spillway_disk_bytes", s.disk_bytes.to_string()),
            (
                "spillway_user_bytes_written",
                s.user_bytes_written.to_string(),
            ),
            (
                "spillway_log_bytes_written",
                s.wal_bytes_written.to_string(),
            ),
            (
                "spillway_disk_bytes_written",
                s.disk_bytes_written.to_string(),
            ),
        ];
        if s.user_bytes_written >= AMPLIFICATION_FROM {
            persistence.push((
                "spillway_write_amplification",
                format!("{:.2}", s.write_amplification),
            ));
        }
        section("Persistence", &persistence);
        section(
            "Stats",
            &[
                ("spillway_gets", s.gets.to_string()),
                ("spillway_fsyncs", s.fsyncs.to_string()),
                ("spillway_root_spills", s.root_spills.to_string()),
            ],
        );
        // As DBSIZE answers: exact in a small store, estimated in a large one.
        let keys = self.key_count().unwrap_or(0);
        section(
            "Keyspace",
            &[("db0", format!("keys={keys},expires=0,avg_ttl=0"))],
        );
        out
    }

    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    pub(super) fn hello(&self, session: &mut Session, args: &[Vec<u8>]) -> Reply {
        let mut i = 1;
        if let Some(v) = args.get(1) {
            match integer(v) {
                Some(v @ 2..=3) => session.resp = v as u8,
                Some(_) => return Reply::error("NOPROTO unsupported protocol version"),
                None => {
                    return Reply::error("ERR Protocol version is not an integer or out of range")
                }
            }
            i = 2;
        }
        while i < args.len() {
            match args[i].to_ascii_uppercase().as_slice() {
                b"AUTH" if i + 2 < args.len() => {
                    if let e @ Reply::Error(_) =
                        self.auth(session, Some(&args[i + 1]), &args[i + 2])
                    {
                        return e;
                    }
                    i += 3;
                }
                b"SETNAME" if i + 1 < args.len() => {
                    session.name = Some(args[i + 1].clone());
                    i += 2;
                }
                _ => {
                    return Reply::error(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        String::from_utf8_lossy(&args[i])
                    ))
                }
            }
        }
        let field = |k: &str, v: Reply| (Reply::bulk(k), v);
        Reply::Map(vec![
            field("server", Reply::bulk("spillway")),
            field("version", Reply::bulk(env!("CARGO_PKG_VERSION"))),
            field("proto", Reply::Integer(i64::from(session.resp))),
            field("id", Reply::Integer(session.id as i64)),
            field("mode", Reply::bulk("standalone")),
            field("role", Reply::bulk("master")),
            field("modules", Reply::Array(vec![])),
        ])
    }
}

/// `CLIENT SETNAME | GETNAME | ID`.
pub(super) fn client(session: &mut Session, args: &[Vec<u8>]) -> Reply {
    let Some(sub) = args.get(1) else {
        return arity("client");
    };
    let n = args.len();
    match sub.to_ascii_uppercase().as_slice() {
        b"SETNAME" if n == 3 => {
            if args[2].iter().any(|&b| b <= b' ' || b > b'~') {
                return Reply::error(
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            }
            session.name = (!args[2].is_empty()).then(|| args[2].clone());
            Reply::ok()
        }
        b"GETNAME" if n == 2 => session.name.clone().map_or(Reply::Null, Reply::Bulk),
        b"ID" if n == 2 => Reply::Integer(session.id as i64),
        known @ (b"SETNAME" | b"GETNAME" | b"ID") => arity(&format!(
            "client|{}",
            String::from_utf8_lossy(known).to_ascii_lowercase()
        )),
        _ => Reply::error(format!(
            "ERR unknown subcommand '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(sub)
        )),
    }
}

/// `COMMAND [COUNT | DOCS ...]`: enough for `redis-cli`, which asks for the docs of every
/// command to give hints and takes an empty answer.
pub(super) fn command_info(args: &[Vec<u8>]) -> Reply {
    match args.get(1).map(|a| a.to_ascii_uppercase()).as_deref() {
        Some(b"COUNT") => Reply::Integer(COMMANDS.len() as i64),
        Some(b"DOCS") => Reply::Map(vec![]),
        None => Reply::Array(
            COMMANDS
                .iter()
                .map(|c| Reply::bulk(c.to_ascii_lowercase()))
                .collect(),
        ),
        Some(_) => Reply::Array(vec![]),
    }
}

/// `CONFIG GET pattern`: the few settings tools ask for (`redis-benchmark` asks for `save` and
/// `appendonly`), by exact name or `*`.
pub(super) fn config(args: &[Vec<u8>]) -> Reply {
    let sub = args.get(1).map(|a| a.to_ascii_uppercase());
    match (sub.as_deref(), args.len()) {
        (Some(b"GET"), 3) => {
            let known = [("save", ""), ("appendonly", "yes"), ("databases", "1")];
            let pattern = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
            Reply::Map(
                known
                    .iter()
                    .filter(|(k, _)| pattern == "*" || pattern == *k)
                    .map(|(k, v)| (Reply::bulk(*k), Reply::bulk(*v)))
                    .collect(),
            )
        }
        (Some(b"GET"), _) => arity("config|get"),
        _ => Reply::error("ERR only CONFIG GET is supported"),
    }
}

/// What the server answers (for `COMMAND` and `COMMAND COUNT`).
pub(super) const COMMANDS: &[&str] = &[
    "PING",
    "ECHO",
    "QUIT",
    "HELLO",
    "AUTH",
    "SELECT",
    "CLIENT",
    "INFO",
    "COMMAND",
    "CONFIG",
    "GET",
    "MGET",
    "EXISTS",
    "STRLEN",
    "SET",
    "SETNX",
    "GETSET",
    "GETDEL",
    "DEL",
    "UNLINK",
    "MSET",
    "MSETNX",
    "APPEND",
    "INCR",
    "DECR",
    "INCRBY",
    "DECRBY",
    "INCRBYFLOAT",
    "SCAN",
    "KEYS",
    "DBSIZE",
    "FLUSHDB",
    "FLUSHALL",
    "SHUTDOWN",
];
