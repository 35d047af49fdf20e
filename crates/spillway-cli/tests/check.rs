//! `spillway check` end to end: a sound store exits 0; a flipped bit exits non-zero and names
//! the damaged file.

use std::process::{Command, Output};

fn spillway(args: &[&str], dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(args)
        .arg("--path")
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn check_passes_a_sound_store_and_fails_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let load = [
        "load",
        "--records",
        "30000",
        "--record-size",
        "16",
        "--root-buffer-mb",
        "0.1",
    ];
    assert!(spillway(&load, &store).status.success());

    let sound = spillway(&["check"], &store);
    let out = String::from_utf8_lossy(&sound.stdout);
    assert!(sound.status.success(), "{out}");
    assert!(out.contains("sound"), "{out}");

    let list = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "list"))
        .unwrap();
    let mut data = std::fs::read(&list).unwrap();
    data[100] ^= 1; // inside the first page
    std::fs::write(&list, data).unwrap();

    let damaged = spillway(&["check"], &store);
    let out = String::from_utf8_lossy(&damaged.stdout);
    assert_eq!(damaged.status.code(), Some(1), "{out}");
    let name = list.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        out.lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains(&name)),
        "{out}"
    );
}
