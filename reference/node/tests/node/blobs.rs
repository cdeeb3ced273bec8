//! Blobs (v1.1 §16.7): initiate, ordered parts, finalize, download under §16.7 access
//! (owner, thread participant, or a `read` capability); limits; rejected requests change
//! nothing.

use crate::support::{Ident, Resp, TestNode};
use loom_protocol::id::{KeyId, KeyKind};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

async fn init(n: &TestNode, who: &Ident, body: Value) -> Resp {
    n.call("POST", "/v1/blobs", Some(&who.token), Some(body))
        .await
}

async fn put(n: &TestNode, who: &Ident, id: &str, part: &str, bytes: &[u8]) -> Resp {
    n.raw(
        "PUT",
        &format!("/v1/blobs/{id}/parts/{part}"),
        Some(&who.token),
        &[],
        Some(("application/octet-stream", bytes.to_vec())),
    )
    .await
}

async fn complete(n: &TestNode, who: &Ident, id: &str) -> Resp {
    n.call(
        "POST",
        &format!("/v1/blobs/{id}/complete"),
        Some(&who.token),
        None,
    )
    .await
}

async fn download(n: &TestNode, who: &Ident, id: &str) -> Resp {
    n.raw(
        "GET",
        &format!("/v1/blobs/{id}"),
        Some(&who.token),
        &[],
        None,
    )
    .await
}

#[tokio::test]
async fn upload_in_parts_and_download_by_thread_readers() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let dave = n.register("dave", "human", 4).await;
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&bob], "see attachment"))
        .await
        .expect(201);
    let r = init(
        &n,
        &alice,
        json!({"filename": "report.pdf", "mime_type": "application/pdf", "size_bytes": 11, "thread_id": t}),
    )
    .await
    .expect(201);
    let id = r.body["blob_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("blob_"));
    assert_eq!(
        r.body["upload_url_parts"],
        format!("/v1/blobs/{id}/parts/{{n}}")
    );
    // Not complete yet: no download.
    download(&n, &alice, &id)
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");
    // Parts in order; only the owner uploads.
    put(&n, &alice, &id, "2", b"world")
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    put(&n, &alice, &id, "0", b"x")
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    put(&n, &bob, &id, "1", b"hello ")
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    put(&n, &alice, &id, "1", b"hellO ").await.expect(200);
    // A retry replaces the part.
    put(&n, &alice, &id, "1", b"hello ").await.expect(200);
    put(&n, &alice, &id, "2", b"world").await.expect(200);
    // Over the declared size.
    put(&n, &alice, &id, "3", b"!")
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    complete(&n, &bob, &id)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    let done = complete(&n, &alice, &id).await.expect(200);
    let sha = hex::encode(Sha256::digest(b"hello world"));
    assert_eq!(done.body["size"], 11);
    assert_eq!(done.body["sha256"], sha.as_str());
    assert_eq!(done.body["blob_id"], id.as_str());
    // Immutable once complete.
    put(&n, &alice, &id, "3", b"!")
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");
    complete(&n, &alice, &id)
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");

    // Owner and participant download; outsiders do not.
    for who in [&alice, &bob] {
        let d = download(&n, who, &id).await.expect(200);
        assert_eq!(d.raw, b"hello world");
        assert_eq!(d.headers["content-type"], "application/pdf");
        assert!(
            d.headers["content-disposition"]
                .to_str()
                .unwrap()
                .contains("report.pdf")
        );
    }
    download(&n, &carol, &id)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    n.raw("GET", &format!("/v1/blobs/{id}"), None, &[], None)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
    // A read capability opens it to a non-participant (§16.7); a reply grant does not.
    let token = |holder: &Ident, grants: &[&str]| {
        let mut tok = json!({
            "loom": "1.1",
            "id": n.node.service().env.ids().capability().to_string(),
            "issued_by": alice.address, "issued_to": holder.address,
            "created_at": n.now(), "expires_at": null, "single_use": false, "epoch": 0,
            "grants": grants, "scope": {"thread_id": t},
        });
        let kid = KeyId::parse(&alice.key_id, KeyKind::Signing).unwrap();
        loom_protocol::capability::sign_capability_token(&mut tok, &alice.key, &kid).unwrap();
        tok
    };
    for (who, grants) in [(&carol, &["read"][..]), (&dave, &["reply"][..])] {
        n.call(
            "POST",
            "/v1/capabilities",
            Some(&alice.token),
            Some(token(who, grants)),
        )
        .await
        .expect(201);
    }
    assert_eq!(
        download(&n, &carol, &id).await.expect(200).raw,
        b"hello world"
    );
    download(&n, &dave, &id)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // Unknown and malformed ids.
    let unknown = n.node.service().env.ids().blob().to_string();
    let r = download(&n, &alice, &unknown)
        .await
        .expect_error(404, "ENVELOPE_NOT_FOUND");
    assert_eq!(r.body["error"]["details"]["field"], "blob_id");
    download(&n, &alice, "blob_x")
        .await
        .expect_error(400, "ENVELOPE_INVALID");
}

