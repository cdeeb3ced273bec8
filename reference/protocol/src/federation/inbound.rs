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
use crate::federation::node_document::{KeyLookup, NodeKeys};
use crate::federation::node_name::parse_node_name;
use crate::federation::policy::{FederationPolicy, PolicyDecision};
use crate::federation::wrapper::{DeliveryWrapper, WrapperLimits};
use crate::http_sig::{
    HEADER_KEY_ID, HEADER_NODE, NonceCache, NonceOutcome, RequestParts, SignedHeaders,
    VerifiedRequest, check_required_headers, verify_request_detailed,
};
use crate::time::Timestamp;

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

/// Deliberate departures from single MUST-level receiving checks, for a conformance
/// self-test node (DESIGN.md §4). All `false` in [`InboundDeviations::NONE`], the only value a
/// real node uses; each field names the rule it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InboundDeviations {
    /// Skip LOOM-HTTP-SIG-1 entirely: headers, key, signature, nonce (§15.3).
    pub accept_unsigned: bool,
    /// Neither check nor record the nonce (§15.3 "nonce replay prevented", §23.2).
    pub skip_nonce_cache: bool,
    /// Skip the ±5 minute freshness of the request and wrapper timestamps (§15.5).
    pub accept_stale_timestamp: bool,
    /// Accept a wrapper `sender_node` other than `X-LOOM-Node` (DESIGN.md §9, §15.4).
    pub ignore_sender_node_mismatch: bool,
    /// Verify with a published node key that is not active (§15.3, v1.0 §7.4).
    pub accept_inactive_node_key: bool,
    /// Accept envelopes whose sender is not hosted by the delivering node (loom-core-1).
    pub accept_foreign_sender: bool,
    /// Do not enforce the federation policy (§15.2, §23.1).
    pub ignore_policy: bool,
    /// Accept more than 100 envelopes per wrapper (§15.4 bound, DESIGN.md §9).
    pub ignore_wrapper_limit: bool,
    /// Refuse a valid five-line signature when `X-LOOM-Trust-Epoch` is present (§15.3 defines
    /// only the five-line form; the existing node sends that form beside the header).
    pub require_signed_trust_epoch: bool,
}

impl InboundDeviations {
    /// The specification: no deviation.
    pub const NONE: InboundDeviations = InboundDeviations {
        accept_unsigned: false,
        skip_nonce_cache: false,
        accept_stale_timestamp: false,
        ignore_sender_node_mismatch: false,
        accept_inactive_node_key: false,
        accept_foreign_sender: false,
        ignore_policy: false,
        ignore_wrapper_limit: false,
        require_signed_trust_epoch: false,
    };
}

/// A nonce cache that remembers nothing ([`InboundDeviations::skip_nonce_cache`]).
#[derive(Debug, Clone, Copy, Default)]
struct NoNonces;

impl NonceCache for NoNonces {
    fn check_and_insert(&mut self, _: &str, _: &str, _: Timestamp) -> NonceOutcome {
        NonceOutcome::Fresh
    }
}

/// Runs steps 1–6 of the module docs.
pub fn check_delivery(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    nonces: &mut dyn NonceCache,
    ctx: &InboundContext<'_>,
) -> Result<CheckedDelivery, ProtocolError> {
    check_delivery_with(req, headers, nonces, ctx, &InboundDeviations::NONE)
}

