//! Capability tokens (v1.1 §12, §16.4): tokens signed by the thread owner with
//! `loom_protocol::capability::sign_capability_token`, presented in
//! `content.structured.parameters.capability_token` of a `thread_op` (§12.4 preferred form).

use super::thread_kit::{Grant, expect_state, op_ok, op_with_token, send_op, thread_obj, token};
use crate::case::{Case, Finding, Mutant, Need, Strength, Verdict};
use crate::ctx::{Ctx, Ident};
use serde_json::{Value, json};

const RESOLVE: &str = "thread.resolve@v1";
const UPDATE: &str = "thread.update@v1";

/// Alice owns a thread with Bob and Carol; returns (alice, bob, carol, thread).
async fn setup(cx: &mut Ctx) -> Result<(Ident, Ident, Ident, String), Finding> {
    let alice = cx.identity("alice", "human").await?;
    let bob = cx.identity("bob", "human").await?;
    let carol = cx.identity("carol", "human").await?;
    let (t, _) = cx.start_thread(&alice, &[&bob, &carol]).await?;
    Ok((alice, bob, carol, t))
}

/// What a refused token is checked for (§24.2: `CAPABILITY_DENIED` is the registry's code for
/// a missing or invalid capability).
const DENIED: &str = "CAPABILITY_DENIED";

/// Bob resolves with `probe`: refused with 403 `CAPABILITY_DENIED` and the thread stays
/// active; then with `control` — the same token with only the property under test made
/// valid — accepted, so the probe was refused for that property and nothing else (issue 29).
async fn denied(
    cx: &mut Ctx,
    alice: &Ident,
    bob: &Ident,
    t: &str,
    probe: &Value,
    control: &Value,
    what: &str,
) -> Verdict {
    denied_with(cx, (alice, bob, t), probe, control, what, &[DENIED]).await
}

/// [`denied`] where the refusal may carry any of `codes`.
async fn denied_with(
    cx: &mut Ctx,
    (alice, bob, t): (&Ident, &Ident, &str),
    probe: &Value,
    control: &Value,
    what: &str,
    codes: &[&str],
) -> Verdict {
    let p = op_with_token(cx, bob, t, RESOLVE, json!({}), probe).await?;
    cx.net
        .expect_not_accepted(p, "a refusal (v1.1 §12.4, §24.2)")?;
    expect_state(cx, alice, t, "active").await?;
    let c = op_with_token(cx, bob, t, RESOLVE, json!({}), control).await?;
    cx.net.expect_refused_beside(p, c, what, codes, "")?;
    expect_state(cx, alice, t, "resolved").await
}

/// The control of most refusals here: alice's token granting bob `resolve` on `t`.
fn resolve_token(cx: &mut Ctx, alice: &Ident, bob: &Ident, t: &str) -> Value {
    token(cx, alice, bob, &Grant::new(t, &["resolve"]))
}

/// The control after a revocation: a resolve token of the thread's new epoch 1 (§12.3).
fn epoch_one_resolve(cx: &mut Ctx, alice: &Ident, bob: &Ident, t: &str) -> Value {
    let g = Grant {
        epoch: 1,
        ..Grant::new(t, &["resolve"])
    };
    token(cx, alice, bob, &g)
}

async fn grant_allows_op(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let p = send_op(cx, &bob, &t, RESOLVE, json!({})).await?;
    cx.net
        .expect_not_accepted(p, "403 CAPABILITY_DENIED without a token (v1.1 §12.4)")?;
    let tok = resolve_token(cx, &alice, &bob, &t);
    let c = op_with_token(cx, &bob, &t, RESOLVE, json!({}), &tok).await?;
    cx.net.expect_refused_beside(
        p,
        c,
        "the same operation with a resolve token",
        &[DENIED],
        "",
    )?;
    expect_state(cx, &alice, &t, "resolved").await
}

async fn wrong_grant(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let tok = token(cx, &alice, &bob, &Grant::new(&t, &["lock", "reply"]));
    let control = resolve_token(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "a token granting resolve",
    )
    .await
}

async fn admin_superset(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let label = token(cx, &alice, &bob, &Grant::new(&t, &["label"]));
    let admin = token(cx, &alice, &bob, &Grant::new(&t, &["admin"]));
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &label,
        &admin,
        "a token granting admin",
    )
    .await
}

