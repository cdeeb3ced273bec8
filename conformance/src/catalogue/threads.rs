//! Threads and the envelope DAG (v1.1 §10.1–§10.3, §10.5, §10.7, §11.6, §16.2).

use super::envelopes::stored;
use super::thread_kit::{
    expect_refused_without, id_of, is_current, participant, reply, senders_for, thread_envelopes,
    thread_obj,
};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident, shapes, skip};
use loom_protocol::Timestamp;
use serde_json::{Value, json};

async fn object_after_creation(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net.expect_eq("thread.id", &json!(t), &th["id"])?;
    cx.net
        .expect_eq("thread.state", &json!("active"), &th["state"])?;
    cx.net.expect_eq(
        "thread.root_envelope_id",
        &root["id"],
        &th["root_envelope_id"],
    )?;
    cx.net
        .expect_eq("thread.cap_epoch (v1.1 §12.3)", &json!(0), &th["cap_epoch"])?;
    for m in ["created_at", "updated_at"] {
        cx.net.expect_that(
            th[m].as_str().is_some_and(|s| Timestamp::parse(s).is_ok()),
            format!("thread.{m} is an ISO 8601 time (v1.1 §10.1)"),
            format!("thread.{m} = {}", th[m]),
        )?;
    }
    cx.net.expect_that(
        th["labels"].is_array(),
        "thread.labels is an array (v1.1 §10.1)",
        format!("thread.labels = {}", crate::show::compact(&th["labels"])),
    )?;
    let owner = participant(&th, &alice).cloned().unwrap_or(Value::Null);
    cx.net.expect_eq(
        "role of the root's sender in thread.participants",
        &json!("owner"),
        &owner["role"],
    )?;
    cx.net.expect_that(
        is_current(&th, &alice),
        "the owner is a current participant (left_at null)",
        format!(
            "participants = {}",
            crate::show::compact(&th["participants"])
        ),
    )
}

async fn non_participant_sees_nothing(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let mallory = cx.identity("mallory", "human").await?;
    let t = cx.data.thread_id();
    let secret = format!("secret-{}", &t[4..]);
    let root = cx.data.signed_message(&alice, &t, None, &[&bob], &secret);
    let i = cx.net.send(&alice, &root).await?;
    cx.net.expect_created(i)?;
    // Participants list it.
    for who in [&alice, &bob] {
        let i = cx.net.get("/v1/threads?limit=100", &who.token).await?;
        let body = cx.net.ok_body(i)?;
        let listed = shapes::list(&body, &["threads"])
            .is_some_and(|a| a.iter().any(|x| x["id"].as_str() == Some(&t)));
        cx.net.expect_that(
            listed,
            format!("GET /v1/threads as participant {} lists {t}", who.address()),
            format!("the thread is not listed: {}", crate::show::compact(&body)),
        )?;
    }
    let i = cx.net.get("/v1/threads?limit=100", &mallory.token).await?;
    let body = cx.net.ok_body(i)?;
    cx.net.expect_that(
        !cx.net.text(i).contains(&t),
        "GET /v1/threads as a non-participant does not list the thread",
        format!("the listing mentions {t}: {}", crate::show::compact(&body)),
    )?;
    for (path, secret, what) in [
        (
            format!("/v1/threads/{t}"),
            id_of(&root),
            "the thread object",
        ),
        (
            format!("/v1/threads/{t}/envelopes"),
            secret,
            "the thread's envelopes",
        ),
    ] {
        let i = cx.net.get(&path, &mallory.token).await?;
        expect_refused_without(cx, i, &secret, what)?;
        let c = cx.net.get(&path, &bob.token).await?;
        cx.net
            .expect_refused_beside(i, c, "the same read by a participant", &[], "")?;
    }
    Ok(())
}

async fn participants_not_inferred(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let (i, _) = reply(cx, &alice, &t, root["id"].as_str(), &[&bob, &carol], "fyi").await?;
    cx.net.expect_created(i)?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net.expect_that(
        !is_current(&th, &carol),
        "a recipient of a non-root envelope is not made a participant (v1.1 §10.5)",
        format!(
            "participants = {}",
            crate::show::compact(&th["participants"])
        ),
    )?;
    let i = cx
        .net
        .get(&format!("/v1/threads/{t}"), &carol.token)
        .await?;
    expect_refused_without(cx, i, &id_of(&root), "the thread object")?;
    let c = cx.net.get(&format!("/v1/threads/{t}"), &bob.token).await?;
    cx.net
        .expect_refused_beside(i, c, "the same read by a participant", &[], "")
}

