//! The receiving checks of `POST /v1/federation/deliver` the federation quirks break
//! (v1.1 §15.2–§15.5, §23.1, loom-core-1), as overrides of loom-protocol's
//! [`InboundRules`] on the quirk set; every other step is the specification
//! ([`SpecInbound`]).

use super::{Quirk, Quirks};
use ed25519_dalek::VerifyingKey;
use loom_protocol::federation::{
    CheckedDelivery, DeliveryWrapper, FederationPolicy, InboundContext, InboundRules, KeyLookup,
    NodeKeySource, NodeKeys, PolicyDecision, SpecInbound, WrapperLimits, authority_of,
    check_delivery_head, check_signed, request_key,
};
use loom_protocol::http_sig::{
    NonceCache, NonceOutcome, RequestParts, SignedHeaders, SigningForm, VerifiedRequest,
};
use loom_protocol::{ErrorCode, ProtocolError, Timestamp};
use serde_json::Value;

impl InboundRules for Quirks {
    fn wrapper_limits(&self, mut limits: WrapperLimits) -> WrapperLimits {
        if self.has(Quirk::IgnoreWrapperLimit) {
            limits.max_envelopes = usize::MAX;
        }
        limits
    }

    fn authenticate(
        &self,
        req: &RequestParts<'_>,
        headers: &SignedHeaders,
        nonces: &mut dyn NonceCache,
        ctx: &InboundContext<'_>,
        limits: &WrapperLimits,
    ) -> Result<CheckedDelivery, ProtocolError> {
        if !self.has(Quirk::AcceptUnsignedDelivery) {
            return check_signed(self, req, headers, nonces, ctx, limits);
        }
        // No LOOM-HTTP-SIG-1 at all: the wrapper's `sender_node` is taken at its word.
        let wrapper = DeliveryWrapper::parse(req.body, limits)?;
        let node = loom_protocol::federation::node_name::parse_node_name(&wrapper.sender_node)
            .map_err(|why| ProtocolError::invalid("sender_node", why, "v1.1 §15.4"))?;
        let authority = authority_of(self, &wrapper, &node);
        Ok(CheckedDelivery {
            request: VerifiedRequest {
                node,
                form: SigningForm::V1,
                trust_epoch: None,
                timestamp: ctx.now,
            },
            policy: PolicyDecision::Accept,
            wrapper,
            authority,
        })
    }

    fn check_head(
        &self,
        headers: &SignedHeaders,
        policy: &FederationPolicy,
        now: Timestamp,
    ) -> Result<(), ProtocolError> {
        // No LOOM-HTTP-SIG-1 at all: nothing in the headers to check.
        if self.has(Quirk::AcceptUnsignedDelivery) {
            return Ok(());
        }
        check_delivery_head(self, headers, policy, now)
    }

    fn check_head_key(
        &self,
        headers: &SignedHeaders,
        keys: &dyn NodeKeySource,
    ) -> Result<(), ProtocolError> {
        if self.has(Quirk::AcceptUnsignedDelivery) {
            return Ok(());
        }
        request_key(self, headers, keys).map(drop)
    }

    fn decide_policy(
        &self,
        policy: &FederationPolicy,
        peer: &str,
    ) -> Result<PolicyDecision, ProtocolError> {
        if self.has(Quirk::IgnoreFederationPolicy) {
            return Ok(PolicyDecision::Accept);
        }
        SpecInbound.decide_policy(policy, peer)
    }

    fn node_key<'k>(
        &self,
        keys: &'k NodeKeys,
        key_id: &str,
    ) -> Result<&'k VerifyingKey, ProtocolError> {
        if self.has(Quirk::AcceptInactiveNodeKey)
            && let KeyLookup::NotActive(_) = keys.lookup(key_id)
            && let Some(k) = keys.keys.iter().find(|k| k.key_id == key_id)
        {
            return Ok(&k.public_key);
        }
        SpecInbound.node_key(keys, key_id)
    }

    fn request_time(&self, headers: &SignedHeaders, now: Timestamp) -> Timestamp {
        // A stale request is judged as of its own timestamp.
        match Timestamp::parse(&headers.timestamp) {
            Ok(t) if self.has(Quirk::AcceptStaleTimestamp) => t,
            _ => SpecInbound.request_time(headers, now),
        }
    }

    fn check_nonce(
        &self,
        cache: &mut dyn NonceCache,
        node: &str,
        nonce: &str,
        at: Timestamp,
    ) -> NonceOutcome {
        if self.has(Quirk::SkipNonceCache) {
            return NonceOutcome::Fresh;
        }
        SpecInbound.check_nonce(cache, node, nonce, at)
    }

    fn check_trust_epoch(
        &self,
        headers: &SignedHeaders,
        request: &VerifiedRequest,
    ) -> Result<(), ProtocolError> {
        if self.has(Quirk::RequireSignedTrustEpoch)
            && headers.trust_epoch.is_some()
            && request.trust_epoch.is_none()
        {
            return Err(ProtocolError::new(
                ErrorCode::SignatureInvalid,
                loom_protocol::http_sig::HEADER_SIGNATURE,
                "X-LOOM-Trust-Epoch is present but the signature covers five lines",
                "v1.1 §15.3",
            ));
        }
        SpecInbound.check_trust_epoch(headers, request)
    }

    fn wrapper_sender<'w>(&self, verified: &'w str, wrapper: &'w DeliveryWrapper) -> &'w str {
        if self.has(Quirk::IgnoreSenderNodeMismatch) {
            return &wrapper.sender_node;
        }
        SpecInbound.wrapper_sender(verified, wrapper)
    }

    fn wrapper_time(&self, wrapper: &DeliveryWrapper, now: Timestamp) -> Timestamp {
        match Timestamp::parse(&wrapper.timestamp_text) {
            Ok(t) if self.has(Quirk::AcceptStaleTimestamp) => t,
            _ => SpecInbound.wrapper_time(wrapper, now),
        }
    }

    fn check_sender_authority(&self, envelope: &Value, node: &str) -> Result<(), ProtocolError> {
        if self.has(Quirk::AcceptForeignSender) {
            return Ok(());
        }
        SpecInbound.check_sender_authority(envelope, node)
    }
}
