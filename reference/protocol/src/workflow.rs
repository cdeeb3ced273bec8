//! Composable workflows (v1.1 §19; v1.0 §18.1–§18.3): the definition a `workflow` envelope
//! carries, parsed once into a [`Definition`], and the run a node tracks ([`WorkflowRun`]),
//! moved only by the envelopes participants send and by step timeouts on the injected clock.
//!
//! The node is the referee, as for tasks (§18.3): it does not execute steps, it checks that
//! each recorded transition is one the definition allows and that its sender may make it.
//! Readings where the spec is silent (node README "Choices where the spec is silent"):
//!
//! - `workflow.execute@v1` is carried by an envelope of `type: "workflow"` (§19), with
//!   `parameters.workflow_id` (unique on the node) and `parameters.steps`; the first step is
//!   where a run starts.
//! - `workflow.step_complete@v1` `{workflow_id, step_id, result?}` completes the active step
//!   and follows `on_success`; `workflow.failed@v1` `{workflow_id, step_id?, reason?}` fails
//!   the active step and follows `on_failure` (without `step_id`, or with no `on_failure`,
//!   the run fails); `workflow.complete@v1` `{workflow_id}` records the end of a run whose
//!   path has ended. They are sent in the workflow's thread by an identity the step names in
//!   `to` or by the workflow's creator (`complete` and a run-wide `failed`: the creator or a
//!   thread owner).
//! - Entering a step evaluates its `condition` (v1.0 §18.3) against the results recorded so
//!   far; unmet, the step is `skipped` and the run follows `on_condition_unmet`.
//! - A step whose `timeout` passes while active is `timed_out` and the run follows
//!   `on_failure`; a report for it after that is refused.
//! - Transitions may not loop (a step runs at most once): a definition whose `on_*` edges
//!   form a cycle is refused.
//! - §18.5: a workflow in a quarantined thread (label `sys.quarantine`) is stored `held`:
//!   no step becomes active, and reports are refused.

use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The defining intent (§19).
pub const EXECUTE: &str = "workflow.execute@v1";
/// A step completed (§19.2).
pub const STEP_COMPLETE: &str = "workflow.step_complete@v1";
/// A step, or the run, failed (§19.2).
pub const FAILED: &str = "workflow.failed@v1";
/// The run completed (§19.2).
pub const COMPLETE: &str = "workflow.complete@v1";
/// The label of a quarantined thread (§18.5, §21.2).
pub const QUARANTINE_LABEL: &str = "sys.quarantine";

/// Most steps in one definition.
pub const MAX_STEPS: usize = 100;
/// Most recipients of one step.
pub const MAX_STEP_RECIPIENTS: usize = 50;

/// A condition operator (v1.0 §18.3 shows `eq`; the others are the usual comparisons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Equal (JSON equality).
    Eq,
    /// Not equal.
    Ne,
    /// Greater than (numbers).
    Gt,
    /// At least (numbers).
    Gte,
    /// Less than (numbers).
    Lt,
    /// At most (numbers).
    Lte,
    /// One of the values of an array.
    In,
    /// The field is present.
    Exists,
}

impl Operator {
    const ALL: &'static [(&'static str, Operator)] = &[
        ("eq", Operator::Eq),
        ("ne", Operator::Ne),
        ("gt", Operator::Gt),
        ("gte", Operator::Gte),
        ("lt", Operator::Lt),
        ("lte", Operator::Lte),
        ("in", Operator::In),
        ("exists", Operator::Exists),
    ];
}

/// A step's condition (v1.0 §18.3): `field` is `<step id>.result.<path>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Condition {
    /// `step_1.result.decision`.
    pub field: String,
    /// How to compare.
    pub operator: Operator,
    /// With what.
    pub value: Value,
}

/// One step of a definition (v1.0 §18.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Unique within the definition.
    pub id: String,
    /// What the step asks for (`approval.request`, …).
    pub action: String,
    /// Who performs it.
    pub to: Vec<Address>,
    /// Entered only when this holds.
    pub condition: Option<Condition>,
    /// Next step on success.
    pub on_success: Option<String>,
    /// Next step on failure or timeout.
    pub on_failure: Option<String>,
    /// Next step when the condition is unmet.
    pub on_condition_unmet: Option<String>,
    /// How long the step may stay active, in milliseconds.
    pub timeout_ms: Option<i64>,
}

