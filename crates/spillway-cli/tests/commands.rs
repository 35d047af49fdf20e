//! `load`, `read`, `get`, `scan` and the rest end to end, as a user sees them: what a failed
//! or killed load leaves for `read`, a store in use, a store that is not there, sizes in the
//! unit typed, a missing key, the load report's tree, range scans of an ordered store and
//! what a hashed one allows; merges (counters, lists, max, min), stores that record a merge
//! operator, and counter loads that `read` checks; keyspaces (`--keyspace`), apart from the
//! default one and from each other, each with the order and operator it was created with.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
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
    assert_eq!(out.status.code(), Some(2), "{err}");
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

/// Run `spillway ARGS --path DIR` with raw argument bytes and `stdin`.
fn spillway_bytes(args: &[&[u8]], stdin: &[u8], dir: &Path) -> Output {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    let mut child = Command::new(BIN)
        .args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
        .arg("--path")
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

#[test]
fn keys_and_values_are_bytes_and_read_back_as_scan_prints_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let run = |args: &[&[u8]], stdin: &[u8]| {
        let out = spillway_bytes(args, stdin, &store);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        out.stdout
    };
    // Raw bytes that are not UTF-8, as `$'\xff\xfe'` passes them.
    run(&[b"put", b"\xff\xfe-raw", b"v1"], b"");
    run(&[b"put", &[0xff, 0xfe], &[0x80, b'v']], b"");
    assert_eq!(run(&[b"get", b"--raw", &[0xff, 0xfe]], b""), [0x80, b'v']);
    // The escaped form scan prints names the same key.
    let scanned = run(&[b"scan"], b"");
    let line = text(&scanned)
        .lines()
        .find(|l| l.starts_with("\\xff\\xfe-"))
        .map(str::to_owned);
    assert_eq!(
        line.as_deref(),
        Some("\\xff\\xfe-raw\tv1"),
        "{}",
        text(&scanned)
    );
    assert!(
        text(&scanned).contains("\\xff\\xfe\t\\x80v\n"),
        "{}",
        text(&scanned)
    );
    assert_eq!(run(&[b"get", b"\\xff\\xfe"], b""), b"\x80v\n");
    assert_eq!(run(&[b"get", b"\\xff\\xfe-raw"], b""), b"v1\n");
    run(&[b"del", b"\\xFF\\xFE"], b"");
    assert_eq!(
        spillway_bytes(&[b"get", &[0xff, 0xfe]], b"", &store)
            .status
            .code(),
        Some(1)
    );

    // Every key a random load wrote, typed back as scan prints it.
    ok(&["load", "--records", "200", "--record-size", "24"], &store);
    let scanned = text(&run(&[b"scan"], b""));
    let mut binary = 0;
    for line in scanned.lines() {
        let (key, value) = line.split_once('\t').unwrap();
        binary += usize::from(key.contains("\\x"));
        assert_eq!(
            run(&[b"get", b"--raw", key.as_bytes()], b""),
            unescape(value),
            "{key}"
        );
    }
    assert!(binary > 100, "{scanned}");

    // Values from stdin and from files, byte for byte; `get --raw` gives them back exactly.
    let odd: Vec<u8> = b"a\\b\n\0-\xff\t\r\n".to_vec();
    run(&[b"put", b"stdin", b"-"], &odd);
    assert_eq!(run(&[b"get", b"--raw", b"stdin"], b""), odd);
    run(&[b"put", b"stdin2", b"--value-file", b"-"], &odd);
    assert_eq!(run(&[b"get", b"--raw", b"stdin2"], b""), odd);
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let file = dir.path().join("big");
    std::fs::write(&file, &big).unwrap();
    let path = file.as_os_str().as_encoded_bytes();
    run(&[b"put", b"big", b"--value-file", path], b"");
    assert_eq!(run(&[b"get", b"--raw", b"big"], b""), big);
    assert_eq!(run(&[b"get", b"big"], b""), [&big[..], b"\n"].concat());
    // A dash of its own is typed as an escape.
    run(&[b"put", b"dash", b"\\x2d"], b"");
    assert_eq!(run(&[b"get", b"--raw", b"dash"], b""), b"-");
    // Operands too.
    run(&[b"put", b"list", b"\\x00"], b"");
    run(
        &[b"merge", b"--op", b"append", b"list", b"-"],
        &[0xfe, b'\n'],
    );
    run(
        &[
            b"merge",
            b"--op",
            b"append",
            b"list",
            b"--operand-file",
            path,
        ],
        b"",
    );
    let list = run(&[b"get", b"--raw", b"list"], b"");
    assert_eq!(list, [&[0, 0xfe, b'\n'][..], &big].concat());

    // A backslash that is not an escape is a usage error; so is VALUE with its file.
    let before = run(&[b"scan"], b"");
    for args in [
        &[&b"put"[..], b"a\\q", b"v"][..],
        &[b"put", b"k", b"v\\"],
        &[b"get", b"\\x4"],
        &[b"put", b"k", b"v", b"--value-file", path],
        &[b"put", b"k"],
    ] {
        let out = spillway_bytes(args, b"", &store);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // A value larger than a store takes is refused before it is read whole.
    let huge = dir.path().join("huge");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(spillway::MAX_VALUE_LEN as u64 + 1).unwrap();
    let huge = huge.as_os_str().as_encoded_bytes();
    let out = spillway_bytes(&[b"put", b"h", b"--value-file", huge], b"", &store);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("larger than the largest value"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(run(&[b"scan"], b""), before);
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

/// The rows of section `title` of a report (up to the next blank line).
fn section<'a>(report: &'a str, title: &str) -> Vec<&'a str> {
    report
        .lines()
        .skip_while(|l| *l != title && !l.starts_with(&format!("{title} ")))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The text of row `label` in section `title`.
fn field(report: &str, title: &str, label: &str) -> String {
    section(report, title)
        .iter()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{label}  ")))
        .unwrap_or_else(|| panic!("no {label} in {title}: {report}"))
        .trim()
        .to_string()
}

#[test]
fn stats_counts_the_keys_still_in_the_buffer_and_estimates_many() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for k in ["a", "b", "c", "d", "e"] {
        ok(&["put", k, "v"], &store);
    }
    ok(&["del", "e"], &store);
    let stats = ok(&["stats"], &store);
    assert_eq!(field(&stats, "Data", "keys"), "4 (counted)", "{stats}");
    assert!(
        field(&stats, "Data", "live bytes on disk (estimated)").contains("nothing spilled yet"),
        "{stats}"
    );
    // A key whose operands do not fold is still one of its keys.
    ok(&["merge", "--op", "add", "a", "1"], &store);
    assert_eq!(
        field(&ok(&["stats"], &store), "Data", "keys"),
        "4 (counted)"
    );

    let many = dir.path().join("many");
    let report = ok(
        &[
            "load",
            "--records",
            "120000",
            "--record-size",
            "16",
            "--sync",
            "none",
        ],
        &many,
    );
    for report in [report, ok(&["stats"], &many)] {
        let keys = field(&report, "Data", "keys");
        let (n, how) = keys.split_once(' ').unwrap();
        let n: u64 = n.replace(',', "").parse().unwrap();
        assert!(how.starts_with("(estimated"), "{report}");
        assert!((114_000..=126_000).contains(&n), "{report}");
    }
}

#[test]
fn reports_show_selector_reads_only_under_a_budget_and_disk_figures_under_data() {
    let dir = tempfile::tempdir().unwrap();
    ok(
        &["load", "--records", "2000", "--record-size", "16"],
        dir.path(),
    );
    let report = ok(&["read", "--ops", "100"], dir.path());
    assert!(!report.contains("selector blocks"), "{report}");
    let report = ok(&["read", "--ops", "100", "--memory-mb", "64"], dir.path());
    assert!(
        field(
            &report,
            "Reads (since open)",
            "selector blocks read per GET"
        )
        .starts_with("0.000"),
        "{report}"
    );
    let stats = ok(&["stats"], dir.path());
    assert!(!stats.contains("selector blocks"), "{stats}");
    let per_record = field(&stats, "Data", "memory per record on disk");
    assert!(
        per_record.ends_with(" B (filters, indexes, sketches, selectors)"),
        "{stats}"
    );
    let memory = section(&stats, "Memory").join("\n");
    assert!(!memory.contains("per record"), "{stats}");
    let load = ok(
        &["load", "--records", "10", "--record-size", "16"],
        dir.path(),
    );
    assert_eq!(field(&load, "Data", "keys"), "2,000 (counted)", "{load}");
    assert!(
        !section(&load, "Memory").join("\n").contains("per record"),
        "{load}"
    );
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
        // A backslash of the value's own is typed as scan prints it.
        ("cherry", "dark\\\\red"),
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
fn scan_reports_a_key_whose_operands_do_not_fold_and_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "--ordered", "a", "1"], &store);
    ok(&["put", "k", "text"], &store);
    // Both accepted: a merge does not read the value it will fold into.
    ok(&["merge", "--op", "add", "k", "1"], &store);
    ok(&["merge", "--op", "add", "z", "5"], &store);
    ok(&["merge", "--op", "add", "\\xff", "7"], &store);
    ok(&["put", "\\xff\\x00", "tail"], &store);
    ok(&["merge", "--op", "add", "\\xff\\x00", "1"], &store);
    for (args, stdout, count, skipped) in [
        (
            &[][..],
            "a\t1\nz\t5\n\\xff\t7\n",
            "3 pairs",
            &["k", "\\xff\\x00"][..],
        ),
        (
            &["--reverse"],
            "\\xff\t7\nz\t5\na\t1\n",
            "3 pairs",
            &["\\xff\\x00", "k"],
        ),
        (
            &["--limit", "2"],
            "a\t1\nz\t5\n",
            "2 pairs (--limit 2 reached)",
            &["k"],
        ),
        (
            &["--from", "l"],
            "z\t5\n\\xff\t7\n",
            "2 pairs",
            &["\\xff\\x00"],
        ),
    ] {
        let out = spillway(&[&["scan"], args].concat(), &store);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(text(&out.stdout), stdout, "{args:?}: {err}");
        let reported: Vec<&str> = err
            .lines()
            .filter_map(|l| l.strip_prefix("error: skipped "))
            .map(|l| {
                assert!(
                    l.contains(": merge operator spillway.u64add failed on key"),
                    "{l}"
                );
                l.split_once(": ").unwrap().0
            })
            .collect();
        assert_eq!(reported, skipped, "{args:?}: {err}");
        assert!(err.contains(&format!("\n{count}\n")), "{args:?}: {err}");
        let n = skipped.len();
        assert!(err.contains(&format!("error: {n} key")), "{err}");
        assert!(
            err.contains("skipped (see above); the scan listed the rest"),
            "{err}"
        );
    }
    // Fixed by a put, the key lists again, and the scan succeeds.
    ok(&["put", "k", "12345678"], &store);
    ok(&["del", "\\xff\\x00"], &store);
    let (pairs, err) = scan(&["--prefix", "k"], &store);
    assert_eq!(pairs.len(), 1, "{err}");
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

