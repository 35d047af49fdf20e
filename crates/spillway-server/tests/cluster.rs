//! `scripts/cluster.sh 3`: three servers behind twemproxy. Writes through the proxy spread
//! over every server; a server killed with SIGKILL and started again serves every write it
//! acknowledged, and the script stops everything on SIGTERM.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use spillway_server::{run, Config, Fsync};

mod common;
use common::command;

const SERVERS: usize = 3;
const KEYS: usize = 3000;

/// `spillway serve` played by this test binary, so that the test needs no release build of
/// the CLI: the script runs a shim that execs `--exact cluster_child` with serve's arguments
/// in `SPILLWAY_CLUSTER_CHILD`. A no-op when the variable is unset.
#[test]
fn cluster_child() {
    let Ok(args) = std::env::var("SPILLWAY_CLUSTER_CHILD") else {
        return;
    };
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(args.first(), Some(&"serve"), "{args:?}");
    let flag = |name: &str| {
        let at = args.iter().position(|a| *a == name);
        at.map(|i| args[i + 1])
    };
    let mut config = Config::new(flag("--path").expect("--path"));
    config.bind = flag("--bind").expect("--bind").parse().unwrap();
    config.fsync = match flag("--fsync") {
        None | Some("always") => Fsync::Always,
        Some("everysec") => Fsync::EverySec,
        Some("no") => Fsync::No,
        Some(other) => panic!("--fsync {other}"),
    };
    run(config, |addr| eprintln!("spillway: serving on {addr}")).unwrap();
}

#[test]
#[ignore = "needs nutcracker (Debian package): .ci/run runs it"]
fn keys_spread_over_the_servers_and_survive_a_kill() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    // Set SPILLWAY to run the real binary instead.
    let spillway = match std::env::var_os("SPILLWAY") {
        Some(bin) => PathBuf::from(bin),
        None => shim(dir.path()),
    };
    let (base, proxy_port, stats_port) = free_ports();
    let cluster_dir = dir.path().join("cluster");
    let mut cluster = Cluster::start(&spillway, &cluster_dir, base, proxy_port, stats_port);
    let proxy = ("127.0.0.1", proxy_port);
    let mut model = Model::default();

    let keys: Vec<String> = (0..KEYS).map(|i| format!("k{i}")).collect();
    let first = tagged(&keys, "a");
    let acked = set_all(proxy, &first, &mut model);
    assert_eq!(
        acked, KEYS,
        "every SET is acknowledged while all servers run"
    );

    // Each key on exactly one server, and each server with a fair share.
    let mut owner = HashMap::new();
    let mut counts = [0; SERVERS];
    for (s, count) in counts.iter_mut().enumerate() {
        let values = get_all(("127.0.0.1", base + 1 + s as u16), &keys);
        for ((k, v), (_, written)) in keys.iter().zip(values).zip(&first) {
            if let Some(v) = v {
                assert_eq!(&v, written, "{k} on s{}", s + 1);
                assert_eq!(owner.insert(k.clone(), s), None, "{k} on two servers");
                *count += 1;
            }
        }
    }
    eprintln!("keys per server: {counts:?}");
    assert_eq!(owner.len(), KEYS, "every key is on a server");
    for (s, &c) in counts.iter().enumerate() {
        assert!(c > KEYS / 5, "s{} holds only {c} of {KEYS} keys", s + 1);
    }

    // s2 killed: its keys fail (the proxy does not move them), the others are written on.
    let victim = 1;
    let pid_file = cluster_dir.join(format!("s{}.pid", victim + 1));
    let old_pid = read_pid(&pid_file);
    kill("-KILL", old_pid);
    wait_until("the killed server is gone", || !alive(old_pid));
    let second = tagged(&keys, "b");
    let fresh = tagged(&(0..1000).map(|i| format!("n{i}")).collect::<Vec<_>>(), "b");
    let before = model.errors.len();
    set_all(proxy, &second, &mut model);
    set_all(proxy, &fresh, &mut model);
    for k in &keys {
        let ok = model.values[k].acked == format!("b-{k}");
        assert_eq!(
            ok,
            owner[k] != victim,
            "{k} (on s{}) acknowledged: {ok}",
            owner[k] + 1
        );
    }
    let mut errors = model.errors[before..].to_vec();
    errors.dedup();
    eprintln!("errors while s2 was down: {errors:?}");

    // Started again with the same command: the proxy reconnects on the next request for it.
    let restarted = restart(&spillway, &cluster_dir, victim, base);
    let probe = keys.iter().find(|k| owner[*k] == victim).unwrap().clone();
    let probe_value = model.values[&probe].acked.clone();
    let down_since = Instant::now();
    wait_until("the proxy serves the restarted server's keys", || {
        get_all(proxy, std::slice::from_ref(&probe))[0].as_ref() == Some(&probe_value)
    });
    eprintln!("back after {:?}", down_since.elapsed());
    let third = tagged(&keys, "c")
        .into_iter()
        .step_by(2)
        .collect::<Vec<_>>();
    assert_eq!(set_all(proxy, &third, &mut model), third.len());

    // Every acknowledged write, read through the proxy, with its last acknowledged value
    // (or a later write's value: a write that got an error may still have been applied).
    let all: Vec<String> = model.values.keys().cloned().collect();
    for (k, got) in all.iter().zip(get_all(proxy, &all)) {
        let want = &model.values[k];
        let fine = match &got {
            Some(v) => *v == want.acked || want.later.contains(v),
            None => want.acked.is_empty(),
        };
        assert!(fine, "{k}: read {got:?}, acknowledged {want:?}");
    }
    eprintln!(
        "{} keys checked, {} with an acknowledged value",
        all.len(),
        model
            .values
            .values()
            .filter(|v| !v.acked.is_empty())
            .count()
    );

    let pids: Vec<u32> = (1..=SERVERS)
        .map(|i| read_pid(&cluster_dir.join(format!("s{i}.pid"))))
        .chain([read_pid(&cluster_dir.join("nutcracker.pid"))])
        .collect();
    assert!(
        pids.contains(&restarted.1),
        "the pid file names the restarted server"
    );
    let status = cluster.stop();
    assert!(status.success(), "cluster.sh exited with {status}");
    for pid in pids {
        assert!(!alive(pid), "pid {pid} outlived cluster.sh");
    }
    let restarted_exit = restarted.0.join().unwrap();
    assert!(
        restarted_exit.success(),
        "the restarted server: {restarted_exit}"
    );
    eprintln!("took {:?}", started.elapsed());
}

