//! `Db::open_read_only` reads a store without writing anything to its folder — no lock file,
//! no new log, no recovery writes — works for a user without write permission, shares the
//! store with other read-only handles (in this process and others) and keeps writers out;
//! and neither kind of open creates a store where there is none, or touches a folder that is
//! not one.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use spillway::{Db, Error, Options, WriteBatch, WriteOptions};

fn options() -> Options {
    common::small_options()
}

/// Writes applied to `db` (when given) and to the model.
fn writes(db: Option<&Db>) -> BTreeMap<String, String> {
    let mut model = BTreeMap::new();
    for n in 0..80u32 {
        let mut b = WriteBatch::new();
        for j in 0..20u32 {
            let (k, v) = (format!("key{}", (n * 20 + j) % 900), format!("v{n}.{j}"));
            b.put(&k, &v);
            model.insert(k, v);
        }
        if let Some(db) = db {
            db.write(b, WriteOptions::SYNC).unwrap();
        }
    }
    model
}

/// Set in a child copy of this test binary: write `writes` to the store in this folder and
/// exit without closing it, as a crash would.
const CRASH_CHILD_ENV: &str = "SPILLWAY_CRASHED_STORE_CHILD";

#[test]
fn crashed_store_child() {
    if let Some(dir) = std::env::var_os(CRASH_CHILD_ENV) {
        let db = Db::open(Path::new(&dir), options()).unwrap();
        writes(Some(&db));
        assert!(db.stats().root_spills > 0);
        std::process::exit(0);
    }
}

/// A store with data in lists and more only in its log, left by a crash (not closed), with a
/// torn record at the end of the log: what a read-only open must recover in memory only.
fn crashed_store(dir: &Path) -> BTreeMap<String, String> {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crashed_store_child", "--nocapture"])
        .env(CRASH_CHILD_ENV, dir)
        .status()
        .unwrap();
    assert!(status.success());
    let log = common::files_with_extension(dir, "log").pop().unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    std::io::Write::write_all(&mut f, &[0x55; 11]).unwrap(); // a torn record
    writes(None)
}

/// Every file in `dir` with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

fn check(db: &Db, model: &BTreeMap<String, String>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "{k}");
    }
    let keys: Vec<&String> = model.keys().collect();
    let want: Vec<Option<Vec<u8>>> = model.values().map(|v| Some(v.clone().into())).collect();
    assert_eq!(db.multi_get(&keys).unwrap(), want);
}

#[test]
fn a_read_only_open_recovers_in_memory_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let model = crashed_store(dir.path());
    std::fs::remove_file(dir.path().join("LOCK")).unwrap();
    let before = contents(dir.path());

    let a = Db::open_read_only(dir.path(), options()).unwrap();
    let b = Db::open_read_only(dir.path(), Options::default()).unwrap();
    check(&a, &model);
    check(&b, &model);
    assert!(a.stats().log_records_replayed > 0);
    for db in [&a, &b] {
        assert!(matches!(db.put("k", "v"), Err(Error::ReadOnly)));
        assert!(matches!(db.delete("key1"), Err(Error::ReadOnly)));
        assert!(matches!(db.flush(), Err(Error::ReadOnly)));
    }
    a.close().unwrap();
    drop(b);
    assert_eq!(
        contents(dir.path()),
        before,
        "a read-only open changed the folder"
    );

    // A writer recovers the same, cutting the torn tail.
    let db = Db::open(dir.path(), options()).unwrap();
    check(&db, &model);
    db.close().unwrap();
}

/// Set in a child copy of this test binary: open the store in this folder read-only (as an
/// unprivileged user, when run as root), check it against the model in the variable's value
/// and exit 0, 3 (`Locked`), or 4 (another error).
const CHILD_ENV: &str = "SPILLWAY_READ_ONLY_CHILD";

fn read_only_in_another_process(dir: &Path, unprivileged: bool) -> Option<i32> {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "read_only_child", "--nocapture"])
        .env(CHILD_ENV, dir)
        .env(
            "SPILLWAY_CHILD_DROPS_PRIVILEGES",
            if unprivileged { "1" } else { "" },
        )
        .status()
        .unwrap()
        .code()
}

