//! Area `mime-mapping`: what an email bridge makes of a mail message (v1.1 §21.2, with §8.2
//! recipients, §20.6 BCC and §21.5 quarantine) and of an envelope addressed to mail
//! recipients (v1.1 §21.3). Both kinds compare a projection — the fields the spec names,
//! never the bridge's free choices (ids, MIME boundaries, header folding, Message-ID form) —
//! documented in `kinds/mime-mapping.md`.

use super::schema::{AreaSchema, string};
use super::{Case, FileBuilder};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const IN: &[&str] = &["v1.1 §21.2", "v1.0 §19.2"];
const OUT: &[&str] = &["v1.1 §21.3", "v1.0 §19.3"];

const BOB: &str = "loom://bob@bridge.test";
const CAROL: &str = "loom://carol@bridge.test";
const DAN: &str = "loom://dan@bridge.test";

fn rcpt(email: &str, identity: &str) -> Value {
    json!({"email": email, "identity": identity})
}

fn bob() -> Vec<Value> {
    vec![rcpt("bob@bridge.test", BOB)]
}

/// A message: `headers` (CRLF-joined lines) then the body.
fn mail(headers: &[&str], body: &str) -> String {
    format!("{}\r\n\r\n{body}", headers.join("\r\n"))
}

const FROM: &str = "From: Alice Example <alice@example.com>";
const TO_BOB: &str = "To: Bob <bob@bridge.test>";
const SUBJECT: &str = "Subject: Lunch on Friday?";
const DATE: &str = "Date: Sat, 28 Nov 2026 10:00:00 +0000";
const MID: &str = "Message-ID: <m1@example.com>";
const PLAIN: &str = "Content-Type: text/plain; charset=utf-8";

fn simple(body: &str) -> String {
    mail(
        &[FROM, TO_BOB, SUBJECT, DATE, MID, "MIME-Version: 1.0", PLAIN],
        body,
    )
}

