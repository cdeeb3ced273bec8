//! Proof-of-key sessions (v1.1 §14.2; challenge and token shapes as the existing v1.1 node
//! issues them, DESIGN.md §9): a single-use challenge with a nonce and an expiry, an Ed25519
//! signature over the raw nonce, then an `at_…` access token (1 h) and an `rt_…` refresh
//! token (30 d).
//!
//! One place for the rules a node applies to them — which challenge may be redeemed, which
//! presented token is valid — as pure functions over the stored records. The node keeps the
//! records (only hashes of tokens) and does the IO.
//!
//! [`SessionRules`] is the conformance self-test seam (as [`crate::accept::Rules`] is for
//! acceptance): each rule a self-test may break is a step whose default is the
//! specification; a real node runs [`SpecSession`].

use crate::error::{ErrorCode, ProtocolError};
use crate::keys::{signature_from_b64url, verify};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use std::fmt;

/// Access token lifetime (§14.2; 1 h as DESIGN.md §9 records).
pub const ACCESS_TTL_MS: i64 = 60 * 60 * 1000;
/// Refresh token lifetime (§14.2; 30 d as DESIGN.md §9 records).
pub const REFRESH_TTL_MS: i64 = 30 * 24 * 60 * 60 * 1000;
/// How long a challenge stays usable.
pub const CHALLENGE_TTL_MS: i64 = 5 * 60 * 1000;
/// The purpose recorded on login challenges (registration uses
/// [`crate::registration::REGISTER_PURPOSE`]).
pub const AUTH_PURPOSE: &str = "auth";
/// The section every session rule comes from.
const S: &str = "v1.1 §14.2";

/// The §14.2 steps a self-test shim may replace; every default is the rule.
pub trait SessionRules {
    /// A challenge is single use (DESIGN.md §9).
    fn check_unused(&self, c: &ChallengeRecord) -> Result<(), ProtocolError> {
        if c.used {
            return Err(challenge_error("the challenge was already used"));
        }
        Ok(())
    }

    /// Proof of key for a login: the Ed25519 signature (base64url, no context prefix)
    /// over the raw nonce.
    fn check_login_signature(
        &self,
        key: &VerifyingKey,
        nonce: &str,
        signature: &str,
    ) -> Result<(), ProtocolError> {
        let ok = signature_from_b64url(signature)
            .map(|s| verify(key, None, nonce.as_bytes(), &s))
            .unwrap_or(false);
        if ok {
            return Ok(());
        }
        Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            "signature",
            "Ed25519 signature over the challenge nonce does not verify",
            S,
        ))
    }

    /// A presented token is of the kind the request needs (`at_` for API calls, `rt_` to
    /// refresh).
    fn check_token_kind(&self, t: &TokenRecord, expected: TokenKind) -> Result<(), TokenRefusal> {
        if t.kind == Some(expected) {
            return Ok(());
        }
        Err(TokenRefusal::WrongKind(expected))
    }

    /// A presented token is within its lifetime at `now`.
    fn check_token_expiry(
        &self,
        t: &TokenRecord,
        expected: TokenKind,
        now: Timestamp,
    ) -> Result<(), TokenRefusal> {
        if t.expires_at.is_none_or(|e| e < now) {
            return Err(TokenRefusal::Expired(expected));
        }
        Ok(())
    }
}

/// The specification.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecSession;

impl SessionRules for SpecSession {}

/// A stored challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChallengeRecord {
    /// `auth` or `identity.register@v1`.
    pub purpose: String,
    /// The identity it was issued for (wire form).
    pub identity: String,
    /// The key that is to sign.
    pub key_id: String,
    /// The nonce to sign.
    pub nonce: String,
    /// Expiry as stored (RFC 3339); unparsable means expired.
    pub expires_at: String,
    /// Whether it was redeemed before.
    pub used: bool,
}

/// What redeeming a challenge does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redemption {
    /// Refused before it was taken: the record stays as it is.
    Refused(ProtocolError),
    /// Taken: the node marks it used whatever follows (a challenge can never be tried
    /// twice), then the nonce to verify against — or why the challenge no longer counts.
    Taken(Result<String, ProtocolError>),
}

fn challenge_error(reason: &str) -> ProtocolError {
    ProtocolError::new(ErrorCode::SignatureInvalid, "challenge_id", reason, S)
}

