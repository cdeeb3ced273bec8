//! Remote identity resolution (v1.1 §5.2 "Participate in federation … using discovery +
//! signed delivery", §15.4 "Verify envelope signatures": a receiving node needs the keys of
//! senders it does not host). The existing v1.1 node answers `GET {identity_resolve_url}`
//! with the identity document and a `node_signature {algorithm, key_id, value}` by the
//! identity's home node (DESIGN.md §9), so the keys are vouched for by that node's signing
//! key and not only by the TLS connection they came over.
//!
//! v1.1 never defines `node_signature`; two forms of the signed payload exist
//! ([`NodeSignatureForm`]), each the RFC 8785 canonical JSON of an object built from the
//! document, signed with Ed25519 without a context prefix, base64url:
//! - **registration form** (the existing node's, DESIGN.md §9 — what we sign):
//!   `{loom: "1.1", id, type, display_name, signing_keys, encryption_keys?, agent_info?}`,
//!   the same form a registration proof hashes. `signing_keys` is the document's
//!   `signing_keys` array reduced to `{key_id, public_key_pem}` per entry (other key members
//!   dropped), sorted by `key_id`; `encryption_keys` and `agent_info` are copied as given when
//!   present and not `null`;
//! - **full-key form** (what our nodes signed before): `{loom: "1.1", id, type, display_name,
//!   signing_keys}` with the whole key entries of `signing_keys` (or, when the document has
//!   none, of the §6.2 `public_keys.signing` array), sorted by `key_id`.
//!
//! In both, `id`, `type` and `display_name` are copied from the document; a member the
//! document lacks is left out (the existing node builds the object in JavaScript, where an
//! undefined member disappears); a `null` stays `null`. Sorting is by byte order of `key_id`,
//! entries without one first.
//!
//! A verifier accepts either form. The key material it then uses is exactly the covered one:
//! under the registration form only the `public_key_pem` of each `signing_keys` entry, under
//! the full-key form whole entries. The registration form does not cover `status` or
//! `retired_at`: a verifier still honours them — a `retired` key verifies only historical
//! envelopes (v1.0 §7.4), a `revoked` one nothing — but a document altered in transit could
//! drop such a mark, so under that form a listed key is vouched for as fully as an active
//! one. A node signing the registration form therefore leaves revoked keys out of
//! `signing_keys` (revocation is what protects against a stolen key); a retired key stays
//! listed so that envelopes it signed before the rotation still verify elsewhere. Only the
//! full-key form binds a key's status. Revoked keys and unknown statuses are dropped.

use crate::LOOM_VERSION;
use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_document::{KeyStatus, NodeKeys};
use crate::federation::node_name::same_node;
use crate::jcs::to_canonical_bytes;
use crate::keys::{public_key_from_any, sign_b64url, signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Map, Value, json};

const SECTION: &str = "v1.1 §15.4, §6.2";

/// Which form a `node_signature` covers (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSignatureForm {
    /// The existing v1.1 node's form, the registration form (DESIGN.md §9); what we sign.
    Registration,
    /// Whole `signing_keys` entries, no `encryption_keys` or `agent_info` (our older nodes).
    FullKeys,
}

impl NodeSignatureForm {
    /// Every form, in the order a verifier tries them.
    pub const ALL: [NodeSignatureForm; 2] =
        [NodeSignatureForm::Registration, NodeSignatureForm::FullKeys];

    /// A short name for messages and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeSignatureForm::Registration => "registration form",
            NodeSignatureForm::FullKeys => "full-key form",
        }
    }
}

/// The key entries the full-key form covers: `signing_keys`, else §6.2 `public_keys.signing`.
fn full_key_list(doc: &Map<String, Value>) -> Vec<Value> {
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

/// The key entries the registration form covers: `signing_keys` reduced to
/// `{key_id, public_key_pem}`.
fn registration_key_list(doc: &Map<String, Value>) -> Vec<Value> {
    doc.get("signing_keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|k| {
            let mut e = Map::new();
            for m in ["key_id", "public_key_pem"] {
                if let Some(v) = k.get(m) {
                    e.insert(m.into(), v.clone());
                }
            }
            Value::Object(e)
        })
        .collect()
}

fn invalid(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, SECTION)
}

fn bad_sig(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, SECTION)
}

/// The bytes a `node_signature` in `form` covers (see the module docs).
pub fn node_signature_payload(
    doc: &Value,
    form: NodeSignatureForm,
) -> Result<Vec<u8>, ProtocolError> {
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
    let mut keys = match form {
        NodeSignatureForm::Registration => registration_key_list(obj),
        NodeSignatureForm::FullKeys => full_key_list(obj),
    };
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
    if form == NodeSignatureForm::Registration {
        for name in ["encryption_keys", "agent_info"] {
            if let Some(v) = obj.get(name).filter(|v| !v.is_null()) {
                payload.insert(name.into(), v.clone());
            }
        }
    }
    Ok(to_canonical_bytes(&Value::Object(payload)))
}

