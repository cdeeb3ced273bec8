//! Every quirk turns off exactly its check (DESIGN.md §4): each scenario below is refused
//! by a correct node with the expected §24.2 code and accepted by a node with that one
//! quirk, so a conformance case for the rule can be proven able to fail.

mod support;

use loom_node::{Quirk, Quirks};
use serde_json::json;
use support::{Resp, TestNode};

fn node(q: Option<Quirk>) -> TestNode {
    let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
    TestNode::with_quirks(quirks, |c| {
        c.limits.max_envelope_bytes = 4096;
        c.retract_window_secs = 600;
        c.limits.max_pending_parents = 1;
        if q == Some(Quirk::DisableRateLimit) || q.is_none() {
            c.rate_limits.envelopes_per_identity = 0;
        }
    })
}

/// Runs the violating request of `q` against `n`; returns its response.
async fn violate(q: Quirk, n: &TestNode) -> Resp {
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    let root = alice.message(n, &t, None, &[&bob], "root");
    alice.send(n, root.clone()).await.expect(201);
    let rid = root["id"].as_str().unwrap();
    match q {
        Quirk::AcceptBadSignature => {
            let mut e = alice.sign(alice.message(n, &t, Some(rid), &[&bob], "x"));
            e["content"]["human"]["text"] = "tampered".into();
            n.call("POST", "/v1/envelopes", Some(&alice.token), Some(e))
                .await
        }
        Quirk::AllowDuplicateIds => alice.send(n, root).await,
        Quirk::SkipEnvelopeValidation => {
            let mut e = alice.message(n, &t, Some(rid), &[&bob], "x");
            e["loom"] = "1.0".into();
            alice.send(n, e).await
        }
        Quirk::AllowSenderSpoofing => {
            let e = bob.sign(bob.message(n, &t, Some(rid), &[&alice], "x"));
            n.call("POST", "/v1/envelopes", Some(&alice.token), Some(e))
                .await
        }
        Quirk::IgnoreAudience => n.get(&format!("/v1/envelopes/{rid}"), &carol.token).await,
        Quirk::AcceptIntoLockedThread => {
            alice
                .send(n, alice.op(n, &t, "thread.lock@v1", json!({})))
                .await
                .expect(201);
            bob.send(n, bob.message(n, &t, Some(rid), &[&alice], "x"))
                .await
        }
        Quirk::AllowInvalidStateTransition => {
            alice
                .send(n, alice.op(n, &t, "thread.archive@v1", json!({})))
                .await
        }
        Quirk::SkipDelegationCheck => {
            let bot = n.register("bot", "agent", 9).await;
            bot.send(n, bot.message(n, &n.thread_id(), None, &[&alice], "x"))
                .await
        }
        Quirk::SkipCapabilityCheck => {
            bob.send(n, bob.op(n, &t, "thread.resolve@v1", json!({})))
                .await
        }
        Quirk::AcceptExpiredToken => {
            n.clock.advance_ms(3_600_001);
            n.get("/v1/identity/me", &alice.token).await
        }
        Quirk::IgnoreLegalHold => {
            let mut e = alice.message(n, &t, Some(rid), &[&bob], "held");
            e["labels"] = json!(["sys.legal_hold"]);
            alice.send(n, e.clone()).await.expect(201);
            n.call(
                "DELETE",
                &format!("/v1/envelopes/{}", e["id"].as_str().unwrap()),
                Some(&alice.token),
                None,
            )
            .await
        }
        Quirk::AllowDagCycles => {
            let mut e = alice.message(n, &t, None, &[&bob], "self");
            e["parent_id"] = e["id"].clone();
            alice.send(n, e).await
        }
        Quirk::IgnoreSizeLimit => {
            alice
                .send(
                    n,
                    alice.message(n, &t, Some(rid), &[&bob], &"x".repeat(8000)),
                )
                .await
        }
        Quirk::IgnoreThreadLimits => {
            for _ in 0..2 {
                let r = alice
                    .send(
                        n,
                        alice.message(n, &t, Some(&n.envelope_id()), &[&bob], "x"),
                    )
                    .await;
                if r.status.as_u16() != 201 {
                    return r;
                }
            }
            alice
                .send(n, alice.message(n, &t, Some(rid), &[&bob], "in range"))
                .await
        }
        Quirk::IgnoreOpPreconditions => {
            let mut op = alice.op(n, &t, "thread.resolve@v1", json!({}));
            op["content"]["structured"]["preconditions"] = json!({"thread_state_in": ["resolved"]});
            alice.send(n, op).await
        }
        Quirk::AllowAnyTaskActor => {
            let task = |who: &support::Ident, intent: &str, params: serde_json::Value| {
                let mut e = who.message(n, &t, Some(rid), &[&bob], "task");
                e["type"] = "task".into();
                e["content"]["structured"] = json!({"intent": intent, "parameters": params});
                e
            };
            let create = task(
                &alice,
                "task.create@v1",
                json!({"title": "t", "assignee": bob.address}),
            );
            alice.send(n, create.clone()).await.expect(201);
            let id = create["id"].as_str().unwrap();
            alice
                .send(
                    n,
                    task(
                        &alice,
                        "task.state_update@v1",
                        json!({"task_id": id, "state": "assigned"}),
                    ),
                )
                .await
                .expect(201);
            // Only the assignee may accept.
            alice
                .send(
                    n,
                    task(
                        &alice,
                        "task.state_update@v1",
                        json!({"task_id": id, "state": "accepted"}),
                    ),
                )
                .await
        }
        Quirk::BootstrapThreadFromOp => {
            alice
                .send(
                    n,
                    alice.op(n, &n.thread_id(), "thread.resolve@v1", json!({})),
                )
                .await
        }
        Quirk::AnonymousBlobDownload | Quirk::SkipBlobReadCheck => {
            let b = n
                .call(
                    "POST",
                    "/v1/blobs",
                    Some(&alice.token),
                    Some(json!({"filename": "a.txt", "mime_type": "text/plain", "thread_id": t})),
                )
                .await
                .expect(201);
            let id = b.body["blob_id"].as_str().unwrap().to_owned();
            n.raw(
                "PUT",
                &format!("/v1/blobs/{id}/parts/1"),
                Some(&alice.token),
                &[],
                Some(("application/octet-stream", b"bytes".to_vec())),
            )
            .await
            .expect(200);
            n.call(
                "POST",
                &format!("/v1/blobs/{id}/complete"),
                Some(&alice.token),
                None,
            )
            .await
            .expect(200);
            let who = (q == Quirk::SkipBlobReadCheck).then_some(carol.token.as_str());
            n.raw("GET", &format!("/v1/blobs/{id}"), who, &[], None)
                .await
        }
        Quirk::OmitEventSeq
        | Quirk::IncompleteThreadObject
        | Quirk::RestampCreatedAt
        | Quirk::RejectMissingParent
        | Quirk::IgnoreIdempotencyKey
        | Quirk::DisableRateLimit
        | Quirk::BareErrorBodies
        | Quirk::IncompleteNodeDocument
        | Quirk::RejectLegacySignatures
        | Quirk::UnprefixedSignaturesOnly
        | Quirk::NonCanonicalSigningForm
        | Quirk::SignOverMeta
        | Quirk::RejectUnknownTypes
        | Quirk::DropNullMembers
        | Quirk::OmitDelegationRevokedEvent
        | Quirk::SkipEnvelopeSearchIndex
        | Quirk::SkipThreadSearchIndex
        | Quirk::UnstableEventIds
        | Quirk::IgnoreEventsSince
        | Quirk::IgnoreEventAudience
        | Quirk::RetractKeepsContent
        | Quirk::OmitRetractedEvent => {
            unreachable!("checked by their own tests")
        }
    }
}

