//! Access and retention rules a node applies to stored envelopes: audience (v1.1 §8.3,
//! §20.6), encryption requirement (§10.6, §24.2) and legal hold (§25.3).

use crate::address::Address;
use crate::envelope::{AudienceMode, Envelope, RecipientRole};
use crate::error::{ErrorCode, ProtocolError};
use serde_json::Value;
use std::collections::BTreeSet;

/// The label that blocks deletion (v1.1 §25.3).
pub const LEGAL_HOLD_LABEL: &str = "sys.legal_hold";

fn addresses<'a>(items: impl Iterator<Item = &'a Value>) -> impl Iterator<Item = Address> {
    items
        .filter_map(|v| v.as_str())
        .filter_map(|s| Address::parse_wire(s).ok())
}

/// The audience of one envelope as the §8.3 rules read it: the sender, the recipients
/// other readers may see (everyone but `bcc`), the mode and the listed identities. The one
/// place the audience rule lives: [`AudienceOf::admits`] decides a read,
/// [`AudienceOf::readers`] the reader set recorded at acceptance, and both follow the
/// same table (v1.1 §8.3, §11.5, §20.6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AudienceOf {
    /// `from.identity`.
    pub sender: Option<Address>,
    /// Non-bcc recipients (`to[]` with a role other than `bcc`).
    pub visible_recipients: Vec<Address>,
    /// `audience.mode`; `None` when `audience` is omitted (read as `thread`, §8.2).
    pub mode: Option<AudienceMode>,
    /// `audience.identities` (the `custom` list).
    pub listed: Vec<Address>,
    /// A mode this implementation does not know (only in unvalidated stored data): nobody
    /// but the sender may read.
    pub unknown_mode: bool,
}

impl AudienceOf {
    /// The audience of a typed (validated) envelope.
    pub fn of(envelope: &Envelope) -> AudienceOf {
        AudienceOf {
            sender: Some(envelope.from.identity.clone()),
            visible_recipients: envelope
                .to
                .iter()
                .filter(|r| r.role != RecipientRole::Bcc)
                .map(|r| r.identity.clone())
                .collect(),
            mode: envelope.audience.as_ref().map(|a| a.mode),
            listed: envelope
                .audience
                .as_ref()
                .and_then(|a| a.identities.clone())
                .unwrap_or_default(),
            unknown_mode: false,
        }
    }

    /// The audience of a stored envelope (JSON as stored); members that do not parse are
    /// ignored, so a malformed entry never widens the audience.
    pub fn read(envelope: &Value) -> AudienceOf {
        let to = envelope
            .get("to")
            .and_then(Value::as_array)
            .map(|v| v.as_slice())
            .unwrap_or_default();
        let (mode, unknown_mode) = match envelope.pointer("/audience/mode").and_then(Value::as_str)
        {
            None => (None, false),
            Some("thread") => (Some(AudienceMode::Thread), false),
            Some("recipients") => (Some(AudienceMode::Recipients), false),
            Some("custom") => (Some(AudienceMode::Custom), false),
            Some(_) => (None, true),
        };
        AudienceOf {
            sender: envelope
                .pointer("/from/identity")
                .and_then(Value::as_str)
                .and_then(|s| Address::parse_wire(s).ok()),
            visible_recipients: to
                .iter()
                .filter(|r| r.get("role").and_then(Value::as_str) != Some("bcc"))
                .filter_map(|r| r.get("identity").and_then(Value::as_str))
                .filter_map(|s| Address::parse_wire(s).ok())
                .collect(),
            mode,
            listed: envelope
                .pointer("/audience/identities")
                .and_then(Value::as_array)
                .map(|v| addresses(v.iter()).collect())
                .unwrap_or_default(),
            unknown_mode,
        }
    }

    /// May `viewer` read the envelope? (v1.1 §8.3 "Nodes MUST enforce audience in delivery
    /// and retrieval".) `is_thread_participant`: the viewer currently participates in the
    /// envelope's thread. BCC recipients see only their own copy, whose `custom` audience
    /// lists them (§20.6), never the original's `to`.
    pub fn admits(&self, viewer: &Address, is_thread_participant: bool) -> bool {
        if self.sender.as_ref() == Some(viewer) {
            return true;
        }
        if self.unknown_mode {
            return false;
        }
        let visible = || self.visible_recipients.contains(viewer);
        match self.mode {
            None | Some(AudienceMode::Thread) => is_thread_participant || visible(),
            Some(AudienceMode::Recipients) => visible(),
            Some(AudienceMode::Custom) => self.listed.contains(viewer),
        }
    }

