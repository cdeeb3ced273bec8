//! Hand-written SVG bar chart: o200k tokens of each format relative to compact JSON.

use std::fmt::Write as _;

use super::Run;
use super::report::totals;

const COLORS: [(&str, &str); 6] = [
    ("json-pretty", "#9e9e9e"),
    ("json-compact", "#424242"),
    ("yaml", "#1e88e5"),
    ("loom", "#e53935"),
    ("toon", "#43a047"),
    ("plsp", "#8e24aa"),
];

/// One bar: format, o200k tokens, ratio to compact JSON.
type Bar = (String, usize, f64);

fn color(format: &str) -> &'static str {
    COLORS
        .iter()
        .find(|(f, _)| *f == format)
        .map_or("#000000", |(_, c)| c)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The chart as an SVG document.
pub fn chart(run: &Run) -> String {
    let mut groups: Vec<(String, Vec<Bar>)> = Vec::new();
    let all: Vec<Bar> = totals(&run.datasets, &run.formats)
        .into_iter()
        .filter(|t| t.datasets > 0 && t.compact[0] > 0)
        .map(|t| {
            (
                t.format.clone(),
                t.tokens[0],
                t.tokens[0] as f64 / t.compact[0] as f64,
            )
        })
        .collect();
    groups.push(("all datasets (summed)".to_string(), all));
    for r in &run.datasets {
        let Some(base) = r.tokens("json-compact").map(|c| c[0]).filter(|b| *b > 0) else {
            continue;
        };
        let bars = run
            .formats
            .iter()
            .filter_map(|f| {
                let t = r.tokens(f)?[0];
                Some((f.clone(), t, t as f64 / base as f64))
            })
            .collect();
        groups.push((r.name.clone(), bars));
    }
    let max_ratio = groups
        .iter()
        .flat_map(|(_, b)| b.iter().map(|x| x.2))
        .fold(1.5f64, f64::max);
    let (label_w, bar_w, bar_h, gap) = (170.0, 560.0, 12.0, 2.0);
    let width = label_w + bar_w + 140.0;
    let rows: usize = groups.iter().map(|(_, b)| b.len() + 1).sum();
    let height = 70.0 + rows as f64 * (bar_h + gap) + groups.len() as f64 * 6.0 + 20.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" font-family="sans-serif" font-size="11">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="18" font-size="14" font-weight="bold">o200k_base tokens relative to compact JSON (100% = compact JSON; shorter is cheaper)</text>"##
    );
    let mut lx = 10.0;
    for f in &run.formats {
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="28" width="10" height="10" fill="{}"/><text x="{}" y="37">{}</text>"##,
            color(f),
            lx + 14.0,
            esc(f)
        );
        lx += 24.0 + 7.0 * f.len() as f64;
    }
    let x100 = label_w + bar_w / max_ratio;
    let mut y = 56.0;
    let top = y;
    for (title, bars) in &groups {
        let _ = writeln!(
            s,
            r##"<text x="10" y="{:.0}" font-weight="bold">{}</text>"##,
            y + bar_h - 2.0,
            esc(title)
        );
        y += bar_h + gap;
        for (f, tokens, ratio) in bars {
            let w = bar_w * ratio / max_ratio;
            let _ = writeln!(
                s,
                r##"<text x="{:.0}" y="{:.0}" text-anchor="end">{}</text><rect x="{label_w}" y="{y:.0}" width="{w:.1}" height="{bar_h}" fill="{}"/><text x="{:.1}" y="{:.0}">{} ({:.0}%)</text>"##,
                label_w - 6.0,
                y + bar_h - 2.0,
                esc(f),
                color(f),
                label_w + w + 4.0,
                y + bar_h - 2.0,
                tokens,
                ratio * 100.0
            );
            y += bar_h + gap;
        }
        y += 6.0;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{x100:.1}" y1="{top:.0}" x2="{x100:.1}" y2="{y:.0}" stroke="#000000" stroke-dasharray="3,3"/><text x="{x100:.1}" y="{:.0}" text-anchor="middle">100%</text>"##,
        y + 12.0
    );
    s.push_str("</svg>\n");
    s
}