async fn expired(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let at = |ms| Grant {
        expires_at: Some(cx.data.now_plus_ms(ms)),
        ..Grant::new(&t, &["resolve"])
    };
    let (past, future) = (at(-3_600_000), at(3_600_000));
    let tok = token(cx, &alice, &bob, &past);
    let control = token(cx, &alice, &bob, &future);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "the token expiring in an hour",
    )
    .await
}

async fn other_thread(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let (t2, _) = cx.start_thread(&alice, &[&bob]).await?;
    let tok = token(cx, &alice, &bob, &Grant::new(&t2, &["resolve"]));
    let control = resolve_token(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "the token scoped to this thread",
    )
    .await
}

async fn other_holder(cx: &mut Ctx) -> Verdict {
    let (alice, bob, carol, t) = setup(cx).await?;
    let tok = token(cx, &alice, &carol, &Grant::new(&t, &["resolve"]));
    let control = resolve_token(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "the token issued to bob",
    )
    .await
}

async fn epoch_mismatch(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let g = Grant {
        epoch: 1,
        ..Grant::new(&t, &["resolve"])
    };
    let tok = token(cx, &alice, &bob, &g);
    let control = resolve_token(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "the token of the thread's epoch 0",
    )
    .await
}

async fn bad_signature(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let mut tok = token(cx, &alice, &bob, &Grant::new(&t, &["label"]));
    tok["grants"] = json!(["resolve"]);
    let control = resolve_token(cx, &alice, &bob, &t);
    // A token whose signature fails is an invalid capability (CAPABILITY_DENIED) and a failed
    // verification (SIGNATURE_INVALID) alike; §24.2 names both, neither for this alone.
    denied_with(
        cx,
        (&alice, &bob, &t),
        &tok,
        &control,
        "the same grant, signed",
        &[DENIED, "SIGNATURE_INVALID"],
    )
    .await
}

async fn self_issued(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let tok = token(cx, &bob, &bob, &Grant::new(&t, &["resolve"]));
    let control = resolve_token(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &control,
        "the token issued by the thread owner",
    )
    .await
}

async fn single_use(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let g = Grant {
        single_use: true,
        ..Grant::new(&t, &["label"])
    };
    let tok = token(cx, &alice, &bob, &g);
    let c = op_with_token(cx, &bob, &t, UPDATE, json!({"subject": "first"}), &tok).await?;
    cx.net.expect_created(c)?;
    let p = op_with_token(cx, &bob, &t, UPDATE, json!({"subject": "second"}), &tok).await?;
    cx.net
        .expect_refused_beside(p, c, "the token's first use", &[DENIED], "")?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net
        .expect_eq("thread.subject", &json!("first"), &th["subject"])
}

async fn revocation_bumps_epoch(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let revoked = token(cx, &alice, &bob, &Grant::new(&t, &["lock"]));
    let other = resolve_token(cx, &alice, &bob, &t);
    op_ok(
        cx,
        &alice,
        &t,
        "capability.revoked@v1",
        json!({"capability_id": revoked["id"]}),
    )
    .await?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net.expect_eq(
        "thread.cap_epoch after one revocation (v1.1 §12.3)",
        &json!(1),
        &th["cap_epoch"],
    )?;
    // Every token of the old epoch is now invalid, not only the revoked one; a token of the
    // new epoch works.
    let fresh = epoch_one_resolve(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &other,
        &fresh,
        "the same grant for epoch 1",
    )
    .await
}

/// The id the target answered `POST /v1/capabilities` with: `id`, `capability_id`,
/// `capability.id` or `token.id`, the first that is a `cap_` id. §16.4 says the node
/// "issues" the token and §12.1 puts an `id` in it: a node may keep the client's id or
/// mint its own for the stored token; either is read, and the one found is reported.
fn issued_id(body: &Value) -> Option<&str> {
    ["/id", "/capability_id", "/capability/id", "/token/id"]
        .iter()
        .find_map(|p| body.pointer(p).and_then(Value::as_str))
        .filter(|id| id.starts_with("cap_"))
}