/// (quirk, status and code of a correct node, status with the quirk).
const REFUSALS: &[(Quirk, u16, &str, u16)] = &[
    (Quirk::AcceptBadSignature, 401, "SIGNATURE_INVALID", 201),
    (Quirk::AllowDuplicateIds, 409, "ENVELOPE_DUPLICATE", 201),
    (Quirk::SkipEnvelopeValidation, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AllowSenderSpoofing, 403, "CAPABILITY_DENIED", 201),
    (Quirk::IgnoreAudience, 403, "AUDIENCE_DENIED", 200),
    (Quirk::AcceptIntoLockedThread, 409, "THREAD_LOCKED", 201),
    (
        Quirk::AllowInvalidStateTransition,
        409,
        "STATE_TRANSITION_INVALID",
        201,
    ),
    (Quirk::SkipDelegationCheck, 403, "DELEGATION_INVALID", 201),
    (Quirk::SkipCapabilityCheck, 403, "CAPABILITY_DENIED", 201),
    (Quirk::AcceptExpiredToken, 401, "SIGNATURE_INVALID", 200),
    (Quirk::IgnoreLegalHold, 403, "LEGAL_HOLD_ACTIVE", 200),
    (Quirk::AllowDagCycles, 400, "ENVELOPE_INVALID", 201),
    (Quirk::IgnoreSizeLimit, 413, "PAYLOAD_TOO_LARGE", 201),
    (Quirk::IgnoreThreadLimits, 400, "ENVELOPE_INVALID", 201),
    (
        Quirk::IgnoreOpPreconditions,
        409,
        "STATE_TRANSITION_INVALID",
        201,
    ),
    (Quirk::AllowAnyTaskActor, 403, "CAPABILITY_DENIED", 201),
    (Quirk::BootstrapThreadFromOp, 404, "THREAD_NOT_FOUND", 201),
    (Quirk::AnonymousBlobDownload, 401, "SIGNATURE_INVALID", 200),
    (Quirk::SkipBlobReadCheck, 403, "CAPABILITY_DENIED", 200),
];