/// A parsed `workflow.execute@v1` definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    /// `parameters.workflow_id`.
    pub workflow_id: String,
    /// `parameters.name`.
    pub name: Option<String>,
    /// The steps, in definition order; the first is the start.
    pub steps: Vec<Step>,
}

fn bad(field: impl AsRef<str>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(
        format!("content.structured.parameters.{}", field.as_ref()),
        rule,
        "v1.1 §19",
    )
}

fn valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

/// Parses `48h`, `30m`, `45s`, `2d` or `500ms` into milliseconds (v1.0 §18.1 shows `48h`).
pub fn parse_duration(s: &str) -> Option<i64> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = digits.parse().ok().filter(|n| *n > 0)?;
    let per = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(per)
}

fn opt_id(step: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, ProtocolError> {
    match step.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if valid_id(s) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{at}.{key}"), "must be a step id")),
    }
}

/// Parses and checks the parameters of a `workflow.execute@v1` envelope (§19, v1.0 §18.1).
pub fn parse_definition(parameters: Option<&Value>) -> Result<Definition, ProtocolError> {
    let p = parameters.and_then(Value::as_object).ok_or_else(|| {
        bad(
            "",
            "workflow.execute@v1 needs parameters with workflow_id and steps",
        )
    })?;
    let workflow_id = match p.get("workflow_id") {
        Some(Value::String(s)) if valid_id(s) => s.clone(),
        _ => {
            return Err(bad(
                "workflow_id",
                "required: an id of 1-128 letters, digits, '_', '-', '.', ':'",
            ));
        }
    };
    let name = match p.get("name") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.chars().count() <= 256 => Some(s.clone()),
        Some(_) => return Err(bad("name", "must be a string of at most 256 characters")),
    };
    let list = match p.get("steps") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_STEPS => a,
        _ => return Err(bad("steps", format!("required: 1-{MAX_STEPS} steps"))),
    };
    let mut steps = Vec::with_capacity(list.len());
    let mut seen = BTreeSet::new();
    for (i, s) in list.iter().enumerate() {
        let at = format!("steps[{i}]");
        let s = s
            .as_object()
            .ok_or_else(|| bad(&at, "a step must be an object"))?;
        let id = match s.get("id") {
            Some(Value::String(v)) if valid_id(v) => v.clone(),
            _ => return Err(bad(format!("{at}.id"), "required: a step id")),
        };
        if !seen.insert(id.clone()) {
            return Err(bad(
                format!("{at}.id"),
                format!("step id {id:?} is used twice"),
            ));
        }
        let action = match s.get("action") {
            Some(Value::String(v)) if !v.is_empty() && v.len() <= 128 => v.clone(),
            _ => return Err(bad(format!("{at}.action"), "required: a non-empty string")),
        };
        let to_values: Vec<&Value> = match s.get("to") {
            Some(Value::String(_)) => vec![&s["to"]],
            Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_STEP_RECIPIENTS => {
                a.iter().collect()
            }
            _ => {
                return Err(bad(
                    format!("{at}.to"),
                    format!("required: an identity or 1-{MAX_STEP_RECIPIENTS} identities"),
                ));
            }
        };
        let mut to = Vec::with_capacity(to_values.len());
        for v in to_values {
            let a = v
                .as_str()
                .and_then(|t| Address::parse(t).ok())
                .ok_or_else(|| bad(format!("{at}.to"), format!("{v} is not a loom:// identity")))?;
            to.push(a);
        }
        let condition = match s.get("condition") {
            None | Some(Value::Null) => None,
            Some(Value::Object(c)) => Some(parse_condition(c, &at)?),
            Some(_) => return Err(bad(format!("{at}.condition"), "must be an object")),
        };
        let timeout_ms = match s.get("timeout") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(parse_duration(t).ok_or_else(|| {
                bad(
                    format!("{at}.timeout"),
                    format!("{t:?} is not a duration like 45s, 30m, 48h or 2d"),
                )
            })?),
            Some(_) => return Err(bad(format!("{at}.timeout"), "must be a duration string")),
        };
        steps.push(Step {
            id,
            action,
            to,
            condition,
            on_success: opt_id(s, "on_success", &at)?,
            on_failure: opt_id(s, "on_failure", &at)?,
            on_condition_unmet: opt_id(s, "on_condition_unmet", &at)?,
            timeout_ms,
        });
    }
    let def = Definition {
        workflow_id,
        name,
        steps,
    };
    def.check_edges()?;
    Ok(def)
}

