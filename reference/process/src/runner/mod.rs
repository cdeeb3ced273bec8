//! The process runner: runs a validated process definition (guide "process.yaml reference")
//! on the Loop Engine runtime ([`crate::engine`]) and records every step as loop-engine
//! "Event Schema" events.
//!
//! - [`schedule`]: the phase DAG in waves (guide "Phases").
//! - [`wave`]: the phases of a wave run concurrently, each in its own context, and are
//!   merged in phase-id order afterwards, so the event stream is deterministic.
//! - [`phase`]: one phase — model turns proposing tool actions executed under the policy,
//!   deliverable, verification-rule and gate checks, and the iteration loop (guide "Phase
//!   iteration loops").
//! - [`checks`]: deliverables (guide "Phases"), verification rules (guide "Verification
//!   rules") and gates (guide "Phase iteration loops", gate table).
//! - [`output`]: output coordination — single-writer deliverables and the fan-in finalizer
//!   (guide "Output coordination").
//! - [`prompt`]: the system prompt a phase's model turns get.
//! - [`testcase`]: the `tests:` manifest in deterministic mode (guide "Process test manifest"),
//!   with a case's script or with [`derived`] replies made from the definition itself.
//!
//! Phase mode (guide "Phase mode"), as this runner reads it:
//! - `strict`: phases run in dependency order and none may be skipped: after any phase
//!   fails, no phase of a later wave starts (they are recorded as skipped) and the run
//!   fails; the other phases of its wave ran concurrently and keep their results.
//! - `guided`: phases run in dependency order; a phase whose dependency failed or was skipped
//!   is skipped, independent phases go on.
//! - `suggestive`: dependencies are ordering hints only: every phase runs (still in
//!   dependency order, for determinism) even if a dependency failed.
//!
//! In every mode a failed `is_critical_path` phase "blocks the entire process" (guide
//! "Phases"): no phase of a later wave starts and the run fails. The run's final status is
//! `completed` (every phase completed), `partial` (some phase failed or was skipped but the
//! run was not failed), or `failed`.

pub mod checks;
pub mod derived;
pub mod memory;
pub mod output;
pub mod phase;
pub mod preflight;
pub mod prompt;
pub mod remediation;
pub mod replan;
pub mod schedule;
pub mod semantic;
pub mod testcase;
pub mod validity;
pub mod wave;

use crate::engine::budget::{Budget, Limits};
use crate::engine::bundled::BundledTools;
use crate::engine::clock::Clock;
use crate::engine::event::{Event, EventLog, EventType};
use crate::engine::evidence::EvidencePack;
use crate::engine::model::Model;
use crate::engine::plan::{Plan, PlanStep, StepStatus};
use crate::engine::planner::Planner;
use crate::engine::policy::{Confirm, TaskConfig};
use crate::engine::tools::{Fetch, ToolExecutor, ToolOutputs};
use crate::package::{PhaseMode, Process};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Runtime switches (the guide's `loom.toml` `execution.*` flags, guide "Phase iteration
/// loops", "Runtime note") and safety limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// `execution.enable_process_iteration_loops` (default true here: loops are the point of
    /// a process runner; when false a phase gets exactly one attempt).
    pub enable_iteration_loops: bool,
    /// `execution.enable_iteration_command_exit_gate` (default false, as the guide says:
    /// disabled `command_exit` gates are reported as `skipped`).
    pub enable_command_exit_gates: bool,
    /// Model turns per attempt before the attempt is cut off (`max_turns`).
    pub max_turns_per_attempt: u32,
    /// Real-time timeout for each command (a safety net, not a budget).
    pub command_timeout: Duration,
    /// `execution.max_iteration_replans_after_exhaustion`: the global cap on replans of one
    /// phase (each loop's own `max_replans_after_exhaustion` applies too).
    pub max_iteration_replans_after_exhaustion: u32,
    /// Ask for a model tier one higher on each retry (capped at 3).
    pub escalate_model_tier_on_retry: bool,
    /// Run the package's bundled Python tools (`tool.call`, `tool_metric` gates).
    pub bundled_tools: bool,
    /// The Python to run them with (`--python`); none: the package's declared interpreter.
    pub python: Option<PathBuf>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            enable_iteration_loops: true,
            enable_command_exit_gates: false,
            max_turns_per_attempt: 20,
            command_timeout: Duration::from_secs(120),
            max_iteration_replans_after_exhaustion: 2,
            escalate_model_tier_on_retry: true,
            bundled_tools: true,
            python: None,
        }
    }
}

