//! Event catch-up (v1.1 §16.8, §17): per-identity, in order, stable ids, resumable by event
//! id or cursor; unknown resume points are 400s naming the parameter.

use crate::support::TestNode;
use serde_json::Value;

fn events(v: &Value) -> Vec<Value> {
    v["events"].as_array().unwrap().clone()
}

#[tokio::test]
async fn catch_up_is_ordered_private_and_resumable() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    let root = alice.message(&n, &t, None, &[&bob], "one");
    alice.send(&n, root.clone()).await.expect(201);
    let reply = bob.message(&n, &t, root["id"].as_str(), &[&alice], "two");
    bob.send(&n, reply.clone()).await.expect(201);
    // carol's own thread, invisible to bob.
    let t2 = n.thread_id();
    carol
        .send(&n, carol.message(&n, &t2, None, &[&alice], "elsewhere"))
        .await
        .expect(201);

    let all = n.get("/v1/events", &bob.token).await.expect(200).body;
    let evs = events(&all);
    assert_eq!(evs.len(), 2, "{all}");
    assert_eq!(evs[0]["type"], "envelope.new");
    assert_eq!(evs[0]["envelope_id"], root["id"]);
    assert_eq!(evs[0]["thread_id"], t.as_str());
    assert_eq!(evs[1]["envelope_id"], reply["id"]);
    assert_eq!(evs[1]["payload"]["event_seq"], 2);
    assert!(evs[0]["id"].as_str().unwrap().starts_with("evt_"));
    assert!(evs[0]["created_at"].is_string());
    assert_eq!(all["next_cursor"], evs[1]["cursor"]);
    assert_eq!(all["has_more"], false);
    // Stable: the same events again.
    let again = n.get("/v1/events", &bob.token).await.expect(200).body;
    assert_eq!(again, all);
    assert_eq!(
        events(&n.get("/v1/events", &alice.token).await.body).len(),
        3
    );
    assert_eq!(
        events(&n.get("/v1/events", &carol.token).await.body).len(),
        1
    );

    // Resume by id and by cursor.
    let first = evs[0]["id"].as_str().unwrap();
    let after = n
        .get(&format!("/v1/events?since={first}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(events(&after), vec![evs[1].clone()]);
    let cur = evs[0]["cursor"].as_str().unwrap();
    let by_cursor = n
        .get(&format!("/v1/events?cursor={cur}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(by_cursor, after);
    // Nothing new: empty page, the cursor stays.
    let last = evs[1]["id"].as_str().unwrap();
    let none = n
        .get(&format!("/v1/events?since={last}"), &bob.token)
        .await
        .expect(200)
        .body;
    assert!(events(&none).is_empty());
    assert_eq!(none["next_cursor"], evs[1]["cursor"]);
    // Paging.
    let page = n
        .get("/v1/events?limit=1", &bob.token)
        .await
        .expect(200)
        .body;
    assert_eq!(events(&page), vec![evs[0].clone()]);
    assert_eq!(page["has_more"], true);
    assert_eq!(page["next_cursor"], evs[0]["cursor"]);
}

#[tokio::test]
async fn unknown_resume_points_are_400() {
    let n = TestNode::new();
    let alice = n.register("alice", "human", 1).await;
    let bob = n.register("bob", "human", 2).await;
    let carol = n.register("carol", "human", 3).await;
    let t = n.thread_id();
    alice
        .send(&n, alice.message(&n, &t, None, &[&carol], "not for bob"))
        .await
        .expect(201);
    let hidden = events(&n.get("/v1/events", &alice.token).await.body)[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let unknown = n.node.service().env.ids().event().to_string();
    for (q, field) in [
        (format!("since={unknown}"), "since"),
        (format!("since={hidden}"), "since"),
        ("since=nope".into(), "since"),
        (format!("since={hidden}&cursor=1"), "since"),
        ("cursor=abc".into(), "cursor"),
        ("cursor=-1".into(), "cursor"),
        ("limit=0".into(), "limit"),
    ] {
        let r = n
            .get(&format!("/v1/events?{q}"), &bob.token)
            .await
            .expect_error(400, "ENVELOPE_INVALID");
        assert_eq!(r.body["error"]["details"]["field"], field, "{q}");
    }
    n.call("GET", "/v1/events", None, None)
        .await
        .expect_error(401, "SIGNATURE_INVALID");
}
