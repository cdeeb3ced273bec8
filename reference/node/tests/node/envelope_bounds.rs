//! Bounded work per envelope (issue 19, item 4): every per-envelope limit of
//! `loom_protocol::bounds` is enforced on the local write path (`POST /v1/envelopes`) and on
//! the federation inbound path (`POST /v1/federation/deliver`), configurable in
//! `NodeConfig.limits`; each refusal is a §24.1 `PAYLOAD_TOO_LARGE` body (v1.1 §24.2) whose
//! details name the field, the limit, its maximum and the actual count, and it leaves the
//! store exactly as it was.

use crate::support::fed::{fed_pair, serve};
use crate::support::{Ident, Resp, TestNode};
use serde_json::{Value, json};

fn fingerprint(n: &TestNode) -> String {
    n.node.service().store.fingerprint().unwrap()
}

/// `n` recipients `loom://u{i}@d{i % domains}.test`, the first primary, the rest cc.
fn recipients(n: usize, domains: usize) -> Value {
    (0..n)
        .map(|i| {
            json!({
                "identity": format!("loom://u{i}@d{}.test", i % domains),
                "role": if i == 0 { "primary" } else { "cc" },
            })
        })
        .collect()
}

/// Asserts the §24.1 refusal names `field`, `limit = max` and the actual count.
fn assert_names_limit(r: Resp, field: &str, limit: &str, max: usize, actual: usize) {
    let r = r.expect_error(413, "PAYLOAD_TOO_LARGE");
    let d = &r.body["error"]["details"];
    assert_eq!(d["field"], field, "{}", r.body);
    let reason = d["reason"].as_str().unwrap();
    assert!(reason.contains(&format!("{limit} = {max}")), "{reason}");
    assert!(reason.contains(&format!("has {actual}")), "{reason}");
    assert!(
        d["section"].as_str().unwrap().contains("§24.2"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn the_issue_cases_are_refused_by_default_and_change_nothing() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let before = fingerprint(&n);
    // 4,000 unregistered recipients (issue 19: 48 ms and +18 MB when accepted).
    let mut env = alice.message(&n, &n.thread_id(), None, &[&bob], "fan-out");
    env["to"] = recipients(4_000, 1);
    assert_names_limit(
        alice.send(&n, env).await,
        "to",
        "max_recipients",
        1_000,
        4_000,
    );
    // A 100,000-element array in extension data.
    let mut env = alice.message(&n, &n.thread_id(), None, &[&bob], "extensions");
    env["extensions"] = json!({"org.example.rows": vec![0; 100_000]});
    assert_names_limit(
        alice.send(&n, env).await,
        "extensions.org.example.rows",
        "max_array_len",
        1_000,
        100_000,
    );
    assert_eq!(
        fingerprint(&n),
        before,
        "a refused envelope changes nothing"
    );
}

#[tokio::test]
async fn every_limit_is_configurable_exact_at_the_limit_and_named_beyond_it() {
    let n = TestNode::with(|c| {
        c.limits.envelope.max_recipients = 3;
        c.limits.envelope.max_recipient_domains = 2;
        c.limits.envelope.max_audience_identities = 2;
        c.limits.envelope.max_attachments = 1;
        c.limits.envelope.max_references = 2;
        c.limits.envelope.max_json_depth = 6;
        c.limits.envelope.max_array_len = 4;
        c.limits.envelope.max_json_nodes = 60;
    });
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let t = n.thread_id();
    let base = |n: &TestNode| alice.message(n, &t, None, &[&bob], "b");
    type Tweak = Box<dyn Fn(&mut Value, usize)>;
    // (limit, field, limit value, how to put `k` items in).
    let cases: Vec<(&str, &str, usize, Tweak)> = vec![
        (
            "max_recipients",
            "to",
            3,
            Box::new(|e, k| e["to"] = recipients(k, 1)),
        ),
        (
            "max_recipient_domains",
            "to",
            2,
            Box::new(|e, k| e["to"] = recipients(k, k)),
        ),
        (
            "max_audience_identities",
            "audience.identities",
            2,
            Box::new(|e, k| {
                let ids: Vec<String> = (0..k).map(|i| format!("loom://a{i}@node.test")).collect();
                e["audience"] = json!({"mode": "custom", "identities": ids});
            }),
        ),
        (
            "max_references",
            "references",
            2,
            Box::new(|e, k| {
                let ids: Vec<String> = (0..k)
                    .map(|i| format!("env_01JMKB7X9Q2RVHF3KN4TYZ{i:04}"))
                    .collect();
                e["references"] = json!({"linked_envelopes": ids});
            }),
        ),
        (
            "max_array_len",
            "labels",
            4,
            Box::new(|e, k| {
                let labels: Vec<String> = (0..k).map(|i| format!("l{i}")).collect();
                e["labels"] = json!(labels);
            }),
        ),
        (
            "max_json_depth",
            "content.structured.parameters.a.b.c",
            6,
            // envelope 1 → content 2 → structured 3 → parameters 4 → a 5 → b 6 (→ c 7).
            Box::new(|e, k| {
                let v = if k == 6 {
                    json!({"a": {"b": {}}})
                } else {
                    json!({"a": {"b": {"c": {}}}})
                };
                e["content"]["structured"] =
                    json!({"intent": "message.general@v1", "parameters": v});
            }),
        ),
    ];
    for (limit, field, max, put) in &cases {
        let before = fingerprint(&n);
        let mut over = base(&n);
        put(&mut over, max + 1);
        let actual = if *limit == "max_json_depth" {
            7
        } else {
            max + 1
        };
        assert_names_limit(alice.send(&n, over).await, field, limit, *max, actual);
        assert_eq!(fingerprint(&n), before, "{limit}: refused, nothing stored");
        let mut at = base(&n);
        put(&mut at, *max);
        let r = alice.send(&n, at).await;
        assert_eq!(r.status.as_u16(), 201, "{limit} at its maximum: {}", r.body);
    }
    // Value count: the envelope itself is ~30 values; a 4-element list of objects pushes
    // it past 60 without breaking any other limit.
    let mut heavy = base(&n);
    heavy["extensions"] = json!(vec![json!({"a": [1, 2, 3], "b": [1, 2, 3]}); 4]);
    let before = fingerprint(&n);
    let r = alice
        .send(&n, heavy)
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    assert!(
        r.body["error"]["details"]["reason"]
            .as_str()
            .unwrap()
            .contains("max_json_nodes = 60"),
        "{}",
        r.body
    );
    assert_eq!(fingerprint(&n), before);
}

#[tokio::test]
async fn attachments_over_the_limit_are_refused() {
    let n = TestNode::with(|c| c.limits.envelope.max_attachments = 1);
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let before = fingerprint(&n);
    let att = |i: usize| {
        json!({
            "id": format!("att_01JMKB7X9Q2RVHF3KN4TYZ{i:04}"),
            "hash": format!("sha256:{}", "0".repeat(64)),
            "blob_id": format!("blob_01JMKB7X9Q2RVHF3KN4TYZ{i:04}"),
        })
    };
    let mut env = alice.message(&n, &n.thread_id(), None, &[&bob], "files");
    env["attachments"] = json!([att(1), att(2)]);
    assert_names_limit(
        alice.send(&n, env).await,
        "attachments",
        "max_attachments",
        1,
        2,
    );
    assert_eq!(fingerprint(&n), before);
}

#[tokio::test]
async fn zero_turns_a_limit_off() {
    let n = TestNode::with(|c| {
        c.limits.envelope.max_recipients = 0;
        c.limits.envelope.max_array_len = 0;
    });
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let mut env = alice.message(&n, &n.thread_id(), None, &[&bob], "many");
    let mut to = recipients(1_500, 1);
    to[0]["identity"] = bob.address.clone().into();
    env["to"] = to;
    alice.send(&n, env).await.expect(201);
}

async fn pair() -> (
    TestNode,
    TestNode,
    crate::support::fed::Served,
    crate::support::fed::Served,
) {
    let (a, b, pa, pb) = fed_pair(
        |c| {
            // The sender lets everything out; the receiver's own limits decide.
            c.limits.envelope.max_recipients = 0;
            c.limits.envelope.max_recipient_domains = 0;
        },
        |c| c.limits.envelope.max_recipients = 10,
    )
    .await;
    let sa = serve(&a, pa).await;
    let sb = serve(&b, pb).await;
    (a, b, sa, sb)
}

fn stored_envelopes(n: &TestNode) -> String {
    fingerprint(n)
        .split(';')
        .filter(|p| p.starts_with("envelopes=") || p.starts_with("threads="))
        .collect::<Vec<_>>()
        .join(";")
}

fn over_limit(alice: &Ident, a: &TestNode, bob: &Ident, k: usize) -> Value {
    let mut env = alice.message(a, &a.thread_id(), None, &[bob], "wide");
    let mut to = recipients(k, 1);
    to[0]["identity"] = bob.address.clone().into();
    env["to"] = to;
    alice.sign(env)
}

#[tokio::test]
async fn federated_deliveries_are_held_to_the_receivers_limits() {
    let (a, b, _sa, _sb) = pair().await;
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let before = stored_envelopes(&b);
    // One over-limit envelope: the delivery is refused with the limit named.
    let (h, body) = a.signed_delivery(vec![over_limit(&alice, &a, &bob, 11)]);
    assert_names_limit(b.deliver(&h, body).await, "to", "max_recipients", 10, 11);
    assert_eq!(stored_envelopes(&b), before);
    // In a batch: the receipt is partial and names the refusal; the good one is stored.
    let good = alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], "ok"));
    let bad = over_limit(&alice, &a, &bob, 11);
    let (h, body) = a.signed_delivery(vec![good.clone(), bad.clone()]);
    let r = b.deliver(&h, body).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "partial");
    assert_eq!(
        r.body["receipt"]["accepted_envelope_ids"],
        json!([good["id"]])
    );
    assert_eq!(r.body["rejected"][0]["envelope_id"], bad["id"]);
    assert_eq!(r.body["rejected"][0]["error"]["code"], "PAYLOAD_TOO_LARGE");
    assert_eq!(
        r.body["rejected"][0]["error"]["details"]["field"], "to",
        "{}",
        r.body
    );
    // At the limit it is accepted.
    let (h, body) = a.signed_delivery(vec![over_limit(&alice, &a, &bob, 10)]);
    let r = b.deliver(&h, body).await.expect(202);
    assert_eq!(r.body["receipt"]["status"], "accepted");
}

#[tokio::test]
async fn a_local_sender_cannot_fan_out_to_more_domains_than_allowed() {
    let n = TestNode::with(|c| c.limits.envelope.max_recipient_domains = 3);
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let before = fingerprint(&n);
    let mut env = alice.message(&n, &n.thread_id(), None, &[&bob], "everywhere");
    let mut to = recipients(4, 4);
    to[0]["identity"] = bob.address.clone().into();
    env["to"] = to;
    assert_names_limit(
        alice.send(&n, env).await,
        "to",
        "max_recipient_domains",
        3,
        4,
    );
    // Nothing queued for any destination either.
    assert!(n.outbox().is_empty());
    assert_eq!(fingerprint(&n), before);
}
