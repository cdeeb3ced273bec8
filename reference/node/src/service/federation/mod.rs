//! Federation, receiving side and peers (v1.1 §15): `POST /v1/federation/deliver`, the
//! handshake document (§15.7), peer node documents and their keys (§15.2, v1.0 §7.4) and
//! remote identities (node-signed documents, DESIGN.md §9). The sending side — the outbox
//! worker — is [`super::outbox`].
//!
//! A delivery, in order:
//! 1. the raw body is capped by `federation.max_wrapper_bytes` (the HTTP layer, 413);
//! 2. the peer's node keys come from the store; a peer not seen yet, or a `X-LOOM-Key-Id`
//!    its stored document does not list, makes the node fetch the document from the peer's
//!    configured base URL (at most once per `federation.refetch_min_interval_ms` per peer,
//!    default a minute);
//! 3. `loom_protocol::federation::check_delivery`: headers, policy, key, freshness, signature,
//!    nonce (probed against the store's cache, not yet recorded), wrapper, sender authority;
//! 4. the per-node rate class (§14.3), only now that the node is authenticated;
//! 5. each envelope's sender — and each delegator of its `from.delegation_chain` (§13.3
//!    verifies the links with their keys) — is resolved from its home node when unknown (or
//!    when the named key id is unknown), then admitted with `Origin::Federated` and committed by the
//!    single writer with the wrapper's other envelopes, in wrapper order;
//! 6. the nonce is recorded in the store once something was accepted (a racing copy loses
//!    the insert and is refused as a replay), so a restart does not reopen a replay window;
//!    a request refused as a whole records nothing and changes nothing;
//! 7. the answer: 202 `{receipt, rejected}` — the signed receipt (`accepted`/`partial`, the
//!    accepted ids) where the existing v1.1 node reads it (DESIGN.md §9), and an unsigned
//!    `rejected[]` naming each refused envelope's §24.1 error — or, when nothing was
//!    accepted, the first envelope's error as the §24.1 body (an envelope whose sender's
//!    home node served an identity document that does not verify is refused with
//!    `SIGNATURE_INVALID` naming `node_signature` and that node).
//!
//! The parts: [`peers`] (peer node documents and keys, discovery and re-fetch), [`directory`]
//! (remote identities and the lookups a delivery's acceptance makes), [`inbound`] (a delivery,
//! steps 1–6) and [`receipts`] (step 7).

mod directory;
mod inbound;
mod peers;
mod receipts;

use crate::error::{ApiError, ApiResult};
use crate::outbound::HttpClient;
use crate::service::Service;
use loom_protocol::federation::wrapper::{DELIVER_PATH, MAX_ENVELOPES_PER_WRAPPER};
use loom_protocol::federation::{FederationPolicy, NodeKeys, RetryPolicy};
use loom_protocol::keys::{public_key_to_b64url, public_key_to_spki_pem};
use loom_protocol::{Address, Timestamp};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

/// Federation state of a running node.
#[derive(Debug)]
pub struct Federation {
    /// Outbound HTTP (tokio or turmoil sockets).
    pub(crate) client: HttpClient,
    /// The enforced policy.
    pub(crate) policy: FederationPolicy,
    /// §15.6 timing.
    pub(crate) retry: RetryPolicy,
    /// Wakes the outbox worker when the writer queued something.
    pub(crate) wake: tokio::sync::Notify,
    /// Set by the writer when a group queued outbox rows.
    pub(crate) queued: AtomicBool,
    /// One outbox pass at a time.
    pub(crate) tick: tokio::sync::Mutex<()>,
    /// When (injected clock, unix ms) the nonce cache was last purged
    /// (`FederationConfig::nonce_purge_ms`); `i64::MIN` before the first pass.
    pub(crate) last_purge_ms: std::sync::atomic::AtomicI64,
    /// When (injected clock, unix ms) fetching each node's document for an inbound request
    /// last failed (discovering an unknown node, or re-fetching after a signature failed
    /// under a known key id): such requests trigger at most one fetch per
    /// `federation.refetch_min_interval_ms` per node name, so made-up `X-LOOM-Node` values
    /// cannot make this node fetch `https://{name}/…` per request. Bounded by
    /// [`MAX_DISCOVERY_FAILURES`] (cleared when full).
    pub(crate) discovery_failures: std::sync::Mutex<BTreeMap<String, i64>>,
    /// Per node name, the gate its document fetches go through, holding the last fetch's
    /// result for the requests that waited on it ([`Service::fetch_peer`]: single-flight).
    pub(crate) fetch_gates: std::sync::Mutex<BTreeMap<String, PeerFetchGate>>,
    /// Optional DNS SRV/TXT discovery (v1.1 §15.1, `federation.dns_server`); see
    /// [`crate::discover`].
    pub(crate) discover: Option<std::sync::Arc<dyn crate::discover::Discover>>,
}