#[tokio::test]
async fn each_quirk_turns_off_exactly_its_check() {
    for &(q, status, code, quirked) in REFUSALS {
        let correct = violate(q, &node(None)).await;
        assert_eq!(
            correct.status.as_u16(),
            status,
            "{q:?} on a correct node: {}",
            correct.body
        );
        assert_eq!(correct.body["error"]["code"], code, "{q:?}");
        let broken = violate(q, &node(Some(q))).await;
        assert_eq!(
            broken.status.as_u16(),
            quirked,
            "{q:?} with the quirk: {}",
            broken.body
        );
    }
}

#[tokio::test]
async fn omit_event_seq_drops_meta_event_seq() {
    for (q, present) in [(None, true), (Some(Quirk::OmitEventSeq), false)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let r = alice
            .send(&n, alice.message(&n, &n.thread_id(), None, &[&alice], "x"))
            .await
            .expect(201);
        assert_eq!(r.body["meta"].get("event_seq").is_some(), present, "{q:?}");
    }
}

#[tokio::test]
async fn ignore_idempotency_key_breaks_replay() {
    for (q, second) in [(None, 201), (Some(Quirk::IgnoreIdempotencyKey), 409)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let body = serde_json::to_vec(&alice.sign(alice.message(
            &n,
            &n.thread_id(),
            None,
            &[&alice],
            "x",
        )))
        .unwrap();
        for expect in [201, second] {
            n.raw(
                "POST",
                "/v1/envelopes",
                Some(&alice.token),
                &[("idempotency-key", "k")],
                Some(("application/json", body.clone())),
            )
            .await
            .expect(expect);
        }
    }
}

#[tokio::test]
async fn disable_rate_limit_never_answers_429() {
    for (q, third) in [(None, 429), (Some(Quirk::DisableRateLimit), 201)] {
        let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
        let n = TestNode::with_quirks(quirks, |c| c.rate_limits.envelopes_per_identity = 2);
        let alice = n.register("alice", "human", 1).await;
        let t = n.thread_id();
        for _ in 0..2 {
            let r = alice
                .send(&n, alice.message(&n, &t, None, &[&alice], "x"))
                .await
                .expect(201);
            assert!(r.headers.contains_key("x-loom-ratelimit-remaining"));
        }
        let r = alice
            .send(&n, alice.message(&n, &t, None, &[&alice], "x"))
            .await
            .expect(third);
        if third == 429 {
            assert_eq!(r.body["error"]["code"], "RATE_LIMIT_EXCEEDED");
            assert_eq!(r.headers["x-loom-ratelimit-remaining"], "0");
            assert!(r.headers.contains_key("retry-after"));
            // The window resets after a minute.
            n.clock.advance_ms(60_000);
            alice
                .send(&n, alice.message(&n, &t, None, &[&alice], "x"))
                .await
                .expect(201);
        }
    }
}

