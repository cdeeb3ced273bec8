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
//! Besides the guide's loop (see also [`super::remediation`], [`super::semantic`],
//! [`super::validity`]):
//! - a phase without an iteration loop gets `verification.remediation.retry_budget
//!   .max_attempts` attempts (default 1);
//! - each retry asks for a model tier one above the previous attempt's (capped at 3), starting
//!   from the phase's `model_tier` (model-tier escalation on retry);
//! - a retry's feedback starts with the remediation instructions for its strategy;
//! - semantic checks and the claim validity check run after the rules; a synthesis phase
//!   first passes its synthesis input gate;
//! - when a loop is exhausted (`max_attempts`, `no_improvement`) and `replan_on_exhaustion`
//!   is not false, the process declares `replanning`, replans remain
//!   (`max_replans_after_exhaustion`, default 2, and the runner's global cap) and invocations
//!   remain (`max_total_runner_invocations` is a hard cap across replans), the planner is asked
//!   for a revised step: on acceptance the plan step is revised (`PlanUpdated`, version
//!   bumped), the instructions join the phase's prompt and a new loop window starts (fresh
//!   loop budget, attempt numbers go on);
//! - a critical-path phase under `critical_path_behavior: confirm_or_prune_then_queue` whose
//!   only blocking failure is claim validity has its unresolved claims pruned and is judged
//!   again (`passed_after_prune`);
//! - a completed phase's memory of the declared types is extracted (guide "Memory types").
//!
//! Stop reasons: `passed`, `passed_after_prune`, `max_attempts`,
//! `max_total_runner_invocations`, `no_improvement`, `remediation_none`,
//! `budget_iterations`, `budget_tool_calls`, `budget_wall_time`, `budget_tokens`,
//! `model_error`, `max_turns`, `write_conflict` (see [`super::output`]); `write_race` is set
//! by [`super::wave`] after the wave.

use super::checks::{self, AttemptView, Check};
use super::{
    PhaseOutcome, PhaseStatus, RunState, memory, output, prompt, remediation, replan, semantic,
    validity,
};
use crate::engine::action::{Observation, ToolAction};
use crate::engine::budget::{Budget, Limits};
use crate::engine::event::EventType;
use crate::engine::evidence::{EvidencePack, diff_id};
use crate::engine::judge::{JudgeResult, JudgeStatus};
use crate::engine::model::{ModelRequest, Purpose};
use crate::engine::plan::StepStatus;
use crate::package::{CriticalPathBehavior, IterationStrategy, Operator, Phase};
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

/// What the prompt of an attempt adds to the phase's own instructions.
struct PromptExtras<'a> {
    /// The synthesis input gate's verified context.
    context: &'a str,
    /// Instructions from accepted replans.
    replans: &'a [String],
}

