"""The Python package against its documentation: the dict-like API, what fsyncs and what does
not, batches, scans, merges (a key that fails to fold fails alone), every option of the
engine by name, stores reopened as they were made, errors as exception classes, the type
stubs against the module, threads writing at once, a child process killed mid-write, and
pickling refused. Run: `pip install ./python pytest && pytest python/tests`."""

import ast
import inspect
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import spillway


@pytest.fixture
def db(tmp_path):
    with spillway.open(tmp_path / "store") as db:
        yield db


def test_a_db_is_a_dict_of_bytes(db):
    db[b"a"] = b"1"
    db["b"] = "x"  # str is taken as UTF-8
    db.put(bytearray(b"c"), b"3")
    assert db[b"a"] == b"1" and db[b"b"] == b"x" and db["c"] == b"3"
    assert db.get(b"nope") is None and db.get(b"nope", 7) == 7
    assert b"a" in db and "nope" not in db
    with pytest.raises(KeyError):
        db[b"nope"]
    del db[b"a"]
    del db[b"never"]  # a blind delete: absent keys raise nothing
    assert b"a" not in db
    assert sorted(db) == [b"b", b"c"]
    assert db.multi_get([b"b", b"a", "c"]) == [b"x", None, b"3"]
    with pytest.raises(TypeError):
        db[1] = b"x"


def test_batches_apply_at_once_or_not_at_all(db):
    b = spillway.WriteBatch()
    b.put(b"k1", b"v1")
    b[b"k2"] = b"v2"
    b.delete(b"k1")
    assert len(b) == 3
    db.write(b, sync=False)
    db.sync()
    assert db.get(b"k1") is None and db[b"k2"] == b"v2"
    with db.batch() as b:
        b.put(b"k3", b"v3")
    assert db[b"k3"] == b"v3"
    with pytest.raises(RuntimeError):
        with db.batch() as b:
            b.put(b"k4", b"v4")
            raise RuntimeError("nothing of the block is written")
    assert b"k4" not in db


def test_single_writes_fsync_only_when_asked(tmp_path):
    def fsyncs_after(db, write):
        before = db.stats()["fsyncs"]
        write()
        return db.stats()["fsyncs"] - before

    one = (1).to_bytes(8, "little")
    with spillway.open(tmp_path / "default", merge_operator="add") as db:
        # The default store: logged, not fsynced (safe from a process crash only).
        assert fsyncs_after(db, lambda: db.put(b"a", b"1")) == 0
        assert fsyncs_after(db, lambda: db.__setitem__(b"b", b"2")) == 0
        assert fsyncs_after(db, lambda: db.delete(b"b")) == 0
        assert fsyncs_after(db, lambda: db.merge(b"n", one)) == 0
        assert fsyncs_after(db, lambda: db.put(b"c", b"3", sync=False)) == 0
        # Asked for: fsynced before the call returns.
        assert fsyncs_after(db, lambda: db.put(b"d", b"4", sync=True)) >= 1
        assert fsyncs_after(db, lambda: db.delete(b"a", sync=True)) >= 1
        assert fsyncs_after(db, lambda: db.merge(b"n", one, sync=True)) >= 1
        db.put(b"e", b"5")
        assert fsyncs_after(db, db.sync) >= 1
        assert db.multi_get([b"a", b"b", b"c", b"d", b"e"]) == [None, None, b"3", b"4", b"5"]
        assert db[b"n"] == (2).to_bytes(8, "little")
    with spillway.open(tmp_path / "synced", sync_by_default=True) as db:
        assert fsyncs_after(db, lambda: db.put(b"a", b"1")) >= 1
        assert fsyncs_after(db, lambda: db.__setitem__(b"b", b"2")) >= 1
        assert fsyncs_after(db, lambda: db.__delitem__(b"b")) >= 1
    # sync=False on a store that syncs by default: logged only. (A fresh store: no synced
    # write has yet started the log's prefill, whose own fsyncs would count.)
    with spillway.open(tmp_path / "unsynced", sync_by_default=True) as db:
        assert fsyncs_after(db, lambda: db.put(b"a", b"1", sync=False)) == 0
        assert fsyncs_after(db, lambda: db.delete(b"a", sync=False)) == 0
        assert db.get(b"a") is None