/// Sends the DAG root R (t−60 s), B (t−20 s, child of R), B1 (t−10 s, child of B),
/// A and C (both t−40 s, children of R), in that order; returns them as sent.
async fn build_dag(cx: &mut Ctx) -> Result<(Ident, String, Vec<Value>), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    // One reading of the clock: A and C must carry the same created_at (the case is about
    // the id tie-break), and a clock read per envelope could split them by a millisecond.
    let now = cx.data.now_timestamp();
    let at = |s: i64| now.plus_ms(-s * 1000).to_rfc3339();
    let mut sent: Vec<Value> = Vec::new();
    let plan: [(&str, Option<usize>, i64); 5] = [
        ("R", None, 60),
        ("B", Some(0), 20),
        ("B1", Some(1), 10),
        ("A", Some(0), 40),
        ("C", Some(0), 40),
    ];
    for (name, parent, ago) in plan {
        let parent_id = parent.map(|p| id_of(&sent[p]));
        let mut e = cx
            .data
            .message(&alice, &t, parent_id.as_deref(), &[&bob], name);
        e["created_at"] = at(ago).into();
        alice.sign(&mut e);
        let i = cx.net.send(&alice, &e).await?;
        cx.net.expect_created(i)?;
        sent.push(e);
    }
    Ok((alice, t, sent))
}

async fn envelopes_as_signed(cx: &mut Ctx) -> Verdict {
    let (alice, t, sent) = build_dag(cx).await?;
    let got = thread_envelopes(cx, &alice, &t).await?;
    for e in &sent {
        let id = id_of(e);
        let Some(g) = got.iter().find(|g| g["id"].as_str() == Some(&id)) else {
            return cx.net.expect_that(
                false,
                format!("GET /v1/threads/{{id}}/envelopes returns {id}"),
                "it is missing",
            );
        };
        for f in ["parent_id", "created_at", "signature"] {
            cx.net
                .expect_eq(&format!("{id}.{f} (as signed)"), &e[f], &g[f])?;
        }
    }
    Ok(())
}

async fn rendering_order(cx: &mut Ctx) -> Verdict {
    let (alice, t, sent) = build_dag(cx).await?;
    let got = thread_envelopes(cx, &alice, &t).await?;
    let pos = |id: &str| got.iter().position(|g| g["id"].as_str() == Some(id));
    let order: Vec<String> = got.iter().map(id_of).collect();
    for e in &sent {
        let id = id_of(e);
        let Some(me) = pos(&id) else {
            return cx
                .net
                .expect_that(false, format!("{id} is returned"), "missing");
        };
        if let Some(p) = e["parent_id"].as_str() {
            cx.net.expect_that(
                pos(p).is_some_and(|pp| pp < me),
                "every parent before its children (v1.1 §10.3 topological order)",
                format!("order = {order:?}"),
            )?;
        }
    }
    // Siblings of R: A and C (t−40 s, by id), then B (t−20 s).
    let (a, b, c) = (id_of(&sent[3]), id_of(&sent[1]), id_of(&sent[4]));
    let (first, second) = if a < c { (&a, &c) } else { (&c, &a) };
    let (p1, p2, p3) = (pos(first), pos(second), pos(&b));
    cx.net.expect_that(
        p1 < p2 && p2 < p3,
        format!("siblings by created_at then id: {first}, {second}, {b} (v1.1 §10.3)"),
        format!("order = {order:?}"),
    )
}

async fn pending_parent(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    let missing = cx.data.envelope_id();
    let (i, e) = reply(cx, &bob, &t, Some(&missing), &[&alice], "out of order").await?;
    cx.net.created_body(i)?;
    let got = thread_envelopes(cx, &alice, &t).await?;
    let listed = got
        .iter()
        .find(|g| g["id"].as_str() == Some(&id_of(&e)))
        .cloned();
    cx.net.expect_that(
        listed.is_some(),
        "the orphan stays in the thread (v1.1 §10.2 orphan handling)",
        "it is not listed",
    )?;
    cx.net.expect_eq(
        "meta.pending_parent of the listed envelope whose parent is missing (v1.1 §10.2)",
        &json!(true),
        &listed.map_or(Value::Null, |l| l["meta"]["pending_parent"].clone()),
    )
}

async fn self_parent(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let e = cx.data.message(&alice, &t, None, &[&bob], "my own parent");
    let with_parent = |parent: &Value| {
        let mut x = e.clone();
        x["parent_id"] = parent.clone();
        alice.sign(&mut x);
        x
    };
    let (probe, control) = (with_parent(&e["id"]), with_parent(&root["id"]));
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same envelope replying to the thread's root",
            &["ENVELOPE_INVALID"],
            "",
        )
        .await
}