fn parse_condition(c: &Map<String, Value>, at: &str) -> Result<Condition, ProtocolError> {
    let field = match c.get("field") {
        Some(Value::String(f)) if f.split('.').nth(1) == Some("result") => f.clone(),
        _ => {
            return Err(bad(
                format!("{at}.condition.field"),
                "required: <step id>.result[.<member>…]",
            ));
        }
    };
    let operator = match c.get("operator").and_then(Value::as_str) {
        Some(o) => Operator::ALL
            .iter()
            .find(|(n, _)| *n == o)
            .map(|(_, op)| *op)
            .ok_or_else(|| {
                bad(
                    format!("{at}.condition.operator"),
                    format!(
                        "{o:?} is not one of {}",
                        Operator::ALL
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?,
        None => return Err(bad(format!("{at}.condition.operator"), "required")),
    };
    let value = c.get("value").cloned().unwrap_or(Value::Null);
    if operator == Operator::In && !value.is_array() {
        return Err(bad(
            format!("{at}.condition.value"),
            "`in` compares with an array",
        ));
    }
    Ok(Condition {
        field,
        operator,
        value,
    })
}

impl Definition {
    fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }

    /// Every `on_*` names a step, every condition a step, and no path returns to a step.
    fn check_edges(&self) -> Result<(), ProtocolError> {
        for (i, s) in self.steps.iter().enumerate() {
            for (key, target) in [
                ("on_success", &s.on_success),
                ("on_failure", &s.on_failure),
                ("on_condition_unmet", &s.on_condition_unmet),
            ] {
                if let Some(t) = target
                    && self.step(t).is_none()
                {
                    return Err(bad(format!("steps[{i}].{key}"), format!("no step {t:?}")));
                }
            }
            if let Some(c) = &s.condition {
                let source = c.field.split('.').next().unwrap_or_default();
                if self.step(source).is_none() {
                    return Err(bad(
                        format!("steps[{i}].condition.field"),
                        format!("no step {source:?}"),
                    ));
                }
            }
        }
        // Depth-first search for a cycle (0 = unvisited, 1 = on the path, 2 = done).
        let mut mark: BTreeMap<&str, u8> = BTreeMap::new();
        fn visit<'a>(
            d: &'a Definition,
            id: &'a str,
            mark: &mut BTreeMap<&'a str, u8>,
        ) -> Result<(), String> {
            match mark.get(id) {
                Some(1) => return Err(id.to_owned()),
                Some(2) => return Ok(()),
                _ => {}
            }
            mark.insert(id, 1);
            if let Some(s) = d.step(id) {
                for t in [&s.on_success, &s.on_failure, &s.on_condition_unmet]
                    .into_iter()
                    .flatten()
                {
                    visit(d, t, mark)?;
                }
            }
            mark.insert(id, 2);
            Ok(())
        }
        for s in &self.steps {
            visit(self, &s.id, &mut mark).map_err(|at| {
                bad(
                    "steps",
                    format!("the transitions loop back to step {at:?}; a step runs at most once"),
                )
            })?;
        }
        Ok(())
    }
}

/// A step's state (v1.0 §18.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Not yet started.
    Pending,
    /// Currently executing.
    Active,
    /// Waiting for an external response (not distinguished from `active` by this node).
    Waiting,
    /// Finished successfully.
    Completed,
    /// Failed.
    Failed,
    /// Skipped by its condition.
    Skipped,
    /// Exceeded its timeout.
    TimedOut,
}

/// The run's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A step is active, or the path ended and `workflow.complete@v1` is awaited.
    Running,
    /// In a quarantined thread: nothing runs (§18.5).
    Held,
    /// Recorded complete.
    Completed,
    /// Failed.
    Failed,
}

