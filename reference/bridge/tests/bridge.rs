//! The bridge's pieces against each other and against the protocol core: mail the outbound
//! side renders and signs verifies on the inbound side (SPF, DKIM for both algorithms,
//! DMARC), tampering is caught, mapped drafts are valid v1.1 envelopes once signed, and
//! the SMTP server and client talk over a real loopback socket.

use loom_bridge::auth::{
    AuthPolicy, Connection, Disposition, FailAction, Record, Records, Verifier,
};
use loom_bridge::inbound::{InboundSettings, MessageIndex, NoIndex, Received, map_message};
use loom_bridge::outbound::{
    AttachmentBytes, Dkim, MailRecipient, OutboundSettings, Threading, render,
};
use loom_bridge::smtp::client::{self, RecipientOutcome};
use loom_bridge::smtp::server::{ServerConfig, serve_tcp};
use loom_bridge::smtp::session::{SessionConfig, SessionLimits, Transaction};
use loom_bridge::smtp::sink::RecordingSink;
use loom_protocol::{Address, KeyId, KeyKind};
use mail_parser::MimeHeaders;
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

const DOMAIN: &str = "mail.a.test";
const LOOPBACK: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

fn envelope() -> Value {
    json!({
        "loom": "1.1",
        "id": "env_01JMKB7X9Q2RVHF3KN4TYZPG01",
        "thread_id": "thr_01JMKB7X9Q2RVHF3KN4TYZPG00",
        "parent_id": "env_01JMKB7X9Q2RVHF3KN4TYZPG00",
        "type": "message",
        "from": {"identity": "loom://alice@a.test", "display": "Alice A", "key_id": "k_sign_1", "type": "human"},
        "to": [{"identity": "bridge://carol@b.test", "role": "primary"}],
        "created_at": "2026-11-29T08:00:00Z",
        "content": {
            "human": {"text": "# Plan\n\nShip **Friday**. <script>alert(1)</script>\n\n.line starting with a dot", "format": "markdown"},
            "structured": {"intent": "message.general@v1", "parameters": {"subject": "The plan"}},
            "encrypted": false
        }
    })
}

fn ed25519_dkim() -> Dkim {
    Dkim::ed25519(DOMAIN, "ed", &[7u8; 32]).expect("ed25519 key")
}

fn rsa_dkim() -> Dkim {
    let pem = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/dkim-rsa-test.pem"
    ))
    .expect("test key");
    Dkim::rsa_pem(DOMAIN, "rsa", &pem).expect("rsa key")
}

/// The bridge domain's DNS: SPF for loopback, the DKIM key, and DMARC `p=reject`.
fn records(dkim: &Dkim) -> Arc<Records> {
    let r = Records::new(true);
    for (name, kind, value) in [
        (
            DOMAIN.to_string(),
            "TXT",
            "v=spf1 ip4:127.0.0.1 -all".to_string(),
        ),
        (dkim.dns_name(), "TXT", dkim.dns_record().to_string()),
        (
            format!("_dmarc.{DOMAIN}"),
            "TXT",
            "v=DMARC1; p=reject".to_string(),
        ),
    ] {
        r.add(&Record {
            name,
            kind: kind.into(),
            value,
        })
        .expect("record");
    }
    Arc::new(r)
}

fn rendered(dkim: Option<Dkim>) -> loom_bridge::outbound::Outgoing {
    let settings = OutboundSettings {
        domain: DOMAIN.into(),
        dkim,
    };
    let mut out = render(
        &envelope(),
        &[MailRecipient {
            email: "carol@b.test".into(),
            role: "primary".into(),
        }],
        &Threading {
            in_reply_to: Some("env_01JMKB7X9Q2RVHF3KN4TYZPG00@mail.a.test".into()),
            references: vec!["env_01JMKB7X9Q2RVHF3KN4TYZPG00@mail.a.test".into()],
        },
        &[],
        &settings,
    )
    .expect("render");
    assert_eq!(out.len(), 1);
    out.remove(0)
}

async fn verify(
    raw: &[u8],
    mail_from: &str,
    records: Arc<Records>,
) -> loom_bridge::auth::AuthResults {
    let v = Verifier::new(records, None, "mx.a.test").expect("verifier");
    v.verify(
        raw,
        Connection {
            ip: LOOPBACK,
            helo: DOMAIN,
            mail_from,
        },
    )
    .await
}

