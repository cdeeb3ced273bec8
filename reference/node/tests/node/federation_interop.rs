//! The reference node federates with the existing v1.1 implementation out of the box (issue
//! 30): the de-facto forms of DESIGN.md §9, spoken by `crate::support::defacto` (a peer written from
//! DESIGN.md §9, not from our code paths), in both directions; and two nodes of ours, one of
//! them running a legal variant, still understand each other. Each quirk that breaks one of
//! these forms is proven in `tests/node/federation_quirks.rs`.

use crate::support::defacto::{Behaviour, receipt_accepts, with_defacto};
use crate::support::fed::{fed_node, free_port, serve};
use loom_node::{Quirk, Quirks, Storage};
use loom_protocol::http_sig::{RequestParts, sign_request_with_epoch};
use serde_json::json;

/// A message, a reply in the same thread, and a second thread started on the other side:
/// each crosses, in both directions, with nothing bridged by hand.
#[tokio::test]
async fn messages_and_replies_cross_in_both_directions() {
    let w = with_defacto(Quirks::none()).await;
    // js.test → a.test, five lines beside `X-LOOM-Trust-Epoch: 1`; receipt under `receipt`.
    let t = w.a.thread_id();
    let first_id = w.a.envelope_id();
    let first =
        w.js.message(&w.carol, &w.alice.address, &t, None, &first_id);
    let r = w.deliver_from_js(first).await.expect(202);
    let key = w.a.node.service().node_key().1.verifying_key();
    assert!(receipt_accepts(&r.body, &key, &first_id), "{}", r.body);
    assert_eq!(r.body["rejected"], json!([]));
    let got =
        w.a.get(&format!("/v1/envelopes/{first_id}"), &w.alice.token)
            .await
            .expect(200)
            .body;
    assert_eq!(got["from"]["identity"], w.carol.address);

    // a.test → js.test: alice replies in carol's thread; the de-facto node verifies our
    // request signature, our identity document's node signature and reads our receipt.
    let mut reply = w
        .alice
        .message(&w.a, &t, Some(&first_id), &[], "reply to carol");
    reply["to"] = json!([{"identity": w.carol.address, "role": "primary"}]);
    let sent = w.alice.send(&w.a, reply).await.expect(201).body;
    let report = w.a.tick().await;
    assert_eq!(report.delivered, 1, "{:?}", w.js.refusals());
    let held = w.js.stored();
    let on_js = &held[sent["id"].as_str().unwrap()];
    assert_eq!(on_js["parent_id"], first_id.as_str());
    assert_eq!(on_js["thread_id"], t.as_str());

    // And a new thread from alice.
    let (id, state) = w.to_js().await;
    assert_eq!(state, "delivered");
    assert!(w.js.stored().contains_key(&id));
    assert!(w.js.refusals().is_empty(), "{:?}", w.js.refusals());
}

/// Its agents' documents carry `agent_info` and `encryption_keys`, both inside the node
/// signature; the agent acts under a link whose signature covers `signature_context`.
#[tokio::test]
async fn its_agents_are_accepted_with_their_delegation() {
    let w = with_defacto(Quirks::none()).await;
    let (env, _) = w.bot_message();
    let r = w.deliver_from_js(env).await;
    assert_eq!(r.status.as_u16(), 202, "{}", r.body);
    // Its human with an encryption key is accepted too.
    w.deliver_from_js(w.carol_message()).await.expect(202);
}

/// A document whose node signature does not verify is refused as what it is: 401
/// `SIGNATURE_INVALID` naming `node_signature` and the node that served it — not an
/// unknown identity.
#[tokio::test]
async fn a_document_that_does_not_verify_is_named() {
    let w = with_defacto(Quirks::none()).await;
    w.js.set(Behaviour {
        tamper_identity_documents: true,
        ..Default::default()
    });
    let (env, id) = w.bot_message();
    let r = w
        .deliver_from_js(env)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let details = &r.body["error"]["details"];
    assert_eq!(details["field"], "node_signature", "{}", r.body);
    let reason = details["reason"].as_str().unwrap();
    assert!(
        reason.contains("js.test") && reason.contains(&w.bot.address),
        "{reason}"
    );
    // Nothing was stored.
    w.a.get(&format!("/v1/envelopes/{id}"), &w.alice.token)
        .await
        .expect(404);
    // carol's document (no agent_info to tamper with) still verifies.
    w.deliver_from_js(w.carol_message()).await.expect(202);
}

/// After a lost answer the peer's partial receipt names the envelope `ENVELOPE_DUPLICATE`:
/// delivered, no `receipt.failed` (the quirk test counts the receipts).
#[tokio::test]
async fn a_duplicate_in_a_partial_receipt_is_delivered() {
    let w = with_defacto(Quirks::none()).await;
    w.js.set(Behaviour {
        lose_next_answer: true,
        ..Default::default()
    });
    let (id, first) = w.to_js().await;
    assert_eq!(first, "queued");
    w.a.clock.advance_ms(3_600_000);
    let report = w.a.tick().await;
    assert_eq!((report.delivered, report.failed), (1, 0), "{id}");
}

/// Two nodes of ours where each runs a legal variant of the forms: a.test still signs
/// identity documents over the full-key form (our older nodes) and sends deliveries signed
/// with six lines, or five lines beside an epoch header; b.test answers deliveries with the
/// receipt at the top level (our older nodes), which a.test's outbox still reads.
#[tokio::test]
async fn our_nodes_read_each_others_other_forms() {
    let (pa, pb) = (free_port().await, free_port().await);
    let older = Quirks::none().with(Quirk::FullKeyNodeSignature);
    let a = fed_node("a.test", "b.test", pb, Storage::Memory, older, |_| {});
    let top_level = Quirks::none().with(Quirk::TopLevelReceipt);
    let b = fed_node("b.test", "a.test", pa, Storage::Memory, top_level, |_| {});
    let (_sa, _sb) = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let (key_id, key) = {
        let (k, v) = a.node.service().node_key();
        (k.to_owned(), v.clone())
    };
    for (what, epoch_header, signed_epoch) in [
        ("five lines", None, None),
        ("five lines beside the header", Some("1"), None),
        ("six lines", Some("1"), Some("1")),
    ] {
        let env = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], what));
        let id = env["id"].as_str().unwrap().to_owned();
        let (_, body) = a.signed_delivery(vec![env]);
        let mut h = sign_request_with_epoch(
            &RequestParts {
                method: "POST",
                path: crate::support::defacto::DELIVER,
                body: &body,
            },
            "a.test",
            &key_id,
            &key,
            loom_protocol::Timestamp::parse(&a.now()).unwrap(),
            a.envelope_id().as_bytes(),
            signed_epoch,
        );
        h.trust_epoch = epoch_header.map(str::to_owned);
        let headers: Vec<(String, String)> = h
            .all_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let r = b.deliver(&headers, body).await;
        assert_eq!(r.status.as_u16(), 202, "{what}: {}", r.body);
        assert_eq!(r.body["accepted_envelope_ids"], json!([id]), "{what}");
    }
    // b verified alice's full-key identity document in the loop above; through the outbox,
    // a reads b's top-level receipt.
    let env = alice.message(&a, &a.thread_id(), None, &[&bob], "via the outbox");
    alice.send(&a, env).await.expect(201);
    assert_eq!(a.tick().await.delivered, 1);
}
