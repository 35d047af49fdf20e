//! Redis's numbered databases as keyspaces of the store. Each database keeps its keys in up to
//! three keyspaces, one per [`Space`] (see `encoding` for what each holds):
//! - its strings: database 0's are the default keyspace (so a store served before databases
//!   existed keeps its data in database 0, and the CLI reads what the server wrote), database
//!   `n > 0`'s the keyspace `redis:db:n`;
//! - the metadata of its hashes, sets, sorted sets and lists, `redis:meta:n`;
//! - their fields, members and elements, `redis:fields:n`, ordered.
//!
//! Strings and metadata are made with the store's own key order and merge operator, fields
//! ordered, so that each database's are alike (`SWAPDB` needs it: the engine swaps only
//! keyspaces alike).
//!
//! **Handles.** Commands find their database's [`Keyspace`] handle in one table per server,
//! looked up per command, never kept by a session. A database's keyspace is made by its first
//! write (or WATCH) and kept from then on: nothing drops it.
//!
//! **Flushes** (`FLUSHDB`, `FLUSHALL`) clear keyspaces (`Keyspace::clear`): one range delete of
//! every key per database, in one batch — O(1) whatever the databases hold, a database 0 like
//! any other, and in a transaction's queue the same batch as the queue's other writes
//! (`context`). A database not written since its last flush is known empty and left as it is:
//! nothing is written, no watch fails. (Before clears, a flush dropped database `n`'s keyspace
//! and swapped database 0's with an empty one, a spill first; a store left by a crash amid
//! that still has [`FLUSHING`], which open drops.) What a clear covers leaves the disk as the
//! spills meet it, not at once.
//!
//! **Counts.** The engine's estimate of a keyspace's keys (`DBSIZE` past 100,000 keys) counts
//! records a clear covers until spills drop them. So each database notes the puts made to it
//! since this server last flushed it: a bound on its keys that `DBSIZE` and `INFO keyspace`
//! take where it is below the estimate (see `count`).
//!
//! `SWAPDB` swaps the two keyspaces' contents (the engine's `swap_keyspaces`, which spills what
//! is in memory first); handles keep their names, so the table does not change.
//!
//! **Generations.** Every flush or swap that changes a database counts in its generation.
//! `WATCH` notes it: the engine's conflict check follows keys through writes and clears, not
//! through a swapped keyspace, so a changed generation makes a watching `EXEC` fail.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

use spillway::{
    Db, KeyOrder, Keyspace, KeyspaceOptions, MergeOperator, Options, Result, WriteBatch,
    WriteOptions,
};

use crate::locks;

/// The keyspace that database 0's old contents were swapped into, and dropped with, by a
/// flush before flushes were clears. One found at open was left by a crash between the two
/// steps: it is dropped then.
const FLUSHING: &str = "redis:flushing";

/// The keyspaces of a database, by what they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// Strings: a key's value as it is, so that every front end reads it.
    Strings = 0,
    /// A record per hash, set, sorted set or list: its type, version, size (and expiry).
    Meta = 1,
    /// A record per field, member or element of those, under their key and version.
    Fields = 2,
}

pub const SPACES: [Space; 3] = [Space::Strings, Space::Meta, Space::Fields];

/// The name of database `n`'s keyspace for `space`.
pub fn name(n: usize, space: Space) -> String {
    match (space, n) {
        (Space::Strings, 0) => String::new(),
        (Space::Strings, n) => format!("redis:db:{n}"),
        (Space::Meta, n) => format!("redis:meta:{n}"),
        (Space::Fields, n) => format!("redis:fields:{n}"),
    }
}

/// The server's databases: a handle per database that exists, its generation, and what was
/// written to it since its last flush.
pub struct Databases {
    slots: RwLock<Vec<Slot>>,
    /// One per database, beside the table: writers note theirs holding the lock that orders
    /// writes shared, flushes and swaps reset or exchange them holding it alone.
    notes: Vec<Note>,
    /// How a database's keyspace is made: as the store's default keyspace is.
    options: KeyspaceOptions,
}

