"""Keyspaces and transactions from Python: keyspaces of either order and with an operator
against dict models across reopens, dropping and swapping, batches across keyspaces (atomic,
also when the process is killed), snapshots of every keyspace, and transactions — reading
their own writes, conflicting with nothing applied, as context managers, and moving money
between accounts from several threads. Run: `pip install ./python pytest && pytest
python/tests`."""

import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import spillway


def u64(n):
    return n.to_bytes(8, "little")


def num(b):
    return int.from_bytes(b, "little")


@pytest.fixture
def db(tmp_path):
    with spillway.open(tmp_path / "store") as db:
        yield db


# (name, ordered, merge_operator) of the keyspaces the model test drives.
KINDS = [
    ("hashed", False, None),
    ("ordered", True, None),
    ("counters", True, "add"),
    ("hashed_counters", False, "add"),
]


def check_against(ks, model, ordered):
    """Every read of `ks` agrees with `model`, a dict of its keys and values."""
    assert ks.ordered == ordered
    keys = sorted(model)
    assert sorted(ks.iter()) == sorted(model.items())
    assert sorted(ks) == keys
    probe = keys[:20] + [b"absent", b"k999"]
    assert ks.multi_get(probe) == [model.get(k) for k in probe]
    for k in probe:
        assert ks.get(k) == model.get(k)
        assert (k in ks) == (k in model)
    # An estimate: deletes and merges in memory of keys on disk are not all told apart.
    assert abs(ks.estimate_keys() - len(model)) <= 2 + len(model) // 10
    if ordered:
        assert [k for k, _ in ks.iter()] == keys
        assert list(reversed(ks)) == keys[::-1]
        lo, hi = b"k020", b"k070"
        want = [(k, model[k]) for k in keys if lo <= k < hi]
        assert list(ks.range(lo, hi)) == want
        assert list(ks.range(lo, hi, reverse=True)) == want[::-1]
        assert list(ks.range(end=hi)) == [(k, model[k]) for k in keys if k < hi]
        assert list(ks.prefix(b"k05", reverse=True)) == [
            (k, model[k]) for k in keys[::-1] if k.startswith(b"k05")
        ]
    else:
        with pytest.raises(spillway.NotOrderedError):
            ks.range(b"a", b"b")


def test_keyspaces_of_either_order_and_with_an_operator_are_dicts_across_reopens(tmp_path):
    rng = random.Random(29)
    path = tmp_path / "store"
    models = {name: {} for name, _, _ in KINDS}
    default_model = {}
    for round in range(4):
        with spillway.open(path) as db:
            # The first round makes them; later ones open them as they were made (no order
            # or operator given), or name what they were made with.
            spaces = {}
            for name, ordered, op in KINDS:
                if round == 0 or round == 3:
                    spaces[name] = db.keyspace(name, ordered=ordered, merge_operator=op)
                else:
                    spaces[name] = db.keyspace(name)
            assert db.keyspaces() == sorted(models)
            for name, ordered, _ in KINDS:
                check_against(spaces[name], models[name], ordered)
            for i in range(400):
                name, ordered, op = rng.choice(KINDS)
                ks, model = spaces[name], models[name]
                k = b"k%03d" % rng.randrange(100)
                r = rng.random()
                if op and r < 0.4:
                    ks.merge(k, u64(3))
                    model[k] = u64(num(model.get(k, u64(0))) + 3)
                elif r < 0.75:
                    v = u64(rng.randrange(1000)) if op else b"v%d-%d" % (round, i)
                    if rng.random() < 0.5:
                        ks[k] = v
                    else:
                        ks.put(k, v, sync=rng.choice([None, True, False]))
                    model[k] = v
                elif r < 0.95:
                    if rng.random() < 0.5:
                        del ks[k]
                    else:
                        ks.delete(k, sync=rng.choice([None, True, False]))
                    model.pop(k, None)
                else:
                    db.flush()
                # The default keyspace is a collection of its own, and db's methods are its.
                if i % 10 == 0:
                    db[k] = b"default"
                    default_model[k] = b"default"
            for name, ordered, _ in KINDS:
                check_against(spaces[name], models[name], ordered)
            assert dict(db.iter()) == default_model
            assert dict(db.default_keyspace().iter()) == default_model
            with pytest.raises(spillway.NoMergeOperatorError):
                spaces["ordered"].merge(b"k", u64(1))
    with spillway.open(path) as db:
        with pytest.raises(spillway.KeyOrderMismatchError):
            db.keyspace("ordered", ordered=False)
        with pytest.raises(spillway.MergeOperatorMismatchError):
            db.keyspace("counters", merge_operator="max")
        with pytest.raises(spillway.InvalidOptionError, match="merge_operator"):
            db.keyspace("new", merge_operator="multiply")
        assert db.keyspace("counters", merge_operator="spillway.u64add").ordered


