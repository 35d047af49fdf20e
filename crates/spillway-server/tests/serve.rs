//! The server over real sockets: a pipeline of 10 k commands, many clients at once, malformed
//! input, and SHUTDOWN stopping a server whose store then reopens with every write.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::thread;

use spillway_server::{run, Config, Fsync};

mod common;
use common::command;

type Server = thread::JoinHandle<Result<(), String>>;

fn start(dir: &Path, fsync: Fsync) -> (SocketAddr, Server) {
    let mut config = Config::new(dir);
    config.fsync = fsync;
    start_with(config)
}

fn start_with(mut config: Config) -> (SocketAddr, Server) {
    config.bind = "127.0.0.1:0".parse().unwrap();
    let (tx, rx) = mpsc::channel();
    let server = thread::spawn(move || run(config, move |addr| tx.send(addr).unwrap()));
    (rx.recv().expect("the server started"), server)
}

/// Read one reply: its first line, and a bulk string's data.
fn reply(r: &mut impl BufRead) -> String {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    if let Some(len) = line.strip_prefix('$') {
        let len: i64 = len.trim().parse().unwrap();
        if len >= 0 {
            let mut data = vec![0; len as usize + 2];
            r.read_exact(&mut data).unwrap();
            return String::from_utf8_lossy(&data[..len as usize]).into_owned();
        }
    }
    line.trim_end().to_string()
}

#[test]
fn a_pipeline_of_ten_thousand_commands_answers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = Vec::new();
    for i in 0..5000 {
        req.extend(command(&[
            b"SET",
            format!("k{i}").as_bytes(),
            format!("v{i}").as_bytes(),
        ]));
        req.extend(command(&[b"GET", format!("k{}", i / 2).as_bytes()]));
    }
    s.write_all(&req).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    for i in 0..5000 {
        assert_eq!(reply(&mut r), "+OK", "SET {i}");
        assert_eq!(reply(&mut r), format!("v{}", i / 2), "GET {}", i / 2);
    }
    // Inline commands, as telnet and redis-cli in a pipe send them.
    s.write_all(b"INCR n\r\nINCRBY n 41\r\nECHO \"a b\"\r\n")
        .unwrap();
    assert_eq!(reply(&mut r), ":1");
    assert_eq!(reply(&mut r), ":42");
    assert_eq!(reply(&mut r), "a b");
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
    // The store closed cleanly and holds every write.
    let db = spillway::Db::open(dir.path(), Default::default()).unwrap();
    assert_eq!(db.get("k4999").unwrap(), Some(b"v4999".to_vec()));
    assert_eq!(db.get("n").unwrap(), Some(b"42".to_vec()));
}

#[test]
fn clients_writing_at_once_each_find_their_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::EverySec);
    let clients: Vec<_> = (0..200)
        .map(|c| {
            thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let mut r = BufReader::new(s.try_clone().unwrap());
                for i in 0..50 {
                    let k = format!("c{c}-{i}");
                    s.write_all(&command(&[b"SET", k.as_bytes(), b"x"]))
                        .unwrap();
                    assert_eq!(reply(&mut r), "+OK");
                    s.write_all(&command(&[b"INCR", format!("count{c}").as_bytes()]))
                        .unwrap();
                    assert_eq!(reply(&mut r), format!(":{}", i + 1));
                }
                s.write_all(&command(&[b"GET", format!("c{c}-49").as_bytes()]))
                    .unwrap();
                assert_eq!(reply(&mut r), "x");
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// `INFO clients` counts the connections open.
#[test]
fn info_counts_the_clients_connected() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::No);
    let connected = |s: &mut TcpStream| {
        s.write_all(&command(&[b"INFO", b"clients"])).unwrap();
        let info = reply(&mut BufReader::new(s.try_clone().unwrap()));
        let line = info.lines().find(|l| l.starts_with("connected_clients:"));
        line.and_then(|l| l[18..].parse::<usize>().ok())
    };
    let mut one = TcpStream::connect(addr).unwrap();
    assert_eq!(connected(&mut one), Some(1));
    let mut two = TcpStream::connect(addr).unwrap();
    assert_eq!(connected(&mut two), Some(2));
    drop(two);
    let left = (0..100).any(|_| {
        thread::sleep(std::time::Duration::from_millis(10));
        connected(&mut one) == Some(1)
    });
    assert!(left, "a client that left is not counted");
    one.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
}

