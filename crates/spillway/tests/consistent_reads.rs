//! `multi_get` reads one point in time: with writers committing batches that set a group of
//! keys to one value, a reader's `multi_get` of the whole group never sees two values — not
//! while the buffer fills, nor across freezes, background spills and splits.

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
                    let got = db.multi_get(&keys).unwrap();
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
    run(Options {
        root_buffer_size: 16 << 10,
        node_size: 32 << 10,
        fan_out: 4,
        page_size: 512,
        ..Options::default()
    });
}