def test_keyspace_names_and_the_default_keyspace(db):
    default = db.default_keyspace()
    assert default.name == "" and db.keyspace("").name == ""
    default[b"k"] = b"v"
    assert db[b"k"] == b"v" and db.keyspace("")[b"k"] == b"v"
    assert db.keyspaces() == []  # the default keyspace is not listed
    users = db.keyspace("users")
    assert users.name == "users" and repr(users) == "<spillway.Keyspace 'users'>"
    assert not users.ordered and b"k" not in users
    with pytest.raises(spillway.InvalidKeyspaceError):
        db.keyspace("x" * 256)
    with pytest.raises(KeyError):
        users[b"nope"]
    assert users.get(b"nope", 7) == 7


def test_dropped_keyspaces_are_gone_at_once_and_for_good(tmp_path):
    path = tmp_path / "store"
    with spillway.open(path) as db:
        tmp = db.keyspace("tmp", ordered=True)
        keep = db.keyspace("keep")
        for i in range(100):
            tmp[b"k%d" % i] = b"v"
            keep[b"k%d" % i] = b"v"
        db.flush()
        tmp[b"in-memory"] = b"v"
        assert db.drop_keyspace("tmp") is True
        assert db.drop_keyspace("tmp") is False
        assert db.keyspaces() == ["keep"]
        calls = [lambda: tmp.get(b"k1"), lambda: tmp.put(b"k", b"v"), tmp.iter]
        for call in calls + [lambda: tmp.ordered, lambda: tmp.range(b"a")]:
            with pytest.raises(spillway.KeyspaceDroppedError):
                call()
        with pytest.raises(spillway.InvalidKeyspaceError):
            db.drop_keyspace("")
        again = db.keyspace("tmp")  # another keyspace under the name: empty, hashed
        assert list(again) == [] and not again.ordered
        with pytest.raises(spillway.KeyspaceDroppedError):
            tmp.get(b"k1")  # the old handle is of the dropped one
        again[b"new"] = b"v"
    with spillway.open(path) as db:
        assert db.keyspaces() == ["keep", "tmp"]
        assert list(db.keyspace("tmp")) == [b"new"]
        assert len(list(db.keyspace("keep"))) == 100


def test_swapping_keyspaces_exchanges_their_contents(db):
    a, b = db.keyspace("a", ordered=True), db.keyspace("b", ordered=True)
    a[b"x"] = b"from a"
    b[b"y"] = b"from b"
    db.swap_keyspaces("a", "b")
    assert list(a) == [b"y"] and list(b) == [b"x"]
    h = db.keyspace("h")
    with pytest.raises(spillway.InvalidKeyspaceError):
        db.swap_keyspaces("a", "h")  # another key order
    with pytest.raises(spillway.InvalidKeyspaceError):
        db.swap_keyspaces("a", "missing")
    db[b"d"] = b"default"
    db.swap_keyspaces("", "h")  # the default keyspace may be one of them
    assert list(h) == [b"d"] and list(db) == []


