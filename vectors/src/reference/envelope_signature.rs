//! Envelope signatures (v1.1 §7.3): `verify-envelope-signature` and its text form.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::envelope::{SignatureMode, verify_envelope_signature};
use loom_protocol::jcs::parse_strict;
use loom_protocol::keys::public_key_from_b64url;
use serde_json::{Value, json};

/// `verify-envelope-signature`: `envelope` verified with `public_key`, published as `key_id`.
pub fn verify(input: Input<'_>) -> Result<Answer, BadRequest> {
    verify_value(input.value("envelope")?, input)
}

/// `verify-envelope-signature-text`: `envelope_text` parsed strictly (I-JSON, v1.1 §7.2), then
/// verified like `verify-envelope-signature`.
pub fn verify_text(input: Input<'_>) -> Result<Answer, BadRequest> {
    match parse_strict(input.str("envelope_text")?) {
        Ok(env) => verify_value(&env, input),
        Err(e) => Ok(Answer::invalid("ENVELOPE_INVALID", e.to_string())),
    }
}

fn verify_value(env: &Value, input: Input<'_>) -> Result<Answer, BadRequest> {
    let key =
        public_key_from_b64url(input.str("public_key")?).map_err(|e| format!("public_key: {e}"))?;
    let key_id = input.str("key_id")?;
    if !env.is_object() {
        return Ok(Answer::invalid(
            "ENVELOPE_INVALID",
            "an envelope is a JSON object",
        ));
    }
    let sig_kid = env.pointer("/signature/key_id").and_then(Value::as_str);
    let from_kid = env.pointer("/from/key_id").and_then(Value::as_str);
    if env.get("signature").is_some_and(Value::is_object) {
        if sig_kid != Some(key_id) {
            return Ok(Answer::invalid(
                "SIGNATURE_INVALID",
                "signature.key_id does not name a key of the sender's identity document",
            ));
        }
        if from_kid.is_some_and(|f| Some(f) != sig_kid) {
            return Ok(Answer::invalid(
                "SIGNATURE_INVALID",
                "signature.key_id differs from from.key_id",
            ));
        }
    }
    Ok(match verify_envelope_signature(env, &key) {
        Ok(SignatureMode::ContextPrefixed) => Answer::valid(json!({"mode": "context-prefixed"})),
        Ok(SignatureMode::Legacy) => Answer::valid(json!({"mode": "legacy"})),
        Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
    })
}
