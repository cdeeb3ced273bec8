//! The legal variants and their shim handlers. Each handler passes every request it does not
//! concern through unchanged; what it changes is exactly the variant's one choice.

use super::shim::{Shim, bearer, edit_json, is, join, json_reply, reply, respond, split, under};
use super::{Handler, Variant};
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

macro_rules! handler {
    ($f:ident) => {{
        let h: Handler = |s, r, n| Box::pin($f(s, r, n));
        h
    }};
}

/// Buffers a request; `check` sees its JSON body and may answer in the node's place
/// (`Some`) or let it through, edited or not (`None`). Bodies that are not JSON pass as sent.
async fn gate(
    req: Request,
    next: Next,
    check: impl FnOnce(&mut Value) -> Option<Response>,
) -> Response {
    let (parts, bytes) = split(req).await;
    let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
        return next.run(join(parts, bytes)).await;
    };
    let before = v.clone();
    if let Some(r) = check(&mut v) {
        return r;
    }
    let body: Bytes = if v == before {
        bytes
    } else {
        serde_json::to_vec(&v).unwrap_or_default().into()
    };
    next.run(join(parts, body)).await
}

fn node_document(req: &Request) -> bool {
    is(req, "GET", "/.well-known/loom.json")
}

fn ok(status: u16) -> bool {
    (200..300).contains(&status)
}

// ----- node document (v1.1 §15.2) -----

async fn federation_keys(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !node_document(&req) {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |d| {
        if let Some(k) = d.as_object_mut().and_then(|o| o.remove("signing_keys")) {
            d["federation"]["signing_keys"] = k;
        }
    })
    .await
}

async fn pem_node_keys(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !node_document(&req) {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |d| {
        for at in ["/signing_keys", "/federation/signing_keys"] {
            let Some(keys) = d.pointer_mut(at).and_then(Value::as_array_mut) else {
                continue;
            };
            for k in keys.iter_mut().filter_map(Value::as_object_mut) {
                let pem = k
                    .remove("public_key")
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .and_then(|b| loom_protocol::keys::public_key_from_b64url(&b).ok())
                    .map(|vk| loom_protocol::keys::public_key_to_spki_pem(&vk));
                if let Some(pem) = pem {
                    k.insert("public_key_pem".into(), pem.into());
                }
            }
        }
    })
    .await
}

async fn flat_federation(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !node_document(&req) {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |d| {
        if let Some(f) = d.as_object_mut().and_then(|o| o.remove("federation")) {
            d["deliver_url"] = f["deliver_url"].clone();
            d["federation_requirements"] = f["requirements"].clone();
            d["federation_policy"] = f["policy"].clone();
        }
    })
    .await
}

async fn loom_version(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !node_document(&req) {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |d| {
        if let Some(o) = d.as_object_mut() {
            o.remove("supported_versions");
            o.insert("loom_version".into(), "1.1".into());
        }
    })
    .await
}

// ----- optional routes -----

async fn no_identity_me(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "GET", "/v1/identity/me") || is(&req, "PATCH", "/v1/identity/me") {
        return s.error(
            "EXTENSION_DISABLED",
            "$path",
            "this node serves no /v1/identity/me",
        );
    }
    next.run(req).await
}

async fn no_retraction(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if under(&req, "DELETE", "/v1/envelopes/") {
        return s.error(
            "EXTENSION_DISABLED",
            "$path",
            "this node does not offer retraction (DELETE /v1/envelopes/{id})",
        );
    }
    if is(&req, "GET", "/v1/protocol/capabilities") {
        return edit_json(next, req, ok, |c| {
            if let Some(l) = c["limits"].as_object_mut() {
                l.remove("retract_window_secs");
            }
        })
        .await;
    }
    next.run(req).await
}

async fn no_capabilities_document(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "GET", "/v1/protocol/capabilities") {
        return s.error(
            "EXTENSION_DISABLED",
            "$path",
            "this node publishes no capabilities document",
        );
    }
    next.run(req).await
}

// ----- envelopes -----

fn post_envelope(req: &Request) -> bool {
    is(req, "POST", "/v1/envelopes")
}

async fn message_intents(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    gate(req, next, |env| {
        let intent = env
            .pointer("/content/structured/intent")
            .and_then(Value::as_str);
        match intent {
            Some(i) if env["type"] == "message" && !i.starts_with("message.") => Some(s.error(
                "ENVELOPE_INVALID",
                "content.structured.intent",
                "a message carries a message.* intent on this node",
            )),
            _ => None,
        }
    })
    .await
}

async fn custom_audience_covers_recipients(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    gate(req, next, |env| {
        if env.pointer("/audience/mode").and_then(Value::as_str) != Some("custom") {
            return None;
        }
        let mut allowed: Vec<&str> = env["audience"]["identities"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        allowed.extend(env.pointer("/from/identity").and_then(Value::as_str));
        let outside = env["to"].as_array().is_some_and(|to| {
            to.iter().any(|r| {
                r["identity"]
                    .as_str()
                    .is_some_and(|i| !allowed.contains(&i))
            })
        });
        outside.then(|| {
            s.error(
                "ENVELOPE_INVALID",
                "to",
                "a custom-audience envelope is addressed only to identities of its audience on this node",
            )
        })
    })
    .await
}

async fn missing_signature(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    gate(req, next, |env| {
        (env.is_object() && env.get("signature").is_none()).then(|| {
            s.error(
                "ENVELOPE_INVALID",
                "signature",
                "signature is a required member (v1.1 §8.2)",
            )
        })
    })
    .await
}

async fn signature_failure_envelope_invalid(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    let (parts, bytes) = respond(next, req).await;
    let failed = parts.status == StatusCode::UNAUTHORIZED
        && serde_json::from_slice::<Value>(&bytes)
            .is_ok_and(|v| v["error"]["code"] == "SIGNATURE_INVALID");
    if !failed {
        return reply(parts, bytes);
    }
    s.error(
        "ENVELOPE_INVALID",
        "signature",
        "Envelope signature verification failed",
    )
}

async fn padded_signatures(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    gate(req, next, |env| {
        if let Some(v) = env.pointer("/signature/value").and_then(Value::as_str)
            && v.ends_with('=')
        {
            // This node decodes base64url with or without padding (RFC 4648 §3.2).
            env["signature"]["value"] = v.trim_end_matches('=').into();
        }
        None
    })
    .await
}

async fn invalid_utf8_signature_invalid(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !post_envelope(&req) {
        return next.run(req).await;
    }
    let (parts, bytes) = split(req).await;
    if std::str::from_utf8(&bytes).is_err() {
        return s.error(
            "SIGNATURE_INVALID",
            "$body",
            "a body that is not UTF-8 cannot be the signed canonical form",
        );
    }
    next.run(join(parts, bytes)).await
}

async fn envelope_wrapped(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    let get_one = under(&req, "GET", "/v1/envelopes/");
    if !(get_one || post_envelope(&req)) {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |v| *v = json!({"envelope": v.clone()})).await
}

// ----- threads and lists -----

/// The thread id in `/v1/threads/{id}[/…]`.
fn thread_in_path(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/threads/")
        .map(|r| r.split('/').next().unwrap_or(r))
        .filter(|t| !t.is_empty())
}

async fn thread_existence_hidden(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if post_envelope(&req) {
        let (parts, bytes) = split(req).await;
        let thread = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["thread_id"].as_str().map(str::to_owned));
        let (rp, rb) = respond(next, join(parts, bytes)).await;
        if let Some(t) = thread.filter(|_| ok(rp.status.as_u16())) {
            s.remember(|m| m.threads.insert(t));
        }
        return reply(rp, rb);
    }
    let thread = (req.method().as_str() == "GET")
        .then(|| thread_in_path(req.uri().path()).map(str::to_owned))
        .flatten();
    let (rp, rb) = respond(next, req).await;
    match thread {
        Some(t) if rp.status == StatusCode::NOT_FOUND && s.remember(|m| m.threads.contains(&t)) => {
            s.error(
                "AUDIENCE_DENIED",
                "thread_id",
                "the caller is not a participant of this thread",
            )
        }
        _ => reply(rp, rb),
    }
}

