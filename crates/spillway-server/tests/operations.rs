//! Operations over real sockets, where replies describe the server and so cannot be compared
//! with Redis's byte for byte (`redis_compat/ops.rs` compares the rest): CLIENT LIST's and
//! CLIENT INFO's lines in Redis 7.0's form, CLIENT KILL closing connections, INFO's counts of
//! connections, errors and commands, and CONFIG SET maxclients refusing connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use spillway_server::{run, Config, Fsync};

mod common;
use common::command;

/// Redis 7.0.15's fields of a CLIENT LIST line, in its order.
const FIELDS: [&str; 28] = [
    "id",
    "addr",
    "laddr",
    "fd",
    "name",
    "age",
    "idle",
    "flags",
    "db",
    "sub",
    "psub",
    "ssub",
    "multi",
    "qbuf",
    "qbuf-free",
    "argv-mem",
    "multi-mem",
    "rbs",
    "rbp",
    "obl",
    "oll",
    "omem",
    "tot-mem",
    "events",
    "cmd",
    "user",
    "redir",
    "resp",
];

struct Server {
    addr: SocketAddr,
    thread: Option<thread::JoinHandle<Result<(), String>>>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::new(dir.path());
        config.bind = "127.0.0.1:0".parse().unwrap();
        config.fsync = Fsync::No;
        let (tx, rx) = mpsc::channel();
        let thread = thread::spawn(move || run(config, move |addr| tx.send(addr).unwrap()));
        Server {
            addr: rx.recv().expect("the server started"),
            thread: Some(thread),
            _dir: dir,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(mut s) = TcpStream::connect(self.addr) {
            let _ = s.write_all(&command(&[b"SHUTDOWN"]));
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A client: requests out, replies in (as text: a status, an error, an integer as `:n`, a
/// bulk string's data, `(nil)`).
struct Client {
    socket: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Client {
    fn open(addr: SocketAddr) -> Client {
        let socket = TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let reader = BufReader::new(socket.try_clone().unwrap());
        Client { socket, reader }
    }

    fn ask(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.socket.write_all(&command(&args)).unwrap();
        self.reply()
    }

    fn reply(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let line = line.trim_end().to_owned();
        match line.strip_prefix('$') {
            Some("-1") => "(nil)".into(),
            Some(len) => {
                let mut data = vec![0; len.parse::<usize>().unwrap() + 2];
                self.reader.read_exact(&mut data).unwrap();
                data.truncate(data.len() - 2);
                String::from_utf8(data).unwrap()
            }
            None => line,
        }
    }

    /// Whether the server closed the connection (a read finds its end).
    fn closed(&mut self) -> bool {
        let mut byte = [0];
        matches!(self.reader.read(&mut byte), Ok(0) | Err(_))
    }

    /// The value of `field` in INFO `section`.
    fn info(&mut self, section: &str, field: &str) -> Option<String> {
        let info = self.ask(&["INFO", section]);
        let line = info.lines().find(|l| l.starts_with(&format!("{field}:")));
        line.map(|l| l[field.len() + 1..].to_owned())
    }
}

/// A CLIENT LIST line's fields, in order.
fn fields(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap_or((f, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    let found = fields.iter().find(|(k, _)| k == name);
    found.map_or("", |(_, v)| v.as_str())
}

#[test]
fn client_list_shows_each_connection_in_redis_form() {
    let server = Server::start();
    let mut a = Client::open(server.addr);
    let mut b = Client::open(server.addr);
    let (a_id, b_id) = (a.ask(&["CLIENT", "ID"]), b.ask(&["CLIENT", "ID"]));
    assert_eq!(a.ask(&["CLIENT", "SETNAME", "alpha"]), "+OK");
    assert_eq!(b.ask(&["SELECT", "3"]), "+OK");
    assert_eq!(b.ask(&["MULTI"]), "+OK");
    assert_eq!(b.ask(&["GET", "x"]), "+QUEUED");
    let list = a.ask(&["CLIENT", "LIST"]);
    assert!(list.ends_with('\n'), "{list:?}");
    let lines: Vec<Vec<(String, String)>> = list.lines().map(fields).collect();
    assert_eq!(lines.len(), 2, "{list}");
    for line in &lines {
        let names: Vec<&str> = line.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, FIELDS, "{list}");
    }
    let (mine, other) = (&lines[0], &lines[1]);
    assert_eq!(format!(":{}", field(mine, "id")), a_id);
    assert_eq!(format!(":{}", field(other, "id")), b_id);
    assert_eq!(field(mine, "name"), "alpha");
    assert_eq!(field(mine, "db"), "0");
    assert_eq!(field(mine, "flags"), "N");
    assert_eq!(field(mine, "multi"), "-1");
    assert_eq!(field(mine, "cmd"), "client|list");
    assert_eq!(
        field(mine, "qbuf"),
        "26",
        "*2 CLIENT LIST: its bytes, as Redis"
    );
    assert_eq!(field(mine, "argv-mem"), "10");
    assert_eq!(field(mine, "laddr"), server.addr.to_string());
    assert_eq!(field(other, "name"), "");
    assert_eq!(field(other, "db"), "3");
    assert_eq!(field(other, "flags"), "x", "in a transaction");
    assert_eq!(field(other, "multi"), "1");
    assert_eq!(
        field(other, "multi-mem"),
        "20",
        "GET x: 4 bytes and 2 pointers"
    );
    assert_eq!(
        field(other, "cmd"),
        "get",
        "queued: the last looked up, as Redis"
    );
    assert_eq!(field(other, "qbuf"), "0");
    for line in &lines {
        assert_eq!(field(line, "user"), "default");
        assert_eq!(field(line, "resp"), "2");
        assert!(field(line, "addr").starts_with("127.0.0.1:"));
        assert!(field(line, "fd").parse::<i32>().unwrap() > 2);
        assert!(field(line, "age").parse::<u64>().unwrap() < 10);
    }
    // Filters: by id (as asked, repeats included), by type.
    let by_id = a.ask(&["CLIENT", "LIST", "ID", &b_id[1..], "99999", &b_id[1..]]);
    assert_eq!(by_id.lines().count(), 2);
    assert!(by_id.lines().all(|l| field(&fields(l), "db") == "3"));
    assert_eq!(
        a.ask(&["CLIENT", "LIST", "TYPE", "normal"]).lines().count(),
        2
    );
    assert_eq!(a.ask(&["CLIENT", "LIST", "TYPE", "pubsub"]), "");
    // CLIENT INFO: one line, its own, in the same form.
    assert_eq!(b.ask(&["DISCARD"]), "+OK");
    let info = b.ask(&["CLIENT", "INFO"]);
    assert!(
        info.ends_with('\n') && info.lines().count() == 1,
        "{info:?}"
    );
    let info = fields(info.trim_end());
    assert_eq!(
        info.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        FIELDS
    );
    assert_eq!(format!(":{}", field(&info, "id")), b_id);
    assert_eq!((field(&info, "flags"), field(&info, "multi")), ("N", "-1"));
    assert_eq!(field(&info, "cmd"), "client|info");
    // RESP3: a verbatim string.
    let mut three = Client::open(server.addr);
    three.socket.write_all(&command(&[b"HELLO", b"3"])).unwrap();
    three
        .socket
        .write_all(&command(&[b"CLIENT", b"INFO"]))
        .unwrap();
    let verbatim = (0..100).find_map(|_| {
        let mut line = String::new();
        three.reader.read_line(&mut line).unwrap();
        line.starts_with('=').then_some(line)
    });
    assert!(
        verbatim.is_some(),
        "CLIENT INFO in RESP3 is a verbatim string"
    );
}

#[test]
fn client_kill_closes_the_connections_it_names() {
    let server = Server::start();
    let mut a = Client::open(server.addr);
    let mut b = Client::open(server.addr);
    let mut c = Client::open(server.addr);
    let b_id = b.ask(&["CLIENT", "ID"])[1..].to_owned();
    // By id: the other connection's next read finds its end.
    assert_eq!(a.ask(&["CLIENT", "KILL", "ID", &b_id]), ":1");
    assert!(b.closed());
    assert_eq!(
        a.ask(&["CLIENT", "KILL", "ID", &b_id]),
        ":0",
        "gone already"
    );
    // The old form, by address.
    let c_info = fields(c.ask(&["CLIENT", "INFO"]).trim_end());
    let c_addr = field(&c_info, "addr").to_owned();
    assert_eq!(a.ask(&["CLIENT", "KILL", &c_addr]), "+OK");
    assert!(c.closed());
    assert_eq!(a.ask(&["CLIENT", "KILL", &c_addr]), "-ERR No such client");
    // The filter form spares the client asking, unless SKIPME no: then it closes after its
    // reply.
    let a_id = a.ask(&["CLIENT", "ID"])[1..].to_owned();
    let mut d = Client::open(server.addr);
    assert_eq!(d.ask(&["PING"]), "+PONG"); // connected and registered
    assert_eq!(a.ask(&["CLIENT", "KILL", "TYPE", "normal"]), ":1");
    assert!(d.closed());
    assert_eq!(a.ask(&["PING"]), "+PONG");
    let mut e = Client::open(server.addr);
    assert_eq!(e.ask(&["PING"]), "+PONG");
    assert_eq!(
        a.ask(&["CLIENT", "KILL", "ID", &a_id, "SKIPME", "no"]),
        ":1"
    );
    assert!(a.closed());
    assert_eq!(e.ask(&["PING"]), "+PONG", "the others stay");
    let waited = (0..100).any(|_| {
        thread::sleep(Duration::from_millis(10));
        e.info("clients", "connected_clients").as_deref() == Some("1")
    });
    assert!(waited, "the killed are no longer counted");
}

#[test]
fn info_counts_connections_errors_and_commands() {
    let server = Server::start();
    let mut a = Client::open(server.addr);
    assert_eq!(a.ask(&["CONFIG", "RESETSTAT"]), "+OK");
    assert_eq!(a.ask(&["SET", "s", "abc"]), "+OK");
    assert!(a.ask(&["INCR", "s"]).starts_with("-ERR"));
    assert_eq!(a.ask(&["GET", "s"]), "abc");
    assert_eq!(a.ask(&["GET", "nope"]), "(nil)");
    let errorstats = a.ask(&["INFO", "errorstats"]);
    assert_eq!(errorstats, "# Errorstats\r\nerrorstat_ERR:count=1\r\n");
    assert_eq!(a.info("stats", "total_error_replies").as_deref(), Some("1"));
    assert_eq!(a.info("stats", "keyspace_hits").as_deref(), Some("1"));
    assert_eq!(a.info("stats", "keyspace_misses").as_deref(), Some("1"));
    // RESETSTAT, SET, INCR, GET, GET and four INFOs: each INFO counts those before it.
    assert_eq!(
        a.info("stats", "total_commands_processed").as_deref(),
        Some("9")
    );
    let cmdstat = a.info("commandstats", "cmdstat_incr").unwrap();
    assert!(
        cmdstat.ends_with("rejected_calls=0,failed_calls=1"),
        "{cmdstat}"
    );
    // Connections: the one counted since the reset, then one more.
    assert_eq!(
        a.info("stats", "total_connections_received").as_deref(),
        Some("0")
    );
    let mut b = Client::open(server.addr);
    assert_eq!(b.ask(&["PING"]), "+PONG");
    assert_eq!(
        a.info("stats", "total_connections_received").as_deref(),
        Some("1")
    );
    let input: u64 = a
        .info("stats", "total_net_input_bytes")
        .unwrap()
        .parse()
        .unwrap();
    assert!(input > 100, "{input}");
    // The default sections, in Redis's order; CPU times in Redis's form.
    let titles: Vec<String> = a
        .ask(&["INFO"])
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    let want = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Errorstats",
        "Cluster",
        "Keyspace",
    ];
    assert_eq!(titles, want.map(|t| format!("# {t}")));
    let user = a.info("cpu", "used_cpu_user").unwrap();
    assert!(
        user.split_once('.').is_some_and(|(_, us)| us.len() == 6),
        "{user}"
    );
    // The instantaneous rate, sampled every 100 ms: some commands per second, once a sample
    // after these was taken (a busy machine may take a while to).
    for _ in 0..50 {
        a.ask(&["PING"]);
    }
    let rated = (0..40).any(|_| {
        thread::sleep(Duration::from_millis(50));
        let ops = a.info("stats", "instantaneous_ops_per_sec").unwrap();
        ops.parse::<u64>().unwrap() > 0
    });
    assert!(rated, "instantaneous_ops_per_sec stayed 0");
}

#[test]
fn config_set_maxclients_refuses_the_connections_past_it() {
    let server = Server::start();
    let mut a = Client::open(server.addr);
    assert_eq!(a.ask(&["CONFIG", "SET", "maxclients", "1"]), "+OK");
    let mut refused = Client::open(server.addr);
    assert_eq!(refused.reply(), "-ERR max number of clients reached");
    assert!(refused.closed());
    assert_eq!(
        a.info("stats", "rejected_connections").as_deref(),
        Some("1")
    );
    assert_eq!(a.info("clients", "maxclients").as_deref(), Some("1"));
    assert_eq!(a.ask(&["CONFIG", "SET", "maxclients", "10"]), "+OK");
    let mut b = Client::open(server.addr);
    assert_eq!(b.ask(&["PING"]), "+PONG");
    // The store's memory budget changes while it runs; its other options do not.
    assert_eq!(a.ask(&["CONFIG", "SET", "memory_budget", "256M"]), "+OK");
    let got = a.ask(&["CONFIG", "GET", "memory_budget"]);
    assert!(got.starts_with("*2"), "{got}");
    assert_eq!(a.reply(), "memory_budget");
    assert_eq!(a.reply(), (256 << 20).to_string());
    assert_eq!(
        a.info("memory", "spillway_memory_budget").as_deref(),
        Some("268435456")
    );
    let refused = a.ask(&["CONFIG", "SET", "memory_budget", "1K"]);
    assert!(
        refused.starts_with(
            "-ERR CONFIG SET failed (possibly related to argument 'memory_budget') - "
        ),
        "{refused}"
    );
    assert_eq!(
        a.ask(&["CONFIG", "SET", "node_size", "1M"]),
        "-ERR CONFIG SET failed (possibly related to argument 'node_size') - can't set immutable config"
    );
    // appendfsync: as Redis names the server's --fsync.
    assert_eq!(a.ask(&["CONFIG", "SET", "appendfsync", "always"]), "+OK");
    assert_eq!(
        a.ask(&["SET", "k", "v"]),
        "+OK",
        "a write waits for its fsync"
    );
    assert_eq!(
        a.ask(&["CONFIG", "SET", "appendonly", "no"])
            .split(" - ")
            .nth(1),
        Some("spillway's log is its store: it cannot be turned off")
    );
}