#[derive(Clone, Default)]
struct Slot {
    /// By [`Space`]: `None` until the database first writes there.
    ks: [Option<Keyspace>; 3],
    generation: u64,
}

/// What was written to a database since this server last flushed it.
#[derive(Default)]
struct Note {
    /// Anything (or, for a keyspace found at open, perhaps something): a flush must clear it.
    written: AtomicBool,
    /// This server flushed the database (since it opened, or since a failed flush): `puts`
    /// bounds its keys.
    flushed: AtomicBool,
    /// Puts since the flush.
    puts: AtomicU64,
}

impl Note {
    fn exchange(&self, other: &Note) {
        let swap_bool =
            |a: &AtomicBool, b: &AtomicBool| a.store(b.swap(a.load(Relaxed), Relaxed), Relaxed);
        swap_bool(&self.written, &other.written);
        swap_bool(&self.flushed, &other.flushed);
        self.puts
            .store(other.puts.swap(self.puts.load(Relaxed), Relaxed), Relaxed);
    }
}

impl Databases {
    /// The `count` databases of `db`, opened with `options`: the keyspaces of those that have
    /// one. Keyspaces of databases past `count` (a server run with more before) stay as they
    /// are, unserved.
    pub fn open(db: &Db, count: usize, options: &Options) -> Result<Databases> {
        db.drop_keyspace(FLUSHING)?;
        let mut ks_options = KeyspaceOptions::default().key_order(db.key_order());
        if let Some(op) = store_operator(db, options) {
            ks_options = ks_options.merge_operator(op);
        }
        let existing = db.keyspaces();
        let mut slots = vec![Slot::default(); count];
        slots[0].ks[0] = Some(db.default_keyspace());
        for (n, slot) in slots.iter_mut().enumerate() {
            for space in SPACES {
                if existing.contains(&name(n, space)) {
                    let options = options_for(&ks_options, space);
                    slot.ks[space as usize] = Some(db.keyspace(&name(n, space), options)?);
                }
            }
        }
        // What a keyspace found holds is not known without reading it (which, after a clear,
        // steps over every key it covers): a flush clears it.
        let notes = (0..count).map(|_| Note::default()).collect::<Vec<Note>>();
        for (slot, note) in slots.iter().zip(&notes) {
            note.written
                .store(slot.ks.iter().any(Option::is_some), Relaxed);
        }
        Ok(Databases {
            slots: RwLock::new(slots),
            notes,
            options: ks_options,
        })
    }

    pub fn count(&self) -> usize {
        self.notes.len()
    }

    /// Database `n`'s handle for `space`, or `None` if it has no keyspace there (nothing of
    /// it).
    pub fn handle(&self, n: usize, space: Space) -> Option<Keyspace> {
        locks::read(&self.slots)[n].ks[space as usize].clone()
    }

    /// How many flushes and swaps have changed database `n`.
    pub fn generation(&self, n: usize) -> u64 {
        locks::read(&self.slots)[n].generation
    }

    /// Database `n`'s handle for `space`, its keyspace created if it has none. The caller
    /// holds the lock that orders writes (either side).
    pub fn create(&self, db: &Db, n: usize, space: Space) -> Result<Keyspace> {
        if let Some(ks) = self.handle(n, space) {
            return Ok(ks);
        }
        // Two writers may both get here: the engine opens the keyspace the first created.
        let ks = db.keyspace(&name(n, space), options_for(&self.options, space))?;
        let mut slots = locks::write(&self.slots);
        Ok(slots[n].ks[space as usize].get_or_insert(ks).clone())
    }

