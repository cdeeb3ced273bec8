//! Federation readers (v1.1 §15): the delivery wrapper, the signed receipt, the node document
//! reader and node-signed remote identity documents.

use super::{assert_explained, now};
use crate::address::Address;
use crate::documents::NodeDocument;
use crate::error::ErrorCode;
use crate::federation::node_document::{
    KeyLookup, KeyStatus, NodeKey, NodeKeys, identity_url, missing_members, read_node_document,
};
use crate::federation::node_name::{parse_node_name, same_node};
use crate::federation::receipt::{
    DeliveryReceipt, ReceiptExpectation, ReceiptStatus, receipt_signing_text, verify_receipt,
};
use crate::federation::wrapper::{DeliveryWrapper, WrapperLimits, check_delivery_id};
use crate::federation::{sign_identity_document, verify_identity_document};
use crate::id::EnvelopeId;
use crate::jcs::parse_strict_bytes;
use crate::keys::signing_key_from_seed;
use crate::time::Timestamp;
use arbitrary::{Result as ArbResult, Unstructured};
use serde_json::Value;
use ulid::Ulid;

/// The delivery wrapper (§15.4): a refusal names the member and §15.4 (or is
/// `PAYLOAD_TOO_LARGE`); an accepted wrapper prints to a body that parses back to the same
/// wrapper (parse∘print = id), its `sender_node` is a normalized node name, and it passes the
/// request checks for its own sender at its own time.
pub fn federation_wrapper(data: &[u8]) {
    let limits = WrapperLimits::default();
    let w = match DeliveryWrapper::parse(data, &limits) {
        Ok(w) => w,
        Err(e) => {
            assert_explained(&e);
            assert!(
                matches!(
                    e.code,
                    ErrorCode::EnvelopeInvalid | ErrorCode::PayloadTooLarge
                ),
                "{e:?}"
            );
            return;
        }
    };
    assert_eq!(
        parse_node_name(&w.sender_node).as_deref(),
        Ok(w.sender_node.as_str())
    );
    assert_eq!(w.envelope_ids().len(), w.envelopes.len());
    if let Some(id) = &w.delivery_id {
        assert!(check_delivery_id(id).is_ok());
    }
    let again = DeliveryWrapper::parse(&w.to_body(), &limits).expect("a printed wrapper parses");
    assert_eq!(again, w, "parse∘print = id");
    if let Err(e) = w.check(&w.sender_node.to_ascii_uppercase(), w.timestamp) {
        panic!("a wrapper fails the checks for its own sender and time: {e:?}");
    }
    let other = if w.sender_node == "other.test" {
        "another.test"
    } else {
        "other.test"
    };
    let e = w.check(other, w.timestamp).expect_err("another sender");
    assert_eq!(e.field, "sender_node");
}

fn node_keys(node: &str, seed: u8, key_id: &str) -> NodeKeys {
    NodeKeys::new(
        node,
        vec![NodeKey {
            key_id: key_id.to_owned(),
            public_key: signing_key_from_seed(&[seed; 32]).verifying_key(),
            status: KeyStatus::Active,
        }],
    )
}

/// The signed receipt. An input starting with `{` is a receipt (raw JSON): its signing text
/// is exactly nine lines whenever it exists, and verification refuses with member and section.
/// Other inputs drive a generator: a receipt for a delivery, signed by the receiving node,
/// verifies against that delivery with its status and ids (sign∘verify), survives a JSON
/// round trip, and fails once any signed member changes.
pub fn federation_receipt(data: &[u8]) {
    if data.first() == Some(&b'{') {
        let Ok(v) = parse_strict_bytes(data) else {
            return;
        };
        match receipt_signing_text(&v) {
            Ok(text) => assert_eq!(text.split('\n').count(), 9, "{text:?}"),
            Err(e) => assert_explained(&e),
        }
        let keys = node_keys("b.test", 2, "k_node_sign_b");
        let ids: Vec<String> = v
            .get("accepted_envelope_ids")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let expect = ReceiptExpectation {
            delivery_id: v.get("delivery_id").and_then(Value::as_str),
            delivering_node: "a.test",
            issuer_node: "b.test",
            envelope_ids: &ids,
        };
        if let Err(e) = verify_receipt(&v, &keys, &expect) {
            assert_explained(&e);
        }
        return;
    }
    let _ = generated_receipt(&mut Unstructured::new(data));
}

