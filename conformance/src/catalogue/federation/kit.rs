//! What the federation cases share: a fresh fake peer the target knows, signed deliveries
//! from it (and ways to break exactly one part of one), lenient readers of the target's
//! answer, and the record of what the target sent the peer.

use crate::case::{Finding, Verdict};
use crate::ctx::{Ctx, Ex, Ident};
use crate::peer::{Federation, PeerNode, Received};
use crate::readings::{IDENTITY_FORM_READING, Readings, Tries};
use loom_client::{Identity, Transcript};
use loom_protocol::federation::identity::NodeSignatureForm;
use loom_protocol::http_sig::SignedHeaders;
use loom_protocol::time::Timestamp;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A case's federation: the run's setup and the case's own fresh peer.
pub(super) struct Fed {
    pub fed: Arc<Federation>,
    pub peer: Arc<PeerNode>,
}

/// A fresh peer the target has learned (profile `learn_peer`); `unsupported` when the run
/// has no federation setup.
pub(super) async fn fresh_peer(cx: &mut Ctx) -> Result<Fed, Finding> {
    let fed = federation(cx)?;
    let peer = fed.server.fresh().map_err(Finding::Error)?;
    let url = cx.target.url.clone();
    let user = user_token(cx, &fed).await?;
    fed.learn(&mut cx.net, &url, &peer, &user).await?;
    Ok(Fed { fed, peer })
}

/// A [`fresh_peer`] whose identities will send to the target: their documents are signed
/// in the form the target verifies, detected on the run's first such peer.
pub(super) async fn sending_peer(cx: &mut Ctx) -> Result<Fed, Finding> {
    let f = fresh_peer(cx).await?;
    identity_form(cx, &f.fed).await?;
    Ok(f)
}

/// The form of a remote identity document's `node_signature` the target verifies (DESIGN.md
/// §9; a reading, [`crate::readings`]), detected once per run on a peer of its own.
async fn identity_form(cx: &mut Ctx, fed: &Arc<Federation>) -> Result<NodeSignatureForm, Finding> {
    let readings = cx.target.readings.clone();
    readings
        .identity_form
        .get_or_try_init(|| detect_identity_form(cx, fed, &readings))
        .await
        .copied()
}

/// A message from an identity whose document is signed in each form; the first form whose
/// delivery the target accepts is what every fake peer signs from then on. A target that
/// accepts neither is an `error` naming both tries.
async fn detect_identity_form(
    cx: &mut Ctx,
    fed: &Arc<Federation>,
    readings: &Readings,
) -> Result<NodeSignatureForm, Finding> {
    // A peer of its own, so the cases' peers see no fetch of the reading's identities.
    let Fed { peer, .. } = fresh_peer(cx).await?;
    let local = cx.identity("reading-recipient", "human").await?;
    let mut tries = Tries::new();
    for (n, form) in NodeSignatureForm::ALL.into_iter().enumerate() {
        let from = as_ident(peer.host(&format!("reading{n}")));
        peer.sign_identity_as(from.address(), form);
        let env = message(cx, &from, &local, "which identity-document form");
        let d = send(cx, &delivery(cx, &peer, vec![env.clone()], peer.now())).await?;
        // Accepted: 2xx, and the receipt (if any) lists the envelope. Whether it is then
        // stored is what the delivery cases judge, not the reading.
        let listed = accepted_ids(&cx.net.json(d)).is_none_or(|ids| ids.contains(&id_of(&env)));
        let t = cx.net.transcript(d);
        tries.note(form, form.as_str(), t, t.is_success() && listed);
    }
    let first = tries.conclude(
        readings,
        IDENTITY_FORM_READING,
        NodeSignatureForm::as_str,
        "the target accepted a signed delivery from a peer identity whose document was signed \
         in neither form of DESIGN.md §9",
    )?;
    fed.server.set_identity_form(first);
    Ok(first)
}

