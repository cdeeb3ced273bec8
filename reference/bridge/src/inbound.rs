//! Email → LOOM (v1.1 §21.2, v1.0 §19.2): one received message becomes one visible
//! envelope and, for local recipients the headers do not show, one bcc-copy each (v1.1
//! §20.6) — unsigned drafts the node signs with its bridge key and admits like any other
//! envelope. Pure: the message, its authentication results, the thread index and the ids
//! come in; the drafts come out.
//!
//! **Where the spec is silent (written down here and in the README):**
//! - *Who signs.* A bridged envelope is authored by the bridge on behalf of
//!   `bridge://{email}`; the node signs it with its bridge key (`from.key_id`), which it
//!   publishes as the signing key of every `bridge://` identity it created. Nothing the mail
//!   sender controls is trusted as a LOOM signature.
//! - *The sender* is the RFC 5322 `From` address (what DMARC authenticates); mail without
//!   exactly one `From` address is refused (never attributed to the SMTP reverse path).
//! - *Subject* goes to `content.structured.parameters.subject` and `original_headers`.
//! - *`created_at`* is the time the bridge received the message; the sender's `Date` header
//!   is kept in `original_headers`.
//! - *Threading* follows only ids the node itself recorded (messages it received or sent),
//!   never an `X-LOOM-Thread-ID` header a mail sender could forge.

use crate::auth::{AuthResults, Disposition};
use loom_protocol::Address;
use mail_parser::{MessageParser, MimeHeaders};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The intent of a bridged message whose structure could not be extracted (v1.0 §19.2
/// step 5: "set `intent: "message.general@v1"` with `extraction_confidence: 0.3`").
pub const GENERAL_INTENT: &str = "message.general@v1";
/// The extraction confidence of [`GENERAL_INTENT`] (v1.0 §19.2).
pub const GENERAL_CONFIDENCE: f64 = 0.3;
/// The label of quarantined mail (v1.1 §20.1, §21.5).
pub const QUARANTINE_LABEL: &str = "sys.quarantine";

/// Where earlier messages of a conversation live (ids the node recorded).
pub trait MessageIndex {
    /// The thread and envelope of the message with `message_id` (angle brackets removed).
    fn find(&self, message_id: &str) -> Option<(String, String)>;
}

/// An index that knows nothing (every message starts a thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoIndex;

impl MessageIndex for NoIndex {
    fn find(&self, _: &str) -> Option<(String, String)> {
        None
    }
}

/// Settings of the mapping.
#[derive(Debug, Clone)]
pub struct InboundSettings {
    /// `from.key_id` of bridged envelopes: the node's bridge key.
    pub key_id: String,
    /// Operator opt-in to automatic actuation from authenticated bridged senders
    /// (LOOM-CORE "Bridge Safety Baseline"; off by default).
    pub auto_actuation: bool,
    /// Most attachments taken from one message.
    pub max_attachments: usize,
    /// Most bytes of `original_headers` kept (the rest is dropped and counted).
    pub max_header_bytes: usize,
}

impl InboundSettings {
    /// Defaults with `key_id`.
    pub fn new(key_id: impl Into<String>) -> Self {
        Self {
            key_id: key_id.into(),
            auto_actuation: false,
            max_attachments: 32,
            max_header_bytes: 64 * 1024,
        }
    }
}

/// An attachment whose bytes the node stores as the blob `blob_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailAttachment {
    /// The blob id in the envelope.
    pub blob_id: String,
    /// File name (sanitized, never empty).
    pub filename: String,
    /// `type/subtype`.
    pub mime_type: String,
    /// The decoded bytes.
    pub bytes: Vec<u8>,
}

/// The mapping of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// `bridge://{email}` of the sender.
    pub sender: Address,
    /// The display name for the sender's identity.
    pub display: String,
    /// The visible envelope, then one bcc-copy per hidden local recipient; unsigned.
    pub envelopes: Vec<Value>,
    /// `meta.bridge` (node-local, outside the signature, v1.1 §8.1).
    pub meta_bridge: Value,
    /// Attachment blobs.
    pub attachments: Vec<MailAttachment>,
    /// The message's `Message-ID` (for the index).
    pub message_id: Option<String>,
    /// The thread the message joined (`None`: it starts one).
    pub joined: Option<(String, String)>,
}

