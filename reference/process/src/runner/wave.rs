//! One dependency wave, its phases run concurrently (guide "Phases": phases whose
//! dependencies are met are independent; README "Scheduling and phase mode").
//!
//! Each phase runs on its own thread against its own context ([`super::RunState`]): a draft
//! event log (ids seeded by (run seed, phase id), `ts` from its own clock fork), an executor
//! fork over the same workspace (its own checkpoints; its `fs.read`/`fs.search` see the
//! wave-start bytes of paths its siblings wrote, [`crate::engine::wave_view`]), a copy of the plan and a snapshot of
//! the run budget as it stood at the start of the wave. Nothing a phase does reaches the run
//! until the wave is over; then, in phase-id order, each phase's events are appended (`seq`
//! renumbered), its plan changes applied at their recorded positions, its evidence packs and
//! its budget usage added, and the run's clock brought forward. So the event stream depends on
//! the inputs and seed only, never on thread timing.
//!
//! Consequences, documented in the README:
//! - A wave can overshoot a run-wide budget by what its phases used concurrently (each saw
//!   the budget remaining at wave start); the run halts before the next wave. Per-loop
//!   budgets (`iteration_budget`) are exact: a loop belongs to one phase.
//! - Two phases of a wave that write the same workspace path race: the guide's output
//!   coordination (guide "Output coordination") expects independent phases to own their
//!   outputs. After the wave each such path is reported as an `Error` (`write_race`) naming
//!   both phases, and the later phase in id order fails.

use super::{PhaseOutcome, PhaseStatus, RunState, phase};
use crate::engine::budget::Budget;
use crate::engine::clock::Clock;
use crate::engine::event::EventType;
use crate::engine::plan::StepStatus;
use crate::engine::wave_view::WaveView;
use crate::package::Phase;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What one phase of the wave left behind, before merging.
struct Finished<'a> {
    ctx: RunState<'a>,
    outcome: PhaseOutcome,
}

/// Runs `to_run` (sorted by id, dependencies met) concurrently and merges their results into
/// `st`; `skipped` (id → reason) are recorded at their place in id order. Returns the
/// outcomes of `to_run`, in its order.
pub(crate) fn run_wave(
    st: &mut RunState<'_>,
    to_run: &[&Phase],
    skipped: &BTreeMap<String, String>,
    wave: usize,
) -> Vec<PhaseOutcome> {
    let clocks: Vec<Arc<dyn Clock>> = to_run.iter().map(|_| st.env.clock.fork()).collect();
    let envs: Vec<super::Env> = clocks
        .iter()
        .map(|c| super::Env {
            clock: c.clone(),
            ..st.env.clone()
        })
        .collect();
    let snapshot = st.run_budget;
    let view = Arc::new(WaveView::new());
    let contexts: Vec<RunState<'_>> = to_run
        .iter()
        .zip(&envs)
        .map(|(ph, env)| RunState {
            process: st.process,
            env,
            req: st.req,
            log: st.log.draft(st.req.seed, &ph.id, env.clock.clone()),
            exec: st.exec.fork(env.clock.clone(), view.clone(), &ph.id),
            plan: st.plan.clone(),
            run_budget: snapshot,
            evidence: Vec::new(),
            halt: None,
            plan_changes: Some(Vec::new()),
            validity: st.validity.clone(),
        })
        .collect();
    let finished: Vec<Finished<'_>> = std::thread::scope(|scope| {
        let handles: Vec<_> = to_run
            .iter()
            .zip(contexts)
            .map(|(ph, mut ctx)| {
                let ph: &Phase = ph;
                scope.spawn(move || {
                    let outcome = phase::run_phase(&mut ctx, ph, wave);
                    Finished { ctx, outcome }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(f) => f,
                // A panicking phase is a bug; re-raise it on the caller's thread.
                Err(p) => std::panic::resume_unwind(p),
            })
            .collect()
    });

    let races = write_races(to_run, &finished);
    let mut outcomes = Vec::new();
    let mut ran = to_run.iter().zip(finished).peekable();
    for id in merged_ids(to_run, skipped) {
        if let Some(reason) = skipped.get(&id) {
            st.phase_state(&id, "pending", "skipped", json!({ "reason": reason }));
            st.plan_status(&id, StepStatus::Skipped);
            continue;
        }
        let Some((_, f)) = ran.next() else {
            continue;
        };
        outcomes.push(merge(st, f, &snapshot));
    }
    for c in &clocks {
        st.env.clock.join(c.as_ref());
    }
    for (path, first, later) in &races {
        report_race(st, to_run, &mut outcomes, path, first, later);
    }
    // `peek_ms`: checking the budget is not an event and must not move a ticking clock.
    if st.halt.is_none()
        && let Some(x) = st.run_budget.exhausted(st.env.clock.peek_ms())
    {
        st.halt = Some(format!("run {}", x.as_str()));
    }
    outcomes
}