#[test]
fn malformed_and_oversized_input_gets_an_error_and_the_connection_closes() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::No);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"*1\r\n+PING\r\n").unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap(); // to EOF: the server closed it
    assert_eq!(rest, "-ERR Protocol error: expected '$', got '+'\r\n");
    // A bulk string longer than the largest value: refused before it is read.
    let mut s = TcpStream::connect(addr).unwrap();
    let huge = spillway::MAX_VALUE_LEN + 1;
    s.write_all(format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${huge}\r\n").as_bytes())
        .unwrap();
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "-ERR Protocol error: invalid bulk length\r\n");
    // Others are served on.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"PING\r\nNOSUCH x\r\n").unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(reply(&mut r), "+PONG");
    assert!(reply(&mut r).starts_with("-ERR unknown command 'NOSUCH'"));
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// A server that cannot listen (the port is taken) fails before it opens the store: it
/// creates no folder, and leaves an existing one as it was.
#[test]
fn a_server_that_cannot_bind_touches_no_store() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("store");
    for path in [absent.as_path(), dir.path()] {
        let mut config = Config::new(path);
        config.bind = taken.local_addr().unwrap();
        let failed = run(config, |_| panic!("it is not serving"));
        assert!(failed.unwrap_err().starts_with("binding 127.0.0.1:"));
    }
    assert!(!absent.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Before AUTH a client may announce at most 10 arguments and 16 KiB a bulk string, as in
/// Redis: more is refused from its header, before any of it is waited for, and the connection
/// closes. After AUTH (in the same packet too) the usual limits hold.
#[test]
fn unauthenticated_clients_cannot_announce_large_requests() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.fsync = Fsync::No;
    config.password = Some("pw".into());
    let (addr, server) = start_with(config);
    let refused = |announce: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        // Waiting for what was announced would block here, not hang the test.
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.write_all(announce).unwrap();
        let mut rest = String::new();
        s.read_to_string(&mut rest).map(|_| rest)
    };
    assert_eq!(
        refused(b"*100\r\n").unwrap(),
        "-ERR Protocol error: unauthenticated multibulk length\r\n"
    );
    let mut bulk = command(&[b"AUTH", b"pw"]);
    bulk.truncate(14); // "*2\r\n$4\r\nAUTH\r\n"
    bulk.extend(format!("${}\r\n", 10 << 20).as_bytes());
    assert_eq!(
        refused(&bulk).unwrap(),
        "-ERR Protocol error: unauthenticated bulk length\r\n"
    );
    // Ten arguments and 16 KiB are still read (and refused for want of AUTH).
    let mut ten: Vec<&[u8]> = vec![b"x"; 10];
    ten[0] = b"DEL";
    let mut s = TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(&command(&ten)).unwrap();
    assert_eq!(reply(&mut r), "-NOAUTH Authentication required.");
    s.write_all(&command(&[b"ECHO", &[b'x'; 16 << 10]]))
        .unwrap();
    assert_eq!(reply(&mut r), "-NOAUTH Authentication required.");
    // AUTH and a large request in one write: the AUTH runs before the next is read.
    let big = vec![b'v'; 1 << 20];
    let mut req = command(&[b"AUTH", b"pw"]);
    req.extend(command(&[b"SET", b"k", &big]));
    let eleven: Vec<&[u8]> = [b"MSET" as &[u8]]
        .into_iter()
        .chain((0..10).map(|_| b"k" as &[u8]))
        .collect();
    req.extend(command(&eleven));
    s.write_all(&req).unwrap();
    assert_eq!(reply(&mut r), "+OK");
    assert_eq!(reply(&mut r), "+OK");
    assert_eq!(reply(&mut r), "+OK");
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// A client that pipelines big answers and never reads them, one that sent half a request,
/// and one idle: none of them holds up the others, and clients past `max_clients` are
/// refused with Redis's error.
#[test]
fn slow_and_idle_clients_block_no_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path());
    config.fsync = Fsync::No;
    config.max_clients = 4;
    let (addr, server) = start_with(config);
    let mut s = TcpStream::connect(addr).unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    s.write_all(&command(&[b"SET", b"big", &vec![b'x'; 1 << 20]]))
        .unwrap();
    assert_eq!(reply(&mut r), "+OK");

    // 64 MiB of answers asked for, none read: the server stops reading this client.
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_write_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let get = command(&[b"GET", b"big"]);
    for _ in 0..64 {
        if slow.write_all(&get).is_err() {
            break; // its buffers are full: it is blocked, the server is not
        }
    }
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"*2\r\n$3\r\nGET\r\n$10\r\nabc").unwrap();
    let idle = TcpStream::connect(addr).unwrap();
    for i in 0..100 {
        s.write_all(&command(&[b"INCR", b"n"])).unwrap();
        assert_eq!(reply(&mut r), format!(":{}", i + 1));
    }
    // Four connected: a fifth is refused, and served once one leaves.
    let mut fifth = TcpStream::connect(addr).unwrap();
    let mut refused = String::new();
    fifth.read_to_string(&mut refused).unwrap();
    assert_eq!(refused, "-ERR max number of clients reached\r\n");
    drop(half);
    let answered = (0..100).any(|_| {
        thread::sleep(std::time::Duration::from_millis(20));
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"PING\r\n").unwrap();
        let mut line = String::new();
        BufReader::new(c).read_line(&mut line).is_ok() && line == "+PONG\r\n"
    });
    assert!(answered, "a client leaving made room");
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    drop((slow, idle));
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// The child side of the kill test: serve `SPILLWAY_SERVE_CHILD`'s folder with `--fsync
/// always` on a free port, and print the port. A no-op when the variable is unset.
#[test]
fn serve_child() {
    let Some(dir) = std::env::var_os("SPILLWAY_SERVE_CHILD") else {
        return;
    };
    let mut config = Config::new(dir);
    config.bind = "127.0.0.1:0".parse().unwrap();
    run(config, |addr| println!("port {}", addr.port())).unwrap();
}

