//! A panic inside the engine — a bug — in a background spill, in a spill run on the writer's
//! thread, or while appending to the log with other writers waiting: nobody hangs, later
//! writes are refused with `Error::Poisoned`, reads go on finding every acknowledged write,
//! `close` reports the failure, and a reopen recovers everything acknowledged. Panics are
//! injected in the file layer (`faults::panic_once`), at the operation a bug would interrupt.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use spillway::faults::{self, Op};
use spillway::{Db, Error, WriteBatch, WriteOptions};

/// Batch `n` writes keys `b{n}.0 .. b{n}.9`, never written by another batch.
fn batch(n: u64) -> WriteBatch {
    let mut b = WriteBatch::new();
    for j in 0..10 {
        b.put(
            format!("b{n}.{j}"),
            format!("value {n} {j} {}", "x".repeat(40)),
        );
    }
    b
}

/// How many keys of batch `n` the store holds: 0 or 10, never a part.
fn keys_of(db: &Db, n: u64) -> usize {
    let found = (0..10)
        .filter(|j| db.get(format!("b{n}.{j}")).unwrap().is_some())
        .count();
    assert!(found == 0 || found == 10, "batch {n} is there in part");
    found
}

/// What happened to a write. Unless acknowledged, it is in doubt: after a reopen, all of it
/// is there or none.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Acknowledged,
    /// `Error::Poisoned` (any other error fails the test).
    Refused,
    /// The panic reached this write's caller.
    Panicked,
}

fn write(db: &Db, n: u64, opts: WriteOptions) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| db.write(batch(n), opts))) {
        Ok(Ok(())) => Outcome::Acknowledged,
        Ok(Err(e)) => {
            assert!(matches!(e, Error::Poisoned { .. }), "write {n}: {e}");
            Outcome::Refused
        }
        Err(_panic) => Outcome::Panicked,
    }
}

/// Once a write was not acknowledged, no later one was.
fn stopped_for_good(outcomes: &[Outcome]) -> bool {
    let first = outcomes.iter().position(|&o| o != Outcome::Acknowledged);
    first.is_some_and(|f| outcomes[f..].iter().all(|&o| o != Outcome::Acknowledged))
}

/// Every acknowledged batch is readable now, and again after a reopen (which must succeed).
fn nothing_acknowledged_is_lost(db: Db, outcomes: &[Outcome], ctx: &str) {
    for (n, o) in outcomes.iter().enumerate() {
        if *o == Outcome::Acknowledged {
            assert_eq!(keys_of(&db, n as u64), 10, "{ctx}: batch {n} before reopen");
        }
    }
    let dir = db.path().to_owned();
    assert!(
        matches!(db.close(), Err(Error::Poisoned { .. })),
        "{ctx}: close must report the panic"
    );
    let db = Db::open(&dir, common::tiny_options()).unwrap();
    for (n, o) in outcomes.iter().enumerate() {
        let found = keys_of(&db, n as u64);
        if *o == Outcome::Acknowledged {
            assert_eq!(found, 10, "{ctx}: batch {n} after reopen");
        }
    }
    db.check_tree().unwrap();
    db.close().unwrap();
    assert!(spillway::check(&dir, false).unwrap().is_sound());
}

#[test]
fn a_panic_in_a_background_spill_stops_writes_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny_options()).unwrap();
    // A spill panics as it creates a list file (the fourth one created).
    let creates = faults::panic_once(dir.path(), &[Op::Create], ".list", 3);
    let mut outcomes = Vec::new();
    for n in 0..200 {
        outcomes.push(write(&db, n, WriteOptions::NO_SYNC));
    }
    assert_eq!(creates.hits(), 1, "no spill ran into the panic");
    assert!(matches!(db.flush(), Err(Error::Poisoned { .. })));
    outcomes.push(write(&db, 200, WriteOptions::SYNC));
    // The writer learns of the panic at the next freeze; it never reaches a writer's caller.
    assert!(stopped_for_good(&outcomes), "{outcomes:?}");
    assert!(!outcomes.contains(&Outcome::Panicked));
    drop(creates);
    nothing_acknowledged_is_lost(db, &outcomes, "background spill");
}

#[test]
fn a_panic_in_an_inline_spill_reaches_its_writer_and_stops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let opts = common::tiny_options().background_spills(false);
    let db = Db::open(dir.path(), opts).unwrap();
    let creates = faults::panic_once(dir.path(), &[Op::Create], ".list", 3);
    let outcomes: Vec<Outcome> = (0..200)
        .map(|n| write(&db, n, WriteOptions::NO_SYNC))
        .collect();
    assert_eq!(creates.hits(), 1, "no spill ran into the panic");
    // The write that ran the spill got the panic; every later one is refused.
    let first = outcomes.iter().position(|&o| o != Outcome::Acknowledged);
    assert_eq!(first.map(|f| outcomes[f]), Some(Outcome::Panicked));
    assert!(stopped_for_good(&outcomes), "{outcomes:?}");
    drop(creates);
    nothing_acknowledged_is_lost(db, &outcomes, "inline spill");
}

#[test]
fn a_panic_while_appending_to_the_log_fails_the_group_and_hangs_nobody() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 150;
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), common::tiny_options()).unwrap());
    let appends = faults::panic_once(dir.path(), &[Op::Write], ".log", 60);
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                (0..PER_THREAD)
                    .map(|i| {
                        let n = i * THREADS + t;
                        (n, write(&db, n, WriteOptions::SYNC))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut outcomes = vec![Outcome::Refused; (THREADS * PER_THREAD) as usize];
    for t in threads {
        // Every writer returns: the group's other members get an error, not a hang.
        let mine = t.join().expect("a panic escaped catch_unwind");
        let mine_outcomes: Vec<Outcome> = mine.iter().map(|&(_, o)| o).collect();
        assert!(stopped_for_good(&mine_outcomes), "{mine_outcomes:?}");
        for (n, o) in mine {
            outcomes[n as usize] = o;
        }
    }
    assert_eq!(appends.hits(), 1, "no append ran into the panic");
    assert_eq!(
        outcomes.iter().filter(|&&o| o == Outcome::Panicked).count(),
        1,
        "the panic reaches the group's leader only"
    );
    drop(appends);
    let db = Arc::into_inner(db).unwrap();
    nothing_acknowledged_is_lost(db, &outcomes, "log append");
}
