//! Area `thread-state`: thread operations applied to a thread's replicated state (v1.1 §10.4
//! state machine, §10.6 key epochs, §11.2 operations, §11.3 preconditions, §11.4 fork/merge/
//! link, §11.7 conflict resolution). Every (§10.4 state, §11.2 operation) pair is a literal of
//! [`PAIRS`]; what each operation changes is the literal patch of [`OPS`].
//!
//! Authorization (who may send an operation) is proven by a capability token in the
//! operation (v1.1 §12.4) and is the `capability-token` area's subject: every operation here
//! is taken as authorized.

use super::schema::AreaSchema;
use super::{Case, FileBuilder};
use serde_json::{Map, Value, json};

const THREAD: &str = "thr_01JN000000000000000000000T";
const FORK_1: &str = "thr_01JN000000000000000000000F";
const FORK_2: &str = "thr_01JN000000000000000000000G";
const OTHER: &str = "thr_01JN000000000000000000000K";
const ENV_A: &str = "env_01JN000000000000000000000A";
const ENV_B: &str = "env_01JN000000000000000000000B";
const JOINED: &str = "2026-03-01T09:00:00.000Z";
const OP_AT: &str = "2026-03-01T12:00:00.000Z";

fn who(name: &str) -> String {
    format!("loom://{name}@example.com")
}

fn member(name: &str, role: &str, joined_at: &str, left_at: Option<&str>) -> Value {
    json!({"identity": who(name), "role": role, "joined_at": joined_at, "left_at": left_at})
}

/// The starting thread: alice owns it, bob participates, carol observes; one active fork.
fn base(state: &str) -> Value {
    json!({
        "id": THREAD,
        "state": state,
        "subject": "Q1 invoice",
        "labels": ["finance"],
        "participants": [
            member("alice", "owner", JOINED, None),
            member("bob", "participant", JOINED, None),
            member("carol", "observer", JOINED, None),
        ],
        "cap_epoch": 2,
        "forks": [{"fork_id": FORK_1, "forked_from": ENV_A, "state": "active"}],
        "linked_threads": [],
        "encryption": {"enabled": false, "key_epoch": 0},
        "last_event_seq": 10,
    })
}

/// `base` with the members of `patch` replaced (a shallow JSON merge).
fn patched(mut thread: Value, patch: &Value) -> Value {
    if let (Some(t), Some(p)) = (thread.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            t.insert(k.clone(), v.clone());
        }
    }
    thread
}

/// A `thread_op` envelope from alice.
fn op_envelope(
    event_seq: u64,
    created_at: &str,
    intent: &str,
    parameters: Value,
    preconditions: Option<Value>,
) -> Value {
    let mut structured = Map::new();
    structured.insert("intent".into(), intent.into());
    structured.insert("parameters".into(), parameters);
    if let Some(p) = preconditions {
        structured.insert("preconditions".into(), p);
    }
    json!({
        "id": format!("env_01JN00000000000000000000{event_seq:02}"),
        "type": "thread_op",
        "thread_id": THREAD,
        "from": {"identity": who("alice")},
        "created_at": created_at,
        "content": {"structured": structured},
        "meta": {"event_seq": event_seq},
    })
}

