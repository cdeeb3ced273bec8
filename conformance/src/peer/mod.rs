//! The fake federation peer (issue 15, DESIGN.md §5): an in-process axum server
//! ([`server`]) that serves any number of fake peers ([`node`]), each with its own domain,
//! node key and hosted identities, reachable by the target at the address the profile gives
//! (`[federation] harness_address`, [`profile`]), over plain HTTP or TLS 1.3 with
//! certificates from a per-run CA ([`tls`]); and [`Federation`], what a run knows about
//! federating with its target: the server, how the target learns a peer, how to make it send,
//! and the timers it declares.

pub mod node;
pub mod profile;
pub mod server;
pub mod tls;

pub use node::{Answer, PeerKey, PeerNode, Received};
pub use server::PeerServer;
pub use tls::PeerTls;

use crate::ctx::{Ex, Exchanges};
use crate::finding::Finding;
use loom_protocol::clock::Clock;
use loom_protocol::keys::{public_key_to_b64url, public_key_to_spki_pem};
use profile::{FederationSection, fill};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Peers the embedded target is configured with (each case that federates takes one).
pub const EMBEDDED_PEERS: u32 = 160;

/// The embedded target's store-and-forward TTL: short, so the TTL cases finish in seconds, and
/// longer than the backoff case's four retries ([`EMBEDDED_RETRY_BASE_MS`] · 15 at most).
pub const EMBEDDED_TTL_MS: u64 = 5_000;

// The node's TTL is configured in whole seconds.
const _: () = assert!(EMBEDDED_TTL_MS.is_multiple_of(1000));

// The backoff case's four doubling retries fit under the cap and inside the TTL, with 2 s to
// spare for a busy machine.
const _: () = assert!(EMBEDDED_RETRY_MAX_MS >= 8 * EMBEDDED_RETRY_BASE_MS);
const _: () = assert!(EMBEDDED_TTL_MS >= 15 * EMBEDDED_RETRY_BASE_MS + 2_000);

/// The embedded target's least interval between two re-fetches of a remote document for an
/// unknown key id (v1.0 §7.4; the node's default is a minute).
pub const EMBEDDED_REFETCH_MIN_INTERVAL_MS: u64 = 200;

/// Peers the embedded target is configured to block (v1.1 §23.1), domain [`EMBEDDED_BLOCKED_DOMAIN`].
pub const EMBEDDED_BLOCKED_PEERS: u32 = 4;

/// The blocked peers' domains (`{n}` = 0, 1, …).
pub const EMBEDDED_BLOCKED_DOMAIN: &str = "blocked-{n}.test";

/// The embedded target's first retry delay (v1.1 §15.6 backoff starts here and doubles). Long
/// enough that a busy machine's scheduling delays (up to ~150 ms seen on 2 cores under the
/// full self-test) stay small beside the intervals `fed.outbound.backoff-grows` measures.
pub const EMBEDDED_RETRY_BASE_MS: u64 = 200;

/// The embedded target's longest retry delay.
pub const EMBEDDED_RETRY_MAX_MS: u64 = 1_600;

/// What a run knows about federating with its target.
#[derive(Debug)]
pub struct Federation {
    /// The fake peers' server.
    pub server: Arc<PeerServer>,
    /// The profile's `[federation]` section (defaults for the embedded target).
    pub section: FederationSection,
}

impl Federation {
    /// Starts the peer server for `section`: on `listen` (or loopback port 0).
    pub async fn start(
        section: FederationSection,
        seed: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Federation, String> {
        let bind = section.listen.as_deref().unwrap_or("127.0.0.1:0");
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| format!("federation.listen {bind}: cannot bind: {e}"))?;
        // The CA file is written here, before the target is probed: a target started after
        // the harness can be pointed at it.
        let tls = if section.tls() {
            let file = section.ca_file.as_deref().map(std::path::Path::new);
            Some(Arc::new(PeerTls::new(file)?))
        } else {
            None
        };
        let server = PeerServer::spawn(
            listener,
            section.harness_address.clone(),
            &section.peer_domain,
            section.peers,
            seed,
            clock,
            tls,
        )?;
        Ok(Federation { server, section })
    }

