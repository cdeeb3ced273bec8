//! Terminal output: one progress line per case as it finishes, then a summary by area and
//! outcome, the level achieved, and every failure with its expected vs. actual.

use super::{RunReport, layout};
use crate::case::Case;
use crate::outcome::{CaseResult, Outcome};
use std::fmt::Write;

/// The line a run starts with: how many cases against what, and the seed that reproduces it.
pub fn run_header(cases: usize, url: &str, domain: &str, level: u8, seed: u64) -> String {
    let width = layout::width();
    layout::indented(
        &format!(
            "loom-conformance: {cases} cases against {url} ({domain}), level {level}, seed {seed} (reproduce with --seed {seed})"
        ),
        width,
        0,
        2,
    )
}

/// The progress line of one result, fitted to `width`: a long ID is shortened in the middle
/// and the message cut (the summary and the reports carry both in full).
pub fn progress_line(
    case: &Case,
    r: &CaseResult,
    done: usize,
    total: usize,
    width: usize,
) -> String {
    let mark = match r.outcome {
        Outcome::Pass => "ok  ",
        Outcome::Fail | Outcome::Error | Outcome::UnexpectedPass => "FAIL",
        Outcome::NonStrict | Outcome::Informational => "warn",
        Outcome::ExpectedFail => "xfail",
        Outcome::Skipped | Outcome::Unsupported => "skip",
    };
    let counter = format!("[{done:>3}/{total}] {mark:<5} ");
    let outcome = format!(" {}", r.outcome);
    let id_room = width
        .saturating_sub(layout::cols(&counter) + layout::cols(&outcome))
        .max(16);
    let id = layout::shorten_middle(case.id, id_room.min(56));
    let mut line = format!("{counter}{id:<w$}{outcome}", w = id_room.min(56));
    if r.outcome != Outcome::Pass
        && let Some(m) = &r.message
    {
        let room = width.saturating_sub(layout::cols(&line) + 3);
        if room >= 12 {
            let _ = write!(line, " — {}", layout::truncate(m, room));
        }
    }
    layout::truncate(&line, width)
}

/// The final summary at the terminal's width.
pub fn summary(r: &RunReport) -> String {
    summary_at(r, layout::width())
}

/// The final summary, no line wider than `width`: counts by area and outcome, the verdict
/// (a partial run says so and names no level), the seed, and every failure with expected vs.
/// actual and the deciding exchange.
pub fn summary_at(r: &RunReport, width: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{}",
        layout::indented(
            &format!("LOOM conformance — target {} ({})", r.target, r.node),
            width,
            0,
            2
        )
    );
    let _ = writeln!(
        out,
        "{:<14} {:>5} {:>5} {:>10} {:>7} {:>7} {:>11} {:>6}",
        "area", "pass", "fail", "non-strict", "skipped", "unsupp.", "xfail/xpass", "error"
    );
    for (area, m) in r.by_area() {
        let n = |o: Outcome| m.get(&o).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "{:<14} {:>5} {:>5} {:>10} {:>7} {:>7} {:>5}/{:<5} {:>6}",
            layout::shorten_middle(area, 14),
            n(Outcome::Pass),
            n(Outcome::Fail),
            n(Outcome::NonStrict) + n(Outcome::Informational),
            n(Outcome::Skipped),
            n(Outcome::Unsupported),
            n(Outcome::ExpectedFail),
            n(Outcome::UnexpectedPass),
            n(Outcome::Error)
        );
    }
    let counts = r.counts();
    let total: Vec<String> = Outcome::ALL
        .iter()
        .filter_map(|o| counts.get(o).map(|n| format!("{n} {o}")))
        .collect();
    let _ = writeln!(
        out,
        "\n{}",
        layout::indented(
            &format!(
                "{} cases: {} in {:.1} s",
                r.results.len(),
                total.join(", "),
                r.duration.as_secs_f64()
            ),
            width,
            0,
            2
        )
    );
    let verdict = r.verdict();
    let _ = writeln!(out, "{}", verdict.headline());
    let detail = verdict.detail();
    if !detail.is_empty() {
        let _ = writeln!(out, "{}", layout::indented(&detail, width, 2, 2));
    }
    let _ = writeln!(
        out,
        "Seed {}: reproduce this run with --seed {}",
        r.seed, r.seed
    );
    let failures: Vec<_> = r
        .results
        .iter()
        .filter(|(_, res)| res.outcome.fails_run() || res.outcome == Outcome::NonStrict)
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nFailures:");
        for (c, res) in failures {
            let _ = writeln!(
                out,
                "{}",
                layout::indented(
                    &format!(
                        "{} [{} {}, {}] {}",
                        c.id,
                        c.strength,
                        res.outcome,
                        c.spec.join(", "),
                        c.requirement
                    ),
                    width,
                    2,
                    4
                )
            );
            let field = |label: &str, text: &str| {
                layout::indented(&format!("{label} {text}"), width, 6, 16)
            };
            if let (Some(e), Some(a)) = (&res.expected, &res.actual) {
                let _ = writeln!(out, "{}", field("expected:", e));
                let _ = writeln!(out, "{}", field("actual:  ", a));
            } else if let Some(m) = &res.message {
                let _ = writeln!(out, "{}", layout::indented(m, width, 6, 6));
            }
            if let Some(i) = c.interpretation {
                let _ = writeln!(out, "{}", field("interpretation:", i));
            }
            if let Some(t) = res.decisive.and_then(|i| res.transcripts.get(i)) {
                let _ = writeln!(
                    out,
                    "{}",
                    field(
                        "exchange:",
                        &format!(
                            "{} {} → {} ({} ms)",
                            t.method,
                            t.path,
                            t.status,
                            t.elapsed.as_millis()
                        )
                    )
                );
            }
        }
    }
    out
}

