//! Identity registration, resolution and key management (v1.1 §6, §16.3; registration as the
//! existing v1.1 node does it, DESIGN.md §9).

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::Cached;
use loom_protocol::documents::IdentityType;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::{
    public_key_from_any, public_key_to_b64url, signature_from_b64url, verify,
};
use loom_protocol::{Address, ErrorCode, Timestamp};
use rusqlite::{OptionalExtension, params};
use serde::Deserialize;
use serde_json::{Value, json};

pub use loom_protocol::registration::REGISTER_PURPOSE;
/// How long a challenge stays usable.
pub const CHALLENGE_TTL_MS: i64 = 5 * 60 * 1000;

/// `POST /v1/identity/challenge` and `POST /v1/auth/challenge` body.
#[derive(Debug, Clone, Deserialize)]
pub struct ChallengeRequest {
    /// The identity address.
    pub identity: String,
    /// The key that will sign.
    pub key_id: String,
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

/// `POST /v1/identity` body.
#[derive(Debug, Clone, Deserialize)]
pub struct RegisterRequest {
    /// The address to register.
    pub id: String,
    /// Identity type (§6.3).
    #[serde(rename = "type")]
    pub kind: String,
    /// Display name.
    #[serde(default)]
    pub display_name: Option<String>,
    /// Ed25519 signing keys.
    pub signing_keys: Vec<KeyInput>,
    /// X25519 encryption keys.
    #[serde(default)]
    pub encryption_keys: Option<Vec<KeyInput>>,
    /// Agent information (§6.4).
    #[serde(default)]
    pub agent_info: Option<Value>,
    /// Proof of possession of a signing key.
    pub registration_proof: RegistrationProof,
}

pub use loom_protocol::registration::{registration_document_hash, registration_text};

fn parse_type(s: &str) -> ApiResult<IdentityType> {
    let t: IdentityType = serde_json::from_value(Value::from(s)).map_err(|_| {
        ApiError::bad_request("type", format!("unknown identity type {s:?}"), "v1.1 §6.3")
    })?;
    if matches!(t, IdentityType::Bridge | IdentityType::Node) {
        return Err(ApiError::bad_request(
            "type",
            format!("{s} identities are created by the node, not registered"),
            "v1.1 §6.3",
        ));
    }
    Ok(t)
}

/// `any_id`: the quirk that waives the key id prefix check is on.
fn parse_key(
    field: &str,
    k: &KeyInput,
    kind: KeyKind,
    any_id: bool,
) -> ApiResult<(String, String)> {
    if !any_id {
        KeyId::parse(&k.key_id, kind).map_err(|e| {
            ApiError::bad_request(format!("{field}.key_id"), e.to_string(), "v1.1 §8.4")
        })?;
    }
    let text = k
        .public_key_pem
        .as_deref()
        .or(k.public_key.as_deref())
        .ok_or_else(|| {
            ApiError::bad_request(
                field,
                "public_key_pem (or public_key) is required",
                "v1.1 §6.2",
            )
        })?;
    if kind == KeyKind::Encryption {
        let raw = loom_protocol::keys::b64url_decode(text)
            .ok()
            .filter(|b| b.len() == 32)
            .ok_or_else(|| {
                ApiError::bad_request(field, "an X25519 key is 32 bytes of base64url", "v1.1 §7.1")
            })?;
        return Ok((k.key_id.clone(), loom_protocol::keys::b64url_encode(&raw)));
    }
    let key = public_key_from_any(text).map_err(|e| {
        ApiError::bad_request(
            field,
            format!("not an Ed25519 public key: {}", e.reason),
            "v1.1 §7.1",
        )
    })?;
    Ok((k.key_id.clone(), public_key_to_b64url(&key)))
}

impl Service {
    /// Issues a challenge for `purpose` (registration or login), single use, 5 minutes.
    pub fn issue_challenge(&self, purpose: &str, req: &ChallengeRequest) -> ApiResult<Value> {
        let identity = self.parse_registrant("identity", &req.identity)?;
        KeyId::parse(&req.key_id, KeyKind::Signing)
            .map_err(|e| ApiError::bad_request("key_id", e.to_string(), "v1.1 §8.4"))?;
        let challenge_id = format!("ch_{}", self.env.ids().ulid());
        let nonce = self.env.secret("");
        let expires = Timestamp::from_unix_ms(self.env.now().unix_ms() + CHALLENGE_TTL_MS);
        self.store.conn().exec(
            "INSERT INTO challenges (challenge_id, purpose, identity, key_id, nonce, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![challenge_id, purpose, identity.to_string(), req.key_id, nonce, expires.to_rfc3339()],
        )?;
        Ok(json!({
            "challenge_id": challenge_id,
            "nonce": nonce,
            "expires_at": expires.to_rfc3339(),
            "algorithm": "Ed25519",
            "purpose": purpose,
        }))
    }

