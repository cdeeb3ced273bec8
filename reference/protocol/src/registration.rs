//! Identity registration as the existing v1.1 node defines it (DESIGN.md §9) and the rules
//! of the documents it registers (v1.1 §6.1–§6.4, §8.4, §16.3): the registrant signs
//! (Ed25519, no context prefix) a text binding the identity, the key, the hash of the
//! registered document and the node's challenge nonce.
//!
//! One place for these rules: [`Registration::parse`] reads a registration request once
//! into typed parts (address, type, keys, type members, proof) in the order the node
//! reports failures; [`Registration::verify_proof`] checks the proof against the challenge
//! nonce; [`Registration::document`] builds the published §6.2 document. Clients sign with
//! [`registration_text`] and [`registration_document_hash`]. Key additions
//! ([`parse_added_key`]) and `PATCH /v1/identity/me` ([`IdentityPatch`]) live here too.
//!
//! [`RegistrationRules`] is the conformance self-test seam (as [`crate::accept::Rules`] is
//! for acceptance): each rule a self-test may break is a step whose default is the
//! specification; a real node runs [`SpecRegistration`].

use crate::address::Address;
use crate::documents::IdentityType;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{KeyId, KeyKind};
use crate::identity_profile::{
    AGENT_MEMBERS, AgentDelegation, SERVICE_MEMBERS, TEAM_MEMBERS, TypeMembers, check_type_members,
    verify_agent_delegation,
};
use crate::jcs::to_canonical_bytes;
use crate::keys::{
    b64url_decode, b64url_encode, public_key_from_any, public_key_to_b64url, signature_from_b64url,
    verify,
};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// The purpose string of registration challenges.
pub const REGISTER_PURPOSE: &str = "identity.register@v1";

/// The text a registration proof signs.
pub fn registration_text(identity: &str, key_id: &str, document_hash: &str, nonce: &str) -> String {
    format!("loom.identity.register.v1\n{identity}\n{key_id}\n{document_hash}\n{nonce}")
}

/// `document_hash`: hex SHA-256 of the RFC 8785 form of `{loom: "1.1", id, type,
/// display_name, signing_keys (sorted by key_id), encryption_keys?, agent_info?}` taken from
/// a registration request.
pub fn registration_document_hash(req: &Value) -> String {
    let mut doc = Map::new();
    doc.insert("loom".into(), "1.1".into());
    for k in ["id", "type", "display_name"] {
        doc.insert(k.into(), req.get(k).cloned().unwrap_or(Value::Null));
    }
    let mut keys: Vec<Value> = req
        .get("signing_keys")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    keys.sort_by(|a, b| a["key_id"].as_str().cmp(&b["key_id"].as_str()));
    doc.insert("signing_keys".into(), Value::Array(keys));
    for k in ["encryption_keys", "agent_info"] {
        if let Some(v) = req.get(k).filter(|v| !v.is_null()) {
            doc.insert(k.into(), v.clone());
        }
    }
    hex::encode(Sha256::digest(to_canonical_bytes(&Value::Object(doc))))
}

/// The type members a registration publishes (§6.3, §6.4) and, for an agent, the
/// delegation whose signature the node checks against the delegator's keys.
#[derive(Debug, Clone)]
pub struct RegisteredMembers {
    /// The members to publish.
    pub members: Vec<(&'static str, Value)>,
    /// An agent's delegation.
    pub agent: Option<AgentDelegation>,
}

/// The registration steps a self-test shim may replace; every default is the rule.
pub trait RegistrationRules {
    /// §6.1: the address a registration or registration challenge names, in the canonical
    /// lowercase wire form with a local part `[a-z0-9][a-z0-9._-]{0,63}`; reported against
    /// `field`.
    fn registrant(&self, field: &str, s: &str) -> Result<Address, ProtocolError> {
        Address::parse_wire(s)
            .map_err(|e| bad(field, format!("not a LOOM address: {e}"), "v1.1 §6.1"))
    }

    /// §6.1: the address a registration request's `id` registers.
    fn registered_id(&self, s: &str) -> Result<Address, ProtocolError> {
        self.registrant("id", s)
    }