async fn bare_lists(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let list = match req.method().as_str() {
        "GET" if path == "/v1/threads" => Some("threads"),
        "GET" if path.starts_with("/v1/threads/") && path.ends_with("/envelopes") => {
            Some("envelopes")
        }
        "GET" if path == "/v1/delegations" => Some("delegations"),
        "GET" if path == "/v1/capabilities" => Some("capabilities"),
        _ => None,
    };
    let Some(name) = list else {
        return next.run(req).await;
    };
    edit_json(next, req, ok, |v| {
        let items = v.get(name).cloned().or_else(|| {
            v.as_object()
                .and_then(|o| o.values().find(|x| x.is_array()).cloned())
        });
        if let Some(items) = items {
            *v = items;
        }
    })
    .await
}

async fn search_results(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "GET", "/v1/search") {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |v| {
        let mut results = Vec::new();
        for (kind, list) in [("envelope", "envelopes"), ("thread", "threads")] {
            for item in v[list].as_array().into_iter().flatten() {
                let mut hit = Map::new();
                hit.insert("kind".into(), kind.into());
                if let Some(o) = item.as_object() {
                    hit.extend(o.clone());
                }
                results.push(Value::Object(hit));
            }
        }
        *v = json!({"total": results.len(), "results": results});
    })
    .await
}

/// Whether `q` has the shape of an intent (`namespace.name@vN`, §9.2).
fn intent_shaped(q: &str) -> bool {
    q.rsplit_once("@v").is_some_and(|(name, v)| {
        name.contains('.')
            && !name.contains("://")
            && !v.is_empty()
            && v.bytes().all(|b| b.is_ascii_digit())
    })
}

async fn search_intent_filter(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "GET", "/v1/search") {
        return next.run(req).await;
    }
    let query = req.uri().query().unwrap_or_default().to_owned();
    let pairs: Vec<(&str, &str)> = query.split('&').filter_map(|p| p.split_once('=')).collect();
    if let Some((_, intent)) = pairs.iter().find(|(k, _)| *k == "intent") {
        // The filter: the node's own search for the intent.
        let (mut parts, body) = req.into_parts();
        parts.uri = format!("/v1/search?q={intent}")
            .parse()
            .unwrap_or(parts.uri);
        return next.run(Request::from_parts(parts, body)).await;
    }
    let full_text_intent = pairs
        .iter()
        .any(|(k, v)| *k == "q" && intent_shaped(&crate::peer::server::percent_decode(v)));
    if !full_text_intent {
        return next.run(req).await;
    }
    // Full text does not index intents here: no hits.
    edit_json(next, req, ok, |v| {
        if let Some(o) = v.as_object_mut() {
            for (k, m) in o.iter_mut() {
                if m.is_array() {
                    *m = json!([]);
                } else if k == "total" {
                    *m = json!(0);
                }
            }
        }
    })
    .await
}

async fn events_renamed(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "GET", "/v1/events") {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |v| {
        for e in v["events"].as_array_mut().into_iter().flatten() {
            if let Some(o) = e.as_object_mut() {
                if let Some(id) = o.remove("id") {
                    o.insert("event_id".into(), id);
                }
                if let Some(p) = o.remove("payload") {
                    o.insert("data".into(), p);
                }
            }
        }
    })
    .await
}

// ----- errors and statuses -----

async fn idempotency_conflict(s: Arc<Shim>, req: Request, next: Next) -> Response {
    let key = req
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let Some(key) = key.filter(|_| req.method().as_str() == "POST") else {
        return next.run(req).await;
    };
    let (parts, bytes) = split(req).await;
    let scope = (
        bearer(&parts).unwrap_or_default(),
        parts.uri.path().to_owned(),
        key,
    );
    let conflict = s.remember(|m| match m.idempotency.get(&scope) {
        Some(first) => first != &bytes,
        None => {
            m.idempotency.insert(scope, bytes.clone());
            false
        }
    });
    if conflict {
        return s.error(
            "ENVELOPE_DUPLICATE",
            "Idempotency-Key",
            "this Idempotency-Key was used with a different request",
        );
    }
    next.run(join(parts, bytes)).await
}

async fn wrong_content_type_400(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    let (mut parts, bytes) = respond(next, req).await;
    if parts.status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        parts.status = StatusCode::BAD_REQUEST;
    }
    reply(parts, bytes)
}

async fn success_200(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    let mut r = next.run(req).await;
    if r.status() == StatusCode::CREATED {
        *r.status_mut() = StatusCode::OK;
    }
    r
}

async fn error_details_minimal(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    edit_json(
        next,
        req,
        |st| st >= 400,
        |v| {
            if let Some(e) = v["error"].as_object_mut() {
                e.insert("details".into(), json!({}));
            }
        },
    )
    .await
}

