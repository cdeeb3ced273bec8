//! Prefixed ULID identifiers (v1.1 §8.4; v1.0 §8.3) and their deterministic generation.
//!
//! Every object ID is a type prefix followed by a 26-character Crockford base32 ULID in its
//! canonical uppercase form. Key IDs carry a prefix too; the spec's own examples put a
//! label between prefix and ULID (`k_sign_root_01J…`, v1.1 §6.2), so key IDs accept any
//! `[A-Za-z0-9_-]` suffix while the generator always produces prefix + ULID.
//! IDs are made as `Ulid::from_parts(clock_ms, rng_bits)` (DESIGN.md §3) so a seed fixes them.

use crate::clock::Clock;
use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use ulid::Ulid;

/// The kinds of prefixed object IDs of v1.1 §8.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdKind {
    /// `env_`
    Envelope,
    /// `thr_`
    Thread,
    /// `att_`
    Attachment,
    /// `blob_`
    Blob,
    /// `cap_`
    Capability,
    /// `evt_`
    Event,
}

impl IdKind {
    /// The wire prefix, including the underscore.
    pub const fn prefix(self) -> &'static str {
        match self {
            IdKind::Envelope => "env_",
            IdKind::Thread => "thr_",
            IdKind::Attachment => "att_",
            IdKind::Blob => "blob_",
            IdKind::Capability => "cap_",
            IdKind::Event => "evt_",
        }
    }
}

/// Why an ID string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdError {
    /// The prefix that was expected.
    pub expected_prefix: &'static str,
    /// What is wrong.
    pub reason: &'static str,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "expected {}<ULID>: {}",
            self.expected_prefix, self.reason
        )
    }
}

impl std::error::Error for IdError {}

/// Checks that `s` is a ULID in canonical form: 26 uppercase Crockford base32 characters,
/// first character at most `7` (a larger one overflows 128 bits).
fn parse_canonical_ulid(s: &str, prefix: &'static str) -> Result<Ulid, IdError> {
    let err = |reason| IdError {
        expected_prefix: prefix,
        reason,
    };
    if s.len() != 26 {
        return Err(err("a ULID is exactly 26 characters"));
    }
    if !s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z')) {
        return Err(err("a ULID uses uppercase Crockford base32 (0-9, A-Z without I, L, O, U)"));
    }
    if s.as_bytes()[0] > b'7' {
        return Err(err("ULID overflows 128 bits (first character must be 0-7)"));
    }
    Ulid::from_string(s).map_err(|_| err("not a ULID"))
}

macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Ulid);

        impl $name {
            /// The kind of this ID.
            pub const KIND: IdKind = $kind;

            /// Wraps a ULID.
            pub const fn from_ulid(u: Ulid) -> Self {
                $name(u)
            }

            /// The ULID part.
            pub const fn ulid(self) -> Ulid {
                self.0
            }

            /// Parses the canonical wire form (prefix + uppercase ULID).
            pub fn parse(s: &str) -> Result<Self, IdError> {
                let prefix = $kind.prefix();
                let rest = s.strip_prefix(prefix).ok_or(IdError {
                    expected_prefix: prefix,
                    reason: "wrong or missing prefix",
                })?;
                parse_canonical_ulid(rest, prefix).map($name)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $kind.prefix(), self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $name::parse(s)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $name::parse(&s).map_err(serde::de::Error::custom)
            }
        }
    };
}

prefixed_id!(
    /// `env_` + ULID: an envelope.
    EnvelopeId, IdKind::Envelope
);
prefixed_id!(
    /// `thr_` + ULID: a thread.
    ThreadId, IdKind::Thread
);
prefixed_id!(
    /// `att_` + ULID: an attachment.
    AttachmentId, IdKind::Attachment
);
prefixed_id!(
    /// `blob_` + ULID: a stored blob.
    BlobId, IdKind::Blob
);
prefixed_id!(
    /// `cap_` + ULID: a capability token.
    CapabilityId, IdKind::Capability
);
prefixed_id!(
    /// `evt_` + ULID: an event.
    EventId, IdKind::Event
);

