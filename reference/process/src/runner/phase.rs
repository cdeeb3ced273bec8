//! One phase (guide "Phases") and its iteration loop (guide "Phase iteration loops"):
//!
//! 1. Execute the phase: model turns, each proposing tool actions that run under the task's
//!    risk policy, until the model is done, `max_turns` is hit, or a budget runs out.
//! 2. Evaluate: deliverables by exact filename, verification rules, and — when iteration is
//!    enabled — the gates.
//! 3. Retry when a blocking check failed and limits remain: attempts are capped by
//!    `min(max_attempts, max_total_runner_invocations)`; `iteration_budget` caps wall clock
//!    (injected clock), tokens and tool calls across the loop; score-like gates that do not
//!    improve for `stop_on_no_improvement_attempts` attempts stop it. With `strategy:
//!    full_rerun` the workspace is restored to its state at phase start before each retry;
//!    fan-in intermediates under `.loom/` are cleared too (checkpoints exclude `.loom/`);
//!    with `targeted_remediation` it is kept and the failing checks' reasons are passed to
//!    the model as feedback (both strategies get the feedback).
//! 4. Exit when all blocking checks pass, or limits/budgets are exhausted.
//!
//! A proposed action whose type is listed in `tools.excluded` (guide "Tool guidance") is
//! refused with an observation.
//!
//! `replan_on_exhaustion`/`max_replans_after_exhaustion` need a planner; this runner has
//! none, so an exhausted loop ends the phase as failed (README "Running").
//!
//! Stop reasons: `passed`, `max_attempts`, `max_total_runner_invocations`, `no_improvement`,
//! `budget_iterations`, `budget_tool_calls`, `budget_wall_time`, `budget_tokens`,
//! `model_error`, `max_turns`, `write_conflict` (see [`super::output`]); `write_race` is set
//! by [`super::wave`] after the wave.

use super::checks::{self, AttemptView, Check};
use super::{PhaseOutcome, PhaseStatus, RunState, output, prompt};
use crate::engine::action::{Observation, ToolAction};
use crate::engine::budget::{Budget, Limits};
use crate::engine::event::EventType;
use crate::engine::evidence::{EvidencePack, diff_id};
use crate::engine::judge::{JudgeResult, JudgeStatus};
use crate::engine::model::{ModelRequest, Purpose};
use crate::engine::plan::StepStatus;
use crate::package::{IterationStrategy, Operator, Phase};
use serde_json::json;

/// What one attempt's turns produced.
struct Attempt {
    messages: Vec<String>,
    calls: Vec<(ToolAction, Observation)>,
    /// Set when the turns stopped for a reason that also ends the loop.
    stop: Option<String>,
}

fn to_u64(v: Option<i64>) -> Option<u64> {
    v.and_then(|x| u64::try_from(x).ok())
}

/// The first exhausted budget: the run's (which also halts the run) or the loop's.
fn exhausted(st: &mut RunState<'_>, lp: &Budget) -> Option<String> {
    let now = st.env.clock.now_ms();
    if let Some(x) = st.run_budget.exhausted(now) {
        let why = format!("run {}", x.as_str());
        st.halt.get_or_insert(why);
        return Some(x.as_str().to_owned());
    }
    lp.exhausted(now).map(|x| x.as_str().to_owned())
}

