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
        | Quirk::IgnoreIdempotencyKey
        | Quirk::DisableRateLimit
        | Quirk::BareErrorBodies
        | Quirk::IncompleteNodeDocument
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
    ];
    for q in Quirk::ALL {
        if OBSERVED.contains(&q) {
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
