//! Semantic checks (guide "Process contract v2": `verification.policy` "semantic checks") and
//! the verification helpers they may name (`package::helpers` is the registry the validator
//! checks; this module binds the ones this runner can execute).
//!
//! A check applies to the phases its `applies_to_phases` lists (all by default). One without
//! a `helper` asks the model to judge its `check` text, like an `llm` rule (scripted
//! verdicts under `judges:` by the check's id). One with a helper runs it:
//!
//! | helper | bound here | what it does |
//! |---|---|---|
//! | `run_test_suite`, `run_build_check` | yes | runs `args.command` (argv) under the command policy with the runner checks' allowlist; passes on exit 0 |
//! | `render_verification_report` | yes | writes the attempt's verdicts as Markdown to `args.output_path` (default `.loom/verification/<phase>-<attempt>.md`) |
//! | `http_assert` | yes, with the network allowed | fetches `args.url`, checks `args.expect_status` (default 200) and `args.contains` |
//! | `browser_assert`, `browser_session`, `serve_static`, `probe_suite` | no (no browser or service runtime) | reported `skipped` when `optional: true`, else `error` |
//!
//! A failing check blocks by `enforcement` (`hard` always, `advisory` never), else by
//! `severity` — default `error` for a helper (a deterministic result), `warning` for a
//! model-judged check.

use super::RunState;
use super::checks::{AttemptView, Check};
use crate::engine::action::ToolAction;
use crate::engine::event::EventType;
use crate::engine::judge::{JudgeResult, JudgeStatus, judge_command_output, judge_llm};
use crate::engine::model::{ModelRequest, Purpose};
use crate::package::{SemanticCheck, Severity, helpers};
use serde_json::{Value as Json, json};

/// Helpers this runner executes.
pub const BOUND: &[&str] = &[
    "http_assert",
    "render_verification_report",
    "run_build_check",
    "run_test_suite",
];

fn blocking(c: &SemanticCheck) -> bool {
    match c.enforcement.as_deref().map(str::trim) {
        Some("hard") => true,
        Some("advisory") => false,
        _ => {
            let default = if c.helper.is_some() {
                Severity::Error
            } else {
                Severity::Warning
            };
            c.severity.unwrap_or(default) == Severity::Error
        }
    }
}

/// Runs the semantic checks that apply to the attempt's phase. `so_far` are the attempt's
/// other checks (for `render_verification_report`). Returns the checks, tokens spent and
/// tool calls made.
pub(crate) fn run(
    st: &mut RunState<'_>,
    view: &AttemptView<'_>,
    so_far: &[Check],
    subject: &str,
    model_tier: u8,
) -> (Vec<Check>, u64, u64) {
    let checks: Vec<SemanticCheck> = st
        .process
        .verification
        .as_ref()
        .and_then(|v| v.policy.as_ref())
        .map(|p| p.semantic_checks.clone())
        .unwrap_or_default();
    let mut out = Vec::new();
    let (mut tokens, mut calls) = (0, 0);
    for (i, c) in checks.iter().enumerate() {
        if !c.applies_to(&view.phase.id) {
            continue;
        }
        let name = c.label(i);
        let result = match c.helper.as_deref().map(|h| h.trim().to_lowercase()) {
            None => match c.check.as_deref().filter(|t| !t.trim().is_empty()) {
                None => JudgeResult::new(
                    JudgeStatus::Skipped,
                    vec!["no `check` text and no `helper`: nothing to run".into()],
                    vec![],
                ),
                Some(text) => {
                    let req = ModelRequest {
                        purpose: Purpose::Judge {
                            rule: name.clone(),
                            check: text.to_owned(),
                            subject: subject.to_owned(),
                        },
                        system: st
                            .process
                            .prompt_contracts
                            .as_ref()
                            .map(|p| p.verifier())
                            .unwrap_or_default(),
                        goal: st.req.goal.clone(),
                        phase_id: view.phase.id.clone(),
                        phase_description: view.phase.description.clone(),
                        attempt: view.attempt,
                        turn: 1,
                        observations: Vec::new(),
                        feedback: Vec::new(),
                        model_tier,
                    };
                    let (r, t) = judge_llm(st.env.model.as_ref(), &req);
                    tokens += t;
                    r
                }
            },
            Some(helper) => {
                let (r, n) = run_helper(st, view, c, &name, &helper, so_far);
                calls += n;
                r
            }
        };
        out.push(Check {
            kind: "semantic",
            name,
            blocking: blocking(c),
            result,
            score: None,
        });
    }
    (out, tokens, calls)
}

fn argv_of(args: Option<&Json>) -> Option<Vec<String>> {
    args?
        .get("command")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .filter(|v| !v.is_empty())
}

