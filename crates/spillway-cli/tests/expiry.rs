//! Expiry on the command line, end to end through the real binary and real stores: `put
//! --ttl`, `expire`, `persist` and `get --with-expiry`, in the default keyspace and a named
//! one, and the DURATIONs they refuse. The wall clock runs: a key given a short ttl is only
//! asserted gone after a sleep longer than its ttl; the rest uses ttls of an hour.

use std::path::Path;
use std::process::{Command, Output};
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

/// Run `args` at `dir`, expecting exit status `code`: stderr.
fn fails_with(code: i32, args: &[&str], dir: &Path) -> String {
    let out = spillway(args, dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    err
}

/// `get ARGS` of an absent key: status 1, nothing on stdout.
fn not_found(args: &[&str], dir: &Path) {
    let out = spillway(args, dir);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    assert_eq!(text(&out.stderr), "(not found)\n", "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

/// `get --with-expiry` of a key holding `value` that expires: the seconds it has left, from
/// `expires YYYY-MM-DDTHH:MM:SS.mmmZ (in S.mmms)`.
fn seconds_left(args: &[&str], dir: &Path, value: &str) -> f64 {
    let args = [&["get", "--with-expiry"], args].concat();
    let out = ok(&args, dir);
    let (got, line) = out.split_once('\n').unwrap();
    assert_eq!(got, value, "{out}");
    let rest = line
        .strip_prefix("expires ")
        .unwrap_or_else(|| panic!("{out}"));
    let (time, left) = rest.split_once(" (in ").unwrap();
    // An RFC 3339 time in UTC, to the millisecond.
    let shape: String = time
        .chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect();
    assert_eq!(shape, "0000-00-00T00:00:00.000Z", "{out}");
    assert!(left.ends_with("s)\n"), "{out}");
    left.trim_end_matches("s)\n").parse().unwrap()
}

fn no_expiry(args: &[&str], dir: &Path, value: &str) {
    let args = [&["get", "--with-expiry"], args].concat();
    assert_eq!(ok(&args, dir), format!("{value}\nno expiry\n"));
}

#[test]
fn put_with_a_ttl_is_gone_once_it_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "short", "v", "--ttl", "300ms"], &store);
    ok(&["put", "long", "kept", "--ttl", "1h"], &store);
    ok(&["put", "forever", "v"], &store);
    std::thread::sleep(Duration::from_millis(500));
    not_found(&["get", "short"], &store);
    // Gone for scans too (a hashed store's: in hash order).
    let mut lines: Vec<_> = ok(&["scan"], &store).lines().map(String::from).collect();
    lines.sort();
    assert_eq!(lines, ["forever\tv", "long\tkept"]);

    let left = seconds_left(&["long"], &store, "kept");
    assert!(left > 0.0 && left <= 3600.0, "{left}");
    assert_eq!(ok(&["get", "long"], &store), "kept\n"); // no line without the flag
    no_expiry(&["forever"], &store, "v");
    // A put without --ttl clears the expiry; one with it sets it.
    ok(&["put", "long", "kept"], &store);
    no_expiry(&["long"], &store, "kept");
    ok(&["put", "forever", "v", "--ttl", "90"], &store);
    let left = seconds_left(&["forever"], &store, "v");
    assert!(left > 0.0 && left <= 90.0, "{left}");
}

#[test]
fn expire_sets_a_live_key_s_time_and_leaves_an_absent_key_absent() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "k", "v"], &store);
    ok(&["put", "soon", "v"], &store);
    ok(&["expire", "k", "2h"], &store);
    let left = seconds_left(&["k"], &store, "v");
    assert!(left > 3600.0 && left <= 7200.0, "{left}");
    ok(&["expire", "k", "1.5h"], &store); // a later expire replaces it
    let left = seconds_left(&["k"], &store, "v");
    assert!(left > 0.0 && left <= 5400.0, "{left}");

    ok(&["expire", "soon", "300ms"], &store);
    std::thread::sleep(Duration::from_millis(500));
    not_found(&["get", "soon"], &store);
    // On an absent or expired key: nothing, and not an error (as del).
    ok(&["expire", "soon", "1h"], &store);
    ok(&["expire", "never-there", "1h"], &store);
    not_found(&["get", "soon"], &store);
    not_found(&["get", "never-there"], &store);
    ok(&["put", "never-there", "now-here"], &store);
    no_expiry(&["never-there"], &store, "now-here");

    // expire never creates a store.
    let missing = dir.path().join("missing");
    let err = fails_with(1, &["expire", "k", "1h"], &missing);
    assert!(err.contains("no store at"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn persist_takes_an_expiry_away() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "k", "v", "--ttl", "1h"], &store);
    assert!(seconds_left(&["k"], &store, "v") > 0.0);
    ok(&["persist", "k"], &store);
    no_expiry(&["k"], &store, "v");
    ok(&["persist", "k"], &store); // again: still there, still no expiry
    no_expiry(&["k"], &store, "v");
    ok(&["persist", "absent"], &store);
    not_found(&["get", "absent"], &store);

    // An expired key stays gone.
    ok(&["put", "gone", "v", "--ttl", "200ms"], &store);
    std::thread::sleep(Duration::from_millis(400));
    ok(&["persist", "gone"], &store);
    not_found(&["get", "gone"], &store);
}

#[test]
fn expiry_commands_work_in_a_keyspace_apart_from_the_default_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(
        &["put", "--keyspace", "sessions", "k", "s", "--ttl", "1h"],
        &store,
    );
    ok(&["put", "k", "d"], &store);
    assert!(seconds_left(&["--keyspace", "sessions", "k"], &store, "s") > 0.0);
    no_expiry(&["k"], &store, "d");
    ok(&["expire", "--keyspace", "sessions", "k", "200ms"], &store);
    ok(&["expire", "k", "1h"], &store);
    ok(&["persist", "k"], &store);
    std::thread::sleep(Duration::from_millis(400));
    not_found(&["get", "--keyspace", "sessions", "k"], &store);
    no_expiry(&["k"], &store, "d");
    // expire and persist never create a keyspace.
    for args in [
        &["expire", "--keyspace", "nope", "k", "1h"][..],
        &["persist", "--keyspace", "nope", "k"],
    ] {
        let err = fails_with(1, args, &store);
        assert!(err.contains("no keyspace `nope`"), "{err}");
    }
}

#[test]
fn durations_and_flags_that_do_not_fit_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for bad in ["0", "0s", "5x", "1h30m", "0.5ms", ""] {
        let err = fails_with(2, &["put", "k", "v", "--ttl", bad], &store);
        assert!(err.contains("--ttl <DURATION>"), "{bad}: {err}");
        fails_with(2, &["expire", "k", bad], &store);
    }
    // Taken for a flag, and refused as one.
    fails_with(2, &["put", "k", "v", "--ttl", "-1s"], &store);
    fails_with(2, &["expire", "k", "-1s"], &store);
    assert!(!store.exists(), "a refused command creates no store");
    ok(&["put", "k", "v"], &store);
    let err = fails_with(2, &["get", "--raw", "--with-expiry", "k"], &store);
    assert!(err.contains("cannot be used with"), "{err}");
    fails_with(2, &["expire", "k"], &store);
    no_expiry(&["k"], &store, "v");
}
