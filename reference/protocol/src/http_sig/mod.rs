//! LOOM-HTTP-SIG-1: signed federation requests (v1.1 §15.3–§15.5; header and string details
//! as the existing v1.1 node speaks them, DESIGN.md §9).
//!
//! Signed text, two forms:
//! - **v1** (five lines, §15.3): `METHOD\npath\nhex(sha256(raw body))\ntimestamp\nnonce`;
//! - **v2** (six lines, the existing node's extension): v1 plus `\n` and the value of the
//!   `X-LOOM-Trust-Epoch` header.
//!
//! Ed25519, no context prefix, base64url. The method is uppercase; `path` excludes the query
//! string. The timestamp must be within ±5 minutes of the receiver's clock (§15.5: freshness
//! applies to the wrapper, not to the envelopes inside), and a nonce may be used once per
//! sending node for 15 minutes ([`nonce`]).
//!
//! Which form verifies: a valid v1 signature always does — §15.3 defines only that form, and
//! the existing node sends `X-LOOM-Trust-Epoch: 1` beside a five-line signature (DESIGN.md
//! §9) — and the epoch is then treated as absent, since nothing signed it. With the header,
//! v2 verifies too and the epoch is then handed to the caller as signed
//! ([`VerifiedRequest::trust_epoch`]); without it, v2 with an empty sixth line verifies, which
//! is what the existing node's signing function produces when it has no epoch. We sign v1
//! unless the caller has a trust epoch to send. The epoch itself is not judged here (the spec
//! gives it no meaning).

pub mod nonce;

pub use nonce::{
    MAX_NONCE_LEN, MemoryNonceCache, NONCE_TTL_MS, NonceCache, NonceCacheLimits, NonceOutcome,
};

use crate::clock::Clock;
use crate::error::{ErrorCode, ProtocolError};
use crate::keys::{b64url_encode, sign_b64url, signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

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
/// `X-LOOM-Trust-Epoch` (optional; the existing node's v2 signing form, DESIGN.md §9).
pub const HEADER_TRUST_EPOCH: &str = "X-LOOM-Trust-Epoch";

/// Freshness window either side of now (§15.5).
pub const FRESHNESS_MS: i64 = 5 * 60 * 1000;

/// The LOOM-HTTP-SIG-1 header values: the five §15.3 requires and the optional trust epoch.
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
    /// `X-LOOM-Trust-Epoch`, when sent (selects the v2 signing form).
    pub trust_epoch: Option<String>,
}

impl SignedHeaders {
    /// The five required headers as `(name, value)` pairs in a fixed order.
    pub fn pairs(&self) -> [(&'static str, &str); 5] {
        [
            (HEADER_NODE, &self.node),
            (HEADER_TIMESTAMP, &self.timestamp),
            (HEADER_NONCE, &self.nonce),
            (HEADER_KEY_ID, &self.key_id),
            (HEADER_SIGNATURE, &self.signature),
        ]
    }

    /// Every header to send, the trust epoch last when present.
    pub fn all_pairs(&self) -> Vec<(&'static str, &str)> {
        let mut v = self.pairs().to_vec();
        if let Some(e) = &self.trust_epoch {
            v.push((HEADER_TRUST_EPOCH, e));
        }
        v
    }

    /// Reads the headers from `(name, value)` pairs, names compared case-insensitively
    /// (RFC 9110 §5.1). A missing required header reads as empty, which verification rejects
    /// naming it; the trust epoch is `None` when absent.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> SignedHeaders {
        let mut h = SignedHeaders {
            node: String::new(),
            timestamp: String::new(),
            nonce: String::new(),
            key_id: String::new(),
            signature: String::new(),
            trust_epoch: None,
        };
        for (name, value) in pairs {
            let slot = [
                (HEADER_NODE, &mut h.node),
                (HEADER_TIMESTAMP, &mut h.timestamp),
                (HEADER_NONCE, &mut h.nonce),
                (HEADER_KEY_ID, &mut h.key_id),
                (HEADER_SIGNATURE, &mut h.signature),
            ]
            .into_iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
            match slot {
                Some((_, s)) => value.clone_into(s),
                None if HEADER_TRUST_EPOCH.eq_ignore_ascii_case(name) => {
                    h.trust_epoch = Some(value.to_owned());
                }
                None => {}
            }
        }
        h
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

/// Which signing string a request was verified with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningForm {
    /// Five lines (§15.3).
    V1,
    /// Six lines: v1 plus the trust epoch (possibly empty).
    V2,
}

impl SigningForm {
    /// `"v1"` or `"v2"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SigningForm::V1 => "v1",
            SigningForm::V2 => "v2",
        }
    }
}

