//! A tiny run of the whole harness on every engine in this build — the peers too with
//! `--features peers` (as CI runs it), Spillway alone otherwise — so that it cannot rot:
//! every workload runs, every loaded key is found with its value, no missing key is, every
//! scan returns its records in key order, and the report renders as a table, JSON and SVG.

use spillway_bench::{
    run, table, EngineKind, Keys, Phase, PhaseResult, Progress, Report, RunConfig,
};

struct Quiet;
impl Progress for Quiet {
    fn start(&self, _: &str, _: Phase, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Every engine in this build (Spillway first: the base of the ratios).
fn engines() -> Vec<EngineKind> {
    [
        EngineKind::Spillway,
        EngineKind::SpillwayInline,
        EngineKind::SpillwayOrdered,
        EngineKind::RocksDb,
        EngineKind::LevelDb,
        EngineKind::Fjall,
        EngineKind::Redb,
    ]
    .into_iter()
    .filter(|e| e.available())
    .collect()
}

/// The engines that keep keys in order and are in this build, Spillway's aside.
fn ordered_peers() -> Vec<EngineKind> {
    [
        EngineKind::RocksDb,
        EngineKind::LevelDb,
        EngineKind::Fjall,
        EngineKind::Redb,
    ]
    .into_iter()
    .filter(|e| e.available())
    .collect()
}

#[test]
fn every_engine_runs_every_point_workload_and_answers_correctly() {
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
        keys: Keys::Random,
        spillway_memory_budget: None,
        spillway_options: Vec::new(),
        cpu_hogs: 0,
        existing: false,
    };
    let report = run(&engines(), &Phase::POINT, &cfg, dir.path(), false, &Quiet).unwrap();
    assert_eq!(report.engines.len(), engines().len());
    for e in &report.engines {
        assert_eq!(e.phases.len(), Phase::POINT.len(), "{}", e.engine);
        assert!(e
            .phases
            .iter()
            .all(|p| p.reads_during_load.is_some() == (p.phase == Phase::Load)));
        for p in &e.phases {
            let what = format!("{} {}", e.engine, p.phase.name());
            assert_eq!(p.wrong, 0, "{what}");
            assert_eq!(p.error, None, "{what}");
            assert_eq!(
                (p.scans, p.inserted),
                (None, 0),
                "{what}: no scans, no inserts"
            );
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
                Phase::Settle | Phase::Reopen | Phase::YcsbE | Phase::ScanAll => unreachable!(),
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
fn cold_zipfian_reads_evict_and_still_find_every_key_and_a_later_run_reads_the_kept_stores() {
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
        keys: Keys::Random,
        spillway_memory_budget: None,
        spillway_options: Vec::new(),
        cpu_hogs: 0,
        existing: false,
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
        // Spillway's selectors were read before the cold phase, not in it; the load is warm.
        let spillway = e.engine.starts_with("spillway");
        assert_eq!(read.warm_up_seconds.is_some(), spillway, "{}", e.engine);
        assert_eq!(e.phases[0].warm_up_seconds, None, "{}", e.engine);
    }
    // A later run reads the kept stores without loading them (`--use-existing`), refuses
    // them for other records, and removes them when it does not keep them in turn.
    let existing = RunConfig {
        existing: true,
        ..cfg.clone()
    };
    let other = RunConfig {
        records: cfg.records + 1,
        ..existing.clone()
    };
    let phases = [Phase::Reopen, Phase::Read, Phase::ReadMissing];
    let err = run(&engines(), &phases, &other, dir.path(), true, &Quiet).unwrap_err();
    assert!(err.contains("holds other records"), "{err}");
    let report = run(&engines(), &phases, &existing, dir.path(), false, &Quiet).unwrap();
    for e in &report.engines {
        let (read, missing) = (&e.phases[1], &e.phases[2]);
        assert_eq!((read.found, read.wrong), (read.ops, 0), "{}", e.engine);
        assert_eq!(missing.found, 0, "{}", e.engine);
        assert!(!dir.path().join(&e.engine).exists(), "removed");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let err = run(&engines(), &phases, &existing, dir.path(), false, &Quiet).unwrap_err();
    assert!(err.contains("load one first with --keep"), "{err}");
}

#[cfg(feature = "peers")]
#[test]
fn the_peers_are_in_this_build() {
    assert_eq!(engines().len(), 7);
    assert_eq!(ordered_peers().len(), 4);
}

/// Small enough for CI, large enough that YCSB E's scans cross blocks and files.
fn scan_config(keys: Keys) -> RunConfig {
    RunConfig {
        records: 20_000,
        record_size: 24,
        seed: 11,
        batch: 1000,
        sync: true,
        threads: 2,
        ops: 3000,
        zipfian: false,
        cold: false,
        readers: 0,
        keys,
        spillway_memory_budget: None,
        spillway_options: Vec::new(),
        cpu_hogs: 0,
        existing: false,
    }
}

/// The scan workloads and a read after them, on a fresh load.
const SCAN_PHASES: [Phase; 4] = [Phase::Load, Phase::YcsbE, Phase::ScanAll, Phase::Read];

/// Everything a correct ordered engine must show after [`SCAN_PHASES`].
fn assert_scans_right(report: &Report, cfg: &RunConfig) {
    for e in &report.engines {
        let phase = |ph: Phase| -> &PhaseResult {
            e.phases.iter().find(|p| p.phase == ph).expect("phase ran")
        };
        let what = |ph: Phase| format!("{} {} ({:?} keys)", e.engine, ph.name(), cfg.keys);

        let ycsb = phase(Phase::YcsbE);
        let w = what(Phase::YcsbE);
        assert_eq!(ycsb.error, None, "{w}");
        let scans = ycsb.scans.expect("scans counted");
        assert_eq!(ycsb.ops, cfg.ops, "{w}: every operation ran");
        assert_eq!(
            scans + ycsb.inserted,
            ycsb.ops,
            "{w}: each op a scan or an insert"
        );
        // 5% inserts of 3000: about 150; far from both 0 and the scans' share.
        assert!((50..400).contains(&ycsb.inserted), "{w}: {}", ycsb.inserted);
        assert_eq!(ycsb.writes, ycsb.inserted, "{w}: one write per insert");
        // Each scan began at its (present) key and returned 1..=len records in key order,
        // short only at the end of the keys.
        assert_eq!((ycsb.found, ycsb.wrong), (scans, 0), "{w}");
        let records = ycsb.scanned_records.unwrap();
        assert!(records >= scans && records <= 100 * scans, "{w}: {records}");
        let mean = records as f64 / scans as f64;
        assert!(
            (35.0..=65.0).contains(&mean),
            "{w}: lengths uniform in 1..=100, mean {mean}"
        );
        assert_eq!(
            ycsb.scanned_bytes,
            Some(records * cfg.record_size as u64),
            "{w}"
        );
        assert!(ycsb.ops_per_sec > 0.0 && ycsb.latency_p50_us > 0.0, "{w}");

        let all = phase(Phase::ScanAll);
        let w = what(Phase::ScanAll);
        assert_eq!(all.error, None, "{w}");
        let written = cfg.records + ycsb.inserted;
        assert_eq!(all.scans, Some(1), "{w}");
        assert_eq!(
            (all.ops, all.found, all.wrong),
            (written, written, 0),
            "{w}"
        );
        assert_eq!(all.scanned_records, Some(written), "{w}");
        assert_eq!(
            all.scanned_bytes,
            Some(written * cfg.record_size as u64),
            "{w}"
        );
        assert!(all.ops_per_sec > 0.0, "{w}");

        let read = phase(Phase::Read);
        assert_eq!(
            (read.found, read.wrong),
            (read.ops, 0),
            "{}",
            what(Phase::Read)
        );
    }
    let text = table::render(report);
    assert!(
        text.contains("scan MB/s") && text.contains("records/scan"),
        "{text}"
    );
    assert!(!text.contains("failed"), "{text}");
}

#[cfg(feature = "peers")]
#[test]
fn the_peers_scan_in_key_order_with_random_and_sequential_keys() {
    for keys in [Keys::Random, Keys::Sequential] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = scan_config(keys);
        let report = run(
            &ordered_peers(),
            &SCAN_PHASES,
            &cfg,
            dir.path(),
            false,
            &Quiet,
        )
        .unwrap();
        assert_eq!(report.engines.len(), 4);
        assert_scans_right(&report, &cfg);
    }
}

/// Each peer's adapter on its own: exact records from a start key, at the limit, at the end.
#[cfg(feature = "peers")]
#[test]
fn peer_scans_return_exactly_the_records_asked_for() {
    use spillway_bench::{workload::Workload, RecordBatch};
    let w = Workload::new(1, 16).unwrap().with_keys(Keys::Sequential);
    for kind in ordered_peers() {
        let dir = tempfile::tempdir().unwrap();
        let engine = kind.open(dir.path()).unwrap();
        let mut batch = RecordBatch::new(8, 8);
        // Two batches, the second written first: order comes from the keys, not the writes.
        for range in [50..100u64, 0..50] {
            batch.clear();
            for i in range {
                batch.push(&w.key(i), &w.value(i));
            }
            engine.write(&batch, false).unwrap();
        }
        let k = kind.name();
        let r = engine.scan(&w.key(10), 5).unwrap();
        assert_eq!((r.records, r.bytes, r.out_of_order), (5, 80, 0), "{k}");
        assert!(r.began_at_start && !r.reached_end, "{k}");
        let r = engine.scan(&w.key(95), 100).unwrap();
        assert_eq!(
            (r.records, r.reached_end),
            (5, true),
            "{k}: short only at the end"
        );
        let r = engine.scan(&w.key(100), 100).unwrap();
        assert_eq!(
            (r.records, r.reached_end),
            (0, true),
            "{k}: nothing past the last key"
        );
        // A start between two keys begins at the next one.
        let mut between = w.key(20).to_vec();
        between.push(0);
        let r = engine.scan(&between, 3).unwrap();
        assert_eq!(
            (r.records, r.began_at_start, r.out_of_order),
            (3, false, 0),
            "{k}"
        );
        let r = engine.scan(&[], usize::MAX).unwrap();
        assert_eq!(
            (r.records, r.out_of_order, r.reached_end),
            (100, 0, true),
            "{k}"
        );
        assert_eq!(engine.scan(&[], 0).unwrap().records, 0, "{k}");
        engine.close().unwrap();
    }
}

/// A store that keeps no key order refuses scans: the scan phases say so for that engine,
/// its other phases and the engines after it run as usual.
#[test]
fn a_refused_scan_is_reported_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        records: 5000,
        ops: 500,
        ..scan_config(Keys::Random)
    };
    let engines: Vec<EngineKind> = [EngineKind::SpillwayHashed]
        .into_iter()
        .chain(ordered_peers())
        .collect();
    let report = run(&engines, &SCAN_PHASES, &cfg, dir.path(), false, &Quiet).unwrap();
    assert_eq!(report.engines.len(), engines.len());
    let hashed = &report.engines[0];
    for p in &hashed.phases {
        let what = format!("{} {}", hashed.engine, p.phase.name());
        if p.phase.scans() {
            assert!(p.error.as_deref().is_some_and(|e| !e.is_empty()), "{what}");
            assert_eq!(p.wrong, 0, "{what}: a refusal is not a wrong answer");
        } else {
            assert_eq!(p.error, None, "{what}");
            assert_eq!(p.wrong, 0, "{what}");
        }
        if p.phase == Phase::Read {
            assert_eq!(
                (p.found, p.ops),
                (500, 500),
                "{what}: reads after the refusals"
            );
        }
    }
    let text = table::render(&report);
    assert!(text.contains("spillway-hashed ycsb-e failed: "), "{text}");
    assert!(text.contains("spillway-hashed scan-all failed: "), "{text}");
    for e in &report.engines[1..] {
        assert!(e.phases.iter().all(|p| p.error.is_none()), "{}", e.engine);
    }
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert!(json["engines"][0]["phases"][1]["error"].is_string());
}

/// The raw-log baselines only write. Every phase that reads — GETs, scans, counters and their
/// check, `hot-get`, readers beside the load — is recorded as refused for them without running;
/// the load and a reopen run; the engine after them runs every phase as usual.
#[test]
fn the_raw_baselines_write_and_refuse_every_phase_that_reads() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        records: 2000,
        ops: 2000,
        batch: 100,
        readers: 1,
        ..scan_config(Keys::Random)
    };
    let phases = [
        Phase::Load,
        Phase::Reopen,
        Phase::Read,
        Phase::YcsbA,
        Phase::YcsbE,
        Phase::Counters,
        Phase::HotGet,
        Phase::YcsbFMerge,
    ];
    let engines = [
        EngineKind::RawAppend,
        EngineKind::RawOverwrite,
        EngineKind::SpillwayOrdered,
    ];
    assert!(engines.iter().all(|e| e.available()), "no peers needed");
    let report = run(&engines, &phases, &cfg, dir.path(), false, &Quiet).unwrap();
    for e in &report.engines[..2] {
        for p in &e.phases {
            let what = format!("{} {}", e.engine, p.phase.name());
            if p.phase == Phase::Reopen {
                assert_eq!(p.error, None, "{what}: writes nothing, reads nothing");
                continue;
            }
            let error = p.error.as_deref().unwrap_or_default();
            // The load has a reader beside it, so it is refused too.
            assert!(error.contains("keeps no index"), "{what}: {error:?}");
            assert_eq!((p.ops, p.writes, p.wrong), (0, 0, 0), "{what}: not run");
            assert!(
                p.reads_during_load.is_none() && p.counter_gets.is_none(),
                "{what}"
            );
        }
    }
    let ordered = &report.engines[2];
    assert!(
        ordered
            .phases
            .iter()
            .all(|p| p.error.is_none() && p.wrong == 0),
        "{:?}",
        ordered.phases
    );
    let text = table::render(&report);
    assert!(text.contains("raw-overwrite hot-get failed: "), "{text}");

    // Without readers the load runs: every record written, in batches, durable.
    let cfg = RunConfig { readers: 0, ..cfg };
    let report = run(&engines[..2], &phases[..2], &cfg, dir.path(), false, &Quiet).unwrap();
    for e in &report.engines {
        let load = &e.phases[0];
        assert_eq!(load.error, None, "{}", e.engine);
        assert_eq!((load.ops, load.writes), (2000, 20), "{}", e.engine);
        assert!(e.phases.iter().all(|p| p.error.is_none()), "{}", e.engine);
        assert_eq!(e.user_bytes_written_total, 2000 * 24, "{}", e.engine);
    }
}

