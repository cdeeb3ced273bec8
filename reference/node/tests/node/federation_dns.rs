//! DNS discovery of peers (v1.1 §15.1; issue 15 "node discovery and keys", DNS SRV/TXT as an
//! optional resolver): `a.test` is configured with `federation.dns_server` pointing at an
//! in-process fake DNS server (UDP and TCP on loopback, answering from a table) and knows
//! `b.test` by nothing else — no static peer, no `resolve` override for `b.test`, so the
//! plain `https://b.test/.well-known/loom.json` would not connect. `b.test` serves TLS 1.3
//! under the name `localhost` (its certificate is for `localhost`; `public_url` names
//! `https://localhost:PORT`), which only its DNS records reveal.
//!
//! Proven: TXT `wellknown=` leads to the document and a message is delivered; SRV alone
//! leads there too, in priority order, also when the UDP answer is truncated (TCP); with no
//! records the node falls back to `https://{domain}/.well-known/loom.json`; timeouts,
//! SERVFAIL, malformed answers, an unusable `_loom` TXT and NXDOMAIN without a reachable
//! well-known URL are clear `NODE_UNREACHABLE` errors and the outbox keeps the item.

use crate::support::fed::{Pki, Served, free_port, pki, serve_tls};
use crate::support::{Ident, TestNode};
use loom_node::config::NodeConfig;
use loom_node::dns::wire::{Answer, encode_response};
use loom_node::dns::{TYPE_SRV, TYPE_TXT, decode_response};
use loom_node::{Quirks, Storage};
use loom_protocol::clock::Clock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// What the fake server does for one `(name, type)`.
#[derive(Debug, Clone)]
enum Reply {
    /// NOERROR with these records.
    Records(Vec<Answer>),
    /// NOERROR with TC set and no records over UDP; the records over TCP.
    Truncated(Vec<Answer>),
    /// RCODE 3.
    NxDomain,
    /// RCODE 2.
    ServFail,
    /// No answer at all.
    Silent,
    /// The query id followed by a header and a question whose name points at itself.
    Garbage,
}

/// A question as the fake server saw it: name, type, transport.
type Asked = (String, u16, &'static str);
/// One failure case: what, the table entries it sets, a text its error must contain.
type Case = (&'static str, Vec<(&'static str, u16, Reply)>, &'static str);

/// A fake recursive DNS server on `127.0.0.1:port` (UDP and TCP), answering from `table`;
/// names not in the table get NXDOMAIN. Records the questions it was asked.
#[derive(Clone)]
struct FakeDns {
    addr: std::net::SocketAddr,
    table: Arc<Mutex<BTreeMap<(String, u16), Reply>>>,
    asked: Arc<Mutex<Vec<Asked>>>,
}

impl FakeDns {
    async fn start() -> FakeDns {
        let (udp, tcp) = loop {
            let udp = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let port = udp.local_addr().unwrap().port();
            if let Ok(tcp) = tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
                break (udp, tcp);
            }
        };
        let dns = FakeDns {
            addr: udp.local_addr().unwrap(),
            table: Arc::default(),
            asked: Arc::default(),
        };
        let d = dns.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            while let Ok((n, from)) = udp.recv_from(&mut buf).await {
                if let Some(out) = d.answer(&buf[..n], "udp") {
                    let _ = udp.send_to(&out, from).await;
                }
            }
        });
        let d = dns.clone();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut s, _)) = tcp.accept().await {
                let mut len = [0u8; 2];
                if s.read_exact(&mut len).await.is_err() {
                    continue;
                }
                let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
                if s.read_exact(&mut q).await.is_err() {
                    continue;
                }
                if let Some(out) = d.answer(&q, "tcp") {
                    let mut framed = (out.len() as u16).to_be_bytes().to_vec();
                    framed.extend_from_slice(&out);
                    let _ = s.write_all(&framed).await;
                }
            }
        });
        dns
    }

    fn set(&self, name: &str, qtype: u16, reply: Reply) {
        self.table
            .lock()
            .unwrap()
            .insert((name.to_owned(), qtype), reply);
    }

    fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }

    fn answer(&self, query: &[u8], via: &'static str) -> Option<Vec<u8>> {
        let q = decode_response(query).ok()?;
        let (name, qtype, _) = q.question?;
        self.asked.lock().unwrap().push((name.clone(), qtype, via));
        let reply = self
            .table
            .lock()
            .unwrap()
            .get(&(name, qtype))
            .cloned()
            .unwrap_or(Reply::NxDomain);
        match reply {
            Reply::Records(a) => encode_response(query, 0, false, &a),
            Reply::Truncated(a) if via == "tcp" => encode_response(query, 0, false, &a),
            Reply::Truncated(_) => encode_response(query, 0, true, &[]),
            Reply::NxDomain => encode_response(query, 3, false, &[]),
            Reply::ServFail => encode_response(query, 2, false, &[]),
            Reply::Silent => None,
            Reply::Garbage => {
                let mut g = query[..2].to_vec();
                g.extend_from_slice(&[0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xC0, 12, 0, 16, 0, 1]);
                Some(g)
            }
        }
    }
}

