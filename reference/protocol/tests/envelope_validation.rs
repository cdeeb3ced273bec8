//! Envelope validation (v1.1 §6.1, §7.3, §8.1–§8.4, §9.1–§9.2, §18.1) and the pure access
//! rules (§8.3, §10.6, §25.3), each mapped to its §24.2 code.

mod common;

use common::*;
use loom_protocol::envelope::{check_envelope_size, validate_envelope, validate_envelope_all};
use loom_protocol::policy::{check_audience, check_deletable, check_encryption_required};
use loom_protocol::{Address, ErrorCode};
use serde_json::{Value, json};

fn expect(env: &Value, code: ErrorCode, field: &str, section: &str) {
    let errors = validate_envelope_all(env);
    let hit = errors.iter().find(|e| e.field == field);
    let Some(e) = hit else {
        panic!("no error for {field}; got {errors:#?}")
    };
    assert_eq!((e.code, e.section), (code, section), "{e}");
    let first = validate_envelope(env).unwrap_err();
    assert_eq!(first, errors[0]);
}

fn with(pointer: &str, v: Value) -> Value {
    let mut env = signed_message();
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = if parent.is_empty() {
        &mut env
    } else {
        env.pointer_mut(parent).unwrap()
    };
    match target {
        Value::Object(m) => {
            if v == json!("<remove>") {
                m.remove(key);
            } else {
                m.insert(key.to_owned(), v);
            }
        }
        Value::Array(a) => a[key.parse::<usize>().unwrap()] = v,
        _ => panic!("bad pointer {pointer}"),
    }
    env
}

const RM: &str = "<remove>";

