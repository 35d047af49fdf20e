//! `spillway::check` finds a flipped bit in any page, log record or manifest record and names
//! the file; a sound store checks sound; `repair` removes only files no manifest needs.

mod common;

use std::path::{Path, PathBuf};

use spillway::{Db, Options, WriteBatch, WriteOptions};

fn options() -> Options {
    common::small_options()
}

/// A closed store with several list files (slow-splits' among them, of several pages), a
/// manifest, and writes still only in the log. Spills on the writer's thread, so that their
/// upkeep — the splits — has run when `flush` returns, whatever the timing.
fn store(dir: &Path) {
    store_with(dir, options());
}

/// [`store`], with `options` (spilling on the writer's thread).
fn store_with(dir: &Path, options: Options) {
    let db = Db::open(dir, options.background_spills(false)).unwrap();
    for n in 0..60u32 {
        let mut b = WriteBatch::new();
        for j in 0..40u32 {
            let i = (n * 40 + j) % 1500;
            b.put(format!("key{i}"), format!("value {n} {j}"));
        }
        if n % 7 == 0 {
            b.delete(format!("key{}", n * 3));
        }
        db.write(b, WriteOptions::NO_SYNC).unwrap();
    }
    // Spill everything, then leave a few writes in the log alone.
    db.flush().unwrap();
    for n in 0..6u32 {
        let mut b = WriteBatch::new();
        b.put(format!("logged{n}"), format!("only in the log {n}"));
        b.put(format!("key{n}"), format!("newer {n}"));
        db.write(b, WriteOptions::SYNC).unwrap();
    }
    db.close().unwrap();
}

fn flip(path: &Path, at: usize) {
    let mut data = std::fs::read(path).unwrap();
    data[at] ^= 0x10;
    std::fs::write(path, data).unwrap();
}

fn name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// Flip a bit at `at` in `path`, check, flip it back; whether the report names the file (as a
/// problem, or with `torn_ok` also as a torn log tail).
fn found(dir: &Path, path: &Path, at: usize, torn_ok: bool) -> bool {
    flip(path, at);
    let r = spillway::check(dir, false).unwrap();
    flip(path, at);
    let file = name(path);
    r.problems.iter().any(|p| p.contains(&file))
        || (torn_ok
            && r.notes
                .iter()
                .any(|n| n.contains(&file) && n.contains("torn")))
}

#[test]
fn a_sound_store_checks_sound_and_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let before = common::list_file_names(dir.path());
    let r = spillway::check(dir.path(), true).unwrap();
    assert!(r.is_sound(), "{:?}", r.problems);
    assert!(
        r.lists >= 3 && r.pages > r.lists && r.records > 1000,
        "{r:?}"
    );
    assert!(
        r.log_records > 0,
        "the store has writes only in its log: {r:?}"
    );
    assert!(r.unreachable.is_empty() && r.notes.is_empty(), "{r:?}");
    assert_eq!(common::list_file_names(dir.path()), before);
}

#[test]
fn a_flipped_bit_anywhere_in_a_list_file_is_found() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let mut flips = 0;
    for path in common::files_with_extension(dir.path(), "list") {
        let len = std::fs::metadata(&path).unwrap().len() as usize;
        // Every byte of the header (magic, version, checksum), then pages, filter, index
        // and trailer.
        for at in (0..16).chain((16..len).step_by(41)) {
            assert!(
                found(dir.path(), &path, at, false),
                "byte {at} of {}",
                name(&path)
            );
            flips += 1;
        }
    }
    assert!(flips > 300, "{flips} flips");
}

/// Log frames: crc32c(payload) u32 | len_kind u32 | unsynced u32 | crc32c(len_kind, unsynced)
/// u32 | payload, after a 16-byte header.
fn log_records(path: &Path) -> Vec<(usize, usize)> {
    let data = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut pos = 16;
    while pos + 16 <= data.len() {
        // The length's high 4 bits hold the record's kind.
        let len = u32::from_le_bytes(data[pos + 4..pos + 8].try_into().unwrap()) & 0x0fff_ffff;
        let len = len as usize;
        out.push((pos, pos + 16 + len));
        pos += 16 + len;
    }
    out
}

