//! `identity-type-members`: the members an identity document carries because of its type
//! (v1.1 §6.3, §6.4), checked by `loom_protocol::identity_profile`, with the agent's
//! `delegation_signature` verified when the delegator's keys are given.

use super::delegation_chain::timestamp;
use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::Address;
use loom_protocol::documents::IdentityType;
use loom_protocol::identity_profile::{TypeMembers, check_type_members, verify_agent_delegation};
use loom_protocol::keys::public_key_from_b64url;
use serde_json::{Map, Value};

/// Invalid: the rule's error code and the offending field as `error_path`, or
/// `SIGNATURE_INVALID` at `delegation_signature` when no given delegator key verifies.
/// Valid: the members the identity document publishes.
pub fn type_members(input: Input<'_>) -> Result<Answer, BadRequest> {
    let kind: IdentityType = serde_json::from_value(input.value("type")?.clone())
        .map_err(|e| format!("input member \"type\": {e}"))?;
    let doc = input.value("document")?;
    let now = timestamp(input.value("now")?, "now")?;
    let members = match check_type_members(kind, doc, now) {
        Ok(m) => m,
        Err(e) => return Ok(Answer::invalid_at(e.code.as_str(), &e.field, e.to_string())),
    };
    if let (TypeMembers::Agent(d), Some(keys)) = (&members, input.opt("delegator_keys")) {
        let keys = keys
            .as_array()
            .ok_or("delegator_keys must be an array")?
            .iter()
            .map(|k| {
                k.as_str()
                    .and_then(|k| public_key_from_b64url(k).ok())
                    .ok_or_else(|| format!("delegator_keys: {k} is not a base64url Ed25519 key"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let agent = doc["id"]
            .as_str()
            .and_then(|s| Address::parse(s).ok())
            .ok_or("document.id must be a LOOM address")?;
        if !keys.iter().any(|k| verify_agent_delegation(k, &agent, d)) {
            return Ok(Answer::invalid_at(
                "SIGNATURE_INVALID",
                "delegation_signature",
                "no delegator key verifies delegation_signature over {delegator, delegate, scope, expires_at}",
            ));
        }
    }
    let out: Map<String, Value> = members
        .document_members(doc)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    Ok(Answer::valid(Value::Object(out)))
}
