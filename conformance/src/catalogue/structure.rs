//! Envelope structure (v1.1 §6.1, §7.2, §8.2, §8.4, §9.2, §13.2, §13.3): required members,
//! address form, ID prefixes, per-type content rules, omitted audience, lone surrogates and
//! the agent envelope signature.

use super::envelopes::{INVALID, invalid, remove, setup};
use crate::case::{Case, Ex, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, TestData};
use crate::readings::sign_link;
use serde_json::{Value, json};

const P: &[Need] = &[Need::Provisioning];
const AGENT: &[Need] = &[Need::Provisioning, Need::Registration, Need::Agent];
/// `id` with its type prefix replaced by `prefix`.
fn reprefixed(id: &Value, prefix: &str) -> Value {
    let s = id.as_str().unwrap_or_default();
    let ulid = s.split_once('_').map_or(s, |(_, u)| u);
    json!(format!("{prefix}{ulid}"))
}

async fn missing_id(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "id")).await
}

async fn missing_thread_id(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "thread_id")).await
}

/// A required member missing is the schema failure §24.2 names ENVELOPE_INVALID for. Any
/// other refusal would not show that `from` is checked at all: without it no sender key can
/// be looked up, so a node that skips the check still refuses, for its signature (the
/// `skip-envelope-validation` quirk proves it).
async fn missing_from(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "from")).await
}

async fn missing_created_at(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| remove(e, "created_at")).await
}

async fn id_wrong_prefix(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["id"] = reprefixed(&e["id"], "thr_")).await
}

async fn thread_id_wrong_prefix(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["thread_id"] = reprefixed(&e["thread_id"], "env_")).await
}

async fn id_not_ulid(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["id"] = "env_not-a-ulid".into()).await
}

async fn device_id_too_long(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["from"]["device_id"] = "d".repeat(129).into()).await
}

async fn device_id_empty(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["from"]["device_id"] = "".into()).await
}

async fn receipt_without_structured(cx: &mut Ctx) -> Verdict {
    invalid(cx, |e| e["type"] = "receipt".into()).await
}

async fn thread_op_wrong_intent(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let mut op = cx.data.op(&alice, &t, "note.add@v1", json!({}));
    alice.sign(&mut op);
    let mut control = op.clone();
    control["content"]["structured"] =
        json!({"intent": "thread.update@v1", "parameters": {"subject": "renamed"}});
    alice.sign(&mut control);
    cx.net
        .send_probe_and_control(
            &alice,
            &op,
            &control,
            "the same thread_op with a thread.* intent",
            &["ENVELOPE_INVALID", "CAPABILITY_DENIED"],
            "§24.2 ENVELOPE_INVALID (fails schema) fits, and loom-core-1 rejects extension intents with CAPABILITY_DENIED",
        )
        .await
}

/// A message whose recipient address is `spelled(bob)` instead of bob's canonical address:
/// refused beside the same message to the canonical address. Refusing is the only way a node
/// can keep the signed copy intact and canonical.
async fn to_address_refused(cx: &mut Ctx, spelled: fn(&str) -> String) -> Verdict {
    let (alice, bob, env) = setup(cx).await?;
    let mut probe = env.clone();
    probe["to"][0]["identity"] = spelled(bob.address()).into();
    alice.sign(&mut probe);
    let mut control = env;
    alice.sign(&mut control);
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same message to the canonical address",
            &[],
            "",
        )
        .await
}

async fn to_with_fragment(cx: &mut Ctx) -> Verdict {
    to_address_refused(cx, |a| format!("{a}#device-1")).await
}

async fn to_mixed_case(cx: &mut Ctx) -> Verdict {
    to_address_refused(cx, TestData::upper_case_address).await
}

