//! An identity the client acts as: its address, Ed25519 key and key id; registration with a
//! signed proof (DESIGN.md §9) and the proof-of-key login (v1.1 §14.2).

use crate::client::{Client, Reply};
use crate::dial::Dial;
use crate::error::ClientError;
use ed25519_dalek::SigningKey;
use loom_protocol::Address;
use loom_protocol::id::{KeyId, KeyKind};
use loom_protocol::keys::{public_key_to_spki_pem, sign_b64url, signing_key_from_seed};
use serde_json::{Value, json};
use std::fmt;

/// An identity with its signing key.
#[derive(Clone)]
pub struct Identity {
    address: String,
    key_id: KeyId,
    kind: String,
    display_name: String,
    key: SigningKey,
    /// Type-specific document members (v1.1 §6.3/§6.4), sent at registration.
    members: serde_json::Map<String, Value>,
    /// Publish the X25519 key ([`Identity::encryption_public`]) at registration.
    publish_encryption_key: bool,
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("address", &self.address)
            .field("key_id", &self.key_id.as_str())
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// Tokens from a successful login (v1.1 §14.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The identity logged in.
    pub identity: String,
    /// The key that proved it.
    pub key_id: String,
    /// `at_…`: the bearer token (1 h).
    pub access_token: String,
    /// `rt_…`: the refresh token (30 d).
    pub refresh_token: String,
    /// Access-token lifetime in seconds, when the node says.
    pub expires_in: Option<u64>,
}

impl Identity {
    /// The identity `address` with the Ed25519 key from `seed`; type `human`, display name
    /// the local part, key id `k_sign_<local>_1` (dots and other characters outside
    /// `[A-Za-z0-9_-]` become `_`).
    pub fn from_seed(address: &str, seed: &[u8; 32]) -> Result<Identity, ClientError> {
        let addr = Address::parse(address)
            .map_err(|e| ClientError::Input(format!("identity {address:?}: {e}")))?;
        let local = addr.local().to_owned();
        let suffix: String = local
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let key_id = KeyId::parse(&format!("k_sign_{suffix}_1"), KeyKind::Signing)
            .map_err(|e| ClientError::Input(format!("key id for {address}: {e}")))?;
        Ok(Identity {
            address: addr.to_string(),
            key_id,
            kind: "human".into(),
            display_name: local,
            key: signing_key_from_seed(seed),
            members: serde_json::Map::new(),
            publish_encryption_key: false,
        })
    }

    /// Uses `key_id` (must start `k_sign_`).
    pub fn with_key_id(mut self, key_id: &str) -> Result<Identity, ClientError> {
        self.key_id = KeyId::parse(key_id, KeyKind::Signing)
            .map_err(|e| ClientError::Input(format!("key id {key_id:?}: {e}")))?;
        Ok(self)
    }

    /// Sets the §6.3 identity type (`human`, `agent`, `team`, `service`, …).
    pub fn with_type(mut self, kind: &str) -> Identity {
        kind.clone_into(&mut self.kind);
        self
    }

    /// Adds the members the identity's type requires (v1.1 §6.3/§6.4), e.g. an agent's
    /// [`Identity::delegate_agent`] members, a team's `members` and `routing_policy`, a
    /// service's `operator`. Sent with the registration document.
    pub fn with_members(mut self, members: Value) -> Identity {
        if let Value::Object(m) = members {
            self.members.extend(m);
        }
        self
    }

    /// The §6.4 members of an agent identity document for `agent`, delegated by this
    /// identity with `scope` until `expires`: `delegator`, `agent_info`, `delegation_scope`,
    /// `delegation_expires` and this identity's `delegation_signature`
    /// ([`loom_protocol::identity_profile`]).
    pub fn delegate_agent(&self, agent: &str, scope: &[String], expires: &str) -> Value {
        let signature = loom_protocol::identity_profile::sign_agent_delegation(
            &self.key,
            &self.address,
            agent,
            scope,
            expires,
        );
        json!({
            "delegator": self.address,
            "agent_info": {"provider": "loom-client"},
            "delegation_scope": scope,
            "delegation_expires": expires,
            "delegation_signature": signature,
        })
    }

