#!/usr/bin/env python3
"""Open time against store size, before and after opens stopped reading list files: two of
run.sh's opens.tsv files ("records warm|cold seconds" lines), the medians of each size's opens,
warm and with the page cache dropped, on a log scale of records, with the issue's goal of a
second. The earlier build's lines are dashed.

    python3 chart.py ../open-size/opens.tsv opens.tsv > open-by-size.svg
"""
import math
import statistics
import sys


def read(path):
    runs = {}
    for line in open(path):
        n, how, secs = line.split()
        runs.setdefault((int(n), how), []).append(float(secs))
    return runs


before, after = read(sys.argv[1]), read(sys.argv[2])
sizes = sorted({n for n, _ in list(before) + list(after)})
colors = {"warm": "#2b6cb0", "cold": "#dd6b20"}
series = [
    (before, "warm", "4 3", "every list file read at open, warm"),
    (before, "cold", "4 3", "… page cache dropped"),
    (after, "warm", None, "list files read at first use, warm"),
    (after, "cold", None, "… page cache dropped"),
]

W, H, left, right, top, bottom = 680, 360, 60, 20, 30, 90
medians = [statistics.median(v) for runs in (before, after) for v in runs.values()]
top_s = max(medians + [1.0]) * 1.1
lo, hi = math.log10(sizes[0]) - 0.2, math.log10(sizes[-1]) + 0.2
# A square-root scale: the seconds of cold opens at a billion records and the tenths of warm
# ones at ten million both stay readable.
x = lambda n: left + (W - left - right) * (math.log10(n) - lo) / (hi - lo)
y = lambda s: top + (H - top - bottom) * (1 - math.sqrt(s / top_s))
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">']
out.append(f'<text x="{left}" y="16" font-size="13">Open + one absent GET + close (spillway get), 16-byte records (s, square-root scale)</text>')
for t in [0.1, 0.25, 0.5, 1, 2, 4, 8, 16]:
    if t > top_s:
        break
    out.append(f'<line x1="{left}" y1="{y(t):.1f}" x2="{W - right}" y2="{y(t):.1f}" stroke="#eee"/>')
    out.append(f'<text x="{left - 5}" y="{y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
out.append(f'<line x1="{left}" y1="{y(1):.1f}" x2="{W - right}" y2="{y(1):.1f}" stroke="red" stroke-dasharray="2 2"/>')
out.append(f'<text x="{W - right - 2}" y="{y(1) - 3:.1f}" text-anchor="end" fill="red">1 s goal</text>')
for n in sizes:
    label = f"{n // 10**9} B" if n >= 10**9 else f"{n // 10**6} M"
    out.append(f'<text x="{x(n):.1f}" y="{H - bottom + 16}" text-anchor="middle">{label}</text>')
for runs, how, dash, _ in series:
    color = colors[how]
    points = [(n, statistics.median(runs[(n, how)])) for n in sizes if (n, how) in runs]
    path = " ".join(f"{x(n):.1f},{y(s):.1f}" for n, s in points)
    style = f' stroke-dasharray="{dash}"' if dash else ""
    out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{style}/>')
    for n, s in points:
        out.append(f'<circle cx="{x(n):.1f}" cy="{y(s):.1f}" r="3" fill="{color}"/>')
        if not dash or n == sizes[-1]:
            out.append(f'<text x="{x(n) + 5:.1f}" y="{y(s) - 5:.1f}" fill="{color}">{s:.2f}</text>')
for i, (_, how, dash, text) in enumerate(series):
    lx, ly = left + (i % 2) * 300, H - 40 + (i // 2) * 18
    style = f' stroke-dasharray="{dash}"' if dash else ""
    out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="{colors[how]}" stroke-width="2"{style}/>')
    out.append(f'<text x="{lx + 30}" y="{ly}">{text} (median of three)</text>')
out.append("</svg>")
print("\n".join(out))
