//! All protocol behaviour of the node, transport-free (DESIGN.md §4): the HTTP layer parses
//! requests and calls these methods; they check every rule (through `loom-protocol`, where the
//! rules live), change the store in one transaction, write the audit log and return data or
//! an [`ApiError`].

pub mod auth;
pub mod blobs;
pub mod capabilities;
pub mod delegations;
pub mod discovery;
pub mod envelopes;
pub mod events;
pub mod idempotency;
pub mod identity;
pub mod rate_limit;
pub mod search;
pub mod threads;
pub mod write_group;

use crate::config::NodeConfig;
use crate::env::Env;
use crate::error::{ApiError, ApiResult};
use crate::quirks::{Quirk, Quirks};
use crate::store::Store;
use crate::store::audit::{self, AuditEntry};
use ed25519_dalek::SigningKey;
use loom_protocol::Address;
use loom_protocol::keys::{public_key_to_b64url, signing_key_from_seed};
use rusqlite::{OptionalExtension, params};
use serde_json::Value;

/// The authenticated caller of a request (§14.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The identity the access token was issued to.
    pub identity: Address,
    /// The key that proved possession when the token was issued.
    pub key_id: String,
}

/// The node: configuration, environment, store and quirks.
#[derive(Debug)]
pub struct Service {
    /// Configuration.
    pub config: NodeConfig,
    /// Time and randomness.
    pub env: Env,
    /// Durable state.
    pub store: Store,
    /// Deliberate defects (empty unless built with `quirks`).
    pub quirks: Quirks,
    /// The acceptance deviations the quirks stand for (none on a real node).
    pub(crate) deviations: loom_protocol::accept::Deviations,
    node_key: SigningKey,
    node_key_id: String,
    pub(crate) threads: envelopes::ThreadCache,
    pub(crate) write_group: write_group::WriteGroup,
    pub(crate) rate_limiter: rate_limit::RateLimiter,
}

impl Service {
    /// Builds the service over an opened store, creating the node signing key on first start.
    pub fn new(config: NodeConfig, env: Env, store: Store, quirks: Quirks) -> ApiResult<Service> {
        let (node_key_id, node_key) = Self::load_or_create_node_key(&store, &env)?;
        Ok(Service {
            config,
            env,
            store,
            deviations: quirks.deviations(),
            quirks,
            node_key,
            node_key_id,
            threads: envelopes::ThreadCache::default(),
            write_group: write_group::WriteGroup::default(),
            rate_limiter: rate_limit::RateLimiter::default(),
        })
    }

    fn load_or_create_node_key(store: &Store, env: &Env) -> ApiResult<(String, SigningKey)> {
        let conn = store.conn();
        let existing: Option<(String, String)> = conn
            .query_row(
                "SELECT key_id, secret_seed FROM node_keys WHERE status = 'active' ORDER BY created_at LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((key_id, seed_hex)) = existing {
            let seed: [u8; 32] = hex::decode(&seed_hex)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| ApiError::internal("stored node key seed is corrupt"))?;
            return Ok((key_id, signing_key_from_seed(&seed)));
        }
        let seed = env.ids().bytes32();
        let key = signing_key_from_seed(&seed);
        let key_id = format!("k_node_sign_{}", env.ids().ulid());
        conn.execute(
            "INSERT INTO node_keys (key_id, secret_seed, public_key, status, created_at) VALUES (?1, ?2, ?3, 'active', ?4)",
            params![key_id, hex::encode(seed), public_key_to_b64url(&key.verifying_key()), env.now().to_rfc3339()],
        )?;
        Ok((key_id, key))
    }

    /// The node's federation signing key (LOOM-HTTP-SIG-1) and its id.
    pub fn node_key(&self) -> (&str, &SigningKey) {
        (&self.node_key_id, &self.node_key)
    }

    /// Is quirk `q` on?
    pub fn quirk(&self, q: Quirk) -> bool {
        self.quirks.has(q)
    }

    /// Is `addr` hosted here?
    pub fn is_local(&self, addr: &Address) -> bool {
        !addr.is_bridge() && addr.domain().eq_ignore_ascii_case(&self.config.domain)
    }

    /// Appends to the §25.1 audit log inside the caller's transaction.
    pub fn audit(
        &self,
        conn: &rusqlite::Connection,
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
/// A `loom://local@domain` address taken as written, without the §6.1 local-part rule (for
/// the `accept-any-local-part` quirk only).
fn lenient_loom_address(s: &str) -> Option<Address> {
    let (local, domain) = s.strip_prefix("loom://")?.rsplit_once('@')?;
    (!local.is_empty() && !domain.is_empty()).then(|| Address::Loom {
        local: local.to_owned(),
        domain: domain.to_owned(),
    })
}

impl Service {
    /// The address a registration or challenge names (§6.1), through [`parse_address`];
    /// the `accept-any-local-part` quirk lets an invalid local part through.
    pub(crate) fn parse_registrant(&self, field: &str, s: &str) -> ApiResult<Address> {
        match parse_address(field, s) {
            Err(e) if self.quirk(Quirk::AcceptAnyLocalPart) => lenient_loom_address(s).ok_or(e),
            r => r,
        }
    }
}

pub fn parse_address(field: &str, s: &str) -> ApiResult<Address> {
    Address::parse_wire(s)
        .map_err(|e| ApiError::bad_request(field, format!("not a LOOM address: {e}"), "v1.1 §6.1"))
}
