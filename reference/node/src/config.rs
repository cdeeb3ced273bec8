//! Node configuration: command-line flags or a TOML file (`loom-node --config FILE`). Every
//! limit the spec leaves to policy (§10.7 thread sizes, §14.3 rate limits, §20.7 retract
//! window) is here with the spec's suggested default.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Storage {
    /// In-memory SQLite (tests, `--memory`); gone when the node stops.
    Memory,
    /// A directory holding `loom.db` (WAL mode).
    Dir(PathBuf),
}

/// TLS settings (v1.1 §14.1: TLS 1.3 only, HTTP/2 by ALPN).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TlsSettings {
    /// PEM certificate chain and private key files.
    Files {
        /// Certificate chain (PEM).
        cert: PathBuf,
        /// Private key (PEM, PKCS#8).
        key: PathBuf,
    },
    /// A self-signed certificate for the node's domain, made at start-up (rcgen).
    SelfSigned,
}

/// Rate limits per minute (v1.1 §14.3 suggested defaults); 0 turns a limit off.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimits {
    /// `POST /v1/envelopes` per identity.
    pub envelopes_per_identity: u32,
    /// `POST /v1/auth/*` and identity registration per client IP.
    pub auth_per_ip: u32,
    /// `GET /v1/threads*` per identity.
    pub thread_reads_per_identity: u32,
    /// Federation deliveries per sending node.
    pub federation_per_node: u32,
    /// WebSocket inbound messages per connection (§14.3 suggests 60/min).
    pub ws_messages_per_connection: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            envelopes_per_identity: 100,
            auth_per_ip: 10,
            thread_reads_per_identity: 300,
            federation_per_node: 1000,
            ws_messages_per_connection: 60,
        }
    }
}

impl RateLimits {
    /// Every limit off (load tests, benchmarks).
    pub fn unlimited() -> Self {
        RateLimits {
            envelopes_per_identity: 0,
            auth_per_ip: 0,
            thread_reads_per_identity: 0,
            federation_per_node: 0,
            ws_messages_per_connection: 0,
        }
    }
}

/// Size limits (`[limits]`): the per-envelope bounds of `loom_protocol::bounds` (issue 19;
/// each → `PAYLOAD_TOO_LARGE` naming the limit, v1.1 §24.2; 0 = off), written beside the
/// node's own limits in the same table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "LimitsTable")]
pub struct Limits {
    /// The per-envelope limits the acceptance core checks first.
    pub envelope: loom_protocol::bounds::EnvelopeLimits,
    /// Largest request body accepted, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// All request bodies being read at once, together, in bytes (0 = no cap): a request
    /// whose next chunk would exceed it is answered 503 with `Retry-After` (issue 36, item 1;
    /// `http::body_budget`). The default holds ten full federation wrappers.
    pub max_inflight_body_bytes: usize,
    /// §10.7 envelopes per thread (0 = off).
    pub max_envelopes_per_thread: u64,
    /// §10.7 pending parent references per thread (0 = off).
    pub max_pending_parents: u64,
    /// Largest blob, in bytes.
    pub max_blob_bytes: u64,
    /// Page size cap for list endpoints.
    pub max_page_size: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            envelope: loom_protocol::bounds::EnvelopeLimits::default(),
            max_body_bytes: 1024 * 1024,
            max_inflight_body_bytes: 256 * 1024 * 1024,
            max_envelopes_per_thread: 10_000,
            max_pending_parents: 500,
            max_blob_bytes: 25 * 1024 * 1024,
            max_page_size: 200,
        }
    }
}

impl Limits {
    /// The per-envelope limits the acceptance core checks first (`loom_protocol::bounds`).
    pub fn envelope(&self) -> loom_protocol::bounds::EnvelopeLimits {
        self.envelope
    }
}

