//! LOOM → email (v1.1 §21.3, v1.0 §19.3): one envelope becomes one message for its
//! visible mail recipients and one separate message per Bcc mail recipient ("MUST send
//! separate SMTP messages without revealing BCC"); `content.human` rendered to plain text
//! and HTML (`multipart/alternative`), the three `X-LOOM-*` headers, `In-Reply-To` and
//! `References` from the parent and thread, blobs as attachments, and a DKIM signature for
//! the bridge domain. Pure and deterministic: the date is the envelope's `created_at`, MIME
//! boundaries and Message-IDs come from the envelope id (the DKIM `t=` tag is the one
//! exception: `mail-auth` stamps the signing time from the system clock).
//!
//! **Where the spec is silent:** the reverse path is `bounces+{envelope_id}@{domain}` here; the
//! node replaces it per recipient with [`crate::bounce::address`], whose keyed tag lets a DSN
//! name the envelope and recipient it bounces (VERP) without being forgeable; the Message-ID is `<{envelope_id}@{domain}>`
//! (`.{n}` appended for the n-th Bcc message), which is how replies find their thread; a
//! LOOM identity `loom://alice@node` appears as `alice@{mail domain}`.

use mail_auth::common::crypto::{Ed25519Key, RsaKey, Sha256};
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::{DkimSigner, Done};
use mail_builder::MessageBuilder;
use mail_builder::headers::address::Address as MailAddress;
use mail_builder::headers::content_type::ContentType;
use mail_builder::headers::raw::Raw;
use mail_builder::mime::MimePart;
use pulldown_cmark::{Event, Options, Parser, html};
use serde_json::Value;

/// Headers a DKIM signature covers (RFC 6376 §5.4.1 recommends From and the rest).
pub const SIGNED_HEADERS: [&str; 12] = [
    "From",
    "To",
    "Cc",
    "Subject",
    "Date",
    "Message-ID",
    "In-Reply-To",
    "References",
    "MIME-Version",
    "Content-Type",
    "X-LOOM-Intent",
    "X-LOOM-Envelope-ID",
];

/// The bridge domain's DKIM signer (RFC 6376 rsa-sha256 or RFC 8463 ed25519-sha256),
/// built once and reused for every message.
pub struct Dkim {
    signer: DkimSigner<mail_auth::common::crypto::DkimKey, Done>,
    record: String,
}

impl std::fmt::Debug for Dkim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dkim")
            .field("d", &self.signer.template.d)
            .field("s", &self.signer.template.s)
            .finish_non_exhaustive()
    }
}

impl Dkim {
    /// An ed25519-sha256 signer from a 32-byte seed.
    pub fn ed25519(domain: &str, selector: &str, seed: &[u8; 32]) -> Result<Self, String> {
        let public = ed25519_dalek::SigningKey::from_bytes(seed)
            .verifying_key()
            .to_bytes();
        let key = Ed25519Key::from_seed_and_public_key(seed, &public).map_err(|e| e.to_string())?;
        Ok(Self::with_key(
            domain,
            selector,
            key.into(),
            "ed25519",
            &public,
        ))
    }

    /// An rsa-sha256 signer from a PKCS#1 or PKCS#8 PEM private key.
    pub fn rsa_pem(domain: &str, selector: &str, pem: &str) -> Result<Self, String> {
        let der = rustls::pki_types::PrivateKeyDer::try_from(pem_body(pem)?)
            .map_err(|e| format!("RSA key: {e}"))?;
        let key = RsaKey::<Sha256>::from_key_der(der).map_err(|e| e.to_string())?;
        let public = key.public_key();
        Ok(Self::with_key(domain, selector, key.into(), "rsa", &public))
    }

    fn with_key(
        domain: &str,
        selector: &str,
        key: mail_auth::common::crypto::DkimKey,
        k: &str,
        public: &[u8],
    ) -> Self {
        use base64::Engine;
        let record = format!(
            "v=DKIM1; k={k}; p={}",
            base64::engine::general_purpose::STANDARD.encode(public)
        );
        let signer = DkimSigner::from_key(key)
            .domain(domain)
            .selector(selector)
            .headers(SIGNED_HEADERS);
        Self { signer, record }
    }

