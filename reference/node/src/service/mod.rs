//! All protocol behaviour of the node, transport-free (DESIGN.md §4): the HTTP layer parses
//! requests and calls these methods; they load what a decision needs from the store, call
//! `loom-protocol` (where the rules live), hand the changes to the store in one transaction
//! with their audit entry, and return data or an [`ApiError`].
//!
//! The service holds no SQL: every statement is a typed function of [`crate::store`]
//! (`tests/node/service_has_no_sql.rs` keeps it so). Deliberate defects arrive through
//! [`crate::rules::NodeRules`]: acceptance steps, and [`crate::rules::Deviations`] as data
//! built once in [`Service::new`].

pub mod auth;
pub mod blobs;
pub mod bridge;
pub mod capabilities;
pub mod delegations;
pub mod discovery;
pub mod envelopes;
pub mod events;
pub mod federation;
pub mod idempotency;
pub mod identity;
pub mod outbox;
pub mod peer_discovery;
pub mod rate_limit;
pub mod realtime;
pub mod search;
pub(crate) mod security;
pub mod threads;
pub(crate) mod worker;
pub mod workflows;
pub mod write_group;

use crate::config::NodeConfig;
use crate::env::Env;
use crate::error::{ApiError, ApiResult};
use crate::rules::{Deviations, NodeRules};
use crate::store::audit::{self, AuditEntry};
use crate::store::{Connection, Store, node_keys};
use ed25519_dalek::SigningKey;
use loom_protocol::Address;
use loom_protocol::keys::{public_key_to_b64url, signing_key_from_seed};
use serde_json::Value;
use std::sync::Arc;

/// A JSON answer, with its serialized text when whoever produced it already wrote those
/// bytes: the writer stores an envelope's document as text (its `body` row) and the
/// `201` answers with that same text (§16.1), instead of serializing the document again.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The value.
    pub value: Value,
    /// `value` serialized (compact, as `serde_json` writes it), when already at hand.
    pub text: Option<String>,
}

impl From<Value> for Document {
    fn from(value: Value) -> Self {
        Document { value, text: None }
    }
}

/// The authenticated caller of a request (§14.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The identity the access token was issued to.
    pub identity: Address,
    /// The key that proved possession when the token was issued.
    pub key_id: String,
}

/// The node: configuration, environment, store and rules.
#[derive(Debug)]
pub struct Service {
    /// Configuration.
    pub config: NodeConfig,
    /// Time and randomness.
    pub env: Env,
    /// Durable state.
    pub store: Store,
    /// The rules it runs ([`crate::rules::Spec`] on a real node).
    pub(crate) rules: Arc<dyn NodeRules>,
    /// The deviations of the service outside acceptance (none on a real node).
    pub(crate) deviations: Deviations,
    node_key: SigningKey,
    node_key_id: String,
    /// Node keys replaced by a rotation, `(key_id, public key)`, published as `retired`.
    retired_node_keys: Vec<(String, ed25519_dalek::VerifyingKey)>,
    pub(crate) threads: envelopes::ThreadCache,
    pub(crate) write_group: write_group::WriteGroup,
    pub(crate) rate_limiter: rate_limit::RateLimiter,
    pub(crate) fed: federation::Federation,
    /// Envelopes accepted since the last signed checkpoint (`audit_checkpoint_rows`).
    pub(crate) unanchored: std::sync::atomic::AtomicU64,
    /// Rate limits of security-event records (§23.2, §25.1).
    pub(crate) security: security::SecurityLog,
    /// The email bridge, when `[bridge]` is configured (v1.1 §21).
    pub(crate) bridge: Option<bridge::Bridge>,
    /// Bytes of request bodies being read now, against `limits.max_inflight_body_bytes`.
    pub bodies: Arc<crate::http::body_budget::BodyBudget>,
    /// The real-time hub: recent events, typing indicators, WebSocket connection counts.
    pub(crate) realtime: realtime::Realtime,
}

