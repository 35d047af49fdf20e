"""Range deletes and clear from Python against a model: `delete_range(start, end)` (`None`:
an open end), `clear()`, `del db[start:end]`, and `WriteBatch.delete_range`, on stores and
keyspaces of both orders — random puts, deletes and range deletes (overlapping, nested,
inverted) checked against a dict after each step, by gets and by scans both ways, across
spills and reopens; snapshots taken before a range delete; later writes in a deleted range;
batch order (a write before the range delete in the batch is covered, one after it is not);
`NotOrderedError` for a partial range of a hashed store or keyspace, and nothing written."""

import random

import pytest

import spillway

# Small buffers and nodes: a few hundred writes spill and split, so range deletes meet
# records on disk as well as in memory.
SMALL = dict(root_buffer_size="16K", node_size=32 << 10, page_size=1024, fan_out=4)


def key(i):
    return b"k%04d" % i


def check_model(target, model, rng):
    """`target` (a Db or Keyspace of an ordered store) holds exactly `model`, by every read."""
    want = sorted(model.items())
    assert list(target.iter()) == want
    assert list(target) == [k for k, _ in want]
    assert list(reversed(target)) == [k for k, _ in reversed(want)]
    a, b = sorted(key(rng.randrange(0, 400)) for _ in range(2))
    inside = [(k, v) for k, v in want if a <= k < b]
    assert list(target.range(a, b)) == inside
    assert list(target.range(a, b, reverse=True)) == inside[::-1]
    assert list(target.range(None, b)) == [(k, v) for k, v in want if k < b]
    assert list(target.range(a, None, reverse=True)) == [(k, v) for k, v in want if k >= a][::-1]
    probes = [key(rng.randrange(0, 400)) for _ in range(20)]
    assert target.multi_get(probes) == [model.get(k) for k in probes]
    for k in probes[:5]:
        assert (k in target) == (k in model)


def bound(rng):
    """A range end: a key, or None (open) now and then."""
    return None if rng.random() < 0.15 else key(rng.randrange(0, 400))


