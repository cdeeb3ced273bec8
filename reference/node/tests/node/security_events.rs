//! Security events on record (issue 36, item 3; v1.1 §23.2 "log security events (signature
//! failures, scope violations)", §25.1 "security events" in the audit log): each refusal of a
//! signature, delegation or capability check writes one `security.{kind}` audit row naming
//! who asked, what about and why — at most one per (kind, code, source) and minute, the ones
//! in between counted as `suppressed` on the next.

use crate::support::TestNode;
use serde_json::{Value, json};

/// The `security.*` audit rows: (action, actor, subject, details).
fn security_rows(n: &TestNode) -> Vec<(String, String, String, Value)> {
    let store = &n.node.service().store;
    let conn = store.read();
    let mut stmt = conn
        .prepare(
            "SELECT action, actor, subject, details FROM audit_log
                 WHERE action LIKE 'security.%' AND action NOT LIKE 'security.login%' ORDER BY seq",
        )
        .unwrap();
    stmt.query_map([], |r| {
        let details: String = r.get(3)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            serde_json::from_str(&details).unwrap(),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[tokio::test]
async fn refused_signatures_and_scopes_are_audited_once_a_minute_each() {
    let n = TestNode::with(|_| {});
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let forged = |text: &str| {
        let mut e = alice.sign(alice.message(&n, &n.thread_id(), None, &[&bob], "x"));
        e["content"]["human"]["text"] = text.into();
        e
    };
    let post = |e: Value| n.call("POST", "/v1/envelopes", Some(&alice.token), Some(e));
    // A forged signature: one row, naming the sender, the envelope and the rule.
    let first = forged("tampered 1");
    post(first.clone()).await.expect(401);
    let rows = security_rows(&n);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let (action, actor, subject, details) = &rows[0];
    assert_eq!(action, "security.envelope");
    assert_eq!(actor, &alice.address);
    assert_eq!(subject, first["id"].as_str().unwrap());
    assert_eq!(details["code"], "SIGNATURE_INVALID");
    assert_eq!(details["field"], "signature.value");
    assert_eq!(details["suppressed"], 0);
    // Two more within the minute: counted, not written.
    post(forged("tampered 2")).await.expect(401);
    post(forged("tampered 3")).await.expect(401);
    assert_eq!(security_rows(&n).len(), 1);
    // A scope violation in the same minute is another event: alice sending as bob.
    let spoof = bob.sign(bob.message(&n, &n.thread_id(), None, &[&alice], "as bob"));
    post(spoof).await.expect(403);
    let rows = security_rows(&n);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1].3["code"], "CAPABILITY_DENIED");
    assert_eq!(rows[1].3["field"], "from.identity");
    // A minute later the next forged signature is written with the two it stands for.
    n.clock.advance_ms(60_000);
    post(forged("tampered 4")).await.expect(401);
    let rows = security_rows(&n);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[2].3["suppressed"], 2);
    // What is not a security event is not recorded: a malformed envelope.
    let mut bad = alice.message(&n, &n.thread_id(), None, &[&bob], "x");
    bad["type"] = json!(7);
    post(alice.sign(bad)).await.expect(400);
    assert_eq!(security_rows(&n).len(), 3);
}

#[tokio::test]
async fn bogus_tokens_and_forged_deliveries_are_audited_under_what_they_claim() {
    let n = TestNode::with(|_| {});
    n.get("/v1/identity/me", "at_not-a-token").await.expect(401);
    // A delivery claiming to come from a node this one cannot verify.
    let body = json!({"loom": "1.1", "sender_node": "forger.invalid", "delivery_id": "fdel_1",
                      "timestamp": "2026-03-01T12:00:00Z", "envelopes": []});
    let r = n
        .raw(
            "POST",
            "/v1/federation/deliver",
            None,
            &[
                ("X-LOOM-Node", "forger.invalid"),
                ("X-LOOM-Key-Id", "k_node_sign_x"),
                ("X-LOOM-Timestamp", "2026-03-01T12:00:00Z"),
                ("X-LOOM-Nonce", "AAAAAAAAAAAAAAAAAAAAAA"),
                ("X-LOOM-Signature", "AAAA"),
            ],
            Some(("application/json", serde_json::to_vec(&body).unwrap())),
        )
        .await;
    assert!(r.status.is_client_error(), "{} {}", r.status, r.body);
    let rows = security_rows(&n);
    let token = rows
        .iter()
        .find(|r| r.0 == "security.token")
        .expect("the bogus token is on record");
    assert_eq!(
        (token.1.as_str(), token.2.as_str()),
        ("anonymous", "Authorization")
    );
    let fed = rows
        .iter()
        .find(|r| r.0 == "security.federation")
        .expect("the forged delivery is on record");
    assert_eq!(fed.1, "forger.invalid");
    assert_eq!(fed.3["code"], "SIGNATURE_INVALID");
    // The log stays a valid chain.
    let conn = n.node.service().store.read();
    assert!(matches!(
        loom_node::store::audit::walk(&conn).unwrap(),
        loom_node::store::audit::AuditVerdict::Intact { .. }
    ));
}
