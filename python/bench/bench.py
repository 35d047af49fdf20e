"""Spillway from Python against plyvel (LevelDB), rocksdict (RocksDB) and lmdb, in one run on
the same machine (issue 15's measurement). For each engine, in a fresh folder under DIR:

- load: N puts of 16-byte records (8-byte random key, 8-byte value) in batches of 1000,
  each batch synced (durable when the call returns);
- the same into a second store with unsynced batches;
- gets: M random gets of loaded keys, from the synced store;
- a full iteration of the synced store, counted.

    python python/bench/bench.py DIR [--records N] [--gets M] [--engines spillway,plyvel,...]

Needs `pip install ./python plyvel rocksdict lmdb` (PyPI's wheels: release builds). Prints a
table of operations per second and each peer's ratio to Spillway (above 1: the peer is
faster), and writes it as JSON beside DIR if --json is given.
"""

import argparse
import json
import os
import random
import shutil
import struct
import sys
import time

BATCH = 1000


def records(n, seed):
    rng = random.Random(seed)
    keys = [struct.pack(">Q", rng.getrandbits(64)) for _ in range(n)]
    values = [struct.pack("<Q", i) for i in range(n)]
    return keys, values


class Spillway:
    name = "spillway"
    options = {}

    def open(self, path, sync):
        import spillway

        self.m = spillway
        self.db = spillway.open(path, **self.options)

    def load(self, keys, values, sync):
        m, db = self.m, self.db
        for i in range(0, len(keys), BATCH):
            b = m.WriteBatch()
            for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                b.put(k, v)
            db.write(b, sync=sync)

    def get(self, k):
        return self.db.get(k)

    def count(self):
        return sum(1 for _ in self.db.iter())

    def close(self):
        self.db.close()


class Spillway1K(Spillway):
    """Pages of 1 KiB instead of 4: faster GETs, a larger page index (BENCHMARKS.md)."""

    name = "spillway-1k"
    options = {"page_size": 1024}


class Plyvel:
    name = "plyvel"

    def open(self, path, sync):
        import plyvel

        self.db = plyvel.DB(path, create_if_missing=True)

    def load(self, keys, values, sync):
        for i in range(0, len(keys), BATCH):
            with self.db.write_batch(sync=sync) as b:
                for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                    b.put(k, v)

    def get(self, k):
        return self.db.get(k)

    def count(self):
        return sum(1 for _ in self.db)

    def close(self):
        self.db.close()


class RocksDict:
    name = "rocksdict"

    def open(self, path, sync):
        import rocksdict

        self.m = rocksdict
        self.db = rocksdict.Rdict(path, options=rocksdict.Options(raw_mode=True))

    def load(self, keys, values, sync):
        m, db = self.m, self.db
        opts = m.WriteOptions()
        opts.sync = sync
        for i in range(0, len(keys), BATCH):
            b = m.WriteBatch(raw_mode=True)
            for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                b.put(k, v)
            db.write(b, opts)

    def get(self, k):
        return self.db.get(k)

    def count(self):
        return sum(1 for _ in self.db.items())

    def close(self):
        self.db.close()


class Lmdb:
    name = "lmdb"

    def open(self, path, sync):
        import lmdb

        # A map as large as the data may grow; with sync=False a commit is not fsynced.
        self.env = lmdb.open(path, map_size=16 << 30, sync=sync, writemap=False)

    def load(self, keys, values, sync):
        for i in range(0, len(keys), BATCH):
            with self.env.begin(write=True) as txn:
                for k, v in zip(keys[i : i + BATCH], values[i : i + BATCH]):
                    txn.put(k, v)

    def get(self, k):
        return self.txn.get(k)

    def count(self):
        with self.env.begin() as txn:
            return sum(1 for _ in txn.cursor())

    def close(self):
        self.env.close()


ENGINES = {e.name: e for e in [Spillway, Spillway1K, Plyvel, RocksDict, Lmdb]}


def run(engine, base, keys, values, gets):
    out = {}
    for sync in (True, False):
        path = os.path.join(base, f"{engine.name}-{'synced' if sync else 'unsynced'}")
        shutil.rmtree(path, ignore_errors=True)
        e = engine()
        e.open(path, sync)
        start = time.perf_counter()
        e.load(keys, values, sync)
        out["puts synced" if sync else "puts unsynced"] = len(keys) / (time.perf_counter() - start)
        if not sync:
            e.close()
            shutil.rmtree(path)
            continue
        if isinstance(e, Lmdb):
            e.txn = e.env.begin()
        start = time.perf_counter()
        found = sum(1 for k in gets if e.get(k) is not None)
        out["gets"] = len(gets) / (time.perf_counter() - start)
        assert found == len(gets), f"{engine.name}: {found} of {len(gets)} found"
        if isinstance(e, Lmdb):
            e.txn.abort()
        start = time.perf_counter()
        n = e.count()
        out["iteration"] = n / (time.perf_counter() - start)
        assert n == len(set(keys)), f"{engine.name}: iterated {n}"
        e.close()
        shutil.rmtree(path)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("--records", type=int, default=2_000_000)
    p.add_argument("--gets", type=int, default=1_000_000)
    p.add_argument("--engines", default="spillway,spillway-1k,plyvel,rocksdict,lmdb")
    p.add_argument("--json")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    keys, values = records(a.records, seed=42)
    rng = random.Random(7)
    gets = [keys[rng.randrange(len(keys))] for _ in range(a.gets)]
    results = {}
    for name in a.engines.split(","):
        results[name] = run(ENGINES[name], a.dir, keys, values, gets)
        print(name, {k: round(v) for k, v in results[name].items()}, flush=True)
    base = results[a.engines.split(",")[0]]
    print(f"\n{'engine':<12}" + "".join(f"{m:>22}" for m in base))
    for name, r in results.items():
        cells = "".join(f"{r[m]:>13,.0f} ({r[m] / base[m]:.2f}x)" for m in base)
        print(f"{name:<12}{cells}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"records": a.records, "gets": a.gets, "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