/// A server killed with SIGKILL while eight clients pipeline SETs: every SET it acknowledged
/// is in the store when it is opened again.
#[test]
fn every_acknowledged_set_survives_a_kill() {
    kill_under_load(false);
}

/// The same with `redis-benchmark` pipelining SETs from 50 more clients meanwhile (Debian
/// `redis-tools`; `.ci/run` runs it).
#[test]
#[ignore = "needs redis-benchmark (Debian redis-tools): .ci/run runs it"]
fn every_acknowledged_set_survives_a_kill_under_redis_benchmark() {
    kill_under_load(true);
}

fn kill_under_load(with_benchmark: bool) {
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "serve_child", "--nocapture"])
        .env("SPILLWAY_SERVE_CHILD", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child exited");
        if let Some(p) = line.trim().strip_prefix("port ") {
            break p.parse::<u16>().unwrap();
        }
    };
    let mut benchmark = with_benchmark.then(|| {
        Command::new("redis-benchmark")
            .args(["-p", &port.to_string(), "-t", "set", "-n", "100000000"])
            .args(["-r", "1000000", "-P", "16", "-c", "50", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-benchmark (Debian redis-tools)")
    });
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut acked = Vec::new();
                let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                    return acked;
                };
                let mut r = BufReader::new(s.try_clone().unwrap());
                for round in 0u32.. {
                    if stop.load(Relaxed) {
                        break;
                    }
                    let keys: Vec<String> = (0..16).map(|i| format!("c{c}-{round}-{i}")).collect();
                    let mut req = Vec::new();
                    for k in &keys {
                        req.extend(command(&[b"SET", k.as_bytes(), b"acked"]));
                    }
                    if s.write_all(&req).is_err() {
                        break;
                    }
                    for k in keys {
                        let mut line = String::new();
                        match r.read_line(&mut line) {
                            Ok(n) if n > 0 && line == "+OK\r\n" => acked.push(k),
                            _ => return acked,
                        }
                    }
                }
                acked
            })
        })
        .collect();
    thread::sleep(std::time::Duration::from_millis(700));
    if let Some(b) = &mut benchmark {
        assert!(
            b.try_wait().unwrap().is_none(),
            "redis-benchmark was loading it"
        );
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    if let Some(b) = &mut benchmark {
        let _ = b.kill();
        b.wait().unwrap();
    }
    stop.store(true, Relaxed);
    let acked: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(acked.len() > 100, "only {} SETs acknowledged", acked.len());
    eprintln!("{} SETs acknowledged before the kill", acked.len());
    let db = spillway::Db::open(dir.path(), Default::default()).unwrap();
    for k in &acked {
        assert_eq!(
            db.get(k).unwrap(),
            Some(b"acked".to_vec()),
            "{k} was acknowledged"
        );
    }
}