/// [`check_delivery`] with deviations (a real node passes [`InboundDeviations::NONE`]).
pub fn check_delivery_with(
    req: &RequestParts<'_>,
    headers: &SignedHeaders,
    nonces: &mut dyn NonceCache,
    ctx: &InboundContext<'_>,
    dev: &InboundDeviations,
) -> Result<CheckedDelivery, ProtocolError> {
    let mut limits = ctx.limits;
    if dev.ignore_wrapper_limit {
        limits.max_envelopes = usize::MAX;
    }
    if dev.accept_unsigned {
        let wrapper = DeliveryWrapper::parse(req.body, &limits)?;
        let node = parse_node_name(&wrapper.sender_node)
            .map_err(|why| ProtocolError::invalid("sender_node", why, "v1.1 §15.4"))?;
        let authority = authority_of(&wrapper, &node, dev);
        return Ok(CheckedDelivery {
            request: VerifiedRequest {
                node,
                form: crate::http_sig::SigningForm::V1,
                trust_epoch: None,
                timestamp: ctx.now,
            },
            policy: PolicyDecision::Accept,
            wrapper,
            authority,
        });
    }
    check_required_headers(headers)?;
    let node = parse_node_name(&headers.node).map_err(|why| {
        ProtocolError::new(
            ErrorCode::SignatureInvalid,
            HEADER_NODE,
            format!("X-LOOM-Node {:?}: {why}", headers.node),
            "v1.1 §15.3",
        )
    })?;
    let policy = if dev.ignore_policy {
        PolicyDecision::Accept
    } else {
        ctx.policy.decide(&node)?
    };
    let keys = ctx.keys.node_keys(&node).ok_or_else(|| {
        ProtocolError::new(
            ErrorCode::SignatureInvalid,
            HEADER_NODE,
            format!("no node document is known for {node:?}"),
            "v1.1 §15.2, §15.3",
        )
    })?;
    let inactive = match keys.lookup(&headers.key_id) {
        KeyLookup::NotActive(_) if dev.accept_inactive_node_key => keys
            .keys
            .iter()
            .find(|k| k.key_id == headers.key_id)
            .map(|k| &k.public_key),
        _ => None,
    };
    let key = match inactive {
        Some(k) => k,
        None => keys.active_key(&headers.key_id, HEADER_KEY_ID)?,
    };
    // A stale request is judged as of its own timestamp under the deviation.
    let now = match (
        dev.accept_stale_timestamp,
        Timestamp::parse(&headers.timestamp),
    ) {
        (true, Ok(t)) => t,
        _ => ctx.now,
    };
    let mut none = NoNonces;
    let nonces: &mut dyn NonceCache = if dev.skip_nonce_cache {
        &mut none
    } else {
        nonces
    };
    let request = verify_request_detailed(req, headers, key, nonces, now)?;
    if dev.require_signed_trust_epoch
        && headers.trust_epoch.is_some()
        && request.trust_epoch.is_none()
    {
        return Err(ProtocolError::new(
            ErrorCode::SignatureInvalid,
            crate::http_sig::HEADER_SIGNATURE,
            "X-LOOM-Trust-Epoch is present but the signature covers five lines",
            "v1.1 §15.3",
        ));
    }
    let wrapper = DeliveryWrapper::parse(req.body, &limits)?;
    let check_node = if dev.ignore_sender_node_mismatch {
        wrapper.sender_node.clone()
    } else {
        node.clone()
    };
    let wrapper_now = if dev.accept_stale_timestamp {
        Timestamp::parse(&wrapper.timestamp_text).unwrap_or(now)
    } else {
        now
    };
    wrapper.check(&check_node, wrapper_now)?;
    let authority = authority_of(&wrapper, &node, dev);
    Ok(CheckedDelivery {
        request,
        policy,
        wrapper,
        authority,
    })
}

fn authority_of(
    wrapper: &DeliveryWrapper,
    node: &str,
    dev: &InboundDeviations,
) -> Vec<Result<(), ProtocolError>> {
    wrapper
        .envelopes
        .iter()
        .map(|e| {
            if dev.accept_foreign_sender {
                Ok(())
            } else {
                check_sender_authority(e, node)
            }
        })
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
        let d = check_delivery(&req, &h, &mut nonces, &ctx).unwrap();
        assert_eq!(d.request.form, SigningForm::V1);
        assert_eq!(d.policy, PolicyDecision::Accept);
        assert!(d.authority[0].is_ok());
        assert_eq!(
            d.authority[1].as_ref().unwrap_err().code,
            ErrorCode::CapabilityDenied
        );
        // Replayed: refused.
        assert_eq!(
            check_delivery(&req, &h, &mut nonces, &ctx)
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
        let d = check_delivery(&req, &h2, &mut nonces, &ctx).unwrap();
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
            check_delivery(&req, h, &mut MemoryNonceCache::default(), &ctx).unwrap_err()
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
