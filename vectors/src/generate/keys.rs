//! Key material from fixed seeds, so generated files are byte-identical on every run and an
//! implementer can rebuild any key from its name: seed = SHA-256(`"loom-vectors/v1/key/" ‖ name`).

use ed25519_dalek::{SigningKey, VerifyingKey};
use loom_protocol::keys::{public_key_to_b64url, public_key_to_spki_pem, signing_key_from_seed};
use sha2::{Digest, Sha256};

/// The 32-byte seed for the key called `name`.
pub fn seed(name: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"loom-vectors/v1/key/");
    h.update(name.as_bytes());
    h.finalize().into()
}

/// The Ed25519 signing key called `name`.
pub fn signing_key(name: &str) -> SigningKey {
    signing_key_from_seed(&seed(name))
}

/// The public key called `name`.
pub fn verifying_key(name: &str) -> VerifyingKey {
    signing_key(name).verifying_key()
}

/// The public key called `name`, base64url (32 raw bytes, unpadded).
pub fn public_b64url(name: &str) -> String {
    public_key_to_b64url(&verifying_key(name))
}

/// The public key called `name`, SPKI PEM.
pub fn public_pem(name: &str) -> String {
    public_key_to_spki_pem(&verifying_key(name))
}