    /// Starts the fake peers for an embedded target and configures `config` to federate
    /// with them over TLS 1.3: peers `peer-{n}.test -> https://peer-{n}.test:PORT`, each
    /// domain resolved to the peer server's loopback address (the node's `--resolve`), the
    /// run's CA as the only trust anchor for peers (`--peer-ca`, no operating-system roots,
    /// no plain http); the short store-and-forward timers ([`EMBEDDED_TTL_MS`], [`EMBEDDED_RETRY_BASE_MS`],
    /// [`EMBEDDED_RETRY_MAX_MS`]; v1.1 §15.6) and re-fetch interval
    /// ([`EMBEDDED_REFETCH_MIN_INTERVAL_MS`], v1.0 §7.4), so the Level 2 cases run in seconds;
    /// and [`EMBEDDED_BLOCKED_PEERS`] more peers on its blocklist (v1.1 §23.1).
    pub async fn embedded(
        config: &mut loom_node::NodeConfig,
        seed: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Federation>, String> {
        Federation::embedded_with(config, Federation::embedded_section(), seed, clock).await
    }

    /// [`Federation::embedded`] with another section: `tls = false` configures plain http
    /// to `http://127.0.0.1:PORT/peer/{n}` (allowed to loopback) instead.
    pub async fn embedded_with(
        config: &mut loom_node::NodeConfig,
        section: FederationSection,
        seed: u64,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Federation>, String> {
        let fed = Federation::start(section, seed, clock).await?;
        let f = &mut config.federation;
        f.peers = (0..EMBEDDED_PEERS)
            .map(|n| (fed.server.domain_of(n), fed.server.base_url_of(n)))
            .collect();
        let blocked: Vec<(String, String)> = (0..EMBEDDED_BLOCKED_PEERS)
            .map(|n| {
                let domain = EMBEDDED_BLOCKED_DOMAIN.replace("{n}", &n.to_string());
                let url = fed.server.base_url(server::BLOCKED_INDEX_BASE + n, &domain);
                (domain, url)
            })
            .collect();
        f.blocklist = blocked.iter().map(|(d, _)| d.clone()).collect();
        f.peers.extend(blocked);
        match &fed.server.tls {
            Some(tls) => {
                let dial = fed.server.dial_address();
                f.resolve = f.peers.keys().map(|d| (d.clone(), dial.clone())).collect();
                f.peer_ca = vec![tls.ca_file().to_owned()];
                f.native_roots = false;
                f.allow_private_http = false;
            }
            None => f.allow_private_http = true,
        }
        f.refetch_min_interval_ms = EMBEDDED_REFETCH_MIN_INTERVAL_MS;
        f.ttl_secs = EMBEDDED_TTL_MS / 1000;
        f.retry_base_ms = EMBEDDED_RETRY_BASE_MS;
        f.retry_max_ms = EMBEDDED_RETRY_MAX_MS;
        Ok(Arc::new(fed))
    }

    /// The section the embedded target runs with: `static` peers on loopback over TLS, a
    /// declared short TTL.
    pub fn embedded_section() -> FederationSection {
        FederationSection {
            harness_address: None,
            listen: None,
            peer_domain: "peer-{n}.test".into(),
            peers: EMBEDDED_PEERS,
            tls: Some(true),
            ca_file: None,
            learn_peer: profile::Templated::default(),
            send_now: profile::Templated::default(),
            block_peer: profile::BlockPeer {
                mode: Some("static".into()),
                domain: Some(EMBEDDED_BLOCKED_DOMAIN.into()),
                count: Some(EMBEDDED_BLOCKED_PEERS),
                ..profile::BlockPeer::default()
            },
            timers: Some(profile::Timers {
                ttl_ms: Some(EMBEDDED_TTL_MS),
                refetch_min_interval_ms: Some(EMBEDDED_REFETCH_MIN_INTERVAL_MS),
            }),
            vars: BTreeMap::new(),
        }
    }

    /// How long to wait for the target to deliver something.
    pub fn wait(&self, timeout_scale: f64) -> Duration {
        Duration::from_secs_f64(self.section.send_now.wait_secs.unwrap_or(10.0) * timeout_scale)
    }

    /// The TTL the target declares, if it declares one.
    pub fn ttl(&self) -> Option<Duration> {
        self.section
            .timers
            .as_ref()
            .and_then(|t| t.ttl_ms)
            .map(Duration::from_millis)
    }

    /// The least re-fetch interval the target declares (v1.0 §7.4), if it declares one.
    pub fn refetch_min_interval(&self) -> Option<Duration> {
        self.section
            .timers
            .as_ref()
            .and_then(|t| t.refetch_min_interval_ms)
            .map(Duration::from_millis)
    }

    /// A fresh peer the target's federation policy refuses (`[federation.block_peer]`):
    /// one of the configured blocked peers (`static`), or a fresh peer the target learns and
    /// is then told to block (`request`); `unsupported` when the profile says neither.
    pub async fn blocked_peer(
        &self,
        net: &mut Exchanges,
        target_url: &str,
        user: &BTreeMap<String, String>,
    ) -> Result<Arc<PeerNode>, Finding> {
        let b = &self.section.block_peer;
        match b.mode.as_deref() {
            Some("static") => {
                let peer = self
                    .server
                    .fresh_blocked(b.domain.as_deref().unwrap_or(""), b.count.unwrap_or(0))
                    .map_err(Finding::Error)?;
                self.learn(net, target_url, &peer, user).await?;
                Ok(peer)
            }
            Some("request") => {
                let peer = self.server.fresh().map_err(Finding::Error)?;
                self.learn(net, target_url, &peer, user).await?;
                let ex = self
                    .templated(net, target_url, &peer, &b.request(), "block_peer", user)
                    .await?;
                if !(200..300).contains(&net.status(ex)) {
                    return Err(Finding::Error(format!(
                        "[federation.block_peer] request answered {}: {} (check the profile's block_peer template)",
                        net.status(ex),
                        net.text(ex)
                    )));
                }
                Ok(peer)
            }
            _ => Err(Finding::Unsupported(
                "the profile does not say how to make the target block a peer ([federation.block_peer] mode = \"static\" or \"request\"); v1.1 §23.1 policy enforcement cannot be observed without one".into(),
            )),
        }
    }

    /// The placeholder values for `peer` (module docs of [`profile`]).
    pub fn vars(&self, target_url: &str, peer: &PeerNode) -> BTreeMap<String, String> {
        let key = peer.active_key();
        let vk = key.key.verifying_key();
        let mut v = self.section.vars.clone();
        for (k, val) in [
            ("target", target_url.to_owned()),
            ("peer_domain", peer.domain.clone()),
            ("peer_base_url", peer.base_url.clone()),
            ("peer_deliver_url", peer.deliver_url()),
            (
                "peer_identity_url",
                format!("{}/v1/identity/{{identity}}", peer.base_url),
            ),
            (
                "peer_node_document_url",
                format!("{}/.well-known/loom.json", peer.base_url),
            ),
            ("peer_key_id", key.key_id.clone()),
            ("peer_public_key_pem", public_key_to_spki_pem(&vk)),
            ("peer_public_key_b64url", public_key_to_b64url(&vk)),
            ("peer_address", self.server.dial_address()),
        ] {
            v.insert(k.to_owned(), val);
        }
        if let Some(tls) = &self.server.tls {
            v.insert(
                "peer_ca_pem_path".into(),
                tls.ca_file().display().to_string(),
            );
            v.insert("peer_ca_pem".into(), tls.ca_pem().to_owned());
        }
        v
    }

    /// Makes the target know `peer` (`learn_peer`): nothing for `static` and
    /// `node-document` (the target is configured with the peers, or resolves their domains to
    /// the harness itself); the templated request for `request`, recorded as an exchange. A
    /// refusal is a setup `error` naming the profile field.
    pub async fn learn(
        &self,
        net: &mut Exchanges,
        target_url: &str,
        peer: &PeerNode,
        user: &BTreeMap<String, String>,
    ) -> Result<Option<Ex>, Finding> {
        if self.section.learn_mode() != "request" {
            return Ok(None);
        }
        let ex = self
            .templated(
                net,
                target_url,
                peer,
                &self.section.learn_peer,
                "learn_peer",
                user,
            )
            .await?;
        if !(200..300).contains(&net.status(ex)) {
            return Err(Finding::Error(format!(
                "[federation.learn_peer] request answered {}: {} (check the profile's learn_peer template)",
                net.status(ex),
                net.text(ex)
            )));
        }
        Ok(Some(ex))
    }

    /// Makes the target send its queue now (`send_now = request`); nothing for `wait`. `out`
    /// names what was queued (its placeholders, [`profile`]).
    pub async fn send_now(
        &self,
        net: &mut Exchanges,
        target_url: &str,
        peer: &PeerNode,
        out: &Outgoing,
    ) -> Result<(), Finding> {
        if self.section.send_mode() == "request" {
            let extra = out.vars(&peer.domain);
            self.templated(
                net,
                target_url,
                peer,
                &self.section.send_now,
                "send_now",
                &extra,
            )
            .await?;
        }
        Ok(())
    }

    /// Whether the `learn_peer` or `send_now` request needs `{user_token}` (a logged-in
    /// identity of the target).
    pub fn needs_user_token(&self) -> bool {
        [&self.section.learn_peer, &self.section.send_now]
            .iter()
            .any(|t| t.mentions("user_token"))
    }

    async fn templated(
        &self,
        net: &mut Exchanges,
        target_url: &str,
        peer: &PeerNode,
        t: &profile::Templated,
        name: &str,
        extra: &BTreeMap<String, String>,
    ) -> Result<Ex, Finding> {
        let mut vars = self.vars(target_url, peer);
        vars.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        let field = |m: &str| format!("federation.{name}.{m}");
        let err = Finding::Error;
        let method = t.method.as_deref().unwrap_or("POST");
        let url = fill(t.url.as_deref().unwrap_or(""), &vars, false, &field("url")).map_err(err)?;
        let Some(path) = url.strip_prefix(target_url) else {
            return Err(Finding::Error(format!(
                "{}: {url:?} is not on the target {target_url} (the harness sends templated requests to the target only)",
                field("url")
            )));
        };
        let mut headers = Vec::new();
        for (k, v) in &t.headers {
            headers.push((
                k.clone(),
                fill(v, &vars, false, &field(&format!("headers.{k}"))).map_err(err)?,
            ));
        }
        let has_ct = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
        let body = match &t.body {
            Some(b) => Some(fill(b, &vars, true, &field("body")).map_err(err)?),
            None => None,
        };
        if body.is_some() && !has_ct {
            headers.push(("content-type".into(), "application/json".into()));
        }
        let h: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let path = if path.is_empty() { "/" } else { path };
        net.exchange(method, path, &h, body.map(String::into_bytes), None)
            .await
    }
}

/// What a case asked the target to send (the `send_now` placeholders, [`profile`]).
#[derive(Debug, Clone, Default)]
pub struct Outgoing {
    /// The queued envelope ids.
    pub envelope_ids: Vec<String>,
    /// Their thread.
    pub thread_id: String,
    /// A bearer token of the sending identity.
    pub sender_token: String,
}

impl Outgoing {
    /// The placeholder values, for a delivery to `recipient_node`.
    pub fn vars(&self, recipient_node: &str) -> BTreeMap<String, String> {
        let mut v = BTreeMap::new();
        v.insert(
            "envelope_id".into(),
            self.envelope_ids.first().cloned().unwrap_or_default(),
        );
        v.insert(
            "envelope_ids_json".into(),
            serde_json::to_string(&self.envelope_ids).unwrap_or_else(|_| "[]".into()),
        );
        v.insert("recipient_node".into(), recipient_node.to_owned());
        v.insert("thread_id".into(), self.thread_id.clone());
        v.insert("sender_token".into(), self.sender_token.clone());
        v.insert("user_token".into(), self.sender_token.clone());
        v
    }
}