    /// The TXT record to publish at `{selector}._domainkey.{domain}` (RFC 6376 §3.6.1).
    pub fn dns_record(&self) -> &str {
        &self.record
    }

    /// `raw` with a `DKIM-Signature` header in front.
    pub fn sign(&self, raw: Vec<u8>) -> Result<Vec<u8>, RenderError> {
        let header = self
            .signer
            .sign(&raw)
            .map(|s| s.to_header())
            .map_err(|e| RenderError(format!("DKIM signing: {e}")))?;
        let mut signed = header.into_bytes();
        signed.extend_from_slice(&raw);
        Ok(signed)
    }

    /// The key's signature over `data` (RFC 6376 §3.7 step 2 for rsa-sha256: RSASSA-PKCS1-v1_5
    /// over SHA-256; RFC 8463 §3 for ed25519-sha256: Ed25519 over the SHA-256 hash). For
    /// callers that assemble the `DKIM-Signature` field themselves (the test vectors' signer).
    pub fn sign_bytes(&self, data: &[u8]) -> Result<Vec<u8>, RenderError> {
        use mail_auth::common::crypto::SigningKey;
        self.signer
            .key
            .sign(data)
            .map_err(|e| RenderError(format!("DKIM signing: {e}")))
    }

    /// `{selector}._domainkey.{domain}`.
    pub fn dns_name(&self) -> String {
        format!(
            "{}._domainkey.{}",
            self.signer.template.s, self.signer.template.d
        )
    }
}

fn pem_body(pem: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    let body: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(str::trim)
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|e| format!("PEM: {e}"))
}

/// The bridge's identity in the mail world.
#[derive(Debug)]
pub struct OutboundSettings {
    /// The mail domain (`From` addresses, Message-IDs, the DKIM `d=`).
    pub domain: String,
    /// The DKIM signer; `None` sends unsigned (§21.3 says sign: only for tests and sinks).
    pub dkim: Option<Dkim>,
}

/// A mail recipient of an envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailRecipient {
    /// The email address.
    pub email: String,
    /// §20.2 role: `primary` → To, `cc` → Cc, `bcc` → its own message; `observer` → Cc.
    pub role: String,
}

/// An attachment's bytes (fetched by the node from the blob store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentBytes {
    /// File name.
    pub filename: String,
    /// `type/subtype`.
    pub mime_type: String,
    /// Content.
    pub bytes: Vec<u8>,
}

/// One message to hand to SMTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Reverse path.
    pub mail_from: String,
    /// Forward paths.
    pub rcpt_to: Vec<String>,
    /// The message, CRLF line ends, DKIM-Signature first.
    pub data: Vec<u8>,
    /// Its Message-ID (without angle brackets).
    pub message_id: String,
}

/// Why an envelope cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderError(pub String);

impl std::fmt::Display for RenderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rendering mail (v1.1 §21.3): {}", self.0)
    }
}

impl std::error::Error for RenderError {}

/// The thread context of an envelope, as Message-IDs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Threading {
    /// The parent's Message-ID.
    pub in_reply_to: Option<String>,
    /// The thread's Message-IDs, oldest first (the root first, RFC 5322 §3.6.4).
    pub references: Vec<String>,
}

/// The Message-ID the bridge gives an envelope (RFC 5322 §3.6.4).
pub fn message_id_of(envelope_id: &str, domain: &str) -> String {
    format!("{envelope_id}@{domain}")
}

/// One outgoing message as data, before it becomes MIME: everything §21.3 decides (who it
/// goes to, its headers, threading, bodies, attachments), so a step can be inspected or
/// changed on its own ([`crate::rules::BridgeRules::draft`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailDraft {
    /// The envelope it renders.
    pub envelope_id: String,
    /// Its Message-ID (without angle brackets).
    pub message_id: String,
    /// Reverse path.
    pub mail_from: String,
    /// Forward paths of this SMTP transaction.
    pub rcpt_to: Vec<String>,
    /// `From:` display name and address.
    pub from: (Option<String>, String),
    /// `To:` (empty: `undisclosed-recipients:;`).
    pub to: Vec<String>,
    /// `Cc:`.
    pub cc: Vec<String>,
    /// `Subject:`.
    pub subject: String,
    /// `Date:` in Unix seconds (the envelope's `created_at`).
    pub date: i64,
    /// The `X-LOOM-*` headers (§21.3), in order.
    pub loom_headers: Vec<(String, String)>,
    /// RFC 2369 / RFC 2919 list headers, for mail from a `team` identity (v1.1 §20.3).
    pub list_headers: Vec<(String, String)>,
    /// `In-Reply-To` / `References`.
    pub threading: Threading,
    /// The text/plain body.
    pub plain: String,
    /// The text/html body (`None`: text only).
    pub html: Option<String>,
    /// MIME attachments.
    pub attachments: Vec<AttachmentBytes>,
}