/// Run `args` at `dir`, expecting status 1 (a runtime error): stderr.
fn fails(args: &[&str], dir: &Path) -> String {
    fails_with(1, args, dir)
}

/// Run `args` at `dir`, expecting status 2 (a usage error): stderr.
fn usage(args: &[&str], dir: &Path) -> String {
    fails_with(2, args, dir)
}

fn fails_with(code: i32, args: &[&str], dir: &Path) -> String {
    let out = spillway(args, dir);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    err
}

#[test]
fn counted_flags_say_the_range_they_take() {
    let dir = tempfile::tempdir().unwrap();
    let load = ["load", "--records", "10", "--record-size", "16"];
    for (flag, value, says) in [
        ("--batch", "0", "must be at least 1"),
        ("--distinct", "0", "must be at least 1"),
        ("--threads", "0", "must be from 1 to 256"),
        ("--threads", "257", "must be from 1 to 256"),
        ("--batch", "x", "must be a whole number"),
    ] {
        let mut args = load.to_vec();
        args.extend([flag, value]);
        let err = text(&spillway(&args, dir.path()).stderr);
        assert!(err.contains(says), "{flag} {value}: {err}");
        assert!(!err.contains(&u64::MAX.to_string()), "{err}");
    }
    for (flag, value, says) in [
        ("--batch", "0", "must be at least 1"),
        ("--threads", "0", "must be from 1 to 256"),
        ("--readers", "65", "must be at most 64"),
        ("--cpu-hog", "65", "must be at most 64"),
    ] {
        let out = Command::new(BIN)
            .args(["bench", flag, value])
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{flag} {value}: {err}");
    }
}

