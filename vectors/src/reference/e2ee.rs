//! The `e2ee` kinds (v1.1 §7.4, §23.1; DESIGN.md §9) through `loom_protocol::e2ee`.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::e2ee::crypto::Sealing;
use loom_protocol::e2ee::{
    AadKind, E2eeError, EncryptedContent, Profile, Recipient, ReplayMode, ReplayState,
    WrapRandomness, open as open_content, seal as seal_content,
};
use loom_protocol::keys::b64url_decode;
use serde_json::Value;

const BAD: &str = "ENVELOPE_INVALID";

fn refused(e: E2eeError) -> Answer {
    Answer::invalid_at(BAD, e.field.clone(), e.to_string())
}

fn bytes<const N: usize>(v: &Value, name: &str) -> Result<[u8; N], BadRequest> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("{name} must be a base64url string"))?;
    b64url_decode(s)
        .map_err(|e| format!("{name}: {}", e.reason))?
        .try_into()
        .map_err(|_| format!("{name} must be {N} bytes"))
}

fn kind(input: Input<'_>) -> Result<AadKind, BadRequest> {
    match input.str("aad_kind")? {
        "payload" => Ok(AadKind::Payload),
        "attachment" => Ok(AadKind::Attachment),
        other => Err(format!("aad_kind {other:?} is not payload or attachment")),
    }
}

fn uint(input: Input<'_>, name: &str) -> Result<u64, BadRequest> {
    input
        .value(name)?
        .as_u64()
        .ok_or_else(|| format!("{name} must be a non-negative integer"))
}

/// `e2ee-open`: the recipient's plaintext, or the member that fails.
pub fn open(input: Input<'_>) -> Result<Answer, BadRequest> {
    let r = input.value("recipient")?;
    let to = r["to"].as_str().ok_or("recipient.to must be a string")?;
    let key_id = r.get("key_id").and_then(Value::as_str);
    let secret: [u8; 32] = bytes(&r["private_key"], "recipient.private_key")?;
    let content = match EncryptedContent::parse(input.value("content")?, "content") {
        Ok(c) => c,
        Err(e) => return Ok(refused(e)),
    };
    match open_content(&content, kind(input)?, to, key_id, &secret) {
        Ok(opened) => Ok(Answer::valid(
            String::from_utf8(opened.plaintext.to_vec()).map_err(|_| "plaintext is not UTF-8")?,
        )),
        Err(e) => Ok(refused(e)),
    }
}

/// `e2ee-seal`: the content object sealed with the given randomness.
pub fn seal(input: Input<'_>) -> Result<Answer, BadRequest> {
    let profile = match Profile::resolve(input.str("profile")?, "profile") {
        Ok(p) => p,
        Err(e) => return Ok(refused(e)),
    };
    let mut recipients = Vec::new();
    for r in input
        .value("recipients")?
        .as_array()
        .ok_or("recipients must be an array")?
    {
        let recipient = Recipient {
            to: r["to"].as_str().ok_or("recipients[].to")?.to_owned(),
            key_id: r["key_id"]
                .as_str()
                .ok_or("recipients[].key_id")?
                .to_owned(),
            public: bytes(&r["public_key"], "public_key")?,
        };
        let random = WrapRandomness {
            ephemeral_secret: bytes::<32>(&r["ephemeral_private_key"], "ephemeral_private_key")?
                .into(),
            nonce: bytes(&r["wrap_nonce"], "wrap_nonce")?,
        };
        recipients.push((recipient, random));
    }
    let s = Sealing {
        profile,
        epoch: uint(input, "epoch")?,
        replay_counter: uint(input, "replay_counter")?,
        kind: kind(input)?,
    };
    let cek: [u8; 32] = bytes(input.value("cek")?, "cek")?;
    let nonce: [u8; 24] = bytes(input.value("nonce")?, "nonce")?;
    match seal_content(
        &s,
        input.str("plaintext")?.as_bytes(),
        &cek,
        &nonce,
        &recipients,
    ) {
        Ok(c) => Ok(Answer::valid(c.to_value())),
        Err(e) => Ok(refused(e)),
    }
}

/// `e2ee-commitment`: the profile commitment.
pub fn commitment(input: Input<'_>) -> Result<Answer, BadRequest> {
    match Profile::resolve(input.str("profile")?, "profile") {
        Ok(p) => Ok(Answer::valid(p.commitment(uint(input, "epoch")?))),
        Err(e) => Ok(refused(e)),
    }
}

fn pair(v: &Value) -> Result<(u64, u64), BadRequest> {
    let n = |k: &str| {
        v[k].as_u64()
            .ok_or_else(|| format!("{k} must be a non-negative integer"))
    };
    Ok((n("epoch")?, n("replay_counter")?))
}

/// `e2ee-replay`: whether `next` is accepted after `accepted`.
pub fn replay(input: Input<'_>) -> Result<Answer, BadRequest> {
    let mode = match input.str("mode")? {
        "strict" => ReplayMode::Strict,
        "sliding_window" => ReplayMode::SlidingWindow,
        other => return Err(format!("mode {other:?} is not strict or sliding_window")),
    };
    let mut state: Option<ReplayState> = None;
    let history = input
        .value("accepted")?
        .as_array()
        .ok_or("accepted must be an array")?;
    for (i, h) in history.iter().enumerate() {
        let (epoch, counter) = pair(h)?;
        state = Some(match state {
            None => ReplayState::first(epoch, counter),
            Some(s) => s
                .accept(mode, epoch, counter)
                .map_err(|v| format!("accepted[{i}] is itself refused: {v:?}"))?,
        });
    }
    let (epoch, counter) = pair(input.value("next")?)?;
    match state {
        None => Ok(Answer::accepted()),
        Some(s) => match s.accept(mode, epoch, counter) {
            Ok(_) => Ok(Answer::accepted()),
            Err(v) => Ok(refused(v.error(counter, &s))),
        },
    }
}