const NODES: [&str; 4] = ["a.test", "B.Test.", "node-1.example.org", "x.y.z"];

fn generated_receipt(u: &mut Unstructured<'_>) -> ArbResult<()> {
    let issuer = *u.choose(&NODES)?;
    let deliverer = *u.choose(&NODES)?;
    if same_node(issuer, deliverer) {
        return Ok(());
    }
    let delivery_id: Option<String> = u.arbitrary()?;
    if delivery_id
        .as_deref()
        .is_some_and(|d| check_delivery_id(d).is_err())
    {
        return Ok(()); // the wrapper reader refuses it before a receipt is made
    }
    let n = u.int_in_range(1..=8usize)?;
    let mut delivered: Vec<String> = Vec::with_capacity(n);
    for _ in 0..n {
        let id = EnvelopeId::from_ulid(Ulid(u.arbitrary()?)).to_string();
        if !delivered.contains(&id) {
            delivered.push(id);
        }
    }
    let mut accepted: Vec<String> = delivered
        .iter()
        .filter(|_| u.ratio(2, 3).unwrap_or(true))
        .cloned()
        .collect();
    if accepted.is_empty() {
        accepted.push(delivered[0].clone());
    }
    let at = Timestamp::from_unix_ms(now().unix_ms() + u.int_in_range(-1_000_000i64..=1_000_000)?);
    let receipt = DeliveryReceipt::for_delivery(
        delivery_id.clone(),
        issuer,
        deliverer,
        accepted.clone(),
        delivered.len(),
        at,
    )
    .expect("at least one envelope was accepted");
    let key = signing_key_from_seed(&[9; 32]);
    let signed = receipt.sign("k_node_sign_fuzz", &key);
    let keys = node_keys(issuer, 9, "k_node_sign_fuzz");
    let expect = ReceiptExpectation {
        delivery_id: delivery_id.as_deref().filter(|d| !d.is_empty()),
        delivering_node: deliverer,
        issuer_node: issuer,
        envelope_ids: &delivered,
    };
    let text = receipt_signing_text(&signed).expect("a made receipt has a signing text");
    assert_eq!(text.split('\n').count(), 9);
    let v = verify_receipt(&signed, &keys, &expect)
        .unwrap_or_else(|e| panic!("sign∘verify failed: {e:?}"));
    assert_eq!(v.accepted_envelope_ids, accepted);
    let status = if accepted.len() == delivered.len() {
        ReceiptStatus::Accepted
    } else {
        ReceiptStatus::Partial
    };
    assert_eq!(v.status, status);
    let wire = serde_json::to_vec(&signed).expect("a receipt serializes");
    let read = parse_strict_bytes(&wire).expect("a receipt is strict JSON");
    assert_eq!(verify_receipt(&read, &keys, &expect), Ok(v));

    // Any signed member changed: the signature no longer holds.
    let member = *u.choose(&[
        "loom",
        "type",
        "sender_node",
        "recipient_node",
        "status",
        "accepted_count",
        "timestamp",
    ])?;
    let mut tampered = signed.clone();
    tampered[member] = match &signed[member] {
        Value::Number(n) => Value::from(n.as_u64().unwrap_or(0) + 1),
        other => Value::from(format!("{}x", other.as_str().unwrap_or_default())),
    };
    let e = verify_receipt(&tampered, &keys, &expect).expect_err("a tampered receipt");
    assert_explained(&e);
    Ok(())
}