/// The drafts for `envelope`: one for its visible mail recipients, one per Bcc recipient
/// (§21.3 "MUST send separate SMTP messages without revealing BCC").
pub fn drafts(
    envelope: &Value,
    recipients: &[MailRecipient],
    threading: &Threading,
    attachments: &[AttachmentBytes],
    domain: &str,
) -> Result<Vec<MailDraft>, RenderError> {
    let str_at = |p: &str| envelope.pointer(p).and_then(Value::as_str);
    let id = str_at("/id").ok_or_else(|| RenderError("envelope has no id".into()))?;
    let thread = str_at("/thread_id").unwrap_or_default();
    let created = str_at("/created_at")
        .and_then(|t| loom_protocol::Timestamp::parse(t).ok())
        .ok_or_else(|| RenderError("envelope has no valid created_at".into()))?;
    let intent = str_at("/content/structured/intent").unwrap_or("message.general@v1");
    let subject = str_at("/content/structured/parameters/subject")
        .map(str::to_string)
        .unwrap_or_else(|| subject_from(str_at("/content/human/text").unwrap_or_default()));
    let text = str_at("/content/human/text").unwrap_or_default();
    let format = str_at("/content/human/format").unwrap_or("markdown");
    let sender = str_at("/from/identity")
        .and_then(|s| loom_protocol::Address::parse_wire(s).ok())
        .ok_or_else(|| RenderError("from.identity is not an address".into()))?;
    let display = str_at("/from/display").unwrap_or_default().to_string();
    let (plain, html_body) = bodies(text, format);
    let visible: Vec<&MailRecipient> = recipients.iter().filter(|r| r.role != "bcc").collect();
    let emails = |keep: &dyn Fn(&MailRecipient) -> bool| -> Vec<String> {
        visible
            .iter()
            .filter(|r| keep(r))
            .map(|r| r.email.clone())
            .collect()
    };
    let draft = |message_id: String, rcpt_to: Vec<String>| MailDraft {
        envelope_id: id.to_string(),
        message_id,
        mail_from: format!("bounces+{id}@{domain}"),
        rcpt_to,
        from: (
            (!display.is_empty()).then(|| header_safe(&display)),
            format!("{}@{domain}", sender.local()),
        ),
        to: emails(&|r| r.role == "primary"),
        cc: emails(&|r| r.role != "primary"),
        subject: header_safe(&subject),
        date: created.unix_ms().div_euclid(1000),
        list_headers: list_headers(envelope, sender.local(), domain),
        loom_headers: vec![
            ("X-LOOM-Intent".into(), header_safe(intent)),
            ("X-LOOM-Thread-ID".into(), header_safe(thread)),
            ("X-LOOM-Envelope-ID".into(), header_safe(id)),
        ],
        threading: threading.clone(),
        plain: plain.clone(),
        html: Some(html_body.clone()),
        attachments: attachments.to_vec(),
    };
    let mut out = Vec::new();
    let visible_rcpts = emails(&|_| true);
    if !visible_rcpts.is_empty() {
        out.push(draft(message_id_of(id, domain), visible_rcpts));
    }
    for (n, r) in recipients.iter().filter(|r| r.role == "bcc").enumerate() {
        out.push(draft(
            format!("{id}.{}@{domain}", n + 1),
            vec![r.email.clone()],
        ));
    }
    Ok(out)
}