/// Adds a `node_signature` by the identity's home node, over the registration form.
pub fn sign_identity_document(
    doc: &mut Value,
    key_id: &str,
    key: &SigningKey,
) -> Result<(), ProtocolError> {
    sign_identity_document_as(doc, NodeSignatureForm::Registration, key_id, key)
}

/// Adds a `node_signature` over `form`.
pub fn sign_identity_document_as(
    doc: &mut Value,
    form: NodeSignatureForm,
    key_id: &str,
    key: &SigningKey,
) -> Result<(), ProtocolError> {
    let payload = node_signature_payload(doc, form)?;
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
    /// The `retired` signing keys the signature covers, in `key_id` order (v1.0 §7.4).
    pub retired_keys: Vec<RetiredKey>,
    /// The form the signature verified with.
    pub form: NodeSignatureForm,
}

/// A signing key its identity retired by a rotation (v1.0 §7.4: "Old keys MUST be retained
/// in the identity document (marked `retired`) for signature verification of historical
/// envelopes").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetiredKey {
    /// `key_id`.
    pub key_id: String,
    /// The public key.
    pub key: VerifyingKey,
    /// The entry's `retired_at`, when the document gives one. §6.2 shows no such member; a
    /// document that has it bounds which envelopes count as historical.
    pub retired_at: Option<Timestamp>,
}

impl RetiredKey {
    /// Whether this retired key may verify the signature of an envelope created at
    /// `created_at` (v1.0 §7.4). Our reading of "historical envelopes": an envelope whose
    /// `created_at` is not after the key's `retired_at`; when the document gives no
    /// retirement time the spec gives nothing to compare with, so every envelope signed by
    /// the key counts as historical (lenient where the spec is silent). `created_at` is the
    /// sender's claim, so this bounds honest late arrivals (store-and-forward, §15.5), not a
    /// thief of the retired key — which is what revocation (`revoked`, never accepted) is for.
    /// It is a rule for envelopes *received* from another node: a node's own clients submit
    /// new envelopes, which only active keys sign (`crate::accept::admit`).
    pub fn verifies_envelope_created_at(&self, created_at: Timestamp) -> bool {
        self.retired_at.is_none_or(|r| created_at <= r)
    }
}

/// One signing key entry of a document: `(key_id, key, status, retired_at)`; `None` when
/// it does not parse. `material` names the members the key may be read from (the signed
/// ones). An unparsable `retired_at` makes the entry unusable: the bound it states cannot be
/// honoured, and guessing it away would widen what the key verifies.
fn key_entry(
    k: &Value,
    material: &[&str],
) -> Option<(String, VerifyingKey, KeyStatus, Option<Timestamp>)> {
    let kid = k.get("key_id")?.as_str()?;
    let material = material.iter().find_map(|m| k.get(*m))?.as_str()?;
    let status = KeyStatus::parse(k.get("status").and_then(Value::as_str));
    let retired_at = match k.get("retired_at") {
        None | Some(Value::Null) => None,
        Some(v) => Some(Timestamp::parse(v.as_str()?).ok()?),
    };
    Some((
        kid.to_owned(),
        public_key_from_any(material).ok()?,
        status,
        retired_at,
    ))
}

