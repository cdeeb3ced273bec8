//! Workflows (v1.1 §19; v1.0 §18): a `workflow` envelope defines a run; the update envelopes
//! move it step by step, each checked against the definition and its sender; timeouts on the
//! injected clock; quarantined threads hold their runs (§18.5); the dedicated view.

use crate::support::{Ident, TestNode};
use serde_json::{Value, json};

fn definition(id: &str, manager: &Ident, bot: &Ident, owner: &Ident) -> Value {
    json!({
        "workflow_id": id, "name": "Expense approval",
        "steps": [
            {"id": "approve", "action": "approval.request", "to": manager.address,
             "on_success": "pay", "on_failure": "notify_rejected", "timeout": "48h"},
            {"id": "pay", "action": "task.execute", "to": bot.address,
             "condition": {"field": "approve.result.decision", "operator": "eq", "value": "approved"},
             "on_success": "notify_paid", "on_condition_unmet": "notify_rejected"},
            {"id": "notify_paid", "action": "notification", "to": [owner.address]},
            {"id": "notify_rejected", "action": "notification", "to": [owner.address]}
        ]
    })
}

fn workflow_envelope(
    n: &TestNode,
    from: &Ident,
    thread: &str,
    to: &[&Ident],
    params: Value,
) -> Value {
    let mut e = from.op(n, thread, "workflow.execute@v1", params);
    e["type"] = "workflow".into();
    e["to"] = to
        .iter()
        .map(|i| json!({"identity": i.address, "role": "primary"}))
        .collect();
    e["content"]["human"] = json!({"text": "Expense approval", "format": "plaintext"});
    e
}

fn update(
    n: &TestNode,
    from: &Ident,
    thread: &str,
    to: &[&Ident],
    intent: &str,
    params: Value,
) -> Value {
    let mut e = from.message(n, thread, None, to, "update");
    e["content"]["structured"] = json!({"intent": intent, "parameters": params});
    e
}

async fn view(n: &TestNode, who: &Ident, id: &str) -> Value {
    n.get(&format!("/v1/workflows/{id}"), &who.token)
        .await
        .expect(200)
        .body
}

