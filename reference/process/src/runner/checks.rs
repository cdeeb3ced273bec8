//! The checks after each attempt: deliverables by exact filename (guide "Phases"),
//! verification rules (guide "Verification rules") and iteration gates (guide "Phase
//! iteration loops", gate table). Each check is one `JudgeResult` event.
//!
//! Readings (README "Running"):
//! - A `regex` verification rule's `check` is a pattern that must NOT appear (every example
//!   in the guide is a forbidden pattern such as placeholders), unless the rule sets
//!   `min_count` (the guide's loader): then it must match at least that often (exactly, with
//!   `requires_exact_cardinality`). A failing rule blocks by `enforcement` (`hard` always,
//!   `advisory` never) or else by severity (`error` blocks, `warning` is recorded). A rule
//!   judges only the phases its `applies_to_phases` lists (`"*"` = all); without the list it
//!   judges every phase (the loader's default reading of `scope`). `output` is the text of
//!   the attempt's agent messages, `deliverables` the phase's deliverable files. A rule
//!   without `type` is an `llm` rule.
//! - `llm` rules go through the model ([`crate::engine::judge::judge_llm`]).
//! - `verification.policy.mode`: `static_first` evaluates regex rules before llm rules,
//!   `llm_first` the reverse; without a mode, declaration order.
//! - `artifact_regex` targets: `deliverables` (the phase's files), `changed_files` (files the
//!   attempt wrote), `summary` (the attempt's last agent message), `output` (all its agent
//!   messages), `auto` (deliverables when the phase declares any, otherwise output).
//! - `command_exit` runs its argv through the tool executor when enabled at runtime, else it
//!   is `skipped`. The task's command policy applies with the runner checks' allowlist (the
//!   guide's `command_exit` list plus `commandAllowlist`); the call counts against the
//!   tool-call budgets and is not run (`error`) when they are used up.
//! - `tool_metric` reads `metric_path` (dotted) from the named tool's structured output (the
//!   `ToolResult.data` the guide's loader reads): from the attempt's latest successful call of
//!   that tool (a `tool.call` of a bundled tool; a Loop Engine action type; a `terminal.run`
//!   whose program's file stem is the tool name, its `raw`, then its stdout as JSON). When the
//!   attempt did not call it and the package bundles the tool, the gate runs it for real
//!   (`tool.call` with `{}` args, `origin: gate`). A tool that is not bundled (a Loom built-in
//!   such as `humanize_writing`) gets its output from a [`crate::engine::tools::ToolOutputs`]
//!   provider (the script's `tools:` section). No metric fails the gate. `contains` /
//!   `not_contains` compare the value as text (JSON with sorted keys for lists and maps).
//! - `verifier_field` (advisory) compares a field of the verifier output the runner builds
//!   from this attempt's deliverable and rule checks (fields of the guide's output contract:
//!   `passed, outcome, reason_code, severity_class, confidence, feedback, issues, metadata`).

use super::RunState;
use crate::engine::action::{Observation, ToolAction};
use crate::engine::budget::Budget;
use crate::engine::event::EventType;
use crate::engine::judge::{
    JudgeResult, JudgeStatus, compare, judge_command_output, judge_llm, judge_regex,
    judge_regex_count,
};
use crate::engine::model::{ModelRequest, Purpose};
use crate::engine::tools::read_workspace_file;
use crate::package::{
    ArtifactTarget, Gate, GateKind, Operator, Phase, PolicyMode, RuleTarget, RuleType,
};
use serde_json::{Value as Json, json};

/// One check's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// `deliverable`, `rule` or `gate`.
    pub kind: &'static str,
    /// Deliverable filename, rule name or gate id.
    pub name: String,
    /// Whether failing it fails the attempt.
    pub blocking: bool,
    /// The verdict.
    pub result: JudgeResult,
    /// For score-like gates: the measured value.
    pub score: Option<f64>,
}

impl Check {
    /// Whether this check stops the attempt from passing.
    pub fn blocks(&self) -> bool {
        self.blocking && matches!(self.result.status, JudgeStatus::Fail | JudgeStatus::Error)
    }
}

