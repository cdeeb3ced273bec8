//! Envelope validation: the field rules of v1.1 §8.1–§8.4, the type rules of §9.2, address
//! rules of §6.1 and the shape of the signature object of §7.3, each mapped to its §24.2
//! code. Validation reads the JSON value itself, not a deserialized struct, so every error
//! names the exact JSON path that broke a rule.

use super::model::{Envelope, SenderType};
use crate::address::Address;
use crate::error::{ErrorCode, ProtocolError};
use crate::id::{AttachmentId, BlobId, EnvelopeId, KeyId, KeyKind, ThreadId};
use crate::keys::b64url_decode;
use crate::time::Timestamp;
use serde_json::{Map, Value};

/// Core envelope types of the v1.1 §9.1 registry. Other types are valid and relayed.
pub const CORE_TYPES: [&str; 10] = [
    "message",
    "task",
    "approval",
    "event",
    "notification",
    "handoff",
    "data",
    "receipt",
    "workflow",
    "thread_op",
];

/// E2EE wire profiles (v1.1 §7.4.1 and the aliases of DESIGN.md §9).
pub const E2EE_PROFILES: [&str; 5] = [
    "loom-e2ee-x25519-xchacha20-v1",
    "loom-e2ee-x25519-xchacha20-v2",
    "loom-e2ee-1",
    "loom-e2ee-2",
    "loom-e2ee-mls-1",
];

/// Intent namespaces a `thread_op` may carry (v1.1 §9.2, §11.8, §12.3, §13.4).
pub const THREAD_OP_NAMESPACES: [&str; 4] =
    ["thread.", "capability.", "encryption.", "delegation."];

/// Validates an envelope and returns its typed form, or the first broken rule (in document
/// order, which is also the order [`validate_envelope_all`] reports).
pub fn validate_envelope(v: &Value) -> Result<Envelope, ProtocolError> {
    if let Some(first) = validate_envelope_all(v).into_iter().next() {
        return Err(first);
    }
    serde_json::from_value(v.clone()).map_err(|e| {
        // Unreachable when the rules above are complete; kept as a clear error, never a panic.
        ProtocolError::invalid(
            "$",
            format!("envelope does not match the v1.1 §8.1 model: {e}"),
            "v1.1 §8.1",
        )
    })
}

/// Every broken rule of an envelope, in document order.
pub fn validate_envelope_all(v: &Value) -> Vec<ProtocolError> {
    let mut c = Checker::default();
    let Some(obj) = v.as_object() else {
        c.bad("$", "an envelope is a JSON object", "v1.1 §8.1");
        return c.errors;
    };
    c.loom_version(obj);
    let id = c.id::<EnvelopeId>(obj, "id", true, EnvelopeId::parse);
    c.id::<ThreadId>(obj, "thread_id", true, ThreadId::parse);
    if obj.get("parent_id").is_some_and(Value::is_array) {
        c.bad(
            "parent_id",
            "a single parent: parent_id references at most one envelope, not a list",
            "v1.1 §10.2",
        );
    } else if let Some(parent) = c.id::<EnvelopeId>(obj, "parent_id", false, EnvelopeId::parse)
        && Some(parent) == id
    {
        c.bad(
            "parent_id",
            "an envelope cannot be its own parent (cycle)",
            "v1.1 §10.2",
        );
    }
    let kind = c.envelope_type(obj);
    c.from(obj);
    c.to(obj);
    c.audience(obj);
    c.timestamp(obj, "created_at", true);
    c.timestamp(obj, "expires_at", false);
    c.priority(obj);
    c.content(obj, kind.as_deref());
    c.attachments(obj);
    c.references(obj);
    c.string_list(obj, "capabilities", "v1.1 §8.1");
    c.string_list(obj, "labels", "v1.1 §8.1");
    c.signature(obj);
    if let Some(meta) = obj.get("meta")
        && !meta.is_object()
        && !meta.is_null()
    {
        c.bad("meta", "meta, when present, is an object", "v1.1 §8.1");
    }
    c.errors
}

#[derive(Default)]
struct Checker {
    errors: Vec<ProtocolError>,
}

/// Present and not `null`.
fn present<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

impl Checker {
    fn bad(&mut self, field: impl Into<String>, rule: impl Into<String>, section: &'static str) {
        self.errors
            .push(ProtocolError::invalid(field, rule, section));
    }

