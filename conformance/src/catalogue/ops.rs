//! Thread operations and the thread state machine (v1.1 §10.4, §10.5, §11.2, §11.3, §12.4).

use super::thread_kit::{
    expect_refused_without, expect_state, is_current, op_accepted, op_ok, reply, send_op,
    thread_obj,
};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident};
use serde_json::{Value, json};

const RESOLVE: &str = "thread.resolve@v1";
const ARCHIVE: &str = "thread.archive@v1";
const LOCK: &str = "thread.lock@v1";
const REOPEN: &str = "thread.reopen@v1";

/// Alice owns a thread with Bob; returns (alice, bob, thread, root).
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, String, Value), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    Ok((alice, bob, t, root))
}

/// `intent` from the owner must be refused with 409 STATE_TRANSITION_INVALID (§24.2's code for
/// an invalid transition) beside `control`, the same intent accepted from a state that allows
/// it (§10.4).
async fn refused(cx: &mut Ctx, who: &Ident, t: &str, intent: &str, control: Ex) -> Verdict {
    let i = send_op(cx, who, t, intent, json!({})).await?;
    refused_beside(cx, i, control, intent)
}

fn refused_beside(cx: &Ctx, probe: Ex, control: Ex, intent: &str) -> Verdict {
    cx.net.expect_refused_beside(
        probe,
        control,
        &format!("{intent} from a state §10.4 allows it from"),
        &["STATE_TRANSITION_INVALID"],
        "",
    )
}

async fn resolve(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let c = op_accepted(cx, &alice, &t, RESOLVE, json!({})).await?;
    expect_state(cx, &alice, &t, "resolved").await?;
    refused(cx, &alice, &t, RESOLVE, c).await
}

async fn archive_from_active(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let p = send_op(cx, &alice, &t, ARCHIVE, json!({})).await?;
    cx.net
        .expect_not_accepted(p, "409 STATE_TRANSITION_INVALID (v1.1 §10.4)")?;
    expect_state(cx, &alice, &t, "active").await?;
    op_ok(cx, &alice, &t, RESOLVE, json!({})).await?;
    let c = op_accepted(cx, &alice, &t, ARCHIVE, json!({})).await?;
    refused_beside(cx, p, c, ARCHIVE)
}

async fn archive(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    op_ok(cx, &alice, &t, RESOLVE, json!({})).await?;
    let c = op_accepted(cx, &alice, &t, REOPEN, json!({})).await?;
    op_ok(cx, &alice, &t, RESOLVE, json!({})).await?;
    op_ok(cx, &alice, &t, ARCHIVE, json!({})).await?;
    expect_state(cx, &alice, &t, "archived").await?;
    refused(cx, &alice, &t, REOPEN, c).await
}

async fn lock_refuses_envelopes(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let (c, _) = reply(cx, &bob, &t, root["id"].as_str(), &[&alice], "in time").await?;
    cx.net.expect_control(c, "bob's reply before the lock")?;
    op_ok(cx, &alice, &t, LOCK, json!({})).await?;
    expect_state(cx, &alice, &t, "locked").await?;
    let (i, _) = reply(cx, &bob, &t, root["id"].as_str(), &[&alice], "too late").await?;
    cx.net
        .expect_refused_beside(i, c, "bob's reply before the lock", &["THREAD_LOCKED"], "")
}

async fn lock_from_resolved(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let c = op_accepted(cx, &alice, &t, RESOLVE, json!({})).await?;
    op_ok(cx, &alice, &t, LOCK, json!({})).await?;
    expect_state(cx, &alice, &t, "locked").await?;
    // §10.4 names STATE_TRANSITION_INVALID for an invalid transition, and §24.2's
    // THREAD_LOCKED ("Thread locked") fits a locked thread as well.
    let i = send_op(cx, &alice, &t, RESOLVE, json!({})).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        &format!("{RESOLVE} from a state §10.4 allows it from"),
        &["STATE_TRANSITION_INVALID", "THREAD_LOCKED"],
        "",
    )
}

async fn reopen(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    op_ok(cx, &alice, &t, LOCK, json!({})).await?;
    let c = op_accepted(cx, &alice, &t, REOPEN, json!({})).await?;
    expect_state(cx, &alice, &t, "active").await?;
    let (i, _) = reply(cx, &bob, &t, root["id"].as_str(), &[&alice], "open again").await?;
    cx.net.expect_created(i)?;
    refused(cx, &alice, &t, REOPEN, c).await
}

