//! Envelopes and signatures (v1.1 §7.3, §8, §16.1).

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::data::MESSAGE_INTENT;
use crate::ctx::{Ctx, Ident, shapes, skip};
use crate::readings::sign_link;
use loom_protocol::envelope::envelope_signing_payload;
use serde_json::{Value, json};

const P: &[Need] = &[Need::Provisioning];
pub(super) const INVALID: Mutant = Mutant::Quirk("skip-envelope-validation");

/// The envelope a node answered (`POST` 2xx body or `GET` body), unwrapped when the node
/// wraps it in `envelope` ([`shapes::envelope`]).
pub(super) fn stored(body: &Value) -> Value {
    shapes::envelope(body)
}

/// Alice and Bob and an unsigned message from Alice to Bob in a fresh thread.
pub(super) async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, Value), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let env = cx.data.message(&alice, &t, None, &[&bob], "hello");
    Ok((alice, bob, env))
}

/// Applies `change` to a fresh message, signs it (so only the change is wrong) and expects
/// 400 ENVELOPE_INVALID (§24.2: schema/validation failure), beside the control: the same
/// message, same id, without the change.
pub(super) async fn invalid(cx: &mut Ctx, change: fn(&mut Value)) -> Verdict {
    invalid_with(cx, change, &["ENVELOPE_INVALID"], "").await
}

/// [`invalid`] where the sentence names other codes, or none (`codes` empty: any §24.1 4xx
/// error; issue 29, item 4).
pub(super) async fn invalid_with(
    cx: &mut Ctx,
    change: fn(&mut Value),
    codes: &[&str],
    why: &str,
) -> Verdict {
    let (alice, _, env) = setup(cx).await?;
    let mut probe = env.clone();
    change(&mut probe);
    alice.sign(&mut probe);
    let mut control = env;
    alice.sign(&mut control);
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same message without the change",
            codes,
            why,
        )
        .await
}

pub(super) fn remove(env: &mut Value, member: &str) {
    if let Some(o) = env.as_object_mut() {
        o.remove(member);
    }
}

async fn missing_loom(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "loom")).await
}

async fn missing_to(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "to")).await
}

async fn missing_content(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "content")).await
}

async fn empty_content(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["content"] = json!({"encrypted": false})).await
}

async fn wrong_version(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["loom"] = "1.0".into()).await
}

async fn no_primary(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["to"][0]["role"] = "cc".into()).await
}

async fn bad_priority(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["priority"] = "critical".into()).await
}

async fn message_without_human(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| {
        e["content"] = json!({
            "structured": {"intent": MESSAGE_INTENT, "parameters": {}},
            "encrypted": false,
        });
    })
    .await
}

async fn task_without_structured(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["type"] = "task".into()).await
}

async fn task_wrong_intent(cx: &mut Ctx) -> Verdict {
    invalid_with(
        cx,
        |e| {
            e["type"] = "task".into();
            e["content"]["structured"] = json!({"intent": "note.add@v1", "parameters": {}});
        },
        &["ENVELOPE_INVALID", "CAPABILITY_DENIED"],
        "§24.2 ENVELOPE_INVALID (fails schema) fits, and loom-core-1 rejects extension intents with CAPABILITY_DENIED",
    )
    .await
}

async fn from_type_mismatch(cx: &mut Ctx) -> Verdict {
    let (alice, _, env) = setup(cx).await?;
    let mut probe = env.clone();
    probe["from"]["type"] = "service".into();
    alice.sign(&mut probe);
    let mut control = env;
    alice.sign(&mut control);
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same message with the registered from.type",
            &[],
            "",
        )
        .await
}

async fn unknown_type(cx: &mut Ctx) -> Verdict {
    let (alice, bob, mut env) = setup(cx).await?;
    env["type"] = "x_vendor_widget".into();
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let path = format!("/v1/envelopes/{}", env["id"].as_str().unwrap_or_default());
    let i = cx.net.get(&path, &bob.token).await?;
    let got = stored(&cx.net.ok_body(i)?);
    cx.net.expect_eq(
        "type of the stored envelope as its recipient reads it",
        &env["type"],
        &got["type"],
    )
}

async fn duplicate(cx: &mut Ctx) -> Verdict {
    let (alice, _, mut env) = setup(cx).await?;
    alice.sign(&mut env);
    let c = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(c)?;
    let p = cx.net.send(&alice, &env).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the first submission of the same envelope",
        &["ENVELOPE_DUPLICATE"],
        "",
    )
}

