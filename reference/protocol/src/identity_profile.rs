//! The members an identity document must carry because of its type (v1.1 §6.3 table, §6.4):
//! agents name their `delegator` and carry a bounded, signed delegation; teams carry a
//! members list and a routing policy; services name their accountable `operator`.
//!
//! One place for these rules: the reference node checks registrations with
//! [`check_type_members`], clients build agent delegations with [`sign_agent_delegation`].
//!
//! Where the spec is silent (recorded in the node README):
//! - `delegation_signature` is the delegator's Ed25519 signature, with the §13.3.1 delegation
//!   context, over the JCS of the identity's delegation read as a §13.1 delegation object:
//!   `{delegator, delegate: <agent id>, scope: delegation_scope, expires_at:
//!   delegation_expires}` ([`agent_delegation_payload`]). There is no legacy (unprefixed)
//!   fallback: a registration carries a new signature, and §7.3 says new implementations
//!   MUST always produce context-prefixed signatures.
//! - "bounded scope" means a non-empty list of §13.2 scopes and an expiry not in the past
//!   (the reading §13.3 gives a delegation link's `expires_at`).
//! - `routing_policy` is a non-empty string or a non-empty object; `operator` a non-empty
//!   string (a LOOM address when it starts with `loom://`); `members` an array of LOOM
//!   addresses without duplicates.
//! - A member whose value is `null` counts as absent.

use crate::address::Address;
use crate::documents::IdentityType;
use crate::error::{ErrorCode, ProtocolError};
use crate::jcs::to_canonical_bytes;
use crate::keys::{SigContext, sign_b64url};
use crate::scope::check_scope_syntax;
use crate::time::Timestamp;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

/// Members only an agent identity document carries (§6.4).
pub const AGENT_MEMBERS: [&str; 5] = [
    "delegator",
    "agent_info",
    "delegation_scope",
    "delegation_expires",
    "delegation_signature",
];

/// Members a team identity document must carry (§6.3).
pub const TEAM_MEMBERS: [&str; 2] = ["members", "routing_policy"];

/// Members a service identity document must carry (§6.3).
pub const SERVICE_MEMBERS: [&str; 1] = ["operator"];

/// An agent's delegation as its identity document states it (§6.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDelegation {
    /// The accountable delegator.
    pub delegator: Address,
    /// The bounded scope.
    pub scope: Vec<String>,
    /// When the delegation ends.
    pub expires: Timestamp,
    /// `delegation_expires` exactly as given (what the signature covers).
    pub expires_text: String,
    /// base64url signature by the delegator.
    pub signature: String,
}

/// What a registration's type-specific members were checked to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeMembers {
    /// A human (nothing beyond the signing key, checked elsewhere).
    Human,
    /// An agent and its delegation.
    Agent(AgentDelegation),
    /// A team: members and routing policy.
    Team {
        /// Member addresses, canonical.
        members: Vec<Address>,
        /// The routing policy as given.
        routing_policy: Value,
    },
    /// A service and its operator.
    Service {
        /// The accountable human or organisation.
        operator: String,
    },
}

impl TypeMembers {
    /// The members to publish in the identity document, canonicalised.
    pub fn document_members(&self, req: &Value) -> Vec<(&'static str, Value)> {
        match self {
            TypeMembers::Human => vec![],
            TypeMembers::Agent(d) => vec![
                ("delegator", d.delegator.to_string().into()),
                (
                    "agent_info",
                    req.get("agent_info").cloned().unwrap_or(Value::Null),
                ),
                ("delegation_scope", json!(d.scope)),
                ("delegation_expires", d.expires_text.clone().into()),
                ("delegation_signature", d.signature.clone().into()),
            ],
            TypeMembers::Team {
                members,
                routing_policy,
            } => vec![
                (
                    "members",
                    members.iter().map(|m| Value::from(m.to_string())).collect(),
                ),
                ("routing_policy", routing_policy.clone()),
            ],
            TypeMembers::Service { operator } => vec![("operator", operator.clone().into())],
        }
    }
}

fn invalid(field: &str, rule: impl Into<String>, section: &'static str) -> ProtocolError {
    ProtocolError::new(ErrorCode::EnvelopeInvalid, field, rule, section)
}

