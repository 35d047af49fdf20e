//! Redis as a session store: a `redis-server` of the run's own (Debian's package), started in
//! the engine's folder on a free loopback port with persistence off, and `SET key value PX ms`.
//! Redis expires keys itself, lazily on access and by sampling in the background; what it
//! holds is measured as its `used_memory`, not on disk. The client is a few lines of RESP over
//! a `TcpStream`: no client crate.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::engine::RecordBatch;
use crate::session_engine::{MemoryUse, SessionEngine};

/// How long `redis-server` may take to answer its first PING.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `redis-server` is on the PATH.
pub fn installed() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Redis {
    server: Child,
    addr: SocketAddr,
    log: PathBuf,
    /// Connections not in use: each caller takes one (or opens one) and gives it back.
    idle: Mutex<Vec<Conn>>,
}

pub fn open(dir: &Path) -> Result<Box<dyn SessionEngine>, String> {
    // A port the OS just gave out and took back: free, barring a race with another program,
    // which the wait below would report.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("finding a free port: {e}"))?
        .port();
    let log = dir.join("redis.log");
    let out = File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let server = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--dir")
        .arg(dir)
        // No snapshots, no append-only file, in the foreground.
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("starting redis-server (apt-get install redis-server): {e}"))?;
    let mut redis = Redis {
        server,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        log,
        idle: Mutex::new(Vec::new()),
    };
    let first = redis.wait_ready()?;
    redis
        .idle
        .get_mut()
        .unwrap_or_else(|e| e.into_inner())
        .push(first);
    Ok(Box::new(redis))
}

impl Redis {
    /// A connection that has had its PONG.
    fn wait_ready(&mut self) -> Result<Conn, String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(mut c) = Conn::connect(self.addr) {
                if c.call(&[b"PING"]).is_ok() {
                    return Ok(c);
                }
            }
            let exited = self.server.try_wait().map_err(|e| e.to_string())?;
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                return Err(format!("redis-server did not start ({exited:?}): {log}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, String>) -> Result<T, String> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut conn = match idle {
            Some(c) => c,
            None => Conn::connect(self.addr).map_err(|e| format!("connecting to redis: {e}"))?,
        };
        let out = f(&mut conn)?;
        // A connection whose call failed is dropped above (`?`): its stream may be mid-reply.
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(conn);
        Ok(out)
    }
}

impl Redis {
    /// A section of `INFO`.
    fn info(&self, section: &[u8]) -> Result<String, String> {
        self.with_conn(|c| match c.call(&[b"INFO", section])? {
            Reply::Bulk(Some(text)) => Ok(String::from_utf8_lossy(&text).into_owned()),
            other => Err(format!("redis INFO answered {other:?}")),
        })
    }
}

/// Field `name` of an `INFO` reply (`name:value` lines).
fn info_field<T: std::str::FromStr>(info: &str, name: &str) -> Result<T, String> {
    info.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.trim().parse::<T>().ok())
        .ok_or_else(|| format!("redis INFO has no {name}"))
}

impl SessionEngine for Redis {
    /// One `SET key value PX ms` per record, all of a batch sent at once (pipelined) and
    /// their replies read after. Redis has no persistence here, so `sync` changes nothing.
    fn put(&self, batch: &RecordBatch, ttl: Duration, _sync: bool) -> Result<(), String> {
        let px = ttl.as_millis().max(1).to_string();
        self.with_conn(|c| {
            for (k, v) in batch.iter() {
                c.send(&[b"SET", k, v, b"PX", px.as_bytes()]);
            }
            c.flush()?;
            for _ in 0..batch.len() {
                match c.reply()? {
                    Reply::Simple(s) if s == "OK" => {}
                    other => return Err(format!("redis SET answered {other:?}")),
                }
            }
            Ok(())
        })
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        self.with_conn(|c| match c.call(&[b"GET", key])? {
            Reply::Bulk(v) => Ok(v),
            other => Err(format!("redis GET answered {other:?}")),
        })
    }

    fn memory(&self) -> Option<Result<MemoryUse, String>> {
        Some(self.info(b"memory").and_then(|info| {
            Ok(MemoryUse {
                used_memory: info_field(&info, "used_memory")?,
                used_memory_rss: info_field(&info, "used_memory_rss")?,
            })
        }))
    }

