#!/usr/bin/env python3
"""Open time against store size, from run.sh's opens.tsv ("records warm|cold seconds" lines):
the median of each size's opens, warm and with the page cache dropped, on a log scale of
records, with the issue's goal of a second.

    python3 chart.py opens.tsv > open-by-size.svg
"""
import math
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    n, how, secs = line.split()
    runs.setdefault((int(n), how), []).append(float(secs))
sizes = sorted({n for n, _ in runs})
series = [("warm", "#2b6cb0", "page cache warm"), ("cold", "#dd6b20", "page cache dropped first")]

W, H, left, right, top, bottom = 640, 320, 60, 20, 30, 60
top_s = max([statistics.median(v) for v in runs.values()] + [1.0]) * 1.15
lo, hi = math.log10(sizes[0]) - 0.2, math.log10(sizes[-1]) + 0.2
x = lambda n: left + (W - left - right) * (math.log10(n) - lo) / (hi - lo)
y = lambda s: top + (H - top - bottom) * (1 - s / top_s)
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">']
out.append(f'<text x="{left}" y="16" font-size="13">Open + one absent GET + close (spillway get), 16-byte records, synced loads (s)</text>')
step = 0.25 if top_s <= 2 else 0.5 if top_s <= 5 else 1.0
t = 0.0
while t <= top_s:
    out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{W - right}" y2="{y(t):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{left - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    t += step
out.append(f'<line x1="{left}" y1="{y(1):.1f}" x2="{W - right}" y2="{y(1):.1f}" stroke="red" stroke-dasharray="4 3"/>')
out.append(f'<text x="{W - right - 2}" y="{y(1) - 3:.1f}" text-anchor="end" fill="red">1 s goal</text>')
for n in sizes:
    label = f"{n // 10**9} B" if n >= 10**9 else f"{n // 10**6} M"
    out.append(f'<text x="{x(n):.1f}" y="{H - bottom + 16}" text-anchor="middle">{label}</text>')
for how, color, _ in series:
    points = [(n, statistics.median(runs[(n, how)])) for n in sizes if (n, how) in runs]
    path = " ".join(f"{x(n):.1f},{y(s):.1f}" for n, s in points)
    out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
    for n, s in points:
        out.append(f'<circle cx="{x(n):.1f}" cy="{y(s):.1f}" r="3" fill="{color}"/>')
        out.append(f'<text x="{x(n) + 5:.1f}" y="{y(s) - 5:.1f}" fill="{color}">{s:.2f}</text>')
for i, (_, color, text) in enumerate(series):
    lx, ly = left + i * 220, H - 18
    out.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
    out.append(f'<text x="{lx + 14}" y="{ly}">{text} (median of three)</text>')
out.append("</svg>")
print("\n".join(out))
