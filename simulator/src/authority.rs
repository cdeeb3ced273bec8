//! Acting on someone else's authority in the workload (issue 16 Build 2, "capability and
//! delegation use"):
//!
//! - **Capabilities** (v1.1 §12, §16.4): the owner of a thread issues a signed token granting
//!   `add_participant` on it to one of the thread's first recipients and registers it on its
//!   node (`POST /v1/capabilities`). The token reaches the holder out of band (the run's
//!   [`Grant`] list, as a token travels by mail or chat); the holder's next capability action
//!   adds a participant with it through the holder's own node (§12.4), local or another
//!   node, which federates the operation to the thread's other nodes (§11.5, §15.4 enforces
//!   the capability rules on delivery).
//! - **Delegations** (v1.1 §6.4, §13): each client host registers one agent identity
//!   `bot.uN@domain` whose identity document carries a delegation from the node's first
//!   user, who also registers a signed delegation link for it (`POST /v1/delegations`,
//!   §16.5). The agent sends new messages to local and remote users with the link as its
//!   `from.delegation_chain` (§13.3); receiving nodes verify the chain (§15.4).

use crate::clock::SkewClock;
use crate::trace::{Ack, Grant};
use crate::workload::{ClientPlan, User, identity, status_of};
use loom_client::{Client, EnvelopeFactory, MessageDraft, SimDial};
use serde_json::{Value, json};
use std::time::Duration;

/// Scope of the agent's delegation (§13.1): messages only.
const AGENT_SCOPE: &str = "message.*";
/// End of the agent's delegation (the simulated epoch is 2026-03-01; the longest scenario
/// runs 72 hours).
const AGENT_EXPIRES: &str = "2027-01-01T00:00:00Z";

/// The agent of a client host and the delegation chain it sends under.
pub(crate) struct Agent {
    pub(crate) user: User,
    /// `[link]`: one link from the delegator to the agent (§13.1).
    pub(crate) chain: Value,
}

/// `loom://bot.uN@domain` for the delegator `loom://uN@domain`.
fn agent_address(delegator: &str) -> String {
    delegator.replacen("loom://", "loom://bot.", 1)
}

/// Registers the agent of `delegator` (type `agent`, §6.3/§6.4 members signed by the
/// delegator), logs it in, and has the delegator register the §13.1 link on the node
/// (§16.5). Setup runs before any fault; a refusal is an error the trace shows.
pub(crate) async fn register_agent(
    plan: &ClientPlan,
    delegator: &mut User,
    factory: &EnvelopeFactory<SkewClock>,
) -> Result<Agent, Box<dyn std::error::Error>> {
    let address = agent_address(delegator.id.address());
    let scope = vec![AGENT_SCOPE.to_owned()];
    let members = delegator.id.delegate_agent(&address, &scope, AGENT_EXPIRES);
    let id = identity(plan.seed, &address)?
        .with_type("agent")
        .with_members(members);
    let mut client = Client::new(&plan.url, SimDial)?.with_timeout(Duration::from_secs(120));
    let reg = id.register(&mut client).await;
    let (status, digest) = status_of(&reg);
    plan.shared.lock().line(
        "http",
        json!({"client": plan.domain, "user": address, "op": "register", "type": "agent", "status": status, "body": digest}),
    );
    reg?;
    let session = id.login(&mut client).await?;
    client.set_token(Some(session.access_token));
    let link = loom_agent::enroll::signed_link(
        &delegator.id,
        &address,
        &scope,
        &factory.now().to_rfc3339(),
        AGENT_EXPIRES,
    )?;
    let t = delegator
        .client
        .call("POST", "/v1/delegations", Some(&link))
        .await;
    let (status, digest) = crate::trace::outcome(&t);
    {
        let mut rec = plan.shared.lock();
        rec.line(
            "http",
            json!({"client": plan.domain, "user": delegator.id.address(), "op": "delegation.create", "delegate": address, "status": status, "body": digest}),
        );
        rec.keys
            .insert(address.clone(), id.signing_key().verifying_key());
    }
    Ok(Agent {
        user: User { id, client },
        chain: json!([link]),
    })
}