    /// Database `n`'s keyspaces that exist.
    fn existing(&self, n: usize) -> Vec<Keyspace> {
        locks::read(&self.slots)[n]
            .ks
            .iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// Note a write to database `n` (a put if `put`), before it is appended. The caller holds
    /// the lock that orders writes (either side).
    pub fn wrote(&self, n: usize, put: bool) {
        let note = &self.notes[n];
        note.written.store(true, Relaxed);
        if put {
            note.puts.fetch_add(1, Relaxed);
        }
    }

    /// A bound on database `n`'s keys, if this server flushed it: the puts made since.
    pub fn bound(&self, n: usize) -> Option<u64> {
        let note = &self.notes[n];
        note.flushed.load(Relaxed).then(|| note.puts.load(Relaxed))
    }

    /// Add to `batch` the clear of each of databases `ns` that may hold keys, and note them
    /// flushed (their generations count it): the databases cleared. The caller holds the lock
    /// that orders writes alone, and appends `batch`; if that fails, it calls
    /// [`not_flushed`](Self::not_flushed) with them.
    pub fn clear(&self, ns: &[usize], batch: &mut WriteBatch) -> Vec<usize> {
        let mut cleared = Vec::new();
        for &n in ns {
            let note = &self.notes[n];
            if !note.written.load(Relaxed) {
                continue;
            }
            for ks in self.existing(n) {
                batch.delete_range_in::<&[u8], _>(&ks, ..);
            }
            note.written.store(false, Relaxed);
            note.flushed.store(true, Relaxed);
            note.puts.store(0, Relaxed);
            self.changed(n);
            cleared.push(n);
        }
        cleared
    }

    /// The clears of databases `ns` were not appended: what they hold is not known.
    pub fn not_flushed(&self, ns: &[usize]) {
        for &n in ns {
            self.notes[n].written.store(true, Relaxed);
            self.notes[n].flushed.store(false, Relaxed);
        }
    }

    /// Empty databases `ns` (`FLUSHDB`, `FLUSHALL`): their clears in one batch, appended
    /// unsynced; whether anything was written. The caller holds the lock that orders writes
    /// alone.
    pub fn flush(&self, db: &Db, ns: &[usize]) -> Result<bool> {
        let mut batch = WriteBatch::new();
        let cleared = self.clear(ns, &mut batch);
        if cleared.is_empty() {
            return Ok(false);
        }
        match db.write(batch, WriteOptions::NO_SYNC) {
            Ok(()) => Ok(true),
            Err(e) => {
                self.not_flushed(&cleared);
                Err(e)
            }
        }
    }

    /// Exchange the contents of databases `a` and `b` (`SWAPDB`). The caller holds the lock
    /// that orders writes alone.
    pub fn swap(&self, db: &Db, a: usize, b: usize) -> Result<()> {
        let written = |n: usize| self.notes[n].written.load(Relaxed);
        if a == b || !written(a) && !written(b) {
            return Ok(());
        }
        let empty = |n| -> Result<bool> {
            for ks in self.existing(n) {
                if !is_empty(&ks)? {
                    return Ok(false);
                }
            }
            Ok(true)
        };
        if empty(a)? && empty(b)? {
            return Ok(());
        }
        // The engine swaps keyspaces that exist (a clear left in a buffer goes with its
        // keyspace's contents: the swap spills first), every space's at once.
        let mut pairs = Vec::new();
        for space in SPACES {
            if self.handle(a, space).is_some() || self.handle(b, space).is_some() {
                self.create(db, a, space)?;
                self.create(db, b, space)?;
                pairs.push((name(a, space), name(b, space)));
            }
        }
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(x, y)| (&x[..], &y[..])).collect();
        db.swap_keyspace_pairs(&pairs)?;
        self.notes[a].exchange(&self.notes[b]);
        self.changed(a);
        self.changed(b);
        Ok(())
    }

    fn changed(&self, n: usize) {
        locks::write(&self.slots)[n].generation += 1;
    }
}

