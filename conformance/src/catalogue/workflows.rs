//! Workflows (Level 4; v1.1 §19, v1.0 §18.1–§18.3). The harness defines a two-step workflow
//! in the v1.0 §18.1 shape (Alice asks Bob to review; then a notification to Alice) and
//! records its transitions with the §19.2 envelopes, sent by the identity the step names.
//!
//! What the spec leaves open is detected: the envelope type of a transition record (a
//! `message` carrying the intent, or a `workflow` envelope) is the first the target takes,
//! reported as a reading; the workflow view is looked for at `GET /v1/workflows/{id}` and
//! `GET /v1/threads/{id}/workflows` (no route there: the view is `unsupported`, never a
//! pass).

use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ex, Ident, shapes};
use serde_json::{Value, json};

const NEEDS: &[Need] = &[Need::Provisioning];

/// The envelope type a target takes for workflow transition records, reported with the run.
pub const UPDATE_READING: &str = "envelope type of workflow transition records (v1.1 §19.2)";

/// A workflow of Alice's: `review` by Bob (on success `done`, on failure `rejected`, 48 h),
/// then `done` and `rejected`, notifications to Alice.
fn definition(id: &str, alice: &Ident, bob: &Ident) -> Value {
    json!({
        "workflow_id": id,
        "name": "Conformance review",
        "steps": [
            {"id": "review", "action": "approval.request", "to": bob.address(),
             "parameters": {"item": "conformance report"},
             "on_success": "done", "on_failure": "rejected", "timeout": "48h"},
            {"id": "done", "action": "notification", "to": alice.address()},
            {"id": "rejected", "action": "notification", "to": alice.address()}
        ]
    })
}

/// Alice, Bob and a thread between them.
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob]).await?;
    Ok((alice, bob, t))
}

/// Alice's `workflow` envelope defining `id` in `t` (§19: type workflow, intent
/// workflow.execute@v1).
async fn define(
    cx: &mut Ctx,
    alice: &Ident,
    bob: &Ident,
    t: &str,
    id: &str,
) -> Result<Ex, Finding> {
    let mut e = cx
        .data
        .message(alice, t, None, &[bob], "Conformance review workflow");
    e["type"] = "workflow".into();
    e["content"]["structured"] = json!({
        "intent": "workflow.execute@v1",
        "parameters": definition(id, alice, bob),
    });
    alice.sign(&mut e);
    cx.net.send(alice, &e).await
}

async fn defined(cx: &mut Ctx) -> Result<(Ident, Ident, String, String), Finding> {
    let (alice, bob, t) = setup(cx).await?;
    let id = format!("wf_{}", cx.data.word());
    let i = define(cx, &alice, &bob, &t, &id).await?;
    cx.net
        .expect_created(i)
        .map_err(crate::finding::setup_step(
            "defining the workflow (workflow.execute@v1)",
        ))?;
    Ok((alice, bob, t, id))
}

/// `who`'s record of a transition (`intent` with `parameters`) in `t`, as a `message` or a
/// `workflow` envelope: the one the target's reading takes (detected on first use).
async fn record(
    cx: &mut Ctx,
    who: &Ident,
    to: &Ident,
    t: &str,
    intent: &str,
    parameters: Value,
) -> Result<Ex, Finding> {
    let readings = cx.target.readings.clone();
    let known = readings.get(UPDATE_READING);
    let kinds: Vec<&str> = match known.as_deref() {
        Some("workflow") => vec!["workflow"],
        Some(_) => vec!["message"],
        None => vec!["message", "workflow"],
    };
    let mut last = None;
    for kind in kinds {
        let mut e = cx.data.message(who, t, None, &[to], intent);
        e["type"] = kind.into();
        e["content"]["structured"] = json!({"intent": intent, "parameters": parameters});
        who.sign(&mut e);
        let i = cx.net.send(who, &e).await?;
        if (200..300).contains(&cx.net.status(i)) {
            readings.record(UPDATE_READING, kind.into());
            return Ok(i);
        }
        last = Some(i);
    }
    last.ok_or_else(|| Finding::Error("no transition record was sent".into()))
}

async fn definition_accepted(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t) = setup(cx).await?;
    let id = format!("wf_{}", cx.data.word());
    let i = define(cx, &alice, &bob, &t, &id).await?;
    cx.net.expect_created(i)
}

async fn transitions_recorded(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = defined(cx).await?;
    let steps: [(&Ident, &Ident, &str, Value); 3] = [
        (
            &bob,
            &alice,
            "workflow.step_complete@v1",
            json!({"workflow_id": id, "step_id": "review", "result": {"decision": "approved"}}),
        ),
        (
            &alice,
            &bob,
            "workflow.step_complete@v1",
            json!({"workflow_id": id, "step_id": "done"}),
        ),
        (
            &alice,
            &bob,
            "workflow.complete@v1",
            json!({"workflow_id": id}),
        ),
    ];
    for (who, to, intent, params) in steps {
        let i = record(cx, who, to, &t, intent, params).await?;
        cx.net.expect_created(i)?;
    }
    // The failure record, on a second run of the same definition.
    let other = format!("{id}_b");
    let i = define(cx, &alice, &bob, &t, &other).await?;
    cx.net.expect_created(i)?;
    let i = record(
        cx,
        &bob,
        &alice,
        &t,
        "workflow.failed@v1",
        json!({"workflow_id": other, "step_id": "review", "reason": "conformance"}),
    )
    .await?;
    cx.net.expect_created(i)
}

