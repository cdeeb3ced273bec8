//! Kinds `federation-receipt-text` and `verify-delivery-receipt`: the signed receipt b.test
//! answers a.test's delivery with (DESIGN.md §9 wire form; the spec gives none, v1.1 §15.4
//! only says "generate receipts"). The nine-line text is built here; receipts are signed
//! with b.test's keys from fixed seeds and then altered per case.
//!
//! `verify-delivery-receipt` input: `receipt`, `node_keys` (the issuer's published keys),
//! `delivery` `{delivery_id, delivering_node, issuer_node, envelope_ids}` (what the sender
//! knows). Valid output: `{status, accepted_envelope_ids}`.

use super::{E1, E2, E3, case, node_key, sign};
use crate::generate::{Case, FileBuilder};
use serde_json::{Value, json};

const TYPE: &str = "federation.delivery.receipt@v1";
const DLV: &str = "fdel_01JN0000000000000000000000";
const RTS: &str = "2026-03-01T12:00:01.000Z";
const SPEC: &[&str] = &["v1.1 §15.4"];
const BAD_SIG: &str = "SIGNATURE_INVALID";
const BAD: &str = "ENVELOPE_INVALID";

/// The nine lines: loom, type, delivery_id, sender_node, recipient_node, status,
/// accepted_count, accepted ids joined by ",", timestamp; absent or null members are empty.
fn text(r: &Value) -> String {
    let s = |k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let count = r
        .get("accepted_count")
        .and_then(Value::as_u64)
        .map(|n| n.to_string())
        .unwrap_or_default();
    let ids: Vec<&str> = r["accepted_envelope_ids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    [
        s("loom"),
        s("type"),
        s("delivery_id"),
        s("sender_node"),
        s("recipient_node"),
        s("status"),
        count,
        ids.join(","),
        s("timestamp"),
    ]
    .join("\n")
}

fn unsigned(status: &str, ids: &[&str]) -> Value {
    json!({"loom": "1.1", "type": TYPE, "delivery_id": DLV, "sender_node": "b.test", "recipient_node": "a.test",
        "status": status, "accepted_count": ids.len(), "accepted_envelope_ids": ids, "timestamp": RTS})
}

/// Signs `r` (its current members) with the key called `key`, naming `key_id`.
fn signed_by(mut r: Value, key_id: &str, key: &str) -> Value {
    let t = text(&r);
    r["signature"] =
        json!({"algorithm": "Ed25519", "key_id": key_id, "value": sign(key, t.as_bytes())});
    r
}

fn signed(r: Value) -> Value {
    signed_by(r, "k_node_sign_b_1", "fed-node-b-1")
}

fn partial() -> Value {
    signed(unsigned("partial", &[E1, E3]))
}

fn set(mut r: Value, k: &str, v: Value) -> Value {
    r[k] = v;
    r
}

fn remove(mut r: Value, k: &str) -> Value {
    if let Some(o) = r.as_object_mut() {
        o.remove(k);
    }
    r
}

fn ok(id: &str, comment: &str, flags: &[&str], r: Value, status: &str, ids: &[&str]) -> Case {
    case(id, comment, SPEC, flags)
        .input("receipt", r)
        .valid_with(json!({"status": status, "accepted_envelope_ids": ids}))
}

fn bad(id: &str, comment: &str, flags: &[&str], r: Value, code: &str) -> Case {
    case(id, comment, SPEC, flags)
        .input("receipt", r)
        .invalid(code)
}

