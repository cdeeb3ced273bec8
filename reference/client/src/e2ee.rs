//! End-to-end encryption for a client (v1.1 §7.4, §10.6, §11.8, §23.1): sealing a message
//! for a thread's current members, opening what one can read, and the `encryption.epoch@v1`
//! operation that makes a thread E2EE or rotates its key epoch. The cryptography is
//! `loom_protocol::e2ee`; this module fetches what it needs from the node (the thread's
//! members, profile and epoch; each member's published `k_enc_` key) and never sends a key
//! or plaintext anywhere.
//!
//! The sealed plaintext is the JSON of `{human, structured?}`, the cleartext `content` the
//! envelope would otherwise carry. The replay counter is the sealing time in milliseconds:
//! strictly increasing for one device without state (v1.1 §23.1 counts per sender, device and
//! epoch; any first value is taken).

use crate::api::encode_component;
use crate::client::Client;
use crate::dial::Dial;
use crate::envelope::{EnvelopeFactory, MessageDraft};
use crate::error::ClientError;
use crate::identity::Identity;
use loom_protocol::clock::Clock;
use loom_protocol::e2ee::crypto::Sealing;
use loom_protocol::e2ee::profile::RECIPIENT_KEY_ALGORITHM;
use loom_protocol::e2ee::{
    AadKind, EncryptedContent, EpochParameters, Profile, Recipient, seal_with_rng,
};
use loom_protocol::keys::b64url_decode;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::{Value, json};

/// A thread's E2EE state as its node reports it, with every current member's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadKeys {
    /// The thread id.
    pub thread: String,
    /// Whether the thread is end-to-end encrypted (`encryption.enabled`).
    pub enabled: bool,
    /// The thread's profile (v1 until an `encryption.epoch@v1` names one).
    pub profile: Profile,
    /// `encryption.key_epoch`.
    pub epoch: u64,
    /// The current members and their X25519 keys, in the thread's order.
    pub members: Vec<Recipient>,
}

fn bad(what: String) -> ClientError {
    ClientError::Input(what)
}

/// The active X25519 key `who` publishes (`public_keys.encryption`, v1.1 §6.2).
pub async fn encryption_key<D: Dial>(
    client: &mut Client<D>,
    who: &str,
) -> Result<Recipient, ClientError> {
    let path = format!("/v1/identity/{}", encode_component(who));
    let doc = client.expect("GET", &path, None, 200).await?.body;
    let keys = doc
        .pointer("/public_keys/encryption")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let key = keys.iter().find(|k| {
        k["status"].as_str().unwrap_or("active") == "active"
            && k["algorithm"].as_str() == Some(RECIPIENT_KEY_ALGORITHM)
    });
    let Some(key) = key else {
        return Err(bad(format!(
            "{who} publishes no active X25519 encryption key (register it with `loom register --e2ee`); only identities with one can be members of an E2EE thread"
        )));
    };
    let public: [u8; 32] = key["public_key"]
        .as_str()
        .and_then(|s| b64url_decode(s).ok())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            bad(format!(
                "{who}'s encryption key is not 32 bytes of base64url"
            ))
        })?;
    Ok(Recipient {
        to: who.to_owned(),
        key_id: key["key_id"].as_str().unwrap_or_default().to_owned(),
        public,
    })
}

/// The E2EE state of `thread` and the keys of its current (not departed) members.
pub async fn thread_keys<D: Dial>(
    client: &mut Client<D>,
    thread: &str,
) -> Result<ThreadKeys, ClientError> {
    let doc = client.get_thread(thread).await?.body;
    let enc = &doc["encryption"];
    let profile = match enc["profile"].as_str() {
        Some(p) => Profile::resolve(p, "encryption.profile")
            .map_err(|e| bad(format!("thread {thread}: {e}")))?,
        None => Profile::V1,
    };
    let members: Vec<String> = doc["participants"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["left_at"].is_null())
        .filter_map(|p| p["identity"].as_str().map(str::to_owned))
        .collect();
    let mut keys = Vec::with_capacity(members.len());
    for m in &members {
        keys.push(encryption_key(client, m).await?);
    }
    Ok(ThreadKeys {
        thread: thread.to_owned(),
        enabled: enc["enabled"].as_bool().unwrap_or(false),
        profile,
        epoch: enc["key_epoch"].as_u64().unwrap_or(0),
        members: keys,
    })
}

fn seal_err(e: loom_protocol::e2ee::E2eeError) -> ClientError {
    bad(format!("cannot encrypt: {e}"))
}