/// The step `step` of the workflow view `body` (a view of the run, or a list of runs).
fn step_state(body: &Value, id: &str, step: &str) -> Option<String> {
    let run = shapes::list(body, &["workflows", "items"])
        .and_then(|l| {
            l.into_iter()
                .find(|r| r["workflow_id"] == id || r["id"] == id)
        })
        .unwrap_or_else(|| body.clone());
    let steps = run["steps"].as_array()?;
    steps
        .iter()
        .find(|s| s["id"] == step || s["step_id"] == step)
        .and_then(|s| s["state"].as_str().or_else(|| s["status"].as_str()))
        .map(str::to_owned)
}

async fn view(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = defined(cx).await?;
    let i = record(
        cx,
        &bob,
        &alice,
        &t,
        "workflow.step_complete@v1",
        json!({"workflow_id": id, "step_id": "review", "result": {"decision": "approved"}}),
    )
    .await?;
    cx.net.expect_created(i)?;
    let mut tried = Vec::new();
    for path in [
        format!("/v1/workflows/{id}"),
        format!("/v1/threads/{t}/workflows"),
    ] {
        let i = cx.net.get(&path, &alice.token).await?;
        let status = cx.net.status(i);
        if matches!(status, 404 | 405)
            && cx.net.error_code(i).as_deref() != Some("THREAD_NOT_FOUND")
        {
            tried.push(format!("{path}: {status}"));
            continue;
        }
        let body = cx.net.ok_body(i)?;
        let (review, done) = (
            step_state(&body, &id, "review"),
            step_state(&body, &id, "done"),
        );
        return cx.net.expect_at(
            i,
            review.as_deref() == Some("completed") && done.as_deref() == Some("active"),
            "the view shows step review completed and step done active (v1.0 §18.2 states)",
            format!("review: {review:?}, done: {done:?}"),
        );
    }
    Err(Finding::Unsupported(format!(
        "no workflow view found ({}); §19.2 names no route",
        tried.join("; ")
    )))
}

async fn out_of_order_refused(cx: &mut Ctx) -> Verdict {
    let (alice, bob, t, id) = defined(cx).await?;
    // Probe: Bob reports `done`, which is still pending (review is active).
    let p = record(
        cx,
        &bob,
        &alice,
        &t,
        "workflow.step_complete@v1",
        json!({"workflow_id": id, "step_id": "done"}),
    )
    .await?;
    cx.net
        .expect_not_accepted(p, "a refusal of a report for a step that is not active")?;
    // Control: the same report for the active step.
    let c = record(
        cx,
        &bob,
        &alice,
        &t,
        "workflow.step_complete@v1",
        json!({"workflow_id": id, "step_id": "review"}),
    )
    .await?;
    cx.net
        .expect_refused_beside(p, c, "the same report for the active step review", &[], "")
}

const VIEW_SHOULD: &str = "§19.2: nodes SHOULD provide a dedicated workflow view; its route is not named, so the harness looks at /v1/workflows/{id} and /v1/threads/{id}/workflows";

pub const CASES: &[Case] = &[
    Case {
        id: "full.workflow.definition-accepted",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §19", "v1.0 §18.1"],
        requirement: "A workflow envelope (type workflow, intent workflow.execute@v1) defining steps with transitions and a timeout is accepted.",
        covers: &["R-19-01", "R-28.1-05"],
        needs: NEEDS,
        how: "Alice sends Bob a workflow envelope: two steps (review by Bob with on_success, on_failure and timeout 48h; notifications to Alice) in the v1.0 §18.1 shape; expect 201.",
        interpretation: None,
        mutant: Mutant::Quirk("refuse-workflows"),
        run: |cx| Box::pin(definition_accepted(cx)),
    },
    Case {
        id: "full.workflow.transitions-recorded",
        level: 4,
        strength: Strength::Must,
        spec: &["v1.1 §19.2"],
        requirement: "Workflow transitions are recorded as workflow.step_complete@v1, workflow.failed@v1 and workflow.complete@v1 envelopes.",
        covers: &["R-19.2-01"],
        needs: NEEDS,
        how: "After the definition, Bob records step review complete, Alice step done complete and the workflow complete; on a second run Bob records review failed; expect 201 for each (as a message carrying the intent, or a workflow envelope: detected).",
        interpretation: Some(
            "The node is read as the referee, as for tasks (§18.3): participants record each transition; the one who records a step is the identity it names (`to`).",
        ),
        mutant: Mutant::Quirk("refuse-workflow-updates"),
        run: |cx| Box::pin(transitions_recorded(cx)),
    },
    Case {
        id: "full.workflow.view",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §19.2", "v1.0 §18.2"],
        requirement: "A workflow view shows each step's state as transitions are recorded.",
        covers: &["R-19.2-02"],
        needs: NEEDS,
        how: "Define the workflow, record review complete, then read GET /v1/workflows/{id} (else GET /v1/threads/{id}/workflows); expect review completed and done active.",
        interpretation: Some(VIEW_SHOULD),
        mutant: Mutant::NotApplicable(VIEW_SHOULD),
        run: |cx| Box::pin(view(cx)),
    },
    Case {
        id: "full.workflow.out-of-order-refused",
        level: 4,
        strength: Strength::Should,
        spec: &["v1.1 §19.2", "v1.0 §18.2"],
        requirement: "A report for a step that is not active is refused.",
        covers: &["R-19.2-03"],
        needs: NEEDS,
        how: "While review is active, Bob records step done complete (probe, must be refused), then step review complete (control, 201).",
        interpretation: Some(
            "§19.2 requires tracking workflow state but does not say a node refuses a transition its definition does not allow; the case is a SHOULD.",
        ),
        mutant: Mutant::Quirk("any-workflow-transition"),
        run: |cx| Box::pin(out_of_order_refused(cx)),
    },
];
