//! The federation handshake document, `GET /v1/federation/hello` (v1.1 §15.7 "returning
//! signed capabilities and policies to reduce discovery overhead"). The spec gives no wire
//! form; ours is the node's capabilities and policy as a JSON object with
//! `type: "federation.hello@v1"`, a `timestamp`, and a `signature {algorithm: "Ed25519",
//! key_id, value}` by one of the node's signing keys over the RFC 8785 canonical JSON of the
//! object without `signature` (Ed25519 without a context prefix, base64url) — the same
//! construction as the node signature of identity documents, so a peer needs no new code.

use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_document::NodeKeys;
use crate::jcs::to_canonical_bytes_without;
use crate::keys::{sign_b64url, signature_from_b64url, verify};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

/// The hello document's `type`.
pub const HELLO_TYPE: &str = "federation.hello@v1";

const SECTION: &str = "v1.1 §15.7";

/// Signs `doc` (an object): sets `type` and `signature`.
pub fn sign_hello(doc: &mut Value, key_id: &str, key: &SigningKey) {
    doc["type"] = HELLO_TYPE.into();
    if let Some(o) = doc.as_object_mut() {
        o.remove("signature");
    }
    let bytes = to_canonical_bytes_without(doc, &["signature"]).unwrap_or_default();
    doc["signature"] = json!({
        "algorithm": "Ed25519",
        "key_id": key_id,
        "value": sign_b64url(key, None, &bytes),
    });
}

/// Verifies a hello document with the node's keys (from its node document).
pub fn verify_hello(doc: &Value, keys: &NodeKeys) -> Result<(), ProtocolError> {
    let bad = |field: &str, why: &str| {
        ProtocolError::new(ErrorCode::SignatureInvalid, field, why, SECTION)
    };
    if doc.get("type").and_then(Value::as_str) != Some(HELLO_TYPE) {
        return Err(ProtocolError::invalid(
            "type",
            format!("a hello document has type {HELLO_TYPE}"),
            SECTION,
        ));
    }
    let sig = doc
        .get("signature")
        .ok_or_else(|| bad("signature", "signature {algorithm, key_id, value} is required"))?;
    let key_id = sig
        .get("key_id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("signature.key_id", "signature.key_id is required"))?;
    let value = sig
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("signature.value", "signature.value is required"))?;
    let key = keys.active_key(key_id, "signature.key_id")?;
    let s = signature_from_b64url(value).map_err(|e| bad("signature.value", e.reason))?;
    let bytes = to_canonical_bytes_without(doc, &["signature"]).unwrap_or_default();
    if !verify(key, None, &bytes, &s) {
        return Err(bad(
            "signature.value",
            "Ed25519 signature over the canonical hello document does not verify",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::node_document::{KeyStatus, NodeKey};

    #[test]
    fn a_signed_hello_verifies_and_any_change_breaks_it() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let keys = NodeKeys::new(
            "a.test",
            vec![NodeKey {
                key_id: "k_node_sign_a".into(),
                public_key: key.verifying_key(),
                status: KeyStatus::Active,
            }],
        );
        let mut doc = json!({"loom": "1.1", "node_id": "a.test", "policy": "open"});
        sign_hello(&mut doc, "k_node_sign_a", &key);
        verify_hello(&doc, &keys).unwrap();
        let mut changed = doc.clone();
        changed["policy"] = "allowlist".into();
        assert_eq!(verify_hello(&changed, &keys).unwrap_err().field, "signature.value");
        let mut other_key = doc.clone();
        other_key["signature"]["key_id"] = "k_other".into();
        assert_eq!(verify_hello(&other_key, &keys).unwrap_err().field, "signature.key_id");
        let mut untyped = doc;
        untyped["type"] = "x".into();
        assert_eq!(verify_hello(&untyped, &keys).unwrap_err().field, "type");
    }
}
