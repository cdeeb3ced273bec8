//! Capability tokens across nodes (v1.1 §12: tokens are "portable across federation:
//! self-contained, signed, and verifiable offline"; §12.4; §15.4 "Enforce delegation chains
//! and capability rules"). alice@a.test owns a thread and issues a token to bob@b.test; the
//! token's signature is checked with alice's keys as her home node vouches for them, both
//! when bob submits on b.test and when b.test delivers his operation to a third node.

use crate::support::fed::{Served, fed_node, free_port, serve};
use crate::support::{Ident, TestNode};
use loom_node::{Quirks, Storage};
use serde_json::{Value, json};

/// Three nodes on loopback, each a configured plain-http peer of the other two.
async fn trio() -> (Vec<TestNode>, Vec<Served>, Vec<u16>) {
    let ports = [free_port().await, free_port().await, free_port().await];
    let names = ["a.test", "b.test", "c.test"];
    let mut nodes = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let (j, k) = ((i + 1) % 3, (i + 2) % 3);
        let other = (names[k], ports[k]);
        nodes.push(fed_node(
            name,
            names[j],
            ports[j],
            Storage::Memory,
            Quirks::none(),
            |c| {
                c.federation
                    .peers
                    .insert(other.0.into(), format!("http://127.0.0.1:{}", other.1));
            },
        ));
    }
    let mut served = Vec::new();
    for (n, p) in nodes.iter().zip(ports) {
        served.push(serve(n, p).await);
    }
    (nodes, served, ports.to_vec())
}

/// A token from `issuer` (signed with `key` under the issuer's key id) to `holder` on
/// `thread`.
fn token(
    n: &TestNode,
    issuer: &Ident,
    holder: &Ident,
    thread: &str,
    grants: &[&str],
    expires_at: Option<&str>,
    key: &ed25519_dalek::SigningKey,
) -> Value {
    let fields = json!({"expires_at": expires_at});
    crate::support::capability_token(n, issuer, holder, thread, grants, key, fields)
}

fn resolve_op(n: &TestNode, actor: &Ident, t: &str, token: &Value) -> Value {
    actor.op(
        n,
        t,
        "thread.resolve@v1",
        json!({"capability_token": token}),
    )
}

async fn thread(n: &TestNode, who: &Ident, t: &str) -> Value {
    n.get(&format!("/v1/threads/{t}"), &who.token)
        .await
        .expect(200)
        .body
}

/// alice (on `a`) starts a thread with bob (on `b`), delivered to b.test: `(alice, bob, t)`.
async fn alices_thread_on_b(a: &TestNode, b: &TestNode) -> (Ident, Ident, String) {
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let t = a.thread_id();
    alice
        .send(a, alice.message(a, &t, None, &[&bob], "hello"))
        .await
        .expect(201);
    assert_eq!(a.tick().await.delivered, 1);
    (alice, bob, t)
}

#[tokio::test]
async fn a_token_issued_on_another_node_authorizes_on_the_holders_node_and_on_delivery() {
    let (nodes, _served, _) = trio().await;
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let carol = c.register("carol", "human", 3).await;
    let t = a.thread_id();
    let root = alice.message(a, &t, None, &[&bob, &carol], "a thread for three nodes");
    alice.send(a, root).await.expect(201);
    assert_eq!(a.tick().await.delivered, 2, "{:?}", a.outbox());
    assert_eq!(
        thread(b, &bob, &t).await["state"],
        thread(a, &alice, &t).await["state"]
    );

    // bob is no owner: without a token he may not resolve the thread.
    let bare = bob.op(b, &t, "thread.resolve@v1", json!({}));
    bob.send(b, bare)
        .await
        .expect_error(403, "CAPABILITY_DENIED");

    // alice's token, used on b.test: verified with alice's keys from a.test.
    let tok = token(a, &alice, &bob, &t, &["resolve"], None, &alice.key);
    let op = bob
        .send(b, resolve_op(b, &bob, &t, &tok))
        .await
        .expect(201)
        .body;
    let op_id = op["id"].as_str().unwrap().to_owned();
    assert_eq!(thread(b, &bob, &t).await["state"], "resolved");

    // b.test replicates the operation to a.test (alice local there) and c.test, which
    // checks the token with alice's keys as a.test vouched for them.
    let r = b.tick().await;
    assert_eq!((r.delivered, r.failed), (2, 0), "{:?}", b.outbox());
    for (n, who) in [(a, &alice), (c, &carol)] {
        let ids: Vec<String> = n
            .thread_envelopes(&t, who)
            .await
            .iter()
            .filter_map(|e| e["id"].as_str().map(str::to_owned))
            .collect();
        assert!(ids.contains(&op_id), "{} stored the operation", n.domain());
        assert_eq!(
            thread(n, who, &t).await["state"],
            "resolved",
            "{}",
            n.domain()
        );
    }
}

