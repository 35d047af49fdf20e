//! A self-contained SVG chart of throughput and p99 latency per phase and engine, written next
//! to the JSON so a run can be looked at, not only read.

use std::fmt::Write;

use crate::phase::PhaseResult;
use crate::run::Report;

/// A panel's title, its top edge, and the figure it plots.
type Panel = (&'static str, f64, fn(&PhaseResult) -> f64);

/// One color per engine, for up to eleven engines in a run (every kind there is).
const COLORS: [&str; 11] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22", "#393b79",
];

/// Two grouped bar charts (ops/s, p99 latency), one group per phase, one bar per engine, on a
/// log scale so that engines an order of magnitude apart stay readable.
pub fn svg(report: &Report) -> String {
    let engines: Vec<&str> = report.engines.iter().map(|e| e.engine.as_str()).collect();
    // Phases with something to plot (`settle` only waits), by their index in each engine's list.
    let phases: Vec<(usize, String)> = report
        .engines
        .first()
        .map(|e| {
            e.phases
                .iter()
                .enumerate()
                .filter(|(_, p)| p.ops > 0)
                .map(|(i, p)| {
                    (
                        i,
                        format!("{}{}", p.phase.name(), if p.cold { "*" } else { "" }),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let group_w = 24.0 * engines.len().max(1) as f64 + 30.0;
    let width = 120.0 + group_w * phases.len() as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="680" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let cfg = &report.config;
    let _ = writeln!(
        out,
        r#"<text x="10" y="18" font-size="13">{} records × {} B, {} keys, sync {}, {} thread(s), {} choice{}</text>"#,
        cfg.records,
        cfg.record_size,
        cfg.keys.name(),
        if cfg.sync { "per write" } else { "none" },
        cfg.threads,
        if cfg.zipfian { "zipfian" } else { "uniform" },
        if cfg.cold { ", reads cold (*)" } else { "" }
    );
    for (i, e) in engines.iter().enumerate() {
        let x = 10.0 + 110.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="28" width="12" height="12" fill="{}"/><text x="{}" y="38">{e}</text>"#,
            COLORS[i % COLORS.len()],
            x + 16.0
        );
    }
    let panels: [Panel; 2] = [
        (
            "operations per second (log; load: inserts; scan-all: records)",
            80.0,
            |r| r.ops_per_sec,
        ),
        ("p99 latency, µs (log; load: per batch)", 390.0, |r| {
            r.latency_p99_us
        }),
    ];
    for (title, top, get) in panels {
        let h = 230.0;
        let values: Vec<f64> = report
            .engines
            .iter()
            .flat_map(|e| e.phases.iter().map(get))
            .filter(|v| *v > 0.0)
            .collect();
        let (lo, hi) = values
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
        let (lo, hi) = (
            lo.max(1e-3).log10().floor(),
            hi.max(1e-3)
                .log10()
                .ceil()
                .max(lo.max(1e-3).log10().floor() + 1.0),
        );
        let y = |v: f64| top + h - (v.max(1e-3).log10() - lo) / (hi - lo) * h;
        let _ = writeln!(
            out,
            r#"<text x="10" y="{}" font-size="12">{title}</text>"#,
            top - 6.0
        );
        let mut d = lo;
        while d <= hi {
            let yy = y(10f64.powf(d));
            let _ = writeln!(
                out,
                r##"<line x1="60" x2="{width:.0}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="8" y="{:.1}">1e{d:.0}</text>"##,
                yy + 4.0
            );
            d += 1.0;
        }
        for (slot, (pi, name)) in phases.iter().enumerate() {
            let gx = 70.0 + group_w * slot as f64;
            for (ei, e) in report.engines.iter().enumerate() {
                // A failed phase has no bar: its figures are partial (the table says why).
                if let Some(r) = e.phases.get(*pi).filter(|r| r.error.is_none()) {
                    let v = get(r);
                    let x = gx + 24.0 * ei as f64;
                    let yv = y(v);
                    let _ = writeln!(
                        out,
                        r#"<rect x="{x:.1}" y="{yv:.1}" width="20" height="{:.1}" fill="{}"><title>{}: {v:.1}</title></rect>"#,
                        (top + h - yv).max(0.0),
                        COLORS[ei % COLORS.len()],
                        e.engine
                    );
                }
            }
            let _ = writeln!(
                out,
                r#"<text x="{gx:.1}" y="{:.1}">{name}</text>"#,
                top + h + 14.0
            );
        }
    }
    out.push_str("</svg>\n");
    out
}