/// One step of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRun {
    /// The step's state.
    pub state: StepState,
    /// When it entered that state (ms since the epoch).
    pub since_ms: Option<i64>,
    /// The result reported with its completion.
    pub result: Option<Value>,
    /// Who reported it.
    pub by: Option<String>,
    /// The envelope that reported it.
    pub envelope: Option<String>,
}

impl StepRun {
    /// A step not yet started.
    pub fn pending() -> StepRun {
        StepRun {
            state: StepState::Pending,
            since_ms: None,
            result: None,
            by: None,
            envelope: None,
        }
    }
}

/// A workflow run as a node tracks it (§19.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowRun {
    /// The definition.
    pub definition: Definition,
    /// Its thread.
    pub thread: String,
    /// Who defined it.
    pub creator: String,
    /// The defining envelope.
    pub envelope: String,
    /// Run state.
    pub status: RunStatus,
    /// Each step's run, by id.
    pub steps: BTreeMap<String, StepRun>,
    /// The active step, if any.
    pub active: Option<String>,
    /// Why the run failed, when it did.
    pub failure: Option<String>,
}

/// A recorded transition, parsed from an update envelope.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// `workflow.step_complete@v1`.
    StepComplete {
        /// The step.
        step: String,
        /// `parameters.result`.
        result: Option<Value>,
    },
    /// `workflow.failed@v1`.
    Failed {
        /// The step, or `None` for the whole run.
        step: Option<String>,
        /// `parameters.reason`.
        reason: Option<String>,
    },
    /// `workflow.complete@v1`.
    Complete,
}

/// Who sends an update.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// The sender.
    pub identity: &'a Address,
    /// Whether it owns the thread.
    pub thread_owner: bool,
}

/// Parses an update envelope's intent and parameters; `None` when the intent is not one.
pub fn parse_update(
    intent: &str,
    parameters: Option<&Value>,
) -> Option<Result<(String, Update), ProtocolError>> {
    if ![STEP_COMPLETE, FAILED, COMPLETE].contains(&intent) {
        return None;
    }
    let p = parameters.and_then(Value::as_object);
    let text = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_str);
    Some((|| {
        let id = text("workflow_id")
            .filter(|s| valid_id(s))
            .ok_or_else(|| {
                bad(
                    "workflow_id",
                    "required: the workflow_id of the workflow.execute@v1 envelope",
                )
            })?
            .to_owned();
        let step = text("step_id").map(str::to_owned);
        let update = match intent {
            STEP_COMPLETE => Update::StepComplete {
                step: step.ok_or_else(|| bad("step_id", "required: the step that completed"))?,
                result: p.and_then(|p| p.get("result")).cloned(),
            },
            FAILED => Update::Failed {
                step,
                reason: text("reason").map(str::to_owned),
            },
            _ => Update::Complete,
        };
        Ok((id, update))
    })())
}

fn refused(rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(
        ErrorCode::StateTransitionInvalid,
        "content.structured.parameters",
        rule,
        "v1.1 §19.2",
    )
}

impl WorkflowRun {
    /// A new run of `definition`: held in a quarantined thread (§18.5), else its first step
    /// entered at `now`.
    pub fn start(
        definition: Definition,
        thread: String,
        creator: String,
        envelope: String,
        now: Timestamp,
        quarantined: bool,
    ) -> WorkflowRun {
        let steps = definition
            .steps
            .iter()
            .map(|s| (s.id.clone(), StepRun::pending()))
            .collect();
        let first = definition.steps.first().map(|s| s.id.clone());
        let mut run = WorkflowRun {
            definition,
            thread,
            creator,
            envelope,
            status: if quarantined {
                RunStatus::Held
            } else {
                RunStatus::Running
            },
            steps,
            active: None,
            failure: None,
        };
        if !quarantined {
            run.enter(first, now);
        }
        run
    }

