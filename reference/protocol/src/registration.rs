//! Identity registration proofs as the existing v1.1 node defines them (DESIGN.md §9): the
//! registrant signs (Ed25519, no context prefix) a text binding the identity, the key, the
//! hash of the registered document and the node's challenge nonce. One place for the rule,
//! used by the reference node to verify and by clients to sign.

use crate::jcs::to_canonical_bytes;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The purpose string of registration challenges.
pub const REGISTER_PURPOSE: &str = "identity.register@v1";

/// The text a registration proof signs.
pub fn registration_text(identity: &str, key_id: &str, document_hash: &str, nonce: &str) -> String {
    format!("loom.identity.register.v1\n{identity}\n{key_id}\n{document_hash}\n{nonce}")
}

/// `document_hash`: hex SHA-256 of the RFC 8785 form of `{loom: "1.1", id, type,
/// display_name, signing_keys (sorted by key_id), encryption_keys?, agent_info?}` taken from
/// a registration request.
pub fn registration_document_hash(req: &Value) -> String {
    let mut doc = Map::new();
    doc.insert("loom".into(), "1.1".into());
    for k in ["id", "type", "display_name"] {
        doc.insert(k.into(), req.get(k).cloned().unwrap_or(Value::Null));
    }
    let mut keys: Vec<Value> = req
        .get("signing_keys")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    keys.sort_by(|a, b| a["key_id"].as_str().cmp(&b["key_id"].as_str()));
    doc.insert("signing_keys".into(), Value::Array(keys));
    for k in ["encryption_keys", "agent_info"] {
        if let Some(v) = req.get(k).filter(|v| !v.is_null()) {
            doc.insert(k.into(), v.clone());
        }
    }
    hex::encode(Sha256::digest(to_canonical_bytes(&Value::Object(doc))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_absent_optionals() {
        let a = json!({"id": "loom://a@x.test", "type": "human", "display_name": "A",
            "signing_keys": [{"key_id": "k_sign_b"}, {"key_id": "k_sign_a"}]});
        let b = json!({"display_name": "A", "type": "human", "id": "loom://a@x.test",
            "signing_keys": [{"key_id": "k_sign_a"}, {"key_id": "k_sign_b"}], "agent_info": null,
            "registration_proof": {"signature": "ignored"}});
        assert_eq!(
            registration_document_hash(&a),
            registration_document_hash(&b)
        );
        let mut c = a.clone();
        c["display_name"] = "B".into();
        assert_ne!(
            registration_document_hash(&a),
            registration_document_hash(&c)
        );
        assert!(
            registration_text("i", "k", "h", "n")
                .starts_with("loom.identity.register.v1\ni\nk\nh\nn")
        );
    }
}
