//! Area `task-state`: the task state machine (v1.1 §18.3 states; v1.0 §17.3 transitions and
//! who may trigger them). Every (from, to) pair of the nine states, self-transitions included,
//! is a literal of [`MATRIX`]; every (transition, role) pair is a literal of [`WHO`].

use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use serde_json::{Value, json};

/// The nine task states of v1.1 §18.3, in the order of [`MATRIX`]'s rows and columns.
const STATES: [&str; 9] = [
    "created",
    "assigned",
    "accepted",
    "in_progress",
    "blocked",
    "completed",
    "failed",
    "declined",
    "cancelled",
];

/// v1.0 §17.3 "State transition rules", one row per `from` state, one column per `to` state
/// (order of [`STATES`]): `Y` = the table lists the transition, `.` = it does not.
const MATRIX: [&str; 9] = [
    //  cr as ac ip bl co fa de ca
    ".Y.......", // created
    "..Y....YY", // assigned
    "...Y.....", // accepted
    "....YYY..", // in_progress
    "...Y.....", // blocked
    ".........", // completed
    ".........", // failed
    ".........", // declined
    ".........", // cancelled
];

/// The roles an actor can hold towards a task.
const ROLES: [&str; 3] = ["thread_owner", "creator", "assignee"];

/// v1.0 §17.3 "Who Can Trigger", per listed transition: for each of [`ROLES`], whether that
/// role alone may trigger it.
const WHO: [(&str, &str, [bool; 3]); 9] = [
    ("created", "assigned", [true, true, false]),
    ("assigned", "accepted", [false, false, true]),
    ("assigned", "declined", [false, false, true]),
    ("assigned", "cancelled", [true, true, false]),
    ("accepted", "in_progress", [false, false, true]),
    ("in_progress", "completed", [false, false, true]),
    ("in_progress", "failed", [false, false, true]),
    ("in_progress", "blocked", [false, false, true]),
    ("blocked", "in_progress", [true, false, true]),
];

const SPEC: &[&str] = &["v1.1 §18.3", "v1.0 §17.3"];

fn case(id: &str, comment: &str, from: &str, to: &str, roles: &[&str]) -> Case {
    Case::new(id, comment, SPEC)
        .input("from", from)
        .input("to", to)
        .input("actor_roles", roles.to_vec())
}

fn pair_cases() -> Vec<Case> {
    let mut out = vec![];
    for (row, from) in MATRIX.iter().zip(STATES) {
        for (mark, to) in row.chars().zip(STATES) {
            let id = format!("pair.{from}.{to}");
            let c = |comment: String| case(&id, &comment, from, to, &ROLES);
            out.push(match (mark, from == to) {
                ('Y', _) => c(format!(
                    "{from} → {to} is in the table; the actor holds every role"
                ))
                .flags(&["ListedTransition"])
                .valid_with(json!({"state": to})),
                (_, true) => c(format!(
                    "{from} → {from}: the table never moves a task to the state it is in"
                ))
                .flags(&["SelfTransition"])
                .invalid("STATE_TRANSITION_INVALID"),
                _ if TERMINAL.contains(&from) => {
                    c(format!("{from} is terminal: no row of the table leaves it"))
                        .flags(&["FromTerminal"])
                        .invalid("STATE_TRANSITION_INVALID")
                }
                _ => c(format!(
                    "{from} → {to} is not in the table, even for an actor holding every role"
                ))
                .flags(&["UnlistedTransition"])
                .invalid("STATE_TRANSITION_INVALID"),
            });
        }
    }
    out
}

/// States no row of the v1.0 §17.3 table leaves.
const TERMINAL: [&str; 4] = ["completed", "failed", "declined", "cancelled"];

fn who_cases() -> Vec<Case> {
    let mut out = vec![];
    for (from, to, allowed) in WHO {
        for (role, ok) in ROLES.iter().zip(allowed) {
            let id = format!("who.{from}.{to}.{role}");
            out.push(if ok {
                case(
                    &id,
                    &format!("{role} may trigger {from} → {to}"),
                    from,
                    to,
                    &[role],
                )
                .flags(&["AuthorizedActor"])
                .valid_with(json!({"state": to}))
            } else {
                case(
                    &id,
                    &format!("{role} is not listed for {from} → {to}"),
                    from,
                    to,
                    &[role],
                )
                .flags(&["UnauthorizedActor", "Interpretation"])
                .invalid("CAPABILITY_DENIED")
            });
        }
        let comment =
            format!("an identity with no relation to the task cannot trigger {from} → {to}");
        out.push(
            case(&format!("who.{from}.{to}.other"), &comment, from, to, &[])
                .flags(&["UnauthorizedActor", "Interpretation"])
                .invalid("CAPABILITY_DENIED"),
        );
    }
    out
}