#[test]
fn read_only_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    if std::env::var("SPILLWAY_CHILD_DROPS_PRIVILEGES").is_ok_and(|v| v == "1") {
        // SAFETY: plain system calls; this process runs nothing else.
        unsafe {
            if libc::geteuid() == 0 {
                assert_eq!(libc::setgid(65534), 0);
                assert_eq!(libc::setuid(65534), 0);
            }
        }
        // Writing is refused by the system: the check below means something.
        let e = Db::open(dir, options()).map(|_| ()).unwrap_err();
        assert!(matches!(e, Error::Io { .. }), "{e}");
    }
    let code = match Db::open_read_only(dir, options()) {
        Ok(db) => {
            assert_eq!(db.get("key7").unwrap().as_deref(), Some(&b"seven"[..]));
            0
        }
        Err(Error::Locked { .. }) => 3,
        Err(e) => {
            eprintln!("{e}");
            4
        }
    };
    std::process::exit(code);
}

#[test]
fn read_only_handles_share_the_store_and_keep_writers_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put("key7", "seven").unwrap();
    // A writer keeps read-only handles out, in this process and in others.
    assert!(matches!(
        Db::open_read_only(dir.path(), options()),
        Err(Error::Locked { .. })
    ));
    assert_eq!(read_only_in_another_process(dir.path(), false), Some(3));
    db.close().unwrap();

    let reader = Db::open_read_only(dir.path(), options()).unwrap();
    let second = Db::open_read_only(dir.path(), options()).unwrap();
    assert_eq!(read_only_in_another_process(dir.path(), false), Some(0));
    // Dropping one handle keeps the process's shared lock for the other.
    drop(second);
    assert!(matches!(
        Db::open(dir.path(), options()),
        Err(Error::Locked { .. })
    ));
    assert_eq!(reader.get("key7").unwrap().as_deref(), Some(&b"seven"[..]));
    drop(reader);
    Db::open(dir.path(), options()).unwrap().close().unwrap();
}

#[test]
fn a_user_without_write_permission_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let db = Db::open(&store, options()).unwrap();
    db.put("key7", "seven").unwrap();
    db.close().unwrap();
    // Readable by all, writable by none.
    let set = |p: &Path, mode| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
    set(dir.path(), 0o755).unwrap();
    for f in std::fs::read_dir(&store).unwrap() {
        set(&f.unwrap().path(), 0o444).unwrap();
    }
    set(&store, 0o555).unwrap();
    assert_eq!(read_only_in_another_process(&store, true), Some(0));
    set(&store, 0o755).unwrap();
}

#[test]
fn reading_creates_no_store_and_touches_no_foreign_folder() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let e = Db::open_read_only(&missing, options())
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(e, Error::NotAStore { .. }), "{e}");
    assert!(!missing.exists());
    let no_create = options().create_if_missing(false);
    let e = Db::open(&missing, no_create.clone())
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("does not exist"), "{e}");
    assert!(!missing.exists());

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for e in [
        Db::open_read_only(&empty, options())
            .map(|_| ())
            .unwrap_err(),
        Db::open(&empty, no_create).map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::NotAStore { .. }), "{e}");
    }
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);

    // A folder of other files is no store: opening it, either way, leaves nothing behind.
    let foreign = dir.path().join("source");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("main.rs"), "fn main() {}").unwrap();
    for e in [
        Db::open(&foreign, options()).map(|_| ()).unwrap_err(),
        Db::open_read_only(&foreign, options())
            .map(|_| ())
            .unwrap_err(),
    ] {
        assert!(matches!(e, Error::NotAStore { .. }), "{e}");
    }
    let names: Vec<_> = std::fs::read_dir(&foreign).unwrap().collect();
    assert_eq!(names.len(), 1, "{names:?}");

    // A store whose creation was cut short (its first log, no manifest yet) is created anew.
    let cut = dir.path().join("cut");
    std::fs::create_dir(&cut).unwrap();
    std::fs::write(cut.join("0000000001.log"), b"").unwrap();
    assert!(matches!(
        Db::open_read_only(&cut, options()),
        Err(Error::NotAStore { .. })
    ));
    let db = Db::open(&cut, options()).unwrap();
    db.put("k", "v").unwrap();
    db.close().unwrap();
    let db = Db::open_read_only(&cut, options()).unwrap();
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}
