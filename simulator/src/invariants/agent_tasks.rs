//! `agent-tasks` (`[agents]`): what the agents did, against the nodes' stores and the agents'
//! own journals.
//!
//! - Every task given ends in a terminal state (v1.1 §18.3) on every node holding it, within
//!   the human's documented timeout (`[agents] task_timeout_secs`) and the settle time:
//!   `declined` exactly when the work is beyond the agent's delegation (§13.2), never
//!   `completed` then.
//! - No task runs twice to completion: at most one stored `completed` update per task and
//!   node, at most one run that completed in the agent's journal and events.
//! - No run starts for work beyond the agent's delegation.
//! - Every envelope an agent sent carries `from.type = "agent"` and the chain it was enrolled
//!   with (§13.5, §18.2), whose link verifies under the delegator's key (§13.3.1), and an
//!   action within the chain's leaf scope (§13.3 step 6).

use super::{Found, Run};
use crate::agents::{Enrolled, is_terminal};
use loom_protocol::scope::scopes_allow;
use serde_json::Value;
use std::collections::BTreeMap;

const NAME: &str = "agent-tasks";

pub(super) fn check(run: &Run<'_>, found: &mut Found) {
    let a = run.agents;
    let scope_of: BTreeMap<&str, (&str, &str)> = a
        .tasks
        .iter()
        .map(|t| {
            (
                t.task_id.as_str(),
                (t.agent.as_str(), t.work_scope.as_str()),
            )
        })
        .collect();
    for t in &a.tasks {
        let Some(agent) = a.enrolled.get(&t.agent) else {
            found.push(
                NAME,
                format!("task {}: its agent {} never enrolled", t.task_id, t.agent),
            );
            continue;
        };
        let within = scopes_allow(&agent.scope, &t.work_scope);
        for (d, v) in &run.views {
            if run.permanently_down.contains(d) || !v.by_id.contains_key(&t.task_id) {
                continue;
            }
            let states: Vec<&str> = v
                .envelopes
                .iter()
                .filter_map(|e| e.body.as_ref())
                .filter(|b| {
                    b.pointer("/content/structured/intent")
                        .and_then(Value::as_str)
                        == Some("task.state_update@v1")
                        && b.pointer("/content/structured/parameters/task_id")
                            .and_then(Value::as_str)
                            == Some(&t.task_id)
                })
                .filter_map(|b| b.pointer("/content/structured/parameters/state")?.as_str())
                .collect();
            let last = states.last().copied().unwrap_or("created");
            if !is_terminal(last) {
                found.push(
                    NAME,
                    format!(
                        "task {} ({}, to {}) is still {last} on {d} at the end: every task must reach a terminal state (v1.1 §18.3) within task_timeout_secs",
                        t.task_id, t.work_scope, t.agent
                    ),
                );
            } else if !within && last != "declined" {
                found.push(
                    NAME,
                    format!(
                        "task {} asked {} for {}, beyond its delegation ({}), and ended {last} on {d}, not declined (v1.1 §13.2)",
                        t.task_id, t.agent, t.work_scope, agent.scope.join(", ")
                    ),
                );
            } else if within && last == "declined" {
                found.push(
                    NAME,
                    format!(
                        "task {} ({}) is within {}'s delegation but was declined on {d}",
                        t.task_id, t.work_scope, t.agent
                    ),
                );
            }
            let completed = states.iter().filter(|s| **s == "completed").count();
            if completed > 1 {
                found.push(
                    NAME,
                    format!(
                        "task {} was reported completed {completed} times on {d}",
                        t.task_id
                    ),
                );
            }
        }
    }
    let mut done: BTreeMap<&str, u32> = BTreeMap::new();
    for r in &a.runs {
        if r.finished == Some(true) {
            *done.entry(&r.task_id).or_default() += 1;
        }
        if let (Some((_, scope)), Some(agent)) =
            (scope_of.get(r.task_id.as_str()), a.enrolled.get(&r.agent))
            && !scopes_allow(&agent.scope, scope)
        {
            found.push(
                NAME,
                format!(
                    "{} ran task {} (run {}), which needs {scope}, beyond its delegation ({}; v1.1 §13.2)",
                    r.agent,
                    r.task_id,
                    r.attempt,
                    agent.scope.join(", ")
                ),
            );
        }
    }
    for (task, n) in done.iter().filter(|(_, n)| **n > 1) {
        found.push(
            NAME,
            format!("task {task} ran to completion {n} times (the agent's runs)"),
        );
    }
    for (agent, journal) in &a.journals {
        let Ok(j) = loom_agent::journal::JournalStore::load(journal) else {
            continue;
        };
        for (task, rec) in j.tasks.iter().filter(|(_, r)| r.completed_runs > 1) {
            found.push(
                NAME,
                format!(
                    "{agent}'s journal: task {task} ran to completion {} times",
                    rec.completed_runs
                ),
            );
        }
    }
    for (d, id, from, b) in run.stored_envelopes() {
        if let Some(agent) = a.enrolled.get(from) {
            agent_envelope(d, id, from, b, agent, found);
        }
    }
}

/// One envelope of an enrolled agent, as stored on `d`.
fn agent_envelope(d: &str, id: &str, from: &str, b: &Value, agent: &Enrolled, found: &mut Found) {
    if b.pointer("/from/type").and_then(Value::as_str) != Some("agent") {
        found.push(
            NAME,
            format!("{d}: {id} from {from} does not say from.type \"agent\" (v1.1 §18.2)"),
        );
    }
    let chain = b.pointer("/from/delegation_chain");
    if chain != Some(&agent.chain) {
        found.push(
            NAME,
            format!(
                "{d}: {id} from {from} does not carry the chain it was enrolled with (v1.1 §13.5)"
            ),
        );
    } else if let Some(link) = agent.chain.get(0)
        && let Some(obj) = link.as_object()
    {
        let keys = [(agent.delegator_key.0.clone(), agent.delegator_key.1)];
        let ok = loom_protocol::delegation::link_signature(obj).is_ok_and(|sig| {
            loom_protocol::delegation::verify_link_with(
                link,
                obj,
                &sig,
                &keys,
                &loom_protocol::delegation::ChainPolicy::default(),
            )
            .is_ok()
        });
        if !ok {
            found.push(
                NAME,
                format!(
                    "{d}: {id}: the delegation link does not verify under {}'s key (v1.1 §13.3.1)",
                    agent.delegator
                ),
            );
        }
    }
    let action = loom_protocol::delegation::envelope_action(b);
    if !scopes_allow(&agent.scope, &action) {
        found.push(
            NAME,
            format!(
                "{d}: {id} from {from}: action {action} is beyond the leaf scope {} (v1.1 §13.3 step 6)",
                agent.scope.join(", ")
            ),
        );
    }
}
