//! # loom-node
//!
//! The LOOM v1.1 reference node (conformance Level 1). A library first — [`Node::builder`]
//! with a [`NodeConfig`] and an [`Env`] (injected clock and seed) — and the `loom-node`
//! binary second. The same node serves real sockets (tokio, optionally TLS 1.3 + HTTP/2) and,
//! with the `sim` feature, turmoil hosts in the simulator.
//!
//! Layers (DESIGN.md §4): [`store`] (SQLite, WAL, migrations), [`service`] (every protocol
//! rule, transport-free), `http` (axum routes, §24.1 error bodies), [`net`] (listeners), [`tls`]
//! (TLS 1.3 acceptor, v1.1 §14.1).

pub mod config;
pub(crate) mod discover;
pub mod dns;
pub mod env;
pub mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub(crate) mod http;
pub mod inspect;
pub mod net;
pub mod outbound;
#[cfg(feature = "quirks")]
pub mod quirks;
pub mod rules;
pub mod service;
#[cfg(feature = "sim")]
pub mod sim;
pub mod store;
pub mod tls;

pub use config::{NodeConfig, Storage};
pub use env::Env;
pub use error::{ApiError, ApiResult};
#[cfg(feature = "quirks")]
pub use quirks::{Quirk, Quirks};
pub use service::Service;

use std::sync::Arc;

/// Builds a [`Node`].
#[derive(Debug)]
pub struct NodeBuilder {
    config: NodeConfig,
    env: Env,
    rules: Arc<dyn rules::NodeRules>,
    dial: Arc<dyn outbound::Dial>,
}

impl NodeBuilder {
    /// Runs the node with `rules` in place of the specification ([`rules::Spec`]): the
    /// conformance self-test's seam.
    pub fn rules(mut self, rules: Arc<dyn rules::NodeRules>) -> Self {
        self.rules = rules;
        self
    }

    /// Runs the node with deliberate defects (only with the `quirks` feature).
    #[cfg(feature = "quirks")]
    pub fn quirks(self, quirks: Quirks) -> Self {
        self.rules(Arc::new(quirks::QuirkNode::new(quirks)))
    }

    /// Federation dials peers through `dial` (default: tokio TCP; turmoil in the simulator).
    pub fn dial(mut self, dial: Arc<dyn outbound::Dial>) -> Self {
        self.dial = dial;
        self
    }

    /// Opens the store, checks its audit log against the last signed checkpoint (v1.1
    /// §25.1: a log that does not match is refused, never re-signed), starts the service and
    /// anchors the log's head with a fresh checkpoint.
    pub fn build(self) -> Result<Node, StartError> {
        self.config.check()?;
        let config = self.rules.config(self.config);
        let store = store::Store::open(&config.storage).map_err(|e| e.to_string())?;
        if let Storage::Dir(dir) = &config.storage {
            store::audit::check_at_start(&store, dir).map_err(StartError::Audit)?;
        }
        let service = Service::with_dial(config, self.env, store, self.rules, self.dial)
            .map_err(|e| e.to_string())?;
        service.audit_checkpoint().map_err(|e| e.to_string())?;
        Ok(Node {
            service: Arc::new(service),
        })
    }
}

