//! The node under test: the embedded reference node on loopback (the default), or any node
//! at a URL. Setup is lenient — wait for readiness, learn the domain, the capabilities and the
//! features (advertised, declared in the profile, or found by probing the routes), provision
//! identities — and every setup failure says what to configure (exit code 3).

use crate::finding::Finding;
use crate::profile::{PoolIdentity, Profile, table_json};
use loom_client::{Client, Identity, Trust};
use loom_protocol::clock::Clock;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// What the harness knows about a target.
#[derive(Debug)]
pub struct TargetInfo {
    /// Base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The node's domain (identities are `loom://x@domain`).
    pub domain: String,
    /// The node document as served.
    pub node_document: Value,
    /// `/v1/protocol/capabilities` when served, with the profile's `[capabilities]` merged
    /// over it.
    pub capabilities: Option<Value>,
    /// Features the target offers: the profile's `features` when given, else the advertised
    /// ones and those whose routes answered a probe.
    pub features: BTreeSet<String>,
    /// For each feature found absent, how the harness found out (shown by `unsupported`).
    pub feature_notes: BTreeMap<String, String>,
    /// The `agent_info` agents are registered with (v1.1 §6.4).
    pub agent_info: Value,
    /// Members added to every registration document (the profile's registration extras).
    pub registration_extra: Map<String, Value>,
    /// TLS trust for https targets.
    pub trust: Option<Trust>,
    /// `pool` provisioning: identities not yet handed out.
    pub pool: Option<Vec<PoolIdentity>>,
    /// Whether this is the embedded reference node.
    pub embedded: bool,
    /// Level 2: the fake federation peers and how the target federates with them (`None`:
    /// the federation cases are `unsupported`).
    pub federation: Option<Arc<crate::peer::Federation>>,
    /// Level 3: the harness's mail world and the target's bridge (`None`: the bridge cases
    /// are `unsupported`).
    pub mail: Option<Arc<crate::mail::MailWorld>>,
    /// Readings of open spec choices detected on the target during the run.
    pub readings: Arc<crate::readings::Readings>,
}

/// Why a target could not be used (exit code 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

impl TargetInfo {
    /// Whether the target is https.
    pub fn is_tls(&self) -> bool {
        self.url.starts_with("https://")
    }

    /// A fresh connection for one case.
    pub fn client(&self, timeout: Duration) -> Result<Client, Finding> {
        let mut c = Client::tcp(&self.url)
            .map_err(|e| Finding::Error(format!("client for {}: {e}", self.url)))?;
        if let Some(t) = &self.trust {
            c = c
                .with_trust(t)
                .map_err(|e| Finding::Error(format!("TLS trust: {e}")))?;
        }
        Ok(c.with_timeout(timeout))
    }

    /// A value of `/v1/protocol/capabilities` by JSON pointer (`/limits/max_envelope_bytes`).
    pub fn capability(&self, pointer: &str) -> Option<&Value> {
        self.capabilities.as_ref().and_then(|c| c.pointer(pointer))
    }

    /// The `k`-th (0-based) pooled identity of `kind`, if the profile provides that many.
    /// Pooled identities are shared by all cases; within a case each `k` is a different
    /// identity, so a case asking for alice and bob gets two of them.
    pub fn pooled(&self, kind: &str, k: usize) -> Option<Result<Identity, String>> {
        let p = self
            .pool
            .as_ref()?
            .iter()
            .filter(|p| p.kind == kind)
            .nth(k)?;
        let seed: Option<[u8; 32]> = hex::decode(&p.seed_hex)
            .ok()
            .and_then(|b| b.try_into().ok());
        Some(
            seed.ok_or_else(|| format!("{}: seed_hex is not 64 hex digits", p.address))
                .and_then(|s| Identity::from_seed(&p.address, &s).map_err(|e| e.to_string()))
                .and_then(|id| id.with_key_id(&p.key_id).map_err(|e| e.to_string()))
                .map(|id| id.with_type(&p.kind)),
        )
    }