    /// Registers with the identity's X25519 key as `encryption_keys` (v1.1 §6.2, §7.1), so
    /// others can encrypt for it (E2EE threads, §7.4).
    pub fn with_encryption_key(mut self) -> Identity {
        self.publish_encryption_key = true;
        self
    }

    /// The X25519 secret of this identity: SHA-256 of `"loom-client/e2ee/x25519/v1"` and the
    /// Ed25519 seed, so one key file holds both keys while neither key is used for the other's
    /// purpose.
    pub fn encryption_secret(&self) -> zeroize::Zeroizing<[u8; 32]> {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"loom-client/e2ee/x25519/v1");
        h.update(self.key.to_bytes());
        zeroize::Zeroizing::new(h.finalize().into())
    }

    /// The X25519 public key of [`Identity::encryption_secret`].
    pub fn encryption_public(&self) -> [u8; 32] {
        loom_protocol::e2ee::crypto::public_key(&self.encryption_secret())
    }

    /// The encryption key id: the signing key id with `k_enc_` for `k_sign_`.
    pub fn encryption_key_id(&self) -> String {
        self.key_id.as_str().replacen("k_sign_", "k_enc_", 1)
    }

    /// Sets the display name.
    pub fn with_display_name(mut self, name: &str) -> Identity {
        name.clone_into(&mut self.display_name);
        self
    }

    /// `loom://local@domain`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The Ed25519 signing key (for documents other than envelopes: delegation links,
    /// capability tokens, PoP proofs, deliberately malformed signatures in tests).
    pub fn signing_key(&self) -> &SigningKey {
        &self.key
    }

    /// The signing key id, typed.
    pub fn key_id_typed(&self) -> &KeyId {
        &self.key_id
    }

    /// The signing key id.
    pub fn key_id(&self) -> &str {
        self.key_id.as_str()
    }

    /// The §6.3 type.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The display name.
    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// The public key as SPKI PEM (what registration sends).
    pub fn public_key_pem(&self) -> String {
        // Sent without a trailing newline (DESIGN.md §9): a node may trim whitespace before
        // hashing the registration document, and the trimmed form hashes the same either way.
        public_key_to_spki_pem(&self.key.verifying_key())
            .trim_end()
            .to_owned()
    }

    /// The registration document without its proof: `{id, type, display_name,
    /// signing_keys}` plus the type's members ([`Identity::with_members`]).
    pub fn registration_document(&self) -> Value {
        let mut doc = json!({
            "id": self.address,
            "type": self.kind,
            "display_name": self.display_name,
            "signing_keys": [{"key_id": self.key_id.as_str(), "public_key_pem": self.public_key_pem()}],
        });
        for (k, v) in &self.members {
            doc[k] = v.clone();
        }
        if self.publish_encryption_key {
            doc["encryption_keys"] = json!([{
                "key_id": self.encryption_key_id(),
                "public_key": loom_protocol::keys::b64url_encode(&self.encryption_public()),
            }]);
        }
        doc
    }

    /// The registration request for a challenge: the document plus `registration_proof`.
    pub fn registration_request(&self, challenge_id: &str, nonce: &str) -> Value {
        let mut req = self.registration_document();
        let hash = registration_document_hash(&req);
        let text = registration_text(&self.address, self.key_id.as_str(), &hash, nonce);
        req["registration_proof"] = json!({
            "challenge_id": challenge_id,
            "key_id": self.key_id.as_str(),
            "signature": sign_b64url(&self.key, None, text.as_bytes()),
        });
        req
    }

    /// Registers on the node: challenge, then the signed document (expects 201).
    pub async fn register<D: Dial>(&self, client: &mut Client<D>) -> Result<Reply, ClientError> {
        let ch = client
            .expect(
                "POST",
                "/v1/identity/challenge",
                Some(&json!({"identity": self.address, "key_id": self.key_id.as_str()})),
                200,
            )
            .await?;
        let req = self.registration_request(ch.str("challenge_id")?, ch.str("nonce")?);
        client.expect("POST", "/v1/identity", Some(&req), 201).await
    }

    /// Logs in: challenge, then Ed25519 over the raw nonce for tokens (v1.1 §14.2). The
    /// client's own token is not changed.
    pub async fn login<D: Dial>(&self, client: &mut Client<D>) -> Result<Session, ClientError> {
        let ch = client
            .expect(
                "POST",
                "/v1/auth/challenge",
                Some(&json!({"identity": self.address, "key_id": self.key_id.as_str()})),
                200,
            )
            .await?;
        let signature = sign_b64url(&self.key, None, ch.str("nonce")?.as_bytes());
        let t = client
            .expect(
                "POST",
                "/v1/auth/token",
                Some(&json!({
                    "identity": self.address,
                    "key_id": self.key_id.as_str(),
                    "challenge_id": ch.str("challenge_id")?,
                    "signature": signature,
                })),
                200,
            )
            .await?;
        Ok(Session {
            identity: self.address.clone(),
            key_id: self.key_id.as_str().to_owned(),
            access_token: t.str("access_token")?.to_owned(),
            refresh_token: t.str("refresh_token")?.to_owned(),
            expires_in: t.body.get("expires_in").and_then(Value::as_u64),
        })
    }

    /// Signs `envelope` in place with this identity's key (context-prefixed, v1.1 §7.3).
    pub fn sign(&self, envelope: &mut Value) -> Result<(), ClientError> {
        loom_protocol::envelope::sign_envelope(envelope, &self.key, &self.key_id)
            .map_err(|e| ClientError::Input(format!("cannot sign the envelope: {e}")))
    }

    /// The `from` object of envelopes this identity sends.
    pub fn from_object(&self) -> Value {
        json!({
            "identity": self.address,
            "display": self.display_name,
            "key_id": self.key_id.as_str(),
            "type": self.kind,
        })
    }
}

