//! The binary packages inside base64url ciphertext members (DESIGN.md §9). Both start with a
//! version byte (1) so a later layout can be told apart; a package of another version or
//! shorter than its fixed parts is refused before any cryptography runs.

use super::E2eeError;
use crate::keys::{b64url_decode, b64url_encode};

/// The package version both profiles write.
pub const PACKAGE_VERSION: u8 = 1;
/// XChaCha20 nonce length.
pub const NONCE_LEN: usize = 24;
/// Poly1305 tag length.
pub const TAG_LEN: usize = 16;
/// X25519 public key length.
pub const X25519_LEN: usize = 32;
/// Content-encryption key length.
pub const CEK_LEN: usize = 32;

/// `content.ciphertext`: `0x01 ‖ nonce (24) ‖ ciphertext ‖ tag (16)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadPackage {
    /// The XChaCha20 nonce.
    pub nonce: [u8; NONCE_LEN],
    /// Ciphertext followed by the Poly1305 tag.
    pub sealed: Vec<u8>,
}

/// `wrapped_keys[].ciphertext`: `0x01 ‖ ephemeral X25519 public (32) ‖ nonce (24) ‖
/// sealed content key (32 + 16)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedKeyPackage {
    /// The sender's ephemeral X25519 public key for this recipient.
    pub ephemeral_public: [u8; X25519_LEN],
    /// The XChaCha20 nonce of the key wrap.
    pub nonce: [u8; NONCE_LEN],
    /// The sealed content key and its tag.
    pub sealed: Vec<u8>,
}

fn decode_versioned(text: &str, field: &str, min: usize) -> Result<Vec<u8>, E2eeError> {
    let bytes = b64url_decode(text)
        .map_err(|e| E2eeError::new(field, e.reason, "v1.1 §8.1 (base64url)"))?;
    if bytes.len() < min {
        return Err(E2eeError::new(
            field,
            format!(
                "a version-{PACKAGE_VERSION} package is at least {min} bytes; this one is {}",
                bytes.len()
            ),
            "v1.1 §7.4 (wire format: DESIGN.md §9)",
        ));
    }
    if bytes[0] != PACKAGE_VERSION {
        return Err(E2eeError::new(
            field,
            format!(
                "package version {} is not supported (expected {PACKAGE_VERSION})",
                bytes[0]
            ),
            "v1.1 §7.4 (wire format: DESIGN.md §9)",
        ));
    }
    Ok(bytes)
}

impl PayloadPackage {
    /// The smallest valid package (empty plaintext).
    pub const MIN_LEN: usize = 1 + NONCE_LEN + TAG_LEN;

    /// Parses `content.ciphertext` (or an attachment's package) named `field`.
    pub fn parse(text: &str, field: &str) -> Result<PayloadPackage, E2eeError> {
        let bytes = decode_versioned(text, field, Self::MIN_LEN)?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&bytes[1..1 + NONCE_LEN]);
        Ok(PayloadPackage {
            nonce,
            sealed: bytes[1 + NONCE_LEN..].to_vec(),
        })
    }

    /// The base64url package.
    pub fn encode(&self) -> String {
        let mut out = Vec::with_capacity(1 + NONCE_LEN + self.sealed.len());
        out.push(PACKAGE_VERSION);
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.sealed);
        b64url_encode(&out)
    }
}

impl WrappedKeyPackage {
    /// The smallest valid package (a 32-byte key and its tag).
    pub const MIN_LEN: usize = 1 + X25519_LEN + NONCE_LEN + CEK_LEN + TAG_LEN;

    /// Parses one `wrapped_keys[].ciphertext` named `field`.
    pub fn parse(text: &str, field: &str) -> Result<WrappedKeyPackage, E2eeError> {
        let bytes = decode_versioned(text, field, Self::MIN_LEN)?;
        let mut ephemeral_public = [0u8; X25519_LEN];
        ephemeral_public.copy_from_slice(&bytes[1..1 + X25519_LEN]);
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&bytes[1 + X25519_LEN..1 + X25519_LEN + NONCE_LEN]);
        Ok(WrappedKeyPackage {
            ephemeral_public,
            nonce,
            sealed: bytes[1 + X25519_LEN + NONCE_LEN..].to_vec(),
        })
    }

    /// The base64url package.
    pub fn encode(&self) -> String {
        let mut out = Vec::with_capacity(1 + X25519_LEN + NONCE_LEN + self.sealed.len());
        out.push(PACKAGE_VERSION);
        out.extend_from_slice(&self.ephemeral_public);
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.sealed);
        b64url_encode(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packages_round_trip_and_refuse_short_or_other_versions() {
        let p = PayloadPackage {
            nonce: [7; NONCE_LEN],
            sealed: vec![1; TAG_LEN + 3],
        };
        assert_eq!(PayloadPackage::parse(&p.encode(), "c"), Ok(p));
        let short = b64url_encode(&[1u8; PayloadPackage::MIN_LEN - 1]);
        assert!(PayloadPackage::parse(&short, "c").is_err());
        let mut v2 = vec![2u8];
        v2.extend_from_slice(&[0; 60]);
        let e = PayloadPackage::parse(&b64url_encode(&v2), "c").unwrap_err();
        assert!(e.reason.contains("version 2"), "{e}");
        let w = WrappedKeyPackage {
            ephemeral_public: [9; X25519_LEN],
            nonce: [3; NONCE_LEN],
            sealed: vec![5; CEK_LEN + TAG_LEN],
        };
        assert_eq!(WrappedKeyPackage::parse(&w.encode(), "w"), Ok(w));
        assert!(WrappedKeyPackage::parse("not base64!", "w").is_err());
    }
}