async fn spoofed_sender(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _) = setup(cx).await?;
    let t = cx.data.thread_id();
    let env = cx.data.signed_message(&bob, &t, None, &[&alice], "as bob");
    // Signed correctly by Bob, but posted with Alice's session; the control is the same
    // envelope posted with Bob's.
    let p = cx.net.send(&alice, &env).await?;
    cx.net
        .expect_not_accepted(p, "a refusal: the sender is not the authenticated identity")?;
    let c = cx.net.send(&bob, &env).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same envelope posted with its sender's session",
        &[],
        "",
    )
}

/// `env` without the members the signature does not cover (v1.1 §7.2: `signature`, `meta`).
fn signed_members(env: &Value) -> Value {
    let mut v = env.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("signature");
        o.remove("meta");
    }
    v
}

/// Whether `env`'s signature verifies with `from`'s key.
fn verifies(env: &Value, from: &Ident) -> bool {
    loom_protocol::verify_envelope_signature(env, &from.id.signing_key().verifying_key()).is_ok()
}

async fn stored_round_trip(cx: &mut Ctx) -> Verdict {
    let (alice, bob, mut env) = setup(cx).await?;
    env["expires_at"] = Value::Null;
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    let answered = stored(&cx.net.created_body(i)?);
    let path = format!("/v1/envelopes/{}", env["id"].as_str().unwrap_or_default());
    let i = cx.net.get(&path, &bob.token).await?;
    let got = stored(&cx.net.ok_body(i)?);
    for (what, copy) in [
        ("the answer to POST", &answered),
        ("the recipient's GET", &got),
    ] {
        // Compare only what the node answered: a node may answer POST with less than the
        // envelope, but whatever it shows must be what was signed.
        if copy.get("signature").is_none() && what == "the answer to POST" {
            continue;
        }
        if envelope_signing_payload(copy) != envelope_signing_payload(&env) {
            let (expected, actual) = crate::show::difference_texts(
                &format!("{what}, signed members"),
                &signed_members(&env),
                &signed_members(copy),
            );
            return Err(Finding::Fail {
                expected: format!("{expected} (as sent; v1.1 §7.2, nulls included)"),
                actual,
                decisive: cx.net.last(),
            });
        }
        cx.net.expect_that(
            verifies(copy, &alice),
            format!("{what} verifies with the sender's key (v1.1 §7.3)"),
            "the signature no longer verifies",
        )?;
    }
    Ok(())
}

/// The largest envelope the harness builds to test the size limit (64 MiB).
const MAX_TESTED_ENVELOPE: u64 = 64 * 1024 * 1024;

async fn oversized(cx: &mut Ctx) -> Verdict {
    let Some(limit) = cx
        .target
        .capability("/limits/max_envelope_bytes")
        .and_then(Value::as_u64)
    else {
        return skip(
            "the target does not advertise limits.max_envelope_bytes in /v1/protocol/capabilities",
        );
    };
    if limit > MAX_TESTED_ENVELOPE {
        return skip(format!(
            "the target advertises limits.max_envelope_bytes = {limit}; the harness sends envelopes of at most {MAX_TESTED_ENVELOPE} bytes"
        ));
    }
    let (alice, _, env) = setup(cx).await?;
    let text = |n: u64| Value::from("x".repeat(usize::try_from(n).unwrap_or(usize::MAX)));
    let mut probe = env.clone();
    probe["content"]["human"]["text"] = text(limit);
    alice.sign(&mut probe);
    // The control: the same message a few KiB under the limit (the rest of the envelope is
    // far smaller than that).
    let mut control = env;
    control["content"]["human"]["text"] = text(limit.saturating_sub(8_192).max(limit / 2));
    alice.sign(&mut control);
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same message under the advertised limit",
            &["PAYLOAD_TOO_LARGE"],
            "",
        )
        .await
}

async fn agent_without_chain(cx: &mut Ctx) -> Verdict {
    let reading = cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot = cx.identity("bot", "agent").await?;
    let mut link = json!({
        "delegator": alice.address(),
        "delegate": bot.address(),
        "scope": ["*"],
        "created_at": cx.data.now(),
        "expires_at": "2099-01-01T00:00:00Z",
        "revocable": true,
        "allow_sub_delegation": false,
    });
    sign_link(
        &mut link,
        alice.id.signing_key(),
        alice.id.key_id_typed(),
        reading,
    );
    // With the chain the agent is accepted: the refusal below is about the chain alone.
    let t = cx.data.thread_id();
    let mut env = cx.data.message(&bot, &t, None, &[&alice], "from an agent");
    env["from"]["delegation_chain"] = json!([link]);
    bot.sign(&mut env);
    let c = cx.net.send(&bot, &env).await?;
    cx.net
        .expect_control(c, "the agent's envelope with its chain")?;
    let t = cx.data.thread_id();
    let env = cx
        .data
        .signed_message(&bot, &t, None, &[&alice], "no chain");
    let p = cx.net.send(&bot, &env).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the agent's envelope with its chain",
        &["DELEGATION_INVALID"],
        "",
    )
}

