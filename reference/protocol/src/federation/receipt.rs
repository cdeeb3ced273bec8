//! The signed delivery receipt a receiving node answers a federation delivery with (v1.1 §15.4
//! "Store envelopes and generate receipts"; the wire form is the existing v1.1 node's,
//! DESIGN.md §9, because the spec gives none):
//!
//! ```json
//! {"loom": "1.1", "type": "federation.delivery.receipt@v1", "delivery_id": "fdel_01J…",
//!  "sender_node": "b.test", "recipient_node": "a.test", "status": "partial",
//!  "accepted_count": 1, "accepted_envelope_ids": ["env_01J…"],
//!  "timestamp": "2026-03-01T12:00:00.000Z",
//!  "signature": {"algorithm": "Ed25519", "key_id": "k_node_sign_1", "value": "…"}}
//! ```
//!
//! **The signed form.** We sign, and accept, exactly one form: the existing node's nine
//! `\n`-joined lines `loom, type, delivery_id, sender_node, recipient_node, status,
//! accepted_count, accepted ids joined by ",", timestamp` (an absent member is an empty line),
//! Ed25519 without a context prefix, base64url, with a node signing key named in
//! `signature.key_id`. Choosing the deployed form lets the existing node verify our receipts
//! and us verify its; a second (canonical-JSON) form would only double what a verifier must
//! get right. The lines are unambiguous because every value in them is checked to hold no
//! line break and envelope ids hold no comma.
//!
//! **Who is who.** The receipt is issued by the node that received the delivery. The existing
//! node puts the *issuer* in `sender_node` and the delivering node in `recipient_node`; we
//! write the same. A verifier also accepts the opposite orientation (`sender_node` echoing the
//! wrapper's sender), a legal reading of an unspecified member, as long as the two members
//! name exactly the issuer and the deliverer; the signature is checked with the issuer's key
//! either way.
//!
//! **Status.** `accepted` when every delivered envelope was accepted, `partial` when some
//! were; a delivery with none accepted is answered with an error, not a receipt (the existing
//! node's behaviour). A verifier accepts `partial` with an empty list too (nothing was
//! accepted; the sender treats every envelope as rejected).

use crate::LOOM_VERSION;
use crate::error::{ErrorCode, ProtocolError};
use crate::federation::node_document::NodeKeys;
use crate::federation::node_name::same_node;
use crate::federation::wrapper::check_delivery_id;
use crate::id::EnvelopeId;
use crate::keys::{sign_b64url, signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The receipt's `type`.
pub const RECEIPT_TYPE: &str = "federation.delivery.receipt@v1";

const SECTION: &str = "v1.1 §15.4";

/// A receipt's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptStatus {
    /// Every delivered envelope was accepted.
    Accepted,
    /// Some were.
    Partial,
}

impl ReceiptStatus {
    /// The status for `accepted` of `total` envelopes; `None` when none was accepted (answer
    /// with an error instead).
    pub fn for_counts(accepted: usize, total: usize) -> Option<ReceiptStatus> {
        match accepted {
            0 => None,
            n if n >= total => Some(ReceiptStatus::Accepted),
            _ => Some(ReceiptStatus::Partial),
        }
    }

    /// `accepted` or `partial`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiptStatus::Accepted => "accepted",
            ReceiptStatus::Partial => "partial",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<ReceiptStatus> {
        match s {
            "accepted" => Some(ReceiptStatus::Accepted),
            "partial" => Some(ReceiptStatus::Partial),
            _ => None,
        }
    }
}

/// A receipt before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryReceipt {
    /// The wrapper's `delivery_id` (`None` when the wrapper had none).
    pub delivery_id: Option<String>,
    /// The issuing node (the one that received the delivery), written to `sender_node`.
    pub issuer_node: String,
    /// The delivering node, written to `recipient_node`.
    pub delivering_node: String,
    /// `accepted` or `partial`.
    pub status: ReceiptStatus,
    /// The accepted envelope ids, in wrapper order.
    pub accepted_envelope_ids: Vec<String>,
    /// When the receipt was made.
    pub timestamp: Timestamp,
}