/// The §11.2 operations as sent in the enumeration, with the literal change each makes to
/// [`base`] when applied at `OP_AT` (state changes are given by [`PAIRS`]).
fn ops() -> Vec<(&'static str, &'static str, Value, Value)> {
    vec![
        (
            "add_participant",
            "thread.add_participant@v1",
            json!({"identity": who("dave"), "role": "participant"}),
            json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, None), member("carol", "observer", JOINED, None), member("dave", "participant", OP_AT, None)]}),
        ),
        (
            "remove_participant",
            "thread.remove_participant@v1",
            json!({"identity": who("bob")}),
            json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, Some(OP_AT)), member("carol", "observer", JOINED, None)]}),
        ),
        (
            "update",
            "thread.update@v1",
            json!({"subject": "Q1 invoice (paid)", "labels": ["paid", "finance"]}),
            json!({"subject": "Q1 invoice (paid)", "labels": ["finance", "paid"]}),
        ),
        ("resolve", "thread.resolve@v1", json!({}), json!({})),
        ("archive", "thread.archive@v1", json!({}), json!({})),
        ("lock", "thread.lock@v1", json!({}), json!({})),
        ("reopen", "thread.reopen@v1", json!({}), json!({})),
        (
            "delegate",
            "thread.delegate@v1",
            json!({"identity": who("bob")}),
            json!({"participants": [member("alice", "participant", JOINED, None), member("bob", "owner", JOINED, None), member("carol", "observer", JOINED, None)]}),
        ),
        (
            "fork",
            "thread.fork@v1",
            json!({"fork_thread_id": FORK_2, "forked_from": ENV_B}),
            json!({"forks": [{"fork_id": FORK_1, "forked_from": ENV_A, "state": "active"}, {"fork_id": FORK_2, "forked_from": ENV_B, "state": "active"}]}),
        ),
        (
            "merge",
            "thread.merge@v1",
            json!({"fork_thread_id": FORK_1}),
            json!({"forks": [{"fork_id": FORK_1, "forked_from": ENV_A, "state": "merged"}], "linked_threads": [{"thread_id": FORK_1, "relation": "merged_from"}]}),
        ),
        (
            "link",
            "thread.link@v1",
            json!({"thread_id": OTHER, "relation": "blocks"}),
            json!({"linked_threads": [{"thread_id": OTHER, "relation": "blocks"}]}),
        ),
    ]
}

/// What an operation does to a thread in a state.
#[derive(Clone, Copy)]
enum Out {
    /// §10.4 transition to this state.
    To(&'static str),
    /// The operation's change from [`ops`]; the state stays.
    Applied,
    /// As `Applied`, but the spec restricts only §10.4 transitions in this state.
    AppliedUnrestricted,
    /// Rejected by §10.4 (`STATE_TRANSITION_INVALID`).
    BadTransition,
    /// Rejected because the thread is locked (`THREAD_LOCKED`).
    Locked,
}
use Out::*;

/// Every §10.4 state × every §11.2 operation (order of [`ops`]).
#[rustfmt::skip]
const PAIRS: [(&str, [Out; 11]); 4] = [
    //           add      remove   update   resolve           archive           lock          reopen         delegate fork     merge    link
    ("active",   [Applied, Applied, Applied, To("resolved"),   BadTransition,    To("locked"),  BadTransition, Applied, Applied, Applied, Applied]),
    ("resolved", [AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted, BadTransition, To("archived"), To("locked"), To("active"), AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted]),
    ("archived", [AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted, BadTransition, BadTransition, BadTransition, BadTransition, AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted, AppliedUnrestricted]),
    ("locked",   [Locked,  Locked,  Locked,  BadTransition,    BadTransition,    BadTransition, To("active"),  Locked,  Locked,  Locked,  Locked]),
];

const SPEC_PAIR: &[&str] = &["v1.1 §10.4", "v1.1 §11.2", "v1.0 §10.3"];

fn pair_cases() -> Vec<Case> {
    let ops = ops();
    let mut out = vec![];
    for (state, row) in PAIRS {
        for ((name, intent, params, effect), outcome) in ops.iter().zip(row) {
            let id = format!("pair.{state}.{name}");
            let case = |comment: String, flags: &[&str]| {
                Case::new(&id, comment, SPEC_PAIR)
                    .flags(flags)
                    .input("thread", base(state))
                    .input(
                        "operation",
                        op_envelope(11, OP_AT, intent, params.clone(), None),
                    )
            };
            let applied = patched(patched(base(state), effect), &json!({"last_event_seq": 11}));
            out.push(match outcome {
                To(next) => case(format!("{intent} moves a {state} thread to {next}"), &["Transition"])
                    .valid_with(patched(applied, &json!({"state": next}))),
                Applied => case(format!("{intent} on an active thread"), &["Operation"]).valid_with(applied),
                AppliedUnrestricted => case(format!("{intent} on a {state} thread: §10.4 restricts only state transitions"), &["Operation", "NoStateRestriction"])
                    .valid_with(applied),
                BadTransition => case(format!("§10.4 has no {intent} transition out of {state}"), &["BadTransition"])
                    .invalid("STATE_TRANSITION_INVALID"),
                Locked => case(format!("{intent} on a locked thread: only operations that reopen it or record revocations and keys pass"), &["Locked", "Interpretation"])
                    .invalid("THREAD_LOCKED"),
            });
        }
    }
    out
}

/// An extra case: (id, comment, spec, flags, thread patch, intent, parameters, preconditions,
/// Ok(patch of the thread after it) | Err(code)). `last_event_seq` becomes 11 on success.
type Extra = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    Value,
    &'static str,
    Value,
    Option<Value>,
    Result<Value, &'static str>,
);

