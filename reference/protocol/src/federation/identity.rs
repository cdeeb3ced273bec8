//! Remote identity resolution (v1.1 §5.2 "Participate in federation … using discovery +
//! signed delivery", §15.4 "Verify envelope signatures": a receiving node needs the keys of
//! senders it does not host). The existing v1.1 node answers `GET {identity_resolve_url}`
//! with the identity document and a `node_signature {algorithm, key_id, value}` by the
//! identity's home node (DESIGN.md §9), so the keys are vouched for by that node's signing
//! key and not only by the TLS connection they came over.
//!
//! The signed payload is the RFC 8785 canonical JSON of
//! `{loom: "1.1", id, type, display_name, signing_keys}`:
//! - `id`, `type`, `display_name` are copied from the document; a member the document lacks
//!   is left out (the existing node builds the object in JavaScript, where an undefined
//!   member disappears); a `null` stays `null`;
//! - `signing_keys` is the document's `signing_keys` array (the existing node's shape) or,
//!   when it has none, the §6.2 `public_keys.signing` array (our reading, so a node that
//!   publishes only the §6.2 shape still has its keys covered), sorted by `key_id` (byte
//!   order; entries without a `key_id` first); absent both, an empty array.
//!
//! Ed25519 without a context prefix, base64url. The keys a verifier then uses are exactly
//! the signed ones, minus entries that are not active or do not parse.

use crate::LOOM_VERSION;
use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_document::{KeyStatus, NodeKeys};
use crate::federation::node_name::same_node;
use crate::jcs::to_canonical_bytes;
use crate::keys::{public_key_from_any, sign_b64url, signature_from_b64url, verify};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value, json};

const SECTION: &str = "v1.1 §15.4, §6.2";

/// Which member holds the keys the signature covers.
fn key_list(doc: &Map<String, Value>) -> Vec<Value> {
    doc.get("signing_keys")
        .and_then(Value::as_array)
        .or_else(|| {
            doc.get("public_keys")
                .and_then(|p| p.get("signing"))
                .and_then(Value::as_array)
        })
        .cloned()
        .unwrap_or_default()
}

fn invalid(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, SECTION)
}

fn bad_sig(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, SECTION)
}

/// The bytes a `node_signature` covers (see the module docs).
pub fn node_signature_payload(doc: &Value) -> Result<Vec<u8>, ProtocolError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| invalid("$", "an identity document must be a JSON object"))?;
    let mut payload = Map::new();
    payload.insert("loom".into(), LOOM_VERSION.into());
    for name in ["id", "type", "display_name"] {
        if let Some(v) = obj.get(name) {
            payload.insert(name.into(), v.clone());
        }
    }
    let mut keys = key_list(obj);
    keys.sort_by(|a, b| {
        let k = |v: &Value| {
            v.get("key_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        k(a).cmp(&k(b))
    });
    payload.insert("signing_keys".into(), Value::Array(keys));
    Ok(to_canonical_bytes(&Value::Object(payload)))
}

/// Adds a `node_signature` by the identity's home node.
pub fn sign_identity_document(
    doc: &mut Value,
    key_id: &str,
    key: &SigningKey,
) -> Result<(), ProtocolError> {
    let payload = node_signature_payload(doc)?;
    doc["node_signature"] = json!({
        "algorithm": "Ed25519",
        "key_id": key_id,
        "value": sign_b64url(key, None, &payload),
    });
    Ok(())
}

/// A remote identity whose document verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedIdentity {
    /// The identity.
    pub id: Address,
    /// `type`, when given.
    pub kind: Option<String>,
    /// The active signing keys the signature covers, `(key_id, key)`, in `key_id` order.
    pub signing_keys: Vec<(String, VerifyingKey)>,
}