#[test]
fn a_valid_envelope_passes_and_types_round_trip() {
    let env = signed_message();
    let typed = validate_envelope(&env).unwrap();
    assert_eq!(typed.id.to_string(), ENV_ID);
    assert_eq!(typed.content.intent(), Some("message.general@v1"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        back, env,
        "an envelope already in normalized form reads and writes back unchanged"
    );
    // An explicit null context is the same as no context (§7.3).
    let mut env2 = signed_message();
    env2["signature"]["context"] = json!(null);
    assert!(validate_envelope(&env2).is_ok());
    // Unknown types and unknown members are accepted (v1.1 §9.1).
    let mut env = with("/type", json!("x-vendor.custom"));
    env["x_extension"] = json!({"k": 1});
    assert!(validate_envelope(&env).is_ok());
}

#[test]
fn envelope_invalid_rules() {
    use ErrorCode::EnvelopeInvalid as E;
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        ("/loom", json!("1.0"), "loom", "v1.1 §8.2"),
        ("/loom", json!(RM), "loom", "v1.1 §8.2"),
        ("/loom", json!(1.1), "loom", "v1.1 §8.2"),
        ("/id", json!(RM), "id", "v1.1 §8.2"),
        (
            "/id",
            json!("msg_01JMKB7X9Q2RVHF3KN4TYZPG00"),
            "id",
            "v1.1 §8.4",
        ),
        (
            "/id",
            json!("env_01jmkb7x9q2rvhf3kn4tyzpg00"),
            "id",
            "v1.1 §8.4",
        ),
        ("/id", json!(42), "id", "v1.1 §8.4"),
        (
            "/thread_id",
            json!("env_01JMKB7X9Q2RVHF3KN4TYZPG00"),
            "thread_id",
            "v1.1 §8.4",
        ),
        ("/parent_id", json!("env_x"), "parent_id", "v1.1 §8.4"),
        ("/parent_id", json!(ENV_ID), "parent_id", "v1.1 §10.2"),
        ("/type", json!(RM), "type", "v1.1 §8.2"),
        ("/type", json!(""), "type", "v1.1 §9.1"),
        ("/type", json!(7), "type", "v1.1 §9.1"),
        ("/from", json!(RM), "from", "v1.1 §8.2"),
        ("/from", json!("alice"), "from", "v1.1 §8.1"),
        (
            "/from/identity",
            json!("loom://Alice@node.test"),
            "from.identity",
            "v1.1 §6.1",
        ),
        (
            "/from/identity",
            json!("loom://alice@node.test#thr_1"),
            "from.identity",
            "v1.1 §6.1",
        ),
        (
            "/from/identity",
            json!("mailto:alice@node.test"),
            "from.identity",
            "v1.1 §6.1",
        ),
        ("/from/identity", json!(RM), "from.identity", "v1.1 §8.1"),
        (
            "/from/identity",
            json!("bridge://alice@example.com"),
            "from.type",
            "v1.1 §6.1",
        ),
        ("/from/key_id", json!(RM), "from.key_id", "v1.1 §8.2"),
        (
            "/from/key_id",
            json!("k_enc_alice"),
            "from.key_id",
            "v1.1 §8.4",
        ),
        ("/from/type", json!("robot"), "from.type", "v1.1 §8.1"),
        ("/from/type", json!(RM), "from.type", "v1.1 §8.1"),
        ("/from/display", json!(5), "from.display", "v1.1 §8.1"),
        ("/from/device_id", json!(""), "from.device_id", "v1.1 §8.2"),
        (
            "/from/device_id",
            json!("d".repeat(129)),
            "from.device_id",
            "v1.1 §8.2",
        ),
        (
            "/from/delegation_chain",
            json!({}),
            "from.delegation_chain",
            "v1.1 §8.1",
        ),
        ("/to", json!(RM), "to", "v1.1 §8.2"),
        ("/to", json!([]), "to", "v1.1 §8.2"),
        (
            "/to",
            json!([{"identity": BOB, "role": "cc"}]),
            "to",
            "v1.1 §8.2",
        ),
        (
            "/to",
            json!([{"identity": BOB, "role": "boss"}]),
            "to[0].role",
            "v1.1 §8.1",
        ),
        (
            "/to",
            json!([{"identity": "bob", "role": "primary"}]),
            "to[0].identity",
            "v1.1 §6.1",
        ),
        ("/to", json!(["loom://bob@node.test"]), "to[0]", "v1.1 §8.1"),
        ("/to", json!({}), "to", "v1.1 §8.1"),
        (
            "/audience",
            json!({"mode": "everyone"}),
            "audience.mode",
            "v1.1 §8.3",
        ),
        (
            "/audience",
            json!({"mode": "custom"}),
            "audience.identities",
            "v1.1 §8.3",
        ),
        (
            "/audience",
            json!({"mode": "custom", "identities": []}),
            "audience.identities",
            "v1.1 §8.3",
        ),
        (
            "/audience",
            json!({"mode": "custom", "identities": ["x"]}),
            "audience.identities[0]",
            "v1.1 §6.1",
        ),
        ("/audience", json!("thread"), "audience", "v1.1 §8.3"),
        ("/created_at", json!(RM), "created_at", "v1.1 §8.2"),
        (
            "/created_at",
            json!("2026-02-16 16:37"),
            "created_at",
            "v1.1 Appendix D",
        ),
        (
            "/created_at",
            json!("2026-02-16T16:37:00"),
            "created_at",
            "v1.1 Appendix D",
        ),
        ("/created_at", json!(1771259820), "created_at", "v1.1 §8.2"),
        (
            "/expires_at",
            json!("soon"),
            "expires_at",
            "v1.1 Appendix D",
        ),
        ("/priority", json!("critical"), "priority", "v1.1 §8.1"),
        ("/content", json!(RM), "content", "v1.1 §8.2"),
        ("/content", json!({}), "content", "v1.1 §8.2"),
        ("/content", json!("hi"), "content", "v1.1 §8.1"),
        (
            "/content/human",
            json!({"text": 5}),
            "content.human.text",
            "v1.1 §8.1",
        ),
        ("/content/human", json!("hi"), "content.human", "v1.1 §8.1"),
        (
            "/content/human/format",
            json!("rtf"),
            "content.human.format",
            "v1.1 §8.1",
        ),
        (
            "/content/human/locale",
            json!(3),
            "content.human.locale",
            "v1.1 §8.1",
        ),
        (
            "/content/structured/intent",
            json!("general"),
            "content.structured.intent",
            "v1.1 §18.1",
        ),
        (
            "/content/structured/intent",
            json!("message.general"),
            "content.structured.intent",
            "v1.1 §18.1",
        ),
        (
            "/content/structured/intent",
            json!("message..general@v1"),
            "content.structured.intent",
            "v1.1 §18.1",
        ),
        (
            "/content/structured/intent",
            json!("message.general@v0"),
            "content.structured.intent",
            "v1.1 §18.1",
        ),
        (
            "/content/structured/intent",
            json!(RM),
            "content.structured.intent",
            "v1.1 §8.1",
        ),
        (
            "/content/structured/parameters",
            json!([1]),
            "content.structured.parameters",
            "v1.1 §8.1",
        ),
        (
            "/content/structured/response_schema",
            json!(3),
            "content.structured.response_schema",
            "v1.1 §18.1",
        ),
        (
            "/content/structured",
            json!("x"),
            "content.structured",
            "v1.1 §8.1",
        ),
        (
            "/content/encrypted",
            json!("no"),
            "content.encrypted",
            "v1.1 §8.1",
        ),
        ("/content/human", json!(RM), "content.human", "v1.1 §9.2"),
        ("/attachments", json!({}), "attachments", "v1.1 §8.1"),
        ("/attachments", json!(["a"]), "attachments[0]", "v1.1 §8.1"),
        ("/references", json!([]), "references", "v1.1 §8.1"),
        (
            "/references",
            json!({"in_reply_to": "env_1"}),
            "references.in_reply_to",
            "v1.1 §8.4",
        ),
        (
            "/references",
            json!({"linked_envelopes": ["thr_01JMKB7W8P1QSGF2JM3SXYZR00"]}),
            "references.linked_envelopes[0]",
            "v1.1 §8.4",
        ),
        (
            "/references",
            json!({"linked_threads": "thr_01JMKB7W8P1QSGF2JM3SXYZR00"}),
            "references.linked_threads",
            "v1.1 §8.1",
        ),
        (
            "/references",
            json!({"external": [{"type": "ftp", "ref": "x"}]}),
            "references.external[0].type",
            "v1.1 §8.1",
        ),
        (
            "/references",
            json!({"external": [{"type": "url"}]}),
            "references.external[0].ref",
            "v1.1 §8.1",
        ),
        ("/labels", json!("finance"), "labels", "v1.1 §8.1"),
        ("/labels", json!([""]), "labels[0]", "v1.1 §8.1"),
        ("/capabilities", json!([1]), "capabilities[0]", "v1.1 §8.1"),
        ("/meta", json!("node"), "meta", "v1.1 §8.1"),
    ];
    for (pointer, v, field, section) in cases {
        expect(&with(pointer, v), E, field, section);
    }
    expect(&json!([]), E, "$", "v1.1 §8.1");
}