    /// Why `feature` counts as absent.
    pub fn missing_feature(&self, feature: &str) -> String {
        match self.feature_notes.get(feature) {
            Some(n) => format!("the target does not offer the {feature:?} feature ({n})"),
            None => format!(
                "the target does not offer the {feature:?} feature (not advertised in /v1/protocol/capabilities; declare it in the profile's [target] features if it does)"
            ),
        }
    }

    /// How many pooled identities of `kind` the profile lists.
    pub fn pooled_count(&self, kind: &str) -> usize {
        self.pool
            .as_ref()
            .map_or(0, |p| p.iter().filter(|p| p.kind == kind).count())
    }
}

/// Waits for the embedded node's document, trusting its certificate.
pub async fn probe_embedded(e: &Embedded) -> Result<TargetInfo, SetupError> {
    probe_embedded_with(e, &Profile::default()).await
}

/// [`probe_embedded`] with a profile (the self-test's legal variants bring their own).
pub async fn probe_embedded_with(
    e: &Embedded,
    profile: &Profile,
) -> Result<TargetInfo, SetupError> {
    probe_with(&e.url, profile, true, e.trust.clone(), &|_| {}).await
}

/// Waits for `url`'s node document, then reads its capabilities.
pub async fn probe(url: &str, profile: &Profile, embedded: bool) -> Result<TargetInfo, SetupError> {
    probe_with(url, profile, embedded, None, &|_| {}).await
}

/// [`probe`], saying what it waits for: `waiting` gets a line when the first attempt fails
/// (what, how long at most, why) and one every five seconds after (issue 18, item 3).
pub async fn probe_reporting(
    url: &str,
    profile: &Profile,
    embedded: bool,
    waiting: &(dyn Fn(&str) + Sync),
) -> Result<TargetInfo, SetupError> {
    probe_with(url, profile, embedded, None, waiting).await
}