    /// Consumes a challenge: it must exist, match purpose, identity and key, be unused and
    /// unexpired. Returns its nonce. Marked used even when the caller's proof later fails,
    /// so a challenge can never be tried twice.
    pub(crate) fn take_challenge(
        &self,
        conn: &rusqlite::Connection,
        challenge_id: &str,
        purpose: &str,
        identity: &str,
        key_id: &str,
        section: &'static str,
    ) -> ApiResult<String> {
        let row: Option<(String, String, String, String, String, i64)> = conn
            .row(
                "SELECT purpose, identity, key_id, nonce, expires_at, used FROM challenges WHERE challenge_id = ?1",
                [challenge_id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )
            .optional()?;
        let bad = |reason: &str| {
            ApiError::new(ErrorCode::SignatureInvalid, "challenge_id", reason, section)
        };
        let Some((p, ident, key, nonce, expires, used)) = row else {
            return Err(bad("unknown challenge"));
        };
        if p != purpose || ident != identity || key != key_id {
            return Err(bad(
                "the challenge was issued for another identity, key or purpose",
            ));
        }
        if used != 0 && !self.quirk(crate::quirks::Quirk::AllowChallengeReuse) {
            return Err(bad("the challenge was already used"));
        }
        conn.exec(
            "UPDATE challenges SET used = 1 WHERE challenge_id = ?1",
            [challenge_id],
        )?;
        let expired = Timestamp::parse(&expires)
            .map(|t| t < self.env.now())
            .unwrap_or(true);
        if expired {
            return Err(bad("the challenge has expired"));
        }
        Ok(nonce)
    }

    /// `POST /v1/identity`: registers an identity on this node after checking the proof.
    pub fn register_identity(&self, raw: &Value) -> ApiResult<Value> {
        let req: RegisterRequest = serde_json::from_value(raw.clone()).map_err(|e| {
            ApiError::bad_request(
                "$body",
                format!("not a registration request: {e}"),
                "v1.1 §16.3",
            )
        })?;
        let id = if self.quirk(crate::quirks::Quirk::AcceptNonCanonicalAddress) {
            Address::parse(&req.id).map_err(|e| {
                ApiError::bad_request("id", format!("not a LOOM address: {e}"), "v1.1 §6.1")
            })?
        } else {
            self.parse_registrant("id", &req.id)?
        };
        if id.is_bridge() && !self.quirk(crate::quirks::Quirk::AllowBridgeRegistration) {
            return Err(ApiError::bad_request(
                "id",
                format!(
                    "{id}: the bridge:// scheme is reserved for bridged identities, which the Email Bridge creates; they are not registered"
                ),
                "v1.1 §6.1",
            ));
        }
        if !self.is_local(&id) && !id.is_bridge() {
            return Err(ApiError::bad_request(
                "id",
                format!(
                    "this node hosts {}; cannot register {id} (§24.2 has no code for another domain; ENVELOPE_INVALID is its code for a request that breaks a rule)",
                    self.config.domain
                ),
                "v1.1 §6.1",
            ));
        }
        let kind = parse_type(&req.kind)?;
        if req.signing_keys.is_empty() {
            return Err(ApiError::bad_request(
                "signing_keys",
                "at least one signing key is required",
                "v1.1 §6.2",
            ));
        }
        let mut signing = Vec::new();
        for (i, k) in req.signing_keys.iter().enumerate() {
            signing.push(parse_key(
                &format!("signing_keys[{i}]"),
                k,
                KeyKind::Signing,
                self.quirk(crate::quirks::Quirk::AcceptAnySigningKeyId),
            )?);
        }
        let mut encryption = Vec::new();
        for (i, k) in req.encryption_keys.iter().flatten().enumerate() {
            encryption.push(parse_key(
                &format!("encryption_keys[{i}]"),
                k,
                KeyKind::Encryption,
                self.quirk(crate::quirks::Quirk::AcceptAnyEncryptionKeyId),
            )?);
        }
        let type_members = self.type_members(kind, &id, raw)?;
        let proof = &req.registration_proof;
        let Some((_, proof_key)) = signing.iter().find(|(kid, _)| *kid == proof.key_id) else {
            return Err(ApiError::bad_request(
                "registration_proof.key_id",
                "the proof must be signed by one of signing_keys",
                "v1.1 §14.2",
            ));
        };
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let nonce = self.take_challenge(
            &tx,
            &proof.challenge_id,
            super::identity::REGISTER_PURPOSE,
            &id.to_string(),
            &proof.key_id,
            "v1.1 §14.2",
        )?;
        let text = registration_text(
            &id.to_string(),
            &proof.key_id,
            &registration_document_hash(raw),
            &nonce,
        );
        let key = loom_protocol::keys::public_key_from_b64url(proof_key)
            .map_err(|e| ApiError::internal(e.reason))?;
        let sig_ok = signature_from_b64url(&proof.signature)
            .map(|s| verify(&key, None, text.as_bytes(), &s))
            .unwrap_or(false);
        if !sig_ok && !self.quirk(crate::quirks::Quirk::AcceptBadRegistrationProof) {
            tx.commit()?; // the challenge stays burnt
            return Err(ApiError::new(
                ErrorCode::SignatureInvalid,
                "registration_proof.signature",
                "Ed25519 signature over the registration text does not verify",
                "v1.1 §14.2",
            ));
        }
        let exists: bool = tx
            .row(
                "SELECT 1 FROM identities WHERE id = ?1",
                [id.to_string()],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if exists && self.quirk(crate::quirks::Quirk::AllowDuplicateRegistration) {
            tx.exec(
                "DELETE FROM identity_keys WHERE identity = ?1",
                [id.to_string()],
            )?;
            tx.exec("DELETE FROM identities WHERE id = ?1", [id.to_string()])?;
        } else if exists {
            tx.commit()?;
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "id",
                format!(
                    "{id} is already registered (§24.2 has no code for a duplicate identity; ENVELOPE_DUPLICATE is its 409 for a duplicate)"
                ),
                "v1.1 §16.3",
            ));
        }
        let now = self.env.now().to_rfc3339();
        let mut doc = self.identity_document(
            &id,
            kind,
            req.display_name.as_deref(),
            &signing,
            &encryption,
            req.agent_info.as_ref(),
            &now,
        );
        for (field, value) in type_members {
            doc[field] = value;
        }
        if self.quirk(crate::quirks::Quirk::AcceptNonCanonicalAddress) {
            doc["id"] = req.id.as_str().into();
        }
        tx.exec(
            "INSERT INTO identities (id, type, display_name, document, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            params![id.to_string(), req.kind, req.display_name, doc.to_string(), now],
        )?;
        for (purpose, keys) in [("signing", &signing), ("encryption", &encryption)] {
            for (kid, pk) in keys.iter() {
                tx.exec(
                    "INSERT INTO identity_keys (identity, key_id, purpose, public_key, status, created_at) VALUES (?1, ?2, ?3, ?4, 'active', ?5)",
                    params![id.to_string(), kid, purpose, pk, now],
                )?;
            }
        }
        self.audit(
            &tx,
            &id.to_string(),
            "identity.registered",
            &id.to_string(),
            json!({"type": req.kind}),
        )?;
        tx.commit()?;
        Ok(doc)
    }

