//! Proof-of-key authentication (v1.1 §14.2; token shapes as the existing v1.1 node issues
//! them, DESIGN.md §9): challenge → Ed25519 signature over the raw nonce → `at_…` access
//! token (1 h) and `rt_…` refresh token (30 d). Only SHA-256 hashes of tokens are stored.

use super::identity::ChallengeRequest;
use super::{Caller, Service, parse_address};
use crate::error::{ApiError, ApiResult};
use crate::quirks::Quirk;
use crate::store::Cached;
use loom_protocol::keys::{signature_from_b64url, verify};
use loom_protocol::{ErrorCode, Timestamp};
use rusqlite::{OptionalExtension, params};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Access token lifetime (§14.2).
pub const ACCESS_TTL_MS: i64 = 60 * 60 * 1000;
/// Refresh token lifetime (§14.2).
pub const REFRESH_TTL_MS: i64 = 30 * 24 * 60 * 60 * 1000;
/// The purpose recorded on login challenges.
pub const AUTH_PURPOSE: &str = "auth";

/// `POST /v1/auth/token` body; `challenge_id` and `challenge` are both accepted (§9).
#[derive(Debug, Clone, Deserialize)]
pub struct TokenRequest {
    /// The identity logging in.
    pub identity: String,
    /// The key that signed.
    pub key_id: String,
    /// The challenge id.
    #[serde(default)]
    pub challenge_id: Option<String>,
    /// The challenge id under its other name.
    #[serde(default)]
    pub challenge: Option<String>,
    /// base64url Ed25519 signature over the nonce.
    pub signature: String,
}