def test_ordered_stores_scan_in_key_order(tmp_path):
    with spillway.open(tmp_path / "o", ordered=True) as db:
        assert db.ordered
        for k in [b"apple", b"banana", b"cherry", b"date"]:
            db[k] = str(len(k))
        assert [k for k, _ in db.range(b"b", b"d")] == [b"banana", b"cherry"]
        assert [k for k, _ in db.range(b"b", reverse=True)] == [b"date", b"cherry", b"banana"]
        assert list(db.prefix(b"ch")) == [(b"cherry", b"6")]
        assert [k for k, _ in reversed(db.iter())] == [b"date", b"cherry", b"banana", b"apple"]
        assert list(db) == [b"apple", b"banana", b"cherry", b"date"]
        assert list(reversed(db)) == [b"date", b"cherry", b"banana", b"apple"]
    with spillway.open(tmp_path / "h") as hashed:
        assert not hashed.ordered
        with pytest.raises(spillway.NotOrderedError):
            hashed.range(b"a", b"b")


def test_snapshots_see_one_moment(tmp_path):
    with spillway.open(tmp_path / "snap", ordered=True) as db:
        db[b"balance"] = b"10"
        db[b"a"] = b"1"
        with db.snapshot() as before:
            db[b"balance"] = b"25"
            del db[b"a"]
            db[b"b"] = b"2"
            db.flush()  # spills change nothing a snapshot sees
            assert before[b"balance"] == b"10" and db[b"balance"] == b"25"
            assert b"a" in before and b"b" not in before
            assert before.multi_get([b"a", b"b"]) == [b"1", None]
            assert list(before) == [b"a", b"balance"]
            assert [k for k, _ in before.range(b"b")] == [b"balance"]
        with pytest.raises(spillway.ClosedError):
            before.get(b"a")


def test_merges_fold_without_reading(tmp_path):
    with spillway.open(tmp_path / "m", merge_operator="add") as db:
        for _ in range(10):
            db.merge(b"visits", (3).to_bytes(8, "little"))
        assert int.from_bytes(db[b"visits"], "little") == 30
    with spillway.open(tmp_path / "n") as db:
        with pytest.raises(spillway.NoMergeOperatorError):
            db.merge(b"k", b"x")


def test_a_store_opens_as_it_was_made(tmp_path):
    one = (1).to_bytes(8, "little")
    with spillway.open(tmp_path / "c", merge_operator="add") as db:
        db.merge(b"hits", one)
    with spillway.open(tmp_path / "c") as db:  # the operator it records
        db.merge(b"hits", one)
        assert db[b"hits"] == (2).to_bytes(8, "little")
    with pytest.raises(spillway.MergeOperatorMismatchError):
        spillway.open(tmp_path / "c", merge_operator="max")

    with spillway.open(tmp_path / "o", ordered=True) as db:
        for k in [b"b", b"a", b"c"]:
            db[k] = k
    with spillway.open(tmp_path / "o") as db:  # the key order it records
        assert db.ordered
        assert [k for k, _ in db.range(b"b")] == [b"b", b"c"]
        assert list(db) == [b"a", b"b", b"c"]
    with pytest.raises(spillway.KeyOrderMismatchError):
        spillway.open(tmp_path / "o", ordered=False)


def test_a_key_whose_operands_fail_to_fold_fails_alone_in_a_scan(tmp_path):
    one = (1).to_bytes(8, "little")
    others = [b"a", b"b", b"m", b"y", b"z"]
    for ordered in (True, False):
        with spillway.open(tmp_path / str(ordered), ordered=ordered, merge_operator="add") as db:
            for k in others:
                db[k] = b"v"
            db.put(b"k", b"text")  # not an 8-byte counter: "add" cannot fold into it
            db.merge(b"k", one)
            for flushed in (False, True):
                with pytest.raises(spillway.MergeFailedError):
                    db[b"k"]
                # A for loop ends at the error; the same iterator then goes on past the key.
                it, before = iter(db), []
                with pytest.raises(spillway.MergeFailedError, match="k"):
                    for k in it:
                        before.append(k)
                after = list(it)
                assert sorted(before + after) == others
                if ordered:
                    assert (before, after) == (others[:2], others[2:])
                    it = db.range(b"b", reverse=True)
                    assert [next(it)[0] for _ in range(3)] == [b"z", b"y", b"m"]
                    with pytest.raises(spillway.MergeFailedError):
                        next(it)
                    assert list(it) == [(b"b", b"v")]
                db.flush()  # the operands stay on disk as they are: the same again