    /// The members `kind` requires of the registered document (v1.1 §6.3 table, §6.4),
    /// checked, with an agent's `delegation_signature` verified against a local delegator's
    /// active signing keys (a remote delegator cannot be resolved inside a registration, so
    /// only its form is checked). Returns the members to publish.
    fn type_members(
        &self,
        kind: IdentityType,
        id: &Address,
        raw: &Value,
    ) -> ApiResult<Vec<(&'static str, Value)>> {
        use loom_protocol::identity_profile::{
            TypeMembers, check_type_members, verify_agent_delegation,
        };
        let members = match check_type_members(kind, raw, self.env.now()) {
            Ok(m) => m,
            Err(e) if self.type_member_quirk(kind, &e.field) => {
                return Ok(present_type_members(raw));
            }
            Err(e) => return Err(e.into()),
        };
        if let TypeMembers::Agent(d) = &members
            && self.is_local(&d.delegator)
            && !self.quirk(crate::quirks::Quirk::AcceptIncompleteAgentDocument)
        {
            let keys = self.active_signing_keys(&d.delegator)?;
            if keys.is_empty() {
                return Err(ApiError::bad_request(
                    "delegator",
                    format!(
                        "{} is not a registered identity of this node with an active signing key",
                        d.delegator
                    ),
                    "v1.1 §6.4",
                ));
            }
            if !keys.iter().any(|k| verify_agent_delegation(k, id, d)) {
                return Err(ApiError::new(
                    ErrorCode::SignatureInvalid,
                    "delegation_signature",
                    "no active signing key of the delegator verifies delegation_signature over {delegator, delegate, scope, expires_at}",
                    "v1.1 §6.4",
                ));
            }
        }
        Ok(members.document_members(raw))
    }

