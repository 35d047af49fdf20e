//! The listener and one task per connection: read what the client sent, run every whole
//! request in it as one pipeline, wait for the fsync of its writes (`sync`), send the
//! replies, repeat.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spillway::{Db, Options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::clients::Buffers;
use crate::command::{Engine, Session};
use crate::resp::{parse, Limits, Parsed, Reply};
use crate::sync::Syncer;

/// When a write's reply may leave: after an fsync of the log (`Always`), or once the log has
/// the write — fsynced within a second (`EverySec`: a machine crash loses at most the last
/// second), or whenever the OS writes it back (`No`). A process crash loses nothing in any
/// case: the log is written before the reply. `CONFIG SET appendfsync` changes it while the
/// server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fsync {
    Always,
    EverySec,
    No,
}

/// What `spillway serve` runs with.
#[derive(Clone, Debug)]
pub struct Config {
    pub path: PathBuf,
    pub bind: SocketAddr,
    pub fsync: Fsync,
    pub max_clients: usize,
    /// How many databases `SELECT` chooses from (Redis's `databases`): 0 is the store's
    /// default keyspace, the others keyspaces of their own.
    pub databases: usize,
    /// The password clients must give (`AUTH`, `HELLO ... AUTH default P`) before anything
    /// else, as Redis's `requirepass`.
    pub password: Option<String>,
    pub limits: Limits,
    pub options: Options,
}

impl Config {
    pub fn new(path: impl Into<PathBuf>) -> Config {
        Config {
            path: path.into(),
            bind: SocketAddr::from(([127, 0, 0, 1], 6380)),
            fsync: Fsync::Always,
            max_clients: 10_000,
            databases: 16,
            password: None,
            limits: Limits::default(),
            options: Options::default(),
        }
    }
}

/// Open the store and serve it until SIGTERM, SIGINT or `SHUTDOWN`; then close it cleanly.
/// `ready` is called with the bound address once clients can connect.
pub fn run(config: Config, ready: impl FnOnce(SocketAddr)) -> Result<(), String> {
    // The address first: a server that cannot listen must not create (or open and recover)
    // a store it will never serve.
    let listener = std::net::TcpListener::bind(config.bind)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|e| format!("binding {}: {e}", config.bind))?;
    let db = Db::open(&config.path, config.options.clone()).map_err(|e| e.to_string())?;
    let engine = Arc::new(Engine::new(db, &config).map_err(|e| e.to_string())?);
    let (syncer, fsync_thread) = Syncer::start(engine.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the server's runtime: {e}"))?;
    let served = runtime.block_on(serve(
        config,
        listener,
        engine.clone(),
        syncer.clone(),
        ready,
    ));
    drop(runtime);
    syncer.close();
    let _ = fsync_thread.join();
    served?;
    match Arc::try_unwrap(engine) {
        Ok(engine) => engine.close().map_err(|e| e.to_string()),
        // A blocking call of a dropped connection still holds it: it closes when done.
        Err(_) => Ok(()),
    }
}

async fn serve(
    config: Config,
    listener: std::net::TcpListener,
    engine: Arc<Engine>,
    syncer: Arc<Syncer>,
    ready: impl FnOnce(SocketAddr),
) -> Result<(), String> {
    let listener = TcpListener::from_std(listener).map_err(|e| e.to_string())?;
    ready(listener.local_addr().map_err(|e| e.to_string())?);
    let (stop, mut stopped) = watch::channel(false);
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    // The every-second fsync, while `appendfsync` says `everysec` (it may change).
    let (e, s) = (engine.clone(), syncer.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            if e.fsync() == Fsync::EverySec {
                if let Err(err) = s.sync().await {
                    eprintln!("spillway: the every-second fsync failed: {err}");
                }
            }
            release_free_memory();
        }
    });
    // INFO's instantaneous rates, sampled as Redis samples them.
    let e = engine.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            e.sample_rates();
        }
    });
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((socket, peer)) = accepted else { continue };
                let _ = socket.set_nodelay(true);
                let local = socket.local_addr().unwrap_or(peer);
                let fd = i64::from(socket.as_raw_fd());
                let Some(session) = engine.connect(peer, local, fd) else {
                    tokio::spawn(refuse(socket));
                    continue;
                };
                let (engine, stop) = (engine.clone(), stop.clone());
                let shared = Shared { engine, syncer: syncer.clone(), limits: config.limits };
                tokio::spawn(async move {
                    let id = session.id;
                    let _ = connection(socket, session, &shared, &stop).await;
                    shared.engine.disconnect(id);
                });
            }
            _ = stopped.changed() => break,
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    Ok(())
}

/// Requests run as one pipeline at most: their replies are held in memory until all are
/// written, so this bounds a connection's replies (with the largest value, `MAX_VALUE_LEN`).
const MAX_PIPELINE: usize = 1024;
/// A buffer grown past this by a large request or answer is not kept for the next.
const KEEP_BUFFER: usize = 1 << 20;

async fn refuse(mut socket: TcpStream) {
    let _ = socket
        .write_all(b"-ERR max number of clients reached\r\n")
        .await;
}

/// What every connection uses.
struct Shared {
    engine: Arc<Engine>,
    /// Where replies of writes wait for their fsync, under `appendfsync always`.
    syncer: Arc<Syncer>,
    limits: Limits,
}