def test_batches_write_into_many_keyspaces_at_once(tmp_path, db):
    users, by_mail = db.keyspace("users"), db.keyspace("by_mail", ordered=True)
    counts = db.keyspace("counts", merge_operator="add")
    b = spillway.WriteBatch()
    b.put(b"u1", b"ada@example.com", keyspace=users)
    b.put(b"ada@example.com", b"u1", keyspace=by_mail)
    b.merge(b"users", u64(1), keyspace=counts)
    b.put(b"last", b"u1")  # the default keyspace
    b.delete(b"old", keyspace=users)
    assert len(b) == 5
    assert users.get(b"u1") is None and by_mail.get(b"ada@example.com") is None
    db.write(b)
    assert users[b"u1"] == b"ada@example.com" and by_mail[b"ada@example.com"] == b"u1"
    assert num(counts[b"users"]) == 1 and db[b"last"] == b"u1"

    # A `with` block's batch: all of it, or nothing of it after an exception.
    with db.batch() as b:
        b.put(b"u2", b"grace@example.com", keyspace=users)
        b.merge(b"users", u64(1), keyspace=counts)
    assert users[b"u2"] == b"grace@example.com" and num(counts[b"users"]) == 2
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put(b"u3", b"x", keyspace=users)
            b.merge(b"users", u64(1), keyspace=counts)
            raise RuntimeError
    assert b"u3" not in users and num(counts[b"users"]) == 2

    # A batch naming a dropped keyspace writes nothing, in any keyspace.
    gone = db.keyspace("gone")
    b = spillway.WriteBatch()
    b.put(b"u4", b"x", keyspace=users)
    b.put(b"k", b"x", keyspace=gone)
    db.drop_keyspace("gone")
    with pytest.raises(spillway.KeyspaceDroppedError):
        db.write(b)
    assert b"u4" not in users

    # Keyspaces of another store: refused, nothing written.
    with spillway.open(tmp_path / "other") as other:
        theirs = other.keyspace("users")
        b = spillway.WriteBatch()
        b.put(b"u5", b"x", keyspace=theirs)
        with pytest.raises(ValueError, match="another store"):
            db.write(b)
        with pytest.raises(ValueError, match="another store"):
            b.put(b"u6", b"x", keyspace=users)  # one batch, one store
        other.write(b)
        assert theirs[b"u5"] == b"x" and b"u5" not in users
        with pytest.raises(ValueError, match="another store"):
            with db.batch() as b:
                b.put(b"u7", b"x", keyspace=theirs)
        with pytest.raises(TypeError):
            spillway.WriteBatch().put(b"k", b"v", keyspace="users")  # a Keyspace, not a name


CHILD = """
import sys, spillway
db = spillway.open(sys.argv[1])
a, b = db.keyspace("a"), db.keyspace("b", ordered=True)
print("open", flush=True)
i = 0
while True:
    batch = spillway.WriteBatch()
    for j in range(10):
        batch.put(f"k{i}-{j}", f"v{i}", keyspace=a)
        batch.put(f"k{i}-{j}", f"v{i}", keyspace=b)
    batch.put(f"k{i}", f"v{i}")
    db.write(batch, sync=(i % 2 == 0))
    print(i, flush=True)
    i += 1
"""


def test_a_batch_across_keyspaces_survives_a_killed_process_whole_or_not_at_all(tmp_path):
    path = tmp_path / "crash"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout.readline().strip() == "open"
    acked = -1
    for line in child.stdout:
        acked = int(line)
        if acked >= 300:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with spillway.open(path) as db:
        a, b = db.keyspace("a"), db.keyspace("b")
        assert b.ordered
        for i in range(acked + 10):
            keys = [f"k{i}-{j}" for j in range(10)]
            got = a.multi_get(keys) + b.multi_get(keys) + [db.get(f"k{i}")]
            if i <= acked:  # a process crash loses nothing acknowledged
                assert got == [f"v{i}".encode()] * 21, i
            else:  # one after it may have reached the log: all of it or nothing
                assert got in ([f"v{i}".encode()] * 21, [None] * 21), i


def test_a_snapshot_sees_every_keyspace_at_one_moment(db):
    a, b = db.keyspace("a", ordered=True), db.keyspace("b")
    a[b"k"] = b"1"
    b[b"k"] = b"1"
    db[b"k"] = b"1"
    with db.snapshot() as snap:
        with db.batch() as batch:
            batch.put(b"k", b"2", keyspace=a)
            batch.put(b"k2", b"2", keyspace=a)
            batch.delete(b"k", keyspace=b)
            batch.put(b"k", b"2")
        assert snap.get(b"k", keyspace=a) == b"1" and snap.get(b"k", keyspace=b) == b"1"
        assert snap[b"k"] == b"1" and snap.get(b"x", 5, keyspace=a) == 5
        assert snap.multi_get([b"k", b"k2"], keyspace=a) == [b"1", None]
        assert list(snap.iter(keyspace=a)) == [(b"k", b"1")]
        assert list(snap.range(b"a", keyspace=a, reverse=True)) == [(b"k", b"1")]
        assert list(snap.prefix(b"k", keyspace=a)) == [(b"k", b"1")]
        with pytest.raises(spillway.NotOrderedError):
            snap.range(keyspace=b)
    assert list(a.iter()) == [(b"k", b"2"), (b"k2", b"2")] and b.get(b"k") is None