async fn endpoints(cx: &mut Ctx) -> Verdict {
    let (alice, bob, _, t) = setup(cx).await?;
    let tok = resolve_token(cx, &alice, &bob, &t);
    let tok_id = tok["id"].as_str().unwrap_or_default().to_owned();
    let i = cx
        .net
        .call("POST", "/v1/capabilities", Some(&alice.token), Some(&tok))
        .await?;
    cx.net.expect_that(
        (200..300).contains(&cx.net.transcript(i).status),
        "POST /v1/capabilities with an owner-signed token succeeds (v1.1 §16.4)",
        format!("HTTP {}", cx.net.transcript(i).status),
    )?;
    let answer = cx.net.json(i);
    let id = issued_id(&answer).unwrap_or(&tok_id).to_owned();
    let minted = if id == tok_id {
        "the client's: the node keeps the token's id".to_owned()
    } else {
        format!("the node's: it answers {id} for the token {tok_id}")
    };
    cx.target
        .readings
        .record(crate::readings::CAPABILITY_ID_READING, minted);
    let i = cx
        .net
        .get(&format!("/v1/capabilities?thread_id={t}"), &bob.token)
        .await?;
    let body = cx.net.ok_body(i)?;
    cx.net.expect_that(
        cx.net.text(i).contains(&id),
        format!("GET /v1/capabilities?thread_id= lists {id} for its holder"),
        crate::show::compact(&body),
    )?;
    // The operation names the token, what replicates (§12.4); the route names what the
    // node issued.
    let mut op = cx.data.op(
        &alice,
        &t,
        "capability.revoked@v1",
        json!({"capability_id": tok_id}),
    );
    alice.sign(&mut op);
    let i = cx
        .net
        .call(
            "DELETE",
            &format!("/v1/capabilities/{id}"),
            Some(&alice.token),
            Some(&op),
        )
        .await?;
    cx.net.expect_ok(i)?;
    let th = thread_obj(cx, &alice, &t).await?;
    cx.net
        .expect_eq("thread.cap_epoch after DELETE", &json!(1), &th["cap_epoch"])?;
    let fresh = epoch_one_resolve(cx, &alice, &bob, &t);
    denied(
        cx,
        &alice,
        &bob,
        &t,
        &tok,
        &fresh,
        "the same grant for epoch 1",
    )
    .await
}

const P: &[Need] = &[Need::Provisioning];