#[test]
fn a_flipped_bit_in_any_log_record_is_found() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let logs: Vec<PathBuf> = common::files_with_extension(dir.path(), "log");
    let mut flips = 0;
    for path in &logs {
        // Every byte of the header (magic, version, checksum).
        for at in 0..16 {
            assert!(found(dir.path(), path, at, false), "header byte {at}");
        }
        let records = log_records(path);
        for (i, &(start, end)) in records.iter().enumerate() {
            // The store was closed cleanly: the manifest says where the seal ends, so even
            // the last record (the seal) is vouched for, and damage to it is no torn tail.
            for at in [
                start,
                start + 5,
                start + 9,
                start + 13,
                (start + end) / 2,
                end - 1,
            ] {
                assert!(
                    found(dir.path(), path, at, false),
                    "byte {at} of record {i} of {}",
                    name(path)
                );
                flips += 1;
            }
        }
    }
    assert!(flips >= 20, "{flips} flips");
}

#[test]
fn a_flipped_bit_anywhere_in_the_manifest_is_found() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let path = dir.path().join("MANIFEST");
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    for at in 0..len {
        flip(&path, at);
        let r = spillway::check(dir.path(), false);
        flip(&path, at);
        let r = r.unwrap();
        assert!(
            r.problems.iter().any(|p| p.contains("MANIFEST")),
            "byte {at} of {len}: {:?}",
            r.problems
        );
    }
}

#[test]
fn repair_removes_only_what_no_manifest_needs() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let lists = common::files_with_extension(dir.path(), "list");
    // What an interrupted spill leaves: a list no manifest names, a half-written manifest.
    let orphan = dir.path().join("9999999999.list");
    std::fs::copy(&lists[0], &orphan).unwrap();
    std::fs::write(dir.path().join("MANIFEST.tmp"), b"half").unwrap();

    let r = spillway::check(dir.path(), false).unwrap();
    assert!(
        r.is_sound(),
        "unreachable files are not damage: {:?}",
        r.problems
    );
    assert_eq!(r.unreachable.len(), 2, "{r:?}");
    assert!(orphan.exists());

    // A damaged manifest proves nothing unreachable: repair removes nothing.
    let manifest = dir.path().join("MANIFEST");
    flip(&manifest, 20);
    let r = spillway::check(dir.path(), true).unwrap();
    assert!(!r.is_sound());
    assert!(orphan.exists() && dir.path().join("MANIFEST.tmp").exists());
    flip(&manifest, 20);

    let r = spillway::check(dir.path(), true).unwrap();
    assert!(r.is_sound() && r.unreachable.is_empty(), "{r:?}");
    assert!(!orphan.exists() && !dir.path().join("MANIFEST.tmp").exists());
    assert_eq!(common::files_with_extension(dir.path(), "list"), lists);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get("key1499").unwrap(), Some(b"value 37 19".to_vec()));
    assert_eq!(
        db.get("logged5").unwrap(),
        Some(b"only in the log 5".to_vec())
    );
}

#[test]
fn an_open_store_is_not_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(matches!(
        spillway::check(dir.path(), false),
        Err(spillway::Error::Locked { .. })
    ));
    drop(db);
    assert!(matches!(
        spillway::check(&dir.path().join("nothing"), false),
        Err(spillway::Error::NotAStore { .. })
    ));
}

/// What a crash mid-spill leaves: the list file the spill was writing, cut short before its
/// trailer, which no manifest names. Made from a live list, as the spill would have begun it.
fn unfinished_copy(dir: &Path, of: &Path, id: u64) -> PathBuf {
    let path = dir.join(format!("{id:010}.list"));
    let data = std::fs::read(of).unwrap();
    std::fs::write(&path, &data[..data.len() * 2 / 3]).unwrap();
    path
}