fn sha(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The expected projection of a mapped message (see `kinds/mime-mapping.md`).
#[derive(Clone)]
struct Expect {
    identity: String,
    display: String,
    joined: Value,
    copies: Vec<Value>,
    text: String,
    attachments: Vec<Value>,
    labels: Vec<&'static str>,
    message_id: Value,
    header_names: Vec<&'static str>,
    list: Value,
}

const BASE_HEADERS: [&str; 7] = [
    "content-type",
    "date",
    "from",
    "message-id",
    "mime-version",
    "subject",
    "to",
];

impl Expect {
    fn new(text: &str) -> Expect {
        Expect {
            identity: "bridge://alice@example.com".into(),
            display: "Alice Example".into(),
            joined: Value::Null,
            copies: vec![copy(&[(BOB, "primary")], None)],
            text: text.into(),
            attachments: vec![],
            labels: vec![],
            message_id: json!("m1@example.com"),
            header_names: BASE_HEADERS.to_vec(),
            list: Value::Null,
        }
    }

    fn value(&self) -> Value {
        let mut names = self.header_names.clone();
        names.sort_unstable();
        names.dedup();
        json!({
            "from": {"identity": self.identity, "type": "bridge", "display": self.display},
            "joined": self.joined,
            "copies": self.copies,
            "human": {"text": self.text, "format": "markdown"},
            "attachments": self.attachments,
            "labels": self.labels,
            "bridge": {
                "source": "email",
                "original_message_id": self.message_id,
                "original_header_names": names,
                "list": self.list,
                "structured_trust": {"authoritative": false, "auto_actuation_allowed": false},
                "structured": {"extracted": true, "authoritative": false}
            }
        })
    }
}

/// One envelope of the mapping: its recipients and, for a private copy, its audience.
fn copy(to: &[(&str, &str)], audience: Option<&[&str]>) -> Value {
    json!({
        "to": to.iter().map(|(i, r)| json!({"identity": i, "role": r})).collect::<Vec<_>>(),
        "audience": audience.map(|a| a.to_vec()),
    })
}

fn inbound(id: &str, comment: &str, message: &str, rcpts: Vec<Value>) -> Case {
    Case::new(id, comment, IN)
        .input("message", message)
        .input("rcpt_to", rcpts)
}

const HELLO: &str = "Hi Bob,\r\n\r\nlunch on Friday at noon?\r\n\r\nAlice\r\n";
const HELLO_TEXT: &str = "Hi Bob,\n\nlunch on Friday at noon?\n\nAlice";

fn sender_cases() -> Vec<Case> {
    let e = Expect::new(HELLO_TEXT);
    let with_from = |from: &str| {
        mail(
            &[from, TO_BOB, SUBJECT, DATE, MID, "MIME-Version: 1.0", PLAIN],
            HELLO,
        )
    };
    let mut out = vec![
        inbound("in.from.display", "From with a display name: bridge://{email}, from.type bridge, the name as display (§21.2)", &simple(HELLO), bob())
            .flags(&["BridgeIdentity"]).valid_with(e.value()),
        inbound("in.from.uppercase-address", "the address is lowercased for the bridge identity (v1.1 §6.1: addresses are lowercase on the wire)", &with_from("From: Alice Example <Alice@EXAMPLE.com>"), bob())
            .flags(&["BridgeIdentity"]).valid_with(e.value()),
        inbound("in.from.quoted-display", "a quoted display name with a comma (RFC 5322 §3.4)", &with_from("From: \"Example, Alice\" <alice@example.com>"), bob())
            .flags(&["BridgeIdentity"]).valid_with(Expect { display: "Example, Alice".into(), ..e.clone() }.value()),
        inbound("in.from.encoded-word", "an RFC 2047 encoded display name is decoded", &with_from("From: =?UTF-8?B?QWxpY2Ugw4l4YW1wbGU=?= <alice@example.com>"), bob())
            .flags(&["BridgeIdentity", "MimeDecoding"]).valid_with(Expect { display: "Alice Éxample".into(), ..e.clone() }.value()),
        inbound("in.from.no-display", "no display name: the address is shown (the display must name the sender somehow)", &with_from("From: alice@example.com"), bob())
            .flags(&["BridgeIdentity", "Interpretation"]).valid_with(Expect { display: "alice@example.com".into(), ..e.clone() }.value()),
        inbound("in.from.subaddress", "a subaddress is part of the identity (the mailbox is what DMARC authenticated)", &with_from("From: Alice Example <alice+lists@example.com>"), bob())
            .flags(&["BridgeIdentity"]).valid_with(Expect { identity: "bridge://alice+lists@example.com".into(), ..e.clone() }.value()),
    ];
    for (id, comment, from) in [
        (
            "in.from.missing",
            "no From field: the author is unknown (RFC 5322 §3.6 requires exactly one)",
            None,
        ),
        (
            "in.from.two-fields",
            "two From fields: which one DMARC judged is ambiguous (RFC 5322 §3.6, RFC 7489 §6.6.1)",
            Some("From: Alice Example <alice@example.com>\r\nFrom: Mallory <mallory@example.net>"),
        ),
        (
            "in.from.two-addresses",
            "one From field with two mailboxes: no single author (RFC 7489 §6.6.1)",
            Some("From: alice@example.com, mallory@example.net"),
        ),
        (
            "in.from.empty-group",
            "a From group with no mailbox names nobody",
            Some("From: undisclosed-senders:;"),
        ),
        (
            "in.from.not-an-address",
            "a From field without an address",
            Some("From: Alice Example"),
        ),
    ] {
        let mut headers = vec![TO_BOB, SUBJECT, DATE, MID, "MIME-Version: 1.0", PLAIN];
        if let Some(f) = from {
            headers.insert(0, f);
        }
        out.push(
            inbound(id, comment, &mail(&headers, HELLO), bob())
                .flags(&["AuthorAmbiguous"])
                .invalid("FROM_INVALID"),
        );
    }
    out.push(
        inbound(
            "in.rcpt.none",
            "no local recipient was accepted: nothing to deliver to",
            &simple(HELLO),
            vec![],
        )
        .flags(&["Recipients"])
        .invalid("NO_LOCAL_RECIPIENT"),
    );
    out
}

fn recipient_cases() -> Vec<Case> {
    let e = Expect::new(HELLO_TEXT);
    let with_to = |to: &[&str]| {
        let mut h = vec![FROM];
        h.extend_from_slice(to);
        h.extend_from_slice(&[SUBJECT, DATE, MID, "MIME-Version: 1.0", PLAIN]);
        mail(&h, HELLO)
    };
    let names = |extra: &[&'static str]| {
        let mut n = BASE_HEADERS.to_vec();
        n.extend_from_slice(extra);
        n
    };
    let bob_carol = vec![
        rcpt("bob@bridge.test", BOB),
        rcpt("carol@bridge.test", CAROL),
    ];
    vec![
        inbound("in.to.primary", "a local recipient in To is primary (§20.2)", &simple(HELLO), bob())
            .flags(&["Recipients"]).valid_with(e.value()),
        inbound("in.to.case-insensitive", "To names the recipient in capitals: still the same mailbox for the roles", &with_to(&["To: BOB@Bridge.Test"]), bob())
            .flags(&["Recipients"]).valid_with(e.value()),
        inbound("in.cc.role", "To and Cc both local: primary and cc (§20.2)", &with_to(&[TO_BOB, "Cc: carol@bridge.test"]), bob_carol.clone())
            .flags(&["Recipients"]).valid_with(Expect { copies: vec![copy(&[(BOB, "primary"), (CAROL, "cc")], None)], header_names: names(&["cc"]), ..e.clone() }.value()),
        inbound("in.to.two-local", "two local recipients in To, both primary", &with_to(&["To: bob@bridge.test, carol@bridge.test"]), bob_carol.clone())
            .flags(&["Recipients"]).valid_with(Expect { copies: vec![copy(&[(BOB, "primary"), (CAROL, "primary")], None)], ..e.clone() }.value()),
        inbound("in.bcc.hidden-recipient", "carol was a RCPT TO no header names (she was Bcc'd): the visible envelope does not list her; her own copy does, with an audience of sender and her (§20.6)", &simple(HELLO), bob_carol.clone())
            .flags(&["Bcc"]).valid_with(Expect { copies: vec![
                copy(&[(BOB, "primary")], None),
                copy(&[(BOB, "primary"), (CAROL, "bcc")], Some(&["bridge://alice@example.com", CAROL])),
            ], ..e.clone() }.value()),
        inbound("in.bcc.two-hidden", "two Bcc'd local recipients: one private copy each, neither seeing the other (§20.6)", &simple(HELLO), vec![rcpt("bob@bridge.test", BOB), rcpt("carol@bridge.test", CAROL), rcpt("dan@bridge.test", DAN)])
            .flags(&["Bcc"]).valid_with(Expect { copies: vec![
                copy(&[(BOB, "primary")], None),
                copy(&[(BOB, "primary"), (CAROL, "bcc")], Some(&["bridge://alice@example.com", CAROL])),
                copy(&[(BOB, "primary"), (DAN, "bcc")], Some(&["bridge://alice@example.com", DAN])),
            ], ..e.clone() }.value()),
        inbound("in.list.no-local-in-headers", "list mail: To names the list, not a local mailbox; each local recipient gets a private copy as its own primary (§8.2 needs a primary; §20.6 hides recipients from each other)", &with_to(&["To: team@lists.example.com"]), bob_carol.clone())
            .flags(&["Bcc", "Interpretation"]).valid_with(Expect { copies: vec![
                copy(&[(BOB, "primary")], Some(&["bridge://alice@example.com", BOB])),
                copy(&[(CAROL, "primary")], Some(&["bridge://alice@example.com", CAROL])),
            ], ..e.clone() }.value()),
        inbound("in.cc-only-local", "the only local recipient is in Cc and To is external: no primary among local recipients, so a private copy as primary (§8.2)", &with_to(&["To: someone@example.org", "Cc: bob@bridge.test"]), bob())
            .flags(&["Recipients", "Interpretation"]).valid_with(Expect { copies: vec![copy(&[(BOB, "primary")], Some(&["bridge://alice@example.com", BOB]))], header_names: names(&["cc"]), ..e.clone() }.value()),
        inbound("in.to.external-listed", "external addresses in To are not LOOM recipients; only RCPT TO local mailboxes are", &with_to(&["To: bob@bridge.test, someone@example.org"]), bob())
            .flags(&["Recipients"]).valid_with(e.value()),
        inbound("in.bcc.beside-to-and-cc", "To bob, Cc carol, and dan only in RCPT TO: the visible envelope shows bob and carol; dan's private copy adds him as bcc (§20.6)", &with_to(&[TO_BOB, "Cc: carol@bridge.test"]), vec![rcpt("bob@bridge.test", BOB), rcpt("carol@bridge.test", CAROL), rcpt("dan@bridge.test", DAN)])
            .flags(&["Bcc"]).valid_with(Expect { copies: vec![
                copy(&[(BOB, "primary"), (CAROL, "cc")], None),
                copy(&[(BOB, "primary"), (CAROL, "cc"), (DAN, "bcc")], Some(&["bridge://alice@example.com", DAN])),
            ], header_names: names(&["cc"]), ..e.clone() }.value()),
        inbound("in.undisclosed", "To: undisclosed-recipients:; and one local RCPT: a private copy as primary", &with_to(&["To: undisclosed-recipients:;"]), bob())
            .flags(&["Bcc", "Interpretation"]).valid_with(Expect { copies: vec![copy(&[(BOB, "primary")], Some(&["bridge://alice@example.com", BOB]))], ..e.clone() }.value()),
    ]
}

fn known(message_id: &str, thread_id: &str, envelope_id: &str) -> Value {
    json!({"message_id": message_id, "thread_id": thread_id, "envelope_id": envelope_id})
}

const THR: &str = "thr_01JQ8Z4XH3K6M2N5P7R9T1V3W5";
const ENV1: &str = "env_01JQ8Z4XH3K6M2N5P7R9T1V3W6";
const ENV2: &str = "env_01JQ8Z4XH3K6M2N5P7R9T1V3W7";

fn threading_cases() -> Vec<Case> {
    let e = Expect::new(HELLO_TEXT);
    let reply = |extra: &[&str]| {
        let mut h = vec![
            FROM,
            TO_BOB,
            "Subject: Re: Lunch on Friday?",
            DATE,
            "Message-ID: <m2@example.com>",
            "MIME-Version: 1.0",
            PLAIN,
        ];
        h.extend_from_slice(extra);
        mail(&h, HELLO)
    };
    let index = vec![
        known("m1@example.com", THR, ENV1),
        known("env_01JQ8Z4XH3K6M2N5P7R9T1V3W7@bridge.test", THR, ENV2),
    ];
    let joined = |env: &str| json!({"thread_id": THR, "parent_id": env});
    let r = |extra: &'static [&'static str]| {
        let mut n = BASE_HEADERS.to_vec();
        n.extend_from_slice(extra);
        n
    };
    let rep = Expect {
        message_id: json!("m2@example.com"),
        ..e.clone()
    };
    let t = |id: &str, comment: &str, msg: String| {
        inbound(id, comment, &msg, bob()).input("known_messages", index.clone())
    };
    vec![
        t("in.thread.new", "no In-Reply-To or References: a new thread, no parent (§21.2 thread mapping)", simple(HELLO))
            .flags(&["Threading"]).valid_with(e.value()),
        t("in.thread.in-reply-to-known", "In-Reply-To names a message the node recorded: same thread, that envelope as parent (§21.2)", reply(&["In-Reply-To: <m1@example.com>"]))
            .flags(&["Threading"]).valid_with(Expect { joined: joined(ENV1), header_names: r(&["in-reply-to"]), ..rep.clone() }.value()),
        t("in.thread.reply-to-bridged-out", "In-Reply-To names the Message-ID of mail the bridge sent for an envelope (§21.3 ↔ §21.2 round trip)", reply(&["In-Reply-To: <env_01JQ8Z4XH3K6M2N5P7R9T1V3W7@bridge.test>"]))
            .flags(&["Threading"]).valid_with(Expect { joined: joined(ENV2), header_names: r(&["in-reply-to"]), ..rep.clone() }.value()),
        t("in.thread.references-only", "no In-Reply-To; References' last known id decides (RFC 5322 §3.6.4)", reply(&["References: <m1@example.com>"]))
            .flags(&["Threading"]).valid_with(Expect { joined: joined(ENV1), header_names: r(&["references"]), ..rep.clone() }.value()),
        t("in.thread.references-newest-known", "References lists two known ids: the newest (last) is the parent", reply(&["References: <m1@example.com> <env_01JQ8Z4XH3K6M2N5P7R9T1V3W7@bridge.test>"]))
            .flags(&["Threading"]).valid_with(Expect { joined: joined(ENV2), header_names: r(&["references"]), ..rep.clone() }.value()),
        t("in.thread.in-reply-to-unknown-references-known", "In-Reply-To unknown, References known: the known one threads the reply", reply(&["In-Reply-To: <lost@example.org>", "References: <m1@example.com> <lost@example.org>"]))
            .flags(&["Threading"]).valid_with(Expect { joined: joined(ENV1), header_names: r(&["in-reply-to", "references"]), ..rep.clone() }.value()),
        t("in.thread.unknown", "In-Reply-To and References name nothing the node recorded: a new thread", reply(&["In-Reply-To: <lost@example.org>", "References: <lost@example.org>"]))
            .flags(&["Threading"]).valid_with(Expect { header_names: r(&["in-reply-to", "references"]), ..rep.clone() }.value()),
        t("in.thread.forged-loom-header", "an X-LOOM-Thread-ID header from the sender is not a mapping input (§21.2 maps Message-ID, References, In-Reply-To only): new thread", reply(&["X-LOOM-Thread-ID: thr_01JQ8Z4XH3K6M2N5P7R9T1V3W5"]))
            .flags(&["Threading", "ForgedHeader"]).valid_with(Expect { header_names: r(&["x-loom-thread-id"]), ..rep.clone() }.value()),
        t("in.thread.no-message-id", "a message without Message-ID maps with original_message_id null", mail(&[FROM, TO_BOB, SUBJECT, DATE, "MIME-Version: 1.0", PLAIN], HELLO))
            .flags(&["Threading"]).valid_with(Expect { message_id: Value::Null, header_names: vec!["content-type", "date", "from", "mime-version", "subject", "to"], ..e.clone() }.value()),
    ]
}