def delete_model(model, start, end):
    for k in [k for k in model if (start is None or k >= start) and (end is None or k < end)]:
        del model[k]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_puts_and_range_deletes_match_a_dict(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "store"
    db = spillway.open(path, ordered=True, **SMALL)
    model = {}
    spills = 0  # root spills, over every open
    try:
        for step in range(400):
            op = rng.random()
            if op < 0.55:
                for _ in range(rng.randrange(1, 20)):
                    k, v = key(rng.randrange(0, 400)), b"v%d-%d" % (step, rng.randrange(1000))
                    db.put(k, v)
                    model[k] = v
            elif op < 0.65:
                k = key(rng.randrange(0, 400))
                db.delete(k)
                model.pop(k, None)
            elif op < 0.85:
                # Inverted ranges (start past end) are allowed and delete nothing.
                start, end = bound(rng), bound(rng)
                if rng.random() < 0.5:
                    db.delete_range(start, end)
                else:
                    del db[start:end]
                delete_model(model, start, end)
            elif op < 0.95:
                # A batch: puts and range deletes in order, the later winning.
                batch = spillway.WriteBatch()
                for i in range(rng.randrange(1, 8)):
                    if rng.random() < 0.3:
                        start, end = bound(rng), bound(rng)
                        batch.delete_range(start, end)
                        delete_model(model, start, end)
                    else:
                        k, v = key(rng.randrange(0, 400)), b"b%d-%d" % (step, i)
                        batch.put(k, v)
                        model[k] = v
                db.write(batch, sync=False)
            elif op < 0.97:
                db.clear()
                model.clear()
            elif op < 0.99:
                db.flush()
            else:
                spills += db.stats()["root_spills"]
                db.close()
                db = spillway.open(path, **SMALL)
            if step % 10 == 0:
                check_model(db, model, rng)
        check_model(db, model, rng)
        spills += db.stats()["root_spills"]
        assert spills > 0, "the test should meet records on disk"
        db.close()
        db = spillway.open(path)
        check_model(db, model, rng)
    finally:
        db.close()


def test_an_ordered_keyspace_against_a_model_and_beside_the_default_keyspace(tmp_path):
    rng = random.Random(7)
    with spillway.open(tmp_path / "s", **SMALL) as db:
        logs = db.keyspace("logs", ordered=True)
        model = {}
        for i in range(300):
            k = key(rng.randrange(0, 400))
            logs[k] = b"%d" % i
            model[k] = b"%d" % i
            db[k] = b"default"  # the default keyspace (hashed) is another collection
            if i % 25 == 24:
                start, end = sorted([key(rng.randrange(0, 400)), key(rng.randrange(0, 400))])
                logs.delete_range(start, end, sync=True)
                delete_model(model, start, end)
                check_model(logs, model, rng)
        del logs[key(100) :]
        delete_model(model, key(100), None)
        check_model(logs, model, rng)
        written = sorted(set(db))
        assert len(written) > 200, "a keyspace's range delete is its own"
        logs.clear()
        assert list(logs) == [] and logs.get(key(1)) is None
        assert sorted(db) == written


def test_a_hashed_store_or_keyspace_refuses_a_partial_range_and_clears_whole(tmp_path):
    with spillway.open(tmp_path / "s", ordered=False) as db:
        db.put(b"a", b"1")
        db.put(b"b", b"2")
        with pytest.raises(spillway.NotOrderedError):
            db.delete_range(b"a", b"b")
        with pytest.raises(spillway.NotOrderedError):
            db.delete_range(None, b"b")
        with pytest.raises(spillway.NotOrderedError):
            del db[b"a":]
        assert sorted(db) == [b"a", b"b"], "nothing deleted"
        ks = db.keyspace("sessions")
        ks.put(b"s1", b"x")
        with pytest.raises(spillway.NotOrderedError):
            ks.delete_range(b"s", None)
        # A batch with a partial range of a hashed keyspace: refused whole when written.
        batch = spillway.WriteBatch()
        batch.put(b"c", b"3")
        batch.delete_range(b"s", b"t", keyspace=ks)
        with pytest.raises(spillway.NotOrderedError):
            db.write(batch)
        assert db.get(b"c") is None and ks[b"s1"] == b"x"
        # Every key: fine in either order.
        del ks[:]
        assert list(ks) == []
        db.delete_range(None, None, sync=True)
        assert list(db) == []
        db.put(b"later", b"v")
        assert list(db) == [b"later"], "later writes are not covered"
        db.clear(sync=False)
        assert db.get(b"later") is None


def test_a_range_delete_hides_older_records_only_and_snapshots_before_it_keep_them(tmp_path):
    with spillway.open(tmp_path / "s", ordered=True) as db:
        for i in range(10):
            db.put(key(i), b"old")
        db.flush()  # on disk
        db.put(key(3), b"newer")  # in memory
        with db.snapshot() as before:
            it = db.range(key(2), key(6))
            db.delete_range(key(2), key(6))
            db.put(key(4), b"after")
            assert [k for k, _ in before.iter()] == [key(i) for i in range(10)]
            assert before[key(3)] == b"newer"
            assert [k for k, _ in it] == [key(i) for i in range(2, 6)], "an iterator's view"
        assert list(db) == [key(0), key(1), key(4)] + [key(i) for i in range(6, 10)]
        assert db[key(4)] == b"after"
        assert list(reversed(db))[-3:] == [key(4), key(1), key(0)]


def test_a_batch_applies_its_writes_and_range_deletes_in_order(tmp_path):
    with spillway.open(tmp_path / "s", ordered=True) as db:
        events = db.keyspace("events", ordered=True)
        db.put(b"a1", b"old")
        events.put(b"e1", b"old")
        with db.batch() as b:
            b.put(b"a2", b"covered")  # before the range delete: deleted by it
            b.delete_range(b"a", b"b")
            b.put(b"a3", b"kept")  # after it: kept
            b.put(b"e2", b"kept", keyspace=events)
            b.delete_range(None, b"e2", keyspace=events)
            del b[b"a4":b"a5"]  # a slice of the default keyspace: a range delete too
        assert list(db.iter()) == [(b"a3", b"kept")]
        assert list(events.iter()) == [(b"e2", b"kept")]
        with pytest.raises(ValueError):
            del db[b"a":b"z":2]
        with pytest.raises(ValueError):
            b = spillway.WriteBatch()
            del b[::1]
        assert len(b) == 0


def test_a_range_delete_or_clear_survives_a_reopen_and_later_writes_do_too(tmp_path):
    path = tmp_path / "s"
    with spillway.open(path, ordered=True, **SMALL) as db:
        for i in range(2000):
            db.put(key(i % 400) + b"-%d" % i, b"v")
        db.delete_range(key(100), key(300), sync=True)
        db.put(key(200), b"back")
        db.keyspace("other").put(b"x", b"y")
        db.keyspace("other").clear()
    with spillway.open(path) as db:
        keys = list(db)
        assert keys and all(not (key(100) <= k < key(300)) or k == key(200) for k in keys)
        assert len(keys) == 2000 // 400 * 200 + 1
        assert list(db.keyspace("other")) == []


def test_a_transaction_deletes_a_range_in_its_own_view_at_once(tmp_path):
    with spillway.open(tmp_path / "s", ordered=True) as db:
        log = db.keyspace("log", ordered=True)
        sessions = db.keyspace("sessions")  # hashed: clear only
        for n in range(1, 6):
            log.put(b"entry:%d" % n, b"old")
        sessions.put(b"s1", b"x")
        with db.transaction() as tx:
            tx.put(b"entry:9", b"before", keyspace=log)  # before the range delete: gone
            tx.delete_range(b"entry:3", None, keyspace=log)
            tx.put(b"entry:3", b"new", keyspace=log)  # after it: stands
            assert tx.get(b"entry:4", keyspace=log) is None
            assert tx.get(b"entry:9", keyspace=log) is None
            assert [k for k, _ in tx.range(None, None, keyspace=log)] == [
                b"entry:1",
                b"entry:2",
                b"entry:3",
            ]
            assert [k for k, _ in tx.range(None, None, reverse=True, keyspace=log)] == [
                b"entry:3",
                b"entry:2",
                b"entry:1",
            ]
            with pytest.raises(spillway.NotOrderedError):
                tx.delete_range(b"a", b"b", keyspace=sessions)
            tx.clear(keyspace=sessions)
            assert list(tx.iter(keyspace=sessions)) == []
            # Outside, nothing yet.
            assert log.get(b"entry:4") == b"old"
        assert list(log.iter()) == [
            (b"entry:1", b"old"),
            (b"entry:2", b"old"),
            (b"entry:3", b"new"),
        ]
        assert list(sessions.iter()) == []