/// Verifies a remote identity document against the node keys of its home node: the
/// identity's domain is that node (an identity can only be vouched for by the node that
/// hosts it, loom-core-1 "sender authority"), and the `node_signature` verifies, in either
/// [`NodeSignatureForm`], with one of its active keys.
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
    let mut form = None;
    for f in NodeSignatureForm::ALL {
        if verify(key, None, &node_signature_payload(doc, f)?, &signature) {
            form = Some(f);
            break;
        }
    }
    let Some(form) = form else {
        return Err(bad_sig(
            "node_signature.value",
            format!(
                "Ed25519 signature of node {:?} verifies over neither the registration form \
                 nor the full-key form of the identity document",
                home_node_keys.node
            ),
        ));
    };
    let (entries, material): (Vec<Value>, &[&str]) = match form {
        NodeSignatureForm::Registration => (
            obj.get("signing_keys")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            &["public_key_pem"],
        ),
        NodeSignatureForm::FullKeys => (full_key_list(obj), &["public_key", "public_key_pem"]),
    };
    let mut signing_keys: Vec<(String, VerifyingKey)> = Vec::new();
    let mut retired_keys: Vec<RetiredKey> = Vec::new();
    for (key_id, key, status, retired_at) in entries.iter().filter_map(|k| key_entry(k, material)) {
        match status {
            KeyStatus::Active => signing_keys.push((key_id, key)),
            KeyStatus::Retired => retired_keys.push(RetiredKey {
                key_id,
                key,
                retired_at,
            }),
            KeyStatus::Revoked | KeyStatus::Other(_) => {}
        }
    }
    signing_keys.sort_by(|a, b| a.0.cmp(&b.0));
    retired_keys.sort_by(|a, b| a.key_id.cmp(&b.key_id));
    Ok(VerifiedIdentity {
        id,
        kind: obj.get("type").and_then(Value::as_str).map(str::to_owned),
        signing_keys,
        retired_keys,
        form,
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

    fn text(doc: Value, form: NodeSignatureForm) -> String {
        String::from_utf8(node_signature_payload(&doc, form).unwrap()).unwrap()
    }

    #[test]
    fn the_registration_form_is_the_documented_canonical_json() {
        // DESIGN.md §9: key entries reduced to {key_id, public_key_pem}, sorted; encryption
        // keys and agent info covered; other members left out.
        let doc = json!({"id": "loom://x@b.test", "type": "agent", "extra": 1, "node": "b.test",
            "signing_keys": [{"key_id": "b", "public_key_pem": "PB", "status": "active", "algorithm": "Ed25519"},
                             {"key_id": "a", "public_key_pem": "PA", "public_key": "xx"}],
            "public_keys": {"signing": [{"key_id": "z"}]},
            "encryption_keys": [{"key_id": "k_enc_1", "public_key": "E"}],
            "agent_info": {"provider": "p", "model": "m", "version": "1"}});
        assert_eq!(
            text(doc.clone(), NodeSignatureForm::Registration),
            r#"{"agent_info":{"model":"m","provider":"p","version":"1"},"encryption_keys":[{"key_id":"k_enc_1","public_key":"E"}],"id":"loom://x@b.test","loom":"1.1","signing_keys":[{"key_id":"a","public_key_pem":"PA"},{"key_id":"b","public_key_pem":"PB"}],"type":"agent"}"#
        );
        // Null optional members and a missing key list.
        assert_eq!(
            text(
                json!({"id": "loom://x@b.test", "display_name": null, "agent_info": null}),
                NodeSignatureForm::Registration
            ),
            r#"{"display_name":null,"id":"loom://x@b.test","loom":"1.1","signing_keys":[]}"#
        );
    }

    #[test]
    fn the_full_key_form_is_what_older_nodes_of_ours_signed() {
        assert_eq!(
            text(
                json!({"id": "loom://x@b.test", "extra": 1, "agent_info": {"provider": "p"}, "signing_keys": [{"key_id": "b", "status": "active"}, {"key_id": "a"}]}),
                NodeSignatureForm::FullKeys
            ),
            r#"{"id":"loom://x@b.test","loom":"1.1","signing_keys":[{"key_id":"a"},{"key_id":"b","status":"active"}]}"#
        );
        assert_eq!(
            text(
                json!({"id": "loom://x@b.test", "display_name": null, "public_keys": {"signing": [{"key_id": "k"}]}}),
                NodeSignatureForm::FullKeys
            ),
            r#"{"display_name":null,"id":"loom://x@b.test","loom":"1.1","signing_keys":[{"key_id":"k"}]}"#
        );
    }

    #[test]
    fn both_forms_verify_and_say_which() {
        for form in NodeSignatureForm::ALL {
            let mut d = doc();
            d["signing_keys"] = json!([{"key_id": "k_sign_bob_2", "public_key_pem": public_key_to_spki_pem(&key(11).verifying_key())}]);
            d["agent_info"] = json!({"provider": "p", "model": "m", "version": "1"});
            sign_identity_document_as(&mut d, form, "k_node_sign_b", &key(2)).unwrap();
            let v = verify_identity_document(&d, &node_keys()).unwrap();
            assert_eq!(v.form, form);
            assert_eq!(
                v.signing_keys,
                vec![("k_sign_bob_2".to_owned(), key(11).verifying_key())]
            );
            // agent_info is covered only by the registration form.
            let mut t = d.clone();
            t["agent_info"]["model"] = "other".into();
            assert_eq!(
                verify_identity_document(&t, &node_keys()).is_ok(),
                form == NodeSignatureForm::FullKeys,
                "{form:?}"
            );
        }
    }

    /// Under the registration form only `public_key_pem` is signed: a `public_key` beside it
    /// is never used, and uncovered status marks, when present, are honoured.
    #[test]
    fn under_the_registration_form_only_the_pem_is_key_material() {
        let pem = |s: u8| public_key_to_spki_pem(&key(s).verifying_key());
        let mut d = doc();
        d["signing_keys"] = json!([
            {"key_id": "k_sign_bob_2", "public_key_pem": pem(11), "public_key": public_key_to_b64url(&key(66).verifying_key())},
            {"key_id": "k_sign_bob_3", "public_key": public_key_to_b64url(&key(12).verifying_key())},
            {"key_id": "k_sign_bob_4", "public_key_pem": pem(13)}
        ]);
        sign_identity_document(&mut d, "k_node_sign_b", &key(2)).unwrap();
        let v = verify_identity_document(&d, &node_keys()).unwrap();
        assert_eq!(v.form, NodeSignatureForm::Registration);
        assert_eq!(
            v.signing_keys,
            vec![
                ("k_sign_bob_2".to_owned(), key(11).verifying_key()),
                ("k_sign_bob_4".to_owned(), key(13).verifying_key())
            ]
        );
        // Marking a key revoked in flight still verifies (the status is not signed) but
        // drops the key; marking it retired bounds it.
        let mut revoked = d.clone();
        revoked["signing_keys"][2]["status"] = "revoked".into();
        let v = verify_identity_document(&revoked, &node_keys()).unwrap();
        assert_eq!(v.signing_keys.len(), 1);
        let mut retired = d.clone();
        retired["signing_keys"][2]["status"] = "retired".into();
        retired["signing_keys"][2]["retired_at"] = "2026-01-01T00:00:00Z".into();
        let v = verify_identity_document(&retired, &node_keys()).unwrap();
        assert_eq!(v.retired_keys.len(), 1);
        assert_eq!(v.signing_keys.len(), 1);
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

    #[test]
    fn retired_keys_are_kept_apart_with_their_retirement_time() {
        // v1.0 §7.4: the rotated-out key stays in the document as `retired`.
        let mut d = doc();
        d["signing_keys"] = json!([
            {"key_id": "k_sign_bob_2", "public_key_pem": public_key_to_spki_pem(&key(11).verifying_key())},
            {"key_id": "k_sign_bob_1", "public_key": public_key_to_b64url(&key(10).verifying_key()), "status": "retired", "retired_at": "2026-03-01T00:00:00Z"},
            {"key_id": "k_sign_bob_0", "public_key": public_key_to_b64url(&key(9).verifying_key()), "status": "retired"},
            {"key_id": "k_sign_bob_z", "public_key": public_key_to_b64url(&key(8).verifying_key()), "status": "retired", "retired_at": "yesterday"},
            {"key_id": "k_sign_bob_r", "public_key": public_key_to_b64url(&key(7).verifying_key()), "status": "revoked"}
        ]);
        // The full-key form covers status and retirement time (and b64url keys).
        sign_identity_document_as(
            &mut d,
            NodeSignatureForm::FullKeys,
            "k_node_sign_b",
            &key(2),
        )
        .unwrap();
        let v = verify_identity_document(&d, &node_keys()).unwrap();
        assert_eq!(
            v.signing_keys,
            vec![("k_sign_bob_2".to_owned(), key(11).verifying_key())]
        );
        let at = |s: &str| Timestamp::parse(s).unwrap();
        // Revoked keys and a retirement time that does not parse are dropped.
        assert_eq!(
            v.retired_keys,
            vec![
                RetiredKey {
                    key_id: "k_sign_bob_0".into(),
                    key: key(9).verifying_key(),
                    retired_at: None
                },
                RetiredKey {
                    key_id: "k_sign_bob_1".into(),
                    key: key(10).verifying_key(),
                    retired_at: Some(at("2026-03-01T00:00:00Z"))
                },
            ]
        );
        // The retirement time is inside the node signature: moving it breaks the signature.
        let mut moved = d.clone();
        moved["signing_keys"][1]["retired_at"] = "2099-01-01T00:00:00Z".into();
        assert!(verify_identity_document(&moved, &node_keys()).is_err());
    }

    #[test]
    fn a_retired_key_verifies_only_envelopes_created_before_its_retirement() {
        let at = |s: &str| Timestamp::parse(s).unwrap();
        let bounded = RetiredKey {
            key_id: "k_sign_bob_1".into(),
            key: key(10).verifying_key(),
            retired_at: Some(at("2026-03-01T00:00:00Z")),
        };
        assert!(bounded.verifies_envelope_created_at(at("2026-02-28T23:59:59Z")));
        assert!(bounded.verifies_envelope_created_at(at("2026-03-01T00:00:00Z")));
        assert!(!bounded.verifies_envelope_created_at(at("2026-03-01T00:00:00.001Z")));
        let unbounded = RetiredKey {
            retired_at: None,
            ..bounded
        };
        assert!(unbounded.verifies_envelope_created_at(at("2030-01-01T00:00:00Z")));
    }

    proptest! {
        #[test]
        fn verify_never_panics(v in crate::federation::testing::arb_json()) {
            let _ = verify_identity_document(&v, &node_keys());
            let _ = verify_identity_document(&json!({"id": "loom://bob@b.test", "node_signature": v.clone(), "signing_keys": [v]}), &node_keys());
        }
    }
}
