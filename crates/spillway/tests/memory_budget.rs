//! The memory budget: the root buffer takes what the lists' filters, indexes and sketches leave
//! of it, and the budget can be turned while the store runs (TurtleKV's knob).

use spillway::{Db, Error, Options, WriteBatch, WriteOptions};

fn load(db: &Db, from: u32, to: u32) {
    for chunk in (from..to).collect::<Vec<_>>().chunks(1000) {
        let mut b = WriteBatch::new();
        for &i in chunk {
            b.put(i.to_be_bytes(), [i as u8; 60]);
        }
        db.write(b, WriteOptions::NO_SYNC).unwrap();
    }
}

fn check_all(db: &Db, n: u32) {
    for i in (0..n).step_by(97) {
        assert_eq!(db.get(i.to_be_bytes()).unwrap(), Some(vec![i as u8; 60]));
    }
}

/// A smaller budget means smaller buffers, so more spills of the same data; the buffer never
/// takes more than its share of what the lists leave of the budget.
#[test]
fn the_buffer_takes_what_the_lists_leave() {
    let n = 300_000;
    let mut spills = Vec::new();
    for budget in [4 << 20, 16 << 20] {
        let dir = tempfile::tempdir().unwrap();
        let opts = Options::default()
            .memory_budget(budget)
            .node_size(8 << 20)
            .fan_out(8);
        let db = Db::open(dir.path(), opts).unwrap();
        load(&db, 0, n);
        db.flush().unwrap();
        let s = db.stats();
        assert_eq!(s.memory_budget, budget as u64);
        // Two buffers (background spills) share what the lists left at the last spill.
        assert!((1 << 20..=budget as u64 / 2).contains(&s.buffer_limit));
        // Planned again now, against the lists as they stand.
        db.set_memory_budget(Some(budget)).unwrap();
        let s = db.stats();
        let metadata = s.metadata_bytes();
        assert!(metadata > 0);
        let share = ((budget as u64).saturating_sub(metadata) / 2).max(1 << 20);
        assert_eq!(
            s.buffer_limit, share,
            "budget {budget}, {metadata} bytes of lists"
        );
        check_all(&db, n);
        spills.push(s.root_spills);
    }
    assert!(
        spills[0] > spills[1],
        "root spills at 4 MiB and 16 MiB budgets: {spills:?}"
    );
}

/// Turned at run time: a budget smaller than the buffer's contents spills it at the next
/// write; removing the budget gives `root_buffer_size` back. Nothing written is lost.
#[test]
fn the_budget_turns_while_the_store_runs() {
    let dir = tempfile::tempdir().unwrap();
    // Nodes of 8 MiB: a budget leaves buffers down to 1 MiB (an eighth of a node).
    let opts = Options::default().node_size(8 << 20);
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    load(&db, 0, 50_000); // about 3.5 MiB, under the default 64 MiB buffer
    assert_eq!(db.stats().root_spills, 0);
    assert_eq!(db.stats().buffer_limit, 64 << 20);
    db.set_memory_budget(Some(4 << 20)).unwrap();
    assert!(db.stats().buffer_limit <= 2 << 20);
    load(&db, 50_000, 50_001);
    db.flush().unwrap();
    assert!(db.stats().root_spills >= 1, "the next write spilled");
    db.set_memory_budget(None).unwrap();
    assert_eq!(db.stats().buffer_limit, 64 << 20);
    assert_eq!(db.stats().memory_budget, 0);
    check_all(&db, 50_001);
    drop(db);
    let db = Db::open(dir.path(), opts).unwrap();
    check_all(&db, 50_001);
}

#[test]
fn budgets_out_of_range_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options::default().memory_budget(1 << 20);
    match Db::open(dir.path(), opts) {
        Err(Error::InvalidOption { name, .. }) => assert_eq!(name, "memory_budget"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    let db = Db::open(dir.path(), Options::default()).unwrap();
    match db.set_memory_budget(Some(1 << 41)) {
        Err(Error::InvalidOption { name, .. }) => assert_eq!(name, "memory_budget"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        db.stats().buffer_limit,
        64 << 20,
        "a refused budget changes nothing"
    );
}