#[test]
fn an_unfinished_list_no_manifest_reaches_is_a_leftover_not_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let lists = common::files_with_extension(dir.path(), "list");
    let unfinished = unfinished_copy(dir.path(), &lists[0], 9_999_999_998);
    // A complete leftover (a dead file a crash kept from removal) with a damaged page.
    let damaged = dir.path().join("9999999999.list");
    std::fs::copy(&lists[0], &damaged).unwrap();
    flip(&damaged, 100);

    let r = spillway::check(dir.path(), false).unwrap();
    assert!(r.is_sound(), "leftovers are not damage: {:?}", r.problems);
    assert!(
        r.unreachable.contains(&unfinished) && r.unreachable.contains(&damaged),
        "{r:?}"
    );
    for path in [&unfinished, &damaged] {
        assert!(
            r.notes.iter().any(|n| n.contains(&name(path))),
            "{}: {:?}",
            name(path),
            r.notes
        );
    }

    // Repair removes them; what it reports is the repaired store, and it is sound.
    let r = spillway::check(dir.path(), true).unwrap();
    assert!(r.is_sound() && r.unreachable.is_empty(), "{r:?}");
    assert!(!unfinished.exists() && !damaged.exists());
    assert_eq!(common::files_with_extension(dir.path(), "list"), lists);
    let r = spillway::check(dir.path(), false).unwrap();
    assert!(r.is_sound() && r.notes.is_empty(), "{r:?}");
}

#[test]
fn damage_is_a_problem_in_a_list_the_manifest_names_or_when_the_manifest_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let lists = common::files_with_extension(dir.path(), "list");

    // A live list cut short is damage to the store, not a leftover.
    let saved = std::fs::read(&lists[1]).unwrap();
    std::fs::write(&lists[1], &saved[..saved.len() - 10]).unwrap();
    let r = spillway::check(dir.path(), true).unwrap();
    assert!(
        r.problems.iter().any(|p| p.contains(&name(&lists[1]))),
        "{r:?}"
    );
    assert!(lists[1].exists());
    std::fs::write(&lists[1], &saved).unwrap();

    // With the manifest damaged nothing is provably a leftover: an unfinished list is a
    // problem, and repair keeps it.
    let unfinished = unfinished_copy(dir.path(), &lists[0], 9_999_999_999);
    let manifest = dir.path().join("MANIFEST");
    flip(&manifest, 30);
    let r = spillway::check(dir.path(), true).unwrap();
    assert!(
        r.problems.iter().any(|p| p.contains(&name(&unfinished))),
        "{r:?}"
    );
    assert!(r.unreachable.is_empty() && unfinished.exists(), "{r:?}");
    flip(&manifest, 30);
    assert!(spillway::check(dir.path(), false).unwrap().is_sound());
}

#[test]
fn a_list_with_a_damaged_header_is_corruption_of_that_file() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let lists = common::files_with_extension(dir.path(), "list");
    for at in [0, 7, 8] {
        flip(&lists[0], at);
        let r = spillway::check(dir.path(), false).unwrap();
        flip(&lists[0], at);
        let about: Vec<&String> = r
            .problems
            .iter()
            .filter(|p| p.contains(&name(&lists[0])))
            .collect();
        assert!(!about.is_empty(), "byte {at}: {:?}", r.problems);
        assert!(
            r.problems
                .iter()
                .all(|p| !p.contains("not a Spillway store")),
            "byte {at}: {:?}",
            r.problems
        );
        if at < 8 {
            assert!(
                about.iter().all(|p| p.contains("corruption")),
                "byte {at}: {about:?}"
            );
        }
    }
}

