//! Delegation of ownership, fork, merge and link (v1.1 §11.2, §11.4), operation delivery
//! (§11.5), conflict resolution by event order (§11.7) and the broadcast of a spent
//! single-use token (§12.5).

use super::thread_kit::{
    Grant, has_id, id_of, op_ok, op_with_token, participant, reply, send_op, thread_envelopes,
    thread_obj, token,
};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, shapes};
use serde_json::{Value, json};

const FORK: &str = "thread.fork@v1";
const MERGE: &str = "thread.merge@v1";
const LINK: &str = "thread.link@v1";
const UPDATE: &str = "thread.update@v1";

/// Alice owns a thread with Bob; returns (alice, bob, thread, root id).
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, String, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    Ok((alice, bob, t, id_of(&root)))
}

/// The `forks[]` entry of `fork` in thread object `th`.
fn fork_entry<'v>(th: &'v Value, fork: &str) -> Option<&'v Value> {
    th["forks"]
        .as_array()?
        .iter()
        .find(|f| f["fork_id"].as_str() == Some(fork))
}

/// Whether `th.linked_threads[]` holds `{thread_id: other, relation}`.
fn has_link(th: &Value, other: &str, relation: &str) -> bool {
    th["linked_threads"].as_array().is_some_and(|a| {
        a.iter()
            .any(|l| l["thread_id"].as_str() == Some(other) && l["relation"] == relation)
    })
}

/// Whether an event in `evs` names envelope `env`.
fn names_envelope(evs: &[Value], env: &str) -> bool {
    evs.iter().any(|e| shapes::event_envelope(e) == Some(env))
}

/// Alice forks thread `t` at `from` into a fresh thread id; returns the fork id.
async fn fork(cx: &mut Ctx, alice: &Ident, t: &str, from: &str) -> Result<String, Finding> {
    let f = cx.data.thread_id();
    op_ok(
        cx,
        alice,
        t,
        FORK,
        json!({"fork_thread_id": f, "forked_from": from}),
    )
    .await?;
    Ok(f)
}

async fn delegate(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.delegate@v1",
        json!({"identity": bob.address()}),
    )
    .await?;
    let th = thread_obj(cx, &bob, &t).await?;
    cx.net.expect_eq(
        "Bob's participant role after thread.delegate@v1 to Bob",
        &json!("owner"),
        &participant(&th, &bob).map_or(Value::Null, |p| p["role"].clone()),
    )?;
    op_ok(cx, &bob, &t, "thread.resolve@v1", json!({})).await
}

async fn fork_entry_case(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let (i, r) = reply(cx, &bob, &t, Some(&root), &[&alice], "branch here").await?;
    cx.net.expect_created(i)?;
    let from = id_of(&r);
    let nf = cx.data.thread_id();
    let i = send_op(cx, &alice, &t, FORK, json!({"fork_thread_id": nf})).await?;
    cx.net.expect_not_accepted(
        i,
        "a thread.fork@v1 without forked_from refused with a 4xx (v1.1 §11.4)",
    )?;
    // The control: the same fork naming the envelope it branches from.
    let f = cx.data.thread_id();
    let c = send_op(
        cx,
        &alice,
        &t,
        FORK,
        json!({"fork_thread_id": f, "forked_from": from}),
    )
    .await?;
    cx.net
        .expect_refused_beside(i, c, "the same fork with forked_from", &[], "")?;
    let th = thread_obj(cx, &bob, &t).await?;
    let entry = fork_entry(&th, &f).cloned();
    cx.net.expect_that(
        entry.is_some() && f != t,
        format!("parent forks[] holds an entry for the new thread {f}"),
        format!("forks = {}", crate::show::compact(&th["forks"])),
    )?;
    cx.net.expect_eq(
        "forks[].forked_from",
        &json!(from),
        &entry.map_or(Value::Null, |e| e["forked_from"].clone()),
    )
}

async fn merge_marks(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let f = fork(cx, &alice, &t, &root).await?;
    op_ok(cx, &alice, &t, MERGE, json!({"fork_thread_id": f})).await?;
    let th = thread_obj(cx, &bob, &t).await?;
    cx.net.expect_eq(
        "forks[] state of the merged fork",
        &json!("merged"),
        &fork_entry(&th, &f).map_or(Value::Null, |e| e["state"].clone()),
    )?;
    cx.net.expect_that(
        has_link(&th, &f, "merged_from"),
        format!("parent linked_threads[] holds {{thread_id: {f}, relation: merged_from}}"),
        format!(
            "linked_threads = {}",
            crate::show::compact(&th["linked_threads"])
        ),
    )?;
    cx.net.expect_eq(
        "parent thread.state after merge",
        &json!("active"),
        &th["state"],
    )
}