pub use loom_protocol::registration::{registration_document_hash, registration_text};

/// Reads a key file: 64 hex digits (a 32-byte Ed25519 seed), surrounding whitespace ignored.
pub fn parse_key_file(text: &str) -> Result<[u8; 32], ClientError> {
    let t = text.trim();
    let bytes = hex::decode(t).map_err(|e| {
        ClientError::Input(format!("key file: not hex ({e}); expected 64 hex digits"))
    })?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        ClientError::Input(format!(
            "key file: {} bytes; expected a 32-byte seed (64 hex digits)",
            bytes.len()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_and_addresses() {
        let i = Identity::from_seed("loom://Alice.Smith@Example.test", &[1; 32]).unwrap();
        assert_eq!(i.address(), "loom://alice.smith@example.test");
        assert_eq!(i.key_id(), "k_sign_alice_smith_1");
        assert!(Identity::from_seed("alice@example.test", &[1; 32]).is_err());
    }

    #[test]
    fn hash_sorts_keys_and_skips_proof() {
        let a = json!({"id": "loom://a@x.test", "type": "human", "display_name": "a",
            "signing_keys": [{"key_id": "k_sign_b"}, {"key_id": "k_sign_a"}]});
        let mut b = json!({"id": "loom://a@x.test", "type": "human", "display_name": "a",
            "signing_keys": [{"key_id": "k_sign_a"}, {"key_id": "k_sign_b"}],
            "registration_proof": {"x": 1}, "encryption_keys": null});
        assert_eq!(
            registration_document_hash(&a),
            registration_document_hash(&b)
        );
        b["agent_info"] = json!({"model": "m"});
        assert_ne!(
            registration_document_hash(&a),
            registration_document_hash(&b)
        );
    }

    #[test]
    fn key_files() {
        let k = parse_key_file(&format!("{}\n", "ab".repeat(32))).unwrap();
        assert_eq!(k, [0xab; 32]);
        assert!(
            parse_key_file("abcd")
                .unwrap_err()
                .to_string()
                .contains("32-byte")
        );
        assert!(
            parse_key_file("zz")
                .unwrap_err()
                .to_string()
                .contains("not hex")
        );
    }
}