fn run_turns(
    st: &mut RunState<'_>,
    ph: &Phase,
    attempt: u32,
    feedback: &[String],
    lp: &mut Budget,
    model_tier: u8,
    extras: &PromptExtras<'_>,
) -> Attempt {
    let mut out = Attempt {
        messages: Vec::new(),
        calls: Vec::new(),
        stop: None,
    };
    let fan_in = output::is_fan_in(st, ph).then(|| output::intermediate_dir(st, ph));
    let bundled = st.exec.bundled().map(|b| b.names()).unwrap_or_default();
    let mut system = prompt::system_prompt_with(st.process, ph, fan_in.as_deref(), &bundled);
    prompt::append(
        &mut system,
        "Verified context (from earlier phases)",
        extras.context,
    );
    prompt::append(
        &mut system,
        "Replanned after an exhausted loop",
        &extras.replans.join("\n"),
    );
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
            model_tier,
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

/// Files written by the attempt's successful fs actions and bundled tools (their
/// `files_changed`), in first-write order.
fn changed_files(calls: &[(ToolAction, Observation)]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |p: &str| {
        if !out.iter().any(|x| x == p) {
            out.push(p.to_owned());
        }
    };
    for (a, o) in calls {
        if !o.ok {
            continue;
        }
        match a {
            ToolAction::FsWrite { .. } | ToolAction::FsApplyPatch { .. } => {
                if let Some(p) = o.artifacts.get("path").and_then(|v| v.as_str()) {
                    add(p);
                }
            }
            ToolAction::ToolCall { .. } => {
                for p in o
                    .raw
                    .get("filesChanged")
                    .and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str())
                {
                    add(p);
                }
            }
            _ => {}
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
        (Some(b), Some(Operator::Lte)) => score < b,
        (Some(b), _) => score > b,
    }
}

/// The text the phase produced for content checks: its deliverable files, else its agent
/// messages.
fn produced_text(st: &RunState<'_>, ph: &Phase, messages: &[String]) -> String {
    let files: Vec<String> = ph
        .deliverable_filenames()
        .into_iter()
        .filter_map(|f| {
            crate::engine::tools::read_workspace_file(st.exec.workspace(), f)
                .map(|t| format!("{t}\n"))
        })
        .collect();
    if files.is_empty() {
        messages.join("\n")
    } else {
        files.concat()
    }
}

/// The model tier of `attempt` (1-based): the phase's tier, one higher per retry when
/// escalation is on, capped at 3.
fn tier_for(st: &RunState<'_>, ph: &Phase, attempt: u32) -> u8 {
    let base = ph.model_tier().clamp(1, 3);
    let raised = if st.req.options.escalate_model_tier_on_retry {
        base.saturating_add(i64::from(attempt.saturating_sub(1)))
    } else {
        base
    };
    u8::try_from(raised.min(3)).unwrap_or(3)
}

/// What the attempt loop left: the final status and stop reason, the last attempt's
/// blocking failures, and the last claim ledger.
struct LoopEnd {
    status: PhaseStatus,
    stop: String,
    attempts: u32,
    failed: Vec<Check>,
    ledger: Option<validity::Ledger>,
}

/// Runs one phase to its outcome.
pub(crate) fn run_phase(st: &mut RunState<'_>, ph: &Phase, wave: usize) -> PhaseOutcome {
    st.phase_state(&ph.id, "pending", "running", json!({"wave": wave}));
    st.plan_status(&ph.id, StepStatus::InProgress);
    let mut context = String::new();
    if let Some((text, check)) = validity::synthesis_input(st, ph) {
        emit_check(st, ph, 1, &check);
        context = text;
    }
    let mut end = attempt_loop(st, ph, &context);
    if end.status == PhaseStatus::Failed && ph.is_critical_path {
        confirm_or_prune(st, ph, &mut end);
    }
    if let Some(ledger) = end.ledger.take() {
        st.validity.insert(ph.id.clone(), ledger);
    }
    if end.status == PhaseStatus::Completed {
        memory::extract(st, ph, end.attempts);
    }
    st.phase_state(
        &ph.id,
        "running",
        end.status.as_str(),
        json!({"attempts": end.attempts, "stopReason": end.stop}),
    );
    st.plan_status(
        &ph.id,
        if end.status == PhaseStatus::Completed {
            StepStatus::Done
        } else {
            StepStatus::Failed
        },
    );
    let hard = end
        .failed
        .iter()
        .any(|c| remediation::is_hard(st.process, c))
        || matches!(
            end.stop.as_str(),
            "model_error" | "write_conflict" | "max_turns"
        )
        || end.stop.starts_with("budget_")
        || st.halt.is_some();
    PhaseOutcome {
        status: end.status,
        attempts: end.attempts,
        stop_reason: end.stop,
        follow_up: false,
        hard_failure: end.status == PhaseStatus::Failed && hard,
        failures: end
            .failed
            .iter()
            .flat_map(|c| {
                c.result
                    .reasons
                    .iter()
                    .map(move |r| format!("{} {}: {r}", c.kind, c.name))
            })
            .collect(),
    }
}

/// `critical_path_behavior: confirm_or_prune_then_queue`: when claim validity is the only
/// blocking failure, prune the unresolved claims and judge the thresholds again.
fn confirm_or_prune(st: &mut RunState<'_>, ph: &Phase, end: &mut LoopEnd) {
    let behavior = st
        .process
        .verification
        .as_ref()
        .and_then(|v| v.remediation.as_ref())
        .map(|r| r.critical_path_behavior())
        .unwrap_or(CriticalPathBehavior::Block);
    if behavior != CriticalPathBehavior::ConfirmOrPruneThenQueue
        || end.failed.is_empty()
        || end.failed.iter().any(|c| c.kind != "validity")
    {
        return;
    }
    let Some(ledger) = end.ledger.as_mut() else {
        return;
    };
    let Some(v) = validity::active(st.process, ph) else {
        return;
    };
    let pruned = validity::prune(&mut ledger.claims);
    let left = validity::recheck(ledger, &v);
    let status = if left.is_empty() {
        JudgeStatus::Pass
    } else {
        JudgeStatus::Fail
    };
    let mut reasons = vec![format!(
        "confirm_or_prune: pruned {pruned} insufficient_evidence claims"
    )];
    reasons.extend(left.iter().cloned());
    let check = Check {
        kind: "validity",
        name: "confirm_or_prune".into(),
        blocking: true,
        result: JudgeResult::new(status, reasons, vec![]),
        score: None,
    };
    emit_check(st, ph, end.attempts, &check);
    ledger.passed = left.is_empty();
    if left.is_empty() {
        end.status = PhaseStatus::Completed;
        end.stop = "passed_after_prune".into();
        end.failed.clear();
    }
}

/// The attempt loop, with replans after exhaustion (see the module docs).
fn attempt_loop(st: &mut RunState<'_>, ph: &Phase, context: &str) -> LoopEnd {
    let iteration = ph
        .iteration
        .as_ref()
        .filter(|_| ph.iterates() && st.req.options.enable_iteration_loops);
    let window_cap = match iteration {
        Some(i) => to_u64(i.max_attempts)
            .unwrap_or(1)
            .clamp(1, u64::from(u32::MAX)) as u32,
        None => remediation::retry_attempts(st.process),
    };
    let invocations_cap =
        to_u64(iteration.and_then(|i| i.max_total_runner_invocations)).unwrap_or(u64::MAX);
    let budget = iteration
        .and_then(|i| i.iteration_budget.clone())
        .unwrap_or_default();
    let loop_limits = Limits {
        max_iterations: None,
        max_tool_calls: to_u64(budget.max_tool_calls),
        max_wall_time_ms: to_u64(budget.max_wall_clock_seconds).map(|s| s.saturating_mul(1000)),
        max_tokens: to_u64(budget.max_tokens),
    };
    let full_rerun = iteration.and_then(|i| i.strategy) == Some(IterationStrategy::FullRerun)
        && (window_cap > 1 || can_replan(st, ph, iteration, 0, 0, invocations_cap));
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
    let mut retry_note: Option<(String, Option<String>)> = None;
    let mut replan_notes: Vec<String> = Vec::new();
    let mut replans = 0u32;
    let mut attempt = 0u32;
    let mut failed: Vec<Check> = Vec::new();
    let mut ledger: Option<validity::Ledger> = None;
    loop {
        let mut lp = Budget::new(loop_limits, st.env.clock.now_ms());
        let mut best: Vec<Option<f64>> = vec![None; gates.len()];
        let mut stale = 0u64;
        let mut stop = String::new();
        for k in 1..=window_cap {
            if u64::from(attempt) >= invocations_cap {
                stop = "max_total_runner_invocations".into();
                break;
            }
            attempt += 1;
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
            let tier = tier_for(st, ph, attempt);
            let mut running = json!({"scope": "attempt", "phase": ph.id, "attempt": attempt, "from": "pending", "to": "running", "modelTier": tier});
            if let Some((strategy, instructions)) = &retry_note {
                running["remediation"] =
                    json!({"strategy": strategy, "instructions": instructions});
            }
            st.emit(EventType::StateChanged, running);
            let mut turn_feedback = Vec::new();
            if let Some((strategy, Some(text))) = &retry_note {
                turn_feedback.push(format!("Remediation ({strategy}): {text}"));
            }
            turn_feedback.extend(feedback.iter().cloned());
            let extras = PromptExtras {
                context,
                replans: &replan_notes,
            };
            let turns = run_turns(st, ph, attempt, &turn_feedback, &mut lp, tier, &extras);
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
            all.extend(rule_checks);
            let subject = produced_text(st, ph, &turns.messages);
            let (sem, sem_tokens, sem_calls) = semantic::run(st, &view, &all, &subject, tier);
            all.extend(sem);
            let mut spent = rule_tokens.saturating_add(sem_tokens);
            if let Some((check, l, t)) = validity::check_attempt(st, ph, attempt, tier, &subject) {
                all.push(check);
                ledger = Some(l);
                spent = spent.saturating_add(t);
            }
            for b in [&mut lp, &mut st.run_budget] {
                b.tokens = b.tokens.saturating_add(spent);
            }
            let verifier = checks::verifier_output(&all);
            let (gate_checks, gate_calls) = checks::gates(st, &view, &gates, &verifier, &lp);
            lp.tool_calls += gate_calls + sem_calls;
            all.extend(gate_checks);
            for c in &all {
                emit_check(st, ph, attempt, c);
            }
            let passed = !matches!(
                turns.stop.as_deref(),
                Some("model_error" | "write_conflict")
            ) && !all.iter().any(Check::blocks);
            record_evidence(st, ph, attempt, &turns, &changed, &all, &lp);
            st.emit(EventType::StateChanged, json!({"scope": "attempt", "phase": ph.id, "attempt": attempt, "from": "running", "to": if passed { "passed" } else { "failed" }}));
            if passed {
                return LoopEnd {
                    status: PhaseStatus::Completed,
                    stop: "passed".into(),
                    attempts: attempt,
                    failed: Vec::new(),
                    ledger,
                };
            }
            failed = all.iter().filter(|c| c.blocks()).cloned().collect();
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
            let failing: Vec<&Check> = failed.iter().collect();
            let strategy = remediation::strategy(st.process, ph, &failing);
            let reason = verifier["reason_code"].as_str().unwrap_or_default();
            let text = remediation::instructions(st.process, reason, &strategy);
            retry_note = Some((strategy, text));
            if let Some(s) = turns.stop {
                return LoopEnd {
                    status: PhaseStatus::Failed,
                    stop: s,
                    attempts: attempt,
                    failed,
                    ledger,
                };
            }
            if remediation::nothing_to_retry(st.process, &failing) {
                stop = "remediation_none".into();
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
            if k == window_cap {
                stop = if u64::from(attempt) >= invocations_cap && window_cap > 1 {
                    "max_total_runner_invocations".into()
                } else {
                    "max_attempts".into()
                };
            }
        }
        let exhausted_loop = matches!(stop.as_str(), "max_attempts" | "no_improvement");
        if exhausted_loop
            && can_replan(st, ph, iteration, replans, attempt, invocations_cap)
            && replan::ask(st, ph, replans + 1, &feedback, &mut replan_notes)
        {
            replans += 1;
            continue;
        }
        return LoopEnd {
            status: PhaseStatus::Failed,
            stop,
            attempts: attempt,
            failed,
            ledger,
        };
    }
}

/// Whether an exhausted loop may be replanned (see the module docs).
fn can_replan(
    st: &RunState<'_>,
    ph: &Phase,
    iteration: Option<&crate::package::Iteration>,
    done: u32,
    attempts: u32,
    invocations_cap: u64,
) -> bool {
    let Some(it) = iteration else {
        return false;
    };
    let per_loop = it
        .max_replans_after_exhaustion
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(2);
    it.replan_on_exhaustion != Some(false)
        && st.process.replanning.is_some()
        && st.env.planner.is_some()
        && done < per_loop.min(st.req.options.max_iteration_replans_after_exhaustion)
        && u64::from(attempts) < invocations_cap
        && !ph.id.is_empty()
}

/// The attempt's evidence pack (loop-engine "Evidence Pack") as a `TaskUpdated` event.
fn record_evidence(
    st: &mut RunState<'_>,
    ph: &Phase,
    attempt: u32,
    turns: &Attempt,
    changed: &[String],
    all: &[Check],
    lp: &Budget,
) {
    let mut tool_calls: Vec<String> = turns.calls.iter().map(|(a, _)| a.id().to_owned()).collect();
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
}
