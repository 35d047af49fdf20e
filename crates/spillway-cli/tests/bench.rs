//! `spillway bench` end to end: each engine in its own child process, results merged into one
//! table, JSON and SVG.

use std::path::Path;
use std::process::{Command, Output};

/// `spillway bench ARGS --dir DIR/stores --json DIR/r.json`; the output and the JSON's path.
fn bench(dir: &Path, args: &[&str]) -> (Output, String, String, std::path::PathBuf) {
    let json = dir.join("r.json");
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .arg("bench")
        .args(args)
        .arg("--dir")
        .arg(dir.join("stores"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr, json)
}

#[test]
fn bench_runs_engines_in_child_processes_and_writes_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("r.svg");
    let (out, stdout, stderr, json) = bench(
        dir.path(),
        &[
            "--engines",
            "spillway,spillway",
            "--records",
            "5000",
            "--ops",
            "1000",
            "--workloads",
            "load,read,ycsb-a",
            "--sync",
            "none",
            "--svg",
            svg.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ycsb-a") && stdout.contains("(×"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    assert_eq!(
        text.matches("\"engine\": \"spillway\"").count(),
        2 * 3 + 2,
        "{text}"
    );
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    // The stores, the job files and the folder the run created are gone.
    assert!(!dir.path().join("stores").exists());
}

#[test]
fn bench_defaults_to_the_engines_of_this_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args([
            "bench",
            "--records",
            "2000",
            "--ops",
            "200",
            "--sync",
            "none",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("spillway"), "{stdout}");
    assert!(!stdout.contains("rocksdb"), "{stdout}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_failed_bench_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    // A file size limit (SIGXFSZ ignored, so writes past it fail with EFBIG) fails the
    // engine's load in its child process, as a full disk would.
    let run = |work: &Path, keep: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f 256; exec '{}' bench --engines spillway,spillway-ordered \
                 --records 200000 --workloads load --dir '{}' {keep}",
                env!("CARGO_BIN_EXE_spillway"),
                work.display()
            ))
            .output()
            .unwrap()
    };
    let fresh = dir.path().join("fresh");
    let out = run(&fresh, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the spillway run failed"), "{stderr}");
    assert!(
        !fresh.exists(),
        "{:?}",
        std::fs::read_dir(&fresh).map(|d| d.count())
    );

    // A folder of the user's keeps what it held, and only that.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "mine").unwrap();
    let out = run(&mine, "");
    assert_eq!(out.status.code(), Some(1));
    let left: Vec<_> = std::fs::read_dir(&mine)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["notes.txt"]);

    // --keep keeps the failed store, to look at.
    let out = run(&fresh, "--keep");
    assert_eq!(out.status.code(), Some(1));
    assert!(fresh.join("spillway").join("MANIFEST").exists());

    // A budget out of range is a usage error, found before anything is created.
    let out = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["bench", "--spillway-memory-mb", "0.5", "--dir"])
        .arg(dir.path().join("budget"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--spillway-memory-mb") && stderr.contains("memory_budget"),
        "{stderr}"
    );
    assert!(!dir.path().join("budget").exists());
}

/// `--cpu-hog N` runs the engines beside N busy threads and records N in the results.
#[test]
fn bench_runs_beside_cpu_hogs_and_records_them() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _, stderr, json) = bench(
        dir.path(),
        &[
            "--engines",
            "spillway",
            "--records",
            "5000",
            "--workloads",
            "load",
            "--batch",
            "1",
            "--cpu-hog",
            "2",
        ],
    );
    assert!(out.status.success(), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["config"]["cpu_hogs"], 2);
    // Both hogs ran: each spins a round before it first looks at its stop flag.
    let rounds = report["cpu_hog_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    assert!(
        rounds.iter().all(|r| r.as_u64().unwrap() >= 1),
        "{rounds:?}"
    );
    assert_eq!(report["config"]["batch"], 1);
    assert_eq!(report["engines"][0]["phases"][0]["ops"], 5000);
}

