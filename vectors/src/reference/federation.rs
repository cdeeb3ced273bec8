//! Area `federation` through `loom_protocol::federation` and `loom_protocol::http_sig`
//! (v1.1 §15.2–§15.6, §11.6; DESIGN.md §9). Each handler maps the inputs onto one rule and
//! writes the outputs `vectors/kinds/federation.md` documents.

use super::delegation_chain::timestamp;
use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::ProtocolError;
use loom_protocol::federation::authority::check_sender_authority;
use loom_protocol::federation::identity::verify_identity_document;
use loom_protocol::federation::inbound::{InboundContext, check_delivery};
use loom_protocol::federation::node_document::{
    KeyStatus, NodeKey, NodeKeys, missing_members, read_node_document,
};
use loom_protocol::federation::policy::{FederationPolicy, PolicyDecision, PolicyMode};
use loom_protocol::federation::receipt::{
    ReceiptExpectation, receipt_signing_text, verify_receipt,
};
use loom_protocol::federation::replication::stamp_federated_meta;
use loom_protocol::federation::retry::{
    AttemptResult, FailureKind, NextStep, RetryPolicy, after_failure, backoff_bounds,
    classify_response,
};
use loom_protocol::federation::wrapper::{DeliveryWrapper, WrapperLimits};
use loom_protocol::http_sig::{
    MemoryNonceCache, NonceCache, RequestParts, SignedHeaders, normalize_node, signing_string,
};
use loom_protocol::keys::public_key_from_b64url;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn refused(e: &ProtocolError) -> Answer {
    Answer::invalid(e.code.as_str(), e.to_string())
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a str, BadRequest> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("member {name:?} must be a string"))
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn u64_input(input: Input<'_>, name: &str) -> Result<u64, BadRequest> {
    input
        .value(name)?
        .as_u64()
        .ok_or_else(|| format!("input member {name:?} must be a non-negative integer"))
}

/// `node_keys` grouped by node.
fn keyring(input: Input<'_>) -> Result<BTreeMap<String, NodeKeys>, BadRequest> {
    let mut by_node: BTreeMap<String, Vec<NodeKey>> = BTreeMap::new();
    for k in input
        .value("node_keys")?
        .as_array()
        .ok_or("node_keys must be an array")?
    {
        let public_key = public_key_from_b64url(field(k, "public_key")?).map_err(|e| e.reason)?;
        by_node
            .entry(normalize_node(field(k, "node")?))
            .or_default()
            .push(NodeKey {
                key_id: field(k, "key_id")?.to_owned(),
                public_key,
                status: KeyStatus::parse(k.get("status").and_then(Value::as_str)),
            });
    }
    Ok(by_node
        .into_iter()
        .map(|(n, keys)| (n.clone(), NodeKeys::new(&n, keys)))
        .collect())
}

fn policy(v: Option<&Value>) -> Result<FederationPolicy, BadRequest> {
    let Some(p) = v else {
        return Ok(FederationPolicy::open());
    };
    let mode = PolicyMode::parse(field(p, "mode")?).ok_or("policy.mode is unknown")?;
    FederationPolicy::new(mode, &strings(p.get("allow")), &strings(p.get("block")))
}

fn decision(d: PolicyDecision) -> &'static str {
    match d {
        PolicyDecision::Accept => "accept",
        PolicyDecision::Quarantine => "quarantine",
    }
}

/// `parse-delivery-wrapper`.
pub fn parse_wrapper(input: Input<'_>) -> Result<Answer, BadRequest> {
    let now = timestamp(input.value("now")?, "now")?;
    let body = input.str("body")?;
    Ok(
        match DeliveryWrapper::parse_and_check(
            body.as_bytes(),
            &WrapperLimits::default(),
            input.str("header_node")?,
            now,
        ) {
            Ok(w) => Answer::valid(json!({
                "sender_node": w.sender_node,
                "delivery_id": w.delivery_id,
                "envelope_count": w.envelopes.len(),
            })),
            Err(e) => refused(&e),
        },
    )
}

