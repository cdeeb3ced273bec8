//! The email bridge end to end on loopback (v1.1 §21): authenticated mail becomes an
//! envelope in the recipient's thread with `meta.bridge`; a reply goes out DKIM-signed to a
//! sink with the thread's headers; the sink's reply threads back; spoofed mail is refused
//! and stored nowhere; a refused outbound recipient ends in `BRIDGE_DELIVERY_FAILED`.

use crate::support::*;
use loom_bridge::auth::{Connection, Record, Records, Verifier};
use loom_bridge::outbound::Dkim;
use loom_bridge::smtp::client::{self, RecipientOutcome};
use loom_bridge::smtp::server::{Handler, ServerConfig, serve_tcp};
use loom_bridge::smtp::session::{
    RecipientVerdict, Recipients, SessionConfig, SessionLimits, Transaction, Verdict,
};
use loom_bridge::smtp::sink::RecordingSink;
use loom_node::config::BridgeConfig;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The outside world's mail host `b.test`: its DKIM key.
fn outside_dkim() -> Dkim {
    Dkim::ed25519("b.test", "ext", &[3u8; 32]).unwrap()
}

fn txt(name: &str, value: &str) -> Record {
    Record {
        name: name.into(),
        kind: "TXT".into(),
        value: value.into(),
    }
}

/// `b.test`'s records: SPF `spf`, the DKIM key, DMARC `p=reject`.
fn outside_records(spf: &str) -> Vec<Record> {
    let dkim = outside_dkim();
    vec![
        txt("b.test", spf),
        txt(&dkim.dns_name(), dkim.dns_record()),
        txt("_dmarc.b.test", "v=DMARC1; p=reject"),
    ]
}

/// An unsigned Markdown message from `from` to the bridge recipient `to` (`carol@b.test`):
/// the support's message with its recipients replaced.
pub fn to_bridge(
    node: &TestNode,
    from: &Ident,
    thread: &str,
    parent: Option<&str>,
    to: &str,
    text: &str,
) -> Value {
    let mut env = from.message(node, thread, parent, &[], text);
    env["to"] = json!([{"identity": format!("bridge://{to}"), "role": "primary"}]);
    env["content"]["human"]["format"] = json!("markdown");
    env
}

/// A mail sink standing in for the outside world's MX; refuses `nobody@`.
type Sink = RecordingSink;

fn sink() -> Arc<Sink> {
    Arc::new(RecordingSink::refusing("nobody@"))
}

fn smtp_config() -> Arc<ServerConfig> {
    Arc::new(ServerConfig::new(SessionConfig {
        hostname: "mx.b.test".into(),
        limits: SessionLimits::default(),
        starttls: false,
        require_tls: false,
    }))
}

struct World {
    node: TestNode,
    smtp: SocketAddr,
    sink: Arc<Sink>,
    alice: Ident,
}

/// A node for `a.test` with a bridge whose outbound mail goes to the sink, and whose DNS
/// knows `b.test` ([`outside_records`]).
async fn world(spf: &str) -> World {
    world_with(spf, |_| {}).await
}