/// Why a message cannot be mapped (the SMTP reply says so; nothing is stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapError {
    /// The field or header at fault.
    pub field: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl std::fmt::Display for MapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} (v1.1 §21.2)", self.field, self.reason)
    }
}

impl std::error::Error for MapError {}

fn map_err(field: &'static str, reason: impl Into<String>) -> MapError {
    MapError {
        field,
        reason: reason.into(),
    }
}

/// What the SMTP transaction contributed.
#[derive(Debug, Clone)]
pub struct Received<'a> {
    /// The message.
    pub raw: &'a [u8],
    /// SMTP reverse path.
    pub mail_from: &'a str,
    /// Local recipients (accepted at RCPT TO), as LOOM identities.
    pub recipients: &'a [Address],
    /// The email addresses they were reached at, in the same order.
    pub recipient_emails: &'a [String],
    /// Receive time (RFC 3339).
    pub received_at: &'a str,
}

/// Maps one message. `next_id` yields fresh ULIDs (envelope, thread, attachment, blob ids).
pub fn map_message(
    received: &Received<'_>,
    auth: &AuthResults,
    disposition: &Disposition,
    index: &dyn MessageIndex,
    settings: &InboundSettings,
    next_id: &mut dyn FnMut() -> String,
) -> Result<Mapped, MapError> {
    let message = parse_mail(received.raw)?;
    if received.recipients.is_empty()
        || received.recipients.len() != received.recipient_emails.len()
    {
        return Err(map_err("RCPT TO", "no local recipient"));
    }
    let from = single_from(&message)?;
    let email = from.address().unwrap_or_default();
    let sender = Address::parse_wire(&format!("bridge://{}", email.to_ascii_lowercase()))
        .map_err(|e| map_err("From", format!("{email:?} is not a usable address: {e}")))?;
    let display = Some(from)
        .and_then(|a| a.name())
        .map(clean_display)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| email.to_string());

    let message_id = message.message_id().map(str::to_string);
    let joined = thread_of(&message, index);
    let (thread_id, parent_id) = match &joined {
        Some((t, e)) => (t.clone(), Value::String(e.clone())),
        None => (format!("thr_{}", next_id()), Value::Null),
    };

    // Recipient roles (§20.2): To → primary, Cc → cc; the others were not shown (§20.6).
    let listed = |h: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        h.map(|a| {
            a.iter()
                .filter_map(|x| x.address().map(str::to_ascii_lowercase))
                .collect()
        })
        .unwrap_or_default()
    };
    let (to_header, cc_header) = (listed(message.to()), listed(message.cc()));
    let mut visible = Vec::new();
    let mut hidden = Vec::new();
    for (identity, email) in received.recipients.iter().zip(received.recipient_emails) {
        let email = email.to_ascii_lowercase();
        if to_header.contains(&email) {
            visible.push(json!({"identity": identity.to_string(), "role": "primary"}));
        } else if cc_header.contains(&email) {
            visible.push(json!({"identity": identity.to_string(), "role": "cc"}));
        } else {
            hidden.push(identity.clone());
        }
    }
    if !visible.iter().any(|r| r["role"] == "primary") {
        // §8.2: a visible envelope needs a primary recipient. Mail whose headers name no
        // local recipient as To (a list, or every local recipient Bcc'd) goes to each local
        // recipient as its own primary, each in the same thread, no one seeing the others.
        hidden.extend(visible.drain(..).filter_map(|r| {
            r["identity"]
                .as_str()
                .and_then(|s| Address::parse_wire(s).ok())
        }));
    }

    let quarantined = matches!(disposition, Disposition::Quarantine(_));
    let authenticated = auth.authenticated();
    let trust_level = if authenticated && !quarantined {
        "medium"
    } else {
        "low"
    };
    let auto_actuation = settings.auto_actuation && authenticated && !quarantined;
    let subject = message.subject().unwrap_or_default().to_string();
    let (text, human_source) = human_text(&message);
    let mut structured = json!({
        "intent": GENERAL_INTENT,
        "parameters": {"subject": subject},
        "extracted": true,
        "authoritative": false,
        "trust_level": "low",
        "extraction_confidence": GENERAL_CONFIDENCE,
    });
    if subject.is_empty() {
        structured["parameters"] = json!({});
    }

    let mut attachments = Vec::new();
    let mut attachment_refs = Vec::new();
    for part in message.attachments() {
        if attachments.len() >= settings.max_attachments {
            return Err(map_err(
                "attachments",
                format!("more than {} attachments", settings.max_attachments),
            ));
        }
        let bytes = part.contents().to_vec();
        // The part's type when it is a valid §8.1 `type/subtype`, else octet-stream (mail
        // headers are the sender's to garble).
        let mime_type = part
            .content_type()
            .map(|c| match c.subtype() {
                Some(s) => format!("{}/{}", c.ctype(), s).to_ascii_lowercase(),
                None => c.ctype().to_ascii_lowercase(),
            })
            .filter(|m| loom_protocol::envelope::validate::is_mime_type(m))
            .unwrap_or_else(|| "application/octet-stream".into());
        let filename = part
            .attachment_name()
            .map(sanitize_filename)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("attachment-{}", attachments.len() + 1));
        let blob_id = format!("blob_{}", next_id());
        attachment_refs.push(json!({
            "id": format!("att_{}", next_id()),
            "filename": filename,
            "mime_type": mime_type,
            "size_bytes": bytes.len(),
            "hash": format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            "blob_id": blob_id,
            "inline": part.content_disposition().is_some_and(|d| d.is_inline()),
        }));
        attachments.push(MailAttachment {
            blob_id,
            filename,
            mime_type,
            bytes,
        });
    }

    let mut external = Vec::new();
    if let Some(id) = &message_id {
        external.push(json!({"type": "email_message_id", "ref": id}));
    }
    let visible_id = format!("env_{}", next_id());
    let base = |id: &str, to: Vec<Value>| {
        let mut e = json!({
            "loom": loom_protocol::LOOM_VERSION,
            "id": id,
            "thread_id": thread_id,
            "parent_id": parent_id,
            "type": "message",
            "from": {
                "identity": sender.to_string(),
                "display": display,
                "key_id": settings.key_id,
                "type": "bridge",
            },
            "to": to,
            "created_at": received.received_at,
            "priority": priority(&message),
            "content": {
                "human": {"text": text, "format": "markdown"},
                "structured": structured,
                "encrypted": false,
            },
            "references": {
                "in_reply_to": parent_id,
                "external": external,
            },
        });
        if !attachment_refs.is_empty() {
            e["attachments"] = Value::Array(attachment_refs.clone());
        }
        if quarantined {
            e["labels"] = json!([QUARANTINE_LABEL]);
        }
        e
    };
    let mut envelopes = Vec::new();
    let has_visible = !visible.is_empty();
    let visible_to = visible.clone();
    if has_visible {
        envelopes.push(base(&visible_id, visible));
    }
    for identity in &hidden {
        let id = format!("env_{}", next_id());
        let e = if has_visible {
            // §20.6: a bcc-copy per hidden recipient, linked to the visible envelope; it
            // lists the visible recipients too (§8.2 wants a primary), but its audience is
            // the sender and the Bcc recipient only (§8.3).
            let mut to = visible_to.clone();
            to.push(json!({"identity": identity.to_string(), "role": "bcc"}));
            let mut e = base(&id, to);
            e["audience"] = json!({
                "mode": "custom",
                "identities": [sender.to_string(), identity.to_string()],
            });
            e["references"]["linked_envelopes"] = json!([visible_id]);
            e
        } else {
            let mut e = base(
                &id,
                vec![json!({"identity": identity.to_string(), "role": "primary"})],
            );
            e["audience"] = json!({
                "mode": "custom",
                "identities": [sender.to_string(), identity.to_string()],
            });
            e
        };
        envelopes.push(e);
    }

    let (original_headers, dropped) = original_headers(&message, settings.max_header_bytes);
    let mut meta = json!({
        "source": "email",
        "original_message_id": message_id,
        "original_headers": original_headers,
        "auth_results": auth.to_json(),
        "structured_trust": {
            "authoritative": false,
            "trust_level": trust_level,
            "auto_actuation_allowed": auto_actuation,
            "reason": "bridged_content_is_non_authoritative_by_default",
        },
        "extraction_confidence": GENERAL_CONFIDENCE,
        "human_source": human_source,
        "mail_from": received.mail_from,
    });
    if dropped > 0 {
        meta["original_headers_dropped"] = dropped.into();
    }
    if let Some(list) = list_metadata(&message) {
        meta["list"] = list;
    }
    if let Disposition::Quarantine(reason) = disposition {
        meta["quarantine"] = json!({"label": QUARANTINE_LABEL, "reason": reason});
    }
    Ok(Mapped {
        sender,
        display,
        envelopes,
        meta_bridge: meta,
        attachments,
        message_id,
        joined,
    })
}