/// `[limits]` as written: one flat table. serde's `flatten` cannot refuse unknown members, so
/// the members no field takes are collected and refused by name.
#[derive(Deserialize)]
struct LimitsTable {
    #[serde(flatten)]
    envelope: loom_protocol::bounds::EnvelopeLimits,
    max_body_bytes: Option<usize>,
    max_inflight_body_bytes: Option<usize>,
    max_envelopes_per_thread: Option<u64>,
    max_pending_parents: Option<u64>,
    max_blob_bytes: Option<u64>,
    max_page_size: Option<usize>,
    #[serde(flatten)]
    unknown: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
}

impl TryFrom<LimitsTable> for Limits {
    type Error = String;

    fn try_from(t: LimitsTable) -> Result<Limits, String> {
        if let Some(name) = t.unknown.keys().next() {
            return Err(format!(
                "unknown field `{name}` in [limits] (node README, \"Configuration\")"
            ));
        }
        let d = Limits::default();
        Ok(Limits {
            envelope: t.envelope,
            max_body_bytes: t.max_body_bytes.unwrap_or(d.max_body_bytes),
            max_inflight_body_bytes: t
                .max_inflight_body_bytes
                .unwrap_or(d.max_inflight_body_bytes),
            max_envelopes_per_thread: t
                .max_envelopes_per_thread
                .unwrap_or(d.max_envelopes_per_thread),
            max_pending_parents: t.max_pending_parents.unwrap_or(d.max_pending_parents),
            max_blob_bytes: t.max_blob_bytes.unwrap_or(d.max_blob_bytes),
            max_page_size: t.max_page_size.unwrap_or(d.max_page_size),
        })
    }
}

/// Federation (v1.1 §15; `[federation]` in the TOML file).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FederationConfig {
    /// Static peers: node domain → base URL (`b.test = "http://127.0.0.1:8788"` or
    /// `"https://b.example:8443"`). Deliveries to a domain and fetches of its node document
    /// and identities go to this base URL. A domain not listed here is discovered
    /// (v1.1 §15.1): its node document is fetched from `https://{domain}/.well-known/loom.json`
    /// and the URLs it names are used as they are.
    pub peers: BTreeMap<String, String>,
    /// Connection overrides, like curl's `--resolve`: host name → `IP:PORT`
    /// (`b.test = "127.0.0.1:8788"`). The TLS server name and certificate check stay on the
    /// host name; only where the connection goes changes.
    pub resolve: BTreeMap<String, String>,
    /// Optional DNS discovery (v1.1 §15.1): the recursive DNS server (`IP:PORT`, or `IP` for
    /// port 53) asked for SRV `_loom._tcp.{domain}` and TXT `_loom.{domain}` of a peer that
    /// is not in [`FederationConfig::peers`]. Off (`None`) by default: peers are then found
    /// at `https://{domain}/.well-known/loom.json`. See `crate::discover`.
    pub dns_server: Option<String>,
    /// How long one DNS attempt waits for an answer, in milliseconds.
    pub dns_timeout_ms: u64,
    /// DNS attempts over UDP before a lookup fails (at least 1).
    pub dns_attempts: u32,
    /// PEM files of extra trust anchors for peers' TLS certificates (`--peer-ca`).
    pub peer_ca: Vec<PathBuf>,
    /// Trust the operating system's root certificates for peers' TLS (default on).
    pub native_roots: bool,
    /// Allow plain `http://` peer URLs whose host is a loopback or private address literal
    /// (or `localhost`); never any other host (v1.1 §14.1 requires TLS between nodes).
    pub allow_private_http: bool,
    /// Peers accepted when the policy mode is `allowlist` (`*.example.org` names subdomains).
    pub allowlist: Vec<String>,
    /// Peers always refused (v1.1 §23.1).
    pub blocklist: Vec<String>,
    /// Store-and-forward time-to-live in seconds (§15.6, default 72 h).
    pub ttl_secs: u64,
    /// Delay after the first failed attempt, in milliseconds (doubles per failure).
    pub retry_base_ms: u64,
    /// Longest delay between attempts, in milliseconds.
    pub retry_max_ms: u64,
    /// Outbox items per destination node (v1.0 §14.4).
    pub queue_per_node: usize,
    /// Outbox items in all (v1.0 §14.4).
    pub queue_total: usize,
    /// Largest `POST /v1/federation/deliver` body in bytes (100 envelopes × 256 KiB fit).
    pub max_wrapper_bytes: usize,
    /// How long one outbound request may take, in milliseconds.
    pub request_timeout_ms: u64,
    /// Longest sleep of the outbox worker between passes, in milliseconds: it wakes when the
    /// writer queues a row or the earliest queued row falls due, and at least this often
    /// (a clock that jumps — skew, a test clock — is noticed within this bound).
    pub worker_idle_ms: u64,
    /// Least time between two purges of expired LOOM-HTTP-SIG-1 nonces (§15.3), in
    /// milliseconds; 0 = on every outbox pass. The cache is keyed by time, so a later purge
    /// only keeps dead rows longer (a nonce older than the window is refused by its
    /// timestamp anyway).
    pub nonce_purge_ms: u64,
    /// Least time between two re-fetches of one peer's node document, or of one remote
    /// identity document, triggered by an unknown `key_id` (v1.0 §7.4), in milliseconds
    /// (default 60 s: made-up key ids cannot make the node hammer a peer).
    pub refetch_min_interval_ms: u64,
}