fn attachment() -> Value {
    json!({
        "id": "att_01JMKB8A6D3NMHG5KP6WWBTK00",
        "filename": "invoice.pdf",
        "mime_type": "application/pdf",
        "size_bytes": 48213,
        "hash": format!("sha256:{}", "ab".repeat(32)),
        "blob_id": "blob_01JMKB8A6D3NMHG5KP6WWBTK01",
        "inline": false
    })
}

#[test]
fn attachment_rules() {
    assert!(validate_envelope(&with("/attachments", json!([attachment()]))).is_ok());
    for (k, v, field) in [
        ("id", json!("att_x"), "attachments[0].id"),
        ("blob_id", json!(RM), "attachments[0].blob_id"),
        ("hash", json!("sha256:AB"), "attachments[0].hash"),
        (
            "hash",
            json!(format!("md5:{}", "ab".repeat(16))),
            "attachments[0].hash",
        ),
        (
            "hash",
            json!(format!("sha256:{}", "AB".repeat(32))),
            "attachments[0].hash",
        ),
        ("size_bytes", json!(-1), "attachments[0].size_bytes"),
        ("mime_type", json!("pdf"), "attachments[0].mime_type"),
        ("filename", json!(1), "attachments[0].filename"),
        ("inline", json!("no"), "attachments[0].inline"),
    ] {
        let mut a = attachment();
        if v == json!(RM) {
            a.as_object_mut().unwrap().remove(k);
        } else {
            a[k] = v;
        }
        let section = if field.ends_with(".id") || field.ends_with("blob_id") {
            "v1.1 §8.4"
        } else {
            "v1.1 §8.1"
        };
        let section = if field.ends_with("blob_id") && k == "blob_id" {
            "v1.1 §8.2"
        } else {
            section
        };
        expect(
            &with("/attachments", json!([a])),
            ErrorCode::EnvelopeInvalid,
            field,
            section,
        );
    }
}

