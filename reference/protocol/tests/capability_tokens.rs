//! Capability tokens (v1.1 §12): grants, scope, epoch, expiry, single use, signature, PoP.

mod common;

use common::*;
use ed25519_dalek::VerifyingKey;
use loom_protocol::capability::{
    CapabilityRequest, CapabilityResolver, Grant, PopProof, authorize_capability, grant_for_intent,
    sign_capability_token, sign_pop, verify_pop,
};
use loom_protocol::envelope::Priority;
use loom_protocol::keys::public_key_from_spki_pem;
use loom_protocol::{
    Address, CapabilityId, EnvelopeId, ErrorCode, FixedClock, ProtocolError, ThreadId, Timestamp,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;

const CAP: &str = "cap_01JMKB9C4E5RPJH7MQ8VXCWK00";
const NOW: &str = "2026-02-16T12:00:00Z";

#[derive(Default)]
struct World {
    revoked: BTreeSet<String>,
    spent: BTreeSet<String>,
    no_authority: bool,
}

impl CapabilityResolver for World {
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        (identity.to_string() == ALICE && key_id == "k_sign_alice_1")
            .then(|| key(1).verifying_key())
    }
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        (holder.to_string() == BOB && key_id == "k_sign_bob_1").then(|| key(2).verifying_key())
    }
    fn may_issue(&self, issuer: &Address, _thread: &ThreadId) -> bool {
        !self.no_authority && issuer.to_string() == ALICE
    }
    fn is_revoked(&self, id: &CapabilityId) -> bool {
        self.revoked.contains(&id.to_string())
    }
    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.spent.contains(&id.to_string())
    }
}

fn token() -> Value {
    json!({
        "loom": "1.1",
        "id": CAP,
        "issued_by": ALICE,
        "issued_to": BOB,
        "created_at": "2026-02-16T10:00:00Z",
        "expires_at": "2026-02-17T00:00:00Z",
        "single_use": false,
        "epoch": 3,
        "grants": ["reply", "add_participant"],
        "scope": {
            "thread_id": THR_ID,
            "envelope_types": ["message", "thread_op"],
            "max_depth": 50,
            "max_priority": "normal",
            "external_domains": "deny"
        }
    })
}

fn signed(mut t: Value) -> Value {
    sign_capability_token(&mut t, &key(1), &key_id("alice_1")).unwrap();
    t
}

struct Req {
    actor: Address,
    thread: ThreadId,
    env: EnvelopeId,
    epoch: u64,
    required: Grant,
    kind: &'static str,
    intent: Option<&'static str>,
    priority: Priority,
    depth: Option<u64>,
    pop: Option<(String, String)>,
}

fn req() -> Req {
    Req {
        actor: Address::parse(BOB).unwrap(),
        thread: ThreadId::parse(THR_ID).unwrap(),
        env: EnvelopeId::parse(ENV_ID).unwrap(),
        epoch: 3,
        required: Grant::AddParticipant,
        kind: "thread_op",
        intent: Some("thread.add_participant@v1"),
        priority: Priority::Normal,
        depth: Some(1),
        pop: None,
    }
}

fn authorize(t: &Value, r: &Req, w: &World) -> Result<(), ProtocolError> {
    let pop = r.pop.as_ref().map(|(s, ts)| PopProof {
        signature: s,
        timestamp: ts,
    });
    let request = CapabilityRequest {
        actor: &r.actor,
        thread_id: &r.thread,
        thread_cap_epoch: r.epoch,
        required: r.required,
        envelope_id: &r.env,
        envelope_type: r.kind,
        intent: r.intent,
        priority: r.priority,
        depth: r.depth,
        pop,
    };
    authorize_capability(t, &request, w, &FixedClock(Timestamp::parse(NOW).unwrap())).map(|_| ())
}

fn denied(t: &Value, r: &Req, w: &World, code: ErrorCode, field: &str) {
    let e = authorize(t, r, w).expect_err("token should be refused");
    assert_eq!((e.code, e.field.as_str()), (code, field), "{e}");
}

