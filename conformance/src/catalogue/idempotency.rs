//! Idempotency (v1.1 §14.4): a repeated create request with the same `Idempotency-Key`
//! returns the same result — success or error — and creates nothing more; the same key with
//! a different request is a deterministic error.

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident, shapes};
use serde_json::{Value, json};

/// POSTs `body` to `path` as `who` with `Idempotency-Key: key`.
async fn post_keyed(
    cx: &mut Ctx,
    who: &Ident,
    path: &str,
    key: &str,
    body: &Value,
) -> Result<Ex, Finding> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    cx.net
        .exchange(
            "POST",
            path,
            &[("idempotency-key", key)],
            Some(bytes),
            Some(&who.token),
        )
        .await
}

/// A body without what differs per response by design (§24.1 `request_id`, `timestamp`).
fn comparable(mut v: Value) -> Value {
    if let Some(e) = v.get_mut("error").and_then(Value::as_object_mut) {
        e.remove("request_id");
        e.remove("timestamp");
    }
    v
}

/// Exchanges `a` and `b` must have the same status and (comparable) body.
fn same_result(cx: &Ctx, a: Ex, b: Ex) -> Verdict {
    let (ta, tb) = (cx.net.transcript(a), cx.net.transcript(b));
    let (ja, jb) = (comparable(cx.net.json(a)), comparable(cx.net.json(b)));
    if ta.status == tb.status && ja == jb {
        return Ok(());
    }
    Err(Finding::Fail {
        expected: format!(
            "the repeated request with the same Idempotency-Key answers the first result again: HTTP {} {} (v1.1 §14.4)",
            ta.status,
            crate::show::compact(&ja)
        ),
        actual: match crate::show::first_difference(&ja, &jb) {
            Some((path, _, got)) if ta.status == tb.status => format!(
                "HTTP {}, differing first at {path}: {}",
                tb.status,
                got.as_ref()
                    .map_or_else(|| "absent".to_owned(), crate::show::compact)
            ),
            _ => format!("HTTP {} {}", tb.status, crate::show::compact(&jb)),
        },
        decisive: Some(b),
    })
}

/// How many envelopes `who` sees in `thread`.
async fn envelope_count(cx: &mut Ctx, who: &Ident, thread: &str) -> Result<usize, Finding> {
    let i = cx
        .net
        .get(&format!("/v1/threads/{thread}/envelopes"), &who.token)
        .await?;
    let body = cx.net.ok_body(i)?;
    Ok(shapes::list(&body, &["envelopes"]).map_or(0, |l| l.len()))
}

fn key(cx: &mut Ctx) -> String {
    format!("conf-{}", cx.data.envelope_id())
}

async fn envelope_replay(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let env = cx
        .data
        .signed_message(&alice, &t, None, &[&bob], "exactly once");
    let k = key(cx);
    let a = post_keyed(cx, &alice, "/v1/envelopes", &k, &env).await?;
    cx.net.expect_created(a)?;
    let b = post_keyed(cx, &alice, "/v1/envelopes", &k, &env).await?;
    same_result(cx, a, b)?;
    let n = envelope_count(cx, &alice, &t).await?;
    cx.net.expect_that(
        n == 1,
        "one envelope stored for two requests with one Idempotency-Key",
        format!("{n} envelopes in the thread"),
    )
}

async fn key_reused_for_other_body(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let first = cx.data.signed_message(&alice, &t, None, &[&bob], "first");
    let k = key(cx);
    let a = post_keyed(cx, &alice, "/v1/envelopes", &k, &first).await?;
    cx.net.expect_created(a)?;
    let u = cx.data.thread_id();
    let other = cx
        .data
        .signed_message(&alice, &u, None, &[&bob], "another request");
    let b = post_keyed(cx, &alice, "/v1/envelopes", &k, &other).await?;
    let status = cx.net.transcript(b).status;
    let success = cx.net.transcript(b).is_success();
    // Either the first result again, or an error — never a second envelope.
    if success && comparable(cx.net.json(b)) != comparable(cx.net.json(a)) {
        return cx.net.expect_that(
            false,
            "the same Idempotency-Key with a different body answers the first result or a deterministic error, never a new envelope (v1.1 §14.4)",
            format!("HTTP {status} with a different result: the second request was applied"),
        );
    }
    if !success {
        cx.net.expect_that(
            (400..500).contains(&status),
            "a 4xx error for a reused Idempotency-Key (v1.1 §14.4)",
            format!("HTTP {status}"),
        )?;
        cx.net.expect_error_shape(b)?;
        let again = post_keyed(cx, &alice, "/v1/envelopes", &k, &other).await?;
        same_result(cx, b, again)?;
    }
    let n = envelope_count(cx, &alice, &u).await.unwrap_or(0);
    cx.net.expect_that(
        n == 0,
        "nothing stored for the request that reused a key",
        format!("{n} envelopes in the second thread"),
    )?;
    if !success {
        // The control of the refusal: the same request under a key of its own.
        let fresh = key(cx);
        let c = post_keyed(cx, &alice, "/v1/envelopes", &fresh, &other).await?;
        cx.net.expect_refused_beside(
            b,
            c,
            "the same request with a fresh Idempotency-Key",
            &[],
            "",
        )?;
    }
    Ok(())
}