/// What the runner needs besides the process.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The goal (guide "Process test manifest" `goal`; loop-engine "Task Config Schema").
    pub goal: String,
    /// The workspace directory (created if missing).
    pub workspace: PathBuf,
    /// Seed of the event/run ids.
    pub seed: u64,
    /// Task config: run budget and risk policy.
    pub task: TaskConfig,
    /// Runtime switches.
    pub options: RunOptions,
}

/// A phase's final state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// All checks passed.
    Completed,
    /// Ran and did not pass.
    Failed,
    /// Not run.
    Skipped,
}

impl PhaseStatus {
    /// The name used in events.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Completed => "completed",
            PhaseStatus::Failed => "failed",
            PhaseStatus::Skipped => "skipped",
        }
    }
}

/// A phase's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseOutcome {
    /// Final state.
    pub status: PhaseStatus,
    /// Attempts made.
    pub attempts: u32,
    /// Why the loop stopped (`passed`, `max_attempts`, `budget_tokens`, ...) or why the phase
    /// was skipped.
    pub stop_reason: String,
    /// A failed critical-path phase whose failure was queued as a follow-up
    /// (`critical_path_behavior`), so it did not block the process.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub follow_up: bool,
    /// The failure includes a hard-invariant failure (`runner::remediation::is_hard`).
    #[serde(skip)]
    pub hard_failure: bool,
    /// The final attempt's blocking failures, `kind name: reason`.
    #[serde(skip)]
    pub failures: Vec<String>,
}

impl PhaseOutcome {
    /// A phase that did not run.
    pub fn skipped(reason: String) -> Self {
        PhaseOutcome {
            status: PhaseStatus::Skipped,
            attempts: 0,
            stop_reason: reason,
            follow_up: false,
            hard_failure: false,
            failures: Vec::new(),
        }
    }

    /// Whether dependents may build on it: completed, or failed with a queued follow-up.
    pub fn satisfies_dependents(&self) -> bool {
        self.status == PhaseStatus::Completed || self.follow_up
    }
}

/// The run's final status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every phase completed.
    Completed,
    /// Some phase failed or was skipped, and the run was not failed.
    Partial,
    /// A strict-mode or critical-path failure, an exhausted run budget, or a runner error.
    Failed,
}

impl RunStatus {
    /// The name used in events.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Partial => "partial",
            RunStatus::Failed => "failed",
        }
    }
}

/// Everything a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// Final status.
    pub status: RunStatus,
    /// Why the run stopped early, if it did.
    pub stop_reason: Option<String>,
    /// Per phase, in declaration order of the schedule.
    pub phases: BTreeMap<String, PhaseOutcome>,
    /// The order phases started in.
    pub started: Vec<String>,
    /// The final plan.
    pub plan: Plan,
    /// One evidence pack per attempt.
    pub evidence: Vec<EvidencePack>,
    /// The event stream.
    pub events: Vec<Event>,
    /// The canonical workspace.
    pub workspace: PathBuf,
}

/// The collaborators of a run.
#[derive(Debug, Clone)]
pub struct Env {
    /// The model backend.
    pub model: Arc<dyn Model>,
    /// The clock (event `ts`, wall-clock budgets, git dates).
    pub clock: Arc<dyn Clock>,
    /// Who confirms non-allowlisted commands under `commandPolicy: confirm`.
    pub confirm: Arc<dyn Confirm>,
    /// How `browser.fetch` reaches the network when the task allows it (none: refused).
    pub fetch: Option<Arc<dyn Fetch>>,
    /// Outputs of tools the package does not bundle, for `tool_metric` gates (the scripted
    /// backend's `tools:`).
    pub tool_outputs: Option<Arc<dyn ToolOutputs>>,
    /// The planner asked after an exhausted iteration loop (none: no replanning).
    pub planner: Option<Arc<dyn Planner>>,
    /// The package's bundled tools (none: `tool.call` is refused).
    pub bundled: Option<Arc<BundledTools>>,
    /// The credentials available to the run, by environment key (the auth preflight checks
    /// `auth.required[].required_env_keys` against it; values are never logged).
    pub auth_env: BTreeMap<String, String>,
}

