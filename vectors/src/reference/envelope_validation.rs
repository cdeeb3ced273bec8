//! Envelope structure and type rules (v1.1 §8.1–§8.4, §9.2): `validate-envelope`.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::envelope::{check_envelope_size, validate_envelope};
use loom_protocol::jcs::to_canonical_bytes;

/// `validate-envelope`: the node's size limit (`max_envelope_bytes`, over the RFC 8785 form),
/// then every field and type rule; the first broken rule's code.
pub fn validate(input: Input<'_>) -> Result<Answer, BadRequest> {
    let env = input.value("envelope")?;
    if let Some(limit) = input.opt("max_envelope_bytes") {
        let limit = limit
            .as_u64()
            .and_then(|l| usize::try_from(l).ok())
            .ok_or("input member \"max_envelope_bytes\" must be a non-negative integer")?;
        if let Err(e) = check_envelope_size(to_canonical_bytes(env).len(), limit) {
            return Ok(Answer::invalid(e.code.as_str(), e.to_string()));
        }
    }
    Ok(match validate_envelope(env) {
        Ok(_) => Answer::accepted(),
        Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
    })
}
