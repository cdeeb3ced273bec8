//! Encrypted `content` and `encryption.epoch@v1` parameters as typed values (v1.1 §8.1,
//! §11.8; member names per DESIGN.md §9). Parsing checks every member once and names the
//! first one that is wrong; everything downstream takes the typed value.

use super::package::{PayloadPackage, WrappedKeyPackage};
use super::profile::resolve_wrap_algorithm;
use super::{E2eeError, Profile};
use crate::address::Address;
use serde_json::{Map, Value, json};
use subtle::ConstantTimeEq;

/// One `wrapped_keys[]` entry: the content (or epoch) key sealed for one recipient key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedKey {
    /// The recipient identity.
    pub to: String,
    /// The wrap algorithm (normalized to `X25519-HKDF-SHA256`).
    pub algorithm: String,
    /// The recipient's `k_enc_` key id.
    pub key_id: String,
    /// The base64url [`WrappedKeyPackage`].
    pub ciphertext: String,
}

/// Encrypted `content` (`encrypted: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptedContent {
    /// The profile.
    pub profile: Profile,
    /// `profile` as written (an id or an alias).
    pub profile_name: String,
    /// The key epoch (v1.1 §10.6).
    pub epoch: u64,
    /// The sender's replay counter (v1.1 §23.1).
    pub replay_counter: u64,
    /// `profile_commitment` as written.
    pub profile_commitment: String,
    /// The base64url [`PayloadPackage`].
    pub ciphertext: String,
    /// One entry per recipient key.
    pub wrapped_keys: Vec<WrappedKey>,
}

/// What acceptance needs of encrypted content once [`EncryptedContent::parse`] has checked
/// all of it: the profile, epoch and replay counter (v1.1 §10.6, §23.1). The packages stay in
/// the envelope; they are not copied into the facts a node carries through acceptance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadHead {
    /// The profile.
    pub profile: Profile,
    /// `profile` as written (an id or an alias).
    pub profile_name: String,
    /// The key epoch.
    pub epoch: u64,
    /// The sender's replay counter.
    pub replay_counter: u64,
}

/// `encryption.epoch@v1` parameters (v1.1 §11.8): the epoch's key for every participant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochParameters {
    /// The profile the thread uses from this epoch.
    pub profile: Profile,
    /// The new epoch.
    pub epoch: u64,
    /// One entry per participant key.
    pub wrapped_keys: Vec<WrappedKey>,
}

/// `k_enc_` followed by 2–127 characters of `[A-Za-z0-9._:-]`, starting alphanumeric (the
/// pattern the existing implementation enforces for recipient key ids).
pub fn is_encryption_key_id(s: &str) -> bool {
    let Some(rest) = s.strip_prefix("k_enc_") else {
        return false;
    };
    let mut chars = rest.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && (2..=127).contains(&rest.len())
        && chars.all(|c| c.is_ascii_alphanumeric() || "._:-".contains(c))
}

fn member<'a>(
    obj: &'a Map<String, Value>,
    prefix: &str,
    name: &str,
) -> Result<&'a Value, E2eeError> {
    obj.get(name).filter(|v| !v.is_null()).ok_or_else(|| {
        E2eeError::new(
            format!("{prefix}.{name}"),
            "required in encrypted content",
            "v1.1 §7.4; DESIGN.md §9",
        )
    })
}

fn uint(
    obj: &Map<String, Value>,
    prefix: &str,
    name: &str,
    section: &'static str,
) -> Result<u64, E2eeError> {
    member(obj, prefix, name)?.as_u64().ok_or_else(|| {
        E2eeError::new(
            format!("{prefix}.{name}"),
            "must be a non-negative integer",
            section,
        )
    })
}

fn text<'a>(obj: &'a Map<String, Value>, prefix: &str, name: &str) -> Result<&'a str, E2eeError> {
    member(obj, prefix, name)?
        .as_str()
        .ok_or_else(|| E2eeError::new(format!("{prefix}.{name}"), "must be a string", "v1.1 §8.1"))
}

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, E2eeError> {
    v.as_object()
        .ok_or_else(|| E2eeError::new(field, "must be an object", "v1.1 §8.1"))
}

