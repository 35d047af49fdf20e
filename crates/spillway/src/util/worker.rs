//! A background thread and the state it shares with its owner, under one lock and one
//! condition variable; told to stop, and joined, when its owner drops it. The log's sync
//! thread and its prefill thread are built on it.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::sync::{lock, wait};

/// State a [`Worker`]'s thread shares: it can be told to stop.
pub trait Stoppable: Send + 'static {
    /// Ask the thread to stop: it returns when it next looks.
    fn stop(&mut self);
}

/// The state and the condition variable that signals its changes.
pub struct Shared<S> {
    state: Mutex<S>,
    changed: Condvar,
}

impl<S> Shared<S> {
    pub fn lock(&self) -> MutexGuard<'_, S> {
        lock(&self.state)
    }

    /// Sleep until the state changes (or spuriously: callers loop on their condition).
    pub fn wait<'a>(&self, s: MutexGuard<'a, S>) -> MutexGuard<'a, S> {
        wait(&self.changed, s)
    }

    /// Wake every waiter: the state changed.
    pub fn changed(&self) {
        self.changed.notify_all();
    }
}

/// A thread running over shared state `S`; stopped and joined when dropped.
pub struct Worker<S: Stoppable> {
    shared: Arc<Shared<S>>,
    thread: Option<JoinHandle<()>>,
}

impl<S: Stoppable> Worker<S> {
    /// Start thread `name` running `run` over `state`.
    pub fn start(
        name: &str,
        state: S,
        run: impl FnOnce(&Shared<S>) + Send + 'static,
    ) -> std::io::Result<Worker<S>> {
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            changed: Condvar::new(),
        });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(&theirs))?;
        Ok(Worker {
            shared,
            thread: Some(thread),
        })
    }

    pub fn shared(&self) -> &Shared<S> {
        &self.shared
    }
}

impl<S: Stoppable> Drop for Worker<S> {
    fn drop(&mut self) {
        self.shared.lock().stop();
        self.shared.changed();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