/// §10.2: one parent. A reply naming two parents in a `parent_id` list is refused.
async fn single_parent(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let (i, second) = reply(cx, &alice, &t, root["id"].as_str(), &[&bob], "second").await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step("a second reply to the root"))?;
    let e = cx.data.message(&alice, &t, None, &[&bob], "two parents");
    let with_parent = |parent: Value| {
        let mut x = e.clone();
        x["parent_id"] = parent;
        alice.sign(&mut x);
        x
    };
    let probe = with_parent(json!([root["id"], second["id"]]));
    let control = with_parent(second["id"].clone());
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same envelope with one parent",
            &["ENVELOPE_INVALID"],
            "",
        )
        .await
}

/// §11.6 SHOULD: an envelope created on this node carries `meta.origin_event_seq`, which
/// for a local envelope is its own `event_seq`.
async fn origin_event_seq(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let (i, _) = reply(cx, &alice, &t, root["id"].as_str(), &[&bob], "local").await?;
    let body = stored(&cx.net.created_body(i)?);
    let origin = body.pointer("/meta/origin_event_seq").cloned();
    cx.net.expect_that(
        origin.as_ref().is_some_and(Value::is_u64),
        "meta.origin_event_seq (an integer) on a locally created envelope (v1.1 §11.6)",
        format!("meta = {}", crate::show::compact(&body["meta"])),
    )?;
    cx.net.expect_eq(
        "meta.origin_event_seq of a local envelope (its own event_seq)",
        &body["meta"]["event_seq"],
        &origin.unwrap_or(Value::Null),
    )
}

async fn cycle(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, root) = cx.start_thread(&alice, &[&bob]).await?;
    let a_id = cx.data.envelope_id();
    let (i, b) = reply(cx, &alice, &t, Some(&a_id), &[&bob], "child of a").await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "a reply whose parent is not there yet (pending, v1.1 §10.7)",
        ))?;
    let mut base = cx.data.message(&alice, &t, None, &[&bob], "a");
    base["id"] = a_id.into();
    let a = |parent: &Value| {
        let mut a = base.clone();
        a["parent_id"] = parent.clone();
        alice.sign(&mut a);
        a
    };
    // The control: a, same id, under the root instead of under its own child.
    let (probe, control) = (a(&b["id"]), a(&root["id"]));
    cx.net
        .send_probe_and_control(
            &alice,
            &probe,
            &control,
            "the same envelope under the thread's root",
            &["ENVELOPE_INVALID"],
            "",
        )
        .await
}

async fn pending_parents_limit(cx: &mut Ctx) -> Verdict {
    let limit = cx
        .target
        .capability("/limits/max_pending_parents")
        .and_then(Value::as_u64);
    let Some(limit) = limit.filter(|l| (1..=1000).contains(l)) else {
        return skip(format!(
            "limits.max_pending_parents = {} in /v1/protocol/capabilities: not a limit the harness can reach quickly (1–1000)",
            limit.map_or("absent".into(), |l| l.to_string())
        ));
    };
    let all = senders_for(cx, limit + 2, &format!("max_pending_parents = {limit}")).await?;
    let alice = &all[0];
    let to: Vec<&Ident> = all[1..].iter().collect();
    let t = cx.data.thread_id();
    let root = cx.data.signed_message(alice, &t, None, &to, "root");
    let i = cx.net.send(alice, &root).await?;
    cx.net.expect_created(i)?;
    let mut control = None;
    for n in 0..limit {
        let who = &all[usize::try_from(n).unwrap_or(0) % all.len()];
        let missing = cx.data.envelope_id();
        let (i, _) = reply(cx, who, &t, Some(&missing), &[alice], "orphan").await?;
        cx.net
            .expect_created(i)
            .map_err(crate::finding::setup_step("filling up to the limit"))?;
        control = Some(i);
    }
    let missing = cx.data.envelope_id();
    let last = &all[usize::try_from(limit).unwrap_or(0) % all.len()];
    let (i, _) = reply(cx, last, &t, Some(&missing), &[alice], "one too many").await?;
    match control {
        // The control: the last orphan within the limit.
        Some(c) => cx.net.expect_refused_beside(
            i,
            c,
            "the previous orphan, within the limit",
            &["ENVELOPE_INVALID"],
            "",
        ),
        None => cx.net.expect_code(i, "ENVELOPE_INVALID"),
    }
}

