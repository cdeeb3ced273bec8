//! The rules a node applies to registrations (DESIGN.md §9, v1.1 §6), to delegation links
//! submitted for storage (§13.1–§13.3.1, §16.5) and to the tokens it stored (§12.3, §12.5),
//! on the functions alone.

use ed25519_dalek::SigningKey;
use loom_protocol::capability::{Grant, StoredToken, TokenStatus};
use loom_protocol::delegation::{
    Delegator, check_new_link, check_revocable, delegation_signing_payload, link_status,
    sign_delegation_link, sign_delegation_link_legacy,
};
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::{SigContext, public_key_to_spki_pem, sign_b64url, signing_key_from_seed};
use loom_protocol::registration::{
    IdentityPatch, KeyInput, RegisteredMembers, Registration, RegistrationRules, SpecRegistration,
    parse_added_key, present_type_members, registration_document_hash, registration_text,
};
use loom_protocol::{Address, ErrorCode, ProtocolError, Timestamp};
use serde_json::{Value, json};

const DOMAIN: &str = "node.test";
const NOW: &str = "2026-03-01T12:00:00Z";

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn key(seed: u8) -> SigningKey {
    signing_key_from_seed(&[seed; 32])
}

fn registration(id: &str, kind: &str) -> Value {
    json!({
        "id": id,
        "type": kind,
        "display_name": "Alice",
        "signing_keys": [{"key_id": "k_sign_alice_1", "public_key_pem": public_key_to_spki_pem(&key(1).verifying_key())}],
        "registration_proof": {"challenge_id": "ch_1", "key_id": "k_sign_alice_1", "signature": "x"},
    })
}

fn refused(raw: &Value, rules: &dyn RegistrationRules) -> ProtocolError {
    Registration::parse(raw, DOMAIN, now(), rules).unwrap_err()
}

#[test]
fn a_registration_is_refused_at_its_first_broken_rule() {
    let none = SpecRegistration;
    let e = refused(&json!({"id": "loom://alice@node.test"}), &none);
    assert_eq!(e.field, "$body");
    assert!(e.rule.starts_with("not a registration request"), "{e:?}");
    for (id, rule) in [
        ("loom://Alice@node.test", "canonical lowercase"),
        (
            "bridge://alice@mail.test",
            "reserved for bridged identities",
        ),
        ("loom://alice@other.test", "this node hosts node.test"),
    ] {
        let e = refused(&registration(id, "human"), &none);
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::EnvelopeInvalid, "id")
        );
        assert!(e.rule.contains(rule), "{id}: {e:?}");
    }
    let e = refused(&registration("loom://alice@node.test", "node"), &none);
    assert_eq!(e.field, "type");
    let mut no_keys = registration("loom://alice@node.test", "human");
    no_keys["signing_keys"] = json!([]);
    assert_eq!(refused(&no_keys, &none).field, "signing_keys");
    let mut bad_id = registration("loom://alice@node.test", "human");
    bad_id["signing_keys"][0]["key_id"] = "alice-1".into();
    assert_eq!(refused(&bad_id, &none).field, "signing_keys[0].key_id");
    let e = refused(&registration("loom://alice@node.test", "team"), &none);
    assert_eq!(e.field, "members");
}

/// A shim breaking one registration rule per flag, each by overriding its step alone.
#[derive(Default)]
struct Lax {
    any_key_id: bool,
    team_without_members: bool,
    non_canonical: bool,
}

impl RegistrationRules for Lax {
    fn registered_id(&self, s: &str) -> Result<Address, ProtocolError> {
        if self.non_canonical {
            return Address::parse(s)
                .map_err(|e| ProtocolError::invalid("id", e.to_string(), "test"));
        }
        SpecRegistration.registered_id(s)
    }
    fn published_id(&self, id: &Address, as_written: &str) -> String {
        if self.non_canonical {
            return as_written.to_owned();
        }
        SpecRegistration.published_id(id, as_written)
    }
    fn check_key_id(&self, field: &str, key_id: &str, kind: KeyKind) -> Result<(), ProtocolError> {
        if self.any_key_id {
            return Ok(());
        }
        SpecRegistration.check_key_id(field, key_id, kind)
    }
    fn type_members(
        &self,
        kind: loom_protocol::documents::IdentityType,
        raw: &Value,
        now: Timestamp,
    ) -> Result<RegisteredMembers, ProtocolError> {
        match SpecRegistration.type_members(kind, raw, now) {
            Err(e) if self.team_without_members && e.field.starts_with("members") => {
                Ok(RegisteredMembers {
                    members: present_type_members(raw),
                    agent: None,
                })
            }
            other => other,
        }
    }
}