#[test]
fn usage_errors_exit_2_and_runtime_errors_1() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // Refused by clap, by the CLI, and by the engine's option checks: all usage errors.
    for args in [
        &["load", "--record-size", "16"][..],
        &["load", "--records", "10"],
        &["load", "--records", "10", "--record-size", "4"],
        &[
            "load",
            "--records",
            "10",
            "--record-size",
            "20",
            "--distinct",
            "3",
        ],
        &[
            "load",
            "--records",
            "10000000",
            "--record-size",
            "16",
            "--batch",
            "10000000",
        ],
        &["put", "k", "v", "--fan-out", "1"],
        &["put", "k", "v", "--memory-mb", "1"],
        &["get", "k", "--filter-bits", "99"],
        &["merge", "--op", "add", "k", "abc"],
        &["merge", "--op", "max", "--separator", ",", "k", "v"],
        &["scan", "--from", "\\q"],
    ] {
        usage(args, &store);
    }
    assert!(!store.exists(), "a refused command created the store");
    let out = Command::new(BIN)
        .args(["bench", "--engines", "mongo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // A sound command line that fails at its work: runtime errors.
    fails(&["get", "k"], &store);
    ok(&["put", "k", "v"], &store);
    assert_eq!(spillway(&["get", "absent"], &store).status.code(), Some(1));
    fails(&["read", "--ops", "1"], &store);
    ok(&["merge", "--op", "add", "n", "1"], &store);
    fails(&["merge", "--op", "max", "n", "1"], &store);
    ok(&["load", "--records", "10", "--record-size", "16"], &store);
    fails(&["check"], &dir.path().join("nothing"));
}

#[test]
fn merge_add_append_max_and_min_round_trip_through_get() {
    let dir = tempfile::tempdir().unwrap();
    let store = |name: &str| dir.path().join(name);

    // Counters: created by the first merge, and printed as numbers.
    ok(&["merge", "--op", "add", "visits", "5"], &store("add"));
    ok(&["merge", "--op", "add", "visits", "37"], &store("add"));
    ok(&["merge", "--op", "add", "new", "0"], &store("add"));
    assert_eq!(ok(&["get", "visits"], &store("add")), "42\n");
    assert_eq!(ok(&["get", "new"], &store("add")), "0\n");
    let raw = spillway(&["get", "--raw", "visits"], &store("add"));
    assert_eq!(raw.stdout, 42u64.to_le_bytes());

    // Lists, without and with a separator (typed with scan's escapes).
    for word in ["a", "b", "c"] {
        ok(&["merge", "--op", "append", "k", word], &store("append"));
        ok(
            &["merge", "--op", "append", "--separator", "\\n", "k", word],
            &store("lines"),
        );
        ok(
            &["merge", "k", word, "--op", "append", "--separator", ", "],
            &store("commas"),
        );
    }
    assert_eq!(ok(&["get", "k"], &store("append")), "abc\n");
    assert_eq!(ok(&["get", "k"], &store("lines")), "a\nb\nc\n");
    assert_eq!(ok(&["get", "k"], &store("commas")), "a, b, c\n");
    // A put is a base the next operands append to.
    ok(&["put", "k", "x"], &store("append"));
    ok(&["merge", "--op", "append", "k", "y"], &store("append"));
    assert_eq!(ok(&["get", "k"], &store("append")), "xy\n");

    // Greatest and least, by bytes.
    for v in ["m", "z", "a", "q"] {
        ok(&["merge", "--op", "max", "k", v], &store("max"));
        ok(&["merge", "--op", "min", "k", v], &store("min"));
    }
    assert_eq!(ok(&["get", "k"], &store("max")), "z\n");
    assert_eq!(ok(&["get", "k"], &store("min")), "a\n");
    // A delete clears the operands before it.
    ok(&["del", "k"], &store("max"));
    ok(&["merge", "--op", "max", "k", "b"], &store("max"));
    assert_eq!(ok(&["get", "k"], &store("max")), "b\n");

    // Every store names its operator, with the flags that choose it.
    for (name, shown) in [
        ("add", "`spillway.u64add` (--op add)"),
        ("append", "`spillway.append` (--op append)"),
        (
            "lines",
            "`spillway.append:0a` (--op append --separator '\\n')",
        ),
        (
            "commas",
            "`spillway.append:2c20` (--op append --separator ', ')",
        ),
        ("max", "`spillway.max` (--op max)"),
        ("min", "`spillway.min` (--op min)"),
    ] {
        let stats = ok(&["stats"], &store(name));
        assert!(
            stats
                .lines()
                .any(|l| l.trim_start().starts_with("merge operator") && l.ends_with(shown)),
            "{name}: {stats}"
        );
    }
}

#[test]
fn merge_add_subtracts_a_negative_operand_and_wraps_around() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["merge", "--op", "add", "stock", "10"], dir.path());
    ok(&["merge", "--op", "add", "stock", "-3"], dir.path());
    assert_eq!(ok(&["get", "stock"], dir.path()), "7\n");
    // `--` before the key works too.
    let out = Command::new(BIN)
        .args(["merge", "--path"])
        .arg(dir.path())
        .args(["--op", "add", "--", "stock", "-7"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(ok(&["get", "stock"], dir.path()), "0\n");
    // Below zero, the unsigned counter wraps around at 2^64.
    ok(&["merge", "--op", "add", "stock", "-2"], dir.path());
    assert_eq!(
        ok(&["get", "stock"], dir.path()),
        format!("{}\n", u64::MAX - 1)
    );
    ok(&["merge", "--op", "add", "stock", "+5"], dir.path());
    assert_eq!(ok(&["get", "stock"], dir.path()), "3\n");
    ok(
        &["merge", "--op", "add", "big", &u64::MAX.to_string()],
        dir.path(),
    );
    ok(
        &["merge", "--op", "add", "big", &i64::MIN.to_string()],
        dir.path(),
    );
    assert_eq!(
        ok(&["get", "big"], dir.path()),
        format!("{}\n", u64::MAX.wrapping_add(1 << 63))
    );
}

#[test]
fn a_counter_store_reads_back_with_every_command_without_flags() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // An ordered store of counters: opening it needs both the stored order and operator.
    ok(&["merge", "--ordered", "--op", "add", "b", "2"], &store);
    ok(&["merge", "--op", "add", "a", "1"], &store);
    ok(&["put", "c", "not a counter"], &store);
    ok(&["put", "d", "8 bytes!"], &store);
    ok(&["put", "e", "gone"], &store);
    ok(&["del", "e"], &store);
    ok(&["merge", "--op", "add", "b", "40"], &store);

    assert_eq!(ok(&["get", "a"], &store), "1\n");
    assert_eq!(ok(&["get", "b"], &store), "42\n");
    assert_eq!(ok(&["get", "c"], &store), "not a counter\n");
    // Any 8-byte value is a number here; --raw gives the bytes.
    let eight = u64::from_le_bytes(*b"8 bytes!");
    assert_eq!(ok(&["get", "d"], &store), format!("{eight}\n"));
    assert_eq!(ok(&["get", "--raw", "d"], &store), "8 bytes!");
    assert_eq!(spillway(&["get", "e"], &store).status.code(), Some(1));

    let (pairs, err) = scan(&[], &store);
    assert_eq!(err, "4 pairs\n");
    let want = [
        ("a", "1".to_string()),
        ("b", "42".to_string()),
        ("c", "not a counter".to_string()),
        ("d", eight.to_string()),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    assert_eq!(pairs, want);
    let (pairs, _) = scan(&["--from", "b", "--to", "c"], &store);
    assert_eq!(pairs, [("b".to_string(), "42".to_string())]);
    let (pairs, _) = scan(&["--raw", "--prefix", "b"], &store);
    assert_eq!(pairs[0].1, r"*\x00\x00\x00\x00\x00\x00\x00");

    let stats = ok(&["stats"], &store);
    assert!(stats.contains(" ordered ("), "{stats}");
    assert!(stats.contains("`spillway.u64add` (--op add)"), "{stats}");
    assert!(stats.contains("merge operands written"), "{stats}");
    assert!(ok(&["check"], &store).contains("sound"));
    // A plain load goes into it too, and read checks it.
    ok(
        &[
            "load",
            "--records",
            "300",
            "--record-size",
            "12",
            "--sequential",
        ],
        &store,
    );
    let report = ok(&["read", "--ops", "300"], &store);
    assert_eq!(row(&report, "found"), 300, "{report}");
    assert_eq!(ok(&["get", "b"], &store), "42\n");

    // A value the counter cannot add to fails its key's reads, with what to do about it.
    ok(&["merge", "--op", "add", "c", "1"], &store);
    let err = fails(&["get", "c"], &store);
    assert!(
        err.contains("merge operator spillway.u64add failed on key \"c\"")
            && err.contains("`spillway put` or `spillway del` of the key replaces both"),
        "{err}"
    );
    ok(&["put", "c", "12345678"], &store);
    ok(&["merge", "--op", "add", "c", "1"], &store);
    let n = u64::from_le_bytes(*b"12345678") + 1;
    assert_eq!(ok(&["get", "c"], &store), format!("{n}\n"));

    // A store without a merge operator says so.
    let plain = dir.path().join("plain");
    ok(&["put", "k", "v"], &plain);
    let stats = ok(&["stats"], &plain);
    assert!(stats.contains("none (no merge yet)"), "{stats}");
    // ... and records the operator of its first merge.
    ok(&["merge", "--op", "append", "k", "w"], &plain);
    assert_eq!(ok(&["get", "k"], &plain), "vw\n");
    assert!(ok(&["stats"], &plain).contains("`spillway.append` (--op append)"));
}

#[test]
fn merge_with_another_operator_than_the_store_s_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let counters = dir.path().join("counters");
    ok(&["merge", "--op", "add", "n", "1"], &counters);
    let err = fails(&["merge", "--op", "append", "n", "x"], &counters);
    assert!(
        err.contains(&format!(
            "error: {} merges with `spillway.u64add` (--op add), not `spillway.append` (--op \
             append): a store keeps the merge operator of its first merge",
            counters.display()
        )),
        "{err}"
    );
    assert!(err.contains("merge into this store with --op add"), "{err}");
    assert!(!err.contains("Options"), "{err}");
    for args in [
        &["merge", "--op", "max", "n", "x"][..],
        &["merge", "--op", "append", "--separator", ",", "n", "x"],
    ] {
        let err = fails(args, &counters);
        assert!(err.contains("merges with `spillway.u64add`"), "{err}");
    }
    assert_eq!(ok(&["get", "n"], &counters), "1\n");

    // A separator is part of the operator.
    let lists = dir.path().join("lists");
    ok(
        &["merge", "--op", "append", "--separator", ",", "k", "a"],
        &lists,
    );
    let err = fails(&["merge", "--op", "append", "k", "b"], &lists);
    assert!(
        err.contains("merges with `spillway.append:2c` (--op append --separator ',')")
            && err.contains("not `spillway.append` (--op append)"),
        "{err}"
    );
    let err = fails(&["load", "--op", "add", "--records", "10"], &lists);
    assert!(err.contains("not `spillway.u64add` (--op add)"), "{err}");
    assert!(!lists.join("LOADGEN").exists());
    assert_eq!(ok(&["get", "k"], &lists), "a\n");
}

