"""Expiry from Python against its documentation: values written with a ttl or a time are
absent to every read from their time on (get, `in`, multi_get, scans both ways, snapshots,
transactions), across spills and reopens; `expire` and `persist` change a live key's expiry
and leave an absent (or expired) key absent; `ttl()` and `expiry()` tell "no expiry" (None)
from "no key" (KeyError); batches, transactions and keyspaces; what a ttl and a time may be;
the test clock, and the wall clock. Time moves by `spillway.ManualClock`, not by sleeping
(but for one test of the wall clock)."""

import math
import time
from datetime import date, datetime, timedelta, timezone

import pytest

import spillway

# A start far from the wall clock's time: a ttl counted by the wall clock instead of the
# store's would be decades off.
START = datetime(2001, 2, 3, 4, 5, 6, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    return spillway.ManualClock(START)


@pytest.fixture
def db(tmp_path, clock):
    with spillway.open(tmp_path / "store", clock=clock) as db:
        yield db


def absent_everywhere(db_or_ks, key):
    """Every read of a `Db` or `Keyspace` finds `key` absent."""
    assert db_or_ks.get(key) is None and db_or_ks.get(key, b"-") == b"-"
    assert key not in db_or_ks
    with pytest.raises(KeyError):
        db_or_ks[key]
    assert db_or_ks.multi_get([key]) == [None]
    assert key not in list(db_or_ks)
    assert key not in [k for k, _ in db_or_ks.iter()]
    assert key not in list(reversed(db_or_ks))
    assert db_or_ks.get_with_expiry(key) is None
    assert db_or_ks.get_with_expiry(key, "absent") == "absent"
    with pytest.raises(KeyError):
        db_or_ks.ttl(key)
    with pytest.raises(KeyError):
        db_or_ks.expiry(key)


def test_a_ttl_ends_a_key_for_every_read_at_its_time(db, clock):
    db.put(b"session", b"ada", ttl=30)
    db.put(b"forever", b"grace")
    assert db[b"session"] == b"ada" and b"session" in db
    assert db.ttl(b"session") == 30.0
    assert db.expiry(b"session") == START + timedelta(seconds=30)
    assert db.get_with_expiry(b"session") == (b"ada", START + timedelta(seconds=30))
    # No expiry is None, not an error: absent is KeyError (absent_everywhere).
    assert db.ttl(b"forever") is None and db.expiry(b"forever") is None
    assert db.get_with_expiry(b"forever") == (b"grace", None)

    clock.advance(29.999)
    assert db[b"session"] == b"ada"
    assert db.ttl(b"session") == pytest.approx(0.001)
    clock.advance(0.001)  # at its time exactly: gone
    absent_everywhere(db, b"session")
    assert sorted(db.iter()) == [(b"forever", b"grace")]
    assert db.ttl(b"forever") is None


def test_scans_of_an_ordered_store_skip_expired_keys_both_ways(tmp_path, clock):
    with spillway.open(tmp_path / "s", ordered=True, clock=clock) as db:
        for i in range(100):
            # Odd keys expire after 10 s, even ones never.
            db.put(b"k%03d" % i, b"v%d" % i, ttl=10 if i % 2 else None)
        assert len(list(db.range(b"k010", b"k020"))) == 10
        clock.advance(10)
        evens = [(b"k%03d" % i, b"v%d" % i) for i in range(0, 100, 2)]
        assert list(db.iter()) == evens
        assert list(db.range(b"k010", b"k020")) == evens[5:10]
        assert list(db.range(b"k010", b"k020", reverse=True)) == evens[5:10][::-1]
        assert list(db.prefix(b"k05")) == evens[25:30]
        assert list(db.prefix(b"k05", reverse=True)) == evens[25:30][::-1]
        assert list(reversed(db)) == [k for k, _ in evens][::-1]


def test_expired_keys_stay_hidden_across_spills_and_reopens(tmp_path, clock):
    path = tmp_path / "s"
    with spillway.open(path, clock=clock, root_buffer_size="64K") as db:
        for i in range(3000):
            db.put(b"key%05d" % i, b"x" * 50, ttl=60 if i % 3 == 0 else None)
        db.flush()
        assert db.stats()["root_spills"] > 0
        assert db.ttl(b"key00000") == 60.0
    with spillway.open(path, clock=clock) as db:  # the expiry is stored with the value
        assert db.expiry(b"key00003") == START + timedelta(seconds=60)
        clock.advance(60)
        assert db.get(b"key00000") is None and db[b"key00001"] == b"x" * 50
        assert db.multi_get([b"key%05d" % i for i in range(6)]) == [
            None if i % 3 == 0 else b"x" * 50 for i in range(6)
        ]
        assert sum(1 for _ in db.iter()) == 2000
        db.flush()
    with spillway.open(path, clock=clock) as db:
        assert sum(1 for _ in db) == 2000 and b"key02997" not in db


def test_a_snapshot_loses_a_key_whose_time_comes_while_it_is_held(db, clock):
    db.put(b"k", b"v", ttl=5)
    with db.snapshot() as snap:
        assert snap[b"k"] == b"v"
        db.put(b"k", b"newer")  # not seen by the snapshot
        assert snap[b"k"] == b"v"
        clock.advance(5)
        # Expiry is judged by the clock at the read, snapshot or not.
        assert snap.get(b"k") is None and list(snap) == []
    assert db[b"k"] == b"newer" and db.ttl(b"k") is None


def test_a_put_without_ttl_clears_an_expiry_and_one_with_sets_it(db, clock):
    db.put(b"k", b"1", ttl=5)
    db.put(b"k", b"2")
    assert db.ttl(b"k") is None
    db.put(b"k", b"3", timedelta(minutes=2))  # ttl is the third argument
    assert db.ttl(b"k") == 120.0
    db[b"k"] = b"4"  # db[k] = v is a put without ttl
    clock.advance(1000)
    assert db[b"k"] == b"4"


def test_put_expiring_takes_aware_datetimes_and_unix_timestamps(db, clock):
    tokyo = timezone(timedelta(hours=9))
    at = (START + timedelta(seconds=10, microseconds=123456)).astimezone(tokyo)
    db.put_expiring(b"a", b"1", at)
    # Given back in UTC, to the millisecond.
    got = db.expiry(b"a")
    assert got == START + timedelta(seconds=10, milliseconds=123)
    assert got.tzinfo == timezone.utc
    db.put_expiring(b"b", b"2", START.timestamp() + 20)
    db.put_expiring(b"c", b"3", int(START.timestamp()) + 30)
    assert db.ttl(b"b") == 20.0 and db.ttl(b"c") == 30.0
    clock.advance(10.123)
    assert db.get(b"a") is None and db[b"b"] == b"2"
    clock.advance(20)
    assert list(db) == []


def test_a_time_already_past_writes_a_key_that_is_gone_and_hides_the_older_value(db):
    db.put(b"k", b"old")
    db.put_expiring(b"k", b"new", START - timedelta(seconds=1))
    absent_everywhere(db, b"k")
    db.put_expiring(b"k2", b"v", 0)  # the epoch
    assert b"k2" not in db


def test_expire_and_persist_change_a_live_key_and_leave_an_absent_one_absent(db, clock):
    db.put(b"k", b"v")
    db.expire(b"k", 10)
    assert db.ttl(b"k") == 10.0
    db.expire(b"k", timedelta(seconds=100))  # a later expire replaces it
    assert db.ttl(b"k") == 100.0
    db.expire_at(b"k", START + timedelta(seconds=50))
    assert db.expiry(b"k") == START + timedelta(seconds=50)
    db.persist(b"k")
    assert db.ttl(b"k") is None and db[b"k"] == b"v"
    clock.advance(1000)
    assert db[b"k"] == b"v"

    # On an absent key: nothing, now or once a value is put.
    db.expire(b"nobody", 10)
    db.expire_at(b"nobody", START)
    db.persist(b"nobody")
    absent_everywhere(db, b"nobody")
    db.put(b"nobody", b"here")
    clock.advance(20)
    assert db[b"nobody"] == b"here" and db.ttl(b"nobody") is None

    # On an expired key: it stays gone (persist does not bring it back).
    db.put(b"gone", b"v", ttl=1)
    clock.advance(1)
    db.persist(b"gone")
    db.expire(b"gone", 100)
    absent_everywhere(db, b"gone")

    # A time past ends a live key now.
    db.put(b"short", b"v")
    db.expire_at(b"short", START.timestamp())
    absent_everywhere(db, b"short")


def test_expiry_writes_fsync_as_put_does(tmp_path, clock):
    def fsyncs_after(db, write):
        before = db.stats()["fsyncs"]
        write()
        return db.stats()["fsyncs"] - before

    # No log prefill: its own fsyncs, in the background, would count.
    with spillway.open(tmp_path / "s", clock=clock, log_prefill=False) as db:
        assert fsyncs_after(db, lambda: db.put(b"a", b"1", ttl=5)) == 0
        assert fsyncs_after(db, lambda: db.put(b"a", b"1", ttl=5, sync=True)) == 1
        assert fsyncs_after(db, lambda: db.put_expiring(b"b", b"2", START, sync=True)) == 1
        assert fsyncs_after(db, lambda: db.expire(b"a", 9)) == 0
        assert fsyncs_after(db, lambda: db.expire(b"a", 9, sync=True)) == 1
        assert fsyncs_after(db, lambda: db.expire_at(b"a", START, sync=True)) == 1
        assert fsyncs_after(db, lambda: db.persist(b"a", sync=True)) == 1
        assert fsyncs_after(db, lambda: db.persist(b"a", sync=False)) == 0
    synced = dict(clock=clock, sync_by_default=True, log_prefill=False)
    with spillway.open(tmp_path / "synced", **synced) as db:
        assert fsyncs_after(db, lambda: db.put(b"a", b"1", ttl=5)) == 1
        assert fsyncs_after(db, lambda: db.expire(b"a", 9)) == 1
        assert fsyncs_after(db, lambda: db.persist(b"a", sync=False)) == 0
        assert db.ttl(b"a") is None


def test_ttls_and_times_are_checked(db):
    for bad in (0, -1, 0.0, timedelta(0), timedelta(seconds=-5), 0.0000004):
        with pytest.raises(ValueError):
            db.put(b"k", b"v", ttl=bad)
        with pytest.raises(ValueError):
            db.expire(b"k", bad)
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            db.put(b"k", b"v", ttl=bad)
        with pytest.raises(ValueError):
            db.put_expiring(b"k", b"v", bad)
    for bad in (True, "5", b"5", [5], START):
        with pytest.raises(TypeError):
            db.put(b"k", b"v", ttl=bad)
    with pytest.raises(ValueError, match="naive"):
        db.put_expiring(b"k", b"v", datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        db.expire_at(b"k", datetime(2030, 1, 1))
    for bad in (date(2030, 1, 1), "2030-01-01", timedelta(seconds=5), None):
        with pytest.raises(TypeError):
            db.put_expiring(b"k", b"v", bad)
    for late in (1e12, 1e300, datetime.max.replace(tzinfo=timezone(timedelta(hours=-1)))):
        with pytest.raises(ValueError, match="9999"):
            db.put_expiring(b"k", b"v", late)
    for long in (1e12, 1e300, timedelta.max):
        with pytest.raises(ValueError, match="9999"):
            db.put(b"k", b"v", ttl=long)
    with pytest.raises(ValueError, match="ttl=None for no expiry"):
        db.put(b"k", b"v", ttl=0)
    # Nothing of a refused call was written.
    assert b"k" not in db


def test_keyspaces_expire_apart_from_each_other(db, clock):
    sessions = db.keyspace("sessions")
    sessions.put(b"k", b"in sessions", ttl=10)
    db.put(b"k", b"in default")
    assert sessions.ttl(b"k") == 10.0 and db.ttl(b"k") is None
    sessions.put_expiring(b"at", b"v", START + timedelta(seconds=5))
    assert sessions.expiry(b"at") == START + timedelta(seconds=5)
    sessions.put(b"p", b"v", ttl=5)
    sessions.persist(b"p", sync=True)
    sessions.put(b"e", b"v")
    sessions.expire(b"e", 3)
    sessions.expire_at(b"never-there", START)
    db.expire(b"p", 1)  # the default keyspace has no `p`: nothing
    assert sessions.get_with_expiry(b"e") == (b"v", START + timedelta(seconds=3))
    clock.advance(10)
    for k in (b"k", b"at", b"e", b"never-there"):
        absent_everywhere(sessions, k)
    assert sorted(sessions.iter()) == [(b"p", b"v")]
    assert db[b"k"] == b"in default" and b"p" not in db

    by_time = db.keyspace("by_time", ordered=True)
    for i in range(10):
        by_time.put(b"t%d" % i, b"", ttl=i + 1)
    clock.advance(5)
    assert [k for k, _ in by_time.range(b"t0", b"t9")] == [b"t5", b"t6", b"t7", b"t8"]
    assert [k for k, _ in by_time.prefix(b"t", reverse=True)][:2] == [b"t9", b"t8"]
    assert by_time.ttl(b"t9") == 5.0


def test_a_batch_writes_expiring_values_and_changes_of_expiry_at_once(db, clock):
    users = db.keyspace("users")
    db.put(b"live", b"v")
    users.put(b"u", b"v", ttl=5)
    with db.batch() as b:
        b.put(b"a", b"1", ttl=10)
        b.put(b"b", b"2", 20, keyspace=users)
        b.put_expiring(b"c", b"3", START + timedelta(seconds=30))
        b.put_expiring(b"d", b"4", START.timestamp() + 40, keyspace=users)
        b.expire(b"live", 50)
        b.persist(b"u", keyspace=users)
        b.expire_at(b"absent", START + timedelta(seconds=1))
        assert len(b) == 7
        assert b"a" not in db  # nothing is written before the block ends
    assert db.ttl(b"a") == 10.0 and users.ttl(b"b") == 20.0
    assert db.ttl(b"c") == 30.0 and users.ttl(b"d") == 40.0
    assert db.ttl(b"live") == 50.0 and users.ttl(b"u") is None
    absent_everywhere(db, b"absent")

    # A batch of one key: later writes win, as for puts and deletes.
    b = spillway.WriteBatch()
    b.put(b"x", b"v", ttl=5, keyspace=users)
    b.persist(b"x", keyspace=users)
    db.write(b)
    assert users.ttl(b"x") is None
    with db.batch() as b:
        b.put(b"y", b"v")
        b.expire(b"y", 5)
    assert db.ttl(b"y") == 5.0

    # An exception in the block: none of it, ttls included.
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put(b"z", b"v", ttl=5)
            b.persist(b"live")
            raise RuntimeError
    assert b"z" not in db and db.ttl(b"live") == 50.0

    clock.advance(60)
    assert sorted(db) == [] and sorted(users) == [b"u", b"x"]


def test_a_batch_counts_a_ttl_by_its_store_s_clock_when_it_knows_the_store(db, clock):
    users = db.keyspace("users")
    free = spillway.WriteBatch()
    free.put(b"by-store", b"v", ttl=60, keyspace=users)  # users' store: its clock
    free.put(b"also-by-store", b"v", ttl=60)  # the batch knows its store now
    db.write(free)
    assert users.ttl(b"by-store") == 60.0 and db.ttl(b"also-by-store") == 60.0

    # A batch that knows no store counts by the wall clock: decades after this store's time.
    wall = spillway.WriteBatch()
    before = time.time()
    wall.put(b"by-wall", b"v", ttl=60)
    db.write(wall)
    assert db.expiry(b"by-wall").timestamp() >= before + 60 - 0.001  # to the millisecond
    clock.advance(60)
    assert db[b"by-wall"] == b"v" and b"also-by-store" not in db


def test_a_transaction_writes_and_reads_expiry(db, clock):
    accounts = db.keyspace("accounts")
    db.put(b"live", b"v")
    accounts.put(b"gone-soon", b"v", ttl=1)
    with db.transaction() as tx:
        tx.put(b"a", b"1", ttl=10)
        assert tx.ttl(b"a") == 10.0  # its own write
        assert tx.get_with_expiry(b"a") == (b"1", START + timedelta(seconds=10))
        tx.put_expiring(b"b", b"2", START + timedelta(seconds=20), keyspace=accounts)
        assert tx.expiry(b"b", keyspace=accounts) == START + timedelta(seconds=20)
        tx.expire(b"live", 30)
        assert tx.ttl(b"live") == 30.0 and tx[b"live"] == b"v"
        tx.persist(b"gone-soon", keyspace=accounts)
        assert tx.ttl(b"gone-soon", keyspace=accounts) is None
        tx.expire(b"absent", 5)  # nothing: absent it stays
        assert tx.get_with_expiry(b"absent") is None and b"absent" not in tx
        with pytest.raises(KeyError):
            tx.ttl(b"absent")
        with pytest.raises(KeyError):
            tx.expiry(b"absent", keyspace=accounts)
        tx.expire_at(b"a", START + timedelta(seconds=15))
        assert tx.ttl(b"a") == 15.0
        assert db.get(b"a") is None and db.ttl(b"live") is None  # not before the commit
    assert db.ttl(b"a") == 15.0 and accounts.ttl(b"b") == 20.0
    assert db.ttl(b"live") == 30.0 and accounts.ttl(b"gone-soon") is None
    absent_everywhere(db, b"absent")

    # A transaction reads as the clock says now: a key whose time comes meanwhile is gone.
    with db.transaction() as tx:
        assert tx[b"a"] == b"1"
        clock.advance(15)
        assert tx.get(b"a") is None and tx.get_with_expiry(b"a", 0) == 0
        assert sorted(k for k, _ in tx.iter()) == [b"live"]


def test_a_transaction_s_ttl_is_a_read_and_its_expire_is_blind(db):
    db.put(b"k", b"v", ttl=10)
    tx = db.transaction()
    assert tx.ttl(b"k") == 10.0
    tx.put(b"other", b"v")
    db.put(b"k", b"changed")  # written since tx read it
    with pytest.raises(spillway.ConflictError):
        tx.commit()
    assert b"other" not in db

    tx = db.transaction()
    tx.expire(b"k", 5)  # not a read
    tx.persist(b"k2")
    db.put(b"k", b"again")
    tx.commit()
    assert db[b"k"] == b"again" and db.ttl(b"k") == 5.0


def test_a_merge_keeps_the_value_s_expiry_and_one_after_it_starts_anew(tmp_path, clock):
    def u64(n):
        return n.to_bytes(8, "little")

    with spillway.open(tmp_path / "s", merge_operator="add", clock=clock) as db:
        db.put(b"hits", u64(1), ttl=10)
        db.merge(b"hits", u64(2))
        assert db.get_with_expiry(b"hits") == (u64(3), START + timedelta(seconds=10))
        clock.advance(10)
        assert db.get(b"hits") is None
        db.merge(b"hits", u64(5))  # after it expired: from nothing, with no expiry
        assert db.get_with_expiry(b"hits") == (u64(5), None)


def test_the_manual_clock(tmp_path):
    clock = spillway.ManualClock(START)
    assert clock.now() == START and clock.now().tzinfo == timezone.utc
    assert clock.time() == START.timestamp()
    clock.advance(1.5)
    clock.advance(timedelta(minutes=1))
    clock.advance(0)
    assert clock.now() == START + timedelta(seconds=61.5)
    clock.set(START.timestamp() - 100)  # back too
    assert clock.now() == START - timedelta(seconds=100)
    clock.set(START)
    for bad in (-1, timedelta(seconds=-1), math.nan):
        with pytest.raises(ValueError):
            clock.advance(bad)
    with pytest.raises(ValueError, match="naive"):
        spillway.ManualClock(datetime(2001, 1, 1))
    with pytest.raises(ValueError, match="naive"):
        clock.set(datetime(2001, 1, 1))
    assert "2001-02-03 04:05:06" in repr(clock)
    assert abs(spillway.ManualClock().time() - time.time()) < 60  # default: now
    with pytest.raises(TypeError, match="ManualClock"):
        spillway.open(tmp_path / "x", clock=time.time)

    # One clock, two stores; a store's clock is not recorded: opened without one, the store
    # reads the wall clock, decades after START.
    with spillway.open(tmp_path / "a", clock=clock) as a:
        with spillway.open(tmp_path / "b", clock=clock, ordered=True) as b:
            a.put(b"k", b"v", ttl=10)
            b.put(b"k", b"v", ttl=20)
            clock.advance(10)
            assert b"k" not in a and b.ttl(b"k") == 10.0
    with spillway.open(tmp_path / "b", clock=None) as b:
        assert b"k" not in b


def test_the_wall_clock_by_default(tmp_path):
    with spillway.open(tmp_path / "s") as db:
        db.put(b"k", b"v", ttl=0.05)
        db.put(b"stays", b"v", ttl=3600)
        left = db.ttl(b"k")
        assert left is not None and 0 <= left <= 0.05
        expires = db.expiry(b"stays").timestamp()
        assert time.time() + 3599 <= expires <= time.time() + 3600
        time.sleep(0.1)
        assert b"k" not in db and db[b"stays"] == b"v"