    /// §6.1: the `id` the published document carries for `id` (written `as_written`): the
    /// canonical form.
    fn published_id(&self, id: &Address, _as_written: &str) -> String {
        id.to_string()
    }

    /// §6.1: the `bridge://` scheme is reserved for identities the Email Bridge creates.
    fn check_not_bridge(&self, id: &Address) -> Result<(), ProtocolError> {
        if !id.is_bridge() {
            return Ok(());
        }
        Err(bad(
            "id",
            format!(
                "{id}: the bridge:// scheme is reserved for bridged identities, which the Email Bridge creates; they are not registered"
            ),
            "v1.1 §6.1",
        ))
    }

    /// §8.4: a key id has its kind's prefix (`k_sign_` / `k_enc_`).
    fn check_key_id(&self, field: &str, key_id: &str, kind: KeyKind) -> Result<(), ProtocolError> {
        KeyId::parse(key_id, kind)
            .map(|_| ())
            .map_err(|e| bad(format!("{field}.key_id"), e.to_string(), "v1.1 §8.4"))
    }

    /// §6.3, §6.4: the members a `kind` identity must carry, checked at `now`; the members
    /// to publish and, for an agent, the delegation whose signature the node checks.
    fn type_members(
        &self,
        kind: IdentityType,
        raw: &Value,
        now: Timestamp,
    ) -> Result<RegisteredMembers, ProtocolError> {
        let m = check_type_members(kind, raw, now)?;
        let agent = match &m {
            TypeMembers::Agent(d) => Some(d.clone()),
            _ => None,
        };
        Ok(RegisteredMembers {
            members: m.document_members(raw),
            agent,
        })
    }

    /// DESIGN.md §9: the registration proof, `signature` by `key` over `text`.
    fn check_proof(
        &self,
        key: &VerifyingKey,
        text: &str,
        signature: &str,
    ) -> Result<(), ProtocolError> {
        let ok = signature_from_b64url(signature)
            .map(|s| verify(key, None, text.as_bytes(), &s))
            .unwrap_or(false);
        if ok {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            "registration_proof.signature",
            "Ed25519 signature over the registration text does not verify",
            "v1.1 §14.2",
        ))
    }
}

/// The specification.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecRegistration;

impl RegistrationRules for SpecRegistration {}

fn bad(field: impl Into<String>, rule: impl Into<String>, section: &'static str) -> ProtocolError {
    ProtocolError::invalid(field, rule, section)
}

/// A key in a registration or key-add request: SPKI PEM or base64url.
#[derive(Debug, Clone, Deserialize)]
pub struct KeyInput {
    /// `k_sign_…` / `k_enc_…`.
    pub key_id: String,
    /// SPKI PEM public key.
    #[serde(default)]
    pub public_key_pem: Option<String>,
    /// base64url raw public key.
    #[serde(default)]
    pub public_key: Option<String>,
}

/// `registration_proof`.
#[derive(Debug, Clone, Deserialize)]
pub struct RegistrationProof {
    /// The challenge answered.
    pub challenge_id: String,
    /// The key that signed (one of `signing_keys`).
    pub key_id: String,
    /// base64url Ed25519 signature over the registration text.
    pub signature: String,
}

/// `POST /v1/identity` body as DESIGN.md §9 states it (type members are read separately).
#[derive(Debug, Clone, Deserialize)]
struct RegisterRequest {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    display_name: Option<String>,
    signing_keys: Vec<KeyInput>,
    #[serde(default)]
    encryption_keys: Option<Vec<KeyInput>>,
    #[serde(default)]
    agent_info: Option<Value>,
    registration_proof: RegistrationProof,
}

/// A key as registered: its id and base64url raw public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredKey {
    /// Key id.
    pub key_id: String,
    /// base64url raw public key (Ed25519 or X25519, 32 bytes).
    pub public_key: String,
}