/// How `space`'s keyspaces are made, databases' strings being made with `strings`.
fn options_for(strings: &KeyspaceOptions, space: Space) -> KeyspaceOptions {
    match space {
        Space::Strings | Space::Meta => strings.clone(),
        Space::Fields => KeyspaceOptions::default().key_order(KeyOrder::Ordered),
    }
}

fn is_empty(ks: &Keyspace) -> Result<bool> {
    Ok(ks.iter()?.next().transpose()?.is_none())
}

/// The operator the store folds merges with, for its databases' keyspaces: the one it was
/// opened with, or the one it records, found as `Db::open` finds it (the options' known
/// operators, then the built-ins).
fn store_operator(db: &Db, options: &Options) -> Option<Arc<dyn MergeOperator>> {
    if let Some(op) = &options.merge_operator {
        return Some(op.clone());
    }
    let name = db.merge_operator_name()?;
    let known = options.known_operators.iter().find(|o| o.name() == name);
    known
        .cloned()
        .or_else(|| spillway::operators::by_name(name))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{engine, run};
    use super::super::{Engine, Session};
    use crate::resp::Reply;
    use crate::server::Config;

    fn open(dir: &std::path::Path, options: spillway::Options) -> Engine {
        let db = Db::open(dir, options.clone()).unwrap();
        let mut config = Config::new(dir);
        config.options = options;
        Engine::new(db, &config).unwrap()
    }

    use super::*;

    #[test]
    fn databases_hold_their_own_keys_and_flush_alone() {
        let (_d, e) = engine();
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["SET", "a", "zero"],
                &["SELECT", "1"],
                &["GET", "a"],
                &["MSET", "a", "one", "b", "one"],
                &["INCR", "n"],
                &["DBSIZE"],
                &["SELECT", "0"],
                &["MGET", "a", "b"],
                &["DBSIZE"],
                &["SELECT", "1"],
                &["FLUSHDB"],
                &["DBSIZE"],
                &["GET", "a"],
                &["SET", "c", "again"],
                &["SELECT", "0"],
                &["GET", "a"],
                &["SELECT", "16"],
                &["SELECT", "-1"],
            ],
        );
        assert_eq!(out[2], Reply::Null);
        assert_eq!(out[5], Reply::Integer(3));
        assert_eq!(out[7], Reply::Array(vec![Reply::bulk("zero"), Reply::Null]));
        assert_eq!(out[8], Reply::Integer(1));
        assert_eq!(out[10..13], [Reply::ok(), Reply::Integer(0), Reply::Null]);
        assert_eq!(out[15], Reply::bulk("zero"), "database 0 was not flushed");
        let range = Reply::error("ERR DB index is out of range");
        assert_eq!(out[16..], [range.clone(), range]);
        assert_eq!(e.db().keyspaces(), ["redis:db:1"], "kept by the flush");
        let Reply::Verbatim(info) = &run(&e, &mut s, &[&["INFO", "keyspace"]])[0] else {
            panic!()
        };
        assert_eq!(
            String::from_utf8_lossy(info),
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb1:keys=1,expires=0,avg_ttl=0\r\n"
        );
        let records = || e.db().stats().user_records_written;
        let before = records();
        let out = run(
            &e,
            &mut s,
            &[&["FLUSHALL"], &["DBSIZE"], &["INFO", "keyspace"]],
        );
        assert_eq!(out[1], Reply::Integer(0));
        assert_eq!(out[2], Reply::Verbatim(b"# Keyspace\r\n".to_vec()));
        assert_eq!(records() - before, 2, "a clear of each database written");
        run(&e, &mut s, &[&["FLUSHALL"], &["SELECT", "0"], &["FLUSHDB"]]);
        assert_eq!(
            records() - before,
            2,
            "nothing written since: nothing to clear"
        );
    }

    /// Fill database 0 with `n` keys `key:i` (some on disk, some in the buffer) and database 3
    /// with `few`, as the store's own writes, and mark them written as the server does.
    fn fill(e: &Engine, n: usize, few: usize) {
        let db3 = e.dbs.create(e.db(), 3, Space::Strings).unwrap();
        for chunk in 0..n.div_ceil(1000) {
            let mut batch = WriteBatch::new();
            for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
                batch.put(format!("key:{i}"), "a value of some bytes");
            }
            e.db().write(batch, WriteOptions::NO_SYNC).unwrap();
            if chunk == n / 2000 {
                e.db().flush().unwrap();
            }
        }
        for i in 0..few {
            db3.put(format!("key:{i}"), "three").unwrap();
        }
        e.dbs.wrote(0, true);
        e.dbs.wrote(3, true);
    }

    #[test]
    fn a_flush_is_one_record_per_database_and_its_keys_are_gone_for_every_command() {
        let (_d, e, clock) = super::super::tests::engine_at_2030();
        let n = 120_000; // past what DBSIZE counts: it takes the estimate, or the bound
        fill(&e, n, 10);
        let mut s = Session::new(1);
        let out = run(&e, &mut s, &[&["DBSIZE"], &["SELECT", "3"], &["DBSIZE"]]);
        let Reply::Integer(estimate) = out[0] else {
            panic!("{out:?}")
        };
        assert!(estimate > 100_000, "{estimate}");
        assert_eq!(out[2], Reply::Integer(10));
        let records = || e.db().stats().user_records_written;
        let before = records();
        let started = std::time::Instant::now();
        let out = run(&e, &mut s, &[&["SELECT", "0"], &["FLUSHDB", "SYNC"]]);
        assert_eq!(out[1], Reply::ok());
        eprintln!("FLUSHDB of {n} keys: {:?}", started.elapsed());
        assert_eq!(
            records() - before,
            1,
            "one record, whatever the database holds"
        );
        let gone = [
            &["GET", "key:1"][..],
            &["MGET", "key:0", "key:119999"],
            &["EXISTS", "key:5", "key:6"],
            &["KEYS", "key:1*"],
            &["DBSIZE"],
            &["TTL", "key:7"],
            &["STRLEN", "key:8"],
            &["GETDEL", "key:9"],
            &["DEL", "key:10", "key:11"],
            &["INCR", "key:12"],
            &["SET", "key:13", "v", "NX"],
            &["SET", "key:14", "v", "XX"],
            &["APPEND", "key:15", "x"],
            &["EXPIRE", "key:16", "100"],
            &["PERSIST", "key:17"],
            &["GETEX", "key:18", "PX", "5"],
        ];
        let out = run(&e, &mut s, &gone);
        let nulls = |k| Reply::Array(vec![Reply::Null; k]);
        assert_eq!(
            out,
            [
                Reply::Null,
                nulls(2),
                Reply::Integer(0),
                Reply::Array(vec![]),
                Reply::Integer(0),
                Reply::Integer(-2),
                Reply::Integer(0),
                Reply::Null,
                Reply::Integer(0),
                Reply::Integer(1),
                Reply::ok(),
                Reply::Null,
                Reply::Integer(1),
                Reply::Integer(0),
                Reply::Integer(0),
                Reply::Null,
            ]
        );
        // The writes after it are seen, and counted.
        let out = run(
            &e,
            &mut s,
            &[
                &["SCAN", "0", "COUNT", "1000"],
                &["DBSIZE"],
                &["MGET", "key:12", "key:13", "key:15", "key:1"],
                &["INFO", "keyspace"],
            ],
        );
        let Reply::Array(scan) = &out[0] else {
            panic!("{out:?}")
        };
        let Reply::Array(found) = &scan[1] else {
            panic!("{scan:?}")
        };
        let mut found: Vec<_> = found.iter().map(|r| format!("{r:?}")).collect();
        found.sort();
        let want = ["key:12", "key:13", "key:15"].map(|k| format!("{:?}", Reply::bulk(k)));
        assert_eq!(found, want);
        assert_eq!(scan[0], Reply::bulk("0"));
        assert_eq!(out[1], Reply::Integer(3));
        let values = ["1", "v", "x"].map(Reply::bulk).to_vec();
        assert_eq!(out[2], Reply::Array([values, vec![Reply::Null]].concat()));
        assert_eq!(
            out[3],
            Reply::Verbatim(
                b"# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb3:keys=10,expires=0,avg_ttl=0\r\n"
                    .to_vec()
            )
        );
        // FLUSHALL: database 3 is the only one written since; database 0's new keys go too.
        let before = records();
        let out = run(&e, &mut s, &[&["FLUSHALL", "ASYNC"], &["INFO", "keyspace"]]);
        assert_eq!(
            out,
            [Reply::ok(), Reply::Verbatim(b"# Keyspace\r\n".to_vec())]
        );
        assert_eq!(
            records() - before,
            2,
            "one clear per database written, one batch"
        );
        // Spills meet the clear: still gone, and what came after still there.
        run(
            &e,
            &mut s,
            &[
                &["SET", "late", "1"],
                &["SET", "key:3", "again", "PX", "1000"],
            ],
        );
        e.db().flush().unwrap();
        clock.advance(std::time::Duration::from_millis(1000));
        let out = run(
            &e,
            &mut s,
            &[&["KEYS", "*"], &["GET", "key:2"], &["DBSIZE"]],
        );
        assert_eq!(
            out,
            [
                Reply::Array(vec![Reply::bulk("late")]),
                Reply::Null,
                Reply::Integer(1)
            ]
        );
    }

    #[test]
    fn a_flush_survives_a_restart_and_a_swap_after_one_moves_the_right_keys() {
        let dir = tempfile::tempdir().unwrap();
        let options = spillway::Options::default();
        let e = open(dir.path(), options.clone());
        let mut s = Session::new(1);
        run(
            &e,
            &mut s,
            &[
                &["SELECT", "2"],
                &["MSET", "two:a", "1", "two:b", "2"],
                &["SELECT", "1"],
                &["MSET", "one:a", "1", "one:b", "2"],
            ],
        );
        // On disk, so that the clear is all the buffer holds at the swap.
        e.db().flush().unwrap();
        let out = run(
            &e,
            &mut s,
            &[
                &["FLUSHDB"],
                &["SWAPDB", "1", "2"],
                &["SELECT", "1"],
                &["KEYS", "*"],
                &["SELECT", "2"],
                &["KEYS", "*"],
                &["SET", "one:c", "3"],
                &["SWAPDB", "1", "2"],
                &["SELECT", "0"],
                &["SET", "zero", "0"],
                &["FLUSHDB"],
                &["SELECT", "1"],
                &["KEYS", "*"],
                &["SELECT", "2"],
                &["KEYS", "*"],
            ],
        );
        let sorted = |r: &Reply| {
            let Reply::Array(a) = r else { panic!("{r:?}") };
            let mut a: Vec<String> = a.iter().map(|r| format!("{r:?}")).collect();
            a.sort();
            a
        };
        let names = |ks: &[&str]| {
            ks.iter()
                .map(|k| format!("{:?}", Reply::bulk(*k)))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sorted(&out[3]),
            names(&["two:a", "two:b"]),
            "swapped in whole"
        );
        assert_eq!(sorted(&out[5]), names(&[]), "swapped in flushed");
        assert_eq!(sorted(&out[12]), names(&["one:c"]));
        assert_eq!(sorted(&out[14]), names(&["two:a", "two:b"]));
        e.close().unwrap();
        let e = open(dir.path(), options);
        let out = run(
            &e,
            &mut s,
            &[
                &["SELECT", "0"],
                &["DBSIZE"],
                &["SELECT", "1"],
                &["KEYS", "*"],
                &["SELECT", "2"],
                &["KEYS", "*"],
            ],
        );
        assert_eq!(out[1], Reply::Integer(0));
        assert_eq!(sorted(&out[3]), names(&["one:c"]));
        assert_eq!(sorted(&out[5]), names(&["two:a", "two:b"]));
    }

    #[test]
    fn swapdb_exchanges_contents_and_both_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        // An ordered store with an operator: the databases' keyspaces must match it to swap.
        let options = spillway::Options::default()
            .key_order(spillway::KeyOrder::Ordered)
            .merge_operator(Arc::new(spillway::operators::U64Add));
        let e = open(dir.path(), options.clone());
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["MSET", "user:1", "a", "user:2", "b"],
                &["SELECT", "2"],
                &["SET", "user:9", "z"],
                &["SWAPDB", "0", "2"],
                &["KEYS", "user:*"],
                &["SELECT", "0"],
                &["KEYS", "user:*"],
                &["SWAPDB", "3", "4"],
                &["SWAPDB", "1", "x"],
                &["SWAPDB", "1", "16"],
                &["SELECT", "5"],
                &["SET", "k", "five"],
                &["SELECT", "0"],
                &["FLUSHDB"],
            ],
        );
        let sorted = |r: &Reply| {
            let Reply::Array(a) = r else { panic!("{r:?}") };
            let mut a = a.clone();
            a.sort_by_key(|r| format!("{r:?}"));
            a
        };
        assert_eq!(out[3], Reply::ok());
        assert_eq!(
            sorted(&out[4]),
            [Reply::bulk("user:1"), Reply::bulk("user:2")]
        );
        assert_eq!(sorted(&out[6]), [Reply::bulk("user:9")]);
        assert_eq!(out[7], Reply::ok(), "two empty databases");
        assert_eq!(out[8], Reply::error("ERR invalid second DB index"));
        assert_eq!(out[9], Reply::error("ERR DB index is out of range"));
        e.close().unwrap();
        let e = open(dir.path(), spillway::Options::default());
        let mut s = Session::new(1);
        let out = run(
            &e,
            &mut s,
            &[
                &["DBSIZE"],
                &["SELECT", "2"],
                &["MGET", "user:1", "user:2"],
                &["SELECT", "5"],
                &["GET", "k"],
            ],
        );
        assert_eq!(out[0], Reply::Integer(0), "database 0's flush is durable");
        assert_eq!(
            out[2],
            Reply::Array(vec![Reply::bulk("a"), Reply::bulk("b")])
        );
        assert_eq!(out[4], Reply::bulk("five"));
        assert_eq!(e.db().keyspaces(), ["redis:db:2", "redis:db:5"]);
    }

    #[test]
    fn clients_of_a_database_flushed_meanwhile_see_their_writes_before_or_after_it() {
        let (_d, e) = engine();
        std::thread::scope(|scope| {
            let e = &e;
            scope.spawn(move || {
                let mut s = Session::new(1);
                for _ in 0..200 {
                    let out = run(e, &mut s, &[&["SELECT", "3"], &["FLUSHDB"]]);
                    assert_eq!(out, [Reply::ok(), Reply::ok()]);
                }
            });
            for t in 2..4 {
                scope.spawn(move || {
                    let mut s = Session::new(t);
                    run(e, &mut s, &[&["SELECT", "3"]]);
                    for i in 0..300 {
                        let i = i.to_string();
                        let out = run(
                            e,
                            &mut s,
                            &[
                                &["SET", "k", &i],
                                &["MSET", "a", &i, "b", &i],
                                &["INCR", "n"],
                                &["GET", "k"],
                                &["MGET", "a", "b"],
                                &["KEYS", "*"],
                                &["DBSIZE"],
                            ],
                        );
                        for r in &out {
                            assert!(!matches!(r, Reply::Error(_)), "{out:?}");
                        }
                        // A flush comes wholly before or after the MSET.
                        let Reply::Array(ab) = &out[4] else { panic!() };
                        assert_eq!(ab[0], ab[1]);
                    }
                });
            }
        });
    }
}