/// One node's fetch gate: the last fetch's result, behind the lock fetches take turns on.
pub(crate) type PeerFetchGate = std::sync::Arc<tokio::sync::Mutex<Option<ApiResult<Peer>>>>;

/// Most node names remembered in [`Federation::discovery_failures`].
pub const MAX_DISCOVERY_FAILURES: usize = 10_000;

/// A peer as this node knows it: keys and where to reach it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Its node signing keys.
    pub keys: NodeKeys,
    /// Where deliveries go.
    pub deliver_url: String,
    /// The identity resolution template (`{identity}` placeholder).
    pub identity_template: String,
    /// When its document was fetched.
    pub fetched_at: Option<Timestamp>,
}

/// The answer to a delivery: status and body.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAnswer {
    /// 202.
    pub status: u16,
    /// The signed receipt and `rejected[]`.
    pub body: Value,
}

impl Service {
    /// The node's own identity, `loom://loom-node@{domain}` (failure receipts).
    pub(crate) fn node_address(&self) -> ApiResult<Address> {
        Address::parse(&format!(
            "loom://{}@{}",
            super::outbox::NODE_IDENTITY_LOCAL,
            self.config.domain
        ))
        .map_err(ApiError::internal)
    }

    /// `GET /v1/federation/hello` (§15.7): capabilities and policy, signed
    /// (`loom_protocol::federation::hello`).
    pub fn federation_hello(&self) -> Value {
        let doc = self.node_document();
        let (key_id, key) = self.node_key();
        let mut hello = json!({
            "loom": "1.1",
            "node_id": self.config.domain,
            "domain": self.config.domain,
            "federation": doc.get("federation").cloned().unwrap_or(Value::Null),
            "supported_versions": doc.get("supported_versions").cloned().unwrap_or(Value::Null),
            "supported_profiles": doc.get("supported_profiles").cloned().unwrap_or(Value::Null),
            "conformance_level": self.conformance_level(),
            "limits": {
                "max_envelopes_per_wrapper": MAX_ENVELOPES_PER_WRAPPER,
                "max_wrapper_bytes": self.config.federation.max_wrapper_bytes,
                "max_envelope_bytes": self.config.limits.envelope.max_envelope_bytes,
                "federation_per_node_per_min": self.config.rate_limits.federation_per_node,
            },
            "timestamp": self.env.now().to_rfc3339(),
        });
        loom_protocol::federation::hello::sign_hello(&mut hello, key_id, key);
        hello
    }

    /// The `federation` member of the node document (§15.2).
    pub(crate) fn federation_member(&self) -> Value {
        let base = self.config.base_url();
        let (key_id, key) = self.node_key();
        let vk = key.verifying_key();
        json!({
            "deliver_url": format!("{base}{DELIVER_PATH}"),
            "identity_resolve_url": format!("{base}/v1/identity/{{identity}}"),
            "hello_url": format!("{base}/v1/federation/hello"),
            "requirements": ["LOOM-HTTP-SIG-1"],
            "policy": self.config.federation_policy,
            "signing_keys": std::iter::once((key_id, vk, "active"))
                .chain(self.retired_node_keys().iter().map(|(k, v)| (k.as_str(), *v, "retired")))
                .map(|(k, v, status)| json!({
                    "key_id": k,
                    "algorithm": "Ed25519",
                    "public_key": public_key_to_b64url(&v),
                    "public_key_pem": public_key_to_spki_pem(&v).trim_end(),
                    "status": status,
                }))
                .collect::<Vec<Value>>(),
            "max_envelopes_per_wrapper": MAX_ENVELOPES_PER_WRAPPER,
        })
    }
}
