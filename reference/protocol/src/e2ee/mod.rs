//! End-to-end encryption (v1.1 §7.1, §7.4–§7.4.2, §10.6, §11.8, §23.1): the two
//! `loom-e2ee-x25519-xchacha20` profiles as the existing v1.1 implementation puts them on the
//! wire (DESIGN.md §9), in pure functions.
//!
//! - [`profile`]: the profiles, their aliases and the profile commitment.
//! - [`package`]: the binary ciphertext packages inside `content.ciphertext` and
//!   `wrapped_keys[].ciphertext`.
//! - [`crypto`]: X25519 + HKDF-SHA-256 key wrapping and XChaCha20-Poly1305 sealing.
//! - [`content`]: encrypted `content` (and `encryption.epoch@v1` parameters) as typed values.
//! - [`replay`]: replay counters per (sender, device, epoch), strict or a 64-entry window.
//!
//! Randomness and keys come from the caller; secrets are zeroized when dropped; the profile
//! commitment is compared in constant time. Nothing here knows plaintext formats: a client
//! decides what it encrypts (the reference client seals the JSON of `{human, structured}`).

pub mod content;
pub mod crypto;
pub mod package;
pub mod profile;
pub mod replay;
pub mod thread;

pub use content::{EncryptedContent, EpochParameters, PayloadHead, WrappedKey};
pub use crypto::{
    AadKind, Opened, Recipient, WrapRandomness, open, seal, seal_with_rng, unwrap_key, wrap_key,
};
pub use profile::Profile;
pub use replay::{ReplayMode, ReplayState, ReplayVerdict};

use crate::error::ProtocolError;
use std::fmt;

/// Why encrypted material was refused: the field, the rule and where the rule is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct E2eeError {
    /// JSON path of the offending member (`content.wrapped_keys[0].ciphertext`).
    pub field: String,
    /// The rule it breaks.
    pub reason: String,
    /// The spec section (or DESIGN.md §9 for the de facto wire format).
    pub section: &'static str,
}

impl E2eeError {
    pub(crate) fn new(
        field: impl Into<String>,
        reason: impl Into<String>,
        section: &'static str,
    ) -> Self {
        E2eeError {
            field: field.into(),
            reason: reason.into(),
            section,
        }
    }
}

impl fmt::Display for E2eeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.field, self.reason, self.section)
    }
}

impl std::error::Error for E2eeError {}

impl From<E2eeError> for ProtocolError {
    fn from(e: E2eeError) -> Self {
        ProtocolError::invalid(e.field, e.reason, e.section)
    }
}
