//! Optimistic transactions: serializability against a serial model, the classic anomalies
//! (lost update, write skew, phantoms), read-your-writes inside scans, and a bank whose total
//! must hold in every snapshot, under eight threads and across a real `SIGKILL`.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use spillway::{
    Db, Error, KeyOrder, Keyspace, KeyspaceOptions, Options, Transaction, WriteBatch, WriteOptions,
};

fn ordered() -> KeyspaceOptions {
    KeyspaceOptions::default().key_order(KeyOrder::Ordered)
}

fn u64_of(v: Option<Vec<u8>>) -> u64 {
    u64::from_le_bytes(v.expect("present").try_into().expect("8 bytes"))
}

/// Retry `body` in new transactions until its commit does not conflict; the number of
/// conflicts.
fn with_retry(db: &Db, mut body: impl FnMut(&mut Transaction) -> spillway::Result<()>) -> u64 {
    let mut conflicts = 0;
    loop {
        let mut tx = db.transaction();
        body(&mut tx).unwrap();
        match tx.commit_with(WriteOptions::NO_SYNC) {
            Ok(()) => return conflicts,
            Err(Error::Conflict) => conflicts += 1,
            Err(e) => panic!("commit: {e}"),
        }
    }
}

#[test]
fn a_lost_update_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.default_keyspace();
    db.put("n", 1u64.to_le_bytes()).unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    let na = u64_of(a.get(&ks, "n").unwrap());
    let nb = u64_of(b.get(&ks, "n").unwrap());
    a.put(&ks, "n", (na + 1).to_le_bytes()).unwrap();
    b.put(&ks, "n", (nb + 1).to_le_bytes()).unwrap();
    a.commit().unwrap();
    assert!(matches!(b.check(), Err(Error::Conflict)));
    assert!(matches!(b.commit(), Err(Error::Conflict)));
    assert_eq!(u64_of(db.get("n").unwrap()), 2, "b applied nothing");
    // A plain write counts as a commit too.
    let mut c = db.transaction();
    let n = u64_of(c.get(&ks, "n").unwrap());
    db.put("n", 10u64.to_le_bytes()).unwrap();
    c.put(&ks, "n", (n + 1).to_le_bytes()).unwrap();
    assert!(matches!(c.commit(), Err(Error::Conflict)));
    // Blind writes never conflict; dropping a transaction applies nothing.
    let mut d = db.transaction();
    let mut e = db.transaction();
    d.put(&ks, "n", "d").unwrap();
    e.put(&ks, "n", "e").unwrap();
    e.commit().unwrap();
    d.commit().unwrap();
    assert_eq!(db.get("n").unwrap().as_deref(), Some(&b"d"[..]));
    let mut f = db.transaction();
    f.put(&ks, "dropped", "x").unwrap();
    drop(f);
    assert_eq!(db.get("dropped").unwrap(), None);
}

/// Two doctors on call; each transaction lets its doctor off if the other is still on call.
/// Under snapshot isolation both commit and nobody is on call; here one must fail.
#[test]
fn write_skew_is_prevented() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let doctors = db.keyspace("doctors", KeyspaceOptions::default()).unwrap();
    doctors.put("alice", "on").unwrap();
    doctors.put("bob", "on").unwrap();
    let mut txs: Vec<Transaction> = (0..2).map(|_| db.transaction()).collect();
    for (tx, me) in txs.iter_mut().zip(["alice", "bob"]) {
        let on = ["alice", "bob"]
            .iter()
            .filter(|d| tx.get(&doctors, d).unwrap().as_deref() == Some(b"on"))
            .count();
        assert_eq!(on, 2);
        tx.put(&doctors, me, "off").unwrap();
    }
    let results: Vec<_> = txs.into_iter().map(Transaction::commit).collect();
    assert!(results[0].is_ok());
    assert!(matches!(results[1], Err(Error::Conflict)));
    let on = ["alice", "bob"]
        .iter()
        .filter(|d| doctors.get(d).unwrap().as_deref() == Some(b"on"))
        .count();
    assert_eq!(on, 1, "someone stays on call");
}