    /// [`AudienceOf::admits`] as a §24.2 `AUDIENCE_DENIED` error.
    pub fn check(
        &self,
        viewer: &Address,
        is_thread_participant: bool,
    ) -> Result<(), ProtocolError> {
        if self.admits(viewer, is_thread_participant) {
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

    /// Who may read the envelope once stored: the reader set written to the event log.
    /// `participants`: the thread's current participants after the envelope;
    /// `op_subjects`: identities a thread operation removed, who still receive it (§11.5).
    pub fn readers<'a>(
        &self,
        participants: impl IntoIterator<Item = &'a Address>,
        op_subjects: &[Address],
    ) -> BTreeSet<Address> {
        let mut out = BTreeSet::new();
        out.extend(self.sender.clone());
        match self.mode {
            Some(AudienceMode::Custom) => out.extend(self.listed.iter().cloned()),
            Some(AudienceMode::Recipients) => out.extend(self.visible_recipients.iter().cloned()),
            None | Some(AudienceMode::Thread) => {
                out.extend(self.visible_recipients.iter().cloned());
                out.extend(participants.into_iter().cloned());
                out.extend(op_subjects.iter().cloned());
            }
        }
        out
    }
}

/// May `viewer` see `envelope` (JSON as stored)? [`AudienceOf::read`] + [`AudienceOf::check`].
pub fn check_audience(
    envelope: &Value,
    viewer: &Address,
    is_thread_participant: bool,
) -> Result<(), ProtocolError> {
    AudienceOf::read(envelope).check(viewer, is_thread_participant)
}

/// An envelope naming a `bcc` recipient must be a bcc-copy (v1.1 §8.3, §20.6): exactly one
/// `bcc` recipient (next to the visible To/Cc recipients, since §8.2 still requires a
/// primary one), `audience.mode = "custom"` listing only the sender and that recipient, and
/// `references.linked_envelopes` pointing at the visible envelope. Anything else would show
/// the bcc identity to the other readers, which §8.3 forbids. Only the sender can sign, so
/// the sender's client makes the copies; the node checks their form.
pub fn check_bcc_copy(envelope: &Value) -> Result<(), ProtocolError> {
    let to = envelope
        .get("to")
        .and_then(Value::as_array)
        .map(|v| v.as_slice())
        .unwrap_or_default();
    let is_bcc = |r: &&Value| r.get("role").and_then(Value::as_str) == Some("bcc");
    let bcc: Vec<&Value> = to.iter().filter(is_bcc).collect();
    if bcc.is_empty() {
        return Ok(());
    }
    let bad = |field: &str, rule: &str| {
        Err(ProtocolError::invalid(
            field.to_owned(),
            rule.to_owned(),
            "v1.1 §8.3, §20.6",
        ))
    };
    if bcc.len() != 1 {
        return bad(
            "to",
            "a bcc-copy names exactly one bcc recipient (one copy per recipient)",
        );
    }
    if envelope.pointer("/audience/mode").and_then(Value::as_str) != Some("custom") {
        return bad(
            "audience.mode",
            "a bcc-copy must have audience.mode \"custom\"",
        );
    }
    let listed: Vec<Address> = envelope
        .pointer("/audience/identities")
        .and_then(Value::as_array)
        .map(|v| addresses(v.iter()).collect())
        .unwrap_or_default();
    let allowed: Vec<Address> = [envelope.pointer("/from/identity"), bcc[0].get("identity")]
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().and_then(|s| Address::parse_wire(s).ok()))
        .collect();
    if listed.is_empty() || listed.iter().any(|a| !allowed.contains(a)) {
        return bad(
            "audience.identities",
            "a bcc-copy's audience is the sender and the bcc recipient only",
        );
    }
    let linked = envelope
        .pointer("/references/linked_envelopes")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    if !linked {
        return bad(
            "references.linked_envelopes",
            "a bcc-copy references the visible envelope",
        );
    }
    Ok(())
}

/// An E2EE thread accepts only encrypted payloads (v1.1 §10.6; `ENCRYPTION_REQUIRED`, §24.2).
/// `thread_op` envelopes stay cleartext so nodes can authorize them (§12.4).
pub fn check_encryption_required(
    envelope: &Value,
    thread_encrypted: bool,
) -> Result<(), ProtocolError> {
    let is_op = envelope.get("type").and_then(Value::as_str) == Some("thread_op");
    let encrypted = envelope.pointer("/content/encrypted") == Some(&Value::Bool(true));
    require_encryption(is_op, encrypted, thread_encrypted)
}

/// The §10.6 rule of [`check_encryption_required`] on typed facts.
pub fn require_encryption(
    is_thread_op: bool,
    encrypted: bool,
    thread_encrypted: bool,
) -> Result<(), ProtocolError> {
    if thread_encrypted && !is_thread_op && !encrypted {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn copy() -> Value {
        json!({
            "from": {"identity": "loom://alice@x.test"},
            "to": [{"identity": "loom://dan@x.test", "role": "bcc"}],
            "audience": {"mode": "custom", "identities": ["loom://alice@x.test", "loom://dan@x.test"]},
            "references": {"linked_envelopes": ["env_01JMKB7X9Q2RVHF3KN4TYZPG00"]}
        })
    }

    #[test]
    fn bcc_copies_must_keep_the_bcc_recipient_private() {
        assert!(check_bcc_copy(&copy()).is_ok());
        assert!(
            check_bcc_copy(&json!({"to": [{"identity": "loom://b@x.test", "role": "primary"}]}))
                .is_ok()
        );
        let mut mixed = copy();
        mixed["to"]
            .as_array_mut()
            .unwrap()
            .push(json!({"identity": "loom://bob@x.test", "role": "primary"}));
        assert!(
            check_bcc_copy(&mixed).is_ok(),
            "visible recipients sit next to the bcc one"
        );
        let mut two = copy();
        two["to"]
            .as_array_mut()
            .unwrap()
            .push(json!({"identity": "loom://erin@x.test", "role": "bcc"}));
        assert!(check_bcc_copy(&two).is_err());
        let mut thread = copy();
        thread["audience"]["mode"] = "thread".into();
        assert!(check_bcc_copy(&thread).is_err());
        let mut leak = copy();
        leak["audience"]["identities"]
            .as_array_mut()
            .unwrap()
            .push("loom://bob@x.test".into());
        assert!(check_bcc_copy(&leak).is_err());
        let mut unlinked = copy();
        unlinked["references"] = json!({});
        assert_eq!(
            check_bcc_copy(&unlinked).unwrap_err().code,
            ErrorCode::EnvelopeInvalid
        );
    }
}
