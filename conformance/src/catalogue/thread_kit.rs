//! Helpers shared by the thread, operation, capability, audience and task areas: thread
//! objects, signed operations, capability tokens signed by the harness's own identities, and
//! the "refused without leaking" check.

use crate::case::{Finding, Verdict};
use crate::ctx::{Ctx, Ex, Ident, shapes};
use serde_json::{Value, json};

/// `GET /v1/threads/{t}` as `who`; must be 200.
pub async fn thread_obj(cx: &mut Ctx, who: &Ident, t: &str) -> Result<Value, Finding> {
    let i = cx.net.get(&format!("/v1/threads/{t}"), &who.token).await?;
    cx.net.ok_body(i)
}

/// `GET /v1/threads/{t}/envelopes` as `who`; must be 200; the `envelopes` array.
pub async fn thread_envelopes(cx: &mut Ctx, who: &Ident, t: &str) -> Result<Vec<Value>, Finding> {
    let i = cx
        .net
        .get(&format!("/v1/threads/{t}/envelopes"), &who.token)
        .await?;
    let body = cx.net.ok_body(i)?;
    let list = shapes::list(&body, &["envelopes"]);
    cx.net.expect_at(
        i,
        list.is_some(),
        "a list of envelopes (the body, or its envelopes member; v1.1 §16.2)",
        crate::show::preview(&cx.net.transcript(i).response_body),
    )?;
    Ok(list.unwrap_or_default())
}

/// Whether `list` holds an envelope with `id`.
pub fn has_id(list: &[Value], id: &str) -> bool {
    list.iter().any(|e| e["id"].as_str() == Some(id))
}

/// The `id` of a JSON envelope.
pub fn id_of(env: &Value) -> String {
    env["id"].as_str().unwrap_or_default().to_owned()
}

/// Signs and sends a `thread_op` from `who`.
pub async fn send_op(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    intent: &str,
    params: Value,
) -> Result<Ex, Finding> {
    let mut e = cx.data.op(who, t, intent, params);
    who.sign(&mut e);
    cx.net.send(who, &e).await
}

/// `send_op` that must be accepted (201).
pub async fn op_ok(cx: &mut Ctx, who: &Ident, t: &str, intent: &str, params: Value) -> Verdict {
    op_accepted(cx, who, t, intent, params).await.map(|_| ())
}

/// [`op_ok`], returning the exchange (the control of a refusal that follows).
pub async fn op_accepted(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    intent: &str,
    params: Value,
) -> Result<Ex, Finding> {
    let i = send_op(cx, who, t, intent, params).await?;
    cx.net.expect_created(i)?;
    Ok(i)
}

/// The thread's `state` as seen by `who` must be `want`.
pub async fn expect_state(cx: &mut Ctx, who: &Ident, t: &str, want: &str) -> Verdict {
    let th = thread_obj(cx, who, t).await?;
    cx.net
        .expect_eq("thread.state (v1.1 §10.1)", &json!(want), &th["state"])
}

/// Sends a signed message from `who` replying to `parent`; returns (exchange, envelope).
pub async fn reply(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    parent: Option<&str>,
    to: &[&Ident],
    text: &str,
) -> Result<(Ex, Value), Finding> {
    let e = cx.data.signed_message(who, t, parent, to, text);
    let i = cx.net.send(who, &e).await?;
    Ok((i, e))
}

/// A fresh `cap_` id (ULID from the case's id generator).
pub fn cap_id(cx: &mut Ctx) -> String {
    cx.data.envelope_id().replacen("env_", "cap_", 1)
}

/// What a capability token grants.
#[derive(Debug, Clone)]
pub struct Grant<'a> {
    /// The thread in `scope.thread_id`.
    pub thread: &'a str,
    /// `grants`.
    pub grants: &'a [&'a str],
    /// `epoch`.
    pub epoch: u64,
    /// `expires_at` (null when None).
    pub expires_at: Option<String>,
    /// `single_use`.
    pub single_use: bool,
}

impl<'a> Grant<'a> {
    /// A reusable, non-expiring token of epoch 0.
    pub fn new(thread: &'a str, grants: &'a [&'a str]) -> Grant<'a> {
        Grant {
            thread,
            grants,
            epoch: 0,
            expires_at: None,
            single_use: false,
        }
    }
}

/// A §12.1 token from `issuer` to `holder`, signed by the issuer over JCS(token − signature).
pub fn token(cx: &mut Ctx, issuer: &Ident, holder: &Ident, g: &Grant<'_>) -> Value {
    let mut t = json!({
        "loom": "1.1",
        "id": cap_id(cx),
        "issued_by": issuer.address(),
        "issued_to": holder.address(),
        "created_at": cx.data.now(),
        "expires_at": g.expires_at,
        "single_use": g.single_use,
        "epoch": g.epoch,
        "grants": g.grants,
        "scope": {"thread_id": g.thread},
    });
    let _ = loom_protocol::capability::sign_capability_token(
        &mut t,
        issuer.id.signing_key(),
        issuer.id.key_id_typed(),
    );
    t
}

/// Sends a `thread_op` from `who` carrying `token` in `parameters.capability_token` (§12.4).
pub async fn op_with_token(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    intent: &str,
    mut params: Value,
    token: &Value,
) -> Result<Ex, Finding> {
    params["capability_token"] = token.clone();
    send_op(cx, who, t, intent, params).await
}

/// Exchange `i` must be a refusal (4xx with a §24.1 body) that does not contain `secret`.
pub fn expect_refused_without(cx: &Ctx, i: Ex, secret: &str, what: &str) -> Verdict {
    let t = cx.net.transcript(i);
    let body = cx.net.text(i);
    if !(400..500).contains(&t.status) || body.contains(secret) {
        return Err(Finding::Fail {
            expected: format!("a 4xx §24.1 error that does not reveal {what}"),
            actual: format!(
                "HTTP {}: {}",
                t.status,
                crate::show::preview(&t.response_body)
            ),
            decisive: Some(i),
        });
    }
    cx.net.expect_error_shape(i)
}

/// The participant entry for `who` in a thread object, if any.
pub fn participant<'v>(th: &'v Value, who: &Ident) -> Option<&'v Value> {
    th["participants"]
        .as_array()?
        .iter()
        .find(|p| p["identity"].as_str() == Some(who.address()))
}

/// Whether `who` is a current participant (listed with `left_at` null or absent).
pub fn is_current(th: &Value, who: &Ident) -> bool {
    participant(th, who).is_some_and(|p| p["left_at"].is_null())
}

/// Enough fresh identities to send `total` envelopes under the target's advertised
/// per-identity envelope rate limit (at least two: a root needs a primary recipient, §8.2).
/// The first is the thread owner. Skips when more than 20 would be needed.
pub async fn senders_for(cx: &mut Ctx, total: u64, what: &str) -> Result<Vec<Ident>, Finding> {
    let rate = cx
        .target
        .capability("/rate_limits/envelopes_per_identity_per_min")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let n = if rate <= 2 {
        1
    } else {
        total.div_ceil(rate - 2)
    };
    if n > 20 {
        return Err(Finding::Skip(format!(
            "reaching {what} needs {n} senders at {rate} envelopes/min"
        )));
    }
    let mut all = vec![cx.identity("alice", "human").await?];
    for _ in 1..n.max(2) {
        all.push(cx.identity("bob", "human").await?);
    }
    Ok(all)
}