async fn content_type_spelling(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    let mut r = next.run(req).await;
    let json = r
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json {
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/JSON;Charset=UTF-8"),
        );
    }
    r
}

// ----- identity, registration, auth -----

async fn duplicate_registration_at_challenge(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "POST", "/v1/identity/challenge") {
        return gate(req, next, |b| {
            let id = b["identity"].as_str()?.to_ascii_lowercase();
            s.remember(|m| m.registered.contains(&id)).then(|| {
                s.error(
                    "ENVELOPE_DUPLICATE",
                    "identity",
                    "this address is already registered",
                )
            })
        })
        .await;
    }
    if is(&req, "POST", "/v1/identity") {
        let (parts, bytes) = split(req).await;
        let id = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_ascii_lowercase));
        let (rp, rb) = respond(next, join(parts, bytes)).await;
        if let Some(id) = id.filter(|_| ok(rp.status.as_u16())) {
            s.remember(|m| m.registered.insert(id));
        }
        return reply(rp, rb);
    }
    next.run(req).await
}

async fn agent_info_complete(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "POST", "/v1/identity") {
        return next.run(req).await;
    }
    gate(req, next, |doc| {
        let info = &doc["agent_info"];
        let complete = ["provider", "model", "version"]
            .iter()
            .all(|m| info[*m].as_str().is_some_and(|s| !s.is_empty()));
        (doc["type"] == "agent" && info.is_object() && !complete).then(|| {
            s.error(
                "ENVELOPE_INVALID",
                "agent_info",
                "agent_info needs provider, model and version on this node",
            )
        })
    })
    .await
}

async fn pem_trimmed(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "POST", "/v1/identity") {
        return next.run(req).await;
    }
    gate(req, next, |doc| {
        for k in doc["signing_keys"].as_array_mut().into_iter().flatten() {
            if let Some(p) = k["public_key_pem"].as_str().map(|p| p.trim().to_owned()) {
                k["public_key_pem"] = p.into();
            }
        }
        None
    })
    .await
}

/// The invitation the `registration-invite` variant's node asks for.
const INVITE: &str = "conformance-selftest";

async fn registration_invite(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "POST", "/v1/identity") {
        return next.run(req).await;
    }
    gate(req, next, |doc| {
        if doc["invite_code"] != INVITE {
            return Some(s.error(
                "CAPABILITY_DENIED",
                "invite_code",
                "registration needs an invite_code on this node",
            ));
        }
        if let Some(o) = doc.as_object_mut() {
            o.remove("invite_code");
        }
        None
    })
    .await
}

async fn identity_document_shape(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !under(&req, "GET", "/v1/identity/") {
        return next.run(req).await;
    }
    edit_json(next, req, ok, |doc| {
        let Some(keys) = doc
            .pointer("/public_keys/signing")
            .and_then(Value::as_array)
        else {
            return;
        };
        let listed: Vec<Value> = keys
            .iter()
            .map(|k| {
                let pem = k["public_key"]
                    .as_str()
                    .and_then(|p| loom_protocol::keys::b64url_decode(p).ok())
                    .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
                    .and_then(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).ok())
                    .map(|key| crate::ctx::provision::pem(&key));
                json!({"key_id": k["key_id"], "public_key_pem": pem, "status": k["status"]})
            })
            .collect();
        let enc = doc["public_keys"]["encryption"].clone();
        if let Some(o) = doc.as_object_mut() {
            o.remove("public_keys");
            o.insert("signing_keys".into(), Value::Array(listed));
            o.insert("encryption_keys".into(), enc);
        }
    })
    .await
}

/// The opaque token this node hands out for the reference node's `real` one.
fn opaque(real: &str) -> String {
    format!(
        "tok.{}",
        &hex::encode(Sha256::digest(real.as_bytes()))[..48]
    )
}

async fn opaque_tokens(s: Arc<Shim>, req: Request, next: Next) -> Response {
    let (mut parts, mut bytes) = split(req).await;
    if let Some(alias) = bearer(&parts)
        && let Some(real) = s.remember(|m| m.tokens.get(&alias).cloned())
        && let Ok(v) = HeaderValue::from_str(&format!("Bearer {real}"))
    {
        parts.headers.insert(header::AUTHORIZATION, v);
    }
    // The WebSocket upgrade carries the token in `?token=` (v1.1 §17).
    if let Some(q) = parts.uri.query()
        && let Some(alias) = q.split('&').find_map(|kv| kv.strip_prefix("token="))
        && let Some(real) = s.remember(|m| m.tokens.get(alias).cloned())
        && let Ok(uri) = format!("{}?{}", parts.uri.path(), q.replace(alias, &real)).parse()
    {
        parts.uri = uri;
    }
    let path = parts.uri.path().to_owned();
    let issuing =
        parts.method.as_str() == "POST" && (path == "/v1/auth/token" || path == "/v1/auth/refresh");
    if path == "/v1/auth/refresh"
        && let Ok(mut b) = serde_json::from_slice::<Value>(&bytes)
        && let Some(alias) = b["refresh_token"].as_str().map(str::to_owned)
        && let Some(real) = s.remember(|m| m.tokens.get(&alias).cloned())
    {
        b["refresh_token"] = real.into();
        bytes = serde_json::to_vec(&b).unwrap_or_default().into();
    }
    let (rp, rb) = respond(next, join(parts, bytes)).await;
    if !(issuing && ok(rp.status.as_u16())) {
        return reply(rp, rb);
    }
    let Ok(mut v) = serde_json::from_slice::<Value>(&rb) else {
        return reply(rp, rb);
    };
    for member in ["access_token", "refresh_token"] {
        if let Some(real) = v[member].as_str().map(str::to_owned) {
            let alias = opaque(&real);
            s.remember(|m| m.tokens.insert(alias.clone(), real));
            v[member] = alias.into();
        }
    }
    reply(rp, serde_json::to_vec(&v).unwrap_or_default())
}

async fn challenge_member(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "POST", "/v1/auth/challenge") {
        return edit_json(next, req, ok, |v| {
            if let Some(o) = v.as_object_mut()
                && let Some(id) = o.remove("challenge_id")
            {
                o.insert("challenge".into(), id);
            }
        })
        .await;
    }
    if is(&req, "POST", "/v1/auth/token") {
        return gate(req, next, |b| {
            if !b["challenge"].is_string() {
                return Some(s.error(
                    "ENVELOPE_INVALID",
                    "challenge",
                    "the token request names its challenge in `challenge` (v1.1 §14.2)",
                ));
            }
            if let Some(o) = b.as_object_mut() {
                o.remove("challenge_id");
            }
            None
        })
        .await;
    }
    next.run(req).await
}