#[test]
fn an_invalid_operand_is_refused_before_the_store_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for bad in [
        "abc",
        "1.5",
        "",
        "18446744073709551616",
        "-9223372036854775809",
    ] {
        let err = usage(&["merge", "--op", "add", "k", bad], &store);
        assert!(
            err.contains(&format!("invalid operand `{bad}` for --op add"))
                && err.contains("a decimal integer"),
            "{err}"
        );
    }
    let err = usage(
        &["merge", "--op", "add", "--separator", ",", "k", "1"],
        &store,
    );
    assert!(
        err.contains("--separator goes with --op append only"),
        "{err}"
    );
    assert!(!store.exists(), "a refused merge created the store");

    // On an existing store, nothing is written either.
    ok(&["merge", "--op", "add", "k", "1"], &store);
    usage(&["merge", "--op", "add", "k", "x1"], &store);
    assert_eq!(ok(&["get", "k"], &store), "1\n");
    // --op is required, and names its choices.
    let out = spillway(&["merge", "k", "1"], &store);
    assert_eq!(out.status.code(), Some(2));
    let out = spillway(&["merge", "--op", "mul", "k", "1"], &store);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("add, append, max, min"),
        "{out:?}"
    );
}

#[test]
fn a_counter_load_piles_increments_on_its_keys_and_read_checks_every_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (records, distinct) = (10_007u64, 100u64);
    // Small buffers and nodes: operands spill into the tree, meet and fold there.
    let report = ok(
        &[
            "load",
            "--op",
            "add",
            "--records",
            &records.to_string(),
            "--distinct",
            &distinct.to_string(),
            "--threads",
            "3",
            "--batch",
            "97",
            "--ordered",
            "--sequential",
            "--root-buffer-mb",
            "0.01",
            "--node-mb",
            "0.02",
            "--fan-out",
            "4",
        ],
        &store,
    );
    assert_eq!(row(&report, "increments"), records, "{report}");
    assert_eq!(row(&report, "merge operands written"), records, "{report}");
    assert!(row(&report, "root spills") > 1, "{report}");
    assert!(report.contains("increments/s"), "{report}");
    assert!(report.contains("`spillway.u64add` (--op add)"), "{report}");
    let loadgen = std::fs::read_to_string(store.join("LOADGEN")).unwrap();
    assert!(
        loadgen.ends_with("op=add\ndistinct=100\nbase=zero\n"),
        "{loadgen}"
    );

    // Exact counts: keys 0..7 got 101 increments, the others 100.
    let (pairs, err) = scan(&[], &store);
    assert_eq!(err, "100 pairs\n");
    for (j, (k, v)) in pairs.iter().enumerate() {
        let j = j as u64;
        assert_eq!(*k, seq_key(j));
        let want = records / distinct + u64::from(j < records % distinct);
        assert_eq!(v.parse::<u64>().unwrap(), want, "key {j}");
    }
    let report = ok(&["read", "--ops", "2000"], &store);
    assert_eq!(row(&report, "found"), 2000, "{report}");
    assert_eq!(row(&report, "wrong values"), 0, "{report}");
    assert!(ok(&["check"], &store).contains("sound"));

    // Changed behind its back, a count is caught.
    let opts = spillway::Options::default()
        .key_order(spillway::KeyOrder::Ordered)
        .merge_operator(std::sync::Arc::new(spillway::operators::U64Add));
    let db = spillway::Db::open(&store, opts).unwrap();
    db.merge(3u64.to_be_bytes(), 1u64.to_le_bytes()).unwrap();
    db.close().unwrap();
    let out = spillway(&["read", "--ops", "2000"], &store);
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out.stdout);
    assert!(row(&report, "wrong values") > 0, "{report}");
    assert_eq!(
        row(&report, "found") + row(&report, "wrong values"),
        2000,
        "{report}"
    );
    assert!(
        text(&out.stderr).contains("wrong count 102, not 101: counter 3"),
        "{}",
        text(&out.stderr)
    );

    // A second load adds to the first one's counters: their values are no longer known.
    let out = spillway(
        &["load", "--op", "add", "--records", "50", "--sequential"],
        &store,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("`spillway read` cannot check the counters"));
    let err = fails(&["read", "--ops", "10"], &store);
    assert!(err.contains("no counter's value is known"), "{err}");
    // One key per record by default.
    let fresh = dir.path().join("fresh");
    ok(&["load", "--op", "add", "--records", "500"], &fresh);
    let (pairs, _) = scan(&[], &fresh);
    assert_eq!(pairs.len(), 500);
    assert!(pairs.iter().all(|(_, v)| v == "1"), "{pairs:?}");
    let report = ok(&["read", "--ops", "500"], &fresh);
    assert_eq!(row(&report, "found"), 500, "{report}");
}

