//! Hostile input (issue: malformed requests) over the API: every malformed, oversized,
//! deeply nested, unauthenticated or misrouted request gets a §24.1 error body naming the
//! field, rule and section, never a 5xx or a panic, and leaves the store exactly as it was.

use crate::support::TestNode;
use proptest::prelude::*;
use serde_json::json;

fn fingerprint(n: &TestNode) -> String {
    n.node.service().store.fingerprint().unwrap()
}

#[tokio::test]
async fn malformed_requests_get_spec_errors_and_change_nothing() {
    let n = TestNode::with(|c| c.limits.max_body_bytes = 11 * 1024 * 1024);
    let alice = n.register("alice", "human", 1).await;
    let before = fingerprint(&n);
    let tok = Some(alice.token.as_str());
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let deep_obj = "{\"a\":".repeat(10_000) + "1" + &"}".repeat(10_000);
    let ten_mb = format!("{{\"x\":\"{}\"}}", "a".repeat(10 * 1024 * 1024));
    type Case<'a> = (
        &'a str,
        &'a str,
        Option<&'a str>,
        &'a str,
        Vec<u8>,
        u16,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            b"{not json".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            vec![0xff, 0xfe, 0x00],
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            b"{\"id\":\"\\ud800\"}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            b"{\"a\":1,\"a\":1}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            deep.clone().into_bytes(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            deep_obj.into_bytes(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            b"[]".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            b"null".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "application/json",
            ten_mb.clone().into_bytes(),
            413,
            "PAYLOAD_TOO_LARGE",
        ),
        (
            "POST",
            "/v1/envelopes",
            tok,
            "text/plain",
            b"{}".to_vec(),
            415,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            None,
            "application/json",
            b"{}".to_vec(),
            401,
            "SIGNATURE_INVALID",
        ),
        (
            "POST",
            "/v1/envelopes",
            Some("at_forged"),
            "application/json",
            b"{}".to_vec(),
            401,
            "SIGNATURE_INVALID",
        ),
        (
            "PUT",
            "/v1/envelopes",
            tok,
            "application/json",
            b"{}".to_vec(),
            405,
            "EXTENSION_DISABLED",
        ),
        (
            "GET",
            "/v1/envelopes/not-an-id",
            tok,
            "application/json",
            vec![],
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "GET",
            "/v1/envelopes/env_01JMKB7X9Q2RVHF3KN4TYZPG00",
            tok,
            "application/json",
            vec![],
            404,
            "ENVELOPE_NOT_FOUND",
        ),
        (
            "GET",
            "/v1/threads/thr_01JMKB7X9Q2RVHF3KN4TYZPG00",
            tok,
            "application/json",
            vec![],
            404,
            "THREAD_NOT_FOUND",
        ),
        (
            "GET",
            "/v1/threads?limit=abc",
            tok,
            "application/json",
            vec![],
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/identity",
            None,
            "application/json",
            b"{\"id\":7}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/identity/challenge",
            None,
            "application/json",
            b"{\"identity\":\"mailto:x\",\"key_id\":\"k_sign_x\"}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "POST",
            "/v1/auth/token",
            None,
            "application/json",
            b"{\"identity\":\"loom://alice@node.test\"}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "PATCH",
            "/v1/identity/me",
            tok,
            "application/json",
            b"{\"id\":\"loom://evil@node.test\"}".to_vec(),
            400,
            "ENVELOPE_INVALID",
        ),
        (
            "DELETE",
            "/v1/nothing/here",
            tok,
            "application/json",
            vec![],
            404,
            "EXTENSION_DISABLED",
        ),
    ];
    for (method, path, token, ctype, body, status, code) in cases {
        let body = if body.is_empty() {
            None
        } else {
            Some((ctype, body))
        };
        let r = n.raw(method, path, token, &[], body).await;
        assert_eq!(r.status.as_u16(), status, "{method} {path}: {}", r.body);
        assert_eq!(r.body["error"]["code"], code, "{method} {path}");
        let d = &r.body["error"]["details"];
        assert!(
            d["field"].is_string() && d["reason"].is_string() && d["section"].is_string(),
            "{method} {path}: {d}"
        );
    }
    assert_eq!(
        fingerprint(&n),
        before,
        "a rejected request changed the store"
    );
    // The node still works afterwards.
    alice
        .send(
            &n,
            alice.message(&n, &n.thread_id(), None, &[&alice], "still here"),
        )
        .await
        .expect(201);
    assert_ne!(fingerprint(&n), before);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Arbitrary bytes as an envelope: always a 4xx §24.1 body, never a 5xx, store unchanged.
    #[test]
    fn arbitrary_bodies_never_break_the_node(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let n = TestNode::new();
            let alice = n.register("alice", "human", 1).await;
            let before = fingerprint(&n);
            let r = n.raw("POST", "/v1/envelopes", Some(&alice.token), &[], Some(("application/json", body))).await;
            prop_assert!(r.status.is_client_error(), "status {}", r.status);
            prop_assert!(r.body["error"]["code"].is_string());
            prop_assert_eq!(fingerprint(&n), before);
            Ok(())
        })?;
    }

    /// Mutated valid envelopes: rejected cleanly or accepted, never a 5xx.
    #[test]
    fn mutated_envelopes_never_cause_5xx(field in 0usize..12, value in prop_oneof![Just(json!(null)), Just(json!(7)), Just(json!("x")), Just(json!([])), Just(json!({}))]) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let n = TestNode::new();
            let alice = n.register("alice", "human", 1).await;
            let mut env = alice.message(&n, &n.thread_id(), None, &[&alice], "x");
            let keys = ["loom", "id", "thread_id", "parent_id", "type", "from", "to", "created_at", "priority", "content", "attachments", "audience"];
            env[keys[field]] = value;
            let r = alice.send(&n, env).await;
            prop_assert!(r.status.as_u16() < 500, "{}", r.body);
            Ok(())
        })?;
    }
}
