//! Ed25519 key material in the two wire forms LOOM uses: base64url raw keys (identity and
//! node documents, v1.1 §6.2, §15.2) and SPKI PEM (identity registration, DESIGN.md §9),
//! plus base64url signatures (v1.1 Appendix D) and domain-separated signing (§7.3).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use std::fmt;

/// Why key or signature material was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason)
    }
}

impl std::error::Error for KeyError {}

fn fail<T>(reason: &'static str) -> Result<T, KeyError> {
    Err(KeyError { reason })
}

/// base64url without padding (RFC 4648 §5), as every LOOM binary field uses.
pub fn b64url_encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Strict base64url decoding: URL alphabet, no padding, no stray bits.
pub fn b64url_decode(s: &str) -> Result<Vec<u8>, KeyError> {
    URL_SAFE_NO_PAD
        .decode(s)
        .or_else(|_| fail("not base64url without padding (RFC 4648 §5)"))
}

/// The fixed DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410 §4):
/// SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (0 unused bits) }.
const ED25519_SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// A public key as base64url of its 32 raw bytes.
pub fn public_key_to_b64url(key: &VerifyingKey) -> String {
    b64url_encode(key.as_bytes())
}

/// Parses a base64url raw 32-byte Ed25519 public key.
pub fn public_key_from_b64url(s: &str) -> Result<VerifyingKey, KeyError> {
    let bytes = b64url_decode(s)?;
    let arr: [u8; 32] = bytes
        .try_into()
        .or_else(|_| fail("an Ed25519 public key is 32 bytes"))?;
    VerifyingKey::from_bytes(&arr).or_else(|_| fail("not a valid Ed25519 curve point"))
}

/// A public key as an SPKI PEM document (RFC 8410 §4, RFC 7468).
pub fn public_key_to_spki_pem(key: &VerifyingKey) -> String {
    let mut der = ED25519_SPKI_PREFIX.to_vec();
    der.extend_from_slice(key.as_bytes());
    format!(
        "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
        STANDARD.encode(der)
    )
}

/// Parses an SPKI PEM Ed25519 public key; line breaks and surrounding whitespace are tolerated.
pub fn public_key_from_spki_pem(pem: &str) -> Result<VerifyingKey, KeyError> {
    let body = pem
        .trim()
        .strip_prefix("-----BEGIN PUBLIC KEY-----")
        .and_then(|s| s.strip_suffix("-----END PUBLIC KEY-----"))
        .ok_or(KeyError {
            reason: "PEM must be a single BEGIN/END PUBLIC KEY block",
        })?;
    let b64: String = body.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    let der = STANDARD
        .decode(b64)
        .or_else(|_| fail("PEM body is not valid base64"))?;
    let raw = der.strip_prefix(&ED25519_SPKI_PREFIX[..]).ok_or(KeyError {
        reason: "not an Ed25519 SubjectPublicKeyInfo (OID 1.3.101.112)",
    })?;
    let arr: [u8; 32] = raw
        .try_into()
        .or_else(|_| fail("Ed25519 SPKI must hold exactly 32 key bytes"))?;
    VerifyingKey::from_bytes(&arr).or_else(|_| fail("not a valid Ed25519 curve point"))
}

/// Parses a public key given either as SPKI PEM or as base64url raw bytes.
pub fn public_key_from_any(s: &str) -> Result<VerifyingKey, KeyError> {
    if s.trim_start().starts_with("-----BEGIN") {
        public_key_from_spki_pem(s)
    } else {
        public_key_from_b64url(s)
    }
}

/// Parses a base64url Ed25519 signature (64 bytes).
pub fn signature_from_b64url(s: &str) -> Result<Signature, KeyError> {
    let bytes = b64url_decode(s)?;
    let arr: [u8; 64] = bytes
        .try_into()
        .or_else(|_| fail("an Ed25519 signature is 64 bytes"))?;
    Ok(Signature::from_bytes(&arr))
}

/// A domain-separation context (v1.1 §7.3, §12.6, §13.3.1): the signed bytes are the
/// context name, one NUL byte, then the canonical payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SigContext(pub &'static str);

