//! LOOM → email (v1.1 §21.3, v1.0 §19.3): one envelope becomes one message for its
//! visible mail recipients and one separate message per Bcc mail recipient ("MUST send
//! separate SMTP messages without revealing BCC"); `content.human` rendered to plain text
//! and HTML (`multipart/alternative`), the three `X-LOOM-*` headers, `In-Reply-To` and
//! `References` from the parent and thread, blobs as attachments, and a DKIM signature for
//! the bridge domain. Pure and deterministic: the date is the envelope's `created_at`, MIME
//! boundaries and Message-IDs come from the envelope id (the DKIM `t=` tag is the one
//! exception: `mail-auth` stamps the signing time from the system clock).
//!
//! **Where the spec is silent:** the reverse path is `bounces+{envelope_id}@{domain}`, so a
//! DSN names the envelope it bounces (VERP); the Message-ID is `<{envelope_id}@{domain}>`
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

/// Renders `envelope` for its mail recipients.
pub fn render(
    envelope: &Value,
    recipients: &[MailRecipient],
    threading: &Threading,
    attachments: &[AttachmentBytes],
    settings: &OutboundSettings,
) -> Result<Vec<Outgoing>, RenderError> {
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
    let from_email = format!("{}@{}", sender.local(), settings.domain);
    let mail_from = format!("bounces+{id}@{}", settings.domain);

    let (plain, html_body) = bodies(text, format);
    let visible: Vec<&MailRecipient> = recipients.iter().filter(|r| r.role != "bcc").collect();
    let to: Vec<String> = visible
        .iter()
        .filter(|r| r.role == "primary")
        .map(|r| r.email.clone())
        .collect();
    let cc: Vec<String> = visible
        .iter()
        .filter(|r| r.role != "primary")
        .map(|r| r.email.clone())
        .collect();

    let build = |message_id: &str, to: &[String], cc: &[String]| -> Result<Vec<u8>, RenderError> {
        let mut b = MessageBuilder::new()
            .from(MailAddress::new_address(
                (!display.is_empty()).then(|| display.clone()),
                from_email.clone(),
            ))
            .subject(subject.clone())
            .date(created.unix_ms() / 1000)
            .message_id(message_id.to_string())
            .header("X-LOOM-Intent", Raw::new(header_safe(intent)))
            .header("X-LOOM-Thread-ID", Raw::new(header_safe(thread)))
            .header("X-LOOM-Envelope-ID", Raw::new(header_safe(id)));
        b = if to.is_empty() {
            b.header("To", Raw::new("undisclosed-recipients:;"))
        } else {
            b.to(to
                .iter()
                .map(|a| MailAddress::new_address(None::<String>, a.clone()))
                .collect::<Vec<_>>())
        };
        if !cc.is_empty() {
            b = b.cc(cc
                .iter()
                .map(|a| MailAddress::new_address(None::<String>, a.clone()))
                .collect::<Vec<_>>());
        }
        if let Some(parent) = &threading.in_reply_to {
            b = b.in_reply_to(parent.clone());
        }
        if !threading.references.is_empty() {
            b = b.references(threading.references.clone());
        }
        let alternative = MimePart::new(
            ContentType::new("multipart/alternative").attribute("boundary", format!("alt-{id}")),
            vec![
                MimePart::new(
                    ContentType::new("text/plain").attribute("charset", "utf-8"),
                    plain.clone(),
                ),
                MimePart::new(
                    ContentType::new("text/html").attribute("charset", "utf-8"),
                    html_body.clone(),
                ),
            ],
        );
        let body = if attachments.is_empty() {
            alternative
        } else {
            let mut parts = vec![alternative];
            for a in attachments {
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
        let raw = b
            .body(body)
            .write_to_vec()
            .map_err(|e| RenderError(e.to_string()))?;
        sign(raw, settings)
    };

    let mut out = Vec::new();
    let mail_recipients: Vec<String> = visible.iter().map(|r| r.email.clone()).collect();
    if !mail_recipients.is_empty() {
        let message_id = message_id_of(id, &settings.domain);
        out.push(Outgoing {
            mail_from: mail_from.clone(),
            rcpt_to: mail_recipients,
            data: build(&message_id, &to, &cc)?,
            message_id,
        });
    }
    for (n, r) in recipients.iter().filter(|r| r.role == "bcc").enumerate() {
        // §21.3: a separate message whose headers name no Bcc recipient.
        let message_id = format!("{id}.{}@{}", n + 1, settings.domain);
        out.push(Outgoing {
            mail_from: mail_from.clone(),
            rcpt_to: vec![r.email.clone()],
            data: build(&message_id, &to, &cc)?,
            message_id,
        });
    }
    Ok(out)
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
