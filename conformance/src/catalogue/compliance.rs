//! Retraction, erasure and legal hold over the API (v1.1 §20.7, §25.2, §25.3):
//! `DELETE /v1/envelopes/{id}` by the sender erases the content, emits `envelope.retracted`,
//! and is refused with `LEGAL_HOLD_ACTIVE` under `sys.legal_hold`.
//!
//! §25.2 requires deletion but names no route; the only one v1.1 names is the optional §20.7
//! `DELETE /v1/envelopes/{id}`. These cases need that route (the `retraction` feature, found
//! by probing): a node without it gets `unsupported` with the probe's answer, not `fail`.

use super::envelopes::stored;
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident, skip};
use serde_json::{Value, json};

/// Skips when the target advertises no retract window.
fn retraction_offered(cx: &Ctx) -> Verdict {
    match cx
        .target
        .capability("/limits/retract_window_secs")
        .and_then(Value::as_u64)
    {
        Some(0) => skip(
            "the target advertises limits.retract_window_secs = 0 (no retraction, v1.1 §20.7 MAY)",
        ),
        _ => Ok(()),
    }
}

/// Alice sends Bob a message with `text` (and `labels`) in a fresh thread; returns it.
async fn sent(
    cx: &mut Ctx,
    alice: &Ident,
    bob: &Ident,
    text: &str,
    labels: Option<Value>,
) -> Result<Value, Finding> {
    let t = cx.data.thread_id();
    let mut env = cx.data.message(alice, &t, None, &[bob], text);
    if let Some(l) = labels {
        env["labels"] = l;
    }
    alice.sign(&mut env);
    let i = cx.net.send(alice, &env).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step("sending the envelope"))?;
    Ok(env)
}

async fn delete(cx: &mut Ctx, who: &Ident, env: &Value) -> Result<Ex, Finding> {
    let id = env["id"].as_str().unwrap_or("");
    cx.net
        .call(
            "DELETE",
            &format!("/v1/envelopes/{id}"),
            Some(&who.token),
            None,
        )
        .await
}

fn succeeded(cx: &Ctx, i: Ex) -> Verdict {
    cx.net.expect_at(
        i,
        cx.net.transcript(i).is_success(),
        "DELETE /v1/envelopes/{id} by the sender within the retract window succeeds (v1.1 §20.7, §25.2)",
        format!(
            "HTTP {}{}",
            cx.net.status(i),
            crate::show::error_summary(cx.net.transcript(i))
        ),
    )
}

async fn erases_content(cx: &mut Ctx) -> Verdict {
    retraction_offered(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let secret = format!("erase me {}", cx.data.envelope_id());
    let env = sent(cx, &alice, &bob, &secret, None).await?;
    let i = delete(cx, &alice, &env).await?;
    succeeded(cx, i)?;
    let id = env["id"].as_str().unwrap_or("");
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await?;
    let t = cx.net.transcript(i);
    let body = cx.net.text(i);
    cx.net.expect_that(
        !body.contains(&secret),
        "the recipient's GET no longer returns the erased content (v1.1 §25.2)",
        format!(
            "HTTP {}: {}",
            t.status,
            crate::show::preview(&t.response_body)
        ),
    )?;
    let v = stored(&cx.net.json(i));
    let marked = v["retracted"] == true
        || v["erased"] == true
        || v["retracted_at"].is_string()
        || v["meta"]["retracted_at"].is_string();
    cx.net.expect_that(
        [404, 410].contains(&t.status) || (t.status == 200 && marked),
        "GET shows the envelope retracted: 404/410, or 200 marked retracted/erased (v1.1 §20.7)",
        format!(
            "HTTP {}: {}",
            t.status,
            crate::show::preview(&t.response_body)
        ),
    )
}

async fn non_sender_refused(cx: &mut Ctx) -> Verdict {
    retraction_offered(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let env = sent(cx, &alice, &bob, "not bob's to retract", None).await?;
    let p = delete(cx, &bob, &env).await?;
    cx.net.expect_not_accepted(
        p,
        "a 4xx refusal when a recipient tries to retract the sender's envelope",
    )?;
    let id = env["id"].as_str().unwrap_or("");
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{id}"), &bob.token)
        .await?;
    let got = stored(&cx.net.ok_body(i)?);
    cx.net.expect_eq(
        "content.human.text",
        &env["content"]["human"]["text"],
        &got["content"]["human"]["text"],
    )?;
    // The control: the sender retracting an envelope of her own.
    let own = sent(cx, &alice, &bob, "alice's to retract", None).await?;
    let c = delete(cx, &alice, &own).await?;
    cx.net
        .expect_refused_beside(p, c, "the sender retracting her own envelope", &[], "")
}

async fn legal_hold_envelope(cx: &mut Ctx) -> Verdict {
    retraction_offered(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let free = sent(cx, &alice, &bob, "not held", None).await?;
    let c = delete(cx, &alice, &free).await?;
    cx.net
        .expect_control(c, "retracting an envelope without the hold (v1.1 §20.7)")?;
    let held = sent(cx, &alice, &bob, "held", Some(json!(["sys.legal_hold"]))).await?;
    let i = delete(cx, &alice, &held).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "retracting an envelope without the hold",
        &["LEGAL_HOLD_ACTIVE"],
        "",
    )
}

async fn legal_hold_thread(cx: &mut Ctx) -> Verdict {
    retraction_offered(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let mut op = cx.data.op(
        &alice,
        &t,
        "thread.update@v1",
        json!({"labels": ["sys.legal_hold"]}),
    );
    alice.sign(&mut op);
    // The control: a retraction in a thread without the hold.
    let free = sent(cx, &alice, &bob, "not held", None).await?;
    let c = delete(cx, &alice, &free).await?;
    cx.net
        .expect_control(c, "retracting an envelope without the hold (v1.1 §20.7)")?;
    let i = cx.net.send(&alice, &op).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "labelling the thread sys.legal_hold",
        ))?;
    let i = delete(cx, &alice, &root).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "retracting an envelope outside a held thread",
        &["LEGAL_HOLD_ACTIVE"],
        "",
    )
}