/// The one author of a message: exactly one `From` field naming exactly one address (RFC 5322
/// §3.6 allows one `From` field; RFC 7489 §6.6.1: mail without a single From domain cannot be
/// judged by DMARC and is rejected). The SMTP reverse path is never used instead: it is not
/// what DMARC authenticates, so falling back to it would let mail without a From header
/// borrow a `p=reject` domain.
fn single_from<'m>(
    message: &'m mail_parser::Message<'_>,
) -> Result<&'m mail_parser::Addr<'m>, MapError> {
    let fields = message
        .headers()
        .iter()
        .filter(|h| matches!(h.name, mail_parser::HeaderName::From))
        .count();
    if fields != 1 {
        return Err(map_err(
            "From",
            format!("{fields} From fields; a message has exactly one (RFC 5322 §3.6)"),
        ));
    }
    let addresses: Vec<&mail_parser::Addr<'_>> = message
        .from()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    match addresses.as_slice() {
        [one] if one.address().is_some_and(|a| a.contains('@')) => Ok(one),
        _ => Err(map_err(
            "From",
            format!(
                "{} From addresses; exactly one is needed to know the author (RFC 7489 §6.6.1)",
                addresses.len()
            ),
        )),
    }
}

/// The message parsed by `mail-parser`, whose 0.11 parser panics on some malformed nesting
/// ("Invalid part ID"; found by the `bridge_mime` fuzz target): a panic there is this
/// message's refusal, never the connection's end.
pub fn parse_mail(raw: &[u8]) -> Result<mail_parser::Message<'_>, MapError> {
    match std::panic::catch_unwind(|| MessageParser::default().parse(raw)) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(map_err("message", "not an RFC 5322 message")),
        Err(_) => Err(map_err("message", "MIME structure the parser cannot read")),
    }
}