/// §11.4: the fork thread exists after the fork, active, with `linked_threads[]` relation
/// `parent` naming the parent thread.
async fn fork_thread_created(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let f = fork(cx, &alice, &t, &root).await?;
    let th = thread_obj(cx, &bob, &f).await?;
    cx.net.expect_that(
        has_link(&th, &t, "parent"),
        format!("the fork thread's linked_threads[] holds {{thread_id: {t}, relation: parent}}"),
        format!(
            "linked_threads = {}",
            crate::show::compact(&th["linked_threads"])
        ),
    )?;
    cx.net
        .expect_eq("fork thread.state", &json!("active"), &th["state"])
}

/// §11.4: merge marks the fork *thread* merged, not only the parent's `forks[]` entry.
async fn fork_thread_merged(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let f = fork(cx, &alice, &t, &root).await?;
    op_ok(cx, &alice, &t, MERGE, json!({"fork_thread_id": f})).await?;
    let th = thread_obj(cx, &bob, &f).await?;
    cx.net.expect_eq(
        "fork thread.state after merge",
        &json!("merged"),
        &th["state"],
    )
}

async fn merge_moves_nothing(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, root) = setup(cx).await?;
    let f = cx.data.thread_id();
    let e = cx
        .data
        .signed_message(&alice, &f, None, &[&bob], "fork discussion");
    let i = cx.net.send(&alice, &e).await?;
    cx.net.expect_created(i)?;
    let fork_root = id_of(&e);
    op_ok(
        cx,
        &alice,
        &t,
        FORK,
        json!({"fork_thread_id": f, "forked_from": root}),
    )
    .await?;
    op_ok(cx, &alice, &t, MERGE, json!({"fork_thread_id": f})).await?;
    let in_fork = thread_envelopes(cx, &bob, &f).await?;
    let stays = in_fork
        .iter()
        .any(|x| x["id"] == fork_root.as_str() && x["thread_id"] == f.as_str());
    cx.net.expect_that(
        stays,
        format!("{fork_root} still listed in the fork {f} with thread_id {f}"),
        format!(
            "fork envelopes = {}",
            crate::show::compact(&Value::Array(in_fork.clone()))
        ),
    )?;
    let in_parent = thread_envelopes(cx, &bob, &t).await?;
    cx.net.expect_that(
        !has_id(&in_parent, &fork_root),
        format!("{fork_root} not listed in the parent {t}"),
        format!(
            "parent envelopes = {}",
            crate::show::compact(&Value::Array(in_parent))
        ),
    )
}

async fn link(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    let (other, _) = cx.start_thread(&alice, &[&bob]).await?;
    op_ok(cx, &alice, &t, "thread.resolve@v1", json!({})).await?;
    op_ok(
        cx,
        &alice,
        &t,
        LINK,
        json!({"thread_id": other, "relation": "blocks"}),
    )
    .await?;
    let th = thread_obj(cx, &bob, &t).await?;
    cx.net.expect_that(
        has_link(&th, &other, "blocks"),
        format!("linked_threads[] holds {{thread_id: {other}, relation: blocks}}"),
        format!(
            "linked_threads = {}",
            crate::show::compact(&th["linked_threads"])
        ),
    )?;
    cx.net.expect_eq(
        "thread.state after thread.link@v1 (unchanged)",
        &json!("resolved"),
        &th["state"],
    )
}

async fn observers(cx: &mut Ctx) -> Verdict {
    let (alice, _, t, _) = setup(cx).await?;
    let carol = cx.identity("carol", "human").await?;
    op_ok(
        cx,
        &alice,
        &t,
        "thread.add_participant@v1",
        json!({"identity": carol.address(), "role": "observer"}),
    )
    .await?;
    let mut e = cx
        .data
        .op(&alice, &t, UPDATE, json!({"subject": "for observers too"}));
    alice.sign(&mut e);
    let i = cx.net.send(&alice, &e).await?;
    cx.net.expect_created(i)?;
    let op = id_of(&e);
    let evs = cx.net.events(&carol, None).await?;
    cx.net.expect_that(
        names_envelope(&evs, &op),
        format!("observer Carol's /v1/events names the operation {op} (v1.1 §11.5)"),
        format!(
            "events = {}",
            crate::show::compact(&Value::Array(evs.clone()))
        ),
    )
}

