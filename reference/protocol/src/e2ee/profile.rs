//! The E2EE profiles of v1.1 §7.4.1 and their commitments (DESIGN.md §9).

use super::E2eeError;
use crate::jcs::to_canonical_bytes;
use crate::keys::b64url_encode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// `type` of the additional data sealed with a message payload.
pub const PAYLOAD_AAD_TYPE: &str = "loom.e2ee.payload@v1";
/// `type` of the additional data sealed with an attachment.
pub const ATTACHMENT_AAD_TYPE: &str = "loom.e2ee.attachment@v1";
/// `type` of the additional data (and HKDF info) of a wrapped content key.
pub const WRAPPED_KEY_AAD_TYPE: &str = "loom.e2ee.wrapped_key@v1";
/// `type` of the hashed profile descriptor.
pub const PROFILE_COMMITMENT_TYPE: &str = "loom.e2ee.profile_commitment@v1";
/// The only wrapped-key algorithm of both profiles.
pub const WRAP_ALGORITHM: &str = "X25519-HKDF-SHA256";
/// The algorithm of a recipient's `k_enc_` key.
pub const RECIPIENT_KEY_ALGORITHM: &str = "X25519";
/// The MLS profile of v1.1 §7.4.2, which this kit does not implement (and so refuses, fail
/// closed, as §7.4.2 allows).
pub const MLS_PROFILE: &str = "loom-e2ee-mls-1";

/// A non-MLS E2EE profile (v1.1 §7.4.1): X25519 wrapping of a per-message content key,
/// XChaCha20-Poly1305 for payloads and attachments, HKDF-SHA-256. The two versions share
/// every algorithm; they differ in the profile id bound into every AAD and commitment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// `loom-e2ee-x25519-xchacha20-v1` (alias `loom-e2ee-1`).
    V1,
    /// `loom-e2ee-x25519-xchacha20-v2` (alias `loom-e2ee-2`).
    V2,
}

impl Profile {
    /// Both profiles, oldest first.
    pub const ALL: [Profile; 2] = [Profile::V1, Profile::V2];

    /// The canonical profile id, the one bound into AAD and commitments.
    pub fn id(self) -> &'static str {
        match self {
            Profile::V1 => "loom-e2ee-x25519-xchacha20-v1",
            Profile::V2 => "loom-e2ee-x25519-xchacha20-v2",
        }
    }

    /// The short alias (v1.1 §8.1 writes `loom-e2ee-1`).
    pub fn alias(self) -> &'static str {
        match self {
            Profile::V1 => "loom-e2ee-1",
            Profile::V2 => "loom-e2ee-2",
        }
    }

    /// The profile a wire name means: its id or its alias, exactly as written. The MLS profile
    /// and anything else are refused (v1.1 §7.4.2: fail closed for unsupported profiles).
    pub fn resolve(name: &str, field: &str) -> Result<Profile, E2eeError> {
        for p in Profile::ALL {
            if name == p.id() || name == p.alias() {
                return Ok(p);
            }
        }
        let reason = if name == MLS_PROFILE {
            "loom-e2ee-mls-1 is not supported here; unsupported profiles fail closed".to_owned()
        } else {
            format!(
                "unknown E2EE profile {name:?}; supported: {}, {} (aliases {}, {})",
                Profile::V1.id(),
                Profile::V2.id(),
                Profile::V1.alias(),
                Profile::V2.alias()
            )
        };
        Err(E2eeError::new(field, reason, "v1.1 §7.4.2"))
    }

    /// The descriptor whose hash is the profile commitment for `epoch` (DESIGN.md §9).
    pub fn descriptor(self, epoch: u64) -> Value {
        json!({
            "type": PROFILE_COMMITMENT_TYPE,
            "profile": self.id(),
            "epoch": epoch,
            "key_agreement": "X25519",
            "cipher": "XChaCha20-Poly1305",
            "kdf": "HKDF-SHA-256",
            "wrapped_key_algorithms": [WRAP_ALGORITHM],
            "recipient_key_algorithm": RECIPIENT_KEY_ALGORITHM,
            "payload_aad_type": PAYLOAD_AAD_TYPE,
            "attachment_aad_type": ATTACHMENT_AAD_TYPE,
            "wrapped_key_aad_type": WRAPPED_KEY_AAD_TYPE,
            "payload_ciphertext_package_version": 1,
            "wrapped_key_ciphertext_package_version": 1,
            "replay_counter_required": true,
            "profile_commitment_required": true,
        })
    }

    /// `profile_commitment`: base64url(SHA-256(JCS(descriptor))). It binds profile and epoch
    /// into every payload's AAD, so a package cannot be replayed under another profile.
    pub fn commitment(self, epoch: u64) -> String {
        b64url_encode(&Sha256::digest(to_canonical_bytes(&self.descriptor(epoch))))
    }
}

/// A wrapped-key algorithm name as the existing implementation accepts it (case-insensitive,
/// `-SHA256`/`-SHA-256`, `-`/`+`), normalized to [`WRAP_ALGORITHM`].
pub fn resolve_wrap_algorithm(name: &str, field: &str) -> Result<&'static str, E2eeError> {
    let lower = name.to_ascii_lowercase();
    match lower.as_str() {
        "x25519-hkdf-sha256"
        | "x25519-hkdf-sha-256"
        | "x25519+hkdf-sha256"
        | "x25519+hkdf-sha-256" => Ok(WRAP_ALGORITHM),
        _ => Err(E2eeError::new(
            field,
            format!("wrapped-key algorithm must be {WRAP_ALGORITHM}, not {name:?}"),
            "v1.1 §7.1",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_and_others_fail_closed() {
        assert_eq!(Profile::resolve("loom-e2ee-1", "p"), Ok(Profile::V1));
        assert_eq!(
            Profile::resolve("loom-e2ee-x25519-xchacha20-v2", "p"),
            Ok(Profile::V2)
        );
        assert!(Profile::resolve("loom-e2ee-mls-1", "p").is_err());
        assert!(Profile::resolve("LOOM-E2EE-1", "p").is_err());
        assert!(Profile::resolve("loom-e2ee-3", "p").is_err());
    }

    #[test]
    fn commitments_differ_by_profile_and_epoch() {
        let a = Profile::V1.commitment(0);
        assert_eq!(a.len(), 43);
        assert_ne!(a, Profile::V1.commitment(1));
        assert_ne!(a, Profile::V2.commitment(0));
    }
}