#[test]
fn type_rules_of_section_9_2() {
    let task = |intent: Value| {
        let mut env = signed_message();
        env["type"] = json!("task");
        env["content"]["structured"]["intent"] = intent;
        env
    };
    assert!(validate_envelope(&task(json!("task.create@v1"))).is_ok());
    expect(
        &task(json!("message.general@v1")),
        ErrorCode::EnvelopeInvalid,
        "content.structured.intent",
        "v1.1 §9.2",
    );
    let mut env = task(json!("task.create@v1"));
    env["content"].as_object_mut().unwrap().remove("structured");
    expect(
        &env,
        ErrorCode::EnvelopeInvalid,
        "content.structured",
        "v1.1 §9.2",
    );
    let mut receipt = signed_message();
    receipt["type"] = json!("receipt");
    receipt["content"]
        .as_object_mut()
        .unwrap()
        .remove("structured");
    expect(
        &receipt,
        ErrorCode::EnvelopeInvalid,
        "content.structured",
        "v1.1 §9.2",
    );
    let op = |intent: &str| {
        let mut env = signed_message();
        env["type"] = json!("thread_op");
        env["content"] = json!({"structured": {"intent": intent, "parameters": {}}});
        env
    };
    for ok in [
        "thread.resolve@v1",
        "capability.revoked@v1",
        "encryption.epoch@v1",
        "delegation.revoked@v1",
    ] {
        assert!(validate_envelope(&op(ok)).is_ok(), "{ok}");
    }
    expect(
        &op("message.general@v1"),
        ErrorCode::EnvelopeInvalid,
        "content.structured.intent",
        "v1.1 §9.2",
    );
    let mut env = op("thread.resolve@v1");
    env["content"] = json!({"human": {"text": "resolve please"}});
    expect(
        &env,
        ErrorCode::EnvelopeInvalid,
        "content.structured",
        "v1.1 §11.1",
    );
}

fn encrypted() -> Value {
    json!({
        "encrypted": true,
        "profile": "loom-e2ee-x25519-xchacha20-v1",
        "epoch": 2,
        "replay_counter": 7,
        "profile_commitment": "q83vEjRWeJA",
        "ciphertext": "AQIDBAUGBwgJCgsMDQ4PEA",
        "wrapped_keys": [{"to": BOB, "algorithm": "X25519-HKDF-SHA256", "key_id": "k_enc_bob_1", "ciphertext": "AQID"}]
    })
}

#[test]
fn encrypted_content_rules() {
    assert!(
        validate_envelope(&with("/content", encrypted())).is_ok(),
        "message content may be encrypted"
    );
    for (k, v, field, section) in [
        ("profile", json!("rot13"), "content.profile", "v1.1 §7.4.2"),
        ("profile", json!(RM), "content.profile", "v1.1 §7.4"),
        ("epoch", json!(-1), "content.epoch", "v1.1 §10.6"),
        ("ciphertext", json!(RM), "content.ciphertext", "v1.1 §7.4"),
        (
            "ciphertext",
            json!("not+base64/url="),
            "content.ciphertext",
            "v1.1 Appendix D",
        ),
        (
            "replay_counter",
            json!("7"),
            "content.replay_counter",
            "v1.1 §23.1",
        ),
        (
            "profile_commitment",
            json!(""),
            "content.profile_commitment",
            "v1.1 Appendix D",
        ),
        (
            "wrapped_keys",
            json!({}),
            "content.wrapped_keys",
            "v1.1 §7.4",
        ),
        (
            "human",
            json!({"text": "leak"}),
            "content.human",
            "v1.1 §7.4",
        ),
    ] {
        let mut c = encrypted();
        if v == json!(RM) {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v;
        }
        expect(
            &with("/content", c),
            ErrorCode::EnvelopeInvalid,
            field,
            section,
        );
    }
    let mut c = encrypted();
    c["wrapped_keys"][0]["to"] = json!("bob");
    expect(
        &with("/content", c),
        ErrorCode::EnvelopeInvalid,
        "content.wrapped_keys[0].to",
        "v1.1 §6.1",
    );
    let mut env = with("/content", encrypted());
    env["type"] = json!("thread_op");
    expect(
        &env,
        ErrorCode::EnvelopeInvalid,
        "content.encrypted",
        "v1.1 §12.4",
    );
}

