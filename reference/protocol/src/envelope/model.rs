//! The typed envelope of v1.1 §8.1.
//!
//! The typed form is for building and reading envelopes. Signatures are always computed
//! over the JSON object as received (see [`super::sign`]) so that members this model does
//! not name — future fields, extension data — stay covered by the signature. The typed
//! view normalizes as it reads (timestamps are written back as `…T…:…:….sssZ`, explicit
//! `null`s of optional members are dropped, unknown members below the top level, `from`
//! and `content` are not kept), so verify, store and relay the JSON value, never a
//! re-serialized typed envelope.

use crate::address::Address;
use crate::id::{AttachmentId, BlobId, EnvelopeId, KeyId, ThreadId};
use crate::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A LOOM envelope (v1.1 §8.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Protocol version, `"1.1"`.
    pub loom: String,
    /// `env_` + ULID.
    pub id: EnvelopeId,
    /// `thr_` + ULID.
    pub thread_id: ThreadId,
    /// Parent envelope; `null` for thread roots (serialized explicitly, v1.1 §8.2).
    pub parent_id: Option<EnvelopeId>,
    /// Envelope type (v1.1 §9.1); unknown types are valid.
    #[serde(rename = "type")]
    pub kind: String,
    /// Sender.
    pub from: Sender,
    /// Recipients.
    pub to: Vec<Recipient>,
    /// Who may see the envelope (v1.1 §8.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Audience>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Optional expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    /// Dual content block.
    pub content: Content,
    /// Attachments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attachments: Option<Vec<Attachment>>,
    /// References to other envelopes, threads and external resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub references: Option<References>,
    /// What the sender permits recipients to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Vec<String>>,
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// Signature (absent while building).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<EnvelopeSignature>,
    /// Node-local metadata, excluded from the signature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// Members this model does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Identity types an envelope sender may have (v1.1 §8.1 `from.type`, §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SenderType {
    /// A natural person.
    Human,
    /// An AI agent acting on someone's behalf.
    Agent,
    /// A group address.
    Team,
    /// A non-agent automated system.
    Service,
    /// An identity proxied from email.
    Bridge,
}

impl SenderType {
    /// Wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SenderType::Human => "human",
            SenderType::Agent => "agent",
            SenderType::Team => "team",
            SenderType::Service => "service",
            SenderType::Bridge => "bridge",
        }
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Human,
            Self::Agent,
            Self::Team,
            Self::Service,
            Self::Bridge,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// The `from` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sender {
    /// Sender address.
    pub identity: Address,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Signing key reference; equals `signature.key_id`.
    pub key_id: KeyId,
    /// Sender identity type.
    #[serde(rename = "type")]
    pub kind: SenderType,
    /// Device identifier for multi-device replay tracking (1–128 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
    /// Delegation links, root first (required for agents, v1.1 §13.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation_chain: Option<Vec<Value>>,
    /// Members this model does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Recipient roles (v1.1 §8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecipientRole {
    /// Primary recipient.
    Primary,
    /// Carbon copy.
    Cc,
    /// Observer.
    Observer,
    /// Blind carbon copy: never revealed to other recipients (v1.1 §8.3).
    Bcc,
}

/// One entry of `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipient {
    /// Recipient address.
    pub identity: Address,
    /// Role.
    pub role: RecipientRole,
}

/// Audience modes (v1.1 §8.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudienceMode {
    /// Thread participants per capability rules (the default).
    Thread,
    /// Sender and explicit recipients only.
    Recipients,
    /// Sender and the listed identities only.
    Custom,
}

/// The `audience` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Audience {
    /// Mode.
    pub mode: AudienceMode,
    /// Listed identities (required for `custom`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identities: Option<Vec<Address>>,
}

/// Envelope priorities, in increasing order (v1.1 §8.1; `max_priority` in §12.1 compares them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Low.
    Low,
    /// Normal (the default, v1.0 §8.2).
    Normal,
    /// High.
    High,
    /// Urgent.
    Urgent,
}

impl Priority {
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "low" => Some(Priority::Low),
            "normal" => Some(Priority::Normal),
            "high" => Some(Priority::High),
            "urgent" => Some(Priority::Urgent),
            _ => None,
        }
    }
}

/// The dual content block (v1.1 §8.1), cleartext or encrypted (§7.4, DESIGN.md §9).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Content {
    /// Human-readable part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<HumanContent>,
    /// Machine-readable part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredContent>,
    /// Whether the payload is end-to-end encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// Other members (E2EE profile, epoch, ciphertext, wrapped keys, …).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Content {
    /// True when `encrypted` is `true`.
    pub fn is_encrypted(&self) -> bool {
        self.encrypted == Some(true)
    }

    /// The structured intent, if the content is cleartext and has one.
    pub fn intent(&self) -> Option<&str> {
        self.structured.as_ref().map(|s| s.intent.as_str())
    }
}

/// `content.human`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HumanContent {
    /// The text.
    pub text: String,
    /// `markdown`, `plaintext` or `html`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// BCP 47 locale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locale: Option<String>,
}

/// `content.structured`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredContent {
    /// Versioned intent, `namespace.action@vN` (v1.1 §18.1).
    pub intent: String,
    /// Parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// URI of the expected reply structure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// Preconditions of a thread operation (v1.1 §11.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Value>,
}

/// An attachment reference (v1.1 §8.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    /// `att_` + ULID.
    pub id: AttachmentId,
    /// File name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// `sha256:` + lowercase hex.
    pub hash: String,
    /// `blob_` + ULID.
    pub blob_id: BlobId,
    /// Inline display hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<bool>,
    /// Per-attachment encryption block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Value>,
}

/// The `references` block (v1.1 §8.1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct References {
    /// Envelope replied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<EnvelopeId>,
    /// Linked envelopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_envelopes: Option<Vec<EnvelopeId>>,
    /// Linked threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked_threads: Option<Vec<ThreadId>>,
    /// External references.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<Vec<ExternalRef>>,
}

/// An external reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalRef {
    /// `url`, `email_message_id`, `issue` or `document`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The referenced value.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// The envelope `signature` object (v1.1 §7.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// Always `"Ed25519"`.
    pub algorithm: String,
    /// Key that signed.
    pub key_id: KeyId,
    /// base64url Ed25519 signature.
    pub value: String,
    /// `"LOOM-ENVELOPE-SIG-v1"` for context-prefixed signatures; absent on legacy ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}