#[tokio::test]
async fn bare_error_bodies_drop_the_section_24_1_body() {
    for (q, shaped) in [(None, true), (Some(Quirk::BareErrorBodies), false)] {
        let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
        let n = TestNode::with_quirks(quirks, |_| {});
        let r = n
            .call("GET", "/v1/identity/me", None, None)
            .await
            .expect(401);
        assert_eq!(r.body["error"]["code"].is_string(), shaped, "{q:?}");
    }
}

#[test]
fn every_quirk_is_exercised() {
    let special = [
        Quirk::OmitEventSeq,
        Quirk::IgnoreIdempotencyKey,
        Quirk::DisableRateLimit,
        Quirk::BareErrorBodies,
        Quirk::IncompleteNodeDocument,
        Quirk::IncompleteThreadObject,
        Quirk::RestampCreatedAt,
        Quirk::RejectMissingParent,
    ];
    for q in Quirk::ALL {
        if ACCEPTANCES.contains(&q) || q == Quirk::DropNullMembers || OBSERVED.contains(&q) {
            continue;
        }
        assert!(
            special.contains(&q) || REFUSALS.iter().any(|r| r.0 == q),
            "{q:?} has no test"
        );
    }
}

#[tokio::test]
async fn incomplete_node_document_drops_section_15_2_members() {
    for (q, complete) in [(None, true), (Some(Quirk::IncompleteNodeDocument), false)] {
        let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
        let n = TestNode::with_quirks(quirks, |_| {});
        let r = n
            .call("GET", "/.well-known/loom.json", None, None)
            .await
            .expect(200);
        assert_eq!(r.body.get("websocket_url").is_some(), complete, "{q:?}");
        assert_eq!(r.body.get("federation").is_some(), complete, "{q:?}");
    }
}

/// Quirks that make the node refuse something a correct node accepts.
const ACCEPTANCES: [Quirk; 5] = [
    Quirk::RejectLegacySignatures,
    Quirk::UnprefixedSignaturesOnly,
    Quirk::NonCanonicalSigningForm,
    Quirk::SignOverMeta,
    Quirk::RejectUnknownTypes,
];

/// The envelope a correct node accepts and the node with `q` refuses.
fn acceptable(q: Quirk, n: &TestNode, alice: &support::Ident) -> serde_json::Value {
    use loom_protocol::id::{KeyId, KeyKind};
    let mut e = alice.message(n, &n.thread_id(), None, &[alice], "x");
    let kid = KeyId::parse(&alice.key_id, KeyKind::Signing).unwrap();
    match q {
        Quirk::RejectLegacySignatures => {
            loom_protocol::envelope::sign_envelope_legacy(&mut e, &alice.key, &kid).unwrap();
            return e;
        }
        Quirk::UnprefixedSignaturesOnly => {}
        // 1.5 is "1.5" in both forms; 15.0 is "15" under RFC 8785 and "15.0" in serde_json.
        Quirk::NonCanonicalSigningForm => {
            e["content"]["structured"] =
                json!({"intent": "note.add@v1", "parameters": {"n": 15.0}});
        }
        Quirk::SignOverMeta => {
            let mut e = alice.sign(e);
            e["meta"] = json!({"client_note": "outside the signature"});
            return e;
        }
        Quirk::RejectUnknownTypes => e["type"] = "x_custom_kind".into(),
        _ => unreachable!(),
    }
    alice.sign(e)
}