    fn set(&mut self, id: &str, state: StepState, now: Timestamp) {
        if let Some(r) = self.steps.get_mut(id) {
            r.state = state;
            r.since_ms = Some(now.unix_ms());
        }
    }

    /// Enters `next` (and, through unmet conditions, the steps after it).
    fn enter(&mut self, mut next: Option<String>, now: Timestamp) {
        self.active = None;
        while let Some(id) = next.take() {
            let Some(step) = self.definition.step(&id).cloned() else {
                return;
            };
            if self
                .steps
                .get(&id)
                .is_some_and(|r| r.state != StepState::Pending)
            {
                return; // a step runs at most once (edges are acyclic; defensive)
            }
            let met = step.condition.as_ref().is_none_or(|c| self.holds(c));
            if met {
                self.set(&id, StepState::Active, now);
                self.active = Some(id);
                return;
            }
            self.set(&id, StepState::Skipped, now);
            next = step.on_condition_unmet.clone();
        }
    }

    /// Whether `c` holds on the results recorded so far (a missing field satisfies no
    /// operator, `exists` included).
    fn holds(&self, c: &Condition) -> bool {
        let mut parts = c.field.split('.');
        let step = parts.next().unwrap_or_default();
        let _result = parts.next();
        let mut v = self.steps.get(step).and_then(|r| r.result.as_ref());
        for p in parts {
            v = v.and_then(|x| x.get(p));
        }
        let Some(v) = v else {
            return false;
        };
        let num = |x: &Value| x.as_f64();
        match c.operator {
            Operator::Eq => *v == c.value,
            Operator::Ne => *v != c.value,
            Operator::Exists => true,
            Operator::In => c.value.as_array().is_some_and(|a| a.contains(v)),
            op => match (num(v), num(&c.value)) {
                (Some(a), Some(b)) => match op {
                    Operator::Gt => a > b,
                    Operator::Gte => a >= b,
                    Operator::Lt => a < b,
                    _ => a <= b,
                },
                _ => false,
            },
        }
    }

    /// Applies step timeouts up to `now`: an active step past its deadline is `timed_out`
    /// and the run follows its `on_failure` (or fails). Returns whether anything moved.
    pub fn settle(&mut self, now: Timestamp) -> bool {
        let mut moved = false;
        while let Some(id) = self.active.clone() {
            let Some(step) = self.definition.step(&id).cloned() else {
                break;
            };
            let since = self.steps.get(&id).and_then(|r| r.since_ms).unwrap_or(0);
            match step.timeout_ms {
                Some(t) if now.unix_ms() > since.saturating_add(t) => {
                    let at = Timestamp::from_unix_ms(since.saturating_add(t));
                    self.set(&id, StepState::TimedOut, at);
                    moved = true;
                    self.follow_failure(&step, at, format!("step {id} timed out"));
                }
                _ => break,
            }
        }
        moved
    }

    fn follow_failure(&mut self, step: &Step, now: Timestamp, why: String) {
        match &step.on_failure {
            Some(next) => self.enter(Some(next.clone()), now),
            None => {
                self.active = None;
                self.status = RunStatus::Failed;
                self.failure = Some(why);
            }
        }
    }

