#!/usr/bin/env python3
"""The longest writer waits against the memory budget, before and after pacing, from the
`spillway bench --json` files of run.sh (BUILD-BUDGET-rROUND.json): per budget and build, the
longest wait for a spill (a stall) and the longest synced batch (a wait for a spill, a pace,
or the batch's own fsync), the worst of the rounds.

    python3 chart.py DIR > waits-by-budget.svg
"""
import json
import os
import sys

d = sys.argv[1]
budgets = ["none", "64", "40", "24"]
builds = [("before", "before (6e82713)"), ("after", "paced")]
rows = {}
for b, _ in builds:
    for m in budgets:
        stall, batch, stalls = 0.0, 0.0, 0
        for r in (1, 2):
            f = os.path.join(d, f"{b}-{m}-r{r}.json")
            if os.path.exists(f):
                p = json.load(open(f))["engines"][0]["phases"][0]
                stall = max(stall, p["max_stall_us"] / 1000)
                batch = max(batch, p["latency_max_us"] / 1000)
                stalls = max(stalls, p["stalls"])
        rows[(b, m)] = (stall, batch, stalls)

W, H, left, top, bottom = 680, 340, 60, 30, 70
top_ms = max([max(v[0], v[1]) for v in rows.values()] + [100]) * 1.1
colors = {"before": ("#bbbbbb", "#777777"), "after": ("#90cdf4", "#2b6cb0")}
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">']
out.append(f'<text x="{left}" y="16" font-size="13">Longest waits by memory budget, 50 M × 64 B synced batches (ms; label: stalls)</text>')
plot_h = H - top - bottom
y = lambda ms: top + plot_h * (1 - ms / top_ms)
out.append(f'<line x1="{left}" y1="{y(100):.1f}" x2="{W - 10}" y2="{y(100):.1f}" stroke="red" stroke-dasharray="4 3"/>')
out.append(f'<text x="{W - 12}" y="{y(100) - 3:.1f}" text-anchor="end" fill="red">100 ms goal</text>')
for t in range(0, int(top_ms) + 1, 100):
    out.append(f'<text x="{left - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t}</text>')
    out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{W - 10}" y2="{y(t):.1f}" stroke="#eee"/>')
group = (W - left - 10) / len(budgets)
bar = group / 5
for i, m in enumerate(budgets):
    x0 = left + i * group
    out.append(f'<text x="{x0 + group / 2:.1f}" y="{H - bottom + 16}" text-anchor="middle">{"no budget" if m == "none" else m + " MiB"}</text>')
    for j, (b, _) in enumerate(builds):
        stall, batch, stalls = rows[(b, m)]
        for k, (v, c) in enumerate(((stall, colors[b][1]), (batch, colors[b][0]))):
            x = x0 + bar * (0.5 + 2 * j + k)
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bar * 0.9:.1f}" height="{y(0) - y(v):.1f}" fill="{c}"/>')
            if k == 0:
                out.append(f'<text x="{x + bar * 0.45:.1f}" y="{y(v) - 3:.1f}" text-anchor="middle">{stalls}</text>')
legend = [("before: longest stall", colors["before"][1]), ("before: longest batch", colors["before"][0]),
          ("paced: longest stall", colors["after"][1]), ("paced: longest batch (incl. its fsync)", colors["after"][0])]
for i, (text, c) in enumerate(legend):
    lx = left + (i % 2) * 280
    ly = H - 30 + (i // 2) * 14
    out.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{c}"/>')
    out.append(f'<text x="{lx + 14}" y="{ly}">{text}</text>')
out.append("</svg>")
print("\n".join(out))