async fn removed(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    let mut e = cx.data.op(
        &alice,
        &t,
        "thread.remove_participant@v1",
        json!({"identity": bob.address()}),
    );
    alice.sign(&mut e);
    let i = cx.net.send(&alice, &e).await?;
    cx.net.expect_created(i)?;
    let op = id_of(&e);
    let evs = cx.net.events(&bob, None).await?;
    cx.net.expect_that(
        names_envelope(&evs, &op),
        format!("removed Bob's /v1/events names the removal {op}"),
        format!(
            "events = {}",
            crate::show::compact(&Value::Array(evs.clone()))
        ),
    )
}

async fn last_wins(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    for s in ["first", "second"] {
        op_ok(cx, &alice, &t, UPDATE, json!({"subject": s})).await?;
    }
    let mut e = cx
        .data
        .op(&alice, &t, UPDATE, json!({"subject": "invalid"}));
    e["content"]["structured"]["preconditions"] = json!({"thread_state_in": ["locked"]});
    alice.sign(&mut e);
    let i = cx.net.send(&alice, &e).await?;
    cx.net.expect_not_accepted(
        i,
        "an update with an unmet precondition refused (v1.1 §11.7)",
    )?;
    let th = thread_obj(cx, &bob, &t).await?;
    cx.net.expect_eq(
        "thread.subject (last valid update by event_seq)",
        &json!("second"),
        &th["subject"],
    )?;
    // The control: the same update with a precondition that holds.
    let mut ok = cx.data.op(&alice, &t, UPDATE, json!({"subject": "third"}));
    ok["content"]["structured"]["preconditions"] = json!({"thread_state_in": ["active"]});
    alice.sign(&mut ok);
    let c = cx.net.send(&alice, &ok).await?;
    cx.net.expect_refused_beside(
        i,
        c,
        "the same update with a precondition that holds",
        &[],
        "",
    )
}

async fn spent_event(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, _) = setup(cx).await?;
    let g = Grant {
        single_use: true,
        ..Grant::new(&t, &["label"])
    };
    let tok = token(cx, &alice, &bob, &g);
    let cap = tok["id"].as_str().unwrap_or_default().to_owned();
    let i = op_with_token(cx, &bob, &t, UPDATE, json!({"subject": "once"}), &tok).await?;
    cx.net.expect_created(i)?;
    let evs = cx.net.events(&bob, None).await?;
    let seen = evs.iter().any(|e| {
        e["type"] == "capability.spent"
            && (shapes::event_payload(e)["capability_id"] == cap.as_str()
                || e["capability_id"] == cap.as_str())
    });
    cx.net.expect_that(
        seen,
        format!("a capability.spent event for {cap} in the holder's /v1/events (v1.1 §12.5)"),
        format!(
            "events = {}",
            crate::show::compact(&Value::Array(evs.clone()))
        ),
    )
}

const P: &[Need] = &[Need::Provisioning];
const PE: &[Need] = &[Need::Provisioning, Need::Events];