/// The five-line text that is signed (§15.3 "Canonical string").
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

/// The signed text: five lines without a trust epoch, six with one (DESIGN.md §9 v2).
pub fn signing_string(
    req: &RequestParts<'_>,
    timestamp: &str,
    nonce: &str,
    trust_epoch: Option<&str>,
) -> String {
    let v1 = canonical_string(req, timestamp, nonce);
    match trust_epoch {
        None => v1,
        Some(e) => format!("{v1}\n{e}"),
    }
}

/// Signs a federation request with the v1 string. `nonce_bytes` come from the caller's
/// seeded RNG.
pub fn sign_request(
    req: &RequestParts<'_>,
    node: &str,
    key_id: &str,
    key: &SigningKey,
    now: Timestamp,
    nonce_bytes: &[u8],
) -> SignedHeaders {
    sign_request_with_epoch(req, node, key_id, key, now, nonce_bytes, None)
}

/// Signs a federation request; with `trust_epoch` the v2 string and the
/// `X-LOOM-Trust-Epoch` header, without it exactly [`sign_request`].
pub fn sign_request_with_epoch(
    req: &RequestParts<'_>,
    node: &str,
    key_id: &str,
    key: &SigningKey,
    now: Timestamp,
    nonce_bytes: &[u8],
    trust_epoch: Option<&str>,
) -> SignedHeaders {
    let timestamp = now.to_rfc3339();
    let nonce = b64url_encode(nonce_bytes);
    let text = signing_string(req, &timestamp, &nonce, trust_epoch);
    SignedHeaders {
        node: node.to_owned(),
        timestamp,
        nonce,
        key_id: key_id.to_owned(),
        signature: sign_b64url(key, None, text.as_bytes()),
        trust_epoch: trust_epoch.map(str::to_owned),
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

/// A nonce is 1–[`MAX_NONCE_LEN`] visible ASCII characters. The signing string joins lines
/// with `\n`, so a nonce holding a line break could turn a six-line signature into a
/// five-line one over a different nonce (a replay that dodges the cache).
fn check_nonce_text(nonce: &str) -> Result<(), ProtocolError> {
    if nonce.len() > MAX_NONCE_LEN {
        return Err(reject(
            HEADER_NONCE,
            format!("nonce is longer than {MAX_NONCE_LEN} bytes"),
        ));
    }
    if !nonce.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(reject(
            HEADER_NONCE,
            "nonce must be visible ASCII (no spaces or control characters)",
        ));
    }
    Ok(())
}

/// The trust epoch is a decimal integer (the existing node's keyset epoch); anything else,
/// in particular a line break, would make the signed text ambiguous.
fn check_trust_epoch_text(epoch: &str) -> Result<(), ProtocolError> {
    if epoch.is_empty() || epoch.len() > 20 || !epoch.bytes().all(|b| b.is_ascii_digit()) {
        return Err(reject(
            HEADER_TRUST_EPOCH,
            "X-LOOM-Trust-Epoch must be a decimal integer (DESIGN.md §9)",
        ));
    }
    Ok(())
}

/// What a verified request established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRequest {
    /// The sending node, normalized ([`normalize_node`]).
    pub node: String,
    /// The form the signature verified with.
    pub form: SigningForm,
    /// `X-LOOM-Trust-Epoch`, when it was sent and the six-line signature covers it (`None`
    /// when a five-line signature verified beside the header).
    pub trust_epoch: Option<String>,
    /// The request timestamp.
    pub timestamp: Timestamp,
}

/// Verifies a signed federation request: required headers, freshness, signature with the
/// node key named by `X-LOOM-Key-Id` (resolved by the caller from the sender's node
/// document), then the nonce. The nonce is recorded only after the signature verifies, so
/// forged requests cannot burn nonces.
pub fn verify_request(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    node_key: &VerifyingKey,
    nonces: &mut dyn NonceCache,
    clock: &dyn Clock,
) -> Result<(), ProtocolError> {
    verify_request_detailed(req, headers, node_key, nonces, clock.now()).map(|_| ())
}