def test_a_transaction_reads_its_own_writes_in_gets_and_scans_both_ways(db):
    jobs = db.keyspace("jobs", ordered=True)
    counts = db.keyspace("counts", merge_operator="add")
    for k in [b"job:1", b"job:3", b"job:5"]:
        jobs[k] = b"old"
    counts[b"n"] = u64(10)
    tx = db.transaction()
    assert tx.active
    tx.put(b"job:2", b"new", keyspace=jobs)
    tx.put(b"job:5", b"new", keyspace=jobs)
    tx.delete(b"job:3", keyspace=jobs)
    tx.put(b"job:9", b"new", keyspace=jobs)  # outside the ranges below
    tx.merge(b"n", u64(5), keyspace=counts)
    tx[b"plain"] = b"default keyspace"
    assert tx.get(b"job:2", keyspace=jobs) == b"new" and tx.get(b"job:3", keyspace=jobs) is None
    assert tx.get(b"job:3", b"gone", keyspace=jobs) == b"gone"
    assert tx.multi_get([b"job:1", b"job:3", b"job:5"], keyspace=jobs) == [b"old", None, b"new"]
    assert num(tx.get(b"n", keyspace=counts)) == 15
    assert tx[b"plain"] == b"default keyspace" and b"plain" in tx and b"plain" not in db
    want = [(b"job:1", b"old"), (b"job:2", b"new"), (b"job:5", b"new")]
    assert list(tx.range(b"job:", b"job:6", keyspace=jobs)) == want
    assert list(tx.range(b"job:", b"job:6", reverse=True, keyspace=jobs)) == want[::-1]
    assert list(tx.prefix(b"job:", keyspace=jobs))[-1] == (b"job:9", b"new")
    assert [k for k, _ in tx.prefix(b"job:", reverse=True, keyspace=jobs)][:2] == [
        b"job:9",
        b"job:5",
    ]
    assert dict(tx.iter(keyspace=jobs)) == dict(want + [(b"job:9", b"new")])
    with pytest.raises(spillway.NotOrderedError):
        tx.range(keyspace=counts)
    # Nothing is seen outside until it commits; then all of it.
    assert b"job:2" not in jobs and num(counts[b"n"]) == 10
    tx.commit()
    assert not tx.active
    assert list(jobs.iter()) == want + [(b"job:9", b"new")]
    assert num(counts[b"n"]) == 15 and db[b"plain"] == b"default keyspace"
    with pytest.raises(spillway.ClosedError, match="committed"):
        tx.get(b"job:1", keyspace=jobs)
    with pytest.raises(spillway.ClosedError):
        tx.commit()
    tx.rollback()  # over already: nothing happens


def test_a_conflicting_commit_raises_and_applies_nothing(db):
    accounts, log = db.keyspace("accounts"), db.keyspace("log", ordered=True)
    accounts[b"alice"] = u64(100)
    tx = db.transaction()
    balance = num(tx.get(b"alice", keyspace=accounts))
    tx.put(b"alice", u64(balance - 30), keyspace=accounts)
    tx.put(b"entry:1", b"alice -30", keyspace=log)
    tx.put(b"side", b"effect")
    tx.check()  # nothing written since: it would commit
    accounts[b"alice"] = u64(50)  # a plain write to a key it read
    with pytest.raises(spillway.ConflictError):
        tx.check()
    with pytest.raises(spillway.ConflictError) as e:
        tx.commit()
    assert isinstance(e.value, spillway.SpillwayError)
    assert num(accounts[b"alice"]) == 50 and list(log) == [] and b"side" not in db
    assert not tx.active

    # A scanned range counts as read: a key written into it since (a phantom) conflicts.
    tx = db.transaction()
    assert list(tx.range(b"entry:", b"entry;", keyspace=log)) == []
    tx.put(b"count", b"0", keyspace=log)
    log[b"entry:7"] = b"someone else's"
    with pytest.raises(spillway.ConflictError):
        tx.commit(sync=True)
    assert b"count" not in log

    # Blind writes never conflict; nor does a write outside what was read.
    tx = db.transaction()
    tx.get(b"bob", keyspace=accounts)
    tx.put(b"alice", u64(1), keyspace=accounts)
    accounts[b"alice"] = u64(2)
    accounts[b"carol"] = u64(3)
    tx.commit()
    assert num(accounts[b"alice"]) == 1