impl DeliveryReceipt {
    /// The receipt for a delivery of which `accepted_envelope_ids` (in wrapper order) were
    /// accepted out of `total`; `None` when none was.
    pub fn for_delivery(
        delivery_id: Option<String>,
        issuer_node: &str,
        delivering_node: &str,
        accepted_envelope_ids: Vec<String>,
        total: usize,
        now: Timestamp,
    ) -> Option<DeliveryReceipt> {
        let status = ReceiptStatus::for_counts(accepted_envelope_ids.len(), total)?;
        Some(DeliveryReceipt {
            delivery_id,
            issuer_node: crate::http_sig::normalize_node(issuer_node),
            delivering_node: crate::http_sig::normalize_node(delivering_node),
            status,
            accepted_envelope_ids,
            timestamp: now,
        })
    }

    /// The receipt JSON without `signature`.
    pub fn unsigned_value(&self) -> Value {
        json!({
            "loom": LOOM_VERSION,
            "type": RECEIPT_TYPE,
            "delivery_id": self.delivery_id,
            "sender_node": self.issuer_node,
            "recipient_node": self.delivering_node,
            "status": self.status.as_str(),
            "accepted_count": self.accepted_envelope_ids.len(),
            "accepted_envelope_ids": self.accepted_envelope_ids,
            "timestamp": self.timestamp.to_rfc3339(),
        })
    }

    /// The signed receipt JSON.
    pub fn sign(&self, key_id: &str, key: &SigningKey) -> Value {
        let mut v = self.unsigned_value();
        // The fields written above always produce a signing text.
        let text = receipt_signing_text(&v).unwrap_or_default();
        v["signature"] = json!({
            "algorithm": "Ed25519",
            "key_id": key_id,
            "value": sign_b64url(key, None, text.as_bytes()),
        });
        v
    }
}

fn invalid(field: impl Into<String>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::invalid(field, rule, SECTION)
}

fn bad_sig(field: impl Into<String>, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, SECTION)
}

/// A line of the signed text from a string member: absent or null is empty; the value must
/// hold no control character (a `\n` would shift the lines).
fn text_line(obj: &Map<String, Value>, name: &str) -> Result<String, ProtocolError> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) if s.chars().any(char::is_control) => Err(invalid(
            name,
            format!(
                "{name} must not hold control characters: the signed receipt text is line-based"
            ),
        )),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(invalid(
            name,
            format!("{name} must be a string, not {other}"),
        )),
    }
}

/// The accepted ids as the signed text and the verifier need them: an array of envelope ids.
fn accepted_ids(obj: &Map<String, Value>) -> Result<Vec<String>, ProtocolError> {
    let list = match obj.get("accepted_envelope_ids") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => {
            return Err(invalid(
                "accepted_envelope_ids",
                "accepted_envelope_ids is required",
            ));
        }
        Some(other) => {
            return Err(invalid(
                "accepted_envelope_ids",
                format!("accepted_envelope_ids must be an array, not {other}"),
            ));
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .filter(|s| EnvelopeId::parse(s).is_ok())
                .map(str::to_owned)
                .ok_or_else(|| {
                    invalid(
                        format!("accepted_envelope_ids[{i}]"),
                        format!("{v} is not an envelope id (env_ + ULID, v1.1 §8.4)"),
                    )
                })
        })
        .collect()
}

/// `accepted_count` as its line: absent is empty, otherwise a non-negative integer.
fn count_line(obj: &Map<String, Value>) -> Result<(String, Option<u64>), ProtocolError> {
    match obj.get("accepted_count") {
        None | Some(Value::Null) => Ok((String::new(), None)),
        Some(v) => match v.as_u64() {
            Some(n) => Ok((n.to_string(), Some(n))),
            None => Err(invalid(
                "accepted_count",
                format!("accepted_count must be a non-negative integer, not {v}"),
            )),
        },
    }
}

/// The nine-line text a receipt's signature covers (see the module docs).
pub fn receipt_signing_text(receipt: &Value) -> Result<String, ProtocolError> {
    let obj = receipt
        .as_object()
        .ok_or_else(|| invalid("$", "a receipt must be a JSON object"))?;
    let ids = accepted_ids(obj)?;
    let (count, _) = count_line(obj)?;
    Ok([
        text_line(obj, "loom")?,
        text_line(obj, "type")?,
        text_line(obj, "delivery_id")?,
        text_line(obj, "sender_node")?,
        text_line(obj, "recipient_node")?,
        text_line(obj, "status")?,
        count,
        ids.join(","),
        text_line(obj, "timestamp")?,
    ]
    .join("\n"))
}