/// Spillway's ordered store, through the issue 11 range API, held to the peers' standard.
#[test]
fn spillway_ordered_scans_in_key_order_with_random_and_sequential_keys() {
    for keys in [Keys::Random, Keys::Sequential] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = scan_config(keys);
        let report = run(
            &[EngineKind::SpillwayOrdered],
            &SCAN_PHASES,
            &cfg,
            dir.path(),
            false,
            &Quiet,
        )
        .unwrap();
        assert_scans_right(&report, &cfg);
    }
}

/// Small enough for CI: 20 K increments over 5 K counters, so that zipfian batches repeat
/// keys (the read-add-write engines must sum them) and the hottest counter has hundreds.
fn counter_config(zipfian: bool, threads: usize) -> RunConfig {
    RunConfig {
        records: 5000,
        record_size: 16,
        seed: 5,
        batch: 1000,
        sync: true,
        threads,
        ops: 20_000,
        zipfian,
        cold: false,
        readers: 0,
        keys: Keys::Random,
        spillway_memory_budget: None,
        spillway_options: Vec::new(),
        cpu_hogs: 0,
        existing: false,
    }
}

/// Every engine runs the counter workloads — Spillway and RocksDB by merges, the others by
/// reading, adding and writing — and every counter ends exactly where the driver's model says
/// (the run would have failed otherwise); the figures are where they belong.
#[test]
fn every_engine_counts_exactly_uniform_and_zipfian() {
    // One thread: reads during YCSB F are exact too; two: increments race.
    for (zipfian, threads) in [(false, 1), (true, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let cfg = counter_config(zipfian, threads);
        let report = run(
            &engines(),
            &Phase::COUNTERS,
            &cfg,
            dir.path(),
            false,
            &Quiet,
        )
        .unwrap();
        assert_eq!(report.engines.len(), engines().len());
        let mut hottest = None;
        for e in &report.engines {
            let phase = |ph: Phase| -> &PhaseResult {
                e.phases.iter().find(|p| p.phase == ph).expect("phase ran")
            };
            let what = |ph: Phase| format!("{} {} (zipfian: {zipfian})", e.engine, ph.name());
            let spillway = e.engine.starts_with("spillway");
            for p in &e.phases {
                assert_eq!((p.wrong, &p.error), (0, &None), "{}", what(p.phase));
            }

            let c = phase(Phase::Counters);
            let w = what(Phase::Counters);
            assert_eq!(c.ops, 20_000, "{w}: every increment");
            assert_eq!(c.writes, 20, "{w}: in batches of 1000");
            assert_eq!(
                c.user_bytes_written,
                20_000 * 16,
                "{w}: key + 8-byte operand"
            );
            assert!(c.ops_per_sec > 0.0 && c.latency_p50_us > 0.0, "{w}");
            let check = c.counter_gets.as_ref().expect("every counter checked");
            assert_eq!((check.ops, check.wrong), (5000, 0), "{w}");
            assert!(check.ops_per_sec > 0.0 && check.latency_p50_us > 0.0, "{w}");
            if zipfian {
                // Skewed: a good share of counters were never incremented, and are absent.
                assert!((1000..4900).contains(&check.found), "{w}: {}", check.found);
            } else {
                // 4 per counter on average: nearly all were incremented.
                assert!(check.found > 4800, "{w}: {}", check.found);
            }
            let top = c.top_counter_gets.as_ref().expect("the top counters' GETs");
            assert_eq!((top.ops, top.found, top.wrong), (100, 100, 0), "{w}");
            assert!(top.ops_per_sec > 0.0, "{w}");
            let merges = c.merge_stats.map(|m| (m.merges, m.merge_failures));
            assert_eq!(merges, spillway.then_some((20_000, 0)), "{w}");

            let h = phase(Phase::HotGet);
            let w = what(Phase::HotGet);
            let hot = h.hot_get.as_ref().expect("hot and plain GETs");
            // `ops` GETs (at most 100 K), alternating in blocks of 1000; fewer, as many of each
            // kind, if an engine takes over 10 s (RocksDB folds the hot counter's operands).
            assert!((2000..=20_000).contains(&h.ops), "{w}: {}", h.ops);
            assert_eq!(hot.hot.ops + hot.plain.ops, h.ops, "{w}");
            assert_eq!(hot.hot.ops, hot.plain.ops, "{w}");
            assert_eq!(
                (hot.hot.found, hot.plain.found),
                (hot.hot.ops, hot.plain.ops),
                "{w}"
            );
            assert!(hot.slowdown().unwrap() > 0.0, "{w}");
            assert_eq!(h.writes, 0, "{w}: reads only");
            // The same increments everywhere, so the same hottest counter.
            assert_eq!(
                *hottest.get_or_insert(hot.hot_increments),
                hot.hot_increments
            );
            if zipfian {
                assert!(hot.hot_increments > 500, "{w}: {}", hot.hot_increments);
            }

            let f = phase(Phase::YcsbFMerge);
            let w = what(Phase::YcsbFMerge);
            assert_eq!(f.ops, 20_000, "{w}");
            // Half reads, half increments (one write each).
            assert_eq!(f.found + f.writes, f.ops, "{w}: every read right");
            assert!((8000..12_000).contains(&f.writes), "{w}: {}", f.writes);
            assert_eq!(f.user_bytes_written, f.writes * 16, "{w}");
            let check = f.counter_gets.as_ref().expect("every counter checked");
            assert_eq!(
                (check.ops, check.found, check.wrong),
                (5000, 5000, 0),
                "{w}: every counter has a value (put as 0 before)"
            );
            let merges = f.merge_stats.map(|m| m.merges);
            assert_eq!(merges, spillway.then_some(f.writes), "{w}");
        }
        let text = table::render(&report);
        for word in [
            "counters",
            "hot-get",
            "ycsb-f-merge",
            "check GETs/s",
            "top-100 GETs/s",
            "hot÷plain GET",
        ] {
            assert!(text.contains(word), "{word}: {text}");
        }
        assert!(text.contains("merge operands written"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert!(json["engines"][0]["phases"][2]["hot_get"]["hot"]["ops"].is_u64());
    }
}

/// Each engine's increments on their own: repeated keys in one batch, wrapping, a base value
/// put before, and the counters as they were after a reopen (which must find the operator).
#[test]
fn every_engine_sums_repeated_keys_wraps_and_keeps_counters_across_a_reopen() {
    use spillway_bench::{CounterBatch, RecordBatch};
    for kind in engines() {
        let dir = tempfile::tempdir().unwrap();
        let k = kind.name();
        let engine = kind.open(dir.path()).unwrap();
        let mut base = RecordBatch::new(2, 8);
        base.push(b"cc", &40u64.to_le_bytes());
        engine.write(&base, true).unwrap();
        let mut b = CounterBatch::new(2);
        for (key, delta) in [
            (b"aa", 1),
            (b"bb", 5),
            (b"aa", 2),
            (b"aa", u64::MAX),
            (b"cc", 2),
        ] {
            b.push(key, delta);
        }
        engine.increment(&b, true).unwrap();
        let get = |e: &dyn spillway_bench::Engine, key: &[u8]| {
            e.get(key)
                .unwrap()
                .map(|v| u64::from_le_bytes(v.try_into().unwrap()))
        };
        let expect = [
            (b"aa", Some(2)),
            (b"bb", Some(5)),
            (b"cc", Some(42)),
            (b"dd", None),
        ];
        for (key, v) in expect {
            assert_eq!(get(engine.as_ref(), key), v, "{k} {key:?}");
        }
        engine.close().unwrap();
        let engine = kind.open(dir.path()).unwrap();
        for (key, v) in expect {
            assert_eq!(get(engine.as_ref(), key), v, "{k} {key:?} after reopen");
        }
        b.clear();
        b.push(b"bb", 1);
        engine.increment(&b, false).unwrap();
        assert_eq!(get(engine.as_ref(), b"bb"), Some(6), "{k}");
        engine.close().unwrap();
    }
}

/// An engine that loses an increment: the check after `counters` fails the phase with an
/// error naming a counter, instead of printing figures.
#[test]
fn a_lost_increment_fails_the_run() {
    use spillway_bench::{phase, CounterBatch, CounterModel, Engine, ScanResult};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Spillway, dropping the first increment of its 5th batch.
    struct Lossy(Box<dyn Engine>, AtomicU64);
    impl Engine for Lossy {
        fn write(&self, b: &spillway_bench::RecordBatch, sync: bool) -> Result<(), String> {
            self.0.write(b, sync)
        }
        fn increment(&self, b: &CounterBatch, sync: bool) -> Result<(), String> {
            if self.1.fetch_add(1, Ordering::Relaxed) != 4 {
                return self.0.increment(b, sync);
            }
            let mut rest = CounterBatch::new(8);
            for (k, d) in b.iter().skip(1) {
                rest.push(k, d);
            }
            self.0.increment(&rest, sync)
        }
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
            self.0.get(key)
        }
        fn scan(&self, start: &[u8], limit: usize) -> Result<ScanResult, String> {
            self.0.scan(start, limit)
        }
        fn close(self: Box<Self>) -> Result<(), String> {
            self.0.close()
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let cfg = counter_config(true, 1);
    let lossy = Lossy(
        EngineKind::Spillway.open(dir.path()).unwrap(),
        AtomicU64::new(0),
    );
    let run_counters = |engine: &dyn Engine| {
        let model = CounterModel::new(cfg.records);
        let r = phase::run(
            engine,
            "lossy",
            dir.path(),
            &cfg,
            Phase::Counters,
            0,
            &model,
            &|_| {},
        );
        (r, model)
    };
    let (result, model) = run_counters(&lossy);
    let err = result.unwrap_err();
    assert!(
        err.contains("lossy counters: 1 of 5000 counters hold a wrong value (counter "),
        "{err}"
    );
    assert!(err.contains("results not trusted"), "{err}");
    // The model saw all 20 K increments; the store one less.
    let total: u64 = (0..cfg.records).map(|j| model.expected(j)).sum();
    assert_eq!(total, 20_000);
    Box::new(lossy).close().unwrap();
}

/// Counters are records: a full scan after them returns the loaded records and the counters.
#[test]
fn a_full_scan_after_counters_counts_them_too() {
    let engines: Vec<EngineKind> = [EngineKind::SpillwayOrdered]
        .into_iter()
        .chain(ordered_peers())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let cfg = counter_config(true, 1);
    let phases = [Phase::Load, Phase::Counters, Phase::ScanAll];
    let report = run(&engines, &phases, &cfg, dir.path(), false, &Quiet).unwrap();
    for e in &report.engines {
        let counters = e.phases[1].counter_gets.as_ref().unwrap().found;
        let all = &e.phases[2];
        assert_eq!(all.error, None, "{}", e.engine);
        assert_eq!(all.found, 5000 + counters, "{}", e.engine);
    }
}

/// `-o name=value` reaches every Spillway configuration and is said in the report: a 64 KiB
/// root buffer makes the load spill (the default 64 MiB buffer holds every record), and an
/// option out of range fails the run naming it.
#[test]
fn options_by_name_shape_spillway_and_are_reported() {
    let load = |options: Vec<(String, String)>| {
        let dir = tempfile::tempdir().unwrap();
        let cfg = RunConfig {
            spillway_options: options,
            ..scan_config(Keys::Random)
        };
        run(
            &[EngineKind::Spillway],
            &[Phase::Load, Phase::Settle, Phase::Read],
            &cfg,
            dir.path(),
            false,
            &Quiet,
        )
    };
    let spilled = |report: &Report| {
        let p = &report.engines[0].phases;
        p[0].engine_writes.unwrap().root_spills + p[1].engine_writes.unwrap().root_spills
    };
    let default = load(Vec::new()).unwrap();
    let small = load(vec![("root_buffer_size".into(), "64K".into())]).unwrap();
    assert_eq!(spilled(&default), 0, "the default buffer holds the load");
    assert!(spilled(&small) > 0, "a 64 KiB buffer spills");
    for report in [&default, &small] {
        let read = &report.engines[0].phases[2];
        assert_eq!((read.found, read.wrong), (read.ops, 0));
    }
    // What the small buffer wrote, by cause: its spills, beside the log; the parts add up to
    // the whole, and the report gives the load's and its settle's together. Over the load and
    // its settle, not the load alone: its last spill may still be writing when the load
    // ends, and a snapshot of the counters then need not add up (they are read one by one).
    let phases = &small.engines[0].phases;
    let w = (phases[0].engine_writes.unwrap()).plus(&phases[1].engine_writes.unwrap());
    assert!(w.log > 0 && w.root_spills > 0, "{w:?}");
    let parts = w.log
        + w.log_zeros
        + w.root_spills
        + w.node_spills
        + w.leaf_rewrites
        + w.list_merges
        + w.selectors
        + w.metadata;
    assert_eq!(parts, w.disk, "{w:?}");
    assert!(table::render(&small)
        .contains("write amplification by its own counters, load and settle: "));
    assert!(!default.engines[0].options.contains("set by the run"));
    assert!(small.engines[0]
        .options
        .ends_with("; set by the run: root_buffer_size=64K"));
    let err = load(vec![("fan_out".into(), "1".into())]).unwrap_err();
    assert!(err.contains("fan_out"), "{err}");
}
