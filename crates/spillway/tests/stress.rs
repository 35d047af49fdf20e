//! Many threads at once on a store with tiny buffers and nodes, so that root spills,
//! internal-node spills and splits of every kind happen constantly underneath them.
//!
//! Six writer threads each own a range of keys (no thread writes another's keys) and mix
//! single puts and deletes, one-record synced batches, multi-record batches of puts and deletes
//! (some with [`WriteOptions::SYNC`], some with [`WriteOptions::NO_SYNC`]), gets and
//! multi-gets. Each keeps a `BTreeMap` model of its keys and checks read-your-writes as it goes:
//! after every write it reads back every key the write touched, and its gets and multi-gets of
//! its own keys must equal the model exactly, while the other threads write and spill.
//!
//! Every record a writer produces has a number `seq` (per thread, going on across rounds), and
//! record `seq` of thread `t` is a pure function of `(seed, t, seq)`: which key it touches,
//! whether it is a put or a delete, and the value, which starts with `(t, key, seq)` followed by
//! filler derived from them. Two reader threads meanwhile read random keys of every writer with
//! `get` and `multi_get`, and check that any value they see is byte for byte one that the
//! owning thread really wrote for that key (record `seq` of that thread is a put of that key,
//! and the thread had issued it before the read returned), and that reads of a key never go
//! back in time (a reader never sees an older `seq` for a key after a newer one).
//!
//! Each round then stops, checks the open store against the union of the models, closes it,
//! reopens it and checks again: every key equals its thread's model exactly (with `get` and
//! `multi_get`), `check_tree()` is `Ok` and the list files on disk are exactly
//! `files_in_use()`. After three rounds, the counters summed over the rounds must show root
//! spills, internal-node spills, fast-splits, slow-splits and internal splits.
//!
//! The writers' operations are deterministic (seeded per thread and round); only the
//! interleaving depends on timing. `SPILLWAY_STRESS_SEED=S` changes the seed; every failure
//! names it, with the round, the thread and the key.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use spillway::{Db, Options, Stats, WriteBatch, WriteOptions};

mod common;

use common::{mix, Rng};

const SEED_ENV: &str = "SPILLWAY_STRESS_SEED";
const DEFAULT_SEED: u64 = 0x57E5_5ED5;
const WRITERS: u32 = 6;
const READERS: u32 = 2;
const ROUNDS: u32 = 3;
/// Operations per writer per round.
const OPS: u64 = 200;
/// Keys each writer owns; a third of its records go to the first `HOT_KEYS` of them.
const KEYS: u32 = 300;
const HOT_KEYS: u32 = 30;
/// Percent of records that are deletes.
const DELETE_PERCENT: u64 = 20;
const MAX_FILLER: u64 = 150;
const MAX_BATCH: u64 = 16;
/// A reader's pause after each read.
const READER_PAUSE: Duration = Duration::from_micros(100);

/// Tiny nodes, so that spills and splits of every kind happen every few writes.
fn options() -> Options {
    common::tiny_options()
}

/// A key index of one writer: a third of the time one of its hot keys.
fn key_index(rng: &mut Rng) -> u32 {
    if rng.below(3) == 0 {
        rng.below(u64::from(HOT_KEYS)) as u32
    } else {
        rng.below(u64::from(KEYS)) as u32
    }
}

/// Key `i` of writer `t`, of varying length.
fn key(t: u32, i: u32) -> Vec<u8> {
    let mut k = format!("stress:{t}:{i:04}:").into_bytes();
    k.resize(k.len() + (i % 9) as usize, b'x');
    k
}

const VALUE_HEADER: usize = 1 + 4 + 4 + 8;

/// Record `seq` of writer `t`: the key index it touches and, for a put, its value.
fn record(seed: u64, t: u32, seq: u64) -> (u32, Option<Vec<u8>>) {
    let mut rng = Rng::new(mix(&[seed, u64::from(t), seq, 0x12EC]));
    let i = key_index(&mut rng);
    let put = rng.below(100) >= DELETE_PERCENT;
    (i, put.then(|| value(seed, t, i, seq)))
}

