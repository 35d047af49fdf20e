//! A tiny transfer run (issue 29) on every transactional engine in this build — the peers too
//! with `--features peers`, Spillway alone otherwise: every transfer ends committed or skipped,
//! conflicts are retried, and after a reopen the balances add up to what they started at.

use spillway_bench::transfer::{self, INITIAL_BALANCE};
use spillway_bench::transfer_run::{self, TransferReport};
use spillway_bench::{TransferConfig, TxEngineKind};

fn config(zipfian: bool) -> TransferConfig {
    TransferConfig {
        accounts: 1000,
        threads: 2,
        zipfian,
        sync: true,
        transfers: Some(300),
        seconds: None,
        seed: 11,
    }
}

#[test]
fn every_engine_conserves_the_balances() {
    for zipfian in [false, true] {
        let cfg = config(zipfian);
        let mut results = Vec::new();
        for kind in TxEngineKind::all_available() {
            let dir = tempfile::tempdir().unwrap();
            let r = transfer::run(kind, dir.path(), &cfg)
                .unwrap_or_else(|e| panic!("{} (zipfian {zipfian}): {e}", kind.name()));
            let what = format!("{} (zipfian {zipfian})", r.engine);
            assert_eq!(r.total, cfg.accounts * INITIAL_BALANCE, "{what}");
            // Each claimed transfer is retried until it commits or is skipped.
            assert_eq!(r.commits + r.skipped, 300, "{what}");
            assert!(r.commits > 0, "{what}");
            let begun = r.commits + r.conflicts + r.skipped;
            assert_eq!(r.abort_rate, r.conflicts as f64 / begun as f64, "{what}");
            if matches!(kind, TxEngineKind::Redb | TxEngineKind::Lmdb) {
                assert_eq!(r.conflicts, 0, "{what}: write transactions take turns");
            }
            results.push(r);
        }
        let report = TransferReport {
            config: cfg,
            engines: results,
            machine: spillway_bench::run::Machine::here(),
        };
        let table = transfer_run::render(&report);
        for kind in TxEngineKind::all_available() {
            assert!(table.contains(kind.name()), "{table}");
        }
        assert!(
            table.contains("commits/s") && table.contains("abort rate"),
            "{table}"
        );
        let back: TransferReport = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(back.engines.len(), report.engines.len());
    }
}

#[test]
fn a_lost_or_made_unit_fails_the_check() {
    let err = transfer::check_total("x", 1000, 1000 * INITIAL_BALANCE + 1).unwrap_err();
    assert!(err.contains("not trusted"), "{err}");
}

#[test]
fn engine_names_parse_and_leveldb_is_refused() {
    for kind in spillway_bench::tx_engine::ALL_TX {
        assert_eq!(TxEngineKind::parse(kind.name()), Ok(kind));
    }
    let err = TxEngineKind::parse("leveldb").unwrap_err();
    assert!(err.contains("no transactions"), "{err}");
}