/// `{user_token}` for the profile's templated requests: the bearer token of an identity the
/// harness registers on the target, only when a template names it.
pub(super) async fn user_token(
    cx: &mut Ctx,
    fed: &Federation,
) -> Result<std::collections::BTreeMap<String, String>, Finding> {
    let mut v = std::collections::BTreeMap::new();
    if fed.needs_user_token() {
        let u = cx.identity("peering", "human").await?;
        v.insert("user_token".to_owned(), u.token.clone());
    }
    Ok(v)
}

/// The run's federation setup, or `unsupported`.
pub(super) fn federation(cx: &Ctx) -> Result<Arc<Federation>, Finding> {
    cx.target.federation.clone().ok_or_else(|| {
        Finding::Unsupported(
            "no fake federation peer is set up for this target: give the profile a [federation] section (harness_address, learn_peer) — see the README's Level 2 section".into(),
        )
    })
}

/// The TTL the target declares, or `unsupported` (v1.1 §15.6: 72 h by default; the cases
/// cannot wait that long).
pub(super) fn declared_ttl(fed: &Federation) -> Result<Duration, Finding> {
    fed.ttl().ok_or_else(|| {
        Finding::Unsupported(
            "the profile declares no shortened store-and-forward TTL ([federation.timers] ttl_ms); the default 72 h (v1.1 §15.6) is too long to wait for".into(),
        )
    })
}

/// The path of the target's delivery endpoint: its node document's `deliver_url`, else the
/// §15.4 path.
pub(super) fn deliver_path(cx: &Ctx) -> String {
    let doc = &cx.target.node_document;
    doc.pointer("/federation/deliver_url")
        .or_else(|| doc.pointer("/deliver_url"))
        .and_then(Value::as_str)
        .and_then(|u| u.split_once("://").map(|(_, rest)| rest))
        .and_then(|rest| rest.find('/').map(|i| rest[i..].to_owned()))
        .unwrap_or_else(|| loom_protocol::federation::wrapper::DELIVER_PATH.to_owned())
}

/// A request the peer sends the target.
#[derive(Debug, Clone)]
pub(super) struct Req {
    pub method: String,
    pub path: String,
    pub body: Vec<u8>,
    pub headers: SignedHeaders,
}

impl Req {
    /// Leaves out one LOOM-HTTP-SIG-1 header.
    pub fn without(mut self, header: &str) -> Req {
        let h = &mut self.headers;
        match header {
            "X-LOOM-Node" => h.node.clear(),
            "X-LOOM-Timestamp" => h.timestamp.clear(),
            "X-LOOM-Nonce" => h.nonce.clear(),
            "X-LOOM-Key-Id" => h.key_id.clear(),
            _ => h.signature.clear(),
        }
        self
    }
}

/// A wrapper of `envelopes` from `peer`, timestamped `at`, signed at `at` with its active key.
pub(super) fn delivery(cx: &Ctx, peer: &PeerNode, envelopes: Vec<Value>, at: Timestamp) -> Req {
    let body = serde_json::to_vec(&peer.wrapper(envelopes, at)).unwrap_or_default();
    let path = deliver_path(cx);
    let headers = peer.sign("POST", &path, &body, at, &peer.active_key(), None);
    Req {
        method: "POST".into(),
        path,
        body,
        headers,
    }
}

/// Sends `req` to the target; the headers that are empty are left out.
pub(super) async fn send(cx: &mut Ctx, req: &Req) -> Result<Ex, Finding> {
    let mut h: Vec<(&str, &str)> = req
        .headers
        .all_pairs()
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
    h.push(("content-type", "application/json"));
    cx.net
        .exchange(&req.method, &req.path, &h, Some(req.body.clone()), None)
        .await
}

/// An identity the peer hosts, as a case's [`Ident`] (no session on the target: it only
/// signs).
pub(super) fn as_ident(id: Identity) -> Ident {
    Ident {
        id,
        token: String::new(),
        refresh: String::new(),
    }
}

/// A signed message from `from` (hosted by the peer) to `to` in a new thread.
pub(super) fn message(cx: &mut Ctx, from: &Ident, to: &Ident, text: &str) -> Value {
    let t = cx.data.thread_id();
    cx.data.signed_message(from, &t, None, &[to], text)
}

