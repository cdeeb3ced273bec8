//! Envelope signatures (v1.1 §7.2–§7.3): context prefix, legacy fallback, exclusions,
//! tampering, and interoperability with the existing v1.1 node's published vector.

mod common;

use common::*;
use ed25519_dalek::{Signature, Verifier as _, VerifyingKey};
use loom_protocol::envelope::{
    SignatureMode, envelope_signing_payload, sign_envelope, sign_envelope_legacy,
    verify_envelope_signature,
};
use loom_protocol::keys::{b64url_decode, public_key_from_spki_pem};
use loom_protocol::{ErrorCode, jcs};
use proptest::prelude::*;
use serde_json::{Value, json};

/// The canonical form of `common::message()`, written out by hand from RFC 8785's rules
/// (sorted keys, no whitespace, `signature` and `meta` absent).
const MESSAGE_CANONICAL: &str = concat!(
    r#"{"attachments":[],"content":{"encrypted":false,"human":{"format":"markdown","text":"Can you send the Q1 invoice?"},"#,
    r#""structured":{"intent":"message.general@v1","parameters":{"topic":"q1-invoice"}}},"created_at":"2026-02-16T16:37:00.000Z","#,
    r#""from":{"display":"Alice","identity":"loom://alice@node.test","key_id":"k_sign_alice_1","type":"human"},"#,
    r#""id":"env_01JMKB7X9Q2RVHF3KN4TYZPG00","labels":["finance"],"loom":"1.1","parent_id":null,"priority":"normal","#,
    r#""thread_id":"thr_01JMKB7W8P1QSGF2JM3SXYZR00","to":[{"identity":"loom://bob@node.test","role":"primary"}],"type":"message"}"#
);

#[test]
fn signature_verifies_with_raw_ed25519_over_prefix_and_canonical_bytes() {
    let env = signed_message();
    assert_eq!(env["signature"]["context"], "LOOM-ENVELOPE-SIG-v1");
    assert_eq!(env["signature"]["algorithm"], "Ed25519");
    assert_eq!(env["signature"]["key_id"], "k_sign_alice_1");
    let mut message = b"LOOM-ENVELOPE-SIG-v1\x00".to_vec();
    message.extend_from_slice(MESSAGE_CANONICAL.as_bytes());
    let sig_bytes: [u8; 64] = b64url_decode(env["signature"]["value"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let public: VerifyingKey = key(1).verifying_key();
    public
        .verify(&message, &Signature::from_bytes(&sig_bytes))
        .expect("raw ed25519-dalek verify");
    assert_eq!(
        envelope_signing_payload(&env).unwrap(),
        MESSAGE_CANONICAL.as_bytes()
    );
    assert_eq!(
        verify_envelope_signature(&env, &public),
        Ok(SignatureMode::ContextPrefixed)
    );
}

#[test]
fn meta_and_signature_are_excluded_from_the_signed_form() {
    let mut env = signed_message();
    env["meta"] = json!({"node_id": "node.test", "event_seq": 7, "pending_parent": false});
    assert!(verify_envelope_signature(&env, &key(1).verifying_key()).is_ok());
    env["meta"]["event_seq"] = json!(8);
    assert!(verify_envelope_signature(&env, &key(1).verifying_key()).is_ok());
}

#[test]
fn legacy_signatures_verify_only_through_the_fallback() {
    let mut env = message();
    sign_envelope_legacy(&mut env, &key(1), &key_id("alice_1")).unwrap();
    assert!(env["signature"].get("context").is_none());
    let pk = key(1).verifying_key();
    assert_eq!(
        verify_envelope_signature(&env, &pk),
        Ok(SignatureMode::Legacy)
    );
    // Declaring the context on a legacy signature removes the fallback: it must fail.
    env["signature"]["context"] = json!("LOOM-ENVELOPE-SIG-v1");
    let err = verify_envelope_signature(&env, &pk).unwrap_err();
    assert_eq!(err.code, ErrorCode::SignatureInvalid);
}

#[test]
fn a_prefixed_signature_without_its_context_member_still_verifies_prefixed_first() {
    let mut env = signed_message();
    env["signature"].as_object_mut().unwrap().remove("context");
    assert_eq!(
        verify_envelope_signature(&env, &key(1).verifying_key()),
        Ok(SignatureMode::ContextPrefixed)
    );
    // `"context": null` is treated as absent: the legacy fallback stays available.
    let mut legacy = message();
    sign_envelope_legacy(&mut legacy, &key(1), &key_id("alice_1")).unwrap();
    legacy["signature"]["context"] = json!(null);
    assert_eq!(
        verify_envelope_signature(&legacy, &key(1).verifying_key()),
        Ok(SignatureMode::Legacy)
    );
}

#[test]
fn unknown_context_wrong_key_and_malformed_values_are_rejected() {
    let pk = key(1).verifying_key();
    let mut env = signed_message();
    env["signature"]["context"] = json!("LOOM-ENVELOPE-SIG-v2");
    let e = verify_envelope_signature(&env, &pk).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::SignatureInvalid, "signature.context")
    );

    let env = signed_message();
    let e = verify_envelope_signature(&env, &key(2).verifying_key()).unwrap_err();
    assert_eq!(
        (e.code, e.field.as_str()),
        (ErrorCode::SignatureInvalid, "signature.value")
    );

    for bad in ["", "not base64!", "AAAA", "QUJD=="] {
        let mut env = signed_message();
        env["signature"]["value"] = json!(bad);
        let e = verify_envelope_signature(&env, &pk).unwrap_err();
        assert_eq!(e.code, ErrorCode::SignatureInvalid, "{bad:?}");
    }
    let mut env = signed_message();
    env["signature"]["algorithm"] = json!("RSA");
    assert_eq!(
        verify_envelope_signature(&env, &pk).unwrap_err().field,
        "signature.algorithm"
    );
    let mut env = signed_message();
    env.as_object_mut().unwrap().remove("signature");
    assert_eq!(
        verify_envelope_signature(&env, &pk).unwrap_err().code,
        ErrorCode::SignatureInvalid
    );
}

