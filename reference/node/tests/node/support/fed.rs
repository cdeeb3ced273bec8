//! Two nodes federating on loopback: each a [`TestNode`] (in-process router for its own
//! clients, manual clock) whose router is also served on a real `127.0.0.1` socket, so the
//! nodes reach each other through the federation client. The outbox worker is not running:
//! tests drive it with [`TestNode::tick`] on the manual clock.

use super::{Ident, TestNode};
use loom_node::config::NodeConfig;
use loom_node::{Quirk, Quirks, Storage};
use loom_protocol::federation::wrapper::DELIVER_PATH;
use loom_protocol::http_sig::{RequestParts, sign_request};
use serde_json::{Value, json};
use std::path::PathBuf;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The federation quirks, each proven by its own test in `tests/node/federation_quirks.rs`:
/// the tail of [`Quirk::ALL`], which lists them last, from `AcceptUnsignedDelivery` on.
pub fn federation_quirks() -> &'static [Quirk] {
    let first = Quirk::ALL
        .iter()
        .position(|q| *q == Quirk::AcceptUnsignedDelivery)
        .expect("Quirk::ALL lists the federation quirks");
    &Quirk::ALL[first..]
}

/// a.test and b.test with in-memory stores and no quirks, each the other's static peer on a
/// reserved loopback port (see [`free_port`]); `tweak_a`/`tweak_b` adjust their configs.
/// Not served yet: returns `(a, b, port of a, port of b)` for [`serve`].
pub async fn fed_pair(
    tweak_a: impl FnOnce(&mut NodeConfig),
    tweak_b: impl FnOnce(&mut NodeConfig),
) -> (TestNode, TestNode, u16, u16) {
    let (pa, pb) = (free_port().await, free_port().await);
    let a = fed_node(
        "a.test",
        "b.test",
        pb,
        Storage::Memory,
        Quirks::none(),
        tweak_a,
    );
    let b = fed_node(
        "b.test",
        "a.test",
        pa,
        Storage::Memory,
        Quirks::none(),
        tweak_b,
    );
    (a, b, pa, pb)
}

/// A served router: drop or [`Served::stop`] to close the listener.
pub struct Served {
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Stops serving and waits until the listener is closed.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        let _ = (&mut self.task).await;
    }
}

/// Ports handed out by [`free_port`], each still bound (not listening) so that nothing else
/// (another test's listener, or the ephemeral source port of an outgoing connection) can take
/// it before [`serve`] does. A bound socket that does not listen refuses connections, so a
/// reserved port also stands for "a peer that is down".
static RESERVED: std::sync::Mutex<std::collections::BTreeMap<u16, tokio::net::TcpSocket>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// A free loopback port, reserved for this test until [`serve`] or [`serve_tls`] listens on it.
pub async fn free_port() -> u16 {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    socket.bind(([127, 0, 0, 1], 0).into()).unwrap();
    let port = socket.local_addr().unwrap().port();
    RESERVED.lock().unwrap().insert(port, socket);
    port
}

/// A listener on `127.0.0.1:port`: the reservation from [`free_port`] if there is one, else a
/// fresh bind (a restart on the same port), retried for up to 5 s while the port is busy.
pub async fn listen(port: u16) -> TcpListener {
    let reserved = RESERVED.lock().unwrap().remove(&port);
    if let Some(socket) = reserved {
        return socket.listen(1024).unwrap();
    }
    let mut tries = 0;
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => return l,
            Err(_) if tries < 100 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => panic!("cannot listen on 127.0.0.1:{port}: {e}"),
        }
    }
}

/// Serves `node` on `127.0.0.1:port` (no outbox worker).
pub async fn serve(node: &TestNode, port: u16) -> Served {
    serve_router(node.node.router(), port).await
}

/// Serves `router` on `127.0.0.1:port` with the node's own server loop.
pub async fn serve_router(router: axum::Router, port: u16) -> Served {
    let listener = listen(port).await;
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = loom_node::net::serve(listener, router, None, async {
            let _ = rx.await;
        })
        .await;
    });
    Served {
        stop: Some(tx),
        task,
    }
}

/// Serves `node` with TLS on `127.0.0.1:port` (no outbox worker).
pub async fn serve_tls(node: &TestNode, port: u16, acceptor: tokio_rustls::TlsAcceptor) -> Served {
    let listener = listen(port).await;
    let (tx, rx) = oneshot::channel::<()>();
    let router = node.node.router();
    let task = tokio::spawn(async move {
        let _ = loom_node::net::serve(listener, router, Some(acceptor), async {
            let _ = rx.await;
        })
        .await;
    });
    Served {
        stop: Some(tx),
        task,
    }
}