/// The MIME message of `d` (RFC 5322, CRLF, deterministic boundaries), unsigned.
pub fn build(d: &MailDraft) -> Result<Vec<u8>, RenderError> {
    let id = &d.envelope_id;
    let mut b = MessageBuilder::new()
        .from(MailAddress::new_address(d.from.0.clone(), d.from.1.clone()))
        .subject(d.subject.clone())
        .date(d.date)
        .message_id(d.message_id.clone());
    for (name, value) in d.loom_headers.iter().chain(&d.list_headers) {
        b = b.header(name.clone(), Raw::new(value.clone()));
    }
    b = if d.to.is_empty() {
        b.header("To", Raw::new("undisclosed-recipients:;"))
    } else {
        b.to(d
            .to
            .iter()
            .map(|a| MailAddress::new_address(None::<String>, a.clone()))
            .collect::<Vec<_>>())
    };
    if !d.cc.is_empty() {
        b = b.cc(d
            .cc
            .iter()
            .map(|a| MailAddress::new_address(None::<String>, a.clone()))
            .collect::<Vec<_>>());
    }
    if let Some(parent) = &d.threading.in_reply_to {
        b = b.in_reply_to(parent.clone());
    }
    if !d.threading.references.is_empty() {
        b = b.references(d.threading.references.clone());
    }
    let plain = MimePart::new(
        ContentType::new("text/plain").attribute("charset", "utf-8"),
        d.plain.clone(),
    );
    let text = match &d.html {
        Some(html) => MimePart::new(
            ContentType::new("multipart/alternative").attribute("boundary", format!("alt-{id}")),
            vec![
                plain,
                MimePart::new(
                    ContentType::new("text/html").attribute("charset", "utf-8"),
                    html.clone(),
                ),
            ],
        ),
        None => plain,
    };
    let body = if d.attachments.is_empty() {
        text
    } else {
        let mut parts = vec![text];
        for a in &d.attachments {
            parts.push(
                MimePart::new(ContentType::new(a.mime_type.clone()), a.bytes.clone())
                    .attachment(a.filename.clone()),
            );
        }
        MimePart::new(
            ContentType::new("multipart/mixed").attribute("boundary", format!("mix-{id}")),
            parts,
        )
    };
    b.body(body)
        .write_to_vec()
        .map_err(|e| RenderError(e.to_string()))
}

/// Renders `envelope` for its mail recipients with the specification's steps: the
/// [`drafts`], [`build`] and the DKIM signature.
pub fn render(
    envelope: &Value,
    recipients: &[MailRecipient],
    threading: &Threading,
    attachments: &[AttachmentBytes],
    settings: &OutboundSettings,
) -> Result<Vec<Outgoing>, RenderError> {
    drafts(
        envelope,
        recipients,
        threading,
        attachments,
        &settings.domain,
    )?
    .into_iter()
    .map(|d| {
        Ok(Outgoing {
            data: sign(build(&d)?, settings)?,
            mail_from: d.mail_from,
            rcpt_to: d.rcpt_to,
            message_id: d.message_id,
        })
    })
    .collect()
}

/// The `bridge://` recipients of an envelope that get mail, with their §20.2 roles: all of
/// them, except that a bcc-copy (§20.6: an envelope naming a `bcc` recipient) goes to its
/// Bcc recipients only — the visible recipients it lists got the visible envelope.
pub fn mail_recipients(envelope: &Value) -> Vec<(loom_protocol::Address, String)> {
    let listed: Vec<(loom_protocol::Address, String)> = envelope["to"]
        .as_array()
        .map(|to| {
            to.iter()
                .filter_map(|r| {
                    let a = loom_protocol::Address::parse_wire(r["identity"].as_str()?).ok()?;
                    Some((a, r["role"].as_str().unwrap_or("primary").to_string()))
                })
                .collect()
        })
        .unwrap_or_default();
    let copy = listed.iter().any(|(_, role)| role == "bcc");
    listed
        .into_iter()
        .filter(|(a, role)| a.is_bridge() && (!copy || role == "bcc"))
        .collect()
}

/// v1.1 §20.3: a distribution list is a `team` identity; its mail carries `List-Id` (RFC
/// 2919: `<{local}.{mail domain}>`) and `List-Post` (RFC 2369: replies go to the list's
/// address), so mail clients thread and filter it as list mail.
fn list_headers(envelope: &Value, local: &str, domain: &str) -> Vec<(String, String)> {
    if envelope.pointer("/from/type").and_then(Value::as_str) != Some("team") {
        return Vec::new();
    }
    let name = envelope
        .pointer("/from/display")
        .and_then(Value::as_str)
        .map(header_safe)
        .filter(|n| !n.is_empty())
        .map(|n| format!("\"{}\" ", n.replace(['"', '\\'], "")))
        .unwrap_or_default();
    vec![
        ("List-Id".into(), format!("{name}<{local}.{domain}>")),
        ("List-Post".into(), format!("<mailto:{local}@{domain}>")),
    ]
}

