#!/usr/bin/env python3
"""Chart a memory-budget sweep (benchmarks/memory-budget.tsv) as SVG: inserts/s, write
amplification and lists against the budget, one line per tree shape. No dependencies.

Usage: scripts/memory-chart.py benchmarks/memory-budget.tsv > benchmarks/memory-budget.svg
"""
import csv
import math
import sys

rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
trees = sorted({r["tree"] for r in rows})
panels = [("inserts/s (K)", lambda r: int(r["inserts_per_s"]) / 1000),
          ("write amplification", lambda r: float(r["write_amp"])),
          ("lists in the tree", lambda r: int(r["lists"]))]
colors = ["#1f77b4", "#d62728", "#2ca02c"]
W, H, PAD = 300, 220, 45
budgets = [int(r["budget_mib"]) for r in rows]
lo, hi = math.log2(min(budgets)), math.log2(max(budgets))
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * W + 20}" height="{H + 60}" '
       'font-family="sans-serif" font-size="11">']
for i, (title, value) in enumerate(panels):
    x0 = 10 + i * W
    top = max(value(r) for r in rows) * 1.1
    px = lambda m: x0 + PAD + (math.log2(m) - lo) / (hi - lo) * (W - PAD - 15)
    py = lambda v: 30 + (1 - v / top) * (H - 40)
    out.append(f'<text x="{x0 + W / 2}" y="18" text-anchor="middle" font-weight="bold">{title}</text>')
    out.append(f'<line x1="{x0 + PAD}" y1="{py(0)}" x2="{x0 + W - 15}" y2="{py(0)}" stroke="#888"/>')
    out.append(f'<line x1="{x0 + PAD}" y1="30" x2="{x0 + PAD}" y2="{py(0)}" stroke="#888"/>')
    for k in range(5):
        v = top * k / 4
        out.append(f'<text x="{x0 + PAD - 4}" y="{py(v) + 4}" text-anchor="end">{v:.3g}</text>')
    for m in sorted(set(budgets)):
        out.append(f'<text x="{px(m)}" y="{py(0) + 14}" text-anchor="middle">{m}</text>')
    out.append(f'<text x="{x0 + W / 2}" y="{py(0) + 28}" text-anchor="middle">memory budget (MiB)</text>')
    for t, color in zip(trees, colors):
        pts = [(px(int(r["budget_mib"])), py(value(r))) for r in rows if r["tree"] == t]
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                   + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>' for x, y in pts]
for j, (t, color) in enumerate(zip(trees, colors)):
    out.append(f'<text x="{20 + j * 200}" y="{H + 50}" fill="{color}">■ {t}</text>')
out.append("</svg>")
print("\n".join(out))
