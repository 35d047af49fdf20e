//! Blocking commands (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`): a client that finds its keys
//! empty waits for a push to one of them, or for its timeout.
//!
//! **Blocking.** The handler of a blocking command that finds every key empty calls [`block`]:
//! the client is registered as a [`Waiter`] of each of its keys (in its database), and
//! [`Engine::run`](super::Engine::run) stops there, without a reply, keeping the command and
//! the requests pipelined after it in the session ([`Blocked`]): a client's commands run in
//! order, as Redis runs them. The connection (`server`) sends the replies before it, then
//! awaits [`Session::unblocked`](super::Session::unblocked) — a wake-up or the timeout —
//! reading meanwhile only to see the client leave, and then calls `Engine::run` again, which
//! runs the command again first: it pops, or blocks again in its place in the queues; once
//! its timeout has passed it answers nil (a null array, as Redis's timeout does for every
//! blocking list command) instead — unless it was woken before (Redis would have served it
//! in the push): then it runs again, and answers nil only if it finds nothing. The rest of the pipeline follows. No thread waits: a
//! blocked connection is a task awaiting a `Notify` (and a timer).
//!
//! **Waking.** A command that pushes to a list notes its key in its [`Pending`]; once the
//! pipeline's writes are in the store (after `Ctx::finish`, so that other connections read
//! them), the engine signals each key noted: the first of the key's waiters not woken yet is
//! woken. Waiters queue by key in the order they blocked, so the client blocked first gets the
//! first element (Redis's FIFO). A woken waiter that leaves — served, timed out, or its
//! connection closed — signals its keys again once its own writes are in, so that what it did
//! not take goes to the next: `RPUSH k a b` with two waiters wakes the first, which pops `a`
//! and wakes the second. A list moved to a key (`LMOVE`, `RENAME`, `COPY`) notes it as a
//! push does; a `SWAPDB` signals every key waited for in both databases.
//!
//! **No wake-up is lost.** A waiter registers, or goes back to waiting, inside its command,
//! which holds the lock that orders read-modify-write commands alone from its read of the
//! keys; a push reads the list first, so it is appended under that lock too, and signaled
//! after: it came before the waiter's read (which saw the element) or after the waiter was
//! registered (and its signal finds it). A signal to a key whose waiters are all woken already
//! leaves a permit with the first: it runs once more. The fsync rule holds as for any write:
//! the pop of a command run again is its own write, and its reply waits for an fsync begun
//! after it (`sync`).
//!
//! **A connection that closes** while blocked is noticed by the read the connection keeps
//! going (`server`), which is preferred over a wake-up at the same time: its session is
//! dropped, which deregisters it ([`Registration`]'s `Drop`) — and passes on a wake-up it was
//! given — so no element is popped for a client that is gone.
//!
//! **In a transaction** a blocking command does not block (Redis's `CLIENT_DENY_BLOCKING`): it
//! answers at once what its timeout would.
//!
//! **Unlike Redis**, which hands the element to the blocked client inside the command that
//! pushed it, before any other command runs, a waiter here pops when it runs again: a command
//! that comes in between — another client's `LPOP`, or the pusher's own next command in the
//! same pipeline — may take the element first. The waiter then waits on (it neither answers
//! nil early nor loses its place). Timeouts are read in `f64` (see [`timeout`]), where Redis
//! reads a `long double`: hex floats are refused, and numbers past an `f64`'s range answer
//! as their nearest f64 would (`1e5000`: negative, where Redis finds no float).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::context::Ctx;
use super::{CmdResult, Fail};
use crate::locks::lock;
use crate::resp::Reply;

/// Each key's waiters (by database and key), in the order they blocked.
type Queues = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

/// The waiters of every key, by database and key, each queue in the order they blocked.
#[derive(Default)]
pub struct Registry {
    waiting: Mutex<Queues>,
    /// Clients blocked now (`INFO`'s `blocked_clients`).
    blocked: AtomicUsize,
}