async fn tampered_body(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let control = cx
        .data
        .signed_message(&alice, &t, None, &[&bob], "original");
    let mut env = control.clone();
    env["content"]["human"]["text"] = "altered after signing".into();
    cx.net
        .send_probe_and_control(
            &alice,
            &env,
            &control,
            "the same envelope as signed",
            super::signatures::SIGNATURE_FAILED,
            "§24.2 names SIGNATURE_INVALID for a failed verification and the §24.1 example ENVELOPE_INVALID",
        )
        .await
}

async fn accepted_and_sequenced(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let reply = cx
        .data
        .signed_message(&bob, &t, root["id"].as_str(), &[&alice], "reply");
    let i = cx.net.send(&bob, &reply).await?;
    let body = stored(&cx.net.created_body(i)?);
    let mut seq = body.pointer("/meta/event_seq").cloned();
    if seq.is_none() {
        // The answer may omit meta; the stored envelope must carry it.
        let path = format!("/v1/envelopes/{}", reply["id"].as_str().unwrap_or_default());
        let i = cx.net.get(&path, &alice.token).await?;
        seq = stored(&cx.net.ok_body(i)?)
            .pointer("/meta/event_seq")
            .cloned();
    }
    cx.net.expect_that(
        seq.as_ref().is_some_and(Value::is_u64),
        "the accepted envelope carries meta.event_seq (an integer; v1.1 §11.6, §16.1)",
        format!("meta.event_seq = {}", seq.unwrap_or(Value::Null)),
    )
}

