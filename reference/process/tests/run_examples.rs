//! The example packages' deterministic test cases run green, tell the story their scripts
//! tell, and give byte-identical events on every run.

use loom_process::engine::event::read_jsonl;
use loom_process::engine::policy::DenyConfirm;
use loom_process::package::dir::load_dir;
use loom_process::runner::RunOptions;
use loom_process::runner::testcase::{CaseReport, CaseStatus, run_case};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
}

fn run_all(name: &str) -> Vec<CaseReport> {
    let pkg = load_dir(&example(name)).unwrap_or_else(|r| panic!("{name}: {}", r.to_text(name)));
    pkg.process
        .tests
        .iter()
        .map(|c| {
            run_case(
                &pkg.process,
                &pkg.root,
                c,
                &RunOptions::default(),
                Arc::new(DenyConfirm),
            )
        })
        .collect()
}

/// `phase#attempt kind:name status` of every non-passing verdict, plus final phase states.
fn story(r: &CaseReport) -> Vec<String> {
    let events = read_jsonl(&r.events_jsonl).unwrap();
    let s = loom_process::engine::event::summarize(&events);
    let mut out: Vec<String> = s
        .verdicts
        .into_iter()
        .filter(|v| !v.ends_with(" pass"))
        .collect();
    out.extend(s.phases.into_iter().map(|(k, v)| format!("{k}={v}")));
    out
}

#[test]
fn every_example_case_passes_or_is_a_skipped_live_case() {
    for name in [
        "code-fix",
        "financial-analysis",
        "legacy-notes",
        "research-report",
    ] {
        for r in run_all(name) {
            assert_ne!(
                r.status,
                CaseStatus::Fail,
                "{name}/{}: {:?}",
                r.id,
                r.failures
            );
            if r.status == CaseStatus::Skipped {
                assert!(r.notes[0].starts_with("mode live"), "{name}/{}", r.id);
            }
        }
    }
}

#[test]
fn code_fix_retries_an_oversized_fix() {
    let r = &run_all("code-fix")[0];
    assert_eq!(
        story(r),
        [
            "fix#1 gate:unit-tests skipped",
            "fix#1 gate:python-tests skipped",
            "fix#1 gate:small-diff fail",
            "fix#2 gate:unit-tests skipped",
            "fix#2 gate:python-tests skipped",
            "fix=completed",
            "reproduce=completed",
            "summarize=completed",
        ]
    );
}

#[test]
fn financial_analysis_failure_path_blocks_the_contradicted_memo() {
    let reports = run_all("financial-analysis");
    assert_eq!(
        story(&reports[0])[0],
        "statements#1 gate:no-missing-cells fail"
    );
    let failure = &reports[1];
    assert_eq!(failure.id, "contradicted-claims-blocked");
    assert_eq!(failure.run_status.map(|s| s.as_str()), Some("failed"));
    assert!(story(failure).contains(&"memo#1 rule:math-consistency fail".to_owned()));
    // The fact checker contradicts the memo's revenue figure: the synthesis final gate
    // (max_contradicted_count 0) blocks it, and the scorecard says so.
    assert!(story(failure).contains(&"memo#1 validity:final_gate fail".to_owned()));
    assert!(story(failure).contains(&"memo=failed".to_owned()));
    let events = read_jsonl(&failure.events_jsonl).unwrap();
    let card = events
        .iter()
        .find_map(|e| e.payload.get("validityScorecard"))
        .expect("a validity scorecard event");
    assert_eq!(card["phases"]["memo"]["contradicted"], 1);
    assert_eq!(card["phases"]["memo"]["status"], "fail");
    assert_eq!(card["passed"], false);
    assert!(!story(&reports[0]).iter().any(|v| v.contains("validity")));
}

/// The "every figure states its as-of date" check is a must-appear check, so it is an
/// artifact_regex gate with expect_match: true (a verification regex rule is a forbidden
/// pattern: its match would be a violation).
#[test]
fn financial_analysis_as_of_date_is_a_must_appear_gate() {
    for r in run_all("financial-analysis") {
        let events = read_jsonl(&r.events_jsonl).unwrap();
        let verdicts = loom_process::engine::event::summarize(&events).verdicts;
        assert!(
            verdicts.contains(&"company-screening#1 gate:as-of-date-stated pass".to_owned()),
            "{}: {verdicts:?}",
            r.id
        );
        assert!(
            !verdicts.iter().any(|v| v.contains("as-of-dates")),
            "{verdicts:?}"
        );
    }
}

#[test]
fn research_report_publishes_through_finalizers_and_reruns_synthesis() {
    let r = &run_all("research-report")[0];
    let events = read_jsonl(&r.events_jsonl).unwrap();
    let finalized: Vec<&str> = events
        .iter()
        .filter(|e| e.payload["scope"] == "finalizer" && e.payload["to"] == "completed")
        .map(|e| e.payload["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        finalized,
        [
            "scope__finalize_output",
            "sweep-primary__finalize_output",
            "sweep-secondary__finalize_output"
        ]
    );
    let restores = events
        .iter()
        .filter(|e| e.kind.name() == "ToolCallStarted" && e.payload["type"] == "checkpoint.restore")
        .count();
    assert_eq!(restores, 1, "full_rerun restored the workspace once");
    assert!(story(r).contains(&"synthesize#1 gate:readability fail".to_owned()));
}

#[test]
fn example_runs_are_byte_identical() {
    for name in ["code-fix", "research-report"] {
        let a: Vec<String> = run_all(name).into_iter().map(|r| r.events_jsonl).collect();
        let b: Vec<String> = run_all(name).into_iter().map(|r| r.events_jsonl).collect();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn golden_code_fix_smoke_events() {
    let r = &run_all("code-fix")[0];
    // Package-relative model name: no machine path to redact.
    let jsonl = &r.events_jsonl;
    assert!(!jsonl.contains(&example("code-fix").display().to_string()));
    insta::assert_snapshot!("code_fix_smoke_events", jsonl);
}
