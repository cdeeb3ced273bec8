//! Delegation chain verification (v1.1 §13.3, §13.3.1, §13.4; v1.0 §12.4).

mod common;

use common::*;
use ed25519_dalek::VerifyingKey;
use loom_protocol::delegation::{
    ChainPolicy, DelegationResolver, LinkRef, RevocationList, delegation_signing_payload,
    sign_delegation_link, sign_delegation_link_legacy, verify_delegation_chain,
};
use loom_protocol::envelope::SenderType;
use loom_protocol::keys::{SigContext, public_key_from_spki_pem, signature_from_b64url, verify};
use loom_protocol::{Address, ErrorCode, FixedClock, ProtocolError, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;

const OWNER: &str = "loom://almarion@node.test";
const AGENT: &str = "loom://assistant.almarion@node.test";
const SUB: &str = "loom://cal.assistant.almarion@node.test";
const NOW: &str = "2026-02-16T12:00:00Z";

struct World {
    ids: BTreeMap<Address, (SenderType, Vec<(String, VerifyingKey)>)>,
    revoked: RevocationList,
}

impl DelegationResolver for World {
    fn signing_keys(&self, identity: &Address) -> Option<Vec<(String, VerifyingKey)>> {
        self.ids.get(identity).map(|(_, k)| k.clone())
    }
    fn identity_type(&self, identity: &Address) -> Option<SenderType> {
        self.ids.get(identity).map(|(t, _)| *t)
    }
    fn is_revoked(&self, link: &LinkRef<'_>) -> bool {
        self.revoked.contains(link)
    }
}

fn addr(s: &str) -> Address {
    Address::parse(s).unwrap()
}

fn world() -> World {
    let mut ids = BTreeMap::new();
    ids.insert(
        addr(OWNER),
        (
            SenderType::Human,
            vec![("k_sign_owner_1".to_owned(), key(10).verifying_key())],
        ),
    );
    ids.insert(
        addr(AGENT),
        (
            SenderType::Agent,
            vec![("k_sign_agent_1".to_owned(), key(11).verifying_key())],
        ),
    );
    ids.insert(
        addr(SUB),
        (
            SenderType::Agent,
            vec![("k_sign_sub_1".to_owned(), key(12).verifying_key())],
        ),
    );
    World {
        ids,
        revoked: RevocationList::default(),
    }
}

fn link(delegator: &str, delegate: &str, scope: &[&str]) -> Value {
    json!({
        "id": format!("dlg_{}", delegate.len()),
        "delegator": delegator,
        "delegate": delegate,
        "scope": scope,
        "created_at": "2026-01-15T10:00:00Z",
        "expires_at": "2026-06-01T00:00:00Z",
        "revocable": true,
        "allow_sub_delegation": true,
        "max_sub_delegation_depth": 2
    })
}

/// Signs `l` with the delegator's fixture key.
fn signed(mut l: Value) -> Value {
    let (seed, kid) = match l["delegator"].as_str().unwrap() {
        OWNER => (10, "owner_1"),
        AGENT => (11, "agent_1"),
        _ => (12, "sub_1"),
    };
    sign_delegation_link(&mut l, &key(seed), &key_id(kid)).unwrap();
    l
}

fn agent_envelope(sender: &str, chain: Vec<Value>) -> Value {
    let mut env = message();
    env["from"] = json!({ "identity": sender, "key_id": "k_sign_agent_1", "type": "agent", "delegation_chain": chain });
    env
}

fn check(env: &Value, w: &World) -> Result<(), ProtocolError> {
    let clock = FixedClock(Timestamp::parse(NOW).unwrap());
    verify_delegation_chain(env, w, &ChainPolicy::default(), &clock)
}

fn denied(env: &Value, w: &World, field: &str) {
    let e = check(env, w).expect_err("chain should be rejected");
    assert_eq!(e.code, ErrorCode::DelegationInvalid, "{e}");
    assert_eq!(e.field, field, "{e}");
}

fn one_link(scope: &[&str]) -> Value {
    agent_envelope(AGENT, vec![signed(link(OWNER, AGENT, scope))])
}

fn two_links(root: &[&str], sub: &[&str]) -> Value {
    agent_envelope(
        SUB,
        vec![
            signed(link(OWNER, AGENT, root)),
            signed(link(AGENT, SUB, sub)),
        ],
    )
}

#[test]
fn valid_chains_pass() {
    let w = world();
    assert_eq!(check(&one_link(&["message.*"]), &w), Ok(()));
    assert_eq!(check(&one_link(&["*"]), &w), Ok(()));
    assert_eq!(check(&one_link(&["message.general"]), &w), Ok(()));
    // The action is the intent when there is one (message.general@v1), else {type}.send@v1.
    denied(
        &one_link(&["message.send"]),
        &w,
        "from.delegation_chain[0].scope",
    );
    let mut plain = one_link(&["message.send"]);
    plain["content"]
        .as_object_mut()
        .unwrap()
        .remove("structured");
    assert_eq!(check(&plain, &w), Ok(()));
    assert_eq!(
        check(
            &two_links(&["message.*", "calendar.*"], &["message.general"]),
            &w
        ),
        Ok(())
    );
    assert_eq!(
        check(&two_links(&["message.*"], &["message.*"]), &w),
        Ok(())
    );
}

#[test]
fn chain_presence_and_length() {
    let w = world();
    denied(&agent_envelope(AGENT, vec![]), &w, "from.delegation_chain");
    let mut env = one_link(&["*"]);
    env["from"]
        .as_object_mut()
        .unwrap()
        .remove("delegation_chain");
    denied(&env, &w, "from.delegation_chain");
    let chain: Vec<Value> = (0..11)
        .map(|_| signed(link(OWNER, AGENT, &["*"])))
        .collect();
    denied(&agent_envelope(AGENT, chain), &w, "from.delegation_chain");
    let clock = FixedClock(Timestamp::parse(NOW).unwrap());
    let short = ChainPolicy {
        max_chain_length: 1,
        ..ChainPolicy::default()
    };
    let e = verify_delegation_chain(
        &two_links(&["message.*"], &["message.*"]),
        &w,
        &short,
        &clock,
    )
    .unwrap_err();
    assert_eq!(e.field, "from.delegation_chain");
}

#[test]
fn root_delegator_must_be_known_and_not_an_agent() {
    let w = world();
    denied(
        &agent_envelope(SUB, vec![signed(link(AGENT, SUB, &["message.*"]))]),
        &w,
        "from.delegation_chain[0].delegator",
    );
    let clock = FixedClock(Timestamp::parse(NOW).unwrap());
    let lax = ChainPolicy {
        enforce_root_delegator_type: false,
        ..ChainPolicy::default()
    };
    let env = agent_envelope(SUB, vec![signed(link(AGENT, SUB, &["message.*"]))]);
    assert_eq!(verify_delegation_chain(&env, &w, &lax, &clock), Ok(()));
    let mut l = link(OWNER, AGENT, &["*"]);
    l["delegator"] = json!("loom://stranger@node.test");
    sign_delegation_link(&mut l, &key(10), &key_id("owner_1")).unwrap();
    denied(
        &agent_envelope(AGENT, vec![l]),
        &w,
        "from.delegation_chain[0].delegator",
    );
}

#[test]
fn continuity_subset_and_sub_delegation_rules() {
    let w = world();
    // Link 1's delegator is not link 0's delegate.
    let env = agent_envelope(
        SUB,
        vec![
            signed(link(OWNER, AGENT, &["*"])),
            signed(link(OWNER, SUB, &["message.*"])),
        ],
    );
    denied(&env, &w, "from.delegation_chain[1].delegator");
    // Scope escalation.
    denied(
        &two_links(&["calendar.*"], &["task.create"]),
        &w,
        "from.delegation_chain[1].scope",
    );
    denied(
        &two_links(&["message.general"], &["message.*"]),
        &w,
        "from.delegation_chain[1].scope",
    );
    // '*' only at the root.
    denied(
        &two_links(&["*"], &["*"]),
        &w,
        "from.delegation_chain[1].scope[0]",
    );
    // allow_sub_delegation false.
    let mut root = link(OWNER, AGENT, &["message.*"]);
    root["allow_sub_delegation"] = json!(false);
    let env = agent_envelope(
        SUB,
        vec![signed(root), signed(link(AGENT, SUB, &["message.*"]))],
    );
    denied(&env, &w, "from.delegation_chain[1]");
    // max_sub_delegation_depth 0 forbids any further link.
    let mut root = link(OWNER, AGENT, &["message.*"]);
    root["max_sub_delegation_depth"] = json!(0);
    let env = agent_envelope(
        SUB,
        vec![signed(root), signed(link(AGENT, SUB, &["message.*"]))],
    );
    denied(
        &env,
        &w,
        "from.delegation_chain[0].max_sub_delegation_depth",
    );
}

#[test]
fn sub_delegation_must_be_allowed_explicitly_and_star_needs_a_human_root() {
    let mut w = world();
    let mut root = link(OWNER, AGENT, &["message.*"]);
    root.as_object_mut().unwrap().remove("allow_sub_delegation");
    let env = agent_envelope(
        SUB,
        vec![signed(root), signed(link(AGENT, SUB, &["message.*"]))],
    );
    denied(&env, &w, "from.delegation_chain[1]");
    w.ids.get_mut(&addr(OWNER)).unwrap().0 = SenderType::Service;
    denied(&one_link(&["*"]), &w, "from.delegation_chain[0].scope");
    assert_eq!(
        check(&one_link(&["message.*"]), &w),
        Ok(()),
        "a service may delegate named scopes"
    );
}

#[test]
fn created_at_and_expiry() {
    let w = world();
    let mut l = link(OWNER, AGENT, &["*"]);
    l.as_object_mut().unwrap().remove("created_at");
    denied(
        &agent_envelope(AGENT, vec![signed(l)]),
        &w,
        "from.delegation_chain[0].created_at",
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l["created_at"] = json!("2026-02-16T12:05:01Z");
    denied(
        &agent_envelope(AGENT, vec![signed(l)]),
        &w,
        "from.delegation_chain[0].created_at",
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l["created_at"] = json!("2026-02-16T12:05:00Z");
    assert_eq!(
        check(&agent_envelope(AGENT, vec![signed(l)]), &w),
        Ok(()),
        "exactly at the skew limit is allowed"
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l["created_at"] = json!("yesterday");
    denied(
        &agent_envelope(AGENT, vec![signed(l)]),
        &w,
        "from.delegation_chain[0].created_at",
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l["expires_at"] = json!("2026-02-16T11:59:59.999Z");
    denied(
        &agent_envelope(AGENT, vec![signed(l)]),
        &w,
        "from.delegation_chain[0].expires_at",
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l["expires_at"] = json!(NOW);
    assert_eq!(
        check(&agent_envelope(AGENT, vec![signed(l)]), &w),
        Ok(()),
        "valid up to and including expires_at (not in the past)"
    );
    let mut l = link(OWNER, AGENT, &["*"]);
    l.as_object_mut().unwrap().remove("expires_at");
    assert_eq!(
        check(&agent_envelope(AGENT, vec![signed(l)]), &w),
        Ok(()),
        "no expiry never expires"
    );
}

#[test]
fn revocation_by_id_and_by_pair() {
    let mut w = world();
    let env = one_link(&["*"]);
    let id = env["from"]["delegation_chain"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    w.revoked.revoke_id(&id, Timestamp::parse(NOW).unwrap());
    denied(&env, &w, "from.delegation_chain[0]");
    let mut w = world();
    w.revoked.revoke_pair(
        addr(OWNER),
        addr(AGENT),
        Timestamp::parse("2026-02-01T00:00:00Z").unwrap(),
    );
    denied(&env, &w, "from.delegation_chain[0]");
    // A delegation created after the revocation is valid again.
    let mut fresh = link(OWNER, AGENT, &["*"]);
    fresh["created_at"] = json!("2026-02-10T00:00:00Z");
    assert_eq!(
        check(&agent_envelope(AGENT, vec![signed(fresh)]), &w),
        Ok(())
    );
}

#[test]
fn link_signatures() {
    let w = world();
    // Tampered scope after signing.
    let mut env = one_link(&["message.general"]);
    env["from"]["delegation_chain"][0]["scope"] = json!(["*"]);
    denied(&env, &w, "from.delegation_chain[0].signature");
    // Signed by the wrong key.
    let mut l = link(OWNER, AGENT, &["*"]);
    sign_delegation_link(&mut l, &key(99), &key_id("owner_1")).unwrap();
    denied(
        &agent_envelope(AGENT, vec![l]),
        &w,
        "from.delegation_chain[0].signature",
    );
    // Unknown key id.
    let mut l = link(OWNER, AGENT, &["*"]);
    sign_delegation_link(&mut l, &key(10), &key_id("owner_9")).unwrap();
    denied(
        &agent_envelope(AGENT, vec![l]),
        &w,
        "from.delegation_chain[0].key_id",
    );
    // Unknown context.
    let mut env = one_link(&["*"]);
    env["from"]["delegation_chain"][0]["signature_context"] = json!("LOOM-DELEGATION-SIG-v2");
    denied(&env, &w, "from.delegation_chain[0].signature_context");
    // Legacy signatures pass during the migration window, and not when it is closed.
    let mut l = link(OWNER, AGENT, &["*"]);
    sign_delegation_link_legacy(&mut l, &key(10), &key_id("owner_1")).unwrap();
    let env = agent_envelope(AGENT, vec![l.clone()]);
    assert_eq!(check(&env, &w), Ok(()));
    let clock = FixedClock(Timestamp::parse(NOW).unwrap());
    let closed = ChainPolicy {
        accept_legacy_signatures: false,
        ..ChainPolicy::default()
    };
    assert!(verify_delegation_chain(&env, &w, &closed, &clock).is_err());
    // Declaring the context on a legacy signature removes the fallback.
    let mut l2 = l.clone();
    l2["signature_context"] = json!("LOOM-DELEGATION-SIG-v1");
    denied(
        &agent_envelope(AGENT, vec![l2]),
        &w,
        "from.delegation_chain[0].signature",
    );
    // Without key_id, a delegator with one key is fine; with two keys it is ambiguous.
    let mut l = link(OWNER, AGENT, &["*"]);
    sign_delegation_link(&mut l, &key(10), &key_id("owner_1")).unwrap();
    l.as_object_mut().unwrap().remove("key_id");
    // key_id is signed, so re-sign without it through the raw payload.
    l.as_object_mut().unwrap().remove("signature");
    let payload = delegation_signing_payload(&l).unwrap();
    l["signature"] = json!(loom_protocol::keys::sign_b64url(
        &key(10),
        Some(SigContext::DELEGATION),
        &payload
    ));
    assert_eq!(check(&agent_envelope(AGENT, vec![l.clone()]), &w), Ok(()));
    let mut w2 = world();
    w2.ids
        .get_mut(&addr(OWNER))
        .unwrap()
        .1
        .push(("k_sign_owner_2".into(), key(13).verifying_key()));
    denied(
        &agent_envelope(AGENT, vec![l]),
        &w2,
        "from.delegation_chain[0].key_id",
    );
}

#[test]
fn leaf_must_be_the_sender_and_permit_the_action() {
    let w = world();
    let env = agent_envelope(SUB, vec![signed(link(OWNER, AGENT, &["*"]))]);
    denied(&env, &w, "from.delegation_chain[0].delegate");
    denied(
        &one_link(&["calendar.*"]),
        &w,
        "from.delegation_chain[0].scope",
    );
    // A task envelope is judged by its intent: task.create permits task.create@v1.
    let mut env = one_link(&["task.create"]);
    env["type"] = json!("task");
    env["content"]["structured"]["intent"] = json!("task.create@v1");
    assert_eq!(check(&env, &w), Ok(()));
    env["content"]["structured"]["intent"] = json!("task.delete@v1");
    denied(&env, &w, "from.delegation_chain[0].scope");
}

#[test]
fn malformed_links_are_delegation_invalid() {
    let w = world();
    for (mutate, field) in [
        (json!({"scope": []}), "from.delegation_chain[0].scope"),
        (
            json!({"scope": "message.*"}),
            "from.delegation_chain[0].scope",
        ),
        (
            json!({"scope": ["Message.*"]}),
            "from.delegation_chain[0].scope[0]",
        ),
        (
            json!({"delegate": "not an address"}),
            "from.delegation_chain[0].delegate",
        ),
        (
            json!({"delegator": "loom://Almarion@node.test"}),
            "from.delegation_chain[0].delegator",
        ),
        (
            json!({"allow_sub_delegation": "yes"}),
            "from.delegation_chain[0].allow_sub_delegation",
        ),
        (
            json!({"max_sub_delegation_depth": -1}),
            "from.delegation_chain[0].max_sub_delegation_depth",
        ),
    ] {
        let mut l = link(OWNER, AGENT, &["*"]);
        for (k, v) in mutate.as_object().unwrap() {
            l[k] = v.clone();
        }
        denied(&agent_envelope(AGENT, vec![signed(l)]), &w, field);
    }
    denied(
        &agent_envelope(AGENT, vec![json!("dlg")]),
        &w,
        "from.delegation_chain[0]",
    );
}

/// The existing v1.1 node's `delegation-chain-v1` fixture: its link signature verifies with
/// the context prefix over the link without `signature` and `signature_context`.
#[test]
fn existing_node_delegation_vector_signature_verifies() {
    let pk = public_key_from_spki_pem(
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA4cnicE0ZzhaLMhnoOJA/SOwBbadnpP68ZeuPuY81JWQ=\n-----END PUBLIC KEY-----",
    )
    .unwrap();
    let link = json!({
        "delegator": "loom://owner@node.test", "delegate": "loom://agent@node.test",
        "scope": {"actions": ["send"]}, "created_at": "2025-01-15T12:00:00.000Z",
        "expires_at": "2026-01-15T12:00:00.000Z", "signature_context": "LOOM-DELEGATION-SIG-v1",
        "signature": "sjaMF81GuXvnpMV9namdcWUOpYBLIf6cd42FjGs6ytzy6lFTD0ULfe4KEq0tvxOumxuhGdBYsxkytY4yxQOlAQ"
    });
    let sig = signature_from_b64url(link["signature"].as_str().unwrap()).unwrap();
    let payload = delegation_signing_payload(&link).unwrap();
    assert!(verify(&pk, Some(SigContext::DELEGATION), &payload, &sig));
    assert!(!verify(&pk, None, &payload, &sig));
}