#[test]
fn a_stopped_counter_load_is_read_within_what_it_may_have_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f 256; exec '{BIN}' load --op add --records 200000 \
             --distinct 1000 --batch 100 --root-buffer-mb 4 --path '{}'",
            store.display()
        ))
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error: load stopped after "), "{err}");
    let loadgen = std::fs::read_to_string(store.join("LOADGEN")).unwrap();
    assert!(
        loadgen.contains("state=stopped") && loadgen.contains("op=add"),
        "{loadgen}"
    );
    let out = spillway(&["read", "--ops", "3000"], &store);
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert_eq!(row(&report, "found"), 3000, "{report}");
    assert!(report.contains("the load stopped early"), "{report}");
}

#[test]
fn a_store_of_an_operator_the_cli_does_not_know_is_named_for_what_it_is() {
    struct Longest;
    impl spillway::MergeOperator for Longest {
        fn name(&self) -> &str {
            "example.longest"
        }
        fn full_merge(
            &self,
            _key: &[u8],
            base: Option<&[u8]>,
            operands: &[&[u8]],
        ) -> Result<Vec<u8>, String> {
            let longest = operands.iter().copied().chain(base).max_by_key(|v| v.len());
            Ok(longest.unwrap_or_default().to_vec())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = spillway::Options::default().merge_operator(std::sync::Arc::new(Longest));
    let db = spillway::Db::open(dir.path(), opts).unwrap();
    db.merge("k", "abc").unwrap();
    db.close().unwrap();

    for args in [
        &["get", "k"][..],
        &["scan"],
        &["stats"],
        &["put", "k", "v"],
        &["del", "k"],
    ] {
        let err = fails(args, dir.path());
        assert!(
            err.contains(
                "records merge operator `example.longest`, which is not one of \
                          spillway's built-ins"
            ),
            "{args:?}: {err}"
        );
        assert!(err.contains("spillway.u64add (--op add)"), "{err}");
    }
    let err = fails(&["merge", "--op", "add", "k", "1"], dir.path());
    assert!(
        err.contains("merges with `example.longest`, not `spillway.u64add` (--op add)"),
        "{err}"
    );
    assert!(err.contains("give a new --path"), "{err}");
}

/// `spillway serve --path DIR --bind 127.0.0.1:0 ARGS`, once it serves: the child and its
/// port (from the line it prints on stderr).
fn serve(dir: &Path, args: &[&str]) -> (Child, u16) {
    let mut child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--path"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(addr) = line.trim().strip_prefix("spillway: serving on ") {
            let port = addr.rsplit(':').next().unwrap().parse().unwrap();
            // Keep draining stderr, so that the server never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, port);
        }
        line.clear();
    }
    panic!("serve did not start: {:?}", child.wait());
}

/// `redis-cli -p PORT` with `commands` on stdin, one a line: its replies.
fn redis(port: u16, commands: &str) -> String {
    use std::io::Write;
    let mut cli = Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli is installed");
    cli.stdin
        .take()
        .unwrap()
        .write_all(commands.as_bytes())
        .unwrap();
    text(&cli.wait_with_output().unwrap().stdout)
}