/// What the sender knows about the delivery a receipt answers.
#[derive(Debug, Clone, Copy)]
pub struct ReceiptExpectation<'a> {
    /// The `delivery_id` it sent (`None` if it sent none).
    pub delivery_id: Option<&'a str>,
    /// This (delivering) node.
    pub delivering_node: &'a str,
    /// The node delivered to, whose key must sign.
    pub issuer_node: &'a str,
    /// The ids of the envelopes it delivered.
    pub envelope_ids: &'a [String],
}

/// Which member names the issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptOrientation {
    /// `sender_node` is the issuer (the existing node's and ours).
    IssuerInSender,
    /// `sender_node` echoes the delivering node.
    DelivererInSender,
}

/// A receipt that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    /// Its status.
    pub status: ReceiptStatus,
    /// The accepted envelope ids.
    pub accepted_envelope_ids: Vec<String>,
    /// Which orientation it used.
    pub orientation: ReceiptOrientation,
    /// The key that signed.
    pub key_id: String,
}

/// Verifies a receipt against the delivery it answers and the issuer's node keys. Order:
/// the shape the signed text needs, the signature (so any altered member fails as
/// `SIGNATURE_INVALID`), then the bindings to this delivery (`SIGNATURE_INVALID`: an authentic
/// receipt for another delivery proves nothing about this one), then consistency
/// (`ENVELOPE_INVALID`).
pub fn verify_receipt(
    receipt: &Value,
    issuer_keys: &NodeKeys,
    expect: &ReceiptExpectation<'_>,
) -> Result<VerifiedReceipt, ProtocolError> {
    let text = receipt_signing_text(receipt)?;
    let obj = receipt
        .as_object()
        .ok_or_else(|| invalid("$", "a receipt must be a JSON object"))?;
    let (key_id, value) = super::signature_object::read(obj, "signature", SECTION)?;
    if !same_node(&issuer_keys.node, expect.issuer_node) {
        return Err(bad_sig(
            "signature.key_id",
            format!(
                "keys of {:?} cannot verify a receipt from {:?}",
                issuer_keys.node, expect.issuer_node
            ),
        ));
    }
    let key = issuer_keys.active_key(key_id, "signature.key_id")?;
    let signature =
        signature_from_b64url(value).map_err(|e| bad_sig("signature.value", e.reason))?;
    if !verify(key, None, text.as_bytes(), &signature) {
        return Err(bad_sig(
            "signature.value",
            "Ed25519 signature over the nine-line receipt text does not verify",
        ));
    }

    match obj.get("type").and_then(Value::as_str) {
        Some(RECEIPT_TYPE) => {}
        other => {
            return Err(invalid(
                "type",
                format!("type must be {RECEIPT_TYPE:?}, not {other:?}"),
            ));
        }
    }
    match obj.get("loom") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_str() == Some(LOOM_VERSION) => {}
        Some(v) => {
            return Err(invalid(
                "loom",
                format!("loom must be \"{LOOM_VERSION}\", not {v}"),
            ));
        }
    }
    let delivery_id = obj
        .get("delivery_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    if let Some(id) = delivery_id {
        check_delivery_id(id)?;
    }
    if delivery_id != expect.delivery_id {
        return Err(bad_sig(
            "delivery_id",
            format!(
                "receipt is for delivery {}, not {}",
                delivery_id.unwrap_or("(none)"),
                expect.delivery_id.unwrap_or("(none)")
            ),
        ));
    }
    let sender = obj
        .get("sender_node")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let recipient = obj
        .get("recipient_node")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let orientation = if same_node(sender, expect.issuer_node)
        && same_node(recipient, expect.delivering_node)
    {
        ReceiptOrientation::IssuerInSender
    } else if same_node(sender, expect.delivering_node) && same_node(recipient, expect.issuer_node)
    {
        ReceiptOrientation::DelivererInSender
    } else {
        return Err(bad_sig(
            "sender_node",
            format!(
                "sender_node {sender:?} and recipient_node {recipient:?} must name {:?} and {:?}",
                expect.issuer_node, expect.delivering_node
            ),
        ));
    };
    if same_node(expect.issuer_node, expect.delivering_node) {
        return Err(bad_sig(
            "recipient_node",
            "a node does not deliver to itself",
        ));
    }

    let status_text = obj
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let status = ReceiptStatus::parse(status_text).ok_or_else(|| {
        invalid(
            "status",
            format!("status must be accepted or partial, not {status_text:?}"),
        )
    })?;
    let ids = accepted_ids(obj)?;
    let delivered: BTreeSet<&str> = expect.envelope_ids.iter().map(String::as_str).collect();
    let mut seen = BTreeSet::new();
    for (i, id) in ids.iter().enumerate() {
        if !seen.insert(id.as_str()) {
            return Err(invalid(
                format!("accepted_envelope_ids[{i}]"),
                format!("{id} is listed twice"),
            ));
        }
        if !delivered.contains(id.as_str()) {
            return Err(invalid(
                format!("accepted_envelope_ids[{i}]"),
                format!("{id} was not in this delivery"),
            ));
        }
    }
    match status {
        ReceiptStatus::Accepted if seen.len() != delivered.len() => {
            return Err(invalid(
                "status",
                format!(
                    "status accepted lists {} of the {} delivered envelopes; it must list all",
                    seen.len(),
                    delivered.len()
                ),
            ));
        }
        ReceiptStatus::Partial if seen.len() == delivered.len() => {
            return Err(invalid(
                "status",
                "status partial lists every delivered envelope; that is accepted",
            ));
        }
        _ => {}
    }
    if let (_, Some(n)) = count_line(obj)?
        && n != ids.len() as u64
    {
        return Err(invalid(
            "accepted_count",
            format!(
                "accepted_count {n} differs from the {} ids listed",
                ids.len()
            ),
        ));
    }
    let ts = obj
        .get("timestamp")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Timestamp::parse(ts).map_err(|e| invalid("timestamp", e.to_string()))?;
    Ok(VerifiedReceipt {
        status,
        accepted_envelope_ids: ids,
        orientation,
        key_id: key_id.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::node_document::{KeyStatus, NodeKey};
    use proptest::prelude::*;

    const E1: &str = "env_01JN0000000000000000000001";
    const E2: &str = "env_01JN0000000000000000000002";

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn keys_b() -> NodeKeys {
        NodeKeys::new(
            "b.test",
            vec![NodeKey {
                key_id: "k_node_sign_b".into(),
                public_key: key(2).verifying_key(),
                status: KeyStatus::Active,
            }],
        )
    }

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-01T12:00:00Z").unwrap()
    }

    fn delivered() -> Vec<String> {
        vec![E1.into(), E2.into()]
    }

    fn expect(ids: &[String]) -> ReceiptExpectation<'_> {
        ReceiptExpectation {
            delivery_id: Some("fdel_1"),
            delivering_node: "a.test",
            issuer_node: "b.test",
            envelope_ids: ids,
        }
    }

    fn receipt(accepted: &[&str]) -> Value {
        DeliveryReceipt::for_delivery(
            Some("fdel_1".into()),
            "b.test",
            "a.test",
            accepted.iter().map(|s| (*s).to_owned()).collect(),
            2,
            now(),
        )
        .unwrap()
        .sign("k_node_sign_b", &key(2))
    }

    #[test]
    fn the_signed_text_is_the_nine_lines() {
        let r = receipt(&[E1]);
        assert_eq!(
            receipt_signing_text(&r).unwrap(),
            format!(
                "1.1\n{RECEIPT_TYPE}\nfdel_1\nb.test\na.test\npartial\n1\n{E1}\n2026-03-01T12:00:00.000Z"
            )
        );
    }

    #[test]
    fn statuses_follow_the_counts() {
        assert_eq!(ReceiptStatus::for_counts(0, 3), None);
        assert_eq!(
            ReceiptStatus::for_counts(1, 3),
            Some(ReceiptStatus::Partial)
        );
        assert_eq!(
            ReceiptStatus::for_counts(3, 3),
            Some(ReceiptStatus::Accepted)
        );
        let ids = delivered();
        let v = verify_receipt(&receipt(&[E1, E2]), &keys_b(), &expect(&ids)).unwrap();
        assert_eq!(v.status, ReceiptStatus::Accepted);
        assert_eq!(v.orientation, ReceiptOrientation::IssuerInSender);
        let v = verify_receipt(&receipt(&[E2]), &keys_b(), &expect(&ids)).unwrap();
        assert_eq!(
            (v.status, v.accepted_envelope_ids),
            (ReceiptStatus::Partial, vec![E2.to_owned()])
        );
    }

    #[test]
    fn every_member_is_covered_by_the_signature() {
        let ids = delivered();
        let good = receipt(&[E1]);
        for (member, value) in [
            ("loom", json!("1.2")),
            ("type", json!("x")),
            ("delivery_id", json!("fdel_2")),
            ("sender_node", json!("a.test")),
            ("recipient_node", json!("b.test")),
            ("status", json!("accepted")),
            ("accepted_count", json!(2)),
            ("accepted_envelope_ids", json!([E1, E2])),
            ("timestamp", json!("2026-03-01T12:00:01.000Z")),
        ] {
            let mut r = good.clone();
            r[member] = value;
            let e = verify_receipt(&r, &keys_b(), &expect(&ids)).unwrap_err();
            assert_eq!(e.code, ErrorCode::SignatureInvalid, "{member}: {e}");
        }
        // Another node's key does not verify, nor does an unknown key id.
        let mut other = keys_b();
        other.keys[0].public_key = key(3).verifying_key();
        assert!(verify_receipt(&good, &other, &expect(&ids)).is_err());
        let mut r = good.clone();
        r["signature"]["key_id"] = "k_unknown".into();
        assert_eq!(
            verify_receipt(&r, &keys_b(), &expect(&ids))
                .unwrap_err()
                .field,
            "signature.key_id"
        );
    }

    #[test]
    fn bindings_and_consistency() {
        let ids = delivered();
        let mut e = expect(&ids);
        e.delivery_id = Some("fdel_other");
        assert_eq!(
            verify_receipt(&receipt(&[E1]), &keys_b(), &e)
                .unwrap_err()
                .field,
            "delivery_id"
        );
        let only_one = vec![E2.to_owned()];
        let err = verify_receipt(&receipt(&[E1]), &keys_b(), &expect(&only_one)).unwrap_err();
        assert_eq!(
            (err.code, err.field.as_str()),
            (ErrorCode::EnvelopeInvalid, "accepted_envelope_ids[0]")
        );
        // Signed "partial" listing everything is inconsistent.
        let all = DeliveryReceipt {
            status: ReceiptStatus::Partial,
            ..DeliveryReceipt::for_delivery(
                Some("fdel_1".into()),
                "b.test",
                "a.test",
                ids.clone(),
                2,
                now(),
            )
            .unwrap()
        }
        .sign("k_node_sign_b", &key(2));
        assert_eq!(
            verify_receipt(&all, &keys_b(), &expect(&ids))
                .unwrap_err()
                .field,
            "status"
        );
        // The echo orientation verifies too.
        let mut echo = DeliveryReceipt::for_delivery(
            Some("fdel_1".into()),
            "b.test",
            "a.test",
            vec![E1.into()],
            2,
            now(),
        )
        .unwrap();
        std::mem::swap(&mut echo.issuer_node, &mut echo.delivering_node);
        let v = verify_receipt(
            &echo.sign("k_node_sign_b", &key(2)),
            &keys_b(),
            &expect(&ids),
        )
        .unwrap();
        assert_eq!(v.orientation, ReceiptOrientation::DelivererInSender);
    }

    proptest! {
        /// sign ∘ verify: every receipt we build verifies against its own delivery.
        #[test]
        fn sign_then_verify(mask in 1u32..(1 << 6), total_extra in 0usize..3, seed in 1u8..255, ts in 0i64..4_000_000_000_000, with_id in any::<bool>()) {
            let all: Vec<String> = (0..6 + total_extra).map(|i| format!("env_01JN00000000000000000000{i:02}")).collect();
            let accepted: Vec<String> = all.iter().enumerate().filter(|(i, _)| *i < 6 && mask & (1 << i) != 0).map(|(_, s)| s.clone()).collect();
            let id = with_id.then(|| "fdel_x".to_owned());
            let r = DeliveryReceipt::for_delivery(id.clone(), "b.test", "a.test", accepted.clone(), all.len(), Timestamp::from_unix_ms(ts)).unwrap();
            let k = SigningKey::from_bytes(&[seed; 32]);
            let keys = NodeKeys::new("b.test", vec![NodeKey { key_id: "k".into(), public_key: k.verifying_key(), status: KeyStatus::Active }]);
            let exp = ReceiptExpectation { delivery_id: id.as_deref(), delivering_node: "a.test", issuer_node: "b.test", envelope_ids: &all };
            let v = verify_receipt(&r.sign("k", &k), &keys, &exp).unwrap();
            prop_assert_eq!(v.accepted_envelope_ids, accepted);
        }

        /// Verification never panics on arbitrary JSON.
        #[test]
        fn verify_never_panics(v in crate::federation::testing::arb_json()) {
            let ids = delivered();
            let _ = verify_receipt(&v, &keys_b(), &expect(&ids));
            let _ = receipt_signing_text(&v);
        }
    }
}