fn present<'a>(req: &'a Value, field: &str) -> Option<&'a Value> {
    req.get(field).filter(|v| !v.is_null())
}

/// Checks the members a registration request must (and must not) carry for its `kind`
/// (v1.1 §6.3 table, §6.4) at time `now`. Members of another type are refused so a document
/// cannot claim agent fields under `type: "human"` (§6.4: agents MUST say `type: "agent"`).
/// The delegation signature's *form* is checked here; whether the delegator's key made it
/// is for the caller, who can resolve the delegator ([`agent_delegation_payload`]).
pub fn check_type_members(
    kind: IdentityType,
    req: &Value,
    now: Timestamp,
) -> Result<TypeMembers, ProtocolError> {
    let own: &[&str] = match kind {
        IdentityType::Agent => &AGENT_MEMBERS,
        IdentityType::Team => &TEAM_MEMBERS,
        IdentityType::Service => &SERVICE_MEMBERS,
        _ => &[],
    };
    for (field, owner, section) in AGENT_MEMBERS
        .iter()
        .map(|f| (*f, "agent", "v1.1 §6.4"))
        .chain(TEAM_MEMBERS.iter().map(|f| (*f, "team", "v1.1 §6.3")))
        .chain(SERVICE_MEMBERS.iter().map(|f| (*f, "service", "v1.1 §6.3")))
    {
        if !own.contains(&field) && present(req, field).is_some() {
            return Err(invalid(
                field,
                format!(
                    "{field} belongs to {owner} identity documents; a document carrying it MUST say type \"{owner}\""
                ),
                section,
            ));
        }
    }
    match kind {
        IdentityType::Agent => check_agent(req, now).map(TypeMembers::Agent),
        IdentityType::Team => check_team(req),
        IdentityType::Service => check_service(req),
        _ => Ok(TypeMembers::Human),
    }
}

fn required<'a>(
    req: &'a Value,
    field: &str,
    rule: &str,
    section: &'static str,
) -> Result<&'a Value, ProtocolError> {
    present(req, field).ok_or_else(|| invalid(field, rule.to_owned(), section))
}

fn check_agent(req: &Value, now: Timestamp) -> Result<AgentDelegation, ProtocolError> {
    const S: &str = "v1.1 §6.4";
    let delegator = required(
        req,
        "delegator",
        "agent identities MUST have a delegator (§6.3)",
        S,
    )?
    .as_str()
    .and_then(|s| Address::parse(s).ok())
    .ok_or_else(|| invalid("delegator", "the delegator is a LOOM address (§6.1)", S))?;
    if let Some(id) = req
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse(s).ok())
        && id == delegator
    {
        return Err(invalid(
            "delegator",
            "an agent cannot be its own delegator",
            S,
        ));
    }
    let info = required(
        req,
        "agent_info",
        "agent identity documents MUST carry agent_info",
        S,
    )?;
    if !info.is_object() {
        return Err(invalid("agent_info", "agent_info is a JSON object", S));
    }
    let scope = required(
        req,
        "delegation_scope",
        "agent identities MUST have a bounded delegation scope (§6.3)",
        S,
    )?
    .as_array()
    .filter(|a| !a.is_empty())
    .ok_or_else(|| {
        invalid(
            "delegation_scope",
            "a bounded delegation scope is a non-empty array of §13.2 scopes",
            S,
        )
    })?;
    let mut scopes = Vec::with_capacity(scope.len());
    for (i, s) in scope.iter().enumerate() {
        let field = format!("delegation_scope[{i}]");
        let s = s
            .as_str()
            .ok_or_else(|| invalid(&field, "a scope is a string", "v1.1 §13.2"))?;
        check_scope_syntax(s).map_err(|e| invalid(&field, e.to_string(), "v1.1 §13.2"))?;
        scopes.push(s.to_owned());
    }
    let expires_text = required(
        req,
        "delegation_expires",
        "agent identity documents MUST carry delegation_expires (a bounded delegation ends)",
        S,
    )?
    .as_str()
    .unwrap_or_default()
    .to_owned();
    let expires = Timestamp::parse(&expires_text).map_err(|_| {
        invalid(
            "delegation_expires",
            "delegation_expires is an RFC 3339 time",
            S,
        )
    })?;
    // "Not in the past", as for a §13.3 delegation link's `expires_at`.
    if expires < now {
        return Err(invalid(
            "delegation_expires",
            "the delegation has already expired",
            S,
        ));
    }
    let signature = required(
        req,
        "delegation_signature",
        "agent identity documents MUST carry the delegator's delegation_signature",
        S,
    )?
    .as_str()
    .filter(|s| crate::keys::signature_from_b64url(s).is_ok())
    .ok_or_else(|| {
        invalid(
            "delegation_signature",
            "delegation_signature is a base64url Ed25519 signature (64 bytes)",
            S,
        )
    })?
    .to_owned();
    Ok(AgentDelegation {
        delegator,
        scope: scopes,
        expires,
        expires_text,
        signature,
    })
}

