//! The fake peers' server: one axum server in the harness process serving every fake peer
//! of a run, lenient as a peer should be: any body framing (chunked or not), any signing
//! form; every request recorded; deliveries answered as the case scripted ([`Answer`]).
//!
//! Plain HTTP: peer `n` is served under `{address}/peer/{n}/…` (or by `Host` header, for a
//! target that resolves peer domains to the harness address itself). TLS ([`PeerTls`]):
//! peer `n` is `https://{its domain}:{port}` — the target connects to the harness address
//! with the peer's domain as server name (SNI), gets a certificate for that domain issued by
//! the run's CA, and the request is routed by `Host` (HTTP/2: `:authority`); `/peer/{n}`
//! paths still work too.

use super::node::{Answer, PeerNode, Received};
use super::tls::PeerTls;
use axum::Router;
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use loom_protocol::clock::Clock;
use loom_protocol::federation::identity::NodeSignatureForm;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// Server index of blocked peer 0 (`/peer/{BLOCKED_INDEX_BASE + n}`): far above any
/// ordinary peer's index.
pub const BLOCKED_INDEX_BASE: u32 = 1_000_000;

/// Largest request body the fake peer reads (the §15.4 wrapper bound of the protocol crate).
const MAX_BODY: usize = loom_protocol::federation::wrapper::DEFAULT_MAX_WRAPPER_BYTES;

/// The server and the peers it serves.
#[derive(Debug)]
pub struct PeerServer {
    /// The base URL the target reaches the harness at (`http://127.0.0.1:PORT`, or
    /// `https://…` with TLS).
    pub address: String,
    /// The TLS side ([`PeerTls`]: the run's CA and the peers' certificates), when the peers
    /// speak TLS.
    pub tls: Option<Arc<PeerTls>>,
    /// Peer domains: `{n}` is replaced by the peer's index.
    pub domain_template: String,
    /// How many peers may be handed out (the target knows this many; 0: no bound).
    pub capacity: u32,
    seed: u64,
    clock: Arc<dyn Clock>,
    next: AtomicU32,
    next_blocked: AtomicU32,
    peers: Mutex<BTreeMap<u32, Arc<PeerNode>>>,
    identity_form: Mutex<Option<NodeSignatureForm>>,
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.lock().ok().and_then(|mut s| s.take()) {
            let _ = s.send(());
        }
    }
}

impl PeerServer {
    /// Serves on `listener` (plain HTTP, or TLS 1.3 with `tls`); the target reaches it at
    /// `address` (the profile's `harness_address`, or the listener's own loopback address).
    pub fn spawn(
        listener: tokio::net::TcpListener,
        address: Option<String>,
        domain_template: &str,
        capacity: u32,
        seed: u64,
        clock: Arc<dyn Clock>,
        tls: Option<Arc<PeerTls>>,
    ) -> Result<Arc<PeerServer>, String> {
        let local = listener
            .local_addr()
            .map_or_else(|_| "127.0.0.1:0".to_owned(), |a| a.to_string());
        let scheme = if tls.is_some() { "https" } else { "http" };
        let address = address
            .unwrap_or_else(|| format!("{scheme}://{local}"))
            .trim_end_matches('/')
            .to_owned();
        let acceptor = match &tls {
            Some(t) => {
                t.set_no_sni_host(&split_authority(&address).0)?;
                Some(t.acceptor()?)
            }
            None => None,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = Arc::new(PeerServer {
            address,
            tls,
            domain_template: domain_template.to_owned(),
            capacity,
            seed,
            clock,
            next: AtomicU32::new(0),
            next_blocked: AtomicU32::new(0),
            peers: Mutex::new(BTreeMap::new()),
            identity_form: Mutex::new(None),
            stop: Mutex::new(Some(stop)),
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::downgrade(&server));
        serve(listener, router, acceptor, async move {
            let _ = stopped.await;
        });
        Ok(server)
    }

    /// Binds 127.0.0.1:0 and serves there (the embedded target's peer server).
    pub async fn loopback(
        domain_template: &str,
        capacity: u32,
        seed: u64,
        clock: Arc<dyn Clock>,
    ) -> std::io::Result<Arc<PeerServer>> {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        PeerServer::spawn(l, None, domain_template, capacity, seed, clock, None)
            .map_err(std::io::Error::other)
    }

    /// Serves the same peers on another listener too (a deliver URL that is unreachable
    /// until the case binds its port: store-and-forward, v1.1 §15.6).
    /// (Same transport as the main listener.)
    pub fn serve_also(self: &Arc<Self>, listener: tokio::net::TcpListener) -> Result<(), String> {
        let router = Router::new()
            .fallback(handle)
            .with_state(Arc::downgrade(self));
        let acceptor = match &self.tls {
            Some(t) => Some(t.acceptor()?),
            None => None,
        };
        serve(listener, router, acceptor, std::future::pending());
        Ok(())
    }

    /// The domain of peer `n`.
    pub fn domain_of(&self, n: u32) -> String {
        self.domain_template.replace("{n}", &n.to_string())
    }

    /// The base URL of peer `n`: `{address}/peer/{n}` in plain HTTP; with TLS the peer's own
    /// origin `https://{domain}:{port}` (the port of the harness address), which the target
    /// reaches by resolving the domain to the harness address ([`PeerServer::dial_address`]).
    pub fn base_url_of(&self, n: u32) -> String {
        self.base_url(n, &self.domain_of(n))
    }

    /// The base URL of the peer at server index `index` with domain `domain` (see
    /// [`PeerServer::base_url_of`]).
    pub fn base_url(&self, index: u32, domain: &str) -> String {
        match &self.tls {
            Some(_) => format!("https://{domain}:{}", self.port()),
            None => format!("{}/peer/{index}", self.address),
        }
    }

    /// Where the target connects to reach any peer: the harness address's `host:port` (what
    /// a peer domain must resolve to: `--resolve peer-3.test=HOST:PORT`).
    pub fn dial_address(&self) -> String {
        let (host, port) = split_authority(&self.address);
        if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        }
    }

    /// The harness address's port (80/443 by scheme when it names none).
    pub fn port(&self) -> u16 {
        split_authority(&self.address).1
    }

    /// A fresh peer with its own domain and keys (a case's; negative cases each take one,
    /// since a target may legally quarantine a peer that misbehaved).
    pub fn fresh(&self) -> Result<Arc<PeerNode>, String> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        if self.capacity > 0 && n >= self.capacity {
            return Err(format!(
                "all {} fake peers the target knows are in use; raise [federation] peers (and configure the target with that many)",
                self.capacity
            ));
        }
        let seed: [u8; 32] = Sha256::digest(format!("{}/peer/{n}", self.seed).as_bytes()).into();
        let domain = self.domain_of(n);
        if let Some(t) = &self.tls {
            t.add_domain(&domain)?;
        }
        let peer = Arc::new(PeerNode::new(
            n,
            domain.clone(),
            self.base_url(n, &domain),
            seed,
            self.clock.clone(),
        ));
        self.adopt(&peer);
        if let Ok(mut p) = self.peers.lock() {
            p.insert(n, peer.clone());
        }
        Ok(peer)
    }

