//! The seam through which a conformance self-test replaces the node's behaviour
//! (DESIGN.md §4), in the manner of rustls' BoGo shim: the node's main path asks no "is
//! defect X on?"; it calls [`NodeRules`] at a few places, and a real node runs [`Spec`],
//! whose every method is the specification. The implementation with deliberate defects
//! (`crate::quirks`) exists only with the `quirks` feature.
//!
//! Where a defect lives:
//! - acceptance steps (§7–§13, §16.1): [`NodeRules::admission`], loom-protocol's
//!   [`loom_protocol::accept::Rules`] with one step overridden per defect; sessions
//!   (§14.2), registration (§6) and receiving deliveries (§15.3–§15.5):
//!   [`NodeRules::session`], [`NodeRules::registration`] and [`NodeRules::inbound`], the
//!   same shape; the email bridge (§21): [`NodeRules::bridge`];
//! - what a client or a peer sees on the wire (response shapes, HTTP framing, replays):
//!   [`NodeRules::front`], a layer in front of the unchanged router;
//! - TLS (§14.1): [`NodeRules::tls`]; start-up (§15.6, §16.1, §25.1):
//!   [`NodeRules::on_start`];
//! - the rest of the service, as data: [`Deviations`], every field named after the rule
//!   it breaks and `false` on a real node.

use crate::config::NodeConfig;
use crate::env::Env;
use crate::service::Service;
use crate::store::Store;
use loom_protocol::Address;
use loom_protocol::accept::{Rules, SpecRules};
use loom_protocol::federation::{InboundRules, SpecInbound};
use loom_protocol::registration::{RegistrationRules, SpecRegistration};
use loom_protocol::session::{SessionRules, SpecSession};
use std::sync::Arc;

/// What a self-test shim may replace; every default is the specification.
pub trait NodeRules: Send + Sync + std::fmt::Debug {
    /// The acceptance steps for an envelope `caller` submits, or that a peer delivered
    /// (`delivered`, §15.4). `env` draws what a lenient node invents.
    fn admission<'a>(
        &'a self,
        _env: &'a Env,
        _caller: &'a Address,
        _delivered: bool,
    ) -> Box<dyn Rules + 'a> {
        Box::new(SpecRules)
    }

    /// The §14.2 steps of challenges and tokens.
    fn session(&self) -> &dyn SessionRules {
        &SpecSession
    }

    /// The registration steps (DESIGN.md §9, v1.1 §6).
    fn registration(&self) -> &dyn RegistrationRules {
        &SpecRegistration
    }

    /// The receiving checks of `POST /v1/federation/deliver` and the federation policy
    /// (v1.1 §15.2–§15.5, §23.1).
    fn inbound(&self) -> &dyn InboundRules {
        &SpecInbound
    }

    /// The email bridge's steps (v1.1 §21; loom-bridge's [`loom_bridge::rules::BridgeRules`]).
    fn bridge(&self) -> &dyn loom_bridge::rules::BridgeRules {
        &loom_bridge::rules::SpecBridge
    }

    /// The deviations of the service's other layers (none: [`Deviations::default`]).
    fn deviations(&self) -> Deviations {
        Deviations::default()
    }

    /// The configuration the node runs with (the specification: as given).
    fn config(&self, config: NodeConfig) -> NodeConfig {
        config
    }

    /// The router as clients and peers reach it (the specification: `router` itself).
    fn front(&self, router: axum::Router, _service: Arc<Service>) -> axum::Router {
        router
    }

    /// The TLS server configuration (v1.1 §14.1: TLS 1.3, `h2` and `http/1.1` in ALPN).
    fn tls(&self, config: rustls::ServerConfig) -> Result<rustls::ServerConfig, rustls::Error> {
        Ok(config)
    }

    /// Runs once when the service starts, before it serves (the specification changes
    /// nothing).
    fn on_start(&self, _store: &Store, _config: &NodeConfig) -> Result<(), rusqlite::Error> {
        Ok(())
    }

    /// The names of the defects in force, for reports and replay commands (none).
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The specification: every [`NodeRules`] default.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spec;

impl NodeRules for Spec {}

/// Deviations of the service outside acceptance, per area (all off on a real node).
#[derive(Debug, Clone, Default)]
pub struct Deviations {
    /// Identity storage and key management.
    pub identity: IdentityDeviations,
    /// Reads under the audience rules.
    pub reads: ReadDeviations,
    /// Other API behaviour.
    pub api: ApiDeviations,
    /// The real-time stream (v1.1 §17).
    pub realtime: RealtimeDeviations,
    /// Federation (v1.1 §15).
    pub federation: FederationDeviations,
}

