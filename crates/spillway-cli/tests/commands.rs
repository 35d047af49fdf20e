//! `load`, `read`, `get`, `scan` and the rest end to end, as a user sees them: what a failed
//! or killed load leaves for `read`, a store in use, a store that is not there, sizes in the
//! unit typed, a missing key, the load report's tree, range scans of an ordered store and
//! what a hashed one allows.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use spillway_bench::workload::Workload;

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
        &["scan"],
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
            &["scan"],
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
    assert_eq!(text(&spillway(&["scan"], &store).stdout), "k\tv\n");
    assert!(spillway(&["check"], &store).status.success());
    assert_eq!(files(&store), before);
}

/// The key `load --sequential` gives record `i`, as `scan` prints it: Rust's `escape_ascii`
/// of its 8 big-endian bytes, quotes left unescaped.
fn seq_key(i: u64) -> String {
    let escaped = i.to_be_bytes().escape_ascii().to_string();
    escaped.replace("\\'", "'").replace("\\\"", "\"")
}

/// The bytes a printed key or value stands for: `\\`, `\t`, `\n`, `\r`, `\xHH`, or itself.
fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.extend_from_slice(c.to_string().as_bytes());
            continue;
        }
        match chars.next().unwrap() {
            '\\' => out.push(b'\\'),
            't' => out.push(b'\t'),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).unwrap());
            }
            other => panic!("unknown escape \\{other} in {s}"),
        }
    }
    out
}

/// Run `scan` with `args`: its stdout lines, split at their one tab, and its stderr.
fn scan(args: &[&str], dir: &Path) -> (Vec<(String, String)>, String) {
    let mut all = vec!["scan"];
    all.extend_from_slice(args);
    let out = spillway(&all, dir);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    let pairs = text(&out.stdout)
        .lines()
        .map(|l| {
            let (k, v) = l
                .split_once('\t')
                .unwrap_or_else(|| panic!("no tab: {l:?}"));
            assert!(!v.contains('\t'), "{l:?}");
            (k.to_string(), v.to_string())
        })
        .collect();
    (pairs, err)
}

/// Check that `pairs` are records `want` of a sequential load (seed 0), keys exactly as
/// printed and values byte for byte.
fn assert_records(pairs: &[(String, String)], want: impl IntoIterator<Item = u64>, size: usize) {
    let workload = Workload::new(0, size).unwrap();
    let want: Vec<u64> = want.into_iter().collect();
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    let want_keys: Vec<String> = want.iter().map(|&i| seq_key(i)).collect();
    assert_eq!(keys, want_keys);
    for ((_, v), &i) in pairs.iter().zip(&want) {
        assert_eq!(unescape(v), workload.value(i), "record {i}: {v}");
    }
}

