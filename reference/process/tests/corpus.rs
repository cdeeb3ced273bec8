//! The example corpus (`examples/*/`): every package's deterministic `tests:` cases pass, give
//! byte-identical events on every run, and match their golden event stream; and the runs
//! show the v2 runtime at work (README "Runtime features"): scoped rules judging only their
//! phases, a replan after an exhausted loop, a bundled tool's real output feeding a
//! `tool_metric` gate, a validity scorecard, auth preflight, follow-ups, semantic checks,
//! model-tier escalation.

use loom_process::engine::event::{Event, read_jsonl, summarize};
use loom_process::engine::policy::DenyConfirm;
use loom_process::package::dir::load_dir;
use loom_process::runner::RunOptions;
use loom_process::runner::testcase::{CaseReport, CaseStatus, run_case};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn packages() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(examples())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("process.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn run_with(name: &str, options: &RunOptions) -> Vec<CaseReport> {
    let pkg =
        load_dir(&examples().join(name)).unwrap_or_else(|r| panic!("{name}: {}", r.to_text(name)));
    pkg.process
        .tests
        .iter()
        .map(|c| run_case(&pkg.process, &pkg.root, c, options, Arc::new(DenyConfirm)))
        .collect()
}

fn run(name: &str) -> Vec<CaseReport> {
    run_with(name, &RunOptions::default())
}

fn case(name: &str, id: &str) -> Vec<Event> {
    let r = run(name).into_iter().find(|r| r.id == id).unwrap();
    assert_eq!(r.status, CaseStatus::Pass, "{name}/{id}: {:?}", r.failures);
    read_jsonl(&r.events_jsonl).unwrap()
}

fn of<'a>(events: &'a [Event], kind: &str) -> Vec<&'a Json> {
    events
        .iter()
        .filter(|e| e.kind.name() == kind)
        .map(|e| &e.payload)
        .collect()
}

/// Python for the bundled tools: the machine's `python3` (CI has one). Without it the cases
/// of packages with bundled tools are skipped by the runner, saying why, and so are the
/// assertions about them here.
fn have_python() -> bool {
    std::process::Command::new("python3")
        .arg("-c")
        .arg("import sys")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_corpus_has_ten_packages_whose_cases_pass_deterministically_and_match_their_golden_streams() {
    let names = packages();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        if name == "release-readiness" && !have_python() {
            continue; // its `compiles` check runs `python3 -m py_compile`
        }
        let first = run(&name);
        let second = run(&name);
        assert!(!first.is_empty(), "{name} has no tests");
        for (a, b) in first.iter().zip(&second) {
            match a.status {
                CaseStatus::Fail => panic!("{name}/{}: {:?}", a.id, a.failures),
                CaseStatus::Skipped => {
                    assert!(
                        a.notes[0].starts_with("mode live") || !have_python(),
                        "{name}/{}: {:?}",
                        a.id,
                        a.notes
                    );
                    continue;
                }
                CaseStatus::Pass => {}
            }
            assert_eq!(
                a.events_jsonl, b.events_jsonl,
                "{name}/{}: not deterministic",
                a.id
            );
            assert!(
                !a.events_jsonl.contains(&examples().display().to_string()),
                "{name}/{}: a machine path in the events",
                a.id
            );
            // loop-engine "Plan Schema": every PlanUpdated carries its version, and the
            // version only grows.
            let events = read_jsonl(&a.events_jsonl).unwrap();
            let versions: Vec<u64> = of(&events, "PlanUpdated")
                .iter()
                .map(|p| p["plan"]["version"].as_u64().expect("plan.version"))
                .collect();
            assert!(
                versions.windows(2).all(|w| w[0] < w[1]),
                "{name}/{}: {versions:?}",
                a.id
            );
            insta::assert_snapshot!(format!("{name}__{}", a.id), a.events_jsonl);
        }
    }
}