/// The mail address of a `bridge://` identity.
pub fn email_of(a: &loom_protocol::Address) -> String {
    format!("{}@{}", a.local(), a.domain())
}

/// The messages an envelope becomes for its mail recipients `mail` ([`mail_recipients`], or a
/// quirk's reading of it): To and Cc show every visible recipient of the envelope (§20.2) —
/// `bridge://` ones by their address, LOOM ones as `{local}@{domain}` — and each message
/// goes only to the mail recipients it is for, so a bcc-copy (§20.6) mails its Bcc recipient
/// alone, showing the visible recipients as the original mail would, and never a Bcc header.
pub fn envelope_drafts(
    envelope: &Value,
    mail: &[(loom_protocol::Address, String)],
    threading: &Threading,
    attachments: &[AttachmentBytes],
    domain: &str,
) -> Result<Vec<MailDraft>, RenderError> {
    let mut recipients: Vec<MailRecipient> = envelope["to"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let a = loom_protocol::Address::parse_wire(r["identity"].as_str()?).ok()?;
            let role = r["role"].as_str().unwrap_or("primary").to_string();
            if role == "bcc" {
                return None;
            }
            let email = if a.is_bridge() {
                email_of(&a)
            } else {
                format!("{}@{domain}", a.local())
            };
            Some(MailRecipient { email, role })
        })
        .collect();
    recipients.extend(
        mail.iter()
            .filter(|(_, role)| role == "bcc")
            .map(|(a, role)| MailRecipient {
                email: email_of(a),
                role: role.clone(),
            }),
    );
    let mailed: Vec<String> = mail.iter().map(|(a, _)| email_of(a)).collect();
    Ok(
        drafts(envelope, &recipients, threading, attachments, domain)?
            .into_iter()
            .filter_map(|mut d| {
                d.rcpt_to
                    .retain(|r| mailed.iter().any(|m| m.eq_ignore_ascii_case(r)));
                (!d.rcpt_to.is_empty()).then_some(d)
            })
            .collect(),
    )
}

fn sign(raw: Vec<u8>, settings: &OutboundSettings) -> Result<Vec<u8>, RenderError> {
    match &settings.dkim {
        Some(dkim) => dkim.sign(raw),
        None => Ok(raw),
    }
}

/// Plain text and HTML for `content.human` (§21.3 "Render content.human to HTML +
/// plaintext"). Markdown goes through a CommonMark renderer with raw HTML escaped, so a
/// message cannot smuggle script or markup into a mail client; `plaintext` is escaped
/// into `<pre>`; `html` is sent as text in both parts (never trusted as markup).
pub fn bodies(text: &str, format: &str) -> (String, String) {
    let plain = crlf(text);
    let html_body = match format {
        "markdown" => {
            let events =
                Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH).map(
                    |e| match e {
                        Event::Html(s) | Event::InlineHtml(s) => Event::Text(s),
                        other => other,
                    },
                );
            let mut out = String::new();
            html::push_html(&mut out, events);
            out
        }
        _ => format!("<pre>{}</pre>\n", escape_html(text)),
    };
    let doc = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n{html_body}</body></html>\n"
    );
    (plain, crlf(&doc))
}

fn crlf(s: &str) -> String {
    s.replace("\r\n", "\n")
        .replace('\r', "\n")
        .replace('\n', "\r\n")
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A header value without line breaks (header injection), at most 998 bytes (RFC 5322 §2.1.1).
fn header_safe(s: &str) -> String {
    let mut out: String = s.chars().filter(|c| !c.is_control()).collect();
    while out.len() > 900 {
        out.pop();
    }
    out
}

/// A subject from the first line of the text when the envelope names none.
fn subject_from(text: &str) -> String {
    let line = text
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("(no subject)");
    line.chars().take(78).collect()
}