fn content_cases() -> Vec<Case> {
    let e = Expect::new(HELLO_TEXT);
    let with_type = |ct: &[&str], body: &str| {
        let mut h = vec![FROM, TO_BOB, SUBJECT, DATE, MID, "MIME-Version: 1.0"];
        h.extend_from_slice(ct);
        mail(&h, body)
    };
    let names = |extra: &[&'static str]| {
        let mut n = BASE_HEADERS.to_vec();
        n.extend_from_slice(extra);
        n
    };
    let alt = "Content-Type: multipart/alternative; boundary=\"b1\"";
    let alternative = "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHi Bob,\r\n\r\n**lunch** on Friday?\r\n--b1\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Hi Bob,</p><p><b>lunch</b> on Friday?</p>\r\n--b1--\r\n";
    vec![
        inbound("in.body.plain", "a text/plain body becomes content.human with format markdown (§21.2)", &simple(HELLO), bob())
            .flags(&["Content"]).valid_with(e.value()),
        inbound("in.body.markdown-kept", "Markdown characters in plain text are kept as written (mail text is Markdown's origin)", &simple("Use `make test` and **not** _make all_.\r\n- one\r\n- two\r\n"), bob())
            .flags(&["Content"]).valid_with(Expect::new("Use `make test` and **not** _make all_.\n- one\n- two").value()),
        inbound("in.body.quoted-printable", "quoted-printable is decoded (RFC 2045 §6.7)", &with_type(&[PLAIN, "Content-Transfer-Encoding: quoted-printable"], "Gr=C3=BC=C3=9Fe, Bob =E2=80=94 lunch=\r\n at noon?\r\n"), bob())
            .flags(&["Content", "MimeDecoding"]).valid_with(Expect { header_names: names(&["content-transfer-encoding"]), ..Expect::new("Grüße, Bob — lunch at noon?") }.value()),
        inbound("in.body.base64", "base64 is decoded (RFC 2045 §6.8)", &with_type(&[PLAIN, "Content-Transfer-Encoding: base64"], &format!("{}\r\n", B64.encode("Hi Bob,\nlunch?\n"))), bob())
            .flags(&["Content", "MimeDecoding"]).valid_with(Expect { header_names: names(&["content-transfer-encoding"]), ..Expect::new("Hi Bob,\nlunch?") }.value()),
        inbound("in.body.latin1", "an ISO-8859-1 body is converted to UTF-8 (RFC 2046 §4.1.2 charset)", &with_type(&["Content-Type: text/plain; charset=iso-8859-1", "Content-Transfer-Encoding: quoted-printable"], "Caf=E9 at noon?\r\n"), bob())
            .flags(&["Content", "MimeDecoding"]).valid_with(Expect { header_names: names(&["content-transfer-encoding"]), ..Expect::new("Café at noon?") }.value()),
        inbound("in.body.utf8-8bit", "an 8-bit UTF-8 body (RFC 6152)", &simple("東京で会いましょう。\r\n"), bob())
            .flags(&["Content"]).valid_with(Expect::new("東京で会いましょう。").value()),
        inbound("in.body.alternative-prefers-plain", "multipart/alternative: the text/plain alternative is the Markdown source (§21.2 'converted to markdown where possible')", &with_type(&[alt], alternative), bob())
            .flags(&["Content"]).valid_with(Expect::new("Hi Bob,\n\n**lunch** on Friday?").value()),
        inbound("in.body.trailing-whitespace", "line endings become LF and trailing blank lines are dropped (kinds/mime-mapping.md normalization)", &simple("Hi Bob,\r\nlunch?\r\n\r\n\r\n"), bob())
            .flags(&["Content"]).valid_with(Expect::new("Hi Bob,\nlunch?").value()),
        inbound("in.body.empty", "an empty body maps to empty text", &simple(""), bob())
            .flags(&["Content"]).valid_with(Expect::new("").value()),
        inbound("in.body.no-mime-headers", "a bare RFC 5322 message without MIME headers is text/plain us-ascii (RFC 2045 §5.2)", &mail(&[FROM, TO_BOB, SUBJECT, DATE, MID], HELLO), bob())
            .flags(&["Content"]).valid_with(Expect { header_names: vec!["date", "from", "message-id", "subject", "to"], ..e.clone() }.value()),
        inbound("in.body.signature-kept", "a signature block after '-- ' is part of the text", &simple("See you.\r\n-- \r\nAlice Example\r\n"), bob())
            .flags(&["Content"]).valid_with(Expect::new("See you.\n-- \nAlice Example").value()),
        inbound("in.body.html-only", "an HTML-only message: its text, without markup (§21.2 'converted to markdown where possible'; the exact conversion is the bridge's choice)", &with_type(&["Content-Type: text/html; charset=utf-8"], "<p>Hi Bob,</p><p>lunch at noon?</p>\r\n"), bob())
            .flags(&["Content", "Interpretation"]).valid_with(Expect::new("Hi Bob,\nlunch at noon?").value()),
        inbound("in.body.nested", "multipart/mixed around multipart/alternative: the inner text/plain is the body", &with_type(&["Content-Type: multipart/mixed; boundary=\"m1\""], &format!("--m1\r\n{alt}\r\n\r\n{alternative}\r\n--m1--\r\n")), bob())
            .flags(&["Content"]).valid_with(Expect::new("Hi Bob,\n\n**lunch** on Friday?").value()),
    ]
}

