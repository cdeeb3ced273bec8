//! Every quirk turns off exactly its check (DESIGN.md §4): each scenario below is refused
//! by a correct node with the expected §24.2 code and accepted by a node with that one
//! quirk, so a conformance case for the rule can be proven able to fail.

use crate::support::{Resp, TestNode};
use loom_node::{Quirk, Quirks};
use loom_protocol::keys::{public_key_to_spki_pem, sign_b64url, signing_key_from_seed};
use serde_json::json;

fn node(q: Option<Quirk>) -> TestNode {
    let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
    TestNode::with_quirks(quirks, |c| {
        c.limits.envelope.max_envelope_bytes = 4096;
        c.limits.max_body_bytes = 16_384;
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
            let task = |who: &crate::support::Ident, intent: &str, params: serde_json::Value| {
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
        Quirk::AcceptAnyContentType => {
            let body = json!({"identity": alice.address, "key_id": alice.key_id});
            n.raw(
                "POST",
                "/v1/auth/challenge",
                None,
                &[],
                Some(("text/plain", serde_json::to_vec(&body).unwrap())),
            )
            .await
        }
        Quirk::AcceptDuplicateJsonKeys => {
            let body = format!(
                r#"{{"identity":"x","identity":"{}","key_id":"{}"}}"#,
                alice.address, alice.key_id
            );
            n.raw(
                "POST",
                "/v1/auth/challenge",
                None,
                &[],
                Some(("application/json", body.into_bytes())),
            )
            .await
        }
        Quirk::IgnoreBodyLimit => {
            let body = json!({"identity": alice.address, "key_id": alice.key_id, "pad": "x".repeat(20_000)});
            n.call("POST", "/v1/auth/challenge", None, Some(body)).await
        }
        Quirk::AcceptBadLoginSignature => {
            let ch = auth_challenge(n, &alice).await;
            let sig = sign_b64url(&alice.key, None, b"not the nonce");
            token(n, &alice, &ch, &sig).await
        }
        Quirk::AllowChallengeReuse => {
            let ch = auth_challenge(n, &alice).await;
            let sig = sign_b64url(&alice.key, None, ch["nonce"].as_str().unwrap().as_bytes());
            token(n, &alice, &ch, &sig).await.expect(200);
            token(n, &alice, &ch, &sig).await
        }
        Quirk::TokenKindUnchecked => {
            n.call(
                "POST",
                "/v1/auth/refresh",
                None,
                Some(json!({"refresh_token": alice.token})),
            )
            .await
        }
        Quirk::AcceptBadRegistrationProof => register_raw(n, "mallory", 20, true, None).await,
        Quirk::AllowDuplicateRegistration => register_raw(n, "alice", 21, false, None).await,
        Quirk::AcceptNonCanonicalAddress => {
            register_raw(n, "dave", 22, false, Some("loom://Dave@node.test")).await
        }
        Quirk::AcceptAnyAttachmentId => {
            let mut e = alice.message(n, &t, Some(rid), &[&bob], "x");
            e["attachments"] = json!([{"id": "file_01ARZ3NDEKTSV4RRFFQ69G5FAV", "blob_id": "blob_01ARZ3NDEKTSV4RRFFQ69G5FAV", "hash": format!("sha256:{}", "0".repeat(64))}]);
            alice.send(n, e).await
        }
        Quirk::AcceptAgentWithoutDelegator
        | Quirk::AcceptUnboundedAgentScope
        | Quirk::AcceptIncompleteAgentDocument
        | Quirk::AcceptAgentMembersOnOtherTypes
        | Quirk::AcceptTeamWithoutMembers
        | Quirk::AcceptTeamWithoutRoutingPolicy
        | Quirk::AcceptServiceWithoutOperator => register_typed_violation(q, n).await,
        Quirk::AcceptAnyLocalPart => {
            n.post_registration("-dash-first", "human", 34, json!({}))
                .await
        }
        Quirk::AllowBridgeRegistration => {
            let bridged = format!("bridge://gina@{}", crate::support::DOMAIN);
            n.post_registration_as(&bridged, "human", 35, json!({}))
                .await
        }
        Quirk::AcceptAnyCapabilityId => {
            use loom_protocol::id::{KeyId, KeyKind};
            let ulid = n.node.service().env.ids().ulid();
            let mut token = json!({
                "loom": "1.1", "id": format!("tok_{ulid}"),
                "issued_by": alice.address, "issued_to": bob.address,
                "created_at": n.now(), "expires_at": null, "single_use": false, "epoch": 0,
                "grants": ["label"], "scope": {"thread_id": t},
            });
            let kid = KeyId::parse(&alice.key_id, KeyKind::Signing).unwrap();
            loom_protocol::capability::sign_capability_token(&mut token, &alice.key, &kid).unwrap();
            n.call("POST", "/v1/capabilities", Some(&alice.token), Some(token))
                .await
        }
        Quirk::AcceptParentIdArray => {
            let second = alice.message(n, &t, Some(rid), &[&bob], "second");
            alice.send(n, second.clone()).await.expect(201);
            let mut e = alice.message(n, &t, Some(rid), &[&bob], "merge-like reply");
            e["parent_id"] = json!([rid, second["id"]]);
            alice.send(n, e).await
        }
        Quirk::AcceptAnySigningKeyId => register_extra_key(n, "erin", 23, "signing_keys").await,
        Quirk::AcceptAnyEncryptionKeyId => {
            register_extra_key(n, "fred", 24, "encryption_keys").await
        }
        Quirk::OmittedAudienceAsRecipients => {
            let t = n.thread_id();
            let root = alice.message(n, &t, None, &[&bob, &carol], "root");
            alice.send(n, root.clone()).await.expect(201);
            let mut e = alice.message(n, &t, root["id"].as_str(), &[&bob], "to bob");
            e.as_object_mut().unwrap().remove("audience");
            let id = e["id"].as_str().unwrap().to_owned();
            alice.send(n, e).await.expect(201);
            n.get(&format!("/v1/envelopes/{id}"), &carol.token).await
        }
        Quirk::AcceptLoneSurrogates => {
            let e = alice.sign(alice.message(n, &t, Some(rid), &[&bob], "a \u{FFFD} b"));
            let text =
                serde_json::to_string(&e)
                    .unwrap()
                    .replacen("a \u{FFFD} b", "a \\ud800 b", 1);
            n.raw(
                "POST",
                "/v1/envelopes",
                Some(&alice.token),
                &[],
                Some(("application/json", text.into_bytes())),
            )
            .await
        }
        Quirk::AllowRevokingLastKey => {
            n.call(
                "DELETE",
                &format!("/v1/identity/me/keys/{}", alice.key_id),
                Some(&alice.token),
                None,
            )
            .await
        }
        Quirk::OmitEventSeq
        | Quirk::OmitOriginEventSeq
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
        | Quirk::IgnoreThreadDelegate
        | Quirk::ForkWithoutEntry
        | Quirk::ForkWithoutParentLink
        | Quirk::MergeLeavesForkOpen
        | Quirk::CaseSensitiveAddressLookup
        | Quirk::IgnoreThreadMerge
        | Quirk::MergeMovesEnvelopes
        | Quirk::IgnoreThreadLink
        | Quirk::SkipObserverDelivery
        | Quirk::OmitCapabilitySpentEvent
        | Quirk::SkipEnvelopeSearchIndex
        | Quirk::SkipThreadSearchIndex
        | Quirk::UnstableEventIds
        | Quirk::IgnoreEventsSince
        | Quirk::IgnoreEventAudience
        | Quirk::RetractKeepsContent
        | Quirk::OmitRetractedEvent
        | Quirk::AllowTls12
        | Quirk::NoHttp2
        | Quirk::NoJsonCharset
        | Quirk::ChallengeWithoutExpiry
        | Quirk::OmitRefreshToken
        | Quirk::IdentityDocumentWithoutKeys
        | Quirk::IgnoreKeyRevocation
        | Quirk::UnprefixedEventIds => {
            unreachable!("checked by their own tests")
        }
        q if crate::support::fed::federation_quirks().contains(&q) => {
            unreachable!("checked by tests/node/federation_quirks.rs")
        }
        _ => unreachable!("every quirk has a scenario"),
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
    (Quirk::AcceptAnyContentType, 415, "ENVELOPE_INVALID", 200),
    (Quirk::AcceptDuplicateJsonKeys, 400, "ENVELOPE_INVALID", 200),
    (Quirk::IgnoreBodyLimit, 413, "PAYLOAD_TOO_LARGE", 200),
    (
        Quirk::AcceptBadLoginSignature,
        401,
        "SIGNATURE_INVALID",
        200,
    ),
    (Quirk::AllowChallengeReuse, 401, "SIGNATURE_INVALID", 200),
    (Quirk::TokenKindUnchecked, 401, "SIGNATURE_INVALID", 200),
    (
        Quirk::AcceptBadRegistrationProof,
        401,
        "SIGNATURE_INVALID",
        201,
    ),
    (
        Quirk::AllowDuplicateRegistration,
        409,
        "ENVELOPE_DUPLICATE",
        201,
    ),
    (
        Quirk::AcceptNonCanonicalAddress,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (Quirk::AcceptLoneSurrogates, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AcceptAnyAttachmentId, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AcceptAnySigningKeyId, 400, "ENVELOPE_INVALID", 201),
    (
        Quirk::AcceptAnyEncryptionKeyId,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (Quirk::AcceptAnyLocalPart, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AllowBridgeRegistration, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AcceptAnyCapabilityId, 400, "ENVELOPE_INVALID", 201),
    (Quirk::AcceptParentIdArray, 400, "ENVELOPE_INVALID", 201),
    (
        Quirk::AcceptAgentWithoutDelegator,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptUnboundedAgentScope,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptIncompleteAgentDocument,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptAgentMembersOnOtherTypes,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptTeamWithoutMembers,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptTeamWithoutRoutingPolicy,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AcceptServiceWithoutOperator,
        400,
        "ENVELOPE_INVALID",
        201,
    ),
    (
        Quirk::AllowRevokingLastKey,
        409,
        "STATE_TRANSITION_INVALID",
        200,
    ),
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
    for (q, member) in [
        (Quirk::OmitEventSeq, "event_seq"),
        (Quirk::OmitOriginEventSeq, "origin_event_seq"),
    ] {
        for (quirk, present) in [(None, true), (Some(q), false)] {
            let n = node(quirk);
            let alice = n.register("alice", "human", 1).await;
            let r = alice
                .send(&n, alice.message(&n, &n.thread_id(), None, &[&alice], "x"))
                .await
                .expect(201);
            assert_eq!(r.body["meta"].get(member).is_some(), present, "{quirk:?}");
        }
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

/// The README's quirk table documents every quirk (and nothing else in it is a quirk name
/// the node does not know).
#[test]
fn every_quirk_has_a_readme_row() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Quirks (deliberate defects for the conformance self-test)")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a quirk section");
    for q in Quirk::ALL {
        assert!(
            section.contains(&format!("\n| `{}` |", q.name())),
            "{q:?} has no row in the README's quirk table"
        );
    }
    for row in section.lines().filter_map(|l| l.strip_prefix("| `")) {
        let name = row.split('`').next().unwrap_or("");
        assert!(
            Quirk::parse(name).is_some(),
            "README row for unknown quirk {name:?}"
        );
    }
}

#[test]
fn every_quirk_is_exercised() {
    let special = [
        Quirk::OmitEventSeq,
        Quirk::OmitOriginEventSeq,
        Quirk::IgnoreIdempotencyKey,
        Quirk::DisableRateLimit,
        Quirk::BareErrorBodies,
        Quirk::IncompleteNodeDocument,
        Quirk::IncompleteThreadObject,
        Quirk::RestampCreatedAt,
        Quirk::RejectMissingParent,
        Quirk::AllowTls12,
        Quirk::NoHttp2,
        Quirk::NoJsonCharset,
        Quirk::ChallengeWithoutExpiry,
        Quirk::OmitRefreshToken,
        Quirk::IdentityDocumentWithoutKeys,
        Quirk::IgnoreKeyRevocation,
        Quirk::OmittedAudienceAsRecipients,
        Quirk::UnprefixedEventIds,
    ];
    for q in Quirk::ALL {
        if ACCEPTANCES.contains(&q)
            || q == Quirk::DropNullMembers
            || OBSERVED.contains(&q)
            || crate::support::fed::federation_quirks().contains(&q)
        {
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
        for m in [
            "node_id",
            "api_url",
            "signing_keys",
            "supported_versions",
            "supported_profiles",
        ] {
            assert_eq!(r.body.get(m).is_some(), complete, "{q:?} {m}");
        }
        assert!(
            r.body["domain"].is_string(),
            "{q:?}: domain stays (harnesses need it)"
        );
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
fn acceptable(q: Quirk, n: &TestNode, alice: &crate::support::Ident) -> serde_json::Value {
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
const OBSERVED: [Quirk; 18] = [
    Quirk::CaseSensitiveAddressLookup,
    Quirk::ForkWithoutParentLink,
    Quirk::MergeLeavesForkOpen,
    Quirk::IgnoreThreadDelegate,
    Quirk::ForkWithoutEntry,
    Quirk::IgnoreThreadMerge,
    Quirk::MergeMovesEnvelopes,
    Quirk::IgnoreThreadLink,
    Quirk::SkipObserverDelivery,
    Quirk::OmitCapabilitySpentEvent,
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
    let thread = |who: &crate::support::Ident, id: &str| {
        let path = format!("/v1/threads/{id}");
        let token = who.token.clone();
        async move { n.get(&path, &token).await.expect(200).body }
    };
    match q {
        Quirk::IgnoreThreadDelegate => {
            let op = alice.op(
                n,
                &t,
                "thread.delegate@v1",
                json!({"identity": bob.address}),
            );
            alice.send(n, op).await.expect(201);
            let th = thread(&bob, &t).await;
            th["participants"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["identity"] == bob.address.as_str() && p["role"] == "owner")
        }
        Quirk::ForkWithoutEntry | Quirk::IgnoreThreadMerge | Quirk::MergeMovesEnvelopes => {
            let f = n.thread_id();
            alice
                .send(n, alice.message(n, &f, None, &[&bob], "fork root"))
                .await
                .expect(201);
            let op = alice.op(
                n,
                &t,
                "thread.fork@v1",
                json!({"fork_thread_id": f, "forked_from": rid}),
            );
            alice.send(n, op).await.expect(201);
            if q == Quirk::ForkWithoutEntry {
                return thread(&bob, &t).await["forks"][0]["fork_id"] == f.as_str();
            }
            let op = alice.op(n, &t, "thread.merge@v1", json!({"fork_thread_id": f}));
            alice.send(n, op).await.expect(201);
            if q == Quirk::IgnoreThreadMerge {
                return thread(&bob, &t).await["forks"][0]["state"] == "merged";
            }
            let r = n
                .get(&format!("/v1/threads/{f}/envelopes"), &bob.token)
                .await
                .expect(200);
            let list = r.body["envelopes"].as_array().unwrap().clone();
            list.len() == 1 && list.iter().all(|e| e["thread_id"] == f.as_str())
        }
        Quirk::CaseSensitiveAddressLookup => {
            let mixed = bob.address.replacen("loom://bob@", "loom://BoB@", 1);
            let path = format!("/v1/identity/{}", urlencode(&mixed));
            let r = n.call("GET", &path, None, None).await;
            r.status.as_u16() == 200 && r.body["id"] == bob.address.as_str()
        }
        Quirk::ForkWithoutParentLink | Quirk::MergeLeavesForkOpen => {
            // The fork thread does not exist before the operation: the node creates it.
            let f = n.thread_id();
            let op = alice.op(
                n,
                &t,
                "thread.fork@v1",
                json!({"fork_thread_id": f, "forked_from": rid}),
            );
            alice.send(n, op).await.expect(201);
            let fork = thread(&bob, &f).await;
            if q == Quirk::ForkWithoutParentLink {
                return fork["state"] == "active"
                    && fork["linked_threads"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|l| l["thread_id"] == t.as_str() && l["relation"] == "parent");
            }
            let op = alice.op(n, &t, "thread.merge@v1", json!({"fork_thread_id": f}));
            alice.send(n, op).await.expect(201);
            thread(&bob, &f).await["state"] == "merged"
        }
        Quirk::IgnoreThreadLink => {
            let other = n.thread_id();
            let op = alice.op(
                n,
                &t,
                "thread.link@v1",
                json!({"thread_id": other, "relation": "blocks"}),
            );
            alice.send(n, op).await.expect(201);
            thread(&bob, &t).await["linked_threads"][0]["relation"] == "blocks"
        }
        Quirk::SkipObserverDelivery => {
            let op = alice.op(
                n,
                &t,
                "thread.add_participant@v1",
                json!({"identity": carol.address, "role": "observer"}),
            );
            alice.send(n, op).await.expect(201);
            let ev = n.get("/v1/events", &carol.token).await.expect(200);
            event_types(&ev).contains(&"thread.updated".to_owned())
        }
        Quirk::OmitCapabilitySpentEvent => {
            let mut once = json!({
                "loom": "1.1",
                "id": n.node.service().env.ids().capability().to_string(),
                "issued_by": alice.address, "issued_to": bob.address,
                "created_at": n.now(), "expires_at": null, "single_use": true, "epoch": 0,
                "grants": ["add_participant"], "scope": {"thread_id": t},
            });
            let kid =
                loom_protocol::id::KeyId::parse(&alice.key_id, loom_protocol::id::KeyKind::Signing)
                    .unwrap();
            loom_protocol::capability::sign_capability_token(&mut once, &alice.key, &kid).unwrap();
            let op = bob.op(
                n,
                &t,
                "thread.add_participant@v1",
                json!({"identity": carol.address, "role": "participant", "capability_token": once}),
            );
            bob.send(n, op).await.expect(201);
            let ev = n.get("/v1/events", &bob.token).await.expect(200);
            event_types(&ev).contains(&"capability.spent".to_owned())
        }
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

async fn auth_challenge(n: &TestNode, who: &crate::support::Ident) -> serde_json::Value {
    n.call(
        "POST",
        "/v1/auth/challenge",
        None,
        Some(json!({"identity": who.address, "key_id": who.key_id})),
    )
    .await
    .expect(200)
    .body
}

async fn token(
    n: &TestNode,
    who: &crate::support::Ident,
    ch: &serde_json::Value,
    sig: &str,
) -> Resp {
    n.call(
        "POST",
        "/v1/auth/token",
        None,
        Some(json!({"identity": who.address, "key_id": who.key_id, "challenge_id": ch["challenge_id"], "signature": sig})),
    )
    .await
}

/// A registration of `local@node.test` (key from `seed`) with a proof that verifies unless
/// `bad_proof`; `id` replaces the document's address (the challenge stays lowercase).
async fn register_raw(
    n: &TestNode,
    local: &str,
    seed: u8,
    bad_proof: bool,
    id: Option<&str>,
) -> Resp {
    let address = format!("loom://{local}@{}", crate::support::DOMAIN);
    let key = signing_key_from_seed(&[seed; 32]);
    let key_id = format!("k_sign_{local}_1");
    let ch = n
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(json!({"identity": address, "key_id": key_id})),
        )
        .await
        .expect(200);
    let mut req = json!({
        "id": id.unwrap_or(&address),
        "type": "human",
        "display_name": local,
        "signing_keys": [{"key_id": key_id, "public_key_pem": public_key_to_spki_pem(&key.verifying_key())}],
    });
    let hash = loom_node::service::identity::registration_document_hash(&req);
    let nonce = ch.body["nonce"].as_str().unwrap();
    let nonce = if bad_proof { "wrong" } else { nonce };
    let text = loom_node::service::identity::registration_text(&address, &key_id, &hash, nonce);
    req["registration_proof"] = json!({
        "challenge_id": ch.body["challenge_id"],
        "key_id": key_id,
        "signature": sign_b64url(&key, None, text.as_bytes()),
    });
    n.call("POST", "/v1/identity", None, Some(req)).await
}

/// The registration each type-member quirk waives (v1.1 §6.3/§6.4): a correct agent, team
/// or service document with exactly one rule broken.
async fn register_typed_violation(q: Quirk, n: &TestNode) -> Resp {
    let (local, kind, seed) = match q {
        Quirk::AcceptTeamWithoutMembers | Quirk::AcceptTeamWithoutRoutingPolicy => {
            ("desk", "team", 30)
        }
        Quirk::AcceptServiceWithoutOperator => ("cron", "service", 31),
        Quirk::AcceptAgentMembersOnOtherTypes => ("mallory", "human", 32),
        _ => ("bot", "agent", 33),
    };
    let mut members = n.type_members("bot", "agent", 33).await;
    if kind != "agent" {
        members = match q {
            Quirk::AcceptAgentMembersOnOtherTypes => json!({"delegator": members["delegator"]}),
            _ => n.type_members(local, kind, seed).await,
        };
    }
    let o = members.as_object_mut().unwrap();
    match q {
        Quirk::AcceptAgentWithoutDelegator => drop(o.remove("delegator")),
        Quirk::AcceptUnboundedAgentScope => drop(o.insert("delegation_scope".into(), json!([]))),
        Quirk::AcceptIncompleteAgentDocument => drop(o.remove("delegation_signature")),
        Quirk::AcceptTeamWithoutMembers => drop(o.remove("members")),
        Quirk::AcceptTeamWithoutRoutingPolicy => drop(o.remove("routing_policy")),
        Quirk::AcceptServiceWithoutOperator => drop(o.remove("operator")),
        _ => {}
    }
    n.post_registration(local, kind, seed, members).await
}

/// Registers `local` with a second key in `member` whose id has no typed prefix.
async fn register_extra_key(n: &TestNode, local: &str, seed: u8, member: &str) -> Resp {
    let address = format!("loom://{local}@{}", crate::support::DOMAIN);
    let key = signing_key_from_seed(&[seed; 32]);
    let key_id = format!("k_sign_{local}_1");
    let ch = n
        .call(
            "POST",
            "/v1/identity/challenge",
            None,
            Some(json!({"identity": address, "key_id": key_id})),
        )
        .await
        .expect(200);
    let pem = public_key_to_spki_pem(&key.verifying_key());
    let mut req = json!({
        "id": address,
        "type": "human",
        "display_name": local,
        "signing_keys": [{"key_id": key_id, "public_key_pem": pem}],
    });
    let extra = if member == "signing_keys" {
        json!({"key_id": format!("dev_{local}_2"), "public_key_pem": pem})
    } else {
        json!({"key_id": format!("dev_{local}_x"), "public_key": "A".repeat(43)})
    };
    if member == "signing_keys" {
        req["signing_keys"].as_array_mut().unwrap().push(extra);
    } else {
        req[member] = json!([extra]);
    }
    let hash = loom_node::service::identity::registration_document_hash(&req);
    let nonce = ch.body["nonce"].as_str().unwrap();
    let text = loom_node::service::identity::registration_text(&address, &key_id, &hash, nonce);
    req["registration_proof"] = json!({
        "challenge_id": ch.body["challenge_id"],
        "key_id": key_id,
        "signature": sign_b64url(&key, None, text.as_bytes()),
    });
    n.call("POST", "/v1/identity", None, Some(req)).await
}

#[tokio::test]
async fn response_shape_quirks_drop_what_they_name() {
    for q in [
        None,
        Some(Quirk::NoJsonCharset),
        Some(Quirk::ChallengeWithoutExpiry),
        Some(Quirk::OmitRefreshToken),
        Some(Quirk::IdentityDocumentWithoutKeys),
    ] {
        let n = node(q);
        register_raw(&n, "alice", 1, false, None).await.expect(201);
        let mut alice = crate::support::Ident {
            address: format!("loom://alice@{}", crate::support::DOMAIN),
            key: signing_key_from_seed(&[1; 32]),
            key_id: "k_sign_alice_1".into(),
            token: String::new(),
            refresh: String::new(),
            kind: "human".into(),
        };
        let r = n
            .call("GET", "/.well-known/loom.json", None, None)
            .await
            .expect(200);
        assert_eq!(
            r.headers["content-type"] == "application/json; charset=utf-8",
            q != Some(Quirk::NoJsonCharset),
            "{q:?}"
        );
        let ch = auth_challenge(&n, &alice).await;
        assert_eq!(
            ch.get("expires_at").is_some(),
            q != Some(Quirk::ChallengeWithoutExpiry),
            "{q:?}"
        );
        let sig = sign_b64url(&alice.key, None, ch["nonce"].as_str().unwrap().as_bytes());
        let t = token(&n, &alice, &ch, &sig).await.expect(200);
        alice.token = t.body["access_token"].as_str().unwrap().to_owned();
        assert_eq!(
            t.body.get("refresh_token").is_some(),
            q != Some(Quirk::OmitRefreshToken),
            "{q:?}"
        );
        let me = n.get("/v1/identity/me", &alice.token).await.expect(200);
        assert_eq!(
            me.body["public_keys"]["signing"].as_array().unwrap().len(),
            usize::from(q != Some(Quirk::IdentityDocumentWithoutKeys)),
            "{q:?}"
        );
    }
}

#[tokio::test]
async fn ignore_key_revocation_leaves_the_key_usable() {
    for (q, revoked) in [(None, true), (Some(Quirk::IgnoreKeyRevocation), false)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let key = signing_key_from_seed(&[9; 32]);
        let kid = "k_sign_alice_2";
        n.call(
            "POST",
            "/v1/identity/me/keys",
            Some(&alice.token),
            Some(json!({"key_id": kid, "public_key_pem": public_key_to_spki_pem(&key.verifying_key())})),
        )
        .await
        .expect(201);
        n.call(
            "DELETE",
            &format!("/v1/identity/me/keys/{kid}"),
            Some(&alice.token),
            None,
        )
        .await
        .expect(200);
        let r = n
            .call(
                "POST",
                "/v1/auth/challenge",
                None,
                Some(json!({"identity": alice.address, "key_id": kid})),
            )
            .await;
        assert_eq!(r.status.as_u16(), if revoked { 401 } else { 200 }, "{q:?}");
    }
}

#[tokio::test]
async fn tls_quirks_allow_tls12_and_drop_h2() {
    use loom_node::config::TlsSettings;
    use loom_node::quirks::QuirkNode;
    use loom_node::tls::server_tls_with;
    use rustls::pki_types::ServerName;
    use std::sync::Arc;
    for q in [None, Some(Quirk::AllowTls12), Some(Quirk::NoHttp2)] {
        let quirks = q.map_or_else(Quirks::none, |q| Quirks::none().with(q));
        let rules = QuirkNode::new(quirks);
        let tls =
            server_tls_with(&TlsSettings::SelfSigned, crate::support::DOMAIN, &rules).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tls.acceptor.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    if let Ok(mut s) = acceptor.accept(tcp).await {
                        let _ = tokio::io::AsyncWriteExt::shutdown(&mut s).await;
                    }
                });
            }
        });
        let mut roots = rustls::RootCertStore::empty();
        roots.add(tls.cert_chain[0].clone()).unwrap();
        let connect = |versions: &[&'static rustls::SupportedProtocolVersion]| {
            let mut c = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
            c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            tokio_rustls::TlsConnector::from(Arc::new(c))
        };
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls12 = connect(&[&rustls::version::TLS12])
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await;
        assert_eq!(tls12.is_ok(), q == Some(Quirk::AllowTls12), "{q:?}");
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let tls13 = connect(&[&rustls::version::TLS13])
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        let alpn = tls13.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let want: &[u8] = if q == Some(Quirk::NoHttp2) {
            b"http/1.1"
        } else {
            b"h2"
        };
        assert_eq!(alpn.as_deref(), Some(want), "{q:?}");
    }
}

#[tokio::test]
async fn skip_envelope_validation_waives_head_members_and_op_family() {
    for (q, status) in [(None, 400), (Some(Quirk::SkipEnvelopeValidation), 201)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        let t = n.thread_id();
        let root = alice.message(&n, &t, None, &[&alice], "root");
        alice.send(&n, root).await.expect(201);
        for member in ["id", "thread_id", "created_at"] {
            let mut e = alice.message(&n, &n.thread_id(), None, &[&alice], "x");
            e.as_object_mut().unwrap().remove(member);
            let r = alice.send(&n, e).await;
            assert_eq!(
                r.status.as_u16(),
                status,
                "{q:?} without {member}: {}",
                r.body
            );
        }
        let r = alice
            .send(&n, alice.op(&n, &t, "note.add@v1", json!({})))
            .await;
        assert_eq!(r.status.as_u16(), status, "{q:?} note.add op: {}", r.body);
    }
}

#[tokio::test]
async fn omitted_audience_as_recipients_hides_replies_from_participants() {
    let q = Quirk::OmittedAudienceAsRecipients;
    violate(q, &node(None)).await.expect(200);
    let r = violate(q, &node(Some(q))).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.body);
    assert_eq!(r.body["error"]["code"], "AUDIENCE_DENIED");
}

#[tokio::test]
async fn unprefixed_event_ids_drop_the_evt_prefix() {
    for (q, prefixed) in [(None, true), (Some(Quirk::UnprefixedEventIds), false)] {
        let n = node(q);
        let alice = n.register("alice", "human", 1).await;
        alice
            .send(&n, alice.message(&n, &n.thread_id(), None, &[&alice], "x"))
            .await
            .expect(201);
        let r = n.get("/v1/events", &alice.token).await.expect(200);
        let evs = r.body["events"].as_array().cloned().unwrap_or_default();
        assert!(!evs.is_empty(), "{q:?}: {}", r.body);
        for e in evs {
            let id = e["id"].as_str().or(e["event_id"].as_str()).unwrap_or("");
            assert_eq!(id.starts_with("evt_"), prefixed, "{q:?}: {e}");
        }
    }
}

/// Percent-encodes an address for a path segment (`:`, `/`, `@`).
fn urlencode(s: &str) -> String {
    s.replace(':', "%3A")
        .replace('/', "%2F")
        .replace('@', "%40")
}