/// Two transactions each count the jobs in a range and insert one if there are fewer than
/// two: a phantom — the other's insert into the range scanned — must fail the second.
#[test]
fn a_phantom_in_a_scanned_range_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let jobs = db.keyspace("jobs", ordered()).unwrap();
    jobs.put("job:1", "").unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    for (tx, new) in [(&mut a, "job:2"), (&mut b, "job:3")] {
        let n = tx.range(&jobs, "job:".."job;").unwrap().count();
        assert_eq!(n, 1);
        tx.put(&jobs, new, "").unwrap();
    }
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(Error::Conflict)));
    assert_eq!(jobs.prefix("job:").unwrap().count(), 2);

    // A write outside the range scanned is no conflict; one inside a prefix scanned is.
    let mut c = db.transaction();
    assert_eq!(c.prefix(&jobs, "job:").unwrap().count(), 2);
    jobs.put("other", "").unwrap();
    c.put(&jobs, "job:4", "").unwrap();
    c.commit().unwrap();
    let mut d = db.transaction();
    assert_eq!(d.prefix(&jobs, "job:").unwrap().count(), 3);
    jobs.put("job:0", "").unwrap();
    d.put(&jobs, "flag", "").unwrap();
    assert!(matches!(d.commit(), Err(Error::Conflict)));

    // A hashed keyspace scanned whole: any write to it since is a conflict.
    let set = db.keyspace("set", KeyspaceOptions::default()).unwrap();
    let mut e = db.transaction();
    assert_eq!(e.iter(&set).unwrap().count(), 0);
    set.put("x", "").unwrap();
    e.put(&set, "y", "").unwrap();
    assert!(matches!(e.commit(), Err(Error::Conflict)));
}

/// A transaction's scans show its own puts, deletes and merges on top of its snapshot, both
/// ways, and its point reads do too; another keyspace's writes do not leak in.
#[test]
fn reads_see_the_transactions_own_writes_in_scans_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let opts = ordered().merge_operator(common::comma_append());
    let ks = db.keyspace("ks", opts).unwrap();
    let other = db.keyspace("other", ordered()).unwrap();
    let mut model = BTreeMap::new();
    for i in (0..40u8).step_by(2) {
        ks.put([i], [i]).unwrap();
        model.insert(vec![i], vec![i]);
    }
    db.flush().unwrap(); // half on disk, half in the buffer
    for i in (1..40u8).step_by(4) {
        ks.put([i], [i]).unwrap();
        model.insert(vec![i], vec![i]);
    }
    let mut tx = db.transaction();
    for i in 0..40u8 {
        match i % 5 {
            0 => {
                tx.put(&ks, [i], b"new").unwrap();
                model.insert(vec![i], b"new".to_vec());
            }
            1 => {
                tx.delete(&ks, [i]).unwrap();
                model.remove(&vec![i]);
            }
            2 => {
                tx.merge(&ks, [i], b"m").unwrap();
                let v = model.entry(vec![i]).or_default();
                if !v.is_empty() {
                    v.push(b',');
                }
                v.extend_from_slice(b"m");
            }
            _ => {}
        }
        tx.put(&other, [i], b"elsewhere").unwrap();
    }
    for i in 0..40u8 {
        assert_eq!(
            tx.get(&ks, [i]).unwrap(),
            model.get(&vec![i]).cloned(),
            "get {i}"
        );
    }
    let want: Vec<_> = model
        .range(vec![5]..vec![33])
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let fwd: Vec<_> = tx
        .range(&ks, [5u8]..[33u8])
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(fwd, want);
    let back: Vec<_> = tx
        .range(&ks, [5u8]..[33u8])
        .unwrap()
        .rev()
        .map(Result::unwrap)
        .collect();
    assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
    // Both ends at once meet without repeating or losing anything.
    let both = common::scan_both_ends(tx.range(&ks, [5u8]..[33u8]).unwrap());
    assert_eq!(both, want);
    let all: Vec<_> = tx.iter(&ks).unwrap().map(Result::unwrap).collect();
    assert_eq!(
        all,
        model
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    );
    tx.commit().unwrap();
    let after: Vec<_> = ks.iter().unwrap().map(Result::unwrap).collect();
    assert_eq!(after, all);
}