// ----- blobs (v1.1 §16.7) -----

async fn blob_json_transfer(s: Arc<Shim>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let method = req.method().as_str().to_owned();
    if method == "PUT" && path.starts_with("/v1/blobs/") && path.contains("/parts/") {
        let (mut parts, bytes) = split(req).await;
        let data = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["data_base64"].as_str().map(str::to_owned))
            .and_then(|d| STANDARD.decode(d).ok());
        let Some(data) = data else {
            return s.error(
                "ENVELOPE_INVALID",
                "data_base64",
                "blob parts are JSON {\"data_base64\": …} on this node",
            );
        };
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/octet-stream"),
        );
        return next.run(join(parts, data)).await;
    }
    let download =
        method == "GET" && path.starts_with("/v1/blobs/") && path.matches('/').count() == 3;
    if !download {
        return next.run(req).await;
    }
    let id = path.rsplit('/').next().unwrap_or_default().to_owned();
    let (rp, rb) = respond(next, req).await;
    if !ok(rp.status.as_u16()) {
        return reply(rp, rb);
    }
    let mime = rp
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream");
    json_reply(
        200,
        &json!({
            "blob_id": id,
            "mime_type": mime,
            "size_bytes": rb.len(),
            "data_base64": STANDARD.encode(&rb),
        }),
    )
}

async fn blob_size_declared(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(&req, "POST", "/v1/blobs") {
        return next.run(req).await;
    }
    gate(req, next, |b| {
        (b.is_object() && !b["size_bytes"].is_u64()).then(|| {
            s.error(
                "ENVELOPE_INVALID",
                "size_bytes",
                "an upload declares its size_bytes on this node",
            )
        })
    })
    .await
}

// ----- federation delivery answers (v1.1 §15.4) -----

/// Error fields that name a part of an envelope (not a header or a wrapper member): the
/// refusal was about the envelopes, not the request.
fn envelope_field(field: &str) -> bool {
    const ROOTS: [&str; 16] = [
        "from",
        "content",
        "to",
        "cc",
        "bcc",
        "audience",
        "created_at",
        "thread_id",
        "parent_id",
        "type",
        "signature",
        "id",
        "attachments",
        "priority",
        "expires_at",
        "meta",
    ];
    let root = field.split(['.', '[']).next().unwrap_or("");
    ROOTS.contains(&root)
}

async fn delivery_refusals_in_receipt(_s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(
        &req,
        "POST",
        loom_protocol::federation::wrapper::DELIVER_PATH,
    ) {
        return next.run(req).await;
    }
    let (parts, bytes) = split(req).await;
    let ids: Vec<Value> = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|w| w["envelopes"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|e| e["id"].clone())
        .collect();
    let (rparts, rbytes) = respond(next, join(parts, bytes)).await;
    let status = rparts.status.as_u16();
    let err: Value = serde_json::from_slice(&rbytes).unwrap_or(Value::Null);
    let field = err["error"]["details"]["field"].as_str().unwrap_or("");
    if !(400..500).contains(&status) || !envelope_field(field) {
        return reply(rparts, rbytes);
    }
    let rejected: Vec<Value> = ids
        .into_iter()
        .map(|id| json!({"envelope_id": id, "error": err["error"].clone()}))
        .collect();
    json_reply(
        202,
        &json!({"status": "rejected", "accepted_envelope_ids": [], "rejected": rejected}),
    )
}

// ----- delegation links (v1.1 §13.3.1) -----

/// Why the variant's node refuses `link`, if it does: a link by a delegator registered
/// through the shim that claims `signature_context` must verify over JCS(link − signature),
/// the member inside the signed bytes. Links by delegators the shim does not know (remote
/// ones) are left to the node.
fn link_refusal(s: &Shim, link: &Value) -> Option<String> {
    use loom_protocol::keys::{SigContext, signature_from_b64url, verify};
    if link["signature_context"] != SigContext::DELEGATION.0 {
        return None;
    }
    let delegator = link["delegator"].as_str()?.to_ascii_lowercase();
    let key_id = link["key_id"].as_str()?;
    let key = s.remember(|m| {
        m.signing_keys
            .get(&delegator)
            .and_then(|keys| keys.iter().find(|(k, _)| k == key_id).map(|(_, v)| *v))
    })?;
    let payload = loom_protocol::delegation::delegation_signing_payload_with_context(link)
        .unwrap_or_default();
    let signed = link["signature"]
        .as_str()
        .and_then(|v| signature_from_b64url(v).ok())
        .is_some_and(|sig| verify(&key, Some(SigContext::DELEGATION), &payload, &sig));
    (!signed).then(|| {
        "the delegation link's signature does not cover its signature_context member (this node reads v1.1 §13.3.1 that way)".to_owned()
    })
}

async fn link_context_signed(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "POST", "/v1/identity") {
        let (parts, bytes) = split(req).await;
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let (rparts, rbytes) = respond(next, join(parts, bytes)).await;
        if ok(rparts.status.as_u16())
            && let Some(id) = doc["id"].as_str()
        {
            let keys: Vec<(String, ed25519_dalek::VerifyingKey)> = doc["signing_keys"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| {
                    let material = k["public_key_pem"].as_str().or(k["public_key"].as_str())?;
                    let key = loom_protocol::keys::public_key_from_any(material).ok()?;
                    Some((k["key_id"].as_str()?.to_owned(), key))
                })
                .collect();
            s.remember(|m| m.signing_keys.insert(id.to_ascii_lowercase(), keys));
        }
        return reply(rparts, rbytes);
    }
    let stored_link = is(&req, "POST", "/v1/delegations");
    if !(stored_link || is(&req, "POST", "/v1/envelopes")) {
        return next.run(req).await;
    }
    gate(req, next, |v| {
        let links: Vec<Value> = if stored_link {
            vec![v.clone()]
        } else {
            v["from"]["delegation_chain"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        };
        links
            .iter()
            .find_map(|l| link_refusal(&s, l))
            .map(|why| s.error("DELEGATION_INVALID", "from.delegation_chain", &why))
    })
    .await
}