async fn connection(
    mut socket: TcpStream,
    mut session: Session,
    shared: &Shared,
    stop: &watch::Sender<bool>,
) -> std::io::Result<()> {
    let Shared {
        engine,
        syncer,
        limits,
    } = shared;
    let mut input = Vec::with_capacity(16 << 10);
    let mut output = Vec::with_capacity(16 << 10);
    let mut used = 0;
    // Its entry in the registry: `CLIENT KILL` marks it, `CLIENT LIST` reads its buffers.
    let client = session.client().cloned();
    let killed = || client.as_ref().is_some_and(|c| c.killed());
    loop {
        if killed() {
            return Ok(());
        }
        let mut requests = Vec::new();
        let mut invalid = None;
        while requests.len() < MAX_PIPELINE {
            let authenticated = engine.authenticated(&session);
            match parse(&input[used..], limits, authenticated) {
                Parsed::Request(args, n) => {
                    // HELLO changes the protocol a batch's replies are encoded in: it runs in a
                    // batch of its own, so that the replies before it are in the old one.
                    let hello = args
                        .first()
                        .is_some_and(|a| a.eq_ignore_ascii_case(b"HELLO"));
                    if hello && !requests.is_empty() {
                        break; // parsed again, first of the next batch
                    }
                    requests.push(args);
                    used += n;
                    if !authenticated || hello {
                        // Run it first: an AUTH lifts the limits the next request is read with.
                        break;
                    }
                }
                Parsed::Incomplete => break,
                Parsed::Invalid(e) => {
                    invalid = Some(e);
                    break;
                }
            }
        }
        if requests.is_empty() && invalid.is_none() && !session.blocked() {
            // Nothing whole left: read more (after dropping what was parsed).
            input.drain(..used);
            used = 0;
            if input.is_empty() && input.capacity() > KEEP_BUFFER {
                input = Vec::with_capacity(16 << 10); // a large request is gone
            }
            let read = match &client {
                Some(c) => tokio::select! {
                    read = socket.read_buf(&mut input) => read?,
                    () = c.until_killed() => return Ok(()),
                },
                None => socket.read_buf(&mut input).await?,
            };
            if read == 0 {
                return Ok(());
            }
            engine.counters.read_bytes(read);
            continue;
        }
        let mut replies = Vec::with_capacity(requests.len());
        // Waited for here, not on the lock inside the run: see `Engine::turn`.
        let turn = match session.wants_turn() {
            true => Some(engine.turn().await),
            false => None,
        };
        let wrote = if Engine::may_take_long(&requests) {
            // Off the runtime's threads, so that other connections go on meanwhile.
            let engine = engine.clone();
            let (back, done, wrote) = tokio::task::spawn_blocking(move || {
                let wrote = engine.run(&mut session, requests, &mut replies);
                drop(turn);
                (session, replies, wrote)
            })
            .await
            .map_err(std::io::Error::other)?;
            session = back;
            replies = done;
            wrote
        } else {
            // Reads of cached pages and unsynced writes: shorter than a hand-off to another
            // thread and back would be.
            let wrote = engine.run(&mut session, requests, &mut replies);
            drop(turn);
            wrote
        };
        // A blocked command's client is not read from: an invalid request after it waits.
        let invalid = invalid.filter(|_| !session.blocked());
        if !wrote.is_empty() && engine.fsync() == Fsync::Always {
            if let Err(e) = syncer.sync().await {
                let failed = Reply::error(format!("ERR {e}"));
                for i in wrote {
                    replies[i] = failed.clone();
                }
            }
        }
        output.clear();
        for r in &replies {
            r.encode(session.resp, &mut output);
        }
        if let Some(e) = &invalid {
            engine.count_error(e);
            Reply::error(e.clone()).encode(session.resp, &mut output);
        }
        if killed() {
            return Ok(()); // killed while its pipeline ran: as Redis, nothing more is sent
        }
        // A client that does not read its replies blocks here, and only its own task: it
        // sends nothing more that is read until it does (memory stays bounded).
        socket.write_all(&output).await?;
        engine.counters.wrote_bytes(output.len());
        if let Some(c) = &client {
            c.set_buffers(Buffers {
                input_capacity: input.capacity(),
                output_capacity: output.capacity(),
                last_output: output.len(),
            });
        }
        if output.capacity() > KEEP_BUFFER {
            output = Vec::with_capacity(16 << 10);
        }
        if session.shutdown {
            let _ = stop.send(true);
        }
        if invalid.is_some() || session.quit {
            return Ok(());
        }
        if let Some(unblocked) = session.unblocked() {
            // A blocking command waits (`command::blocking`) for a push or its timeout; then
            // the loop runs it again. Meanwhile the socket is read only to see the client
            // leave (which drops its session and its place), preferred over a wake-up.
            input.drain(..used);
            used = 0;
            tokio::pin!(unblocked);
            // `CLIENT KILL` ends the wait too.
            let kill = async {
                match &client {
                    Some(c) => c.until_killed().await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(kill);
            loop {
                tokio::select! {
                    biased;
                    () = &mut kill => return Ok(()),
                    read = socket.read_buf(&mut input), if input.len() < KEEP_BUFFER => {
                        if read? == 0 {
                            return Ok(());
                        }
                    }
                    () = &mut unblocked => break,
                }
            }
        }
    }
}

/// Give the memory the allocator holds free back to the system. glibc's malloc keeps what a
/// spill frees (its sorted buffer, the pages of the lists it wrote) in its arenas, and a
/// server's resident memory would stay at its peak: twice what it holds after a load.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's own to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
