//! Group commit for replies: a connection whose pipeline wrote asks for an fsync and awaits
//! it; one thread runs them, each covering every request made before it began. A reply thus
//! leaves only after its write was fsynced, however many connections wait, with one fsync
//! per round rather than a thread blocked in one per connection (which on two cores spent more
//! time switching between those threads than writing).

use std::sync::{Arc, Condvar, Mutex};

use tokio::sync::oneshot;

use crate::command::Engine;
use crate::locks::{lock, wait};

type Waiter = oneshot::Sender<Result<(), String>>;

/// The fsync thread's queue of waiting connections.
pub struct Syncer {
    queue: Mutex<Queue>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    waiters: Vec<Waiter>,
    closed: bool,
}

impl Syncer {
    /// Start the fsync thread for `engine`'s store; it ends once [`close`](Self::close) is
    /// called and the connections waiting then are served.
    pub fn start(engine: Arc<Engine>) -> (Arc<Syncer>, std::thread::JoinHandle<()>) {
        let syncer = Arc::new(Syncer {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
        });
        let s = syncer.clone();
        let thread = std::thread::Builder::new()
            .name("spillway-fsync".into())
            .spawn(move || s.serve(&engine))
            .expect("spawning the fsync thread");
        (syncer, thread)
    }

    /// Wait until an fsync that began after this call has finished.
    pub async fn sync(&self) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        {
            let mut q = lock(&self.queue);
            if q.closed {
                return Err("the server is shutting down".into());
            }
            q.waiters.push(tx);
        }
        self.wake.notify_one();
        rx.await
            .unwrap_or_else(|_| Err("the fsync thread stopped".into()))
    }

    /// Stop the thread once the waiting connections are served.
    pub fn close(&self) {
        lock(&self.queue).closed = true;
        self.wake.notify_one();
    }

    fn serve(&self, engine: &Engine) {
        loop {
            let waiters = {
                let mut q = lock(&self.queue);
                while q.waiters.is_empty() && !q.closed {
                    q = wait(&self.wake, q);
                }
                if q.waiters.is_empty() {
                    return; // closed, and no one waits
                }
                std::mem::take(&mut q.waiters)
            };
            // Every waiter taken asked after its writes were in the store: this fsync,
            // begun now, covers them all.
            let result = engine.db().sync().map_err(|e| e.to_string());
            for w in waiters {
                let _ = w.send(result.clone());
            }
        }
    }
}