/// Why the sender of `env` is refused under the full-key-form-only reading: its home peer's
/// identity document (as that peer serves it) is signed in another form.
fn identity_form_refusal(s: &Shim, env: &Value) -> Option<String> {
    use loom_protocol::federation::identity::{NodeSignatureForm, verify_identity_document};
    let from = env["from"]["identity"].as_str()?;
    let domain = from.rsplit('@').next()?;
    let peer = s.federation.server.peer_of(domain)?;
    let doc = peer.identity_document(from)?;
    let keys = loom_protocol::federation::read_node_document(&peer.node_document(), domain)
        .ok()?
        .keys;
    match verify_identity_document(&doc, &keys) {
        Ok(v) if v.form == NodeSignatureForm::FullKeys => None,
        Ok(v) => Some(format!(
            "the identity document of {from} is signed in the {}; this node verifies only the full-key form",
            v.form.as_str()
        )),
        Err(e) => Some(e.to_string()),
    }
}

async fn identity_full_key_form(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if !is(
        &req,
        "POST",
        loom_protocol::federation::wrapper::DELIVER_PATH,
    ) {
        return next.run(req).await;
    }
    gate(req, next, |w| {
        w["envelopes"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|e| identity_form_refusal(&s, e))
            .map(|why| s.error("SIGNATURE_INVALID", "node_signature", &why))
    })
    .await
}

/// The id the shim issues for the token `token_id` (minting one the first time).
fn node_capability_id(s: &Shim, token_id: &str) -> String {
    s.remember(|m| {
        if let Some((n, _)) = m.capability_ids.iter().find(|(_, t)| *t == token_id) {
            return n.clone();
        }
        let n = m.capability_ids.len() as u64 + 1;
        let id = format!(
            "cap_{}",
            ulid::Ulid::from_parts(1_800_000_000_000 + n, u128::from(n))
        );
        m.capability_ids.insert(id.clone(), token_id.to_owned());
        id
    })
}

async fn capability_ids_minted(s: Arc<Shim>, req: Request, next: Next) -> Response {
    if is(&req, "POST", "/v1/capabilities") {
        return edit_json(next, req, ok, |v| {
            let token = v.take();
            let id = node_capability_id(&s, token["id"].as_str().unwrap_or_default());
            *v = json!({"id": id, "token": token});
        })
        .await;
    }
    if is(&req, "GET", "/v1/capabilities") {
        return edit_json(next, req, ok, |v| {
            let lists: Vec<&mut Value> = match v {
                Value::Array(_) => vec![v],
                Value::Object(o) => o.values_mut().filter(|m| m.is_array()).collect(),
                _ => Vec::new(),
            };
            for entry in lists
                .into_iter()
                .flat_map(|l| l.as_array_mut().into_iter().flatten())
            {
                if let Some(t) = entry["token"]["id"].as_str().map(str::to_owned) {
                    entry["id"] = node_capability_id(&s, &t).into();
                }
            }
        })
        .await;
    }
    if req.method().as_str() == "DELETE" && req.uri().path().starts_with("/v1/capabilities/") {
        let asked = req.uri().path()["/v1/capabilities/".len()..].to_owned();
        let Some(token_id) = s.remember(|m| m.capability_ids.get(&asked).cloned()) else {
            return s.error(
                "ENVELOPE_NOT_FOUND",
                "capability_id",
                &format!("no capability {asked} was issued by this node (it issues its own ids)"),
            );
        };
        let (mut parts, body) = req.into_parts();
        parts.uri = format!("/v1/capabilities/{token_id}")
            .parse()
            .unwrap_or(parts.uri);
        return next.run(Request::from_parts(parts, body)).await;
    }
    next.run(req).await
}

/// Every legal variant of the self-test.
/// The real-time stream through the WebSocket proxy with `rewrite`; every other request
/// passes through.
async fn ws_variant(
    s: Arc<Shim>,
    req: Request,
    next: Next,
    rewrite: super::ws_proxy::Rewrite,
) -> Response {
    if super::ws_proxy::is_upgrade(&req) {
        return super::ws_proxy::proxy(s, req, rewrite).await;
    }
    next.run(req).await
}

fn same(text: &str) -> String {
    text.to_owned()
}

/// `ws-opaque-cursors`: a cursor is `c.<hex>` (the node's decimal position, xored), in every
/// frame the node sends; `since` and `ack.cursor` in that form are turned back.
const CURSOR_KEY: u64 = 0x5eed_c0de;

fn opaque_cursor(c: &str) -> Option<String> {
    c.parse::<u64>()
        .ok()
        .map(|n| format!("c.{:x}", n ^ CURSOR_KEY))
}

fn plain_cursor(c: &str) -> Option<String> {
    let hex = c.strip_prefix("c.")?;
    u64::from_str_radix(hex, 16)
        .ok()
        .map(|n| (n ^ CURSOR_KEY).to_string())
}

fn edit_frame(text: &str, f: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut m)) => {
            f(&mut m);
            Value::Object(m).to_string()
        }
        _ => text.to_owned(),
    }
}

fn cursors_out(text: &str) -> String {
    edit_frame(text, |m| {
        if let Some(o) = m
            .get("cursor")
            .and_then(Value::as_str)
            .and_then(opaque_cursor)
        {
            m.insert("cursor".into(), o.into());
        }
    })
}

fn cursors_in(text: &str) -> String {
    edit_frame(text, |m| {
        for key in ["since", "cursor"] {
            if let Some(p) = m.get(key).and_then(Value::as_str).and_then(plain_cursor) {
                m.insert(key.into(), p.into());
            }
        }
    })
}

async fn ws_opaque_cursors(s: Arc<Shim>, req: Request, next: Next) -> Response {
    let rewrite = super::ws_proxy::Rewrite {
        to_node: cursors_in,
        to_client: cursors_out,
    };
    ws_variant(s, req, next, rewrite).await
}

/// `ws-type-member`: the frame's type in `type` (not v1.0 §16.2's `event`), the thread and
/// envelope only inside `data`.
fn type_member(text: &str) -> String {
    edit_frame(text, |m| {
        if let Some(kind) = m.remove("event") {
            m.insert("type".into(), kind);
        }
        if m.get("data").is_some_and(Value::is_object) {
            m.remove("thread_id");
            m.remove("envelope_id");
        }
    })
}

async fn ws_type_member(s: Arc<Shim>, req: Request, next: Next) -> Response {
    let rewrite = super::ws_proxy::Rewrite {
        to_node: same,
        to_client: type_member,
    };
    ws_variant(s, req, next, rewrite).await
}

