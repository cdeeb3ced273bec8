//! Hostile federation deliveries (issue 15): garbage bodies, a 10 MB wrapper, a body over the
//! wrapper limit, 10,000 envelopes in one wrapper, bad base64 and missing headers. Each gets
//! a §24.1 error naming field, rule and section — never a 5xx — and leaves the receiving
//! store exactly as it was (store fingerprint).

use crate::support::fed::{fed_pair, serve};
use serde_json::{Value, json};

#[tokio::test]
async fn hostile_deliveries_get_spec_errors_and_change_nothing() {
    let (a, b, pa, pb) = fed_pair(|_| {}, |_| {}).await;
    let _s = (serve(&a, pa).await, serve(&b, pb).await);
    let alice = a.register("alice", "human", 1).await;
    let bob = b.register("bob", "human", 2).await;
    let message = |text: &str| alice.sign(alice.message(&a, &a.thread_id(), None, &[&bob], text));
    // One good delivery first: b has a.test's node document and alice's keys cached, so what
    // follows could change only what it must not.
    let (h, body) = a.signed_delivery(vec![message("warm-up")]);
    b.deliver(&h, body).await.expect(202);
    let before = b.node.service().store.fingerprint().unwrap();

    let wrapper = |envelopes: Vec<Value>| {
        serde_json::to_vec(
            &json!({"loom": "1.1", "sender_node": "a.test", "delivery_id": "fdel_hostile",
            "timestamp": a.now(), "envelopes": envelopes}),
        )
        .unwrap()
    };
    let signed = |body: Vec<u8>| (a.sign_delivery(&body), body);
    let unsigned = |body: Vec<u8>| (Vec::<(String, String)>::new(), body);
    let with_header = |body: Vec<u8>, name: &str, value: &str| {
        let mut h = a.sign_delivery(&body);
        for (k, v) in &mut h {
            if k.eq_ignore_ascii_case(name) {
                *v = value.to_owned();
            }
        }
        (h, body)
    };
    let without_header = |body: Vec<u8>, name: &str| {
        let mut h = a.sign_delivery(&body);
        h.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        (h, body)
    };
    let ten_mb = {
        let mut e = message("x");
        e["content"]["human"]["text"] = "a".repeat(10 * 1024 * 1024).into();
        wrapper(vec![e])
    };
    let ten_thousand = wrapper(
        (0..10_000)
            .map(|i| json!({"id": format!("env_{i}")}))
            .collect(),
    );
    let over_limit = vec![b' '; 27 * 1024 * 1024];
    let good = wrapper(vec![message("fine")]);

    type Case = (
        &'static str,
        (Vec<(String, String)>, Vec<u8>),
        u16,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            "garbage, signed",
            signed(b"\x00\xffnot json at all".to_vec()),
            400,
            "ENVELOPE_INVALID",
            "$",
        ),
        (
            "garbage, unsigned",
            unsigned(b"{\"loom\": ".to_vec()),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Node",
        ),
        (
            "json array",
            signed(b"[]".to_vec()),
            400,
            "ENVELOPE_INVALID",
            "$",
        ),
        (
            "10 MB wrapper",
            signed(ten_mb),
            413,
            "PAYLOAD_TOO_LARGE",
            "$body",
        ),
        (
            "body over the wrapper limit",
            signed(over_limit),
            413,
            "PAYLOAD_TOO_LARGE",
            "$body",
        ),
        (
            "10,000 envelopes",
            signed(ten_thousand),
            413,
            "PAYLOAD_TOO_LARGE",
            "envelopes",
        ),
        (
            "bad base64 signature",
            with_header(good.clone(), "X-LOOM-Signature", "!!!not*base64!!!"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Signature",
        ),
        // The nonce is opaque: a changed one breaks the signature.
        (
            "changed nonce",
            with_header(good.clone(), "X-LOOM-Nonce", "%%%"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Signature",
        ),
        (
            "non-ISO timestamp",
            with_header(good.clone(), "X-LOOM-Timestamp", "yesterday"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Timestamp",
        ),
        (
            "unknown key id",
            with_header(good.clone(), "X-LOOM-Key-Id", "k_node_sign_nope"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Key-Id",
        ),
        (
            "bad node name",
            with_header(good.clone(), "X-LOOM-Node", "not a host!"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Node",
        ),
        (
            "missing signature",
            without_header(good.clone(), "X-LOOM-Signature"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Signature",
        ),
        (
            "missing nonce",
            without_header(good.clone(), "X-LOOM-Nonce"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Nonce",
        ),
        (
            "missing timestamp",
            without_header(good.clone(), "X-LOOM-Timestamp"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Timestamp",
        ),
        (
            "missing key id",
            without_header(good.clone(), "X-LOOM-Key-Id"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Key-Id",
        ),
        (
            "missing node",
            without_header(good, "X-LOOM-Node"),
            401,
            "SIGNATURE_INVALID",
            "X-LOOM-Node",
        ),
    ];
    for (what, (h, body), status, code, field) in cases {
        let r = b.deliver(&h, body).await;
        assert_eq!(r.status.as_u16(), status, "{what}: {}", r.body);
        let e = &r.body["error"];
        assert_eq!(e["code"], code, "{what}: {}", r.body);
        assert_eq!(e["details"]["field"], field, "{what}: {}", r.body);
        assert!(
            e["details"]["section"]
                .as_str()
                .is_some_and(|s| s.contains('§')),
            "{what}"
        );
        assert!(
            e["request_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("req_")),
            "{what}"
        );
        assert_eq!(
            b.node.service().store.fingerprint().unwrap(),
            before,
            "{what} changed the store"
        );
    }
    // A wrong content type is 415 before anything is read.
    let r = b
        .raw(
            "POST",
            "/v1/federation/deliver",
            None,
            &[],
            Some(("text/plain", b"hi".to_vec())),
        )
        .await;
    r.expect_error(415, "ENVELOPE_INVALID");
    assert_eq!(b.node.service().store.fingerprint().unwrap(), before);
}
