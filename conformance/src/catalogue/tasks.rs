//! Tasks (v1.1 §18.3; transitions and who may trigger them from v1.0 §17.3).
//!
//! v1.1 §18.3 keeps the task states and requires each transition to be an envelope, but not
//! the v1.0 §17.3 transition table: the table's rules are recommendations here (SHOULD), and
//! a node without them is not broken.

use super::thread_kit::id_of;
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident};
use serde_json::{Value, json};

/// A signed `task` envelope from `who` in `t` with `intent` and `params`.
fn task(cx: &mut Ctx, who: &Ident, t: &str, to: &[&Ident], intent: &str, params: Value) -> Value {
    let mut e = cx.data.message(who, t, None, to, "task");
    e["type"] = "task".into();
    e["content"]["structured"] = json!({"intent": intent, "parameters": params});
    who.sign(&mut e);
    e
}

/// Alice owns a thread with Bob and created a task assigned to Bob; returns
/// (alice, bob, thread, task id).
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, String, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let create = task(
        cx,
        &alice,
        &t,
        &[&bob],
        "task.create@v1",
        json!({"title": "Q1 invoice", "assignee": bob.address()}),
    );
    let i = cx.net.send(&alice, &create).await?;
    cx.net.expect_created(i)?;
    Ok((alice, bob, t, id_of(&create)))
}

/// `who` moves the task to `state`; returns the exchange.
async fn update(
    cx: &mut Ctx,
    who: &Ident,
    peer: &Ident,
    t: &str,
    id: &str,
    state: &str,
) -> Result<Ex, Finding> {
    let e = task(
        cx,
        who,
        t,
        &[peer],
        "task.state_update@v1",
        json!({"task_id": id, "state": state}),
    );
    cx.net.send(who, &e).await
}

async fn lifecycle(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = setup(cx).await?;
    let i = update(cx, &alice, &bob, &t, &id, "assigned").await?;
    cx.net.expect_created(i)?;
    let mut resumed = None;
    for s in [
        "accepted",
        "in_progress",
        "blocked",
        "in_progress",
        "completed",
    ] {
        let i = update(cx, &bob, &alice, &t, &id, s).await?;
        cx.net.expect_created(i)?;
        if s == "in_progress" {
            resumed = Some(i);
        }
    }
    let i = update(cx, &bob, &alice, &t, &id, "in_progress").await?;
    // The control: the same move to in_progress from blocked, accepted above (§18.3).
    match resumed {
        Some(c) => cx.net.expect_refused_beside(
            i,
            c,
            "in_progress from blocked",
            &["STATE_TRANSITION_INVALID"],
            "",
        ),
        None => cx.net.expect_code(i, "STATE_TRANSITION_INVALID"),
    }
}

async fn invalid_transition(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = setup(cx).await?;
    let p = update(cx, &alice, &bob, &t, &id, "completed").await?;
    cx.net
        .expect_not_accepted(p, "409 STATE_TRANSITION_INVALID (v1.1 §18.3)")?;
    let c = update(cx, &alice, &bob, &t, &id, "assigned").await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same update from created to assigned",
        &["STATE_TRANSITION_INVALID"],
        "",
    )
}

async fn wrong_actor(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = setup(cx).await?;
    // Only the creator or the thread owner assigns.
    let p = update(cx, &bob, &alice, &t, &id, "assigned").await?;
    cx.net
        .expect_not_accepted(p, "403 CAPABILITY_DENIED (v1.1 §18.3)")?;
    let c = update(cx, &alice, &bob, &t, &id, "assigned").await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same update sent by the task's creator",
        &["CAPABILITY_DENIED"],
        "",
    )?;
    // Only the assignee accepts.
    let p = update(cx, &alice, &bob, &t, &id, "accepted").await?;
    cx.net
        .expect_not_accepted(p, "403 CAPABILITY_DENIED (v1.1 §18.3)")?;
    let c = update(cx, &bob, &alice, &t, &id, "accepted").await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same update sent by the assignee",
        &["CAPABILITY_DENIED"],
        "",
    )
}

const P: &[Need] = &[Need::Provisioning];

/// Why the task cases are SHOULD.
const V10_TABLE: &str = "The transition table and who may trigger each transition are in v1.0 §17.3 only; v1.1 §18.3 lists the states and requires each transition to be recorded as a task.state_update@v1 envelope, without the table. The harness checks the v1.0 table as a recommendation.";

/// Task cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.task.lifecycle",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.0 §17.3", "v1.1 §18.3"],
        requirement: "Tasks should move through the states by task.state_update@v1 envelopes along the v1.0 §17.3 table; a transition out of a terminal state should be refused with STATE_TRANSITION_INVALID.",
        covers: &["R-18.3-04", "R-18.3-01", "R-18.3-02", "R-24.2-14"],
        needs: P,
        how: "Alice creates a task for Bob (task.create@v1) and assigns it; Bob accepts, starts, blocks, resumes and completes it (each accepted); in_progress after completed is 409 STATE_TRANSITION_INVALID.",
        interpretation: Some(V10_TABLE),
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(lifecycle(cx)),
    },
    Case {
        id: "core.task.invalid-transition",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.0 §17.3", "v1.1 §18.3"],
        requirement: "A task transition outside the v1.0 §17.3 table should be refused with STATE_TRANSITION_INVALID.",
        covers: &["R-18.3-04", "R-18.3-01", "R-24.2-14"],
        needs: P,
        how: "Alice moves a created task straight to completed: 409 STATE_TRANSITION_INVALID.",
        interpretation: Some(V10_TABLE),
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(invalid_transition(cx)),
    },
    Case {
        id: "core.task.wrong-actor",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.0 §17.3", "v1.1 §18.3", "v1.1 §24.2"],
        requirement: "A task transition triggered by an identity the v1.0 §17.3 table does not allow should be refused.",
        covers: &["R-18.3-04", "R-18.3-01", "R-24.2-04"],
        needs: P,
        how: "Bob (assignee) assigns the task: 403 CAPABILITY_DENIED; Alice (creator) assigns it (201); Alice accepts it on Bob's behalf: 403 CAPABILITY_DENIED.",
        interpretation: Some(V10_TABLE),
        mutant: Mutant::Quirk("allow-any-task-actor"),
        run: |cx| Box::pin(wrong_actor(cx)),
    },
];
