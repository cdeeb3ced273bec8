//! A real reference node on 127.0.0.1:0 for the client's tests (loom-node is only a
//! dev-dependency: the client itself talks to any node). Rate limits are off (v1.1 §14.3
//! defaults would cap the load test), the store is in memory, the clock is fixed.
#![allow(dead_code)]

use loom_node::config::{RateLimits, TlsSettings};
use loom_node::{Env, Node, NodeConfig};
use loom_protocol::Timestamp;
use loom_protocol::clock::ManualClock;
use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::sync::Arc;

/// The domain every test node serves.
pub const DOMAIN: &str = "node.test";
/// The node's clock.
pub const START: &str = "2026-03-01T12:00:00Z";

/// A node serving on a background runtime until dropped.
pub struct RunningNode {
    /// `http://127.0.0.1:PORT` or `https://localhost:PORT`.
    pub url: String,
    /// The bound address.
    pub addr: SocketAddr,
    /// The self-signed chain when TLS is on.
    pub cert_chain: Vec<CertificateDer<'static>>,
    /// The node (its store, for tests that check what it kept).
    #[allow(dead_code)]
    pub node: Node,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for RunningNode {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts a node (plain HTTP, or TLS 1.3 with a self-signed certificate) on its own thread.
pub fn start(tls: bool) -> RunningNode {
    let mut config = NodeConfig {
        domain: DOMAIN.into(),
        ..NodeConfig::default()
    };
    config.rate_limits = RateLimits::unlimited();
    if tls {
        config.tls = Some(TlsSettings::SelfSigned);
    }
    start_with(config)
}

/// Starts a node with `config` (TLS when `config.tls` is set).
pub fn start_with(config: NodeConfig) -> RunningNode {
    let tls = config.tls.is_some();
    let server_tls = config
        .tls
        .clone()
        .map(|t| loom_node::tls::server_tls(&t, DOMAIN).unwrap());
    let clock = ManualClock::new(Timestamp::parse(START).unwrap());
    let node = Node::builder(config, Env::new(Arc::new(clock), 7))
        .build()
        .unwrap();
    let cert_chain = server_tls
        .as_ref()
        .map(|t| t.cert_chain.clone())
        .unwrap_or_default();
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let kept = node.clone();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
            let acceptor = server_tls.map(|t| t.acceptor);
            node.serve(listener, acceptor, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
    });
    let url = if tls {
        format!("https://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    };
    RunningNode {
        url,
        addr,
        cert_chain,
        node: kept,
        stop: Some(stop),
        thread: Some(thread),
    }
}
