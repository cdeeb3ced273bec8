//! Area `federation`: node-to-node delivery (v1.1 §15.2–§15.6, §11.6, §14.3, §23.2;
//! loom-core-1 sender authority; the wire details of the existing v1.1 node, DESIGN.md §9).
//!
//! Inputs are built here: keys from fixed seeds, request signing strings, receipt texts and
//! identity payloads by this module's own code (not `loom-protocol`'s), then altered per
//! case. Every expectation is a literal in a case table, written from the spec; where the
//! spec is silent the test carries the `Interpretation` flag and its comment says which
//! reading it pins (`loom_protocol::federation`'s module docs give the reasons).

mod documents;
mod receipt;
mod request;
mod timing;
mod wrapper;

use super::keys::{public_b64url, signing_key};
use super::schema::{AreaSchema, PROTOCOL_ERRORS, any, string};
use super::{Case, FileBuilder};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer as _;
use serde_json::{Value, json};

/// The receiver's clock in every time-dependent group.
pub(crate) const NOW: &str = "2026-03-01T12:00:00Z";
/// A wrapper/request timestamp equal to `NOW`.
pub(crate) const TS: &str = "2026-03-01T12:00:00.000Z";

pub(crate) const E1: &str = "env_01JN0000000000000000000001";
pub(crate) const E2: &str = "env_01JN0000000000000000000002";
pub(crate) const E3: &str = "env_01JN0000000000000000000003";

/// base64url (unpadded) Ed25519 signature by the key called `key` over `bytes`.
pub(crate) fn sign(key: &str, bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(signing_key(key).sign(bytes).to_bytes())
}

/// A node key entry as the `node_keys` input carries it.
pub(crate) fn node_key(node: &str, key_id: &str, key: &str, status: Option<&str>) -> Value {
    let mut v = json!({"node": node, "key_id": key_id, "public_key": public_b64url(key)});
    if let Some(s) = status {
        v["status"] = s.into();
    }
    v
}

/// A minimal envelope for wrapper tests (envelope acceptance is another area's business).
pub(crate) fn env(id: &str, from: &str) -> Value {
    json!({"id": id, "from": {"identity": from}, "created_at": "2026-03-01T11:59:00Z"})
}

/// Builds `federation.json`.
pub fn build() -> FileBuilder {
    let mut f = FileBuilder::new(
        "federation",
        "Node-to-node delivery (v1.1 §15.2-§15.6, §11.6, §14.3, §23.2; loom-core-1 sender authority; wire details of the existing v1.1 node per DESIGN.md §9). \
         Kinds: parse-delivery-wrapper (the §15.4 wrapper), federation-signing-string (LOOM-HTTP-SIG-1 five-line and six-line strings), \
         verify-delivery-request (the receiver's checks of a signed delivery, in order), federation-receipt-text and verify-delivery-receipt (the signed delivery receipt), \
         read-node-document (§15.2 member variants, keys and rotation), verify-identity-node-signature (node-signed remote identity documents), \
         check-sender-authority, federation-policy, backoff-bounds, retry-after-failure and classify-delivery-response (§15.6 store-and-forward), \
         federated-meta (§11.6 origin_event_seq).",
    );
    for (flag, description, bug_class, effect) in NOTES {
        f = f.note(flag, description, bug_class, effect);
    }
    let f = wrapper::add(f);
    let f = request::add(f);
    let f = receipt::add(f);
    let f = documents::add(f);
    timing::add(f)
}