/// One attachment part of a multipart/mixed message.
fn attachment_part(headers: &str, content: &[u8]) -> String {
    format!(
        "--m1\r\n{headers}\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n",
        B64.encode(content)
    )
}

fn attachment_cases() -> Vec<Case> {
    let pdf = b"%PDF-1.4\n% test document\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".as_slice();
    let png = [0x89u8, b'P', b'N', b'G', 13, 10, 26, 10, 0, 0, 0, 13].as_slice();
    let with_parts = |parts: &[String]| {
        mail(
            &[
                FROM,
                TO_BOB,
                SUBJECT,
                DATE,
                MID,
                "MIME-Version: 1.0",
                "Content-Type: multipart/mixed; boundary=\"m1\"",
            ],
            &format!("--m1\r\n{PLAIN}\r\n\r\n{HELLO}{}--m1--\r\n", parts.concat()),
        )
    };
    let att = |filename: &str, mime: &str, bytes: &[u8]| json!({"filename": filename, "mime_type": mime, "size_bytes": bytes.len(), "hash": sha(bytes)});
    let e = |atts: Vec<Value>| {
        Expect {
            attachments: atts,
            ..Expect::new(HELLO_TEXT)
        }
        .value()
    };
    vec![
        inbound("in.attach.pdf", "an attachment becomes a blob with filename, type, size and SHA-256 hash (§21.2 attachments; §8.1 attachment fields)", &with_parts(&[attachment_part("Content-Type: application/pdf; name=\"report.pdf\"\r\nContent-Disposition: attachment; filename=\"report.pdf\"", pdf)]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("report.pdf", "application/pdf", pdf)])),
        inbound("in.attach.two-in-order", "two attachments keep their order", &with_parts(&[
            attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"a.pdf\"", pdf),
            attachment_part("Content-Type: image/png\r\nContent-Disposition: attachment; filename=\"b.png\"", png),
        ]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("a.pdf", "application/pdf", pdf), att("b.png", "image/png", png)])),
        inbound("in.attach.rfc2231-name", "an RFC 2231 encoded filename is decoded", &with_parts(&[attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''Bericht%20M%C3%A4rz.pdf", pdf)]), bob())
            .flags(&["Attachments", "MimeDecoding"]).valid_with(e(vec![att("Bericht März.pdf", "application/pdf", pdf)])),
        inbound("in.attach.path-traversal", "a filename with directories keeps only its last component: a blob name is never a path", &with_parts(&[attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"../../etc/passwd\"", pdf)]), bob())
            .flags(&["Attachments", "HostileInput", "Interpretation"]).valid_with(e(vec![att("passwd", "application/pdf", pdf)])),
        inbound("in.attach.windows-path", "a Windows path in the filename keeps only its last component", &with_parts(&[attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"C:\\\\Users\\\\alice\\\\q3.pdf\"", pdf)]), bob())
            .flags(&["Attachments", "HostileInput", "Interpretation"]).valid_with(e(vec![att("q3.pdf", "application/pdf", pdf)])),
        inbound("in.attach.bad-mime-type", "a Content-Type that is not type/subtype is stored as application/octet-stream (§8.1 mime_type)", &with_parts(&[attachment_part("Content-Type: pdf\r\nContent-Disposition: attachment; filename=\"x.pdf\"", pdf)]), bob())
            .flags(&["Attachments", "HostileInput", "Interpretation"]).valid_with(e(vec![att("x.pdf", "application/octet-stream", pdf)])),
        inbound("in.attach.type-lowercased", "media types compare case-insensitively and are stored lowercase (RFC 2045 §5.1)", &with_parts(&[attachment_part("Content-Type: Application/PDF\r\nContent-Disposition: attachment; filename=\"x.pdf\"", pdf)]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("x.pdf", "application/pdf", pdf)])),
        inbound("in.attach.no-filename", "an attachment without a name gets a generated one", &with_parts(&[attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment", pdf)]), bob())
            .flags(&["Attachments", "Interpretation"]).valid_with(e(vec![att("attachment-1", "application/pdf", pdf)])),
        inbound("in.attach.empty", "an empty attachment keeps size 0 and the hash of no bytes", &with_parts(&[attachment_part("Content-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"empty.bin\"", b"")]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("empty.bin", "application/octet-stream", b"")])),
        inbound("in.attach.inline-image", "an inline image with a name is kept as an attachment", &with_parts(&[attachment_part("Content-Type: image/png\r\nContent-Disposition: inline; filename=\"logo.png\"", png)]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("logo.png", "image/png", png)])),
        inbound("in.attach.name-param-only", "a filename given only as the Content-Type name parameter (RFC 2046 legacy)", &with_parts(&[attachment_part("Content-Type: application/pdf; name=\"legacy.pdf\"\r\nContent-Disposition: attachment", pdf)]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("legacy.pdf", "application/pdf", pdf)])),
        inbound("in.attach.control-chars", "control characters in a filename are removed", &with_parts(&[attachment_part("Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"re\tport.pdf\"", pdf)]), bob())
            .flags(&["Attachments", "HostileInput", "Interpretation"]).valid_with(e(vec![att("report.pdf", "application/pdf", pdf)])),
        inbound("in.attach.text-attachment", "a text/plain part marked attachment is an attachment, not the body", &with_parts(&[attachment_part("Content-Type: text/plain; charset=utf-8\r\nContent-Disposition: attachment; filename=\"notes.txt\"", b"private notes\n")]), bob())
            .flags(&["Attachments"]).valid_with(e(vec![att("notes.txt", "text/plain", b"private notes\n")])),
    ]
}