#[test]
fn scan_an_ordered_sequential_load_by_range_prefix_limit_and_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let n = 3000u64;
    // Small buffers and nodes: the records spread over several leaves, so scans cross them.
    let out = spillway(
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
        dir.path(),
    );
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(row(&report, "leaves") > 1, "{report}");
    assert!(
        report.contains("key order") && report.contains("ordered"),
        "{report}"
    );
    let loadgen = std::fs::read_to_string(dir.path().join("LOADGEN")).unwrap();
    assert!(loadgen.contains("keys=sequential\n"), "{loadgen}");
    let stats = text(&spillway(&["stats"], dir.path()).stdout);
    assert!(
        stats
            .lines()
            .any(|l| l.trim_start().starts_with("key order") && l.contains(" ordered (")),
        "{stats}"
    );

    // Everything, in key order, then the other way.
    let (all, err) = scan(&[], dir.path());
    assert_records(&all, 0..n, 16);
    assert_eq!(err, "3,000 pairs\n");
    let (back, _) = scan(&["--reverse"], dir.path());
    assert_records(&back, (0..n).rev(), 16);

    // --from inclusive, --to exclusive; typed as printed.
    let (pairs, err) = scan(&["--from", &seq_key(5), "--to", &seq_key(8)], dir.path());
    assert_records(&pairs, 5..8, 16);
    assert_eq!(pairs[0].0, r"\x00\x00\x00\x00\x00\x00\x00\x05");
    assert_eq!(err, "3 pairs\n");
    let (pairs, _) = scan(
        &["--from", &seq_key(5), "--to", &seq_key(8), "--reverse"],
        dir.path(),
    );
    assert_records(&pairs, [7, 6, 5], 16);
    let (pairs, _) = scan(&["--from", &seq_key(2990)], dir.path());
    assert_records(&pairs, 2990..n, 16);
    let (pairs, _) = scan(&["--to", &seq_key(3)], dir.path());
    assert_records(&pairs, 0..3, 16);
    // A bound between keys (9 bytes sort after 8), and an inverted range.
    let (pairs, _) = scan(
        &[
            "--from",
            &format!("{}\\x00", seq_key(99)),
            "--to",
            &seq_key(102),
        ],
        dir.path(),
    );
    assert_records(&pairs, 100..102, 16);
    let (pairs, err) = scan(&["--from", &seq_key(8), "--to", &seq_key(5)], dir.path());
    assert!(pairs.is_empty());
    assert_eq!(err, "0 pairs\n");

    // --limit, from either end.
    let (pairs, err) = scan(&["--limit", "3"], dir.path());
    assert_records(&pairs, 0..3, 16);
    assert_eq!(err, "3 pairs (--limit 3 reached)\n");
    let (pairs, _) = scan(
        &["--limit", "2", "--reverse", "--from", &seq_key(1000)],
        dir.path(),
    );
    assert_records(&pairs, [n - 1, n - 2], 16);
    let (pairs, err) = scan(&["--limit", "10", "--from", &seq_key(2995)], dir.path());
    assert_records(&pairs, 2995..n, 16);
    assert_eq!(err, "5 pairs\n");

    // --prefix: the 7 leading bytes of keys 256..512.
    let p = r"\x00\x00\x00\x00\x00\x00\x01";
    let (pairs, err) = scan(&["--prefix", p], dir.path());
    assert_records(&pairs, 256..512, 16);
    assert_eq!(err, "256 pairs\n");
    let (pairs, _) = scan(&["--prefix", p, "--reverse", "--limit", "2"], dir.path());
    assert_records(&pairs, [511, 510], 16);

    // --prefix with --from is a usage error; so is a bad escape.
    let out = spillway(&["scan", "--prefix", "a", "--from", "b"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = spillway(&["scan", "--from", r"\x0"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("two hex digits"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn scan_prints_text_as_text_and_escapes_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    for (k, v) in [
        ("banana", "yellow"),
        ("apple", "red\tgreen"),
        ("cherry", "dark\\red"),
        ("日本", "東京"),
        ("bell", "\u{7}"),
    ] {
        let out = spillway(&["put", "--ordered", k, v], dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = spillway(&["scan"], dir.path());
    assert_eq!(
        text(&out.stdout),
        "apple\tred\\tgreen\nbanana\tyellow\nbell\t\\x07\ncherry\tdark\\\\red\n日本\t東京\n"
    );
    let out = spillway(&["scan", "--prefix", "b", "--reverse"], dir.path());
    assert_eq!(text(&out.stdout), "bell\t\\x07\nbanana\tyellow\n");
    let out = spillway(&["scan", "--from", "b", "--to", "c"], dir.path());
    assert_eq!(text(&out.stdout), "banana\tyellow\nbell\t\\x07\n");
    assert_eq!(text(&out.stderr), "2 pairs\n");
}

#[test]
fn read_finds_every_key_of_a_sequential_load_and_old_loadgen_files_mean_random() {
    let dir = tempfile::tempdir().unwrap();
    let seq = dir.path().join("seq");
    let load = |store: &Path, extra: &[&str]| {
        let mut args = vec![
            "load",
            "--records",
            "2000",
            "--record-size",
            "24",
            "--seed",
            "7",
        ];
        args.extend_from_slice(extra);
        let out = spillway(&args, store);
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    load(&seq, &["--sequential", "--ordered"]);
    let out = spillway(&["read", "--ops", "3000"], &seq);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert_eq!(row(&report, "found"), 3000, "{report}");
    // The keys are the record numbers whatever the seed; the seed makes the values.
    let (pairs, _) = scan(&["--limit", "2", "--reverse"], &seq);
    assert_eq!(pairs[0].0, seq_key(1999));
    let workload = Workload::new(7, 24).unwrap();
    assert_eq!(unescape(&pairs[1].1), workload.value(1998));
    assert_ne!(
        workload.value(1998),
        Workload::new(0, 24).unwrap().value(1998)
    );

    // A LOADGEN without `keys=` was written by a random load.
    let random = dir.path().join("random");
    load(&random, &[]);
    let path = random.join("LOADGEN");
    let loadgen = std::fs::read_to_string(&path).unwrap();
    assert!(loadgen.contains("keys=random\n"), "{loadgen}");
    std::fs::write(&path, loadgen.replace("keys=random\n", "")).unwrap();
    let out = spillway(&["read", "--ops", "1000"], &random);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert_eq!(row(&report, "found"), 1000, "{report}");

    // Told the keys were sequential, read misses them: the field is what read goes by.
    std::fs::write(&path, loadgen.replace("keys=random", "keys=sequential")).unwrap();
    let out = spillway(&["read", "--ops", "100"], &random);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert_eq!(row(&report, "found"), 0, "{report}");
    assert!(row(&report, "missing") >= 90, "{report}");
}

#[test]
fn a_hashed_store_scans_whole_in_hash_order_and_refuses_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let n = 500;
    let out = spillway(
        &[
            "load",
            "--records",
            "500",
            "--record-size",
            "12",
            "--sequential",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stats = text(&spillway(&["stats"], dir.path()).stdout);
    assert!(stats.contains(" hashed ("), "{stats}");

    let (pairs, err) = scan(&[], dir.path());
    assert_eq!(err, "(hashed store: keys in hash order)\n500 pairs\n");
    let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    let in_hash_order = keys.clone();
    keys.sort_by_key(|k| unescape(k));
    assert_ne!(keys, in_hash_order, "keys came out in key order");
    let want: Vec<String> = (0..n).map(seq_key).collect();
    assert_eq!(keys, want);
    let (back, _) = scan(&["--reverse", "--limit", "3"], dir.path());
    let back: Vec<&str> = back.iter().map(|(k, _)| k.as_str()).collect();
    let last: Vec<&str> = in_hash_order.iter().rev().take(3).copied().collect();
    assert_eq!(back, last);

    for args in [
        &["scan", "--prefix", "a"][..],
        &["scan", "--from", "a"],
        &["scan", "--to", "a"],
    ] {
        let out = spillway(args, dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert!(
            err.starts_with("error: --from, --to and --prefix need an ordered store"),
            "{err}"
        );
        assert!(err.contains("is hashed"), "{err}");
        assert!(err.contains("`spillway load --ordered`"), "{err}");
        assert!(
            !err.contains("Options::") && !err.contains("iter()"),
            "{err}"
        );
    }
}

#[test]
fn writers_adopt_an_ordered_store_and_refuse_ordered_for_a_hashed_one() {
    let dir = tempfile::tempdir().unwrap();
    let ordered = dir.path().join("ordered");
    assert!(spillway(&["put", "--ordered", "b", "2"], &ordered)
        .status
        .success());
    // No --ordered: the store's own order is used, and it stays ordered.
    for args in [&["put", "a", "1"][..], &["put", "c", "3"], &["del", "c"]] {
        let out = spillway(args, &ordered);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let out = spillway(
        &[
            "load",
            "--records",
            "10",
            "--record-size",
            "9",
            "--sequential",
        ],
        &ordered,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = spillway(&["scan", "--from", "a"], &ordered);
    assert_eq!(text(&out.stdout), "a\t1\nb\t2\n");
    let (pairs, _) = scan(&["--to", "a"], &ordered);
    assert_records(&pairs, 0..10, 9);

    let hashed = dir.path().join("hashed");
    assert!(spillway(&["put", "k", "v"], &hashed).status.success());
    for args in [
        &["put", "--ordered", "x", "1"][..],
        &["del", "--ordered", "k"],
        &["load", "--ordered", "--records", "10", "--record-size", "9"],
    ] {
        let out = spillway(args, &hashed);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "error: {} is a hashed store, not ordered",
                hashed.display()
            )),
            "{err}"
        );
        assert!(
            err.contains("--ordered only chooses the key order of a new store"),
            "{err}"
        );
    }
    // Nothing was written: x is absent, k still there, and no load was recorded.
    assert_eq!(spillway(&["get", "x"], &hashed).status.code(), Some(1));
    assert_eq!(text(&spillway(&["get", "k"], &hashed).stdout), "v\n");
    assert!(!hashed.join("LOADGEN").exists());
}

#[test]
fn scan_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let out = spillway(
        &[
            "load",
            "--records",
            "40000",
            "--record-size",
            "40",
            "--ordered",
            "--sequential",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // About 3 MB of output: far more than a pipe holds, so the scan is still writing when
    // the reader goes, as with `| head -1`.
    let mut child = Command::new(BIN)
        .args(["scan", "--path"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with(&format!("{}\t", seq_key(0))), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("error") && !err.contains("pairs"), "{err}");
}