/// `POST /v1/auth/refresh` body.
#[derive(Debug, Clone, Deserialize)]
pub struct RefreshRequest {
    /// The refresh token.
    pub refresh_token: String,
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

impl Service {
    /// `POST /v1/auth/challenge`: only for a registered identity and one of its active keys.
    pub fn auth_challenge(&self, req: &ChallengeRequest) -> ApiResult<Value> {
        let identity = parse_address("identity", &req.identity)?;
        if self.identity_type(&identity)?.is_none() {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "identity",
                &identity,
            ));
        }
        if self.active_signing_key(&identity, &req.key_id)?.is_none() {
            return Err(ApiError::new(
                ErrorCode::SignatureInvalid,
                "key_id",
                format!("{} is not an active signing key of {identity}", req.key_id),
                "v1.1 §14.2",
            ));
        }
        let mut challenge = self.issue_challenge(AUTH_PURPOSE, req)?;
        if self.quirk(Quirk::ChallengeWithoutExpiry)
            && let Some(o) = challenge.as_object_mut()
        {
            o.remove("expires_at");
        }
        Ok(challenge)
    }

    /// `POST /v1/auth/token`: verifies the signature over the challenge nonce.
    pub fn auth_token(&self, req: &TokenRequest) -> ApiResult<Value> {
        let identity = parse_address("identity", &req.identity)?;
        let challenge_id = req
            .challenge_id
            .as_deref()
            .or(req.challenge.as_deref())
            .ok_or_else(|| {
                ApiError::bad_request(
                    "challenge_id",
                    "challenge_id (or challenge) is required",
                    "v1.1 §14.2",
                )
            })?;
        let key = self
            .active_signing_key(&identity, &req.key_id)?
            .ok_or_else(|| {
                ApiError::new(
                    ErrorCode::SignatureInvalid,
                    "key_id",
                    "not an active signing key of this identity",
                    "v1.1 §14.2",
                )
            })?;
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let nonce = self.take_challenge(
            &tx,
            challenge_id,
            AUTH_PURPOSE,
            &identity.to_string(),
            &req.key_id,
            "v1.1 §14.2",
        )?;
        let ok = signature_from_b64url(&req.signature)
            .map(|s| verify(&key, None, nonce.as_bytes(), &s))
            .unwrap_or(false);
        if !ok && !self.quirk(Quirk::AcceptBadLoginSignature) {
            self.audit(
                &tx,
                &identity.to_string(),
                "security.login_failed",
                &req.key_id,
                json!({}),
            )?;
            tx.commit()?;
            return Err(ApiError::new(
                ErrorCode::SignatureInvalid,
                "signature",
                "Ed25519 signature over the challenge nonce does not verify",
                "v1.1 §14.2",
            ));
        }
        let tokens = self.mint_tokens(&tx, &identity.to_string(), &req.key_id)?;
        self.audit(
            &tx,
            &identity.to_string(),
            "security.login",
            &req.key_id,
            json!({}),
        )?;
        tx.commit()?;
        Ok(tokens)
    }

    fn mint_tokens(
        &self,
        conn: &rusqlite::Connection,
        identity: &str,
        key_id: &str,
    ) -> ApiResult<Value> {
        let now = self.env.now().unix_ms();
        let access = self.env.secret("at_");
        let refresh = self.env.secret("rt_");
        for (token, kind, ttl) in [
            (&access, "access", ACCESS_TTL_MS),
            (&refresh, "refresh", REFRESH_TTL_MS),
        ] {
            conn.exec(
                "INSERT INTO tokens (token_hash, kind, identity, key_id, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![token_hash(token), kind, identity, key_id, Timestamp::from_unix_ms(now + ttl).to_rfc3339()],
            )?;
        }
        let mut tokens = json!({
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": ACCESS_TTL_MS / 1000,
            "refresh_expires_in": REFRESH_TTL_MS / 1000,
            "identity": identity,
            "key_id": key_id,
        });
        if self.quirk(Quirk::OmitRefreshToken)
            && let Some(o) = tokens.as_object_mut()
        {
            o.remove("refresh_token");
            o.remove("refresh_expires_in");
        }
        Ok(tokens)
    }

    /// `POST /v1/auth/refresh`: a valid refresh token buys a new pair; the old refresh token
    /// is revoked (rotation), so a stolen one works at most once.
    pub fn auth_refresh(&self, req: &RefreshRequest) -> ApiResult<Value> {
        let conn = self.store.conn();
        let tx = conn.unchecked_transaction()?;
        let (identity, key_id) = self.check_token(&tx, &req.refresh_token, "refresh")?;
        tx.exec(
            "UPDATE tokens SET revoked = 1 WHERE token_hash = ?1",
            [token_hash(&req.refresh_token)],
        )?;
        let tokens = self.mint_tokens(&tx, &identity, &key_id)?;
        tx.commit()?;
        Ok(tokens)
    }

    fn check_token(
        &self,
        conn: &rusqlite::Connection,
        token: &str,
        kind: &str,
    ) -> ApiResult<(String, String)> {
        let row: Option<(String, String, String, String, i64)> = conn
            .row(
                "SELECT kind, identity, key_id, expires_at, revoked FROM tokens WHERE token_hash = ?1",
                [token_hash(token)],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()?;
        let Some((k, identity, key_id, expires, revoked)) = row else {
            return Err(ApiError::unauthenticated(format!("unknown {kind} token")));
        };
        if k != kind && !self.quirk(Quirk::TokenKindUnchecked) {
            return Err(ApiError::unauthenticated(format!(
                "this is not an {kind} token"
            )));
        }
        if revoked != 0 {
            return Err(ApiError::unauthenticated(format!(
                "the {kind} token was revoked"
            )));
        }
        let expired = Timestamp::parse(&expires)
            .map(|t| t < self.env.now())
            .unwrap_or(true);
        if expired && !self.quirk(Quirk::AcceptExpiredToken) {
            return Err(ApiError::unauthenticated(format!(
                "the {kind} token has expired"
            )));
        }
        Ok((identity, key_id))
    }

    /// Resolves a bearer access token to its caller.
    pub fn authenticate(&self, bearer: &str) -> ApiResult<Caller> {
        let conn = self.store.conn();
        let (identity, key_id) = self.check_token(&conn, bearer, "access")?;
        let identity = loom_protocol::Address::parse_wire(&identity).map_err(ApiError::internal)?;
        Ok(Caller { identity, key_id })
    }
}