/// A blocked client.
pub struct Waiter {
    db: usize,
    /// Its keys, each once.
    keys: Vec<Vec<u8>>,
    notify: Notify,
    /// Woken, and not waiting again yet: a signal goes to the next waiter. Changed under the
    /// registry's lock only.
    woken: AtomicBool,
}

impl Registry {
    /// Wake the waiters of keys pushed to (`(database, key)`): the first not woken yet of each.
    pub fn signal(&self, ready: &[(usize, Vec<u8>)]) {
        if ready.is_empty() {
            return;
        }
        let mut queues = lock(&self.waiting);
        if queues.is_empty() {
            return;
        }
        for (db, key) in ready {
            wake_first(&mut queues, &(*db, key.clone()));
        }
    }

    /// Wake the first waiter of every key of databases `dbs` (their contents were swapped).
    pub fn signal_databases(&self, dbs: &[usize]) {
        if dbs.is_empty() {
            return;
        }
        let mut queues = lock(&self.waiting);
        let keys: Vec<_> = queues
            .keys()
            .filter(|(db, _)| dbs.contains(db))
            .cloned()
            .collect();
        for key in keys {
            wake_first(&mut queues, &key);
        }
    }

    /// Register a waiter of `keys` in database `db`, last in each key's queue.
    fn register(&self, db: usize, keys: &[Vec<u8>]) -> Arc<Waiter> {
        let mut seen = HashSet::new();
        let keys = keys.iter().filter(|k| seen.insert(*k)).cloned().collect();
        let waiter = Arc::new(Waiter {
            db,
            keys,
            notify: Notify::new(),
            woken: AtomicBool::new(false),
        });
        let mut queues = lock(&self.waiting);
        for key in &waiter.keys {
            let queue = queues.entry((db, key.clone())).or_default();
            queue.push_back(waiter.clone());
        }
        self.blocked.fetch_add(1, Relaxed);
        waiter
    }

    /// `waiter` ran again and waits again, in its place.
    fn wait_again(&self, waiter: &Waiter) {
        let _queues = lock(&self.waiting);
        waiter.woken.store(false, Relaxed);
    }

    /// `waiter` leaves its queues; a wake-up it was given goes on to the next waiters.
    fn remove(&self, waiter: &Arc<Waiter>) {
        let mut queues = lock(&self.waiting);
        self.blocked.fetch_sub(1, Relaxed);
        for key in &waiter.keys {
            let at = (waiter.db, key.clone());
            if let Some(queue) = queues.get_mut(&at) {
                queue.retain(|w| !Arc::ptr_eq(w, waiter));
                if queue.is_empty() {
                    queues.remove(&at);
                }
            }
        }
        if waiter.woken.load(Relaxed) {
            for key in &waiter.keys {
                wake_first(&mut queues, &(waiter.db, key.clone()));
            }
        }
    }

    /// How many clients are blocked.
    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Relaxed)
    }
}

/// Wake the first waiter of `key` not woken yet; if all are, leave the first a permit.
fn wake_first(queues: &mut Queues, key: &(usize, Vec<u8>)) {
    let Some(queue) = queues.get(key) else {
        return;
    };
    match queue.iter().find(|w| !w.woken.load(Relaxed)) {
        Some(w) => {
            w.woken.store(true, Relaxed);
            w.notify.notify_one();
        }
        None => {
            if let Some(w) = queue.front() {
                w.notify.notify_one();
            }
        }
    }
}

/// A client's place in the queues of its keys, and when it stops waiting. Dropping it
/// deregisters the client.
pub struct Registration {
    waiter: Arc<Waiter>,
    registry: Arc<Registry>,
    /// `None`: it waits for ever (timeout 0).
    deadline: Option<Instant>,
}