    /// Whether a quirk waives the type-member rule that failed on `field`.
    fn type_member_quirk(&self, kind: IdentityType, field: &str) -> bool {
        use crate::quirks::Quirk;
        use loom_protocol::identity_profile::AGENT_MEMBERS;
        let q = match field {
            f if kind != IdentityType::Agent && AGENT_MEMBERS.contains(&f) => {
                Quirk::AcceptAgentMembersOnOtherTypes
            }
            "delegator" => Quirk::AcceptAgentWithoutDelegator,
            f if f.starts_with("delegation_scope") || f == "delegation_expires" => {
                Quirk::AcceptUnboundedAgentScope
            }
            "agent_info" | "delegation_signature" => Quirk::AcceptIncompleteAgentDocument,
            f if f.starts_with("members") => Quirk::AcceptTeamWithoutMembers,
            "routing_policy" => Quirk::AcceptTeamWithoutRoutingPolicy,
            "operator" => Quirk::AcceptServiceWithoutOperator,
            _ => return false,
        };
        self.quirk(q)
    }

    /// The active signing keys of a local identity.
    fn active_signing_keys(
        &self,
        identity: &Address,
    ) -> ApiResult<Vec<ed25519_dalek::VerifyingKey>> {
        let conn = self.store.conn();
        let mut stmt = conn.prepare(
            "SELECT public_key FROM identity_keys WHERE identity = ?1 AND purpose = 'signing' AND status = 'active' ORDER BY key_id",
        )?;
        let rows = stmt.query_map([identity.to_string()], |r| r.get::<_, String>(0))?;
        let mut keys = Vec::new();
        for pk in rows {
            keys.push(
                loom_protocol::keys::public_key_from_b64url(&pk?)
                    .map_err(|e| ApiError::internal(e.reason))?,
            );
        }
        Ok(keys)
    }

    #[allow(clippy::too_many_arguments)]
    fn identity_document(
        &self,
        id: &Address,
        kind: IdentityType,
        display_name: Option<&str>,
        signing: &[(String, String)],
        encryption: &[(String, String)],
        agent_info: Option<&Value>,
        created_at: &str,
    ) -> Value {
        let entry = |alg: &str, (kid, pk): &(String, String)| json!({"algorithm": alg, "key_id": kid, "public_key": pk, "status": "active"});
        let mut doc = json!({
            "loom": "1.1",
            "id": id.to_string(),
            "type": kind,
            "node": self.config.domain,
            "created_at": created_at,
            "public_keys": {
                "signing": signing.iter().map(|k| entry("Ed25519", k)).collect::<Vec<_>>(),
                "encryption": encryption.iter().map(|k| entry("X25519", k)).collect::<Vec<_>>(),
            },
        });
        if let Some(n) = display_name {
            doc["display_name"] = n.into();
        }
        if let Some(a) = agent_info {
            doc["agent_info"] = a.clone();
        }
        doc
    }