async fn retracted_event(cx: &mut Ctx) -> Verdict {
    retraction_offered(cx)?;
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let env = sent(cx, &alice, &bob, "soon retracted", None).await?;
    let i = delete(cx, &alice, &env).await?;
    succeeded(cx, i)?;
    let id = env["id"].as_str().unwrap_or("");
    let evs = cx.net.events(&bob, None).await?;
    let found = evs.iter().any(|e| {
        e["type"] == "envelope.retracted" && crate::ctx::shapes::event_envelope(e) == Some(id)
    });
    cx.net.expect_that(
        found,
        format!(
            "an envelope.retracted event for {id} in the recipient's events (v1.1 §20.7, §17.3)"
        ),
        format!(
            "event types = {:?}",
            evs.iter()
                .map(|e| e["type"].as_str().unwrap_or("?"))
                .collect::<Vec<_>>()
        ),
    )
}

const NEEDS: &[Need] = &[Need::Provisioning, Need::Retraction];

/// Compliance cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.compliance.retract.erases-content",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §25.2", "v1.1 §20.7"],
        requirement: "A node MUST support deleting envelope content: after the sender's DELETE the content is gone and GET shows it retracted.",
        covers: &["R-25.2-01", "R-20.7-01"],
        needs: NEEDS,
        how: "Alice sends Bob a message with a unique text and DELETEs it (2xx); Bob's GET /v1/envelopes/{id} must not contain the text and must be 404/410 or 200 marked retracted.",
        interpretation: None,
        mutant: Mutant::Quirk("retract-keeps-content"),
        run: |cx| Box::pin(erases_content(cx)),
    },
    Case {
        id: "core.compliance.retract.non-sender-refused",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §20.7", "v1.1 §25.2"],
        requirement: "Only the sender may retract an envelope; a recipient's DELETE is refused and changes nothing.",
        covers: &["R-20.7-01"],
        needs: NEEDS,
        how: "Bob DELETEs Alice's envelope: expect a 4xx §24.1 error, and Bob still reads the content.",
        interpretation: Some(
            "§20.7 does not say who may retract; that only the sender may is the reference node's policy and a recommendation here.",
        ),
        mutant: Mutant::NotApplicable(
            "§20.7 does not say who may retract; the sender-only rule is the reference node's policy",
        ),
        run: |cx| Box::pin(non_sender_refused(cx)),
    },
    Case {
        id: "core.compliance.legal-hold.envelope-label",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §25.3", "v1.1 §24.2"],
        requirement: "Deleting an envelope labelled sys.legal_hold MUST be rejected with LEGAL_HOLD_ACTIVE.",
        covers: &["R-25.3-01", "R-24.2-07"],
        needs: NEEDS,
        how: "Control: the sender deletes an unlabelled envelope (2xx). Then DELETE of an envelope labelled sys.legal_hold must be 403 LEGAL_HOLD_ACTIVE.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-legal-hold"),
        run: |cx| Box::pin(legal_hold_envelope(cx)),
    },
    Case {
        id: "core.compliance.legal-hold.thread-label",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §25.3", "v1.1 §11.1"],
        requirement: "Deleting an envelope of a thread labelled sys.legal_hold MUST be rejected with LEGAL_HOLD_ACTIVE.",
        covers: &["R-25.3-01", "R-24.2-07"],
        needs: NEEDS,
        how: "The owner labels the thread sys.legal_hold with thread.update@v1; DELETE of the root must be 403 LEGAL_HOLD_ACTIVE.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-legal-hold"),
        run: |cx| Box::pin(legal_hold_thread(cx)),
    },
    Case {
        id: "core.compliance.retract.event",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §20.7", "v1.1 §17.3", "v1.1 §16.8"],
        requirement: "A node that supports retraction MUST emit an envelope.retracted event.",
        covers: &["R-20.7-02"],
        needs: &[Need::Provisioning, Need::Retraction, Need::Events],
        how: "Alice retracts a message to Bob; Bob's GET /v1/events must hold an envelope.retracted event for it.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-retracted-event"),
        run: |cx| Box::pin(retracted_event(cx)),
    },
];
