//! The receiving side of `POST /v1/federation/deliver` (v1.1 §15.3–§15.5), everything that
//! does not need the store, in the order a node applies it:
//!
//! 1. the five LOOM-HTTP-SIG-1 headers are present, `X-LOOM-Node` is a node name (§15.3);
//! 2. federation policy: a blocked or unlisted peer is refused before any key work (§15.2,
//!    §23.1) — the refusal reveals nothing a forger could not learn anyway;
//! 3. the node signing key named by `X-LOOM-Key-Id` among the peer's active keys (§15.3
//!    "signature verified using node signing key from Node Document"); the caller re-fetches
//!    a stale document first ([`super::node_document::should_refetch`]);
//! 4. request freshness, signature (v1 or v2 string) and nonce (§15.3, §15.5, §23.2);
//! 5. the wrapper: strict JSON, members, ≤ 100 envelopes, `sender_node` = `X-LOOM-Node`,
//!    wrapper timestamp fresh (§15.4, §15.5);
//! 6. sender authority for each envelope (loom-core-1), reported per envelope: one foreign
//!    sender does not sink the others, it only leaves the receipt `partial`.
//!
//! The node then runs each authorized envelope through envelope acceptance (signatures,
//! delegation, capabilities, DAG, duplicates) and answers with a receipt
//! ([`super::receipt`]). Nothing here changes state except the nonce cache, and a nonce is
//! recorded only for a request whose signature verified.

use crate::error::{ErrorCode, ProtocolError};
use crate::federation::authority::check_sender_authority;
use crate::federation::node_document::NodeKeys;
use crate::federation::node_name::parse_node_name;
use crate::federation::policy::{FederationPolicy, PolicyDecision};
use crate::federation::wrapper::{DeliveryWrapper, WrapperLimits};
use crate::http_sig::{
    HEADER_KEY_ID, HEADER_NODE, HEADER_TIMESTAMP, NonceCache, NonceOutcome, RequestParts,
    SignedHeaders, VerifiedRequest, check_freshness, check_required_headers,
    verify_request_detailed,
};
use crate::time::Timestamp;
use ed25519_dalek::VerifyingKey;
use serde_json::Value;

/// Where the receiver finds a peer's node keys (its cache of node documents).
pub trait NodeKeySource: std::fmt::Debug {
    /// The keys of `node` (normalized name), if its document is known.
    fn node_keys(&self, node: &str) -> Option<&NodeKeys>;
}

impl NodeKeySource for std::collections::BTreeMap<String, NodeKeys> {
    fn node_keys(&self, node: &str) -> Option<&NodeKeys> {
        self.get(node)
    }
}

/// A delivery request that passed every check of this module.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedDelivery {
    /// What the signature established.
    pub request: VerifiedRequest,
    /// Accept or quarantine.
    pub policy: PolicyDecision,
    /// The wrapper.
    pub wrapper: DeliveryWrapper,
    /// Sender authority of each envelope, in wrapper order.
    pub authority: Vec<Result<(), ProtocolError>>,
}

/// What the receiver brings to a check.
#[derive(Debug)]
pub struct InboundContext<'a> {
    /// Known peers' keys.
    pub keys: &'a dyn NodeKeySource,
    /// Federation policy.
    pub policy: &'a FederationPolicy,
    /// Wrapper bounds.
    pub limits: WrapperLimits,
    /// The receiver's clock reading.
    pub now: Timestamp,
}

/// The receiving checks a self-test shim may replace (DESIGN.md §4), in the order
/// [`check_delivery`] runs them; every default is the rule. A real node runs
/// [`SpecInbound`].
pub trait InboundRules {
    /// Steps 1–2 and the freshness of step 4, on the headers alone, so a node can refuse a
    /// delivery before it reads the body (issue 36): the five headers are present, the node
    /// name parses, the policy admits it, the timestamp is fresh.
    fn check_head(
        &self,
        headers: &SignedHeaders,
        policy: &FederationPolicy,
        now: Timestamp,
    ) -> Result<(), ProtocolError> {
        check_delivery_head(self, headers, policy, now)
    }