/// `federation-signing-string`.
pub fn signing_string_kind(input: Input<'_>) -> Result<Answer, BadRequest> {
    let req = RequestParts {
        method: input.str("method")?,
        path: input.str("path")?,
        body: input.str("body")?.as_bytes(),
    };
    let epoch = input.opt("trust_epoch").and_then(Value::as_str);
    Ok(Answer::valid(signing_string(
        &req,
        input.str("timestamp")?,
        input.str("nonce")?,
        epoch,
    )))
}

/// `verify-delivery-request`.
pub fn verify_delivery(input: Input<'_>) -> Result<Answer, BadRequest> {
    let now = timestamp(input.value("now")?, "now")?;
    let body = input.str("body")?;
    let req = RequestParts {
        method: input.str("method")?,
        path: input.str("path")?,
        body: body.as_bytes(),
    };
    let headers = input
        .value("headers")?
        .as_object()
        .ok_or("headers must be an object")?;
    let headers = SignedHeaders::from_pairs(
        headers
            .iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))),
    );
    let mut seen = Vec::new();
    for s in input
        .opt("seen_nonces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        seen.push((
            timestamp(s.get("at").unwrap_or(&Value::Null), "seen_nonces[].at")?,
            normalize_node(field(s, "node")?),
            field(s, "nonce")?,
        ));
    }
    seen.sort();
    let mut nonces = MemoryNonceCache::default();
    for (at, node, nonce) in seen {
        nonces.check_and_insert(&node, nonce, at);
    }
    let keys = keyring(input)?;
    let policy = policy(input.opt("policy"))?;
    let ctx = InboundContext {
        keys: &keys,
        policy: &policy,
        limits: WrapperLimits::default(),
        now,
    };
    Ok(
        match check_delivery(
            &req,
            &headers,
            &mut nonces,
            &ctx,
            &loom_protocol::federation::SpecInbound,
        ) {
            Ok(d) => Answer::valid(json!({
                "form": d.request.form.as_str(),
                "trust_epoch": d.request.trust_epoch,
                "sender_node": d.wrapper.sender_node,
                "policy": decision(d.policy),
                "envelope_errors": d.authority.iter().map(|r| match r {
                    Ok(()) => Value::Null,
                    Err(e) => e.code.as_str().into(),
                }).collect::<Vec<_>>(),
            })),
            Err(e) => refused(&e),
        },
    )
}

/// `federation-receipt-text`.
pub fn receipt_text(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(match receipt_signing_text(input.value("receipt")?) {
        Ok(t) => Answer::valid(t),
        Err(e) => refused(&e),
    })
}

/// `verify-delivery-receipt`.
pub fn verify_delivery_receipt(input: Input<'_>) -> Result<Answer, BadRequest> {
    let delivery = input.value("delivery")?;
    let ids: Vec<String> = strings(delivery.get("envelope_ids"))
        .into_iter()
        .map(str::to_owned)
        .collect();
    let issuer = field(delivery, "issuer_node")?;
    let expect = ReceiptExpectation {
        delivery_id: delivery.get("delivery_id").and_then(Value::as_str),
        delivering_node: field(delivery, "delivering_node")?,
        issuer_node: issuer,
        envelope_ids: &ids,
    };
    let keys = keyring(input)?
        .remove(&normalize_node(issuer))
        .unwrap_or_else(|| NodeKeys::new(issuer, vec![]));
    Ok(
        match verify_receipt(input.value("receipt")?, &keys, &expect) {
            Ok(v) => Answer::valid(json!({
                "status": v.status.as_str(),
                "accepted_envelope_ids": v.accepted_envelope_ids,
            })),
            Err(e) => refused(&e),
        },
    )
}

/// `read-node-document`.
pub fn read_document(input: Input<'_>) -> Result<Answer, BadRequest> {
    let doc = input.value("document")?;
    Ok(match read_node_document(doc, input.str("node")?) {
        Ok(v) => {
            let (active, inactive): (Vec<&NodeKey>, Vec<&NodeKey>) = v
                .keys
                .keys
                .iter()
                .partition(|k| k.status == KeyStatus::Active);
            Answer::valid(json!({
                "domain": v.domain,
                "deliver_url": v.deliver_url,
                "identity_resolve_url": v.identity_resolve_url,
                "policy": v.policy,
                "active_keys": active.iter().map(|k| k.key_id.as_str()).collect::<Vec<_>>(),
                "inactive_keys": inactive.iter().map(|k| json!({"key_id": k.key_id, "status": k.status.as_str()})).collect::<Vec<_>>(),
                "missing": missing_members(doc),
            }))
        }
        Err(e) => refused(&e),
    })
}

