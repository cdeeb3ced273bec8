//! Task state machine (v1.1 §18.3, v1.0 §17.3).

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::task::{TaskRole, TaskState, check_task_transition};
use serde_json::{Value, json};

fn state(input: Input<'_>, name: &str) -> Result<TaskState, BadRequest> {
    let s = input.str(name)?;
    TaskState::parse(s).ok_or_else(|| format!("{name}: unknown task state {s:?}"))
}

fn role(v: &Value) -> Result<TaskRole, BadRequest> {
    match v.as_str() {
        Some("thread_owner") => Ok(TaskRole::ThreadOwner),
        Some("creator") => Ok(TaskRole::Creator),
        Some("assignee") => Ok(TaskRole::Assignee),
        _ => Err(format!("actor_roles: unknown role {v}")),
    }
}

/// `task-transition`: may an actor holding `actor_roles` move a task from `from` to `to`?
pub fn task_transition(input: Input<'_>) -> Result<Answer, BadRequest> {
    let from = state(input, "from")?;
    let to = state(input, "to")?;
    let roles = input
        .value("actor_roles")?
        .as_array()
        .ok_or("actor_roles must be an array")?
        .iter()
        .map(role)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match check_task_transition(from, to, &roles) {
        Ok(()) => Answer::valid(json!({"state": to.as_str()})),
        Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
    })
}
