//! Key wrapping and sealing for the X25519/XChaCha20 profiles (v1.1 §7.1, §7.4; the wire
//! format of DESIGN.md §9).
//!
//! Per message a fresh 32-byte content key (CEK) seals the payload with XChaCha20-Poly1305.
//! For each recipient the CEK is wrapped: an ephemeral X25519 key agrees a secret with the
//! recipient's `k_enc_` key, HKDF-SHA-256 turns it into a wrapping key bound to profile,
//! epoch, recipient and key id, and XChaCha20-Poly1305 seals the CEK under it with the same
//! binding as AAD. The payload's AAD binds profile, epoch, replay counter and the profile
//! commitment, so none of them can be changed without the tag failing.

use super::content::{EncryptedContent, WrappedKey};
use super::package::{CEK_LEN, NONCE_LEN, PayloadPackage, WrappedKeyPackage, X25519_LEN};
use super::profile::{ATTACHMENT_AAD_TYPE, PAYLOAD_AAD_TYPE, WRAP_ALGORITHM, WRAPPED_KEY_AAD_TYPE};
use super::{E2eeError, Profile};
use crate::jcs::to_canonical_bytes;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hkdf::Hkdf;
use rand_core::CryptoRng;
use serde_json::json;
use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};
use zeroize::Zeroizing;

/// What a package carries: a message payload or an attachment (separate AAD types, so one
/// cannot be presented as the other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AadKind {
    /// `content.ciphertext` (`loom.e2ee.payload@v1`).
    Payload,
    /// An encrypted blob (`loom.e2ee.attachment@v1`, v1.1 §8.1 attachments).
    Attachment,
}

impl AadKind {
    fn type_name(self) -> &'static str {
        match self {
            AadKind::Payload => PAYLOAD_AAD_TYPE,
            AadKind::Attachment => ATTACHMENT_AAD_TYPE,
        }
    }
}

/// One recipient of a wrapped key: an identity and one of its published `k_enc_` keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// The recipient identity (`loom://…`).
    pub to: String,
    /// The `k_enc_` key id of its X25519 key.
    pub key_id: String,
    /// The raw X25519 public key.
    pub public: [u8; X25519_LEN],
}

/// The random inputs of one key wrap, given by the caller (fixed in test vectors).
pub struct WrapRandomness {
    /// The ephemeral X25519 secret.
    pub ephemeral_secret: Zeroizing<[u8; X25519_LEN]>,
    /// The wrap nonce.
    pub nonce: [u8; NONCE_LEN],
}

impl std::fmt::Debug for WrapRandomness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapRandomness")
            .field("ephemeral_secret", &"<redacted>")
            .field("nonce", &self.nonce)
            .finish()
    }
}

impl WrapRandomness {
    /// Fresh randomness from a cryptographic generator.
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> WrapRandomness {
        let mut secret = Zeroizing::new([0u8; X25519_LEN]);
        rng.fill_bytes(secret.as_mut());
        let mut nonce = [0u8; NONCE_LEN];
        rng.fill_bytes(&mut nonce);
        WrapRandomness {
            ephemeral_secret: secret,
            nonce,
        }
    }
}

/// A decrypted package.
pub struct Opened {
    /// The plaintext (zeroized on drop).
    pub plaintext: Zeroizing<Vec<u8>>,
    /// The wrapped-key entry that opened it (`to`, `key_id`).
    pub recipient: (String, String),
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field(
                "plaintext",
                &format_args!("<{} bytes>", self.plaintext.len()),
            )
            .field("recipient", &self.recipient)
            .finish()
    }
}

/// The key-wrap binding: HKDF info and AAD (canonical JSON, DESIGN.md §9).
fn wrap_binding(profile: Profile, epoch: u64, to: &str, key_id: &str) -> Vec<u8> {
    to_canonical_bytes(&json!({
        "type": WRAPPED_KEY_AAD_TYPE,
        "profile": profile.id(),
        "epoch": epoch,
        "to": to,
        "key_id": key_id,
        "algorithm": WRAP_ALGORITHM,
    }))
}