/// Fork, merge, link, delegation, delivery, conflict and spent-token cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.ops.delegate.ownership",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.2", "v1.1 §12.4"],
        requirement: "thread.delegate@v1 MUST hand thread ownership to the named identity.",
        covers: &["R-11.2-08"],
        needs: P,
        how: "Alice delegates her thread to Bob (201); Bob's participant role is owner; Bob resolves the thread without a token (201).",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-thread-delegate"),
        run: |cx| Box::pin(delegate(cx)),
    },
    Case {
        id: "core.ops.fork.entry",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.1", "v1.1 §11.2", "v1.1 §11.4"],
        requirement: "thread.fork@v1 MUST name a new thread id, reference forked_from, and add a forks[] entry to the parent.",
        covers: &["R-11.2-09", "R-11.4-01", "R-11.4-02", "R-11.4-04"],
        needs: P,
        how: "A fork op without forked_from is refused (4xx); Alice forks at Bob's reply into a fresh thread id (201); the parent's forks[] holds {fork_id: new id, forked_from: the reply}.",
        interpretation: None,
        mutant: Mutant::Quirk("fork-without-entry"),
        run: |cx| Box::pin(fork_entry_case(cx)),
    },
    Case {
        id: "core.ops.merge.marks-merged",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.1", "v1.1 §11.2", "v1.1 §11.4"],
        requirement: "thread.merge@v1 MUST mark the fork merged and add a merged_from link in the parent.",
        covers: &["R-11.2-10", "R-11.4-06", "R-11.4-07"],
        needs: P,
        how: "Fork, then merge (201 each); the parent's forks[] entry has state merged, linked_threads[] holds {thread_id: fork, relation: merged_from}, and the parent stays active.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-thread-merge"),
        run: |cx| Box::pin(merge_marks(cx)),
    },
    Case {
        id: "core.ops.fork.thread-created",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.4", "v1.1 §10.1"],
        requirement: "thread.fork@v1 MUST create the fork thread, whose linked_threads[] holds a relation `parent` to the thread it was forked from.",
        covers: &["R-11.4-03"],
        needs: P,
        how: "Alice forks her thread (with Bob) into a fresh thread id (201); Bob GETs the fork thread: 200, state active, linked_threads[] holds {thread_id: parent, relation: parent}.",
        interpretation: None,
        mutant: Mutant::Quirk("fork-without-parent-link"),
        run: |cx| Box::pin(fork_thread_created(cx)),
    },
    Case {
        id: "core.ops.merge.fork-thread-merged",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.4", "v1.1 §10.4"],
        requirement: "thread.merge@v1 MUST mark the fork thread's own state `merged`.",
        covers: &["R-11.4-06"],
        needs: P,
        how: "Fork into a fresh thread id, then merge it (201 each); Bob GETs the fork thread: state merged.",
        interpretation: None,
        mutant: Mutant::Quirk("merge-leaves-fork-open"),
        run: |cx| Box::pin(fork_thread_merged(cx)),
    },
    Case {
        id: "core.ops.merge.moves-nothing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.4"],
        requirement: "thread.merge@v1 MUST NOT move envelopes.",
        covers: &["R-11.4-05"],
        needs: P,
        how: "Alice starts a fork thread with a root, forks and merges it into her thread; the fork still lists its root (thread_id = fork) and the parent does not.",
        interpretation: None,
        mutant: Mutant::Quirk("merge-moves-envelopes"),
        run: |cx| Box::pin(merge_moves_nothing(cx)),
    },
    Case {
        id: "core.ops.link.entry",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.1", "v1.1 §11.2", "v1.1 §11.4"],
        requirement: "thread.link@v1 MUST add a linked_threads[] entry and MUST NOT change thread state.",
        covers: &["R-11.2-11", "R-11.4-09", "R-11.4-10"],
        needs: P,
        how: "Alice resolves her thread, then links another thread with relation blocks (201); linked_threads[] holds {thread_id, relation: blocks} and the state is still resolved.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-thread-link"),
        run: |cx| Box::pin(link(cx)),
    },
    Case {
        id: "core.ops.delivery.observers",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.5", "v1.1 §16.8"],
        requirement: "Thread operations MUST be delivered to all current participants, including observers.",
        covers: &["R-11.5-01"],
        needs: PE,
        how: "Alice adds Carol as an observer and sends thread.update@v1; Carol's GET /v1/events holds an event naming that operation.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-observer-delivery"),
        run: |cx| Box::pin(observers(cx)),
    },
    Case {
        id: "core.ops.delivery.removed",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §11.5"],
        requirement: "A removal op SHOULD still be delivered to the removed participant.",
        covers: &["R-11.5-02"],
        needs: PE,
        how: "Alice removes Bob; Bob's GET /v1/events holds an event naming the removal op.",
        interpretation: None,
        mutant: Mutant::NotApplicable("SHOULD; the reference node delivers removals"),
        run: |cx| Box::pin(removed(cx)),
    },
    Case {
        id: "core.ops.conflict.last-wins",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.7"],
        requirement: "Of conflicting operations, the last valid one by event_seq MUST win.",
        covers: &["R-11.7-02"],
        needs: P,
        how: "Alice sets the subject to first, then second, then sends a third update with an unmet precondition (refused); Bob sees subject second.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-thread-object"),
        run: |cx| Box::pin(last_wins(cx)),
    },
    Case {
        id: "core.capability.spent.event",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.5", "v1.1 §17.3"],
        requirement: "A node MUST broadcast that a single-use token was spent.",
        covers: &["R-12.5-02"],
        needs: PE,
        how: "Bob uses a single-use token from Alice (201); Bob's GET /v1/events holds a capability.spent event naming the token id (the node cannot sign a capability.spent@v1 thread_op for a user, so the event is the broadcast).",
        interpretation: None,
        mutant: Mutant::Quirk("omit-capability-spent-event"),
        run: |cx| Box::pin(spent_event(cx)),
    },
];