impl Registration {
    /// Whether its timeout has passed.
    fn timed_out(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the command answers nil without running again: its timeout has passed and
    /// nothing woke it before it ran (a client woken just before its timeout, but run just
    /// after, runs: Redis would have served it in the push).
    pub(super) fn expired(&self) -> bool {
        self.timed_out() && !self.waiter.woken.load(Relaxed)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.remove(&self.waiter);
    }
}

/// A session's blocked command: its request, the requests pipelined after it, and its place.
pub struct Blocked {
    pub(super) args: Vec<Vec<u8>>,
    pub(super) rest: Vec<Vec<Vec<u8>>>,
    pub(super) registration: Registration,
}

impl fmt::Debug for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let name = self.args.first().map(|a| String::from_utf8_lossy(a));
        f.debug_struct("Blocked")
            .field("command", &name)
            .field("keys", &self.registration.waiter.keys.len())
            .field("rest", &self.rest.len())
            .finish()
    }
}

impl Blocked {
    /// Resolves once the command should run again: woken, or its timeout passed.
    pub(super) fn unblocked(&self) -> impl Future<Output = ()> + Send + 'static {
        let waiter = self.registration.waiter.clone();
        let deadline = self.registration.deadline;
        async move {
            let woken = waiter.notify.notified();
            match deadline {
                Some(d) => {
                    let _ = tokio::time::timeout_at(d.into(), woken).await;
                }
                None => woken.await,
            }
        }
    }
}

/// What a pipeline's run does with blocking: the keys it pushed to, what its blocking
/// command did.
#[derive(Default)]
pub struct Pending {
    /// Keys pushed to, `(database, key)`: signaled once the run's writes are in the store.
    pub ready: Vec<(usize, Vec<u8>)>,
    /// Databases swapped: every key waited for in them is signaled.
    pub swapped: Vec<usize>,
    /// The running command's place, when it runs again after a wake-up.
    resumed: Option<Registration>,
    /// The running command blocked: its place.
    blocked: Option<Registration>,
}

impl Pending {
    /// The place of a command run again after a wake-up.
    pub(super) fn resume(&mut self, registration: Registration) {
        self.resumed = Some(registration);
    }

    /// The place of the command that just ran, if it ran again after a wake-up and did not
    /// block again: it leaves the queues (once the run's writes are in).
    pub(super) fn take_resumed(&mut self) -> Option<Registration> {
        self.resumed.take()
    }

    /// The place of the command that just ran, if it blocked.
    pub(super) fn take_blocked(&mut self) -> Option<Registration> {
        self.blocked.take()
    }

    pub(super) fn blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// Whether the running command runs again after a wake-up.
    pub fn resuming(&self) -> bool {
        self.resumed.is_some()
    }
}

impl Ctx<'_> {
    /// Note that a list at `key` in the selected database was pushed to: its waiters are
    /// woken once the pipeline's writes are in the store.
    pub fn pushed(&mut self, key: &[u8]) {
        // With no client blocked, none can need this push: a client that blocks later
        // registers holding the lock this command holds from its read to its append, so it
        // reads the list after the push.
        if self.engine.blocking.blocked_clients() == 0 {
            return;
        }
        let at = (self.session.db, key.to_vec());
        if !self.blocking.ready.contains(&at) {
            self.blocking.ready.push(at);
        }
    }
}

/// A blocking command found every key in `keys` empty: block until one is pushed to or
/// `timeout` passes — or, in a transaction, answer `otherwise` at once.
pub fn block(ctx: &mut Ctx, keys: &[Vec<u8>], timeout: Timeout, otherwise: Reply) -> CmdResult {
    if ctx.in_transaction() {
        return Ok(otherwise);
    }
    if ctx
        .blocking
        .resumed
        .as_ref()
        .is_some_and(Registration::timed_out)
    {
        // Woken before its timeout, run after it, and nothing left: as at its timeout.
        return Ok(Reply::NullArray);
    }
    let registration = match ctx.blocking.resumed.take() {
        Some(r) => {
            r.registry.wait_again(&r.waiter);
            r
        }
        None => {
            let registry = ctx.engine.blocking.clone();
            Registration {
                waiter: registry.register(ctx.session.db, keys),
                registry,
                deadline: timeout
                    .0
                    .and_then(|after| Instant::now().checked_add(after)),
            }
        }
    };
    ctx.blocking.blocked = Some(registration);
    // Not sent: the engine keeps the command until it runs again.
    Ok(Reply::NullArray)
}

