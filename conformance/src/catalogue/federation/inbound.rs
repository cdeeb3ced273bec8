//! Inbound delivery (v1.1 §15.3–§15.5, §23.2, loom-core-1 item 5): the fake peer delivers
//! to the target. Every negative case uses a fresh peer (a node may legally quarantine a
//! peer that misbehaved) and breaks exactly one thing of an otherwise valid, signed delivery;
//! "rejected" means a 4xx answer and the envelope not reaching its recipient (no error code
//! is asserted: §24.2 names none for these conditions).

use super::kit::{
    Req, as_ident, delivery, expect_not_stored, expect_rejected, expect_stored, id_of, message,
    send, sending_peer, thread_of,
};
use crate::case::{Case, Ex, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident};
use serde_json::Value;

const NEEDS: &[Need] = &[Need::Provisioning, Need::FederationPeer];

/// A target-side recipient, a fresh peer hosting `alice`, and a signed message alice → bob.
async fn scene(cx: &mut Ctx) -> Result<(Ident, super::kit::Fed, Ident, Value), Finding> {
    let bob = cx.identity("bob", "human").await?;
    let f = sending_peer(cx).await?;
    let alice = as_ident(f.peer.host("alice"));
    let env = message(cx, &alice, &bob, "federated hello");
    Ok((bob, f, alice, env))
}

/// [`scene`] for a refusal case: first the control — a valid delivery of another message
/// from the same peer, accepted and stored — then the pieces of the probe; returns the
/// control's exchange last.
async fn negative_scene(
    cx: &mut Ctx,
) -> Result<(Ident, super::kit::Fed, Ident, Value, Ex), Finding> {
    let (bob, f, alice, env) = scene(cx).await?;
    let control_env = message(cx, &alice, &bob, "the control delivery");
    let req = delivery(cx, &f.peer, vec![control_env.clone()], f.peer.now());
    let c = send(cx, &req).await?;
    cx.net
        .expect_control(c, "a valid signed delivery from the same peer")?;
    expect_stored(cx, &bob, &id_of(&control_env))
        .await
        .map_err(crate::finding::setup_step(
            "the control delivery reaches its recipient",
        ))?;
    Ok((bob, f, alice, env, c))
}

async fn valid_delivery(cx: &mut Ctx) -> Verdict {
    let (bob, f, _, env) = scene(cx).await?;
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    cx.net.expect_ok(ex)?;
    expect_stored(cx, &bob, &id_of(&env)).await
}

async fn receipt(cx: &mut Ctx) -> Verdict {
    let (_, f, _, env) = scene(cx).await?;
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    cx.net.expect_ok(ex)?;
    let id = id_of(&env);
    cx.net.expect_at(
        ex,
        cx.net.text(ex).contains(&id),
        format!("a receipt in the answer saying the envelope {id} was accepted (v1.1 §15.4 \"generate receipts\")"),
        format!("the answer does not name it: {}", crate::show::preview(&cx.net.transcript(ex).response_body)),
    )
}

/// A valid five-line signature with `X-LOOM-Trust-Epoch: 1` beside it, as the existing v1.1
/// node sends its deliveries (DESIGN.md §9): §15.3 defines only the five lines, so the
/// header changes nothing.
async fn five_lines_beside_epoch(cx: &mut Ctx) -> Verdict {
    let (bob, f, _, env) = scene(cx).await?;
    let mut req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    req.headers.trust_epoch = Some("1".into());
    let ex = send(cx, &req).await?;
    cx.net.expect_ok(ex)?;
    expect_stored(cx, &bob, &id_of(&env)).await
}

/// An otherwise valid delivery without `header`.
async fn missing(cx: &mut Ctx, header: &str) -> Verdict {
    let (bob, f, _, env, control) = negative_scene(cx).await?;
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now()).without(header);
    let ex = send(cx, &req).await?;
    expect_rejected(
        cx,
        ex,
        &bob,
        &id_of(&env),
        &format!("{header} is a required LOOM-HTTP-SIG-1 header (v1.1 §15.3)"),
        control,
    )
    .await
}

