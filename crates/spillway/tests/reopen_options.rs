//! Every option may change between one open and the next: a populated store reopened with any
//! option raised or lowered keeps every acknowledged record, takes new writes, and reopens
//! again with the original options. Nodes are tiny and pages small, so that internal nodes
//! hold lists (records spilled to them and not yet pushed down) when the options change.

use std::collections::BTreeMap;

use spillway::{Db, Options, WriteBatch, WriteOptions};

mod common;
use common::Rng;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u64 = 400;

fn base() -> Options {
    Options::default()
        .root_buffer_size(2048)
        .node_size(256)
        .fan_out(4)
        .fast_split_ratio(2)
        .page_size(96)
}

fn key(i: u64) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

/// Random batches of puts and deletes, applied to the store and the model.
fn write_some(db: &Db, model: &mut Model, rng: &mut Rng, batches: usize) {
    for _ in 0..batches {
        let mut batch = WriteBatch::new();
        for _ in 0..rng.range(1, 12) {
            let k = key(rng.below(KEYS));
            if rng.below(6) == 0 {
                batch.delete(&k);
                model.remove(&k);
            } else {
                let v = format!("v{}", rng.next_u64()).repeat(rng.range(1, 4) as usize);
                batch.put(&k, v.as_bytes());
                model.insert(k, v.into_bytes());
            }
        }
        db.write(batch, WriteOptions::NO_SYNC).unwrap();
    }
}

fn verify(db: &Db, model: &Model, when: &str) {
    for i in 0..KEYS {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap(),
            model.get(&k).cloned(),
            "{when}: key {i}"
        );
    }
}

/// Populate with `base()`, reopen with `changed`, write, reopen with `base()` again; compare
/// every key with the model at each step, and the files on disk with the files in use.
fn reopen_with(name: &str, changed: Options) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(common::mix(&[name.len() as u64, name.as_bytes()[0].into()]));
    let mut model = Model::new();

    let db = Db::open(dir.path(), base()).unwrap();
    write_some(&db, &mut model, &mut rng, 100);
    let before = db.stats();
    assert!(
        before.internal_nodes > 0 && before.lists > 0,
        "{name}: the store must have grown internal nodes: {before:?}"
    );
    db.close().unwrap();

    for round in 0..2 {
        let db = Db::open(dir.path(), changed.clone()).unwrap();
        verify(
            &db,
            &model,
            &format!("{name}: reopened with the change ({round})"),
        );
        write_some(&db, &mut model, &mut rng, 50);
        verify(
            &db,
            &model,
            &format!("{name}: written with the change ({round})"),
        );
        db.flush().unwrap();
        assert_eq!(db.files_in_use(), common::list_file_names(dir.path()));
        db.close().unwrap();
    }

    let db = Db::open(dir.path(), base()).unwrap();
    verify(&db, &model, &format!("{name}: back to the base options"));
    write_some(&db, &mut model, &mut rng, 50);
    verify(
        &db,
        &model,
        &format!("{name}: written with the base options"),
    );
    db.flush().unwrap();
    db.check_tree().unwrap();
    db.close().unwrap();
    let report = spillway::check(dir.path(), false).unwrap();
    assert!(report.is_sound(), "{name}: {:?}", report.problems);
}

macro_rules! changed {
    ($($field:ident = $value:expr),+) => {
        base()$(.$field($value))+
    };
}

#[test]
fn fan_out_down_and_up() {
    reopen_with("fan_out down", changed!(fan_out = 2, node_size = 512));
    reopen_with("fan_out up", changed!(fan_out = 64));
}

#[test]
fn node_size_down_and_up() {
    reopen_with("node_size down", changed!(node_size = 192));
    reopen_with("node_size up", changed!(node_size = 1 << 20));
}

#[test]
fn root_buffer_size_down_and_up() {
    reopen_with("root_buffer_size down", changed!(root_buffer_size = 1024));
    reopen_with("root_buffer_size up", changed!(root_buffer_size = 1 << 20));
}

#[test]
fn page_size_down_and_up() {
    reopen_with("page_size down", changed!(page_size = 64));
    reopen_with("page_size up", changed!(page_size = 4096, node_size = 8192));
}

#[test]
fn split_and_filter_options_down_and_up() {
    reopen_with("fast_split_ratio down", changed!(fast_split_ratio = 0));
    reopen_with("fast_split_ratio up", changed!(fast_split_ratio = 64));
    reopen_with(
        "filter_bits_per_key down",
        changed!(filter_bits_per_key = 0),
    );
    reopen_with("filter_bits_per_key up", changed!(filter_bits_per_key = 32));
}

#[test]
fn write_path_options_toggled() {
    reopen_with("sync_by_default", changed!(sync_by_default = true));
    reopen_with("background_spills off", changed!(background_spills = false));
    reopen_with("create_if_missing off", changed!(create_if_missing = false));
}
