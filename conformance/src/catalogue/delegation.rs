//! Delegation chains (v1.1 §13, §16.5, §18.2): an agent sends with `from.delegation_chain`
//! rooted at a human; every §13.3 step that fails must refuse the envelope with
//! `DELEGATION_INVALID` (§13.3 step 7 names the code). Every refusal case first sends the
//! control — the agent's envelope with a valid chain that differs from the probe's only in the
//! step under test — and credits the refusal beside it, so a node that refuses all agents, or
//! refuses the probe for another defect, cannot pass it (issue 29).

use crate::case::{Case, Ex, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, shapes};
use loom_protocol::Timestamp;
use serde_json::{Value, json};

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

/// The harness clock moved by `offset_ms`, as RFC 3339.
fn at(cx: &Ctx, offset_ms: i64) -> String {
    let now = cx.data.now();
    Timestamp::parse(&now).map_or(now, |t| t.plus_ms(offset_ms).to_rfc3339())
}

/// A link `from` → `to` with `scope`, valid for a day, signed by `from`.
fn link(cx: &Ctx, from: &Ident, to: &Ident, scope: &[&str], allow_sub: bool) -> Value {
    let mut l = json!({
        "delegator": from.address(),
        "delegate": to.address(),
        "scope": scope,
        "created_at": at(cx, 0),
        "expires_at": at(cx, DAY_MS),
        "revocable": true,
        "allow_sub_delegation": allow_sub,
    });
    sign_link(cx, from, from, &mut l);
    l
}

/// Signs `l` with `signer`'s key under `named`'s key id (context-prefixed, §13.3.1), in the
/// reading of §13.3.1 the target verifies ([`Ctx::link_reading`], run by every case first).
fn sign_link(cx: &Ctx, signer: &Ident, named: &Ident, l: &mut Value) {
    let reading = cx.target.readings.link_context();
    crate::readings::sign_link(l, signer.id.signing_key(), named.id.key_id_typed(), reading);
}

/// A signed message from the agent `bot` to `to` in a fresh thread, carrying `chain`.
fn agent_message(cx: &mut Ctx, bot: &Ident, to: &Ident, chain: &[Value]) -> Value {
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(bot, &t, None, &[to], "on behalf of my delegator");
    env["from"]["delegation_chain"] = json!(chain);
    bot.sign(&mut env);
    env
}

/// `bot` sends with `chain`, the control of a refusal case: the node must accept it, or the
/// case is a harness `error` (a node that refuses every agent proves nothing).
async fn accepted(cx: &mut Ctx, bot: &Ident, to: &Ident, chain: &[Value]) -> Result<Ex, Finding> {
    let env = agent_message(cx, bot, to, chain);
    let i = cx.net.send(bot, &env).await?;
    cx.net.expect_control(
        i,
        "an agent envelope with a valid chain from a human (v1.1 §13.3)",
    )?;
    Ok(i)
}

/// `bot` sends with `chain`; the node must refuse it with 403 `DELEGATION_INVALID`, beside the
/// accepted `control`.
async fn refused(cx: &mut Ctx, bot: &Ident, to: &Ident, chain: &[Value], control: Ex) -> Verdict {
    let env = agent_message(cx, bot, to, chain);
    let i = cx.net.send(bot, &env).await?;
    refused_beside(cx, i, control)
}

fn refused_beside(cx: &Ctx, probe: Ex, control: Ex) -> Verdict {
    cx.net.expect_refused_beside(
        probe,
        control,
        "the same agent envelope with a valid chain",
        &["DELEGATION_INVALID"],
        "v1.1 §13.3 step 7",
    )
}

/// A human, an agent it delegated `message.*` to, the valid link and the control exchange.
pub(super) async fn human_and_agent(cx: &mut Ctx) -> Result<(Ident, Ident, Value, Ex), Finding> {
    cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot = cx.identity("bot", "agent").await?;
    let l = link(cx, &alice, &bot, &["message.*"], false);
    let control = accepted(cx, &bot, &alice, std::slice::from_ref(&l)).await?;
    Ok((alice, bot, l, control))
}

async fn chain_missing(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    refused(cx, &bot, &alice, &[], control).await?;
    let t = cx.data.thread_id();
    let env = cx
        .data
        .signed_message(&bot, &t, None, &[&alice], "no chain at all");
    let i = cx.net.send(&bot, &env).await?;
    refused_beside(cx, i, control)
}

