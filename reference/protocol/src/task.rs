//! The task state machine (v1.1 §18.3 states; transitions and who may trigger them from
//! v1.0 §17.3, which v1.1 keeps). Each transition is recorded as a `task.state_update@v1`
//! envelope; a node checks it with [`check_task_transition`] before accepting it.

use crate::error::{ErrorCode, ProtocolError};
use serde::{Deserialize, Serialize};

/// Task states (v1.1 §18.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Created, not yet assigned.
    Created,
    /// Assigned to an identity.
    Assigned,
    /// Accepted by the assignee.
    Accepted,
    /// Work in progress.
    InProgress,
    /// Blocked on a dependency.
    Blocked,
    /// Done.
    Completed,
    /// Could not be completed.
    Failed,
    /// Declined by the assignee.
    Declined,
    /// Cancelled by the creator or owner.
    Cancelled,
}

impl TaskState {
    /// Every state.
    pub const ALL: [TaskState; 9] = [
        TaskState::Created,
        TaskState::Assigned,
        TaskState::Accepted,
        TaskState::InProgress,
        TaskState::Blocked,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Declined,
        TaskState::Cancelled,
    ];

    /// Wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskState::Created => "created",
            TaskState::Assigned => "assigned",
            TaskState::Accepted => "accepted",
            TaskState::InProgress => "in_progress",
            TaskState::Blocked => "blocked",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Declined => "declined",
            TaskState::Cancelled => "cancelled",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// True for states no transition leaves.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Declined | TaskState::Cancelled
        )
    }
}

/// The relationships to a task that entitle an identity to move it (v1.0 §17.3 "Who Can Trigger").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskRole {
    /// Owner of the task's thread.
    ThreadOwner,
    /// Sender of the `task.create` envelope.
    Creator,
    /// The identity the task is assigned to.
    Assignee,
}

/// Who may trigger `from → to`, or `None` if the transition does not exist (v1.0 §17.3 table).
pub fn transition_triggers(from: TaskState, to: TaskState) -> Option<&'static [TaskRole]> {
    use TaskRole::*;
    use TaskState::*;
    Some(match (from, to) {
        (Created, Assigned) => &[ThreadOwner, Creator],
        (Assigned, Accepted) | (Assigned, Declined) => &[Assignee],
        (Assigned, Cancelled) => &[Creator, ThreadOwner],
        (Accepted, InProgress) => &[Assignee],
        (InProgress, Completed) | (InProgress, Failed) | (InProgress, Blocked) => &[Assignee],
        (Blocked, InProgress) => &[Assignee, ThreadOwner],
        _ => return None,
    })
}

/// Checks a `task.state_update@v1` transition and the actor's right to make it.
/// An impossible transition is `STATE_TRANSITION_INVALID`; an actor without one of the
/// required roles is `CAPABILITY_DENIED`.
pub fn check_task_transition(
    from: TaskState,
    to: TaskState,
    actor_roles: &[TaskRole],
) -> Result<(), ProtocolError> {
    let Some(allowed) = transition_triggers(from, to) else {
        return Err(ProtocolError::new(
            ErrorCode::StateTransitionInvalid,
            "content.structured.parameters.state",
            format!(
                "a task cannot move from {} to {}",
                from.as_str(),
                to.as_str()
            ),
            "v1.1 §18.3",
        ));
    };
    if !actor_roles.iter().any(|r| allowed.contains(r)) {
        return Err(ProtocolError::new(
            ErrorCode::CapabilityDenied,
            "from.identity",
            format!(
                "{} → {} may be triggered only by {}",
                from.as_str(),
                to.as_str(),
                allowed
                    .iter()
                    .map(|r| format!("{r:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ),
            "v1.0 §17.3",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_pair_is_decided_by_the_table() {
        let valid = [
            ("created", "assigned"),
            ("assigned", "accepted"),
            ("assigned", "declined"),
            ("assigned", "cancelled"),
            ("accepted", "in_progress"),
            ("in_progress", "completed"),
            ("in_progress", "failed"),
            ("in_progress", "blocked"),
            ("blocked", "in_progress"),
        ];
        let all_roles = [TaskRole::ThreadOwner, TaskRole::Creator, TaskRole::Assignee];
        let mut allowed = 0;
        for from in TaskState::ALL {
            for to in TaskState::ALL {
                let expect = valid.contains(&(from.as_str(), to.as_str()));
                let got = check_task_transition(from, to, &all_roles);
                assert_eq!(got.is_ok(), expect, "{} -> {}", from.as_str(), to.as_str());
                if let Err(e) = got {
                    assert_eq!(e.code, ErrorCode::StateTransitionInvalid);
                } else {
                    allowed += 1;
                }
            }
        }
        assert_eq!(allowed, 9);
        for t in TaskState::ALL.into_iter().filter(|t| t.is_terminal()) {
            assert!(
                TaskState::ALL
                    .iter()
                    .all(|to| transition_triggers(t, *to).is_none())
            );
        }
    }

    #[test]
    fn only_the_listed_roles_may_trigger() {
        use TaskRole::*;
        use TaskState::*;
        assert!(check_task_transition(Assigned, Accepted, &[Assignee]).is_ok());
        let e = check_task_transition(Assigned, Accepted, &[Creator, ThreadOwner]).unwrap_err();
        assert_eq!(e.code, ErrorCode::CapabilityDenied);
        assert!(check_task_transition(Assigned, Cancelled, &[Creator]).is_ok());
        assert!(check_task_transition(Assigned, Cancelled, &[Assignee]).is_err());
        assert!(check_task_transition(Blocked, InProgress, &[ThreadOwner]).is_ok());
        assert!(check_task_transition(Created, Assigned, &[Assignee]).is_err());
        assert!(check_task_transition(Created, Assigned, &[]).is_err());
    }

    #[test]
    fn wire_names_round_trip() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(TaskState::parse("done"), None);
    }
}
