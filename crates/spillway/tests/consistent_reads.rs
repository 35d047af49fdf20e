//! `multi_get` and snapshots read one point in time: with writers committing batches that set
//! a group of keys to one value, a reader's `multi_get` of the whole group — or its `get`s of
//! each key through one snapshot — never sees two values, not while the buffer fills, nor
//! across freezes, background spills and splits. A snapshot held while the store is rewritten
//! under it still reads exactly what was there when it was taken.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread;

use spillway::{Db, Options, WriteBatch, WriteOptions};

const GROUP: usize = 16;
const WRITERS: u64 = 2;
const BATCHES_PER_WRITER: u64 = 3000;

fn group_keys() -> Vec<Vec<u8>> {
    (0..GROUP)
        .map(|i| format!("group-{i:02}").into_bytes())
        .collect()
}

fn run(opts: Options) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), opts).unwrap());
    let done = Arc::new(AtomicBool::new(false));

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = db.clone();
            thread::spawn(move || {
                for n in 0..BATCHES_PER_WRITER {
                    let value = format!("w{w}-{n}");
                    let mut batch = WriteBatch::new();
                    for k in group_keys() {
                        batch.put(k, &value);
                    }
                    // Other keys too, so that the buffer fills and spills now and then.
                    batch.put(format!("filler-{w}-{n}"), [7u8; 64]);
                    db.write(batch, WriteOptions::NO_SYNC).unwrap();
                }
            })
        })
        .collect();

    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (db, done) = (db.clone(), done.clone());
            thread::spawn(move || {
                let keys = group_keys();
                let mut reads = 0u64;
                while !done.load(Relaxed) || reads < 100 {
                    // Every other read through a snapshot, one `get` per key.
                    let got = if reads.is_multiple_of(2) {
                        db.multi_get(&keys).unwrap()
                    } else {
                        let snapshot = db.snapshot();
                        keys.iter().map(|k| snapshot.get(k).unwrap()).collect()
                    };
                    assert!(
                        got.iter().all(|v| *v == got[0]),
                        "multi_get saw part of a batch: {:?}",
                        got.iter()
                            .map(|v| v.as_deref().map(String::from_utf8_lossy))
                            .collect::<Vec<_>>()
                    );
                    reads += 1;
                }
                reads
            })
        })
        .collect();

    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Relaxed);
    let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    assert!(reads >= 200);
    let stats = db.stats();
    assert_eq!(
        stats.user_records_written,
        WRITERS * BATCHES_PER_WRITER * (GROUP as u64 + 1)
    );
}

#[test]
fn multi_get_never_sees_part_of_a_batch_in_the_buffer() {
    run(Options::default());
}

#[test]
fn multi_get_never_sees_part_of_a_batch_across_spills() {
    run(Options::default()
        .root_buffer_size(16 << 10)
        .node_size(32 << 10)
        .fan_out(4)
        .page_size(512));
}

#[test]
fn a_snapshot_reads_what_was_there_while_the_store_is_rewritten_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(
        dir.path(),
        Options::default()
            .root_buffer_size(4 << 10)
            .node_size(8 << 10)
            .fan_out(4)
            .page_size(256),
    )
    .unwrap();
    let key = |i: u32| format!("key{i:04}");
    let mut model = std::collections::BTreeMap::new();
    let write_round = |round: u32, model: &mut std::collections::BTreeMap<String, String>| {
        for chunk in 0..40u32 {
            let mut batch = WriteBatch::new();
            for i in chunk * 25..chunk * 25 + 25 {
                if (i + round).is_multiple_of(7) {
                    batch.delete(key(i));
                    model.remove(&key(i));
                } else {
                    let v = format!("{i} in round {round}");
                    batch.put(key(i), &v);
                    model.insert(key(i), v);
                }
            }
            db.write(batch, WriteOptions::NO_SYNC).unwrap();
        }
    };
    write_round(0, &mut model);
    let snapshots: Vec<_> = (1..4)
        .map(|round| {
            let taken = (db.snapshot(), model.clone());
            write_round(round, &mut model);
            taken
        })
        .collect();
    db.flush().unwrap();
    assert!(db.stats().root_spills > 3, "{:?}", db.stats());
    let keys: Vec<String> = (0..1000).map(key).collect();
    for (snapshot, then) in &snapshots {
        let want: Vec<Option<Vec<u8>>> = keys
            .iter()
            .map(|k| then.get(k).map(|v| v.clone().into_bytes()))
            .collect();
        assert_eq!(snapshot.multi_get(&keys).unwrap(), want);
    }
    let now: Vec<Option<Vec<u8>>> = keys
        .iter()
        .map(|k| model.get(k).map(|v| v.clone().into_bytes()))
        .collect();
    assert_eq!(db.multi_get(&keys).unwrap(), now);
    drop(snapshots);
    // Once no snapshot pins them, the old tree's files go.
    db.flush().unwrap();
    let on_disk = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "list")
        })
        .count();
    assert_eq!(on_disk, db.files_in_use().len());
}