/// `op` with `content.structured.preconditions` = `pre`, signed and sent by `who`.
async fn op_with_preconditions(
    cx: &mut Ctx,
    who: &Ident,
    t: &str,
    intent: &str,
    pre: Value,
) -> Result<Ex, Finding> {
    let mut e = cx.data.op(who, t, intent, json!({}));
    e["content"]["structured"]["preconditions"] = pre;
    who.sign(&mut e);
    cx.net.send(who, &e).await
}

async fn precondition_state(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let i = op_with_preconditions(
        cx,
        &alice,
        &t,
        RESOLVE,
        json!({"thread_state_in": ["resolved"]}),
    )
    .await?;
    expect_refused_without(cx, i, "\"meta\"", "a stored envelope")?;
    expect_state(cx, &alice, &t, "active").await?;
    let c = op_with_preconditions(
        cx,
        &alice,
        &t,
        RESOLVE,
        json!({"thread_state_in": ["active"]}),
    )
    .await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "the same operation with a precondition that holds",
        &[],
        "",
    )
}

async fn precondition_epoch(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let i = op_with_preconditions(cx, &alice, &t, RESOLVE, json!({"cap_epoch": 7})).await?;
    expect_refused_without(cx, i, "\"meta\"", "a stored envelope")?;
    expect_state(cx, &alice, &t, "active").await?;
    let c = op_with_preconditions(cx, &alice, &t, RESOLVE, json!({"cap_epoch": 0})).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "the same operation with the thread's cap_epoch",
        &[],
        "",
    )
}

async fn add_participant(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    let (p, _) = reply(cx, &carol, &t, root["id"].as_str(), &[&alice], "let me in").await?;
    cx.net.expect_not_accepted(
        p,
        "403 CAPABILITY_DENIED for a non-participant (v1.1 §12.4)",
    )?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.add_participant@v1",
        json!({"identity": carol.address(), "role": "participant"}),
    )
    .await?;
    let th = thread_obj(cx, &carol, &t).await?;
    cx.net.expect_that(
        is_current(&th, &carol) && is_current(&th, &bob),
        "Carol and Bob are current participants after thread.add_participant@v1",
        format!(
            "participants = {}",
            crate::show::compact(&th["participants"])
        ),
    )?;
    let (c, _) = reply(cx, &carol, &t, root["id"].as_str(), &[&alice], "in").await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "carol's reply once she is a participant",
        // No sentence names the code for a non-participant's reply (CAPABILITY_DENIED,
        // AUDIENCE_DENIED and a hiding THREAD_NOT_FOUND all fit): any §24.1 4xx error.
        &[],
        "",
    )
}

async fn remove_participant(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let (c, _) = reply(
        cx,
        &bob,
        &t,
        root["id"].as_str(),
        &[&alice],
        "still a participant",
    )
    .await?;
    cx.net
        .expect_control(c, "bob's reply while he is a participant")?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.remove_participant@v1",
        json!({"identity": bob.address()}),
    )
    .await?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net.expect_that(
        !is_current(&th, &bob),
        "Bob is no longer a current participant (absent, or left_at set)",
        format!(
            "participants = {}",
            crate::show::compact(&th["participants"])
        ),
    )?;
    let (i, _) = reply(cx, &bob, &t, root["id"].as_str(), &[&alice], "still here?").await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "bob's reply while he is a participant",
        // No sentence names the code for a non-participant's reply (CAPABILITY_DENIED,
        // AUDIENCE_DENIED and a hiding THREAD_NOT_FOUND all fit): any §24.1 4xx error.
        &[],
        "",
    )
}

async fn update_subject_labels(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.update@v1",
        json!({"subject": "Q1 invoice", "labels": ["finance", "q1-2026"]}),
    )
    .await?;
    let th = thread_obj(cx, &bob, &t).await?;
    cx.net
        .expect_eq("thread.subject", &json!("Q1 invoice"), &th["subject"])?;
    let mut labels: Vec<&str> = th["labels"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    labels.sort_unstable();
    cx.net.expect_eq(
        "thread.labels (sorted)",
        &json!(["finance", "q1-2026"]),
        &json!(labels),
    )
}

