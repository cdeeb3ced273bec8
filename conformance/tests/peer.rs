//! The fake federation peer on its own (issue 15): what it serves verifies with the protocol
//! crate's rules, a signed delivery gets a signed receipt, scripted answers are followed,
//! chunked bodies and the 6-line signing form are taken, and every request is recorded.

use loom_client::Client;
use loom_conformance::peer::{Answer, PeerServer};
use loom_protocol::clock::SystemClock;
use loom_protocol::federation::node_document::read_node_document;
use loom_protocol::federation::receipt::{ReceiptExpectation, verify_receipt};
use loom_protocol::federation::verify_identity_document;
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn the_fake_peer_serves_verifiable_documents_and_signed_receipts() {
    let server = PeerServer::loopback("peer-{n}.test", 4, 7, Arc::new(SystemClock))
        .await
        .expect("binds");
    let peer = server.fresh().expect("a peer");
    let sender = server
        .fresh()
        .expect("another peer, acting as the delivering node");
    assert_eq!(peer.domain, "peer-0.test");
    assert_ne!(
        peer.active_key().key.verifying_key(),
        sender.active_key().key.verifying_key(),
        "each peer has its own node key"
    );
    let alice = peer.host("alice");
    let mut c = Client::tcp(&server.address)
        .expect("client")
        .with_timeout(Duration::from_secs(5));

    // Node document: read by the lenient reader, keys as published.
    let t = c
        .exchange("GET", "/peer/0/.well-known/loom.json", &[], None, None)
        .await
        .expect("GET");
    assert_eq!(t.status, 200);
    let view = read_node_document(&t.json().expect("json"), "peer-0.test").expect("reads");
    // URLs on the peer's own domain (port of the harness address); the harness address
    // form is what `peer.deliver_url()` gives templated requests.
    let port = server.address.rsplit(':').next().expect("port");
    assert_eq!(
        view.deliver_url,
        format!("http://peer-0.test:{port}/v1/federation/deliver")
    );
    assert_eq!(
        peer.deliver_url(),
        format!("{}/peer/0/v1/federation/deliver", server.address)
    );
    assert!(view.keys.active_key(&peer.active_key().key_id, "k").is_ok());

    // Node-signed identity document.
    let path = format!(
        "/peer/0/v1/identity/{}",
        loom_client::api::encode_component(alice.address())
    );
    let t = c
        .exchange("GET", &path, &[], None, None)
        .await
        .expect("GET");
    assert_eq!(
        t.status,
        200,
        "{}",
        String::from_utf8_lossy(&t.response_body)
    );
    let v = verify_identity_document(&t.json().expect("json"), &view.keys).expect("verifies");
    assert_eq!(v.signing_keys.len(), 1);

    // A delivery signed with the 6-line form, answered 503 once as scripted, then 202 with a
    // receipt signed by the peer's key.
    peer.script(&[Answer::Status(503)]);
    let env = serde_json::json!({"id": "env_01J0000000000000000000000A", "from": alice.address()});
    let body = serde_json::to_vec(&sender.wrapper(vec![env], sender.now())).expect("json");
    let path = "/peer/0/v1/federation/deliver";
    for want in [503, 202] {
        let h = sender.sign(
            "POST",
            path,
            &body,
            sender.now(),
            &sender.active_key(),
            Some("epoch-1"),
        );
        let headers: Vec<(&str, &str)> = h.all_pairs();
        let t = c
            .exchange("POST", path, &headers, Some(body.clone()), None)
            .await
            .expect("POST");
        assert_eq!(t.status, want);
        if want == 202 {
            let receipt = t.json().expect("json");
            let ids = vec!["env_01J0000000000000000000000A".to_owned()];
            let w: serde_json::Value = serde_json::from_slice(&body).expect("json");
            verify_receipt(
                &receipt,
                &view.keys,
                &ReceiptExpectation {
                    delivery_id: w["delivery_id"].as_str(),
                    delivering_node: &sender.domain,
                    issuer_node: &peer.domain,
                    envelope_ids: &ids,
                },
            )
            .expect("the receipt verifies with the peer's node key");
        }
    }
    let got = peer.deliveries();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![503, 202]
    );
    assert_eq!(
        got[0].signed_headers().trust_epoch.as_deref(),
        Some("epoch-1")
    );
    assert_eq!(
        got[1].envelope_ids(),
        vec!["env_01J0000000000000000000000A"]
    );

    // Unknown peers and routes are 404s, never panics; a fifth peer exceeds the capacity.
    let t = c
        .exchange("GET", "/peer/9/.well-known/loom.json", &[], None, None)
        .await
        .expect("GET");
    assert_eq!(t.status, 404);
    server.fresh().expect("third");
    server.fresh().expect("fourth");
    let e = server.fresh().expect_err("capacity is 4");
    assert!(e.contains("[federation] peers"), "{e}");
}

/// What the new enforcement cases lean on: a rotated identity keeps its old key as
/// `retired` (v1.0 §7.4) in a document that still verifies; blocked peers come from their own
/// domain template and run out; without `[federation.block_peer]` or a declared re-fetch
/// interval the cases that need them are `unsupported`, not failed.
#[tokio::test]
async fn rotation_blocked_peers_and_the_unsupported_paths() {
    use loom_conformance::case::Finding;
    use loom_conformance::peer::Federation;
    use loom_conformance::peer::profile::FederationSection;
    let section: FederationSection = toml::from_str("peer_domain = \"peer-{n}.test\"").unwrap();
    let fed = Federation::start(section, 3, Arc::new(SystemClock))
        .await
        .expect("starts");
    assert!(fed.refetch_min_interval().is_none() && fed.ttl().is_none());
    let mut net =
        loom_conformance::ctx::Exchanges::new(Client::tcp(&fed.server.address).expect("client"));
    let got = fed
        .blocked_peer(&mut net, "http://127.0.0.1:9", &Default::default())
        .await;
    assert!(matches!(got, Err(Finding::Unsupported(_))), "{got:?}");

    let b0 = fed
        .server
        .fresh_blocked("blocked-{n}.test", 1)
        .expect("one blocked peer");
    assert_eq!(b0.domain, "blocked-0.test");
    assert!(fed.server.fresh_blocked("blocked-{n}.test", 1).is_err());

    let peer = fed.server.fresh().expect("a peer");
    let alice = peer.host("alice");
    let rotated = peer
        .rotate_identity_key(alice.address(), 2)
        .expect("hosted");
    let doc = peer.identity_document(alice.address()).expect("hosted");
    let keys: Vec<(String, String)> = doc["signing_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key_id"].as_str().unwrap().to_owned(),
                k["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec![
            (alice.key_id().to_owned(), "retired".to_owned()),
            (rotated.key_id().to_owned(), "active".to_owned())
        ]
    );
    let view = loom_protocol::federation::node_document::read_node_document(
        &peer.node_document(),
        &peer.domain,
    )
    .unwrap();
    let v = verify_identity_document(&doc, &view.keys).expect("still node-signed");
    assert_eq!(
        v.signing_keys.len(),
        1,
        "only the active key verifies new signatures"
    );
    let agent = peer.host_as("bot", "agent");
    assert_eq!(
        peer.identity_document(agent.address()).unwrap()["type"],
        "agent"
    );
}