def test_errors_are_classes_of_one_family(tmp_path, db):
    with pytest.raises(spillway.KeyTooLargeError) as e:
        db.put(b"k" * (spillway.MAX_KEY_LEN + 1), b"v")
    assert isinstance(e.value, spillway.SpillwayError)
    with pytest.raises(spillway.LockedError):
        spillway.open(tmp_path / "store")  # the fixture holds it
    with pytest.raises(spillway.InvalidOptionError):
        spillway.open(tmp_path / "tiny", root_buffer_size=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        spillway.open(tmp_path / "x", colour="blue")
    with pytest.raises(spillway.InvalidOptionError, match="merge_operator"):
        spillway.open(tmp_path / "y", merge_operator="multiply")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "MANIFEST").write_bytes(b"not a manifest at all")
    with pytest.raises(spillway.SpillwayError):
        spillway.open(tmp_path / "junk")
    db.close()
    with pytest.raises(spillway.ClosedError):
        db.get(b"a")
    db.close()  # twice is fine


def test_open_takes_every_option_of_the_engine_by_its_name(tmp_path):
    assert {"node_size", "fan_out", "fast_split_ratio", "max_lists_per_node", "key_order"} <= set(
        spillway.OPTIONS
    )
    # Sizes as numbers or text ("16K"), counts as ints, None clearing an optional option.
    small = dict(root_buffer_size="16K", node_size=32 << 10, page_size=1024, fan_out=4)
    with spillway.open(
        tmp_path / "small",
        **small,
        fast_split_ratio=0,
        key_order="ordered",
        max_lists_per_node=None,
        memory_budget=None,
        merge_operator="add",
    ) as db:
        assert db.ordered
        for i in range(4000):
            db.put(b"key%06d" % i, b"v" * 40)
        db.merge(b"n", (5).to_bytes(8, "little"))
        db.flush()
        s = db.stats()
        # Nodes of 32 KiB, splitting slowly only: a tree, not one leaf.
        assert s["leaves"] > 4 and s["slow_splits"] > 0 and s["fast_splits"] == 0
        assert [k for k, _ in db.range(b"key003998")] == [b"key003998", b"key003999", b"n"]
    with spillway.open(tmp_path / "hashed", key_order="hashed") as db:
        assert not db.ordered
    with spillway.open(tmp_path / "also-hashed", ordered=False) as db:
        assert not db.ordered
    with spillway.open(tmp_path / "also-ordered", ordered=True) as db:
        assert db.ordered

    bad = [
        ("fan_out", 1),  # parsed, out of range
        ("fan_out", "many"),  # not parsed
        ("node_size", "big"),
        ("node_size", -1),
        ("fast_split_ratio", 65),
        ("max_lists_per_node", 1),
        ("key_order", "sideways"),
        ("mmap_log", "perhaps"),
        ("pace_writes", "sometimes"),
        ("memory_budget", 1 << 20),
        ("merge_operator", "multiply"),
    ]
    for i, (name, value) in enumerate(bad):
        with pytest.raises(spillway.InvalidOptionError, match=name):
            spillway.open(tmp_path / f"bad{i}", **{name: value})
    with pytest.raises(TypeError, match="fan_out"):
        spillway.open(tmp_path / "float", fan_out=4.0)
    with pytest.raises(TypeError, match="not both"):
        spillway.open(tmp_path / "both", ordered=True, key_order="ordered")
    with pytest.raises(TypeError, match="unexpected keyword argument 'nodesize'"):
        spillway.open(tmp_path / "typo", nodesize=1)


def test_stats_and_check(tmp_path):
    path = tmp_path / "s"
    with spillway.open(path) as db:
        for i in range(1000):
            db.write(_batch(i), sync=False)
        db.flush()
        s = db.stats()
        assert s["user_records_written"] == 1000 and s["root_spills"] == 1
        assert s["disk_records"] == 1000 and s["metadata_bytes"] > 0
    report = spillway.check(path)
    assert report["sound"] and report["problems"] == [] and report["records"] == 1000


