//! What a receiving node enforces on delivered envelopes beyond the request signature (v1.1
//! §15.4 "Enforce delegation chains and capability rules", §23.1 policy, v1.0 §7.4 key
//! rotation). Each case uses a fresh fake peer, so the target meets the peer's identities for
//! the first time inside the case. "Not accepted" is read leniently: a 4xx answer, or a 2xx
//! whose receipt does not list the envelope, and in both cases the envelope does not reach
//! its recipient (no status or error code is asserted: §24.2 names none for a delivery).

use super::kit::{
    Fed, accepted_ids, as_ident, delivery, expect_not_stored, expect_stored, federation, id_of,
    message, send, sending_peer,
};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident};
use loom_protocol::Timestamp;
use serde_json::{Value, json};
use std::time::Duration;

const NEEDS: &[Need] = &[Need::Provisioning, Need::FederationPeer];

/// The longest declared re-fetch interval the key-rotation case waits out (a minute, the
/// reference node's default, fits; a longer one makes the case `unsupported`).
pub const MAX_REFETCH_WAIT: Duration = Duration::from_secs(75);

/// `env` in a fresh, valid delivery from `f`'s peer; `Ok(true)` when the target accepted it
/// (2xx and, when the answer carries a receipt, listed in it).
async fn deliver_one(
    cx: &mut Ctx,
    f: &Fed,
    env: &Value,
) -> Result<(bool, crate::ctx::Ex), Finding> {
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    let ok = cx.net.transcript(ex).is_success()
        && accepted_ids(&cx.net.json(ex)).is_none_or(|ids| ids.contains(&id_of(env)));
    Ok((ok, ex))
}

/// The delivery of `env` did not get it accepted — not listed in a 2xx receipt, not readable
/// by `who` — beside `control`, an accepted delivery of the same kind (issue 29).
async fn expect_refused(
    cx: &mut Ctx,
    f: &Fed,
    env: &Value,
    who: &Ident,
    why: &str,
    control: crate::ctx::Ex,
) -> Verdict {
    cx.net
        .expect_control(control, "a valid delivery of the same kind")?;
    let id = id_of(env);
    let (accepted, ex) = deliver_one(cx, f, env).await?;
    if cx.net.transcript(ex).is_success() {
        cx.net.expect_at(
            ex,
            !accepted,
            format!("the envelope {id} not accepted: {why}"),
            "the answer is 2xx and its receipt lists it as accepted (or names no envelope at all)",
        )?;
    }
    expect_not_stored(cx, who, &id, why).await?;
    cx.net.credit(ex, Some(control));
    Ok(())
}