#[tokio::test]
async fn bad_remote_tokens_are_still_refused_and_change_nothing() {
    let (nodes, _served, _) = trio().await;
    let (a, b) = (&nodes[0], &nodes[1]);
    let (alice, bob, t) = alices_thread_on_b(a, b).await;
    let mallory = b.register("mallory", "human", 9).await;
    let other_thread = a.thread_id();
    let forged_key = ed25519_dalek::SigningKey::from_bytes(&[77; 32]);
    let past = "2020-01-01T00:00:00Z";
    let cases = [
        (
            "signed by another key under alice's key id",
            token(a, &alice, &bob, &t, &["resolve"], None, &forged_key),
        ),
        (
            "expired",
            token(a, &alice, &bob, &t, &["resolve"], Some(past), &alice.key),
        ),
        (
            "for another thread",
            token(
                a,
                &alice,
                &bob,
                &other_thread,
                &["resolve"],
                None,
                &alice.key,
            ),
        ),
        (
            "for another grant",
            token(a, &alice, &bob, &t, &["label"], None, &alice.key),
        ),
        (
            "issued by a non-owner of b.test",
            token(b, &mallory, &bob, &t, &["resolve"], None, &mallory.key),
        ),
    ];
    let before = thread(b, &bob, &t).await;
    let stored = b.thread_envelopes(&t, &bob).await.len();
    for (what, tok) in cases {
        let r = bob
            .send(b, resolve_op(b, &bob, &t, &tok))
            .await
            .expect_error(403, "CAPABILITY_DENIED");
        assert!(
            r.body["error"]["details"]["field"]
                .as_str()
                .unwrap_or("")
                .contains("capability_token"),
            "{what}: {}",
            r.body
        );
        assert_eq!(thread(b, &bob, &t).await, before, "{what}");
        assert_eq!(b.thread_envelopes(&t, &bob).await.len(), stored, "{what}");
    }
    assert!(b.outbox().is_empty(), "nothing refused was queued");
}

/// alice's thread on b.test and a `resolve` token for bob from carol@c.test, whose node
/// then goes down before b.test ever resolved her: `(nodes, served, bob, t, token)`.
async fn carols_token_with_her_node_down() -> (Vec<TestNode>, Vec<Served>, Ident, String, Value) {
    let (nodes, mut served, _) = trio().await;
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    let (_alice, bob, t) = alices_thread_on_b(a, b).await;
    let carol = c.register("carol", "human", 3).await;
    served.pop().unwrap().stop().await;
    let tok = token(c, &carol, &bob, &t, &["resolve"], None, &carol.key);
    (nodes, served, bob, t, tok)
}

#[tokio::test]
async fn an_unreachable_issuer_home_node_is_a_clear_refusal() {
    // c.test is down; carol's token cannot be checked.
    let (nodes, _served, bob, t, tok) = carols_token_with_her_node_down().await;
    let b = &nodes[1];
    let before = thread(b, &bob, &t).await;
    let r = bob
        .send(b, resolve_op(b, &bob, &t, &tok))
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    let err = &r.body["error"];
    let msg = err["message"].as_str().unwrap_or("").to_owned() + &err.to_string();
    assert!(
        msg.contains("c.test") && msg.contains("could not be reached"),
        "{msg}"
    );
    assert_eq!(
        err["details"]["field"],
        "content.structured.parameters.capability_token.issued_by"
    );
    assert_eq!(thread(b, &bob, &t).await, before);
    assert!(b.outbox().is_empty());
}

/// The issuer's home node is asked only about a token in an envelope admission accepted:
/// a junk envelope (here a broken signature, §7.3) is refused for what is wrong with it,
/// without the node reaching out to the domain its token names.
#[tokio::test]
async fn a_junk_envelope_is_refused_before_its_token_issuer_is_fetched() {
    let (nodes, _served, bob, t, tok) = carols_token_with_her_node_down().await;
    let b = &nodes[1];
    let mut env = bob.sign(resolve_op(b, &bob, &t, &tok));
    let sig = env["signature"]["value"].as_str().unwrap().to_owned();
    let flipped = if sig.starts_with('A') { "B" } else { "A" };
    env["signature"]["value"] = json!(format!("{flipped}{}", &sig[1..]));
    let r = b
        .call("POST", "/v1/envelopes", Some(&bob.token), Some(env))
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    let msg = r.body["error"].to_string();
    assert!(!msg.contains("could not be reached"), "{msg}");
}