/// Redis's own tools against the server: `redis-cli` one command at a time and in `--pipe`
/// mode, and `redis-benchmark` pipelining from 20 clients. Needs Debian's `redis-tools`;
/// `.ci/run` installs it and runs this test.
#[test]
#[ignore = "needs redis-cli and redis-benchmark (Debian redis-tools): .ci/run runs it"]
fn redis_cli_and_redis_benchmark_talk_to_it() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let port = addr.port().to_string();
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .output()
            .expect("redis-cli (Debian redis-tools)");
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    };
    assert_eq!(cli(&["PING"]), "PONG");
    assert_eq!(cli(&["SET", "greeting", "hello world"]), "OK");
    assert_eq!(cli(&["GET", "greeting"]), "hello world");
    assert_eq!(cli(&["INCRBY", "n", "5"]), "5");
    assert_eq!(
        cli(&["--no-raw", "MGET", "greeting", "missing"]),
        "1) \"hello world\"\n2) (nil)"
    );
    assert!(cli(&["NOSUCH"]).starts_with("ERR unknown command 'NOSUCH'"));
    assert!(cli(&["INFO", "server"]).contains("spillway_version:"));

    // --pipe: 10,000 commands in one stream, the replies counted.
    let mut input = Vec::new();
    for i in 0..10_000 {
        input.extend(command(&[b"SET", format!("p{i}").as_bytes(), b"1"]));
    }
    let mut pipe = Command::new("redis-cli")
        .args(["-p", &port, "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    pipe.stdin.take().unwrap().write_all(&input).unwrap();
    let out = pipe.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("errors: 0, replies: 10000"),
        "{text}"
    );
    assert_eq!(cli(&["GET", "p9999"]), "1");

    let out = Command::new("redis-benchmark")
        .args([
            "-p",
            &port,
            "-t",
            "set,get,incr,mset",
            "-n",
            "20000",
            "-P",
            "16",
            "-c",
            "20",
        ])
        .args(["-r", "100000", "-q"])
        .output()
        .expect("redis-benchmark (Debian redis-tools)");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "\n");
    assert!(out.status.success(), "{text}");
    for test in ["SET:", "GET:", "INCR:", "MSET (10 keys):"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(test) && l.contains("requests per second")),
            "{test} missing from:\n{text}"
        );
    }
    cli(&["SHUTDOWN"]);
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// redis-py, the Python client, against the server (`tests/redis_py.py`): its commands,
/// pipelines, SCAN iterator, INFO parser and RESP3. Needs a Python with redis-py
/// (`SPILLWAY_PYTHON`, default `python3`); `.ci/run` installs one and runs this test.
#[test]
#[ignore = "needs redis-py (PyPI): .ci/run installs it and runs this test"]
fn redis_py_talks_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let python = std::env::var("SPILLWAY_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/redis_py.py");
    let out = std::process::Command::new(&python)
        .args([script, &addr.port().to_string()])
        .output()
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&command(&[b"SHUTDOWN"])).unwrap();
    assert_eq!(server.join().unwrap(), Ok(()));
}

