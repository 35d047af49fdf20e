//! The connections open, as `CLIENT LIST`, `CLIENT KILL` and `INFO clients` see them: each
//! one's fixed facts (id, addresses, socket, when it connected) and what its session last
//! published (name, database, transaction, last command and when), plus the limit on how
//! many may be open (`maxclients`) and the counts of those accepted and refused.
//!
//! The hot path stays cheap: a connection publishes its session once per pipeline, into a
//! mutex only it and a `CLIENT LIST` (or `KILL`) ever take, and its buffer sizes into atomics
//! of its own; the registry's own lock is taken when a connection opens or closes and by
//! those commands, never per command. What another connection sees of a client is thus as of
//! its last pipeline, as Redis, which runs one command at a time, shows a client between two.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

use crate::locks::lock;

/// Every connection open, and the counts `INFO` shows of them.
pub struct Clients {
    next_id: AtomicU64,
    /// Open now (counted before the registry has them, so that a burst cannot pass the limit).
    connected: AtomicUsize,
    /// `maxclients`: more are refused.
    max: AtomicUsize,
    /// Accepted and refused since the start or the last `CONFIG RESETSTAT`.
    received: AtomicU64,
    rejected: AtomicU64,
    live: Mutex<BTreeMap<u64, Arc<Client>>>,
}

/// One open connection.
#[derive(Debug)]
pub struct Client {
    pub id: u64,
    /// The client's address and ours, as `ip:port` (`[ip]:port` for IPv6), as Redis shows them.
    pub peer: String,
    pub local: String,
    /// The socket's file descriptor.
    pub fd: i64,
    pub created: Instant,
    published: Mutex<Published>,
    /// Bytes its input and output buffers hold room for, and its last batch of replies.
    input_capacity: AtomicUsize,
    output_capacity: AtomicUsize,
    last_output: AtomicUsize,
    /// Set by `CLIENT KILL`: the connection closes as soon as it sees it.
    killed: AtomicBool,
    wake: Notify,
}

/// What a session last told the registry of itself (see `Session::publish`).
#[derive(Clone, Debug)]
pub struct Published {
    pub name: Option<Vec<u8>>,
    pub db: usize,
    pub resp: u8,
    /// In a transaction: the commands queued and their memory as Redis counts it.
    pub multi: Option<(usize, usize)>,
    /// The last command it ran (its full name: `client|list`), if any.
    pub last_command: Option<&'static str>,
    /// When it last sent something.
    pub last_active: Instant,
}

/// A client's buffers, as `CLIENT LIST` shows them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Buffers {
    pub input_capacity: usize,
    pub output_capacity: usize,
    pub last_output: usize,
}

impl Clients {
    pub fn new(max: usize) -> Clients {
        Clients {
            next_id: AtomicU64::new(1),
            connected: AtomicUsize::new(0),
            max: AtomicUsize::new(max),
            received: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// A new connection from `peer` to `local` on socket `fd`, registered; `None` (counted as
    /// refused) if `maxclients` are open already.
    pub fn open(&self, peer: SocketAddr, local: SocketAddr, fd: i64) -> Option<Arc<Client>> {
        if self.connected.fetch_add(1, Relaxed) >= self.max.load(Relaxed) {
            self.connected.fetch_sub(1, Relaxed);
            self.rejected.fetch_add(1, Relaxed);
            return None;
        }
        self.received.fetch_add(1, Relaxed);
        let now = Instant::now();
        let client = Arc::new(Client {
            id: self.new_id(),
            peer: peer.to_string(),
            local: local.to_string(),
            fd,
            created: now,
            published: Mutex::new(Published {
                name: None,
                db: 0,
                resp: 2,
                multi: None,
                last_command: None,
                last_active: now,
            }),
            input_capacity: AtomicUsize::new(0),
            output_capacity: AtomicUsize::new(0),
            last_output: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            wake: Notify::new(),
        });
        lock(&self.live).insert(client.id, client.clone());
        Some(client)
    }

    /// A number no connection had: for a registered one, or a session of its own.
    pub fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Relaxed)
    }