/// `(flag, description, bug_class, effect)`.
const NOTES: &[(&str, &str, &str, &str)] = &[
    (
        "Wrapper",
        "The §15.4 delivery wrapper's members: loom, sender_node, timestamp, envelopes (1 to 100 objects), optional delivery_id.",
        "lenient parser",
        "Malformed or oversized deliveries are half-processed, or two nodes disagree about what was delivered.",
    ),
    (
        "SenderMismatch",
        "The wrapper's sender_node must equal X-LOOM-Node (DESIGN.md §9; §15.3 binds a request to its signing node).",
        "identity confusion",
        "A node delivers in another node's name with its own key.",
    ),
    (
        "Freshness",
        "Request and wrapper timestamps must be within ±5 minutes of now, both bounds inclusive; envelopes inside may be older (§15.5).",
        "replay window",
        "Captured deliveries are replayed late, or store-and-forward mail is refused for its age.",
    ),
    (
        "Replay",
        "A nonce is accepted once per sending node within 15 minutes (§15.3, §23.2).",
        "replay cache",
        "A captured delivery is accepted twice.",
    ),
    (
        "SigningString",
        "The LOOM-HTTP-SIG-1 text: five lines (§15.3), or six with X-LOOM-Trust-Epoch (the existing node's v2).",
        "signing string",
        "Signatures from one implementation do not verify at another.",
    ),
    (
        "TrustEpoch",
        "A valid five-line signature verifies with or without an X-LOOM-Trust-Epoch header (the epoch then counts as absent: nothing signed it); the six-line form verifies only with the epoch it covers; without a header a six-line string with an empty last line also verifies (DESIGN.md §9).",
        "unsigned header",
        "An attacker swaps a signed trust epoch, or deliveries from the existing node are refused.",
    ),
    (
        "NonceText",
        "A nonce is 1 to 256 visible ASCII characters: a line break would let a six-line signature pass as a five-line one over another nonce.",
        "signing-string ambiguity",
        "A replay dodges the nonce cache.",
    ),
    (
        "KeyRotation",
        "Only active node keys verify; retired and revoked keys and unknown key ids do not (§15.2, §15.3, v1.0 §7.4).",
        "key lifecycle",
        "A retired or compromised node key keeps signing deliveries.",
    ),
    (
        "Policy",
        "Federation policy: blocklist always refuses; allowlist admits only listed peers; quarantine holds unlisted peers' mail (§15.2, §23.1).",
        "policy not enforced",
        "A node federates with peers its operator excluded.",
    ),
    (
        "SenderAuthority",
        "A node may deliver only envelopes whose sender's domain is its own (loom-core-1 'sender authority').",
        "authority confusion",
        "Any peer injects mail from identities of other nodes.",
    ),
    (
        "Receipt",
        "The signed delivery receipt: nine-line text, Ed25519 by an active key of the receiving node, bound to the delivery and consistent with it.",
        "unverified receipt",
        "A sender drops mail from its queue on a forged or mismatched receipt.",
    ),
    (
        "Tampered",
        "A member covered by a signature was changed after signing.",
        "incomplete signed form",
        "An attacker alters signed material in flight.",
    ),
    (
        "NodeDocument",
        "The §15.2 node document read leniently: loom/loom_version, keys top level or under federation, deliver_url top level or under federation, base64url or PEM keys.",
        "strict reader",
        "Nodes that publish a legal variant cannot federate with each other.",
    ),
    (
        "DocumentIdentity",
        "A node document must name the node it was fetched for, and a key id must not map to two keys.",
        "key confusion",
        "One node's keys verify another node's requests.",
    ),
    (
        "RemoteIdentity",
        "A remote identity document carries a node_signature by an active key of the identity's home node over one of two forms: the registration form JCS({loom, id, type, display_name, signing_keys reduced to {key_id, public_key_pem} sorted by key_id, encryption_keys?, agent_info?}) that the existing v1.1 node signs (DESIGN.md §9), or the full-key form JCS({loom, id, type, display_name, signing_keys sorted by key_id}) of older nodes; the key material used is the covered one; an uncovered status mark is honoured but not bound by the signature.",
        "unauthenticated key material",
        "A man in the middle, or another node, substitutes a sender's signing keys.",
    ),
    (
        "Backoff",
        "Exponential backoff: nominal min(base·2^(n-1), max), jittered into [nominal - floor(nominal/2), nominal]; never past the TTL (§15.6).",
        "retry storm",
        "A recovering node is flooded, or mail waits far longer than needed.",
    ),
    (
        "Ttl",
        "After the TTL (default 72 h, §15.6) an item fails with NODE_UNREACHABLE (node never reached on the last attempt) or DELIVERY_TIMEOUT.",
        "stuck queue",
        "Undeliverable mail stays queued forever, or senders get the wrong failure reason.",
    ),
    (
        "ResponseClass",
        "Which answers to a delivery are retried, which end it, and which mean delivered (409 ENVELOPE_DUPLICATE).",
        "retry classification",
        "Permanent refusals are retried for 72 hours, or transient failures drop mail.",
    ),
    (
        "EventSeq",
        "A receiving node assigns its own meta.event_seq and preserves meta.origin_event_seq (§11.6).",
        "replication bookkeeping",
        "Threads cannot be reconciled across nodes.",
    ),
    (
        "Interpretation",
        "The spec is silent; the vector pins loom_protocol::federation's documented reading (the comment says which).",
        "interpretation",
        "Implementations that read the spec differently disagree on these inputs.",
    ),
];

