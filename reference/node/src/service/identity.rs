//! Identity registration, resolution and key management (v1.1 §6, §16.3; registration as the
//! existing v1.1 node does it, DESIGN.md §9).
//!
//! The rules are loom-protocol's ([`loom_protocol::registration`]): a request is read once
//! into a [`Registration`], its proof checked against the redeemed challenge
//! ([`loom_protocol::session::redeem_challenge`]); this module loads what those need and
//! stores the result ([`crate::store::identities`], [`crate::store::challenges`]).

use super::{Caller, Service};
use crate::error::{ApiError, ApiResult};
use crate::store::{challenges, identities, tokens};
use loom_protocol::federation::NodeSignatureForm;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::registration::{
    IdentityPatch, Registration, check_agent_delegation, parse_added_key, public_key_entry,
};
use loom_protocol::session::{CHALLENGE_TTL_MS as SESSION_CHALLENGE_TTL_MS, Redemption};
use loom_protocol::{Address, ErrorCode, Timestamp};
use serde::Deserialize;
use serde_json::{Value, json};

pub use loom_protocol::registration::{
    KeyInput, REGISTER_PURPOSE, RegistrationProof, registration_document_hash, registration_text,
};
/// How long a challenge stays usable.
pub const CHALLENGE_TTL_MS: i64 = SESSION_CHALLENGE_TTL_MS;

/// `POST /v1/identity/challenge` and `POST /v1/auth/challenge` body.
#[derive(Debug, Clone, Deserialize)]
pub struct ChallengeRequest {
    /// The identity address.
    pub identity: String,
    /// The key that will sign.
    pub key_id: String,
}

impl Service {
    /// Issues a challenge for `purpose` (registration or login), single use, 5 minutes.
    pub fn issue_challenge(&self, purpose: &str, req: &ChallengeRequest) -> ApiResult<Value> {
        let identity = self
            .rules
            .registration()
            .registrant("identity", &req.identity)?;
        KeyId::parse(&req.key_id, KeyKind::Signing)
            .map_err(|e| ApiError::bad_request("key_id", e.to_string(), "v1.1 §8.4"))?;
        let challenge_id = format!("ch_{}", self.env.ids().ulid());
        let nonce = self.env.secret("");
        let expires = Timestamp::from_unix_ms(self.env.now().unix_ms() + CHALLENGE_TTL_MS);
        challenges::insert(
            &self.store,
            &challenges::NewChallenge {
                id: &challenge_id,
                purpose,
                identity: &identity.to_string(),
                key_id: &req.key_id,
                nonce: &nonce,
                expires_at: expires,
            },
        )?;
        Ok(json!({
            "challenge_id": challenge_id,
            "nonce": nonce,
            "expires_at": expires.to_rfc3339(),
            "algorithm": "Ed25519",
            "purpose": purpose,
        }))
    }

    /// Redeems a challenge inside `tx` ([`loom_protocol::session::redeem_challenge`]);
    /// returns its nonce. A challenge that was taken stays used even when the caller's
    /// proof later fails, so it can never be tried twice.
    pub(crate) fn take_challenge(
        &self,
        tx: &crate::store::Tx<'_>,
        challenge_id: &str,
        purpose: &str,
        identity: &str,
        key_id: &str,
    ) -> ApiResult<String> {
        let record = challenges::get(tx, challenge_id)?;
        match loom_protocol::session::redeem_challenge(
            record.as_ref(),
            purpose,
            identity,
            key_id,
            self.env.now(),
            self.rules.session(),
        ) {
            Redemption::Refused(e) => Err(e.into()),
            Redemption::Taken(nonce) => {
                challenges::mark_used(tx, challenge_id)?;
                Ok(nonce?)
            }
        }
    }

