//! LOOM-HTTP-SIG-1: signed federation requests (v1.1 §15.3–§15.5; header and string details
//! as the existing v1.1 node speaks them, DESIGN.md §9).
//!
//! Signed text: `METHOD\npath\nhex(sha256(raw body))\ntimestamp\nnonce`, Ed25519, base64url.
//! The method is uppercase; `path` excludes the query string. The timestamp must be within
//! ±5 minutes of the receiver's clock (§15.5: freshness applies to the wrapper, not to the
//! envelopes inside), and a nonce may be used once per sending node for 15 minutes.

use crate::clock::Clock;
use crate::error::{ErrorCode, ProtocolError};
use crate::keys::{b64url_encode, sign_b64url, signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// `X-LOOM-Node`.
pub const HEADER_NODE: &str = "X-LOOM-Node";
/// `X-LOOM-Timestamp`.
pub const HEADER_TIMESTAMP: &str = "X-LOOM-Timestamp";
/// `X-LOOM-Nonce`.
pub const HEADER_NONCE: &str = "X-LOOM-Nonce";
/// `X-LOOM-Key-Id`.
pub const HEADER_KEY_ID: &str = "X-LOOM-Key-Id";
/// `X-LOOM-Signature`.
pub const HEADER_SIGNATURE: &str = "X-LOOM-Signature";

/// Freshness window either side of now (§15.5).
pub const FRESHNESS_MS: i64 = 5 * 60 * 1000;
/// How long a nonce stays in the replay cache (§15.3).
pub const NONCE_TTL_MS: i64 = 15 * 60 * 1000;

/// The five LOOM-HTTP-SIG-1 header values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// Sending node (domain).
    pub node: String,
    /// ISO 8601 timestamp.
    pub timestamp: String,
    /// Single-use nonce.
    pub nonce: String,
    /// Node signing key id (`k_node_sign_…`).
    pub key_id: String,
    /// base64url Ed25519 signature.
    pub signature: String,
}

impl SignedHeaders {
    /// The headers as `(name, value)` pairs in a fixed order.
    pub fn pairs(&self) -> [(&'static str, &str); 5] {
        [
            (HEADER_NODE, &self.node),
            (HEADER_TIMESTAMP, &self.timestamp),
            (HEADER_NONCE, &self.nonce),
            (HEADER_KEY_ID, &self.key_id),
            (HEADER_SIGNATURE, &self.signature),
        ]
    }
}

/// The request parts that are signed.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// HTTP method.
    pub method: &'a str,
    /// Path, with or without a query (the query is not signed).
    pub path: &'a str,
    /// Raw body bytes.
    pub body: &'a [u8],
}

/// The exact text that is signed (§15.3 "Canonical string").
pub fn canonical_string(req: &RequestParts<'_>, timestamp: &str, nonce: &str) -> String {
    let path = req.path.split('?').next().unwrap_or("");
    let body_hash = hex::encode(Sha256::digest(req.body));
    format!(
        "{}\n{}\n{}\n{}\n{}",
        req.method.to_ascii_uppercase(),
        path,
        body_hash,
        timestamp,
        nonce
    )
}

/// Signs a federation request. `nonce` comes from the caller's seeded RNG.
pub fn sign_request(
    req: &RequestParts<'_>,
    node: &str,
    key_id: &str,
    key: &SigningKey,
    now: Timestamp,
    nonce_bytes: &[u8],
) -> SignedHeaders {
    let timestamp = now.to_rfc3339();
    let nonce = b64url_encode(nonce_bytes);
    let signature = sign_b64url(
        key,
        None,
        canonical_string(req, &timestamp, &nonce).as_bytes(),
    );
    SignedHeaders {
        node: node.to_owned(),
        timestamp,
        nonce,
        key_id: key_id.to_owned(),
        signature,
    }
}

/// A replay cache for nonces (§15.3): remembers `(node, nonce)` pairs until they expire.
pub trait NonceCache {
    /// Records `(node, nonce)` seen at `now`; returns false if it was already present and
    /// unexpired (a replay).
    fn check_and_insert(&mut self, node: &str, nonce: &str, now: Timestamp) -> bool;
}