/// The kinds of key IDs of v1.1 §8.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum KeyKind {
    /// `k_sign_`: an identity's Ed25519 signing key.
    Signing,
    /// `k_enc_`: an identity's X25519 encryption key.
    Encryption,
    /// `k_node_sign_`: a node's federation signing key.
    NodeSigning,
}

impl KeyKind {
    /// The wire prefix.
    pub const fn prefix(self) -> &'static str {
        match self {
            KeyKind::Signing => "k_sign_",
            KeyKind::Encryption => "k_enc_",
            KeyKind::NodeSigning => "k_node_sign_",
        }
    }
}

/// Longest key-ID suffix accepted after the prefix.
pub const MAX_KEY_ID_SUFFIX: usize = 128;

/// A key ID: a [`KeyKind`] prefix and a non-empty `[A-Za-z0-9_-]` suffix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KeyId {
    kind: KeyKind,
    text: String,
}

impl KeyId {
    /// Parses a key ID of the given kind.
    pub fn parse(s: &str, kind: KeyKind) -> Result<Self, IdError> {
        let prefix = kind.prefix();
        let rest = s.strip_prefix(prefix).ok_or(IdError {
            expected_prefix: prefix,
            reason: "wrong or missing key prefix",
        })?;
        let err = |reason| IdError {
            expected_prefix: prefix,
            reason,
        };
        if rest.is_empty() || rest.len() > MAX_KEY_ID_SUFFIX {
            return Err(err("key ID suffix must be 1 to 128 characters"));
        }
        if !rest
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        {
            return Err(err(
                "key ID suffix may contain only A-Z, a-z, 0-9, '_' and '-'",
            ));
        }
        Ok(KeyId {
            kind,
            text: s.to_owned(),
        })
    }

    /// Parses a key ID of any kind, choosing the kind by its prefix.
    pub fn parse_any(s: &str) -> Result<Self, IdError> {
        // `k_node_sign_` does not start with `k_sign_`, so prefixes never overlap.
        [KeyKind::Signing, KeyKind::Encryption, KeyKind::NodeSigning]
            .into_iter()
            .find(|k| s.starts_with(k.prefix()))
            .map(|k| KeyId::parse(s, k))
            .unwrap_or(Err(IdError {
                expected_prefix: "k_sign_|k_enc_|k_node_sign_",
                reason: "unknown key prefix",
            }))
    }

    /// The kind of key.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// The wire text.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for KeyId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for KeyId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        KeyId::parse_any(&s).map_err(serde::de::Error::custom)
    }
}

/// A ChaCha20 RNG seeded from a `u64`: the one source of randomness for protocol data.
pub fn seeded_rng(seed: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed)
}

/// Deterministic ID generation: ULIDs from the injected clock and a seeded RNG.
#[derive(Debug)]
pub struct IdGenerator<C: Clock> {
    clock: C,
    rng: ChaCha20Rng,
}

impl<C: Clock> IdGenerator<C> {
    /// A generator reading time from `clock` and randomness from a ChaCha20 RNG seeded with `seed`.
    pub fn new(clock: C, seed: u64) -> Self {
        IdGenerator {
            clock,
            rng: seeded_rng(seed),
        }
    }

    /// The next ULID: current clock milliseconds and 80 random bits.
    pub fn ulid(&mut self) -> Ulid {
        let ms = u64::try_from(self.clock.now().unix_ms()).unwrap_or(0);
        let hi = u128::from(self.rng.next_u64() & 0xFFFF);
        let lo = u128::from(self.rng.next_u64());
        Ulid::from_parts(ms, (hi << 64) | lo)
    }

    /// A new envelope ID.
    pub fn envelope(&mut self) -> EnvelopeId {
        EnvelopeId(self.ulid())
    }

    /// A new thread ID.
    pub fn thread(&mut self) -> ThreadId {
        ThreadId(self.ulid())
    }

    /// A new attachment ID.
    pub fn attachment(&mut self) -> AttachmentId {
        AttachmentId(self.ulid())
    }

    /// A new blob ID.
    pub fn blob(&mut self) -> BlobId {
        BlobId(self.ulid())
    }