    /// Step 3 on the headers alone: the peer named by `X-LOOM-Node` is known and its
    /// document lists `X-LOOM-Key-Id` as an active key — so a delivery from a node nobody
    /// can find, or under a key its node does not publish, is refused before its body is
    /// read (issue 36, item 1). Run after [`InboundRules::check_head`] passed.
    fn check_head_key(
        &self,
        headers: &SignedHeaders,
        keys: &dyn NodeKeySource,
    ) -> Result<(), ProtocolError> {
        request_key(self, headers, keys).map(drop)
    }

    /// §15.4: the wrapper bounds (≤ 100 envelopes, DESIGN.md §9).
    fn wrapper_limits(&self, limits: WrapperLimits) -> WrapperLimits {
        limits
    }

    /// §15.3: the request carries LOOM-HTTP-SIG-1 and is checked as [`check_signed`] does;
    /// `limits` bound the wrapper.
    fn authenticate(
        &self,
        req: &RequestParts<'_>,
        headers: &SignedHeaders,
        nonces: &mut dyn NonceCache,
        ctx: &InboundContext<'_>,
        limits: &WrapperLimits,
    ) -> Result<CheckedDelivery, ProtocolError> {
        check_signed(self, req, headers, nonces, ctx, limits)
    }

    /// §15.2, §23.1: the federation policy for `peer` (deliveries both ways).
    fn decide_policy(
        &self,
        policy: &FederationPolicy,
        peer: &str,
    ) -> Result<PolicyDecision, ProtocolError> {
        policy.decide(peer)
    }

    /// §15.3: the key `key_id` among `keys`, which must be active.
    fn node_key<'k>(
        &self,
        keys: &'k NodeKeys,
        key_id: &str,
    ) -> Result<&'k VerifyingKey, ProtocolError> {
        keys.active_key(key_id, HEADER_KEY_ID)
    }

    /// §15.5: the time the request's freshness is judged at.
    fn request_time(&self, _headers: &SignedHeaders, now: Timestamp) -> Timestamp {
        now
    }

    /// §15.3 "nonce replay prevented", §23.2: `nonce` from `node` is new, and is remembered.
    fn check_nonce(
        &self,
        cache: &mut dyn NonceCache,
        node: &str,
        nonce: &str,
        at: Timestamp,
    ) -> NonceOutcome {
        cache.check_and_insert(node, nonce, at)
    }

    /// §15.3: what the signature must cover beside the five lines (nothing: a five-line
    /// signature beside `X-LOOM-Trust-Epoch` is valid).
    fn check_trust_epoch(
        &self,
        _headers: &SignedHeaders,
        _request: &VerifiedRequest,
    ) -> Result<(), ProtocolError> {
        Ok(())
    }

    /// §15.4, DESIGN.md §9: the node the wrapper's `sender_node` must name (the verified
    /// `X-LOOM-Node`).
    fn wrapper_sender<'w>(&self, verified: &'w str, _wrapper: &'w DeliveryWrapper) -> &'w str {
        verified
    }

    /// §15.5: the time the wrapper timestamp's freshness is judged at.
    fn wrapper_time(&self, _wrapper: &DeliveryWrapper, now: Timestamp) -> Timestamp {
        now
    }

    /// loom-core-1: the delivering `node` hosts the envelope's sender.
    fn check_sender_authority(&self, envelope: &Value, node: &str) -> Result<(), ProtocolError> {
        check_sender_authority(envelope, node)
    }
}

/// The specification.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpecInbound;

impl InboundRules for SpecInbound {}

/// The nonce cache as `rules` consult it.
struct RuledNonces<'a, R: ?Sized> {
    rules: &'a R,
    cache: &'a mut dyn NonceCache,
}

impl<R: InboundRules + ?Sized> NonceCache for RuledNonces<'_, R> {
    fn check_and_insert(&mut self, node: &str, nonce: &str, at: Timestamp) -> NonceOutcome {
        self.rules.check_nonce(self.cache, node, nonce, at)
    }
}

/// Runs steps 1–6 of the module docs with `rules` ([`SpecInbound`] on a real node).
pub fn check_delivery(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    nonces: &mut dyn NonceCache,
    ctx: &InboundContext<'_>,
    rules: &(impl InboundRules + ?Sized),
) -> Result<CheckedDelivery, ProtocolError> {
    let limits = rules.wrapper_limits(ctx.limits);
    rules.authenticate(req, headers, nonces, ctx, &limits)
}

