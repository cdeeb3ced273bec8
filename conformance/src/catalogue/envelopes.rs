//! Envelopes and signatures (v1.1 §7.3, §8, §16.1).

use crate::case::{Case, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;

async fn tampered_body(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.thread_id();
    let mut env = cx.signed_message(&alice, &t, None, &[&bob], "original");
    env["content"]["human"]["text"] = "altered after signing".into();
    let i = cx.send(&alice, &env).await?;
    cx.expect_error(i, 401, "SIGNATURE_INVALID")
}

async fn accepted_and_sequenced(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let reply = cx.signed_message(&bob, &t, root["id"].as_str(), &[&alice], "reply");
    let i = cx.send(&bob, &reply).await?;
    let stored = cx.body_of(i, 201)?;
    cx.expect_that(
        stored
            .pointer("/meta/event_seq")
            .and_then(|v| v.as_u64())
            .is_some(),
        "the stored envelope carries meta.event_seq (v1.1 §11.6, §16.1)",
        format!("meta = {}", stored["meta"]),
    )
}

/// Envelope cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.envelope.sig.tampered-body",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 §16.1", "v1.0 §7.2"],
        requirement: "A node MUST reject an envelope whose signed content was altered after signing (SIGNATURE_INVALID).",
        covers: &["R-7.3-01"],
        needs: &[Need::Provisioning],
        how: "Sign a message, change content.human.text, POST it; expect 401 SIGNATURE_INVALID with a §24.1 body.",
        mutant: Mutant::Quirk("accept-bad-signature"),
        run: |cx| Box::pin(tampered_body(cx)),
    },
    Case {
        id: "core.envelope.event-seq.assigned",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.6", "v1.1 §16.1"],
        requirement: "A node MUST assign meta.event_seq to every accepted envelope.",
        covers: &["R-11.6-01"],
        needs: &[Need::Provisioning],
        how: "Start a thread and reply; the 201 body of the reply must carry meta.event_seq.",
        mutant: Mutant::Quirk("omit-event-seq"),
        run: |cx| Box::pin(accepted_and_sequenced(cx)),
    },
];