    /// `POST /v1/identity`: registers an identity on this node after checking the proof.
    pub fn register_identity(&self, raw: &Value) -> ApiResult<Value> {
        let rules = self.rules.registration();
        let reg = Registration::parse(raw, &self.config.domain, self.env.now(), rules)?;
        if let Some(d) = &reg.agent
            && self.is_local(&d.delegator)
        {
            let keys: Vec<_> = self
                .store
                .identity_keys(&d.delegator)?
                .map(|k| k.signing.into_iter().map(|(_, key)| key).collect())
                .unwrap_or_default();
            check_agent_delegation(&reg.id, d, &keys)?;
        }
        reg.proof_key()?;
        let id = &reg.id;
        let tx = self.store.begin()?;
        let nonce = self.take_challenge(
            &tx,
            &reg.proof.challenge_id,
            REGISTER_PURPOSE,
            &id.to_string(),
            &reg.proof.key_id,
        )?;
        if let Err(e) = reg.verify_proof(&nonce, rules) {
            tx.commit()?; // the challenge stays burnt
            return Err(e.into());
        }
        if identities::exists(&tx, id)? {
            if !self.deviations.identity.allow_duplicate_registration {
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
            identities::remove(&tx, id)?;
        }
        let now = self.env.now().to_rfc3339();
        let doc = reg.document(&self.config.domain, &now);
        identities::insert(
            &tx,
            &identities::NewIdentity {
                id,
                kind: &reg.kind_text,
                display_name: reg.display_name.as_deref(),
                document: &doc,
                at: &now,
            },
        )?;
        for (kind, keys) in [
            (KeyKind::Signing, &reg.signing),
            (KeyKind::Encryption, &reg.encryption),
        ] {
            for k in keys {
                identities::insert_key(&tx, id, &k.key_id, kind, &k.public_key, &now)?;
            }
        }
        self.audit(
            &tx,
            &id.to_string(),
            "identity.registered",
            &id.to_string(),
            json!({"type": reg.kind_text}),
        )?;
        tx.commit()?;
        Ok(doc)
    }

    /// The stored identity document with current key statuses, or `IDENTITY_NOT_FOUND`.
    pub fn resolve_identity(&self, addr: &Address) -> ApiResult<Value> {
        let conn = self.store.read();
        let Some(mut doc) = identities::document(&conn, addr)? else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "identity",
                addr,
            ));
        };
        let mut signing = Vec::new();
        let mut encryption = Vec::new();
        for k in identities::keys(&conn, addr)? {
            let entry = public_key_entry(k.kind, &k.key_id, &k.public_key, &k.status);
            if k.kind == KeyKind::Encryption {
                encryption.push(entry);
            } else {
                signing.push(entry);
            }
        }
        drop(conn);
        // The existing v1.1 node's shape beside §6.2's: `signing_keys` with PEM keys, which
        // the node signature covers (DESIGN.md §9). Its registration form does not cover a
        // key's `status`, so a revoked key is left out rather than marked.
        let pem: Vec<Value> = signing
            .iter()
            .filter(|k| k["status"] != "revoked")
            .map(|k| {
                let pem = k["public_key"]
                    .as_str()
                    .and_then(|b| loom_protocol::keys::public_key_from_b64url(b).ok())
                    .map(|v| loom_protocol::keys::public_key_to_spki_pem(&v).trim_end().to_owned());
                json!({"key_id": k["key_id"], "algorithm": k["algorithm"], "public_key": k["public_key"],
                       "public_key_pem": pem, "status": k["status"]})
            })
            .collect();
        doc["public_keys"] = json!({"signing": signing, "encryption": encryption});
        doc["signing_keys"] = Value::Array(pem);
        // §15.4: remote nodes verify senders' keys through the home node's signature.
        let (key_id, key) = self.node_key();
        let form = if self.deviations.federation.full_key_node_signature {
            NodeSignatureForm::FullKeys
        } else {
            NodeSignatureForm::Registration
        };
        loom_protocol::federation::sign_identity_document_as(&mut doc, form, key_id, key)?;
        Ok(doc)
    }

    /// The active signing key `key_id` of `identity`, if any (through the authentication
    /// cache).
    pub fn active_signing_key(
        &self,
        identity: &Address,
        key_id: &str,
    ) -> ApiResult<Option<ed25519_dalek::VerifyingKey>> {
        Ok(self
            .store
            .identity_keys(identity)?
            .and_then(|k| k.key(key_id)))
    }

    /// The registered type of `identity`, if registered here (through the authentication
    /// cache).
    pub fn identity_type(&self, identity: &Address) -> ApiResult<Option<String>> {
        Ok(self.store.identity_keys(identity)?.map(|k| k.kind))
    }

    /// `PATCH /v1/identity/me`: display name, agent info and metadata ([`IdentityPatch`]).
    pub fn update_identity(&self, caller: &Caller, patch: &Value) -> ApiResult<Value> {
        let patch = IdentityPatch::parse(patch)?;
        let id = &caller.identity;
        let tx = self.store.begin()?;
        let mut doc = identities::document(&tx, id)?
            .ok_or_else(|| ApiError::internal("the caller's identity is not stored"))?;
        patch.apply(&mut doc);
        identities::update_document(&tx, id, &doc, &self.env.now().to_rfc3339())?;
        self.audit(
            &tx,
            &id.to_string(),
            "identity.updated",
            &id.to_string(),
            json!({"members": patch.members()}),
        )?;
        tx.commit()?;
        self.resolve_identity(id)
    }

    /// `POST /v1/identity/me/keys`: adds a device key (signing or encryption by its prefix).
    pub fn add_key(&self, caller: &Caller, input: &KeyInput) -> ApiResult<Value> {
        let (kind, key) = parse_added_key(input)?;
        let id = &caller.identity;
        let tx = self.store.begin()?;
        if identities::key(&tx, id, &key.key_id)?.is_some() {
            return Err(ApiError::new(
                ErrorCode::EnvelopeDuplicate,
                "key_id",
                format!("{} already exists", key.key_id),
                "v1.1 §16.3",
            ));
        }
        identities::insert_key(
            &tx,
            id,
            &key.key_id,
            kind,
            &key.public_key,
            &self.env.now().to_rfc3339(),
        )?;
        let purpose = if kind == KeyKind::Encryption {
            "encryption"
        } else {
            "signing"
        };
        self.audit(
            &tx,
            &id.to_string(),
            "identity.key_added",
            &key.key_id,
            json!({"purpose": purpose}),
        )?;
        tx.commit()?;
        self.resolve_identity(id)
    }

    /// `DELETE /v1/identity/me/keys/{key_id}`: revokes a key and every token it backs; the
    /// last active signing key cannot be revoked (the identity would be locked out).
    pub fn revoke_key(&self, caller: &Caller, key_id: &str) -> ApiResult<Value> {
        let id = &caller.identity;
        let dev = &self.deviations.identity;
        let tx = self.store.begin()?;
        let Some(key) = identities::key(&tx, id, key_id)? else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "key_id",
                format!("key {key_id}"),
            ));
        };
        if !key.is_active() {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "key_id",
                "the key is already revoked",
                "v1.1 §16.3",
            ));
        }
        if key.kind == KeyKind::Signing
            && identities::active_signing_count(&tx, id)? <= 1
            && !dev.allow_revoking_last_key
        {
            return Err(ApiError::new(
                ErrorCode::StateTransitionInvalid,
                "key_id",
                "the last active signing key cannot be revoked",
                "v1.1 §16.3",
            ));
        }
        if !dev.ignore_key_revocation {
            identities::revoke_key(&tx, id, key_id, &self.env.now().to_rfc3339())?;
            tokens::revoke_for_key(&tx, &id.to_string(), key_id)?;
        }
        let purpose = if key.kind == KeyKind::Encryption {
            "encryption"
        } else {
            "signing"
        };
        self.audit(
            &tx,
            &id.to_string(),
            "identity.key_revoked",
            key_id,
            json!({"purpose": purpose}),
        )?;
        tx.commit()?;
        self.resolve_identity(id)
    }
}
