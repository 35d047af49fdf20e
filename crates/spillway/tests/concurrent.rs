//! Many threads writing with `sync: true` and reading at once, each owning a key range so the
//! expected final state is exact; then a reopen. Also shows group commit at work: the log is
//! fsynced fewer times than there are synced batches.

use std::sync::Arc;

use spillway::{Db, Options, WriteBatch, WriteOptions};

const THREADS: usize = 8;
const BATCHES: usize = 60;
const PER_BATCH: usize = 20;

fn key(t: usize, i: usize) -> String {
    format!("t{t}-k{i}")
}

#[test]
fn concurrent_synced_writers_and_readers_see_their_writes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default()
        .root_buffer_size(16 << 10)
        .node_size(16 << 10)
        .fan_out(4)
        .page_size(512);
    let db = Arc::new(Db::open(dir.path(), opts.clone()).unwrap());
    let writers: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for b in 0..BATCHES {
                    let mut batch = WriteBatch::new();
                    for j in 0..PER_BATCH {
                        let i = (b * PER_BATCH + j) % 500;
                        batch.put(key(t, i), format!("{b}:{j}"));
                    }
                    db.write(batch, WriteOptions::SYNC).unwrap();
                    // Read-your-writes from this thread, while others write and spill.
                    let i = (b * PER_BATCH) % 500;
                    assert_eq!(
                        db.get(key(t, i)).unwrap(),
                        Some(format!("{b}:0").into_bytes())
                    );
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let stats = db.stats();
    let batches = (THREADS * BATCHES) as u64;
    assert_eq!(stats.user_records_written, batches * PER_BATCH as u64);
    assert!(stats.root_spills > 0, "{stats:?}");
    assert!(stats.synced_write_groups <= batches);
    eprintln!(
        "{batches} synced batches from {THREADS} threads: {} log fsyncs in {} groups ({:.2} batches per group)",
        stats.synced_write_groups,
        stats.write_groups,
        batches as f64 / stats.write_groups as f64
    );
    let expect = |i: usize| {
        // The last batch b that wrote key i (the same in every thread), and its slot j.
        let last = (0..BATCHES * PER_BATCH)
            .filter(|n| n % 500 == i)
            .max()
            .unwrap();
        format!("{}:{}", last / PER_BATCH, last % PER_BATCH).into_bytes()
    };
    let check = |db: &Db| {
        for t in 0..THREADS {
            for i in 0..500 {
                assert_eq!(db.get(key(t, i)).unwrap(), Some(expect(i)), "t{t} k{i}");
            }
        }
    };
    check(&db);
    Arc::try_unwrap(db).ok().unwrap().close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db);
    db.check_tree().unwrap();
}