/// Capability token cases.
pub const CASES: &[Case] = &[
    Case {
        id: "core.capability.token.grants-op",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1", "v1.1 §12.4", "v1.0 §11"],
        requirement: "A thread_op signed by the actor carrying an owner-issued token for the operation's grant in parameters.capability_token MUST be accepted; without it, refused.",
        covers: &["R-12.4-01", "R-12.4-02", "R-12.1-01", "R-12.2-01"],
        needs: P,
        how: "Bob's resolve without a token is 403 CAPABILITY_DENIED; with Alice's signed {grants: [resolve]} token it is 201 and the thread is resolved.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(grant_allows_op(cx)),
    },
    Case {
        id: "core.capability.token.wrong-grant",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.2", "v1.1 §12.4", "v1.1 §24.2"],
        requirement: "A token whose grants do not cover the operation MUST be refused with CAPABILITY_DENIED.",
        covers: &["R-12.2-01", "R-12.4-01", "R-24.2-04"],
        needs: P,
        how: "Bob resolves with a token granting lock and reply: 403 CAPABILITY_DENIED; state stays active.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(wrong_grant(cx)),
    },
    Case {
        id: "core.capability.token.admin-superset",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.2"],
        requirement: "The admin grant MUST act as a superset of all grants.",
        covers: &["R-12.2-02"],
        needs: P,
        how: "Bob's resolve with a label-only token is 403 CAPABILITY_DENIED; with an admin token it is 201.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(admin_superset(cx)),
    },
    Case {
        id: "core.capability.token.expired",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1"],
        requirement: "A token whose expires_at is in the past MUST be refused.",
        covers: &["R-12.1-04"],
        needs: P,
        how: "Bob resolves with a resolve token that expired an hour ago: 403 CAPABILITY_DENIED.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(expired(cx)),
    },
    Case {
        id: "core.capability.token.other-thread",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1"],
        requirement: "A token scoped to another thread MUST be refused.",
        covers: &["R-12.1-03"],
        needs: P,
        how: "Alice owns two threads with Bob; Bob resolves the first with a token whose scope.thread_id is the second: 403 CAPABILITY_DENIED.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(other_thread(cx)),
    },
    Case {
        id: "core.capability.token.other-holder",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1"],
        requirement: "A token issued to another identity MUST be refused.",
        covers: &["R-12.1-03"],
        needs: P,
        how: "Bob presents a resolve token issued_to Carol: 403 CAPABILITY_DENIED.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(other_holder(cx)),
    },
    Case {
        id: "core.capability.token.epoch-mismatch",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.3"],
        requirement: "Nodes MUST reject tokens where token.epoch != thread.cap_epoch.",
        covers: &["R-12.3-04", "R-12.3-03"],
        needs: P,
        how: "Bob resolves with a token of epoch 1 on a thread at cap_epoch 0: 403 CAPABILITY_DENIED.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(epoch_mismatch(cx)),
    },
    Case {
        id: "core.capability.token.bad-signature",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1", "v1.1 §24.2"],
        requirement: "A token whose signature does not verify MUST be refused.",
        covers: &["R-12.1-02", "R-12.1-03"],
        needs: P,
        how: "Alice signs a label token for Bob; its grants are changed to [resolve] after signing; Bob's resolve with it is 403 CAPABILITY_DENIED or 401 SIGNATURE_INVALID (both fit §24.2).",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(bad_signature(cx)),
    },
    Case {
        id: "core.capability.token.self-issued",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.1", "v1.1 §12.4"],
        requirement: "A token issued by an identity without authority over the thread (a participant signing a token for itself) MUST be refused.",
        covers: &["R-12.4-01"],
        needs: P,
        how: "Bob signs a resolve token to himself and presents it: 403 CAPABILITY_DENIED.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(self_issued(cx)),
    },
    Case {
        id: "core.capability.single-use.spent",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.5"],
        requirement: "A single_use token MUST be marked spent on its first successful use.",
        covers: &["R-12.5-01"],
        needs: P,
        how: "Bob updates the subject with a single-use label token (201), then again with the same token: 403 CAPABILITY_DENIED; the subject is the first one.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(single_use(cx)),
    },
    Case {
        id: "core.capability.revocation.epoch",
        level: 1,
        strength: Strength::Must,
        spec: &["v1.1 §12.3"],
        requirement: "A capability.revoked@v1 operation MUST increment the thread's cap_epoch, invalidating every token of the old epoch.",
        covers: &["R-12.3-01", "R-12.3-02", "R-12.3-04", "R-12.3-05"],
        needs: P,
        how: "Alice issues two tokens to Bob (lock, resolve) and revokes the first with a capability.revoked@v1 thread_op; cap_epoch is 1; the unrevoked epoch-0 resolve token is 403 CAPABILITY_DENIED; a new epoch-1 token works.",
        interpretation: None,
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(revocation_bumps_epoch(cx)),
    },
    Case {
        id: "core.capability.endpoints.issue-list-revoke",
        level: 1,
        strength: Strength::Should,
        spec: &["v1.1 §16.4", "v1.1 §12.3"],
        requirement: "POST /v1/capabilities issues a token, GET /v1/capabilities?thread_id= lists it, DELETE /v1/capabilities/{id} revokes it through a capability.revoked@v1 thread_op.",
        covers: &["R-16.4-01", "R-12.3-02"],
        needs: &[Need::Provisioning, Need::Capabilities],
        how: "Alice POSTs a signed resolve token for Bob (2xx); the id the node answers with (id, capability_id, capability.id or token.id; else the token's) is its issued id, reported as a reading; Bob's GET ?thread_id= lists that id; Alice DELETEs /v1/capabilities/{that id} with the signed capability.revoked@v1 op naming the token's id as body (the reference node's convention, reference/node/src/service/capabilities.rs) (2xx); cap_epoch is 1 and the token is refused.",
        interpretation: Some(
            "§16.4 lists the capability endpoints without a requirement keyword (R-16.4-01 is a SHOULD), and a node cannot sign the capability.revoked@v1 thread_op a revocation creates, so the DELETE body is the reference node's convention. The MUST behind it, revocation bumping cap_epoch, is core.capability.revocation.epoch.",
        ),
        mutant: Mutant::Quirk("skip-capability-check"),
        run: |cx| Box::pin(endpoints(cx)),
    },
];
