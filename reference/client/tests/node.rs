//! The library against a real reference node over TCP: discovery, register → login → send →
//! list → get, error bodies, keep-alive, and TLS 1.3 with HTTP/2 by ALPN.

mod support;

use loom_client::{Client, ClientError, EnvelopeFactory, Identity, MessageDraft, Trust};
use loom_protocol::Timestamp;
use loom_protocol::clock::FixedClock;
use serde_json::json;

fn clock() -> FixedClock {
    FixedClock(Timestamp::parse(support::START).unwrap())
}

async fn walkthrough(mut c: Client) -> Client {
    let doc = c.node_document().await.unwrap();
    assert_eq!(doc.body["domain"], support::DOMAIN);

    let alice = Identity::from_seed("loom://alice@node.test", &[1; 32]).unwrap();
    // bob is alice's agent: his document carries her signed delegation (v1.1 §6.4).
    let bob = Identity::from_seed("loom://bob@node.test", &[2; 32])
        .unwrap()
        .with_type("agent");
    let bob = bob.clone().with_members(alice.delegate_agent(
        bob.address(),
        &["*".to_owned()],
        "2099-01-01T00:00:00Z",
    ));
    let reg = alice.register(&mut c).await.unwrap();
    assert_eq!(reg.transcript.status, 201);
    bob.register(&mut c).await.unwrap();

    // Registering again is a 409 carrying the node's §24.1 body.
    let again = alice.register(&mut c).await.unwrap_err();
    assert_eq!(again.status(), Some(409), "{again}");
    assert!(again.code().is_some(), "{again}");

    let session = alice.login(&mut c).await.unwrap();
    assert!(session.access_token.starts_with("at_"));
    assert!(session.refresh_token.starts_with("rt_"));
    c.set_token(Some(session.access_token.clone()));
    assert_eq!(c.me().await.unwrap().body["id"], alice.address());

    let mut f = EnvelopeFactory::new(clock(), 11);
    let root = f
        .message(
            &alice,
            &MessageDraft {
                to: vec![bob.address().into()],
                text: "hello bob".into(),
                ..MessageDraft::default()
            },
        )
        .unwrap();
    let sent = c.send_envelope(&root).await.unwrap();
    assert_eq!(sent.body["meta"]["event_seq"], 1, "{}", sent.body);
    let thread = root["thread_id"].as_str().unwrap().to_owned();
    let reply = f
        .message(
            &alice,
            &MessageDraft {
                thread_id: Some(thread.clone()),
                parent_id: root["id"].as_str().map(str::to_owned),
                to: vec![bob.address().into()],
                text: "and again".into(),
            },
        )
        .unwrap();
    let sent = c.send_envelope_idempotent(&reply, "idem-1").await.unwrap();
    assert_eq!(sent.body["meta"]["event_seq"], 2, "{}", sent.body);

    let list = c.list_threads(&[("limit", "10")]).await.unwrap();
    assert_eq!(
        list.body["threads"][0]["id"],
        thread.as_str(),
        "{}",
        list.body
    );
    let got = c.get_envelope(root["id"].as_str().unwrap()).await.unwrap();
    assert_eq!(got.body["content"]["human"]["text"], "hello bob");
    let t = c.get_thread(&thread).await.unwrap();
    assert_eq!(t.body["envelope_count"], 2, "{}", t.body);
    let envs = c.thread_envelopes(&thread).await.unwrap();
    assert!(envs.body.to_string().contains("and again"), "{}", envs.body);

    // Bob, logged in, sees the thread too.
    let bob_session = bob.login(&mut c).await.unwrap();
    c.set_token(Some(bob_session.access_token));
    let list = c.list_threads(&[]).await.unwrap();
    assert_eq!(list.body["threads"][0]["id"], thread.as_str());

    // A tampered envelope is refused with the §24.1 body, and the error names the section.
    c.set_token(Some(session.access_token));
    let mut bad = f
        .message(
            &alice,
            &MessageDraft {
                to: vec![bob.address().into()],
                text: "original".into(),
                ..MessageDraft::default()
            },
        )
        .unwrap();
    bad["content"]["human"]["text"] = json!("tampered");
    let e = c.send_envelope(&bad).await.unwrap_err();
    let ClientError::Api {
        error: Some(body),
        transcript,
    } = &e
    else {
        panic!("expected a node refusal, got {e}");
    };
    assert!(transcript.status >= 400, "{e}");
    assert!(
        body.request_id
            .as_deref()
            .is_some_and(|r| r.starts_with("req_")),
        "{e}"
    );
    assert!(e.to_string().contains(body.code.as_deref().unwrap()), "{e}");
    assert!(transcript.to_string().contains("> POST /v1/envelopes"));
    c
}