async fn unknown_thread(cx: &mut Ctx) -> Verdict {
    let (alice, _, known, _) = setup(cx).await?;
    let t = cx.data.thread_id();
    let p = send_op(cx, &alice, &t, RESOLVE, json!({})).await?;
    cx.net
        .expect_not_accepted(p, "404 THREAD_NOT_FOUND (v1.1 §24.2)")?;
    let c = op_accepted(cx, &alice, &known, RESOLVE, json!({})).await?;
    let what = "the same operation on alice's own thread";
    // A node that checks the operation's authority before the thread's existence may answer
    // CAPABILITY_DENIED (§12.4) as fittingly as THREAD_NOT_FOUND (§24.2 "Thread missing").
    cx.net
        .expect_refused_beside(p, c, what, &["THREAD_NOT_FOUND", "CAPABILITY_DENIED"], "")?;
    let p = cx
        .net
        .get(&format!("/v1/threads/{t}"), &alice.token)
        .await?;
    let c = cx
        .net
        .get(&format!("/v1/threads/{known}"), &alice.token)
        .await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "reading alice's own thread",
        &["THREAD_NOT_FOUND"],
        "",
    )
}

async fn non_owner_without_token(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    // Bob's operations, each refused; then the owner's same operations, accepted.
    let ops = [
        ("thread.update@v1", json!({"subject": "renamed"})),
        (RESOLVE, json!({})),
        (LOCK, json!({})),
    ];
    let mut probes = Vec::new();
    for (intent, params) in &ops {
        let p = send_op(cx, &bob, &t, intent, params.clone()).await?;
        cx.net
            .expect_not_accepted(p, "403 CAPABILITY_DENIED without a token (v1.1 §12.4)")?;
        probes.push(p);
    }
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net
        .expect_eq("thread.state", &json!("active"), &th["state"])?;
    for ((intent, params), p) in ops.into_iter().zip(probes) {
        let c = op_accepted(cx, &alice, &t, intent, params).await?;
        let what = format!("{intent} sent by the thread owner");
        cx.net
            .expect_refused_beside(p, c, &what, &["CAPABILITY_DENIED"], "")?;
    }
    Ok(())
}

const P: &[Need] = &[Need::Provisioning];