async fn omitted_audience_is_thread(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob, &carol]).await?;
    let mut env = cx
        .data
        .message(&alice, &t, root["id"].as_str(), &[&bob], "to bob only");
    remove(&mut env, "audience");
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let path = format!("/v1/envelopes/{}", env["id"].as_str().unwrap_or_default());
    let i = cx.net.get(&path, &carol.token).await?;
    cx.net.expect_ok(i)
}

/// Posts a signed message whose JSON text carries a lone surrogate (`\ud800`) where the
/// signature covers U+FFFD, then the control: the same envelope as valid JSON. Returns both.
async fn lone_surrogate_pair(cx: &mut Ctx) -> Result<(Ex, Ex), Finding> {
    let (alice, _, mut env) = setup(cx).await?;
    // Signed over U+FFFD, so a node that reads the lone surrogate as U+FFFD accepts it.
    env["content"]["human"]["text"] = "bad \u{FFFD} text".into();
    alice.sign(&mut env);
    let text = serde_json::to_string(&env).unwrap_or_default();
    let text = text.replacen("bad \u{FFFD} text", "bad \\ud800 text", 1);
    let p = cx
        .net
        .exchange(
            "POST",
            "/v1/envelopes",
            &[],
            Some(text.into_bytes()),
            Some(&alice.token),
        )
        .await?;
    cx.net
        .expect_not_accepted(p, "a refusal of JSON text with a lone surrogate")?;
    let c = cx.net.send(&alice, &env).await?;
    Ok((p, c))
}

const SURROGATE_CONTROL: &str =
    "the same envelope as valid JSON (U+FFFD where the probe has a lone surrogate)";

async fn lone_surrogate(cx: &mut Ctx) -> Verdict {
    let (p, c) = lone_surrogate_pair(cx).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        SURROGATE_CONTROL,
        // §7.2 makes the refusal mandatory and names no code: any §24.1 4xx error.
        &[],
        "",
    )
}

async fn lone_surrogate_code(cx: &mut Ctx) -> Verdict {
    let (p, c) = lone_surrogate_pair(cx).await?;
    cx.net
        .expect_refused_beside(p, c, SURROGATE_CONTROL, &["ENVELOPE_INVALID"], "")
}

async fn envelope_not_found(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let id = cx.data.envelope_id();
    let i = cx
        .net
        .get(&format!("/v1/envelopes/{id}"), &alice.token)
        .await?;
    // The control: the same route for an envelope alice sent.
    let bob = cx.identity("bob", "human").await?;
    let (_, root) = cx.start_thread(&alice, &[&bob]).await?;
    let sent = root["id"].as_str().unwrap_or_default().to_owned();
    let c = cx
        .net
        .get(&format!("/v1/envelopes/{sent}"), &alice.token)
        .await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "reading an envelope alice sent",
        &["ENVELOPE_NOT_FOUND"],
        "",
    )
}