/// v1.1 §21.2 "map Message-ID / References / In-Reply-To to thread_id/parent_id": the
/// parent is the message `In-Reply-To` names, else the newest of `References` the node
/// knows.
fn thread_of(
    message: &mail_parser::Message<'_>,
    index: &dyn MessageIndex,
) -> Option<(String, String)> {
    let ids = |v: &mail_parser::HeaderValue<'_>| -> Vec<String> {
        match v {
            mail_parser::HeaderValue::Text(t) => vec![t.to_string()],
            mail_parser::HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
            _ => Vec::new(),
        }
    };
    let mut candidates = ids(message.in_reply_to());
    candidates.extend(ids(message.references()).into_iter().rev());
    candidates
        .iter()
        .take(64)
        .find_map(|id| index.find(id.trim_matches(['<', '>'])))
}

/// `content.human.text` (v1.1 §21.2 "body converted to markdown where possible"): the
/// text/plain part as is (mail text is Markdown's origin), or the HTML part converted to
/// text by `mail-parser`. Returns the text and which part it came from.
fn human_text(message: &mail_parser::Message<'_>) -> (String, &'static str) {
    if message.text_body_count() > 0
        && let Some(t) = message.body_text(0)
        && message
            .text_part(0)
            .is_some_and(|p| !p.is_content_type("text", "html"))
    {
        return (normalize_newlines(&t), "text/plain");
    }
    if let Some(t) = message.body_text(0) {
        return (normalize_newlines(&t), "text/html");
    }
    (String::new(), "none")
}

