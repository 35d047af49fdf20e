//! fjall 3 as a session store. fjall has no expiry: a user keeps the expiry in the value,
//! treats an expired value as absent on a GET, and deletes the expired keys — by scanning every
//! key on a timer and removing what has expired (what fjall#194 and lsm-tree#159 describe), or,
//! since fjall 3.1, with a compaction filter that removes them as compactions rewrite them
//! (lazy, as RocksDB's).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use fjall::compaction::filter::{
    CompactionFilter, CompactionFilterResult, Context, Factory, ItemAccessor, Verdict,
};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::RecordBatch;
use crate::session_engine::{expired, millis, unwrap_live, with_expiry, ExpiryWork, SessionEngine};

/// Keys removed per batch by a scan pass.
const DELETE_BATCH: usize = 1000;

struct Fjall {
    db: Database,
    keys: Keyspace,
    scanner: Option<Scanner>,
}

/// The scan-and-delete thread, and how to stop it.
struct Scanner {
    stop: mpsc::Sender<()>,
    stopping: Arc<AtomicBool>,
    work: Arc<Mutex<ExpiryWork>>,
    thread: JoinHandle<Result<(), String>>,
}

/// Open with a scan-and-delete pass every `scan_every`, or with a compaction filter instead
/// when `None`.
pub fn open(dir: &Path, scan_every: Option<Duration>) -> Result<Box<dyn SessionEngine>, String> {
    let mut builder = Database::builder(dir);
    if scan_every.is_none() {
        builder = builder.with_compaction_filter_factories(Arc::new(|_keyspace: &str| {
            Some(Arc::new(ExpiredFilterFactory) as Arc<dyn Factory>)
        }));
    }
    let db = builder.open().map_err(|e| e.to_string())?;
    let keys = db
        .keyspace("sessions", KeyspaceCreateOptions::default)
        .map_err(|e| e.to_string())?;
    let scanner = scan_every.map(|every| Scanner::start(db.clone(), keys.clone(), every));
    Ok(Box::new(Fjall { db, keys, scanner }))
}

impl Scanner {
    fn start(db: Database, keys: Keyspace, every: Duration) -> Scanner {
        let (stop, stopped) = mpsc::channel::<()>();
        let stopping = Arc::new(AtomicBool::new(false));
        let work = Arc::new(Mutex::new(ExpiryWork::default()));
        let (flag, tally) = (stopping.clone(), work.clone());
        let thread = std::thread::spawn(move || loop {
            match stopped.recv_timeout(every) {
                Err(RecvTimeoutError::Timeout) => {}
                _ => return Ok(()),
            }
            let start = Instant::now();
            let (scanned, deleted) = scan_and_delete(&db, &keys, &flag)?;
            let secs = start.elapsed().as_secs_f64();
            let mut w = tally.lock().unwrap_or_else(|e| e.into_inner());
            w.passes += 1;
            w.scanned += scanned;
            w.deleted += deleted;
            w.seconds += secs;
            w.longest_pass = w.longest_pass.max(secs);
        });
        Scanner {
            stop,
            stopping,
            work,
            thread,
        }
    }

    fn stop(self) -> Result<(), String> {
        self.stopping.store(true, Ordering::Relaxed);
        let _ = self.stop.send(());
        self.thread
            .join()
            .unwrap_or_else(|_| Err("fjall's scan-and-delete thread panicked".into()))
    }
}

/// One pass: every key read in order, the expired removed in batches. Returns the keys
/// scanned and removed; stops early when `stopping` is set.
fn scan_and_delete(
    db: &Database,
    keys: &Keyspace,
    stopping: &AtomicBool,
) -> Result<(u64, u64), String> {
    let (mut scanned, mut deleted) = (0u64, 0u64);
    let mut doomed = Vec::with_capacity(DELETE_BATCH);
    let remove = |doomed: &mut Vec<fjall::UserKey>| -> Result<(), String> {
        let mut b = db.batch();
        for k in doomed.drain(..) {
            b.remove(keys, k);
        }
        b.commit().map_err(|e| e.to_string())
    };
    let mut now = millis(SystemTime::now());
    for guard in keys.iter() {
        let (k, v) = guard.into_inner().map_err(|e| e.to_string())?;
        scanned += 1;
        if expired(&v, now) {
            doomed.push(k);
            if doomed.len() == DELETE_BATCH {
                deleted += DELETE_BATCH as u64;
                remove(&mut doomed)?;
                if stopping.load(Ordering::Relaxed) {
                    return Ok((scanned, deleted));
                }
                now = millis(SystemTime::now());
            }
        }
    }
    deleted += doomed.len() as u64;
    if !doomed.is_empty() {
        remove(&mut doomed)?;
    }
    Ok((scanned, deleted))
}

/// Makes a [`ExpiredFilter`] for each compaction.
struct ExpiredFilterFactory;

impl Factory for ExpiredFilterFactory {
    fn name(&self) -> &str {
        "expired"
    }

    fn make_filter(&self, _ctx: &Context) -> Box<dyn CompactionFilter> {
        Box::new(ExpiredFilter {
            now: millis(SystemTime::now()),
        })
    }
}

/// Removes a record whose expiry (in front of its value) is at or before the time its
/// compaction began.
struct ExpiredFilter {
    now: u64,
}

impl CompactionFilter for ExpiredFilter {
    fn filter_item(&mut self, item: ItemAccessor<'_>, _ctx: &Context) -> CompactionFilterResult {
        let value = item.value()?;
        Ok(if expired(&value, self.now) {
            // Remove, not Destroy: a tombstone hides older versions of a rewritten session.
            Verdict::Remove
        } else {
            Verdict::Keep
        })
    }
}

impl SessionEngine for Fjall {
    fn put(&self, batch: &RecordBatch, ttl: Duration, sync: bool) -> Result<(), String> {
        let at = millis(SystemTime::now() + ttl);
        let mut stored = Vec::new();
        if batch.len() == 1 {
            let (k, v) = batch.iter().next().expect("one record");
            with_expiry(at, v, &mut stored);
            self.keys
                .insert(k, &stored[..])
                .map_err(|e| e.to_string())?;
            if sync {
                self.db
                    .persist(PersistMode::SyncData)
                    .map_err(|e| e.to_string())?;
            }
            return Ok(());
        }
        let mut b = self.db.batch();
        if sync {
            b = b.durability(Some(PersistMode::SyncData));
        }
        for (k, v) in batch.iter() {
            with_expiry(at, v, &mut stored);
            b.insert(&self.keys, k, &stored[..]);
        }
        b.commit().map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        match self.keys.get(key).map_err(|e| e.to_string())? {
            None => Ok(None),
            Some(stored) => unwrap_live(&stored, millis(SystemTime::now())),
        }
    }

    fn expiry_work(&self) -> Option<ExpiryWork> {
        let s = self.scanner.as_ref()?;
        Some(*s.work.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn close(self: Box<Self>) -> Result<(), String> {
        let Fjall { db, keys, scanner } = *self;
        if let Some(s) = scanner {
            s.stop()?;
        }
        drop(keys);
        db.persist(PersistMode::SyncAll).map_err(|e| e.to_string())
    }
}