/// Reads one request key of `kind` (§6.2 members, §7.1 algorithms, §8.4 id prefix unless
/// `any_id`): an Ed25519 key as SPKI PEM or base64url, an X25519 key as 32 bytes of
/// base64url. Failures name `field`.
pub fn parse_key_input(
    field: &str,
    k: &KeyInput,
    kind: KeyKind,
    rules: &dyn RegistrationRules,
) -> Result<RegisteredKey, ProtocolError> {
    rules.check_key_id(field, &k.key_id, kind)?;
    let text = k
        .public_key_pem
        .as_deref()
        .or(k.public_key.as_deref())
        .ok_or_else(|| {
            bad(
                field,
                "public_key_pem (or public_key) is required",
                "v1.1 §6.2",
            )
        })?;
    let public_key = if kind == KeyKind::Encryption {
        let raw = b64url_decode(text)
            .ok()
            .filter(|b| b.len() == 32)
            .ok_or_else(|| bad(field, "an X25519 key is 32 bytes of base64url", "v1.1 §7.1"))?;
        b64url_encode(&raw)
    } else {
        let key = public_key_from_any(text).map_err(|e| {
            bad(
                field,
                format!("not an Ed25519 public key: {}", e.reason),
                "v1.1 §7.1",
            )
        })?;
        public_key_to_b64url(&key)
    };
    Ok(RegisteredKey {
        key_id: k.key_id.clone(),
        public_key,
    })
}

/// A key added to a registered identity (`POST /v1/identity/me/keys`, §16.3): signing or
/// encryption by its id prefix (§8.4); node keys belong to nodes (§15.2).
pub fn parse_added_key(k: &KeyInput) -> Result<(KeyKind, RegisteredKey), ProtocolError> {
    let kind = KeyId::parse_any(&k.key_id)
        .map_err(|e| bad("key_id", e.to_string(), "v1.1 §8.4"))?
        .kind();
    if kind == KeyKind::NodeSigning {
        return Err(bad("key_id", "node keys belong to nodes", "v1.1 §15.2"));
    }
    Ok((kind, parse_key_input("$body", k, kind, &SpecRegistration)?))
}

/// One `public_keys.signing[]` / `encryption[]` entry of an identity document (§6.2).
pub fn public_key_entry(kind: KeyKind, key_id: &str, public_key: &str, status: &str) -> Value {
    let algorithm = if kind == KeyKind::Encryption {
        "X25519"
    } else {
        "Ed25519"
    };
    json!({"algorithm": algorithm, "key_id": key_id, "public_key": public_key, "status": status})
}

/// The identity types a registration may name (§6.3): bridge and node identities are
/// created by nodes.
pub fn registrable_type(s: &str) -> Result<IdentityType, ProtocolError> {
    let t: IdentityType = serde_json::from_value(Value::from(s))
        .map_err(|_| bad("type", format!("unknown identity type {s:?}"), "v1.1 §6.3"))?;
    if matches!(t, IdentityType::Bridge | IdentityType::Node) {
        return Err(bad(
            "type",
            format!("{s} identities are created by the node, not registered"),
            "v1.1 §6.3",
        ));
    }
    Ok(t)
}