async fn event_seq_increases(cx: &mut Ctx) -> Verdict {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let t = cx.data.thread_id();
    let root = cx.data.signed_message(&alice, &t, None, &[&bob], "root");
    let mut order = vec![id_of(&root)];
    let i = cx.net.send(&alice, &root).await?;
    cx.net.expect_created(i)?;
    let (i, r1) = reply(cx, &bob, &t, root["id"].as_str(), &[&alice], "one").await?;
    cx.net.expect_created(i)?;
    order.push(id_of(&r1));
    let mut op = cx
        .data
        .op(&alice, &t, "thread.update@v1", json!({"subject": "seq"}));
    alice.sign(&mut op);
    let i = cx.net.send(&alice, &op).await?;
    cx.net.expect_created(i)?;
    order.push(id_of(&op));
    let (i, r2) = reply(cx, &alice, &t, r1["id"].as_str(), &[&bob], "two").await?;
    cx.net.expect_created(i)?;
    order.push(id_of(&r2));
    // The stored envelopes, as the thread lists them.
    let listed = thread_envelopes(cx, &alice, &t).await?;
    let seqs: Vec<Value> = order
        .iter()
        .map(|id| {
            listed
                .iter()
                .find(|e| e["id"].as_str() == Some(id))
                .map_or(Value::Null, |e| e["meta"]["event_seq"].clone())
        })
        .collect();
    let nums: Vec<Option<u64>> = seqs.iter().map(Value::as_u64).collect();
    cx.net.expect_that(
        nums.iter().all(Option::is_some) && nums.windows(2).all(|w| w[0] < w[1]),
        "meta.event_seq present and strictly increasing in acceptance order (v1.1 §11.6)",
        format!("event_seq of the four accepted envelopes, in sending order = {seqs:?}"),
    )
}

const P: &[Need] = &[Need::Provisioning];

