//! Every refuse-all mutant really refuses its feature (issue 29): against the node behind
//! each mutant's shim, a request of its area is refused the way it says, and a request outside
//! it passes through — so "no negative case passes under the mutant" is not true of a mutant
//! that refuses nothing.

use loom_client::Client;
use loom_conformance::variants::REFUSE_ALL;
use loom_protocol::clock::{Clock, SystemClock};
use serde_json::{Value, json};
use std::sync::Arc;

/// The request of each mutant's area, and the status and code it must get.
fn probe(name: &str) -> (&'static str, &'static str, Value, u16, &'static str) {
    match name {
        "refuse-all-capability-tokens" => (
            "POST",
            "/v1/capabilities",
            json!({}),
            403,
            "CAPABILITY_DENIED",
        ),
        "refuse-all-delegation-chains" => (
            "POST",
            "/v1/delegations",
            json!({}),
            403,
            "DELEGATION_INVALID",
        ),
        "refuse-all-federation-deliveries" => (
            "POST",
            "/v1/federation/deliver",
            json!({}),
            401,
            "SIGNATURE_INVALID",
        ),
        "refuse-all-key-operations" => (
            "POST",
            "/v1/identity/me/keys",
            json!({}),
            403,
            "CAPABILITY_DENIED",
        ),
        "no-blob-routes" => (
            "GET",
            "/v1/blobs/blob_01JXXXXXXXXXXXXXXXXXXXXXXX",
            Value::Null,
            404,
            "EXTENSION_DISABLED",
        ),
        // Not a refusal: a search that answers and finds nothing, with no error code.
        "empty-search" => ("GET", "/v1/search?q=anything", Value::Null, 200, ""),
        "refuse-all-thread-operations" => (
            "POST",
            "/v1/envelopes",
            json!({"type": "thread_op"}),
            403,
            "CAPABILITY_DENIED",
        ),
        "refuse-all-encrypted-content" => (
            "POST",
            "/v1/envelopes",
            json!({"content": {"encrypted": true, "wrapped_keys": []}}),
            400,
            "ENVELOPE_INVALID",
        ),
        "no-websocket" => ("GET", "/ws", Value::Null, 404, "EXTENSION_DISABLED"),
        "refuse-all-workflows" => (
            "POST",
            "/v1/envelopes",
            json!({"type": "workflow", "content": {"structured": {"parameters": {"workflow_id": "wf_1"}}}}),
            400,
            "ENVELOPE_INVALID",
        ),
        // Checked over SMTP below; on the HTTP side the node document is the probe.
        "refuse-all-mail" => ("GET", "/.well-known/loom.json", Value::Null, 200, ""),
        other => panic!("no probe for the refuse-all mutant {other}: add one here"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mutant_refuses_its_area_and_nothing_else() {
    assert!(REFUSE_ALL.len() >= 7);
    for r in REFUSE_ALL {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let (node, info) =
            loom_conformance::variants::start_configured(&r.variant, clock, 5, r.config)
                .await
                .expect("the mutant starts");
        if r.variant.name == "refuse-all-mail" {
            let world = info.mail.as_ref().expect("a mail world");
            let smtp = world.smtp().expect("the bridge's SMTP address");
            // Its EHLO announces a one-byte SIZE: no message fits (RFC 1870).
            let stream = tokio::net::TcpStream::connect(smtp).await.expect("connect");
            let mut io = tokio::io::BufReader::new(stream);
            let step = std::time::Duration::from_secs(10);
            let _greeting = loom_bridge::smtp::client::read_reply(&mut io, step)
                .await
                .expect("greeting");
            tokio::io::AsyncWriteExt::write_all(io.get_mut(), b"EHLO probe.test\r\n")
                .await
                .expect("EHLO");
            let ehlo = loom_bridge::smtp::client::read_reply(&mut io, step)
                .await
                .expect("EHLO reply");
            let refused = ehlo.lines.iter().any(|l| l.trim() == "SIZE 1");
            assert!(refused, "refuse-all-mail: SIZE 1 announced: {ehlo:?}");
        }
        let mut c = Client::tcp(&node.url).expect("client");
        let (method, path, body, status, code) = probe(r.variant.name);
        let bytes = (!body.is_null()).then(|| serde_json::to_vec(&body).expect("json"));
        let t = c
            .exchange(method, path, &[], bytes, None)
            .await
            .expect("exchange");
        let got = t.json().unwrap_or(Value::Null);
        assert_eq!(
            (t.status, got["error"]["code"].as_str().unwrap_or("")),
            (status, code),
            "{}: {method} {path}",
            r.variant.name
        );
        let doc = c
            .exchange("GET", "/.well-known/loom.json", &[], None, None)
            .await
            .expect("exchange");
        assert_eq!(
            doc.status, 200,
            "{}: the node document passes through",
            r.variant.name
        );
        assert!(!r.areas.is_empty(), "{}", r.variant.name);
    }
}