/// Each key with the value `TAG-KEY`.
fn tagged(keys: &[String], tag: &str) -> Vec<(String, String)> {
    keys.iter()
        .map(|k| (k.clone(), format!("{tag}-{k}")))
        .collect()
}

/// The script, running until `stop`; killed with the cluster if the test fails first.
struct Cluster {
    script: Option<Child>,
    dir: PathBuf,
}

impl Cluster {
    fn start(spillway: &Path, dir: &Path, base: u16, proxy: u16, stats: u16) -> Cluster {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster.sh");
        let mut child = Command::new(script)
            .arg(SERVERS.to_string())
            .arg(dir)
            .env("SPILLWAY", spillway)
            // Acknowledged writes survive a process's death without an fsync per write.
            .env("SPILLWAY_FSYNC", "everysec")
            .env("SPILLWAY_BASE_PORT", base.to_string())
            .env("SPILLWAY_PROXY_PORT", proxy.to_string())
            .env("SPILLWAY_STATS_PORT", stats.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("scripts/cluster.sh");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let cluster = Cluster {
            script: Some(child),
            dir: dir.to_path_buf(),
        };
        let mut printed = String::new();
        // Its last line comes once the proxy answers.
        while !printed.contains("stop with") {
            let before = printed.len();
            out.read_line(&mut printed).unwrap();
            assert!(
                printed.len() > before,
                "cluster.sh exited; it printed:\n{printed}"
            );
        }
        eprint!("{printed}");
        assert!(
            printed.contains(&format!("proxy: 127.0.0.1:{proxy}")),
            "{printed}"
        );
        cluster
    }

    fn stop(&mut self) -> std::process::ExitStatus {
        let mut script = self.script.take().unwrap();
        kill("-TERM", script.id());
        script.wait().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.script.is_none() {
            return;
        }
        self.stop();
        // Should the script have failed to stop them.
        let names = (1..=SERVERS).map(|i| format!("s{i}"));
        for name in names.chain(["nutcracker".to_string()]) {
            if let Ok(pid) = std::fs::read_to_string(self.dir.join(format!("{name}.pid"))) {
                kill("-KILL", pid.trim().parse().unwrap());
            }
        }
    }
}

/// An executable that runs `spillway serve ARGS` as `cluster_child` of this test binary.
fn shim(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("spillway");
    let exe = std::env::current_exe().unwrap();
    let text = format!(
        "#!/bin/sh\nSPILLWAY_CLUSTER_CHILD=\"$*\" exec '{}' --exact cluster_child --nocapture\n",
        exe.display()
    );
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Start server `victim` as cluster.sh does, log appended to its log; its pid goes to the
/// pid file so that cluster.sh stops it. A thread reaps it (a zombie would look alive).
fn restart(
    spillway: &Path,
    dir: &Path,
    victim: usize,
    base: u16,
) -> (thread::JoinHandle<std::process::ExitStatus>, u32) {
    let name = format!("s{}", victim + 1);
    let log = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join(format!("{name}.log")))
        .unwrap();
    let bind = format!("127.0.0.1:{}", base + 1 + victim as u16);
    let mut child = Command::new(spillway)
        .arg("serve")
        .arg("--path")
        .arg(dir.join(&name))
        .args(["--bind", &bind, "--fsync", "everysec"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let pid = child.id();
    std::fs::write(dir.join(format!("{name}.pid")), format!("{pid}\n")).unwrap();
    (thread::spawn(move || child.wait().unwrap()), pid)
}

/// Ports BASE+1..=BASE+3 for the servers, one for the proxy and one for its stats, all free
/// a moment ago; below Linux's ephemeral range (32768..), so that no outgoing connection
/// takes one meanwhile.
fn free_ports() -> (u16, u16, u16) {
    let free = |port: u16| TcpListener::bind(("127.0.0.1", port)).is_ok();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    let mut seed = std::process::id() ^ now.unwrap().subsec_nanos();
    for _ in 0..1000 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let base = 20_000 + (seed >> 8) as u16 % 12_000;
        let ports = [1, 2, 3, 101, 102].map(|i| base + i);
        if ports.iter().all(|&p| free(p)) {
            return (base, ports[3], ports[4]);
        }
    }
    panic!("no free ports");
}

/// What the test wrote to each key: the last acknowledged value ("" for none) and the
/// values of writes after it that got errors.
#[derive(Default)]
struct Model {
    values: HashMap<String, Written>,
    errors: Vec<String>,
}

#[derive(Debug, Default)]
struct Written {
    acked: String,
    later: Vec<String>,
}

struct Conn {
    out: TcpStream,
    replies: BufReader<TcpStream>,
}

fn connect(addr: (&str, u16)) -> Conn {
    let out = TcpStream::connect(addr).unwrap();
    out.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let replies = BufReader::new(out.try_clone().unwrap());
    Conn { out, replies }
}

/// One reply: a status, error or integer line as sent, a bulk string's data, `None` for nil.
fn reply(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let line = line.trim_end();
    let Some(len) = line.strip_prefix('$') else {
        return Ok(Some(line.to_string()));
    };
    let Ok(len) = usize::try_from(len.parse::<i64>().unwrap()) else {
        return Ok(None);
    };
    let mut data = vec![0; len + 2];
    r.read_exact(&mut data)?;
    data.truncate(len);
    Ok(Some(String::from_utf8(data).unwrap()))
}

/// SET every pair, 100 to a pipeline, recording in `model` which got `+OK`; a connection
/// the proxy closes fails the rest of its pipeline and is replaced. Returns how many got +OK.
fn set_all(addr: (&str, u16), pairs: &[(String, String)], model: &mut Model) -> usize {
    let mut conn = connect(addr);
    let mut acked = 0;
    for chunk in pairs.chunks(100) {
        let mut req = Vec::new();
        for (k, v) in chunk {
            req.extend(command(&[b"SET", k.as_bytes(), v.as_bytes()]));
        }
        conn.out.write_all(&req).unwrap();
        let mut broken = false;
        for (k, v) in chunk {
            let answer = if broken {
                None
            } else {
                reply(&mut conn.replies).ok().flatten()
            };
            broken = answer.is_none();
            let written = model.values.entry(k.clone()).or_default();
            if answer.as_deref() == Some("+OK") {
                *written = Written {
                    acked: v.clone(),
                    later: Vec::new(),
                };
                acked += 1;
            } else {
                written.later.push(v.clone());
                model
                    .errors
                    .push(answer.unwrap_or_else(|| "connection closed".into()));
            }
        }
        if broken {
            conn = connect(addr);
        }
    }
    acked
}

/// GET every key, 100 to a pipeline: the values, or error replies as `-ERR ...`.
fn get_all(addr: (&str, u16), keys: &[String]) -> Vec<Option<String>> {
    let mut conn = connect(addr);
    let mut values = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(100) {
        let mut req = Vec::new();
        for k in chunk {
            req.extend(command(&[b"GET", k.as_bytes()]));
        }
        conn.out.write_all(&req).unwrap();
        for _ in chunk {
            values.push(reply(&mut conn.replies).unwrap());
        }
    }
    values
}

fn read_pid(path: &Path) -> u32 {
    let text = std::fs::read_to_string(path).unwrap();
    text.trim().parse().unwrap()
}

fn kill(signal: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
}

/// Whether the process runs: exists and is not a zombie waiting for its parent.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        thread::sleep(Duration::from_millis(50));
    }
}