/// What an attempt did, for the checks.
#[derive(Debug)]
pub struct AttemptView<'a> {
    /// The phase.
    pub phase: &'a Phase,
    /// 1-based attempt.
    pub attempt: u32,
    /// Agent messages, in order.
    pub messages: &'a [String],
    /// Files the attempt wrote (workspace-relative).
    pub changed: &'a [String],
    /// The attempt's tool calls and observations.
    pub calls: &'a [(ToolAction, Observation)],
}

fn deliverable_texts(st: &RunState<'_>, phase: &Phase) -> Vec<(String, String)> {
    phase
        .deliverable_filenames()
        .into_iter()
        .filter_map(|f| {
            read_workspace_file(st.exec.workspace(), f).map(|t| (format!("file:{f}"), t))
        })
        .collect()
}

fn output_text(view: &AttemptView<'_>) -> Vec<(String, String)> {
    vec![(
        format!("output:{}#{}", view.phase.id, view.attempt),
        view.messages.join("\n"),
    )]
}

/// Deliverables by exact filename (guide "Phases": "enforced by exact filename").
pub(crate) fn deliverables(st: &RunState<'_>, view: &AttemptView<'_>) -> Vec<Check> {
    view.phase
        .deliverable_filenames()
        .into_iter()
        .map(|f| {
            let exists = crate::engine::policy::resolve_in_workspace(st.exec.workspace(), f)
                .map(|p| p.is_file())
                .unwrap_or(false);
            let result = if exists {
                JudgeResult::new(JudgeStatus::Pass, vec![], vec![format!("file:{f}")])
            } else {
                JudgeResult::new(
                    JudgeStatus::Fail,
                    vec![format!(
                        "deliverable_missing: {f} not found (deliverables are enforced by exact filename, guide \"Phases\")"
                    )],
                    vec![format!("file:{f}")],
                )
            };
            Check { kind: "deliverable", name: f.to_owned(), blocking: true, result, score: None }
        })
        .collect()
}

fn judge_request(
    st: &RunState<'_>,
    view: &AttemptView<'_>,
    rule: &str,
    check: &str,
    subject: String,
) -> ModelRequest {
    let verifier = st
        .process
        .prompt_contracts
        .as_ref()
        .map(|p| p.verifier())
        .unwrap_or_default();
    ModelRequest {
        purpose: Purpose::Judge {
            rule: rule.to_owned(),
            check: check.to_owned(),
            subject,
        },
        system: verifier,
        goal: st.req.goal.clone(),
        phase_id: view.phase.id.clone(),
        phase_description: view.phase.description.clone(),
        attempt: view.attempt,
        turn: 1,
        observations: Vec::new(),
        feedback: Vec::new(),
        model_tier: u8::try_from(view.phase.model_tier().clamp(1, 3)).unwrap_or(2),
    }
}