    fn server_cpu_seconds(&self) -> Option<Result<f64, String>> {
        Some(self.info(b"cpu").and_then(|info| {
            Ok(info_field::<f64>(&info, "used_cpu_sys")?
                + info_field::<f64>(&info, "used_cpu_user")?)
        }))
    }

    fn close(mut self: Box<Self>) -> Result<(), String> {
        self.idle
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let _ = self.server.kill();
        self.server.wait().map_err(|e| e.to_string())?;
        Ok(())
    }
}

impl Drop for Redis {
    /// Also on an error path: no `redis-server` outlives its engine's turn.
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// A RESP reply, as far as these commands need.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    /// `None`: the null bulk string (a missing key).
    Bulk(Option<Vec<u8>>),
}

/// One connection: requests buffered until `flush`, replies read from a buffered reader.
struct Conn {
    out: BufWriter<TcpStream>,
    input: BufReader<TcpStream>,
}

impl Conn {
    fn connect(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Conn {
            out: BufWriter::with_capacity(1 << 16, stream.try_clone()?),
            input: BufReader::with_capacity(1 << 16, stream),
        })
    }

    /// Buffer `args` as a RESP array of bulk strings. Writing to a `BufWriter` of a live
    /// stream fails only when it flushes, which `flush` reports.
    fn send(&mut self, args: &[&[u8]]) {
        let mut head = format!("*{}\r\n", args.len());
        let _ = self.out.write_all(head.as_bytes());
        for a in args {
            head.clear();
            head.push_str(&format!("${}\r\n", a.len()));
            let _ = self.out.write_all(head.as_bytes());
            let _ = self.out.write_all(a);
            let _ = self.out.write_all(b"\r\n");
        }
    }

    fn flush(&mut self) -> Result<(), String> {
        self.out
            .flush()
            .map_err(|e| format!("writing to redis: {e}"))
    }

    fn call(&mut self, args: &[&[u8]]) -> Result<Reply, String> {
        self.send(args);
        self.flush()?;
        self.reply()
    }

    fn line(&mut self) -> Result<String, String> {
        let mut line = String::new();
        let n = self
            .input
            .read_line(&mut line)
            .map_err(|e| format!("reading from redis: {e}"))?;
        if n == 0 {
            return Err("redis closed the connection".into());
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }

    fn reply(&mut self) -> Result<Reply, String> {
        let line = self.line()?;
        let (kind, rest) = line.split_at(line.len().min(1));
        let number = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| format!("redis sent a bad length or integer: {line:?}"))
        };
        match kind {
            "+" => Ok(Reply::Simple(rest.to_string())),
            "-" => Ok(Reply::Error(rest.to_string())),
            ":" => Ok(Reply::Integer(number(rest)?)),
            "$" => {
                let len = number(rest)?;
                if len < 0 {
                    return Ok(Reply::Bulk(None));
                }
                let mut data = vec![0; len as usize + 2];
                self.input
                    .read_exact(&mut data)
                    .map_err(|e| format!("reading from redis: {e}"))?;
                data.truncate(len as usize);
                Ok(Reply::Bulk(Some(data)))
            }
            _ => Err(format!(
                "redis sent a reply this client does not read: {line:?}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's replies, fed through a socket pair, parse as the commands expect.
    #[test]
    fn replies_parse() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 256];
            let _ = s.read(&mut buf).unwrap();
            s.write_all(b"+OK\r\n$3\r\nabc\r\n$-1\r\n:42\r\n-ERR no\r\n$0\r\n\r\n")
                .unwrap();
        });
        let mut c = Conn::connect(addr).unwrap();
        c.send(&[b"PING"]);
        c.flush().unwrap();
        assert_eq!(c.reply().unwrap(), Reply::Simple("OK".into()));
        assert_eq!(c.reply().unwrap(), Reply::Bulk(Some(b"abc".to_vec())));
        assert_eq!(c.reply().unwrap(), Reply::Bulk(None));
        assert_eq!(c.reply().unwrap(), Reply::Integer(42));
        assert_eq!(c.reply().unwrap(), Reply::Error("ERR no".into()));
        assert_eq!(c.reply().unwrap(), Reply::Bulk(Some(Vec::new())));
        server.join().unwrap();
    }
}