/// A plan status change a phase recorded while running concurrently: applied to the run's
/// plan when the phase's events are merged, at the position of its drafted `PlanUpdated`.
#[derive(Debug, Clone)]
pub(crate) struct PlanChange {
    /// Index of the drafted `PlanUpdated` event in the phase's log.
    pub event: usize,
    pub phase: String,
    /// A status change.
    pub status: Option<StepStatus>,
    /// A replan revision (criteria; empty = keep).
    pub criteria: Option<Vec<String>>,
}

/// The state a phase runs against: the run's own (run-level events, skipped phases), or
/// one phase's context during a concurrent wave ([`wave`]) — its own draft event log,
/// clock fork (in `env`), executor fork, plan copy and run-budget snapshot.
pub(crate) struct RunState<'a> {
    pub process: &'a Process,
    pub env: &'a Env,
    pub req: &'a RunRequest,
    pub log: EventLog,
    pub exec: ToolExecutor,
    pub plan: Plan,
    pub run_budget: Budget,
    pub evidence: Vec<EvidencePack>,
    /// Set when the whole run must stop (run budget, runner error).
    pub halt: Option<String>,
    /// In a phase context: plan changes recorded, not applied to the run's plan.
    pub plan_changes: Option<Vec<PlanChange>>,
    /// Claim ledgers of the phases run so far (`runner::validity`); a phase context gets a
    /// copy and adds only its own.
    pub validity: BTreeMap<String, validity::Ledger>,
}

impl RunState<'_> {
    pub fn emit(&mut self, kind: EventType, payload: serde_json::Value) {
        self.log.emit(kind, payload);
    }

    pub fn plan_status(&mut self, phase: &str, status: StepStatus) {
        if !self.plan.set_status(phase, status) {
            return;
        }
        if let Some(changes) = self.plan_changes.as_mut() {
            // The run's plan is written at merge time (phase-id order); the payload is
            // filled in then. A phase changes only its own step, so "changed" here is
            // "changed" there.
            changes.push(PlanChange {
                event: self.log.events().len(),
                phase: phase.to_owned(),
                status: Some(status),
                criteria: None,
            });
            self.emit(EventType::PlanUpdated, json!({ "plan": null }));
        } else {
            let plan = serde_json::to_value(&self.plan).unwrap_or_default();
            self.emit(EventType::PlanUpdated, json!({ "plan": plan }));
        }
    }

    pub fn phase_state(&mut self, phase: &str, from: &str, to: &str, extra: serde_json::Value) {
        let mut payload = json!({"scope": "phase", "phase": phase, "from": from, "to": to});
        if let (Some(p), Some(e)) = (payload.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                p.insert(k.clone(), v.clone());
            }
        }
        self.emit(EventType::StateChanged, payload);
    }
}

/// The credentials a run gets: the values `get` has for the env keys the process's
/// `auth.required` entries declare (nothing else of the environment).
pub fn declared_auth_env(
    process: &Process,
    get: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in process.auth.iter().flat_map(|a| a.required.iter()) {
        for k in &r.required_env_keys {
            if let Some(v) = get(k.trim()) {
                out.insert(k.trim().to_owned(), v);
            }
        }
    }
    out
}

/// The bundled tools of the package in `root` (none when switched off or when it has no
/// `tools/`), passing them the run's credentials.
pub fn bundled_for(
    root: &std::path::Path,
    options: &RunOptions,
    auth_env: &BTreeMap<String, String>,
) -> Option<Arc<BundledTools>> {
    if !options.bundled_tools || !root.join("tools").is_dir() {
        return None;
    }
    Some(Arc::new(BundledTools::new(
        root,
        options.python.clone(),
        auth_env.clone(),
    )))
}

fn plan_for(process: &Process, goal: &str, order: &[String]) -> Plan {
    let steps = order
        .iter()
        .filter_map(|id| process.phase(id))
        .map(|p| {
            let mut criteria = Vec::new();
            if let Some(a) = &p.acceptance_criteria {
                criteria.push(a.trim().to_owned());
            }
            for d in p.deliverable_filenames() {
                criteria.push(format!("deliverable {d} exists"));
            }
            PlanStep {
                id: p.id.clone(),
                title: p.description.lines().next().unwrap_or("").trim().to_owned(),
                criteria,
                status: StepStatus::Pending,
                done: false,
                hard_stop: p.is_critical_path,
            }
        })
        .collect();
    Plan::new(goal, steps)
}