    /// The run after `update` by `actor` at `now` (timeouts settled first), or why the
    /// transition is refused (§19.2).
    pub fn apply(
        &self,
        update: &Update,
        actor: Actor<'_>,
        envelope: &str,
        now: Timestamp,
    ) -> Result<WorkflowRun, ProtocolError> {
        let mut run = self.clone();
        run.settle(now);
        let me = actor.identity.to_string();
        let id = &run.definition.workflow_id;
        match run.status {
            RunStatus::Held => {
                return Err(refused(format!(
                    "workflow {id} is held: its thread is quarantined and nothing in it runs (v1.1 §18.5)"
                )));
            }
            RunStatus::Completed | RunStatus::Failed => {
                return Err(refused(format!(
                    "workflow {id} has ended ({})",
                    if run.status == RunStatus::Completed {
                        "completed"
                    } else {
                        "failed"
                    }
                )));
            }
            RunStatus::Running => {}
        }
        let may_run = actor.thread_owner || me == run.creator;
        match update {
            Update::StepComplete { step, .. }
            | Update::Failed {
                step: Some(step), ..
            } => {
                let def =
                    run.definition.step(step).cloned().ok_or_else(|| {
                        bad("step_id", format!("workflow {id} has no step {step:?}"))
                    })?;
                let state = run.steps.get(step).map(|r| r.state);
                if run.active.as_deref() != Some(step.as_str()) {
                    return Err(refused(format!(
                        "step {step} is {}, not active{}",
                        state.map_or("unknown", step_state_name),
                        run.active
                            .as_deref()
                            .map(|a| format!("; the active step is {a}"))
                            .unwrap_or_default()
                    )));
                }
                if !(me == run.creator || def.to.contains(actor.identity)) {
                    return Err(ProtocolError::new(
                        ErrorCode::CapabilityDenied,
                        "from.identity",
                        format!(
                            "only the step's `to` identities or the workflow's creator may report step {step}"
                        ),
                        "v1.1 §19.2",
                    ));
                }
                let record = |run: &mut WorkflowRun, state, result: Option<Value>| {
                    run.set(step, state, now);
                    if let Some(r) = run.steps.get_mut(step) {
                        r.result = result;
                        r.by = Some(me.clone());
                        r.envelope = Some(envelope.to_owned());
                    }
                };
                match update {
                    Update::StepComplete { result, .. } => {
                        record(&mut run, StepState::Completed, result.clone());
                        run.enter(def.on_success.clone(), now);
                    }
                    Update::Failed { reason, .. } => {
                        record(&mut run, StepState::Failed, None);
                        let why = reason
                            .clone()
                            .unwrap_or_else(|| format!("step {step} failed"));
                        run.follow_failure(&def, now, why);
                    }
                    Update::Complete => {}
                }
            }
            Update::Failed { step: None, reason } => {
                if !may_run {
                    return Err(ProtocolError::new(
                        ErrorCode::CapabilityDenied,
                        "from.identity",
                        "only the workflow's creator or a thread owner may fail the whole run",
                        "v1.1 §19.2",
                    ));
                }
                if let Some(a) = run.active.take() {
                    run.set(&a, StepState::Failed, now);
                }
                run.status = RunStatus::Failed;
                run.failure = Some(
                    reason
                        .clone()
                        .unwrap_or_else(|| "failed by its creator".into()),
                );
            }
            Update::Complete => {
                if !may_run {
                    return Err(ProtocolError::new(
                        ErrorCode::CapabilityDenied,
                        "from.identity",
                        "only the workflow's creator or a thread owner may record its completion",
                        "v1.1 §19.2",
                    ));
                }
                if let Some(a) = &run.active {
                    return Err(refused(format!(
                        "workflow {id} cannot complete while step {a} is active"
                    )));
                }
                run.status = RunStatus::Completed;
            }
        }
        Ok(run)
    }

    /// The dedicated view (§19.2 "Nodes SHOULD provide a dedicated workflow thread view"),
    /// with timeouts settled at `now`.
    pub fn view(&self, now: Timestamp) -> Value {
        let mut run = self.clone();
        run.settle(now);
        let steps: Vec<Value> = run
            .definition
            .steps
            .iter()
            .map(|s| {
                // A stored run lists every step; one read from a damaged row shows it pending.
                let r = run.steps.get(&s.id).cloned().unwrap_or_else(StepRun::pending);
                json!({
                    "id": s.id,
                    "action": s.action,
                    "to": s.to.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "state": step_state_name(r.state),
                    "since": r.since_ms.map(|m| Timestamp::from_unix_ms(m).to_rfc3339()),
                    "deadline": (r.state == StepState::Active)
                        .then(|| s.timeout_ms.zip(r.since_ms).map(|(t, since)| Timestamp::from_unix_ms(since + t).to_rfc3339()))
                        .flatten(),
                    "result": r.result,
                    "reported_by": r.by,
                    "envelope_id": r.envelope,
                })
            })
            .collect();
        json!({
            "workflow_id": run.definition.workflow_id,
            "name": run.definition.name,
            "thread_id": run.thread,
            "creator": run.creator,
            "envelope_id": run.envelope,
            "status": match run.status {
                RunStatus::Running => "running",
                RunStatus::Held => "held",
                RunStatus::Completed => "completed",
                RunStatus::Failed => "failed",
            },
            "active_step": run.active,
            "failure": run.failure,
            "steps": steps,
        })
    }
}