impl Default for FederationConfig {
    fn default() -> Self {
        FederationConfig {
            peers: BTreeMap::new(),
            resolve: BTreeMap::new(),
            dns_server: None,
            dns_timeout_ms: 2_000,
            dns_attempts: 2,
            peer_ca: Vec::new(),
            native_roots: true,
            allow_private_http: false,
            allowlist: Vec::new(),
            blocklist: Vec::new(),
            ttl_secs: 72 * 3600,
            retry_base_ms: 30_000,
            retry_max_ms: 3_600_000,
            queue_per_node: 10_000,
            queue_total: 100_000,
            max_wrapper_bytes: loom_protocol::federation::wrapper::DEFAULT_MAX_WRAPPER_BYTES,
            request_timeout_ms: 10_000,
            worker_idle_ms: 1_000,
            nonce_purge_ms: 0,
            refetch_min_interval_ms:
                loom_protocol::federation::node_document::REFETCH_MIN_INTERVAL_MS as u64,
        }
    }
}

impl FederationConfig {
    /// The §15.6 retry timing.
    pub fn retry_policy(&self) -> loom_protocol::federation::RetryPolicy {
        let ms = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        loom_protocol::federation::RetryPolicy {
            base_delay_ms: ms(self.retry_base_ms),
            max_delay_ms: ms(self.retry_max_ms),
            ttl_ms: ms(self.ttl_secs).saturating_mul(1000),
        }
    }

    /// The v1.0 §14.4 queue bounds.
    pub fn queue_limits(&self) -> loom_protocol::federation::limits::QueueLimits {
        loom_protocol::federation::limits::QueueLimits {
            per_node: self.queue_per_node,
            total: self.queue_total,
        }
    }

    /// The configured DNS server ([`FederationConfig::dns_server`]), if DNS discovery is on.
    pub fn dns_server_addr(&self) -> Result<Option<std::net::SocketAddr>, String> {
        let Some(s) = self.dns_server.as_deref().map(str::trim) else {
            return Ok(None);
        };
        if let Ok(a) = s.parse::<std::net::SocketAddr>() {
            return Ok(Some(a));
        }
        s.parse::<std::net::IpAddr>()
            .map(|ip| Some(std::net::SocketAddr::new(ip, 53)))
            .map_err(|_| format!("federation.dns_server {s:?}: expected IP:PORT or IP (port 53)"))
    }

    /// Checks every peer URL: `https://`, or `http://` to a loopback/private host when
    /// [`FederationConfig::allow_private_http`] is set.
    pub fn check(&self) -> Result<(), String> {
        for (domain, url) in &self.peers {
            loom_protocol::federation::node_name::parse_node_name(domain)
                .map_err(|why| format!("federation peer {domain:?}: {why}"))?;
            check_peer_url(url, self.allow_private_http)
                .map_err(|why| format!("federation peer {domain}={url}: {why}"))?;
        }
        crate::outbound::StaticResolve::parse(&self.resolve)?;
        self.dns_server_addr()?;
        // The trust anchors are read now so a bad file stops start-up naming it.
        crate::tls::client_config(false, &self.peer_ca)
            .map_err(|e| format!("federation.peer_ca: {e}"))?;
        Ok(())
    }
}

