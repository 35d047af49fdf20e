//! `load`, `read`, `get` and the rest end to end, as a user sees them: what a failed or
//! killed load leaves for `read`, a store in use, a store that is not there, sizes in the
//! unit typed, a missing key, the load report's tree.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_spillway");

fn spillway(args: &[&str], dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--path")
        .arg(dir)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `1234567` → `1,234,567`, as reports print numbers.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The number in a report row `  label  N`.
fn row(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{label}  ")))
        .unwrap_or_else(|| panic!("no row {label}: {report}"));
    line.trim_start()[label.len()..]
        .trim()
        .replace(',', "")
        .parse()
        .unwrap()
}

#[test]
fn a_failed_load_says_how_far_it_got_and_read_verifies_exactly_that() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // A file size limit (SIGXFSZ ignored, so writes past it fail with EFBIG) stops the load
    // once the log outgrows it, as a full disk would.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 256; exec '{BIN}' load --records 200000 --record-size 16 \
             --batch 100 --root-buffer-mb 4 --path '{}'",
            store.display()
        ))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let stopped = err
        .lines()
        .find_map(|l| l.strip_prefix("error: load stopped after "))
        .unwrap_or_else(|| panic!("{err}"));
    let acked: u64 = stopped
        .split(' ')
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(
        stopped.contains("of 2,000 batches were acknowledged"),
        "{err}"
    );
    assert!(acked > 0 && acked < 2000, "{err}");
    let records = acked * 100;
    assert!(
        err.contains(&format!(
            "LOADGEN now lists the first {} records",
            count(records)
        )),
        "{err}"
    );
    let loadgen = std::fs::read_to_string(store.join("LOADGEN")).unwrap();
    assert!(
        loadgen.contains(&format!("records={records}\n")) && loadgen.contains("state=stopped"),
        "{loadgen}"
    );

    // Every acknowledged record is read back, and no other is asked for.
    let out = spillway(&["read", "--ops", "5000"], &store);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert_eq!(row(&report, "found"), 5000, "{report}");
    assert!(report.contains("the load stopped early"), "{report}");
}

#[test]
fn read_says_a_store_is_in_use_and_that_a_killed_load_did_not_finish() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let mut load = Command::new(BIN)
        .args([
            "load",
            "--records",
            "100000000",
            "--record-size",
            "16",
            "--path",
        ])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !store.join("MANIFEST").exists() {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let out = spillway(&["read", "--ops", "10"], &store);
    let busy = text(&out.stderr);
    load.kill().unwrap();
    load.wait().unwrap();
    assert_eq!(out.status.code(), Some(1), "{busy}");
    assert!(
        busy.contains("in use by another process") && !busy.contains("run `spillway load`"),
        "{busy}"
    );

    let out = spillway(&["read", "--ops", "10"], &store);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not finish"), "{err}");
}

#[test]
fn commands_on_a_missing_store_speak_the_cli_s_language() {
    let dir = tempfile::tempdir().unwrap();
    let nothing = dir.path().join("nothing");
    for args in [
        &["get", "k"][..],
        &["del", "k"],
        &["stats"],
        &["read", "--ops", "1"],
        &["check"],
    ] {
        let out = spillway(args, &nothing);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("no store at") && err.contains("the folder does not exist"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("create_if_missing"), "{args:?}: {err}");
        assert!(!nothing.exists(), "{args:?} created the folder");
    }
}

#[test]
fn an_out_of_range_size_is_reported_in_mib() {
    let dir = tempfile::tempdir().unwrap();
    let out = spillway(
        &["put", "k", "v", "--root-buffer-mb", "999999999"],
        dir.path(),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--root-buffer-mb") && err.contains("999999999 MiB"),
        "{err}"
    );
    assert!(!err.contains(&(999_999_999u64 << 20).to_string()), "{err}");
}

#[test]
fn get_keeps_stdout_for_values() {
    let dir = tempfile::tempdir().unwrap();
    assert!(spillway(&["put", "k", "(not found)"], dir.path())
        .status
        .success());
    let out = spillway(&["get", "k"], dir.path());
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "(not found)\n".into())
    );

    let out = spillway(&["get", "absent"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "", "nothing on stdout for an absent key");
    assert!(text(&out.stderr).contains("not found"), "{out:?}");
}

#[test]
fn the_load_report_shows_the_tree_with_every_record() {
    let dir = tempfile::tempdir().unwrap();
    // Far less than a root buffer: without a flush, no record would be in the tree yet.
    let out = spillway(
        &["load", "--records", "5000", "--record-size", "16"],
        dir.path(),
    );
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    let lists = row(&report, "lists");
    assert!(lists > 0, "{report}");

    let out = spillway(&["stats"], dir.path());
    let stats = text(&out.stdout);
    assert!(out.status.success(), "{stats}");
    assert_eq!(row(&stats, "lists"), lists, "{stats}");
    assert_eq!(row(&stats, "files"), row(&report, "files"), "{stats}");
}

#[test]
fn read_commands_write_nothing_and_create_no_store() {
    let dir = tempfile::tempdir().unwrap();
    // An empty folder stays empty, and a foreign one gets no LOCK file.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    for folder in [&empty, &foreign] {
        for args in [
            &["get", "k"][..],
            &["stats"],
            &["read", "--ops", "10"],
            &["check"],
        ] {
            let out = spillway(args, folder);
            assert_eq!(
                out.status.code(),
                Some(1),
                "{args:?}: {}",
                text(&out.stderr)
            );
        }
    }
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&foreign).unwrap().count(), 1);

    // A store's folder is left byte for byte as it was by get, stats and check.
    let store = dir.path().join("store");
    assert!(spillway(&["put", "k", "v"], &store).status.success());
    let files = |d: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = files(&store);
    let got = spillway(&["get", "k"], &store);
    assert_eq!(text(&got.stdout), "v\n");
    assert!(spillway(&["stats"], &store).status.success());
    assert!(spillway(&["check"], &store).status.success());
    assert_eq!(files(&store), before);
}
