//! Thread operations on a thread's state (v1.1 §10.4, §10.6, §11.2–§11.4, §11.7).

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::Timestamp;
use loom_protocol::thread::{
    Fork, LinkedThread, Participant, ParticipantRole, ThreadOp, ThreadState, ThreadStatus,
};
use loom_protocol::{Address, EnvelopeId, ThreadId};
use serde_json::{Value, json};

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, BadRequest> {
    v.get(name)
        .ok_or_else(|| format!("thread.{name} is missing"))
}

fn text<'a>(v: &'a Value, name: &str) -> Result<&'a str, BadRequest> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| format!("{name} must be a string"))
}

fn number(v: &Value, name: &str) -> Result<u64, BadRequest> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| format!("{name} must be a non-negative integer"))
}

fn array<'a>(v: &'a Value, name: &str) -> Result<&'a Vec<Value>, BadRequest> {
    field(v, name)?
        .as_array()
        .ok_or_else(|| format!("{name} must be an array"))
}

fn time(s: &str) -> Result<Timestamp, BadRequest> {
    Timestamp::parse(s).map_err(|e| e.to_string())
}

fn status(s: &str) -> Result<ThreadStatus, BadRequest> {
    ThreadStatus::parse(s).ok_or_else(|| format!("unknown state {s:?}"))
}

fn thread_id(s: &str) -> Result<ThreadId, BadRequest> {
    ThreadId::parse(s).map_err(|e| e.to_string())
}

fn participant(p: &Value) -> Result<(Address, Participant), BadRequest> {
    let role = match text(p, "role")? {
        "owner" => ParticipantRole::Owner,
        "participant" => ParticipantRole::Participant,
        "observer" => ParticipantRole::Observer,
        other => return Err(format!("unknown role {other:?}")),
    };
    let left_at = match field(p, "left_at")? {
        Value::Null => None,
        v => Some(time(v.as_str().ok_or("left_at must be a string or null")?)?),
    };
    let who = Address::parse_wire(text(p, "identity")?).map_err(|e| e.reason.to_owned())?;
    Ok((
        who,
        Participant {
            role,
            joined_at: time(text(p, "joined_at")?)?,
            left_at,
        },
    ))
}

fn fork(f: &Value) -> Result<Fork, BadRequest> {
    let forked_from = match field(f, "forked_from")? {
        Value::Null => None,
        v => Some(
            EnvelopeId::parse(v.as_str().ok_or("forked_from must be a string")?)
                .map_err(|e| e.to_string())?,
        ),
    };
    Ok(Fork {
        fork_id: thread_id(text(f, "fork_id")?)?,
        forked_from,
        state: status(text(f, "state")?)?,
    })
}

/// The thread object of the vectors (v1.1 §10.1 members plus `last_event_seq`).
fn thread_from_json(t: &Value) -> Result<ThreadState, BadRequest> {
    let encryption = field(t, "encryption")?;
    Ok(ThreadState {
        id: thread_id(text(t, "id")?)?,
        state: status(text(t, "state")?)?,
        subject: field(t, "subject")?.as_str().map(str::to_owned),
        labels: array(t, "labels")?
            .iter()
            .map(|l| l.as_str().map(str::to_owned).ok_or("labels are strings"))
            .collect::<Result<_, _>>()?,
        participants: array(t, "participants")?
            .iter()
            .map(participant)
            .collect::<Result<_, _>>()?,
        cap_epoch: number(t, "cap_epoch")?,
        forks: array(t, "forks")?
            .iter()
            .map(fork)
            .collect::<Result<_, _>>()?,
        linked_threads: array(t, "linked_threads")?
            .iter()
            .map(|l| {
                Ok(LinkedThread {
                    thread_id: thread_id(text(l, "thread_id")?)?,
                    relation: text(l, "relation")?.to_owned(),
                })
            })
            .collect::<Result<_, BadRequest>>()?,
        encryption_enabled: field(encryption, "enabled")?
            .as_bool()
            .ok_or("encryption.enabled must be a boolean")?,
        key_epoch: number(encryption, "key_epoch")?,
        encryption_profile: None,
        replay: Default::default(),
        last_event_seq: number(t, "last_event_seq")?,
    })
}

fn role_name(r: ParticipantRole) -> &'static str {
    match r {
        ParticipantRole::Owner => "owner",
        ParticipantRole::Participant => "participant",
        ParticipantRole::Observer => "observer",
    }
}

fn thread_to_json(t: &ThreadState) -> Value {
    json!({
        "id": t.id.to_string(),
        "state": t.state.as_str(),
        "subject": t.subject,
        "labels": t.labels,
        "participants": t.participants.iter().map(|(who, p)| json!({
            "identity": who.to_string(),
            "role": role_name(p.role),
            "joined_at": p.joined_at.to_rfc3339(),
            "left_at": p.left_at.map(Timestamp::to_rfc3339),
        })).collect::<Vec<_>>(),
        "cap_epoch": t.cap_epoch,
        "forks": t.forks.iter().map(|f| json!({
            "fork_id": f.fork_id.to_string(),
            "forked_from": f.forked_from.map(|e| e.to_string()),
            "state": f.state.as_str(),
        })).collect::<Vec<_>>(),
        "linked_threads": t.linked_threads.iter().map(|l| json!({
            "thread_id": l.thread_id.to_string(),
            "relation": l.relation,
        })).collect::<Vec<_>>(),
        "encryption": {"enabled": t.encryption_enabled, "key_epoch": t.key_epoch},
        "last_event_seq": t.last_event_seq,
    })
}

fn operation(env: &Value) -> Result<(u64, ThreadOp), BadRequest> {
    let seq = env
        .pointer("/meta/event_seq")
        .and_then(Value::as_u64)
        .ok_or("operation meta.event_seq must be a non-negative integer")?;
    let op = ThreadOp::from_envelope(env).map_err(|e| e.to_string())?;
    Ok((seq, op))
}

/// `apply-thread-op`: `operation` applied to `thread`; the output is the new thread.
pub fn apply_thread_op(input: Input<'_>) -> Result<Answer, BadRequest> {
    let mut thread = thread_from_json(input.value("thread")?)?;
    let (seq, op) = operation(input.value("operation")?)?;
    Ok(match thread.apply(seq, &op) {
        Ok(()) => Answer::valid(thread_to_json(&thread)),
        Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
    })
}

/// `replay-thread-ops`: `operations` applied in `meta.event_seq` order; the output is the
/// final thread and each operation's outcome (`applied` or its error code), by event_seq.
pub fn replay_thread_ops(input: Input<'_>) -> Result<Answer, BadRequest> {
    let mut thread = thread_from_json(input.value("thread")?)?;
    let ops = input
        .value("operations")?
        .as_array()
        .ok_or("operations must be an array")?
        .iter()
        .map(operation)
        .collect::<Result<Vec<_>, _>>()?;
    let outcomes: Vec<Value> = thread
        .replay(ops.iter().map(|(seq, op)| (*seq, op)))
        .into_iter()
        .map(|(seq, r)| {
            let outcome = r.map_or_else(|e| e.code.as_str(), |()| "applied");
            json!({"event_seq": seq, "outcome": outcome})
        })
        .collect();
    Ok(Answer::valid(
        json!({"thread": thread_to_json(&thread), "outcomes": outcomes}),
    ))
}
