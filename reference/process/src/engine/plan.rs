//! loop-engine "Plan Schema": `{version, goal, steps: [{id, title, criteria, status, done,
//! hardStop}]}`. The runner keeps one step per phase and bumps `version` on every change
//! (each change is a `PlanUpdated` event).

use serde::{Deserialize, Serialize};

/// A step's status. The schema shows `pending`; the others are this runner's lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Running.
    InProgress,
    /// Completed successfully.
    Done,
    /// Failed.
    Failed,
    /// Not run (a dependency failed, or skipped by phase mode).
    Skipped,
}

/// One plan step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// Step id (the phase id).
    pub id: String,
    /// Title (the phase description's first line).
    pub title: String,
    /// Completion criteria (acceptance criteria, deliverables).
    pub criteria: Vec<String>,
    /// Status.
    pub status: StepStatus,
    /// `status == done`.
    pub done: bool,
    /// Failure here stops the run (a critical-path phase).
    pub hard_stop: bool,
}

/// The plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Bumped on every change; starts at 1.
    pub version: u32,
    /// The goal.
    pub goal: String,
    /// Steps.
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// A version-1 plan of pending steps.
    pub fn new(goal: &str, steps: Vec<PlanStep>) -> Self {
        Plan {
            version: 1,
            goal: goal.to_owned(),
            steps,
        }
    }

    /// Sets a step's status; returns whether anything changed (and bumps the version if so).
    pub fn set_status(&mut self, id: &str, status: StepStatus) -> bool {
        let Some(step) = self.steps.iter_mut().find(|s| s.id == id) else {
            return false;
        };
        if step.status == status {
            return false;
        }
        step.status = status;
        step.done = status == StepStatus::Done;
        self.version += 1;
        true
    }

    /// Revises a step after a replan: its criteria are replaced when `criteria` is given; the
    /// version is bumped either way (the step's plan changed). Returns whether the step exists.
    pub fn revise(&mut self, id: &str, criteria: Option<Vec<String>>) -> bool {
        let Some(step) = self.steps.iter_mut().find(|s| s.id == id) else {
            return false;
        };
        if let Some(c) = criteria {
            step.criteria = c;
        }
        self.version += 1;
        true
    }

    /// A step by id.
    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.steps.iter().find(|s| s.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        Plan::new(
            "Fix failing tests",
            vec![PlanStep {
                id: "step-1".into(),
                title: "Run tests".into(),
                criteria: vec!["tests pass".into()],
                status: StepStatus::Pending,
                done: false,
                hard_stop: false,
            }],
        )
    }

    #[test]
    fn serializes_like_the_schema_example() {
        let v = serde_json::to_value(plan()).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"version": 1, "goal": "Fix failing tests", "steps": [{"id": "step-1", "title": "Run tests", "criteria": ["tests pass"], "status": "pending", "done": false, "hardStop": false}]})
        );
    }

    #[test]
    fn status_changes_bump_the_version_once() {
        let mut p = plan();
        assert!(p.set_status("step-1", StepStatus::InProgress));
        assert!(!p.set_status("step-1", StepStatus::InProgress));
        assert!(p.set_status("step-1", StepStatus::Done));
        assert!(!p.set_status("nope", StepStatus::Done));
        assert_eq!(p.version, 3);
        assert!(p.step("step-1").unwrap().done);
        assert!(p.revise("step-1", Some(vec!["smaller diff".into()])));
        assert_eq!(p.version, 4);
        assert_eq!(p.step("step-1").unwrap().criteria, ["smaller diff"]);
        assert!(p.revise("step-1", None) && p.version == 5);
        assert!(!p.revise("nope", None));
    }
}
