//! A tiny run of the whole harness on every engine in this build — all three with
//! `--features peers` (as CI runs it), Spillway alone otherwise — so that it cannot rot:
//! every workload runs, every loaded key is found with its value, no missing key is, and the
//! report renders as a table, JSON and SVG.

use spillway_bench::{run, table, EngineKind, Phase, Progress, RunConfig};

struct Quiet;
impl Progress for Quiet {
    fn start(&self, _: &str, _: Phase, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

fn engines() -> Vec<EngineKind> {
    [
        EngineKind::Spillway,
        EngineKind::SpillwayInline,
        EngineKind::RocksDb,
        EngineKind::LevelDb,
    ]
    .into_iter()
    .filter(|e| e.available())
    .collect()
}

#[test]
fn every_engine_runs_every_workload_and_answers_correctly() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        records: 20_000,
        record_size: 16,
        seed: 7,
        batch: 1000,
        sync: true,
        threads: 2,
        ops: 4000,
        zipfian: false,
        cold: false,
        readers: 2,
    };
    let report = run(&engines(), &Phase::ALL, &cfg, dir.path(), false, &Quiet).unwrap();
    assert_eq!(report.engines.len(), engines().len());
    for e in &report.engines {
        assert_eq!(e.phases.len(), Phase::ALL.len(), "{}", e.engine);
        assert!(e
            .phases
            .iter()
            .all(|p| p.reads_during_load.is_some() == (p.phase == Phase::Load)));
        for p in &e.phases {
            let what = format!("{} {}", e.engine, p.phase.name());
            assert_eq!(p.wrong, 0, "{what}");
            if matches!(p.phase, Phase::Settle | Phase::Reopen) {
                assert_eq!(p.ops, 0, "{what}: no operations, only time");
                assert!(p.seconds > 0.0, "{what}");
                continue;
            }
            assert!(p.ops_per_sec > 0.0 && p.latency_p50_us > 0.0, "{what}");
            match p.phase {
                Phase::Load => {
                    assert_eq!(p.ops, 20_000, "{what}: every record inserted");
                    assert_eq!(p.writes, 20, "{what}: in batches of 1000");
                    assert_eq!(p.user_bytes_written, 20_000 * 16, "{what}");
                    assert!(p.disk_bytes > 0, "{what}");
                    assert!(p.cpu_seconds > 0.0, "{what}");
                    let reads = p.reads_during_load.as_ref().expect("readers ran");
                    assert_eq!(reads.wrong, 0, "{what}: acknowledged writes are readable");
                    assert_eq!(reads.found, reads.ops, "{what}");
                }
                Phase::Read | Phase::YcsbC => assert_eq!(p.found, p.ops, "{what}"),
                Phase::ReadMissing => assert_eq!(p.found, 0, "{what}"),
                Phase::Settle | Phase::Reopen => unreachable!(),
                _ => assert!(p.found > 0 && p.found <= p.ops, "{what}"),
            }
        }
    }
    let spillway = &report.engines[0];
    assert!(spillway.phases[0].engine_write_amp.unwrap() > 1.0);
    // One log fsync per synced batch at most (group commit can share them).
    let syncs = spillway.phases[0].log_syncs_per_write.unwrap();
    assert!(syncs > 0.0 && syncs <= 1.0, "{syncs}");

    let text = table::render(&report);
    for e in engines() {
        assert!(text.contains(e.name()), "table names {}", e.name());
    }
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["engines"].as_array().unwrap().len(), engines().len());
    assert_eq!(json["config"]["records"], 20_000);
    let svg = spillway_bench::chart::svg(&report);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // The stores were removed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn cold_zipfian_reads_evict_and_still_find_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        records: 10_000,
        record_size: 64,
        seed: 3,
        batch: 500,
        sync: false,
        threads: 1,
        ops: 2000,
        zipfian: true,
        cold: true,
        readers: 0,
    };
    let report = run(
        &engines(),
        &[Phase::Load, Phase::Read],
        &cfg,
        dir.path(),
        true,
        &Quiet,
    )
    .unwrap();
    for e in &report.engines {
        let read = &e.phases[1];
        assert!(read.cold, "{}", e.engine);
        assert_eq!((read.found, read.wrong), (read.ops, 0), "{}", e.engine);
        assert!(dir.path().join(&e.engine).exists(), "kept");
    }
}

#[cfg(feature = "peers")]
#[test]
fn the_peers_are_in_this_build() {
    assert_eq!(engines().len(), 4);
}