/// The inputs and outputs of `federation.json`.
pub fn schema() -> AreaSchema {
    let key = json!({"type": "object", "additionalProperties": false, "required": ["node", "key_id", "public_key"],
        "properties": {"node": string(), "key_id": string(), "public_key": string(), "status": string()}});
    let seen = json!({"type": "object", "additionalProperties": false, "required": ["node", "nonce", "at"],
        "properties": {"node": string(), "nonce": string(), "at": string()}});
    let strings = json!({"type": "array", "items": string()});
    let policy = json!({"type": "object", "additionalProperties": false, "required": ["mode"],
        "properties": {"mode": {"enum": ["open", "allowlist", "quarantine"]}, "allow": strings, "block": strings}});
    let integer = json!({"type": "integer", "minimum": 0});
    AreaSchema {
        kinds: vec![
            "parse-delivery-wrapper",
            "federation-signing-string",
            "verify-delivery-request",
            "federation-receipt-text",
            "verify-delivery-receipt",
            "read-node-document",
            "verify-identity-node-signature",
            "check-sender-authority",
            "federation-policy",
            "backoff-bounds",
            "retry-after-failure",
            "classify-delivery-response",
            "federated-meta",
        ],
        inputs: vec![
            ("now", string()),
            ("body", string()),
            ("header_node", string()),
            ("method", string()),
            ("path", string()),
            ("timestamp", string()),
            ("nonce", string()),
            ("trust_epoch", string()),
            (
                "headers",
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
            ),
            ("node_keys", json!({"type": "array", "items": key})),
            ("seen_nonces", json!({"type": "array", "items": seen})),
            ("policy", policy),
            ("receipt", any()),
            (
                "delivery",
                json!({"type": "object", "additionalProperties": false,
                    "required": ["delivering_node", "issuer_node", "envelope_ids"],
                    "properties": {"delivery_id": {"type": ["string", "null"]}, "delivering_node": string(),
                        "issuer_node": string(), "envelope_ids": strings}}),
            ),
            ("document", any()),
            ("node", string()),
            ("home_node", string()),
            ("delivering_node", string()),
            ("envelope", any()),
            (
                "retry_policy",
                json!({"type": "object", "additionalProperties": false,
                    "required": ["base_delay_ms", "max_delay_ms", "ttl_ms"],
                    "properties": {"base_delay_ms": integer, "max_delay_ms": integer, "ttl_ms": integer}}),
            ),
            ("failures", integer.clone()),
            ("queued_at", string()),
            (
                "last_failure",
                json!({"type": "string", "pattern": "^(unreachable|timeout|http-[1-5][0-9][0-9])$"}),
            ),
            (
                "draw",
                json!({"type": "integer", "minimum": 0, "maximum": 9007199254740991i64}),
            ),
            (
                "status",
                json!({"type": "integer", "minimum": 100, "maximum": 599}),
            ),
            ("error_code", string()),
            ("received_meta", any()),
            ("event_seq", integer),
        ],
        required: vec![],
        expected: any(),
        errors: PROTOCOL_ERRORS.to_vec(),
    }
}

/// A test of `kind`'s group: shorthand for the case tables.
pub(crate) fn case(id: &str, comment: &str, spec: &[&str], flags: &[&str]) -> Case {
    Case::new(id, comment, spec).flags(flags)
}