#[tokio::test]
async fn limits_and_bad_requests_change_nothing() {
    let n = TestNode::with(|c| c.limits.max_blob_bytes = 8);
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let count = || -> i64 {
        n.node
            .service()
            .store
            .conn()
            .query_row("SELECT COUNT(*) FROM blobs", [], |r| r.get(0))
            .unwrap()
    };
    init(
        &n,
        &alice,
        json!({"filename": "a", "mime_type": "text/plain", "size_bytes": 9}),
    )
    .await
    .expect_error(413, "PAYLOAD_TOO_LARGE");
    for (body, field) in [
        (
            json!({"filename": "", "mime_type": "text/plain"}),
            "filename",
        ),
        (
            json!({"filename": "../x", "mime_type": "text/plain"}),
            "filename",
        ),
        (json!({"filename": "a", "mime_type": "text"}), "mime_type"),
        (
            json!({"filename": "a", "mime_type": "text/plain\r\nX: y"}),
            "mime_type",
        ),
    ] {
        let r = init(&n, &alice, body)
            .await
            .expect_error(400, "ENVELOPE_INVALID");
        assert_eq!(r.body["error"]["details"]["field"], field);
    }
    init(
        &n,
        &alice,
        json!({"filename": "a", "mime_type": "text/plain", "extra": 1}),
    )
    .await
    .expect_error(400, "ENVELOPE_INVALID");
    // A thread the caller is not in.
    let t = n.thread_id();
    bob.send(&n, bob.message(&n, &t, None, &[&bob], "mine"))
        .await
        .expect(201);
    init(
        &n,
        &alice,
        json!({"filename": "a", "mime_type": "text/plain", "thread_id": t}),
    )
    .await
    .expect_error(404, "THREAD_NOT_FOUND");
    assert_eq!(count(), 0);
    // Total over max_blob_bytes: the part is refused and not stored.
    let id = init(
        &n,
        &alice,
        json!({"filename": "a.txt", "mime_type": "text/plain"}),
    )
    .await
    .expect(201)
    .body["blob_id"]
        .as_str()
        .unwrap()
        .to_owned();
    put(&n, &alice, &id, "1", b"12345").await.expect(200);
    put(&n, &alice, &id, "2", b"6789")
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    put(&n, &alice, &id, "2", b"678").await.expect(200);
    let done = complete(&n, &alice, &id).await.expect(200);
    assert_eq!(done.body["size"], 8);
    // No thread: only the owner may download.
    assert_eq!(download(&n, &alice, &id).await.expect(200).raw, b"12345678");
    download(&n, &bob, &id)
        .await
        .expect_error(403, "CAPABILITY_DENIED");
    // A declared size that the parts do not reach fails completion.
    let short = init(
        &n,
        &alice,
        json!({"filename": "b", "mime_type": "text/plain", "size_bytes": 4}),
    )
    .await
    .expect(201)
    .body["blob_id"]
        .as_str()
        .unwrap()
        .to_owned();
    put(&n, &alice, &short, "1", b"ab").await.expect(200);
    let r = complete(&n, &alice, &short)
        .await
        .expect_error(400, "ENVELOPE_INVALID");
    assert_eq!(r.body["error"]["details"]["field"], "size_bytes");
    download(&n, &alice, &short)
        .await
        .expect_error(409, "STATE_TRANSITION_INVALID");
}