    /// A new capability token ID.
    pub fn capability(&mut self) -> CapabilityId {
        CapabilityId(self.ulid())
    }

    /// A new event ID.
    pub fn event(&mut self) -> EventId {
        EventId(self.ulid())
    }

    /// A new key ID of the given kind (prefix + ULID).
    pub fn key(&mut self, kind: KeyKind) -> KeyId {
        KeyId {
            kind,
            text: format!("{}{}", kind.prefix(), self.ulid()),
        }
    }

    /// 32 random bytes, e.g. an Ed25519 seed.
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut b = [0u8; 32];
        self.rng.fill_bytes(&mut b);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::time::Timestamp;

    #[test]
    fn parses_canonical_prefixed_ids() {
        let e = EnvelopeId::parse("env_01JMKB7X9Q2RVHF3KN4TYZPG00").unwrap();
        assert_eq!(e.to_string(), "env_01JMKB7X9Q2RVHF3KN4TYZPG00");
        assert!(ThreadId::parse("thr_01JMKB7X9Q2RVHF3KN4TYZPG00").is_ok());
        assert!(BlobId::parse("blob_01JMKB7X9Q2RVHF3KN4TYZPG00").is_ok());
        assert_eq!(ThreadId::KIND.prefix(), "thr_");
    }

    #[test]
    fn rejects_wrong_prefix_length_case_and_alphabet() {
        for bad in [
            "thr_01JMKB7X9Q2RVHF3KN4TYZPG00",
            "env01JMKB7X9Q2RVHF3KN4TYZPG00",
            "env_01JMKB7X9Q2RVHF3KN4TYZPG0",
            "env_01JMKB7X9Q2RVHF3KN4TYZPG000",
            "env_01jmkb7x9q2rvhf3kn4tyzpg00",
            "env_01JMKB7X9Q2RVHF3KN4TYZPGOO",
            "env_01JMKB7X9Q2RVHF3KN4TYZPGIL",
            "env_81JMKB7X9Q2RVHF3KN4TYZPG00",
            "ENV_01JMKB7X9Q2RVHF3KN4TYZPG00",
            "",
        ] {
            assert!(EnvelopeId::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn key_ids_accept_labelled_suffixes_and_reject_wrong_kinds() {
        let k = KeyId::parse("k_sign_root_01J", KeyKind::Signing).unwrap();
        assert_eq!(k.kind(), KeyKind::Signing);
        assert_eq!(
            KeyId::parse_any("k_node_sign_abc").unwrap().kind(),
            KeyKind::NodeSigning
        );
        assert_eq!(
            KeyId::parse_any("k_enc_dev-1").unwrap().kind(),
            KeyKind::Encryption
        );
        assert!(KeyId::parse("k_enc_x", KeyKind::Signing).is_err());
        assert!(KeyId::parse("k_sign_", KeyKind::Signing).is_err());
        assert!(KeyId::parse("k_sign_a b", KeyKind::Signing).is_err());
        assert!(KeyId::parse("k_sign_a.b", KeyKind::Signing).is_err());
        assert!(KeyId::parse(&format!("k_sign_{}", "a".repeat(129)), KeyKind::Signing).is_err());
        assert!(KeyId::parse_any("key_1").is_err());
    }

    #[test]
    fn generation_is_deterministic_per_seed_and_uses_the_clock() {
        let clock = FixedClock(Timestamp::from_unix_ms(1_771_267_200_000));
        let mut a = IdGenerator::new(clock, 7);
        let mut b = IdGenerator::new(clock, 7);
        let mut c = IdGenerator::new(clock, 8);
        let (x, y, z) = (a.envelope(), b.envelope(), c.envelope());
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_eq!(x.ulid().timestamp_ms(), 1_771_267_200_000);
        // Generated IDs parse back as canonical IDs.
        assert_eq!(EnvelopeId::parse(&x.to_string()).unwrap(), x);
        let k = a.key(KeyKind::Signing);
        assert_eq!(KeyId::parse(k.as_str(), KeyKind::Signing).unwrap(), k);
    }
}