    /// Connection `id` closed.
    pub fn close(&self, id: u64) {
        if lock(&self.live).remove(&id).is_some() {
            self.connected.fetch_sub(1, Relaxed);
        }
    }

    /// The connections open, by id (the order they connected in).
    pub fn all(&self) -> Vec<Arc<Client>> {
        lock(&self.live).values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<Client>> {
        lock(&self.live).get(&id).cloned()
    }

    pub fn connected(&self) -> usize {
        self.connected.load(Relaxed)
    }

    pub fn max(&self) -> usize {
        self.max.load(Relaxed)
    }

    /// `CONFIG SET maxclients`: those open stay, as in Redis; new ones count against it.
    pub fn set_max(&self, max: usize) {
        self.max.store(max, Relaxed);
    }

    /// Connections accepted and refused since the start or the last reset.
    pub fn received(&self) -> u64 {
        self.received.load(Relaxed)
    }

    pub fn rejected(&self) -> u64 {
        self.rejected.load(Relaxed)
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset_counts(&self) {
        self.received.store(0, Relaxed);
        self.rejected.store(0, Relaxed);
    }
}

impl Client {
    /// What its session last published.
    pub fn published(&self) -> Published {
        lock(&self.published).clone()
    }

    /// Let `update` change what is published of it (its own connection does, per pipeline).
    pub fn publish(&self, update: impl FnOnce(&mut Published)) {
        update(&mut lock(&self.published));
    }

    /// Its connection's buffers now (per pipeline): room for input and output, and the last
    /// batch of replies.
    pub fn set_buffers(&self, b: Buffers) {
        self.input_capacity.store(b.input_capacity, Relaxed);
        self.output_capacity.store(b.output_capacity, Relaxed);
        self.last_output.store(b.last_output, Relaxed);
    }

    pub fn buffers(&self) -> Buffers {
        Buffers {
            input_capacity: self.input_capacity.load(Relaxed),
            output_capacity: self.output_capacity.load(Relaxed),
            last_output: self.last_output.load(Relaxed),
        }
    }

    /// `CLIENT KILL`: its connection closes, waking if it waits for input.
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        // A permit if the connection is not waiting yet: its next wait ends at once.
        self.wake.notify_one();
    }

    pub fn killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Resolves once it is killed.
    pub async fn until_killed(&self) {
        while !self.killed() {
            self.wake.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_refuses_and_counts_and_closing_makes_room() {
        let clients = Clients::new(2);
        let addr: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let a = clients.open(addr, addr, 7).unwrap();
        let b = clients.open(addr, addr, 8).unwrap();
        assert!(clients.open(addr, addr, 9).is_none());
        assert_eq!(
            (clients.connected(), clients.received(), clients.rejected()),
            (2, 2, 1)
        );
        assert_eq!(
            clients.all().iter().map(|c| c.id).collect::<Vec<_>>(),
            [a.id, b.id]
        );
        clients.close(a.id);
        clients.close(a.id); // twice: counted once
        assert_eq!(clients.connected(), 1);
        assert!(clients.open(addr, addr, 9).is_some());
        clients.set_max(1);
        assert!(clients.open(addr, addr, 10).is_none());
        assert!(clients.get(b.id).is_some() && clients.get(a.id).is_none());
    }

    #[test]
    fn a_kill_wakes_its_connection_whenever_it_waits() {
        let clients = Clients::new(10);
        let addr: SocketAddr = "[::1]:5000".parse().unwrap();
        let c = clients.open(addr, addr, 7).unwrap();
        assert_eq!(c.peer, "[::1]:5000");
        c.kill(); // before anyone waits
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(c.until_killed());
        assert!(c.killed());
    }
}