async fn link_expired(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let mut l = link(cx, &alice, &bot, &["message.*"], false);
    l["created_at"] = at(cx, -2 * HOUR_MS).into();
    l["expires_at"] = at(cx, -HOUR_MS).into();
    sign_link(cx, &alice, &alice, &mut l);
    refused(cx, &bot, &alice, &[l], control).await
}

async fn link_wrong_key(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let mallory = cx.identity("mallory", "human").await?;
    let mut l = link(cx, &alice, &bot, &["message.*"], false);
    sign_link(cx, &mallory, &alice, &mut l);
    refused(cx, &bot, &alice, &[l], control).await
}

async fn link_tampered(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let mut l = link(cx, &alice, &bot, &["message.*"], false);
    l["expires_at"] = at(cx, 2 * DAY_MS).into();
    refused(cx, &bot, &alice, &[l], control).await
}

async fn scope_excludes_action(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let l = link(cx, &alice, &bot, &["calendar.*"], false);
    refused(cx, &bot, &alice, &[l], control).await
}

async fn root_is_agent(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let boss = cx.identity("boss", "agent").await?;
    let l = link(cx, &boss, &bot, &["message.*"], false);
    refused(cx, &bot, &alice, &[l], control).await
}

/// alice → bot1 (sub-delegation allowed) → bot2, accepted; returns the pieces and the control.
async fn two_links(cx: &mut Ctx) -> Result<(Ident, Ident, Ident, Ex), Finding> {
    cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot1 = cx.identity("bot1", "agent").await?;
    let bot2 = cx.identity("bot2", "agent").await?;
    let l1 = link(cx, &alice, &bot1, &["message.*"], true);
    let l2 = link(cx, &bot1, &bot2, &["message.*"], false);
    let control = accepted(cx, &bot2, &alice, &[l1, l2]).await?;
    Ok((alice, bot1, bot2, control))
}

async fn sub_delegation_forbidden(cx: &mut Ctx) -> Verdict {
    let (alice, bot1, bot2, control) = two_links(cx).await?;
    let l1 = link(cx, &alice, &bot1, &["message.*"], false);
    let l2 = link(cx, &bot1, &bot2, &["message.*"], false);
    refused(cx, &bot2, &alice, &[l1, l2], control).await
}

async fn sub_scope_wider(cx: &mut Ctx) -> Verdict {
    let (alice, bot1, bot2, control) = two_links(cx).await?;
    let l1 = link(cx, &alice, &bot1, &["message.*"], true);
    let l2 = link(cx, &bot1, &bot2, &["message.*", "task.*"], false);
    refused(cx, &bot2, &alice, &[l1, l2], control).await
}

async fn star_below_root(cx: &mut Ctx) -> Verdict {
    let (alice, bot1, bot2, control) = two_links(cx).await?;
    let l1 = link(cx, &alice, &bot1, &["*"], true);
    let l2 = link(cx, &bot1, &bot2, &["*"], false);
    refused(cx, &bot2, &alice, &[l1, l2], control).await
}

async fn leaf_not_sender(cx: &mut Ctx) -> Verdict {
    let (alice, _bot, l, _) = human_and_agent(cx).await?;
    let other = cx.identity("other", "agent").await?;
    let own = link(cx, &alice, &other, &["message.*"], false);
    let control = accepted(cx, &other, &alice, &[own]).await?;
    refused(cx, &other, &alice, &[l], control).await
}

async fn created_at_future(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let mut l = link(cx, &alice, &bot, &["message.*"], false);
    l["created_at"] = at(cx, HOUR_MS).into();
    sign_link(cx, &alice, &alice, &mut l);
    refused(cx, &bot, &alice, &[l], control).await
}

async fn created_at_missing(cx: &mut Ctx) -> Verdict {
    let (alice, bot, _, control) = human_and_agent(cx).await?;
    let mut l = link(cx, &alice, &bot, &["message.*"], false);
    if let Some(o) = l.as_object_mut() {
        o.remove("created_at");
    }
    sign_link(cx, &alice, &alice, &mut l);
    refused(cx, &bot, &alice, &[l], control).await
}