fn policy_cases() -> Vec<Case> {
    let e = Expect::new(HELLO_TEXT);
    let mut names = BASE_HEADERS.to_vec();
    names.extend(["received", "x-custom"]);
    vec![
        inbound("in.quarantine.label", "mail the policy quarantined carries sys.quarantine and never allows auto-actuation (§21.5, §18.5)", &simple(HELLO), bob())
            .input("quarantine", true)
            .flags(&["Quarantine"]).valid_with(Expect { labels: vec!["sys.quarantine"], ..e.clone() }.value()),
        inbound("in.quarantine.off", "mail the policy delivered carries no quarantine label (§21.5)", &simple(HELLO), bob())
            .input("quarantine", false)
            .flags(&["Quarantine"]).valid_with(e.value()),
        inbound("in.list.headers", "list mail's List-* fields become meta.bridge list metadata, unfolded (§20.3 SHOULD; RFC 2369, RFC 2919)", &mail(&[FROM, "To: team@lists.example.com", SUBJECT, DATE, MID, "List-Id: Team talk <team.lists.example.com>", "List-Post: <mailto:team@lists.example.com>", "List-Unsubscribe: <mailto:leave@lists.example.com>,\r\n <https://lists.example.com/leave>", "MIME-Version: 1.0", PLAIN], HELLO), bob())
            .flags(&["Metadata", "Bcc"]).valid_with(Expect {
                copies: vec![copy(&[(BOB, "primary")], Some(&["bridge://alice@example.com", BOB]))],
                header_names: { let mut n = BASE_HEADERS.to_vec(); n.extend(["list-id", "list-post", "list-unsubscribe"]); n },
                list: json!({"id": "Team talk <team.lists.example.com>", "post": "<mailto:team@lists.example.com>", "unsubscribe": "<mailto:leave@lists.example.com>, <https://lists.example.com/leave>"}),
                ..e.clone()
            }.value()),
        inbound("in.headers.preserved", "every original header is preserved, repeated and unknown ones included (§21.2 original_headers)", &mail(&["Received: from a.example.com by b.example.com", "Received: from c.example.com by a.example.com", FROM, TO_BOB, SUBJECT, DATE, MID, "X-Custom: kept", "MIME-Version: 1.0", PLAIN], HELLO), bob())
            .flags(&["Metadata"]).valid_with(Expect { header_names: names, ..e.clone() }.value()),
    ]
}

// ---------------------------------------------------------------------------------------
// envelope → mail
// ---------------------------------------------------------------------------------------

const OUT_ENV: &str = "env_01JQ9A0B1C2D3E4F5G6H7J8K9M";
const OUT_THR: &str = "thr_01JQ9A0B1C2D3E4F5G6H7J8K9N";