/// The node document reader (§15.2): a refusal names the member and section; a document read
/// for a node names that node, its keys have distinct ids and each is found by its id with its
/// status, the delivery URL is never empty, and the identity URL template yields a URL for
/// any address, percent-encoded. The typed §15.2 model prints back what it reads.
pub fn node_document(data: &[u8]) {
    let Ok(doc) = parse_strict_bytes(data) else {
        return;
    };
    let _ = missing_members(&doc);
    if let Ok(typed) = serde_json::from_value::<NodeDocument>(doc.clone()) {
        let printed = serde_json::to_value(&typed).expect("a document serializes");
        let back: NodeDocument = serde_json::from_value(printed).expect("reads back");
        assert_eq!(back, typed, "parse∘print = id");
    }
    let expected = doc
        .get("domain")
        .or_else(|| doc.get("node_id"))
        .and_then(Value::as_str)
        .unwrap_or("a.test")
        .to_owned();
    let view = match read_node_document(&doc, &expected) {
        Ok(v) => v,
        Err(e) => {
            assert_explained(&e);
            return;
        }
    };
    assert!(same_node(&view.domain, &expected));
    assert_eq!(view.keys.node, view.domain);
    for (i, k) in view.keys.keys.iter().enumerate() {
        assert!(
            view.keys.keys[..i].iter().all(|e| e.key_id != k.key_id),
            "key id {:?} listed twice",
            k.key_id
        );
        match view.keys.lookup(&k.key_id) {
            KeyLookup::Found(found) => {
                assert_eq!(k.status, KeyStatus::Active);
                assert_eq!(*found, k.public_key);
            }
            KeyLookup::NotActive(s) => assert_eq!(*s, k.status),
            KeyLookup::UnknownKeyId => panic!("key {:?} is not found by its id", k.key_id),
        }
    }
    assert!(!view.deliver_url.is_empty());
    let url = identity_url(&view.identity_resolve_url, "loom://a b@c.test");
    assert!(url.contains("loom%3A%2F%2Fa%20b%40c.test"), "{url}");
    // Reading is a function of the document.
    assert_eq!(read_node_document(&doc, &expected).ok(), Some(view));
}

/// Node-signed identity documents (§15.4, DESIGN.md §9). The document as given verifies or is
/// refused with member and section; signed by its home node it verifies (sign∘verify) to the
/// same identity, with keys only from its signed key list; a changed display name breaks it.
pub fn node_signed_identity(data: &[u8]) {
    let Ok(mut doc) = parse_strict_bytes(data) else {
        return;
    };
    let home = doc
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse(s).ok())
        .map(|a| a.domain().to_owned())
        .unwrap_or_else(|| "node.test".to_owned());
    let keys = node_keys(&home, 3, "k_node_sign_home");
    if let Err(e) = verify_identity_document(&doc, &keys) {
        assert_explained(&e);
    }
    if sign_identity_document(
        &mut doc,
        "k_node_sign_home",
        &signing_key_from_seed(&[3; 32]),
    )
    .is_err()
    {
        assert!(!doc.is_object());
        return;
    }
    let id = doc
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse(s).ok());
    match (id, verify_identity_document(&doc, &keys)) {
        (Some(id), Ok(v)) => {
            assert!(!id.is_bridge());
            assert_eq!(v.id, id);
            assert!(v.signing_keys.windows(2).all(|w| w[0].0 <= w[1].0));
            let mut changed = doc.clone();
            let name = changed
                .get("display_name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            changed["display_name"] = Value::from(format!("{name}!"));
            let e = verify_identity_document(&changed, &keys).expect_err("display_name is signed");
            assert_eq!(e.field, "node_signature.value");
        }
        (Some(id), Err(e)) => {
            assert_explained(&e);
            assert!(
                id.is_bridge(),
                "a signed document of {id} is refused: {e:?}"
            );
        }
        (None, Err(e)) => assert_eq!(e.field, "id"),
        (None, Ok(v)) => panic!("a document without a valid id verifies: {v:?}"),
    }
}