def test_pace_writes_off_paces_no_write(tmp_path):
    small = dict(root_buffer_size="64K", node_size="1M", fan_out=8)
    for pace in (True, False, "off"):
        path = tmp_path / str(pace)
        with spillway.open(path, **small, pace_writes=pace) as db:
            for b in range(200):
                batch = spillway.WriteBatch()
                for i in range(100):
                    batch.put(b"key%06d" % (b * 100 + i), b"value %d" % b)
                db.write(batch, sync=False)
            stats = db.stats()
            assert stats["root_spills"] >= 5
            if pace is not True:
                assert stats["paced_writes"] == 0 and stats["pace_micros"] == 0
        with spillway.open(path) as db:
            assert len(list(db.iter())) == 20000
            assert db[b"key019999"] == b"value 199"


def test_saved_selectors_are_read_back_now_or_in_the_background(tmp_path):
    path = tmp_path / "sel"
    small = dict(root_buffer_size="64K", node_size="1M", fan_out=8, page_size=1024)
    with spillway.open(path, **small) as db:
        for i in range(20000):
            db.put(b"key%06d" % i, b"value %d" % i)
    # No preload: the open leaves every saved tier on disk until asked.
    with spillway.open(path, **small, preload_selectors=False) as db:
        unread = db.stats()["selector_tiers_unread"]
        assert unread > 0
        db.load_selectors()
        assert db.stats()["selector_tiers_unread"] == 0
        assert db[b"key012345"] == b"value 12345"
    # The preload (on by default) reads them while reads go on.
    with spillway.open(path, **small) as db:
        assert db[b"key000007"] == b"value 7"
        db.load_selectors()  # whatever the preload has left
        assert db.stats()["selector_tiers_unread"] == 0


def test_estimate_keys_counts_what_is_in_memory_too(tmp_path):
    with spillway.open(tmp_path / "e") as db:
        assert db.estimate_keys() == 0
        for k in [b"a", b"b", b"c", b"d"]:
            db[k] = b"v"
        # live_keys counts what is on disk: nothing yet, the root buffer holds all four.
        assert db.stats()["live_keys"] == 0
        assert db.estimate_keys() == 4
        db.flush()
        assert db.stats()["live_keys"] == 4 and db.estimate_keys() == 4
        db[b"a"] = b"again"  # in the buffer and on disk: one key
        del db[b"b"]
        db[b"e"] = b"v"
        assert db.estimate_keys() == 4


def test_reads_with_and_without_memory_maps_agree(tmp_path):
    path = tmp_path / "m"
    with spillway.open(path, page_size=1024) as db:
        for i in range(50):
            db.write(_batch(i), sync=False)
        db.flush()
    values = {}
    for mmap_reads in (True, False):
        with spillway.open(path, mmap_reads=mmap_reads) as db:
            values[mmap_reads] = [db.get(b"key%d" % i) for i in range(0, 60, 7)]
            assert (db.stats()["mapped_list_files"] > 0) == mmap_reads
    assert values[True] == values[False] and values[True][0] is not None
    with pytest.raises(spillway.InvalidOptionError):
        spillway.open(tmp_path / "bad", page_size=16)


def test_log_prefill_keeps_zeros_ahead_of_a_synced_log_or_not(tmp_path):
    def zeros_written(db):
        s = db.stats()
        return s["disk_bytes_written"] - s["wal_bytes_written"]

    zeros = {}
    for prefill in (True, False):
        path = tmp_path / str(prefill)
        with spillway.open(path, log_prefill=prefill) as db:
            for i in range(200):
                b = spillway.WriteBatch()
                b.put(b"key%d" % i, b"v" * 1000)
                db.write(b, sync=True)
            # The zeros are written by a thread of their own: wait for them (or not).
            for _ in range(1000):
                if not prefill or zeros_written(db) >= 4 << 20:
                    break
                time.sleep(0.01)
            zeros[prefill] = zeros_written(db)
        with spillway.open(path) as db:
            assert db.get(b"key199") == b"v" * 1000
    # 200 KiB of records; with the prefill, 4 MiB of zeros kept ahead of them.
    assert zeros[False] < (1 << 20) < (4 << 20) <= zeros[True]


def test_unsynced_writes_with_and_without_the_log_map_come_back(tmp_path):
    for mmap_log in (True, False):
        path = tmp_path / str(mmap_log)
        with spillway.open(path, mmap_log=mmap_log) as db:
            for i in range(1000):
                db.write(_batch(i), sync=False)
        with spillway.open(path) as db:
            assert [db.get(b"key%d" % i) for i in (0, 999)] == [b"value0", b"value999"]
    with pytest.raises(TypeError):
        spillway.open(tmp_path / "bad", mmap_log=True, no_such_option=1)