/// The agent sends a new message to `to` under its delegation chain (§13.3). Signed after
/// the chain is in `from` (the chain is part of the signed envelope, §7.2).
pub(crate) async fn agent_message(
    plan: &ClientPlan,
    agent: &mut Agent,
    factory: &mut EnvelopeFactory<SkewClock>,
    to: String,
) -> Result<(), Box<dyn std::error::Error>> {
    let me = agent.user.id.address().to_owned();
    let draft = MessageDraft {
        thread_id: None,
        parent_id: None,
        to: vec![to],
        text: format!("on behalf of a human, from {me}"),
    };
    let mut env = factory.message(&agent.user.id, &draft)?;
    env["from"]["delegation_chain"] = agent.chain.clone();
    agent.user.id.sign(&mut env)?;
    let sent = agent.user.client.send_envelope(&env).await;
    let (status, digest) = status_of(&sent);
    let id = env["id"].as_str().unwrap_or_default().to_owned();
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": "agent.send", "envelope": id,
               "to": draft.to, "status": status, "body": digest}),
    );
    if sent.is_ok() {
        rec.acks.push(Ack {
            node: plan.domain.clone(),
            id,
            thread: env["thread_id"].as_str().unwrap_or_default().to_owned(),
            parent: None,
            sender: me,
            to: draft.to,
            kind: "message".into(),
        });
    }
    Ok(())
}

/// A capability action of this client host: a user holding a pending grant uses it
/// ([`use_grant`]); otherwise `user` issues one on a thread it started ([`issue_grant`]).
/// `false` when neither is possible (the action becomes a message).
pub(crate) async fn capability_action(
    plan: &ClientPlan,
    users: &mut [User],
    ui: usize,
    factory: &mut EnvelopeFactory<SkewClock>,
    everyone: &[String],
    locked: &dyn Fn(&str) -> bool,
    pick: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    if frac(pick, 1) < plan.workload.revoke_ratio {
        let target = plan.shared.lock().grants.iter().position(|g| {
            !g.revoked && !g.spent && g.node == plan.domain && plan.users.contains(&g.issuer)
        });
        if let Some(i) = target
            && let Some(owner) = {
                let issuer = plan.shared.lock().grants[i].issuer.clone();
                users.iter_mut().find(|u| u.id.address() == issuer)
            }
        {
            return revoke_grant(plan, owner, factory, i).await;
        }
    }
    let pending = {
        let mut rec = plan.shared.lock();
        rec.grants
            .iter()
            .position(|g| plan.users.contains(&g.holder))
            .map(|i| rec.grants.remove(i))
    };
    if let Some(grant) = pending {
        let Some(holder) = users.iter_mut().find(|u| u.id.address() == grant.holder) else {
            return Ok(false);
        };
        return use_grant(plan, holder, factory, everyone, grant, pick).await;
    }
    issue_grant(plan, &mut users[ui], factory, locked, pick).await
}

/// A number in `[0, 1)` drawn from `pick` and `salt` (splitmix64), so new choices do not
/// consume the workload's random stream (older scenarios keep their runs).
fn frac(pick: u64, salt: u64) -> f64 {
    let mut z = pick ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// The owner revokes the pending grant `i` it issued (`DELETE /v1/capabilities/{id}` with the
/// signed `capability.revoked@v1` operation, v1.1 §12.3, §16.4). On 200 the grant stays
/// pending, marked revoked — its holder still tries it, which must be refused — and the
/// thread's `cap_epoch` advances for later tokens.
async fn revoke_grant(
    plan: &ClientPlan,
    owner: &mut User,
    factory: &mut EnvelopeFactory<SkewClock>,
    i: usize,
) -> Result<bool, Box<dyn std::error::Error>> {
    let (thread, cid) = {
        let rec = plan.shared.lock();
        let g = &rec.grants[i];
        (
            g.thread.clone(),
            g.token["id"].as_str().unwrap_or_default().to_owned(),
        )
    };
    let me = owner.id.address().to_owned();
    let intent = "capability.revoked@v1";
    let op = factory.thread_op(&owner.id, &thread, intent, json!({"capability_id": cid}))?;
    let t = owner
        .client
        .call("DELETE", &format!("/v1/capabilities/{cid}"), Some(&op))
        .await;
    let (status, digest) = crate::trace::outcome(&t);
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": "capability.revoke", "capability": cid,
               "envelope": op["id"], "thread": thread, "status": status, "body": digest}),
    );
    if status == 200 {
        if let Some(g) = rec
            .grants
            .iter_mut()
            .find(|g| g.token["id"].as_str() == Some(cid.as_str()))
        {
            g.revoked = true;
        }
        *rec.cap_epochs.entry(thread.clone()).or_default() += 1;
        rec.acks.push(Ack {
            node: plan.domain.clone(),
            id: op["id"].as_str().unwrap_or_default().to_owned(),
            thread,
            parent: None,
            sender: me.clone(),
            to: vec![me],
            kind: "thread_op".into(),
        });
    }
    Ok(true)
}