// ---- Blocking pops (BLPOP, BRPOP, BLMOVE...): a client waits for another's push ----

/// One whole reply, arrays as `[a, b]`, nil as `nil`.
fn value(r: &mut impl BufRead) -> String {
    let line = reply(r);
    match line.strip_prefix('*') {
        Some("-1") => "nil".into(),
        Some(n) => {
            let n: usize = n.parse().unwrap();
            let items: Vec<String> = (0..n).map(|_| value(r)).collect();
            format!("[{}]", items.join(", "))
        }
        None if line == "$-1" => "nil".into(),
        None => line,
    }
}

/// A client connection: send a command, read a reply.
struct Client {
    s: TcpStream,
    r: BufReader<TcpStream>,
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        // A reply that never comes fails the test rather than hanging it.
        s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        Client { s, r }
    }

    fn send(&mut self, args: &[&str]) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.s.write_all(&command(&args)).unwrap();
    }

    fn read(&mut self) -> String {
        value(&mut self.r)
    }

    fn call(&mut self, args: &[&str]) -> String {
        self.send(args);
        self.read()
    }

    /// Wait until `INFO clients` shows `n` blocked clients (and `connected` connected, if
    /// given): what a test must know before it pushes.
    fn await_clients(&mut self, blocked: usize, connected: Option<usize>) {
        let field = |info: &str, name: &str| {
            let line = info.lines().find(|l| l.starts_with(name));
            line.and_then(|l| l[name.len()..].parse::<usize>().ok())
        };
        for _ in 0..2000 {
            let info = self.call(&["INFO", "clients"]);
            if field(&info, "blocked_clients:") == Some(blocked)
                && connected.is_none_or(|c| field(&info, "connected_clients:") == Some(c))
            {
                return;
            }
            thread::sleep(std::time::Duration::from_millis(5));
        }
        panic!("never {blocked} blocked clients");
    }
}

fn stop(addr: SocketAddr, server: Server) {
    Client::new(addr).send(&["SHUTDOWN"]);
    assert_eq!(server.join().unwrap(), Ok(()));
}

/// A client blocked on empty lists gets what another pushes, then its pipelined commands run;
/// one that times out gets nil, after its timeout and not before.
#[test]
fn a_blocked_pop_gets_what_another_client_pushes() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let (mut a, mut b) = (Client::new(addr), Client::new(addr));
    // Pipelined: the PING after the BLPOP waits for it.
    a.s.write_all(
        &[
            command(&[b"BLPOP", b"none", b"k", b"0"]),
            command(&[b"PING"]),
        ]
        .concat(),
    )
    .unwrap();
    b.await_clients(1, None);
    assert_eq!(b.call(&["RPUSH", "k", "v1", "v2"]), ":2");
    assert_eq!(a.read(), "[k, v1]");
    assert_eq!(a.read(), "+PONG");
    b.await_clients(0, None);
    assert_eq!(b.call(&["LRANGE", "k", "0", "-1"]), "[v2]");
    // A non-empty list: at once.
    assert_eq!(a.call(&["BRPOP", "k", "0"]), "[k, v2]");
    assert_eq!(a.call(&["EXISTS", "k"]), ":0");
    // The timeout: nil, once it has passed.
    let started = std::time::Instant::now();
    assert_eq!(a.call(&["BRPOP", "k", "0.3"]), "nil");
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    assert_eq!(a.call(&["BLMOVE", "k", "d", "LEFT", "LEFT", "0.2"]), "nil");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    // In MULTI it does not block.
    a.send(&["MULTI"]);
    a.send(&["BLPOP", "k", "0"]);
    a.send(&["EXEC"]);
    assert_eq!([a.read(), a.read(), a.read()], ["+OK", "+QUEUED", "[nil]"]);
    stop(addr, server);
}

