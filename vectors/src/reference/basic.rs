//! Canonical JSON (v1.1 §7.2), identifiers (v1.1 §8.4) and addresses (v1.1 §6.1).

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::Address;
use loom_protocol::id::{
    AttachmentId, BlobId, CapabilityId, EnvelopeId, EventId, KeyId, KeyKind, ThreadId,
};
use loom_protocol::jcs::{JsonErrorKind, canonicalize_str};

/// The error names of the `canonicalize` kind (vectors/README.md).
pub fn canonical_error_name(kind: &JsonErrorKind) -> &'static str {
    match kind {
        JsonErrorKind::InvalidUtf8 => "INVALID_UTF8",
        JsonErrorKind::Syntax(_) => "SYNTAX",
        JsonErrorKind::DuplicateKey(_) => "DUPLICATE_KEY",
        JsonErrorKind::LoneSurrogate => "LONE_SURROGATE",
        JsonErrorKind::NonFiniteNumber => "NON_FINITE_NUMBER",
        JsonErrorKind::TooDeep => "TOO_DEEP",
    }
}

/// `canonicalize`: RFC 8785 text of `input`, or the strict parser's rejection.
pub fn canonicalize(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match canonicalize_str(input.str("input")?) {
        Ok(out) => Answer::valid(out),
        Err(e) => Answer::invalid(canonical_error_name(&e.kind), e.to_string()),
    })
}

/// `parse-id`: `input` parsed as an `id_type` and printed back.
pub fn parse_id(input: Input<'_>) -> Result<Answer, BadRequest> {
    fn printed<T: std::fmt::Display, E: std::fmt::Display>(r: Result<T, E>) -> Answer {
        match r {
            Ok(v) => Answer::valid(v.to_string()),
            Err(e) => Answer::invalid("ENVELOPE_INVALID", e.to_string()),
        }
    }
    let s = input.str("input")?;
    Ok(match input.str("id_type")? {
        "envelope" => printed(EnvelopeId::parse(s)),
        "thread" => printed(ThreadId::parse(s)),
        "attachment" => printed(AttachmentId::parse(s)),
        "blob" => printed(BlobId::parse(s)),
        "capability" => printed(CapabilityId::parse(s)),
        "event" => printed(EventId::parse(s)),
        "signing-key" => printed(KeyId::parse(s, KeyKind::Signing)),
        "encryption-key" => printed(KeyId::parse(s, KeyKind::Encryption)),
        "node-signing-key" => printed(KeyId::parse(s, KeyKind::NodeSigning)),
        other => return Err(format!("unknown id_type {other:?}")),
    })
}

/// `parse-address`: `input` parsed in `mode` (`wire`, `lenient`, `deeplink`); the output is
/// `{canonical, fragment}`.
pub fn parse_address(input: Input<'_>) -> Result<Answer, BadRequest> {
    let s = input.str("input")?;
    let parsed = match input.str("mode")? {
        "wire" => Address::parse_wire(s).map(|a| (a, None)),
        "lenient" => Address::parse(s).map(|a| (a, None)),
        "deeplink" => Address::parse_with_fragment(s),
        other => return Err(format!("unknown mode {other:?}")),
    };
    Ok(match parsed {
        Ok((a, fragment)) => Answer::valid(serde_json::json!({
            "canonical": a.to_string(),
            "fragment": fragment,
        })),
        Err(e) => Answer::invalid("ENVELOPE_INVALID", e.to_string()),
    })
}
