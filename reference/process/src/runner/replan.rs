//! Replanning after an exhausted iteration loop (guide "Replanning": "declares when the
//! engine should re-plan and how to adapt"; "Phase iteration loops": `replan_on_exhaustion`,
//! `max_replans_after_exhaustion`; "Planner examples": few-shot examples for the planner).
//!
//! The planner ([`crate::engine::planner::Planner`]) gets the loop's last failures, the
//! process's replanning triggers and guidance, its planner examples and the step's current
//! criteria. Its answer is one `TaskUpdated` `{phase, replan: {number, status, planner,
//! message, instructions?}}`; an accepted replan also revises the plan step (criteria
//! replaced when given) with a `PlanUpdated` whose plan `version` is bumped.

use super::{PlanChange, RunState, prompt};
use crate::engine::event::EventType;
use crate::engine::model::{ModelRequest, Purpose, ReplanContext};
use crate::package::Phase;
use serde_json::json;

/// Asks the planner for replan `number` of `ph`; on acceptance records the revision and
/// pushes its instructions to `notes`. Returns whether the replan was accepted.
pub(crate) fn ask(
    st: &mut RunState<'_>,
    ph: &Phase,
    number: u32,
    failures: &[String],
    notes: &mut Vec<String>,
) -> bool {
    let Some(planner) = st.env.planner.clone() else {
        return false;
    };
    st.phase_state(&ph.id, "running", "replanning", json!({"replan": number}));
    let replanning = st.process.replanning.clone().unwrap_or_default();
    let ctx = ReplanContext {
        replan: number,
        failures: failures.to_vec(),
        triggers: replanning.triggers.unwrap_or_default(),
        guidance: replanning.guidance.unwrap_or_default(),
        examples: serde_json::to_value(&st.process.planner_examples).unwrap_or_default(),
        criteria: st
            .plan
            .step(&ph.id)
            .map(|s| s.criteria.clone())
            .unwrap_or_default(),
    };
    let req = ModelRequest {
        purpose: Purpose::Replan(ctx),
        system: prompt::system_prompt(st.process, ph, None),
        goal: st.req.goal.clone(),
        phase_id: ph.id.clone(),
        phase_description: ph.description.clone(),
        attempt: 0,
        turn: 1,
        observations: Vec::new(),
        feedback: Vec::new(),
        model_tier: 3,
    };
    let answer = planner.replan(&req);
    let (accepted, payload) = match answer {
        Err(e) => (
            None,
            json!({"number": number, "status": "error", "planner": planner.name(), "message": e.0}),
        ),
        Ok(a) => {
            st.run_budget.tokens = st.run_budget.tokens.saturating_add(a.tokens);
            match a.replan {
                None => (
                    None,
                    json!({"number": number, "status": "declined", "planner": planner.name(), "message": a.message}),
                ),
                Some(r) => (
                    Some(r.clone()),
                    json!({"number": number, "status": "accepted", "planner": planner.name(),
                           "message": a.message, "instructions": r.instructions, "criteria": r.criteria}),
                ),
            }
        }
    };
    st.emit(
        EventType::TaskUpdated,
        json!({"phase": ph.id, "replan": payload}),
    );
    st.phase_state(&ph.id, "replanning", "running", json!({"replan": number}));
    let Some(r) = accepted else {
        return false;
    };
    revise(st, &ph.id, &r.criteria);
    notes.push(format!("Replan {number}: {}", r.instructions.trim()));
    true
}

/// Revises the plan step of `phase` (criteria replaced when non-empty; version bumped) and
/// emits the `PlanUpdated`.
fn revise(st: &mut RunState<'_>, phase: &str, criteria: &[String]) {
    let criteria = (!criteria.is_empty()).then(|| criteria.to_vec());
    st.plan.revise(phase, criteria.clone());
    if let Some(changes) = st.plan_changes.as_mut() {
        changes.push(PlanChange {
            event: st.log.events().len(),
            phase: phase.to_owned(),
            status: None,
            criteria: Some(criteria.unwrap_or_default()),
        });
        st.emit(
            EventType::PlanUpdated,
            json!({"plan": null, "reason": "replan", "phase": phase}),
        );
    } else {
        let plan = serde_json::to_value(&st.plan).unwrap_or_default();
        st.emit(
            EventType::PlanUpdated,
            json!({"plan": plan, "reason": "replan", "phase": phase}),
        );
    }
}