/// Verification rules (guide "Verification rules"). Returns the checks and the tokens spent
/// on `llm` rules.
pub(crate) fn rules(st: &RunState<'_>, view: &AttemptView<'_>) -> (Vec<Check>, u64) {
    let Some(v) = &st.process.verification else {
        return (Vec::new(), 0);
    };
    let mut tokens = 0;
    let mut out = Vec::new();
    // `verification.policy.mode` (guide "Process contract v2"): static_first runs the regex
    // rules before the llm rules, llm_first the other way round; absent keeps declaration
    // order. The sort is stable.
    let mut ordered: Vec<&crate::package::VerificationRule> = v.rules.iter().collect();
    match v.policy.as_ref().and_then(|p| p.mode) {
        Some(PolicyMode::StaticFirst) => ordered.sort_by_key(|r| r.rule_type() != RuleType::Regex),
        Some(PolicyMode::LlmFirst) => ordered.sort_by_key(|r| r.rule_type() != RuleType::Llm),
        None => {}
    }
    for rule in ordered.into_iter().filter(|r| r.applies_to(&view.phase.id)) {
        let texts = match rule.target() {
            RuleTarget::Output => output_text(view),
            RuleTarget::Deliverables => deliverable_texts(st, view.phase),
        };
        let result = match rule.rule_type() {
            RuleType::Regex => match rule.min_count.and_then(|n| usize::try_from(n).ok()) {
                Some(min) => judge_regex_count(
                    &rule.check,
                    &texts,
                    min,
                    rule.requires_exact_cardinality == Some(true),
                ),
                None => judge_regex(&rule.check, &texts, false),
            },
            RuleType::Llm => {
                let subject = texts
                    .iter()
                    .map(|(l, t)| format!("--- {l}\n{t}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let req = judge_request(st, view, &rule.name, &rule.check, subject);
                let (r, t) = judge_llm(st.env.model.as_ref(), &req);
                tokens += t;
                r
            }
        };
        out.push(Check {
            kind: "rule",
            name: rule.name.clone(),
            blocking: rule.is_blocking(),
            result,
            score: None,
        });
    }
    (out, tokens)
}

/// The verifier output (guide "Process contract v2" output contract fields) built from the
/// deliverable and rule checks of an attempt.
pub fn verifier_output(checks: &[Check]) -> Json {
    let failing: Vec<&Check> = checks
        .iter()
        .filter(|c| matches!(c.result.status, JudgeStatus::Fail | JudgeStatus::Error))
        .collect();
    let passed = !failing.iter().any(|c| c.blocking);
    let severity = if failing.iter().any(|c| c.blocking) {
        "error"
    } else if failing.is_empty() {
        "none"
    } else {
        "warning"
    };
    let reason_code = match failing.iter().find(|c| c.blocking).or(failing.first()) {
        None => "ok".to_owned(),
        Some(c) if c.kind == "deliverable" => "deliverable_missing".to_owned(),
        Some(c) => format!("rule_failed:{}", c.name),
    };
    let issues: Vec<String> = failing
        .iter()
        .flat_map(|c| c.result.reasons.iter().cloned())
        .collect();
    json!({
        "passed": passed,
        "outcome": if passed { "pass" } else { "fail" },
        "reason_code": reason_code,
        "severity_class": severity,
        "confidence": 1.0,
        "feedback": issues.join("; "),
        "issues": issues,
        "metadata": { "checks": checks.len() },
    })
}

/// Looks up a dotted path in JSON.
pub fn lookup<'a>(v: &'a Json, path: &str) -> Option<&'a Json> {
    path.split('.').try_fold(v, |cur, key| match cur {
        Json::Object(m) => m.get(key),
        Json::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// The metric from the attempt's latest successful call of `tool` (else its latest call).
fn metric(view: &AttemptView<'_>, tool: &str, path: &str) -> Option<Json> {
    let calls = || {
        view.calls.iter().rev().filter(|(a, _)| {
            a.type_name() == tool
                || matches!(a, ToolAction::ToolCall { tool: t, .. } if t == tool)
                || matches!(a, ToolAction::TerminalRun { program, .. }
                if std::path::Path::new(program).file_stem().is_some_and(|s| s == tool))
        })
    };
    let (a, obs) = calls().find(|(_, o)| o.ok).or_else(|| calls().next())?;
    if matches!(a, ToolAction::ToolCall { .. }) {
        return obs.raw.get("data").and_then(|d| lookup(d, path)).cloned();
    }
    let from_raw = lookup(&obs.raw, path).cloned();
    from_raw.or_else(|| {
        let stdout = obs.raw.get("stdout")?.as_str()?;
        let parsed: Json = serde_json::from_str(stdout).ok()?;
        lookup(&parsed, path).cloned()
    })
}

/// The metric of a `tool_metric` gate: from the attempt's own calls of the tool; else, for a
/// bundled tool, from running it now (`origin: gate`); else from a [`ToolOutputs`] provider
/// (the call is recorded with `origin: gate`). Counts its tool call in `gate_calls`.
fn tool_metric(
    st: &mut RunState<'_>,
    view: &AttemptView<'_>,
    gate: &str,
    tool: &str,
    path: &str,
    gate_calls: &mut u64,
) -> Option<Json> {
    if let Some(m) = metric(view, tool, path) {
        return Some(m);
    }
    let call_id = format!("gate:{}#{}:{gate}", view.phase.id, view.attempt);
    let bundled = st.exec.bundled().is_some_and(|b| b.has(tool));
    if bundled {
        let call = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "tool.call", "tool": tool, "origin": "gate"});
        st.emit(EventType::ToolCallStarted, call.clone());
        let obs = st.exec.call_tool(tool, &json!({}));
        st.run_budget.tool_calls += 1;
        *gate_calls += 1;
        let mut fin = call;
        fin["ok"] = json!(obs.ok);
        st.emit(EventType::ToolCallFinished, fin);
        st.emit(
            EventType::Observation,
            json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}),
        );
        if !obs.ok {
            return None;
        }
        return obs.raw.get("data").and_then(|d| lookup(d, path)).cloned();
    }
    let data = st
        .env
        .tool_outputs
        .as_ref()
        .and_then(|p| p.output(tool, &view.phase.id, view.attempt))?;
    let call = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "tool", "tool": tool, "origin": "gate"});
    st.emit(EventType::ToolCallStarted, call.clone());
    let mut fin = call;
    fin["ok"] = json!(true);
    st.emit(EventType::ToolCallFinished, fin);
    let obs = Observation::ok(format!("{tool} output")).with_raw(data.clone());
    st.emit(
        EventType::Observation,
        json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}),
    );
    lookup(&data, path).cloned()
}

