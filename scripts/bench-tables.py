#!/usr/bin/env python3
"""Markdown tables for BENCHMARKS.md from `spillway bench --json` files.

Usage: scripts/bench-tables.py RESULT.json...  (prints one table per file)
"""
import json
import sys


def human(v):
    if v is None:
        return "—"
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e4:
        return f"{v / 1e3:.0f} K"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def phase(e, name):
    return next((p for p in e["phases"] if p["phase"] == name), None)


def rows(report):
    """(phase, figure, getter) for every figure that some engine has."""
    out = []
    names = [p["phase"] for p in report["engines"][0]["phases"]]
    for name in names:
        if name == "load":
            out += [
                ("load", "inserts/s", lambda p: p["ops_per_sec"]),
                ("load", "p50 µs per batch", lambda p: p["latency_p50_us"]),
                ("load", "p99 µs per batch", lambda p: p["latency_p99_us"]),
                ("load", "p99.9 µs per batch", lambda p: p["latency_p999_us"]),
                ("load", "max µs per batch", lambda p: p["latency_max_us"]),
                ("load", "CPU cores busy",
                 lambda p: p.get("cpu_seconds", 0) / p["seconds"] if p.get("cpu_seconds") else None),
                ("load", "log fsyncs per write", lambda p: p.get("log_syncs_per_write")),
                ("load", "writer stalls", lambda p: p.get("stalls")),
                ("load", "longest stall ms",
                 lambda p: p["max_stall_us"] / 1000 if p.get("max_stall_us") is not None else None),
                ("load", "GETs/s meanwhile",
                 lambda p: (p.get("reads_during_load") or {}).get("ops_per_sec")),
                ("load", "GET p99 µs meanwhile",
                 lambda p: (p.get("reads_during_load") or {}).get("latency_p99_us")),
                ("load", "GET p99.9 µs meanwhile",
                 lambda p: (p.get("reads_during_load") or {}).get("latency_p999_us")),
                ("load", "GET max µs meanwhile",
                 lambda p: (p.get("reads_during_load") or {}).get("latency_max_us")),
                ("load", "device write amp.", lambda p: p["device_write_amp"]),
            ]
        elif name == "settle":
            out.append(("settle", "seconds after load", lambda p: p["seconds"]))
        elif name == "reopen":
            out.append(("reopen", "seconds to reopen", lambda p: p["seconds"]))
        elif name == "scan-all":
            out += [
                ("scan-all", "records/s", lambda p: p["ops_per_sec"]),
                ("scan-all", "MB/s",
                 lambda p: p["scanned_bytes"] / 1e6 / p["seconds"] if p.get("scanned_bytes") else None),
            ]
        else:
            label = "GETs/s" if name.startswith("read") else "ops/s"
            out += [
                (name, label, lambda p: p["ops_per_sec"]),
                (name, "p99 µs", lambda p: p["latency_p99_us"]),
            ]
            if name == "ycsb-e":
                out.append((name, "records per scan",
                            lambda p: p["scanned_records"] / p["scans"] if p.get("scans") else None))
            if report["config"].get("cold") or name == "read":
                out.append((name, "device KiB read per op",
                            lambda p: p["device_bytes_read"] / 1024 / max(p["ops"], 1)))
    last = names[-1]
    out += [
        (last, "disk MiB", lambda p: p["disk_bytes"] / 2**20),
        (last, "RSS MiB", lambda p: p["rss_bytes"] / 2**20),
    ]
    return out


def table(report):
    engines = report["engines"]
    lines = ["| phase | figure | " + " | ".join(e["engine"] for e in engines) + " |",
             "|---|---|" + "---|" * len(engines)]
    for name, label, get in rows(report):
        cells = []
        for e in engines:
            p = phase(e, name)
            # A phase the engine could not complete has partial figures: none are shown.
            cells.append(get(p) if p and not p.get("error") else None)
        if all(c is None for c in cells):
            continue
        base = cells[0]
        shown = []
        for i, c in enumerate(cells):
            if i > 0 and c is not None and base:
                shown.append(f"{human(c)} (×{c / base:.2f})")
            else:
                shown.append(human(c))
        lines.append(f"| {name} | {label} | " + " | ".join(shown) + " |")
    totals = [e.get("device_write_amp_total") for e in engines]
    shown = [human(totals[0])] + [
        f"{human(t)} (×{t / totals[0]:.2f})" if t and totals[0] else human(t) for t in totals[1:]]
    lines.append("| whole run | device write amp. | " + " | ".join(shown) + " |")
    failed = [f"{e['engine']} {p['phase']} failed: {p['error']}"
              for e in engines for p in e["phases"] if p.get("error")]
    if failed:
        lines += [""] + failed
    return "\n".join(lines)


def title(path, report):
    c = report["config"]
    name = path.rsplit("/", 1)[-1].removesuffix(".json")
    sync = "sync per batch" if c["sync"] else "sync none"
    dist = "zipfian" if c["zipfian"] else "uniform"
    keys = ", sequential keys" if c.get("keys") == "sequential" else ""
    extra = ", cold reads" if c["cold"] else ""
    readers = f", {c['readers']} reader(s) during the load" if c.get("readers") else ""
    return (f"**{name}**: {c['records']:,} × {c['record_size']} B{keys}, {sync}, "
            f"{c['threads']} writer thread(s){readers}, {dist}{extra}")


def spillway_line(report):
    e = report["engines"][0]
    parts = [f"{p['phase']}: {p['pages_per_get']:.3f} pages/GET"
             for p in e["phases"] if p.get("pages_per_get") is not None]
    mem = next((p["memory_bytes_per_key"] for p in e["phases"]
                if p.get("memory_bytes_per_key")), None)
    if mem:
        parts.append(f"selectors/filters+index {mem:.2f} B/key")
    return "Spillway: " + "; ".join(parts) + "." if parts else ""


for path in sys.argv[1:]:
    with open(path) as f:
        report = json.load(f)
    print(title(path, report))
    print()
    print(table(report))
    print()
    line = spillway_line(report)
    if line:
        print(line)
        print()