fn check_team(req: &Value) -> Result<TypeMembers, ProtocolError> {
    const S: &str = "v1.1 §6.3";
    let list = required(
        req,
        "members",
        "team identities MUST have a members list",
        S,
    )?
    .as_array()
    .ok_or_else(|| invalid("members", "members is an array of LOOM addresses", S))?;
    let mut members: Vec<Address> = Vec::with_capacity(list.len());
    for (i, m) in list.iter().enumerate() {
        let field = format!("members[{i}]");
        let a = m
            .as_str()
            .and_then(|s| Address::parse(s).ok())
            .ok_or_else(|| invalid(&field, "a member is a LOOM address (§6.1)", S))?;
        if members.contains(&a) {
            return Err(invalid(&field, format!("{a} is listed twice"), S));
        }
        members.push(a);
    }
    let routing_policy = required(
        req,
        "routing_policy",
        "team identities MUST have a routing policy",
        S,
    )?;
    let ok = match routing_policy {
        Value::String(s) => !s.trim().is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => false,
    };
    if !ok {
        return Err(invalid(
            "routing_policy",
            "routing_policy is a non-empty string or object",
            S,
        ));
    }
    Ok(TypeMembers::Team {
        members,
        routing_policy: routing_policy.clone(),
    })
}

fn check_service(req: &Value) -> Result<TypeMembers, ProtocolError> {
    const S: &str = "v1.1 §6.3";
    let operator = required(
        req,
        "operator",
        "service identities MUST have an operator field naming the accountable human or organisation",
        S,
    )?
    .as_str()
    .map(str::trim)
    .filter(|s| !s.is_empty())
    .ok_or_else(|| invalid("operator", "operator is a non-empty string", S))?;
    let operator = if operator.starts_with("loom://") {
        Address::parse(operator)
            .map_err(|e| invalid("operator", format!("operator address: {e}"), "v1.1 §6.1"))?
            .to_string()
    } else {
        operator.to_owned()
    };
    Ok(TypeMembers::Service { operator })
}

/// The bytes `delegation_signature` signs (with the §13.3.1 delegation context): the JCS of
/// `{delegator, delegate, scope, expires_at}`.
pub fn agent_delegation_payload(
    delegator: &str,
    agent: &str,
    scope: &[String],
    expires: &str,
) -> Vec<u8> {
    to_canonical_bytes(&json!({
        "delegator": delegator,
        "delegate": agent,
        "scope": scope,
        "expires_at": expires,
    }))
}

/// The delegator's `delegation_signature` for an agent identity document.
pub fn sign_agent_delegation(
    delegator_key: &SigningKey,
    delegator: &str,
    agent: &str,
    scope: &[String],
    expires: &str,
) -> String {
    sign_b64url(
        delegator_key,
        Some(SigContext::DELEGATION),
        &agent_delegation_payload(delegator, agent, scope, expires),
    )
}

