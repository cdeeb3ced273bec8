//! Discovery (v1.1 §15.2 node document, EXTENSION-REGISTRY, and the capabilities document a
//! harness reads to choose which conformance cases apply).

use super::Service;
use loom_protocol::keys::public_key_to_b64url;
use serde_json::{Value, json};

/// The conformance level a node without an email bridge implements (v1.1 §28.1: Level 3
/// needs the bridge; E2EE, the real-time stream and workflows complete Level 4 above it).
pub const CONFORMANCE_LEVEL_WITHOUT_BRIDGE: u8 = 2;
/// The level with `[bridge]` configured.
pub const CONFORMANCE_LEVEL_WITH_BRIDGE: u8 = 4;

/// The features advertised in `/v1/protocol/capabilities`, sorted.
pub const FEATURES: &[&str] = &[
    "audit-log",
    "blobs",
    "capability-tokens",
    "delegations",
    "events",
    "federation",
    "idempotency",
    "legal-hold",
    "provisioning",
    "rate-limits",
    "presence",
    "search",
    "thread-ops",
    "websocket",
    "workflows",
];

impl Service {
    /// The level this node advertises (§28.1), by whether it runs the email bridge.
    pub fn conformance_level(&self) -> u8 {
        if self.bridge.is_some() {
            CONFORMANCE_LEVEL_WITH_BRIDGE
        } else {
            CONFORMANCE_LEVEL_WITHOUT_BRIDGE
        }
    }

    /// `GET /.well-known/loom.json`: every member §15.2 requires.
    pub fn node_document(&self) -> Value {
        let base = self.config.base_url();
        let ws = base.replacen("http", "ws", 1);
        let (key_id, key) = self.node_key();
        json!({
            "loom": "1.1",
            "node_id": self.config.domain,
            "domain": self.config.domain,
            "api_url": format!("{base}/v1"),
            "websocket_url": format!("{ws}/ws"),
            "federation": self.federation_member(),
            "signing_keys": std::iter::once(json!({
                "key_id": key_id,
                "public_key": public_key_to_b64url(&key.verifying_key()),
                "algorithm": "Ed25519",
                "status": "active",
            }))
            .chain(self.retired_node_keys().iter().map(|(k, vk)| json!({
                "key_id": k,
                "public_key": public_key_to_b64url(vk),
                "algorithm": "Ed25519",
                "status": "retired",
            })))
            .collect::<Vec<Value>>(),
            "supported_versions": ["1.1"],
            "supported_profiles": ["loom-core-1", "loom-v1.1-full"],
            "conformance_level": self.conformance_level(),
        })
    }

    /// `GET /v1/protocol/extensions` (EXTENSION-REGISTRY shape): which extensions are on.
    pub fn extensions(&self) -> Value {
        let ext =
            |id: &str, enabled: bool| json!({"id": id, "status": "active", "enabled": enabled});
        json!({
            "loom": "1.1",
            "profile": "loom-core-1",
            "extensions": [
                ext("loom-ext-email-bridge-v1", self.bridge.is_some()),
                ext("loom-ext-legacy-gateway-v1", false),
                ext("loom-ext-mcp-runtime-v1", false),
                ext("loom-ext-workflow-v1", true),
                ext("loom-ext-e2ee-x25519-v1", true),
                ext("loom-ext-e2ee-x25519-v2", true),
                ext("loom-ext-e2ee-mls-1", false),
                ext("loom-ext-compliance-v1", false),
            ],
        })
    }

    /// `GET /v1/protocol/capabilities`: level, features and limits, so a harness can choose
    /// its cases without guessing.
    pub fn protocol_capabilities(&self) -> Value {
        let l = &self.config.limits;
        let r = &self.config.rate_limits;
        json!({
            "loom": "1.1",
            "conformance_level": self.conformance_level(),
            "features": FEATURES,
            "registration": {
                "challenge_url": "/v1/identity/challenge",
                "register_url": "/v1/identity",
                "proof": "loom.identity.register.v1",
            },
            "limits": {
                "max_body_bytes": l.max_body_bytes,
                "max_envelope_bytes": l.envelope.max_envelope_bytes,
                "max_envelopes_per_thread": l.max_envelopes_per_thread,
                "max_pending_parents": l.max_pending_parents,
                "max_blob_bytes": l.max_blob_bytes,
                "max_page_size": l.max_page_size,
                "retract_window_secs": self.config.retract_window_secs,
            },
            "bridge": self.bridge.as_ref().map(|b| json!({
                "mail_domain": b.domain,
                "smtp": b.config.listen.to_string(),
                "max_message_bytes": b.config.max_message_bytes,
                "dkim": {"name": b.dkim.dns_name(), "record": b.dkim.dns_record()},
            })),
            "rate_limits": {
                "envelopes_per_identity_per_min": r.envelopes_per_identity,
                "auth_per_ip_per_min": r.auth_per_ip,
                "thread_reads_per_identity_per_min": r.thread_reads_per_identity,
                "federation_per_node_per_min": r.federation_per_node,
                "ws_messages_per_connection_per_min": r.ws_messages_per_connection,
            },
            "realtime": {
                "ping_timeout_secs": self.config.realtime.ping_timeout_secs,
                "typing_ttl_ms": self.config.realtime.typing_ttl_ms,
                "max_frame_bytes": self.config.realtime.max_frame_bytes,
                "max_channels": self.config.realtime.max_channels,
                "max_connections_per_identity": self.config.realtime.max_connections_per_identity,
            },
        })
    }
}
