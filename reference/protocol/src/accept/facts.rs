//! The typed facts of one envelope that acceptance decides on (v1.1 §8.1), taken once from
//! the validated [`Envelope`]: nothing downstream reads the raw JSON again for them.

use crate::address::Address;
use crate::envelope::{Envelope, Priority};
use crate::id::{EnvelopeId, ThreadId};
use crate::policy::AudienceOf;
use crate::time::Timestamp;
use serde_json::{Map, Value};

/// `content.structured` as acceptance uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct Structured {
    /// `intent`.
    pub intent: String,
    /// `parameters` (an object, or absent).
    pub parameters: Option<Value>,
    /// `preconditions` (§11.3), when given beside the parameters.
    pub preconditions: Option<Value>,
}

/// What acceptance knows about an envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// `id`.
    pub id: EnvelopeId,
    /// `thread_id`.
    pub thread: ThreadId,
    /// `parent_id`.
    pub parent: Option<EnvelopeId>,
    /// `type`.
    pub kind: String,
    /// `content.structured`, when the content is cleartext and structured.
    pub structured: Option<Structured>,
    /// `from.identity`.
    pub sender: Address,
    /// `from.type` as written.
    pub sender_type: String,
    /// `from.key_id` as written.
    pub key_id: String,
    /// `created_at`.
    pub created_at: Timestamp,
    /// Recipient addresses other than `bcc` (§10.5 bootstrap participants).
    pub visible_recipients: Vec<Address>,
    /// The §8.3 audience.
    pub audience: AudienceOf,
    /// `content.encrypted == true`.
    pub encrypted: bool,
    /// Profile, epoch and replay counter of encrypted content checked in full
    /// ([`Facts::with_encryption`]; v1.1 §7.4).
    pub encryption: Option<crate::e2ee::PayloadHead>,
    /// `from.device_id` (§8.2: replay tracking per device, §23.1).
    pub device_id: Option<String>,
    /// `priority` (`normal` when absent).
    pub priority: Priority,
    /// `content.human.text`, for the search index (§16.6).
    pub human_text: Option<String>,
}

impl Facts {
    /// The facts of a validated envelope.
    pub fn of(envelope: &Envelope) -> Facts {
        let audience = AudienceOf::of(envelope);
        Facts {
            id: envelope.id,
            thread: envelope.thread_id,
            parent: envelope.parent_id,
            kind: envelope.kind.clone(),
            structured: envelope.content.structured.as_ref().map(|s| Structured {
                intent: s.intent.clone(),
                parameters: s.parameters.clone(),
                preconditions: s.preconditions.clone(),
            }),
            sender: envelope.from.identity.clone(),
            sender_type: envelope.from.kind.as_str().to_owned(),
            key_id: envelope.from.key_id.to_string(),
            created_at: envelope.created_at,
            visible_recipients: audience.visible_recipients.clone(),
            audience,
            encrypted: envelope.content.is_encrypted(),
            encryption: None,
            device_id: envelope.from.device_id.clone(),
            priority: envelope.priority.unwrap_or(Priority::Normal),
            human_text: envelope.content.human.as_ref().map(|h| h.text.clone()),
        }
    }

    /// The facts of a validated envelope whose encrypted content (if any) is parsed from
    /// `raw`, the envelope as received: every E2EE member is checked here once (v1.1 §7.4;
    /// DESIGN.md §9), so a malformed package is refused before it reaches a thread.
    pub fn with_encryption(
        envelope: &Envelope,
        raw: &Value,
    ) -> Result<Facts, crate::ProtocolError> {
        let mut facts = Facts::of(envelope);
        if facts.encrypted {
            let content = raw.get("content").unwrap_or(&Value::Null);
            facts.encryption =
                Some(crate::e2ee::EncryptedContent::parse(content, "content")?.head());
        }
        Ok(facts)
    }

    /// `content.structured.intent`.
    pub fn intent(&self) -> Option<&str> {
        self.structured.as_ref().map(|s| s.intent.as_str())
    }

    /// `content.structured.parameters.{name}`.
    pub fn parameter(&self, name: &str) -> Option<&Value> {
        self.structured
            .as_ref()
            .and_then(|s| s.parameters.as_ref())
            .and_then(|p| p.get(name))
    }

    /// `content.structured.parameters.{name}` as a string.
    pub fn str_parameter(&self, name: &str) -> Option<&str> {
        self.parameter(name).and_then(Value::as_str)
    }

    /// The parameters as an object (empty when absent or not an object).
    pub fn parameter_object(&self) -> Map<String, Value> {
        self.structured
            .as_ref()
            .and_then(|s| s.parameters.as_ref())
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    }
}