/// The value record `seq` of writer `t` puts under its key `i`: a header naming `(t, i, seq)`,
/// then 0..=150 bytes of filler derived from the same numbers.
fn value(seed: u64, t: u32, i: u32, seq: u64) -> Vec<u8> {
    let mut rng = Rng::new(mix(&[seed, u64::from(t), u64::from(i), seq, 0xF111]));
    let filler = rng.below(MAX_FILLER + 1) as usize;
    let mut v = Vec::with_capacity(VALUE_HEADER + filler);
    v.push(b'S');
    v.extend_from_slice(&t.to_le_bytes());
    v.extend_from_slice(&i.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    while v.len() < VALUE_HEADER + filler {
        v.push(rng.next_u64() as u8);
    }
    v
}

/// `(t, i, seq)` of a value written by [`value`], if it has the header.
fn decode(v: &[u8]) -> Option<(u32, u32, u64)> {
    if v.len() < VALUE_HEADER || v[0] != b'S' {
        return None;
    }
    Some((
        u32::from_le_bytes(v[1..5].try_into().unwrap()),
        u32::from_le_bytes(v[5..9].try_into().unwrap()),
        u64::from_le_bytes(v[9..17].try_into().unwrap()),
    ))
}

/// A readable description of what a key holds, for failure messages.
fn describe(v: Option<&[u8]>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => match decode(v) {
            Some((t, i, seq)) => {
                format!("value of writer {t} key {i} seq {seq} ({} bytes)", v.len())
            }
            None => format!(
                "unrecognized {} bytes {:02x?}",
                v.len(),
                &v[..v.len().min(16)]
            ),
        },
    }
}

/// One writer's state, kept across rounds.
struct Writer {
    t: u32,
    /// Key index → value, for every key present.
    model: BTreeMap<u32, Vec<u8>>,
    /// The number of the writer's next record.
    next_seq: u64,
}

/// What the threads of one round did, for the summary.
#[derive(Default)]
struct Counts {
    writes: u64,
    synced_writes: u64,
    batches: u64,
    records: u64,
    gets: u64,
    reader_reads: u64,
    reader_values: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.writes += o.writes;
        self.synced_writes += o.synced_writes;
        self.batches += o.batches;
        self.records += o.records;
        self.gets += o.gets;
        self.reader_reads += o.reader_reads;
        self.reader_values += o.reader_values;
    }
}

/// Check one read of writer `w`'s key `i` against its model.
fn check_own(w: &Writer, i: u32, got: Option<&[u8]>, ctx: &str) {
    let want = w.model.get(&i).map(Vec::as_slice);
    assert!(
        got == want,
        "{ctx}: writer {} key {i} reads {}; its model says {} (read-your-writes broken)",
        w.t,
        describe(got),
        describe(want)
    );
}

/// One round of writer `w`: `OPS` operations, checking every read against its model.
fn run_writer(db: &Db, seed: u64, round: u32, w: &mut Writer, issued: &AtomicU64) -> Counts {
    let t = w.t;
    let mut rng = Rng::new(mix(&[seed, u64::from(t), u64::from(round), 0x0B5]));
    let mut counts = Counts::default();
    for n in 0..OPS {
        let ctx = format!("seed {seed} ({SEED_ENV}={seed}), round {round}, writer {t}, op {n}");
        let kind = rng.below(20);
        if kind >= 14 {
            // Reads of its own keys, which only this thread writes.
            let keys: Vec<u32> = if kind < 18 {
                vec![key_index(&mut rng)]
            } else {
                (0..rng.range(2, 10)).map(|_| key_index(&mut rng)).collect()
            };
            if let [i] = keys[..] {
                let got = db
                    .get(key(t, i))
                    .unwrap_or_else(|e| panic!("{ctx}: get of writer {t} key {i}: {e}"));
                check_own(w, i, got.as_deref(), &format!("{ctx}, get"));
            } else {
                let kb: Vec<Vec<u8>> = keys.iter().map(|&i| key(t, i)).collect();
                let got = db.multi_get(&kb).unwrap_or_else(|e| {
                    panic!("{ctx}: multi_get of writer {t} keys {keys:?}: {e}")
                });
                for (&i, got) in keys.iter().zip(&got) {
                    check_own(w, i, got.as_deref(), &format!("{ctx}, multi_get {keys:?}"));
                }
            }
            counts.gets += keys.len() as u64;
            continue;
        }
        // A write: 0..=7 one put or delete through `put`/`delete` (not synced by default),
        // 8 one record in a synced batch, 9..=13 a batch of 2..=16 records, a quarter of them
        // synced.
        let records = if kind <= 8 {
            1
        } else {
            rng.range(2, MAX_BATCH)
        };
        let first = w.next_seq;
        w.next_seq += records;
        // Published before the write starts, so a reader that sees one of these records
        // finds it issued.
        issued.store(w.next_seq, SeqCst);
        let recs: Vec<(u64, u32, Option<Vec<u8>>)> = (first..w.next_seq)
            .map(|seq| {
                let (i, v) = record(seed, t, seq);
                (seq, i, v)
            })
            .collect();
        let ctx = format!("{ctx}, seqs {first}..{}", w.next_seq);
        let sync = match kind {
            0..=7 => {
                let (seq, i, v) = &recs[0];
                match v {
                    Some(v) => db.put(key(t, *i), v),
                    None => db.delete(key(t, *i)),
                }
                .unwrap_or_else(|e| panic!("{ctx}: writer {t} key {i} seq {seq}: {e}"));
                false
            }
            _ => {
                let sync = kind == 8 || rng.below(4) == 0;
                let mut batch = WriteBatch::new();
                for (_, i, v) in &recs {
                    match v {
                        Some(v) => batch.put(key(t, *i), v),
                        None => batch.delete(key(t, *i)),
                    }
                }
                let opts = if sync {
                    WriteOptions::SYNC
                } else {
                    WriteOptions::NO_SYNC
                };
                db.write(batch, opts).unwrap_or_else(|e| {
                    panic!(
                        "{ctx}: writer {t} batch of keys {:?}: {e}",
                        recs.iter().map(|r| r.1).collect::<Vec<_>>()
                    )
                });
                counts.batches += u64::from(records > 1);
                sync
            }
        };
        counts.writes += 1;
        counts.synced_writes += u64::from(sync);
        counts.records += records;
        let mut touched = BTreeSet::new();
        for (_, i, v) in recs {
            touched.insert(i);
            match v {
                Some(v) => w.model.insert(i, v),
                None => w.model.remove(&i),
            };
        }
        // Read-your-writes: every key the write touched, right away.
        for i in touched {
            let got = db
                .get(key(t, i))
                .unwrap_or_else(|e| panic!("{ctx}: get of writer {t} key {i}: {e}"));
            check_own(w, i, got.as_deref(), &format!("{ctx}, read back"));
            counts.gets += 1;
        }
    }
    counts
}

