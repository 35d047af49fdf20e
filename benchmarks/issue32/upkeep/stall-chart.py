#!/usr/bin/env python3
"""Draw the longest writer stall and the number of stalls against the memory budget, for two
builds, from `spillway bench --json` files named BUILD-BUDGET.json (BUDGET: MiB or "none").

    python3 stall-chart.py DIR base:LABEL new:LABEL > stalls.svg
"""
import json
import os
import sys

d = sys.argv[1]
# BUILD or BUILD:LABEL
builds = [a.split(":", 1)[0] for a in sys.argv[2:]]
labels = [a.split(":", 1)[-1] for a in sys.argv[2:]]
budgets = ["none", "160", "96", "64", "40"]
rows = {}
for b in builds:
    for m in budgets:
        f = os.path.join(d, f"{b}-{m}.json")
        if os.path.exists(f):
            p = json.load(open(f))["engines"][0]["phases"][0]
            rows[(b, m)] = (p["max_stall_us"] / 1000, p["stalls"], p["ops_per_sec"])

W, H, left, top, bottom = 640, 320, 60, 30, 60
top_ms = max([v[0] for v in rows.values()] + [100]) * 1.1
colors = ["#999999", "#2b6cb0", "#c05621"]
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">']
out.append(f'<text x="{left}" y="16" font-size="13">Longest writer stall (ms; bar label: stalls) by memory budget, 50 M × 64 B synced</text>')
plot_h = H - top - bottom
y = lambda ms: top + plot_h * (1 - ms / top_ms)
out.append(f'<line x1="{left}" y1="{y(100):.1f}" x2="{W - 10}" y2="{y(100):.1f}" stroke="red" stroke-dasharray="4 3"/>')
out.append(f'<text x="{W - 12}" y="{y(100) - 3:.1f}" text-anchor="end" fill="red">100 ms goal</text>')
for t in range(0, int(top_ms) + 1, 50):
    out.append(f'<text x="{left - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t}</text>')
    out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{W - 10}" y2="{y(t):.1f}" stroke="#eee"/>')
group = (W - left - 10) / len(budgets)
bar = group / (len(builds) + 1)
for i, m in enumerate(budgets):
    x0 = left + i * group
    out.append(f'<text x="{x0 + group / 2:.1f}" y="{H - bottom + 16}" text-anchor="middle">{m if m == "none" else m + " MiB"}</text>')
    for j, b in enumerate(builds):
        if (b, m) not in rows:
            continue
        ms, n, _ = rows[(b, m)]
        x = x0 + bar / 2 + j * bar
        out.append(f'<rect x="{x:.1f}" y="{y(ms):.1f}" width="{bar * 0.9:.1f}" height="{top + plot_h - y(ms):.1f}" fill="{colors[j % 3]}"/>')
        out.append(f'<text x="{x + bar * 0.45:.1f}" y="{y(ms) - 3:.1f}" text-anchor="middle">{n}</text>')
for j, b in enumerate(builds):
    out.append(f'<rect x="{left + j * 250}" y="{H - 22}" width="10" height="10" fill="{colors[j % 3]}"/>')
    out.append(f'<text x="{left + j * 250 + 14}" y="{H - 13}">{labels[j]}</text>')
out.append("</svg>")
print("\n".join(out))