#[tokio::test]
async fn acceptance_quirks_refuse_what_a_correct_node_accepts() {
    for q in ACCEPTANCES {
        for quirked in [false, true] {
            let n = node(quirked.then_some(q));
            let alice = n.register("alice", "human", 1).await;
            let e = acceptable(q, &n, &alice);
            let r = n
                .call("POST", "/v1/envelopes", Some(&alice.token), Some(e))
                .await;
            let want = if quirked { 400..500 } else { 201..202 };
            assert!(
                want.contains(&r.status.as_u16()),
                "{q:?} quirked={quirked}: {} {}",
                r.status,
                r.body
            );
        }
    }
}

#[tokio::test]
async fn drop_null_members_breaks_the_stored_signature() {
    for (q, verifies) in [(None, true), (Some(Quirk::DropNullMembers), false)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let r = alice
            .send(&n, alice.message(&n, &n.thread_id(), None, &[&alice], "x"))
            .await
            .expect(201);
        let key = alice.key.verifying_key();
        let ok = loom_protocol::verify_envelope_signature(&r.body, &key).is_ok();
        assert_eq!(ok, verifies, "{q:?}: {}", r.body);
    }
}

#[tokio::test]
async fn accept_bad_signature_also_accepts_malformed_signature_values() {
    for (q, status) in [(None, 401), (Some(Quirk::AcceptBadSignature), 201)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let mut e = alice.sign(alice.message(&n, &n.thread_id(), None, &[&alice], "x"));
        e["signature"]["value"] = "AAAA".into();
        n.call("POST", "/v1/envelopes", Some(&alice.token), Some(e))
            .await
            .expect(status);
    }
}

#[tokio::test]
async fn thread_object_created_at_and_pending_parent_quirks() {
    for q in [
        None,
        Some(Quirk::IncompleteThreadObject),
        Some(Quirk::RestampCreatedAt),
        Some(Quirk::RejectMissingParent),
        Some(Quirk::IgnoreAudience),
    ] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let bob = n.register("bob", "human", 2).await;
        let carol = n.register("carol", "human", 3).await;
        let t = n.thread_id();
        alice
            .send(&n, alice.message(&n, &t, None, &[&bob], "root"))
            .await
            .expect(201);
        let th = n
            .get(&format!("/v1/threads/{t}"), &alice.token)
            .await
            .expect(200);
        assert_eq!(
            th.body.get("cap_epoch").is_some(),
            q != Some(Quirk::IncompleteThreadObject),
            "{q:?}"
        );
        // A non-participant gets THREAD_NOT_FOUND unless audience checks are off.
        let outsider = n.get(&format!("/v1/threads/{t}"), &carol.token).await;
        if q == Some(Quirk::IgnoreAudience) {
            outsider.expect(200);
        } else {
            outsider.expect_error(404, "THREAD_NOT_FOUND");
        }
        let mut e = bob.message(&n, &t, Some(&n.envelope_id()), &[&alice], "orphan");
        e["created_at"] = "2020-01-01T00:00:00Z".into();
        let r = bob.send(&n, e).await;
        if q == Some(Quirk::RejectMissingParent) {
            r.expect_error(400, "ENVELOPE_INVALID");
            continue;
        }
        let r = r.expect(201);
        assert_eq!(r.body["meta"]["pending_parent"], true);
        assert_eq!(
            r.body["created_at"] == "2020-01-01T00:00:00Z",
            q != Some(Quirk::RestampCreatedAt),
            "{q:?}"
        );
    }
}

/// Quirks that break an observation rather than a refusal.
const OBSERVED: [Quirk; 8] = [
    Quirk::OmitDelegationRevokedEvent,
    Quirk::SkipEnvelopeSearchIndex,
    Quirk::SkipThreadSearchIndex,
    Quirk::UnstableEventIds,
    Quirk::IgnoreEventsSince,
    Quirk::IgnoreEventAudience,
    Quirk::RetractKeepsContent,
    Quirk::OmitRetractedEvent,
];

