//! The registration steps the identity quirks break (v1.1 §6.1–§6.4, §8.4, DESIGN.md §9),
//! as overrides of loom-protocol's [`RegistrationRules`] on the quirk set; every other step
//! is the specification ([`SpecRegistration`]).

use super::{Quirk, Quirks};
use ed25519_dalek::VerifyingKey;
use loom_protocol::documents::IdentityType;
use loom_protocol::id::KeyKind;
use loom_protocol::identity_profile::AGENT_MEMBERS;
use loom_protocol::registration::{
    RegisteredMembers, RegistrationRules, SpecRegistration, present_type_members,
};
use loom_protocol::{Address, ProtocolError, Timestamp};
use serde_json::Value;

/// A `loom://local@domain` address taken as written, without the §6.1 local-part rule.
fn lenient_loom_address(s: &str) -> Option<Address> {
    let (local, domain) = s.strip_prefix("loom://")?.rsplit_once('@')?;
    (!local.is_empty() && !domain.is_empty()).then(|| Address::Loom {
        local: local.to_owned(),
        domain: domain.to_owned(),
    })
}

impl Quirks {
    /// Whether a quirk waives the §6.3/§6.4 type-member rule that failed on `field`.
    fn waives_type_member(&self, kind: IdentityType, field: &str) -> bool {
        let q = |x| self.has(x);
        match field {
            f if kind != IdentityType::Agent && AGENT_MEMBERS.contains(&f) => {
                q(Quirk::AcceptAgentMembersOnOtherTypes)
            }
            "delegator" => q(Quirk::AcceptAgentWithoutDelegator),
            f if f.starts_with("delegation_scope") || f == "delegation_expires" => {
                q(Quirk::AcceptUnboundedAgentScope)
            }
            "agent_info" | "delegation_signature" => q(Quirk::AcceptIncompleteAgentDocument),
            f if f.starts_with("members") => q(Quirk::AcceptTeamWithoutMembers),
            "routing_policy" => q(Quirk::AcceptTeamWithoutRoutingPolicy),
            "operator" => q(Quirk::AcceptServiceWithoutOperator),
            _ => false,
        }
    }
}

impl RegistrationRules for Quirks {
    fn registrant(&self, field: &str, s: &str) -> Result<Address, ProtocolError> {
        SpecRegistration.registrant(field, s).or_else(|e| {
            if self.has(Quirk::AcceptAnyLocalPart) {
                lenient_loom_address(s).ok_or(e)
            } else {
                Err(e)
            }
        })
    }

    fn registered_id(&self, s: &str) -> Result<Address, ProtocolError> {
        if self.has(Quirk::AcceptNonCanonicalAddress) {
            return Address::parse(s).map_err(|e| {
                ProtocolError::invalid("id", format!("not a LOOM address: {e}"), "v1.1 §6.1")
            });
        }
        self.registrant("id", s)
    }

    fn published_id(&self, id: &Address, as_written: &str) -> String {
        if self.has(Quirk::AcceptNonCanonicalAddress) {
            return as_written.to_owned();
        }
        SpecRegistration.published_id(id, as_written)
    }

    fn check_not_bridge(&self, id: &Address) -> Result<(), ProtocolError> {
        if self.has(Quirk::AllowBridgeRegistration) {
            return Ok(());
        }
        SpecRegistration.check_not_bridge(id)
    }

    fn check_key_id(&self, field: &str, key_id: &str, kind: KeyKind) -> Result<(), ProtocolError> {
        let waived = match kind {
            KeyKind::Signing => self.has(Quirk::AcceptAnySigningKeyId),
            KeyKind::Encryption => self.has(Quirk::AcceptAnyEncryptionKeyId),
            KeyKind::NodeSigning => false,
        };
        if waived {
            return Ok(());
        }
        SpecRegistration.check_key_id(field, key_id, kind)
    }

    fn type_members(
        &self,
        kind: IdentityType,
        raw: &Value,
        now: Timestamp,
    ) -> Result<RegisteredMembers, ProtocolError> {
        match SpecRegistration.type_members(kind, raw, now) {
            // `accept-incomplete-agent-document` also skips the delegator's signature.
            Ok(m) if self.has(Quirk::AcceptIncompleteAgentDocument) => {
                Ok(RegisteredMembers { agent: None, ..m })
            }
            Err(e) if self.waives_type_member(kind, &e.field) => Ok(RegisteredMembers {
                members: present_type_members(raw),
                agent: None,
            }),
            other => other,
        }
    }

    fn check_proof(
        &self,
        key: &VerifyingKey,
        text: &str,
        signature: &str,
    ) -> Result<(), ProtocolError> {
        if self.has(Quirk::AcceptBadRegistrationProof) {
            return Ok(());
        }
        SpecRegistration.check_proof(key, text, signature)
    }
}