async fn probe_with(
    url: &str,
    profile: &Profile,
    embedded: bool,
    trust_override: Option<Trust>,
    waiting: &(dyn Fn(&str) + Sync),
) -> Result<TargetInfo, SetupError> {
    let trust = if trust_override.is_some() {
        trust_override
    } else if profile.tls.insecure {
        Some(Trust::InsecureAnyCertificate)
    } else if let Some(ca) = &profile.tls.ca_cert {
        Some(
            Trust::pem_file(std::path::Path::new(ca))
                .map_err(|e| SetupError(format!("profile tls.ca_cert: {e}")))?,
        )
    } else {
        None
    };
    let begun = tokio::time::Instant::now();
    let deadline = begun + Duration::from_secs_f64(profile.target.readiness_timeout_secs);
    let mut last_error;
    let mut next_note = begun;
    loop {
        let attempt = async {
            let mut c = Client::tcp(url).map_err(|e| e.to_string())?;
            if let Some(t) = &trust {
                c = c.with_trust(t).map_err(|e| e.to_string())?;
            }
            let mut c = c.with_timeout(Duration::from_secs(5));
            let t = c
                .exchange("GET", "/.well-known/loom.json", &[], None, None)
                .await
                .map_err(|e| e.to_string())?;
            if t.status != 200 {
                return Err(format!("GET /.well-known/loom.json answered {}", t.status));
            }
            let doc = t.json().ok_or("the node document is not JSON")?;
            let caps = c
                .exchange("GET", "/v1/protocol/capabilities", &[], None, None)
                .await
                .ok()
                .filter(|t| t.status == 200)
                .and_then(|t| t.json());
            let probed = if profile.target.features.is_some() {
                BTreeMap::new()
            } else {
                probe_routes(&mut c).await
            };
            Ok::<_, String>((doc, caps, probed))
        };
        match attempt.await {
            Ok((doc, caps, probed)) => {
                let domain = doc["domain"].as_str().map(str::to_owned).ok_or_else(|| {
                    SetupError(format!("the node document at {url}/.well-known/loom.json has no \"domain\" (v1.1 §15.2)"))
                })?;
                let caps = merge_capabilities(caps, profile);
                let (features, feature_notes) = features(caps.as_ref(), &probed, profile);
                let pool = (profile.provisioning.mode == "pool")
                    .then(|| profile.provisioning.identity.clone());
                let reg = &profile.provisioning.registration;
                return Ok(TargetInfo {
                    url: url.trim_end_matches('/').to_owned(),
                    domain,
                    node_document: doc,
                    capabilities: caps,
                    features,
                    feature_notes,
                    agent_info: reg
                        .agent_info
                        .as_ref()
                        .map_or_else(default_agent_info, table_json),
                    registration_extra: reg
                        .extra
                        .as_ref()
                        .and_then(|t| table_json(t).as_object().cloned())
                        .unwrap_or_default(),
                    trust,
                    pool,
                    embedded,
                    federation: None,
                    mail: None,
                    readings: Arc::default(),
                });
            }
            Err(e) => last_error = e,
        }
        let now = tokio::time::Instant::now();
        if now < deadline && now >= next_note {
            let left = deadline.saturating_duration_since(now).as_secs_f64();
            if next_note == begun {
                waiting(&format!(
                    "waiting up to {:.0} s for {url}/.well-known/loom.json to answer 200 (v1.1 §15.2; the profile's [target] readiness_timeout_secs): {last_error}",
                    profile.target.readiness_timeout_secs
                ));
            } else {
                waiting(&format!(
                    "still waiting for {url}/.well-known/loom.json ({left:.0} s left): {last_error}"
                ));
            }
            next_note = now + Duration::from_secs(5);
        }
        if now >= deadline {
            return Err(SetupError(format!(
                "target {url} is not ready after {} s: {last_error}. Check the URL, that the node serves /.well-known/loom.json (v1.1 §15.2), and the profile's [target] readiness_timeout_secs / [tls] settings",
                profile.target.readiness_timeout_secs
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `agent_info` of agents the harness registers unless the profile gives one: all three
/// members v1.1 §6.4 shows, since a node may require more than `provider` (DESIGN.md §9).
pub fn default_agent_info() -> Value {
    json!({
        "provider": "loom-conformance",
        "model": "conformance-harness",
        "version": env!("CARGO_PKG_VERSION"),
    })
}

/// The features whose presence is a route the harness can probe without credentials: the
/// route exists when the node answers anything but 404, 405 or 501 (typically 401).
pub const ROUTE_FEATURES: &[(&str, &str, &str)] = &[
    ("search", "GET", "/v1/search?q=conformance"),
    ("blobs", "POST", "/v1/blobs"),
    ("events", "GET", "/v1/events"),
    ("delegations", "GET", "/v1/delegations"),
    (
        "capability-tokens",
        "GET",
        "/v1/capabilities?thread_id=thr_00000000000000000000000000",
    ),
    ("identity-me", "GET", "/v1/identity/me"),
    (
        "retraction",
        "DELETE",
        "/v1/envelopes/env_00000000000000000000000000",
    ),
];

/// Probes each of [`ROUTE_FEATURES`] without credentials: feature → the status it answered.
async fn probe_routes(c: &mut Client) -> BTreeMap<String, (bool, String)> {
    let mut out = BTreeMap::new();
    for (feature, method, path) in ROUTE_FEATURES {
        let body = (*method == "POST").then(|| b"{}".to_vec());
        let (present, note) = match c.exchange(method, path, &[], body, None).await {
            Ok(t) => (
                !matches!(t.status, 404 | 405 | 501),
                format!("{method} {path} without a token answered {}", t.status),
            ),
            Err(e) => (false, format!("{method} {path} failed: {e}")),
        };
        out.insert((*feature).to_owned(), (present, note));
    }
    out
}

/// The served capabilities with the profile's `[capabilities]` merged over them.
fn merge_capabilities(served: Option<Value>, profile: &Profile) -> Option<Value> {
    let Some(over) = profile.capabilities.as_ref().map(table_json) else {
        return served;
    };
    let mut base = served.unwrap_or_else(|| json!({}));
    merge(&mut base, &over);
    Some(base)
}

fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The features to assume and, for absent ones, why: the profile's list when given (the
/// harness's own convention); otherwise those advertised in the capabilities document plus
/// those whose routes answered a probe (a node that publishes no capabilities list is still
/// understood). `rate-limits` also counts when the capabilities name a per-identity envelope
/// limit.
fn features(
    caps: Option<&Value>,
    probed: &BTreeMap<String, (bool, String)>,
    profile: &Profile,
) -> (BTreeSet<String>, BTreeMap<String, String>) {
    if let Some(f) = &profile.target.features {
        let notes = ROUTE_FEATURES
            .iter()
            .map(|(n, _, _)| {
                (
                    (*n).to_owned(),
                    "not in the profile's [target] features".to_owned(),
                )
            })
            .collect();
        return (f.iter().cloned().collect(), notes);
    }
    let mut set: BTreeSet<String> = caps
        .and_then(|c| c["features"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut notes = BTreeMap::new();
    for (f, (present, note)) in probed {
        if *present {
            set.insert(f.clone());
        } else {
            set.remove(f);
            notes.insert(f.clone(), note.clone());
        }
    }
    if caps
        .and_then(|c| c.pointer("/rate_limits/envelopes_per_identity_per_min"))
        .and_then(Value::as_u64)
        .is_some_and(|l| l > 0)
    {
        set.insert("rate-limits".into());
    }
    (set, notes)
}

/// The embedded reference node, serving on an ephemeral loopback port until dropped.
#[derive(Debug)]
pub struct Embedded {
    /// `https://127.0.0.1:PORT` (or `http://` with plain transport).
    pub url: String,
    /// The trust anchor for the node's self-signed certificate (https only).
    pub trust: Option<Trust>,
    /// Its email bridge's SMTP address, when its configuration has `[bridge]`.
    pub smtp: Option<std::net::SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// The domain of the embedded node.
pub const EMBEDDED_DOMAIN: &str = "conformance.test";

/// The embedded node's configuration: in-memory store, §14.3 limits except registration and
/// login (each case registers its own identities, so a per-IP auth limit would throttle the
/// harness, not test the node), and §10.7 thread limits small enough for a case to reach in a
/// second (the node advertises them in `/v1/protocol/capabilities`).
pub fn embedded_config() -> loom_node::NodeConfig {
    let mut config = loom_node::NodeConfig {
        domain: EMBEDDED_DOMAIN.into(),
        ..loom_node::NodeConfig::default()
    };
    config.rate_limits.auth_per_ip = 0;
    config.limits.max_envelopes_per_thread = 60;
    config.limits.max_pending_parents = 20;
    // Typing indicators end on their own after 2 s, so the MAY case that waits for it
    // (full.typing.expires) stays short.
    config.realtime.typing_ttl_ms = 2_000;
    config
}

/// How the embedded node is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// TLS 1.3 with ALPN h2 and a self-signed certificate the harness trusts (the default:
    /// the transport cases of §14.1 then run against the reference node too).
    Tls,
    /// Plain HTTP/1.1 (transport cases are skipped).
    Plain,
}

/// The rules of the reference node: the specification ([`loom_node::rules::Spec`]), or a
/// self-test's quirks ([`loom_node::Node`]'s seam).
pub type NodeRules = Arc<dyn loom_node::rules::NodeRules>;

/// The reference node as specified.
pub fn spec_rules() -> NodeRules {
    Arc::new(loom_node::rules::Spec)
}

/// The reference node with `quirks` (the self-test).
#[cfg(feature = "selftest")]
pub fn quirk_rules(quirks: loom_node::Quirks) -> NodeRules {
    Arc::new(loom_node::quirks::QuirkNode::new(quirks))
}

/// Starts the reference node (with `rules`: [`spec_rules`], or a self-test's quirks) on
/// 127.0.0.1:0.
pub async fn start_embedded(
    rules: NodeRules,
    clock: Arc<dyn Clock>,
    seed: u64,
    config: loom_node::NodeConfig,
    transport: Transport,
) -> Result<Embedded, SetupError> {
    let prepared = prepare(rules, clock, seed, config, transport).await?;
    Ok(prepared.spawn(|node, listener, tls, stopped| async move {
        let _ = node.serve(listener, tls, stopped).await;
    }))
}

/// Starts the reference node with its router wrapped by `wrap` (the self-test's legal-variant
/// shim, `crate::variants`, sits there: in front of the unchanged node, at the HTTP level).
#[cfg(feature = "selftest")]
pub async fn start_embedded_wrapped(
    clock: Arc<dyn Clock>,
    seed: u64,
    config: loom_node::NodeConfig,
    transport: Transport,
    wrap: impl FnOnce(axum::Router) -> axum::Router + Send + 'static,
) -> Result<Embedded, SetupError> {
    let prepared = prepare(spec_rules(), clock, seed, config, transport).await?;
    Ok(prepared.spawn(|node, listener, tls, stopped| async move {
        // The node's workers (outbox, mail, typing expiry) run beside the wrapped router.
        let router = wrap(node.router());
        let _ = node.serve_router(listener, router, tls, stopped).await;
    }))
}

/// A built node, its bound listener and its TLS material, not serving yet.
struct Prepared {
    node: loom_node::Node,
    listener: tokio::net::TcpListener,
    /// The bridge's SMTP listener (Level 3), when configured.
    smtp: Option<tokio::net::TcpListener>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    trust: Option<Trust>,
}

impl Prepared {
    /// Serves with `serve` on a task until the returned [`Embedded`] is dropped.
    fn spawn<F, Fut>(self, serve: F) -> Embedded
    where
        F: FnOnce(
                loom_node::Node,
                tokio::net::TcpListener,
                Option<tokio_rustls::TlsAcceptor>,
                std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
            ) -> Fut
            + Send
            + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let addr = self
            .listener
            .local_addr()
            .map_or_else(|_| "127.0.0.1:0".to_owned(), |a| a.to_string());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (stop_smtp, smtp_stopped) = tokio::sync::oneshot::channel::<()>();
        let stopped = Box::pin(async move {
            let _ = stopped.await;
            let _ = stop_smtp.send(());
        });
        let smtp = self.smtp.as_ref().and_then(|l| l.local_addr().ok());
        if let Some(listener) = self.smtp {
            let (node, tls) = (self.node.clone(), self.tls.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = node.serve_smtp(listener, tls) => {}
                    _ = smtp_stopped => {}
                }
            });
        }
        tokio::spawn(serve(self.node, self.listener, self.tls, stopped));
        Embedded {
            url: format!("{scheme}://{addr}"),
            trust: self.trust,
            smtp,
            stop: Some(stop),
        }
    }
}

/// Builds the node (in-memory store, `rules`), its TLS material and a loopback listener.
async fn prepare(
    rules: NodeRules,
    clock: Arc<dyn Clock>,
    seed: u64,
    mut config: loom_node::NodeConfig,
    transport: Transport,
) -> Result<Prepared, SetupError> {
    let tls = match transport {
        Transport::Tls => {
            // The node document then advertises https/wss URLs (v1.1 §14.1, §15.2).
            config.tls = Some(loom_node::config::TlsSettings::SelfSigned);
            Some(
                loom_node::tls::server_tls_with(
                    &loom_node::config::TlsSettings::SelfSigned,
                    &config.domain,
                    &*rules,
                )
                .map_err(|e| {
                    SetupError(format!("cannot make the embedded node's certificate: {e}"))
                })?,
            )
        }
        Transport::Plain => None,
    };
    let trust = match &tls {
        Some(t) => Some(
            Trust::certificates(&t.cert_chain)
                .map_err(|e| SetupError(format!("cannot trust the embedded certificate: {e}")))?,
        ),
        None => None,
    };
    // The bridge's SMTP port is bound first, so the node advertises the real address.
    let smtp = match &mut config.bridge {
        Some(b) => {
            let l = tokio::net::TcpListener::bind(b.listen)
                .await
                .map_err(|e| SetupError(format!("cannot bind the bridge's SMTP port: {e}")))?;
            if let Ok(a) = l.local_addr() {
                b.listen = a;
            }
            Some(l)
        }
        None => None,
    };
    let env = loom_node::Env::new(clock, seed);
    let node = loom_node::Node::builder(config, env)
        .rules(rules)
        .build()
        .map_err(|e| SetupError(format!("cannot start the embedded node: {e}")))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| SetupError(format!("cannot bind a loopback port: {e}")))?;
    Ok(Prepared {
        node,
        listener,
        smtp,
        tls: tls.map(|t| t.acceptor),
        trust,
    })
}