pub static VARIANTS: &[Variant] = &[
    Variant {
        name: "delegation-link-context-signed",
        section: "v1.1 §13.3.1",
        quote: "Delegation link signatures MUST use the domain-separation context prefix `LOOM-DELEGATION-SIG-v1\\0` prepended to the canonical delegation payload before signing. The `signature_context` field SHOULD be set to `\"LOOM-DELEGATION-SIG-v1\"`.",
        reading: "The sentence fixes the prefix, not whether the canonical payload includes the signature_context member; the existing v1.1 node's verifier includes it (DESIGN.md §9).",
        choice: "Delegation links (in envelopes and in POST /v1/delegations) verify only with signature_context inside the signed bytes: JCS of the link without signature.",
        departs: &[],
        profile: "",
        handler: handler!(link_context_signed),
    },
    Variant {
        name: "identity-document-full-key-form",
        section: "DESIGN.md §9",
        quote: "`node_signature` on a served identity document is verified over the canonical JSON of `{loom: \"1.1\", id, type, display_name, signing_keys: [{key_id, public_key_pem}] … tolerate the richer form an older peer of ours signed.",
        reading: "The spec defines no identity-document signature form (v1.1 §6.2 lists the document, §15.4 only says senders are resolved); the form is a convention, and a node that verifies only the richer full-key form is as legal as one that verifies the registration form.",
        choice: "A federated delivery is refused 401 SIGNATURE_INVALID (field node_signature) when a sender's identity document, as its home peer serves it, is not signed in the full-key form.",
        departs: &[],
        profile: "",
        handler: handler!(identity_full_key_form),
    },
    Variant {
        name: "node-document-federation-keys",
        section: "v1.1 §15.2",
        quote: "The Node Document MUST include: … node signing keys",
        reading: "§15.2 lists what the document contains, not member names or places; the keys may sit in the federation object.",
        choice: "The node signing keys are served as federation.signing_keys, not top-level signing_keys.",
        departs: &[],
        profile: "",
        handler: handler!(federation_keys),
    },
    Variant {
        name: "node-document-pem-keys",
        section: "v1.1 §15.2",
        quote: "The Node Document MUST include: … node signing keys",
        reading: "No encoding is given for the node keys; SPKI PEM is how the existing v1.1 node carries public keys (DESIGN.md §9), base64url is how §7.3 stores signatures.",
        choice: "Every node signing key is served as public_key_pem (SPKI PEM) and has no public_key member.",
        departs: &[],
        profile: "",
        handler: handler!(pem_node_keys),
    },
    Variant {
        name: "node-document-flat-federation",
        section: "v1.1 §15.2",
        quote: "federation deliver_url + requirements … federation policy mode (open/quarantine/allowlist)",
        reading: "The federation items are named, their nesting is not.",
        choice: "deliver_url, federation_requirements and federation_policy are top-level members; there is no federation object.",
        departs: &[],
        profile: "",
        handler: handler!(flat_federation),
    },
    Variant {
        name: "node-document-loom-version",
        section: "v1.1 §15.2",
        quote: "supported versions and profiles",
        reading: "No member name is given for the supported versions.",
        choice: "The document states its version as loom_version: \"1.1\" and has no supported_versions.",
        departs: &[],
        profile: "",
        handler: handler!(loom_version),
    },
    Variant {
        name: "no-identity-me",
        section: "v1.1 §16.3",
        quote: "| GET | /v1/identity/me | Auth identity |",
        reading: "A table row without a requirement keyword; the §27.2 MVN list (identities, signing, threads + listing + reply, HTTP/2 API with TLS 1.3, discovery document) does not name it.",
        choice: "GET and PATCH /v1/identity/me are unknown routes (404).",
        departs: &[],
        profile: "",
        handler: handler!(no_identity_me),
    },
    Variant {
        name: "no-retraction",
        section: "v1.1 §20.7",
        quote: "Nodes MAY support retraction within policy window: … `DELETE /v1/envelopes/{id}`",
        reading: "Retraction, and with it that route, is optional.",
        choice: "DELETE /v1/envelopes/{id} is an unknown route and the capabilities name no retract window.",
        departs: &[],
        profile: "",
        handler: handler!(no_retraction),
    },
    Variant {
        name: "no-capabilities-document",
        section: "v1.1 §16",
        quote: "https://{node_domain}/v1",
        reading: "The API specification has no /v1/protocol/capabilities: it is the reference node's own document (reference/node/README.md), so the harness must find features by probing.",
        choice: "GET /v1/protocol/capabilities is an unknown route (404).",
        departs: &[],
        profile: "",
        handler: handler!(no_capabilities_document),
    },
    Variant {
        name: "message-intents-by-type",
        section: "v1.1 §9.2",
        quote: "`task`: `content.structured` REQUIRED; intent MUST be `task.*@vN`",
        reading: "The spec pairs intent namespaces with envelope types (§9.2's \"selected\" rules, the Appendix B registry) and nowhere obliges a node to take a foreign namespace in a message: requiring message.* for messages is the same rule applied to messages.",
        choice: "A message whose content.structured.intent is not message.* is refused (400 ENVELOPE_INVALID).",
        departs: &[],
        profile: "",
        handler: handler!(message_intents),
    },
    Variant {
        name: "custom-audience-covers-recipients",
        section: "v1.1 §8.3",
        quote: "`custom`: sender + listed identities only … Nodes MUST enforce audience in delivery and retrieval.",
        reading: "An envelope addressed to someone its own custom audience excludes cannot be delivered to them; refusing it at submission is one way to enforce the audience.",
        choice: "An envelope with audience.mode custom whose to[] names an identity outside the audience (and the sender) is refused (400 ENVELOPE_INVALID).",
        departs: &[],
        profile: "",
        handler: handler!(custom_audience_covers_recipients),
    },
    Variant {
        name: "missing-signature-envelope-invalid",
        section: "v1.1 §24.2",
        quote: "| ENVELOPE_INVALID | 400 | Envelope fails schema or DAG rules |",
        reading: "signature is a required member (§8.2), so an unsigned envelope fails the schema; SIGNATURE_INVALID fits too, neither is named for this condition.",
        choice: "An envelope without signature is refused with 400 ENVELOPE_INVALID.",
        departs: &["core.signature.missing.code"],
        profile: "",
        handler: handler!(missing_signature),
    },
    Variant {
        name: "signature-failure-envelope-invalid",
        section: "v1.1 §24.1",
        quote: "\"code\": \"ENVELOPE_INVALID\", \"message\": \"Envelope signature verification failed\"",
        reading: "The §24.1 example reports a failed envelope signature as ENVELOPE_INVALID, while the §24.2 row names SIGNATURE_INVALID for a failed verification: a node following the example is as right as one following the registry.",
        choice: "Every envelope POST the node refuses 401 SIGNATURE_INVALID is answered 400 ENVELOPE_INVALID instead.",
        departs: &[
            "core.signature.missing.code",
            "core.signature.unverifiable.code",
        ],
        profile: "",
        handler: handler!(signature_failure_envelope_invalid),
    },
    Variant {
        name: "padded-base64url-signatures",
        section: "v1.1 §7.3",
        quote: "Store signature value as base64url",
        reading: "RFC 4648 §3.2 keeps the = padding unless the referring spec drops it, and v1.1 does not: a padded value is still base64url.",
        choice: "signature.value is decoded with or without = padding.",
        departs: &[],
        profile: "",
        handler: handler!(padded_signatures),
    },
    Variant {
        name: "invalid-utf8-signature-invalid",
        section: "v1.1 §7.2",
        quote: "UTF-8 encoding",
        reading: "Bytes that are not UTF-8 cannot be a signed canonical form, so \"Signature verification failed\" (SIGNATURE_INVALID, §24.2) fits as well as ENVELOPE_INVALID.",
        choice: "A POST /v1/envelopes body that is not UTF-8 is refused with 401 SIGNATURE_INVALID.",
        departs: &["core.api.json.invalid-utf8.code"],
        profile: "",
        handler: handler!(invalid_utf8_signature_invalid),
    },
    Variant {
        name: "envelope-wrapped",
        section: "v1.1 §16.1",
        quote: "| GET | /v1/envelopes/{id} | Retrieve envelope |",
        reading: "The route is named, its body shape is not.",
        choice: "POST /v1/envelopes and GET /v1/envelopes/{id} answer {\"envelope\": …}.",
        departs: &[],
        profile: "",
        handler: handler!(envelope_wrapped),
    },
    Variant {
        name: "thread-existence-hidden-403",
        section: "v1.1 §24.2",
        quote: "| AUDIENCE_DENIED | 403 | Audience restriction blocks access |",
        reading: "§8.3: \"Nodes MUST enforce audience in delivery and retrieval.\" A non-participant may be told AUDIENCE_DENIED as well as THREAD_NOT_FOUND.",
        choice: "A non-participant's GET /v1/threads/{id} (and …/envelopes) of an existing thread is 403 AUDIENCE_DENIED.",
        departs: &[],
        profile: "",
        handler: handler!(thread_existence_hidden),
    },
    Variant {
        name: "capability-ids-minted-by-node",
        section: "v1.1 §16.4",
        quote: "| POST | /v1/capabilities | Issue capability token | … | DELETE | /v1/capabilities/{id} | Revoke (creates thread_op) |",
        reading: "The node \"issues\" the token and the route's {id} is not said to be the token's own id (§12.1); a node may keep issued tokens under ids it mints, while the thread_op, which replicates, names the token (§12.4).",
        choice: "POST /v1/capabilities answers {id: <an id the node mints>, token}; GET lists entries under that id; DELETE /v1/capabilities/{id} takes only that id (the token's own id is 404).",
        departs: &[],
        profile: "",
        handler: handler!(capability_ids_minted),
    },
    Variant {
        name: "bare-list-responses",
        section: "v1.1 §16.2",
        quote: "| GET | /v1/threads | List threads |",
        reading: "§16 lists routes, not bodies: a list may be the body itself.",
        choice: "GET /v1/threads, /v1/threads/{id}/envelopes, /v1/delegations and /v1/capabilities answer bare JSON arrays.",
        departs: &[],
        profile: "",
        handler: handler!(bare_lists),
    },
    Variant {
        name: "search-results-list",
        section: "v1.1 §16.6",
        quote: "Nodes MUST support searching:",
        reading: "What must be searchable is fixed, the response is not.",
        choice: "GET /v1/search answers {total, results: [{kind: envelope|thread, …}]}.",
        departs: &[],
        profile: "",
        handler: handler!(search_results),
    },
    Variant {
        name: "search-intent-filter",
        section: "v1.1 §16.6",
        quote: "Nodes MUST support searching: … `content.structured.intent` and parameters",
        reading: "How a search asks for an intent is not said; v1.0 §16 shows structured filters as query parameters (`?q=invoice&type=task&state=active&from=…`), so an intent filter beside the full-text q is a fair reading.",
        choice: "GET /v1/search finds intents only through ?intent=…; a full-text ?q= that is an intent finds nothing.",
        departs: &[],
        profile: "",
        handler: handler!(search_intent_filter),
    },
    Variant {
        name: "events-event-id-data",
        section: "v1.1 §17.2",
        quote: "Each event MUST contain `event_id` and `cursor`",
        reading: "§17.2 names event_id for events; §16.8 defines catch-up without a body shape.",
        choice: "GET /v1/events events carry event_id (not id) and data (not payload).",
        departs: &[],
        profile: "",
        handler: handler!(events_renamed),
    },
    Variant {
        name: "idempotency-conflict-409",
        section: "v1.1 §14.4",
        quote: "repeated requests with same key MUST return the same result (or a deterministic error)",
        reading: "A reused key with another body may be the deterministic error; 409 is the status the IETF Idempotency-Key draft uses for conflicts.",
        choice: "An Idempotency-Key reused with a different body is refused: 409 ENVELOPE_DUPLICATE.",
        departs: &[],
        profile: "",
        handler: handler!(idempotency_conflict),
    },
    Variant {
        name: "wrong-content-type-400",
        section: "v1.1 §14.1",
        quote: "Content type for JSON: `application/json; charset=utf-8`",
        reading: "No status is named for a body of another type; 400 ENVELOPE_INVALID fits (§24.2) as well as 415.",
        choice: "A request body that is not application/json is refused with 400, not 415.",
        departs: &[],
        profile: "",
        handler: handler!(wrong_content_type_400),
    },
    Variant {
        name: "success-200",
        section: "v1.1 §16.1",
        quote: "| POST | /v1/envelopes | Send new envelope |",
        reading: "§16 names no success statuses.",
        choice: "Every creation answers 200 instead of 201.",
        departs: &[],
        profile: "",
        handler: handler!(success_200),
    },
    Variant {
        name: "error-details-minimal",
        section: "v1.1 §24.1",
        quote: "\"details\": { \"field\": \"signature.value\", \"reason\": \"Ed25519 signature mismatch\" },",
        reading: "field and reason appear in the example of the format, not in a rule.",
        choice: "Error bodies carry details: {} (no field, no reason).",
        departs: &["core.errors.details.field-reason"],
        profile: "",
        handler: handler!(error_details_minimal),
    },
    Variant {
        name: "content-type-spelling",
        section: "v1.1 §14.1",
        quote: "Content type for JSON: `application/json; charset=utf-8`",
        reading: "Media types and charset names compare case-insensitively and the space before a parameter is optional (RFC 9110 §8.3.1, §8.3.2, §5.6.6).",
        choice: "JSON responses are labelled Application/JSON;Charset=UTF-8.",
        departs: &[],
        profile: "",
        handler: handler!(content_type_spelling),
    },
    Variant {
        name: "duplicate-registration-at-challenge",
        section: "DESIGN.md §9",
        quote: "Duplicate id → 409, possibly already at the challenge step.",
        reading: "v1.1 defines no registration API; the existing v1.1 node refuses a registered address when the challenge is asked.",
        choice: "POST /v1/identity/challenge for a registered address is refused: 409 ENVELOPE_DUPLICATE.",
        departs: &[],
        profile: "",
        handler: handler!(duplicate_registration_at_challenge),
    },
    Variant {
        name: "agent-info-complete",
        section: "v1.1 §6.4",
        quote: "\"agent_info\": { \"provider\": \"anthropic\", \"model\": \"claude-opus-4\", \"version\": \"2026.02\" },",
        reading: "The agent document shows all three members; DESIGN.md §9: nodes may require more of agent_info than provider.",
        choice: "An agent registration whose agent_info lacks model or version is refused (400 ENVELOPE_INVALID).",
        departs: &[],
        profile: "",
        handler: handler!(agent_info_complete),
    },
    Variant {
        name: "pem-trimmed-before-hashing",
        section: "DESIGN.md §9",
        quote: "a node may trim whitespace before hashing",
        reading: "The registration document hash covers the PEM text; a node may hash it trimmed, so only a client that sends (or hashes) the trimmed PEM is understood.",
        choice: "Registration PEMs are trimmed before the node hashes the document.",
        departs: &[],
        profile: "",
        handler: handler!(pem_trimmed),
    },
    Variant {
        name: "registration-invite",
        section: "DESIGN.md §9",
        quote: "The spec leaves some details open",
        reading: "Registration is the existing node's convention, not a v1.1 API: a node may ask more of a registrant; the operator supplies it in the profile ([provisioning.registration] extra).",
        choice: "A registration without invite_code = \"conformance-selftest\" is refused (403 CAPABILITY_DENIED).",
        departs: &[],
        profile: "[provisioning.registration]\nextra = { invite_code = \"conformance-selftest\" }\n",
        handler: handler!(registration_invite),
    },
    Variant {
        name: "identity-document-registration-shape",
        section: "v1.1 §6.2",
        quote: "Each identity resolves to an Identity Document retrievable via the LOOM API and/or well-known endpoints.",
        reading: "The document that follows is an example, not a member list; a node may list keys as it took them at registration.",
        choice: "Resolved identity documents list signing_keys: [{key_id, public_key_pem, status}] instead of public_keys.signing.",
        departs: &[],
        profile: "",
        handler: handler!(identity_document_shape),
    },
    Variant {
        name: "opaque-tokens",
        section: "v1.1 §14.2",
        quote: "short-lived `access_token` (1h TTL)",
        reading: "No token format is given (at_/rt_ are the existing node's, DESIGN.md §9).",
        choice: "Access and refresh tokens are opaque tok.<hex> strings.",
        departs: &[],
        profile: "",
        handler: handler!(opaque_tokens),
    },
    Variant {
        name: "challenge-member",
        section: "v1.1 §14.2",
        quote: "`POST /v1/auth/token { identity, key_id, challenge, signature }`",
        reading: "The spec's member name is challenge; challenge_id is the existing node's (DESIGN.md §9).",
        choice: "Login challenges carry their id as challenge, and the token request must name it challenge.",
        departs: &[],
        profile: "",
        handler: handler!(challenge_member),
    },
    Variant {
        name: "blob-json-transfer",
        section: "v1.1 §16.7",
        quote: "| PUT | /v1/blobs/{id}/parts/{n} | Upload part |",
        reading: "No part encoding is given (Appendix D: \"multipart upload + authorized download\").",
        choice: "Parts are JSON {\"data_base64\": …} (anything else is 400) and downloads answer JSON with data_base64.",
        departs: &[],
        profile: "",
        handler: handler!(blob_json_transfer),
    },
    Variant {
        name: "blob-size-declared",
        section: "v1.1 §16.7",
        quote: "| POST | /v1/blobs | Initiate upload |",
        reading: "The initiation request has no fixed members; a node may need the size up front.",
        choice: "An upload initiated without an integer size_bytes is refused (400 ENVELOPE_INVALID).",
        departs: &[],
        profile: "",
        handler: handler!(blob_size_declared),
    },
    Variant {
        name: "delivery-refusals-in-receipt",
        section: "v1.1 §15.4",
        quote: "Nodes receiving federation deliveries MUST: … Store envelopes and generate receipts",
        reading: "§15.4 asks for receipts, not for a status code when every envelope of a valid request is refused; a node may answer such a delivery 202 with a receipt that accepts none.",
        choice: "A delivery whose request is valid but whose envelopes are all refused (the error names an envelope field) is answered 202 {status: \"rejected\", accepted_envelope_ids: [], rejected: [...]} instead of the 4xx error.",
        departs: &[],
        profile: "",
        handler: handler!(delivery_refusals_in_receipt),
    },
    Variant {
        name: "ws-opaque-cursors",
        section: "v1.1 §17.2",
        quote: "Each event MUST contain `event_id` and `cursor`",
        reading: "§17.2 requires a cursor on every event and §17.1 shows since as an event id; nothing fixes the cursor's form, so a node may hand out opaque cursors and take them back.",
        choice: "Every cursor the node sends is an opaque c.<hex> string; since and ack.cursor in that form are understood (the WebSocket runs through the shim's proxy).",
        departs: &[],
        profile: "",
        handler: handler!(ws_opaque_cursors),
    },
    Variant {
        name: "ws-type-member",
        section: "v1.1 §17.2",
        quote: "Each event MUST contain `event_id` and `cursor`",
        reading: "v1.1 names the event types and the members every event carries but shows no server frame; v1.0 §16.2's `event` member is an example, so a node may name the type `type` and keep ids inside `data`.",
        choice: "Server frames carry their type in `type` instead of `event`, and the thread and envelope ids only inside `data`.",
        departs: &[],
        profile: "",
        handler: handler!(ws_type_member),
    },
];
