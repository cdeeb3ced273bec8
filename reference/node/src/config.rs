//! Node configuration: command-line flags or a TOML file (`loom-node --config FILE`). Every
//! limit the spec leaves to policy (§10.7 thread sizes, §14.3 rate limits, §20.7 retract
//! window) is here with the spec's suggested default.

use serde::Deserialize;
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
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            envelopes_per_identity: 100,
            auth_per_ip: 10,
            thread_reads_per_identity: 300,
            federation_per_node: 1000,
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
        }
    }
}

/// Size limits.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Largest request body accepted, in bytes (413 beyond).
    pub max_body_bytes: usize,
    /// Largest envelope (RFC 8785 form) in bytes → `PAYLOAD_TOO_LARGE`.
    pub max_envelope_bytes: usize,
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
            max_body_bytes: 1024 * 1024,
            max_envelope_bytes: 256 * 1024,
            max_envelopes_per_thread: 10_000,
            max_pending_parents: 500,
            max_blob_bytes: 25 * 1024 * 1024,
            max_page_size: 200,
        }
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
    /// Seconds after sending during which a sender may retract (§20.7); 0 = never.
    pub retract_window_secs: u64,
    /// Federation policy mode advertised in the node document (§15.2).
    pub federation_policy: String,
    /// Seed for the node's RNG (IDs, tokens, node key when none is stored).
    pub seed: Option<u64>,
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
            retract_window_secs: 300,
            federation_policy: "open".into(),
            seed: None,
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
            .map(|_| ())
            .map_err(|e| format!("domain {:?} is not a valid LOOM domain: {e}", self.domain))
    }

    /// The public base URL clients use.
    pub fn base_url(&self) -> String {
        self.public_url.clone().unwrap_or_else(|| {
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            format!("{scheme}://{}", self.domain)
        })
    }
}