    /// Every peer, those handed out and those to come, signs its identity documents in
    /// `form` (the target's reading, [`crate::readings`]).
    pub fn set_identity_form(&self, form: NodeSignatureForm) {
        if let Ok(mut f) = self.identity_form.lock() {
            *f = Some(form);
        }
        for p in self
            .peers
            .lock()
            .map(|p| p.values().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            p.set_identity_form(form);
        }
    }

    /// The peer serving `domain`, if one was handed out.
    pub fn peer_of(&self, domain: &str) -> Option<Arc<PeerNode>> {
        let peers = self.peers.lock().ok()?;
        peers
            .values()
            .find(|p| p.domain.eq_ignore_ascii_case(domain))
            .cloned()
    }

    fn adopt(&self, peer: &PeerNode) {
        if let Some(form) = self.identity_form.lock().ok().and_then(|f| *f) {
            peer.set_identity_form(form);
        }
    }

    /// A fresh peer of the ones the target is configured to block (profile
    /// `[federation.block_peer] mode = "static"`): domain `template` with `{n}` = 0, 1, …
    /// (at most `count`), served at index [`BLOCKED_INDEX_BASE`]` + n`.
    pub fn fresh_blocked(&self, template: &str, count: u32) -> Result<Arc<PeerNode>, String> {
        let n = self.next_blocked.fetch_add(1, Ordering::Relaxed);
        if n >= count {
            return Err(format!(
                "all {count} blocked fake peers the target is configured with are in use; raise [federation.block_peer] count"
            ));
        }
        let index = BLOCKED_INDEX_BASE + n;
        let seed: [u8; 32] = Sha256::digest(format!("{}/blocked/{n}", self.seed).as_bytes()).into();
        let domain = template.replace("{n}", &n.to_string());
        if let Some(t) = &self.tls {
            t.add_domain(&domain)?;
        }
        let peer = Arc::new(PeerNode::new(
            index,
            domain.clone(),
            self.base_url(index, &domain),
            seed,
            self.clock.clone(),
        ));
        self.adopt(&peer);
        if let Ok(mut p) = self.peers.lock() {
            p.insert(index, peer.clone());
        }
        Ok(peer)
    }

    fn by_index(&self, n: u32) -> Option<Arc<PeerNode>> {
        self.peers.lock().ok()?.get(&n).cloned()
    }