/// The HKDF salt: SHA-256 of `loom.e2ee.wrap.salt.v1|{profile}|{epoch}|{algorithm}`.
fn wrap_salt(profile: Profile, epoch: u64) -> [u8; 32] {
    Sha256::digest(format!(
        "loom.e2ee.wrap.salt.v1|{}|{epoch}|{WRAP_ALGORITHM}",
        profile.id()
    ))
    .into()
}

/// The AAD of a payload or attachment package.
pub fn payload_aad(
    kind: AadKind,
    profile: Profile,
    epoch: u64,
    replay_counter: u64,
    commitment: &str,
) -> Vec<u8> {
    to_canonical_bytes(&json!({
        "type": kind.type_name(),
        "profile": profile.id(),
        "epoch": epoch,
        "replay_counter": replay_counter,
        "profile_commitment": commitment,
    }))
}

/// X25519 (RFC 7748) with the all-zero, non-contributory result refused: a low-order public
/// key would make the wrapping key a constant anyone can compute (RFC 7748 §6.1).
pub fn x25519_agree(
    secret: &[u8; 32],
    public: &[u8; 32],
    field: &str,
) -> Result<Zeroizing<[u8; 32]>, E2eeError> {
    let shared = StaticSecret::from(*secret).diffie_hellman(&PublicKey::from(*public));
    if !shared.was_contributory() {
        return Err(E2eeError::new(
            field,
            "the X25519 shared secret is all zeros (a low-order public key)",
            "v1.1 §7.1 (X25519, RFC 7748 §6.1)",
        ));
    }
    Ok(Zeroizing::new(shared.to_bytes()))
}

/// HKDF-SHA-256 (RFC 5869) into `okm`; fails only when `okm` is longer than 255 × 32 bytes.
pub fn hkdf_sha256(salt: &[u8], ikm: &[u8], info: &[u8], okm: &mut [u8]) -> Result<(), E2eeError> {
    Hkdf::<Sha256>::new(Some(salt), ikm)
        .expand(info, okm)
        .map_err(|_| {
            E2eeError::new(
                "okm",
                "HKDF-SHA-256 output is at most 8160 bytes",
                "v1.1 §7.1 (HKDF, RFC 5869 §2.3)",
            )
        })
}

fn aead_error(field: &str, reason: &str) -> E2eeError {
    E2eeError::new(field, reason, "v1.1 §7.1 (XChaCha20-Poly1305)")
}

/// The cipher and nonce of one XChaCha20-Poly1305 operation: a 32-byte key, a 24-byte nonce.
fn xchacha(key: &[u8], nonce: &[u8]) -> Result<(XChaCha20Poly1305, XNonce), E2eeError> {
    let cipher = XChaCha20Poly1305::new_from_slice(key)
        .map_err(|_| aead_error("key", "the key must be 32 bytes"))?;
    let nonce =
        XNonce::try_from(nonce).map_err(|_| aead_error("nonce", "the nonce must be 24 bytes"))?;
    Ok((cipher, nonce))
}

/// XChaCha20-Poly1305 encryption: ciphertext ‖ tag. `key` must be 32 bytes, `nonce` 24.
pub fn xchacha_seal(
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    msg: &[u8],
) -> Result<Vec<u8>, E2eeError> {
    let (cipher, nonce) = xchacha(key, nonce)?;
    cipher
        .encrypt(&nonce, Payload { msg, aad })
        .map_err(|_| aead_error("plaintext", "the plaintext is too long"))
}

/// XChaCha20-Poly1305 decryption of ciphertext ‖ tag; any tampering fails the tag.
pub fn xchacha_open(
    key: &[u8],
    nonce: &[u8],
    aad: &[u8],
    sealed: &[u8],
) -> Result<Vec<u8>, E2eeError> {
    let (cipher, nonce) = xchacha(key, nonce)?;
    cipher
        .decrypt(&nonce, Payload { msg: sealed, aad })
        .map_err(|_| aead_error("ciphertext", "the tag does not verify"))
}

