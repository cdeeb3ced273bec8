//! The layer in front of the unchanged router: every quirk a client or a peer observes on
//! the wire — how requests are read (§7.2, §14.1), what responses look like (§10.1, §14.2,
//! §15.2, §16.8, §24.1), replays (§8.4) and the reads a defect opens (§6.1, §16.7) — is an
//! edit here, of the request before the router sees it or of the response after.

use super::{Quirk, Quirks};
use crate::config::NodeConfig;
use crate::error::ApiError;
use crate::service::Service;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use loom_protocol::id::EnvelopeId;
use serde_json::Value;
use std::sync::Arc;

/// What the front needs: the quirks, the service (reads for replays and anonymous
/// downloads) and the body limit the node advertises.
struct Front {
    quirks: Quirks,
    service: Arc<Service>,
    advertised_body_limit: usize,
}

/// `ignore-body-limit` (v1.1 §24.2): the node reads bodies of any size; returns the limit
/// `GET /v1/protocol/capabilities` keeps advertising (see [`layer`]).
pub(super) fn config(quirks: &Quirks, config: &mut NodeConfig) -> usize {
    let configured = config.limits.max_body_bytes;
    if quirks.has(Quirk::IgnoreBodyLimit) {
        config.limits.max_body_bytes = usize::MAX;
    }
    configured
}

/// `router` behind the front; `advertised_body_limit`: what [`config`] returned.
pub(super) fn layer(
    router: axum::Router,
    quirks: Quirks,
    service: Arc<Service>,
    advertised_body_limit: usize,
) -> axum::Router {
    let front = Arc::new(Front {
        advertised_body_limit,
        quirks,
        service,
    });
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let front = front.clone();
            async move { front.handle(req, next).await }
        },
    ))
}

/// The responses the shape quirks trim, by route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    AuthChallenge,
    TokenPair,
    NodeDocument,
    Capabilities,
    Thread,
    IdentityDocument,
    EventsPage,
    SubmittedEnvelope,
}

fn output(method: &Method, path: &str) -> Option<Output> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["v1", "auth", "challenge"]) => Some(Output::AuthChallenge),
        ("POST", ["v1", "auth", "token" | "refresh"]) => Some(Output::TokenPair),
        ("GET", [".well-known", "loom.json"]) => Some(Output::NodeDocument),
        ("GET", ["v1", "protocol", "capabilities"]) => Some(Output::Capabilities),
        ("GET", ["v1", "threads", _]) => Some(Output::Thread),
        ("GET", ["v1", "identity", _]) => Some(Output::IdentityDocument),
        ("GET", ["v1", "events"]) => Some(Output::EventsPage),
        ("POST", ["v1", "envelopes"]) => Some(Output::SubmittedEnvelope),
        _ => None,
    }
}

pub(super) fn remove_members(v: &mut Value, members: &[&str]) {
    if let Some(o) = v.as_object_mut() {
        for m in members {
            o.remove(*m);
        }
    }
}

impl Front {
    fn q(&self, q: Quirk) -> bool {
        self.quirks.has(q)
    }