/// Whether `key` made `d.signature` for agent `agent` (§6.4, our reading above).
pub fn verify_agent_delegation(
    key: &ed25519_dalek::VerifyingKey,
    agent: &Address,
    d: &AgentDelegation,
) -> bool {
    let payload = agent_delegation_payload(
        &d.delegator.to_string(),
        &agent.to_string(),
        &d.scope,
        &d.expires_text,
    );
    crate::keys::signature_from_b64url(&d.signature)
        .map(|s| crate::keys::verify(key, Some(SigContext::DELEGATION), &payload, &s))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::signing_key_from_seed;

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-01T12:00:00Z").unwrap()
    }

    fn agent_req(boss: &SigningKey) -> Value {
        let scope = vec!["read.*".to_owned(), "reply.routine".to_owned()];
        let sig = sign_agent_delegation(
            boss,
            "loom://alice@example.test",
            "loom://bot.alice@example.test",
            &scope,
            "2026-06-01T00:00:00Z",
        );
        json!({
            "id": "loom://bot.alice@example.test", "type": "agent",
            "delegator": "loom://alice@example.test",
            "agent_info": {"provider": "test"},
            "delegation_scope": scope,
            "delegation_expires": "2026-06-01T00:00:00Z",
            "delegation_signature": sig,
        })
    }

    #[test]
    fn a_complete_agent_document_passes_and_its_signature_verifies() {
        let boss = signing_key_from_seed(&[1; 32]);
        let req = agent_req(&boss);
        let TypeMembers::Agent(d) = check_type_members(IdentityType::Agent, &req, now()).unwrap()
        else {
            panic!("not an agent")
        };
        let bot = Address::parse("loom://bot.alice@example.test").unwrap();
        assert!(verify_agent_delegation(&boss.verifying_key(), &bot, &d));
        let other = signing_key_from_seed(&[2; 32]);
        assert!(!verify_agent_delegation(&other.verifying_key(), &bot, &d));
    }

    #[test]
    fn each_agent_member_is_required_and_named() {
        let boss = signing_key_from_seed(&[1; 32]);
        for field in AGENT_MEMBERS {
            let mut req = agent_req(&boss);
            req.as_object_mut().unwrap().remove(field);
            let e = check_type_members(IdentityType::Agent, &req, now()).unwrap_err();
            assert_eq!(e.field, field);
        }
    }

    #[test]
    fn unbounded_or_expired_delegations_are_refused() {
        let boss = signing_key_from_seed(&[1; 32]);
        for (field, value) in [
            ("delegation_scope", json!([])),
            ("delegation_scope", json!(["read..x"])),
            ("delegation_expires", json!("2026-01-01T00:00:00Z")),
            ("delegation_signature", json!("not-a-signature")),
            ("delegator", json!("loom://bot.alice@example.test")),
        ] {
            let mut req = agent_req(&boss);
            req[field] = value;
            let e = check_type_members(IdentityType::Agent, &req, now()).unwrap_err();
            assert!(e.field.starts_with(field), "{field}: {e}");
        }
    }

    #[test]
    fn agent_members_under_another_type_are_refused() {
        let boss = signing_key_from_seed(&[1; 32]);
        let e = check_type_members(IdentityType::Human, &agent_req(&boss), now()).unwrap_err();
        assert_eq!(e.field, "delegator");
        let e = check_type_members(IdentityType::Human, &json!({"operator": "Acme"}), now())
            .unwrap_err();
        assert_eq!(e.field, "operator");
    }

    #[test]
    fn teams_need_members_and_a_routing_policy_services_an_operator() {
        let ok = json!({"members": ["loom://A@example.test"], "routing_policy": "round_robin"});
        let TypeMembers::Team { members, .. } =
            check_type_members(IdentityType::Team, &ok, now()).unwrap()
        else {
            panic!()
        };
        assert_eq!(members[0].to_string(), "loom://a@example.test");
        for (req, field) in [
            (json!({"routing_policy": "all"}), "members"),
            (json!({"members": []}), "routing_policy"),
            (
                json!({"members": [], "routing_policy": ""}),
                "routing_policy",
            ),
            (
                json!({"members": ["x"], "routing_policy": "all"}),
                "members[0]",
            ),
        ] {
            let e = check_type_members(IdentityType::Team, &req, now()).unwrap_err();
            assert_eq!(e.field, field);
        }
        assert!(check_type_members(IdentityType::Service, &json!({}), now()).is_err());
        assert!(
            check_type_members(IdentityType::Service, &json!({"operator": "  "}), now()).is_err()
        );
        assert_eq!(
            check_type_members(
                IdentityType::Service,
                &json!({"operator": "Acme Ltd"}),
                now()
            )
            .unwrap(),
            TypeMembers::Service {
                operator: "Acme Ltd".into()
            }
        );
    }
}
