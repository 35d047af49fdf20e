//! The one interface the session-store workload (issue 30, [`sessions`](crate::sessions))
//! drives every store through: writes that expire after a TTL, and GETs that never return an
//! expired record. Spillway expires records itself (`put_ttl`, `WriteBatch::put_expiring`);
//! the peers do what their users must: RocksDB keeps the expiry in the value and drops expired
//! records in a compaction filter, fjall keeps it in the value and deletes expired keys in a
//! background scan (or, in fjall 3.1, in a compaction filter too), Redis has `SET … PX`.
//! Either way the GETs treat an expired value as absent (a compaction filter is lazy).

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::RecordBatch;

/// A store under the session workload, shared by the writer, the GET threads and the sampler.
pub trait SessionEngine: Send + Sync {
    /// Write `batch`'s records, each expiring `ttl` from now; with `sync`, return only once
    /// they are durable. A batch of one record is one single-key write (Spillway's `put_ttl`);
    /// a longer one is written atomically where the store has batches.
    fn put(&self, batch: &RecordBatch, ttl: Duration, sync: bool) -> Result<(), String>;
    /// The value of `key`, or `None` if it is absent or expired.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String>;
    /// For a store that lives in memory (Redis): its own count of the bytes it uses
    /// (`used_memory`, and `used_memory_rss`). The stores on disk answer `None`: the sampler
    /// measures their folder.
    fn memory(&self) -> Option<Result<MemoryUse, String>> {
        None
    }
    /// For a store that is a server of its own (Redis): the CPU time it has used, in seconds.
    fn server_cpu_seconds(&self) -> Option<Result<f64, String>> {
        None
    }
    /// The engine's own counters, where it keeps them (Spillway does).
    fn stats(&self) -> Option<spillway::Stats> {
        None
    }
    /// What the engine did on its own to expire records, beyond its writes and reads (fjall's
    /// scan-and-delete passes).
    fn expiry_work(&self) -> Option<ExpiryWork> {
        None
    }
    /// Stop background work, make unsynced writes durable, release the store.
    fn close(self: Box<Self>) -> Result<(), String>;
}

/// Redis's `INFO memory` figures.
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryUse {
    pub used_memory: u64,
    pub used_memory_rss: u64,
}

/// A scan-and-delete expirer's work: its passes, the keys they deleted and the time they took.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ExpiryWork {
    pub passes: u64,
    pub scanned: u64,
    pub deleted: u64,
    pub seconds: f64,
    /// The longest pass, in seconds.
    pub longest_pass: f64,
}

/// The session stores this crate knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionEngineKind {
    /// Spillway with default options: `put_ttl` / `WriteBatch::put_expiring`.
    Spillway,
    /// Spillway keeping keys in byte order: with `--keys sequential` (time-ordered session
    /// ids) the leaves holding old keys are never written again.
    SpillwayOrdered,
    /// RocksDB with a compaction filter that drops records whose expiry has passed.
    RocksDb,
    /// fjall, expired keys deleted by a background scan of every key every T/4.
    Fjall,
    /// fjall 3.1 with a compaction filter (`with_compaction_filter_factories`) that removes
    /// expired records, instead of a scan.
    FjallFilter,
    /// Redis (a `redis-server` started for the run, persistence off), `SET key value PX ms`;
    /// measured in memory, not on disk.
    Redis,
}

/// Every kind, in the order error messages give them.
pub const ALL_SESSION: [SessionEngineKind; 6] = [
    SessionEngineKind::Spillway,
    SessionEngineKind::SpillwayOrdered,
    SessionEngineKind::RocksDb,
    SessionEngineKind::Fjall,
    SessionEngineKind::FjallFilter,
    SessionEngineKind::Redis,
];

