//! The email bridge in the node (v1.1 §21, v1.0 §19): the glue between `loom-bridge`'s pure
//! pieces and the node's store and writer.
//!
//! - **Inbound** ([`inbound`]): an SMTP transaction is authenticated (SPF, DKIM, DMARC),
//!   refused or quarantined under `[bridge].policy`, mapped to envelope drafts, signed with
//!   the node's bridge key on behalf of the `bridge://` sender (whose identity the node
//!   creates on first contact, type `bridge`, with that key) and committed by the one writer
//!   with `meta.bridge` (`Origin::Bridge`), like any other envelope.
//! - **Outbound** ([`outbound`]): an envelope accepted from a local sender that names
//!   `bridge://` recipients queues one row per recipient in the same transaction
//!   (`bridge_outbox`, the federation outbox's lifecycle); a worker renders, DKIM-signs and
//!   sends each, retries with backoff on the injected clock, and after `max_attempts` tells
//!   the sender with `receipt.failed@v1` and `BRIDGE_DELIVERY_FAILED` (§24.2).
//!
//! Every received, refused and sent message is a §25.1 audit entry (`bridge.inbound`,
//! `bridge.inbound.refused`, `bridge.outbound`, `bridge.outbound.failed`).

pub mod bounce;
pub mod inbound;
pub mod outbound;

use crate::config::{BridgeConfig, NodeConfig};
use crate::error::{ApiError, ApiResult};
use loom_bridge::auth::{Records, Verifier};
use loom_bridge::outbound::Dkim;
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The bridge's settings and long-lived parts.
#[derive(Debug)]
pub struct Bridge {
    /// `[bridge]`.
    pub config: BridgeConfig,
    /// The mail domain.
    pub domain: String,
    /// The SMTP host name.
    pub hostname: String,
    /// SPF/DKIM/DMARC over the configured records and resolver.
    pub verifier: Verifier,
    /// The outbound DKIM signer.
    pub dkim: Dkim,
    /// `from.key_id` of bridged envelopes: the node key, published for every `bridge://`
    /// identity the node created.
    pub key_id: String,
    /// The secret behind bounce addresses (`loom_bridge::bounce`), derived from the node key.
    pub verp_key: [u8; 32],
    /// Wakes the outbound worker when mail is queued.
    pub(crate) wake: tokio::sync::Notify,
    /// One outbound pass at a time.
    pub(crate) tick: tokio::sync::Mutex<()>,
}

impl Bridge {
    /// The bridge of `config`, if it has a `[bridge]` section. `node_key_id` and
    /// `node_seed` give the bridge key's id and, without `dkim_key`, the DKIM key.
    pub fn new(
        config: &NodeConfig,
        node_key_id: &str,
        node_seed: &[u8; 32],
    ) -> ApiResult<Option<Bridge>> {
        let Some(b) = &config.bridge else {
            return Ok(None);
        };
        let bad = |field: &str, why: String| ApiError::bad_request(field, why, "v1.1 §21");
        let domain = b
            .domain
            .clone()
            .unwrap_or_else(|| config.domain.clone())
            .to_ascii_lowercase();
        let hostname = b.hostname.clone().unwrap_or_else(|| domain.clone());
        let records = Records::new(b.dns_server.is_none());
        for r in &b.dns_records {
            records
                .add(r)
                .map_err(|e| bad("bridge.dns_records", e.to_string()))?;
        }
        let verifier = Verifier::new(Arc::new(records), b.dns_server, &hostname)
            .map_err(|e| bad("bridge.dns_server", e.to_string()))?;
        let dkim = match &b.dkim_key {
            Some(path) => {
                let pem = std::fs::read_to_string(path)
                    .map_err(|e| bad("bridge.dkim_key", format!("{}: {e}", path.display())))?;
                Dkim::rsa_pem(&domain, &b.dkim_selector, &pem)
                    .map_err(|e| bad("bridge.dkim_key", e))?
            }
            None => {
                let seed: [u8; 32] = Sha256::new()
                    .chain_update(b"loom-bridge-dkim-v1")
                    .chain_update(node_seed)
                    .finalize()
                    .into();
                Dkim::ed25519(&domain, &b.dkim_selector, &seed)
                    .map_err(|e| bad("bridge.dkim_selector", e))?
            }
        };
        Ok(Some(Bridge {
            config: b.clone(),
            domain,
            hostname,
            verifier,
            dkim,
            key_id: bridge_key_id(node_key_id),
            verp_key: Sha256::new()
                .chain_update(b"loom-bridge-verp-v1")
                .chain_update(node_seed)
                .finalize()
                .into(),
            wake: tokio::sync::Notify::new(),
            tick: tokio::sync::Mutex::new(()),
        }))
    }
}

/// The key id bridged envelopes are signed under: the node key's, as a `k_sign_` id.
pub fn bridge_key_id(node_key_id: &str) -> String {
    format!(
        "k_sign_bridge_{}",
        node_key_id.trim_start_matches("k_node_sign_")
    )
}