#[test]
fn scoped_rules_judge_only_their_phases() {
    if !have_python() {
        return;
    }
    let events = case("web-analytics-audit", "smoke");
    let judged = |rule: &str| -> Vec<String> {
        let mut v: Vec<String> = of(&events, "JudgeResult")
            .iter()
            .filter(|p| p["kind"] == "rule" && p["name"] == rule)
            .map(|p| p["phase"].as_str().unwrap().to_owned())
            .collect();
        v.dedup();
        v
    };
    assert_eq!(judged("metrics-quantified"), ["recommendations"]);
    assert_eq!(
        judged("implementation-specific"),
        ["tracking-audit", "recommendations"]
    );
    assert_eq!(
        judged("funnel-math-check"),
        ["funnel-analysis", "recommendations"]
    );
    // `applies_to_phases: ["*"]` judges every phase, once per attempt.
    assert_eq!(
        of(&events, "JudgeResult")
            .iter()
            .filter(|p| p["name"] == "no-placeholders")
            .count(),
        8
    );
}

#[test]
fn an_exhausted_loop_is_replanned_and_the_bundled_tool_feeds_the_gate() {
    if !have_python() {
        return;
    }
    let events = case("web-analytics-audit", "smoke");
    // The real wa_metrics output of each funnel attempt, and the gate verdict built on it.
    let measured: Vec<f64> = of(&events, "Observation")
        .iter()
        .filter(|p| {
            p["phase"] == "funnel-analysis" && p["observation"]["raw"]["tool"] == "wa_metrics"
        })
        .map(|p| {
            p["observation"]["raw"]["data"]["funnel"]["consistency_error_pct"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(measured, [2.1, 1.6, 0.0]);
    let gate: Vec<(u64, String)> = of(&events, "JudgeResult")
        .iter()
        .filter(|p| p["name"] == "funnel-math")
        .map(|p| {
            (
                p["attempt"].as_u64().unwrap(),
                p["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        gate,
        [(1, "fail".into()), (2, "fail".into()), (3, "pass".into())]
    );
    // After attempt 2 (max_attempts 2) the planner was asked and accepted; the plan step was
    // revised (a PlanUpdated with reason replan) and attempt 3 ran with a new loop window.
    let replan = of(&events, "TaskUpdated")
        .into_iter()
        .find_map(|p| p.get("replan"))
        .expect("a replan");
    assert_eq!(replan["status"], "accepted");
    assert_eq!(replan["number"], 1);
    let revised = of(&events, "PlanUpdated")
        .into_iter()
        .find(|p| p["reason"] == "replan")
        .expect("a revised plan");
    let step = revised["plan"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "funnel-analysis")
        .unwrap();
    assert_eq!(
        step["criteria"][0],
        "overall rate equals the product of the step rates (wa_metrics consistency_error_pct <= 1)"
    );
    let s = summarize(&events);
    assert_eq!(s.phases["funnel-analysis"], "completed");
    assert_eq!(s.outcome.as_deref(), Some("completed"));
}

#[test]
fn the_validity_contract_prunes_gates_synthesis_input_and_scores() {
    let events = case("market-sizing", "smoke");
    let card = of(&events, "TaskUpdated")
        .into_iter()
        .find_map(|p| p.get("validityScorecard"))
        .expect("a validity scorecard event")
        .clone();
    assert_eq!(card["phases"]["top-down"]["pruned"], 1);
    assert_eq!(card["phases"]["top-down"]["status"], "pass");
    assert_eq!(card["phases"]["sizing-brief"]["synthesis"], true);
    assert_eq!(card["passed"], true);
    let input = of(&events, "JudgeResult")
        .into_iter()
        .find(|p| p["name"] == "synthesis_input")
        .unwrap();
    assert_eq!(
        input["reasons"][0],
        "4 claims admitted; excluded: 1 pruned (enforce_verified_context_only)"
    );
    let states: Vec<String> = of(&events, "Observation")
        .iter()
        .filter(|p| p["toolCallId"] == "claims:top-down#1")
        .flat_map(|p| {
            p["observation"]["raw"]["claims"]
                .as_array()
                .unwrap()
                .clone()
        })
        .map(|c| {
            c["lifecycle"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect::<Vec<_>>()
                .join(">")
        })
        .collect();
    assert_eq!(
        states,
        [
            "extracted>supported",
            "extracted>supported",
            "extracted>insufficient_evidence>pruned"
        ]
    );
    let failing = case("market-sizing", "unsupported-synthesis");
    assert!(
        summarize(&failing)
            .verdicts
            .contains(&"sizing-brief#1 validity:final_gate fail".to_owned())
    );
}

#[test]
fn auth_preflight_stops_the_run_before_any_phase() {
    if !have_python() {
        return;
    }
    let events = case("web-analytics-audit", "missing-credentials");
    let err = of(&events, "Error")[0];
    assert_eq!(err["code"], "auth_preflight");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("analytics_export needs WA_PROPERTY_ID")
    );
    assert!(of(&events, "AgentMessage").is_empty());
    assert!(summarize(&events).phases.values().all(|s| s == "skipped"));
}

#[test]
fn remediation_instructions_retries_and_a_queued_follow_up() {
    let events = case("incident-postmortem", "smoke");
    let retry = of(&events, "StateChanged")
        .into_iter()
        .find(|p| {
            p["scope"] == "attempt"
                && p["phase"] == "timeline"
                && p["attempt"] == 2
                && p["to"] == "running"
        })
        .unwrap();
    assert_eq!(retry["remediation"]["strategy"], "targeted_remediation");
    assert!(
        retry["remediation"]["instructions"]
            .as_str()
            .unwrap()
            .starts_with("Correct the timeline entries")
    );
    assert_eq!(retry["modelTier"], 3, "escalated from the phase's tier 2");
    let last = of(&events, "TaskUpdated").into_iter().last().unwrap();
    assert_eq!(last["status"], "partial");
    assert_eq!(last["followUps"][0]["phase"], "timeline");
    assert_eq!(last["followUps"][0]["stopReason"], "remediation_none");
    assert_eq!(summarize(&events).phases["actions"], "completed");
}

#[test]
fn semantic_checks_run_their_helpers() {
    if !have_python() {
        return;
    }
    let events = case("release-readiness", "smoke");
    let v = summarize(&events).verdicts;
    for want in [
        "changelog#1 semantic:compiles pass",
        "release-notes#1 semantic:verification-report pass",
        "release-notes#1 semantic:ui-smoke skipped",
        "release-notes#1 semantic:plain-language pass",
        "changelog#1 rule:changelog-sections pass",
    ] {
        assert!(v.contains(&want.to_owned()), "{want}: {v:?}");
    }
    let started = of(&events, "ToolCallStarted")
        .into_iter()
        .find(|p| p["helper"] == "run_build_check")
        .unwrap();
    assert_eq!(
        started["argv"],
        serde_json::json!(["python3", "-m", "py_compile", "app.py"])
    );
}

#[test]
fn contains_gates_on_a_bundled_tool_and_confirm_or_prune() {
    if !have_python() {
        return;
    }
    let events = case("contract-review", "smoke");
    let v = summarize(&events).verdicts;
    for want in [
        "clause-extraction#1 gate:has-indemnification fail",
        "clause-extraction#1 gate:nothing-required-missing fail",
        "clause-extraction#2 gate:has-indemnification pass",
        "risk-memo#1 validity:final_gate fail",
        "risk-memo#1 validity:confirm_or_prune pass",
    ] {
        assert!(v.contains(&want.to_owned()), "{want}: {v:?}");
    }
    let done = of(&events, "StateChanged")
        .into_iter()
        .find(|p| p["scope"] == "phase" && p["phase"] == "risk-memo" && p["to"] == "completed")
        .unwrap();
    assert_eq!(done["stopReason"], "passed_after_prune");
}

#[test]
fn without_the_declared_python_a_bundled_tool_case_is_skipped_saying_why() {
    let options = RunOptions {
        python: Some(PathBuf::from("/nonexistent/python3")),
        ..RunOptions::default()
    };
    let reports = run_with("contract-review", &options);
    assert_eq!(reports[0].status, CaseStatus::Skipped);
    assert!(
        reports[0].notes[0].contains("bundled tools need Python")
            && reports[0].notes[0].contains("/nonexistent/python3"),
        "{:?}",
        reports[0].notes
    );
}