/// SHUTDOWN, and the server's exit.
fn shut_down(mut server: Child, port: u16) {
    redis(port, "SHUTDOWN\n");
    let status = server.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn serve_opens_an_ordered_load_and_takes_the_tuning_flags_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let ordered = dir.path().join("ordered");
    ok(
        &[
            "load",
            "--ordered",
            "--sequential",
            "--records",
            "500",
            "--record-size",
            "16",
        ],
        &ordered,
    );
    let (server, port) = serve(&ordered, &[]);
    assert_eq!(
        redis(port, "DBSIZE\nSET greeting hello\nGET greeting\n"),
        "500\nOK\nhello\n"
    );
    shut_down(server, port);
    assert_eq!(ok(&["get", "greeting"], &ordered), "hello\n");
    let (pairs, _) = scan(&["--prefix", "g"], &ordered);
    assert_eq!(pairs, [("greeting".to_string(), "hello".to_string())]);

    // Small buffers and nodes, by flag and by -o: the writes spill and split into leaves.
    // (Past twice `node_size`, so that spills split them whether or not upkeep after the
    // last spill ran before the close.)
    let sets: String = (0..4000)
        .map(|i| format!("SET key:{i:05} value-{i}\n"))
        .collect();
    let leaves = |store: &Path, args: &[&str]| {
        let (server, port) = serve(store, args);
        let replies = redis(port, &sets);
        assert_eq!(
            replies.lines().filter(|l| *l == "OK").count(),
            4000,
            "{replies}"
        );
        shut_down(server, port);
        row(&ok(&["stats"], store), "leaves")
    };
    assert_eq!(leaves(&dir.path().join("plain"), &[]), 1);
    let tuned = [
        "--root-buffer-mb",
        "0.02",
        "-o",
        "node_size=16K",
        "--option",
        "fan_out=4",
    ];
    assert!(leaves(&dir.path().join("tuned"), &tuned) > 1);
    let named = [
        "-o",
        "root_buffer_size=20K",
        "-o",
        "node_size=16K",
        "-o",
        "fan_out=4",
    ];
    assert!(leaves(&dir.path().join("named"), &named) > 1);
    // The same options reach load.
    let load = ok(
        &[
            "load",
            "--records",
            "4000",
            "--record-size",
            "16",
            "-o",
            "root_buffer_size=20K",
            "-o",
            "node_size=16K",
            "-o",
            "fan_out=4",
        ],
        &dir.path().join("load"),
    );
    assert!(row(&load, "leaves") > 1, "{load}");

    // Unknown names and bad values are usage errors that name the option, before anything
    // is opened or served.
    let bad = dir.path().join("bad");
    for (args, says) in [
        (
            &["-o", "nodesize=16M"][..],
            "no engine option is named `nodesize`",
        ),
        (
            &["-o", "fan_out=many"],
            "fan_out: `many` is not a whole number",
        ),
        (&["-o", "node_size"], "is not NAME=VALUE"),
        (&["-o", "node_size=1K"], "invalid option `node_size`: 1024"),
    ] {
        for command in [
            &["serve", "--bind", "127.0.0.1:0"][..],
            &["put", "k", "v"],
            &["stats"],
        ] {
            let err = usage(&[command, args].concat(), &bad);
            assert!(err.contains(says), "{command:?} {args:?}: {err}");
        }
    }
    assert!(!bad.exists());
    let help = text(
        &Command::new(BIN)
            .args(["serve", "--help"])
            .output()
            .unwrap()
            .stdout,
    );
    for name in [
        "root_buffer_size",
        "node_size",
        "max_lists_per_node",
        "memory_budget",
    ] {
        let listed = help
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{name} ")));
        assert!(listed, "{name}: {help}");
    }
}

/// Every file of a store's folder and its bytes, to show that a command wrote nothing.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// `get ARGS` of an absent key: status 1, nothing on stdout.
fn not_found(args: &[&str], dir: &Path) {
    let out = spillway(args, dir);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    assert_eq!(text(&out.stderr), "(not found)\n", "{args:?}");
    assert!(out.stdout.is_empty(), "{args:?}");
}

#[test]
fn key_commands_work_in_a_keyspace_apart_from_the_default_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "k", "default"], &store);
    ok(&["put", "--keyspace", "users", "k", "in users"], &store);
    ok(&["put", "--keyspace", "users", "ada", "36"], &store);
    assert_eq!(ok(&["get", "k"], &store), "default\n");
    assert_eq!(
        ok(&["get", "--keyspace", "users", "k"], &store),
        "in users\n"
    );
    // `--keyspace ""` is the default keyspace, as the engine's empty name.
    assert_eq!(ok(&["get", "--keyspace", "", "k"], &store), "default\n");
    not_found(&["get", "ada"], &store);

    // Scans list their own keyspace only.
    let (pairs, _) = scan(&["--keyspace", "users"], &store);
    let mut pairs: Vec<_> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    assert_eq!(pairs, ["ada=36", "k=in users"]);
    assert_eq!(
        scan(&[], &store).0,
        [("k".to_string(), "default".to_string())]
    );

    // A delete in one keyspace leaves the other's key.
    ok(&["del", "--keyspace", "users", "k"], &store);
    not_found(&["get", "--keyspace", "users", "k"], &store);
    assert_eq!(ok(&["get", "k"], &store), "default\n");
    ok(&["del", "k"], &store);
    assert_eq!(ok(&["get", "--keyspace", "users", "ada"], &store), "36\n");

    // Counters in a keyspace of their own, printed as numbers; the default keyspace still
    // has no operator.
    for n in ["3", "4", "-2"] {
        ok(
            &["merge", "--keyspace", "hits", "--op", "add", "home", n],
            &store,
        );
    }
    assert_eq!(ok(&["get", "--keyspace", "hits", "home"], &store), "5\n");
    assert_eq!(
        ok(&["scan", "--keyspace", "hits"], &store),
        "home\t5\n",
        "a counter keyspace scans as numbers"
    );
    assert_eq!(
        ok(&["get", "--raw", "--keyspace", "hits", "home"], &store).as_bytes(),
        5u64.to_le_bytes()
    );
    let stats = ok(&["stats"], &store);
    assert_eq!(
        field(&stats, "Store", "merge operator"),
        "none (no merge yet)",
        "{stats}"
    );

    // An ordered keyspace in a hashed store: range and prefix scans.
    for k in ["036/ada", "041/bob", "036/cy"] {
        ok(&["put", "--keyspace", "by_age", "--ordered", k, ""], &store);
    }
    // Once created, it opens without --ordered.
    ok(&["put", "--keyspace", "by_age", "050/dee", ""], &store);
    let keys = |args: &[&str]| -> Vec<String> {
        let args = [&["--keyspace", "by_age"], args].concat();
        scan(&args, &store).0.into_iter().map(|(k, _)| k).collect()
    };
    assert_eq!(keys(&["--prefix", "036/"]), ["036/ada", "036/cy"]);
    assert_eq!(keys(&["--from", "037", "--to", "050"]), ["041/bob"]);
    assert_eq!(keys(&["--reverse", "--limit", "2"]), ["050/dee", "041/bob"]);
    let err = fails(&["scan", "--prefix", "0"], &store);
    assert!(err.contains("need an ordered store"), "{err}");
    let err = fails(&["scan", "--keyspace", "users", "--prefix", "a"], &store);
    assert!(
        err.contains("need an ordered keyspace, and keyspace `users` of")
            && err.contains("put --keyspace NAME --ordered"),
        "{err}"
    );
    assert!(
        text(&spillway(&["scan", "--keyspace", "users"], &store).stderr)
            .contains("(hashed keyspace: keys in hash order)")
    );
}

