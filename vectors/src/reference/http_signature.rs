//! LOOM-HTTP-SIG-1 (v1.1 §15.3–§15.5, DESIGN.md §9) through `loom_protocol::http_sig`.

use super::{BadRequest, Input};
use crate::protocol::Answer;
use loom_protocol::Timestamp;
use loom_protocol::clock::FixedClock;
use loom_protocol::http_sig::{
    MemoryNonceCache, NonceCache, RequestParts, SignedHeaders, canonical_string,
    check_wrapper_sender, normalize_node, verify_request,
};
use loom_protocol::keys::public_key_from_b64url;
use serde_json::Value;

const BAD: &str = "SIGNATURE_INVALID";

fn time(s: &str) -> Result<Timestamp, BadRequest> {
    Timestamp::parse(s).map_err(|e| format!("timestamp {s:?}: {e}"))
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a str, BadRequest> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("member {name:?} must be a string"))
}

/// The headers, looked up case-insensitively (RFC 9110 §5.1); an absent required one is
/// empty, which `verify_request` rejects as missing.
fn headers(input: Input<'_>) -> Result<SignedHeaders, BadRequest> {
    let map = input
        .value("headers")?
        .as_object()
        .ok_or("input member \"headers\" must be an object")?;
    Ok(SignedHeaders::from_pairs(
        map.iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))),
    ))
}

/// The replay cache as the receiver left it: `seen_nonces` recorded in time order.
fn cache(input: Input<'_>) -> Result<MemoryNonceCache, BadRequest> {
    let mut seen = Vec::new();
    for s in input
        .opt("seen_nonces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        seen.push((
            time(field(s, "at")?)?,
            normalize_node(field(s, "node")?),
            field(s, "nonce")?,
        ));
    }
    seen.sort();
    let mut cache = MemoryNonceCache::default();
    for (at, node, nonce) in seen {
        cache.check_and_insert(&node, nonce, at);
    }
    Ok(cache)
}

/// `verify-http-signature`: the receiver's verdict on a signed federation request.
pub fn verify(input: Input<'_>) -> Result<Answer, BadRequest> {
    let body = input.str("body")?;
    let req = RequestParts {
        method: input.str("method")?,
        path: input.str("path")?,
        body: body.as_bytes(),
    };
    let h = headers(input)?;
    let now = time(input.str("now")?)?;
    let mut nonces = cache(input)?;
    let node = normalize_node(&h.node);
    let keys = input
        .value("node_keys")?
        .as_array()
        .ok_or("node_keys must be an array")?;
    let mut key = None;
    for k in keys {
        if normalize_node(field(k, "node")?) == node && field(k, "key_id")? == h.key_id {
            key = Some(public_key_from_b64url(field(k, "public_key")?).map_err(|e| e.reason)?);
        }
    }
    let Some(key) = key else {
        if let Some((name, _)) = h.pairs().into_iter().find(|(_, v)| v.is_empty()) {
            return Ok(Answer::invalid(BAD, format!("{name} is required")));
        }
        return Ok(Answer::invalid(
            BAD,
            format!("no key {:?} in the node document of {:?}", h.key_id, h.node),
        ));
    };
    if let Err(e) = verify_request(&req, &h, &key, &mut nonces, &FixedClock(now)) {
        return Ok(Answer::invalid(e.code.as_str(), e.to_string()));
    }
    if let Some(wrapper) = serde_json::from_str::<Value>(body).ok()
        && let Err(e) = check_wrapper_sender(&wrapper, &h.node)
    {
        return Ok(Answer::invalid(e.code.as_str(), e.to_string()));
    }
    Ok(Answer::accepted())
}

/// `http-signature-string`: the exact text LOOM-HTTP-SIG-1 signs.
pub fn signing_string(input: Input<'_>) -> Result<Answer, BadRequest> {
    let req = RequestParts {
        method: input.str("method")?,
        path: input.str("path")?,
        body: input.str("body")?.as_bytes(),
    };
    Ok(Answer::valid(canonical_string(
        &req,
        input.str("timestamp")?,
        input.str("nonce")?,
    )))
}
