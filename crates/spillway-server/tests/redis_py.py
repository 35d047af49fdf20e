"""redis-py, the Python client most Redis users have, against `spillway serve` on the port given
as the first argument: its commands (expiry's among them), its pipelines, its SCAN iterator,
its INFO and CLIENT LIST parsers, CONFIG SET, CLIENT KILL, RESP3 (`protocol=3`), lists, a
blocking pop served by another connection's push, and sorted sets' scores. Run by
tests/serve.rs (`redis_py_talks_to_it`) with the Python that `.ci/run` installs redis-py
into; exits non-zero on the first failed assertion."""

import sys
import threading
import time
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

    # Operations: INFO's sections and counts, CLIENT LIST as redis-py parses it, CONFIG SET,
    # CLIENT KILL.
    info = r.info("everything")
    assert "used_cpu_user" in info and info["role"] == "master", info
    r.set("s", "abc")
    try:
        r.incr("s")
        raise AssertionError("INCR of a string")
    except redis.ResponseError:
        pass
    assert r.info("errorstats")["errorstat_ERR"]["count"] >= 1
    assert any(c["cmd"] == "client|list" for c in r.client_list())
    assert r.config_set("maxclients", 500)
    assert r.config_get("maxclients") == {"maxclients": "500"}
    other = redis.Redis(port=port)
    other.client_setname("victim")
    victim = [c for c in r.client_list() if c["name"] == "victim"]
    assert len(victim) == 1 and victim[0]["db"] == "0", victim
    assert r.client_kill_filter(_id=victim[0]["id"]) == 1
    assert not [c for c in r.client_list() if c["name"] == "victim"]
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
    # INFO and CLIENT INFO are verbatim strings in RESP3.
    assert r3.info()["redis_version"] and r3.client_info()["cmd"] == "client|info"
    r3.close()

    # Lists, and BLPOP served by another connection's push, in both protocols.
    for proto in (2, 3):
        c = redis.Redis(port=port, protocol=proto)
        waiter = redis.Redis(port=port, protocol=proto)
        l, m, q = f"l{proto}", f"m{proto}", f"q{proto}"
        assert c.rpush(l, "a", "b", "c") == 3 and c.lpush(l, "z") == 4
        assert c.lrange(l, 0, -1) == [b"z", b"a", b"b", b"c"]
        assert c.lpop(l, 2) == [b"z", b"a"] and c.rpop(l) == b"c"
        assert c.lpos(l, "b") == 0 and c.linsert(l, "BEFORE", "b", "x") == 2
        assert c.lmove(l, m, "LEFT", "RIGHT") == b"x" and c.llen(m) == 1
        assert c.lpop("none", 2) is None and c.blpop(["none"], timeout=0.05) is None
        got = []
        t = threading.Thread(target=lambda: got.append(waiter.blpop(["none", q], timeout=10)))
        t.start()
        while c.info("clients")["blocked_clients"] != 1:  # until it waits
            time.sleep(0.01)
        assert c.rpush(q, "v") == 1
        t.join()
        assert got and tuple(got[0]) == (q.encode(), b"v"), got
        assert c.exists(q) == 0
        c.close()
        waiter.close()
    print("redis-py", redis.__version__, "ok")


if __name__ == "__main__":
    main(int(sys.argv[1]))