fn wrapping_key(
    shared: &[u8; 32],
    profile: Profile,
    epoch: u64,
    to: &str,
    key_id: &str,
) -> Zeroizing<[u8; 32]> {
    let mut okm = Zeroizing::new([0u8; 32]);
    hkdf_sha256(
        &wrap_salt(profile, epoch),
        shared,
        &wrap_binding(profile, epoch, to, key_id),
        okm.as_mut(),
    )
    .expect("32 bytes is a valid HKDF-SHA-256 output length");
    okm
}

/// X25519 public key of a secret.
pub fn public_key(secret: &[u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(*secret)).to_bytes()
}

/// Wraps `cek` for `recipient` under `profile` and `epoch`.
pub fn wrap_key(
    profile: Profile,
    epoch: u64,
    recipient: &Recipient,
    cek: &[u8; CEK_LEN],
    random: &WrapRandomness,
) -> Result<WrappedKey, E2eeError> {
    let shared = x25519_agree(
        &random.ephemeral_secret,
        &recipient.public,
        "wrapped_keys[].to",
    )?;
    let key = wrapping_key(&shared, profile, epoch, &recipient.to, &recipient.key_id);
    let aad = wrap_binding(profile, epoch, &recipient.to, &recipient.key_id);
    let sealed = xchacha_seal(key.as_ref(), &random.nonce, &aad, cek)?;
    let package = WrappedKeyPackage {
        ephemeral_public: public_key(&random.ephemeral_secret),
        nonce: random.nonce,
        sealed,
    };
    Ok(WrappedKey {
        to: recipient.to.clone(),
        algorithm: WRAP_ALGORITHM.to_owned(),
        key_id: recipient.key_id.clone(),
        ciphertext: package.encode(),
    })
}

/// Unwraps the content key of `wrapped` with the recipient's X25519 `secret`; `field` names
/// the entry in errors.
pub fn unwrap_key(
    profile: Profile,
    epoch: u64,
    wrapped: &WrappedKey,
    secret: &[u8; 32],
    field: &str,
) -> Result<Zeroizing<[u8; CEK_LEN]>, E2eeError> {
    let cfield = format!("{field}.ciphertext");
    let package = WrappedKeyPackage::parse(&wrapped.ciphertext, &cfield)?;
    let shared = x25519_agree(secret, &package.ephemeral_public, &cfield)?;
    let key = wrapping_key(&shared, profile, epoch, &wrapped.to, &wrapped.key_id);
    let aad = wrap_binding(profile, epoch, &wrapped.to, &wrapped.key_id);
    let cek = Zeroizing::new(
        xchacha_open(key.as_ref(), &package.nonce, &aad, &package.sealed).map_err(|_| {
            E2eeError::new(
                &cfield,
                "the wrapped key does not open: not this recipient's key, or its package, \
                     profile, epoch, recipient or key id was changed",
                "v1.1 §7.4",
            )
        })?,
    );
    let out: [u8; CEK_LEN] = cek.as_slice().try_into().map_err(|_| {
        E2eeError::new(
            &cfield,
            format!(
                "the wrapped content key is {} bytes, not {CEK_LEN}",
                cek.len()
            ),
            "v1.1 §7.4 (wire format: DESIGN.md §9)",
        )
    })?;
    Ok(Zeroizing::new(out))
}

/// What to seal: profile, epoch and replay counter of the sender (v1.1 §10.6, §23.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sealing {
    /// The thread's profile.
    pub profile: Profile,
    /// The thread's current key epoch.
    pub epoch: u64,
    /// The sender's next replay counter for (identity, device, epoch).
    pub replay_counter: u64,
    /// Payload or attachment.
    pub kind: AadKind,
}