async fn chain_too_long(cx: &mut Ctx) -> Verdict {
    cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let mut agents = Vec::new();
    for _ in 0..11 {
        agents.push(cx.identity("hop", "agent").await?);
    }
    let mut chain = vec![link(cx, &alice, &agents[0], &["message.*"], true)];
    for w in agents.windows(2) {
        chain.push(link(cx, &w[0], &w[1], &["message.*"], true));
    }
    // Ten links (the default maxChainLength) are accepted; eleven are not.
    let control = accepted(cx, &agents[9], &alice, &chain[..10]).await?;
    refused(cx, &agents[10], &alice, &chain, control).await
}

async fn type_mismatch(cx: &mut Ctx) -> Verdict {
    let (alice, bot, l, control) = human_and_agent(cx).await?;
    let t = cx.data.thread_id();
    let mut env = cx
        .data
        .message(&bot, &t, None, &[&alice], "claiming to be human");
    env["from"]["type"] = "human".into();
    env["from"]["delegation_chain"] = json!([l]);
    bot.sign(&mut env);
    let i = cx.net.send(&bot, &env).await?;
    // §13.5 names no code: any 4xx §24.1 refusal.
    cx.net.expect_refused_beside(
        i,
        control,
        "the same envelope with from.type \"agent\"",
        &[],
        "",
    )
}

/// POSTs `link` to /v1/delegations as `who`; returns the stored id.
pub(super) async fn store_link(cx: &mut Ctx, who: &Ident, l: &Value) -> Result<String, Finding> {
    let i = cx
        .net
        .call("POST", "/v1/delegations", Some(&who.token), Some(l))
        .await?;
    let body = cx.net.created_body(i)?;
    let id = shapes::created_id(&body, "delegation_id").unwrap_or_default();
    cx.net.expect_that(
        !id.is_empty(),
        "POST /v1/delegations answers the stored delegation's id (id or delegation_id; v1.1 §16.5)",
        format!("body = {}", crate::show::compact(&body)),
    )?;
    Ok(id)
}

async fn revoked(cx: &mut Ctx) -> Verdict {
    let (alice, bot, l, _) = human_and_agent(cx).await?;
    // Storing and revoking through the §16.5 routes are the means here; the requirement is
    // §13.4's enforcement (the routes have cases of their own).
    let id = store_link(cx, &alice, &l)
        .await
        .map_err(crate::finding::setup_step(
            "storing the link (POST /v1/delegations)",
        ))?;
    let control = accepted(cx, &bot, &alice, std::slice::from_ref(&l)).await?;
    let i = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/delegations/{id}"),
            Some(&alice.token),
            None,
        )
        .await?;
    let status = cx.net.transcript(i).status;
    cx.net
        .expect_that(
            (200..300).contains(&status),
            "DELETE /v1/delegations/{id} by the delegator succeeds (v1.1 §16.5)",
            format!("HTTP {status}"),
        )
        .map_err(crate::finding::setup_step(
            "revoking the link (DELETE /v1/delegations/{id})",
        ))?;
    refused(cx, &bot, &alice, &[l], control).await
}

async fn revocation_recorded(cx: &mut Ctx) -> Verdict {
    let (alice, bot, l, _) = human_and_agent(cx).await?;
    let id = store_link(cx, &alice, &l).await?;
    let i = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/delegations/{id}?reason=conformance"),
            Some(&alice.token),
            None,
        )
        .await?;
    cx.net.expect_ok(i)?;
    let evs = cx.net.events(&bot, None).await?;
    // This revocation's event: the one naming its delegation id when the node says, else the
    // latest delegation.revoked (identities may be shared with other cases under a pool).
    let revoked: Vec<&Value> = evs
        .iter()
        .filter(|e| e["type"] == "delegation.revoked")
        .collect();
    let found = revoked
        .iter()
        .find(|e| shapes::event_payload(e)["delegation_id"] == json!(id))
        .or(revoked.last())
        .map(|e| (*e).clone());
    let Some(ev) = found else {
        return cx.net.expect_that(
            false,
            "a delegation.revoked event for the delegate (v1.1 §13.4, §17.3)",
            format!(
                "events = {}",
                crate::show::compact(&Value::Array(evs.clone()))
            ),
        );
    };
    let p = shapes::event_payload(&ev);
    cx.net.expect_that(
        p["delegator"] == json!(alice.address())
            && p["delegate"] == json!(bot.address())
            && p["reason"] == "conformance"
            && (p["revoked_at"].is_string() || ev["created_at"].is_string()),
        "the revocation record names delegator, delegate, time and reason (v1.1 §13.4)",
        format!("event = {}", crate::show::compact(&ev)),
    )
}

