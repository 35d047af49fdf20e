//! `spillway del` of a range, a prefix or a whole keyspace, end to end through the real binary
//! and real stores: `--from`/`--to` (either end open), `--prefix`, `--all`, in the default
//! keyspace and a named one, over records on disk and in memory; what a hashed store refuses
//! and what it allows; the arguments clap and the command refuse; and each deletion found by
//! the next command (every command opens the store anew: the deletion is in its log).

use std::path::Path;
use std::process::{Command, Output};

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

/// Run `args` at `dir`, expecting success: stdout.
fn ok(args: &[&str], dir: &Path) -> String {
    let out = spillway(args, dir);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Run `args` at `dir`, expecting exit status `code` and an error: stderr.
fn fails_with(code: i32, args: &[&str], dir: &Path) -> String {
    let out = spillway(args, dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    err
}

/// The keys `scan ARGS` prints, in order.
fn keys(args: &[&str], dir: &Path) -> Vec<String> {
    let out = ok(&[&["scan"], args].concat(), dir);
    out.lines()
        .map(|l| l.split_once('\t').unwrap().0.to_string())
        .collect()
}

/// The key `load --sequential` gives record `i`, as `scan` prints it (see commands.rs).
fn seq_key(i: u64) -> String {
    let escaped = i.to_be_bytes().escape_ascii().to_string();
    escaped.replace("\\'", "'").replace("\\\"", "\"")
}

#[test]
fn ranges_prefixes_and_all_delete_what_scan_lists_and_no_more() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let names = [
        "a",
        "b",
        "b1",
        "b2",
        "c",
        "log:2026-10-31",
        "log:2026-11-01",
        "log:2026-11-02",
        "m",
        "y",
        "z",
    ];
    ok(&["put", names[0], "v", "--ordered"], d);
    for k in &names[1..] {
        ok(&["put", k, "v"], d);
    }
    // --from inclusive, --to exclusive: what scan --from --to lists.
    let listed = keys(&["--from", "b", "--to", "c"], d);
    assert_eq!(listed, ["b", "b1", "b2"]);
    assert_eq!(ok(&["del", "--from", "b", "--to", "c"], d), "");
    assert!(keys(&["--from", "b", "--to", "c"], d).is_empty());
    assert_eq!(keys(&[], d)[..2], ["a", "c"]);
    // A prefix.
    ok(&["del", "--prefix", "log:2026-11-"], d);
    assert_eq!(keys(&["--prefix", "log:"], d), ["log:2026-10-31"]);
    // Open ends: from the first key, and to the last.
    ok(&["del", "--to", "c"], d);
    ok(&["del", "--from", "y"], d);
    assert_eq!(keys(&[], d), ["c", "log:2026-10-31", "m"]);
    // A key written after a range delete is not covered by it.
    ok(&["put", "b1", "again"], d);
    assert_eq!(ok(&["get", "b1"], d), "again\n");
    // Every key.
    ok(&["del", "--all"], d);
    assert!(keys(&[], d).is_empty());
    let out = spillway(&["get", "m"], d);
    assert_eq!(out.status.code(), Some(1));
    ok(&["put", "after", "1"], d);
    assert_eq!(keys(&[], d), ["after"]);
}

#[test]
fn a_range_delete_covers_records_on_disk_and_in_memory_across_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 3000u64;
    // Small buffers and nodes: the records spread over several leaves.
    ok(
        &[
            "load",
            "--records",
            &n.to_string(),
            "--record-size",
            "16",
            "--ordered",
            "--sequential",
            "--root-buffer-mb",
            "0.01",
            "--node-mb",
            "0.02",
            "--fan-out",
            "4",
        ],
        d,
    );
    ok(&["put", &seq_key(1500), "in the log, not spilled"], d);
    ok(
        &["del", "--from", &seq_key(1000), "--to", &seq_key(2500)],
        d,
    );
    let left = keys(&[], d);
    let want: Vec<String> = (0..1000).chain(2500..n).map(seq_key).collect();
    assert_eq!(left, want);
    // Backwards too: the same keys.
    let back = keys(&["--reverse"], d);
    assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
    let err = text(&spillway(&["scan"], d).stderr);
    assert_eq!(err, "1,500 pairs\n");
}