/// The wave's ids in id order: the phases that ran and the skipped ones.
fn merged_ids(to_run: &[&Phase], skipped: &BTreeMap<String, String>) -> Vec<String> {
    let mut ids: BTreeSet<String> = skipped.keys().cloned().collect();
    ids.extend(to_run.iter().map(|p| p.id.clone()));
    ids.into_iter().collect()
}

/// Appends one phase's drafted events to the run (applying its plan changes where it made
/// them) and adds its evidence and budget usage.
fn merge(st: &mut RunState<'_>, f: Finished<'_>, snapshot: &Budget) -> PhaseOutcome {
    let Finished { ctx, outcome } = f;
    let changes: BTreeMap<usize, super::PlanChange> = ctx
        .plan_changes
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.event, c))
        .collect();
    for (i, mut e) in ctx.log.into_events().into_iter().enumerate() {
        if let Some(c) = changes.get(&i) {
            if let Some(status) = c.status {
                st.plan.set_status(&c.phase, status);
            }
            if let Some(criteria) = &c.criteria {
                let criteria = (!criteria.is_empty()).then(|| criteria.clone());
                st.plan.revise(&c.phase, criteria);
            }
            e.payload["plan"] = serde_json::to_value(&st.plan).unwrap_or_default();
        }
        st.log.append_drafted(e);
    }
    for (id, ledger) in ctx.validity {
        st.validity.entry(id).or_insert(ledger);
    }
    st.evidence.extend(ctx.evidence);
    let used = &ctx.run_budget;
    let b = &mut st.run_budget;
    b.iterations = b
        .iterations
        .saturating_add(used.iterations.saturating_sub(snapshot.iterations));
    b.tool_calls = b
        .tool_calls
        .saturating_add(used.tool_calls.saturating_sub(snapshot.tool_calls));
    b.tokens = b
        .tokens
        .saturating_add(used.tokens.saturating_sub(snapshot.tokens));
    if st.halt.is_none() {
        st.halt = ctx.halt;
    }
    outcome
}

/// Paths written by more than one phase of the wave: (path, first phase, later phase) for
/// each later writer, by path then phase id.
fn write_races(to_run: &[&Phase], finished: &[Finished<'_>]) -> Vec<(String, String, String)> {
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    let mut races = Vec::new();
    for (ph, f) in to_run.iter().zip(finished) {
        for path in f.ctx.exec.written_paths() {
            match owner.get(path.as_str()) {
                Some(first) => races.push((path.clone(), (*first).to_owned(), ph.id.clone())),
                None => {
                    owner.insert(path, &ph.id);
                }
            }
        }
    }
    races.sort();
    races
}

/// Reports a write race and fails the later phase (once).
fn report_race(
    st: &mut RunState<'_>,
    to_run: &[&Phase],
    outcomes: &mut [PhaseOutcome],
    path: &str,
    first: &str,
    later: &str,
) {
    st.emit(
        EventType::Error,
        json!({"phase": later, "code": "write_race", "path": path, "phases": [first, later],
               "message": format!("phases {first} and {later} of the same wave both wrote {path}; independent phases run concurrently and must own their outputs (guide \"Output coordination\")")}),
    );
    let Some(out) = to_run
        .iter()
        .position(|p| p.id == later)
        .and_then(|i| outcomes.get_mut(i))
    else {
        return;
    };
    if out.status == PhaseStatus::Failed {
        return;
    }
    let from = out.status.as_str();
    st.phase_state(
        later,
        from,
        "failed",
        json!({"attempts": out.attempts, "stopReason": "write_race"}),
    );
    st.plan_status(later, StepStatus::Failed);
    out.status = PhaseStatus::Failed;
    out.stop_reason = "write_race".into();
}