/// An envelope from loom://bob@bridge.test to `to` (identity, role) pairs.
fn envelope(to: &[(&str, &str)], text: &str) -> Value {
    json!({
        "loom": "1.1",
        "id": OUT_ENV,
        "thread_id": OUT_THR,
        "parent_id": null,
        "type": "message",
        "from": {"identity": "loom://bob@bridge.test", "display": "Bob Builder", "key_id": "k_sign_bob_1", "type": "human"},
        "to": to.iter().map(|(i, r)| json!({"identity": i, "role": r})).collect::<Vec<_>>(),
        "created_at": "2026-11-28T10:05:00Z",
        "priority": "normal",
        "content": {
            "human": {"text": text, "format": "markdown"},
            "structured": {"intent": "message.general@v1", "parameters": {"subject": "Re: Lunch"}},
            "encrypted": false
        }
    })
}

/// The projection of one outgoing message.
fn out_message(rcpt: &[&str], to: &[&str], cc: &[&str]) -> Value {
    let mut rcpt: Vec<&str> = rcpt.to_vec();
    rcpt.sort_unstable();
    json!({
        "rcpt_to": rcpt,
        "to": to,
        "cc": cc,
        "bcc_header": false,
        "x_loom": {"intent": "message.general@v1", "thread_id": OUT_THR, "envelope_id": OUT_ENV},
        "in_reply_to": null,
        "references_last": null,
        "alternative": ["text/plain", "text/html"],
        "attachments": [],
        "list_id": null,
    })
}

fn outbound(id: &str, comment: &str, envelope: Value) -> Case {
    Case::new(id, comment, OUT)
        .input("envelope", envelope)
        .input("mail_domain", "bridge.test")
}

const ALICE: &str = "bridge://alice@example.com";
const ERIN: &str = "bridge://erin@example.org";
const FRANK: &str = "bridge://frank@example.net";
const HI: &str = "Friday works. **Noon** at the usual place.";