async fn missing_node(cx: &mut Ctx) -> Verdict {
    missing(cx, "X-LOOM-Node").await
}
async fn missing_timestamp(cx: &mut Ctx) -> Verdict {
    missing(cx, "X-LOOM-Timestamp").await
}
async fn missing_nonce(cx: &mut Ctx) -> Verdict {
    missing(cx, "X-LOOM-Nonce").await
}
async fn missing_key_id(cx: &mut Ctx) -> Verdict {
    missing(cx, "X-LOOM-Key-Id").await
}
async fn missing_signature(cx: &mut Ctx) -> Verdict {
    missing(cx, "X-LOOM-Signature").await
}

/// A delivery signed over `signed` parts but sent as `sent`.
async fn tampered(cx: &mut Ctx, what: &str) -> Verdict {
    let (bob, f, _, env, control) = negative_scene(cx).await?;
    let now = f.peer.now();
    let mut req = delivery(cx, &f.peer, vec![env.clone()], now);
    let key = f.peer.active_key();
    match what {
        "body" => {
            // The wrapper's delivery id changes after signing; the envelope stays intact, so
            // only the request signature can catch it.
            let mut w: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
            w["delivery_id"] = Value::from("fdel_tampered_after_signing");
            req.body = serde_json::to_vec(&w).unwrap_or_default();
        }
        "path" => {
            req.headers = f
                .peer
                .sign("POST", "/v1/federation/other", &req.body, now, &key, None);
        }
        _ => {
            req.headers = f.peer.sign("PUT", &req.path, &req.body, now, &key, None);
        }
    }
    let ex = send(cx, &req).await?;
    expect_rejected(cx, ex, &bob, &id_of(&env), &format!("the signature covers the {what} (v1.1 §15.3 canonical string), which changed after signing"), control).await
}

async fn tampered_body(cx: &mut Ctx) -> Verdict {
    tampered(cx, "body").await
}
async fn tampered_path(cx: &mut Ctx) -> Verdict {
    tampered(cx, "path").await
}
async fn tampered_method(cx: &mut Ctx) -> Verdict {
    tampered(cx, "method").await
}

async fn unknown_key(cx: &mut Ctx) -> Verdict {
    let (bob, f, _, env, control) = negative_scene(cx).await?;
    let now = f.peer.now();
    let mut req = delivery(cx, &f.peer, vec![env.clone()], now);
    req.headers = f.peer.sign(
        "POST",
        &req.path,
        &req.body,
        now,
        &f.peer.unpublished_key(),
        None,
    );
    let ex = send(cx, &req).await?;
    expect_rejected(cx, ex, &bob, &id_of(&env), "the key id is not in the peer's node document (v1.1 §15.3 \"signature verified using node signing key from Node Document\")", control).await
}

async fn other_nodes_key(cx: &mut Ctx) -> Verdict {
    let (bob, f, _, env, control) = negative_scene(cx).await?;
    let other = sending_peer(cx).await?;
    let now = f.peer.now();
    let mut req = delivery(cx, &f.peer, vec![env.clone()], now);
    // Signed by the other peer's published key; X-LOOM-Node names this peer.
    let h = other.peer.sign(
        "POST",
        &req.path,
        &req.body,
        now,
        &other.peer.active_key(),
        None,
    );
    req.headers.key_id = h.key_id;
    req.headers.signature = h.signature;
    req.headers.timestamp = h.timestamp;
    req.headers.nonce = h.nonce;
    let ex = send(cx, &req).await?;
    expect_rejected(
        cx,
        ex,
        &bob,
        &id_of(&env),
        &format!(
            "signed with the key of {}, not of {} (X-LOOM-Node)",
            other.peer.domain, f.peer.domain
        ),
        control,
    )
    .await
}

async fn skewed(cx: &mut Ctx, minutes: i64) -> Verdict {
    let (bob, f, _, env, control) = negative_scene(cx).await?;
    let at = f.peer.now().plus_ms(minutes * 60_000);
    let req = delivery(cx, &f.peer, vec![env.clone()], at);
    let ex = send(cx, &req).await?;
    expect_rejected(
        cx,
        ex,
        &bob,
        &id_of(&env),
        &format!(
            "the request and wrapper timestamps are {minutes} minutes off (±5 minutes, v1.1 §15.5)"
        ),
        control,
    )
    .await
}

