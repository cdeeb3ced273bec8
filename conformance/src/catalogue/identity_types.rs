//! Identity documents by type (v1.1 §6.3 table, §6.4): an agent names its delegator and
//! carries a bounded, signed delegation; a team its members and routing policy; a service
//! its accountable operator; agent members are only for `type: "agent"`.
//!
//! Every case registers over the DESIGN.md §9 API with exactly one rule broken and expects a
//! refusal that creates nothing; the positive halves check what the resolved document shows.

use super::identity::{expect_not_registered, register, resolve_path};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::Ctx;
use loom_client::Identity;
use serde_json::{Map, Value, json};

/// A fresh identity of `kind` with the members its type requires, edited by `edit`.
async fn typed(
    cx: &mut Ctx,
    name: &str,
    kind: &str,
    members_of: &str,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> Result<Identity, Finding> {
    Ok(typed_pair(cx, name, kind, members_of, edit).await?.0)
}

/// [`typed`], and the control: the same identity (same address and key) with the members
/// of its own type unedited.
async fn typed_pair(
    cx: &mut Ctx,
    name: &str,
    kind: &str,
    members_of: &str,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> Result<(Identity, Identity), Finding> {
    let id = cx.fresh_identity(name, kind)?;
    let mut members = cx.type_members(id.address(), members_of).await?;
    let own = if members_of == kind {
        members.clone()
    } else {
        cx.type_members(id.address(), kind).await?
    };
    if let Some(m) = members.as_object_mut() {
        edit(m);
    }
    Ok((id.clone().with_members(members), id.with_members(own)))
}

/// Registers `probe`, expects a refusal that created nothing, then registers `control` — the
/// same identity with only the rule under test kept — and credits the refusal beside it.
async fn expect_registration_refused(
    cx: &mut Ctx,
    probe: &Identity,
    control: &Identity,
) -> Verdict {
    let p = register(cx, probe).await?;
    cx.net.expect_not_accepted(
        p,
        "a refusal: 4xx with a §24.1 error body (v1.1 §6.3, §6.4)",
    )?;
    expect_not_registered(cx, probe.address()).await?;
    let c = register(cx, control).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same registration with the members its type requires",
        &[],
        "",
    )
}

/// [`typed_pair`] then [`expect_registration_refused`].
async fn refused_with(
    cx: &mut Ctx,
    name: &str,
    kind: &str,
    members_of: &str,
    edit: impl FnOnce(&mut Map<String, Value>),
) -> Verdict {
    let (probe, control) = typed_pair(cx, name, kind, members_of, edit).await?;
    expect_registration_refused(cx, &probe, &control).await
}

/// Registers `id` (expects 201) and returns its resolved document.
async fn registered_document(cx: &mut Ctx, id: &Identity) -> Result<Value, Finding> {
    let i = register(cx, id).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "the registration (DESIGN.md §9 form)",
        ))?;
    let observer = cx.identity("observer", "human").await?;
    let i = cx
        .net
        .get(&resolve_path(id.address()), &observer.token)
        .await?;
    cx.net.ok_body(i)
}

async fn agent_delegator_required(cx: &mut Ctx) -> Verdict {
    refused_with(cx, "bot", "agent", "agent", |m| {
        m.remove("delegator");
    })
    .await
}

/// The §6.4 members of `agent` delegated by `sponsor` with `scope` until `expires`, with the
/// target's full `agent_info` (so only the delegation can be what a node refuses).
fn agent_members(
    cx: &Ctx,
    sponsor: &Identity,
    agent: &str,
    scope: &[String],
    expires: &str,
) -> Value {
    let mut m = sponsor.delegate_agent(agent, scope, expires);
    m["agent_info"] = cx.target.agent_info.clone();
    m
}

async fn agent_scope_bounded(cx: &mut Ctx) -> Verdict {
    let sponsor = cx.sponsor().await?;
    let later = cx.data.now_plus_days(30);
    let past = cx.data.now_plus_days(-1);
    let read = ["read.*".to_owned()];
    // Each probe on an address of its own (its control registers it): no scope, then an
    // expired delegation; the control a bounded scope expiring in 30 days.
    for (scope, until) in [(&[][..], &later), (&read[..], &past)] {
        let bot = cx.fresh_identity("bot", "agent")?;
        let members = |scope: &[String], until: &str| {
            agent_members(cx, &sponsor, bot.address(), scope, until)
        };
        let probe = bot.clone().with_members(members(scope, until));
        let control = bot.clone().with_members(members(&read, &later));
        expect_registration_refused(cx, &probe, &control).await?;
    }
    Ok(())
}

async fn agent_document(cx: &mut Ctx) -> Verdict {
    for missing in ["delegation_signature", "agent_info"] {
        refused_with(cx, "bot", "agent", "agent", |m| {
            m.remove(missing);
        })
        .await?;
    }
    let bot = typed(cx, "bot", "agent", "agent", |_| {}).await?;
    let sent = bot.registration_document();
    let doc = registered_document(cx, &bot).await?;
    cx.net
        .expect_eq("type (v1.1 §6.4)", &json!("agent"), &doc["type"])?;
    for m in [
        "delegator",
        "delegation_scope",
        "delegation_expires",
        "delegation_signature",
    ] {
        cx.net
            .expect_eq(&format!("{m} in the resolved document"), &sent[m], &doc[m])?;
    }
    cx.net.expect_that(
        doc["agent_info"].is_object(),
        "agent_info (an object) in the resolved document",
        format!("agent_info = {}", doc["agent_info"]),
    )
}