#[test]
fn bench_refuses_an_unknown_engine_and_reads_without_a_load() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_spillway"))
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["bench", "--engines", "mongo"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown engine"));
    let out = run(&["bench", "--engines", "spillway", "--workloads", "read"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("need `load`"));
}

/// A scan an engine refuses (a hashed store keeps no key order) is reported for that engine
/// under the table, the rest of the run is printed and written, and the exit status is 1.
#[test]
fn bench_reports_a_refused_scan_and_prints_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr, json) = bench(
        dir.path(),
        &[
            "--engines",
            "spillway-hashed",
            "--records",
            "2000",
            "--ops",
            "200",
            "--sync",
            "none",
            "--keys",
            "sequential",
            "--workloads",
            "load,scan-all,read",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("spillway-hashed scan-all failed: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("read "),
        "the read after the scan ran: {stdout}"
    );
    assert!(
        stderr.contains("spillway-hashed scan-all could not be completed"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.contains("\"keys\": \"sequential\""), "{text}");
}

/// The raw-log baselines only write: their load is measured beside the engines', every
/// workload that reads is reported as refused under the table for them, the engines' reads
/// run as usual, and the exit status is 1 (as for a refused scan).
#[test]
fn bench_runs_the_raw_baselines_and_reports_their_refused_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr, json) = bench(
        dir.path(),
        &[
            "--engines",
            "raw-append,spillway,raw-overwrite",
            "--records",
            "2000",
            "--ops",
            "200",
            "--sync",
            "batch",
            "--batch",
            "10",
            "--workloads",
            "load,read,counters",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for e in ["raw-append", "raw-overwrite"] {
        for w in ["read", "counters"] {
            assert!(
                stdout.contains(&format!("{e} {w} failed: {e} keeps no index")),
                "{e} {w}: {stdout}"
            );
        }
    }
    assert!(
        stderr.contains("raw-append read, raw-append counters, raw-overwrite read"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for (i, engine) in ["raw-append", "spillway", "raw-overwrite"]
        .iter()
        .enumerate()
    {
        let e = &report["engines"][i];
        assert_eq!(e["engine"], *engine);
        let load = &e["phases"][0];
        assert_eq!((&load["ops"], &load["writes"]), (&2000.into(), &200.into()));
        assert!(load["error"].is_null(), "{engine}: {load}");
        let read = &e["phases"][1];
        if *engine == "spillway" {
            assert_eq!((&read["found"], &read["ops"]), (&200.into(), &200.into()));
        } else {
            assert_eq!(read["ops"], 0, "{engine}: not run");
        }
    }
}

#[test]
fn bench_transfer_runs_spillway_in_a_child_and_checks_the_balances() {
    let dir = tempfile::tempdir().unwrap();
    let (out, stdout, stderr, json) = bench(
        dir.path(),
        &[
            "--workloads",
            "transfer",
            "--engines",
            "spillway",
            "--accounts",
            "1000",
            "--transfers",
            "200",
            "--threads",
            "2",
            "--distribution",
            "zipfian",
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("commits/s")
            && stdout.contains("abort rate")
            && stdout.contains("conserved"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let spillway = &report["engines"][0];
    assert_eq!(spillway["engine"], "spillway");
    assert_eq!(spillway["total"], 1000 * 1_000_000u64);
    assert_eq!(
        spillway["commits"].as_u64().unwrap() + spillway["skipped"].as_u64().unwrap(),
        200
    );
    assert!(!dir.path().join("stores").exists());
}

#[test]
fn bench_sessions_runs_spillway_in_a_child_and_charts_its_space() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("s.svg");
    let (out, stdout, stderr, json) = bench(
        dir.path(),
        &[
            "--workloads",
            "sessions",
            "--engines",
            "spillway",
            "--records",
            "2000",
            "--ttl-secs",
            "1",
            "--seconds",
            "2",
            "--sample-secs",
            "0.25",
            "--svg",
            svg.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("inserts/s") && stdout.contains("peak ÷ live"),
        "{stdout}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let spillway = &report["engines"][0];
    assert_eq!(spillway["engine"], "spillway");
    assert_eq!(spillway["space"], "disk");
    assert!(spillway["inserts"].as_u64().unwrap() > 0);
    assert!(spillway["samples"].as_array().unwrap().len() >= 3);
    assert_eq!(spillway["stale"], 0);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    assert!(!dir.path().join("stores").exists());
}