fn valid() -> Vec<Case> {
    let rec = &["Receipt"];
    let mut echo = unsigned("partial", &[E1, E3]);
    echo["sender_node"] = "a.test".into();
    echo["recipient_node"] = "b.test".into();
    let no_count = remove(unsigned("partial", &[E2]), "accepted_count");
    let no_loom = remove(unsigned("accepted", &[E1, E2, E3]), "loom");
    let mut no_alg = partial();
    if let Some(s) = no_alg["signature"].as_object_mut() {
        s.remove("algorithm");
    }
    let no_id = set(
        unsigned("accepted", &[E1, E2, E3]),
        "delivery_id",
        Value::Null,
    );
    vec![
        ok("receipt.valid.accepted", "every delivered envelope accepted", rec, signed(unsigned("accepted", &[E1, E2, E3])), "accepted", &[E1, E2, E3]),
        ok("receipt.valid.partial", "two of three accepted", rec, partial(), "partial", &[E1, E3]),
        ok("receipt.valid.partial-none", "partial with an empty list: nothing accepted, every envelope is rejected", &["Receipt", "Interpretation"], signed(unsigned("partial", &[])), "partial", &[]),
        ok("receipt.valid.deliverer-in-sender", "sender_node echoes the delivering node and recipient_node names the issuer: the other legal reading of the members", &["Receipt", "Interpretation"], signed(echo), "partial", &[E1, E3]),
        ok("receipt.valid.no-accepted-count", "accepted_count absent: its line is empty", &["Receipt", "Interpretation"], signed(no_count), "partial", &[E2]),
        ok("receipt.valid.no-loom", "loom absent (DESIGN.md §9's member list has none): its line is empty", &["Receipt", "Interpretation"], signed(no_loom), "accepted", &[E1, E2, E3]),
        ok("receipt.valid.no-algorithm", "signature without algorithm: Ed25519 is the only one", &["Receipt", "Interpretation"], no_alg, "partial", &[E1, E3]),
        case("receipt.valid.no-delivery-id", "the wrapper had no delivery_id; the receipt's is null", SPEC, &["Receipt", "Interpretation"])
            .input("receipt", signed(no_id))
            .input("delivery", json!({"delivery_id": null, "delivering_node": "a.test", "issuer_node": "b.test", "envelope_ids": [E1, E2, E3]}))
            .valid_with(json!({"status": "accepted", "accepted_envelope_ids": [E1, E2, E3]})),
    ]
}