/// The owner issues a token granting `add_participant` on one of its threads to one of the
/// thread's first recipients (§12.1: signed by the issuer, `epoch` the thread's `cap_epoch`,
/// 0 as the workload revokes none) and registers it on its node (§16.4). On 201 the grant
/// waits for the holder.
async fn issue_grant(
    plan: &ClientPlan,
    owner: &mut User,
    factory: &mut EnvelopeFactory<SkewClock>,
    locked: &dyn Fn(&str) -> bool,
    pick: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    let me = owner.id.address().to_owned();
    let roots: Vec<Ack> = plan
        .shared
        .lock()
        .acks
        .iter()
        .filter(|a| {
            a.kind == "message"
                && a.sender == me
                && a.parent.is_none()
                && a.to.iter().any(|t| *t != me)
                && !locked(&a.thread)
        })
        .cloned()
        .collect();
    if roots.is_empty() {
        return Ok(false);
    }
    let root = &roots[usize::try_from(pick % roots.len() as u64).unwrap_or(0)];
    let others: Vec<&String> = root.to.iter().filter(|t| **t != me).collect();
    let holder = others[usize::try_from((pick >> 20) % others.len() as u64).unwrap_or(0)].clone();
    let single_use = frac(pick, 2) < plan.workload.single_use_ratio;
    let epoch = plan
        .shared
        .lock()
        .cap_epochs
        .get(&root.thread)
        .copied()
        .unwrap_or(0);
    let mut token = json!({
        "loom": "1.1",
        "id": factory.capability_id(),
        "issued_by": me,
        "issued_to": holder,
        "created_at": factory.now().to_rfc3339(),
        "expires_at": null,
        "single_use": single_use,
        "epoch": epoch,
        "grants": ["add_participant"],
        "scope": {"thread_id": root.thread},
    });
    loom_protocol::capability::sign_capability_token(
        &mut token,
        owner.id.signing_key(),
        owner.id.key_id_typed(),
    )?;
    let t = owner
        .client
        .call("POST", "/v1/capabilities", Some(&token))
        .await;
    let (status, digest) = crate::trace::outcome(&t);
    let mut rec = plan.shared.lock();
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": "capability.issue", "capability": token["id"],
               "thread": root.thread, "holder": holder, "single_use": single_use, "epoch": epoch,
               "status": status, "body": digest}),
    );
    if status == 201 {
        let mut exclude = root.to.clone();
        exclude.push(me.clone());
        rec.grants.push(Grant {
            holder,
            thread: root.thread.clone(),
            token,
            exclude,
            issuer: me.clone(),
            node: plan.domain.clone(),
            single_use,
            spent: false,
            revoked: false,
        });
    }
    Ok(true)
}

/// The holder adds a participant to the granted thread with the token, through its own node
/// (`thread.add_participant@v1` with `parameters.capability_token`, §12.4, §11.2).
async fn use_grant(
    plan: &ClientPlan,
    holder: &mut User,
    factory: &mut EnvelopeFactory<SkewClock>,
    everyone: &[String],
    grant: Grant,
    pick: u64,
) -> Result<bool, Box<dyn std::error::Error>> {
    let me = holder.id.address().to_owned();
    let fresh: Vec<&String> = everyone
        .iter()
        .filter(|a| **a != me && !grant.exclude.contains(a))
        .collect();
    if fresh.is_empty() {
        return Ok(false);
    }
    let who = fresh[usize::try_from((pick >> 28) % fresh.len() as u64).unwrap_or(0)].clone();
    let intent = "thread.add_participant@v1";
    let env = factory.thread_op(
        &holder.id,
        &grant.thread,
        intent,
        json!({"identity": who, "role": "participant", "capability_token": grant.token}),
    )?;
    let sent = holder.client.send_envelope(&env).await;
    let (status, digest) = status_of(&sent);
    let id = env["id"].as_str().unwrap_or_default().to_owned();
    let mut rec = plan.shared.lock();
    // A second use of a single-use token is `capability.reuse`; a revoked token's use says so.
    let op = if grant.spent {
        "capability.reuse"
    } else {
        "capability.use"
    };
    rec.line(
        "http",
        json!({"client": plan.domain, "user": me, "op": op, "intent": intent,
               "envelope": id, "thread": grant.thread, "capability": grant.token["id"],
               "issuer": grant.token["issued_by"], "issuer_node": grant.node,
               "single_use": grant.single_use, "revoked": grant.revoked,
               "subject": who, "status": status, "body": digest}),
    );
    if sent.is_ok() && grant.single_use && !grant.spent && !grant.revoked {
        let mut exclude = grant.exclude.clone();
        exclude.push(who.clone());
        rec.grants.push(Grant {
            spent: true,
            exclude,
            ..grant.clone()
        });
    }
    if sent.is_ok() {
        rec.acks.push(Ack {
            node: plan.domain.clone(),
            id,
            thread: grant.thread,
            parent: None,
            sender: me.clone(),
            to: vec![me],
            kind: "thread_op".into(),
        });
    }
    Ok(true)
}