/// The mutation half of `selftest`: per case its clean and mutated outcome and quirk, then
/// the coverage line and the unproven MUST cases; no line wider than `width`.
#[cfg(feature = "selftest")]
pub fn mutations(st: &crate::selftest::SelfTest, cases: &[&Case], width: usize) -> String {
    let mut out = String::new();
    // The case column takes what the other three leave (they are 8 + 14 + quirk wide).
    let quirk_w = st
        .cases
        .iter()
        .map(|m| layout::cols(m.quirk.unwrap_or("-")))
        .max()
        .unwrap_or(5)
        .max(5);
    let id_w = width.saturating_sub(9 + 15 + 1 + quirk_w).clamp(24, 58);
    let lead = |id: &str, clean: &str, mutated: &str| {
        format!(
            "{:<id_w$} {clean:<8} {mutated:<14} ",
            layout::shorten_middle(id, id_w)
        )
    };
    let _ = writeln!(
        out,
        "{}",
        layout::row(&lead("case", "clean", "mutated"), "quirk", width, 12)
    );
    for m in &st.cases {
        let _ = writeln!(
            out,
            "{}",
            layout::row(
                &lead(m.id, m.clean.name(), m.mutated.map_or("-", |o| o.name())),
                m.quirk.unwrap_or("-"),
                width,
                12
            )
        );
    }
    let (proven, total) = st.coverage(cases);
    let _ = writeln!(
        out,
        "\nmutation coverage: {proven}/{total} MUST cases ({:.1}%)",
        percent(proven, total)
    );
    let unproven = st.unproven(cases);
    if !unproven.is_empty() {
        let _ = writeln!(out, "unproven MUST cases ({}):", unproven.len());
        for id in &unproven {
            let _ = writeln!(out, "  {}", layout::shorten_middle(id, width - 2));
        }
    }
    out
}

/// The legal-variant half of `selftest`: per variant its spec section and counts, then the
/// coverage line; no line wider than `width`.
#[cfg(feature = "selftest")]
pub fn variants(st: &crate::selftest::SelfTest, width: usize) -> String {
    let mut out = String::new();
    // Counts take 6 × 6 columns; the name takes what is left (at most 38).
    let name_w = width.saturating_sub(13 + 36).clamp(16, 38);
    let _ = writeln!(
        out,
        "\n{:<name_w$} {:<12}{:>6}{:>6}{:>6}{:>6}{:>6}",
        "legal variant", "allowed by", "pass", "skip", "unsup", "depart", "probl"
    );
    for v in &st.variants {
        let problems = v.cases.iter().filter(|c| c.problem.is_some()).count();
        let _ = writeln!(
            out,
            "{:<name_w$} {:<12}{:>6}{:>6}{:>6}{:>6}{:>6}",
            layout::shorten_middle(v.variant.name, name_w),
            layout::shorten_middle(v.variant.section, 12),
            v.count(Outcome::Pass),
            v.count(Outcome::Skipped),
            v.count(Outcome::Unsupported),
            v.count(Outcome::NonStrict),
            problems
        );
    }
    let _ = writeln!(
        out,
        "{}",
        layout::indented(
            "(skip = skipped, unsup = unsupported, depart = non-strict where the variant departs from a SHOULD, probl = problems)",
            width,
            0,
            1
        )
    );
    let (clean, total) = st.variant_coverage();
    let (ok, runs) = st.variant_case_runs();
    let _ = writeln!(
        out,
        "\n{}",
        layout::indented(
            &format!(
                "legal-variant coverage: {clean}/{total} variants ({:.1}%) with every case acceptable; {ok}/{runs} case runs",
                percent(clean, total)
            ),
            width,
            0,
            2
        )
    );
    out
}

/// `part` of `whole` in percent (100 when there is nothing to cover).
pub fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        100.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