    fn coded(
        &mut self,
        code: ErrorCode,
        field: impl Into<String>,
        rule: impl Into<String>,
        section: &'static str,
    ) {
        self.errors
            .push(ProtocolError::new(code, field, rule, section));
    }

    /// `loom` MUST be `"1.1"` (v1.1 §8.2).
    fn loom_version(&mut self, obj: &Map<String, Value>) {
        match obj.get("loom") {
            Some(Value::String(s)) if s == crate::LOOM_VERSION => {}
            Some(_) => self.bad("loom", "loom must be the string \"1.1\"", "v1.1 §8.2"),
            None => self.bad("loom", "loom is required", "v1.1 §8.2"),
        }
    }

    /// A prefixed ULID member (v1.1 §8.4). `required=false` accepts absent or `null`.
    fn id<T>(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        required: bool,
        parse: fn(&str) -> Result<T, crate::id::IdError>,
    ) -> Option<T> {
        self.id_at(present(obj, key), key, required, parse)
    }

    fn id_at<T>(
        &mut self,
        v: Option<&Value>,
        path: &str,
        required: bool,
        parse: fn(&str) -> Result<T, crate::id::IdError>,
    ) -> Option<T> {
        match v {
            None if required => {
                self.bad(path, format!("{path} is required"), "v1.1 §8.2");
                None
            }
            None => None,
            Some(Value::String(s)) => match parse(s) {
                Ok(id) => Some(id),
                Err(e) => {
                    self.bad(path, e.to_string(), "v1.1 §8.4");
                    None
                }
            },
            Some(_) => {
                self.bad(path, format!("{path} must be a string"), "v1.1 §8.4");
                None
            }
        }
    }