/// An in-memory [`NonceCache`] with a 15-minute lifetime.
#[derive(Debug, Clone, Default)]
pub struct MemoryNonceCache {
    seen: BTreeMap<(String, String), Timestamp>,
}

impl NonceCache for MemoryNonceCache {
    fn check_and_insert(&mut self, node: &str, nonce: &str, now: Timestamp) -> bool {
        self.seen
            .retain(|_, at| now.unix_ms() - at.unix_ms() < NONCE_TTL_MS);
        let key = (node.to_owned(), nonce.to_owned());
        if self.seen.contains_key(&key) {
            return false;
        }
        self.seen.insert(key, now);
        true
    }
}

/// A node name as LOOM-HTTP-SIG-1 compares it (replay cache, key lookup, wrapper sender):
/// DNS names are case-insensitive and a trailing dot names the same host. `X-LOOM-Node` is
/// not signed, so every comparison must use this form or a replay finds a fresh slot.
pub fn normalize_node(node: &str) -> String {
    node.trim_end_matches('.').to_ascii_lowercase()
}

/// The federation delivery wrapper's `sender_node` must name the node that signed the
/// request (`X-LOOM-Node`), or a node could deliver in another's name with its own key
/// (DESIGN.md §9, the existing v1.1 node's rule; v1.1 §15.3 binds the request to the
/// sending node). A body that is not a wrapper object is left to the caller.
pub fn check_wrapper_sender(
    wrapper: &serde_json::Value,
    header_node: &str,
) -> Result<(), ProtocolError> {
    match wrapper.get("sender_node") {
        None => Ok(()),
        Some(sender)
            if sender.as_str().map(normalize_node) == Some(normalize_node(header_node)) =>
        {
            Ok(())
        }
        Some(sender) => Err(reject(
            "sender_node",
            format!("wrapper sender_node {sender} differs from X-LOOM-Node {header_node:?}"),
        )),
    }
}

fn reject(field: &str, rule: impl Into<String>) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, "v1.1 §15.3")
}

/// Verifies a signed federation request: freshness, signature with the node key named by
/// `X-LOOM-Key-Id` (resolved by the caller from the sender's node document), then the nonce.
/// The nonce is recorded only after the signature verifies, so forged requests cannot
/// burn nonces.
pub fn verify_request(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    node_key: &VerifyingKey,
    nonces: &mut dyn NonceCache,
    clock: &dyn Clock,
) -> Result<(), ProtocolError> {
    for (name, value) in headers.pairs() {
        if value.is_empty() {
            return Err(reject(name, format!("{name} is required")));
        }
    }
    let now = clock.now();
    let ts = Timestamp::parse(&headers.timestamp)
        .map_err(|e| reject(HEADER_TIMESTAMP, e.to_string()))?;
    let skew = ts.unix_ms() - now.unix_ms();
    if skew.abs() > FRESHNESS_MS {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            HEADER_TIMESTAMP,
            format!(
                "request timestamp is {skew} ms from now; at most ±{FRESHNESS_MS} ms is accepted"
            ),
            "v1.1 §15.5",
        ));
    }
    let sig = signature_from_b64url(&headers.signature)
        .map_err(|e| reject(HEADER_SIGNATURE, e.reason))?;
    let text = canonical_string(req, &headers.timestamp, &headers.nonce);
    if !verify(node_key, None, text.as_bytes(), &sig) {
        return Err(reject(
            HEADER_SIGNATURE,
            "Ed25519 signature over the canonical request string does not verify",
        ));
    }
    // `X-LOOM-Node` is not signed, so key the replay cache by its normalized form: a
    // replay must not find a fresh slot by changing case or adding a trailing dot.
    let node = normalize_node(&headers.node);
    if !nonces.check_and_insert(&node, &headers.nonce, now) {
        return Err(reject(
            HEADER_NONCE,
            "nonce already used by this node within 15 minutes (replay)",
        ));
    }
    Ok(())
}