    /// The stored identity document with current key statuses, or `IDENTITY_NOT_FOUND`.
    pub fn resolve_identity(&self, addr: &Address) -> ApiResult<Value> {
        let conn = self.store.conn();
        let doc: Option<String> = conn
            .row(
                "SELECT document FROM identities WHERE id = ?1",
                [addr.to_string()],
                |r| r.get(0),
            )
            .optional()?;
        let Some(doc) = doc else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "identity",
                addr,
            ));
        };
        let mut doc: Value = serde_json::from_str(&doc).map_err(ApiError::internal)?;
        let mut stmt = conn.prepare(
            "SELECT key_id, purpose, public_key, status FROM identity_keys WHERE identity = ?1 ORDER BY created_at, key_id",
        )?;
        let mut signing = Vec::new();
        let mut encryption = Vec::new();
        let rows = stmt.query_map([addr.to_string()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
            ))
        })?;
        for row in rows {
            let (kid, purpose, pk, status) = row?;
            let alg = if purpose == "signing" {
                "Ed25519"
            } else {
                "X25519"
            };
            let e = json!({"algorithm": alg, "key_id": kid, "public_key": pk, "status": status});
            if purpose == "signing" {
                signing.push(e)
            } else {
                encryption.push(e)
            }
        }
        if self.quirk(crate::quirks::Quirk::IdentityDocumentWithoutKeys) {
            signing.clear();
        }
        doc["public_keys"] = json!({"signing": signing, "encryption": encryption});
        Ok(doc)
    }

    /// The active signing key `key_id` of `identity`, if any.
    pub fn active_signing_key(
        &self,
        identity: &Address,
        key_id: &str,
    ) -> ApiResult<Option<ed25519_dalek::VerifyingKey>> {
        let pk: Option<String> = self
            .store
            .conn()
            .row(
                "SELECT public_key FROM identity_keys WHERE identity = ?1 AND key_id = ?2 AND purpose = 'signing' AND status = 'active'",
                params![identity.to_string(), key_id],
                |r| r.get(0),
            )
            .optional()?;
        pk.map(|p| {
            loom_protocol::keys::public_key_from_b64url(&p)
                .map_err(|e| ApiError::internal(e.reason))
        })
        .transpose()
    }

    /// The registered type of `identity`, if registered here.
    pub fn identity_type(&self, identity: &Address) -> ApiResult<Option<String>> {
        Ok(self
            .store
            .conn()
            .row(
                "SELECT type FROM identities WHERE id = ?1",
                [identity.to_string()],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// `PATCH /v1/identity/me`: display name, agent info and metadata; nothing that changes
    /// who the identity is or which keys it has.
    pub fn update_identity(&self, caller: &Caller, patch: &Value) -> ApiResult<Value> {
        let Some(obj) = patch.as_object() else {
            return Err(ApiError::bad_request(
                "$body",
                "expected a JSON object",
                "v1.1 §16.3",
            ));
        };
        for (k, v) in obj {
            match k.as_str() {
                "display_name" if v.is_string() || v.is_null() => {}
                "agent_info" | "metadata" if v.is_object() || v.is_null() => {}
                "display_name" | "agent_info" | "metadata" => {
                    return Err(ApiError::bad_request(k, "wrong JSON type", "v1.1 §6.2"));
                }
                _ => {
                    return Err(ApiError::bad_request(
                        k,
                        "only display_name, agent_info and metadata can be updated",
                        "v1.1 §16.3",
                    ));
                }
            }
        }
        let id = caller.identity.to_string();
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let doc: String = tx.row(
            "SELECT document FROM identities WHERE id = ?1",
            [&id],
            |r| r.get(0),
        )?;
        let mut doc: Value = serde_json::from_str(&doc).map_err(ApiError::internal)?;
        for (k, v) in obj {
            if v.is_null() {
                doc.as_object_mut().map(|d| d.remove(k));
            } else {
                doc[k] = v.clone();
            }
        }
        let now = self.env.now().to_rfc3339();
        tx.exec(
            "UPDATE identities SET document = ?2, display_name = ?3, updated_at = ?4 WHERE id = ?1",
            params![id, doc.to_string(), doc["display_name"].as_str(), now],
        )?;
        self.audit(
            &tx,
            &id,
            "identity.updated",
            &id,
            json!({"members": obj.keys().collect::<Vec<_>>()}),
        )?;
        tx.commit()?;
        drop(conn);
        self.resolve_identity(&caller.identity)
    }

    /// `POST /v1/identity/me/keys`: adds a device key (signing or encryption by its prefix).
    pub fn add_key(&self, caller: &Caller, input: &KeyInput) -> ApiResult<Value> {
        let kind = KeyId::parse_any(&input.key_id)
            .map_err(|e| ApiError::bad_request("key_id", e.to_string(), "v1.1 §8.4"))?
            .kind();
        let (purpose, kind) = match kind {
            KeyKind::Signing => ("signing", KeyKind::Signing),
            KeyKind::Encryption => ("encryption", KeyKind::Encryption),
            KeyKind::NodeSigning => {
                return Err(ApiError::bad_request(
                    "key_id",
                    "node keys belong to nodes",
                    "v1.1 §15.2",
                ));
            }
        };
        let (kid, pk) = parse_key("$body", input, kind, false)?;
        let id = caller.identity.to_string();
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let exists = tx
            .row(
                "SELECT 1 FROM identity_keys WHERE identity = ?1 AND key_id = ?2",
                params![id, kid],
                |_| Ok(()),
            )
            .optional()?
            .is_some();
        if exists {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "key_id",
                format!("{kid} already exists"),
                "v1.1 §16.3",
            ));
        }
        tx.exec(
            "INSERT INTO identity_keys (identity, key_id, purpose, public_key, status, created_at) VALUES (?1, ?2, ?3, ?4, 'active', ?5)",
            params![id, kid, purpose, pk, self.env.now().to_rfc3339()],
        )?;
        self.audit(
            &tx,
            &id,
            "identity.key_added",
            &kid,
            json!({"purpose": purpose}),
        )?;
        tx.commit()?;
        drop(conn);
        self.resolve_identity(&caller.identity)
    }

    /// `DELETE /v1/identity/me/keys/{key_id}`: revokes a key and every token it backs; the
    /// last active signing key cannot be revoked (the identity would be locked out).
    pub fn revoke_key(&self, caller: &Caller, key_id: &str) -> ApiResult<Value> {
        let id = caller.identity.to_string();
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let row: Option<(String, String)> = tx
            .row(
                "SELECT purpose, status FROM identity_keys WHERE identity = ?1 AND key_id = ?2",
                params![id, key_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        let Some((purpose, status)) = row else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "key_id",
                format!("key {key_id}"),
            ));
        };
        if status != "active" {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "key_id",
                "the key is already revoked",
                "v1.1 §16.3",
            ));
        }
        if purpose == "signing" {
            let active: i64 = tx.row(
                "SELECT COUNT(*) FROM identity_keys WHERE identity = ?1 AND purpose = 'signing' AND status = 'active'",
                [&id],
                |r| r.get(0),
            )?;
            if active <= 1 && !self.quirk(crate::quirks::Quirk::AllowRevokingLastKey) {
                return Err(ApiError::new(
                    ErrorCode::StateTransitionInvalid,
                    "key_id",
                    "the last active signing key cannot be revoked",
                    "v1.1 §16.3",
                ));
            }
        }
        let now = self.env.now().to_rfc3339();
        if !self.quirk(crate::quirks::Quirk::IgnoreKeyRevocation) {
            tx.exec(
                "UPDATE identity_keys SET status = 'revoked', revoked_at = ?3 WHERE identity = ?1 AND key_id = ?2",
                params![id, key_id, now],
            )?;
            tx.exec(
                "UPDATE tokens SET revoked = 1 WHERE identity = ?1 AND key_id = ?2",
                params![id, key_id],
            )?;
        }
        self.audit(
            &tx,
            &id,
            "identity.key_revoked",
            key_id,
            json!({"purpose": purpose}),
        )?;
        tx.commit()?;
        drop(conn);
        self.resolve_identity(&caller.identity)
    }
}

/// Under a type-member quirk: whatever type members the request carries, published as given.
fn present_type_members(raw: &Value) -> Vec<(&'static str, Value)> {
    use loom_protocol::identity_profile::{AGENT_MEMBERS, SERVICE_MEMBERS, TEAM_MEMBERS};
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