/// A human, an agent and a signed root link delegating `scope` to the agent.
async fn delegated(cx: &mut Ctx, scope: Value) -> Result<(Ident, Ident, Value), Finding> {
    let reading = cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot = cx.identity("bot", "agent").await?;
    let mut link = json!({
        "delegator": alice.address(),
        "delegate": bot.address(),
        "scope": scope,
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
    Ok((alice, bot, link))
}

/// A message from the agent to the human carrying `link` as its chain, signed by the agent.
fn agent_message(cx: &mut Ctx, alice: &Ident, bot: &Ident, link: &Value, text: &str) -> Value {
    let t = cx.data.thread_id();
    let mut env = cx.data.message(bot, &t, None, &[alice], text);
    env["from"]["delegation_chain"] = json!([link]);
    bot.sign(&mut env);
    env
}

async fn agent_envelope_tampered(cx: &mut Ctx) -> Verdict {
    let (alice, bot, link) = delegated(cx, json!(["*"])).await?;
    // Control: the same agent and chain, signed correctly, are accepted.
    let env = agent_message(cx, &alice, &bot, &link, "from an agent");
    let i = cx.net.send(&bot, &env).await?;
    cx.net
        .expect_control(i, "the agent's message, signed, under its chain")?;
    let control = agent_message(cx, &alice, &bot, &link, "original");
    let mut env = control.clone();
    env["content"]["human"]["text"] = "altered after signing".into();
    cx.net
        .send_probe_and_control(
            &bot,
            &env,
            &control,
            "the same agent envelope as signed",
            &["SIGNATURE_INVALID", "ENVELOPE_INVALID", "DELEGATION_INVALID"],
            "§24.2 names SIGNATURE_INVALID for a failed verification, the §24.1 example ENVELOPE_INVALID, and §13.3 rejects a failing agent envelope with DELEGATION_INVALID",
        )
        .await
}

async fn malformed_scope(cx: &mut Ctx) -> Verdict {
    let (alice, bot, link) = delegated(cx, json!(["*"])).await?;
    let env = agent_message(cx, &alice, &bot, &link, "control");
    let c = cx.net.send(&bot, &env).await?;
    cx.net
        .expect_control(c, "the agent's envelope under a link scoped [\"*\"]")?;
    // `*` still allows the action; only the second scope's syntax is wrong.
    let (alice, bot, link) = delegated(cx, json!(["*", "Message..Send"])).await?;
    let env = agent_message(cx, &alice, &bot, &link, "malformed scope");
    let p = cx.net.send(&bot, &env).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the agent's envelope under a link scoped [\"*\"]",
        &["DELEGATION_INVALID"],
        "",
    )
}

async fn event_ids_prefixed(cx: &mut Ctx) -> Verdict {
    let (alice, bob, env) = setup(cx).await?;
    let mut env = env;
    alice.sign(&mut env);
    let i = cx.net.send(&alice, &env).await?;
    cx.net.expect_created(i)?;
    let evs = cx.net.events(&bob, None).await?;
    cx.net.expect_that(
        !evs.is_empty(),
        "at least one event for the recipient of a new envelope",
        "no events",
    )?;
    for e in &evs {
        let id = crate::ctx::shapes::event_id(e);
        let ok = id
            .and_then(|s| s.strip_prefix("evt_"))
            .is_some_and(|u| u.len() == 26 && u.bytes().all(|b| b.is_ascii_alphanumeric()));
        cx.net.expect_that(
            ok,
            "every event id is evt_ + a 26-character ULID (v1.1 §8.4)",
            format!("event id {id:?}"),
        )?;
    }
    Ok(())
}

/// Structure cases.
pub const CASES: &[Case] = &[
    invalid_case!(
        "core.structure.required.id",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-02", "R-24.2-01"],
        "Envelopes MUST include id; a node refuses one without it.",
        "Remove id from a message",
        missing_id
    ),
    invalid_case!(
        "core.structure.required.thread-id",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-03", "R-24.2-01"],
        "Envelopes MUST include thread_id; a node refuses one without it.",
        "Remove thread_id from a message",
        missing_thread_id
    ),
    invalid_case!(
        "core.structure.required.from",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-06", "R-24.2-01"],
        "Envelopes MUST include from; a node refuses one without it.",
        "Remove from from a message",
        missing_from
    ),
    invalid_case!(
        "core.structure.required.created-at",
        &["v1.1 §8.2", "v1.0 §8.2"],
        &["R-8.2-13", "R-24.2-01"],
        "Envelopes MUST include created_at; a node refuses one without it.",
        "Remove created_at from a message",
        missing_created_at
    ),
    invalid_case!(
        "core.structure.id.wrong-prefix",
        &["v1.1 §8.4", "v1.1 §8.2"],
        &["R-8.4-02", "R-8.4-01", "R-8.2-02", "R-24.2-01"],
        "Envelope IDs MUST use the prefix env_; a node refuses an envelope whose id has another prefix.",
        "Give a message the id thr_<ULID>",
        id_wrong_prefix
    ),
    invalid_case!(
        "core.structure.thread-id.wrong-prefix",
        &["v1.1 §8.4", "v1.1 §8.2"],
        &["R-8.4-03", "R-8.4-01", "R-8.2-03", "R-24.2-01"],
        "Thread IDs MUST use the prefix thr_; a node refuses an envelope whose thread_id has another prefix.",
        "Give a message the thread_id env_<ULID>",
        thread_id_wrong_prefix
    ),
    invalid_case!(
        "core.structure.id.not-ulid",
        &["v1.1 §8.4", "v1.1 §8.2"],
        &["R-8.4-01", "R-8.2-02", "R-24.2-01"],
        "LOOM IDs MUST be ULIDs with a type prefix; a node refuses an envelope id that is not one.",
        "Give a message the id env_not-a-ulid",
        id_not_ulid
    ),
    invalid_case!(
        "core.structure.device-id.too-long",
        &["v1.1 §8.2"],
        &["R-8.2-08", "R-24.2-01"],
        "from.device_id, when present, MUST be 1-128 characters: 129 is refused.",
        "Set from.device_id to 129 characters",
        device_id_too_long
    ),
    invalid_case!(
        "core.structure.device-id.empty",
        &["v1.1 §8.2"],
        &["R-8.2-08", "R-24.2-01"],
        "from.device_id, when present, MUST be 1-128 characters: the empty string is refused.",
        "Set from.device_id to \"\"",
        device_id_empty
    ),
    invalid_case!(
        "core.structure.receipt.structured-required",
        &["v1.1 §9.2", "v1.0 §9.2"],
        &["R-9.2-05", "R-24.2-01"],
        "receipt envelopes MUST include content.structured.",
        "Turn a message (human content only) into type receipt",
        receipt_without_structured
    ),
    Case {
        id: "core.structure.thread-op.intent-family",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §9.2", "v1.1 §11.1"],
        requirement: "thread_op envelopes MUST carry a thread.*, capability.* or encryption.* intent.",
        covers: &["R-9.2-07", "R-24.2-01"],
        needs: P,
        how: "The owner of a fresh thread sends a correctly signed thread_op with intent note.add@v1; expect 400 ENVELOPE_INVALID or 403 CAPABILITY_DENIED (loom-core-1 rejects extension intents with it).",
        interpretation: None,
        mutant: INVALID,
        run: |cx| Box::pin(thread_op_wrong_intent(cx)),
    },
    Case {
        id: "core.structure.address.fragment",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1"],
        requirement: "Nodes MUST NOT transmit fragment identifiers in envelopes: an envelope addressed to loom://…#device is not stored or delivered.",
        covers: &["R-6.1-03"],
        needs: P,
        how: "Sign a message whose primary recipient is bob's address + #device-1; expect a 4xx refusal with a §24.1 body (accepting it would deliver the fragment, since the signed copy cannot be changed).",
        interpretation: None,
        mutant: INVALID,
        run: |cx| Box::pin(to_with_fragment(cx)),
    },
    Case {
        id: "core.structure.address.mixed-case",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.1"],
        requirement: "Addresses MUST be serialized in canonical lowercase in envelopes: an envelope with a mixed-case recipient is refused.",
        covers: &["R-6.1-05"],
        needs: P,
        how: "Sign a message whose primary recipient is bob's address with its first letter upper-cased; expect a 4xx refusal with a §24.1 body (the signed copy cannot be lowercased).",
        interpretation: None,
        mutant: INVALID,
        run: |cx| Box::pin(to_mixed_case(cx)),
    },
    Case {
        id: "core.structure.audience.omitted-is-thread",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.2", "v1.1 §8.3"],
        requirement: "When audience is omitted, nodes MUST treat it as mode thread: every thread participant can read it.",
        covers: &["R-8.2-12"],
        needs: P,
        how: "Alice starts a thread with Bob and Carol; she replies to Bob only without audience (201); Carol GETs the reply: 200.",
        interpretation: None,
        mutant: Mutant::Quirk("omitted-audience-as-recipients"),
        run: |cx| Box::pin(omitted_audience_is_thread(cx)),
    },
    Case {
        id: "core.structure.json.lone-surrogate",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §7.2"],
        requirement: "Lone surrogate code points MUST be rejected.",
        covers: &["R-7.2-07", "R-24.2-01"],
        needs: P,
        how: "Sign a message whose text holds U+FFFD, then send its JSON text with that character written \\ud800 (a lone surrogate escape); expect a §24.1 4xx error (§7.2 names no code; the SHOULD twin asks for ENVELOPE_INVALID).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-lone-surrogates"),
        run: |cx| Box::pin(lone_surrogate(cx)),
    },
    Case {
        id: "core.structure.json.lone-surrogate.code",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §24.2", "v1.1 §7.2"],
        requirement: "A body with a lone surrogate escape should be refused with 400 ENVELOPE_INVALID.",
        covers: &["R-24.2-01", "R-7.2-07"],
        needs: P,
        how: "Sign a message whose text holds U+FFFD, send its JSON text with that character written as a lone surrogate escape; expect 400 ENVELOPE_INVALID.",
        interpretation: Some(
            "§7.2 requires the rejection without naming a code; the text is not valid JSON for a signed form, so ENVELOPE_INVALID is recommended and SIGNATURE_INVALID also passes the MUST case.",
        ),
        mutant: Mutant::Quirk("accept-lone-surrogates"),
        run: |cx| Box::pin(lone_surrogate_code(cx)),
    },
    Case {
        id: "core.structure.envelope.not-found",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §24.2", "v1.1 §16.1"],
        requirement: "A node MUST report a missing envelope with 404 ENVELOPE_NOT_FOUND.",
        covers: &["R-24.2-10"],
        needs: P,
        how: "GET /v1/envelopes/{a fresh env_ id}; expect 404 ENVELOPE_NOT_FOUND with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("bare-error-bodies"),
        run: |cx| Box::pin(envelope_not_found(cx)),
    },
    Case {
        id: "core.structure.id.event-prefix",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.4", "v1.1 §16.8"],
        requirement: "Event IDs MUST use the prefix evt_ (a ULID with a type prefix).",
        covers: &["R-8.4-07", "R-8.4-01"],
        needs: &[Need::Provisioning, Need::Events],
        how: "Alice sends Bob a message; every event in Bob's GET /v1/events has an id of the form evt_ + 26-character ULID.",
        interpretation: None,
        mutant: Mutant::Quirk("unprefixed-event-ids"),
        run: |cx| Box::pin(event_ids_prefixed(cx)),
    },
    Case {
        id: "core.structure.agent.signature-verified",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §7.3"],
        requirement: "When receiving an envelope from an agent, nodes MUST verify the envelope signature.",
        covers: &["R-13.3-01", "R-24.2-02"],
        needs: AGENT,
        how: "A human delegates * to a fresh agent; the agent's signed message with that chain is accepted (201); a second one altered after signing gets 401 SIGNATURE_INVALID, 400 ENVELOPE_INVALID (§24.1 example) or 403 DELEGATION_INVALID (§13.3 \"Reject on failure\").",
        interpretation: None,
        mutant: Mutant::Quirk("accept-bad-signature"),
        run: |cx| Box::pin(agent_envelope_tampered(cx)),
    },
    Case {
        id: "core.structure.delegation.scope-syntax",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.2", "v1.1 §13.3"],
        requirement: "Delegation scopes MUST be dot-separated namespaces with optional wildcards: a link with a malformed scope is refused.",
        covers: &["R-13.2-01", "R-24.2-03"],
        needs: AGENT,
        how: "Control: an agent message under a root link with scope [*] is accepted (201). Then a link with scope [*, Message..Send] (upper case, empty segment): expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(malformed_scope(cx)),
    },
];