async fn agent_type_declared(cx: &mut Ctx) -> Verdict {
    refused_with(cx, "impostor", "human", "agent", |_| {}).await
}

async fn team_members(cx: &mut Ctx) -> Verdict {
    refused_with(cx, "desk", "team", "team", |m| {
        m.remove("members");
    })
    .await?;
    let member = cx.identity("member", "human").await?;
    let list = json!([member.address()]);
    let desk = typed(cx, "desk", "team", "team", |m| {
        m.insert("members".into(), list.clone());
    })
    .await?;
    let doc = registered_document(cx, &desk).await?;
    cx.net.expect_eq(
        "members in the resolved team document",
        &list,
        &doc["members"],
    )
}

async fn team_routing_policy(cx: &mut Ctx) -> Verdict {
    refused_with(cx, "desk", "team", "team", |m| {
        m.remove("routing_policy");
    })
    .await?;
    let desk = typed(cx, "desk", "team", "team", |_| {}).await?;
    let doc = registered_document(cx, &desk).await?;
    cx.net.expect_eq(
        "routing_policy in the resolved team document",
        &desk.registration_document()["routing_policy"],
        &doc["routing_policy"],
    )
}

async fn service_operator(cx: &mut Ctx) -> Verdict {
    refused_with(cx, "cron", "service", "service", |m| {
        m.remove("operator");
    })
    .await?;
    let cron = typed(cx, "cron", "service", "service", |_| {}).await?;
    let doc = registered_document(cx, &cron).await?;
    cx.net.expect_eq(
        "operator in the resolved service document",
        &cron.registration_document()["operator"],
        &doc["operator"],
    )
}

const R: &[Need] = &[Need::Registration];

/// Identity-type cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.identity.agent.delegator-required",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3", "v1.1 §6.4", "v1.0 §6.3"],
        requirement: "An agent identity MUST have a delegator: registering one without it is refused.",
        covers: &["R-6.3-02", "R-6.4-01"],
        needs: R,
        how: "Register an agent whose document carries every §6.4 member except delegator; expect a 4xx §24.1 refusal and the address not resolvable (404).",
        interpretation: None,
        mutant: Mutant::Quirk("accept-agent-without-delegator"),
        run: |cx| Box::pin(agent_delegator_required(cx)),
    },
    Case {
        id: "core.identity.agent.bounded-scope",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3", "v1.1 §13.2"],
        requirement: "An agent identity MUST have a bounded delegation scope: an empty scope or an already expired delegation is refused.",
        covers: &["R-6.3-03"],
        needs: R,
        how: "Register an agent delegated (correctly signed) with delegation_scope [], then one whose delegation_expires is yesterday; expect both refused (4xx §24.1) and nothing registered.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-unbounded-agent-scope"),
        run: |cx| Box::pin(agent_scope_bounded(cx)),
    },
    Case {
        id: "core.identity.agent.document",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.4", "v1.1 §6.2"],
        requirement: "Agent identity documents MUST carry delegator, agent_info, delegation_scope, delegation_expires and delegation_signature, and type \"agent\".",
        covers: &["R-6.4-01", "R-6.4-02"],
        needs: R,
        how: "Registrations missing delegation_signature, then agent_info, are refused; a complete agent registers (201) and resolves with type agent and the five members as sent.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-incomplete-agent-document"),
        run: |cx| Box::pin(agent_document(cx)),
    },
    Case {
        id: "core.identity.agent.type-declared",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.4"],
        requirement: "Agents MUST set type \"agent\" in their identity document: a document carrying an agent's delegation under another type is refused.",
        covers: &["R-6.4-02"],
        needs: R,
        how: "Register type human with a complete, signed agent delegation (delegator, scope, …); expect a 4xx §24.1 refusal and nothing registered.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-agent-members-on-other-types"),
        run: |cx| Box::pin(agent_type_declared(cx)),
    },
    Case {
        id: "core.identity.team.members",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3"],
        requirement: "A team identity MUST have a members list.",
        covers: &["R-6.3-06"],
        needs: R,
        how: "Register a team without members (refused, nothing created); register one with a member (201) and resolve it: members as sent.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-team-without-members"),
        run: |cx| Box::pin(team_members(cx)),
    },
    Case {
        id: "core.identity.team.routing-policy",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3"],
        requirement: "A team identity MUST have a routing policy.",
        covers: &["R-6.3-07"],
        needs: R,
        how: "Register a team without routing_policy (refused, nothing created); register one with routing_policy \"all\" (201) and resolve it: routing_policy as sent.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-team-without-routing-policy"),
        run: |cx| Box::pin(team_routing_policy(cx)),
    },
    Case {
        id: "core.identity.service.operator",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §6.3"],
        requirement: "A service identity MUST have an operator field naming the accountable human or organisation.",
        covers: &["R-6.3-08"],
        needs: R,
        how: "Register a service without operator (refused, nothing created); register one with an operator (201) and resolve it: operator as sent.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-service-without-operator"),
        run: |cx| Box::pin(service_operator(cx)),
    },
];