fn run_helper(
    st: &mut RunState<'_>,
    view: &AttemptView<'_>,
    c: &SemanticCheck,
    name: &str,
    helper: &str,
    so_far: &[Check],
) -> (JudgeResult, u64) {
    let evidence = vec![format!("helper:{helper}")];
    let Some(spec) = helpers::lookup(helper) else {
        return (
            JudgeResult::new(
                JudgeStatus::Error,
                vec![format!("verification helper {helper:?} is not registered")],
                evidence,
            ),
            0,
        );
    };
    if !BOUND.contains(&spec.name) {
        let why = format!(
            "helper {} ({}) is registered but not bound in this runner: no {} here",
            spec.name,
            spec.capabilities.join(", "),
            if spec.capabilities.contains(&"browser_runtime") {
                "browser runtime"
            } else {
                "service runtime"
            }
        );
        let status = if c.optional == Some(true) {
            JudgeStatus::Skipped
        } else {
            JudgeStatus::Error
        };
        return (JudgeResult::new(status, vec![why], evidence), 0);
    }
    let call_id = format!("semantic:{}#{}:{name}", view.phase.id, view.attempt);
    match spec.name {
        "run_test_suite" | "run_build_check" => {
            let Some(argv) = argv_of(c.args.as_ref()) else {
                return (
                    JudgeResult::new(
                        JudgeStatus::Error,
                        vec![format!(
                            "{} needs args.command (a list of argv tokens)",
                            spec.name
                        )],
                        evidence,
                    ),
                    0,
                );
            };
            let payload = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "terminal.run", "origin": "semantic", "helper": spec.name, "argv": argv});
            st.emit(EventType::ToolCallStarted, payload);
            let obs = st.exec.run_check_argv(&argv, None, None);
            st.run_budget.tool_calls += 1;
            st.emit(EventType::ToolCallFinished, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "terminal.run", "origin": "semantic", "ok": obs.ok}));
            st.emit(EventType::Observation, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}));
            let mut r = judge_command_output(&obs, &call_id, None, None);
            r.evidence.insert(0, format!("helper:{}", spec.name));
            (r, 1)
        }
        "render_verification_report" => {
            let path = c
                .args
                .as_ref()
                .and_then(|a| a.get("output_path"))
                .and_then(Json::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| {
                    format!(".loom/verification/{}-{}.md", view.phase.id, view.attempt)
                });
            let mut text = format!(
                "# Verification of phase {} (attempt {})\n\n",
                view.phase.id, view.attempt
            );
            for k in so_far {
                text.push_str(&format!(
                    "- {} {}: {}{}\n",
                    k.kind,
                    k.name,
                    k.result.status.as_str(),
                    if k.result.reasons.is_empty() {
                        String::new()
                    } else {
                        format!(" — {}", k.result.reasons.join("; "))
                    }
                ));
            }
            let action = ToolAction::FsWrite {
                id: call_id.clone(),
                path: path.clone(),
                content: text,
            };
            let payload = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "fs.write", "origin": "semantic", "helper": spec.name});
            st.emit(EventType::ToolCallStarted, payload.clone());
            let obs = st.exec.execute(&action);
            st.run_budget.tool_calls += 1;
            let mut fin = payload;
            fin["ok"] = json!(obs.ok);
            st.emit(EventType::ToolCallFinished, fin);
            st.emit(EventType::Observation, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}));
            let status = if obs.ok {
                JudgeStatus::Pass
            } else {
                JudgeStatus::Error
            };
            let reasons = if obs.ok {
                vec![]
            } else {
                vec![obs.summary.clone()]
            };
            (
                JudgeResult::new(
                    status,
                    reasons,
                    vec![format!("helper:{}", spec.name), format!("file:{path}")],
                ),
                1,
            )
        }
        _ => {
            // http_assert
            let url = c
                .args
                .as_ref()
                .and_then(|a| a.get("url"))
                .and_then(Json::as_str)
                .or(c.target.as_deref())
                .map(str::to_owned);
            let Some(url) = url else {
                return (
                    JudgeResult::new(
                        JudgeStatus::Error,
                        vec!["http_assert needs args.url (or target)".into()],
                        evidence,
                    ),
                    0,
                );
            };
            let action = ToolAction::BrowserFetch {
                id: call_id.clone(),
                url: url.clone(),
            };
            let payload = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "browser.fetch", "origin": "semantic", "helper": spec.name});
            st.emit(EventType::ToolCallStarted, payload.clone());
            let obs = st.exec.execute(&action);
            st.run_budget.tool_calls += 1;
            let mut fin = payload;
            fin["ok"] = json!(obs.ok);
            st.emit(EventType::ToolCallFinished, fin);
            st.emit(EventType::Observation, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}));
            let args = c.args.clone().unwrap_or(Json::Null);
            let want = args
                .get("expect_status")
                .and_then(Json::as_u64)
                .unwrap_or(200);
            let got = obs.raw.get("status").and_then(Json::as_u64);
            let body = obs.raw.get("body").and_then(Json::as_str).unwrap_or("");
            let mut reasons = Vec::new();
            if !obs.ok && got.is_none() {
                let status = if c.optional == Some(true) {
                    JudgeStatus::Skipped
                } else {
                    JudgeStatus::Error
                };
                return (
                    JudgeResult::new(status, vec![obs.summary.clone()], evidence),
                    1,
                );
            }
            if got != Some(want) {
                reasons.push(format!("{url} answered {got:?}, expected {want}"));
            }
            if let Some(needle) = args.get("contains").and_then(Json::as_str)
                && !body.contains(needle)
            {
                reasons.push(format!("{url} does not contain {needle:?}"));
            }
            let status = if reasons.is_empty() {
                JudgeStatus::Pass
            } else {
                JudgeStatus::Fail
            };
            (JudgeResult::new(status, reasons, evidence), 1)
        }
    }
}