/// Parses `wrapped_keys` at `field`: a non-empty array, one entry per recipient, each with a
/// `loom://` recipient (bridge identities cannot take part in E2EE, v1.1 §21.4), a `k_enc_`
/// key id, the profile's algorithm and a well-formed package.
pub fn parse_wrapped_keys(v: Option<&Value>, field: &str) -> Result<Vec<WrappedKey>, E2eeError> {
    let Some(items) = v.and_then(Value::as_array) else {
        return Err(E2eeError::new(
            field,
            "must be an array of wrapped keys",
            "v1.1 §7.4; DESIGN.md §9",
        ));
    };
    if items.is_empty() {
        return Err(E2eeError::new(
            field,
            "must hold at least one wrapped key",
            "v1.1 §7.4",
        ));
    }
    let mut out: Vec<WrappedKey> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("{field}[{i}]");
        let obj = object(item, &path)?;
        let to = text(obj, &path, "to")?;
        match Address::parse_wire(to) {
            Ok(a) if a.is_bridge() => {
                return Err(E2eeError::new(
                    format!("{path}.to"),
                    "bridge identities cannot participate in E2EE threads",
                    "v1.1 §21.4",
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(E2eeError::new(format!("{path}.to"), e.reason, "v1.1 §6.1")),
        }
        if out.iter().any(|w| w.to == to) {
            return Err(E2eeError::new(
                format!("{path}.to"),
                format!("{to} has two wrapped keys"),
                "v1.1 §7.4 (wire format: DESIGN.md §9)",
            ));
        }
        let key_id = text(obj, &path, "key_id")?;
        if !is_encryption_key_id(key_id) {
            return Err(E2eeError::new(
                format!("{path}.key_id"),
                "must be a k_enc_ key id of the recipient",
                "v1.1 §6.1 (key prefixes)",
            ));
        }
        let algorithm =
            resolve_wrap_algorithm(text(obj, &path, "algorithm")?, &format!("{path}.algorithm"))?;
        let ciphertext = text(obj, &path, "ciphertext")?;
        WrappedKeyPackage::parse(ciphertext, &format!("{path}.ciphertext"))?;
        out.push(WrappedKey {
            to: to.to_owned(),
            algorithm: algorithm.to_owned(),
            key_id: key_id.to_owned(),
            ciphertext: ciphertext.to_owned(),
        });
    }
    Ok(out)
}

fn wrapped_keys_json(keys: &[WrappedKey]) -> Value {
    Value::Array(
        keys.iter()
            .map(|w| {
                json!({"to": w.to, "algorithm": w.algorithm, "key_id": w.key_id, "ciphertext": w.ciphertext})
            })
            .collect(),
    )
}

impl EncryptedContent {
    /// Parses encrypted `content` (at path `prefix`, usually `content`).
    pub fn parse(content: &Value, prefix: &str) -> Result<EncryptedContent, E2eeError> {
        let obj = object(content, prefix)?;
        if obj.get("encrypted") != Some(&Value::Bool(true)) {
            return Err(E2eeError::new(
                format!("{prefix}.encrypted"),
                "must be true for encrypted content",
                "v1.1 §8.1",
            ));
        }
        let profile_name = text(obj, prefix, "profile")?;
        let profile = Profile::resolve(profile_name, &format!("{prefix}.profile"))?;
        let epoch = uint(obj, prefix, "epoch", "v1.1 §10.6")?;
        let replay_counter = uint(obj, prefix, "replay_counter", "v1.1 §23.1")?;
        let profile_commitment = text(obj, prefix, "profile_commitment")?;
        let ciphertext = text(obj, prefix, "ciphertext")?;
        PayloadPackage::parse(ciphertext, &format!("{prefix}.ciphertext"))?;
        let wrapped_keys =
            parse_wrapped_keys(obj.get("wrapped_keys"), &format!("{prefix}.wrapped_keys"))?;
        let content = EncryptedContent {
            profile,
            profile_name: profile_name.to_owned(),
            epoch,
            replay_counter,
            profile_commitment: profile_commitment.to_owned(),
            ciphertext: ciphertext.to_owned(),
            wrapped_keys,
        };
        content.check_commitment().map_err(|mut e| {
            e.field = format!("{prefix}.profile_commitment");
            e
        })?;
        Ok(content)
    }

    /// The profile commitment must be the one of (profile, epoch), compared in constant time.
    pub fn check_commitment(&self) -> Result<(), E2eeError> {
        let expected = self.profile.commitment(self.epoch);
        if bool::from(
            expected
                .as_bytes()
                .ct_eq(self.profile_commitment.as_bytes()),
        ) {
            Ok(())
        } else {
            Err(E2eeError::new(
                "content.profile_commitment",
                format!(
                    "does not commit to {} at epoch {}",
                    self.profile.id(),
                    self.epoch
                ),
                "v1.1 §7.4.1; DESIGN.md §9",
            ))
        }
    }

    /// The wire form (`content` of an envelope).
    pub fn to_value(&self) -> Value {
        json!({
            "encrypted": true,
            "profile": self.profile_name,
            "epoch": self.epoch,
            "replay_counter": self.replay_counter,
            "profile_commitment": self.profile_commitment,
            "ciphertext": self.ciphertext,
            "wrapped_keys": wrapped_keys_json(&self.wrapped_keys),
        })
    }

    /// The profile, epoch and replay counter.
    pub fn head(&self) -> PayloadHead {
        PayloadHead {
            profile: self.profile,
            profile_name: self.profile_name.clone(),
            epoch: self.epoch,
            replay_counter: self.replay_counter,
        }
    }

    /// The recipients that hold a wrapped key.
    pub fn recipients(&self) -> impl Iterator<Item = &str> {
        self.wrapped_keys.iter().map(|w| w.to.as_str())
    }
}

impl EpochParameters {
    /// Parses `content.structured.parameters` of `encryption.epoch@v1`.
    pub fn parse(obj: &Map<String, Value>) -> Result<EpochParameters, E2eeError> {
        const P: &str = "content.structured.parameters";
        let profile = Profile::resolve(text(obj, P, "profile")?, &format!("{P}.profile"))?;
        let epoch = uint(obj, P, "epoch", "v1.1 §11.8")?;
        let wrapped_keys =
            parse_wrapped_keys(obj.get("wrapped_keys"), &format!("{P}.wrapped_keys"))?;
        Ok(EpochParameters {
            profile,
            epoch,
            wrapped_keys,
        })
    }

    /// The wire form of the parameters.
    pub fn to_value(&self) -> Value {
        json!({
            "profile": self.profile.id(),
            "epoch": self.epoch,
            "wrapped_keys": wrapped_keys_json(&self.wrapped_keys),
        })
    }
}