/// A signed message in `keys.thread` whose content is sealed for every current member at the
/// thread's epoch (v1.1 §7.4: routing fields stay clear; §10.6: the current epoch).
/// `rng_seed` feeds the content key, nonces and ephemeral keys.
pub fn sealed_message<C: Clock + Clone>(
    factory: &mut EnvelopeFactory<C>,
    from: &Identity,
    draft: &MessageDraft,
    keys: &ThreadKeys,
    rng_seed: [u8; 32],
) -> Result<Value, ClientError> {
    if !keys.enabled {
        return Err(bad(format!(
            "thread {} is not end-to-end encrypted; run `loom e2ee enable --thread {}` first",
            keys.thread, keys.thread
        )));
    }
    let mut env = factory.message(from, draft)?;
    let plaintext = serde_json::to_vec(&json!({"human": env["content"]["human"]}))
        .map_err(|e| bad(e.to_string()))?;
    let s = Sealing {
        profile: keys.profile,
        epoch: keys.epoch,
        replay_counter: u64::try_from(factory.now().unix_ms()).unwrap_or(0),
        kind: AadKind::Payload,
    };
    let mut rng = ChaCha20Rng::from_seed(rng_seed);
    let content = seal_with_rng(&s, &plaintext, &keys.members, &mut rng).map_err(seal_err)?;
    env["content"] = content.to_value();
    from.sign(&mut env)?;
    Ok(env)
}

/// `encryption.epoch@v1` (v1.1 §11.8) for `keys.thread` at `epoch`: a fresh epoch secret
/// wrapped for every current member. Messages carry their own wrapped keys, so the secret
/// is what the operation distributes, and the operation is what makes the epoch the thread's.
pub fn epoch_operation<C: Clock + Clone>(
    factory: &mut EnvelopeFactory<C>,
    from: &Identity,
    keys: &ThreadKeys,
    epoch: u64,
    rng_seed: [u8; 32],
) -> Result<Value, ClientError> {
    let mut rng = ChaCha20Rng::from_seed(rng_seed);
    let secret = factory.bytes32();
    let s = Sealing {
        profile: keys.profile,
        epoch,
        replay_counter: 0,
        kind: AadKind::Payload,
    };
    let wrapped = seal_with_rng(&s, &secret, &keys.members, &mut rng).map_err(seal_err)?;
    let params = EpochParameters {
        profile: keys.profile,
        epoch,
        wrapped_keys: wrapped.wrapped_keys,
    };
    factory.thread_op(from, &keys.thread, "encryption.epoch@v1", params.to_value())
}

/// An attachment sealed for `keys`' members (v1.1 §7.4 "Payload (`content`) and attachments
/// MAY be encrypted end-to-end"): the bytes to upload as the blob (the attachment package,
/// AAD type `loom.e2ee.attachment@v1`) and the `encryption` member of the envelope's
/// attachment entry (the content's members without `ciphertext`, which is the blob).
pub fn seal_attachment(
    keys: &ThreadKeys,
    replay_counter: u64,
    bytes: &[u8],
    rng_seed: [u8; 32],
) -> Result<(Vec<u8>, Value), ClientError> {
    let s = Sealing {
        profile: keys.profile,
        epoch: keys.epoch,
        replay_counter,
        kind: AadKind::Attachment,
    };
    let mut rng = ChaCha20Rng::from_seed(rng_seed);
    let sealed = seal_with_rng(&s, bytes, &keys.members, &mut rng).map_err(seal_err)?;
    let package = b64url_decode(&sealed.ciphertext).map_err(|e| {
        bad(format!(
            "cannot encode the attachment package: {}",
            e.reason
        ))
    })?;
    let mut encryption = sealed.to_value();
    if let Some(o) = encryption.as_object_mut() {
        o.remove("ciphertext");
    }
    Ok((package, encryption))
}

/// Opens an encrypted attachment: its entry's `encryption` member and the blob's bytes.
pub fn open_attachment(attachment: &Value, blob: &[u8], me: &Identity) -> Result<Vec<u8>, String> {
    let mut content = attachment["encryption"].clone();
    if !content.is_object() {
        return Err("the attachment has no encryption member".into());
    }
    content["ciphertext"] = Value::from(loom_protocol::keys::b64url_encode(blob));
    let content =
        EncryptedContent::parse(&content, "attachments[].encryption").map_err(|e| e.to_string())?;
    let opened = loom_protocol::e2ee::open(
        &content,
        AadKind::Attachment,
        me.address(),
        None,
        &me.encryption_secret(),
    )
    .map_err(|e| e.to_string())?;
    Ok(opened.plaintext.to_vec())
}

/// The cleartext content of an encrypted envelope `me` can read, or why not.
pub fn open_envelope(envelope: &Value, me: &Identity) -> Result<Value, String> {
    let content =
        EncryptedContent::parse(&envelope["content"], "content").map_err(|e| e.to_string())?;
    let opened = loom_protocol::e2ee::open(
        &content,
        AadKind::Payload,
        me.address(),
        None,
        &me.encryption_secret(),
    )
    .map_err(|e| e.to_string())?;
    serde_json::from_slice(&opened.plaintext).map_err(|e| format!("the plaintext is not JSON: {e}"))
}

/// `envelope` with a `decrypted` member when its content is encrypted: the cleartext
/// content, or `{"error": why}` (not a recipient at that epoch, tampered, …).
pub fn with_decrypted(mut envelope: Value, me: &Identity) -> Value {
    if envelope.pointer("/content/encrypted") == Some(&Value::Bool(true)) {
        envelope["decrypted"] = match open_envelope(&envelope, me) {
            Ok(v) => v,
            Err(why) => json!({"error": why}),
        };
    }
    envelope
}