/// A peer base URL is usable: `https://` to any host, `http://` only to a loopback or
/// private address literal (or `localhost`) and only when allowed (v1.1 §14.1).
pub fn check_peer_url(url: &str, allow_private_http: bool) -> Result<(), String> {
    if let Some(rest) = url.strip_prefix("https://") {
        return crate::outbound::HttpUrl::parse(url)
            .map(|_| ())
            .and_then(|()| {
                if rest.split(['/', '?', '#']).next().unwrap_or("").is_empty() {
                    Err("the peer URL has no host".into())
                } else {
                    Ok(())
                }
            });
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return Err(
            "the peer URL must start with https:// (or http:// to a private address)".into(),
        );
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.parse::<u16>().is_ok() => h,
        _ => authority,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if !crate::outbound::is_private_host(host) {
        return Err(format!(
            "plain http is allowed only to loopback or private addresses, not {host:?}"
        ));
    }
    if !allow_private_http {
        return Err(
            "plain http to a private address needs allow_private_http (--allow-private-http)"
                .into(),
        );
    }
    Ok(())
}

/// The email bridge (v1.1 §21; `[bridge]` in the TOML file). With it the node also serves
/// SMTP: mail to its identities becomes envelopes from `bridge://` senders, and envelopes
/// to `bridge://` recipients go out as mail.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    /// The SMTP listener (`127.0.0.1:2525`; port 25 in production).
    pub listen: SocketAddr,
    /// The mail domain: `alice@{domain}` reaches `loom://alice@{node domain}`, and outbound
    /// mail is `From:` and DKIM-signed for it. Default: the node's domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// The name in the SMTP greeting and EHLO. Default: the mail domain.
    #[serde(default)]
    pub hostname: Option<String>,
    /// Where outbound mail goes (`host:port`, a relay or a test sink). Without it, each
    /// recipient domain's MX is looked up (through `dns_server`/`dns_records`) on port 25.
    #[serde(default)]
    pub smarthost: Option<String>,
    /// DKIM selector of outbound mail.
    #[serde(default = "default_dkim_selector")]
    pub dkim_selector: String,
    /// An RSA private key (PKCS#1 or PKCS#8 PEM) for DKIM rsa-sha256. Without it the bridge
    /// signs ed25519-sha256 (RFC 8463) with a key derived from the node key; `loom-node`
    /// logs the TXT record to publish at start.
    #[serde(default)]
    pub dkim_key: Option<std::path::PathBuf>,
    /// A DNS server for SPF, DKIM and DMARC lookups (and MX without a smarthost). Without
    /// it, only `dns_records` answer and every other name has no records.
    #[serde(default)]
    pub dns_server: Option<SocketAddr>,
    /// Records answered before any lookup (`{name, type, value}`; TXT, A, AAAA, MX, PTR).
    #[serde(default)]
    pub dns_records: Vec<loom_bridge::auth::Record>,
    /// What happens to mail that fails authentication (v1.1 §21.5).
    #[serde(default)]
    pub policy: loom_bridge::auth::AuthPolicy,
    /// Refuse `MAIL FROM` before STARTTLS (needs `[tls]`).
    #[serde(default)]
    pub require_tls: bool,
    /// Largest message accepted (the EHLO `SIZE`).
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    /// Most recipients per message.
    #[serde(default = "default_max_recipients")]
    pub max_recipients: usize,
    /// Operator opt-in to automatic actuation from authenticated bridged mail
    /// (LOOM-CORE "Bridge Safety Baseline"); off by default.
    #[serde(default)]
    pub auto_actuation: bool,
    /// Delivery attempts before an outbound mail fails with `BRIDGE_DELIVERY_FAILED`.
    #[serde(default = "default_mail_attempts")]
    pub max_attempts: u32,
    /// The first retry's delay in seconds; each next one doubles (at most 1 hour).
    #[serde(default = "default_mail_backoff")]
    pub retry_base_secs: u64,
}