#[test]
fn a_valid_token_authorizes_its_grant() {
    assert_eq!(
        authorize(&signed(token()), &req(), &World::default()),
        Ok(())
    );
    let mut r = req();
    r.required = Grant::Reply;
    r.kind = "message";
    r.intent = None;
    assert_eq!(authorize(&signed(token()), &r, &World::default()), Ok(()));
}

#[test]
fn admin_is_a_superset_of_every_grant() {
    let mut t = token();
    t["grants"] = json!(["admin"]);
    let t = signed(t);
    for g in Grant::ALL {
        let mut r = req();
        r.required = g;
        assert_eq!(
            authorize(&t, &r, &World::default()),
            Ok(()),
            "admin should cover {}",
            g.as_str()
        );
    }
    assert!(Grant::Admin.covers(Grant::Lock));
    assert!(!Grant::Lock.covers(Grant::Admin));
    assert!(!Grant::Reply.covers(Grant::Resolve));
}

#[test]
fn missing_grant_other_thread_other_holder() {
    let w = World::default();
    let mut r = req();
    r.required = Grant::Resolve;
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.grants",
    );
    let mut r = req();
    r.thread = ThreadId::parse("thr_01JMKB7W8P1QSGF2JM3SXYZR99").unwrap();
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.scope.thread_id",
    );
    let mut r = req();
    r.actor = Address::parse(CAROL).unwrap();
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.issued_to",
    );
}

#[test]
fn epoch_must_equal_cap_epoch() {
    let w = World::default();
    for epoch in [2, 4] {
        let mut r = req();
        r.epoch = epoch;
        denied(
            &signed(token()),
            &r,
            &w,
            ErrorCode::CapabilityDenied,
            "capability_token.epoch",
        );
    }
}

#[test]
fn expiry_revocation_and_single_use() {
    let mut t = token();
    t["expires_at"] = json!("2026-02-16T11:59:59.999Z");
    denied(
        &signed(t),
        &req(),
        &World::default(),
        ErrorCode::CapabilityDenied,
        "capability_token.expires_at",
    );
    let mut t = token();
    t["expires_at"] = json!(null);
    assert_eq!(authorize(&signed(t), &req(), &World::default()), Ok(()));
    let w = World {
        revoked: [CAP.to_owned()].into(),
        ..World::default()
    };
    denied(
        &signed(token()),
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.id",
    );
    let mut t = token();
    t["single_use"] = json!(true);
    let t = signed(t);
    assert_eq!(authorize(&t, &req(), &World::default()), Ok(()));
    let w = World {
        spent: [CAP.to_owned()].into(),
        ..World::default()
    };
    denied(
        &t,
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.single_use",
    );
}

#[test]
fn the_issuer_needs_authority_and_expiry_is_inclusive() {
    let w = World {
        no_authority: true,
        ..World::default()
    };
    denied(
        &signed(token()),
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.issued_by",
    );
    let mut t = token();
    t["expires_at"] = json!(NOW);
    assert_eq!(
        authorize(&signed(t), &req(), &World::default()),
        Ok(()),
        "valid at expires_at"
    );
}

#[test]
fn malformed_cnf_is_refused() {
    let mut t = token();
    t["cnf"] = json!({"key_id": 7});
    denied(
        &signed(t),
        &req(),
        &World::default(),
        ErrorCode::CapabilityDenied,
        "capability_token.cnf.key_id",
    );
}

#[test]
fn scope_limits() {
    let w = World::default();
    let mut r = req();
    r.kind = "task";
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.scope.envelope_types",
    );
    let mut r = req();
    r.depth = Some(51);
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.scope.max_depth",
    );
    let mut r = req();
    r.depth = Some(50);
    assert_eq!(authorize(&signed(token()), &r, &w), Ok(()));
    let mut r = req();
    r.priority = Priority::High;
    denied(
        &signed(token()),
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.scope.max_priority",
    );
    let mut r = req();
    r.priority = Priority::Low;
    assert_eq!(authorize(&signed(token()), &r, &w), Ok(()));
}