def test_a_transaction_as_a_context_manager(db):
    ks = db.keyspace("ks")
    with db.transaction() as tx:
        tx.put(b"a", b"1", keyspace=ks)
    assert ks[b"a"] == b"1" and not tx.active

    with pytest.raises(RuntimeError):
        with db.transaction() as tx:
            tx.put(b"b", b"1", keyspace=ks)
            raise RuntimeError("rolled back")
    assert b"b" not in ks and not tx.active

    with pytest.raises(spillway.ConflictError):
        with db.transaction(sync=True) as tx:
            tx.get(b"a", keyspace=ks)
            tx.put(b"c", b"1", keyspace=ks)
            ks[b"a"] = b"2"  # written since the block's snapshot
    assert b"c" not in ks

    with db.transaction() as tx:  # ended inside the block: left as it is
        tx.put(b"d", b"1", keyspace=ks)
        tx.rollback()
    assert b"d" not in ks
    with db.transaction() as tx:
        tx.put(b"e", b"1", keyspace=ks)
        tx.commit()
    assert ks[b"e"] == b"1"


def test_closing_the_store_lets_go_of_keyspaces_and_transactions(tmp_path):
    path = tmp_path / "store"
    with spillway.open(path) as db:
        ks = db.keyspace("ks")
        ks[b"k"] = b"v"
        tx = db.transaction()
        tx.put(b"k", b"tx", keyspace=ks)
    # The objects live on, but no longer hold the store: it opens again.
    with pytest.raises(spillway.ClosedError):
        ks.get(b"k")
    with pytest.raises(spillway.ClosedError, match="closed"):
        tx.commit()
    with spillway.open(path) as db:
        assert db.keyspace("ks")[b"k"] == b"v"  # the transaction was rolled back
        with pytest.raises(ValueError, match="another store"):
            db.transaction().get(b"k", keyspace=ks)


def test_threads_moving_money_keep_the_total(db):
    accounts = db.keyspace("accounts", ordered=True)
    n, start = 6, 1000
    names = [b"acct:%02d" % i for i in range(n)]
    with db.batch() as b:
        for name in names:
            b.put(name, u64(start), keyspace=accounts)
    conflicts = [0]
    errors = []

    def transfer(seed):
        rng = random.Random(seed)
        try:
            for _ in range(150):
                src, dst = rng.sample(names, 2)
                amount = rng.randrange(1, 50)
                while True:
                    try:
                        with db.transaction() as tx:
                            a = num(tx.get(src, keyspace=accounts))
                            b = num(tx.get(dst, keyspace=accounts))
                            time.sleep(0.0002)  # let the others in between read and write
                            if a < amount:
                                break  # commits nothing: it wrote nothing
                            tx.put(src, u64(a - amount), keyspace=accounts)
                            tx.put(dst, u64(b + amount), keyspace=accounts)
                        break
                    except spillway.ConflictError:
                        conflicts[0] += 1
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def audit():
        try:
            for _ in range(100):
                tx = db.transaction()  # a snapshot: always a consistent total
                assert sum(num(v) for _, v in tx.range(keyspace=accounts)) == n * start
                tx.rollback()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=transfer, args=(t,)) for t in range(4)]
    threads.append(threading.Thread(target=audit))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    balances = [num(v) for v in accounts.multi_get(names)]
    assert sum(balances) == n * start and min(balances) >= 0
    assert conflicts[0] > 0  # they did race, and the losers ran again