impl Service {
    /// Builds the service over an opened store, creating the node signing key on first start.
    pub fn new(
        config: NodeConfig,
        env: Env,
        store: Store,
        rules: Arc<dyn NodeRules>,
    ) -> ApiResult<Service> {
        Self::with_dial(
            config,
            env,
            store,
            rules,
            Arc::new(crate::outbound::TokioDial),
        )
    }

    /// The federation HTTP client of `config` (v1.1 §14.1, §15.1): TLS 1.3 to `https://`
    /// peers verified against the configured roots, the `resolve` overrides, plain http
    /// only to private hosts when allowed.
    fn federation_client(
        config: &NodeConfig,
        dial: Arc<dyn crate::outbound::Dial>,
    ) -> ApiResult<crate::outbound::HttpClient> {
        let f = &config.federation;
        let tls = crate::tls::client_config(f.native_roots, &f.peer_ca).map_err(|e| {
            ApiError::bad_request("federation.peer_ca", e.to_string(), "v1.1 §14.1")
        })?;
        let resolve = crate::outbound::StaticResolve::parse(&f.resolve)
            .map_err(|e| ApiError::bad_request("federation.resolve", e, "v1.1 §15.1"))?;
        Ok(crate::outbound::HttpClient::new(
            dial,
            std::time::Duration::from_millis(f.request_timeout_ms),
        )
        .with_tls(Arc::new(tls))
        .with_resolve(Arc::new(resolve))
        .allow_private_http(f.allow_private_http))
    }

    /// [`Service::new`] with the sockets federation dials through (turmoil in the simulator).
    pub fn with_dial(
        config: NodeConfig,
        env: Env,
        store: Store,
        rules: Arc<dyn NodeRules>,
        dial: Arc<dyn crate::outbound::Dial>,
    ) -> ApiResult<Service> {
        let (node_key_id, node_key) = Self::load_or_create_node_key(&store, &env)?;
        let retired_node_keys = node_keys::retired(&store)?
            .into_iter()
            .filter_map(|(k, pk)| Some((k, loom_protocol::keys::public_key_from_b64url(&pk).ok()?)))
            .collect();
        let policy = config
            .federation_policy()
            .map_err(|e| ApiError::bad_request("federation_policy", e, "v1.1 §15.2"))?;
        let fed = federation::Federation {
            client: Self::federation_client(&config, dial)?,
            policy,
            retry: config.federation.retry_policy(),
            wake: tokio::sync::Notify::new(),
            queued: std::sync::atomic::AtomicBool::new(false),
            tick: tokio::sync::Mutex::new(()),
            last_purge_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
            discovery_failures: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            fetch_gates: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            discover: Self::dns_discover(&config, &env)?,
        };
        let bridge = bridge::Bridge::new(&config, &node_key_id, &node_key.to_bytes())?;
        let service = Service {
            bodies: crate::http::body_budget::BodyBudget::new(
                config.limits.max_inflight_body_bytes,
            ),
            bridge,
            realtime: realtime::Realtime::default(),
            config,
            env,
            store,
            deviations: rules.deviations(),
            rules,
            node_key,
            node_key_id,
            retired_node_keys,
            threads: envelopes::ThreadCache::default(),
            write_group: write_group::WriteGroup::default(),
            rate_limiter: rate_limit::RateLimiter::default(),
            fed,
            unanchored: std::sync::atomic::AtomicU64::new(0),
            security: security::SecurityLog::default(),
        };
        service.rules.on_start(&service.store, &service.config)?;
        Ok(service)
    }

