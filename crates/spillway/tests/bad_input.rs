//! Bad input gets a typed error and loses nothing already acknowledged: oversized keys and
//! values, invalid options, foreign, truncated, corrupted or newer-format files, a second
//! opener. Never a panic, never wrong data.

use std::path::Path;

use spillway::{Db, Error, Options, WriteBatch, WriteOptions, MAX_KEY_LEN, MAX_VALUE_LEN};

fn small() -> Options {
    Options::default()
        .root_buffer_size(64 << 10)
        .node_size(64 << 10)
        .fan_out(4)
}

/// A store with `n` keys spilled into list files (and a few still in the log).
fn store_with_lists(dir: &Path, n: u32) -> Vec<(Vec<u8>, Vec<u8>)> {
    let db = Db::open(dir, small()).unwrap();
    let kv: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| {
            (
                format!("key{i}").into_bytes(),
                format!("value-{i}-{}", "v".repeat(40)).into_bytes(),
            )
        })
        .collect();
    for chunk in kv.chunks(100) {
        let mut b = WriteBatch::new();
        for (k, v) in chunk {
            b.put(k, v);
        }
        db.write(b, WriteOptions::SYNC).unwrap();
    }
    db.close().unwrap(); // waits for a spill still running
    assert!(
        !common::files_with_extension(dir, "list").is_empty(),
        "the test needs data in list files"
    );
    kv
}

mod common;

fn list_files(dir: &Path) -> Vec<std::path::PathBuf> {
    common::files_with_extension(dir, "list")
}

#[test]
fn oversized_keys_and_values_are_refused_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"kept", b"safe").unwrap();
    let big_key = vec![b'k'; MAX_KEY_LEN + 1];
    assert!(
        matches!(db.put(&big_key, b"v"), Err(Error::KeyTooLarge { len, .. }) if len == MAX_KEY_LEN + 1)
    );
    assert!(matches!(db.get(&big_key), Err(Error::KeyTooLarge { .. })));
    assert!(matches!(
        db.delete(&big_key),
        Err(Error::KeyTooLarge { .. })
    ));
    let big_value = vec![0u8; MAX_VALUE_LEN + 1];
    assert!(matches!(
        db.put(b"k", &big_value),
        Err(Error::ValueTooLarge { .. })
    ));
    // A batch with one bad entry is refused whole.
    let mut b = WriteBatch::new();
    b.put(b"partial", b"no");
    b.put(b"k", &big_value);
    assert!(matches!(
        db.write(b, WriteOptions::SYNC),
        Err(Error::ValueTooLarge { .. })
    ));
    assert_eq!(db.get(b"partial").unwrap(), None);
    assert_eq!(db.get(b"kept").unwrap(), Some(b"safe".to_vec()));
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(db.get(b"kept").unwrap(), Some(b"safe".to_vec()));
    assert_eq!(db.get(b"partial").unwrap(), None);
}

#[test]
fn the_largest_key_and_value_round_trip_through_spills_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let opts = small().root_buffer_size(1 << 20).node_size(4 << 20);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let key = vec![7u8; MAX_KEY_LEN];
    let value: Vec<u8> = (0..MAX_VALUE_LEN).map(|i| (i % 251) as u8).collect();
    db.put(&key, &value).unwrap();
    db.put(b"small", b"one").unwrap();
    db.flush().unwrap();
    assert!(
        db.stats().root_spills > 0,
        "a 16 MiB value fills the 1 MiB buffer at once"
    );
    assert_eq!(db.get(&key).unwrap().as_deref(), Some(&value[..]));
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get(&key).unwrap().as_deref(), Some(&value[..]));
    assert_eq!(db.get(b"small").unwrap(), Some(b"one".to_vec()));
}

#[test]
fn invalid_options_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Options::default().fan_out(1);
    match Db::open(dir.path(), bad) {
        Err(Error::InvalidOption {
            name: "fan_out", ..
        }) => {}
        other => panic!("expected InvalidOption(fan_out), got {:?}", other.err()),
    }
    // Nothing was created for an invalid open.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_folder_of_someone_elses_files_is_not_a_store() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thesis.tex"), "precious").unwrap();
    assert!(matches!(
        Db::open(dir.path(), small()),
        Err(Error::NotAStore { .. })
    ));
    assert_eq!(
        std::fs::read(dir.path().join("thesis.tex")).unwrap(),
        b"precious"
    );

    let file = dir.path().join("thesis.tex");
    assert!(matches!(
        Db::open(&file, small()),
        Err(Error::NotAStore { .. })
    ));

    let missing = dir.path().join("missing");
    let opts = small().create_if_missing(false);
    assert!(matches!(
        Db::open(&missing, opts),
        Err(Error::NotAStore { .. })
    ));
    assert!(!missing.exists());
}