fn run_turns(
    st: &mut RunState<'_>,
    ph: &Phase,
    attempt: u32,
    feedback: &[String],
    lp: &mut Budget,
) -> Attempt {
    let mut out = Attempt {
        messages: Vec::new(),
        calls: Vec::new(),
        stop: None,
    };
    let fan_in = output::is_fan_in(st, ph).then(|| output::intermediate_dir(st, ph));
    let system = prompt::system_prompt(st.process, ph, fan_in.as_deref());
    let max_turns = st.req.options.max_turns_per_attempt.max(1);
    for turn in 1..=max_turns {
        if let Some(x) = exhausted(st, lp) {
            out.stop = Some(x);
            return out;
        }
        let req = ModelRequest {
            purpose: Purpose::Act,
            system: system.clone(),
            goal: st.req.goal.clone(),
            phase_id: ph.id.clone(),
            phase_description: ph.description.clone(),
            attempt,
            turn,
            observations: out.calls.iter().map(|(_, o)| o.clone()).collect(),
            feedback: feedback.to_vec(),
        };
        let reply = match st.env.model.reply(&req) {
            Ok(r) => r,
            Err(e) => {
                st.emit(
                    EventType::Error,
                    json!({"phase": ph.id, "attempt": attempt, "turn": turn, "code": "model_error", "message": e.0}),
                );
                out.stop = Some("model_error".into());
                return out;
            }
        };
        let t = reply.tokens.total();
        for b in [&mut *lp, &mut st.run_budget] {
            b.tokens = b.tokens.saturating_add(t);
            b.iterations += 1;
        }
        st.emit(
            EventType::AgentMessage,
            json!({"phase": ph.id, "attempt": attempt, "turn": turn, "message": reply.message, "tokens": reply.tokens}),
        );
        out.messages.push(reply.message.clone());
        for action in &reply.actions {
            st.emit(
                EventType::AgentActionProposed,
                json!({"phase": ph.id, "attempt": attempt, "turn": turn, "action": action.to_json()}),
            );
            if !lp.tool_calls_fit(1) || !st.run_budget.tool_calls_fit(1) {
                let run_wide = !st.run_budget.tool_calls_fit(1);
                if run_wide {
                    st.halt.get_or_insert("run budget_tool_calls".into());
                }
                st.emit(
                    EventType::Error,
                    json!({"phase": ph.id, "attempt": attempt, "turn": turn, "code": "budget_tool_calls",
                           "message": format!("tool call {} not run: the {} tool-call budget is used up", action.id(), if run_wide { "run's" } else { "loop's" })}),
                );
                out.stop = Some("budget_tool_calls".into());
                return out;
            }
            let call = json!({"phase": ph.id, "attempt": attempt, "toolCallId": action.id(), "type": action.type_name()});
            st.emit(EventType::ToolCallStarted, call.clone());
            let conflict = output::check_write(st, ph, action);
            let excluded = st
                .process
                .tools
                .as_ref()
                .is_some_and(|t| t.excluded.iter().any(|x| x == action.type_name()));
            let obs = match &conflict {
                Some(c) => Observation::fail(c.reason.clone()),
                None if excluded => Observation::fail(format!(
                    "tools.excluded: this process does not use {} (guide \"Tool guidance\")",
                    action.type_name()
                )),
                None => st.exec.execute(action),
            };
            lp.tool_calls += 1;
            st.run_budget.tool_calls += 1;
            let mut fin = call.clone();
            fin["ok"] = json!(obs.ok);
            st.emit(EventType::ToolCallFinished, fin);
            st.emit(
                EventType::Observation,
                json!({"phase": ph.id, "attempt": attempt, "toolCallId": action.id(), "observation": obs}),
            );
            out.calls.push((action.clone(), obs));
            if conflict.is_some_and(|c| c.fail_fast) {
                out.stop = Some("write_conflict".into());
                return out;
            }
        }
        if reply.done || reply.actions.is_empty() {
            return out;
        }
        if turn == max_turns {
            st.emit(
                EventType::Error,
                json!({"phase": ph.id, "attempt": attempt, "turn": turn, "code": "max_turns",
                       "message": format!("attempt cut off after {max_turns} model turns")}),
            );
            out.stop = Some("max_turns".into());
        }
    }
    out
}