#[test]
fn signature_object_rules_are_signature_invalid() {
    use ErrorCode::SignatureInvalid as S;
    expect(&with("/signature", json!(RM)), S, "signature", "v1.1 §7.1");
    expect(
        &with("/signature", json!("sig")),
        S,
        "signature",
        "v1.1 §8.1",
    );
    expect(
        &with("/signature/algorithm", json!("ES256")),
        S,
        "signature.algorithm",
        "v1.1 §7.1",
    );
    expect(
        &with("/signature/key_id", json!(RM)),
        S,
        "signature.key_id",
        "v1.1 §7.3",
    );
    expect(
        &with("/signature/key_id", json!("key-1")),
        S,
        "signature.key_id",
        "v1.1 §8.4",
    );
    expect(
        &with("/signature/key_id", json!("k_sign_alice_2")),
        S,
        "signature.key_id",
        "v1.1 §7.3",
    );
    expect(
        &with("/signature/value", json!("AAAA")),
        S,
        "signature.value",
        "v1.1 §7.3",
    );
    expect(
        &with("/signature/value", json!(RM)),
        S,
        "signature.value",
        "v1.1 §7.3",
    );
    expect(
        &with("/signature/context", json!(1)),
        S,
        "signature.context",
        "v1.1 §7.3",
    );
}

#[test]
fn agents_must_carry_a_delegation_chain() {
    let mut env = signed_message();
    env["from"]["type"] = json!("agent");
    expect(
        &env,
        ErrorCode::DelegationInvalid,
        "from.delegation_chain",
        "v1.1 §13.5",
    );
    env["from"]["delegation_chain"] = json!([]);
    expect(
        &env,
        ErrorCode::DelegationInvalid,
        "from.delegation_chain",
        "v1.1 §13.5",
    );
    env["from"]["delegation_chain"] = json!(["link"]);
    expect(
        &env,
        ErrorCode::DelegationInvalid,
        "from.delegation_chain[0]",
        "v1.1 §13.1",
    );
    env["from"]["delegation_chain"] = json!([{"delegator": ALICE}]);
    assert!(
        validate_envelope(&env).is_ok(),
        "link contents are judged by chain verification"
    );
}

#[test]
fn every_error_is_reported_in_document_order() {
    let mut env = signed_message();
    env["loom"] = json!("2");
    env["to"] = json!([]);
    env["signature"]["algorithm"] = json!("none");
    let errors = validate_envelope_all(&env);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, vec!["loom", "to", "signature.algorithm"]);
}

#[test]
fn payload_limit() {
    assert!(check_envelope_size(100, 100).is_ok());
    assert!(
        check_envelope_size(usize::MAX, 0).is_ok(),
        "0 disables the limit"
    );
    let e = check_envelope_size(101, 100).unwrap_err();
    assert_eq!((e.code, e.http_status()), (ErrorCode::PayloadTooLarge, 413));
}

fn viewer(s: &str) -> Address {
    Address::parse(s).unwrap()
}

#[test]
fn audience_is_enforced() {
    let env = signed_message();
    assert!(
        check_audience(&env, &viewer(ALICE), false).is_ok(),
        "sender"
    );
    assert!(
        check_audience(&env, &viewer(BOB), false).is_ok(),
        "recipient"
    );
    assert!(
        check_audience(&env, &viewer(CAROL), true).is_ok(),
        "thread participant, thread mode"
    );
    assert_eq!(
        check_audience(&env, &viewer(CAROL), false)
            .unwrap_err()
            .code,
        ErrorCode::AudienceDenied
    );
    let mut env = with("/audience", json!({"mode": "recipients"}));
    assert_eq!(
        check_audience(&env, &viewer(CAROL), true).unwrap_err().code,
        ErrorCode::AudienceDenied
    );
    env["to"] = json!([{"identity": BOB, "role": "primary"}, {"identity": CAROL, "role": "bcc"}]);
    assert!(
        check_audience(&env, &viewer(CAROL), true).is_err(),
        "bcc sees only its own copy"
    );
    let copy = with(
        "/audience",
        json!({"mode": "custom", "identities": [CAROL]}),
    );
    assert!(check_audience(&copy, &viewer(CAROL), false).is_ok());
    assert!(check_audience(&copy, &viewer(BOB), true).is_err());
}