#[tokio::test]
async fn signed_outbound_mail_passes_spf_dkim_and_dmarc_for_both_algorithms() {
    for dkim in [ed25519_dkim(), rsa_dkim()] {
        let records = records(&dkim);
        let algorithm = if dkim.dns_record().contains("k=ed25519") {
            "ed25519-sha256"
        } else {
            "rsa-sha256"
        };
        let mail = rendered(Some(dkim));
        let auth = verify(&mail.data, &mail.mail_from, records).await;
        assert_eq!(auth.spf, "pass", "{algorithm}: {auth:?}");
        assert_eq!(auth.dkim, "pass", "{algorithm}: {auth:?}");
        assert_eq!(auth.dkim_signatures[0].algorithm, algorithm);
        assert_eq!(auth.dmarc, "pass", "{algorithm}: {auth:?}");
        assert!(auth.dkim_aligned && auth.spf_aligned);
        assert_eq!(
            auth.disposition(&AuthPolicy::default()),
            Disposition::Deliver
        );
    }
}

#[tokio::test]
async fn a_tampered_body_fails_dkim_and_a_foreign_ip_fails_spf_so_dmarc_rejects() {
    let dkim = ed25519_dkim();
    let records = records(&dkim);
    let mail = rendered(Some(dkim));
    let tampered = String::from_utf8(mail.data.clone())
        .expect("utf-8")
        .replace("Friday", "Monday");
    let v = Verifier::new(records, None, "mx.a.test").expect("verifier");
    let auth = v
        .verify(
            tampered.as_bytes(),
            Connection {
                ip: "192.0.2.9".parse().expect("ip"),
                helo: "evil.test",
                mail_from: &mail.mail_from,
            },
        )
        .await;
    assert_eq!(auth.spf, "fail", "{auth:?}");
    assert_eq!(auth.dkim, "fail", "{auth:?}");
    assert_eq!(auth.dmarc, "fail", "{auth:?}");
    assert_eq!(auth.dmarc_policy, "reject");
    assert!(matches!(
        auth.disposition(&AuthPolicy::default()),
        Disposition::Refuse(_)
    ));
    let quarantine = AuthPolicy {
        dmarc_reject: FailAction::Quarantine,
        ..AuthPolicy::default()
    };
    assert!(matches!(
        auth.disposition(&quarantine),
        Disposition::Quarantine(_)
    ));
}

#[tokio::test]
async fn unsigned_mail_from_a_domain_without_records_is_quarantined_not_delivered() {
    let mail = rendered(None);
    let auth = verify(&mail.data, &mail.mail_from, Arc::new(Records::new(true))).await;
    assert_eq!(
        (auth.spf.as_str(), auth.dkim.as_str(), auth.dmarc.as_str()),
        ("none", "none", "none")
    );
    assert!(matches!(
        auth.disposition(&AuthPolicy::default()),
        Disposition::Quarantine(_)
    ));
}

#[test]
fn outbound_mail_carries_the_loom_headers_threading_and_both_bodies() {
    let mail = rendered(None);
    let text = String::from_utf8(mail.data.clone()).expect("utf-8");
    let parsed = mail_parser::MessageParser::default()
        .parse(&mail.data)
        .expect("parses");
    for (h, v) in [
        ("X-LOOM-Intent", "message.general@v1"),
        ("X-LOOM-Thread-ID", "thr_01JMKB7X9Q2RVHF3KN4TYZPG00"),
        ("X-LOOM-Envelope-ID", "env_01JMKB7X9Q2RVHF3KN4TYZPG01"),
    ] {
        assert_eq!(parsed.header_raw(h).map(str::trim), Some(v), "{h}");
    }
    assert_eq!(
        parsed.message_id(),
        Some("env_01JMKB7X9Q2RVHF3KN4TYZPG01@mail.a.test")
    );
    assert!(
        parsed
            .header_raw("In-Reply-To")
            .is_some_and(|v| v.contains("env_01JMKB7X9Q2RVHF3KN4TYZPG00@mail.a.test"))
    );
    assert!(parsed.header_raw("References").is_some());
    assert_eq!(parsed.subject(), Some("The plan"));
    assert!(text.contains("multipart/alternative"));
    let html = parsed.body_html(0).expect("html part");
    assert!(html.contains("<strong>Friday</strong>"), "{html}");
    assert!(
        !html.contains("<script>"),
        "raw HTML in Markdown is escaped: {html}"
    );
    assert!(
        parsed
            .body_text(0)
            .expect("text")
            .contains("Ship **Friday**")
    );
    assert_eq!(
        mail.mail_from,
        "bounces+env_01JMKB7X9Q2RVHF3KN4TYZPG01@mail.a.test"
    );
    assert_eq!(
        loom_bridge::smtp::session::bare_line_break(&mail.data),
        None,
        "CRLF only: {text:?}"
    );
    // Deterministic: the same envelope renders the same bytes.
    assert_eq!(rendered(None).data, mail.data);
}