/// Steps 1–6 for a signed request: [`InboundRules::authenticate`]'s default.
pub fn check_signed<R: InboundRules + ?Sized>(
    rules: &R,
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    nonces: &mut dyn NonceCache,
    ctx: &InboundContext<'_>,
    limits: &WrapperLimits,
) -> Result<CheckedDelivery, ProtocolError> {
    check_required_headers(headers)?;
    let node = header_node(headers)?;
    let policy = rules.decide_policy(ctx.policy, &node)?;
    let key = request_key(rules, headers, ctx.keys)?;
    let now = rules.request_time(headers, ctx.now);
    let mut nonces = RuledNonces {
        rules,
        cache: nonces,
    };
    let request = verify_request_detailed(req, headers, key, &mut nonces, now)?;
    rules.check_trust_epoch(headers, &request)?;
    let wrapper = DeliveryWrapper::parse(req.body, limits)?;
    wrapper.check(
        rules.wrapper_sender(&node, &wrapper),
        rules.wrapper_time(&wrapper, now),
    )?;
    let authority = authority_of(rules, &wrapper, &node);
    Ok(CheckedDelivery {
        request,
        policy,
        wrapper,
        authority,
    })
}

/// Step 3: the key `X-LOOM-Key-Id` names among the active keys of the node `X-LOOM-Node`
/// names, through `rules` (§15.2, §15.3).
pub fn request_key<'k, R: InboundRules + ?Sized>(
    rules: &R,
    headers: &SignedHeaders,
    keys: &'k dyn NodeKeySource,
) -> Result<&'k VerifyingKey, ProtocolError> {
    let node = header_node(headers)?;
    let known = keys.node_keys(&node).ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::SignatureInvalid,
            HEADER_NODE,
            format!("no node document is known for {node:?}"),
            "v1.1 §15.2, §15.3",
        )
    })?;
    rules.node_key(known, &headers.key_id)
}

/// [`InboundRules::check_head`]'s default: the header-only checks, through `rules`.
pub fn check_delivery_head<R: InboundRules + ?Sized>(
    rules: &R,
    headers: &SignedHeaders,
    policy: &FederationPolicy,
    now: Timestamp,
) -> Result<(), ProtocolError> {
    check_required_headers(headers)?;
    let node = header_node(headers)?;
    rules.decide_policy(policy, &node)?;
    check_freshness(
        HEADER_TIMESTAMP,
        &headers.timestamp,
        rules.request_time(headers, now),
    )
    .map(|_| ())
}

/// `X-LOOM-Node` as a node name (§15.3).
fn header_node(headers: &SignedHeaders) -> Result<String, ProtocolError> {
    parse_node_name(&headers.node).map_err(|why| {
        ProtocolError::new(
            ErrorCode::SignatureInvalid,
            HEADER_NODE,
            format!("X-LOOM-Node {:?}: {why}", headers.node),
            "v1.1 §15.3",
        )
    })
}

