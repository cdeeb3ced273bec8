//! Hand-written SVG bar charts: the overview (o200k tokens of each format relative to compact
//! JSON, per dataset) and one chart per dataset (every format and tokenizer).

use std::fmt::Write as _;

use super::Run;
use super::measure::DatasetResult;
use super::report::totals;
use super::tokenizer::{N, TOKENIZER_NAMES};

const COLORS: [(&str, &str); 7] = [
    ("json-pretty", "#9e9e9e"),
    ("json-compact", "#424242"),
    ("yaml", "#1e88e5"),
    ("loom", "#e53935"),
    ("toon", "#43a047"),
    ("toon-tab", "#a5d6a7"),
    ("plsp", "#8e24aa"),
];

/// One color per tokenizer, in column order.
const TOKENIZER_COLORS: [&str; N] = [
    "#1b5e20", "#43a047", "#81c784", "#c8e6c9", "#0d47a1", "#f57c00", "#6a1b9a", "#c62828",
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

/// The chart of one dataset: for each counted format, one bar per tokenizer with its tokens
/// relative to compact JSON under the same tokenizer (dashed line = 100%).
pub fn dataset_chart(r: &DatasetResult) -> String {
    let Some(base) = r.tokens("json-compact") else {
        return empty_chart(&r.name, "compact JSON did not round-trip");
    };
    let groups: Vec<(&str, Vec<(usize, f64)>)> = r
        .cells
        .iter()
        .filter_map(|c| {
            let (_, t) = c.outcome.counted()?;
            let bars = (0..N)
                .map(|i| (t[i], t[i] as f64 / base[i].max(1) as f64))
                .collect();
            Some((c.format.as_str(), bars))
        })
        .collect();
    let max_ratio = groups
        .iter()
        .flat_map(|(_, b)| b.iter().map(|x| x.1))
        .fold(1.2f64, f64::max);
    let (label_w, bar_w, bar_h, gap, group_gap) = (110.0, 520.0, 7.0, 1.0, 10.0);
    let width = label_w + bar_w + 110.0;
    let top = 64.0;
    let group_h = N as f64 * (bar_h + gap);
    let height = top + groups.len() as f64 * (group_h + group_gap) + 24.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" font-family="sans-serif" font-size="11">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="10" y="18" font-size="13" font-weight="bold">{}: tokens relative to compact JSON, per tokenizer (shorter is cheaper)</text>"##,
        esc(&r.name)
    );
    let mut lx = 10.0;
    for (i, name) in TOKENIZER_NAMES.iter().enumerate() {
        let _ = writeln!(
            s,
            r##"<rect x="{lx}" y="30" width="10" height="10" fill="{}"/><text x="{}" y="39">{}</text>"##,
            TOKENIZER_COLORS[i],
            lx + 13.0,
            esc(name)
        );
        lx += 20.0 + 6.2 * name.len() as f64;
    }
    let x100 = label_w + bar_w / max_ratio;
    let mut y = top;
    for (format, bars) in &groups {
        let _ = writeln!(
            s,
            r##"<text x="{:.0}" y="{:.0}" text-anchor="end" font-weight="bold">{}</text>"##,
            label_w - 8.0,
            y + group_h / 2.0 + 4.0,
            esc(format)
        );
        for (i, (tokens, ratio)) in bars.iter().enumerate() {
            let w = bar_w * ratio / max_ratio;
            let _ = writeln!(
                s,
                r##"<rect x="{label_w}" y="{y:.0}" width="{w:.1}" height="{bar_h}" fill="{}"><title>{} / {}: {} tokens ({:.1}% of compact JSON)</title></rect><text x="{:.1}" y="{:.0}" font-size="8">{:.0}%</text>"##,
                TOKENIZER_COLORS[i],
                esc(format),
                TOKENIZER_NAMES[i],
                tokens,
                ratio * 100.0,
                label_w + w + 3.0,
                y + bar_h,
                ratio * 100.0
            );
            y += bar_h + gap;
        }
        y += group_gap;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{x100:.1}" y1="{top:.0}" x2="{x100:.1}" y2="{y:.0}" stroke="#000000" stroke-dasharray="3,3"/><text x="{x100:.1}" y="{:.0}" text-anchor="middle">100% = compact JSON</text>"##,
        y + 12.0
    );
    s.push_str("</svg>\n");
    s
}

fn empty_chart(name: &str, why: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"600\" height=\"40\" font-family=\"sans-serif\" font-size=\"12\"><text x=\"10\" y=\"24\">{}: no chart ({})</text></svg>\n",
        esc(name),
        esc(why)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::measure::{Cell, Outcome};

    fn counted(format: &str, t: usize) -> Cell {
        Cell {
            format: format.to_string(),
            outcome: Outcome::Counted {
                bytes: 1,
                tokens: [t; N],
                normalized: 0,
            },
        }
    }

    #[test]
    fn dataset_chart_has_one_bar_per_counted_format_and_tokenizer() {
        let r = DatasetResult {
            name: "d".to_string(),
            description: String::new(),
            docs: 1,
            cells: vec![
                counted("json-compact", 100),
                counted("loom", 120),
                Cell {
                    format: "toon".to_string(),
                    outcome: Outcome::Unavailable("no bridge".to_string()),
                },
            ],
        };
        let svg = dataset_chart(&r);
        assert_eq!(svg.matches("<title>").count(), 2 * N);
        assert!(
            svg.contains("<title>loom / o200k_base: 120 tokens (120.0% of compact JSON)</title>")
        );
        assert!(!svg.contains(">toon<"));
        let no_base = DatasetResult {
            cells: vec![counted("loom", 1)],
            ..r
        };
        assert!(dataset_chart(&no_base).contains("no chart (compact JSON did not round-trip)"));
    }
}