/// Why a node did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The configuration, the store or the service could not be set up.
    Setup(String),
    /// The store's audit log does not match its signed checkpoint (v1.1 §25.1): the node
    /// refuses to start rather than sign a new checkpoint over it.
    Audit(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Setup(m) | StartError::Audit(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for StartError {}

impl From<String> for StartError {
    fn from(m: String) -> Self {
        StartError::Setup(m)
    }
}

impl From<StartError> for String {
    fn from(e: StartError) -> Self {
        e.to_string()
    }
}

/// A running reference node (its service and router).
#[derive(Debug, Clone)]
pub struct Node {
    service: Arc<Service>,
}

impl Node {
    /// Starts building a node.
    pub fn builder(config: NodeConfig, env: Env) -> NodeBuilder {
        NodeBuilder {
            config,
            env,
            rules: Arc::new(rules::Spec),
            dial: Arc::new(outbound::TokioDial),
        }
    }

    /// The service (all protocol behaviour).
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// The HTTP router, behind the front of the node's rules ([`rules::NodeRules::front`]).
    pub fn router(&self) -> axum::Router {
        let service = self.service.clone();
        service
            .rules
            .front(http::router(service.clone()), service.clone())
    }

    /// Serves on `listener` until `shutdown` completes, with the federation outbox worker
    /// ([`service::outbox::run_worker`]) running beside it, signing an audit checkpoint every
    /// `audit_checkpoint_secs` and once more on the way out.
    pub async fn serve<A: net::Accept>(
        &self,
        listener: A,
        tls: Option<tokio_rustls::TlsAcceptor>,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        self.serve_router(listener, self.router(), tls, shutdown)
            .await
    }

    /// [`Node::serve`] with `router` in place of [`Node::router`] (a test shim wraps the
    /// node's router, at the HTTP level): the same workers run beside it.
    pub async fn serve_router<A: net::Accept>(
        &self,
        listener: A,
        router: axum::Router,
        tls: Option<tokio_rustls::TlsAcceptor>,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> std::io::Result<()> {
        let hygiene = net::Hygiene {
            limits: self.service.config.connections.clone(),
            refusal: http::refusal(self.service.clone()),
        };
        let every = self.service.config.audit_checkpoint_secs;
        let service = self.service.clone();
        let checkpoints = tokio::spawn(async move {
            if every == 0 {
                return;
            }
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(every));
            loop {
                tick.tick().await;
                if let Err(e) = service.audit_checkpoint() {
                    tracing::warn!(error = %e, "audit checkpoint failed");
                }
            }
        });
        let worker = tokio::spawn(service::outbox::run_worker(self.service.clone()));
        let mail = tokio::spawn(service::bridge::outbound::run_worker(self.service.clone()));
        let typing = tokio::spawn(service::realtime::run_typing_worker(self.service.clone()));
        let served = net::serve_with(listener, router, tls, hygiene, shutdown).await;
        self.service.realtime_shut_down();
        typing.abort();
        worker.abort();
        mail.abort();
        checkpoints.abort();
        // §25.1 anchoring: the head at shutdown is signed too.
        if let Err(e) = self.service.audit_checkpoint() {
            tracing::warn!(error = %e, "audit checkpoint at shutdown failed");
        }
        served
    }

    /// Serves the email bridge's SMTP (v1.1 §21.2) on `listener` until the task is dropped,
    /// offering STARTTLS with `tls`; outbound mail runs in [`Node::serve`]'s worker. A node
    /// without `[bridge]` answers every recipient `550`.
    pub async fn serve_smtp<A: net::Accept>(
        &self,
        listener: A,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> std::io::Result<()> {
        let config = self.smtp_config();
        loom_bridge::smtp::server::serve(
            net::SmtpListener(listener),
            std::sync::Arc::new(config),
            tls,
            std::sync::Arc::new(service::bridge::inbound::SmtpHandler(self.service.clone())),
        )
        .await
    }

    /// The SMTP listener's settings from `[bridge]`.
    fn smtp_config(&self) -> loom_bridge::smtp::server::ServerConfig {
        use loom_bridge::smtp::session::{SessionConfig, SessionLimits};
        let (hostname, max_message_bytes, max_recipients, require_tls) = match self.service.bridge()
        {
            Some(b) => (
                b.hostname.clone(),
                b.config.max_message_bytes,
                b.config.max_recipients,
                b.config.require_tls,
            ),
            None => (self.service.config.domain.clone(), 1024 * 1024, 100, false),
        };
        loom_bridge::smtp::server::ServerConfig::new(SessionConfig {
            hostname,
            limits: SessionLimits {
                max_message_bytes,
                max_recipients,
                ..SessionLimits::default()
            },
            starttls: true,
            require_tls,
        })
    }

    /// Runs one pass of the federation outbox now (tests drive it on their clock).
    pub async fn federation_tick(&self) -> Result<service::outbox::TickReport, ApiError> {
        self.service.federation_tick().await
    }
}