/// Every leaf of the signed form, as a JSON pointer.
fn leaf_pointers(v: &Value, prefix: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                if prefix.is_empty() && (k == "signature" || k == "meta") {
                    continue;
                }
                leaf_pointers(v, format!("{prefix}/{k}"), out);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for (i, v) in a.iter().enumerate() {
                leaf_pointers(v, format!("{prefix}/{i}"), out);
            }
        }
        _ => out.push(prefix),
    }
}

#[test]
fn tampering_with_any_signed_field_breaks_the_signature() {
    let env = signed_message();
    let pk = key(1).verifying_key();
    let mut pointers = Vec::new();
    leaf_pointers(&env, String::new(), &mut pointers);
    assert!(pointers.len() >= 18, "{pointers:?}");
    for p in pointers {
        let mut t = env.clone();
        let slot = t.pointer_mut(&p).unwrap();
        *slot = match slot {
            Value::String(s) => json!(format!("{s}x")),
            Value::Bool(b) => json!(!*b),
            Value::Number(n) => json!(n.as_f64().unwrap() + 1.0),
            Value::Null => json!("x"),
            _ => json!(null),
        };
        assert!(
            verify_envelope_signature(&t, &pk).is_err(),
            "tampering {p} went unnoticed"
        );
    }
    // Adding a member is tampering too.
    let mut t = env.clone();
    t["expires_at"] = json!("2026-03-01T00:00:00Z");
    assert!(verify_envelope_signature(&t, &pk).is_err());
}

proptest! {
    /// Sign/verify round trip for arbitrary text and keys; a different key never verifies.
    #[test]
    fn sign_verify_round_trip(text in "\\PC{0,64}", seed in 1u8..=255, other in 1u8..=255) {
        let mut env = message();
        env["content"]["human"]["text"] = json!(text);
        sign_envelope(&mut env, &key(seed), &key_id("k")).unwrap();
        prop_assert_eq!(verify_envelope_signature(&env, &key(seed).verifying_key()), Ok(SignatureMode::ContextPrefixed));
        if other != seed {
            prop_assert!(verify_envelope_signature(&env, &key(other).verifying_key()).is_err());
        }
        // The signed bytes are exactly the canonical form: re-serializing in any order keeps them.
        let reparsed = jcs::parse_strict(&serde_json::to_string_pretty(&env).unwrap()).unwrap();
        prop_assert!(verify_envelope_signature(&reparsed, &key(seed).verifying_key()).is_ok());
    }
}

/// The existing v1.1 node's published `signature-context-v1` vector (fixed Ed25519 key):
/// its canonical bytes must equal ours, its prefixed signature must verify prefixed and its
/// legacy signature through the fallback.
#[test]
fn existing_node_signature_context_vector_interoperates() {
    let pem = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA/a5xAWqH939g7Gsav4onzdbxUQWEW5VORgdO9nwNLtY=\n-----END PUBLIC KEY-----\n";
    let pk = public_key_from_spki_pem(pem).unwrap();
    let canonical = r#"{"attachments":[],"content":{"encrypted":false,"human":{"format":"markdown","text":"Test vector"},"structured":{"intent":"message.general@v1","parameters":{}}},"created_at":"2026-01-01T00:00:00.000Z","from":{"display":"Alice","identity":"loom://alice@node.test","key_id":"k_sign_test_1","type":"human"},"id":"env_01JTEST00000000000000000A","loom":"1.1","parent_id":null,"priority":"normal","thread_id":"thr_01JTEST00000000000000000A","to":[{"identity":"loom://bob@node.test","role":"primary"}],"type":"message"}"#;
    let mut env = jcs::parse_strict(canonical).unwrap();
    assert_eq!(
        envelope_signing_payload(&env).unwrap(),
        canonical.as_bytes()
    );
    env["signature"] = json!({
        "algorithm": "Ed25519", "key_id": "k_sign_test_1", "context": "LOOM-ENVELOPE-SIG-v1",
        "value": "GeH89Y2xIyce_v_rAF5FwWnFg5JiO90WrSGTPui5eStIHcQiy2LF0rH0WqvUSWVblrMzAbnP7yVzcMdhTHYIDw"
    });
    assert_eq!(
        verify_envelope_signature(&env, &pk),
        Ok(SignatureMode::ContextPrefixed)
    );
    env["signature"] = json!({
        "algorithm": "Ed25519", "key_id": "k_sign_test_1",
        "value": "GwAtDNFu8-7DqXNIdMbosEQBQn3AzJFoaqbi6cu0mSnZg9j8IjpLCGVzthTOu08yycSiZb0gcbKXf0i2X7G5CA"
    });
    assert_eq!(
        verify_envelope_signature(&env, &pk),
        Ok(SignatureMode::Legacy)
    );
}