fn outbound_cases() -> Vec<Case> {
    let msgs = |m: Vec<Value>| {
        let mut m = m;
        m.sort_by(|a, b| a["rcpt_to"].to_string().cmp(&b["rcpt_to"].to_string()));
        json!({"messages": m})
    };
    let a = "alice@example.com";
    let e = "erin@example.org";
    let f = "frank@example.net";
    let mut out = vec![
        outbound("out.one-recipient", "one bridged primary: one message with multipart/alternative text and HTML and the three X-LOOM headers (§21.3)", envelope(&[(ALICE, "primary")], HI))
            .flags(&["Rendering", "LoomHeaders"]).valid_with(msgs(vec![out_message(&[a], &[a], &[])])),
        outbound("out.to-and-cc", "primary → To, cc → Cc, one SMTP transaction for both (§20.2, §21.3)", envelope(&[(ALICE, "primary"), (ERIN, "cc")], HI))
            .flags(&["Rendering"]).valid_with(msgs(vec![out_message(&[a, e], &[a], &[e])])),
        outbound("out.two-primaries", "two primaries in To", envelope(&[(ALICE, "primary"), (ERIN, "primary")], HI))
            .flags(&["Rendering"]).valid_with(msgs(vec![out_message(&[a, e], &[a, e], &[])])),
        outbound("out.loom-recipients-not-mailed", "LOOM recipients get the envelope, not mail: only bridge:// identities are SMTP recipients (§21.3 'to email recipients'); To still shows the LOOM primary by its mail-domain address", envelope(&[(CAROL, "primary"), (ALICE, "cc")], HI))
            .flags(&["Recipients", "Interpretation"]).valid_with(msgs(vec![out_message(&[a], &["carol@bridge.test"], &[a])])),
        outbound("out.no-mail-recipient", "no bridge:// recipient: no mail at all", envelope(&[(CAROL, "primary")], HI))
            .flags(&["Recipients"]).valid_with(msgs(vec![])),
        outbound("out.bcc.visible-envelope", "§20.6's visible envelope lists To/Cc only: its mail goes to them and names no one else", envelope(&[(ALICE, "primary"), (ERIN, "cc")], HI))
            .flags(&["Bcc"]).valid_with(msgs(vec![out_message(&[a, e], &[a], &[e])])),
        outbound("out.bcc.two-in-one-envelope", "an envelope listing two bcc recipients (not §20.6's one-per-copy shape): each gets a separate message naming neither, and the visible recipient gets nothing from it (§21.3 MUST)", envelope(&[(ALICE, "primary"), (ERIN, "bcc"), (FRANK, "bcc")], HI))
            .flags(&["Bcc"]).valid_with(msgs(vec![out_message(&[e], &[a], &[]), out_message(&[f], &[a], &[])])),
        outbound("out.bcc.copy-loom-primary", "a bcc-copy whose visible primary is a LOOM identity: only the Bcc recipient is mailed; To shows the primary by its mail-domain address", envelope(&[(CAROL, "primary"), (ERIN, "bcc")], HI))
            .flags(&["Bcc", "Interpretation"]).valid_with(msgs(vec![out_message(&[e], &["carol@bridge.test"], &[])])),
    ];
    // A bcc-copy (§20.6) lists the visible recipients and one bcc recipient: only the bcc
    // recipient is mailed from it (the visible envelope mails the others).
    let mut bcc_copy = envelope(&[(ALICE, "primary"), (ERIN, "bcc")], HI);
    bcc_copy["audience"] =
        json!({"mode": "custom", "identities": ["loom://bob@bridge.test", ERIN]});
    bcc_copy["references"] = json!({"linked_envelopes": ["env_01JQ9A0B1C2D3E4F5G6H7J8K9P"]});
    out.push(
        outbound("out.bcc.copy-envelope", "a bcc-copy envelope mails only its bcc recipient; the visible envelope it links to mails the others (§20.6)", bcc_copy)
            .flags(&["Bcc"]).valid_with(msgs(vec![out_message(&[e], &[a], &[])])),
    );
    // Threading.
    let mut reply = envelope(&[(ALICE, "primary")], HI);
    reply["parent_id"] = json!("env_01JQ9A0B1C2D3E4F5G6H7J8K9Q");
    let mut threaded = out_message(&[a], &[a], &[]);
    threaded["in_reply_to"] = json!("m1@example.com");
    threaded["references_last"] = json!("m1@example.com");
    out.push(
        outbound("out.thread.reply", "a reply to a bridged message: In-Reply-To and the last References entry are the parent's Message-ID (§21.3, RFC 5322 §3.6.4)", reply.clone())
            .input("parent_message_id", "m1@example.com")
            .flags(&["Threading"]).valid_with(msgs(vec![threaded])),
    );
    out.push(
        outbound(
            "out.thread.none",
            "a thread's first envelope has no In-Reply-To or References",
            envelope(&[(ALICE, "primary")], HI),
        )
        .input("parent_message_id", Value::Null)
        .flags(&["Threading"])
        .valid_with(msgs(vec![out_message(&[a], &[a], &[])])),
    );
    // Intent header follows content.structured.intent.
    let mut task = envelope(&[(ALICE, "primary")], "Please review the Q3 draft.");
    task["type"] = json!("task");
    task["content"]["structured"] =
        json!({"intent": "task.create@v1", "parameters": {"title": "Review Q3 draft"}});
    let mut task_msg = out_message(&[a], &[a], &[]);
    task_msg["x_loom"]["intent"] = json!("task.create@v1");
    out.push(
        outbound(
            "out.intent-header",
            "X-LOOM-Intent carries content.structured.intent (§21.3)",
            task,
        )
        .flags(&["LoomHeaders"])
        .valid_with(msgs(vec![task_msg])),
    );
    // Attachments.
    let pdf = b"%PDF-1.4\n% quarterly report\n%%EOF\n".as_slice();
    let mut with_att = envelope(&[(ALICE, "primary")], HI);
    with_att["attachments"] = json!([{
        "id": "att_01JQ9A0B1C2D3E4F5G6H7J8K9R",
        "filename": "q3.pdf",
        "mime_type": "application/pdf",
        "size_bytes": pdf.len(),
        "hash": sha(pdf),
        "blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9S",
    }]);
    let mut att_msg = out_message(&[a], &[a], &[]);
    att_msg["attachments"] = json!([{"filename": "q3.pdf", "mime_type": "application/pdf", "size_bytes": pdf.len(), "hash": sha(pdf)}]);
    out.push(
        outbound("out.attachment", "a blob becomes a MIME attachment with its filename and type, bytes unchanged (§21.3 'Attach blobs')", with_att)
            .input("blobs", json!([{"blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9S", "data_base64": B64.encode(pdf)}]))
            .flags(&["Attachments"]).valid_with(msgs(vec![att_msg])),
    );
    // Header injection through fields the sender controls.
    let mut inject = envelope(&[(ALICE, "primary")], HI);
    inject["from"]["display"] = json!("Bob\r\nBcc: victim@example.net");
    inject["content"]["structured"]["parameters"]["subject"] =
        json!("Hi\r\nBcc: victim2@example.net");
    out.push(
        outbound("out.header-injection", "CR LF in the display name or subject never starts a new header: no Bcc appears and no extra recipient is mailed (RFC 5322 §2.2)", inject)
            .flags(&["HostileInput", "Bcc"]).valid_with(msgs(vec![out_message(&[a], &[a], &[])])),
    );
    let png = [0x89u8, b'P', b'N', b'G', 13, 10, 26, 10].as_slice();
    let mut two = envelope(&[(ALICE, "primary")], HI);
    two["attachments"] = json!([
        {"id": "att_01JQ9A0B1C2D3E4F5G6H7J8K9T", "filename": "Bericht März.pdf", "mime_type": "application/pdf", "size_bytes": pdf.len(), "hash": sha(pdf), "blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9V"},
        {"id": "att_01JQ9A0B1C2D3E4F5G6H7J8K9W", "filename": "chart.png", "mime_type": "image/png", "size_bytes": png.len(), "hash": sha(png), "blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9X"},
    ]);
    let mut two_msg = out_message(&[a], &[a], &[]);
    two_msg["attachments"] = json!([
        {"filename": "Bericht März.pdf", "mime_type": "application/pdf", "size_bytes": pdf.len(), "hash": sha(pdf)},
        {"filename": "chart.png", "mime_type": "image/png", "size_bytes": png.len(), "hash": sha(png)},
    ]);
    out.push(
        outbound(
            "out.attachments.two-unicode-name",
            "two blobs in order; a non-ASCII filename survives the round trip (RFC 2231)",
            two,
        )
        .input(
            "blobs",
            json!([
                {"blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9V", "data_base64": B64.encode(pdf)},
                {"blob_id": "blob_01JQ9A0B1C2D3E4F5G6H7J8K9X", "data_base64": B64.encode(png)},
            ]),
        )
        .flags(&["Attachments"])
        .valid_with(msgs(vec![two_msg])),
    );
    out.push(
        outbound("out.observer-role", "an observer bridge recipient is shown in Cc (email has no observer role; §20.2 maps To and Cc only)", envelope(&[(ALICE, "primary"), (ERIN, "observer")], HI))
            .flags(&["Recipients", "Interpretation"]).valid_with(msgs(vec![out_message(&[a, e], &[a], &[e])])),
    );
    let mut plaintext = envelope(&[(ALICE, "primary")], "line one\nline <two>");
    plaintext["content"]["human"]["format"] = json!("plaintext");
    out.push(
        outbound(
            "out.plaintext-format",
            "content.human in plaintext format is still sent as text and HTML alternatives (§21.3)",
            plaintext,
        )
        .flags(&["Rendering"])
        .valid_with(msgs(vec![out_message(&[a], &[a], &[])])),
    );
    let mut no_structured = envelope(&[(ALICE, "primary")], HI);
    no_structured["content"]
        .as_object_mut()
        .map(|c| c.remove("structured"));
    out.push(
        outbound(
            "out.intent-default",
            "an envelope without content.structured: X-LOOM-Intent is the general message intent",
            no_structured,
        )
        .flags(&["LoomHeaders", "Interpretation"])
        .valid_with(msgs(vec![out_message(&[a], &[a], &[])])),
    );
    let mut own_parent = envelope(&[(ALICE, "primary")], HI);
    own_parent["parent_id"] = json!("env_01JQ9A0B1C2D3E4F5G6H7J8K9Y");
    let mut own_msg = out_message(&[a], &[a], &[]);
    own_msg["in_reply_to"] = json!("env_01JQ9A0B1C2D3E4F5G6H7J8K9Y@bridge.test");
    own_msg["references_last"] = json!("env_01JQ9A0B1C2D3E4F5G6H7J8K9Y@bridge.test");
    out.push(
        outbound("out.thread.reply-to-own-mail", "a reply to an envelope the bridge mailed before: threading uses the Message-ID that mail carried", own_parent)
            .input("parent_message_id", "env_01JQ9A0B1C2D3E4F5G6H7J8K9Y@bridge.test")
            .flags(&["Threading"]).valid_with(msgs(vec![own_msg])),
    );
    let mut team = envelope(&[(ALICE, "primary"), (ERIN, "primary")], HI);
    team["from"] = json!({"identity": "loom://dev-team@bridge.test", "display": "Dev Team", "key_id": "k_sign_team_1", "type": "team"});
    let mut team_msg = out_message(&[a, e], &[a, e], &[]);
    team_msg["list_id"] = json!("\"Dev Team\" <dev-team.bridge.test>");
    out.push(
        outbound("out.team-list-headers", "mail from a team identity (a distribution list, §20.3) carries List-Id (RFC 2919) so clients treat it as list mail", team)
            .flags(&["Rendering", "Interpretation"]).valid_with(msgs(vec![team_msg])),
    );
    let mut no_created = envelope(&[(ALICE, "primary")], HI);
    no_created.as_object_mut().map(|o| o.remove("created_at"));
    out.push(
        outbound(
            "out.invalid-envelope",
            "an envelope without created_at cannot be rendered (no Date; §8.1 requires created_at)",
            no_created,
        )
        .flags(&["HostileInput"])
        .invalid("ENVELOPE_INVALID"),
    );
    out
}