/// The wire spelling of a step state (v1.0 §18.2).
pub fn step_state_name(s: StepState) -> &'static str {
    match s {
        StepState::Pending => "pending",
        StepState::Active => "active",
        StepState::Waiting => "waiting",
        StepState::Completed => "completed",
        StepState::Failed => "failed",
        StepState::Skipped => "skipped",
        StepState::TimedOut => "timed_out",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Address {
        Address::parse(s).unwrap()
    }

    fn expense() -> Value {
        json!({
            "workflow_id": "wf_1", "name": "Expense",
            "steps": [
                {"id": "step_1", "action": "approval.request", "to": "loom://manager@acme.test",
                 "on_success": "step_2", "on_failure": "step_abort", "timeout": "48h"},
                {"id": "step_2", "action": "task.execute", "to": "loom://bot@acme.test",
                 "condition": {"field": "step_1.result.decision", "operator": "eq", "value": "approved"},
                 "on_success": "step_3", "on_condition_unmet": "step_abort"},
                {"id": "step_3", "action": "notification", "to": ["loom://al@acme.test"]},
                {"id": "step_abort", "action": "notification", "to": ["loom://al@acme.test"]}
            ]
        })
    }

    fn start(def: &Value) -> WorkflowRun {
        let d = parse_definition(Some(def)).unwrap();
        WorkflowRun::start(
            d,
            "thr_x".into(),
            "loom://al@acme.test".into(),
            "env_x".into(),
            Timestamp::from_unix_ms(0),
            false,
        )
    }

    fn actor(s: &Address) -> Actor<'_> {
        Actor {
            identity: s,
            thread_owner: false,
        }
    }

    #[test]
    fn the_happy_path_and_the_condition() {
        let run = start(&expense());
        assert_eq!(run.active.as_deref(), Some("step_1"));
        let mgr = a("loom://manager@acme.test");
        let t = Timestamp::from_unix_ms(1000);
        let done = Update::StepComplete {
            step: "step_1".into(),
            result: Some(json!({"decision": "approved"})),
        };
        let run = run.apply(&done, actor(&mgr), "env_1", t).unwrap();
        assert_eq!(run.active.as_deref(), Some("step_2"));
        // Rejected instead: step_2's condition is unmet, the run goes to step_abort.
        let rejected = Update::StepComplete {
            step: "step_1".into(),
            result: Some(json!({"decision": "rejected"})),
        };
        let other = start(&expense())
            .apply(&rejected, actor(&mgr), "env_1", t)
            .unwrap();
        assert_eq!(other.steps["step_2"].state, StepState::Skipped);
        assert_eq!(other.active.as_deref(), Some("step_abort"));
        // Completing before the path ends is refused; after, the creator records it.
        let al = a("loom://al@acme.test");
        let e = run
            .apply(&Update::Complete, actor(&al), "env_2", t)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
        let bot = a("loom://bot@acme.test");
        let run = run
            .apply(
                &Update::StepComplete {
                    step: "step_2".into(),
                    result: None,
                },
                actor(&bot),
                "e3",
                t,
            )
            .unwrap();
        let run = run
            .apply(
                &Update::StepComplete {
                    step: "step_3".into(),
                    result: None,
                },
                actor(&al),
                "e4",
                t,
            )
            .unwrap();
        assert_eq!(run.active, None);
        let run = run.apply(&Update::Complete, actor(&al), "e5", t).unwrap();
        assert_eq!(run.status, RunStatus::Completed);
        assert!(
            run.apply(&Update::Complete, actor(&al), "e6", t).is_err(),
            "ended"
        );
    }

    #[test]
    fn who_may_report_and_which_step() {
        let run = start(&expense());
        let t = Timestamp::from_unix_ms(1);
        let stranger = a("loom://eve@acme.test");
        let e = run
            .apply(
                &Update::StepComplete {
                    step: "step_1".into(),
                    result: None,
                },
                actor(&stranger),
                "e",
                t,
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::CapabilityDenied);
        let mgr = a("loom://manager@acme.test");
        let e = run
            .apply(
                &Update::StepComplete {
                    step: "step_3".into(),
                    result: None,
                },
                actor(&mgr),
                "e",
                t,
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
        assert!(e.rule.contains("step_3 is pending"), "{}", e.rule);
        let e = run
            .apply(
                &Update::Failed {
                    step: None,
                    reason: None,
                },
                actor(&mgr),
                "e",
                t,
            )
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::CapabilityDenied);
        let failed = run
            .apply(
                &Update::Failed {
                    step: Some("step_1".into()),
                    reason: Some("no".into()),
                },
                actor(&mgr),
                "e",
                t,
            )
            .unwrap();
        assert_eq!(failed.active.as_deref(), Some("step_abort"));
    }

    #[test]
    fn timeouts_follow_the_failure_branch() {
        let run = start(&expense());
        let mgr = a("loom://manager@acme.test");
        let late = Timestamp::from_unix_ms(48 * 3_600_000 + 1);
        let e = run
            .apply(
                &Update::StepComplete {
                    step: "step_1".into(),
                    result: None,
                },
                actor(&mgr),
                "e",
                late,
            )
            .unwrap_err();
        assert!(e.rule.contains("timed_out"), "{}", e.rule);
        let v = run.view(late);
        assert_eq!(v["steps"][0]["state"], "timed_out");
        assert_eq!(v["active_step"], "step_abort");
        assert_eq!(
            run.view(Timestamp::from_unix_ms(5))["steps"][0]["state"],
            "active"
        );
    }

    #[test]
    fn held_in_quarantine() {
        let d = parse_definition(Some(&expense())).unwrap();
        let run = WorkflowRun::start(
            d,
            "t".into(),
            "loom://al@acme.test".into(),
            "e".into(),
            Timestamp::from_unix_ms(0),
            true,
        );
        assert_eq!(run.status, RunStatus::Held);
        assert_eq!(run.active, None);
        let mgr = a("loom://manager@acme.test");
        let e = run
            .apply(
                &Update::StepComplete {
                    step: "step_1".into(),
                    result: None,
                },
                actor(&mgr),
                "e",
                Timestamp::from_unix_ms(1),
            )
            .unwrap_err();
        assert!(e.rule.contains("§18.5"), "{}", e.rule);
    }

    #[test]
    fn bad_definitions_name_the_member() {
        let mut cases = Vec::new();
        let mut loops = expense();
        loops["steps"][2]["on_success"] = "step_1".into();
        cases.push((loops, "steps"));
        let mut dangling = expense();
        dangling["steps"][0]["on_success"] = "step_9".into();
        cases.push((dangling, "steps[0].on_success"));
        let mut dup = expense();
        dup["steps"][1]["id"] = "step_1".into();
        cases.push((dup, "steps[1].id"));
        let mut timeout = expense();
        timeout["steps"][0]["timeout"] = "two days".into();
        cases.push((timeout, "steps[0].timeout"));
        let mut op = expense();
        op["steps"][1]["condition"]["operator"] = "like".into();
        cases.push((op, "steps[1].condition.operator"));
        let mut to = expense();
        to["steps"][0]["to"] = "manager".into();
        cases.push((to, "steps[0].to"));
        cases.push((json!({"steps": []}), "workflow_id"));
        cases.push((json!({"workflow_id": "w", "steps": []}), "steps"));
        for (def, field) in cases {
            let e = parse_definition(Some(&def)).unwrap_err();
            assert_eq!(
                e.field,
                format!("content.structured.parameters.{field}"),
                "{def}"
            );
            assert_eq!(e.section, "v1.1 §19");
        }
        assert_eq!(parse_duration("48h"), Some(172_800_000));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("5"), None);
    }
}