    /// `type` MUST be present; unknown values are accepted (v1.1 §9.1).
    fn envelope_type(&mut self, obj: &Map<String, Value>) -> Option<String> {
        match obj.get("type") {
            // Any non-empty string: nodes MUST accept unknown types (§9.1); the payload
            // limit bounds its size.
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::String(_)) => {
                self.bad("type", "type must be a non-empty string", "v1.1 §9.1");
                None
            }
            Some(_) => {
                self.bad("type", "type must be a string", "v1.1 §9.1");
                None
            }
            None => {
                self.bad("type", "type is required", "v1.1 §8.2");
                None
            }
        }
    }

    /// An address as it must appear in an envelope: canonical lowercase, no fragment (v1.1 §6.1).
    fn address(&mut self, v: Option<&Value>, path: &str) -> Option<Address> {
        match v {
            Some(Value::String(s)) => match Address::parse_wire(s) {
                Ok(a) => Some(a),
                Err(e) => {
                    self.bad(path, e.reason, "v1.1 §6.1");
                    None
                }
            },
            Some(_) => {
                self.bad(path, "an address is a string", "v1.1 §6.1");
                None
            }
            None => {
                self.bad(path, format!("{path} is required"), "v1.1 §8.1");
                None
            }
        }
    }

    /// `from` (v1.1 §8.1, §8.2, §6.1, §13.5).
    fn from(&mut self, obj: &Map<String, Value>) {
        let Some(from) = obj.get("from") else {
            self.bad("from", "from is required", "v1.1 §8.2");
            return;
        };
        let Some(from) = from.as_object() else {
            self.bad("from", "from must be an object", "v1.1 §8.1");
            return;
        };
        let identity = self.address(from.get("identity"), "from.identity");
        if let Some(d) = present(from, "display")
            && !d.is_string()
        {
            self.bad("from.display", "from.display must be a string", "v1.1 §8.1");
        }
        match from.get("key_id") {
            Some(Value::String(s)) => {
                if let Err(e) = KeyId::parse(s, KeyKind::Signing) {
                    self.bad("from.key_id", e.to_string(), "v1.1 §8.4");
                }
            }
            Some(_) => self.bad("from.key_id", "from.key_id must be a string", "v1.1 §8.1"),
            None => self.bad(
                "from.key_id",
                "from.key_id (the signing key reference) is required",
                "v1.1 §8.2",
            ),
        }
        let kind = match from.get("type") {
            Some(Value::String(s)) => match SenderType::parse(s) {
                Some(k) => Some(k),
                None => {
                    self.bad(
                        "from.type",
                        "from.type must be human, agent, team, service or bridge",
                        "v1.1 §8.1",
                    );
                    None
                }
            },
            Some(_) => {
                self.bad("from.type", "from.type must be a string", "v1.1 §8.1");
                None
            }
            None => {
                self.bad("from.type", "from.type is required", "v1.1 §8.1");
                None
            }
        };
        if let (Some(identity), Some(kind)) = (&identity, kind)
            && identity.is_bridge()
            && kind != SenderType::Bridge
        {
            self.bad(
                "from.type",
                "bridge:// identities are reserved for bridged senders (from.type \"bridge\")",
                "v1.1 §6.1",
            );
        }
        if let Some(d) = present(from, "device_id") {
            match d.as_str() {
                Some(s) if (1..=128).contains(&s.chars().count()) => {}
                _ => self.bad(
                    "from.device_id",
                    "from.device_id must be a string of 1 to 128 characters",
                    "v1.1 §8.2",
                ),
            }
        }
        match (kind, present(from, "delegation_chain")) {
            (Some(SenderType::Agent), Some(Value::Array(links))) if !links.is_empty() => {
                for (i, link) in links.iter().enumerate() {
                    if !link.is_object() {
                        self.coded(
                            ErrorCode::DelegationInvalid,
                            format!("from.delegation_chain[{i}]"),
                            "each delegation link is an object",
                            "v1.1 §13.1",
                        );
                    }
                }
            }
            (Some(SenderType::Agent), _) => self.coded(
                ErrorCode::DelegationInvalid,
                "from.delegation_chain",
                "agent envelopes must include the full, non-empty delegation chain",
                "v1.1 §13.5",
            ),
            (_, Some(chain)) if !chain.is_array() => self.bad(
                "from.delegation_chain",
                "from.delegation_chain must be an array",
                "v1.1 §8.1",
            ),
            _ => {}
        }
    }

    /// `to`: at least one recipient, at least one `primary` (v1.1 §8.2).
    fn to(&mut self, obj: &Map<String, Value>) {
        let Some(to) = obj.get("to") else {
            self.bad("to", "to is required", "v1.1 §8.2");
            return;
        };
        let Some(list) = to.as_array() else {
            self.bad("to", "to must be an array", "v1.1 §8.1");
            return;
        };
        let mut primary = false;
        for (i, r) in list.iter().enumerate() {
            let path = format!("to[{i}]");
            let Some(r) = r.as_object() else {
                self.bad(path, "each recipient is an object", "v1.1 §8.1");
                continue;
            };
            self.address(r.get("identity"), &format!("{path}.identity"));
            match r.get("role").and_then(Value::as_str) {
                Some("primary") => primary = true,
                Some("cc" | "observer" | "bcc") => {}
                _ => self.bad(
                    format!("{path}.role"),
                    "role must be primary, cc, observer or bcc",
                    "v1.1 §8.1",
                ),
            }
        }
        if !primary {
            self.bad(
                "to",
                "to must contain at least one primary recipient",
                "v1.1 §8.2",
            );
        }
    }

    /// `audience` (v1.1 §8.3).
    fn audience(&mut self, obj: &Map<String, Value>) {
        let Some(a) = present(obj, "audience") else {
            return;
        };
        let Some(a) = a.as_object() else {
            self.bad("audience", "audience must be an object", "v1.1 §8.3");
            return;
        };
        let mode = a.get("mode").and_then(Value::as_str);
        if !matches!(mode, Some("thread" | "recipients" | "custom")) {
            self.bad(
                "audience.mode",
                "audience.mode must be thread, recipients or custom",
                "v1.1 §8.3",
            );
        }
        match present(a, "identities") {
            Some(Value::Array(ids)) => {
                for (i, id) in ids.iter().enumerate() {
                    self.address(Some(id), &format!("audience.identities[{i}]"));
                }
                if mode == Some("custom") && ids.is_empty() {
                    self.bad(
                        "audience.identities",
                        "custom audience must list at least one identity",
                        "v1.1 §8.3",
                    );
                }
            }
            Some(_) => self.bad(
                "audience.identities",
                "audience.identities must be an array",
                "v1.1 §8.3",
            ),
            None if mode == Some("custom") => self.bad(
                "audience.identities",
                "custom audience must list its identities",
                "v1.1 §8.3",
            ),
            None => {}
        }
    }

    /// An ISO 8601 timestamp with zone (v1.1 §8.2, Appendix D).
    fn timestamp(&mut self, obj: &Map<String, Value>, key: &str, required: bool) {
        match present(obj, key) {
            None if required => self.bad(key, format!("{key} is required"), "v1.1 §8.2"),
            None => {}
            Some(Value::String(s)) => {
                if let Err(e) = Timestamp::parse(s) {
                    self.bad(key, e.to_string(), "v1.1 Appendix D");
                }
            }
            Some(_) => self.bad(
                key,
                format!("{key} must be an ISO 8601 string"),
                "v1.1 §8.2",
            ),
        }
    }

    fn priority(&mut self, obj: &Map<String, Value>) {
        if let Some(p) = present(obj, "priority")
            && !matches!(p.as_str(), Some("low" | "normal" | "high" | "urgent"))
        {
            self.bad(
                "priority",
                "priority must be low, normal, high or urgent",
                "v1.1 §8.1",
            );
        }
    }

    /// `content` (v1.1 §8.2), type rules (§9.2), intents (§18.1) and encrypted content (§7.4).
    fn content(&mut self, obj: &Map<String, Value>, kind: Option<&str>) {
        let Some(content) = obj.get("content") else {
            self.bad("content", "content is required", "v1.1 §8.2");
            return;
        };
        let Some(content) = content.as_object() else {
            self.bad("content", "content must be an object", "v1.1 §8.1");
            return;
        };
        let encrypted = match content.get("encrypted") {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => {
                self.bad(
                    "content.encrypted",
                    "content.encrypted must be a boolean",
                    "v1.1 §8.1",
                );
                return;
            }
        };
        if encrypted {
            self.encrypted_content(content, kind);
            return;
        }
        let human = present(content, "human");
        let structured = present(content, "structured");
        if human.is_none() && structured.is_none() {
            self.bad(
                "content",
                "content must carry human or structured content in cleartext",
                "v1.1 §8.2",
            );
        }
        if let Some(h) = human {
            match h.as_object() {
                Some(h) => {
                    if !h.get("text").is_some_and(Value::is_string) {
                        self.bad(
                            "content.human.text",
                            "content.human.text must be a string",
                            "v1.1 §8.1",
                        );
                    }
                    if let Some(f) = present(h, "format")
                        && !matches!(f.as_str(), Some("markdown" | "plaintext" | "html"))
                    {
                        self.bad(
                            "content.human.format",
                            "format must be markdown, plaintext or html",
                            "v1.1 §8.1",
                        );
                    }
                    if let Some(l) = present(h, "locale")
                        && !l.is_string()
                    {
                        self.bad(
                            "content.human.locale",
                            "locale must be a BCP 47 string",
                            "v1.1 §8.1",
                        );
                    }
                }
                None => self.bad(
                    "content.human",
                    "content.human must be an object",
                    "v1.1 §8.1",
                ),
            }
        }
        let mut intent = None;
        if let Some(s) = structured {
            match s.as_object() {
                Some(s) => {
                    match s.get("intent") {
                        Some(Value::String(i)) if is_versioned_intent(i) => {
                            intent = Some(i.as_str())
                        }
                        Some(Value::String(_)) => self.bad(
                            "content.structured.intent",
                            "intent must be namespaced and versioned: namespace.action@vN",
                            "v1.1 §18.1",
                        ),
                        _ => self.bad(
                            "content.structured.intent",
                            "content.structured.intent is required (a string)",
                            "v1.1 §8.1",
                        ),
                    }
                    if let Some(p) = present(s, "parameters")
                        && !p.is_object()
                    {
                        self.bad(
                            "content.structured.parameters",
                            "parameters must be an object",
                            "v1.1 §8.1",
                        );
                    }
                    if let Some(r) = present(s, "response_schema")
                        && !r.is_string()
                    {
                        self.bad(
                            "content.structured.response_schema",
                            "response_schema must be a URI string or null",
                            "v1.1 §18.1",
                        );
                    }
                }
                None => self.bad(
                    "content.structured",
                    "content.structured must be an object",
                    "v1.1 §8.1",
                ),
            }
        }
        match kind {
            Some("message") if human.is_none() => {
                self.bad("content.human", "message envelopes require content.human", "v1.1 §9.2")
            }
            Some("receipt") if structured.is_none() => {
                self.bad("content.structured", "receipt envelopes require content.structured", "v1.1 §9.2")
            }
            Some("task") => match (structured, intent) {
                (None, _) => self.bad("content.structured", "task envelopes require content.structured", "v1.1 §9.2"),
                (Some(_), Some(i)) if !i.starts_with("task.") => {
                    self.bad("content.structured.intent", "task intents must be task.*@vN", "v1.1 §9.2")
                }
                _ => {}
            },
            Some("thread_op") => match (structured, intent) {
                (None, _) => self.bad("content.structured", "thread_op envelopes require content.structured", "v1.1 §11.1"),
                (Some(_), Some(i)) if !THREAD_OP_NAMESPACES.iter().any(|ns| i.starts_with(ns)) => self.bad(
                    "content.structured.intent",
                    "thread_op intents must be thread.*, capability.*, encryption.* or delegation.* @vN",
                    "v1.1 §9.2",
                ),
                _ => {}
            },
            _ => {}
        }
    }

    /// Encrypted content (v1.1 §7.4; package shape per DESIGN.md §9).
    fn encrypted_content(&mut self, content: &Map<String, Value>, kind: Option<&str>) {
        if kind == Some("thread_op") {
            self.bad(
                "content.encrypted",
                "thread_op content must be cleartext so nodes can authorize it",
                "v1.1 §12.4",
            );
        }
        for key in ["human", "structured"] {
            if present(content, key).is_some() {
                self.bad(
                    format!("content.{key}"),
                    "encrypted content must not also carry cleartext",
                    "v1.1 §7.4",
                );
            }
        }
        match content.get("profile").and_then(Value::as_str) {
            Some(p) if E2EE_PROFILES.contains(&p) => {}
            Some(_) => self.bad(
                "content.profile",
                "unknown E2EE profile (fail closed)",
                "v1.1 §7.4.2",
            ),
            None => self.bad(
                "content.profile",
                "encrypted content must name its E2EE profile",
                "v1.1 §7.4",
            ),
        }
        if content.get("epoch").is_none_or(|e| e.as_u64().is_none()) {
            self.bad(
                "content.epoch",
                "encrypted content must carry a non-negative integer epoch",
                "v1.1 §10.6",
            );
        }
        if let Some(rc) = present(content, "replay_counter")
            && rc.as_u64().is_none()
        {
            self.bad(
                "content.replay_counter",
                "replay_counter must be a non-negative integer",
                "v1.1 §23.1",
            );
        }
        self.b64url_member(
            content,
            "profile_commitment",
            false,
            "content.profile_commitment",
        );
        self.b64url_member(content, "ciphertext", true, "content.ciphertext");
        if let Some(w) = present(content, "wrapped_keys") {
            match w.as_array() {
                Some(keys) => {
                    for (i, k) in keys.iter().enumerate() {
                        let path = format!("content.wrapped_keys[{i}]");
                        match k.as_object() {
                            Some(k) => {
                                self.address(k.get("to"), &format!("{path}.to"));
                                self.b64url_member(
                                    k,
                                    "ciphertext",
                                    true,
                                    &format!("{path}.ciphertext"),
                                );
                            }
                            None => self.bad(path, "each wrapped key is an object", "v1.1 §7.4"),
                        }
                    }
                }
                None => self.bad(
                    "content.wrapped_keys",
                    "wrapped_keys must be an array",
                    "v1.1 §7.4",
                ),
            }
        }
    }

    fn b64url_member(&mut self, obj: &Map<String, Value>, key: &str, required: bool, path: &str) {
        match present(obj, key) {
            None if required => self.bad(path, format!("{path} is required"), "v1.1 §7.4"),
            None => {}
            Some(Value::String(s)) if !s.is_empty() && b64url_decode(s).is_ok() => {}
            Some(_) => self.bad(
                path,
                format!("{path} must be non-empty base64url"),
                "v1.1 Appendix D",
            ),
        }
    }

    /// `attachments` (v1.1 §8.1).
    fn attachments(&mut self, obj: &Map<String, Value>) {
        let Some(a) = present(obj, "attachments") else {
            return;
        };
        let Some(list) = a.as_array() else {
            self.bad("attachments", "attachments must be an array", "v1.1 §8.1");
            return;
        };
        for (i, att) in list.iter().enumerate() {
            let path = format!("attachments[{i}]");
            let Some(att) = att.as_object() else {
                self.bad(path, "each attachment is an object", "v1.1 §8.1");
                continue;
            };
            self.id_at(
                att.get("id"),
                &format!("{path}.id"),
                true,
                AttachmentId::parse,
            );
            self.id_at(
                att.get("blob_id"),
                &format!("{path}.blob_id"),
                true,
                BlobId::parse,
            );
            match att.get("hash").and_then(Value::as_str) {
                Some(h) if is_sha256_ref(h) => {}
                _ => self.bad(
                    format!("{path}.hash"),
                    "hash must be sha256: followed by 64 lowercase hex digits",
                    "v1.1 §8.1",
                ),
            }
            if let Some(s) = present(att, "size_bytes")
                && s.as_u64().is_none()
            {
                self.bad(
                    format!("{path}.size_bytes"),
                    "size_bytes must be a non-negative integer",
                    "v1.1 §8.1",
                );
            }
            for key in ["filename", "mime_type"] {
                if let Some(s) = present(att, key)
                    && !s.is_string()
                {
                    self.bad(
                        format!("{path}.{key}"),
                        format!("{key} must be a string"),
                        "v1.1 §8.1",
                    );
                }
            }
            if let Some(m) = present(att, "mime_type").and_then(Value::as_str)
                && !is_mime_type(m)
            {
                self.bad(
                    format!("{path}.mime_type"),
                    "mime_type must be type/subtype",
                    "v1.1 §8.1",
                );
            }
            if let Some(b) = present(att, "inline")
                && !b.is_boolean()
            {
                self.bad(
                    format!("{path}.inline"),
                    "inline must be a boolean",
                    "v1.1 §8.1",
                );
            }
        }
    }

    /// `references` (v1.1 §8.1).
    fn references(&mut self, obj: &Map<String, Value>) {
        let Some(r) = present(obj, "references") else {
            return;
        };
        let Some(r) = r.as_object() else {
            self.bad("references", "references must be an object", "v1.1 §8.1");
            return;
        };
        self.id_at(
            present(r, "in_reply_to"),
            "references.in_reply_to",
            false,
            EnvelopeId::parse,
        );
        self.id_list(r, "linked_envelopes", EnvelopeId::parse);
        self.id_list(r, "linked_threads", ThreadId::parse);
        if let Some(ext) = present(r, "external") {
            let Some(list) = ext.as_array() else {
                self.bad(
                    "references.external",
                    "external must be an array",
                    "v1.1 §8.1",
                );
                return;
            };
            for (i, e) in list.iter().enumerate() {
                let path = format!("references.external[{i}]");
                let kind = e.get("type").and_then(Value::as_str);
                if !matches!(
                    kind,
                    Some("url" | "email_message_id" | "issue" | "document")
                ) {
                    self.bad(
                        format!("{path}.type"),
                        "type must be url, email_message_id, issue or document",
                        "v1.1 §8.1",
                    );
                }
                if !e.get("ref").is_some_and(Value::is_string) {
                    self.bad(format!("{path}.ref"), "ref must be a string", "v1.1 §8.1");
                }
            }
        }
    }

    fn id_list<T>(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        parse: fn(&str) -> Result<T, crate::id::IdError>,
    ) {
        let path = format!("references.{key}");
        match present(obj, key) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    self.id_at(Some(item), &format!("{path}[{i}]"), true, parse);
                }
            }
            Some(_) => self.bad(path, format!("{key} must be an array"), "v1.1 §8.1"),
        }
    }

    fn string_list(&mut self, obj: &Map<String, Value>, key: &str, section: &'static str) {
        match present(obj, key) {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if item.as_str().is_none_or(|s| s.is_empty()) {
                        self.bad(
                            format!("{key}[{i}]"),
                            format!("{key} entries must be non-empty strings"),
                            section,
                        );
                    }
                }
            }
            Some(_) => self.bad(key, format!("{key} must be an array of strings"), section),
        }
    }

    /// The signature object (v1.1 §7.3): algorithm Ed25519, the key reference of `from`,
    /// a base64url value, an optional context.
    fn signature(&mut self, obj: &Map<String, Value>) {
        let Some(sig) = obj.get("signature") else {
            self.coded(
                ErrorCode::SignatureInvalid,
                "signature",
                "all envelopes must be signed",
                "v1.1 §7.1",
            );
            return;
        };
        let Some(sig) = sig.as_object() else {
            self.coded(
                ErrorCode::SignatureInvalid,
                "signature",
                "signature must be an object",
                "v1.1 §8.1",
            );
            return;
        };
        if sig.get("algorithm").and_then(Value::as_str) != Some("Ed25519") {
            self.coded(
                ErrorCode::SignatureInvalid,
                "signature.algorithm",
                "signature.algorithm must be \"Ed25519\"",
                "v1.1 §7.1",
            );
        }
        match sig.get("key_id").and_then(Value::as_str) {
            Some(k) => {
                if KeyId::parse(k, KeyKind::Signing).is_err() {
                    self.coded(
                        ErrorCode::SignatureInvalid,
                        "signature.key_id",
                        "signature.key_id must be a k_sign_ key ID",
                        "v1.1 §8.4",
                    );
                } else if obj
                    .get("from")
                    .and_then(|f| f.get("key_id"))
                    .and_then(Value::as_str)
                    .is_some_and(|f| f != k)
                {
                    self.coded(
                        ErrorCode::SignatureInvalid,
                        "signature.key_id",
                        "signature.key_id must equal from.key_id, the sender's signing key reference",
                        "v1.1 §7.3",
                    );
                }
            }
            None => self.coded(
                ErrorCode::SignatureInvalid,
                "signature.key_id",
                "signature.key_id is required",
                "v1.1 §7.3",
            ),
        }
        match sig.get("value").and_then(Value::as_str).map(b64url_decode) {
            Some(Ok(b)) if b.len() == 64 => {}
            _ => self.coded(
                ErrorCode::SignatureInvalid,
                "signature.value",
                "signature.value must be a base64url Ed25519 signature (64 bytes)",
                "v1.1 §7.3",
            ),
        }
        if let Some(ctx) = sig.get("context")
            && !ctx.is_string()
            && !ctx.is_null()
        {
            self.coded(
                ErrorCode::SignatureInvalid,
                "signature.context",
                "signature.context must be a string",
                "v1.1 §7.3",
            );
        }
    }
}