/// Redeems `record` (the stored challenge named by the request, if any) for `purpose`,
/// `identity` and `key_id` at `now`: it must exist, match all three, be unused and
/// unexpired (§14.2 "nonce + expiry"; single use per DESIGN.md §9).
pub fn redeem_challenge(
    record: Option<&ChallengeRecord>,
    purpose: &str,
    identity: &str,
    key_id: &str,
    now: Timestamp,
    rules: &dyn SessionRules,
) -> Redemption {
    let Some(c) = record else {
        return Redemption::Refused(challenge_error("unknown challenge"));
    };
    if c.purpose != purpose || c.identity != identity || c.key_id != key_id {
        return Redemption::Refused(challenge_error(
            "the challenge was issued for another identity, key or purpose",
        ));
    }
    if let Err(e) = rules.check_unused(c) {
        return Redemption::Refused(e);
    }
    let expired = Timestamp::parse(&c.expires_at)
        .map(|t| t < now)
        .unwrap_or(true);
    Redemption::Taken(if expired {
        Err(challenge_error("the challenge has expired"))
    } else {
        Ok(c.nonce.clone())
    })
}

/// The two kinds of bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TokenKind {
    /// `at_…`: authorizes API calls.
    Access,
    /// `rt_…`: buys a new pair.
    Refresh,
}

impl TokenKind {
    /// As stored and named in errors.
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenKind::Access => "access",
            TokenKind::Refresh => "refresh",
        }
    }

    /// The kind spelled `s`.
    pub fn parse(s: &str) -> Option<TokenKind> {
        [TokenKind::Access, TokenKind::Refresh]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    /// The token's prefix (`at_` / `rt_`).
    pub const fn prefix(self) -> &'static str {
        match self {
            TokenKind::Access => "at_",
            TokenKind::Refresh => "rt_",
        }
    }

    /// Its lifetime in milliseconds.
    pub const fn ttl_ms(self) -> i64 {
        match self {
            TokenKind::Access => ACCESS_TTL_MS,
            TokenKind::Refresh => REFRESH_TTL_MS,
        }
    }
}

/// A stored token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Its kind; `None` when the stored spelling is neither (never valid).
    pub kind: Option<TokenKind>,
    /// The identity it was issued to (wire form).
    pub identity: String,
    /// The key that proved possession.
    pub key_id: String,
    /// Expiry; `None` when unparsable (counts as expired).
    pub expires_at: Option<Timestamp>,
    /// Revoked (refresh rotation, key revocation).
    pub revoked: bool,
}

/// Why a presented token is refused; every refusal is a 401 (§14.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenRefusal {
    /// No such token.
    Unknown(TokenKind),
    /// A token of the other kind.
    WrongKind(TokenKind),
    /// Revoked.
    Revoked(TokenKind),
    /// Past its expiry.
    Expired(TokenKind),
}

impl fmt::Display for TokenRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenRefusal::Unknown(k) => write!(f, "unknown {} token", k.as_str()),
            TokenRefusal::WrongKind(TokenKind::Access) => {
                f.write_str("this is not an access token")
            }
            TokenRefusal::WrongKind(TokenKind::Refresh) => {
                f.write_str("this is not a refresh token")
            }
            TokenRefusal::Revoked(k) => write!(f, "the {} token was revoked", k.as_str()),
            TokenRefusal::Expired(k) => write!(f, "the {} token has expired", k.as_str()),
        }
    }
}

/// Whether `record` (the stored token the presented one hashes to, if any) is a valid
/// token of `expected` kind at `now` (§14.2): known, of that kind, not revoked, not expired.
pub fn check_token(
    record: Option<&TokenRecord>,
    expected: TokenKind,
    now: Timestamp,
    rules: &dyn SessionRules,
) -> Result<(), TokenRefusal> {
    let Some(t) = record else {
        return Err(TokenRefusal::Unknown(expected));
    };
    rules.check_token_kind(t, expected)?;
    if t.revoked {
        return Err(TokenRefusal::Revoked(expected));
    }
    rules.check_token_expiry(t, expected, now)
}

