//! Federation over HTTPS (v1.1 §14.1, §15.1–§15.6; issue 15 "node discovery and keys"): two
//! in-process nodes serve TLS 1.3 on loopback with certificates from a test CA and reach
//! each other by name (`a.test`, `b.test`), the connection sent to `127.0.0.1` by
//! `federation.resolve` (curl's `--resolve`) while SNI and the certificate check stay on the
//! name. A static `https://` peer delivers when the CA is configured (`peer_ca`); an
//! untrusted certificate is a transport failure, retried and, after the TTL on the manual
//! clock, ended by a `receipt.failed@v1`; peers that know each other only by discovery
//! (`https://{domain}/.well-known/loom.json`) exchange a message and its reply; the
//! federation policy still applies to discovered peers. §15.3 "TLS server cert must match
//! domain": a sender node whose address presents a certificate for another name, or serves
//! a document naming another domain, is refused with the reason, and nothing is stored.

use crate::support::fed::{Pki, Served, TestCa, free_port, pki, serve_tls};
use crate::support::{Ident, TestNode};
use loom_node::config::NodeConfig;
use loom_node::{Quirks, Storage};
use loom_protocol::clock::Clock;
use serde_json::Value;

const HOUR_MS: i64 = 3_600_000;

/// A TLS node `domain`, with `resolve` overrides, trusting `ca` (a PEM file) only.
fn tls_node(
    domain: &str,
    resolve: &[(&str, u16)],
    ca: &std::path::Path,
    tweak: impl FnOnce(&mut NodeConfig),
) -> TestNode {
    TestNode::with_quirks(Quirks::none(), |c| {
        c.domain = domain.into();
        c.storage = Storage::Memory;
        c.public_url = Some(format!("https://{domain}"));
        for (name, port) in resolve {
            c.federation
                .resolve
                .insert((*name).into(), format!("127.0.0.1:{port}"));
        }
        c.federation.native_roots = false;
        c.federation.peer_ca = vec![ca.to_owned()];
        c.federation.retry_base_ms = 1_000;
        c.federation.request_timeout_ms = 5_000;
        tweak(c);
    })
}

async fn send(
    from: &Ident,
    node: &TestNode,
    thread: &str,
    parent: Option<&str>,
    to: &Ident,
    text: &str,
) -> Value {
    let env = from.message(node, thread, parent, &[to], text);
    from.send(node, env).await.expect(201).body
}