fn extras() -> Vec<Extra> {
    let pre = &["v1.1 §11.3"][..];
    let members = |dave: Option<Value>| {
        let mut m = vec![
            member("alice", "owner", JOINED, None),
            member("bob", "participant", JOINED, None),
            member("carol", "observer", JOINED, None),
        ];
        m.extend(dave);
        Value::from(m)
    };
    let e2ee = json!({"encryption": {"enabled": true, "key_epoch": 4}});
    vec![
        (
            "pre.state-in.met",
            "thread_state_in [active] holds: the resolve applies",
            pre,
            &["Precondition"],
            json!({}),
            "thread.resolve@v1",
            json!({}),
            Some(json!({"thread_state_in": ["active"]})),
            Ok(json!({"state": "resolved"})),
        ),
        (
            "pre.state-in.one-of-several",
            "thread_state_in lists the current state among others",
            pre,
            &["Precondition"],
            json!({}),
            "thread.lock@v1",
            json!({}),
            Some(json!({"thread_state_in": ["resolved", "active"]})),
            Ok(json!({"state": "locked"})),
        ),
        (
            "pre.state-in.unmet",
            "thread_state_in [resolved] on an active thread: rejected though the lock itself is allowed",
            pre,
            &["PreconditionUnmet", "Interpretation"],
            json!({}),
            "thread.lock@v1",
            json!({}),
            Some(json!({"thread_state_in": ["resolved"]})),
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "pre.state-in.empty",
            "thread_state_in [] is met by no state",
            pre,
            &["PreconditionUnmet", "Interpretation"],
            json!({}),
            "thread.update@v1",
            json!({"subject": "x"}),
            Some(json!({"thread_state_in": []})),
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "pre.state-in.on-locked",
            "a precondition on a locked thread, met, for the reopen",
            pre,
            &["Precondition"],
            json!({"state": "locked"}),
            "thread.reopen@v1",
            json!({}),
            Some(json!({"thread_state_in": ["locked"]})),
            Ok(json!({"state": "active"})),
        ),
        (
            "pre.cap-epoch.met",
            "cap_epoch 2 equals the thread's",
            pre,
            &["Precondition"],
            json!({}),
            "thread.update@v1",
            json!({"subject": "x"}),
            Some(json!({"cap_epoch": 2})),
            Ok(json!({"subject": "x"})),
        ),
        (
            "pre.cap-epoch.stale",
            "cap_epoch 1: a revocation happened since the sender looked",
            pre,
            &["PreconditionUnmet", "Interpretation"],
            json!({}),
            "thread.update@v1",
            json!({"subject": "x"}),
            Some(json!({"cap_epoch": 1})),
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "pre.cap-epoch.ahead",
            "cap_epoch 3 is ahead of the thread's 2",
            pre,
            &["PreconditionUnmet", "Interpretation"],
            json!({}),
            "thread.update@v1",
            json!({"subject": "x"}),
            Some(json!({"cap_epoch": 3})),
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "pre.both.one-unmet",
            "thread_state_in holds but cap_epoch does not: every precondition must hold",
            pre,
            &["PreconditionUnmet", "Interpretation"],
            json!({}),
            "thread.resolve@v1",
            json!({}),
            Some(json!({"thread_state_in": ["active"], "cap_epoch": 0})),
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "pre.both.met",
            "both preconditions hold",
            pre,
            &["Precondition"],
            json!({}),
            "thread.resolve@v1",
            json!({}),
            Some(json!({"thread_state_in": ["active"], "cap_epoch": 2})),
            Ok(json!({"state": "resolved"})),
        ),
        (
            "add.observer",
            "a participant added as observer",
            &["v1.1 §11.2", "v1.0 §10.1"],
            &["Operation"],
            json!({}),
            "thread.add_participant@v1",
            json!({"identity": who("dave"), "role": "observer"}),
            None,
            Ok(json!({"participants": members(Some(member("dave", "observer", OP_AT, None)))})),
        ),
        (
            "add.rejoin",
            "a departed participant re-added: left_at cleared, joined_at is the operation's time",
            &["v1.1 §11.2", "v1.1 §10.1"],
            &["Operation"],
            json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, None), member("carol", "observer", JOINED, Some("2026-03-01T10:00:00.000Z"))]}),
            "thread.add_participant@v1",
            json!({"identity": who("carol"), "role": "participant"}),
            None,
            Ok(
                json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, None), member("carol", "participant", OP_AT, None)]}),
            ),
        ),
        (
            "add.role-owner",
            "add_participant cannot make an owner: ownership moves only by thread.delegate",
            &["v1.1 §11.2"],
            &["BadParameter", "Interpretation"],
            json!({}),
            "thread.add_participant@v1",
            json!({"identity": who("dave"), "role": "owner"}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "add.no-identity",
            "add_participant without the identity to add",
            &["v1.1 §11.2"],
            &["BadParameter"],
            json!({}),
            "thread.add_participant@v1",
            json!({"role": "participant"}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "add.e2ee-epoch",
            "a membership change in an E2EE thread increments key_epoch",
            &["v1.1 §10.6"],
            &["KeyEpoch"],
            e2ee.clone(),
            "thread.add_participant@v1",
            json!({"identity": who("dave"), "role": "participant"}),
            None,
            Ok(
                json!({"participants": members(Some(member("dave", "participant", OP_AT, None))), "encryption": {"enabled": true, "key_epoch": 5}}),
            ),
        ),
        (
            "remove.e2ee-epoch",
            "a removal in an E2EE thread increments key_epoch",
            &["v1.1 §10.6"],
            &["KeyEpoch"],
            e2ee.clone(),
            "thread.remove_participant@v1",
            json!({"identity": who("carol")}),
            None,
            Ok(
                json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, None), member("carol", "observer", JOINED, Some(OP_AT))], "encryption": {"enabled": true, "key_epoch": 5}}),
            ),
        ),
        (
            "update.e2ee-no-epoch",
            "a subject change is no membership change: key_epoch stays",
            &["v1.1 §10.6"],
            &["KeyEpoch"],
            e2ee,
            "thread.update@v1",
            json!({"subject": "x"}),
            None,
            Ok(json!({"subject": "x"})),
        ),
        (
            "remove.last-owner",
            "removing the only owner would leave the thread ownerless",
            &["v1.1 §11.2"],
            &["LastOwner", "Interpretation"],
            json!({}),
            "thread.remove_participant@v1",
            json!({"identity": who("alice")}),
            None,
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "remove.not-a-participant",
            "removing an identity that is not in the thread",
            &["v1.1 §11.2"],
            &["BadParameter", "Interpretation"],
            json!({}),
            "thread.remove_participant@v1",
            json!({"identity": who("mallory")}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "remove.already-left",
            "removing a participant who already left",
            &["v1.1 §11.2"],
            &["BadParameter", "Interpretation"],
            json!({"participants": [member("alice", "owner", JOINED, None), member("bob", "participant", JOINED, Some("2026-03-01T10:00:00.000Z")), member("carol", "observer", JOINED, None)]}),
            "thread.remove_participant@v1",
            json!({"identity": who("bob")}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "update.subject-only",
            "update with only a subject keeps the labels",
            &["v1.1 §11.2"],
            &["Operation"],
            json!({}),
            "thread.update@v1",
            json!({"subject": "Renamed"}),
            None,
            Ok(json!({"subject": "Renamed"})),
        ),
        (
            "update.clear-labels",
            "labels [] removes every label",
            &["v1.1 §11.2"],
            &["Operation"],
            json!({}),
            "thread.update@v1",
            json!({"labels": []}),
            None,
            Ok(json!({"labels": []})),
        ),
        (
            "update.labels-not-array",
            "labels must be an array of strings",
            &["v1.1 §11.2", "v1.1 §10.1"],
            &["BadParameter"],
            json!({}),
            "thread.update@v1",
            json!({"labels": "finance"}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "delegate.to-newcomer",
            "delegating to an identity outside the thread makes it the owner and the old owner a participant",
            &["v1.1 §11.2", "v1.0 §10.2"],
            &["Operation"],
            json!({}),
            "thread.delegate@v1",
            json!({"identity": who("eve")}),
            None,
            Ok(
                json!({"participants": [member("alice", "participant", JOINED, None), member("bob", "participant", JOINED, None), member("carol", "observer", JOINED, None), member("eve", "owner", OP_AT, None)]}),
            ),
        ),
        (
            "fork.no-forked-from",
            "a fork must reference the envelope it forks from",
            &["v1.1 §11.4"],
            &["BadParameter"],
            json!({}),
            "thread.fork@v1",
            json!({"fork_thread_id": FORK_2}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "fork.into-itself",
            "a fork creates a new thread: fork_thread_id may not be the thread itself",
            &["v1.1 §11.4"],
            &["BadParameter", "Interpretation"],
            json!({}),
            "thread.fork@v1",
            json!({"fork_thread_id": THREAD, "forked_from": ENV_B}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "merge.unknown-fork",
            "merging a thread that is not a fork of this one",
            &["v1.1 §11.4"],
            &["BadParameter", "Interpretation"],
            json!({}),
            "thread.merge@v1",
            json!({"fork_thread_id": OTHER}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "merge.already-merged",
            "a fork already merged cannot be merged again",
            &["v1.1 §11.4", "v1.1 §10.4"],
            &["BadTransition", "Interpretation"],
            json!({"forks": [{"fork_id": FORK_1, "forked_from": ENV_A, "state": "merged"}], "linked_threads": [{"thread_id": FORK_1, "relation": "merged_from"}]}),
            "thread.merge@v1",
            json!({"fork_thread_id": FORK_1}),
            None,
            Err("STATE_TRANSITION_INVALID"),
        ),
        (
            "link.bad-relation",
            "relation must be one of the §10.1 values",
            &["v1.1 §11.4", "v1.1 §10.1"],
            &["BadParameter"],
            json!({}),
            "thread.link@v1",
            json!({"thread_id": OTHER, "relation": "duplicates"}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "link.no-state-change",
            "a link on a resolved thread adds the entry and leaves the state",
            &["v1.1 §11.4"],
            &["Operation"],
            json!({"state": "resolved"}),
            "thread.link@v1",
            json!({"thread_id": OTHER, "relation": "related"}),
            None,
            Ok(json!({"linked_threads": [{"thread_id": OTHER, "relation": "related"}]})),
        ),
        (
            "intent.unknown",
            "an intent that is no thread operation",
            &["v1.1 §11.2"],
            &["UnknownIntent", "Interpretation"],
            json!({}),
            "thread.frobnicate@v1",
            json!({}),
            None,
            Err("ENVELOPE_INVALID"),
        ),
        (
            "revocation.increments-cap-epoch",
            "capability.revoked@v1 increments cap_epoch",
            &["v1.1 §12.3"],
            &["Operation"],
            json!({}),
            "capability.revoked@v1",
            json!({"capability_id": "cap_01JN000000000000000000000C"}),
            None,
            Ok(json!({"cap_epoch": 3})),
        ),
        (
            "revocation.on-locked-thread",
            "a revocation is still recorded on a locked thread",
            &["v1.1 §12.3", "v1.1 §10.4"],
            &["Operation", "Interpretation"],
            json!({"state": "locked"}),
            "capability.revoked@v1",
            json!({"capability_id": "cap_01JN000000000000000000000C"}),
            None,
            Ok(json!({"cap_epoch": 3})),
        ),
    ]
}

fn extra_cases() -> Vec<Case> {
    extras()
        .into_iter()
        .map(
            |(id, comment, spec, flags, start, intent, params, pre, outcome)| {
                let thread = patched(base("active"), &start);
                let c = Case::new(id, comment, spec)
                    .flags(flags)
                    .input("thread", thread.clone())
                    .input("operation", op_envelope(11, OP_AT, intent, params, pre));
                match outcome {
                    Ok(change) => c.valid_with(patched(
                        patched(thread, &change),
                        &json!({"last_event_seq": 11}),
                    )),
                    Err(code) => c.invalid(code),
                }
            },
        )
        .collect()
}

/// A replay case: (id, comment, operations as (event_seq, created_at, intent, parameters,
/// preconditions) in arrival order, final thread patch, outcomes by event_seq).
type Replay = (
    &'static str,
    &'static str,
    Vec<(u64, &'static str, &'static str, Value, Option<Value>)>,
    Value,
    Value,
);

fn replays() -> Vec<Replay> {
    let early = "2026-03-01T11:00:00.000Z";
    let late = "2026-03-01T12:00:00.000Z";
    let ok = |seq: u64| json!({"event_seq": seq, "outcome": "applied"});
    let bad = |seq: u64, code: &str| json!({"event_seq": seq, "outcome": code});
    vec![
        (
            "event-seq-not-wall-clock",
            "the lock (seq 11, later clock) applies before the resolve (seq 12, earlier clock), which then has no transition from locked",
            vec![
                (12, early, "thread.resolve@v1", json!({}), None),
                (11, late, "thread.lock@v1", json!({}), None),
            ],
            json!({"state": "locked", "last_event_seq": 11}),
            json!([ok(11), bad(12, "STATE_TRANSITION_INVALID")]),
        ),
        (
            "last-valid-wins",
            "two subject updates: the higher event_seq wins though its clock is earlier",
            vec![
                (12, early, "thread.update@v1", json!({"subject": "A"}), None),
                (11, late, "thread.update@v1", json!({"subject": "B"}), None),
            ],
            json!({"subject": "A", "last_event_seq": 12}),
            json!([ok(11), ok(12)]),
        ),
        (
            "precondition-race",
            "resolve and lock both require an active thread: the first in event order wins, the other's precondition fails",
            vec![
                (
                    11,
                    late,
                    "thread.resolve@v1",
                    json!({}),
                    Some(json!({"thread_state_in": ["active"]})),
                ),
                (
                    12,
                    early,
                    "thread.lock@v1",
                    json!({}),
                    Some(json!({"thread_state_in": ["active"]})),
                ),
            ],
            json!({"state": "resolved", "last_event_seq": 11}),
            json!([ok(11), bad(12, "STATE_TRANSITION_INVALID")]),
        ),
        (
            "cap-epoch-race",
            "a revocation (seq 11) invalidates an update conditioned on the old cap_epoch (seq 12)",
            vec![
                (
                    12,
                    early,
                    "thread.update@v1",
                    json!({"subject": "A"}),
                    Some(json!({"cap_epoch": 2})),
                ),
                (
                    11,
                    late,
                    "capability.revoked@v1",
                    json!({"capability_id": "cap_01JN000000000000000000000C"}),
                    None,
                ),
            ],
            json!({"cap_epoch": 3, "last_event_seq": 11}),
            json!([ok(11), bad(12, "STATE_TRANSITION_INVALID")]),
        ),
        (
            "invalid-does-not-block",
            "an invalid archive (seq 11) changes nothing; the resolve (seq 12) applies",
            vec![
                (11, late, "thread.archive@v1", json!({}), None),
                (12, late, "thread.resolve@v1", json!({}), None),
            ],
            json!({"state": "resolved", "last_event_seq": 12}),
            json!([bad(11, "STATE_TRANSITION_INVALID"), ok(12)]),
        ),
        (
            "shuffled-arrival",
            "three operations delivered 13, 11, 12 apply as 11, 12, 13: resolve, archive, then reopen has no transition from archived",
            vec![
                (13, late, "thread.reopen@v1", json!({}), None),
                (11, late, "thread.resolve@v1", json!({}), None),
                (12, late, "thread.archive@v1", json!({}), None),
            ],
            json!({"state": "archived", "last_event_seq": 12}),
            json!([ok(11), ok(12), bad(13, "STATE_TRANSITION_INVALID")]),
        ),
        (
            "lock-then-reopen-then-update",
            "lock, reopen, update in event order all apply",
            vec![
                (13, early, "thread.update@v1", json!({"labels": []}), None),
                (12, early, "thread.reopen@v1", json!({}), None),
                (11, late, "thread.lock@v1", json!({}), None),
            ],
            json!({"labels": [], "last_event_seq": 13}),
            json!([ok(11), ok(12), ok(13)]),
        ),
    ]
}

fn replay_cases() -> Vec<Case> {
    replays()
        .into_iter()
        .map(|(id, comment, ops, change, outcomes)| {
            let envs: Vec<Value> = ops
                .into_iter()
                .map(|(seq, at, intent, params, pre)| op_envelope(seq, at, intent, params, pre))
                .collect();
            Case::new(
                format!("replay.{id}"),
                comment,
                &["v1.1 §11.7", "v1.1 §11.6", "v1.1 §11.3"],
            )
            .flags(&["ConflictResolution"])
            .input("thread", base("active"))
            .input("operations", envs)
            .valid_with(json!({"thread": patched(base("active"), &change), "outcomes": outcomes}))
        })
        .collect()
}

/// Builds `v1/thread-state.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "thread-state",
        "Thread operations (v1.1 §11) applied to a thread's state (§10.1): the §10.4 state machine for every state × operation pair, §11.3 preconditions, §10.6 key epochs, §11.4 fork/merge/link, and §11.7 conflict resolution by event_seq. Operations are taken as authorized (authorization is the capability token's, v1.1 §12.4).",
    )
    .note("Transition", "A §10.4 transition listed for the thread's state.", "over-strict state machine", "Threads cannot be resolved, locked or reopened.")
    .note("BadTransition", "A state-changing operation §10.4 does not list for the thread's state.", "lenient state machine", "Archived threads are reopened or locked threads archived behind the owner's back.")
    .note("Operation", "A non-state operation applied with its effect on participants, labels, forks, links or epochs.", "wrong state update", "Replicas diverge on membership or metadata.")
    .note("NoStateRestriction", "A non-state operation on a resolved or archived thread: §10.4 restricts only transitions, so it applies.", "over-strict state check", "Resolved threads cannot be relabelled or have members added.")
    .note("Locked", "A non-state operation on a locked thread.", "lock not enforced", "A locked thread keeps changing.")
    .note("Precondition", "§11.3 preconditions that hold.", "over-strict precondition check", "Careful clients that send preconditions are refused.")
    .note("PreconditionUnmet", "§11.3 preconditions that do not hold: the operation is rejected.", "preconditions ignored", "Concurrent edits silently overwrite each other.")
    .note("KeyEpoch", "Membership changes of an E2EE thread increment key_epoch (§10.6); other operations do not.", "missing key rotation", "Removed members keep reading new messages.")
    .note("BadParameter", "An operation whose parameters are missing or invalid.", "lenient parameter parsing", "Malformed operations corrupt replicated state.")
    .note("LastOwner", "Removing the thread's only owner.", "ownerless thread", "Nobody can administer the thread any more.")
    .note("UnknownIntent", "An intent that is not a thread operation.", "unknown operations accepted", "Replicas disagree on what an unknown operation did.")
    .note("ConflictResolution", "Several operations applied in meta.event_seq order (not arrival, not wall clock); an operation with unmet preconditions or no valid transition is skipped.", "wall-clock or arrival ordering", "Replicas converge to different states.")
    .note("Interpretation", "The spec leaves this open; the vector pins loom-protocol's documented reading (thread/state.rs): a lock stops conversation and membership changes, so only §10.4 transitions and capability/encryption/delegation bookkeeping pass a locked thread (THREAD_LOCKED otherwise); unmet §11.3 preconditions are STATE_TRANSITION_INVALID; the last owner cannot be removed and an already merged fork cannot be merged again (STATE_TRANSITION_INVALID); add_participant roles are participant or observer; removing a non-member, merging a non-fork and unknown intents are ENVELOPE_INVALID.", "divergent reading of an open point", "Implementations answer differently without either being wrong by the letter of the spec.")
    .group("apply-thread-op", Value::Null)
    .tests(pair_cases())
    .tests(extra_cases())
    .group("replay-thread-ops", Value::Null)
    .tests(replay_cases())
}

/// The schema of `v1/thread-state.json`.
pub fn schema() -> AreaSchema {
    let addr = json!({"type": "string", "pattern": "^(loom|bridge)://"});
    let ts = json!({"type": "string"});
    let thr = json!({"type": "string", "pattern": "^thr_[0-7][0-9A-HJKMNP-TV-Z]{25}$"});
    let env = json!({"type": "string", "pattern": "^env_[0-7][0-9A-HJKMNP-TV-Z]{25}$"});
    let thread = json!({
        "type": "object", "additionalProperties": false,
        "required": ["id", "state", "subject", "labels", "participants", "cap_epoch", "forks", "linked_threads", "encryption", "last_event_seq"],
        "properties": {
            "id": thr,
            "state": {"enum": ["active", "resolved", "archived", "locked"]},
            "subject": {"type": ["string", "null"]},
            "labels": {"type": "array", "items": {"type": "string"}},
            "participants": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["identity", "role", "joined_at", "left_at"],
                "properties": {"identity": addr, "role": {"enum": ["owner", "participant", "observer"]}, "joined_at": ts, "left_at": {"type": ["string", "null"]}}}},
            "cap_epoch": {"type": "integer", "minimum": 0},
            "forks": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["fork_id", "forked_from", "state"],
                "properties": {"fork_id": thr, "forked_from": {"anyOf": [env, {"type": "null"}]}, "state": {"enum": ["active", "resolved", "merged"]}}}},
            "linked_threads": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["thread_id", "relation"], "properties": {"thread_id": thr, "relation": {"type": "string"}}}},
            "encryption": {"type": "object", "additionalProperties": false, "required": ["enabled", "key_epoch"],
                "properties": {"enabled": {"type": "boolean"}, "key_epoch": {"type": "integer", "minimum": 0}}},
            "last_event_seq": {"type": "integer", "minimum": 0}
        }
    });
    let operation = json!({
        "type": "object",
        "required": ["id", "type", "thread_id", "from", "created_at", "content", "meta"],
        "properties": {
            "id": env, "type": {"const": "thread_op"}, "thread_id": thr,
            "from": {"type": "object", "required": ["identity"], "properties": {"identity": addr}},
            "created_at": ts,
            "content": {"type": "object", "required": ["structured"], "properties": {"structured": {"type": "object", "required": ["intent"],
                "properties": {"intent": {"type": "string"}, "parameters": {"type": "object"}, "preconditions": {"type": "object"}}}}},
            "meta": {"type": "object", "required": ["event_seq"], "properties": {"event_seq": {"type": "integer", "minimum": 1}}}
        }
    });
    AreaSchema {
        kinds: vec!["apply-thread-op", "replay-thread-ops"],
        inputs: vec![
            ("thread", thread.clone()),
            ("operation", operation.clone()),
            ("operations", json!({"type": "array", "items": operation})),
        ],
        required: vec!["thread"],
        expected: json!({"oneOf": [
            thread.clone(),
            {"type": "object", "additionalProperties": false, "required": ["thread", "outcomes"],
             "properties": {"thread": thread, "outcomes": {"type": "array", "items": {"type": "object", "additionalProperties": false,
                "required": ["event_seq", "outcome"], "properties": {"event_seq": {"type": "integer"}, "outcome": {"type": "string"}}}}}}
        ]}),
        errors: vec![
            "STATE_TRANSITION_INVALID",
            "THREAD_LOCKED",
            "ENVELOPE_INVALID",
        ],
    }
}