async fn stale(cx: &mut Ctx) -> Verdict {
    skewed(cx, -10).await
}
async fn future(cx: &mut Ctx) -> Verdict {
    skewed(cx, 10).await
}

async fn old_envelope(cx: &mut Ctx) -> Verdict {
    let bob = cx.identity("bob", "human").await?;
    let f = sending_peer(cx).await?;
    let alice = as_ident(f.peer.host("alice"));
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(&alice, &t, None, &[&bob], "queued for two days");
    env["created_at"] = Value::from(cx.data.now_plus_days(-2));
    alice.sign(&mut env);
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    cx.net.expect_ok(ex)?;
    expect_stored(cx, &bob, &id_of(&env)).await
}

async fn replayed_nonce(cx: &mut Ctx) -> Verdict {
    let (bob, f, alice, env) = scene(cx).await?;
    let now = f.peer.now();
    let first = delivery(cx, &f.peer, vec![env], now);
    let control = send(cx, &first).await?;
    cx.net
        .expect_control(control, "the first delivery, with a fresh nonce")?;
    // A second, different delivery signed correctly but with the first one's nonce.
    let second_env = message(cx, &alice, &bob, "replayed nonce");
    let body =
        serde_json::to_vec(&f.peer.wrapper(vec![second_env.clone()], now)).unwrap_or_default();
    let nonce = loom_protocol::keys::b64url_decode(&first.headers.nonce).unwrap_or_default();
    let parts = loom_protocol::http_sig::RequestParts {
        method: "POST",
        path: &first.path,
        body: &body,
    };
    let headers = f
        .peer
        .sign_with_nonce(&parts, now, &f.peer.active_key(), &nonce);
    let second = Req {
        method: "POST".into(),
        path: first.path.clone(),
        body,
        headers,
    };
    let ex = send(cx, &second).await?;
    expect_rejected(cx, ex, &bob, &id_of(&second_env), "its nonce was used by the same node a moment ago (v1.1 §15.3 nonce replay prevented, §23.2)", control).await
}

async fn foreign_sender(cx: &mut Ctx) -> Verdict {
    let bob = cx.identity("bob", "human").await?;
    // carol is an identity of the target's own domain: the peer may not deliver in her name.
    let carol = cx.identity("carol", "human").await?;
    let f = sending_peer(cx).await?;
    // The control: the same kind of message from an identity the peer hosts.
    let alice = as_ident(f.peer.host("alice"));
    let own = message(cx, &alice, &bob, "the peer's own sender");
    let req = delivery(cx, &f.peer, vec![own.clone()], f.peer.now());
    let control = send(cx, &req).await?;
    cx.net.expect_control(
        control,
        "a delivery of a message from the peer's own identity",
    )?;
    expect_stored(cx, &bob, &id_of(&own)).await?;
    let env = message(cx, &carol, &bob, "not the peer's to deliver");
    let id = id_of(&env);
    let req = delivery(cx, &f.peer, vec![env], f.peer.now());
    let ex = send(cx, &req).await?;
    if cx.net.transcript(ex).is_success() {
        let listed =
            super::kit::accepted_ids(&cx.net.json(ex)).is_some_and(|ids| ids.contains(&id));
        cx.net.expect_at(
            ex,
            !listed,
            format!(
                "the envelope {id} of {} not accepted from {} (loom-core-1 sender authority)",
                carol.address(),
                f.peer.domain
            ),
            "the receipt lists it as accepted",
        )?;
    }
    expect_not_stored(cx, &bob, &id, "its sender is not an identity of the delivering node's domain (loom-core-1 sender authority)").await?;
    cx.net.credit(ex, Some(control));
    Ok(())
}

