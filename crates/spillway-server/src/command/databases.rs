//! Redis's numbered databases as keyspaces of the store: database 0 is the default keyspace
//! (so a store served before databases existed keeps its data in database 0), database `n > 0`
//! the keyspace `redis:db:n`, made with the store's own key order and merge operator (which
//! `SWAPDB` needs: the engine swaps only keyspaces alike).
//!
//! **Handles.** Commands find their database's [`Keyspace`] handle in one table per server,
//! looked up per command, never kept by a session. A flush of database `n > 0` drops its
//! keyspace (O(1): no tombstone per key) and empties its slot *before* dropping, both under the
//! lock that orders writes held alone; so a reader that took the old handle just before gets
//! `KeyspaceDropped` and looks again, finding the empty slot (`Ctx`'s reads do); a writer holds
//! that lock (shared) from the handle's lookup to its append, so no batch names a dropped
//! keyspace. The keyspace is created again by the next write (or WATCH) to the database.
//!
//! **Database 0** cannot be dropped: a flush swaps it with a new empty keyspace and drops that.
//! `SWAPDB` swaps the two keyspaces' contents; handles keep their names, so the table does not
//! change. Both cost a spill of what is in memory first (the engine's `swap_keyspaces`).
//!
//! **Generations.** Every flush or swap that changes a database counts in its generation.
//! `WATCH` notes it: the engine's conflict check follows keys through writes, not through a
//! dropped or swapped keyspace, so a changed generation makes a watching `EXEC` fail.

use std::sync::{Arc, RwLock};

use spillway::{Db, Error, Keyspace, KeyspaceOptions, MergeOperator, Options, Result};

use crate::locks;

/// The keyspace that database 0's old contents are swapped into, and dropped with, by its
/// flush. One found at open was left by a crash between the two steps: it is dropped then.
const FLUSHING: &str = "redis:flushing";

/// The keyspace's name of database `n`.
pub fn name(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!("redis:db:{n}"),
    }
}

/// The server's databases: a handle per database that exists, and its generation.
pub struct Databases {
    slots: RwLock<Vec<Slot>>,
    /// How a database's keyspace is made: as the store's default keyspace is.
    options: KeyspaceOptions,
}

#[derive(Clone, Default)]
struct Slot {
    /// `None` until the database is first written (and again once it is flushed).
    ks: Option<Keyspace>,
    generation: u64,
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
        slots[0].ks = Some(db.default_keyspace());
        for (n, slot) in slots.iter_mut().enumerate().skip(1) {
            if existing.contains(&name(n)) {
                slot.ks = Some(db.keyspace(&name(n), ks_options.clone())?);
            }
        }
        Ok(Databases {
            slots: RwLock::new(slots),
            options: ks_options,
        })
    }

    pub fn count(&self) -> usize {
        locks::read(&self.slots).len()
    }

    /// Database `n`'s handle, or `None` if it has no keyspace (it is empty).
    pub fn handle(&self, n: usize) -> Option<Keyspace> {
        locks::read(&self.slots)[n].ks.clone()
    }

    /// How many flushes and swaps have changed database `n`.
    pub fn generation(&self, n: usize) -> u64 {
        locks::read(&self.slots)[n].generation
    }

    /// Database `n`'s handle, its keyspace created if it has none. The caller holds the lock
    /// that orders writes (either side), so that no flush drops it meanwhile.
    pub fn create(&self, db: &Db, n: usize) -> Result<Keyspace> {
        if let Some(ks) = self.handle(n) {
            return Ok(ks);
        }
        // Two writers may both get here: the engine opens the keyspace the first created.
        let ks = db.keyspace(&name(n), self.options.clone())?;
        let mut slots = locks::write(&self.slots);
        Ok(slots[n].ks.get_or_insert(ks).clone())
    }

    /// Empty database `n` (`FLUSHDB`). The caller holds the lock that orders writes alone.
    /// An empty database is left as it is: nothing changes, no watch fails.
    pub fn flush(&self, db: &Db, n: usize) -> Result<()> {
        let Some(ks) = self.handle(n) else {
            return Ok(());
        };
        if is_empty(&ks)? {
            return Ok(());
        }
        if n == 0 {
            db.keyspace(FLUSHING, self.options.clone())?;
            db.swap_keyspaces("", FLUSHING)?;
            self.changed(n);
            db.drop_keyspace(FLUSHING)?;
            return Ok(());
        }
        // The slot first: a reader whose handle the drop makes fail finds it empty.
        {
            let mut slots = locks::write(&self.slots);
            slots[n].ks = None;
            slots[n].generation += 1;
        }
        if let Err(e) = db.drop_keyspace(&name(n)) {
            locks::write(&self.slots)[n].ks = Some(ks);
            return Err(e);
        }
        Ok(())
    }

    /// Exchange the contents of databases `a` and `b` (`SWAPDB`). The caller holds the lock
    /// that orders writes alone.
    pub fn swap(&self, db: &Db, a: usize, b: usize) -> Result<()> {
        let empty = |n| self.handle(n).map_or(Ok(true), |ks| is_empty(&ks));
        if a == b || empty(a)? && empty(b)? {
            return Ok(());
        }
        self.create(db, a)?;
        self.create(db, b)?;
        db.swap_keyspaces(&name(a), &name(b))?;
        self.changed(a);
        self.changed(b);
        Ok(())
    }

    fn changed(&self, n: usize) {
        locks::write(&self.slots)[n].generation += 1;
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

/// Whether `e` says a handle's keyspace was dropped since it was looked up: look again.
pub fn dropped(e: &Error) -> bool {
    matches!(e, Error::KeyspaceDropped { .. })
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
        assert_eq!(e.db().keyspaces(), ["redis:db:1"], "made again by the SET");
        let Reply::Bulk(info) = &run(&e, &mut s, &[&["INFO", "keyspace"]])[0] else {
            panic!()
        };
        assert_eq!(
            String::from_utf8_lossy(info),
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\ndb1:keys=1,expires=0,avg_ttl=0\r\n\r\n"
        );
        let out = run(
            &e,
            &mut s,
            &[&["FLUSHALL"], &["DBSIZE"], &["INFO", "keyspace"]],
        );
        assert_eq!(out[1], Reply::Integer(0));
        assert_eq!(out[2], Reply::bulk("# Keyspace\r\n\r\n"));
        assert!(
            e.db().keyspaces().is_empty(),
            "dropped, not emptied key by key"
        );
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
    fn clients_of_a_database_flushed_meanwhile_never_see_its_dropped_keyspace() {
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