fn event_types(r: &Resp) -> Vec<String> {
    r.body["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether the rule `q` breaks holds on `n` (true on a correct node).
async fn holds(q: Quirk, n: &TestNode) -> bool {
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    let root = alice.message(n, &t, None, &[&bob], "root zebra");
    alice.send(n, root.clone()).await.expect(201);
    let rid = root["id"].as_str().unwrap();
    let reply = alice.message(n, &t, Some(rid), &[&bob], "reply");
    alice.send(n, reply.clone()).await.expect(201);
    match q {
        Quirk::OmitDelegationRevokedEvent => {
            let bot = n.register("bot", "agent", 9).await;
            let mut l = json!({
                "delegator": alice.address, "delegate": bot.address, "scope": ["message.*"],
                "created_at": n.now(), "expires_at": "2027-01-01T00:00:00Z",
                "revocable": true, "allow_sub_delegation": false,
            });
            let kid =
                loom_protocol::id::KeyId::parse(&alice.key_id, loom_protocol::id::KeyKind::Signing)
                    .unwrap();
            loom_protocol::delegation::sign_delegation_link(&mut l, &alice.key, &kid).unwrap();
            let r = n
                .call("POST", "/v1/delegations", Some(&alice.token), Some(l))
                .await
                .expect(201);
            let id = r.body["id"].as_str().unwrap();
            n.call(
                "DELETE",
                &format!("/v1/delegations/{id}"),
                Some(&alice.token),
                None,
            )
            .await
            .expect(200);
            let ev = n.get("/v1/events", &bot.token).await.expect(200);
            event_types(&ev).contains(&"delegation.revoked".to_owned())
        }
        Quirk::SkipEnvelopeSearchIndex => {
            let r = n.get("/v1/search?q=zebra", &bob.token).await.expect(200);
            !r.body["envelopes"].as_array().unwrap().is_empty()
        }
        Quirk::SkipThreadSearchIndex => {
            alice
                .send(
                    n,
                    alice.op(n, &t, "thread.update@v1", json!({"subject": "quokka"})),
                )
                .await
                .expect(201);
            let r = n.get("/v1/search?q=quokka", &bob.token).await.expect(200);
            !r.body["threads"].as_array().unwrap().is_empty()
        }
        Quirk::UnstableEventIds => {
            let a = n.get("/v1/events", &bob.token).await.expect(200);
            let b = n.get("/v1/events", &bob.token).await.expect(200);
            a.body["events"] == b.body["events"]
        }
        Quirk::IgnoreEventsSince => {
            let all = n.get("/v1/events", &bob.token).await.expect(200);
            let first = all.body["events"][0]["id"].as_str().unwrap().to_owned();
            let after = n
                .get(&format!("/v1/events?since={first}"), &bob.token)
                .await
                .expect(200);
            after.body["events"].as_array().unwrap().len()
                == all.body["events"].as_array().unwrap().len() - 1
        }
        Quirk::IgnoreEventAudience => {
            let r = n.get("/v1/events", &carol.token).await.expect(200);
            r.body["events"].as_array().unwrap().is_empty()
        }
        Quirk::RetractKeepsContent | Quirk::OmitRetractedEvent => {
            let id = reply["id"].as_str().unwrap();
            n.call(
                "DELETE",
                &format!("/v1/envelopes/{id}"),
                Some(&alice.token),
                None,
            )
            .await
            .expect(200);
            if q == Quirk::RetractKeepsContent {
                let r = n
                    .get(&format!("/v1/envelopes/{id}"), &bob.token)
                    .await
                    .expect(200);
                r.body["erased"] == true && r.body.get("content").is_none()
            } else {
                let ev = n.get("/v1/events", &bob.token).await.expect(200);
                event_types(&ev).contains(&"envelope.retracted".to_owned())
            }
        }
        _ => unreachable!("{q:?} is a refusal quirk"),
    }
}

#[tokio::test]
async fn each_observation_quirk_breaks_exactly_its_rule() {
    for q in OBSERVED {
        assert!(holds(q, &node(None)).await, "{q:?} on a correct node");
        assert!(!holds(q, &node(Some(q))).await, "{q:?} with the quirk");
    }
}