/// Deviations of the real-time stream (v1.1 §17): its authentication, frames, presence and
/// typing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RealtimeDeviations {
    /// Refuse `?token=`; only `Authorization` (§17).
    pub header_token_only: bool,
    /// Open connections without a valid token (§17).
    pub accept_without_token: bool,
    /// Push nothing after `subscribe` (§17.1).
    pub ignore_subscribe: bool,
    /// Frames without `event_id` and `cursor` (§17.2).
    pub omit_event_ids: bool,
    /// Drop the first event after a resume point (§17.1, §17.2).
    pub drop_event_on_resume: bool,
    /// Close the connection on `ack` (§17.2).
    pub close_on_ack: bool,
    /// Never answer `ping` (§17.4).
    pub no_pong: bool,
    /// Take typing without pushing it (§17.3).
    pub drop_typing: bool,
    /// Take presence without pushing it (§17.5).
    pub drop_presence: bool,
    /// Push presence to every connected identity (§17.5).
    pub presence_to_everyone: bool,
}

/// Deviations of federation (v1.1 §15, §23, §11.6): the node's delivery, outbox and
/// receipt behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FederationDeviations {
    /// Refuse identical re-deliveries (§23.2).
    pub reject_identical_redelivery: bool,
    /// Receipts without `signature` (§15.4).
    pub unsigned_receipt: bool,
    /// Outbound deliveries without LOOM-HTTP-SIG-1 (§15.3).
    pub unsigned_outbound: bool,
    /// No retry after a failed attempt (§15.6).
    pub no_retry: bool,
    /// Constant retry delay (§15.6).
    pub linear_backoff: bool,
    /// No `receipt.failed` on expiry (§15.6).
    pub no_failure_receipt: bool,
    /// A failure reason outside `NODE_UNREACHABLE`/`DELIVERY_TIMEOUT` (§15.6).
    pub wrong_failure_reason: bool,
    /// No node-document re-fetch on an unknown key id (v1.0 §7.4).
    pub no_refetch_on_unknown_key: bool,
    /// Received `meta.origin_event_seq` dropped (§11.6).
    pub drop_origin_event_seq: bool,
    /// Delivered envelopes receipted as accepted but not stored (§15.4).
    pub drop_delivered_envelopes: bool,
    /// 2xx answers to deliveries without a receipt (§15.4).
    pub no_receipt: bool,
    /// Identical re-deliveries stored a second time (§23.2).
    pub store_redelivered_twice: bool,
    /// Identity documents signed over whole key entries (DESIGN.md §9 registration form).
    pub full_key_node_signature: bool,
    /// Delivery answers with the receipt at the top level, not under `receipt` (DESIGN.md §9).
    pub top_level_receipt: bool,
    /// A peer's per-envelope `ENVELOPE_DUPLICATE` taken as a refusal (§15.4, §23.2).
    pub duplicate_rejection_is_failure: bool,
    /// No node-document re-fetch when a signature fails under a known key id (§15.3).
    pub no_refetch_on_signature_failure: bool,
}

/// Deviations of identity storage and key management (v1.1 §6, §16.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdentityDeviations {
    /// A second registration of a registered address replaces it (DESIGN.md §9: 409).
    pub allow_duplicate_registration: bool,
    /// Answer a key revocation without revoking the key (§16.3).
    pub ignore_key_revocation: bool,
    /// Allow revoking the last active signing key (§6.3).
    pub allow_revoking_last_key: bool,
}

/// Deviations of reads (v1.1 §8.3, §16.7, §16.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadDeviations {
    /// Serve threads and their envelopes to non-participants (§8.3).
    pub ignore_audience: bool,
    /// Read an envelope without `audience` as `recipients` (§8.3: `thread`).
    pub omitted_audience_as_recipients: bool,
    /// Ignore `since` on event catch-up (§16.8).
    pub ignore_events_since: bool,
    /// Return every identity's events on catch-up (§8.3).
    pub ignore_event_audience: bool,
    /// Serve blobs without the read check (§16.7).
    pub skip_blob_read_check: bool,
}

/// Deviations of other API behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ApiDeviations {
    /// Ignore `Idempotency-Key` (§14.4).
    pub ignore_idempotency_key: bool,
    /// Never answer 429 (§14.3).
    pub disable_rate_limit: bool,
    /// Revoke delegations without the `delegation.revoked` event (§13.4, §17.3).
    pub omit_delegation_revoked_event: bool,
    /// Store capability tokens whose id lacks the `cap_` prefix (§8.4).
    pub accept_any_capability_id: bool,
    /// Event ids without the `evt_` prefix (§8.4).
    pub unprefixed_event_ids: bool,
    /// Delete content under `sys.legal_hold` (§25.3).
    pub ignore_legal_hold: bool,
    /// Retract without the `envelope.retracted` event (§20.7).
    pub omit_retracted_event: bool,
}