/// Runs `process` to completion. Errors are only for a run that cannot start (bad workspace,
/// unschedulable DAG); everything after that is reported through events and the outcome.
pub fn run(process: &Process, env: &Env, req: &RunRequest) -> Result<RunOutcome, String> {
    let waves = schedule::waves(process)?;
    let mut exec = ToolExecutor::new(
        &req.workspace,
        req.task.risk_policy.clone(),
        env.confirm.clone(),
        env.clock.clone(),
    )?
    .with_timeout(req.options.command_timeout);
    if let Some(f) = &env.fetch {
        exec = exec.with_fetch(f.clone());
    }
    if let Some(b) = &env.bundled {
        exec = exec.with_bundled(b.clone());
    }
    let workspace = exec.workspace().to_path_buf();
    let order: Vec<String> = waves.iter().flatten().cloned().collect();
    let b = &req.task.budget;
    let run_budget = Budget::new(
        Limits {
            max_iterations: b.max_iterations,
            max_tool_calls: b.max_tool_calls,
            max_wall_time_ms: b.max_wall_time_ms,
            max_tokens: b.max_tokens,
        },
        env.clock.now_ms(),
    );
    let mut st = RunState {
        process,
        env,
        req,
        log: EventLog::new(req.seed, env.clock.clone()),
        exec,
        plan: plan_for(process, &req.goal, &order),
        run_budget,
        evidence: Vec::new(),
        halt: None,
        plan_changes: None,
        validity: BTreeMap::new(),
    };
    st.emit(
        EventType::StateChanged,
        json!({
            "scope": "run", "from": "idle", "to": "running",
            "process": process.name, "version": process.version,
            "phaseMode": process.phase_mode(), "model": env.model.name(),
            "waves": waves,
        }),
    );
    st.emit(EventType::UserMessage, json!({ "goal": req.goal }));
    let plan = serde_json::to_value(&st.plan).unwrap_or_default();
    st.emit(EventType::PlanUpdated, json!({ "plan": plan }));

    let mode = process.phase_mode();
    let mut outcomes: BTreeMap<String, PhaseOutcome> = BTreeMap::new();
    let mut started = Vec::new();
    let mut run_failed: Option<String> = preflight::check(&mut st);
    let mut follow_ups: Vec<serde_json::Value> = Vec::new();
    let behavior = process
        .verification
        .as_ref()
        .and_then(|v| v.remediation.as_ref())
        .map(|r| r.critical_path_behavior())
        .unwrap_or(crate::package::CriticalPathBehavior::Block);
    for (wave_no, wave) in waves.iter().enumerate() {
        // Who runs is decided from earlier waves only: the phases of a wave run concurrently.
        let mut to_run = Vec::new();
        let mut skipped = BTreeMap::new();
        for id in wave {
            let Some(ph) = process.phase(id) else {
                continue;
            };
            let skip = if let Some(why) = st.halt.clone().or_else(|| run_failed.clone()) {
                Some(why)
            } else if mode == PhaseMode::Guided {
                ph.depends_on
                    .iter()
                    .find(|d| outcomes.get(*d).is_some_and(|o| !o.satisfies_dependents()))
                    .map(|d| format!("dependency {d} did not complete (phase_mode guided)"))
            } else {
                None
            };
            match skip {
                Some(reason) => {
                    skipped.insert(id.clone(), reason);
                }
                None => to_run.push(ph),
            }
        }
        let ran = wave::run_wave(&mut st, &to_run, &skipped, wave_no + 1);
        for (id, reason) in skipped {
            outcomes.insert(id, PhaseOutcome::skipped(reason));
        }
        for (ph, mut out) in to_run.iter().zip(ran) {
            let id = &ph.id;
            started.push(id.clone());
            let queue = ph.is_critical_path
                && out.status == PhaseStatus::Failed
                && !out.hard_failure
                && behavior != crate::package::CriticalPathBehavior::Block;
            if queue {
                out.follow_up = true;
                let f = json!({"phase": id, "behavior": behavior.as_str(), "stopReason": out.stop_reason, "failures": out.failures});
                st.emit(EventType::TaskUpdated, json!({"phase": id, "followUp": f}));
                follow_ups.push(f);
            } else if out.status == PhaseStatus::Failed && run_failed.is_none() {
                if ph.is_critical_path {
                    run_failed = Some(format!("critical-path phase {id} failed"));
                } else if mode == PhaseMode::Strict {
                    run_failed = Some(format!(
                        "phase {id} failed (phase_mode strict: no skipping)"
                    ));
                }
            }
            outcomes.insert(id.clone(), out);
        }
    }
    let stop_reason = st.halt.clone().or(run_failed);
    let status = if stop_reason.is_some() {
        RunStatus::Failed
    } else if outcomes
        .values()
        .all(|o| o.status == PhaseStatus::Completed)
    {
        RunStatus::Completed
    } else {
        RunStatus::Partial
    };
    let phases_json: BTreeMap<&str, &str> = outcomes
        .iter()
        .map(|(k, v)| (k.as_str(), v.status.as_str()))
        .collect();
    if let Some(card) = validity::scorecard(&st.validity) {
        st.emit(EventType::TaskUpdated, json!({ "validityScorecard": card }));
    }
    let now = env.clock.now_ms();
    let usage = json!({
        "iterations": st.run_budget.iterations,
        "toolCalls": st.run_budget.tool_calls,
        "tokens": st.run_budget.tokens,
        "wallTimeMs": st.run_budget.elapsed_ms(now),
    });
    let mut done = json!({ "status": status.as_str(), "stopReason": stop_reason, "phases": phases_json, "usage": usage });
    if !follow_ups.is_empty() {
        done["followUps"] = json!(follow_ups);
    }
    st.emit(EventType::TaskUpdated, done);
    st.emit(
        EventType::StateChanged,
        json!({ "scope": "run", "from": "running", "to": status.as_str() }),
    );
    Ok(RunOutcome {
        status,
        stop_reason,
        phases: outcomes,
        started,
        plan: st.plan,
        evidence: st.evidence,
        events: st.log.events().to_vec(),
        workspace,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::action::ToolAction;
    use crate::engine::clock::ManualClock;
    use crate::engine::model::{MockModel, ModelReply, Purpose};
    use crate::engine::policy::DenyConfirm;
    use mockall::Sequence;

    /// The model is asked for phases in schedule order, once each, with the phase's prompt and
    /// the run's goal; a reply without actions ends the attempt.
    #[test]
    fn the_model_is_driven_phase_by_phase_in_schedule_order() {
        let process: Process = serde_saphyr::from_str(
            "name: p\npersona: You are terse.\nphases:\n  - {id: b, description: B, depends_on: [a], deliverables: [b.md]}\n  - {id: a, description: A, depends_on: []}\n",
        )
        .unwrap();
        let mut model = MockModel::new();
        let mut seq = Sequence::new();
        model.expect_name().return_const("mock".to_owned());
        model
            .expect_reply()
            .withf(|r| {
                r.phase_id == "a"
                    && r.turn == 1
                    && r.goal == "G"
                    && r.system.starts_with("You are terse.")
            })
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| {
                Ok(ModelReply {
                    message: "nothing to do".into(),
                    ..Default::default()
                })
            });
        model
            .expect_reply()
            .withf(|r| r.phase_id == "b" && r.purpose == Purpose::Act && r.system.contains("b.md"))
            .times(1)
            .in_sequence(&mut seq)
            .returning(|_| {
                Ok(ModelReply {
                    actions: vec![ToolAction::FsWrite {
                        id: "w".into(),
                        path: "b.md".into(),
                        content: "b".into(),
                    }],
                    done: true,
                    ..Default::default()
                })
            });
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            model: Arc::new(model),
            clock: Arc::new(ManualClock::new(0)),
            confirm: Arc::new(DenyConfirm),
            fetch: None,
            tool_outputs: None,
            planner: None,
            bundled: None,
            auth_env: BTreeMap::new(),
        };
        let req = RunRequest {
            goal: "G".into(),
            workspace: dir.path().to_path_buf(),
            seed: 1,
            task: TaskConfig::default(),
            options: RunOptions::default(),
        };
        let out = run(&process, &env, &req).unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        assert_eq!(out.started, ["a", "b"]);
        assert_eq!(
            out.plan.version, 5,
            "pending→in_progress→done for two steps"
        );
        assert!(out.plan.steps.iter().all(|s| s.done));
    }
}