/// A test CA in a fresh temporary directory `dir`, its certificate written to `ca_pem` (what
/// a node's `federation.peer_ca` names).
pub struct Pki {
    pub dir: PathBuf,
    pub ca: TestCa,
    pub ca_pem: PathBuf,
}

/// A fresh [`Pki`] under a temporary directory named after `name`.
pub fn pki(name: &str) -> Pki {
    let dir = temp_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let ca = TestCa::new("LOOM test CA");
    let ca_pem = dir.join("ca.pem");
    ca.write_pem(&ca_pem);
    Pki { dir, ca, ca_pem }
}

/// A test certificate authority (rcgen): issues server certificates for node domains.
pub struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    /// A fresh self-signed CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let key = rcgen::KeyPair::generate().unwrap();
        TestCa {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).unwrap(),
        }
    }

    /// Writes the CA certificate (PEM) to `path`.
    pub fn write_pem(&self, path: &std::path::Path) {
        std::fs::write(path, self.issuer.pem()).unwrap();
    }

    /// A TLS 1.3 acceptor (the node's own, `loom_node::tls::server_config`) presenting a
    /// certificate for `domain` issued by this CA.
    pub fn acceptor(&self, domain: &str) -> tokio_rustls::TlsAcceptor {
        let params = rcgen::CertificateParams::new(vec![domain.to_owned()]).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()),
        );
        let config = loom_node::tls::server_config(vec![cert.der().clone()], key).unwrap();
        tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config))
    }
}

/// A federation node `domain` whose peer `peer` lives at `127.0.0.1:peer_port`.
pub fn fed_node(
    domain: &str,
    peer: &str,
    peer_port: u16,
    storage: Storage,
    quirks: Quirks,
    tweak: impl FnOnce(&mut NodeConfig),
) -> TestNode {
    TestNode::with_quirks(quirks, |c| {
        c.domain = domain.into();
        c.storage = storage;
        c.federation
            .peers
            .insert(peer.into(), format!("http://127.0.0.1:{peer_port}"));
        c.federation.allow_private_http = true;
        c.federation.retry_base_ms = 1_000;
        c.federation.request_timeout_ms = 5_000;
        tweak(c);
    })
}

/// A fresh temporary directory for a durable store.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loom-fed-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

impl TestNode {
    /// One outbox pass.
    pub async fn tick(&self) -> loom_node::service::outbox::TickReport {
        self.node.federation_tick().await.unwrap()
    }

    /// The outbox rows as `(destination, state, attempts, reason)`.
    pub fn outbox(&self) -> Vec<loom_node::store::federation::OutboxRow> {
        self.node.service().outbox().unwrap()
    }

    /// A delivery wrapper from this node to `to_node` carrying `envelopes`, signed with this
    /// node's key; returns the headers and the body.
    pub fn signed_delivery(&self, envelopes: Vec<Value>) -> (Vec<(String, String)>, Vec<u8>) {
        let domain = self.domain();
        let body = serde_json::to_vec(&json!({
            "loom": "1.1",
            "sender_node": domain,
            "delivery_id": format!("fdel_{}", self.envelope_id().trim_start_matches("env_")),
            "timestamp": self.now(),
            "envelopes": envelopes,
        }))
        .unwrap();
        let headers = self.sign_delivery(&body);
        (headers, body)
    }

    /// LOOM-HTTP-SIG-1 headers for `body` by this node's key (nonce from the test's ids).
    pub fn sign_delivery(&self, body: &[u8]) -> Vec<(String, String)> {
        let (key_id, key) = self.node.service().node_key();
        let nonce = self.envelope_id();
        let h = sign_request(
            &RequestParts {
                method: "POST",
                path: DELIVER_PATH,
                body,
            },
            &self.domain(),
            key_id,
            key,
            loom_protocol::Timestamp::parse(&self.now()).unwrap(),
            nonce.as_bytes(),
        );
        h.all_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// Posts a delivery to this node (in-process).
    pub async fn deliver(&self, headers: &[(String, String)], body: Vec<u8>) -> super::Resp {
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        self.raw(
            "POST",
            DELIVER_PATH,
            None,
            &h,
            Some(("application/json", body)),
        )
        .await
    }

    /// The envelopes of `thread` as `reader` sees them.
    pub async fn thread_envelopes(&self, thread: &str, reader: &Ident) -> Vec<Value> {
        let r = self
            .get(&format!("/v1/threads/{thread}/envelopes"), &reader.token)
            .await
            .expect(200);
        r.body["envelopes"].as_array().cloned().unwrap_or_default()
    }
}