/// `namespace.action@vN`: dot-separated segments (at least two) of `[A-Za-z0-9_-]` and a
/// major version suffix (v1.1 §18.1; EXTENSION-REGISTRY "Identifier Rules" 3). Every intent
/// the spec names is lowercase, but no rule requires it, so case is not judged here.
pub fn is_versioned_intent(s: &str) -> bool {
    let Some((name, version)) = s.rsplit_once("@v") else {
        return false;
    };
    let version_ok = !version.is_empty()
        && version.bytes().all(|c| c.is_ascii_digit())
        && !version.starts_with('0');
    let segments: Vec<&str> = name.split('.').collect();
    version_ok
        && segments.len() >= 2
        && segments.iter().all(|seg| {
            !seg.is_empty()
                && seg
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        })
}

/// The intent without its `@vN` suffix: `task.create@v1` → `task.create`.
pub fn intent_action(intent: &str) -> &str {
    intent.rsplit_once("@v").map_or(intent, |(name, _)| name)
}

fn is_sha256_ref(h: &str) -> bool {
    h.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    })
}

/// An attachment's `mime_type` is `type/subtype` of RFC 6838 token characters (parameters
/// after `;` allowed) (v1.1 §8.1).
pub fn is_mime_type(m: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
    };
    let base = m.split(';').next().unwrap_or("").trim();
    base.split_once('/')
        .is_some_and(|(t, st)| token(t) && token(st))
}

/// Rejects an envelope whose canonical form (RFC 8785, without `meta`) is larger than the
/// node's `max_envelope_bytes` (v1.1 §24.2 `PAYLOAD_TOO_LARGE`; 0 = no limit). The one
/// statement of this rule: the acceptance core and the vectors' reference both call it.
pub fn check_envelope_size(len: usize, limit: usize) -> Result<(), ProtocolError> {
    if limit != 0 && len > limit {
        return Err(ProtocolError::new(
            ErrorCode::PayloadTooLarge,
            "$body",
            format!(
                "the envelope is {len} bytes in canonical form; this node accepts at most \
                 {limit} (max_envelope_bytes)"
            ),
            "v1.1 §24.2",
        ));
    }
    Ok(())
}