fn states(v: &Value) -> Vec<(String, String)> {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_run_moves_only_by_allowed_updates() {
    let n = TestNode::new();
    let al = n.register("al", "human", 1).await;
    let mgr = n.register("manager", "human", 2).await;
    let bot = n.register("bot", "human", 3).await;
    let eve = n.register("eve", "human", 4).await;
    let t = n.thread_id();
    let everyone = [&mgr, &bot];
    al.send(
        &n,
        workflow_envelope(&n, &al, &t, &everyone, definition("wf_1", &mgr, &bot, &al)),
    )
    .await
    .expect(201);
    let v = view(&n, &mgr, "wf_1").await;
    assert_eq!(v["status"], "running");
    assert_eq!(v["active_step"], "approve");
    assert!(v["steps"][0]["deadline"].is_string(), "{v}");

    // The bot may not report the manager's step; nobody may report a pending step.
    bot.send(
        &n,
        update(
            &n,
            &bot,
            &t,
            &[&al],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_1", "step_id": "approve"}),
        ),
    )
    .await
    .expect_error(403, "CAPABILITY_DENIED");
    mgr.send(
        &n,
        update(
            &n,
            &mgr,
            &t,
            &[&al],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_1", "step_id": "pay"}),
        ),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    // Completion before the path has ended is refused.
    al.send(
        &n,
        update(
            &n,
            &al,
            &t,
            &[&mgr],
            "workflow.complete@v1",
            json!({"workflow_id": "wf_1"}),
        ),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");

    mgr.send(&n, update(&n, &mgr, &t, &[&al], "workflow.step_complete@v1",
        json!({"workflow_id": "wf_1", "step_id": "approve", "result": {"decision": "approved"}})))
        .await
        .expect(201);
    assert_eq!(view(&n, &al, "wf_1").await["active_step"], "pay");
    bot.send(
        &n,
        update(
            &n,
            &bot,
            &t,
            &[&al],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_1", "step_id": "pay"}),
        ),
    )
    .await
    .expect(201);
    al.send(
        &n,
        update(
            &n,
            &al,
            &t,
            &[&mgr],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_1", "step_id": "notify_paid"}),
        ),
    )
    .await
    .expect(201);
    // A transition record may also be a `workflow` envelope.
    let mut complete = update(
        &n,
        &al,
        &t,
        &[&mgr],
        "workflow.complete@v1",
        json!({"workflow_id": "wf_1"}),
    );
    complete["type"] = "workflow".into();
    al.send(&n, complete).await.expect(201);
    let v = view(&n, &al, "wf_1").await;
    assert_eq!(v["status"], "completed");
    assert_eq!(
        states(&v),
        [
            ("approve", "completed"),
            ("pay", "completed"),
            ("notify_paid", "completed"),
            ("notify_rejected", "pending")
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(v["steps"][0]["result"]["decision"], "approved");
    // Ended: nothing moves it again; a stranger cannot see it.
    al.send(
        &n,
        update(
            &n,
            &al,
            &t,
            &[&mgr],
            "workflow.failed@v1",
            json!({"workflow_id": "wf_1"}),
        ),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
    n.get("/v1/workflows/wf_1", &eve.token).await.expect(404);
    let listed = n
        .get(&format!("/v1/threads/{t}/workflows"), &bot.token)
        .await
        .expect(200)
        .body;
    assert_eq!(listed["workflows"][0]["workflow_id"], "wf_1");
}

#[tokio::test]
async fn conditions_timeouts_and_failures_take_their_branches() {
    let n = TestNode::new();
    let al = n.register("al", "human", 1).await;
    let mgr = n.register("manager", "human", 2).await;
    let bot = n.register("bot", "human", 3).await;
    let t = n.thread_id();
    for id in ["wf_no", "wf_late", "wf_fail"] {
        al.send(
            &n,
            workflow_envelope(&n, &al, &t, &[&mgr, &bot], definition(id, &mgr, &bot, &al)),
        )
        .await
        .expect(201);
    }
    // Rejected: the pay step's condition is unmet, the run skips to notify_rejected.
    mgr.send(&n, update(&n, &mgr, &t, &[&al], "workflow.step_complete@v1",
        json!({"workflow_id": "wf_no", "step_id": "approve", "result": {"decision": "rejected"}})))
        .await
        .expect(201);
    let v = view(&n, &al, "wf_no").await;
    assert_eq!(v["active_step"], "notify_rejected");
    assert_eq!(v["steps"][1]["state"], "skipped");
    // Failed: on_failure.
    mgr.send(
        &n,
        update(
            &n,
            &mgr,
            &t,
            &[&al],
            "workflow.failed@v1",
            json!({"workflow_id": "wf_fail", "step_id": "approve", "reason": "missing receipt"}),
        ),
    )
    .await
    .expect(201);
    assert_eq!(
        view(&n, &al, "wf_fail").await["active_step"],
        "notify_rejected"
    );
    // Late: 48 h pass on the node's clock; the step timed out and its report is refused.
    n.clock.advance_ms(48 * 3_600_000 + 1);
    let (mut al, mut mgr) = (al, mgr);
    al.token = n.login(&al.address, &al.key, &al.key_id).await.0;
    mgr.token = n.login(&mgr.address, &mgr.key, &mgr.key_id).await.0;
    let v = view(&n, &al, "wf_late").await;
    assert_eq!(v["steps"][0]["state"], "timed_out", "{v}");
    assert_eq!(v["active_step"], "notify_rejected");
    mgr.send(
        &n,
        update(
            &n,
            &mgr,
            &t,
            &[&al],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_late", "step_id": "approve"}),
        ),
    )
    .await
    .expect_error(409, "STATE_TRANSITION_INVALID");
}

#[tokio::test]
async fn bad_definitions_are_refused_naming_the_member() {
    let n = TestNode::new();
    let al = n.register("al", "human", 1).await;
    let mgr = n.register("manager", "human", 2).await;
    let bot = n.register("bot", "human", 3).await;
    let t = n.thread_id();
    let mut looped = definition("wf_loop", &mgr, &bot, &al);
    looped["steps"][2]["on_success"] = "approve".into();
    let r = al
        .send(&n, workflow_envelope(&n, &al, &t, &[&mgr], looped))
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(
        r.body["error"]["details"]["field"],
        "content.structured.parameters.steps"
    );
    // The intent on a non-workflow envelope, and a workflow envelope without it.
    let mut wrong_type =
        workflow_envelope(&n, &al, &t, &[&mgr], definition("wf_t", &mgr, &bot, &al));
    wrong_type["type"] = "message".into();
    al.send(&n, wrong_type)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    let ok = workflow_envelope(&n, &al, &t, &[&mgr], definition("wf_ok", &mgr, &bot, &al));
    al.send(&n, ok).await.expect(201);
    // The id is taken now.
    al.send(
        &n,
        workflow_envelope(&n, &al, &t, &[&mgr], definition("wf_ok", &mgr, &bot, &al)),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
    // Updates name a workflow of this thread.
    let other = n.thread_id();
    mgr.send(
        &n,
        update(
            &n,
            &mgr,
            &other,
            &[&al],
            "workflow.step_complete@v1",
            json!({"workflow_id": "wf_ok", "step_id": "approve"}),
        ),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
}

#[tokio::test]
async fn a_quarantined_thread_holds_its_workflows() {
    let n = TestNode::new();
    let al = n.register("al", "human", 1).await;
    let mgr = n.register("manager", "human", 2).await;
    let bot = n.register("bot", "human", 3).await;
    let t = n.thread_id();
    al.send(&n, al.message(&n, &t, None, &[&mgr], "start"))
        .await
        .expect(201);
    al.send(
        &n,
        al.op(
            &n,
            &t,
            "thread.update@v1",
            json!({"labels": ["sys.quarantine"]}),
        ),
    )
    .await
    .expect(201);
    let state = n
        .get(&format!("/v1/threads/{t}"), &al.token)
        .await
        .expect(200)
        .body;
    assert!(state.to_string().contains("sys.quarantine"), "{state}");
    al.send(
        &n,
        workflow_envelope(&n, &al, &t, &[&mgr], definition("wf_q", &mgr, &bot, &al)),
    )
    .await
    .expect(201);
    let v = view(&n, &al, "wf_q").await;
    assert_eq!(v["status"], "held");
    assert_eq!(v["active_step"], Value::Null);
    let r = mgr
        .send(
            &n,
            update(
                &n,
                &mgr,
                &t,
                &[&al],
                "workflow.step_complete@v1",
                json!({"workflow_id": "wf_q", "step_id": "approve"}),
            ),
        )
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");
    assert!(r.body.to_string().contains("§18.5"), "{}", r.body);
}

/// A task or workflow may open a thread: its row is written after the thread's (both tables
/// refer to their thread).
#[tokio::test]
async fn a_task_or_workflow_may_be_a_new_threads_root() {
    let n = TestNode::new();
    let al = n.register("al", "human", 1).await;
    let mgr = n.register("manager", "human", 2).await;
    let mut task = al.message(&n, &n.thread_id(), None, &[&mgr], "please review");
    task["content"]["structured"] =
        json!({"intent": "task.create@v1", "parameters": {"title": "audit"}});
    al.send(&n, task).await.expect(201);
    let t = n.thread_id();
    al.send(
        &n,
        workflow_envelope(&n, &al, &t, &[&mgr], definition("wf_root", &mgr, &mgr, &al)),
    )
    .await
    .expect(201);
    assert_eq!(view(&n, &mgr, "wf_root").await["thread_id"], t.as_str());
}