#[test]
fn bcc_recipients_get_separate_messages_that_name_no_bcc() {
    let settings = OutboundSettings {
        domain: DOMAIN.into(),
        dkim: None,
    };
    let recipients = [
        MailRecipient {
            email: "carol@b.test".into(),
            role: "primary".into(),
        },
        MailRecipient {
            email: "dave@b.test".into(),
            role: "cc".into(),
        },
        MailRecipient {
            email: "erin@b.test".into(),
            role: "bcc".into(),
        },
        MailRecipient {
            email: "frank@b.test".into(),
            role: "bcc".into(),
        },
    ];
    let out = render(
        &envelope(),
        &recipients,
        &Threading::default(),
        &[AttachmentBytes {
            filename: "plan.txt".into(),
            mime_type: "text/plain".into(),
            bytes: b"step 1".to_vec(),
        }],
        &settings,
    )
    .expect("render");
    assert_eq!(out.len(), 3, "one visible message + one per Bcc recipient");
    assert_eq!(out[0].rcpt_to, ["carol@b.test", "dave@b.test"]);
    assert_eq!(out[1].rcpt_to, ["erin@b.test"]);
    assert_eq!(out[2].rcpt_to, ["frank@b.test"]);
    for m in &out {
        let text = String::from_utf8_lossy(&m.data).to_ascii_lowercase();
        assert!(
            !text.contains("erin@") && !text.contains("frank@") && !text.contains("\nbcc:"),
            "{text}"
        );
        let parsed = mail_parser::MessageParser::default()
            .parse(&m.data)
            .expect("parses");
        assert_eq!(parsed.attachment_count(), 1);
        assert_eq!(
            parsed.attachment(0).and_then(|a| a.attachment_name()),
            Some("plan.txt")
        );
    }
    assert_ne!(out[1].message_id, out[2].message_id);
}

struct Index;

impl MessageIndex for Index {
    fn find(&self, message_id: &str) -> Option<(String, String)> {
        (message_id == "env_01JMKB7X9Q2RVHF3KN4TYZPG01@mail.a.test").then(|| {
            (
                "thr_01JMKB7X9Q2RVHF3KN4TYZPG00".to_string(),
                "env_01JMKB7X9Q2RVHF3KN4TYZPG01".to_string(),
            )
        })
    }
}

const REPLY: &str = "From: Carol C <carol@b.test>\r\nTo: alice@a.test\r\nCc: bob@a.test\r\n\
Subject: Re: The plan\r\nMessage-ID: <r1@b.test>\r\nIn-Reply-To: <env_01JMKB7X9Q2RVHF3KN4TYZPG01@mail.a.test>\r\n\
Date: Sun, 29 Nov 2026 08:05:00 +0000\r\nX-Priority: 2\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
Friday works.\r\n--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"../../etc/plan.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n";

fn mapped(
    raw: &str,
    recipients: &[&str],
    disposition: &Disposition,
    index: &dyn MessageIndex,
) -> loom_bridge::inbound::Mapped {
    let auth = loom_bridge::auth::AuthResults {
        spf: "pass".into(),
        dkim: "pass".into(),
        dmarc: "pass".into(),
        spf_domain: "b.test".into(),
        dkim_signatures: Vec::new(),
        dmarc_domain: "b.test".into(),
        dmarc_policy: "reject".into(),
        spf_aligned: true,
        dkim_aligned: true,
        client_ip: "192.0.2.1".into(),
    };
    let identities: Vec<Address> = recipients
        .iter()
        .map(|e| Address::parse_wire(&format!("loom://{e}")).expect("address"))
        .collect();
    let emails: Vec<String> = recipients.iter().map(|e| e.to_string()).collect();
    let mut n = 0u32;
    map_message(
        &Received {
            raw: raw.as_bytes(),
            mail_from: "carol@b.test",
            recipients: &identities,
            recipient_emails: &emails,
            received_at: "2026-11-29T08:05:01Z",
        },
        &auth,
        disposition,
        index,
        &InboundSettings::new("k_sign_bridge_1"),
        &mut || {
            n += 1;
            format!("01JMKB7X9Q2RVHF3KN4TYZP{n:03}")
        },
    )
    .expect("maps")
}

