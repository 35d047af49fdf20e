"""redis-py, the Python client most Redis users have, against `spillway serve` on the port given
as the first argument: its commands (expiry's among them), its pipelines, its SCAN iterator,
its INFO parser, sorted sets' scores and RESP3 (`protocol=3`). Run by tests/serve.rs (`redis_py_talks_to_it`) with the Python that
`.ci/run` installs redis-py into; exits non-zero on the first failed assertion."""

import sys
from datetime import datetime, timezone

import redis


def main(port: int) -> None:
    r = redis.Redis(port=port)
    assert r.ping()
    assert r.set("greeting", "hello")
    assert r.get("greeting") == b"hello"
    assert r.set("greeting", "again", nx=True) is None
    assert r.set("greeting", "again", xx=True, get=True) == b"hello"
    assert r.mset({"a": 1, "b": 2, "c": "x"})
    assert r.mget("a", "b", "missing") == [b"1", b"2", None]
    assert r.incr("a") == 2 and r.incrby("a", 40) == 42 and r.decr("a") == 41
    assert r.incrbyfloat("f", 0.1) == 0.1 and r.incrbyfloat("f", 0.2) == 0.3
    try:
        r.incr("c")
        raise AssertionError("INCR of a string")
    except redis.ResponseError as e:
        assert "not an integer" in str(e)
    assert r.append("c", "yz") == 3 and r.strlen("c") == 3
    assert r.exists("a", "b", "nope") == 2
    assert r.delete("b", "nope") == 1 and r.get("b") is None
    assert r.getdel("c") == b"xyz" and r.getset("a", "0") == b"41"
    assert r.client_setname("py") and r.client_getname() == "py"

    # Expiry through redis-py's keyword arguments; EXPIRE and PERSIST answer booleans.
    assert r.set("s", "v", ex=100) and r.ttl("s") == 100
    assert r.expire("s", 50, gt=True) is False and r.expire("s", 50, lt=True) is True
    assert 49_000 <= r.pttl("s") <= 50_000
    assert r.persist("s") is True and r.persist("s") is False and r.ttl("s") == -1
    assert r.setex("x", 30, "y") and r.getex("x", persist=True) == b"y" and r.ttl("x") == -1
    at = datetime(2100, 1, 1, tzinfo=timezone.utc)
    assert r.expireat("s", at) and r.expiretime("s") == int(at.timestamp())
    assert r.info("keyspace")["db0"]["expires"] == 1
    assert r.set("x", "z", keepttl=True, get=True) == b"y" and r.ttl("x") == -1
    assert r.delete("s", "x") == 2

    # A pipeline (no MULTI: transaction=False) of 1,000 commands, answered in order.
    p = r.pipeline(transaction=False)
    for i in range(500):
        p.set(f"k{i}", i)
        p.get(f"k{i}")
    replies = p.execute()
    assert replies[0::2] == [True] * 500
    assert replies[1::2] == [str(i).encode() for i in range(500)]

    # SCAN across calls, KEYS, DBSIZE.
    keys = set(r.scan_iter(match="k*", count=37))
    assert keys == {f"k{i}".encode() for i in range(500)}, len(keys)
    assert sorted(r.keys("k1?")) == [f"k{i}".encode() for i in range(10, 20)]
    assert r.dbsize() == 500 + 3  # k*, greeting, a, f

    info = r.info()
    assert info["redis_version"] and "spillway_version" in info
    assert info["db0"]["keys"] == 503

    # Sorted sets: scores read back as floats, WITHSCORES as pairs, ZSCAN's iterator.
    assert r.zadd("z", {"a": 1, "b": 2.5, "c": 0.1}) == 3
    assert r.zadd("z", {"a": 5}, gt=True, ch=True) == 1
    assert r.zincrby("z", 1, "b") == 3.5
    assert r.zscore("z", "c") == 0.1 and r.zmscore("z", ["a", "x"]) == [5.0, None]
    assert r.zrange("z", 0, -1, withscores=True) == [(b"c", 0.1), (b"b", 3.5), (b"a", 5.0)]
    assert r.zrangebyscore("z", "(0.1", "+inf", start=0, num=1) == [b"b"]
    assert r.zrank("z", "a") == 2 and r.zrevrank("z", "a") == 0 and r.zcard("z") == 3
    assert dict(r.zscan_iter("z")) == {b"a": 5.0, b"b": 3.5, b"c": 0.1}
    assert r.zpopmin("z") == [(b"c", 0.1)]
    assert r.zunionstore("u", {"z": 2}) == 2
    assert r.zrange("u", 0, -1, withscores=True) == [(b"b", 7.0), (b"a", 10.0)]
    assert r.delete("z", "u") == 2
    r.close()

    # RESP3 after HELLO 3.
    r3 = redis.Redis(port=port, protocol=3)
    assert r3.get("k7") == b"7"
    assert r3.mget("k1", "none") == [b"1", None]
    # Scores as RESP3 doubles; WITHSCORES, and pops with a count, as pairs.
    assert r3.zadd("z3", {"a": 1.5, "b": 2}) == 2
    assert r3.zscore("z3", "a") == 1.5 and r3.zmscore("z3", ["a", "x"]) == [1.5, None]
    assert r3.zrange("z3", 0, -1, withscores=True) == [[b"a", 1.5], [b"b", 2.0]]
    assert r3.zpopmax("z3", 1) == [[b"b", 2.0]] and r3.zpopmin("z3") == [b"a", 1.5]
    assert r3.zincrby("z3", 1, "q") == 1.0
    assert r3.zrandmember("z3", 1, withscores=True) == [[b"q", 1.0]]
    assert r3.flushdb() and r3.dbsize() == 0 and r3.get("k7") is None
    r3.close()
    print("redis-py", redis.__version__, "ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