/// Builds `v1/mime-mapping.json`.
pub fn build() -> FileBuilder {
    FileBuilder::new(
        "mime-mapping",
        "The email bridge's mapping (v1.1 §21.2 mail → envelope, §21.3 envelope → mail, with §8.2 recipients, §20.6 BCC, §21.5 quarantine). Both kinds compare a projection of the result (kinds/mime-mapping.md): the fields the spec names, never ids, MIME boundaries or header folding.",
    )
    .note("BridgeIdentity", "The sender becomes bridge://{email} with from.type bridge (§21.2).", "wrong sender mapping", "Bridged mail is attributed to the wrong identity or looks native.")
    .note("AuthorAmbiguous", "Mail without exactly one From mailbox.", "author confusion", "Mail is attributed to an author DMARC never judged (a second From, a group, the SMTP reverse path): a spoofing path around p=reject.")
    .note("Recipients", "Which local recipients an envelope lists and in which role (§20.2, §8.2).", "wrong recipient mapping", "Messages reach the wrong people or carry the wrong roles.")
    .note("Bcc", "Hidden recipients (§20.6, §21.3): private copies inbound, separate SMTP messages outbound, never a Bcc header.", "BCC leak", "Blind-copied recipients are revealed to the others.")
    .note("Threading", "Message-ID / In-Reply-To / References ↔ thread_id / parent_id (§21.2, §21.3).", "broken threading", "Replies start new threads, or mail joins a thread it never belonged to.")
    .note("ForgedHeader", "A header a mail sender controls that must not decide LOOM state.", "trusting sender-controlled headers", "A spoofed X-LOOM header injects mail into a thread the sender cannot see.")
    .note("Content", "content.human from the mail body (§21.2).", "wrong body extraction", "Recipients see the wrong part, mojibake or nothing.")
    .note("MimeDecoding", "Transfer encodings, charsets, RFC 2047 and RFC 2231 parameters.", "missing MIME decoding", "Recipients see encoded text instead of the message.")
    .note("Attachments", "Attachments ↔ blobs (§21.2, §21.3, §8.1 attachment fields).", "attachment loss or corruption", "Files are lost, renamed or altered across the bridge.")
    .note("HostileInput", "Input a sender crafts against the bridge.", "injection", "Paths, headers or recipients an attacker chose end up in storage or in outgoing mail.")
    .note("Quarantine", "The sys.quarantine label and the auto-actuation signal (§21.5, §18.5).", "missing quarantine", "Unauthenticated mail triggers agents.")
    .note("Metadata", "meta.bridge: source, original headers, trust (§21.2).", "lost provenance", "Clients cannot show where a message came from or audit it.")
    .note("Rendering", "content.human rendered as text/plain and text/html alternatives (§21.3).", "incomplete rendering", "Mail clients show raw Markdown or nothing.")
    .note("LoomHeaders", "X-LOOM-Intent, X-LOOM-Thread-ID, X-LOOM-Envelope-ID (§21.3).", "missing LOOM headers", "Replies and LOOM-aware clients cannot find the envelope.")
    .note("Interpretation", "The spec is silent; the test pins the reading the comment gives (kinds/mime-mapping.md lists each).", "divergent reading", "A different but defensible choice; compare with the comment before calling it a bug.")
    .group("mail-to-envelope", Value::Null)
    .tests(sender_cases())
    .tests(recipient_cases())
    .tests(threading_cases())
    .tests(content_cases())
    .tests(attachment_cases())
    .tests(policy_cases())
    .group("envelope-to-mail", Value::Null)
    .tests(outbound_cases())
}

/// The schema of `v1/mime-mapping.json`.
pub fn schema() -> AreaSchema {
    let obj = json!({"type": "object"});
    AreaSchema {
        kinds: vec!["mail-to-envelope", "envelope-to-mail"],
        inputs: vec![
            ("message", string()),
            (
                "rcpt_to",
                json!({"type": "array", "items": {"type": "object", "additionalProperties": false,
                    "required": ["email", "identity"],
                    "properties": {"email": string(), "identity": string()}}}),
            ),
            (
                "known_messages",
                json!({"type": "array", "items": {"type": "object", "additionalProperties": false,
                    "required": ["message_id", "thread_id", "envelope_id"],
                    "properties": {"message_id": string(), "thread_id": string(), "envelope_id": string()}}}),
            ),
            ("quarantine", json!({"type": "boolean"})),
            ("envelope", obj.clone()),
            ("mail_domain", string()),
            ("parent_message_id", json!({"type": ["string", "null"]})),
            (
                "blobs",
                json!({"type": "array", "items": {"type": "object", "additionalProperties": false,
                    "required": ["blob_id", "data_base64"],
                    "properties": {"blob_id": string(), "data_base64": string()}}}),
            ),
        ],
        required: vec![],
        expected: obj,
        errors: vec!["FROM_INVALID", "NO_LOCAL_RECIPIENT", "ENVELOPE_INVALID"],
    }
}