async fn bad_envelope_signature(cx: &mut Ctx) -> Verdict {
    let (bob, f, alice, good, control) = negative_scene(cx).await?;
    let mut bad = message(cx, &alice, &bob, "signed, then changed");
    bad["content"]["human"]["text"] = Value::from("changed after signing");
    let bad_id = id_of(&bad);
    let req = delivery(cx, &f.peer, vec![good, bad], f.peer.now());
    let ex = send(cx, &req).await?;
    if cx.net.transcript(ex).is_success() {
        let listed =
            super::kit::accepted_ids(&cx.net.json(ex)).is_some_and(|ids| ids.contains(&bad_id));
        cx.net.expect_at(ex, !listed, format!("the envelope {bad_id} with a broken signature not accepted (v1.1 §15.4 \"Verify envelope signatures\")"), "the receipt lists it as accepted")?;
    }
    expect_not_stored(
        cx,
        &bob,
        &bad_id,
        "its envelope signature fails (v1.1 §15.4)",
    )
    .await?;
    cx.net.credit(ex, Some(control));
    Ok(())
}

async fn partial_receipt(cx: &mut Ctx) -> Verdict {
    let (_, f, _, good) = scene(cx).await?;
    // The same envelope under another id: its signature no longer verifies.
    let mut bad = good.clone();
    bad["id"] = Value::from(cx.data.envelope_id());
    let good_id = id_of(&good);
    let bad_id = id_of(&bad);
    let req = delivery(cx, &f.peer, vec![good, bad], f.peer.now());
    let ex = send(cx, &req).await?;
    let body = cx.net.ok_body(ex)?;
    let ids = super::kit::accepted_ids(&body).unwrap_or_default();
    cx.net.expect_at(
        ex,
        ids.contains(&good_id) && !ids.contains(&bad_id),
        format!("2xx with a receipt whose accepted_envelope_ids list {good_id} and not {bad_id} (status \"partial\", DESIGN.md §9)"),
        format!("accepted_envelope_ids {ids:?}"),
    )
}

async fn redelivery(cx: &mut Ctx) -> Verdict {
    let (bob, f, _, env) = scene(cx).await?;
    let id = id_of(&env);
    let first = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &first).await?;
    cx.net
        .expect_ok(ex)
        .map_err(crate::finding::setup_step("the first delivery"))?;
    let again = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    send(cx, &again).await?;
    let t = thread_of(&env);
    let ex = cx
        .net
        .get(&format!("/v1/threads/{t}/envelopes"), &bob.token)
        .await?;
    let body = cx.net.ok_body(ex)?;
    let count = crate::ctx::shapes::list(&body, &["envelopes"])
        .unwrap_or_default()
        .iter()
        .filter(|e| crate::ctx::shapes::envelope(e)["id"].as_str() == Some(id.as_str()))
        .count();
    cx.net.expect_at(ex, count == 1, format!("the envelope {id}, delivered twice, appears once in the thread (v1.1 §23.2 duplicate IDs rejected)"), format!("it appears {count} times"))
}

macro_rules! inbound {
    ($id:literal, $strength:ident, $spec:expr, $covers:expr, $req:literal, $how:expr, $interp:expr, $mutant:expr, $f:ident) => {
        Case {
            id: $id,
            level: 2,
            strength: Strength::$strength,
            spec: $spec,
            requirement: $req,
            covers: $covers,
            needs: NEEDS,
            how: $how,
            interpretation: $interp,
            mutant: $mutant,
            run: |cx| Box::pin($f(cx)),
        }
    };
}

const SIG: &[&str] = &["v1.1 §15.3", "v1.0 §14.3"];
const MISSING_HOW: &str = "a fresh fake peer sends an otherwise valid, signed delivery without this header; expect a 4xx and the envelope not readable by its recipient";

