//! Snapshots of canonical signing bytes for the spec's example envelopes, brought to v1.1
//! (`"loom": "1.1"`, versioned intents, valid ULIDs, context-prefixed signatures). A change
//! in any of these bytes changes every signature, so it must be deliberate.

mod common;

use common::*;
use loom_protocol::envelope::{envelope_signing_payload, sign_envelope, validate_envelope};
use loom_protocol::jcs::to_canonical_string;
use serde_json::{Value, json};

fn examples() -> Vec<(&'static str, Value)> {
    let base = message();
    let mut task = base.clone();
    task["type"] = json!("task");
    task["content"] = json!({
        "human": {"text": "Please review this PR and approve by Friday.", "format": "markdown"},
        "structured": {
            "intent": "task.create@v1",
            "parameters": {
                "title": "Review PR #247", "assignee": BOB, "due_date": "2026-02-20T17:00:00Z",
                "priority": "high", "state": "created", "linked_resource": "https://github.com/acme/app/pull/247"
            },
            "response_schema": "task.state_update@v1"
        }
    });
    let mut approval = base.clone();
    approval["type"] = json!("approval");
    approval["content"] = json!({
        "human": {"text": "Expense report for $2,340 — client dinner + travel. Approve?", "format": "markdown"},
        "structured": {
            "intent": "approval.request@v1",
            "parameters": {"item": "Expense Report #892", "amount": {"value": 2340, "currency": "USD"},
                           "category": "client-entertainment", "options": ["approved", "rejected", "needs_revision"],
                           "deadline": "2026-02-18T12:00:00Z"},
            "response_schema": "approval.response@v1"
        }
    });
    let mut op = base.clone();
    op["type"] = json!("thread_op");
    op["parent_id"] = json!(ENV_ID_2);
    op["content"] = json!({"structured": {"intent": "thread.resolve@v1", "parameters": {},
                                          "preconditions": {"thread_state_in": ["active"], "cap_epoch": 3}}});
    let mut agent = base.clone();
    agent["from"] = json!({
        "identity": "loom://assistant.alice@node.test", "display": "Alice's Assistant",
        "key_id": "k_sign_agent_1", "type": "agent",
        "delegation_chain": [{
            "delegator": ALICE, "delegate": "loom://assistant.alice@node.test",
            "scope": ["read.*", "reply.routine", "task.create", "calendar.*"],
            "created_at": "2026-01-15T10:00:00Z", "expires_at": "2026-06-01T00:00:00Z",
            "revocable": true, "allow_sub_delegation": true, "max_sub_delegation_depth": 2,
            "key_id": "k_sign_alice_1", "signature_context": "LOOM-DELEGATION-SIG-v1", "signature": "c2ln"
        }]
    });
    vec![
        ("message", base),
        ("task", task),
        ("approval", approval),
        ("thread_op", op),
        ("agent_message", agent),
    ]
}

#[test]
fn canonical_signing_bytes_of_spec_examples() {
    for (name, mut env) in examples() {
        sign_envelope(&mut env, &key(1), &key_id("alice_1")).unwrap();
        validate_envelope(&env).unwrap_or_else(|e| panic!("{name}: {e}"));
        let canonical = String::from_utf8(envelope_signing_payload(&env).unwrap()).unwrap();
        insta::assert_snapshot!(format!("canonical_{name}"), canonical);
        // The full signed envelope, canonicalized, pins the signature value too (Ed25519 is
        // deterministic, RFC 8032 §5.1.6).
        insta::assert_snapshot!(format!("signed_{name}"), to_canonical_string(&env));
    }
}