impl SessionEngineKind {
    pub fn name(self) -> &'static str {
        match self {
            SessionEngineKind::Spillway => "spillway",
            SessionEngineKind::SpillwayOrdered => "spillway-ordered",
            SessionEngineKind::RocksDb => "rocksdb",
            SessionEngineKind::Fjall => "fjall",
            SessionEngineKind::FjallFilter => "fjall-filter",
            SessionEngineKind::Redis => "redis",
        }
    }

    pub fn parse(name: &str) -> Result<SessionEngineKind, String> {
        ALL_SESSION
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = ALL_SESSION.iter().map(|k| k.name()).collect();
                format!(
                    "`{name}` is not in the sessions workload, which runs on {}",
                    names.join(", ")
                )
            })
    }

    /// Whether it keeps its data in memory (Redis), so that its space is memory, not disk.
    pub fn in_memory(self) -> bool {
        self == SessionEngineKind::Redis
    }

    /// Whether this binary and machine can run it: the peers need the `peers` feature, Redis
    /// a `redis-server` on the PATH (Debian's package).
    pub fn available(self) -> bool {
        match self {
            SessionEngineKind::Spillway | SessionEngineKind::SpillwayOrdered => true,
            SessionEngineKind::Redis => crate::session_engines::redis::installed(),
            _ => cfg!(feature = "peers"),
        }
    }

    /// Why it cannot run here, if it cannot.
    pub fn unavailable_because(self) -> Option<String> {
        if self.available() {
            return None;
        }
        Some(match self {
            SessionEngineKind::Redis => {
                "redis needs `redis-server` on the PATH (apt-get install redis-server)".into()
            }
            other => format!(
                "{} is not in this build: build with `cargo build --release -p spillway-cli --features peers` (see BENCHMARKS.md)",
                other.name()
            ),
        })
    }

    /// What a run without `--engines` compares: every kind this build and machine can run
    /// but `spillway-ordered` (asked for by name), Spillway first (the base of the ratios).
    pub fn all_available() -> Vec<SessionEngineKind> {
        ALL_SESSION
            .into_iter()
            .filter(|k| *k != SessionEngineKind::SpillwayOrdered && k.available())
            .collect()
    }

    /// Open (creating) a store in `dir`. `ttl` is the run's TTL: fjall's scan-and-delete runs
    /// every `ttl / 4`.
    pub fn open(self, dir: &Path, ttl: Duration) -> Result<Box<dyn SessionEngine>, String> {
        match self {
            SessionEngineKind::Spillway => crate::session_engines::spillway::open(dir, None),
            SessionEngineKind::SpillwayOrdered => {
                crate::session_engines::spillway::open(dir, Some(spillway::KeyOrder::Ordered))
            }
            SessionEngineKind::Redis => crate::session_engines::redis::open(dir),
            #[cfg(feature = "peers")]
            SessionEngineKind::RocksDb => crate::session_engines::rocksdb::open(dir),
            #[cfg(feature = "peers")]
            SessionEngineKind::Fjall => crate::session_engines::fjall::open(dir, Some(ttl / 4)),
            #[cfg(feature = "peers")]
            SessionEngineKind::FjallFilter => crate::session_engines::fjall::open(dir, None),
            #[cfg(not(feature = "peers"))]
            other => {
                let _ = ttl;
                Err(other
                    .unavailable_because()
                    .unwrap_or_else(|| format!("{} is not in this build", other.name())))
            }
        }
    }

    /// How each store runs and expires, for the report.
    pub fn options_note(self) -> &'static str {
        match self {
            SessionEngineKind::Spillway => "default Options; records written with an expiry (WriteBatch::put_expiring at now + T, or Db::put_ttl for one record), the engine drops them itself",
            SessionEngineKind::SpillwayOrdered => "default Options but key_order: Ordered (keys kept in byte order); records written with an expiry as spillway's",
            SessionEngineKind::RocksDb => "the other runs' base Options (defaults + create_if_missing, compression none, 10-bit Bloom filter) + a compaction filter removing records whose expiry (an 8-byte prefix of the value, ms since the epoch) has passed; GETs treat an expired value as absent; WriteBatch per write, sync per --sync",
            SessionEngineKind::Fjall => "fjall 3.1 defaults (no compression), one keyspace; the expiry an 8-byte prefix of the value; a background thread scans every key every T/4 and removes the expired in batches of 1000; GETs treat an expired value as absent",
            SessionEngineKind::FjallFilter => "fjall 3.1 defaults (no compression), one keyspace; the expiry an 8-byte prefix of the value; a compaction filter (Database::builder().with_compaction_filter_factories) removes expired records; GETs treat an expired value as absent",
            SessionEngineKind::Redis => "redis-server on loopback, --save \"\" --appendonly no (no persistence), otherwise defaults; SET key value PX ms (pipelined per write batch); space is used_memory (memory, not disk)",
        }
    }
}

/// Bytes of the expiry the peers keep in front of each value.
pub const EXPIRY_LEN: usize = 8;

/// Milliseconds since the Unix epoch.
pub fn millis(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A value as the peers store it: the expiry (ms since the epoch, big-endian), then the value.
pub fn with_expiry(expires_ms: u64, value: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&expires_ms.to_be_bytes());
    out.extend_from_slice(value);
}

/// The expiry in front of a stored value (`None`: too short to hold one).
pub fn expiry_of(stored: &[u8]) -> Option<u64> {
    let head: [u8; EXPIRY_LEN] = stored.get(..EXPIRY_LEN)?.try_into().ok()?;
    Some(u64::from_be_bytes(head))
}

/// Whether a stored value has expired at `now_ms` (a value too short to hold an expiry never
/// does). At its expiry, as Spillway's and Redis's: a record expiring at `now` is gone.
pub fn expired(stored: &[u8], now_ms: u64) -> bool {
    expiry_of(stored).is_some_and(|at| at <= now_ms)
}

/// A stored value as a GET returns it: `None` if expired, else without its expiry.
pub fn unwrap_live(stored: &[u8], now_ms: u64) -> Result<Option<Vec<u8>>, String> {
    match expiry_of(stored) {
        None => Err(format!(
            "a stored value of {} bytes has no expiry in front",
            stored.len()
        )),
        Some(at) if at <= now_ms => Ok(None),
        Some(_) => Ok(Some(stored[EXPIRY_LEN..].to_vec())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_carries_its_expiry_and_is_gone_at_it() {
        let mut v = Vec::new();
        with_expiry(1_000, b"abc", &mut v);
        assert_eq!(expiry_of(&v), Some(1_000));
        assert_eq!(unwrap_live(&v, 999).unwrap().as_deref(), Some(&b"abc"[..]));
        assert_eq!(unwrap_live(&v, 1_000).unwrap(), None);
        assert!(expired(&v, 1_000) && !expired(&v, 999));
        assert!(!expired(b"short", u64::MAX));
        assert!(unwrap_live(b"short", 0).is_err());
    }

    #[test]
    fn names_parse() {
        for kind in ALL_SESSION {
            assert_eq!(SessionEngineKind::parse(kind.name()), Ok(kind));
        }
        assert!(SessionEngineKind::parse("leveldb").is_err());
    }
}