/// Clients blocked on a key are served in the order they blocked, one element each.
#[test]
fn blocked_clients_are_served_first_come_first_served() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let (mut first, mut second, mut third, mut b) = (
        Client::new(addr),
        Client::new(addr),
        Client::new(addr),
        Client::new(addr),
    );
    first.send(&["BLPOP", "k", "0"]);
    b.await_clients(1, None);
    second.send(&["BRPOP", "other", "k", "0"]);
    b.await_clients(2, None);
    third.send(&["BLPOP", "k", "0"]);
    b.await_clients(3, None);
    assert_eq!(b.call(&["RPUSH", "k", "1"]), ":1");
    assert_eq!(first.read(), "[k, 1]");
    b.await_clients(2, None);
    assert_eq!(b.call(&["RPUSH", "k", "2", "3"]), ":2");
    assert_eq!(second.read(), "[k, 3]", "BRPOP pops from the right");
    assert_eq!(third.read(), "[k, 2]");
    b.await_clients(0, None);
    assert_eq!(b.call(&["EXISTS", "k"]), ":0");
    stop(addr, server);
}

/// A blocked client whose connection closes takes nothing: the next waiter, or the list, keeps
/// what is pushed.
#[test]
fn a_blocked_client_that_leaves_takes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let (mut gone, mut next, mut b) = (Client::new(addr), Client::new(addr), Client::new(addr));
    gone.send(&["BLPOP", "k", "0"]);
    b.await_clients(1, Some(3));
    drop(gone);
    b.await_clients(0, Some(2));
    assert_eq!(b.call(&["RPUSH", "k", "kept"]), ":1");
    assert_eq!(b.call(&["LRANGE", "k", "0", "-1"]), "[kept]");
    // Two blocked, the first leaves: the second gets the element.
    let mut gone = Client::new(addr);
    gone.send(&["BLPOP", "j", "0"]);
    b.await_clients(1, None);
    next.send(&["BLPOP", "j", "0"]);
    b.await_clients(2, None);
    drop(gone);
    b.await_clients(1, None);
    assert_eq!(b.call(&["RPUSH", "j", "x"]), ":1");
    assert_eq!(next.read(), "[j, x]");
    assert_eq!(b.call(&["LRANGE", "k", "0", "-1"]), "[kept]");
    stop(addr, server);
}

/// BLMOVE waits for its source and moves what is pushed there; a client blocked on the
/// destination is woken by the move.
#[test]
fn a_blocked_move_moves_what_is_pushed() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = start(dir.path(), Fsync::Always);
    let (mut mover, mut popper, mut b) = (Client::new(addr), Client::new(addr), Client::new(addr));
    mover.send(&["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]);
    b.await_clients(1, None);
    popper.send(&["BRPOPLPUSH", "dst", "final", "0"]);
    b.await_clients(2, None);
    assert_eq!(b.call(&["LPUSH", "src", "x"]), ":1");
    assert_eq!(mover.read(), "x");
    assert_eq!(popper.read(), "x");
    assert_eq!(b.call(&["LRANGE", "final", "0", "-1"]), "[x]");
    assert_eq!(b.call(&["EXISTS", "src", "dst"]), ":0");
    stop(addr, server);
}
