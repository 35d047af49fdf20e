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

/// The session-store workload's chart: each store's space over time (disk bytes by `du`; Redis's
/// `used_memory`, dashed, is memory) with the live data and twice it, and below, each store's
/// space over its live data from the first TTL on, against the goal of 2×.
pub fn sessions_svg(report: &crate::sessions_run::SessionsReport) -> String {
    const MIB: f64 = (1 << 20) as f64;
    let (left, width, h) = (70.0, 900.0, 260.0);
    let cfg = &report.config;
    let t_max = report
        .engines
        .iter()
        .flat_map(|e| e.samples.iter().map(|s| s.t))
        .fold(cfg.seconds, f64::max)
        .max(1e-3);
    let x = |t: f64| left + t / t_max * width;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="700" font-family="sans-serif" font-size="11">"#,
        left + width + 30.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="18" font-size="13">sessions: {} {} keys per TTL of {} s ({:.0} inserts/s), {} B records, {} s; GETs {}</text>"#,
        cfg.keys_per_ttl,
        cfg.keys.name(),
        cfg.ttl_secs,
        cfg.rate(),
        cfg.record_size,
        cfg.seconds,
        if cfg.zipfian { "zipfian" } else { "uniform" },
    );
    let mut lx = 10.0;
    for (i, e) in report.engines.iter().enumerate() {
        let memory = e.space == "memory";
        let label = if memory {
            format!("{} (memory: used_memory)", e.engine)
        } else {
            format!("{} (disk)", e.engine)
        };
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" x2="{}" y1="34" y2="34" stroke="{}" stroke-width="2.5"{}/><text x="{}" y="38">{label}</text>"#,
            lx + 18.0,
            COLORS[i % COLORS.len()],
            if memory {
                r#" stroke-dasharray="5,3""#
            } else {
                ""
            },
            lx + 22.0
        );
        lx += 30.0 + 6.5 * label.len() as f64;
    }
    let _ = writeln!(
        out,
        r##"<line x1="{lx}" x2="{}" y1="34" y2="34" stroke="#000" stroke-width="1.5"/><text x="{}" y="38">live data</text>"##,
        lx + 18.0,
        lx + 22.0
    );
    lx += 90.0;
    let _ = writeln!(
        out,
        r##"<line x1="{lx}" x2="{}" y1="34" y2="34" stroke="#888" stroke-dasharray="2,3"/><text x="{}" y="38">2 × live data</text>"##,
        lx + 18.0,
        lx + 22.0
    );

    // Vertical guides at each multiple of the TTL, in both panels.
    let guides = |out: &mut String, top: f64| {
        let mut k = 1.0;
        while k * cfg.ttl_secs <= t_max {
            let gx = x(k * cfg.ttl_secs);
            let _ = writeln!(
                out,
                r##"<line x1="{gx:.1}" x2="{gx:.1}" y1="{top}" y2="{}" stroke="#eee"/><text x="{:.1}" y="{}" fill="#888">{k}T</text>"##,
                top + h,
                gx - 6.0,
                top + h + 13.0
            );
            k += 1.0;
        }
    };
    let polyline = |out: &mut String, pts: &[(f64, f64)], color: &str, extra: &str| {
        if pts.is_empty() {
            return;
        }
        let d: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        let _ = writeln!(
            out,
            r#"<polyline fill="none" stroke="{color}" {extra} points="{}"/>"#,
            d.join(" ")
        );
    };

    // Panel 1: space over time, MiB.
    let top = 80.0;
    let hi = report
        .engines
        .iter()
        .flat_map(|e| {
            e.samples
                .iter()
                .map(|s| (s.space_bytes.max(2 * s.live_bytes)) as f64 / MIB)
        })
        .fold(1.0f64, f64::max);
    let step = nice_step(hi / 5.0);
    let hi = (hi / step).ceil() * step;
    let y = |mib: f64| top + h - mib / hi * h;
    let _ = writeln!(
        out,
        r#"<text x="10" y="{}" font-size="12">space over time, MiB (disk: du of the store's folder; redis: used_memory) against seconds</text>"#,
        top - 8.0
    );
    let mut v = 0.0;
    while v <= hi + 1e-9 {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" x2="{:.0}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="8" y="{:.1}">{}</text>"##,
            left + width,
            yy + 4.0,
            axis_label(v)
        );
        v += step;
    }
    guides(&mut out, top);
    if let Some(first) = report.engines.first() {
        let live: Vec<(f64, f64)> = first
            .samples
            .iter()
            .map(|s| (x(s.t), y(s.live_bytes as f64 / MIB)))
            .collect();
        polyline(&mut out, &live, "#000", r#"stroke-width="1.5""#);
        let twice: Vec<(f64, f64)> = first
            .samples
            .iter()
            .map(|s| (x(s.t), y(2.0 * s.live_bytes as f64 / MIB)))
            .collect();
        polyline(&mut out, &twice, "#888", r#"stroke-dasharray="2,3""#);
    }
    for (i, e) in report.engines.iter().enumerate() {
        let pts: Vec<(f64, f64)> = e
            .samples
            .iter()
            .map(|s| (x(s.t), y(s.space_bytes as f64 / MIB)))
            .collect();
        let dash = if e.space == "memory" {
            r#"stroke-width="2" stroke-dasharray="5,3""#
        } else {
            r#"stroke-width="2""#
        };
        polyline(&mut out, &pts, COLORS[i % COLORS.len()], dash);
    }

    // Panel 2: space over live data, from the first TTL on.
    let top = top + h + 70.0;
    let ratios: Vec<Vec<(f64, f64)>> = report
        .engines
        .iter()
        .map(|e| {
            e.samples
                .iter()
                .filter(|s| s.t >= cfg.ttl_secs && s.live_bytes > 0)
                .map(|s| (s.t, s.space_bytes as f64 / s.live_bytes as f64))
                .collect()
        })
        .collect();
    let (lo, hi) = ratios
        .iter()
        .flatten()
        .map(|r| r.1)
        .filter(|r| *r > 0.0)
        .fold((1.0f64, 4.0f64), |(l, h), r| (l.min(r), h.max(r)));
    // On a log scale, from the 1-2-5 step below the lowest to the one above the highest.
    let (lo, hi) = (step_below(lo).log10(), step_above(hi).log10());
    let y = |r: f64| top + h - (r.max(1e-9).log10() - lo) / (hi - lo) * h;
    let _ = writeln!(
        out,
        r#"<text x="10" y="{}" font-size="12">space ÷ live data (log), from the first TTL on</text>"#,
        top - 8.0
    );
    for v in steps(10f64.powf(lo), 10f64.powf(hi)) {
        let yy = y(v);
        let _ = writeln!(
            out,
            r##"<line x1="{left}" x2="{:.0}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="8" y="{:.1}">{}×</text>"##,
            left + width,
            yy + 4.0,
            axis_label(v)
        );
    }
    guides(&mut out, top);
    let goal = y(2.0);
    let _ = writeln!(
        out,
        r##"<line x1="{left}" x2="{:.0}" y1="{goal:.1}" y2="{goal:.1}" stroke="#888" stroke-dasharray="2,3"/><text x="{:.0}" y="{:.1}" fill="#888">goal: 2×</text>"##,
        left + width,
        left + width - 50.0,
        goal - 4.0
    );
    for (i, (e, r)) in report.engines.iter().zip(&ratios).enumerate() {
        let pts: Vec<(f64, f64)> = r.iter().map(|&(t, v)| (x(t), y(v))).collect();
        let dash = if e.space == "memory" {
            r#"stroke-width="2" stroke-dasharray="5,3""#
        } else {
            r#"stroke-width="2""#
        };
        polyline(&mut out, &pts, COLORS[i % COLORS.len()], dash);
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.0}" y="{:.0}">seconds (T = {} s)</text>"#,
        left + width / 2.0 - 40.0,
        top + h + 30.0,
        cfg.ttl_secs
    );
    out.push_str("</svg>\n");
    out
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// The 1-2-5 multiples of powers of ten from `lo` to `hi`.
fn steps(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut p = 10f64.powf(lo.log10().floor());
    while p <= hi * 1.0001 {
        for m in [1.0, 2.0, 5.0] {
            let v = m * p;
            if v >= lo * 0.9999 && v <= hi * 1.0001 {
                out.push(v);
            }
        }
        p *= 10.0;
    }
    out
}

/// The largest 1-2-5 step at or below `v`.
fn step_below(v: f64) -> f64 {
    steps(v / 10.0, v).last().copied().unwrap_or(v)
}

/// The smallest 1-2-5 step at or above `v`.
fn step_above(v: f64) -> f64 {
    steps(v, v * 10.0).first().copied().unwrap_or(v)
}

fn axis_label(v: f64) -> String {
    if v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_steps_are_one_two_five() {
        assert_eq!(steps(1.0, 20.0), [1.0, 2.0, 5.0, 10.0, 20.0]);
        assert_eq!(step_below(3.7), 2.0);
        assert_eq!(step_above(3.7), 5.0);
        assert_eq!(step_above(5.0), 5.0);
        assert_eq!(step_below(0.7), 0.5);
        assert_eq!(nice_step(13.0), 20.0);
    }
}
