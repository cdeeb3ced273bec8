//! The §14.2 steps the session quirks break, as overrides of loom-protocol's
//! [`SessionRules`] on the quirk set; every other step is the specification
//! ([`SpecSession`]).

use super::{Quirk, Quirks};
use ed25519_dalek::VerifyingKey;
use loom_protocol::session::{
    ChallengeRecord, SessionRules, SpecSession, TokenKind, TokenRecord, TokenRefusal,
};
use loom_protocol::{ProtocolError, Timestamp};

impl SessionRules for Quirks {
    fn check_unused(&self, c: &ChallengeRecord) -> Result<(), ProtocolError> {
        if self.has(Quirk::AllowChallengeReuse) {
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
        if self.has(Quirk::AcceptBadLoginSignature) {
            return Ok(());
        }
        SpecSession.check_login_signature(key, nonce, signature)
    }

    fn check_token_kind(&self, t: &TokenRecord, expected: TokenKind) -> Result<(), TokenRefusal> {
        if self.has(Quirk::TokenKindUnchecked) {
            return Ok(());
        }
        SpecSession.check_token_kind(t, expected)
    }

    fn check_token_expiry(
        &self,
        t: &TokenRecord,
        expected: TokenKind,
        now: Timestamp,
    ) -> Result<(), TokenRefusal> {
        if self.has(Quirk::AcceptExpiredToken) {
            return Ok(());
        }
        SpecSession.check_token_expiry(t, expected, now)
    }
}