/// Sender authority of each envelope of `wrapper` delivered by `node`, in wrapper order.
pub fn authority_of<R: InboundRules + ?Sized>(
    rules: &R,
    wrapper: &DeliveryWrapper,
    node: &str,
) -> Vec<Result<(), ProtocolError>> {
    wrapper
        .envelopes
        .iter()
        .map(|e| rules.check_sender_authority(e, node))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::federation::node_document::{KeyStatus, NodeKey};
    use crate::federation::policy::PolicyMode;
    use crate::federation::wrapper::DELIVER_PATH;
    use crate::http_sig::{MemoryNonceCache, SigningForm, sign_request, sign_request_with_epoch};
    use ed25519_dalek::SigningKey;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn now() -> Timestamp {
        Timestamp::parse("2026-03-01T12:00:00Z").unwrap()
    }

    fn key() -> SigningKey {
        SigningKey::from_bytes(&[5; 32])
    }

    fn keys() -> BTreeMap<String, NodeKeys> {
        let k = NodeKeys::new(
            "a.test",
            vec![NodeKey {
                key_id: "k_node_sign_a".into(),
                public_key: key().verifying_key(),
                status: KeyStatus::Active,
            }],
        );
        BTreeMap::from([("a.test".to_owned(), k)])
    }

    fn body() -> Vec<u8> {
        serde_json::to_vec(&json!({"loom": "1.1", "sender_node": "a.test", "delivery_id": "fdel_1", "timestamp": "2026-03-01T12:00:00.000Z",
            "envelopes": [{"id": "env_01JN0000000000000000000001", "from": {"identity": "loom://alice@a.test"}},
                          {"id": "env_01JN0000000000000000000002", "from": {"identity": "loom://carol@c.test"}}]})).unwrap()
    }

    #[test]
    fn a_signed_delivery_checks_and_reports_authority_per_envelope() {
        let b = body();
        let req = RequestParts {
            method: "POST",
            path: DELIVER_PATH,
            body: &b,
        };
        let keys = keys();
        let policy = FederationPolicy::open();
        let ctx = InboundContext {
            keys: &keys,
            policy: &policy,
            limits: WrapperLimits::default(),
            now: now(),
        };
        let mut nonces = MemoryNonceCache::default();
        let h = sign_request(&req, "a.test", "k_node_sign_a", &key(), now(), &[1; 16]);
        let d = check_delivery(&req, &h, &mut nonces, &ctx, &SpecInbound).unwrap();
        assert_eq!(d.request.form, SigningForm::V1);
        assert_eq!(d.policy, PolicyDecision::Accept);
        assert!(d.authority[0].is_ok());
        assert_eq!(
            d.authority[1].as_ref().unwrap_err().code,
            ErrorCode::CapabilityDenied
        );
        // Replayed: refused.
        assert_eq!(
            check_delivery(&req, &h, &mut nonces, &ctx, &SpecInbound)
                .unwrap_err()
                .field,
            "X-LOOM-Nonce"
        );
        // v2 with a trust epoch.
        let h2 = sign_request_with_epoch(
            &req,
            "a.test",
            "k_node_sign_a",
            &key(),
            now(),
            &[2; 16],
            Some("7"),
        );
        let d = check_delivery(&req, &h2, &mut nonces, &ctx, &SpecInbound).unwrap();
        assert_eq!(
            (d.request.form, d.request.trust_epoch.as_deref()),
            (SigningForm::V2, Some("7"))
        );
    }

    #[test]
    fn each_stage_refuses_with_its_own_error() {
        let b = body();
        let req = RequestParts {
            method: "POST",
            path: DELIVER_PATH,
            body: &b,
        };
        let keys = keys();
        let open = FederationPolicy::open();
        let blocked = FederationPolicy::new(PolicyMode::Open, &[], &["a.test"]).unwrap();
        let h = sign_request(&req, "a.test", "k_node_sign_a", &key(), now(), &[1; 16]);
        let run = |policy: &FederationPolicy, h: &SignedHeaders, body: &[u8]| {
            let ctx = InboundContext {
                keys: &keys,
                policy,
                limits: WrapperLimits::default(),
                now: now(),
            };
            let req = RequestParts {
                method: "POST",
                path: DELIVER_PATH,
                body,
            };
            check_delivery(
                &req,
                h,
                &mut MemoryNonceCache::default(),
                &ctx,
                &SpecInbound,
            )
            .unwrap_err()
        };
        let e = run(&blocked, &h, &b);
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::CapabilityDenied, "X-LOOM-Node")
        );
        let mut unknown = h.clone();
        unknown.node = "c.test".into();
        assert_eq!(run(&open, &unknown, &b).field, "X-LOOM-Node");
        let mut kid = h.clone();
        kid.key_id = "k_other".into();
        assert_eq!(run(&open, &kid, &b).field, "X-LOOM-Key-Id");
        // A body signed correctly but claiming another sender.
        let other = String::from_utf8(b.clone())
            .unwrap()
            .replace("\"sender_node\":\"a.test\"", "\"sender_node\":\"b.test\"");
        let req2 = RequestParts {
            method: "POST",
            path: DELIVER_PATH,
            body: other.as_bytes(),
        };
        let h2 = sign_request(&req2, "a.test", "k_node_sign_a", &key(), now(), &[3; 16]);
        let e = run(&open, &h2, other.as_bytes());
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::SignatureInvalid, "sender_node")
        );
    }
}