/// alice on `a` sends `text` to bob on `b` in thread `t`; one outbox tick on `a` delivers
/// it and bob reads it on `b`. Returns the message id.
async fn delivered_and_read(
    a: &TestNode,
    b: &TestNode,
    alice: &Ident,
    bob: &Ident,
    t: &str,
    text: &str,
) -> String {
    let root = send(alice, a, t, None, bob, text).await;
    let rid = root["id"].as_str().unwrap().to_owned();
    let r = a.tick().await;
    assert_eq!(
        (r.delivered, r.failed, r.retried),
        (1, 0, 0),
        "{:?}",
        a.outbox()
    );
    let got = b
        .get(&format!("/v1/envelopes/{rid}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(got["content"]["human"]["text"], text);
    rid
}

/// Two TLS nodes; `static_peers` makes each a configured `https://` peer of the other,
/// otherwise they know each other only through discovery.
async fn tls_pair(p: &Pki, static_peers: bool) -> (TestNode, TestNode, Served, Served) {
    let (pa, pb) = (free_port().await, free_port().await);
    let resolve = [("a.test", pa), ("b.test", pb)];
    let a = tls_node("a.test", &resolve, &p.ca_pem, |c| {
        if static_peers {
            c.federation
                .peers
                .insert("b.test".into(), "https://b.test".into());
        }
    });
    let b = tls_node("b.test", &resolve, &p.ca_pem, |c| {
        if static_peers {
            c.federation
                .peers
                .insert("a.test".into(), "https://a.test".into());
        }
    });
    let sa = serve_tls(&a, pa, p.ca.acceptor("a.test")).await;
    let sb = serve_tls(&b, pb, p.ca.acceptor("b.test")).await;
    (a, b, sa, sb)
}

#[tokio::test]
async fn a_static_https_peer_is_reached_with_the_configured_ca() {
    let p = pki("tls-static");
    let (a, b, _sa, _sb) = tls_pair(&p, true).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    delivered_and_read(&a, &b, &alice, &bob, &t, "over TLS").await;
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn an_untrusted_certificate_is_retried_then_ends_in_a_failure_receipt() {
    let p = pki("tls-untrusted");
    let rogue = TestCa::new("not trusted by a.test");
    let (pa, pb) = (free_port().await, free_port().await);
    let resolve = [("a.test", pa), ("b.test", pb)];
    let a = tls_node("a.test", &resolve, &p.ca_pem, |c| {
        c.federation
            .peers
            .insert("b.test".into(), "https://b.test".into());
    });
    let b = tls_node("b.test", &resolve, &p.ca_pem, |_| {});
    let _sb = serve_tls(&b, pb, rogue.acceptor("b.test")).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let root = send(&alice, &a, &t, None, &bob, "not over a forged channel").await;
    let rid = root["id"].as_str().unwrap().to_owned();

    // The handshake fails at certificate verification: a transport failure, retried (§15.6).
    for _ in 0..3 {
        assert_eq!(a.tick().await.retried, 1);
        let due = a.node.service().next_outbox_due().unwrap().unwrap();
        a.clock.advance_ms(due.unix_ms() - a.clock.now().unix_ms());
    }
    let row = &a.outbox()[0];
    assert_eq!((row.state.as_str(), row.attempts), ("queued", 3));
    assert_eq!(row.last_failure.as_deref(), Some("unreachable"));
    // The client's error names the peer and the TLS reason.
    let e = a
        .node
        .service()
        .fetch_peer("b.test")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b.test") && e.contains("TLS handshake") && e.contains("UnknownIssuer"),
        "{e}"
    );
    assert_eq!(b.outbox().len(), 0);

    a.clock.advance_ms(72 * HOUR_MS);
    let (token, _) = a.login(&alice.address, &alice.key, &alice.key_id).await;
    let alice = Ident { token, ..alice };
    assert_eq!(a.tick().await.failed, 1);
    let row = &a.outbox()[0];
    assert_eq!(
        (row.state.as_str(), row.reason.as_deref()),
        ("failed", Some("NODE_UNREACHABLE"))
    );
    let receipts = failure_receipts(&a, &alice).await;
    assert_eq!(receipts.len(), 1);
    let params = &receipts[0]["content"]["structured"]["parameters"];
    assert_eq!(params["envelope_id"], rid.as_str());
    assert_eq!(params["reason"], "NODE_UNREACHABLE");
    // Nothing reached bob.
    let got = b.get(&format!("/v1/envelopes/{rid}"), &bob.token).await;
    assert_ne!(got.status, 200);
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn nodes_known_only_by_discovery_exchange_a_message_and_a_reply() {
    let p = pki("tls-discovery");
    let (a, b, _sa, _sb) = tls_pair(&p, false).await;
    assert!(a.node.service().config.federation.peers.is_empty());
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    let rid = delivered_and_read(&a, &b, &alice, &bob, &t, "found you by name").await;

    // b discovered a.test to check the delivery; the reply travels back the same way.
    let reply = send(&bob, &b, &t, Some(&rid), &alice, "and you too").await;
    assert_eq!(b.tick().await.delivered, 1, "{:?}", b.outbox());
    let on_a = a.thread_envelopes(&t, &alice).await;
    let ids: Vec<&str> = on_a.iter().filter_map(|e| e["id"].as_str()).collect();
    assert_eq!(ids, [rid.as_str(), reply["id"].as_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn discovery_without_the_ca_fails_and_the_policy_applies_to_discovered_peers() {
    let p = pki("tls-discovery-policy");
    let (pa, pb) = (free_port().await, free_port().await);
    let resolve = [("a.test", pa), ("b.test", pb)];
    // a.test allows only c.test: b.test is never fetched, the message fails by policy.
    let a = tls_node("a.test", &resolve, &p.ca_pem, |c| {
        c.federation_policy = "allowlist".into();
        c.federation.allowlist = vec!["c.test".into()];
    });
    let b = tls_node("b.test", &resolve, &p.ca_pem, |_| {});
    let _sb = serve_tls(&b, pb, p.ca.acceptor("b.test")).await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    send(&alice, &a, &a.thread_id(), None, &bob, "blocked").await;
    let r = a.tick().await;
    assert_eq!((r.delivered, r.failed), (0, 1));
    assert_eq!(a.outbox()[0].reason.as_deref(), Some("CAPABILITY_DENIED"));
    let e = a
        .node
        .service()
        .fetch_peer("b.test")
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not discovered"), "{e}");

    // A node trusting no CA at all cannot discover b.test (certificate unknown): retried.
    let c = tls_node("c.test", &resolve, &p.ca_pem, |c| {
        c.federation.peer_ca.clear()
    });
    let carol = c.register("carol", "human", 3).await;
    send(&carol, &c, &c.thread_id(), None, &bob, "no trust").await;
    let r = c.tick().await;
    assert_eq!((r.delivered, r.retried), (0, 1));
    assert_eq!(c.outbox()[0].last_failure.as_deref(), Some("unreachable"));
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// The receipt envelopes `who` can see on `node`.
async fn failure_receipts(node: &TestNode, who: &Ident) -> Vec<Value> {
    let list = node
        .get("/v1/threads?limit=50", &who.token)
        .await
        .expect(200)
        .body;
    let mut out = Vec::new();
    for t in list["threads"].as_array().unwrap() {
        for e in node.thread_envelopes(t["id"].as_str().unwrap(), who).await {
            if e["type"] == "receipt" {
                out.push(e);
            }
        }
    }
    out
}

#[tokio::test]
async fn a_failed_discovery_is_not_retried_per_inbound_request() {
    let p = pki("tls-discovery-throttle");
    // z.test "lives" at a listener that counts connections and closes them (no TLS).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let pz = listener.local_addr().unwrap().port();
    let dials = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = dials.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(s);
        }
    });
    let b = tls_node("b.test", &[("z.test", pz)], &p.ca_pem, |_| {});
    let z = tls_node("z.test", &[], &p.ca_pem, |_| {});
    let count = || dials.load(std::sync::atomic::Ordering::SeqCst);
    let deliver = || async {
        let (h, body) = z.signed_delivery(Vec::new());
        let r = b.deliver(&h, body).await;
        assert!(
            r.status.as_u16() >= 400,
            "an undiscoverable node is refused: {}",
            r.status
        );
    };
    deliver().await;
    assert_eq!(count(), 1, "the first request triggers discovery");
    deliver().await;
    deliver().await;
    assert_eq!(
        count(),
        1,
        "no new discovery within refetch_min_interval_ms"
    );
    let interval = b.node.service().config.federation.refetch_min_interval_ms as i64;
    b.clock.advance_ms(interval);
    z.clock.advance_ms(interval);
    deliver().await;
    assert_eq!(count(), 2, "discovery is tried again after the interval");
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// A delivery claiming to come from `node`, signed with `signer`'s node key (an empty
/// wrapper: it is refused before its envelopes are read, or accepted with nothing in it).
fn delivery_as(signer: &TestNode, node: &str) -> (Vec<(String, String)>, Vec<u8>) {
    use loom_protocol::federation::wrapper::DELIVER_PATH;
    use loom_protocol::http_sig::{RequestParts, sign_request};
    let now = signer.now();
    let body = serde_json::to_vec(&serde_json::json!({
        "loom": "1.1", "sender_node": node,
        "delivery_id": format!("fdel_{}", signer.envelope_id().trim_start_matches("env_")),
        "timestamp": now, "envelopes": [],
    }))
    .unwrap();
    let (key_id, key) = signer.node.service().node_key();
    let h = sign_request(
        &RequestParts {
            method: "POST",
            path: DELIVER_PATH,
            body: &body,
        },
        node,
        key_id,
        key,
        loom_protocol::Timestamp::parse(&now).unwrap(),
        signer.envelope_id().as_bytes(),
    );
    let pairs = h
        .all_pairs()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (pairs, body)
}

#[tokio::test]
async fn a_certificate_for_another_name_at_the_senders_address_is_refused() {
    // §15.3 "TLS server cert must match domain": b.test discovers a.test at its address,
    // which presents a certificate from the trusted CA — but for evil.test.
    let p = pki("tls-wrong-name");
    let (pa, pb) = (free_port().await, free_port().await);
    let resolve = [("a.test", pa), ("b.test", pb)];
    let a = tls_node("a.test", &resolve, &p.ca_pem, |_| {});
    let b = tls_node("b.test", &resolve, &p.ca_pem, |_| {});
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let wrong = serve_tls(&a, pa, p.ca.acceptor("evil.test")).await;
    let env = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "who am I?"));
    let id = env["id"].as_str().unwrap().to_owned();
    let (h, body) = a.signed_delivery(vec![env.clone()]);
    let r = b.deliver(&h, body).await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.body);
    let e = &r.body["error"];
    assert_eq!(e["code"], "SIGNATURE_INVALID");
    assert_eq!(e["details"]["field"], "X-LOOM-Node");
    let reason = e["details"]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("a.test")
            && reason.contains("TLS handshake")
            && reason.contains("not valid for name"),
        "the refusal names the certificate problem: {reason}"
    );
    b.get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await
        .expect_error(404, "ENVELOPE_NOT_FOUND");

    // The same node with a certificate for its own name: the delivery is accepted (once the
    // failed discovery may be retried, federation.refetch_min_interval_ms later).
    wrong.stop().await;
    let _right = serve_tls(&a, pa, p.ca.acceptor("a.test")).await;
    let interval = b.node.service().config.federation.refetch_min_interval_ms as i64;
    for n in [&a, &b] {
        n.clock.advance_ms(interval);
    }
    let (token, _) = b.login(&bob.address, &bob.key, &bob.key_id).await;
    let bob = Ident { token, ..bob };
    let (h, body) = a.signed_delivery(vec![env]);
    b.deliver(&h, body).await.expect(202);
    b.get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await
        .expect(200);
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn a_node_document_naming_another_domain_lends_its_keys_to_nobody() {
    // At a.test's address, with a valid certificate for a.test, c.test's node answers: its
    // document names c.test, so its keys must not verify requests from a.test (§15.2, §15.3).
    let p = pki("tls-wrong-domain");
    let (pa, pb) = (free_port().await, free_port().await);
    let resolve = [("a.test", pa), ("b.test", pb)];
    let c = tls_node("c.test", &resolve, &p.ca_pem, |_| {});
    let b = tls_node("b.test", &resolve, &p.ca_pem, |_| {});
    let _impostor = serve_tls(&c, pa, p.ca.acceptor("a.test")).await;
    let (h, body) = delivery_as(&c, "a.test");
    let r = b.deliver(&h, body).await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.body);
    let e = &r.body["error"];
    assert_eq!(
        (e["code"].as_str(), e["details"]["field"].as_str()),
        (Some("SIGNATURE_INVALID"), Some("X-LOOM-Node"))
    );
    let reason = e["details"]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains(r#"names node "c.test""#) && reason.contains(r#"fetched for "a.test""#),
        "{reason}"
    );
    // Nothing was stored for a.test: a second request finds no document either.
    let (h, body) = delivery_as(&c, "a.test");
    assert_eq!(b.deliver(&h, body).await.status.as_u16(), 401);
    let _ = std::fs::remove_dir_all(&p.dir);
}