#[test]
fn each_step_is_the_one_place_of_its_rule() {
    let mut bad_id = registration("loom://alice@node.test", "human");
    bad_id["signing_keys"][0]["key_id"] = "alice-1".into();
    let lax = Lax {
        any_key_id: true,
        ..Lax::default()
    };
    assert!(Registration::parse(&bad_id, DOMAIN, now(), &lax).is_ok());
    // A waived failure takes the document's type members as given ...
    let team = registration("loom://alice@node.test", "team");
    let lax = Lax {
        team_without_members: true,
        ..Lax::default()
    };
    let r = Registration::parse(&team, DOMAIN, now(), &lax).unwrap();
    assert!(r.type_members.is_empty());
    // ... and waives nothing else: members present, routing policy missing.
    let mut team = registration("loom://alice@node.test", "team");
    team["members"] = json!([]);
    assert_eq!(
        Registration::parse(&team, DOMAIN, now(), &lax)
            .unwrap_err()
            .field,
        "routing_policy"
    );
    let mixed = registration("loom://Alice@node.test", "human");
    let lax = Lax {
        non_canonical: true,
        ..Lax::default()
    };
    let r = Registration::parse(&mixed, DOMAIN, now(), &lax).unwrap();
    assert_eq!(r.id.to_string(), "loom://alice@node.test");
    assert_eq!(
        r.document(DOMAIN, NOW)["id"],
        "loom://Alice@node.test",
        "the document keeps the given spelling"
    );
}

#[test]
fn the_proof_binds_identity_key_document_and_nonce() {
    let mut raw = registration("loom://alice@node.test", "human");
    let text = registration_text(
        "loom://alice@node.test",
        "k_sign_alice_1",
        &registration_document_hash(&raw),
        "n0nce",
    );
    raw["registration_proof"]["signature"] = sign_b64url(&key(1), None, text.as_bytes()).into();
    let none = SpecRegistration;
    let r = Registration::parse(&raw, DOMAIN, now(), &none).unwrap();
    assert!(r.verify_proof("n0nce", &none).is_ok());
    let e = r.verify_proof("other", &none).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::SignatureInvalid, "registration_proof.signature")
    );
    let doc = r.document(DOMAIN, NOW);
    assert_eq!(doc["public_keys"]["signing"][0]["status"], "active");
    assert_eq!(doc["node"], DOMAIN);
    let mut other_key = raw.clone();
    other_key["registration_proof"]["key_id"] = "k_sign_alice_9".into();
    let r = Registration::parse(&other_key, DOMAIN, now(), &none).unwrap();
    assert_eq!(
        r.proof_key().unwrap_err().field,
        "registration_proof.key_id"
    );
}

#[test]
fn added_keys_and_patches_follow_section_16_3() {
    let node_key = KeyInput {
        key_id: "k_node_sign_1".into(),
        public_key_pem: None,
        public_key: None,
    };
    assert_eq!(
        parse_added_key(&node_key).unwrap_err().rule,
        "node keys belong to nodes"
    );
    let enc = KeyInput {
        key_id: "k_enc_alice_2".into(),
        public_key_pem: None,
        public_key: Some(loom_protocol::keys::b64url_encode(&[7; 32])),
    };
    assert_eq!(parse_added_key(&enc).unwrap().0, KeyKind::Encryption);
    assert_eq!(
        IdentityPatch::parse(&json!({"id": "loom://x@node.test"}))
            .unwrap_err()
            .field,
        "id"
    );
    let p = IdentityPatch::parse(&json!({"display_name": null, "metadata": {"a": 1}})).unwrap();
    let mut doc = json!({"display_name": "A", "id": "loom://a@node.test"});
    p.apply(&mut doc);
    assert_eq!(
        doc,
        json!({"id": "loom://a@node.test", "metadata": {"a": 1}})
    );
}

const ALICE: &str = "loom://alice@node.test";
const BOT: &str = "loom://bot@node.test";

fn link(scope: &[&str]) -> Value {
    json!({
        "delegator": ALICE,
        "delegate": BOT,
        "scope": scope,
        "created_at": "2026-03-01T11:00:00Z",
        "expires_at": "2026-04-01T00:00:00Z",
    })
}

fn signed(mut l: Value) -> Value {
    sign_delegation_link(
        &mut l,
        &key(1),
        &KeyId::parse("k_sign_alice_1", KeyKind::Signing).unwrap(),
    )
    .unwrap();
    l
}

fn check(
    l: &Value,
    is_human: bool,
    keys: &[(String, ed25519_dalek::VerifyingKey)],
) -> Result<(), ProtocolError> {
    let alice = Address::parse(ALICE).unwrap();
    check_new_link(
        l,
        Delegator {
            identity: &alice,
            is_human,
            keys,
        },
        now(),
    )
    .map(|_| ())
}

