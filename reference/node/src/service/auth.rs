//! Proof-of-key authentication (v1.1 §14.2; token shapes as the existing v1.1 node issues
//! them, DESIGN.md §9): challenge → Ed25519 signature over the raw nonce → `at_…` access
//! token (1 h) and `rt_…` refresh token (30 d). Only SHA-256 hashes of tokens are stored.
//!
//! The rules are [`loom_protocol::session`]'s; the token lookup of every authenticated
//! request goes through the store's cache ([`crate::store::Store::token`]).

use super::identity::ChallengeRequest;
use super::{Caller, Service, parse_address};
use crate::error::{ApiError, ApiResult};
use crate::store::{Tx, tokens};
use loom_protocol::session::{
    RefreshDecision, TokenKind, TokenRefusal, check_token, decide_refresh,
};
use loom_protocol::{ErrorCode, Timestamp};
use serde::Deserialize;
use serde_json::{Value, json};

pub use loom_protocol::session::{ACCESS_TTL_MS, AUTH_PURPOSE, REFRESH_TTL_MS};

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

impl Service {
    /// `POST /v1/auth/challenge`: only for a registered identity and one of its active keys.
    pub fn auth_challenge(&self, req: &ChallengeRequest) -> ApiResult<Value> {
        let identity = parse_address("identity", &req.identity)?;
        let Some(keys) = self.store.identity_keys(&identity)? else {
            return Err(ApiError::not_found(
                ErrorCode::IdentityNotFound,
                "identity",
                &identity,
            ));
        };
        if keys.key(&req.key_id).is_none() {
            return Err(ApiError::new(
                ErrorCode::SignatureInvalid,
                "key_id",
                format!("{} is not an active signing key of {identity}", req.key_id),
                "v1.1 §14.2",
            ));
        }
        let challenge = self.issue_challenge(AUTH_PURPOSE, req)?;
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
        let tx = self.store.begin()?;
        let nonce = self.take_challenge(
            &tx,
            challenge_id,
            AUTH_PURPOSE,
            &identity.to_string(),
            &req.key_id,
        )?;
        if let Err(e) = self
            .rules
            .session()
            .check_login_signature(&key, &nonce, &req.signature)
        {
            self.audit(
                &tx,
                &identity.to_string(),
                "security.login_failed",
                &req.key_id,
                json!({}),
            )?;
            tx.commit()?;
            return Err(e.into());
        }
        let tokens = self.mint_tokens(&tx, &identity.to_string(), &req.key_id, None)?;
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

    /// Issues an access and a refresh token in `family` (a refresh) or in a new family named
    /// after the new refresh token (a login).
    fn mint_tokens(
        &self,
        tx: &Tx<'_>,
        identity: &str,
        key_id: &str,
        family: Option<&str>,
    ) -> ApiResult<Value> {
        let now = self.env.now().unix_ms();
        let access = self.env.secret(TokenKind::Access.prefix());
        let refresh = self.env.secret(TokenKind::Refresh.prefix());
        let family = family.map_or_else(|| tokens::new_family(&refresh), str::to_owned);
        for (token, kind) in [(&access, TokenKind::Access), (&refresh, TokenKind::Refresh)] {
            tokens::insert(
                tx,
                &tokens::NewToken {
                    token,
                    kind,
                    identity,
                    key_id,
                    expires_at: Timestamp::from_unix_ms(now + kind.ttl_ms()),
                    family: &family,
                },
            )?;
        }
        let pair = json!({
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": ACCESS_TTL_MS / 1000,
            "refresh_expires_in": REFRESH_TTL_MS / 1000,
            "identity": identity,
            "key_id": key_id,
        });
        Ok(pair)
    }

    /// `POST /v1/auth/refresh` (§14.2 rotation; [`decide_refresh`]): a valid refresh token
    /// buys a new pair, and the presented refresh token and every live access token of the
    /// same login are revoked at once (no grace). A refresh token presented after it was
    /// revoked is a stolen copy or a replay (OAuth 2.0 Security BCP §4.14): every token of
    /// the login is revoked and the request refused.
    pub fn auth_refresh(&self, req: &RefreshRequest) -> ApiResult<Value> {
        let tx = self.store.begin()?;
        // Inside the transaction the database is read, not the cache (store::cache).
        let record = tokens::get(&tx, &req.refresh_token)?;
        let family = tokens::family_of(&tx, &req.refresh_token)?;
        match decide_refresh(record.as_ref(), self.env.now(), self.rules.session()) {
            RefreshDecision::Refuse(r) => Err(ApiError::unauthenticated(r.to_string())),
            RefreshDecision::Reuse(r) => {
                let Some(record) = record else {
                    return Err(ApiError::internal("a revoked token has a record"));
                };
                let revoked = match &family {
                    Some(f) => tokens::revoke_family(&tx, f, None)?,
                    None => 0,
                };
                self.audit(
                    &tx,
                    &record.identity,
                    "security.refresh_token_reuse",
                    &record.key_id,
                    json!({"revoked_tokens": revoked}),
                )?;
                tx.commit()?;
                Err(ApiError::unauthenticated(format!(
                    "{r}: a revoked refresh token was presented again, so every token of \
                     its login is revoked (OAuth 2.0 Security BCP §4.14); log in again"
                )))
            }
            RefreshDecision::Rotate => {
                let Some(record) = record else {
                    return Err(ApiError::internal("a checked token has a record"));
                };
                tokens::revoke(&tx, &req.refresh_token)?;
                let family = match family {
                    Some(f) => {
                        tokens::revoke_family(&tx, &f, Some(TokenKind::Access))?;
                        f
                    }
                    // A token from before families: start one with it.
                    None => tokens::token_hash(&req.refresh_token),
                };
                let pair =
                    self.mint_tokens(&tx, &record.identity, &record.key_id, Some(&family))?;
                tx.commit()?;
                Ok(pair)
            }
        }
    }

    /// Resolves a bearer access token to its caller (§14.2), through the store's token
    /// cache: a revoked or rotated token is refused on the next request.
    pub fn authenticate(&self, bearer: &str) -> ApiResult<Caller> {
        let record = self.store.token(bearer)?;
        if let Err(r) = check_token(
            record.as_ref(),
            TokenKind::Access,
            self.env.now(),
            self.rules.session(),
        ) {
            let e = ApiError::unauthenticated(r.to_string());
            // An expired token is routine (clients refresh); an unknown, revoked or
            // misused one is not.
            if !matches!(r, TokenRefusal::Expired(_)) {
                let who = record.as_ref().map_or("anonymous", |t| t.identity.as_str());
                self.security_event("token", who, "Authorization", &e);
            }
            return Err(e);
        }
        let Some(record) = record else {
            return Err(ApiError::internal("a checked token has a record"));
        };
        let identity =
            loom_protocol::Address::parse_wire(&record.identity).map_err(ApiError::internal)?;
        Ok(Caller {
            identity,
            key_id: record.key_id,
        })
    }
}