#[test]
fn signature_problems_are_signature_invalid() {
    let w = World::default();
    let mut t = signed(token());
    t["grants"] = json!(["admin"]);
    denied(
        &t,
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.signature.value",
    );
    let mut t = token();
    sign_capability_token(&mut t, &key(9), &key_id("alice_1")).unwrap();
    denied(
        &t,
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.signature.value",
    );
    let mut t = token();
    sign_capability_token(&mut t, &key(1), &key_id("alice_2")).unwrap();
    denied(
        &t,
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.signature.key_id",
    );
    let mut t = token();
    t.as_object_mut().unwrap().remove("signature");
    denied(
        &t,
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token.signature",
    );
}

#[test]
fn malformed_tokens_are_denied_with_their_field() {
    let w = World::default();
    for (k, v, field) in [
        ("id", json!("tok_1"), "capability_token.id"),
        ("issued_to", json!("bob"), "capability_token.issued_to"),
        ("epoch", json!(-1), "capability_token.epoch"),
        ("epoch", json!("3"), "capability_token.epoch"),
        ("grants", json!([]), "capability_token.grants"),
        ("grants", json!(["superuser"]), "capability_token.grants[0]"),
        ("scope", json!({}), "capability_token.scope.thread_id"),
    ] {
        let mut t = token();
        t[k] = v;
        denied(&signed(t), &req(), &w, ErrorCode::CapabilityDenied, field);
    }
    denied(
        &json!("cap_x"),
        &req(),
        &w,
        ErrorCode::CapabilityDenied,
        "capability_token",
    );
}

#[test]
fn pop_is_required_for_sensitive_intents_of_key_bound_tokens() {
    let w = World::default();
    let mut t = token();
    t["grants"] = json!(["admin"]);
    t["cnf"] = json!({"key_id": "k_sign_bob_1"});
    let t = signed(t);
    let mut r = req();
    r.required = grant_for_intent("capability.revoked@v1");
    r.intent = Some("capability.revoked@v1");
    denied(
        &t,
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "content.structured.parameters.pop_signature",
    );
    let ts = "2026-02-16T11:59:00Z";
    r.pop = Some((sign_pop(&key(2), CAP, ENV_ID, ts), ts.to_owned()));
    assert_eq!(authorize(&t, &r, &w), Ok(()));
    // Bound to another envelope, or signed by another key: refused.
    r.pop = Some((sign_pop(&key(2), CAP, ENV_ID_2, ts), ts.to_owned()));
    denied(
        &t,
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "content.structured.parameters.pop_signature",
    );
    r.pop = Some((sign_pop(&key(3), CAP, ENV_ID, ts), ts.to_owned()));
    denied(
        &t,
        &r,
        &w,
        ErrorCode::CapabilityDenied,
        "content.structured.parameters.pop_signature",
    );
    // A non-sensitive intent needs no proof.
    let mut r = req();
    r.intent = Some("thread.add_participant@v1");
    assert_eq!(authorize(&t, &r, &w), Ok(()));
}

#[test]
fn thread_ops_map_to_their_grants() {
    assert_eq!(
        grant_for_intent("thread.add_participant@v1"),
        Grant::AddParticipant
    );
    assert_eq!(grant_for_intent("thread.resolve@v1"), Grant::Resolve);
    assert_eq!(grant_for_intent("thread.lock@v1"), Grant::Lock);
    assert_eq!(grant_for_intent("thread.update@v1"), Grant::Label);
    assert_eq!(grant_for_intent("thread.reopen@v1"), Grant::Admin);
    assert_eq!(grant_for_intent("capability.revoked@v1"), Grant::Admin);
    for g in Grant::ALL {
        assert_eq!(Grant::parse(g.as_str()), Some(g));
    }
}

