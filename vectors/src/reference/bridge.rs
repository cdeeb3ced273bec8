//! The email bridge (`loom-bridge`) answering `email-auth` and `mime-mapping` (v1.1 §21.2,
//! §21.3): each answer is the projection `kinds/email-auth.md` and `kinds/mime-mapping.md`
//! define, computed from the bridge's own functions.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_bridge::auth::{AuthResults, Connection, Disposition, Record, Records, Verifier};
use loom_bridge::inbound::{InboundSettings, MessageIndex, Received, map_message, parse_mail};
use loom_bridge::outbound::{AttachmentBytes, Threading, build, envelope_drafts};
use loom_protocol::Address;
use mail_parser::{MimeHeaders, PartType};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

fn array<'a>(input: Input<'a>, name: &str) -> Result<&'a [Value], BadRequest> {
    match input.opt(name) {
        None => Ok(&[]),
        Some(v) => v
            .as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| format!("{name} must be an array")),
    }
}

fn field<'a>(v: &'a Value, name: &str, of: &str) -> Result<&'a str, BadRequest> {
    v[name]
        .as_str()
        .ok_or_else(|| format!("{of}: member {name:?} must be a string"))
}

/// `email-auth`: SPF, DKIM and DMARC for `message` in a closed world of `dns` records.
pub fn email_auth(input: Input<'_>) -> Result<Answer, BadRequest> {
    let records = Records::new(true);
    for r in array(input, "dns")? {
        let record = Record {
            name: field(r, "name", "dns")?.into(),
            kind: field(r, "type", "dns")?.into(),
            value: field(r, "value", "dns")?.into(),
        };
        records.add(&record).map_err(|e| e.to_string())?;
    }
    let ip = input
        .str("client_ip")?
        .parse()
        .map_err(|e| format!("client_ip: {e}"))?;
    let verifier = Verifier::new(Arc::new(records), None, "bridge.test")
        .map_err(|e| format!("resolver: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let results = runtime.block_on(verifier.verify(
        input.str("message")?.as_bytes(),
        Connection {
            ip,
            helo: input.str("helo")?,
            mail_from: input.str("mail_from")?,
        },
    ));
    Ok(Answer::valid(auth_verdict(&results)))
}

/// RFC 6376 §3.9 knows three outcomes per signature; the RFC 8601 words the bridge records
/// fold onto them (fail, neutral, permerror and policy are all PERMFAIL).
fn auth_verdict(r: &AuthResults) -> Value {
    let mut dkim: Vec<&str> = r
        .dkim_signatures
        .iter()
        .map(|s| match s.result.as_str() {
            "pass" => "pass",
            "temperror" => "tempfail",
            _ => "permfail",
        })
        .collect();
    dkim.sort_unstable();
    let policy = match r.dmarc_policy.as_str() {
        "unspecified" => Value::Null,
        p => Value::from(p),
    };
    json!({"spf": r.spf, "dkim": dkim, "dmarc": r.dmarc, "dmarc_policy": policy})
}

/// The index of recorded messages a test gives.
struct Known(Vec<(String, String, String)>);

impl MessageIndex for Known {
    fn find(&self, message_id: &str) -> Option<(String, String)> {
        self.0
            .iter()
            .find(|(m, _, _)| m == message_id)
            .map(|(_, t, e)| (t.clone(), e.clone()))
    }
}

/// `mail-to-envelope`: the bridge's mapping of `message`, projected.
pub fn mail_to_envelope(input: Input<'_>) -> Result<Answer, BadRequest> {
    let mut recipients = Vec::new();
    let mut emails = Vec::new();
    for r in array(input, "rcpt_to")? {
        let identity = field(r, "identity", "rcpt_to")?;
        recipients.push(Address::parse_wire(identity).map_err(|e| format!("rcpt_to: {e}"))?);
        emails.push(field(r, "email", "rcpt_to")?.to_string());
    }
    let mut known = Vec::new();
    for k in array(input, "known_messages")? {
        known.push((
            field(k, "message_id", "known_messages")?.to_string(),
            field(k, "thread_id", "known_messages")?.to_string(),
            field(k, "envelope_id", "known_messages")?.to_string(),
        ));
    }
    let quarantine = input.opt("quarantine").and_then(Value::as_bool) == Some(true);
    let disposition = if quarantine {
        Disposition::Quarantine("the test's policy quarantined it".into())
    } else {
        Disposition::Deliver
    };
    let auth = AuthResults {
        spf: "none".into(),
        dkim: "none".into(),
        dmarc: "none".into(),
        spf_domain: String::new(),
        dkim_signatures: Vec::new(),
        dmarc_domain: String::new(),
        dmarc_policy: "unspecified".into(),
        spf_aligned: false,
        dkim_aligned: false,
        client_ip: "192.0.2.1".into(),
    };
    let mut n = 0u64;
    let mut next_id = || {
        n += 1;
        format!("{n:026}")
    };
    let message = input.str("message")?;
    let received = Received {
        raw: message.as_bytes(),
        mail_from: "sender@example.com",
        recipients: &recipients,
        recipient_emails: &emails,
        received_at: "2026-11-28T10:00:05Z",
    };
    let mapped = match map_message(
        &received,
        &auth,
        &disposition,
        &Known(known),
        &InboundSettings::new("k_sign_bridge_1"),
        &mut next_id,
    ) {
        Ok(m) => m,
        Err(e) => {
            let code = match e.field {
                "From" => "FROM_INVALID",
                "RCPT TO" => "NO_LOCAL_RECIPIENT",
                _ => "MESSAGE_INVALID",
            };
            return Ok(Answer::invalid(code, e.to_string()));
        }
    };
    let first = &mapped.envelopes[0];
    let copies: Vec<Value> = mapped
        .envelopes
        .iter()
        .map(|e| json!({"to": e["to"], "audience": e["audience"]["identities"]}))
        .collect();
    let attachments: Vec<Value> = first["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            json!({"filename": a["filename"], "mime_type": a["mime_type"],
                "size_bytes": a["size_bytes"], "hash": a["hash"]})
        })
        .collect();
    let meta = &mapped.meta_bridge;
    let header_names: Vec<&String> = meta["original_headers"]
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    let structured = &first["content"]["structured"];
    Ok(Answer::valid(json!({
        "from": {"identity": first["from"]["identity"], "type": first["from"]["type"],
            "display": first["from"]["display"]},
        "joined": mapped.joined.as_ref().map(|(t, e)| json!({"thread_id": t, "parent_id": e})),
        "copies": copies,
        "human": first["content"]["human"],
        "attachments": attachments,
        "labels": first.get("labels").cloned().unwrap_or_else(|| json!([])),
        "bridge": {
            "source": meta["source"],
            "original_message_id": meta["original_message_id"],
            "original_header_names": header_names,
            "list": meta["list"],
            "structured_trust": {
                "authoritative": meta["structured_trust"]["authoritative"],
                "auto_actuation_allowed": meta["structured_trust"]["auto_actuation_allowed"],
            },
            "structured": {"extracted": structured["extracted"], "authoritative": structured["authoritative"]},
        }
    })))
}