/// Thread and DAG cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.thread.object.after-creation",
        level: 1,
        strength: Strength::Must,
        spec: &[
            "v1.1 §10.1",
            "v1.1 §10.5",
            "v1.1 §12.3",
            "v1.1 §16.2",
            "v1.0 §9.1",
        ],
        requirement: "A thread created by a root envelope MUST be served as the §10.1 object: its id, state active, root_envelope_id, times, labels, cap_epoch 0 and the root's sender as owner.",
        covers: &["R-12.3-01"],
        needs: P,
        how: "Alice sends a root to Bob; GET /v1/threads/{id} as Alice: id, state \"active\", root_envelope_id = the root, created_at/updated_at ISO 8601, labels array, cap_epoch 0, Alice listed with role \"owner\" and left_at null.",
        interpretation: None,
        mutant: Mutant::Quirk("incomplete-thread-object"),
        run: |cx| Box::pin(object_after_creation(cx)),
    },
    Case {
        id: "core.thread.access.non-participant",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §8.3", "v1.1 §10.5", "v1.1 §16.2", "v1.1 §24.1"],
        requirement: "Threads MUST be listed for and readable by their participants only; a non-participant MUST get an error that reveals nothing of the thread.",
        covers: &["R-8.3-04", "R-8.3-08"],
        needs: P,
        how: "Alice starts a thread with Bob; both list it in GET /v1/threads; Mallory's listing does not contain it, and Mallory's GET /v1/threads/{id} and /envelopes are 4xx §24.1 errors without the root's id or text (the spec does not say which code: THREAD_NOT_FOUND and AUDIENCE_DENIED both pass).",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(non_participant_sees_nothing(cx)),
    },
    Case {
        id: "core.thread.participants.not-inferred",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.5"],
        requirement: "Nodes MUST NOT infer thread participants from the recipients of a non-root envelope.",
        covers: &["R-10.5-02"],
        needs: P,
        how: "Alice starts a thread with Bob, then sends a reply addressed to Bob and Carol; Carol is not a current participant in the thread object, and Carol's GET /v1/threads/{id} is a 4xx error without the thread.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-audience"),
        run: |cx| Box::pin(participants_not_inferred(cx)),
    },
    Case {
        id: "core.dag.envelopes.as-signed",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.3", "v1.1 §16.2", "v1.0 §9.3"],
        requirement: "GET /v1/threads/{id}/envelopes MUST return every envelope with parent_id, created_at and signature exactly as signed, so the §10.3 order is computable.",
        covers: &["R-10.3-04"],
        needs: P,
        how: "Send a five-envelope DAG with chosen created_at values; list the thread's envelopes; each must be there with parent_id, created_at and signature equal to what was sent.",
        interpretation: None,
        mutant: Mutant::Quirk("restamp-created-at"),
        run: |cx| Box::pin(envelopes_as_signed(cx)),
    },
    Case {
        id: "core.dag.order.rendering",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §10.3", "v1.1 §16.2"],
        requirement: "GET /v1/threads/{id}/envelopes SHOULD return envelopes in the §10.3 order: parents before children, siblings by created_at then id.",
        covers: &["R-10.3-04"],
        needs: P,
        how: "Send R, B (child of R, t−20 s), B1 (child of B), A and C (children of R, both t−40 s), in that order; the listing must put every parent before its children and the siblings as A/C (by id), then B.",
        interpretation: Some(
            "§10.3 binds clients' rendering (\"Clients MUST render thread envelopes using stable ordering\"); a node that returns another order leaves the client to sort, so returning the §10.3 order is a recommendation.",
        ),
        mutant: Mutant::NotApplicable(
            "§10.3 binds clients' rendering; a node returning another order is not broken, so no quirk is needed",
        ),
        run: |cx| Box::pin(rendering_order(cx)),
    },
    Case {
        id: "core.dag.pending-parent.accepted",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.2", "v1.0 §9.2"],
        requirement: "A missing parent MUST NOT cause rejection; the envelope is marked meta.pending_parent=true and stays valid.",
        covers: &["R-10.2-03", "R-10.2-04", "R-10.2-05"],
        needs: P,
        how: "Bob replies to an envelope id that was never sent; expect it accepted, listed in the thread, with meta.pending_parent = true.",
        interpretation: None,
        mutant: Mutant::Quirk("reject-missing-parent"),
        run: |cx| Box::pin(pending_parent(cx)),
    },
    Case {
        id: "core.dag.cycle.self-parent",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.2", "v1.1 §24.2"],
        requirement: "An envelope that is its own parent MUST be rejected with ENVELOPE_INVALID.",
        covers: &["R-10.2-02", "R-24.2-01"],
        needs: P,
        how: "Send a signed reply whose parent_id equals its id; expect 400 ENVELOPE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-dag-cycles"),
        run: |cx| Box::pin(self_parent(cx)),
    },
    Case {
        id: "core.dag.single-parent",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.2", "v1.1 §8.1"],
        requirement: "parent_id MUST reference at most one envelope: a reply naming a list of parents is refused.",
        covers: &["R-10.2-01"],
        needs: P,
        how: "Alice starts a thread and replies; a signed envelope with parent_id = [root, reply] is refused with 400 ENVELOPE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("accept-parent-id-array"),
        run: |cx| Box::pin(single_parent(cx)),
    },
    Case {
        id: "core.dag.event-seq.origin",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §11.6"],
        requirement: "Nodes SHOULD set meta.origin_event_seq on envelopes created locally.",
        covers: &["R-11.6-03"],
        needs: P,
        how: "Reply in a fresh thread; the 201 body's meta.origin_event_seq is an integer equal to its meta.event_seq.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-origin-event-seq"),
        run: |cx| Box::pin(origin_event_seq(cx)),
    },
    Case {
        id: "core.dag.cycle.two-envelopes",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.2", "v1.1 §24.2"],
        requirement: "An envelope that would close a cycle in the thread DAG MUST be rejected with ENVELOPE_INVALID.",
        covers: &["R-10.2-02", "R-24.2-01"],
        needs: P,
        how: "Send B with parent A (A not yet sent; accepted as pending), then A with parent B; expect 400 ENVELOPE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("allow-dag-cycles"),
        run: |cx| Box::pin(cycle(cx)),
    },
    Case {
        id: "core.dag.limit.pending-parents",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §10.7"],
        requirement: "Past limits.max_pending_parents unresolved parents in a thread, new envelopes with unresolved parents MUST be rejected with ENVELOPE_INVALID.",
        covers: &["R-10.7-05", "R-10.7-01", "R-10.7-04"],
        needs: P,
        how: "Read limits.max_pending_parents (skip above 1000) and the per-identity envelope rate limit; send that many replies to distinct missing parents from enough participants, all accepted; one more is 400 ENVELOPE_INVALID.",
        interpretation: None,
        mutant: Mutant::Quirk("ignore-thread-limits"),
        run: |cx| Box::pin(pending_parents_limit(cx)),
    },
    Case {
        id: "core.dag.event-seq.increasing",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §11.6", "v1.1 §16.1"],
        requirement: "meta.event_seq MUST be assigned to every accepted envelope and increase monotonically per thread.",
        covers: &["R-11.6-02", "R-11.6-01", "R-16.1-03"],
        needs: P,
        how: "Send a root, a reply, a thread.update operation and another reply; in the thread's listing the meta.event_seq of the four must be strictly increasing in sending order.",
        interpretation: None,
        mutant: Mutant::Quirk("omit-event-seq"),
        run: |cx| Box::pin(event_seq_increases(cx)),
    },
];