async fn error_replayed(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    // The control: bob's reply before the lock.
    let before =
        cx.data
            .signed_message(&bob, &t, root["id"].as_str(), &[&alice], "before the lock");
    let c = cx.net.send(&bob, &before).await?;
    cx.net.expect_control(c, "bob's reply before the lock")?;
    let lock = cx.data.op(&alice, &t, "thread.lock@v1", json!({}));
    let mut lock = lock;
    alice.sign(&mut lock);
    let i = cx.net.send(&alice, &lock).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "the lock that provokes an error",
        ))?;
    let reply = cx
        .data
        .signed_message(&bob, &t, root["id"].as_str(), &[&alice], "while locked");
    let k = key(cx);
    let a = post_keyed(cx, &bob, "/v1/envelopes", &k, &reply).await?;
    // The error only sets up the replay: any §24.1 4xx error will do.
    cx.net
        .expect_refused_beside(a, c, "bob's reply before the lock", &[], "")
        .map_err(crate::finding::setup_step(
            "a reply to the locked thread is refused",
        ))?;
    let mut reopen = cx.data.op(&alice, &t, "thread.reopen@v1", json!({}));
    alice.sign(&mut reopen);
    let i = cx.net.send(&alice, &reopen).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step("the reopen"))?;
    // A fresh attempt would now succeed; the key must replay the first (error) result.
    let b = post_keyed(cx, &bob, "/v1/envelopes", &k, &reply).await?;
    same_result(cx, a, b)
}

async fn delegation_replay(cx: &mut Ctx) -> Verdict {
    let reading = cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot = cx.identity("bot", "agent").await?;
    let now = cx.data.now();
    let later = loom_protocol::Timestamp::parse(&now)
        .map_or(now.clone(), |t| t.plus_ms(86_400_000).to_rfc3339());
    let mut l = json!({
        "delegator": alice.address(), "delegate": bot.address(), "scope": ["message.*"],
        "created_at": now, "expires_at": later, "revocable": true, "allow_sub_delegation": false,
    });
    crate::readings::sign_link(
        &mut l,
        alice.id.signing_key(),
        alice.id.key_id_typed(),
        reading,
    );
    let k = key(cx);
    let a = post_keyed(cx, &alice, "/v1/delegations", &k, &l).await?;
    cx.net.expect_created(a)?;
    let b = post_keyed(cx, &alice, "/v1/delegations", &k, &l).await?;
    same_result(cx, a, b)?;
    let i = cx.net.get("/v1/delegations", &alice.token).await?;
    let body = cx.net.ok_body(i)?;
    // Count this link only (by its signature): the identities may hold other delegations.
    let sig = l["signature"].as_str().unwrap_or_default();
    let n = shapes::list(&body, &["delegations"])
        .unwrap_or_default()
        .iter()
        .filter(|d| d.to_string().contains(sig))
        .count();
    cx.net.expect_that(
        n == 1,
        "one delegation stored for two requests with one Idempotency-Key",
        format!("{n} delegations listed"),
    )
}

async fn blob_replay(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let req = json!({"filename": "report.txt", "mime_type": "text/plain", "size_bytes": 5});
    let k = key(cx);
    let a = post_keyed(cx, &alice, "/v1/blobs", &k, &req).await?;
    cx.net.expect_created(a)?;
    let b = post_keyed(cx, &alice, "/v1/blobs", &k, &req).await?;
    same_result(cx, a, b)
}

/// Idempotency cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.idempotency.envelope.replayed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.4", "v1.1 §16.1", "v1.0 §13.4"],
        requirement: "POST /v1/envelopes MUST honour Idempotency-Key: a repeat returns the same result and stores nothing more.",
        covers: &["R-14.4-01", "R-14.4-03"],
        needs: &[Need::Provisioning],
        how: "POST a signed message twice with one Idempotency-Key; both answers must have the same status and body, and the thread must hold one envelope.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-idempotency-key"),
        run: |cx| Box::pin(envelope_replay(cx)),
    },
    Case {
        id: "core.idempotency.envelope.key-reused",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.4"],
        requirement: "The same Idempotency-Key with a different request MUST give the first result or a deterministic error, never a second creation.",
        covers: &["R-14.4-03"],
        needs: &[Need::Provisioning],
        how: "POST envelope A with key K (201), then a different envelope B with K: expect a 4xx §24.1 error that repeats identically (or A's result), and B not stored.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-idempotency-key"),
        run: |cx| Box::pin(key_reused_for_other_body(cx)),
    },
    Case {
        id: "core.idempotency.envelope.error-replayed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.4"],
        requirement: "A repeated request with the same Idempotency-Key MUST return the same result even when that result was an error.",
        covers: &["R-14.4-03"],
        needs: &[Need::Provisioning],
        how: "Lock a thread; a participant's reply with key K is 409 THREAD_LOCKED; reopen the thread; the same reply with K must again be 409 THREAD_LOCKED (status and body equal but for request_id and timestamp).",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-idempotency-key"),
        run: |cx| Box::pin(error_replayed(cx)),
    },
    Case {
        id: "core.idempotency.delegations.replayed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.4", "v1.1 §16.5"],
        requirement: "POST /v1/delegations MUST honour Idempotency-Key.",
        covers: &["R-14.4-02", "R-14.4-03"],
        needs: &[Need::Provisioning, Need::Delegations],
        how: "POST one signed link (without an id) twice with one key; same status and body (same assigned id), and GET /v1/delegations lists one.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-idempotency-key"),
        run: |cx| Box::pin(delegation_replay(cx)),
    },
    Case {
        id: "core.idempotency.blobs.replayed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §14.4", "v1.1 §16.7"],
        requirement: "POST /v1/blobs MUST honour Idempotency-Key.",
        covers: &["R-14.4-02", "R-14.4-03"],
        needs: &[Need::Provisioning, Need::Blobs],
        how: "Initiate the same upload twice with one key; both answers must have the same status and body (one blob id).",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-idempotency-key"),
        run: |cx| Box::pin(blob_replay(cx)),
    },
];