    fn by_host(&self, host: &str) -> Option<Arc<PeerNode>> {
        let host = host.split(':').next().unwrap_or(host);
        self.peers
            .lock()
            .ok()?
            .values()
            .find(|p| p.domain.eq_ignore_ascii_case(host))
            .cloned()
    }
}

/// The host and port of a base URL (`https://10.0.0.5:9900` → `("10.0.0.5", 9900)`;
/// without a port, 443 for https and 80 otherwise).
fn split_authority(url: &str) -> (String, u16) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let default = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    match authority.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && (!h.contains(':') || h.ends_with(']')) => {
            match p.parse::<u16>() {
                Ok(port) => (
                    h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                    port,
                ),
                Err(_) => (authority.to_owned(), default),
            }
        }
        _ => (
            authority
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            default,
        ),
    }
}

/// Serves `router` on `listener` until `shutdown`: axum's plain HTTP/1.1 server, or with
/// `tls` the reference node's connection loop (`loom_node::net::serve`: TLS handshakes on
/// their own tasks, HTTP/2 or HTTP/1.1 by ALPN).
fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    tokio::spawn(async move {
        let _ = match tls {
            Some(acceptor) => {
                loom_node::net::serve(listener, router, Some(acceptor), shutdown).await
            }
            None => {
                axum::serve(listener, router)
                    .with_graceful_shutdown(shutdown)
                    .await
            }
        };
    });
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

/// Every request: find the peer (path prefix, else `Host` or `:authority`), record, answer.
async fn handle(State(server): State<std::sync::Weak<PeerServer>>, req: Request) -> Response {
    let Some(server) = server.upgrade() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "NODE_UNREACHABLE",
            "stopping",
        );
    };
    let raw_path = req.uri().path().to_owned();
    let (peer, path) = match raw_path.strip_prefix("/peer/").and_then(|rest| {
        let (n, tail) = rest.split_once('/').unwrap_or((rest, ""));
        Some((n.parse::<u32>().ok()?, format!("/{tail}")))
    }) {
        Some((n, tail)) => (server.by_index(n), tail),
        None => {
            // HTTP/1.1 names the peer in `Host`; HTTP/2 in the `:authority` pseudo-header,
            // which arrives as the URI's authority.
            let host = req
                .headers()
                .get("host")
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
                .or_else(|| req.uri().host().map(str::to_owned))
                .unwrap_or_default();
            (server.by_host(&host), raw_path.clone())
        }
    };
    let method = req.method().as_str().to_owned();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = to_bytes(req.into_body(), MAX_BODY)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    let Some(peer) = peer else {
        return error(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no fake peer at this path or host",
        );
    };
    let (status, resp, delay) = answer(&peer, &method, &path, &body);
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    peer.record(Received {
        at: peer.now(),
        method,
        path,
        raw_path,
        headers,
        body,
        status: status.as_u16(),
    });
    resp
}

fn answer(
    peer: &PeerNode,
    method: &str,
    path: &str,
    body: &[u8],
) -> (StatusCode, Response, Option<std::time::Duration>) {
    let json = |status: StatusCode, v: Value| (status, (status, axum::Json(v)).into_response());
    let (status, resp) = match (method, path) {
        ("GET", "/.well-known/loom.json") => json(StatusCode::OK, peer.node_document()),
        ("GET", "/v1/federation/hello") => json(StatusCode::OK, peer.hello()),
        ("GET", p) if p.starts_with("/v1/identity/") => {
            let raw = &p["/v1/identity/".len()..];
            let id = percent_decode(raw);
            match peer.identity_document(&id) {
                Some(doc) => json(StatusCode::OK, doc),
                None => (
                    StatusCode::NOT_FOUND,
                    error(
                        StatusCode::NOT_FOUND,
                        "IDENTITY_NOT_FOUND",
                        "not hosted here",
                    ),
                ),
            }
        }
        ("POST", "/v1/federation/deliver") => {
            let mut delay = None;
            let a = match peer.next_answer() {
                Answer::Delay(d) => {
                    delay = Some(d);
                    Answer::Accept
                }
                a => a,
            };
            let (s, r) = match a {
                Answer::Status(s) => {
                    let s = StatusCode::from_u16(s).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
                    (
                        s,
                        error(s, "NODE_UNREACHABLE", "scripted by the conformance case"),
                    )
                }
                _ => match peer.receipt_for(body) {
                    Ok(receipt) => json(StatusCode::ACCEPTED, receipt),
                    Err(why) => (
                        StatusCode::BAD_REQUEST,
                        error(StatusCode::BAD_REQUEST, "ENVELOPE_INVALID", &why),
                    ),
                },
            };
            return (s, r, delay);
        }
        _ => (
            StatusCode::NOT_FOUND,
            error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "no such route on the fake peer",
            ),
        ),
    };
    (status, resp, None)
}

/// `%XX` decoding of a path segment (identity addresses arrive encoded).
pub(crate) fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