/// The required headers are present and non-empty (§15.3 "Required headers").
pub fn check_required_headers(headers: &SignedHeaders) -> Result<(), ProtocolError> {
    for (name, value) in headers.pairs() {
        if value.is_empty() {
            return Err(reject(name, format!("{name} is required")));
        }
    }
    Ok(())
}

/// The request timestamp parses and lies within ±5 minutes of `now`, both bounds inclusive
/// (§15.5). Returns the parsed time.
pub fn check_freshness(
    field: &str,
    timestamp: &str,
    now: Timestamp,
) -> Result<Timestamp, ProtocolError> {
    let ts = Timestamp::parse(timestamp).map_err(|e| {
        ProtocolError::new(
            ErrorCode::SignatureInvalid,
            field,
            e.to_string(),
            "v1.1 §15.3",
        )
    })?;
    let skew = ts.unix_ms().saturating_sub(now.unix_ms());
    if skew.abs() > FRESHNESS_MS {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            field,
            format!(
                "request timestamp is {skew} ms from now; at most ±{FRESHNESS_MS} ms is accepted"
            ),
            "v1.1 §15.5",
        ));
    }
    Ok(ts)
}

/// [`verify_request`] at `now`, saying which signing form verified.
pub fn verify_request_detailed(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    node_key: &VerifyingKey,
    nonces: &mut dyn NonceCache,
    now: Timestamp,
) -> Result<VerifiedRequest, ProtocolError> {
    check_required_headers(headers)?;
    check_nonce_text(&headers.nonce)?;
    let epoch = headers.trust_epoch.as_deref().filter(|e| !e.is_empty());
    let timestamp = check_freshness(HEADER_TIMESTAMP, &headers.timestamp, now)?;
    let sig = signature_from_b64url(&headers.signature)
        .map_err(|e| reject(HEADER_SIGNATURE, e.reason))?;
    let verifies = |e: Option<&str>| {
        let text = signing_string(req, &headers.timestamp, &headers.nonce, e);
        verify(node_key, None, text.as_bytes(), &sig)
    };
    // An epoch that is not a decimal integer cannot have been signed as a sixth line (it
    // would make the text ambiguous), so only the five-line form is left for it.
    let signed_epoch = epoch.filter(|e| check_trust_epoch_text(e).is_ok());
    let (form, trust_epoch) = match signed_epoch {
        Some(e) if verifies(Some(e)) => (SigningForm::V2, Some(e)),
        _ if verifies(None) => (SigningForm::V1, None),
        None if epoch.is_none() && verifies(Some("")) => (SigningForm::V2, None),
        _ if epoch.is_some() && signed_epoch.is_none() => {
            return Err(reject(
                HEADER_TRUST_EPOCH,
                "X-LOOM-Trust-Epoch must be a decimal integer to be signed (DESIGN.md §9), and \
                 the signature does not verify over the five-line string either",
            ));
        }
        _ => {
            let tried = if epoch.is_some() {
                "Ed25519 signature verifies over neither the five-line canonical string \
                 (v1.1 §15.3) nor the six-line string ending in X-LOOM-Trust-Epoch"
            } else {
                "Ed25519 signature over the canonical request string does not verify"
            };
            return Err(reject(HEADER_SIGNATURE, tried));
        }
    };
    // `X-LOOM-Node` is not signed, so key the replay cache by its normalized form: a
    // replay must not find a fresh slot by changing case or adding a trailing dot.
    let node = normalize_node(&headers.node);
    match nonces.check_and_insert(&node, &headers.nonce, now) {
        NonceOutcome::Fresh => Ok(VerifiedRequest {
            node,
            form,
            trust_epoch: trust_epoch.map(str::to_owned),
            timestamp,
        }),
        NonceOutcome::Replayed => Err(reject(
            HEADER_NONCE,
            "nonce already used by this node within 15 minutes (replay)",
        )),
        NonceOutcome::Full => Err(ProtocolError::new(
            ErrorCode::RateLimitExceeded,
            HEADER_NONCE,
            "the replay cache holds as many live nonces from this node as its bound allows; \
             retry later",
            "v1.1 §23.2, §14.3",
        )),
    }
}