fn tls_node(domain: &str, ca: &std::path::Path, tweak: impl FnOnce(&mut NodeConfig)) -> TestNode {
    TestNode::with_quirks(Quirks::none(), |c| {
        c.domain = domain.into();
        c.storage = Storage::Memory;
        c.public_url = Some(format!("https://{domain}"));
        c.federation.native_roots = false;
        c.federation.peer_ca = vec![ca.to_owned()];
        c.federation.retry_base_ms = 1_000;
        c.federation.request_timeout_ms = 5_000;
        c.federation.dns_timeout_ms = 150;
        c.federation.dns_attempts = 2;
        tweak(c);
    })
}

/// `a.test` (asking `dns`) and `b.test` (served as `localhost:pb`, or as `b.test` when
/// `b_as_localhost` is false, in which case `a.test` maps `b.test` to its port), both
/// served over TLS; `b.test` reaches `a.test` through a `resolve` override.
struct Pair {
    a: TestNode,
    b: TestNode,
    pb: u16,
    _sa: Served,
    _sb: Served,
}

async fn pair(p: &Pki, dns: &FakeDns, b_as_localhost: bool) -> Pair {
    let (pa, pb) = (free_port().await, free_port().await);
    let a = tls_node("a.test", &p.ca_pem, |c| {
        c.federation.dns_server = Some(dns.addr.to_string());
        if !b_as_localhost {
            c.federation
                .resolve
                .insert("b.test".into(), format!("127.0.0.1:{pb}"));
        }
    });
    let b = tls_node("b.test", &p.ca_pem, |c| {
        if b_as_localhost {
            c.public_url = Some(format!("https://localhost:{pb}"));
        }
        c.federation
            .resolve
            .insert("a.test".into(), format!("127.0.0.1:{pa}"));
    });
    let _sa = serve_tls(&a, pa, p.ca.acceptor("a.test")).await;
    let b_name = if b_as_localhost {
        "localhost"
    } else {
        "b.test"
    };
    let _sb = serve_tls(&b, pb, p.ca.acceptor(b_name)).await;
    Pair { a, b, pb, _sa, _sb }
}

/// alice@a.test writes to bob@b.test; returns the envelope id and bob.
async fn alice_writes_to_bob(p: &Pair, text: &str) -> (String, Ident) {
    let alice = p.a.register("alice", "human", 1).await;
    let bob = p.b.register("bob", "human", 2).await;
    let env = alice.message(&p.a, &p.a.thread_id(), None, &[&bob], text);
    let sent = alice.send(&p.a, env).await.expect(201).body;
    (sent["id"].as_str().unwrap().to_owned(), bob)
}

async fn bob_has(p: &Pair, bob: &Ident, id: &str, text: &str) {
    let got =
        p.b.get(&format!("/v1/envelopes/{id}"), &bob.token)
            .await
            .expect(200)
            .body;
    assert_eq!(got["content"]["human"]["text"], text);
}

