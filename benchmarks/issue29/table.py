#!/usr/bin/env python3
"""The markdown tables of BENCHMARKS.md's "Transactions (issue 29)" from run.sh outputs.

Usage: table.py OUT1 [OUT2 ...] — each folder one round of run.sh. Per configuration and
engine: the median commits/s over the rounds (with the lowest and highest when there are
several) and the median abort rate; then Spillway's median over the fastest peer's median."""
import json
import statistics
import sys
from pathlib import Path

ORDER = ["spillway", "rocksdb", "fjall", "redb", "lmdb"]
NAMES = {"spillway": "Spillway", "rocksdb": "RocksDB (optimistic)", "fjall": "fjall (optimistic)",
         "redb": "redb", "lmdb": "LMDB (heed)"}

runs = {}  # (accounts, zipfian, threads) -> engine -> [result, ...]
for folder in sys.argv[1:]:
    for path in sorted(Path(folder).glob("transfer-*.json")):
        report = json.loads(path.read_text())
        c = report["config"]
        key = (c["accounts"], c["zipfian"], c["threads"])
        for e in report["engines"]:
            runs.setdefault(key, {}).setdefault(e["engine"], []).append(e)

engines = [e for e in ORDER if any(e in r for r in runs.values())]


def median(results, field):
    return statistics.median(r[field] for r in results)


print("| accounts | keys | threads | " + " | ".join(NAMES[e] for e in engines)
      + " | Spillway ÷ fastest peer |")
print("|---|---|---|" + "---|" * len(engines) + "---|")
for (accounts, zipfian, threads) in sorted(runs):
    r = runs[(accounts, zipfian, threads)]
    cells = []
    for e in engines:
        rs = r.get(e)
        if not rs:
            cells.append("—")
            continue
        rates = [x["commits_per_sec"] for x in rs]
        cell = f"{statistics.median(rates):,.0f}"
        if len(rs) > 1:
            cell += f" ({min(rates):,.0f}–{max(rates):,.0f})"
        abort = median(rs, "abort_rate")
        if abort > 0:
            cell += f", {100 * abort:.1f}% aborts" if abort >= 0.0005 else ", <0.1% aborts"
        cells.append(cell)
    peers = [median(r[e], "commits_per_sec") for e in engines if e != "spillway" and e in r]
    ratio = (f"{median(r['spillway'], 'commits_per_sec') / max(peers):.2f}×"
             if "spillway" in r and peers else "—")
    label = f"{accounts // 1000} K" if accounts < 1_000_000 else f"{accounts // 1_000_000} M"
    print(f"| {label} | {'zipfian' if zipfian else 'uniform'} | {threads} | "
          + " | ".join(cells) + f" | {ratio} |")
