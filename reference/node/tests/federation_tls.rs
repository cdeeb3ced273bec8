//! Federation over HTTPS (v1.1 §14.1, §15.1–§15.6; issue 15 "node discovery and keys"): two
//! in-process nodes serve TLS 1.3 on loopback with certificates from a test CA and reach
//! each other by name (`a.test`, `b.test`), the connection sent to `127.0.0.1` by
//! `federation.resolve` (curl's `--resolve`) while SNI and the certificate check stay on the
//! name. A static `https://` peer delivers when the CA is configured (`peer_ca`); an
//! untrusted certificate is a transport failure, retried and, after the TTL on the manual
//! clock, ended by a `receipt.failed@v1`; peers that know each other only by discovery
//! (`https://{domain}/.well-known/loom.json`) exchange a message and its reply; the
//! federation policy still applies to discovered peers.

mod support;

use loom_node::config::NodeConfig;
use loom_node::{Quirks, Storage};
use loom_protocol::clock::Clock;
use serde_json::Value;
use std::path::PathBuf;
use support::fed::{Served, TestCa, free_port, serve_tls, temp_dir};
use support::{Ident, TestNode};

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

struct Pki {
    dir: PathBuf,
    ca: TestCa,
    ca_pem: PathBuf,
}

fn pki(name: &str) -> Pki {
    let dir = temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let ca = TestCa::new("LOOM test CA");
    let ca_pem = dir.join("ca.pem");
    ca.write_pem(&ca_pem);
    Pki { dir, ca, ca_pem }
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
    let root = send(&alice, &a, &t, None, &bob, "over TLS").await;
    let rid = root["id"].as_str().unwrap();
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
    assert_eq!(got["content"]["human"]["text"], "over TLS");
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
    let root = send(&alice, &a, &t, None, &bob, "found you by name").await;
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
    assert_eq!(got["content"]["human"]["text"], "found you by name");

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
