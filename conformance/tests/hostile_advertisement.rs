//! A target's advertisement is input like any other: limits too large to test (u64::MAX,
//! as a hostile or careless node may publish) make the cases that read them skip with the
//! reason, never overflow, allocate without bound or pass.

use loom_conformance::runner::{RunConfig, run_all};
use loom_conformance::target::{
    Transport, embedded_config, probe_embedded, start_embedded_wrapped,
};
use loom_conformance::{Outcome, catalogue};
use loom_protocol::clock::{Clock, SystemClock};
use serde_json::Value;
use std::sync::Arc;

/// `GET /v1/protocol/capabilities` with every advertised limit set to `u64::MAX`.
async fn huge_limits(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let capabilities = req.uri().path() == "/v1/protocol/capabilities";
    let resp = next.run(req).await;
    if !capabilities {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20).await.expect("body");
    let mut v: Value = serde_json::from_slice(&bytes).expect("json");
    for limit in ["max_body_bytes", "max_envelope_bytes"] {
        v["limits"][limit] = u64::MAX.into();
    }
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    axum::response::Response::from_parts(parts, axum::body::Body::from(v.to_string()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_too_large_to_test_are_skipped_with_the_reason() {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let node = start_embedded_wrapped(
        clock.clone(),
        9,
        embedded_config(),
        Transport::Plain,
        |router| router.layer(axum::middleware::from_fn(huge_limits)),
    )
    .await
    .expect("the node starts");
    let info = Arc::new(probe_embedded(&node).await.expect("probes"));
    let ids = ["core.api.body.too-large", "core.envelope.size.over-limit"];
    let cases: Vec<_> = catalogue::all()
        .into_iter()
        .filter(|c| ids.contains(&c.id))
        .collect();
    assert_eq!(cases.len(), ids.len());
    let results = run_all(&cases, info, &RunConfig::default(), clock, &|_| {}).await;
    for r in &results {
        assert_eq!(r.outcome, Outcome::Skipped, "{}: {:?}", r.id, r.message);
        let why = r.message.as_deref().unwrap_or("");
        assert!(
            why.contains(&u64::MAX.to_string()) && why.contains("at most"),
            "{}: {why}",
            r.id
        );
    }
}