/// `verify-identity-node-signature`.
pub fn verify_identity(input: Input<'_>) -> Result<Answer, BadRequest> {
    let home = input.str("home_node")?;
    let keys = keyring(input)?
        .remove(&normalize_node(home))
        .unwrap_or_else(|| NodeKeys::new(home, vec![]));
    Ok(
        match verify_identity_document(input.value("document")?, &keys) {
            Ok(v) => Answer::valid(json!({
                "id": v.id.to_string(),
                "signing_keys": v.signing_keys.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            })),
            Err(e) => refused(&e),
        },
    )
}

/// `check-sender-authority`.
pub fn sender_authority(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(
        match check_sender_authority(input.value("envelope")?, input.str("delivering_node")?) {
            Ok(()) => Answer::accepted(),
            Err(e) => refused(&e),
        },
    )
}

/// `federation-policy`.
pub fn federation_policy(input: Input<'_>) -> Result<Answer, BadRequest> {
    let p = policy(Some(input.value("policy")?))?;
    Ok(match p.decide(input.str("node")?) {
        Ok(d) => Answer::valid(decision(d)),
        Err(e) => refused(&e),
    })
}

fn retry_policy(input: Input<'_>) -> Result<RetryPolicy, BadRequest> {
    let p = input.value("retry_policy")?;
    let n = |k: &str| {
        p.get(k)
            .and_then(Value::as_i64)
            .ok_or_else(|| format!("retry_policy.{k} must be an integer"))
    };
    Ok(RetryPolicy {
        base_delay_ms: n("base_delay_ms")?,
        max_delay_ms: n("max_delay_ms")?,
        ttl_ms: n("ttl_ms")?,
    })
}

fn failures(input: Input<'_>) -> Result<u32, BadRequest> {
    u32::try_from(u64_input(input, "failures")?).map_err(|_| "failures is too large".to_owned())
}

/// `backoff-bounds`.
pub fn backoff(input: Input<'_>) -> Result<Answer, BadRequest> {
    let (lo, hi) = backoff_bounds(failures(input)?, &retry_policy(input)?);
    Ok(Answer::valid(json!({"min_ms": lo, "max_ms": hi})))
}

/// `retry-after-failure`.
pub fn retry(input: Input<'_>) -> Result<Answer, BadRequest> {
    let last = match input.str("last_failure")? {
        "unreachable" => FailureKind::Unreachable,
        "timeout" => FailureKind::Timeout,
        other => FailureKind::Transient(
            other
                .strip_prefix("http-")
                .and_then(|s| s.parse().ok())
                .ok_or("last_failure must be unreachable, timeout or http-NNN")?,
        ),
    };
    let step = after_failure(
        timestamp(input.value("queued_at")?, "queued_at")?,
        failures(input)?,
        last,
        timestamp(input.value("now")?, "now")?,
        &retry_policy(input)?,
        u64_input(input, "draw")?,
    );
    Ok(match step {
        NextStep::RetryAt(t) => Answer::valid(json!({"retry_at": t.to_rfc3339()})),
        NextStep::GiveUp(code) => Answer::invalid(code.as_str(), "the TTL has ended"),
    })
}

/// `classify-delivery-response`.
pub fn classify(input: Input<'_>) -> Result<Answer, BadRequest> {
    let status = u16::try_from(u64_input(input, "status")?).map_err(|_| "status is too large")?;
    Ok(
        match classify_response(status, input.opt("error_code").and_then(Value::as_str)) {
            AttemptResult::Delivered => Answer::valid("delivered"),
            AttemptResult::Retry(_) => Answer::valid("retry"),
            AttemptResult::Rejected(code) => {
                Answer::invalid(code.as_str(), "the answer ends the delivery")
            }
        },
    )
}

/// `federated-meta`.
pub fn federated_meta(input: Input<'_>) -> Result<Answer, BadRequest> {
    Ok(
        match stamp_federated_meta(input.opt("received_meta"), u64_input(input, "event_seq")?) {
            Ok(m) => Answer::valid(Value::Object(m)),
            Err(e) => refused(&e),
        },
    )
}