/// Envelope cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.envelope.sig.tampered-body",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.3", "v1.1 §16.1", "v1.0 §7.2"],
        requirement: "A node MUST reject an envelope whose signed content was altered after signing.",
        covers: &["R-7.3-06", "R-7.3-01"],
        needs: &[Need::Provisioning],
        how: "Sign a message, change content.human.text, POST it; expect 401 SIGNATURE_INVALID or 400 ENVELOPE_INVALID with a §24.1 body (§24.2 names the first, the §24.1 example the second).",
        interpretation: None,
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
        how: "Start a thread and reply; the reply as answered (or, when the answer omits meta, as read back) must carry an integer meta.event_seq.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-event-seq"),
        run: |cx| Box::pin(accepted_and_sequenced(cx)),
    },
    invalid_case!(
        "core.envelope.required.loom",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-01", "R-24.2-01"],
        "Envelopes MUST include loom; a node refuses one without it.",
        "Remove loom from a message",
        missing_loom
    ),
    invalid_case!(
        "core.envelope.required.to",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-09", "R-24.2-01"],
        "Envelopes MUST include to; a node refuses one without it.",
        "Remove to from a message",
        missing_to
    ),
    invalid_case!(
        "core.envelope.required.content",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-14", "R-24.2-01"],
        "Envelopes MUST include content; a node refuses one without it.",
        "Remove content from a message",
        missing_content
    ),
    invalid_case!(
        "core.envelope.content.cleartext-required",
        &["v1.1 §8.2"],
        &["R-8.2-15", "R-24.2-01"],
        "Unencrypted content MUST carry human or structured content.",
        "Set content to {encrypted: false} (neither human nor structured)",
        empty_content
    ),
    invalid_case!(
        "core.envelope.version.wrong",
        &["v1.1 §8.2"],
        &["R-8.2-01", "R-24.2-01"],
        "loom MUST be \"1.1\"; a node refuses another version string.",
        "Set loom to \"1.0\"",
        wrong_version
    ),
    invalid_case!(
        "core.envelope.to.no-primary",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-10", "R-24.2-01"],
        "to MUST contain at least one primary recipient.",
        "Make the only recipient a cc",
        no_primary
    ),
    invalid_case!(
        "core.envelope.priority.unknown",
        &["v1.1 §8.1"],
        &["R-24.2-01"],
        "priority is one of low, normal, high, urgent; a node refuses another value.",
        "Set priority to \"critical\"",
        bad_priority
    ),
    invalid_case!(
        "core.envelope.message.human-required",
        &["v1.1 §9.2", "v1.0 §9.2"],
        &["R-9.2-01", "R-24.2-01"],
        "message envelopes MUST include content.human.",
        "Replace a message's content with structured content only",
        message_without_human
    ),
    invalid_case!(
        "core.envelope.task.structured-required",
        &["v1.1 §9.2", "v1.0 §9.2"],
        &["R-9.2-03", "R-24.2-01"],
        "task envelopes MUST include content.structured.",
        "Turn a message (human content only) into type task",
        task_without_structured
    ),
    invalid_case!(
        "core.envelope.task.intent-family",
        &["v1.1 §9.2", "v1.1 §18.3"],
        &["R-9.2-04", "R-24.2-01"],
        "task envelopes MUST use a task.*@vN intent.",
        "Send a task whose intent is note.add@v1",
        task_wrong_intent,
        expect: "400 ENVELOPE_INVALID or 403 CAPABILITY_DENIED (loom-core-1: extension intents)"
    ),
    Case {
        id: "core.envelope.from.type-mismatch",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.5", "v1.1 §6.4"],
        requirement: "A node MUST reject an envelope whose from.type differs from the sender's registered identity type.",
        covers: &["R-13.5-03", "R-6.4-04"],
        needs: P,
        how: "A human sends a correctly signed message with from.type = \"service\"; expect a 4xx refusal with a §24.1 body (the spec names no code).",
        interpretation: None,
        mutant: INVALID,
        run: |cx| Box::pin(from_type_mismatch(cx)),
    },
    Case {
        id: "core.envelope.type.unknown-accepted",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §9.1", "v1.1 §8.2"],
        requirement: "Nodes MUST accept, store and relay envelopes with unknown type values.",
        covers: &["R-9.1-01", "R-9.1-02", "R-9.1-03", "R-8.2-05"],
        needs: P,
        how: "Send a signed envelope of type x_vendor_widget (201); the recipient GETs it and sees the same type.",
        interpretation: None,
        mutant: Mutant::Quirk("reject-unknown-types"),
        run: |cx| Box::pin(unknown_type(cx)),
    },
    Case {
        id: "core.envelope.id.duplicate",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.1 §24.2"],
        requirement: "A node MUST refuse a second envelope with a stored id (409 ENVELOPE_DUPLICATE).",
        covers: &["R-24.2-12"],
        needs: P,
        how: "POST the same signed message twice (no Idempotency-Key); expect 201 then 409 ENVELOPE_DUPLICATE.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-duplicate-ids"),
        run: |cx| Box::pin(duplicate(cx)),
    },
    Case {
        id: "core.envelope.sender.spoofed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.1", "v1.0 §15.2"],
        requirement: "POST /v1/envelopes MUST validate authorization: a session cannot submit an envelope from another identity.",
        covers: &["R-16.1-02"],
        needs: P,
        how: "Bob signs a message correctly; Alice POSTs it with her token; expect a 4xx refusal with a §24.1 body (403 CAPABILITY_DENIED is usual; the spec names no code for it).",
        interpretation: None,
        mutant: Mutant::Quirk("allow-sender-spoofing"),
        run: |cx| Box::pin(spoofed_sender(cx)),
    },
    Case {
        id: "core.envelope.stored.round-trip",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §16.1", "v1.1 §7.2", "v1.1 §8.1"],
        requirement: "A node MUST deliver the envelope as signed: the stored copy (the answer to POST and the recipient's GET) keeps every signed member, null included, and verifies with the sender's key.",
        covers: &["R-16.1-04", "R-7.2-06"],
        needs: P,
        how: "Send a message with parent_id and expires_at null; the answer to POST (when it shows the envelope) and Bob's GET have the same RFC 8785 signed form as sent (a difference names its JSON path) and verify with Alice's key.",
        interpretation: None,
        mutant: Mutant::Quirk("drop-null-members"),
        run: |cx| Box::pin(stored_round_trip(cx)),
    },
    Case {
        id: "core.envelope.size.over-limit",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2"],
        requirement: "A node MUST refuse an envelope over its advertised size limit with 413 PAYLOAD_TOO_LARGE.",
        covers: &["R-24.2-15"],
        needs: P,
        how: "Read limits.max_envelope_bytes from /v1/protocol/capabilities (skip if absent); send a message whose text alone has that many bytes; expect 413 PAYLOAD_TOO_LARGE.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-size-limit"),
        run: |cx| Box::pin(oversized(cx)),
    },
    Case {
        id: "core.envelope.agent.chain-required",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.5", "v1.1 §18.2"],
        requirement: "A node MUST reject an agent envelope without a delegation chain (DELEGATION_INVALID).",
        covers: &["R-13.3-02", "R-13.3-12", "R-24.2-03"],
        needs: &[Need::Provisioning, Need::Registration, Need::Agent],
        how: "A human delegates scope * to a fresh agent; the agent's message with that chain is accepted (201); its message without from.delegation_chain gets 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(agent_without_chain(cx)),
    },
];