#[test]
fn encryption_requirement_and_legal_hold() {
    let env = signed_message();
    assert!(check_encryption_required(&env, false).is_ok());
    assert_eq!(
        check_encryption_required(&env, true).unwrap_err().code,
        ErrorCode::EncryptionRequired
    );
    assert!(check_encryption_required(&with("/content", encrypted()), true).is_ok());
    assert!(check_deletable(["finance"]).is_ok());
    let e = check_deletable(["finance", "sys.legal_hold"]).unwrap_err();
    assert_eq!((e.code, e.http_status()), (ErrorCode::LegalHoldActive, 403));
}

/// Which §24.2 codes the pure rules produce; the rest need a node (lookups, rate limits,
/// transport, extensions, internal faults) and are exercised by the node and harness.
#[test]
fn every_code_a_pure_rule_can_produce_is_produced() {
    use std::collections::BTreeSet;
    let mut seen = BTreeSet::new();
    let mut env = signed_message();
    env["to"] = json!([]);
    seen.insert(validate_envelope(&env).unwrap_err().code);
    seen.insert(
        validate_envelope(&with("/signature/algorithm", json!("x")))
            .unwrap_err()
            .code,
    );
    let mut agent = signed_message();
    agent["from"]["type"] = json!("agent");
    seen.insert(validate_envelope(&agent).unwrap_err().code);
    seen.insert(
        check_audience(&signed_message(), &viewer(CAROL), false)
            .unwrap_err()
            .code,
    );
    seen.insert(
        check_encryption_required(&signed_message(), true)
            .unwrap_err()
            .code,
    );
    seen.insert(check_deletable(["sys.legal_hold"]).unwrap_err().code);
    seen.insert(check_envelope_size(2, 1).unwrap_err().code);
    use loom_protocol::task::{TaskRole, TaskState, check_task_transition};
    seen.insert(
        check_task_transition(TaskState::Created, TaskState::Completed, &[])
            .unwrap_err()
            .code,
    );
    seen.insert(
        check_task_transition(
            TaskState::Assigned,
            TaskState::Accepted,
            &[TaskRole::Creator],
        )
        .unwrap_err()
        .code,
    );
    use loom_protocol::thread::{ThreadDag, ThreadLimits, ThreadState, ThreadStatus};
    let mut dag = ThreadDag::new();
    let id = loom_protocol::EnvelopeId::parse(ENV_ID).unwrap();
    dag.insert(
        id,
        None,
        loom_protocol::Timestamp::UNIX_EPOCH,
        &ThreadLimits::default(),
    )
    .unwrap();
    seen.insert(
        dag.insert(
            id,
            None,
            loom_protocol::Timestamp::UNIX_EPOCH,
            &ThreadLimits::default(),
        )
        .unwrap_err()
        .code,
    );
    let mut th = ThreadState::new(
        loom_protocol::ThreadId::parse(THR_ID).unwrap(),
        viewer(ALICE),
        &[],
        loom_protocol::Timestamp::UNIX_EPOCH,
    );
    th.state = ThreadStatus::Locked;
    seen.insert(th.check_accepts_envelope("message").unwrap_err().code);
    let expected: BTreeSet<ErrorCode> = [
        ErrorCode::EnvelopeInvalid,
        ErrorCode::SignatureInvalid,
        ErrorCode::DelegationInvalid,
        ErrorCode::CapabilityDenied,
        ErrorCode::AudienceDenied,
        ErrorCode::EncryptionRequired,
        ErrorCode::LegalHoldActive,
        ErrorCode::EnvelopeDuplicate,
        ErrorCode::ThreadLocked,
        ErrorCode::StateTransitionInvalid,
        ErrorCode::PayloadTooLarge,
    ]
    .into();
    assert_eq!(seen, expected);
}