/// The existing v1.1 node's `capability-pop-v1` vector.
#[test]
fn existing_node_pop_vector_interoperates() {
    let pk = public_key_from_spki_pem(
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAomL6Ycyx2K4gvuTeMh2e2DezAJcUuv0ViHnfZq0hF08=\n-----END PUBLIC KEY-----",
    )
    .unwrap();
    let sig =
        "Y3Z_HarftGOnHgzQaibxyDsD7PjYhazTitke8L5cC0HAKqigmXfFlpljOmbdatsYl2yQh8peVrS-qUq3GUS2Ag";
    let (cap, env, ts) = (
        "cap_01ARZ3NDEKTSV4RRFFQ69G5FG1",
        "env_01ARZ3NDEKTSV4RRFFQ69G5FG2",
        "2025-01-15T12:00:00.000Z",
    );
    assert!(verify_pop(&pk, cap, env, ts, sig));
    assert!(!verify_pop(
        &pk,
        "cap_01ARZ3NDEKTSV4RRFFQ69WRONG",
        env,
        ts,
        sig
    ));
    assert!(!verify_pop(&pk, cap, "env_WRONG", ts, sig));
    assert!(!verify_pop(&pk, cap, env, "2025-01-15T13:00:00.000Z", sig));
}

#[test]
fn a_revocation_request_is_the_revoking_op_for_its_token_and_thread() {
    use loom_protocol::capability::{REVOKE_INTENT, check_revocation_op};
    let thread = ThreadId::parse("thr_01JMKB7X9Q2RVHF3KN4TYZPG00").unwrap();
    let cap = CapabilityId::parse(CAP).unwrap();
    let good = json!({
        "type": "thread_op",
        "thread_id": thread.to_string(),
        "content": {"structured": {"intent": REVOKE_INTENT, "parameters": {"capability_id": CAP}}},
    });
    assert!(check_revocation_op(&good, &thread, &cap).is_ok());
    // Each member in turn, in the order they are checked; the first broken one is named.
    let broken = |pointer: &str, v: Value| {
        let mut op = good.clone();
        *op.pointer_mut(pointer).unwrap() = v;
        let e = check_revocation_op(&op, &thread, &cap).unwrap_err();
        assert_eq!(e.code, ErrorCode::EnvelopeInvalid, "{e:?}");
        e.field
    };
    assert_eq!(broken("/type", json!("message")), "type");
    assert_eq!(
        broken("/content/structured/intent", json!("thread.lock@v1")),
        "content.structured.intent"
    );
    assert_eq!(
        broken("/thread_id", json!("thr_01JMKB7X9Q2RVHF3KN4TYZPG01")),
        "thread_id"
    );
    assert_eq!(
        broken(
            "/content/structured/parameters/capability_id",
            json!("cap_01JMKB9C4E5RPJH7MQ8VXCWK01")
        ),
        "content.structured.parameters.capability_id"
    );
    let mut both = good.clone();
    both["type"] = json!("message");
    both["thread_id"] = json!("thr_01JMKB7X9Q2RVHF3KN4TYZPG01");
    assert_eq!(
        check_revocation_op(&both, &thread, &cap).unwrap_err().field,
        "type"
    );
}

#[test]
fn the_presented_token_names_the_issuer_to_resolve() {
    use loom_protocol::capability::presented_token_issuer;
    let env = json!({"content": {"structured": {"intent": "thread.lock@v1", "parameters": {
        "capability_token": {"issued_by": "loom://alice@a.test", "signature": {"key_id": "k_sign_alice_1"}}
    }}}});
    let (who, kid) = presented_token_issuer(&env).unwrap();
    assert_eq!(
        (who.to_string().as_str(), kid.as_str()),
        ("loom://alice@a.test", "k_sign_alice_1")
    );
    // No token, or an issuer that is not an address: nothing to resolve.
    assert_eq!(presented_token_issuer(&json!({"content": {}})), None);
    let bad = json!({"content": {"structured": {"parameters": {"capability_token": {"issued_by": "alice"}}}}});
    assert_eq!(presented_token_issuer(&bad), None);
    // A token without a signature key id still names its issuer (the check refuses it later).
    let unsigned = json!({"content": {"structured": {"parameters": {"capability_token": {"issued_by": "loom://alice@a.test"}}}}});
    assert_eq!(presented_token_issuer(&unsigned).unwrap().1, "");
}