    async fn handle(&self, req: Request, next: Next) -> Response {
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let (mut parts, body) = req.into_parts();
        if let Some(resp) = self.answer_instead(&method, &path, &parts.headers) {
            return resp;
        }
        // Request edits: how the body is read.
        if self.q(Quirk::AcceptAnyContentType) && method != Method::GET {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        let lenient_json =
            self.q(Quirk::AcceptLoneSurrogates) || self.q(Quirk::AcceptDuplicateJsonKeys);
        let replays = self.q(Quirk::AllowDuplicateIds)
            && output(&method, &path) == Some(Output::SubmittedEnvelope);
        let (body, submitted) = if lenient_json || replays {
            let Ok(bytes) =
                axum::body::to_bytes(body, self.service.config.limits.max_body_bytes).await
            else {
                return StatusCode::PAYLOAD_TOO_LARGE.into_response();
            };
            let bytes = self.read_json(bytes);
            let id = replays
                .then(|| serde_json::from_slice::<Value>(&bytes).ok())
                .flatten()
                .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_owned));
            (Body::from(bytes), id)
        } else {
            (body, None)
        };
        let kept = self.content_to_keep(&method, &path);
        let resp = next.run(Request::from_parts(parts, body)).await;
        if let Some((id, body)) = kept
            && resp.status().is_success()
        {
            self.restore(&id, &body);
        }
        self.edit_response(&method, &path, submitted, resp).await
    }

    /// `retract-keeps-content` (§25.2): the stored content of an envelope about to be
    /// retracted, to put back once the retraction answered.
    fn content_to_keep(&self, method: &Method, path: &str) -> Option<(String, String)> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let ["v1", "envelopes", id] = segments.as_slice() else {
            return None;
        };
        if *method != Method::DELETE || !self.q(Quirk::RetractKeepsContent) {
            return None;
        }
        let eid = EnvelopeId::parse(id).ok()?;
        let conn = self.service.store.read();
        let body = crate::store::envelopes::body(&conn, &eid).ok().flatten()?;
        Some(((*id).to_owned(), body.to_string()))
    }

    fn restore(&self, id: &str, body: &str) {
        if let Ok(tx) = self.service.store.begin()
            && crate::store::mutants::restore_body(&tx, id, body).is_ok()
        {
            let _ = tx.commit();
        }
    }

    /// Requests a quirk answers itself, before the router.
    fn answer_instead(
        &self,
        method: &Method,
        path: &str,
        headers: &axum::http::HeaderMap,
    ) -> Option<Response> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (method.as_str(), segments.as_slice()) {
            // §16.7: downloads need an access token.
            ("GET", ["v1", "blobs", id])
                if self.q(Quirk::AnonymousBlobDownload)
                    && !headers.contains_key(header::AUTHORIZATION) =>
            {
                let blob = self.service.get_blob(None, id).ok()?;
                Some(crate::http::blob_response(blob))
            }
            // §6.1: addresses compare case-insensitively.
            ("GET", ["v1", "identity", address])
                if self.q(Quirk::CaseSensitiveAddressLookup) && *address != "me" =>
            {
                let decoded = percent_decode(address);
                let full = if decoded.contains("://") {
                    decoded
                } else {
                    format!("loom://{decoded}")
                };
                let addr = loom_protocol::Address::parse(&full).ok()?;
                (addr.to_string() != full).then(|| {
                    self.render(ApiError::not_found(
                        loom_protocol::ErrorCode::IdentityNotFound,
                        "identity",
                        &full,
                    ))
                })
            }
            _ => None,
        }
    }

    /// The body as a lenient reader takes it (§7.2 requires refusing both): lone surrogate
    /// escapes as U+FFFD, duplicate member names with the last one winning.
    fn read_json(&self, body: Bytes) -> Bytes {
        let body = if self.q(Quirk::AcceptLoneSurrogates) {
            Bytes::from(lone_surrogates_as_replacement(&body))
        } else {
            body
        };
        if self.q(Quirk::AcceptDuplicateJsonKeys)
            && let Ok(v) = serde_json::from_slice::<Value>(&body)
        {
            return Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
        }
        body
    }

    async fn edit_response(
        &self,
        method: &Method,
        path: &str,
        submitted: Option<String>,
        resp: Response,
    ) -> Response {
        let status = resp.status();
        let out = output(method, path);
        let json = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        let bare = self.q(Quirk::BareErrorBodies)
            && (status.is_client_error() || status.is_server_error());
        let edited = out.filter(|o| json && !bare && self.edits(*o));
        let mut resp = if bare {
            let (mut parts, _) = resp.into_parts();
            parts.headers.remove(header::CONTENT_TYPE);
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::empty())
        } else if let Some(o) = edited {
            let (mut parts, body) = resp.into_parts();
            let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            };
            let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
                return Response::from_parts(parts, Body::from(bytes));
            };
            let replaced = self.edit(o, status, &mut v, submitted);
            if let Some(s) = replaced {
                parts.status = s;
            }
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(
                parts,
                Body::from(serde_json::to_vec(&v).unwrap_or_default()),
            )
        } else {
            resp
        };
        if self.q(Quirk::NoJsonCharset) && json {
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
        }
        resp
    }

    /// Whether a quirk edits responses of `o`.
    fn edits(&self, o: Output) -> bool {
        match o {
            Output::AuthChallenge => self.q(Quirk::ChallengeWithoutExpiry),
            Output::TokenPair => self.q(Quirk::OmitRefreshToken),
            Output::NodeDocument => self.q(Quirk::IncompleteNodeDocument),
            Output::Capabilities => self.q(Quirk::IgnoreBodyLimit),
            Output::Thread => self.q(Quirk::IncompleteThreadObject),
            Output::IdentityDocument => self.q(Quirk::IdentityDocumentWithoutKeys),
            Output::EventsPage => self.q(Quirk::UnstableEventIds),
            Output::SubmittedEnvelope => {
                self.q(Quirk::AllowDuplicateIds) || self.q(Quirk::MergeMovesEnvelopes)
            }
        }
    }

    /// Edits `v`, a response of `o` with `status`; returns a replacement status.
    fn edit(
        &self,
        o: Output,
        status: StatusCode,
        v: &mut Value,
        submitted: Option<String>,
    ) -> Option<StatusCode> {
        let ok = status.is_success();
        match o {
            Output::AuthChallenge if ok => remove_members(v, &["expires_at"]),
            Output::TokenPair if ok => remove_members(v, &["refresh_token", "refresh_expires_in"]),
            Output::NodeDocument if ok => {
                if let Some(o) = v.as_object_mut() {
                    o.retain(|k, _| k == "loom" || k == "domain");
                }
            }
            Output::Capabilities if ok => {
                if let Some(l) = v.pointer_mut("/limits/max_body_bytes") {
                    *l = self.advertised_body_limit.into();
                }
            }
            Output::Thread if ok => remove_members(v, &["cap_epoch", "subject", "labels"]),
            Output::IdentityDocument if ok => {
                if let Some(keys) = v.pointer_mut("/public_keys/signing") {
                    *keys = Value::Array(Vec::new());
                }
                if let Some(keys) = v.get_mut("signing_keys") {
                    *keys = Value::Array(Vec::new());
                }
            }
            Output::EventsPage if ok => {
                for e in v
                    .get_mut("events")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    e["id"] = self.service.env.ids().event().to_string().into();
                }
            }
            Output::SubmittedEnvelope if ok && self.q(Quirk::MergeMovesEnvelopes) => {
                self.move_merged_envelopes(v);
            }
            // §8.4: the stored envelope replayed instead of 409 ENVELOPE_DUPLICATE.
            Output::SubmittedEnvelope
                if status == StatusCode::CONFLICT
                    && v.pointer("/error/code").and_then(Value::as_str)
                        == Some("ENVELOPE_DUPLICATE") =>
            {
                let id = submitted.and_then(|s| EnvelopeId::parse(&s).ok())?;
                let conn = self.service.store.read();
                let stored = crate::store::envelopes::body(&conn, &id).ok().flatten()?;
                *v = stored;
                return Some(StatusCode::CREATED);
            }
            _ => {}
        }
        None
    }

    /// `merge-moves-envelopes` (§11.4 "does not move envelopes"): after an accepted
    /// `thread.merge@v1`, the fork's envelopes are moved into the merging thread.
    fn move_merged_envelopes(&self, stored: &Value) {
        let merge = stored
            .pointer("/content/structured/intent")
            .and_then(Value::as_str)
            == Some("thread.merge@v1");
        let fork = stored
            .pointer("/content/structured/parameters/fork_thread_id")
            .and_then(Value::as_str);
        let into = stored.get("thread_id").and_then(Value::as_str);
        if let (true, Some(fork), Some(into)) = (merge, fork, into)
            && fork != into
            && let Ok(tx) = self.service.store.begin()
            && crate::store::mutants::move_envelopes(&tx, fork, into).is_ok()
        {
            let _ = tx.commit();
        }
    }

    fn render(&self, e: ApiError) -> Response {
        e.to_response(
            Some(self.service.env.request_id()),
            Some(self.service.env.now().to_rfc3339()),
        )
    }
}

/// `%XX` escapes decoded (a path segment as axum's `Path` reads it).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// JSON text with every lone `\uD800`–`\uDFFF` escape replaced by `\ufffd` (a correct node
/// refuses such text, v1.1 §7.2).
fn lone_surrogates_as_replacement(body: &[u8]) -> Vec<u8> {
    let hex = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|s| u16::from_str_radix(s, 16).ok())
    };
    let escape_at = |i: usize| {
        (body.get(i) == Some(&b'\\') && body.get(i + 1) == Some(&b'u'))
            .then(|| body.get(i + 2..i + 6).and_then(hex))
            .flatten()
    };
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\\' {
            match escape_at(i) {
                Some(0xD800..=0xDBFF) if matches!(escape_at(i + 6), Some(0xDC00..=0xDFFF)) => {
                    out.extend_from_slice(&body[i..i + 12]);
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                }
                _ => {
                    out.extend_from_slice(&body[i..(i + 2).min(body.len())]);
                    i += 2;
                }
            }
        } else {
            out.push(body[i]);
            i += 1;
        }
    }
    out
}