/// A registration request read once (DESIGN.md §9, v1.1 §6).
#[derive(Debug, Clone)]
pub struct Registration {
    /// The address registered.
    pub id: Address,
    /// The `id` the document publishes (the canonical address on a real node).
    pub document_id: String,
    /// Identity type.
    pub kind: IdentityType,
    /// The type as the request spelled it (what is stored and audited).
    pub kind_text: String,
    /// Display name.
    pub display_name: Option<String>,
    /// Ed25519 signing keys.
    pub signing: Vec<RegisteredKey>,
    /// X25519 encryption keys.
    pub encryption: Vec<RegisteredKey>,
    /// `agent_info` as given.
    pub agent_info: Option<Value>,
    /// The type members to publish (§6.3, §6.4).
    pub type_members: Vec<(&'static str, Value)>,
    /// An agent's delegation whose signature the node checks against the delegator's
    /// active keys when it can resolve them ([`check_agent_delegation`]).
    pub agent: Option<AgentDelegation>,
    /// The proof.
    pub proof: RegistrationProof,
    /// `document_hash` of the request (what the proof binds).
    pub document_hash: String,
}

impl Registration {
    /// Reads `raw` for a node hosting `node_domain` at `now`, refusing what the rules refuse
    /// in this order: the request shape (§16.3), the address (§6.1: canonical, not
    /// `bridge://`, hosted here), the type (§6.3), at least one signing key and each key
    /// (§6.2, §7.1, §8.4), the type members (§6.3, §6.4).
    pub fn parse(
        raw: &Value,
        node_domain: &str,
        now: Timestamp,
        rules: &dyn RegistrationRules,
    ) -> Result<Registration, ProtocolError> {
        if !raw.is_object() {
            // serde reads a struct from a JSON array too; a request body is an object.
            return Err(bad(
                "$body",
                "not a registration request: the body must be a JSON object",
                "v1.1 §16.3",
            ));
        }
        let req: RegisterRequest = serde_json::from_value(raw.clone()).map_err(|e| {
            bad(
                "$body",
                format!("not a registration request: {e}"),
                "v1.1 §16.3",
            )
        })?;
        let id = rules.registered_id(&req.id)?;
        rules.check_not_bridge(&id)?;
        let hosted = !id.is_bridge() && id.domain().eq_ignore_ascii_case(node_domain);
        if !hosted && !id.is_bridge() {
            return Err(bad(
                "id",
                format!(
                    "this node hosts {node_domain}; cannot register {id} (§24.2 has no code for another domain; ENVELOPE_INVALID is its code for a request that breaks a rule)"
                ),
                "v1.1 §6.1",
            ));
        }
        let kind = registrable_type(&req.kind)?;
        if req.signing_keys.is_empty() {
            return Err(bad(
                "signing_keys",
                "at least one signing key is required",
                "v1.1 §6.2",
            ));
        }
        let signing = req
            .signing_keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                parse_key_input(&format!("signing_keys[{i}]"), k, KeyKind::Signing, rules)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let encryption = req
            .encryption_keys
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, k)| {
                parse_key_input(
                    &format!("encryption_keys[{i}]"),
                    k,
                    KeyKind::Encryption,
                    rules,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let RegisteredMembers {
            members: type_members,
            agent,
        } = rules.type_members(kind, raw, now)?;
        let document_id = rules.published_id(&id, &req.id);
        Ok(Registration {
            id,
            document_id,
            kind,
            kind_text: req.kind,
            display_name: req.display_name,
            signing,
            encryption,
            agent_info: req.agent_info,
            type_members,
            agent,
            proof: req.registration_proof,
            document_hash: registration_document_hash(raw),
        })
    }

    /// The signing key the proof names; it must be one of `signing_keys` (§14.2).
    pub fn proof_key(&self) -> Result<VerifyingKey, ProtocolError> {
        self.signing
            .iter()
            .find(|k| k.key_id == self.proof.key_id)
            .and_then(|k| crate::keys::public_key_from_b64url(&k.public_key).ok())
            .ok_or_else(|| {
                bad(
                    "registration_proof.key_id",
                    "the proof must be signed by one of signing_keys",
                    "v1.1 §14.2",
                )
            })
    }

    /// The proof (DESIGN.md §9): the proof key's signature over [`registration_text`] with
    /// the challenge `nonce`.
    pub fn verify_proof(
        &self,
        nonce: &str,
        rules: &dyn RegistrationRules,
    ) -> Result<(), ProtocolError> {
        let key = self.proof_key()?;
        let text = registration_text(
            &self.id.to_string(),
            &self.proof.key_id,
            &self.document_hash,
            nonce,
        );
        rules.check_proof(&key, &text, &self.proof.signature)
    }

    /// The §6.2 identity document this node publishes for the registration, with every key
    /// `active`, the type members (§6.3, §6.4) and `created_at`.
    pub fn document(&self, node_domain: &str, created_at: &str) -> Value {
        let entries = |kind, keys: &[RegisteredKey]| {
            keys.iter()
                .map(|k| public_key_entry(kind, &k.key_id, &k.public_key, "active"))
                .collect::<Vec<_>>()
        };
        let mut doc = json!({
            "loom": "1.1",
            "id": self.id.to_string(),
            "type": self.kind,
            "node": node_domain,
            "created_at": created_at,
            "public_keys": {
                "signing": entries(KeyKind::Signing, &self.signing),
                "encryption": entries(KeyKind::Encryption, &self.encryption),
            },
        });
        if let Some(n) = &self.display_name {
            doc["display_name"] = n.as_str().into();
        }
        if let Some(a) = &self.agent_info {
            doc["agent_info"] = a.clone();
        }
        for (field, value) in &self.type_members {
            doc[*field] = value.clone();
        }
        doc["id"] = self.document_id.as_str().into();
        doc
    }
}

/// Whatever type members `raw` carries, as given (what a self-test shim that waives a
/// §6.3/§6.4 rule publishes).
pub fn present_type_members(raw: &Value) -> Vec<(&'static str, Value)> {
    AGENT_MEMBERS
        .iter()
        .chain(TEAM_MEMBERS.iter())
        .chain(SERVICE_MEMBERS.iter())
        .filter_map(|f| {
            raw.get(*f)
                .filter(|v| !v.is_null())
                .map(|v| (*f, v.clone()))
        })
        .collect()
}

/// §6.4 for a delegator this node hosts: it must be registered with an active signing key
/// (`keys`), and one of those keys must have made the agent's `delegation_signature`.
pub fn check_agent_delegation(
    agent: &Address,
    d: &AgentDelegation,
    keys: &[VerifyingKey],
) -> Result<(), ProtocolError> {
    if keys.is_empty() {
        return Err(bad(
            "delegator",
            format!(
                "{} is not a registered identity of this node with an active signing key",
                d.delegator
            ),
            "v1.1 §6.4",
        ));
    }
    if !keys.iter().any(|k| verify_agent_delegation(k, agent, d)) {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            "delegation_signature",
            "no active signing key of the delegator verifies delegation_signature over {delegator, delegate, scope, expires_at}",
            "v1.1 §6.4",
        ));
    }
    Ok(())
}