/// The envelope's `id`.
pub(super) fn id_of(env: &Value) -> String {
    env["id"].as_str().unwrap_or("").to_owned()
}

/// The envelope's `thread_id`.
pub(super) fn thread_of(env: &Value) -> String {
    env["thread_id"].as_str().unwrap_or("").to_owned()
}

/// `GET /v1/envelopes/{id}` as `who`.
pub(super) async fn read(cx: &mut Ctx, who: &Ident, id: &str) -> Result<Ex, Finding> {
    cx.net.get(&format!("/v1/envelopes/{id}"), &who.token).await
}

/// The delivered envelope reached its recipient: `who` reads it (2xx).
pub(super) async fn expect_stored(cx: &mut Ctx, who: &Ident, id: &str) -> Verdict {
    let ex = read(cx, who, id).await?;
    cx.net.expect_at(
        ex,
        cx.net.transcript(ex).is_success(),
        format!(
            "{} reads the delivered envelope {id} (v1.1 §15.4 \"Store envelopes\")",
            who.address()
        ),
        format!("HTTP {}: {}", cx.net.status(ex), cx.net.text(ex)),
    )
}

/// The delivery was refused (4xx) and its envelope `id` did not reach `who`, beside
/// `control`, a valid delivery of the same kind from the same peer that was accepted (issue
/// 29: otherwise a node that refuses every delivery would pass).
pub(super) async fn expect_rejected(
    cx: &mut Ctx,
    ex: Ex,
    who: &Ident,
    id: &str,
    why: &str,
    control: Ex,
) -> Verdict {
    cx.net
        .expect_control(control, "a valid signed delivery from the same peer")?;
    let st = cx.net.status(ex);
    cx.net.expect_at(
        ex,
        (400..500).contains(&st),
        format!("the delivery refused (4xx): {why}"),
        format!(
            "HTTP {st}: {}",
            crate::show::preview(&cx.net.transcript(ex).response_body)
        ),
    )?;
    expect_not_stored(cx, who, id, why).await?;
    cx.net.credit(ex, Some(control));
    Ok(())
}

/// Envelope `id` is not readable by its recipient `who`.
pub(super) async fn expect_not_stored(cx: &mut Ctx, who: &Ident, id: &str, why: &str) -> Verdict {
    let r = read(cx, who, id).await?;
    cx.net.expect_at(
        r,
        !cx.net.transcript(r).is_success(),
        format!("the envelope {id} not stored: {why}"),
        format!("{} reads it (HTTP {})", who.address(), cx.net.status(r)),
    )
}

/// The envelope ids the target's answer to a delivery lists as accepted: the receipt's
/// `accepted_envelope_ids` (under `receipt` or at the top), or `None` without a receipt.
pub(super) fn accepted_ids(body: &Value) -> Option<Vec<String>> {
    let r = if body.get("receipt").is_some_and(Value::is_object) {
        &body["receipt"]
    } else {
        body
    };
    r.get("accepted_envelope_ids")
        .or_else(|| r.get("accepted"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().or_else(|| v["id"].as_str()))
                .map(str::to_owned)
                .collect()
        })
}

/// Records what the peer received as exchanges of the case (reports show them).
pub(super) fn record_received(cx: &mut Ctx, peer: &PeerNode, got: &[Received]) {
    for r in got {
        cx.net.record(Transcript {
            method: r.method.clone(),
            path: format!("{} (received by fake peer {})", r.raw_path, peer.domain),
            version: "HTTP/1.1".into(),
            request_headers: r.headers.clone(),
            request_body: r.body.clone(),
            status: r.status,
            response_headers: Vec::new(),
            response_body: Vec::new(),
            elapsed: Duration::ZERO,
        });
    }
}

/// Deliveries that carry envelope `id`.
pub(super) fn carrying<'a>(got: &'a [Received], id: &str) -> Vec<&'a Received> {
    got.iter()
        .filter(|r| r.envelope_ids().iter().any(|e| e == id))
        .collect()
}