    fn load_or_create_node_key(store: &Store, env: &Env) -> ApiResult<(String, SigningKey)> {
        if let Some((key_id, seed_hex)) = node_keys::active(store)? {
            let seed: [u8; 32] = hex::decode(&seed_hex)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| ApiError::internal("stored node key seed is corrupt"))?;
            return Ok((key_id, signing_key_from_seed(&seed)));
        }
        Self::fresh_node_key(env, |id, seed, public, at| {
            node_keys::insert(store, id, seed, public, at)
        })
    }

    /// A new node signing key from `env`'s seeded RNG and its id; `store_row` stores it
    /// (key id, seed hex, base64url public key, created at) by insert or rotation.
    fn fresh_node_key(
        env: &Env,
        store_row: impl FnOnce(&str, &str, &str, &str) -> crate::store::StoreResult<()>,
    ) -> ApiResult<(String, SigningKey)> {
        let seed = env.ids().bytes32();
        let key = signing_key_from_seed(&seed);
        let key_id = format!("k_node_sign_{}", env.ids().ulid());
        store_row(
            &key_id,
            &hex::encode(seed),
            &public_key_to_b64url(&key.verifying_key()),
            &env.now().to_rfc3339(),
        )?;
        Ok((key_id, key))
    }

    /// Signs the audit log's head with the node key and writes it beside a durable store
    /// (§25.1 anchoring, `store::audit::Checkpoint`), unless the stored checkpoint already
    /// names the same head. `Ok(None)` for an in-memory store (nothing outlives it).
    pub fn audit_checkpoint(&self) -> ApiResult<Option<crate::store::audit::Checkpoint>> {
        use crate::store::audit::Checkpoint;
        let crate::config::Storage::Dir(dir) = &self.config.storage else {
            return Ok(None);
        };
        let at = self.env.now().to_rfc3339();
        let cp = self.store.sign_audit_head(
            &self.config.domain,
            &at,
            &self.node_key_id,
            &self.node_key,
        )?;
        self.unanchored
            .store(0, std::sync::atomic::Ordering::Relaxed);
        let previous = Checkpoint::read(dir).ok().flatten();
        if previous
            .is_some_and(|p| (p.seq, &p.head_hash, p.rows) == (cp.seq, &cp.head_hash, cp.rows))
        {
            return Ok(None);
        }
        cp.write(dir)
            .map_err(|e| ApiError::internal(format!("audit checkpoint: {e}")))?;
        Ok(Some(cp))
    }

    /// Rotates the node signing key of the store `store` (the node must not be running on
    /// it): a fresh active key from `env`'s RNG, the previous one kept as `retired` and still
    /// published in the node document (v1.1 §15.2, v1.0 §7.4). Returns the new key id.
    pub fn rotate_node_key(store: &Store, env: &Env) -> ApiResult<String> {
        let (key_id, _) = Self::fresh_node_key(env, |id, seed, public, at| {
            node_keys::rotate(store, id, seed, public, at)
        })?;
        Ok(key_id)
    }

    /// The node keys a rotation retired, oldest first (published with status `retired`).
    pub fn retired_node_keys(&self) -> &[(String, ed25519_dalek::VerifyingKey)] {
        &self.retired_node_keys
    }

    /// The node's federation signing key (LOOM-HTTP-SIG-1) and its id.
    pub fn node_key(&self) -> (&str, &SigningKey) {
        (&self.node_key_id, &self.node_key)
    }

    /// Is `addr` hosted here?
    pub fn is_local(&self, addr: &Address) -> bool {
        !addr.is_bridge() && addr.domain().eq_ignore_ascii_case(&self.config.domain)
    }

    /// The deviations of the service outside acceptance (none on a real node).
    pub fn deviations(&self) -> &Deviations {
        &self.deviations
    }

    /// The acceptance steps for an envelope `caller` submits, or a peer delivered
    /// (`delivered`, §15.4).
    pub(crate) fn admission<'a>(
        &'a self,
        caller: &'a Address,
        delivered: bool,
    ) -> Box<dyn loom_protocol::accept::Rules + 'a> {
        self.rules.admission(&self.env, caller, delivered)
    }

    /// Appends to the §25.1 audit log inside the caller's transaction.
    pub fn audit(
        &self,
        conn: &Connection,
        actor: &str,
        action: &str,
        subject: &str,
        details: Value,
    ) -> ApiResult<()> {
        let at = self.env.now().to_rfc3339();
        audit::append(
            conn,
            &AuditEntry {
                at: &at,
                actor,
                action,
                subject,
                details,
            },
        )?;
        Ok(())
    }
}

/// Parses an address from request data, naming the field on failure.
pub fn parse_address(field: &str, s: &str) -> ApiResult<Address> {
    Address::parse_wire(s)
        .map_err(|e| ApiError::bad_request(field, format!("not a LOOM address: {e}"), "v1.1 §6.1"))
}