fn default_dkim_selector() -> String {
    "loom".into()
}
fn default_max_message_bytes() -> usize {
    25 * 1024 * 1024
}
fn default_max_recipients() -> usize {
    100
}
fn default_mail_attempts() -> u32 {
    8
}
fn default_mail_backoff() -> u64 {
    60
}

impl BridgeConfig {
    /// A bridge on `listen` with every default.
    pub fn new(listen: SocketAddr) -> Self {
        Self {
            listen,
            domain: None,
            hostname: None,
            smarthost: None,
            dkim_selector: default_dkim_selector(),
            dkim_key: None,
            dns_server: None,
            dns_records: Vec::new(),
            policy: loom_bridge::auth::AuthPolicy::default(),
            require_tls: false,
            max_message_bytes: default_max_message_bytes(),
            max_recipients: default_max_recipients(),
            auto_actuation: false,
            max_attempts: default_mail_attempts(),
            retry_base_secs: default_mail_backoff(),
        }
    }

    /// Checks what serde cannot: names, the smarthost, the records, the key file.
    pub fn check(&self, node_domain: &str) -> Result<(), String> {
        let domain = self.domain.as_deref().unwrap_or(node_domain);
        loom_protocol::Address::parse_wire(&format!("bridge://probe@{domain}"))
            .map_err(|e| format!("bridge.domain {domain:?} is not a mail domain: {e}"))?;
        if let Some(h) = &self.smarthost {
            let ok = h
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !ok {
                return Err(format!("bridge.smarthost {h:?} is not host:port"));
            }
        }
        let probe = loom_bridge::auth::Records::new(true);
        for r in &self.dns_records {
            probe
                .add(r)
                .map_err(|e| format!("bridge.dns_records: {e}"))?;
        }
        if let Some(p) = &self.dkim_key {
            let pem = std::fs::read_to_string(p)
                .map_err(|e| format!("bridge.dkim_key {}: {e}", p.display()))?;
            loom_bridge::outbound::Dkim::rsa_pem(domain, &self.dkim_selector, &pem)
                .map_err(|e| format!("bridge.dkim_key {}: {e}", p.display()))?;
        }
        if self.max_attempts == 0 {
            return Err("bridge.max_attempts must be at least 1".into());
        }
        Ok(())
    }
}

/// The whole node configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodeConfig {
    /// The node's domain: identities `loom://x@domain` are local.
    pub domain: String,
    /// Listen address.
    pub listen: SocketAddr,
    /// Public base URL (`https://domain`); derived from `domain` and TLS when absent.
    pub public_url: Option<String>,
    /// Store location.
    pub storage: Storage,
    /// TLS; plain HTTP/1.1 + h2c when absent (development only).
    pub tls: Option<TlsSettings>,
    /// Rate limits.
    pub rate_limits: RateLimits,
    /// Size limits.
    pub limits: Limits,
    /// Connection hygiene: idle and body-rate timeouts, connection cap (`net`).
    pub connections: crate::net::ConnectionLimits,
    /// Seconds between signed audit checkpoints (§25.1, `store::audit`); one is also written
    /// on shutdown; 0 = only on shutdown. Durable stores only.
    pub audit_checkpoint_secs: u64,
    /// Accepted envelopes after which a checkpoint is signed even before
    /// `audit_checkpoint_secs` ran out, so the unsigned tail a crash can leave is bounded by
    /// rows as well as by time; 0 = by time only.
    pub audit_checkpoint_rows: u64,
    /// Seconds after sending during which a sender may retract (§20.7); 0 = never.
    pub retract_window_secs: u64,
    /// Federation policy mode advertised in the node document (§15.2).
    pub federation_policy: String,
    /// Seed for the node's RNG (IDs, tokens, node key when none is stored).
    pub seed: Option<u64>,
    /// Federation peers, policy lists, store-and-forward timing and limits.
    pub federation: FederationConfig,
    /// The email bridge (v1.1 §21), when the node runs one.
    pub bridge: Option<BridgeConfig>,
    /// How replay counters of encrypted payloads are judged in E2EE threads (v1.1 §23.1:
    /// `strict`, every counter above the last, or `sliding_window`, each of the 64 counters
    /// ending at the highest once).
    pub e2ee_replay_mode: loom_protocol::e2ee::ReplayMode,
    /// The WebSocket stream, presence and typing (v1.1 §17).
    pub realtime: RealtimeConfig,
}