#[tokio::test]
async fn the_txt_wellknown_url_leads_to_the_peer_and_a_message_is_delivered() {
    let p = pki("dns-txt");
    let dns = FakeDns::start().await;
    let pr = pair(&p, &dns, true).await;
    let pb = pr.pb;
    dns.set(
        "_loom.b.test",
        TYPE_TXT,
        Reply::Records(vec![
            Answer::Txt(vec!["some-other=record".into()]),
            // One record split over two character-strings, read concatenated.
            Answer::Txt(vec![
                format!("v=LOOM1.1; api=https://localhost:{pb}/v1; ws=wss://localhost:{pb}/ws; "),
                format!("wellknown=https://localhost:{pb}/.well-known/loom.json"),
            ]),
        ]),
    );
    // The SRV record names a port nothing listens on: the TXT URL is what is used.
    dns.set(
        "_loom._tcp.b.test",
        TYPE_SRV,
        Reply::Records(vec![Answer::Srv(10, 0, 1, "localhost.".into())]),
    );
    let (id, bob) = alice_writes_to_bob(&pr, "found through DNS").await;
    let r = pr.a.tick().await;
    assert_eq!(
        (r.delivered, r.failed, r.retried),
        (1, 0, 0),
        "{:?}",
        pr.a.outbox()
    );
    bob_has(&pr, &bob, &id, "found through DNS").await;
    let asked = dns.asked();
    assert!(
        asked.contains(&("_loom._tcp.b.test".into(), TYPE_SRV, "udp")),
        "{asked:?}"
    );
    assert!(
        asked.contains(&("_loom.b.test".into(), TYPE_TXT, "udp")),
        "{asked:?}"
    );
    // The stored peer delivers where its document says, the host DNS revealed.
    let peer = pr.a.node.service().fetch_peer("b.test").await.unwrap();
    assert!(
        peer.deliver_url
            .starts_with(&format!("https://localhost:{pb}/")),
        "{}",
        peer.deliver_url
    );
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// A [`pair`] whose `b.test` has no TXT record (NOERROR, no records) and the SRV answer
/// `srv(port of b.test)`.
async fn srv_only(name: &str, srv: impl FnOnce(u16) -> Reply) -> (Pki, FakeDns, Pair) {
    let p = pki(name);
    let dns = FakeDns::start().await;
    let pr = pair(&p, &dns, true).await;
    dns.set("_loom.b.test", TYPE_TXT, Reply::Records(vec![]));
    dns.set("_loom._tcp.b.test", TYPE_SRV, srv(pr.pb));
    (p, dns, pr)
}

#[tokio::test]
async fn srv_records_alone_lead_to_the_peer_in_priority_order_also_over_tcp() {
    // The SRV answer is truncated over UDP, so the client asks again over TCP; priority 5
    // wins over the earlier-listed priority 10.
    let (p, dns, pr) = srv_only("dns-srv", |pb| {
        Reply::Truncated(vec![
            Answer::Srv(10, 0, 1, "localhost.".into()),
            Answer::Srv(5, 0, pb, "localhost.".into()),
        ])
    })
    .await;
    let (id, bob) = alice_writes_to_bob(&pr, "via SRV").await;
    let r = pr.a.tick().await;
    assert_eq!((r.delivered, r.retried), (1, 0), "{:?}", pr.a.outbox());
    bob_has(&pr, &bob, &id, "via SRV").await;
    let asked = dns.asked();
    assert!(
        asked.contains(&("_loom._tcp.b.test".into(), TYPE_SRV, "tcp")),
        "{asked:?}"
    );
    let _ = std::fs::remove_dir_all(&p.dir);
}

/// RFC 2782: "A client MUST attempt to contact the target host with the lowest-numbered
/// priority it can reach" — a target that does not answer is skipped for the next one.
#[tokio::test]
async fn a_dead_srv_target_is_skipped_for_the_next_one() {
    // Priority 5 names a port nothing listens on; priority 10 is the node.
    let (p, dns, pr) = srv_only("dns-srv-next", |pb| {
        Reply::Records(vec![
            Answer::Srv(10, 0, pb, "localhost.".into()),
            Answer::Srv(5, 0, 1, "localhost.".into()),
        ])
    })
    .await;
    let (id, bob) = alice_writes_to_bob(&pr, "second target").await;
    let r = pr.a.tick().await;
    assert_eq!((r.delivered, r.retried), (1, 0), "{:?}", pr.a.outbox());
    bob_has(&pr, &bob, &id, "second target").await;

    // With every target dead, the refusal names each one.
    dns.set(
        "_loom._tcp.c.test",
        TYPE_SRV,
        Reply::Records(vec![
            Answer::Srv(5, 0, 1, "localhost.".into()),
            Answer::Srv(10, 0, 2, "localhost.".into()),
        ]),
    );
    dns.set("_loom.c.test", TYPE_TXT, Reply::Records(vec![]));
    let e = pr.a.node.service().fetch_peer("c.test").await.unwrap_err();
    assert_eq!(e.code, loom_protocol::ErrorCode::NodeUnreachable);
    assert!(
        e.reason.contains("none of the 2 SRV targets of c.test")
            && e.reason
                .contains("https://localhost:1/.well-known/loom.json")
            && e.reason
                .contains("https://localhost:2/.well-known/loom.json"),
        "{}",
        e.reason
    );
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn without_records_the_node_falls_back_to_the_well_known_url() {
    let p = pki("dns-none");
    let dns = FakeDns::start().await;
    // b.test is served under its own name; a.test maps b.test to its port.
    let pr = pair(&p, &dns, false).await;
    dns.set("_loom.b.test", TYPE_TXT, Reply::Records(vec![]));
    // `_loom._tcp.b.test` is not in the table: NXDOMAIN.
    let (id, bob) = alice_writes_to_bob(&pr, "the old way").await;
    let r = pr.a.tick().await;
    assert_eq!((r.delivered, r.retried), (1, 0), "{:?}", pr.a.outbox());
    bob_has(&pr, &bob, &id, "the old way").await;
    assert_eq!(dns.asked().len(), 2, "{:?}", dns.asked());
    let _ = std::fs::remove_dir_all(&p.dir);
}

#[tokio::test]
async fn dns_failures_are_clear_errors_and_the_outbox_keeps_the_item() {
    let p = pki("dns-fail");
    let dns = FakeDns::start().await;
    let closed = free_port().await;
    // a.test maps b.test to a port nothing serves: the well-known fall-back cannot succeed.
    let a = tls_node("a.test", &p.ca_pem, |c| {
        c.federation.dns_server = Some(dns.addr.to_string());
        c.federation
            .resolve
            .insert("b.test".into(), format!("127.0.0.1:{closed}"));
    });
    let b = tls_node("b.test", &p.ca_pem, |_| {});
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let env = alice.message(&a, &a.thread_id(), None, &[&bob], "kept for later");
    alice.send(&a, env).await.expect(201);

    let txt = "_loom.b.test";
    let srv = "_loom._tcp.b.test";
    let cases: Vec<Case> = vec![
        (
            "silent server",
            vec![(srv, TYPE_SRV, Reply::Silent)],
            "timed out",
        ),
        (
            "SERVFAIL",
            vec![(srv, TYPE_SRV, Reply::ServFail)],
            "SERVFAIL",
        ),
        (
            "pointer loop",
            vec![(srv, TYPE_SRV, Reply::Garbage)],
            "malformed DNS answer",
        ),
        (
            "unusable TXT",
            vec![
                (srv, TYPE_SRV, Reply::Records(vec![])),
                (
                    txt,
                    TYPE_TXT,
                    Reply::Records(vec![Answer::Txt(vec![
                        "v=LOOM1.1; wellknown=ftp://localhost/x".into(),
                    ])]),
                ),
            ],
            "wellknown",
        ),
        (
            "NXDOMAIN, well-known unreachable",
            vec![
                (srv, TYPE_SRV, Reply::NxDomain),
                (txt, TYPE_TXT, Reply::NxDomain),
            ],
            "connect 127.0.0.1",
        ),
    ];
    for (attempt, (what, replies, needle)) in cases.into_iter().enumerate() {
        for (name, qtype, reply) in replies {
            dns.set(name, qtype, reply);
        }
        if let Some(due) = a.node.service().next_outbox_due().unwrap() {
            let wait = due.unix_ms() - a.clock.now().unix_ms();
            if wait > 0 {
                a.clock.advance_ms(wait);
            }
        }
        let r = a.tick().await;
        assert_eq!((r.delivered, r.failed, r.retried), (0, 0, 1), "{what}");
        let row = &a.outbox()[0];
        assert_eq!(row.state, "queued", "{what}");
        assert_eq!(row.attempts as usize, attempt + 1, "{what}");
        let e = a.node.service().fetch_peer("b.test").await.unwrap_err();
        assert_eq!(e.code, loom_protocol::ErrorCode::NodeUnreachable, "{what}");
        let text = e.to_string();
        assert!(
            text.contains(needle) && text.contains("b.test"),
            "{what}: {text}"
        );
    }
    // The DNS errors name the DNS step and the section.
    dns.set(srv, TYPE_SRV, Reply::ServFail);
    let e = a.node.service().fetch_peer("b.test").await.unwrap_err();
    assert!(
        e.to_string().contains("DNS discovery of node b.test") && e.section == "v1.1 §15.1",
        "{e:?}"
    );
    assert!(b.outbox().is_empty());
    let _ = std::fs::remove_dir_all(&p.dir);
}