#[tokio::test]
async fn register_login_send_list_get_over_http1() {
    let node = support::start(false);
    let c = walkthrough(Client::tcp(&node.url).unwrap()).await;
    assert_eq!(c.http_version(), Some("HTTP/1.1"));
    assert_eq!(
        c.connects(),
        1,
        "keep-alive: one connection for the whole walkthrough"
    );
}

#[tokio::test]
async fn tls13_with_h2_by_alpn() {
    let node = support::start(true);
    let trust = Trust::certificates(&node.cert_chain).unwrap();
    let c = Client::tcp(&node.url).unwrap().with_trust(&trust).unwrap();
    let c = walkthrough(c).await;
    assert_eq!(c.http_version(), Some("HTTP/2"));
    assert_eq!(c.connects(), 1);

    // Without trust configured the error says so; with an unrelated root it fails the handshake.
    let mut plain = Client::tcp(&node.url).unwrap();
    let e = plain.node_document().await.unwrap_err();
    assert!(matches!(e, ClientError::Tls(_)), "{e}");
    let other =
        loom_node::tls::server_tls(&loom_node::config::TlsSettings::SelfSigned, "x.test").unwrap();
    let mut wrong = Client::tcp(&node.url)
        .unwrap()
        .with_trust(&Trust::certificates(&other.cert_chain).unwrap())
        .unwrap();
    let e = wrong.node_document().await.unwrap_err();
    assert!(matches!(e, ClientError::Tls(_)), "{e}");
    // Insecure mode connects anyway.
    let mut any = Client::tcp(&node.url)
        .unwrap()
        .with_trust(&Trust::InsecureAnyCertificate)
        .unwrap();
    any.node_document().await.unwrap();
}

#[tokio::test]
async fn unreachable_and_non_loom_responses_are_errors_not_panics() {
    // Nothing listens on this port once the listener is dropped.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut c = Client::tcp(&format!("http://127.0.0.1:{port}")).unwrap();
    let e = c.node_document().await.unwrap_err();
    assert!(matches!(e, ClientError::Connect { .. }), "{e}");

    // A server that answers garbage.
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")
                .await;
        }
    });
    let mut c = Client::tcp(&format!("http://{addr}")).unwrap();
    let e = c.node_document().await.unwrap_err();
    assert!(matches!(e, ClientError::BadResponse { .. }), "{e}");
    assert!(e.to_string().contains("not JSON"), "{e}");
}

/// `loom-wsbench`'s run against a real node: every connection receives every posted
/// envelope as `envelope.new` (v1.1 §17), and the report counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_fanout_bench_delivers_every_event_to_every_connection() {
    let n = support::start(false);
    let cfg = loom_client::wsbench::WsBenchConfig {
        url: n.url.clone(),
        domain: support::DOMAIN.into(),
        clients: 24,
        identities: 4,
        messages: 5,
        connect_concurrency: 8,
        seed: 3,
        timeout: std::time::Duration::from_secs(20),
    };
    let r = loom_client::wsbench::run(&cfg, clock()).await.unwrap();
    assert_eq!(r.connected, 24);
    assert_eq!(r.expected, 120);
    assert_eq!(r.delivered, 120, "{r:?}");
    assert!(r.latency.max >= r.latency.p50 && r.per_sec > 0.0, "{r:?}");
}