/// Seals `plaintext` under `cek` and `nonce` and wraps `cek` for every recipient with the
/// randomness given beside it. Deterministic: the test vectors are made this way.
pub fn seal(
    s: &Sealing,
    plaintext: &[u8],
    cek: &[u8; CEK_LEN],
    nonce: &[u8; NONCE_LEN],
    recipients: &[(Recipient, WrapRandomness)],
) -> Result<EncryptedContent, E2eeError> {
    if recipients.is_empty() {
        return Err(E2eeError::new(
            "wrapped_keys",
            "encrypted content needs at least one recipient",
            "v1.1 §7.4",
        ));
    }
    let commitment = s.profile.commitment(s.epoch);
    let aad = payload_aad(s.kind, s.profile, s.epoch, s.replay_counter, &commitment);
    let sealed = xchacha_seal(cek, nonce, &aad, plaintext)?;
    let mut wrapped_keys = Vec::with_capacity(recipients.len());
    for (r, random) in recipients {
        if wrapped_keys.iter().any(|w: &WrappedKey| w.to == r.to) {
            return Err(E2eeError::new(
                "wrapped_keys",
                format!("{} is listed twice", r.to),
                "v1.1 §7.4 (wire format: DESIGN.md §9)",
            ));
        }
        let wrapped = wrap_key(s.profile, s.epoch, r, cek, random).map_err(|mut e| {
            e.field = format!("wrapped_keys[{}].to", wrapped_keys.len());
            e
        })?;
        wrapped_keys.push(wrapped);
    }
    Ok(EncryptedContent {
        profile: s.profile,
        profile_name: s.profile.id().to_owned(),
        epoch: s.epoch,
        replay_counter: s.replay_counter,
        profile_commitment: commitment,
        ciphertext: PayloadPackage {
            nonce: *nonce,
            sealed,
        }
        .encode(),
        wrapped_keys,
    })
}

/// [`seal`] with a fresh content key, nonce and per-recipient randomness from `rng`.
pub fn seal_with_rng<R: CryptoRng + ?Sized>(
    s: &Sealing,
    plaintext: &[u8],
    recipients: &[Recipient],
    rng: &mut R,
) -> Result<EncryptedContent, E2eeError> {
    let mut cek = Zeroizing::new([0u8; CEK_LEN]);
    rng.fill_bytes(cek.as_mut());
    let mut nonce = [0u8; NONCE_LEN];
    rng.fill_bytes(&mut nonce);
    let with_random: Vec<(Recipient, WrapRandomness)> = recipients
        .iter()
        .map(|r| (r.clone(), WrapRandomness::generate(rng)))
        .collect();
    seal(s, plaintext, &cek, &nonce, &with_random)
}

/// Opens `content` as the recipient `to` holding X25519 `secret` (of key `key_id`, when the
/// recipient has several). The commitment is checked first, in constant time.
pub fn open(
    content: &EncryptedContent,
    kind: AadKind,
    to: &str,
    key_id: Option<&str>,
    secret: &[u8; 32],
) -> Result<Opened, E2eeError> {
    content.check_commitment()?;
    let mut matches = content
        .wrapped_keys
        .iter()
        .enumerate()
        .filter(|(_, w)| w.to == to && key_id.is_none_or(|k| w.key_id == k));
    let Some((i, wrapped)) = matches.next() else {
        return Err(E2eeError::new(
            "content.wrapped_keys",
            format!("no wrapped key for {to}: it was not a recipient at this epoch"),
            "v1.1 §10.6",
        ));
    };
    if matches.next().is_some() {
        return Err(E2eeError::new(
            "content.wrapped_keys",
            format!("several wrapped keys match {to}; name the key id"),
            "v1.1 §7.4 (wire format: DESIGN.md §9)",
        ));
    }
    let field = format!("content.wrapped_keys[{i}]");
    let cek = unwrap_key(content.profile, content.epoch, wrapped, secret, &field)?;
    let package = PayloadPackage::parse(&content.ciphertext, "content.ciphertext")?;
    let aad = payload_aad(
        kind,
        content.profile,
        content.epoch,
        content.replay_counter,
        &content.profile_commitment,
    );
    let plaintext =
        xchacha_open(cek.as_ref(), &package.nonce, &aad, &package.sealed).map_err(|_| {
            E2eeError::new(
                "content.ciphertext",
                "the payload does not open: its package, tag, profile, epoch or replay counter \
                 was changed, or it is not this kind of package",
                "v1.1 §7.4",
            )
        })?;
    Ok(Opened {
        plaintext: Zeroizing::new(plaintext),
        recipient: (wrapped.to.clone(), wrapped.key_id.clone()),
    })
}