/// The real-time stream (v1.1 §17): heartbeat, typing, and what one connection may hold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RealtimeConfig {
    /// Seconds without a `ping` after which a connection is closed (§17.4 allows 90).
    pub ping_timeout_secs: u64,
    /// How often connections check the heartbeat, in milliseconds.
    pub heartbeat_check_ms: u64,
    /// How long a `typing.start` lasts without another, in milliseconds (then `typing.stop`
    /// with `reason: "expired"`).
    pub typing_ttl_ms: u64,
    /// WebSocket connections at once, in all (0 = no cap).
    pub max_connections: usize,
    /// WebSocket connections at once per identity.
    pub max_connections_per_identity: usize,
    /// Largest inbound frame in bytes.
    pub max_frame_bytes: usize,
    /// Most channels in one subscription.
    pub max_channels: usize,
    /// Longest a frame may wait to be written before the client counts as a slow consumer and
    /// is disconnected (close code 1008), in milliseconds.
    pub send_timeout_ms: u64,
    /// Bytes the node buffers for one connection's unsent frames before a write waits.
    pub max_write_buffer_bytes: usize,
    /// Recent events the hub keeps in memory for fan-out; a connection further behind reads
    /// the store.
    pub recent_events: usize,
}

impl Default for RealtimeConfig {
    fn default() -> Self {
        RealtimeConfig {
            ping_timeout_secs: loom_protocol::realtime::PING_TIMEOUT_S as u64,
            heartbeat_check_ms: 5_000,
            typing_ttl_ms: 10_000,
            max_connections: 16_384,
            max_connections_per_identity: 16,
            max_frame_bytes: 16 * 1024,
            max_channels: 64,
            send_timeout_ms: 10_000,
            max_write_buffer_bytes: 1 << 20,
            recent_events: 4096,
        }
    }
}

impl RealtimeConfig {
    /// Checks what serde cannot: usable bounds.
    pub fn check(&self) -> Result<(), String> {
        let positive = [
            ("realtime.heartbeat_check_ms", self.heartbeat_check_ms),
            ("realtime.ping_timeout_secs", self.ping_timeout_secs),
            ("realtime.send_timeout_ms", self.send_timeout_ms),
            ("realtime.typing_ttl_ms", self.typing_ttl_ms),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        let sizes = [
            ("realtime.max_frame_bytes", self.max_frame_bytes, 256),
            (
                "realtime.max_write_buffer_bytes",
                self.max_write_buffer_bytes,
                1024,
            ),
            ("realtime.max_channels", self.max_channels, 1),
            (
                "realtime.max_connections_per_identity",
                self.max_connections_per_identity,
                1,
            ),
            ("realtime.recent_events", self.recent_events, 1),
        ];
        if let Some((name, v, min)) = sizes.iter().find(|(_, v, min)| v < min) {
            return Err(format!("{name} is {v}; it must be at least {min}"));
        }
        Ok(())
    }

    /// The per-connection bounds of the protocol parser.
    pub fn limits(&self) -> loom_protocol::realtime::RealtimeLimits {
        loom_protocol::realtime::RealtimeLimits {
            max_frame_bytes: self.max_frame_bytes,
            max_channels: self.max_channels,
            ..Default::default()
        }
    }
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            domain: "localhost".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8787)),
            public_url: None,
            storage: Storage::Memory,
            tls: None,
            rate_limits: RateLimits::default(),
            limits: Limits::default(),
            connections: crate::net::ConnectionLimits::default(),
            audit_checkpoint_secs: 60,
            audit_checkpoint_rows: 1000,
            retract_window_secs: 300,
            federation_policy: "open".into(),
            seed: None,
            federation: FederationConfig::default(),
            bridge: None,
            e2ee_replay_mode: loom_protocol::e2ee::ReplayMode::Strict,
            realtime: RealtimeConfig::default(),
        }
    }
}