/// Files written by the attempt's successful fs actions, in first-write order.
fn changed_files(calls: &[(ToolAction, Observation)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (a, o) in calls {
        if o.ok
            && matches!(
                a,
                ToolAction::FsWrite { .. } | ToolAction::FsApplyPatch { .. }
            )
            && let Some(p) = o.artifacts.get("path").and_then(|v| v.as_str())
            && !out.iter().any(|x| x == p)
        {
            out.push(p.to_owned());
        }
    }
    out
}

fn emit_check(st: &mut RunState<'_>, ph: &Phase, attempt: u32, c: &Check) {
    st.emit(
        EventType::JudgeResult,
        json!({
            "phase": ph.id, "attempt": attempt, "kind": c.kind, "name": c.name,
            "blocking": c.blocking, "status": c.result.status.as_str(),
            "reasons": c.result.reasons, "evidence": c.result.evidence,
        }),
    );
}

/// Runs a runner-initiated tool action (checkpoints for `full_rerun`) with its events.
fn runner_call(st: &mut RunState<'_>, ph: &Phase, attempt: u32, action: ToolAction) -> Observation {
    let call = json!({"phase": ph.id, "attempt": attempt, "toolCallId": action.id(), "type": action.type_name(), "origin": "runner"});
    st.emit(EventType::ToolCallStarted, call.clone());
    let obs = st.exec.execute(&action);
    let mut fin = call;
    fin["ok"] = json!(obs.ok);
    st.emit(EventType::ToolCallFinished, fin);
    st.emit(
        EventType::Observation,
        json!({"phase": ph.id, "attempt": attempt, "toolCallId": action.id(), "observation": obs}),
    );
    obs
}

/// Whether a score improved on the best so far, given the gate's direction.
fn improved(op: Option<Operator>, score: f64, best: Option<f64>) -> bool {
    match (best, op) {
        (None, _) => true,
        (Some(b), Some(Operator::Lt | Operator::Lte)) => score < b,
        (Some(b), _) => score > b,
    }
}

/// Runs one phase to its outcome.
pub(crate) fn run_phase(st: &mut RunState<'_>, ph: &Phase, wave: usize) -> PhaseOutcome {
    st.phase_state(&ph.id, "pending", "running", json!({"wave": wave}));
    st.plan_status(&ph.id, StepStatus::InProgress);
    let iteration = ph
        .iteration
        .as_ref()
        .filter(|_| ph.iterates() && st.req.options.enable_iteration_loops);
    let attempts_cap = to_u64(iteration.and_then(|i| i.max_attempts))
        .unwrap_or(1)
        .max(1);
    let invocations_cap =
        to_u64(iteration.and_then(|i| i.max_total_runner_invocations)).unwrap_or(u64::MAX);
    let max_attempts = attempts_cap.min(invocations_cap).min(u64::from(u32::MAX)) as u32;
    let budget = iteration
        .and_then(|i| i.iteration_budget.clone())
        .unwrap_or_default();
    let mut lp = Budget::new(
        Limits {
            max_iterations: None,
            max_tool_calls: to_u64(budget.max_tool_calls),
            max_wall_time_ms: to_u64(budget.max_wall_clock_seconds).map(|s| s.saturating_mul(1000)),
            max_tokens: to_u64(budget.max_tokens),
        },
        st.env.clock.now_ms(),
    );
    let full_rerun = iteration.and_then(|i| i.strategy) == Some(IterationStrategy::FullRerun)
        && max_attempts > 1;
    let no_improvement_limit =
        to_u64(iteration.and_then(|i| i.stop_on_no_improvement_attempts)).unwrap_or(0);
    let gates = iteration.map(|i| i.gates.clone()).unwrap_or_default();
    let mut baseline = None;
    if full_rerun {
        let obs = runner_call(
            st,
            ph,
            1,
            ToolAction::CheckpointCreate {
                id: format!("runner:{}:baseline", ph.id),
                label: Some(format!("{} baseline", ph.id)),
            },
        );
        baseline = obs
            .artifacts
            .get("checkpointId")
            .and_then(|v| v.as_str())
            .map(str::to_owned);
    }

    let mut feedback: Vec<String> = Vec::new();
    let mut best: Vec<Option<f64>> = vec![None; gates.len()];
    let mut stale = 0u64;
    let mut status = PhaseStatus::Failed;
    let mut stop = String::new();
    let mut attempts = 0;
    for attempt in 1..=max_attempts {
        attempts = attempt;
        if attempt > 1
            && let Some(cp) = &baseline
        {
            runner_call(
                st,
                ph,
                attempt,
                ToolAction::CheckpointRestore {
                    id: format!("runner:{}:restore-{attempt}", ph.id),
                    checkpoint_id: cp.clone(),
                },
            );
            // Checkpoints leave `.loom/` alone, so the fan-in intermediates of the failed
            // attempt are cleared here: a stale one must never be published.
            if output::is_fan_in(st, ph) {
                let dir = output::intermediate_dir(st, ph);
                if let Err(e) = st.exec.clear_dir(&dir) {
                    st.emit(
                        EventType::Error,
                        json!({"phase": ph.id, "attempt": attempt, "code": "reset_failed",
                               "message": format!("full_rerun: cannot clear {dir}: {e}")}),
                    );
                }
            }
        }
        st.emit(EventType::StateChanged, json!({"scope": "attempt", "phase": ph.id, "attempt": attempt, "from": "pending", "to": "running"}));
        let turns = run_turns(st, ph, attempt, &feedback, &mut lp);
        let changed = changed_files(&turns.calls);
        let view = AttemptView {
            phase: ph,
            attempt,
            messages: &turns.messages,
            changed: &changed,
            calls: &turns.calls,
        };
        let mut all: Vec<Check> = Vec::new();
        if output::is_fan_in(st, ph) && turns.stop.as_deref() != Some("write_conflict") {
            let reasons = output::finalize(st, ph, attempt);
            let status = if reasons.is_empty() {
                JudgeStatus::Pass
            } else {
                JudgeStatus::Fail
            };
            all.push(Check {
                kind: "finalizer",
                name: output::finalizer_id(&ph.id),
                blocking: true,
                result: JudgeResult::new(status, reasons, vec![]),
                score: None,
            });
        }
        all.extend(checks::deliverables(st, &view));
        let (rule_checks, rule_tokens) = checks::rules(st, &view);
        for b in [&mut lp, &mut st.run_budget] {
            b.tokens = b.tokens.saturating_add(rule_tokens);
        }
        all.extend(rule_checks);
        let verifier = checks::verifier_output(&all);
        let gate_checks = checks::gates(st, &view, &gates, &verifier, &lp);
        lp.tool_calls += gate_checks
            .iter()
            .filter(|c| {
                c.result
                    .evidence
                    .iter()
                    .any(|e| e.starts_with("events:gate:"))
            })
            .count() as u64;
        all.extend(gate_checks);
        for c in &all {
            emit_check(st, ph, attempt, c);
        }
        let passed = !matches!(
            turns.stop.as_deref(),
            Some("model_error" | "write_conflict")
        ) && !all.iter().any(Check::blocks);

        let mut tool_calls: Vec<String> =
            turns.calls.iter().map(|(a, _)| a.id().to_owned()).collect();
        tool_calls.extend(
            all.iter()
                .flat_map(|c| c.result.evidence.iter())
                .filter_map(|e| e.strip_prefix("events:").map(str::to_owned)),
        );
        let mut errors: Vec<String> = turns
            .calls
            .iter()
            .filter(|(_, o)| !o.ok)
            .map(|(a, o)| format!("{}: {}", a.id(), o.summary))
            .collect();
        errors.extend(all.iter().filter(|c| c.blocks()).flat_map(|c| {
            c.result
                .reasons
                .iter()
                .map(move |r| format!("{} {}: {r}", c.kind, c.name))
        }));
        if let Some(s) = &turns.stop {
            errors.push(format!("stopped: {s}"));
        }
        let files: Vec<(String, Vec<u8>)> = changed
            .iter()
            .map(|f| {
                (
                    f.clone(),
                    crate::engine::tools::read_workspace_bytes(st.exec.workspace(), f)
                        .unwrap_or_default(),
                )
            })
            .collect();
        let pack = EvidencePack {
            iteration: attempt,
            step_id: ph.id.clone(),
            tool_calls,
            diff: diff_id(&files),
            errors,
            summary: format!(
                "attempt {attempt}: {} model turns, {} tool calls, files written: {}; {}/{} checks passed",
                turns.messages.len(),
                turns.calls.len(),
                if changed.is_empty() {
                    "none".to_owned()
                } else {
                    changed.join(", ")
                },
                all.iter()
                    .filter(|c| c.result.status == JudgeStatus::Pass)
                    .count(),
                all.len()
            ),
        };
        let now = st.env.clock.now_ms();
        st.emit(
            EventType::TaskUpdated,
            json!({"phase": ph.id, "attempt": attempt, "evidence": pack,
                   "usage": {"loopToolCalls": lp.tool_calls, "loopTokens": lp.tokens, "loopWallTimeMs": lp.elapsed_ms(now),
                             "runToolCalls": st.run_budget.tool_calls, "runTokens": st.run_budget.tokens}}),
        );
        st.evidence.push(pack);
        st.emit(EventType::StateChanged, json!({"scope": "attempt", "phase": ph.id, "attempt": attempt, "from": "running", "to": if passed { "passed" } else { "failed" }}));
        if passed {
            status = PhaseStatus::Completed;
            stop = "passed".into();
            break;
        }
        feedback = all
            .iter()
            .filter(|c| {
                c.result.status != JudgeStatus::Pass && c.result.status != JudgeStatus::Skipped
            })
            .flat_map(|c| {
                c.result
                    .reasons
                    .iter()
                    .map(move |r| format!("{} {}: {r}", c.kind, c.name))
            })
            .collect();
        if let Some(s) = turns.stop {
            stop = s;
            break;
        }
        if st.halt.is_some() {
            stop = st.halt.clone().unwrap_or_default();
            break;
        }
        if let Some(x) = exhausted(st, &lp) {
            stop = x;
            break;
        }
        if no_improvement_limit > 0 {
            let mut any_score = false;
            let mut better = false;
            for (i, g) in gates.iter().enumerate() {
                let Some(c) = all.iter().find(|c| {
                    c.kind == "gate"
                        && c.name == g.id.clone().unwrap_or_else(|| format!("gate-{}", i + 1))
                }) else {
                    continue;
                };
                if let Some(s) = c.score {
                    any_score = true;
                    if improved(g.operator, s, best[i]) {
                        better = true;
                        best[i] = Some(s);
                    }
                }
            }
            if any_score {
                stale = if better { 0 } else { stale + 1 };
                if stale >= no_improvement_limit {
                    stop = "no_improvement".into();
                    break;
                }
            }
        }
        if attempt == max_attempts {
            stop = if u64::from(max_attempts) < attempts_cap {
                "max_total_runner_invocations".into()
            } else {
                "max_attempts".into()
            };
        }
    }
    st.phase_state(
        &ph.id,
        "running",
        status.as_str(),
        json!({"attempts": attempts, "stopReason": stop}),
    );
    st.plan_status(
        &ph.id,
        if status == PhaseStatus::Completed {
            StepStatus::Done
        } else {
            StepStatus::Failed
        },
    );
    PhaseOutcome {
        status,
        attempts,
        stop_reason: stop,
    }
}