/// Thread operation cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.ops.state.resolve",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4", "v1.1 §11.2", "v1.1 §24.2", "v1.0 §9.4"],
        requirement: "thread.resolve@v1 MUST move an active thread to resolved; resolving a resolved thread MUST be refused with STATE_TRANSITION_INVALID.",
        covers: &[
            "R-10.4-02",
            "R-10.4-01",
            "R-10.4-06",
            "R-11.2-04",
            "R-24.2-14",
        ],
        needs: P,
        how: "The owner sends thread.resolve@v1 (201); GET shows state resolved; a second resolve is 409 STATE_TRANSITION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(resolve(cx)),
    },
    Case {
        id: "core.ops.state.archive-from-active",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4", "v1.1 §24.2"],
        requirement: "thread.archive@v1 on an active thread MUST be refused with STATE_TRANSITION_INVALID (archive is resolved → archived only).",
        covers: &["R-10.4-03", "R-10.4-06", "R-24.2-14"],
        needs: P,
        how: "The owner archives an active thread: 409 STATE_TRANSITION_INVALID; the state stays active.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(archive_from_active(cx)),
    },
    Case {
        id: "core.ops.state.archive",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4", "v1.1 §11.2"],
        requirement: "thread.archive@v1 MUST move a resolved thread to archived; reopen from archived MUST be refused.",
        covers: &["R-10.4-03", "R-10.4-05", "R-10.4-06", "R-11.2-05"],
        needs: P,
        how: "Resolve, archive (201 each); state archived; thread.reopen@v1 is 409 STATE_TRANSITION_INVALID (reopen leaves resolved or locked only).",
        interpretation: None,
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(archive(cx)),
    },
    Case {
        id: "core.ops.state.lock-refuses-envelopes",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4", "v1.1 §11.2", "v1.1 §24.2"],
        requirement: "thread.lock@v1 MUST move an active thread to locked, and a locked thread MUST refuse new envelopes with THREAD_LOCKED.",
        covers: &["R-10.4-04", "R-11.2-06", "R-24.2-13"],
        needs: P,
        how: "The owner locks the thread (201, state locked); Bob's reply is 409 THREAD_LOCKED.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-into-locked-thread"),
        run: |cx| Box::pin(lock_refuses_envelopes(cx)),
    },
    Case {
        id: "core.ops.state.lock-from-resolved",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4"],
        requirement: "thread.lock@v1 MUST also lock a resolved thread; resolve from locked MUST be refused.",
        covers: &["R-10.4-04", "R-10.4-06"],
        needs: P,
        how: "Resolve, lock (201 each); state locked; thread.resolve@v1 is 409 STATE_TRANSITION_INVALID or 409 THREAD_LOCKED (both fit).",
        interpretation: None,
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(lock_from_resolved(cx)),
    },
    Case {
        id: "core.ops.state.reopen",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.4", "v1.1 §11.2"],
        requirement: "thread.reopen@v1 MUST move a locked thread back to active (which accepts envelopes again); reopening an active thread MUST be refused.",
        covers: &["R-10.4-05", "R-10.4-06", "R-11.2-07"],
        needs: P,
        how: "Lock, reopen (201 each); state active; Bob's reply is accepted; a second reopen is 409 STATE_TRANSITION_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-invalid-state-transition"),
        run: |cx| Box::pin(reopen(cx)),
    },
    Case {
        id: "core.ops.precondition.thread-state",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.3", "v1.1 §11.7"],
        requirement: "A thread operation whose preconditions.thread_state_in is not met MUST be rejected and change nothing.",
        covers: &["R-11.3-02", "R-11.7-01"],
        needs: P,
        how: "The owner resolves an active thread with preconditions {thread_state_in: [\"resolved\"]}: a 4xx §24.1 error (the spec names no code), state still active; with [\"active\"] the same op is accepted.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-op-preconditions"),
        run: |cx| Box::pin(precondition_state(cx)),
    },
    Case {
        id: "core.ops.precondition.cap-epoch",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.3", "v1.1 §11.7"],
        requirement: "A thread operation whose preconditions.cap_epoch differs from the thread's cap_epoch MUST be rejected.",
        covers: &["R-11.3-03", "R-11.7-01"],
        needs: P,
        how: "The owner resolves with preconditions {cap_epoch: 7} on a thread at cap_epoch 0: a 4xx §24.1 error, state still active; with {cap_epoch: 0} it is accepted.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-op-preconditions"),
        run: |cx| Box::pin(precondition_epoch(cx)),
    },
    Case {
        id: "core.ops.participant.add",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.5", "v1.1 §11.2", "v1.1 §12.4"],
        requirement: "thread.add_participant@v1 MUST make the identity a participant, who may then post; before it, a non-participant without a token MUST be refused.",
        covers: &["R-11.2-01", "R-10.5-01", "R-12.4-01", "R-24.2-04"],
        needs: P,
        how: "Carol's reply to Alice's thread is refused (a §24.1 4xx error: no sentence names the code); Alice adds Carol; Carol reads the thread and is a current participant; Carol's reply is 201.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(add_participant(cx)),
    },
    Case {
        id: "core.ops.participant.remove",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.5", "v1.1 §11.2", "v1.1 §12.4"],
        requirement: "thread.remove_participant@v1 MUST end the participation: the identity is no longer current and may no longer post without a token.",
        covers: &["R-11.2-02", "R-10.5-01"],
        needs: P,
        how: "Alice removes Bob (201); the thread object no longer has Bob as a current participant; Bob's reply is refused (a §24.1 4xx error: no sentence names the code).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(remove_participant(cx)),
    },
    Case {
        id: "core.ops.update.subject-labels",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.1", "v1.1 §11.2"],
        requirement: "thread.update@v1 MUST set the thread's subject and labels.",
        covers: &["R-11.2-03"],
        needs: P,
        how: "The owner sends thread.update@v1 {subject, labels}; Bob's GET /v1/threads/{id} shows that subject and those labels.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-thread-object"),
        run: |cx| Box::pin(update_subject_labels(cx)),
    },
    Case {
        id: "core.ops.unknown-thread",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.1", "v1.1 §24.2"],
        requirement: "A thread operation on a thread that does not exist MUST be refused (THREAD_NOT_FOUND, §24.2 \"Thread missing\").",
        covers: &["R-24.2-09"],
        needs: P,
        how: "Send thread.resolve@v1 for a fresh thread id: 404 THREAD_NOT_FOUND (or 403 CAPABILITY_DENIED from a node that checks authority first); GET /v1/threads/{id} is 404 THREAD_NOT_FOUND.",
        interpretation: None,
        mutant: Mutant::Quirk("bootstrap-thread-from-op"),
        run: |cx| Box::pin(unknown_thread(cx)),
    },
    Case {
        id: "core.ops.non-owner.no-token",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.4", "v1.1 §24.2"],
        requirement: "An operation that modifies shared thread state from a participant who is not the owner and presents no capability token MUST be refused with CAPABILITY_DENIED.",
        covers: &["R-12.4-01", "R-16.1-02", "R-24.2-04"],
        needs: P,
        how: "Bob (participant, not owner) sends resolve, lock and update without a token: each 403 CAPABILITY_DENIED; the thread stays active.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(non_owner_without_token(cx)),
    },
];
