//! Envelope signing and verification (v1.1 §7.2–§7.3; v1.0 §7.2).
//!
//! The signed bytes are `LOOM-ENVELOPE-SIG-v1 ‖ 0x00 ‖ JCS(envelope − signature − meta)`.
//! Verification follows the migration rule of §7.3: a present `context` selects the prefix;
//! an absent one tries the prefixed form first and then the legacy, unprefixed form.

use crate::error::{ErrorCode, ProtocolError};
use crate::id::KeyId;
use crate::jcs::to_canonical_bytes_without;
use crate::keys::{SigContext, sign_b64url, signature_from_b64url, verify};
use ed25519_dalek::{SigningKey, VerifyingKey};
use serde_json::{Value, json};

/// Members excluded from the canonical form of an envelope (v1.1 §7.2).
pub const UNSIGNED_MEMBERS: [&str; 2] = ["signature", "meta"];

/// How a verified signature was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureMode {
    /// With the `LOOM-ENVELOPE-SIG-v1` context prefix (what v1.1 implementations produce).
    ContextPrefixed,
    /// Without a prefix: a pre-v1.1 signature accepted during the migration window.
    Legacy,
}

/// The canonical bytes of an envelope for signing: JCS of the object without `signature`
/// and `meta` (v1.1 §7.2). `None` if `envelope` is not an object.
pub fn envelope_signing_payload(envelope: &Value) -> Option<Vec<u8>> {
    to_canonical_bytes_without(envelope, &UNSIGNED_MEMBERS)
}

/// Signs an envelope in place with the context prefix, setting `signature`
/// `{algorithm, key_id, value, context}` (v1.1 §7.3 steps 1–5). `from.key_id` is set to the
/// same key so the sender's key reference and the signature agree.
pub fn sign_envelope(
    envelope: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
) -> Result<(), ProtocolError> {
    sign_with(envelope, key, key_id, Some(SigContext::ENVELOPE))
}

/// Signs without a context prefix and without a `context` member: the legacy (v1.0 §7.2)
/// form, which only tests and vectors of the migration window should produce.
pub fn sign_envelope_legacy(
    envelope: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
) -> Result<(), ProtocolError> {
    sign_with(envelope, key, key_id, None)
}

fn sign_with(
    envelope: &mut Value,
    key: &SigningKey,
    key_id: &KeyId,
    context: Option<SigContext>,
) -> Result<(), ProtocolError> {
    let obj = envelope
        .as_object_mut()
        .ok_or_else(|| ProtocolError::invalid("$", "an envelope is a JSON object", "v1.1 §8.1"))?;
    if let Some(from) = obj.get_mut("from").and_then(Value::as_object_mut) {
        from.insert("key_id".into(), Value::String(key_id.to_string()));
    }
    obj.remove("signature");
    let payload = envelope_signing_payload(envelope).unwrap_or_default();
    let mut signature = json!({
        "algorithm": "Ed25519",
        "key_id": key_id.as_str(),
        "value": sign_b64url(key, context, &payload),
    });
    if let Some(ctx) = context {
        signature["context"] = Value::String(ctx.0.to_owned());
    }
    envelope["signature"] = signature;
    Ok(())
}

fn sig_err(field: &str, rule: &str) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, field, rule, "v1.1 §7.3")
}

/// Verifies an envelope's signature with the sender's public key (v1.1 §7.3 "Verification").
///
/// The caller resolves `key` from `signature.key_id` in the sender's identity document.
/// A `context` other than `LOOM-ENVELOPE-SIG-v1` names a prefix this implementation does not
/// know, so the envelope cannot be verified and is rejected.
pub fn verify_envelope_signature(
    envelope: &Value,
    key: &VerifyingKey,
) -> Result<SignatureMode, ProtocolError> {
    let payload = envelope_signing_payload(envelope).unwrap_or_default();
    verify_envelope_signature_over(envelope, &payload, key)
}

/// [`verify_envelope_signature`] given the signed form, `JCS(envelope − signature − meta)`
/// ([`envelope_signing_payload`]), which admission already wrote alongside the stored form
/// (`jcs::to_canonical_bytes_without_and`).
pub fn verify_envelope_signature_over(
    envelope: &Value,
    payload: &[u8],
    key: &VerifyingKey,
) -> Result<SignatureMode, ProtocolError> {
    let sig = envelope
        .get("signature")
        .and_then(Value::as_object)
        .ok_or_else(|| sig_err("signature", "all envelopes must carry a signature object"))?;
    if sig.get("algorithm").and_then(Value::as_str) != Some("Ed25519") {
        return Err(sig_err(
            "signature.algorithm",
            "signature.algorithm must be \"Ed25519\"",
        ));
    }
    let value = sig
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| sig_err("signature.value", "signature.value is required"))?;
    let signature =
        signature_from_b64url(value).map_err(|e| sig_err("signature.value", e.reason))?;
    // An explicit `null` context is the same as none: §7.3 distinguishes present from absent.
    match sig.get("context").filter(|c| !c.is_null()) {
        Some(Value::String(ctx)) if ctx == SigContext::ENVELOPE.0 => {
            if verify(key, Some(SigContext::ENVELOPE), payload, &signature) {
                Ok(SignatureMode::ContextPrefixed)
            } else {
                Err(sig_err(
                    "signature.value",
                    "Ed25519 signature mismatch over the context-prefixed canonical envelope",
                ))
            }
        }
        Some(_) => Err(sig_err(
            "signature.context",
            "unknown signature context; only LOOM-ENVELOPE-SIG-v1 is defined",
        )),
        None => {
            if verify(key, Some(SigContext::ENVELOPE), payload, &signature) {
                Ok(SignatureMode::ContextPrefixed)
            } else if verify(key, None, payload, &signature) {
                Ok(SignatureMode::Legacy)
            } else {
                Err(sig_err(
                    "signature.value",
                    "Ed25519 signature mismatch (prefixed and legacy forms both tried)",
                ))
            }
        }
    }
}