/// A batch spanning keyspaces is seen whole by every snapshot, and by a transaction.
#[test]
fn snapshots_see_cross_keyspace_batches_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), common::small_options()).unwrap());
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", ordered()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, a, b, stop) = (db.clone(), a.clone(), b.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = WriteBatch::new();
                batch.put_in(&a, "n", i.to_le_bytes());
                batch.put_in(&b, "n", i.to_le_bytes());
                batch.put("n", i.to_le_bytes());
                db.write(batch, WriteOptions::NO_SYNC).unwrap();
                i += 1;
            }
        })
    };
    for _ in 0..2000 {
        let snap = db.snapshot();
        let x = snap.get_in(&a, "n").unwrap();
        let y = snap.get_in(&b, "n").unwrap();
        let z = snap.get("n").unwrap();
        assert_eq!(x, y);
        assert_eq!(y, z);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

// The bank.

const ACCOUNTS: u64 = 40;
const START: u64 = 1000;

fn account(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// The accounts, in two keyspaces of both orders (even ones in the first), so that
/// transfers are transactions across keyspaces.
#[derive(Clone)]
struct Bank([Keyspace; 2]);

impl Bank {
    fn of(&self, i: u64) -> &Keyspace {
        &self.0[(i % 2) as usize]
    }
}

fn open_bank(db: &Db) -> Bank {
    let bank = Bank([
        db.keyspace("accounts", ordered()).unwrap(),
        db.keyspace("accounts-hashed", KeyspaceOptions::default())
            .unwrap(),
    ]);
    if bank.0[0].get(account(0)).unwrap().is_none() {
        let mut batch = WriteBatch::new();
        for i in 0..ACCOUNTS {
            batch.put_in(bank.of(i), account(i), START.to_le_bytes());
        }
        db.write(batch, WriteOptions::SYNC).unwrap();
    }
    bank
}

/// One transfer in a transaction: from a to b, if a has enough.
fn transfer(
    tx: &mut Transaction,
    bank: &Bank,
    a: u64,
    b: u64,
    amount: u64,
) -> spillway::Result<()> {
    let from = u64_of(tx.get(bank.of(a), account(a))?);
    let to = u64_of(tx.get(bank.of(b), account(b))?);
    if from >= amount {
        tx.put(bank.of(a), account(a), (from - amount).to_le_bytes())?;
        tx.put(bank.of(b), account(b), (to + amount).to_le_bytes())?;
    }
    Ok(())
}

fn total(bank: &Bank, snap: &spillway::Snapshot<'_>) -> u64 {
    let mut all = Vec::new();
    for ks in &bank.0 {
        all.extend(snap.iter_in(ks).unwrap().map(Result::unwrap));
    }
    assert_eq!(all.len() as u64, ACCOUNTS);
    all.iter().map(|(_, v)| u64_of(Some(v.clone()))).sum()
}

#[test]
fn a_bank_keeps_its_total_under_eight_threads() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path(), common::small_options()).unwrap());
    let ks = open_bank(&db);
    let conflicts = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let checker = {
        let (db, ks, stop) = (db.clone(), ks.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut checks = 0;
            while !stop.load(Ordering::Relaxed) || checks == 0 {
                assert_eq!(total(&ks, &db.snapshot()), ACCOUNTS * START);
                checks += 1;
            }
        })
    };
    let workers: Vec<_> = (0..8u64)
        .map(|t| {
            let (db, ks, conflicts) = (db.clone(), ks.clone(), conflicts.clone());
            std::thread::spawn(move || {
                let mut rng = common::Rng::new(t + 1);
                for _ in 0..400 {
                    let a = rng.below(ACCOUNTS);
                    let b = (a + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                    let amount = rng.range(1, 50);
                    let n = with_retry(&db, |tx| transfer(tx, &ks, a, b, amount));
                    conflicts.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    checker.join().unwrap();
    assert_eq!(total(&ks, &db.snapshot()), ACCOUNTS * START);
    // Eight threads on forty accounts do collide: the check is not vacuous.
    assert!(conflicts.load(Ordering::Relaxed) > 0);
}

const CHILD_ENV: &str = "SPILLWAY_BANK_CHILD";

/// The child of the crash test: transfers with synced commits until killed. A no-op unless
/// `SPILLWAY_BANK_CHILD` names a folder.
#[test]
fn bank_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let db = Arc::new(Db::open(&dir, common::tiny_options()).unwrap());
    let ks = open_bank(&db);
    println!("ready");
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let (db, ks) = (db.clone(), ks.clone());
            std::thread::spawn(move || {
                let mut rng = common::Rng::new(std::process::id() as u64 * 8 + t);
                loop {
                    let a = rng.below(ACCOUNTS);
                    let b = (a + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                    loop {
                        let mut tx = db.transaction();
                        transfer(&mut tx, &ks, a, b, rng.range(1, 50)).unwrap();
                        match tx.commit_with(if t % 2 == 0 {
                            WriteOptions::SYNC
                        } else {
                            WriteOptions::NO_SYNC
                        }) {
                            Ok(()) => break,
                            Err(Error::Conflict) => continue,
                            Err(e) => panic!("child commit: {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
}

/// Transfers across spills, killed with `SIGKILL` at random moments: every reopen finds the
/// total intact (each transaction was recovered whole or not at all), and the store sound.
#[test]
fn a_bank_keeps_its_total_across_kills() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = common::Rng::new(0xba4c);
    let mut spilled = false;
    for round in 0..6 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "bank_child", "--nocapture"])
            .env(CHILD_ENV, dir.path())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        while !line.contains("ready") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "round {round}: child ended"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(rng.range(50, 400)));
        child.kill().unwrap();
        child.wait().unwrap();
        spilled |= !common::list_file_names(dir.path()).is_empty();
        let db = Db::open(dir.path(), common::tiny_options()).unwrap();
        let ks = open_bank(&db);
        assert_eq!(
            total(&ks, &db.snapshot()),
            ACCOUNTS * START,
            "round {round}"
        );
        db.check_tree().unwrap();
        db.close().unwrap();
        assert!(spillway::check(dir.path(), false).unwrap().is_sound());
    }
    assert!(
        spilled,
        "the children never spilled: the test ran on buffers only"
    );
}

// Histories against a serial model.

#[derive(Clone, Debug)]
enum Step {
    Begin,
    /// Transaction (index among the open ones), then what it does.
    Get(usize, u8),
    Put(usize, u8, u8),
    Delete(usize, u8),
    Scan(usize, u8, u8),
    Commit(usize),
    /// A plain write outside any transaction.
    Plain(u8, u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Begin),
        4 => (0..4usize, 0..12u8).prop_map(|(t, k)| Step::Get(t, k)),
        3 => (0..4usize, 0..12u8, any::<u8>()).prop_map(|(t, k, v)| Step::Put(t, k, v)),
        1 => (0..4usize, 0..12u8).prop_map(|(t, k)| Step::Delete(t, k)),
        2 => (0..4usize, 0..12u8, 0..12u8).prop_map(|(t, a, b)| Step::Scan(t, a, b)),
        3 => (0..4usize).prop_map(Step::Commit),
        1 => (0..12u8, any::<u8>()).prop_map(|(k, v)| Step::Plain(k, v)),
    ]
}

/// What a transaction did, in order, to be replayed against the model at its commit.
#[derive(Clone, Debug)]
enum Did {
    Read(u8, Option<Vec<u8>>),
    Scan(u8, u8, Vec<(Vec<u8>, Vec<u8>)>),
    Write(u8, Option<Vec<u8>>),
}

struct Open {
    tx: Transaction,
    did: Vec<Did>,
    /// The model's commit count when it began.
    began: usize,
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Replay `did` on `model`: `Some(writes)` if every read gives what the transaction saw.
fn replay(model: &Model, did: &[Did]) -> Option<Model> {
    let mut view = model.clone();
    for d in did {
        match d {
            Did::Read(k, seen) => {
                if view.get(&vec![*k]) != seen.as_ref() {
                    return None;
                }
            }
            Did::Scan(a, b, seen) => {
                let now: Vec<_> = view
                    .range(vec![*a]..vec![*b])
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                if &now != seen {
                    return None;
                }
            }
            Did::Write(k, v) => match v {
                Some(v) => {
                    view.insert(vec![*k], v.clone());
                }
                None => {
                    view.remove(&vec![*k]);
                }
            },
        }
    }
    Some(view)
}

/// The keys a transaction read (`None`: a range).
fn read_set(did: &[Did]) -> Vec<(u8, u8)> {
    did.iter()
        .filter_map(|d| match d {
            Did::Read(k, _) => Some((*k, k + 1)),
            Did::Scan(a, b, _) => Some((*a, *b)),
            Did::Write(..) => None,
        })
        .collect()
}

fn run_history(steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), common::tiny_options()).unwrap();
    let ks = db.keyspace("t", ordered()).unwrap();
    let mut model = Model::new();
    // Every commit so far: the keys it wrote, and the model before it.
    let mut commits: Vec<Vec<u8>> = Vec::new();
    let mut before: Vec<Model> = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    for s in steps {
        match *s {
            Step::Begin => open.push(Open {
                tx: db.transaction(),
                did: Vec::new(),
                began: commits.len(),
            }),
            Step::Plain(k, v) => {
                ks.put([k], [v]).unwrap();
                before.push(model.clone());
                model.insert(vec![k], vec![v]);
                commits.push(vec![k]);
            }
            Step::Get(t, k) | Step::Delete(t, k) | Step::Put(t, k, _) | Step::Scan(t, k, _)
                if t >= open.len() =>
            {
                let _ = k;
            }
            Step::Commit(t) if t >= open.len() => {}
            Step::Get(t, k) => {
                let o = &mut open[t];
                let v = o.tx.get(&ks, [k]).unwrap();
                o.did.push(Did::Read(k, v));
            }
            Step::Put(t, k, v) => {
                let o = &mut open[t];
                o.tx.put(&ks, [k], [v]).unwrap();
                o.did.push(Did::Write(k, Some(vec![v])));
            }
            Step::Delete(t, k) => {
                let o = &mut open[t];
                o.tx.delete(&ks, [k]).unwrap();
                o.did.push(Did::Write(k, None));
            }
            Step::Scan(t, a, b) => {
                let (a, b) = (a.min(b), a.max(b));
                let o = &mut open[t];
                let seen: Vec<_> =
                    o.tx.range(&ks, [a]..[b])
                        .unwrap()
                        .map(Result::unwrap)
                        .collect();
                o.did.push(Did::Scan(a, b, seen));
            }
            Step::Commit(t) => {
                let o = open.remove(t);
                let wrote: Vec<u8> = o
                    .did
                    .iter()
                    .filter_map(|d| {
                        if let Did::Write(k, _) = d {
                            Some(*k)
                        } else {
                            None
                        }
                    })
                    .collect();
                let result = o.tx.commit_with(WriteOptions::NO_SYNC);
                match result {
                    Ok(()) if wrote.is_empty() => {
                        // Read-only: its snapshot was one point in the serial order.
                        let at = before.get(o.began).unwrap_or(&model);
                        assert!(replay(at, &o.did).is_some(), "an inconsistent snapshot");
                    }
                    Ok(()) => {
                        // Serializable: its reads hold at its commit point.
                        let after = replay(&model, &o.did);
                        let after = after.expect("a committed transaction read stale data");
                        before.push(std::mem::replace(&mut model, after));
                        commits.push(wrote);
                    }
                    Err(Error::Conflict) => {
                        // Refused only if a commit since it began wrote something it read.
                        let reads = read_set(&o.did);
                        let overlapped = commits[o.began..]
                            .iter()
                            .flatten()
                            .any(|k| reads.iter().any(|&(a, b)| (a..b).contains(k)));
                        assert!(overlapped, "a needless conflict: {:?}", o.did);
                    }
                    Err(e) => panic!("commit: {e}"),
                }
            }
        }
    }
    drop(open);
    let all: Vec<_> = ks.iter().unwrap().map(Result::unwrap).collect();
    assert_eq!(all, model.into_iter().collect::<Vec<_>>());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn histories_are_serializable(steps in proptest::collection::vec(step(), 1..120)) {
        run_history(&steps);
    }
}

/// Dropping or swapping a keyspace changes every key of it: a transaction that read it
/// before fails, whatever it writes.
#[test]
fn a_keyspace_dropped_or_swapped_since_a_read_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let a = db.keyspace("a", KeyspaceOptions::default()).unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    a.put("k", "1").unwrap();
    let mut tx = db.transaction();
    assert!(tx.get(&a, "k").unwrap().is_some());
    tx.put(&b, "seen", "1").unwrap();
    db.swap_keyspaces("a", "b").unwrap();
    assert!(matches!(tx.commit(), Err(Error::Conflict)));

    let mut tx = db.transaction();
    assert!(tx.get(&b, "k").unwrap().is_some());
    tx.put(&a, "seen", "1").unwrap();
    db.drop_keyspace("b").unwrap();
    let b = db.keyspace("b", KeyspaceOptions::default()).unwrap();
    assert!(matches!(tx.commit(), Err(Error::Conflict)));
    assert_eq!(a.get("seen").unwrap(), None);
    // One that read neither is unaffected.
    let mut tx = db.transaction();
    tx.put(&a, "blind", "1").unwrap();
    db.drop_keyspace("b").unwrap();
    tx.commit().unwrap();
    drop(b);
}

/// What a transaction does to an ordered keyspace, against a `BTreeMap`.
#[derive(Clone, Debug)]
enum TxOp {
    Put(u8, u8),
    Delete(u8),
    Merge(u8, u8),
    /// `a..b`; an empty or inverted range deletes nothing.
    DeleteRange(u8, u8),
    DeleteFrom(u8),
    Clear,
    Get(u8),
    Scan(u8, u8),
}

fn tx_op() -> impl Strategy<Value = TxOp> {
    prop_oneof![
        3 => (0..48u8, any::<u8>()).prop_map(|(k, v)| TxOp::Put(k, v)),
        1 => (0..48u8).prop_map(TxOp::Delete),
        2 => (0..48u8, any::<u8>()).prop_map(|(k, v)| TxOp::Merge(k, v)),
        2 => (0..48u8, 0..48u8).prop_map(|(a, b)| TxOp::DeleteRange(a, b)),
        1 => (0..48u8).prop_map(TxOp::DeleteFrom),
        1 => Just(TxOp::Clear),
        2 => (0..48u8).prop_map(TxOp::Get),
        2 => (0..48u8, 0..48u8).prop_map(|(a, b)| TxOp::Scan(a, b)),
    ]
}

/// A transaction's range deletes and clears against a model: every read inside it (gets,
/// scans forward, backward and from both ends at once) sees the snapshot less what its range
/// deletes cover, with its own writes after them on top — writes made before a range delete
/// it covers are gone with the rest — and the commit leaves the keyspace as the model, also
/// after a reopen. A reader outside sees nothing of it until the commit.
fn run_range_deletes_in_a_transaction(ops: &[TxOp], store: &Options) {
    let dir = tempfile::tempdir().unwrap();
    // Made first, so that options that open only an existing store open it.
    Db::open(dir.path(), store.clone().create_if_missing(true))
        .unwrap()
        .close()
        .unwrap();
    let opts = ordered().merge_operator(common::comma_append());
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    {
        let db = Db::open(dir.path(), store.clone()).unwrap();
        let ks = db.keyspace("ks", opts.clone()).unwrap();
        for i in (0..48u8).step_by(3) {
            ks.put([i], [i]).unwrap();
            model.insert(vec![i], vec![i]);
            if i == 24 {
                db.flush().unwrap(); // some on disk, some in the buffer
            }
        }
        let before = model.clone();
        let mut tx = db.transaction();
        let slice = |m: &BTreeMap<Vec<u8>, Vec<u8>>, a: u8, b: u8| -> Vec<(Vec<u8>, Vec<u8>)> {
            if a >= b {
                return Vec::new();
            }
            m.range(vec![a]..vec![b])
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        for op in ops {
            match *op {
                TxOp::Put(k, v) => {
                    tx.put(&ks, [k], [v]).unwrap();
                    model.insert(vec![k], vec![v]);
                }
                TxOp::Delete(k) => {
                    tx.delete(&ks, [k]).unwrap();
                    model.remove(&vec![k]);
                }
                TxOp::Merge(k, m) => {
                    tx.merge(&ks, [k], [m]).unwrap();
                    let v = model.entry(vec![k]).or_default();
                    if !v.is_empty() {
                        v.push(b',');
                    }
                    v.push(m);
                }
                TxOp::DeleteRange(a, b) => {
                    tx.delete_range(&ks, [a]..[b]).unwrap();
                    model.retain(|k, _| !(a < b && k[0] >= a && k[0] < b));
                }
                TxOp::DeleteFrom(a) => {
                    tx.delete_range(&ks, [a]..).unwrap();
                    model.retain(|k, _| k[0] < a);
                }
                TxOp::Clear => {
                    tx.clear(&ks).unwrap();
                    model.clear();
                }
                TxOp::Get(k) => {
                    assert_eq!(
                        tx.get(&ks, [k]).unwrap(),
                        model.get(&vec![k]).cloned(),
                        "get {k}"
                    );
                }
                TxOp::Scan(a, b) => {
                    let want = slice(&model, a, b);
                    if a >= b {
                        continue;
                    }
                    let fwd: Vec<_> = tx
                        .range(&ks, [a]..[b])
                        .unwrap()
                        .map(Result::unwrap)
                        .collect();
                    assert_eq!(fwd, want, "scan {a}..{b}");
                    let back: Vec<_> = tx
                        .range(&ks, [a]..[b])
                        .unwrap()
                        .rev()
                        .map(Result::unwrap)
                        .collect();
                    assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
                    let both = common::scan_both_ends(tx.range(&ks, [a]..[b]).unwrap());
                    assert_eq!(both, want, "scan {a}..{b} from both ends");
                }
            }
        }
        let whole: Vec<_> = tx.iter(&ks).unwrap().map(Result::unwrap).collect();
        assert_eq!(whole, slice(&model, 0, 255));
        // Nothing shows outside before the commit.
        let outside: Vec<_> = ks.iter().unwrap().map(Result::unwrap).collect();
        assert_eq!(outside, slice(&before, 0, 255));
        tx.commit().unwrap();
        let after: Vec<_> = ks.iter().unwrap().map(Result::unwrap).collect();
        assert_eq!(after, slice(&model, 0, 255), "after the commit");
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), store.clone()).unwrap();
    let ks = db.keyspace("ks", opts).unwrap();
    let reopened: Vec<_> = ks.iter().unwrap().map(Result::unwrap).collect();
    assert_eq!(
        reopened,
        model.into_iter().collect::<Vec<_>>(),
        "after a reopen"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn range_deletes_in_a_transaction_match_a_model(ops in prop::collection::vec(tx_op(), 1..40)) {
        run_range_deletes_in_a_transaction(&ops, &common::tiny_options());
    }
}

/// Written before the range delete: gone with it; after: kept (later wins) — with every
/// option at both ends of its range.
#[test]
fn a_range_delete_in_a_transaction_before_and_after_writes_to_the_range() {
    let ops = [
        TxOp::Put(1, 1),
        TxOp::Merge(2, 7),
        TxOp::DeleteRange(0, 10),
        TxOp::Get(1),
        TxOp::Merge(3, 8),
        TxOp::Put(4, 4),
        TxOp::Scan(0, 48),
        TxOp::Clear,
        TxOp::Merge(6, 9),
        TxOp::Scan(0, 48),
    ];
    for (name, store) in common::option_extremes(KeyOrder::Hashed) {
        eprintln!("{name}");
        run_range_deletes_in_a_transaction(&ops, &store);
    }
}

/// A range delete in a transaction is blind: it conflicts with nothing by itself, and a
/// transaction that read a key another commit's range delete covers since is refused. In a
/// hashed keyspace only `clear` is a range.
#[test]
fn range_deletes_in_transactions_and_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let ks = db.keyspace("ks", ordered()).unwrap();
    let hashed = db.keyspace("hashed", KeyspaceOptions::default()).unwrap();
    ks.put("a", "1").unwrap();
    hashed.put("h", "1").unwrap();
    // Blind: another commit to the range meanwhile does not refuse it.
    let mut blind = db.transaction();
    blind.delete_range(&ks, "a".."z").unwrap();
    ks.put("b", "2").unwrap();
    blind.commit().unwrap();
    assert_eq!(ks.get("a").unwrap(), None);
    assert_eq!(
        ks.get("b").unwrap(),
        None,
        "written before the commit: covered"
    );
    // A read, then another commit's range delete over it: a conflict.
    ks.put("c", "3").unwrap();
    let mut reader = db.transaction();
    assert_eq!(reader.get(&ks, "c").unwrap(), Some(b"3".to_vec()));
    reader.put(&ks, "d", "4").unwrap();
    let mut other = db.transaction();
    other.delete_range(&ks, "c"..="c").unwrap();
    other.commit().unwrap();
    assert!(matches!(reader.commit(), Err(Error::Conflict)));
    assert_eq!(ks.get("d").unwrap(), None, "nothing of a refused commit");
    // A hashed keyspace takes `clear`, not a part of itself.
    let mut tx = db.transaction();
    assert!(matches!(
        tx.delete_range(&hashed, "a".."b"),
        Err(Error::NotOrdered)
    ));
    // Keys whose routes collide, written before and after the clear.
    let pairs = common::colliding_pairs();
    for (a, b) in &pairs {
        tx.put(&hashed, a, "before").unwrap();
        tx.put(&hashed, b, "before").unwrap();
    }
    tx.put(&hashed, "before", "x").unwrap();
    tx.clear(&hashed).unwrap();
    for (a, b) in &pairs {
        assert_eq!(tx.get(&hashed, a).unwrap(), None);
        assert_eq!(tx.get(&hashed, b).unwrap(), None);
    }
    tx.put(&hashed, &pairs[0].1, "after").unwrap();
    tx.put(&hashed, "after", "y").unwrap();
    assert_eq!(tx.get(&hashed, "h").unwrap(), None);
    assert_eq!(tx.get(&hashed, "before").unwrap(), None);
    let mut want = vec![b"after".to_vec(), pairs[0].1.clone()];
    want.sort();
    let mut seen: Vec<_> = tx.iter(&hashed).unwrap().map(|r| r.unwrap().0).collect();
    seen.sort();
    assert_eq!(seen, want);
    tx.commit().unwrap();
    let mut left: Vec<_> = hashed.iter().unwrap().map(|r| r.unwrap().0).collect();
    left.sort();
    assert_eq!(left, want);
}