/// A reader: random keys of every writer until `done`, each value checked to be one the key's
/// owner wrote for that key (and issued before the read), and never older than one this reader
/// saw before for the same key.
fn run_reader(
    db: &Db,
    seed: u64,
    round: u32,
    r: u32,
    issued: &[AtomicU64],
    done: &AtomicBool,
) -> Counts {
    let mut rng = Rng::new(mix(&[seed, u64::from(r), u64::from(round), 0x2EAD]));
    let mut counts = Counts::default();
    // The newest seq this reader has seen, per (writer, key).
    let mut seen: HashMap<(u32, u32), u64> = HashMap::new();
    let mut n = 0u64;
    while !done.load(SeqCst) || n < 200 {
        let ctx = format!("seed {seed} ({SEED_ENV}={seed}), round {round}, reader {r}, read {n}");
        n += 1;
        let keys: Vec<(u32, u32)> = (0..if rng.below(4) == 0 {
            rng.range(2, 12)
        } else {
            1
        })
            .map(|_| (rng.below(u64::from(WRITERS)) as u32, key_index(&mut rng)))
            .collect();
        let got: Vec<Option<Vec<u8>>> = if let [(t, i)] = keys[..] {
            vec![db
                .get(key(t, i))
                .unwrap_or_else(|e| panic!("{ctx}: get of writer {t} key {i}: {e}"))]
        } else {
            let kb: Vec<Vec<u8>> = keys.iter().map(|&(t, i)| key(t, i)).collect();
            db.multi_get(&kb)
                .unwrap_or_else(|e| panic!("{ctx}: multi_get of {keys:?}: {e}"))
        };
        counts.reader_reads += keys.len() as u64;
        for (&(t, i), got) in keys.iter().zip(&got) {
            let Some(v) = got else { continue };
            counts.reader_values += 1;
            let ctx = format!("{ctx}: writer {t} key {i} holds {}", describe(Some(v)));
            let Some((vt, vi, seq)) = decode(v) else {
                panic!("{ctx}, which no writer produced");
            };
            assert!(vt == t && vi == i, "{ctx}, written for another key");
            let newest = issued[t as usize].load(SeqCst);
            assert!(
                seq < newest,
                "{ctx}, but the writer had issued only seqs below {newest}"
            );
            let (ri, rv) = record(seed, t, seq);
            assert!(
                ri == i && rv.as_deref() == Some(&v[..]),
                "{ctx}, but record {seq} of writer {t} is {} of key {ri} (corrupted or invented \
                 value)",
                if rv.is_some() { "a put" } else { "a delete" }
            );
            let last = seen.entry((t, i)).or_insert(seq);
            assert!(
                seq >= *last,
                "{ctx}, after this reader saw seq {last} there (a read went back in time)"
            );
            *last = seq;
        }
        // Leave the CPUs to the writers (and their spills): a spinning reader would slow them
        // down more than its reads add.
        std::thread::sleep(READER_PAUSE);
    }
    counts
}

