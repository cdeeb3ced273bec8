//! Thread DAG insertion (v1.1 §10.2, §10.7) and rendering order (§10.3).

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::id::EnvelopeId;
use loom_protocol::thread::{ThreadDag, ThreadLimits, rendering_order};
use loom_protocol::{ProtocolError, Timestamp};
use serde_json::{Value, json};

/// One envelope header: its id, parent (`Err` when `parent_id` is not one ID or null) and time.
struct Header {
    id: EnvelopeId,
    parent: Result<Option<EnvelopeId>, String>,
    created_at: Timestamp,
}

fn header(v: &Value) -> Result<Header, BadRequest> {
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| EnvelopeId::parse(s).ok())
        .ok_or("envelope id must be an env_ ID")?;
    let created_at = v
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|s| Timestamp::parse(s).ok())
        .ok_or("created_at must be a timestamp")?;
    let parent = match v.get("parent_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => EnvelopeId::parse(s).map(Some).map_err(|e| e.to_string()),
        Some(other) => Err(format!(
            "parent_id must be a single env_ ID or null, not {other} (v1.1 §10.2 single parent)"
        )),
    };
    Ok(Header {
        id,
        parent,
        created_at,
    })
}

fn headers(input: Input<'_>) -> Result<Vec<Header>, BadRequest> {
    input
        .value("envelopes")?
        .as_array()
        .ok_or("envelopes must be an array")?
        .iter()
        .map(header)
        .collect()
}

fn limit(limits: &Value, name: &str) -> Result<usize, BadRequest> {
    limits
        .get(name)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("limits.{name} must be a non-negative integer"))
}

fn rejected(e: &ProtocolError) -> Answer {
    Answer::invalid(e.code.as_str(), e.to_string())
}

/// `insert-envelopes`: inserts `envelopes` in order under `limits`; the output lists the ids
/// marked `pending_parent` on insertion and those still unresolved at the end.
pub fn insert_envelopes(input: Input<'_>) -> Result<Answer, BadRequest> {
    let limits = input.value("limits")?;
    let limits = ThreadLimits {
        max_envelopes_per_thread: limit(limits, "max_envelopes_per_thread")?,
        max_pending_parents: limit(limits, "max_pending_parents")?,
    };
    let mut dag = ThreadDag::new();
    let mut pending = vec![];
    for h in headers(input)? {
        let parent = match h.parent {
            Ok(p) => p,
            Err(why) => return Ok(Answer::invalid("ENVELOPE_INVALID", why)),
        };
        match dag.insert(h.id, parent, h.created_at, &limits) {
            Ok(ins) if ins.pending_parent => pending.push(h.id.to_string()),
            Ok(_) => {}
            Err(e) => return Ok(rejected(&e)),
        }
    }
    let unresolved: Vec<String> = dag
        .iter()
        .filter(|(_, e)| e.parent.is_some_and(|p| !dag.contains(&p)))
        .map(|(id, _)| id.to_string())
        .collect();
    Ok(Answer::valid(
        json!({"pending_parent": pending, "unresolved": unresolved}),
    ))
}

/// `rendering-order`: the §10.3 order of `envelopes` (inserted without limits).
pub fn rendering_order_kind(input: Input<'_>) -> Result<Answer, BadRequest> {
    let none = ThreadLimits {
        max_envelopes_per_thread: 0,
        max_pending_parents: 0,
    };
    let mut dag = ThreadDag::new();
    for h in headers(input)? {
        let parent = h
            .parent
            .map_err(|e| format!("rendering-order input: {e}"))?;
        dag.insert(h.id, parent, h.created_at, &none)
            .map_err(|e| format!("rendering-order input is not a valid DAG: {e}"))?;
    }
    let order: Vec<String> = rendering_order(&dag)
        .iter()
        .map(ToString::to_string)
        .collect();
    Ok(Answer::valid(order))
}