fn tampered() -> Vec<Case> {
    let t = &["Receipt", "Tampered"];
    let p = partial();
    let mut flipped = p.clone();
    let v = flipped["signature"]["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let first = if v.starts_with('A') { "B" } else { "A" };
    flipped["signature"]["value"] = format!("{first}{}", &v[1..]).into();
    vec![
        bad(
            "receipt.tampered.loom",
            "loom changed after signing",
            t,
            set(p.clone(), "loom", "1.2".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.type",
            "type changed after signing",
            t,
            set(p.clone(), "type", "federation.delivery.receipt@v2".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.delivery-id",
            "delivery_id changed after signing",
            t,
            set(
                p.clone(),
                "delivery_id",
                "fdel_01JN0000000000000000000001".into(),
            ),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.sender-node",
            "sender_node changed after signing",
            t,
            set(p.clone(), "sender_node", "c.test".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.recipient-node",
            "recipient_node changed after signing",
            t,
            set(p.clone(), "recipient_node", "c.test".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.status",
            "partial turned into accepted, ids unchanged",
            t,
            set(p.clone(), "status", "accepted".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.count",
            "accepted_count changed after signing",
            t,
            set(p.clone(), "accepted_count", 3.into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.id-added",
            "an envelope id added to accepted_envelope_ids",
            t,
            set(p.clone(), "accepted_envelope_ids", json!([E1, E2, E3])),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.id-order",
            "the accepted ids reordered: the signed line joins them in order",
            t,
            set(p.clone(), "accepted_envelope_ids", json!([E3, E1])),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.timestamp",
            "timestamp changed after signing",
            t,
            set(p.clone(), "timestamp", "2026-03-01T12:00:02.000Z".into()),
            BAD_SIG,
        ),
        bad(
            "receipt.tampered.signature",
            "one character of the signature changed",
            t,
            flipped,
            BAD_SIG,
        ),
    ]
}

fn keys_and_form() -> Vec<Case> {
    let k = &["Receipt", "KeyRotation"];
    let u = unsigned("partial", &[E1, E3]);
    let jcs_form = {
        // A signature over the canonical JSON of the unsigned receipt instead of the nine lines.
        let mut r = u.clone();
        let payload = loom_protocol::jcs::to_canonical_bytes(&u);
        r["signature"] = json!({"algorithm": "Ed25519", "key_id": "k_node_sign_b_1", "value": sign("fed-node-b-1", &payload)});
        r
    };
    let mut alg = partial();
    alg["signature"]["algorithm"] = "RS256".into();
    vec![
        bad(
            "receipt.key.retired",
            "signed with b.test's retired key k_node_sign_b_0",
            k,
            signed_by(u.clone(), "k_node_sign_b_0", "fed-node-b-0"),
            BAD_SIG,
        ),
        bad(
            "receipt.key.unknown",
            "signed with a key b.test does not publish",
            k,
            signed_by(u.clone(), "k_node_sign_b_7", "fed-node-b-7"),
            BAD_SIG,
        ),
        bad(
            "receipt.key.wrong-key-for-id",
            "names k_node_sign_b_1 but signed with another key",
            k,
            signed_by(u.clone(), "k_node_sign_b_1", "fed-node-a-2"),
            BAD_SIG,
        ),
        bad(
            "receipt.key.other-node",
            "signed by a.test's key, which cannot speak for b.test",
            k,
            signed_by(u.clone(), "k_node_sign_a_2", "fed-node-a-2"),
            BAD_SIG,
        ),
        bad(
            "receipt.form.canonical-json",
            "signed over RFC 8785 JSON instead of the nine lines: not the form nodes verify",
            &["Receipt", "Interpretation"],
            jcs_form,
            BAD_SIG,
        ),
        bad(
            "receipt.signature.missing",
            "no signature",
            &["Receipt"],
            u.clone(),
            BAD_SIG,
        ),
        bad(
            "receipt.signature.string",
            "signature is a bare string, not {algorithm, key_id, value}",
            &["Receipt", "Interpretation"],
            set(
                u.clone(),
                "signature",
                sign("fed-node-b-1", text(&u).as_bytes()).into(),
            ),
            BAD_SIG,
        ),
        bad(
            "receipt.signature.algorithm",
            "signature.algorithm is RS256",
            &["Receipt"],
            alg,
            BAD_SIG,
        ),
    ]
}

fn bindings_and_consistency() -> Vec<Case> {
    let r = &["Receipt"];
    let other_delivery = signed(set(
        unsigned("partial", &[E1, E3]),
        "delivery_id",
        "fdel_01JN0000000000000000000009".into(),
    ));
    let third_node = signed(set(
        unsigned("partial", &[E1, E3]),
        "recipient_node",
        "c.test".into(),
    ));
    let both_issuer = signed(set(
        unsigned("partial", &[E1, E3]),
        "recipient_node",
        "b.test".into(),
    ));
    let unknown = "env_01JN0000000000000000000009";
    vec![
        bad(
            "receipt.binding.other-delivery",
            "a correctly signed receipt for another delivery_id",
            r,
            other_delivery,
            BAD_SIG,
        ),
        bad(
            "receipt.binding.third-node",
            "recipient_node names c.test, which did not deliver",
            r,
            third_node,
            BAD_SIG,
        ),
        bad(
            "receipt.binding.issuer-twice",
            "sender_node and recipient_node both name the issuer",
            r,
            both_issuer,
            BAD_SIG,
        ),
        bad(
            "receipt.consistency.accepted-subset",
            "status accepted but only two of three ids",
            r,
            signed(unsigned("accepted", &[E1, E2])),
            BAD,
        ),
        bad(
            "receipt.consistency.partial-all",
            "status partial listing every delivered envelope",
            r,
            signed(unsigned("partial", &[E1, E2, E3])),
            BAD,
        ),
        bad(
            "receipt.consistency.unknown-id",
            "an accepted id that was not in the delivery",
            r,
            signed(unsigned("partial", &[E1, unknown])),
            BAD,
        ),
        bad(
            "receipt.consistency.duplicate-id",
            "the same id accepted twice",
            r,
            signed(unsigned("partial", &[E1, E1])),
            BAD,
        ),
        bad(
            "receipt.consistency.count",
            "accepted_count 1 but two ids (consistently signed)",
            r,
            signed(set(
                unsigned("partial", &[E1, E3]),
                "accepted_count",
                1.into(),
            )),
            BAD,
        ),
        bad(
            "receipt.consistency.status",
            "status rejected is neither accepted nor partial",
            r,
            signed(unsigned("rejected", &[])),
            BAD,
        ),
        bad(
            "receipt.consistency.not-an-envelope-id",
            "an accepted id with a comma would split its signed line",
            r,
            signed(unsigned("partial", &["env_01JN0000000000000000000001,x"])),
            BAD,
        ),
        bad(
            "receipt.consistency.timestamp",
            "timestamp is not ISO 8601 with a zone",
            r,
            signed(set(
                unsigned("partial", &[E1]),
                "timestamp",
                "yesterday".into(),
            )),
            BAD,
        ),
        bad(
            "receipt.consistency.newline",
            "a member holding a line break would shift the signed lines",
            &["Receipt", "Interpretation"],
            signed(set(
                unsigned("partial", &[E1]),
                "status",
                "partial\n".into(),
            )),
            BAD,
        ),
    ]
}

fn texts() -> Vec<Case> {
    let t = |id: &str, comment: &str, r: Value, expected: &str| {
        case(id, comment, SPEC, &["Receipt", "SigningString"])
            .input("receipt", r)
            .valid_with(expected)
    };
    vec![
        t(
            "receipt-text.partial",
            "the nine lines of a partial receipt",
            unsigned("partial", &[E1, E3]),
            "1.1\nfederation.delivery.receipt@v1\nfdel_01JN0000000000000000000000\nb.test\na.test\npartial\n2\nenv_01JN0000000000000000000001,env_01JN0000000000000000000003\n2026-03-01T12:00:01.000Z",
        ),
        t(
            "receipt-text.signature-ignored",
            "the signature member is not part of the text",
            partial(),
            "1.1\nfederation.delivery.receipt@v1\nfdel_01JN0000000000000000000000\nb.test\na.test\npartial\n2\nenv_01JN0000000000000000000001,env_01JN0000000000000000000003\n2026-03-01T12:00:01.000Z",
        ),
        t(
            "receipt-text.null-delivery-id",
            "a null delivery_id is an empty line",
            set(unsigned("accepted", &[E1]), "delivery_id", Value::Null),
            "1.1\nfederation.delivery.receipt@v1\n\nb.test\na.test\naccepted\n1\nenv_01JN0000000000000000000001\n2026-03-01T12:00:01.000Z",
        ),
        t(
            "receipt-text.absent-count-and-loom",
            "absent loom and accepted_count are empty lines; an empty id list is an empty line",
            remove(remove(unsigned("partial", &[]), "loom"), "accepted_count"),
            "\nfederation.delivery.receipt@v1\nfdel_01JN0000000000000000000000\nb.test\na.test\npartial\n\n\n2026-03-01T12:00:01.000Z",
        ),
    ]
}

fn issuer_keys() -> Value {
    json!([
        node_key("b.test", "k_node_sign_b_0", "fed-node-b-0", Some("retired")),
        node_key("b.test", "k_node_sign_b_1", "fed-node-b-1", Some("active")),
        node_key("a.test", "k_node_sign_a_2", "fed-node-a-2", None),
    ])
}

/// Adds the `federation-receipt-text` and `verify-delivery-receipt` groups.
pub fn add(f: FileBuilder) -> FileBuilder {
    f.group("federation-receipt-text", Value::Null)
        .tests(texts())
        .group(
            "verify-delivery-receipt",
            json!({"node_keys": issuer_keys(), "delivery": {"delivery_id": DLV, "delivering_node": "a.test", "issuer_node": "b.test", "envelope_ids": [E1, E2, E3]}}),
        )
        .tests(
            valid()
                .into_iter()
                .chain(tampered())
                .chain(keys_and_form())
                .chain(bindings_and_consistency()),
        )
}