/// Verifies a remote identity document against the node keys of its home node: the
/// identity's domain is that node (an identity can only be vouched for by the node that
/// hosts it, loom-core-1 "sender authority"), and the `node_signature` verifies with one of
/// its active keys.
pub fn verify_identity_document(
    doc: &Value,
    home_node_keys: &NodeKeys,
) -> Result<VerifiedIdentity, ProtocolError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| invalid("$", "an identity document must be a JSON object"))?;
    let id_text = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("id", "id is required"))?;
    let id = Address::parse(id_text).map_err(|e| invalid("id", e.reason))?;
    if id.is_bridge() || !same_node(id.domain(), &home_node_keys.node) {
        return Err(bad_sig(
            "id",
            format!(
                "{id} is not hosted by node {:?}, whose keys were given",
                home_node_keys.node
            ),
        ));
    }
    let (key_id, value) = super::signature_object::read(obj, "node_signature", SECTION)?;
    let key = home_node_keys.active_key(key_id, "node_signature.key_id")?;
    let signature =
        signature_from_b64url(value).map_err(|e| bad_sig("node_signature.value", e.reason))?;
    if !verify(key, None, &node_signature_payload(doc)?, &signature) {
        return Err(bad_sig(
            "node_signature.value",
            "Ed25519 signature over the canonical identity payload does not verify",
        ));
    }
    let mut signing_keys: Vec<(String, VerifyingKey)> = key_list(obj)
        .iter()
        .filter(|k| KeyStatus::parse(k.get("status").and_then(Value::as_str)) == KeyStatus::Active)
        .filter_map(|k| {
            let kid = k.get("key_id")?.as_str()?;
            let material = k
                .get("public_key")
                .or_else(|| k.get("public_key_pem"))?
                .as_str()?;
            Some((kid.to_owned(), public_key_from_any(material).ok()?))
        })
        .collect();
    signing_keys.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(VerifiedIdentity {
        id,
        kind: obj.get("type").and_then(Value::as_str).map(str::to_owned),
        signing_keys,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::node_document::NodeKey;
    use crate::keys::{public_key_to_b64url, public_key_to_spki_pem};
    use proptest::prelude::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn node_keys() -> NodeKeys {
        NodeKeys::new(
            "b.test",
            vec![NodeKey {
                key_id: "k_node_sign_b".into(),
                public_key: key(2).verifying_key(),
                status: KeyStatus::Active,
            }],
        )
    }

    fn doc() -> Value {
        json!({
            "id": "loom://bob@b.test", "type": "human", "display_name": "Bob",
            "signing_keys": [
                {"key_id": "k_sign_bob_2", "public_key_pem": public_key_to_spki_pem(&key(11).verifying_key())},
                {"key_id": "k_sign_bob_1", "public_key_pem": public_key_to_spki_pem(&key(10).verifying_key()), "status": "revoked"}
            ]
        })
    }

    #[test]
    fn payload_is_the_documented_canonical_json() {
        let p = String::from_utf8(node_signature_payload(&json!({"id": "loom://x@b.test", "extra": 1, "signing_keys": [{"key_id": "b"}, {"key_id": "a"}]})).unwrap()).unwrap();
        assert_eq!(
            p,
            r#"{"id":"loom://x@b.test","loom":"1.1","signing_keys":[{"key_id":"a"},{"key_id":"b"}]}"#
        );
        let p = String::from_utf8(node_signature_payload(&json!({"id": "loom://x@b.test", "display_name": null, "public_keys": {"signing": [{"key_id": "k"}]}})).unwrap()).unwrap();
        assert_eq!(
            p,
            r#"{"display_name":null,"id":"loom://x@b.test","loom":"1.1","signing_keys":[{"key_id":"k"}]}"#
        );
    }

    #[test]
    fn signed_documents_verify_and_yield_the_active_keys() {
        let mut d = doc();
        sign_identity_document(&mut d, "k_node_sign_b", &key(2)).unwrap();
        let v = verify_identity_document(&d, &node_keys()).unwrap();
        assert_eq!(v.id.to_string(), "loom://bob@b.test");
        assert_eq!(
            v.signing_keys,
            vec![("k_sign_bob_2".to_owned(), key(11).verifying_key())]
        );
        // Members outside the payload may change; members inside may not.
        let mut extra = d.clone();
        extra["created_at"] = "2026-01-01T00:00:00Z".into();
        assert!(verify_identity_document(&extra, &node_keys()).is_ok());
        for (m, v) in [("display_name", json!("Mallory")), ("type", json!("agent"))] {
            let mut t = d.clone();
            t[m] = v;
            assert_eq!(
                verify_identity_document(&t, &node_keys())
                    .unwrap_err()
                    .field,
                "node_signature.value"
            );
        }
        let mut swapped = d.clone();
        swapped["signing_keys"][0]["public_key_pem"] =
            public_key_to_b64url(&key(66).verifying_key()).into();
        assert!(verify_identity_document(&swapped, &node_keys()).is_err());
    }

    #[test]
    fn only_the_home_node_vouches() {
        let mut d = doc();
        d["id"] = "loom://bob@c.test".into();
        sign_identity_document(&mut d, "k_node_sign_b", &key(2)).unwrap();
        let e = verify_identity_document(&d, &node_keys()).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::SignatureInvalid, "id")
        );
        let mut unsigned = doc();
        unsigned.as_object_mut().unwrap().remove("node_signature");
        assert_eq!(
            verify_identity_document(&unsigned, &node_keys())
                .unwrap_err()
                .field,
            "node_signature"
        );
    }

    proptest! {
        #[test]
        fn verify_never_panics(v in crate::federation::testing::arb_json()) {
            let _ = verify_identity_document(&v, &node_keys());
            let _ = verify_identity_document(&json!({"id": "loom://bob@b.test", "node_signature": v.clone(), "signing_keys": [v]}), &node_keys());
        }
    }
}