/// (id, comment, from, to, actor_roles, Ok(new state) | Err(error code), flags)
type Extra = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Result<&'static str, &'static str>,
    &'static [&'static str],
);

const EXTRA: [Extra; 6] = [
    (
        "order.unlisted-and-unauthorized",
        "created → completed is no transition at all: the transition error comes before the actor check",
        "created",
        "completed",
        &[],
        Err("STATE_TRANSITION_INVALID"),
        &["UnlistedTransition", "Interpretation"],
    ),
    (
        "order.terminal-and-unauthorized",
        "reassigning a cancelled task fails on the terminal state, whoever asks",
        "cancelled",
        "assigned",
        &["assignee"],
        Err("STATE_TRANSITION_INVALID"),
        &["FromTerminal", "Interpretation"],
    ),
    (
        "roles.two-roles-one-listed",
        "an assignee who also created the task may cancel it as its creator",
        "assigned",
        "cancelled",
        &["assignee", "creator"],
        Ok("cancelled"),
        &["AuthorizedActor"],
    ),
    (
        "roles.owner-and-assignee-unblock",
        "unblock by an actor holding both listed roles",
        "blocked",
        "in_progress",
        &["thread_owner", "assignee"],
        Ok("in_progress"),
        &["AuthorizedActor"],
    ),
    (
        "roles.owner-cannot-complete",
        "only the assignee completes a task, not its creator nor the thread owner",
        "in_progress",
        "completed",
        &["thread_owner", "creator"],
        Err("CAPABILITY_DENIED"),
        &["UnauthorizedActor", "Interpretation"],
    ),
    (
        "roles.everyone-cannot-skip-accept",
        "work cannot start before the assignee accepts: assigned → in_progress is not listed",
        "assigned",
        "in_progress",
        &["thread_owner", "creator", "assignee"],
        Err("STATE_TRANSITION_INVALID"),
        &["UnlistedTransition"],
    ),
];

fn extra_cases() -> Vec<Case> {
    EXTRA
        .iter()
        .map(|(id, comment, from, to, roles, outcome, flags)| {
            let c = case(id, comment, from, to, roles).flags(flags);
            match outcome {
                Ok(s) => c.valid_with(json!({"state": s})),
                Err(code) => c.invalid(code),
            }
        })
        .collect()
}

/// Builds `v1/task-state.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "task-state",
        "The task state machine (v1.1 §18.3; transitions and who may trigger them from the v1.0 §17.3 table). Each test asks whether an actor holding 'actor_roles' may record a task.state_update@v1 moving a task from 'from' to 'to'.",
    )
    .note("ListedTransition", "A transition listed in the v1.0 §17.3 table, by an actor holding every role.", "over-strict state machine", "Legitimate task progress is refused.")
    .note("SelfTransition", "A transition from a state to itself, which the table does not list.", "missing self-loop check", "Duplicate state updates pollute the audit trail and re-trigger automation.")
    .note("FromTerminal", "A transition out of completed, failed, declined or cancelled, which no row of the table leaves.", "terminal state reopened", "Finished or cancelled tasks come back to life.")
    .note("UnlistedTransition", "A transition between two non-terminal states that the table does not list.", "lenient state machine", "Steps such as acceptance are skipped.")
    .note("AuthorizedActor", "An actor holding a role the 'Who Can Trigger' column lists.", "over-strict authorization", "The right person cannot move the task.")
    .note("UnauthorizedActor", "An actor holding none of the roles the 'Who Can Trigger' column lists.", "missing authorization check", "Anyone in the thread can accept, complete or cancel someone else's task.")
    .note("Interpretation", "The spec does not name the error code or the order of checks: these vectors pin loom-protocol's documented reading (task.rs: an impossible transition is STATE_TRANSITION_INVALID and is checked first; an actor without a listed role is CAPABILITY_DENIED, the §24.2 code for a missing authorization).", "divergent error code", "Clients cannot tell a forbidden actor from an impossible transition.")
    .group("task-transition", Value::Null)
    .tests(pair_cases())
    .tests(who_cases())
    .tests(extra_cases())
}

/// The schema of `v1/task-state.json`.
pub fn schema() -> AreaSchema {
    let state = json!({"enum": STATES});
    AreaSchema {
        kinds: vec!["task-transition"],
        inputs: vec![
            ("from", state.clone()),
            ("to", state.clone()),
            (
                "actor_roles",
                json!({"type": "array", "items": {"enum": ROLES}, "uniqueItems": true}),
            ),
        ],
        required: vec!["from", "to", "actor_roles"],
        expected: json!({"type": "object", "additionalProperties": false, "required": ["state"], "properties": {"state": state}}),
        errors: vec!["STATE_TRANSITION_INVALID", "CAPABILITY_DENIED"],
    }
}