#[test]
fn a_hashed_store_refuses_a_range_and_deletes_all_of_itself_or_of_a_keyspace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["put", "a", "1"], d);
    ok(&["put", "b", "2"], d);
    for args in [
        &["del", "--from", "a"][..],
        &["del", "--to", "b"],
        &["del", "--from", "a", "--to", "b"],
        &["del", "--prefix", "a"],
    ] {
        let err = fails_with(1, args, d);
        assert!(err.contains("need an ordered store"), "{args:?}: {err}");
        assert!(err.contains("`spillway del --all`"), "{args:?}: {err}");
    }
    assert_eq!(keys(&[], d).len(), 2, "nothing deleted");
    // An ordered keyspace in the hashed store: ranges there, the default keyspace untouched.
    ok(
        &["put", "--keyspace", "logs", "--ordered", "2026-01", "x"],
        d,
    );
    ok(&["put", "--keyspace", "logs", "2026-02", "x"], d);
    ok(&["put", "--keyspace", "logs", "2027-01", "x"], d);
    ok(&["del", "--keyspace", "logs", "--prefix", "2026-"], d);
    assert_eq!(keys(&["--keyspace", "logs"], d), ["2027-01"]);
    assert_eq!(ok(&["get", "a"], d), "1\n");
    // A hashed keyspace: its hint names the keyspace.
    ok(&["put", "--keyspace", "sessions", "s1", "x"], d);
    let err = fails_with(1, &["del", "--keyspace", "sessions", "--from", "s"], d);
    assert!(err.contains("need an ordered keyspace"), "{err}");
    assert!(
        err.contains("`spillway del --keyspace NAME --all`"),
        "{err}"
    );
    ok(&["del", "--keyspace", "sessions", "--all"], d);
    assert!(keys(&["--keyspace", "sessions"], d).is_empty());
    assert_eq!(
        keys(&["--keyspace", "logs"], d),
        ["2027-01"],
        "its own keyspace only"
    );
    // The default keyspace, whole.
    ok(&["del", "--all"], d);
    assert!(keys(&[], d).is_empty());
    assert_eq!(keys(&["--keyspace", "logs"], d), ["2027-01"]);
}

#[test]
fn del_refuses_what_would_be_a_mistake_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // No store: nothing to delete from, and none is created.
    let missing = d.join("missing");
    let err = fails_with(1, &["del", "--all"], &missing);
    assert!(!missing.exists(), "{err}");
    ok(&["put", "k", "v", "--ordered"], d);
    // Nothing to delete, or two things at once: usage errors (status 2).
    for args in [
        &["del"][..],
        &["del", "k", "--all"],
        &["del", "k", "--from", "a"],
        &["del", "--prefix", "p", "--to", "z"],
        &["del", "--all", "--from", "a"],
    ] {
        fails_with(2, args, d);
    }
    // An empty or inverted range: refused rather than done for nothing.
    let err = fails_with(2, &["del", "--from", "m", "--to", "m"], d);
    assert!(err.contains("--from m is not before --to m"), "{err}");
    fails_with(2, &["del", "--from", "z", "--to", "a"], d);
    // A keyspace that is not there: named, not created.
    let err = fails_with(1, &["del", "--keyspace", "nosuch", "--all"], d);
    assert!(err.contains("nosuch"), "{err}");
    let stats = ok(&["stats"], d);
    assert!(!stats.contains("nosuch"), "{stats}");
    assert_eq!(ok(&["get", "k"], d), "v\n", "nothing deleted");
    // Escapes are decoded as for a key: a range of binary keys.
    ok(&["put", r"\x00\x01", "bin"], d);
    ok(&["put", r"\x00\x02", "bin"], d);
    ok(&["del", "--from", r"\x00", "--to", r"\x00\x02"], d);
    assert_eq!(keys(&[], d), [r"\x00\x02", "k"]);
    // A prefix of 0xff bytes runs to the last key.
    ok(&["put", r"\xff\xff\x01", "x"], d);
    ok(&["del", "--prefix", r"\xff\xff"], d);
    assert_eq!(keys(&[], d), [r"\x00\x02", "k"]);
}

#[test]
fn del_range_takes_start_dot_dot_end_as_from_and_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["put", "a", "v", "--ordered"], d);
    for k in ["b", "b1", "b2", "c", "x..y", "x.z", "y", "z"] {
        ok(&["put", k, "v"], d);
    }
    ok(&["del", "--range", "b..c"], d);
    assert_eq!(keys(&[], d), ["a", "c", "x..y", "x.z", "y", "z"]);
    // Open ends.
    ok(&["del", "--range", "..c"], d);
    ok(&["del", "--range", "z.."], d);
    assert_eq!(keys(&[], d), ["c", "x..y", "x.z", "y"]);
    // Split at the first `..`: a START holding `..` or ending in `.` escapes those dots.
    ok(&["del", "--range", r"x\x2e\x2e..x.z"], d);
    assert_eq!(keys(&[], d), ["c", "x.z", "y"]);
    // Usage errors: no `..`, with --from, inverted, a bad escape.
    for args in [
        &["del", "--range", "bc"][..],
        &["del", "--range", "b..c", "--from", "a"],
        &["del", "--range", "b..c", "k"],
        &["del", "--range", "m..m"],
        &["del", "--range", "z..a"],
        &["del", "--range", r"\x0..a"],
    ] {
        fails_with(2, args, d);
    }
    // `..` alone is every key, as --all.
    ok(&["del", "--range", ".."], d);
    assert!(keys(&[], d).is_empty());
}
