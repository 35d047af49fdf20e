//! A tiny session-store run (issue 30): a few thousand keys with a TTL of 1 s, for 3 s — on
//! Spillway, and with `--features peers` on RocksDB and fjall too (and Redis where
//! `redis-server` is installed). The report must be sane: keys written and read, a space
//! sample every 0.2 s, live data never above what was written, no expired key read back and
//! no wrong value. No timing thresholds: a slow machine only writes and reads less.

use spillway_bench::sessions::{self, SessionConfig, SessionResult};
use spillway_bench::sessions_run::{self, SessionsReport};
use spillway_bench::SessionEngineKind;

fn tiny() -> SessionConfig {
    SessionConfig {
        keys_per_ttl: 2000,
        record_size: 24,
        ttl_secs: 1.0,
        seconds: 3.0,
        batch: 100,
        sync: false,
        readers: 1,
        zipfian: true,
        sample_secs: 0.2,
        seed: 5,
        keys: spillway_bench::Keys::Random,
    }
}

fn assert_sane(r: &SessionResult, cfg: &SessionConfig) {
    let what = &r.engine;
    assert!(r.inserts > 0, "{what}: nothing written");
    assert!(r.inserts <= cfg.target_inserts(), "{what}");
    assert_eq!(
        r.written_bytes,
        r.inserts * cfg.record_size as u64,
        "{what}"
    );
    assert!(
        r.gets > 0 && r.found > 0,
        "{what}: {} GETs, {} found",
        r.gets,
        r.found
    );
    assert_eq!(r.found + r.missed + r.expired_checks, r.gets, "{what}");
    // The space series: samples in time order, the first at the start, the last at the end.
    assert!(r.samples.len() >= 3, "{what}: {} samples", r.samples.len());
    assert!(r.samples.windows(2).all(|w| w[0].t <= w[1].t), "{what}");
    assert!(r
        .samples
        .windows(2)
        .all(|w| w[0].written_bytes <= w[1].written_bytes));
    for s in &r.samples {
        assert!(s.live_bytes <= s.written_bytes, "{what}: {s:?}");
        assert!(s.live_bytes % cfg.record_size as u64 == 0, "{what}: {s:?}");
    }
    let last = r.samples.last().unwrap();
    assert_eq!(last.written_bytes, r.written_bytes, "{what}");
    assert!(
        last.space_bytes > 0 && r.peak_space_bytes >= r.final_space_bytes,
        "{what}"
    );
    assert_eq!(
        r.space,
        if r.engine == "redis" {
            "memory"
        } else {
            "disk"
        }
    );
    // Past the first TTL: live data is set, so are the ratios.
    assert!(last.live_bytes > 0, "{what}");
    assert!(r.peak_ratio.is_some() && r.mean_ratio.is_some() && r.final_ratio.is_some());
    assert!(r.peak_ratio >= r.mean_ratio, "{what}");
    // A key of those expired was asked for, and none came back (nor a wrong value).
    assert!(r.expired_checks > 0, "{what}");
    sessions::check(r).unwrap();
}

fn run(kinds: &[SessionEngineKind]) {
    let cfg = tiny();
    let mut results = Vec::new();
    for &kind in kinds {
        let dir = tempfile::tempdir().unwrap();
        let r = sessions::run(kind, dir.path(), &cfg)
            .unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        assert_sane(&r, &cfg);
        results.push(r);
    }
    let report = SessionsReport {
        config: cfg,
        engines: results,
        machine: spillway_bench::run::Machine::here(),
    };
    let table = sessions_run::render(&report);
    for kind in kinds {
        assert!(table.contains(kind.name()), "{table}");
    }
    assert!(
        table.contains("inserts/s") && table.contains("peak ÷ live"),
        "{table}"
    );
    let svg = spillway_bench::chart::sessions_svg(&report);
    assert!(svg.starts_with("<svg") && svg.contains("polyline"), "{svg}");
    let back: SessionsReport = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(back.engines.len(), kinds.len());
    assert_eq!(
        back.engines[0].samples.len(),
        report.engines[0].samples.len()
    );
}

#[test]
fn spillway_runs_a_tiny_session_store() {
    run(&[SessionEngineKind::Spillway]);
}

/// Time-ordered ids in a store that keeps key order: the old keys' leaves are never written
/// again, and their records still expire.
#[test]
fn spillway_ordered_runs_a_tiny_session_store_of_sequential_keys() {
    let cfg = SessionConfig {
        keys: spillway_bench::Keys::Sequential,
        ..tiny()
    };
    let dir = tempfile::tempdir().unwrap();
    let r = sessions::run(SessionEngineKind::SpillwayOrdered, dir.path(), &cfg).unwrap();
    assert_sane(&r, &cfg);
}

/// The peers' adapters: RocksDB's compaction filter, fjall's scan (which must have run: every
/// T/4) and its filter, and Redis where it is installed.
#[cfg(feature = "peers")]
#[test]
fn the_peers_run_a_tiny_session_store() {
    let kinds: Vec<SessionEngineKind> = SessionEngineKind::all_available()
        .into_iter()
        .filter(|k| *k != SessionEngineKind::Spillway)
        .collect();
    run(&kinds);
    let dir = tempfile::tempdir().unwrap();
    let r = sessions::run(SessionEngineKind::Fjall, dir.path(), &tiny()).unwrap();
    let w = r.expiry_work.expect("fjall's scan reports its work");
    assert!(w.passes > 0 && w.scanned > 0 && w.deleted > 0, "{w:?}");
}

#[test]
fn a_bad_config_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = SessionConfig {
        ttl_secs: -1.0,
        ..tiny()
    };
    assert!(sessions::run(SessionEngineKind::Spillway, dir.path(), &cfg).is_err());
    assert!(!dir.path().join("log").exists());
}