/// `envelope-to-mail`: the messages the bridge sends for `envelope`, parsed back and
/// projected.
pub fn envelope_to_mail(input: Input<'_>) -> Result<Answer, BadRequest> {
    use base64::Engine;
    let envelope = input.value("envelope")?;
    let domain = input.str("mail_domain")?;
    let mail = loom_bridge::outbound::mail_recipients(envelope);
    let parent = input
        .opt("parent_message_id")
        .and_then(Value::as_str)
        .map(str::to_string);
    let threading = Threading {
        references: parent.iter().cloned().collect(),
        in_reply_to: parent,
    };
    let blobs = array(input, "blobs")?;
    let mut attachments = Vec::new();
    for a in envelope["attachments"].as_array().into_iter().flatten() {
        let blob = blobs
            .iter()
            .find(|b| b["blob_id"] == a["blob_id"])
            .ok_or_else(|| format!("no blob for attachment {}", a["blob_id"]))?;
        attachments.push(AttachmentBytes {
            filename: a["filename"].as_str().unwrap_or_default().to_string(),
            mime_type: a["mime_type"].as_str().unwrap_or_default().to_string(),
            bytes: base64::engine::general_purpose::STANDARD
                .decode(field(blob, "data_base64", "blobs")?)
                .map_err(|e| format!("blobs: {e}"))?,
        });
    }
    let drafts = match envelope_drafts(envelope, &mail, &threading, &attachments, domain) {
        Ok(d) => d,
        Err(e) => return Ok(Answer::invalid("ENVELOPE_INVALID", e.to_string())),
    };
    let mut messages = Vec::new();
    for d in &drafts {
        let raw = build(d).map_err(|e| e.to_string())?;
        let mut rcpt = d.rcpt_to.clone();
        rcpt.sort();
        messages.push(project_mail(&raw, rcpt)?);
    }
    messages.sort_by_key(|m| m["rcpt_to"].to_string());
    Ok(Answer::valid(json!({ "messages": messages })))
}

/// The projection of one rendered message (kinds/mime-mapping.md).
fn project_mail(raw: &[u8], rcpt_to: Vec<String>) -> Result<Value, BadRequest> {
    let m = parse_mail(raw).map_err(|e| format!("rendered mail does not parse: {e}"))?;
    let addrs = |a: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        a.map(|a| {
            a.iter()
                .filter_map(|x| x.address().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
    };
    let header = |n: &str| m.header_raw(n).map(|v| v.trim().to_string());
    let ids = |v: &mail_parser::HeaderValue<'_>| -> Vec<String> {
        match v {
            mail_parser::HeaderValue::Text(t) => vec![t.to_string()],
            mail_parser::HeaderValue::TextList(l) => l.iter().map(|t| t.to_string()).collect(),
            _ => Vec::new(),
        }
    };
    let alternative: Vec<String> = m
        .parts
        .iter()
        .find(|p| p.is_content_type("multipart", "alternative"))
        .map(|alt| match &alt.body {
            PartType::Multipart(children) => children
                .iter()
                .filter_map(|i| m.parts.get(*i as usize))
                .map(|p| {
                    p.content_type()
                        .map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or_default()))
                        .unwrap_or_default()
                        .to_ascii_lowercase()
                })
                .collect(),
            _ => Vec::new(),
        })
        .unwrap_or_default();
    let attachments: Vec<Value> = m
        .attachments()
        .map(|a| {
            let bytes = a.contents();
            json!({
                "filename": a.attachment_name(),
                "mime_type": a.content_type().map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or_default())),
                "size_bytes": bytes.len(),
                "hash": format!("sha256:{}", hex::encode(Sha256::digest(bytes))),
            })
        })
        .collect();
    Ok(json!({
        "rcpt_to": rcpt_to,
        "to": addrs(m.to()),
        "cc": addrs(m.cc()),
        "bcc_header": m.header_raw("Bcc").is_some(),
        "x_loom": {
            "intent": header("X-LOOM-Intent"),
            "thread_id": header("X-LOOM-Thread-ID"),
            "envelope_id": header("X-LOOM-Envelope-ID"),
        },
        "in_reply_to": ids(m.in_reply_to()).first(),
        "references_last": ids(m.references()).last(),
        "alternative": alternative,
        "attachments": attachments,
        "list_id": header("List-Id"),
    }))
}
