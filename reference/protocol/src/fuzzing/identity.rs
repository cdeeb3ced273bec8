//! Identity documents (v1.1 §6.2–§6.4) and registration requests (DESIGN.md §9).

use super::{assert_explained, now};
use crate::documents::{IdentityDocument, IdentityType};
use crate::identity_profile::{TypeMembers, check_type_members};
use crate::jcs::parse_strict_bytes;
use crate::registration::{registration_document_hash, registration_text};
use serde_json::{Map, Value};

/// The typed identity document reads back what it writes (parse∘print = id); the
/// type-specific member checks refuse with field, rule and section, and what they accept they
/// accept again in the canonical form they publish (idempotent); the registration hash is
/// 64 hex digits, and ignores the proof.
pub fn identity_document(data: &[u8]) {
    let Ok(v) = parse_strict_bytes(data) else {
        return;
    };
    if let Ok(doc) = serde_json::from_value::<IdentityDocument>(v.clone()) {
        let printed = serde_json::to_value(&doc).expect("a document serializes");
        let again: IdentityDocument =
            serde_json::from_value(printed.clone()).expect("a printed document reads back");
        assert_eq!(again, doc, "parse∘print = id");
        assert_eq!(serde_json::to_value(&again).ok(), Some(printed));
    }
    for kind in [
        IdentityType::Human,
        IdentityType::Agent,
        IdentityType::Team,
        IdentityType::Service,
    ] {
        match check_type_members(kind, &v, now()) {
            Err(e) => assert_explained(&e),
            Ok(members) => recheck_published(kind, &v, &members),
        }
    }
    let hash = registration_document_hash(&v);
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    if let Value::Object(o) = &v {
        let mut without_proof = o.clone();
        without_proof.remove("registration_proof");
        assert_eq!(
            registration_document_hash(&Value::Object(without_proof)),
            hash,
            "the hash covers the document, not the proof"
        );
    }
    let text = registration_text("loom://a@b.test", "k_sign_a", &hash, "nonce");
    assert_eq!(text.lines().count(), 5);
}

/// The members a node publishes for an accepted registration pass the same check again.
fn recheck_published(kind: IdentityType, req: &Value, members: &TypeMembers) {
    let mut doc = Map::new();
    if let Some(id) = req.get("id") {
        doc.insert("id".into(), id.clone());
    }
    for (k, v) in members.document_members(req) {
        doc.insert(k.into(), v);
    }
    let doc = Value::Object(doc);
    match check_type_members(kind, &doc, now()) {
        Ok(again) => assert_eq!(&again, members, "the published form is a fixed point"),
        Err(e) => panic!("the published members of an accepted {kind:?} fail: {e:?}"),
    }
}