fn normalize_newlines(s: &str) -> String {
    s.replace("\r\n", "\n").trim_end().to_string()
}

/// `X-Priority` / `Importance` → §8.1 `priority`.
fn priority(message: &mail_parser::Message<'_>) -> &'static str {
    let header = |n: &str| message.header_raw(n).map(|v| v.trim().to_ascii_lowercase());
    match (header("X-Priority"), header("Importance")) {
        (Some(p), _) if p.starts_with('1') => "urgent",
        (Some(p), _) if p.starts_with('2') => "high",
        (_, Some(i)) if i == "high" => "high",
        (Some(p), _) if p.starts_with('4') || p.starts_with('5') => "low",
        (_, Some(i)) if i == "low" => "low",
        _ => "normal",
    }
}

/// §21.2 `original_headers` "preserved": every header, names lowercased, values unfolded,
/// in order, up to `max_bytes`; returns the map and how many headers did not fit.
fn original_headers(message: &mail_parser::Message<'_>, max_bytes: usize) -> (Value, usize) {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut used = 0;
    let mut dropped = 0;
    for (name, value) in message.headers_raw() {
        let value = value
            .replace("\r\n", "")
            .replace('\n', "")
            .trim()
            .to_string();
        if used + name.len() + value.len() > max_bytes {
            dropped += 1;
            continue;
        }
        used += name.len() + value.len();
        map.entry(name.to_ascii_lowercase())
            .or_default()
            .push(value);
    }
    let obj: Map<String, Value> = map
        .into_iter()
        .map(|(k, v)| (k, Value::Array(v.into_iter().map(Value::String).collect())))
        .collect();
    (Value::Object(obj), dropped)
}

/// v1.1 §20.3 "Email Bridge SHOULD map List-* headers into `meta.bridge` list metadata": the
/// RFC 2919 `List-Id` and RFC 2369 `List-*` fields, unfolded, under their names without the
/// prefix (`id`, `post`, `unsubscribe`, …); `None` for mail that is not list mail.
fn list_metadata(message: &mail_parser::Message<'_>) -> Option<Value> {
    const FIELDS: [(&str, &str); 7] = [
        ("List-Id", "id"),
        ("List-Post", "post"),
        ("List-Unsubscribe", "unsubscribe"),
        ("List-Subscribe", "subscribe"),
        ("List-Archive", "archive"),
        ("List-Help", "help"),
        ("List-Owner", "owner"),
    ];
    let mut list = Map::new();
    for (header, key) in FIELDS {
        if let Some(v) = message.header_raw(header) {
            let v = v.replace("\r\n", "").replace('\n', "");
            list.insert(
                key.into(),
                Value::String(v.trim().chars().take(1024).collect()),
            );
        }
    }
    (!list.is_empty()).then_some(Value::Object(list))
}

/// A display name without control characters, at most 128 characters.
fn clean_display(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect::<String>()
        .trim()
        .to_string()
}

/// A file name without path separators or control characters, at most 255 bytes.
fn sanitize_filename(s: &str) -> String {
    let base = s.rsplit(['/', '\\']).next().unwrap_or(s);
    let mut out: String = base.chars().filter(|c| !c.is_control()).collect();
    while out.len() > 255 {
        out.pop();
    }
    out.trim().trim_start_matches('.').to_string()
}