/// The inbound cases.
pub const CASES: &[Case] = &[
    inbound!(
        "fed.inbound.valid-delivery",
        Must,
        &["v1.1 §15.4", "v1.1 §28.1"],
        &[
            "R-15.4-07",
            "R-15.4-01",
            "R-5.2-08",
            "R-28.1-02",
            "R-core-5-01"
        ],
        "A node MUST accept a valid signed federation delivery and store its envelopes for their recipients.",
        "a fresh fake peer delivers a message from its alice to the target's bob with a valid LOOM-HTTP-SIG-1 signature; expect 2xx and bob reads the envelope",
        None,
        Mutant::Quirk("drop-delivered-envelopes"),
        valid_delivery
    ),
    inbound!(
        "fed.inbound.receipt",
        Must,
        &["v1.1 §15.4"],
        &["R-15.4-08"],
        "A node MUST answer a delivery with a receipt saying which envelopes it accepted.",
        "a valid delivery of one envelope; expect 2xx and the envelope id in the answer (the receipt's member names are left open)",
        None,
        Mutant::Quirk("no-receipt"),
        receipt
    ),
    inbound!(
        "fed.inbound.five-lines-beside-epoch",
        Must,
        SIG,
        &["R-15.3-05"],
        "A node MUST accept a valid five-line LOOM-HTTP-SIG-1 signature whether or not an X-LOOM-Trust-Epoch header comes with it.",
        "a fresh fake peer sends a valid delivery signed over the five-line canonical string with `X-LOOM-Trust-Epoch: 1` added; expect 2xx and bob reads the envelope",
        Some(
            "§15.3 defines only the five-line canonical string and no X-LOOM-Trust-Epoch header; the existing v1.1 node sends that header beside a five-line signature (DESIGN.md §9), so a receiver that demands a signed epoch refuses every delivery of it"
        ),
        Mutant::Quirk("require-signed-trust-epoch"),
        five_lines_beside_epoch
    ),
    inbound!(
        "fed.inbound.missing-header.node",
        Must,
        SIG,
        &["R-15.3-04", "R-15.4-03"],
        "A node MUST reject a delivery without X-LOOM-Node.",
        MISSING_HOW,
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        missing_node
    ),
    inbound!(
        "fed.inbound.missing-header.timestamp",
        Must,
        SIG,
        &["R-15.3-04", "R-15.4-03"],
        "A node MUST reject a delivery without X-LOOM-Timestamp.",
        MISSING_HOW,
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        missing_timestamp
    ),
    inbound!(
        "fed.inbound.missing-header.nonce",
        Must,
        SIG,
        &["R-15.3-04", "R-15.4-03"],
        "A node MUST reject a delivery without X-LOOM-Nonce.",
        MISSING_HOW,
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        missing_nonce
    ),
    inbound!(
        "fed.inbound.missing-header.key-id",
        Must,
        SIG,
        &["R-15.3-04", "R-15.4-03"],
        "A node MUST reject a delivery without X-LOOM-Key-Id.",
        MISSING_HOW,
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        missing_key_id
    ),
    inbound!(
        "fed.inbound.missing-header.signature",
        Must,
        SIG,
        &["R-15.3-04", "R-15.4-03", "R-core-5-01", "R-15.3-02"],
        "A node MUST reject a delivery without X-LOOM-Signature.",
        MISSING_HOW,
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        missing_signature
    ),
    inbound!(
        "fed.inbound.tampered.body",
        Must,
        SIG,
        &["R-15.3-05", "R-15.3-07"],
        "A node MUST reject a delivery whose body changed after signing.",
        "the wrapper's delivery_id changes after signing (the envelope stays valid); expect a 4xx and the envelope not stored",
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        tampered_body
    ),
    inbound!(
        "fed.inbound.tampered.path",
        Must,
        SIG,
        &["R-15.3-05", "R-15.3-07"],
        "A node MUST reject a delivery signed for another path.",
        "the signature covers /v1/federation/other; the request goes to the delivery endpoint; expect a 4xx",
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        tampered_path
    ),
    inbound!(
        "fed.inbound.tampered.method",
        Must,
        SIG,
        &["R-15.3-05", "R-15.3-07"],
        "A node MUST reject a delivery signed for another method.",
        "the signature covers PUT; the request is a POST; expect a 4xx",
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        tampered_method
    ),
    inbound!(
        "fed.inbound.key.unknown",
        Must,
        SIG,
        &["R-15.3-07"],
        "A node MUST reject a delivery signed with a key its sender's node document does not list.",
        "the peer signs with a key id its node document never publishes; expect a 4xx",
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        unknown_key
    ),
    inbound!(
        "fed.inbound.key.other-node",
        Must,
        SIG,
        &["R-15.3-07"],
        "A node MUST reject a delivery signed with another node's key.",
        "peer A's delivery carries a signature (and key id) by peer B's published key; expect a 4xx",
        None,
        Mutant::Quirk("accept-unsigned-delivery"),
        other_nodes_key
    ),
    inbound!(
        "fed.inbound.stale",
        Must,
        &["v1.1 §15.5", "v1.1 §15.3"],
        &["R-15.5-01", "R-core-5-02"],
        "A node MUST reject a delivery whose request timestamp is more than 5 minutes old.",
        "request and wrapper timestamps 10 minutes in the past, correctly signed; expect a 4xx",
        None,
        Mutant::Quirk("accept-stale-timestamp"),
        stale
    ),
    inbound!(
        "fed.inbound.future",
        Must,
        &["v1.1 §15.5", "v1.1 §15.3"],
        &["R-15.5-01"],
        "A node MUST reject a delivery whose request timestamp is more than 5 minutes ahead.",
        "request and wrapper timestamps 10 minutes ahead, correctly signed; expect a 4xx",
        None,
        Mutant::Quirk("accept-stale-timestamp"),
        future
    ),
    inbound!(
        "fed.inbound.old-envelope",
        Must,
        &["v1.1 §15.5"],
        &["R-15.5-02"],
        "A node MUST NOT reject a delivered envelope because its created_at is old (store-and-forward).",
        "a fresh wrapper carries an envelope created two days ago; expect 2xx and the recipient reads it",
        None,
        Mutant::Quirk("reject-old-envelopes"),
        old_envelope
    ),
    inbound!(
        "fed.inbound.replayed-nonce",
        Must,
        &["v1.1 §15.3", "v1.1 §23.2"],
        &["R-15.3-08", "R-23.2-05", "R-core-5-02"],
        "A node MUST reject a delivery reusing a nonce the same node used before.",
        "a valid delivery, then a different, correctly signed delivery with the same nonce; expect the second refused (4xx) and its envelope not stored",
        None,
        Mutant::Quirk("skip-nonce-cache"),
        replayed_nonce
    ),
    inbound!(
        "fed.inbound.foreign-sender",
        Must,
        &["loom-core-1 §Core 5", "v1.1 §15.4"],
        &["R-core-5-03"],
        "A node MUST NOT accept a delivered envelope whose sender is not of the delivering node's domain.",
        "the peer delivers a validly signed envelope of an identity of the target's own domain; expect it not accepted (4xx, or absent from the receipt) and not readable by its recipient",
        None,
        Mutant::Quirk("accept-foreign-sender"),
        foreign_sender
    ),
    inbound!(
        "fed.inbound.bad-envelope-signature",
        Must,
        &["v1.1 §15.4", "v1.1 §7.3"],
        &["R-15.4-04"],
        "A node MUST NOT accept a delivered envelope whose signature fails.",
        "a delivery of two envelopes, the second changed after signing; expect the second not accepted and not readable (the first may or may not be)",
        None,
        Mutant::Quirk("skip-envelope-signature-on-delivery"),
        bad_envelope_signature
    ),
    inbound!(
        "fed.inbound.partial-receipt",
        Should,
        &["v1.1 §15.4"],
        &["R-15.4-08"],
        "A node SHOULD accept the valid envelopes of a delivery and list them in a partial receipt.",
        "a delivery of a valid envelope and an unsigned-for copy under another id; expect 2xx listing the first only",
        Some(
            "v1.1 §15.4 says a node stores envelopes and generates receipts, not whether one bad envelope sinks the wrapper; accepting the rest with a partial receipt is the existing node's form (DESIGN.md §9)."
        ),
        Mutant::NotApplicable("SHOULD: the reading of an open point"),
        partial_receipt
    ),
    inbound!(
        "fed.inbound.redelivery",
        Must,
        &["v1.1 §23.2"],
        &["R-23.2-04"],
        "A node MUST NOT store an envelope delivered twice a second time.",
        "the same envelope in two valid deliveries (fresh nonces); expect it once in the recipient's thread listing",
        None,
        Mutant::Quirk("store-redelivered-twice"),
        redelivery
    ),
];