/// A `PATCH /v1/identity/me` body (§16.3): only `display_name` (string or null),
/// `agent_info` and `metadata` (object or null) — nothing that changes who the identity is
/// or which keys it has.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentityPatch(Map<String, Value>);

impl IdentityPatch {
    /// Checks the body.
    pub fn parse(patch: &Value) -> Result<IdentityPatch, ProtocolError> {
        let obj = patch
            .as_object()
            .ok_or_else(|| bad("$body", "expected a JSON object", "v1.1 §16.3"))?;
        for (k, v) in obj {
            match k.as_str() {
                "display_name" if v.is_string() || v.is_null() => {}
                "agent_info" | "metadata" if v.is_object() || v.is_null() => {}
                "display_name" | "agent_info" | "metadata" => {
                    return Err(bad(k.as_str(), "wrong JSON type", "v1.1 §6.2"));
                }
                _ => {
                    return Err(bad(
                        k.as_str(),
                        "only display_name, agent_info and metadata can be updated",
                        "v1.1 §16.3",
                    ));
                }
            }
        }
        Ok(IdentityPatch(obj.clone()))
    }

    /// The members it changes, in order.
    pub fn members(&self) -> Vec<&String> {
        self.0.keys().collect()
    }

    /// Applies it to a stored document: `null` removes a member.
    pub fn apply(&self, doc: &mut Value) {
        for (k, v) in &self.0 {
            if v.is_null() {
                doc.as_object_mut().map(|d| d.remove(k));
            } else {
                doc[k] = v.clone();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_hash_ignores_key_order_and_absent_optionals() {
        let a = json!({"id": "loom://a@x.test", "type": "human", "display_name": "A",
            "signing_keys": [{"key_id": "k_sign_b"}, {"key_id": "k_sign_a"}]});
        let b = json!({"display_name": "A", "type": "human", "id": "loom://a@x.test",
            "signing_keys": [{"key_id": "k_sign_a"}, {"key_id": "k_sign_b"}], "agent_info": null,
            "registration_proof": {"signature": "ignored"}});
        assert_eq!(
            registration_document_hash(&a),
            registration_document_hash(&b)
        );
        let mut c = a.clone();
        c["display_name"] = "B".into();
        assert_ne!(
            registration_document_hash(&a),
            registration_document_hash(&c)
        );
        assert!(
            registration_text("i", "k", "h", "n")
                .starts_with("loom.identity.register.v1\ni\nk\nh\nn")
        );
    }
}
