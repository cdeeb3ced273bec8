//! Access and retention rules a node applies to stored envelopes: audience (v1.1 §8.3,
//! §20.6), encryption requirement (§10.6, §24.2) and legal hold (§25.3).

use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use serde_json::Value;

/// The label that blocks deletion (v1.1 §25.3).
pub const LEGAL_HOLD_LABEL: &str = "sys.legal_hold";

fn addresses<'a>(items: impl Iterator<Item = &'a Value>) -> impl Iterator<Item = Address> {
    items
        .filter_map(|v| v.as_str())
        .filter_map(|s| Address::parse_wire(s).ok())
}

/// May `viewer` see `envelope`? (v1.1 §8.3 "Nodes MUST enforce audience in delivery and
/// retrieval".) `is_thread_participant` says whether the viewer currently participates in
/// the envelope's thread. BCC recipients are visible only in their own copy (§20.6): they
/// see an envelope whose `custom` audience lists them, never the original's `to`.
pub fn check_audience(
    envelope: &Value,
    viewer: &Address,
    is_thread_participant: bool,
) -> Result<(), ProtocolError> {
    let sender = envelope
        .pointer("/from/identity")
        .and_then(Value::as_str)
        .and_then(|s| Address::parse_wire(s).ok());
    if sender.as_ref() == Some(viewer) {
        return Ok(());
    }
    let to = envelope
        .get("to")
        .and_then(Value::as_array)
        .map(|v| v.as_slice())
        .unwrap_or_default();
    let visible_recipient = || {
        to.iter().any(|r| {
            r.get("role").and_then(Value::as_str) != Some("bcc")
                && r.get("identity")
                    .and_then(Value::as_str)
                    .and_then(|s| Address::parse_wire(s).ok())
                    .as_ref()
                    == Some(viewer)
        })
    };
    let listed = || {
        let ids = envelope
            .pointer("/audience/identities")
            .and_then(Value::as_array)
            .map(|v| v.as_slice())
            .unwrap_or_default();
        addresses(ids.iter()).any(|a| &a == viewer)
    };
    let allowed = match envelope.pointer("/audience/mode").and_then(Value::as_str) {
        None | Some("thread") => is_thread_participant || visible_recipient(),
        Some("recipients") => visible_recipient(),
        Some("custom") => listed(),
        Some(_) => false,
    };
    if allowed {
        Ok(())
    } else {
        Err(ProtocolError::new(
            ErrorCode::AudienceDenied,
            "audience",
            "the envelope's audience does not include this identity",
            "v1.1 §8.3",
        ))
    }
}

/// An E2EE thread accepts only encrypted payloads (v1.1 §10.6; `ENCRYPTION_REQUIRED`, §24.2).
/// `thread_op` envelopes stay cleartext so nodes can authorize them (§12.4).
pub fn check_encryption_required(
    envelope: &Value,
    thread_encrypted: bool,
) -> Result<(), ProtocolError> {
    let is_op = envelope.get("type").and_then(Value::as_str) == Some("thread_op");
    let encrypted = envelope.pointer("/content/encrypted") == Some(&Value::Bool(true));
    if thread_encrypted && !is_op && !encrypted {
        return Err(ProtocolError::new(
            ErrorCode::EncryptionRequired,
            "content.encrypted",
            "this thread is end-to-end encrypted; the payload must be encrypted",
            "v1.1 §10.6",
        ));
    }
    Ok(())
}

/// Deletion is rejected while the envelope or its thread carries `sys.legal_hold` (v1.1 §25.3).
pub fn check_deletable<'a>(labels: impl IntoIterator<Item = &'a str>) -> Result<(), ProtocolError> {
    if labels.into_iter().any(|l| l == LEGAL_HOLD_LABEL) {
        return Err(ProtocolError::new(
            ErrorCode::LegalHoldActive,
            "labels",
            "sys.legal_hold is present; deletion is blocked",
            "v1.1 §25.3",
        ));
    }
    Ok(())
}