impl SigContext {
    /// `LOOM-ENVELOPE-SIG-v1` (v1.1 §7.3).
    pub const ENVELOPE: SigContext = SigContext("LOOM-ENVELOPE-SIG-v1");
    /// `LOOM-DELEGATION-SIG-v1` (v1.1 §13.3.1).
    pub const DELEGATION: SigContext = SigContext("LOOM-DELEGATION-SIG-v1");
    /// `LOOM-CAPABILITY-POP-v1` (v1.1 §12.6).
    pub const CAPABILITY_POP: SigContext = SigContext("LOOM-CAPABILITY-POP-v1");

    /// The exact bytes that are signed: `name ‖ 0x00 ‖ payload`.
    pub fn message(self, payload: &[u8]) -> Vec<u8> {
        let mut m = Vec::with_capacity(self.0.len() + 1 + payload.len());
        m.extend_from_slice(self.0.as_bytes());
        m.push(0);
        m.extend_from_slice(payload);
        m
    }
}

/// Signs `payload` (optionally under a context prefix) and returns the base64url signature.
pub fn sign_b64url(key: &SigningKey, context: Option<SigContext>, payload: &[u8]) -> String {
    let sig = match context {
        Some(ctx) => key.sign(&ctx.message(payload)),
        None => key.sign(payload),
    };
    b64url_encode(&sig.to_bytes())
}

/// Verifies a signature strictly (RFC 8032 §5.1.7 with canonical `S` and no small-order keys).
pub fn verify(
    key: &VerifyingKey,
    context: Option<SigContext>,
    payload: &[u8],
    sig: &Signature,
) -> bool {
    match context {
        Some(ctx) => key.verify_strict(&ctx.message(payload), sig).is_ok(),
        None => key.verify_strict(payload, sig).is_ok(),
    }
}

/// A signing key from a 32-byte seed (RFC 8032 private key).
pub fn signing_key_from_seed(seed: &[u8; 32]) -> SigningKey {
    SigningKey::from_bytes(seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8410 §10.1 example public key.
    const RFC8410_PEM: &str = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n";

    #[test]
    fn rfc8410_example_round_trips() {
        let key = public_key_from_spki_pem(RFC8410_PEM).unwrap();
        assert_eq!(
            hex::encode(key.as_bytes()),
            "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1"
        );
        assert_eq!(public_key_to_spki_pem(&key), RFC8410_PEM);
        assert_eq!(public_key_from_any(RFC8410_PEM).unwrap(), key);
        let raw = public_key_to_b64url(&key);
        assert_eq!(public_key_from_any(&raw).unwrap(), key);
    }

    #[test]
    fn rejects_bad_key_material() {
        assert!(public_key_from_b64url("AAAA").is_err());
        assert!(public_key_from_b64url("not base64!").is_err());
        // Padding is not allowed in base64url here.
        assert!(b64url_decode("AA==").is_err());
        // Standard-alphabet characters are not base64url.
        assert!(b64url_decode("a+b/").is_err());
        let x25519_spki = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VuAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----";
        assert!(public_key_from_spki_pem(x25519_spki).is_err());
        assert!(
            public_key_from_spki_pem("-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----")
                .is_err()
        );
        assert!(signature_from_b64url(&b64url_encode(&[0u8; 63])).is_err());
    }

    /// RFC 8032 §7.1 TEST 1: the empty message.
    #[test]
    fn rfc8032_test_1_signature() {
        let seed: [u8; 32] =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap()
                .try_into()
                .unwrap();
        let key = signing_key_from_seed(&seed);
        let sig = sign_b64url(&key, None, b"");
        let bytes = b64url_decode(&sig).unwrap();
        assert_eq!(
            hex::encode(bytes),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        let s = signature_from_b64url(&sig).unwrap();
        assert!(verify(&key.verifying_key(), None, b"", &s));
        assert!(!verify(
            &key.verifying_key(),
            Some(SigContext::ENVELOPE),
            b"",
            &s
        ));
    }

    #[test]
    fn context_message_is_name_nul_payload() {
        assert_eq!(
            SigContext::ENVELOPE.message(b"{}"),
            b"LOOM-ENVELOPE-SIG-v1\0{}".to_vec()
        );
    }
}
