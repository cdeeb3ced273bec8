//! Capability token authorization (v1.1 §12, §11.2) from a self-contained request: the token,
//! the identities' keys, the thread's capability state, `now` and the action.

use super::delegation_chain::timestamp;
use super::{BadRequest, Input};
use crate::protocol::Answer;
use ed25519_dalek::VerifyingKey;
use loom_protocol::capability::{
    CapabilityRequest, CapabilityResolver, Grant, PopProof, authorize_capability, grant_for_intent,
};
use loom_protocol::envelope::Priority;
use loom_protocol::id::{CapabilityId, EnvelopeId, ThreadId};
use loom_protocol::keys::public_key_from_b64url;
use loom_protocol::{Address, FixedClock};
use serde_json::{Value, json};

struct World<'a> {
    identities: &'a Value,
    thread: &'a Value,
}

impl World<'_> {
    fn key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        let entry = self
            .identities
            .as_object()?
            .iter()
            .find(|(a, _)| Address::parse(a).is_ok_and(|a| a == *identity))?;
        entry.1["signing_keys"][key_id]
            .as_str()
            .and_then(|k| public_key_from_b64url(k).ok())
    }

    fn listed(&self, list: &str, id: &str) -> bool {
        self.thread[list]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(id)))
    }
}

impl CapabilityResolver for World<'_> {
    fn signing_key(&self, identity: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.key(identity, key_id)
    }
    fn pop_key(&self, holder: &Address, key_id: &str) -> Option<VerifyingKey> {
        self.key(holder, key_id)
    }
    fn may_issue(&self, issuer: &Address, thread: &ThreadId) -> bool {
        self.thread["id"].as_str() == Some(thread.to_string().as_str())
            && self.thread["issuers"].as_array().is_some_and(|l| {
                l.iter()
                    .filter_map(|a| a.as_str().and_then(|a| Address::parse(a).ok()))
                    .any(|a| a == *issuer)
            })
    }
    fn is_revoked(&self, id: &CapabilityId) -> bool {
        self.listed("revoked", &id.to_string())
    }
    fn is_spent(&self, id: &CapabilityId) -> bool {
        self.listed("spent", &id.to_string())
    }
}

/// The grant an action needs: a `thread_op` needs the grant of its operation (§11.2 → §12.2);
/// sending any other envelope needs `reply` (§12.2 "Send envelopes to thread").
fn required_grant(kind: &str, intent: Option<&str>) -> Grant {
    match (kind, intent) {
        ("thread_op", Some(i)) => grant_for_intent(i),
        ("thread_op", None) => Grant::Admin,
        _ => Grant::Reply,
    }
}

/// `authorize-capability`: may `request` proceed on the strength of `token`?
pub fn authorize(input: Input<'_>) -> Result<Answer, BadRequest> {
    let thread = input.value("thread")?;
    let request = input.value("request")?;
    let s = |k: &str| {
        request[k]
            .as_str()
            .ok_or_else(|| format!("request.{k} must be a string"))
    };
    let actor = Address::parse(s("actor")?).map_err(|e| e.reason.to_string())?;
    let thread_id = ThreadId::parse(thread["id"].as_str().unwrap_or_default())
        .map_err(|e| format!("thread.id: {e}"))?;
    let envelope_id = EnvelopeId::parse(s("envelope_id")?).map_err(|e| e.to_string())?;
    let kind = s("type")?;
    let intent = request["intent"].as_str();
    let priority = Priority::parse(s("priority")?).ok_or("request.priority is not a priority")?;
    let pop = match &request["pop"] {
        Value::Null => None,
        p => Some(PopProof {
            signature: p["signature"].as_str().ok_or("pop.signature")?,
            timestamp: p["timestamp"].as_str().ok_or("pop.timestamp")?,
        }),
    };
    let req = CapabilityRequest {
        actor: &actor,
        thread_id: &thread_id,
        thread_cap_epoch: thread["cap_epoch"].as_u64().ok_or("thread.cap_epoch")?,
        required: required_grant(kind, intent),
        envelope_id: &envelope_id,
        envelope_type: kind,
        intent,
        priority,
        depth: request["depth"].as_u64(),
        pop,
    };
    let world = World {
        identities: input.value("identities")?,
        thread,
    };
    let clock = FixedClock(timestamp(input.value("now")?, "now")?);
    Ok(
        match authorize_capability(input.value("token")?, &req, &world, &clock) {
            Ok(ok) => Answer::valid(json!({ "mark_spent": ok.single_use })),
            Err(e) => Answer::invalid(e.code.as_str(), e.to_string()),
        },
    )
}