async fn api_create_list(cx: &mut Ctx) -> Verdict {
    cx.link_reading().await?;
    let alice = cx.identity("alice", "human").await?;
    let bot = cx.identity("bot", "agent").await?;
    let stranger = cx.identity("stranger", "human").await?;
    let l = link(cx, &alice, &bot, &["message.*"], false);
    let id = store_link(cx, &alice, &l).await?;
    for (who, want) in [(&alice, true), (&bot, true), (&stranger, false)] {
        let i = cx.net.get("/v1/delegations", &who.token).await?;
        let body = cx.net.ok_body(i)?;
        let listed = shapes::list(&body, &["delegations"])
            .unwrap_or_default()
            .iter()
            .any(|d| d["id"] == json!(id) || d["delegation_id"] == json!(id));
        cx.net.expect_that(
            listed == want,
            format!(
                "GET /v1/delegations as {} {} {id}",
                who.address(),
                if want { "lists" } else { "does not list" }
            ),
            format!("delegations = {}", crate::show::compact(&body)),
        )?;
    }
    Ok(())
}

const CHAIN_NEEDS: &[Need] = &[Need::Provisioning, Need::Agent];
const API_NEEDS: &[Need] = &[Need::Provisioning, Need::Agent, Need::Delegations];

/// Delegation cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.delegation.chain.missing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.5", "v1.1 §18.2", "v1.0 §12.4"],
        requirement: "A node MUST refuse an agent envelope without from.delegation_chain (DELEGATION_INVALID).",
        covers: &["R-13.3-02", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "An agent sends with a valid chain from a human (201), then with an empty chain and with none; both must be 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(chain_missing(cx)),
    },
    Case {
        id: "core.delegation.link.expired",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.0 §12.4"],
        requirement: "A node MUST refuse a chain with an expired link (DELEGATION_INVALID).",
        covers: &["R-13.3-08", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: valid chain accepted. Then a link with expires_at an hour ago (re-signed); expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(link_expired(cx)),
    },
    Case {
        id: "core.delegation.link.wrong-key",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.3.1"],
        requirement: "A node MUST refuse a link not signed by its delegator's key (DELEGATION_INVALID).",
        covers: &["R-13.3-07", "R-13.3.1-03", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: valid chain accepted. Then the same link signed by another identity's key under the delegator's key_id; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(link_wrong_key(cx)),
    },
    Case {
        id: "core.delegation.link.tampered",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.3.1"],
        requirement: "A node MUST refuse a link changed after its delegator signed it (DELEGATION_INVALID).",
        covers: &["R-13.3-07", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: valid chain accepted. Then a signed link whose expires_at is moved a day later without re-signing; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(link_tampered(cx)),
    },
    Case {
        id: "core.delegation.scope.action-outside-leaf",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.2"],
        requirement: "A node MUST refuse an agent envelope whose action is outside the leaf link's scope.",
        covers: &["R-13.3-11", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: a message under scope message.* accepted. Then a message under a link scoped calendar.* only; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(scope_excludes_action(cx)),
    },
    Case {
        id: "core.delegation.root.agent-delegator",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3"],
        requirement: "A node MUST refuse a chain whose root delegator is an agent (enforceRootDelegatorType).",
        covers: &["R-13.3-04", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: human-rooted chain accepted. Then a single link from another agent to the sender; expect 403 DELEGATION_INVALID. (Assumes enforceRootDelegatorType is on, as §13.3 lists it.)",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(root_is_agent(cx)),
    },
    Case {
        id: "core.delegation.sub.not-allowed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.1", "v1.1 §13.3"],
        requirement: "A node MUST refuse a sub-delegation under a link with allow_sub_delegation false.",
        covers: &["R-13.1-01", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: human → agent1 (allow_sub_delegation true) → agent2 accepted. Then the same chain with allow_sub_delegation false on the first link; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(sub_delegation_forbidden(cx)),
    },
    Case {
        id: "core.delegation.sub.scope-wider",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.2", "v1.1 §13.3"],
        requirement: "A node MUST refuse a sub-delegation whose scope is not a subset of its parent's.",
        covers: &["R-13.2-03", "R-13.3-10", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: two-link chain with equal scopes accepted. Then the second link adds task.* beyond the parent's message.*; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(sub_scope_wider(cx)),
    },
    Case {
        id: "core.delegation.scope.star-below-root",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.2"],
        requirement: "The scope * MUST only be valid on a root human→agent link.",
        covers: &["R-13.2-02", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: two-link chain accepted. Then a chain whose second (agent→agent) link has scope *; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(star_below_root(cx)),
    },
    Case {
        id: "core.delegation.chain.leaf-not-sender",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3", "v1.1 §13.5"],
        requirement: "A node MUST refuse a chain whose leaf delegate is not the envelope's sender.",
        covers: &["R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: agent B sends with its own chain (201). Then B presents agent A's valid chain; expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(leaf_not_sender(cx)),
    },
    Case {
        id: "core.delegation.link.created-at-future",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3"],
        requirement: "A node MUST refuse a link whose created_at is more than maxCreatedAtFutureSkewMs (5 min) ahead.",
        covers: &["R-13.3-06", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: valid chain accepted. Then a link created an hour in the future (re-signed); expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(created_at_future(cx)),
    },
    Case {
        id: "core.delegation.link.created-at-missing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3"],
        requirement: "A node MUST refuse a link without created_at.",
        covers: &["R-13.3-05", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "Control: valid chain accepted. Then a link without created_at (re-signed); expect 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(created_at_missing(cx)),
    },
    Case {
        id: "core.delegation.chain.too-long",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.3"],
        requirement: "A node MUST refuse a chain longer than maxChainLength (default 10).",
        covers: &["R-13.3-03", "R-13.3-12"],
        needs: CHAIN_NEEDS,
        how: "A human and eleven agents, each link allowing sub-delegation: the ten-link chain is accepted, the eleven-link chain must be 403 DELEGATION_INVALID (assumes the default maxChainLength).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(chain_too_long(cx)),
    },
    Case {
        id: "core.delegation.type.mismatch",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.5", "v1.1 §6.3"],
        requirement: "A node MUST reject envelopes whose from.type mismatches the sender's identity type.",
        covers: &["R-13.5-03"],
        needs: CHAIN_NEEDS,
        how: "An agent (valid chain accepted) sends with from.type \"human\" and its valid chain; expect a 4xx with a §24.1 body.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-envelope-validation"),
        run: |cx| Box::pin(type_mismatch(cx)),
    },
    Case {
        id: "core.delegation.revocation.enforced",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.4", "v1.1 §13.3", "v1.1 §16.5"],
        requirement: "A node MUST enforce revocation: an agent envelope relying on a revoked delegation is refused.",
        covers: &["R-13.4-04", "R-13.3-09", "R-13.3-12"],
        needs: API_NEEDS,
        how: "The delegator stores the link (POST /v1/delegations), the agent sends (201), the delegator revokes it (DELETE /v1/delegations/{id}); the agent's next envelope must be 403 DELEGATION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-delegation-check"),
        run: |cx| Box::pin(revoked(cx)),
    },
    Case {
        id: "core.delegation.revocation.recorded",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §13.4", "v1.1 §17.3", "v1.1 §16.8"],
        requirement: "A revocation MUST be recorded as a delegation.revoked notification naming delegator, delegate, time and reason.",
        covers: &["R-13.4-01", "R-13.4-02"],
        needs: &[
            Need::Provisioning,
            Need::Agent,
            Need::Delegations,
            Need::Events,
        ],
        how: "Store and revoke a link with ?reason=conformance; the delegate's GET /v1/events must hold a delegation.revoked event whose payload names delegator, delegate, reason and a time.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-delegation-revoked-event"),
        run: |cx| Box::pin(revocation_recorded(cx)),
    },
    Case {
        id: "core.delegation.api.create-list",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16.5"],
        requirement: "POST /v1/delegations stores a link; GET /v1/delegations lists it to its delegator and delegate only.",
        covers: &["R-16.5-01"],
        needs: API_NEEDS,
        how: "The delegator stores a signed link (201 with an id); GET /v1/delegations lists that id for delegator and delegate and not for a third identity.",
        interpretation: None,
        mutant: Mutant::NotApplicable("§16.5 lists the endpoints without a requirement keyword"),
        run: |cx| Box::pin(api_create_list(cx)),
    },
];