/// [`world`] with the node's configuration changed by `tweak` first.
async fn world_with(spf: &str, tweak: impl FnOnce(&mut loom_node::NodeConfig)) -> World {
    let sink = sink();
    let sink_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sink_addr = sink_listener.local_addr().unwrap();
    tokio::spawn(serve_tcp(sink_listener, smtp_config(), None, sink.clone()));
    let records = outside_records(spf);
    let node = TestNode::with(|c| {
        tweak(c);
        let mut b = BridgeConfig::new("127.0.0.1:0".parse().unwrap());
        b.smarthost = Some(sink_addr.to_string());
        b.dns_records = records;
        c.bridge = Some(b);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp = listener.local_addr().unwrap();
    let n = node.node.clone();
    tokio::spawn(async move { n.serve_smtp(listener, None).await });
    let alice = node.register("alice", "human", 1).await;
    World {
        node,
        smtp,
        sink,
        alice,
    }
}

fn mail(message_id: &str, in_reply_to: Option<&str>, body: &str) -> Vec<u8> {
    let mut m = format!(
        "From: Carol C <carol@b.test>\r\nTo: alice@{DOMAIN}\r\nSubject: Lunch\r\n\
Message-ID: <{message_id}>\r\nDate: Sun, 29 Nov 2026 08:00:00 +0000\r\n"
    );
    if let Some(p) = in_reply_to {
        m.push_str(&format!("In-Reply-To: <{p}>\r\nReferences: <{p}>\r\n"));
    }
    m.push_str(&format!(
        "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    ));
    m.into_bytes()
}

async fn send(to: SocketAddr, rcpt: &str, data: &[u8]) -> RecipientOutcome {
    let stream = tokio::net::TcpStream::connect(to).await.unwrap();
    let rcpts = vec![rcpt.to_string()];
    let out = client::send(
        stream,
        &client::Envelope {
            helo: "mx.b.test",
            mail_from: "carol@b.test",
            rcpt_to: &rcpts,
            data,
        },
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    out.into_iter().next().unwrap().1
}

fn stored(w: &World, message_id: &str) -> Option<(String, String)> {
    loom_node::store::bridge::find(&w.node.node.service().store.read(), message_id).unwrap()
}

async fn envelope(w: &World, id: &str) -> Value {
    w.node
        .get(&format!("/v1/envelopes/{id}"), &w.alice.token)
        .await
        .expect(200)
        .body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticated_mail_becomes_an_envelope_and_a_reply_goes_out_signed_and_threaded() {
    let w = world("v=spf1 ip4:127.0.0.1 -all").await;
    let to = format!("alice@{DOMAIN}");

    // In: DKIM-signed by b.test from an SPF-authorized address.
    let signed = outside_dkim()
        .sign(mail("m1@b.test", None, "Lunch on Friday?"))
        .unwrap();
    assert_eq!(
        send(w.smtp, &to, &signed).await,
        RecipientOutcome::Delivered
    );
    let (thread, env_id) = stored(&w, "m1@b.test").expect("indexed");
    let env = envelope(&w, &env_id).await;
    assert_eq!(env["from"]["identity"], "bridge://carol@b.test");
    assert_eq!(env["from"]["type"], "bridge");
    assert_eq!(env["content"]["human"]["text"], "Lunch on Friday?");
    assert_eq!(env["thread_id"], thread.as_str());
    let bridge = &env["meta"]["bridge"];
    assert_eq!(bridge["source"], "email");
    assert_eq!(
        (
            bridge["auth_results"]["spf"].clone(),
            bridge["auth_results"]["dkim"].clone(),
            bridge["auth_results"]["dmarc"].clone()
        ),
        (json!("pass"), json!("pass"), json!("pass"))
    );
    assert_eq!(bridge["structured_trust"]["authoritative"], false);
    assert!(
        env.get("labels").is_none(),
        "authenticated mail is not quarantined"
    );
    let sender = w
        .node
        .get("/v1/identity/bridge:%2F%2Fcarol@b.test", &w.alice.token)
        .await;
    assert_eq!(
        sender.status, 200,
        "§21.2: the sender identity exists: {:?}",
        sender.body
    );
    assert_eq!(sender.body["type"], "bridge");

    // The same mail again (a sender retrying): stored once.
    assert_eq!(
        send(w.smtp, &to, &signed).await,
        RecipientOutcome::Delivered
    );
    let listed = w
        .node
        .get(&format!("/v1/threads/{thread}/envelopes"), &w.alice.token)
        .await
        .expect(200)
        .body;
    let count = |v: &Value| {
        v["envelopes"]
            .as_array()
            .or(v["items"].as_array())
            .map_or(0, Vec::len)
    };
    assert_eq!(count(&listed), 1, "{listed}");

    // Out: Alice replies to the bridged sender.
    let mut reply = to_bridge(
        &w.node,
        &w.alice,
        &thread,
        Some(&env_id),
        "carol@b.test",
        "Friday **works**.",
    );
    reply["content"]["structured"] =
        json!({"intent": "message.general@v1", "parameters": {"subject": "Re: Lunch"}});
    let reply_id = reply["id"].as_str().unwrap().to_owned();
    w.alice.send(&w.node, reply).await.expect(201);
    let report = w.node.node.service().bridge_tick().await.unwrap();
    assert_eq!(report.delivered, 1, "{report:?}");
    let got: Vec<Transaction> = w.sink.arrived().into_iter().map(|a| a.tx).collect();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rcpt_to, ["carol@b.test"]);
    let parsed = mail_parser::MessageParser::default()
        .parse(&got[0].data)
        .unwrap();
    assert_eq!(
        parsed.header_raw("X-LOOM-Envelope-ID").map(str::trim),
        Some(reply_id.as_str())
    );
    assert_eq!(
        parsed.header_raw("X-LOOM-Thread-ID").map(str::trim),
        Some(thread.as_str())
    );
    assert!(
        parsed
            .header_raw("In-Reply-To")
            .unwrap()
            .contains("m1@b.test"),
        "the parent's Message-ID"
    );
    assert!(
        parsed
            .body_html(0)
            .unwrap()
            .contains("<strong>works</strong>")
    );

    // The outside world verifies the bridge's DKIM signature and SPF for a.test.
    let bridge = w.node.node.service().bridge().unwrap();
    let theirs = Records::new(true);
    for r in [
        txt(DOMAIN, "v=spf1 ip4:127.0.0.1 -all"),
        txt(&bridge.dkim.dns_name(), bridge.dkim.dns_record()),
        txt(&format!("_dmarc.{DOMAIN}"), "v=DMARC1; p=reject"),
    ] {
        theirs.add(&r).unwrap();
    }
    let verifier = Verifier::new(Arc::new(theirs), None, "mx.b.test").unwrap();
    let auth = verifier
        .verify(
            &got[0].data,
            Connection {
                ip: "127.0.0.1".parse().unwrap(),
                helo: DOMAIN,
                mail_from: &got[0].mail_from,
            },
        )
        .await;
    assert_eq!(
        (auth.dkim.as_str(), auth.dmarc.as_str()),
        ("pass", "pass"),
        "{auth:?}"
    );

    // Carol answers the bridge's mail: it threads under Alice's reply.
    let out_id = parsed.message_id().unwrap().to_string();
    let answer = outside_dkim()
        .sign(mail("m2@b.test", Some(&out_id), "See you."))
        .unwrap();
    assert_eq!(
        send(w.smtp, &to, &answer).await,
        RecipientOutcome::Delivered
    );
    let (t2, e2) = stored(&w, "m2@b.test").unwrap();
    assert_eq!(t2, thread);
    assert_eq!(envelope(&w, &e2).await["parent_id"], reply_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoofed_mail_is_refused_and_stored_nowhere() {
    // SPF allows only 192.0.2.1: loopback fails; the mail is unsigned: DMARC p=reject fails.
    let w = world("v=spf1 ip4:192.0.2.1 -all").await;
    let outcome = send(
        w.smtp,
        &format!("alice@{DOMAIN}"),
        &mail("s1@b.test", None, "pay me"),
    )
    .await;
    assert!(
        matches!(&outcome, RecipientOutcome::Failed(r) if r.starts_with("550") && r.contains("DMARC")),
        "{outcome:?}"
    );
    assert_eq!(stored(&w, "s1@b.test"), None);
    // A DKIM-signed mail from the same address passes DMARC through DKIM alignment.
    let signed = outside_dkim()
        .sign(mail("s2@b.test", None, "real"))
        .unwrap();
    assert_eq!(
        send(w.smtp, &format!("alice@{DOMAIN}"), &signed).await,
        RecipientOutcome::Delivered
    );
    let (_, id) = stored(&w, "s2@b.test").unwrap();
    let env = envelope(&w, &id).await;
    assert_eq!(env["meta"]["bridge"]["auth_results"]["spf"], "fail");
    assert_eq!(env["meta"]["bridge"]["auth_results"]["dmarc"], "pass");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_mail_is_quarantined_and_unknown_recipients_are_refused() {
    let w = world("v=spf1 ip4:192.0.2.1 ~all").await;
    // From c.test, a domain with no records at all: nothing to pass, nothing says reject.
    let other = String::from_utf8(mail("q1@b.test", None, "hello"))
        .unwrap()
        .replace("carol@b.test", "dave@c.test")
        .into_bytes();
    assert_eq!(
        send(w.smtp, &format!("alice@{DOMAIN}"), &other).await,
        RecipientOutcome::Delivered
    );
    let (_, id) = stored(&w, "q1@b.test").unwrap();
    let env = envelope(&w, &id).await;
    assert_eq!(env["labels"], json!(["sys.quarantine"]), "§21.5");
    assert_eq!(
        env["meta"]["bridge"]["structured_trust"]["auto_actuation_allowed"],
        false
    );
    let nobody = send(w.smtp, &format!("nobody@{DOMAIN}"), &other).await;
    assert!(
        matches!(&nobody, RecipientOutcome::Failed(r) if r.starts_with("550 5.1.1")),
        "{nobody:?}"
    );
    let relay = send(w.smtp, "someone@elsewhere.test", &other).await;
    assert!(
        matches!(&relay, RecipientOutcome::Failed(r) if r.starts_with("550 5.7.1")),
        "no open relay: {relay:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_outbound_recipient_ends_in_bridge_delivery_failed() {
    let w = world("v=spf1 ip4:127.0.0.1 -all").await;
    let thread = w.node.thread_id();
    let env = to_bridge(&w.node, &w.alice, &thread, None, "nobody@b.test", "hello?");
    w.alice.send(&w.node, env).await.expect(201);
    let report = w.node.node.service().bridge_tick().await.unwrap();
    assert_eq!(report.failed, 1, "a 550 is permanent: {report:?}");
    let rows = w.node.node.service().mail_outbox().unwrap();
    assert_eq!(rows[0].state, "failed");
    assert_eq!(rows[0].reason.as_deref(), Some("BRIDGE_DELIVERY_FAILED"));
    let threads = w
        .node
        .get("/v1/threads", &w.alice.token)
        .await
        .expect(200)
        .body;
    assert!(
        threads.to_string().contains("receipt.failed@v1") || {
            let ids: Vec<String> = threads["threads"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| {
                    t["thread_id"]
                        .as_str()
                        .or(t["id"].as_str())
                        .map(str::to_string)
                })
                .collect();
            let mut found = false;
            for t in ids {
                let e = w
                    .node
                    .get(&format!("/v1/threads/{t}/envelopes"), &w.alice.token)
                    .await
                    .body;
                found |= e.to_string().contains("BRIDGE_DELIVERY_FAILED");
            }
            found
        },
        "the sender is told: {threads}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starttls_carries_the_mail_and_require_tls_refuses_it_in_the_clear() {
    let tls = loom_node::tls::server_tls_with(
        &loom_node::config::TlsSettings::SelfSigned,
        DOMAIN,
        &loom_node::rules::Spec,
    )
    .unwrap();
    let records = outside_records("v=spf1 ip4:127.0.0.1 -all");
    let node = TestNode::with(|c| {
        let mut b = BridgeConfig::new("127.0.0.1:0".parse().unwrap());
        b.require_tls = true;
        b.dns_records = records;
        c.bridge = Some(b);
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp = listener.local_addr().unwrap();
    let n = node.node.clone();
    let acceptor = tls.acceptor.clone();
    tokio::spawn(async move { n.serve_smtp(listener, Some(acceptor)).await });
    node.register("alice", "human", 1).await;
    let rcpts = vec![format!("alice@{DOMAIN}")];
    let signed = outside_dkim()
        .sign(mail("tls1@b.test", None, "Over TLS."))
        .unwrap();
    let message = client::Envelope {
        helo: "mx.b.test",
        mail_from: "carol@b.test",
        rcpt_to: &rcpts,
        data: &signed,
    };

    // In the clear: MAIL FROM is refused (RFC 3207 §4 530 5.7.0).
    let plain = tokio::net::TcpStream::connect(smtp).await.unwrap();
    let refused = client::send(plain, &message, Duration::from_secs(10)).await;
    assert!(
        matches!(&refused, Err(client::SendError::Refused(r)) if r.code == 530),
        "{refused:?}"
    );

    // Over STARTTLS (TLS 1.2+, the node's certificate): delivered.
    let mut roots = rustls::RootCertStore::empty();
    for c in tls.cert_chain.clone() {
        roots.add(c).unwrap();
    }
    let connector = tokio_rustls::TlsConnector::from(Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth(),
    ));
    let stream = tokio::net::TcpStream::connect(smtp).await.unwrap();
    let out = client::send_starttls(
        stream,
        &message,
        Duration::from_secs(10),
        &connector,
        rustls::pki_types::ServerName::try_from(DOMAIN)
            .unwrap()
            .to_owned(),
    )
    .await
    .unwrap();
    assert_eq!(out[0].1, RecipientOutcome::Delivered);
    assert!(
        loom_node::store::bridge::find(&node.node.service().store.read(), "tls1@b.test")
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferring_smarthost_is_retried_with_backoff_until_the_attempts_run_out() {
    // A smarthost that answers 451 to every recipient (RFC 5321 §4.2.1 transient).
    struct Deferring;
    impl Recipients for Deferring {
        fn check(&self, _: &str) -> RecipientVerdict {
            RecipientVerdict::Accept
        }
    }
    impl Handler for Deferring {
        fn deliver(
            &self,
            _: SocketAddr,
            _: Transaction,
        ) -> Pin<Box<dyn std::future::Future<Output = Verdict> + Send + '_>> {
            Box::pin(async {
                Verdict {
                    code: 451,
                    status: [4, 3, 0],
                    text: "try later".into(),
                }
            })
        }
    }
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = l.local_addr().unwrap();
    tokio::spawn(serve_tcp(l, smtp_config(), None, Arc::new(Deferring)));
    let node = TestNode::with(|c| {
        let mut b = BridgeConfig::new("127.0.0.1:0".parse().unwrap());
        b.smarthost = Some(host.to_string());
        b.max_attempts = 3;
        b.retry_base_secs = 60;
        c.bridge = Some(b);
    });
    let alice = node.register("alice", "human", 1).await;
    let env = to_bridge(
        &node,
        &alice,
        &node.thread_id(),
        None,
        "carol@b.test",
        "hello",
    );
    alice.send(&node, env).await.expect(201);
    let svc = node.node.service();
    let r1 = svc.bridge_tick().await.unwrap();
    assert_eq!(r1.retried, 1, "{r1:?}");
    let due = svc.next_mail_due().unwrap().unwrap();
    assert_eq!(
        due.unix_ms() - svc.env.now().unix_ms(),
        60_000,
        "the first retry after retry_base_secs"
    );
    assert_eq!(
        svc.bridge_tick().await.unwrap(),
        Default::default(),
        "nothing due before the backoff ends"
    );
    node.clock.advance_ms(60_000);
    let r2 = svc.bridge_tick().await.unwrap();
    assert_eq!(r2.retried, 1);
    let due = svc.next_mail_due().unwrap().unwrap();
    assert_eq!(
        due.unix_ms() - svc.env.now().unix_ms(),
        120_000,
        "the backoff doubles"
    );
    node.clock.advance_ms(120_000);
    let r3 = svc.bridge_tick().await.unwrap();
    assert_eq!(r3.failed, 1, "the third attempt was the last: {r3:?}");
    let rows = svc.mail_outbox().unwrap();
    assert_eq!((rows[0].state.as_str(), rows[0].attempts), ("failed", 3));
    assert!(
        rows[0]
            .last_failure
            .as_deref()
            .unwrap_or("")
            .contains("451")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_store_takes_mail_in_and_sends_mail_out() {
    let dir = std::env::temp_dir().join(format!("loom-bridge-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let w = world_with("v=spf1 ip4:127.0.0.1 -all", |c| {
        c.storage = loom_node::Storage::Dir(dir.clone());
    })
    .await;
    let (node, smtp, sink, alice) = (&w.node, w.smtp, &w.sink, &w.alice);
    let signed = outside_dkim()
        .sign(mail("d1@b.test", None, "Durable."))
        .unwrap();
    assert_eq!(
        send(smtp, &format!("alice@{DOMAIN}"), &signed).await,
        RecipientOutcome::Delivered
    );
    let (thread, env_id) =
        loom_node::store::bridge::find(&node.node.service().store.read(), "d1@b.test")
            .unwrap()
            .expect("indexed in the durable store");
    let reply = to_bridge(
        node,
        alice,
        &thread,
        Some(&env_id),
        "carol@b.test",
        "Noted.",
    );
    alice.send(node, reply).await.expect(201);
    assert_eq!(
        node.node.service().bridge_tick().await.unwrap().delivered,
        1
    );
    assert_eq!(sink.arrived().len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every envelope in `who`'s threads, as text.
async fn all_envelopes(w: &World, who: &Ident) -> String {
    let threads = w.node.get("/v1/threads", &who.token).await.expect(200).body;
    let mut out = String::new();
    for t in threads["threads"].as_array().into_iter().flatten() {
        let Some(id) = t["thread_id"].as_str().or(t["id"].as_str()) else {
            continue;
        };
        let e = w
            .node
            .get(&format!("/v1/threads/{id}/envelopes"), &who.token)
            .await
            .body;
        out.push_str(&e.to_string());
    }
    out
}

/// An RFC 3464 report that `recipient` failed with `5.1.1`.
fn dsn(recipient: &str) -> Vec<u8> {
    format!(
        "From: MAILER-DAEMON@mx.b.test\r\nSubject: Undelivered Mail\r\nMessage-ID: <dsn-1@mx.b.test>\r\n\
MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"r\"\r\n\r\n\
--r\r\nContent-Type: text/plain\r\n\r\nThe mailbox does not exist.\r\n\
--r\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.b.test\r\n\r\n\
Final-Recipient: rfc822; {recipient}\r\nAction: failed\r\nStatus: 5.1.1\r\n\
Diagnostic-Code: smtp; 550 5.1.1 mailbox gone\r\n\r\n--r--\r\n"
    )
    .into_bytes()
}

/// One transaction from `mail_from` (empty: the null reverse path) to `rcpt`.
async fn send_as(
    to: SocketAddr,
    mail_from: &str,
    rcpt: &str,
    data: &[u8],
) -> Result<Vec<(String, RecipientOutcome)>, client::SendError> {
    let stream = tokio::net::TcpStream::connect(to).await.unwrap();
    client::send(
        stream,
        &client::Envelope {
            helo: "mx.b.test",
            mail_from,
            rcpt_to: &[rcpt.to_string()],
            data,
        },
        Duration::from_secs(10),
    )
    .await
}

/// v1.1 §20.8 (failed, DSN-like), §21.3: a message the outside server accepted and later
/// bounced ends in `BRIDGE_DELIVERY_FAILED` for its sender, through the VERP reverse path;
/// a guessed bounce address, a report from a non-null sender and a repeated report change
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounce_after_delivery_becomes_a_failure_receipt() {
    let w = world("v=spf1 ip4:127.0.0.1 -all").await;
    let thread = w.node.thread_id();
    let env = to_bridge(&w.node, &w.alice, &thread, None, "carol@b.test", "hello");
    let id = env["id"].as_str().unwrap().to_string();
    w.alice.send(&w.node, env).await.expect(201);
    let report = w.node.node.service().bridge_tick().await.unwrap();
    assert_eq!(report.delivered, 1, "{report:?}");
    let arrived = w.sink.arrived();
    let verp = arrived[0].tx.mail_from.clone();
    assert!(
        verp.starts_with(&format!("bounces+{id}.")) && verp.ends_with(&format!("@{DOMAIN}")),
        "the reverse path names the envelope: {verp}"
    );
    assert!(
        !all_envelopes(&w, &w.alice)
            .await
            .contains("BRIDGE_DELIVERY_FAILED"),
        "delivered, no receipt yet"
    );

    // A guessed tag is no address of ours.
    let guessed = format!("bounces+{id}.{}@{DOMAIN}", "0".repeat(32));
    let out = send_as(w.smtp, "", &guessed, &dsn("carol@b.test")).await;
    assert!(
        !matches!(out.as_deref(), Ok([(_, RecipientOutcome::Delivered)])),
        "a forged bounce address is refused: {out:?}"
    );
    // A report must come from the null reverse path.
    let out = send_as(w.smtp, "carol@b.test", &verp, &dsn("carol@b.test")).await;
    assert!(
        !matches!(out.as_deref(), Ok([(_, RecipientOutcome::Delivered)])),
        "not from <>: {out:?}"
    );
    assert_eq!(
        w.node.node.service().mail_outbox().unwrap()[0].state,
        "delivered"
    );

    // The real bounce.
    let out = send_as(w.smtp, "", &verp, &dsn("carol@b.test")).await;
    assert!(
        matches!(out.as_deref(), Ok([(_, RecipientOutcome::Delivered)])),
        "{out:?}"
    );
    let rows = w.node.node.service().mail_outbox().unwrap();
    assert_eq!(rows[0].state, "failed");
    assert_eq!(rows[0].reason.as_deref(), Some("BRIDGE_DELIVERY_FAILED"));
    assert!(
        rows[0]
            .last_failure
            .as_deref()
            .is_some_and(|f| f.starts_with("bounced: 5.1.1")),
        "{rows:?}"
    );
    let seen = all_envelopes(&w, &w.alice).await;
    let receipts = |t: &str| t.matches("\"intent\":\"receipt.failed@v1\"").count();
    assert_eq!(receipts(&seen), 1, "one receipt: {seen}");
    assert!(seen.contains("BRIDGE_DELIVERY_FAILED"));

    // The same report again: accepted, nothing new.
    let out = send_as(w.smtp, "", &verp, &dsn("carol@b.test")).await;
    assert!(matches!(
        out.as_deref(),
        Ok([(_, RecipientOutcome::Delivered)])
    ));
    let again = all_envelopes(&w, &w.alice).await;
    assert_eq!(receipts(&again), 1, "still one receipt");
}
