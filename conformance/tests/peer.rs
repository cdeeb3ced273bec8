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