#[test]
fn foreign_truncated_corrupted_and_newer_manifests_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    store_with_lists(dir.path(), 3000);
    let path = dir.path().join("MANIFEST");
    let good = std::fs::read(&path).unwrap();
    type Expect = fn(&Error) -> bool;
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        (
            "foreign",
            b"{\"not\": \"a manifest\"} padding padding".to_vec(),
            |e| matches!(e, Error::NotAStore { .. }),
        ),
        ("truncated", good[..good.len() - 7].to_vec(), |e| {
            matches!(e, Error::Corruption { .. })
        }),
        (
            "bit flip",
            {
                let mut b = good.clone();
                let n = b.len();
                b[n - 20] ^= 0x10;
                b
            },
            |e| matches!(e, Error::Corruption { .. }),
        ),
        (
            "newer",
            {
                let mut b = good.clone();
                b[8] = 99;
                b
            },
            |e| matches!(e, Error::UnsupportedVersion { found: 99, .. }),
        ),
    ];
    for (what, bytes, expected) in cases {
        std::fs::write(&path, &bytes).unwrap();
        match Db::open(dir.path(), small()) {
            Err(e) => assert!(expected(&e), "{what}: unexpected error {e}"),
            Ok(_) => panic!("{what}: opened a damaged manifest"),
        }
    }
    std::fs::write(&path, &good).unwrap();
    Db::open(dir.path(), small()).unwrap();
}

#[test]
fn a_truncated_list_file_is_corruption_not_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    store_with_lists(dir.path(), 3000);
    let victim = &list_files(dir.path())[0];
    let len = std::fs::metadata(victim).unwrap().len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap();
    f.set_len(len / 2).unwrap();
    assert!(matches!(
        Db::open(dir.path(), small()),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn a_flipped_bit_in_a_page_is_reported_never_returned_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let kv = store_with_lists(dir.path(), 3000);
    for victim in list_files(dir.path()) {
        let mut bytes = std::fs::read(&victim).unwrap();
        bytes[40] ^= 0x04; // inside the first page's records
        std::fs::write(&victim, &bytes).unwrap();
    }
    let db = Db::open(dir.path(), small()).unwrap();
    let mut errors = 0;
    for (k, v) in &kv {
        match db.get(k) {
            Ok(got) => assert_eq!(
                got.as_ref(),
                Some(v),
                "wrong data for {}",
                String::from_utf8_lossy(k)
            ),
            Err(Error::Corruption { .. }) => errors += 1,
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(errors > 0, "no read hit a damaged page");
}

#[test]
fn corruption_in_the_middle_of_the_log_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..50 {
            db.write(
                {
                    let mut b = WriteBatch::new();
                    b.put(format!("k{i}"), [b'x'; 100]);
                    b
                },
                WriteOptions::SYNC,
            )
            .unwrap();
        }
    }
    let log = common::files_with_extension(dir.path(), "log")
        .into_iter()
        .find(|p| std::fs::metadata(p).unwrap().len() > 1000)
        .expect("a log with the writes");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[200] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();
    assert!(matches!(
        Db::open(dir.path(), Options::default()),
        Err(Error::Corruption { .. })
    ));
}

#[test]
fn a_second_opener_is_locked_out_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"a", b"1").unwrap();
    assert!(matches!(
        Db::open(dir.path(), small()),
        Err(Error::Locked { .. })
    ));
    db.close().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}

/// Set in a child copy of this test binary: open the store in this folder and exit 0 (opened),
/// 3 (`Locked`) or 4 (another error).
const LOCK_CHILD_ENV: &str = "SPILLWAY_LOCK_CHILD";

/// Run `lock_child` in a child copy of this test binary; its exit code.
fn open_in_another_process(dir: &Path) -> Option<i32> {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_child", "--nocapture"])
        .env(LOCK_CHILD_ENV, dir)
        .status()
        .unwrap()
        .code()
}

#[test]
fn lock_child() {
    if let Some(dir) = std::env::var_os(LOCK_CHILD_ENV) {
        let code = match Db::open(Path::new(&dir), small()) {
            Ok(_) => 0,
            Err(Error::Locked { .. }) => 3,
            Err(e) => {
                eprintln!("{e}");
                4
            }
        };
        std::process::exit(code);
    }
}

/// Another process is refused while the store is open. A child forked while it is open (any
/// thread spawning a command forks first) shares the open files but not the lock, so closing
/// and reopening the store meanwhile works: with `flock` it would fail as `Locked`.
#[test]
fn another_process_is_locked_out_but_a_forked_child_holds_no_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small()).unwrap();
    db.put(b"a", b"1").unwrap();
    assert_eq!(
        open_in_another_process(dir.path()),
        Some(3),
        "another process opened a locked store"
    );

    // SAFETY: the child only sleeps and exits, both async-signal-safe.
    let child = unsafe { libc::fork() };
    if child == 0 {
        unsafe {
            libc::sleep(30);
            libc::_exit(0);
        }
    }
    assert!(child > 0, "fork failed");
    db.close().unwrap();
    let reopened = Db::open(dir.path(), small());
    // SAFETY: our own child.
    unsafe {
        libc::kill(child, libc::SIGKILL);
        libc::waitpid(child, std::ptr::null_mut(), 0);
    }
    let db = reopened.expect("the forked child must not hold the store's lock");
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
    drop(db);
    assert_eq!(
        open_in_another_process(dir.path()),
        Some(0),
        "a closed store opens in another process"
    );
}