/// A blocking command's timeout: `None` for ever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeout(Option<Duration>);

/// A timeout in seconds as Redis reads it: a float (as `strtold`), times 1000 rounded up to
/// whole milliseconds (a value past the `long long`s is negative, as x86 converts it); 0 is
/// for ever.
pub fn timeout(arg: &[u8]) -> CmdResult<Timeout> {
    let refuse = |e: &str| Err(Fail::Reply(Reply::error(e)));
    let Some(seconds) = crate::float::parse(arg) else {
        return refuse("ERR timeout is not a float or out of range");
    };
    // A number too small for an f64 but not for a long double: Redis waits a millisecond.
    let seconds = if seconds == 0.0 && has_nonzero_digit(arg) {
        f64::MIN_POSITIVE
    } else {
        seconds
    };
    let millis = (seconds * 1000.0).ceil();
    // Past i64 (infinity too): x86 converts to i64::MIN, where Rust would saturate.
    const LIMIT: f64 = -(i64::MIN as f64); // 2^63, exact
    let millis = match (-LIMIT..LIMIT).contains(&millis) {
        true => millis as i64,
        false => i64::MIN,
    };
    match millis {
        m if m < 0 => refuse("ERR timeout is negative"),
        0 => Ok(Timeout(None)),
        m => Ok(Timeout(Some(Duration::from_millis(m as u64)))),
    }
}

/// Whether the mantissa of number `text` has a digit other than 0.
fn has_nonzero_digit(text: &[u8]) -> bool {
    text.iter()
        .take_while(|&&c| c != b'e' && c != b'E')
        .any(|c| (b'1'..=b'9').contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_read_as_redis_reads_them() {
        let ms = |t: &str| match timeout(t.as_bytes()) {
            Ok(Timeout(None)) => Ok(0),
            Ok(Timeout(Some(d))) => Ok(d.as_millis() as i64),
            Err(Fail::Reply(Reply::Error(e))) => Err(e),
            Err(_) => Err("store".into()),
        };
        assert_eq!(ms("0"), Ok(0));
        assert_eq!(ms("1"), Ok(1000));
        assert_eq!(ms("0.0001"), Ok(1), "rounded up");
        assert_eq!(ms("1e-400"), Ok(1), "a long double's, not zero");
        assert_eq!(ms("-0.0005"), Ok(0), "rounded up to zero: for ever");
        assert_eq!(ms("-0.0011"), Err("ERR timeout is negative".into()));
        assert_eq!(ms("inf"), Err("ERR timeout is negative".into()));
        assert_eq!(ms("1e17"), Err("ERR timeout is negative".into()));
        assert_eq!(ms("9e15"), Ok(9_000_000_000_000_000_000));
        for bad in ["x", "", " 1", "1 ", "nan"] {
            let e = Err("ERR timeout is not a float or out of range".into());
            assert_eq!(ms(bad), e, "{bad:?}");
        }
    }

    #[test]
    fn signals_wake_waiters_in_the_order_they_blocked() {
        let registry = Arc::new(Registry::default());
        let a = registry.register(0, &[b"k".to_vec(), b"k".to_vec(), b"j".to_vec()]);
        let b = registry.register(0, &[b"k".to_vec()]);
        assert_eq!(a.keys.len(), 2, "a key named twice waits once");
        let woken = |w: &Waiter| w.woken.load(Relaxed);
        registry.signal(&[(1, b"k".to_vec())]);
        assert!(!woken(&a) && !woken(&b), "another database");
        registry.signal(&[(0, b"k".to_vec())]);
        assert!(woken(&a) && !woken(&b));
        registry.signal(&[(0, b"k".to_vec())]);
        assert!(woken(&b), "a second push wakes the second");
        registry.wait_again(&b);
        // The first leaves after being woken: its wake-up goes on.
        registry.remove(&a);
        assert!(woken(&b));
        assert_eq!(registry.blocked_clients(), 1);
        registry.remove(&b);
        assert_eq!(registry.blocked_clients(), 0);
        assert!(lock(&registry.waiting).is_empty());
    }
}
