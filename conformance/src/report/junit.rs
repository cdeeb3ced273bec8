//! The JUnit XML report: one `<testsuite>` per area, one `<testcase>` per case (name = case
//! ID, classname = `loom.<area>`). `fail`, `error` and `unexpected-pass` are failures (the
//! message says expected vs. actual, the system-out holds the deciding exchange and the
//! rest of the transcript); `skipped`, `unsupported` and `expected-fail` are skipped with
//! their reason; `non-strict` and `informational` pass with the finding in system-out.

use super::RunReport;
use crate::case::Case;
use crate::outcome::{CaseResult, Outcome};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The transcript text of a non-passing case: the deciding exchange first, then the others.
pub fn transcript_text(r: &CaseResult) -> String {
    let mut out = String::new();
    if let Some(e) = &r.expected {
        let _ = writeln!(out, "expected: {e}");
    }
    if let Some(a) = &r.actual {
        let _ = writeln!(out, "actual:   {a}");
    }
    if let Some(t) = r.decisive.and_then(|i| r.transcripts.get(i)) {
        let _ = writeln!(out, "\n--- deciding exchange ---\n{t}");
    }
    for (i, t) in r.transcripts.iter().enumerate() {
        if Some(i) != r.decisive {
            let _ = writeln!(out, "\n--- exchange {} ---\n{t}", i + 1);
        }
    }
    out
}

fn testcase(c: &Case, r: &CaseResult) -> TestCase {
    let reason = r.message.clone().unwrap_or_else(|| r.outcome.to_string());
    let status = match r.outcome {
        Outcome::Pass | Outcome::NonStrict | Outcome::Informational => TestCaseStatus::success(),
        Outcome::Fail | Outcome::UnexpectedPass => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(r.outcome.name()).set_message(reason.clone());
            s.set_description(transcript_text(r));
            s
        }
        Outcome::Error => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_type("error").set_message(reason.clone());
            s.set_description(transcript_text(r));
            s
        }
        Outcome::Skipped | Outcome::Unsupported | Outcome::ExpectedFail => {
            let mut s = TestCaseStatus::skipped();
            s.set_type(r.outcome.name())
                .set_message(format!("{}: {reason}", r.outcome));
            s
        }
    };
    let mut tc = TestCase::new(c.id, status);
    tc.set_classname(format!("loom.{}", c.area()))
        .set_time(r.duration);
    let mut out = format!(
        "{} [{} L{}, {}]\n{}\n",
        c.id,
        c.strength,
        c.level,
        c.spec.join(", "),
        c.requirement
    );
    if r.outcome != Outcome::Pass {
        let _ = write!(out, "outcome: {}\n{}", r.outcome, transcript_text(r));
    }
    tc.set_system_out(out);
    tc
}

/// The report as JUnit XML.
pub fn render(r: &RunReport) -> Result<String, String> {
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for (c, res) in &r.results {
        suites
            .entry(c.area())
            .or_insert_with(|| {
                let mut s = TestSuite::new(c.area());
                // Every suite carries the seed (`run --seed SEED` reproduces the run) and the
                // verdict: a partial run says so and names no achieved level (issue 18).
                s.add_property(Property::new("seed", r.seed.to_string()));
                s.add_property(Property::new("level-requested", r.level.to_string()));
                s.add_property(Property::new("verdict", r.verdict().headline()));
                match r.level_achieved() {
                    Some(l) => s.add_property(Property::new("level-achieved", l.to_string())),
                    None => s.add_property(Property::new("level-achieved", "none")),
                };
                if !r.partial.is_empty() {
                    s.add_property(Property::new(
                        "partial-run",
                        format!("no level certified: {}", r.partial.join("; ")),
                    ));
                }
                s
            })
            .add_test_case(testcase(c, res));
    }
    let mut report = Report::new(format!("loom-conformance {} ({})", r.target, r.node));
    report.set_time(r.duration);
    report.add_test_suites(suites.into_values());
    report.to_string().map_err(|e| e.to_string())
}