/// `env` delivered and accepted: 2xx and `who` reads it; returns the delivery.
async fn expect_accepted(
    cx: &mut Ctx,
    f: &Fed,
    env: &Value,
    who: &Ident,
) -> Result<crate::ctx::Ex, Finding> {
    let req = delivery(cx, &f.peer, vec![env.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    cx.net.expect_ok(ex)?;
    expect_stored(cx, who, &id_of(env)).await?;
    Ok(ex)
}

// ---- R-15.4-05: delegation chains ----

/// A link `from` → `to` with `scope`, valid for a day, signed with `signer`'s key under
/// `from`'s key id (v1.1 §13.1, §13.3.1).
fn link(cx: &Ctx, from: &Ident, to: &Ident, scope: &[&str], signer: &Ident) -> Value {
    let now = Timestamp::parse(&cx.data.now()).unwrap_or_else(|_| Timestamp::from_unix_ms(0));
    let mut l = json!({
        "delegator": from.address(),
        "delegate": to.address(),
        "scope": scope,
        "created_at": now.plus_ms(-60_000).to_rfc3339(),
        "expires_at": now.plus_ms(86_400_000).to_rfc3339(),
        "revocable": true,
        "allow_sub_delegation": false,
    });
    // In the reading of §13.3.1 the target verifies (detected on its own identities).
    crate::readings::sign_link(
        &mut l,
        signer.id.signing_key(),
        from.id.key_id_typed(),
        cx.target.readings.link_context(),
    );
    l
}

/// A signed message from the agent `bot` to `to` in a fresh thread carrying `chain`
/// (`None`: no `delegation_chain` member at all).
fn agent_message(cx: &mut Ctx, bot: &Ident, to: &Ident, chain: Option<Vec<Value>>) -> Value {
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(bot, &t, None, &[to], "on behalf of my delegator");
    if let Some(c) = chain {
        env["from"]["delegation_chain"] = Value::Array(c);
    }
    bot.sign(&mut env);
    env
}

async fn delegation(cx: &mut Ctx) -> Verdict {
    cx.link_reading().await?;
    let bob = cx.identity("bob", "human").await?;
    let f = sending_peer(cx).await?;
    let carol = as_ident(f.peer.host("carol"));
    let mallory = as_ident(f.peer.host("mallory"));
    let bot = as_ident(f.peer.host_as("bot", "agent"));
    // Control: the peer's agent with a valid chain from the peer's human is accepted, so the
    // refusals below are about the chain (v1.1 §13.3).
    let good = link(cx, &carol, &bot, &["message.*"], &carol);
    let env = agent_message(cx, &bot, &bob, Some(vec![good]));
    let control = expect_accepted(cx, &f, &env, &bob)
        .await
        .map_err(crate::finding::setup_step(
            "the control: an agent envelope with a valid delegation chain from a human of the delivering node",
        ))?;
    let no_chain = agent_message(cx, &bot, &bob, None);
    expect_refused(
        cx,
        &f,
        &no_chain,
        &bob,
        "an agent envelope without a delegation chain (v1.1 §13.5 \"MUST include the full delegation chain\", §15.4)",
        control,
    )
    .await?;
    let forged = link(cx, &carol, &bot, &["message.*"], &mallory);
    let env = agent_message(cx, &bot, &bob, Some(vec![forged]));
    expect_refused(
        cx,
        &f,
        &env,
        &bob,
        "its link is signed by another key than the delegator's (v1.1 §13.3 step 2, §15.4)",
        control,
    )
    .await?;
    let narrow = link(cx, &carol, &bot, &["calendar.*"], &carol);
    let env = agent_message(cx, &bot, &bob, Some(vec![narrow]));
    expect_refused(
        cx,
        &f,
        &env,
        &bob,
        "the link's scope does not permit sending a message (v1.1 §13.3, §15.4)",
        control,
    )
    .await
}

// ---- R-15.4-06: capability rules on delivered thread operations ----

async fn thread_state(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
) -> Result<(crate::ctx::Ex, Value), Finding> {
    let ex = cx.net.get(&format!("/v1/threads/{t}"), &who.token).await?;
    let body = cx.net.ok_body(ex)?;
    let th = if body.get("thread").is_some_and(Value::is_object) {
        body["thread"].clone()
    } else {
        body
    };
    Ok((ex, th["state"].clone()))
}

async fn op_without_capability(cx: &mut Ctx) -> Verdict {
    let bob = cx.identity("bob", "human").await?;
    let f = sending_peer(cx).await?;
    let alice = as_ident(f.peer.host("alice"));
    let dave = as_ident(f.peer.host("dave"));
    let t = cx.data.thread_id();
    let root = cx
        .data
        .signed_message(&alice, &t, None, &[&bob, &dave], "alice's thread");
    expect_accepted(cx, &f, &root, &bob)
        .await
        .map_err(crate::finding::setup_step(
            "alice of the peer starts a thread with bob and dave",
        ))?;
    // dave is a participant, not the owner, and presents no capability token.
    let mut op = cx.data.op(&dave, &t, "thread.resolve@v1", json!({}));
    dave.sign(&mut op);
    let id = id_of(&op);
    let (accepted, probe) = deliver_one(cx, &f, &op).await?;
    let ex = probe;
    cx.net.expect_at(
        ex,
        !accepted,
        format!("dave's thread.resolve@v1 {id} without a capability token not accepted (v1.1 §15.4 \"Enforce … capability rules\", §12.4)"),
        "the target accepted it",
    )?;
    let (ex, state) = thread_state(cx, &bob, &t).await?;
    cx.net.expect_at(
        ex,
        state == json!("active"),
        "the thread still active: the unauthorized operation was not applied (v1.1 §15.4, §12.4)",
        format!("state {state}"),
    )?;
    // Control: the same operation from the thread's owner is accepted and applied, so the
    // refusal above was about authorization.
    let mut own = cx.data.op(&alice, &t, "thread.resolve@v1", json!({}));
    alice.sign(&mut own);
    let req = delivery(cx, &f.peer, vec![own], f.peer.now());
    let control = send(cx, &req).await?;
    cx.net
        .expect_control(control, "the owner's same operation")?;
    let (ex, state) = thread_state(cx, &bob, &t).await?;
    cx.net.expect_at(
        ex,
        state == json!("resolved"),
        "the owner's delivered thread.resolve@v1 applied: state resolved (the control of the refusal above, v1.1 §11.5)",
        format!("state {state}"),
    )?;
    cx.net.credit(probe, Some(control));
    Ok(())
}

// ---- R-23.1-07: the federation policy is enforced ----

async fn policy_blocked(cx: &mut Ctx) -> Verdict {
    let bob = cx.identity("bob", "human").await?;
    // The control: the same kind of message from a peer the policy admits.
    let admitted = sending_peer(cx).await?;
    let eve = as_ident(admitted.peer.host("eve"));
    let env = message(cx, &eve, &bob, "from an admitted peer");
    let control =
        expect_accepted(cx, &admitted, &env, &bob)
            .await
            .map_err(crate::finding::setup_step(
                "the control: the same message from a peer the policy admits",
            ))?;
    let fed = federation(cx)?;
    let url = cx.target.url.clone();
    let user = super::kit::user_token(cx, &fed).await?;
    let peer = fed.blocked_peer(&mut cx.net, &url, &user).await?;
    let f = Fed { fed, peer };
    let eve = as_ident(f.peer.host("eve"));
    let env = message(cx, &eve, &bob, "from a blocked peer");
    expect_refused(
        cx,
        &f,
        &env,
        &bob,
        &format!(
            "{} is a peer the target's federation policy blocks (v1.1 §23.1 \"policy allow/deny\", §15.2 policy mode)",
            f.peer.domain
        ),
        control,
    )
    .await
}

// ---- R-v1.0-7.4-04: a rotated sender key is fetched again ----

async fn sender_key_rotation(cx: &mut Ctx) -> Verdict {
    let fed = federation(cx)?;
    let Some(interval) = fed.refetch_min_interval() else {
        return Err(Finding::Unsupported(
            "the profile declares no re-fetch interval ([federation.timers] refetch_min_interval_ms; 0 when the target re-fetches on every unknown key id): a target may rate-limit re-fetches, and the case must not fail it for that".into(),
        ));
    };
    if interval > MAX_REFETCH_WAIT {
        return Err(Finding::Unsupported(format!(
            "the declared re-fetch interval {interval:?} is longer than the {MAX_REFETCH_WAIT:?} this case waits"
        )));
    }
    let bob = cx.identity("bob", "human").await?;
    let f = sending_peer(cx).await?;
    let alice = as_ident(f.peer.host("alice"));
    let first = message(cx, &alice, &bob, "signed with my first key");
    expect_accepted(cx, &f, &first, &bob)
        .await
        .map_err(crate::finding::setup_step(
            "the first delivery from alice (the target fetches her identity document now)",
        ))?;
    let rotated = f
        .peer
        .rotate_identity_key(alice.address(), 2)
        .map(as_ident)
        .ok_or_else(|| Finding::Error("the fake peer lost alice".into()))?;
    // The target may wait its declared interval before fetching alice's document again.
    tokio::time::sleep(interval.mul_f64(1.1) + Duration::from_millis(100)).await;
    let second = message(cx, &rotated, &bob, "signed with my rotated key");
    let req = delivery(cx, &f.peer, vec![second.clone()], f.peer.now());
    let ex = send(cx, &req).await?;
    let id = id_of(&second);
    cx.net.expect_at(
        ex,
        cx.net.transcript(ex).is_success(),
        format!(
            "2xx: the envelope {id} names key {} that the target's cached identity document of {} does not list, so the target re-fetches it (v1.0 §7.4 \"re-fetch when a key_id is unknown\") and finds the key",
            rotated.id.key_id(),
            alice.address()
        ),
        format!(
            "HTTP {}: {}",
            cx.net.status(ex),
            crate::show::preview(&cx.net.transcript(ex).response_body)
        ),
    )?;
    expect_stored(cx, &bob, &id).await
}

macro_rules! case {
    ($id:literal, $spec:expr, $covers:expr, $req:literal, $how:expr, $interp:expr, $quirk:literal, $f:ident) => {
        Case {
            id: $id,
            level: 2,
            strength: Strength::Must,
            spec: $spec,
            requirement: $req,
            covers: $covers,
            needs: NEEDS,
            how: $how,
            interpretation: $interp,
            mutant: Mutant::Quirk($quirk),
            run: |cx| Box::pin($f(cx)),
        }
    };
}

/// The enforcement cases.
pub const CASES: &[Case] = &[
    case!(
        "fed.inbound.delegation",
        &["v1.1 §15.4", "v1.1 §13.3", "v1.0 §20.2"],
        &["R-15.4-05"],
        "A receiving node MUST verify the delegation chain of a delivered agent envelope and not accept one whose chain fails.",
        "a fresh peer hosts human carol and agent bot; bot's message with a valid carol → bot chain is accepted (control); then bot's messages without a chain, with a link signed by another key, and with a scope that excludes messages must each be refused (4xx, or absent from the receipt) and not reach the recipient",
        None,
        "skip-delegation-on-delivery",
        delegation
    ),
    case!(
        "fed.inbound.op-without-capability",
        &["v1.1 §15.4", "v1.1 §12.4", "v1.0 §20.2"],
        &["R-15.4-06"],
        "A receiving node MUST NOT apply a delivered thread operation its sender is not authorized for.",
        "alice of a fresh peer starts a thread with the target's bob and the peer's dave; dave's delivered thread.resolve@v1 without a capability token must not be accepted and the thread stays active; then alice's own thread.resolve@v1 is accepted and resolves it (control)",
        Some(
            "§15.4 names the rule, not the operation: thread.resolve@v1 by a participant without a token is the §12.4 case that Level 1 proves locally (capabilities.grant-allows-op)."
        ),
        "skip-capability-on-delivery",
        op_without_capability
    ),
    case!(
        "fed.inbound.policy.blocked-peer",
        &["v1.1 §23.1", "v1.1 §15.2", "v1.0 §20.1"],
        &["R-23.1-07"],
        "A node MUST refuse deliveries from a peer its federation policy blocks.",
        "a fresh peer the target blocks (profile [federation.block_peer]: configured, or a templated request) delivers a valid, signed message; it must not be accepted (4xx, or absent from the receipt) and not reach the recipient; `unsupported` when the profile cannot make the target block a peer",
        Some(
            "§23.1 lists \"policy allow/deny\" as the spam/abuse mitigation without a keyword; level2.toml records it as MUST because a published policy (§15.2) that is not applied misleads peers. Only the blocked-peer refusal is asserted: how allowlist and quarantine modes are configured differs between nodes."
        ),
        "ignore-federation-policy",
        policy_blocked
    ),
    case!(
        "fed.inbound.sender-key-rotation",
        &["v1.0 §7.4", "v1.1 §15.4"],
        &["R-v1.0-7.4-04"],
        "A node MUST re-fetch a remote identity document when a delivered envelope names a key_id it does not list, and then accept the rotated key.",
        "a fresh peer's alice delivers a message (the target fetches her identity document); the peer rotates her key (the old one stays, retired); after the target's declared re-fetch interval ([federation.timers] refetch_min_interval_ms) her message signed with the new key must be accepted and reach the recipient; `unsupported` without a declared interval or with one over 75 s",
        Some(
            "v1.0 §7.4 sets no bound on re-fetching; a node may rate-limit it (the reference node: once a minute by default), so the case waits the interval the target declares and never asserts a re-fetch inside it."
        ),
        "no-refetch-on-unknown-key",
        sender_key_rotation
    ),
];