#[test]
fn a_read_of_a_keyspace_that_is_not_there_names_the_ones_that_are_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "k", "v"], &store);
    let before = snapshot(&store);
    for args in [
        &["get", "--keyspace", "nope", "k"][..],
        &["scan", "--keyspace", "nope"],
        &["del", "--keyspace", "nope", "k"],
    ] {
        let err = fails(args, &store);
        assert!(
            err.contains("no keyspace `nope` in ")
                && err.contains("it has none besides the default keyspace")
                && err.contains("`spillway stats` lists"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(snapshot(&store), before);
    assert!(field(&ok(&["stats"], &store), "Keyspaces", "(default)").starts_with("hashed"));

    ok(&["put", "--keyspace", "b", "k", "v"], &store);
    ok(&["put", "--keyspace", "a", "k", "v"], &store);
    let before = snapshot(&store);
    let err = fails(&["get", "--keyspace", "nope", "k"], &store);
    assert!(err.contains("its keyspaces are `a`, `b`"), "{err}");
    // Reads of a keyspace that is there write nothing either: the store opens read-only.
    assert_eq!(ok(&["get", "--keyspace", "a", "k"], &store), "v\n");
    ok(&["scan", "--keyspace", "b"], &store);
    ok(&["stats"], &store);
    assert_eq!(snapshot(&store), before);

    // No store: the missing store is the error, and no folder appears.
    let missing = dir.path().join("missing");
    let err = fails(&["get", "--keyspace", "a", "k"], &missing);
    assert!(err.contains("no store at"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn a_keyspace_keeps_the_order_and_operator_it_was_created_with() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // --ordered with --keyspace makes the keyspace ordered, not the new store.
    ok(&["put", "--keyspace", "idx", "--ordered", "k", "v"], &store);
    ok(&["put", "--keyspace", "plain", "k", "v"], &store);
    assert!(field(&ok(&["stats"], &store), "Store", "key order").starts_with("hashed"));

    let err = fails(
        &["put", "--keyspace", "plain", "--ordered", "k", "v"],
        &store,
    );
    assert!(
        err.contains("keyspace `plain` of") && err.contains("is hashed, not ordered"),
        "{err}"
    );
    assert!(err.contains("a new --keyspace name"), "{err}");
    let err = fails(&["get", "--keyspace", "plain", "--ordered", "k"], &store);
    assert!(err.contains("is hashed, not ordered"), "{err}");

    // A keyspace created by a put has no operator, and cannot get one later.
    let err = fails(
        &["merge", "--keyspace", "plain", "--op", "add", "n", "1"],
        &store,
    );
    assert!(
        err.contains("keyspace `plain` of") && err.contains("has no merge operator"),
        "{err}"
    );
    assert!(err.contains("give a new --keyspace name"), "{err}");
    // A merge creates one with its operator, which it keeps.
    ok(
        &[
            "merge",
            "--keyspace",
            "tags",
            "--op",
            "append",
            "--separator",
            ",",
            "t",
            "a",
        ],
        &store,
    );
    ok(
        &[
            "merge",
            "--keyspace",
            "tags",
            "--op",
            "append",
            "--separator",
            ",",
            "t",
            "b",
        ],
        &store,
    );
    assert_eq!(ok(&["get", "--keyspace", "tags", "t"], &store), "a,b\n");
    let err = fails(
        &["merge", "--keyspace", "tags", "--op", "max", "t", "z"],
        &store,
    );
    assert!(
        err.contains(
            "merges with `spillway.append:2c` (--op append --separator ','), not \
                      `spillway.max` (--op max): a keyspace keeps the merge operator it was \
                      created with"
        ),
        "{err}"
    );
    assert!(
        err.contains("merge into this keyspace with --op append --separator ','"),
        "{err}"
    );
    // And the store's own operator is another matter: the default keyspace takes --op max.
    ok(&["merge", "--op", "max", "t", "z"], &store);
    // `put -o merge_operator` creates a keyspace with an operator too.
    ok(
        &[
            "put",
            "--keyspace",
            "n",
            "-o",
            "merge_operator=add",
            "c",
            "\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00",
        ],
        &store,
    );
    ok(
        &["merge", "--keyspace", "n", "--op", "add", "c", "40"],
        &store,
    );
    assert_eq!(ok(&["get", "--keyspace", "n", "c"], &store), "42\n");
    let err = usage(
        &[
            "merge",
            "--keyspace",
            "n",
            "-o",
            "merge_operator=add",
            "--op",
            "add",
            "c",
            "1",
        ],
        &store,
    );
    assert!(err.contains("-o merge_operator does not go with"), "{err}");

    // A name the engine refuses is a usage error.
    let long = "x".repeat(256);
    let err = usage(&["put", "--keyspace", &long, "k", "v"], &store);
    assert!(err.contains("at most 255 bytes"), "{err}");

    let stats = ok(&["stats"], &store);
    for (name, line) in [
        (
            "(default)",
            "hashed, merge operator `spillway.max` (--op max), keys 1 (counted)",
        ),
        ("idx", "ordered, no merge operator, keys 1 (counted)"),
        (
            "n",
            "hashed, merge operator `spillway.u64add` (--op add), keys 1 (counted)",
        ),
        ("plain", "hashed, no merge operator, keys 1 (counted)"),
        (
            "tags",
            "hashed, merge operator `spillway.append:2c` (--op append --separator ','), keys 1 \
             (counted)",
        ),
    ] {
        assert_eq!(field(&stats, "Keyspaces", name), line, "{stats}");
    }
    assert_eq!(section(&stats, "Keyspaces").len(), 5, "{stats}");
    assert!(
        stats.contains("Keyspaces (4 besides the default)"),
        "{stats}"
    );
    // "keys" under Data is the whole store's.
    assert_eq!(field(&stats, "Data", "keys"), "5 (counted)", "{stats}");
}

#[test]
fn keyspaces_survive_spills_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    ok(&["put", "--keyspace", "ks", "--ordered", "a", "1"], &store);
    // A load into the default keyspace, with a small buffer: spills, the keyspace's buffer
    // goes to its own tree with them.
    ok(
        &[
            "load",
            "--records",
            "20000",
            "--record-size",
            "16",
            "--root-buffer-mb",
            "0.25",
        ],
        &store,
    );
    ok(
        &["merge", "--keyspace", "cnt", "--op", "add", "x", "7"],
        &store,
    );
    assert!(spillway(&["check"], &store).status.success());
    assert_eq!(ok(&["get", "--keyspace", "ks", "a"], &store), "1\n");
    assert_eq!(ok(&["get", "--keyspace", "cnt", "x"], &store), "7\n");
    assert_eq!(
        scan(&["--keyspace", "ks", "--prefix", "a"], &store).0,
        [("a".to_string(), "1".to_string())]
    );
    let stats = ok(&["stats"], &store);
    assert_eq!(
        field(&stats, "Keyspaces", "(default)"),
        "hashed, no merge operator, keys 20,000 (counted)",
        "{stats}"
    );
    assert_eq!(
        field(&stats, "Keyspaces", "ks"),
        "ordered, no merge operator, keys 1 (counted)"
    );
    assert_eq!(field(&stats, "Data", "keys"), "20,002 (counted)", "{stats}");
    ok(&["read", "--ops", "100"], &store);
}

#[test]
fn load_and_read_work_in_a_keyspace_and_old_loadgen_files_mean_the_default_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let n = 2000u64;
    // --ordered with --keyspace describes the keyspace, created by the load, as put's does.
    let args = [
        "load",
        "--records",
        "2000",
        "--record-size",
        "24",
        "--sequential",
        "--keyspace",
        "users",
        "--ordered",
    ];
    let report = ok(&args, &store);
    assert_eq!(field(&report, "Loaded", "keyspace"), "users", "{report}");
    assert!(
        field(&report, "Loaded", "key order").starts_with("ordered"),
        "{report}"
    );
    assert_eq!(
        field(&report, "Data", "keys"),
        "2,000 (counted)",
        "{report}"
    );
    let loadgen = std::fs::read_to_string(store.join("LOADGEN")).unwrap();
    assert!(loadgen.ends_with("\nkeyspace=users\n"), "{loadgen}");

    // read goes to the keyspace LOADGEN names; every record is there with its value.
    let report = ok(&["read", "--ops", "3000"], &store);
    assert_eq!(field(&report, "Read", "keyspace"), "users", "{report}");
    assert_eq!(row(&report, "found"), 3000, "{report}");
    assert_eq!(row(&report, "missing") + row(&report, "wrong values"), 0);
    let report = ok(&["read", "--ops", "10", "--keyspace", "users"], &store);
    assert_eq!(row(&report, "found"), 10, "{report}");
    let (pairs, _) = scan(&["--keyspace", "users"], &store);
    assert_records(&pairs, 0..n, 24);

    // The default keyspace stays empty, and the store hashed: --ordered was the keyspace's.
    assert_eq!(scan(&[], &store).0, []);
    let stats = ok(&["stats"], &store);
    assert!(
        field(&stats, "Store", "key order").starts_with("hashed"),
        "{stats}"
    );
    assert_eq!(
        field(&stats, "Keyspaces", "(default)"),
        "hashed, no merge operator, keys 0 (counted)",
        "{stats}"
    );
    assert_eq!(
        field(&stats, "Keyspaces", "users"),
        "ordered, no merge operator, keys 2,000 (counted)",
        "{stats}"
    );

    // --keyspace on read checks LOADGEN's choice rather than overriding it.
    let err = fails(&["read", "--ops", "1", "--keyspace", ""], &store);
    assert!(
        err.contains("says the last `spillway load` went into keyspace `users`, not the default"),
        "{err}"
    );
    // A keyspace that is not there: the error get --keyspace gives.
    let err = fails(&["read", "--ops", "1", "--keyspace", "nope"], &store);
    assert!(
        err.contains("no keyspace `nope` in ") && err.contains("its keyspaces are `users`"),
        "{err}"
    );
    let err = fails(&["get", "--keyspace", "nope", "k"], &store);
    assert!(err.contains("no keyspace `nope` in "), "{err}");
    // A LOADGEN naming a keyspace since dropped (or never made): the same error.
    std::fs::write(
        store.join("LOADGEN"),
        loadgen.replace("keyspace=users", "keyspace=gone"),
    )
    .unwrap();
    let err = fails(&["read", "--ops", "1"], &store);
    assert!(err.contains("no keyspace `gone` in "), "{err}");

    // Without the field (a LOADGEN from before keyspaces), read goes to the default keyspace.
    let old = dir.path().join("old");
    ok(
        &[
            "load",
            "--records",
            "500",
            "--record-size",
            "16",
            "--seed",
            "3",
        ],
        &old,
    );
    let loadgen = std::fs::read_to_string(old.join("LOADGEN")).unwrap();
    assert!(!loadgen.contains("keyspace"), "{loadgen}");
    let report = ok(&["read", "--ops", "1000"], &old);
    assert_eq!(row(&report, "found"), 1000, "{report}");
    assert!(section(&report, "Read")
        .iter()
        .all(|l| !l.contains("keyspace")));
    ok(&["read", "--ops", "10", "--keyspace", ""], &old);
    let err = fails(&["read", "--ops", "1", "--keyspace", "users"], &old);
    assert!(err.contains("no keyspace `users`"), "{err}");

    // A counter load into a keyspace: read checks every counter's count there.
    let counters = dir.path().join("counters");
    ok(
        &[
            "load",
            "--records",
            "3000",
            "--op",
            "add",
            "--distinct",
            "100",
            "--keyspace",
            "hits",
        ],
        &counters,
    );
    let report = ok(&["read", "--ops", "500"], &counters);
    assert_eq!(row(&report, "found"), 500, "{report}");
    // 100 counters of 30 increments each, all in the keyspace.
    let (pairs, _) = scan(&["--keyspace", "hits"], &counters);
    assert_eq!(pairs.len(), 100);
    assert!(pairs.iter().all(|(_, v)| v == "30"), "{pairs:?}");
    assert_eq!(scan(&[], &counters).0, []);
}