/// A value as the guide's loader compares text: strings as they are, scalars as written,
/// lists and mappings as JSON with sorted keys.
fn as_text(v: &Json) -> String {
    match v {
        Json::Null => String::new(),
        Json::String(s) => s.clone(),
        Json::Bool(_) | Json::Number(_) => v.to_string(),
        _ => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// A `tool_metric` / `verifier_field` comparison of `actual` with the gate's `expected` value.
pub(crate) fn compare_json(op: Operator, actual: &Json, expected: &Json) -> Result<bool, String> {
    match op {
        Operator::Contains => return Ok(as_text(actual).contains(&as_text(expected))),
        Operator::NotContains => return Ok(!as_text(actual).contains(&as_text(expected))),
        _ => {}
    }
    match (actual.as_f64(), expected.as_f64()) {
        (Some(a), Some(e)) => compare(op.as_str(), a, e),
        _ => match op {
            Operator::Eq => Ok(actual == expected),
            _ => Err(format!(
                "{} needs numbers, got {actual} and {expected}",
                op.as_str()
            )),
        },
    }
}

/// Evaluates the iteration gates (guide "Phase iteration loops"). `verifier` is the attempt's
/// verifier output (for `verifier_field`); `lp` is the phase's loop budget (its tool calls so
/// far). Command gates and gate-run bundled tools emit their tool-call events; returns the
/// checks and how many tool calls the gates made (the caller adds them to the loop budget).
pub(crate) fn gates(
    st: &mut RunState<'_>,
    view: &AttemptView<'_>,
    gates: &[Gate],
    verifier: &Json,
    lp: &Budget,
) -> (Vec<Check>, u64) {
    let mut gate_calls = 0u64;
    let mut out = Vec::new();
    for (i, gate) in gates.iter().enumerate() {
        let name = gate.id.clone().unwrap_or_else(|| format!("gate-{}", i + 1));
        let blocking = gate.is_blocking();
        let mut score = None;
        let result = match gate.kind() {
            None => JudgeResult::new(
                JudgeStatus::Error,
                vec![format!(
                    "gate {name} lacks its key fields or has a mistyped value (guide \"Phase iteration loops\")"
                )],
                vec![],
            ),
            Some(GateKind::ArtifactRegex {
                target,
                pattern,
                expect_match,
            }) => {
                let target = match target {
                    ArtifactTarget::Auto if view.phase.deliverables.is_empty() => {
                        ArtifactTarget::Output
                    }
                    ArtifactTarget::Auto => ArtifactTarget::Deliverables,
                    t => t,
                };
                let texts = match target {
                    ArtifactTarget::Deliverables => deliverable_texts(st, view.phase),
                    ArtifactTarget::ChangedFiles => view
                        .changed
                        .iter()
                        .filter_map(|f| {
                            read_workspace_file(st.exec.workspace(), f)
                                .map(|t| (format!("file:{f}"), t))
                        })
                        .collect(),
                    ArtifactTarget::Summary => vec![(
                        format!("summary:{}#{}", view.phase.id, view.attempt),
                        view.messages.last().cloned().unwrap_or_default(),
                    )],
                    ArtifactTarget::Output | ArtifactTarget::Auto => output_text(view),
                };
                judge_regex(pattern, &texts, expect_match)
            }
            Some(GateKind::CommandExit {
                argv,
                operator,
                value,
                timeout_seconds,
            }) => {
                let loop_fits = lp
                    .limits
                    .max_tool_calls
                    .is_none_or(|m| lp.tool_calls.saturating_add(gate_calls) < m);
                if !st.req.options.enable_command_exit_gates {
                    JudgeResult::new(
                        JudgeStatus::Skipped,
                        vec!["command_exit gates are disabled at runtime (execution.enable_iteration_command_exit_gate, guide \"Phase iteration loops\")".into()],
                        vec![],
                    )
                } else if !loop_fits || !st.run_budget.tool_calls_fit(1) {
                    JudgeResult::new(
                        JudgeStatus::Error,
                        vec![format!(
                            "gate command not run: the {} tool-call budget is used up",
                            if loop_fits { "run's" } else { "loop's" }
                        )],
                        vec![],
                    )
                } else {
                    let call_id = format!("gate:{}#{}:{name}", view.phase.id, view.attempt);
                    let payload = json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "terminal.run", "origin": "gate", "argv": argv});
                    st.emit(EventType::ToolCallStarted, payload);
                    let timeout = timeout_seconds
                        .and_then(|s| u64::try_from(s).ok())
                        .map(std::time::Duration::from_secs);
                    let obs = st.exec.run_check_argv(argv, None, timeout);
                    st.run_budget.tool_calls += 1;
                    gate_calls += 1;
                    st.emit(EventType::ToolCallFinished, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "type": "terminal.run", "origin": "gate", "ok": obs.ok}));
                    st.emit(EventType::Observation, json!({"phase": view.phase.id, "attempt": view.attempt, "toolCallId": call_id, "observation": obs}));
                    let base = judge_command_output(&obs, &call_id, None, None);
                    match obs.exit_code {
                        None => base,
                        Some(code) => {
                            // The same comparison as the other gates (the loader's
                            // `_compare`): `contains` reads the exit code as text.
                            match compare_json(operator, &json!(code), &json!(value)) {
                                Ok(true) => {
                                    JudgeResult::new(JudgeStatus::Pass, vec![], base.evidence)
                                }
                                Ok(false) => JudgeResult::new(
                                    JudgeStatus::Fail,
                                    vec![format!(
                                        "exit code {code} is not {} {value}",
                                        operator.as_str()
                                    )],
                                    base.evidence,
                                ),
                                Err(e) => {
                                    JudgeResult::new(JudgeStatus::Error, vec![e], base.evidence)
                                }
                            }
                        }
                    }
                }
            }
            Some(GateKind::ToolMetric {
                tool,
                metric_path,
                operator,
                value,
            }) => match tool_metric(st, view, &name, tool, metric_path, &mut gate_calls) {
                None => JudgeResult::new(
                    JudgeStatus::Fail,
                    vec![format!("no {metric_path} from tool {tool} in this attempt")],
                    vec![],
                ),
                Some(m) => {
                    if operator.is_ordering() {
                        score = m.as_f64();
                    }
                    match compare_json(operator, &m, value) {
                        Ok(true) => JudgeResult::new(
                            JudgeStatus::Pass,
                            vec![],
                            vec![format!("metric:{tool}.{metric_path}={m}")],
                        ),
                        Ok(false) => JudgeResult::new(
                            JudgeStatus::Fail,
                            vec![format!(
                                "{tool}.{metric_path} = {m}, needs {} {value}",
                                operator.as_str()
                            )],
                            vec![format!("metric:{tool}.{metric_path}={m}")],
                        ),
                        Err(e) => JudgeResult::new(JudgeStatus::Error, vec![e], vec![]),
                    }
                }
            },
            Some(GateKind::VerifierField {
                field,
                operator,
                value,
            }) => match lookup(verifier, field) {
                None => JudgeResult::new(
                    JudgeStatus::Fail,
                    vec![format!("verifier output has no field {field}")],
                    vec![],
                ),
                Some(actual) => match compare_json(operator, actual, value) {
                    Ok(true) => JudgeResult::new(
                        JudgeStatus::Pass,
                        vec![],
                        vec![format!("verifier:{field}")],
                    ),
                    Ok(false) => JudgeResult::new(
                        JudgeStatus::Fail,
                        vec![format!(
                            "verifier {field} = {actual}, needs {} {value}",
                            operator.as_str()
                        )],
                        vec![format!("verifier:{field}")],
                    ),
                    Err(e) => JudgeResult::new(JudgeStatus::Error, vec![e], vec![]),
                },
            },
        };
        out.push(Check {
            kind: "gate",
            name,
            blocking,
            result,
            score,
        });
    }
    (out, gate_calls)
}