#[test]
fn links_for_storage_report_each_rule_with_its_code() {
    let keys = vec![("k_sign_alice_1".to_owned(), key(1).verifying_key())];
    let good = signed(link(&["calendar.read"]));
    let l = check_new_link(
        &good,
        Delegator {
            identity: &Address::parse(ALICE).unwrap(),
            is_human: true,
            keys: &keys,
        },
        now(),
    )
    .unwrap();
    assert_eq!(l.delegate.to_string(), BOT);
    assert_eq!(l.scope, vec!["calendar.read".to_owned()]);
    let code = |l: &Value, human| {
        let e = check(l, human, &keys).unwrap_err();
        (e.code, e.field)
    };
    let mut other = good.clone();
    other["delegator"] = BOT.into();
    assert_eq!(
        code(&other, true),
        (ErrorCode::CapabilityDenied, "delegator".into())
    );
    let mut own = link(&["*"]);
    own["delegate"] = ALICE.into();
    assert_eq!(
        code(&own, true),
        (ErrorCode::EnvelopeInvalid, "delegate".into())
    );
    assert_eq!(
        code(&signed(link(&["*"])), false),
        (ErrorCode::EnvelopeInvalid, "scope[0]".into())
    );
    assert!(check(&signed(link(&["*"])), true, &keys).is_ok());
    let mut future = link(&["*"]);
    future["created_at"] = "2026-03-01T12:10:00Z".into();
    assert_eq!(
        code(&signed(future), true),
        (ErrorCode::DelegationInvalid, "created_at".into())
    );
    let mut expired = link(&["*"]);
    expired["expires_at"] = NOW.into();
    assert_eq!(
        code(&signed(expired), true),
        (ErrorCode::DelegationInvalid, "expires_at".into())
    );
    let mut tampered = good.clone();
    tampered["scope"] = json!(["*"]);
    assert_eq!(
        code(&tampered, true),
        (ErrorCode::DelegationInvalid, "signature".into())
    );
    let mut unknown = good.clone();
    unknown["key_id"] = "k_sign_alice_9".into();
    assert_eq!(
        code(&unknown, true),
        (ErrorCode::DelegationInvalid, "key_id".into())
    );
    let two = vec![
        keys[0].clone(),
        ("k_sign_alice_2".to_owned(), key(2).verifying_key()),
    ];
    // Signed without key_id: the delegator's only key is meant.
    let mut unnamed = link(&["calendar.read"]);
    let payload = delegation_signing_payload(&unnamed).unwrap();
    unnamed["signature_context"] = SigContext::DELEGATION.0.into();
    unnamed["signature"] = sign_b64url(&key(1), Some(SigContext::DELEGATION), &payload).into();
    assert_eq!(
        check(&unnamed, true, &two).unwrap_err().field,
        "key_id",
        "several keys need key_id"
    );
    assert!(check(&unnamed, true, &keys).is_ok(), "one key needs none");
    let mut context = good.clone();
    context["signature_context"] = "OTHER".into();
    assert_eq!(
        code(&context, true),
        (ErrorCode::EnvelopeInvalid, "signature_context".into())
    );
    let mut legacy = link(&["*"]);
    sign_delegation_link_legacy(
        &mut legacy,
        &key(1),
        &KeyId::parse("k_sign_alice_1", KeyKind::Signing).unwrap(),
    )
    .unwrap();
    assert!(check(&legacy, true, &keys).is_ok(), "§7.3 legacy fallback");
}

#[test]
fn stored_links_have_a_status_and_may_forbid_revocation() {
    let l = link(&["*"]);
    assert_eq!(link_status(&l, false, now()), "active");
    assert_eq!(link_status(&l, true, now()), "revoked");
    let later = Timestamp::parse("2026-05-01T00:00:00Z").unwrap();
    assert_eq!(link_status(&l, false, later), "expired");
    assert!(check_revocable(&l).is_ok());
    let mut fixed = l;
    fixed["revocable"] = false.into();
    assert_eq!(
        check_revocable(&fixed).unwrap_err().code,
        ErrorCode::StateTransitionInvalid
    );
}

#[test]
fn a_stored_token_status_is_the_first_that_applies() {
    let t = StoredToken::read(
        &json!({"expires_at": "2026-03-01T11:00:00Z", "grants": ["read", "nonsense"]}),
    );
    assert_eq!(t.grants, vec![Grant::Read]);
    assert!(t.covers(Grant::Read));
    assert!(!t.covers(Grant::Reply));
    assert_eq!(t.status(true, true, 0, 1, now()), TokenStatus::Revoked);
    assert_eq!(t.status(false, true, 0, 1, now()), TokenStatus::Spent);
    assert_eq!(t.status(false, false, 0, 1, now()), TokenStatus::StaleEpoch);
    assert_eq!(t.status(false, false, 1, 1, now()), TokenStatus::Expired);
    let open = StoredToken::read(&json!({"grants": ["admin"]}));
    assert_eq!(open.status(false, false, 1, 1, now()), TokenStatus::Active);
    assert!(
        open.covers(Grant::Reply),
        "admin covers every grant (§12.2)"
    );
}
