//! Terminal output: one progress line per case as it finishes, then a summary by area and
//! outcome, the level achieved, and every failure with its expected vs. actual.

use super::RunReport;
use crate::case::Case;
use crate::outcome::{CaseResult, Outcome};
use std::fmt::Write;

/// The line a run starts with: how many cases against what, and the seed that reproduces it.
pub fn run_header(cases: usize, url: &str, domain: &str, level: u8, seed: u64) -> String {
    format!(
        "loom-conformance: {cases} cases against {url} ({domain}), level {level}, seed {seed} (reproduce with --seed {seed})"
    )
}

/// The progress line of one result.
pub fn progress_line(case: &Case, r: &CaseResult, done: usize, total: usize) -> String {
    let mark = match r.outcome {
        Outcome::Pass => "ok  ",
        Outcome::Fail | Outcome::Error | Outcome::UnexpectedPass => "FAIL",
        Outcome::NonStrict | Outcome::Informational => "warn",
        Outcome::ExpectedFail => "xfail",
        Outcome::Skipped | Outcome::Unsupported => "skip",
    };
    let mut line = format!(
        "[{done:>3}/{total}] {mark:<5} {:<56} {}",
        case.id, r.outcome
    );
    if r.outcome != Outcome::Pass
        && let Some(m) = &r.message
    {
        let short: String = m.chars().take(100).collect();
        let _ = write!(line, " — {short}");
    }
    line
}

/// The final summary.
pub fn summary(r: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nLOOM conformance — target {} ({})", r.target, r.node);
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
            area,
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
        "\n{} cases: {} in {:.1} s",
        r.results.len(),
        total.join(", "),
        r.duration.as_secs_f64()
    );
    match r.level_achieved() {
        Some(l) => {
            let _ = writeln!(out, "Level achieved: {l} (requested {})", r.level);
        }
        None => {
            let _ = writeln!(out, "Level achieved: none (requested {})", r.level);
        }
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
                "  {} [{} {}, {}] {}",
                c.id,
                c.strength,
                res.outcome,
                c.spec.join(", "),
                c.requirement
            );
            if let (Some(e), Some(a)) = (&res.expected, &res.actual) {
                let _ = writeln!(out, "      expected: {e}\n      actual:   {a}");
            } else if let Some(m) = &res.message {
                let _ = writeln!(out, "      {m}");
            }
            if let Some(i) = c.interpretation {
                let _ = writeln!(out, "      interpretation: {i}");
            }
            if let Some(t) = res.decisive.and_then(|i| res.transcripts.get(i)) {
                let _ = writeln!(
                    out,
                    "      exchange: {} {} → {} ({} ms)",
                    t.method,
                    t.path,
                    t.status,
                    t.elapsed.as_millis()
                );
            }
        }
    }
    out
}

/// The mutation half of `selftest`: per case its clean and mutated outcome and quirk, then
/// the coverage line and the unproven MUST cases.
#[cfg(feature = "selftest")]
pub fn mutations(st: &crate::selftest::SelfTest, cases: &[&Case]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<58} {:<8} {:<14} quirk", "case", "clean", "mutated");
    for m in &st.cases {
        let _ = writeln!(
            out,
            "{:<58} {:<8} {:<14} {}",
            m.id,
            m.clean.name(),
            m.mutated.map_or("-", |o| o.name()),
            m.quirk.unwrap_or("-")
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
            let _ = writeln!(out, "  {id}");
        }
    }
    out
}

/// The legal-variant half of `selftest`: per variant its spec sentence and counts, then the
/// coverage line.
#[cfg(feature = "selftest")]
pub fn variants(st: &crate::selftest::SelfTest) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{:<38} {:<12} {:>5} {:>8} {:>7} {:>9} {:>8}",
        "legal variant", "allowed by", "pass", "skipped", "unsupp.", "departed", "problems"
    );
    for v in &st.variants {
        let problems = v.cases.iter().filter(|c| c.problem.is_some()).count();
        let _ = writeln!(
            out,
            "{:<38} {:<12} {:>5} {:>8} {:>7} {:>9} {:>8}",
            v.variant.name,
            v.variant.section,
            v.count(Outcome::Pass),
            v.count(Outcome::Skipped),
            v.count(Outcome::Unsupported),
            v.count(Outcome::NonStrict),
            problems
        );
    }
    let (clean, total) = st.variant_coverage();
    let (ok, runs) = st.variant_case_runs();
    let _ = writeln!(
        out,
        "\nlegal-variant coverage: {clean}/{total} variants ({:.1}%) with every case acceptable; {ok}/{runs} case runs",
        percent(clean, total)
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