#[test]
fn check_tells_a_missing_folder_a_file_and_an_unreadable_folder_apart() {
    let dir = tempfile::tempdir().unwrap();
    let reason = |path: &Path| match spillway::check(path, false) {
        Err(spillway::Error::NotAStore { reason, .. }) => reason,
        other => panic!("{}: {other:?}", path.display()),
    };
    assert!(reason(&dir.path().join("nothing")).contains("does not exist"));
    let file = dir.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    assert_eq!(reason(&file), "not a folder");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(reason(&empty).contains("no MANIFEST"));

    // A MANIFEST that cannot be opened is not a missing one: the error says why.
    let looped = dir.path().join("looped");
    std::fs::create_dir(&looped).unwrap();
    std::os::unix::fs::symlink("MANIFEST", looped.join("MANIFEST")).unwrap();
    match spillway::check(&looped, false) {
        Err(e @ spillway::Error::Io { .. }) => assert!(e.to_string().contains("MANIFEST"), "{e}"),
        other => panic!("{other:?}"),
    }

    // A folder this user may not read (a root user reads it all the same: nothing to test).
    use std::os::unix::fs::PermissionsExt;
    let closed = dir.path().join("closed");
    store(&closed);
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read_dir(&closed).is_err() {
        let r = spillway::check(&closed, false);
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
        match r {
            Err(e) => assert_eq!(
                e.io_kind(),
                Some(std::io::ErrorKind::PermissionDenied),
                "{e}"
            ),
            Ok(r) => panic!("{r:?}"),
        }
    } else {
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Rewrite `path`'s trailer and metadata checksum after `edit` changed its metadata (the
/// filter, index and sketch between `filter_offset` and the trailer).
fn edit_metadata(path: &Path, edit: impl FnOnce(&mut [u8], u64)) {
    let mut data = std::fs::read(path).unwrap();
    let t = data.len() - 48;
    let u64_at = |d: &[u8], i: usize| u64::from_le_bytes(d[i..i + 8].try_into().unwrap());
    let pages = u64_at(&data, t);
    let (filter_offset, filter_len) = (u64_at(&data, t + 16), u64_at(&data, t + 24));
    let index = (filter_offset + filter_len) as usize;
    edit(&mut data[index..t], pages);
    // Format 9 leaves a fingerprint section (its first byte 0xF6) out of the checksum.
    let fingerprints = filter_len > 0 && data[filter_offset as usize] == 0xF6;
    let covered = if fingerprints {
        index
    } else {
        filter_offset as usize
    };
    let crc = crc_fast::crc32_iscsi(&data[covered..t]);
    data[t + 32..t + 36].copy_from_slice(&crc.to_le_bytes());
    let crc = crc_fast::crc32_iscsi(&data[t..t + 36]);
    data[t + 36..t + 40].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, data).unwrap();
}

/// Format 7 keeps a page's route rounded between the pages; `check` recomputes it, so a list
/// whose index says otherwise — with every checksum right — is a problem of that file.
#[test]
fn a_page_route_that_is_not_the_rounded_one_is_found() {
    let dir = tempfile::tempdir().unwrap();
    store(dir.path());
    let lists = common::files_with_extension(dir.path(), "list");
    let edited = lists
        .iter()
        .find(|p| std::fs::metadata(p).unwrap().len() > 3 * 4096)
        .expect("a list of several pages");
    // The index: key order u8, then per page route u64 | offset u64. Page 1's route plus one
    // still falls between the pages, but is not the one the writer chose.
    edit_metadata(edited, |index, pages| {
        assert!(pages > 1);
        let at = 1 + 16;
        let route = u64::from_le_bytes(index[at..at + 8].try_into().unwrap());
        index[at..at + 8].copy_from_slice(&(route + 1).to_le_bytes());
    });
    let r = spillway::check(dir.path(), false).unwrap();
    let file = name(edited);
    assert!(
        r.problems
            .iter()
            .any(|p| p.contains(&file) && p.contains("page 1") && p.contains("page index")),
        "{:?}",
        r.problems
    );
}

/// Rewrite page 0 of `path` (a list whose first page ends at the first block's end) with its
/// segment directory changed by `edit` (the directory, from its first entry to its count),
/// every checksum made right again: the directory's, and each segment's for its new bytes.
fn edit_segments(path: &Path, edit: impl FnOnce(&mut [u8])) {
    let mut data = std::fs::read(path).unwrap();
    let page = &mut data[16..4096];
    let n = page.len();
    let count = usize::from(u16::from_le_bytes([page[n - 8], page[n - 7]]));
    assert!(count >= 2, "{count} segments");
    let dir = n - 8 - 16 * count;
    edit(&mut page[dir..n - 8]);
    let mut start = 0;
    for i in 0..count {
        let at = dir + 16 * i;
        let end = u32::from_le_bytes(page[at + 8..at + 12].try_into().unwrap()) as usize;
        let crc = crc_fast::crc32_iscsi(&page[start..end]);
        page[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        start = end;
    }
    let crc = crc_fast::crc32_iscsi(&page[dir..n - 4]);
    page[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, data).unwrap();
}

/// A page's segment directory (list format 10) is checked against the records, not only by
/// its checksum: a segment's route that is not its first record's, and a segment that starts
/// inside a record, are problems of that file.
#[test]
fn a_segment_directory_that_does_not_match_its_records_is_found() {
    type Edit = fn(&mut [u8]);
    let edits: [(Edit, &str); 2] = [
        (
            |dir| {
                let route = u64::from_le_bytes(dir[16..24].try_into().unwrap());
                dir[16..24].copy_from_slice(&(route ^ 1).to_le_bytes());
            },
            "segment's route",
        ),
        (
            |dir| {
                let end = u32::from_le_bytes(dir[8..12].try_into().unwrap());
                dir[8..12].copy_from_slice(&(end + 1).to_le_bytes());
            },
            "a segment that does not start at a record",
        ),
    ];
    for (edit, says) in edits {
        let dir = tempfile::tempdir().unwrap();
        // Pages of a block: page 0 ends where the first block does, in segments.
        store_with(dir.path(), options().page_size(4096).node_size(256 << 10));
        let lists = common::files_with_extension(dir.path(), "list");
        let edited = lists
            .iter()
            .find(|p| std::fs::metadata(p).unwrap().len() > 3 * 4096)
            .expect("a list of several pages");
        assert!(spillway::check(dir.path(), false).unwrap().is_sound());
        edit_segments(edited, edit);
        let r = spillway::check(dir.path(), false).unwrap();
        let file = name(edited);
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains(&file) && p.contains(says)),
            "{says}: {:?}",
            r.problems
        );
    }
}

/// A store of list format 6 (the fuzz targets' hashed seed store before format 7: its routes are
/// first routes, not rounded) checks sound, takes new writes in format 7 beside them, and
/// checks sound again.
#[test]
fn a_store_of_list_format_6_checks_sound_and_grows_in_format_7() {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-v6-hashed");
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&seed).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.path().join(e.file_name())).unwrap();
    }
    let r = spillway::check(dir.path(), false).unwrap();
    assert!(r.is_sound() && r.pages > 1, "{r:?}");
    let old = common::list_file_names(dir.path());
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let before = db.stats().live_keys;
    for i in 0..2000u32 {
        db.put(format!("new{i}"), format!("value {i}")).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    assert!(common::list_file_names(dir.path()).len() > old.len());
    let r = spillway::check(dir.path(), false).unwrap();
    assert!(r.is_sound(), "{:?}", r.problems);
    let db = Db::open(dir.path(), Options::default()).unwrap();
    for i in (0..2000u32).step_by(7) {
        assert_eq!(
            db.get(format!("new{i}")).unwrap(),
            Some(format!("value {i}").into())
        );
    }
    assert!(db.stats().live_keys >= before);
}