def _batch(i):
    b = spillway.WriteBatch()
    b.put(f"key{i}", f"value{i}")
    return b


def test_threads_write_and_read_at_once(db):
    def work(t):
        for i in range(500):
            db.put(f"t{t}-{i}", f"{i}")
            assert db[f"t{t}-{i // 2}"] == f"{i // 2}".encode()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for _ in db) == 8 * 500


def test_pickling_is_refused_with_a_clear_error(db):
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(db)


CHILD = """
import sys, spillway
db = spillway.open(sys.argv[1])
print("open", flush=True)
i = 0
while True:
    b = spillway.WriteBatch()
    for j in range(10):
        b.put(f"k{i}-{j}", f"v{i}")
    db.write(b)  # synced: durable when it returns
    print(i, flush=True)
    i += 1
"""


def test_acknowledged_writes_survive_a_killed_process(tmp_path):
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
        for i in range(acked + 1):
            assert db.multi_get([f"k{i}-{j}" for j in range(10)]) == [f"v{i}".encode()] * 10, i


def test_the_type_stubs_describe_the_module(tmp_path):
    stub = ast.parse(Path(spillway.__file__).with_name("__init__.pyi").read_text())
    top = {n.name: n for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    top_values = {n.target.id for n in stub.body if isinstance(n, ast.AnnAssign)}
    top_values |= {t.id for n in stub.body if isinstance(n, ast.Assign) for t in n.targets}
    type_only = {"Bytes", "Stats", "CheckReport"}
    public = {n for n in set(top) | top_values if not n.startswith("_")}
    assert public - type_only == set(spillway.__all__)

    # open(): every option of the engine's table, by its name, the ordered alias, and clock.
    kwonly = {a.arg for a in top["open"].args.kwonlyargs}
    assert kwonly == set(spillway.OPTIONS) | {"ordered", "clock"}

    def fields(name):
        return {n.target.id for n in top[name].body if isinstance(n, ast.AnnAssign)}

    with spillway.open(tmp_path / "s") as db:
        assert fields("Stats") == set(db.stats())
    assert fields("CheckReport") == set(spillway.check(tmp_path / "s"))

    def stub_parameters(f):
        """(name, keyword-only, default) of each parameter after self; `...` stands for the
        default the method has, whatever it is."""
        a = f.args
        defaults = [None] * (len(a.args) - len(a.defaults)) + a.defaults
        both = list(zip(a.args, [False] * len(a.args), defaults))[1:]
        both += zip(a.kwonlyargs, [True] * len(a.kwonlyargs), a.kw_defaults)
        return [
            (p.arg, kw, inspect.Parameter.empty if d is None else ast.literal_eval(d))
            for p, kw, d in both
        ]

    def runtime_parameters(f):
        after_self = list(inspect.signature(f).parameters.values())[1:]
        return [(p.name, p.kind == p.KEYWORD_ONLY, p.default) for p in after_self]

    classes = (spillway.Db, spillway.WriteBatch, spillway.Snapshot, spillway.Iter)
    for cls in classes + (spillway.Keyspace, spillway.Transaction, spillway.ManualClock):
        stubbed = {}
        for f in top[cls.__name__].body:
            if isinstance(f, ast.FunctionDef):
                stubbed.setdefault(f.name, []).append(f)
        names = {n for n in vars(cls) if not n.startswith("_")}
        assert names == {n for n in stubbed if not n.startswith("_")}, cls
        protocol = {n for n in vars(cls) if n.startswith("__") and n.endswith("__")}
        protocol -= {"__new__", "__doc__", "__module__", "__reduce__", "__init__"}
        assert protocol <= set(stubbed), cls
        for name in names:
            [*overloads, f] = stubbed[name]
            if any(getattr(d, "id", None) == "property" for d in f.decorator_list):
                assert inspect.isdatadescriptor(vars(cls)[name]), name
                continue
            want = runtime_parameters(getattr(cls, name))
            if overloads:  # each overload has some of the parameters: the last all of them
                assert [p[:2] for p in stub_parameters(f)] == [p[:2] for p in want], name
                continue
            got = stub_parameters(f)
            assert len(got) == len(want), f"{cls.__name__}.{name}"
            got = [(n, kw, w[2] if d is Ellipsis else d) for (n, kw, d), w in zip(got, want)]
            assert got == want, f"{cls.__name__}.{name}"