impl NodeConfig {
    /// Parses a TOML configuration; unknown keys are errors that name the key.
    pub fn from_toml(text: &str) -> Result<NodeConfig, String> {
        let c: NodeConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check()?;
        Ok(c)
    }

    /// Checks what serde cannot: a usable domain.
    pub fn check(&self) -> Result<(), String> {
        let probe = format!("loom://probe@{}", self.domain);
        loom_protocol::Address::parse_wire(&probe)
            .map_err(|e| format!("domain {:?} is not a valid LOOM domain: {e}", self.domain))?;
        if loom_protocol::federation::PolicyMode::parse(&self.federation_policy).is_none() {
            return Err(format!(
                "federation_policy {:?} is not one of open, allowlist, quarantine",
                self.federation_policy
            ));
        }
        self.federation_policy()?;
        if let Some(b) = &self.bridge {
            b.check(&self.domain)?;
        }
        self.realtime.check()?;
        self.federation.check()
    }

    /// The enforced federation policy (§15.2, §23.1).
    pub fn federation_policy(&self) -> Result<loom_protocol::federation::FederationPolicy, String> {
        let mode = loom_protocol::federation::PolicyMode::parse(&self.federation_policy)
            .ok_or_else(|| format!("unknown federation_policy {:?}", self.federation_policy))?;
        let allow: Vec<&str> = self
            .federation
            .allowlist
            .iter()
            .map(String::as_str)
            .collect();
        let block: Vec<&str> = self
            .federation
            .blocklist
            .iter()
            .map(String::as_str)
            .collect();
        loom_protocol::federation::FederationPolicy::new(mode, &allow, &block)
            .map_err(|e| format!("federation policy: {e}"))
    }

    /// The public base URL clients use.
    pub fn base_url(&self) -> String {
        self.public_url.clone().unwrap_or_else(|| {
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            format!("{scheme}://{}", self.domain)
        })
    }
}

#[cfg(test)]
mod dns_server_tests {
    use super::FederationConfig;

    #[test]
    fn the_dns_server_is_ip_port_or_ip_for_port_53() {
        let mut f = FederationConfig::default();
        assert_eq!(f.dns_server_addr(), Ok(None));
        f.dns_server = Some("127.0.0.1:5353".into());
        assert_eq!(f.dns_server_addr().unwrap().unwrap().port(), 5353);
        f.dns_server = Some(" ::1 ".into());
        assert_eq!(
            f.dns_server_addr().unwrap().unwrap().to_string(),
            "[::1]:53"
        );
        f.dns_server = Some("dns.example".into());
        let e = f.dns_server_addr().unwrap_err();
        assert!(
            e.contains("federation.dns_server") && e.contains("IP:PORT"),
            "{e}"
        );
        assert!(f.check().is_err());
    }
}

#[cfg(test)]
mod limits_tests {
    use super::NodeConfig;

    /// `[limits]` is one flat table: the per-envelope bounds and the node's own limits side
    /// by side, defaults for what is left out, and an unknown member refused by name.
    #[test]
    fn the_limits_table_reads_both_kinds_and_refuses_unknown_members() {
        let c = NodeConfig::from_toml(
            "domain = \"node.test\"\n[limits]\nmax_recipients = 7\nmax_body_bytes = 4096\n",
        )
        .unwrap();
        assert_eq!(c.limits.envelope.max_recipients, 7);
        assert_eq!(c.limits.max_body_bytes, 4096);
        let d = super::Limits::default();
        assert_eq!(c.limits.envelope.max_json_depth, d.envelope.max_json_depth);
        assert_eq!(c.limits.max_page_size, d.max_page_size);
        let e = NodeConfig::from_toml("domain = \"node.test\"\n[limits]\nmax_recipientz = 7\n")
            .unwrap_err();
        assert!(
            e.contains("unknown field `max_recipientz` in [limits]"),
            "{e}"
        );
    }
}