/// The whole store equals the union of the writers' models (read while a background spill may
/// still run); then, with spills finished, the tree and the folder agree.
fn check_store(db: &Db, dir: &Path, writers: &[Writer], ctx: &str) {
    for w in writers {
        let t = w.t;
        let keys: Vec<Vec<u8>> = (0..KEYS).map(|i| key(t, i)).collect();
        let got = db
            .multi_get(&keys)
            .unwrap_or_else(|e| panic!("{ctx}: multi_get of writer {t}'s keys: {e}"));
        for (i, got) in (0..KEYS).zip(&got) {
            check_own(w, i, got.as_deref(), &format!("{ctx}, multi_get"));
            let one = db
                .get(key(t, i))
                .unwrap_or_else(|e| panic!("{ctx}: get of writer {t} key {i}: {e}"));
            check_own(w, i, one.as_deref(), &format!("{ctx}, get"));
        }
    }
    db.flush().unwrap_or_else(|e| panic!("{ctx}: flush: {e}"));
    db.check_tree()
        .unwrap_or_else(|e| panic!("{ctx}: check_tree: {e}"));
    let on_disk = common::list_file_names(dir);
    let in_use = db.files_in_use();
    assert!(
        in_use == on_disk,
        "{ctx}: files in use but missing: {:?}; list files not in use: {:?}",
        in_use.difference(&on_disk).collect::<Vec<_>>(),
        on_disk.difference(&in_use).collect::<Vec<_>>()
    );
}

fn add(total: &mut Stats, s: &Stats) {
    common::add_tree_work(total, s);
    total.write_groups += s.write_groups;
    total.synced_write_groups += s.synced_write_groups;
}

#[test]
fn writers_and_readers_at_once_keep_every_key_exact() {
    let seed = std::env::var(SEED_ENV).map_or(DEFAULT_SEED, |s| {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_ENV}={s:?} is not a number"))
    });
    let started = Instant::now();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut writers: Vec<Writer> = (0..WRITERS)
        .map(|t| Writer {
            t,
            model: BTreeMap::new(),
            next_seq: 0,
        })
        .collect();
    let issued: Vec<AtomicU64> = (0..WRITERS).map(|_| AtomicU64::new(0)).collect();
    let mut total = Stats::default();
    let mut counts = Counts::default();
    for round in 0..ROUNDS {
        let ctx = format!("seed {seed} ({SEED_ENV}={seed}), round {round}");
        let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        let done = AtomicBool::new(false);
        let round_counts: Vec<Counts> = std::thread::scope(|s| {
            let (db, issued, done) = (&db, &issued, &done);
            let ws: Vec<_> = writers
                .iter_mut()
                .map(|w| {
                    let issued = &issued[w.t as usize];
                    s.spawn(move || run_writer(db, seed, round, w, issued))
                })
                .collect();
            let rs: Vec<_> = (0..READERS)
                .map(|r| s.spawn(move || run_reader(db, seed, round, r, issued, done)))
                .collect();
            let ws: Vec<_> = ws.into_iter().map(|h| h.join()).collect();
            done.store(true, SeqCst);
            let rs: Vec<_> = rs.into_iter().map(|h| h.join()).collect();
            ws.into_iter()
                .chain(rs)
                .map(|r| r.unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        for c in &round_counts {
            counts.add(c);
        }
        assert!(
            round_counts[WRITERS as usize..]
                .iter()
                .all(|c| c.reader_values > 0),
            "{ctx}: a reader never found a value"
        );
        add(&mut total, &db.stats());
        check_store(&db, dir, &writers, &format!("{ctx}, before close"));
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));

        let ctx = format!("{ctx}, after reopen");
        let db = Db::open(dir, options()).unwrap_or_else(|e| panic!("{ctx}: open: {e}"));
        check_store(&db, dir, &writers, &ctx);
        db.close().unwrap_or_else(|e| panic!("{ctx}: close: {e}"));
    }
    let live: usize = writers.iter().map(|w| w.model.len()).sum();
    eprintln!(
        "stress: seed {seed}, {ROUNDS} rounds in {:.1?}: {WRITERS} writers did {} writes ({} \
         synced, {} multi-record batches, {} records) and {} own-key reads; {READERS} readers \
         did {} reads, {} of them found a value; {} write groups ({} synced); {} root spills, \
         {} node spills, {} fast-splits, {} slow-splits, {} internal splits; {live} live keys",
        started.elapsed(),
        counts.writes,
        counts.synced_writes,
        counts.batches,
        counts.records,
        counts.gets,
        counts.reader_reads,
        counts.reader_values,
        total.write_groups,
        total.synced_write_groups,
        total.root_spills,
        total.node_spills,
        total.fast_splits,
        total.slow_splits,
        total.node_splits,
    );
    let ctx = format!("seed {seed}: the stress did too little spilling and splitting: {total:?}");
    assert!(total.root_spills > 0, "{ctx}");
    assert!(total.node_spills > 0, "{ctx}");
    assert!(total.fast_splits > 0, "{ctx}");
    assert!(total.slow_splits > 0, "{ctx}");
    assert!(total.node_splits > 0, "{ctx}");
}