/// What `POST /v1/auth/refresh` does with a presented refresh token (§14.2 rotation, with
/// the refresh-token reuse detection of the OAuth 2.0 Security BCP, RFC 9700 §4.14.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshDecision {
    /// A valid refresh token: revoke it and every access token of its login (the token
    /// family), then issue a new pair in the same family.
    Rotate,
    /// A refresh token that was already revoked (rotated away, or its key revoked) is
    /// presented again: someone holds a copy, so every token of the family is revoked and the
    /// request refused.
    Reuse(TokenRefusal),
    /// Anything else is refused and changes nothing.
    Refuse(TokenRefusal),
}

/// Decides a refresh request on `record`, the stored token the presented one hashes to.
pub fn decide_refresh(
    record: Option<&TokenRecord>,
    now: Timestamp,
    rules: &dyn SessionRules,
) -> RefreshDecision {
    match check_token(record, TokenKind::Refresh, now, rules) {
        Ok(()) => RefreshDecision::Rotate,
        Err(r @ TokenRefusal::Revoked(_)) => RefreshDecision::Reuse(r),
        Err(r) => RefreshDecision::Refuse(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{sign_b64url, signing_key_from_seed};

    fn at(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn challenge() -> ChallengeRecord {
        ChallengeRecord {
            purpose: AUTH_PURPOSE.into(),
            identity: "loom://a@x.test".into(),
            key_id: "k_sign_a".into(),
            nonce: "n0nce".into(),
            expires_at: "2026-01-01T00:05:00Z".into(),
            used: false,
        }
    }

    fn redeem(c: Option<&ChallengeRecord>, now: &str, rules: &dyn SessionRules) -> Redemption {
        redeem_challenge(
            c,
            AUTH_PURPOSE,
            "loom://a@x.test",
            "k_sign_a",
            at(now),
            rules,
        )
    }

    /// A shim breaking the rules below one step at a time (`used`, `signature`, `kind`,
    /// `expiry`), to show each step is the only place its rule is applied.
    #[derive(Default)]
    struct Lax {
        reuse: bool,
        signature: bool,
        kind: bool,
        expiry: bool,
    }

    impl SessionRules for Lax {
        fn check_unused(&self, c: &ChallengeRecord) -> Result<(), ProtocolError> {
            if self.reuse {
                return Ok(());
            }
            SpecSession.check_unused(c)
        }
        fn check_login_signature(
            &self,
            key: &VerifyingKey,
            nonce: &str,
            signature: &str,
        ) -> Result<(), ProtocolError> {
            if self.signature {
                return Ok(());
            }
            SpecSession.check_login_signature(key, nonce, signature)
        }
        fn check_token_kind(&self, t: &TokenRecord, k: TokenKind) -> Result<(), TokenRefusal> {
            if self.kind {
                return Ok(());
            }
            SpecSession.check_token_kind(t, k)
        }
        fn check_token_expiry(
            &self,
            t: &TokenRecord,
            k: TokenKind,
            now: Timestamp,
        ) -> Result<(), TokenRefusal> {
            if self.expiry {
                return Ok(());
            }
            SpecSession.check_token_expiry(t, k, now)
        }
    }

    #[test]
    fn a_challenge_is_taken_once_and_only_while_fresh() {
        let none = SpecSession;
        let c = challenge();
        assert_eq!(
            redeem(Some(&c), "2026-01-01T00:01:00Z", &none),
            Redemption::Taken(Ok("n0nce".into()))
        );
        // Expired: still taken (burnt), but refused.
        assert!(matches!(
            redeem(Some(&c), "2026-01-01T00:05:01Z", &none),
            Redemption::Taken(Err(e)) if e.rule.contains("expired")
        ));
        let used = ChallengeRecord {
            used: true,
            ..challenge()
        };
        assert!(matches!(
            redeem(Some(&used), "2026-01-01T00:01:00Z", &none),
            Redemption::Refused(e) if e.rule.contains("already used")
        ));
        let reuse = Lax {
            reuse: true,
            ..Lax::default()
        };
        assert!(matches!(
            redeem(Some(&used), "2026-01-01T00:01:00Z", &reuse),
            Redemption::Taken(Ok(_))
        ));
        let other = ChallengeRecord {
            key_id: "k_sign_b".into(),
            ..challenge()
        };
        assert!(matches!(
            redeem(Some(&other), "2026-01-01T00:01:00Z", &none),
            Redemption::Refused(e) if e.field == "challenge_id"
        ));
        assert!(matches!(
            redeem(None, "2026-01-01T00:01:00Z", &none),
            Redemption::Refused(e) if e.rule == "unknown challenge"
        ));
    }

    #[test]
    fn refresh_rotates_valid_tokens_and_flags_reuse_of_revoked_ones() {
        let none = SpecSession;
        let now = at("2026-01-01T00:00:00Z");
        let rt = TokenRecord {
            kind: Some(TokenKind::Refresh),
            identity: "loom://a@x.test".into(),
            key_id: "k_sign_a".into(),
            expires_at: Some(at("2026-01-02T00:00:00Z")),
            revoked: false,
        };
        assert_eq!(
            decide_refresh(Some(&rt), now, &none),
            RefreshDecision::Rotate
        );
        let used = TokenRecord {
            revoked: true,
            ..rt.clone()
        };
        assert_eq!(
            decide_refresh(Some(&used), now, &none),
            RefreshDecision::Reuse(TokenRefusal::Revoked(TokenKind::Refresh))
        );
        let access = TokenRecord {
            kind: Some(TokenKind::Access),
            ..rt.clone()
        };
        let refused = decide_refresh(Some(&access), now, &none);
        assert_eq!(
            refused,
            RefreshDecision::Refuse(TokenRefusal::WrongKind(TokenKind::Refresh))
        );
        assert_eq!(
            TokenRefusal::WrongKind(TokenKind::Refresh).to_string(),
            "this is not a refresh token"
        );
        assert_eq!(
            TokenRefusal::WrongKind(TokenKind::Access).to_string(),
            "this is not an access token"
        );
        assert_eq!(
            decide_refresh(None, now, &none),
            RefreshDecision::Refuse(TokenRefusal::Unknown(TokenKind::Refresh))
        );
    }

    #[test]
    fn the_login_signature_is_over_the_raw_nonce() {
        let k = signing_key_from_seed(&[7; 32]);
        let good = sign_b64url(&k, None, b"n0nce");
        let none = SpecSession;
        assert!(
            none.check_login_signature(&k.verifying_key(), "n0nce", &good)
                .is_ok()
        );
        let e = none
            .check_login_signature(&k.verifying_key(), "other", &good)
            .unwrap_err();
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::SignatureInvalid, "signature")
        );
        let lax = Lax {
            signature: true,
            ..Lax::default()
        };
        assert!(
            lax.check_login_signature(&k.verifying_key(), "other", "!!")
                .is_ok()
        );
    }

    #[test]
    fn tokens_are_checked_for_kind_revocation_and_expiry_in_that_order() {
        let none = SpecSession;
        let now = at("2026-01-01T00:30:00Z");
        let t = TokenRecord {
            kind: Some(TokenKind::Access),
            identity: "loom://a@x.test".into(),
            key_id: "k_sign_a".into(),
            expires_at: Some(at("2026-01-01T01:00:00Z")),
            revoked: false,
        };
        let check = |r: &TokenRecord, k, d: &dyn SessionRules| check_token(Some(r), k, now, d);
        assert_eq!(check(&t, TokenKind::Access, &none), Ok(()));
        assert_eq!(
            check(&t, TokenKind::Refresh, &none),
            Err(TokenRefusal::WrongKind(TokenKind::Refresh))
        );
        let revoked_and_expired = TokenRecord {
            revoked: true,
            expires_at: Some(at("2026-01-01T00:00:00Z")),
            ..t.clone()
        };
        assert_eq!(
            check(&revoked_and_expired, TokenKind::Access, &none),
            Err(TokenRefusal::Revoked(TokenKind::Access))
        );
        let expired = TokenRecord {
            expires_at: None,
            ..t.clone()
        };
        assert_eq!(
            check(&expired, TokenKind::Access, &none),
            Err(TokenRefusal::Expired(TokenKind::Access))
        );
        let lax = Lax {
            expiry: true,
            kind: true,
            ..Lax::default()
        };
        assert_eq!(check(&expired, TokenKind::Refresh, &lax), Ok(()));
        assert_eq!(
            check_token(None, TokenKind::Access, now, &none)
                .unwrap_err()
                .to_string(),
            "unknown access token"
        );
    }
}