fn sign_and_validate(mut e: Value) -> Value {
    let key = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
    let key_id = KeyId::parse("k_sign_bridge_1", KeyKind::Signing).expect("key id");
    loom_protocol::envelope::sign::sign_envelope(&mut e, &key, &key_id).expect("signs");
    loom_protocol::validate_envelope(&e).unwrap_or_else(|err| panic!("{err:?}\n{e:#}"));
    loom_protocol::policy::check_bcc_copy(&e).unwrap_or_else(|err| panic!("{err:?}\n{e:#}"));
    e
}

#[test]
fn a_reply_maps_onto_its_thread_with_roles_trust_and_attachments() {
    let m = mapped(
        REPLY,
        &["alice@a.test", "bob@a.test", "dan@a.test"],
        &Disposition::Deliver,
        &Index,
    );
    assert_eq!(m.sender.to_string(), "bridge://carol@b.test");
    assert_eq!(m.display, "Carol C");
    assert_eq!(
        m.envelopes.len(),
        2,
        "visible + one bcc-copy for dan, whom no header names"
    );
    let visible = sign_and_validate(m.envelopes[0].clone());
    assert_eq!(visible["from"]["type"], "bridge");
    assert_eq!(visible["thread_id"], "thr_01JMKB7X9Q2RVHF3KN4TYZPG00");
    assert_eq!(visible["parent_id"], "env_01JMKB7X9Q2RVHF3KN4TYZPG01");
    assert_eq!(
        visible["to"],
        json!([
            {"identity": "loom://alice@a.test", "role": "primary"},
            {"identity": "loom://bob@a.test", "role": "cc"}
        ])
    );
    assert_eq!(visible["priority"], "high");
    assert_eq!(
        visible["content"]["human"],
        json!({"text": "Friday works.", "format": "markdown"})
    );
    let s = &visible["content"]["structured"];
    assert_eq!(
        (s["extracted"].clone(), s["authoritative"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(s["extraction_confidence"], 0.3);
    assert_eq!(
        visible["attachments"][0]["filename"], "plan.pdf",
        "no path in a file name"
    );
    assert_eq!(visible["attachments"][0]["mime_type"], "application/pdf");
    assert_eq!(m.attachments[0].bytes, b"%PDF-1.4\n");
    assert_eq!(
        visible["references"]["external"],
        json!([{"type": "email_message_id", "ref": "r1@b.test"}])
    );
    let copy = sign_and_validate(m.envelopes[1].clone());
    assert_eq!(
        copy["to"][2],
        json!({"identity": "loom://dan@a.test", "role": "bcc"})
    );
    assert_eq!(
        copy["audience"]["identities"],
        json!(["bridge://carol@b.test", "loom://dan@a.test"])
    );
    assert_eq!(
        copy["references"]["linked_envelopes"],
        json!([visible["id"]])
    );
    let meta = &m.meta_bridge;
    assert_eq!(meta["source"], "email");
    assert_eq!(meta["original_message_id"], "r1@b.test");
    assert_eq!(meta["original_headers"]["subject"], json!(["Re: The plan"]));
    assert_eq!(meta["auth_results"]["dmarc"], "pass");
    assert_eq!(meta["structured_trust"]["authoritative"], false);
    assert_eq!(
        meta["structured_trust"]["auto_actuation_allowed"], false,
        "off unless the operator opts in"
    );
}

#[test]
fn quarantined_mail_is_labelled_and_unknown_threads_start_new_ones() {
    let m = mapped(
        REPLY,
        &["alice@a.test"],
        &Disposition::Quarantine("no DMARC".into()),
        &NoIndex,
    );
    let e = sign_and_validate(m.envelopes[0].clone());
    assert_eq!(e["labels"], json!(["sys.quarantine"]));
    assert_eq!(e["parent_id"], Value::Null);
    assert!(
        e["thread_id"]
            .as_str()
            .is_some_and(|t| t.starts_with("thr_"))
    );
    assert_eq!(m.meta_bridge["quarantine"]["reason"], "no DMARC");
    assert_eq!(m.meta_bridge["structured_trust"]["trust_level"], "low");
}

#[test]
fn mail_naming_no_local_recipient_in_its_headers_reaches_each_privately() {
    let list = "From: list@b.test\r\nTo: everyone@lists.b.test\r\nSubject: news\r\n\r\nhello\r\n";
    let m = mapped(
        list,
        &["alice@a.test", "bob@a.test"],
        &Disposition::Deliver,
        &NoIndex,
    );
    assert_eq!(m.envelopes.len(), 2);
    for (e, who) in m.envelopes.iter().zip(["alice", "bob"]) {
        let e = sign_and_validate(e.clone());
        assert_eq!(
            e["to"],
            json!([{"identity": format!("loom://{who}@a.test"), "role": "primary"}])
        );
        assert_eq!(e["audience"]["mode"], "custom");
        assert_eq!(e["thread_id"], m.envelopes[0]["thread_id"]);
    }
}

#[test]
fn html_only_mail_becomes_text() {
    let html = "From: x@b.test\r\nTo: alice@a.test\r\nContent-Type: text/html\r\n\r\n<p>Hello <b>there</b></p>\r\n";
    let m = mapped(html, &["alice@a.test"], &Disposition::Deliver, &NoIndex);
    let text = m.envelopes[0]["content"]["human"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Hello") && !text.contains("<p>"), "{text}");
    assert_eq!(m.meta_bridge["human_source"], "text/html");
}

// ---- SMTP over a real socket ----------------------------------------------------------

#[tokio::test]
async fn the_client_delivers_to_the_server_over_loopback_with_dot_stuffing_intact() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let sink = Arc::new(RecordingSink::refusing("mallory@"));
    let config = Arc::new(ServerConfig::new(SessionConfig {
        hostname: "mx.a.test".into(),
        limits: SessionLimits::default(),
        starttls: false,
        require_tls: false,
    }));
    let server = tokio::spawn(serve_tcp(listener, config, None, sink.clone()));
    let data = b"Subject: dots\r\n\r\n.leading dot\r\n..two\r\nend\r\n".to_vec();
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let rcpts = vec![
        "alice@a.test".to_string(),
        "mallory@elsewhere.test".to_string(),
    ];
    let outcomes = client::send(
        stream,
        &client::Envelope {
            helo: "client.b.test",
            mail_from: "carol@b.test",
            rcpt_to: &rcpts,
            data: &data,
        },
        Duration::from_secs(5),
    )
    .await
    .expect("sent");
    assert_eq!(
        outcomes[1],
        ("alice@a.test".to_string(), RecipientOutcome::Delivered)
    );
    assert!(
        matches!(&outcomes[0], (r, RecipientOutcome::Failed(why)) if r == "mallory@elsewhere.test" && why.starts_with("550"))
    );
    let got: Vec<Transaction> = sink.arrived().into_iter().map(|a| a.tx).collect();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].data, data,
        "dot-stuffed by the client, unstuffed by the server"
    );
    assert_eq!(got[0].rcpt_to, ["alice@a.test"]);
    server.abort();
}

#[test]
fn mail_without_exactly_one_from_address_is_not_mapped_to_anyone() {
    let settings = InboundSettings::new("k_sign_bridge_1");
    let alice = [Address::parse_wire("loom://alice@a.test").expect("address")];
    let emails = ["alice@a.test".to_string()];
    let auth = loom_bridge::auth::AuthResults {
        spf: "pass".into(),
        dkim: "none".into(),
        dmarc: "none".into(),
        spf_domain: "b.test".into(),
        dkim_signatures: Vec::new(),
        dmarc_domain: String::new(),
        dmarc_policy: "unspecified".into(),
        spf_aligned: true,
        dkim_aligned: false,
        client_ip: "192.0.2.1".into(),
    };
    for (why, raw) in [
        (
            "no From field",
            "To: alice@a.test\r\nSubject: x\r\n\r\nbody\r\n",
        ),
        (
            "two From fields",
            "From: a@b.test\r\nFrom: ceo@a.test\r\nTo: alice@a.test\r\n\r\nbody\r\n",
        ),
        (
            "two addresses",
            "From: a@b.test, c@d.test\r\nTo: alice@a.test\r\n\r\nbody\r\n",
        ),
        (
            "no address",
            "From: undisclosed-recipients:;\r\nTo: alice@a.test\r\n\r\nbody\r\n",
        ),
    ] {
        let mut n = 0;
        let r = map_message(
            &Received {
                raw: raw.as_bytes(),
                mail_from: "x@reject.test",
                recipients: &alice,
                recipient_emails: &emails,
                received_at: "2026-11-29T08:00:00Z",
            },
            &auth,
            &Disposition::Deliver,
            &NoIndex,
            &settings,
            &mut || {
                n += 1;
                format!("01JMKB7X9Q2RVHF3KN4TYZP{n:03}")
            },
        );
        let e = r.expect_err(why);
        assert_eq!(e.field, "From", "{why}: {e}");
    }
}
